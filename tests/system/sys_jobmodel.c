/* sys_jobmodel.c - system tests of the job model's extensions (ours,
 * doc/protocol-reference.md section 4.13, errors of 4.10, records 32-33 of
 * doc/cmdlog.md): prerequisites (add/schedule -after, the WAITING state 5,
 * release, failures spreading down a chain), cancel, touch, fencing tokens
 * (lease -fencing=1, complete/fail/touch -attempt=N), the fan-in wait, the
 * idempotent add/schedule, and all of it across a SIGKILL and a restart on
 * the same command log.  The real workq-server over TCP, byte-exact against
 * the docs.
 *
 * Every test starts its own server on 127.0.0.1:0 and stops it at the end, so
 * every test also checks a clean shutdown (exit status 0; under valgrind with
 * --error-exitcode that is where memory errors and leaks show up).
 *
 * Tests check behaviour, never speed: every wait for a server-side deadline
 * is generous and scaled by WQ_TEST_SLOW, and timings are checked as lower
 * bounds only. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TTR     SYSTEST_TTR
#define TTL     SYSTEST_TTL
#define PARK    "60000" /* wait of a lease/result/wait that must be woken */
#define WAITING 5u      /* the state inspect shows for a job waiting for its prerequisites */
#define NIL     "00000000-0000-0000-0000-000000000000"

/* ------------------------------------------------------------------------ */
/* Helpers */

/* add with SYSTEST_TTR/TTL and flags (may be NULL); expect reply. */
static void
add_reply(int fd, const char *id, const char *name, const char *payload, const char *flags,
          const char *reply)
{
    systest_roundtrip(fd,
                      f("add %s %s %u %s %zu%s%s\r\n%s\r\n", id, name, TTR, TTL, strlen(payload),
                        flags != NULL ? " " : "", flags != NULL ? flags : "", payload),
                      reply);
}

/* add -after=list, expect +OK. */
static void
add_after(int fd, const char *id, const char *name, const char *payload, const char *list)
{
    add_reply(fd, id, name, payload, f("-after=%s", list), OK);
}

/* The result of a job failed for its prerequisite (section 4.13). */
static const char *
prereq_failed(const char *prereq)
{
    return f("prerequisite %s failed", prereq);
}

static const char *
prereq_gone(const char *prereq)
{
    return f("prerequisite %s is gone", prereq);
}

/* result id 0: expect the job's result. */
static void
expect_result(int fd, const char *id, int success, const char *result)
{
    systest_roundtrip(fd, f("result %s 0\r\n", id), systest_result_reply(id, success, result));
}

/* complete or fail id with result; expect reply. */
static void
finish(int fd, const char *verb, const char *id, const char *result, const char *flags,
       const char *reply)
{
    systest_roundtrip(fd,
                      f("%s %s %zu%s%s\r\n%s\r\n", verb, id, strlen(result),
                        flags != NULL ? " " : "", flags != NULL ? flags : "", result),
                      reply);
}

/* Sleep long enough for a server-side deadline of ms, already scaled, to
 * have passed. */
static void
sleep_past_scaled(int ms)
{
    systest_sleep_ms(ms + 300 * systest_slow());
}

/* The state `inspect job` shows for id, or -1 for -NOT-FOUND. */
static int
job_state(int fd, const char *id)
{
    systest_sends(fd, f("inspect job %s\r\n", id));
    const char *l = systest_read_line(fd);
    if (strcmp(l, "-NOT-FOUND") == 0)
        return -1;
    ck_assert_str_eq(l, "+OK 1");
    char got[64];
    int k = 0;
    ck_assert_int_eq(sscanf(systest_read_line(fd), "%63s %d", got, &k), 2);
    ck_assert_str_eq(got, id);
    int state = -2;
    for (int i = 0; i < k; i++) {
        l = systest_read_line(fd);
        if (strncmp(l, "state ", 6) == 0)
            state = atoi(l + 6);
    }
    ck_assert_msg(state >= 0, "inspect job %s has no state line", id);
    return state;
}

static void
expect_state(int fd, const char *id, int state)
{
    int got = job_state(fd, id);
    ck_assert_msg(got == state, "job %s: state %d, want %d", id, got, state);
}

/* A job as add leaves it (SYSTEST_TTR/TTL), in state. */
static struct systest_job
job_in(const char *id, const char *name, const char *payload, unsigned state)
{
    struct systest_job j = systest_job(id, name, payload);
    j.state = state;
    return j;
}

/* The reply to lease -fencing=1. */
static const char *
fenced_reply(const char *id, const char *name, unsigned ttr, unsigned attempt, const char *payload)
{
    return f("+OK 1\r\n%s %s %u %u %zu\r\n%s\r\n", id, name, ttr, attempt, strlen(payload),
             payload);
}

/* One record of a wait reply. */
static const char *
rec(const char *id, int success, const char *result)
{
    return f("%s %d %zu\r\n%s\r\n", id, success, strlen(result), result);
}

/* ------------------------------------------------------------------------ */
/* Prerequisites: add/schedule -after */

