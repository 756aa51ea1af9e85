/* conn.c - client connections over bufferevents. */
#include "wq.h"
#include "conn.h"

#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "cmd.h"
#include "cmdlog.h"
#include "core.h"
#include "log.h"
#include "pool.h"
#include "options.h"
#include "payload.h"
#include "proto.h"
#include "server.h"
#include "util.h"

/* Output back-pressure: stop taking commands above HIGH buffered reply
 * bytes, take them again below LOW. */
#define CONN_OUT_HIGH (4u << 20)
#define CONN_OUT_LOW  (256u << 10)
/* Input read ahead beyond the largest request (a line and a data block):
 * while a command is parked, or replies are throttled, a client's input
 * stops being read past this, so EOF is seen unless it pipelines that much
 * behind a parked command.  Fixed, so parking costs no epoll_ctl. */
#define CONN_READ_SLACK (256u << 10)
/* After an error that ends a connection, how long the peer's input is still
 * read and dropped so that the error reply is not lost to a TCP reset. */
#define CONN_LINGER_MS 2000

/* How a connection is ending. */
enum conn_end {
    CONN_OPEN,
    CONN_FLUSH,  /* the peer left, or the server stops: write what is due, close */
    CONN_LINGER, /* our error ended it: write, shut down writing, drain the peer */
};

struct conn {
    struct bufferevent *bev;
    struct server      *srv;
    struct proto        proto;
    struct waiter      *waiter; /* the parked command's, or NULL */
    struct event       *wake_ev;
    struct conn        *prev, *next;
    struct evbuffer    *held;      /* replies waiting for the log */
    uint64_t            hold_lsn;  /* ... until it releases this record */
    uint64_t            mark;      /* records appended when the last command began */
    struct conn        *held_prev, *held_next;
    bool                in_held;   /* linked in srv->held */
    size_t              need; /* input bytes needed before parsing again */
    uint64_t            active_ms; /* last input, or the end of the last wait */
    enum conn_end       closing;
    bool                throttled;
};

static void conn_process(struct conn *c);
static void conn_flushed(struct conn *c);

size_t
conn_size(void)
{
    return sizeof(struct conn);
}

struct conn *
conn_next(const struct conn *c)
{
    return c->next;
}

/* Bytes of reply not yet sent, held ones included. */
static size_t
conn_pending(const struct conn *c)
{
    size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
    return c->held != NULL ? n + evbuffer_get_length(c->held) : n;
}

static void
conn_held_unlink(struct conn *c)
{
    struct server *srv = c->srv;
    if (!c->in_held)
        return;
    if (c->held_prev != NULL)
        c->held_prev->held_next = c->held_next;
    else
        srv->held = c->held_next;
    if (c->held_next != NULL)
        c->held_next->held_prev = c->held_prev;
    c->held_prev = c->held_next = NULL;
    c->in_held = false;
}

/* Where a reply goes now: the socket's output, or, while the command log
 * has records it has not released (not yet written; under always, not yet
 * on disk), the held buffer (and every later reply too, to keep them in
 * order). */
static struct evbuffer *
conn_out(struct conn *c)
{
    struct server *srv = c->srv;
    if (srv->log == NULL || (!c->in_held && !cmdlog_holds_replies(srv->log, c->mark)))
        return bufferevent_get_output(c->bev);
    if (c->held == NULL)
        c->held = evbuffer_new();
    c->hold_lsn = cmdlog_appended(srv->log);
    if (!c->in_held) {
        c->held_next = srv->held;
        if (c->held_next != NULL)
            c->held_next->held_prev = c;
        c->held_prev = NULL;
        srv->held = c;
        c->in_held = true;
    }
    return c->held;
}

/* Write what the output holds straight to the socket, and ask libevent to
 * watch for writability only if the socket did not take it all.  Watching
 * only then saves two epoll_ctl calls per request: with the write event
 * always enabled, every reply would arm it and every drain disarm it. */
