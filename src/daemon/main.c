/* main.c - parse options, become a daemon, start the server, run it until a
 * stop signal.  The order matters: detach before any thread exists, bind
 * before dropping privileges, replay before accepting, and report ready
 * (systemd, the waiting parent of -d) only when clients can be served. */
#include "lib/wq.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "daemon/daemon.h"
#include "lib/log.h"
#include "daemon/options.h"
#include "daemon/server.h"

/* Log the start-up line: version, addresses, allocator, persistence. */
static void
main_log_started(const struct server *srv, const struct options *o)
{
    static const char *const sync_names[] = {"interval", "os", "always"};
    char listen[WQ_ARRAY_LEN(srv->bound) * (LISTEN_BOUND_MAX + 12)] = "";
    size_t n = 0;
    for (size_t i = 0; i < srv->nbound; i++) {
        const struct server_bound *b = &srv->bound[i];
        if (!b->protocol) /* the metrics endpoint has lines of its own */
            continue;
        n += (size_t)snprintf(listen + n, sizeof listen - n, "%s%s%s%s", n ? "," : "",
                              b->name ? b->name : "", b->name ? "=" : "", b->addr);
    }
    wq_log(LOG_LVL_INFO,
           "workq-server started version=%s pid=%ld listen=%s allocator=%s max_line=%zu "
           "max_payload=%llu max_connections=%llu idle_timeout_ms=%llu max_memory=%llu "
           "cmdlog=%s sync=%s sync_int_ms=%llu",
           PACKAGE_VERSION, (long)getpid(), listen, alloc_name(), o->max_line,
           (unsigned long long)o->max_payload, (unsigned long long)o->max_connections,
           (unsigned long long)o->idle_timeout_ms, (unsigned long long)o->max_memory,
           o->cmdlog.dir ? o->cmdlog.dir : "none", sync_names[o->cmdlog.sync],
           (unsigned long long)o->cmdlog.sync_int_ms);
}

/* After -user: a pidfile in a directory the user cannot write stays
 * behind at exit; say so now rather than at the exit. */
static void
main_check_pidfile_dir(const char *pidfile)
{
    if (pidfile == NULL)
        return;
    char dir[4096];
    const char *slash = strrchr(pidfile, '/');
    size_t n = slash == NULL ? 1 : slash == pidfile ? 1 : (size_t)(slash - pidfile);
    snprintf(dir, sizeof dir, "%.*s", (int)n, slash == NULL ? "." : pidfile);
    if (access(dir, W_OK) != 0)
        wq_log(LOG_LVL_WARN,
               "the pidfile cannot be removed at exit: its directory is not writable after "
               "dropping privileges path=%s",
               pidfile);
}

/* Set up srv up to the replayed command log, in start-up order; 0 or the
 * exit status (srv is then still to be cleared). */
static int
main_start(struct server *srv, const struct options *o)
{
    if (server_init(srv, o) != 0)
        return EX_SOFTWARE;
    if (server_tls(srv) != 0)
        return EX_CONFIG;
    int status = server_open_frontends(srv);
    if (status != 0)
        return status;
    if (server_listen(srv) != 0)
        return EX_UNAVAILABLE;
    if (o->pidfile != NULL && daemon_write_pidfile(o->pidfile) != 0)
        return EX_CANTCREAT;
    if (o->user != NULL) {
        status = daemon_drop_user(o->user);
        if (status != 0)
            return status;
        main_check_pidfile_dir(o->pidfile);
    }
    return server_open_cmdlog(srv);
}

/* Everything from opening the log to the end of the loop; returns the
 * exit status. */
static int
main_serve(const struct options *o)
{
    if (log_open(o->log_target, o->log_file) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot open log file path=%s error=\"%s\"", o->log_file,
               strerror(errno));
        return EX_CANTCREAT;
    }

    alloc_give_back(); /* detached by now: its thread may start */
    struct server srv;
    int status = main_start(&srv, o);
    if (status != 0) {
        server_clear(&srv);
        if (o->pidfile != NULL)
            daemon_remove_pidfile(o->pidfile);
        return status;
    }

    server_accept(&srv);
    /* Detached with nowhere else to log: syslog from now on.  Until here
     * errors went to the terminal the waiting parent of -d still holds. */
    if (o->daemonize && o->log_target == LOG_TO_STDERR)
        log_open(LOG_TO_SYSLOG, NULL);
    main_log_started(&srv, o);
    /* Lines on stdout that scripts and tests read to learn the ports. */
    for (size_t i = 0; i < srv.nbound; i++) { /* in the table's order: Workq's first */
        const struct server_bound *b = &srv.bound[i];
        printf("workq-server %s%slistening on %s\n", b->name ? b->name : "", b->name ? " " : "",
               b->addr);
    }
    fflush(stdout);
    char state[160];
    snprintf(state, sizeof state, "READY=1\nSTATUS=listening on %s\nMAINPID=%ld", srv.bound[0].addr,
             (long)getpid());
    daemon_notify(state);
    daemon_ready();

    server_run(&srv);
    server_clear(&srv); /* writes and syncs the command log */
    if (o->pidfile != NULL)
        daemon_remove_pidfile(o->pidfile);
    wq_log(LOG_LVL_INFO, "workq-server stopped");
    return 0;
}

int
main(int argc, char **argv)
{
    struct options opts;
    int status = options_parse(&opts, argc, argv);
    if (status >= 0) {
        options_free(&opts);
        return status;
    }
    wq_log_level = opts.log_level;
    if (opts.daemonize && daemon_detach() != 0) {
        options_free(&opts);
        return EX_OSERR;
    }
    status = main_serve(&opts);
    daemon_failed(status);
    log_close();
    options_free(&opts);
    return status;
}
