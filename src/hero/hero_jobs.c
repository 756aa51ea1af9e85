/* hero_jobs.c - the job server under the lists hero:work_queue:{worker}
 * (doc/hero.md): an id pushed there that names a hash hero:job:{id} is a
 * job of the engine's "hero" space, queued on that list and bound to the
 * element pushed; a pop of that element hands it to the connection that
 * popped it, with its timeout as the reservation; the job's end is its
 * hash's status (finished or error).  A job whose connection closes
 * first, or whose timeout passes, goes back to the head of its list while
 * its retries allow, else the server marks it failed.  The lists stay
 * Redis lists: the engine's jobs mirror them for the reservations, the
 * figures and the restart (hero_jobs_replay.c); prerequisites are
 * hero_deps.c's. */
#include "lib/wq.h"
#include "hero/hero_jobs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/registry.h"
#include "store/cmdlog_codec.h"

bool
hero_prefixed(const char *p, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    return n >= m && memcmp(p, prefix, m) == 0;
}

bool
hero_is_work_queue(const struct hkey *k)
{
    /* the engine's queue is named by the key: at most 255 bytes */
    return k->type == HKEY_LIST && k->len <= 255 && hero_prefixed(k->key, k->len, HERO_WQ_PREFIX);
}

struct hkey *
hero_job_hash(struct hero_ctx *h, const char *id, size_t n)
{
    char key[sizeof HERO_JOB_PREFIX + HERO_ID_MAX];
    if (n == 0 || n > HERO_ID_MAX)
        return NULL;
    memcpy(key, HERO_JOB_PREFIX, sizeof HERO_JOB_PREFIX - 1);
    memcpy(key + sizeof HERO_JOB_PREFIX - 1, id, n);
    struct hkey *k = hstore_peek(h->store, key, sizeof HERO_JOB_PREFIX - 1 + n);
    return k != NULL && k->type == HKEY_HASH ? k : NULL;
}

struct wq_str
hero_field(const struct hkey *k, const char *f)
{
    const struct hval *v = k != NULL ? hhash_get(k, f, strlen(f)) : NULL;
    return v != NULL ? (struct wq_str){v->p, v->len} : (struct wq_str){"", 0};
}

bool
hero_str_is(struct wq_str s, const char *w)
{
    return s.n == strlen(w) && memcmp(s.p, w, s.n) == 0;
}

/* A number field (seconds, retries): its value, 0 when absent or not a
 * number. */
static double
hero_number(const struct hkey *k, const char *f)
{
    struct wq_str v = hero_field(k, f);
    char text[64];
    if (v.n == 0 || v.n >= sizeof text)
        return 0;
    memcpy(text, v.p, v.n);
    text[v.n] = '\0';
    char *end;
    double d = strtod(text, &end);
    return *end == '\0' && isfinite(d) && d > 0 ? d : 0;
}

struct job *
hero_job(struct hero_ctx *h, const char *id, size_t n)
{
    struct job_key key = {(const uint8_t *)id, n, h->space};
    return core_find_key(h->core, &key);
}

struct hero_info
hero_job_info(const struct job *j)
{
    struct hero_info info;
    memcpy(&info, j->payload, sizeof info);
    return info;
}

/* Store info as j's payload. */
static void
hero_job_set_info(struct hero_ctx *h, struct job *j, const struct hero_info *info)
{
    core_job_set_payload(h->core, j, (const char *)info, sizeof *info);
}

bool
hero_job_element(const struct job *j, const struct hval *v)
{
    return j->state != JOB_LEASED && hero_job_info(j).seq == v->seq;
}

void
hero_log_take(struct hero_ctx *h, uint8_t code, const char *id, size_t n, struct wq_str queue,
              uint32_t handed)
{
    struct core *c = h->core;
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {
        .code = code, .at_ms = (int64_t)c->now_ms, .jid = {id, n}, .name = queue, .seq = handed};
    c->record(c->record_arg, &r);
}

