/* heap.c - 4-ary min-heap with positions reported to the elements.
 * A 4-ary heap is shallower than a binary one, and a node's four 16-byte
 * children fill 64 contiguous bytes (two cache lines at most), which makes
 * pop cheaper on large queues.  Items carry the key, so comparing two of
 * them reads the array alone unless the keys are equal. */
#include "lib/wq.h"
#include "lib/heap.h"

#include "lib/alloc.h"

#define HEAP_D 4

void
heap_init(struct heap *h, heap_index_fn set_index, heap_tie_fn tie, void *arg)
{
    h->items = NULL;
    h->len = h->cap = 0;
    h->set_index = set_index;
    h->tie = tie;
    h->arg = arg;
}

void
heap_clear(struct heap *h)
{
    wq_free(h->items);
    h->items = NULL;
    h->len = h->cap = 0;
}

static inline void
heap_place(struct heap *h, uint32_t idx, const struct heap_item *it)
{
    h->items[idx] = *it;
    h->set_index(it->elem, idx);
}

/* Move item up from idx until its parent is not greater. */
static void
heap_sift_up(struct heap *h, uint32_t idx, struct heap_item it)
{
    while (idx > 0) {
        uint32_t parent = (idx - 1) / HEAP_D;
        if (!heap_less(h, &it, &h->items[parent]))
            break;
        heap_place(h, idx, &h->items[parent]);
        idx = parent;
    }
    heap_place(h, idx, &it);
}

/* Move item down from idx until no child is smaller. */
static void
heap_sift_down(struct heap *h, uint32_t idx, struct heap_item it)
{
    for (;;) {
        uint64_t first = (uint64_t)idx * HEAP_D + 1;
        if (first >= h->len)
            break;
        uint32_t last = (uint32_t)WQ_MIN(first + HEAP_D, (uint64_t)h->len);
        uint32_t best = (uint32_t)first;
        for (uint32_t c = best + 1; c < last; c++) {
            if (heap_less(h, &h->items[c], &h->items[best]))
                best = c;
        }
        if (!heap_less(h, &h->items[best], &it))
            break;
        heap_place(h, idx, &h->items[best]);
        idx = best;
    }
    heap_place(h, idx, &it);
}

void
heap_push(struct heap *h, uint64_t key, void *elem)
{
    if (h->len == h->cap) {
        WQ_ASSERT(h->cap < UINT32_MAX / 2);
        h->cap = h->cap ? h->cap * 2 : 16;
        h->items = wq_realloc(h->items, (size_t)h->cap * sizeof *h->items);
    }
    struct heap_item it = {key, elem};
    heap_sift_up(h, h->len++, it);
}

void *
heap_top(const struct heap *h)
{
    return h->len ? h->items[0].elem : NULL;
}

void
heap_remove(struct heap *h, uint32_t idx)
{
    WQ_ASSERT(idx < h->len);
    void *elem = h->items[idx].elem;
    struct heap_item last = h->items[--h->len];
    if (idx < h->len) {
        if (idx > 0 && heap_less(h, &last, &h->items[(idx - 1) / HEAP_D]))
            heap_sift_up(h, idx, last);
        else
            heap_sift_down(h, idx, last);
    }
    h->set_index(elem, HEAP_NO_INDEX);
    /* Shrink a heap that emptied out after a burst, so memory follows load. */
    if (h->cap > 64 && h->len < h->cap / 4) {
        h->cap /= 2;
        h->items = wq_realloc(h->items, (size_t)h->cap * sizeof *h->items);
    }
}

void *
heap_pop(struct heap *h)
{
    if (h->len == 0)
        return NULL;
    void *elem = h->items[0].elem;
    heap_remove(h, 0);
    return elem;
}
