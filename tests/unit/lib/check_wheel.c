/* check_wheel.c - unit tests for the hierarchical timer wheel (src/lib/wheel.c).
 * Time is fake: the tests pick every `now` themselves.  Each test timer
 * records how often and at which `now` it fired, and the fire callback checks
 * that it never fires early or later than the advance that is running. */
#include "lib/wq.h"
#include "lib/wheel.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "unit.h"

struct ctx;

struct tmr {
    struct wheel_entry e;
    uint64_t deadline; /* as the test armed it */
    unsigned fired;
    uint64_t fired_now; /* `now` of the last firing */
    uint64_t fired_in;  /* ctx->advances at the last firing */
    /* optional behaviour when fired */
    unsigned rearm_times; /* re-add itself at now + rearm_step */
    uint64_t rearm_step;
    struct tmr *add_other; /* arm this one at add_other_at */
    uint64_t add_other_at;
    struct tmr *cancel_other;
};

/* The state of the advance that is running, checked by the fire callback. */
struct ctx {
    uint64_t prev_now; /* the wheel's time before this advance */
    uint64_t target;   /* now_ms of this advance */
    uint64_t advances; /* advances so far, this one included */
    unsigned fires;    /* callbacks so far */
    bool check_due;    /* tmr deadlines must lie in (prev_now, target] */
};

static struct wheel wh;
static struct ctx cx;

static void
tmr_fire(struct wheel_entry *e, uint64_t now, void *arg)
{
    struct tmr *t = WQ_CONTAINER_OF(e, struct tmr, e);
    struct ctx *c = arg;
    REQUIRE(c == &cx);
    REQUIRE(!wheel_entry_armed(e));
    /* Due, and not later than the advance that is running. */
    REQUIRE(t->deadline <= now);
    REQUIRE(now <= WQ_MAX(c->target, c->prev_now));
    if (c->check_due)
        REQUIRE(t->deadline > c->prev_now);
    t->fired++;
    t->fired_now = now;
    t->fired_in = c->advances;
    c->fires++;
    if (t->rearm_times > 0) {
        t->rearm_times--;
        t->deadline = now + t->rearm_step;
        wheel_add(&wh, &t->e, t->deadline);
    }
    if (t->add_other != NULL) {
        struct tmr *o = t->add_other;
        t->add_other = NULL;
        o->deadline = t->add_other_at;
        wheel_add(&wh, &o->e, o->deadline);
    }
    if (t->cancel_other != NULL) {
        wheel_cancel(&wh, &t->cancel_other->e);
        t->cancel_other = NULL;
    }
}

/* The wheel asks for a deadline when it moves an entry down a level. */
static uint64_t
tmr_deadline(const struct wheel_entry *e, void *arg)
{
    REQUIRE(arg == &cx);
    REQUIRE(wheel_entry_armed(e));
    return WQ_CONTAINER_OF(e, const struct tmr, e)->deadline;
}

static void
setup(uint64_t now)
{
    memset(&cx, 0, sizeof cx);
    wheel_init(&wh, now, tmr_deadline, tmr_fire, &cx);
    cx.prev_now = now;
    cx.target = now;
}

static void
tmr_init(struct tmr *t)
{
    memset(t, 0, sizeof *t);
    wheel_entry_init(&t->e);
}

static void
arm(struct tmr *t, uint64_t deadline)
{
    t->deadline = deadline;
    wheel_add(&wh, &t->e, deadline);
    REQUIRE(wheel_entry_armed(&t->e));
}

static void
advance(uint64_t now)
{
    cx.prev_now = wh.now;
    cx.target = now;
    cx.advances++;
    wheel_advance(&wh, now);
}