void
hero_log_end(struct hero_ctx *h, const char *id, size_t n)
{
    struct core *c = h->core;
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {.code = CMDLOG_H_END, .at_ms = (int64_t)c->now_ms, .jid = {id, n}};
    c->record(c->record_arg, &r);
}

/* The ISO 8601 time of ms, as Hero writes updated_at. */
static size_t
hero_iso_time(uint64_t ms, char out[32])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    return n + (size_t)snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000));
}

/* Set field f of hash k to v, logged once set. */
static void
hero_set_field(struct hero_ctx *h, struct hkey *k, const char *f, const char *v, size_t n)
{
    struct wq_str name = {f, strlen(f)};
    if (hhash_set(h->store, k, f, name.n, v, n) >= 0)
        hero_log_hset(h, k, &name, v, n);
}

/* A job's status became s (by a client or by the server): handed out or
 * still in its list, it ends; its dependents go on or fail. */
static void
hero_jobs_status(struct hero_ctx *h, const char *id, size_t n, struct wq_str s)
{
    bool finished = hero_str_is(s, "finished");
    if (!finished && !hero_str_is(s, "error"))
        return;
    struct job *j = hero_job(h, id, n);
    if (j != NULL) {
        /* still queued: a late word from a worker whose job went back to
         * its list; it leaves the list */
        if (j->state != JOB_LEASED)
            hero_unqueue(h, j);
        hero_job_end(h, j, finished);
    }
    hero_deps_status(h, id, n, finished);
}

void
hero_job_fail(struct hero_ctx *h, const char *id, size_t n, const char *why)
{
    struct hkey *k = hero_job_hash(h, id, n);
    if (k == NULL)
        return;
    char t[32];
    hero_set_field(h, k, "status", "error", 5);
    hero_set_field(h, k, "error", why, strlen(why));
    hero_set_field(h, k, "updated_at", t, hero_iso_time(*h->now_ms, t));
    hero_jobs_status(h, id, n, (struct wq_str){"error", 5});
}

/* Forget j's connection, if it is handed out. */
static void
hero_run_drop(struct hero_ctx *h, const char *id, size_t n)
{
    struct hero_run *run = registry_remove(h->running, id, n);
    if (run == NULL)
        return;
    if (run->st != NULL)
        list_unlink(&run->link);
    wq_free(run);
}

void
hero_job_end(struct hero_ctx *h, struct job *j, bool success)
{
    struct job_key key = job_key_of(j);
    if (success)
        h->jobs.finished++;
    else
        h->jobs.failed++;
    if (hero_job_info(j).handed > 0) /* it has records of 53 or 55 */
        hero_log_end(h, (const char *)key.p, key.len);
    hero_run_drop(h, (const char *)key.p, key.len);
    if (j->state == JOB_LEASED)
        core_finish_job(h->core, j, success, NULL, 0, 0, *h->now_ms);
    core_delete_job(h->core, j);
}

void
hero_unqueue(struct hero_ctx *h, const struct job *j)
{
    const struct queue *q = core_job_queue(h->core, j);
    struct hkey *k = hstore_peek(h->store, q->name, q->name_len);
    if (k == NULL || k->type != HKEY_LIST)
        return;
    uint32_t i = hlst_find_seq(k, hero_job_info(j).seq);
    if (i == hlst_len(k))
        return;
    hero_log_pop(h, k, hlst_at(k, i)->seq);
    hstore_val_free(hlst_take(h->store, k, i));
    if (hlst_len(k) == 0)
        hero_key_delete(h, k);
}

/* The timeout of job hash k in ms (0: none). */
static uint64_t
hero_timeout_ms(const struct hkey *k)
{
    double timeout = hero_number(k, "timeout");
    return timeout > 0 ? (uint64_t)ceil(WQ_MIN(timeout * 1000, 1e15)) : 0;
}

/* The engine's reservation for a timeout (or what is left of one): that
 * long, or the longest reservation for a longer one or none
 * (hero_ttr_expired renews it). */
static uint32_t
hero_ttr(uint64_t timeout_ms)
{
    return (uint32_t)(timeout_ms > 0 ? WQ_MIN(timeout_ms, WQ_MAX_TTR_MS) : WQ_MAX_TTR_MS);
}

