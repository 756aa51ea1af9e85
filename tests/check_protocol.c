/* check_protocol.c - system tests: the real workq-server over TCP, byte-exact
 * against doc protocol-notes sections 1-4 for schedule, run and inspect (the
 * other commands are in check_server.c).
 *
 * Every test starts its own server on 127.0.0.1:0 and stops it at the end, so
 * every test also checks a clean shutdown (exit status 0; under valgrind with
 * --error-exitcode that is where memory errors and leaks show up).
 *
 * Tests check behaviour, never speed. Scheduled times lie 600-1500 ms ahead
 * (scaled by WQ_TEST_SLOW), every wait for a server-side deadline is generous
 * and scaled, and checks that something has NOT happened yet run only when
 * WQ_TEST_SLOW is 1. Times on the wire are UTC; the test compares the
 * server's "now" (created, started) with its own clock within seconds. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TTR     SYSTEST_TTR
#define TTL     SYSTEST_TTL
#define TTL_MAX "18446744073709551615"
#define PARK    "60000"   /* wait of a lease/result/run that must be woken */
#define HOUR_MS 3600000LL

/* Fixed texts for tables (f()'s ring would not outlive a table). */
#define ID1   "00000001-58cc-4372-a567-0e02b2c3d479" /* id4(1) */
#define TTRS  "60000"                                /* TTR */
#define LATER "2999-01-01T00:00:00Z"

static bool
all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* One schedule with a 3-byte payload: exactly one reply, the given one. */
static void
sched_error(int fd, const char *args, const char *reply)
{
    systest_roundtrip(fd, f("schedule %s\r\nabc\r\n", args), reply);
}

/* Send a run; the reply is for the caller to read. */
static void
run_send(int fd, const char *id, const char *name, unsigned ttr, const char *wait,
         const char *payload, const char *flags)
{
    systest_sends(fd, f("run %s %s %u %s %zu%s%s\r\n%s\r\n", id, name, ttr, wait, strlen(payload),
                        flags != NULL ? " " : "", flags != NULL ? flags : "", payload));
}

static void
run_error(int fd, const char *args, const char *reply)
{
    systest_roundtrip(fd, f("run %s\r\nabc\r\n", args), reply);
}

/* Wait until `inspect job id` finds the job (e.g. a run from another
 * connection has been queued). */
static void
wait_job(int fd, const char *id)
{
    for (int tries = 0;; tries++) {
        systest_sends(fd, f("inspect job %s\r\n", id));
        const char *l = systest_read_line(fd);
        if (strcmp(l, "+OK 1") == 0) {
            systest_skip_job_block(fd);
            return;
        }
        ck_assert_str_eq(l, "-NOT-FOUND");
        ck_assert_msg(tries < 500 * systest_slow(), "job %s never appeared", id);
        systest_sleep_ms(10);
    }
}

static void
expect_queue(int fd, const char *name, unsigned ready, unsigned scheduled)
{
    systest_roundtrip(fd, f("inspect queue %s\r\n", name),
                      f("+OK 1\r\n%s", systest_queue_block(name, ready, scheduled)));
}

/* ---- inspect server ---- */

static const char *const server_keys[] = {
    "active-clients", "evicted-jobs", "started",        "version",      "uptime",
    "jobs",           "ready-jobs",   "scheduled-jobs", "leased-jobs",  "completed-jobs",
    "failed-jobs",    "parked-clients", "memory-used",  "allocator",
};
#define NKEYS (sizeof server_keys / sizeof server_keys[0])

/* Read one inspect server reply and check the format of every line. */
static void
expect_server_format(int fd)
{
    systest_expect(fd, "+OK 1\r\n");
    ck_assert_str_eq(systest_read_line(fd), f("server %zu", NKEYS));
    for (size_t i = 0; i < NKEYS; i++) {
        const char *l = systest_read_line(fd);
        size_t kl = strlen(server_keys[i]);
        ck_assert_msg(strncmp(l, server_keys[i], kl) == 0 && l[kl] == ' ',
                      "line %zu of inspect server is \"%s\", want key %s", i + 1, l,
                      server_keys[i]);
        const char *v = l + kl + 1;
        if (strcmp(server_keys[i], "started") == 0)
            systest_check_recent(v);
        else if (strcmp(server_keys[i], "version") == 0)
            ck_assert_str_eq(v, PACKAGE_VERSION);
        else if (strcmp(server_keys[i], "allocator") == 0)
            ck_assert_msg(*v != '\0' && *v != ' ', "allocator \"%s\"", v);
        else
            ck_assert_msg(all_digits(v), "%s is \"%s\", not a number", server_keys[i], v);
    }
}

/* ------------------------------------------------------------------------ */
/* schedule */

