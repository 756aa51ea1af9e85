/* registry.c - keyed-hash open-addressing table.
 *
 * A slot is one uint64_t: 0 when empty, else the element pointer in the low
 * REGISTRY_PTR_BITS bits, above them the element's distance from its home
 * slot (6 bits, 63 meaning "63 or more"), and above that the top bits of
 * the element's hash (its tag: 10 bits on 64-bit targets).  The home slot
 * comes from the hash's low bits, so the tag adds bits the probe has not
 * already matched.  A lookup dereferences an element only when its tag
 * matches: one slot in 1,024 of those probed for a missing key.  Deletion
 * finds a moved element's home from its distance; only growth (and a
 * distance of 63 or more, which at load 1/2 does not happen) recomputes a
 * hash from the element's key.  At 8 bytes a slot and a load between 1/4
 * and 1/2, an element costs 16 to 32 bytes, plus the old table while a
 * growth is under way. */
#include "lib/wq.h"
#include "lib/registry.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"

/* Pointer bits kept in a slot.  Linux keeps user-space addresses below 2^47
 * on x86-64 and below 2^48 on arm64 (even with 5-level or 52-bit address
 * spaces, unless mmap is asked for a higher address, which neither jemalloc
 * nor glibc does), so heap pointers fit in 48 bits there.  Tagged pointers
 * (arm64 MTE, Android's heap tagging) would not: registry_insert checks. */
#if UINTPTR_MAX > 0xffffffffu
#define REGISTRY_PTR_BITS 48
#else
#define REGISTRY_PTR_BITS 32
#endif
#define REGISTRY_PTR_MASK  ((UINT64_C(1) << REGISTRY_PTR_BITS) - 1)
#define REGISTRY_DIST_BITS 6
#define REGISTRY_DIST_MAX  ((UINT64_C(1) << REGISTRY_DIST_BITS) - 1) /* "this or more" */
#define REGISTRY_TAG_SHIFT (REGISTRY_PTR_BITS + REGISTRY_DIST_BITS)
#define REGISTRY_TAG_MASK  (~UINT64_C(0) << REGISTRY_TAG_SHIFT)

/* One open-addressing table. */
struct table {
    uint64_t *slots; /* tag, distance, pointer (see the top); 0 = empty */
    size_t mask;     /* capacity - 1; capacity is a power of two */
};

/* Growth is incremental: when the table fills up, a table twice the size
 * takes every insert, and each insert also moves a few slots' worth of the
 * old table across, so no single command pays for a whole rehash.  While
 * that lasts, lookups try both tables.  Shrinking is the same the other
 * way: when removals leave a table at 1/16 load, a table a quarter of its
 * size takes over, and each removal (and insert) moves part of the old
 * one, fast enough to be done before the last element goes. */
struct registry {
    struct table cur;
    struct table old; /* being emptied into cur; slots NULL when not */
    size_t cursor;    /* old's slots below this are empty */
    size_t count;
    registry_key_fn key_of;
    uint8_t key[16];
};

#define REGISTRY_MIN_CAP 16
/* Old slots visited per insert while growing: with the new table twice the
 * old one, the move ends long before the new table is half full. */
#define REGISTRY_MOVE_STEPS 8
/* Old slots visited per removal while shrinking: the old table has 16
 * slots per element left, so 32 a removal ends the move by the time half
 * of them are gone. */
#define REGISTRY_SHRINK_STEPS 32

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
    uint64_t v;
    memcpy(&v, p, sizeof v); /* one load; the byte-by-byte loop cost a third of a hash */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
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
    t->mask = cap - 1;
}

static void
table_clear(struct table *t)
{
    wq_free(t->slots);
    t->slots = NULL;
    t->mask = 0;
}

struct registry *
registry_new(registry_key_fn key_of)
{
    struct registry *r = wq_calloc(1, sizeof *r);
    table_init(&r->cur, REGISTRY_MIN_CAP);
    r->key_of = key_of;
    registry_key_new(r->key, r);
    return r;
}

void
registry_key_new(uint8_t k[16], const void *salt)
{
    if (getrandom(k, 16, GRND_NONBLOCK) != 16) {
        /* No entropy yet (early boot): still unpredictable enough to a remote client. */
        uint64_t seed[2] = {(uint64_t)time(NULL) ^ (uint64_t)getpid(), (uint64_t)(uintptr_t)salt};
        memcpy(k, seed, 16);
    }
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

size_t
registry_slots(const struct registry *r)
{
    return r->cur.mask + 1 + (r->old.slots != NULL ? r->old.mask + 1 : 0);
}

/* The slot for elem with hash h at distance dist from its home slot.  The
 * pointer is not null, so neither is the slot, even when the tag is 0. */
static inline uint64_t
slot_make(const void *elem, uint64_t h, size_t dist)
{
    uint64_t d = dist < REGISTRY_DIST_MAX ? dist : REGISTRY_DIST_MAX;
    return (h & REGISTRY_TAG_MASK) | d << REGISTRY_PTR_BITS | (uint64_t)(uintptr_t)elem;
}

static inline void *
slot_elem(uint64_t s)
{
    return (void *)(uintptr_t)(s & REGISTRY_PTR_MASK);
}

static inline size_t
slot_dist(uint64_t s)
{
    return (size_t)((s >> REGISTRY_PTR_BITS) & REGISTRY_DIST_MAX);
}

/* Whether slot s may hold the key with hash h: its tag matches h's top bits. */
static inline bool
slot_tag_is(uint64_t s, uint64_t h)
{
    return ((s ^ h) & REGISTRY_TAG_MASK) == 0;
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
        uint64_t s = t->slots[i];
        if (s == 0)
            return i;
        if (slot_tag_is(s, h)) {
            const void *k;
            size_t klen;
            r->key_of(slot_elem(s), &k, &klen);
            if (klen == len && memcmp(k, key, len) == 0)
                return i;
        }
        i = (i + 1) & t->mask;
    }
}

