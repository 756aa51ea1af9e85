/* check_queue.c - unit tests for per-name queues (src/engine/queue.c): the ready
 * order (priority descending, untimed before timed, time to the ns,
 * arrival), the scheduled order (time to the ns, priority descending,
 * arrival), removal from the middle, the FIFO of parked leasers, and the
 * table's index of names (the order of inspect queues).  Jobs
 * are hand-built fixtures; the queue only reads their ordering fields, and
 * the nanoseconds from the job_ext registry it was made with.  The heap
 * keys are 64-bit prefixes of the order (src/engine/job.c), so the cases sit on
 * both sides of where two jobs stop sharing a prefix, and every pop is
 * checked against a plain reference comparison. */
#include "lib/wq.h"
#include "engine/queue.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/job.h"
#include "lib/registry.h"
#include "rng.h"
#include "unit.h"

/* 2023-11-14T22:13:20Z, a whole second: a time inside the range whose
 * seconds the ready key encodes (2020 to 2088). */
#define NOW     1700000000000LL
#define KEY_END (1577836800000LL + 2147483648000LL) /* 2088: where those seconds run out */
#define Y2100   4102444800000LL                     /* well past them */

/* A job and its struct job_ext in one block, so free(j) frees both.  The
 * ext joins the exts registry (the one the queue was made with) only for
 * jobs given nanoseconds; tag is the fixture's index in tests where seq is
 * not one. */
struct fixture {
    struct job job; /* first: a struct job * is a struct fixture * */
    struct job_ext ext;
    size_t tag;
};

static struct fixture *
fixture_of(const struct job *j)
{
    return WQ_CONTAINER_OF(j, struct fixture, job);
}

/* A job fixture: seq doubles as the tag the tests look for, and as its id. */
static struct job *
job_fixture(uint64_t seq, int32_t priority)
{
    REQUIRE(seq < JOB_SEQ_LIMIT);
    struct fixture *f = calloc(1, sizeof *f);
    REQUIRE(f != NULL);
    struct job *j = &f->job;
    j->id[0] = 0xaa; /* never the nil id */
    for (int i = 0; i < 8; i++)
        j->id[15 - i] = (uint8_t)(seq >> (8 * i));
    memcpy(f->ext.id, j->id, JOBID_LEN);
    j->seq = seq;
    j->priority = priority;
    j->heap_index = HEAP_NO_INDEX;
    j->place = JOB_NOWHERE;
    return j;
}

static struct job *
timed_fixture(uint64_t seq, int32_t priority, int64_t time_ms)
{
    struct job *j = job_fixture(seq, priority);
    j->flags |= JOB_F_TIMED;
    j->base_ms = time_ms; /* a timed job's base is its scheduled time */
    return j;
}

/* A timed job at time_ms plus ns nanoseconds, kept as the core keeps them:
 * the ns in a job_ext found through exts, JOB_F_NS when they are not 0. */
static struct job *
ns_fixture(struct registry *exts, uint64_t seq, int32_t priority, int64_t time_ms, uint32_t ns)
{
    REQUIRE(ns < 1000000);
    struct job *j = timed_fixture(seq, priority, time_ms);
    struct fixture *f = fixture_of(j);
    f->ext.time_ns = ns;
    registry_insert(exts, &f->ext);
    j->flags |= JOB_F_EXT | (ns != 0 ? JOB_F_NS : 0);
    return j;
}

/* The nanoseconds of j's time, read from the fixture, not the registry. */
static uint32_t
fixture_ns(const struct job *j)
{
    return (j->flags & JOB_F_NS) ? fixture_of(j)->ext.time_ns : 0;
}

/* Take the first ready job out, as the core's lease does. */
static struct job *
pop_ready(struct queue *q)
{
    struct job *j = queue_peek_ready(q);
    if (j != NULL) {
        queue_remove(q, j);
        REQUIRE(j->place == JOB_NOWHERE);
        REQUIRE(j->heap_index == HEAP_NO_INDEX);
    }
    return j;
}

/* Take the soonest scheduled job out. */
static struct job *
pop_scheduled(struct queue *q)
{
    struct job *j = heap_top(&q->scheduled);
    if (j != NULL)
        queue_remove(q, j);
    return j;
}

/* A queue and the registry of job_ext it orders timed jobs with. */
static struct queue *
queue_named(const char *name, struct registry **exts)
{
    *exts = registry_new(job_ext_id_key);
    return queue_new(name, strlen(name), *exts);
}

static void
queue_done(struct queue *q, struct registry *exts)
{
    queue_free(q);
    registry_free(exts);
}

