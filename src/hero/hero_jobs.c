/* hero_jobs.c - the job server under the lists hero:work_queue:{worker}
 * (doc/hero.md): an id pushed there that names a hash hero:job:{id} is a
 * job of the engine's "hero" space, queued on that list; a pop hands it
 * to the connection that popped it, with its timeout as the reservation;
 * the job's end is its hash's status (finished or error).  A job whose
 * connection closes first, or whose timeout passes, goes back to the head
 * of its list while its retries allow, else the server marks it failed.
 * Prerequisites hold a job in its list until they are finished; one that
 * fails fails the job.  The lists stay Redis lists: the engine's jobs
 * mirror them for the reservations, the figures and inspect. */
#include "lib/wq.h"
#include "hero/hero.h"

#include <jansson.h>
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

#define HERO_JOB_PREFIX "hero:job:"
#define HERO_WQ_PREFIX  "hero:work_queue:"
#define HERO_SQ_PREFIX  "hero:stop_queue:"
/* The longest job id: a key of its hash must fit a short buffer. */
#define HERO_ID_MAX 512

/* What the engine's job keeps of a Hero job (its payload). */
struct hero_info {
    uint64_t timeout_ms; /* 0: none */
    uint32_t handed;     /* times handed out */
};

/* A job handed to a connection. */
struct hero_run {
    struct list link;     /* in its connection's list */
    struct hero_conn *st; /* NULL: its connection was lost before a restart */
    uint64_t taken_ms;
    uint32_t len;
    char id[];
};

/* The jobs waiting for a prerequisite, by the prerequisite's id. */
struct hero_dep {
    struct wq_str *ids; /* copies */
    uint32_t n, cap;
    uint32_t len;
    char id[];
};

static bool
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

static void
hero_run_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_run *r = elem;
    *key = r->id;
    *len = r->len;
}

static void
hero_dep_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_dep *d = elem;
    *key = d->id;
    *len = d->len;
}

/* The hash of job id[0..n), or NULL. */
static struct hkey *
hero_job_hash(struct hero_ctx *h, const char *id, size_t n)
{
    char key[sizeof HERO_JOB_PREFIX + HERO_ID_MAX];
    if (n == 0 || n > HERO_ID_MAX)
        return NULL;
    memcpy(key, HERO_JOB_PREFIX, sizeof HERO_JOB_PREFIX - 1);
    memcpy(key + sizeof HERO_JOB_PREFIX - 1, id, n);
    struct hkey *k = hstore_find(h->store, key, sizeof HERO_JOB_PREFIX - 1 + n, *h->now_ms);
    return k != NULL && k->type == HKEY_HASH ? k : NULL;
}

/* Field f of hash k, or an empty value. */
static struct wq_str
hero_field(const struct hkey *k, const char *f)
{
    const struct hval *v = k != NULL ? hhash_get(k, f, strlen(f)) : NULL;
    return v != NULL ? (struct wq_str){v->p, v->len} : (struct wq_str){"", 0};
}

static bool
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

/* The engine's job for id, or NULL. */
static struct job *
hero_job(struct hero_ctx *h, const char *id, size_t n)
{
    struct job_key key = {(const uint8_t *)id, n, h->space};
    return core_find_key(h->core, &key);
}

static struct hero_info
hero_job_info(const struct job *j)
{
    struct hero_info info;
    memcpy(&info, j->payload, sizeof info);
    return info;
}

/* Records of the jobs: handed out (53) or back on its list (55), with the
 * times it was handed out; ended (54). */
static void
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

static void
hero_log_end(struct hero_ctx *h, const char *id, size_t n)
{
    struct core *c = h->core;
    if (c->record == NULL)
        return;
    struct cmdlog_rec r = {.code = CMDLOG_H_END, .at_ms = (int64_t)c->now_ms, .jid = {id, n}};
    c->record(c->record_arg, &r);
}

/* The ISO 8601 time of now, as Hero writes updated_at. */
static size_t
hero_iso_time(uint64_t ms, char out[32])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    return n + (size_t)snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000));
}

