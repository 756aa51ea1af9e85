/* heap_walk.c - visiting a heap's elements in order without changing it
 * (inspect jobs), by whichever of two ways costs less for the window asked:
 *
 * - best-first from the root: a frontier heap of positions, one pop per
 *   element passed; O(v log v) for v = skip + count, whatever the heap's
 *   size, but each step chases the frontier through the heap at random.
 * - selection: find the key at rank skip by a radix select over a copy of
 *   the keys, then keep the least skip + count items from that key on in a
 *   bounded heap in one pass over the array: O(len log m) at worst, m =
 *   count plus the items that share the key at rank skip, but most items
 *   cost one comparison, in sequential passes over flat arrays (a few ns
 *   per item, against 0.2-0.5 us per step of the other).
 *
 * Deep windows (say the last 1,000 of 200,000 jobs) take the second. */
#include "lib/wq.h"
#include "lib/heap.h"

#include "lib/alloc.h"

#define HEAP_D 4

/* Selection wins once the walk would pass more than 1/HEAP_WALK_RATIO of
 * the heap (at 200,000 items they cost the same near 5,000 steps; see
 * doc/benchmarks.md, "inspect jobs at a deep offset"). */
#define HEAP_WALK_RATIO 32

/* ---- best-first ---- */

/* The walk's frontier: a binary min-heap of positions in h, in h's order. */
struct heap_frontier {
    const struct heap *h;
    uint32_t *pos;
    uint32_t len;
};

static bool
frontier_less(const struct heap_frontier *f, uint32_t a, uint32_t b)
{
    return heap_less(f->h, &f->h->items[f->pos[a]], &f->h->items[f->pos[b]]);
}

static void
frontier_push(struct heap_frontier *f, uint32_t p)
{
    uint32_t i = f->len++;
    f->pos[i] = p;
    while (i > 0 && frontier_less(f, i, (i - 1) / 2)) {
        uint32_t parent = (i - 1) / 2, t = f->pos[i];
        f->pos[i] = f->pos[parent];
        f->pos[parent] = t;
        i = parent;
    }
}

static uint32_t
frontier_pop(struct heap_frontier *f)
{
    uint32_t top = f->pos[0];
    f->pos[0] = f->pos[--f->len];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < f->len && frontier_less(f, l, m))
            m = l;
        if (r < f->len && frontier_less(f, r, m))
            m = r;
        if (m == i)
            break;
        uint32_t t = f->pos[i];
        f->pos[i] = f->pos[m];
        f->pos[m] = t;
        i = m;
    }
    return top;
}

/* Visit ranks [skip, skip + count) of h (all of them exist) best-first. */
static void
heap_walk_best_first(const struct heap *h, uint64_t skip, uint32_t count,
                     void (*fn)(void *elem, void *arg), void *arg)
{
    uint64_t visits = skip + count;
    /* Each visit removes one position and adds at most HEAP_D. */
    struct heap_frontier f = {h, wq_malloc((size_t)(visits * (HEAP_D - 1) + 1) * sizeof(uint32_t)),
                              0};
    frontier_push(&f, 0);
    for (uint64_t n = 0; n < visits; n++) {
        uint32_t p = frontier_pop(&f);
        if (n >= skip)
            fn(h->items[p].elem, arg);
        uint64_t first = (uint64_t)p * HEAP_D + 1;
        for (uint64_t c = first; c < first + HEAP_D && c < h->len; c++)
            frontier_push(&f, (uint32_t)c);
    }
    wq_free(f.pos);
}

/* ---- selection ---- */

/* The key of rank `rank` (from 0) among h's items, and in *below how many
 * keys are less, with keys[0..len) as scratch: a most-significant-digit
 * radix select, 8 bits a round, each round starting at the highest bit
 * where the keys left still differ, so bits that every key shares (a
 * common priority, the high bits of sequence numbers) cost nothing.  At
 * most 8 rounds, each a counting pass and a branch-free compaction over the
 * keys left: O(len), whatever the keys are. */
