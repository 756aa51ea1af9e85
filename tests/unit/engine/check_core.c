/* check_core.c - unit tests for the job core (src/engine/core*.c) with fake time:
 * the rules of doc/protocol-reference.md section 3.  Waiters report to a struct
 * owner; after every step check_core() recounts every job, queue and waiter
 * by walking the registries and compares that with core_ids(c)->stats. */
#include "lib/wq.h"
#include "engine/core.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "rng.h"
#include "engine/workers.h"
#include "unit.h"

#define RESULT_MAX 64

/* ---- ids ---- */

static void
mkid(uint32_t n, uint8_t id[JOBID_LEN])
{
    memset(id, 0, JOBID_LEN);
    id[0] = 0xaa; /* never the nil id */
    id[12] = (uint8_t)(n >> 24);
    id[13] = (uint8_t)(n >> 16);
    id[14] = (uint8_t)(n >> 8);
    id[15] = (uint8_t)n;
}

static uint32_t
job_num(const struct job *j)
{
    return (uint32_t)j->id[12] << 24 | (uint32_t)j->id[13] << 16 | (uint32_t)j->id[14] << 8 |
           j->id[15];
}

static struct job *
find(struct core *c, uint32_t n)
{
    uint8_t id[JOBID_LEN];
    mkid(n, id);
    return core_find(c, id);
}

/* ---- what a job keeps in its struct job_ext ---- */

static const char *
result_of(const struct core *c, const struct job *j)
{
    uint32_t len;
    return core_job_result(c, j, &len);
}

static uint32_t
result_len(const struct core *c, const struct job *j)
{
    uint32_t len;
    core_job_result(c, j, &len);
    return len;
}

static const struct waiter *
waiters_of(const struct core *c, const struct job *j)
{
    const struct job_ext *x = core_job_ext(c, j);
    return x != NULL && x->waiters.first != NULL ? core_waiter_of(x->waiters.first) : NULL;
}

/* ---- waiter owners ---- */

struct owner {
    struct core *core;
    int tag;
    int calls;
    bool active; /* parked and not yet called or cancelled */
    struct waiter *w;
    enum waiter_outcome how;
    bool had_job;
    uint32_t job;      /* job_num of the job passed */
    uint8_t state;     /* its state at the call */
    uint32_t attempts; /* its attempts at the call */
    char result[RESULT_MAX];
    uint32_t result_len;
};

static int64_t g_outstanding; /* waiters parked and not yet ended */
static int g_order[1024];     /* tags of owners called, in order */
/* Bulk loops set this to skip the full recount on every step (it walks every
 * job) and call check_core once at the end. */
static size_t g_norder;

static bool g_quiet;

static void
reset_globals(void)
{
    g_quiet = false;
    g_outstanding = 0;
    g_norder = 0;
}

static void
owner_init(struct owner *o, struct core *c, int tag)
{
    memset(o, 0, sizeof *o);
    o->core = c;
    o->tag = tag;
}

static void
on_done(void *arg, enum waiter_outcome how, const struct core *c, struct job *j)
{
    struct owner *o = arg;
    REQUIRE(o->active);
    o->active = false;
    o->w = NULL;
    o->calls++;
    o->how = how;
    o->had_job = j != NULL;
    g_outstanding--;
    /* The waiter is gone before its owner hears of it. */
    REQUIRE(c == o->core);
    REQUIRE(core_ids(o->core)->stats.parked == (uint64_t)g_outstanding);
    if (g_norder < WQ_ARRAY_LEN(g_order))
        g_order[g_norder++] = o->tag;
    if (j != NULL) {
        o->job = job_num(j);
        o->state = j->state;
        o->attempts = (uint32_t)j->attempts;
        uint32_t len;
        const char *res = core_job_result(c, j, &len);
        o->result_len = len;
        REQUIRE(len <= RESULT_MAX);
        REQUIRE((res != NULL) == (len > 0));
        if (len > 0)
            memcpy(o->result, res, len);
    }
}

/* ---- the invariant check ---- */

struct qcount {
    const struct queue *q;
    uint64_t jobs;
};

struct tally {
    const struct core *c;
    uint64_t ready, scheduled, leased, completed, failed, waiting, jobs;
    struct qcount *qs;
    size_t nq, capq;
    /* from the queues */
    uint64_t q_ready, q_scheduled, q_leased, nqueues;
    uint64_t exts;         /* jobs with a struct job_ext */
    uint64_t dead;         /* jobs in the dead set */
    struct core_space *sp; /* the space counted */
    uint8_t space;
};

static struct qcount *
tally_queue(struct tally *t, const struct queue *q)
{
    for (size_t i = 0; i < t->nq; i++) {
        if (t->qs[i].q == q)
            return &t->qs[i];
    }
    if (t->nq == t->capq) {
        t->capq = t->capq ? 2 * t->capq : 16;
        t->qs = realloc(t->qs, t->capq * sizeof *t->qs);
        REQUIRE(t->qs != NULL);
    }
    t->qs[t->nq] = (struct qcount){q, 0};
    return &t->qs[t->nq++];
}

/* A job's side record: there exactly when the job needs it (a scheduled
 * time, a result or waiters), and consistent with the job's flags. */
static void
tally_ext(struct tally *t, const struct job *j)
{
    const struct job_ext *x = job_ext_find(j, t->sp->exts);
    REQUIRE((x != NULL) == ((j->flags & JOB_F_EXT) != 0));
    REQUIRE(core_job_ext(t->c, j) == x);
    if (x == NULL) {
        REQUIRE(!(j->flags & (JOB_F_TIMED | JOB_F_NS)));
        return;
    }
    t->exts++;
    REQUIRE(memcmp(x->id, j->id, JOBID_LEN) == 0);
    const struct job_more *m = x->more;
    REQUIRE((j->flags & JOB_F_TIMED) || x->result != NULL || x->waiters.first != NULL ||
            x->retry_at != 0 ||
            (m != NULL && (m->cancelled || m->unmet > 0 || m->ndependents > 0 ||
                           m->holder != NULL || m->broadcast || list_linked(&m->dead_link))));
    /* waiting out a backoff: PENDING in the scheduled heap */
    REQUIRE(x->retry_at == 0 || (j->state == JOB_PENDING && j->place == JOB_IN_SCHEDULED &&
                                 (j->flags & JOB_F_BACKOFF)));
    /* in the dead set: failed for good, having asked for it */
    if (m != NULL && list_linked(&m->dead_link)) {
        t->dead++;
        REQUIRE(j->state == JOB_FAILED && (j->flags & JOB_F_DEAD) && m->job == j);
    }
    REQUIRE(m == NULL || m->holder == NULL || j->state == JOB_LEASED);
    REQUIRE((m != NULL && m->unmet > 0) == (j->state == JOB_WAITING));
    REQUIRE((x->result != NULL) == (x->result_len > 0));
    REQUIRE(((j->flags & JOB_F_NS) != 0) == ((j->flags & JOB_F_TIMED) && x->time_ns != 0));
    REQUIRE(job_is_done(j) || x->waiters.first == NULL ||
            core_waiter_of(x->waiters.first)->job == j);
}

static void
tally_job(void *elem, void *arg)
{
    struct job *j = elem;
    struct tally *t = arg;
    t->jobs++;
    REQUIRE(j->queue_ix < t->sp->queues.used);
    struct queue *q = core_job_queue(t->c, j);
    REQUIRE(q != NULL && q->ix == j->queue_ix);
    REQUIRE(registry_find(t->sp->queues.by_name, q->name, q->name_len) == q);
    tally_queue(t, q)->jobs++;
    tally_ext(t, j);
    switch (j->state) {
    case JOB_NEW:
    case JOB_PENDING:
        REQUIRE(j->place == JOB_IN_READY || j->place == JOB_IN_SCHEDULED);
        if (j->place == JOB_IN_READY) {
            t->ready++;
            REQUIRE(j->heap_index < heap_len(&q->ready));
            REQUIRE(heap_at(&q->ready, j->heap_index)->elem == j);
            /* the key cached in the heap is still the job's */
            REQUIRE(heap_at(&q->ready, j->heap_index)->key == job_ready_key(j));
        } else {
            t->scheduled++;
            /* scheduled, or waiting out a backoff */
            REQUIRE((j->flags & JOB_F_TIMED) || job_due_ms(j, t->sp->exts) != j->base_ms);
            REQUIRE(heap_len(&q->scheduled) > j->heap_index);
            REQUIRE(heap_at(&q->scheduled, j->heap_index)->elem == j);
            REQUIRE(heap_at(&q->scheduled, j->heap_index)->key ==
                    job_scheduled_key(j, t->sp->exts));
        }
        break;
    case JOB_LEASED:
        REQUIRE(j->place == JOB_NOWHERE);
        t->leased++;
        break;
    case JOB_COMPLETED:
        REQUIRE(j->place == JOB_NOWHERE);
        t->completed++;
        break;
    case JOB_FAILED:
        REQUIRE(j->place == JOB_NOWHERE);
        t->failed++;
        break;
    case JOB_WAITING:
        REQUIRE(j->place == JOB_NOWHERE);
        t->waiting++;
        break;
    default:
        ck_abort_msg("job %u in state %d", job_num(j), (int)j->state);
    }
}

static void
tally_q(void *elem, void *arg)
{
    struct queue *q = elem;
    struct tally *t = arg;
    t->nqueues++;
    t->q_ready += heap_len(&q->ready);
    t->q_scheduled += heap_len(&q->scheduled);
    t->q_leased += q->leased;
    /* Every queue in the table is referenced, and by exactly its jobs and
     * its parked nodes. */
    uint64_t jobs = 0;
    for (size_t i = 0; i < t->nq; i++) {
        if (t->qs[i].q == q)
            jobs = t->qs[i].jobs;
    }
    /* targeted queues (add -worker) each hold their base */
    uint64_t bases = 0;
    for (uint32_t i = 0; i < t->sp->queues.used; i++)
        bases += t->sp->queues.tab[i] != NULL && t->sp->queues.tab[i]->base == q;
    REQUIRE(q->refs > 0);
    REQUIRE(q->refs == jobs + q->parked + bases);
    REQUIRE(q->ix < t->sp->queues.used && t->sp->queues.tab[q->ix] == q);
    uint32_t n = 0;
    for (const struct list *l = q->parked_fifo.next; l != &q->parked_fifo; l = l->next, n++) {
        const struct park_node *p = list_item(l, const struct park_node, link);
        REQUIRE(p->queue == q && p->waiter != NULL);
    }
    REQUIRE(n == q->parked);
    /* core_queue shows exactly the active queues. */
    REQUIRE(q->space == t->space);
    if (t->space == JOB_SPACE_IDS)
        REQUIRE((core_queue(t->c, q->name, q->name_len) != NULL) == queue_is_active(q));
}

/* Recount everything of one space and compare with its stats; its parked
 * waiters are added to *parked. */
static void
check_space(struct core *c, uint8_t space, uint64_t *parked, const char *file, int line)
{
    struct tally t = {0};
    t.c = c;
    t.sp = &c->space[space];
    t.space = space;
    registry_foreach(t.sp->jobs, tally_job, &t);
    registry_foreach(t.sp->queues.by_name, tally_q, &t);
    /* The queue table holds exactly the registered queues. */
    uint64_t live = 0;
    for (uint32_t i = 0; i < t.sp->queues.used; i++) {
        const struct queue *q = t.sp->queues.tab[i];
        if (q != NULL) {
            live++;
            REQUIRE(q->ix == i && registry_find(t.sp->queues.by_name, q->name, q->name_len) == q);
        }
    }
    REQUIRE(live == t.nqueues && t.sp->queues.used - t.sp->queues.nfree == live);
    REQUIRE(t.dead == t.sp->dead.count && t.dead <= t.sp->dead.max);
    const struct core_stats *s = &t.sp->stats;
    uint64_t count = registry_count(t.sp->jobs);
    *parked += s->parked;
    if (s->ready != t.ready || s->scheduled != t.scheduled || s->leased != t.leased ||
        s->completed != t.completed || s->failed != t.failed || s->waiting != t.waiting ||
        t.jobs != count ||
        s->ready + s->scheduled + s->leased + s->completed + s->failed + s->waiting != count ||
        t.q_ready != t.ready || t.q_scheduled != t.scheduled || t.q_leased != t.leased ||
        t.exts != registry_count(t.sp->exts))
        ck_abort_msg("%s:%d: space %u: stats ready %llu/%llu/%llu scheduled %llu/%llu/%llu "
                     "leased %llu/%llu/%llu completed %llu/%llu failed %llu/%llu "
                     "jobs %llu/%llu exts %llu/%llu",
                     file, line, (unsigned)space, (unsigned long long)s->ready,
                     (unsigned long long)t.ready, (unsigned long long)t.q_ready,
                     (unsigned long long)s->scheduled, (unsigned long long)t.scheduled,
                     (unsigned long long)t.q_scheduled, (unsigned long long)s->leased,
                     (unsigned long long)t.leased, (unsigned long long)t.q_leased,
                     (unsigned long long)s->completed, (unsigned long long)t.completed,
                     (unsigned long long)s->failed, (unsigned long long)t.failed,
                     (unsigned long long)t.jobs, (unsigned long long)count,
                     (unsigned long long)t.exts, (unsigned long long)registry_count(t.sp->exts));
    free(t.qs);
}

/* Recount every open space and compare with the stats. */
static void
check_core_(struct core *c, const char *file, int line)
{
    if (g_quiet)
        return;
    uint64_t parked = 0;
    for (uint8_t i = 0; i < JOB_SPACES; i++)
        if (c->space[i].open)
            check_space(c, i, &parked, file, line);
    if (parked != (uint64_t)g_outstanding)
        ck_abort_msg("%s:%d: parked %llu, outstanding %lld", file, line, (unsigned long long)parked,
                     (long long)g_outstanding);
}
#define check_core(c) check_core_((c), __FILE__, __LINE__)

static size_t
queue_count(const struct core *c)
{
    return registry_count(core_ids(c)->queues.by_name);
}

static bool
active(const struct core *c, const char *name)
{
    return core_queue(c, name, strlen(name)) != NULL;
}

/* ---- operations ---- */

