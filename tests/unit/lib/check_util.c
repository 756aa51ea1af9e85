/* check_util.c - unit tests for strict number parsing and times
 * (src/lib/util.c). */
#include "lib/wq.h"
#include "lib/util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rng.h"
#include "unit.h"

/* ---- util_parse_u64 ---------------------------------------------------- */

static int
pu64(const char *s, uint64_t max, uint64_t *out)
{
    return util_parse_u64(s, strlen(s), max, out);
}

START_TEST(test_parse_u64_valid)
{
    static const struct {
        const char *s;
        uint64_t want;
    } ok[] = {
        {"0", 0},
        {"7", 7},
        {"123", 123},
        {"00000", 0},
        {"007", 7},
        {"86400000", 86400000},
        {"4294967296", 4294967296ULL},
        {"18446744073709551615", UINT64_MAX},
        {"000000000000000000000018446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        uint64_t v = 12345;
        ck_assert_msg(pu64(ok[i].s, UINT64_MAX, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_uint_eq(v, ok[i].want);
    }
}
END_TEST

START_TEST(test_parse_u64_invalid)
{
    static const char *const bad[] = {
        "",
        "+1",
        "-1",
        " 1",
        "1 ",
        "1a",
        "a1",
        "0x10",
        "1.0",
        "1e3",
        "\t1",
        "1\n",
        "1,000",
        "-0",
        "+0",
        "\xd9\xa1", /* Arabic-Indic one */
        "18446744073709551616",
        "18446744073709551620",
        "99999999999999999999",
        "184467440737095516150",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        uint64_t v;
        ck_assert_msg(pu64(bad[i], UINT64_MAX, &v) == -1, "accepted \"%s\"", bad[i]);
    }
}
END_TEST

START_TEST(test_parse_u64_bounds_and_len)
{
    uint64_t v;
    ck_assert_int_eq(pu64("100", 100, &v), 0);
    ck_assert_uint_eq(v, 100);
    ck_assert_int_eq(pu64("101", 100, &v), -1);
    ck_assert_int_eq(pu64("0100", 100, &v), 0);
    ck_assert_int_eq(pu64("0", 0, &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(pu64("1", 0, &v), -1);
    ck_assert_int_eq(pu64("86400000", WQ_MAX_TTR_MS, &v), 0);
    ck_assert_int_eq(pu64("86400001", WQ_MAX_TTR_MS, &v), -1);
    ck_assert_int_eq(pu64("18446744073709551615", UINT64_MAX - 1, &v), -1);

    /* Only s[0..len) is read: tokens of a longer line. */
    ck_assert_int_eq(util_parse_u64("123abc", 3, UINT64_MAX, &v), 0);
    ck_assert_uint_eq(v, 123);
    ck_assert_int_eq(util_parse_u64("123 456", 3, UINT64_MAX, &v), 0);
    ck_assert_uint_eq(v, 123);
    ck_assert_int_eq(util_parse_u64("123", 0, UINT64_MAX, &v), -1);
    ck_assert_int_eq(util_parse_u64("184467440737095516159", 20, UINT64_MAX, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);

    /* Every value near the top parses back to itself. */
    for (uint64_t x = UINT64_MAX - 1000; x != 0; x++) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)x);
        REQUIRE(util_parse_u64(buf, (size_t)n, UINT64_MAX, &v) == 0 && v == x);
        REQUIRE(util_parse_u64(buf, (size_t)n, x - 1, &v) == -1);
    }
}
END_TEST

/* ---- util_parse_i64 ---------------------------------------------------- */

static int
pi64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    return util_parse_i64(s, strlen(s), min, max, out);
}

START_TEST(test_parse_i64)
{
    static const struct {
        const char *s;
        int64_t want;
    } ok[] = {
        {"0", 0},
        {"-0", 0},
        {"+0", 0},
        {"5", 5},
        {"+5", 5},
        {"-5", -5},
        {"-007", -7},
        {"2147483647", INT32_MAX},
        {"-2147483648", INT32_MIN},
        {"+2147483647", INT32_MAX},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        int64_t v = 12345;
        ck_assert_msg(pi64(ok[i].s, INT32_MIN, INT32_MAX, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_int_eq(v, ok[i].want);
    }
    static const char *const bad[] = {
        "",   "+",   "-",   "--1",        "+-1",         "-+1",         "++1",         " -1", "- 1",
        "1-", "-1 ", "1+1", "2147483648", "-2147483649", "+2147483648", "99999999999", "-x",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        int64_t v;
        ck_assert_msg(pi64(bad[i], INT32_MIN, INT32_MAX, &v) == -1, "accepted \"%s\"", bad[i]);
    }
}
END_TEST

START_TEST(test_parse_i64_full_range)
{
    int64_t v;
    ck_assert_int_eq(pi64("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(pi64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(pi64("-9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
    ck_assert_int_eq(v, -INT64_MAX);
    ck_assert_int_eq(pi64("9223372036854775808", INT64_MIN, INT64_MAX, &v), -1);
    ck_assert_int_eq(pi64("+9223372036854775808", INT64_MIN, INT64_MAX, &v), -1);
    ck_assert_int_eq(pi64("-9223372036854775809", INT64_MIN, INT64_MAX, &v), -1);
    ck_assert_int_eq(pi64("18446744073709551615", INT64_MIN, INT64_MAX, &v), -1);
    ck_assert_int_eq(pi64("-18446744073709551615", INT64_MIN, INT64_MAX, &v), -1);
    ck_assert_int_eq(pi64("-18446744073709551616", INT64_MIN, INT64_MAX, &v), -1);
    /* Bounds that exclude zero and negative numbers. */
    ck_assert_int_eq(pi64("0", 1, 10, &v), -1);
    ck_assert_int_eq(pi64("-1", 0, 10, &v), -1);
    ck_assert_int_eq(pi64("+10", 1, 10, &v), 0);
    ck_assert_int_eq(v, 10);
    /* Only s[0..len) is read. */
    ck_assert_int_eq(util_parse_i64("-12x", 3, INT64_MIN, INT64_MAX, &v), 0);
    ck_assert_int_eq(v, -12);
    ck_assert_int_eq(util_parse_i64("-12", 1, INT64_MIN, INT64_MAX, &v), -1);
}
END_TEST

/* ---- util_format_time / util_parse_time -------------------------------- */

#define MS_0000 (-62167219200000LL) /* 0000-01-01T00:00:00Z */
#define MS_9999 (253402300799000LL) /* 9999-12-31T23:59:59Z */

static void
check_format(int64_t ms, const char *want)
{
    char buf[21];
    memset(buf, '#', sizeof buf);
    size_t n = util_format_time(ms, buf);
    ck_assert_uint_eq(n, 20);
    ck_assert_uint_eq(strlen(buf), 20);
    ck_assert_msg(strcmp(buf, want) == 0, "%lld: got %s want %s", (long long)ms, buf, want);
}

START_TEST(test_format_time)
{
    check_format(0, "1970-01-01T00:00:00Z");
    check_format(999, "1970-01-01T00:00:00Z"); /* milliseconds are dropped */
    check_format(1000, "1970-01-01T00:00:01Z");
    check_format(1700000000000LL, "2023-11-14T22:13:20Z");
    check_format(1700000000999LL, "2023-11-14T22:13:20Z");
    check_format(951782400000LL, "2000-02-29T00:00:00Z");
    check_format(1709210096000LL, "2024-02-29T12:34:56Z");
    check_format(4102444799000LL, "2099-12-31T23:59:59Z");
    /* Before 1970: rounded down to the second, never towards zero. */
    check_format(-1, "1969-12-31T23:59:59Z");
    check_format(-999, "1969-12-31T23:59:59Z");
    check_format(-1000, "1969-12-31T23:59:59Z");
    check_format(-1001, "1969-12-31T23:59:58Z");
    check_format(-86400000LL, "1969-12-31T00:00:00Z");
    check_format(-2208988800000LL, "1900-01-01T00:00:00Z");
    /* Four-digit years, zero-padded, as util_parse_time reads them. */
    check_format(-46374379200000LL, "0500-06-15T12:00:00Z");
    check_format(MS_0000, "0000-01-01T00:00:00Z");
    check_format(MS_9999, "9999-12-31T23:59:59Z");
    check_format(MS_9999 + 999, "9999-12-31T23:59:59Z");
    /* Outside the four-digit years: clamped, still 20 bytes. */
    check_format(MS_9999 + 1000, "9999-12-31T23:59:59Z");
    check_format(INT64_MAX, "9999-12-31T23:59:59Z");
    check_format(MS_0000 - 1, "0000-01-01T00:00:00Z");
    check_format(INT64_MIN, "0000-01-01T00:00:00Z");
}
END_TEST

static int
ptime(const char *s, int64_t *ms)
{
    return util_parse_time(s, strlen(s), ms);
}

START_TEST(test_parse_time_valid)
{
    static const struct {
        const char *s;
        int64_t want;
    } ok[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"2023-11-14T22:13:20Z", 1700000000000LL},
        {"2023-11-14T22:13:20.1Z", 1700000000100LL},
        {"2023-11-14T22:13:20.12Z", 1700000000120LL},
        {"2023-11-14T22:13:20.123Z", 1700000000123LL},
        {"2023-11-14T22:13:20.1239Z", 1700000000123LL}, /* truncated, not rounded */
        {"2023-11-14T22:13:20.05Z", 1700000000050LL},
        {"2023-11-14T22:13:20.000000001Z", 1700000000000LL},
        {"2023-11-14T22:13:20.999999999Z", 1700000000999LL},
        {"2023-11-14T22:13:20.000Z", 1700000000000LL},
        {"2024-02-29T12:34:56Z", 1709210096000LL},
        {"2000-02-29T00:00:00Z", 951782400000LL},
        {"1969-12-31T23:59:59.999Z", -1},
        {"1900-01-01T00:00:00Z", -2208988800000LL},
        {"0000-01-01T00:00:00Z", MS_0000},
        {"0000-02-29T00:00:00Z", MS_0000 + 59LL * 86400000}, /* year 0 is a leap year */
        {"9999-12-31T23:59:59.999Z", MS_9999 + 999},
        {"2023-01-31T23:59:59Z", 1675209599000LL},
        {"2023-04-30T00:00:00Z", 1682812800000LL},
        {"2023-12-31T23:59:59Z", 1704067199000LL},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        int64_t v = 12345;
        ck_assert_msg(ptime(ok[i].s, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_msg(v == ok[i].want, "%s: got %lld want %lld", ok[i].s, (long long)v,
                      (long long)ok[i].want);
    }
    /* Only s[0..len) is read. */
    int64_t v;
    ck_assert_int_eq(util_parse_time("1970-01-01T00:00:01Zjunk", 20, &v), 0);
    ck_assert_int_eq(v, 1000);
}
END_TEST

START_TEST(test_parse_time_invalid)
{
    static const char *const bad[] = {
        "",
        "Z",
        "2023-02-29T00:00:00Z", /* not a leap year */
        "2100-02-29T00:00:00Z", /* divisible by 100, not by 400 */
        "1900-02-29T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2023-04-31T00:00:00Z",
        "2023-06-31T00:00:00Z",
        "2023-13-01T00:00:00Z",
        "2023-00-10T00:00:00Z",
        "2023-01-00T00:00:00Z",
        "2023-01-32T00:00:00Z",
        "2023-01-01T24:00:00Z",
        "2023-01-01T23:60:00Z",
        "2023-01-01T23:59:60Z", /* no leap seconds */
        "2023-11-14T22:13:20",  /* missing Z */
        "2023-11-14T22:13:20.123",
        "2023-11-14T22:13:20z", /* lowercase z */
        "2023-11-14t22:13:20Z",
        "2023-11-14 22:13:20Z",
        "2023-11-14T22:13:20,123Z",        /* comma as decimal mark */
        "2023-11-14T22:13:20.1234567890Z", /* 10 fraction digits */
        "2023-11-14T22:13:20.Z",           /* "." without digits */
        "2023-11-14T22:13:20.12a4Z",
        "2023-11-14T22:13:20.-1Z",
        "2023-11-14T22:13:20+00:00",
        "2023-11-14T22:13:20+00:00Z",
        "2023-11-14T22:13:20ZZ",
        "2023-11-14T22:13:20Z ",
        " 2023-11-14T22:13:20Z",
        "23-11-14T22:13:20Z",
        "02023-11-14T22:13:20Z",
        "2023-1-14T22:13:20Z",
        "2023-11-4T22:13:20Z",
        "2023-11-14T2:13:20Z",
        "2023-11-14T22:13:2Z",
        "2023/11/14T22:13:20Z",
        "2023-11-14T22-13-20Z",
        "2O23-11-14T22:13:20Z",
        "-023-11-14T22:13:20Z",
        "+023-11-14T22:13:20Z",
        "2023-+1-14T22:13:20Z",
        "2023-11-14T22:13:+0Z",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        int64_t v;
        ck_assert_msg(ptime(bad[i], &v) == -1, "accepted \"%s\"", bad[i]);
    }
    /* A valid time cut short by len. */
    int64_t v;
    ck_assert_int_eq(util_parse_time("1970-01-01T00:00:00Z", 19, &v), -1);
}
END_TEST

START_TEST(test_time_roundtrip)
{
    /* format -> parse gives the time rounded down to the second, and
     * parse -> format gives the text back, over the whole four-digit range. */
    int64_t span = MS_9999 + 1000 - MS_0000;
    rng_seed(0x853c49e6748fea9bULL);
    for (int i = 0; i < 200000; i++) {
        int64_t ms = MS_0000 + (int64_t)(rng_next() % (uint64_t)span);
        if (i < 1000)
            ms = (int64_t)(rng_next() % 4000000) - 2000000; /* around the epoch */
        char buf[21], again[21];
        int64_t back;
        REQUIRE(util_format_time(ms, buf) == 20);
        REQUIRE(util_parse_time(buf, 20, &back) == 0);
        int64_t floor_s = ms - ((ms % 1000) + 1000) % 1000;
        REQUIRE(back == floor_s);
        REQUIRE(util_format_time(back, again) == 20);
        REQUIRE(strcmp(buf, again) == 0);
    }
}
END_TEST

START_TEST(test_now_ms)
{
    /* Non-decreasing, and on the wall clock's scale (Unix milliseconds). */
    uint64_t a = util_now_ms();
    uint64_t b = util_now_ms();
    ck_assert_uint_ge(b, a);
    int64_t wall = (int64_t)time(NULL) * 1000;
    int64_t diff = (int64_t)b - wall;
    ck_assert_int_lt(diff < 0 ? -diff : diff, 600000);
}
END_TEST

static Suite *
util_suite(void)
{
    const struct unit_case cases[] = {
        {"parse_u64_valid", test_parse_u64_valid},
        {"parse_u64_invalid", test_parse_u64_invalid},
        {"parse_u64_bounds_and_len", test_parse_u64_bounds_and_len},
        {"parse_i64", test_parse_i64},
        {"parse_i64_full_range", test_parse_i64_full_range},
        {"format_time", test_format_time},
        {"parse_time_valid", test_parse_time_valid},
        {"parse_time_invalid", test_parse_time_invalid},
        {"time_roundtrip", test_time_roundtrip},
        {"now_ms", test_now_ms},
    };
    return unit_suite("util", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(util_suite(), NULL);
}
