/* sys_worker.c - system tests of the worker's side: lease (waiting, order,
 * priorities), TTR expiry, complete and fail, and the server's robustness
 * when workers and waiters vanish; the real workq-server over TCP,
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

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TTR  SYSTEST_TTR
#define TTL  SYSTEST_TTL
#define PARK "60000" /* wait of a lease/result that must be woken */

/* ------------------------------------------------------------------------ */
/* Helpers */

/* Expect one of two replies of the same length; returns 0 or 1. */
static int
expect_one_of(int fd, const char *a, const char *b)
{
    size_t n = strlen(a);
    ck_assert_uint_eq(n, strlen(b));
    char *got = malloc(n + 1);
    systest_read_n(fd, got, n);
    int which = strcmp(got, a) == 0 ? 0 : strcmp(got, b) == 0 ? 1 : -1;
    if (which < 0) {
        free(got);
        ck_abort_msg("reply is neither of the two expected ones:\n %s\n %s", a, b);
    }
    free(got);
    return which;
}

/* ------------------------------------------------------------------------ */
/* lease */

START_TEST(test_lease_immediate)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 1234, TTL, "payload", NULL);
    systest_roundtrip(fd, "lease q 1000\r\n", systest_lease_reply(id4(1), "q", 1234, "payload"));
    /* a leased job is not leased again */
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* the longest wait is accepted */
    systest_add(fd, id4(2), "q", "x");
    systest_roundtrip(fd, "lease q 86400000\r\n", systest_lease_reply(id4(2), "q", TTR, "x"));
    systest_roundtrip(fd, "lease q 00\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_wait_zero_empty)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "lease a b c 0\r\n", TO);
    systest_add(fd, id4(1), "other", "x");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_woken_by_add)
{
    systest_start_srv();
    int w = systest_conn(), p = systest_conn();
    systest_sends(w, "lease q " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(p, id1(1), "q", "wake");
    systest_expect_lease(w, id1(1), "q", "wake");
    /* parked on several names, woken by the second one */
    systest_sends(w, "lease x y z " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(p, id1(2), "q", "not for w");
    systest_add(p, id1(3), "y", "for w");
    systest_expect_lease(w, id1(3), "y", "for w");
    systest_expect_silence(w, 50);
    systest_lease_now(p, "q", id1(2), "not for w");
    close(w);
    close(p);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_timeout)
{
    systest_start_srv();
    int fd = systest_conn();
    if (systest_exact_timing()) {
        systest_sends(fd, "lease q 1000\r\n");
        systest_expect_silence(fd, 100);
        systest_expect(fd, TO);
    }
    systest_roundtrip(fd, "lease q 200\r\n", TO);
    systest_roundtrip(fd, "lease q r 150\r\n", TO);
    /* a leaser that timed out takes no later job */
    int p = systest_conn();
    systest_add(p, id4(1), "q", "later");
    systest_lease_now(p, "q", id4(1), "later");
    systest_expect_silence(fd, 50);
    close(p);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_multiple_names)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "a", "pa");
    systest_add(fd, id4(2), "b", "pb");
    const char *ra = systest_lease_reply(id4(1), "a", TTR, "pa");
    const char *rb = systest_lease_reply(id4(2), "b", TTR, "pb");
    systest_sends(fd, "lease a b 0\r\n");
    int first = expect_one_of(fd, ra, rb);
    systest_roundtrip(fd, "lease a b 0\r\n", first == 0 ? rb : ra);
    systest_roundtrip(fd, "lease a b 0\r\n", TO);
    /* only one listed name has a job */
    systest_add(fd, id4(3), "c", "pc");
    systest_roundtrip(fd, "lease a b c d 0\r\n", systest_lease_reply(id4(3), "c", TTR, "pc"));
    /* across names, each name keeps its own order */
    systest_add(fd, id4(4), "a", "a1");
    systest_add(fd, id4(5), "a", "a2");
    systest_add(fd, id4(6), "b", "b1");
    int got_a = 0, got_b = 0;
    for (int i = 0; i < 3; i++) {
        const char *next_a = got_a == 0 ? systest_lease_reply(id4(4), "a", TTR, "a1")
                                        : systest_lease_reply(id4(5), "a", TTR, "a2");
        const char *next_b = systest_lease_reply(id4(6), "b", TTR, "b1");
        if (got_b) {
            systest_roundtrip(fd, "lease b a 0\r\n", next_a);
            got_a++;
        } else if (got_a == 2) {
            systest_roundtrip(fd, "lease b a 0\r\n", next_b);
            got_b++;
        } else {
            systest_sends(fd, "lease b a 0\r\n");
            if (expect_one_of(fd, next_a, next_b) == 0)
                got_a++;
            else
                got_b++;
        }
    }
    systest_roundtrip(fd, "lease a b 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_name_twice)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "one");
    systest_roundtrip(fd, "lease q q 0\r\n", systest_lease_reply(id4(1), "q", TTR, "one"));
    systest_roundtrip(fd, "lease q q 0\r\n", TO);
    /* parked with a name twice: served once */
    int w = systest_conn();
    systest_sends(w, "lease q q q " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(fd, id4(2), "q", "two");
    systest_add(fd, id4(3), "q", "three");
    systest_expect_lease(w, id4(2), "q", "two");
    systest_expect_silence(w, 50);
    systest_lease_now(fd, "q", id4(3), "three");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_parked_fcfs)
{
    systest_start_srv();
    int w1 = systest_conn(), w2 = systest_conn(), w3 = systest_conn(), p = systest_conn();
    systest_sends(w1, "lease q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_sends(w2, "lease r q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_sends(w3, "lease q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_add(p, id4(1), "q", "first");
    systest_expect_lease(w1, id4(1), "q", "first");
    systest_add(p, id4(2), "q", "second");
    systest_expect_lease(w2, id4(2), "q", "second");
    systest_add(p, id4(3), "q", "third");
    systest_expect_lease(w3, id4(3), "q", "third");
    systest_expect_silence(w1, 30);
    systest_expect_silence(w2, 0);
    systest_expect_silence(w3, 0);
    close(w1);
    close(w2);
    close(w3);
    close(p);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_priority_order)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "j1", "-priority=1");
    systest_add_full(fd, id4(2), "q", TTR, TTL, "j2", "-priority=5");
    systest_add_full(fd, id4(3), "q", TTR, TTL, "j3", "-priority=-3");
    systest_add_full(fd, id4(4), "q", TTR, TTL, "j4", "-priority=+5");
    systest_add_full(fd, id4(5), "q", TTR, TTL, "j5", NULL);
    systest_add_full(fd, id4(6), "q", TTR, TTL, "j6", "-priority=2147483647");
    systest_add_full(fd, id4(7), "q", TTR, TTL, "j7", "-priority=-2147483648");
    systest_add_full(fd, id4(8), "q", TTR, TTL, "j8", "-priority=0");
    static const unsigned order[] = {6, 2, 4, 1, 5, 8, 3, 7};
    for (size_t i = 0; i < 8; i++)
        systest_lease_now(fd, "q", id4(order[i]), f("j%u", order[i]));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_fifo)
{
    systest_start_srv();
    int fd = systest_conn();
    for (unsigned i = 1; i <= 20; i++)
        systest_add(fd, (i % 2) ? id1(i) : id4(i), "q", f("p%u", i));
    for (unsigned i = 1; i <= 20; i++)
        systest_lease_now(fd, "q", (i % 2) ? id1(i) : id4(i), f("p%u", i));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, "lease a*b 0\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, "lease q r*s 0\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, f("lease %s 0\r\n", systest_name_of(256, 'n')), ERR("Invalid Name"));
    systest_roundtrip(fd, "lease a*b 86400001\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, "lease q 86400001\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q abc\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q -1\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q +1\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q 18446744073709551616\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease 100\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease 0 0\r\n", TO); /* "0" is a valid name */
    systest_roundtrip(fd, f("lease %s 0\r\n", systest_name_of(255, 'n')), TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_disconnect_while_parked)
{
    systest_start_srv();
    int w = systest_conn();
    systest_sends(w, "lease q " PARK "\r\n");
    int w2 = systest_conn();
    systest_sends(w2, "lease r q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    close(w);
    close(w2);
    systest_sleep_ms(100 * systest_slow());
    int fd = systest_conn();
    /* with one attempt allowed, a job taken by a ghost could not be leased */
    systest_add_full(fd, id4(1), "q", TTR, TTL, "x", "-max-attempts=1");
    systest_add_full(fd, id4(2), "r", TTR, TTL, "y", "-max-attempts=1");
    systest_lease_now(fd, "q", id4(1), "x");
    systest_lease_now(fd, "r", id4(2), "y");
    /* a live parked leaser after the dead ones still works */
    int w3 = systest_conn();
    systest_sends(w3, "lease q " PARK "\r\n");
    systest_expect_silence(w3, 100);
    systest_add(fd, id4(3), "q", "z");
    systest_expect_lease(w3, id4(3), "q", "z");
    close(w3);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_pipeline_held)
{
    systest_start_srv();
    int w = systest_conn(), p = systest_conn();
    /* the delete must run after the lease is answered: then it finds the job */
    systest_sends(w, f("lease q " PARK "\r\ndelete %s\r\nlease q 0\r\n", id4(1)));
    systest_expect_silence(w, 100);
    /* other connections are not blocked */
    systest_roundtrip(p, "lease other 0\r\n", TO);
    systest_add(p, id4(1), "q", "held");
    systest_expect_lease(w, id4(1), "q", "held");
    systest_expect(w, OK);
    systest_expect(w, TO);
    close(w);
    close(p);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* TTR */

START_TEST(test_ttr_requeue)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "again", NULL);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "again"));
    /* woken when the TTR ends and the job is ready again */
    systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(1), "q", 100, "again"));
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    /* a completed job is not re-queued by its old TTR */
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "ok"));

    if (systest_exact_timing()) {
        /* not before the TTR ends */
        systest_add_full(fd, id4(2), "r", 1000, TTL, "slow", NULL);
        systest_roundtrip(fd, "lease r 0\r\n", systest_lease_reply(id4(2), "r", 1000, "slow"));
        systest_sleep_ms(100);
        systest_roundtrip(fd, "lease r 0\r\n", TO);
        systest_roundtrip(fd, "lease r 3000\r\n", systest_lease_reply(id4(2), "r", 1000, "slow"));
    }
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_max_attempts)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "job", "-max-attempts=2");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "job"));
    systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(1), "q", 100, "job"));
    /* the second TTR expiry fails it, with an empty result */
    systest_roundtrip(fd, f("result %s " PARK "\r\n", id4(1)),
                      f("+OK 1\r\n%s 0 0\r\n\r\n", id4(1)));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));

    /* max-attempts 1: the first expiry is final */
    systest_add_full(fd, id4(2), "q", 100, TTL, "one", "-max-attempts=1");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(2), "q", 100, "one"));
    systest_roundtrip(fd, f("result %s " PARK "\r\n", id4(2)), systest_result_reply(id4(2), 0, ""));

    /* max-attempts 0: unlimited */
    systest_add_full(fd, id4(3), "q", 100, TTL, "inf", "-max-attempts=0");
    for (int i = 0; i < 4; i++)
        systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(3), "q", 100, "inf"));
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, ""));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_keeps_place)
{
    systest_start_srv();
    int fd = systest_conn();
    /* two attempts: its second lease cannot come back and overtake j2 */
    systest_add_full(fd, id4(1), "q", 100, TTL, "j1", "-max-attempts=2");
    systest_add(fd, id4(2), "q", "j2");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "j1"));
    systest_add(fd, id4(3), "q", "j3");
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "j1"));
    systest_lease_now(fd, "q", id4(2), "j2");
    systest_lease_now(fd, "q", id4(3), "j3");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_late_result)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "late", NULL);
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "late"));
    systest_sleep_past(100);
    /* PENDING again; the late worker's result still counts */
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(1)), OK);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "late"));
    /* a leased job deleted before its TTR ends: the TTR does not bring it back */
    systest_add_full(fd, id4(2), "q", 100, TTL, "gone", NULL);
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(2), "q", 100, "gone"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), NF);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* complete and fail */

