/* core.c - jobs and their transitions, timers, and the commands on them
 * (add, run, lease, finish, delete, result); waiters are in core_wait.c,
 * the job_ext side table in core_ext.c, replay in core_replay.c. */
#include "lib/wq.h"
#include "engine/core.h"

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

struct core *
core_new(uint64_t now_ms)
{
    struct core *c = wq_calloc(1, sizeof *c);
    c->jobs = registry_new(job_id_key);
    c->exts = registry_new(job_ext_id_key);
    queue_table_init(&c->queues);
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
    core_clear_totals(c);
    return c;
}

void
core_clear_totals(struct core *c)
{
    memset(&c->totals, 0, sizeof c->totals);
    hist_init(&c->totals.lease_wait, hist_job_bounds, hist_job_nbounds);
    hist_init(&c->totals.result, hist_job_bounds, hist_job_nbounds);
    if (c->side_ops != NULL)
        c->side_ops->clear_totals(c->side);
}

void
core_attach_side(struct core *c, const struct core_side_ops *ops, void *side)
{
    WQ_ASSERT(c->side_ops == NULL);
    c->side_ops = ops;
    c->side = side;
}

void
core_side_counts(const struct core *c, struct core_side_counts *out)
{
    memset(out, 0, sizeof *out);
    if (c->side_ops != NULL)
        c->side_ops->counts(c->side, out);
}

/* Milliseconds from a job's due time (base_ms) to now_ms, in ns for a
 * histogram (0 when the clock says it is not due yet). */
static uint64_t
core_since_due_ns(const struct job *j, uint64_t now_ms)
{
    return (int64_t)now_ms > j->base_ms ? (now_ms - (uint64_t)j->base_ms) * 1000000u : 0;
}

