/* conn.c - client connections over bufferevents, for any protocol module;
 * the set of them, replies held for the command log, closing. */
#include "lib/wq.h"
#include "net/conn.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "lib/alloc.h"
#include "store/cmdlog.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/payload.h"
#include "lib/pool.h"
#include "lib/util.h"

/* Output back-pressure: stop taking commands above HIGH buffered reply
 * bytes, take them again below LOW. */
#define CONN_OUT_HIGH (4u << 20)
#define CONN_OUT_LOW  (256u << 10)
/* Input read ahead beyond the largest request: while a command is parked,
 * or replies are throttled, a client's input stops being read past this,
 * so EOF is seen unless it pipelines that much behind a parked command.
 * Fixed, so parking costs no epoll_ctl. */
#define CONN_READ_SLACK (256u << 10)
/* After an error that ends a connection, how long the peer's input is still
 * read and dropped so that the error reply is not lost to a TCP reset. */
#define CONN_LINGER_MS 2000
/* A transport's handshake (TLS) must be done within this, whatever
 * -idle-timeout says: a plain-text client that waits for a greeting on a
 * TLS port would otherwise wait for ever, and so would the server. */
#define CONN_HANDSHAKE_MS 10000
/* Requests one connection handles in a row, or reply bytes it makes, before
 * the others' turn (a client pipelining 50 costly inspects would hold the
 * loop 50 times). */
#define CONN_TURN_MAX   16
#define CONN_TURN_BYTES (64u << 10)
/* Plain TCP is read this much at a time at most (as libevent reads). */
#define CONN_READ_CHUNK 4096
/* Connection records are cut from blocks of this many. */
#define CONN_POOL_BLOCK 64

enum conn_state {
    CONN_READY,     /* taking requests */
    CONN_PARKED,    /* a command waits (c->waiting) */
    CONN_THROTTLED, /* the client reads replies too slowly: its input waits */
    CONN_PAUSED,    /* the protocol answers later (reply_pause): input and replies wait */
    CONN_FLUSH,     /* the peer left, or the server stops: write what is due, close */
    CONN_LINGER,    /* the protocol closes: write, shut down writing, drain the peer */
};

struct conn_set {
    struct event_base *base;
    struct conn_hooks hooks;
    struct pool pool;
    size_t state_off; /* where a record's protocol state starts */
    struct list all;  /* every open connection */
    struct list held; /* those with replies held for the log */
    size_t count;
    struct cmdlog *cmdlog;
    uint64_t now_ms;   /* the time of the last batch (hooks.begin) */
    uint64_t buffered; /* the connections' counted bytes, summed */
};

struct conn {
    struct list node;      /* in set->all */
    struct list held_node; /* in set->held while replies are held */
    struct conn_set *set;
    const struct conn_service *svc;
    struct bufferevent *bev;
    struct event *read_ev; /* direct: the socket read by conn_sock_read_cb */
    struct event *wake_ev;
    struct reply reply;
    enum conn_state state;
    bool direct;            /* plain TCP: read and written straight from the loop */
    bool reading;           /* its input is read (up to read_max) */
    bool handshaken;        /* a transport's handshake is done */
    bool after_reference;   /* the output ends with a payload by reference */
    bool throttle_logged;   /* its first throttle has been logged */
    bool close_after_pause; /* the protocol closes it once its pause ends */
    void *waiting;          /* CONN_PARKED: what the protocol parked */
    struct evbuffer *held;  /* replies waiting for the log */
    struct evbuffer *later; /* CONN_PAUSED: replies made during the pause */
    uint64_t hold_lsn;      /* ... until it releases this record */
    uint64_t mark;          /* records appended when the last request began */
    size_t need;            /* input bytes needed before handling again */
    size_t read_max;        /* input read ahead at most (0: no bound) */
    uint64_t active_ms;     /* the last reply made, or the end of the last wait */
    uint64_t counted;       /* input, unsent and held replies, at the last conn_recount */
    uint64_t queued;        /* reply bytes made, ever */
    uint64_t sent_mark;     /* of which sent, at the last idle sweep */
    uint64_t out_ms;        /* when some were last sent (or none waited) */
    char peer[64];          /* the client's address, HOST:PORT */
};

