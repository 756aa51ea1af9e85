/* metrics.h - the HTTP endpoint for monitoring (-metrics-listen): GET
 * /metrics (Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept
 * header prefers it), /healthz and /readyz, over libevent's evhttp.  The
 * network layer's part only: what the series are is daemon/stats.c's (and
 * the front-ends'), whether the server is ready the server's (through
 * callbacks). */
#ifndef WQ_METRICS_H
#define WQ_METRICS_H

#include "lib/wq.h"

struct bufferevent;
struct event_base;
struct evconnlistener;
struct metrics;
struct stats_buf;

/* Append the exposition (OpenMetrics when om) to out. */
typedef void (*metrics_render_fn)(void *arg, bool om, struct stats_buf *out);
/* NULL when the server is ready, else why not (one line, no newline). */
typedef const char *(*metrics_ready_fn)(void *arg);
/* Make the bufferevent of an accepted HTTP connection on a TLS listener
 * (evhttp_set_bevcb): tls_http_bev.  NULL in the config: no TLS. */
typedef struct bufferevent *(*metrics_bev_fn)(struct event_base *base, void *arg);

struct metrics_config {
    metrics_render_fn render;
    metrics_ready_fn ready;
    void *arg; /* given to render and ready */
    metrics_bev_fn bev;
    void *bev_arg;
    uint64_t max_connections; /* -max-connections (0: none); the endpoint's own cap is lower */
};

/* A new endpoint on base serving no socket yet; NULL after logging. */
struct metrics *metrics_new(struct event_base *base, const struct metrics_config *cfg);
/* Serve HTTP on l, a listener created disabled and without a callback,
 * over TLS if tls (the config's bev); the endpoint owns it from now (even
 * on failure).  Its connections are bounded as http_guard.h says, at
 * most 64 of them (or max_connections, or a quarter of the descriptor
 * limit, if smaller).  0, or -1 after logging. */
int metrics_add_listener(struct metrics *m, struct evconnlistener *l, bool tls);
/* Start accepting on every listener. */
void metrics_accept(struct metrics *m);
/* Close the listeners and every HTTP connection; NULL is ignored. */
void metrics_free(struct metrics *m);

/* Does the Accept header value prefer OpenMetrics 1.0 text to the
 * Prometheus text format (by q-values; NULL: no)? */
bool metrics_wants_openmetrics(const char *accept);

/* The Content-Type of each format. */
#define METRICS_TEXT_TYPE        "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

#endif /* WQ_METRICS_H */
