/* listener.h - listening sockets, for every front-end: the addresses one
 * front-end listens on, binding them disabled (clients wait in the backlog
 * until the server accepts), the address each really bound, and the set of
 * TCP listeners whose sockets go to the connection layer (conn.h): the
 * -max-connections refusal and a pause when accept fails.  A front-end
 * with a transport of its own (evhttp) takes bound listeners instead. */
#ifndef WQ_LISTENER_H
#define WQ_LISTENER_H

#include "lib/wq.h"

/* At most this many addresses per front-end. */
#define LISTEN_MAX 8
/* Room for "tls://" and "host:port" as listener_describe writes it. */
#define LISTEN_BOUND_MAX 104

struct conn_service;
struct conn_set;
struct event_base;
struct evconnlistener;
struct listeners;

struct listen_addr {
    char host[256]; /* "" means every address */
    char port[16];
    bool tls; /* written tls://HOST:PORT */
};

/* The addresses one front-end listens on. */
struct listen_set {
    struct listen_addr addr[LISTEN_MAX];
    size_t n;
};

/* Bind a listener for a (the first of its addresses that works), disabled
 * and without a callback.  NULL after logging. */
struct evconnlistener *listener_bind(struct event_base *base, const struct listen_addr *a);
/* The address l really bound (port 0 becomes a port) into
 * out[0..LISTEN_BOUND_MAX), after "tls://" if tls. */
void listener_describe(struct evconnlistener *l, bool tls, char *out);

/* The TCP listeners, each serving one conn_service.  *clients is the count
 * of open connections, kept by the caller and updated here at each
 * accept; beyond max_connections (0: no limit) a client is told
 * "-SERVER-ERROR Too many connections" and closed. */
struct listeners *listeners_new(struct event_base *base, struct conn_set *conns,
                                uint64_t max_connections, uint64_t *clients);
/* Bind a for svc (which must outlive the set), disabled; its address as
 * bound into bound[0..LISTEN_BOUND_MAX).  0, or -1 after logging. */
int listeners_add(struct listeners *s, const struct listen_addr *a, const struct conn_service *svc,
                  char *bound);
/* Start or stop accepting on every listener of the set.  Once stopped
 * for good (stopping), an accept pause does not start them again. */
void listeners_enable(struct listeners *s, bool on);
void listeners_stop(struct listeners *s);
/* Connections accepted, and refused at max_connections, since start. */
uint64_t listeners_accepted(const struct listeners *s);
uint64_t listeners_refused(const struct listeners *s);
/* Close the listeners and free the set; NULL is ignored. */
void listeners_free(struct listeners *s);

#endif /* WQ_LISTENER_H */
