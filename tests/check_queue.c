/* check_queue.c - unit tests for per-name queues (src/queue.c): the ready
 * order (priority descending, untimed before timed, time, arrival), the
 * scheduled order (time, priority descending, arrival), removal from the
 * middle, and the FIFO of parked leasers.  Jobs are hand-built fixtures; the
 * queue only reads their ordering fields. */
#include "wq.h"
#include "queue.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "unit.h"

/* A job fixture: seq doubles as the tag the tests look for. */
static struct job *
job_fixture(uint64_t seq, int32_t priority)
{
    struct job *j = calloc(1, sizeof *j);
    REQUIRE(j != NULL);
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
    j->time_ms = time_ms;
    return j;
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

static struct queue *
queue_named(const char *name)
{
    return queue_new(name, strlen(name));
}

START_TEST(test_new_free)
{
    struct queue *q = queue_named("emails");
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
    q = queue_new(name, WQ_MAX_NAME);
    ck_assert_uint_eq(q->name_len, WQ_MAX_NAME);
    ck_assert_uint_eq(strlen(q->name), WQ_MAX_NAME);
    queue_free(q);
    q = queue_new("abcdef", 3);
    ck_assert_str_eq(q->name, "abc");
    queue_free(q);
}
END_TEST

START_TEST(test_priority_order)
{
    struct queue *q = queue_named("q");
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
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct job *j = pop_ready(q);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->seq, want[i]);
    }
    ck_assert_ptr_null(pop_ready(q));
    ck_assert(!queue_is_active(q));
    for (size_t i = 0; i < WQ_ARRAY_LEN(prios); i++)
        free(jobs[i]);
    queue_free(q);
}
END_TEST

START_TEST(test_fifo)
{
    struct queue *q = queue_named("q");
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
    queue_free(q);
}
END_TEST

START_TEST(test_timed_order)
{
    struct queue *q = queue_named("q");
    struct job *jobs[] = {
        timed_fixture(0, 5, 3000),  /* timed, prio 5, late */
        job_fixture(1, 5),          /* untimed prio 5 */
        timed_fixture(2, 5, 1000),  /* timed, prio 5, early */
        timed_fixture(3, 5, -5000), /* timed before 1970: still after untimed */
        job_fixture(4, 4),          /* lower priority untimed: after every prio 5 */
        timed_fixture(5, 6, 9999),  /* higher priority timed: before untimed prio 5 */
        timed_fixture(6, 5, 1000),  /* same time as 2, later arrival */
        job_fixture(7, 5),          timed_fixture(8, 5, 0),
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(jobs); i++)
        queue_push_ready(q, jobs[i]);
    uint64_t want[] = {5, 1, 7, 3, 8, 2, 6, 0, 4};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct job *j = pop_ready(q);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->seq, want[i]);
    }
    for (size_t i = 0; i < WQ_ARRAY_LEN(jobs); i++)
        free(jobs[i]);
    queue_free(q);
}
END_TEST

START_TEST(test_scheduled_order)
{
    struct queue *q = queue_named("q");
    struct job *jobs[] = {
        timed_fixture(0, 1, 5000),         timed_fixture(1, 9, 5000), timed_fixture(2, 1, 1000),
        timed_fixture(3, 1, 5000),         timed_fixture(4, -7, -20), timed_fixture(5, 9, 5000),
        timed_fixture(6, INT32_MAX, 7000),
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(jobs); i++) {
        queue_push_scheduled(q, jobs[i]);
        ck_assert_uint_eq(jobs[i]->place, JOB_IN_SCHEDULED);
    }
    ck_assert(queue_is_active(q));
    ck_assert_ptr_null(queue_peek_ready(q)); /* scheduled jobs are not ready */
    /* time first, then priority descending, then arrival */
    uint64_t want[] = {4, 2, 1, 5, 0, 3, 6};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct job *j = pop_scheduled(q);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->seq, want[i]);
        ck_assert_uint_eq(j->place, JOB_NOWHERE);
    }
    ck_assert(!queue_is_active(q));
    for (size_t i = 0; i < WQ_ARRAY_LEN(jobs); i++)
        free(jobs[i]);
    queue_free(q);
}
END_TEST

START_TEST(test_peek_ready)
{
    struct queue *q = queue_named("q");
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
    queue_free(q);
}
END_TEST