static struct job_spec
spec(uint32_t n, const char *name)
{
    struct job_spec s;
    memset(&s, 0, sizeof s);
    mkid(n, s.id);
    s.name.p = name;
    s.name.n = strlen(name);
    s.ttr = 1000;
    s.ttl = 1000000;
    s.payload = "payload";
    s.payload_len = 7;
    return s;
}

static void
add_spec(struct core *c, const struct job_spec *s, uint64_t now)
{
    ck_assert_int_eq(core_add(c, s, now), CORE_OK);
    check_core(c);
}

static void
add(struct core *c, uint32_t n, const char *name, int32_t prio, uint64_t now)
{
    struct job_spec s = spec(n, name);
    s.priority = prio;
    add_spec(c, &s, now);
}

/* Lease from the names in a space-separated list. */
static enum core_status
lease(struct core *c, const char *list, uint64_t wait, uint64_t now, struct owner *o,
      struct job **out)
{
    struct wq_str names[16];
    size_t n = 0;
    for (const char *p = list; *p != '\0';) {
        while (*p == ' ')
            p++;
        const char *start = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (p > start) {
            REQUIRE(n < WQ_ARRAY_LEN(names));
            names[n].p = start;
            names[n].n = (size_t)(p - start);
            n++;
        }
    }
    struct job *j = NULL;
    struct waiter *w = NULL;
    enum core_status st = core_lease(c, names, n, wait, now, NULL, on_done, o, &j, &w);
    if (st == CORE_PARKED) {
        REQUIRE(o != NULL && w != NULL && !o->active);
        o->active = true;
        o->w = w;
        g_outstanding++;
    } else if (st == CORE_OK) {
        REQUIRE(j != NULL && j->state == JOB_LEASED);
    }
    if (out != NULL)
        *out = j;
    check_core(c);
    return st;
}

/* Lease one job with wait 0 and return its number, or 0 on timeout. */
static uint32_t
lease_now(struct core *c, const char *list, uint64_t now)
{
    struct job *j;
    enum core_status st = lease(c, list, 0, now, NULL, &j);
    if (st == CORE_TIMEOUT)
        return 0;
    ck_assert_int_eq(st, CORE_OK);
    return job_num(j);
}

static enum core_status
finish(struct core *c, uint32_t n, bool success, const char *data, uint64_t now)
{
    uint8_t id[JOBID_LEN];
    mkid(n, id);
    enum core_status st = core_finish(c, id, success, data, strlen(data), 0, now);
    check_core(c);
    return st;
}

static enum core_status
del(struct core *c, uint32_t n)
{
    uint8_t id[JOBID_LEN];
    mkid(n, id);
    enum core_status st = core_delete(c, id);
    check_core(c);
    return st;
}

static enum core_status
result(struct core *c, uint32_t n, uint64_t wait, uint64_t now, struct owner *o, struct job **out)
{
    uint8_t id[JOBID_LEN];
    mkid(n, id);
    struct job *j = NULL;
    struct waiter *w = NULL;
    enum core_status st = core_result(c, id, wait, now, on_done, o, &j, &w);
    if (st == CORE_PARKED) {
        REQUIRE(o != NULL && w != NULL && !o->active);
        o->active = true;
        o->w = w;
        g_outstanding++;
    }
    if (out != NULL)
        *out = j;
    check_core(c);
    return st;
}

static void
cancel(struct core *c, struct owner *o)
{
    REQUIRE(o->active);
    core_cancel(c, o->w);
    o->active = false;
    o->w = NULL;
    g_outstanding--;
    check_core(c);
}

static void
advance(struct core *c, uint64_t now)
{
    core_advance(c, now);
    check_core(c);
}

static struct core *
core_fixture(void)
{
    reset_globals();
    struct core *c = core_new(0);
    check_core(c);
    return c;
}

static void
core_done(struct core *c)
{
    check_core(c);
    REQUIRE(g_outstanding == 0);
    core_free(c);
}

static enum core_status revive(struct core *c, uint32_t n, uint64_t now);

/* ---- lease order ---- */

START_TEST(test_lease_order)
{
    struct core *c = core_fixture();
    int32_t prios[] = {0, 5, -2, 5, 0, 10, -2, INT32_MIN, INT32_MAX};
    for (uint32_t i = 0; i < WQ_ARRAY_LEN(prios); i++)
        add(c, i + 1, "q", prios[i], 0);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 9);
    uint32_t want[] = {9, 6, 2, 4, 1, 5, 3, 7, 8};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct job *j;
        ck_assert_int_eq(lease(c, "q", 0, 10, NULL, &j), CORE_OK);
        ck_assert_uint_eq(job_num(j), want[i]);
        ck_assert_uint_eq(j->state, JOB_LEASED);
        ck_assert_uint_eq(j->attempts, 1);
        ck_assert_uint_eq(core_job_deadline(c, j), 10 + 1000);
    }
    ck_assert_uint_eq(core_ids(c)->stats.leased, 9);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 0);
    ck_assert_int_eq(lease(c, "q", 0, 10, NULL, NULL), CORE_TIMEOUT);
    ck_assert(active(c, "q")); /* leased jobs keep it */
    core_done(c);
}
END_TEST

START_TEST(test_lease_unknown_name)
{
    struct core *c = core_fixture();
    ck_assert_int_eq(lease(c, "nope", 0, 0, NULL, NULL), CORE_TIMEOUT);
    ck_assert(!active(c, "nope"));
    ck_assert_uint_eq(queue_count(c), 0);
    add(c, 1, "q", 0, 0);
    ck_assert_uint_eq(lease_now(c, "other", 0), 0);
    ck_assert_uint_eq(lease_now(c, "other q", 0), 1);
    core_done(c);
}
END_TEST

START_TEST(test_duplicate_add)
{
    struct core *c = core_fixture();
    add(c, 1, "q", 0, 0);
    struct job_spec s = spec(1, "other");
    ck_assert_int_eq(core_add(c, &s, 0), CORE_DUPLICATE);
    ck_assert(!active(c, "other"));
    ck_assert_int_eq(finish(c, 1, true, "r", 0), CORE_OK);
    ck_assert_int_eq(core_add(c, &s, 0), CORE_DUPLICATE); /* done but not expired */
    check_core(c);
    ck_assert_int_eq(del(c, 1), CORE_OK);
    add_spec(c, &s, 0);
    core_done(c);
}
END_TEST

/* ---- TTR ---- */

START_TEST(test_ttr_requeue)
{
    struct core *c = core_fixture();
    for (uint32_t n = 1; n <= 3; n++) {
        struct job_spec s = spec(n, "q");
        s.ttr = 100;
        add_spec(c, &s, 0);
    }
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    advance(c, 99);
    ck_assert_uint_eq(find(c, 1)->state, JOB_LEASED);
    advance(c, 100);
    struct job *j = find(c, 1);
    ck_assert_uint_eq(j->state, JOB_PENDING);
    ck_assert_uint_eq(j->attempts, 1);
    /* back at its old place, ahead of the later jobs */
    ck_assert_uint_eq(lease_now(c, "q", 100), 1);
    ck_assert_uint_eq(find(c, 1)->attempts, 2);
    ck_assert_uint_eq(lease_now(c, "q", 110), 2);

    /* A re-queued job goes straight to a parked leaser. */
    struct owner o;
    owner_init(&o, c, 1);
    ck_assert_uint_eq(lease_now(c, "q", 120), 3);
    ck_assert_int_eq(lease(c, "q", 5000, 150, &o, NULL), CORE_PARKED);
    advance(c, 200); /* job 1 (leased at 100) expires */
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.how, WAITER_GOT);
    ck_assert_uint_eq(o.job, 1);
    ck_assert_uint_eq(o.state, JOB_LEASED);
    ck_assert_uint_eq(o.attempts, 3);
    ck_assert_uint_eq(core_job_deadline(c, find(c, 1)), 300);
    core_done(c);
}
END_TEST

/* A TTR end is kept modulo 2^32 ms: it holds across a multiple of 2^32, and
 * when one advance covers weeks (a stalled process), a lease made during it
 * gets its whole TTR from the time of the advance, as a lease made by a
 * command after it would. */
START_TEST(test_ttr_end_modulo)
{
    const uint64_t day = 86400000;
    reset_globals();
    uint64_t t0 = ((uint64_t)5 << 32) - 500;
    struct core *c = core_new(t0);
    struct job_spec s = spec(1, "q");
    s.ttr = 60000;
    s.ttl = 100 * day;
    add_spec(c, &s, t0);
    ck_assert_uint_eq(lease_now(c, "q", t0), 1);
    ck_assert_uint_eq(core_job_deadline(c, find(c, 1)), t0 + 60000);
    advance(c, t0 + 59999);
    ck_assert_uint_eq(find(c, 1)->state, JOB_LEASED);
    advance(c, t0 + 60000);
    ck_assert_uint_eq(find(c, 1)->state, JOB_PENDING);

    /* A leaser parked for 30 days; the job becomes ready 1 s in; the
     * process is stalled and the next advance comes 20 days later. */
    struct owner o;
    owner_init(&o, c, 1);
    ck_assert_uint_eq(lease_now(c, "q", t0 + 60000), 1);
    ck_assert_int_eq(finish(c, 1, true, "", t0 + 60000), CORE_OK);
    uint64_t t1 = t0 + 60000;
    ck_assert_int_eq(lease(c, "q", 30 * day, t1, &o, NULL), CORE_PARKED);
    s = spec(2, "q");
    s.ttr = 60000;
    s.ttl = 100 * day;
    s.max_attempts = 1;
    s.timed = true;
    s.time_ms = (int64_t)t1 + 1000;
    add_spec(c, &s, t1);
    advance(c, t1 + 20 * day);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_uint_eq(o.job, 2);
    struct job *j = find(c, 2);
    ck_assert_uint_eq(j->state, JOB_LEASED); /* not failed by a TTR already past */
    ck_assert_uint_eq(core_job_deadline(c, j), t1 + 20 * day + 60000);
    advance(c, t1 + 20 * day + 59999);
    ck_assert_uint_eq(find(c, 2)->state, JOB_LEASED);
    advance(c, t1 + 20 * day + 60000);
    ck_assert_uint_eq(find(c, 2)->state, JOB_FAILED);
    core_free(c);
    REQUIRE(g_outstanding == 0);
}
END_TEST

/* Jobs that become ready in the same millisecond (scheduled times, TTR
 * ends) go to parked leasers in ready order, whatever order they were
 * scheduled in: the first leaser gets the highest priority. */
START_TEST(test_same_ms_ready_order)
{
    static const uint32_t orders[][3] = {{1, 2, 3}, {1, 3, 2}, {2, 1, 3},
                                         {2, 3, 1}, {3, 1, 2}, {3, 2, 1}};
    static const int32_t prio[] = {0, 1, 5, 3}; /* by job number */
    for (size_t k = 0; k < WQ_ARRAY_LEN(orders); k++) {
        struct core *c = core_fixture();
        struct owner o1, o2;
        owner_init(&o1, c, 1);
        owner_init(&o2, c, 2);
        ck_assert_int_eq(lease(c, "q", 10000, 0, &o1, NULL), CORE_PARKED);
        ck_assert_int_eq(lease(c, "q", 10000, 0, &o2, NULL), CORE_PARKED);
        for (size_t i = 0; i < 3; i++) {
            uint32_t n = orders[k][i];
            struct job_spec s = spec(n, "q");
            s.priority = prio[n];
            s.timed = true;
            s.time_ms = 100;
            add_spec(c, &s, 0);
        }
        advance(c, 100);
        ck_assert_int_eq(o1.calls, 1);
        ck_assert_uint_eq(o1.job, 2);
        ck_assert_int_eq(o2.calls, 1);
        ck_assert_uint_eq(o2.job, 3);
        ck_assert_uint_eq(find(c, 1)->state, JOB_NEW);
        ck_assert_uint_eq(find(c, 1)->place, JOB_IN_READY);
        core_done(c);
    }

    /* A TTR end and a scheduled time in the same ms: the leaser gets the
     * higher priority; the other job waits, ready. */
    for (int first = 0; first < 2; first++) {
        struct core *c = core_fixture();
        struct job_spec s = spec(1, "q");
        s.ttr = 100;
        struct job_spec t = spec(2, "q");
        t.priority = 9;
        t.timed = true;
        t.time_ms = 100;
        if (first == 0) {
            add_spec(c, &s, 0);
            ck_assert_uint_eq(lease_now(c, "q", 0), 1);
            add_spec(c, &t, 0);
        } else {
            add_spec(c, &t, 0);
            add_spec(c, &s, 0);
            ck_assert_uint_eq(lease_now(c, "q", 0), 1);
        }
        struct owner o;
        owner_init(&o, c, 1);
        ck_assert_int_eq(lease(c, "q", 10000, 0, &o, NULL), CORE_PARKED);
        advance(c, 100);
        ck_assert_int_eq(o.calls, 1);
        ck_assert_uint_eq(o.job, 2);
        ck_assert_uint_eq(find(c, 1)->state, JOB_PENDING);
        ck_assert_uint_eq(find(c, 1)->place, JOB_IN_READY);
        core_done(c);
    }
}
END_TEST

/* Time driven only by core_next_event lands exactly on deadlines. */
START_TEST(test_next_event)
{
    struct core *c = core_fixture();
    ck_assert(core_next_event(c) == WHEEL_NEVER);
    struct job_spec s = spec(1, "q");
    s.ttr = 12345;
    s.ttl = 1000000;
    add_spec(c, &s, 0);
    ck_assert_uint_le(core_next_event(c), 1000000);
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    uint64_t now = 0;
    int steps = 0;
    while (find(c, 1)->state == JOB_LEASED) {
        uint64_t t = core_next_event(c);
        ck_assert_uint_gt(t, now);
        ck_assert_uint_le(t, 12345);
        now = t;
        advance(c, now);
        REQUIRE(++steps < 100);
    }
    ck_assert_uint_eq(now, 12345);
    while (find(c, 1) != NULL) {
        uint64_t t = core_next_event(c);
        ck_assert_uint_le(t, 1000000);
        now = t;
        advance(c, now);
        REQUIRE(++steps < 200);
    }
    ck_assert_uint_eq(now, 1000000);
    ck_assert_uint_eq(core_ids(c)->stats.evicted, 1);
    ck_assert(core_next_event(c) == WHEEL_NEVER);
    core_done(c);
}
END_TEST

