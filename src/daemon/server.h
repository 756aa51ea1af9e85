/* server.h - the event loop: the listeners and the protocol services they
 * serve, signals, the one timer that drives the core's timer wheels, the
 * command log's end-of-pass write, and the set of connections. */
#ifndef WQ_SERVER_H
#define WQ_SERVER_H

#include "lib/wq.h"
#include "workq/cmd.h"
#include "net/conn.h"
#include "faktory/fwp.h"
#include "daemon/options.h"
#include "http/metrics.h"
#include "http/stats.h"
#include "net/tls.h"

struct options;
struct cmdlog;
struct event_base;
struct metrics;

/* One listening socket and the protocol it serves. */
struct server_listener {
    struct server *srv;
    struct evconnlistener *l;
    const struct conn_service *svc;
    char bound[104]; /* "host:port" really bound, after "tls://" for TLS */
};

struct server {
    struct event_base *base;
    struct server_listener listeners[2 * OPTIONS_MAX_LISTEN];
    size_t nlisteners;
    struct event *timer;
    struct event *sig_int, *sig_term, *sig_hup;
    struct event *idle_ev;           /* the sweep for idle connections */
    struct event *stop_ev;           /* deadline of a graceful stop */
    struct event *accept_ev;         /* re-enables accepting after EMFILE */
    uint64_t accept_error_logged_ms; /* the last "accept failed" line */
    uint64_t accept_errors_unlogged; /* since */
    bool stopping;
    bool full;         /* refusing clients at -max-connections */
    uint64_t timer_at; /* when the timer is armed for, WHEEL_NEVER if not */
    const struct options *opts;
    struct cmd_ctx ctx;            /* the core and the batch time */
    struct conn_set *conns;        /* every open connection */
    struct conn_service workq;     /* the Workq protocol, as the listeners serve it */
    struct conn_service faktory;   /* the Faktory protocol (-faktory-listen) */
    struct conn_service workq_tls; /* each of them over TLS (tls:// addresses) */
    struct conn_service faktory_tls;
    struct tls *tls;               /* the TLS context, if an address needs one */
    struct fwp_ctx fwp;            /* its context */
    struct conn_hooks hooks;       /* the connections' batches (and MUTATE's slices) */
    char *faktory_password;        /* NULL: none */
    struct cmdlog *cmdlog;         /* NULL without -cmdlog-path */
    struct event *cmdlog_ev;       /* the command log's threads' news */
    struct event *cmdlog_retry_ev; /* ends a pass now and then while writes fail */
    uint64_t cmdlog_released;      /* cmdlog_released when held replies were last sent */
    uint64_t started_ms;
    struct stats stats;                          /* commands and connections (stats.h) */
    struct metrics *metrics;                     /* the HTTP endpoint (-metrics-listen), or NULL */
    char metrics_bound[OPTIONS_MAX_LISTEN][104]; /* "host:port" it really bound */
    size_t nmetrics;
    bool accepting; /* server_accept was called: replay is done, listeners open */
};

/* Set up the loop and the core.  Returns 0, or -1 after logging. */
int server_init(struct server *srv, const struct options *opts);
/* Open the command log, replay it into the core and start logging.
 * Returns 0, or the exit status after logging: EX_CANTCREAT when the
 * server cannot create files in the log's directory, else EX_CONFIG. */
int server_open_cmdlog(struct server *srv);
/* Read the Faktory listeners' password (-faktory-password-file, else
 * FAKTORY_PASSWORD).  Returns 0, or -1 after logging (EX_CONFIG). */
int server_faktory_password(struct server *srv);
/* Read the Workq password (-password-file) into srv->ctx.auth; again on
 * SIGHUP.  0, or -1 (logged; a password already in use is kept). */
int server_workq_password(struct server *srv);
/* Bind the listeners, not accepting yet (clients wait in the backlog).
 * Returns 0, or -1 after logging (EX_UNAVAILABLE). */
int server_listen(struct server *srv);
/* Bind the metrics endpoint (-metrics-listen), not accepting yet.
 * Returns 0, or -1 after logging (EX_UNAVAILABLE). */
int server_listen_metrics(struct server *srv);
/* Load the TLS certificate and key if a tls:// address needs them.
 * Returns 0, or -1 after logging (EX_CONFIG). */
int server_tls(struct server *srv);
/* Start accepting clients. */
void server_accept(struct server *srv);
/* Run until SIGINT or SIGTERM. */
void server_run(struct server *srv);
/* Close every connection and free everything. */
void server_clear(struct server *srv);

#endif /* WQ_SERVER_H */
