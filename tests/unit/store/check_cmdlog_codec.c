/* check_cmdlog_codec.c - unit tests for the command-log format
 * (src/store/cmdlog_codec.c): CRC-32C, varints, times, records and segment names.
 *
 * Every record format test is a cross-check against tests/common/cmdlog_ref.c, an
 * independent reader and writer built from doc/protocol-reference.md section 6: src
 * encodes, the reference decodes, and the other way round, and both must
 * produce the same bytes. */
#include "lib/wq.h"
#include "store/cmdlog_codec.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdlog_ref.h"
#include "cmdlog_check.h"
#include "unit.h"

/* ---- helpers ---- */

static void
hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

#define REQUIRE_BYTES(got, want, n)                                                                \
    do {                                                                                           \
        const uint8_t *g_ = (const uint8_t *)(got), *w_ = (const uint8_t *)(want);                 \
        size_t n_ = (n);                                                                           \
        if (memcmp(g_, w_, n_) != 0) {                                                             \
            char gh_[2 * 64 + 1] = "", wh_[2 * 64 + 1] = "";                                       \
            hex(g_, WQ_MIN(n_, (size_t)64), gh_);                                                  \
            hex(w_, WQ_MIN(n_, (size_t)64), wh_);                                                  \
            ck_abort_msg("%s differs from %s:\n got  %s\n want %s", #got, #want, gh_, wh_);        \
        }                                                                                          \
    } while (0)

/* ---- CRC-32C ---- */

START_TEST(test_crc32c_vectors)
{
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    /* RFC 3720 (iSCSI) appendix B.4 and the classic check value */
    ck_assert_uint_eq(cmdlog_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(cmdlog_crc32c(0, "", 0), 0u);
    ck_assert_uint_eq(cmdlog_crc32c(0, zeros, 32), 0x8A9136AAu);
    ck_assert_uint_eq(cmdlog_crc32c(0, ones, 32), 0x62A8AB43u);
    ck_assert_uint_eq(cmdlog_crc32c(0, inc, 32), 0x46DD794Eu);
    ck_assert_uint_eq(cmdlog_crc32c(0, "a", 1), 0xC1D04330u);
    /* the reference agrees */
    ck_assert_uint_eq(ref_crc32c("123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(ref_crc32c("", 0), 0u);
    ck_assert_uint_eq(ref_crc32c(zeros, 32), 0x8A9136AAu);
    ck_assert_uint_eq(ref_crc32c(inc, 32), 0x46DD794Eu);
    /* continuing a CRC over pieces gives the CRC of the whole */
    uint8_t buf[1000];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    uint32_t whole = cmdlog_crc32c(0, buf, sizeof buf);
    ck_assert_uint_eq(whole, ref_crc32c(buf, sizeof buf));
    for (size_t cut = 0; cut <= sizeof buf; cut += 37)
        ck_assert_uint_eq(cmdlog_crc32c(cmdlog_crc32c(0, buf, cut), buf + cut, sizeof buf - cut),
                          whole);
    for (size_t n = 0; n < 64; n++)
        ck_assert_uint_eq(cmdlog_crc32c(0, buf + 3, n), ref_crc32c(buf + 3, n));
}
END_TEST

/* ---- varints ---- */

START_TEST(test_uvarint_round_trip)
{
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {
        {0, 1},
        {1, 1},
        {127, 1},
        {128, 2},
        {255, 2},
        {300, 2},
        {16383, 2},
        {16384, 3},
        {(1ull << 32) - 1, 5},
        {1ull << 56, 9},
        {(1ull << 63) - 1, 9},
        {1ull << 63, 10},
        {UINT64_MAX, 10},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        uint8_t a[16], b[16];
        uint64_t back = 42;
        size_t n = cmdlog_uvarint_put(a, cases[i].v);
        ck_assert_uint_eq(n, cases[i].len);
        ck_assert_uint_eq(ref_uvarint_put(b, cases[i].v), n);
        REQUIRE_BYTES(a, b, n);
        ck_assert_uint_eq(cmdlog_uvarint_get(a, n, &back), n);
        ck_assert_uint_eq(back, cases[i].v);
        /* more input after it is not read */
        a[n] = 0x7f;
        ck_assert_uint_eq(cmdlog_uvarint_get(a, n + 1, &back), n);
        /* every cut is truncated */
        for (size_t k = 0; k < n; k++)
            ck_assert_uint_eq(cmdlog_uvarint_get(a, k, &back), 0);
    }
    static const uint8_t v300[] = {0xac, 0x02};
    static const uint8_t vmax[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t v2_63[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    uint8_t out[10];
    REQUIRE(cmdlog_uvarint_put(out, 300) == 2);
    REQUIRE_BYTES(out, v300, 2);
    REQUIRE(cmdlog_uvarint_put(out, UINT64_MAX) == 10);
    REQUIRE_BYTES(out, vmax, 10);
    REQUIRE(cmdlog_uvarint_put(out, 1ull << 63) == 10);
    REQUIRE_BYTES(out, v2_63, 10);
}
END_TEST

START_TEST(test_uvarint_rejects)
{
    uint64_t v = 7;
    /* an eleventh byte */
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x01};
    ck_assert_uint_eq(cmdlog_uvarint_get(eleven, sizeof eleven, &v), 0);
    /* a tenth byte with more than the 64th bit */
    static const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    ck_assert_uint_eq(cmdlog_uvarint_get(big, sizeof big, &v), 0);
    static const uint8_t big7f[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
    ck_assert_uint_eq(cmdlog_uvarint_get(big7f, sizeof big7f, &v), 0);
    /* a continuation bit on the last byte there is */
    static const uint8_t open[] = {0x80};
    ck_assert_uint_eq(cmdlog_uvarint_get(open, 1, &v), 0);
    ck_assert_uint_eq(cmdlog_uvarint_get(open, 0, &v), 0);
    ck_assert_uint_eq(v, 7);
    /* non-minimal encodings are what Go's binary.Uvarint accepts too */
    static const uint8_t padded[] = {0x80, 0x00};
    ck_assert_uint_eq(cmdlog_uvarint_get(padded, 2, &v), 2);
    ck_assert_uint_eq(v, 0);
}
END_TEST

START_TEST(test_varint_zigzag)
{
    static const struct {
        int64_t v;
        uint64_t zz;
    } cases[] = {
        {0, 0},
        {-1, 1},
        {1, 2},
        {-2, 3},
        {2, 4},
        {-5, 9},
        {63, 126},
        {-64, 127},
        {64, 128},
        {INT32_MAX, 4294967294u},
        {INT32_MIN, 4294967295u},
        {INT64_MAX, UINT64_MAX - 1},
        {INT64_MIN, UINT64_MAX},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        uint8_t a[10], b[10], u[10];
        int64_t back = 42;
        size_t n = cmdlog_varint_put(a, cases[i].v);
        ck_assert_uint_eq(ref_varint_put(b, cases[i].v), n);
        REQUIRE_BYTES(a, b, n);
        ck_assert_uint_eq(cmdlog_uvarint_put(u, cases[i].zz), n);
        REQUIRE_BYTES(a, u, n);
        ck_assert_uint_eq(cmdlog_varint_get(a, n, &back), n);
        ck_assert_int_eq(back, cases[i].v);
        for (size_t k = 0; k < n; k++)
            ck_assert_uint_eq(cmdlog_varint_get(a, k, &back), 0);
    }
    static const uint8_t too_long[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03};
    int64_t v;
    ck_assert_uint_eq(cmdlog_varint_get(too_long, sizeof too_long, &v), 0);
}
END_TEST

/* ---- Go's binary time ---- */

START_TEST(test_time_unix_epoch)
{
    /* 62135596800 = 0x0E7791F700 */
    static const uint8_t want[CMDLOG_TIME_LEN] = {1,    0, 0, 0, 0x0e, 0x77, 0x91, 0xf7,
                                                  0x00, 0, 0, 0, 0,    0xff, 0xff};
    uint8_t a[CMDLOG_TIME_LEN], b[CMDLOG_TIME_LEN];
    cmdlog_time_put(a, true, 0);
    ref_time_put(b, true, 0);
    REQUIRE_BYTES(a, want, CMDLOG_TIME_LEN);
    REQUIRE_BYTES(b, want, CMDLOG_TIME_LEN);
    bool has = false;
    int64_t ms = 42;
    ck_assert_int_eq(cmdlog_time_get(want, &has, &ms), 0);
    REQUIRE(has);
    ck_assert_int_eq(ms, 0);
    ck_assert_int_eq(CMDLOG_EPOCH_OFFSET, 62135596800LL);

    /* 2017-03-14T15:09:26.535Z, with its nanoseconds in bytes 9-12 */
    cmdlog_time_put(a, true, 1489504166535LL);
    static const uint8_t pi[CMDLOG_TIME_LEN] = {1,    0,    0,    0,    0x0e, 0xd0, 0x59, 0xfe,
                                                0xa6, 0x1f, 0xe3, 0x73, 0xc0, 0xff, 0xff};
    REQUIRE_BYTES(a, pi, CMDLOG_TIME_LEN);
}
END_TEST

START_TEST(test_time_zero)
{
    static const uint8_t zero[CMDLOG_TIME_LEN] = {1, 0, 0, 0, 0, 0,    0,   0,
                                                  0, 0, 0, 0, 0, 0xff, 0xff};
    uint8_t a[CMDLOG_TIME_LEN];
    cmdlog_time_put(a, false, 123456);
    REQUIRE_BYTES(a, zero, CMDLOG_TIME_LEN);
    bool has = true;
    int64_t ms = 42;
    ck_assert_int_eq(cmdlog_time_get(zero, &has, &ms), 0);
    REQUIRE(!has);
    /* 0001-01-01T00:00:00Z is Go's zero time, whichever way it is asked for */
    cmdlog_time_put(a, true, -62135596800000LL);
    REQUIRE_BYTES(a, zero, CMDLOG_TIME_LEN);
    has = true;
    ck_assert_int_eq(cmdlog_time_get(a, &has, &ms), 0);
    REQUIRE(!has);
    /* one millisecond later is a time */
    cmdlog_time_put(a, true, -62135596800000LL + 1);
    ck_assert_int_eq(cmdlog_time_get(a, &has, &ms), 0);
    REQUIRE(has);
    ck_assert_int_eq(ms, -62135596800000LL + 1);
    /* the zero time with another offset (a Go time.Time{} in a zone) */
    uint8_t z0[CMDLOG_TIME_LEN];
    ref_time_put_raw(z0, 1, 0, 0, 0);
    ck_assert_int_eq(cmdlog_time_get(z0, &has, &ms), 0);
    REQUIRE(!has);
}
END_TEST

START_TEST(test_time_offsets_accepted)
{
    static const int16_t offsets[] = {-1, 0, 60, -480, 330, 840, -720, INT16_MAX, INT16_MIN};
    int64_t unix_ms = 1489504166535LL;
    for (size_t i = 0; i < WQ_ARRAY_LEN(offsets); i++) {
        uint8_t t[CMDLOG_TIME_LEN];
        /* the seconds are absolute (UTC) whatever the zone */
        ref_time_put_raw(t, 1, unix_ms / 1000 + CMDLOG_EPOCH_OFFSET, 535000000, offsets[i]);
        bool has = false;
        int64_t ms = 0;
        ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), 0);
        REQUIRE(has);
        ck_assert_int_eq(ms, unix_ms);
    }
}
END_TEST

START_TEST(test_time_negative_and_rounding)
{
    static const int64_t values[] = {
        -1,
        -999,
        -1000,
        -1001,
        -86400000,
        1,
        999,
        1000,
        4102444800123LL,
        -2208988800000LL,
        253402300799999LL,
        -62135596800000LL + 1000,
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(values); i++) {
        uint8_t a[CMDLOG_TIME_LEN], b[CMDLOG_TIME_LEN];
        cmdlog_time_put(a, true, values[i]);
        ref_time_put(b, true, values[i]);
        REQUIRE_BYTES(a, b, CMDLOG_TIME_LEN);
        bool has = false;
        int64_t ms = 0;
        ck_assert_int_eq(cmdlog_time_get(a, &has, &ms), 0);
        REQUIRE(has);
        ck_assert_int_eq(ms, values[i]);
        /* nanoseconds always lie in [0, 1e9) */
        uint32_t ns = (uint32_t)a[9] << 24 | (uint32_t)a[10] << 16 | (uint32_t)a[11] << 8 | a[12];
        REQUIRE(ns < 1000000000u);
    }
    /* -1 ms is 1969-12-31T23:59:59.999Z */
    uint8_t t[CMDLOG_TIME_LEN], w[CMDLOG_TIME_LEN];
    cmdlog_time_put(t, true, -1);
    ref_time_put_raw(w, 1, CMDLOG_EPOCH_OFFSET - 1, 999000000, -1);
    REQUIRE_BYTES(t, w, CMDLOG_TIME_LEN);

    /* nanoseconds are cut to the millisecond below (floor) */
    static const struct {
        int64_t sec_after_1970;
        int32_t ns;
        int64_t ms;
    } cuts[] = {
        {0, 1, 0},           {0, 999999, 0},
        {0, 1000000, 1},     {0, 1999999, 1},
        {0, 999999999, 999}, {-1, 999999999, -1},
        {-1, 1, -1000},      {-1, 999999, -1000},
        {-1, 1000000, -999}, {1489504166, 535897932, 1489504166535LL},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cuts); i++) {
        ref_time_put_raw(t, 1, cuts[i].sec_after_1970 + CMDLOG_EPOCH_OFFSET, cuts[i].ns, -1);
        bool has = false;
        int64_t ms = 0, rms = 0;
        ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), 0);
        REQUIRE(has);
        ck_assert_int_eq(ms, cuts[i].ms);
        ck_assert_int_eq(ref_time_get(t, &has, &rms), 0);
        ck_assert_int_eq(rms, cuts[i].ms);
    }
}
END_TEST

START_TEST(test_time_malformed)
{
    uint8_t t[CMDLOG_TIME_LEN];
    bool has;
    int64_t ms;
    static const uint8_t versions[] = {0, 2, 0xff};
    for (size_t i = 0; i < WQ_ARRAY_LEN(versions); i++) {
        ref_time_put_raw(t, versions[i], CMDLOG_EPOCH_OFFSET, 0, -1);
        ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), -1);
    }
    /* nanoseconds out of range */
    ref_time_put_raw(t, 1, CMDLOG_EPOCH_OFFSET, 1000000000, -1);
    ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), -1);
    ref_time_put_raw(t, 1, CMDLOG_EPOCH_OFFSET, -1, -1);
    ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), -1);
    /* seconds whose milliseconds do not fit an int64 */
    ref_time_put_raw(t, 1, INT64_MAX, 0, -1);
    ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), -1);
    ref_time_put_raw(t, 1, INT64_MIN, 0, -1);
    ck_assert_int_eq(cmdlog_time_get(t, &has, &ms), -1);
}
END_TEST

