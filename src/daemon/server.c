/* server.c - the libevent loop, run a pass at a time: listeners and the
 * services they serve, signals, the wheel timer, the command log's news. */
#include "lib/wq.h"
#include "daemon/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <fcntl.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <openssl/crypto.h>

#include "store/cmdlog.h"
#include "net/conn.h"
#include "engine/core.h"
#include "faktory/fjobs.h"
#include "lib/alloc.h"
#include "net/auth_guard.h"
#include "daemon/daemon.h"
#include "lib/log.h"
#include "daemon/options.h"
#include "lib/util.h"

#define SERVER_BACKLOG 1024
/* How long a stop waits for replies to be written. */
#define SERVER_STOP_MS 2000
/* How long accepting pauses when file descriptors run out. */
#define SERVER_ACCEPT_PAUSE_MS 100
/* ... and logs it at most this often. */
#define SERVER_ACCEPT_LOG_MS 1000
/* The idle sweep runs at most this often, however short the timeout. */
#define SERVER_IDLE_SWEEP_MIN_MS 10
/* The reply to a client beyond -max-connections, before it is closed. */
#define SERVER_FULL_REPLY "-SERVER-ERROR Too many connections\r\n"

/* Enable or disable accepting on every listener. */
static void
server_accepting(struct server *srv, bool on)
{
    for (size_t i = 0; i < srv->nlisteners; i++) {
        if (on)
            evconnlistener_enable(srv->listeners[i].l);
        else
            evconnlistener_disable(srv->listeners[i].l);
    }
}

void
server_accept(struct server *srv)
{
    server_accepting(srv, true);
    if (srv->metrics != NULL)
        metrics_accept(srv->metrics);
    srv->accepting = true;
}

/* Read the clock for a new batch of work and run the deadlines due by it. */
static void
server_begin_batch(struct server *srv)
{
    srv->ctx.now_ms = util_now_ms();
    core_advance(srv->ctx.core, srv->ctx.now_ms);
}

/* Arm the timer for the core's next event, if that is earlier than the
 * time it is armed for. */
static void
server_update_timer(struct server *srv)
{
    /* Re-arm only for an earlier event: a timer armed too early just fires,
     * finds nothing due and re-arms, which is far cheaper than a timerfd
     * system call every time a job's deadline goes away. */
    uint64_t next = core_next_event(srv->ctx.core);
    if (next >= srv->timer_at)
        return;
    srv->timer_at = next;
    uint64_t now = util_now_ms();
    uint64_t delay = next > now ? next - now : 0;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000};
    evtimer_add(srv->timer, &tv);
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
    srv->ctx.clients = conn_count(srv->conns);
    if (srv->stopping && srv->ctx.clients == 0)
        event_base_loopbreak(srv->base);
}

/* conn_hooks: the connections' work runs in batches like the timer's. */
static uint64_t
server_conns_begin(void *arg)
{
    struct server *srv = arg;
    server_begin_batch(srv);
    srv->ctx.core->io_bytes = conn_buffered(srv->conns); /* -max-memory counts them */
    return srv->ctx.now_ms;
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
           (unsigned long long)srv->ctx.clients);
    srv->stopping = true;
    daemon_notify("STOPPING=1");
    server_accepting(srv, false);
    struct timeval tv = {SERVER_STOP_MS / 1000, (SERVER_STOP_MS % 1000) * 1000};
    evtimer_add(srv->stop_ev, &tv);
    conn_close_all(srv->conns);
    server_conn_gone(srv);
}

