/* check_heap.c - unit tests for the 4-ary min-heap (src/lib/heap.c).
 * Every test element carries its key and a sequence number; the tests' tie
 * function orders equal keys by that number, so (key, seq) is the full order
 * that pops and walks must follow.  Each element also records the position
 * the heap last reported for it, and heap_verify() checks after each
 * operation that those records, the heap order and the item array agree. */
#include "lib/wq.h"
#include "lib/heap.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "unit.h"

struct el {
    uint64_t key;
    uint64_t seq; /* decides equal keys under el_tie */
    uint32_t idx; /* as reported by set_index */
    bool in_heap; /* what the test believes */
};

/* What el_tie saw, to check that it runs only on equal keys and gets arg. */
struct tie_stats {
    uint64_t calls;
    uint64_t unequal; /* calls whose keys differed: must stay 0 */
};

static void
el_set_index(void *elem, uint32_t idx)
{
    struct el *e = elem;
    e->idx = idx;
}

static bool
el_tie(const void *a, const void *b, void *arg)
{
    const struct el *x = a, *y = b;
    struct tie_stats *st = arg;
    if (st != NULL) {
        st->calls++;
        st->unequal += x->key != y->key;
    }
    return x->seq < y->seq;
}

/* The full order: key, then seq. */
static int
el_cmp(const struct el *x, const struct el *y)
{
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return 0;
}

static int
el_ptr_cmp(const void *a, const void *b)
{
    return el_cmp(*(const struct el *const *)a, *(const struct el *const *)b);
}

/* Would the heap accept x and y in this order?  With no tie function, only
 * the keys count. */
static bool
el_in_order(const struct heap *h, const struct el *x, const struct el *y)
{
    return h->tie != NULL ? el_cmp(x, y) <= 0 : x->key <= y->key;
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
    heap_push(h, e->key, e);
    e->in_heap = true;
}

/* A random element of els[0..n) that is in the heap (there must be one). */
static struct el *
pick_in_heap(struct el *els, size_t n)
{
    size_t j;
    do {
        j = rng_below(n);
    } while (!els[j].in_heap);
    return &els[j];
}

/* Take e out of the middle of h. */
static void
remove_el(struct heap *h, struct el *e)
{
    heap_remove(h, e->idx);
    e->in_heap = false;
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
        REQUIRE(it->key == e->key);
        if (i > 0) {
            const struct heap_item *parent = heap_at(h, (i - 1) / 4);
            REQUIRE(!heap_less(h, it, parent));
            REQUIRE(el_in_order(h, parent->elem, e));
        }
    }
    for (size_t j = 0; j < n; j++) {
        if (els[j].in_heap)
            inside++;
        else
            REQUIRE(els[j].idx == HEAP_NO_INDEX);
    }
    REQUIRE(inside == heap_len(h));
}

/* The elements in the heap, sorted by the full order; free() the array. */
static struct el **
sorted_inside(const struct heap *h, struct el *els, size_t n)
{
    struct el **sorted = malloc((n + 1) * sizeof *sorted);
    ck_assert_ptr_nonnull(sorted);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (els[i].in_heap)
            sorted[m++] = &els[i];
    }
    REQUIRE(m == heap_len(h));
    qsort(sorted, m, sizeof *sorted, el_ptr_cmp);
    return sorted;
}

/* Pop everything, checking each pop against the sorted elements: the same
 * (key, seq) under a tie function, the same key without one. */
static void
drain_sorted(struct heap *h, struct el *els, size_t n)
{
    size_t m = heap_len(h);
    struct el **sorted = sorted_inside(h, els, n);
    for (size_t i = 0; i < m; i++) {
        struct el *top = heap_top(h);
        struct el *e = heap_pop(h);
        REQUIRE(top == e);
        REQUIRE(e != NULL);
        REQUIRE(e->in_heap);
        if (h->tie != NULL)
            REQUIRE(el_cmp(e, sorted[i]) == 0);
        else
            REQUIRE(e->key == sorted[i]->key);
        REQUIRE(e->idx == HEAP_NO_INDEX);
        e->in_heap = false;
    }
    REQUIRE(heap_len(h) == 0);
    ck_assert_ptr_null(heap_pop(h));
    free(sorted);
}

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

