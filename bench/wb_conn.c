/* wb_conn.c - workq-bench's connections: the ring of requests each has in
 * flight and their accounting, the libevent callbacks that connect, read
 * and hand replies to the protocol (through bench.proto, wb_proto.h), and
 * the flushing of what the connections queued.  What follows a reply or a
 * failure is the phase's: the run's or the clean-up's hooks in
 * bench.driver.  Calls only files below it: wb_util.c, wb_hist.c,
 * wb_tls.c, wb_frame.c, wb_jobs.c. */
#include "wb.h"
#include "wb_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

/* Classes of requests, for the counters: producing requests bring a job
 * into being (Hero's HSET and the LPUSH after it both), lease requests draw
 * on the lease budget, and only measured requests take a pipeline slot and
 * count in latency and requests/s (all of a Hero job's seven). */
static bool
op_is_produce(enum wb_op op)
{
    return op == OP_ADD || op == OP_SCHEDULE || op == OP_RUN || op == OP_PUT || op == OP_PUSH ||
           op == OP_HSET || op == OP_LPUSH;
}

static bool
op_is_lease(enum wb_op op)
{
    return op == OP_LEASE || op == OP_RESERVE || op == OP_FETCH || op == OP_BLPOP;
}

static bool
op_is_measured(enum wb_op op)
{
    return op != OP_USE && op != OP_WATCH && op != OP_HI && op != OP_HELLO && op != OP_AUTH &&
           op != OP_CLEAN;
}

/* Queue bytes of a request; wb_conn_push marks the connection for flushing. */
void
wb_conn_send(struct wb_conn *c, const void *data, size_t len)
{
    evbuffer_add(c->out, data, len);
}

/* Write header + payload + CRLF (the header is already in b->scratch). */
void
wb_conn_write_block(struct wb_conn *c, int hlen, const char *id)
{
    struct bench *b = c->b;
    char *p = b->scratch + hlen;
    wb_payload_fill(p, b->opt.payload, id);
    memcpy(p + b->opt.payload, "\r\n", 2);
    wb_conn_send(c, b->scratch, (size_t)hlen + b->opt.payload + 2);
}

/* Record a request that was just queued on c: the ring holds what c
 * expects back, in order, with the time it was queued. */
void
wb_conn_push(struct wb_conn *c, enum wb_op op, uint32_t job)
{
    struct bench *b = c->b;
    if (c->count == c->cap) {
        /* Grow and unwrap the ring. */
        uint32_t ncap = c->cap == 0 ? 16 : c->cap * 2;
        struct wb_req *r = wb_xcalloc(ncap, sizeof *r);
        for (uint32_t i = 0; i < c->count; i++)
            r[i] = c->ring[(c->head + i) & (c->cap - 1)];
        free(c->ring);
        c->ring = r;
        c->cap = ncap;
        c->head = 0;
    }
    struct wb_req *r = &c->ring[(c->head + c->count) & (c->cap - 1)];
    if (!c->dirty) {
        /* Grows only if a connection fails in bench_flush and others are
         * refilled in the same pass. */
        if (b->ndirty == b->dirty_cap) {
            b->dirty_cap *= 2;
            b->dirty = realloc(b->dirty, b->dirty_cap * sizeof *b->dirty);
            if (b->dirty == NULL) {
                fprintf(stderr, "workq-bench: out of memory\n");
                exit(1);
            }
        }
        c->dirty = true;
        b->dirty[b->ndirty++] = c;
    }
    r->op = (uint8_t)op;
    r->job = job;
    r->sent_ns = wb_now_ns();
    c->count++;
    b->inflight++;
    if (op_is_measured(op))
        c->work++;
    if (op_is_produce(op))
        b->prod_inflight++;
    if (op_is_lease(op)) {
        c->leases++;
        b->leases_inflight++;
    }
}