static void
server_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                 void *arg)
{
    struct server_listener *sl = arg;
    struct server *srv = sl->srv;
    uint64_t max = srv->opts->max_connections;
    if (max > 0 && srv->ctx.clients >= max) {
        /* Say why before closing; a client that cannot take even this
         * line at once just sees the close. */
        if (!srv->full)
            wq_log(LOG_LVL_WARN, "refusing clients max_connections=%llu", (unsigned long long)max);
        srv->full = true;
        srv->stats.refused++;
        (void)!send(fd, SERVER_FULL_REPLY, sizeof SERVER_FULL_REPLY - 1,
                    MSG_DONTWAIT | MSG_NOSIGNAL);
        evutil_closesocket(fd);
        return;
    }
    if (srv->full) {
        wq_log(LOG_LVL_INFO, "accepting clients again clients=%llu",
               (unsigned long long)srv->ctx.clients);
        srv->full = false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn_new(srv->conns, sl->svc, fd);
    srv->ctx.clients = conn_count(srv->conns);
    srv->stats.accepted++;
}

static void
server_accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    if (!srv->stopping)
        server_accepting(srv, true);
}

/* accept failed (EMFILE, ENFILE, ENOMEM...): the pending connection stays
 * in the backlog and the socket stays readable, so pause accepting for a
 * moment instead of spinning. */
static void
server_accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct server *srv = ((struct server_listener *)arg)->srv;
    uint64_t now = util_now_ms();
    if (now - srv->accept_error_logged_ms >= SERVER_ACCEPT_LOG_MS) {
        wq_log(LOG_LVL_WARN, "accept failed, pausing ms=%d error=\"%s\" repeats=%llu",
               SERVER_ACCEPT_PAUSE_MS, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()),
               (unsigned long long)srv->accept_errors_unlogged);
        srv->accept_error_logged_ms = now;
        srv->accept_errors_unlogged = 0;
    } else {
        srv->accept_errors_unlogged++;
    }
    server_accepting(srv, false);
    struct timeval tv = {0, SERVER_ACCEPT_PAUSE_MS * 1000};
    evtimer_add(srv->accept_ev, &tv);
}

/* Describe the address listener l really bound (port 0 becomes a port)
 * into out[0..104), after "tls://" if it is TLS. */
static void
server_describe_bound(struct evconnlistener *l, bool tls, char *out)
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
            snprintf(out, 96, "[%s]:%u", host, port);
            return;
        }
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
    }
    snprintf(out, 96, "%s:%u", host, port);
}

/* Bind a listener, disabled, for a (the first of its addresses that
 * works), calling cb(arg) (NULL: none yet).  NULL after logging. */