/* ---- records: src and the reference against each other ---- */

static uint8_t big_payload[20000];
static char long_name[256];

/* Everything a record may hold, to build it both ways. */
struct spec {
    int code;
    int64_t at_ms;
    uint64_t idn;
    const char *name;
    uint64_t ttr, ttl;
    int64_t prio;
    uint64_t max_attempts, max_fails;
    const void *payload;
    size_t payload_len;
    int64_t time_ms; /* schedule */
    uint32_t time_ns;
    int64_t created_ms;
    const void *result;
    size_t result_len;
};

static void
specs_init(void)
{
    for (size_t i = 0; i < sizeof big_payload; i++)
        big_payload[i] = (uint8_t)(i * 7 + i / 256);
    memset(long_name, 'n', 255);
    long_name[255] = '\0';
}

static const struct spec specs[] = {
    {REF_ADD, NOW, 1, "q", 60000, 3600000, 0, 0, 0, "hello", 5, 0, 0, NOW - 5, NULL, 0},
    {REF_ADD, NOW + 1, 2, "emails", 1, 1, -5, 3, 2, "", 0, 0, 0, NOW, NULL, 0},
    {REF_ADD, NOW, 3, "x.y-z_0", 86400000, UINT64_MAX, INT32_MIN, 255, 255, NULL, 0, 0, 0, NOW,
     NULL, 0},
    {REF_ADD, NOW, 4, "p", 5, 1ull << 63, INT32_MAX, 0, 0, NULL, 0, 0, 0, NOW, NULL, 0},
    {REF_ADD, NOW, 5, NULL /* long_name */, 1000, 1000, INT64_MIN, 128, 127, NULL /* big */, 0, 0,
     0, NOW, NULL, 0},
    {REF_ADD, -1, 6, "before-1970", 1000, TTL_LONG, 0, 0, 0, "x", 1, 0, 0, -86400001LL, NULL, 0},
    {REF_SCHEDULE, NOW, 7, "reports", 30000, 3600000, 10, 1, 0, "yearly", 6, 4102444799123LL,
     456789, NOW - 1, NULL, 0},
    {REF_SCHEDULE, NOW, 8, "r", 30000, 3600000, 0, 0, 0, "", 0, NOW + 1, 0, NOW, NULL, 0},
    {REF_SCHEDULE, NOW, 9, "old", 30000, 3600000, INT64_MAX, 0, 0, "", 0, -1, 999999, -1, NULL, 0},
    {REF_COMPLETE, NOW, 10, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, "ok", 2},
    {REF_COMPLETE, NOW, 11, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, "", 0},
    {REF_COMPLETE, NOW, 12, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL /* big */, 300},
    {REF_FAIL, NOW, 13, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, "boom\r\n\0x", 8},
    {REF_FAIL, NOW, 14, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
    {REF_DELETE, NOW, 15, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
    {REF_EXPIRE, NOW, 16, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
    {REF_START_ATTEMPT, NOW, 17, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
    {REF_TIMEOUT_ATTEMPT, NOW, 18, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
    {REF_FAIL_RETRY, NOW, 0xffffffffffffull, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0},
};

/* The spec with its placeholders filled in. */
static struct spec
spec_get(size_t i)
{
    struct spec s = specs[i];
    if (s.code <= REF_SCHEDULE && s.name == NULL) {
        s.name = long_name;
        s.payload = big_payload;
        s.payload_len = sizeof big_payload;
    }
    if (s.code == REF_COMPLETE && s.result == NULL && s.result_len > 0)
        s.result = big_payload;
    return s;
}

/* Append s to b with the reference writer; returns its offset. */
static size_t
spec_ref(struct ref_buf *b, const struct spec *s)
{
    uint8_t id[JOBID_LEN];
    id_of(s->idn, id);
    switch (s->code) {
    case REF_ADD:
        return ref_rec_add(b, s->at_ms, id, s->name, s->ttr, s->ttl, s->prio, s->max_attempts,
                           s->max_fails, s->payload, s->payload_len, s->created_ms);
    case REF_SCHEDULE:
        return ref_rec_schedule_ns(b, s->at_ms, id, s->name, s->ttr, s->ttl, s->prio,
                                   s->max_attempts, s->max_fails, s->payload, s->payload_len,
                                   s->time_ms, s->time_ns, s->created_ms);
    case REF_COMPLETE:
    case REF_FAIL:
        return ref_rec_result(b, s->at_ms, s->code, id, s->result, s->result_len);
    default:
        return ref_rec_id(b, s->at_ms, s->code, id);
    }
}

/* The same as src's struct. */
static void
spec_src(const struct spec *s, struct cmdlog_rec *r)
{
    memset(r, 0, sizeof *r);
    r->code = (uint8_t)s->code;
    r->at_ms = s->at_ms;
    id_of(s->idn, r->id);
    if (s->code == REF_ADD || s->code == REF_SCHEDULE) {
        r->name = (struct wq_str){s->name, strlen(s->name)};
        r->ttr = s->ttr;
        r->ttl = s->ttl;
        r->priority = s->prio;
        r->max_attempts = s->max_attempts;
        r->max_fails = s->max_fails;
        r->payload = (struct wq_str){s->payload, s->payload_len};
        r->timed = s->code == REF_SCHEDULE;
        r->time_ms = r->timed ? s->time_ms : 0;
        r->time_ns = r->timed ? s->time_ns : 0;
        r->created_ms = s->created_ms;
    } else if (s->code == REF_COMPLETE || s->code == REF_FAIL) {
        r->result = (struct wq_str){s->result, s->result_len};
    }
}

static void
require_wq_str(struct wq_str got, const void *want, size_t n)
{
    ck_assert_uint_eq(got.n, n);
    if (n > 0)
        ck_assert_mem_eq(got.p, want, n);
}

/* src's decoding of a record matches the spec. */
static void
require_src_rec(const struct cmdlog_rec *r, const struct spec *s)
{
    uint8_t id[JOBID_LEN];
    id_of(s->idn, id);
    ck_assert_uint_eq(r->code, s->code);
    ck_assert_int_eq(r->at_ms, s->at_ms);
    ck_assert_mem_eq(r->id, id, JOBID_LEN);
    if (s->code == REF_ADD || s->code == REF_SCHEDULE) {
        require_wq_str(r->name, s->name, strlen(s->name));
        ck_assert_uint_eq(r->ttr, s->ttr);
        ck_assert_uint_eq(r->ttl, s->ttl);
        ck_assert_int_eq(r->priority, s->prio);
        ck_assert_uint_eq(r->max_attempts, s->max_attempts);
        ck_assert_uint_eq(r->max_fails, s->max_fails);
        require_wq_str(r->payload, s->payload, s->payload_len);
        ck_assert_int_eq(r->timed, s->code == REF_SCHEDULE);
        if (s->code == REF_SCHEDULE) {
            ck_assert_int_eq(r->time_ms, s->time_ms);
            ck_assert_uint_eq(r->time_ns, s->time_ns);
        }
        ck_assert_int_eq(r->created_ms, s->created_ms);
    } else if (s->code == REF_COMPLETE || s->code == REF_FAIL) {
        require_wq_str(r->result, s->result, s->result_len);
    }
}

/* The reference's decoding of a record matches the spec. */
static void
require_ref_rec(const struct ref_rec *r, const struct spec *s)
{
    uint8_t id[JOBID_LEN];
    id_of(s->idn, id);
    ck_assert_int_eq(r->code, s->code);
    ck_assert_int_eq(r->at_ms, s->at_ms);
    ck_assert_mem_eq(r->id, id, JOBID_LEN);
    if (s->code == REF_ADD || s->code == REF_SCHEDULE) {
        ck_assert_uint_eq(r->name_len, strlen(s->name));
        ck_assert_mem_eq(r->name, s->name, r->name_len);
        ck_assert_uint_eq(r->ttr, s->ttr);
        ck_assert_uint_eq(r->ttl, s->ttl);
        ck_assert_int_eq(r->prio, s->prio);
        ck_assert_uint_eq(r->max_attempts, s->max_attempts);
        ck_assert_uint_eq(r->max_fails, s->max_fails);
        ck_assert_uint_eq(r->payload_len, s->payload_len);
        if (s->payload_len > 0)
            ck_assert_mem_eq(r->payload, s->payload, s->payload_len);
        ck_assert_int_eq(r->has_time, s->code == REF_SCHEDULE);
        if (s->code == REF_SCHEDULE) {
            ck_assert_int_eq(r->time_ms, s->time_ms);
            ck_assert_uint_eq(r->time_ns, s->time_ns);
        }
        ck_assert_int_eq(r->created_ms, s->created_ms);
    } else if (s->code == REF_COMPLETE || s->code == REF_FAIL) {
        ck_assert_uint_eq(r->result_len, s->result_len);
        if (s->result_len > 0)
            ck_assert_mem_eq(r->result, s->result, s->result_len);
    }
}

/* src's encoding of spec i, in a fresh malloc'd buffer. */
static uint8_t *
src_encode(const struct spec *s, size_t *len)
{
    struct cmdlog_rec r;
    spec_src(s, &r);
    *len = cmdlog_rec_size(&r);
    uint8_t *out = malloc(*len + 1);
    REQUIRE(out != NULL);
    out[*len] = 0xee; /* a guard: encode must not write past the size */
    cmdlog_rec_encode(&r, out);
    ck_assert_uint_eq(out[*len], 0xee);
    return out;
}

START_TEST(test_rec_cross_check)
{
    specs_init();
    struct spec s = spec_get((size_t)_i);
    size_t len;
    uint8_t *mine = src_encode(&s, &len);

    /* byte for byte what the reference writes */
    struct ref_buf b = {0};
    ck_assert_uint_eq(spec_ref(&b, &s), 0);
    ck_assert_uint_eq(b.len, len);
    REQUIRE_BYTES(mine, b.data, len);

    /* src's bytes through the reference reader */
    struct ref_rec rr;
    size_t used = 0;
    ck_assert_int_eq(ref_rec_decode(mine, len, &rr, &used), REF_OK);
    ck_assert_uint_eq(used, len);
    require_ref_rec(&rr, &s);

    /* the reference's bytes through src's reader, also with a following
     * record in the buffer */
    ref_rec_id(&b, NOW, REF_DELETE, rr.id);
    struct cmdlog_rec r;
    used = 0;
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_uint_eq(used, len);
    require_src_rec(&r, &s);
    /* decoded fields point into the buffer, not into a copy */
    if (s.code == REF_ADD && s.payload_len > 0)
        REQUIRE((const uint8_t *)r.payload.p > b.data &&
                (const uint8_t *)r.payload.p < b.data + len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data + len, b.len - len, &r, &used), CMDLOG_REC_OK);
    ck_assert_uint_eq(r.code, CMDLOG_DELETE);

    ref_buf_free(&b);
    free(mine);
}
END_TEST

/* A record cut anywhere is SHORT, to src and to the reference. */
START_TEST(test_rec_cut_is_short)
{
    specs_init();
    struct spec s = spec_get((size_t)_i);
    struct ref_buf b = {0};
    spec_ref(&b, &s);
    size_t step = b.len > 400 ? 97 : 1; /* the big ones: a sample of cuts */
    for (size_t cut = 0; cut < b.len; cut += (cut + 8 >= b.len || cut < 24) ? 1 : step) {
        /* a private copy, so valgrind/ASan catch a read past the cut */
        uint8_t *p = malloc(cut + 1);
        REQUIRE(p != NULL);
        memcpy(p, b.data, cut);
        struct cmdlog_rec r;
        struct ref_rec rr;
        size_t used = 0;
        enum cmdlog_decode_result d = cmdlog_rec_decode(p, cut, &r, &used);
        if (d != CMDLOG_REC_SHORT)
            ck_abort_msg("code %d cut at %zu of %zu: got %d, want SHORT", s.code, cut, b.len, d);
        ck_assert_int_eq(ref_rec_decode(p, cut, &rr, &used), REF_SHORT);
        free(p);
    }
    ref_buf_free(&b);
}
END_TEST

/* One flipped bit anywhere: BAD (SHORT only if it makes the size larger). */
START_TEST(test_rec_bit_flip)
{
    specs_init();
    struct spec s = spec_get((size_t)_i);
    struct ref_buf b = {0};
    spec_ref(&b, &s);
    /* the end of the size field: walk its varint */
    size_t size_end = CMDLOG_TIME_LEN;
    while (b.data[size_end] & 0x80)
        size_end++;
    size_end++;
    uint8_t *p = malloc(b.len);
    REQUIRE(p != NULL);
    size_t limit = b.len > 400 ? 400 : b.len; /* the big ones: the head only */
    for (size_t bit = 0; bit < limit * 8; bit++) {
        memcpy(p, b.data, b.len);
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        struct cmdlog_rec r;
        struct ref_rec rr;
        size_t used = 0;
        enum cmdlog_decode_result d = cmdlog_rec_decode(p, b.len, &r, &used);
        bool in_size = bit / 8 >= CMDLOG_TIME_LEN && bit / 8 < size_end;
        if (!(d == CMDLOG_REC_BAD || (d == CMDLOG_REC_SHORT && in_size)))
            ck_abort_msg("code %d bit %zu of %zu: got %d", s.code, bit, b.len * 8, d);
        enum ref_status rd = ref_rec_decode(p, b.len, &rr, &used);
        REQUIRE(rd == REF_BAD || (rd == REF_SHORT && in_size));
    }
    /* and the last bytes of the big ones */
    for (size_t byte = limit; byte < b.len; byte += 1) {
        memcpy(p, b.data, b.len);
        p[byte] ^= 0x10;
        struct cmdlog_rec r;
        size_t used;
        ck_assert_int_eq(cmdlog_rec_decode(p, b.len, &r, &used), CMDLOG_REC_BAD);
    }
    free(p);
    ref_buf_free(&b);
}
END_TEST

START_TEST(test_rec_zero_tail)
{
    uint8_t zeros[200] = {0};
    struct cmdlog_rec r;
    size_t used;
    /* 16 zero bytes frame an empty payload whose CRC cannot be 0 */
    for (size_t n = 20; n <= sizeof zeros; n++)
        ck_assert_int_eq(cmdlog_rec_decode(zeros, n, &r, &used), CMDLOG_REC_BAD);
    for (size_t n = 0; n < 20; n++)
        ck_assert_int_eq(cmdlog_rec_decode(zeros, n, &r, &used), CMDLOG_REC_SHORT);
}
END_TEST

START_TEST(test_rec_malformed)
{
    uint8_t id[JOBID_LEN];
    id_of(1, id);
    struct cmdlog_rec r;
    size_t used;
    struct ref_buf b = {0};
    uint8_t p[64];

    /* unknown codes 0 and 10..255, with a good CRC */
    static const uint8_t codes[] = {0, 10, 11, 100, 255};
    for (size_t i = 0; i < WQ_ARRAY_LEN(codes); i++) {
        p[0] = codes[i];
        memcpy(p + 1, id, JOBID_LEN);
        b.len = 0;
        ref_rec_raw(&b, NOW, p, 1 + JOBID_LEN);
        ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    }
    /* an id record one byte too long, one too short, an empty payload */
    p[0] = REF_DELETE;
    memcpy(p + 1, id, JOBID_LEN);
    p[17] = 0;
    static const size_t lens[] = {18, 16, 1, 0};
    for (size_t i = 0; i < WQ_ARRAY_LEN(lens); i++) {
        b.len = 0;
        ref_rec_raw(&b, NOW, p, lens[i]);
        ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    }
    /* a result whose length runs past the payload, or leaves bytes over */
    p[0] = REF_COMPLETE;
    p[17] = 5;
    memcpy(p + 18, "abcd", 4);
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 22);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    p[17] = 3;
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 22);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    p[17] = 4;
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 22);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);

    /* an add cut inside its created time, with a valid CRC */
    struct ref_buf add = {0};
    ref_rec_add(&add, NOW, id, "q", 1, 1, 0, 0, 0, "x", 1, NOW);
    size_t plen = add.len - CMDLOG_TIME_LEN - 1 - 4;
    b.len = 0;
    ref_rec_raw(&b, NOW, add.data + CMDLOG_TIME_LEN + 1, plen - 1);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    b.len = 0;
    ref_rec_raw(&b, NOW, add.data + CMDLOG_TIME_LEN + 1, plen);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);

    /* a bad version byte in the record's TIME or in a job's time */
    uint8_t t[CMDLOG_TIME_LEN];
    ref_time_put_raw(t, 2, CMDLOG_EPOCH_OFFSET, 0, -1);
    b.len = 0;
    ref_rec_raw_time(&b, t, p, 22);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    uint8_t *created = add.data + add.len - 4 - CMDLOG_TIME_LEN;
    created[0] = 0;
    b.len = 0;
    ref_rec_raw(&b, NOW, add.data + CMDLOG_TIME_LEN + 1, plen);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);

    /* a record TIME in another zone is fine */
    ref_time_put_raw(t, 1, NOW / 1000 + CMDLOG_EPOCH_OFFSET, 0, 120);
    b.len = 0;
    ref_rec_raw_time(&b, t, p, 22);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_int_eq(r.at_ms, NOW);

    /* an over-long size varint, and an absurd size */
    uint8_t bad[CMDLOG_TIME_LEN + 20];
    memcpy(bad, b.data, CMDLOG_TIME_LEN);
    memset(bad + CMDLOG_TIME_LEN, 0x80, 11);
    memset(bad + CMDLOG_TIME_LEN + 11, 0, 9);
    ck_assert_int_eq(cmdlog_rec_decode(bad, sizeof bad, &r, &used), CMDLOG_REC_BAD);
    size_t n = cmdlog_uvarint_put(bad + CMDLOG_TIME_LEN, 1ull << 40);
    REQUIRE(cmdlog_rec_decode(bad, CMDLOG_TIME_LEN + n + 8, &r, &used) != CMDLOG_REC_OK);
    n = cmdlog_uvarint_put(bad + CMDLOG_TIME_LEN, UINT64_MAX);
    REQUIRE(cmdlog_rec_decode(bad, CMDLOG_TIME_LEN + n + 4, &r, &used) != CMDLOG_REC_OK);

    ref_buf_free(&add);
    ref_buf_free(&b);
}
END_TEST

