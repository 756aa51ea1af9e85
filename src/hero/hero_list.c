/* hero_list.c - the list commands, as Redis 7 answers them: LPUSH, RPUSH,
 * LPOP, RPOP (with a count), LLEN, LRANGE, LINDEX, LREM, LTRIM, and the
 * blocking pops BLPOP and BRPOP.  A client blocked on keys waits in each
 * key's line; a push serves the lines' first clients, first come first
 * served, once the pushing command is done (so its reply counts what it
 * pushed). */
#include "lib/wq.h"
#include "hero/hero.h"

#include <errno.h>
#include <event2/event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/registry.h"
#include "net/conn.h"
#include "net/reply.h"
#include "net/resp_reply.h"

/* The clients blocked on one key, first come first. */
struct hero_line {
    struct list waiters; /* struct hero_wait.link */
    uint32_t len;
    char key[];
};

/* A blocked client's place in one key's line. */
struct hero_wait {
    struct list link;
    struct hero_line *line;
    struct hero_block *block;
};

/* A blocked BLPOP or BRPOP. */
struct hero_block {
    struct hero_ctx *h;
    struct hero_conn *st;
    struct reply *out;
    struct event *timer; /* NULL: it waits for ever */
    bool left;
    size_t n;
    struct hero_wait w[];
};

static void
hero_line_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_line *l = elem;
    *key = l->key;
    *len = l->len;
}

/* The list at argv[i], or NULL when there is none or it is not a list
 * (answered). */
static struct hkey *
hero_list(struct hero_call *c, size_t i, bool *wrong)
{
    return hero_key(c, &c->argv[i], HKEY_LIST, wrong);
}

/* Take b out of every line it waits in and free it. */
static void
hero_block_free(struct hero_ctx *h, struct hero_block *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct hero_line *l = b->w[i].line;
        list_unlink(&b->w[i].link);
        if (list_empty(&l->waiters)) {
            registry_remove(h->blocked, l->key, l->len);
            wq_free(l);
        }
    }
    if (b->timer != NULL)
        event_free(b->timer);
    b->st->block = NULL;
    wq_free(b);
}

void
hero_block_cancel(struct hero_ctx *h, struct hero_block *b)
{
    hero_block_free(h, b);
    h->nblocked--;
}

size_t
hero_blocked_count(const struct hero_ctx *h)
{
    return h->nblocked;
}

void
hero_blocked_free(struct hero_ctx *h)
{
    registry_free(h->blocked); /* its clients are gone: their lines with them */
    h->blocked = NULL;
}

/* Take the value at the head or the tail of k, logged. */
static struct hval
hero_list_pop(struct hero_ctx *h, struct hkey *k, bool left)
{
    struct hval v = hlst_pop(h->store, k, left);
    hero_log_pop(h, k, v.seq);
    return v;
}

/* Answer a pop: the key and the value, which is then freed. */
static void
hero_reply_popped(struct reply *out, const struct hkey *k, struct hval v)
{
    resp_reply_array(out, 2);
    resp_reply_bulk(out, k->key, k->len);
    hero_reply_val(out, v.p, v.len);
    hstore_val_free(v);
}

/* Take the value at the head or the tail of *kp for st, logged: on a work
 * queue, the nearest a job may be handed out of (one whose prerequisite
 * failed leaves the list on the way, and what that fails in turn may
 * empty the list: *kp is then NULL).  False when there is none. */
static bool
hero_list_take(struct hero_ctx *h, struct hero_conn *st, struct hkey **kp, bool left,
               struct hval *out)
{
    struct hkey *k = *kp;
    if (!hero_is_work_queue(k)) {
        if (hlst_len(k) == 0)
            return false;
        *out = hero_list_pop(h, k, left);
        return true;
    }
    char name[256]; /* a work queue's name is no longer */
    size_t len = k->len;
    memcpy(name, k->key, len);
    for (;;) {
        uint32_t n = hlst_len(k), i = 0;
        struct hero_failed failed;
        enum hero_ready r = HERO_WAITS;
        for (uint32_t j = 0; j < n && r == HERO_WAITS; j++) {
            i = left ? j : n - 1 - j;
            r = hero_jobs_ready(h, hlst_at(k, i), &failed);
        }
        if (r == HERO_WAITS) {
            if (n == 0) { /* emptied by the failures above */
                hero_key_delete(h, k);
                *kp = NULL;
            }
            return false;
        }
        struct hval v = hlst_take(h->store, k, i);
        hero_log_pop(h, k, v.seq);
        if (r == HERO_READY) {
            hero_jobs_taken(h, st, k, &v);
            *out = v;
            return true;
        }
        /* failed: out of the list, and marked so; what that fails in turn
         * may change the list, or delete it: look again */
        hero_jobs_fail_prereq(h, v.p, v.len, &failed);
        hstore_val_free(v);
        k = *kp = hstore_peek(h->store, name, len);
        if (k == NULL || k->type != HKEY_LIST) {
            *kp = NULL;
            return false;
        }
    }
}

