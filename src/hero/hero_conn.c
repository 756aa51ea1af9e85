/* hero_conn.c - the commands about the connection and the server, as Redis
 * 7 answers them: PING, ECHO, AUTH, HELLO (RESP2 only), SELECT (database
 * 0 only), CLIENT (SETINFO, SETNAME, GETNAME, ID), COMMAND, INFO, DBSIZE,
 * QUIT. */
#include "config.h"
#include "lib/wq.h"
#include "hero/hero.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "net/auth_guard.h"
#include "net/reply.h"
#include "net/resp_reply.h"

/* Is a (an argument) the word w, in any case? */
static bool
hero_is(const struct wq_str *a, const char *w)
{
    return a->n == strlen(w) && strncasecmp(a->p, w, a->n) == 0;
}

/* Is user Redis's default user (its name is case-sensitive)? */
static bool
hero_default_user(const struct wq_str *user)
{
    return user->n == 7 && memcmp(user->p, "default", 7) == 0;
}

void
hero_cmd_ping(struct hero_call *c)
{
    if (c->argc > 2)
        hero_err_arity(c->out, "ping");
    else if (c->argc == 2)
        resp_reply_bulk(c->out, c->argv[1].p, c->argv[1].n);
    else
        reply_str(c->out, "+PONG\r\n");
}

void
hero_cmd_echo(struct hero_call *c)
{
    resp_reply_bulk(c->out, c->argv[1].p, c->argv[1].n);
}

