/* check_heap.c - unit tests for the 4-ary min-heap (src/heap.c).
 * Every test element records the position the heap last reported for it, and
 * heap_verify() checks after each operation that those records, the heap
 * order and the item array agree. */
#include "wq.h"
#include "heap.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

struct el {
    uint64_t k[3];
    uint32_t idx; /* as reported by set_index */
    bool in_heap; /* what the test believes */
};

static void
el_set_index(void *elem, uint32_t idx)
{
    struct el *e = elem;
    e->idx = idx;
}

/* Deterministic xorshift64*: the same sequence on every run and platform. */
static uint64_t rng_state;

static void
rng_seed(uint64_t seed)
{
    rng_state = seed ? seed : 1;
}

static uint64_t
rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t
rng_below(uint64_t n)
{
    return rng_next() % n;
}

static int
key_cmp(const uint64_t *a, const uint64_t *b)
{
    for (int i = 0; i < 3; i++) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

static int
el_ptr_cmp(const void *a, const void *b)
{
    const struct el *x = *(const struct el *const *)a;
    const struct el *y = *(const struct el *const *)b;
    return key_cmp(x->k, y->k);
}

/* n fresh elements, none in the heap; free() them. */
static struct el *
els_new(size_t n)
{
    struct el *els = calloc(n, sizeof *els);
    ck_assert_ptr_nonnull(els);
    for (size_t i = 0; i < n; i++)
        els[i].idx = HEAP_NO_INDEX;
    return els;
}

static void
push_el(struct heap *h, struct el *e)
{
    heap_push(h, e->k, e);
    e->in_heap = true;
}

/* Check the heap order and that every element's recorded index is its real
 * position; elements outside the heap must carry HEAP_NO_INDEX. */
static void
heap_verify(const struct heap *h, struct el *els, size_t n)
{
    size_t inside = 0;
    for (uint32_t i = 0; i < heap_len(h); i++) {
        const struct heap_item *it = heap_at(h, i);
        struct el *e = it->elem;
        REQUIRE(e->idx == i);
        REQUIRE(e->in_heap);
        REQUIRE(key_cmp(it->k, e->k) == 0);
        if (i > 0)
            REQUIRE(!heap_item_less(it, heap_at(h, (i - 1) / 4)));
    }
    for (size_t j = 0; j < n; j++) {
        if (els[j].in_heap)
            inside++;
        else
            REQUIRE(els[j].idx == HEAP_NO_INDEX);
    }
    REQUIRE(inside == heap_len(h));
}

/* Pop everything, checking each pop against a sorted copy of the keys. */
static void
drain_sorted(struct heap *h, struct el *els, size_t n)
{
    struct el **sorted = malloc(n * sizeof *sorted);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (els[i].in_heap)
            sorted[m++] = &els[i];
    }
    REQUIRE(m == heap_len(h));
    qsort(sorted, m, sizeof *sorted, el_ptr_cmp);
    for (size_t i = 0; i < m; i++) {
        struct el *top = heap_top(h);
        struct el *e = heap_pop(h);
        REQUIRE(top == e);
        REQUIRE(e != NULL);
        REQUIRE(key_cmp(e->k, sorted[i]->k) == 0);
        REQUIRE(e->idx == HEAP_NO_INDEX);
        e->in_heap = false;
    }
    REQUIRE(heap_len(h) == 0);
    ck_assert_ptr_null(heap_pop(h));
    free(sorted);
}

START_TEST(test_empty)
{
    struct heap h;
    heap_init(&h, el_set_index);
    ck_assert_uint_eq(heap_len(&h), 0);
    ck_assert_ptr_null(heap_top(&h));
    ck_assert_ptr_null(heap_pop(&h));

    struct el e = {{1, 2, 3}, HEAP_NO_INDEX, false};
    push_el(&h, &e);
    ck_assert_ptr_eq(heap_pop(&h), &e);
    ck_assert_uint_eq(e.idx, HEAP_NO_INDEX);
    ck_assert_ptr_null(heap_pop(&h));
    ck_assert_ptr_null(heap_top(&h));
    heap_clear(&h);
    heap_clear(&h); /* clearing an empty heap is harmless */
    ck_assert_ptr_null(heap_pop(&h));
}
END_TEST

