/* cmd.c - the Workq command table and dispatch, the protocol module the
 * connection layer drives (cmd_protocol), argument rules, common replies. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <stdio.h>
#include <string.h>

#include "net/conn.h"
#include "engine/core.h"
#include "engine/job.h"
#include "lib/jobid.h"
#include "net/reply.h"
#include "workq/cmd_stats.h"
#include "lib/util.h"
#include "engine/workers.h"

int
cmd_after_ids(const struct wq_str *v, uint8_t (*after)[JOBID_LEN])
{
    int n = 0;
    const char *p = v->p;
    struct wq_str one;
    while (util_list_next(&p, v->p + v->n, &one)) {
        if (n == CORE_MAX_AFTER || !cmd_arg_id(&one, after[n]))
            return -1;
        n++;
    }
    return n;
}

/* -after=ID[,ID...]: 1 to CORE_MAX_AFTER ids. */
static bool
cmd_check_after(const struct wq_str *v)
{
    uint8_t ids[CORE_MAX_AFTER][JOBID_LEN];
    return cmd_after_ids(v, ids) > 0;
}

/* -worker=NAME[,NAME...]: names as hello takes them. */
static bool
cmd_check_workers(const struct wq_str *v)
{
    const char *p = v->p;
    struct wq_str one;
    while (util_list_next(&p, v->p + v->n, &one))
        if (!workers_valid_id(one.p, one.n))
            return false;
    return true;
}

/* -backoff=none|faktory: enum core_backoff by name, -1 if none is. */
int
cmd_backoff_policy(const struct wq_str *v)
{
    if (v->n == 4 && memcmp(v->p, "none", 4) == 0)
        return CORE_BACKOFF_NONE;
    if (v->n == 7 && memcmp(v->p, "faktory", 7) == 0)
        return CORE_BACKOFF_FAKTORY;
    return -1;
}

static bool
cmd_check_backoff(const struct wq_str *v)
{
    return cmd_backoff_policy(v) >= 0;
}

/* -target=all. */
static bool
cmd_check_target(const struct wq_str *v)
{
    return v->n == 3 && memcmp(v->p, "all", 3) == 0;
}

const struct cmd_flag cmd_job_flags[] = {
    {"priority", "Invalid Priority", INT32_MIN, INT32_MAX, false, NULL},
    {"max-attempts", "Invalid Max Attempts", 0, WQ_MAX_ATTEMPTS, false, NULL},
    {"max-fails", "Invalid Max Fails", 0, WQ_MAX_FAILS, false, NULL},
    {"idempotent", "Invalid Idempotent", 0, 1, false, NULL},
    {"after", "Invalid After", 0, 0, true, cmd_check_after},
    {"worker", "Invalid Worker", 0, 0, true, cmd_check_workers},
    {"target", "Invalid Target", 0, 0, true, cmd_check_target},
    {"backoff", "Invalid Backoff", 0, 0, true, cmd_check_backoff},
    {"dead", "Invalid Dead", 0, 1, false, NULL},
    {NULL, NULL, 0, 0, false, NULL},
};

/* lease -fencing=1: the reply carries the attempt (our extension). */
const struct cmd_flag cmd_lease_flags[] = {
    {"fencing", "Invalid Fencing", 0, 1, false, NULL},
    {NULL, NULL, 0, 0, false, NULL},
};

/* complete, fail, touch -attempt=N: only the lease of attempt N (ours). */
const struct cmd_flag cmd_attempt_flags[] = {
    {"attempt", "Invalid Attempt", 1, JOB_ATTEMPTS_MAX, false, NULL},
    {NULL, NULL, 0, 0, false, NULL},
};

/* hello -labels=a,b (ours). */
const struct cmd_flag cmd_hello_flags[] = {
    {"labels", "Invalid Labels", 0, 0, true, NULL},
    {NULL, NULL, 0, 0, false, NULL},
};

/* auth: a password that looks like a flag is still the password. */
static const struct cmd_flag cmd_auth_flags[] = {
    {NULL, NULL, 0, 0, false, NULL},
};

