/* cmd_inspect.c - the inspect command: server, queues, queue, jobs,
 * scheduled-jobs, job.  Read-only: nothing here changes a job or reorders a
 * queue. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "net/reply.h"
#include "engine/core.h"
#include "lib/payload.h"
#include "lib/util.h"
#include "engine/workers.h"

/* Append a formatted "key value\r\n" line. */
__attribute__((format(printf, 2, 3))) static void
inspect_line(struct reply *out, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 2, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof buf - 3)
        n = (int)(sizeof buf - 3);
    memcpy(buf + n, "\r\n", 2);
    reply_bytes(out, buf, (size_t)n + 2);
}

static void
inspect_time_line(struct reply *out, const char *key, int64_t unix_ms)
{
    char t[32];
    util_format_time(unix_ms, t);
    inspect_line(out, "%s %s", key, t);
}

/* One job block: "<id> <k>" then k key lines, payload raw. */
static void
inspect_job_block(struct reply *out, const struct core *core, const struct job *j)
{
    char id[JOBID_TEXT_LEN + 1];
    bool timed = j->flags & JOB_F_TIMED;
    const struct queue *q = core_job_queue(core, j);
    const struct job_ext *x = core_job_ext(core, j);
    int64_t retry_at = x != NULL ? x->retry_at : 0, died = core_job_died(core, j);
    bool backoff = j->flags & JOB_F_BACKOFF, dead = j->flags & JOB_F_DEAD;
    jobid_format(j->id, id);
    inspect_line(out, "%s %d", id,
                 (timed ? 13 : 12) + (q->base != NULL) + backoff + dead + (retry_at != 0) +
                     (died != 0));
    inspect_line(out, "name %s", queue_visible_name(q));
    inspect_line(out, "ttr %u", (unsigned)j->ttr);
    inspect_line(out, "ttl %llu", (unsigned long long)j->ttl);
    inspect_line(out, "payload-size %u", j->payload_len);
    reply_bytes(out, "payload ", 8);
    reply_payload(out, j->payload, j->payload_len);
    reply_bytes(out, "\r\n", 2);
    inspect_line(out, "max-attempts %u", (unsigned)j->max_attempts);
    inspect_line(out, "attempts %u", (unsigned)j->attempts);
    inspect_line(out, "max-fails %u", (unsigned)j->max_fails);
    inspect_line(out, "fails %u", (unsigned)j->fails);
    inspect_line(out, "priority %d", j->priority);
    inspect_line(out, "state %u", (unsigned)j->state);
    inspect_time_line(out, "created", core_job_created(core, j));
    if (timed)
        inspect_time_line(out, "time", j->base_ms);
    if (q->base != NULL) /* ours: the workers it is for (add -worker) */
        inspect_line(out, "workers %s", strchr(q->name, QUEUE_TARGET_SEP) + 1);
    /* ours, for the jobs that asked for them (add -backoff, -dead) */
    if (backoff)
        inspect_line(out, "backoff faktory");
    if (dead)
        inspect_line(out, "dead 1");
    if (retry_at != 0)
        inspect_time_line(out, "retry-at", retry_at);
    if (died != 0)
        inspect_time_line(out, "died", died);
}

static void
inspect_queue_block(struct reply *out, const struct queue *q)
{
    inspect_line(out, "%s 2", q->name);
    inspect_line(out, "ready-len %u", heap_len(&q->ready));
    inspect_line(out, "scheduled-len %u", heap_len(&q->scheduled));
}

/* One of inspect server's keys for another space's jobs. */
struct inspect_count {
    const char *name;
    uint64_t value;
};

/* The keys "<prefix>-<name> <value>" of counts[0..n). */
static void
inspect_counts(struct reply *out, const char *prefix, const struct inspect_count *counts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        inspect_line(out, "%s-%s %llu", prefix, counts[i].name,
                     (unsigned long long)counts[i].value);
}

/* The Hero Dispatcher's work queues are queues of the engine's space
 * "hero", named by their keys: a Workq name never holds the prefix's ':'. */
#define INSPECT_HERO_PREFIX "hero:"

