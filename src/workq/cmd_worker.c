/* cmd_worker.c - the worker commands: lease, complete, fail. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdio.h>

#include "net/reply.h"
#include "engine/core.h"

/* "+OK 1\r\n<id> <name> <ttr> <size>\r\n<payload>\r\n" for a leased job;
 * with fencing, "<id> <name> <ttr> <attempt> <size>". */
static void
cmd_reply_lease(struct reply *out, const struct core *core, const struct job *j, bool fencing)
{
    char id[JOBID_TEXT_LEN + 1];
    char head[WQ_MAX_NAME + 96];
    char attempt[16] = "";
    jobid_format(j->id, id);
    if (fencing)
        snprintf(attempt, sizeof attempt, " %u", (unsigned)j->attempts);
    int n = snprintf(head, sizeof head, "+OK 1\r\n%s %s %u%s %u\r\n", id,
                     queue_visible_name(core_job_queue(core, j)), (unsigned)j->ttr, attempt,
                     j->payload_len);
    cmd_reply_block(out, head, (size_t)n, j->payload, j->payload_len);
}

/* waiter_done_fn of a parked lease, plain and with -fencing=1. */
static void
cmd_lease_done_as(void *owner, enum waiter_outcome how, const struct core *core, struct job *j,
                  bool fencing)
{
    struct reply *out = owner;
    if (how == WAITER_GOT)
        cmd_reply_lease(out, core, j, fencing);
    else
        cmd_reply_timeout(out);
    reply_wake(out);
}

static void
cmd_lease_done(void *owner, enum waiter_outcome how, const struct core *core, struct job *j)
{
    cmd_lease_done_as(owner, how, core, j, false);
}

static void
cmd_lease_done_fenced(void *owner, enum waiter_outcome how, const struct core *core, struct job *j)
{
    cmd_lease_done_as(owner, how, core, j, true);
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
    int64_t fencing = 0;
    const char *err = cmd_parse_flags(r, &fencing);
    if (err != NULL) {
        cmd_client_error(out, cmd_flag_error_compat(err));
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    struct job *j;
    struct waiter *w;
    switch (core_lease(ctx->core, r->args, nnames, wait, *ctx->now_ms,
                       ctx->worker != NULL ? *ctx->worker : NULL,
                       fencing ? cmd_lease_done_fenced : cmd_lease_done, out, &j, &w)) {
    case CORE_OK:
        cmd_reply_lease(out, ctx->core, j, fencing);
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
    int64_t attempt = 0;
    const char *err = cmd_parse_flags(r, &attempt);
    if (err != NULL) {
        cmd_client_error(out, cmd_flag_error_compat(err));
        return;
    }
    if (cmd_refuse_readonly(ctx, out))
        return;
    switch (core_finish(ctx->core, id, success, r->block, r->block_len, (uint32_t)attempt,
                        *ctx->now_ms)) {
    case CORE_OK:
        cmd_reply_ok(out);
        break;
    case CORE_NOT_FOUND:
        cmd_reply_not_found(out);
        break;
    case CORE_CANCELLED:
        cmd_client_error(out, "Job cancelled");
        break;
    case CORE_STALE:
        cmd_client_error(out, "Stale attempt");
        break;
    case CORE_DUP_RESULT:
        cmd_client_error(out, "Duplicate result");
        break;
    default:
        cmd_reply_nomem(out);
        break;
    }
}

/* touch <id> [ttr] (ours): restart the running lease's TTR. */
void
cmd_touch(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    uint8_t id[JOBID_LEN];
    uint32_t ttr = 0;
    if (!cmd_arg_id(&r->args[0], id)) {
        cmd_client_error(out, "Invalid ID");
        return;
    }
    if (r->nargs == 2 && !cmd_arg_ttr(&r->args[1], &ttr)) {
        cmd_client_error(out, "Invalid TTR");
        return;
    }
    int64_t attempt = 0;
    const char *err = cmd_parse_flags(r, &attempt);
    if (err != NULL) {
        cmd_client_error(out, err);
        return;
    }
    switch (core_touch(ctx->core, id, ttr, (uint32_t)attempt, *ctx->now_ms)) {
    case CORE_OK:
        cmd_reply_ok(out);
        break;
    case CORE_CANCELLED:
        cmd_client_error(out, "Job cancelled");
        break;
    default: /* not leased, or not in that attempt */
        cmd_reply_not_found(out);
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
