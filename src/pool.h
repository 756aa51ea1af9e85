/* pool.h - fixed-size object pools: O(1) get and put, no per-object header.
 * Objects are carved from large blocks; a put object goes on a free list and
 * is handed out again before a new block is cut.  Blocks are released only by
 * pool_clear.  Sizes are rounded up to a multiple of a pointer, and objects
 * are aligned as any type of their rounded size can need: to the largest
 * power of two dividing it, up to max_align_t (an 88-byte job is 8-aligned,
 * not padded to 96). */
#ifndef WQ_POOL_H
#define WQ_POOL_H

#include "wq.h"

struct pool {
    size_t obj_size;  /* rounded up to the alignment */
    size_t per_block; /* objects per block: at least as asked, filling its size class */
    void *free_list;  /* singly linked through the first word */
    char *cur;        /* next uncut object in the newest block */
    size_t cur_left;  /* objects left to cut from it */
    void *blocks;     /* list of blocks, linked through their first word */
    size_t in_use;    /* objects handed out and not put back */
};

/* Prepare a pool of objects of obj_size bytes, cut per_block at a time. */
void pool_init(struct pool *p, size_t obj_size, size_t per_block);
/* Release every block; objects still in use become invalid. */
void pool_clear(struct pool *p);
/* An uninitialised object (aborts if memory is exhausted). */
void *pool_get(struct pool *p);
/* Give obj (from this pool) back; NULL is ignored. */
void pool_put(struct pool *p, void *obj);

#endif /* WQ_POOL_H */
