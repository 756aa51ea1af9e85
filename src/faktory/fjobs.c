/* fjobs.c - the Faktory front-end's jobs: queues, sets, reservations and
 * parked FETCHes (fjobs.h). */
#include "lib/wq.h"
#include "faktory/fjobs.h"

#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/payload.h"
#include "lib/registry.h"

#define FJOB_INDEX_BYTES 48 /* a heap item and a registry slot, with slack */

static void fjobs_job_due(struct wheel_entry *e, uint64_t slot_ms, void *arg);
static uint64_t fjobs_job_deadline(const struct wheel_entry *e, void *arg);
static void fjobs_wait_due(struct wheel_entry *e, uint64_t slot_ms, void *arg);
static uint64_t fjobs_wait_deadline(const struct wheel_entry *e, void *arg);

static void
fjob_key(const void *elem, const void **key, size_t *len)
{
    const struct fjob *j = elem;
    *key = j->jid;
    *len = j->jid_len;
}

static void
fqueue_key(const void *elem, const void **key, size_t *len)
{
    const struct fqueue *q = elem;
    *key = q->name;
    *len = q->name_len;
}

static void
fjob_set_heap_index(void *elem, uint32_t idx)
{
    ((struct fjob *)elem)->heap_index = idx;
}

/* Equal due times: the earlier arrival first. */
static bool
fjob_seq_tie(const void *a, const void *b, void *arg)
{
    return ((const struct fjob *)a)->seq < ((const struct fjob *)b)->seq;
}

static void
fjobs_free_job(void *elem, void *arg)
{
    struct fjob *j = elem;
    payload_free(j->text, j->text_len);
    wq_free(j);
}

static void
fjobs_free_queue(void *elem, void *arg)
{
    struct fqueue *q = elem;
    heap_clear(&q->ready);
    wq_free(q);
}

/* core_side_ops.free: with the core. */
static void
fjobs_free(void *side)
{
    struct fjobs *f = side;
    registry_foreach(f->jobs, fjobs_free_job, NULL);
    registry_foreach(f->queues, fjobs_free_queue, NULL);
    registry_free(f->jobs);
    registry_free(f->queues);
    for (int s = 0; s < FSET_COUNT; s++)
        heap_clear(&f->sets[s]);
    wq_free(f);
}

void
fjobs_set_expired(struct core *c, fjobs_expired_fn fn, void *arg)
{
    c->fjobs->expired = fn;
    c->fjobs->expired_arg = arg;
}

void
fjobs_set_dead_limits(struct core *c, uint64_t ttl_ms, uint64_t max)
{
    c->fjobs->dead_ttl_ms = ttl_ms;
    c->fjobs->dead_max = max;
}

uint64_t
fjobs_job_bytes(size_t jid_len, size_t text_len)
{
    return sizeof(struct fjob) + jid_len + 1 + text_len + FJOB_INDEX_BYTES;
}

/* ---- records ---- */

/* Record code for j (with payload text and time when the code has them). */
static void
fjobs_record(struct core *c, enum cmdlog_code code, const struct fjob *j, const char *text,
             size_t len, uint64_t time_ms)
{
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {
        .code = (uint8_t)code,
        .at_ms = (int64_t)c->now_ms,
        .jid = {j->jid, j->jid_len},
        .payload = {text, len},
        .timed = true,
        .time_ms = (int64_t)time_ms,
    };
    c->record(c->record_arg, &r);
}

static void
fjobs_record_queue(struct core *c, enum cmdlog_code code, const struct fqueue *q)
{
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {
        .code = (uint8_t)code,
        .at_ms = (int64_t)c->now_ms,
        .name = {q->name, q->name_len},
    };
    c->record(c->record_arg, &r);
}

/* ---- queues ---- */

static struct fqueue *
fjobs_queue_find(const struct core *c, struct wq_str name)
{
    return registry_find(c->fjobs->queues, name.p, name.n);
}

/* What a Faktory queue named by len bytes holds, as -max-memory counts it
 * (as queue_bytes does for Workq's). */
