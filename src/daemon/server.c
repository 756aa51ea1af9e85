/* server.c - the libevent loop, run a pass at a time: the front-ends and
 * their listeners, signals, the wheel timer, the command log's news. */
#include "lib/wq.h"
#include "daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/daemon.h"
#include "daemon/options.h"
#include "engine/core.h"
#include "daemon/stats.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/util.h"
#include "net/auth_guard.h"
#include "net/tls.h"
#include "store/cmdlog.h"

/* How long a stop waits for replies to be written. */
#define SERVER_STOP_MS 2000
/* The idle sweep runs at most this often, however short the timeout. */
#define SERVER_IDLE_SWEEP_MIN_MS 10

/* Read the clock for a new batch of work and run the deadlines due by it. */
static void
server_begin_batch(struct server *srv)
{
    srv->now_ms = util_now_ms();
    core_advance(srv->core, srv->now_ms);
}

/* Arm the timer for the core's next event, if that is earlier than the
 * time it is armed for. */
static void
server_update_timer(struct server *srv)
{
    /* Re-arm only for an earlier event: a timer armed too early just fires,
     * finds nothing due and re-arms, which is far cheaper than a timerfd
     * system call every time a job's deadline goes away. */
    uint64_t next = core_next_event(srv->core);
    if (next >= srv->timer_at)
        return;
    srv->timer_at = next;
    uint64_t now = util_now_ms();
    uint64_t delay = next > now ? next - now : 0;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000};
    evtimer_add(srv->timer, &tv);
}

void
server_accept(struct server *srv)
{
    server_begin_batch(srv);
    for (size_t i = 0; i < frontend_nrows; i++)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->replayed != NULL)
            frontend_rows[i].ops->replayed(srv->fe[i]);
    server_update_timer(srv);
    listeners_enable(srv->listeners, true);
    for (size_t i = 0; i < frontend_nrows; i++)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->accept != NULL)
            frontend_rows[i].ops->accept(srv->fe[i]);
    srv->accepting = true;
}

static void
server_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    srv->timer_at = WHEEL_NEVER; /* it fired: not armed any more */
    server_begin_batch(srv);
    server_update_timer(srv);
}

/* A connection was freed (a graceful stop ends with the last one). */
static void
server_conn_gone(struct server *srv)
{
    srv->clients = conn_count(srv->conns);
    if (srv->stopping && srv->clients == 0)
        event_base_loopbreak(srv->base);
}

/* conn_hooks: the connections' work runs in batches like the timer's. */
static uint64_t
server_conns_begin(void *arg)
{
    struct server *srv = arg;
    server_begin_batch(srv);
    /* -max-memory counts what the connections and the front-ends hold */
    uint64_t io = conn_buffered(srv->conns);
    for (size_t i = 0; i < frontend_nrows; i++)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->buffered != NULL)
            io += frontend_rows[i].ops->buffered(srv->fe[i]);
    srv->core->io_bytes = io;
    return srv->now_ms;
}

static void
server_conns_end(void *arg)
{
    server_update_timer(arg);
}

static void
server_conns_gone(void *arg)
{
    server_conn_gone(arg);
}

static void
server_stop_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    wq_log(LOG_LVL_WARN, "stopping without waiting any longer for slow clients");
    event_base_loopbreak(srv->base);
}

/* SIGINT, SIGTERM: stop accepting, cancel parked commands, write the
 * replies already due (for a little while at most), then leave the loop.
 * A second signal leaves at once. */
static void
server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct server *srv = arg;
    if (srv->stopping) {
        event_base_loopbreak(srv->base);
        return;
    }
    wq_log(LOG_LVL_INFO, "stopping signal=%d clients=%llu", (int)sig,
           (unsigned long long)srv->clients);
    srv->stopping = true;
    daemon_notify("STOPPING=1");
    listeners_stop(srv->listeners);
    struct timeval tv = {SERVER_STOP_MS / 1000, (SERVER_STOP_MS % 1000) * 1000};
    evtimer_add(srv->stop_ev, &tv);
    conn_close_all(srv->conns);
    server_conn_gone(srv);
}

/* frontend_env.render: the server's figures and every front-end's series,
 * as stats.c writes them. */