START_TEST(test_max_attempts)
{
    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    s.ttr = 100;
    s.max_attempts = 2;
    add_spec(c, &s, 0);
    struct owner r1, r2;
    owner_init(&r1, c, 1);
    owner_init(&r2, c, 2);
    ck_assert_int_eq(result(c, 1, 10000, 0, &r1, NULL), CORE_PARKED);
    ck_assert_int_eq(result(c, 1, 10000, 0, &r2, NULL), CORE_PARKED);

    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    advance(c, 100);
    ck_assert_uint_eq(find(c, 1)->state, JOB_PENDING);
    ck_assert_int_eq(r1.calls, 0);
    ck_assert_uint_eq(lease_now(c, "q", 100), 1);
    advance(c, 199);
    ck_assert_uint_eq(find(c, 1)->state, JOB_LEASED);
    advance(c, 200);
    /* out of attempts: FAILED with an empty result, waiters told */
    struct job *j = find(c, 1);
    ck_assert_uint_eq(j->state, JOB_FAILED);
    ck_assert_uint_eq(result_len(c, j), 0);
    ck_assert_uint_eq(j->attempts, 2);
    ck_assert_uint_eq(core_ids(c)->stats.failed, 1);
    ck_assert_int_eq(r1.calls, 1);
    ck_assert_int_eq(r1.how, WAITER_GOT);
    ck_assert_uint_eq(r1.state, JOB_FAILED);
    ck_assert_uint_eq(r1.result_len, 0);
    ck_assert_int_eq(r2.calls, 1);
    ck_assert_int_eq(r2.how, WAITER_GOT);
    ck_assert_uint_eq(lease_now(c, "q", 200), 0);
    ck_assert(!active(c, "q"));
    /* a late worker's result is a duplicate */
    ck_assert_int_eq(finish(c, 1, true, "late", 300), CORE_DUP_RESULT);
    /* nothing more happens to it before its TTL */
    advance(c, 5000);
    ck_assert_uint_eq(find(c, 1)->state, JOB_FAILED);
    struct job *out;
    ck_assert_int_eq(result(c, 1, 0, 5000, NULL, &out), CORE_OK);
    ck_assert_ptr_eq(out, j);

    /* max-attempts 1: the first expiry is final. */
    s = spec(2, "q");
    s.ttr = 10;
    s.max_attempts = 1;
    add_spec(c, &s, 5000);
    ck_assert_uint_eq(lease_now(c, "q", 5000), 2);
    advance(c, 5010);
    ck_assert_uint_eq(find(c, 2)->state, JOB_FAILED);
    core_done(c);
}
END_TEST

START_TEST(test_max_attempts_unlimited)
{
    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    s.ttr = 10;
    s.ttl = UINT64_MAX;
    s.max_attempts = 0;
    add_spec(c, &s, 0);
    uint64_t now = 0;
    for (uint32_t i = 1; i <= 300; i++) {
        REQUIRE(lease_now(c, "q", now) == 1);
        now += 10;
        advance(c, now);
        REQUIRE(find(c, 1)->state == JOB_PENDING);
        REQUIRE(find(c, 1)->attempts == i); /* past 255: not capped */
    }
    ck_assert_uint_eq(core_ids(c)->stats.failed, 0);
    core_done(c);
}
END_TEST

/* ---- TTL ---- */

enum ttl_case { TTL_NEW, TTL_SCHEDULED, TTL_LEASED, TTL_PENDING, TTL_COMPLETED, TTL_FAILED };

START_TEST(test_ttl_every_state)
{
    for (int k = TTL_NEW; k <= TTL_FAILED; k++) {
        struct core *c = core_fixture();
        struct job_spec s = spec(1, "q");
        s.ttr = k == TTL_LEASED ? 5000 : 100; /* leased: the TTL comes first */
        s.ttl = 1000;
        uint64_t expiry = 1000;
        if (k == TTL_SCHEDULED) {
            s.timed = true;
            s.time_ms = 500; /* TTL counts from the time: expires at 1500 */
            expiry = 1500;
        }
        add_spec(c, &s, 0);
        struct owner w;
        owner_init(&w, c, 1);
        if (k != TTL_COMPLETED && k != TTL_FAILED)
            ck_assert_int_eq(result(c, 1, 100000, 0, &w, NULL), CORE_PARKED);
        uint8_t want_state = JOB_NEW;
        switch (k) {
        case TTL_NEW:
            break;
        case TTL_SCHEDULED:
            ck_assert_uint_eq(core_ids(c)->stats.scheduled, 1);
            advance(c, 1000); /* now ready, for 500 ms more */
            ck_assert_uint_eq(core_ids(c)->stats.ready, 1);
            break;
        case TTL_LEASED:
            ck_assert_uint_eq(lease_now(c, "q", 0), 1);
            want_state = JOB_LEASED;
            break;
        case TTL_PENDING:
            ck_assert_uint_eq(lease_now(c, "q", 0), 1);
            advance(c, 100);
            want_state = JOB_PENDING;
            break;
        case TTL_COMPLETED:
            ck_assert_int_eq(finish(c, 1, true, "ok", 10), CORE_OK);
            want_state = JOB_COMPLETED;
            break;
        case TTL_FAILED:
            ck_assert_int_eq(finish(c, 1, false, "bad", 10), CORE_OK);
            want_state = JOB_FAILED;
            break;
        }
        advance(c, expiry - 1);
        struct job *j = find(c, 1);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(j->state, want_state);
        ck_assert_uint_eq(core_ids(c)->stats.evicted, 0);
        advance(c, expiry);
        ck_assert_ptr_null(find(c, 1));
        ck_assert_uint_eq(core_job_count(c), 0);
        bool had_result = k == TTL_COMPLETED || k == TTL_FAILED;
        ck_assert_uint_eq(core_ids(c)->stats.evicted, had_result ? 0 : 1);
        if (!had_result) {
            ck_assert_int_eq(w.calls, 1);
            ck_assert_int_eq(w.how, WAITER_GONE);
        }
        /* a late result finds nothing; the queue is gone */
        ck_assert_int_eq(finish(c, 1, true, "late", expiry), CORE_NOT_FOUND);
        ck_assert_uint_eq(queue_count(c), 0);
        ck_assert_uint_eq(core_ids(c)->stats.leased, 0);
        core_done(c);
    }
}
END_TEST

START_TEST(test_ttl_saturates)
{
    ck_assert_uint_eq(core_expiry(1000, 5), 1005);
    ck_assert_uint_eq(core_expiry(-100, 50), 0);
    ck_assert(core_expiry(INT64_MAX, UINT64_MAX) == UINT64_MAX);
    ck_assert(core_expiry(1, UINT64_MAX) == UINT64_MAX);
    ck_assert(core_expiry(-1, UINT64_MAX) == UINT64_MAX - 1);

    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    s.ttl = UINT64_MAX;
    add_spec(c, &s, 5);
    ck_assert(core_job_expiry(find(c, 1)) == UINT64_MAX);
    advance(c, UINT64_MAX / 2);
    ck_assert_ptr_nonnull(find(c, 1));
    ck_assert_uint_eq(core_ids(c)->stats.evicted, 0);
    core_done(c);
}
END_TEST

/* ---- results ---- */

START_TEST(test_complete_states)
{
    struct core *c = core_fixture();
    /* 1 will be LEASED */
    add(c, 1, "q", 0, 0);
    /* 2 will be PENDING */
    struct job_spec s = spec(2, "q");
    s.ttr = 10;
    s.priority = 5;
    add_spec(c, &s, 0);
    /* 3 stays NEW */
    add(c, 3, "q", -1, 0);
    /* 4 is NEW and scheduled */
    s = spec(4, "q");
    s.timed = true;
    s.time_ms = 100000;
    add_spec(c, &s, 0);

    ck_assert_uint_eq(lease_now(c, "q", 0), 2);
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    advance(c, 10); /* job 2 back to PENDING */
    ck_assert_uint_eq(find(c, 1)->state, JOB_LEASED);
    ck_assert_uint_eq(find(c, 2)->state, JOB_PENDING);

    ck_assert_int_eq(finish(c, 2, true, "two", 20), CORE_OK);   /* PENDING */
    ck_assert_int_eq(finish(c, 1, true, "one", 20), CORE_OK);   /* LEASED */
    ck_assert_int_eq(finish(c, 3, true, "three", 20), CORE_OK); /* NEW */
    ck_assert_int_eq(finish(c, 4, true, "", 20), CORE_OK);      /* NEW, scheduled */
    for (uint32_t n = 1; n <= 4; n++)
        ck_assert_uint_eq(find(c, n)->state, JOB_COMPLETED);
    ck_assert_uint_eq(core_ids(c)->stats.completed, 4);
    ck_assert_uint_eq(result_len(c, find(c, 3)), 5);
    ck_assert(memcmp(result_of(c, find(c, 3)), "three", 5) == 0);
    ck_assert_uint_eq(result_len(c, find(c, 4)), 0);
    ck_assert(!active(c, "q"));
    ck_assert_uint_eq(lease_now(c, "q", 20), 0);

    /* first result wins */
    ck_assert_int_eq(finish(c, 1, true, "again", 30), CORE_DUP_RESULT);
    ck_assert_int_eq(finish(c, 1, false, "again", 30), CORE_DUP_RESULT);
    ck_assert(memcmp(result_of(c, find(c, 1)), "one", 3) == 0);
    ck_assert_uint_eq(find(c, 1)->fails, 0);
    /* unknown */
    ck_assert_int_eq(finish(c, 99, true, "x", 30), CORE_NOT_FOUND);

    /* The TTR of a completed job is stopped. */
    advance(c, 5000);
    ck_assert_uint_eq(find(c, 1)->state, JOB_COMPLETED);
    ck_assert_uint_eq(find(c, 1)->attempts, 1);
    ck_assert_uint_eq(find(c, 4)->state, JOB_COMPLETED); /* not made ready at its time */
    advance(c, 200000);
    ck_assert_uint_eq(find(c, 4)->state, JOB_COMPLETED);
    ck_assert_uint_eq(core_ids(c)->stats.ready + core_ids(c)->stats.scheduled, 0);
    core_done(c);
}
END_TEST

START_TEST(test_fail_retry)
{
    struct core *c = core_fixture();
    struct owner r;
    owner_init(&r, c, 1);

    /* max-fails 3, unlimited attempts: two retries, then FAILED. */
    struct job_spec s = spec(1, "q");
    s.max_fails = 3;
    add_spec(c, &s, 0);
    add(c, 2, "q", 0, 0);
    ck_assert_int_eq(result(c, 1, 100000, 0, &r, NULL), CORE_PARKED);
    for (uint32_t f = 1; f <= 2; f++) {
        ck_assert_uint_eq(lease_now(c, "q", 0), 1); /* at its old place, before 2 */
        ck_assert_int_eq(finish(c, 1, false, "err", 0), CORE_OK);
        struct job *j = find(c, 1);
        ck_assert_uint_eq(j->state, JOB_PENDING);
        ck_assert_uint_eq(j->fails, f);
        ck_assert_ptr_null(result_of(c, j)); /* the result is dropped */
        ck_assert_int_eq(r.calls, 0);
    }
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_int_eq(finish(c, 1, false, "final", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 1)->state, JOB_FAILED);
    ck_assert_uint_eq(find(c, 1)->fails, 3);
    ck_assert_uint_eq(find(c, 1)->attempts, 3);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(r.how, WAITER_GOT);
    ck_assert_uint_eq(r.state, JOB_FAILED);
    ck_assert_uint_eq(r.result_len, 5);
    ck_assert(memcmp(r.result, "final", 5) == 0);
    ck_assert_uint_eq(core_ids(c)->stats.failed, 1);
    ck_assert_int_eq(finish(c, 1, false, "x", 0), CORE_DUP_RESULT);
    ck_assert_uint_eq(find(c, 1)->fails, 3);

    /* max-fails 0: the first fail is final. */
    s = spec(3, "q");
    s.max_fails = 0;
    add_spec(c, &s, 0);
    ck_assert_int_eq(finish(c, 3, false, "e", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 3)->state, JOB_FAILED);

    /* max-fails 1: also final at once (fails 1 is not < 1). */
    s = spec(4, "q");
    s.max_fails = 1;
    add_spec(c, &s, 0);
    ck_assert_int_eq(finish(c, 4, false, "e", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 4)->state, JOB_FAILED);

    /* Attempts exhausted: final even with fails left. */
    s = spec(5, "a");
    s.max_fails = 5;
    s.max_attempts = 2;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(lease_now(c, "a", 0), 5);
    ck_assert_int_eq(finish(c, 5, false, "e1", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 5)->state, JOB_PENDING);
    ck_assert_uint_eq(lease_now(c, "a", 0), 5);
    ck_assert_int_eq(finish(c, 5, false, "e2", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 5)->state, JOB_FAILED);
    ck_assert_uint_eq(result_len(c, find(c, 5)), 2);

    /* A fail on a job that is not leased: PENDING, in place. */
    s = spec(6, "b");
    s.max_fails = 2;
    add_spec(c, &s, 0);
    add(c, 7, "b", 0, 0);
    ck_assert_int_eq(finish(c, 6, false, "e", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 6)->state, JOB_PENDING);
    ck_assert_uint_eq(lease_now(c, "b", 0), 6);
    ck_assert_uint_eq(lease_now(c, "b", 0), 7);

    /* A retried job goes straight to a parked leaser. */
    s = spec(8, "c");
    s.max_fails = 2;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(lease_now(c, "c", 0), 8);
    struct owner l;
    owner_init(&l, c, 2);
    ck_assert_int_eq(lease(c, "c", 1000, 0, &l, NULL), CORE_PARKED);
    ck_assert_int_eq(finish(c, 8, false, "e", 5), CORE_OK);
    ck_assert_int_eq(l.calls, 1);
    ck_assert_int_eq(l.how, WAITER_GOT);
    ck_assert_uint_eq(l.job, 8);
    ck_assert_uint_eq(l.attempts, 2);
    ck_assert_uint_eq(find(c, 8)->state, JOB_LEASED);
    ck_assert_uint_eq(core_job_deadline(c, find(c, 8)), 5 + 1000);

    /* The retried job's TTR is stopped while it waits. */
    s = spec(9, "d");
    s.max_fails = 2;
    s.ttr = 50;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(lease_now(c, "d", 0), 9);
    ck_assert_int_eq(finish(c, 9, false, "e", 10), CORE_OK);
    advance(c, 500);
    ck_assert_uint_eq(find(c, 9)->state, JOB_PENDING);
    ck_assert_uint_eq(find(c, 9)->attempts, 1);
    core_done(c);
}
END_TEST

