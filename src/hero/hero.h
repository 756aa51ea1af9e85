/* hero.h - the Hero Dispatcher's front-end: RESP2 as Redis 7 speaks it, on
 * the keys under "hero:", as a module of the connection layer (conn.h).
 * The keys are hstore.c's; the commands are split by what they touch
 * (hero_conn.c: the connection and the server; hero_keys.c: keys of any
 * type; hero_hash.c; hero_list.c, with the blocking pops).  doc/hero.md
 * says what is Redis's behaviour kept exactly and where the server goes
 * further. */
#ifndef WQ_HERO_H
#define WQ_HERO_H

#include "lib/wq.h"
#include "hero/resp.h"
#include "lib/list.h"

struct auth_guard;
struct conn_hooks;
struct conn_proto;
struct core;
struct event;
struct event_base;
struct hero_fail;
struct hkey;
struct hstore;
struct registry;
struct reply;

/* The Redis version HELLO and INFO give: the commands and replies are
 * Redis 7.0's. */
#define HERO_REDIS_VERSION "7.0.0"

/* Redis's answer to a command that would grow the keys past -max-memory. */
#define HERO_OOM "-OOM command not allowed when used memory > 'maxmemory'.\r\n"

#define HERO_PREFIX     "hero:"
#define HERO_PREFIX_LEN 5

/* The Hero listeners' context (conn_service.ctx). */
struct hero_ctx {
    struct core *core;
    struct hstore *store;
    unsigned char password[32]; /* SHA-256 of the password, when has_password */
    bool has_password;
    struct auth_guard *auth_guard; /* failing addresses (every listener's) */
    size_t max_bulk;               /* the longest value (-max-payload) */
    size_t max_request;            /* the longest request read (0: no bound) */
    const uint64_t *now_ms;        /* the server's time for this batch, Unix ms */
    const bool *readonly;          /* the command log cannot be written */
    const uint64_t *clients;       /* open connections */
    uint64_t started_ms;
    uint64_t next_client_id;  /* CLIENT ID */
    uint64_t commands;        /* handled since start */
    struct registry *blocked; /* key -> its line of clients in BLPOP or BRPOP */
    size_t nblocked;          /* clients blocked */
    struct event_base *base;  /* NULL: no timers (unit tests) */
    const struct conn_hooks *hooks;
    struct event *expiry; /* runs the keys' expiries when due */
    /* the jobs on the work queues (hero_jobs.c) */
    uint8_t space;            /* the engine's key space of them */
    struct registry *running; /* id -> struct hero_run: handed to a connection */
    struct registry *deps;    /* prerequisite id -> the jobs waiting for it */
    struct hero_fail *failq;  /* jobs to fail for a prerequisite (hero_deps.c) */
    size_t nfail, capfail;
    bool failing;              /* failq is being worked off */
    struct registry *taken;    /* replay: id -> what the log says of the job */
    struct registry *expiring; /* replay: key -> an expiry read before its key */
    struct hero_job_stats {
        uint64_t submitted, handed, finished, failed, retried;
    } jobs; /* since start (replay's are not counted) */
};

/* A connection's state. */
struct hero_conn {
    struct resp_parser parser;
    uint64_t id;
    bool authed;
    char *name;               /* CLIENT SETNAME; NULL: none */
    struct hero_block *block; /* its BLPOP or BRPOP, while it waits */
    struct list held;         /* struct hero_run: the jobs it popped, not ended */
};

/* One command being run. */
struct hero_call {
    struct hero_ctx *h;
    struct hero_conn *st;
    struct reply *out;
    const struct wq_str *argv;
    size_t argc;
    uint64_t now_ms;
};

/* A command of the table: arity as Redis counts it (the name included; -n:
 * at least n), its flags, where its keys are (first, last: -1 the last
 * argument, -2 all but the last; step), its handler, and what it checks
 * of its arguments before its keys are (NULL: nothing), where Redis
 * answers that error first. */
enum {
    HERO_WRITE = 1,  /* changes data: refused while read-only */
    HERO_GROWS = 2,  /* may use more memory: refused past -max-memory */
    HERO_NOAUTH = 4, /* allowed before AUTH */
};
struct hero_cmd {
    const char *name; /* lowercase */
    int arity;
    uint8_t flags;
    int8_t first_key, last_key, key_step;
    void (*run)(struct hero_call *c);
    bool (*check)(struct hero_call *c);
};

/* The module; its ctx is a struct hero_ctx. */
extern const struct conn_proto hero_protocol;

/* Set up and tear down ctx's own parts (the blocked clients, the expiry
 * timer) around its store, which the caller makes first. */