static void
inspect_server(struct cmd_ctx *ctx, struct reply *out)
{
    const struct core_stats *st = &core_ids(ctx->core)->stats;
    /* Faktory's, Hero's and NORFAB's jobs (their spaces of the core),
     * after Workq's keys, each only where its protocol is served or has
     * jobs */
    struct core_space_counts fk, hk, nk;
    core_space_counts(ctx->core, core_space_find(ctx->core, "faktory"), &fk);
    core_space_counts(ctx->core, core_space_find(ctx->core, "hero"), &hk);
    core_space_counts(ctx->core, core_space_find(ctx->core, "norfab"), &nk);
    bool faktory = ctx->faktory || fk.jobs > 0, hero = ctx->hero || hk.jobs > 0;
    bool norfab = ctx->norfab || nk.jobs > 0;
    inspect_line(out, "+OK 1");
    inspect_line(out, "server %d", 14 + (faktory ? 7 : 0) + (hero ? 4 : 0) + (norfab ? 4 : 0));
    inspect_line(out, "active-clients %llu", (unsigned long long)*ctx->clients);
    inspect_line(out, "evicted-jobs %llu", (unsigned long long)st->evicted);
    inspect_time_line(out, "started", (int64_t)ctx->started_ms);
    inspect_line(out, "version %s", PACKAGE_VERSION);
    inspect_line(out, "uptime %llu", (unsigned long long)((*ctx->now_ms - ctx->started_ms) / 1000));
    inspect_line(out, "jobs %llu", (unsigned long long)core_job_count(ctx->core));
    inspect_line(out, "ready-jobs %llu", (unsigned long long)st->ready);
    inspect_line(out, "scheduled-jobs %llu", (unsigned long long)st->scheduled);
    inspect_line(out, "leased-jobs %llu", (unsigned long long)st->leased);
    inspect_line(out, "completed-jobs %llu", (unsigned long long)st->completed);
    inspect_line(out, "failed-jobs %llu", (unsigned long long)st->failed);
    inspect_line(out, "parked-clients %llu", (unsigned long long)st->parked);
    inspect_line(out, "memory-used %zu", alloc_memory_used());
    inspect_line(out, "allocator %s", alloc_name());
    if (faktory) {
        const struct inspect_count c[] = {
            {"jobs", fk.jobs},
            {"scheduled-jobs", fk.scheduled},
            {"enqueued-jobs", fk.enqueued},
            {"working-jobs", fk.working},
            {"retry-jobs", fk.retry},
            {"dead-jobs", fk.dead},
            {"queues", fk.queues},
        };
        inspect_counts(out, "faktory", c, WQ_ARRAY_LEN(c));
    }
    if (hero) {
        const struct inspect_count c[] = {
            {"jobs", hk.jobs},
            {"queued-jobs", hk.enqueued + hk.retry},
            {"handed-out-jobs", hk.working},
            {"queues", hk.queues},
        };
        inspect_counts(out, "hero", c, WQ_ARRAY_LEN(c));
    }
    if (norfab) {
        const struct inspect_count c[] = {
            {"jobs", nk.jobs},
            {"queued-jobs", nk.enqueued + nk.retry + nk.scheduled},
            {"sent-jobs", nk.working},
            {"queues", nk.queues},
        };
        inspect_counts(out, "norfab", c, WQ_ARRAY_LEN(c));
    }
}

/* The most one entry of a listing adds to the reply: a queue's block; a
 * worker's; a job's block with its payload copied (a larger one is sent by
 * reference, the job's own bytes). */
#define INSPECT_QUEUE_BYTES  (64u + WQ_MAX_NAME)
#define INSPECT_WORKER_BYTES 2048u
#define INSPECT_JOB_BYTES    (512u + WQ_MAX_NAME + PAYLOAD_SHARE_MIN)

/* At -max-memory, a long listing is refused rather than buffered: is
 * count entries of at most each bytes too much?  Then it answers Out of
 * memory. */
static bool
inspect_refused(struct cmd_ctx *ctx, struct reply *out, uint64_t count, uint64_t each)
{
    if (!core_over_limit(ctx->core, count * each))
        return false;
    cmd_reply_nomem(out);
    return true;
}

/* inspect queues: the active queues by name, from the table's index:
 * O(log n) to the offset, then the walk. */