static void conn_process(struct conn *c);
static void conn_flushed(struct conn *c);
static void conn_close_soon(struct conn *c, bool linger);
static void conn_free(struct conn *c);

static void *
conn_state_of(struct conn *c)
{
    return (char *)c + c->set->state_off;
}

struct conn_set *
conn_set_new(struct event_base *base, const struct conn_hooks *hooks, size_t state_max)
{
    struct conn_set *s = wq_calloc(1, sizeof *s);
    s->base = base;
    s->hooks = *hooks;
    s->state_off = (sizeof(struct conn) + 15) & ~(size_t)15; /* room for any state */
    pool_init(&s->pool, s->state_off + state_max, CONN_POOL_BLOCK);
    list_init(&s->all);
    list_init(&s->held);
    return s;
}

void
conn_set_free(struct conn_set *s)
{
    if (s == NULL)
        return;
    s->hooks.gone = NULL; /* freeing everything is not a stop that waits */
    while (!list_empty(&s->all))
        conn_free(list_item(s->all.next, struct conn, node));
    pool_clear(&s->pool);
    wq_free(s);
}

void
conn_set_cmdlog(struct conn_set *s, struct cmdlog *log)
{
    s->cmdlog = log;
}

size_t
conn_count(const struct conn_set *s)
{
    return s->count;
}

/* Bytes of reply in the output of every bufferevent down to the socket:
 * what the client has not read yet (held replies are not there). */
static size_t
conn_unread(const struct conn *c)
{
    size_t n = 0;
    for (struct bufferevent *b = c->bev; b != NULL; b = bufferevent_get_underlying(b))
        n += evbuffer_get_length(bufferevent_get_output(b));
    return n;
}

/* Bytes of reply not yet sent: held ones, and the unread ones. */
static size_t
conn_pending(const struct conn *c)
{
    return (c->held != NULL ? evbuffer_get_length(c->held) : 0) + conn_unread(c);
}

/* Bring c's share of the set's buffered bytes up to date: its input not
 * yet handled (at least what the protocol said it needs: a data block it
 * has agreed to buffer counts whole from the start), and its replies not
 * yet sent (held for the log or a pause too). */
static void
conn_recount(struct conn *c)
{
    uint64_t n = WQ_MAX(evbuffer_get_length(bufferevent_get_input(c->bev)), c->need) +
                 conn_pending(c) + (c->later != NULL ? evbuffer_get_length(c->later) : 0);
    c->set->buffered += n - c->counted;
    c->counted = n;
}

uint64_t
conn_buffered(const struct conn_set *s)
{
    return s->buffered;
}

/* Where a reply goes now: the output, or, while the command log has
 * records it has not released (not yet written; under always, not yet on
 * disk), the held buffer (and every later reply too, to keep them in
 * order). */
static struct evbuffer *
conn_out(struct conn *c)
{
    struct conn_set *s = c->set;
    if (c->state == CONN_PAUSED) {
        if (c->later == NULL)
            c->later = evbuffer_new();
        return c->later;
    }
    if (s->cmdlog == NULL ||
        (!list_linked(&c->held_node) && !cmdlog_holds_replies(s->cmdlog, c->mark)))
        return bufferevent_get_output(c->bev);
    if (c->held == NULL)
        c->held = evbuffer_new();
    c->hold_lsn = cmdlog_appended(s->cmdlog);
    if (!list_linked(&c->held_node))
        list_push_back(&s->held, &c->held_node);
    return c->held;
}

/* ---- reading ---- */

/* Plain TCP is read by conn_sock_read_cb: libevent's own read asks the
 * socket with ioctl(FIONREAD) how much it holds before every read, one
 * system call more per request.  A transport's bufferevent reads by
 * itself.  Either way, input is read while c->reading and the input holds
 * less than c->read_max. */