static uint64_t
fjobs_queue_bytes(size_t len)
{
    return sizeof(struct fqueue) + len + 1 + QUEUE_INDEX_BYTES;
}

/* The queue named name, created if need be, with one more reference. */
static struct fqueue *
fjobs_queue_ref(struct core *c, struct wq_str name)
{
    struct fqueue *q = fjobs_queue_find(c, name);
    if (q == NULL) {
        q = wq_calloc(1, sizeof *q + name.n + 1);
        heap_init(&q->ready, fjob_set_heap_index, NULL, NULL);
        list_init(&q->parked_fifo);
        q->name_len = (uint8_t)name.n;
        memcpy(q->name, name.p, name.n);
        registry_insert(c->fjobs->queues, q);
        c->bytes += fjobs_queue_bytes(name.n);
    }
    q->refs++;
    return q;
}

/* Free q once nothing refers to it and it is not paused. */
static void
fjobs_queue_trim(struct core *c, struct fqueue *q)
{
    if (q->refs == 0 && !q->paused) {
        registry_remove(c->fjobs->queues, q->name, q->name_len);
        c->bytes -= fjobs_queue_bytes(q->name_len);
        fjobs_free_queue(q, NULL);
    }
}

static void
fjobs_queue_unref(struct core *c, struct fqueue *q)
{
    q->refs--;
    fjobs_queue_trim(c, q);
}

/* Heap key of an enqueued job: higher priority first, then arrival. */
static uint64_t
fjob_ready_key(const struct fjob *j)
{
    return ((uint64_t)(FJOB_PRIORITY_MAX - j->priority) << 56) | (j->seq & ((1ull << 56) - 1));
}

/* ---- moving jobs ---- */

static enum fjob_set
fjob_set_of(enum fjob_state s)
{
    return s == FJOB_SCHEDULED ? FSET_SCHEDULED : s == FJOB_RETRY ? FSET_RETRIES : FSET_DEAD;
}

/* Take j out of wherever it waits. */
static void
fjobs_detach(struct core *c, struct fjob *j)
{
    struct fjobs *f = c->fjobs;
    switch (j->state) {
    case FJOB_ENQUEUED:
        heap_remove(&j->queue->ready, j->heap_index);
        break;
    case FJOB_WORKING:
        wheel_cancel(&f->wheel, &j->timer);
        break;
    default:
        heap_remove(&f->sets[fjob_set_of(j->state)], j->heap_index);
        wheel_cancel(&f->wheel, &j->timer);
        break;
    }
    f->stats.count[j->state]--;
}

/* Put detached j in state s (a set) until due_ms. */
static void
fjobs_put_in_set(struct core *c, struct fjob *j, enum fjob_state s, uint64_t due_ms)
{
    struct fjobs *f = c->fjobs;
    j->state = s;
    j->due_ms = due_ms;
    j->seq = f->next_seq++; /* arrival in the set */
    heap_push(&f->sets[fjob_set_of(s)], due_ms, j);
    wheel_add(&f->wheel, &j->timer, due_ms);
    f->stats.count[s]++;
}

/* Detached j is reserved from now_ms. */
static void
fjobs_reserve(struct core *c, struct fjob *j, uint64_t now_ms)
{
    struct fjobs *f = c->fjobs;
    j->state = FJOB_WORKING;
    j->due_ms = now_ms + (uint64_t)j->reserve_s * 1000;
    wheel_add(&f->wheel, &j->timer, j->due_ms);
    f->stats.count[FJOB_WORKING]++;
    f->stats.fetched++;
}

/* End parked FETCH w: take it out of everything, then tell its owner. */
static void
fjobs_waiter_finish(struct core *c, struct fwaiter *w, enum fetch_outcome how, const struct fjob *j)
{
    fetch_done_fn done = w->done;
    void *owner = w->owner;
    fjobs_cancel(c, w);
    done(owner, how, j);
}

/* Detached j enters its queue (enqueued_ms is when, for its enqueued_at):
 * straight to the first FETCH parked on it, reserved from now, else into
 * the ready heap. */