static struct evconnlistener *
server_bind_addr(struct server *srv, const struct listen_addr *a, evconnlistener_cb cb, void *arg)
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
        l = evconnlistener_new_bind(srv->base, cb, arg,
                                    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
                                        LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_DISABLED,
                                    SERVER_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
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

/* Bind one listener, disabled, for a, serving svc (over TLS: svc_tls).
 * 0, or -1 after logging. */
static int
server_bind(struct server *srv, const struct listen_addr *a, const struct conn_service *svc,
            const struct conn_service *svc_tls)
{
    if (a->tls)
        svc = svc_tls;
    struct server_listener *sl = &srv->listeners[srv->nlisteners];
    sl->srv = srv;
    sl->svc = svc;
    struct evconnlistener *l = server_bind_addr(srv, a, server_accept_cb, sl);
    if (l == NULL)
        return -1;
    evconnlistener_set_error_cb(l, server_accept_error_cb);
    sl->l = l;
    server_describe_bound(l, a->tls, sl->bound);
    srv->nlisteners++;
    return 0;
}

/* metrics_render_fn: the server's figures, as stats.c writes them. */
static void
server_metrics_render(void *arg, bool om, struct stats_buf *out)
{
    static const char *names[STATS_MAX_COMMANDS];
    struct server *srv = arg;
    size_t n = cmd_count();
    for (size_t i = 0; i < n; i++)
        names[i] = cmd_name(i);
    const struct stats_source src = {
        .core = srv->ctx.core,
        .cmdlog = srv->cmdlog,
        .counted = &srv->stats,
        .commands = names,
        .ncommands = n,
        .connections = conn_count(srv->conns),
        .readonly = srv->ctx.readonly,
        .faktory = srv->opts->faktory_listen.n > 0,
        .max_queues = srv->opts->metrics_max_queues,
        .max_memory = srv->opts->max_memory,
        .now_ms = util_now_ms(),
        .started_ms = srv->started_ms,
        .version = PACKAGE_VERSION,
        .allocator = alloc_name(),
    };
    stats_render(&src, om, out);
}

/* metrics_ready_fn: replay done, listeners open, writable, not stopping. */
static const char *
server_metrics_ready(void *arg)
{
    struct server *srv = arg;
    if (srv->stopping)
        return "stopping";
    if (!srv->accepting)
        return "starting: replaying the command log";
    if (srv->ctx.readonly)
        return "read-only: command log write failed";
    return NULL;
}

int
server_listen_metrics(struct server *srv)
{
    const struct listen_set *set = &srv->opts->metrics_listen;
    if (set->n == 0)
        return 0;
    const struct metrics_config cfg = {server_metrics_render,
                                       server_metrics_ready,
                                       srv,
                                       srv->tls ? tls_http_bev : NULL,
                                       srv->tls,
                                       srv->opts->max_connections};
    srv->metrics = metrics_new(srv->base, &cfg);
    if (srv->metrics == NULL)
        return -1;
    for (size_t i = 0; i < set->n; i++) {
        struct evconnlistener *l = server_bind_addr(srv, &set->addr[i], NULL, NULL);
        if (l == NULL)
            return -1;
        server_describe_bound(l, set->addr[i].tls, srv->metrics_bound[srv->nmetrics]);
        if (metrics_add_listener(srv->metrics, l, set->addr[i].tls) != 0)
            return -1;
        srv->nmetrics++;
    }
    return 0;
}

/* The first line of a password file into line (cap bytes, its end of line
 * cut); what names the password in errors.  0, or -1 (logged). */
static int
server_read_password(const char *file, const char *what, char *line, size_t cap)
{
    FILE *fp = fopen(file, "r");
    if (fp == NULL || fgets(line, (int)cap, fp) == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot read the %s password file=%s error=\"%s\"", what, file,
               fp == NULL ? strerror(errno) : "it is empty");
        if (fp != NULL)
            fclose(fp);
        return -1;
    }
    fclose(fp);
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0') {
        wq_log(LOG_LVL_ERROR, "the %s password file=%s starts with an empty line", what, file);
        return -1;
    }
    return 0;
}

int
server_faktory_password(struct server *srv)
{
    const char *file = srv->opts->faktory_password_file;
    char line[4096] = "";
    if (file == NULL) {
        const char *env = getenv("FAKTORY_PASSWORD");
        if (env == NULL || env[0] == '\0')
            return 0;
        snprintf(line, sizeof line, "%s", env);
    } else if (server_read_password(file, "Faktory", line, sizeof line) != 0) {
        return -1;
    }
    srv->faktory_password = wq_malloc(strlen(line) + 1);
    strcpy(srv->faktory_password, line);
    srv->fwp.password = srv->faktory_password;
    return 0;
}

int
server_workq_password(struct server *srv)
{
    const char *file = srv->opts->password_file;
    char line[CMD_AUTH_MAX_PASSWORD + 2];
    if (file == NULL)
        return 0;
    int rc = server_read_password(file, "Workq", line, sizeof line);
    if (rc == 0 && !cmd_auth_valid_password(line)) {
        wq_log(LOG_LVL_ERROR,
               "the Workq password in file=%s is not one word of at most %d printable "
               "characters",
               file, CMD_AUTH_MAX_PASSWORD);
        rc = -1;
    }
    if (rc == 0 && srv->ctx.auth == NULL)
        srv->ctx.auth = cmd_auth_new(line);
    else if (rc == 0)
        cmd_auth_set_password(srv->ctx.auth, line);
    OPENSSL_cleanse(line, sizeof line);
    return rc;
}