/* Remove the oldest request and undo its accounting; returns a copy. */
static struct wb_req
wb_conn_pop(struct wb_conn *c)
{
    struct bench *b = c->b;
    struct wb_req r = c->ring[c->head];
    c->head = (c->head + 1) & (c->cap - 1);
    c->count--;
    b->inflight--;
    if (op_is_measured((enum wb_op)r.op))
        c->work--;
    if (op_is_produce((enum wb_op)r.op))
        b->prod_inflight--;
    if (op_is_lease((enum wb_op)r.op)) {
        c->leases--;
        b->leases_inflight--;
    }
    return r;
}

/* c is connected and set up; the run (or the clean-up) starts when the
 * last one is. */
static void
wb_conn_ready(struct wb_conn *c)
{
    struct bench *b = c->b;
    c->ready = true;
    if (++b->nready < b->nconns)
        return;
    b->driver->start(b);
}

/* The server cannot be used: say why, with a hint if there is one (NULL:
 * none), and end everything (exit status 1, no report). */
static void
wb_conn_unusable(struct bench *b, const char *why, const char *hint)
{
    if (b->fatal != 0)
        return;
    if (b->progress)
        fprintf(stderr, "\r%-79s\r", "");
    fprintf(stderr, "workq-bench: %scannot use %s: %s\n", b->phase == PH_CLEAN ? "clean-up: " : "",
            b->addr, why);
    if (hint != NULL)
        fprintf(stderr, "workq-bench: hint: %s\n", hint);
    wb_fatal(b, BENCH_EXIT_FAILED);
}

/* A set-up reply (auth, Faktory's greeting or HELLO) that makes the run
 * impossible: quote it, and stop with exit status status. */
void
wb_conn_setup_fail(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                   const char *what, int status)
{
    wb_error_reply(c, r, f, what);
    wb_fatal(c->b, status);
}

/* The connection broke: count what was in flight as lost and go on without
 * it.  Before set-up finished it is fatal: the server is not there.  hint
 * is for that case (NULL: none). */
static void
wb_conn_fail_hint(struct wb_conn *c, const char *why, const char *hint)
{
    struct bench *b = c->b;
    if (!c->ready) {
        wb_conn_unusable(b, why, hint);
        return;
    }
    wb_error(b, "conn %u: %s (%u requests lost)", c->idx, why, (unsigned)c->count);
    /* A lost add may or may not have created its job; either way this run
     * will not complete it.  Lost leases return their budget (wb_conn_pop), so
     * other consumers take over; jobs they had leased stay incomplete. */
    while (c->count > 0) {
        struct wb_req r = wb_conn_pop(c);
        if (op_is_produce((enum wb_op)r.op))
            wb_jobs_lost(b, &b->jobs[r.job]);
        if (op_is_measured((enum wb_op)r.op))
            b->errors++;
    }
    bufferevent_free(c->bev);
    c->bev = NULL;
    evbuffer_drain(c->out, evbuffer_get_length(c->out));
    c->closed = true;
    b->driver->idle(b);
}

static void
wb_conn_fail(struct wb_conn *c, const char *why)
{
    wb_conn_fail_hint(c, why, NULL);
}

/* The first bytes a connection receives, when they are not those of the
 * protocol asked for but of another listener (workq-server's Faktory or
 * metrics one, or TLS): the server cannot be used, and why.  False if they
 * look right (or are too few to tell). */
static bool
wb_conn_sniff(struct wb_conn *c, struct evbuffer *in)
{
    struct bench *b = c->b;
    size_t n = evbuffer_get_length(in);
    const unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)(n < 7 ? n : 7));
    if (b->tls == NULL && n >= 2 && (p[0] == 0x15 || p[0] == 0x16) && p[1] == 0x03) {
        wb_conn_unusable(b, "it answered in TLS (a tls:// listener)",
                         "add --tls (and --cacert FILE if the system does not trust its "
                         "certificate's CA)");
        return true;
    }
    if (!b->proto->greets && n >= 5 && memcmp(p, "+HI {", 5) == 0) {
        wb_conn_unusable(b, "it is a Faktory listener (it greeted with +HI)",
                         "add --protocol faktory, or give the address of the server's -listen");
        return true;
    }
    if (n >= 7 && memcmp(p, "HTTP/1.", 7) == 0) {
        wb_conn_unusable(b, "it answered in HTTP (a metrics listener)",
                         "give the address of the server's -listen");
        return true;
    }
    return false;
}