/* Watch the socket for input or not, as c->reading and c->read_max say. */
static void
conn_read_arm(struct conn *c)
{
    if (!c->direct)
        return;
    size_t len = evbuffer_get_length(bufferevent_get_input(c->bev));
    if (c->reading && (c->read_max == 0 || len < c->read_max))
        event_add(c->read_ev, NULL);
    else
        event_del(c->read_ev);
}

/* Read c's input, or stop reading it. */
static void
conn_read_enable(struct conn *c, bool on)
{
    c->reading = on;
    if (c->direct)
        conn_read_arm(c);
    else if (on)
        bufferevent_enable(c->bev, EV_READ);
    else
        bufferevent_disable(c->bev, EV_READ);
}

/* Read ahead at most max bytes of input (0: no bound). */
static void
conn_read_limit(struct conn *c, size_t max)
{
    c->read_max = max;
    if (c->direct)
        conn_read_arm(c);
    else
        bufferevent_setwatermark(c->bev, EV_READ, 0, max);
}

/* Write what the output holds.  Plain TCP is written to straight away,
 * and libevent is asked to watch for writability only if the socket did
 * not take it all: with the write event always on, every reply would cost
 * two epoll_ctl calls.  A transport's bufferevent keeps its write event
 * on and writes by itself (a filter only sends what arrives while it is
 * on). */
static void
conn_flush(struct conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (!c->direct || evbuffer_get_length(out) == 0 || (bufferevent_get_enabled(c->bev) & EV_WRITE))
        return;
    /* The bufferevent keeps the front of its output frozen so that only it
     * drains it; thaw it for this write as its own write callback does.  An
     * error is left to libevent's own write, which reports it. */
    evbuffer_unfreeze(out, 1);
    evbuffer_write(out, bufferevent_getfd(c->bev));
    evbuffer_freeze(out, 1);
    if (evbuffer_get_length(out) > 0)
        bufferevent_enable(c->bev, EV_WRITE);
}

void
conn_release_held(struct conn_set *s, uint64_t released)
{
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->held)
    {
        struct conn *c = list_item(n, struct conn, held_node);
        if (c->hold_lsn > released)
            continue;
        evbuffer_add_buffer(bufferevent_get_output(c->bev), c->held);
        list_unlink(&c->held_node);
        conn_flush(c);
        conn_recount(c);
        if (c->state >= CONN_FLUSH && conn_pending(c) == 0)
            conn_flushed(c); /* may free c, never another */
    }
}

/* ---- the reply interface ---- */

/* A reply is progress: a client's idleness counts from its last answer,
 * so one that trickles in a request it never finishes is idle too. */
static void
conn_reply_bytes(void *to, const void *data, size_t len)
{
    struct conn *c = to;
    c->active_ms = WQ_MAX(c->active_ms, c->set->now_ms); /* now_ms: the batch's, if older */
    c->queued += len;
    if (len == 0)
        return;
    if (!c->after_reference) {
        evbuffer_add(conn_out(c), data, len);
        return;
    }
    /* evbuffer_add after a reference would allocate a chain as large as
     * the reference (1 MiB after a 1 MiB payload), counted by the allocator
     * though never touched: reserve a chain of this size instead. */
    struct evbuffer *out = conn_out(c);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)len, &v, 1) != 1)
        wq_panic(__FILE__, __LINE__, "evbuffer_reserve_space failed");
    memcpy(v.iov_base, data, len);
    v.iov_len = len;
    evbuffer_commit_space(out, &v, 1);
    c->after_reference = false;
}

static void
conn_reply_payload(void *to, char *p, size_t len)
{
    if (!payload_shared(len)) {
        conn_reply_bytes(to, p, len);
        return;
    }
    struct conn *c = to;
    c->active_ms = WQ_MAX(c->active_ms, c->set->now_ms);
    c->queued += len;
    payload_ref(p);
    if (evbuffer_add_reference(conn_out(c), p, len, payload_release, NULL) != 0)
        wq_panic(__FILE__, __LINE__, "evbuffer_add_reference failed");
    c->after_reference = true;
}