START_TEST(test_init_arg_and_now)
{
    struct tmr t;
    setup(1000);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);
    tmr_init(&t);
    ck_assert(!wheel_entry_armed(&t.e));
    arm(&t, 1005);
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(1004);
    ck_assert_uint_eq(t.fired, 0);
    advance(1005);
    ck_assert_uint_eq(t.fired, 1); /* tmr_fire checked arg == &cx */
    ck_assert_uint_eq(t.fired_now, 1005);
    ck_assert(!wheel_entry_armed(&t.e));
    ck_assert_uint_eq(wheel_count(&wh), 0);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);
    advance(5000);
    ck_assert_uint_eq(t.fired, 1);
}
END_TEST

START_TEST(test_exact_ms)
{
    /* For many start times and distances: not at deadline - 1, then at the
     * deadline exactly. */
    static const uint64_t starts[] = {
        0, 1, 63, 64, 4095, 4096, 123456789, 1ULL << 40, (1ULL << 40) - 1};
    static const uint64_t dists[] = {1,    2,    62,   63,   64,     65,     100,    127,     128,
                                     1000, 4095, 4096, 4097, 262143, 262144, 262145, 86400000};
    for (size_t i = 0; i < WQ_ARRAY_LEN(starts); i++) {
        for (size_t j = 0; j < WQ_ARRAY_LEN(dists); j++) {
            struct tmr t;
            uint64_t d = starts[i] + dists[j];
            setup(starts[i]);
            tmr_init(&t);
            arm(&t, d);
            advance(d - 1);
            REQUIRE(t.fired == 0);
            REQUIRE(wheel_count(&wh) == 1);
            REQUIRE(wheel_next_event(&wh) <= d);
            advance(d);
            REQUIRE(t.fired == 1);
            REQUIRE(t.fired_now == d);
            REQUIRE(wheel_count(&wh) == 0);

            /* And in one big jump from the start, the callback sees the
             * deadline as its time. */
            setup(starts[i]);
            tmr_init(&t);
            arm(&t, d);
            advance(d + 1000000);
            REQUIRE(t.fired == 1);
            REQUIRE(t.fired_now == d);
        }
    }
}
END_TEST

START_TEST(test_cancel)
{
    struct tmr a, b, c;
    setup(0);
    tmr_init(&a);
    tmr_init(&b);
    tmr_init(&c);
    wheel_cancel(&wh, &a.e); /* not armed: nothing happens */
    ck_assert_uint_eq(wheel_count(&wh), 0);
    arm(&a, 10);
    arm(&b, 10);
    arm(&c, 5000);
    ck_assert_uint_eq(wheel_count(&wh), 3);
    wheel_cancel(&wh, &a.e);
    ck_assert(!wheel_entry_armed(&a.e));
    ck_assert_uint_eq(wheel_count(&wh), 2);
    wheel_cancel(&wh, &a.e); /* twice is fine */
    ck_assert_uint_eq(wheel_count(&wh), 2);
    wheel_cancel(&wh, &c.e);
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(1000000);
    ck_assert_uint_eq(a.fired, 0);
    ck_assert_uint_eq(b.fired, 1);
    ck_assert_uint_eq(c.fired, 0);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);

    /* Cancel an entry that is already due (deadline <= now). */
    arm(&a, 5);
    ck_assert_uint_eq(wheel_count(&wh), 1);
    wheel_cancel(&wh, &a.e);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    advance(1000001);
    ck_assert_uint_eq(a.fired, 0);

    /* A cancelled entry can be armed again. */
    arm(&a, 1000010);
    advance(1000010);
    ck_assert_uint_eq(a.fired, 1);
}
END_TEST

