/* workq-bench.c - load generator for workq-server, in the spirit of
 * redis-benchmark, that can also drive beanstalkd for comparison, and
 * workq-server's Faktory listener.
 *
 * One thread, one libevent loop, N connections.  Each connection keeps up to
 * P requests in flight and a FIFO of what it expects back, so every reply is
 * parsed completely and checked against the request that caused it: a reply
 * that is not exactly what the protocol promises is an error, never
 * throughput.  A job's payload is its id's text repeated (a deterministic
 * function of the id), so a leased payload is checked without storing it.
 *
 * Standalone on purpose: no code from src/, only libevent_core, libuuid and
 * (for the Faktory password hash) libcrypto.
 * Its files are bench/wb_*.c (see wb.h for their floors); this one, on the
 * top floor, has main, the set-up and teardown of a run, and its timers
 * and signal. */
#include "wb.h"
#include "wb_proto.h" /* wb_protos */

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <event2/event.h>

/* The progress line, rewritten every BENCH_PROGRESS_MS on a terminal. */
static void
bench_progress_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    wb_report_progress(arg);
}

/* --timeout expired: report what was done and fail (in the clean-up:
 * leave the rest). */
static void
bench_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bench *b = arg;
    b->timed_out = b->timed_out || b->phase != PH_CLEAN;
    wb_stop(b);
}

/* Ctrl-C: report what was done so far and fail; the clean-up follows,
 * and a second Ctrl-C cuts it short. */
static void
bench_sigint_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bench *b = arg;
    b->interrupted = b->interrupted || b->phase != PH_CLEAN;
    wb_stop(b);
}

/* Resolve the address, make the names and the jobs, let the protocol
 * prepare (its lease line, its id map) and make the connections; nothing
 * is connected yet. */
static void
bench_init(struct bench *b)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(b->opt.host, b->opt.port, &hints, &b->ai);
    if (rc != 0) {
        fprintf(stderr, "workq-bench: %s: %s\n", b->opt.host, gai_strerror(rc));
        exit(1);
    }
    snprintf(b->addr, sizeof b->addr, strchr(b->opt.host, ':') ? "[%s]:%s" : "%s:%s", b->opt.host,
             b->opt.port);
    b->rng = wb_now_ns() ^ ((uint64_t)getpid() << 32);
    b->proto = wb_protos[b->opt.proto];
    b->jobs_expected = b->opt.jobs;
    b->nbacklog = b->opt.backlog * b->opt.names; /* opt_finish keeps it in range */
    b->scratch_len = 512 + (size_t)b->opt.payload + 2;
    b->scratch = wb_xcalloc(1, b->scratch_len);
    wb_jobs_init(b);
    b->proto->init(b);
    b->conns = wb_xcalloc(b->opt.conns, sizeof *b->conns);
    b->nconns = b->opt.conns;
    b->dirty_cap = b->opt.conns;
    b->dirty = wb_xcalloc(b->dirty_cap, sizeof *b->dirty);
    for (unsigned i = 0; i < b->opt.conns; i++) {
        b->conns[i].b = b;
        b->conns[i].idx = i;
        b->conns[i].tube = UINT32_MAX;
    }
}

/* Free everything, so valgrind can vouch for the rest. */
static void
bench_free(struct bench *b)
{
    for (unsigned i = 0; i < b->opt.conns; i++)
        wb_conn_clear(&b->conns[i]);
    for (size_t i = 0; i < b->nheld; i++)
        free(b->held[i].data);
    free(b->held);
    free(b->conns);
    free(b->dirty);
    free(b->jobs);
    free(b->tickets);
    free(b->starved);
    free(b->idmap);
    free(b->bidmap);
    free(b->names);
    free(b->lease_line);
    free(b->scratch);
    free(b->opt.password);
    free(b->opt.addr_buf);
    free(b->clean_enqueued);
    event_free(b->progress_ev);
    event_free(b->timeout_ev);
    event_free(b->sigint_ev);
    event_base_free(b->base);
    wb_tls_clear(b);
    freeaddrinfo(b->ai);
    free(b);
}

/* Jobs that were accepted but neither done nor failed: a server that loses
 * jobs must not pass. */
static uint64_t
bench_incomplete(struct bench *b)
{
    if (b->timed_out || b->interrupted)
        return 0;
    uint64_t done = wb_jobs_done(b),
             incomplete = b->jobs_expected > done ? b->jobs_expected - done : 0;
    if (b->held_open > 0)
        wb_error(b, "%zu reserved payloads never matched a put", b->held_open);
    if (incomplete > 0)
        wb_error(b, "%" PRIu64 " jobs were accepted but never completed", incomplete);
    return incomplete;
}

int
main(int argc, char **argv)
{
    struct bench *b = wb_xcalloc(1, sizeof *b);
    wb_opts_parse(&b->opt, argc, argv);
    signal(SIGPIPE, SIG_IGN);
    b->progress = !b->opt.quiet && isatty(STDERR_FILENO);
    bench_init(b);
    if (b->opt.tls)
        wb_tls_init(b);
    b->base = event_base_new();
    if (b->base == NULL) {
        fprintf(stderr, "workq-bench: cannot create an event base\n");
        return 1;
    }
    b->progress_ev = event_new(b->base, -1, EV_PERSIST, bench_progress_cb, b);
    b->timeout_ev = evtimer_new(b->base, bench_timeout_cb, b);
    b->sigint_ev = evsignal_new(b->base, SIGINT, bench_sigint_cb, b);
    event_add(b->sigint_ev, NULL);
    if (b->opt.timeout_s > 0) {
        struct timeval tv = {(time_t)b->opt.timeout_s, 0};
        event_add(b->timeout_ev, &tv);
    }
    wb_run(b);
    if (b->progress)
        fprintf(stderr, "\r%-79s\r", "");
    if (b->fatal != 0) {
        int fatal = b->fatal;
        bench_free(b);
        return fatal;
    }
    if (b->timed_out)
        wb_error(b, "timed out after %" PRIu32 " s", b->opt.timeout_s);
    uint64_t incomplete = bench_incomplete(b);
    wb_clean(b);
    wb_report_print(b, incomplete);
    bool failed = b->errors > 0 || incomplete > 0 || b->timed_out || b->interrupted ||
                  (!b->opt.keep && !b->clean_done);
    bench_free(b);
    return failed ? BENCH_EXIT_FAILED : 0;
}
