/* cmd_job.c - the client commands: add, schedule, run, result, delete. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "engine/queue.h"
#include "net/reply.h"
#include "engine/workers.h"
#include "engine/core.h"
#include "lib/util.h"

/* The reply to a job-creating command that did not park. */
static void
cmd_reply_add_status(struct reply *out, enum core_status st)
{
    if (st == CORE_OK)
        cmd_reply_ok(out);
    else if (st == CORE_DUPLICATE)
        cmd_client_error(out, "Duplicate job");
    else if (st == CORE_BAD_PREREQ)
        cmd_client_error(out, "Unknown prerequisite");
    else
        cmd_reply_nomem(out);
}

/* Validate what add, schedule and run share: <id> <name> <ttr> first. */
static const char *
cmd_job_head(const struct request *r, struct job_spec *s)
{
    if (!cmd_arg_id(&r->args[0], s->id))
        return "Invalid ID";
    if (!cmd_arg_name(&r->args[1]))
        return "Invalid Name";
    if (!cmd_arg_ttr(&r->args[2], &s->ttr))
        return "Invalid TTR";
    s->name = r->args[1];
    s->payload = r->block;
    s->payload_len = r->block_len;
    return NULL;
}

static int
cmd_str_cmp(const void *a, const void *b)
{
    const struct wq_str *x = a, *y = b;
    int d = memcmp(x->p, y->p, WQ_MIN(x->n, y->n));
    return d != 0 ? d : (x->n > y->n) - (x->n < y->n);
}

/* The hidden queue name of s's name with -worker=A,B: "<name>" SEP and
 * the distinct workers sorted, comma-separated (queue.h), into buf (256
 * bytes); false if the list is not one or the whole is too long. */
static bool
cmd_target_name(const struct wq_str *flag, struct job_spec *s, char *buf)
{
    struct wq_str key, value, names[WQ_MAX_NAME], one;
    size_t n = 0;
    proto_flag_split(flag, &key, &value);
    const char *p = value.p;
    while (util_list_next(&p, value.p + value.n, &one)) {
        if (n == WQ_ARRAY_LEN(names) || !workers_valid_id(one.p, one.n))
            return false;
        names[n++] = one;
    }
    qsort(names, n, sizeof *names, cmd_str_cmp);
    size_t at = s->name.n;
    memcpy(buf, s->name.p, at);
    buf[at++] = QUEUE_TARGET_SEP;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmd_str_cmp(&names[i - 1], &names[i]) == 0)
            continue; /* named twice */
        if (at + names[i].n + 1 > WQ_MAX_NAME)
            return false;
        if (buf[at - 1] != QUEUE_TARGET_SEP)
            buf[at++] = ',';
        memcpy(buf + at, names[i].p, names[i].n);
        at += names[i].n;
    }
    s->name = (struct wq_str){buf, at};
    return true;
}

/* Validate the flags (last, as they come) and put them in s; *idempotent
 * gets -idempotent, after the ids of -after and target the name with
 * -worker's targets (NULL: not taken). */