START_TEST(test_after_waiting_and_release)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    const char *p1 = "00000001-58cc-4372-a567-0e02b2c3d479";
    const char *p2 = "00000002-58cc-4372-a567-0e02b2c3d479";
    systest_add(fd, p1, "p", "p1");
    systest_add(fd, p2, "p", "p2");
    /* waits for both: state 5, not ready, no result */
    add_after(fd, id4(10), "w", "job", f("%s,%s", p1, p2));
    struct systest_job j = job_in(id4(10), "w", "job", WAITING);
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "lease w 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(10)), TO);
    systest_expect_stats(fd, "jobs", U(3), "ready-jobs", U(2), NULL);
    /* one done, one to go */
    finish(fd, "complete", p1, "r1", NULL, OK);
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "lease w 0\r\n", TO);
    /* the last one completes: NEW, and a parked leaser gets it as after add */
    systest_sends(w, "lease w " PARK "\r\n");
    systest_expect_silence(w, 100);
    finish(fd, "complete", p2, "r2", NULL, OK);
    systest_expect_lease(w, id4(10), "w", "job");
    j.state = LEASED;
    j.attempts = 1;
    systest_expect_inspect_job(fd, &j);

    /* released into the queue when nobody waits */
    systest_add(fd, id4(11), "p", "p3");
    add_after(fd, id4(12), "x", "x", id4(11));
    finish(fd, "complete", id4(11), "", NULL, OK);
    struct systest_job x = job_in(id4(12), "x", "x", NEW);
    systest_expect_inspect_job(fd, &x);
    systest_lease_now(fd, "x", id4(12), "x");

    /* a prerequisite named twice counts once */
    systest_add(fd, id4(20), "p", "p4");
    add_after(fd, id4(21), "y", "twice", f("%s,%s,%s", id4(20), id4(20), id4(20)));
    expect_state(fd, id4(21), WAITING);
    finish(fd, "complete", id4(20), "ok", NULL, OK);
    systest_lease_now(fd, "y", id4(21), "twice");

    /* prerequisites already COMPLETED do not count: none left, NEW at once */
    add_after(fd, id4(30), "z", "z1", f("%s,%s", p1, p2));
    expect_state(fd, id4(30), NEW);
    systest_lease_now(fd, "z", id4(30), "z1");
    /* one completed, one not: waits for that one only */
    systest_add(fd, id4(31), "p", "p5");
    add_after(fd, id4(32), "z", "z2", f("%s,%s", p1, id4(31)));
    expect_state(fd, id4(32), WAITING);
    finish(fd, "complete", id4(31), "ok", NULL, OK);
    systest_lease_now(fd, "z", id4(32), "z2");

    /* the ids in either case */
    systest_add(fd, id4(40), "p", "p6");
    add_after(fd, id4(41), "u", "upper", "00000028-58CC-4372-A567-0E02B2C3D479");
    expect_state(fd, id4(41), WAITING);
    finish(fd, "complete", id4(40), "ok", NULL, OK);
    systest_lease_now(fd, "u", id4(41), "upper");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_after_already_failed)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "p", "ok");
    systest_add(fd, id4(2), "p", "bad");
    finish(fd, "complete", id4(1), "fine", NULL, OK);
    finish(fd, "fail", id4(2), "oops", NULL, OK);
    /* a prerequisite that has already failed fails the job at once */
    add_after(fd, id4(3), "q", "j", f("%s,%s", id4(1), id4(2)));
    expect_state(fd, id4(3), FAILED);
    expect_result(fd, id4(3), 0, prereq_failed(id4(2)));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* a cancelled one too (a cancel is a failure for good) */
    systest_add(fd, id4(4), "p", "c");
    systest_roundtrip(fd, f("cancel %s\r\n", id4(4)), OK);
    add_after(fd, id4(5), "q", "j", id4(4));
    expect_result(fd, id4(5), 0, prereq_failed(id4(4)));
    /* and a job failed for its own prerequisite */
    add_after(fd, id4(6), "q", "j", id4(5));
    expect_result(fd, id4(6), 0, prereq_failed(id4(5)));
    /* the job keeps the rest: its id is taken, its result stays */
    add_reply(fd, id4(3), "q", "j", NULL, ERR("Duplicate job"));
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(3)), ERR("Duplicate result"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* "then it is NEW and takes its place in its queue as a job added at that
 * moment would": a job added to the same queue while it waited, at the same
 * priority, is leased before it. */
START_TEST(test_after_release_order)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "p", "pre");
    add_after(fd, id4(2), "q", "waited", id4(1));
    systest_add(fd, id4(3), "q", "added while it waited");
    finish(fd, "complete", id4(1), "", NULL, OK);
    systest_add(fd, id4(4), "q", "added after the release");
    /* the released job is in line as if added at its release */
    systest_lease_now(fd, "q", id4(3), "added while it waited");
    systest_lease_now(fd, "q", id4(2), "waited");
    systest_lease_now(fd, "q", id4(4), "added after the release");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_after_chain_fails)
{
    systest_start_srv();
    int fd = systest_conn(), waiter = systest_conn();
    const char *a = "0000000a-58cc-4372-a567-0e02b2c3d479";
    const char *b = "0000000b-58cc-4372-a567-0e02b2c3d479";
    const char *c = "0000000c-58cc-4372-a567-0e02b2c3d479";
    const char *d = "0000000d-58cc-4372-a567-0e02b2c3d479";
    /* A <- B <- C, and B <- D */
    systest_add(fd, a, "q", "A");
    add_after(fd, b, "q", "B", a);
    add_after(fd, c, "q", "C", b);
    add_after(fd, d, "q", "D", b);
    expect_state(fd, b, WAITING);
    expect_state(fd, c, WAITING);
    systest_sends(waiter, f("result %s " PARK "\r\n", c));
    systest_expect_silence(waiter, 100);
    systest_lease_now(fd, "q", a, "A");
    finish(fd, "fail", a, "broken", NULL, OK);
    /* the whole chain fails at once, each naming its own prerequisite */
    systest_expect(waiter, systest_result_reply(c, 0, prereq_failed(b)));
    expect_result(fd, a, 0, "broken");
    expect_result(fd, b, 0, prereq_failed(a));
    expect_result(fd, c, 0, prereq_failed(b));
    expect_result(fd, d, 0, prereq_failed(b));
    struct systest_job jc = job_in(c, "q", "C", FAILED);
    systest_expect_inspect_job(fd, &jc);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* a fail that is retried is not for good: the dependent keeps waiting */
    systest_add_full(fd, id4(1), "r", TTR, TTL, "retry", "-max-fails=2");
    add_after(fd, id4(2), "s", "dep", id4(1));
    finish(fd, "fail", id4(1), "once", NULL, OK);
    expect_state(fd, id4(1), PENDING);
    expect_state(fd, id4(2), WAITING);
    finish(fd, "complete", id4(1), "done", NULL, OK);
    systest_lease_now(fd, "s", id4(2), "dep");

    /* a TTR expiry with no attempt left fails it for good */
    systest_add_full(fd, id4(3), "t", 100, TTL, "slow", "-max-attempts=1");
    add_after(fd, id4(4), "s", "dep2", id4(3));
    systest_roundtrip(fd, "lease t 0\r\n", systest_lease_reply(id4(3), "t", 100, "slow"));
    systest_roundtrip(fd, f("result %s " PARK "\r\n", id4(4)),
                      systest_result_reply(id4(4), 0, prereq_failed(id4(3))));
    close(waiter);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_after_gone)
{
    systest_start_srv();
    int fd = systest_conn();
    /* deleted: its dependents fail naming it gone, theirs naming them failed */
    systest_add(fd, id4(1), "p", "pre");
    add_after(fd, id4(2), "q", "b", id4(1));
    add_after(fd, id4(3), "q", "c", id4(2));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    expect_result(fd, id4(2), 0, prereq_gone(id4(1)));
    expect_result(fd, id4(3), 0, prereq_failed(id4(2)));
    /* a deleted waiting job: its dependents fail naming it gone */
    systest_add(fd, id4(4), "p", "pre");
    add_after(fd, id4(5), "q", "w", id4(4));
    add_after(fd, id4(6), "q", "d", id4(5));
    systest_roundtrip(fd, f("delete %s\r\n", id4(5)), OK);
    expect_result(fd, id4(6), 0, prereq_gone(id4(5)));
    expect_state(fd, id4(4), NEW);

    /* expired: a prerequisite with a short TTL; and a waiting job's own TTL
     * runs while it waits */
    int life = 500 * systest_slow();
    systest_add_full(fd, id4(10), "p", TTR, f("%d", life), "short", NULL);
    add_after(fd, id4(11), "q", "dep", id4(10));
    systest_add(fd, id4(12), "p", "long");
    systest_roundtrip(fd, f("add %s q %u %d 1 -after=%s\r\nw\r\n", id4(14), TTR, life, id4(12)),
                      OK);
    add_after(fd, id4(15), "q", "d2", id4(14));
    expect_state(fd, id4(14), WAITING);
    sleep_past_scaled(life);
    expect_result(fd, id4(11), 0, prereq_gone(id4(10)));
    expect_state(fd, id4(10), -1);
    expect_state(fd, id4(14), -1);
    expect_result(fd, id4(15), 0, prereq_gone(id4(14)));
    expect_state(fd, id4(12), NEW);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_after_errors)
{
    systest_start_srv();
    int fd = systest_conn(), runner = systest_conn();
    const char *p = "00000001-58cc-4372-a567-0e02b2c3d479";
    systest_add(fd, p, "p", "pre");
    /* unknown prerequisites: nothing changes */
    add_reply(fd, id4(2), "q", "j", f("-after=%s", id4(99)), ERR("Unknown prerequisite"));
    add_reply(fd, id4(2), "q", "j", f("-after=%s,%s", p, id4(99)), ERR("Unknown prerequisite"));
    add_reply(fd, id4(2), "q", "j", f("-after=%s", id4(2)), ERR("Unknown prerequisite"));
    systest_roundtrip(fd,
                      f("schedule %s q %u %s %s 1 -after=%s\r\nj\r\n", id4(2), TTR, TTL,
                        systest_time_ms(systest_ahead(60000)), id4(99)),
                      ERR("Unknown prerequisite"));
    expect_state(fd, id4(2), -1);
    /* a run job cannot be one */
    systest_sends(runner, f("run %s r %u " PARK " 1\r\nr\r\n", id4(3), TTR));
    systest_wait_queue(fd, "r");
    add_reply(fd, id4(2), "q", "j", f("-after=%s", id4(3)), ERR("Unknown prerequisite"));
    expect_state(fd, id4(2), -1);
    close(runner);

    /* malformed lists */
    static const char *const bad[] = {
        "bad",
        "00000001-58cc-4372-a567-0e02b2c3d479,",
        ",00000001-58cc-4372-a567-0e02b2c3d479",
        "00000001-58cc-4372-a567-0e02b2c3d479,,00000001-58cc-4372-a567-0e02b2c3d479",
        "00000001-58cc-4372-a567-0e02b2c3d479;00000001-58cc-4372-a567-0e02b2c3d479",
        "00000001-58cc-4372-a567-0e02b2c3d479,bad",
        "{00000001-58cc-4372-a567-0e02b2c3d479}",
        "0000000158cc4372a5670e02b2c3d479",
        NIL,
        ",",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        add_reply(fd, id4(2), "q", "j", f("-after=%s", bad[i]), ERR("Invalid After"));
    /* an empty value or a key twice is a flag error (section 1.5) */
    add_reply(fd, id4(2), "q", "j", "-after=", ERR("Invalid command flags"));
    add_reply(fd, id4(2), "q", "j", f("-after=%s -after=%s", p, p), ERR("Invalid command flags"));
    /* positional arguments first */
    systest_roundtrip(fd, f("add bad q %u %s 1 -after=bad\r\nj\r\n", TTR, TTL), ERR("Invalid ID"));
    systest_roundtrip(fd, f("add %s q 0 %s 1 -after=bad\r\nj\r\n", id4(2), TTL),
                      ERR("Invalid TTR"));
    /* run takes only -priority: as before */
    systest_roundtrip(fd, f("run %s q %u 0 1 -after=%s\r\nj\r\n", id4(2), TTR, p),
                      ERR("Invalid command flags"));
    expect_state(fd, id4(2), -1);

    /* 1 to 100 ids */
    struct sb req = {0}, exp = {0}, list = {0};
    for (unsigned i = 0; i < 101; i++) {
        sb_add(&req, f("add %s p %u %s 1\r\nx\r\n", id4(1000 + i), TTR, TTL));
        sb_add(&exp, OK);
        sb_add(&list, f("%s%s", i > 0 ? "," : "", id4(1000 + i)));
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    add_reply(fd, id4(2), "q", "j", f("-after=%s", list.p), ERR("Invalid After"));
    expect_state(fd, id4(2), -1);
    list.p[list.n - 37] = '\0'; /* the first 100 */
    add_reply(fd, id4(2), "q", "j", f("-after=%s", list.p), OK);
    expect_state(fd, id4(2), WAITING);
    for (unsigned i = 0; i < 99; i++)
        finish(fd, "complete", id4(1000 + i), "", NULL, OK);
    expect_state(fd, id4(2), WAITING);
    finish(fd, "complete", id4(1000 + 99), "", NULL, OK);
    systest_lease_now(fd, "q", id4(2), "j");
    /* 100 times the same id is a list of 100 */
    struct sb same = {0};
    for (unsigned i = 0; i < 100; i++)
        sb_add(&same, f("%s%s", i > 0 ? "," : "", id4(1100)));
    add_reply(fd, id4(3), "q", "same", f("-after=%s", same.p), OK);
    expect_state(fd, id4(3), WAITING);
    sb_add(&same, f(",%s", id4(1100)));
    add_reply(fd, id4(4), "q", "same", f("-after=%s", same.p), ERR("Invalid After"));
    free(req.p);
    free(exp.p);
    free(list.p);
    free(same.p);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* Section 2.2: the flags are checked in the order they stand on the line,
 * and the first failure is the reply. */
START_TEST(test_after_flag_order)
{
    systest_start_srv();
    int fd = systest_conn();
    add_reply(fd, id4(2), "q", "j", "-priority=x -after=bad", ERR("Invalid Priority"));
    add_reply(fd, id4(2), "q", "j", "-idempotent=3 -after=bad", ERR("Invalid Idempotent"));
    add_reply(fd, id4(2), "q", "j", "-idempotent=1 -after=bad", ERR("Invalid After"));
    /* flags are checked in the order they stand */
    add_reply(fd, id4(2), "q", "j", "-after=bad -priority=x", ERR("Invalid After"));
    add_reply(fd, id4(2), "q", "j", "-after=bad -idempotent=3", ERR("Invalid After"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_after_scheduled)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "p", "pre");
    /* released before its time: it waits for the time, in the scheduled jobs */
    int64_t far = systest_now_ms() + 3600000, at = systest_ahead(1000);
    systest_schedule_full(fd, id4(2), "q", TTR, TTL, systest_time_ms(at), "timed",
                          f("-after=%s", id4(1)));
    systest_schedule_full(fd, id4(7), "f", TTR, TTL, systest_time_ms(far), "far",
                          f("-after=%s", id4(1)));
    struct systest_job j = job_in(id4(7), "f", "far", WAITING);
    SET(j.time, systest_time_s(far));
    systest_expect_inspect_job(fd, &j);
    expect_state(fd, id4(2), WAITING);
    finish(fd, "complete", id4(1), "", NULL, OK);
    j.state = NEW;
    systest_expect_inspect_list(fd, "scheduled-jobs", "f", "0 10", &j, 1);
    systest_roundtrip(fd, "lease f 0\r\n", TO);
    if (systest_exact_timing())
        systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(2), "q", TTR, "timed"));
    ck_assert_int_ge(systest_now_ms(), at);

    /* its time passed while it waited: released, it is ready in the order
     * of a scheduled job (after the jobs never scheduled, earlier time
     * first), whatever the moment of its release */
    int64_t past = systest_now_ms() - 10000;
    systest_add(fd, id4(3), "p", "pre");
    systest_schedule_full(fd, id4(4), "r", TTR, TTL, systest_time_ms(past), "early",
                          f("-after=%s", id4(3)));
    systest_schedule_full(fd, id4(5), "r", TTR, TTL, systest_time_ms(past + 1000), "later", NULL);
    systest_add(fd, id4(6), "r", "plain");
    finish(fd, "complete", id4(3), "", NULL, OK);
    struct systest_job e = job_in(id4(4), "r", "early", NEW);
    SET(e.time, systest_time_s(past));
    systest_expect_inspect_job(fd, &e);
    systest_lease_now(fd, "r", id4(6), "plain");
    systest_lease_now(fd, "r", id4(4), "early");
    systest_lease_now(fd, "r", id4(5), "later");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* Stopped (SIGTERM) while jobs wait for prerequisites that are still to
 * run, and with the entry of a deleted dependent still in its
 * prerequisite's list: the server exits 0 (under valgrind or the
 * sanitizers: without leaks). */
START_TEST(test_after_stop_waiting)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "p", "pre");
    add_after(fd, id4(2), "q", "waits", id4(1));
    add_after(fd, id4(3), "q", "waits too", f("%s,%s", id4(1), id4(2)));
    systest_add(fd, id4(4), "p", "pre");
    add_after(fd, id4(5), "q", "deleted", id4(4));
    systest_roundtrip(fd, f("delete %s\r\n", id4(5)), OK);
    expect_state(fd, id4(3), WAITING);
    systest_stop_srv();
    close(fd);
}
END_TEST