static void
conn_reply_park(void *to, void *waiting)
{
    struct conn *c = to;
    c->state = CONN_PARKED;
    c->waiting = waiting; /* reading goes on, to notice a peer that leaves */
}

static void
conn_reply_wake(void *to)
{
    struct conn *c = to;
    if (c->state == CONN_PARKED)
        c->state = CONN_READY;
    c->waiting = NULL;
    c->active_ms = util_now_ms();         /* idle from the reply on, not the command */
    event_active(c->wake_ev, EV_READ, 0); /* EV_TIMEOUT means the linger ended */
}

/* The protocol closes the connection; a paused one first waits out its
 * pause and sends what it answered meanwhile (a refused password must not
 * show sooner as a close). */
static void
conn_reply_close(void *to)
{
    struct conn *c = to;
    if (c->state == CONN_PAUSED)
        c->close_after_pause = true;
    else
        conn_close_soon(c, true);
}

static const char *
conn_reply_peer(void *to)
{
    return ((struct conn *)to)->peer;
}

static void
conn_reply_pause(void *to, uint64_t ms)
{
    struct conn *c = to;
    c->state = CONN_PAUSED;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    /* a wake still active from a reply would run, delete the event and
     * lose this timer: it is done with now */
    event_del(c->wake_ev);
    event_add(c->wake_ev, &tv);
}

static const struct reply_ops conn_reply_ops = {
    conn_reply_bytes, conn_reply_payload, conn_reply_park,  conn_reply_wake,
    conn_reply_close, conn_reply_peer,    conn_reply_pause,
};

