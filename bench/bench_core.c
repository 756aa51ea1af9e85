/* bench_core.c - microbenchmarks of the lease path's pieces, no network:
 * heap push/pop at 1k and 1M jobs, reading 1,000 of a heap in order (as
 * inspect jobs does) from its top, middle and end, registry lookups, wheel
 * add/cancel, pool vs malloc, and add -> lease -> complete through the job
 * core (on a long queue, and on a queue made and freed each time among
 * many).
 * Prints ns/op, the median of 5 runs each; and the memory per queued job. */
#include "lib/wq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "engine/core.h"
#include "lib/heap.h"
#include "lib/jobid.h"
#include "lib/log.h"
#include "lib/pool.h"
#include "lib/registry.h"
#include "lib/wheel.h"
#include "engine/workers.h"

#define RUNS 5

static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef double (*bench_fn)(size_t n); /* returns ns per operation */

static void
report(const char *name, bench_fn fn, size_t n)
{
    double v[RUNS];
    for (int i = 0; i < RUNS; i++)
        v[i] = fn(n);
    qsort(v, RUNS, sizeof v[0], cmp_double);
    printf("%-34s n=%-8zu %8.1f ns/op (min %.1f, max %.1f)\n", name, n, v[RUNS / 2], v[0],
           v[RUNS - 1]);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void
set_index(void *elem, uint32_t idx)
{
    (void)elem;
    (void)idx;
}

/* One push and one pop on a heap holding n items. */
static double
bench_heap(size_t n)
{
    struct heap h;
    heap_init(&h, set_index, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        heap_push(&h, (next_rand() & 0xffff) << 44 | i, NULL);
    size_t ops = 1000000;
    double t0 = now_ns();
    for (size_t i = 0; i < ops; i++) {
        heap_push(&h, (next_rand() & 0xffff) << 44 | (n + i), NULL);
        heap_pop(&h);
    }
    double t = (now_ns() - t0) / (double)ops;
    heap_clear(&h);
    return t;
}

static void
visit_nothing(void *elem, void *arg)
{
    *(uintptr_t *)arg += (uintptr_t)elem;
}

/* heap_walk of 1,000 items from skip on a heap of n (random priorities,
 * then arrival), as inspect jobs reads a queue; ns per call. */
static double
bench_heap_walk(size_t n, uint64_t skip)
{
    struct heap h;
    heap_init(&h, set_index, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        heap_push(&h, (next_rand() & 0x3ff) << 44 | i, (void *)(uintptr_t)(i + 1));
    uintptr_t sink = 0;
    int calls = 20;
    double t0 = now_ns();
    for (int i = 0; i < calls; i++)
        heap_walk(&h, skip, 1000, visit_nothing, &sink);
    double t = (now_ns() - t0) / calls;
    heap_clear(&h);
    return sink != 0 ? t : 0;
}

static double
bench_heap_walk_top(size_t n)
{
    return bench_heap_walk(n, 0);
}

static double
bench_heap_walk_middle(size_t n)
{
    return bench_heap_walk(n, n / 2);
}

static double
bench_heap_walk_end(size_t n)
{
    return bench_heap_walk(n, n - 1000);
}

struct item {
    uint8_t id[16];
};

static void
item_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct item *)elem)->id;
    *len = 16;
}

/* A lookup of a present id in a registry of n. */
static double
bench_registry(size_t n)
{
    struct registry *r = registry_new(item_key);
    struct item *items = wq_malloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = next_rand(), b = next_rand();
        memcpy(items[i].id, &a, 8);
        memcpy(items[i].id + 8, &b, 8);
        registry_insert(r, &items[i]);
    }
    size_t ops = 1000000, found = 0;
    double t0 = now_ns();
    for (size_t i = 0; i < ops; i++)
        found += registry_find(r, items[next_rand() % n].id, 16) != NULL;
    double t = (now_ns() - t0) / (double)ops;
    if (found != ops)
        abort();
    registry_free(r);
    wq_free(items);
    return t;
}

static void
fire_nothing(struct wheel_entry *e, uint64_t now, void *arg)
{
}

/* The wheel asks for deadlines only when time moves, which it never does here. */
static uint64_t
deadline_unasked(const struct wheel_entry *e, void *arg)
{
    abort();
}

/* An add and a cancel on a wheel already holding n entries. */
static double
bench_wheel(size_t n)
{
    struct wheel *w = wq_calloc(1, sizeof *w);
    wheel_init(w, 1000, deadline_unasked, fire_nothing, NULL);
    struct wheel_entry *es = wq_malloc(n * sizeof *es);
    for (size_t i = 0; i < n; i++) {
        wheel_entry_init(&es[i]);
        wheel_add(w, &es[i], 1000 + 1 + next_rand() % 3600000);
    }
    struct wheel_entry e;
    wheel_entry_init(&e);
    size_t ops = 1000000;
    double t0 = now_ns();
    for (size_t i = 0; i < ops; i++) {
        wheel_add(w, &e, 1000 + 1 + next_rand() % 60000);
        wheel_cancel(w, &e);
    }
    double t = (now_ns() - t0) / (double)ops;
    wq_free(es);
    wq_free(w);
    return t;
}