/* The ready order of the protocol, written out plainly. */
static int
ready_cmp(const struct job *a, const struct job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    bool ta = a->flags & JOB_F_TIMED, tb = b->flags & JOB_F_TIMED;
    if (ta != tb)
        return ta ? 1 : -1;
    if (ta && a->base_ms != b->base_ms)
        return a->base_ms < b->base_ms ? -1 : 1;
    if (ta && fixture_ns(a) != fixture_ns(b))
        return fixture_ns(a) < fixture_ns(b) ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The scheduled order: time to the ns, priority descending, arrival. */
static int
sched_cmp(const struct job *a, const struct job *b)
{
    if (a->base_ms != b->base_ms)
        return a->base_ms < b->base_ms ? -1 : 1;
    if (fixture_ns(a) != fixture_ns(b))
        return fixture_ns(a) < fixture_ns(b) ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Does the heap's view (key, then tie) put a strictly before b? */
static bool
ready_before(const struct job *a, const struct job *b, struct registry *exts)
{
    uint64_t ka = job_ready_key(a), kb = job_ready_key(b);
    return ka != kb ? ka < kb : job_ready_tie(a, b, exts);
}

static bool
sched_before(const struct job *a, const struct job *b, struct registry *exts)
{
    uint64_t ka = job_scheduled_key(a, NULL), kb = job_scheduled_key(b, NULL);
    return ka != kb ? ka < kb : job_scheduled_tie(a, b, exts);
}

/* Pop every ready job and check it against want[] (seqs), the reference
 * and the key order. */
static void
require_ready_order(struct queue *q, struct registry *exts, const uint64_t *want, size_t n)
{
    struct job *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        struct job *j = pop_ready(q);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->seq, want[i]);
        if (prev != NULL) {
            ck_assert_int_lt(ready_cmp(prev, j), 0);
            ck_assert(ready_before(prev, j, exts));
            ck_assert(!ready_before(j, prev, exts));
        }
        prev = j;
    }
    ck_assert_ptr_null(pop_ready(q));
}

START_TEST(test_new_free)
{
    struct registry *x;
    struct queue *q = queue_named("emails", &x);
    ck_assert_str_eq(q->name, "emails");
    ck_assert_uint_eq(q->name_len, 6);
    ck_assert_uint_eq(q->refs, 0);
    ck_assert_uint_eq(q->leased, 0);
    ck_assert_uint_eq(q->parked, 0);
    ck_assert(!queue_is_active(q));
    ck_assert_ptr_null(queue_peek_ready(q));
    ck_assert_ptr_null(queue_first_parked(q));
    const void *key;
    size_t len;
    queue_name_key(q, &key, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert(memcmp(key, "emails", 6) == 0);
    queue_free(q);
    queue_free(NULL);

    /* The name is copied, not NUL-terminated on input, and may be 255 bytes. */
    char name[WQ_MAX_NAME + 1];
    memset(name, 'n', sizeof name);
    q = queue_new(name, WQ_MAX_NAME, x);
    ck_assert_uint_eq(q->name_len, WQ_MAX_NAME);
    ck_assert_uint_eq(strlen(q->name), WQ_MAX_NAME);
    queue_free(q);
    q = queue_new("abcdef", 3, x);
    ck_assert_str_eq(q->name, "abc");
    queue_done(q, x);
}
END_TEST

START_TEST(test_priority_order)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    int32_t prios[] = {5, 9, -3, 0, INT32_MAX, INT32_MIN, 9, -1, 1, 5};
    struct job *jobs[WQ_ARRAY_LEN(prios)];
    for (size_t i = 0; i < WQ_ARRAY_LEN(prios); i++) {
        jobs[i] = job_fixture(i, prios[i]);
        queue_push_ready(q, jobs[i]);
        ck_assert_uint_eq(jobs[i]->place, JOB_IN_READY);
        ck_assert_uint_ne(jobs[i]->heap_index, HEAP_NO_INDEX);
    }
    ck_assert(queue_is_active(q));
    /* priority descending; equal priorities in arrival order */
    uint64_t want[] = {4, 1, 6, 0, 9, 8, 3, 7, 2, 5};
    require_ready_order(q, x, want, WQ_ARRAY_LEN(want));
    ck_assert(!queue_is_active(q));
    for (size_t i = 0; i < WQ_ARRAY_LEN(prios); i++)
        free(jobs[i]);
    queue_done(q, x);
}
END_TEST

START_TEST(test_fifo)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    enum { N = 500 };
    struct job *jobs[N];
    /* Pushed in a scrambled order of seq: pops come back by seq. */
    for (size_t i = 0; i < N; i++) {
        jobs[i] = job_fixture((i * 7919) % N, 3);
        queue_push_ready(q, jobs[i]);
    }
    for (uint64_t s = 0; s < N; s++) {
        struct job *j = pop_ready(q);
        ck_assert_ptr_nonnull(j);
        REQUIRE(j->seq == s);
    }
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    queue_done(q, x);
}
END_TEST

