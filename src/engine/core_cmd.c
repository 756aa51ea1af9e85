/* core_cmd.c - the commands on the core's jobs: add (with its
 * prerequisites and broadcast copies), run, lease, finish, touch, cancel,
 * delete, result and wait-all, and withdrawing a waiter; built on core.c's
 * transitions, core_wait.c's waiters and core_deps.c's prerequisites. */
#include "lib/wq.h"
#include "engine/core.h"

#include <string.h>
#include <uuid/uuid.h>

#include "lib/alloc.h"
#include "engine/core_internal.h"
#include "engine/workers.h"
#include "lib/backoff.h"
#include "lib/payload.h"

/* xorshift64*: uniform enough to pick among a lease's names. */
static uint64_t
core_random(struct core *c)
{
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return c->rng * 0x2545F4914F6CDD1DULL;
}

bool
core_over_memory(const struct core *c, size_t payload_len, bool with_ext)
{
    uint64_t need = core_job_bytes(payload_len) + (with_ext ? CORE_EXT_BYTES : 0);
    return core_over_limit(c, need);
}

/* The job s names (by its key, or its id), or NULL. */
static struct job *
core_spec_find(const struct core *c, const struct job_spec *s)
{
    return s->key.len > 0 ? core_find_key(c, &s->key) : core_find(c, s->id);
}

/* A new registered job from s, not yet placed anywhere, or NULL if its
 * payload cannot be allocated. */
static struct job *
core_job_create(struct core *c, const struct job_spec *s, bool run, uint64_t now_ms)
{
    char *payload = NULL;
    if (s->key.len == 0 && s->payload_len > 0 &&
        (payload = payload_new(s->payload, s->payload_len)) == NULL)
        return NULL;

    struct job *j = pool_get(&c->job_pool);
    memset(j, 0, sizeof *j);
    unsigned flags = (s->timed ? JOB_F_TIMED : 0) | (run ? JOB_F_RUN : 0) |
                     (s->backoff == CORE_BACKOFF_FAKTORY ? JOB_F_BACKOFF : 0) |
                     (s->dead ? JOB_F_DEAD : 0);
    struct core_space *sp = &c->space[s->key.space];
    if (__builtin_expect(s->key.len > 0, 0)) { /* a key of its space's, kept apart */
        if (!job_keyed_set(j, &s->key, s->payload, s->payload_len)) {
            pool_put(&c->job_pool, j);
            return NULL;
        }
        payload = j->payload;
        flags |= JOB_F_KEY;
        c->bytes += s->key.len;
    } else {
        memcpy(j->id, s->id, JOBID_LEN);
    }
    struct queue *q = queue_table_ref(&sp->queues, s->name.p, s->name.n, sp->exts);
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
    j->flags = flags;
    j->base_ms = s->timed ? s->time_ms : created;
    registry_insert(sp->jobs, j);
    sp->totals.added++;
    if (s->timed) {
        struct job_ext *x = core_ext_need(c, j);
        x->created_ms = created;
        x->time_ns = s->time_ns;
        if (s->time_ns != 0)
            j->flags |= JOB_F_NS;
    }
    return j;
}

/* New unplaced job j (s->broadcast): add its copies, log them, and make
 * it wait for them. */
static void
core_broadcast(struct core *c, struct job *j, const struct job_spec *s, uint64_t now_ms)
{
    size_t n, k = 0;
    struct worker **ws = workers_sorted(c->workers, &n);
    uint8_t(*copies)[JOBID_LEN] = wq_malloc((n + 1) * JOBID_LEN);
    for (size_t i = 0; i < n; i++) {
        const struct worker *w = ws[i];
        if (!workers_present(w, s->name.p, s->name.n) || s->name.n + 1 + w->wid_len > WQ_MAX_NAME)
            continue;
        /* the copy: the same job, for w alone, under an id of its own */
        char name[WQ_MAX_NAME + 1];
        memcpy(name, s->name.p, s->name.n);
        name[s->name.n] = QUEUE_TARGET_SEP;
        memcpy(name + s->name.n + 1, w->wid, w->wid_len);
        struct job_spec cs = *s;
        cs.broadcast = false;
        cs.name = (struct wq_str){name, s->name.n + 1 + w->wid_len};
        uuid_generate_sha1(cs.id, s->id, w->wid, w->wid_len);
        if (core_add_job(c, &cs, now_ms, false) == CORE_OK)
            memcpy(copies[k++], cs.id, JOBID_LEN);
    }
    if (c->record != NULL) {
        struct cmdlog_rec r = {.code = CMDLOG_BROADCAST, .at_ms = (int64_t)now_ms};
        memcpy(r.id, j->id, JOBID_LEN);
        r.after = (struct wq_str){(const char *)copies, k * JOBID_LEN};
        c->record(c->record_arg, &r);
    }
    core_deps_broadcast(c, j, (const uint8_t(*)[JOBID_LEN])copies, k);
    wq_free(copies);
    wq_free(ws);
}

