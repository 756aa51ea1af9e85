/* nfp_zmq.c - reading the broker's ZeroMQ sockets (nfp_zmq.h). */
#include "lib/wq.h"
#include "norfab/nfp_zmq.h"

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