/* A chain of 2,000 jobs, each waiting for the one before, added pipelined
 * over one connection: failing its head fails the whole chain at once,
 * without recursion and without a crash. */
START_TEST(test_after_long_chain)
{
    enum { N = 2000 };
    systest_start_srv();
    int fd = systest_conn(), waiter = systest_conn();
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < N; i++) {
        const char *payload = f("link-%u", i);
        if (i == 0)
            sb_add(&req, f("add %s chain %u %s %zu\r\n%s\r\n", id4(0x10000 + i), TTR, TTL,
                           strlen(payload), payload));
        else
            sb_add(&req, f("add %s chain %u %s %zu -after=%s\r\n%s\r\n", id4(0x10000 + i), TTR, TTL,
                           strlen(payload), id4(0x10000 + i - 1), payload));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    char last[40];
    snprintf(last, sizeof last, "%s", id4(0x10000 + N - 1));
    struct systest_job j = job_in(last, "chain", f("link-%u", N - 1), WAITING);
    systest_expect_inspect_job(fd, &j);
    systest_sends(waiter, f("result %s " PARK "\r\n", last));
    systest_expect_silence(waiter, 100);
    systest_lease_now(fd, "chain", id4(0x10000), "link-0");
    systest_roundtrip(fd, "lease chain 0\r\n", TO);
    finish(fd, "fail", id4(0x10000), "head", NULL, OK);
    systest_expect(waiter, systest_result_reply(last, 0, prereq_failed(id4(0x10000 + N - 2))));
    expect_result(fd, id4(0x10001), 0, prereq_failed(id4(0x10000)));
    expect_result(fd, id4(0x10000 + N / 2), 0, prereq_failed(id4(0x10000 + N / 2 - 1)));
    expect_result(fd, last, 0, prereq_failed(id4(0x10000 + N - 2)));
    systest_expect_stats(fd, "jobs", U(N), "failed-jobs", U(N), "ready-jobs", U(0), NULL);
    /* the server still serves */
    systest_add(fd, id4(1), "q", "after");
    systest_lease_now(fd, "q", id4(1), "after");
    free(req.p);
    free(exp.p);
    close(waiter);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* cancel */

START_TEST(test_cancel_ready)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "job");
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)),
                      f("+OK 1\r\n%s 0 9\r\ncancelled\r\n", id4(1)));
    struct systest_job j = job_in(id4(1), "q", "job", FAILED);
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* any client that then completes, fails or touches it */
    finish(fd, "complete", id4(1), "late", NULL, ERR("Job cancelled"));
    finish(fd, "fail", id4(1), "late", NULL, ERR("Job cancelled"));
    systest_roundtrip(fd, f("touch %s\r\n", id4(1)), ERR("Job cancelled"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), ERR("Job finished"));
    expect_result(fd, id4(1), 0, "cancelled");

    /* PENDING (a retried fail) */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "retry", "-max-fails=3");
    systest_lease_now(fd, "q", id4(2), "retry");
    finish(fd, "fail", id4(2), "once", NULL, OK);
    expect_state(fd, id4(2), PENDING);
    systest_roundtrip(fd, f("cancel %s\r\n", id4(2)), OK);
    expect_result(fd, id4(2), 0, "cancelled");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* scheduled, time not come */
    systest_schedule(fd, id4(3), "q", systest_ahead(600000), "later");
    systest_roundtrip(fd, f("cancel %s\r\n", id4(3)), OK);
    expect_result(fd, id4(3), 0, "cancelled");
    expect_state(fd, id4(3), FAILED);
    systest_expect_stats(fd, "scheduled-jobs", U(0), NULL);
    /* waiting: its dependents fail; its prerequisite completing changes nothing */
    systest_add(fd, id4(4), "p", "pre");
    add_after(fd, id4(5), "q", "waits", id4(4));
    add_after(fd, id4(6), "q", "dep", id4(5));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(5)), OK);
    expect_result(fd, id4(5), 0, "cancelled");
    expect_result(fd, id4(6), 0, prereq_failed(id4(5)));
    finish(fd, "complete", id4(4), "", NULL, OK);
    expect_state(fd, id4(5), FAILED);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cancel_leased)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add(fd, id4(1), "q", "work");
    systest_roundtrip(w, "lease q 0 -fencing=1\r\n", fenced_reply(id4(1), "q", TTR, 1, "work"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), OK);
    expect_result(fd, id4(1), 0, "cancelled");
    /* the worker learns it from its next touch, complete or fail */
    systest_roundtrip(w, f("touch %s\r\n", id4(1)), ERR("Job cancelled"));
    systest_roundtrip(w, f("touch %s 1000 -attempt=1\r\n", id4(1)), ERR("Job cancelled"));
    finish(w, "complete", id4(1), "done", NULL, ERR("Job cancelled"));
    finish(w, "complete", id4(1), "done", "-attempt=1", ERR("Job cancelled"));
    finish(w, "fail", id4(1), "err", NULL, ERR("Job cancelled"));
    finish(w, "fail", id4(1), "err", "-attempt=1", ERR("Job cancelled"));
    expect_result(fd, id4(1), 0, "cancelled");
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), ERR("Job finished"));

    /* its TTR is over: it does not come back */
    systest_add_full(fd, id4(2), "r", 100, TTL, "short", NULL);
    systest_roundtrip(w, "lease r 0\r\n", systest_lease_reply(id4(2), "r", 100, "short"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(2)), OK);
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease r 0\r\n", TO);
    expect_result(fd, id4(2), 0, "cancelled");
    finish(w, "complete", id4(2), "x", NULL, ERR("Job cancelled"));
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cancel_wakes_waiters)
{
    systest_start_srv();
    int fd = systest_conn(), r1 = systest_conn(), r2 = systest_conn(), fan = systest_conn();
    systest_add(fd, id4(1), "q", "job");
    add_after(fd, id4(2), "q", "dep", id4(1));
    systest_sends(r1, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(r2, f("result %s " PARK "\r\n", id4(2)));
    systest_sends(fan, f("wait " PARK " %s %s\r\n", id4(2), id4(1)));
    systest_expect_silence(r1, 100);
    systest_expect_silence(r2, 0);
    systest_expect_silence(fan, 0);
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), OK);
    /* answered at once with the failed result */
    systest_expect(r1, f("+OK 1\r\n%s 0 9\r\ncancelled\r\n", id4(1)));
    systest_expect(r2, systest_result_reply(id4(2), 0, prereq_failed(id4(1))));
    systest_expect(fan, f("+OK 2\r\n%s%s", rec(id4(2), 0, prereq_failed(id4(1))),
                          rec(id4(1), 0, "cancelled")));
    close(r1);
    close(r2);
    close(fan);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cancel_run)
{
    systest_start_srv();
    int fd = systest_conn(), runner = systest_conn(), w = systest_conn();
    /* not leased yet: its client is answered at once */
    systest_sends(runner, f("run %s r %u " PARK " 3\r\nabc\r\n", id4(1), TTR));
    systest_wait_queue(fd, "r");
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), OK);
    systest_expect(runner, f("+OK 1\r\n%s 0 9\r\ncancelled\r\n", id4(1)));
    /* the run job goes after its reply (section 4.4) */
    expect_state(fd, id4(1), -1);
    systest_roundtrip(fd, "lease r 0\r\n", TO);
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), NF);

    /* leased: its client is answered at once */
    systest_sends(runner, f("run %s r %u " PARK " 3\r\ndef\r\n", id4(2), TTR));
    systest_roundtrip(w, "lease r " PARK " -fencing=1\r\n",
                      fenced_reply(id4(2), "r", TTR, 1, "def"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(2)), OK);
    systest_expect(runner, f("+OK 1\r\n%s 0 9\r\ncancelled\r\n", id4(2)));
    /* a run job is removed once its client is answered: its worker's
     * complete finds nothing */
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(2)), NF);
    /* the runner's connection goes on */
    systest_sends(runner, f("run %s r %u 0 1\r\nz\r\n", id4(3), TTR));
    systest_expect(runner, TO);
    close(w);
    close(runner);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cancel_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, "cancel\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("cancel %s %s\r\n", id4(1), id4(2)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("cancel %s -x=1\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "cancel bad -x=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "cancel bad\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "cancel " NIL "\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), NF);
    /* finished jobs: nothing changes */
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    finish(fd, "complete", id4(1), "done", NULL, OK);
    finish(fd, "fail", id4(2), "failed", NULL, OK);
    systest_roundtrip(fd, f("cancel %s\r\n", id4(1)), ERR("Job finished"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(2)), ERR("Job finished"));
    expect_result(fd, id4(1), 1, "done");
    expect_result(fd, id4(2), 0, "failed");
    /* a deleted job is not found; an id in upper case is found */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, "cancel 00000003-58CC-4372-A567-0E02B2C3D479\r\n", OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("cancel %s\r\n", id4(3)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* touch */

START_TEST(test_touch_restarts_ttr)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    const int slow = systest_slow();
    const unsigned ttr = 1000u * (unsigned)slow;
    systest_add_full(fd, id4(1), "q", ttr, TTL, "job", NULL);
    systest_roundtrip(w, "lease q 0 -fencing=1\r\n", fenced_reply(id4(1), "q", ttr, 1, "job"));
    int64_t leased = systest_now_ms(); /* the TTR ended by leased + ttr */
    systest_sleep_ms(600 * slow);
    int64_t touched = systest_now_ms(); /* the new TTR ends no sooner than touched + ttr */
    systest_roundtrip(w, f("touch %s\r\n", id4(1)), OK);
    systest_sleep_until(leased + ttr + 200 * slow);
    int state = job_state(fd, id4(1));
    int64_t asked = systest_now_ms();
    /* only if the answer surely came before the new end can it tell */
    if (asked < touched + ttr)
        ck_assert_msg(state == LEASED, "touched job in state %d past its first TTR", state);
    /* the new TTR ends: leased again, in attempt 2, with the job's TTR */
    systest_roundtrip(fd, "lease q " PARK " -fencing=1\r\n",
                      fenced_reply(id4(1), "q", ttr, 2, "job"));
    ck_assert_int_ge(systest_now_ms(), touched + ttr - 10);
    /* the first worker's lease is over */
    systest_roundtrip(w, f("touch %s -attempt=1\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("touch %s -attempt=2\r\n", id4(1)), OK);
    finish(fd, "complete", id4(1), "done", "-attempt=2", OK);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_touch_explicit_ttr)
{
    systest_start_srv();
    int fd = systest_conn();
    const unsigned ttr = 600u * (unsigned)systest_slow();
    systest_add_full(fd, id4(1), "q", ttr, TTL, "job", NULL);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", ttr, "job"));
    /* 60 s this once: still LEASED long past its own TTR */
    systest_roundtrip(fd, f("touch %s 60000\r\n", id4(1)), OK);
    sleep_past_scaled((int)ttr);
    expect_state(fd, id4(1), LEASED);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* 100 ms this once: over soon; the next lease has the job's TTR again */
    systest_roundtrip(fd, f("touch %s 100\r\n", id4(1)), OK);
    systest_roundtrip(fd, "lease q " PARK " -fencing=1\r\n",
                      fenced_reply(id4(1), "q", ttr, 2, "job"));
    int64_t second = systest_now_ms();
    systest_roundtrip(fd, "lease q " PARK " -fencing=1\r\n",
                      fenced_reply(id4(1), "q", ttr, 3, "job"));
    /* a whole TTR from the server's lease, which was before `second` by
     * as long as its reply took to arrive (11 ms once under valgrind) */
    ck_assert_int_ge(systest_now_ms(), second + ttr * 3 / 4);
    /* the longest TTR is accepted */
    systest_roundtrip(fd, f("touch %s 86400000 -attempt=3\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("touch %s -attempt=3 00001\r\n", id4(1)), OK);
    systest_roundtrip(fd, "lease q " PARK " -fencing=1\r\n",
                      fenced_reply(id4(1), "q", ttr, 4, "job"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_touch_not_leased_and_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    /* -NOT-FOUND: unknown, NEW, PENDING, COMPLETED, FAILED, waiting */
    systest_roundtrip(fd, f("touch %s\r\n", id4(1)), NF);
    systest_add(fd, id4(1), "q", "new");
    systest_roundtrip(fd, f("touch %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("touch %s 1000\r\n", id4(1)), NF);
    systest_add_full(fd, id4(2), "r", TTR, TTL, "retry", "-max-fails=3");
    systest_lease_now(fd, "r", id4(2), "retry");
    finish(fd, "fail", id4(2), "again", NULL, OK);
    systest_roundtrip(fd, f("touch %s\r\n", id4(2)), NF);
    systest_add(fd, id4(3), "s", "done");
    systest_lease_now(fd, "s", id4(3), "done");
    finish(fd, "complete", id4(3), "ok", NULL, OK);
    systest_roundtrip(fd, f("touch %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, f("touch %s -attempt=1\r\n", id4(3)), NF);
    add_after(fd, id4(4), "t", "waits", id4(1));
    systest_roundtrip(fd, f("touch %s\r\n", id4(4)), NF);

    /* -attempt: only the lease of that attempt */
    systest_lease_now(fd, "q", id4(1), "new");
    systest_roundtrip(fd, f("touch %s -attempt=1\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("touch %s -attempt=2\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("touch %s 5000 -attempt=1\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("touch -attempt=1 %s 5000\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("touch %s -attempt=2097151\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("touch %s\r\n", "00000001-58CC-4372-A567-0E02B2C3D479"), OK);

    /* errors, in order */
    systest_roundtrip(fd, "touch\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("touch %s 1000 1000\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "touch -attempt=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "touch bad\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "touch bad 0 -attempt=0\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "touch " NIL "\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("touch %s 0\r\n", id4(1)), ERR("Invalid TTR"));
    systest_roundtrip(fd, f("touch %s 86400001\r\n", id4(1)), ERR("Invalid TTR"));
    systest_roundtrip(fd, f("touch %s -5\r\n", id4(1)), ERR("Invalid TTR"));
    systest_roundtrip(fd, f("touch %s x -attempt=0\r\n", id4(1)), ERR("Invalid TTR"));
    systest_roundtrip(fd, f("touch %s -attempt=0\r\n", id4(1)), ERR("Invalid Attempt"));
    systest_roundtrip(fd, f("touch %s -attempt=x\r\n", id4(1)), ERR("Invalid Attempt"));
    systest_roundtrip(fd, f("touch %s -attempt=-1\r\n", id4(1)), ERR("Invalid Attempt"));
    systest_roundtrip(fd, f("touch %s -attempt=\r\n", id4(1)), ERR("Invalid command flags"));
    systest_roundtrip(fd, f("touch %s -x=1\r\n", id4(1)), ERR("Invalid command flags"));
    systest_roundtrip(fd, f("touch %s -attempt=1 -attempt=1\r\n", id4(1)),
                      ERR("Invalid command flags"));
    systest_roundtrip(fd, f("touch %s -=1\r\n", id4(1)), ERR("Invalid command flags"));
    /* still leased, attempt 1 */
    systest_roundtrip(fd, f("touch %s -attempt=1\r\n", id4(1)), OK);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Fencing tokens */

START_TEST(test_fencing_reply)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add_full(fd, id4(1), "q", 1234, TTL, "pay", NULL);
    systest_roundtrip(fd, "lease q 0 -fencing=1\r\n",
                      f("+OK 1\r\n%s q 1234 1 3\r\npay\r\n", id4(1)));
    /* -fencing=0 is the plain reply; a flag may stand anywhere */
    systest_add(fd, id4(2), "q", "two");
    systest_roundtrip(fd, "lease q 0 -fencing=0\r\n", systest_lease_reply(id4(2), "q", TTR, "two"));
    systest_add(fd, id4(3), "q", "");
    systest_roundtrip(fd, "lease -fencing=1 q r 0\r\n",
                      f("+OK 1\r\n%s q %u 1 0\r\n\r\n", id4(3), TTR));
    systest_roundtrip(fd, "lease q 0 -fencing=1\r\n", TO);
    /* a parked leaser with fencing */
    systest_sends(w, "lease q " PARK " -fencing=1\r\n");
    systest_expect_silence(w, 100);
    systest_add(fd, id4(4), "q", "parked");
    systest_expect(w, fenced_reply(id4(4), "q", TTR, 1, "parked"));
    /* the attempt counts every lease: after a retried fail, attempt 2 */
    systest_add_full(fd, id4(5), "r", TTR, TTL, "again", "-max-fails=3");
    systest_roundtrip(w, "lease r 0 -fencing=1\r\n", fenced_reply(id4(5), "r", TTR, 1, "again"));
    finish(w, "fail", id4(5), "e1", "-attempt=1", OK);
    expect_state(fd, id4(5), PENDING);
    systest_roundtrip(w, "lease r 0 -fencing=1\r\n", fenced_reply(id4(5), "r", TTR, 2, "again"));
    finish(w, "fail", id4(5), "e2", "-attempt=1", ERR("Stale attempt"));
    finish(w, "fail", id4(5), "e2", "-attempt=2", OK);
    expect_state(fd, id4(5), PENDING);
    systest_roundtrip(w, "lease r 0\r\n", systest_lease_reply(id4(5), "r", TTR, "again"));
    finish(w, "complete", id4(5), "ok", "-attempt=3", OK);
    expect_result(fd, id4(5), 1, "ok");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fencing_stale)
{
    systest_start_srv();
    int fd = systest_conn(), w1 = systest_conn(), w2 = systest_conn();
    const unsigned ttr = 200u * (unsigned)systest_slow();
    systest_add_full(fd, id4(1), "q", ttr, TTL, "job", NULL);
    systest_roundtrip(w1, "lease q 0 -fencing=1\r\n", fenced_reply(id4(1), "q", ttr, 1, "job"));
    /* w1's TTR ends; w2 leases it in attempt 2 and keeps it */
    systest_roundtrip(w2, "lease q " PARK " -fencing=1\r\n",
                      fenced_reply(id4(1), "q", ttr, 2, "job"));
    systest_roundtrip(w2, f("touch %s 60000 -attempt=2\r\n", id4(1)), OK);
    /* w1, late: refused, nothing changes */
    finish(w1, "complete", id4(1), "old", "-attempt=1", ERR("Stale attempt"));
    finish(w1, "fail", id4(1), "old", "-attempt=1", ERR("Stale attempt"));
    systest_roundtrip(w1, f("touch %s -attempt=1\r\n", id4(1)), NF);
    expect_state(fd, id4(1), LEASED);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    /* w2 holds it */
    finish(w2, "complete", id4(1), "new", "-attempt=2", OK);
    expect_result(fd, id4(1), 1, "new");
    /* finished since: stale for both; without -attempt as before */
    finish(w2, "complete", id4(1), "again", "-attempt=2", ERR("Stale attempt"));
    finish(w1, "complete", id4(1), "old", "-attempt=1", ERR("Stale attempt"));
    finish(w1, "complete", id4(1), "old", NULL, ERR("Duplicate result"));
    expect_result(fd, id4(1), 1, "new");

    /* a job never leased has no attempt */
    systest_add(fd, id4(2), "r", "new");
    finish(fd, "complete", id4(2), "x", "-attempt=1", ERR("Stale attempt"));
    expect_state(fd, id4(2), NEW);
    /* an unknown job is still not found; the id comes first */
    finish(fd, "complete", id4(3), "x", "-attempt=1", NF);
    finish(fd, "fail", id4(3), "x", "-attempt=1", NF);
    finish(fd, "complete", "bad", "x", "-attempt=1", ERR("Invalid ID"));
    close(w1);
    close(w2);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fencing_old_flags)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "job");
    /* a flag section 4.13 does not name: as before */
    systest_roundtrip(fd, "lease q 0 -x=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q 0 -attempt=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q 0 -=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease a*b 0 -x=1\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, "lease q x -fencing=1\r\n", ERR("Invalid wait timeout"));
    finish(fd, "complete", id4(1), "r", "-x=1", ERR("Invalid command args"));
    finish(fd, "fail", id4(1), "r", "-x=1", ERR("Invalid command args"));
    finish(fd, "complete", id4(1), "r", "-fencing=1", ERR("Invalid command args"));
    finish(fd, "complete", "bad", "r", "-x=1", ERR("Invalid ID"));
    /* none of that took the job */
    systest_lease_now(fd, "q", id4(1), "job");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A bad value of a flag section 4.13 names: the errors of the 4.10 table
 * (`Invalid Fencing`, `Invalid Attempt`), not the `Invalid command args` of
 * a flag it does not name. */
START_TEST(test_fencing_bad_values)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "job");
    /* a bad value of a flag the command knows gets that flag's error */
    systest_roundtrip(fd, "lease q 0 -fencing=2\r\n", ERR("Invalid Fencing"));
    systest_roundtrip(fd, "lease q 0 -fencing=yes\r\n", ERR("Invalid Fencing"));
    finish(fd, "complete", id4(1), "r", "-attempt=0", ERR("Invalid Attempt"));
    finish(fd, "complete", id4(1), "r", "-attempt=x", ERR("Invalid Attempt"));
    finish(fd, "fail", id4(1), "r", "-attempt=0", ERR("Invalid Attempt"));
    systest_lease_now(fd, "q", id4(1), "job");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* wait (fan-in) */

START_TEST(test_wait_all_there)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    finish(fd, "complete", id4(1), "one", NULL, OK);
    finish(fd, "fail", id4(2), "two", NULL, OK);
    systest_roundtrip(fd, f("wait " PARK " %s %s\r\n", id4(1), id4(2)),
                      f("+OK 2\r\n%s%s", rec(id4(1), 1, "one"), rec(id4(2), 0, "two")));
    /* in the order listed; an id twice once */
    systest_roundtrip(fd, f("wait 0 %s %s %s\r\n", id4(2), id4(1), id4(2)),
                      f("+OK 2\r\n%s%s", rec(id4(2), 0, "two"), rec(id4(1), 1, "one")));
    systest_roundtrip(fd, f("wait 0 %s %s\r\n", id4(1), id4(1)),
                      f("+OK 1\r\n%s", rec(id4(1), 1, "one")));
    systest_roundtrip(fd, f("wait 0 00000001-58CC-4372-A567-0E02B2C3D479 %s\r\n", id4(1)),
                      f("+OK 1\r\n%s", rec(id4(1), 1, "one")));
    /* an empty result, and a binary one */
    systest_add(fd, id4(3), "q", "c");
    finish(fd, "complete", id4(3), "", NULL, OK);
    systest_add(fd, id4(4), "q", "d");
    systest_sends(fd, f("complete %s 5\r\n", id4(4)));
    systest_send(fd, "\r\n\0\n\r\r\n", 7);
    systest_expect(fd, OK);
    systest_sends(fd, f("wait 10 %s %s\r\n", id4(3), id4(4)));
    systest_expect(fd, f("+OK 2\r\n%s 1 0\r\n\r\n%s 1 5\r\n", id4(3), id4(4)));
    systest_expect_bytes(fd, "\r\n\0\n\r\r\n", 7);
    /* the longest wait is accepted */
    systest_roundtrip(fd, f("wait 86400000 %s\r\n", id4(3)), f("+OK 1\r\n%s 1 0\r\n\r\n", id4(3)));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_wait_until_last)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    systest_add(fd, id4(3), "q", "c");
    finish(fd, "complete", id4(1), "r1", NULL, OK);
    /* later commands of the waiting connection wait behind it */
    systest_sends(w, f("wait " PARK " %s %s %s %s\r\ndelete %s\r\n", id4(1), id4(2), id4(3), id4(2),
                       id4(0xdead)));
    systest_expect_silence(w, 100);
    finish(fd, "fail", id4(2), "r2", NULL, OK);
    systest_expect_silence(w, 100);
    systest_lease_now(fd, "q", id4(3), "c");
    systest_expect_silence(w, 50);
    finish(fd, "complete", id4(3), "r3", NULL, OK);
    systest_expect(
        w, f("+OK 3\r\n%s%s%s", rec(id4(1), 1, "r1"), rec(id4(2), 0, "r2"), rec(id4(3), 1, "r3")));
    systest_expect(w, NF);
    /* two fan-ins and a result waiter on the same job */
    systest_add(fd, id4(4), "q", "d");
    int w2 = systest_conn(), r = systest_conn();
    systest_sends(w, f("wait " PARK " %s %s\r\n", id4(4), id4(1)));
    systest_sends(w2, f("wait " PARK " %s\r\n", id4(4)));
    systest_sends(r, f("result %s " PARK "\r\n", id4(4)));
    systest_expect_silence(w, 100);
    finish(fd, "complete", id4(4), "r4", NULL, OK);
    systest_expect(w, f("+OK 2\r\n%s%s", rec(id4(4), 1, "r4"), rec(id4(1), 1, "r1")));
    systest_expect(w2, f("+OK 1\r\n%s", rec(id4(4), 1, "r4")));
    systest_expect(r, systest_result_reply(id4(4), 1, "r4"));
    close(r);
    close(w2);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_wait_timeout)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    finish(fd, "complete", id4(1), "r1", NULL, OK);
    /* wait 0: at once, with what there is */
    systest_roundtrip(fd, f("wait 0 %s\r\n", id4(2)), TO);
    systest_roundtrip(fd, f("wait 0 %s %s\r\n", id4(2), id4(1)),
                      f("+OK 1\r\n%s", rec(id4(1), 1, "r1")));
    /* the time is up: the results there are, or -TIMEOUT with none */
    int64_t t0 = systest_now_ms();
    systest_roundtrip(fd, f("wait 300 %s %s\r\n", id4(2), id4(1)),
                      f("+OK 1\r\n%s", rec(id4(1), 1, "r1")));
    ck_assert_int_ge(systest_now_ms(), t0 + 300);
    t0 = systest_now_ms();
    systest_roundtrip(fd, f("wait 200 %s %s\r\n", id4(2), id4(2)), TO);
    ck_assert_int_ge(systest_now_ms(), t0 + 200);
    /* a job that got its result meanwhile is in it, and the wait goes on
     * for the others */
    systest_add(fd, id4(3), "q", "c");
    int other = systest_conn();
    systest_sends(fd, f("wait %d %s %s\r\n", 600 * systest_slow(), id4(2), id4(3)));
    systest_expect_silence(fd, 50);
    finish(other, "complete", id4(3), "r3", NULL, OK);
    systest_expect(fd, f("+OK 1\r\n%s", rec(id4(3), 1, "r3")));
    expect_state(fd, id4(2), NEW);
    close(other);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_wait_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    finish(fd, "complete", id4(1), "r1", NULL, OK);
    systest_roundtrip(fd, "wait\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "wait 0\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("wait 0 %s -x=1\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "wait x bad -x=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("wait x %s\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("wait -1 %s\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("wait 86400001 %s\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "wait x bad\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "wait 0 bad\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("wait 0 %s bad\r\n", id4(1)), ERR("Invalid ID"));
    systest_roundtrip(fd, f("wait 0 %s " NIL "\r\n", id4(1)), ERR("Invalid ID"));
    /* an id unknown when the command arrives */
    systest_roundtrip(fd, f("wait 0 %s\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("wait " PARK " %s %s\r\n", id4(1), id4(2)), NF);
    systest_roundtrip(fd, f("wait 0 %s bad %s\r\n", id4(2), id4(1)), ERR("Invalid ID"));
    /* at most 1000 ids, checked before the ids */
    struct sb req = {0};
    sb_add(&req, "wait 0");
    for (unsigned i = 0; i < 1000; i++)
        sb_add(&req, f(" %s", id4(1)));
    sb_add(&req, "\r\n");
    systest_roundtrip(fd, req.p, f("+OK 1\r\n%s", rec(id4(1), 1, "r1")));
    req.n -= 2;
    sb_add(&req, f(" %s\r\n", id4(1)));
    systest_roundtrip(fd, req.p, ERR("Too many IDs"));
    req.n = 0;
    sb_add(&req, "wait 0");
    for (unsigned i = 0; i < 1001; i++)
        sb_add(&req, i == 500 ? " bad" : f(" %s", id4(100 + i)));
    sb_add(&req, "\r\n");
    systest_roundtrip(fd, req.p, ERR("Too many IDs"));
    free(req.p);
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_wait_gone)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    finish(fd, "complete", id4(2), "r2", NULL, OK);
    /* deleted during the wait: it ends the wait for it, without a result */
    systest_sends(w, f("wait " PARK " %s %s\r\n", id4(1), id4(2)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_expect(w, f("+OK 1\r\n%s", rec(id4(2), 1, "r2")));
    /* the only one, deleted: no result at all */
    systest_add(fd, id4(3), "q", "c");
    systest_sends(w, f("wait " PARK " %s\r\n", id4(3)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_expect(w, TO);
    /* expired during the wait (its TTL) */
    int life = 500 * systest_slow();
    systest_add_full(fd, id4(4), "q", TTR, f("%d", life), "short", NULL);
    systest_roundtrip(w, f("wait " PARK " %s %s\r\n", id4(2), id4(4)),
                      f("+OK 1\r\n%s", rec(id4(2), 1, "r2")));
    expect_state(fd, id4(4), -1);
    /* a waiting job's prerequisite is deleted: it fails, and that is its result */
    systest_add(fd, id4(5), "q", "pre");
    add_after(fd, id4(6), "q", "dep", id4(5));
    systest_sends(w, f("wait " PARK " %s %s\r\n", id4(6), id4(5)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("delete %s\r\n", id4(5)), OK);
    systest_expect(w, f("+OK 1\r\n%s", rec(id4(6), 0, prereq_gone(id4(5)))));
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_wait_disconnect)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_add(fd, id4(2), "q", "b");
    systest_add(fd, id4(3), "q", "c");
    int life = 300 * systest_slow();
    systest_add_full(fd, id4(4), "q", TTR, f("%d", life), "short", NULL);
    /* clients that leave while they wait */
    for (int i = 0; i < 4; i++) {
        int w = systest_conn();
        systest_sends(
            w, f("wait " PARK " %s %s %s %s %s\r\n", id4(1), id4(2), id4(1), id4(3), id4(4)));
        if (i == 3)
            systest_sends(w, f("wait 0 %s\r\n", id4(1))); /* queued behind it */
        systest_sleep_ms(50 * systest_slow());
        close(w);
    }
    systest_sleep_ms(50 * systest_slow());
    /* then every one of their jobs ends, in each way there is */
    finish(fd, "complete", id4(1), "r1", NULL, OK);
    finish(fd, "fail", id4(2), "r2", NULL, OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    sleep_past_scaled(life);
    expect_state(fd, id4(4), -1);
    /* one that left with a short timeout, after it passed */
    systest_add(fd, id4(5), "q", "e");
    int w = systest_conn();
    systest_sends(w, f("wait 100 %s\r\n", id4(5)));
    close(w);
    systest_sleep_past(100);
    /* the server goes on, on other connections */
    int other = systest_conn();
    systest_roundtrip(other, f("wait 0 %s %s\r\n", id4(1), id4(2)),
                      f("+OK 2\r\n%s%s", rec(id4(1), 1, "r1"), rec(id4(2), 0, "r2")));
    systest_lease_now(other, "q", id4(5), "e");
    systest_expect_stats(other, "parked-clients", U(0), "active-clients", U(2), NULL);
    /* one still waiting when the server stops */
    systest_sends(other, f("wait " PARK " %s\r\n", id4(5)));
    systest_sleep_ms(50 * systest_slow());
    systest_stop_srv();
    close(other);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Idempotent submit */

START_TEST(test_idempotent_add)
{
    systest_start_srv();
    int fd = systest_conn();
    const char *flags = "-idempotent=1 -priority=3 -max-attempts=4 -max-fails=2";
    add_reply(fd, id4(1), "q", "pay", flags, OK);
    /* the same job again: +OK, nothing changes (still one job) */
    add_reply(fd, id4(1), "q", "pay", flags, OK);
    add_reply(fd, id4(1), "q", "pay", "-max-fails=2 -idempotent=1 -max-attempts=4 -priority=+3",
              OK);
    systest_expect_stats(fd, "jobs", U(1), "ready-jobs", U(1), NULL);
    /* different: Duplicate job */
    add_reply(fd, id4(1), "q", "PAY", flags, ERR("Duplicate job"));
    add_reply(fd, id4(1), "q", "pay!", flags, ERR("Duplicate job"));
    add_reply(fd, id4(1), "r", "pay", flags, ERR("Duplicate job"));
    add_reply(fd, id4(1), "q", "pay", "-idempotent=1 -priority=3 -max-attempts=4",
              ERR("Duplicate job"));
    add_reply(fd, id4(1), "q", "pay", "-idempotent=1 -priority=2 -max-attempts=4 -max-fails=2",
              ERR("Duplicate job"));
    add_reply(fd, id4(1), "q", "pay", "-idempotent=1 -priority=3 -max-attempts=5 -max-fails=2",
              ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s q %u %s 3 %s\r\npay\r\n", id4(1), TTR + 1, TTL, flags),
                      ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s q %u 600001 3 %s\r\npay\r\n", id4(1), TTR, flags),
                      ERR("Duplicate job"));
    /* without the flag, or with 0: as before */
    add_reply(fd, id4(1), "q", "pay", "-priority=3 -max-attempts=4 -max-fails=2",
              ERR("Duplicate job"));
    add_reply(fd, id4(1), "q", "pay", "-idempotent=0 -priority=3 -max-attempts=4 -max-fails=2",
              ERR("Duplicate job"));
    /* the job is as it was: leased once, with its payload */
    systest_lease_now(fd, "q", id4(1), "pay");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* leased, then finished: still +OK, the result stays */
    add_reply(fd, id4(1), "q", "pay", flags, OK);
    expect_state(fd, id4(1), LEASED);
    finish(fd, "complete", id4(1), "done", NULL, OK);
    add_reply(fd, id4(1), "q", "pay", flags, OK);
    add_reply(fd, id4(1), "q", "pay", "-idempotent=1", ERR("Duplicate job"));
    expect_result(fd, id4(1), 1, "done");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* a failed one too; defaults written out are the same job */
    add_reply(fd, id4(2), "q", "", "-idempotent=1", OK);
    finish(fd, "fail", id4(2), "bad", NULL, OK);
    add_reply(fd, id4(2), "q", "", "-idempotent=1 -priority=0 -max-attempts=0 -max-fails=0", OK);
    expect_result(fd, id4(2), 0, "bad");
    /* the first add may carry the flag or not */
    systest_add(fd, id4(3), "q", "plain");
    add_reply(fd, id4(3), "q", "plain", "-idempotent=1", OK);
    /* a run job is never the same as an add (no TTL, one attempt) */
    int runner = systest_conn();
    systest_sends(runner, f("run %s rq %u " PARK " 3\r\nrun\r\n", id4(4), TTR));
    systest_wait_queue(fd, "rq");
    add_reply(fd, id4(4), "rq", "run", "-idempotent=1 -max-attempts=1", ERR("Duplicate job"));
    close(runner);
    /* deleted: a new job */
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    add_reply(fd, id4(1), "q", "other", "-idempotent=1", OK);
    systest_lease_now(fd, "q", id4(3), "plain");
    systest_lease_now(fd, "q", id4(1), "other");
    /* errors */
    add_reply(fd, id4(5), "q", "x", "-idempotent=2", ERR("Invalid Idempotent"));
    add_reply(fd, id4(5), "q", "x", "-idempotent=yes", ERR("Invalid Idempotent"));
    add_reply(fd, id4(5), "q", "x", "-idempotent=-1", ERR("Invalid Idempotent"));
    add_reply(fd, id4(5), "q", "x", "-idempotent=", ERR("Invalid command flags"));
    add_reply(fd, id4(5), "q", "x", "-idempotent=1 -idempotent=1", ERR("Invalid command flags"));
    systest_roundtrip(fd, f("run %s q %u 0 1 -idempotent=1\r\nx\r\n", id4(5), TTR),
                      ERR("Invalid command flags"));
    expect_state(fd, id4(5), -1);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_idempotent_schedule)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t at = systest_ahead(3600000);
    const char *t = systest_time_ms(at);
    char when[40];
    snprintf(when, sizeof when, "%s", t);
    systest_schedule_full(fd, id4(1), "q", TTR, TTL, when, "pay", "-idempotent=1");
    /* the same time: +OK; written with more digits, the same time still */
    systest_schedule_full(fd, id4(1), "q", TTR, TTL, when, "pay", "-idempotent=1");
    char longer[48];
    snprintf(longer, sizeof longer, "%.*s000000Z", (int)strlen(when) - 1, when);
    systest_schedule_full(fd, id4(1), "q", TTR, TTL, longer, "pay", "-idempotent=1");
    systest_expect_stats(fd, "jobs", U(1), "scheduled-jobs", U(1), NULL);
    /* a different time: Duplicate job */
    systest_roundtrip(fd,
                      f("schedule %s q %u %s %s 3 -idempotent=1\r\npay\r\n", id4(1), TTR, TTL,
                        systest_time_ms(at + 1)),
                      ERR("Duplicate job"));
    systest_roundtrip(fd,
                      f("schedule %s q %u %s %.*s000001Z 3 -idempotent=1\r\npay\r\n", id4(1), TTR,
                        TTL, (int)strlen(when) - 1, when),
                      ERR("Duplicate job"));
    /* or a different anything else */
    systest_roundtrip(
        fd, f("schedule %s q %u %s %s 3 -idempotent=1\r\npaY\r\n", id4(1), TTR, TTL, when),
        ERR("Duplicate job"));
    /* without the flag: as before */
    systest_roundtrip(fd, f("schedule %s q %u %s %s 3\r\npay\r\n", id4(1), TTR, TTL, when),
                      ERR("Duplicate job"));
    /* an add of the same fields is not the scheduled job, nor the reverse */
    add_reply(fd, id4(1), "q", "pay", "-idempotent=1", ERR("Duplicate job"));
    systest_add(fd, id4(2), "q", "pay");
    systest_roundtrip(
        fd, f("schedule %s q %u %s %s 3 -idempotent=1\r\npay\r\n", id4(2), TTR, TTL, when),
        ERR("Duplicate job"));
    /* nothing changed */
    struct systest_job j = job_in(id4(1), "q", "pay", NEW);
    SET(j.time, systest_time_s(at));
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 10", &j, 1);
    systest_lease_now(fd, "q", id4(2), "pay");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Across a SIGKILL: records 32 (cancel) and 33 (after) */

START_TEST(test_persist_kill)
{
    char dir[64], log[96];
    systest_tmpdir_new(dir);
    snprintf(log, sizeof log, "%s/log", dir);
    struct systest_server s;
    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    int fd = systest_connect(&s), w = systest_connect(&s);
    const char *p1 = "00000001-58cc-4372-a567-0e02b2c3d479";
    const char *w1 = "00000011-58cc-4372-a567-0e02b2c3d479";
    const char *w2 = "00000012-58cc-4372-a567-0e02b2c3d479";
    /* a waiting chain: P1 <- W1 <- W2 */
    systest_add(fd, p1, "p", "p1");
    add_after(fd, w1, "w1", "first", p1);
    add_after(fd, w2, "w2", "second", w1);
    /* half met: W3 waits for P2 (completed) and P3 */
    systest_add(fd, id4(2), "p", "p2");
    systest_add(fd, id4(3), "p", "p3");
    add_after(fd, id4(0x13), "w3", "third", f("%s,%s", id4(2), id4(3)));
    finish(fd, "complete", id4(2), "r2", NULL, OK);
    /* a scheduled one waiting for P1 */
    int64_t at = systest_ahead(3600000);
    systest_schedule_full(fd, id4(0x14), "w4", TTR, TTL, systest_time_ms(at), "timed",
                          f("-after=%s", p1));
    /* a leased job cancelled under its worker */
    systest_add(fd, id4(0x20), "l", "leased");
    systest_roundtrip(w, "lease l 0 -fencing=1\r\n",
                      fenced_reply(id4(0x20), "l", TTR, 1, "leased"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(0x20)), OK);
    /* failed by its prerequisite, before and after it was added */
    systest_add(fd, id4(0x30), "p", "f");
    add_after(fd, id4(0x31), "d", "dep", id4(0x30));
    add_after(fd, id4(0x32), "d", "dep2", id4(0x31));
    finish(fd, "fail", id4(0x30), "oops", NULL, OK);
    add_after(fd, id4(0x33), "d", "late", id4(0x30));
    /* NEW at once: its prerequisite had completed */
    add_after(fd, id4(0x40), "x", "free", id4(2));
    /* a cancelled waiting job; the last acknowledgement, then SIGKILL */
    systest_add(fd, id4(0x50), "p", "p5");
    add_after(fd, id4(0x51), "c", "cw", id4(0x50));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(0x51)), OK);
    systest_kill(&s);
    close(fd);
    close(w);

    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    fd = systest_connect(&s);
    w = systest_connect(&s);
    struct systest_job j1 = job_in(w1, "w1", "first", WAITING);
    struct systest_job j2 = job_in(w2, "w2", "second", WAITING);
    struct systest_job j3 = job_in(id4(0x13), "w3", "third", WAITING);
    struct systest_job j4 = job_in(id4(0x14), "w4", "timed", WAITING);
    SET(j4.time, systest_time_s(at));
    systest_expect_inspect_job(fd, &j1);
    systest_expect_inspect_job(fd, &j2);
    systest_expect_inspect_job(fd, &j3);
    systest_expect_inspect_job(fd, &j4);
    expect_state(fd, p1, NEW);
    expect_state(fd, id4(3), NEW);
    expect_result(fd, id4(2), 1, "r2");
    /* the cancelled job, and its worker */
    expect_state(fd, id4(0x20), FAILED);
    expect_result(fd, id4(0x20), 0, "cancelled");
    finish(w, "complete", id4(0x20), "late", "-attempt=1", ERR("Job cancelled"));
    finish(w, "fail", id4(0x20), "late", NULL, ERR("Job cancelled"));
    systest_roundtrip(w, f("touch %s\r\n", id4(0x20)), ERR("Job cancelled"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(0x20)), ERR("Job finished"));
    systest_roundtrip(fd, "lease l 0\r\n", TO);
    /* the failed ones */
    expect_result(fd, id4(0x30), 0, "oops");
    expect_result(fd, id4(0x31), 0, prereq_failed(id4(0x30)));
    expect_result(fd, id4(0x32), 0, prereq_failed(id4(0x31)));
    expect_result(fd, id4(0x33), 0, prereq_failed(id4(0x30)));
    expect_state(fd, id4(0x31), FAILED);
    systest_roundtrip(fd, "lease d 0\r\n", TO);
    expect_result(fd, id4(0x51), 0, "cancelled");
    finish(fd, "complete", id4(0x50), "", NULL, OK);
    expect_state(fd, id4(0x51), FAILED);
    systest_roundtrip(fd, "lease c 0\r\n", TO);
    /* the free one */
    systest_lease_now(fd, "x", id4(0x40), "free");
    /* the waiting ones are released by completions after the restart */
    systest_roundtrip(fd, "lease w1 0\r\n", TO);
    systest_roundtrip(fd, "lease w3 0\r\n", TO);
    finish(fd, "complete", id4(3), "r3", NULL, OK);
    systest_lease_now(fd, "w3", id4(0x13), "third");
    finish(fd, "complete", p1, "r1", NULL, OK);
    systest_lease_now(fd, "w1", w1, "first");
    expect_state(fd, w2, WAITING);
    j4.state = NEW;
    systest_expect_inspect_list(fd, "scheduled-jobs", "w4", "0 10", &j4, 1);
    finish(fd, "complete", w1, "done", NULL, OK);
    systest_lease_now(fd, "w2", w2, "second");
    close(w);
    close(fd);
    systest_stop(&s);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------ */
/* Named workers, jobs for them, broadcasts */

/* Read `inspect workers 0 10` of one worker: its key lines into out
 * ("key value" each), their number. */
static int
worker_record(int fd, const char *wid, char out[][128], int cap)
{
    systest_sends(fd, "inspect workers 0 10\r\n");
    const char *l = systest_read_line(fd);
    int records = 0;
    ck_assert_int_eq(sscanf(l, "+OK %d", &records), 1);
    int found = 0;
    for (int r = 0; r < records; r++) {
        char name[64];
        int k = 0;
        ck_assert_int_eq(sscanf(systest_read_line(fd), "%63s %d", name, &k), 2);
        for (int i = 0; i < k; i++) {
            l = systest_read_line(fd);
            if (strcmp(name, wid) == 0 && found < cap)
                snprintf(out[found++], 128, "%s", l);
        }
    }
    return found;
}

/* The value of key in a worker record, or NULL. */
static const char *
worker_key(char rec[][128], int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strncmp(rec[i], key, strlen(key)) == 0 && rec[i][strlen(key)] == ' ')
            return rec[i] + strlen(key) + 1;
    return NULL;
}

START_TEST(test_hello_and_inspect)
{
    systest_start_srv();
    int a = systest_conn(), c = systest_conn();
    systest_roundtrip(a, "hello alice -labels=gpu,fast\r\n", OK);
    systest_roundtrip(a, "hello alice\r\n", ERR("Worker already named"));
    systest_roundtrip(c, "hello bob -labels=ok,\r\n", ERR("Invalid Labels"));
    systest_roundtrip(c, "hello\r\n", ERR("Invalid command args"));
    systest_sends(a, "lease q1 q2 " PARK "\r\n");
    char rec[16][128];
    int n = 0;
    for (int tries = 0; tries < 100; tries++) { /* the lease is parked */
        n = worker_record(c, "alice", rec, 16);
        if (n > 0 && strcmp(worker_key(rec, n, "waiting-on"), "q1,q2") == 0)
            break;
        systest_sleep_ms(10);
    }
    ck_assert_int_eq(n, 12);
    ck_assert_str_eq(worker_key(rec, n, "labels"), "[\"gpu\",\"fast\"]");
    ck_assert_str_eq(worker_key(rec, n, "kind"), "workq");
    ck_assert_str_eq(worker_key(rec, n, "connections"), "1");
    ck_assert_str_eq(worker_key(rec, n, "last-command"), "lease");
    ck_assert_str_eq(worker_key(rec, n, "waiting-on"), "q1,q2");
    ck_assert_str_eq(worker_key(rec, n, "jobs"), "0");
    ck_assert(strncmp(worker_key(rec, n, "address"), "127.0.0.1:", 10) == 0);
    systest_add(c, id4(1), "q2", "work");
    systest_expect(a, f("+OK 1\r\n%s q2 %u 4\r\nwork\r\n", id4(1), TTR));
    n = worker_record(c, "alice", rec, 16);
    ck_assert_str_eq(worker_key(rec, n, "jobs"), "1");
    ck_assert_str_eq(worker_key(rec, n, "waiting-on"), "");
    /* gone with its connection; its lease stays until its TTR */
    close(a);
    for (int tries = 0; tries < 100 && worker_record(c, "alice", rec, 16) > 0; tries++)
        systest_sleep_ms(10);
    ck_assert_int_eq(worker_record(c, "alice", rec, 16), 0);
    expect_state(c, id4(1), 4);
    close(c);
    systest_stop_srv();
}
END_TEST

START_TEST(test_targeted)
{
    systest_start_srv();
    int bob = systest_conn(), anon = systest_conn();
    systest_roundtrip(bob, "hello bob\r\n", OK);
    add_reply(anon, id4(1), "q", "for bob", "-worker=carol,bob,bob -priority=9", OK);
    add_reply(anon, id4(2), "q", "common", NULL, OK);
    add_reply(anon, id4(3), "q", "x", "-worker=bad,,x", ERR("Invalid Worker"));
    add_reply(anon, id4(3), "q", "x", "-worker=", ERR("Invalid command flags"));
    systest_lease_now(anon, "q", id4(2), "common");
    systest_roundtrip(anon, "lease q 0\r\n", TO);
    systest_sends(anon, f("inspect job %s\r\n", id4(1)));
    ck_assert_str_eq(systest_read_line(anon), "+OK 1");
    ck_assert_str_eq(systest_read_line(anon), f("%s 13", id4(1)));
    ck_assert_str_eq(systest_read_line(anon), "name q");
    const char *l;
    while (strncmp(l = systest_read_line(anon), "workers ", 8) != 0)
        ;
    ck_assert_str_eq(l, "workers bob,carol");
    systest_roundtrip(anon, "inspect queues 0 10\r\n",
                      "+OK 1\r\nq 2\r\nready-len 0\r\nscheduled-len 0\r\n");
    systest_lease_now(bob, "q", id4(1), "for bob");
    /* a parked worker of the set gets its job at once */
    systest_sends(bob, "lease q " PARK "\r\n");
    systest_sleep_ms(50);
    add_reply(anon, id4(4), "q", "later", "-worker=bob", OK);
    systest_expect(bob, f("+OK 1\r\n%s q %u 5\r\nlater\r\n", id4(4), TTR));
    close(bob);
    close(anon);
    systest_stop_srv();
}
END_TEST

/* Read a lease reply: the job's id into id (37 bytes). */
static void
lease_reply_id(int fd, const char *payload, char id[37])
{
    ck_assert_str_eq(systest_read_line(fd), "+OK 1");
    const char *head = systest_read_line(fd);
    ck_assert_msg(strlen(head) > 36, "lease head %s", head);
    memcpy(id, head, 36);
    id[36] = '\0';
    ck_assert_str_eq(head + 36, f(" q %u %zu", TTR, strlen(payload)));
    ck_assert_str_eq(systest_read_line(fd), payload);
}

START_TEST(test_broadcast)
{
    systest_start_srv();
    int a = systest_conn(), b = systest_conn(), c = systest_conn();
    systest_roundtrip(a, "hello a\r\n", OK);
    systest_roundtrip(b, "hello b\r\n", OK);
    add_reply(c, id4(9), "q", "x", "-target=some", ERR("Invalid Target"));
    add_reply(c, id4(9), "q", "x", "-target=all -worker=a", ERR("Invalid Target"));
    systest_sends(a, "lease q " PARK "\r\n");
    systest_sends(b, "lease q " PARK "\r\n");
    /* both wait on q (so both are present there) before the broadcast */
    const char *names[] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        char wr[16][128];
        int tries = 0, n = 0;
        while ((n = worker_record(c, names[i], wr, 16)) == 0 ||
               strcmp(worker_key(wr, n, "waiting-on"), "q") != 0) {
            ck_assert_int_lt(tries++, 500 * systest_slow());
            systest_sleep_ms(10);
        }
    }
    add_reply(c, id4(1), "q", "to all", "-target=all", OK);
    char ida[37], idb[37];
    lease_reply_id(a, "to all", ida);
    lease_reply_id(b, "to all", idb);
    ck_assert_str_ne(ida, idb);
    ck_assert_str_ne(ida, id4(1));
    expect_state(c, id4(1), WAITING);
    systest_roundtrip(c, f("result %s 0\r\n", id4(1)), TO);
    systest_sends(c, f("result %s " PARK "\r\n", id4(1)));
    finish(a, "complete", ida, "done a", NULL, OK);
    finish(b, "fail", idb, "no b", NULL, OK);
    systest_expect(c, f("+OK 2\r\n%s%s", rec(ida, 1, "done a"), rec(idb, 0, "no b")));
    expect_state(c, id4(1), 1);
    /* nobody present on the name: done at once, with no copy */
    add_reply(c, id4(2), "empty", "x", "-target=all", OK);
    systest_roundtrip(c, f("result %s 0\r\n", id4(2)), "+OK 0\r\n");
    close(a);
    close(b);
    close(c);
    systest_stop_srv();
}
END_TEST

/* Jobs for named workers and a broadcast come back after a SIGKILL. */
START_TEST(test_persist_targets)
{
    char dir[64], log[96];
    systest_tmpdir_new(dir);
    snprintf(log, sizeof log, "%s/log", dir);
    struct systest_server s;
    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    int a = systest_connect(&s), fd = systest_connect(&s);
    systest_roundtrip(a, "hello a\r\n", OK);
    systest_add(fd, id4(1), "q", "plain");
    systest_lease_now(a, "q", id4(1), "plain"); /* a is present on q */
    finish(a, "complete", id4(1), "", NULL, OK);
    add_reply(fd, id4(2), "q", "for a", "-worker=a", OK);
    add_reply(fd, id4(3), "q", "all", "-target=all", OK);
    systest_kill(&s);
    close(a);
    close(fd);

    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    a = systest_connect(&s);
    fd = systest_connect(&s);
    systest_roundtrip(fd, "lease q 0\r\n", TO); /* neither is for it */
    expect_state(fd, id4(3), WAITING);
    systest_roundtrip(a, "hello a\r\n", OK);
    systest_lease_now(a, "q", id4(2), "for a");
    char copy[37];
    systest_sends(a, "lease q 0\r\n");
    lease_reply_id(a, "all", copy);
    finish(a, "complete", copy, "got it", NULL, OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), f("+OK 1\r\n%s", rec(copy, 1, "got it")));
    close(a);
    close(fd);
    systest_stop(&s);
    systest_tmpdir_remove(dir);
}
END_TEST

static Suite *
jobmodel_suite(void)
{
    const struct systest_group groups[] = {
        {"after",
         {test_after_waiting_and_release, test_after_already_failed, test_after_release_order,
          test_after_chain_fails, test_after_gone, test_after_errors, test_after_flag_order,
          test_after_scheduled, test_after_stop_waiting, test_after_long_chain, NULL}},
        {"cancel",
         {test_cancel_ready, test_cancel_leased, test_cancel_wakes_waiters, test_cancel_run,
          test_cancel_errors, NULL}},
        {"touch",
         {test_touch_restarts_ttr, test_touch_explicit_ttr, test_touch_not_leased_and_errors,
          NULL}},
        {"fencing",
         {test_fencing_reply, test_fencing_stale, test_fencing_old_flags, test_fencing_bad_values,
          NULL}},
        {"wait",
         {test_wait_all_there, test_wait_until_last, test_wait_timeout, test_wait_errors,
          test_wait_gone, test_wait_disconnect, NULL}},
        {"idempotent", {test_idempotent_add, test_idempotent_schedule, NULL}},
        {"persist", {test_persist_kill, test_persist_targets, NULL}},
        {"workers", {test_hello_and_inspect, test_targeted, test_broadcast, NULL}},
    };
    return systest_suite("jobmodel", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(jobmodel_suite());
}
