/* reply.h - how a command answers its client, whatever carries the bytes:
 * a connection (conn.c) or a unit test's fake.  Replies go out in the order
 * they are made; a command that waits parks, and is woken once it has been
 * answered. */
#ifndef WQ_REPLY_H
#define WQ_REPLY_H

#include "lib/wq.h"

#include <string.h>

struct reply_ops {
    /* Queue bytes (copied). */
    void (*bytes)(void *to, const void *data, size_t len);
    /* Queue the bytes of payload p (payload.h: large ones are sent by
     * reference, so p must come from payload_new). */
    void (*payload)(void *to, char *p, size_t len);
    /* The command waits: take no more input until wake.  waiting is what
     * to withdraw (the protocol's cancel) if the client leaves meanwhile. */
    void (*park)(void *to, void *waiting);
    /* The waiting command has been answered: take input again (soon, not
     * from inside the caller). */
    void (*wake)(void *to);
    /* Close the connection once everything queued is written. */
    void (*close)(void *to);
    /* The client's address, "HOST:PORT" ("" if unknown). */
    const char *(*peer)(void *to);
    /* Answer later: what is replied from now on leaves, and input is taken
     * again, only after ms milliseconds (a timer, never a sleep). */
    void (*pause)(void *to, uint64_t ms);
};

struct reply {
    const struct reply_ops *ops;
    void *to;
};

static inline void
reply_bytes(struct reply *r, const void *data, size_t len)
{
    r->ops->bytes(r->to, data, len);
}

static inline void
reply_str(struct reply *r, const char *s)
{
    r->ops->bytes(r->to, s, strlen(s));
}

static inline void
reply_payload(struct reply *r, char *p, size_t len)
{
    r->ops->payload(r->to, p, len);
}

static inline void
reply_park(struct reply *r, void *waiting)
{
    r->ops->park(r->to, waiting);
}

static inline void
reply_wake(struct reply *r)
{
    r->ops->wake(r->to);
}

static inline void
reply_close(struct reply *r)
{
    r->ops->close(r->to);
}

static inline const char *
reply_peer(struct reply *r)
{
    return r->ops->peer(r->to);
}

static inline void
reply_pause(struct reply *r, uint64_t ms)
{
    r->ops->pause(r->to, ms);
}

#endif /* WQ_REPLY_H */