START_TEST(test_readd_moves)
{
    struct tmr t;
    setup(0);
    tmr_init(&t);
    arm(&t, 100);
    arm(&t, 50); /* earlier */
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(49);
    ck_assert_uint_eq(t.fired, 0);
    advance(50);
    ck_assert_uint_eq(t.fired, 1);
    advance(200);
    ck_assert_uint_eq(t.fired, 1);

    arm(&t, 300);
    arm(&t, 1ULL << 30); /* later, on another level */
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(300);
    ck_assert_uint_eq(t.fired, 1);
    arm(&t, 400); /* back near */
    advance(399);
    ck_assert_uint_eq(t.fired, 1);
    advance(400);
    ck_assert_uint_eq(t.fired, 2);
    advance(1ULL << 31);
    ck_assert_uint_eq(t.fired, 2);
    ck_assert_uint_eq(wheel_count(&wh), 0);

    /* Re-adding an already due entry to a later deadline delays it. */
    arm(&t, 5);
    arm(&t, (1ULL << 31) + 10);
    advance((1ULL << 31) + 9);
    ck_assert_uint_eq(t.fired, 2);
    advance((1ULL << 31) + 10);
    ck_assert_uint_eq(t.fired, 3);
}
END_TEST

START_TEST(test_many_in_one_slot)
{
    const size_t n = 2000;
    struct tmr *ts = calloc(n, sizeof *ts);
    setup(7);
    for (size_t i = 0; i < n; i++) {
        tmr_init(&ts[i]);
        arm(&ts[i], i % 2 ? 5000 : 5001); /* two deadlines, one level-2 slot */
    }
    for (size_t i = 0; i < n; i += 3)
        wheel_cancel(&wh, &ts[i].e);
    size_t live = n - (n + 2) / 3;
    ck_assert_uint_eq(wheel_count(&wh), live);
    advance(4999);
    ck_assert_uint_eq(cx.fires, 0);
    advance(5000);
    for (size_t i = 0; i < n; i++)
        REQUIRE(ts[i].fired == (i % 3 != 0 && i % 2 == 1));
    advance(5001);
    for (size_t i = 0; i < n; i++)
        REQUIRE(ts[i].fired == (i % 3 != 0));
    ck_assert_uint_eq(cx.fires, live);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    free(ts);
}
END_TEST

START_TEST(test_due_fires_next_advance)
{
    struct tmr a, b, c;
    setup(1000);
    tmr_init(&a);
    tmr_init(&b);
    tmr_init(&c);
    arm(&a, 0);
    arm(&b, 999);
    arm(&c, 1000);
    ck_assert_uint_eq(wheel_count(&wh), 3);
    ck_assert_uint_le(wheel_next_event(&wh), wh.now); /* overdue: work to do now */
    advance(1000); /* time does not move, the due entries fire anyway */
    ck_assert_uint_eq(a.fired, 1);
    ck_assert_uint_eq(b.fired, 1);
    ck_assert_uint_eq(c.fired, 1);
    ck_assert_uint_eq(c.fired_now, 1000);
    ck_assert_uint_eq(wheel_count(&wh), 0);

    /* Also when the advance goes forward. */
    arm(&a, 500);
    advance(1001);
    ck_assert_uint_eq(a.fired, 2);
    ck_assert_uint_eq(a.fired_now, 1000); /* it was due by the old time */
}
END_TEST