START_TEST(test_random_matches_qsort)
{
    /* Narrow ranges in k[0] and k[1] make the lower words decide often. */
    const size_t n = 20000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    rng_seed(42);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = rng_below(8);
        els[i].k[1] = rng_below(8);
        els[i].k[2] = rng_next();
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_lexicographic)
{
    /* Pushed in reverse of the expected order. */
    struct el els[] = {
        {{UINT64_MAX, 0, 0}, HEAP_NO_INDEX, false}, {{1, 0, 0}, HEAP_NO_INDEX, false},
        {{0, UINT64_MAX, 0}, HEAP_NO_INDEX, false}, {{0, 1, 0}, HEAP_NO_INDEX, false},
        {{0, 0, UINT64_MAX}, HEAP_NO_INDEX, false}, {{0, 0, 1}, HEAP_NO_INDEX, false},
        {{0, 0, 0}, HEAP_NO_INDEX, false},
    };
    const size_t n = WQ_ARRAY_LEN(els);
    struct heap h;
    heap_init(&h, el_set_index);
    for (size_t i = 0; i < n; i++) {
        push_el(&h, &els[i]);
        heap_verify(&h, els, n);
    }
    for (size_t i = n; i-- > 0;) {
        ck_assert_ptr_eq(heap_pop(&h), &els[i]);
        els[i].in_heap = false;
        heap_verify(&h, els, n);
    }
    ck_assert_ptr_null(heap_pop(&h));
    heap_clear(&h);
}
END_TEST

START_TEST(test_fifo_ties)
{
    /* Equal k[0] and k[1]: a sequence number in k[2] gives arrival order,
     * also when pushes and pops interleave. */
    const size_t n = 1000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    size_t next_pop = 0;
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = 7;
        els[i].k[1] = 9;
        els[i].k[2] = i;
        push_el(&h, &els[i]);
        if (i % 3 == 2) {
            struct el *e = heap_pop(&h);
            ck_assert_ptr_eq(e, &els[next_pop]);
            e->in_heap = false;
            next_pop++;
        }
    }
    heap_verify(&h, els, n);
    while (heap_len(&h) > 0) {
        struct el *e = heap_pop(&h);
        ck_assert_ptr_eq(e, &els[next_pop]);
        e->in_heap = false;
        next_pop++;
    }
    ck_assert_uint_eq(next_pop, n);

    /* A higher-priority (smaller k[0]) job still jumps the FIFO. */
    els[0].k[0] = 7;
    els[1].k[0] = 7;
    els[2].k[0] = 3;
    for (size_t i = 0; i < 3; i++)
        push_el(&h, &els[i]);
    ck_assert_ptr_eq(heap_pop(&h), &els[2]);
    ck_assert_ptr_eq(heap_pop(&h), &els[0]);
    ck_assert_ptr_eq(heap_pop(&h), &els[1]);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_remove_sift_up)
{
    /* Layout after these pushes (children of i are 4i+1..4i+4):
     *   [0]=0  [1]=150 [2..4]=10  [5..8]=200 (under 150)  [9]=20 (under [2])
     * Removing [5] moves the last item (20) there; 20 is smaller than its
     * new parent 150, so it must move up, not down. */
    const uint64_t keys[] = {0, 150, 10, 10, 10, 200, 200, 200, 200, 20};
    const size_t n = WQ_ARRAY_LEN(keys);
    struct el els[WQ_ARRAY_LEN(keys)];
    memset(els, 0, sizeof els);
    for (size_t i = 0; i < n; i++)
        els[i].idx = HEAP_NO_INDEX;
    struct heap h;
    heap_init(&h, el_set_index);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = keys[i];
        els[i].k[2] = i;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(els[i].idx, i);

    heap_remove(&h, els[5].idx);
    els[5].in_heap = false;
    heap_verify(&h, els, n);
    ck_assert_uint_eq(els[9].idx, 1); /* 20 moved up into 150's place */
    ck_assert_uint_eq(els[1].idx, 5);

    /* Remove the last position and the root too. */
    heap_remove(&h, heap_len(&h) - 1);
    for (size_t i = 0; i < n; i++) {
        if (els[i].in_heap && els[i].idx == HEAP_NO_INDEX)
            els[i].in_heap = false;
    }
    heap_verify(&h, els, n);
    heap_remove(&h, 0);
    els[0].in_heap = false;
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);
    heap_clear(&h);
}
END_TEST