static void
server_render(void *arg, bool om, struct stats_buf *out)
{
    struct server *srv = arg;
    struct stats_section sections[FRONTENDS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < frontend_nrows; i++)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->stats != NULL)
            sections[n++] = (struct stats_section){frontend_rows[i].ops->stats, srv->fe[i]};
    const struct stats_source src = {
        .core = srv->core,
        .cmdlog = srv->cmdlog,
        .sections = sections,
        .nsections = n,
        .connections = conn_count(srv->conns),
        .accepted = listeners_accepted(srv->listeners),
        .refused = listeners_refused(srv->listeners),
        .readonly = srv->readonly,
        .max_queues = srv->opts->metrics_max_queues,
        .max_memory = srv->opts->max_memory,
        .now_ms = util_now_ms(),
        .started_ms = srv->started_ms,
        .version = PACKAGE_VERSION,
        .allocator = alloc_name(),
    };
    stats_render(&src, om, out);
}

/* frontend_env.ready: replay done, listeners open, writable, not stopping. */
static const char *
server_ready(void *arg)
{
    struct server *srv = arg;
    if (srv->stopping)
        return "stopping";
    if (!srv->accepting)
        return "starting: replaying the command log";
    if (srv->readonly)
        return "read-only: command log write failed";
    return NULL;
}

int
server_tls(struct server *srv)
{
    const struct options *o = srv->opts;
    bool needed = false;
    for (size_t i = 0; i < frontend_nrows; i++) {
        const struct listen_set *set = frontend_addresses(&frontend_rows[i], o);
        for (size_t j = 0; j < set->n; j++)
            needed |= set->addr[j].tls;
    }
    if (!needed)
        return 0;
    srv->tls = tls_new(o->tls_cert, o->tls_key, o->tls_ca);
    if (srv->tls == NULL)
        return -1;
    srv->env.tls = srv->tls;
    return 0;
}

int
server_open_frontends(struct server *srv)
{
    size_t state_max = 0;
    for (size_t i = 0; i < frontend_nrows; i++) {
        const struct frontend_row *row = &frontend_rows[i];
        int status = row->open(&srv->env, srv->opts, &srv->fe[i]);
        if (status != 0)
            return status;
        if (srv->fe[i] != NULL && row->ops->service != NULL)
            state_max = WQ_MAX(state_max, row->ops->service(srv->fe[i], false)->proto->state_size);
    }
    srv->conns = conn_set_new(srv->base, &srv->hooks, state_max);
    srv->listeners =
        listeners_new(srv->base, srv->conns, srv->opts->max_connections, &srv->clients);
    return 0;
}

/* Bind one address a of row i's front-end, disabled.  0, or -1 after
 * logging. */
static int
server_bind(struct server *srv, size_t i, const struct listen_addr *a)
{
    const struct frontend_row *row = &frontend_rows[i];
    struct server_bound *b = &srv->bound[srv->nbound];
    *b = (struct server_bound){row->name, row->ops->add_listener == NULL, ""};
    if (row->ops->bind != NULL) {
        if (row->ops->bind(srv->fe[i], a, b->addr) != 0)
            return -1;
    } else if (row->ops->service != NULL) {
        if (listeners_add(srv->listeners, a, row->ops->service(srv->fe[i], a->tls), b->addr) != 0)
            return -1;
    } else {
        struct evconnlistener *l = listener_bind(srv->base, a);
        if (l == NULL)
            return -1;
        listener_describe(l, a->tls, b->addr);
        if (row->ops->add_listener(srv->fe[i], l, a->tls) != 0)
            return -1;
    }
    srv->nbound++;
    return 0;
}

int
server_listen(struct server *srv)
{
    for (size_t i = 0; i < frontend_nrows; i++) {
        if (srv->fe[i] == NULL)
            continue;
        const struct listen_set *set = frontend_addresses(&frontend_rows[i], srv->opts);
        for (size_t j = 0; j < set->n; j++)
            if (server_bind(srv, i, &set->addr[j]) != 0)
                return -1;
    }
    return 0;
}

/* SIGHUP: reopen the log file, which logrotate has moved away; read the
 * TLS certificate and the front-ends' password files again. */
static void
server_hup_cb(evutil_socket_t sig, short what, void *arg)
{
    struct server *srv = arg;
    if (log_reopen() != 0)
        wq_log(LOG_LVL_ERROR, "cannot reopen the log file error=\"%s\"", strerror(errno));
    else
        wq_log(LOG_LVL_INFO, "log reopened");
    if (srv->tls != NULL) {
        if (tls_reload(srv->tls) == 0)
            wq_log(LOG_LVL_INFO, "TLS certificate re-read cert=%s", srv->opts->tls_cert);
        else
            wq_log(LOG_LVL_ERROR, "keeping the TLS certificate in use");
    }
    for (size_t i = 0; i < frontend_nrows; i++)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->reload != NULL)
            frontend_rows[i].ops->reload(srv->fe[i]);
}

