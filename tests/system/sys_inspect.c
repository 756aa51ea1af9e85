/* sys_inspect.c - system tests of inspect: server (format and counters),
 * queues, job, jobs and scheduled-jobs; the real workq-server over TCP,
 * byte-exact against doc/protocol-reference.md sections 1-4.
 *
 * Every test starts its own server on 127.0.0.1:0 and stops it at the end, so
 * every test also checks a clean shutdown (exit status 0; under valgrind with
 * --error-exitcode that is where memory errors and leaks show up).
 *
 * Tests check behaviour, never speed: TTR/TTL/wait values are short, and
 * every wait for a server-side deadline is generous and scaled by
 * WQ_TEST_SLOW. Checks that something has NOT happened yet run only when
 * WQ_TEST_SLOW is 1. If a check fails, check kills the test's process group,
 * which takes the server with it. */
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
#define PARK    "60000" /* wait of a lease/result/run that must be woken */
#define HOUR_MS 3600000LL

/* Fixed texts for tables (f()'s ring would not outlive a table). */
#define ID1 "00000001-58cc-4372-a567-0e02b2c3d479" /* id4(1) */

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

/* ---- inspect server ---- */

static const char *const server_keys[] = {
    "active-clients", "evicted-jobs",   "started",        "version",     "uptime",
    "jobs",           "ready-jobs",     "scheduled-jobs", "leased-jobs", "completed-jobs",
    "failed-jobs",    "parked-clients", "memory-used",    "allocator",
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
/* inspect server */

START_TEST(test_inspect_server_format)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_sends(fd, "inspect server\r\n");
    expect_server_format(fd);
    static const char *const zero[] = {"evicted-jobs",   "jobs",          "ready-jobs",
                                       "scheduled-jobs", "leased-jobs",   "completed-jobs",
                                       "failed-jobs",    "parked-clients"};
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
        unsigned ready, scheduled;
    } want[NQ] = {{"B", 1, 0},   {"a", 2, 1}, {"a-", 1, 0}, {"b", 0, 1},
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
        systest_roundtrip(fd, f("inspect queue %s\r\n", want[i].name), f("+OK 1\r\n%s", blocks[i]));
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
                      f("+OK 4\r\n%s%s%s%s", systest_queue_block("B", 1, 0),
                        systest_queue_block("a", 1, 0), systest_queue_block("b", 0, 1),
                        systest_queue_block("b.x", 1, 0)));
    close(fd);
    systest_stop_srv();
}
END_TEST

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b); /* bytes, unsigned */
}

/* Every window of inspect queues against the live names, sorted by byte. */
static void
expect_queue_windows(int fd, char names[][8], const bool *live, int n)
{
    const char *sorted[256];
    int count = 0;
    for (int i = 0; i < n; i++)
        if (live[i])
            sorted[count++] = names[i];
    qsort(sorted, (size_t)count, sizeof sorted[0], cmp_str);
    const int offs[] = {0, 1, 17, count / 3, count - 1, count, count + 1};
    const int lims[] = {1, 7, 1000};
    for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
        for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++) {
            struct sb e = {0};
            int k = 0;
            for (int i = offs[o]; i < count && k < lims[l]; i++, k++)
                sb_add(&e, systest_queue_block(sorted[i], 1, 0));
            systest_roundtrip(fd, f("inspect queues %d %d\r\n", offs[o], lims[l]),
                              f("+OK %d\r\n%s", k, e.p != NULL ? e.p : ""));
            free(e.p);
        }
}

/* inspect queues across churn: 200 queues made in a scrambled order (whose
 * names sort differently as bytes and as numbers), a third of them emptied
 * and so gone, half of those made again, and jobs for named workers, whose
 * hidden queues are never listed: each time, every window is the live
 * names in byte order. */