/* heap_walk over a few windows against the sorted elements (compared as in
 * drain_sorted); the heap and every recorded index must not change. */
static void
walk_check(const struct heap *h, struct el *els, size_t n)
{
    const uint32_t m = heap_len(h);
    const struct {
        uint64_t skip;
        uint32_t count;
    } windows[] = {{0, 1},
                   {0, 10},
                   {10, 10},
                   {0, m},
                   {0, UINT32_MAX},
                   {1, m - 1},
                   {m / 2, m / 4 + 1},
                   {m - 1, 1},
                   {m - 5, 10},
                   {m, 10},
                   {m + 1000, 1},
                   {3, 0},
                   {UINT64_MAX, 5},
                   {UINT64_MAX - 1, UINT32_MAX}};
    WQ_ASSERT(m > 5);
    struct el **sorted = sorted_inside(h, els, n);
    struct walk_log w = {malloc((m + 1) * sizeof *w.seen), 0};
    struct heap_item *before = malloc((m + 1) * sizeof *before);
    memcpy(before, h->items, m * sizeof *before);
    for (size_t i = 0; i < WQ_ARRAY_LEN(windows); i++) {
        uint64_t skip = windows[i].skip;
        uint32_t count = windows[i].count;
        uint64_t want = skip >= m ? 0 : WQ_MIN((uint64_t)count, m - skip);
        w.n = 0;
        uint32_t calls = heap_walk(h, skip, count, walk_record, &w);
        ck_assert_uint_eq(calls, want);
        ck_assert_uint_eq(w.n, want);
        for (uint32_t j = 0; j < w.n; j++) {
            if (h->tie != NULL)
                REQUIRE(el_cmp(w.seen[j], sorted[skip + j]) == 0);
            else
                REQUIRE(w.seen[j]->key == sorted[skip + j]->key);
        }
        REQUIRE(heap_len(h) == m);
        REQUIRE(memcmp(before, h->items, m * sizeof *before) == 0);
        heap_verify(h, els, n);
    }
    free(before);
    free(w.seen);
    free(sorted);
}

START_TEST(test_item_size)
{
    /* The per-job memory budget counts on this. */
    ck_assert_uint_eq(sizeof(struct heap_item), sizeof(uint64_t) + sizeof(void *));
    if (sizeof(void *) == 8)
        ck_assert_uint_eq(sizeof(struct heap_item), 16);
}
END_TEST

START_TEST(test_empty)
{
    for (int with_tie = 0; with_tie < 2; with_tie++) {
        struct heap h;
        heap_init(&h, el_set_index, with_tie ? el_tie : NULL, NULL);
        ck_assert_uint_eq(heap_len(&h), 0);
        ck_assert_ptr_null(heap_top(&h));
        ck_assert_ptr_null(heap_pop(&h));

        struct el e = {3, 0, HEAP_NO_INDEX, false};
        push_el(&h, &e);
        ck_assert_uint_eq(e.idx, 0);
        ck_assert_ptr_eq(heap_top(&h), &e);
        ck_assert_ptr_eq(heap_pop(&h), &e);
        ck_assert_uint_eq(e.idx, HEAP_NO_INDEX);
        ck_assert_ptr_null(heap_pop(&h));
        ck_assert_ptr_null(heap_top(&h));
        heap_clear(&h);
        heap_clear(&h); /* clearing an empty heap is harmless */
        ck_assert_ptr_null(heap_pop(&h));
    }
}
END_TEST

