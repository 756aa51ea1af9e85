/* cmd.h - the command table and dispatch, and the argument rules shared by
 * the handlers (doc/protocol-reference.md section 2).  Handlers validate left to
 * right, answer the first failure, and change nothing on error. */
#ifndef WQ_CMD_H
#define WQ_CMD_H

#include "lib/wq.h"
#include "workq/proto.h"

struct auth_guard;
struct cmd_auth;
struct conn_proto;
struct core;
struct reply;
struct cmd_stats;
struct worker;

/* What handlers share: the core, the time of the current batch, the
 * server figures that inspect shows, and the framing limits. */
struct cmd_ctx {
    struct core *core;
    const uint64_t *now_ms; /* the server's clock: the current batch's time */
    uint64_t started_ms;
    const uint64_t *clients; /* open connections, every listener */
    const bool *readonly;    /* the log cannot be written: refuse changes */
    bool faktory;            /* a Faktory listener is on (inspect server shows it) */
    bool hero;               /* a Hero listener is on (inspect server shows it) */
    bool norfab;             /* a NORFAB listener is on (inspect server shows it) */
    size_t max_line;         /* proto.h's limits */
    uint64_t max_payload;
    struct worker **worker;        /* the current connection's named worker (hello) */
    struct cmd_auth *auth;         /* -password-file: clients must authenticate; NULL: off */
    struct auth_guard *auth_guard; /* failing addresses (every listener's) */
    bool *authed;                  /* the current connection has authenticated */
    struct cmd_stats *stats;       /* commands by outcome are counted there; NULL: not */
};

/* The Workq protocol as a module of the connection layer (conn.h): its
 * ctx is a struct cmd_ctx, a connection's state a struct proto. */
extern const struct conn_proto cmd_protocol;

typedef void (*cmd_handler_fn)(struct cmd_ctx *ctx, struct reply *out, const struct request *r);

/* One flag a command accepts.  Values are decimal, within [min, max]; a
 * sign is allowed only when min < 0. */
struct cmd_flag {
    const char *key;
    const char *error; /* for a bad value */
    int64_t min, max;
    bool text; /* a text value: its value is the flag's index in the request + 1 */
    bool (*check)(const struct wq_str *value); /* a text value's form */
};

struct cmd_spec {
    struct proto_syntax syntax;   /* first: proto hands it back */
    const struct cmd_flag *flags; /* NULL-key terminated; NULL: takes none */
    cmd_handler_fn handler;
    const char *usage; /* its arguments, as help shows them */
    bool before_auth;  /* allowed before auth (auth, quit, help) */
};

/* The commands as the metrics name them: cmd_count() of them, the last
 * "unknown" (a name not in the table). */
size_t cmd_count(void);
const char *cmd_name(size_t i);

/* proto_lookup_fn over the command table. */
const struct proto_syntax *cmd_lookup(const char *name, size_t len);
/* Run a parsed request. */
void cmd_dispatch(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
/* Answer "-CLIENT-ERROR <msg>\r\n". */
void cmd_client_error(struct reply *out, const char *msg);

/* Parse r's flags against r's command: values[i] gets flag i's value, or
 * keeps its default when absent.  Returns NULL, or the error to answer. */
const char *cmd_parse_flags(const struct request *r, int64_t *values);

/* The error of a flag on a command that took none before our extensions
 * (lease, complete, fail): a flag it does not know is still "Invalid
 * command args"; a bad value of one it knows, its own error. */
const char *cmd_flag_error_compat(const char *err);

/* The ids of a comma-separated list (the value of -after) into after (room
 * for CORE_MAX_AFTER): their number, or -1 if the list is not one. */
int cmd_after_ids(const struct wq_str *v, uint8_t (*after)[16]);

/* The enum core_backoff a -backoff value names, -1 if none. */
int cmd_backoff_policy(const struct wq_str *v);

/* Argument parsers: true when valid. */
bool cmd_arg_id(const struct wq_str *s, uint8_t id[16]);
bool cmd_arg_name(const struct wq_str *s);
bool cmd_arg_ttr(const struct wq_str *s, uint32_t *ttr);
bool cmd_arg_ttl(const struct wq_str *s, uint64_t *ttl);
bool cmd_arg_wait(const struct wq_str *s, uint64_t *wait);

/* Common replies. */
void cmd_reply_ok(struct reply *out);
void cmd_reply_not_found(struct reply *out);
void cmd_reply_timeout(struct reply *out);
void cmd_reply_nomem(struct reply *out);
/* A reply with a data block: head (ending in CRLF), the bytes of a payload
 * or result (payload.h: large ones are sent by reference), CRLF. */
void cmd_reply_block(struct reply *out, const char *head, size_t head_len, char *data, size_t len);
/* In read-only mode, answer the server error and return true. */
bool cmd_refuse_readonly(const struct cmd_ctx *ctx, struct reply *out);

/* The handlers (cmd_job.c, cmd_worker.c, cmd_inspect.c, cmd_workers.c). */
void cmd_add(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_result(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_delete(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_revive(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_lease(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_complete(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_fail(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_schedule(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_run(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_inspect(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_worker(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_touch(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_cancel(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_wait(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_hello(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_auth(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
/* quit: +OK, then the connection closes.  help: the commands and their
 * arguments (cmd_session.c). */
void cmd_quit(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
void cmd_help(struct cmd_ctx *ctx, struct reply *out, const struct request *r);
/* The command table, for help: cmd_count() - 1 entries. */
const struct cmd_spec *cmd_spec_at(size_t i);

/* Passwords (cmd_auth.c).  The password must be one word of printable
 * ASCII (no space or control character), at most this long. */
#define CMD_AUTH_MAX_PASSWORD 1024
bool cmd_auth_valid_password(const char *p);
/* What checks a password (a digest of it). */
struct cmd_auth *cmd_auth_new(const char *password);
/* A new password (SIGHUP re-read the file); failing addresses (auth_guard.h)
 * are remembered still. */
void cmd_auth_set_password(struct cmd_auth *a, const char *password);
void cmd_auth_free(struct cmd_auth *a);

/* Flag tables: add and schedule take all four (in this order), run only
 * the priority; lease takes -fencing, complete, fail and touch -attempt. */
extern const struct cmd_flag cmd_job_flags[];
extern const struct cmd_flag cmd_run_flags[];
extern const struct cmd_flag cmd_lease_flags[];
extern const struct cmd_flag cmd_attempt_flags[];
extern const struct cmd_flag cmd_hello_flags[];
enum {
    CMD_FLAG_PRIORITY,
    CMD_FLAG_MAX_ATTEMPTS,
    CMD_FLAG_MAX_FAILS,
    CMD_FLAG_IDEMPOTENT,
    CMD_FLAG_AFTER,
    CMD_FLAG_WORKER,
    CMD_FLAG_TARGET,
    CMD_FLAG_BACKOFF,
    CMD_FLAG_DEAD,
    CMD_FLAG_COUNT
};

#endif /* WQ_CMD_H */