START_TEST(test_result_waiters)
{
    struct core *c = core_fixture();
    struct owner a, b, t, g;
    owner_init(&a, c, 1);
    owner_init(&b, c, 2);
    owner_init(&t, c, 3);
    owner_init(&g, c, 4);
    add(c, 1, "q", 0, 0);
    ck_assert_int_eq(result(c, 99, 100, 0, &a, NULL), CORE_NOT_FOUND);
    ck_assert_int_eq(result(c, 1, 0, 0, &a, NULL), CORE_TIMEOUT);
    ck_assert_int_eq(a.calls, 0);

    /* Two waiters both get the result. */
    ck_assert_int_eq(result(c, 1, 1000, 0, &a, NULL), CORE_PARKED);
    ck_assert_int_eq(result(c, 1, 2000, 0, &b, NULL), CORE_PARKED);
    ck_assert_uint_eq(core_ids(c)->stats.parked, 2);
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_int_eq(finish(c, 1, true, "done", 10), CORE_OK);
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(b.calls, 1);
    ck_assert_int_eq(a.how, WAITER_GOT);
    ck_assert_int_eq(b.how, WAITER_GOT);
    ck_assert_uint_eq(a.job, 1);
    ck_assert_uint_eq(a.state, JOB_COMPLETED);
    ck_assert_uint_eq(b.result_len, 4);
    ck_assert(memcmp(b.result, "done", 4) == 0);
    /* Asked afterwards: at once. */
    struct job *out = NULL;
    ck_assert_int_eq(result(c, 1, 1000, 10, &a, &out), CORE_OK);
    ck_assert_ptr_eq(out, find(c, 1));
    ck_assert_int_eq(a.calls, 1);
    /* The old deadlines are gone with the waiters. */
    advance(c, 3000);
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(b.calls, 1);

    /* Timeout. */
    add(c, 2, "q", 0, 3000);
    ck_assert_int_eq(result(c, 2, 500, 3000, &t, NULL), CORE_PARKED);
    advance(c, 3499);
    ck_assert_int_eq(t.calls, 0);
    advance(c, 3500);
    ck_assert_int_eq(t.calls, 1);
    ck_assert_int_eq(t.how, WAITER_TIMEOUT);
    ck_assert(!t.had_job);
    /* ...and the job does not remember it. */
    ck_assert_ptr_null(waiters_of(c, find(c, 2)));
    ck_assert_int_eq(finish(c, 2, true, "x", 3600), CORE_OK);
    ck_assert_int_eq(t.calls, 1);

    /* Delete wakes with GONE. */
    add(c, 3, "q", 0, 4000);
    owner_init(&a, c, 1);
    owner_init(&b, c, 2);
    ck_assert_int_eq(result(c, 3, 500, 4000, &a, NULL), CORE_PARKED);
    ck_assert_int_eq(result(c, 3, 500, 4000, &b, NULL), CORE_PARKED);
    ck_assert_int_eq(del(c, 3), CORE_OK);
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(a.how, WAITER_GONE);
    ck_assert_uint_eq(a.job, 3);
    ck_assert_int_eq(b.calls, 1);
    ck_assert_int_eq(b.how, WAITER_GONE);
    advance(c, 5000);
    ck_assert_int_eq(a.calls, 1);

    /* Cancel: no callback, and the others are still served. */
    add(c, 4, "q", 0, 5000);
    owner_init(&a, c, 1);
    owner_init(&b, c, 2);
    ck_assert_int_eq(result(c, 4, 500, 5000, &a, NULL), CORE_PARKED);
    ck_assert_int_eq(result(c, 4, 500, 5000, &b, NULL), CORE_PARKED);
    ck_assert_int_eq(result(c, 4, 500, 5000, &g, NULL), CORE_PARKED);
    cancel(c, &b);
    ck_assert_int_eq(finish(c, 4, false, "f", 5100), CORE_OK);
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(g.calls, 1);
    ck_assert_uint_eq(g.state, JOB_FAILED);
    ck_assert_int_eq(b.calls, 0);
    advance(c, 6000);
    ck_assert_int_eq(b.calls, 0);

    /* A fail that retries wakes nobody. */
    struct job_spec s = spec(5, "q");
    s.max_fails = 3;
    add_spec(c, &s, 6000);
    owner_init(&a, c, 1);
    ck_assert_int_eq(result(c, 5, 500, 6000, &a, NULL), CORE_PARKED);
    ck_assert_int_eq(finish(c, 5, false, "f", 6000), CORE_OK);
    ck_assert_int_eq(a.calls, 0);
    cancel(c, &a);
    core_done(c);
}
END_TEST

START_TEST(test_delete)
{
    struct core *c = core_fixture();
    ck_assert_int_eq(del(c, 1), CORE_NOT_FOUND);
    struct job_spec s = spec(1, "q");
    add_spec(c, &s, 0);
    s = spec(2, "q");
    s.timed = true;
    s.time_ms = 1000;
    add_spec(c, &s, 0);
    add(c, 3, "q", 0, 0);
    add(c, 4, "q", 0, 0);
    add(c, 5, "q", 0, 0);
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_uint_eq(lease_now(c, "q", 0), 3);
    ck_assert_int_eq(finish(c, 3, true, "r", 0), CORE_OK);
    ck_assert_uint_eq(lease_now(c, "q", 0), 4);
    ck_assert_int_eq(finish(c, 4, false, "r", 0), CORE_OK);
    /* leased, scheduled, completed, failed, new */
    for (uint32_t n = 1; n <= 5; n++) {
        ck_assert_int_eq(del(c, n), CORE_OK);
        ck_assert_ptr_null(find(c, n));
        ck_assert_int_eq(del(c, n), CORE_NOT_FOUND);
    }
    ck_assert_int_eq(finish(c, 1, true, "late", 0), CORE_NOT_FOUND);
    ck_assert_uint_eq(core_job_count(c), 0);
    ck_assert_uint_eq(queue_count(c), 0);
    ck_assert_uint_eq(core_ids(c)->stats.evicted, 0); /* delete is not eviction */
    advance(c, 10000);
    core_done(c);
}
END_TEST

/* ---- parked leasers ---- */

START_TEST(test_parked_fifo)
{
    struct core *c = core_fixture();
    struct owner o[4];
    for (int i = 0; i < 4; i++) {
        owner_init(&o[i], c, i + 1);
        ck_assert_int_eq(lease(c, "q", 1000, (uint64_t)i, &o[i], NULL), CORE_PARKED);
    }
    ck_assert_uint_eq(core_ids(c)->stats.parked, 4);
    ck_assert(active(c, "q"));
    ck_assert_uint_eq(core_queue(c, "q", 1)->parked, 4);
    for (uint32_t n = 1; n <= 3; n++)
        add(c, n, "q", (int32_t)n, 10);
    ck_assert_uint_eq(g_norder, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(g_order[i], i + 1);
        ck_assert_int_eq(o[i].how, WAITER_GOT);
        ck_assert_uint_eq(o[i].job, (uint32_t)i + 1);
        ck_assert_uint_eq(o[i].state, JOB_LEASED);
        ck_assert_uint_eq(o[i].attempts, 1);
    }
    ck_assert_uint_eq(core_ids(c)->stats.leased, 3);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 0);
    ck_assert_uint_eq(core_job_deadline(c, find(c, 1)), 10 + 1000);
    /* the fourth times out at 3 + 1000 */
    advance(c, 1002);
    ck_assert_int_eq(o[3].calls, 0);
    advance(c, 1003);
    ck_assert_int_eq(o[3].calls, 1);
    ck_assert_int_eq(o[3].how, WAITER_TIMEOUT);
    ck_assert(!o[3].had_job);
    ck_assert_uint_eq(core_ids(c)->stats.parked, 0);
    core_done(c);
}
END_TEST

START_TEST(test_park_several_names)
{
    struct core *c = core_fixture();
    struct owner l1, l2, l3;
    owner_init(&l1, c, 1);
    owner_init(&l2, c, 2);
    owner_init(&l3, c, 3);
    ck_assert_int_eq(lease(c, "a b c", 1000, 0, &l1, NULL), CORE_PARKED);
    ck_assert(active(c, "a") && active(c, "b") && active(c, "c"));
    ck_assert_uint_eq(core_ids(c)->stats.parked, 1); /* one client */
    ck_assert_int_eq(lease(c, "b", 1000, 0, &l2, NULL), CORE_PARKED);
    ck_assert_int_eq(lease(c, "c a", 1000, 0, &l3, NULL), CORE_PARKED);

    add(c, 1, "b", 0, 1);
    ck_assert_int_eq(l1.calls, 1);
    ck_assert_uint_eq(l1.job, 1);
    ck_assert_int_eq(l2.calls, 0);
    /* l1 left every queue: a now only has l3, b only l2 */
    ck_assert_uint_eq(core_queue(c, "a", 1)->parked, 1);
    ck_assert_uint_eq(core_queue(c, "b", 1)->parked, 1);
    ck_assert_uint_eq(core_queue(c, "c", 1)->parked, 1);
    add(c, 2, "a", 0, 2);
    ck_assert_int_eq(l3.calls, 1);
    ck_assert_uint_eq(l3.job, 2);
    /* c was held only by parked leasers: it is gone */
    ck_assert(!active(c, "c"));
    add(c, 3, "b", 0, 3);
    ck_assert_int_eq(l2.calls, 1);
    ck_assert_uint_eq(l2.job, 3);
    /* nobody is parked: the next job waits in its queue */
    add(c, 4, "c", 0, 4);
    ck_assert_uint_eq(find(c, 4)->state, JOB_NEW);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 1);

    /* A leaser parked on names that do not exist yet creates them, and a
     * timeout frees them again. */
    struct owner l4;
    owner_init(&l4, c, 4);
    size_t before = queue_count(c);
    ck_assert_int_eq(lease(c, "x y z", 100, 10, &l4, NULL), CORE_PARKED);
    ck_assert_uint_eq(queue_count(c), before + 3);
    advance(c, 110);
    ck_assert_int_eq(l4.how, WAITER_TIMEOUT);
    ck_assert_uint_eq(queue_count(c), before);
    ck_assert(!active(c, "x") && !active(c, "y") && !active(c, "z"));
    core_done(c);
}
END_TEST

START_TEST(test_names_listed_twice)
{
    struct core *c = core_fixture();
    struct owner l;
    owner_init(&l, c, 1);
    ck_assert_int_eq(lease(c, "q q q", 1000, 0, &l, NULL), CORE_PARKED);
    struct queue *q = core_queue(c, "q", 1);
    ck_assert_uint_eq(q->parked, 1);
    ck_assert_uint_eq(q->refs, 1);
    add(c, 1, "q", 0, 1);
    ck_assert_int_eq(l.calls, 1);
    add(c, 2, "q", 0, 1);
    ck_assert_uint_eq(find(c, 2)->state, JOB_NEW); /* served once only */
    ck_assert_uint_eq(lease_now(c, "q q", 1), 2);
    del(c, 1);
    del(c, 2);
    ck_assert_uint_eq(queue_count(c), 0);

    /* With a duplicate in the list, a name is not favoured: a a a b picks
     * each about half of the time. */
    enum { N = 4000 };
    g_quiet = true;
    for (uint32_t i = 0; i < N; i++) {
        add(c, 100 + i, "a", 0, 2);
        add(c, 100 + N + i, "b", 0, 2);
    }
    int picked_a = 0;
    for (int i = 0; i < N; i++) {
        uint32_t n = lease_now(c, "a a a b", 2);
        REQUIRE(n != 0);
        if (core_job_queue(c, find(c, n)) == core_queue(c, "a", 1))
            picked_a++;
    }
    g_quiet = false;
    check_core(c);
    ck_assert_int_gt(picked_a, N / 2 - 300);
    ck_assert_int_lt(picked_a, N / 2 + 300);
    core_done(c);
}
END_TEST

START_TEST(test_lease_random_pick)
{
    struct core *c = core_fixture();
    enum { N = 400 };
    g_quiet = true;
    for (uint32_t i = 0; i < N; i++) {
        add(c, 1 + i, "a", 0, 0);
        add(c, 1 + N + i, "b", 0, 0);
    }
    int picked_a = 0;
    for (int i = 0; i < N; i++) {
        uint32_t n = lease_now(c, "a b", 0);
        REQUIRE(n != 0);
        picked_a += n <= N;
    }
    g_quiet = false;
    check_core(c);
    ck_assert_int_gt(picked_a, 0);
    ck_assert_int_lt(picked_a, N);
    ck_assert_int_gt(picked_a, N / 2 - 100);
    ck_assert_int_lt(picked_a, N / 2 + 100);
    /* Within a name, still its first job: the a jobs came out in order. */
    uint32_t expect_next = 1;
    for (uint32_t n = 1; n <= N; n++) {
        if (find(c, n)->state == JOB_LEASED) {
            ck_assert_uint_eq(n, expect_next);
            expect_next++;
        }
    }
    /* A name without ready jobs is never picked. */
    add(c, 5000, "solo", 0, 0);
    ck_assert_uint_eq(lease_now(c, "empty solo nothing", 0), 5000);
    core_done(c);
}
END_TEST

