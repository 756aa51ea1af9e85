/* check_registry.c - unit tests for the keyed-hash table (src/lib/registry.c).
 * Tables use 16-byte ids (as jobs do) or NUL-terminated names of any length
 * (as queues do).  The hash key is random per table, so most tests cannot
 * choose collisions; they fill tables to their maximum load, where long probe
 * runs form on their own, and check every survivor after each removal.  A few
 * fix the key instead (see getrandom below) and build the exact collisions
 * and runs they need from the table's layout: home slot = hash's low bits,
 * tag = hash's bits above the pointer's and the 6-bit distance. */
#include "lib/wq.h"
#include "lib/registry.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rng.h"
#include "unit.h"
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
#define TEST_ASAN 0
#endif

/* Under valgrind or ASan, the big cases shrink to keep each run short. */
#define SLOW_RUN (RUNNING_ON_VALGRIND || TEST_ASAN)

/* The tag's first bit in a slot (REGISTRY_TAG_SHIFT in registry.c). */
#define TEST_TAG_SHIFT (UINTPTR_MAX > 0xffffffffu ? 54 : 38)
/* The capacity of a new table (REGISTRY_MIN_CAP). */
#define TEST_MIN_CAP 16

struct item {
    uint8_t id[16];
    unsigned visits; /* registry_foreach */
    bool in;         /* what the test believes */
};

/* item_key calls: each is a slot whose element the table had to read. */
static unsigned long key_calls;

static void
item_key(const void *elem, const void **key, size_t *len)
{
    const struct item *it = elem;
    *key = it->id;
    *len = sizeof it->id;
    key_calls++;
}

/* registry_new takes its hash key from getrandom().  This definition wins
 * over libc's at link time: while fixed_key is set it hands out that key,
 * otherwise it passes the call on to the kernel. */
static const uint8_t *fixed_key;
static bool fixed_key_taken;

