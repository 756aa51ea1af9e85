/* alloc.h - the one allocation API.
 * try-forms return NULL on failure and are used for anything a client sizes
 * (payloads, results); the plain forms abort with a log line and are used for
 * small internal objects.  Backed by jemalloc when built with it. */
#ifndef WQ_ALLOC_H
#define WQ_ALLOC_H

#include "lib/wq.h"

void *wq_malloc(size_t size);
void *wq_calloc(size_t n, size_t size);
void *wq_realloc(void *p, size_t size);
void wq_free(void *p);
/* size bytes aligned to align (a power of two dividing size); free with
 * wq_free. */
void *wq_aligned_alloc(size_t align, size_t size);

/* May return NULL; free with wq_sized_free(p, size) or wq_free(p). */
void *wq_try_malloc(size_t size);
/* Free p, allocated with exactly `size` bytes (jemalloc's sized free). */
void wq_sized_free(void *p, size_t size);
/* The bytes an allocation of `size` really takes (its size class), so that
 * a caller can use all of them; `size` itself where that is unknown. */
size_t wq_good_size(size_t size);

/* Set the allocator to give freed memory back to the system within about
 * a second, also while the server is idle (jemalloc's decay and its
 * background thread).  Call once, after any fork: it starts a thread. */
void alloc_give_back(void);
/* Name of the allocator in use, one word: "jemalloc-5.3.0-..." or "libc". */
const char *alloc_name(void);
/* Bytes allocated by the application, as the allocator counts them
 * (jemalloc's stats.allocated; with libc, mallinfo2's in-use bytes, or the
 * resident size where a sanitizer hides those). */
size_t alloc_memory_used(void);
/* jemalloc's stats.allocated and stats.resident, after an epoch refresh:
 * 0, or -1 when not built with jemalloc (or the stats are unavailable). */
int alloc_jemalloc_stats(size_t *allocated, size_t *resident);

#endif /* WQ_ALLOC_H */