/* k may have something for its blocked clients: they take it, first come
 * first served; an emptied key goes. */
static void
hero_serve(struct hero_ctx *h, struct hkey *k)
{
    struct hero_line *l;
    struct hval v;
    while (h->blocked != NULL && (l = registry_find(h->blocked, k->key, k->len)) != NULL) {
        struct hero_block *b = list_item(l->waiters.next, struct hero_wait, link)->block;
        if (!hero_list_take(h, b->st, &k, b->left, &v))
            break;
        struct reply *out = b->out;
        hero_reply_popped(out, k, v);
        hero_block_free(h, b);
        h->nblocked--;
        reply_wake(out);
    }
    if (k != NULL && hlst_len(k) == 0)
        hero_key_delete(h, k);
}

void
hero_serve_key(struct hero_ctx *h, struct wq_str key)
{
    struct hkey *k = hstore_peek(h->store, key.p, key.n);
    if (k != NULL && k->type == HKEY_LIST)
        hero_serve(h, k);
}

uint64_t
hero_requeue_push(struct hero_ctx *h, struct wq_str queue, const char *id, size_t n)
{
    struct hkey *k = hstore_peek(h->store, queue.p, queue.n);
    if (k != NULL && k->type != HKEY_LIST)
        return 0; /* the name is another type's now */
    bool made = k == NULL;
    if (made)
        k = hstore_create(h->store, queue.p, queue.n, HKEY_LIST);
    if (hlst_push(h->store, k, true, id, n, 0) != 0) {
        if (made)
            hstore_delete(h->store, k);
        return 0;
    }
    hero_log_push(h, k, hlst_at(k, 0), true, true);
    return hlst_at(k, 0)->seq;
}

/* hstore_gone_fn: a value left a list by LREM or LTRIM. */
static void
hero_list_gone(void *arg, const struct hkey *k, const struct hval *v)
{
    hero_log_gone(arg, k, v);
    hero_jobs_withdrawn(arg, k, v);
}

/* LPUSH and RPUSH key value...: the list's length. */
static void
hero_push(struct hero_call *c, bool left)
{
    bool wrong;
    struct hkey *k = hero_list(c, 1, &wrong);
    if (wrong)
        return;
    struct hero_ctx *h = c->h;
    if (k == NULL)
        k = hstore_create(h->store, c->argv[1].p, c->argv[1].n, HKEY_LIST);
    for (size_t i = 2; i < c->argc; i++) {
        const struct wq_str *v = &c->argv[i];
        enum hero_submit sub = hero_jobs_submit(h, k, v->p, v->n);
        if (sub == HERO_DUPLICATE)
            continue;
        if (hlst_push(h->store, k, left, v->p, v->n, 0) != 0) {
            if (sub == HERO_SUBMITTED)
                hero_jobs_unsubmit(h, v->p, v->n); /* its element never came */
            reply_str(c->out, HERO_OOM);
            hero_serve(h, k);
            return;
        }
        hero_log_push(h, k, hlst_at(k, left ? 0 : hlst_len(k) - 1), left, sub == HERO_SUBMITTED);
    }
    resp_reply_integer(c->out, hlst_len(k));
    for (size_t i = 2; i < c->argc; i++)
        hero_jobs_stop(h, k, c->argv[i].p, c->argv[i].n);
    hero_serve(h, k);
}

void
hero_cmd_lpush(struct hero_call *c)
{
    hero_push(c, true);
}

void
hero_cmd_rpush(struct hero_call *c)
{
    hero_push(c, false);
}

