/* core.c - the core itself and its jobs' transitions: creating and
 * freeing it, its key spaces, lookups, the stats' buckets, the
 * records of the command log, the primitive moves of a job (lease, make
 * ready, settle, place, release, destroy, cancel, TTR end), and time (the
 * jobs' and the waiters' wheels, core_advance).  The commands built on
 * them are in core_cmd.c, waiters in core_wait.c, the links of
 * prerequisites in core_deps.c (what a prerequisite's end does to its
 * dependents is here), the job_ext side table in core_ext.c, the targeted queues'
 * index in core_target.c, replay in core_replay.c. */
#include "lib/wq.h"
#include "engine/core.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/alloc.h"
#include "engine/core_internal.h"
#include "engine/workers.h"
#include "lib/payload.h"

#define CORE_POOL_BLOCK 1024
/* How far c->now_ms may run ahead of the wheels' time (24 days). */
#define CORE_MAX_LEAD ((uint64_t)1 << 31)

static void core_job_timer(struct wheel_entry *e, uint64_t slot_ms, void *arg);
static uint64_t core_job_timer_deadline(const struct wheel_entry *e, void *arg);
static void core_waiter_timer(struct wheel_entry *e, uint64_t slot_ms, void *arg);

/* ---- a prerequisite's end, spread to its dependents (core_deps.c links
 * them).  Failures spread down a chain through a work list, not by
 * recursion, so a chain of any depth costs no stack. ---- */

/* The dependents of one prerequisite, taken from it to be worked through:
 * released (it completed) or failed (it failed or went). */
struct dep_work {
    struct dep_work *next;
    struct job_dep *deps;
    uint32_t n, cap;
    bool completed;
    bool gone; /* deleted or expired, rather than failed */
    uint8_t prereq[JOBID_LEN];
};