/* Requests are written here, at the end of each callback, not by the
 * bufferevent: left to itself, a socket bufferevent adds its write event when
 * data is queued and deletes it once the data is gone, two epoll_ctl calls
 * and an extra loop pass per round trip.  Each connection queues into its own
 * evbuffer (the bufferevent's output may only be drained by the bufferevent)
 * and writes it at once; what the socket does not take goes to the
 * bufferevent, which then writes everything in order until it is drained. */
static void
bench_flush(struct bench *b)
{
    for (size_t i = 0; i < b->ndirty; i++) {
        struct wb_conn *c = b->dirty[i];
        c->dirty = false;
        if (c->closed || evbuffer_get_length(c->out) == 0)
            continue;
        /* a TLS bufferevent encrypts and writes by itself */
        if (b->tls != NULL || evbuffer_get_length(bufferevent_get_output(c->bev)) > 0) {
            bufferevent_write_buffer(c->bev, c->out);
            continue;
        }
        if (evbuffer_write(c->out, bufferevent_getfd(c->bev)) < 0 && errno != EAGAIN &&
            errno != EWOULDBLOCK && errno != EINTR) {
            wb_conn_fail(c, strerror(errno));
            continue;
        }
        if (evbuffer_get_length(c->out) > 0) {
            bufferevent_write_buffer(c->bev, c->out);
            bufferevent_enable(c->bev, EV_WRITE);
        }
    }
    b->ndirty = 0;
}

/* The bufferevent wrote what the socket refused before: back to flushing
 * (a TLS one keeps writing by itself). */
static void
wb_conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct wb_conn *c = arg;
    if (c->b->tls == NULL)
        bufferevent_disable(bev, EV_WRITE);
}

/* One complete reply to request r: its latency if measured, then the
 * protocol's check of it; the last set-up reply makes the connection ready,
 * unless the reply ended the run (a refused Faktory HELLO). */
static void
wb_conn_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f, uint64_t now)
{
    struct bench *b = c->b;
    if (b->phase == PH_MEASURE && op_is_measured((enum wb_op)r->op)) {
        uint64_t us = now > r->sent_ns ? (now - r->sent_ns) / 1000 : 0;
        wb_hist_record(&b->hist[r->op], us);
        wb_hist_record(&b->all, us);
        b->requests++;
    }
    if (b->proto->refused != NULL && b->proto->refused(c, f))
        return;
    b->proto->reply(c, r, f);
    if (!c->ready && --c->setup_left == 0 && b->phase != PH_DONE)
        wb_conn_ready(c);
}

/* Parse every complete reply in the input, oldest request first; a partial
 * one stays for the next read.  Then refill the pipeline and flush. */
static void
wb_conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct wb_conn *c = arg;
    struct bench *b = c->b;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint64_t now = wb_now_ns(); /* all replies read at once arrived at once */
    /* Until a reply has made sense, the bytes may be another listener's. */
    if (!c->answered && wb_conn_sniff(c, in))
        return;
    while (evbuffer_get_length(in) > 0) {
        struct wb_frame f;
        const char *why;
        if (c->count == 0) {
            wb_conn_fail(c, "reply to no request");
            bench_flush(b);
            return;
        }
        int rc = b->proto->frame(in, (enum wb_op)c->ring[c->head].op, &f, &why);
        if (rc == 0)
            break;
        if (rc < 0) {
            wb_conn_fail(c, why);
            bench_flush(b);
            return;
        }
        struct wb_req r = wb_conn_pop(c);
        c->answered = b->answered = true;
        wb_conn_reply(c, &r, &f, now);
        evbuffer_drain(in, f.total);
        if (b->phase == PH_DONE || b->fatal != 0)
            return;
    }
    b->driver->fill(c);
    b->driver->idle(b);
    bench_flush(b);
}

