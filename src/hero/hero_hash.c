/* hero_hash.c - the hash commands, as Redis 7 answers them: HSET, HMSET,
 * HSETNX, HGET, HMGET, HGETALL, HDEL, HEXISTS, HLEN, HKEYS, HVALS,
 * HINCRBY.  A hash keeps its fields in the order they were first set. */
#include "lib/wq.h"
#include "hero/hero.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hero/hstore.h"
#include "net/reply.h"
#include "net/resp_reply.h"

/* The hash at argv[1], made when missing and make is set; NULL when there
 * is none or it is not a hash (answered). */
static struct hkey *
hero_hash(struct hero_call *c, bool make, bool *wrong)
{
    struct hkey *k = hero_key(c, &c->argv[1], HKEY_HASH, wrong);
    if (k == NULL && make && !*wrong)
        k = hstore_create(c->h->store, c->argv[1].p, c->argv[1].n, HKEY_HASH);
    return k;
}

/* The pairs of argv[2..argc) were set: a job's status may have changed. */
static void
hero_hash_set_done(struct hero_call *c, struct hkey *k)
{
    for (size_t i = c->argc - 2; i >= 2; i -= 2) /* the last value set counts */
        if (c->argv[i].n == 6 && memcmp(c->argv[i].p, "status", 6) == 0) {
            hero_jobs_field_set(c->h, k, &c->argv[i], c->argv[i + 1]);
            return;
        }
}

/* Set the pairs of argv[2..argc): how many fields are new, or -1 when
 * memory ran out (answered; what was set stays, as in Redis). */
static int64_t
hero_hash_set_pairs(struct hero_call *c, struct hkey *k)
{
    int64_t added = 0;
    for (size_t i = 2; i + 1 < c->argc; i += 2) {
        int r = hhash_set(c->h->store, k, c->argv[i].p, c->argv[i].n, c->argv[i + 1].p,
                          c->argv[i + 1].n);
        if (r < 0) {
            reply_str(c->out, HERO_OOM);
            hero_key_drop_empty(c, k);
            return -1;
        }
        hero_log_hset(c->h, k, &c->argv[i], c->argv[i + 1].p, c->argv[i + 1].n);
        added += r;
    }
    hero_hash_set_done(c, k);
    return added;
}

void
hero_cmd_hset(struct hero_call *c)
{
    if (c->argc % 2 != 0) {
        hero_err_arity(c->out, "hset");
        return;
    }
    bool wrong;
    struct hkey *k = hero_hash(c, true, &wrong);
    if (k == NULL)
        return;
    int64_t added = hero_hash_set_pairs(c, k);
    if (added >= 0)
        resp_reply_integer(c->out, added);
}

void
hero_cmd_hmset(struct hero_call *c)
{
    if (c->argc % 2 != 0) {
        hero_err_arity(c->out, "hmset");
        return;
    }
    bool wrong;
    struct hkey *k = hero_hash(c, true, &wrong);
    if (k != NULL && hero_hash_set_pairs(c, k) >= 0)
        resp_reply_ok(c->out);
}

void
hero_cmd_hsetnx(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, true, &wrong);
    if (k == NULL)
        return;
    if (hhash_get(k, c->argv[2].p, c->argv[2].n) != NULL) {
        resp_reply_integer(c->out, 0);
        return;
    }
    int64_t added = hero_hash_set_pairs(c, k);
    if (added >= 0)
        resp_reply_integer(c->out, added);
}

void
hero_cmd_hget(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (wrong)
        return;
    const struct hval *v = k != NULL ? hhash_get(k, c->argv[2].p, c->argv[2].n) : NULL;
    if (v != NULL)
        hero_reply_val(c->out, v->p, v->len);
    else
        resp_reply_null(c->out);
}

void
hero_cmd_hmget(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (wrong)
        return;
    resp_reply_array(c->out, c->argc - 2);
    for (size_t i = 2; i < c->argc; i++) {
        const struct hval *v = k != NULL ? hhash_get(k, c->argv[i].p, c->argv[i].n) : NULL;
        if (v != NULL)
            hero_reply_val(c->out, v->p, v->len);
        else
            resp_reply_null(c->out);
    }
}

/* HGETALL, HKEYS, HVALS: names and values, names or values. */
static void
hero_hash_walk(struct hero_call *c, bool names, bool values)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (wrong)
        return;
    uint32_t n = k != NULL ? hhash_len(k) : 0;
    resp_reply_array(c->out, (size_t)n * (names + values));
    for (uint32_t i = 0; i < n; i++) {
        const struct hfield *f = hhash_at(k, i);
        if (names)
            resp_reply_bulk(c->out, f->name, f->len);
        if (values)
            hero_reply_val(c->out, f->value.p, f->value.len);
    }
}

void
hero_cmd_hgetall(struct hero_call *c)
{
    hero_hash_walk(c, true, true);
}

void
hero_cmd_hkeys(struct hero_call *c)
{
    hero_hash_walk(c, true, false);
}

void
hero_cmd_hvals(struct hero_call *c)
{
    hero_hash_walk(c, false, true);
}

void
hero_cmd_hdel(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (wrong)
        return;
    int64_t n = 0;
    for (size_t i = 2; k != NULL && i < c->argc; i++) {
        if (hhash_get(k, c->argv[i].p, c->argv[i].n) == NULL)
            continue;
        hero_log_hdel(c->h, k, c->argv[i].p, c->argv[i].n);
        n += hhash_del(c->h->store, k, c->argv[i].p, c->argv[i].n);
    }
    if (k != NULL)
        hero_key_drop_empty(c, k);
    resp_reply_integer(c->out, n);
}

void
hero_cmd_hexists(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (!wrong)
        resp_reply_integer(c->out, k != NULL && hhash_get(k, c->argv[2].p, c->argv[2].n) != NULL);
}

void
hero_cmd_hlen(struct hero_call *c)
{
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (!wrong)
        resp_reply_integer(c->out, k != NULL ? hhash_len(k) : 0);
}

/* HINCRBY key field increment: the new value. */
void
hero_cmd_hincrby(struct hero_call *c)
{
    int64_t by, was = 0;
    if (!hero_parse_i64(&c->argv[3], &by)) {
        hero_err_not_integer(c->out);
        return;
    }
    bool wrong;
    struct hkey *k = hero_hash(c, false, &wrong);
    if (wrong)
        return;
    const struct hval *v = k != NULL ? hhash_get(k, c->argv[2].p, c->argv[2].n) : NULL;
    if (v != NULL && !hero_parse_i64(&(struct wq_str){v->p, v->len}, &was)) {
        hero_err(c->out, "hash value is not an integer");
        return;
    }
    int64_t now;
    if (__builtin_add_overflow(was, by, &now)) {
        hero_err(c->out, "increment or decrement would overflow");
        return;
    }
    if (k == NULL)
        k = hstore_create(c->h->store, c->argv[1].p, c->argv[1].n, HKEY_HASH);
    char text[24];
    int n = snprintf(text, sizeof text, "%" PRId64, now);
    if (hhash_set(c->h->store, k, c->argv[2].p, c->argv[2].n, text, (size_t)n) < 0) {
        reply_str(c->out, HERO_OOM);
        hero_key_drop_empty(c, k);
        return;
    }
    hero_log_hset(c->h, k, &c->argv[2], text, (size_t)n);
    resp_reply_integer(c->out, now);
}