/* cmdlog_rec_size is exact for every spec and a few extra sizes around the
 * varint boundaries of SIZE. */

/* Our records of the retry policy (35), a fail with a backoff (36) and a
 * revival (37): src writes the bytes written here by hand, reads them
 * back, and refuses them malformed. */
START_TEST(test_rec_retry_policy)
{
    uint8_t id[JOBID_LEN];
    id_of(7, id);
    struct cmdlog_rec r;
    size_t used;
    struct ref_buf b = {0};
    uint8_t p[64], mine[128];

    /* 35: id, the backoff (uvarint), the dead byte */
    p[0] = 35;
    memcpy(p + 1, id, JOBID_LEN);
    p[17] = 1;
    p[18] = 1;
    ref_rec_raw(&b, NOW, p, 19);
    struct cmdlog_rec w = {.code = CMDLOG_POLICY, .at_ms = NOW, .backoff = 1, .dead = true};
    memcpy(w.id, id, JOBID_LEN);
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.code == CMDLOG_POLICY && r.backoff == 1 && r.dead && used == b.len);
    ck_assert_mem_eq(r.id, id, JOBID_LEN);
    static const uint8_t bad_dead[] = {2, 255};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad_dead); i++) {
        p[18] = bad_dead[i];
        b.len = 0;
        ref_rec_raw(&b, NOW, p, 19);
        ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    }
    p[18] = 0;
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 18); /* no dead byte */
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);

    /* 36: id, the time it waits until */
    p[0] = 36;
    ref_time_put(p + 17, true, NOW + 15000);
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 17 + REF_TIME_LEN);
    w = (struct cmdlog_rec){
        .code = CMDLOG_FAIL_BACKOFF, .at_ms = NOW, .timed = true, .time_ms = NOW + 15000};
    memcpy(w.id, id, JOBID_LEN);
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.code == CMDLOG_FAIL_BACKOFF && r.timed && r.time_ms == NOW + 15000);
    ref_time_put(p + 17, false, 0); /* Go's zero time: no time at all */
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 17 + REF_TIME_LEN);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);

    /* 37: the id alone */
    b.len = 0;
    ref_rec_id(&b, NOW, 37, id);
    w = (struct cmdlog_rec){.code = CMDLOG_REVIVE, .at_ms = NOW};
    memcpy(w.id, id, JOBID_LEN);
    cmdlog_rec_encode(&w, mine);
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_uint_eq(r.code, CMDLOG_REVIVE);

    /* 38 is no code of ours */
    p[0] = 38;
    b.len = 0;
    ref_rec_raw(&b, NOW, p, 17);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    ref_buf_free(&b);
}
END_TEST