void hero_ctx_init(struct hero_ctx *h);
void hero_ctx_close(struct hero_ctx *h);
/* Arm the timer for the store's next expiry (after a key got a time). */
void hero_expiry_arm(struct hero_ctx *h);

/* The command named name (any case), or NULL. */
const struct hero_cmd *hero_cmd_find(const char *name, size_t n);
/* Every command, *n of them. */
const struct hero_cmd *hero_cmd_table(size_t *n);

/* SHA-256 of a password, as the context keeps it. */
void hero_password_digest(const void *p, size_t n, unsigned char out[32]);

/* Replies shared by the commands (Redis's texts). */
void hero_err(struct reply *out, const char *text);
void hero_err_syntax(struct reply *out);
void hero_err_wrongtype(struct reply *out);
void hero_err_not_integer(struct reply *out);
void hero_err_arity(struct reply *out, const char *name);
void hero_reply_val(struct reply *out, const char *p, size_t len);

/* An argument as a Redis integer (strict: no spaces, no "+", no leading
 * zeros but "0", within int64): true, with *v. */
bool hero_parse_i64(const struct wq_str *a, int64_t *v);

/* The key k names, of type (0: any), or NULL when there is none; a key of
 * another type answers WRONGTYPE and sets *wrong. */
struct hkey *hero_key(struct hero_call *c, const struct wq_str *k, int type, bool *wrong);
/* Delete k if its last field or element went (logging its expiry's end). */
void hero_key_drop_empty(struct hero_call *c, struct hkey *k);
/* Delete k, logged, with what that does to the jobs. */
void hero_key_delete(struct hero_ctx *h, struct hkey *k);
/* hstore_expired_fn (arg: the context): k's time has come. */
void hero_key_expired(struct hkey *k, void *arg);

/* The records of the store's changes (hero_log.c), each appended before
 * the change it logs is answered, and their replay. */
struct cmdlog_rec;
struct hval;
void hero_log_hset(struct hero_ctx *h, const struct hkey *k, const struct wq_str *f, const char *v,
                   size_t n);
void hero_log_hdel(struct hero_ctx *h, const struct hkey *k, const char *f, size_t n);
/* v was pushed to k (at the head: left), as a job's element or not. */
void hero_log_push(struct hero_ctx *h, const struct hkey *k, const struct hval *v, bool left,
                   bool job);
void hero_log_pop(struct hero_ctx *h, const struct hkey *k, uint64_t seq);
/* hstore_gone_fn (arg: the context): a value left a list. */
void hero_log_gone(void *arg, const struct hkey *k, const struct hval *v);
/* k's expiry is now at_ms (0: none). */
void hero_log_expire(struct hero_ctx *h, const struct hkey *k, uint64_t at_ms);
/* k is about to be deleted: every field or element, and its expiry. */
void hero_log_key_gone(struct hero_ctx *h, const struct hkey *k);
void hero_log_replay(struct hero_ctx *h, const struct cmdlog_rec *r);
/* The log is read: the expiries read before their keys apply. */
void hero_log_replay_done(struct hero_ctx *h);

/* The handlers, by file. */
void hero_cmd_ping(struct hero_call *c);
void hero_cmd_echo(struct hero_call *c);
void hero_cmd_auth(struct hero_call *c);
void hero_cmd_hello(struct hero_call *c);
void hero_cmd_select(struct hero_call *c);
void hero_cmd_client(struct hero_call *c);
void hero_cmd_command(struct hero_call *c);
void hero_cmd_info(struct hero_call *c);
void hero_cmd_dbsize(struct hero_call *c);
void hero_cmd_quit(struct hero_call *c);

void hero_cmd_keys(struct hero_call *c);
void hero_cmd_scan(struct hero_call *c);
void hero_cmd_exists(struct hero_call *c);
void hero_cmd_del(struct hero_call *c);
void hero_cmd_type(struct hero_call *c);
void hero_cmd_expire(struct hero_call *c);
void hero_cmd_pexpire(struct hero_call *c);
void hero_cmd_ttl(struct hero_call *c);
void hero_cmd_pttl(struct hero_call *c);
void hero_cmd_persist(struct hero_call *c);

void hero_cmd_hset(struct hero_call *c);
void hero_cmd_hmset(struct hero_call *c);
void hero_cmd_hsetnx(struct hero_call *c);
void hero_cmd_hget(struct hero_call *c);
void hero_cmd_hmget(struct hero_call *c);
void hero_cmd_hgetall(struct hero_call *c);
void hero_cmd_hdel(struct hero_call *c);
void hero_cmd_hexists(struct hero_call *c);
void hero_cmd_hlen(struct hero_call *c);
void hero_cmd_hkeys(struct hero_call *c);
void hero_cmd_hvals(struct hero_call *c);
void hero_cmd_hincrby(struct hero_call *c);

