/* sys_retry.c - system tests of the retry policy and the dead set (ours,
 * doc/protocol-reference.md section 4.13): add/schedule -backoff=faktory
 * (a retried fail waits Faktory's backoff), -dead=1 (out of retries, the job
 * enters the dead set), inspect dead-jobs, revive, the server's -dead-ttl,
 * -dead-max and -backoff-unit, and all of it across a SIGKILL and a restart
 * on the same command log.  The real workq-server over TCP, byte-exact
 * against the docs.
 *
 * Tests check behaviour, never speed: waits for server-side deadlines are
 * generous and scaled by WQ_TEST_SLOW, and timings are lower bounds only. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TTR SYSTEST_TTR
#define TTL SYSTEST_TTL

/* fail id with result; expect reply. */
static void
fail_job(int fd, const char *id, const char *result, const char *reply)
{
    systest_roundtrip(fd, f("fail %s %zu\r\n%s\r\n", id, strlen(result), result), reply);
}

/* A job as add leaves it, with -max-fails and our policy flags. */
static struct systest_job
job_with(const char *id, const char *name, const char *payload, unsigned max_fails, bool backoff,
         bool dead)
{
    struct systest_job j = systest_job(id, name, payload);
    j.max_fails = max_fails;
    if (backoff)
        SET(j.backoff, "faktory");
    j.dead = dead;
    return j;
}

/* A fail that retries waits for the backoff (15 to 44 units for the
 * first retry; 10 ms units here); the job is PENDING meanwhile, in its
 * scheduled heap, and ready at its time. */
START_TEST(test_backoff_waits)
{
    struct systest_server s;
    systest_start(&s, "-backoff-unit", "10", NULL);
    int fd = systest_connect(&s);
    systest_add_full(fd, id4(1), "q", TTR, TTL, "job", "-max-fails=3 -backoff=faktory");
    struct systest_job j = job_with(id4(1), "q", "job", 3, true, false);
    systest_expect_inspect_job(fd, &j);
    systest_lease_now(fd, "q", id4(1), "job");
    int64_t failed = systest_now_ms();
    fail_job(fd, id4(1), "first", OK);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    j.state = PENDING;
    j.attempts = 1;
    j.fails = 1;
    j.retry_at = true;
    systest_expect_inspect_job(fd, &j);
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 10", &j, 1);
    systest_roundtrip(fd, "inspect queue q\r\n",
                      "+OK 1\r\nq 2\r\nready-len 0\r\nscheduled-len 1\r\n");
    /* a parked lease gets it once the backoff is over */
    systest_sends(fd, f("lease q %d\r\n", 5000 * systest_slow()));
    systest_expect_lease(fd, id4(1), "q", "job");
    ck_assert_int_ge(systest_now_ms() - failed, 150);
    j.state = LEASED;
    j.attempts = 2;
    j.retry_at = false;
    systest_expect_inspect_job(fd, &j);
    /* without -backoff, the retry is ready at once (Workq's way) */
    systest_add_full(fd, id4(2), "r", TTR, TTL, "now", "-max-fails=2");
    systest_lease_now(fd, "r", id4(2), "now");
    fail_job(fd, id4(2), "x", OK);
    systest_lease_now(fd, "r", id4(2), "now");
    close(fd);
    systest_stop(&s);
}
END_TEST

/* Out of retries, a -dead=1 job is FAILED with its result and in the dead
 * set; revive puts it back to work as new. */