/* Hero's records (48 to 54): src writes the bytes written here by hand,
 * reads them back, and refuses them malformed; each names what cleaning
 * keys it by, and whether it ends or supersedes what came before. */
START_TEST(test_rec_hero)
{
    struct ref_buf b = {0};
    struct cmdlog_rec r, w;
    size_t used;
    uint8_t mine[128], k1[128], k2[128];
    /* 48: key, field, value */
    static const uint8_t hset[] = {48, 6, 'h', 'e', 'r', 'o', ':', 'a', 1, 'f', 2, 'v', '1'};
    ref_rec_raw(&b, NOW, hset, sizeof hset);
    w = (struct cmdlog_rec){.code = CMDLOG_H_HSET,
                            .at_ms = NOW,
                            .jid = {"hero:a", 6},
                            .name = {"f", 1},
                            .payload = {"v1", 2}};
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.jid.n == 6 && r.name.n == 1 && r.payload.n == 2 &&
              memcmp(r.payload.p, "v1", 2) == 0);
    ck_assert(cmdlog_rec_supersedes(&r) && !cmdlog_rec_ends_job(&r));
    size_t n1 = cmdlog_rec_key(&r, k1, sizeof k1);
    /* 49: key, field; the same cleaning key as the set */
    static const uint8_t hdel[] = {49, 6, 'h', 'e', 'r', 'o', ':', 'a', 1, 'f'};
    b.len = 0;
    ref_rec_raw(&b, NOW, hdel, sizeof hdel);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(cmdlog_rec_ends_job(&r));
    ck_assert_uint_eq(cmdlog_rec_key(&r, k2, sizeof k2), n1);
    ck_assert_mem_eq(k1, k2, n1);
    /* 50: key, element, flags, value; 51: key, element */
    static const uint8_t push[] = {50, 6, 'h', 'e', 'r', 'o', ':', 'l', 0x81, 1, 1, 1, 'x'};
    b.len = 0;
    ref_rec_raw(&b, NOW, push, sizeof push);
    w = (struct cmdlog_rec){.code = CMDLOG_H_PUSH,
                            .at_ms = NOW,
                            .jid = {"hero:l", 6},
                            .seq = 129,
                            .left = true,
                            .payload = {"x", 1}};
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.seq == 129 && r.left && !cmdlog_rec_ends_job(&r) && !cmdlog_rec_supersedes(&r));
    n1 = cmdlog_rec_key(&r, k1, sizeof k1);
    static const uint8_t pop[] = {51, 6, 'h', 'e', 'r', 'o', ':', 'l', 0x81, 1};
    b.len = 0;
    ref_rec_raw(&b, NOW, pop, sizeof pop);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.seq == 129 && cmdlog_rec_ends_job(&r));
    ck_assert_uint_eq(cmdlog_rec_key(&r, k2, sizeof k2), n1);
    ck_assert_mem_eq(k1, k2, n1);
    uint8_t bad[sizeof push];
    memcpy(bad, push, sizeof push);
    bad[10] = 3; /* the flags: 1 the head, 2 a job's element */
    b.len = 0;
    ref_rec_raw(&b, NOW, bad, sizeof bad);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.left && r.job);
    bad[10] = 4; /* no other flag */
    b.len = 0;
    ref_rec_raw(&b, NOW, bad, sizeof bad);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    /* 52: key, a time (an expiry, superseding) or none (its end) */
    uint8_t exp[8 + REF_TIME_LEN] = {52, 6, 'h', 'e', 'r', 'o', ':', 'l'};
    ref_time_put(exp + 8, true, NOW + 5000);
    b.len = 0;
    ref_rec_raw(&b, NOW, exp, sizeof exp);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.timed && r.time_ms == NOW + 5000 && cmdlog_rec_supersedes(&r));
    ref_time_put(exp + 8, false, 0);
    b.len = 0;
    ref_rec_raw(&b, NOW, exp, sizeof exp);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(!r.timed && cmdlog_rec_ends_job(&r));
    /* 53 and 55: job id, its queue, times handed out; 54: job id */
    static const uint8_t take[] = {53, 1, 'j', 3, 'h', ':', 'w', 2};
    b.len = 0;
    ref_rec_raw(&b, NOW, take, sizeof take);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.seq == 2 && r.name.n == 3 && cmdlog_rec_supersedes(&r));
    static const uint8_t end[] = {54, 1, 'j'};
    b.len = 0;
    ref_rec_raw(&b, NOW, end, sizeof end);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(cmdlog_rec_ends_job(&r));
    static const uint8_t back[] = {55, 1, 'j', 3, 'h', ':', 'w', 2};
    b.len = 0;
    ref_rec_raw(&b, NOW, back, sizeof back);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.code == CMDLOG_H_BACK && r.seq == 2 && cmdlog_rec_supersedes(&r));
    ck_assert_uint_eq(cmdlog_rec_key(&r, k1, sizeof k1), n1 = cmdlog_rec_key(&r, k2, sizeof k2));
    /* an empty key */
    static const uint8_t nokey[] = {54, 0};
    b.len = 0;
    ref_rec_raw(&b, NOW, nokey, sizeof nokey);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    ref_buf_free(&b);
}
END_TEST