/* "HOST:PORT" of the socket's peer into out ("" if it has none). */
static void
conn_peer_text(int fd, char *out, size_t cap)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN], port[8];
    out[0] = '\0';
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 ||
        getnameinfo((struct sockaddr *)&sa, len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return;
    snprintf(out, cap, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

struct reply *
conn_reply(struct conn *c)
{
    return &c->reply;
}

/* ---- closing ---- */

/* Withdraw a parked command: its client will not be answered. */
static void
conn_cancel(struct conn *c)
{
    if (c->waiting != NULL)
        c->svc->proto->cancel(c->svc->ctx, c->waiting);
    c->waiting = NULL;
    if (c->state == CONN_PARKED)
        c->state = CONN_READY;
}

static void
conn_free(struct conn *c)
{
    struct conn_set *s = c->set;
    conn_cancel(c);
    c->svc->proto->close(c->svc->ctx, conn_state_of(c));
    list_unlink(&c->node);
    if (list_linked(&c->held_node))
        list_unlink(&c->held_node);
    if (c->held != NULL)
        evbuffer_free(c->held);
    if (c->later != NULL)
        evbuffer_free(c->later);
    s->buffered -= c->counted;
    if (c->read_ev != NULL)
        event_free(c->read_ev);
    bufferevent_free(c->bev);
    event_free(c->wake_ev);
    pool_put(&s->pool, c);
    s->count--;
    if (s->hooks.gone != NULL)
        s->hooks.gone(s->hooks.arg);
}

/* Everything due has been written: close, or start lingering. */
static void
conn_flushed(struct conn *c)
{
    if (c->state != CONN_LINGER) {
        conn_free(c);
        return;
    }
    shutdown(bufferevent_getfd(c->bev), SHUT_WR);
    struct timeval tv = {CONN_LINGER_MS / 1000, (CONN_LINGER_MS % 1000) * 1000};
    event_add(c->wake_ev, &tv); /* the latest it may take the peer to close */
}

/* Take no more commands: cancel a parked one, write the replies already
 * due, then close.  With linger (the protocol closes, after an error),
 * also drain the peer's input for a while so that the last reply is not
 * lost to a reset.  Without linger it may free c at once. */
static void
conn_close_soon(struct conn *c, bool linger)
{
    if (c->state >= CONN_FLUSH)
        return;
    conn_cancel(c);
    c->state = linger ? CONN_LINGER : CONN_FLUSH;
    if (linger) {
        /* Keep reading (and dropping) so unread input cannot cause a reset. */
        conn_read_limit(c, 0);
        conn_read_enable(c, true);
    } else {
        conn_read_enable(c, false);
    }
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    conn_flush(c);
    if (conn_pending(c) == 0)
        conn_flushed(c);
}

void
conn_close_all(struct conn_set *s)
{
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->all)
    {
        conn_close_soon(list_item(n, struct conn, node), false); /* may free it, no other */
    }
}

/* Has c's client taken none of its unsent output since before before_ms?
 * Called by each idle sweep: bytes sent since the last sweep, or nothing
 * waiting to be sent, are progress. */
static bool
conn_output_stalled(struct conn *c, uint64_t now_ms, uint64_t before_ms)
{
    size_t pending = conn_pending(c);
    uint64_t unsent = pending + (c->later ? evbuffer_get_length(c->later) : 0);
    uint64_t sent = c->queued - unsent;
    if (pending == 0 || sent > c->sent_mark)
        c->out_ms = now_ms;
    c->sent_mark = sent;
    return pending > 0 && c->out_ms < before_ms;
}

void
conn_close_idle(struct conn_set *s, uint64_t now_ms, uint64_t before_ms)
{
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->all)
    {
        struct conn *c = list_item(n, struct conn, node);
        const struct conn_proto *proto = c->svc->proto;
        /* Waiting clients (parked commands, replies held for the log, a
         * pause) are never idle; nor are those the protocol keeps.  Nor is
         * their output stalled while they wait: that counts from the end
         * of the wait, or the reply that ends it would find its
         * connection "reading nothing" if a sweep came before its write. */
        if (c->state == CONN_PARKED || c->state == CONN_PAUSED || c->state == CONN_LINGER ||
            list_linked(&c->held_node) ||
            (proto->may_idle_close != NULL &&
             !proto->may_idle_close(c->svc->ctx, conn_state_of(c)))) {
            c->out_ms = now_ms;
            continue;
        }
        if (conn_output_stalled(c, now_ms, before_ms)) {
            /* It does not read: what is due would never leave. */
            wq_log(LOG_LVL_INFO, "closing a connection that reads nothing peer=%s unsent=%zu",
                   c->peer, conn_pending(c));
            conn_free(c);
        } else if (c->state == CONN_READY && c->active_ms < before_ms && conn_pending(c) == 0) {
            wq_log(LOG_LVL_DEBUG, "closing idle connection peer=%s", c->peer);
            conn_close_soon(c, false); /* may free c, no other */
        }
    }
}

/* ---- input ---- */

/* Handle the complete requests in the input, in order, until one parks,
 * the input runs out, the connection closes, or the client falls too far
 * behind reading replies. */