START_TEST(test_cancel_parked_lease)
{
    struct core *c = core_fixture();
    struct owner l1, l2;
    owner_init(&l1, c, 1);
    owner_init(&l2, c, 2);
    ck_assert_int_eq(lease(c, "q r", 1000, 0, &l1, NULL), CORE_PARKED);
    ck_assert_int_eq(lease(c, "q", 1000, 0, &l2, NULL), CORE_PARKED);
    cancel(c, &l1);
    ck_assert(!active(c, "r"));
    add(c, 1, "r", 0, 1);
    ck_assert_uint_eq(find(c, 1)->state, JOB_NEW); /* not given to the cancelled one */
    add(c, 2, "q", 0, 1);
    ck_assert_int_eq(l2.calls, 1); /* the next in line */
    ck_assert_uint_eq(l2.job, 2);
    ck_assert_int_eq(l1.calls, 0);
    advance(c, 5000);
    ck_assert_int_eq(l1.calls, 0); /* its timer went with it */

    /* Cancel the only leaser: the queue goes. */
    owner_init(&l1, c, 1);
    ck_assert_int_eq(lease(c, "lonely", 1000, 5000, &l1, NULL), CORE_PARKED);
    ck_assert(active(c, "lonely"));
    cancel(c, &l1);
    ck_assert(!active(c, "lonely"));
    core_done(c);
}
END_TEST

/* ---- timed jobs ---- */

START_TEST(test_timed_jobs)
{
    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    s.timed = true;
    s.time_ms = 1000;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(core_ids(c)->stats.scheduled, 1);
    ck_assert(active(c, "q"));
    ck_assert_uint_le(core_next_event(c), 1000);
    ck_assert_uint_eq(lease_now(c, "q", 0), 0);
    advance(c, 999);
    ck_assert_uint_eq(lease_now(c, "q", 999), 0);
    add(c, 2, "q", 0, 500); /* untimed, same priority, added earlier in time */
    advance(c, 1000);
    ck_assert_uint_eq(core_ids(c)->stats.scheduled, 0);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 2);
    ck_assert_uint_eq(find(c, 1)->state, JOB_NEW);
    /* untimed before timed, though the timed job arrived first */
    ck_assert_uint_eq(lease_now(c, "q", 1000), 2);
    ck_assert_uint_eq(lease_now(c, "q", 1000), 1);

    /* A past time: ready at once, still after untimed jobs of its priority
     * but before lower priorities; among timed jobs by time. */
    s = spec(3, "p");
    s.timed = true;
    s.time_ms = 1500;
    add_spec(c, &s, 2000);
    s = spec(4, "p");
    s.timed = true;
    s.time_ms = 1200;
    add_spec(c, &s, 2000);
    add(c, 5, "p", 0, 2000);
    add(c, 6, "p", -1, 2000);
    s = spec(7, "p");
    s.timed = true;
    s.time_ms = 1900;
    s.priority = 1;
    add_spec(c, &s, 2000);
    ck_assert_uint_eq(core_ids(c)->stats.scheduled, 0);
    uint32_t want[] = {7, 5, 4, 3, 6};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++)
        ck_assert_uint_eq(lease_now(c, "p", 2000), want[i]);

    /* A parked leaser gets a scheduled job when its time comes. */
    struct owner l;
    owner_init(&l, c, 1);
    ck_assert_int_eq(lease(c, "t", 10000, 2000, &l, NULL), CORE_PARKED);
    s = spec(8, "t");
    s.timed = true;
    s.time_ms = 3000;
    add_spec(c, &s, 2000);
    ck_assert_int_eq(l.calls, 0);
    advance(c, 2999);
    ck_assert_int_eq(l.calls, 0);
    advance(c, 3000);
    ck_assert_int_eq(l.calls, 1);
    ck_assert_uint_eq(l.job, 8);
    ck_assert_uint_eq(find(c, 8)->state, JOB_LEASED);
    ck_assert_uint_eq(core_job_deadline(c, find(c, 8)), 3000 + 1000);

    /* Scheduled jobs become ready in time order, even when time jumps. */
    for (uint32_t n = 0; n < 5; n++) {
        s = spec(20 + n, "u");
        s.timed = true;
        s.time_ms = 10000 - (int64_t)n * 100;
        add_spec(c, &s, 3000);
    }
    advance(c, 20000);
    for (uint32_t n = 0; n < 5; n++)
        ck_assert_uint_eq(lease_now(c, "u", 20000), 24 - n);

    /* Times order to the nanosecond, then by arrival; the nanoseconds live
     * in the job's struct job_ext, and JOB_F_NS says there are some. */
    static const uint32_t ns[] = {900, 0, 5, 900};
    for (uint32_t n = 0; n < WQ_ARRAY_LEN(ns); n++) {
        s = spec(30 + n, "v");
        s.timed = true;
        s.time_ms = 25000;
        s.time_ns = ns[n];
        add_spec(c, &s, 20000);
        struct job *j = find(c, 30 + n);
        ck_assert_int_eq(j->base_ms, 25000);
        ck_assert_uint_eq(core_job_ext(c, j)->time_ns, ns[n]);
        ck_assert_int_eq(core_job_created(c, j), 20000);
        ck_assert(((j->flags & JOB_F_NS) != 0) == (ns[n] != 0));
    }
    advance(c, 25000);
    uint32_t want_ns[] = {31, 32, 30, 33};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want_ns); i++)
        ck_assert_uint_eq(lease_now(c, "v", 25000), want_ns[i]);
    core_done(c);
}
END_TEST

/* ---- queue lifetime ---- */

START_TEST(test_queue_lifetime)
{
    struct core *c = core_fixture();
    ck_assert(!active(c, "q"));
    add(c, 1, "q", 0, 0);
    ck_assert(active(c, "q"));
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert(active(c, "q")); /* leased */
    ck_assert_int_eq(finish(c, 1, true, "r", 0), CORE_OK);
    ck_assert(!active(c, "q")); /* a completed job does not make it visible */
    add(c, 2, "q", 0, 0);
    ck_assert(active(c, "q"));
    del(c, 2);
    ck_assert(!active(c, "q"));
    del(c, 1);
    ck_assert_uint_eq(queue_count(c), 0); /* nothing refers to it: freed */

    /* Name lookup is by exact bytes. */
    add(c, 3, "Q", 0, 0);
    ck_assert(!active(c, "q"));
    ck_assert(core_queue(c, "Qx", 1) != NULL);
    ck_assert(core_queue(c, "Qx", 2) == NULL);
    del(c, 3);
    ck_assert_uint_eq(queue_count(c), 0);
    core_done(c);
}
END_TEST

/* ---- a random workload, checked after every step ---- */

START_TEST(test_random_workload)
{
    static const char *const lists[] = {"a", "b", "c", "a b", "b c a", "a a", "zz", "c zz"};
    static const char *const names[] = {"a", "b", "c"};
    enum { OWNERS = 32, IDS = 64, STEPS = 20000 };
    struct core *c = core_fixture();
    struct owner owners[OWNERS];
    for (int i = 0; i < OWNERS; i++)
        owner_init(&owners[i], c, i);
    rng_seed(0x12345678);
    c->backoff_unit_ms = 1; /* retries after 15 to 100 ms or so */
    core_set_dead_limits(c, JOB_SPACE_IDS, 700, 5);
    uint64_t now = 0;
    uint64_t gone_before = 0, revived = 0;
    for (int step = 0; step < STEPS; step++) {
        uint32_t id = 1 + (uint32_t)rng_below(IDS);
        struct owner *o = &owners[rng_below(OWNERS)];
        switch (rng_below(10)) {
        case 0:
        case 1: {
            struct job_spec s = spec(id, names[rng_below(3)]);
            s.priority = (int32_t)rng_below(3);
            s.ttr = 1 + (uint32_t)rng_below(200);
            s.ttl = 1 + rng_below(10000);
            s.max_attempts = (uint8_t)rng_below(4);
            s.max_fails = (uint8_t)rng_below(4);
            s.backoff = rng_below(3) == 0 ? CORE_BACKOFF_FAKTORY : CORE_BACKOFF_NONE;
            s.dead = rng_below(2) == 0;
            if (rng_below(4) == 0) {
                s.timed = true;
                s.time_ms = (int64_t)now + (int64_t)rng_below(400) - 100;
                s.time_ns = rng_below(2) ? 0 : (uint32_t)rng_below(1000000);
            }
            bool existed = find(c, id) != NULL;
            enum core_status st = core_add(c, &s, now);
            REQUIRE(st == (existed ? CORE_DUPLICATE : CORE_OK));
            check_core(c);
            break;
        }
        case 2:
        case 3:
            if (!o->active)
                lease(c, lists[rng_below(WQ_ARRAY_LEN(lists))], rng_below(4) * 500, now, o, NULL);
            break;
        case 4: {
            struct job *j = find(c, id);
            enum core_status st = finish(c, id, rng_below(2), "res", now);
            REQUIRE(j == NULL ? st == CORE_NOT_FOUND : st == CORE_OK || st == CORE_DUP_RESULT);
            break;
        }
        case 5:
            if (rng_below(4) == 0)
                del(c, id);
            else if (find(c, id) != NULL) {
                bool dead = core_job_died(c, find(c, id)) != 0;
                REQUIRE(revive(c, id, now) == (dead ? CORE_OK : CORE_NOT_DEAD));
                revived += dead;
            }
            break;
        case 6:
            if (!o->active)
                result(c, id, rng_below(4) * 500, now, o, NULL);
            break;
        case 7:
            if (o->active && rng_below(3) == 0)
                cancel(c, o);
            break;
        default:
            now += rng_below(30);
            advance(c, now);
            break;
        }
        REQUIRE(core_ids(c)->stats.evicted >= gone_before);
        gone_before = core_ids(c)->stats.evicted;
    }
    for (int i = 0; i < OWNERS; i++) {
        if (owners[i].active)
            cancel(c, &owners[i]);
    }
    ck_assert_uint_gt(revived, 10);
    /* Let everything expire: nothing may be left behind. */
    advance(c, now + 100000);
    ck_assert_uint_eq(core_job_count(c), 0);
    ck_assert_uint_eq(queue_count(c), 0);
    core_done(c);
}
END_TEST

/* core_free with jobs in every state and a parked result-waiter cancelled
 * first: nothing leaks (run under valgrind). */
START_TEST(test_free_with_jobs)
{
    struct core *c = core_fixture();
    g_quiet = true;
    for (uint32_t n = 1; n <= 3000; n++) {
        struct job_spec s = spec(n, n % 2 ? "odd" : "even");
        if (n % 7 == 0) {
            s.timed = true;
            s.time_ms = 100000;
        }
        add_spec(c, &s, 0);
    }
    for (int i = 0; i < 500; i++)
        REQUIRE(lease_now(c, "odd even", 0) != 0);
    for (uint32_t n = 1; n <= 3000; n += 11)
        finish(c, n, n % 2, "some result", 0);
    g_quiet = false;
    check_core(c);
    struct owner o;
    owner_init(&o, c, 1);
    ck_assert_int_eq(lease(c, "nobody", 100, 0, &o, NULL), CORE_PARKED);
    cancel(c, &o);
    core_free(c);
    core_free(NULL);
}
END_TEST

/* ---- the job model's extensions (ours) ---- */

/* Is job n's result text (exactly)? */
static bool
result_is(const struct core *c, uint32_t n, const char *text)
{
    const struct job *j = find((struct core *)c, n);
    uint32_t len;
    const char *r = j != NULL ? core_job_result(c, j, &len) : NULL;
    return r != NULL && len == strlen(text) && memcmp(r, text, len) == 0;
}

/* Add job n to name q after the jobs of list (numbers), at now. */
static enum core_status
add_after(struct core *c, uint32_t n, const uint32_t *list, size_t k, uint64_t now)
{
    struct job_spec s = spec(n, "q");
    uint8_t(*after)[JOBID_LEN] = malloc((k + 1) * JOBID_LEN);
    for (size_t i = 0; i < k; i++)
        mkid(list[i], after[i]);
    s.after = (const uint8_t(*)[JOBID_LEN])after;
    s.nafter = k;
    enum core_status st = core_add(c, &s, now);
    free(after);
    check_core(c);
    return st;
}

START_TEST(test_deps_release_and_fail)
{
    struct core *c = core_fixture();
    add(c, 1, "q", 0, 0);
    add(c, 2, "q", 0, 0);
    uint32_t ab[] = {1, 2, 1};
    ck_assert_int_eq(add_after(c, 3, ab, 3, 0), CORE_OK);
    ck_assert_int_eq(find(c, 3)->state, JOB_WAITING);
    uint32_t unknown[] = {99};
    ck_assert_int_eq(add_after(c, 4, unknown, 1, 0), CORE_BAD_PREREQ);
    ck_assert_ptr_null(find(c, 4));
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_uint_eq(lease_now(c, "q", 0), 2);
    ck_assert_int_eq(finish(c, 1, true, "a", 0), CORE_OK);
    ck_assert_int_eq(find(c, 3)->state, JOB_WAITING);
    ck_assert_int_eq(finish(c, 2, true, "b", 0), CORE_OK);
    ck_assert_int_eq(find(c, 3)->state, JOB_NEW);
    /* one already completed counts for nothing */
    uint32_t one[] = {1};
    ck_assert_int_eq(add_after(c, 5, one, 1, 0), CORE_OK);
    ck_assert_int_eq(find(c, 5)->state, JOB_NEW);
    ck_assert_uint_eq(lease_now(c, "q", 0), 3);
    /* 6 waits for 3; 7 for 6: 3 fails for good, both follow */
    uint32_t three[] = {3}, six[] = {6};
    ck_assert_int_eq(add_after(c, 6, three, 1, 0), CORE_OK);
    ck_assert_int_eq(add_after(c, 7, six, 1, 0), CORE_OK);
    ck_assert_int_eq(finish(c, 3, false, "no", 0), CORE_OK);
    ck_assert_int_eq(find(c, 6)->state, JOB_FAILED);
    ck_assert(result_is(c, 6, "prerequisite aa000000-0000-0000-0000-000000000003 failed"));
    ck_assert(result_is(c, 7, "prerequisite aa000000-0000-0000-0000-000000000006 failed"));
    /* a prerequisite that failed already fails the job at once */
    ck_assert_int_eq(add_after(c, 8, three, 1, 0), CORE_OK);
    ck_assert_int_eq(find(c, 8)->state, JOB_FAILED);
    core_done(c);
}
END_TEST