/* Set field f of hash k to v, logged. */
static void
hero_set_field(struct hero_ctx *h, struct hkey *k, const char *f, const char *v, size_t n)
{
    struct wq_str name = {f, strlen(f)};
    hero_log_hset(h, k, &name, v, n);
    (void)hhash_set(h->store, k, f, name.n, v, n);
}

static void hero_jobs_status(struct hero_ctx *h, const char *id, size_t n, struct wq_str status);

/* The server decides job id's outcome: status error, error why,
 * updated_at; its dependents fail in turn. */
static void
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

/* The engine's job of id ends (it is no longer queued nor handed out). */
static void
hero_job_end(struct hero_ctx *h, struct job *j, bool success)
{
    struct job_key key = job_key_of(j);
    struct hero_run *run = registry_remove(h->running, key.p, key.len);
    if (success)
        h->jobs.finished++;
    else
        h->jobs.failed++;
    if (hero_job_info(j).handed > 0) /* it has records of 53 or 55 */
        hero_log_end(h, (const char *)key.p, key.len);
    if (run != NULL) {
        if (run->st != NULL)
            list_unlink(&run->link);
        wq_free(run);
    }
    if (j->state == JOB_LEASED)
        core_finish_job(h->core, j, success, NULL, 0, 0, *h->now_ms);
    core_delete_job(h->core, j);
}

/* Remove the element of job id from its work queue (logged), if there. */
static void
hero_unqueue(struct hero_ctx *h, const struct job *j, const char *id, size_t n)
{
    const struct queue *q = core_job_queue(h->core, j);
    struct hkey *k = hstore_find(h->store, q->name, q->name_len, *h->now_ms);
    if (k == NULL || k->type != HKEY_LIST)
        return;
    for (uint32_t i = 0; i < hlst_len(k); i++) {
        const struct hval *v = hlst_at(k, i);
        if (v->len == n && memcmp(v->p, id, n) == 0) {
            hero_log_pop(h, k, v->seq);
            hstore_val_free(hlst_take(h->store, k, i));
            break;
        }
    }
    if (hlst_len(k) == 0)
        hero_key_delete(h, k);
}

/* The prerequisites of job hash k (prerequisites and dependencies, JSON
 * arrays of ids), each passed to fn until it returns false. */
static void
hero_prereqs(const struct hkey *k, bool (*fn)(void *arg, const char *id, size_t n), void *arg)
{
    static const char *const fields[] = {"prerequisites", "dependencies"};
    for (size_t f = 0; f < WQ_ARRAY_LEN(fields); f++) {
        struct wq_str v = hero_field(k, fields[f]);
        if (v.n == 0)
            continue;
        json_t *a = json_loadb(v.p, v.n, JSON_DECODE_ANY, NULL);
        size_t i;
        json_t *e;
        bool go = true;
        json_array_foreach(a, i, e)
        {
            if (go && json_is_string(e))
                go = fn(arg, json_string_value(e), json_string_length(e));
        }
        json_decref(a);
        if (!go)
            return;
    }
}

/* What a walk over a job's prerequisites finds. */
struct hero_check {
    struct hero_ctx *h;
    bool waits;
    struct hero_failed *failed; /* the first prerequisite in error */
};

static bool
hero_check_one(void *arg, const char *id, size_t n)
{
    struct hero_check *ck = arg;
    struct wq_str st = hero_field(hero_job_hash(ck->h, id, n), "status");
    if (hero_str_is(st, "finished"))
        return true;
    if (hero_str_is(st, "error")) {
        ck->failed->len = WQ_MIN(n, sizeof ck->failed->id);
        memcpy(ck->failed->id, id, ck->failed->len);
        return false;
    }
    ck->waits = true;
    return true;
}

/* A job being noted as the dependent of its prerequisites. */
struct hero_note {
    struct hero_ctx *h;
    const char *id;
    size_t n;
};

/* Note that the job waits for prerequisite p (unless it is finished). */
static bool
hero_dep_note(void *arg, const char *p, size_t n)
{
    struct hero_note *note = arg;
    struct hero_ctx *h = note->h;
    struct wq_str st = hero_field(hero_job_hash(h, p, n), "status");
    if (hero_str_is(st, "finished") || n == 0 || n > HERO_ID_MAX)
        return true;
    struct hero_dep *d = registry_find(h->deps, p, n);
    if (d == NULL) {
        d = wq_calloc(1, sizeof *d + n);
        d->len = (uint32_t)n;
        memcpy(d->id, p, n);
        registry_insert(h->deps, d);
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 2;
        d->ids = wq_realloc(d->ids, d->cap * sizeof *d->ids);
    }
    char *copy = wq_malloc(note->n);
    memcpy(copy, note->id, note->n);
    d->ids[d->n++] = (struct wq_str){copy, note->n};
    return true;
}