int
server_tls(struct server *srv)
{
    const struct options *o = srv->opts;
    const struct listen_set *sets[] = {&o->listen, &o->faktory_listen, &o->metrics_listen};
    bool needed = false;
    for (size_t i = 0; i < WQ_ARRAY_LEN(sets); i++)
        for (size_t j = 0; j < sets[i]->n; j++)
            needed |= sets[i]->addr[j].tls;
    if (!needed)
        return 0;
    srv->tls = tls_new(o->tls_cert, o->tls_key, o->tls_ca);
    if (srv->tls == NULL)
        return -1;
    srv->workq_tls.transport_arg = srv->faktory_tls.transport_arg = srv->tls;
    return 0;
}

int
server_listen(struct server *srv)
{
    for (size_t i = 0; i < srv->opts->listen.n; i++)
        if (server_bind(srv, &srv->opts->listen.addr[i], &srv->workq, &srv->workq_tls) != 0)
            return -1;
    for (size_t i = 0; i < srv->opts->faktory_listen.n; i++)
        if (server_bind(srv, &srv->opts->faktory_listen.addr[i], &srv->faktory,
                        &srv->faktory_tls) != 0)
            return -1;
    return 0;
}

/* SIGHUP: reopen the log file, which logrotate has moved away. */
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
    if (srv->opts->password_file == NULL)
        return;
    if (server_workq_password(srv) == 0)
        wq_log(LOG_LVL_INFO, "Workq password re-read file=%s", srv->opts->password_file);
    else
        wq_log(LOG_LVL_ERROR, "keeping the Workq password in use");
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
    srv->ctx.core = core_new(srv->started_ms);
    fjobs_new(srv->ctx.core, srv->started_ms); /* served or not: the log may hold its jobs */
    srv->ctx.started_ms = srv->started_ms;
    srv->ctx.max_line = opts->max_line;
    srv->ctx.max_payload = opts->max_payload;
    srv->ctx.faktory = opts->faktory_listen.n > 0;
    srv->ctx.stats = &srv->stats;
    srv->ctx.auth_guard = auth_guard_new();
    srv->workq = (struct conn_service){
        .proto = &cmd_protocol,
        .ctx = &srv->ctx,
        .pull_min = opts->max_line + 2, /* a line and its CR LF */
        .max_request = opts->max_line + 2 + opts->max_payload + 2,
    };
    /* A Faktory command line carries its job: room for a line and a payload. */
    size_t fwp_line = opts->max_line + opts->max_payload;
    srv->fwp = (struct fwp_ctx){
        .core = srv->ctx.core,
        .auth_guard = srv->ctx.auth_guard,
        .max_line = fwp_line,
        .max_job = WQ_MAX(opts->max_payload, 256u),
        .backoff_unit_ms = opts->faktory_backoff_unit_ms,
        .now_ms = &srv->ctx.now_ms,
        .readonly = &srv->ctx.readonly,
        .clients = &srv->ctx.clients,
        .started_ms = srv->started_ms,
        .rng = srv->started_ms | 1,
    };
    list_init(&srv->fwp.mutations);
    fjobs_set_expired(srv->ctx.core, fwp_reservation_expired, &srv->fwp);
    fjobs_set_dead_limits(srv->ctx.core, opts->faktory_dead_ttl_ms, opts->faktory_dead_max);
    srv->faktory = (struct conn_service){
        .proto = &fwp_protocol,
        .ctx = &srv->fwp,
        .pull_min = fwp_line + 2,
        .max_request = fwp_line + 2,
    };
    /* The same protocols over TLS; server_tls gives them their context. */
    srv->workq_tls = srv->workq;
    srv->faktory_tls = srv->faktory;
    srv->workq_tls.transport = srv->faktory_tls.transport = tls_accept_bev;
    srv->workq_tls.transport_failed = srv->faktory_tls.transport_failed = tls_log_failure;
    srv->hooks = (struct conn_hooks){srv, server_conns_begin, server_conns_end, server_conns_gone};
    srv->fwp.base = srv->base;
    srv->fwp.hooks = &srv->hooks;
    srv->conns = conn_set_new(srv->base, &srv->hooks,
                              WQ_MAX(cmd_protocol.state_size, fwp_protocol.state_size));
    srv->timer = evtimer_new(srv->base, server_timer_cb, srv);
    srv->sig_int = evsignal_new(srv->base, SIGINT, server_signal_cb, srv);
    srv->sig_term = evsignal_new(srv->base, SIGTERM, server_signal_cb, srv);
    srv->stop_ev = evtimer_new(srv->base, server_stop_deadline_cb, srv);
    srv->accept_ev = evtimer_new(srv->base, server_accept_resume_cb, srv);
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
    srv->ctx.core->max_bytes = opts->max_memory;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit is a write error, not a death */
    return 0;
}