START_TEST(test_random_matches_qsort)
{
    /* A narrow key range makes the tie function decide often; random seqs
     * make its order differ from arrival order. */
    const size_t n = 20000;
    struct el *els = els_new(n);
    struct tie_stats st = {0, 0};
    struct heap h;
    heap_init(&h, el_set_index, el_tie, &st);
    rng_seed(42);
    for (size_t i = 0; i < n; i++) {
        els[i].key = rng_below(64);
        els[i].seq = rng_next();
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);
    ck_assert_uint_gt(st.calls, 0);
    ck_assert_uint_eq(st.unequal, 0);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_key_order)
{
    /* Keys compare as unsigned 64-bit numbers, pushed in reverse of the
     * expected order; all keys differ, so the tie function is never asked. */
    static const uint64_t keys[] = {
        UINT64_MAX, UINT64_MAX - 1, 1ull << 63, INT64_MAX, UINT32_MAX + 1ull, UINT32_MAX, 2, 1, 0};
    const size_t n = WQ_ARRAY_LEN(keys);
    struct el els[WQ_ARRAY_LEN(keys)];
    struct tie_stats st = {0, 0};
    struct heap h;
    heap_init(&h, el_set_index, el_tie, &st);
    for (size_t i = 0; i < n; i++)
        els[i] = (struct el){keys[i], n - i, HEAP_NO_INDEX, false};
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
    ck_assert_uint_eq(st.calls, 0);
    heap_clear(&h);
}
END_TEST

START_TEST(test_fifo_ties)
{
    /* Equal keys: the sequence number gives arrival order, also when pushes
     * and pops interleave. */
    const size_t n = 1000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index, el_tie, NULL);
    size_t next_pop = 0;
    for (size_t i = 0; i < n; i++) {
        els[i].key = 7;
        els[i].seq = i;
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

    /* A smaller key (a higher priority) still jumps the FIFO, even with a
     * later sequence number. */
    els[0].key = 7;
    els[1].key = 7;
    els[2].key = 3;
    for (size_t i = 0; i < 3; i++)
        push_el(&h, &els[i]);
    ck_assert_ptr_eq(heap_pop(&h), &els[2]);
    ck_assert_ptr_eq(heap_pop(&h), &els[0]);
    ck_assert_ptr_eq(heap_pop(&h), &els[1]);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_tie_decides)
{
    /* The queue's case: the key holds only the priority, most keys are
     * equal, and the order among them lives in the elements.  Pops and
     * walks must follow (priority, seq) exactly. */
    const size_t n = RUNNING_ON_VALGRIND ? 3000 : 20000;
    struct el *els = els_new(n);
    struct tie_stats st = {0, 0};
    struct heap h;
    heap_init(&h, el_set_index, el_tie, &st);
    rng_seed(5);
    /* Unique seqs in shuffled order: Fisher-Yates over 0..n-1. */
    for (size_t i = 0; i < n; i++)
        els[i].seq = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rng_below(i + 1);
        uint64_t t = els[i].seq;
        els[i].seq = els[j].seq;
        els[j].seq = t;
    }
    for (size_t i = 0; i < n; i++) {
        /* Nine in ten share priority 1. */
        els[i].key = rng_below(10) == 0 ? rng_below(3) : 1;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    walk_check(&h, els, n);

    /* A full walk sees exactly the pop order. */
    struct walk_log w = {malloc(n * sizeof *w.seen), 0};
    ck_assert_uint_eq(heap_walk(&h, 0, (uint32_t)n, walk_record, &w), n);
    struct el **sorted = sorted_inside(&h, els, n);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(w.seen[i] == sorted[i]);
        struct el *e = heap_pop(&h);
        REQUIRE(e == sorted[i]);
        e->in_heap = false;
    }
    ck_assert_uint_gt(st.calls, n);
    ck_assert_uint_eq(st.unequal, 0);
    free(sorted);
    free(w.seen);
    heap_clear(&h);
    free(els);
}
END_TEST

/* Push keys[i] with seq seqs[i]; check the elements land at positions 0..n-1
 * in push order, then remove [5]: the last item (9) moves into [5], under
 * [1].  The layout (children of i are 4i+1..4i+4) is
 *   [0]=0  [1]=150  [2..4]=10  [5..8]=200 (under [1])  [9]=20 (under [2])
 * in whichever of key or seq varies, so 20 is less than its new parent 150
 * and must move up, not down. */
