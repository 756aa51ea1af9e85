/* fjobs.c - the Faktory front-end's jobs in their key space of the job
 * core: Faktory's moves as the core's, their records, their replay
 * (fjobs.h). */
#include "lib/wq.h"
#include "faktory/fjobs.h"

#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/payload.h"
#include "lib/registry.h"

#define FJOB_INDEX_BYTES 32 /* a heap item and a registry slot (CORE_JOB_INDEX_BYTES) */

/* ---- records ---- */

/* Record code for j (with payload text and time when the code has them). */
static void
fjobs_record(const struct fjobs *fs, enum cmdlog_code code, const struct job *j, const char *text,
             size_t len, uint64_t time_ms)
{
    const struct core *c = fs->core;
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {
        .code = (uint8_t)code,
        .at_ms = (int64_t)c->now_ms,
        .jid = {fjob_jid(j), fjob_jid_len(j)},
        .payload = {text, len},
        .timed = true,
        .time_ms = (int64_t)time_ms,
    };
    c->record(c->record_arg, &r);
}

static void
fjobs_record_queue(const struct fjobs *fs, enum cmdlog_code code, struct wq_str name)
{
    const struct core *c = fs->core;
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {.code = (uint8_t)code, .at_ms = (int64_t)c->now_ms, .name = name};
    c->record(c->record_arg, &r);
}

/* ---- what the core asks of the space's owner ---- */

/* core_space_ops.ttr_expired: a reservation ran out. */
static void
fjobs_ttr_expired(void *arg, struct core *c, struct job *j)
{
    struct fjobs *fs = arg;
    fs->stats.expired++;
    fs->stats.failures++;
    fs->stats.processed++; /* as Faktory counts */
    if (fs->expired != NULL)
        fs->expired(fs->expired_arg, fs, j);
    else
        fjobs_retry(fs, j, j->payload, j->payload_len, c->now_ms);
}

/* core_space_ops.dead_gone: a dead job goes by the set's bounds. */
static void
fjobs_dead_gone(void *arg, struct core *c, struct job *j, bool aged)
{
    struct fjobs *fs = arg;
    if (aged)
        fs->stats.dead_expired++;
    fjobs_record(fs, CMDLOG_F_DISCARD, j, NULL, 0, 0);
}

/* core_space_ops.due: a scheduled or retried job entered its queue. */
static void
fjobs_due_cb(void *arg, struct core *c, struct job *j, bool retry)
{
    struct fjobs *fs = arg;
    if (retry)
        fs->stats.due_retries++;
    else
        fs->stats.due_scheduled++;
}

/* core_space_ops.leased: a FETCH got j. */
static void
fjobs_leased(void *arg, struct core *c, const struct job *j)
{
    struct fjobs *fs = arg;
    fjobs_record(fs, CMDLOG_F_FETCH, j, NULL, 0, 0);
    fs->stats.fetched++;
}

/* core_space_ops.clear_totals: the metrics' counters, after replay. */
static void
fjobs_clear_totals(void *arg)
{
    struct fjobs_stats *st = &((struct fjobs *)arg)->stats;
    st->pushed = st->fetched = st->acked = 0;
}

static void fjobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);

static const struct core_space_ops fjobs_space_ops = {
    .ttr_expired = fjobs_ttr_expired,
    .dead_gone = fjobs_dead_gone,
    .due = fjobs_due_cb,
    .leased = fjobs_leased,
    .replay = fjobs_replay,
    .clear_totals = fjobs_clear_totals,
};

struct fjobs *
fjobs_new(struct core *c)
{
    struct fjobs *fs = wq_calloc(1, sizeof *fs);
    fs->core = c;
    fs->space = core_space_open(c, "faktory", &fjobs_space_ops, fs,
                                CORE_SPACE_ORDERED | CORE_SPACE_FIFO, CMDLOG_F_PUSH, CMDLOG_F_MAX);
    fjobs_set_dead_limits(fs, FJOBS_DEFAULT_DEAD_TTL_MS, FJOBS_DEFAULT_DEAD_MAX);
    return fs;
}