START_TEST(test_remove_middle)
{
    const size_t n = RUNNING_ON_VALGRIND ? 1500 : 3000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    rng_seed(7);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = rng_below(100);
        els[i].k[1] = rng_below(3);
        els[i].k[2] = i;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    /* Remove two thirds, chosen at random, through their recorded index. */
    for (size_t r = 0; r < 2 * n / 3; r++) {
        size_t j;
        do {
            j = rng_below(n);
        } while (!els[j].in_heap);
        uint32_t idx = els[j].idx;
        ck_assert_ptr_eq(heap_at(&h, idx)->elem, &els[j]);
        heap_remove(&h, idx);
        els[j].in_heap = false;
        heap_verify(&h, els, n);
    }
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_index_tracking_mixed)
{
    /* Random pushes, pops and removes; full verification after each. */
    const size_t n = 1500;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    rng_seed(99);
    int ops = RUNNING_ON_VALGRIND ? 3000 : 6000;
    for (int op = 0; op < ops; op++) {
        unsigned what = (unsigned)rng_below(10);
        if (what < 5) {
            size_t j = rng_below(n);
            if (els[j].in_heap)
                continue;
            els[j].k[0] = rng_below(4);
            els[j].k[1] = rng_below(4);
            els[j].k[2] = rng_below(4);
            push_el(&h, &els[j]);
        } else if (what < 7) {
            bool empty = heap_len(&h) == 0;
            struct el *e = heap_pop(&h);
            if (empty) {
                ck_assert_ptr_null(e);
                continue;
            }
            for (size_t j = 0; j < n; j++) {
                if (els[j].in_heap)
                    REQUIRE(key_cmp(e->k, els[j].k) <= 0);
            }
            e->in_heap = false;
        } else if (heap_len(&h) > 0) {
            uint32_t idx = (uint32_t)rng_below(heap_len(&h));
            struct el *e = heap_at(&h, idx)->elem;
            heap_remove(&h, idx);
            ck_assert_uint_eq(e->idx, HEAP_NO_INDEX);
            e->in_heap = false;
        }
        heap_verify(&h, els, n);
    }
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_large)
{
    const size_t n = 100000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    rng_seed(2024);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = rng_next();
        els[i].k[1] = rng_below(1000);
        els[i].k[2] = i;
        push_el(&h, &els[i]);
    }
    ck_assert_uint_eq(heap_len(&h), n);
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_shrink_after_drain)
{
    const size_t n = 100000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = n - i;
        push_el(&h, &els[i]);
    }
    ck_assert_uint_ge(h.cap, n);
    uint32_t full_cap = h.cap;
    /* Capacity follows the length down while draining. */
    for (size_t i = 0; i < n; i++) {
        struct el *e = heap_pop(&h);
        REQUIRE(e == &els[n - 1 - i]);
        e->in_heap = false;
        REQUIRE(h.cap >= heap_len(&h));
        if (heap_len(&h) == n / 16)
            REQUIRE(h.cap < full_cap);
    }
    ck_assert_uint_eq(heap_len(&h), 0);
    ck_assert_uint_le(h.cap, 128);

    /* The shrunken heap grows again and still works. */
    for (size_t i = 0; i < 1000; i++) {
        els[i].k[0] = i % 10;
        els[i].k[1] = 0;
        els[i].k[2] = i;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);

    /* heap_clear releases everything; the heap is reusable afterwards. */
    push_el(&h, &els[0]);
    heap_clear(&h);
    els[0].in_heap = false;
    ck_assert_uint_eq(heap_len(&h), 0);
    ck_assert_ptr_null(heap_pop(&h));
    push_el(&h, &els[1]);
    ck_assert_ptr_eq(heap_pop(&h), &els[1]);
    heap_clear(&h);
    free(els);
}
END_TEST

