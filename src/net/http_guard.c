/* http_guard.c - caps, bounded buffers, request deadlines and accept
 * pauses for evhttp's connections (see http_guard.h). */
#include "lib/wq.h"
#include "net/http_guard.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "lib/alloc.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/util.h"

/* How long the listeners pause after an accept error. */
#define HTTP_GUARD_PAUSE_MS 100
/* How often request deadlines are checked (a deadline is met to this). */
#define HTTP_GUARD_SWEEP_MS 500
/* Accept errors are logged at most this often. */
#define HTTP_GUARD_LOG_MS        1000
#define HTTP_GUARD_MAX_LISTENERS 16

/* What the bufferevent callback of one evhttp server needs. */
struct http_guard_binding {
    struct http_guard *g;
    struct evhttp *http;
    http_transport_fn transport;
    void *arg;
};

struct http_guard {
    struct list link; /* in http_guards */
    struct http_guard_config cfg;
    struct event_base *base;
    struct http_guard_binding bindings[2];
    size_t nbindings;
    struct evconnlistener *listeners[HTTP_GUARD_MAX_LISTENERS];
    size_t nlisteners;
    struct list conns; /* struct http_guard_conn */
    uint64_t open;
    bool accepting; /* asked to */
    bool paused;    /* after an accept error */
    bool full;      /* at the cap, and logged so */
    uint64_t full_logged_ms;
    bool closing;         /* http_guard_free was called */
    struct event *resume; /* ends a pause */
    struct event *sweep;  /* checks deadlines while connections are open */
    uint64_t error_logged_ms;
    uint64_t errors_unlogged;
};

/* One connection, from its bufferevent's making until evhttp closes it. */
struct http_guard_conn {
    struct list link; /* in its guard's conns */
    struct http_guard *g;
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* NULL until attached */
    struct event *attach;            /* runs once evhttp has set the connection up */
    struct evbuffer_cb_entry *in_cb, *out_cb;
    uint64_t since_ms; /* when the request arriving began; 0: none is */
};

/* The live guards, to find a listener's guard on an accept error (evhttp
 * owns the listener's callback argument). */
static struct list http_guards = {&http_guards, &http_guards};

/* Enable the listeners if g accepts, is not paused and is under its cap;
 * else disable them.  Reaching and leaving the cap are logged. */
static void
http_guard_update(struct http_guard *g)
{
    bool at_cap = g->open >= g->cfg.max_connections;
    bool on = g->accepting && !g->paused && !at_cap;
    for (size_t i = 0; i < g->nlisteners; i++) {
        if (on)
            evconnlistener_enable(g->listeners[i]);
        else
            evconnlistener_disable(g->listeners[i]);
    }
    /* the cap reached is logged once a second at most, and leaving it only
     * after a line said it was reached */
    uint64_t now = util_now_ms();
    if (at_cap && !g->full && now - g->full_logged_ms >= HTTP_GUARD_LOG_MS) {
        wq_log(LOG_LVL_WARN, "%s refusing connections max_connections=%llu", g->cfg.name,
               (unsigned long long)g->cfg.max_connections);
        g->full = true;
        g->full_logged_ms = now;
    } else if (!at_cap && g->full) {
        wq_log(LOG_LVL_INFO, "%s accepting connections again connections=%llu", g->cfg.name,
               (unsigned long long)g->open);
        g->full = false;
    }
}

/* Bytes came in: the first after a reply (or the opening) starts a
 * request's deadline. */
static void
http_guard_input_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    struct http_guard_conn *c = arg;
    if (info->n_added > 0 && c->since_ms == 0)
        c->since_ms = util_now_ms();
}

/* A reply is going out: its request has arrived. */
static void
http_guard_output_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    struct http_guard_conn *c = arg;
    if (info->n_added > 0)
        c->since_ms = 0;
}

/* Free g itself (its events are gone already). */
static void
http_guard_destroy(struct http_guard *g)
{
    list_unlink(&g->link);
    wq_free(g);
}

/* c's connection is gone: forget it. */
static void
http_guard_conn_gone(struct http_guard_conn *c)
{
    struct http_guard *g = c->g;
    list_unlink(&c->link);
    event_free(c->attach);
    wq_free(c);
    g->open--;
    if (g->closing) {
        if (g->open == 0)
            http_guard_destroy(g);
        return;
    }
    if (g->open == 0)
        event_del(g->sweep);
    http_guard_update(g);
}

/* evhttp_connection_free (or a reset) closes c's connection. */
static void
http_guard_closed_cb(struct evhttp_connection *evcon, void *arg)
{
    struct http_guard_conn *c = arg;
    evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->in_cb);
    evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb);
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    http_guard_conn_gone(c);
}

/* In the same loop pass as the accept, before any I/O on it: evhttp has
 * made c's connection (its callbacks' argument) or, on a failure, freed
 * it (its callbacks are gone; libevent frees the bufferevent only after
 * this callback, which was queued first). */
static void
http_guard_attach_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_guard_conn *c = arg;
    bufferevent_event_cb eventcb = NULL;
    void *evcon = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &eventcb, &evcon);
    if (eventcb == NULL || evcon == NULL || c->g->closing) {
        http_guard_conn_gone(c);
        return;
    }
    c->evcon = evcon;
    evhttp_connection_set_closecb(c->evcon, http_guard_closed_cb, c);
    c->in_cb = evbuffer_add_cb(bufferevent_get_input(c->bev), http_guard_input_cb, c);
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev), http_guard_output_cb, c);
    if (c->in_cb == NULL || c->out_cb == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory watching a connection");
}

