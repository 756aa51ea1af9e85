/* listener.c - binding listening sockets and accepting TCP clients for the
 * connection layer (listener.h). */
#include "lib/wq.h"
#include "net/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/util.h"
#include "net/conn.h"

#define LISTENER_BACKLOG 1024
/* How long accepting pauses when file descriptors run out. */
#define LISTENER_ACCEPT_PAUSE_MS 100
/* ... and logs it at most this often. */
#define LISTENER_ACCEPT_LOG_MS 1000
/* The reply to a client beyond -max-connections, before it is closed. */
#define LISTENER_FULL_REPLY "-SERVER-ERROR Too many connections\r\n"

/* One TCP listener and the service it serves. */
struct listener {
    struct listeners *set;
    struct evconnlistener *l;
    const struct conn_service *svc;
};

struct listeners {
    struct event_base *base;
    struct conn_set *conns;
    uint64_t max_connections;
    uint64_t *clients;
    struct listener **tab; /* each allocated alone: callbacks hold its address */
    size_t n, cap;
    struct event *resume_ev;         /* re-enables accepting after an accept error */
    uint64_t accept_error_logged_ms; /* the last "accept failed" line */
    uint64_t accept_errors_unlogged; /* since */
    uint64_t accepted, refused;
    bool full;     /* refusing clients at max_connections */
    bool stopping; /* no more accepting, ever */
};

void
listener_describe(struct evconnlistener *l, bool tls, char *out)
{
    if (tls) {
        memcpy(out, "tls://", 6);
        out += 6;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    evutil_socket_t fd = evconnlistener_get_fd(l);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
            port = ntohs(s6->sin6_port);
            snprintf(out, LISTEN_BOUND_MAX - 8, "[%s]:%u", host, port);
            return;
        }
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
    }
    snprintf(out, LISTEN_BOUND_MAX - 8, "%s:%u", host, port);
}

struct evconnlistener *
listener_bind(struct event_base *base, const struct listen_addr *a)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(a->host[0] ? a->host : NULL, a->port, &hints, &res);
    if (rc != 0) {
        wq_log(LOG_LVL_ERROR, "cannot resolve listen address host=%s error=\"%s\"", a->host,
               gai_strerror(rc));
        return NULL;
    }
    int err = 0;
    struct evconnlistener *l = NULL;
    for (struct addrinfo *ai = res; ai != NULL && l == NULL; ai = ai->ai_next) {
        l = evconnlistener_new_bind(base, NULL, NULL,
                                    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
                                        LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_DISABLED,
                                    LISTENER_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
        if (l == NULL)
            err = errno;
    }
    freeaddrinfo(res);
    if (l == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot listen address=%s:%s error=\"%s\"", a->host, a->port,
               strerror(err));
        return NULL;
    }
    return l;
}

void
listeners_enable(struct listeners *s, bool on)
{
    for (size_t i = 0; i < s->n; i++) {
        if (on)
            evconnlistener_enable(s->tab[i]->l);
        else
            evconnlistener_disable(s->tab[i]->l);
    }
}

void
listeners_stop(struct listeners *s)
{
    s->stopping = true;
    listeners_enable(s, false);
}

static void
listeners_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                    void *arg)
{
    struct listener *sl = arg;
    struct listeners *s = sl->set;
    uint64_t max = s->max_connections;
    if (max > 0 && *s->clients >= max) {
        /* Say why before closing; a client that cannot take even this
         * line at once just sees the close. */
        if (!s->full)
            wq_log(LOG_LVL_WARN, "refusing clients max_connections=%llu", (unsigned long long)max);
        s->full = true;
        s->refused++;
        (void)!send(fd, LISTENER_FULL_REPLY, sizeof LISTENER_FULL_REPLY - 1,
                    MSG_DONTWAIT | MSG_NOSIGNAL);
        evutil_closesocket(fd);
        return;
    }
    if (s->full) {
        wq_log(LOG_LVL_INFO, "accepting clients again clients=%llu",
               (unsigned long long)*s->clients);
        s->full = false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn_new(s->conns, sl->svc, fd);
    *s->clients = conn_count(s->conns);
    s->accepted++;
}

static void
listeners_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct listeners *s = arg;
    if (!s->stopping)
        listeners_enable(s, true);
}

/* accept failed (EMFILE, ENFILE, ENOMEM...): the pending connection stays
 * in the backlog and the socket stays readable, so pause accepting for a
 * moment instead of spinning. */
static void
listeners_error_cb(struct evconnlistener *l, void *arg)
{
    struct listeners *s = ((struct listener *)arg)->set;
    uint64_t now = util_now_ms();
    if (now - s->accept_error_logged_ms >= LISTENER_ACCEPT_LOG_MS) {
        wq_log(LOG_LVL_WARN, "accept failed, pausing ms=%d error=\"%s\" repeats=%llu",
               LISTENER_ACCEPT_PAUSE_MS, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()),
               (unsigned long long)s->accept_errors_unlogged);
        s->accept_error_logged_ms = now;
        s->accept_errors_unlogged = 0;
    } else {
        s->accept_errors_unlogged++;
    }
    listeners_enable(s, false);
    struct timeval tv = {0, LISTENER_ACCEPT_PAUSE_MS * 1000};
    evtimer_add(s->resume_ev, &tv);
}

struct listeners *
listeners_new(struct event_base *base, struct conn_set *conns, uint64_t max_connections,
              uint64_t *clients)
{
    struct listeners *s = wq_calloc(1, sizeof *s);
    s->base = base;
    s->conns = conns;
    s->max_connections = max_connections;
    s->clients = clients;
    s->resume_ev = evtimer_new(base, listeners_resume_cb, s);
    return s;
}

int
listeners_add(struct listeners *s, const struct listen_addr *a, const struct conn_service *svc,
              char *bound)
{
    struct evconnlistener *l = listener_bind(s->base, a);
    if (l == NULL)
        return -1;
    if (s->n == s->cap) {
        s->cap = WQ_MAX(s->cap * 2, 4u);
        s->tab = wq_realloc(s->tab, s->cap * sizeof *s->tab);
    }
    struct listener *sl = wq_malloc(sizeof *sl);
    *sl = (struct listener){s, l, svc};
    s->tab[s->n++] = sl;
    evconnlistener_set_cb(l, listeners_accept_cb, sl);
    evconnlistener_set_error_cb(l, listeners_error_cb);
    listener_describe(l, a->tls, bound);
    return 0;
}

uint64_t
listeners_accepted(const struct listeners *s)
{
    return s->accepted;
}

uint64_t
listeners_refused(const struct listeners *s)
{
    return s->refused;
}

void
listeners_free(struct listeners *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        evconnlistener_free(s->tab[i]->l);
        wq_free(s->tab[i]);
    }
    if (s->resume_ev != NULL)
        event_free(s->resume_ev);
    wq_free(s->tab);
    wq_free(s);
}