struct job *
hero_job_add(struct hero_ctx *h, struct wq_str queue, const char *id, size_t n, uint64_t seq,
             uint32_t handed)
{
    struct hkey *hash = hero_job_hash(h, id, n);
    struct hero_info info = {.seq = seq, .timeout_ms = hero_timeout_ms(hash), .handed = handed};
    struct job_spec js = {
        .key = {(const uint8_t *)id, n, h->space},
        .name = queue,
        .ttr = hero_ttr(info.timeout_ms),
        .ttl = UINT64_MAX,
        .payload = (const char *)&info,
        .payload_len = sizeof info,
    };
    if (core_restore(h->core, &js, *h->now_ms) != CORE_OK)
        return NULL;
    hero_deps_note(h, hash, id, n);
    return hero_job(h, id, n);
}

enum hero_submit
hero_jobs_submit(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n)
{
    if (!hero_is_work_queue(k) || hero_job_hash(h, id, n) == NULL)
        return HERO_PLAIN;
    if (hero_job(h, id, n) != NULL)
        return HERO_DUPLICATE; /* queued or handed out: no second copy */
    /* bound to the element about to be pushed */
    if (hero_job_add(h, (struct wq_str){k->key, k->len}, id, n, hstore_next_seq(h->store), 0) ==
        NULL)
        return HERO_PLAIN;
    h->jobs.submitted++;
    return HERO_SUBMITTED;
}

void
hero_jobs_unsubmit(struct hero_ctx *h, const char *id, size_t n)
{
    struct job *j = hero_job(h, id, n);
    if (j != NULL) { /* never handed out: nothing logged of it yet */
        h->jobs.submitted--;
        core_delete_job(h->core, j);
    }
}

void
hero_jobs_taken(struct hero_ctx *h, struct hero_conn *st, const struct hkey *k,
                const struct hval *v)
{
    struct job *j = hero_job(h, v->p, v->len);
    if (j == NULL || !hero_job_element(j, v))
        return; /* plain data */
    /* its timeout runs from now, as its hash says now */
    struct hero_info info = hero_job_info(j);
    info.handed++;
    info.timeout_ms = hero_timeout_ms(hero_job_hash(h, v->p, v->len));
    hero_job_set_info(h, j, &info);
    core_job_set_ttr(j, hero_ttr(info.timeout_ms));
    hero_log_take(h, CMDLOG_H_TAKE, v->p, v->len, (struct wq_str){k->key, k->len}, info.handed);
    core_job_take(h->core, j, *h->now_ms);
    h->jobs.handed++;
    struct hero_run *run = wq_malloc(sizeof *run + v->len);
    run->st = st;
    run->taken_ms = *h->now_ms;
    run->len = v->len;
    memcpy(run->id, v->p, v->len);
    registry_insert(h->running, run);
    list_push_back(&st->held, &run->link);
}

void
hero_job_lost(struct hero_ctx *h, struct job *j, const char *why)
{
    struct job_key key = job_key_of(j);
    char id[HERO_ID_MAX];
    size_t n = key.len;
    memcpy(id, key.p, n);
    struct hkey *hash = hero_job_hash(h, id, n);
    struct hero_info info = hero_job_info(j);
    const struct queue *q = core_job_queue(h->core, j);
    struct wq_str queue = {q->name, q->name_len};
    uint64_t seq = 0;
    if (hash != NULL && (double)info.handed < 1 + floor(hero_number(hash, "retries")))
        seq = hero_requeue_push(h, queue, id, n);
    if (seq == 0) { /* out of retries, or its list cannot take it back */
        hero_job_end(h, j, false);
        hero_job_fail(h, id, n, why);
        return;
    }
    hero_run_drop(h, id, n);
    info.seq = seq;
    hero_job_set_info(h, j, &info);
    hero_log_take(h, CMDLOG_H_BACK, id, n, queue, info.handed);
    core_job_retry_at(h->core, j, (int64_t)*h->now_ms);
    h->jobs.retried++;
    hero_serve_key(h, queue);
}