/* NORFAB's records (56 to 58): the bytes by hand, read back, refused
 * malformed; a POST's state and a worker's result supersede their earlier
 * records, and a gone record ends the one it names (the POST, or one
 * worker's result). */
START_TEST(test_rec_norfab)
{
    struct ref_buf b = {0};
    struct cmdlog_rec r, w;
    size_t used;
    uint8_t mine[128], k1[128], k2[128], k3[128];
    /* 56: uuid, service, body, client, target and workers, all, state */
    static const uint8_t post[] = {56,  2, 'u', '1', 3, 's', 'v', 'c', 2, '{',
                                   '}', 2, 'c', '1', 3, 'a', 'l', 'l', 1, 2};
    ref_rec_raw(&b, NOW, post, sizeof post);
    w = (struct cmdlog_rec){.code = CMDLOG_N_POST,
                            .at_ms = NOW,
                            .jid = {"u1", 2},
                            .name = {"svc", 3},
                            .payload = {"{}", 2},
                            .result = {"c1", 2},
                            .after = {"all", 3},
                            .left = true,
                            .seq = 2};
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(r.jid.n == 2 && r.name.n == 3 && r.payload.n == 2 && r.result.n == 2 &&
              r.after.n == 3 && r.left && r.seq == 2);
    ck_assert(cmdlog_rec_supersedes(&r) && !cmdlog_rec_ends_job(&r));
    size_t n1 = cmdlog_rec_key(&r, k1, sizeof k1);
    uint8_t bad[sizeof post];
    memcpy(bad, post, sizeof post);
    bad[18] = 2; /* the flags: 1 is "all", nothing else */
    b.len = 0;
    ref_rec_raw(&b, NOW, bad, sizeof bad);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    /* 57: uuid, worker, body: a key of its own */
    static const uint8_t result[] = {57, 2, 'u', '1', 2, 'w', '1', 2, 'o', 'k'};
    b.len = 0;
    ref_rec_raw(&b, NOW, result, sizeof result);
    w = (struct cmdlog_rec){.code = CMDLOG_N_RESULT,
                            .at_ms = NOW,
                            .jid = {"u1", 2},
                            .name = {"w1", 2},
                            .payload = {"ok", 2}};
    ck_assert_uint_eq(cmdlog_rec_size(&w), b.len);
    cmdlog_rec_encode(&w, mine);
    REQUIRE_BYTES(mine, b.data, b.len);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(cmdlog_rec_supersedes(&r) && !cmdlog_rec_ends_job(&r));
    size_t n2 = cmdlog_rec_key(&r, k2, sizeof k2);
    ck_assert(n2 != n1 || memcmp(k1, k2, n1) != 0);
    /* 58: uuid and nothing: the POST's key; uuid and a worker: its result's */
    static const uint8_t gone[] = {58, 2, 'u', '1', 0};
    b.len = 0;
    ref_rec_raw(&b, NOW, gone, sizeof gone);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert(cmdlog_rec_ends_job(&r) && !cmdlog_rec_supersedes(&r));
    ck_assert_uint_eq(cmdlog_rec_key(&r, k3, sizeof k3), n1);
    ck_assert_mem_eq(k1, k3, n1);
    static const uint8_t gone_result[] = {58, 2, 'u', '1', 2, 'w', '1'};
    b.len = 0;
    ref_rec_raw(&b, NOW, gone_result, sizeof gone_result);
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_uint_eq(cmdlog_rec_key(&r, k3, sizeof k3), n2);
    ck_assert_mem_eq(k2, k3, n2);
    /* an empty uuid; a byte too many; 59 is no code */
    static const uint8_t nouuid[] = {58, 0, 0};
    static const uint8_t longer[] = {58, 2, 'u', '1', 0, 0};
    static const uint8_t next[] = {59, 1, 'j', 0};
    const uint8_t *refused[] = {nouuid, longer, next};
    size_t sizes[] = {sizeof nouuid, sizeof longer, sizeof next};
    for (size_t i = 0; i < 3; i++) {
        b.len = 0;
        ref_rec_raw(&b, NOW, refused[i], sizes[i]);
        ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    }
    ref_buf_free(&b);
}
END_TEST