/* Close the connections that have been idle for the idle timeout. */
static void
server_idle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    uint64_t now = util_now_ms(), idle = srv->opts->idle_timeout_ms;
    conn_close_idle(srv->conns, now, now > idle ? now - idle : 0);
}

int
server_init(struct server *srv, const struct options *opts)
{
    memset(srv, 0, sizeof *srv);
    srv->opts = opts;
    srv->started_ms = util_now_ms();
    srv->timer_at = WHEEL_NEVER;
    /* Precise timers: the default coarse clock is 4 ms off here. */
    struct event_config *cfg = event_config_new();
    if (cfg != NULL) {
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        srv->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
    }
    if (srv->base == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot create the event loop");
        return -1;
    }
    srv->core = core_new(srv->started_ms);
    srv->core->max_bytes = opts->max_memory;
    core_set_dead_limits(srv->core, JOB_SPACE_IDS, opts->dead_ttl_ms, opts->dead_max);
    srv->core->backoff_unit_ms = opts->backoff_unit_ms;
    srv->auth_guard = auth_guard_new();
    srv->hooks = (struct conn_hooks){srv, server_conns_begin, server_conns_end, server_conns_gone};
    srv->env = (struct frontend_env){
        .base = srv->base,
        .core = srv->core,
        .hooks = &srv->hooks,
        .auth_guard = srv->auth_guard,
        .now_ms = &srv->now_ms,
        .readonly = &srv->readonly,
        .cmdlog = &srv->cmdlog,
        .clients = &srv->clients,
        .started_ms = srv->started_ms,
        .max_line = opts->max_line,
        .max_payload = opts->max_payload,
        .max_connections = opts->max_connections,
        .render = server_render,
        .ready = server_ready,
        .arg = srv,
    };
    srv->timer = evtimer_new(srv->base, server_timer_cb, srv);
    srv->sig_int = evsignal_new(srv->base, SIGINT, server_signal_cb, srv);
    srv->sig_term = evsignal_new(srv->base, SIGTERM, server_signal_cb, srv);
    srv->stop_ev = evtimer_new(srv->base, server_stop_deadline_cb, srv);
    srv->sig_hup = evsignal_new(srv->base, SIGHUP, server_hup_cb, srv);
    evsignal_add(srv->sig_int, NULL);
    evsignal_add(srv->sig_term, NULL);
    evsignal_add(srv->sig_hup, NULL);
    if (opts->idle_timeout_ms > 0) {
        /* Sweep four times per timeout: a connection is closed between 1
         * and 1.25 timeouts after it fell silent, and the hot path only
         * stores a time per read. */
        uint64_t every = WQ_MAX(opts->idle_timeout_ms / 4, SERVER_IDLE_SWEEP_MIN_MS);
        struct timeval tv = {(time_t)(every / 1000), (suseconds_t)(every % 1000) * 1000};
        srv->idle_ev = event_new(srv->base, -1, EV_PERSIST, server_idle_cb, srv);
        event_add(srv->idle_ev, &tv);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit is a write error, not a death */
    return 0;
}

/* Take the log's read-only state, and send the replies it has released
 * since the last time. */
static void
server_cmdlog_news(struct server *srv)
{
    bool was_readonly = srv->readonly;
    srv->readonly = cmdlog_readonly(srv->cmdlog);
    if (srv->readonly != was_readonly)
        wq_log(LOG_LVL_WARN, "read-only mode=%s", srv->readonly ? "on" : "off");
    uint64_t released = cmdlog_released(srv->cmdlog);
    if (released != srv->cmdlog_released) {
        srv->cmdlog_released = released;
        conn_release_held(srv->conns, released);
        for (size_t i = 0; i < frontend_nrows; i++)
            if (srv->fe[i] != NULL && frontend_rows[i].ops->released != NULL)
                frontend_rows[i].ops->released(srv->fe[i], released);
    }
}

/* The sync thread synced, or a sync failed or succeeded again. */
static void
server_cmdlog_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    cmdlog_event_ack(srv->cmdlog);
    server_cmdlog_news(srv);
}

/* The end of a loop pass: hand the pass's records to the kernel, then let
 * the replies that waited for them go (all of them, unless the policy
 * waits for the disk).  While writes fail, a timer makes sure a pass ends
 * now and then to try again. */