/* The protocol's set-up (beanstalkd workers watch every name first; every
 * Faktory connection waits for the greeting and says HELLO; with a
 * password, every workq connection sends auth); ready now if it has
 * none. */
static void
wb_conn_setup(struct wb_conn *c)
{
    c->setup_left = c->b->proto->setup(c);
    if (c->setup_left == 0)
        wb_conn_ready(c);
}

/* Connected (set TCP_NODELAY: requests are small and latency is measured),
 * or the connection broke. */
static void
wb_conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct wb_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        evutil_socket_t fd = bufferevent_getfd(bev);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        wb_conn_setup(c);
        bench_flush(c->b);
        return;
    }
    struct bench *b = c->b;
    int err = EVUTIL_SOCKET_ERROR();
    /* A tls:// listener closes a plain-text connection without a byte (a
     * reset, when it had bytes left unread): if the server never answered
     * any connection, it cannot be used. */
    if (b->tls == NULL && !b->answered && evbuffer_get_length(bufferevent_get_input(bev)) == 0 &&
        ((what & BEV_EVENT_EOF) || err == ECONNRESET || err == EPIPE)) {
        char hint[sizeof b->addr + 64];
        snprintf(hint, sizeof hint, "if %s is a tls:// listener, add --tls", b->addr);
        wb_conn_unusable(b, "it closed the connection before answering", hint);
    } else if (what & BEV_EVENT_EOF) {
        wb_conn_fail(c, "server closed the connection");
    } else {
        const char *tls = b->tls != NULL ? wb_tls_error(bev) : NULL;
        /* A plain-text listener answers a ClientHello with no TLS record. */
        bool not_tls = tls != NULL && strstr(tls, "wrong version number") != NULL;
        char hint[sizeof b->addr + 64];
        snprintf(hint, sizeof hint, "%s does not speak TLS; without --tls?", b->addr);
        wb_conn_fail_hint(c, tls ? tls : evutil_socket_error_to_string(err), not_tls ? hint : NULL);
    }
    bench_flush(c->b);
}

/* Start connecting c to the one address given; replies are read in chunks
 * of up to 256 KiB so a pipelined burst needs few callbacks. */
void
wb_conn_open(struct bench *b, struct wb_conn *c)
{
    c->bev = b->tls != NULL ? wb_tls_connect(b)
                            : bufferevent_socket_new(b->base, -1, BEV_OPT_CLOSE_ON_FREE);
    c->out = evbuffer_new();
    if (c->bev == NULL || c->out == NULL) {
        fprintf(stderr, "workq-bench: cannot create a connection\n");
        exit(1);
    }
    bufferevent_setcb(c->bev, wb_conn_read_cb, wb_conn_write_cb, wb_conn_event_cb, c);
    bufferevent_set_max_single_read(c->bev, 256 * 1024);
    bufferevent_enable(c->bev, EV_READ); /* EV_WRITE: see bench_flush */
    if (b->tls == NULL &&
        bufferevent_socket_connect(c->bev, b->ai->ai_addr, (int)b->ai->ai_addrlen) < 0) {
        fprintf(stderr, "workq-bench: cannot connect to %s\n", b->addr);
        exit(1);
    }
}

/* Free what c holds; the structure itself belongs to bench.conns. */
void
wb_conn_clear(struct wb_conn *c)
{
    if (c->bev != NULL)
        bufferevent_free(c->bev);
    if (c->out != NULL)
        evbuffer_free(c->out);
    free(c->ring);
}