START_TEST(test_far_deadlines)
{
    const uint64_t hour = 3600000, days30 = 30ULL * 86400000;
    struct tmr th, tm, tmax1, tmax;
    setup(0);
    tmr_init(&th);
    tmr_init(&tm);
    tmr_init(&tmax1);
    tmr_init(&tmax);
    arm(&th, hour);
    arm(&tm, days30);
    arm(&tmax1, UINT64_MAX - 1);
    arm(&tmax, UINT64_MAX);
    ck_assert_uint_eq(wheel_count(&wh), 4);
    ck_assert_uint_le(wheel_next_event(&wh), hour);

    advance(hour - 1);
    ck_assert_uint_eq(cx.fires, 0);
    advance(hour);
    ck_assert_uint_eq(th.fired, 1);
    advance(days30 - 1);
    ck_assert_uint_eq(tm.fired, 0);
    advance(days30);
    ck_assert_uint_eq(tm.fired, 1);
    ck_assert_uint_le(wheel_next_event(&wh), UINT64_MAX - 1);
    advance(UINT64_MAX / 2);
    advance(UINT64_MAX - 2);
    ck_assert_uint_eq(cx.fires, 2);
    ck_assert_uint_eq(wheel_count(&wh), 2);
    advance(UINT64_MAX - 1);
    ck_assert_uint_eq(tmax1.fired, 1);
    ck_assert_uint_eq(tmax1.fired_now, UINT64_MAX - 1);
    ck_assert_uint_eq(tmax.fired, 0);
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(UINT64_MAX);
    ck_assert_uint_eq(tmax.fired, 1);
    ck_assert_uint_eq(tmax.fired_now, UINT64_MAX);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);

    /* One jump from 0 to the end of time fires them all. */
    setup(0);
    tmr_init(&th);
    tmr_init(&tm);
    tmr_init(&tmax1);
    tmr_init(&tmax);
    arm(&th, hour);
    arm(&tm, days30);
    arm(&tmax1, UINT64_MAX - 1);
    arm(&tmax, UINT64_MAX);
    advance(UINT64_MAX);
    ck_assert_uint_eq(th.fired, 1);
    ck_assert_uint_eq(tm.fired, 1);
    ck_assert_uint_eq(tmax1.fired, 1);
    ck_assert_uint_eq(tmax.fired, 1);
    ck_assert_uint_eq(wheel_count(&wh), 0);

    /* A wheel that starts near the end of time. */
    setup(UINT64_MAX - 3);
    tmr_init(&tmax);
    arm(&tmax, UINT64_MAX);
    advance(UINT64_MAX - 1);
    ck_assert_uint_eq(tmax.fired, 0);
    advance(UINT64_MAX);
    ck_assert_uint_eq(tmax.fired, 1);

    /* The entry at UINT64_MAX also fires when advanced step by step with
     * wheel_next_event, as a server loop would do. */
    setup(0);
    tmr_init(&tmax);
    arm(&tmax, UINT64_MAX);
    for (int steps = 0; wheel_count(&wh) > 0; steps++) {
        uint64_t next = wheel_next_event(&wh);
        REQUIRE(next > wh.now);
        REQUIRE(steps < 200);
        advance(next);
    }
    ck_assert_uint_eq(tmax.fired, 1);
    ck_assert_uint_eq(tmax.fired_now, UINT64_MAX);
}
END_TEST

START_TEST(test_level_boundaries)
{
    /* Deadlines around 64^k for every level, from several start times,
     * each checked at deadline - 1 and at the deadline. */
    for (unsigned k = 1; k <= 10; k++) {
        uint64_t p = 1ULL << (6 * k);
        const uint64_t deadlines[] = {p - 2, p - 1, p, p + 1, p + 2, 2 * p - 1, 2 * p, 3 * p + 1};
        const uint64_t starts[] = {0, 1, p / 2, p - 3, p / 64, (p - 3) & ~63ULL};
        for (size_t i = 0; i < WQ_ARRAY_LEN(starts); i++) {
            for (size_t j = 0; j < WQ_ARRAY_LEN(deadlines); j++) {
                struct tmr t;
                uint64_t d = deadlines[j];
                if (d <= starts[i])
                    continue;
                setup(starts[i]);
                tmr_init(&t);
                arm(&t, d);
                advance(d - 1);
                REQUIRE(t.fired == 0);
                advance(d);
                REQUIRE(t.fired == 1);
                REQUIRE(t.fired_now == d);
            }
        }
        /* All of them in one wheel, stepping 1 ms across the boundary. */
        struct tmr ts[WQ_ARRAY_LEN(deadlines)];
        setup(p - 3);
        for (size_t j = 0; j < WQ_ARRAY_LEN(deadlines); j++) {
            tmr_init(&ts[j]);
            arm(&ts[j], deadlines[j]);
        }
        cx.check_due = true; /* p - 2 > p - 3 = start, so all are in the future */
        for (uint64_t now = p - 2; now <= p + 3; now++) {
            advance(now);
            for (size_t j = 0; j < WQ_ARRAY_LEN(deadlines); j++)
                REQUIRE(ts[j].fired == (deadlines[j] <= now));
        }
        advance(3 * p);
        REQUIRE(wheel_count(&wh) == 1);
        advance(3 * p + 1);
        REQUIRE(wheel_count(&wh) == 0);
        REQUIRE(cx.fires == WQ_ARRAY_LEN(deadlines));
    }
    /* The top level (bits 60-63) and the very top bit. */
    const uint64_t tops[] = {1ULL << 60,       (1ULL << 60) - 1, (1ULL << 60) + 1, 1ULL << 63,
                             (1ULL << 63) - 1, (1ULL << 63) + 1, UINT64_MAX - 64};
    for (size_t j = 0; j < WQ_ARRAY_LEN(tops); j++) {
        struct tmr t;
        setup(0);
        tmr_init(&t);
        arm(&t, tops[j]);
        advance(tops[j] - 1);
        REQUIRE(t.fired == 0);
        advance(tops[j]);
        REQUIRE(t.fired == 1);
        REQUIRE(t.fired_now == tops[j]);
    }
}
END_TEST