/* core_space_ops.ttr_expired: a job's reservation ran out: its timeout,
 * or the engine's longest reservation for a job with a longer one or
 * none, which then starts again for what is left. */
static void
hero_ttr_expired(void *arg, struct core *c, struct job *j)
{
    struct hero_ctx *h = arg;
    struct job_key key = job_key_of(j);
    struct hero_run *run = registry_find(h->running, key.p, key.len);
    struct hero_info info = hero_job_info(j);
    uint64_t end = run != NULL ? run->taken_ms + info.timeout_ms : 0;
    if (run != NULL && (info.timeout_ms == 0 || *h->now_ms < end)) {
        core_job_set_ttr(j, hero_ttr(info.timeout_ms == 0 ? 0 : end - *h->now_ms));
        core_job_retry_at(c, j, (int64_t)*h->now_ms);
        core_job_take(c, j, *h->now_ms);
        return;
    }
    hero_job_lost(h, j, "timeout");
}

void
hero_jobs_conn_closed(struct hero_ctx *h, struct hero_conn *st)
{
    while (!list_empty(&st->held)) {
        struct hero_run *run = list_item(st->held.next, struct hero_run, link);
        list_unlink(&run->link);
        run->st = NULL;
        struct job *j = hero_job(h, run->id, run->len);
        if (j != NULL)
            hero_job_lost(h, j, "worker lost");
        else
            hero_run_drop(h, run->id, run->len);
    }
}

void
hero_jobs_field_set(struct hero_ctx *h, const struct hkey *k, const struct wq_str *f,
                    struct wq_str v)
{
    if (!hero_str_is(*f, "status") || !hero_prefixed(k->key, k->len, HERO_JOB_PREFIX))
        return;
    size_t p = sizeof HERO_JOB_PREFIX - 1;
    hero_jobs_status(h, k->key + p, k->len - p, v);
}

void
hero_jobs_stop(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n)
{
    if (!hero_prefixed(k->key, k->len, HERO_SQ_PREFIX))
        return;
    struct job *j = hero_job(h, id, n);
    if (j == NULL || j->state == JOB_LEASED)
        return; /* running: the worker reads its stop queue */
    hero_unqueue(h, j);
    hero_job_end(h, j, false);
    hero_job_fail(h, id, n, "stopped");
}

void
hero_jobs_withdrawn(struct hero_ctx *h, const struct hkey *k, const struct hval *v)
{
    if (!hero_is_work_queue(k))
        return;
    struct job *j = hero_job(h, v->p, v->len);
    if (j != NULL && hero_job_element(j, v))
        hero_job_end(h, j, false);
}

void
hero_jobs_hash_gone(struct hero_ctx *h, const struct hkey *k)
{
    if (!hero_prefixed(k->key, k->len, HERO_JOB_PREFIX))
        return;
    size_t p = sizeof HERO_JOB_PREFIX - 1;
    struct job *j = hero_job(h, k->key + p, k->len - p);
    if (j != NULL)
        hero_job_end(h, j, false);
}

static void
hero_run_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_run *r = elem;
    *key = r->id;
    *len = r->len;
}

static const struct core_space_ops hero_space_ops = {
    .ttr_expired = hero_ttr_expired,
    .replay = hero_jobs_replay,
};

void
hero_jobs_open(struct hero_ctx *h)
{
    h->running = registry_new(hero_run_key);
    hero_deps_open(h);
    hero_jobs_replay_open(h);
    h->space = core_space_open(h->core, "hero", &hero_space_ops, h, 0, CMDLOG_H_HSET, CMDLOG_H_MAX);
}

static void
hero_run_free(void *elem, void *arg)
{
    (void)arg;
    wq_free(elem);
}

void
hero_jobs_close(struct hero_ctx *h)
{
    registry_foreach(h->running, hero_run_free, NULL);
    registry_free(h->running);
    hero_deps_free(h);
    hero_jobs_replay_close(h);
}