START_TEST(test_schedule_becomes_ready)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    int64_t t = systest_ahead(800);
    systest_schedule(fd, id4(1), "q", t, "later");
    if (systest_exact_timing()) {
        /* not before its time */
        systest_roundtrip(fd, "lease q 0\r\n", TO);
        expect_queue(fd, "q", 0, 1);
    }
    /* a parked leaser is woken by the time arriving */
    systest_sends(w, f("lease q %d\r\n", 5000 * systest_slow()));
    if (systest_exact_timing())
        systest_expect_silence(w, 300);
    systest_expect_lease(w, id4(1), "q", "later");
    if (systest_exact_timing())
        ck_assert_msg(systest_now_ms() >= t - 100, "leased %lld ms before its time",
                      (long long)(t - systest_now_ms()));
    systest_expect_silence(w, 0);

    /* without a parked leaser: ready once the time has come */
    t = systest_ahead(600);
    systest_schedule(fd, id4(2), "q", t, "two");
    if (systest_exact_timing())
        systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_sleep_until(t + 300 * systest_slow());
    expect_queue(fd, "q", 1, 0);
    systest_lease_now(fd, "q", id4(2), "two");

    /* a leaser parked on several names, woken by the time on one of them */
    t = systest_ahead(700);
    systest_schedule(fd, id4(3), "r", t, "three");
    systest_sends(w, f("lease a r b %d\r\n", 5000 * systest_slow()));
    if (systest_exact_timing())
        systest_expect_silence(w, 300);
    systest_expect_lease(w, id4(3), "r", "three");
    systest_roundtrip(fd, "lease a r b 0\r\n", TO);

    /* deleted, completed and failed before their time: their time passes
     * without effect (under valgrind: no stale timer) */
    t = systest_ahead(600);
    systest_schedule(fd, id4(4), "d", t, "del");
    systest_schedule(fd, id4(5), "d", t + 10, "done");
    systest_schedule(fd, id4(6), "d", t + 20, "failed");
    systest_schedule(fd, id4(7), "d", t + 30, "stays");
    systest_expect_stats(fd, "jobs", U(7), "scheduled-jobs", U(4), "ready-jobs", U(0), NULL);
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\nc\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("fail %s 1\r\nf\r\n", id4(6)), OK);
    systest_expect_stats(fd, "jobs", U(6), "scheduled-jobs", U(1), "completed-jobs", U(1),
                 "failed-jobs", U(1), NULL);
    systest_sleep_until(t + 30 + 300 * systest_slow());
    systest_expect_stats(fd, "jobs", U(6), "scheduled-jobs", U(0), "ready-jobs", U(1), NULL);
    systest_lease_now(fd, "d", id4(7), "stays");
    systest_roundtrip(fd, "lease d 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(5)), systest_result_reply(id4(5), 1, "c"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(6)), systest_result_reply(id4(6), 0, "f"));
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_past_time)
{
    systest_start_srv();
    int fd = systest_conn();
    /* a past time with time + ttl in the future: ready at once */
    systest_schedule(fd, id4(1), "q", systest_now_ms() - 10000, "past");
    systest_lease_now(fd, "q", id4(1), "past");
    systest_schedule_full(fd, id4(2), "q", TTR, "20000", systest_time_ms(systest_now_ms() - 10000), "barely", NULL);
    systest_lease_now(fd, "q", id4(2), "barely");

    /* time + ttl in the past, or now: Invalid Time, and no job */
    sched_error(fd, f("%s q %u 5000 %s 3", id4(3), TTR, systest_time_ms(systest_now_ms() - 10000)),
                ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3", id4(3), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 1 0001-01-01T00:00:00Z 3", id4(3), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 600000 2020-02-29T23:59:59.999999999Z 3", id4(3), TTR),
                ERR("Invalid Time"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* every accepted form, in the past with the longest ttl: ready at once,
     * in time order; inspect shows the time in whole seconds */
    static const struct {
        const char *in, *shown;
    } good[] = {
        {"2000-01-01T00:00:00.5Z", "2000-01-01T00:00:00Z"},
        {"2024-02-29T12:34:56.000000000Z", "2024-02-29T12:34:56Z"},
        {"1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59Z"},
        {"2000-02-29T23:59:59.123456789Z", "2000-02-29T23:59:59Z"},
        {"0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"},
        {"2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z"},
        {"1999-12-31T23:59:59.9Z", "1999-12-31T23:59:59Z"},
        {"2001-12-31T23:59:59.12Z", "2001-12-31T23:59:59Z"},
        {"1970-01-01T00:00:00.0001Z", "1970-01-01T00:00:00Z"},
    };
    static const unsigned order[] = {5, 3, 9, 7, 6, 1, 4, 8, 2}; /* by time */
    for (unsigned i = 0; i < 9; i++) {
        systest_schedule_full(fd, id4(10 + i), "p", TTR, TTL_MAX, good[i].in, f("g%u", i + 1), NULL);
        struct systest_job j = systest_job(id4(10 + i), "p", f("g%u", i + 1));
        SET(j.ttl, TTL_MAX);
        SET(j.time, good[i].shown);
        systest_expect_inspect_job(fd, &j);
    }
    for (unsigned i = 0; i < 9; i++)
        systest_lease_now(fd, "p", id4(9 + order[i]), f("g%u", order[i]));
    systest_roundtrip(fd, "lease p 0\r\n", TO);

    /* the latest time there is, with ttl 1: accepted, not ready */
    systest_schedule_full(fd, id4(30), "z", TTR, "1", "9999-12-31T23:59:59.999999999Z", "end", NULL);
    struct systest_job j = systest_job(id4(30), "z", "end");
    SET(j.ttl, "1");
    SET(j.time, "9999-12-31T23:59:59Z");
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "lease z 0\r\n", TO);
    expect_queue(fd, "z", 0, 1);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_invalid_time)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const bad[] = {
        "2030-01-01T00:00:00",            /* no Z */
        "2030-01-01T00:00:00z",           /* lowercase z */
        "2030-01-01T00:00:00.1234567890Z", /* 10 fraction digits */
        "2030-01-01T00:00:00,5Z",         /* ',' fraction */
        "2030-02-30T00:00:00Z",           /* Feb 30 */
        "2023-02-29T00:00:00Z",           /* not a leap year */
        "2100-02-29T00:00:00Z",           /* not a leap year either */
        "2030-01-01T24:00:00Z",           /* hour 24 */
        "2030-01-01T00:00Z",              /* missing seconds */
        "2030-01-01T00:00:00.Z",          /* '.' without digits */
        "2030-01-01t00:00:00Z",           /* lowercase t */
        "2030-01-01T00:00:00+00:00",      /* an offset, not Z */
        "2030-01-01T00:00:00.5+01:00",
        "2030-13-01T00:00:00Z",
        "2030-00-01T00:00:00Z",
        "2030-01-00T00:00:00Z",
        "2030-01-32T00:00:00Z",
        "2030-04-31T00:00:00Z",
        "2030-01-01T00:60:00Z",
        "2030-01-01T00:00:60Z",
        "2030-1-01T00:00:00Z",
        "2030-01-01T0:00:00Z",
        "30-01-01T00:00:00Z",
        "+2030-01-01T00:00:00Z",
        "2030-01-01T00:00:00ZZ",
        "2030-01-01T00:00:00.1a3Z",
        "2030-01-01T00:00:00.-1Z",
        "2030/01/01T00:00:00Z",
        "2030-01-01",
        "1893456000",
        "Z",
        "2030-01-01T00:00:0aZ",
        "2030-01-01T00:00:00.5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        sched_error(fd, f("%s q %u %s %s 3", id4(1), TTR, TTL, bad[i]), ERR("Invalid Time"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);

    /* arguments left to right: id, name, ttr, ttl come before the time */
    sched_error(fd, "bad q 0 0 nope 3", ERR("Invalid ID"));
    sched_error(fd, f("%s a*b 0 0 nope 3", id4(1)), ERR("Invalid Name"));
    sched_error(fd, f("%s q 0 0 nope 3", id4(1)), ERR("Invalid TTR"));
    sched_error(fd, f("%s q %u 0 nope 3", id4(1), TTR), ERR("Invalid TTL"));
    /* the time comes before the flags */
    sched_error(fd, f("%s q %u %s nope 3 -prioirty=1", id4(1), TTR, TTL), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u %s nope 3 -priority=x", id4(1), TTR, TTL), ERR("Invalid Time"));
    /* the flags come before "time + ttl in the past" */
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -prioirty=1", id4(1), TTR),
                ERR("Invalid command flags"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -priority=x", id4(1), TTR),
                ERR("Invalid Priority"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -max-fails=256", id4(1), TTR),
                ERR("Invalid Max Fails"));
    /* and "time + ttl in the past" before Duplicate job */
    systest_add(fd, id4(2), "q", "dup");
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3", id4(2), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(systest_ahead(HOUR_MS))),
                ERR("Duplicate job"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    systest_lease_now(fd, "q", id4(2), "dup");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_args)
{
    systest_start_srv();
    int fd = systest_conn();
    /* wrong number of positional tokens: no data block is read */
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " 3\r\nabc\r\n",
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " 1 3\r\nabc\r\n",
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "schedule " ID1 "\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " -priority=1\r\n",
                      ERR("Invalid command args")); /* only 5 positional */
    /* the size, before anything else */
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " +3\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule bad q 0 0 nope x\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    /* the block is read, then exactly one error */
    static const struct {
        const char *args, *error;
    } bad[] = {
        {"bad q " TTRS " " TTL " " LATER " 3", "Invalid ID"},
        {"00000000-0000-0000-0000-000000000000 q " TTRS " " TTL " " LATER " 3", "Invalid ID"},
        {ID1 " a*b " TTRS " " TTL " " LATER " 3", "Invalid Name"},
        {ID1 " q 0 " TTL " " LATER " 3", "Invalid TTR"},
        {ID1 " q 86400001 " TTL " " LATER " 3", "Invalid TTR"},
        {ID1 " q " TTRS " 0 " LATER " 3", "Invalid TTL"},
        {ID1 " q " TTRS " 18446744073709551616 " LATER " 3", "Invalid TTL"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -priority=2147483648", "Invalid Priority"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -max-attempts=256", "Invalid Max Attempts"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -max-fails=-1", "Invalid Max Fails"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -ttl=5", "Invalid command flags"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -time=5", "Invalid command flags"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -priority=1 -priority=1", "Invalid command flags"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        sched_error(fd, bad[i].args, f("-CLIENT-ERROR %s\r\n", bad[i].error));
    sched_error(fd, f("%s %s %u %s %s 3", id4(1), systest_name_of(256, 'n'), TTR, TTL, LATER),
                ERR("Invalid Name"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);

    /* flags anywhere, and they take effect */
    int64_t t = systest_now_ms() + HOUR_MS;
    systest_roundtrip(fd, f("schedule -priority=-4 %s q 1000 %s %s -max-attempts=7 -max-fails=9 "
                            "5\r\nflags\r\n",
                            id4(2), TTL, systest_time_ms(t)),
                      OK);
    struct systest_job j = systest_job(id4(2), "q", "flags");
    j.ttr = 1000;
    j.priority = -4;
    j.max_attempts = 7;
    j.max_fails = 9;
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    /* an uppercase id, a binary payload, an empty payload */
    systest_sends(fd, f("schedule 0000000A-58CC-4372-A567-0E02B2C3D479 q %u %s %s 4\r\n", TTR, TTL,
                        systest_time_ms(t)));
    systest_send(fd, "a\r\n\0", 4);
    systest_roundtrip(fd, "\r\n", OK);
    systest_schedule_full(fd, id4(11), "q", TTR, TTL, systest_time_ms(t), "", NULL);
    j = systest_job_bin(id4(10), "q", "a\r\n\0", 4);
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    j = systest_job(id4(11), "q", "");
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_order)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t now = systest_now_ms();
    /* equal priority: unscheduled (FIFO), then scheduled by time, then FIFO */
    systest_add(fd, id4(1), "q", "a1");
    systest_schedule(fd, id4(2), "q", now - 20000, "s1");
    systest_add(fd, id4(3), "q", "a2");
    systest_schedule(fd, id4(4), "q", now - 30000, "s2");
    systest_schedule(fd, id4(5), "q", now - 30000, "s3");
    systest_schedule(fd, id4(6), "q", now - 20001, "s4");
    /* a higher priority wins over everything of a lower one */
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(now - 1000), "hs", "-priority=5");
    systest_add_full(fd, id4(8), "q", TTR, TTL, "h1", "-priority=5");
    systest_schedule_full(fd, id4(9), "q", TTR, TTL, systest_time_ms(now - 50000), "hs2", "-priority=5");
    systest_add_full(fd, id4(10), "q", TTR, TTL, "l1", "-priority=-1");
    systest_schedule_full(fd, id4(11), "q", TTR, TTL, systest_time_ms(now - 90000), "ls", "-priority=-1");
    static const unsigned order[] = {8, 9, 7, 1, 3, 4, 5, 6, 2, 10, 11};
    static const char *const pay[] = {"",   "a1", "s1", "a2", "s2",  "s3",
                                      "s4", "hs", "h1", "hs2", "l1", "ls"};
    for (size_t i = 0; i < 11; i++)
        systest_lease_now(fd, "q", id4(order[i]), pay[order[i]]);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* scheduled jobs that become ready later still rank after unscheduled
     * ones that came after them, and among themselves by time, not arrival */
    int64_t t = systest_ahead(700);
    systest_schedule(fd, id4(20), "r", t + 100, "x1");
    systest_schedule(fd, id4(21), "r", t, "x2");
    systest_schedule_full(fd, id4(22), "r", TTR, TTL, systest_time_ms(t + 200), "xp", "-priority=1");
    systest_sleep_until(t + 200 + 300 * systest_slow());
    systest_add(fd, id4(23), "r", "late");
    systest_lease_now(fd, "r", id4(22), "xp");
    systest_lease_now(fd, "r", id4(23), "late");
    systest_lease_now(fd, "r", id4(21), "x2");
    systest_lease_now(fd, "r", id4(20), "x1");
    systest_roundtrip(fd, "lease r 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_order_fraction)
{
    systest_start_srv();
    int fd = systest_conn();
    /* scheduled time, to the last of its 9 fraction digits: both jobs are
     * ready, same priority; the earlier time goes first, not the earlier
     * arrival */
    systest_schedule_full(fd, id4(1), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.0009Z", "later", NULL);
    systest_schedule_full(fd, id4(2), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.0001Z", "sooner", NULL);
    systest_schedule_full(fd, id4(3), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.000000002Z", "n2", NULL);
    systest_schedule_full(fd, id4(4), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.000000001Z", "n1", NULL);
    systest_lease_now(fd, "q", id4(4), "n1");
    systest_lease_now(fd, "q", id4(3), "n2");
    systest_lease_now(fd, "q", id4(2), "sooner");
    systest_lease_now(fd, "q", id4(1), "later");
    /* the same for jobs not due yet: soonest first */
    systest_schedule_full(fd, id4(5), "s", TTR, TTL, "2999-01-01T00:00:00.0009Z", "later", NULL);
    systest_schedule_full(fd, id4(6), "s", TTR, TTL, "2999-01-01T00:00:00.0001Z", "sooner", NULL);
    systest_roundtrip(fd, "inspect scheduled-jobs s 0 1\r\n", "+OK 1\r\n");
    struct systest_job j = systest_job(id4(6), "s", "sooner");
    SET(j.time, "2999-01-01T00:00:00Z");
    systest_expect_job_block(fd, &j);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_ttl)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    /* expires at time + ttl, not at accept + ttl */
    int64_t t0 = systest_now_ms();
    int64_t t = t0 + 600 * systest_slow();
    int ttl = 700 * systest_slow();
    systest_schedule_full(fd, id4(1), "q", TTR, f("%d", ttl), systest_time_ms(t), "ttl", NULL);
    systest_sends(w, f("lease q %d\r\n", 5000 * systest_slow()));
    systest_expect_lease(w, id4(1), "q", "ttl");
    if (systest_exact_timing()) {
        /* past accept + ttl, before time + ttl: still there */
        systest_sleep_until(t0 + 1000);
        struct systest_job j = systest_job(id4(1), "q", "ttl");
        SET(j.ttl, f("%d", ttl));
        j.attempts = 1;
        j.state = LEASED;
        SET(j.time, systest_time_s(t));
        systest_expect_inspect_job(fd, &j);
    }
    systest_sleep_until(t + ttl + 300 * systest_slow());
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_expect_stats(fd, "evicted-jobs", U(1), "jobs", U(0), NULL);

    /* a past time: the TTL still counts from it; never leased */
    t0 = systest_now_ms();
    systest_schedule_full(fd, id4(2), "q", TTR, f("%d", 10000 + 600 * systest_slow()), systest_time_ms(t0 - 10000), "old",
               NULL);
    expect_queue(fd, "q", 1, 0);
    systest_sleep_until(t0 + 900 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* one that expires before its time ever comes */
    t = systest_ahead(1500);
    systest_schedule_full(fd, id4(3), "s", TTR, "1", systest_time_ms(t), "never", NULL);
    expect_queue(fd, "s", 0, 1);
    systest_sleep_until(t + 300 * systest_slow());
    systest_roundtrip(fd, "lease s 0\r\n", TO);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_expect_stats(fd, "evicted-jobs", U(3), "jobs", U(0), "scheduled-jobs", U(0), NULL);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_duplicate_and_states)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t t = systest_now_ms() + HOUR_MS;
    /* Duplicate job between schedule, add and run, in every direction */
    systest_schedule(fd, id4(1), "s", t, "one");
    sched_error(fd, f("%s s %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t)), ERR("Duplicate job"));
    sched_error(fd, f("%s other %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t - 5000)),
                ERR("Duplicate job"));
    sched_error(fd, f("%s s %u %s %s 3", "00000001-58CC-4372-A567-0E02B2C3D479", TTR, TTL,
                      systest_time_ms(t)),
                ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s s %u %s 3\r\nabc\r\n", id4(1), TTR, TTL),
                      ERR("Duplicate job"));
    run_error(fd, f("%s s %u 1000 3", id4(1), TTR), ERR("Duplicate job"));
    run_error(fd, f("%s s %u 0 3", id4(1), TTR), ERR("Duplicate job"));
    systest_add(fd, id4(2), "s", "two");
    sched_error(fd, f("%s s %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(t)), ERR("Duplicate job"));
    /* argument errors come first */
    sched_error(fd, f("%s s 0 %s %s 3", id4(1), TTL, systest_time_ms(t)), ERR("Invalid TTR"));
    /* the original is untouched */
    struct systest_job j = systest_job(id4(1), "s", "one");
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    systest_lease_now(fd, "s", id4(2), "two");
    /* completed and failed jobs keep their ids */
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(2)), OK);
    sched_error(fd, f("%s s %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(t)), ERR("Duplicate job"));

    /* a job that is not due yet can be completed: it never becomes ready */
    systest_roundtrip(fd, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "done"));
    j.state = COMPLETED;
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "inspect queue s\r\n", NF);
    systest_roundtrip(fd, "inspect scheduled-jobs s 0 10\r\n", NF);
    sched_error(fd, f("%s s %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t)), ERR("Duplicate job"));

    /* a fail with retries left before the time: back to the scheduled jobs */
    systest_schedule_full(fd, id4(3), "s", TTR, TTL, systest_time_ms(t), "retry", "-max-fails=3");
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id4(3)), OK);
    j = systest_job(id4(3), "s", "retry");
    j.max_fails = 3;
    j.fails = 1;
    j.state = PENDING;
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_list(fd, "scheduled-jobs", "s", "0 10", &j, 1);
    systest_expect_inspect_list(fd, "jobs", "s", "0 10", NULL, 0);
    systest_roundtrip(fd, "lease s 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), TO);
    /* and a final fail */
    systest_schedule_full(fd, id4(4), "s", TTR, TTL, systest_time_ms(t), "final", NULL);
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), systest_result_reply(id4(4), 0, "bad"));
    expect_queue(fd, "s", 0, 1);
    /* a scheduled job can be deleted; its id is free again */
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, "inspect queue s\r\n", NF);
    systest_schedule(fd, id4(3), "s", systest_now_ms() - 1000, "again");
    systest_lease_now(fd, "s", id4(3), "again");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* run */

START_TEST(test_run_complete)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "a b\r\nc", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()), systest_lease_reply(id4(1), "q", TTR,
                                                                            "a b\r\nc"));
    struct systest_job j = systest_job_run(id4(1), "q", "a b\r\nc");
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    systest_roundtrip(w, f("complete %s 6\r\nok\r\n!!\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "ok\r\n!!"));
    /* removed after the reply */
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), NF);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(1)), NF);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* a leaser already parked gets it at once; an empty result */
    systest_sends(w, "lease q " PARK "\r\n");
    systest_wait_queue(fd, "q");
    run_send(r, id4(2), "q", 1234, PARK, "", NULL);
    systest_expect(w, f("+OK 1\r\n%s q 1234 0\r\n\r\n", id4(2)));
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 1, ""));

    /* its pipeline is held until the reply */
    systest_sends(r, f("run %s q %u %s 1\r\nx\r\ninspect job %s\r\ndelete %s\r\n", id4(3), TTR,
                       PARK, id4(3), id4(3)));
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(3), "q", TTR, "x"));
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    systest_roundtrip(w, f("complete %s 1\r\ny\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, "y"));
    systest_expect(r, NF NF);
    /* the id is free again */
    systest_add(fd, id4(3), "q", "reuse");
    systest_lease_now(fd, "q", id4(3), "reuse");

    /* a wait-timeout that ends after the lease does not matter any more */
    run_send(r, id4(4), "q", TTR, f("%d", 300 * systest_slow()), "w", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(4), "q", TTR, "w"));
    systest_sleep_past(300);
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(4)), OK);
    systest_expect(r, systest_result_reply(id4(4), 1, "late"));
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_fail)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* a fail is final at once (max-fails 0), result flag 0 */
    run_send(r, id4(1), "q", TTR, PARK, "job", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(1), "q", TTR, "job"));
    systest_roundtrip(w, f("fail %s 5\r\nno\r\nx\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 0, "no\r\nx"));
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* an empty fail */
    run_send(r, id4(2), "q", TTR, PARK, "job2", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "job2"));
    systest_roundtrip(w, f("fail %s 0\r\n\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 0, ""));
    /* complete and fail need no lease: a job answered while still queued */
    run_send(r, id4(3), "q", TTR, PARK, "job3", NULL);
    wait_job(fd, id4(3));
    systest_roundtrip(fd, f("fail %s 1\r\nE\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 0, "E"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_timeout_unleased)
{
    systest_start_srv();
    int r = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, "300", "x", NULL);
    if (systest_exact_timing())
        systest_expect_silence(r, 150);
    systest_expect(r, TO);
    /* the job is gone */
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* the id is free, the connection usable */
    run_send(r, id4(1), "q", TTR, "100", "y", NULL);
    systest_expect(r, TO);
    systest_add(fd, id4(1), "q", "reuse");
    systest_lease_now(fd, "q", id4(1), "reuse");
    /* a result waiter learns that the job is gone */
    int res = systest_conn();
    run_send(r, id4(2), "q", TTR, f("%d", 500 * systest_slow()), "z", NULL);
    wait_job(fd, id4(2));
    systest_roundtrip(res, f("result %s 0\r\n", id4(2)), TO);
    systest_sends(res, f("result %s " PARK "\r\n", id4(2)));
    systest_expect(r, TO);
    systest_expect(res, NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(res);
    close(r);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_timeout_leased)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", 300, PARK, "x", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(1), "q", 300, "x"));
    if (systest_exact_timing())
        systest_expect_silence(r, 150);
    /* the TTR ends: -TIMEOUT, and the job is not queued again */
    systest_expect(r, TO);
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* nor does a late worker find anything after a fail */
    run_send(r, id4(2), "q", 200, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", 200, "y"));
    systest_expect(r, TO);
    systest_roundtrip(w, f("fail %s 0\r\n\r\n", id4(2)), NF);
    /* a result waiter learns that the job is gone */
    int res = systest_conn();
    run_send(r, id4(3), "q", 300, PARK, "z", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(3), "q", 300, "z"));
    systest_sends(res, f("result %s " PARK "\r\n", id4(3)));
    systest_expect(r, TO);
    systest_expect(res, NF);
    close(res);
    systest_expect_stats(fd, "jobs", U(0), "leased-jobs", U(0), NULL);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_disconnect)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    /* waiting to be leased: the job goes with the client */
    int r = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    close(r);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        systest_sends(fd, f("inspect job %s\r\n", id4(1)));
        if (strcmp(systest_read_line(fd), "-NOT-FOUND") == 0)
            break;
        systest_skip_job_block(fd);
        systest_sleep_ms(20);
    }
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* leased: the worker's complete finds nothing */
    r = systest_conn();
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "y"));
    close(r);
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(2)), NF);

    /* EOF (half close): no reply, the connection is closed, the job gone */
    r = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    ck_assert_int_eq(shutdown(r, SHUT_WR), 0);
    systest_expect_closed(r);
    close(r);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* a result waiter on the job learns that it is gone */
    r = systest_conn();
    int res = systest_conn();
    run_send(r, id4(4), "q", TTR, PARK, "r", NULL);
    wait_job(fd, id4(4));
    systest_sends(res, f("result %s " PARK "\r\n", id4(4)));
    systest_sleep_ms(100 * systest_slow());
    close(r);
    systest_expect(res, NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(4)), NF);
    close(res);
    systest_expect_stats(fd, "jobs", U(0), "ready-jobs", U(0), "leased-jobs", U(0), NULL);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_delete)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* deleted while queued: -NOT-FOUND at once */
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_expect(r, NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* deleted while leased */
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "y"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_expect(r, NF);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), NF);
    /* with a result waiter: both learn it */
    int res = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    systest_sends(res, f("result %s " PARK "\r\n", id4(3)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_expect(r, NF);
    systest_expect(res, NF);
    close(res);
    /* the run connection is usable afterwards */
    systest_sync(r);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_two_waiters)
{
    systest_start_srv();
    int r = systest_conn(), res = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_sends(res, f("result %s " PARK "\r\n", id4(1)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(1), "q", TTR, "x"));
    if (systest_exact_timing()) {
        systest_expect_silence(r, 50);
        systest_expect_silence(res, 0);
    }
    systest_roundtrip(w, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "done"));
    systest_expect(res, systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), NF);

    /* the same with a fail, two result waiters */
    int res2 = systest_conn();
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    wait_job(fd, id4(2));
    systest_sends(res, f("result %s " PARK "\r\n", id4(2)));
    systest_sends(res2, f("result %s " PARK "\r\n", id4(2)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(2), "q", TTR, "y"));
    systest_roundtrip(w, f("fail %s 3\r\nbad\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 0, "bad"));
    systest_expect(res, systest_result_reply(id4(2), 0, "bad"));
    systest_expect(res2, systest_result_reply(id4(2), 0, "bad"));

    /* a result waiter that leaves changes nothing */
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    systest_sends(res2, f("result %s " PARK "\r\n", id4(3)));
    systest_sleep_ms(100 * systest_slow());
    close(res2);
    systest_sleep_ms(50 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(3), "q", TTR, "z"));
    systest_roundtrip(w, f("complete %s 1\r\nZ\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, "Z"));
    close(r);
    close(res);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_wait_zero)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* no parked leaser: -TIMEOUT at once, no job left */
    systest_roundtrip(r, f("run %s q %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* a leaser parked on another name does not count, and gets nothing */
    systest_sends(w, "lease other " PARK "\r\n");
    systest_wait_queue(fd, "other");
    systest_roundtrip(r, f("run %s q %u 00 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_roundtrip(r, f("run %s Other %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_expect_silence(w, 50);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    /* a ready job in the queue does not count either: it is no leaser */
    systest_add(fd, id4(2), "q", "queued");
    systest_roundtrip(r, f("run %s q %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_lease_now(fd, "q", id4(2), "queued");
    /* with a leaser parked on it: leased to that leaser */
    systest_add(fd, id4(3), "other", "wake");
    systest_expect_lease(w, id4(3), "other", "wake");
    systest_sends(w, "lease x q y " PARK "\r\n");
    systest_wait_queue(fd, "x");
    run_send(r, id4(1), "q", TTR, "0", "abc", NULL);
    systest_expect_lease(w, id4(1), "q", "abc");
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    struct systest_job j = systest_job_run(id4(1), "q", "abc");
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "ok"));
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);

    /* a leaser that has left does not count */
    int g = systest_conn();
    systest_sends(g, "lease ghost " PARK "\r\n");
    systest_wait_queue(fd, "ghost");
    close(g);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        systest_sends(fd, "inspect queue ghost\r\n");
        if (strcmp(systest_read_line(fd), "-NOT-FOUND") == 0)
            break;
        for (int k = 0; k < 3; k++)
            systest_read_line(fd);
        systest_sleep_ms(20);
    }
    systest_roundtrip(r, f("run %s ghost %u 0 1\r\ng\r\n", id4(5), TTR), TO);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(5)), NF);
    /* two parked leasers: the first one gets it */
    int w2 = systest_conn();
    systest_sends(w, "lease two " PARK "\r\n");
    systest_wait_queue(fd, "two");
    systest_sleep_ms(50 * systest_slow());
    systest_sends(w2, "lease two " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    run_send(r, id4(6), "two", TTR, "0", "fcfs", NULL);
    systest_expect_lease(w, id4(6), "two", "fcfs");
    systest_expect_silence(w2, 50);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(6)), OK);
    systest_expect(r, systest_result_reply(id4(6), 1, ""));
    close(w2);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_order)
{
    systest_start_srv();
    int r1 = systest_conn(), r2 = systest_conn(), r3 = systest_conn(), fd = systest_conn();
    /* run jobs rank like add jobs: priority, then FIFO */
    systest_add(fd, id4(1), "q", "a1");
    run_send(r1, id4(2), "q", TTR, PARK, "r1", "-priority=5");
    wait_job(fd, id4(2));
    run_send(r2, id4(3), "q", TTR, PARK, "r2", NULL);
    wait_job(fd, id4(3));
    systest_add(fd, id4(4), "q", "a2");
    run_send(r3, id4(5), "q", TTR, PARK, "r3", "-priority=-2147483648");
    wait_job(fd, id4(5));
    int64_t ts = systest_now_ms() - 1000;
    systest_schedule(fd, id4(6), "q", ts, "s1");
    struct systest_job jobs[6] = {systest_job_run(id4(2), "q", "r1"), systest_job(id4(1), "q", "a1"),
                         systest_job_run(id4(3), "q", "r2"), systest_job(id4(4), "q", "a2"),
                         systest_job(id4(6), "q", "s1"),     systest_job_run(id4(5), "q", "r3")};
    jobs[0].priority = 5;
    SET(jobs[4].time, systest_time_s(ts));
    jobs[5].priority = INT32_MIN;
    systest_expect_inspect_list(fd, "jobs", "q", "0 10", jobs, 6);
    systest_lease_now(fd, "q", id4(2), "r1");
    systest_lease_now(fd, "q", id4(1), "a1");
    systest_lease_now(fd, "q", id4(3), "r2");
    systest_lease_now(fd, "q", id4(4), "a2");
    systest_lease_now(fd, "q", id4(6), "s1");
    systest_lease_now(fd, "q", id4(5), "r3");
    systest_roundtrip(fd, f("complete %s 1\r\n1\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\n2\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\n3\r\n", id4(5)), OK);
    systest_expect(r1, systest_result_reply(id4(2), 1, "1"));
    systest_expect(r2, systest_result_reply(id4(3), 1, "2"));
    systest_expect(r3, systest_result_reply(id4(5), 1, "3"));
    close(r1);
    close(r2);
    close(r3);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    static const struct {
        const char *args, *error;
    } bad[] = {
        {"bad q " TTRS " 1000 3", "Invalid ID"},
        {"00000000-0000-0000-0000-000000000000 q " TTRS " 1000 3", "Invalid ID"},
        {"0000000158cc4372a5670e02b2c3d479 q " TTRS " 1000 3", "Invalid ID"},
        {ID1 " a*b " TTRS " 1000 3", "Invalid Name"},
        {ID1 " q 0 1000 3", "Invalid TTR"},
        {ID1 " q 86400001 1000 3", "Invalid TTR"},
        {ID1 " q +5 1000 3", "Invalid TTR"},
        {ID1 " q " TTRS " 86400001 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " abc 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " -1 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " +1 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " 18446744073709551616 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " 1000 3 -max-attempts=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -max-fails=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -prioirty=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=1 -priority=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -ttl=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=x", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=2147483648", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=-2147483649", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=1=2", "Invalid Priority"},
        /* left to right, positional before flags */
        {"bad a*b 0 x 3 -max-attempts=1", "Invalid ID"},
        {ID1 " a*b 0 x 3 -max-attempts=1", "Invalid Name"},
        {ID1 " q 0 x 3 -max-attempts=1", "Invalid TTR"},
        {ID1 " q " TTRS " x 3 -max-attempts=1", "Invalid wait timeout"},
        {ID1 " q " TTRS " 1000 3 -priority=x -max-attempts=1", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -max-attempts=1 -priority=x", "Invalid command flags"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        run_error(fd, bad[i].args, f("-CLIENT-ERROR %s\r\n", bad[i].error));
    /* the size: no data block is read */
    static const char *const bad_size[] = {"+3", "-3", "abc", "18446744073709551616", "3a"};
    for (size_t i = 0; i < sizeof bad_size / sizeof bad_size[0]; i++)
        systest_roundtrip(fd, f("run %s q %u 1000 %s\r\nabc\r\n", id4(1), TTR, bad_size[i]),
                          ERR("Invalid payload size") ERR("Unknown command"));
    /* the number of positional tokens */
    systest_roundtrip(fd, f("run %s q %u 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, f("run %s q %u 1000 5 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "run\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* Duplicate job: an existing job, or a run job still waiting */
    systest_add(fd, id4(2), "q", "dup");
    run_error(fd, f("%s %s %u 1000 3", id4(1), systest_name_of(256, 'n'), TTR),
              ERR("Invalid Name"));
    run_error(fd, f("%s q %u 1000 3", id4(2), TTR), ERR("Duplicate job"));
    int r = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "run", NULL);
    wait_job(fd, id4(3));
    run_error(fd, f("%s q %u 1000 3", id4(3), TTR), ERR("Duplicate job"));
    run_error(fd, f("%s q %u 0 3", id4(3), TTR), ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s q %u %s 3\r\nabc\r\n", id4(3), TTR, TTL),
                      ERR("Duplicate job"));
    sched_error(fd, f("%s q %u %s %s 3", id4(3), TTR, TTL, systest_time_ms(systest_ahead(HOUR_MS))),
                ERR("Duplicate job"));
    /* neither original was touched; the limits are accepted */
    systest_lease_now(fd, "q", id4(2), "dup");
    systest_lease_now(fd, "q", id4(3), "run");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, ""));
    run_send(r, id4(4), systest_name_of(255, 'n'), 86400000, "86400000", "lim",
             "-priority=2147483647");
    systest_roundtrip(fd, f("lease %s %d\r\n", systest_name_of(255, 'n'), 5000 * systest_slow()),
                      systest_lease_reply(id4(4), systest_name_of(255, 'n'), 86400000, "lim"));
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(4)), OK);
    systest_expect(r, systest_result_reply(id4(4), 0, ""));
    close(r);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* inspect server */