START_TEST(test_dead_and_revive)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "one", "-dead=1");
    systest_add_full(fd, id4(2), "q", TTR, TTL, "two", "-max-fails=2 -dead=1");
    systest_add_full(fd, id4(3), "q", TTR, TTL, "three", NULL);
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 0\r\n");
    systest_lease_now(w, "q", id4(1), "one");
    fail_job(w, id4(1), "boom", OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "boom"));
    /* two fails: one retry, then dead */
    fail_job(fd, id4(2), "a", OK);
    fail_job(fd, id4(2), "b", OK);
    /* no -dead: failed, not dead */
    fail_job(fd, id4(3), "c", OK);

    struct systest_job d1 = job_with(id4(1), "q", "one", 0, false, true);
    d1.state = FAILED;
    d1.attempts = 1;
    d1.fails = 1;
    d1.died = true;
    struct systest_job d2 = job_with(id4(2), "q", "two", 2, false, true);
    d2.state = FAILED;
    d2.fails = 2;
    d2.died = true;
    struct systest_job both[] = {d1, d2};
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 2\r\n");
    systest_expect_job_block(fd, &both[0]);
    systest_expect_job_block(fd, &both[1]);
    systest_roundtrip(fd, "inspect dead-jobs 1 1\r\n", "+OK 1\r\n");
    systest_expect_job_block(fd, &d2);
    systest_roundtrip(fd, "inspect dead-jobs 2 10\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect dead-jobs 4294967295 1000\r\n", "+OK 0\r\n");

    /* revive: PENDING, no result, no fails, no attempts */
    systest_roundtrip(fd, f("revive %s\r\n", id4(1)), OK);
    struct systest_job r1 = job_with(id4(1), "q", "one", 0, false, true);
    r1.state = PENDING;
    systest_expect_inspect_job(fd, &r1);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 1\r\n");
    systest_expect_job_block(fd, &d2);
    systest_lease_now(w, "q", id4(1), "one");
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "ok"));

    /* errors */
    systest_roundtrip(fd, f("revive %s\r\n", id4(1)), ERR("Job not dead"));
    systest_roundtrip(fd, f("revive %s\r\n", id4(3)), ERR("Job not dead"));
    systest_roundtrip(fd, f("revive %s\r\n", id4(9)), NF);
    systest_roundtrip(fd, "revive nope\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "revive\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("revive %s %s\r\n", id4(2), id4(2)), ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect dead-jobs 0\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect dead-jobs x 1\r\n", ERR("Invalid cursor offset"));
    systest_roundtrip(fd, "inspect dead-jobs 0 0\r\n", ERR("Invalid limit"));
    systest_roundtrip(fd, "inspect dead-jobs 0 1001\r\n", ERR("Invalid limit"));
    /* delete takes a job out of the set */
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 0\r\n");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* The last attempt's TTR end kills a -dead=1 job too; a cancel does not. */
START_TEST(test_dead_by_ttr_not_cancel)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 200, TTL, "slow", "-max-attempts=1 -dead=1");
    systest_add_full(fd, id4(2), "c", TTR, TTL, "cancelled", "-dead=1");
    systest_sends(fd, "lease q 0\r\n");
    systest_expect(fd, systest_lease_reply(id4(1), "q", 200, "slow"));
    systest_roundtrip(fd, f("cancel %s\r\n", id4(2)), OK);
    systest_sleep_past(200);
    struct systest_job d = job_with(id4(1), "q", "slow", 0, false, true);
    d.ttr = 200;
    d.max_attempts = 1;
    d.attempts = 1;
    d.state = FAILED;
    d.died = true;
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 1\r\n");
    systest_expect_job_block(fd, &d);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* -dead-max: the oldest go first; -dead-ttl: they go by age. */
START_TEST(test_dead_bounds)
{
    struct systest_server s;
    systest_start(&s, "-dead-max", "2", "-dead-ttl", f("%dms", 1500 * systest_slow()), NULL);
    int fd = systest_connect(&s);
    for (unsigned n = 1; n <= 3; n++) {
        systest_add_full(fd, id4(n), "q", TTR, TTL, "x", "-dead=1");
        fail_job(fd, id4(n), "e", OK);
    }
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_sends(fd, "inspect dead-jobs 0 10\r\n");
    systest_expect(fd, "+OK 2\r\n");
    ck_assert_str_eq(systest_skip_job_block(fd), id4(2));
    ck_assert_str_eq(systest_skip_job_block(fd), id4(3));
    systest_sleep_past(1500 * systest_slow());
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(3)), NF);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* The flags' errors, their order among the others, and where they are
 * taken: add and schedule, not run. */
START_TEST(test_flag_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_error(fd, f("%s q %u %s 3 -backoff=fast", id4(1), TTR, TTL),
                      ERR("Invalid Backoff"));
    /* an empty value, as for every flag */
    systest_add_error(fd, f("%s q %u %s 3 -backoff=", id4(1), TTR, TTL),
                      ERR("Invalid command flags"));
    systest_add_error(fd, f("%s q %u %s 3 -backoff=Faktory", id4(1), TTR, TTL),
                      ERR("Invalid Backoff"));
    systest_add_error(fd, f("%s q %u %s 3 -dead=2", id4(1), TTR, TTL), ERR("Invalid Dead"));
    systest_add_error(fd, f("%s q %u %s 3 -dead=yes", id4(1), TTR, TTL), ERR("Invalid Dead"));
    /* flags are checked in order */
    systest_add_error(fd, f("%s q %u %s 3 -dead=2 -priority=x", id4(1), TTR, TTL),
                      ERR("Invalid Dead"));
    systest_add_error(fd, f("%s q %u %s 3 -priority=x -dead=2", id4(1), TTR, TTL),
                      ERR("Invalid Priority"));
    systest_add_error(fd, f("nope q %u %s 3 -dead=2", TTR, TTL), ERR("Invalid ID"));
    systest_roundtrip(fd, f("run %s q %u 0 3 -dead=1\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command flags"));
    systest_sync(fd);
    /* none, the default, said aloud */
    systest_add_full(fd, id4(1), "q", TTR, TTL, "x", "-backoff=none -dead=0");
    struct systest_job plain = systest_job(id4(1), "q", "x");
    systest_expect_inspect_job(fd, &plain);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* An idempotent add is the same job only with the same policy. */
START_TEST(test_idempotent_policy)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "x", "-backoff=faktory -dead=1 -idempotent=1");
    systest_add_full(fd, id4(1), "q", TTR, TTL, "x", "-idempotent=1 -dead=1 -backoff=faktory");
    systest_roundtrip(
        fd, f("add %s q %u %s 1 -idempotent=1 -backoff=faktory\r\nx\r\n", id4(1), TTR, TTL),
        ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s q %u %s 1 -idempotent=1 -dead=1\r\nx\r\n", id4(1), TTR, TTL),
                      ERR("Duplicate job"));
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A job waiting out its backoff, a dead one and a revived one come back
 * after a SIGKILL exactly so. */