/* A chain 10,000 deep fails in one go, without recursion; releasing one
 * prerequisite touches only its own dependents. */
START_TEST(test_deps_chain)
{
    struct core *c = core_fixture();
    g_quiet = true;
    enum { DEPTH = 10000 };
    add(c, 1, "q", 0, 0);
    for (uint32_t n = 2; n <= DEPTH; n++) {
        uint32_t prev = n - 1;
        REQUIRE(add_after(c, n, &prev, 1, 0) == CORE_OK);
    }
    g_quiet = false;
    check_core(c);
    ck_assert_uint_eq(core_ids(c)->stats.waiting, DEPTH - 1);
    ck_assert_int_eq(del(c, 1), CORE_OK);
    ck_assert_uint_eq(core_ids(c)->stats.waiting, 0);
    ck_assert_uint_eq(core_ids(c)->stats.failed, DEPTH - 1);
    ck_assert(result_is(c, 2, "prerequisite aa000000-0000-0000-0000-000000000001 is gone"));
    ck_assert(result_is(c, DEPTH, "prerequisite aa000000-0000-0000-0000-00000000270f failed"));
    core_done(c);
}
END_TEST

/* A prerequisite that expires while its dependent waits fails it; the
 * dependent's own TTL runs meanwhile. */
START_TEST(test_deps_expire)
{
    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    s.ttl = 500;
    add_spec(c, &s, 0);
    uint32_t one[] = {1};
    ck_assert_int_eq(add_after(c, 2, one, 1, 0), CORE_OK);
    advance(c, 499);
    ck_assert_int_eq(find(c, 2)->state, JOB_WAITING);
    advance(c, 500);
    ck_assert_ptr_null(find(c, 1));
    ck_assert_int_eq(find(c, 2)->state, JOB_FAILED);
    ck_assert(result_is(c, 2, "prerequisite aa000000-0000-0000-0000-000000000001 is gone"));
    /* a waiting job of its own expires by its TTL */
    add(c, 3, "q", 0, 1000);
    s = spec(4, "q");
    s.ttl = 100;
    uint8_t three[1][JOBID_LEN];
    mkid(3, three[0]);
    s.after = (const uint8_t(*)[JOBID_LEN])three;
    s.nafter = 1;
    add_spec(c, &s, 1000);
    advance(c, 1100);
    ck_assert_ptr_null(find(c, 4));
    ck_assert_uint_eq(lease_now(c, "q", 1100), 3);
    ck_assert_int_eq(finish(c, 3, true, "ok", 1100), CORE_OK);
    core_done(c);
}
END_TEST

START_TEST(test_cancel)
{
    struct core *c = core_fixture();
    uint8_t id[JOBID_LEN];
    add(c, 1, "q", 0, 0);
    add(c, 2, "q", 0, 0);
    mkid(1, id);
    /* a ready job */
    ck_assert_int_eq(core_cancel_job(c, id, 0), CORE_OK);
    ck_assert_int_eq(find(c, 1)->state, JOB_FAILED);
    ck_assert(result_is(c, 1, "cancelled"));
    ck_assert_int_eq(core_cancel_job(c, id, 0), CORE_DUP_RESULT);
    ck_assert_int_eq(finish(c, 1, true, "late", 0), CORE_CANCELLED);
    /* a leased job: its worker is told, whatever it sends */
    ck_assert_uint_eq(lease_now(c, "q", 0), 2);
    struct owner o;
    owner_init(&o, c, 1);
    struct job *got;
    ck_assert_int_eq(result(c, 2, 5000, 0, &o, &got), CORE_PARKED);
    mkid(2, id);
    ck_assert_int_eq(core_cancel_job(c, id, 0), CORE_OK);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.how, WAITER_GOT);
    ck_assert_int_eq(o.state, JOB_FAILED);
    ck_assert_int_eq(core_touch(c, id, 0, 0, 0), CORE_CANCELLED);
    ck_assert_int_eq(finish(c, 2, false, "late", 0), CORE_CANCELLED);
    ck_assert_uint_eq(core_ids(c)->stats.leased, 0);
    /* complete first, cancel after: the result stands */
    add(c, 3, "q", 0, 0);
    ck_assert_uint_eq(lease_now(c, "q", 0), 3);
    ck_assert_int_eq(finish(c, 3, true, "done", 0), CORE_OK);
    mkid(3, id);
    ck_assert_int_eq(core_cancel_job(c, id, 0), CORE_DUP_RESULT);
    ck_assert(result_is(c, 3, "done"));
    mkid(9, id);
    ck_assert_int_eq(core_cancel_job(c, id, 0), CORE_NOT_FOUND);
    core_done(c);
}
END_TEST

/* A worker whose lease ran out is refused by its fencing token; touch
 * keeps a lease alive. */
START_TEST(test_fencing_and_touch)
{
    struct core *c = core_fixture();
    uint8_t id[JOBID_LEN];
    mkid(1, id);
    add(c, 1, "q", 0, 0); /* TTR 1000 */
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_uint_eq(find(c, 1)->attempts, 1);
    advance(c, 900);
    ck_assert_int_eq(core_touch(c, id, 0, 1, 900), CORE_OK);
    advance(c, 1899);
    ck_assert_int_eq(find(c, 1)->state, JOB_LEASED);
    ck_assert_int_eq(core_touch(c, id, 50, 0, 1899), CORE_OK); /* this once: 50 ms */
    advance(c, 1949);
    ck_assert_int_eq(find(c, 1)->state, JOB_PENDING);
    ck_assert_int_eq(core_touch(c, id, 0, 0, 1949), CORE_NOT_FOUND);
    ck_assert_uint_eq(lease_now(c, "q", 1949), 1);
    ck_assert_uint_eq(find(c, 1)->attempts, 2);
    ck_assert_uint_eq(find(c, 1)->ttr, 1000); /* the job's TTR is its own */
    ck_assert_int_eq(core_finish(c, id, true, "old", 3, 1, 1950), CORE_STALE);
    ck_assert_int_eq(core_touch(c, id, 0, 1, 1950), CORE_STALE);
    ck_assert_int_eq(find(c, 1)->state, JOB_LEASED);
    ck_assert_int_eq(core_finish(c, id, true, "new", 3, 2, 1950), CORE_OK);
    ck_assert_int_eq(core_finish(c, id, true, "old", 3, 1, 1950), CORE_STALE);
    ck_assert(result_is(c, 1, "new"));
    core_done(c);
}
END_TEST

/* What a fan-in's owner was told. */
static int g_all_calls;
static enum waiter_outcome g_all_how;
static size_t g_all_n;

static void
on_all_done(void *arg, enum waiter_outcome how, const struct core *c,
            const uint8_t (*ids)[JOBID_LEN], size_t n)
{
    g_all_calls++;
    g_all_how = how;
    g_all_n = n;
    g_outstanding--;
    REQUIRE(core_ids(c)->stats.parked == (uint64_t)g_outstanding);
}

static enum core_status
wait_all(struct core *c, const uint32_t *list, size_t k, uint64_t wait, uint64_t now,
         struct waiter **w)
{
    uint8_t(*ids)[JOBID_LEN] = malloc(k * JOBID_LEN);
    for (size_t i = 0; i < k; i++)
        mkid(list[i], ids[i]);
    enum core_status st =
        core_wait_all(c, (const uint8_t(*)[JOBID_LEN])ids, k, wait, now, on_all_done, NULL, w);
    if (st == CORE_PARKED)
        g_outstanding++;
    free(ids);
    check_core(c);
    return st;
}

START_TEST(test_wait_all)
{
    struct core *c = core_fixture();
    g_all_calls = 0;
    for (uint32_t n = 1; n <= 3; n++)
        add(c, n, "q", 0, 0);
    struct waiter *w;
    uint32_t all[] = {1, 2, 3, 2}, missing[] = {1, 9};
    ck_assert_int_eq(wait_all(c, missing, 2, 1000, 0, &w), CORE_NOT_FOUND);
    ck_assert_int_eq(wait_all(c, all, 4, 0, 0, &w), CORE_TIMEOUT);
    ck_assert_int_eq(wait_all(c, all, 4, 1000, 0, &w), CORE_PARKED);
    ck_assert_uint_eq(core_ids(c)->stats.parked, 1); /* one client, however many jobs */
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_int_eq(finish(c, 1, true, "a", 0), CORE_OK);
    ck_assert_uint_eq(lease_now(c, "q", 0), 2);
    ck_assert_int_eq(finish(c, 2, false, "b", 0), CORE_OK);
    ck_assert_int_eq(g_all_calls, 0);
    ck_assert_int_eq(del(c, 3), CORE_OK); /* gone counts as an end */
    ck_assert_int_eq(g_all_calls, 1);
    ck_assert_int_eq(g_all_how, WAITER_GOT);
    ck_assert_uint_eq(g_all_n, 4);
    uint32_t done[] = {1, 2};
    ck_assert_int_eq(wait_all(c, done, 2, 1000, 0, &w), CORE_OK);
    /* the time runs out; then a client that leaves */
    add(c, 4, "q", 0, 0);
    uint32_t some[] = {1, 4};
    ck_assert_int_eq(wait_all(c, some, 2, 100, 0, &w), CORE_PARKED);
    advance(c, 100);
    ck_assert_int_eq(g_all_calls, 2);
    ck_assert_int_eq(g_all_how, WAITER_TIMEOUT);
    ck_assert_int_eq(wait_all(c, some, 2, 100, 100, &w), CORE_PARKED);
    core_cancel(c, w);
    g_outstanding--;
    check_core(c);
    advance(c, 1000);
    ck_assert_int_eq(g_all_calls, 2);
    core_done(c);
}
END_TEST

START_TEST(test_same_job)
{
    struct core *c = core_fixture();
    struct job_spec s = spec(1, "q");
    add_spec(c, &s, 0);
    ck_assert(core_same_job(c, find(c, 1), &s));
    struct job_spec t = s;
    t.payload = "other!!";
    ck_assert(!core_same_job(c, find(c, 1), &t));
    t = s;
    t.ttr = 999;
    ck_assert(!core_same_job(c, find(c, 1), &t));
    t = s;
    t.name = (struct wq_str){"r", 1};
    ck_assert(!core_same_job(c, find(c, 1), &t));
    t = s;
    t.timed = true;
    t.time_ms = 5;
    ck_assert(!core_same_job(c, find(c, 1), &t));
    s = spec(2, "q");
    s.timed = true;
    s.time_ms = 5000;
    s.time_ns = 7;
    add_spec(c, &s, 0);
    ck_assert(core_same_job(c, find(c, 2), &s));
    s.time_ns = 8;
    ck_assert(!core_same_job(c, find(c, 2), &s));
    core_done(c);
}
END_TEST

/* Lease as named worker who (NULL: anonymous) without waiting: the job's
 * number, 0 for none. */
static uint32_t
lease_as(struct core *c, const char *name, struct worker *who, uint64_t now)
{
    struct wq_str n = {name, strlen(name)};
    struct job *j;
    struct waiter *w;
    enum core_status st = core_lease(c, &n, 1, 0, now, who, on_done, NULL, &j, &w);
    check_core(c);
    return st == CORE_OK ? job_num(j) : 0;
}

/* Jobs for named workers only (add -worker): the others never see them;
 * a named worker takes the better of its own and the common jobs; a
 * parked worker gets its job at once; the hidden queue goes with its last
 * job. */
START_TEST(test_targeted)
{
    struct core *c = core_fixture();
    struct worker *a = workers_attach(c->workers, "a", 1, "", 0, "[]", WORKER_WORKQ, "", 0);
    struct worker *b = workers_attach(c->workers, "b", 1, "", 0, "[]", WORKER_WORKQ, "", 0);
    struct worker *x = workers_attach(c->workers, "x", 1, "", 0, "[]", WORKER_WORKQ, "", 0);
    add(c, 1,
        "q\x1f"
        "a,b",
        5, 0);
    add(c, 2, "q", 1, 0);
    ck_assert_uint_eq(lease_as(c, "q", x, 0), 2); /* not for x */
    ck_assert_uint_eq(lease_as(c, "q", x, 0), 0);
    ck_assert_uint_eq(lease_as(c, "q", NULL, 0), 0);
    add(c, 3, "q", 9, 0);
    ck_assert_uint_eq(lease_as(c, "q", a, 0), 3); /* priority 9 before its own 5 */
    ck_assert_uint_eq(lease_as(c, "q", a, 0), 1);
    /* the hidden queue goes with its last job */
    ck_assert_int_eq(finish(c, 2, true, "ok", 0), CORE_OK);
    ck_assert_int_eq(finish(c, 3, true, "ok", 0), CORE_OK);
    ck_assert_int_eq(finish(c, 1, true, "ok", 0), CORE_OK);
    ck_assert_int_eq(del(c, 1), CORE_OK);
    ck_assert_ptr_null(registry_find(core_ids(c)->queues.by_name,
                                     "q\x1f"
                                     "a,b",
                                     4));
    /* a parked worker of the set gets the job at once; an anonymous one not */
    struct owner anon, mine;
    owner_init(&anon, c, 1);
    owner_init(&mine, c, 2);
    struct wq_str q = {"q", 1};
    struct job *j;
    ck_assert_int_eq(core_lease(c, &q, 1, 5000, 0, NULL, on_done, &anon, &j, &anon.w), CORE_PARKED);
    anon.active = true;
    g_outstanding++;
    ck_assert_int_eq(core_lease(c, &q, 1, 5000, 0, b, on_done, &mine, &j, &mine.w), CORE_PARKED);
    mine.active = true;
    g_outstanding++;
    add(c, 4,
        "q\x1f"
        "b",
        0, 0);
    ck_assert_int_eq(mine.calls, 1);
    ck_assert_uint_eq(mine.job, 4);
    ck_assert_int_eq(anon.calls, 0);
    ck_assert_uint_eq(b->holding, 1);
    advance(c, 5000);
    ck_assert_int_eq(anon.calls, 1);
    ck_assert_int_eq(anon.how, WAITER_TIMEOUT);
    /* b leaves: its job stays LEASED until its TTR */
    workers_detach(c->workers, b);
    advance(c, 6000);
    ck_assert_int_eq(find(c, 4)->state, JOB_PENDING);
    ck_assert_uint_eq(lease_as(c, "q", a, 6000), 0); /* only for b */
    (void)x;
    core_done(c);
}
END_TEST