/* A random value of random magnitude: up to `bits` bits, bits itself random. */
static uint64_t
rng_magnitude(void)
{
    unsigned bits = (unsigned)(rng_next() % 65);
    return bits == 0 ? 0 : rng_next() >> (64 - bits);
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void
random_run(uint64_t seed, size_t n)
{
    struct tmr *ts = calloc(n, sizeof *ts);
    uint64_t *sorted = calloc(n, sizeof *sorted);
    rng_seed(seed);
    uint64_t start = rng_magnitude();
    if (start > UINT64_MAX - 10)
        start = UINT64_MAX - 10;
    setup(start);
    for (size_t i = 0; i < n; i++) {
        uint64_t d;
        switch (rng_next() % 8) {
        case 0: /* already due */
            d = start - (start ? rng_next() % WQ_MIN(start, 100) : 0);
            break;
        case 1: /* the end of time */
            d = UINT64_MAX - rng_next() % 3;
            break;
        case 2:
        case 3: /* near */
            d = sat_add(start, rng_next() % 10000);
            break;
        default:
            d = sat_add(start, rng_magnitude());
            break;
        }
        tmr_init(&ts[i]);
        arm(&ts[i], d);
        sorted[i] = d;
    }
    qsort(sorted, n, sizeof *sorted, u64_cmp);
    ck_assert_uint_eq(wheel_count(&wh), n);

    /* The first advance fires the already-due entries too; afterwards every
     * firing must lie in (previous now, this now]. */
    size_t unfired = n;
    size_t first_live = 0; /* sorted[first_live] is the earliest unfired */
    uint64_t now = start;
    for (unsigned step = 0; now < UINT64_MAX || step == 0; step++) {
        /* Overdue entries (before the first advance) make it `now`. */
        REQUIRE(wheel_next_event(&wh) <=
                (unfired ? WQ_MAX(sorted[first_live], wh.now) : WHEEL_NEVER));
        uint64_t next;
        switch (rng_next() % 10) {
        case 0:
        case 1:
        case 2:
            next = sat_add(now, rng_next() % 64);
            break;
        case 3:
        case 4:
        case 5: /* just before, at or just after the next deadline */
            next = now;
            if (unfired && sorted[first_live] > 0)
                next = sat_add(sorted[first_live] - 1, rng_next() % 3);
            break;
        case 6: /* later on, rarely: a jump of any size, often to the end */
            next = sat_add(now, step < 500 ? rng_next() % 1000000 : rng_magnitude());
            break;
        case 7:
            next = wheel_next_event(&wh);
            break;
        default:
            next = sat_add(now, rng_next() % 100000);
            break;
        }
        if (next < now)
            next = now;
        cx.check_due = step > 0;
        advance(next);
        now = next;
        REQUIRE(wh.now == now);
        unsigned fired_now = 0;
        while (first_live < n && sorted[first_live] <= now)
            first_live++;
        for (size_t i = 0; i < n; i++) {
            REQUIRE(ts[i].fired == (ts[i].deadline <= now));
            if (ts[i].fired && ts[i].fired_in == cx.advances)
                fired_now++;
        }
        unfired -= fired_now;
        REQUIRE(unfired == n - first_live);
        REQUIRE(wheel_count(&wh) == unfired);
    }
    ck_assert_uint_eq(unfired, 0);
    ck_assert_uint_eq(cx.fires, n);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);
    free(ts);
    free(sorted);
}

