/* server.h - the event loop: the front-ends of the table (frontends.h) and
 * their listeners, signals, the one timer that drives the engine's timer
 * wheels, the command log's end-of-pass write, and the set of connections.
 * The server knows front-ends only as rows of the table: it lends them
 * the loop, the engine and the clock (net/frontend.h), binds their
 * addresses and includes none of their headers. */
#ifndef WQ_SERVER_H
#define WQ_SERVER_H

#include "lib/wq.h"
#include "daemon/frontends.h"
#include "net/conn.h"
#include "net/frontend.h"
#include "net/listener.h"

struct options;
struct cmdlog;
struct event_base;

/* One address a front-end really bound. */
struct server_bound {
    const char *name; /* its row's name (NULL: the Workq protocol) */
    bool protocol;    /* a protocol's (named in the start-up line), not an endpoint's */
    char addr[LISTEN_BOUND_MAX];
};

struct server {
    struct event_base *base;
    const struct options *opts;
    struct core *core; /* the engine */
    uint64_t now_ms;   /* the current batch's time */
    bool readonly;     /* the command log cannot be written */
    uint64_t clients;  /* open connections */
    uint64_t started_ms;
    struct auth_guard *auth_guard; /* failing addresses, every listener's */
    struct tls *tls;               /* the TLS context, if an address needs one */
    struct frontend_env env;       /* what the front-ends get */
    void *fe[FRONTENDS_MAX];       /* each row's front-end, NULL: not in service */
    struct server_bound bound[FRONTENDS_MAX * LISTEN_MAX];
    size_t nbound;
    struct listeners *listeners; /* the TCP ones, feeding conns */
    struct conn_set *conns;      /* every open connection */
    struct conn_hooks hooks;     /* the connections' batches (and MUTATE's slices) */
    struct event *timer;
    struct event *sig_int, *sig_term, *sig_hup;
    struct event *idle_ev; /* the sweep for idle connections */
    struct event *stop_ev; /* deadline of a graceful stop */
    bool stopping;
    uint64_t timer_at;             /* when the timer is armed for, WHEEL_NEVER if not */
    struct cmdlog *cmdlog;         /* NULL without -cmdlog-path */
    struct event *cmdlog_ev;       /* the command log's threads' news */
    struct event *cmdlog_retry_ev; /* ends a pass now and then while writes fail */
    uint64_t cmdlog_released;      /* cmdlog_released when held replies were last sent */
    bool accepting;                /* server_accept was called: replay is done, listeners open */
};

/* Set up the loop and the engine.  Returns 0, or -1 after logging. */
int server_init(struct server *srv, const struct options *opts);
/* Load the TLS certificate and key if a tls:// address needs them.
 * Returns 0, or -1 after logging (EX_CONFIG). */
int server_tls(struct server *srv);
/* Open every front-end of the table.  Returns 0, or the exit status after
 * logging (EX_CONFIG for a password file it cannot use). */
int server_open_frontends(struct server *srv);
/* Bind every front-end's addresses, not accepting yet (clients wait in the
 * backlog).  Returns 0, or -1 after logging (EX_UNAVAILABLE). */
int server_listen(struct server *srv);
/* Open the command log, replay it into the engine and start logging.
 * Returns 0, or the exit status after logging: EX_CANTCREAT when the
 * server cannot create files in the log's directory, else EX_CONFIG. */
int server_open_cmdlog(struct server *srv);
/* Start accepting clients. */
void server_accept(struct server *srv);
/* Run until SIGINT or SIGTERM. */
void server_run(struct server *srv);
/* Close every connection and free everything. */
void server_clear(struct server *srv);

#endif /* WQ_SERVER_H */
