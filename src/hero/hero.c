/* hero.c - the Hero front-end as a connection module (hero.h): requests
 * read by resp.c, the command table, and the checks every command passes
 * in Redis's order (name, arity, AUTH, keys under "hero:", memory, the
 * read-only log) before its handler runs; the replies the handlers share;
 * the timer that runs the keys' expiries. */
#include "lib/wq.h"
#include "hero/hero.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/payload.h"
#include "net/conn.h"
#include "net/resp_reply.h"

#define K(first, last, step) first, last, step
static const struct hero_cmd hero_cmds[] = {
    {"auth", -2, HERO_NOAUTH, K(0, 0, 0), hero_cmd_auth, NULL},
    {"blpop", -3, HERO_WRITE, K(1, -2, 1), hero_cmd_blpop, hero_check_timeout},
    {"brpop", -3, HERO_WRITE, K(1, -2, 1), hero_cmd_brpop, hero_check_timeout},
    {"client", -2, 0, K(0, 0, 0), hero_cmd_client, NULL},
    {"command", -1, 0, K(0, 0, 0), hero_cmd_command, NULL},
    {"dbsize", 1, 0, K(0, 0, 0), hero_cmd_dbsize, NULL},
    {"del", -2, HERO_WRITE, K(1, -1, 1), hero_cmd_del, NULL},
    {"echo", 2, 0, K(0, 0, 0), hero_cmd_echo, NULL},
    {"exists", -2, 0, K(1, -1, 1), hero_cmd_exists, NULL},
    {"expire", -3, HERO_WRITE, K(1, 1, 1), hero_cmd_expire, NULL},
    {"hdel", -3, HERO_WRITE, K(1, 1, 1), hero_cmd_hdel, NULL},
    {"hello", -1, HERO_NOAUTH, K(0, 0, 0), hero_cmd_hello, NULL},
    {"hexists", 3, 0, K(1, 1, 1), hero_cmd_hexists, NULL},
    {"hget", 3, 0, K(1, 1, 1), hero_cmd_hget, NULL},
    {"hgetall", 2, 0, K(1, 1, 1), hero_cmd_hgetall, NULL},
    {"hincrby", 4, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_hincrby, NULL},
    {"hkeys", 2, 0, K(1, 1, 1), hero_cmd_hkeys, NULL},
    {"hlen", 2, 0, K(1, 1, 1), hero_cmd_hlen, NULL},
    {"hmget", -3, 0, K(1, 1, 1), hero_cmd_hmget, NULL},
    {"hmset", -4, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_hmset, NULL},
    {"hset", -4, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_hset, NULL},
    {"hsetnx", 4, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_hsetnx, NULL},
    {"hvals", 2, 0, K(1, 1, 1), hero_cmd_hvals, NULL},
    {"info", -1, 0, K(0, 0, 0), hero_cmd_info, NULL},
    {"keys", 2, 0, K(0, 0, 0), hero_cmd_keys, NULL},
    {"lindex", 3, 0, K(1, 1, 1), hero_cmd_lindex, NULL},
    {"llen", 2, 0, K(1, 1, 1), hero_cmd_llen, NULL},
    {"lpop", -2, HERO_WRITE, K(1, 1, 1), hero_cmd_lpop, NULL},
    {"lpush", -3, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_lpush, NULL},
    {"lrange", 4, 0, K(1, 1, 1), hero_cmd_lrange, NULL},
    {"lrem", 4, HERO_WRITE, K(1, 1, 1), hero_cmd_lrem, NULL},
    {"ltrim", 4, HERO_WRITE, K(1, 1, 1), hero_cmd_ltrim, NULL},
    {"persist", 2, HERO_WRITE, K(1, 1, 1), hero_cmd_persist, NULL},
    {"pexpire", -3, HERO_WRITE, K(1, 1, 1), hero_cmd_pexpire, NULL},
    {"ping", -1, 0, K(0, 0, 0), hero_cmd_ping, NULL},
    {"pttl", 2, 0, K(1, 1, 1), hero_cmd_pttl, NULL},
    {"quit", -1, HERO_NOAUTH, K(0, 0, 0), hero_cmd_quit, NULL},
    {"rpop", -2, HERO_WRITE, K(1, 1, 1), hero_cmd_rpop, NULL},
    {"rpush", -3, HERO_WRITE | HERO_GROWS, K(1, 1, 1), hero_cmd_rpush, NULL},
    {"scan", -2, 0, K(0, 0, 0), hero_cmd_scan, NULL},
    {"select", 2, 0, K(0, 0, 0), hero_cmd_select, NULL},
    {"ttl", 2, 0, K(1, 1, 1), hero_cmd_ttl, NULL},
    {"type", 2, 0, K(1, 1, 1), hero_cmd_type, NULL},
    {"unlink", -2, HERO_WRITE, K(1, -1, 1), hero_cmd_del, NULL},
};
#undef K