/* A broadcast: a copy for each worker present on the name; the original
 * completes once every copy has its result or is gone. */
START_TEST(test_broadcast)
{
    struct core *c = core_fixture();
    struct worker *w[3];
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        w[i] = workers_attach(c->workers, names[i], 1, "", 0, "[]", WORKER_WORKQ, "", 0);
    /* a and b leased from q lately, c only from other */
    add(c, 50, "q", 0, 0);
    add(c, 51, "q", 0, 0);
    add(c, 52, "other", 0, 0);
    ck_assert_uint_eq(lease_as(c, "q", w[0], 0), 50);
    ck_assert_uint_eq(lease_as(c, "q", w[1], 0), 51);
    ck_assert_uint_eq(lease_as(c, "other", w[2], 0), 52);
    for (uint32_t k = 50; k <= 52; k++)
        ck_assert_int_eq(finish(c, k, true, "ok", 0), CORE_OK);
    struct job_spec s = spec(1, "q");
    s.broadcast = true;
    add_spec(c, &s, 0);
    ck_assert_int_eq(find(c, 1)->state, JOB_WAITING);
    size_t n;
    const uint8_t(*copies)[JOBID_LEN] = core_job_copies(c, find(c, 1), &n);
    ck_assert_uint_eq(n, 2);
    uint8_t ids[2][JOBID_LEN];
    memcpy(ids, copies, sizeof ids);
    ck_assert_uint_eq(lease_as(c, "q", NULL, 0), 0); /* copies are for a and b only */
    ck_assert_uint_eq(lease_as(c, "q", w[2], 0), 0);
    struct wq_str q = {"q", 1};
    struct job *ja, *jb;
    struct waiter *wt;
    ck_assert_int_eq(core_lease(c, &q, 1, 0, 0, w[0], on_done, NULL, &ja, &wt), CORE_OK);
    ck_assert_int_eq(core_lease(c, &q, 1, 0, 0, w[1], on_done, NULL, &jb, &wt), CORE_OK);
    ck_assert_int_eq(memcmp(ja->id, ids[0], JOBID_LEN), 0);
    ck_assert_int_eq(memcmp(jb->id, ids[1], JOBID_LEN), 0);
    ck_assert_int_eq(core_finish(c, ids[0], true, "x", 1, 0, 0), CORE_OK);
    ck_assert_int_eq(find(c, 1)->state, JOB_WAITING);
    ck_assert_int_eq(core_delete(c, ids[1]), CORE_OK); /* gone counts as done */
    ck_assert_int_eq(find(c, 1)->state, JOB_COMPLETED);
    check_core(c);
    /* the same job and worker give the same copy id (a's copy is still
     * there with its result, so only b gets a new one) */
    ck_assert_int_eq(core_delete(c, s.id), CORE_OK);
    add_spec(c, &s, 0);
    copies = core_job_copies(c, find(c, 1), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(memcmp(copies[0], ids[1], JOBID_LEN), 0);
    /* workers that leave: a's copy, leased, stays until its TTR and goes
     * back to a's hidden queue; b's copy is deleted; then the original is
     * done */
    struct job_spec u = spec(20, "q");
    u.broadcast = true;
    add_spec(c, &u, 1000);
    copies = core_job_copies(c, find(c, 20), &n);
    ck_assert_uint_eq(n, 2);
    memcpy(ids, copies, sizeof ids);
    ck_assert_int_eq(core_lease(c, &q, 1, 0, 1000, w[0], on_done, NULL, &ja, &wt), CORE_OK);
    workers_detach(c->workers, w[0]);
    workers_detach(c->workers, w[1]);
    advance(c, 2000); /* a's TTR (1000 ms) ends */
    ck_assert_int_eq(core_find(c, ids[0])->state, JOB_PENDING);
    ck_assert_uint_eq(lease_as(c, "q", NULL, 2000), 0);
    ck_assert_int_eq(find(c, 20)->state, JOB_WAITING);
    ck_assert_int_eq(core_delete(c, ids[0]), CORE_OK);
    ck_assert_int_eq(core_delete(c, ids[1]), CORE_OK);
    ck_assert_int_eq(find(c, 20)->state, JOB_COMPLETED);
    /* nobody present: complete at once */
    struct job_spec t = spec(9, "empty");
    t.broadcast = true;
    add_spec(c, &t, 0);
    ck_assert_int_eq(find(c, 9)->state, JOB_COMPLETED);
    core_done(c);
}
END_TEST

/* ---- the retry policy and the dead set ---- */

static enum core_status
revive(struct core *c, uint32_t n, uint64_t now)
{
    uint8_t id[JOBID_LEN];
    mkid(n, id);
    enum core_status st = core_revive(c, id, now);
    check_core(c);
    return st;
}

/* When job n, waiting out a backoff, is due (0 when it is not waiting). */
static int64_t
retry_at(struct core *c, uint32_t n)
{
    struct job *j = find(c, n);
    const struct job_ext *x = j != NULL ? core_job_ext(c, j) : NULL;
    return x != NULL ? x->retry_at : 0;
}

/* A fail that retries waits Faktory's backoff (15 + n^4 + r(n+1) units
 * after the n-th retry, r < 30); out of retries the job dies; revive puts
 * it back as new. */
START_TEST(test_backoff_and_revive)
{
    struct core *c = core_fixture();
    c->backoff_unit_ms = 10;
    struct owner r;
    owner_init(&r, c, 1);
    struct job_spec s = spec(1, "q");
    s.max_fails = 3;
    s.backoff = CORE_BACKOFF_FAKTORY;
    s.dead = true;
    add_spec(c, &s, 0);
    add(c, 2, "q", 0, 0);
    ck_assert_uint_eq(lease_now(c, "q", 0), 1);
    ck_assert_int_eq(finish(c, 1, false, "first", 0), CORE_OK);
    struct job *j = find(c, 1);
    ck_assert_uint_eq(j->state, JOB_PENDING);
    ck_assert_uint_eq(j->place, JOB_IN_SCHEDULED);
    int64_t at = retry_at(c, 1);
    ck_assert(at >= 150 && at <= 440);          /* 15..44 units */
    ck_assert_uint_eq(lease_now(c, "q", 0), 2); /* 1 waits */
    ck_assert_int_eq(finish(c, 2, true, "ok", 0), CORE_OK);
    ck_assert_uint_eq(lease_now(c, "q", 0), 0);
    advance(c, (uint64_t)at - 1);
    ck_assert_uint_eq(lease_now(c, "q", (uint64_t)at - 1), 0);
    advance(c, (uint64_t)at);
    ck_assert_int_eq(retry_at(c, 1), 0);
    ck_assert_uint_eq(find(c, 1)->place, JOB_IN_READY);
    ck_assert_uint_eq(lease_now(c, "q", (uint64_t)at), 1);

    /* the second retry: 15 + 1 + r*2 units */
    uint64_t now = (uint64_t)at;
    ck_assert_int_eq(finish(c, 1, false, "second", now), CORE_OK);
    int64_t at2 = retry_at(c, 1);
    ck_assert(at2 >= (int64_t)now + 160 && at2 <= (int64_t)now + 740);
    /* a fail from anyone while it waits counts too, and dies: out of fails */
    ck_assert_int_eq(result(c, 1, 100000, now, &r, NULL), CORE_PARKED);
    ck_assert_int_eq(finish(c, 1, false, "final", now + 1), CORE_OK);
    j = find(c, 1);
    ck_assert_uint_eq(j->state, JOB_FAILED);
    ck_assert_int_eq(core_job_died(c, j), (int64_t)now + 1);
    ck_assert_uint_eq(core_ids(c)->dead.count, 1);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_uint_eq(r.state, JOB_FAILED);
    ck_assert(r.result_len == 5 && memcmp(r.result, "final", 5) == 0);

    /* revive: back to its queue with nothing of its past */
    ck_assert_int_eq(revive(c, 2, now), CORE_NOT_DEAD);
    ck_assert_int_eq(revive(c, 3, now), CORE_NOT_FOUND);
    ck_assert_int_eq(revive(c, 1, now + 2), CORE_OK);
    j = find(c, 1);
    ck_assert_uint_eq(j->state, JOB_PENDING);
    ck_assert_uint_eq(j->fails, 0);
    ck_assert_uint_eq(j->attempts, 0);
    ck_assert_ptr_null(result_of(c, j));
    ck_assert_int_eq(core_job_died(c, j), 0);
    ck_assert_uint_eq(core_ids(c)->dead.count, 0);
    ck_assert_int_eq(revive(c, 1, now + 2), CORE_NOT_DEAD);
    ck_assert_uint_eq(lease_now(c, "q", now + 2), 1);
    ck_assert_int_eq(finish(c, 1, true, "done", now + 3), CORE_OK);
    ck_assert_int_eq(revive(c, 1, now + 3), CORE_NOT_DEAD);

    /* without -backoff a retry is ready at once, as before */
    s = spec(4, "q");
    s.max_fails = 2;
    s.dead = true;
    add_spec(c, &s, now);
    ck_assert_uint_eq(lease_now(c, "q", now), 4);
    ck_assert_int_eq(finish(c, 4, false, "x", now), CORE_OK);
    ck_assert_uint_eq(find(c, 4)->place, JOB_IN_READY);
    core_done(c);
}
END_TEST

/* Who enters the dead set (a last fail, a last attempt's TTR, a failed
 * prerequisite; not a cancel, not a job that did not ask), and how it is
 * bounded (by age and by count, the oldest first). */
START_TEST(test_dead_set)
{
    struct core *c = core_fixture();
    core_set_dead_limits(c, JOB_SPACE_IDS, 1000, 3);
    struct job_spec s = spec(1, "q");
    s.dead = true;
    add_spec(c, &s, 0);
    ck_assert_int_eq(finish(c, 1, false, "f", 0), CORE_OK); /* max-fails 0: final */
    s = spec(2, "q");
    s.dead = true;
    s.max_attempts = 1;
    s.ttr = 50;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(lease_now(c, "q", 0), 2);
    advance(c, 50); /* its one attempt's TTR */
    ck_assert_uint_eq(find(c, 2)->state, JOB_FAILED);
    ck_assert_int_eq(core_job_died(c, find(c, 2)), 50);
    s = spec(3, "q");
    s.dead = true;
    s.after = (const uint8_t(*)[JOBID_LEN])find(c, 1)->id;
    s.nafter = 1;
    advance(c, 60);
    ck_assert_int_eq(core_add(c, &s, 60), CORE_OK); /* its prerequisite failed */
    check_core(c);
    ck_assert_uint_eq(find(c, 3)->state, JOB_FAILED);
    ck_assert_int_eq(core_job_died(c, find(c, 3)), 60);
    ck_assert_uint_eq(core_ids(c)->dead.count, 3);
    const struct job *list[4];
    ck_assert_uint_eq(core_dead_jobs(c, JOB_SPACE_IDS, 0, 4, list), 3);
    ck_assert(list[0] == find(c, 1) && list[1] == find(c, 2) && list[2] == find(c, 3));
    ck_assert_uint_eq(core_dead_jobs(c, JOB_SPACE_IDS, 1, 1, list), 1);
    ck_assert(list[0] == find(c, 2));
    ck_assert_uint_eq(core_dead_jobs(c, JOB_SPACE_IDS, 3, 4, list), 0);

    /* not dead: a cancelled job, one that did not ask */
    s = spec(4, "q");
    s.dead = true;
    add_spec(c, &s, 60);
    uint8_t id[JOBID_LEN];
    mkid(4, id);
    ck_assert_int_eq(core_cancel_job(c, id, 60), CORE_OK);
    add(c, 5, "q", 0, 60);
    ck_assert_int_eq(finish(c, 5, false, "f", 60), CORE_OK);
    ck_assert_int_eq(core_job_died(c, find(c, 4)), 0);
    ck_assert_int_eq(core_job_died(c, find(c, 5)), 0);
    ck_assert_uint_eq(core_ids(c)->dead.count, 3);

    /* a fourth death: the oldest goes */
    s = spec(6, "q");
    s.dead = true;
    add_spec(c, &s, 70);
    ck_assert_int_eq(finish(c, 6, false, "f", 70), CORE_OK);
    ck_assert_ptr_null(find(c, 1));
    ck_assert_uint_eq(core_ids(c)->dead.count, 3);
    /* deleted: out of the set */
    ck_assert_int_eq(del(c, 3), CORE_OK);
    ck_assert_uint_eq(core_ids(c)->dead.count, 2);
    /* by age: 2 died at 50, 6 at 70 */
    advance(c, 1049);
    ck_assert_ptr_nonnull(find(c, 2));
    advance(c, 1050);
    ck_assert_ptr_null(find(c, 2));
    ck_assert_ptr_nonnull(find(c, 6));
    advance(c, 1070);
    ck_assert_ptr_null(find(c, 6));
    ck_assert_uint_eq(core_ids(c)->dead.count, 0);
    ck_assert_ptr_nonnull(find(c, 5)); /* only its TTL ends it */

    /* a bound of 0 keeps nothing */
    core_set_dead_limits(c, JOB_SPACE_IDS, 1000, 0);
    s = spec(7, "q");
    s.dead = true;
    add_spec(c, &s, 1070);
    ck_assert_int_eq(finish(c, 7, false, "f", 1070), CORE_OK);
    ck_assert_ptr_null(find(c, 7));
    core_done(c);
}
END_TEST

/* The records of retries with a backoff, deaths and revivals replay into
 * the same jobs. */
struct rec_buf {
    uint8_t *p;
    size_t len, cap;
};

static void
rec_capture(void *arg, const struct cmdlog_rec *r)
{
    struct rec_buf *b = arg;
    size_t n = cmdlog_rec_size(r);
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        REQUIRE(b->p != NULL);
    }
    cmdlog_rec_encode(r, b->p + b->len);
    b->len += n;
}

