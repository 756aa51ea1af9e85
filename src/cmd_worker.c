/* cmd_worker.c - the worker commands: lease, complete, fail. */
#include "wq.h"
#include "cmd.h"

#include <stdio.h>

#include "reply.h"
#include "core.h"

/* "+OK 1\r\n<id> <name> <ttr> <size>\r\n<payload>\r\n" for a leased job. */
static void
cmd_reply_lease(struct reply *out, const struct core *core, const struct job *j)
{
    char id[JOBID_TEXT_LEN + 1];
    char head[WQ_MAX_NAME + 96];
    jobid_format(j->id, id);
    int n = snprintf(head, sizeof head, "+OK 1\r\n%s %s %u %u\r\n", id,
                     core_job_queue(core, j)->name, (unsigned)j->ttr, j->payload_len);
    cmd_reply_block(out, head, (size_t)n, j->payload, j->payload_len);
}

/* waiter_done_fn of a parked lease. */
static void
cmd_lease_done(void *owner, enum waiter_outcome how, const struct core *core, struct job *j)
{
    struct reply *out = owner;
    if (how == WAITER_GOT)
        cmd_reply_lease(out, core, j);
    else
        cmd_reply_timeout(out);
    reply_wake(out);
}

void
cmd_lease(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    size_t nnames = r->nargs - 1;
    uint64_t wait;
    for (size_t i = 0; i < nnames; i++) {
        if (!cmd_arg_name(&r->args[i])) {
            cmd_client_error(out, "Invalid Name");
            return;
        }
    }
    if (!cmd_arg_wait(&r->args[nnames], &wait)) {
        cmd_client_error(out, "Invalid wait timeout");
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    struct job *j;
    struct waiter *w;
    switch (
        core_lease(ctx->core, r->args, nnames, wait, ctx->now_ms, cmd_lease_done, out, &j, &w)) {
    case CORE_OK:
        cmd_reply_lease(out, ctx->core, j);
        break;
    case CORE_PARKED:
        reply_park(out, w);
        break;
    default:
        cmd_reply_timeout(out);
        break;
    }
}

/* complete and fail: the same but for the outcome. */
static void
cmd_finish(struct cmd_ctx *ctx, struct reply *out, const struct request *r, bool success)
{
    uint8_t id[JOBID_LEN];
    if (!cmd_arg_id(&r->args[0], id)) {
        cmd_client_error(out, "Invalid ID");
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    switch (core_finish(ctx->core, id, success, r->block, r->block_len, ctx->now_ms)) {
    case CORE_OK:
        cmd_reply_ok(out);
        break;
    case CORE_NOT_FOUND:
        cmd_reply_not_found(out);
        break;
    case CORE_DUP_RESULT:
        cmd_client_error(out, "Duplicate result");
        break;
    default:
        cmd_reply_nomem(out);
        break;
    }
}

void
cmd_complete(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    cmd_finish(ctx, out, r, true);
}

void
cmd_fail(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    cmd_finish(ctx, out, r, false);
}
