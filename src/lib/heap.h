/* heap.h - a 4-ary min-heap of elements ordered by a 64-bit key, with a
 * tie-break function for equal keys.  The caller encodes as much of its
 * ordering as fits in the key when it pushes (if key(a) < key(b), a comes
 * first), so most comparisons never touch the elements; only equal keys ask
 * the tie function, which reads the elements.  Each move reports the
 * element's new position through the index callback, so an element can be
 * removed from the middle in O(log n) given its index. */
#ifndef WQ_HEAP_H
#define WQ_HEAP_H

#include "lib/wq.h"

#define HEAP_NO_INDEX UINT32_MAX

/* 16 bytes on LP64: the heap's share of the per-job memory budget. */
struct heap_item {
    uint64_t key;
    void *elem;
};
_Static_assert(sizeof(struct heap_item) == sizeof(uint64_t) + sizeof(void *),
               "struct heap_item must not carry padding");

/* Called whenever elem lands at position idx (HEAP_NO_INDEX: it left). */
typedef void (*heap_index_fn)(void *elem, uint32_t idx);
/* For two elements with equal keys: is a ordered strictly before b?  Must be
 * a strict weak order that holds still while the elements are in the heap;
 * it may not touch the heap. */
typedef bool (*heap_tie_fn)(const void *a, const void *b, void *arg);

struct heap {
    struct heap_item *items;
    uint32_t len, cap;
    heap_index_fn set_index;
    heap_tie_fn tie; /* NULL: equal keys are equal, in any order */
    void *arg;       /* passed to tie */
};

/* An empty heap; allocates nothing until the first push. */
void heap_init(struct heap *h, heap_index_fn set_index, heap_tie_fn tie, void *arg);
/* Free the item array; the elements are the caller's. */
void heap_clear(struct heap *h);

static inline uint32_t
heap_len(const struct heap *h)
{
    return h->len;
}

/* Insert elem with key (aborts if memory is exhausted). */
void heap_push(struct heap *h, uint64_t key, void *elem);
/* The least element, or NULL when empty. */
void *heap_top(const struct heap *h);
/* Remove and return the least element, or NULL when empty. */
void *heap_pop(struct heap *h);
/* Remove the element at position idx (as reported by set_index). */
void heap_remove(struct heap *h, uint32_t idx);

/* The item at position idx, for read-only walks (idx < len).  Children of
 * position i are 4i+1 .. 4i+4. */
static inline const struct heap_item *
heap_at(const struct heap *h, uint32_t idx)
{
    return &h->items[idx];
}

/* Is item a ordered before item b?  The key decides; only equal keys, which
 * a good key encoding makes rare, pay for the call into tie.  (No
 * __builtin_expect here: it gained nothing on distinct keys and moved the
 * tie call out of line, costing 15-30% when equal keys are common.) */
static inline bool
heap_less(const struct heap *h, const struct heap_item *a, const struct heap_item *b)
{
    if (a->key != b->key)
        return a->key < b->key;
    return h->tie != NULL && h->tie(a->elem, b->elem, h->arg);
}

/* Visit the elements in heap_less order without changing the heap: skip the
 * first `skip`, then call fn on up to `count` of them.  fn must not change
 * the heap.  A best-first walk from the root for shallow windows, costing
 * O(v log v) for v = skip + count; a selection over the whole array for
 * deep ones (heap_walk.c), costing O(len log m) at worst and nearer O(len)
 * (most items cost one comparison), m = count plus the items that share
 * the first visited one's key.  Returns the number of calls made. */
uint32_t heap_walk(const struct heap *h, uint64_t skip, uint32_t count,
                   void (*fn)(void *elem, void *arg), void *arg);

#endif /* WQ_HEAP_H */
