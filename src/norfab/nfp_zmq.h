/* nfp_zmq.h - what the broker's ZeroMQ sockets share (the ROUTER and the
 * ZAP handler's): whether one holds input, reading one message of several
 * frames, and sending one with the bytes ZeroMQ holds for it counted.
 * Built only with libzmq. */
#ifndef WQ_NFP_ZMQ_H
#define WQ_NFP_ZMQ_H

#include "lib/wq.h"

#include <stdatomic.h>
#include <zmq.h>

#include "norfab/nfp.h"

/* Does sock hold input?  (ZMQ_FD is edge-triggered: ask after every send
 * and receive.) */
bool nfp_zmq_readable(void *sock);

/* Read one message of sock into msgs[0..max) (the frames past max are
 * read and dropped: *whole is then false); its frame count, 0 when there
 * is none.  The caller closes the msgs. */
size_t nfp_zmq_recv(void *sock, zmq_msg_t *msgs, size_t max, bool *whole);

/* Frames of a message the broker reads (NORFAB's have 8 at most: the
 * rest are dropped) or nfp_zmq_send takes, at most. */
#define NFP_ZMQ_MAX_FRAMES 64

/* Send frames[0..n) (1 to NFP_ZMQ_MAX_FRAMES) as one message on sock
 * without waiting: 0, or -1 with errno (the peer is gone or full, or
 * memory ran out: nothing is sent then; later frames fail only as the
 * context ends).  The bytes ZeroMQ holds for the message, about
 * 100 a frame more than their own, are in *queued until it has sent them
 * and let go of them: in its I/O thread, so *queued is atomic. */
int nfp_zmq_send(void *sock, const struct nfp_frame *frames, size_t n, _Atomic uint64_t *queued);

#endif /* WQ_NFP_ZMQ_H */
