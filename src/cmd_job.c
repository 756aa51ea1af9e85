/* cmd_job.c - the client commands: add, schedule, run, result, delete. */
#include "wq.h"
#include "cmd.h"

#include <stdio.h>

#include "reply.h"
#include "core.h"
#include "util.h"

/* The reply to a job-creating command that did not park. */
static void
cmd_reply_add_status(struct reply *out, enum core_status st)
{
    if (st == CORE_OK)
        cmd_reply_ok(out);
    else if (st == CORE_DUPLICATE)
        cmd_client_error(out, "Duplicate job");
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

/* Validate the flags (last, as they come) and put them in s. */
static const char *
cmd_job_flags_into(const struct request *r, struct job_spec *s)
{
    int64_t flags[CMD_FLAG_COUNT] = {0, 0, 0};
    const char *err = cmd_parse_flags(r, flags);
    s->priority = (int32_t)flags[CMD_FLAG_PRIORITY];
    s->max_attempts = (uint8_t)flags[CMD_FLAG_MAX_ATTEMPTS];
    s->max_fails = (uint8_t)flags[CMD_FLAG_MAX_FAILS];
    return err;
}

void
cmd_add(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    struct job_spec s = {0};
    const char *err = cmd_job_head(r, &s);
    if (err == NULL && !cmd_arg_ttl(&r->args[3], &s.ttl))
        err = "Invalid TTL";
    if (err == NULL)
        err = cmd_job_flags_into(r, &s);
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    cmd_reply_add_status(out, core_add(ctx->core, &s, ctx->now_ms));
}

/* "+OK 1\r\n<id> <1|0> <len>\r\n<result>\r\n" for a job that is done. */
static void
cmd_reply_result(struct reply *out, const struct core *core, const struct job *j)
{
    char id[JOBID_TEXT_LEN + 1];
    char head[96];
    uint32_t len;
    char *result = core_job_result(core, j, &len);
    jobid_format(j->id, id);
    int n = snprintf(head, sizeof head, "+OK 1\r\n%s %d %u\r\n", id,
                     j->state == JOB_COMPLETED ? 1 : 0, len);
    cmd_reply_block(out, head, (size_t)n, result, len);
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
    switch (core_result(ctx->core, id, wait, ctx->now_ms, cmd_result_done, out, &j, &w)) {
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

void
cmd_delete(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_arg_id(&r->args[0], id)) {
        cmd_client_error(out, "Invalid ID");
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    if (core_delete(ctx->core, id) == CORE_OK)
        cmd_reply_ok(out);
    else
        cmd_reply_not_found(out);
}

void
cmd_schedule(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    struct job_spec s = {0};
    const char *err = cmd_job_head(r, &s);
    if (err == NULL && !cmd_arg_ttl(&r->args[3], &s.ttl))
        err = "Invalid TTL";
    if (err == NULL && util_parse_time_ns(r->args[4].p, r->args[4].n, &s.time_ms, &s.time_ns) != 0)
        err = "Invalid Time";
    if (err == NULL)
        err = cmd_job_flags_into(r, &s);
    /* A job whose life would be over before it starts is refused. */
    if (err == NULL && core_expiry(s.time_ms, s.ttl) <= ctx->now_ms)
        err = "Invalid Time";
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    s.timed = true;
    cmd_reply_add_status(out, core_add(ctx->core, &s, ctx->now_ms));
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
        err = cmd_job_flags_into(r, &s);
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    struct waiter *w;
    enum core_status st = core_run(ctx->core, &s, wait, ctx->now_ms, cmd_result_done, out, &w);
    if (st == CORE_PARKED)
        reply_park(out, w);
    else if (st == CORE_TIMEOUT)
        cmd_reply_timeout(out);
    else
        cmd_reply_add_status(out, st);
}