void
hero_password_digest(const void *p, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

#define HERO_WRONGPASS "-WRONGPASS invalid username-password pair or user is disabled.\r\n"

/* Check user (NULL: the default user) and password, as AUTH and HELLO's
 * AUTH do: true once the connection is authenticated; otherwise the
 * refusal is answered, after the delay of the client's address. */
static bool
hero_check_password(struct hero_call *c, const struct wq_str *user, const struct wq_str *pass)
{
    struct hero_ctx *h = c->h;
    if (user != NULL && !hero_default_user(user)) {
        reply_str(c->out, HERO_WRONGPASS);
        return false;
    }
    if (!h->has_password) { /* the default user takes any password */
        c->st->authed = true;
        return true;
    }
    const char *peer = reply_peer(c->out);
    uint64_t wait = auth_guard_wait_ms(h->auth_guard, peer, c->now_ms, "hero auth");
    if (wait > 0) { /* not checked: refused when its address's delay ends */
        reply_pause(c->out, wait);
        reply_str(c->out, HERO_WRONGPASS);
        return false;
    }
    unsigned char d[32];
    hero_password_digest(pass->p, pass->n, d);
    if (CRYPTO_memcmp(d, h->password, sizeof d) == 0) {
        c->st->authed = true;
        auth_guard_passed(h->auth_guard, peer);
        return true;
    }
    reply_pause(c->out, auth_guard_failed(h->auth_guard, peer, c->now_ms, "hero auth"));
    reply_str(c->out, HERO_WRONGPASS);
    return false;
}

/* AUTH [user] password */
void
hero_cmd_auth(struct hero_call *c)
{
    if (c->argc > 3) {
        hero_err_syntax(c->out);
        return;
    }
    if (c->argc == 2 && !c->h->has_password) {
        hero_err(c->out, "AUTH <password> called without any password configured for the "
                         "default user. Are you sure your configuration is correct?");
        return;
    }
    if (hero_check_password(c, c->argc == 3 ? &c->argv[1] : NULL, &c->argv[c->argc - 1]))
        resp_reply_ok(c->out);
}

/* Can name be a client's name (no spaces, newlines or special bytes)? */
static bool
hero_name_ok(const struct wq_str *name)
{
    for (size_t i = 0; i < name->n; i++)
        if (name->p[i] < '!' || name->p[i] > '~')
            return false;
    return true;
}

static void
hero_set_name(struct hero_conn *st, const struct wq_str *name)
{
    wq_free(st->name);
    st->name = NULL;
    if (name->n > 0) {
        st->name = wq_malloc(name->n + 1);
        memcpy(st->name, name->p, name->n);
        st->name[name->n] = '\0';
    }
}

#define HERO_BAD_NAME "Client names cannot contain spaces, newlines or special characters."

/* HELLO [protover [AUTH user pass] [SETNAME name]]: RESP2 only. */
void
hero_cmd_hello(struct hero_call *c)
{
    if (c->argc >= 2) {
        int64_t ver;
        if (!hero_parse_i64(&c->argv[1], &ver)) {
            hero_err(c->out, "Protocol version is not an integer or out of range");
            return;
        }
        if (ver != 2) {
            reply_str(c->out, "-NOPROTO unsupported protocol version\r\n");
            return;
        }
    }
    const struct wq_str *user = NULL, *pass = NULL, *name = NULL;
    for (size_t j = 2; j < c->argc; j++) {
        size_t left = c->argc - j - 1;
        if (hero_is(&c->argv[j], "auth") && left >= 2) {
            user = &c->argv[j + 1];
            pass = &c->argv[j + 2];
            j += 2;
        } else if (hero_is(&c->argv[j], "setname") && left >= 1) {
            name = &c->argv[++j];
        } else {
            char text[300];
            snprintf(text, sizeof text, "Syntax error in HELLO option '%.*s'",
                     (int)WQ_MIN(c->argv[j].n, 200), c->argv[j].p);
            hero_err(c->out, text);
            return;
        }
    }
    if (c->h->has_password && !c->st->authed && user == NULL) {
        resp_reply_error(c->out, "NOAUTH",
                         "HELLO must be called with the client already authenticated, otherwise "
                         "the HELLO AUTH <user> <pass> option can be used to authenticate the "
                         "client and select the RESP protocol version at the same time");
        return;
    }
    if (user != NULL && !hero_check_password(c, user, pass))
        return;
    if (name != NULL) {
        if (!hero_name_ok(name)) {
            hero_err(c->out, HERO_BAD_NAME);
            return;
        }
        hero_set_name(c->st, name);
    }
    resp_reply_array(c->out, 14);
    resp_reply_bulk(c->out, "server", 6);
    resp_reply_bulk(c->out, "redis", 5);
    resp_reply_bulk(c->out, "version", 7);
    resp_reply_bulk(c->out, HERO_REDIS_VERSION, strlen(HERO_REDIS_VERSION));
    resp_reply_bulk(c->out, "proto", 5);
    resp_reply_integer(c->out, 2);
    resp_reply_bulk(c->out, "id", 2);
    resp_reply_integer(c->out, (int64_t)c->st->id);
    resp_reply_bulk(c->out, "mode", 4);
    resp_reply_bulk(c->out, "standalone", 10);
    resp_reply_bulk(c->out, "role", 4);
    resp_reply_bulk(c->out, "master", 6);
    resp_reply_bulk(c->out, "modules", 7);
    resp_reply_array(c->out, 0);
}

void
hero_cmd_select(struct hero_call *c)
{
    int64_t db;
    if (!hero_parse_i64(&c->argv[1], &db))
        hero_err_not_integer(c->out);
    else if (db != 0)
        hero_err(c->out, "DB index is out of range");
    else
        resp_reply_ok(c->out);
}

/* "-ERR unknown subcommand 'SUB'. Try CMD HELP." */
static void
hero_err_subcommand(struct hero_call *c, const char *cmd)
{
    char text[300];
    snprintf(text, sizeof text, "unknown subcommand '%.*s'. Try %s HELP.",
             (int)WQ_MIN(c->argv[1].n, 128), c->argv[1].p, cmd);
    hero_err(c->out, text);
}

/* CLIENT SETINFO, SETNAME, GETNAME, ID. */
void
hero_cmd_client(struct hero_call *c)
{
    static const struct {
        const char *sub, *full;
        size_t argc;
    } subs[] = {
        {"setinfo", "client|setinfo", 4},
        {"setname", "client|setname", 3},
        {"getname", "client|getname", 2},
        {"id", "client|id", 2},
    };
    size_t i = 0;
    while (i < WQ_ARRAY_LEN(subs) && !hero_is(&c->argv[1], subs[i].sub))
        i++;
    if (i == WQ_ARRAY_LEN(subs)) {
        hero_err_subcommand(c, "CLIENT");
        return;
    }
    if (c->argc != subs[i].argc) {
        hero_err_arity(c->out, subs[i].full);
        return;
    }
    switch (i) {
    case 0: /* SETINFO LIB-NAME|LIB-VER value: as Redis 7.2 takes it */
        if (!hero_is(&c->argv[2], "lib-name") && !hero_is(&c->argv[2], "lib-ver")) {
            char text[300];
            snprintf(text, sizeof text, "Unrecognized option '%.*s'",
                     (int)WQ_MIN(c->argv[2].n, 200), c->argv[2].p);
            hero_err(c->out, text);
        } else {
            resp_reply_ok(c->out);
        }
        break;
    case 1:
        if (!hero_name_ok(&c->argv[2])) {
            hero_err(c->out, HERO_BAD_NAME);
            break;
        }
        hero_set_name(c->st, &c->argv[2]);
        resp_reply_ok(c->out);
        break;
    case 2:
        if (c->st->name != NULL)
            resp_reply_bulk(c->out, c->st->name, strlen(c->st->name));
        else
            resp_reply_null(c->out);
        break;
    default:
        resp_reply_integer(c->out, (int64_t)c->st->id);
        break;
    }
}

/* One command's entry in COMMAND's reply: name, arity, flags, keys, and
 * the empty lists of Redis 7's later fields. */
static void
hero_command_info(struct hero_call *c, const struct hero_cmd *cmd)
{
    const char *flags[3];
    size_t n = 0;
    flags[n++] = cmd->flags & HERO_WRITE ? "write" : "readonly";
    if (cmd->flags & HERO_GROWS)
        flags[n++] = "denyoom";
    if (cmd->flags & HERO_NOAUTH)
        flags[n++] = "no_auth";
    resp_reply_array(c->out, 10);
    resp_reply_bulk(c->out, cmd->name, strlen(cmd->name));
    resp_reply_integer(c->out, cmd->arity);
    resp_reply_array(c->out, n);
    for (size_t i = 0; i < n; i++)
        resp_reply_simple(c->out, flags[i]);
    resp_reply_integer(c->out, cmd->first_key);
    resp_reply_integer(c->out, cmd->last_key);
    resp_reply_integer(c->out, cmd->key_step);
    for (int i = 0; i < 4; i++)
        resp_reply_array(c->out, 0);
}

/* COMMAND, COMMAND COUNT, COMMAND INFO name..., COMMAND DOCS (none). */
void
hero_cmd_command(struct hero_call *c)
{
    size_t n;
    const struct hero_cmd *all = hero_cmd_table(&n);
    if (c->argc == 1) {
        resp_reply_array(c->out, n);
        for (size_t i = 0; i < n; i++)
            hero_command_info(c, &all[i]);
    } else if (hero_is(&c->argv[1], "count") && c->argc == 2) {
        resp_reply_integer(c->out, (int64_t)n);
    } else if (hero_is(&c->argv[1], "docs")) {
        resp_reply_array(c->out, 0);
    } else if (hero_is(&c->argv[1], "info")) {
        resp_reply_array(c->out, c->argc - 2);
        for (size_t i = 2; i < c->argc; i++) {
            const struct hero_cmd *cmd = hero_cmd_find(c->argv[i].p, c->argv[i].n);
            if (cmd != NULL)
                hero_command_info(c, cmd);
            else
                resp_reply_null_array(c->out);
        }
    } else if (hero_is(&c->argv[1], "count")) {
        hero_err_arity(c->out, "command|count");
    } else {
        hero_err_subcommand(c, "COMMAND");
    }
}

/* Is section s asked for by INFO's arguments (none: the default set)? */
static bool
hero_info_wants(const struct hero_call *c, const char *s)
{
    if (c->argc == 1)
        return true;
    for (size_t i = 1; i < c->argc; i++)
        if (hero_is(&c->argv[i], s) || hero_is(&c->argv[i], "all") ||
            hero_is(&c->argv[i], "default") || hero_is(&c->argv[i], "everything"))
            return true;
    return false;
}

/* INFO [section ...]: Redis's layout, "field:value" lines under "# Name"
 * headers, with what this server knows. */
void
hero_cmd_info(struct hero_call *c)
{
    struct hero_ctx *h = c->h;
    char text[2048];
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(text + n, sizeof text - n, __VA_ARGS__)
    if (hero_info_wants(c, "server"))
        ADD("# Server\r\nredis_version:%s\r\nworkq_version:%s\r\nredis_mode:standalone\r\n"
            "arch_bits:%zu\r\nprocess_id:%ld\r\nuptime_in_seconds:%" PRIu64 "\r\n\r\n",
            HERO_REDIS_VERSION, PACKAGE_VERSION, sizeof(void *) * 8, (long)getpid(),
            (c->now_ms - h->started_ms) / 1000);
    if (hero_info_wants(c, "clients"))
        ADD("# Clients\r\nconnected_clients:%" PRIu64 "\r\nblocked_clients:%zu\r\n\r\n",
            *h->clients, hero_blocked_count(h));
    if (hero_info_wants(c, "memory"))
        ADD("# Memory\r\nused_memory:%" PRIu64 "\r\nmaxmemory:%" PRIu64 "\r\n\r\n",
            core_memory(h->core), h->core->max_bytes);
    if (hero_info_wants(c, "stats"))
        ADD("# Stats\r\ntotal_commands_processed:%" PRIu64 "\r\n\r\n", h->commands);
    if (hero_info_wants(c, "jobs")) {
        struct core_space_counts k;
        core_space_counts(h->core, h->space, &k);
        const struct hero_job_stats *j = &h->jobs;
        ADD("# Jobs\r\njobs_queued:%" PRIu64 "\r\njobs_handed_out:%" PRIu64
            "\r\njobs_submitted:%" PRIu64 "\r\njobs_finished:%" PRIu64 "\r\njobs_failed:%" PRIu64
            "\r\njobs_retried:%" PRIu64 "\r\n\r\n",
            k.enqueued + k.retry, k.working, j->submitted, j->finished, j->failed, j->retried);
    }
    if (hero_info_wants(c, "replication"))
        ADD("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n");
    if (hero_info_wants(c, "keyspace")) {
        ADD("# Keyspace\r\n");
        if (hstore_count(h->store) > 0)
            ADD("db0:keys=%zu,expires=%zu,avg_ttl=0\r\n", hstore_count(h->store),
                hstore_expiring(h->store));
    }
#undef ADD
    /* no blank line after the last section */
    if (n >= 4 && memcmp(text + n - 4, "\r\n\r\n", 4) == 0)
        n -= 2;
    resp_reply_bulk(c->out, text, n);
}

void
hero_cmd_dbsize(struct hero_call *c)
{
    resp_reply_integer(c->out, (int64_t)hstore_count(c->h->store));
}

void
hero_cmd_quit(struct hero_call *c)
{
    resp_reply_ok(c->out);
    reply_close(c->out);
}
