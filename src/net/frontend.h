/* frontend.h - the contract between the server and a front-end: a protocol
 * (Workq, Faktory) or an endpoint (metrics) that serves clients on
 * listeners of its own.  A front-end is one row of the server's table
 * (daemon/frontends.c), which opens it with what the server lends every
 * front-end (struct frontend_env) and its own options.  The server then
 * binds its addresses, and talks to it only through struct frontend_ops:
 * it includes none of a front-end's headers.  A front-end speaks over the
 * connection layer's TCP connections (ops->service), or brings a transport
 * of its own and takes bound listeners (ops->add_listener), or binds its
 * addresses itself (ops->bind). */
#ifndef WQ_FRONTEND_H
#define WQ_FRONTEND_H

#include "lib/wq.h"

struct auth_guard;
struct cmdlog;
struct conn_hooks;
struct conn_service;
struct core;
struct event_base;
struct evconnlistener;
struct listen_addr;
struct stats_buf;
struct stats_out;
struct tls;

/* What the server lends every front-end; it outlives them all. */
struct frontend_env {
    struct event_base *base;
    struct core *core;              /* the engine */
    const struct conn_hooks *hooks; /* the batches the server runs work in */
    struct auth_guard *auth_guard;  /* failing addresses, for every listener */
    struct tls *tls;                /* NULL unless a tls:// address needs it */
    const uint64_t *now_ms;         /* the current batch's time (Unix ms) */
    const bool *readonly;           /* the command log cannot be written */
    struct cmdlog *const *cmdlog;   /* the command log once open (NULL inside: none) */
    const uint64_t *clients;        /* open connections, every listener */
    uint64_t started_ms;
    size_t max_line;          /* -max-line */
    uint64_t max_payload;     /* -max-payload */
    uint64_t max_connections; /* -max-connections, 0: none */
    /* The server's figures (every front-end's too), for an endpoint that
     * serves them: render appends them to out, OpenMetrics when om;
     * ready is NULL when the server is ready, else why not. */
    void (*render)(void *arg, bool om, struct stats_buf *out);
    const char *(*ready)(void *arg);
    void *arg;
};

/* What the server asks of an open front-end fe.  Every member may be NULL. */
struct frontend_ops {
    /* The service its plain (tls false) or TLS connections speak: a
     * front-end over the connection layer. */
    const struct conn_service *(*service)(void *fe, bool tls);
    /* Serve on l, bound and disabled, which it owns from now (even on
     * failure): a front-end with a transport of its own.  0, or -1 after
     * logging. */
    int (*add_listener)(void *fe, struct evconnlistener *l, bool tls);
    /* Bind a itself, on a transport that is not a TCP listener of the
     * server's (ZeroMQ); the address it bound (port 0 becomes a port) into
     * bound[0..LISTEN_BOUND_MAX).  0, or -1 after logging. */
    int (*bind)(void *fe, const struct listen_addr *a, char *bound);
    /* The command log has been read back (or there is none), and what is
     * logged from now on is written: settle what replay left. */
    void (*replayed)(void *fe);
    /* The command log released its records up to lsn (cmdlog_released):
     * what a front-end held back for them may go. */
    void (*released)(void *fe, uint64_t lsn);
    /* Start accepting on the listeners it took. */
    void (*accept)(void *fe);
    /* SIGHUP: read again what may have changed (a password file). */
    void (*reload)(void *fe);
    /* Bytes it holds for its peers outside the connection layer (on a
     * transport of its own: messages not yet sent), which -max-memory
     * counts with the connections' buffers. */
    uint64_t (*buffered)(void *fe);
    /* Append its own series to a scrape. */
    void (*stats)(void *fe, struct stats_out *o);
    /* Free it; its connections are gone. */
    void (*close)(void *fe);
};

#endif /* WQ_FRONTEND_H */
