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
 * cycle leaves that wait out of lease latency.
 *
 * The run sends through the protocol table (bench.proto) and never calls a
 * protocol by name; the connections call it back through the hooks of
 * run_driver (bench.driver). */
#include "wb.h"
#include "wb_proto.h"

#include <event2/event.h>

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
    b->proto->produce(c, ji, id);
}

/* May a consumer send another lease?  Never more leases than jobs left to
 * lease, so no lease is left waiting for a job that will not come. */
static bool
bench_lease_budget(const struct bench *b)
{
    return !b->drained && b->leases_inflight + b->leased < b->jobs_expected;
}

static void consumer_starve(struct wb_conn *c);
static void run_check_idle(struct bench *b);

/* Send what c may send now, up to its pipeline depth.  In `run`, a worker
 * keeps at most one lease in flight: a parked lease holds back every later
 * command on its connection, and a `complete` stuck behind it would keep
 * its run client (and so the next job) waiting.  With a backlog, each lease
 * takes a ticket, and a consumer finding none waits until run_ticket. */
static void
run_fill(struct wb_conn *c)
{
    struct bench *b = c->b;
    if (c->closed || !c->ready || b->phase == PH_CONNECT || b->phase == PH_DONE)
        return;
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
            b->proto->lease(c, BENCH_JOB_NONE);
        } else if (b->ticket_head < b->nticket) {
            b->proto->lease(c, b->tickets[b->ticket_head++]);
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

/* Measured job ji was accepted (wb_jobs_created).  With a backlog it
 * becomes a ticket, and the consumers that waited longest for one may
 * lease again. */
static void
run_ticket(struct bench *b, uint32_t ji)
{
    if (b->tickets == NULL)
        return;
    b->tickets[b->nticket++] = ji;
    while (b->nstarved > 0 && b->ticket_head < b->nticket) {
        struct wb_conn *c = b->starved[b->starved_head];
        b->starved_head = (b->starved_head + 1) % b->opt.conns;
        b->nstarved--;
        c->starved = false;
        run_fill(c);
    }
}

/* Let every connection send what it may (after a phase change or a failure). */
static void
run_fill_all(struct bench *b)
{
    for (unsigned i = 0; i < b->nconns; i++)
        run_fill(&b->conns[i]);
}

/* Does connection idx produce in the measured phase?  In cycle, run and
 * schedule the first half produce and the rest consume; add only produces,
 * lease-complete only consumes (after a prefill in which everyone adds). */
static bool
run_is_producer(const struct bench *b, unsigned idx)
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
        c->producer = prefill || run_is_producer(b, i);
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
    run_fill_all(b);
    run_check_idle(b);
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
    run_fill_all(b);
    run_check_idle(b);
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
static void
run_start(struct bench *b)
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
static void
run_check_idle(struct bench *b)
{
    if (b->phase == PH_CONNECT || b->phase == PH_DONE || b->inflight != 0)
        return;
    run_fill_all(b);
    if (b->inflight != 0)
        return;
    if (b->phase == PH_BACKLOG)
        bench_after_backlog(b);
    else if (b->phase == PH_PREFILL)
        bench_start_measure(b);
    else
        wb_stop(b);
}

/* Workers (connections that lease in the measured phase) are known before
 * they connect: beanstalkd's watch every name, Faktory's HELLO has a wid. */
void
wb_run(struct bench *b)
{
    static const struct wb_driver run_driver = {
        .start = run_start, .fill = run_fill, .idle = run_check_idle, .ticket = run_ticket};
    b->driver = &run_driver;
    for (unsigned i = 0; i < b->opt.conns; i++) {
        b->conns[i].worker = !run_is_producer(b, i);
        wb_conn_open(b, &b->conns[i]);
    }
    event_base_dispatch(b->base);
}