static void
conn_flush(struct conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) == 0 || (bufferevent_get_enabled(c->bev) & EV_WRITE))
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
conn_release_held(struct server *srv, uint64_t released)
{
    struct conn *c = srv->held;
    while (c != NULL) {
        struct conn *next = c->held_next;
        if (c->hold_lsn <= released) {
            evbuffer_add_buffer(bufferevent_get_output(c->bev), c->held);
            conn_held_unlink(c);
            conn_flush(c);
            if (c->closing != CONN_OPEN && conn_pending(c) == 0)
                conn_flushed(c); /* may free c; next is already saved */
        }
        c = next;
    }
}

void
conn_reply(struct conn *c, const void *data, size_t len)
{
    if (len > 0)
        evbuffer_add(conn_out(c), data, len);
}

void
conn_reply_payload(struct conn *c, char *p, size_t len)
{
    if (!payload_shared(len)) {
        conn_reply(c, p, len);
        return;
    }
    payload_ref(p);
    if (evbuffer_add_reference(conn_out(c), p, len, payload_release, NULL) != 0)
        wq_panic(__FILE__, __LINE__, "evbuffer_add_reference failed");
}

void
conn_client_error(struct conn *c, const char *msg)
{
    struct evbuffer *out = conn_out(c);
    evbuffer_add(out, "-CLIENT-ERROR ", 14);
    evbuffer_add(out, msg, strlen(msg));
    evbuffer_add(out, "\r\n", 2);
}

void
conn_park(struct conn *c, struct waiter *w)
{
    c->waiter = w; /* reading goes on, to notice a peer that leaves */
}

void
conn_wake(struct conn *c)
{
    c->waiter = NULL;
    c->active_ms = c->srv->ctx.now_ms; /* idle from the reply on, not the command */
    event_active(c->wake_ev, EV_READ, 0); /* EV_TIMEOUT means the linger ended */
}

void
conn_free(struct conn *c)
{
    if (c == NULL)
        return;
    struct server *srv = c->srv;
    if (c->waiter != NULL)
        core_cancel(srv->ctx.core, c->waiter);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    srv->ctx.clients--;
    conn_held_unlink(c);
    if (c->held != NULL)
        evbuffer_free(c->held);
    proto_clear(&c->proto);
    bufferevent_free(c->bev);
    event_free(c->wake_ev);
    pool_put(&srv->conn_pool, c);
    server_conn_gone(srv);
}

/* Everything due has been written: close, or start lingering. */
static void
conn_flushed(struct conn *c)
{
    if (c->closing != CONN_LINGER) {
        conn_free(c);
        return;
    }
    shutdown(bufferevent_getfd(c->bev), SHUT_WR);
    struct timeval tv = {CONN_LINGER_MS / 1000, (CONN_LINGER_MS % 1000) * 1000};
    event_add(c->wake_ev, &tv); /* the latest it may take the peer to close */
}

void
conn_close_soon(struct conn *c, bool linger)
{
    if (c->closing != CONN_OPEN)
        return;
    c->closing = linger ? CONN_LINGER : CONN_FLUSH;
    if (c->waiter != NULL) {
        core_cancel(c->srv->ctx.core, c->waiter);
        c->waiter = NULL;
    }
    if (linger) {
        /* Keep reading (and dropping) so unread input cannot cause a reset. */
        bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
        bufferevent_enable(c->bev, EV_READ);
    } else {
        bufferevent_disable(c->bev, EV_READ);
    }
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    conn_flush(c);
    if (conn_pending(c) == 0)
        conn_flushed(c);
}

/* Run the complete commands in the input, in order, until one parks, the
 * input runs out, or the client falls too far behind reading replies. */
