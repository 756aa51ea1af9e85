/* nfp_frontend.c - NORFAB's broker on a ZeroMQ ROUTER socket
 * (nfp_frontend.h).  ZMQ_FD is edge-triggered: it only says that the
 * socket's state may have changed, so ZMQ_EVENTS is read until it has no
 * input, and again after anything sent outside the read (the heartbeat),
 * which may have consumed the edge. */
#include "lib/wq.h"
#include "norfab/nfp_frontend.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "engine/core.h"
#include "lib/alloc.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "lib/stats_text.h"
#include "net/conn.h"
#include "net/frontend.h"
#include "net/listener.h"
#include "norfab/nfp_broker.h"
#include "norfab/nfp_curve.h"
#include "norfab/nfp_zmq.h"
#include "store/cmdlog.h"

/* Messages read in one turn before the other sockets' turn. */
#define NFP_TURN 64
/* Messages ZeroMQ queues for one peer (its high-water mark, libzmq's
 * default); past it, messages to that peer are dropped. */
#define NFP_PEER_QUEUE 1000

/* A message held until the command log releases the records before it. */
struct nfp_held {
    struct list link;
    uint64_t lsn; /* cmdlog_appended when it was made */
    size_t size;  /* its allocation */
    size_t n;     /* frames: n lengths, then their bytes */
    size_t len[];
};

/* A peer with messages held: later ones to it wait behind them. */
struct nfp_held_peer {
    size_t held; /* its messages in the held list */
    size_t len;
    char id[]; /* its ZeroMQ identity */
};

struct nfp_frontend {
    const struct frontend_env *env;
    struct list held;            /* struct nfp_held, oldest first */
    struct registry *held_peers; /* struct nfp_held_peer, by identity */
    uint64_t mark;               /* cmdlog_appended as the current message began */
    uint64_t held_bytes;         /* what the held messages take */
    _Atomic uint64_t zmq_queued; /* what ZeroMQ holds of the messages sent */
    struct nfp_frontend_config cfg;
    void *zctx, *sock;
    struct event *read_ev, *tick_ev;
    struct nfp_broker *broker;
    struct nfp_curve *curve; /* NULL: no CURVE */
    char curve_public[41];   /* the broker's public key, Z85 */
    char endpoints[LISTEN_MAX * (LISTEN_BOUND_MAX + 1)];
};

/* Send frames[0..n) now: false when the peer is gone or full. */
static bool
nfp_frontend_send_now(struct nfp_frontend *fe, const struct nfp_frame *f, size_t n)
{
    if (nfp_zmq_send(fe->sock, f, n, &fe->zmq_queued) != 0) {
        /* the peer is gone (ROUTER_MANDATORY) or its queue is full */
        wq_log(LOG_LVL_DEBUG, "NORFAB message not sent peer=%.*s error=\"%s\"",
               (int)WQ_MIN(f[0].n, 128), f[0].p, zmq_strerror(errno));
        return false;
    }
    return true;
}

static void
nfp_held_peer_key(const void *elem, const void **key, size_t *len)
{
    const struct nfp_held_peer *hp = elem;
    *key = hp->id;
    *len = hp->len;
}

/* Send a message, or hold it while the records before it are not
 * released (as the TCP listeners hold their replies): after a crash the
 * log then has every change a peer was told of.  Each peer gets its
 * messages in order; what made no record while the log cannot be written
 * goes at once to a peer with nothing held, and a heartbeat, which states
 * nothing, always does: peers stay connected through a failing log. */