/* xorshift64*: uniform enough to pick among a lease's names. */
static uint64_t
core_random(struct core *c)
{
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return c->rng * 0x2545F4914F6CDD1DULL;
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

uint64_t
core_job_deadline(const struct core *c, const struct job *j)
{
    uint64_t d = core_job_expiry(j);
    if (j->state == JOB_LEASED)
        d = WQ_MIN(d, core_lease_end(c, j));
    else if (j->place == JOB_IN_SCHEDULED)
        d = WQ_MIN(d, (uint64_t)j->base_ms);
    return d;
}

struct job *
core_find(const struct core *c, const uint8_t id[JOBID_LEN])
{
    return registry_find(c->jobs, id, JOBID_LEN);
}

struct queue *
core_queue(const struct core *c, const char *name, size_t len)
{
    struct queue *q = registry_find(c->queues.by_name, name, len);
    return q != NULL && queue_is_active(q) ? q : NULL;
}

/* ---- accounting: every job is in exactly one bucket of the stats ---- */

static uint64_t *
core_bucket(struct core *c, const struct job *j)
{
    if (j->place == JOB_IN_READY)
        return &c->stats.ready;
    if (j->place == JOB_IN_SCHEDULED)
        return &c->stats.scheduled;
    switch (j->state) {
    case JOB_LEASED:
        return &c->stats.leased;
    case JOB_COMPLETED:
        return &c->stats.completed;
    case JOB_FAILED:
        return &c->stats.failed;
    case JOB_WAITING:
        return &c->stats.waiting;
    default:
        wq_panic(__FILE__, __LINE__, "job in state %d has no place", j->state);
    }
}

/* The count of j's queue for a job out of the heaps and not leased (the
 * queue counts those itself): WAITING, COMPLETED or FAILED. */
static uint32_t *
core_queue_bucket(struct core *c, const struct job *j)
{
    struct queue *q = core_job_queue(c, j);
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
    *core_bucket(c, j) += (uint64_t)(int64_t)delta;
    if (j->place == JOB_NOWHERE && j->state != JOB_LEASED)
        *core_queue_bucket(c, j) += (uint32_t)delta;
}

/* ---- timers ---- */

/* Arm the job's one timer for the nearest of its deadlines. */
void
core_job_arm(struct core *c, struct job *j)
{
    wheel_add(&c->wheel, &j->timer, core_job_deadline(c, j));
}

static uint64_t
core_job_timer_deadline(const struct wheel_entry *e, void *arg)
{
    return core_job_deadline(arg, WQ_CONTAINER_OF(e, const struct job, timer));
}

/* ---- the command log ---- */

/* Log a record that carries only the job id. */
static void
core_record_id(struct core *c, const struct job *j, enum cmdlog_code code)
{
    if (c->record == NULL || (j->flags & JOB_F_RUN))
        return;
    struct cmdlog_rec r = {.code = (uint8_t)code, .at_ms = (int64_t)c->now_ms};
    memcpy(r.id, j->id, JOBID_LEN);
    c->record(c->record_arg, &r);
}

/* Log a result (complete or final fail). */
void
core_record_result(struct core *c, const struct job *j, enum cmdlog_code code, const char *data,
                   size_t len)
{
    if (c->record == NULL || (j->flags & JOB_F_RUN))
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
    if (j->attempts == 0)
        hist_observe(&c->totals.lease_wait, core_since_due_ns(j, now_ms));
    if (j->attempts < JOB_ATTEMPTS_MAX)
        j->attempts++;
    queue_lease(core_job_queue(c, j));
    c->stats.leased++;
    c->totals.leased++;
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
static void
core_make_ready(struct core *c, struct job *j, uint64_t now_ms)
{
    struct queue *q = core_job_queue(c, j);
    struct park_node *node = q->base == NULL ? queue_first_parked(q) : core_target_first_parked(q);
    if (node == NULL || c->firing) {
        queue_push_ready(q, j);
        c->stats.ready++;
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
static void
core_dispatch(struct core *c)
{
    while (c->dispatch != NULL) {
        struct queue *q = c->dispatch;
        c->dispatch = q->dispatch_next;
        q->dispatch_next = NULL;
        q->dispatch_queued = false;
        struct park_node *node;
        struct job *j;
        while ((node = core_target_first_parked(q)) != NULL && (j = queue_peek_ready(q)) != NULL) {
            core_job_detach(c, j);
            core_lease_job(c, j, c->now_ms, node->waiter->who);
            core_waiter_finish(c, node->waiter, WAITER_GOT, j);
        }
        queue_table_unref(&c->queues, q);
    }
}

/* Take j out of its heap or out of the leased count (stats included). */
void
core_job_detach(struct core *c, struct job *j)
{
    core_count(c, j, -1);
    if (j->place != JOB_NOWHERE) {
        queue_remove(core_job_queue(c, j), j);
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
    if (state == JOB_COMPLETED)
        c->totals.completed++;
    else
        c->totals.failed++;
    hist_observe(&c->totals.result, core_since_due_ns(j, c->now_ms));
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
        c->stats.scheduled++;
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
    wheel_cancel(&c->wheel, &j->timer);
    registry_remove(c->jobs, j->id, JOBID_LEN);
    struct job_ext *x = core_job_ext(c, j);
    if (core_more_of(x) != NULL)
        core_deps_gone(c, j, x); /* its dependents fail (it is out of the registry) */
    x = core_wake_result_waiters(c, j, x, WAITER_GONE);
    if (x != NULL)
        core_ext_drop(c, j, x);
    c->bytes -= core_job_bytes(j->payload_len);
    payload_free(j->payload, j->payload_len);
    queue_table_unref(&c->queues, core_job_queue(c, j));
    pool_put(&c->job_pool, j);
}

/* The TTR of leased j ran out: retry it, or fail it if out of attempts. */
void
core_job_ttr_expired(struct core *c, struct job *j, uint64_t now_ms)
{
    if (j->flags & JOB_F_RUN) {
        struct waiter *rw = core_run_waiter(c, j);
        if (rw != NULL)
            core_waiter_finish(c, rw, WAITER_TIMEOUT, NULL);
        core_job_destroy(c, j);
        return;
    }
    core_record_id(c, j, CMDLOG_TIMEOUT_ATTEMPT);
    c->totals.ttr_expired++;
    if (j->max_attempts > 0 && j->attempts >= j->max_attempts) {
        core_job_settle(c, j, JOB_FAILED, NULL, 0);
        return;
    }
    c->totals.retried++;
    core_job_detach(c, j);
    j->state = JOB_PENDING;
    core_make_ready(c, j, now_ms);
    core_job_arm(c, j);
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
            c->stats.evicted++;
            c->totals.evicted++;
        }
        core_record_id(c, j, CMDLOG_EXPIRE);
        core_job_destroy(c, j);
        return;
    }
    if (j->state == JOB_LEASED) { /* not expired: the TTR has ended */
        core_job_ttr_expired(c, j, now_ms);
        return;
    }
    if (j->place == JOB_IN_SCHEDULED && (int64_t)now_ms >= j->base_ms) {
        core_job_detach(c, j);
        core_make_ready(c, j, now_ms);
    }
    core_job_arm(c, j);
}

/* ---- commands ---- */

bool
core_over_memory(const struct core *c, size_t payload_len, bool with_ext)
{
    uint64_t need = core_job_bytes(payload_len) + (with_ext ? CORE_EXT_BYTES : 0);
    return core_over_limit(c, need);
}

/* A new registered job from s, not yet placed anywhere, or NULL if its
 * payload cannot be allocated. */
static struct job *
core_job_create(struct core *c, const struct job_spec *s, bool run, uint64_t now_ms)
{
    char *payload = NULL;
    if (s->payload_len > 0 && (payload = payload_new(s->payload, s->payload_len)) == NULL)
        return NULL;

    struct job *j = pool_get(&c->job_pool);
    memset(j, 0, sizeof *j);
    memcpy(j->id, s->id, JOBID_LEN);
    struct queue *q = queue_table_ref(&c->queues, s->name.p, s->name.n, c->exts);
    j->queue_ix = q->ix;
    if (q->base != NULL)
        core_target_register(c, q);
    wheel_entry_init(&j->timer);
    WQ_ASSERT(c->next_seq < JOB_SEQ_LIMIT);
    j->seq = c->next_seq++;
    j->ttl = s->ttl;
    j->ttr = s->ttr;
    j->priority = s->priority;
    j->max_attempts = s->max_attempts;
    j->max_fails = s->max_fails;
    int64_t created = s->created_ms != 0 ? s->created_ms : (int64_t)now_ms;
    j->payload = payload;
    j->payload_len = (uint32_t)s->payload_len;
    c->bytes += core_job_bytes(s->payload_len);
    j->heap_index = HEAP_NO_INDEX;
    j->state = JOB_NEW;
    j->flags = (s->timed ? JOB_F_TIMED : 0) | (run ? JOB_F_RUN : 0);
    j->base_ms = s->timed ? s->time_ms : created;
    registry_insert(c->jobs, j);
    c->totals.added++;
    if (s->timed) {
        struct job_ext *x = core_ext_need(c, j);
        x->created_ms = created;
        x->time_ns = s->time_ns;
        if (s->time_ns != 0)
            j->flags |= JOB_F_NS;
    }
    return j;
}

/* core_add, and replay's add: limited says whether -max-memory applies
 * (the log's jobs were acknowledged, so replay never refuses them). */
enum core_status
core_add_job(struct core *c, const struct job_spec *s, uint64_t now_ms, bool limited)
{
    if (core_find(c, s->id) != NULL)
        return CORE_DUPLICATE;
    if (limited && s->nafter > 0 && core_deps_check(c, s->after, s->nafter) != CORE_OK)
        return CORE_BAD_PREREQ;
    if (limited && core_over_memory(c, s->payload_len, s->timed))
        return CORE_NOMEM;
    struct job *j = core_job_create(c, s, false, now_ms);
    if (j == NULL)
        return CORE_NOMEM;
    if (c->record != NULL) {
        struct cmdlog_rec r = {
            .code = s->timed ? CMDLOG_SCHEDULE : CMDLOG_ADD,
            .at_ms = (int64_t)now_ms,
            .name = s->name,
            .ttr = s->ttr,
            .ttl = s->ttl,
            .priority = s->priority,
            .max_attempts = s->max_attempts,
            .max_fails = s->max_fails,
            .payload = {s->payload, s->payload_len},
            .timed = s->timed,
            .time_ms = s->time_ms,
            .time_ns = s->time_ns,
            .created_ms = core_job_created(c, j),
        };
        memcpy(r.id, s->id, JOBID_LEN);
        c->record(c->record_arg, &r);
        if (s->nafter > 0) {
            struct cmdlog_rec a = {.code = CMDLOG_AFTER, .at_ms = (int64_t)now_ms};
            memcpy(a.id, s->id, JOBID_LEN);
            a.after = (struct wq_str){(const char *)s->after, s->nafter * JOBID_LEN};
            c->record(c->record_arg, &a);
        }
    }
    if (s->nafter > 0 && core_deps_wait(c, j, s->after, s->nafter)) {
        core_job_arm(c, j);
        return CORE_OK;
    }
    if (s->broadcast) {
        core_broadcast(c, j, s, now_ms);
        core_job_arm(c, j);
        return CORE_OK;
    }
    if (s->timed && s->time_ms > (int64_t)now_ms) {
        queue_push_scheduled(core_job_queue(c, j), j);
        c->stats.scheduled++;
    } else {
        core_make_ready(c, j, now_ms);
    }
    core_job_arm(c, j);
    return CORE_OK;
}

enum core_status
core_add(struct core *c, const struct job_spec *s, uint64_t now_ms)
{
    return core_add_job(c, s, now_ms, true);
}

enum core_status
core_run(struct core *c, const struct job_spec *s, uint64_t wait_ms, uint64_t now_ms,
         waiter_done_fn done, void *owner, struct waiter **parked)
{
    if (core_find(c, s->id) != NULL)
        return CORE_DUPLICATE;
    if (wait_ms == 0) {
        struct queue *q = registry_find(c->queues.by_name, s->name.p, s->name.n);
        if (q == NULL || queue_first_parked(q) == NULL)
            return CORE_TIMEOUT;
    }
    if (core_over_memory(c, s->payload_len, true)) /* its client waits: a job_ext */
        return CORE_NOMEM;
    struct job_spec spec = *s;
    spec.ttl = 0;
    spec.timed = false;
    spec.max_attempts = 1;
    spec.max_fails = 0;
    struct job *j = core_job_create(c, &spec, true, now_ms);
    if (j == NULL)
        return CORE_NOMEM;
    /* The waiter first, so a lease right away finds it. */
    struct waiter *w = core_waiter_new(c, WAITER_RUN, now_ms + wait_ms, done, owner);
    core_waiter_link(c, w, j);
    core_make_ready(c, j, now_ms);
    core_job_arm(c, j);
    *parked = w;
    return CORE_PARKED;
}

enum core_status
core_lease(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms, uint64_t now_ms,
           struct worker *who, waiter_done_fn done, void *owner, struct job **out,
           struct waiter **parked)
{
    /* Pick uniformly among the distinct names with a ready job (reservoir
     * sampling); the stamp makes a name listed twice count once. */
    uint64_t stamp = ++c->lease_stamp;
    struct queue *pick = NULL;
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        struct queue *q = registry_find(c->queues.by_name, names[i].p, names[i].n);
        if (q == NULL || q->mark == stamp)
            continue;
        q->mark = stamp;
        /* the base queue, or one of the named worker's targeted ones */
        struct queue *best = who != NULL               ? core_target_pick(c, q, who)
                             : heap_len(&q->ready) > 0 ? q
                                                       : NULL;
        if (best != NULL && core_random(c) % ++seen == 0)
            pick = best;
    }
    if (pick != NULL) {
        struct job *j = queue_peek_ready(pick);
        core_job_detach(c, j);
        core_lease_job(c, j, now_ms, who);
        if (who != NULL) {
            const char *base = queue_visible_name(pick);
            workers_note_queue(who, base, strlen(base));
        }
        *out = j;
        return CORE_OK;
    }
    if (wait_ms == 0)
        return CORE_TIMEOUT;

    /* Park on every distinct name, creating the queues that do not exist. */
    struct waiter *w = core_waiter_new(c, WAITER_LEASE, now_ms + wait_ms, done, owner);
    w->who = who;
    if (who != NULL)
        core_worker_waits(who, names, n);
    stamp = ++c->lease_stamp;
    struct queue **qs = NULL;
    size_t nq = 0;
    for (size_t i = 0; i < n; i++) {
        struct queue *q = queue_table_ref(&c->queues, names[i].p, names[i].n, c->exts);
        if (q->mark == stamp) {
            queue_table_unref(&c->queues, q);
            continue;
        }
        q->mark = stamp;
        if (nq == 0) {
            w->one.queue = q; /* the common single-name case needs no array */
        } else {
            if (nq == 1) {
                qs = wq_malloc(n * sizeof *qs);
                qs[0] = w->one.queue;
            }
            qs[nq] = q;
        }
        nq++;
    }
    w->nnodes = (uint32_t)nq;
    if (nq == 1) {
        w->nodes = &w->one;
        queue_park(w->one.queue, &w->one);
    } else {
        w->nodes = wq_calloc(nq, sizeof *w->nodes);
        for (size_t i = 0; i < nq; i++)
            queue_park(qs[i], &w->nodes[i]);
        wq_free(qs);
    }
    for (size_t i = 0; i < nq; i++)
        w->nodes[i].waiter = w;
    *parked = w;
    return CORE_PARKED;
}

/* May the worker holding j's lease in attempt (0: any) act on it?
 * CORE_OK, or why not. */
static enum core_status
core_lease_check(const struct core *c, const struct job *j, uint32_t attempt)
{
    const struct job_more *m = (j->flags & JOB_F_EXT) ? core_more_of(core_job_ext(c, j)) : NULL;
    if (m != NULL && m->cancelled)
        return CORE_CANCELLED;
    if (attempt > 0 && (j->state != JOB_LEASED || j->attempts != attempt))
        return CORE_STALE;
    return CORE_OK;
}

enum core_status
core_finish(struct core *c, const uint8_t id[JOBID_LEN], bool success, const char *data, size_t len,
            uint32_t attempt, uint64_t now_ms)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    enum core_status st = core_lease_check(c, j, attempt);
    if (st != CORE_OK)
        return st;
    if (job_is_done(j))
        return CORE_DUP_RESULT;

    if (!success) {
        j->fails++;
        bool retry = j->max_fails > 0 && j->fails < j->max_fails &&
                     (j->max_attempts == 0 || j->attempts < j->max_attempts);
        if (retry) {
            /* Back to waiting; a job still in a heap keeps its place there. */
            core_record_id(c, j, CMDLOG_FAIL_RETRY);
            c->totals.retried++;
            if (j->state == JOB_LEASED) {
                core_job_detach(c, j);
                core_job_place(c, j, JOB_PENDING, now_ms);
            } else {
                j->state = JOB_PENDING;
            }
            return CORE_OK;
        }
    }

    /* A result adds its bytes (and maybe the extension that holds it):
     * refused at the limit, the job stays as it was.  A run job's result
     * goes to its waiting client at once, and the job with it. */
    char *result = NULL;
    bool kept = !(j->flags & JOB_F_RUN);
    if (len > 0 && ((kept && core_over_limit(c, len + CORE_EXT_BYTES)) ||
                    (result = payload_new(data, len)) == NULL)) {
        if (!success)
            j->fails--;
        return CORE_NOMEM;
    }
    core_record_result(c, j, success ? CMDLOG_COMPLETE : CMDLOG_FAIL, data, len);
    core_job_settle(c, j, success ? JOB_COMPLETED : JOB_FAILED, result, (uint32_t)len);
    return CORE_OK;
}

enum core_status
core_touch(struct core *c, const uint8_t id[JOBID_LEN], uint32_t ttr_ms, uint32_t attempt,
           uint64_t now_ms)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    enum core_status st = core_lease_check(c, j, attempt);
    if (st != CORE_OK)
        return st;
    if (j->state != JOB_LEASED)
        return CORE_NOT_FOUND;
    j->lease_end = (uint32_t)(WQ_MAX(now_ms, c->wheel.now) + (ttr_ms > 0 ? ttr_ms : j->ttr));
    core_job_arm(c, j);
    return CORE_OK;
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

enum core_status
core_cancel_job(struct core *c, const uint8_t id[JOBID_LEN], uint64_t now_ms)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    if (job_is_done(j))
        return CORE_DUP_RESULT;
    core_job_cancel(c, j);
    return CORE_OK;
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

bool
core_same_job(const struct core *c, const struct job *j, const struct job_spec *s)
{
    const struct queue *q = core_job_queue(c, j);
    if (q->name_len != s->name.n || memcmp(q->name, s->name.p, s->name.n) != 0 ||
        j->payload_len != s->payload_len ||
        (s->payload_len > 0 && memcmp(j->payload, s->payload, s->payload_len) != 0) ||
        j->ttr != s->ttr || j->ttl != s->ttl || j->priority != s->priority ||
        j->max_attempts != s->max_attempts || j->max_fails != s->max_fails ||
        (j->flags & JOB_F_RUN) || !(j->flags & JOB_F_TIMED) != !s->timed)
        return false;
    if (!s->timed)
        return true;
    const struct job_ext *x = core_job_ext(c, j);
    return j->base_ms == s->time_ms && (x != NULL ? x->time_ns : 0) == s->time_ns;
}

enum core_status
core_delete(struct core *c, const uint8_t id[JOBID_LEN])
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    core_record_id(c, j, CMDLOG_DELETE);
    core_job_destroy(c, j);
    return CORE_OK;
}

