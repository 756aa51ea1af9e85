/* cmd_job.c - the client commands: add, result, delete. */
#include "wq.h"
#include "cmd.h"

#include <stdio.h>

#include "conn.h"
#include "core.h"

void
cmd_add(struct cmd_ctx *ctx, struct conn *c, const struct request *r)
{
    struct job_spec s = {0};
    int64_t flags[CMD_FLAG_COUNT] = {0, 0, 0};
    const char *err = NULL;

    if (!cmd_arg_id(&r->args[0], s.id))
        err = "Invalid ID";
    else if (!cmd_arg_name(&r->args[1]))
        err = "Invalid Name";
    else if (!cmd_arg_ttr(&r->args[2], &s.ttr))
        err = "Invalid TTR";
    else if (!cmd_arg_ttl(&r->args[3], &s.ttl))
        err = "Invalid TTL";
    else
        err = cmd_parse_flags(r, flags);
    if (err != NULL) {
        conn_client_error(c, err);
        return;
    }
    s.name = r->args[1];
    s.priority = (int32_t)flags[CMD_FLAG_PRIORITY];
    s.max_attempts = (uint8_t)flags[CMD_FLAG_MAX_ATTEMPTS];
    s.max_fails = (uint8_t)flags[CMD_FLAG_MAX_FAILS];
    s.payload = r->block;
    s.payload_len = r->block_len;

    switch (core_add(ctx->core, &s, ctx->now_ms)) {
    case CORE_OK:
        cmd_reply_ok(c);
        break;
    case CORE_DUPLICATE:
        conn_client_error(c, "Duplicate job");
        break;
    default:
        cmd_reply_nomem(c);
        break;
    }
}

/* "+OK 1\r\n<id> <1|0> <len>\r\n<result>\r\n" for a job that is done. */
static void
cmd_reply_result(struct conn *c, const struct job *j)
{
    char id[JOBID_TEXT_LEN + 1];
    char head[96];
    jobid_format(j->id, id);
    int n = snprintf(head, sizeof head, "+OK 1\r\n%s %d %u\r\n", id,
                     j->state == JOB_COMPLETED ? 1 : 0, j->result_len);
    conn_reply(c, head, (size_t)n);
    conn_reply(c, j->result, j->result_len);
    conn_reply(c, "\r\n", 2);
}

/* waiter_done_fn of a parked result. */
static void
cmd_result_done(void *owner, enum waiter_outcome how, struct job *j)
{
    struct conn *c = owner;
    if (how == WAITER_GOT)
        cmd_reply_result(c, j);
    else if (how == WAITER_GONE)
        cmd_reply_not_found(c);
    else
        cmd_reply_timeout(c);
    conn_wake(c);
}

void
cmd_result(struct cmd_ctx *ctx, struct conn *c, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    uint64_t wait;
    if (!cmd_arg_id(&r->args[0], id)) {
        conn_client_error(c, "Invalid ID");
        return;
    }
    if (!cmd_arg_wait(&r->args[1], &wait)) {
        conn_client_error(c, "Invalid wait timeout");
        return;
    }
    struct job *j;
    struct waiter *w;
    switch (core_result(ctx->core, id, wait, ctx->now_ms, cmd_result_done, c, &j, &w)) {
    case CORE_OK:
        cmd_reply_result(c, j);
        break;
    case CORE_PARKED:
        conn_park(c, w);
        break;
    case CORE_TIMEOUT:
        cmd_reply_timeout(c);
        break;
    default:
        cmd_reply_not_found(c);
        break;
    }
}

void
cmd_delete(struct cmd_ctx *ctx, struct conn *c, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_arg_id(&r->args[0], id)) {
        conn_client_error(c, "Invalid ID");
        return;
    }
    if (core_delete(ctx->core, id) == CORE_OK)
        cmd_reply_ok(c);
    else
        cmd_reply_not_found(c);
}