START_TEST(test_rec_size_boundaries)
{
    specs_init();
    uint8_t id[JOBID_LEN];
    id_of(9, id);
    static const size_t lens[] = {0, 1, 91, 92, 93, 108, 109, 110, 16362, 16363, 16364, 16365};
    for (size_t i = 0; i < WQ_ARRAY_LEN(lens); i++) {
        struct spec s = {REF_COMPLETE, NOW, 9, NULL, 0, 0,           0,      0, 0,
                         NULL,         0,   0, 0,    0, big_payload, lens[i]};
        size_t len;
        uint8_t *mine = src_encode(&s, &len);
        struct ref_buf b = {0};
        ref_rec_result(&b, NOW, REF_COMPLETE, id, big_payload, lens[i]);
        ck_assert_uint_eq(len, b.len);
        REQUIRE_BYTES(mine, b.data, len);
        ref_buf_free(&b);
        free(mine);
    }
}
END_TEST

/* The CRC of a whole from those of its parts and the second part's length,
 * whatever the lengths (zero, odd, past 4 GiB), and so the CRC of a part
 * from the CRCs up to its start and its end. */
START_TEST(test_crc32c_combine)
{
    uint8_t buf[5000];
    uint32_t x = 777;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t a = 0; a <= sizeof buf; a += 97) {
        for (size_t b = a; b <= sizeof buf; b += 131) {
            uint32_t ca = cmdlog_crc32c(0, buf, a), cb = cmdlog_crc32c(0, buf + a, b - a);
            uint32_t cab = cmdlog_crc32c(0, buf, b);
            REQUIRE(cmdlog_crc32c_combine(ca, cb, b - a) == cab);
            REQUIRE((cab ^ cmdlog_crc32c_combine(ca, 0, b - a)) == cb);
        }
    }
    ck_assert_uint_eq(cmdlog_crc32c_combine(0x12345678u, 0x9abcdef0u, 0),
                      0x12345678u ^ 0x9abcdef0u);
    /* zeros: n zero bytes after A, with n far past what can be hashed here */
    static const uint8_t zeros[4096];
    uint32_t z = cmdlog_crc32c(0, zeros, sizeof zeros), c = cmdlog_crc32c(0, "abc", 3);
    uint32_t step = cmdlog_crc32c_combine(c, z, sizeof zeros);
    ck_assert_uint_eq(step, cmdlog_crc32c(c, zeros, sizeof zeros));
    /* a run of zeros built by doubling agrees with hashing it, at 1 MiB */
    uint8_t *mib = calloc(1, 1u << 20);
    REQUIRE(mib != NULL);
    uint32_t zrun = cmdlog_crc32c(0, zeros, 1);
    for (uint64_t have = 1; have < (1u << 20); have *= 2)
        zrun = cmdlog_crc32c_combine(zrun, zrun, have);
    ck_assert_uint_eq(zrun, cmdlog_crc32c(0, mib, 1u << 20));
    free(mib);
    /* shifting by n then m is shifting by n + m, also past 2^32 bytes */
    static const uint64_t lens[] = {1, 255, 4096, 1ull << 31, (5ull << 32) + 12345, 1ull << 62};
    for (size_t i = 0; i < WQ_ARRAY_LEN(lens); i++)
        for (size_t k = 0; k < WQ_ARRAY_LEN(lens); k++)
            ck_assert_uint_eq(
                cmdlog_crc32c_combine(cmdlog_crc32c_combine(c, 0, lens[i]), 0, lens[k]),
                cmdlog_crc32c_combine(c, 0, lens[i] + lens[k]));
}
END_TEST

