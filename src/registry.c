/* registry.c - keyed-hash open-addressing table. */
#include "wq.h"
#include "registry.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"

struct registry {
    void          **slots;
    uint64_t       *hashes; /* cached hash per slot: growth never re-hashes */
    size_t          mask;   /* capacity - 1; capacity is a power of two */
    size_t          count;
    registry_key_fn key_of;
    uint8_t         key[16];
};

#define REGISTRY_MIN_CAP 16

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

struct registry *
registry_new(registry_key_fn key_of)
{
    struct registry *r = wq_calloc(1, sizeof *r);
    r->slots = wq_calloc(REGISTRY_MIN_CAP, sizeof *r->slots);
    r->hashes = wq_calloc(REGISTRY_MIN_CAP, sizeof *r->hashes);
    r->mask = REGISTRY_MIN_CAP - 1;
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
    wq_free(r->slots);
    wq_free(r->hashes);
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

/* The slot holding key, or the empty slot where it would go. */
static size_t
registry_probe(const struct registry *r, const void *key, size_t len, uint64_t h)
{
    size_t i = h & r->mask;
    for (;;) {
        void *e = r->slots[i];
        if (e == NULL)
            return i;
        if (r->hashes[i] == h) {
            const void *k;
            size_t klen;
            r->key_of(e, &k, &klen);
            if (klen == len && memcmp(k, key, len) == 0)
                return i;
        }
        i = (i + 1) & r->mask;
    }
}

void *
registry_find(const struct registry *r, const void *key, size_t len)
{
    uint64_t h = registry_siphash(r->key, key, len);
    return r->slots[registry_probe(r, key, len, h)];
}

static void
registry_place(struct registry *r, void *elem, uint64_t h)
{
    size_t i = h & r->mask;
    while (r->slots[i] != NULL)
        i = (i + 1) & r->mask;
    r->slots[i] = elem;
    r->hashes[i] = h;
}

/* Double the capacity, re-placing every element by its cached hash. */
static void
registry_grow(struct registry *r)
{
    void **old_slots = r->slots;
    uint64_t *old_hashes = r->hashes;
    size_t old_cap = r->mask + 1;

    r->slots = wq_calloc(old_cap * 2, sizeof *r->slots);
    r->hashes = wq_calloc(old_cap * 2, sizeof *r->hashes);
    r->mask = old_cap * 2 - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old_slots[i] != NULL)
            registry_place(r, old_slots[i], old_hashes[i]);
    }
    wq_free(old_slots);
    wq_free(old_hashes);
}

void
registry_insert(struct registry *r, void *elem)
{
    /* Keep the load factor at or below 1/2 so probe runs stay short. */
    if ((r->count + 1) * 2 > r->mask + 1)
        registry_grow(r);
    registry_place(r, elem, registry_hash_of(r, elem));
    r->count++;
}

void *
registry_remove(struct registry *r, const void *key, size_t len)
{
    uint64_t h = registry_siphash(r->key, key, len);
    size_t i = registry_probe(r, key, len, h);
    void *elem = r->slots[i];
    if (elem == NULL)
        return NULL;

    /* Backward-shift deletion: pull later members of the run into the hole
     * when their home slot does not lie cyclically in (hole, j]. */
    size_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & r->mask;
        if (r->slots[j] == NULL)
            break;
        size_t home = r->hashes[j] & r->mask;
        bool in_between = (hole <= j) ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!in_between) {
            r->slots[hole] = r->slots[j];
            r->hashes[hole] = r->hashes[j];
            hole = j;
        }
    }
    r->slots[hole] = NULL;
    r->count--;
    return elem;
}

void
registry_foreach(const struct registry *r, void (*fn)(void *elem, void *arg), void *arg)
{
    for (size_t i = 0; i <= r->mask; i++) {
        if (r->slots[i] != NULL)
            fn(r->slots[i], arg);
    }
}