START_TEST(test_timed_order)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    struct job *jobs[] = {
        timed_fixture(0, 5, 3000),  /* timed, prio 5, late */
        job_fixture(1, 5),          /* untimed prio 5 */
        timed_fixture(2, 5, 1000),  /* timed, prio 5, early */
        timed_fixture(3, 5, -5000), /* timed before 1970: still after untimed */
        job_fixture(4, 4),          /* lower priority untimed: after every prio 5 */
        timed_fixture(5, 6, 9999),  /* higher priority timed: before untimed prio 5 */
        timed_fixture(6, 5, 1000),  /* same time as 2, later arrival */
        job_fixture(7, 5),
        timed_fixture(8, 5, 0),
        /* the same millisecond: the nanoseconds decide before arrival */
        ns_fixture(x, 9, 5, 1000, 500),  /* after 2 and 6, which have no ns */
        ns_fixture(x, 10, 5, 1000, 1),   /* later arrival, fewer ns: before 9 */
        ns_fixture(x, 11, 5, 1000, 500), /* same ns as 9: arrival */
        /* times whose seconds the key holds: within one second the tie
         * function decides, across seconds the key */
        timed_fixture(12, 5, NOW + 1500),
        ns_fixture(x, 13, 5, NOW + 1000, 7),
        ns_fixture(x, 14, 5, NOW + 1000, 3),
        ns_fixture(x, 15, 5, NOW + 999, 999999), /* the second before */
        timed_fixture(16, 5, NOW + 1200),
        /* past the range the key holds: all clamped to one prefix */
        timed_fixture(17, 5, Y2100 + 5000),
        ns_fixture(x, 18, 5, Y2100 + 1000, 42),
        timed_fixture(19, 5, INT64_MAX),
        timed_fixture(20, 5, INT64_MIN),
        ns_fixture(x, 21, 5, INT64_MAX, 1), /* the very last time there is */
        /* either side of the end of the key's range */
        timed_fixture(22, 5, KEY_END - 1),
        ns_fixture(x, 23, 5, KEY_END, 9),
        timed_fixture(24, 5, KEY_END + 1000),
    };
    enum { N = WQ_ARRAY_LEN(jobs) };
    /* Pushed in a scrambled order (each once: 7 and N are coprime), so the
     * order of arrival at the heap proves nothing. */
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(jobs[(i * 7) % N]->place, JOB_NOWHERE);
        queue_push_ready(q, jobs[(i * 7) % N]);
    }
    uint64_t want[] = {5,  1,  7,  20, 3,  8,  2,  6,  10, 9,  11, 0, 15,
                       14, 13, 16, 12, 22, 23, 24, 18, 17, 19, 21, 4};
    _Static_assert(WQ_ARRAY_LEN(want) == N, "every job is expected");
    require_ready_order(q, x, want, N);
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    queue_done(q, x);
}
END_TEST

START_TEST(test_scheduled_order)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    struct job *jobs[] = {
        timed_fixture(0, 1, 5000),
        timed_fixture(1, 9, 5000),
        timed_fixture(2, 1, 1000),
        timed_fixture(3, 1, 5000),
        timed_fixture(4, -7, -20),
        timed_fixture(5, 9, 5000),
        timed_fixture(6, INT32_MAX, 7000),
        /* the same millisecond: nanoseconds before priority */
        ns_fixture(x, 7, 1, 5000, 10),
        ns_fixture(x, 8, 0, 5000, 3),               /* fewer ns, lower priority: before 7 */
        ns_fixture(x, 9, 9, 5000, 10),              /* same ns as 7, higher priority: before it */
        ns_fixture(x, 10, 1, 5000, 10),             /* same as 7 but for arrival */
        ns_fixture(x, 11, INT32_MAX, 4999, 999999), /* the millisecond before */
        timed_fixture(12, 0, INT64_MIN),
        ns_fixture(x, 13, 0, INT64_MAX, 5),
        timed_fixture(14, 9, INT64_MAX),
        timed_fixture(15, 0, NOW + 1),
        ns_fixture(x, 16, 5, NOW, 1),
    };
    enum { N = WQ_ARRAY_LEN(jobs) };
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(jobs[(i * 7) % N]->place, JOB_NOWHERE);
        queue_push_scheduled(q, jobs[(i * 7) % N]);
        ck_assert_uint_eq(jobs[(i * 7) % N]->place, JOB_IN_SCHEDULED);
    }
    ck_assert(queue_is_active(q));
    ck_assert_ptr_null(queue_peek_ready(q)); /* scheduled jobs are not ready */
    /* time first (to the ns), then priority descending, then arrival */
    uint64_t want[] = {12, 4, 2, 11, 1, 5, 0, 3, 8, 9, 7, 10, 6, 16, 15, 14, 13};
    _Static_assert(WQ_ARRAY_LEN(want) == N, "every job is expected");
    struct job *prev = NULL;
    for (size_t i = 0; i < N; i++) {
        struct job *j = pop_scheduled(q);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->seq, want[i]);
        ck_assert_uint_eq(j->place, JOB_NOWHERE);
        if (prev != NULL) {
            ck_assert_int_lt(sched_cmp(prev, j), 0);
            ck_assert(sched_before(prev, j, x));
            ck_assert(!sched_before(j, prev, x));
        }
        prev = j;
    }
    ck_assert_ptr_null(pop_scheduled(q));
    ck_assert(!queue_is_active(q));
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    queue_done(q, x);
}
END_TEST

/* The untimed ready key holds the top 31 of the 44 bits of the arrival
 * number: numbers that differ only in their low 13 bits share a key and are
 * ordered by the tie function, numbers 8192 apart never do. */
/* Keys are exact where the fields fit: every pair of untimed jobs of one
 * in-range priority keys apart by arrival, and so do scheduled jobs of
 * different priorities in one millisecond.  Where a field is clamped the
 * keys tie, and the tie function gives the order. */