enum hero_ready
hero_jobs_ready(struct hero_ctx *h, const struct hval *v, struct hero_failed *failed)
{
    struct job *j = hero_job(h, v->p, v->len);
    if (j == NULL)
        return HERO_READY; /* plain data */
    failed->len = 0;
    struct hero_check ck = {.h = h, .failed = failed};
    hero_prereqs(hero_job_hash(h, v->p, v->len), hero_check_one, &ck);
    if (failed->len > 0)
        return HERO_FAILED;
    return ck.waits ? HERO_WAITS : HERO_READY;
}

void
hero_jobs_fail_prereq(struct hero_ctx *h, const char *id, size_t n,
                      const struct hero_failed *failed)
{
    struct job *j = hero_job(h, id, n);
    if (j == NULL)
        return;
    char why[64 + HERO_ID_MAX];
    snprintf(why, sizeof why, "prerequisite %.*s failed", (int)failed->len, failed->id);
    hero_job_end(h, j, false);
    hero_job_fail(h, id, n, why);
}

/* The timeout of job hash k in ms (0: none). */
static uint64_t
hero_timeout_ms(const struct hkey *k)
{
    double timeout = hero_number(k, "timeout");
    return timeout > 0 ? (uint64_t)ceil(WQ_MIN(timeout * 1000, 1e15)) : 0;
}

/* The engine's reservation for a timeout: the timeout, or the longest
 * reservation for a longer one or none (hero_ttr_expired renews it). */
static uint32_t
hero_ttr(uint64_t timeout_ms)
{
    return (uint32_t)(timeout_ms > 0 ? WQ_MIN(timeout_ms, WQ_MAX_TTR_MS) : WQ_MAX_TTR_MS);
}

/* Make job id queued on the work queue named queue, handed out `handed`
 * times so far. */
static struct job *
hero_job_add(struct hero_ctx *h, struct wq_str queue, const char *id, size_t n, uint32_t handed)
{
    struct hkey *hash = hero_job_hash(h, id, n);
    struct hero_info info = {.timeout_ms = hero_timeout_ms(hash), .handed = handed};
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
    struct hero_note note = {h, id, n};
    hero_prereqs(hash, hero_dep_note, &note);
    return hero_job(h, id, n);
}

enum hero_submit
hero_jobs_submit(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n)
{
    if (!hero_is_work_queue(k) || hero_job_hash(h, id, n) == NULL)
        return HERO_PLAIN;
    if (hero_job(h, id, n) != NULL)
        return HERO_DUPLICATE; /* queued or handed out: no second copy */
    if (hero_job_add(h, (struct wq_str){k->key, k->len}, id, n, 0) == NULL)
        return HERO_PLAIN;
    h->jobs.submitted++;
    return HERO_SUBMITTED;
}