static void
fjobs_enqueue(struct core *c, struct fjob *j, uint64_t enqueued_ms)
{
    struct fqueue *q = j->queue;
    j->enqueued_ms = enqueued_ms;
    if (!q->paused && !list_empty(&q->parked_fifo)) {
        struct fpark *p = list_item(q->parked_fifo.next, struct fpark, link);
        fjobs_record(c, CMDLOG_F_FETCH, j, NULL, 0, 0);
        fjobs_reserve(c, j, c->now_ms);
        fjobs_waiter_finish(c, p->waiter, FETCH_GOT, j);
        return;
    }
    j->state = FJOB_ENQUEUED;
    j->seq = c->fjobs->next_seq++; /* arrival in the queue: a retry goes last */
    heap_push(&q->ready, fjob_ready_key(j), j);
    c->fjobs->stats.count[FJOB_ENQUEUED]++;
}

/* Hand the ready jobs of q to the FETCHes parked on it (after a resume). */
static void
fjobs_dispatch(struct core *c, struct fqueue *q)
{
    while (!q->paused && !list_empty(&q->parked_fifo) && heap_len(&q->ready) > 0) {
        struct fjob *j = heap_top(&q->ready);
        fjobs_detach(c, j);
        fjobs_enqueue(c, j, j->enqueued_ms);
    }
}

/* Replace j's text (the memory count follows). */
static void
fjobs_set_text(struct core *c, struct fjob *j, const char *text, size_t len)
{
    char *copy = payload_new(text, len);
    if (copy == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory keeping a job's text");
    c->bytes -= j->text_len;
    c->bytes += len;
    payload_free(j->text, j->text_len);
    j->text = copy;
    j->text_len = (uint32_t)len;
}

/* Free detached j. */
static void
fjobs_destroy(struct core *c, struct fjob *j)
{
    registry_remove(c->fjobs->jobs, j->jid, j->jid_len);
    c->bytes -= fjobs_job_bytes(j->jid_len, j->text_len);
    fjobs_queue_unref(c, j->queue);
    fjobs_free_job(j, NULL);
}

/* ---- commands ---- */

/* Create the job s describes; NULL if out of memory. */
static struct fjob *
fjobs_create(struct core *c, const struct fjob_spec *s)
{
    char *text = payload_new(s->text, s->text_len);
    if (text == NULL)
        return NULL;
    struct fjob *j = wq_malloc(sizeof *j + s->jid.n + 1);
    memset(j, 0, sizeof *j);
    wheel_entry_init(&j->timer);
    memcpy(j->jid, s->jid.p, s->jid.n);
    j->jid[s->jid.n] = '\0';
    j->jid_len = (uint16_t)s->jid.n;
    j->text = text;
    j->text_len = (uint32_t)s->text_len;
    j->priority = s->priority;
    j->reserve_s = s->reserve_s;
    j->seq = c->fjobs->next_seq++;
    j->queue = fjobs_queue_ref(c, s->queue);
    j->state = FJOB_STATE_COUNT;
    registry_insert(c->fjobs->jobs, j);
    c->bytes += fjobs_job_bytes(j->jid_len, j->text_len);
    return j;
}

enum core_status
fjobs_push(struct core *c, const struct fjob_spec *s, uint64_t now_ms)
{
    if (fjobs_find(c, s->jid.p, s->jid.n) != NULL)
        return CORE_DUPLICATE;
    if (core_over_limit(c, fjobs_job_bytes(s->jid.n, s->text_len)))
        return CORE_NOMEM;
    bool later = s->at_ms > 0 && (uint64_t)s->at_ms > now_ms;
    struct fjob *j = fjobs_create(c, s);
    if (j == NULL)
        return CORE_NOMEM;
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
    c->fjobs->stats.pushed++;
    if (later)
        fjobs_put_in_set(c, j, FJOB_SCHEDULED, (uint64_t)s->at_ms);
    else
        fjobs_enqueue(c, j, now_ms);
    return CORE_OK;
}

struct fjob *
fjobs_find(const struct core *c, const char *jid, size_t len)
{
    return registry_find(c->fjobs->jobs, jid, len);
}

const struct fjob *
fjobs_queue_head(const struct core *c, struct wq_str name)
{
    const struct fqueue *q = fjobs_queue_find(c, name);
    return q != NULL ? heap_top(&q->ready) : NULL;
}

enum core_status
fjobs_fetch(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms, uint64_t now_ms,
            fetch_done_fn done, void *owner, struct fjob **out, struct fwaiter **parked)
{
    struct fjobs *f = c->fjobs;
    for (size_t i = 0; i < n; i++) {
        struct fqueue *q = fjobs_queue_find(c, names[i]);
        if (q != NULL && !q->paused && heap_len(&q->ready) > 0) {
            struct fjob *j = heap_top(&q->ready);
            fjobs_record(c, CMDLOG_F_FETCH, j, NULL, 0, 0);
            fjobs_detach(c, j);
            fjobs_reserve(c, j, now_ms);
            *out = j;
            return CORE_OK;
        }
    }
    if (wait_ms == 0)
        return CORE_TIMEOUT;
    /* one node per distinct name */
    uint64_t mark = ++f->mark;
    struct fwaiter *w = wq_malloc(sizeof *w + n * sizeof(struct fpark));
    wheel_entry_init(&w->timer);
    w->deadline = now_ms + wait_ms;
    w->done = done;
    w->owner = owner;
    w->n = 0;
    for (size_t i = 0; i < n; i++) {
        struct fqueue *q = fjobs_queue_ref(c, names[i]);
        if (q->mark == mark) {
            fjobs_queue_unref(c, q);
            continue;
        }
        q->mark = mark;
        struct fpark *p = &w->nodes[w->n++];
        p->waiter = w;
        p->queue = q;
        list_push_back(&q->parked_fifo, &p->link);
    }
    wheel_add(&f->waits, &w->timer, w->deadline);
    *parked = w;
    return CORE_PARKED;
}

void
fjobs_cancel(struct core *c, struct fwaiter *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        list_unlink(&w->nodes[i].link);
        fjobs_queue_unref(c, w->nodes[i].queue);
    }
    wheel_cancel(&c->fjobs->waits, &w->timer);
    wq_free(w);
}