static void
conn_process(struct conn *c)
{
    struct conn_set *s = c->set;
    const struct conn_service *svc = c->svc;
    struct evbuffer *in = bufferevent_get_input(c->bev);

    s->now_ms = s->hooks.begin(s->hooks.arg);
    uint64_t queued = c->queued;
    for (unsigned turns = 0; c->state == CONN_READY; turns++) {
        if (conn_unread(c) > CONN_OUT_HIGH) { /* held replies do not count */
            c->state = CONN_THROTTLED;
            conn_read_enable(c, false);
            if (!c->throttle_logged)
                wq_log(LOG_LVL_INFO,
                       "not reading a connection's requests until it reads its replies peer=%s "
                       "unread=%zu",
                       c->peer, conn_unread(c));
            c->throttle_logged = true;
            break;
        }
        size_t len = evbuffer_get_length(in);
        if (len == 0 || len < c->need)
            break;
        if (turns == CONN_TURN_MAX || c->queued - queued >= CONN_TURN_BYTES) {
            /* The others' turn: this one goes on in the next loop pass,
             * after the sockets that are ready by then (a timer of 0:
             * an active event would run in this pass, before them). */
            static const struct timeval now = {0, 0};
            event_add(c->wake_ev, &now);
            break;
        }
        size_t want = WQ_MIN(len, WQ_MAX(c->need, svc->pull_min));
        const char *buf = (const char *)evbuffer_pullup(in, (ssize_t)want);
        if (s->cmdlog != NULL)
            c->mark = cmdlog_appended(s->cmdlog);
        size_t need = 0;
        size_t used = svc->proto->handle(svc->ctx, conn_state_of(c), &c->reply, buf, want, &need);
        evbuffer_drain(in, used);
        c->need = need;
        /* Input left beyond what was pulled up: go round with more. */
        if (need > 0 && (want == len || need > len - used))
            break;
    }
    conn_flush(c);
    conn_recount(c);
    conn_read_arm(c); /* input drained below read_max: read again */
    s->hooks.end(s->hooks.arg);
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->state == CONN_READY) {
        conn_process(c);
        return;
    }
    if (c->state >= CONN_FLUSH)
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
    conn_recount(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->direct && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_disable(bev, EV_WRITE); /* conn_flush writes from now on */
    conn_recount(c);
    if (c->state >= CONN_FLUSH) {
        if (conn_pending(c) == 0)
            conn_flushed(c);
        return;
    }
    if (c->state == CONN_THROTTLED && conn_unread(c) <= CONN_OUT_LOW) {
        c->state = CONN_READY;
        conn_read_enable(c, true);
        conn_process(c);
    }
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    struct conn_set *s = c->set;
    if (what == BEV_EVENT_CONNECTED) { /* a transport's handshake is done */
        c->handshaken = true;
        bufferevent_set_timeouts(bev, NULL, NULL);
        return;
    }
    if ((what & BEV_EVENT_TIMEOUT) && !c->handshaken)
        wq_log(LOG_LVL_INFO,
               "TLS connection failed peer=%s error=\"no handshake within %d s: a plain-text "
               "client?\"",
               c->peer, CONN_HANDSHAKE_MS / 1000);
    if ((what & BEV_EVENT_ERROR) && c->svc->transport_failed != NULL)
        c->svc->transport_failed(bev, c->peer);
    if ((what & BEV_EVENT_EOF) && c->state < CONN_FLUSH) {
        /* The peer is done sending: cancel what waits (before any timer
         * could hand it a job), write what was already answered, close. */
        conn_close_soon(c, false);
    } else {
        conn_free(c); /* an error, or the end of a linger */
    }
    s->hooks.end(s->hooks.arg);
}

/* Plain TCP's input: read what fits below read_max, then handle it as
 * a bufferevent's read callback would; the end of input or an error as
 * its event callback would. */
static void
conn_sock_read_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t len = evbuffer_get_length(in), want = CONN_READ_CHUNK;
    if (c->read_max != 0) {
        if (len >= c->read_max) {
            conn_read_arm(c);
            return;
        }
        want = WQ_MIN(want, c->read_max - len);
    }
    /* the bufferevent keeps the end of its input frozen so that only it
     * adds to it: thaw it for this read as its own read does */
    struct evbuffer_iovec v[2];
    struct iovec iov[2];
    evbuffer_unfreeze(in, 0);
    int n = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
    if (n <= 0)
        wq_panic(__FILE__, __LINE__, "evbuffer_reserve_space failed");
    size_t room = 0;
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = v[i].iov_base;
        iov[i].iov_len = WQ_MIN(v[i].iov_len, want - room);
        room += iov[i].iov_len;
    }
    ssize_t got = readv(fd, iov, n);
    if (got <= 0) {
        evbuffer_commit_space(in, v, 0);
        evbuffer_freeze(in, 0);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        c->reading = false;
        conn_read_arm(c);
        conn_event_cb(c->bev, BEV_EVENT_READING | (got == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
        return;
    }
    size_t left = (size_t)got;
    int used = 0;
    for (int i = 0; i < n && left > 0; i++, used++) {
        v[i].iov_len = WQ_MIN(iov[i].iov_len, left);
        left -= v[i].iov_len;
    }
    evbuffer_commit_space(in, v, used);
    evbuffer_freeze(in, 0);
    conn_read_cb(c->bev, c);
}

static void
conn_wake_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    if (what & EV_WRITE) { /* a transport's socket drained (conn_drained_cb) */
        if (c->state >= CONN_FLUSH && conn_pending(c) == 0)
            conn_flushed(c);
    } else if (c->state == CONN_LINGER && (what & EV_TIMEOUT)) {
        conn_free(c); /* the peer took too long to close */
    } else if (c->state == CONN_PAUSED && (what & EV_TIMEOUT)) {
        /* The pause is over: send what was answered meanwhile, go on. */
        c->state = CONN_READY;
        if (c->later != NULL)
            evbuffer_add_buffer(conn_out(c), c->later);
        c->active_ms = util_now_ms();
        if (c->close_after_pause)
            conn_close_soon(c, true); /* may free c */
        else
            conn_process(c);
    } else if (c->state == CONN_READY) {
        conn_process(c);
    }
}

