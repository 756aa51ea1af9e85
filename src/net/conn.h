/* conn.h - client connections, whatever protocol they speak: buffers,
 * ordering, parking, replies held for the command log, back-pressure,
 * idle and closing.  A listener hands each accepted socket to conn_new with
 * a conn_service: the protocol module (a table of callbacks) and its
 * settings.  The module parses and answers through the connection's reply
 * interface (reply.h); it never sees libevent, and adding a protocol needs
 * no change here.  The connection layer owns its set of connections. */
#ifndef WQ_CONN_H
#define WQ_CONN_H

#include "lib/wq.h"
#include "net/reply.h"

struct bufferevent;
struct cmdlog;
struct conn;
struct conn_set;
struct event_base;

/* A protocol module.  ctx is the service's (conn_service.ctx); state is
 * the connection's own state_size bytes, zeroed before open. */
struct conn_proto {
    const char *name;
    size_t state_size;
    /* A client connected: set up state; it may greet through out. */
    void (*open)(void *ctx, void *state, struct reply *out);
    /* Handle the first request in in[0..len), answering through out.
     * Returns the bytes it used; 0 when it needs more input, with *need
     * set to the bytes it must see at once (0: any more).  It may park
     * (reply_park: no more calls until reply_wake) or close (reply_close:
     * no more calls). */
    size_t (*handle)(void *ctx, void *state, struct reply *out, const char *in, size_t len,
                     size_t *need);
    /* The client left while a command waited: withdraw it (what it gave
     * reply_park). */
    void (*cancel)(void *ctx, void *waiting);
    /* The connection is gone: free what state holds. */
    void (*close)(void *ctx, void *state);
    /* May the server close this connection when it is idle?  NULL: yes. */
    bool (*may_idle_close)(void *ctx, void *state);
};

/* A transport: wraps an accepted socket in a bufferevent (TLS: tls.h);
 * NULL if it cannot (the socket is then closed).  NULL in a service means
 * plain TCP, which the layer writes to directly. */
typedef struct bufferevent *(*conn_transport_fn)(struct event_base *base, int fd, void *arg);

/* A protocol as one listener serves it. */
struct conn_service {
    const struct conn_proto *proto;
    void *ctx;          /* given to every callback */
    size_t pull_min;    /* bytes handle sees in one piece when buffered (a line) */
    size_t max_request; /* the largest request: input is read this far ahead
                           of what is handled (and a fixed slack) */
    conn_transport_fn transport;
    void *transport_arg;
    /* The transport's connection failed (a TLS handshake, say): log why.
     * NULL: say nothing. */
    void (*transport_failed)(struct bufferevent *bev, const char *peer);
};

/* What the server does around the connections' work. */
struct conn_hooks {
    void *arg;
    /* A batch of requests starts: read the clock, run what is due.
     * Returns the time (Unix ms) the connections count idleness by. */
    uint64_t (*begin)(void *arg);
    /* The batch ended: re-arm timers. */
    void (*end)(void *arg);
    /* A connection was freed. */
    void (*gone)(void *arg);
};

/* A new set of connections on base (aborts if memory is exhausted);
 * state_max is the largest state_size of the services it will serve. */
struct conn_set *conn_set_new(struct event_base *base, const struct conn_hooks *hooks,
                              size_t state_max);
/* Close every connection at once and free the set. */
void conn_set_free(struct conn_set *s);
/* Hold replies until log releases the records made before them
 * (cmdlog_holds_replies); NULL: never. */
void conn_set_cmdlog(struct conn_set *s, struct cmdlog *log);
/* Open connections. */
size_t conn_count(const struct conn_set *s);
/* Bytes the connections hold for their clients: input not yet handled,
 * replies not yet sent (held ones too), as of their last activity. */
uint64_t conn_buffered(const struct conn_set *s);

/* Take over accepted socket fd for service svc (which must outlive it);
 * NULL if its transport could not take it (fd is closed). */
struct conn *conn_new(struct conn_set *s, const struct conn_service *svc, int fd);
/* The connection's reply interface (as handle gets it). */
struct reply *conn_reply(struct conn *c);

/* Every connection: take no more commands, cancel waiting ones, write the
 * replies already due, then close. */
void conn_close_all(struct conn_set *s);
/* Send the held replies of every connection whose last held reply waited
 * for a record at or below released (cmdlog_released). */
void conn_release_held(struct conn_set *s, uint64_t released);
/* The idle sweep, now_ms being the time (Unix ms): close (writing what is
 * due) every connection that has had no reply made since before before_ms
 * and is not waiting for something (a client that trickles in a request
 * it never finishes is idle too); close at once every connection whose
 * client has taken none of its unsent replies since before before_ms. */
void conn_close_idle(struct conn_set *s, uint64_t now_ms, uint64_t before_ms);

#endif /* WQ_CONN_H */