/* pool_get + pool_put of a job-sized object. */
static double
bench_pool(size_t n)
{
    struct pool p;
    pool_init(&p, sizeof(struct job), 1024);
    void **held = wq_malloc(n * sizeof *held);
    double t0 = now_ns();
    for (size_t round = 0; round < 10; round++) {
        for (size_t i = 0; i < n; i++)
            held[i] = pool_get(&p);
        for (size_t i = 0; i < n; i++)
            pool_put(&p, held[i]);
    }
    double t = (now_ns() - t0) / (double)(10 * n);
    pool_clear(&p);
    wq_free(held);
    return t;
}

/* malloc + free of a job-sized object, for comparison. */
static double
bench_malloc(size_t n)
{
    void **held = wq_malloc(n * sizeof *held);
    double t0 = now_ns();
    for (size_t round = 0; round < 10; round++) {
        for (size_t i = 0; i < n; i++)
            held[i] = wq_malloc(sizeof(struct job));
        for (size_t i = 0; i < n; i++)
            wq_free(held[i]);
    }
    double t = (now_ns() - t0) / (double)(10 * n);
    wq_free(held);
    return t;
}

static void
make_spec(struct job_spec *s, uint64_t i)
{
    static const char payload[] = "0123456789abcdef";
    memset(s, 0, sizeof *s);
    memcpy(s->id, &i, sizeof i);
    s->id[15] = 0x42;
    s->name = (struct wq_str){"bench", 5};
    s->ttr = 60000;
    s->ttl = 3600000;
    s->payload = payload;
    s->payload_len = 16;
}

static void
done_nothing(void *owner, enum waiter_outcome how, const struct core *c, struct job *j)
{
}

/* The timed part of the cycles below: add -> lease -> complete -> delete
 * on the queue "bench" of core c, which holds n jobs already; ns per
 * cycle.  Frees c. */
static double
bench_core_cycles(struct core *c, size_t n, uint64_t now)
{
    struct job_spec s;
    struct wq_str name = {"bench", 5};
    size_t ops = 200000;
    double t0 = now_ns();
    for (size_t i = 0; i < ops; i++) {
        make_spec(&s, n + i);
        core_add(c, &s, now);
        struct job *j;
        struct waiter *w;
        if (core_lease(c, &name, 1, 0, now, NULL, done_nothing, NULL, &j, &w) != CORE_OK)
            abort();
        core_finish(c, j->id, true, "ok", 2, 0, now);
        core_delete(c, j->id);
    }
    double t = (now_ns() - t0) / (double)ops;
    core_free(c);
    return t;
}

/* add -> lease -> complete through the core, with n jobs queued behind. */
static double
bench_core_cycle(size_t n)
{
    uint64_t now = 1000000;
    struct core *c = core_new(now);
    struct job_spec s;
    for (size_t i = 0; i < n; i++) {
        make_spec(&s, i);
        core_add(c, &s, now);
    }
    return bench_core_cycles(c, n, now);
}

/* add -> lease -> complete -> delete on a queue of its own, among n other
 * queues of one job each: the queue is created and freed every cycle. */
static double
bench_core_cycle_queues(size_t n)
{
    uint64_t now = 1000000;
    struct core *c = core_new(now);
    struct job_spec s;
    char names[16];
    for (size_t i = 0; i < n; i++) {
        make_spec(&s, i);
        int len = snprintf(names, sizeof names, "q%zu", i);
        s.name = (struct wq_str){names, (size_t)len};
        core_add(c, &s, now);
    }
    return bench_core_cycles(c, n, now);
}

/* A core holding a chain of n jobs, each waiting for the one before
 * (add -after). */
static struct core *
make_chain(size_t n, uint64_t now)
{
    struct core *c = core_new(now);
    struct job_spec s;
    for (size_t i = 0; i < n; i++) {
        uint8_t prev[1][JOBID_LEN];
        make_spec(&s, i);
        if (i > 0) {
            uint64_t p = i - 1;
            memset(prev[0], 0, JOBID_LEN);
            memcpy(prev[0], &p, sizeof p);
            prev[0][15] = 0x42;
            s.after = (const uint8_t(*)[JOBID_LEN])prev;
            s.nafter = 1;
        }
        if (core_add(c, &s, now) != CORE_OK)
            abort();
    }
    return c;
}

/* A chain of n jobs: ns per job to build it and complete it link by link
 * (each release touches one dependent). */
static double
bench_chain(size_t n)
{
    uint64_t now = 1000000;
    struct wq_str name = {"bench", 5};
    double t0 = now_ns();
    struct core *c = make_chain(n, now);
    for (size_t i = 0; i < n; i++) {
        struct job *j;
        struct waiter *w;
        if (core_lease(c, &name, 1, 0, now, NULL, done_nothing, NULL, &j, &w) != CORE_OK)
            abort();
        core_finish(c, j->id, true, "ok", 2, 0, now);
    }
    double t = (now_ns() - t0) / (double)n;
    core_free(c);
    return t;
}