struct walk_log {
    struct el **seen;
    uint32_t n;
};

static void
walk_record(void *elem, void *arg)
{
    struct walk_log *w = arg;
    w->seen[w->n++] = elem;
}

START_TEST(test_walk)
{
    /* heap_walk visits in ascending key order, honours skip and count, and
     * leaves the heap (and every recorded index) exactly as it was. */
    const size_t n = 5000;
    struct el *els = els_new(n);
    struct el **sorted = malloc(n * sizeof *sorted);
    struct walk_log w = {malloc((n + 1) * sizeof *w.seen), 0};
    struct heap h;
    heap_init(&h, el_set_index);

    ck_assert_uint_eq(heap_walk(&h, 0, 10, walk_record, &w), 0);
    ck_assert_uint_eq(w.n, 0);

    rng_seed(31337);
    for (size_t i = 0; i < n; i++) {
        els[i].k[0] = rng_below(5);
        els[i].k[1] = rng_below(5);
        els[i].k[2] = i; /* unique: the order is fully determined */
        push_el(&h, &els[i]);
        sorted[i] = &els[i];
    }
    qsort(sorted, n, sizeof *sorted, el_ptr_cmp);
    struct heap_item *before = malloc(n * sizeof *before);
    memcpy(before, h.items, n * sizeof *before);

    static const struct {
        uint64_t skip;
        uint32_t count;
    } windows[] = {{0, 1},          {0, 10},
                   {10, 10},        {0, 5000},
                   {0, UINT32_MAX}, {4995, 10},
                   {4999, 1},       {5000, 10},
                   {6000, 1},       {3, 0},
                   {1, 4999},       {2500, 100},
                   {UINT64_MAX, 5}, {UINT64_MAX - 1, UINT32_MAX}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(windows); i++) {
        uint64_t skip = windows[i].skip;
        uint32_t count = windows[i].count;
        uint64_t want = skip >= n ? 0 : WQ_MIN((uint64_t)count, n - skip);
        w.n = 0;
        uint32_t calls = heap_walk(&h, skip, count, walk_record, &w);
        ck_assert_uint_eq(calls, want);
        ck_assert_uint_eq(w.n, want);
        for (uint32_t j = 0; j < w.n; j++)
            REQUIRE(w.seen[j] == sorted[skip + j]);
        /* The heap is untouched. */
        REQUIRE(heap_len(&h) == n);
        REQUIRE(memcmp(before, h.items, n * sizeof *before) == 0);
        heap_verify(&h, els, n);
    }
    free(before);
    free(w.seen);
    free(sorted);
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

static Suite *
heap_suite(void)
{
    const struct unit_case cases[] = {
        {"empty", test_empty},
        {"random_matches_qsort", test_random_matches_qsort},
        {"lexicographic", test_lexicographic},
        {"fifo_ties", test_fifo_ties},
        {"remove_sift_up", test_remove_sift_up},
        {"remove_middle", test_remove_middle},
        {"index_tracking_mixed", test_index_tracking_mixed},
        {"large", test_large},
        {"shrink_after_drain", test_shrink_after_drain},
        {"walk", test_walk},
    };
    return unit_suite("heap", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(heap_suite(), NULL);
}