enum core_status
fjobs_ack(struct core *c, const char *jid, size_t len)
{
    struct fjob *j = fjobs_find(c, jid, len);
    if (j == NULL || j->state != FJOB_WORKING)
        return CORE_NOT_FOUND;
    fjobs_record(c, CMDLOG_F_ACK, j, NULL, 0, 0);
    fjobs_detach(c, j);
    c->fjobs->stats.processed++;
    c->fjobs->stats.acked++;
    fjobs_destroy(c, j);
    return CORE_OK;
}

void
fjobs_retry(struct core *c, struct fjob *j, const char *text, size_t len, uint64_t at_ms)
{
    fjobs_record(c, CMDLOG_F_RETRY, j, text, len, at_ms);
    fjobs_detach(c, j);
    fjobs_set_text(c, j, text, len);
    fjobs_put_in_set(c, j, FJOB_RETRY, at_ms);
}

void
fjobs_kill(struct core *c, struct fjob *j, const char *text, size_t len)
{
    struct fjobs *f = c->fjobs;
    uint64_t until = c->now_ms + f->dead_ttl_ms;
    if (text == NULL) {
        text = j->text;
        len = j->text_len;
    }
    fjobs_record(c, CMDLOG_F_DEAD, j, text, len, until);
    fjobs_detach(c, j);
    if (text != j->text)
        fjobs_set_text(c, j, text, len);
    fjobs_put_in_set(c, j, FJOB_DEAD, until);
    while (heap_len(&f->sets[FSET_DEAD]) > f->dead_max)
        fjobs_discard(c, heap_top(&f->sets[FSET_DEAD]));
}

