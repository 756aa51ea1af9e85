/* heap.h - a 4-ary min-heap of elements ordered by a three-word key.
 * Keys are compared lexicographically (k[0], then k[1], then k[2]), so a
 * caller encodes its ordering once, when it pushes, and comparisons never
 * touch the elements.  Each move reports the element's new position through
 * the index callback, so an element can be removed from the middle in
 * O(log n) given its index. */
#ifndef WQ_HEAP_H
#define WQ_HEAP_H

#include "wq.h"

#define HEAP_NO_INDEX UINT32_MAX

struct heap_item {
    uint64_t k[3];
    void    *elem;
};

/* Called whenever elem lands at position idx (HEAP_NO_INDEX: it left). */
typedef void (*heap_index_fn)(void *elem, uint32_t idx);

struct heap {
    struct heap_item *items;
    uint32_t          len, cap;
    heap_index_fn     set_index;
};

void heap_init(struct heap *h, heap_index_fn set_index);
/* Free the item array; the elements are the caller's. */
void heap_clear(struct heap *h);

static inline uint32_t
heap_len(const struct heap *h)
{
    return h->len;
}

/* Insert elem with key k (aborts if memory is exhausted). */
void  heap_push(struct heap *h, const uint64_t k[3], void *elem);
/* The least element, or NULL when empty. */
void *heap_top(const struct heap *h);
/* Remove and return the least element, or NULL when empty. */
void *heap_pop(struct heap *h);
/* Remove the element at position idx (as reported by set_index). */
void  heap_remove(struct heap *h, uint32_t idx);

/* The item at position idx, for read-only walks (idx < len).  Children of
 * position i are 4i+1 .. 4i+4. */
static inline const struct heap_item *
heap_at(const struct heap *h, uint32_t idx)
{
    return &h->items[idx];
}

/* Is item a ordered before item b? */
static inline bool
heap_item_less(const struct heap_item *a, const struct heap_item *b)
{
    if (a->k[0] != b->k[0])
        return a->k[0] < b->k[0];
    if (a->k[1] != b->k[1])
        return a->k[1] < b->k[1];
    return a->k[2] < b->k[2];
}

/* Visit the elements in ascending key order without changing the heap:
 * skip the first `skip`, then call fn on up to `count` of them.  Costs
 * O((skip + count) log(skip + count)) by a best-first walk from the root,
 * whatever the heap's size.  Returns the number of calls made. */
uint32_t heap_walk(const struct heap *h, uint64_t skip, uint32_t count,
                   void (*fn)(void *elem, void *arg), void *arg);

#endif /* WQ_HEAP_H */
