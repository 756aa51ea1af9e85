/* pool.c - fixed-size object pools. */
#include "wq.h"
#include "pool.h"

#include <stdalign.h>

#include "alloc.h"

/* The block header: only the link to the next block, padded to alignment. */
#define POOL_HEADER WQ_MAX(sizeof(void *), alignof(max_align_t))

void
pool_init(struct pool *p, size_t obj_size, size_t per_block)
{
    size_t word = alignof(void *);
    if (obj_size < sizeof(void *))
        obj_size = sizeof(void *);
    /* The block header keeps max_align_t alignment, and every size is a
     * multiple of the alignment it needs, so objects cut one after another
     * stay aligned. */
    p->obj_size = (obj_size + word - 1) / word * word;
    per_block = per_block ? per_block : 1;
    /* Fill the block's whole size class: 1024 jobs of 88 bytes would leave
     * 8 KiB of a 96 KiB class unused. */
    size_t bytes = wq_good_size(POOL_HEADER + p->obj_size * per_block);
    p->per_block = (bytes - POOL_HEADER) / p->obj_size;
    p->free_list = NULL;
    p->cur = NULL;
    p->cur_left = 0;
    p->blocks = NULL;
    p->in_use = 0;
}

void
pool_clear(struct pool *p)
{
    void *b = p->blocks;
    while (b != NULL) {
        void *next = *(void **)b;
        wq_free(b);
        b = next;
    }
    pool_init(p, p->obj_size, p->per_block);
}

void *
pool_get(struct pool *p)
{
    void *obj = p->free_list;
    if (obj != NULL) {
        p->free_list = *(void **)obj;
    } else {
        if (p->cur_left == 0) {
            char *b = wq_malloc(POOL_HEADER + p->obj_size * p->per_block);
            *(void **)b = p->blocks;
            p->blocks = b;
            p->cur = b + POOL_HEADER;
            p->cur_left = p->per_block;
        }
        obj = p->cur;
        p->cur += p->obj_size;
        p->cur_left--;
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
    *(void **)obj = p->free_list;
    p->free_list = obj;
    p->in_use--;
}
