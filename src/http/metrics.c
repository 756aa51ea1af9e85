/* metrics.c - the monitoring endpoint over evhttp: routing, content
 * negotiation, status lines. */
#include "lib/wq.h"
#include "http/metrics.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "lib/alloc.h"
#include "net/http_guard.h"
#include "lib/log.h"
#include "lib/stats_text.h"

/* A scraper that stalls is dropped after this long (seconds); a request
 * must arrive whole within it too. */
#define METRICS_TIMEOUT_S 10
/* Scrapers are few: connections beyond this (or -max-connections, or a
 * quarter of the descriptor limit, when smaller) wait in the backlog. */
#define METRICS_MAX_CONNECTIONS 64
/* What a connection may read ahead of evhttp: past it, a client that
 * pipelines requests without reading the replies is no longer read. */
#define METRICS_MAX_INPUT 65536
/* Requests are small: headers up to this, and no body worth reading. */
#define METRICS_MAX_HEADERS 16384
#define METRICS_MAX_BODY    4096

struct metrics {
    struct evhttp *http;  /* plain HTTP */
    struct evhttp *https; /* over cfg.bev (TLS); NULL until a listener needs it */
    struct metrics_config cfg;
    struct event_base *base;
    struct http_guard *guard; /* bounds both servers' connections */
};

/* One media range of an Accept header: does it name OpenMetrics 1.0
 * (om), the text format (text), and with what q? */
static void
metrics_media_range(const char *p, size_t n, double *om_q, double *text_q)
{
    char range[256];
    if (n >= sizeof range)
        return;
    memcpy(range, p, n);
    range[n] = '\0';
    double q = 1.0;
    const char *version = NULL;
    char *save = NULL;
    char *type = strtok_r(range, ";", &save);
    if (type == NULL)
        return;
    for (char *param = strtok_r(NULL, ";", &save); param != NULL;
         param = strtok_r(NULL, ";", &save)) {
        while (isspace((unsigned char)*param))
            param++;
        if (strncasecmp(param, "q=", 2) == 0)
            q = strtod(param + 2, NULL);
        else if (strncasecmp(param, "version=", 8) == 0)
            version = param + 8;
    }
    while (isspace((unsigned char)*type))
        type++;
    size_t tl = strcspn(type, " \t");
    type[tl] = '\0';
    if (strcasecmp(type, "application/openmetrics-text") == 0) {
        if (version == NULL || strncmp(version, "1.0.0", 5) == 0)
            *om_q = WQ_MAX(*om_q, q);
    } else if (strcasecmp(type, "text/plain") == 0) {
        if (version == NULL || strncmp(version, "0.0.4", 5) == 0)
            *text_q = WQ_MAX(*text_q, q);
    } else if (strcasecmp(type, "text/*") == 0 || strcmp(type, "*/*") == 0) {
        *text_q = WQ_MAX(*text_q, q);
    }
}

bool
metrics_wants_openmetrics(const char *accept)
{
    if (accept == NULL)
        return false;
    double om_q = 0, text_q = 0;
    for (const char *p = accept; *p != '\0';) {
        size_t n = strcspn(p, ",");
        metrics_media_range(p, n, &om_q, &text_q);
        p += n + (p[n] == ',');
    }
    /* A tie goes to OpenMetrics: a scraper that names it prefers it. */
    return om_q > 0 && om_q >= text_q;
}

/* Answer with a short text body. */
static void
metrics_send_text(struct evhttp_request *req, int code, const char *reason, const char *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    /* evhttp leaves Content-Length out for HEAD, but would send the body */
    if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD)
        evbuffer_add_printf(b, "%s\n", body);
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

static void
metrics_free_rendered(const void *data, size_t len, void *arg)
{
    wq_free((void *)data);
}