void hero_cmd_lpush(struct hero_call *c);
void hero_cmd_rpush(struct hero_call *c);
void hero_cmd_lpop(struct hero_call *c);
void hero_cmd_rpop(struct hero_call *c);
void hero_cmd_blpop(struct hero_call *c);
/* A blocking pop's timeout (its last argument) is one, else answered. */
bool hero_check_timeout(struct hero_call *c);
void hero_cmd_brpop(struct hero_call *c);
void hero_cmd_llen(struct hero_call *c);
void hero_cmd_lrange(struct hero_call *c);
void hero_cmd_lindex(struct hero_call *c);
void hero_cmd_lrem(struct hero_call *c);
void hero_cmd_ltrim(struct hero_call *c);

/* The jobs on the work queues (hero_jobs.c). */
enum hero_ready {
    HERO_READY,  /* may be handed out (or plain data) */
    HERO_WAITS,  /* a prerequisite is not finished */
    HERO_FAILED, /* a prerequisite failed */
};
struct hero_failed {
    size_t len;
    char id[512]; /* the prerequisite */
};
enum hero_submit {
    HERO_PLAIN,     /* not a job: a plain element */
    HERO_DUPLICATE, /* queued or handed out already: no second copy */
    HERO_SUBMITTED, /* a job, queued */
};
/* Is k a work queue (hero:work_queue:*)? */
bool hero_is_work_queue(const struct hkey *k);
/* Open the engine's space of the jobs; replay fills the store through it. */
void hero_jobs_open(struct hero_ctx *h);
/* The command log is read back: queue the jobs the lists hold, and count
 * those that were handed out as lost. */
void hero_jobs_replayed(struct hero_ctx *h);
void hero_jobs_close(struct hero_ctx *h);
/* id[0..n) is about to be pushed to k. */
enum hero_submit hero_jobs_submit(struct hero_ctx *h, const struct hkey *k, const char *id,
                                  size_t n);
/* May element v of a work queue be handed out?  HERO_FAILED fills failed. */
enum hero_ready hero_jobs_ready(struct hero_ctx *h, const struct hval *v,
                                struct hero_failed *failed);
/* Job id, taken out of its list, fails for its prerequisite. */
void hero_jobs_fail_prereq(struct hero_ctx *h, const char *id, size_t n,
                           const struct hero_failed *failed);
/* The push that submitted id failed: the job is no more. */
void hero_jobs_unsubmit(struct hero_ctx *h, const char *id, size_t n);
/* v was popped from work queue k by st: the job is handed to it. */
void hero_jobs_taken(struct hero_ctx *h, struct hero_conn *st, const struct hkey *k,
                     const struct hval *v);
/* st closed: the jobs it held are lost. */
void hero_jobs_conn_closed(struct hero_ctx *h, struct hero_conn *st);
/* Field f of hash k was set to v by a client. */
void hero_jobs_field_set(struct hero_ctx *h, const struct hkey *k, const struct wq_str *f,
                         struct wq_str v);
/* id[0..n) was pushed to k: a stop queue's stops a job still queued. */
void hero_jobs_stop(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n);
/* v leaves list k otherwise than by a pop (LREM, LTRIM, DEL, expiry). */
void hero_jobs_withdrawn(struct hero_ctx *h, const struct hkey *k, const struct hval *v);
/* Hash k is about to go (DEL, expiry, its last field). */
void hero_jobs_hash_gone(struct hero_ctx *h, const struct hkey *k);

/* Replay (hero_jobs_replay.c): core_space_ops.replay, and its state. */
void hero_jobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);
void hero_jobs_replay_open(struct hero_ctx *h);
void hero_jobs_replay_close(struct hero_ctx *h);

/* The lists (hero_list.c): push id back at the head of the list named
 * queue (logged as a job's element): its number, 0 when the list cannot
 * take it (the name is another type's, or memory ran out); and serve the
 * clients blocked on a list. */
uint64_t hero_requeue_push(struct hero_ctx *h, struct wq_str queue, const char *id, size_t n);
void hero_serve_key(struct hero_ctx *h, struct wq_str key);

/* The blocked pops (hero_list.c): withdraw a waiting connection's, and
 * free what the context keeps for them. */
void hero_block_cancel(struct hero_ctx *h, struct hero_block *b);
void hero_blocked_free(struct hero_ctx *h);
/* Connections waiting in BLPOP or BRPOP. */
size_t hero_blocked_count(const struct hero_ctx *h);

#endif /* WQ_HERO_H */
