/* wb_run.c - a workq-bench run: the roles of the connections, the phases
 * (backlog, prefill, measure), what each connection sends next, the lease
 * budget and the tickets, and the counts of jobs created and done.
 *
 * How a run goes.
 *
 * Connect: all connections at once; beanstalkd consumers first `watch` every
 * tube, and Faktory connections read the greeting and say HELLO.  Backlog
 * (--backlog, not measured): every connection adds its share of N jobs per
 * name at the lowest priority.  Prefill (lease-complete only, not
 * measured): every connection adds its share of the jobs.  Measure:
 * producers take the next job from a shared counter and add/schedule/run/
 * put/PUSH it; consumers lease (reserve, FETCH) and complete (delete, ACK)
 * what they get.
 * Each phase ends when nothing is in flight and no connection may send: then
 * every reply has been read.
 *
 * Consumers never have more leases in flight than there are jobs left to
 * lease (the lease budget, bench_lease_budget), so at the end no lease is
 * left waiting for a job that will never come, and a lease that comes back
 * empty after all producers are done means the server lost jobs.  Jobs
 * whose creation failed leave the budget (wb_jobs_lost), so errors do not turn
 * into hangs; --timeout is the last resort.
 *
 * With a backlog, a lease must never find the queue without a measured job,
 * or it would take a backlog job (the highest-priority ready job wins, and
 * workq picks among the listed names at random, whatever their priorities).
 * So every accepted measured job becomes a ticket, and a consumer leases
 * only with a ticket, from that job's name alone, and takes only a job of
 * that name (beanstalkd: reserve, which takes the most urgent job of all
 * watched tubes).  A consumer without a ticket waits in bench.starved
 * until an add is accepted.  Leases then never wait for producers, which in
 * cycle leaves that wait out of lease latency. */
#include "wb.h"
#include "wb_proto.h"

#include <event2/event.h>

/* Has every job been sent and every producing request answered? */
static bool
bench_producers_done(const struct bench *b)
{
    return b->next_job == b->opt.jobs && b->prod_inflight == 0;
}

/* What producers send in this workload and protocol. */
enum wb_op
wb_run_produce_op(const struct bench *b)
{
    if (b->opt.proto == WB_PROTO_BEANSTALKD)
        return OP_PUT;
    if (b->opt.proto == WB_PROTO_FAKTORY)
        return OP_PUSH;
    if (b->opt.workload == WL_RUN)
        return OP_RUN;
    if (b->opt.workload == WL_SCHEDULE)
        return OP_SCHEDULE;
    return OP_ADD;
}

/* Has this phase jobs left for producers to send? */
static bool
bench_produce_left(const struct bench *b)
{
    if (b->phase == PH_BACKLOG)
        return b->next_backlog < b->nbacklog;
    return b->next_job < b->opt.jobs;
}

/* Hand the next job to producer c.  Names rotate so that all K names are
 * used: producer i takes names i, i + nprod, ... (a fixed one if K <= nprod).
 * Backlog jobs have their names already, in blocks: producers change names
 * (and beanstalkd tubes) together, once per name. */
static void
producer_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    uint32_t ji;
    if (b->phase == PH_BACKLOG) {
        ji = b->opt.jobs + b->next_backlog++;
    } else {
        ji = b->next_job++;
        b->jobs[ji].name = (uint16_t)c->name;
        c->name += b->nprod;
        if (c->name >= b->opt.names)
            c->name = c->prod_idx % b->opt.names;
    }
    struct wb_job *j = &b->jobs[ji];
    char id[BENCH_ID_LEN + 1];
    j->flags |= WB_JOB_SENT;
    uuid_unparse_lower(j->id, id);
    switch (b->opt.proto) {
    case WB_PROTO_WORKQ:
        wb_wq_produce(c, ji, id);
        break;
    case WB_PROTO_BEANSTALKD:
        wb_bs_produce(c, ji, id);
        break;
    default:
        wb_fk_produce(c, ji, id);
        break;
    }
}

/* Ask for a job: workq and Faktory with a ticket (a job index, else
 * BENCH_JOB_NONE), beanstalkd over the watched tubes. */
