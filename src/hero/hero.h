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
struct hkey;
struct hstore;
struct registry;
struct reply;

/* The Redis version HELLO and INFO give: the commands and replies are
 * Redis 7.0's. */
#define HERO_REDIS_VERSION "7.0.0"

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
};

/* A connection's state. */
struct hero_conn {
    struct resp_parser parser;
    uint64_t id;
    bool authed;
    char *name;               /* CLIENT SETNAME; NULL: none */
    struct hero_block *block; /* its BLPOP or BRPOP, while it waits */
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
 * argument, -2 all but the last; step), and its handler. */
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
/* Delete k if its last field or element went. */
void hero_key_drop_empty(struct hero_call *c, struct hkey *k);

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
void hero_cmd_brpop(struct hero_call *c);
void hero_cmd_llen(struct hero_call *c);
void hero_cmd_lrange(struct hero_call *c);
void hero_cmd_lindex(struct hero_call *c);
void hero_cmd_lrem(struct hero_call *c);
void hero_cmd_ltrim(struct hero_call *c);

/* The blocked pops (hero_list.c): withdraw a waiting connection's, and
 * free what the context keeps for them. */
void hero_block_cancel(struct hero_ctx *h, struct hero_block *b);
void hero_blocked_free(struct hero_ctx *h);
/* Connections waiting in BLPOP or BRPOP. */
size_t hero_blocked_count(const struct hero_ctx *h);

#endif /* WQ_HERO_H */