START_TEST(test_key_exactness)
{
    static const uint64_t seqs[] = {0, 1, 8191, 8192, 1ull << 31, 1ull << 32, JOB_SEQ_LIMIT - 1};
    static const int32_t prios[] = {-32767, -1, 0, 1, 32766};
    struct registry *x = registry_new(job_ext_id_key);
    for (size_t p = 0; p < WQ_ARRAY_LEN(prios); p++) {
        for (size_t i = 0; i + 1 < WQ_ARRAY_LEN(seqs); i++) {
            struct job *a = job_fixture(seqs[i], prios[p]), *b = job_fixture(seqs[i + 1], prios[p]);
            ck_assert_msg(job_ready_key(a) < job_ready_key(b), "seq %llu should key before %llu",
                          (unsigned long long)seqs[i], (unsigned long long)seqs[i + 1]);
            ck_assert(ready_before(a, b, x) && !ready_before(b, a, x));
            free(a);
            free(b);
        }
    }
    /* Priorities beyond -32767..32766 share a key at their end of the
     * range, timed or not, and the tie decides: priority, untimed first,
     * time, arrival. */
    struct job *hi1 = timed_fixture(1, 40000, 5000), *hi2 = job_fixture(2, 50000);
    struct job *hi3 = job_fixture(3, 32767), *lo1 = job_fixture(4, -40000);
    struct job *lo2 = timed_fixture(5, INT32_MIN, 1000), *lo3 = job_fixture(6, -32768);
    ck_assert(job_ready_key(hi1) == job_ready_key(hi2));
    ck_assert(job_ready_key(hi1) == job_ready_key(hi3));
    ck_assert(job_ready_key(lo1) == job_ready_key(lo2));
    ck_assert(job_ready_key(lo1) == job_ready_key(lo3));
    struct job *order[] = {hi2, hi1, hi3, lo3, lo1, lo2};
    for (size_t i = 0; i + 1 < WQ_ARRAY_LEN(order); i++) {
        ck_assert(ready_before(order[i], order[i + 1], x));
        ck_assert(!ready_before(order[i + 1], order[i], x));
        ck_assert_int_lt(ready_cmp(order[i], order[i + 1]), 0);
    }
    for (size_t i = 0; i < WQ_ARRAY_LEN(order); i++)
        free(order[i]);

    /* Scheduled: one millisecond, priorities apart; nanoseconds after the
     * whole ms, so they share the last code; clamped times share a key. */
    int64_t ms = 1700000000123;
    struct job *s1 = timed_fixture(1, 7, ms), *s2 = timed_fixture(2, 0, ms);
    struct job *s3 = timed_fixture(3, -32767, ms), *s4 = ns_fixture(x, 4, 9, ms, 1);
    struct job *s5 = timed_fixture(5, INT32_MIN, ms), *s6 = ns_fixture(x, 6, 0, ms, 1);
    ck_assert(job_scheduled_key(s1, NULL) < job_scheduled_key(s2, NULL));
    ck_assert(job_scheduled_key(s2, NULL) < job_scheduled_key(s3, NULL));
    ck_assert(job_scheduled_key(s3, NULL) < job_scheduled_key(s4, NULL));
    ck_assert(job_scheduled_key(s4, NULL) == job_scheduled_key(s5, NULL));
    ck_assert(job_scheduled_key(s4, NULL) == job_scheduled_key(s6, NULL));
    struct job *sorder[] = {s1, s2, s3, s5, s4, s6};
    for (size_t i = 0; i + 1 < WQ_ARRAY_LEN(sorder); i++) {
        ck_assert(sched_before(sorder[i], sorder[i + 1], x));
        ck_assert(!sched_before(sorder[i + 1], sorder[i], x));
        ck_assert_int_lt(sched_cmp(sorder[i], sorder[i + 1]), 0);
    }
    struct job *old1 = timed_fixture(7, 5, 1000), *old2 = timed_fixture(8, 9, 2000);
    ck_assert(job_scheduled_key(old1, NULL) == job_scheduled_key(old2, NULL)); /* before 2020 */
    ck_assert(sched_before(old1, old2, x) && !sched_before(old2, old1, x));
    ck_assert(sched_before(old2, s1, x));
    struct job *far1 = timed_fixture(9, 5, INT64_MAX - 1), *far2 = timed_fixture(10, 9, INT64_MAX);
    ck_assert(job_scheduled_key(far1, NULL) ==
              job_scheduled_key(far2, NULL)); /* beyond the year 6482 */
    ck_assert(sched_before(s6, far1, x) && sched_before(far1, far2, x));
    struct job *all[] = {s1, s2, s3, s4, s5, s6, old1, old2, far1, far2};
    for (size_t i = 0; i < WQ_ARRAY_LEN(all); i++) {
        if (all[i]->flags & JOB_F_EXT)
            registry_remove(x, all[i]->id, JOBID_LEN);
        free(all[i]);
    }

    /* Priority outranks any arrival, and untimed any timed job. */
    struct job *hi_last = job_fixture(JOB_SEQ_LIMIT - 1, 1), *lo_first = job_fixture(0, 0);
    struct job *untimed_last = job_fixture(JOB_SEQ_LIMIT - 1, 0);
    struct job *timed_first = timed_fixture(1, 0, INT64_MIN);
    struct job *max_last = job_fixture(JOB_SEQ_LIMIT - 1, INT32_MAX);
    struct job *min_first = job_fixture(0, INT32_MIN);
    ck_assert(job_ready_key(hi_last) < job_ready_key(lo_first));
    ck_assert(job_ready_key(untimed_last) < job_ready_key(timed_first));
    ck_assert(job_ready_key(max_last) < job_ready_key(min_first));

    /* And a queue hands them out by arrival across the boundaries. */
    struct queue *q = queue_new("q", 1, x);
    /* Around small multiples of 8192 and large powers of two, and at the
     * ends of the range; in ascending order, pushed scrambled. */
    static const uint64_t bases[] = {2,          8192,       16384,      24576,
                                     1ull << 31, 1ull << 32, 1ull << 40, JOB_SEQ_LIMIT - 2};
    enum { PER = 4, N = PER * WQ_ARRAY_LEN(bases) };
    uint64_t want[N];
    struct job *jobs[N];
    for (size_t i = 0; i < N; i++) {
        want[i] = bases[i / PER] - 2 + i % PER;
        jobs[i] = job_fixture(want[i], 7);
    }
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(jobs[(i * 7) % N]->place, JOB_NOWHERE); /* 7 and N are coprime */
        queue_push_ready(q, jobs[(i * 7) % N]);
    }
    require_ready_order(q, x, want, N);
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    free(hi_last);
    free(lo_first);
    free(untimed_last);
    free(timed_first);
    free(max_last);
    free(min_first);
    queue_done(q, x);
}
END_TEST

