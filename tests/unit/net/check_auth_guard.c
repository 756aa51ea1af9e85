/* check_auth_guard.c - unit tests of the record of failing addresses:
 * the delays, the wait during which nothing is checked (and its count of
 * unchecked attempts), forgiveness, forgetting, and a full record. */
#include "config.h"

#include <check.h>
#include <stdio.h>

#include "net/auth_guard.h"
#include "unit.h"

#define NOW 1700000000000ull

/* Each failure from one host doubles the delay, up to 10 s. */
START_TEST(test_delays)
{
    ck_assert_uint_eq(auth_guard_delay_ms(1), 250);
    ck_assert_uint_eq(auth_guard_delay_ms(2), 500);
    ck_assert_uint_eq(auth_guard_delay_ms(6), 8000);
    ck_assert_uint_eq(auth_guard_delay_ms(7), 10000);
    ck_assert_uint_eq(auth_guard_delay_ms(4000000000u), 10000);
}
END_TEST

/* After a failure its host waits (whatever its port); other hosts do
 * not; the wait ends with the delay, and the next failure doubles it. */
START_TEST(test_wait_per_host)
{
    struct auth_guard *g = auth_guard_new();
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.1:5000", NOW, "test"), 0);
    ck_assert_uint_eq(auth_guard_failed(g, "10.0.0.1:5000", NOW, "test"), 250);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.1:5001", NOW + 100, "test"), 150);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.1:5002", NOW + 249, "test"), 1);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.2:5000", NOW + 100, "test"), 0);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "[::1]:5000", NOW + 100, "test"), 0);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.1:5000", NOW + 250, "test"), 0);
    ck_assert_uint_eq(auth_guard_failed(g, "10.0.0.1:6000", NOW + 250, "test"), 500);
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.0.0.1:6000", NOW + 300, "test"), 450);
    auth_guard_free(g);
}
END_TEST

/* A right password forgives its host; 15 minutes without a failure
 * start afresh. */
START_TEST(test_forgive_and_forget)
{
    struct auth_guard *g = auth_guard_new();
    for (int i = 0; i < 5; i++)
        auth_guard_failed(g, "h:1", NOW + (uint64_t)i * 20000, "test");
    auth_guard_passed(g, "h:2");
    ck_assert_uint_eq(auth_guard_wait_ms(g, "h:1", NOW + 80001, "test"), 0);
    ck_assert_uint_eq(auth_guard_failed(g, "h:1", NOW + 80001, "test"), 250);
    ck_assert_uint_eq(auth_guard_failed(g, "h:1", NOW + 90000, "test"), 500);
    ck_assert_uint_eq(auth_guard_failed(g, "h:1", NOW + 90000 + 15 * 60 * 1000 + 1, "test"), 250);
    auth_guard_free(g);
}
END_TEST

/* With every slot taken, the host that failed longest ago is forgotten
 * for a new one. */
START_TEST(test_full_record)
{
    struct auth_guard *g = auth_guard_new();
    char peer[32];
    for (int i = 0; i < 300; i++) {
        snprintf(peer, sizeof peer, "10.1.%d.%d:9", i / 256, i % 256);
        auth_guard_failed(g, peer, NOW + (uint64_t)i, "test");
    }
    ck_assert_uint_eq(auth_guard_wait_ms(g, "10.1.0.0:9", NOW + 300, "test"), 0);  /* forgotten */
    ck_assert_uint_gt(auth_guard_wait_ms(g, "10.1.1.43:9", NOW + 300, "test"), 0); /* the 300th */
    auth_guard_free(g);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"delays", test_delays},
        {"wait_per_host", test_wait_per_host},
        {"forgive_and_forget", test_forgive_and_forget},
        {"full_record", test_full_record},
    };
    return unit_run(unit_suite_fixture("auth_guard", cases, WQ_ARRAY_LEN(cases), NULL, NULL), NULL);
}