/* LPOP and RPOP key [count]. */
static void
hero_pop(struct hero_call *c, bool left)
{
    int64_t count = 1;
    if (c->argc > 3) {
        hero_err_arity(c->out, left ? "lpop" : "rpop");
        return;
    }
    if (c->argc == 3) {
        if (!hero_parse_i64(&c->argv[2], &count) || count < 0) {
            hero_err(c->out, "value is out of range, must be positive");
            return;
        }
    }
    bool wrong;
    struct hkey *k = hero_list(c, 1, &wrong);
    if (wrong)
        return;
    if (k == NULL) {
        if (c->argc == 3)
            resp_reply_null_array(c->out);
        else
            resp_reply_null(c->out);
        return;
    }
    struct hval v;
    if (c->argc == 2) {
        if (hero_list_take(c->h, c->st, &k, left, &v)) {
            hero_reply_val(c->out, v.p, v.len);
            hstore_val_free(v);
        } else {
            resp_reply_null(c->out);
        }
    } else {
        /* a work queue's jobs that wait are passed over: take first, then
         * answer */
        uint64_t n = 0, want = WQ_MIN((uint64_t)count, hlst_len(k));
        struct hval *got = wq_malloc((want ? want : 1) * sizeof *got);
        while (n < want && k != NULL && hero_list_take(c->h, c->st, &k, left, &got[n]))
            n++;
        resp_reply_array(c->out, n);
        for (uint64_t i = 0; i < n; i++) {
            hero_reply_val(c->out, got[i].p, got[i].len);
            hstore_val_free(got[i]);
        }
        wq_free(got);
    }
    if (k != NULL && hlst_len(k) == 0)
        hero_key_delete(c->h, k);
}

void
hero_cmd_lpop(struct hero_call *c)
{
    hero_pop(c, true);
}

void
hero_cmd_rpop(struct hero_call *c)
{
    hero_pop(c, false);
}

/* A blocking pop's timeout, in seconds (a decimal), into *ms (0: for
 * ever); false when it is not one (answered). */
static bool
hero_timeout(struct hero_call *c, const struct wq_str *a, uint64_t *ms)
{
    char text[64];
    if (a->n == 0 || a->n >= sizeof text || a->p[0] == ' ' || a->p[0] == '\t') {
        hero_err(c->out, "timeout is not a float or out of range");
        return false;
    }
    memcpy(text, a->p, a->n);
    text[a->n] = '\0';
    char *end;
    errno = 0;
    long double s = strtold(text, &end);
    if (*end != '\0' || errno == ERANGE || isnan(s)) {
        hero_err(c->out, "timeout is not a float or out of range");
        return false;
    }
    if (s < 0) {
        hero_err(c->out, "timeout is negative");
        return false;
    }
    long double t = ceill(s * 1000);
    if (t > (long double)(INT64_MAX - c->now_ms)) {
        /* Redis 7.0's deadline wraps negative there: its text */
        hero_err(c->out, "timeout is negative");
        return false;
    }
    *ms = (uint64_t)t;
    return true;
}

bool
hero_check_timeout(struct hero_call *c)
{
    uint64_t ms;
    return hero_timeout(c, &c->argv[c->argc - 1], &ms);
}

/* A blocked pop's time ran out: no array. */
static void
hero_block_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hero_block *b = arg;
    struct hero_ctx *h = b->h;
    struct hero_conn *st = b->st;
    h->hooks->begin(h->hooks->arg);
    if (st->block != b) { /* what began the batch served it */
        h->hooks->end(h->hooks->arg);
        return;
    }
    struct reply *out = b->out;
    resp_reply_null_array(out);
    hero_block_free(h, b);
    h->nblocked--;
    reply_wake(out);
    h->hooks->end(h->hooks->arg);
}

/* Wait in the line of every key of argv[1..argc-1) for ms (0: ever). */
static void
hero_block(struct hero_call *c, bool left, uint64_t ms)
{
    struct hero_ctx *h = c->h;
    size_t n = c->argc - 2;
    struct hero_block *b = wq_calloc(1, sizeof *b + n * sizeof b->w[0]);
    *b = (struct hero_block){.h = h, .st = c->st, .out = c->out, .left = left};
    if (h->blocked == NULL)
        h->blocked = registry_new(hero_line_key);
    for (size_t i = 0; i < n; i++) {
        const struct wq_str *k = &c->argv[1 + i];
        struct hero_line *l = registry_find(h->blocked, k->p, k->n);
        if (l == NULL) {
            l = wq_malloc(sizeof *l + k->n);
            list_init(&l->waiters);
            l->len = (uint32_t)k->n;
            memcpy(l->key, k->p, k->n);
            registry_insert(h->blocked, l);
        } else {
            /* a key named twice waits once */
            bool again = false;
            for (size_t j = 0; j < b->n && !again; j++)
                again = b->w[j].line == l;
            if (again)
                continue;
        }
        b->w[b->n] = (struct hero_wait){.line = l, .block = b};
        list_push_back(&l->waiters, &b->w[b->n].link);
        b->n++;
    }
    if (ms > 0 && h->base != NULL) {
        b->timer = event_new(h->base, -1, 0, hero_block_timeout, b);
        struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
        event_add(b->timer, &tv);
    }
    c->st->block = b;
    h->nblocked++;
    reply_park(c->out, b);
}

