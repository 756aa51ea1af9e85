/* wb_clean.c - workq-bench's clean-up: what a run leaves on the server is
 * removed at its end (also after --timeout and Ctrl-C), unless --keep.
 *
 * The run's connections are closed first, so that the server lets go of
 * what they held (a waiting lease is cancelled, a job beanstalkd had
 * reserved for them is released), then BENCH_CLEAN_CONNS new ones, set up
 * as the run's were (auth, HELLO), each with up to BENCH_CLEAN_DEPTH
 * requests in flight:
 *   workq: `delete` every job whose add, schedule or run was sent, the
 *   backlog too (a completed job stays until its TTL otherwise), except
 *   run jobs, which the server removes after their reply or with their
 *   client;
 *   beanstalkd: `delete` every job whose id an INSERTED gave and that the
 *   run did not delete;
 *   Faktory: ACK every job the run fetched and did not ACK (after a run
 *   cut short or with errors, every job it pushed and did not ACK: a FETCH
 *   whose reply was not read holds a job too, and ACK of a job that is not
 *   working is +OK), then `QUEUE REMOVE` each of its queue names (after
 *   the latest `at` of a schedule run has passed), which drops what is
 *   still enqueued.
 * NOT-FOUND is fine: the job never was, or is gone.  Nothing here is
 * measured; the report gives the count removed (bench.cleaned).
 *
 * What to remove, the requests and the checks of their replies are the
 * protocol's (clean_prepare, clean_send and reply in bench.proto); this
 * file has the connections, the clock and the end, and the connections
 * call it back through clean_driver (bench.driver). */
#include "wb.h"
#include "wb_proto.h"

#include <stdio.h>

#include <event2/event.h>

/* Queue what c may send in the clean-up: up to BENCH_CLEAN_DEPTH
 * requests, while the protocol has any left. */
static void
clean_fill(struct wb_conn *c)
{
    if (c->closed || !c->ready)
        return;
    while (c->count < BENCH_CLEAN_DEPTH && c->b->proto->clean_send(c))
        ;
}

/* Let every clean-up connection send what it may. */
static void
clean_fill_all(struct bench *b)
{
    for (unsigned i = 0; i < b->nconns; i++)
        clean_fill(&b->conns[i]);
}

/* Nothing in flight and every connection up: send more, or the clean-up
 * is done. */
static void
clean_check_idle(struct bench *b)
{
    if (b->inflight != 0 || b->nready < b->nconns)
        return;
    clean_fill_all(b);
    if (b->inflight != 0)
        return;
    b->clean_done = true;
    wb_stop(b);
}

/* Every clean-up connection is up: start. */
static void
clean_start(struct bench *b)
{
    clean_fill_all(b);
    clean_check_idle(b);
}

/* The clean-up creates no job, so it has no ticket hook. */
static const struct wb_driver clean_driver = {
    .start = clean_start, .fill = clean_fill, .idle = clean_check_idle, .ticket = NULL};

/* Close the run's connections, let the protocol say whether anything is
 * left, then open the clean-up's and run the event loop until they are
 * done, --timeout or Ctrl-C. */
void
wb_clean(struct bench *b)
{
    if (b->opt.keep)
        return;
    for (unsigned i = 0; i < b->opt.conns; i++) {
        struct wb_conn *c = &b->conns[i];
        wb_conn_clear(c);
        *c = (struct wb_conn){.b = b, .idx = i, .tube = UINT32_MAX, .closed = true};
    }
    b->ndirty = b->nready = 0;
    b->inflight = b->prod_inflight = b->leases_inflight = 0;
    event_del(b->progress_ev);
    if (!b->proto->clean_prepare(b)) {
        b->clean_done = true;
        return;
    }
    uint64_t t0 = wb_now_ns();
    b->phase = PH_CLEAN;
    b->driver = &clean_driver;
    b->nconns = b->opt.conns < BENCH_CLEAN_CONNS ? b->opt.conns : BENCH_CLEAN_CONNS;
    /* A fresh --timeout, BENCH_CLEAN_TIMES as long (removing what a run
     * added may take longer than adding it did, on a busy machine), and
     * Ctrl-C (again) cuts the clean-up short. */
    if (b->opt.timeout_s > 0) {
        struct timeval tv = {(time_t)b->opt.timeout_s * BENCH_CLEAN_TIMES, 0};
        event_add(b->timeout_ev, &tv);
    }
    event_add(b->sigint_ev, NULL);
    for (unsigned i = 0; i < b->nconns; i++) {
        b->conns[i].closed = false;
        wb_conn_open(b, &b->conns[i]);
    }
    event_base_dispatch(b->base);
    b->clean_ns = wb_now_ns() - t0;
    if (!b->clean_done)
        fprintf(stderr,
                "workq-bench: the clean-up did not finish: jobs of this run (queue names "
                "bench.%06x.*) may be left on the server\n",
                b->tag);
}