START_TEST(test_complete_states)
{
    systest_start_srv();
    int fd = systest_conn(), other = systest_conn();
    /* NEW, never leased */
    systest_add(fd, id4(1), "q", "a");
    systest_roundtrip(fd, f("complete %s 3\r\nabc\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "abc"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* LEASED, completed from another connection */
    systest_add(fd, id1(2), "q", "b");
    systest_lease_now(fd, "q", id1(2), "b");
    systest_roundtrip(other, f("complete %s 5\r\nother\r\n", id1(2)), OK);
    /* the late leaser: first result wins */
    systest_roundtrip(fd, f("complete %s 4\r\nmine\r\n", id1(2)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("fail %s 4\r\nmine\r\n", id1(2)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id1(2)), systest_result_reply(id1(2), 1, "other"));
    /* empty and binary results */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), f("+OK 1\r\n%s 1 0\r\n\r\n", id4(3)));
    systest_add(fd, id4(4), "q", "d");
    systest_sends(fd, f("complete %s 6\r\n", id4(4)));
    systest_send(fd, "\r\n\0\n\r\x01\r\n", 8);
    systest_expect(fd, OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), f("+OK 1\r\n%s 1 6\r\n", id4(4)));
    systest_expect_bytes(fd, "\r\n\0\n\r\x01\r\n", 8);
    /* twice */
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(4)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), f("+OK 1\r\n%s 1 6\r\n", id4(4)));
    systest_expect_bytes(fd, "\r\n\0\n\r\x01\r\n", 8);
    close(other);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_complete_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, f("complete %s 3\r\nabc\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("fail %s 3\r\nabc\r\n", id4(1)), NF);
    systest_roundtrip(fd, "complete bad 3\r\nabc\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "fail bad 3\r\nabc\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "complete 00000000-0000-0000-0000-000000000000 0\r\n\r\n",
                      ERR("Invalid ID"));
    static const char *const bad[] = {"+1", "-1", "abc", "18446744073709551616", "1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        systest_roundtrip(fd, f("complete %s %s\r\nabc\r\n", id4(1), bad[i]),
                          ERR("Invalid payload size") ERR("Unknown command"));
        systest_roundtrip(fd, f("fail %s %s\r\nabc\r\n", id4(1), bad[i]),
                          ERR("Invalid result size") ERR("Unknown command"));
    }
    /* the size comes first, then the id */
    systest_roundtrip(fd, "complete bad +1\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    systest_roundtrip(fd, f("complete %s\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "complete\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("complete %s 1 2\r\nabc\r\n", id4(1)),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, f("fail %s q 1\r\nabc\r\n", id4(1)),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_final)
{
    systest_start_srv();
    int fd = systest_conn();
    /* max-fails 0 (the default): the first fail is final */
    systest_add(fd, id4(1), "q", "a");
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("fail %s 4\r\noops\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "oops"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    /* explicitly 0, on a NEW job */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "b", "-max-fails=0");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 0, ""));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* complete, then fail */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(3)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, "ok"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_retry)
{
    systest_start_srv();
    int fd = systest_conn(), waiter = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "job", "-max-fails=2");
    systest_add(fd, id4(2), "q", "next");
    systest_lease_now(fd, "q", id4(1), "job");
    systest_sends(waiter, f("result %s " PARK "\r\n", id4(1)));
    systest_expect_silence(waiter, 100);
    /* the first fail retries: no result, leasable again, at its old place */
    systest_roundtrip(fd, f("fail %s 2\r\ne1\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_expect_silence(waiter, 50);
    systest_lease_now(fd, "q", id4(1), "job");
    /* the second is final, with the second result */
    systest_roundtrip(fd, f("fail %s 2\r\ne2\r\n", id4(1)), OK);
    systest_expect(waiter, systest_result_reply(id4(1), 0, "e2"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "e2"));
    systest_lease_now(fd, "q", id4(2), "next");
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* a retry on a NEW job, then complete wins */
    systest_add_full(fd, id4(3), "q", TTR, TTL, "n", "-max-fails=3");
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\ny\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, "y"));
    close(waiter);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_attempts_exhausted)
{
    systest_start_srv();
    int fd = systest_conn();
    /* fails left but no attempts: the fail is final */
    systest_add_full(fd, id4(1), "q", TTR, TTL, "a", "-max-fails=5 -max-attempts=1");
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("fail %s 3\r\nend\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "end"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* two attempts: one retry */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "b", "-max-attempts=2 -max-fails=5");
    systest_lease_now(fd, "q", id4(2), "b");
    systest_roundtrip(fd, f("fail %s 1\r\n1\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), TO);
    systest_lease_now(fd, "q", id4(2), "b");
    systest_roundtrip(fd, f("fail %s 1\r\n2\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 0, "2"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* robustness: waiters that vanish, many clients, stopping with state */

START_TEST(test_robust_waiters_vanish)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    /* result waiters that disconnect, then the job gets its result */
    for (int i = 0; i < 3; i++) {
        int w = systest_conn();
        systest_sends(w, f("result %s " PARK "\r\n", id4(1)));
        systest_sleep_ms(50 * systest_slow());
        close(w);
    }
    int w = systest_conn();
    systest_sends(w, f("result %s " PARK "\r\n", id4(1)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("complete %s 1\r\nr\r\n", id4(1)), OK);
    systest_expect(w, systest_result_reply(id4(1), 1, "r"));
    close(w);
    /* a result waiter that disconnects, then the job is deleted */
    systest_add(fd, id4(2), "q", "b");
    w = systest_conn();
    systest_sends(w, f("result %s " PARK "\r\n", id4(2)));
    systest_sleep_ms(50 * systest_slow());
    close(w);
    systest_sleep_ms(50 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    /* a parked leaser and a result waiter whose waits end after they left */
    w = systest_conn();
    systest_sends(w, "lease none 200\r\n");
    int w2 = systest_conn();
    systest_add(fd, id4(3), "q", "c");
    systest_sends(w2, f("result %s 200\r\n", id4(3)));
    systest_sleep_ms(50 * systest_slow());
    close(w);
    close(w2);
    systest_sleep_past(200);
    systest_lease_now(fd, "q", id4(3), "c");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_robust_many_leasers)
{
    systest_start_srv();
    enum { N = 100 };
    int w[N];
    for (int i = 0; i < N; i++) {
        w[i] = systest_conn();
        systest_sends(w[i], "lease many " PARK "\r\n");
    }
    systest_sleep_ms(200 * systest_slow());
    int fd = systest_conn();
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < N; i++) {
        sb_add(&req, f("add %s many %u %s 4\r\n%04u\r\n", id1(i + 1), TTR, TTL, i));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    /* every leaser gets exactly one job, and every job goes to one leaser
     * (the order among clients parked within microseconds is not checked
     * here; test_lease_parked_fcfs does that with clear gaps) */
    bool seen[N] = {false};
    size_t len = strlen(systest_lease_reply(id1(1), "many", TTR, "0000"));
    for (unsigned i = 0; i < N; i++) {
        char got[256];
        systest_read_n(w[i], got, len);
        unsigned k = (unsigned)atoi(got + len - 6);
        ck_assert_uint_lt(k, N);
        ck_assert_msg(!seen[k], "job %u leased twice", k);
        seen[k] = true;
        ck_assert_str_eq(got, systest_lease_reply(id1(k + 1), "many", TTR, f("%04u", k)));
        systest_expect_silence(w[i], 0);
        close(w[i]);
    }
    free(req.p);
    free(exp.p);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A large payload goes to the output by reference: it must stay intact
 * while a slow reader's lease reply waits, even after the job is deleted
 * and its memory could be reused by a new job of the same size. */
START_TEST(test_robust_large_payload_outlives_job)
{
    enum { LEN = 1048576 };
    static char payload[LEN], other[LEN], got[LEN + 256];
    for (size_t i = 0; i < LEN; i++) {
        payload[i] = (char)('a' + i % 26);
        other[i] = (char)('0' + i % 10);
    }
    systest_start_srv();
    int fd = systest_conn();
    const char *id = id4(1);
    systest_sends(fd, f("add %s big 60000 60000 %d\r\n", id, LEN));
    systest_send(fd, payload, LEN);
    systest_roundtrip(fd, "\r\n", OK);

    /* A worker with a small receive buffer: most of the reply stays queued
     * in the server. */
    int w = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(w, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)systest_srv.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(w, (struct sockaddr *)&sa, sizeof sa), 0);
    systest_sends(w, "lease big 0\r\n");
    systest_sleep_ms(100);

    systest_roundtrip(fd, f("delete %s\r\n", id), OK);
    systest_sends(fd, f("add %s big 60000 60000 %d\r\n", id4(2), LEN));
    systest_send(fd, other, LEN);
    systest_roundtrip(fd, "\r\n", OK);

    const char *head = f("+OK 1\r\n%s big 60000 %d\r\n", id, LEN);
    size_t hlen = strlen(head);
    systest_read_n(w, got, hlen + LEN + 2);
    ck_assert_mem_eq(got, head, hlen);
    ck_assert_msg(memcmp(got + hlen, payload, LEN) == 0, "leased payload changed");
    ck_assert_mem_eq(got + hlen + LEN, "\r\n", 2);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_robust_stop_with_state)
{
    /* SIGTERM with jobs in every state, parked clients and half-sent input:
     * the server exits 0 (under valgrind: without leaks or errors) */
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "new");
    systest_add(fd, id4(2), "q", "leased");
    systest_add_full(fd, id4(3), "q", 100, TTL, "pending", NULL);
    systest_add(fd, id4(4), "r", "completed");
    systest_add(fd, id4(5), "r", "failed");
    systest_add_full(fd, id4(6), "r", TTR, TTL, "retry", "-max-fails=3");
    systest_lease_now(fd, "q", id4(1), "new");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(2), "q", TTR, "leased"));
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(3), "q", 100, "pending"));
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(6)), OK);
    systest_sleep_past(100);
    int lw = systest_conn(), rw = systest_conn(), half = systest_conn(), skip;
    systest_sends(lw, "lease empty " PARK "\r\n");
    systest_sends(rw, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(half, f("add %s q %u %s 100\r\nabc", id4(7), TTR, TTL));
    skip = systest_conn();
    systest_sends(skip, "add bad q");
    systest_sleep_ms(100 * systest_slow());
    systest_stop_srv();
    close(lw);
    close(rw);
    close(half);
    close(skip);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
worker_suite(void)
{
    const struct systest_group groups[] = {
        {"lease",
         {test_lease_immediate, test_lease_wait_zero_empty, test_lease_woken_by_add,
          test_lease_timeout, test_lease_multiple_names, test_lease_name_twice,
          test_lease_parked_fcfs, test_lease_priority_order, test_lease_fifo, test_lease_errors,
          test_lease_disconnect_while_parked, test_lease_pipeline_held, NULL}},
        {"ttr",
         {test_ttr_requeue, test_ttr_max_attempts, test_ttr_keeps_place, test_ttr_late_result,
          NULL}},
        {"complete", {test_complete_states, test_complete_errors, NULL}},
        {"fail", {test_fail_final, test_fail_retry, test_fail_attempts_exhausted, NULL}},
        {"robustness",
         {test_robust_waiters_vanish, test_robust_many_leasers, test_robust_stop_with_state,
          test_robust_large_payload_outlives_job, NULL}},
    };
    return systest_suite("worker", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(worker_suite());
}