static bool
nfp_frontend_send(void *arg, const struct nfp_frame *f, size_t n, bool heartbeat)
{
    struct nfp_frontend *fe = arg;
    struct cmdlog *log = *fe->env->cmdlog;
    if (log == NULL || heartbeat)
        return nfp_frontend_send_now(fe, f, n);
    struct nfp_held_peer *hp =
        registry_count(fe->held_peers) > 0 ? registry_find(fe->held_peers, f[0].p, f[0].n) : NULL;
    if (hp == NULL && !cmdlog_holds_replies(log, fe->mark))
        return nfp_frontend_send_now(fe, f, n);
    if (hp == NULL) {
        hp = wq_malloc(sizeof *hp + f[0].n);
        hp->held = 0;
        hp->len = f[0].n;
        memcpy(hp->id, f[0].p, f[0].n);
        registry_insert(fe->held_peers, hp);
    }
    hp->held++;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += f[i].n;
    size_t size = sizeof(struct nfp_held) + n * sizeof(size_t) + bytes;
    struct nfp_held *h = wq_malloc(size);
    fe->held_bytes += size;
    h->size = size;
    h->lsn = cmdlog_appended(log);
    h->n = n;
    char *at = (char *)&h->len[n];
    for (size_t i = 0; i < n; i++) {
        h->len[i] = f[i].n;
        if (f[i].n > 0)
            memcpy(at, f[i].p, f[i].n);
        at += f[i].n;
    }
    list_push_back(&fe->held, &h->link);
    return true;
}

/* The log released its records up to lsn: the messages held for them go,
 * in order. */
static void
nfp_frontend_released(void *arg, uint64_t lsn)
{
    struct nfp_frontend *fe = arg;
    struct list *n, *tmp;
    list_each_safe(n, tmp, &fe->held)
    {
        struct nfp_held *h = list_item(n, struct nfp_held, link);
        if (h->lsn > lsn)
            break;
        struct nfp_frame f[NFP_ZMQ_MAX_FRAMES];
        const char *at = (const char *)&h->len[h->n];
        for (size_t i = 0; i < h->n && i < NFP_ZMQ_MAX_FRAMES; i++) {
            f[i] = (struct nfp_frame){at, h->len[i]};
            at += h->len[i];
        }
        nfp_frontend_send_now(fe, f, WQ_MIN(h->n, (size_t)NFP_ZMQ_MAX_FRAMES));
        struct nfp_held_peer *hp = registry_find(fe->held_peers, f[0].p, f[0].n);
        if (--hp->held == 0)
            wq_free(registry_remove(fe->held_peers, hp->id, hp->len));
        fe->held_bytes -= h->size;
        list_unlink(&h->link);
        wq_free(h);
    }
    event_active(fe->read_ev, EV_READ, 0); /* sending may have taken the edge */
}

/* A message is about to be handled: what the log holds now. */
static void
nfp_frontend_mark(struct nfp_frontend *fe)
{
    struct cmdlog *log = *fe->env->cmdlog;
    fe->mark = log != NULL ? cmdlog_appended(log) : 0;
}

static void
nfp_frontend_read_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct nfp_frontend *fe = arg;
    const struct conn_hooks *hooks = fe->env->hooks;
    hooks->begin(hooks->arg);
    zmq_msg_t msgs[NFP_ZMQ_MAX_FRAMES];
    struct nfp_frame frames[NFP_ZMQ_MAX_FRAMES];
    for (int turn = 0; turn < NFP_TURN && nfp_zmq_readable(fe->sock); turn++) {
        nfp_frontend_mark(fe);
        bool whole;
        size_t n = nfp_zmq_recv(fe->sock, msgs, NFP_ZMQ_MAX_FRAMES, &whole);
        for (size_t i = 0; i < n; i++)
            frames[i] = (struct nfp_frame){zmq_msg_data(&msgs[i]), zmq_msg_size(&msgs[i])};
        if (n > 0 && whole)
            nfp_broker_handle(fe->broker, frames, n);
        else if (n > 0)
            wq_log(LOG_LVL_DEBUG, "NORFAB message dropped: more than %d frames",
                   NFP_ZMQ_MAX_FRAMES);
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&msgs[i]);
    }
    if (nfp_zmq_readable(fe->sock))
        event_active(fe->read_ev, EV_READ, 0); /* the rest in the next pass */
    hooks->end(hooks->arg);
}

static void
nfp_frontend_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct nfp_frontend *fe = arg;
    const struct conn_hooks *hooks = fe->env->hooks;
    hooks->begin(hooks->arg);
    nfp_frontend_mark(fe);
    nfp_broker_tick(fe->broker);
    event_active(fe->read_ev, EV_READ, 0); /* sending may have taken the edge */
    hooks->end(hooks->arg);
}

