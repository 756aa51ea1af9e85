/* cmd_workers.c - the Workq protocol's command on the worker registry
 * (workers.h), an extension of ours: `worker quiet|terminate <wid>`
 * (doc/protocol.md, "Workers"; `inspect workers` is in cmd_inspect.c). */
#include "wq.h"
#include "cmd.h"

#include <string.h>

#include "core.h"
#include "reply.h"
#include "workers.h"

/* worker quiet <wid> / worker terminate <wid>: ask a worker to stop
 * fetching, or to stop; its next BEAT says so.  Terminate is final: a
 * later quiet leaves it. */
void
cmd_worker(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    const struct wq_str *action = &r->args[0], *wid = &r->args[1];
    enum worker_state want;
    if (action->n == 5 && memcmp(action->p, "quiet", 5) == 0)
        want = WORKER_QUIET;
    else if (action->n == 9 && memcmp(action->p, "terminate", 9) == 0)
        want = WORKER_TERMINATE;
    else {
        cmd_client_error(out, "Invalid worker action");
        return;
    }
    if (!workers_valid_id(wid->p, wid->n)) {
        cmd_client_error(out, "Invalid wid");
        return;
    }
    struct worker *k = workers_find(ctx->core->workers, wid->p, wid->n);
    if (k == NULL) {
        cmd_reply_not_found(out);
        return;
    }
    if (want > k->state)
        k->state = want;
    cmd_reply_ok(out);
}