void
fjobs_discard(struct core *c, struct fjob *j)
{
    fjobs_record(c, CMDLOG_F_DISCARD, j, NULL, 0, 0);
    fjobs_detach(c, j);
    fjobs_destroy(c, j);
}

void
fjobs_requeue(struct core *c, struct fjob *j)
{
    fjobs_record(c, CMDLOG_F_REQUEUE, j, NULL, 0, 0);
    fjobs_detach(c, j);
    fjobs_enqueue(c, j, c->now_ms);
}

void
fjobs_pause(struct core *c, struct wq_str name, bool paused)
{
    struct fqueue *q = fjobs_queue_find(c, name);
    if (q == NULL || q->paused == paused)
        return;
    fjobs_record_queue(c, paused ? CMDLOG_F_PAUSE : CMDLOG_F_RESUME, q);
    q->paused = paused;
    if (!paused) {
        q->refs++; /* held while its parked FETCHes are served */
        fjobs_dispatch(c, q);
        fjobs_queue_unref(c, q);
    }
}

void
fjobs_queue_clear(struct core *c, struct wq_str name)
{
    struct fqueue *q = fjobs_queue_find(c, name);
    if (q == NULL)
        return;
    q->refs++;
    while (heap_len(&q->ready) > 0)
        fjobs_discard(c, heap_top(&q->ready));
    fjobs_pause(c, name, false);
    fjobs_queue_unref(c, q);
}

static void
fjobs_collect(void *elem, void *arg)
{
    struct fjob ***at = arg;
    *(*at)++ = elem;
}

static void
fjobs_collect_paused(void *elem, void *arg)
{
    struct fqueue ***at = arg;
    struct fqueue *q = elem;
    if (q->paused)
        *(*at)++ = q;
}

void
fjobs_flush(struct core *c)
{
    struct fjobs *f = c->fjobs;
    size_t n = registry_count(f->jobs);
    struct fjob **all = wq_malloc((n + 1) * sizeof *all), **at = all;
    registry_foreach(f->jobs, fjobs_collect, &at);
    for (size_t i = 0; i < n; i++)
        fjobs_discard(c, all[i]);
    wq_free(all);
    n = registry_count(f->queues);
    struct fqueue **qs = wq_malloc((n + 1) * sizeof *qs), **qat = qs;
    registry_foreach(f->queues, fjobs_collect_paused, &qat);
    for (struct fqueue **q = qs; q < qat; q++)
        fjobs_pause(c, (struct wq_str){(*q)->name, (*q)->name_len}, false);
    wq_free(qs);
}