START_TEST(test_peek_ready)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    struct job *a = job_fixture(0, 1), *b = job_fixture(1, 2), *s = timed_fixture(2, 99, 10);
    queue_push_scheduled(q, s);
    ck_assert_ptr_null(queue_peek_ready(q));
    queue_push_ready(q, a);
    ck_assert_ptr_eq(queue_peek_ready(q), a);
    ck_assert_ptr_eq(queue_peek_ready(q), a); /* peeking leaves it there */
    ck_assert_uint_eq(heap_len(&q->ready), 1);
    queue_push_ready(q, b);
    ck_assert_ptr_eq(queue_peek_ready(q), b);
    queue_remove(q, b);
    ck_assert_ptr_eq(queue_peek_ready(q), a);
    queue_remove(q, a);
    queue_remove(q, s);
    ck_assert(!queue_is_active(q));
    free(a);
    free(b);
    free(s);
    queue_done(q, x);
}
END_TEST

START_TEST(test_remove_middle)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    enum { N = 100 };
    struct job *jobs[N];
    for (size_t i = 0; i < N; i++) {
        /* times 137 ms apart: some share a second, some not; some with ns */
        int64_t t = NOW + (int64_t)(N - i) * 137;
        if (i % 3 == 0 && i % 5 == 0)
            jobs[i] = ns_fixture(x, i, (int32_t)(i % 5), t, (uint32_t)i * 1000);
        else if (i % 3 == 0)
            jobs[i] = timed_fixture(i, (int32_t)(i % 5), t);
        else
            jobs[i] = job_fixture(i, (int32_t)(i % 5));
        if (i % 4 == 0)
            queue_push_scheduled(q, jobs[i]);
        else
            queue_push_ready(q, jobs[i]);
    }
    /* Remove every job whose seq is a multiple of 3 (some ready, some
     * scheduled) from wherever it sits. */
    for (size_t i = 0; i < N; i += 3) {
        queue_remove(q, jobs[i]);
        ck_assert_uint_eq(jobs[i]->place, JOB_NOWHERE);
        ck_assert_uint_eq(jobs[i]->heap_index, HEAP_NO_INDEX);
    }
    /* Removing a job that is nowhere does nothing. */
    uint32_t rl = heap_len(&q->ready), sl = heap_len(&q->scheduled);
    queue_remove(q, jobs[0]);
    ck_assert_uint_eq(heap_len(&q->ready), rl);
    ck_assert_uint_eq(heap_len(&q->scheduled), sl);

    /* What is left comes out in order. */
    struct job *prev = NULL;
    size_t nready = 0;
    for (struct job *j; (j = pop_ready(q)) != NULL; prev = j) {
        ck_assert(j->seq % 3 != 0 && j->seq % 4 != 0);
        if (prev != NULL) {
            ck_assert(job_ready_key(prev) <= job_ready_key(j));
            ck_assert(ready_before(prev, j, x));
            ck_assert_int_le(ready_cmp(prev, j), -1);
            ck_assert(prev->priority >= j->priority);
        }
        nready++;
    }
    size_t nsched = 0;
    prev = NULL;
    for (struct job *j; (j = pop_scheduled(q)) != NULL; prev = j) {
        ck_assert(j->seq % 3 != 0 && j->seq % 4 == 0);
        if (prev != NULL) {
            ck_assert(prev->base_ms <= j->base_ms);
            ck_assert(sched_before(prev, j, x));
            ck_assert_int_le(sched_cmp(prev, j), -1);
        }
        nsched++;
    }
    size_t want_ready = 0, want_sched = 0;
    for (size_t i = 0; i < N; i++) {
        if (i % 3 == 0)
            continue;
        if (i % 4 == 0)
            want_sched++;
        else
            want_ready++;
    }
    ck_assert_uint_eq(nready, want_ready);
    ck_assert_uint_eq(nsched, want_sched);
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    queue_done(q, x);
}
END_TEST