static void
metrics_scrape(struct metrics *m, struct evhttp_request *req)
{
    const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
    bool om = metrics_wants_openmetrics(accept);
    struct stats_buf out = {0};
    if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD)
        m->cfg.render(m->cfg.arg, om, &out);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", om ? METRICS_OPENMETRICS_TYPE : METRICS_TEXT_TYPE);
    struct evbuffer *b = evbuffer_new();
    if (b == NULL || (out.p != NULL && evbuffer_add_reference(b, out.p, out.len,
                                                              metrics_free_rendered, NULL) != 0)) {
        stats_buf_clear(&out);
        if (b != NULL)
            evbuffer_free(b);
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

static void
metrics_request_cb(struct evhttp_request *req, void *arg)
{
    struct metrics *m = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    int which = path == NULL                    ? -1
                : strcmp(path, "/metrics") == 0 ? 0
                : strcmp(path, "/healthz") == 0 ? 1
                : strcmp(path, "/readyz") == 0  ? 2
                                                : -1;
    if (which < 0) {
        metrics_send_text(req, HTTP_NOTFOUND, "Not Found", "not found");
        return;
    }
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        metrics_send_text(req, HTTP_BADMETHOD, "Method Not Allowed", "method not allowed");
        return;
    }
    if (which == 0) {
        metrics_scrape(m, req);
    } else if (which == 1) {
        metrics_send_text(req, HTTP_OK, "OK", "ok");
    } else {
        const char *why = m->cfg.ready(m->cfg.arg);
        if (why == NULL)
            metrics_send_text(req, HTTP_OK, "OK", "ready");
        else
            metrics_send_text(req, HTTP_SERVUNAVAIL, "Service Unavailable", why);
    }
}

/* An HTTP server on m's base answering m's routes, its connections made
 * by bev (NULL: plain TCP).  NULL after logging. */
static struct evhttp *
metrics_http_new(struct metrics *m, struct event_base *base, metrics_bev_fn bev)
{
    struct evhttp *http = evhttp_new(base);
    if (http == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot create the metrics HTTP server");
        return NULL;
    }
    /* Every method reaches the callback, which answers 405 (evhttp would
     * answer 501 to the ones it was not told to allow). */
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                         EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                         EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_timeout(http, METRICS_TIMEOUT_S);
    evhttp_set_max_headers_size(http, METRICS_MAX_HEADERS);
    evhttp_set_max_body_size(http, METRICS_MAX_BODY);
    evhttp_set_gencb(http, metrics_request_cb, m);
    http_guard_serve(m->guard, http, bev, m->cfg.bev_arg);
    return http;
}

struct metrics *
metrics_new(struct event_base *base, const struct metrics_config *cfg)
{
    struct metrics *m = wq_calloc(1, sizeof *m);
    m->cfg = *cfg;
    m->base = base;
    /* a quarter of the descriptors at most: scrapers must not starve the
     * job listeners of them */
    uint64_t max = METRICS_MAX_CONNECTIONS;
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
        max = WQ_MIN(max, WQ_MAX(nofile.rlim_cur / 4, 1u));
    if (cfg->max_connections > 0 && cfg->max_connections < max)
        max = cfg->max_connections;
    const struct http_guard_config guard = {"metrics", max, METRICS_TIMEOUT_S * 1000,
                                            METRICS_MAX_INPUT};
    m->guard = http_guard_new(base, &guard);
    m->http = metrics_http_new(m, base, NULL);
    if (m->http == NULL) {
        http_guard_free(m->guard);
        wq_free(m);
        return NULL;
    }
    return m;
}

int
metrics_add_listener(struct metrics *m, struct evconnlistener *l, bool tls)
{
    if (tls && m->https == NULL && m->cfg.bev != NULL)
        m->https = metrics_http_new(m, m->base, m->cfg.bev);
    struct evhttp *http = tls ? m->https : m->http;
    if (http == NULL || evhttp_bind_listener(http, l) == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot serve metrics on a listener");
        evconnlistener_free(l);
        return -1;
    }
    http_guard_add_listener(m->guard, l);
    return 0;
}

void
metrics_accept(struct metrics *m)
{
    http_guard_accept(m->guard, true);
}

void
metrics_free(struct metrics *m)
{
    if (m == NULL)
        return;
    http_guard_free(m->guard); /* before its connections go */
    evhttp_free(m->http);      /* and the listeners it was bound to */
    if (m->https != NULL)
        evhttp_free(m->https);
    wq_free(m);
}