void
core_deps_fail(struct core *c, struct job *d, const uint8_t prereq[JOBID_LEN], bool gone)
{
    char id[JOBID_TEXT_LEN + 1], text[96];
    jobid_format(prereq, id);
    int n = snprintf(text, sizeof text, gone ? CORE_PREREQ_GONE : CORE_PREREQ_FAILED, id);
    char *result = payload_new(text, (size_t)n);
    if (result == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory failing a dependent job");
    core_record_result(c, d, CMDLOG_FAIL, text, (size_t)n);
    core_job_settle(c, d, JOB_FAILED, result, (uint32_t)n);
    core_job_die(c, d, (int64_t)c->now_ms);
}

/* Work through the pending lists until none is left: releasing a job
 * changes nothing here, failing one adds its own dependents at the end. */
static void
core_deps_run(struct core *c)
{
    if (c->deps_busy)
        return;
    c->deps_busy = true;
    while (c->deps != NULL) {
        struct dep_work *w = c->deps;
        c->deps = w->next;
        for (uint32_t i = 0; i < w->n; i++) {
            struct job *d = core_find(c, w->deps[i].id);
            if (d == NULL || d->seq != w->deps[i].seq || d->state != JOB_WAITING)
                continue;
            struct job_more *dm = core_more_of(core_job_ext(c, d));
            if (dm->broadcast) { /* a copy is done, whatever came of it */
                if (--dm->unmet == 0)
                    core_job_settle(c, d, JOB_COMPLETED, NULL, 0);
                continue;
            }
            if (!w->completed) {
                core_deps_fail(c, d, w->prereq, w->gone);
            } else if (--dm->unmet == 0) {
                core_job_release(c, d, c->now_ms);
                core_ext_trim(c, d);
            }
        }
        c->bytes -= (uint64_t)w->cap * sizeof *w->deps;
        wq_free(w->deps);
        wq_free(w);
    }
    c->deps_busy = false;
}

/* Hand j's dependents (x is its job_ext, or NULL) over to the work list
 * (completed: release them). */
static void
core_deps_take(struct core *c, struct job *j, struct job_ext *x, bool completed, bool gone)
{
    struct job_more *m = core_more_of(x);
    if (m == NULL || m->ndependents == 0)
        return;
    struct dep_work *w = wq_malloc(sizeof *w);
    *w = (struct dep_work){
        .deps = m->dependents,
        .n = m->ndependents,
        .cap = m->dependents_cap,
        .completed = completed,
        .gone = gone,
    };
    memcpy(w->prereq, j->id, JOBID_LEN);
    m->dependents = NULL;
    m->ndependents = m->dependents_cap = 0;
    /* last in line, so a chain fails in the order its links were made */
    struct dep_work **tail = &c->deps;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = w;
    core_deps_run(c);
}

/* j settled (x is its job_ext, or NULL): its dependents are released
 * if it completed, else they fail. */
static void
core_deps_settled(struct core *c, struct job *j, struct job_ext *x)
{
    core_deps_take(c, j, x, j->state == JOB_COMPLETED, false);
}

/* j went (deleted or expired): its dependents fail. */
static void
core_deps_gone(struct core *c, struct job *j, struct job_ext *x)
{
    core_deps_take(c, j, x, false, true);
}

static void core_space_init(struct core *c, uint8_t ix);

struct core *
core_new(uint64_t now_ms)
{
    struct core *c = wq_calloc(1, sizeof *c);
    core_space_init(c, JOB_SPACE_IDS);
    c->workers = workers_new();
    wheel_init(&c->wheel, now_ms, core_job_timer_deadline, core_job_timer, c);
    wheel_init(&c->wait_wheel, now_ms, core_waiter_deadline, core_waiter_timer, c);
    pool_init(&c->job_pool, sizeof(struct job), CORE_POOL_BLOCK);
    pool_init(&c->ext_pool, sizeof(struct job_ext), CORE_POOL_BLOCK / 4);
    pool_init(&c->waiter_pool, sizeof(struct waiter), CORE_POOL_BLOCK / 4);
    if (getrandom(&c->rng, sizeof c->rng, GRND_NONBLOCK) != (ssize_t)sizeof c->rng)
        c->rng = (uint64_t)time(NULL);
    c->rng |= 1; /* xorshift state must not be zero */
    c->now_ms = now_ms;
    c->backoff_unit_ms = CORE_DEFAULT_BACKOFF_UNIT;
    core_clear_totals(c);
    return c;
}

/* Open space ix of c: empty, with the dead set's default bounds. */
static void
core_space_init(struct core *c, uint8_t ix)
{
    struct core_space *sp = &c->space[ix];
    bool ids = ix == JOB_SPACE_IDS;
    sp->jobs = registry_new(ids ? job_id_key : job_ref_key);
    sp->exts = registry_new(ids ? job_ext_id_key : job_ext_ref_key);
    queue_table_init(&sp->queues, ix);
    list_init(&sp->dead.jobs);
    sp->dead.ttl_ms = CORE_DEFAULT_DEAD_TTL_MS;
    sp->dead.max = CORE_DEFAULT_DEAD_MAX;
    sp->open = true;
}

uint8_t
core_space_open(struct core *c, const char *label, const struct core_space_ops *ops, void *arg,
                unsigned flags, uint8_t code_lo, uint8_t code_hi)
{
    uint8_t ix = 1;
    while (ix < JOB_SPACES && c->space[ix].open)
        ix++;
    WQ_ASSERT(ix < JOB_SPACES && ops != NULL && ops->ttr_expired != NULL);
    core_space_init(c, ix);
    struct core_space *sp = &c->space[ix];
    sp->label = label;
    sp->ops = ops;
    sp->arg = arg;
    sp->flags = flags;
    sp->code_lo = code_lo;
    sp->code_hi = code_hi;
    return ix;
}

void
core_clear_totals(struct core *c)
{
    for (size_t i = 0; i < JOB_SPACES; i++) {
        struct core_totals *t = &c->space[i].totals;
        memset(t, 0, sizeof *t);
        hist_init(&t->lease_wait, hist_job_bounds, hist_job_nbounds);
        hist_init(&t->result, hist_job_bounds, hist_job_nbounds);
        const struct core_space *sp = &c->space[i];
        if (sp->ops != NULL && sp->ops->clear_totals != NULL)
            sp->ops->clear_totals(sp->arg);
    }
}

void
core_space_counts(const struct core *c, uint8_t space, struct core_space_counts *out)
{
    memset(out, 0, sizeof *out);
    if (space >= JOB_SPACES || !c->space[space].open)
        return;
    const struct core_space *sp = &c->space[space];
    out->jobs = registry_count(sp->jobs);
    out->queues = registry_count(sp->queues.by_name);
    out->scheduled = sp->stats.scheduled - sp->stats.retrying;
    out->retry = sp->stats.retrying;
    out->enqueued = sp->stats.ready;
    out->working = sp->stats.leased;
    out->dead = sp->dead.count;
}

uint8_t
core_space_find(const struct core *c, const char *label)
{
    for (uint8_t i = 0; i < JOB_SPACES; i++)
        if (c->space[i].open && c->space[i].label != NULL && strcmp(c->space[i].label, label) == 0)
            return i;
    return JOB_SPACES;
}

/* Milliseconds from a job's due time (base_ms) to now_ms, in ns for a
 * histogram (0 when the clock says it is not due yet). */
static uint64_t
core_since_due_ns(const struct job *j, uint64_t now_ms)
{
    return (int64_t)now_ms > j->base_ms ? (now_ms - (uint64_t)j->base_ms) * 1000000u : 0;
}

uint64_t
core_expiry(int64_t base_ms, uint64_t ttl)
{
    __int128 t = (__int128)base_ms + ttl;
    if (t < 0)
        return 0;
    if (t > (__int128)UINT64_MAX)
        return UINT64_MAX;
    return (uint64_t)t;
}

uint64_t
core_job_expiry(const struct job *j)
{
    return (j->flags & JOB_F_RUN) ? UINT64_MAX : core_expiry(j->base_ms, j->ttl);
}

/* The TTR end of leased j, while its timer is armed.  lease_end keeps it
 * modulo 2^32 ms, which is enough: the end lies at or after the job
 * wheel's time (a lease starts no earlier, and the wheel's time does not
 * pass the end before the timer fires) and at most CORE_MAX_LEAD plus a
 * TTR (a day) after it, since leases are stamped with c->now_ms. */
static uint64_t
core_lease_end(const struct core *c, const struct job *j)
{
    return c->wheel.now + (uint32_t)(j->lease_end - (uint32_t)c->wheel.now);
}

/* core_job_deadline, inline for the hot paths that arm a job's timer. */
static inline uint64_t
core_deadline(const struct core *c, const struct job *j)
{
    uint64_t d = core_job_expiry(j);
    if (j->state == JOB_LEASED)
        d = WQ_MIN(d, core_lease_end(c, j));
    else if (j->place == JOB_IN_SCHEDULED)
        d = WQ_MIN(d, (uint64_t)job_due_ms(j, core_space_of(c, j)->exts));
    else if (__builtin_expect((j->flags & JOB_F_DEAD) && j->state == JOB_FAILED, 0))
        d = WQ_MIN(d, core_dead_end(c, j));
    return d;
}

uint64_t
core_job_deadline(const struct core *c, const struct job *j)
{
    return core_deadline(c, j);
}

struct job *
core_find(const struct core *c, const uint8_t id[JOBID_LEN])
{
    return registry_find(core_ids(c)->jobs, id, JOBID_LEN);
}

struct job *
core_find_key(const struct core *c, const struct job_key *k)
{
    if (k->space >= JOB_SPACES || !c->space[k->space].open)
        return NULL;
    return registry_find(c->space[k->space].jobs, k->p, k->len);
}

struct queue *
core_queue(const struct core *c, const char *name, size_t len)
{
    struct queue *q = registry_find(core_ids(c)->queues.by_name, name, len);
    return q != NULL && queue_is_active(q) ? q : NULL;
}

const uint8_t (*core_job_copies(const struct core *c, const struct job *j, size_t *n))[JOBID_LEN]
{
    const struct job_ext *x = core_job_ext(c, j);
    const struct job_more *m = core_more_of(x);
    *n = m != NULL && m->broadcast ? m->ncopies : 0;
    return *n > 0 ? (const uint8_t(*)[JOBID_LEN])m->copies : NULL;
}

bool
core_job_is_broadcast(const struct core *c, const struct job *j)
{
    const struct job_more *m = core_more_of(core_job_ext(c, j));
    return m != NULL && m->broadcast;
}

/* ---- accounting: every job is in exactly one bucket of the stats ---- */

static uint64_t *
core_bucket(struct core_stats *st, const struct job *j)
{
    if (j->place == JOB_IN_READY)
        return &st->ready;
    if (j->place == JOB_IN_SCHEDULED)
        return &st->scheduled;
    switch (j->state) {
    case JOB_LEASED:
        return &st->leased;
    case JOB_COMPLETED:
        return &st->completed;
    case JOB_FAILED:
        return &st->failed;
    case JOB_WAITING:
        return &st->waiting;
    default:
        wq_panic(__FILE__, __LINE__, "job in state %d has no place", j->state);
    }
}

/* The count of j's queue for a job out of the heaps and not leased (the
 * queue counts those itself): WAITING, COMPLETED or FAILED. */
static uint32_t *
core_queue_bucket(struct core_space *sp, const struct job *j)
{
    struct queue *q = queue_table_at(&sp->queues, j->queue_ix);
    switch (j->state) {
    case JOB_COMPLETED:
        return &q->completed;
    case JOB_FAILED:
        return &q->failed;
    default:
        return &q->waiting;
    }
}

/* Count j in (delta 1) or out of (-1) the bucket of its place and state,
 * in the core's stats and, for a job neither queued nor leased, its
 * queue's. */
static void
core_count(struct core *c, const struct job *j, int delta)
{
    struct core_space *sp = core_space_of(c, j);
    *core_bucket(&sp->stats, j) += (uint64_t)(int64_t)delta;
    if (j->place == JOB_NOWHERE && j->state != JOB_LEASED)
        *core_queue_bucket(sp, j) += (uint32_t)delta;
}

/* ---- timers ---- */

/* Arm the job's one timer for the nearest of its deadlines. */
void
core_job_arm(struct core *c, struct job *j)
{
    wheel_add(&c->wheel, &j->timer, core_deadline(c, j));
}

static uint64_t
core_job_timer_deadline(const struct wheel_entry *e, void *arg)
{
    return core_deadline(arg, WQ_CONTAINER_OF(e, const struct job, timer));
}

/* ---- the command log ---- */

/* Log a record that carries only the job id (nothing for a run job, or a
 * job of another space, which has no id). */
void
core_record_id(struct core *c, const struct job *j, enum cmdlog_code code)
{
    if (c->record == NULL || (j->flags & (JOB_F_RUN | JOB_F_KEY)))
        return;
    struct cmdlog_rec r = {.code = (uint8_t)code, .at_ms = (int64_t)c->now_ms};
    memcpy(r.id, j->id, JOBID_LEN);
    c->record(c->record_arg, &r);
}

/* Log a fail that sends j to wait until at_ms. */
void
core_record_backoff(struct core *c, const struct job *j, int64_t at_ms)
{
    if (c->record == NULL || (j->flags & (JOB_F_RUN | JOB_F_KEY)))
        return;
    struct cmdlog_rec r = {
        .code = CMDLOG_FAIL_BACKOFF, .at_ms = (int64_t)c->now_ms, .timed = true, .time_ms = at_ms};
    memcpy(r.id, j->id, JOBID_LEN);
    c->record(c->record_arg, &r);
}

/* Log a result (complete or final fail). */
void
core_record_result(struct core *c, const struct job *j, enum cmdlog_code code, const char *data,
                   size_t len)
{
    if (c->record == NULL || (j->flags & (JOB_F_RUN | JOB_F_KEY)))
        return;
    struct cmdlog_rec r = {.code = (uint8_t)code, .at_ms = (int64_t)c->now_ms};
    memcpy(r.id, j->id, JOBID_LEN);
    r.result = (struct wq_str){data, len};
    c->record(c->record_arg, &r);
}

/* ---- transitions ---- */

/* Lease j (NEW or PENDING, out of any heap) to a worker (who: a named
 * one, or NULL). */
void
core_lease_job(struct core *c, struct job *j, uint64_t now_ms, struct worker *who)
{
    WQ_ASSERT(j->place == JOB_NOWHERE);
    core_record_id(c, j, CMDLOG_START_ATTEMPT);
    j->state = JOB_LEASED;
    if (who != NULL) {
        core_more_need(c, j)->holder = who;
        workers_hold(who);
    }
    struct core_space *sp = core_space_of(c, j);
    if (sp->ops != NULL && sp->ops->leased != NULL)
        sp->ops->leased(sp->arg, c, j);
    if (j->attempts == 0)
        hist_observe(&sp->totals.lease_wait, core_since_due_ns(j, now_ms));
    if (j->attempts < JOB_ATTEMPTS_MAX)
        j->attempts++;
    queue_lease(queue_table_at(&sp->queues, j->queue_ix));
    sp->stats.leased++;
    sp->totals.leased++;
    j->lease_end = (uint32_t)(WQ_MAX(now_ms, c->wheel.now) + j->ttr);
    core_job_arm(c, j);
    if (j->flags & JOB_F_RUN) {
        /* Leased: the client now waits for the result until the TTR ends. */
        struct waiter *rw = core_run_waiter(c, j);
        if (rw != NULL)
            wheel_cancel(&c->wait_wheel, &rw->timer);
    }
}

/* j (NEW or PENDING, out of any heap) is ready: hand it to the first parked
 * leaser of its queue, or put it in the ready heap.  While the job wheel
 * fires (jobs whose scheduled time or TTR end has come, all in the same
 * millisecond), the job goes to the heap and its queue on the dispatch
 * list, so that parked leasers then get that millisecond's jobs in ready
 * order rather than in the wheel's order (core_dispatch). */
void
core_make_ready(struct core *c, struct job *j, uint64_t now_ms)
{
    struct queue *q = core_job_queue(c, j);
    struct park_node *node = q->paused         ? NULL
                             : q->base == NULL ? queue_first_parked(q)
                                               : core_target_first_parked(q);
    if (node == NULL || c->firing) {
        queue_push_ready(q, j);
        core_space_of(c, j)->stats.ready++;
        if (node != NULL && !q->dispatch_queued) {
            q->dispatch_queued = true;
            q->refs++; /* kept while listed */
            q->dispatch_next = c->dispatch;
            c->dispatch = q;
        }
        return;
    }
    core_lease_job(c, j, now_ms, node->waiter->who);
    core_waiter_finish(c, node->waiter, WAITER_GOT, j);
}

/* Hand the jobs of the listed queues to their parked leasers, first job to
 * first leaser.  A queue with parked leasers had no ready job before it was
 * listed, so what it hands out is exactly what the wheel made ready. */
/* Hand q's ready jobs to the leases parked on it, first to first. */
static void
core_queue_hand_out(struct core *c, struct queue *q)
{
    struct park_node *node;
    struct job *j;
    while ((node = core_target_first_parked(q)) != NULL && (j = queue_peek_ready(q)) != NULL) {
        core_job_detach(c, j);
        core_lease_job(c, j, c->now_ms, node->waiter->who);
        core_waiter_finish(c, node->waiter, WAITER_GOT, j);
    }
}

static void
core_dispatch(struct core *c)
{
    while (c->dispatch != NULL) {
        struct queue *q = c->dispatch;
        c->dispatch = q->dispatch_next;
        q->dispatch_next = NULL;
        q->dispatch_queued = false;
        core_queue_hand_out(c, q);
        queue_table_unref(&c->space[q->space].queues, q);
    }
}

/* Take j out of its heap or out of the leased count (stats included). */
void
core_job_detach(struct core *c, struct job *j)
{
    core_count(c, j, -1);
    if (j->place != JOB_NOWHERE) {
        bool backoff = j->place == JOB_IN_SCHEDULED && (j->flags & JOB_F_BACKOFF);
        queue_remove(core_job_queue(c, j), j);
        struct job_ext *x = backoff ? core_job_ext(c, j) : NULL;
        if (x != NULL && x->retry_at != 0) { /* its backoff is over */
            x->retry_at = 0;
            core_space_of(c, j)->stats.retrying--;
            core_ext_trim(c, j);
        }
    } else if (j->state == JOB_LEASED) {
        queue_unlease(core_job_queue(c, j));
        struct job_more *m = (j->flags & JOB_F_EXT) ? core_more_of(core_job_ext(c, j)) : NULL;
        if (m != NULL && m->holder != NULL) { /* its worker holds it no more */
            workers_unhold(m->holder);
            m->holder = NULL;
            core_ext_trim(c, j);
        }
    }
}

/* Give j its final state and result (result is owned by j from now). */
void
core_job_settle(struct core *c, struct job *j, enum job_state state, char *result,
                uint32_t result_len)
{
    core_job_detach(c, j);
    j->state = state;
    struct job_ext *x = result != NULL ? core_ext_need(c, j) : core_job_ext(c, j);
    if (core_more_of(x) != NULL)
        x->more->unmet = 0; /* a waiting job waits no more */
    if (result != NULL) {
        x->result = result;
        x->result_len = result_len;
        c->bytes += result_len;
    }
    core_count(c, j, 1);
    struct core_totals *t = &core_space_of(c, j)->totals;
    if (state == JOB_COMPLETED)
        t->completed++;
    else
        t->failed++;
    hist_observe(&t->result, core_since_due_ns(j, c->now_ms));
    core_job_arm(c, j); /* only the TTL is left */
    x = core_wake_result_waiters(c, j, x, WAITER_GOT);
    if (j->flags & JOB_F_RUN) {
        core_job_destroy(c, j); /* its client has the result */
        return;
    }
    if (core_more_of(x) != NULL)
        core_deps_settled(c, j, x);
}

void
core_job_place(struct core *c, struct job *j, enum job_state state, uint64_t now_ms)
{
    j->state = state;
    if ((j->flags & JOB_F_TIMED) && j->base_ms > (int64_t)now_ms) {
        queue_push_scheduled(core_job_queue(c, j), j);
        core_count(c, j, 1);
    } else {
        core_make_ready(c, j, now_ms);
    }
    core_job_arm(c, j);
}

void
core_job_release(struct core *c, struct job *j, uint64_t now_ms)
{
    core_job_detach(c, j);
    WQ_ASSERT(c->next_seq < JOB_SEQ_LIMIT);
    j->seq = c->next_seq++; /* in line as if added now */
    core_job_place(c, j, JOB_NEW, now_ms);
}

/* Forget j entirely: heap, registry, waiters, memory. */
void
core_job_destroy(struct core *c, struct job *j)
{
    core_job_detach(c, j);
    if (j->flags & JOB_F_DEAD)
        core_dead_unlink(c, j);
    wheel_cancel(&c->wheel, &j->timer);
    struct core_space *sp = core_space_of(c, j);
    struct job_key key = job_key_of(j);
    registry_remove(sp->jobs, key.p, key.len);
    struct job_ext *x = core_job_ext(c, j);
    if (core_more_of(x) != NULL)
        core_deps_gone(c, j, x); /* its dependents fail (it is out of the registry) */
    x = core_wake_result_waiters(c, j, x, WAITER_GONE);
    if (x != NULL)
        core_ext_drop(c, j, x);
    c->bytes -= core_job_bytes(j->payload_len);
    queue_table_unref(&sp->queues, core_job_queue(c, j));
    if (j->flags & JOB_F_KEY) {
        c->bytes -= j->key.len;
        job_keyed_free(j);
    } else {
        payload_free(j->payload, j->payload_len);
    }
    pool_put(&c->job_pool, j);
}

/* The TTR of leased j ran out: retry it, or fail it if out of attempts. */
void
core_job_ttr_expired(struct core *c, struct job *j, uint64_t now_ms, int64_t ended_ms)
{
    if (j->flags & JOB_F_RUN) {
        struct waiter *rw = core_run_waiter(c, j);
        if (rw != NULL)
            core_waiter_finish(c, rw, WAITER_TIMEOUT, NULL);
        core_job_destroy(c, j);
        return;
    }
    core_record_id(c, j, CMDLOG_TIMEOUT_ATTEMPT);
    struct core_space *sp = core_space_of(c, j);
    sp->totals.ttr_expired++;
    if (sp->ops != NULL) { /* another space's: its owner decides */
        sp->ops->ttr_expired(sp->arg, c, j);
        return;
    }
    if (j->max_attempts > 0 && j->attempts >= j->max_attempts) {
        core_job_settle(c, j, JOB_FAILED, NULL, 0);
        core_job_die(c, j, ended_ms);
        return;
    }
    sp->totals.retried++;
    core_job_detach(c, j);
    j->state = JOB_PENDING;
    core_make_ready(c, j, now_ms);
    core_job_arm(c, j);
}

void
core_job_backoff(struct core *c, struct job *j, int64_t at_ms)
{
    core_job_detach(c, j);
    j->state = JOB_PENDING;
    if (at_ms <= 0) { /* a damaged record: no wait */
        core_job_place(c, j, JOB_PENDING, c->now_ms);
        return;
    }
    core_ext_need(c, j)->retry_at = at_ms;
    queue_push_scheduled(core_job_queue(c, j), j);
    core_count(c, j, 1);
    core_space_of(c, j)->stats.retrying++;
    core_job_arm(c, j);
}

/* j leaves the dead set by its bounds (aged: by its time there) and goes:
 * logged as a delete, or told to its space's owner. */
static void
core_job_bury(struct core *c, struct job *j, bool aged)
{
    struct core_space *sp = core_space_of(c, j);
    if (sp->ops != NULL && sp->ops->dead_gone != NULL)
        sp->ops->dead_gone(sp->arg, c, j, aged);
    core_record_id(c, j, CMDLOG_DELETE);
    core_job_destroy(c, j);
}

void
core_job_die(struct core *c, struct job *j, int64_t died_ms)
{
    if (!(j->flags & JOB_F_DEAD) || j->state != JOB_FAILED)
        return;
    core_dead_link(c, j, died_ms);
    core_job_arm(c, j); /* the set's TTL may end before the job's */
    struct job *old;
    struct core_space *sp = core_space_of(c, j);
    while (sp->dead.count > sp->dead.max && (old = core_dead_oldest(c, job_space(j))) != NULL)
        core_job_bury(c, old, false);
}

void
core_job_revive(struct core *c, struct job *j, uint64_t now_ms)
{
    core_dead_unlink(c, j);
    struct job_ext *x = core_job_ext(c, j);
    if (x != NULL && x->result != NULL) {
        c->bytes -= x->result_len;
        payload_free(x->result, x->result_len);
        x->result = NULL;
        x->result_len = 0;
    }
    core_job_detach(c, j);
    j->fails = 0;
    j->attempts = 0;
    WQ_ASSERT(c->next_seq < JOB_SEQ_LIMIT);
    j->seq = c->next_seq++; /* in line as if added now */
    j->state = JOB_PENDING;
    if (core_space_of(c, j)->flags & CORE_SPACE_FIFO)
        core_job_enter(c, j, now_ms);
    else
        core_job_place(c, j, JOB_PENDING, now_ms);
    core_ext_trim(c, j);
}

void
core_job_enter(struct core *c, struct job *j, uint64_t now_ms)
{
    if (core_space_of(c, j)->flags & CORE_SPACE_FIFO) {
        WQ_ASSERT(c->next_seq < JOB_SEQ_LIMIT);
        j->seq = c->next_seq++;       /* last of its priority */
        j->base_ms = (int64_t)now_ms; /* when it entered (no TTL counts from it) */
        j->flags &= ~(JOB_F_TIMED | JOB_F_NS);
    }
    core_make_ready(c, j, now_ms);
    core_ext_trim(c, j);
}

/* ---- for the owner of a space ---- */

void
core_job_retry_at(struct core *c, struct job *j, int64_t at_ms)
{
    j->flags |= JOB_F_BACKOFF; /* due at its retry_at */
    core_job_backoff(c, j, at_ms);
}

void
core_job_kill(struct core *c, struct job *j, int64_t died_ms)
{
    j->flags |= JOB_F_DEAD;
    core_job_settle(c, j, JOB_FAILED, NULL, 0);
    core_job_die(c, j, died_ms);
}

void
core_job_requeue(struct core *c, struct job *j, uint64_t now_ms)
{
    if (core_job_died(c, j) != 0) {
        core_job_revive(c, j, now_ms);
        return;
    }
    WQ_ASSERT(j->place == JOB_IN_SCHEDULED);
    core_job_detach(c, j);
    core_job_enter(c, j, now_ms);
    core_job_arm(c, j);
}

void
core_job_set_ttr(struct job *j, uint32_t ttr_ms)
{
    WQ_ASSERT(ttr_ms > 0 && ttr_ms <= WQ_MAX_TTR_MS);
    j->ttr = ttr_ms;
}

void
core_job_set_payload(struct core *c, struct job *j, const char *data, size_t len)
{
    c->bytes += len;
    c->bytes -= j->payload_len;
    if (j->flags & JOB_F_KEY) {                 /* the key moves with its payload */
        struct job_ext *x = core_job_ext(c, j); /* found by the old bytes */
        uint8_t *key = job_keyed_set_payload(j, data, len);
        if (x != NULL)
            x->key.bytes = key;
        return;
    }
    char *copy = payload_new(data, len);
    if (copy == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory keeping a job's payload");
    payload_free(j->payload, j->payload_len);
    j->payload = copy;
    j->payload_len = (uint32_t)len;
}

struct queue *
core_space_queue(const struct core *c, uint8_t space, const char *name, size_t len)
{
    if (space >= JOB_SPACES || !c->space[space].open)
        return NULL;
    return registry_find(c->space[space].queues.by_name, name, len);
}

void
core_queue_pause(struct core *c, uint8_t space, const char *name, size_t len, bool paused)
{
    struct core_space *sp = &c->space[space];
    struct queue *q = registry_find(sp->queues.by_name, name, len);
    if ((q != NULL && q->paused == paused) || (q == NULL && !paused))
        return;
    if (paused) { /* held while paused */
        q = queue_table_ref(&sp->queues, name, len, sp->exts);
        q->paused = true;
        return;
    }
    q->paused = false;
    core_queue_hand_out(c, q);
    queue_table_unref(&sp->queues, q);
}

/* Fail j (no result yet) as cancelled, marked so that a later complete,
 * fail or touch learns why.  Logged first, unless replaying. */
void
core_job_cancel(struct core *c, struct job *j)
{
    core_record_id(c, j, CMDLOG_CANCEL);
    char *result = payload_new(CORE_CANCELLED_RESULT, strlen(CORE_CANCELLED_RESULT));
    if (result == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory cancelling a job");
    core_more_need(c, j)->cancelled = true;
    core_job_settle(c, j, JOB_FAILED, result, (uint32_t)strlen(CORE_CANCELLED_RESULT));
}

/* Timer callbacks use the time of the advance (c->now_ms), not the wheel's
 * stepped slot time, so a late batch does not shorten a new TTR. */
static void
core_job_timer(struct wheel_entry *e, uint64_t slot_ms, void *arg)
{
    struct core *c = arg;
    uint64_t now_ms = c->now_ms;
    struct job *j = WQ_CONTAINER_OF(e, struct job, timer);

    if (now_ms >= core_job_expiry(j)) {
        if (!job_is_done(j)) {
            core_space_of(c, j)->stats.evicted++;
            core_space_of(c, j)->totals.evicted++;
        }
        core_record_id(c, j, CMDLOG_EXPIRE);
        core_job_destroy(c, j);
        return;
    }
    if (j->state == JOB_LEASED) { /* not expired: the TTR has ended */
        core_job_ttr_expired(c, j, now_ms, (int64_t)now_ms);
        return;
    }
    if (now_ms >= core_dead_end(c, j)) { /* out of the dead set by age */
        core_job_bury(c, j, true);
        return;
    }
    struct core_space *sp = core_space_of(c, j);
    if (j->place == JOB_IN_SCHEDULED && (int64_t)now_ms >= job_due_ms(j, sp->exts)) {
        bool retry = j->state == JOB_PENDING;
        core_job_detach(c, j);
        core_job_enter(c, j, now_ms);
        if (sp->ops != NULL && sp->ops->due != NULL)
            sp->ops->due(sp->arg, c, j, retry);
    }
    core_job_arm(c, j);
}

/* A waiter's wait-timeout came; a run job nobody leased goes with its
 * client. */
static void
core_waiter_timer(struct wheel_entry *e, uint64_t slot_ms, void *arg)
{
    struct waiter *w = WQ_CONTAINER_OF(e, struct waiter, timer);
    struct job *run_job = w->kind == WAITER_RUN ? w->job : NULL;
    core_waiter_finish(arg, w, WAITER_TIMEOUT, NULL);
    if (run_job != NULL)
        core_job_destroy(arg, run_job); /* nobody leased it in time */
}

/* The two wheels move in step, so that jobs' deadlines and waiters'
 * timeouts fire in time order (jobs first within one millisecond).  Timer
 * callbacks stamp what they do with c->now_ms, the time of the advance, so
 * that a late batch does not shorten a new TTR; after a stall of weeks it
 * moves in steps of CORE_MAX_LEAD so that TTR ends stay in reach of
 * core_lease_end. */
void
core_advance(struct core *c, uint64_t now_ms)
{
    for (;;) {
        uint64_t t = WQ_MIN(core_next_event(c), now_ms);
        uint64_t lead = t > UINT64_MAX - CORE_MAX_LEAD ? UINT64_MAX : t + CORE_MAX_LEAD;
        c->now_ms = WQ_MAX(c->now_ms, WQ_MIN(now_ms, lead));
        c->firing = true; /* t is one millisecond: see core_make_ready */
        wheel_advance(&c->wheel, t);
        c->firing = false;
        core_dispatch(c);
        wheel_advance(&c->wait_wheel, t);
        if (t == now_ms && core_next_event(c) > now_ms)
            break;
    }
}

uint64_t
core_next_event(const struct core *c)
{
    return WQ_MIN(wheel_next_event(&c->wheel), wheel_next_event(&c->wait_wheel));
}

static void
core_free_job(void *elem, void *arg)
{
    struct job *j = elem;
    if (j->flags & JOB_F_KEY)
        job_keyed_free(j);
    else
        payload_free(j->payload, j->payload_len);
}

static void
core_free_ext(void *elem, void *arg)
{
    struct job_ext *x = elem;
    if (x->more != NULL && x->more->holder != NULL)
        workers_unhold(x->more->holder); /* frees a worker that is gone */
    core_more_free(x->more);
    payload_free(x->result, x->result_len);
}

void
core_free(struct core *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < JOB_SPACES; i++) {
        struct core_space *sp = &c->space[i];
        if (!sp->open)
            continue;
        WQ_ASSERT(sp->stats.parked == 0); /* owners cancel their waiters first */
        registry_foreach(sp->jobs, core_free_job, c);
        registry_foreach(sp->exts, core_free_ext, NULL);
        registry_free(sp->jobs);
        registry_free(sp->exts);
        queue_table_clear(&sp->queues);
    }
    workers_free(c->workers);
    core_targets_free(c);
    pool_clear(&c->job_pool);
    pool_clear(&c->ext_pool);
    pool_clear(&c->waiter_pool);
    wq_free(c);
}