/* ---- randomized runs against a sorted reference ---- */

/* Times and nanoseconds drawn from small sets, so that equal keys, equal
 * milliseconds and equal nanoseconds are all common; the times straddle a
 * second, the ends of the key's range and the ends of int64. */
static const int64_t sample_times[] = {INT64_MIN,  -10,        -1,          0,       1,
                                       1000,       NOW - 1,    NOW,         NOW + 1, NOW + 999,
                                       NOW + 1000, NOW + 1001, KEY_END - 1, KEY_END, KEY_END + 1,
                                       Y2100,      Y2100 + 1,  INT64_MAX};
static const uint32_t sample_ns[] = {0, 0, 0, 1, 2, 500000, 999999};

/* A random job: timed (with ns through exts) or not; arrival seq. */
static struct job *
random_fixture(struct registry *exts, uint64_t seq, int32_t prio)
{
    if (rng_next() % 2)
        return job_fixture(seq, prio);
    int64_t t = sample_times[rng_next() % WQ_ARRAY_LEN(sample_times)];
    uint32_t ns = sample_ns[rng_next() % WQ_ARRAY_LEN(sample_ns)];
    return ns != 0 || rng_next() % 2 ? ns_fixture(exts, seq, prio, t, ns)
                                     : timed_fixture(seq, prio, t);
}

START_TEST(test_random_against_reference)
{
    enum { N = 2000 };
    struct job **jobs = calloc(N, sizeof *jobs);
    bool *in = calloc(N, sizeof *in);
    REQUIRE(jobs != NULL && in != NULL);
    rng_seed(42);
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    for (size_t i = 0; i < N; i++) {
        int32_t prio = (int32_t)(rng_next() % 7) - 3;
        if (rng_next() % 50 == 0)
            prio = rng_next() % 2 ? INT32_MAX : INT32_MIN;
        /* Arrival numbers 2731 apart, so that about three share each
         * untimed key prefix: a third from 0, a third across 2^31, a third
         * up to the top of the range. */
        uint64_t seq;
        if (i < N / 3)
            seq = i * 2731;
        else if (i < 2 * N / 3)
            seq = ((uint64_t)1 << 31) - (N / 6) * 2731 + (i - N / 3) * 2731;
        else
            seq = JOB_SEQ_LIMIT - 1 - (N - 1 - i) * 2731;
        jobs[i] = random_fixture(x, seq, prio);
        fixture_of(jobs[i])->tag = i;
    }
    size_t count = 0;
    for (int step = 0; step < 20000; step++) {
        uint64_t op = rng_next() % 10;
        size_t k = rng_next() % N;
        if (op < 5) {
            if (!in[k]) {
                queue_push_ready(q, jobs[k]);
                in[k] = true;
                count++;
            }
        } else if (op < 7) {
            if (in[k]) {
                queue_remove(q, jobs[k]);
                in[k] = false;
                count--;
            }
        } else {
            /* the first ready job is the least of those in, by the reference */
            struct job *best = NULL;
            for (size_t i = 0; i < N; i++) {
                if (in[i] && (best == NULL || ready_cmp(jobs[i], best) < 0))
                    best = jobs[i];
            }
            struct job *top = queue_peek_ready(q);
            REQUIRE(top == best);
            if (top != NULL) {
                queue_remove(q, top);
                in[fixture_of(top)->tag] = false;
                count--;
            }
        }
        REQUIRE(heap_len(&q->ready) == count);
        REQUIRE(queue_is_active(q) == (count > 0));
    }
    while (pop_ready(q) != NULL)
        ;
    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    free(jobs);
    free(in);
    queue_done(q, x);
}
END_TEST

static int
ready_qsort_cmp(const void *a, const void *b)
{
    return ready_cmp(*(struct job *const *)a, *(struct job *const *)b);
}

static int
sched_qsort_cmp(const void *a, const void *b)
{
    return sched_cmp(*(struct job *const *)a, *(struct job *const *)b);
}

static void
shuffle(struct job **v, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t k = rng_next() % i;
        struct job *t = v[i - 1];
        v[i - 1] = v[k];
        v[k] = t;
    }
}

/* Many jobs of one priority, so that only the timed bit, the key's low
 * half and the tie functions order them: pushed in random order, they come
 * out as a sort by the reference puts them; the timed ones likewise from
 * the scheduled heap. */
