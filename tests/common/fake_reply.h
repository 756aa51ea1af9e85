/* fake_reply.h - a client as protocol modules see it (reply.h), for their
 * unit tests: it records what was answered, whether the command parked
 * (and on what), how often it was woken, whether the module closed it,
 * and for how long it paused it (moving a clock on by as much, if given). */
#ifndef WQ_TESTS_FAKE_REPLY_H
#define WQ_TESTS_FAKE_REPLY_H

#include <check.h>
#include <string.h>

#include "net/reply.h"

struct fake {
    struct reply reply;
    char out[8192];
    size_t len;
    void *waiting;
    int wakes;
    bool closed;
    uint64_t paused_ms; /* the sum of the pauses asked for */
    uint64_t *clock;    /* if set, moved on by each pause: the client's next
                           command comes after it */
};

static inline void
fake_bytes(void *to, const void *data, size_t len)
{
    struct fake *f = to;
    ck_assert_uint_le(f->len + len, sizeof f->out - 1);
    memcpy(f->out + f->len, data, len);
    f->len += len;
    f->out[f->len] = '\0';
}

static inline void
fake_payload(void *to, char *p, size_t len)
{
    fake_bytes(to, p, len);
}

static inline void
fake_park(void *to, void *waiting)
{
    ((struct fake *)to)->waiting = waiting;
}

static inline void
fake_wake(void *to)
{
    struct fake *f = to;
    f->waiting = NULL;
    f->wakes++;
}

static inline void
fake_close(void *to)
{
    ((struct fake *)to)->closed = true;
}

static inline const char *
fake_peer(void *to)
{
    return "127.0.0.1:4242";
}

static inline void
fake_pause(void *to, uint64_t ms)
{
    struct fake *f = to;
    f->paused_ms += ms;
    if (f->clock != NULL)
        *f->clock += ms;
}

static const struct reply_ops fake_ops = {fake_bytes, fake_payload, fake_park, fake_wake,
                                          fake_close, fake_peer,    fake_pause};

/* A fresh client (f's protocol state, if any, is the caller's). */
static inline void
fake_init(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->reply = (struct reply){&fake_ops, f};
}

#endif /* WQ_TESTS_FAKE_REPLY_H */