static const char *
cmd_job_flags_into(const struct request *r, struct job_spec *s, bool *idempotent,
                   uint8_t (*after)[JOBID_LEN], char *target)
{
    int64_t flags[CMD_FLAG_COUNT] = {0};
    const char *err = cmd_parse_flags(r, flags);
    s->priority = (int32_t)flags[CMD_FLAG_PRIORITY];
    s->max_attempts = (uint8_t)flags[CMD_FLAG_MAX_ATTEMPTS];
    s->max_fails = (uint8_t)flags[CMD_FLAG_MAX_FAILS];
    s->dead = flags[CMD_FLAG_DEAD] == 1;
    if (err == NULL && flags[CMD_FLAG_BACKOFF] > 0) {
        struct wq_str key, value;
        proto_flag_split(&r->flags[flags[CMD_FLAG_BACKOFF] - 1], &key, &value);
        s->backoff = (uint8_t)cmd_backoff_policy(&value);
    }
    if (idempotent != NULL)
        *idempotent = flags[CMD_FLAG_IDEMPOTENT] == 1;
    if (err == NULL && flags[CMD_FLAG_AFTER] > 0) {
        struct wq_str key, value;
        proto_flag_split(&r->flags[flags[CMD_FLAG_AFTER] - 1], &key, &value);
        int n = cmd_after_ids(&value, after);
        if (n < 0)
            return "Invalid After";
        s->after = (const uint8_t(*)[JOBID_LEN])after;
        s->nafter = (size_t)n;
    }
    if (err == NULL && flags[CMD_FLAG_WORKER] > 0 &&
        !cmd_target_name(&r->flags[flags[CMD_FLAG_WORKER] - 1], s, target))
        return "Invalid Worker";
    if (err == NULL && flags[CMD_FLAG_TARGET] > 0) {
        /* -target=all: a copy for each worker; alone, without -after */
        struct wq_str key, value;
        proto_flag_split(&r->flags[flags[CMD_FLAG_TARGET] - 1], &key, &value);
        if (value.n != 3 || memcmp(value.p, "all", 3) != 0 || flags[CMD_FLAG_WORKER] > 0 ||
            flags[CMD_FLAG_AFTER] > 0)
            return "Invalid Target";
        s->broadcast = true;
    }
    return err;
}

/* Answer an add or schedule: with -idempotent=1, a duplicate of the same
 * job is a success. */
static void
cmd_reply_added(struct cmd_ctx *ctx, struct reply *out, enum core_status st,
                const struct job_spec *s, bool idempotent)
{
    if (st == CORE_DUPLICATE && idempotent) {
        const struct job *j = core_find(ctx->core, s->id);
        if (j != NULL && core_same_job(ctx->core, j, s))
            st = CORE_OK;
    }
    cmd_reply_add_status(out, st);
}

void
cmd_add(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    struct job_spec s = {0};
    bool idempotent = false;
    const char *err = cmd_job_head(r, &s);
    if (err == NULL && !cmd_arg_ttl(&r->args[3], &s.ttl))
        err = "Invalid TTL";
    uint8_t after[CORE_MAX_AFTER][JOBID_LEN];
    char target[WQ_MAX_NAME + 1];
    if (err == NULL)
        err = cmd_job_flags_into(r, &s, &idempotent, after, target);
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    cmd_reply_added(ctx, out, core_add(ctx->core, &s, *ctx->now_ms), &s, idempotent);
}

/* "<id> <1|0> <len>\r\n<result>\r\n": the result record of done job j;
 * head gets "+OK <n>\r\n" first when n > 0. */
static void
cmd_reply_result_record(struct reply *out, const struct core *core, const struct job *j, size_t n)
{
    char id[JOBID_TEXT_LEN + 1];
    char head[96];
    uint32_t len;
    char *result = core_job_result(core, j, &len);
    jobid_format(j->id, id);
    int h = n > 0 ? snprintf(head, sizeof head, "+OK %zu\r\n", n) : 0;
    h += snprintf(head + h, sizeof head - (size_t)h, "%s %d %u\r\n", id,
                  j->state == JOB_COMPLETED ? 1 : 0, len);
    cmd_reply_block(out, head, (size_t)h, result, len);
}

/* "+OK 1\r\n<id> <1|0> <len>\r\n<result>\r\n" for a job that is done;
 * for a broadcast's original, "+OK <n>" and the record of each copy that
 * is still there (ours). */
static void
cmd_reply_result(struct reply *out, const struct core *core, const struct job *j)
{
    size_t n;
    const uint8_t(*copies)[JOBID_LEN] = core_job_copies(core, j, &n);
    if (!core_job_is_broadcast(core, j)) {
        cmd_reply_result_record(out, core, j, 1);
        return;
    }
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        const struct job *c = core_find(core, copies[i]);
        have += c != NULL && job_is_done(c);
    }
    char head[32];
    int h = snprintf(head, sizeof head, "+OK %zu\r\n", have);
    reply_bytes(out, head, (size_t)h);
    for (size_t i = 0; i < n; i++) {
        const struct job *c = core_find(core, copies[i]);
        if (c != NULL && job_is_done(c))
            cmd_reply_result_record(out, core, c, 0);
    }
}