void
hero_jobs_taken(struct hero_ctx *h, struct hero_conn *st, const struct hkey *k,
                const struct hval *v)
{
    struct job *j = hero_job(h, v->p, v->len);
    if (j == NULL)
        return;
    /* its timeout runs from now, as its hash says now */
    struct hero_info info = hero_job_info(j);
    info.handed++;
    info.timeout_ms = hero_timeout_ms(hero_job_hash(h, v->p, v->len));
    core_job_set_payload(h->core, j, (const char *)&info, sizeof info);
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

/* Job j, handed out, was not finished by its connection (why: "timeout",
 * "worker lost"): back to the head of its list while its retries allow,
 * else failed. */
static void
hero_job_lost(struct hero_ctx *h, struct job *j, const char *why)
{
    struct job_key key = job_key_of(j);
    char id[HERO_ID_MAX];
    size_t n = key.len;
    memcpy(id, key.p, n);
    struct hkey *hash = hero_job_hash(h, id, n);
    double retries = hero_number(hash, "retries");
    struct hero_info info = hero_job_info(j);
    const struct queue *q = core_job_queue(h->core, j);
    if (hash == NULL || (double)info.handed >= 1 + floor(retries)) {
        hero_job_end(h, j, false);
        hero_job_fail(h, id, n, why);
        return;
    }
    struct hero_run *run = registry_remove(h->running, id, n);
    if (run != NULL) {
        if (run->st != NULL)
            list_unlink(&run->link);
        wq_free(run);
    }
    hero_log_take(h, CMDLOG_H_BACK, id, n, (struct wq_str){q->name, q->name_len}, info.handed);
    core_job_retry_at(h->core, j, (int64_t)*h->now_ms);
    h->jobs.retried++;
    hero_requeue(h, (struct wq_str){q->name, q->name_len}, id, n);
}

/* core_space_ops.ttr_expired: a job's reservation ran out; its timeout,
 * or the engine's longest reservation for a job with a longer one or
 * none, which then starts again. */
static void
hero_ttr_expired(void *arg, struct core *c, struct job *j)
{
    struct hero_ctx *h = arg;
    struct job_key key = job_key_of(j);
    struct hero_run *run = registry_find(h->running, key.p, key.len);
    struct hero_info info = hero_job_info(j);
    if (run != NULL && (info.timeout_ms == 0 || *h->now_ms < run->taken_ms + info.timeout_ms)) {
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
    }
}

/* A job's status became s (by a client or by the server). */
static void
hero_jobs_status(struct hero_ctx *h, const char *id, size_t n, struct wq_str s)
{
    bool finished = hero_str_is(s, "finished"), failed = hero_str_is(s, "error");
    if (!finished && !failed)
        return;
    /* handed out, it is done; still queued (a late word from a worker
     * whose job went back to its list), it leaves its list */
    struct job *j = hero_job(h, id, n);
    if (j != NULL && registry_find(h->running, id, n) == NULL)
        hero_unqueue(h, j, id, n);
    if (j != NULL)
        hero_job_end(h, j, finished);
    /* its dependents: a failure fails them; a success may free them */
    struct hero_dep *d = registry_remove(h->deps, id, n);
    if (d == NULL)
        return;
    for (uint32_t i = 0; i < d->n; i++) {
        struct wq_str dep = d->ids[i];
        struct job *dj = hero_job(h, dep.p, dep.n);
        if (dj != NULL && dj->state != JOB_LEASED) {
            if (failed) {
                char why[64 + HERO_ID_MAX];
                snprintf(why, sizeof why, "prerequisite %.*s failed", (int)n, id);
                hero_unqueue(h, dj, dep.p, dep.n);
                hero_job_end(h, dj, false);
                hero_job_fail(h, dep.p, dep.n, why);
            } else {
                const struct queue *q = core_job_queue(h->core, dj);
                hero_serve_key(h, (struct wq_str){q->name, q->name_len});
            }
        }
        wq_free((char *)dep.p);
    }
    wq_free(d->ids);
    wq_free(d);
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
    hero_unqueue(h, j, id, n);
    hero_job_end(h, j, false);
    hero_job_fail(h, id, n, "stopped");
}

void
hero_jobs_withdrawn(struct hero_ctx *h, const struct hkey *k, const struct hval *v)
{
    if (!hero_is_work_queue(k))
        return;
    struct job *j = hero_job(h, v->p, v->len);
    if (j != NULL && j->state != JOB_LEASED)
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

/* Replay: the jobs handed out (held) or back on their list, not ended, by
 * id. */
struct hero_taken {
    uint32_t handed;
    bool held;
    uint32_t qlen, len;
    char bytes[]; /* id, then the queue */
};

static void
hero_taken_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_taken *t = elem;
    *key = t->bytes;
    *len = t->len;
}

/* core_space_ops.replay: the store's records, and the jobs handed out. */
static void
hero_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    (void)c;
    (void)now_ms;
    struct hero_ctx *h = arg;
    if (r->code < CMDLOG_H_TAKE) {
        hero_log_replay(h, r);
        return;
    }
    wq_free(registry_remove(h->taken, r->jid.p, r->jid.n));
    if (r->code == CMDLOG_H_END || r->jid.n > HERO_ID_MAX)
        return;
    struct hero_taken *t = wq_malloc(sizeof *t + r->jid.n + r->name.n);
    t->handed = (uint32_t)WQ_MIN(r->seq, UINT32_MAX);
    t->held = r->code == CMDLOG_H_TAKE;
    t->len = (uint32_t)r->jid.n;
    t->qlen = (uint32_t)r->name.n;
    memcpy(t->bytes, r->jid.p, r->jid.n);
    memcpy(t->bytes + r->jid.n, r->name.p, r->name.n);
    registry_insert(h->taken, t);
}