static void
consumer_lease(struct wb_conn *c, uint32_t ticket)
{
    switch (c->b->opt.proto) {
    case WB_PROTO_WORKQ:
        wb_wq_lease(c, ticket);
        break;
    case WB_PROTO_BEANSTALKD:
        wb_bs_reserve(c);
        break;
    default:
        wb_fk_fetch(c, ticket);
        break;
    }
}

/* May a consumer send another lease?  Never more leases than jobs left to
 * lease, so no lease is left waiting for a job that will not come. */
static bool
bench_lease_budget(const struct bench *b)
{
    return !b->drained && b->leases_inflight + b->leased < b->jobs_expected;
}

static void consumer_starve(struct wb_conn *c);

/* Send what c may send now, up to its pipeline depth.  In `run`, a worker
 * keeps at most one lease in flight: a parked lease holds back every later
 * command on its connection, and a `complete` stuck behind it would keep
 * its run client (and so the next job) waiting.  With a backlog, each lease
 * takes a ticket, and a consumer finding none waits until bench_ticket. */
void
wb_run_fill(struct wb_conn *c)
{
    struct bench *b = c->b;
    if (c->closed || !c->ready || b->phase == PH_CONNECT || b->phase == PH_DONE)
        return;
    if (b->phase == PH_CLEAN) {
        wb_clean_fill(c);
        return;
    }
    if (c->producer) {
        uint32_t depth = b->opt.pipeline;
        if (b->phase == PH_PREFILL && depth < BENCH_PREFILL_DEPTH)
            depth = BENCH_PREFILL_DEPTH;
        if (b->phase == PH_BACKLOG && depth < BENCH_BACKLOG_DEPTH)
            depth = BENCH_BACKLOG_DEPTH;
        while (c->work < depth && bench_produce_left(b))
            producer_send(c);
        return;
    }
    uint32_t lease_max = b->opt.workload == WL_RUN ? 1 : b->opt.pipeline;
    while (c->work < b->opt.pipeline && c->leases < lease_max && bench_lease_budget(b)) {
        if (b->tickets == NULL) {
            consumer_lease(c, BENCH_JOB_NONE);
        } else if (b->ticket_head < b->nticket) {
            consumer_lease(c, b->tickets[b->ticket_head++]);
        } else {
            consumer_starve(c);
            break;
        }
    }
}

/* Consumer c could lease but has no ticket: queue it for the next one. */
static void
consumer_starve(struct wb_conn *c)
{
    struct bench *b = c->b;
    if (c->starved)
        return;
    c->starved = true;
    b->starved[(b->starved_head + b->nstarved++) % b->opt.conns] = c;
}

/* Measured job ji was accepted.  With a backlog it becomes a ticket, and
 * the consumers that waited longest for one may lease again. */
static void
bench_ticket(struct bench *b, uint32_t ji)
{
    if (b->tickets == NULL)
        return;
    b->tickets[b->nticket++] = ji;
    while (b->nstarved > 0 && b->ticket_head < b->nticket) {
        struct wb_conn *c = b->starved[b->starved_head];
        b->starved_head = (b->starved_head + 1) % b->opt.conns;
        b->nstarved--;
        c->starved = false;
        wb_run_fill(c);
    }
}

/* Let every connection send what it may (after a phase change or a failure). */
void
wb_run_fill_all(struct bench *b)
{
    for (unsigned i = 0; i < b->nconns; i++)
        wb_run_fill(&b->conns[i]);
}

/* A lease or reserve that found nothing within its wait.  In lease-complete
 * every job is ready before the drain, and with a backlog every lease has a
 * ticket, so that is an error; elsewhere it is normal while producers run,
 * and means "nothing left" once they are done. */
void
wb_run_lease_timed_out(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    b->lease_timeouts++;
    if (b->opt.workload == WL_LEASE_COMPLETE || b->tickets != NULL) {
        wb_error_reply(c, r, f, "nothing to lease although jobs are left");
        b->drained = true;
    } else if (bench_producers_done(b)) {
        b->drained = true;
    }
}

/* Job ji was accepted (add, schedule, put). */
void
wb_run_created(struct bench *b, uint32_t ji)
{
    struct wb_job *j = &b->jobs[ji];
    j->flags |= WB_JOB_ACKED;
    if (wb_jobs_is_backlog(b, j)) {
        b->backlog_created++;
        return;
    }
    b->created++;
    bench_ticket(b, ji);
}

