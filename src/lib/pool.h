/* pool.h - fixed-size object pools: O(1) get and put, no per-object header.
 * Objects are carved from blocks aligned to their (power-of-two) size, so
 * an object's block is found by masking its address.  Each block keeps its
 * own free list and count; the pool takes from the blocks that have room,
 * most recently freed into first.  A block whose objects are all put back
 * is released to the allocator (unless it is the only block with room), so
 * a pool that held a million objects shrinks as they go.  Sizes are rounded
 * up to a multiple of a pointer, and objects are aligned as any type of
 * their rounded size can need: to the largest power of two dividing it, up
 * to max_align_t (an 88-byte job is 8-aligned, not padded to 96). */
#ifndef WQ_POOL_H
#define WQ_POOL_H

#include "lib/wq.h"

struct pool_block;

struct pool {
    size_t obj_size;         /* rounded up to the alignment */
    size_t per_block;        /* objects per block */
    size_t block_size;       /* bytes, a power of two; blocks are aligned to it */
    struct pool_block *open; /* blocks with room, doubly linked; taken from first */
    struct pool_block *full; /* blocks without */
    size_t blocks;           /* blocks held */
    size_t in_use;           /* objects handed out and not put back */
};

/* Prepare a pool of objects of obj_size bytes, at least per_block to a
 * block. */
void pool_init(struct pool *p, size_t obj_size, size_t per_block);
/* Release every block; objects still in use become invalid. */
void pool_clear(struct pool *p);
/* An uninitialised object (aborts if memory is exhausted). */
void *pool_get(struct pool *p);
/* Give obj (from this pool) back; NULL is ignored. */
void pool_put(struct pool *p, void *obj);

#endif /* WQ_POOL_H */