static void
remove_sift_up_case(const uint64_t *keys, const uint64_t *seqs)
{
    enum { N = 10 };
    struct el els[N];
    memset(els, 0, sizeof els);
    struct heap h;
    heap_init(&h, el_set_index, el_tie, NULL);
    for (size_t i = 0; i < N; i++) {
        els[i].key = keys[i];
        els[i].seq = seqs[i];
        els[i].idx = HEAP_NO_INDEX;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, N);
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(els[i].idx, i);

    heap_remove(&h, els[5].idx);
    els[5].in_heap = false;
    heap_verify(&h, els, N);
    ck_assert_uint_eq(els[9].idx, 1); /* 20 moved up into 150's place */
    ck_assert_uint_eq(els[1].idx, 5);

    /* Remove the last position and the root too. */
    heap_remove(&h, heap_len(&h) - 1);
    for (size_t i = 0; i < N; i++) {
        if (els[i].in_heap && els[i].idx == HEAP_NO_INDEX)
            els[i].in_heap = false;
    }
    heap_verify(&h, els, N);
    heap_remove(&h, 0);
    els[0].in_heap = false;
    heap_verify(&h, els, N);
    drain_sorted(&h, els, N);
    heap_clear(&h);
}

START_TEST(test_remove_sift_up)
{
    static const uint64_t order[] = {0, 150, 10, 10, 10, 200, 200, 200, 200, 20};
    static const uint64_t ramp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const uint64_t same[] = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5};
    remove_sift_up_case(order, ramp); /* the keys decide */
    remove_sift_up_case(same, order); /* all keys equal: the tie decides */
}
END_TEST

START_TEST(test_remove_sift_down_ties)
{
    /* All keys equal.  Removing [1] puts the last item, which orders after
     * everything, in its place, so it must sink below [1]'s children. */
    enum { N = 21 };
    struct el els[N];
    memset(els, 0, sizeof els);
    struct heap h;
    heap_init(&h, el_set_index, el_tie, NULL);
    for (size_t i = 0; i < N; i++) {
        els[i].key = 42;
        els[i].seq = i;
        els[i].idx = HEAP_NO_INDEX;
        push_el(&h, &els[i]);
        ck_assert_uint_eq(els[i].idx, i); /* seq order is heap order */
    }
    heap_remove(&h, 1);
    els[1].in_heap = false;
    heap_verify(&h, els, N);
    ck_assert_uint_eq(els[5].idx, 1); /* the least of [1]'s children rose */
    ck_assert_uint_ne(els[20].idx, 1);
    ck_assert_uint_ge(els[20].idx, 5);
    drain_sorted(&h, els, N);
    heap_clear(&h);
}
END_TEST

/* Remove two thirds of n elements, chosen at random, through their recorded
 * index, verifying after each removal; then drain. */
static void
remove_middle_case(heap_tie_fn tie, uint64_t key_range, uint64_t seed)
{
    const size_t n = RUNNING_ON_VALGRIND ? 1500 : 3000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index, tie, NULL);
    rng_seed(seed);
    for (size_t i = 0; i < n; i++) {
        els[i].key = rng_below(key_range);
        els[i].seq = rng_next();
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    for (size_t r = 0; r < 2 * n / 3; r++) {
        struct el *e = pick_in_heap(els, n);
        ck_assert_ptr_eq(heap_at(&h, e->idx)->elem, e);
        remove_el(&h, e);
        heap_verify(&h, els, n);
    }
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}

START_TEST(test_remove_middle)
{
    remove_middle_case(el_tie, 100, 7); /* mostly distinct keys */
    remove_middle_case(el_tie, 3, 8);   /* mostly equal keys: the tie decides */
    remove_middle_case(NULL, 3, 9);     /* equal keys with no tie function */
}
END_TEST