const struct cmd_flag cmd_run_flags[] = {
    {"priority", "Invalid Priority", INT32_MIN, INT32_MAX, false, NULL},
    {NULL, NULL, 0, 0, false, NULL},
};

static const struct cmd_spec cmd_table[] = {
    /* name, min args, max args, data block?, size error; flags; handler;
     * usage; before auth? */
    {{"add", 5, 5, true, "Invalid payload size"},
     cmd_job_flags,
     cmd_add,
     "<id> <name> <ttr> <ttl> <size> [-priority=N -max-attempts=N -max-fails=N -idempotent=1 "
     "-after=ID,... -worker=W,... -target=all -backoff=none|faktory -dead=1] + data",
     false},
    {{"schedule", 6, 6, true, "Invalid payload size"},
     cmd_job_flags,
     cmd_schedule,
     "<id> <name> <ttr> <ttl> <time> <size> [flags as add] + data",
     false},
    {{"run", 5, 5, true, "Invalid payload size"},
     cmd_run_flags,
     cmd_run,
     "<id> <name> <ttr> <wait-timeout> <size> [-priority=N] + data",
     false},
    {{"result", 2, 2, false, NULL}, NULL, cmd_result, "<id> <wait-timeout>", false},
    {{"delete", 1, 1, false, NULL}, NULL, cmd_delete, "<id>", false},
    {{"revive", 1, 1, false, NULL}, NULL, cmd_revive, "<id>", false},
    {{"lease", 2, PROTO_ANY_ARGS, false, NULL},
     cmd_lease_flags,
     cmd_lease,
     "<name>... <wait-timeout> [-fencing=1]",
     false},
    {{"complete", 2, 2, true, "Invalid payload size"},
     cmd_attempt_flags,
     cmd_complete,
     "<id> <size> [-attempt=N] + data",
     false},
    {{"fail", 2, 2, true, "Invalid result size"},
     cmd_attempt_flags,
     cmd_fail,
     "<id> <size> [-attempt=N] + data",
     false},
    {{"inspect", 1, PROTO_ANY_ARGS, false, NULL},
     NULL,
     cmd_inspect,
     "server | queues <offset> <limit> | queue <name> | job <id> | jobs <name> <offset> <limit> "
     "| scheduled-jobs <name> <offset> <limit> | dead-jobs <offset> <limit> | workers <offset> "
     "<limit>",
     false},
    {{"worker", 2, 2, false, NULL}, NULL, cmd_worker, "quiet|terminate <wid>", false},
    /* ours: the job model's extensions (doc/protocol.md) */
    {{"touch", 1, 2, false, NULL},
     cmd_attempt_flags,
     cmd_touch,
     "<id> [<ttr>] [-attempt=N]",
     false},
    {{"cancel", 1, 1, false, NULL}, NULL, cmd_cancel, "<id>", false},
    {{"wait", 2, PROTO_ANY_ARGS, false, NULL}, NULL, cmd_wait, "<wait-timeout> <id>...", false},
    {{"hello", 1, 1, false, NULL}, cmd_hello_flags, cmd_hello, "<wid> [-labels=a,b]", false},
    /* any count: auth's own handler answers a wrong one, even before the
       connection has authenticated (cmd_proto_handle) */
    {{"auth", 0, PROTO_ANY_ARGS, false, NULL}, cmd_auth_flags, cmd_auth, "<password>", true},
    /* ours: for people at a terminal */
    {{"help", 0, 0, false, NULL}, NULL, cmd_help, "", true},
    {{"quit", 0, 0, false, NULL}, NULL, cmd_quit, "", true},
};

_Static_assert(WQ_ARRAY_LEN(cmd_table) + 1 <= STATS_MAX_COMMANDS, "raise STATS_MAX_COMMANDS");

/* The row of "unknown" in the commands' counts. */
#define CMD_UNKNOWN WQ_ARRAY_LEN(cmd_table)