/* A chain of n jobs failed all at once from its root: ns per job. */
static double
bench_chain_fail(size_t n)
{
    uint64_t now = 1000000;
    struct core *c = make_chain(n, now);
    struct job_spec s;
    make_spec(&s, 0);
    double t0 = now_ns();
    core_delete(c, s.id);
    double t = (now_ns() - t0) / (double)n;
    core_free(c);
    return t;
}

/* A broadcast to n named workers present on the name: ns per copy to add
 * it, lease and complete every copy. */
static double
bench_broadcast(size_t n)
{
    uint64_t now = 1000000;
    struct core *c = core_new(now);
    struct wq_str name = {"bench", 5};
    struct worker **ws = malloc(n * sizeof *ws);
    for (size_t i = 0; i < n; i++) {
        char wid[32];
        int len = snprintf(wid, sizeof wid, "worker-%zu", i);
        ws[i] = workers_attach(c->workers, wid, (size_t)len, "", 0, "[]", WORKER_WORKQ, "", now);
        workers_note_queue(ws[i], "bench", 5);
    }
    struct job_spec s;
    make_spec(&s, 1);
    s.broadcast = true;
    double t0 = now_ns();
    if (core_add(c, &s, now) != CORE_OK)
        abort();
    for (size_t i = 0; i < n; i++) {
        struct job *j;
        struct waiter *w;
        if (core_lease(c, &name, 1, 0, now, ws[i], done_nothing, NULL, &j, &w) != CORE_OK)
            abort();
        core_finish(c, j->id, true, "ok", 2, 0, now);
    }
    double t = (now_ns() - t0) / (double)n;
    if (core_find(c, s.id)->state != JOB_COMPLETED)
        abort();
    free(ws);
    core_free(c);
    return t;
}

/* The process's resident set, bytes. */
static size_t
rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Bytes per queued job of 16-byte payload, beyond it: as the allocator
 * counts them, and as the growth of the resident set. */
static void
report_memory(size_t n)
{
    size_t before = alloc_memory_used(), rss_before = rss_bytes();
    struct core *c = core_new(1000);
    struct job_spec s;
    for (size_t i = 0; i < n; i++) {
        make_spec(&s, i);
        core_add(c, &s, 1000);
    }
    size_t after = alloc_memory_used(), rss_after = rss_bytes();
    printf("%-34s n=%-8zu %8.1f bytes/job beyond the 16-byte payload (%s)\n",
           "memory per queued job", n, (double)(after - before) / (double)n - 16, alloc_name());
    if (rss_before > 0 && rss_after > 0)
        printf("%-34s n=%-8zu %8.1f bytes/job beyond the 16-byte payload (RSS)\n",
               "memory per queued job", n, (double)(rss_after - rss_before) / (double)n - 16);
    core_free(c);
}

/* Bytes per queue holding one job of 16-byte payload, job included, as
 * the allocator counts them. */
static void
report_queue_memory(size_t n)
{
    size_t before = alloc_memory_used();
    struct core *c = core_new(1000);
    struct job_spec s;
    char name[16];
    for (size_t i = 0; i < n; i++) {
        make_spec(&s, i);
        int len = snprintf(name, sizeof name, "q%zu", i);
        s.name = (struct wq_str){name, (size_t)len};
        core_add(c, &s, 1000);
    }
    printf("%-34s n=%-8zu %8.1f bytes/queue with its one job\n", "memory per queue", n,
           (double)(alloc_memory_used() - before) / (double)n);
    core_free(c);
}

int
main(void)
{
    wq_log_level = LOG_LVL_WARN;
    report_memory(1000000); /* first, while no freed memory can be reused */
    report_queue_memory(1000000);
    report("heap push+pop", bench_heap, 1000);
    report("heap push+pop", bench_heap, 1000000);
    report("heap walk 1000 from the top", bench_heap_walk_top, 200000);
    report("heap walk 1000 from the middle", bench_heap_walk_middle, 200000);
    report("heap walk 1000 from the end", bench_heap_walk_end, 200000);
    report("registry find", bench_registry, 1000);
    report("registry find", bench_registry, 1000000);
    report("wheel add+cancel", bench_wheel, 1000);
    report("wheel add+cancel", bench_wheel, 1000000);
    report("pool get+put (job size)", bench_pool, 100000);
    report("malloc+free (job size)", bench_malloc, 100000);
    report("core add->lease->complete", bench_core_cycle, 1000);
    report("core add->lease->complete", bench_core_cycle, 1000000);
    report("core cycle, queue made each time", bench_core_cycle_queues, 1000);
    report("core cycle, queue made each time", bench_core_cycle_queues, 1000000);
    report("dependency chain, per job", bench_chain, 10000);
    report("dependency chain failed, per job", bench_chain_fail, 10000);
    report("broadcast, per copy", bench_broadcast, 1000);
    return 0;
}