/* Put elem, which hashes to h, in the first free slot of its run. */
static void
table_place(struct table *t, const void *elem, uint64_t h)
{
    size_t home = h & t->mask, i = home;
    while (t->slots[i] != 0)
        i = (i + 1) & t->mask;
    t->slots[i] = slot_make(elem, h, (i - home) & t->mask);
}

/* Empty slot i of t by backward-shift deletion: pull later members of the
 * run into the hole when their home slot does not lie cyclically in
 * (hole, j].  Elements only ever move to lower positions of their run. */
static void
table_delete_at(const struct registry *r, struct table *t, size_t i)
{
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        uint64_t s = t->slots[j];
        if (s == 0)
            break;
        uint64_t h = s; /* the tag bits, unless the hash must be recomputed */
        size_t dist = slot_dist(s);
        if (dist == REGISTRY_DIST_MAX) {
            h = registry_hash_of(r, slot_elem(s));
            dist = (j - (h & t->mask)) & t->mask;
        }
        size_t home = (j - dist) & t->mask;
        bool in_between = (hole <= j) ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!in_between) {
            t->slots[hole] = slot_make(slot_elem(s), h, (hole - home) & t->mask);
            hole = j;
        }
    }
    t->slots[hole] = 0;
}

/* Move the run of old slots that starts at the cursor into cur, whole, and
 * step the cursor past the empty slot that ends it; return the slots
 * visited.  Moving a whole run needs one SipHash per element and no backward
 * shift: emptying only the run's first slot would put a gap between later
 * members and their home slots, and lookups stop at a gap.  With every slot
 * below the cursor empty, a run starting there can only wrap when the cursor
 * is 0; then its part at the end of the array stays behind, still reachable
 * from its home slots, and moves when the cursor gets there. */
static size_t
registry_move_run(struct registry *r)
{
    struct table *o = &r->old;
    size_t start = r->cursor, i = start;
    for (; i <= o->mask && o->slots[i] != 0; i++) {
        void *elem = slot_elem(o->slots[i]);
        table_place(&r->cur, elem, registry_hash_of(r, elem));
        o->slots[i] = 0;
    }
    r->cursor = i + 1;
    return i + 1 - start;
}

/* Move about `steps` slots' worth of the old table into cur (whole runs, so
 * sometimes a few more); free the old table once it is empty. */
static void
registry_move(struct registry *r, size_t steps)
{
    while (r->old.slots != NULL && steps > 0) {
        if (r->cursor > r->old.mask) {
            table_clear(&r->old);
            return;
        }
        size_t visited = registry_move_run(r); /* not inside WQ_MIN: it evaluates twice */
        steps -= WQ_MIN(steps, visited);
    }
}

void *
registry_find(const struct registry *r, const void *key, size_t len)
{
    uint64_t h = registry_siphash(r->key, key, len);
    uint64_t s = r->cur.slots[table_probe(r, &r->cur, key, len, h)];
    if (s == 0 && r->old.slots != NULL)
        s = r->old.slots[table_probe(r, &r->old, key, len, h)];
    return slot_elem(s);
}

void
registry_insert(struct registry *r, void *elem)
{
    /* A slot keeps only REGISTRY_PTR_BITS of the pointer (why that is enough: there). */
    WQ_ASSERT(elem != NULL && ((uint64_t)(uintptr_t)elem & ~REGISTRY_PTR_MASK) == 0);
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
    if (t->slots[i] == 0 && r->old.slots != NULL) {
        t = &r->old;
        i = table_probe(r, t, key, len, h);
    }
    void *elem = slot_elem(t->slots[i]);
    if (elem == NULL)
        return NULL;
    table_delete_at(r, t, i);
    r->count--;
    size_t cap = r->cur.mask + 1;
    if (r->old.slots == NULL && cap > REGISTRY_MIN_CAP && r->count * 16 < cap) {
        r->old = r->cur;
        table_init(&r->cur, WQ_MAX(cap / 4, (size_t)REGISTRY_MIN_CAP));
        r->cursor = 0;
    }
    registry_move(r, REGISTRY_SHRINK_STEPS);
    return elem;
}

static void
table_foreach(const struct table *t, void (*fn)(void *elem, void *arg), void *arg)
{
    for (size_t i = 0; t->slots != NULL && i <= t->mask; i++) {
        if (t->slots[i] != 0)
            fn(slot_elem(t->slots[i]), arg);
    }
}

void
registry_foreach(const struct registry *r, void (*fn)(void *elem, void *arg), void *arg)
{
    table_foreach(&r->cur, fn, arg);
    table_foreach(&r->old, fn, arg);
}
