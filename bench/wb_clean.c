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
 * measured; the report gives the count removed (bench.cleaned). */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

/* r->job of a QUEUE REMOVE: this bit and the name's index.  Job indices
 * stay below it (BENCH_MAX_ALL_JOBS). */
#define CLEAN_NAME_BIT 0x80000000u
_Static_assert(BENCH_MAX_ALL_JOBS < CLEAN_NAME_BIT, "job indices must stay below CLEAN_NAME_BIT");

/* May job ji be on the server, for the clean-up to remove (workq, Faktory)? */
static bool
clean_job_left(const struct bench *b, uint32_t ji)
{
    const struct wb_job *j = &b->jobs[ji];
    if (!(j->flags & WB_JOB_SENT))
        return false;
    if (b->opt.proto == WB_PROTO_FAKTORY) {
        bool clean_end = !b->timed_out && !b->interrupted && b->errors == 0;
        return !(j->flags & WB_JOB_DONE) && ((j->flags & WB_JOB_LEASED) || !clean_end);
    }
    return b->opt.workload != WL_RUN || wb_jobs_is_backlog(b, j);
}

/* Queue the next clean-up request on c; false when none is left. */
static bool
clean_send_next(struct wb_conn *c)
{
    struct bench *b = c->b;
    char line[96], id[BENCH_ID_LEN + 1];
    int n;
    if (b->opt.proto == WB_PROTO_BEANSTALKD) {
        while (b->clean_next <= b->bidmap_mask) {
            const struct wb_bs_slot *s = &b->bidmap[b->clean_next++];
            if (s->bid == 0 || s->job == BENCH_JOB_NONE || (b->jobs[s->job].flags & WB_JOB_DONE))
                continue;
            n = snprintf(line, sizeof line, "delete %" PRIu64 "\r\n", s->bid);
            wb_conn_send(c, line, (size_t)n);
            wb_conn_push(c, OP_CLEAN, s->job);
            return true;
        }
        return false;
    }
    bool fk = b->opt.proto == WB_PROTO_FAKTORY;
    while (b->clean_next < (size_t)b->opt.jobs + b->nbacklog) {
        uint32_t ji = (uint32_t)b->clean_next++;
        if (!clean_job_left(b, ji))
            continue;
        uuid_unparse_lower(b->jobs[ji].id, id);
        n = snprintf(line, sizeof line, fk ? "ACK {\"jid\":\"%s\"}\r\n" : "delete %s\r\n", id);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_CLEAN, ji);
        return true;
    }
    if (!fk || b->clean_name >= b->opt.names)
        return false;
    uint32_t k = b->clean_name++;
    n = snprintf(line, sizeof line, "QUEUE REMOVE %s\r\n", b->names[k]);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_CLEAN, CLEAN_NAME_BIT | k);
    return true;
}

void
wb_clean_fill(struct wb_conn *c)
{
    while (c->count < BENCH_CLEAN_DEPTH && clean_send_next(c))
        ;
}

void
wb_clean_start(struct bench *b)
{
    wb_run_fill_all(b);
    wb_clean_check_idle(b);
}

void
wb_clean_check_idle(struct bench *b)
{
    if (b->inflight != 0 || b->nready < b->nconns)
        return;
    wb_run_fill_all(b);
    if (b->inflight != 0)
        return;
    b->clean_done = true;
    wb_stop(b);
}

/* delete: +OK or -NOT-FOUND (beanstalkd: DELETED or NOT_FOUND); ACK and
 * QUEUE REMOVE: +OK. */
void
wb_clean_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    bool bs = b->opt.proto == WB_PROTO_BEANSTALKD, fk = b->opt.proto == WB_PROTO_FAKTORY;
    if (wb_frame_is(f, bs ? "DELETED" : "+OK")) {
        /* Faktory: an ACK counts for a job known to be working; the others
         * are counted with their queue. */
        if (fk && (r->job & CLEAN_NAME_BIT))
            b->cleaned += b->clean_enqueued[r->job & ~CLEAN_NAME_BIT];
        else if (!fk || (b->jobs[r->job].flags & WB_JOB_LEASED))
            b->cleaned++;
        return;
    }
    if (!fk && wb_frame_is(f, bs ? "NOT_FOUND" : "-NOT-FOUND"))
        return;
    wb_error_reply(c, r, f, "unexpected reply in the clean-up");
}

/* Is there anything to remove?  (Faktory: counts what each name holds.) */
static bool
clean_needed(struct bench *b)
{
    uint32_t total = b->opt.jobs + b->nbacklog;
    bool any = false;
    if (b->opt.proto == WB_PROTO_BEANSTALKD)
        return b->bidmap_used > 0;
    if (b->opt.proto == WB_PROTO_FAKTORY)
        b->clean_enqueued = wb_xcalloc(b->opt.names, sizeof *b->clean_enqueued);
    for (uint32_t ji = 0; ji < total; ji++) {
        const struct wb_job *j = &b->jobs[ji];
        any = any || clean_job_left(b, ji);
        if (b->clean_enqueued != NULL && (j->flags & WB_JOB_SENT)) {
            any = true; /* its queue, at least, is to be removed */
            if ((j->flags & WB_JOB_ACKED) && !(j->flags & WB_JOB_LEASED))
                b->clean_enqueued[j->name]++;
        }
    }
    return any;
}

/* Faktory runs the jobs of `at` by their time: a schedule run's last ones
 * are enqueued (and so removable by QUEUE REMOVE) up to
 * BENCH_SCHED_AHEAD_MS after its end. */
static void
clean_wait_for_schedule(const struct bench *b)
{
    if (b->opt.proto != WB_PROTO_FAKTORY || b->opt.workload != WL_SCHEDULE)
        return;
    uint64_t until = b->t_end_ns + (BENCH_SCHED_AHEAD_MS + 100) * 1000000ull, now = wb_now_ns();
    if (now < until) {
        struct timespec ts = {(time_t)((until - now) / 1000000000u),
                              (long)((until - now) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

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
    if (!clean_needed(b)) {
        b->clean_done = true;
        return;
    }
    clean_wait_for_schedule(b);
    uint64_t t0 = wb_now_ns();
    b->phase = PH_CLEAN;
    b->nconns = b->opt.conns < BENCH_CLEAN_CONNS ? b->opt.conns : BENCH_CLEAN_CONNS;
    /* A fresh --timeout, and Ctrl-C (again) cuts the clean-up short. */
    if (b->opt.timeout_s > 0) {
        struct timeval tv = {(time_t)b->opt.timeout_s, 0};
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