START_TEST(test_equal_priority_sorted)
{
    enum { N = 5000 };
    struct job **jobs = calloc(N, sizeof *jobs);
    struct job **want = calloc(N, sizeof *want);
    REQUIRE(jobs != NULL && want != NULL);
    rng_seed(7);
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    for (size_t i = 0; i < N; i++) {
        /* increasing and distinct: neighbours often share an untimed
         * prefix (8192 arrivals), often straddle one */
        uint64_t seq = i * 3000 + rng_next() % 3000;
        jobs[i] = random_fixture(x, seq, 7);
    }

    shuffle(jobs, N);
    for (size_t i = 0; i < N; i++)
        queue_push_ready(q, jobs[i]);
    memcpy(want, jobs, N * sizeof *want);
    qsort(want, N, sizeof *want, ready_qsort_cmp);
    for (size_t i = 0; i < N; i++) {
        struct job *j = pop_ready(q);
        if (j != want[i])
            ck_abort_msg("ready pop %zu: seq %llu, want seq %llu", i,
                         j ? (unsigned long long)j->seq : 0ULL, (unsigned long long)want[i]->seq);
    }
    ck_assert_ptr_null(pop_ready(q));

    size_t nt = 0;
    for (size_t i = 0; i < N; i++) {
        if (jobs[i]->flags & JOB_F_TIMED)
            want[nt++] = jobs[i];
    }
    ck_assert_uint_gt(nt, N / 4);
    shuffle(want, nt);
    for (size_t i = 0; i < nt; i++)
        queue_push_scheduled(q, want[i]);
    qsort(want, nt, sizeof *want, sched_qsort_cmp);
    for (size_t i = 0; i < nt; i++) {
        struct job *j = pop_scheduled(q);
        if (j != want[i])
            ck_abort_msg("scheduled pop %zu: seq %llu, want seq %llu", i,
                         j ? (unsigned long long)j->seq : 0ULL, (unsigned long long)want[i]->seq);
    }
    ck_assert_ptr_null(pop_scheduled(q));
    ck_assert(!queue_is_active(q));

    for (size_t i = 0; i < N; i++)
        free(jobs[i]);
    free(jobs);
    free(want);
    queue_done(q, x);
}
END_TEST

/* ---- parked leasers ---- */

START_TEST(test_park_fifo)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    struct park_node nodes[5];
    struct waiter *tags[5];
    for (size_t i = 0; i < 5; i++) {
        memset(&nodes[i], 0, sizeof nodes[i]);
        tags[i] = (struct waiter *)(uintptr_t)(0x1000 + i); /* never dereferenced */
        nodes[i].waiter = tags[i];
        queue_park(q, &nodes[i]);
        ck_assert_ptr_eq(nodes[i].queue, q);
        ck_assert_uint_eq(q->parked, i + 1);
    }
    ck_assert(queue_is_active(q));
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[0]);

    /* Walk the list: FIFO order, links consistent both ways. */
    size_t i = 0;
    for (struct list *l = q->parked_fifo.next; l != &q->parked_fifo; l = l->next, i++) {
        ck_assert_ptr_eq(l, &nodes[i].link);
        ck_assert_ptr_eq(nodes[i].waiter, tags[i]);
        ck_assert_ptr_eq(l->prev, i == 0 ? &q->parked_fifo : &nodes[i - 1].link);
    }
    ck_assert_uint_eq(i, 5);
    ck_assert_ptr_eq(q->parked_fifo.prev, &nodes[4].link);

    /* Out of the middle, then the head, then the tail. */
    queue_unpark(q, &nodes[2]);
    ck_assert_uint_eq(q->parked, 4);
    ck_assert_ptr_eq(nodes[1].link.next, &nodes[3].link);
    ck_assert_ptr_eq(nodes[3].link.prev, &nodes[1].link);
    ck_assert(!list_linked(&nodes[2].link));
    queue_unpark(q, &nodes[0]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[1]);
    ck_assert_ptr_eq(nodes[1].link.prev, &q->parked_fifo);
    queue_unpark(q, &nodes[4]);
    ck_assert_ptr_eq(q->parked_fifo.prev, &nodes[3].link);
    ck_assert_ptr_eq(nodes[3].link.next, &q->parked_fifo);
    ck_assert_uint_eq(q->parked, 2);

    /* A node parked again goes to the back. */
    queue_park(q, &nodes[0]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[1]);
    ck_assert_ptr_eq(q->parked_fifo.prev, &nodes[0].link);
    queue_unpark(q, &nodes[1]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[3]);
    queue_unpark(q, &nodes[3]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[0]);
    queue_unpark(q, &nodes[0]);
    ck_assert_ptr_null(queue_first_parked(q));
    ck_assert(list_empty(&q->parked_fifo));
    ck_assert_uint_eq(q->parked, 0);
    ck_assert(!queue_is_active(q));
    queue_done(q, x);
}
END_TEST

START_TEST(test_is_active)
{
    struct registry *x;
    struct queue *q = queue_named("q", &x);
    ck_assert(!queue_is_active(q));
    /* References alone (say, completed jobs of the name) do not count. */
    q->refs = 3;
    ck_assert(!queue_is_active(q));
    q->refs = 0;

    struct job *r = job_fixture(0, 0), *s = timed_fixture(1, 0, 100);
    queue_push_ready(q, r);
    ck_assert(queue_is_active(q));
    queue_remove(q, r);
    ck_assert(!queue_is_active(q));

    queue_push_scheduled(q, s);
    ck_assert(queue_is_active(q));
    queue_remove(q, s);
    ck_assert(!queue_is_active(q));

    queue_lease(q);
    ck_assert(queue_is_active(q));
    queue_unlease(q);
    ck_assert(!queue_is_active(q));

    struct park_node n = {0};
    queue_park(q, &n);
    ck_assert(queue_is_active(q));
    queue_unpark(q, &n);
    ck_assert(!queue_is_active(q));

    free(r);
    free(s);
    queue_done(q, x);
}
END_TEST

