/* hero_log.c - the Hero keys in the command log (records 48 to 52,
 * doc/cmdlog.md): each change to the store is a record written before it
 * is made, and replay makes it again.  A field set and an expiry given
 * supersede the earlier records of that field or key; a field removed, a
 * list element gone (by its number) and an expiry ended close them, so
 * cleaning keeps what the store holds now. */
#include "lib/wq.h"
#include "hero/hero.h"

#include <string.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/registry.h"
#include "store/cmdlog_codec.h"

/* Append r if the server keeps a log (the core's record hook). */
static void
hero_record(struct hero_ctx *h, struct cmdlog_rec *r)
{
    struct core *c = h->core;
    if (c->record == NULL)
        return;
    r->at_ms = (int64_t)c->now_ms;
    c->record(c->record_arg, r);
}

void
hero_log_hset(struct hero_ctx *h, const struct hkey *k, const struct wq_str *f, const char *v,
              size_t n)
{
    struct cmdlog_rec r = {
        .code = CMDLOG_H_HSET, .jid = {k->key, k->len}, .name = *f, .payload = {v, n}};
    hero_record(h, &r);
}

void
hero_log_hdel(struct hero_ctx *h, const struct hkey *k, const char *f, size_t n)
{
    struct cmdlog_rec r = {.code = CMDLOG_H_HDEL, .jid = {k->key, k->len}, .name = {f, n}};
    hero_record(h, &r);
}

void
hero_log_push(struct hero_ctx *h, const struct hkey *k, const struct hval *v, bool left, bool job)
{
    struct cmdlog_rec r = {.code = CMDLOG_H_PUSH,
                           .jid = {k->key, k->len},
                           .seq = v->seq,
                           .left = left,
                           .job = job,
                           .payload = {v->p, v->len}};
    hero_record(h, &r);
}

void
hero_log_pop(struct hero_ctx *h, const struct hkey *k, uint64_t seq)
{
    struct cmdlog_rec r = {.code = CMDLOG_H_POP, .jid = {k->key, k->len}, .seq = seq};
    hero_record(h, &r);
}

/* hstore_gone_fn: a value left a list (LREM, LTRIM). */
void
hero_log_gone(void *arg, const struct hkey *k, const struct hval *v)
{
    hero_log_pop(arg, k, v->seq);
}

void
hero_log_expire(struct hero_ctx *h, const struct hkey *k, uint64_t at_ms)
{
    struct cmdlog_rec r = {.code = CMDLOG_H_EXPIRE,
                           .jid = {k->key, k->len},
                           .timed = at_ms != 0,
                           .time_ms = (int64_t)at_ms};
    hero_record(h, &r);
}

void
hero_log_key_gone(struct hero_ctx *h, const struct hkey *k)
{
    if (h->core->record == NULL)
        return;
    if (k->type == HKEY_HASH)
        for (uint32_t i = 0; i < hhash_len(k); i++)
            hero_log_hdel(h, k, hhash_at(k, i)->name, hhash_at(k, i)->len);
    else
        for (uint32_t i = 0; i < hlst_len(k); i++)
            hero_log_pop(h, k, hlst_at(k, i)->seq);
    if (k->expire_ms != 0)
        hero_log_expire(h, k, 0);
}

/* An expiry read before its key, by the key's bytes. */
struct hero_later {
    uint64_t at_ms; /* 0: none (an end) */
    uint32_t len;
    char key[];
};

static void
hero_later_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_later *l = elem;
    *key = l->key;
    *len = l->len;
}

/* Keep r's expiry (or its end) until the log is read. */
static void
hero_replay_expiry_later(struct hero_ctx *h, const struct cmdlog_rec *r)
{
    if (h->expiring == NULL)
        h->expiring = registry_new(hero_later_key);
    struct hero_later *l = registry_find(h->expiring, r->jid.p, r->jid.n);
    if (l == NULL) {
        l = wq_malloc(sizeof *l + r->jid.n);
        l->len = (uint32_t)r->jid.n;
        memcpy(l->key, r->jid.p, r->jid.n);
        registry_insert(h->expiring, l);
    }
    l->at_ms = r->timed ? (uint64_t)WQ_MAX(r->time_ms, 1) : 0;
}

static void
hero_later_apply(void *elem, void *arg)
{
    struct hero_later *l = elem;
    struct hero_ctx *h = arg;
    struct hkey *k = hstore_peek(h->store, l->key, l->len);
    if (k != NULL && l->at_ms != 0)
        hstore_set_expiry(h->store, k, l->at_ms);
    wq_free(l);
}

void
hero_log_replay_done(struct hero_ctx *h)
{
    if (h->expiring == NULL)
        return;
    registry_foreach(h->expiring, hero_later_apply, h);
    registry_free(h->expiring);
    h->expiring = NULL;
}

/* The key a record names, made of type when missing and make is set;
 * NULL when it is missing or of another type (a foreign log). */
static struct hkey *
hero_replay_key(struct hero_ctx *h, const struct cmdlog_rec *r, enum hkey_type type, bool make)
{
    struct hstore *s = h->store;
    struct hkey *k = hstore_peek(s, r->jid.p, r->jid.n);
    if (k == NULL && make)
        k = hstore_create(s, r->jid.p, r->jid.n, type);
    return k != NULL && (type == 0 || k->type == type) ? k : NULL;
}

/* A key whose last field or element went is gone, as it was live. */
static void
hero_replay_drop_empty(struct hero_ctx *h, struct hkey *k)
{
    if ((k->type == HKEY_HASH ? hhash_len(k) : hlst_len(k)) == 0)
        hstore_delete(h->store, k);
}

void
hero_log_replay(struct hero_ctx *h, const struct cmdlog_rec *r)
{
    struct hstore *s = h->store;
    struct hkey *k;
    switch (r->code) {
    case CMDLOG_H_HSET:
        if ((k = hero_replay_key(h, r, HKEY_HASH, true)) != NULL)
            (void)hhash_set(s, k, r->name.p, r->name.n, r->payload.p, r->payload.n);
        break;
    case CMDLOG_H_HDEL:
        if ((k = hero_replay_key(h, r, HKEY_HASH, false)) != NULL) {
            hhash_del(s, k, r->name.p, r->name.n);
            hero_replay_drop_empty(h, k);
        }
        break;
    case CMDLOG_H_PUSH:
        if ((k = hero_replay_key(h, r, HKEY_LIST, true)) != NULL)
            (void)hlst_push(s, k, r->left, r->payload.p, r->payload.n, r->seq);
        break;
    case CMDLOG_H_POP:
        if ((k = hero_replay_key(h, r, HKEY_LIST, false)) != NULL) {
            uint32_t i = hlst_find_seq(k, r->seq);
            if (i < hlst_len(k))
                hstore_val_free(hlst_take(s, k, i));
            hero_replay_drop_empty(h, k);
        }
        break;
    case CMDLOG_H_EXPIRE:
        /* a time already past ends the key at the first expiry run, which
         * logs that; cleaning may leave a key's expiry before the records
         * that make the key: it waits for the end of the log */
        if ((k = hero_replay_key(h, r, 0, false)) != NULL)
            hstore_set_expiry(s, k, r->timed ? (uint64_t)WQ_MAX(r->time_ms, 1) : 0);
        else
            hero_replay_expiry_later(h, r);
        break;
    default:
        break;
    }
}