/* core_add, and replay's add: limited says whether -max-memory applies
 * (the log's jobs were acknowledged, so replay never refuses them). */
enum core_status
core_add_job(struct core *c, const struct job_spec *s, uint64_t now_ms, bool limited)
{
    WQ_ASSERT(s->key.len == 0 || (s->nafter == 0 && !s->broadcast)); /* ids only */
    if (core_spec_find(c, s) != NULL)
        return CORE_DUPLICATE;
    if (limited && s->nafter > 0 && core_deps_check(c, s->after, s->nafter) != CORE_OK)
        return CORE_BAD_PREREQ;
    if (limited && core_over_memory(c, s->payload_len + s->key.len, s->timed))
        return CORE_NOMEM;
    struct job *j = core_job_create(c, s, false, now_ms);
    if (j == NULL)
        return CORE_NOMEM;
    if (c->record != NULL && s->key.len == 0) { /* other spaces: not logged yet */
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
        if (s->backoff != CORE_BACKOFF_NONE || s->dead) {
            struct cmdlog_rec p = {.code = CMDLOG_POLICY,
                                   .at_ms = (int64_t)now_ms,
                                   .backoff = s->backoff,
                                   .dead = s->dead};
            memcpy(p.id, s->id, JOBID_LEN);
            c->record(c->record_arg, &p);
        }
        if (s->nafter > 0) {
            struct cmdlog_rec a = {.code = CMDLOG_AFTER, .at_ms = (int64_t)now_ms};
            memcpy(a.id, s->id, JOBID_LEN);
            a.after = (struct wq_str){(const char *)s->after, s->nafter * JOBID_LEN};
            c->record(c->record_arg, &a);
        }
    }
    if (s->nafter > 0 && core_deps_wait(c, j, s->after, s->nafter)) {
        /* failed at once for a failed prerequisite, it may have gone
         * already (into a dead set that keeps none) */
        if ((j = core_find(c, s->id)) != NULL)
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
        core_space_of(c, j)->stats.scheduled++;
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
core_restore(struct core *c, const struct job_spec *s, uint64_t now_ms)
{
    return core_add_job(c, s, now_ms, false);
}

void
core_job_take(struct core *c, struct job *j, uint64_t now_ms)
{
    core_job_detach(c, j);
    core_lease_job(c, j, now_ms, NULL);
}

enum core_status
core_run(struct core *c, const struct job_spec *s, uint64_t wait_ms, uint64_t now_ms,
         waiter_done_fn done, void *owner, struct waiter **parked)
{
    if (core_spec_find(c, s) != NULL)
        return CORE_DUPLICATE;
    if (wait_ms == 0) {
        struct queue *q =
            registry_find(c->space[s->key.space].queues.by_name, s->name.p, s->name.n);
        if (q == NULL || queue_first_parked(q) == NULL)
            return CORE_TIMEOUT;
    }
    if (core_over_memory(c, s->payload_len + s->key.len, true)) /* its client waits: a job_ext */
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
    struct waiter *w = core_waiter_new(c, s->key.space, WAITER_RUN, now_ms + wait_ms, done, owner);
    core_waiter_link(c, w, j);
    core_make_ready(c, j, now_ms);
    core_job_arm(c, j);
    *parked = w;
    return CORE_PARKED;
}

/* core_lease_in's body, inlined into both it and core_lease (Workq's hot
 * path). */
__attribute__((always_inline)) static inline enum core_status
core_lease_from(struct core *c, uint8_t space, const struct wq_str *names, size_t n,
                uint64_t wait_ms, uint64_t now_ms, struct worker *who, waiter_done_fn done,
                void *owner, struct job **out, struct waiter **parked)
{
    struct core_space *sp = &c->space[space];
    /* Pick uniformly among the distinct names with a ready job (reservoir
     * sampling), or the first (CORE_SPACE_ORDERED); the stamp makes a name
     * listed twice count once; paused queues are passed by. */
    uint64_t stamp = ++c->lease_stamp;
    struct queue *pick = NULL;
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        struct queue *q = registry_find(sp->queues.by_name, names[i].p, names[i].n);
        if (q == NULL || q->mark == stamp || q->paused)
            continue;
        q->mark = stamp;
        /* the base queue, or one of the named worker's targeted ones */
        struct queue *best = who != NULL               ? core_target_pick(c, q, who)
                             : heap_len(&q->ready) > 0 ? q
                                                       : NULL;
        if (best != NULL && (sp->flags & CORE_SPACE_ORDERED)) {
            pick = best;
            break;
        }
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
    struct waiter *w = core_waiter_new(c, space, WAITER_LEASE, now_ms + wait_ms, done, owner);
    w->who = who;
    if (who != NULL)
        core_worker_waits(who, names, n);
    stamp = ++c->lease_stamp;
    struct queue **qs = NULL;
    size_t nq = 0;
    for (size_t i = 0; i < n; i++) {
        struct queue *q = queue_table_ref(&sp->queues, names[i].p, names[i].n, sp->exts);
        if (q->mark == stamp) {
            queue_table_unref(&sp->queues, q);
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

enum core_status
core_lease(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms, uint64_t now_ms,
           struct worker *who, waiter_done_fn done, void *owner, struct job **out,
           struct waiter **parked)
{
    return core_lease_from(c, JOB_SPACE_IDS, names, n, wait_ms, now_ms, who, done, owner, out,
                           parked);
}

enum core_status
core_lease_in(struct core *c, uint8_t space, const struct wq_str *names, size_t n, uint64_t wait_ms,
              uint64_t now_ms, struct worker *who, waiter_done_fn done, void *owner,
              struct job **out, struct waiter **parked)
{
    return core_lease_from(c, space, names, n, wait_ms, now_ms, who, done, owner, out, parked);
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

/* core_finish_job's body, inlined into both it and core_finish (Workq's
 * hot path). */
__attribute__((always_inline)) static inline enum core_status
core_finish_at(struct core *c, struct job *j, bool success, const char *data, size_t len,
               uint32_t attempt, uint64_t now_ms)
{
    enum core_status st = core_lease_check(c, j, attempt);
    if (st != CORE_OK)
        return st;
    if (job_is_done(j))
        return CORE_DUP_RESULT;

    if (!success) {
        j->fails++;
        bool retry = j->max_fails > 0 && j->fails < j->max_fails &&
                     (j->max_attempts == 0 || j->attempts < j->max_attempts);
        if (retry && (j->flags & JOB_F_BACKOFF) && j->state != JOB_WAITING) {
            /* Back to waiting, until its backoff is over. */
            uint64_t at =
                backoff_faktory_at(now_ms, j->fails - 1u, core_random(c) % 30, c->backoff_unit_ms);
            core_record_backoff(c, j, (int64_t)at);
            core_space_of(c, j)->totals.retried++;
            core_job_backoff(c, j, (int64_t)at);
            return CORE_OK;
        }
        if (retry) {
            /* Back to waiting; a job still in a heap keeps its place there. */
            core_record_id(c, j, CMDLOG_FAIL_RETRY);
            core_space_of(c, j)->totals.retried++;
            if (j->state == JOB_LEASED) {
                core_job_detach(c, j);
                core_job_place(c, j, JOB_PENDING, now_ms);
            } else if (j->state != JOB_WAITING) { /* a waiting job waits on */
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
    bool run = j->flags & JOB_F_RUN; /* settled, a run job is gone */
    core_job_settle(c, j, success ? JOB_COMPLETED : JOB_FAILED, result, (uint32_t)len);
    if (!success && !run)
        core_job_die(c, j, (int64_t)now_ms);
    return CORE_OK;
}

enum core_status
core_finish(struct core *c, const uint8_t id[JOBID_LEN], bool success, const char *data, size_t len,
            uint32_t attempt, uint64_t now_ms)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    return core_finish_at(c, j, success, data, len, attempt, now_ms);
}

enum core_status
core_finish_job(struct core *c, struct job *j, bool success, const char *data, size_t len,
                uint32_t attempt, uint64_t now_ms)
{
    return core_finish_at(c, j, success, data, len, attempt, now_ms);
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

bool
core_same_job(const struct core *c, const struct job *j, const struct job_spec *s)
{
    const struct queue *q = core_job_queue(c, j);
    if (q->name_len != s->name.n || memcmp(q->name, s->name.p, s->name.n) != 0 ||
        j->payload_len != s->payload_len ||
        (s->payload_len > 0 && memcmp(j->payload, s->payload, s->payload_len) != 0) ||
        j->ttr != s->ttr || j->ttl != s->ttl || j->priority != s->priority ||
        j->max_attempts != s->max_attempts || j->max_fails != s->max_fails ||
        (j->flags & JOB_F_RUN) || !(j->flags & JOB_F_TIMED) != !s->timed ||
        !(j->flags & JOB_F_BACKOFF) != (s->backoff == CORE_BACKOFF_NONE) ||
        !(j->flags & JOB_F_DEAD) != !s->dead)
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
    core_delete_job(c, j);
    return CORE_OK;
}

void
core_delete_job(struct core *c, struct job *j)
{
    core_record_id(c, j, CMDLOG_DELETE);
    core_job_destroy(c, j);
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
    struct waiter *w =
        core_waiter_new(c, job_space(j), WAITER_RESULT, now_ms + wait_ms, done, owner);
    core_waiter_link(c, w, j);
    *parked = w;
    return CORE_PARKED;
}

/* Has fan-in w a part waiting on j already (an id listed twice)? */
static bool
core_part_of(const struct core *c, const struct job *j, const struct waiter *w)
{
    const struct job_ext *x = core_job_ext(c, j);
    for (struct hlist_node *n = x->waiters.first; n != NULL; n = n->next)
        if (core_waiter_of(n)->group == w)
            return true;
    return false;
}

enum core_status
core_wait_all(struct core *c, const uint8_t (*ids)[JOBID_LEN], size_t n, uint64_t wait_ms,
              uint64_t now_ms, wait_all_fn done, void *owner, struct waiter **parked)
{
    size_t pending = 0;
    for (size_t i = 0; i < n; i++) {
        const struct job *j = core_find(c, ids[i]);
        if (j == NULL)
            return CORE_NOT_FOUND;
        pending += !job_is_done(j);
    }
    if (pending == 0)
        return CORE_OK;
    if (wait_ms == 0)
        return CORE_TIMEOUT;
    struct waiter *w = core_waiter_new(c, JOB_SPACE_IDS, WAITER_ALL, now_ms + wait_ms, NULL, owner);
    w->all_done = done;
    w->ids = wq_malloc(n * JOBID_LEN);
    memcpy(w->ids, ids, n * JOBID_LEN);
    w->parts = wq_calloc(n, sizeof *w->parts);
    w->nids = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        struct job *j = core_find(c, ids[i]);
        if (job_is_done(j) || (core_job_ext(c, j) != NULL && core_part_of(c, j, w)))
            continue;
        struct waiter *p = pool_get(&c->waiter_pool);
        memset(p, 0, sizeof *p);
        p->kind = WAITER_PART;
        p->group = w;
        p->part_ix = (uint32_t)i;
        wheel_entry_init(&p->timer);
        core_waiter_link(c, p, j);
        w->parts[i] = p;
        w->pending++;
    }
    *parked = w;
    return CORE_PARKED;
}

void
core_cancel(struct core *c, struct waiter *w)
{
    struct job *run_job = w->kind == WAITER_RUN ? w->job : NULL;
    core_waiter_free(c, w);
    if (run_job != NULL)
        core_job_destroy(c, run_job);
}

enum core_status
core_revive(struct core *c, const uint8_t id[JOBID_LEN], uint64_t now_ms)
{
    struct job *j = core_find(c, id);
    if (j == NULL)
        return CORE_NOT_FOUND;
    return core_revive_job(c, j, now_ms);
}

enum core_status
core_revive_job(struct core *c, struct job *j, uint64_t now_ms)
{
    if (core_job_died(c, j) == 0)
        return CORE_NOT_DEAD;
    core_record_id(c, j, CMDLOG_REVIVE);
    core_job_revive(c, j, now_ms);
    return CORE_OK;
}

void
core_set_dead_limits(struct core *c, uint8_t space, uint64_t ttl_ms, uint64_t max)
{
    c->space[space].dead.ttl_ms = ttl_ms;
    c->space[space].dead.max = max;
}