static void
inspect_queues(struct cmd_ctx *ctx, struct reply *out, uint64_t offset, uint64_t limit)
{
    const struct queue_table *t = &core_ids(ctx->core)->queues;
    uint64_t active = ostree_count(&t->in_order);
    uint64_t count = offset >= active ? 0 : WQ_MIN(limit, active - offset);
    if (inspect_refused(ctx, out, count, INSPECT_QUEUE_BYTES))
        return;
    inspect_line(out, "+OK %llu", (unsigned long long)count);
    const struct queue *q = queue_table_select(t, offset);
    for (uint64_t i = 0; i < count; i++, q = queue_table_next(q))
        inspect_queue_block(out, q);
}

/* s with every byte a line could not hold (a control character) as '?'. */
static const char *
inspect_printable(const char *s, char *buf, size_t size)
{
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < size; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}

/* inspect workers: the worker registry sorted by wid (workers are few). */
static void
inspect_workers(struct cmd_ctx *ctx, struct reply *out, uint64_t offset, uint64_t limit)
{
    size_t n;
    struct worker **k = workers_sorted(ctx->core->workers, &n);
    uint64_t first = WQ_MIN(offset, (uint64_t)n);
    uint64_t count = WQ_MIN(limit, (uint64_t)n - first);
    if (inspect_refused(ctx, out, count, INSPECT_WORKER_BYTES)) {
        wq_free(k);
        return;
    }
    inspect_line(out, "+OK %llu", (unsigned long long)count);
    for (uint64_t i = first; i < first + count; i++) {
        const struct worker *w = k[i];
        char host[256], labels[256], kinds[32] = "";
        static const char *const kind_names[] = {"faktory", "workq", "norfab"};
        for (size_t b = 0; b < WQ_ARRAY_LEN(kind_names); b++)
            if (w->kinds & (1u << b))
                snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s",
                         kinds[0] != '\0' ? "," : "", kind_names[b]);
        inspect_line(out, "%s 12", w->wid);
        inspect_line(out, "hostname %s", inspect_printable(w->hostname, host, sizeof host));
        inspect_line(out, "pid %lld", (long long)w->pid);
        inspect_line(out, "labels %s", inspect_printable(w->labels, labels, sizeof labels));
        inspect_line(out, "connections %u", (unsigned)w->connections);
        inspect_time_line(out, "last-beat", (int64_t)w->last_beat_ms);
        inspect_line(out, "state %s", worker_state_name(w->state));
        inspect_line(out, "kind %s", kinds);
        inspect_line(out, "address %s", w->address);
        inspect_time_line(out, "connected", (int64_t)w->connected_ms);
        inspect_line(out, "last-command %s", w->last_command);
        inspect_line(out, "waiting-on %s", w->waiting_on != NULL ? w->waiting_on : "");
        inspect_line(out, "jobs %u", (unsigned)w->holding);
    }
    wq_free(k);
}

/* What a walk of a heap of jobs needs to write each block. */
struct inspect_walk {
    struct reply *out;
    const struct core *core;
};

static void
inspect_job_cb(void *elem, void *arg)
{
    const struct inspect_walk *w = arg;
    inspect_job_block(w->out, w->core, elem);
}

/* inspect jobs / scheduled-jobs: a best-first walk of the queue's heap. */
static void
inspect_jobs(struct cmd_ctx *ctx, struct reply *out, const struct wq_str *name, uint64_t offset,
             uint64_t limit, bool scheduled)
{
    struct queue *q = core_queue(ctx->core, name->p, name->n);
    if (q == NULL) {
        cmd_reply_not_found(out);
        return;
    }
    const struct heap *h = scheduled ? &q->scheduled : &q->ready;
    uint64_t count = offset >= heap_len(h) ? 0 : WQ_MIN(limit, heap_len(h) - offset);
    if (inspect_refused(ctx, out, count, INSPECT_JOB_BYTES))
        return;
    inspect_line(out, "+OK %llu", (unsigned long long)count);
    struct inspect_walk w = {out, ctx->core};
    heap_walk(h, offset, (uint32_t)count, inspect_job_cb, &w);
}

/* inspect dead-jobs: the dead set, oldest death first (a walk of its
 * list to the offset). */
