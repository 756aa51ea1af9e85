/* nfp_zmq.c - reading and writing the broker's ZeroMQ sockets
 * (nfp_zmq.h). */
#include "lib/wq.h"
#include "norfab/nfp_zmq.h"

#include <errno.h>
#include <string.h>

#include "lib/alloc.h"

/* What a frame costs ZeroMQ beyond its bytes: its zmq_msg_t in the pipe
 * (64) and the record of a buffer it does not own (40). */
#define NFP_ZMQ_FRAME_COST 104

/* A message handed to ZeroMQ: its frames' bytes in one block, which
 * ZeroMQ lets go of frame by frame once it has sent them. */
struct nfp_zmq_out {
    atomic_size_t refs;       /* frames ZeroMQ still holds */
    _Atomic uint64_t *queued; /* the count it is in */
    uint64_t cost;            /* what it adds to *queued */
    char data[];
};

/* ZeroMQ let go of one frame of hint's (in its I/O thread, or in the
 * sender's when the send failed). */
static void
nfp_zmq_out_free(void *data, void *hint)
{
    (void)data;
    struct nfp_zmq_out *o = hint;
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        atomic_fetch_sub_explicit(o->queued, o->cost, memory_order_relaxed);
        wq_free(o);
    }
}

int
nfp_zmq_send(void *sock, const struct nfp_frame *f, size_t n, _Atomic uint64_t *queued)
{
    if (n == 0 || n > NFP_ZMQ_MAX_FRAMES) {
        errno = EINVAL;
        return -1;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += f[i].n;
    struct nfp_zmq_out *o = wq_malloc(sizeof *o + bytes);
    atomic_init(&o->refs, n);
    o->queued = queued;
    o->cost = sizeof *o + bytes + n * NFP_ZMQ_FRAME_COST;
    atomic_fetch_add_explicit(queued, o->cost, memory_order_relaxed);
    /* every frame made before the first is sent: none fails half-way */
    zmq_msg_t m[NFP_ZMQ_MAX_FRAMES];
    char *at = o->data;
    for (size_t i = 0; i < n; i++) {
        if (f[i].n > 0)
            memcpy(at, f[i].p, f[i].n);
        if (zmq_msg_init_data(&m[i], at, f[i].n, nfp_zmq_out_free, o) != 0) {
            for (size_t k = 0; k < i; k++)
                zmq_msg_close(&m[k]);
            for (size_t k = i; k < n; k++)
                nfp_zmq_out_free(NULL, o);
            errno = ENOMEM;
            return -1;
        }
        at += f[i].n;
    }
    for (size_t i = 0; i < n; i++) {
        if (zmq_msg_send(&m[i], sock, ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0)) < 0) {
            /* the first frame (later ones only as the context ends) */
            int err = errno;
            for (size_t k = i; k < n; k++)
                zmq_msg_close(&m[k]);
            errno = err;
            return -1;
        }
    }
    return 0;
}

bool
nfp_zmq_readable(void *sock)
{
    uint32_t events = 0;
    size_t size = sizeof events;
    return zmq_getsockopt(sock, ZMQ_EVENTS, &events, &size) == 0 && (events & ZMQ_POLLIN);
}

size_t
nfp_zmq_recv(void *sock, zmq_msg_t *msgs, size_t max, bool *whole)
{
    size_t n = 0;
    *whole = true;
    for (;;) {
        zmq_msg_t tmp, *m = n < max ? &msgs[n] : &tmp;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(m);
            return n;
        }
        bool more = zmq_msg_more(m);
        if (m == &tmp) {
            zmq_msg_close(m);
            *whole = false;
        } else {
            n++;
        }
        if (!more)
            return n;
    }
}