void
fjobs_free(struct fjobs *fs)
{
    wq_free(fs);
}

void
fjobs_set_expired(struct fjobs *fs, fjobs_expired_fn fn, void *arg)
{
    fs->expired = fn;
    fs->expired_arg = arg;
}

void
fjobs_set_dead_limits(struct fjobs *fs, uint64_t ttl_ms, uint64_t max)
{
    fs->dead_ttl_ms = ttl_ms;
    core_set_dead_limits(fs->core, fs->space, ttl_ms, max);
}

uint64_t
fjobs_job_bytes(size_t jid_len, size_t text_len)
{
    return core_job_bytes(text_len) + jid_len;
}

/* ---- a job's state ---- */

struct job *
fjobs_find(const struct fjobs *fs, const char *jid, size_t len)
{
    struct job_key k = {(const uint8_t *)jid, len, fs->space};
    return len > 0 && len <= FJOB_MAX_JID ? core_find_key(fs->core, &k) : NULL;
}

enum fjob_state
fjobs_state(const struct fjobs *fs, const struct job *j)
{
    if (j->state == JOB_LEASED)
        return FJOB_WORKING;
    if (j->place == JOB_IN_READY)
        return FJOB_ENQUEUED;
    if (j->place == JOB_IN_SCHEDULED)
        return j->state == JOB_PENDING ? FJOB_RETRY : FJOB_SCHEDULED;
    return FJOB_DEAD;
}

uint64_t
fjobs_due(const struct fjobs *fs, const struct job *j)
{
    if (j->place == JOB_IN_SCHEDULED)
        return (uint64_t)job_due_ms(j, fs->core->space[fs->space].exts);
    return core_dead_end(fs->core, j);
}

struct queue *
fjobs_queue(const struct fjobs *fs, struct wq_str name)
{
    return core_space_queue(fs->core, fs->space, name.p, name.n);
}

const struct job *
fjobs_queue_head(const struct fjobs *fs, struct wq_str name)
{
    const struct queue *q = fjobs_queue(fs, name);
    return q != NULL ? queue_peek_ready(q) : NULL;
}

void
fjobs_counts(const struct fjobs *fs, struct core_space_counts *out)
{
    core_space_counts(fs->core, fs->space, out);
}

/* ---- commands ---- */

/* The core's spec of the job s describes.  Its jid is bytes of its text
 * (as "jid":"..."; unless escaped there): the core keeps them once. */
static struct job_spec
fjobs_spec(const struct fjobs *fs, const struct fjob_spec *s, bool later)
{
    const char *jid = memmem(s->text, s->text_len, s->jid.p, s->jid.n);
    struct job_spec js = {
        .key = {(const uint8_t *)(jid != NULL ? jid : s->jid.p), s->jid.n, fs->space},
        .name = s->queue,
        .ttr = s->reserve_s * 1000u,
        .ttl = UINT64_MAX, /* no TTL */
        .priority = s->priority,
        .timed = later,
        .time_ms = later ? s->at_ms : 0,
        .payload = s->text,
        .payload_len = s->text_len,
    };
    return js;
}