enum core_status
core_result(struct core *c, const uint8_t id[JOBID_LEN], uint64_t wait_ms, uint64_t now_ms,
            waiter_done_fn done, void *owner, struct job **out, struct waiter **parked)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    if (job_is_done(j)) {
        *out = j;
        return CORE_OK;
    }
    if (wait_ms == 0)
        return CORE_TIMEOUT;
    struct waiter *w = core_waiter_new(c, WAITER_RESULT, now_ms + wait_ms, done, owner);
    core_waiter_link(c, w, j);
    *parked = w;
    return CORE_PARKED;
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
        if (c->side_ops != NULL)
            c->side_ops->advance(c->side, t);
        if (t == now_ms && core_next_event(c) > now_ms)
            break;
    }
}

uint64_t
core_next_event(const struct core *c)
{
    uint64_t side = c->side_ops != NULL ? c->side_ops->next_event(c->side) : WHEEL_NEVER;
    return WQ_MIN(WQ_MIN(wheel_next_event(&c->wheel), wheel_next_event(&c->wait_wheel)), side);
}

static void
core_free_job(void *elem, void *arg)
{
    struct job *j = elem;
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
    WQ_ASSERT(c->stats.parked == 0); /* owners cancel their waiters first */
    registry_foreach(c->jobs, core_free_job, NULL);
    registry_foreach(c->exts, core_free_ext, NULL);
    registry_free(c->jobs);
    registry_free(c->exts);
    queue_table_clear(&c->queues);
    workers_free(c->workers);
    if (c->side_ops != NULL)
        c->side_ops->free(c->side);
    core_targets_free(c);
    pool_clear(&c->job_pool);
    pool_clear(&c->ext_pool);
    pool_clear(&c->waiter_pool);
    wq_free(c);
}