/* Order of the jobs of a set: due time, then arrival. */
static int
fjobs_cmp_due(const void *a, const void *b)
{
    const struct fjob *x = *(struct fjob *const *)a, *y = *(struct fjob *const *)b;
    if (x->due_ms != y->due_ms)
        return x->due_ms < y->due_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct fjob **
fjobs_set_jobs(const struct core *c, enum fjob_set set, size_t *n)
{
    const struct heap *h = &c->fjobs->sets[set];
    struct fjob **out = wq_malloc((heap_len(h) + 1) * sizeof *out);
    for (uint32_t i = 0; i < heap_len(h); i++)
        out[i] = heap_at(h, i)->elem;
    qsort(out, heap_len(h), sizeof *out, fjobs_cmp_due);
    *n = heap_len(h);
    return out;
}

static void
fjobs_collect_queue(void *elem, void *arg)
{
    struct fqueue ***at = arg;
    *(*at)++ = elem;
}

static int
fjobs_cmp_name(const void *a, const void *b)
{
    const struct fqueue *x = *(struct fqueue *const *)a, *y = *(struct fqueue *const *)b;
    return strcmp(x->name, y->name);
}

struct fqueue **
fjobs_queues_sorted(const struct core *c, size_t *n)
{
    *n = registry_count(c->fjobs->queues);
    struct fqueue **out = wq_malloc((*n + 1) * sizeof *out), **at = out;
    registry_foreach(c->fjobs->queues, fjobs_collect_queue, &at);
    qsort(out, *n, sizeof *out, fjobs_cmp_name);
    return out;
}

/* ---- time ---- */

static uint64_t
fjobs_job_deadline(const struct wheel_entry *e, void *arg)
{
    return WQ_CONTAINER_OF(e, struct fjob, timer)->due_ms;
}

/* j's due time came: scheduled and retried jobs enter their queue, a
 * reservation runs out, a dead job goes. */
static void
fjobs_job_due(struct wheel_entry *e, uint64_t slot_ms, void *arg)
{
    struct core *c = arg;
    struct fjob *j = WQ_CONTAINER_OF(e, struct fjob, timer);
    switch (j->state) {
    case FJOB_SCHEDULED:
    case FJOB_RETRY:
        if (j->state == FJOB_SCHEDULED)
            c->fjobs->stats.due_scheduled++;
        else
            c->fjobs->stats.due_retries++;
        fjobs_detach(c, j);
        fjobs_enqueue(c, j, c->now_ms);
        break;
    case FJOB_WORKING:
        c->fjobs->stats.expired++;
        c->fjobs->stats.failures++;
        c->fjobs->stats.processed++; /* as Faktory counts */
        if (c->fjobs->expired != NULL)
            c->fjobs->expired(c->fjobs->expired_arg, c, j);
        else
            fjobs_retry(c, j, j->text, j->text_len, c->now_ms);
        break;
    case FJOB_DEAD:
        c->fjobs->stats.dead_expired++;
        fjobs_discard(c, j);
        break;
    default:
        break;
    }
}

static uint64_t
fjobs_wait_deadline(const struct wheel_entry *e, void *arg)
{
    return WQ_CONTAINER_OF(e, struct fwaiter, timer)->deadline;
}

static void
fjobs_wait_due(struct wheel_entry *e, uint64_t slot_ms, void *arg)
{
    fjobs_waiter_finish(arg, WQ_CONTAINER_OF(e, struct fwaiter, timer), FETCH_TIMEOUT, NULL);
}

/* core_side_ops.advance */
static void
fjobs_advance(void *side, uint64_t now_ms)
{
    struct fjobs *f = side;
    wheel_advance(&f->wheel, now_ms);
    wheel_advance(&f->waits, now_ms);
}

/* core_side_ops.next_event */
static uint64_t
fjobs_next_event(const void *side)
{
    const struct fjobs *f = side;
    return WQ_MIN(wheel_next_event(&f->wheel), wheel_next_event(&f->waits));
}

/* ---- replay ---- */

/* Re-create the job of a push record. */
static void
fjobs_replay_push(struct core *c, const struct cmdlog_rec *r)
{
    if (r->jid.n == 0 || r->jid.n > FJOB_MAX_JID || r->name.n == 0 || r->name.n > FJOB_MAX_QUEUE ||
        r->priority < FJOB_PRIORITY_MIN || r->priority > FJOB_PRIORITY_MAX || r->ttr > UINT32_MAX ||
        r->payload.n < 2 || r->payload.n > UINT32_MAX)
        return;
    struct fjob_spec s = {
        .jid = r->jid,
        .queue = r->name,
        .priority = (uint8_t)r->priority,
        .reserve_s = (uint32_t)r->ttr,
        .text = r->payload.p,
        .text_len = r->payload.n,
    };
    struct fjob *j = fjobs_create(c, &s);
    if (j == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory replaying a job");
    if (r->timed && r->time_ms > r->at_ms)
        fjobs_put_in_set(c, j, FJOB_SCHEDULED, (uint64_t)r->time_ms);
    else
        fjobs_enqueue(c, j, (uint64_t)r->at_ms);
}

/* core_side_ops.replay: a Faktory record of the command log (the others
 * are not ours). */
static void
fjobs_replay(void *side, const struct cmdlog_rec *r, uint64_t now_ms)
{
    struct core *c = ((struct fjobs *)side)->core;
    struct fjob *j = r->jid.n > 0 ? fjobs_find(c, r->jid.p, r->jid.n) : NULL;
    switch (r->code) {
    case CMDLOG_F_PUSH:
        if (j == NULL)
            fjobs_replay_push(c, r);
        break;
    case CMDLOG_F_FETCH:
        /* the reservation starts over from now */
        if (j != NULL && j->state != FJOB_WORKING && j->state != FJOB_DEAD) {
            fjobs_detach(c, j);
            fjobs_reserve(c, j, now_ms);
        }
        break;
    case CMDLOG_F_ACK:
    case CMDLOG_F_DISCARD:
        if (j != NULL)
            fjobs_discard(c, j);
        break;
    case CMDLOG_F_RETRY:
        if (j != NULL && r->payload.n >= 2 && r->payload.n <= UINT32_MAX)
            fjobs_retry(c, j, r->payload.p, r->payload.n, (uint64_t)WQ_MAX(r->time_ms, 0));
        break;
    case CMDLOG_F_DEAD:
        if (j != NULL && r->payload.n >= 2 && r->payload.n <= UINT32_MAX) {
            fjobs_detach(c, j);
            fjobs_set_text(c, j, r->payload.p, r->payload.n);
            fjobs_put_in_set(c, j, FJOB_DEAD, (uint64_t)WQ_MAX(r->time_ms, 0));
        }
        break;
    case CMDLOG_F_REQUEUE:
        if (j != NULL && j->state != FJOB_ENQUEUED && j->state != FJOB_WORKING) {
            fjobs_detach(c, j);
            fjobs_enqueue(c, j, (uint64_t)r->at_ms);
        }
        break;
    case CMDLOG_F_PAUSE:
    case CMDLOG_F_RESUME:
        if (r->name.n > 0 && r->name.n <= FJOB_MAX_QUEUE) {
            struct fqueue *q = fjobs_queue_ref(c, r->name);
            q->paused = r->code == CMDLOG_F_PAUSE;
            fjobs_queue_unref(c, q);
        }
        break;
    default:
        break;
    }
}

/* ---- the core's side store ---- */

/* core_side_ops.clear_totals: the metrics' counters. */
static void
fjobs_clear_totals(void *side)
{
    struct fjobs_stats *st = &((struct fjobs *)side)->stats;
    st->pushed = st->fetched = st->acked = 0;
}

/* core_side_ops.counts */
static void
fjobs_counts(const void *side, struct core_side_counts *out)
{
    const struct fjobs *f = side;
    out->jobs = registry_count(f->jobs);
    out->queues = registry_count(f->queues);
    out->scheduled = f->stats.count[FJOB_SCHEDULED];
    out->enqueued = f->stats.count[FJOB_ENQUEUED];
    out->working = f->stats.count[FJOB_WORKING];
    out->retry = f->stats.count[FJOB_RETRY];
    out->dead = f->stats.count[FJOB_DEAD];
}

static const struct core_side_ops fjobs_side_ops = {
    .advance = fjobs_advance,
    .next_event = fjobs_next_event,
    .replay = fjobs_replay,
    .clear_totals = fjobs_clear_totals,
    .counts = fjobs_counts,
    .free = fjobs_free,
};

struct fjobs *
fjobs_new(struct core *c, uint64_t now_ms)
{
    struct fjobs *f = wq_calloc(1, sizeof *f);
    f->core = c;
    wheel_init(&f->wheel, now_ms, fjobs_job_deadline, fjobs_job_due, c);
    wheel_init(&f->waits, now_ms, fjobs_wait_deadline, fjobs_wait_due, c);
    f->jobs = registry_new(fjob_key);
    f->queues = registry_new(fqueue_key);
    for (int s = 0; s < FSET_COUNT; s++)
        heap_init(&f->sets[s], fjob_set_heap_index, fjob_seq_tie, NULL);
    f->dead_ttl_ms = FJOBS_DEFAULT_DEAD_TTL_MS;
    f->dead_max = FJOBS_DEFAULT_DEAD_MAX;
    c->fjobs = f;
    core_attach_side(c, &fjobs_side_ops, f);
    return f;
}