/* waiter_done_fn of a parked result. */
static void
cmd_result_done(void *owner, enum waiter_outcome how, const struct core *core, struct job *j)
{
    struct reply *out = owner;
    if (how == WAITER_GOT)
        cmd_reply_result(out, core, j);
    else if (how == WAITER_GONE)
        cmd_reply_not_found(out);
    else
        cmd_reply_timeout(out);
    reply_wake(out);
}

void
cmd_result(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    uint64_t wait;
    if (!cmd_arg_id(&r->args[0], id)) {
        cmd_client_error(out, "Invalid ID");
        return;
    }
    if (!cmd_arg_wait(&r->args[1], &wait)) {
        cmd_client_error(out, "Invalid wait timeout");
        return;
    }
    struct job *j;
    struct waiter *w;
    switch (core_result(ctx->core, id, wait, *ctx->now_ms, cmd_result_done, out, &j, &w)) {
    case CORE_OK:
        cmd_reply_result(out, ctx->core, j);
        break;
    case CORE_PARKED:
        reply_park(out, w);
        break;
    case CORE_TIMEOUT:
        cmd_reply_timeout(out);
        break;
    default:
        cmd_reply_not_found(out);
        break;
    }
}

/* The id of a command that changes one job (its first argument): false
 * after answering a bad id, or the read-only error. */
static bool
cmd_job_change(struct cmd_ctx *ctx, struct reply *out, const struct request *r,
               uint8_t id[JOBID_LEN])
{
    if (!cmd_arg_id(&r->args[0], id)) {
        cmd_client_error(out, "Invalid ID");
        return false;
    }
    return !cmd_refuse_readonly(ctx, out);
}

void
cmd_delete(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_job_change(ctx, out, r, id))
        return;
    if (core_delete(ctx->core, id) == CORE_OK)
        cmd_reply_ok(out);
    else
        cmd_reply_not_found(out);
}

void
cmd_revive(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_job_change(ctx, out, r, id))
        return;
    enum core_status st = core_revive(ctx->core, id, *ctx->now_ms);
    if (st == CORE_OK)
        cmd_reply_ok(out);
    else if (st == CORE_NOT_DEAD)
        cmd_client_error(out, "Job not dead");
    else
        cmd_reply_not_found(out);
}

/* The job of ids[i] if a fan-in's reply carries its record: it has its
 * result, and its id is not listed earlier. */
static const struct job *
cmd_fanin_record(const struct core *core, const uint8_t (*ids)[JOBID_LEN], size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (memcmp(ids[k], ids[i], JOBID_LEN) == 0)
            return NULL;
    const struct job *j = core_find(core, ids[i]);
    return j != NULL && job_is_done(j) ? j : NULL;
}

/* The reply to a fan-in: "+OK <n>" and a result record for each listed
 * job that has its result (in the order listed, once each), or -TIMEOUT
 * when none has. */
static void
cmd_reply_fanin(struct reply *out, const struct core *core, const uint8_t (*ids)[JOBID_LEN],
                size_t n)
{
    size_t have = 0;
    for (size_t i = 0; i < n; i++)
        have += cmd_fanin_record(core, ids, i) != NULL;
    if (have == 0) {
        cmd_reply_timeout(out);
        return;
    }
    char head[96];
    int h = snprintf(head, sizeof head, "+OK %zu\r\n", have);
    reply_bytes(out, head, (size_t)h);
    for (size_t i = 0; i < n; i++) {
        const struct job *j = cmd_fanin_record(core, ids, i);
        if (j != NULL)
            cmd_reply_result_record(out, core, j, 0);
    }
}