START_TEST(test_persist_kill)
{
    char dir[64], log[96];
    systest_tmpdir_new(dir);
    snprintf(log, sizeof log, "%s/log", dir);
    struct systest_server s;
    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    int fd = systest_connect(&s);
    systest_add_full(fd, id4(1), "q", TTR, TTL, "waits", "-max-fails=5 -backoff=faktory");
    fail_job(fd, id4(1), "a", OK); /* back in 15 s at least */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "dies", "-dead=1");
    fail_job(fd, id4(2), "gone", OK);
    systest_add_full(fd, id4(3), "q", TTR, TTL, "lives", "-dead=1 -max-fails=1");
    fail_job(fd, id4(3), "once", OK);
    systest_roundtrip(fd, f("revive %s\r\n", id4(3)), OK);
    systest_kill(&s);
    close(fd);

    systest_start(&s, "-cmdlog-path", log, "-cmdlog-sync", "always", NULL);
    fd = systest_connect(&s);
    struct systest_job w = job_with(id4(1), "q", "waits", 5, true, false);
    w.state = PENDING;
    w.fails = 1;
    w.retry_at = true;
    systest_expect_inspect_job(fd, &w);
    struct systest_job d = job_with(id4(2), "q", "dies", 0, false, true);
    d.state = FAILED;
    d.fails = 1;
    d.died = true;
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 1\r\n");
    systest_expect_job_block(fd, &d);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 0, "gone"));
    struct systest_job l = job_with(id4(3), "q", "lives", 1, false, true);
    l.state = PENDING;
    systest_expect_inspect_job(fd, &l);
    systest_lease_now(fd, "q", id4(3), "lives");
    systest_roundtrip(fd, "lease q 0\r\n", TO); /* 1 still waits */
    systest_roundtrip(fd, f("revive %s\r\n", id4(2)), OK);
    systest_lease_now(fd, "q", id4(2), "dies");
    close(fd);
    systest_stop(&s);
    systest_tmpdir_remove(dir);
}
END_TEST

/* A fail of a job waiting for its prerequisites, with fails left, is
 * counted and the job waits on; with -dead-max 0 a dependent failed at
 * once by its prerequisite is gone at once. */
START_TEST(test_waiting_fail)
{
    struct systest_server s;
    systest_start(&s, "-dead-max", "0", NULL);
    int fd = systest_connect(&s);
    systest_add(fd, id4(1), "p", "pre");
    systest_add_full(fd, id4(2), "q", TTR, TTL, "dep", f("-after=%s -max-fails=3", id4(1)));
    fail_job(fd, id4(2), "early", OK);
    struct systest_job w = job_with(id4(2), "q", "dep", 3, false, false);
    w.state = 5; /* waiting */
    w.fails = 1;
    systest_expect_inspect_job(fd, &w);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    fail_job(fd, id4(1), "no", OK);
    systest_add_full(fd, id4(3), "q", TTR, TTL, "late", f("-after=%s -dead=1", id4(1)));
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, "inspect dead-jobs 0 10\r\n", "+OK 0\r\n");
    close(fd);
    systest_stop(&s);
}
END_TEST

static Suite *
retry_suite(void)
{
    const struct systest_group groups[] = {
        {"backoff", {test_backoff_waits, test_flag_errors, test_idempotent_policy, NULL}},
        {"dead", {test_dead_and_revive, test_dead_by_ttr_not_cancel, test_dead_bounds, NULL}},
        {"persist", {test_persist_kill, NULL}},
    };
    return systest_suite("retry", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(retry_suite());
}