/* ---- the table's index of names ---- */

/* A name of the test's table and what the test did to it. */
struct name_model {
    char name[8];
    size_t len;
    struct job *ready[8];          /* pushed, in no order */
    uint32_t nready, leased, held; /* held: references with nothing queued */
};

static int
name_model_cmp(const void *a, const void *b)
{
    const struct name_model *x = *(const struct name_model *const *)a;
    const struct name_model *y = *(const struct name_model *const *)b;
    int d = memcmp(x->name, y->name, WQ_MIN(x->len, y->len));
    return d != 0 ? d : (int)x->len - (int)y->len;
}

/* inspect queues' list, by brute force: the active queues that are not
 * targeted, sorted by name; against select and next. */
static void
check_table_order(struct queue_table *t, struct name_model *m, size_t n)
{
    struct name_model *want[64];
    size_t nwant = 0;
    for (size_t i = 0; i < n; i++) {
        struct queue *q = registry_find(t->by_name, m[i].name, m[i].len);
        if (q != NULL && queue_is_active(q) && q->base == NULL)
            want[nwant++] = &m[i];
    }
    qsort(want, nwant, sizeof want[0], name_model_cmp);
    struct queue *walk = queue_table_select(t, 0);
    for (size_t k = 0; k < nwant; k++) {
        struct queue *q = queue_table_select(t, k);
        REQUIRE(q != NULL && q->name_len == want[k]->len &&
                memcmp(q->name, want[k]->name, q->name_len) == 0);
        REQUIRE(walk == q);
        walk = queue_table_next(walk);
    }
    REQUIRE(walk == NULL);
    REQUIRE(queue_table_select(t, nwant) == NULL);
}

/* Random jobs pushed, removed, leased and given back over names that share
 * prefixes, have high bytes, and target workers: inspect queues' order
 * follows every change. */
START_TEST(test_table_order)
{
    static const char *const names[] = {
        "a",          "ab", "abc", "b",  "ba",     "\xc3\xa9", "z", "a\x1fw1",
        "b\x1fw1,w2", "zz", "A",   "a0", "c\x1fw", "\xff",     "m", "mm",
    };
    enum { N = WQ_ARRAY_LEN(names) };
    struct name_model m[N];
    memset(m, 0, sizeof m);
    for (size_t i = 0; i < N; i++) {
        m[i].len = strlen(names[i]);
        memcpy(m[i].name, names[i], m[i].len);
    }
    struct registry *x = registry_new(job_ext_id_key);
    struct queue_table t;
    queue_table_init(&t, JOB_SPACE_IDS);
    rng_seed(11);
    uint64_t seq = 0;
    for (int op = 0; op < 20000; op++) {
        struct name_model *e = &m[rng_below(N)];
        struct queue *q = registry_find(t.by_name, e->name, e->len);
        switch (rng_below(6)) {
        case 0: /* add */
            if (e->nready < 8) {
                q = queue_table_ref(&t, e->name, e->len, x);
                e->ready[e->nready] = job_fixture(seq++, 0);
                queue_push_ready(q, e->ready[e->nready++]);
            }
            break;
        case 1: /* delete a ready job */
            if (e->nready > 0) {
                struct job *j = e->ready[--e->nready];
                queue_remove(q, j);
                free(j);
                queue_table_unref(&t, q);
            }
            break;
        case 2: /* lease */
            if (e->nready > 0) {
                struct job *j = e->ready[--e->nready];
                queue_remove(q, j);
                free(j);
                queue_lease(q);
                e->leased++;
            }
            break;
        case 3: /* complete a leased job and delete it */
            if (e->leased > 0) {
                queue_unlease(q);
                e->leased--;
                queue_table_unref(&t, q);
            }
            break;
        case 4: /* a job that keeps the name without making it active */
            queue_table_ref(&t, e->name, e->len, x);
            e->held++;
            break;
        default:
            if (e->held > 0) {
                queue_table_unref(&t, q);
                e->held--;
            }
            break;
        }
        check_table_order(&t, m, N);
    }
    for (size_t i = 0; i < N; i++) {
        for (uint32_t k = 0; k < m[i].nready; k++)
            free(m[i].ready[k]);
    }
    queue_table_clear(&t);
    registry_free(x);
}
END_TEST

static Suite *
queue_suite(void)
{
    const struct unit_case cases[] = {
        {"new_free", test_new_free},
        {"priority_order", test_priority_order},
        {"fifo", test_fifo},
        {"timed_order", test_timed_order},
        {"scheduled_order", test_scheduled_order},
        {"key_exactness", test_key_exactness},
        {"peek_ready", test_peek_ready},
        {"remove_middle", test_remove_middle},
        {"random_against_reference", test_random_against_reference},
        {"equal_priority_sorted", test_equal_priority_sorted},
        {"park_fifo", test_park_fifo},
        {"is_active", test_is_active},
        {"table_order", test_table_order},
    };
    return unit_suite("queue", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(queue_suite(), NULL);
}