static void
server_end_pass(struct server *srv)
{
    if (srv->cmdlog == NULL)
        return;
    if (cmdlog_write(srv->cmdlog) != 0 && !evtimer_pending(srv->cmdlog_retry_ev, NULL)) {
        struct timeval tv = {0, (CMDLOG_RETRY_MS + 1) * 1000};
        evtimer_add(srv->cmdlog_retry_ev, &tv);
    }
    server_cmdlog_news(srv);
}

static void
server_cmdlog_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    /* nothing to do here: the pass this callback makes ends with a write */
}

/* Can the server create files in the command log's directory dir?  Found
 * at start, with a file made and removed, not at the first write (whose
 * client would wait for ever, after the server said it was ready).  0, or
 * -1 after logging. */
static int
server_probe_cmdlog_dir(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.workq-probe.%ld", dir, (long)getpid());
    unlink(path); /* one a crash left, by a server of the same pid */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        wq_log(LOG_LVL_ERROR,
               "cmdlog cannot write in its directory dir=%s error=\"%s\" (the server's user "
               "must own it or be able to write it)",
               dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(path);
    return 0;
}

int
server_open_cmdlog(struct server *srv)
{
    const struct cmdlog_config *cfg = &srv->opts->cmdlog;
    if (cfg->dir == NULL)
        return 0;
    srv->cmdlog = cmdlog_open(cfg);
    if (srv->cmdlog == NULL)
        return EX_CONFIG;
    if (server_probe_cmdlog_dir(cfg->dir) != 0)
        return EX_CANTCREAT;
    if (cmdlog_replay(srv->cmdlog, &core_replay_ops, srv->core, util_now_ms()) != 0)
        return EX_CONFIG;
    core_clear_totals(srv->core); /* the metrics count from here */
    if (cmdlog_start(srv->cmdlog) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot start its threads");
        return EX_CONFIG;
    }
    srv->cmdlog_ev = event_new(srv->base, cmdlog_event_fd(srv->cmdlog), EV_READ | EV_PERSIST,
                               server_cmdlog_cb, srv);
    event_add(srv->cmdlog_ev, NULL);
    srv->cmdlog_retry_ev = evtimer_new(srv->base, server_cmdlog_retry_cb, srv);
    srv->core->record = cmdlog_append;
    srv->core->record_arg = srv->cmdlog;
    conn_set_cmdlog(srv->conns, srv->cmdlog);
    /* Expire, and log as expired, the jobs whose life ended while down. */
    server_begin_batch(srv);
    server_update_timer(srv);
    return 0;
}

/* libevent 2.1 has no hook at the end of a loop pass, so the loop is run
 * one pass at a time (EVLOOP_ONCE: wait for events, run every callback due,
 * return) and the pass is ended here.  A pass that the command log wants
 * polled does not wait (cmdlog_poll). */
void
server_run(struct server *srv)
{
    for (;;) {
        int flags = EVLOOP_ONCE;
        if (srv->cmdlog != NULL && cmdlog_poll(srv->cmdlog))
            flags |= EVLOOP_NONBLOCK;
        int rc = event_base_loop(srv->base, flags);
        server_end_pass(srv);
        if (rc != 0 || event_base_got_break(srv->base))
            break;
    }
}

void
server_clear(struct server *srv)
{
    srv->stopping = false; /* freeing the rest is not a graceful stop */
    /* connections first: a front-end's state outlives its connections */
    conn_set_free(srv->conns);
    listeners_free(srv->listeners);
    struct event *evs[] = {srv->timer,   srv->sig_int, srv->sig_term,  srv->sig_hup,
                           srv->idle_ev, srv->stop_ev, srv->cmdlog_ev, srv->cmdlog_retry_ev};
    for (size_t i = 0; i < WQ_ARRAY_LEN(evs); i++)
        if (evs[i] != NULL)
            event_free(evs[i]);
    if (srv->core != NULL)
        srv->core->record = NULL;
    cmdlog_close(srv->cmdlog); /* writes and syncs what is left */
    core_free(srv->core);
    /* and the front-ends last: the engine may hold callbacks into them */
    for (size_t i = frontend_nrows; i-- > 0;)
        if (srv->fe[i] != NULL && frontend_rows[i].ops->close != NULL)
            frontend_rows[i].ops->close(srv->fe[i]);
    auth_guard_free(srv->auth_guard);
    tls_free(srv->tls);
    if (srv->base != NULL)
        event_base_free(srv->base);
    memset(srv, 0, sizeof *srv);
}
