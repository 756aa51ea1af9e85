/* cmd_workers.c - the Workq protocol's command on the worker registry
 * (workers.h), extensions of ours: `worker quiet|terminate <wid>` and
 * `hello <name>` (doc/protocol.md, "Workers"; `inspect workers` is in
 * cmd_inspect.c). */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/core.h"
#include "lib/util.h"
#include "net/reply.h"
#include "engine/workers.h"

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
    workers_signal(k, want);
    cmd_reply_ok(out);
}

/* The labels of hello's -labels=a,b as a compact JSON array (jansson);
 * NULL when one is empty or not visible ASCII. */
static char *
cmd_hello_labels(const struct wq_str *flag)
{
    struct wq_str key, value;
    proto_flag_split(flag, &key, &value);
    json_t *labels = json_array();
    const char *p = value.p;
    struct wq_str one;
    while (util_list_next(&p, value.p + value.n, &one)) {
        if (!workers_valid_id(one.p, one.n)) {
            json_decref(labels);
            return NULL;
        }
        json_array_append_new(labels, json_stringn(one.p, one.n));
    }
    char *text = json_dumps(labels, JSON_COMPACT);
    json_decref(labels);
    return text;
}

/* hello <name> [-labels=a,b]: the connection belongs to the named worker
 * (ours), in the registry Faktory's workers share. */
void
cmd_hello(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    const struct wq_str *name = &r->args[0];
    if (!workers_valid_id(name->p, name->n)) {
        cmd_client_error(out, "Invalid wid");
        return;
    }
    int64_t flags[1] = {0};
    const char *err = cmd_parse_flags(r, flags);
    char *labels = NULL;
    if (err == NULL && flags[0] > 0 && (labels = cmd_hello_labels(&r->flags[flags[0] - 1])) == NULL)
        err = "Invalid Labels";
    if (err == NULL && *ctx->worker != NULL)
        err = "Worker already named";
    if (err != NULL) {
        cmd_client_error(out, err);
        free(labels);
        return;
    }
    *ctx->worker =
        workers_attach(ctx->core->workers, name->p, name->n, "", 0, labels != NULL ? labels : "[]",
                       WORKER_WORKQ, reply_peer(out), *ctx->now_ms);
    snprintf((*ctx->worker)->last_command, sizeof(*ctx->worker)->last_command, "hello");
    free(labels);
    cmd_reply_ok(out);
}