/* The ready order of the protocol, written out plainly. */
static int
ready_cmp(const struct job *a, const struct job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    bool ta = a->flags & JOB_F_TIMED, tb = b->flags & JOB_F_TIMED;
    if (ta != tb)
        return ta ? 1 : -1;
    if (ta && a->time_ms != b->time_ms)
        return a->time_ms < b->time_ms ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Is key a before key b, as the heap compares them? */
static bool
key_less(const uint64_t a[3], const uint64_t b[3])
{
    if (a[0] != b[0])
        return a[0] < b[0];
    if (a[1] != b[1])
        return a[1] < b[1];
    return a[2] < b[2];
}

START_TEST(test_remove_middle)
{
    struct queue *q = queue_named("q");
    enum { N = 100 };
    struct job *jobs[N];
    for (size_t i = 0; i < N; i++) {
        jobs[i] = (i % 3 == 0) ? timed_fixture(i, (int32_t)(i % 5), (int64_t)(N - i))
                               : job_fixture(i, (int32_t)(i % 5));
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
            uint64_t a[3], b[3];
            job_ready_key(prev, a);
            job_ready_key(j, b);
            ck_assert(key_less(a, b));
            ck_assert_int_le(ready_cmp(prev, j), -1);
            ck_assert(prev->priority >= j->priority);
        }
        nready++;
    }
    size_t nsched = 0;
    prev = NULL;
    for (struct job *j; (j = pop_scheduled(q)) != NULL; prev = j) {
        ck_assert(j->seq % 3 != 0 && j->seq % 4 == 0);
        if (prev != NULL)
            ck_assert(prev->time_ms <= j->time_ms);
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
    queue_free(q);
}
END_TEST

/* ---- a randomized run against a sorted reference ---- */

static uint64_t rng_state;

static uint64_t
rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

START_TEST(test_random_against_reference)
{
    enum { N = 2000 };
    struct job **jobs = calloc(N, sizeof *jobs);
    bool *in = calloc(N, sizeof *in);
    REQUIRE(jobs != NULL && in != NULL);
    rng_state = 42;
    struct queue *q = queue_named("q");
    for (size_t i = 0; i < N; i++) {
        int32_t prio = (int32_t)(rng_next() % 7) - 3;
        if (rng_next() % 50 == 0)
            prio = rng_next() % 2 ? INT32_MAX : INT32_MIN;
        int64_t t = (int64_t)(rng_next() % 20) - 10;
        jobs[i] = rng_next() % 2 ? timed_fixture(i, prio, t) : job_fixture(i, prio);
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
                in[top->seq] = false;
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
    queue_free(q);
}
END_TEST

/* ---- parked leasers ---- */

START_TEST(test_park_fifo)
{
    struct queue *q = queue_named("q");
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
    for (struct park_node *n = q->park_head; n != NULL; n = n->next, i++) {
        ck_assert_ptr_eq(n, &nodes[i]);
        ck_assert_ptr_eq(n->waiter, tags[i]);
        ck_assert_ptr_eq(n->prev, i == 0 ? NULL : &nodes[i - 1]);
    }
    ck_assert_uint_eq(i, 5);
    ck_assert_ptr_eq(q->park_tail, &nodes[4]);

    /* Out of the middle, then the head, then the tail. */
    queue_unpark(q, &nodes[2]);
    ck_assert_uint_eq(q->parked, 4);
    ck_assert_ptr_eq(nodes[1].next, &nodes[3]);
    ck_assert_ptr_eq(nodes[3].prev, &nodes[1]);
    ck_assert_ptr_null(nodes[2].next);
    ck_assert_ptr_null(nodes[2].prev);
    queue_unpark(q, &nodes[0]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[1]);
    ck_assert_ptr_null(nodes[1].prev);
    queue_unpark(q, &nodes[4]);
    ck_assert_ptr_eq(q->park_tail, &nodes[3]);
    ck_assert_ptr_null(nodes[3].next);
    ck_assert_uint_eq(q->parked, 2);

    /* A node parked again goes to the back. */
    queue_park(q, &nodes[0]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[1]);
    ck_assert_ptr_eq(q->park_tail, &nodes[0]);
    queue_unpark(q, &nodes[1]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[3]);
    queue_unpark(q, &nodes[3]);
    ck_assert_ptr_eq(queue_first_parked(q), &nodes[0]);
    queue_unpark(q, &nodes[0]);
    ck_assert_ptr_null(queue_first_parked(q));
    ck_assert_ptr_null(q->park_tail);
    ck_assert_uint_eq(q->parked, 0);
    ck_assert(!queue_is_active(q));
    queue_free(q);
}
END_TEST

START_TEST(test_is_active)
{
    struct queue *q = queue_named("q");
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

    q->leased = 1;
    ck_assert(queue_is_active(q));
    q->leased = 0;
    ck_assert(!queue_is_active(q));

    struct park_node n = {0};
    queue_park(q, &n);
    ck_assert(queue_is_active(q));
    queue_unpark(q, &n);
    ck_assert(!queue_is_active(q));

    free(r);
    free(s);
    queue_free(q);
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
        {"peek_ready", test_peek_ready},
        {"remove_middle", test_remove_middle},
        {"random_against_reference", test_random_against_reference},
        {"park_fifo", test_park_fifo},
        {"is_active", test_is_active},
    };
    return unit_suite("queue", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(queue_suite(), NULL);
}