START_TEST(test_inspect_queues_churn)
{
    systest_start_srv();
    int fd = systest_conn();
    enum { N = 200 };
    char names[N][8];
    bool live[N] = {false};
    for (int i = 0; i < N; i++)
        snprintf(names[i], sizeof names[i], "n%d", i);
    for (int i = 0; i < N; i++) {
        int k = (i * 73) % N;
        systest_add(fd, id4((unsigned)k + 1), names[k], "x");
        live[k] = true;
    }
    expect_queue_windows(fd, names, live, N);
    for (int k = 0; k < N; k += 3) {
        systest_roundtrip(fd, f("delete %s\r\n", id4((unsigned)k + 1)), OK);
        live[k] = false;
    }
    expect_queue_windows(fd, names, live, N);
    for (int k = 0; k < N; k += 6) {
        systest_add(fd, id4((unsigned)k + 1001), names[k], "x");
        live[k] = true;
    }
    systest_add_full(fd, id4(2001), "n1", TTR, TTL, "t", "-worker=w1"); /* n1 keeps 1 ready */
    systest_add_full(fd, id4(2002), "zz", TTR, TTL, "t", "-worker=w1");
    expect_queue_windows(fd, names, live, N);
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
    systest_roundtrip(fd, "inspect queues 0 1000\r\n",
                      f("+OK 1\r\n%s", systest_queue_block("q", 1, 0)));
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
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(now - 1000), "hs",
                          "-priority=5");
    systest_add_full(fd, id4(8), "q", 200, TTL, "h1", "-priority=5");
    systest_add_full(fd, id4(10), "q", TTR, TTL, "l1", "-priority=-1");
    systest_schedule(fd, id4(20), "q", now + HOUR_MS, "future"); /* not ready: not listed */
    enum { N = 8 };
    static const unsigned order[N] = {8, 7, 1, 3, 4, 5, 2, 10};
    struct systest_job jobs[N];
    for (unsigned i = 0; i < N; i++) {
        unsigned k = order[i];
        static const char *const pay[] = {"", "a1", "s1", "a2", "s2", "s3",
                                          "", "hs", "h1", "",   "l1"};
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
            systest_expect_inspect_list(fd, "jobs", "q", f("%u %u", off, lim),
                                        jobs + (off < N ? off : 0), n);
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

/* Windows of inspect jobs, shallow (a walk from the heap's top) and deep
 * (a selection over the heap: src/lib/heap_walk.c), after deletes from the
 * middle: each lists the ids at those places of the lease order. */
START_TEST(test_inspect_jobs_windows)
{
    systest_start_srv();
    int fd = systest_conn();
    enum { N = 3000 };
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < N; i++) {
        sb_add(&req, f("add %s q %u %s 1 -priority=%u\r\nx\r\n", id4(i + 1), TTR, TTL, i % 5));
        sb_add(&exp, OK);
    }
    for (unsigned i = 0; i < N; i += 7) {
        sb_add(&req, f("delete %s\r\n", id4(i + 1)));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    free(req.p);
    free(exp.p);
    /* priority 4 first, FIFO in each priority; the deleted ones are gone */
    static unsigned order[N];
    unsigned n = 0;
    for (int p = 4; p >= 0; p--)
        for (unsigned i = 0; i < N; i++)
            if (i % 5 == (unsigned)p && i % 7 != 0)
                order[n++] = i;
    const unsigned offs[] = {0, 3, 50, 100, 599, 1000, 1713, n - 1000, n - 1, n};
    const unsigned lims[] = {1, 10, 1000};
    for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
        for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++) {
            unsigned want = offs[o] >= n ? 0 : n - offs[o] < lims[l] ? n - offs[o] : lims[l];
            systest_roundtrip(fd, f("inspect jobs q %u %u\r\n", offs[o], lims[l]),
                              f("+OK %u\r\n", want));
            for (unsigned i = offs[o]; i < offs[o] + want; i++)
                ck_assert_str_eq(systest_skip_job_block(fd), id4(order[i] + 1));
        }
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
    systest_schedule_full(fd, id4(5), "q", TTR, TTL, systest_time_ms(base + 500), "f5",
                          "-priority=100");
    systest_schedule_full(fd, id4(6), "q", TTR, TTL, systest_time_ms(base), "f6", "-priority=-3");
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(base - 1), "f7",
                          "-priority=-9");
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
inspect_suite(void)
{
    const struct systest_group groups[] = {
        {"inspect_server", {test_inspect_server_format, test_inspect_server_counters, NULL}},
        {"inspect_queues",
         {test_inspect_queues, test_inspect_queues_churn, test_inspect_queues_errors, NULL}},
        {"inspect_jobs",
         {test_inspect_job, test_inspect_jobs_order, test_inspect_jobs_many,
          test_inspect_jobs_windows, test_inspect_scheduled_jobs, test_inspect_errors, NULL}},
    };
    return systest_suite("inspect", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(inspect_suite());
}