/* The reply f to a complete (workq), delete (beanstalkd) or ACK (Faktory)
 * r: if it is the line ok, the job is done.  r->job is BENCH_JOB_NONE for a beanstalkd job
 * whose INSERTED was not read before its delete went out. */
void
wb_run_completed(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                 const char *ok)
{
    struct bench *b = c->b;
    if (!wb_frame_is(f, ok)) {
        wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    b->completes_ok++;
    if (r->job != BENCH_JOB_NONE)
        b->jobs[r->job].flags |= WB_JOB_DONE;
}

/* The jobs a run has done: accepted adds for add, checked run results for
 * run, confirmed completes (deletes) for the others. */
uint64_t
wb_run_done(const struct bench *b)
{
    if (b->opt.workload == WL_ADD)
        return b->created;
    if (b->opt.workload == WL_RUN)
        return b->runs_ok;
    return b->completes_ok;
}

/* Does connection idx produce in the measured phase?  In cycle, run and
 * schedule the first half produce and the rest consume; add only produces,
 * lease-complete only consumes (after a prefill in which everyone adds). */
bool
wb_run_is_producer(const struct bench *b, unsigned idx)
{
    enum wb_workload w = b->opt.workload;
    return w == WL_ADD || (w != WL_LEASE_COMPLETE && idx < b->opt.conns / 2);
}

/* Give every connection its role for the prefill or the measured phase;
 * producers are numbered, for the rotation of names. */
static void
bench_set_roles(struct bench *b, bool prefill)
{
    b->nprod = 0;
    for (unsigned i = 0; i < b->opt.conns; i++) {
        struct wb_conn *c = &b->conns[i];
        c->producer = prefill || wb_run_is_producer(b, i);
        if (c->producer) {
            c->prod_idx = b->nprod++;
            c->name = c->prod_idx % b->opt.names;
        }
    }
}

/* Enter the measured phase: roles for the workload, the clock from zero.
 * In lease-complete the jobs to drain are those the prefill created. */
static void
bench_start_measure(struct bench *b)
{
    bench_set_roles(b, false);
    b->phase = PH_MEASURE;
    if (b->opt.workload == WL_LEASE_COMPLETE)
        b->jobs_expected = b->created;
    b->t0_ns = b->last_ns = wb_now_ns();
    b->last_done = 0;
    wb_run_fill_all(b);
    wb_run_check_idle(b);
}

/* Enter an unmeasured phase in which every connection adds: the backlog
 * or the prefill of lease-complete. */
static void
bench_start_fill(struct bench *b, enum wb_phase phase)
{
    bench_set_roles(b, true);
    b->phase = phase;
    b->last_ns = wb_now_ns();
    b->last_done = 0;
    wb_run_fill_all(b);
    wb_run_check_idle(b);
}

/* The phase after the backlog (or after connecting, without one). */
static void
bench_after_backlog(struct bench *b)
{
    if (b->opt.workload == WL_LEASE_COMPLETE)
        bench_start_fill(b, PH_PREFILL);
    else
        bench_start_measure(b);
}

/* Every connection is up: begin (with the backlog, then the prefill for
 * lease-complete). */
void
wb_run_start(struct bench *b)
{
    struct timeval tv = {BENCH_PROGRESS_MS / 1000, (BENCH_PROGRESS_MS % 1000) * 1000};
    if (b->progress)
        event_add(b->progress_ev, &tv);
    if (b->nbacklog > 0)
        bench_start_fill(b, PH_BACKLOG);
    else
        bench_after_backlog(b);
}

/* Nothing in flight: maybe someone can send again (budget freed by a
 * failure); if not, this phase is over. */
void
wb_run_check_idle(struct bench *b)
{
    if (b->phase == PH_CLEAN) {
        wb_clean_check_idle(b);
        return;
    }
    if (b->phase == PH_CONNECT || b->phase == PH_DONE || b->inflight != 0)
        return;
    wb_run_fill_all(b);
    if (b->inflight != 0)
        return;
    if (b->phase == PH_BACKLOG)
        bench_after_backlog(b);
    else if (b->phase == PH_PREFILL)
        bench_start_measure(b);
    else
        wb_stop(b);
}