START_TEST(test_inspect_server_format)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_sends(fd, "inspect server\r\n");
    expect_server_format(fd);
    static const char *const zero[] = {"evicted-jobs", "jobs",           "ready-jobs",
                                       "scheduled-jobs", "leased-jobs", "completed-jobs",
                                       "failed-jobs",  "parked-clients"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        ck_assert_msg(systest_server_stat(fd, zero[i]) == 0, "%s is not 0 on a new server",
                      zero[i]);
    ck_assert_uint_eq(systest_server_stat(fd, "active-clients"), 1);
    ck_assert_uint_gt(systest_server_stat(fd, "memory-used"), 0);
    /* active-clients counts open connections */
    int a = systest_conn(), b = systest_conn();
    systest_sync(a);
    systest_sync(b);
    systest_expect_stats(fd, "active-clients", U(3), NULL);
    close(a);
    close(b);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        if (systest_server_stat(fd, "active-clients") == 1)
            break;
        systest_sleep_ms(20);
    }
    systest_expect_stats(fd, "active-clients", U(1), NULL);
    /* pipelined twice, with a blank line and a bare LF */
    systest_sends(fd, "inspect server\r\n\r\n  inspect   server  \n");
    expect_server_format(fd);
    expect_server_format(fd);
    systest_sync(fd);
    /* flags and arguments are errors */
    systest_roundtrip(fd, "inspect server -a=b\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect -a=b server\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect server x\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect server 0 10\r\n", ERR("Invalid command args"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_server_counters)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add(fd, id4(1), "q", "r1");
    systest_add(fd, id4(2), "q", "r2");
    systest_schedule(fd, id4(3), "q", systest_now_ms() + HOUR_MS, "s1");
    systest_add(fd, id4(4), "l", "l1");
    systest_lease_now(fd, "l", id4(4), "l1");
    systest_add(fd, id4(5), "c", "c1");
    systest_roundtrip(fd, f("complete %s 1\r\nc\r\n", id4(5)), OK);
    systest_add(fd, id4(6), "f", "f1");
    systest_roundtrip(fd, f("fail %s 1\r\nf\r\n", id4(6)), OK);
    systest_sends(w, "lease none " PARK "\r\n");
    systest_wait_queue(fd, "none");
    systest_expect_stats(fd, "active-clients", U(2), "evicted-jobs", U(0), "jobs", U(6),
                 "ready-jobs", U(2), "scheduled-jobs", U(1), "leased-jobs", U(1),
                 "completed-jobs", U(1), "failed-jobs", U(1), "parked-clients", U(1), NULL);
    /* the parked leaser takes a job: one leased more, no one parked */
    systest_add(fd, id4(7), "none", "n");
    systest_expect_lease(w, id4(7), "none", "n");
    systest_expect_stats(fd, "jobs", U(7), "ready-jobs", U(2), "leased-jobs", U(2),
                 "parked-clients", U(0), NULL);
    /* a retried fail and a TTR expiry: ready again */
    systest_roundtrip(fd, f("delete %s\r\n", id4(7)), OK);
    systest_add_full(fd, id4(8), "t", 100, TTL, "t", NULL);
    systest_roundtrip(fd, "lease t 0\r\n", systest_lease_reply(id4(8), "t", 100, "t"));
    systest_sleep_past(100);
    systest_expect_stats(fd, "jobs", U(7), "ready-jobs", U(3), "leased-jobs", U(1), NULL);
    /* TTL: an unfinished job is evicted, a finished one is not */
    systest_add_full(fd, id4(9), "e", TTR, "200", "e1", NULL);
    systest_add_full(fd, id4(10), "e", TTR, "200", "e2", NULL);
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(10)), OK);
    systest_add_full(fd, id4(11), "e", TTR, "200", "e3", NULL);
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(11)), OK);
    systest_add_full(fd, id4(12), "e", TTR, "200", "e4", NULL);
    systest_lease_now(fd, "e", id4(9), "e1");
    systest_expect_stats(fd, "jobs", U(11), "completed-jobs", U(2), "failed-jobs", U(2), NULL);
    systest_sleep_past(200);
    systest_expect_stats(fd, "evicted-jobs", U(2), "jobs", U(7), "ready-jobs", U(3),
                 "scheduled-jobs", U(1), "leased-jobs", U(1), "completed-jobs", U(1),
                 "failed-jobs", U(1), NULL);
    /* delete takes from every counter */
    for (unsigned i = 1; i <= 8; i++)
        if (i != 7)
            systest_roundtrip(fd, f("delete %s\r\n", id4(i)), OK);
    systest_expect_stats(fd, "active-clients", U(2), "evicted-jobs", U(2), "jobs", U(0),
                 "ready-jobs", U(0), "scheduled-jobs", U(0), "leased-jobs", U(0),
                 "completed-jobs", U(0), "failed-jobs", U(0), "parked-clients", U(0), NULL);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* inspect queues / queue */

