/* fuzz_reply.h - a client as protocol modules see it (reply.h), for the
 * fuzz targets: the answer is dropped (so nothing grows with the input),
 * and what the module asked of the connection is remembered: the command
 * it parked on, and whether it closed. */
#ifndef WQ_FUZZ_REPLY_H
#define WQ_FUZZ_REPLY_H

#include <string.h>

#include "net/reply.h"

struct fuzz_client {
    struct reply reply;
    void *waiting;
    bool closed;
};

static inline void
fuzz_bytes(void *to, const void *data, size_t len)
{
}

static inline void
fuzz_payload(void *to, char *p, size_t len)
{
}

static inline void
fuzz_park(void *to, void *waiting)
{
    ((struct fuzz_client *)to)->waiting = waiting;
}

static inline void
fuzz_wake(void *to)
{
    ((struct fuzz_client *)to)->waiting = NULL;
}

static inline void
fuzz_close(void *to)
{
    ((struct fuzz_client *)to)->closed = true;
}

static inline const char *
fuzz_peer(void *to)
{
    return "127.0.0.1:4242";
}

static inline void
fuzz_pause(void *to, uint64_t ms)
{
}

static const struct reply_ops fuzz_reply_ops = {fuzz_bytes, fuzz_payload, fuzz_park, fuzz_wake,
                                                fuzz_close, fuzz_peer,    fuzz_pause};

/* A fresh client. */
static inline void
fuzz_client_init(struct fuzz_client *c)
{
    memset(c, 0, sizeof *c);
    c->reply = (struct reply){&fuzz_reply_ops, c};
}

#endif /* WQ_FUZZ_REPLY_H */