const struct hero_cmd *
hero_cmd_find(const char *name, size_t n)
{
    size_t lo = 0, hi = WQ_ARRAY_LEN(hero_cmds);
    while (lo < hi) { /* the table is in byte order */
        size_t mid = (lo + hi) / 2;
        const char *m = hero_cmds[mid].name;
        size_t mn = strlen(m);
        int c = strncasecmp(name, m, WQ_MIN(n, mn));
        if (c == 0)
            c = (n > mn) - (n < mn);
        if (c == 0)
            return &hero_cmds[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const struct hero_cmd *
hero_cmd_table(size_t *n)
{
    *n = WQ_ARRAY_LEN(hero_cmds);
    return hero_cmds;
}

/* Replies */

void
hero_err(struct reply *out, const char *text)
{
    resp_reply_error(out, "ERR", text);
}

void
hero_err_syntax(struct reply *out)
{
    reply_str(out, "-ERR syntax error\r\n");
}

void
hero_err_wrongtype(struct reply *out)
{
    reply_str(out, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

void
hero_err_not_integer(struct reply *out)
{
    reply_str(out, "-ERR value is not an integer or out of range\r\n");
}

void
hero_err_arity(struct reply *out, const char *name)
{
    char text[160];
    snprintf(text, sizeof text, "wrong number of arguments for '%s' command", name);
    resp_reply_error(out, "ERR", text);
}

void
hero_reply_val(struct reply *out, const char *p, size_t len)
{
    resp_reply_head(out, '$', (int64_t)len);
    if (payload_shared(len))
        reply_payload(out, (char *)p, len);
    else
        reply_bytes(out, p, len);
    reply_bytes(out, "\r\n", 2);
}

bool
hero_parse_i64(const struct wq_str *a, int64_t *v)
{
    return resp_number(a->p, a->n, v);
}

struct hkey *
hero_key(struct hero_call *c, const struct wq_str *k, int type, bool *wrong)
{
    *wrong = false;
    struct hkey *key = hstore_find(c->h->store, k->p, k->n, c->now_ms);
    if (key != NULL && type != 0 && key->type != type) {
        hero_err_wrongtype(c->out);
        *wrong = true;
        return NULL;
    }
    return key;
}

void
hero_key_drop_empty(struct hero_call *c, struct hkey *k)
{
    if ((k->type == HKEY_HASH ? hhash_len(k) : hlst_len(k)) == 0)
        hero_key_delete(c->h, k);
}

/* What k's going does to the jobs, and its records. */
static void
hero_key_gone(struct hero_ctx *h, struct hkey *k)
{
    if (k->type == HKEY_HASH)
        hero_jobs_hash_gone(h, k);
    else
        for (uint32_t i = 0; i < hlst_len(k); i++)
            hero_jobs_withdrawn(h, k, hlst_at(k, i));
    hero_log_key_gone(h, k);
}

void
hero_key_delete(struct hero_ctx *h, struct hkey *k)
{
    hero_key_gone(h, k);
    hstore_delete(h->store, k);
}

void
hero_key_expired(struct hkey *k, void *arg)
{
    hero_key_gone(arg, k);
}

/* Checks before a command */

/* "-ERR unknown command 'NAME', with args beginning with: 'A' 'B' ": the
 * name and the first arguments, up to about 128 bytes, as Redis quotes
 * them. */
static void
hero_err_unknown(struct reply *out, const struct wq_str *argv, size_t argc)
{
    char text[512];
    int n = snprintf(text, sizeof text, "unknown command '%.*s', with args beginning with: ",
                     (int)WQ_MIN(argv[0].n, 128), argv[0].p);
    size_t args = 0;
    for (size_t i = 1; i < argc && args < 128; i++) {
        int m = snprintf(text + n, sizeof text - (size_t)n, "'%.*s' ",
                         (int)WQ_MIN(argv[i].n, 128 - args), argv[i].p);
        args += (size_t)m;
        n += m;
    }
    resp_reply_error(out, "ERR", text);
}

/* Is every key of the command under "hero:"?  Else the error naming the
 * first that is not. */
static bool
hero_keys_ok(const struct hero_cmd *cmd, struct hero_call *c)
{
    if (cmd->first_key == 0)
        return true;
    size_t last = cmd->last_key >= 0 ? (size_t)cmd->last_key : c->argc + (size_t)cmd->last_key;
    for (size_t i = (size_t)cmd->first_key; i <= last && i < c->argc; i += (size_t)cmd->key_step) {
        const struct wq_str *k = &c->argv[i];
        if (k->n < HERO_PREFIX_LEN || memcmp(k->p, HERO_PREFIX, HERO_PREFIX_LEN) != 0) {
            char text[512];
            snprintf(text, sizeof text,
                     "key '%.*s' is outside '" HERO_PREFIX "': this server keeps only Hero's keys",
                     (int)WQ_MIN(k->n, 256), k->p);
            resp_reply_error(c->out, "ERR", text);
            return false;
        }
    }
    return true;
}

/* Run the request the parser holds. */
static void
hero_dispatch(struct hero_ctx *h, struct hero_conn *st, struct reply *out)
{
    struct hero_call c = {h, st, out, st->parser.argv, st->parser.argc, *h->now_ms};
    h->commands++;
    const struct hero_cmd *cmd = hero_cmd_find(c.argv[0].p, c.argv[0].n);
    if (cmd == NULL) {
        hero_err_unknown(out, c.argv, c.argc);
        return;
    }
    if (cmd->arity > 0 ? c.argc != (size_t)cmd->arity : c.argc < (size_t)-cmd->arity) {
        hero_err_arity(out, cmd->name);
        return;
    }
    if (h->has_password && !st->authed && !(cmd->flags & HERO_NOAUTH)) {
        reply_str(out, "-NOAUTH Authentication required.\r\n");
        return;
    }
    if ((cmd->check != NULL && !cmd->check(&c)) || !hero_keys_ok(cmd, &c))
        return;
    if ((cmd->flags & HERO_GROWS) && core_over_limit(h->core, 0)) {
        reply_str(out, HERO_OOM);
        return;
    }
    /* the keys whose time has come go first (logged, with what that does to
     * the jobs), so that no key expires under a command's feet */
    hstore_advance(h->store, c.now_ms);
    if ((cmd->flags & HERO_WRITE) && *h->readonly) {
        reply_str(out, "-READONLY You can't write against a read only server: its command log "
                       "cannot be written.\r\n");
        return;
    }
    cmd->run(&c);
}

/* The module */

static void
hero_open(void *ctx, void *state, struct reply *out)
{
    (void)out;
    struct hero_ctx *h = ctx;
    struct hero_conn *st = state;
    resp_parser_init(&st->parser, h->max_bulk);
    st->id = ++h->next_client_id;
    list_init(&st->held);
}

static size_t
hero_handle(void *ctx, void *state, struct reply *out, const char *in, size_t len, size_t *need)
{
    struct hero_ctx *h = ctx;
    struct hero_conn *st = state;
    size_t used;
    const char *err;
    st->parser.unauth = h->has_password && !st->authed;
    switch (resp_parse(&st->parser, in, len, &used, &err)) {
    case RESP_MORE:
        if (h->max_request > 0 && used > h->max_request) {
            /* more than the connection reads ahead: as Redis past its
             * query buffer's limit, close without a reply */
            reply_close(out);
            return len;
        }
        *need = used;
        return 0;
    case RESP_EMPTY:
        return used;
    case RESP_ERROR:
        resp_reply_error(out, "ERR", err);
        reply_close(out);
        return len;
    case RESP_OK:
        break;
    }
    hero_dispatch(h, st, out);
    return used;
}

static void
hero_cancel(void *ctx, void *waiting)
{
    hero_block_cancel(ctx, waiting);
}

static void
hero_close(void *ctx, void *state)
{
    struct hero_ctx *h = ctx;
    struct hero_conn *st = state;
    if (!list_empty(&st->held)) {
        /* its jobs are lost: in a batch of the server's (the clock, and
         * the timers of what that hands out), wherever the close comes */
        if (h->hooks != NULL)
            h->hooks->begin(h->hooks->arg);
        hero_jobs_conn_closed(h, st);
        if (h->hooks != NULL)
            h->hooks->end(h->hooks->arg);
    }
    resp_parser_free(&st->parser);
    wq_free(st->name);
}

/* -idle-timeout spares a worker that holds a job: it is working. */
static bool
hero_may_idle_close(void *ctx, void *state)
{
    (void)ctx;
    const struct hero_conn *st = state;
    return list_empty(&st->held);
}

const struct conn_proto hero_protocol = {
    .name = "hero",
    .state_size = sizeof(struct hero_conn),
    .open = hero_open,
    .handle = hero_handle,
    .cancel = hero_cancel,
    .close = hero_close,
    .may_idle_close = hero_may_idle_close,
};

/* The keys' expiries */

/* Run the expiries due, in a batch of the server's, and wait for the
 * next. */
static void
hero_expiry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hero_ctx *h = arg;
    h->hooks->begin(h->hooks->arg);
    hstore_advance(h->store, *h->now_ms);
    hero_expiry_arm(h);
    h->hooks->end(h->hooks->arg);
}

void
hero_ctx_init(struct hero_ctx *h)
{
    if (h->base != NULL)
        h->expiry = event_new(h->base, -1, 0, hero_expiry_cb, h);
}

/* Wait for the next expiry: at most a second, so that a key set to expire
 * later than the wheel's next step is still reached. */
void
hero_expiry_arm(struct hero_ctx *h)
{
    if (h->expiry == NULL)
        return;
    uint64_t next = hstore_next_event(h->store);
    if (next == WHEEL_NEVER) {
        event_del(h->expiry);
        return;
    }
    uint64_t now = *h->now_ms;
    uint64_t ms = next > now ? WQ_MIN(next - now, 1000) : 0;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    event_add(h->expiry, &tv);
}

void
hero_ctx_close(struct hero_ctx *h)
{
    hero_blocked_free(h);
    if (h->expiry != NULL)
        event_free(h->expiry);
}