enum core_status
fjobs_push(struct fjobs *fs, const struct fjob_spec *s, uint64_t now_ms)
{
    struct core *c = fs->core;
    if (fjobs_find(fs, s->jid.p, s->jid.n) != NULL)
        return CORE_DUPLICATE;
    if (core_over_limit(c, fjobs_job_bytes(s->jid.n, s->text_len)))
        return CORE_NOMEM;
    bool later = s->at_ms > 0 && (uint64_t)s->at_ms > now_ms;
    if (c->record != NULL) {
        struct cmdlog_rec r = {
            .code = CMDLOG_F_PUSH,
            .at_ms = (int64_t)now_ms,
            .jid = s->jid,
            .name = s->queue,
            .priority = s->priority,
            .ttr = s->reserve_s,
            .payload = {s->text, s->text_len},
            .timed = later,
            .time_ms = later ? s->at_ms : 0,
        };
        c->record(c->record_arg, &r);
    }
    struct job_spec js = fjobs_spec(fs, s, later);
    /* a FETCH parked on the queue takes it at once: logged by its done */
    enum core_status st = core_restore(c, &js, now_ms);
    if (st == CORE_OK)
        fs->stats.pushed++;
    return st;
}

enum core_status
fjobs_fetch(struct fjobs *fs, const struct wq_str *names, size_t n, uint64_t wait_ms,
            uint64_t now_ms, waiter_done_fn done, void *owner, struct job **out,
            struct waiter **parked)
{
    return core_lease_in(fs->core, fs->space, names, n, wait_ms, now_ms, NULL, done, owner, out,
                         parked);
}

void
fjobs_cancel(struct fjobs *fs, struct waiter *w)
{
    core_cancel(fs->core, w);
}

enum core_status
fjobs_ack(struct fjobs *fs, const char *jid, size_t len)
{
    struct job *j = fjobs_find(fs, jid, len);
    if (j == NULL || j->state != JOB_LEASED)
        return CORE_NOT_FOUND;
    fjobs_record(fs, CMDLOG_F_ACK, j, NULL, 0, 0);
    fs->stats.processed++;
    fs->stats.acked++;
    core_delete_job(fs->core, j);
    return CORE_OK;
}

void
fjobs_retry(struct fjobs *fs, struct job *j, const char *text, size_t len, uint64_t at_ms)
{
    fjobs_record(fs, CMDLOG_F_RETRY, j, text, len, at_ms);
    if (text != j->payload)
        core_job_set_payload(fs->core, j, text, len);
    if (core_job_died(fs->core, j) != 0)
        core_job_requeue(fs->core, j, fs->core->now_ms); /* out of the set first */
    core_job_retry_at(fs->core, j, (int64_t)WQ_MAX(at_ms, 1));
}

void
fjobs_kill(struct fjobs *fs, struct job *j, const char *text, size_t len)
{
    struct core *c = fs->core;
    uint64_t until = c->now_ms + fs->dead_ttl_ms;
    if (text == NULL) {
        text = j->payload;
        len = j->payload_len;
    }
    fjobs_record(fs, CMDLOG_F_DEAD, j, text, len, until);
    if (text != j->payload)
        core_job_set_payload(c, j, text, len);
    if (core_job_died(c, j) == 0)
        core_job_kill(c, j, (int64_t)c->now_ms);
}

void
fjobs_discard(struct fjobs *fs, struct job *j)
{
    fjobs_record(fs, CMDLOG_F_DISCARD, j, NULL, 0, 0);
    core_delete_job(fs->core, j);
}

void
fjobs_requeue(struct fjobs *fs, struct job *j)
{
    fjobs_record(fs, CMDLOG_F_REQUEUE, j, NULL, 0, 0);
    core_job_requeue(fs->core, j, fs->core->now_ms);
}

void
fjobs_pause(struct fjobs *fs, struct wq_str name, bool paused)
{
    const struct queue *q = fjobs_queue(fs, name);
    if (q == NULL || q->paused == paused)
        return;
    fjobs_record_queue(fs, paused ? CMDLOG_F_PAUSE : CMDLOG_F_RESUME, name);
    core_queue_pause(fs->core, fs->space, name.p, name.n, paused);
}

void
fjobs_queue_clear(struct fjobs *fs, struct wq_str name)
{
    struct queue *q = fjobs_queue(fs, name);
    if (q == NULL)
        return;
    struct job *j;
    while ((q = fjobs_queue(fs, name)) != NULL && (j = queue_peek_ready(q)) != NULL)
        fjobs_discard(fs, j);
    fjobs_pause(fs, name, false);
}