ssize_t
getrandom(void *buf, size_t len, unsigned int flags)
{
    if (fixed_key != NULL && len == 16) {
        memcpy(buf, fixed_key, 16);
        fixed_key_taken = true;
        return 16;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

static const uint8_t test_key[16] = {0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};

/* A table of items hashed under test_key. */
static struct registry *
registry_new_keyed(void)
{
    fixed_key = test_key;
    fixed_key_taken = false;
    struct registry *r = registry_new(item_key);
    fixed_key = NULL;
    ck_assert_msg(fixed_key_taken, "registry_new no longer takes its key from getrandom");
    return r;
}

static uint64_t
id_hash(const uint8_t id[16])
{
    return registry_siphash(test_key, id, 16);
}

/* Give it the next id (from *seq on) whose hash under test_key has home
 * slot `home` in a table of mask + 1 slots and, unless any_tag, tag `tag`. */
static void
id_choose(struct item *it, uint64_t *seq, size_t mask, size_t home, bool any_tag, uint64_t tag)
{
    memset(it->id, 0xa5, sizeof it->id);
    for (;; (*seq)++) {
        memcpy(it->id, seq, sizeof *seq);
        uint64_t h = id_hash(it->id);
        if ((h & mask) == home && (any_tag || h >> TEST_TAG_SHIFT == tag))
            break;
    }
    (*seq)++;
}

struct named {
    const char *name;
    unsigned visits;
};

static void
named_key(const void *elem, const void **key, size_t *len)
{
    const struct named *n = elem;
    *key = n->name;
    *len = strlen(n->name);
}

static void
shuffle(size_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rng_next() % i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* n items with distinct ids: a counter in the first 8 bytes, random bytes
 * after, so ids differ early, late or both. */
static struct item *
items_new(size_t n)
{
    struct item *its = calloc(n, sizeof *its);
    ck_assert_ptr_nonnull(its);
    for (size_t i = 0; i < n; i++) {
        uint64_t c = i, r = rng_next();
        memcpy(its[i].id, &c, 8);
        memcpy(its[i].id + 8, &r, 8);
    }
    return its;
}

static size_t *
order_new(size_t n)
{
    size_t *o = malloc(n * sizeof *o);
    ck_assert_ptr_nonnull(o);
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    shuffle(o, n);
    return o;
}

/* Every item is found exactly when the test believes it is in. */
static void
verify_items(const struct registry *r, const struct item *its, size_t n)
{
    size_t in = 0;
    for (size_t i = 0; i < n; i++) {
        void *found = registry_find(r, its[i].id, sizeof its[i].id);
        REQUIRE(found == (its[i].in ? &its[i] : NULL));
        in += its[i].in;
    }
    REQUIRE(registry_count(r) == in);
}

static void
count_visit(void *elem, void *arg)
{
    struct item *it = elem;
    it->visits++;
    (*(size_t *)arg)++;
}

static void
named_visit(void *elem, void *arg)
{
    struct named *n = elem;
    n->visits++;
    (*(size_t *)arg)++;
}

START_TEST(test_ids_basic)
{
    struct registry *r = registry_new(item_key);
    struct item *its = items_new(3);
    uint8_t absent[16] = {0xff};

    ck_assert_uint_eq(registry_count(r), 0);
    ck_assert_ptr_null(registry_find(r, its[0].id, 16));
    ck_assert_ptr_null(registry_remove(r, its[0].id, 16));

    registry_insert(r, &its[0]);
    registry_insert(r, &its[1]);
    ck_assert_uint_eq(registry_count(r), 2);
    ck_assert_ptr_eq(registry_find(r, its[0].id, 16), &its[0]);
    ck_assert_ptr_eq(registry_find(r, its[1].id, 16), &its[1]);
    ck_assert_ptr_null(registry_find(r, its[2].id, 16));
    ck_assert_ptr_null(registry_find(r, absent, 16));

    /* A key is found by its bytes, not by the pointer passed in. */
    uint8_t copy[16];
    memcpy(copy, its[1].id, 16);
    ck_assert_ptr_eq(registry_find(r, copy, 16), &its[1]);
    /* A prefix of a key is another key. */
    ck_assert_ptr_null(registry_find(r, its[1].id, 15));
    ck_assert_ptr_null(registry_remove(r, its[1].id, 15));
    ck_assert_uint_eq(registry_count(r), 2);

    ck_assert_ptr_eq(registry_remove(r, its[0].id, 16), &its[0]);
    ck_assert_uint_eq(registry_count(r), 1);
    ck_assert_ptr_null(registry_find(r, its[0].id, 16));
    ck_assert_ptr_null(registry_remove(r, its[0].id, 16));
    ck_assert_ptr_eq(registry_find(r, its[1].id, 16), &its[1]);

    /* Removed keys can come back. */
    registry_insert(r, &its[0]);
    ck_assert_ptr_eq(registry_find(r, its[0].id, 16), &its[0]);
    ck_assert_uint_eq(registry_count(r), 2);

    registry_free(r);
    registry_free(NULL);
    free(its);
}
END_TEST

START_TEST(test_string_keys)
{
    /* Keys of every length from 0 to 40, sharing prefixes, across the 8-byte
     * block boundaries of the hash. */
    enum { N = 41 };
    static char buf[N][N + 1];
    struct named ns[N + 3];
    struct registry *r = registry_new(named_key);
    for (size_t i = 0; i < N; i++) {
        memset(buf[i], 'q', i);
        buf[i][i] = '\0';
        ns[i].name = buf[i];
        registry_insert(r, &ns[i]);
    }
    char other[] = "emails", other2[] = "emailz", utf8[] = "caf\xc3\xa9";
    ns[N].name = other;
    ns[N + 1].name = other2;
    ns[N + 2].name = utf8;
    for (size_t i = N; i < N + 3; i++)
        registry_insert(r, &ns[i]);
    ck_assert_uint_eq(registry_count(r), N + 3);

    for (size_t i = 0; i < N; i++)
        ck_assert_ptr_eq(registry_find(r, buf[i], i), &ns[i]);
    ck_assert_ptr_eq(registry_find(r, "", 0), &ns[0]);
    ck_assert_ptr_eq(registry_find(r, "emails", 6), &ns[N]);
    ck_assert_ptr_eq(registry_find(r, "emailz", 6), &ns[N + 1]);
    ck_assert_ptr_eq(registry_find(r, "caf\xc3\xa9", 5), &ns[N + 2]);
    ck_assert_ptr_null(registry_find(r, "email", 5));
    ck_assert_ptr_null(registry_find(r, "emailss", 7));
    ck_assert_ptr_null(registry_find(r, "Emails", 6));
    /* A name given as a token of a longer line (not NUL-terminated). */
    const char *line = "lease emails 5000";
    ck_assert_ptr_eq(registry_find(r, line + 6, 6), &ns[N]);

    /* Remove the odd lengths, then check all. */
    for (size_t i = 1; i < N; i += 2)
        ck_assert_ptr_eq(registry_remove(r, buf[i], i), &ns[i]);
    for (size_t i = 0; i < N; i++)
        ck_assert_ptr_eq(registry_find(r, buf[i], i), i % 2 ? NULL : &ns[i]);
    ck_assert_ptr_eq(registry_remove(r, "", 0), &ns[0]);
    ck_assert_ptr_null(registry_find(r, "", 0));
    ck_assert_uint_eq(registry_count(r), N + 3 - N / 2 - 1);
    ck_assert_ptr_eq(registry_find(r, "emails", 6), &ns[N]);
    registry_free(r);
}
END_TEST

START_TEST(test_growth_and_removal_phases)
{
    const size_t n = SLOW_RUN ? 150000 : 1000000;
    struct item *its = items_new(n);
    size_t *order = order_new(n);
    struct registry *r = registry_new(item_key);

    /* Phase 1: insert all (through many doublings), all findable. */
    for (size_t i = 0; i < n; i++) {
        registry_insert(r, &its[i]);
        its[i].in = true;
        if ((i & (i + 1)) == 0) /* at every power of two: a spot check */
            REQUIRE(registry_find(r, its[i / 2].id, 16) == &its[i / 2]);
    }
    REQUIRE(registry_count(r) == n);
    verify_items(r, its, n);
    size_t peak = registry_slots(r);
    REQUIRE(peak >= 2 * n);

    /* Phase 2: remove half in random order. */
    for (size_t k = 0; k < n / 2; k++) {
        struct item *it = &its[order[k]];
        REQUIRE(registry_remove(r, it->id, 16) == it);
        it->in = false;
    }
    verify_items(r, its, n);

    /* Phase 3: remove the rest (and the removed ones again: NULL). */
    shuffle(order, n);
    for (size_t k = 0; k < n; k++) {
        struct item *it = &its[order[k]];
        void *got = registry_remove(r, it->id, 16);
        REQUIRE(got == (it->in ? it : NULL));
        it->in = false;
    }
    REQUIRE(registry_count(r) == 0);
    for (size_t i = 0; i < n; i += 97)
        REQUIRE(registry_find(r, its[i].id, 16) == NULL);
    /* Emptied, it shrank back (and no move is left half done). */
    ck_assert_uint_le(registry_slots(r), 64);

    /* The emptied table still works. */
    registry_insert(r, &its[5]);
    ck_assert_ptr_eq(registry_find(r, its[5].id, 16), &its[5]);
    ck_assert_uint_eq(registry_count(r), 1);

    registry_free(r);
    free(order);
    free(its);
}
END_TEST

/* Fill a fresh table to n items, then remove them in random order, checking
 * every survivor (and every removed one) after each removal. */
static void
drain_checked(size_t n)
{
    struct item *its = items_new(n);
    size_t *order = order_new(n);
    struct registry *r = registry_new(item_key);
    for (size_t i = 0; i < n; i++) {
        registry_insert(r, &its[i]);
        its[i].in = true;
    }
    verify_items(r, its, n);
    for (size_t k = 0; k < n; k++) {
        struct item *it = &its[order[k]];
        REQUIRE(registry_remove(r, it->id, 16) == it);
        it->in = false;
        verify_items(r, its, n);
    }
    registry_free(r);
    free(order);
    free(its);
}

START_TEST(test_remove_in_runs)
{
    /* Powers of two fill a table to its maximum load of one half (the long
     * runs, wrapping past the end of the slot array on some tables); the
     * others are just above or below.  Many small tables, each with its own
     * random hash key, give many different run shapes. */
    static const size_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 128};
    int rounds = SLOW_RUN ? 15 : 60;
    for (int round = 0; round < rounds; round++) {
        for (size_t i = 0; i < WQ_ARRAY_LEN(sizes); i++)
            drain_checked(sizes[i]);
    }
    drain_checked(SLOW_RUN ? 256 : 512);
    drain_checked(SLOW_RUN ? 512 : 2048);
}
END_TEST

START_TEST(test_random_mixed)
{
    /* Inserts and removes interleaved at random against a model. */
    const size_t n = 4096;
    const int ops = SLOW_RUN ? 20000 : 200000;
    struct item *its = items_new(n);
    struct registry *r = registry_new(item_key);
    size_t in = 0;
    for (int op = 0; op < ops; op++) {
        struct item *it = &its[rng_next() % n];
        if (it->in) {
            REQUIRE(registry_remove(r, it->id, 16) == it);
            it->in = false;
            in--;
        } else {
            REQUIRE(registry_find(r, it->id, 16) == NULL);
            registry_insert(r, it);
            it->in = true;
            in++;
        }
        REQUIRE(registry_count(r) == in);
        if (op % 4096 == 0)
            verify_items(r, its, n);
    }
    verify_items(r, its, n);
    registry_free(r);
    free(its);
}
END_TEST

START_TEST(test_foreach)
{
    const size_t n = 5000;
    struct item *its = items_new(n);
    struct registry *r = registry_new(item_key);
    size_t total = 0;

    registry_foreach(r, count_visit, &total); /* empty: no calls */
    ck_assert_uint_eq(total, 0);

    for (size_t i = 0; i < n; i++)
        registry_insert(r, &its[i]);
    for (size_t i = 0; i < n; i += 3)
        ck_assert_ptr_eq(registry_remove(r, its[i].id, 16), &its[i]);
    registry_foreach(r, count_visit, &total);
    ck_assert_uint_eq(total, registry_count(r));
    for (size_t i = 0; i < n; i++)
        REQUIRE(its[i].visits == (i % 3 != 0));
    registry_free(r);
    free(its);

    /* Also with string keys. */
    struct named ns[3] = {{"a", 0}, {"bb", 0}, {"", 0}};
    r = registry_new(named_key);
    for (size_t i = 0; i < 3; i++)
        registry_insert(r, &ns[i]);
    total = 0;
    registry_foreach(r, named_visit, &total);
    ck_assert_uint_eq(total, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(ns[i].visits, 1);
    registry_free(r);
}
END_TEST

/* Finds (and finds of a missing key) that return the right element, with the
 * number of elements the table read to get there. */
static void
require_find(const struct registry *r, const struct item *it, unsigned long reads)
{
    key_calls = 0;
    ck_assert_ptr_eq(registry_find(r, it->id, 16), it->in ? it : NULL);
    ck_assert_uint_eq(key_calls, reads);
}

START_TEST(test_tag_collisions)
{
    /* a, b, c and the missing x share the home slot and the tag, d shares
     * only the home: a lookup must read (and reject) every same-tag element
     * before its own, and must skip d unread. */
    if (TEST_TAG_SHIFT != 54)
        return; /* 26-bit tags: one chosen collision costs 2^26 hashes */
    const size_t mask = TEST_MIN_CAP - 1, home = 5;
    struct item its[5];
    memset(its, 0, sizeof its);
    struct item *a = &its[0], *b = &its[1], *c = &its[2], *d = &its[3], *x = &its[4];
    uint64_t seq = 1;
    id_choose(a, &seq, mask, home, true, 0);
    uint64_t tag = id_hash(a->id) >> TEST_TAG_SHIFT;
    id_choose(b, &seq, mask, home, false, tag);
    id_choose(c, &seq, mask, home, false, tag);
    id_choose(x, &seq, mask, home, false, tag);
    do
        id_choose(d, &seq, mask, home, true, 0);
    while (id_hash(d->id) >> TEST_TAG_SHIFT == tag);

    struct registry *r = registry_new_keyed();
    struct item *order[] = {a, d, b, c}; /* slots 5, 6, 7, 8 */
    for (size_t i = 0; i < WQ_ARRAY_LEN(order); i++) {
        registry_insert(r, order[i]);
        order[i]->in = true;
    }
    require_find(r, a, 1);
    require_find(r, d, 1);
    require_find(r, b, 2);
    require_find(r, c, 3);
    require_find(r, x, 3);
    key_calls = 0;
    ck_assert_ptr_null(registry_remove(r, x->id, 16));
    ck_assert_uint_eq(key_calls, 3);
    ck_assert_uint_eq(registry_count(r), 4);

    /* Removing b shifts c back past d; the tags still tell them apart. */
    ck_assert_ptr_eq(registry_remove(r, b->id, 16), b);
    b->in = false;
    require_find(r, c, 2);
    require_find(r, b, 2);
    require_find(r, d, 1);
    ck_assert_ptr_eq(registry_remove(r, a->id, 16), a);
    a->in = false;
    require_find(r, c, 1);
    require_find(r, x, 1);
    verify_items(r, its, WQ_ARRAY_LEN(its));
    registry_free(r);
}
END_TEST

/* Lexicographically next permutation of a; false after the last. */
static bool
permute_next(size_t *a, size_t n)
{
    size_t i = n - 1;
    while (i > 0 && a[i - 1] >= a[i])
        i--;
    if (i == 0)
        return false;
    size_t j = n - 1;
    while (a[j] <= a[i - 1])
        j--;
    size_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
    for (size_t lo = i, hi = n - 1; lo < hi; lo++, hi--) {
        t = a[lo];
        a[lo] = a[hi];
        a[hi] = t;
    }
    return true;
}

START_TEST(test_remove_wrapped_run)
{
    /* Eight items, the most a new table holds, whose home slots make one run
     * from slot 14 round to slot 5: slots 14 15 | 0 1 2 3 4 5 hold items
     * with homes 14 14 | 15 15 0 1 3 5.  Removing them in every order moves
     * members back across the end of the array.  With `grow`, a ninth item
     * first starts a growth, whose first move takes the run's part from slot
     * 0 on and leaves slots 14 and 15 behind in the old table. */
    static const size_t homes[] = {14, 14, 15, 15, 0, 1, 3, 5};
    enum { N = WQ_ARRAY_LEN(homes) };
    struct item its[N + 1];
    uint64_t seq = 1;
    memset(its, 0, sizeof its);
    for (size_t i = 0; i < N; i++)
        id_choose(&its[i], &seq, TEST_MIN_CAP - 1, homes[i], true, 0);
    id_choose(&its[N], &seq, TEST_MIN_CAP - 1, 9, true, 0);

    size_t order[N];
    for (size_t i = 0; i < N; i++)
        order[i] = i;
    /* 8! orders; under valgrind or ASan every 7th. */
    size_t stride = SLOW_RUN ? 7 : 1, nth = 0;
    do {
        if (nth++ % stride != 0)
            continue;
        for (int grow = 0; grow <= 1; grow++) {
            struct registry *r = registry_new_keyed();
            for (size_t i = 0; i < N + (size_t)grow; i++) {
                registry_insert(r, &its[i]);
                its[i].in = true;
            }
            for (size_t k = 0; k < N; k++) {
                struct item *it = &its[order[k]];
                REQUIRE(registry_remove(r, it->id, 16) == it);
                it->in = false;
                verify_items(r, its, N + 1);
            }
            if (grow) {
                REQUIRE(registry_remove(r, its[N].id, 16) == &its[N]);
                its[N].in = false;
            }
            REQUIRE(registry_count(r) == 0);
            registry_free(r);
        }
    } while (permute_next(order, N));
}
END_TEST

/* Remove a random item the test believes is in; return it. */
static struct item *
remove_random(struct registry *r, struct item *its, size_t n)
{
    struct item *it;
    do
        it = &its[rng_next() % n];
    while (!it->in);
    REQUIRE(registry_remove(r, it->id, 16) == it);
    it->in = false;
    return it;
}

/* Insert a random item the test believes is out. */
static void
insert_random(struct registry *r, struct item *its, size_t n)
{
    struct item *it;
    do
        it = &its[rng_next() % n];
    while (it->in);
    registry_insert(r, it);
    it->in = true;
}

/* Fill a table to its maximum load (n0 items), start a growth with one
 * more, then remove and insert with every item checked after each step:
 * first removals alone (the move stands still, part done), then removals
 * and inserts in turn until the move is long over. */
static void
grow_while_deleting(size_t n0)
{
    const size_t n = 2 * n0;
    struct item *its = items_new(n);
    struct registry *r = registry_new(item_key);
    for (size_t i = 0; i <= n0; i++) {
        registry_insert(r, &its[i]);
        its[i].in = true;
    }
    verify_items(r, its, n);
    for (size_t k = 0; k < n0 / 2; k++) {
        remove_random(r, its, n);
        verify_items(r, its, n);
    }
    /* The move takes at most n0 / 4 inserts (8 old slots each). */
    for (size_t k = 0; k < n0 / 2 + 2; k++) {
        insert_random(r, its, n);
        verify_items(r, its, n);
        remove_random(r, its, n);
        verify_items(r, its, n);
    }
    registry_free(r);
    free(its);
}

START_TEST(test_growth_while_deleting)
{
    int rounds = SLOW_RUN ? 10 : 40;
    for (int round = 0; round < rounds; round++) {
        for (size_t n0 = TEST_MIN_CAP / 2; n0 <= 128; n0 *= 2)
            grow_while_deleting(n0);
    }
    grow_while_deleting(SLOW_RUN ? 256 : 1024);
}
END_TEST

/* Look up `m` ids that are not in r (by find and by remove): all missing,
 * and return how many elements the lookups read. */
static unsigned long
find_missing(struct registry *r, size_t m)
{
    size_t count = registry_count(r);
    unsigned long reads = 0;
    for (size_t i = 0; i < m; i++) {
        uint8_t id[16];
        uint64_t c = (UINT64_C(1) << 62) + i, rnd = rng_next();
        memcpy(id, &c, 8);
        memcpy(id + 8, &rnd, 8);
        key_calls = 0;
        REQUIRE(registry_find(r, id, 16) == NULL);
        if (i % 16 == 0) /* remove probes as find does */
            REQUIRE(registry_remove(r, id, 16) == NULL);
        reads += key_calls;
    }
    REQUIRE(registry_count(r) == count);
    return reads;
}

/* 100 elements with one home slot in a table of 256: distances beyond what
 * a slot records (63 or more), where deletion hashes the element again to
 * find its home.  Removed in a scrambled order; every survivor is found
 * after each removal. */
START_TEST(test_long_run)
{
    enum { N = 100 };
    const size_t mask = 255, home = 5;
    struct item *its = items_new(N);
    uint64_t seq = 1;
    for (size_t i = 0; i < N; i++)
        id_choose(&its[i], &seq, mask, home, true, 0);
    struct registry *r = registry_new_keyed();
    for (size_t i = 0; i < N; i++) {
        registry_insert(r, &its[i]);
        its[i].in = true;
    }
    verify_items(r, its, N);
    for (size_t k = 0; k < N; k++) {
        size_t i = (k * 37) % N; /* 37 and N are coprime */
        ck_assert_ptr_eq(registry_remove(r, its[i].id, 16), &its[i]);
        its[i].in = false;
        verify_items(r, its, N);
    }
    registry_free(r);
    free(its);
}
END_TEST

START_TEST(test_find_missing_full)
{
    /* Tables at their maximum load of 1/2, where misses probe furthest, then
     * with a growth just started, where they probe both tables. */
    const size_t max = SLOW_RUN ? (size_t)1 << 16 : (size_t)1 << 19;
    struct item *its = items_new(max + 1);
    unsigned long reads = 0, misses = 0;
    for (size_t n = TEST_MIN_CAP / 2; n <= max; n *= 2) {
        struct registry *r = registry_new(item_key);
        for (size_t i = 0; i < n; i++) {
            registry_insert(r, &its[i]);
            its[i].in = true;
        }
        size_t m = WQ_MAX(n, (size_t)4096);
        reads += find_missing(r, m);
        misses += m;
        registry_insert(r, &its[n]);
        its[n].in = true;
        reads += find_missing(r, m / 4);
        misses += m / 4;
        verify_items(r, its, n + 1);
        for (size_t i = 0; i <= n; i++)
            its[i].in = false;
        registry_free(r);
    }
    /* A miss reads only elements whose tag matches: at this load about 1.5
     * occupied slots per miss, each matching with chance 2^-10 (2^-26 with
     * 32-bit pointers).  Without the filter it would be 1.5 reads a miss. */
    ck_assert_msg(reads <= misses / 256 + 8, "%lu reads for %lu misses", reads, misses);
    /* With 10-bit tags, some thousands of those misses met an element with
     * the same tag, and still came back NULL. */
    if (TEST_TAG_SHIFT == 54)
        ck_assert_msg(reads > 0, "no tag collision in %lu misses", misses);
    free(its);
}
END_TEST

/* SipHash-1-3 reference outputs: key 00 01 .. 0f and message 00 01 .. (len-1),
 * as published with Swift's and Rust's SipHash-1-3 test suites (generated
 * from the reference implementation, github.com/veorq/SipHash); and the
 * all-zero key, which is Rust's DefaultHasher::new(). */
static const struct {
    size_t len;
    uint64_t want;
} sip13_key_seq[] = {
    {0, 0xabac0158050fc4dcULL},  {1, 0xc9f49bf37d57ca93ULL},  {2, 0x82cb9b024dc7d44dULL},
    {7, 0xd3927d989bb11140ULL},  {8, 0x369095118d299a8eULL},  {9, 0x25a48eb36c063de4ULL},
    {15, 0xd320d86d2a519956ULL}, {16, 0xcc4fdd1a7d908b66ULL}, {17, 0x9cf2689063dbd80cULL},
    {63, 0x9d199062b7bbb3a8ULL},
};
static const struct {
    size_t len;
    uint64_t want;
} sip13_key_zero[] = {
    {0, 0xd1fba762150c532cULL},
    {1, 0x68a914128e01e473ULL},
    {8, 0xead411e67ebe2eeaULL},
    {63, 0x385d3e39e5f37359ULL},
};

START_TEST(test_siphash_vectors)
{
    uint8_t key[16], zero[16] = {0}, msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    for (size_t i = 0; i < WQ_ARRAY_LEN(sip13_key_seq); i++) {
        uint64_t got = registry_siphash(key, msg, sip13_key_seq[i].len);
        ck_assert_msg(got == sip13_key_seq[i].want, "len %zu: got %016llx want %016llx",
                      sip13_key_seq[i].len, (unsigned long long)got,
                      (unsigned long long)sip13_key_seq[i].want);
    }
    for (size_t i = 0; i < WQ_ARRAY_LEN(sip13_key_zero); i++) {
        uint64_t got = registry_siphash(zero, msg, sip13_key_zero[i].len);
        ck_assert_msg(got == sip13_key_zero[i].want, "len %zu: got %016llx want %016llx",
                      sip13_key_zero[i].len, (unsigned long long)got,
                      (unsigned long long)sip13_key_zero[i].want);
    }
}
END_TEST

START_TEST(test_siphash_properties)
{
    uint8_t k1[16] = {1, 2, 3}, k2[16] = {1, 2, 4}, msg[64];
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)(i * 7);
    /* Deterministic, and independent of the buffer's alignment. */
    uint8_t shifted[65];
    memcpy(shifted + 1, msg, 64);
    for (size_t len = 0; len <= 64; len++) {
        ck_assert_uint_eq(registry_siphash(k1, msg, len), registry_siphash(k1, msg, len));
        ck_assert_uint_eq(registry_siphash(k1, msg, len), registry_siphash(k1, shifted + 1, len));
        /* Another key, another hash (2^-64 chance of a false failure). */
        ck_assert_uint_ne(registry_siphash(k1, msg, len), registry_siphash(k2, msg, len));
        /* Length is part of the input: trailing zero bytes change it. */
        if (len < 64) {
            uint8_t z[65] = {0};
            memcpy(z, msg, len);
            ck_assert_uint_ne(registry_siphash(k1, z, len), registry_siphash(k1, z, len + 1));
        }
    }
    /* One flipped bit anywhere changes the hash. */
    for (size_t bit = 0; bit < 64 * 8; bit++) {
        uint8_t m[64];
        memcpy(m, msg, 64);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        REQUIRE(registry_siphash(k1, m, 64) != registry_siphash(k1, msg, 64));
    }
}
END_TEST

static Suite *
registry_suite(void)
{
    const struct unit_case cases[] = {
        {"ids_basic", test_ids_basic},
        {"string_keys", test_string_keys},
        {"growth_and_removal_phases", test_growth_and_removal_phases},
        {"remove_in_runs", test_remove_in_runs},
        {"random_mixed", test_random_mixed},
        {"foreach", test_foreach},
        {"tag_collisions", test_tag_collisions},
        {"long_run", test_long_run},
        {"remove_wrapped_run", test_remove_wrapped_run},
        {"growth_while_deleting", test_growth_while_deleting},
        {"find_missing_full", test_find_missing_full},
        {"siphash_vectors", test_siphash_vectors},
        {"siphash_properties", test_siphash_properties},
    };
    return unit_suite("registry", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    rng_seed(88172645463325252ULL); /* every test, forked, starts here */
    return unit_run(registry_suite(), NULL);
}