/* Framing and decoding without the CRC agree with decoding: the same
 * sizes, and OK exactly when only the CRC is wrong. */
START_TEST(test_rec_frame_and_unchecked)
{
    struct ref_buf b = {0};
    uint8_t id[REF_ID_LEN];
    id_of(1, id);
    ref_rec_result(&b, NOW, REF_COMPLETE, id, "done", 4);
    struct cmdlog_rec r;
    size_t total, used;
    ck_assert_int_eq(cmdlog_rec_frame(b.data, b.len, &total), CMDLOG_REC_OK);
    ck_assert_uint_eq(total, b.len);
    ck_assert_int_eq(cmdlog_rec_frame(b.data, 15, &total), CMDLOG_REC_SHORT);
    ck_assert_int_eq(cmdlog_rec_decode_unchecked(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_uint_eq(used, b.len);
    ck_assert_uint_eq(r.code, CMDLOG_COMPLETE);
    b.data[b.len - 1] ^= 1; /* the CRC */
    ck_assert_int_eq(cmdlog_rec_decode(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    ck_assert_int_eq(cmdlog_rec_decode_unchecked(b.data, b.len, &r, &used), CMDLOG_REC_OK);
    ck_assert_int_eq(cmdlog_rec_decode_unchecked(b.data, b.len - 1, &r, &used), CMDLOG_REC_SHORT);
    b.data[0] = 2; /* the TIME's version */
    ck_assert_int_eq(cmdlog_rec_decode_unchecked(b.data, b.len, &r, &used), CMDLOG_REC_BAD);
    static const uint8_t huge[] = {
        1, 0, 0, 0,    0,    0,    0,    0,    0,    0,
        0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}; /* SIZE past 2^31 */
    ck_assert_int_eq(cmdlog_rec_frame(huge, sizeof huge, &total), CMDLOG_REC_BAD);
    ref_buf_free(&b);
}
END_TEST

/* Names grow past 9 digits instead of being cut (999999999 is followed by
 * 1000000000.log, not "1000000000.lo"), and every name that looks like a
 * segment's and is none is told apart from other files. */
START_TEST(test_segment_names_wide)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    static const struct {
        uint64_t n;
        const char *name;
    } good[] = {
        {1000000000u, "1000000000.log"},
        {4294967296ull, "4294967296.log"},
        {UINT64_MAX, "18446744073709551615.log"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(good); i++) {
        cmdlog_segment_name(good[i].n, name);
        ck_assert_str_eq(name, good[i].name);
        uint64_t n = 0;
        ck_assert_int_eq(cmdlog_segment_parse(name, &n), 1);
        ck_assert_uint_eq(n, good[i].n);
        ck_assert_uint_eq(cmdlog_segment_number(name), good[i].n);
    }
    static const char *const stray[] = {
        "1.log",
        "00000001.log",
        "0000000001.log",
        "000000000.log",
        "0999999999.log",
        "18446744073709551616.log",
        "99999999999999999999.log",
        "123456789012345678901.log",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(stray); i++) {
        uint64_t n;
        if (cmdlog_segment_parse(stray[i], &n) != -1)
            ck_abort_msg("\"%s\" not told apart", stray[i]);
        ck_assert_uint_eq(cmdlog_segment_number(stray[i]), 0);
    }
    static const char *const other[] = {
        "notes.txt",     "000000001.log.tmp", ".log", "log",           "000000001.LOG",
        "-00000001.log", "00000001a.log",     "",     "000000001xlog",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(other); i++) {
        uint64_t n;
        if (cmdlog_segment_parse(other[i], &n) != 0)
            ck_abort_msg("\"%s\" taken for a segment's name", other[i]);
    }
    for (uint64_t n = 1; n < UINT64_MAX / 3; n = n * 3 + 1) {
        cmdlog_segment_name(n, name);
        ck_assert_uint_eq(cmdlog_segment_number(name), n);
    }
}
END_TEST

/* ---- segment names ---- */

START_TEST(test_segment_names)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    cmdlog_segment_name(1, name);
    ck_assert_str_eq(name, "000000001.log");
    cmdlog_segment_name(123456789, name);
    ck_assert_str_eq(name, "123456789.log");
    cmdlog_segment_name(999999999, name);
    ck_assert_str_eq(name, "999999999.log");
    ref_seg_name(42, name);
    ck_assert_str_eq(name, "000000042.log");

    ck_assert_uint_eq(cmdlog_segment_number("000000001.log"), 1);
    ck_assert_uint_eq(cmdlog_segment_number("000000010.log"), 10);
    ck_assert_uint_eq(cmdlog_segment_number("999999999.log"), 999999999);
    static const char *const bad[] = {
        "1.log",         "00000001a.log",  "000000001.log.tmp",
        "000000001.LOG", "000000001.lo",   "0000000001.log",
        "00000001.log",  "000000001",      "",
        ".log",          "-00000001.log",  "+00000001.log",
        " 00000001.log", "000000001.logx", "000000001xlog",
        "000000000.log",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++)
        if (cmdlog_segment_number(bad[i]) != 0)
            ck_abort_msg("\"%s\" taken for a segment", bad[i]);
    for (uint32_t n = 1; n < 2000000; n = n * 3 + 1) {
        cmdlog_segment_name(n, name);
        ck_assert_uint_eq(cmdlog_segment_number(name), n);
    }
}
END_TEST

static Suite *
cmdlog_codec_suite(void)
{
    const struct unit_case cases[] = {
        {"crc32c_vectors", test_crc32c_vectors},
        {"crc32c_combine", test_crc32c_combine},
        {"rec_frame_and_unchecked", test_rec_frame_and_unchecked},
        {"segment_names_wide", test_segment_names_wide},
        {"uvarint_round_trip", test_uvarint_round_trip},
        {"uvarint_rejects", test_uvarint_rejects},
        {"varint_zigzag", test_varint_zigzag},
        {"time_unix_epoch", test_time_unix_epoch},
        {"time_zero", test_time_zero},
        {"time_offsets_accepted", test_time_offsets_accepted},
        {"time_negative_and_rounding", test_time_negative_and_rounding},
        {"time_malformed", test_time_malformed},
        {"rec_zero_tail", test_rec_zero_tail},
        {"rec_malformed", test_rec_malformed},
        {"rec_retry_policy", test_rec_retry_policy},
        {"rec_hero", test_rec_hero},
        {"rec_norfab", test_rec_norfab},
        {"rec_size_boundaries", test_rec_size_boundaries},
        {"segment_names", test_segment_names},
    };
    Suite *s = unit_suite("cmdlog_codec", cases, WQ_ARRAY_LEN(cases));
    /* one run per record spec */
    const struct unit_case looped[] = {
        {"rec_cross_check", test_rec_cross_check},
        {"rec_cut_is_short", test_rec_cut_is_short},
        {"rec_bit_flip", test_rec_bit_flip},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(looped); i++) {
        TCase *tc = tcase_create(looped[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, looped[i].test, 0, (int)WQ_ARRAY_LEN(specs));
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    return unit_run(cmdlog_codec_suite(), NULL);
}