size_t
cmd_count(void)
{
    return WQ_ARRAY_LEN(cmd_table) + 1;
}

const struct cmd_spec *
cmd_spec_at(size_t i)
{
    return i < WQ_ARRAY_LEN(cmd_table) ? &cmd_table[i] : NULL;
}

const char *
cmd_name(size_t i)
{
    return i < WQ_ARRAY_LEN(cmd_table) ? cmd_table[i].syntax.name : "unknown";
}

const struct proto_syntax *
cmd_lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(cmd_table); i++) {
        const char *n = cmd_table[i].syntax.name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return &cmd_table[i].syntax;
    }
    return NULL;
}

void
cmd_dispatch(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    const struct cmd_spec *spec = WQ_CONTAINER_OF(r->cmd, struct cmd_spec, syntax);
    if (spec->flags == NULL && r->nflags > 0) {
        cmd_client_error(out, "Invalid command args");
        return;
    }
    spec->handler(ctx, out, r);
}

void
cmd_client_error(struct reply *out, const char *msg)
{
    reply_bytes(out, "-CLIENT-ERROR ", 14);
    reply_str(out, msg);
    reply_bytes(out, "\r\n", 2);
}

/* ---- the protocol module ---- */

/* A connection's state: the parser's, the worker it named (hello), and
 * whether it gave the password (auth), and what counts the outcome of its
 * command: handlers answer through tap, which passes everything on to the
 * connection's reply (out) and counts the command (cmd) by the first bytes
 * of its answer, however late. */
struct cmd_conn {
    struct proto proto; /* first: proto_parse takes the state as its own */
    struct worker *worker;
    bool authed;
    struct reply tap;
    struct reply *out;
    struct cmd_stats *stats;
    uint32_t cmd;  /* row in stats->commands */
    bool answered; /* the command's outcome is counted */
};

/* The first bytes of the answer: count the outcome, then let the rest of
 * this command's answer go straight to the connection (the tap becomes a
 * copy of its reply until the next command). */
static void
cmd_tap_bytes(void *to, const void *data, size_t len)
{
    struct cmd_conn *cc = to;
    cc->answered = true;
    cc->stats->commands[cc->cmd][stats_outcome_of(data, len)]++;
    cc->tap = *cc->out;
    reply_bytes(cc->out, data, len);
}

static void
cmd_tap_payload(void *to, char *p, size_t len)
{
    reply_payload(((struct cmd_conn *)to)->out, p, len);
}

static void
cmd_tap_park(void *to, void *waiting)
{
    reply_park(((struct cmd_conn *)to)->out, waiting);
}

static void
cmd_tap_wake(void *to)
{
    reply_wake(((struct cmd_conn *)to)->out);
}

static void
cmd_tap_close(void *to)
{
    reply_close(((struct cmd_conn *)to)->out);
}

static const char *
cmd_tap_peer(void *to)
{
    return reply_peer(((struct cmd_conn *)to)->out);
}

static void
cmd_tap_pause(void *to, uint64_t ms)
{
    reply_pause(((struct cmd_conn *)to)->out, ms);
}

static const struct reply_ops cmd_tap_ops = {
    cmd_tap_bytes, cmd_tap_payload, cmd_tap_park,  cmd_tap_wake,
    cmd_tap_close, cmd_tap_peer,    cmd_tap_pause,
};

/* proto_fits_fn: a data block is buffered only while it fits in
 * -max-memory (arg: the core). */
static bool
cmd_block_fits(void *arg, uint64_t len)
{
    return !core_over_limit(arg, len);
}

static void
cmd_proto_open(void *ctx, void *state, struct reply *out)
{
    const struct cmd_ctx *c = ctx;
    struct cmd_conn *cc = state;
    proto_init(&cc->proto, cmd_lookup, c->max_line, c->max_payload); /* no greeting */
    cc->proto.fits = cmd_block_fits;
    cc->proto.fits_arg = c->core;
    cc->worker = NULL;
    cc->out = out;
    cc->stats = c->stats;
    cc->tap = (struct reply){&cmd_tap_ops, cc};
    cc->answered = true;
    cc->authed = false;
}

