/* alloc.c - allocation over jemalloc (or libc), try and aborting forms. */
#include "lib/wq.h"
#include "lib/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/log.h"

/* How long freed pages stay with jemalloc before they go back to the
 * system. */
#define ALLOC_DECAY_MS 1000

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

static _Noreturn void
alloc_oom(size_t size)
{
    wq_panic(__FILE__, __LINE__, "out of memory allocating %zu bytes", size);
}

void *
wq_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        alloc_oom(size);
    return p;
}

void *
wq_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        alloc_oom(n * size);
    return p;
}

void *
wq_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        alloc_oom(size);
    return q;
}

void
wq_free(void *p)
{
    free(p);
}

void *
wq_aligned_alloc(size_t align, size_t size)
{
    /* aligned_alloc, not mallocx: valgrind replaces it and free together */
    void *p = aligned_alloc(align, size);
    if (p == NULL)
        alloc_oom(size);
    return p;
}

void *
wq_try_malloc(size_t size)
{
#ifdef HAVE_JEMALLOC
    return mallocx(size ? size : 1, 0);
#else
    return malloc(size ? size : 1);
#endif
}

void
wq_sized_free(void *p, size_t size)
{
    if (p == NULL)
        return;
#ifdef HAVE_JEMALLOC
    sdallocx(p, size ? size : 1, 0);
#else
    (void)size;
    free(p);
#endif
}

size_t
wq_good_size(size_t size)
{
#ifdef HAVE_JEMALLOC
    size_t n = nallocx(size ? size : 1, 0);
    return n > 0 ? n : size;
#else
    return size;
#endif
}

const char *
alloc_name(void)
{
#ifdef HAVE_JEMALLOC
    static char name[64];
    if (name[0] == '\0') {
        const char *v = "?";
        size_t len = sizeof v;
        /* Also keeps -ljemalloc from being dropped by --as-needed. */
        if (mallctl("version", &v, &len, NULL, 0) != 0)
            v = "?";
        snprintf(name, sizeof name, "jemalloc-%s", v);
    }
    return name;
#else
    return "libc";
#endif
}

void
alloc_give_back(void)
{
#ifdef HAVE_JEMALLOC
    /* Pages freed stay with jemalloc for dirty_decay_ms (10 s by default),
     * and decay only advances when the process allocates: an idle server
     * kept its peak forever.  A background thread purges on time instead;
     * freed pages go back within about a second. */
    ssize_t decay_ms = ALLOC_DECAY_MS, muzzy_ms = 0;
    bool on = true;
    char name[64];
    snprintf(name, sizeof name, "arena.%u.dirty_decay_ms", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, &decay_ms, sizeof decay_ms);
    snprintf(name, sizeof name, "arena.%u.muzzy_decay_ms", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, &muzzy_ms, sizeof muzzy_ms);
    mallctl("arenas.dirty_decay_ms", NULL, NULL, &decay_ms, sizeof decay_ms);
    mallctl("arenas.muzzy_decay_ms", NULL, NULL, &muzzy_ms, sizeof muzzy_ms);
    if (mallctl("background_thread", NULL, NULL, &on, sizeof on) != 0)
        wq_log(LOG_LVL_WARN, "jemalloc has no background thread: freed memory is given back "
                             "only while the server allocates");
#endif
}

size_t
alloc_memory_used(void)
{
#ifdef HAVE_JEMALLOC
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len); /* refresh the cached stats */
    size_t allocated = 0;
    len = sizeof allocated;
    if (mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0)
        return 0;
    return allocated;
#else
    struct mallinfo2 mi = mallinfo2();
    size_t used = mi.uordblks + mi.hblkhd;
    if (used == 0) {
        /* Sanitizer builds replace malloc and report nothing here: fall back
         * to the resident size of the process. */
        unsigned long pages_total, pages_resident;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f != NULL) {
            if (fscanf(f, "%lu %lu", &pages_total, &pages_resident) == 2)
                used = (size_t)pages_resident * (size_t)sysconf(_SC_PAGESIZE);
            fclose(f);
        }
    }
    return used;
#endif
}

int
alloc_jemalloc_stats(size_t *allocated, size_t *resident)
{
#ifdef HAVE_JEMALLOC
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len); /* refresh the cached stats */
    len = sizeof *allocated;
    if (mallctl("stats.allocated", allocated, &len, NULL, 0) != 0)
        return -1;
    len = sizeof *resident;
    if (mallctl("stats.resident", resident, &len, NULL, 0) != 0)
        return -1;
    return 0;
#else
    (void)allocated;
    (void)resident;
    return -1;
#endif
}