static uint64_t
heap_select_key(const struct heap *h, uint64_t *keys, uint64_t rank, uint64_t *below)
{
    size_t n = h->len;
    uint64_t diff = 0;
    for (size_t i = 0; i < n; i++) {
        keys[i] = h->items[i].key;
        diff |= keys[i] ^ keys[0];
    }
    *below = 0;
    while (diff != 0) {
        int top = 63 - __builtin_clzll(diff);
        int shift = top >= 7 ? top - 7 : 0;
        size_t hist[256] = {0};
        for (size_t i = 0; i < n; i++)
            hist[(keys[i] >> shift) & 0xff]++;
        unsigned digit = 0;
        for (; rank >= hist[digit]; digit++) {
            rank -= hist[digit];
            *below += hist[digit];
        }
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = keys[i];
            keys[kept] = k;
            kept += ((k >> shift) & 0xff) == digit;
        }
        n = kept;
        diff = 0;
        for (size_t i = 0; i < n; i++)
            diff |= keys[i] ^ keys[0];
    }
    return keys[0];
}

/* In the binary max-heap a[0..n) (in h's order), move a[idx] down to its
 * place. */
static void
heap_walk_sift_down(const struct heap *h, struct heap_item *a, size_t n, size_t idx)
{
    struct heap_item it = a[idx];
    for (;;) {
        size_t c = 2 * idx + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(h, &a[c], &a[c + 1]))
            c++;
        if (!heap_less(h, &it, &a[c]))
            break;
        a[idx] = a[c];
        idx = c;
    }
    a[idx] = it;
}

/* In the binary max-heap a[0..idx], move a[idx] up to its place. */
static void
heap_walk_sift_up(const struct heap *h, struct heap_item *a, size_t idx)
{
    struct heap_item it = a[idx];
    while (idx > 0 && heap_less(h, &a[(idx - 1) / 2], &it)) {
        a[idx] = a[(idx - 1) / 2];
        idx = (idx - 1) / 2;
    }
    a[idx] = it;
}

/* Visit ranks [skip, skip + count) of h (all of them exist) by selection;
 * false if the scratch memory was not there (nothing visited). */
static bool
heap_walk_select(const struct heap *h, uint64_t skip, uint32_t count,
                 void (*fn)(void *elem, void *arg), void *arg)
{
    uint64_t *keys = wq_try_malloc(h->len * sizeof *keys);
    if (keys == NULL)
        return false;
    uint64_t below;
    uint64_t first = heap_select_key(h, keys, skip, &below);
    /* sized free: valgrind sees wq_free's free() but not jemalloc's mallocx */
    wq_sized_free(keys, h->len * sizeof *keys);

    /* The `want` least items whose key is not below first (ranks below to
     * skip + count - 1), in a max-heap: in the heap's array order most
     * later items are greater than its top and cost one comparison. */
    size_t want = (size_t)(skip - below) + count, m = 0;
    struct heap_item *a = wq_try_malloc(want * sizeof *a);
    if (a == NULL)
        return false;
    for (size_t i = 0; i < h->len; i++) {
        const struct heap_item *it = &h->items[i];
        if (it->key < first)
            continue;
        if (m < want) {
            a[m] = *it;
            heap_walk_sift_up(h, a, m++);
        } else if (heap_less(h, it, &a[0])) {
            a[0] = *it;
            heap_walk_sift_down(h, a, m, 0);
        }
    }
    WQ_ASSERT(m == want);
    /* Sort them in place (the greatest to the back), then skip the ones
     * that share the key first but rank before skip. */
    for (size_t end = m; end > 1;) {
        struct heap_item top = a[0];
        a[0] = a[--end];
        a[end] = top;
        heap_walk_sift_down(h, a, end, 0);
    }
    for (size_t i = (size_t)(skip - below); i < want; i++)
        fn(a[i].elem, arg);
    wq_sized_free(a, want * sizeof *a);
    return true;
}

uint32_t
heap_walk(const struct heap *h, uint64_t skip, uint32_t count, void (*fn)(void *elem, void *arg),
          void *arg)
{
    if (skip >= h->len || count == 0)
        return 0;
    count = (uint32_t)WQ_MIN((uint64_t)count, h->len - skip);
    if ((skip + count) * HEAP_WALK_RATIO <= h->len || !heap_walk_select(h, skip, count, fn, arg))
        heap_walk_best_first(h, skip, count, fn, arg);
    return count;
}