static int
nfp_frontend_bind(void *arg, const struct listen_addr *a, char *bound)
{
    struct nfp_frontend *fe = arg;
    char endpoint[300], last[300];
    bool v6 = strchr(a->host, ':') != NULL;
    snprintf(endpoint, sizeof endpoint, "tcp://%s%s%s:%s", v6 ? "[" : "",
             a->host[0] != '\0' ? a->host : "*", v6 ? "]" : "", a->port);
    int v6_too = v6 || a->host[0] == '\0'; /* "*": every address, IPv6 too */
    zmq_setsockopt(fe->sock, ZMQ_IPV6, &v6_too, sizeof v6_too);
    if (zmq_bind(fe->sock, endpoint) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot listen for NORFAB address=%s error=\"%s\"", endpoint,
               zmq_strerror(errno));
        return -1;
    }
    size_t size = sizeof last;
    if (zmq_getsockopt(fe->sock, ZMQ_LAST_ENDPOINT, last, &size) != 0)
        snprintf(last, sizeof last, "%s", endpoint);
    const char *addr = strncmp(last, "tcp://", 6) == 0 ? last + 6 : last;
    snprintf(bound, LISTEN_BOUND_MAX, "%.*s", LISTEN_BOUND_MAX - 1, addr);
    size_t used = strlen(fe->endpoints);
    snprintf(fe->endpoints + used, sizeof fe->endpoints - used, "%s%s", used > 0 ? "," : "", last);
    return 0;
}

static void
nfp_frontend_accept(void *arg)
{
    struct nfp_frontend *fe = arg;
    event_add(fe->read_ev, NULL);
    struct timeval tv = {(time_t)(fe->cfg.keepalive_ms / 1000),
                         (suseconds_t)(fe->cfg.keepalive_ms % 1000) * 1000};
    event_add(fe->tick_ev, &tv);
    event_active(fe->read_ev, EV_READ, 0); /* what came before */
}

/* -max-memory counts the messages held for the log and what ZeroMQ has
 * not yet sent. */
static uint64_t
nfp_frontend_buffered(void *arg)
{
    struct nfp_frontend *fe = arg;
    return fe->held_bytes + atomic_load_explicit(&fe->zmq_queued, memory_order_relaxed);
}

static void
nfp_frontend_stats(void *arg, struct stats_out *o)
{
    struct nfp_frontend *fe = arg;
    struct nfp_broker_counts k;
    nfp_broker_counts(fe->broker, &k);
    stats_gauge(o, "workq_norfab_workers", NULL, "NORFAB workers that sent READY.", k.workers);
    stats_gauge(o, "workq_norfab_services", NULL, "NORFAB services named by a client or worker.",
                k.services);
    stats_gauge(o, "workq_norfab_clients", NULL, "NORFAB clients seen in the last hour.",
                k.clients);
    stats_counter(o, "workq_norfab_requests", NULL,
                  "NORFAB client requests routed or answered by the broker.", k.requests);
    stats_counter(o, "workq_norfab_responses", NULL, "NORFAB worker answers relayed to clients.",
                  k.responses);
    stats_counter(o, "workq_norfab_dropped", NULL, "NORFAB messages dropped as invalid.",
                  k.dropped);
    stats_counter(o, "workq_norfab_disconnects", NULL,
                  "DISCONNECTs sent to NORFAB workers for an unexpected command.", k.disconnects);
    stats_counter(o, "workq_norfab_dead_workers", NULL,
                  "NORFAB workers declared dead for missed heartbeats.", k.dead);
    stats_counter(o, "workq_norfab_resent", NULL,
                  "NORFAB POSTs sent again to another worker (theirs died without a word).",
                  k.resent);
    stats_counter(o, "workq_norfab_expired", NULL,
                  "NORFAB POSTs that found no worker within -norfab-queue-ttl.", k.expired);
    struct core_space_counts j;
    core_space_counts(fe->env->core, core_space_find(fe->env->core, "norfab"), &j);
    stats_family(o, "workq_norfab_jobs", "gauge", NULL, "NORFAB POSTs kept as jobs, by state.");
    stats_printf(o->b, "workq_norfab_jobs{state=\"queued\"} %llu\n",
                 (unsigned long long)(j.enqueued + j.retry + j.scheduled));
    stats_printf(o->b, "workq_norfab_jobs{state=\"sent\"} %llu\n", (unsigned long long)j.working);
}