static void
conn_process(struct conn *c)
{
    struct server *srv = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    bool fatal = false;

    server_begin_batch(srv);
    while (c->waiter == NULL && !fatal) {
        if (conn_pending(c) > CONN_OUT_HIGH) {
            c->throttled = true;
            bufferevent_disable(c->bev, EV_READ);
            break;
        }
        size_t len = evbuffer_get_length(in);
        if (len == 0 || len < c->need)
            break;
        size_t want = WQ_MIN(len, WQ_MAX(c->need, srv->opts->max_line + 2));
        const char *buf = (const char *)evbuffer_pullup(in, (ssize_t)want);

        struct request req;
        const char *err = NULL;
        size_t consumed, need;
        if (srv->log != NULL)
            c->mark = cmdlog_appended(srv->log);
        enum proto_result res = proto_parse(&c->proto, buf, want, &req, &err, &consumed, &need);
        switch (res) {
        case PROTO_REQUEST:
            cmd_dispatch(&srv->ctx, c, &req);
            break;
        case PROTO_ERROR:
            conn_client_error(c, err);
            break;
        case PROTO_FATAL:
            conn_client_error(c, err);
            fatal = true;
            break;
        case PROTO_NEED:
            break;
        }
        evbuffer_drain(in, consumed);
        c->need = res == PROTO_NEED ? need : 0;
        /* Input left beyond what was pulled up: go round with more. */
        if (res == PROTO_NEED && (want == len || need > len - consumed))
            break;
    }
    conn_flush(c);
    server_update_timer(srv);
    if (fatal)
        conn_close_soon(c, true);
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->closing != CONN_OPEN)
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
    else if (c->waiter == NULL)
        conn_process(c); /* sets the batch time used just below */
    c->active_ms = c->srv->ctx.now_ms;
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_disable(bev, EV_WRITE); /* conn_flush writes from now on */
    if (c->closing != CONN_OPEN) {
        if (conn_pending(c) == 0)
            conn_flushed(c);
        return;
    }
    if (c->throttled && conn_pending(c) <= CONN_OUT_LOW) {
        c->throttled = false;
        bufferevent_enable(bev, EV_READ);
        conn_process(c);
    }
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    struct server *srv = c->srv;
    if ((what & BEV_EVENT_EOF) && c->closing == CONN_OPEN) {
        /* The peer is done sending: cancel what waits (before any timer
         * could hand it a job), write what was already answered, close. */
        conn_close_soon(c, false);
    } else {
        conn_free(c); /* an error, or the end of a linger */
    }
    server_update_timer(srv);
}

static void
conn_wake_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    if (c->closing == CONN_LINGER && (what & EV_TIMEOUT))
        conn_free(c); /* the peer took too long to close */
    else if (c->closing == CONN_OPEN && c->waiter == NULL)
        conn_process(c);
}

void
conn_close_idle(struct server *srv, uint64_t before_ms)
{
    struct conn *c = srv->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        /* Waiting clients (parked leases, runs, results, replies held for
         * the log) are never idle, nor are clients still reading replies
         * (their input waits while the output is throttled). */
        if (c->active_ms < before_ms && c->closing == CONN_OPEN && c->waiter == NULL &&
            !c->in_held && !c->throttled && conn_pending(c) == 0) {
            wq_log(LOG_LVL_DEBUG, "closing idle connection fd=%d",
                   (int)bufferevent_getfd(c->bev));
            conn_close_soon(c, false); /* may free c, never another one */
        }
        c = next;
    }
}

struct conn *
conn_new(struct server *srv, int fd)
{
    struct conn *c = pool_get(&srv->conn_pool);
    memset(c, 0, sizeof *c);
    c->srv = srv;
    c->active_ms = util_now_ms();
    c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL)
        wq_panic(__FILE__, __LINE__, "bufferevent_socket_new failed");
    c->wake_ev = event_new(srv->base, -1, 0, conn_wake_cb, c);
    proto_init(&c->proto, cmd_lookup, srv->opts->max_line, srv->opts->max_payload);
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, CONN_OUT_LOW, 0);
    bufferevent_setwatermark(c->bev, EV_READ, 0,
                             srv->opts->max_line + srv->opts->max_payload + CONN_READ_SLACK);
    bufferevent_disable(c->bev, EV_WRITE); /* on by default; see conn_flush */
    bufferevent_enable(c->bev, EV_READ);
    c->next = srv->conns;
    if (c->next != NULL)
        c->next->prev = c;
    srv->conns = c;
    srv->ctx.clients++;
    return c;
}
