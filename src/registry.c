/* registry.c - keyed-hash open-addressing table. */
#include "wq.h"
#include "registry.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"

/* One open-addressing table. */
struct table {
    void    **slots;
    uint64_t *hashes; /* cached hash per slot: growth never re-hashes */
    size_t    mask;   /* capacity - 1; capacity is a power of two */
};

/* Growth is incremental: when the table fills up, a table twice the size
 * takes every insert, and each insert also moves a few slots' worth of the
 * old table across, so no single command pays for a whole rehash.  While
 * that lasts, lookups try both tables. */
struct registry {
    struct table    cur;
    struct table    old;    /* being emptied into cur; slots NULL when not */
    size_t          cursor; /* old's slots below this are empty */
    size_t          count;
    registry_key_fn key_of;
    uint8_t         key[16];
};

#define REGISTRY_MIN_CAP 16
/* Old slots visited per insert while growing: with the new table twice the
 * old one, the move ends long before the new table is half full. */
#define REGISTRY_MOVE_STEPS 8

static inline uint64_t
rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

static inline uint64_t
load64_le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t
registry_siphash(const uint8_t k[16], const void *data, size_t len)
{
    const uint8_t *in = data;
    uint64_t k0 = load64_le(k), k1 = load64_le(k + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
    uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
    uint64_t v3 = 0x7465646279746573ULL ^ k1;
    size_t whole = len - len % 8;

    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load64_le(in + i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)in[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static void
table_init(struct table *t, size_t cap)
{
    t->slots = wq_calloc(cap, sizeof *t->slots);
    t->hashes = wq_calloc(cap, sizeof *t->hashes);
    t->mask = cap - 1;
}

static void
table_clear(struct table *t)
{
    wq_free(t->slots);
    wq_free(t->hashes);
    t->slots = NULL;
    t->hashes = NULL;
    t->mask = 0;
}

struct registry *
registry_new(registry_key_fn key_of)
{
    struct registry *r = wq_calloc(1, sizeof *r);
    table_init(&r->cur, REGISTRY_MIN_CAP);
    r->key_of = key_of;
    if (getrandom(r->key, sizeof r->key, GRND_NONBLOCK) != (ssize_t)sizeof r->key) {
        /* No entropy yet (early boot): still unpredictable enough to a remote client. */
        uint64_t seed[2] = {(uint64_t)time(NULL) ^ (uint64_t)getpid(), (uint64_t)(uintptr_t)r};
        memcpy(r->key, seed, sizeof r->key);
    }
    return r;
}

void
registry_free(struct registry *r)
{
    if (r == NULL)
        return;
    table_clear(&r->cur);
    table_clear(&r->old);
    wq_free(r);
}

size_t
registry_count(const struct registry *r)
{
    return r->count;
}

static inline uint64_t
registry_hash_of(const struct registry *r, const void *elem)
{
    const void *key;
    size_t len;
    r->key_of(elem, &key, &len);
    return registry_siphash(r->key, key, len);
}

/* The slot of t holding key, or the empty slot where it would go. */
static size_t
table_probe(const struct registry *r, const struct table *t, const void *key, size_t len,
            uint64_t h)
{
    size_t i = h & t->mask;
    for (;;) {
        void *e = t->slots[i];
        if (e == NULL)
            return i;
        if (t->hashes[i] == h) {
            const void *k;
            size_t klen;
            r->key_of(e, &k, &klen);
            if (klen == len && memcmp(k, key, len) == 0)
                return i;
        }
        i = (i + 1) & t->mask;
    }
}

static void
table_place(struct table *t, void *elem, uint64_t h)
{
    size_t i = h & t->mask;
    while (t->slots[i] != NULL)
        i = (i + 1) & t->mask;
    t->slots[i] = elem;
    t->hashes[i] = h;
}

/* Empty slot i of t by backward-shift deletion: pull later members of the
 * run into the hole when their home slot does not lie cyclically in
 * (hole, j].  Elements only ever move to lower positions of their run. */
static void
table_delete_at(struct table *t, size_t i)
{
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        if (t->slots[j] == NULL)
            break;
        size_t home = t->hashes[j] & t->mask;
        bool in_between = (hole <= j) ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!in_between) {
            t->slots[hole] = t->slots[j];
            t->hashes[hole] = t->hashes[j];
            hole = j;
        }
    }
    t->slots[hole] = NULL;
}

/* Move up to `steps` slots' worth of the old table into cur; free the old
 * table once it is empty.  Deleting at the cursor keeps every slot below it
 * empty, so no run of the old table ever wraps into the part already done. */
static void
registry_move(struct registry *r, size_t steps)
{
    struct table *o = &r->old;
    while (o->slots != NULL && steps-- > 0) {
        if (r->cursor > o->mask) {
            table_clear(o);
            return;
        }
        void *e = o->slots[r->cursor];
        if (e == NULL) {
            r->cursor++;
            continue;
        }
        table_place(&r->cur, e, o->hashes[r->cursor]);
        table_delete_at(o, r->cursor); /* may pull another element to the cursor */
    }
}

void *
registry_find(const struct registry *r, const void *key, size_t len)
{
    uint64_t h = registry_siphash(r->key, key, len);
    void *e = r->cur.slots[table_probe(r, &r->cur, key, len, h)];
    if (e == NULL && r->old.slots != NULL)
        e = r->old.slots[table_probe(r, &r->old, key, len, h)];
    return e;
}

void
registry_insert(struct registry *r, void *elem)
{
    /* Keep the load factor at or below 1/2 so probe runs stay short. */
    if ((r->count + 1) * 2 > r->cur.mask + 1) {
        registry_move(r, SIZE_MAX); /* a move still going (rare): finish it */
        r->old = r->cur;
        table_init(&r->cur, (r->old.mask + 1) * 2);
        r->cursor = 0;
    }
    registry_move(r, REGISTRY_MOVE_STEPS);
    table_place(&r->cur, elem, registry_hash_of(r, elem));
    r->count++;
}

void *
registry_remove(struct registry *r, const void *key, size_t len)
{
    uint64_t h = registry_siphash(r->key, key, len);
    struct table *t = &r->cur;
    size_t i = table_probe(r, t, key, len, h);
    if (t->slots[i] == NULL && r->old.slots != NULL) {
        t = &r->old;
        i = table_probe(r, t, key, len, h);
    }
    void *elem = t->slots[i];
    if (elem == NULL)
        return NULL;
    table_delete_at(t, i);
    r->count--;
    return elem;
}

static void
table_foreach(const struct table *t, void (*fn)(void *elem, void *arg), void *arg)
{
    for (size_t i = 0; t->slots != NULL && i <= t->mask; i++) {
        if (t->slots[i] != NULL)
            fn(t->slots[i], arg);
    }
}

void
registry_foreach(const struct registry *r, void (*fn)(void *elem, void *arg), void *arg)
{
    table_foreach(&r->cur, fn, arg);
    table_foreach(&r->old, fn, arg);
}