/* Take the log's read-only state, and send the replies it has released
 * since the last time. */
static void
server_cmdlog_news(struct server *srv)
{
    bool was_readonly = srv->ctx.readonly;
    srv->ctx.readonly = cmdlog_readonly(srv->cmdlog);
    if (srv->ctx.readonly != was_readonly)
        wq_log(LOG_LVL_WARN, "read-only mode=%s", srv->ctx.readonly ? "on" : "off");
    uint64_t released = cmdlog_released(srv->cmdlog);
    if (released != srv->cmdlog_released) {
        srv->cmdlog_released = released;
        conn_release_held(srv->conns, released);
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
    if (cmdlog_replay(srv->cmdlog, &core_replay_ops, srv->ctx.core, util_now_ms()) != 0)
        return EX_CONFIG;
    core_clear_totals(srv->ctx.core); /* the metrics count from here */
    if (cmdlog_start(srv->cmdlog) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot start its threads");
        return EX_CONFIG;
    }
    srv->cmdlog_ev = event_new(srv->base, cmdlog_event_fd(srv->cmdlog), EV_READ | EV_PERSIST,
                               server_cmdlog_cb, srv);
    event_add(srv->cmdlog_ev, NULL);
    srv->cmdlog_retry_ev = evtimer_new(srv->base, server_cmdlog_retry_cb, srv);
    srv->ctx.core->record = cmdlog_append;
    srv->ctx.core->record_arg = srv->cmdlog;
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
    metrics_free(srv->metrics);
    conn_set_free(srv->conns);
    for (size_t i = 0; i < srv->nlisteners; i++)
        evconnlistener_free(srv->listeners[i].l);
    if (srv->timer != NULL)
        event_free(srv->timer);
    if (srv->sig_int != NULL)
        event_free(srv->sig_int);
    if (srv->sig_term != NULL)
        event_free(srv->sig_term);
    if (srv->sig_hup != NULL)
        event_free(srv->sig_hup);
    if (srv->idle_ev != NULL)
        event_free(srv->idle_ev);
    if (srv->stop_ev != NULL)
        event_free(srv->stop_ev);
    if (srv->accept_ev != NULL)
        event_free(srv->accept_ev);
    if (srv->cmdlog_ev != NULL)
        event_free(srv->cmdlog_ev);
    if (srv->cmdlog_retry_ev != NULL)
        event_free(srv->cmdlog_retry_ev);
    if (srv->ctx.core != NULL)
        srv->ctx.core->record = NULL;
    cmdlog_close(srv->cmdlog); /* writes and syncs what is left */
    core_free(srv->ctx.core);
    wq_free(srv->faktory_password);
    cmd_auth_free(srv->ctx.auth);
    auth_guard_free(srv->ctx.auth_guard);
    tls_free(srv->tls);
    if (srv->base != NULL)
        event_base_free(srv->base);
    memset(srv, 0, sizeof *srv);
}
