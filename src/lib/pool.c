/* pool.c - fixed-size object pools. */
#include "lib/wq.h"
#include "lib/pool.h"

#include <stdalign.h>

#include "lib/alloc.h"

/* The header at the start of every block. */
struct pool_block {
    struct pool_block *prev, *next; /* in pool.open while it has room, else pool.full */
    void *free_list;                /* put-back objects, linked through their first word */
    uint32_t used;                  /* objects handed out */
    uint32_t cut;                   /* objects cut so far; the rest are untouched */
};

/* Where the first object starts: the header, padded to max_align_t. */
#define POOL_HEADER                                                                                \
    ((sizeof(struct pool_block) + alignof(max_align_t) - 1) / alignof(max_align_t) *               \
     alignof(max_align_t))

void
pool_init(struct pool *p, size_t obj_size, size_t per_block)
{
    size_t word = alignof(void *);
    if (obj_size < sizeof(void *))
        obj_size = sizeof(void *);
    /* Blocks are aligned to their size and the header keeps max_align_t
     * alignment; every size is a multiple of the alignment it needs, so
     * objects cut one after another stay aligned. */
    p->obj_size = (obj_size + word - 1) / word * word;
    per_block = per_block ? per_block : 1;
    size_t bytes = 1024;
    while (bytes < POOL_HEADER + p->obj_size * per_block)
        bytes *= 2;
    p->block_size = bytes;
    /* Fill the whole block: 1024 jobs of 88 bytes would leave 38 KiB of a
     * 128 KiB block unused. */
    p->per_block = WQ_MIN((bytes - POOL_HEADER) / p->obj_size, (size_t)UINT32_MAX);
    p->open = p->full = NULL;
    p->blocks = 0;
    p->in_use = 0;
}

/* Put b first in list *head. */
static void
pool_link(struct pool_block **head, struct pool_block *b)
{
    b->prev = NULL;
    b->next = *head;
    if (*head != NULL)
        (*head)->prev = b;
    *head = b;
}

/* Take b out of list *head. */
static void
pool_unlink(struct pool_block **head, struct pool_block *b)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else
        *head = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
}

/* Free the blocks of list b. */
static void
pool_free_list(struct pool_block *b)
{
    while (b != NULL) {
        struct pool_block *next = b->next;
        wq_free(b);
        b = next;
    }
}

void
pool_clear(struct pool *p)
{
    pool_free_list(p->open);
    pool_free_list(p->full);
    pool_init(p, p->obj_size, p->per_block);
}

void *
pool_get(struct pool *p)
{
    struct pool_block *b = p->open;
    if (b == NULL) {
        b = wq_aligned_alloc(p->block_size, p->block_size);
        b->free_list = NULL;
        b->used = b->cut = 0;
        pool_link(&p->open, b);
        p->blocks++;
    }
    void *obj = b->free_list;
    if (obj != NULL)
        b->free_list = *(void **)obj;
    else
        obj = (char *)b + POOL_HEADER + (size_t)b->cut++ * p->obj_size;
    if (++b->used == p->per_block) {
        pool_unlink(&p->open, b);
        pool_link(&p->full, b);
    }
    p->in_use++;
    return obj;
}

void
pool_put(struct pool *p, void *obj)
{
    if (obj == NULL)
        return;
    WQ_ASSERT(p->in_use > 0);
    struct pool_block *b = (struct pool_block *)((uintptr_t)obj & ~(uintptr_t)(p->block_size - 1));
    *(void **)obj = b->free_list;
    b->free_list = obj;
    p->in_use--;
    if (b->used-- == p->per_block) {
        pool_unlink(&p->full, b);
        pool_link(&p->open, b);
    } else if (b->used == 0 && (b->prev != NULL || b->next != NULL)) {
        /* Empty, and another block has room: give it back. */
        pool_unlink(&p->open, b);
        wq_free(b);
        p->blocks--;
    }
}