/* Until a connection gives the password, every request but auth (and
 * every request that does not parse: a data block is read and dropped
 * first, as for any error) gets this, and changes nothing. */
static bool
cmd_needs_auth(const struct cmd_ctx *ctx, const struct cmd_conn *cc, const struct request *r)
{
    return ctx->auth != NULL && !cc->authed &&
           (r == NULL || !WQ_CONTAINER_OF(r->cmd, struct cmd_spec, syntax)->before_auth);
}

/* Parse the first request of in[0..len) and run it. */
static size_t
cmd_proto_handle(void *ctx, void *state, struct reply *out, const char *in, size_t len,
                 size_t *need)
{
    struct request req;
    const char *err = NULL;
    size_t consumed;
    struct cmd_conn *cc = state;
    /* dropping an oversized block: the error of cc->cmd is to come */
    bool skipping = cc->proto.state == PROTO_SKIP_BLOCK || cc->proto.state == PROTO_SKIP_END;
    req.cmd = NULL;
    enum proto_result rc = proto_parse(&cc->proto, in, len, &req, &err, &consumed, need);
    if (cc->stats != NULL && rc != PROTO_NEED) {
        if (!skipping)
            cc->cmd =
                req.cmd != NULL
                    ? (uint32_t)(WQ_CONTAINER_OF(req.cmd, struct cmd_spec, syntax) - cmd_table)
                    : (uint32_t)CMD_UNKNOWN;
        cc->answered = false;
        cc->tap = (struct reply){&cmd_tap_ops, cc};
        out = &cc->tap;
    } else if (cc->stats != NULL && req.cmd != NULL) {
        cc->cmd = (uint32_t)(WQ_CONTAINER_OF(req.cmd, struct cmd_spec, syntax) - cmd_table);
    }
    switch (rc) {
    case PROTO_REQUEST:
        *need = 0;
        if (cmd_needs_auth(ctx, cc, &req)) {
            cmd_client_error(out, "Authentication required");
            break;
        }
        ((struct cmd_ctx *)ctx)->worker = &cc->worker;
        ((struct cmd_ctx *)ctx)->authed = &cc->authed;
        if (cc->worker != NULL)
            snprintf(cc->worker->last_command, sizeof cc->worker->last_command, "%s",
                     req.cmd->name);
        cmd_dispatch(ctx, out, &req);
        break;
    case PROTO_ERROR:
        cmd_client_error(out, cmd_needs_auth(ctx, cc, NULL) ? "Authentication required" : err);
        *need = 0;
        break;
    case PROTO_SERVER_ERROR: /* a block dropped for lack of memory */
        if (cmd_needs_auth(ctx, cc, NULL))
            cmd_client_error(out, "Authentication required");
        else
            cmd_reply_nomem(out);
        *need = 0;
        break;
    case PROTO_FATAL: /* framing is lost */
        cmd_client_error(out, err);
        reply_close(out);
        *need = 0;
        break;
    case PROTO_NEED:
        break;
    }
    return consumed;
}

static void
cmd_proto_cancel(void *ctx, void *waiting)
{
    struct cmd_ctx *c = ctx;
    core_cancel(c->core, waiting);
}

static void
cmd_proto_close(void *ctx, void *state)
{
    struct cmd_ctx *c = ctx;
    struct cmd_conn *cc = state;
    if (!cc->answered) /* it waited, and its client left */
        cc->stats->commands[cc->cmd][STATS_ABANDONED]++;
    proto_clear(&cc->proto);
    if (cc->worker != NULL)
        workers_detach(c->core->workers, cc->worker);
    cc->worker = NULL;
}

const struct conn_proto cmd_protocol = {
    .name = "workq",
    .state_size = sizeof(struct cmd_conn),
    .open = cmd_proto_open,
    .handle = cmd_proto_handle,
    .cancel = cmd_proto_cancel,
    .close = cmd_proto_close,
};