START_TEST(test_random)
{
    size_t n = RUNNING_ON_VALGRIND ? 500 : 4000;
    for (uint64_t seed = 1; seed <= 20; seed++)
        random_run(seed * 0x9E3779B97F4A7C15ULL, n);
}
END_TEST

START_TEST(test_callback_readds_self)
{
    struct tmr t;
    setup(0);
    tmr_init(&t);
    t.rearm_times = 4;
    t.rearm_step = 10;
    arm(&t, 10);
    advance(100); /* 10, 20, 30, 40, 50 in one advance */
    ck_assert_uint_eq(t.fired, 5);
    ck_assert_uint_eq(t.fired_now, 50);
    ck_assert(!wheel_entry_armed(&t.e));
    ck_assert_uint_eq(wheel_count(&wh), 0);

    /* A re-add beyond the advance waits for the next one. */
    t.rearm_times = 1;
    t.rearm_step = 1000;
    arm(&t, 150);
    advance(200);
    ck_assert_uint_eq(t.fired, 6);
    ck_assert(wheel_entry_armed(&t.e));
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(1149);
    ck_assert_uint_eq(t.fired, 6);
    advance(1150);
    ck_assert_uint_eq(t.fired, 7);

    /* Re-adding at a deadline already due fires again in the same advance. */
    t.rearm_times = 3;
    t.rearm_step = 0;
    arm(&t, 2000);
    advance(3000);
    ck_assert_uint_eq(t.fired, 11);
    ck_assert_uint_eq(wheel_count(&wh), 0);
}
END_TEST

START_TEST(test_callback_adds_others)
{
    struct tmr a, due, soon, later, victim;
    setup(0);
    tmr_init(&a);
    tmr_init(&due);
    tmr_init(&soon);
    tmr_init(&later);
    tmr_init(&victim);

    /* a's callback arms an already-due entry: it fires in the same advance. */
    a.add_other = &due;
    a.add_other_at = 3;
    arm(&a, 100);
    advance(5000);
    ck_assert_uint_eq(a.fired, 1);
    ck_assert_uint_eq(due.fired, 1);
    ck_assert_uint_eq(due.fired_in, a.fired_in);

    /* ... an entry due before the target of the running advance. */
    a.add_other = &soon;
    a.add_other_at = 6000;
    arm(&a, 5500);
    advance(7000);
    ck_assert_uint_eq(a.fired, 2);
    ck_assert_uint_eq(soon.fired, 1);
    ck_assert_uint_eq(soon.fired_now, 6000);

    /* ... an entry past the target: it waits. */
    a.add_other = &later;
    a.add_other_at = 1ULL << 40;
    arm(&a, 7500);
    advance(8000);
    ck_assert_uint_eq(a.fired, 3);
    ck_assert_uint_eq(later.fired, 0);
    ck_assert_uint_eq(wheel_count(&wh), 1);
    advance(1ULL << 40);
    ck_assert_uint_eq(later.fired, 1);

    /* A callback that cancels an entry due in the same slot: it never fires.
     * (Which of two same-ms entries fires first is not specified, so the
     * victim is one ms later.) */
    uint64_t base = 1ULL << 41;
    a.cancel_other = &victim;
    arm(&a, base + 64);
    arm(&victim, base + 65);
    advance(base + 1000);
    ck_assert_uint_eq(a.fired, 4);
    ck_assert_uint_eq(victim.fired, 0);
    ck_assert_uint_eq(wheel_count(&wh), 0);
}
END_TEST

