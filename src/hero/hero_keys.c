/* hero_keys.c - the commands on keys of any type, as Redis 7 answers them:
 * KEYS, SCAN, EXISTS, DEL and UNLINK, TYPE, EXPIRE, PEXPIRE, TTL, PTTL,
 * PERSIST. */
#include "lib/wq.h"
#include "hero/hero.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/glob.h"
#include "net/reply.h"
#include "net/resp_reply.h"

/* Has k's time come (it is gone to every command)? */
static bool
hero_key_past(const struct hkey *k, uint64_t now_ms)
{
    return k->expire_ms != 0 && k->expire_ms <= now_ms;
}

static const char *
hero_type_name(const struct hkey *k)
{
    return k->type == HKEY_HASH ? "hash" : "list";
}

/* KEYS pattern: every key that matches, in no order. */
void
hero_cmd_keys(struct hero_call *c)
{
    struct glob *g = glob_new(c->argv[1].p, c->argv[1].n, 0);
    size_t n = 0;
    for (struct hkey *k = hstore_scan(c->h->store, 0); k != NULL;
         k = hstore_scan_next(c->h->store, k))
        n += !hero_key_past(k, c->now_ms) && glob_match(g, k->key, k->len);
    resp_reply_array(c->out, n);
    for (struct hkey *k = hstore_scan(c->h->store, 0); k != NULL;
         k = hstore_scan_next(c->h->store, k))
        if (!hero_key_past(k, c->now_ms) && glob_match(g, k->key, k->len))
            resp_reply_bulk(c->out, k->key, k->len);
    glob_free(g);
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: COUNT keys looked at
 * from the cursor on, those that match answered with the cursor to go on
 * from ("0": done).  A key there all along is returned once. */
void
hero_cmd_scan(struct hero_call *c)
{
    const struct wq_str *cur = &c->argv[1];
    char digits[24];
    char *end;
    if (cur->n == 0 || cur->n >= sizeof digits || cur->p[0] == '-' || cur->p[0] == '+' ||
        cur->p[0] == ' ') {
        hero_err(c->out, "invalid cursor");
        return;
    }
    memcpy(digits, cur->p, cur->n);
    digits[cur->n] = '\0';
    errno = 0;
    uint64_t cursor = strtoull(digits, &end, 10);
    if (errno != 0 || *end != '\0') {
        hero_err(c->out, "invalid cursor");
        return;
    }
    const struct wq_str *match = NULL, *type = NULL;
    int64_t count = 10;
    for (size_t i = 2; i < c->argc; i += 2) {
        const struct wq_str *o = &c->argv[i];
        if (i + 1 == c->argc) {
            hero_err_syntax(c->out);
            return;
        }
        if (o->n == 5 && strncasecmp(o->p, "match", 5) == 0) {
            match = &c->argv[i + 1];
        } else if (o->n == 5 && strncasecmp(o->p, "count", 5) == 0) {
            if (!hero_parse_i64(&c->argv[i + 1], &count)) {
                hero_err_not_integer(c->out);
                return;
            }
            if (count < 1) {
                hero_err_syntax(c->out);
                return;
            }
        } else if (o->n == 4 && strncasecmp(o->p, "type", 4) == 0) {
            type = &c->argv[i + 1];
        } else {
            hero_err_syntax(c->out);
            return;
        }
    }
    struct glob *g = match != NULL ? glob_new(match->p, match->n, 0) : NULL;
    struct hkey *k = hstore_scan(c->h->store, cursor);
    struct hkey *found[64];
    size_t n = 0, cap = WQ_ARRAY_LEN(found);
    struct hkey **keys = found;
    for (int64_t seen = 0; k != NULL && seen < count;
         seen++, k = hstore_scan_next(c->h->store, k)) {
        if (hero_key_past(k, c->now_ms) || (g != NULL && !glob_match(g, k->key, k->len)))
            continue;
        if (type != NULL && (strlen(hero_type_name(k)) != type->n ||
                             strncasecmp(hero_type_name(k), type->p, type->n) != 0))
            continue;
        if (n == cap) {
            cap *= 2;
            struct hkey **more = wq_malloc(cap * sizeof *more);
            memcpy(more, keys, n * sizeof *more);
            if (keys != found)
                wq_free(keys);
            keys = more;
        }
        keys[n++] = k;
    }
    glob_free(g);
    char next[24];
    int len = snprintf(next, sizeof next, "%" PRIu64, k != NULL ? hstore_cursor(k) : 0);
    resp_reply_array(c->out, 2);
    resp_reply_bulk(c->out, next, (size_t)len);
    resp_reply_array(c->out, n);
    for (size_t i = 0; i < n; i++)
        resp_reply_bulk(c->out, keys[i]->key, keys[i]->len);
    if (keys != found)
        wq_free(keys);
}

/* EXISTS key...: how many of them exist (a key named twice counts twice). */
void
hero_cmd_exists(struct hero_call *c)
{
    int64_t n = 0;
    for (size_t i = 1; i < c->argc; i++)
        n += hstore_find(c->h->store, c->argv[i].p, c->argv[i].n, c->now_ms) != NULL;
    resp_reply_integer(c->out, n);
}

/* DEL and UNLINK key...: how many were deleted. */
void
hero_cmd_del(struct hero_call *c)
{
    int64_t n = 0;
    for (size_t i = 1; i < c->argc; i++) {
        struct hkey *k = hstore_find(c->h->store, c->argv[i].p, c->argv[i].n, c->now_ms);
        if (k != NULL) {
            hero_key_delete(c->h, k);
            n++;
        }
    }
    resp_reply_integer(c->out, n);
}

void
hero_cmd_type(struct hero_call *c)
{
    struct hkey *k = hstore_find(c->h->store, c->argv[1].p, c->argv[1].n, c->now_ms);
    resp_reply_simple(c->out, k != NULL ? hero_type_name(k) : "none");
}

/* EXPIRE and PEXPIRE key time [NX|XX|GT|LT], unit ms to a unit of time. */
static void
hero_expire(struct hero_call *c, uint64_t unit, const char *name)
{
    bool nx = false, xx = false, gt = false, lt = false;
    for (size_t i = 3; i < c->argc; i++) {
        const struct wq_str *o = &c->argv[i];
        if (o->n == 2 && strncasecmp(o->p, "nx", 2) == 0) {
            nx = true;
        } else if (o->n == 2 && strncasecmp(o->p, "xx", 2) == 0) {
            xx = true;
        } else if (o->n == 2 && strncasecmp(o->p, "gt", 2) == 0) {
            gt = true;
        } else if (o->n == 2 && strncasecmp(o->p, "lt", 2) == 0) {
            lt = true;
        } else {
            char text[200];
            snprintf(text, sizeof text, "Unsupported option %.*s", (int)WQ_MIN(o->n, 128), o->p);
            hero_err(c->out, text);
            return;
        }
    }
    if (nx && (xx || gt || lt)) {
        hero_err(c->out, "NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if (gt && lt) {
        hero_err(c->out, "GT and LT options at the same time are not compatible");
        return;
    }
    int64_t t;
    if (!hero_parse_i64(&c->argv[2], &t)) {
        hero_err_not_integer(c->out);
        return;
    }
    /* the time in Unix ms, as Redis bounds it */
    int64_t ms, at;
    if (__builtin_mul_overflow(t, (int64_t)unit, &ms) ||
        __builtin_add_overflow(ms, (int64_t)c->now_ms, &at)) {
        char text[80];
        snprintf(text, sizeof text, "invalid expire time in '%s' command", name);
        hero_err(c->out, text);
        return;
    }
    struct hkey *k = hstore_find(c->h->store, c->argv[1].p, c->argv[1].n, c->now_ms);
    if (k == NULL) {
        resp_reply_integer(c->out, 0);
        return;
    }
    bool has = k->expire_ms != 0;
    /* no time counts as forever for GT and LT */
    if ((nx && has) || (xx && !has) || (gt && (!has || at <= (int64_t)k->expire_ms)) ||
        (lt && has && at >= (int64_t)k->expire_ms)) {
        resp_reply_integer(c->out, 0);
        return;
    }
    if (at <= (int64_t)c->now_ms) {
        hero_key_delete(c->h, k);
    } else {
        hero_log_expire(c->h, k, (uint64_t)at);
        hstore_set_expiry(c->h->store, k, (uint64_t)at);
        hero_expiry_arm(c->h);
    }
    resp_reply_integer(c->out, 1);
}

void
hero_cmd_expire(struct hero_call *c)
{
    hero_expire(c, 1000, "expire");
}

void
hero_cmd_pexpire(struct hero_call *c)
{
    hero_expire(c, 1, "pexpire");
}

/* The time left to k in ms: -2 no key, -1 no expiry. */
static int64_t
hero_ttl_ms(struct hero_call *c)
{
    struct hkey *k = hstore_find(c->h->store, c->argv[1].p, c->argv[1].n, c->now_ms);
    if (k == NULL)
        return -2;
    if (k->expire_ms == 0)
        return -1;
    return (int64_t)(k->expire_ms - c->now_ms);
}

void
hero_cmd_ttl(struct hero_call *c)
{
    int64_t ms = hero_ttl_ms(c);
    resp_reply_integer(c->out, ms < 0 ? ms : (ms + 500) / 1000);
}

void
hero_cmd_pttl(struct hero_call *c)
{
    resp_reply_integer(c->out, hero_ttl_ms(c));
}

void
hero_cmd_persist(struct hero_call *c)
{
    struct hkey *k = hstore_find(c->h->store, c->argv[1].p, c->argv[1].n, c->now_ms);
    if (k == NULL || k->expire_ms == 0) {
        resp_reply_integer(c->out, 0);
        return;
    }
    hero_log_expire(c->h, k, 0);
    hstore_set_expiry(c->h->store, k, 0);
    resp_reply_integer(c->out, 1);
}