START_TEST(test_retry_policy_replays)
{
    struct core *c = core_fixture();
    advance(c, 1000);
    struct rec_buf buf = {0};
    c->record = rec_capture;
    c->record_arg = &buf;
    for (uint32_t n = 1; n <= 4; n++) {
        struct job_spec s = spec(n, "q");
        s.max_fails = 2;
        s.backoff = n % 2 ? CORE_BACKOFF_FAKTORY : CORE_BACKOFF_NONE;
        s.dead = n != 4;
        add_spec(c, &s, 1000);
    }
    ck_assert_int_eq(finish(c, 1, false, "a", 1000), CORE_OK); /* waits */
    ck_assert_int_eq(finish(c, 2, false, "a", 1000), CORE_OK); /* ready again */
    ck_assert_int_eq(finish(c, 2, false, "b", 1000), CORE_OK); /* dead */
    ck_assert_int_eq(finish(c, 3, false, "a", 1000), CORE_OK);
    ck_assert_int_eq(finish(c, 3, false, "b", 1001), CORE_OK); /* dead */
    ck_assert_int_eq(revive(c, 3, 1002), CORE_OK);
    ck_assert_int_eq(finish(c, 4, false, "a", 1002), CORE_OK);
    ck_assert_int_eq(finish(c, 4, false, "b", 1002), CORE_OK); /* failed, not dead */
    /* dead by its one attempt's TTR end, at 1102 */
    struct job_spec t = spec(5, "t");
    t.ttr = 100;
    t.max_attempts = 1;
    t.dead = true;
    add_spec(c, &t, 1002);
    ck_assert_uint_eq(lease_now(c, "t", 1002), 5);
    advance(c, 1102);

    struct core *r = core_new(5000); /* restarted later */
    size_t at = 0;
    while (at < buf.len) {
        struct cmdlog_rec rec;
        size_t used;
        ck_assert_int_eq(cmdlog_rec_decode(buf.p + at, buf.len - at, &rec, &used), CMDLOG_REC_OK);
        core_replay(r, &rec, 5000);
        at += used;
    }
    for (uint32_t n = 1; n <= 5; n++) {
        const struct job *a = find(c, n), *b = find(r, n);
        ck_assert(a->state == b->state && a->place == b->place && a->flags == b->flags &&
                  a->fails == b->fails && a->attempts == b->attempts);
        ck_assert_int_eq(retry_at(c, n), retry_at(r, n));
        ck_assert_int_eq(core_job_died(c, a), core_job_died(r, b));
    }
    ck_assert(retry_at(r, 1) > 0);
    ck_assert_int_eq(core_job_died(r, find(r, 2)), 1000);
    ck_assert_int_eq(core_job_died(r, find(r, 5)), 1102);
    ck_assert_uint_eq(find(r, 2)->state, JOB_FAILED);
    ck_assert_uint_eq(core_ids(r)->dead.count, 2);
    ck_assert_uint_eq(find(r, 3)->state, JOB_PENDING);
    check_core(r);
    core_free(r);
    free(buf.p);
    c->record = NULL;
    core_done(c);
}
END_TEST

/* ---- key spaces ---- */

/* The owner of the test spaces: a job whose TTR ends is deleted. */
static void
test_ttr_expired(void *arg, struct core *c, struct job *j)
{
    core_delete_job(c, j);
}

static const struct core_space_ops test_space_ops = {.ttr_expired = test_ttr_expired};

static uint8_t
open_space(struct core *c)
{
    return core_space_open(c, "test", &test_space_ops, NULL, 0, 0, 0);
}

/* A job of space sp named by the text key. */
static struct job_spec
keyed_spec(uint8_t sp, const char *key, const char *name)
{
    struct job_spec s = spec(0, name);
    s.key = (struct job_key){(const uint8_t *)key, strlen(key), sp};
    return s;
}

static struct job *
find_key(struct core *c, uint8_t sp, const char *key, size_t len)
{
    struct job_key k = {(const uint8_t *)key, len, sp};
    return core_find_key(c, &k);
}

/* Spaces keep their jobs and queues apart: the same bytes, the same queue
 * name in two spaces are two things; each space counts its own. */
START_TEST(test_key_spaces_apart)
{
    struct core *c = core_fixture();
    uint8_t s1 = open_space(c), s2 = open_space(c);
    ck_assert_uint_eq(s1, 1);
    ck_assert_uint_eq(s2, 2);
    uint64_t bytes = c->bytes;
    struct job_spec a = keyed_spec(s1, "abc", "default");
    add_spec(c, &a, 0);
    ck_assert_uint_eq(c->bytes, bytes + core_job_bytes(7) + 3);
    ck_assert_int_eq(core_add(c, &a, 0), CORE_DUPLICATE);
    struct job_spec b = keyed_spec(s2, "abc", "default");
    add_spec(c, &b, 0);
    /* a key of 16 bytes that are an id of the space of ids */
    uint8_t id[JOBID_LEN];
    mkid(1, id);
    add(c, 1, "default", 0, 0);
    struct job_spec k16 = keyed_spec(s1, "", "default");
    k16.key.p = id;
    k16.key.len = JOBID_LEN;
    add_spec(c, &k16, 0);
    ck_assert_ptr_ne(find_key(c, s1, (const char *)id, JOBID_LEN), find(c, 1));
    ck_assert_ptr_ne(find_key(c, s1, "abc", 3), find_key(c, s2, "abc", 3));
    ck_assert_ptr_null(find_key(c, s1, "ab", 2));
    ck_assert_ptr_null(find_key(c, 3, "abc", 3)); /* not open */
    struct job *j = find_key(c, s1, "abc", 3);
    ck_assert_uint_eq(job_space(j), s1);
    struct job_key k = job_key_of(j);
    ck_assert(k.len == 3 && memcmp(k.p, "abc", 3) == 0 && k.space == s1);
    ck_assert_uint_eq(core_ids(c)->stats.ready, 1);
    ck_assert_uint_eq(c->space[s1].stats.ready, 2);
    ck_assert_uint_eq(c->space[s2].stats.ready, 1);
    ck_assert_uint_eq(core_job_count(c), 1);
    ck_assert_uint_eq(queue_count(c), 1);
    ck_assert_uint_eq(registry_count(c->space[s1].queues.by_name), 1);

    /* a lease takes from its own space only */
    struct wq_str q = {"default", 7};
    struct job *got = NULL;
    struct waiter *w = NULL;
    ck_assert_int_eq(core_lease_in(c, s2, &q, 1, 0, 0, NULL, on_done, NULL, &got, &w), CORE_OK);
    ck_assert_ptr_eq(got, find_key(c, s2, "abc", 3));
    ck_assert_int_eq(core_lease_in(c, s2, &q, 1, 0, 0, NULL, on_done, NULL, &got, &w),
                     CORE_TIMEOUT);
    ck_assert_uint_eq(lease_now(c, "default", 0), 1);
    ck_assert_int_eq(core_lease_in(c, s1, &q, 1, 0, 0, NULL, on_done, NULL, &got, &w), CORE_OK);
    ck_assert_ptr_eq(got, find_key(c, s1, "abc", 3)); /* first in */
    check_core(c);

    /* finish, delete by the job */
    ck_assert_int_eq(core_finish_job(c, got, true, "ok", 2, 0, 0), CORE_OK);
    ck_assert_uint_eq(got->state, JOB_COMPLETED);
    ck_assert_uint_eq(c->space[s1].stats.completed, 1);
    ck_assert_uint_eq(core_ids(c)->stats.completed, 0);
    core_delete_job(c, got);
    ck_assert_ptr_null(find_key(c, s1, "abc", 3));
    check_core(c);
    core_done(c);
}
END_TEST

/* Keys of 1 to 255 bytes, any bytes; a keyed job's whole life: parked
 * leases of its space, the TTL, the dead set of its space, revive. */
START_TEST(test_key_spaces_life)
{
    struct core *c = core_fixture();
    uint8_t sp = open_space(c);
    char longkey[JOB_KEY_MAX];
    memset(longkey, 'k', sizeof longkey);
    longkey[7] = '\0'; /* binary */
    struct job_spec s = keyed_spec(sp, "", "q");
    s.key.p = (const uint8_t *)longkey;
    s.key.len = sizeof longkey;
    s.ttl = 500;
    add_spec(c, &s, 0);
    ck_assert_ptr_nonnull(find_key(c, sp, longkey, sizeof longkey));
    ck_assert_ptr_null(find_key(c, sp, longkey, sizeof longkey - 1));
    advance(c, 500); /* its TTL */
    ck_assert_ptr_null(find_key(c, sp, longkey, sizeof longkey));
    ck_assert_uint_eq(c->space[sp].stats.evicted, 1);

    /* a lease parked in the space is woken by a job of its space, not by
     * one of the same name in the space of ids */
    struct owner o;
    owner_init(&o, c, 1);
    struct wq_str q = {"q", 1};
    struct job *got = NULL;
    struct waiter *w = NULL;
    ck_assert_int_eq(core_lease_in(c, sp, &q, 1, 1000, 500, NULL, on_done, &o, &got, &w),
                     CORE_PARKED);
    o.active = true;
    o.w = w;
    g_outstanding++;
    check_core(c);
    add(c, 1, "q", 0, 500);
    ck_assert_int_eq(o.calls, 0);
    struct job_spec d = keyed_spec(sp, "x", "q");
    d.dead = true;
    add_spec(c, &d, 500);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.how, WAITER_GOT);
    struct job *x = find_key(c, sp, "x", 1);
    ck_assert_uint_eq(x->state, JOB_LEASED);
    /* out of fails: into the space's own dead set */
    ck_assert_int_eq(core_finish_job(c, x, false, "bad", 3, 0, 501), CORE_OK);
    ck_assert_uint_eq(c->space[sp].dead.count, 1);
    ck_assert_uint_eq(core_ids(c)->dead.count, 0);
    const struct job *list[2];
    ck_assert_uint_eq(core_dead_jobs(c, sp, 0, 2, list), 1);
    ck_assert_ptr_eq(list[0], x);
    ck_assert_uint_eq(core_dead_jobs(c, JOB_SPACE_IDS, 0, 2, list), 0);
    ck_assert_int_eq(core_revive_job(c, x, 502), CORE_OK);
    ck_assert_uint_eq(x->state, JOB_PENDING);
    ck_assert_int_eq(core_revive_job(c, x, 502), CORE_NOT_DEAD);
    check_core(c);
    /* jobs of every space go with the core */
    struct job_spec e = keyed_spec(sp, "ext", "q");
    e.timed = true;
    e.time_ms = 100000;
    add_spec(c, &e, 502);
    core_done(c);
}
END_TEST

/* A fail of a job still waiting for its prerequisites, with fails left:
 * counted, and the job waits on (it was never leased); and a dependent
 * failed at once by a failed prerequisite, with a dead set that keeps
 * none, is gone before its add returns. */
START_TEST(test_waiting_fail_and_dead_none)
{
    struct core *c = core_fixture();
    add(c, 1, "q", 0, 0);
    struct job_spec s = spec(2, "q");
    s.max_fails = 3;
    s.after = (const uint8_t(*)[JOBID_LEN])find(c, 1)->id;
    s.nafter = 1;
    add_spec(c, &s, 0);
    ck_assert_uint_eq(find(c, 2)->state, JOB_WAITING);
    ck_assert_int_eq(finish(c, 2, false, "early", 0), CORE_OK);
    ck_assert_uint_eq(find(c, 2)->state, JOB_WAITING);
    ck_assert_uint_eq(find(c, 2)->fails, 1);
    ck_assert_int_eq(del(c, 2), CORE_OK);

    core_set_dead_limits(c, JOB_SPACE_IDS, 1000, 0);
    ck_assert_int_eq(finish(c, 1, false, "p", 0), CORE_OK);
    s = spec(3, "q");
    s.dead = true;
    s.after = (const uint8_t(*)[JOBID_LEN])find(c, 1)->id;
    s.nafter = 1;
    ck_assert_int_eq(core_add(c, &s, 0), CORE_OK);
    check_core(c);
    ck_assert_ptr_null(find(c, 3));
    core_done(c);
}
END_TEST

static Suite *
core_suite(void)
{
    const struct unit_case cases[] = {
        {"lease_order", test_lease_order},
        {"lease_unknown_name", test_lease_unknown_name},
        {"duplicate_add", test_duplicate_add},
        {"ttr_requeue", test_ttr_requeue},
        {"ttr_end_modulo", test_ttr_end_modulo},
        {"same_ms_ready_order", test_same_ms_ready_order},
        {"next_event", test_next_event},
        {"max_attempts", test_max_attempts},
        {"max_attempts_unlimited", test_max_attempts_unlimited},
        {"ttl_every_state", test_ttl_every_state},
        {"ttl_saturates", test_ttl_saturates},
        {"complete_states", test_complete_states},
        {"fail_retry", test_fail_retry},
        {"result_waiters", test_result_waiters},
        {"delete", test_delete},
        {"parked_fifo", test_parked_fifo},
        {"park_several_names", test_park_several_names},
        {"names_listed_twice", test_names_listed_twice},
        {"lease_random_pick", test_lease_random_pick},
        {"cancel_parked_lease", test_cancel_parked_lease},
        {"timed_jobs", test_timed_jobs},
        {"queue_lifetime", test_queue_lifetime},
        {"random_workload", test_random_workload},
        {"free_with_jobs", test_free_with_jobs},
        {"deps_release_and_fail", test_deps_release_and_fail},
        {"deps_chain", test_deps_chain},
        {"deps_expire", test_deps_expire},
        {"cancel", test_cancel},
        {"fencing_and_touch", test_fencing_and_touch},
        {"wait_all", test_wait_all},
        {"same_job", test_same_job},
        {"targeted", test_targeted},
        {"broadcast", test_broadcast},
        {"backoff_and_revive", test_backoff_and_revive},
        {"dead_set", test_dead_set},
        {"retry_policy_replays", test_retry_policy_replays},
        {"key_spaces_apart", test_key_spaces_apart},
        {"key_spaces_life", test_key_spaces_life},
        {"waiting_fail_and_dead_none", test_waiting_fail_and_dead_none},
    };
    return unit_suite("core", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(core_suite(), NULL);
}