START_TEST(test_next_event)
{
    struct tmr ts[5];
    setup(12345);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);
    const uint64_t ds[] = {12345 + 70, 12345 + 5000, 12345 + 5, 1ULL << 50, UINT64_MAX};
    for (size_t i = 0; i < WQ_ARRAY_LEN(ds); i++) {
        tmr_init(&ts[i]);
        arm(&ts[i], ds[i]);
        ck_assert_uint_eq(wheel_count(&wh), i + 1);
    }
    /* Never later than the earliest deadline; following it reaches every
     * deadline without overshooting any. */
    size_t fired = 0;
    for (int steps = 0; wheel_count(&wh) > 0; steps++) {
        uint64_t next = wheel_next_event(&wh);
        uint64_t earliest = UINT64_MAX;
        for (size_t i = 0; i < WQ_ARRAY_LEN(ds); i++) {
            if (wheel_entry_armed(&ts[i].e))
                earliest = WQ_MIN(earliest, ds[i]);
        }
        ck_assert_uint_le(next, earliest);
        ck_assert_uint_gt(next, wh.now);
        ck_assert_int_lt(steps, 200);
        advance(next);
        size_t f = 0;
        for (size_t i = 0; i < WQ_ARRAY_LEN(ds); i++) {
            f += ts[i].fired;
            if (ts[i].fired)
                ck_assert_uint_eq(ts[i].fired_now, ds[i]);
        }
        ck_assert_uint_ge(f, fired);
        fired = f;
        ck_assert_uint_eq(wheel_count(&wh), WQ_ARRAY_LEN(ds) - fired);
    }
    ck_assert_uint_eq(fired, WQ_ARRAY_LEN(ds));
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);

    /* With a due entry the next event is now. */
    arm(&ts[0], 3);
    ck_assert_uint_le(wheel_next_event(&wh), wh.now);
    wheel_cancel(&wh, &ts[0].e);
    ck_assert_uint_eq(wheel_next_event(&wh), WHEEL_NEVER);
}
END_TEST

START_TEST(test_count)
{
    const size_t n = 500;
    struct tmr *ts = calloc(n, sizeof *ts);
    setup(0);
    for (size_t i = 0; i < n; i++) {
        tmr_init(&ts[i]);
        arm(&ts[i], 1 + i * 1000);
        ck_assert_uint_eq(wheel_count(&wh), i + 1);
    }
    for (size_t i = 0; i < n; i++)
        arm(&ts[i], 1 + i * 1000 + 7); /* re-adds do not count twice */
    ck_assert_uint_eq(wheel_count(&wh), n);
    for (size_t i = 0; i < n; i += 2)
        wheel_cancel(&wh, &ts[i].e);
    ck_assert_uint_eq(wheel_count(&wh), n / 2);
    advance(250 * 1000);
    ck_assert_uint_eq(wheel_count(&wh), n / 2 - 125);
    advance(UINT64_MAX);
    ck_assert_uint_eq(wheel_count(&wh), 0);
    ck_assert_uint_eq(cx.fires, n / 2);
    free(ts);
}
END_TEST

static Suite *
wheel_suite(void)
{
    const struct unit_case cases[] = {
        {"init_arg_and_now", test_init_arg_and_now},
        {"exact_ms", test_exact_ms},
        {"cancel", test_cancel},
        {"readd_moves", test_readd_moves},
        {"many_in_one_slot", test_many_in_one_slot},
        {"due_fires_next_advance", test_due_fires_next_advance},
        {"far_deadlines", test_far_deadlines},
        {"level_boundaries", test_level_boundaries},
        {"random", test_random},
        {"callback_readds_self", test_callback_readds_self},
        {"callback_adds_others", test_callback_adds_others},
        {"next_event", test_next_event},
        {"count", test_count},
    };
    return unit_suite("wheel", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(wheel_suite(), NULL);
}