/* registry_foreach: every job of the space into an array. */
static void
fjobs_collect(void *elem, void *arg)
{
    struct job ***at = arg;
    *(*at)++ = elem;
}

/* registry_foreach: every queue of the space into an array. */
static void
fjobs_collect_queue(void *elem, void *arg)
{
    struct queue ***at = arg;
    *(*at)++ = elem;
}

void
fjobs_flush(struct fjobs *fs)
{
    const struct core_space *sp = &fs->core->space[fs->space];
    size_t n = registry_count(sp->jobs);
    struct job **all = wq_malloc((n + 1) * sizeof *all), **at = all;
    registry_foreach(sp->jobs, fjobs_collect, &at);
    for (size_t i = 0; i < n; i++)
        fjobs_discard(fs, all[i]);
    wq_free(all);
    size_t nq;
    struct queue **qs = fjobs_queues_sorted(fs, &nq);
    char name[FJOB_MAX_QUEUE + 1];
    for (size_t i = 0; i < nq; i++) {
        if (!qs[i]->paused)
            continue;
        size_t len = qs[i]->name_len;
        memcpy(name, qs[i]->name, len); /* the queue goes with its resume */
        fjobs_pause(fs, (struct wq_str){name, len}, false);
    }
    wq_free(qs);
}

/* A job of a set and its due time, for sorting. */
struct fjobs_due_job {
    uint64_t due;
    struct job *j;
};

/* Order of the jobs of a set: due time, then arrival. */
static int
fjobs_cmp_due(const void *a, const void *b)
{
    const struct fjobs_due_job *x = a, *y = b;
    if (x->due != y->due)
        return x->due < y->due ? -1 : 1;
    return x->j->seq < y->j->seq ? -1 : x->j->seq > y->j->seq;
}