const char *
cmd_parse_flags(const struct request *r, int64_t *values)
{
    const struct cmd_spec *spec = WQ_CONTAINER_OF(r->cmd, struct cmd_spec, syntax);
    uint32_t seen = 0;
    for (size_t i = 0; i < r->nflags; i++) {
        struct wq_str key, value;
        proto_flag_split(&r->flags[i], &key, &value);
        if (key.n == 0 || value.n == 0)
            return "Invalid command flags";
        size_t f = 0;
        while (spec->flags[f].key != NULL && !(strlen(spec->flags[f].key) == key.n &&
                                               memcmp(spec->flags[f].key, key.p, key.n) == 0))
            f++;
        if (spec->flags[f].key == NULL || (seen & (1u << f)))
            return "Invalid command flags";
        seen |= 1u << f;
        const struct cmd_flag *def = &spec->flags[f];
        int rc;
        if (def->text) {
            if (def->check != NULL && !def->check(&value))
                return def->error;
            values[f] = (int64_t)i + 1;
            continue;
        }
        if (def->min < 0) {
            rc = util_parse_i64(value.p, value.n, def->min, def->max, &values[f]);
        } else {
            uint64_t v = 0;
            rc = util_parse_u64(value.p, value.n, (uint64_t)def->max, &v);
            if (rc == 0 && v < (uint64_t)def->min)
                rc = -1;
            if (rc == 0)
                values[f] = (int64_t)v;
        }
        if (rc != 0)
            return def->error;
    }
    return NULL;
}

const char *
cmd_flag_error_compat(const char *err)
{
    return strcmp(err, "Invalid command flags") == 0 ? "Invalid command args" : err;
}

bool
cmd_arg_id(const struct wq_str *s, uint8_t id[16])
{
    return jobid_parse(s->p, s->n, id) == 0;
}

bool
cmd_arg_name(const struct wq_str *s)
{
    if (s->n == 0 || s->n > WQ_MAX_NAME)
        return false;
    for (size_t i = 0; i < s->n; i++) {
        unsigned char ch = (unsigned char)s->p[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool
cmd_arg_ttr(const struct wq_str *s, uint32_t *ttr)
{
    uint64_t v;
    if (util_parse_u64(s->p, s->n, WQ_MAX_TTR_MS, &v) != 0 || v == 0)
        return false;
    *ttr = (uint32_t)v;
    return true;
}

bool
cmd_arg_ttl(const struct wq_str *s, uint64_t *ttl)
{
    return util_parse_u64(s->p, s->n, UINT64_MAX, ttl) == 0 && *ttl > 0;
}

bool
cmd_arg_wait(const struct wq_str *s, uint64_t *wait)
{
    return util_parse_u64(s->p, s->n, WQ_MAX_WAIT_MS, wait) == 0;
}

void
cmd_reply_ok(struct reply *out)
{
    reply_bytes(out, "+OK\r\n", 5);
}

void
cmd_reply_not_found(struct reply *out)
{
    reply_bytes(out, "-NOT-FOUND\r\n", 12);
}

void
cmd_reply_timeout(struct reply *out)
{
    reply_bytes(out, "-TIMEOUT\r\n", 10);
}

void
cmd_reply_nomem(struct reply *out)
{
    static const char msg[] = "-SERVER-ERROR Out of memory\r\n";
    reply_bytes(out, msg, sizeof msg - 1);
}

void
cmd_reply_block(struct reply *out, const char *head, size_t head_len, char *data, size_t len)
{
    reply_bytes(out, head, head_len);
    reply_payload(out, data, len);
    reply_bytes(out, "\r\n", 2);
}

bool
cmd_refuse_readonly(const struct cmd_ctx *ctx, struct reply *out)
{
    static const char msg[] = "-SERVER-ERROR Read-only: command log write failed\r\n";
    if (!*ctx->readonly)
        return false;
    reply_bytes(out, msg, sizeof msg - 1);
    return true;
}