static const struct core_space_ops hero_space_ops = {
    .ttr_expired = hero_ttr_expired,
    .replay = hero_replay,
};

void
hero_jobs_open(struct hero_ctx *h)
{
    h->running = registry_new(hero_run_key);
    h->deps = registry_new(hero_dep_key);
    h->taken = registry_new(hero_taken_key);
    h->space = core_space_open(h->core, "hero", &hero_space_ops, h, 0, CMDLOG_H_HSET, CMDLOG_H_MAX);
}

/* After replay: the jobs the work queues hold, queued again. */
static void
hero_jobs_requeue_lists(struct hero_ctx *h)
{
    for (struct hkey *k = hstore_scan(h->store, 0); k != NULL; k = hstore_scan_next(k)) {
        if (!hero_is_work_queue(k))
            continue;
        for (uint32_t i = 0; i < hlst_len(k); i++) {
            const struct hval *v = hlst_at(k, i);
            if (hero_job_hash(h, v->p, v->len) == NULL || hero_job(h, v->p, v->len) != NULL)
                continue;
            /* a job back on its list keeps the times it was handed out */
            const struct hero_taken *t = registry_find(h->taken, v->p, v->len);
            uint32_t handed = t != NULL && !t->held ? t->handed : 0;
            hero_job_add(h, (struct wq_str){k->key, k->len}, v->p, v->len, handed);
        }
    }
}

/* A job handed out before the restart: its connection is gone. */
static void
hero_taken_lost(void *elem, void *arg)
{
    struct hero_taken *t = elem;
    struct hero_ctx *h = arg;
    const char *id = t->bytes;
    if (!t->held)
        return; /* back on its list: queued with its count */
    /* queued again already, or its hash gone: nothing to tell */
    struct job *j =
        hero_job(h, id, t->len) != NULL || hero_job_hash(h, id, t->len) == NULL
            ? NULL
            : hero_job_add(h, (struct wq_str){t->bytes + t->len, t->qlen}, id, t->len, t->handed);
    if (j == NULL) {
        hero_log_end(h, id, t->len);
        return;
    }
    core_job_take(h->core, j, *h->now_ms);
    struct hero_run *run = wq_malloc(sizeof *run + t->len);
    run->st = NULL;
    run->taken_ms = *h->now_ms;
    run->len = t->len;
    memcpy(run->id, id, t->len);
    registry_insert(h->running, run);
    hero_job_lost(h, j, "worker lost");
}

static void
hero_taken_free(void *elem, void *arg)
{
    (void)arg;
    wq_free(elem);
}

void
hero_jobs_replayed(struct hero_ctx *h)
{
    hero_jobs_requeue_lists(h);
    registry_foreach(h->taken, hero_taken_lost, h);
    registry_foreach(h->taken, hero_taken_free, NULL);
    registry_free(h->taken);
    h->taken = registry_new(hero_taken_key);
}

static void
hero_run_free(void *elem, void *arg)
{
    (void)arg;
    wq_free(elem);
}

static void
hero_dep_free(void *elem, void *arg)
{
    (void)arg;
    struct hero_dep *d = elem;
    for (uint32_t i = 0; i < d->n; i++)
        wq_free((char *)d->ids[i].p);
    wq_free(d->ids);
    wq_free(d);
}

void
hero_jobs_close(struct hero_ctx *h)
{
    registry_foreach(h->running, hero_run_free, NULL);
    registry_free(h->running);
    registry_foreach(h->deps, hero_dep_free, NULL);
    registry_free(h->deps);
    registry_foreach(h->taken, hero_taken_free, NULL);
    registry_free(h->taken);
}
