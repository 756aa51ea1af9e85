/* nfp_zmq.h - what the broker's ZeroMQ sockets share (the ROUTER and the
 * ZAP handler's): whether one holds input, and reading one message of
 * several frames.  Built only with libzmq. */
#ifndef WQ_NFP_ZMQ_H
#define WQ_NFP_ZMQ_H

#include "lib/wq.h"

#include <zmq.h>

/* Does sock hold input?  (ZMQ_FD is edge-triggered: ask after every send
 * and receive.) */
bool nfp_zmq_readable(void *sock);

/* Read one message of sock into msgs[0..max) (the frames past max are
 * read and dropped: *whole is then false); its frame count, 0 when there
 * is none.  The caller closes the msgs. */
size_t nfp_zmq_recv(void *sock, zmq_msg_t *msgs, size_t max, bool *whole);

#endif /* WQ_NFP_ZMQ_H */