/* BLPOP and BRPOP key... timeout: the first non-empty list's head or
 * tail, or wait for one. */
static void
hero_bpop(struct hero_call *c, bool left)
{
    uint64_t ms;
    if (!hero_timeout(c, &c->argv[c->argc - 1], &ms))
        return;
    for (size_t i = 1; i + 1 < c->argc; i++) {
        bool wrong;
        struct hkey *k = hero_list(c, i, &wrong);
        if (wrong)
            return;
        struct hval v;
        if (k != NULL && hero_list_take(c->h, c->st, &k, left, &v)) {
            hero_reply_popped(c->out, k, v);
            hero_key_drop_empty(c, k);
            return;
        }
    }
    hero_block(c, left, ms);
}

void
hero_cmd_blpop(struct hero_call *c)
{
    hero_bpop(c, true);
}

void
hero_cmd_brpop(struct hero_call *c)
{
    hero_bpop(c, false);
}

/* The list at argv[1] and the n integers that follow it: false when
 * answered (one is not an integer, the key is not a list); *k is NULL when
 * there is no such key. */
static bool
hero_list_args(struct hero_call *c, size_t n, int64_t *ints, struct hkey **k)
{
    for (size_t i = 0; i < n; i++) {
        if (!hero_parse_i64(&c->argv[2 + i], &ints[i])) {
            hero_err_not_integer(c->out);
            return false;
        }
    }
    bool wrong;
    *k = hero_list(c, 1, &wrong);
    return !wrong;
}

/* Redis's index: negative from the end. */
static int64_t
hero_index(int64_t i, uint32_t len)
{
    return i < 0 ? (int64_t)len + i : i;
}

/* Redis's range [r[0], r[1]] of a list of len elements, brought within the
 * list: false when nothing of the list is in it. */
static bool
hero_range(int64_t r[2], uint32_t len)
{
    r[0] = WQ_MAX(hero_index(r[0], len), 0);
    r[1] = WQ_MIN(hero_index(r[1], len), (int64_t)len - 1);
    return r[0] <= r[1];
}

void
hero_cmd_llen(struct hero_call *c)
{
    struct hkey *k;
    if (hero_list_args(c, 0, NULL, &k))
        resp_reply_integer(c->out, k != NULL ? hlst_len(k) : 0);
}

void
hero_cmd_lrange(struct hero_call *c)
{
    int64_t r[2];
    struct hkey *k;
    if (!hero_list_args(c, 2, r, &k))
        return;
    if (k == NULL || !hero_range(r, hlst_len(k))) {
        resp_reply_array(c->out, 0);
        return;
    }
    resp_reply_array(c->out, (size_t)(r[1] - r[0] + 1));
    for (int64_t i = r[0]; i <= r[1]; i++) {
        const struct hval *v = hlst_at(k, (uint32_t)i);
        hero_reply_val(c->out, v->p, v->len);
    }
}

void
hero_cmd_lindex(struct hero_call *c)
{
    /* as Redis: the key first, then the index (nil for no key, whatever
     * the index) */
    int64_t i;
    struct hkey *k;
    if (!hero_list_args(c, 0, NULL, &k))
        return;
    if (k == NULL) {
        resp_reply_null(c->out);
        return;
    }
    if (!hero_parse_i64(&c->argv[2], &i)) {
        hero_err_not_integer(c->out);
        return;
    }
    i = hero_index(i, hlst_len(k));
    if (i < 0 || i >= (int64_t)hlst_len(k)) {
        resp_reply_null(c->out);
        return;
    }
    const struct hval *v = hlst_at(k, (uint32_t)i);
    hero_reply_val(c->out, v->p, v->len);
}

void
hero_cmd_lrem(struct hero_call *c)
{
    int64_t count;
    struct hkey *k;
    if (!hero_list_args(c, 1, &count, &k))
        return;
    uint32_t n = 0;
    if (k != NULL) {
        n = hlst_rem(c->h->store, k, count, c->argv[3].p, c->argv[3].n, hero_list_gone, c->h);
        hero_key_drop_empty(c, k);
    }
    resp_reply_integer(c->out, n);
}

void
hero_cmd_ltrim(struct hero_call *c)
{
    int64_t r[2];
    struct hkey *k;
    if (!hero_list_args(c, 2, r, &k))
        return;
    if (k != NULL) {
        if (hero_range(r, hlst_len(k)))
            hlst_trim(c->h->store, k, (uint32_t)r[0], (uint32_t)r[1], hero_list_gone, c->h);
        else
            hero_key_delete(c->h, k);
    }
    resp_reply_ok(c->out);
}