/* A transport's bottom output lost bytes to the socket: a closing
 * connection may now be done (its top bufferevent does not call back for
 * this).  Not from inside libevent's write: through the wake event. */
static void
conn_drained_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *c = arg;
    if (info->n_deleted > 0 && c->state >= CONN_FLUSH && evbuffer_get_length(buf) == 0)
        event_active(c->wake_ev, EV_WRITE, 0);
}

struct conn *
conn_new(struct conn_set *s, const struct conn_service *svc, int fd)
{
    struct bufferevent *bev = svc->transport == NULL
                                  ? bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE)
                                  : svc->transport(s->base, fd, svc->transport_arg);
    if (bev == NULL && svc->transport != NULL) {
        wq_log(LOG_LVL_WARN, "cannot set up a connection's transport, closing it");
        evutil_closesocket(fd);
        return NULL;
    }
    if (bev == NULL)
        wq_panic(__FILE__, __LINE__, "cannot make a bufferevent for a connection");
    struct conn *c = pool_get(&s->pool);
    memset(c, 0, s->state_off + svc->proto->state_size);
    c->set = s;
    c->svc = svc;
    c->reply = (struct reply){&conn_reply_ops, c};
    c->active_ms = c->out_ms = util_now_ms();
    conn_peer_text(fd, c->peer, sizeof c->peer);
    c->direct = svc->transport == NULL;
    c->bev = bev;
    c->wake_ev = event_new(s->base, -1, 0, conn_wake_cb, c);
    if (c->direct &&
        (c->read_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, conn_sock_read_cb, c)) == NULL)
        wq_panic(__FILE__, __LINE__, "cannot make a connection's read event");
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    if (!c->direct) {
        /* read and write: the handshake may wait for either */
        struct timeval handshake = {CONN_HANDSHAKE_MS / 1000, 0};
        bufferevent_set_timeouts(c->bev, &handshake, &handshake);
        struct bufferevent *bottom = c->bev;
        while (bufferevent_get_underlying(bottom) != NULL)
            bottom = bufferevent_get_underlying(bottom);
        evbuffer_add_cb(bufferevent_get_output(bottom), conn_drained_cb, c);
    }
    bufferevent_setwatermark(c->bev, EV_WRITE, CONN_OUT_LOW, 0);
    conn_read_limit(c, svc->max_request + CONN_READ_SLACK);
    if (c->direct)
        bufferevent_disable(c->bev, EV_WRITE); /* on by default; see conn_flush */
    conn_read_enable(c, true);
    list_push_front(&s->all, &c->node);
    s->count++;
    if (s->cmdlog != NULL)
        c->mark = cmdlog_appended(s->cmdlog);
    svc->proto->open(svc->ctx, conn_state_of(c), &c->reply);
    conn_flush(c);
    return c;
}