void
fjobs_sort_due(const struct fjobs *fs, struct job **jobs, size_t n)
{
    struct fjobs_due_job *d = wq_malloc((n + 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = (struct fjobs_due_job){fjobs_due(fs, jobs[i]), jobs[i]};
    qsort(d, n, sizeof *d, fjobs_cmp_due);
    for (size_t i = 0; i < n; i++)
        jobs[i] = d[i].j;
    wq_free(d);
}

struct job **
fjobs_set_jobs(const struct fjobs *fs, enum fjob_set set, size_t *n)
{
    static const enum fjob_state state_of[FSET_COUNT] = {FJOB_SCHEDULED, FJOB_RETRY, FJOB_DEAD};
    const struct core_space *sp = &fs->core->space[fs->space];
    size_t all = registry_count(sp->jobs);
    struct job **out = wq_malloc((all + 1) * sizeof *out), **at = out;
    registry_foreach(sp->jobs, fjobs_collect, &at);
    size_t k = 0;
    for (size_t i = 0; i < all; i++)
        if (fjobs_state(fs, out[i]) == state_of[set])
            out[k++] = out[i];
    fjobs_sort_due(fs, out, k);
    *n = k;
    return out;
}

static int
fjobs_cmp_name(const void *a, const void *b)
{
    const struct queue *x = *(struct queue *const *)a, *y = *(struct queue *const *)b;
    return strcmp(x->name, y->name);
}

struct queue **
fjobs_queues_sorted(const struct fjobs *fs, size_t *n)
{
    const struct registry *names = fs->core->space[fs->space].queues.by_name;
    *n = registry_count(names);
    struct queue **out = wq_malloc((*n + 1) * sizeof *out), **at = out;
    registry_foreach(names, fjobs_collect_queue, &at);
    qsort(out, *n, sizeof *out, fjobs_cmp_name);
    return out;
}

/* ---- replay ---- */

/* Re-create the job of a push record. */
static void
fjobs_replay_push(struct fjobs *fs, const struct cmdlog_rec *r, uint64_t now_ms)
{
    if (r->jid.n == 0 || r->jid.n > FJOB_MAX_JID || r->name.n == 0 || r->name.n > FJOB_MAX_QUEUE ||
        r->priority < FJOB_PRIORITY_MIN || r->priority > FJOB_PRIORITY_MAX ||
        r->ttr > WQ_MAX_TTR_MS / 1000 || r->payload.n < 2 || r->payload.n > UINT32_MAX)
        return;
    struct fjob_spec s = {
        .jid = r->jid,
        .queue = r->name,
        .priority = (uint8_t)r->priority,
        .reserve_s = (uint32_t)r->ttr,
        .at_ms = r->timed ? r->time_ms : 0,
        .text = r->payload.p,
        .text_len = r->payload.n,
    };
    /* scheduled when it was pushed: it waits for its time, even one passed
     * meanwhile, to enter its queue as it would have, after the jobs
     * pushed before that time */
    bool later = r->timed && r->time_ms > r->at_ms;
    struct job_spec js = fjobs_spec(fs, &s, later);
    if (core_restore(fs->core, &js, later ? (uint64_t)WQ_MAX(r->at_ms, 0) : now_ms) != CORE_OK)
        wq_panic(__FILE__, __LINE__, "out of memory replaying a job");
    struct job *j = fjobs_find(fs, r->jid.p, r->jid.n);
    if (!later)
        j->base_ms = r->at_ms; /* enqueued when it was pushed */
}

/* core_space_ops.replay: a Faktory record of the command log. */
static void
fjobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    struct fjobs *fs = arg;
    struct job *j = r->jid.n > 0 ? fjobs_find(fs, r->jid.p, r->jid.n) : NULL;
    enum fjob_state state = j != NULL ? fjobs_state(fs, j) : FJOB_STATE_COUNT;
    bool text = r->payload.n >= 2 && r->payload.n <= UINT32_MAX;
    switch (r->code) {
    case CMDLOG_F_PUSH:
        if (j == NULL)
            fjobs_replay_push(fs, r, now_ms);
        break;
    case CMDLOG_F_FETCH:
        /* the reservation starts over from now */
        if (j != NULL && state != FJOB_WORKING && state != FJOB_DEAD)
            core_job_take(c, j, now_ms);
        break;
    case CMDLOG_F_ACK:
    case CMDLOG_F_DISCARD:
        if (j != NULL)
            core_delete_job(c, j);
        break;
    case CMDLOG_F_RETRY:
        if (j != NULL && text)
            fjobs_retry(fs, j, r->payload.p, r->payload.n, (uint64_t)WQ_MAX(r->time_ms, 0));
        break;
    case CMDLOG_F_DEAD:
        if (j != NULL && text && state != FJOB_DEAD) {
            /* dead until the time recorded, whatever the bound is now */
            core_job_set_payload(c, j, r->payload.p, r->payload.n);
            uint64_t ttl = fs->dead_ttl_ms;
            int64_t died = r->time_ms > 0 && (uint64_t)r->time_ms > ttl
                               ? (int64_t)((uint64_t)r->time_ms - ttl)
                               : 1; /* 0 would mean alive */
            core_job_kill(c, j, died);
        }
        break;
    case CMDLOG_F_REQUEUE:
        if (j != NULL && state != FJOB_ENQUEUED && state != FJOB_WORKING) {
            core_job_requeue(c, j, now_ms);
            j->base_ms = r->at_ms;
        }
        break;
    case CMDLOG_F_PAUSE:
    case CMDLOG_F_RESUME:
        if (r->name.n > 0 && r->name.n <= FJOB_MAX_QUEUE)
            core_queue_pause(c, fs->space, r->name.p, r->name.n, r->code == CMDLOG_F_PAUSE);
        break;
    default:
        break;
    }
}