/* evhttp_set_bevcb: a new connection's bufferevent, its input bounded. */
static struct bufferevent *
http_guard_bev(struct event_base *base, void *arg)
{
    struct http_guard_binding *b = arg;
    struct http_guard *g = b->g;
    struct bufferevent *bev = b->transport != NULL
                                  ? b->transport(base, b->arg)
                                  : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        return NULL;
    bufferevent_setwatermark(bev, EV_READ, 0, g->cfg.max_input);
    struct http_guard_conn *c = wq_calloc(1, sizeof *c);
    c->g = g;
    c->bev = bev;
    c->since_ms = util_now_ms();
    c->attach = event_new(base, -1, 0, http_guard_attach_cb, c);
    if (c->attach == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory creating an event");
    event_active(c->attach, EV_TIMEOUT, 0);
    list_push_back(&g->conns, &c->link);
    if (g->open++ == 0) {
        struct timeval tv = {0, HTTP_GUARD_SWEEP_MS * 1000};
        event_add(g->sweep, &tv);
    }
    http_guard_update(g);
    return bev;
}

/* Close the connections whose request has been arriving for too long
 * (closing one calls http_guard_closed_cb, which unlinks it). */
static void
http_guard_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_guard *g = arg;
    uint64_t now = util_now_ms();
    for (struct list *n = g->conns.next, *next; n != &g->conns; n = next) {
        next = n->next;
        struct http_guard_conn *c = WQ_CONTAINER_OF(n, struct http_guard_conn, link);
        if (c->evcon != NULL && c->since_ms != 0 && now - c->since_ms > g->cfg.request_ms)
            evhttp_connection_free(c->evcon);
    }
}

static void
http_guard_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_guard *g = arg;
    g->paused = false;
    http_guard_update(g);
}

/* An accept failed (EMFILE, ENFILE, ENOMEM...): the connection stays in
 * the backlog and the socket readable, so pause instead of spinning. */
static void
http_guard_accept_error_cb(struct evconnlistener *l, void *arg)
{
    int error = EVUTIL_SOCKET_ERROR();
    for (struct list *n = http_guards.next; n != &http_guards; n = n->next) {
        struct http_guard *g = WQ_CONTAINER_OF(n, struct http_guard, link);
        for (size_t i = 0; i < g->nlisteners; i++) {
            if (g->listeners[i] != l)
                continue;
            uint64_t now = util_now_ms();
            if (now - g->error_logged_ms >= HTTP_GUARD_LOG_MS) {
                wq_log(LOG_LVL_WARN, "%s accept failed, pausing ms=%d error=\"%s\" repeats=%llu",
                       g->cfg.name, HTTP_GUARD_PAUSE_MS, evutil_socket_error_to_string(error),
                       (unsigned long long)g->errors_unlogged);
                g->error_logged_ms = now;
                g->errors_unlogged = 0;
            } else {
                g->errors_unlogged++;
            }
            g->paused = true;
            http_guard_update(g);
            struct timeval tv = {0, HTTP_GUARD_PAUSE_MS * 1000};
            event_add(g->resume, &tv);
            return;
        }
    }
}

struct http_guard *
http_guard_new(struct event_base *base, const struct http_guard_config *cfg)
{
    struct http_guard *g = wq_calloc(1, sizeof *g);
    g->cfg = *cfg;
    g->base = base;
    list_init(&g->conns);
    g->resume = evtimer_new(base, http_guard_resume_cb, g);
    g->sweep = event_new(base, -1, EV_PERSIST, http_guard_sweep_cb, g);
    if (g->resume == NULL || g->sweep == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory creating events");
    list_push_back(&http_guards, &g->link);
    return g;
}

void
http_guard_serve(struct http_guard *g, struct evhttp *http, http_transport_fn transport, void *arg)
{
    WQ_ASSERT(g->nbindings < WQ_ARRAY_LEN(g->bindings));
    struct http_guard_binding *b = &g->bindings[g->nbindings++];
    *b = (struct http_guard_binding){g, http, transport, arg};
    evhttp_set_bevcb(http, http_guard_bev, b);
}

void
http_guard_add_listener(struct http_guard *g, struct evconnlistener *l)
{
    WQ_ASSERT(g->nlisteners < WQ_ARRAY_LEN(g->listeners));
    g->listeners[g->nlisteners++] = l;
    evconnlistener_set_error_cb(l, http_guard_accept_error_cb);
    http_guard_update(g);
}

void
http_guard_accept(struct http_guard *g, bool on)
{
    g->accepting = on;
    http_guard_update(g);
}

uint64_t
http_guard_open(const struct http_guard *g)
{
    return g->open;
}

void
http_guard_free(struct http_guard *g)
{
    if (g == NULL)
        return;
    event_free(g->resume);
    event_free(g->sweep);
    g->nlisteners = 0; /* evhttp frees them */
    g->closing = true;
    /* the connections evhttp has not finished making are forgotten now;
     * the others go as evhttp frees them */
    g->open++; /* keeps g while it walks */
    for (struct list *n = g->conns.next, *next; n != &g->conns; n = next) {
        next = n->next;
        struct http_guard_conn *c = WQ_CONTAINER_OF(n, struct http_guard_conn, link);
        if (c->evcon == NULL)
            http_guard_conn_gone(c);
    }
    if (--g->open == 0)
        http_guard_destroy(g);
}