/* wait_all_fn of a parked fan-in. */
static void
cmd_fanin_done(void *owner, enum waiter_outcome how, const struct core *core,
               const uint8_t (*ids)[JOBID_LEN], size_t n)
{
    struct reply *out = owner;
    cmd_reply_fanin(out, core, ids, n);
    reply_wake(out);
}

/* wait <wait-timeout> <id>... (ours): the results of several jobs in one
 * reply, once all have one or the time is up. */
void
cmd_wait(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint64_t wait;
    if (!cmd_arg_wait(&r->args[0], &wait)) {
        cmd_client_error(out, "Invalid wait timeout");
        return;
    }
    size_t n = r->nargs - 1;
    if (n > WQ_MAX_WAIT_IDS) {
        cmd_client_error(out, "Too many IDs");
        return;
    }
    uint8_t(*ids)[JOBID_LEN] = wq_malloc(n * JOBID_LEN);
    for (size_t i = 0; i < n; i++) {
        if (!cmd_arg_id(&r->args[1 + i], ids[i])) {
            cmd_client_error(out, "Invalid ID");
            wq_free(ids);
            return;
        }
    }
    struct waiter *w;
    switch (core_wait_all(ctx->core, (const uint8_t(*)[JOBID_LEN])ids, n, wait, *ctx->now_ms,
                          cmd_fanin_done, out, &w)) {
    case CORE_PARKED:
        reply_park(out, w);
        break;
    case CORE_NOT_FOUND:
        cmd_reply_not_found(out);
        break;
    default: /* all have their result, or a wait of 0 */
        cmd_reply_fanin(out, ctx->core, (const uint8_t(*)[JOBID_LEN])ids, n);
        break;
    }
    wq_free(ids);
}

/* cancel <id> (ours): stop a job that has no result yet. */
void
cmd_cancel(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_job_change(ctx, out, r, id))
        return;
    switch (core_cancel_job(ctx->core, id, *ctx->now_ms)) {
    case CORE_OK:
        cmd_reply_ok(out);
        break;
    case CORE_DUP_RESULT:
        cmd_client_error(out, "Job finished");
        break;
    default:
        cmd_reply_not_found(out);
        break;
    }
}

void
cmd_schedule(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    struct job_spec s = {0};
    bool idempotent = false;
    const char *err = cmd_job_head(r, &s);
    if (err == NULL && !cmd_arg_ttl(&r->args[3], &s.ttl))
        err = "Invalid TTL";
    if (err == NULL && util_parse_time_ns(r->args[4].p, r->args[4].n, &s.time_ms, &s.time_ns) != 0)
        err = "Invalid Time";
    uint8_t after[CORE_MAX_AFTER][JOBID_LEN];
    char target[WQ_MAX_NAME + 1];
    if (err == NULL)
        err = cmd_job_flags_into(r, &s, &idempotent, after, target);
    /* A job whose life would be over before it starts is refused. */
    if (err == NULL && core_expiry(s.time_ms, s.ttl) <= *ctx->now_ms)
        err = "Invalid Time";
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    s.timed = true;
    cmd_reply_added(ctx, out, core_add(ctx->core, &s, *ctx->now_ms), &s, idempotent);
}

void
cmd_run(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    struct job_spec s = {0};
    uint64_t wait = 0;
    const char *err = cmd_job_head(r, &s);
    if (err == NULL && !cmd_arg_wait(&r->args[3], &wait))
        err = "Invalid wait timeout";
    if (err == NULL)
        err = cmd_job_flags_into(r, &s, NULL, NULL, NULL);
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    struct waiter *w;
    enum core_status st = core_run(ctx->core, &s, wait, *ctx->now_ms, cmd_result_done, out, &w);
    if (st == CORE_PARKED)
        reply_park(out, w);
    else if (st == CORE_TIMEOUT)
        cmd_reply_timeout(out);
    else
        cmd_reply_add_status(out, st);
}
