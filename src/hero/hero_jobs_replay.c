/* hero_jobs_replay.c - the Hero front-end at start-up: the records of its
 * keys go to the store (hero_log.c); those of its jobs are gathered by id
 * (the element a job is bound to, from a 50 marked as a job's; the times
 * it was handed out and whether it was held, from 53 and 55; 54 forgets
 * it).  Once the log is read, the jobs the work queues hold are queued
 * again, and those that were handed out count as lost, their connections
 * being gone. */
#include "lib/wq.h"
#include "hero/hero_jobs.h"

#include <string.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/registry.h"
#include "store/cmdlog_codec.h"

/* What the log says of a job, by id. */
struct hero_taken {
    uint64_t seq;    /* the element it is bound to (0: none said) */
    uint32_t handed; /* times handed out */
    bool held;       /* handed out when the log ends */
    char *queue;     /* its work queue, when handed out or back */
    uint32_t qlen, len;
    char id[];
};

static void
hero_taken_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_taken *t = elem;
    *key = t->id;
    *len = t->len;
}

static void
hero_taken_free(void *elem, void *arg)
{
    (void)arg;
    struct hero_taken *t = elem;
    wq_free(t->queue);
    wq_free(t);
}

/* The entry of id, made when missing. */
static struct hero_taken *
hero_taken_of(struct hero_ctx *h, const char *id, size_t n)
{
    struct hero_taken *t = registry_find(h->taken, id, n);
    if (t == NULL) {
        t = wq_calloc(1, sizeof *t + n);
        t->len = (uint32_t)n;
        memcpy(t->id, id, n);
        registry_insert(h->taken, t);
    }
    return t;
}

void
hero_jobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    (void)c;
    (void)now_ms;
    struct hero_ctx *h = arg;
    if (r->code < CMDLOG_H_TAKE) {
        hero_log_replay(h, r);
        if (r->code == CMDLOG_H_PUSH && r->job && r->payload.n <= HERO_ID_MAX)
            hero_taken_of(h, r->payload.p, r->payload.n)->seq = r->seq;
        return;
    }
    if (r->code == CMDLOG_H_END) {
        struct hero_taken *t = registry_remove(h->taken, r->jid.p, r->jid.n);
        if (t != NULL)
            hero_taken_free(t, NULL);
        return;
    }
    if (r->jid.n > HERO_ID_MAX)
        return;
    struct hero_taken *t = hero_taken_of(h, r->jid.p, r->jid.n);
    t->handed = (uint32_t)WQ_MIN(r->seq, UINT32_MAX);
    t->held = r->code == CMDLOG_H_TAKE;
    wq_free(t->queue);
    t->queue = wq_malloc(r->name.n ? r->name.n : 1);
    memcpy(t->queue, r->name.p, r->name.n);
    t->qlen = (uint32_t)r->name.n;
}

/* The jobs the work queues hold: each element a 50 bound a job to. */
static void
hero_jobs_requeue_lists(struct hero_ctx *h)
{
    for (struct hkey *k = hstore_scan(h->store, 0); k != NULL; k = hstore_scan_next(h->store, k)) {
        if (!hero_is_work_queue(k))
            continue;
        for (uint32_t i = 0; i < hlst_len(k); i++) {
            const struct hval *v = hlst_at(k, i);
            const struct hero_taken *t =
                v->len <= HERO_ID_MAX ? registry_find(h->taken, v->p, v->len) : NULL;
            if (t == NULL || t->seq != v->seq || t->held || hero_job(h, v->p, v->len) != NULL ||
                hero_job_hash(h, v->p, v->len) == NULL)
                continue;
            hero_job_add(h, (struct wq_str){k->key, k->len}, v->p, v->len, v->seq, t->handed);
        }
    }
}

/* A job handed out before the restart: its connection is gone. */
static void
hero_taken_lost(void *elem, void *arg)
{
    struct hero_taken *t = elem;
    struct hero_ctx *h = arg;
    if (!t->held)
        return;
    struct job *j =
        hero_job(h, t->id, t->len) != NULL || hero_job_hash(h, t->id, t->len) == NULL
            ? NULL
            : hero_job_add(h, (struct wq_str){t->queue, t->qlen}, t->id, t->len, 0, t->handed);
    if (j == NULL) { /* its hash is gone: nothing to tell */
        hero_log_end(h, t->id, t->len);
        return;
    }
    core_job_take(h->core, j, *h->now_ms);
    struct hero_run *run = wq_malloc(sizeof *run + t->len);
    run->st = NULL;
    run->taken_ms = *h->now_ms;
    run->len = t->len;
    memcpy(run->id, t->id, t->len);
    registry_insert(h->running, run);
    hero_job_lost(h, j, "worker lost");
}

void
hero_jobs_replay_open(struct hero_ctx *h)
{
    h->taken = registry_new(hero_taken_key);
}

void
hero_jobs_replay_close(struct hero_ctx *h)
{
    registry_foreach(h->taken, hero_taken_free, NULL);
    registry_free(h->taken);
    h->taken = NULL;
}

void
hero_jobs_replayed(struct hero_ctx *h)
{
    hero_log_replay_done(h);
    /* the keys whose time passed while the server was down go first, as
     * they would have gone live: a job's hash so, say, before its job is
     * found lost */
    hstore_advance(h->store, *h->now_ms);
    hero_jobs_requeue_lists(h);
    /* what losing a job does never touches these entries: the log is read */
    registry_foreach(h->taken, hero_taken_lost, h);
    hero_jobs_replay_close(h);
    hero_jobs_replay_open(h);
}