static void
inspect_dead_jobs(struct cmd_ctx *ctx, struct reply *out, uint64_t offset, uint64_t limit)
{
    const struct core *c = ctx->core;
    uint64_t dead = core_ids(c)->dead.count;
    uint64_t count = offset >= dead ? 0 : WQ_MIN(limit, dead - offset);
    if (inspect_refused(ctx, out, count, INSPECT_JOB_BYTES))
        return;
    const struct job **jobs = wq_malloc((count + 1) * sizeof *jobs);
    count = core_dead_jobs(c, JOB_SPACE_IDS, offset, (size_t)count, jobs);
    inspect_line(out, "+OK %llu", (unsigned long long)count);
    for (uint64_t i = 0; i < count; i++)
        inspect_job_block(out, c, jobs[i]);
    wq_free(jobs);
}

/* Parse "<offset> <limit>" at args[i], args[i+1]; NULL or the error. */
static const char *
inspect_range(const struct request *r, size_t i, uint64_t *offset, uint64_t *limit)
{
    if (util_parse_u64(r->args[i].p, r->args[i].n, UINT32_MAX, offset) != 0)
        return "Invalid cursor offset";
    if (util_parse_u64(r->args[i + 1].p, r->args[i + 1].n, WQ_MAX_INSPECT_LIMIT, limit) != 0 ||
        *limit == 0)
        return "Invalid limit";
    return NULL;
}

static bool
inspect_is(const struct wq_str *s, const char *word)
{
    return s->n == strlen(word) && memcmp(s->p, word, s->n) == 0;
}

void
cmd_inspect(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    const struct wq_str *obj = &r->args[0];
    size_t n = r->nargs - 1;
    uint64_t offset = 0, limit = 0;
    const char *err = NULL;
    size_t want;

    if (inspect_is(obj, "server"))
        want = 0;
    else if (inspect_is(obj, "queues") || inspect_is(obj, "workers") ||
             inspect_is(obj, "dead-jobs"))
        want = 2;
    else if (inspect_is(obj, "queue") || inspect_is(obj, "job"))
        want = 1;
    else if (inspect_is(obj, "jobs") || inspect_is(obj, "scheduled-jobs"))
        want = 3;
    else
        err = "Unknown command";
    if (err == NULL && n != want)
        err = "Invalid command args";
    if (err == NULL && want == 2)
        err = inspect_range(r, 1, &offset, &limit);
    bool hero = false; /* inspect queue of a Hero work queue */
    if (err == NULL && inspect_is(obj, "queue"))
        hero = r->args[1].n > strlen(INSPECT_HERO_PREFIX) &&
               memcmp(r->args[1].p, INSPECT_HERO_PREFIX, strlen(INSPECT_HERO_PREFIX)) == 0;
    if (err == NULL && !hero &&
        (inspect_is(obj, "jobs") || inspect_is(obj, "scheduled-jobs") ||
         inspect_is(obj, "queue"))) {
        if (!cmd_arg_name(&r->args[1]))
            err = "Invalid Name";
        else if (want == 3)
            err = inspect_range(r, 2, &offset, &limit);
    }
    uint8_t id[JOBID_LEN];
    if (err == NULL && inspect_is(obj, "job") && !cmd_arg_id(&r->args[1], id))
        err = "Invalid ID";
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }

    if (inspect_is(obj, "server")) {
        inspect_server(ctx, out);
    } else if (inspect_is(obj, "queues")) {
        inspect_queues(ctx, out, offset, limit);
    } else if (inspect_is(obj, "workers")) {
        inspect_workers(ctx, out, offset, limit);
    } else if (inspect_is(obj, "dead-jobs")) {
        inspect_dead_jobs(ctx, out, offset, limit);
    } else if (inspect_is(obj, "queue")) {
        struct queue *q = hero ? core_space_queue(ctx->core, core_space_find(ctx->core, "hero"),
                                                  r->args[1].p, r->args[1].n)
                               : core_queue(ctx->core, r->args[1].p, r->args[1].n);
        if (q == NULL) {
            cmd_reply_not_found(out);
            return;
        }
        inspect_line(out, "+OK 1");
        inspect_queue_block(out, q);
    } else if (inspect_is(obj, "job")) {
        struct job *j = core_find(ctx->core, id);
        if (j == NULL) {
            cmd_reply_not_found(out);
            return;
        }
        inspect_line(out, "+OK 1");
        inspect_job_block(out, ctx->core, j);
    } else {
        inspect_jobs(ctx, out, &r->args[1], offset, limit, inspect_is(obj, "scheduled-jobs"));
    }
}