static void
nfp_free_elem(void *elem, void *arg)
{
    (void)arg;
    wq_free(elem);
}

static void
nfp_frontend_close(void *arg)
{
    struct nfp_frontend *fe = arg;
    struct list *n, *tmp;
    list_each_safe(n, tmp, &fe->held)
    {
        wq_free(list_item(n, struct nfp_held, link));
    }
    if (fe->held_peers != NULL)
        registry_foreach(fe->held_peers, nfp_free_elem, NULL);
    registry_free(fe->held_peers);
    if (fe->read_ev != NULL)
        event_free(fe->read_ev);
    if (fe->tick_ev != NULL)
        event_free(fe->tick_ev);
    nfp_broker_free(fe->broker);
    nfp_curve_close(fe->curve);
    if (fe->sock != NULL)
        zmq_close(fe->sock);
    if (fe->zctx != NULL)
        zmq_ctx_term(fe->zctx);
    wq_free(fe);
}

void *
nfp_frontend_open(const struct frontend_env *env, const struct nfp_frontend_config *cfg,
                  bool *bad_file)
{
    *bad_file = false;
    struct nfp_frontend *fe = wq_calloc(1, sizeof *fe);
    fe->env = env;
    fe->cfg = *cfg;
    list_init(&fe->held);
    fe->held_peers = registry_new(nfp_held_peer_key);
    fe->zctx = zmq_ctx_new();
    fe->sock = fe->zctx != NULL ? zmq_socket(fe->zctx, ZMQ_ROUTER) : NULL;
    if (fe->sock == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot make the NORFAB socket error=\"%s\"", zmq_strerror(errno));
        nfp_frontend_close(fe);
        return NULL;
    }
    /* a worker that connects again under its name takes its name back; a
     * message to a peer that is gone fails rather than vanish; closing
     * waits for nothing; a message past -max-payload closes its peer; a
     * peer is queued NFP_PEER_QUEUE messages at most */
    int one = 1, zero = 0;
    int64_t max_msg = (int64_t)env->max_payload + 65536;
    zmq_setsockopt(fe->sock, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(fe->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(fe->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(fe->sock, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    int hwm = NFP_PEER_QUEUE;
    zmq_setsockopt(fe->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (cfg->curve_secret != NULL &&
        (fe->curve = nfp_curve_open(fe->zctx, fe->sock, env->base, cfg->curve_secret,
                                    cfg->curve_clients, fe->curve_public, bad_file)) == NULL) {
        nfp_frontend_close(fe);
        return NULL;
    }
    int fd;
    size_t size = sizeof fd;
    if (zmq_getsockopt(fe->sock, ZMQ_FD, &fd, &size) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot watch the NORFAB socket error=\"%s\"", zmq_strerror(errno));
        nfp_frontend_close(fe);
        return NULL;
    }
    fe->read_ev = event_new(env->base, fd, EV_READ | EV_PERSIST, nfp_frontend_read_cb, fe);
    fe->tick_ev = event_new(env->base, -1, EV_PERSIST, nfp_frontend_tick_cb, fe);
    const struct nfp_broker_config bcfg = {
        .keepalive_ms = cfg->keepalive_ms,
        .liveness = cfg->liveness,
        .endpoints = fe->endpoints,
        .started_ms = env->started_ms,
        .queue_ttl_ms = cfg->queue_ttl_ms,
        .result_ttl_ms = cfg->result_ttl_ms,
        .curve_public = fe->curve != NULL ? fe->curve_public : NULL,
        .readonly = env->readonly,
    };
    fe->broker = nfp_broker_new(&bcfg, env->core, nfp_frontend_send, fe, env->now_ms);
    return fe;
}

static void
nfp_frontend_replayed(void *arg)
{
    struct nfp_frontend *fe = arg;
    nfp_broker_replayed(fe->broker);
}

const struct frontend_ops nfp_frontend_ops = {
    .bind = nfp_frontend_bind,
    .replayed = nfp_frontend_replayed,
    .released = nfp_frontend_released,
    .accept = nfp_frontend_accept,
    .buffered = nfp_frontend_buffered,
    .stats = nfp_frontend_stats,
    .close = nfp_frontend_close,
};