START_TEST(test_index_tracking_mixed)
{
    /* Random pushes, pops and removes; full verification after each.  Tiny
     * ranges make equal keys and even equal (key, seq) pairs common. */
    const size_t n = 1500;
    for (int with_tie = 0; with_tie < 2; with_tie++) {
        struct el *els = els_new(n);
        struct heap h;
        heap_init(&h, el_set_index, with_tie ? el_tie : NULL, NULL);
        rng_seed(99 + (uint64_t)with_tie);
        int ops = RUNNING_ON_VALGRIND ? 3000 : 6000;
        for (int op = 0; op < ops; op++) {
            unsigned what = (unsigned)rng_below(10);
            if (what < 5) {
                size_t j = rng_below(n);
                if (els[j].in_heap)
                    continue;
                els[j].key = rng_below(4);
                els[j].seq = rng_below(4);
                push_el(&h, &els[j]);
            } else if (what < 7) {
                bool empty = heap_len(&h) == 0;
                struct el *e = heap_pop(&h);
                if (empty) {
                    ck_assert_ptr_null(e);
                    continue;
                }
                for (size_t j = 0; j < n; j++) {
                    if (els[j].in_heap && &els[j] != e)
                        REQUIRE(el_in_order(&h, e, &els[j]));
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
}
END_TEST

START_TEST(test_null_tie)
{
    /* Without a tie function equal keys are equal: pops and walks come out
     * in key order, every element exactly once, in some order among equal
     * keys. */
    const size_t n = 4000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index, NULL, NULL);
    rng_seed(11);
    for (size_t i = 0; i < n; i++) {
        els[i].key = rng_below(4);
        els[i].seq = i;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    walk_check(&h, els, n);

    /* A full walk visits each element once. */
    struct walk_log w = {malloc(n * sizeof *w.seen), 0};
    ck_assert_uint_eq(heap_walk(&h, 0, (uint32_t)n, walk_record, &w), n);
    bool *seen = calloc(n, sizeof *seen);
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)(w.seen[i] - els);
        REQUIRE(j < n && !seen[j]);
        seen[j] = true;
        if (i > 0)
            REQUIRE(w.seen[i - 1]->key <= w.seen[i]->key);
    }

    /* Removing from the middle among equal keys. */
    for (size_t r = 0; r < n / 2; r++) {
        remove_el(&h, pick_in_heap(els, n));
        if (r % 64 == 0)
            heap_verify(&h, els, n);
    }
    heap_verify(&h, els, n);
    walk_check(&h, els, n);
    drain_sorted(&h, els, n);

    /* All keys equal: the heap is then a bag. */
    memset(seen, 0, n * sizeof *seen);
    for (size_t i = 0; i < n; i++) {
        els[i].key = 0;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    for (size_t i = 0; i < n; i++) {
        struct el *e = heap_pop(&h);
        size_t j = (size_t)(e - els);
        REQUIRE(j < n && !seen[j]);
        seen[j] = true;
        e->in_heap = false;
    }
    ck_assert_ptr_null(heap_pop(&h));
    free(seen);
    free(w.seen);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_large)
{
    /* Random 64-bit keys: ties are (almost) never asked for. */
    const size_t n = 100000;
    struct el *els = els_new(n);
    struct tie_stats st = {0, 0};
    struct heap h;
    heap_init(&h, el_set_index, el_tie, &st);
    rng_seed(2024);
    for (size_t i = 0; i < n; i++) {
        els[i].key = rng_next();
        els[i].seq = i;
        push_el(&h, &els[i]);
    }
    ck_assert_uint_eq(heap_len(&h), n);
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);
    ck_assert_uint_eq(st.unequal, 0);
    ck_assert_uint_le(st.calls, 10);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_grow_and_shrink)
{
    const size_t n = 100000;
    struct el *els = els_new(n);
    struct heap h;
    heap_init(&h, el_set_index, el_tie, NULL);
    ck_assert_uint_eq(h.cap, 0); /* nothing allocated before the first push */
    for (size_t i = 0; i < n; i++) {
        els[i].key = n - i;
        push_el(&h, &els[i]);
        REQUIRE(h.cap >= heap_len(&h));
    }
    ck_assert_uint_ge(h.cap, n);
    ck_assert_uint_lt(h.cap, 2 * n); /* grows by doubling, not more */
    heap_verify(&h, els, n);
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

    /* The shrunken heap grows again and still works, ties included. */
    for (size_t i = 0; i < 1000; i++) {
        els[i].key = i % 10;
        els[i].seq = 1000 - i;
        push_el(&h, &els[i]);
    }
    heap_verify(&h, els, n);
    drain_sorted(&h, els, n);

    /* heap_clear releases everything; the heap is reusable afterwards. */
    push_el(&h, &els[0]);
    heap_clear(&h);
    els[0].in_heap = false;
    ck_assert_uint_eq(heap_len(&h), 0);
    ck_assert_uint_eq(h.cap, 0);
    ck_assert_ptr_null(heap_pop(&h));
    push_el(&h, &els[1]);
    ck_assert_ptr_eq(heap_pop(&h), &els[1]);
    heap_clear(&h);
    free(els);
}
END_TEST

START_TEST(test_walk)
{
    /* heap_walk visits in the full order, honours skip and count, and leaves
     * the heap (and every recorded index) exactly as it was. */
    const size_t n = 5000;
    struct el *els = els_new(n);
    struct walk_log w = {malloc(sizeof *w.seen), 0};
    struct heap h;
    heap_init(&h, el_set_index, el_tie, NULL);

    ck_assert_uint_eq(heap_walk(&h, 0, 10, walk_record, &w), 0);
    ck_assert_uint_eq(w.n, 0);
    free(w.seen);

    rng_seed(31337);
    for (size_t i = 0; i < n; i++) {
        els[i].key = rng_below(25);
        els[i].seq = i; /* unique: the order is fully determined */
        push_el(&h, &els[i]);
    }
    walk_check(&h, els, n);

    /* After removals from the middle, the walk still matches. */
    for (size_t r = 0; r < n / 3; r++)
        remove_el(&h, pick_in_heap(els, n));
    walk_check(&h, els, n);
    drain_sorted(&h, els, n);
    heap_clear(&h);
    free(els);
}
END_TEST

/* Deep windows take the selection (heap_walk.c): its radix rounds start
 * where the keys differ, whether that is in the low bits only (one
 * priority, sequence numbers), the high bits only, or everywhere; and
 * equal keys at the window's edges are ordered by the tie function. */
START_TEST(test_walk_deep)
{
    const size_t n = 20000;
    const uint64_t shapes[][2] = {
        /* {mask of random bits, constant bits} */
        {0xfffff, 0x7fff000000000000ull},
        {0xffffull << 44, 0},
        {UINT64_MAX, 0},
        {0x7, 0x100},
    };
    rng_seed(4242);
    for (size_t s = 0; s < WQ_ARRAY_LEN(shapes); s++) {
        struct el *els = els_new(n);
        struct heap h;
        heap_init(&h, el_set_index, el_tie, NULL);
        for (size_t i = 0; i < n; i++) {
            els[i].key = (rng_next() & shapes[s][0]) | shapes[s][1];
            els[i].seq = i;
            push_el(&h, &els[i]);
        }
        walk_check(&h, els, n);
        drain_sorted(&h, els, n);
        heap_clear(&h);
        free(els);
    }
}
END_TEST

static Suite *
heap_suite(void)
{
    const struct unit_case cases[] = {
        {"item_size", test_item_size},
        {"empty", test_empty},
        {"random_matches_qsort", test_random_matches_qsort},
        {"key_order", test_key_order},
        {"fifo_ties", test_fifo_ties},
        {"tie_decides", test_tie_decides},
        {"remove_sift_up", test_remove_sift_up},
        {"remove_sift_down_ties", test_remove_sift_down_ties},
        {"remove_middle", test_remove_middle},
        {"index_tracking_mixed", test_index_tracking_mixed},
        {"null_tie", test_null_tie},
        {"large", test_large},
        {"grow_and_shrink", test_grow_and_shrink},
        {"walk", test_walk},
        {"walk_deep", test_walk_deep},
    };
    return unit_suite("heap", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(heap_suite(), NULL);
}
