/* http_guard.h - the bounds evhttp leaves out, for the connections of any
 * of our evhttp servers (the metrics endpoint today):
 *   - a cap on open connections: at it, the listeners stop accepting
 *     until one closes (connections wait in the kernel's backlog);
 *   - bounded input: evhttp keeps reading while it writes a reply, so a
 *     client that pipelines requests and never reads its replies would
 *     fill memory; what is read ahead is capped (evhttp writes one reply
 *     at a time), and such a client is simply no longer read;
 *   - a deadline for each request to arrive, counted from its first byte
 *     (or from the connection's opening): evhttp's own timeout restarts
 *     with every byte, so a client trickling a header byte every few
 *     seconds would hold its connection for a day;
 *   - accept errors (out of descriptors): the listeners pause instead of
 *     spinning, with a log line a second at most.
 * A connection is known from its bufferevent's making (evhttp_set_bevcb)
 * to evhttp's close callback; callbacks on its buffers see requests
 * arrive and replies leave. */
#ifndef WQ_HTTP_GUARD_H
#define WQ_HTTP_GUARD_H

#include "lib/wq.h"

struct bufferevent;
struct event_base;
struct evconnlistener;
struct evhttp;
struct http_guard;

/* The transport bufferevent of a new connection (fd -1: evhttp sets it);
 * NULL on failure. */
typedef struct bufferevent *(*http_transport_fn)(struct event_base *base, void *arg);

struct http_guard_config {
    const char *name;         /* in log lines, e.g. "metrics" */
    uint64_t max_connections; /* at least 1 */
    uint64_t request_ms;      /* a request must arrive within this */
    size_t max_input;         /* bytes read ahead of evhttp, per connection */
};

/* A guard on base; aborts if memory is exhausted. */
struct http_guard *http_guard_new(struct event_base *base, const struct http_guard_config *cfg);
/* Make http's connections through g, over transport (NULL: plain TCP)
 * with arg.  At most two evhttp servers per guard. */
void http_guard_serve(struct http_guard *g, struct evhttp *http, http_transport_fn transport,
                      void *arg);
/* l is bound to an evhttp that g serves: g enables and disables it. */
void http_guard_add_listener(struct http_guard *g, struct evconnlistener *l);
/* Accept on the listeners (as the cap allows), or stop. */
void http_guard_accept(struct http_guard *g, bool on);
/* Connections open now. */
uint64_t http_guard_open(const struct http_guard *g);
/* Done with g: call before freeing its evhttp servers (which free the
 * listeners and connections); g itself goes once its last connection has
 * gone.  NULL is ignored. */
void http_guard_free(struct http_guard *g);

#endif /* WQ_HTTP_GUARD_H */