START_TEST(test_inspect_queues)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_roundtrip(fd, "inspect queues 0 10\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    int64_t later = systest_now_ms() + HOUR_MS;
    systest_add(fd, id4(1), "b.x", "1");
    systest_add(fd, id4(2), "a", "2");
    systest_add(fd, id4(3), "a", "3");
    systest_schedule(fd, id4(4), "a", later, "4");
    systest_schedule(fd, id4(5), "b", later, "5");
    systest_add(fd, id4(6), "B", "6");
    systest_add(fd, id4(7), "c", "7"); /* completed: the queue is gone */
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(7)), OK);
    systest_add(fd, id4(8), "d", "8"); /* leased only: the queue stays */
    systest_lease_now(fd, "d", id4(8), "8");
    systest_add(fd, id4(9), "gone", "9"); /* deleted */
    systest_roundtrip(fd, f("delete %s\r\n", id4(9)), OK);
    systest_sends(w, "lease e " PARK "\r\n"); /* a parked leaser only */
    systest_wait_queue(fd, "e");
    systest_schedule(fd, id4(10), "a-", systest_now_ms() - 1000, "10"); /* past: ready */

    enum { NQ = 7 };
    static const struct {
        const char *name;
        unsigned    ready, scheduled;
    } want[NQ] = {{"B", 1, 0}, {"a", 2, 1}, {"a-", 1, 0}, {"b", 0, 1},
                  {"b.x", 1, 0}, {"d", 0, 0}, {"e", 0, 0}};
    char blocks[NQ][64];
    for (int i = 0; i < NQ; i++)
        SET(blocks[i], systest_queue_block(want[i].name, want[i].ready, want[i].scheduled));
    struct sb all = {0};
    for (int i = 0; i < NQ; i++)
        sb_add(&all, blocks[i]);
    systest_roundtrip(fd, "inspect queues 0 1000\r\n", f("+OK %d\r\n%s", NQ, all.p));
    systest_roundtrip(fd, "inspect queues 0 7\r\n", f("+OK %d\r\n%s", NQ, all.p));
    systest_roundtrip(fd, "inspect queues 00 0010\r\n", f("+OK %d\r\n%s", NQ, all.p));
    free(all.p);
    /* every window */
    for (int off = 0; off <= NQ + 1; off++)
        for (int lim = 1; lim <= NQ + 1; lim++) {
            struct sb e = {0};
            int n = 0;
            for (int i = off; i < NQ && i < off + lim; i++, n++)
                sb_add(&e, blocks[i]);
            systest_roundtrip(fd, f("inspect queues %d %d\r\n", off, lim),
                              f("+OK %d\r\n%s", n, e.p != NULL ? e.p : ""));
            free(e.p);
        }
    systest_roundtrip(fd, "inspect queues 4294967295 1000\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect queues 1000 1\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect queues 0004294967295 0001000\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect queues 06 01\r\n", f("+OK 1\r\n%s", blocks[6]));
    /* one queue */
    for (int i = 0; i < NQ; i++)
        systest_roundtrip(fd, f("inspect queue %s\r\n", want[i].name),
                          f("+OK 1\r\n%s", blocks[i]));
    static const char *const absent[] = {"c", "gone", "A", "b.", "zzz", "a.", "e.x"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        systest_roundtrip(fd, f("inspect queue %s\r\n", absent[i]), NF);
    /* the leased job completes, the leaser leaves: both queues go */
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(8)), OK);
    close(w);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        systest_sends(fd, "inspect queue e\r\n");
        if (strcmp(systest_read_line(fd), "-NOT-FOUND") == 0)
            break;
        for (int k = 0; k < 3; k++)
            systest_read_line(fd);
        systest_sleep_ms(20);
    }
    systest_roundtrip(fd, "inspect queue d\r\n", NF);
    systest_roundtrip(fd, "inspect queue e\r\n", NF);
    /* leasing and deleting change the lengths */
    systest_lease_now(fd, "a", id4(2), "2");
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(10)), OK);
    systest_roundtrip(fd, "inspect queues 0 10\r\n",
                      f("+OK 4\r\n%s%s%s%s", systest_queue_block("B", 1, 0), systest_queue_block("a", 1, 0),
                        systest_queue_block("b", 0, 1), systest_queue_block("b.x", 1, 0)));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_queues_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "x");
    struct {
        const char *cmd, *error;
    } bad[] = {
        {"inspect queues", "Invalid command args"},
        {"inspect queues 0", "Invalid command args"},
        {"inspect queues 0 1 2", "Invalid command args"},
        {"inspect queues 0 1 -a=b", "Invalid command args"},
        {"inspect queues -a=b 0 1", "Invalid command args"},
        {"inspect queues 4294967296 1", "Invalid cursor offset"},
        {"inspect queues 18446744073709551616 1", "Invalid cursor offset"},
        {"inspect queues -1 1", "Invalid cursor offset"},
        {"inspect queues +1 1", "Invalid cursor offset"},
        {"inspect queues x 1", "Invalid cursor offset"},
        {"inspect queues x 0", "Invalid cursor offset"},
        {"inspect queues 0 0", "Invalid limit"},
        {"inspect queues 0 1001", "Invalid limit"},
        {"inspect queues 0 -1", "Invalid limit"},
        {"inspect queues 0 +1", "Invalid limit"},
        {"inspect queues 0 x", "Invalid limit"},
        {"inspect queues 0 18446744073709551617", "Invalid limit"},
        {"inspect queue", "Invalid command args"},
        {"inspect queue q r", "Invalid command args"},
        {"inspect queue q -a=b", "Invalid command args"},
        {"inspect queue a*b", "Invalid Name"},
        {"inspect queue q\tr", "Invalid Name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_roundtrip(fd, f("%s\r\n", bad[i].cmd), f("-CLIENT-ERROR %s\r\n", bad[i].error));
    systest_roundtrip(fd, f("inspect queue %s\r\n", systest_name_of(256, 'n')),
                      ERR("Invalid Name"));
    systest_roundtrip(fd, f("inspect queue %s\r\n", systest_name_of(255, 'n')), NF);
    systest_roundtrip(fd, "inspect queues 4294967295 1000\r\n", "+OK 0\r\n");
    systest_roundtrip(fd, "inspect queues 0 1000\r\n", f("+OK 1\r\n%s", systest_queue_block("q", 1, 0)));
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* inspect job / jobs / scheduled-jobs */

START_TEST(test_inspect_job)
{
    systest_start_srv();
    int fd = systest_conn();
    /* a payload with CR LF and spaces; every flag */
    const char *pay = " a b\r\nc  d \r\n";
    systest_add_full(fd, id4(1), "q", 1000, "7000000", pay,
                     "-priority=-7 -max-attempts=3 -max-fails=2");
    struct systest_job j = systest_job(id4(1), "q", pay);
    j.ttr = 1000;
    SET(j.ttl, "7000000");
    j.priority = -7;
    j.max_attempts = 3;
    j.max_fails = 2;
    systest_expect_inspect_job(fd, &j);
    /* uppercase id: found, echoed in lowercase */
    systest_roundtrip(fd, "inspect job 00000001-58CC-4372-A567-0E02B2C3D479\r\n", "+OK 1\r\n");
    systest_expect_job_block(fd, &j);
    /* LEASED, attempts 1 */
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 1000, pay));
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    /* a retried fail: PENDING, fails 1 */
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(1)), OK);
    j.fails = 1;
    j.state = PENDING;
    systest_expect_inspect_job(fd, &j);
    /* COMPLETED */
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    j.state = COMPLETED;
    systest_expect_inspect_job(fd, &j);
    /* FAILED */
    systest_add(fd, id4(2), "q", "f");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(2)), OK);
    j = systest_job(id4(2), "q", "f");
    j.fails = 1;
    j.state = FAILED;
    systest_expect_inspect_job(fd, &j);
    /* empty payload; limits */
    systest_add_full(fd, id4(3), systest_name_of(255, 'n'), 86400000, TTL_MAX, "",
                     "-priority=2147483647 -max-attempts=255 -max-fails=255");
    j = systest_job(id4(3), systest_name_of(255, 'n'), "");
    j.ttr = 86400000;
    SET(j.ttl, TTL_MAX);
    j.priority = 2147483647;
    j.max_attempts = 255;
    j.max_fails = 255;
    systest_expect_inspect_job(fd, &j);
    /* binary payload */
    static const char bin[] = "\0\r\n\xff payload \n\r";
    systest_sends(fd, f("add %s b %u %s %zu\r\n", id4(4), TTR, TTL, sizeof bin - 1));
    systest_send(fd, bin, sizeof bin - 1);
    systest_roundtrip(fd, "\r\n", OK);
    j = systest_job_bin(id4(4), "b", bin, sizeof bin - 1);
    systest_expect_inspect_job(fd, &j);
    /* a scheduled job: 13 keys, in every state */
    int64_t t = systest_ahead(600);
    systest_schedule_full(fd, id4(5), "s", 500, TTL, systest_time_ms(t), "sch", "-priority=3");
    j = systest_job(id4(5), "s", "sch");
    j.ttr = 500;
    j.priority = 3;
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, f("lease s %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(5), "s", 500, "sch"));
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    systest_sleep_past(500); /* TTR expiry: PENDING, ready */
    j.state = PENDING;
    systest_expect_inspect_job(fd, &j);
    systest_expect_inspect_list(fd, "jobs", "s", "0 10", &j, 1);
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(5)), OK);
    j.state = COMPLETED;
    systest_expect_inspect_job(fd, &j);
    /* unknown ids */
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(99)), NF);
    systest_roundtrip(fd, "inspect job ffffffff-ffff-ffff-ffff-ffffffffffff\r\n", NF);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(2)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_jobs_order)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t now = systest_now_ms();
    /* the mix of test_schedule_order */
    systest_add(fd, id4(1), "q", "a1");
    systest_schedule(fd, id4(2), "q", now - 20000, "s1");
    systest_add(fd, id4(3), "q", "a2");
    systest_schedule(fd, id4(4), "q", now - 30000, "s2");
    systest_schedule(fd, id4(5), "q", now - 30000, "s3");
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(now - 1000), "hs", "-priority=5");
    systest_add_full(fd, id4(8), "q", 200, TTL, "h1", "-priority=5");
    systest_add_full(fd, id4(10), "q", TTR, TTL, "l1", "-priority=-1");
    systest_schedule(fd, id4(20), "q", now + HOUR_MS, "future"); /* not ready: not listed */
    enum { N = 8 };
    static const unsigned order[N] = {8, 7, 1, 3, 4, 5, 2, 10};
    struct systest_job jobs[N];
    for (unsigned i = 0; i < N; i++) {
        unsigned k = order[i];
        static const char *const pay[] = {"",   "a1", "s1", "a2", "s2", "s3",
                                          "",   "hs", "h1", "",   "l1"};
        jobs[i] = systest_job(id4(k), "q", pay[k]);
    }
    jobs[0].ttr = 200;
    jobs[0].priority = 5;
    jobs[1].priority = 5;
    SET(jobs[1].time, systest_time_s(now - 1000));
    SET(jobs[4].time, systest_time_s(now - 30000));
    SET(jobs[5].time, systest_time_s(now - 30000));
    SET(jobs[6].time, systest_time_s(now - 20000));
    jobs[7].priority = -1;

    /* twice: inspecting changes nothing */
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", jobs, N);
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", jobs, N);
    /* every window */
    for (unsigned off = 0; off <= N + 1; off++)
        for (unsigned lim = 1; lim <= N + 1; lim += 2) {
            size_t n = off >= N ? 0 : (N - off < lim ? N - off : lim);
            systest_expect_inspect_list(fd, "jobs", "q", f("%u %u", off, lim), jobs + (off < N ? off : 0),
                                n);
        }
    systest_expect_inspect_list(fd, "jobs", "q", "4294967295 1000", NULL, 0);
    systest_expect_inspect_list(fd, "jobs", "q", "000 001", jobs, 1);
    systest_expect_inspect_list(fd, "jobs", "q", "0004294967295 01000", NULL, 0);

    /* a leased job is not listed; back after its TTR, at its old place */
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(8), "q", 200, "h1"));
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", jobs + 1, N - 1);
    systest_sleep_past(200);
    jobs[0].attempts = 1;
    jobs[0].state = PENDING;
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", jobs, N);
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", jobs, N);
    /* and lease gives exactly that order */
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(8), "q", 200, "h1"));
    for (unsigned i = 1; i < N; i++)
        systest_lease_now(fd, "q", jobs[i].id, jobs[i].payload);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* the queue still exists (leased and scheduled jobs): empty list */
    systest_expect_inspect_list(fd, "jobs", "q", "0 10", NULL, 0);
    systest_roundtrip(fd, "inspect jobs nope 0 10\r\n", NF);
    systest_roundtrip(fd, "inspect jobs Q 0 10\r\n", NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_jobs_many)
{
    systest_start_srv();
    int fd = systest_conn();
    /* 1000 ready jobs and a few more: limit 1000 is the most in one reply */
    enum { N = 1003 };
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < N; i++) {
        sb_add(&req, f("add %s q %u %s 4%s\r\n%04u\r\n", id4(i + 1), TTR, TTL,
                       i % 3 == 0 ? " -priority=1" : "", i));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    free(req.p);
    free(exp.p);
    /* priority 1 first (i = 0, 3, ...), then the rest; FIFO in each */
    unsigned order[N], n = 0;
    for (unsigned i = 0; i < N; i += 3)
        order[n++] = i;
    for (unsigned i = 0; i < N; i++)
        if (i % 3 != 0)
            order[n++] = i;
    ck_assert_uint_eq(n, N);
    systest_roundtrip(fd, "inspect jobs q 0 1000\r\n", "+OK 1000\r\n");
    for (unsigned i = 0; i < 1000; i++)
        ck_assert_str_eq(systest_skip_job_block(fd), id4(order[i] + 1));
    systest_roundtrip(fd, "inspect jobs q 1000 1000\r\n", "+OK 3\r\n");
    for (unsigned i = 1000; i < N; i++)
        ck_assert_str_eq(systest_skip_job_block(fd), id4(order[i] + 1));
    systest_roundtrip(fd, "inspect jobs q 500 2\r\n", "+OK 2\r\n");
    for (unsigned i = 500; i < 502; i++) {
        struct systest_job j = systest_job(id4(order[i] + 1), "q", f("%04u", order[i]));
        j.priority = order[i] % 3 == 0 ? 1 : 0;
        systest_expect_job_block(fd, &j);
    }
    systest_roundtrip(fd, "inspect jobs q 0 1001\r\n", ERR("Invalid limit"));
    systest_roundtrip(fd, "inspect queue q\r\n", f("+OK 1\r\n%s", systest_queue_block("q", N, 0)));
    for (unsigned i = 0; i < N; i++)
        systest_lease_now(fd, "q", id4(order[i] + 1), f("%04u", order[i]));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_scheduled_jobs)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t base = systest_now_ms() + HOUR_MS;
    /* soonest first, then priority descending, then FIFO */
    systest_schedule(fd, id4(1), "q", base + HOUR_MS, "f1");
    systest_schedule(fd, id4(2), "q", base, "f2");
    systest_schedule_full(fd, id4(3), "q", TTR, TTL, systest_time_ms(base), "f3", "-priority=9");
    systest_schedule_full(fd, id4(4), "q", TTR, TTL, systest_time_ms(base), "f4", "-priority=9");
    systest_schedule_full(fd, id4(5), "q", TTR, TTL, systest_time_ms(base + 500), "f5", "-priority=100");
    systest_schedule_full(fd, id4(6), "q", TTR, TTL, systest_time_ms(base), "f6", "-priority=-3");
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(base - 1), "f7", "-priority=-9");
    systest_add(fd, id4(8), "q", "ready"); /* not listed */
    enum { N = 7 };
    static const unsigned order[N] = {7, 3, 4, 2, 6, 5, 1};
    static const int prio[] = {0, 0, 0, 9, 9, 100, -3, -9};
    static const int64_t off[] = {0, HOUR_MS, 0, 0, 0, 500, 0, -1};
    struct systest_job jobs[N];
    for (unsigned i = 0; i < N; i++) {
        unsigned k = order[i];
        jobs[i] = systest_job(id4(k), "q", f("f%u", k));
        jobs[i].priority = prio[k];
        SET(jobs[i].time, systest_time_s(base + off[k]));
    }
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 1000", jobs, N);
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 1000", jobs, N);
    for (unsigned o = 0; o <= N + 1; o++)
        for (unsigned lim = 1; lim <= N + 1; lim += 3) {
            size_t n = o >= N ? 0 : (N - o < lim ? N - o : lim);
            systest_expect_inspect_list(fd, "scheduled-jobs", "q", f("%u %u", o, lim),
                                jobs + (o < N ? o : 0), n);
        }
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "4294967295 1", NULL, 0);
    /* the ready job is in the other list */
    struct systest_job r = systest_job(id4(8), "q", "ready");
    systest_expect_inspect_list(fd, "jobs", "q", "0 10", &r, 1);
    systest_lease_now(fd, "q", id4(8), "ready");
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 1000", jobs, N);
    /* a deleted one leaves the list */
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), OK);
    struct systest_job less[N - 1] = {jobs[0], jobs[1], jobs[3], jobs[4], jobs[5], jobs[6]};
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 1000", less, N - 1);

    /* a job moves from scheduled-jobs to jobs when its time comes */
    int64_t t = systest_ahead(600);
    systest_schedule(fd, id4(20), "m", t, "moves");
    struct systest_job m = systest_job(id4(20), "m", "moves");
    SET(m.time, systest_time_s(t));
    if (systest_exact_timing()) {
        systest_expect_inspect_list(fd, "scheduled-jobs", "m", "0 10", &m, 1);
        systest_expect_inspect_list(fd, "jobs", "m", "0 10", NULL, 0);
    }
    systest_sleep_until(t + 300 * systest_slow());
    systest_expect_inspect_list(fd, "scheduled-jobs", "m", "0 10", NULL, 0);
    systest_expect_inspect_list(fd, "jobs", "m", "0 10", &m, 1);
    systest_roundtrip(fd, "inspect scheduled-jobs nope 0 10\r\n", NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_inspect_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "x");
    struct {
        const char *cmd, *error;
    } bad[] = {
        {"inspect", "Invalid command args"},
        {"inspect foo", "Unknown command"},
        {"inspect foo 0 10", "Unknown command"},
        {"inspect Server", "Unknown command"},
        {"inspect servers", "Unknown command"},
        {"inspect JOB x", "Unknown command"},
        {"inspect server -a=b", "Invalid command args"},
        {"inspect -a=b", "Invalid command args"},
        /* arity */
        {"inspect server 1", "Invalid command args"},
        {"inspect job", "Invalid command args"},
        {"inspect job " ID1 " 1", "Invalid command args"},
        {"inspect job " ID1 " -a=b", "Invalid command args"},
        {"inspect jobs", "Invalid command args"},
        {"inspect jobs q", "Invalid command args"},
        {"inspect jobs q 0", "Invalid command args"},
        {"inspect jobs q 0 1 2", "Invalid command args"},
        {"inspect jobs q 0 1 -a=b", "Invalid command args"},
        {"inspect scheduled-jobs", "Invalid command args"},
        {"inspect scheduled-jobs q 0", "Invalid command args"},
        {"inspect scheduled-jobs q 0 1 2", "Invalid command args"},
        /* ids */
        {"inspect job bad", "Invalid ID"},
        {"inspect job 00000000-0000-0000-0000-000000000000", "Invalid ID"},
        {"inspect job {00000001-58cc-4372-a567-0e02b2c3d479}", "Invalid ID"},
        {"inspect job 0000000158cc4372a5670e02b2c3d479", "Invalid ID"},
        {"inspect job 00000001-58cc-4372-a567-0e02b2c3d47", "Invalid ID"},
        /* names, before the range */
        {"inspect jobs a*b 0 1", "Invalid Name"},
        {"inspect jobs a*b x 0", "Invalid Name"},
        {"inspect scheduled-jobs a*b 0 1", "Invalid Name"},
        {"inspect scheduled-jobs q/r x 0", "Invalid Name"},
        /* ranges, before the lookup */
        {"inspect jobs q 4294967296 1", "Invalid cursor offset"},
        {"inspect jobs q -1 1", "Invalid cursor offset"},
        {"inspect jobs q x 0", "Invalid cursor offset"},
        {"inspect jobs nope 4294967296 1", "Invalid cursor offset"},
        {"inspect jobs q 0 0", "Invalid limit"},
        {"inspect jobs q 0 1001", "Invalid limit"},
        {"inspect jobs nope 0 0", "Invalid limit"},
        {"inspect jobs q 0 +1", "Invalid limit"},
        {"inspect scheduled-jobs q 4294967296 1", "Invalid cursor offset"},
        {"inspect scheduled-jobs q 1.5 1", "Invalid cursor offset"},
        {"inspect scheduled-jobs q 0 0", "Invalid limit"},
        {"inspect scheduled-jobs q 0 1001", "Invalid limit"},
        {"inspect scheduled-jobs nope 0 1001", "Invalid limit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_roundtrip(fd, f("%s\r\n", bad[i].cmd), f("-CLIENT-ERROR %s\r\n", bad[i].error));
    /* the edges that are fine */
    struct systest_job j = systest_job(id4(1), "q", "x");
    systest_expect_inspect_list(fd, "jobs", "q", "0 1000", &j, 1);
    systest_expect_inspect_list(fd, "jobs", "q", "4294967295 1000", NULL, 0);
    systest_expect_inspect_list(fd, "jobs", "q", "1 1", NULL, 0);
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "0 1000", NULL, 0);
    systest_expect_inspect_list(fd, "scheduled-jobs", "q", "4294967295 1000", NULL, 0);
    systest_roundtrip(fd, "inspect jobs nope 0 1000\r\n", NF);
    systest_roundtrip(fd, "inspect scheduled-jobs nope 4294967295 1\r\n", NF);
    systest_roundtrip(fd, f("inspect jobs %s 0 1\r\n", systest_name_of(256, 'n')),
                      ERR("Invalid Name"));
    systest_roundtrip(fd, f("inspect scheduled-jobs %s 0 1\r\n", systest_name_of(256, 'n')),
                      ERR("Invalid Name"));
    systest_roundtrip(fd, f("inspect jobs %s 0 1\r\n", systest_name_of(255, 'n')), NF);
    /* nothing was changed: the job is still first in line */
    systest_lease_now(fd, "q", id4(1), "x");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
protocol_suite(void)
{
    const struct systest_group groups[] = {
        {"schedule",
         {test_schedule_becomes_ready, test_schedule_past_time, test_schedule_invalid_time,
          test_schedule_args, test_schedule_order, test_schedule_order_fraction, test_schedule_ttl,
          test_schedule_duplicate_and_states, NULL}},
        {"run",
         {test_run_complete, test_run_fail, test_run_timeout_unleased, test_run_timeout_leased,
          test_run_disconnect, test_run_delete, test_run_two_waiters, test_run_wait_zero,
          test_run_order, test_run_errors, NULL}},
        {"inspect_server", {test_inspect_server_format, test_inspect_server_counters, NULL}},
        {"inspect_queues", {test_inspect_queues, test_inspect_queues_errors, NULL}},
        {"inspect_jobs",
         {test_inspect_job, test_inspect_jobs_order, test_inspect_jobs_many,
          test_inspect_scheduled_jobs, test_inspect_errors, NULL}},
    };
    return systest_suite("protocol", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(protocol_suite());
}
