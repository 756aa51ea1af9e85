/* check_cmdlog.c - unit tests for the command-log format (src/cmdlog_codec.c)
 * and its files (src/cmdlog_files.c: replay into a core, torn tails,
 * damage, cleaning).
 *
 * Every record format test is a cross-check against tests/cmdlog_ref.c, an
 * independent reader and writer built from protocol-notes.md section 6: src
 * encodes, the reference decodes, and the other way round, and both must
 * produce the same bytes.  Replay tests write their segment files with the
 * reference writer into a fresh temporary directory, so src's writer is not
 * trusted to produce what src's reader expects.  The last test replays
 * tests/fixtures/workq-go (see its README.md), a data directory in the
 * format of the original Go server. */
#include "wq.h"
#include "cmdlog_codec.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdlog_files.h"
#include "cmdlog_ref.h"
#include "core.h"
#include "job.h"
#include "jobid.h"
#include "log.h"
#include "queue.h"
#include "unit.h"

/* The fake "now" of replay tests (2023-11-14T22:13:20Z) and a long TTL. */
#define NOW      1700000000000LL
#define HOUR     3600000LL
#define TTL_LONG ((uint64_t)HOUR * 24 * 365)

_Static_assert(REF_ID_LEN == JOBID_LEN, "id sizes differ");
_Static_assert(REF_TIME_LEN == CMDLOG_TIME_LEN, "time sizes differ");
_Static_assert(REF_HEADER_LEN == CMDLOG_HEADER_LEN, "header sizes differ");

/* ---- helpers ---- */

static void
id_of(uint64_t n, uint8_t id[JOBID_LEN])
{
    ref_id(id, n);
}

static struct job *
find(const struct core *c, uint64_t n)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    return core_find(c, id);
}

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

/* A temporary directory holding segment files. */
struct tdir {
    char path[256];
    int fd;
};

static void
tdir_open(struct tdir *d)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/wq-cmdlog-XXXXXX", tmp != NULL ? tmp : "/tmp");
    REQUIRE(mkdtemp(d->path) != NULL);
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(d->fd >= 0);
}

static void
tdir_close(struct tdir *d)
{
    DIR *dir = opendir(d->path);
    REQUIRE(dir != NULL);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            REQUIRE(unlinkat(d->fd, de->d_name, 0) == 0);
    }
    closedir(dir);
    close(d->fd);
    REQUIRE(rmdir(d->path) == 0);
}

static void
seg_path(const struct tdir *d, uint32_t n, char *out, size_t size)
{
    char name[14];
    ref_seg_name(n, name);
    snprintf(out, size, "%s/%s", d->path, name);
}

static bool
seg_exists(const struct tdir *d, uint32_t n)
{
    char name[14];
    ref_seg_name(n, name);
    return faccessat(d->fd, name, F_OK, 0) == 0;
}

/* The names in the directory, sorted, joined by spaces. */
static void
tdir_list(const struct tdir *d, char *out, size_t size)
{
    struct dirent **names;
    int n = scandir(d->path, &names, NULL, alphasort);
    REQUIRE(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            if (out[0] != '\0')
                strncat(out, " ", size - strlen(out) - 1);
            strncat(out, names[i]->d_name, size - strlen(out) - 1);
        }
        free(names[i]);
    }
    free(names);
}

/* Read segment n with the reference reader (which must manage). */
static void
seg_read(const struct tdir *d, uint32_t n, struct ref_seg *s)
{
    char path[300];
    seg_path(d, n, path, sizeof path);
    REQUIRE(ref_seg_read(path, s) == 0);
}

/* The result of one cmdlog_files_replay into a fresh core. */
struct replay {
    struct core *core;
    int rc;
    uint32_t last;
    uint64_t last_size;
    uint64_t records;
};

static void
replay(const struct tdir *d, uint64_t now, bool truncate, struct replay *r)
{
    r->core = core_new(now);
    r->rc =
        cmdlog_files_replay(d->fd, r->core, now, truncate, &r->last, &r->last_size, &r->records);
    core_advance(r->core, now); /* as the server does: expire what died meanwhile */
}

static void
replay_free(struct replay *r)
{
    core_free(r->core);
    r->core = NULL;
}

static void
require_stats(const struct core *c, uint64_t ready, uint64_t scheduled, uint64_t leased,
              uint64_t completed, uint64_t failed)
{
    ck_assert_uint_eq(c->stats.ready, ready);
    ck_assert_uint_eq(c->stats.scheduled, scheduled);
    ck_assert_uint_eq(c->stats.leased, leased);
    ck_assert_uint_eq(c->stats.completed, completed);
    ck_assert_uint_eq(c->stats.failed, failed);
}

static void
require_result(const struct core *c, const struct job *j, const char *want)
{
    uint32_t len;
    const char *res = core_job_result(c, j, &len);
    ck_assert_uint_eq(len, strlen(want));
    if (len > 0)
        ck_assert_mem_eq(res, want, len);
}

static const char *
queue_name(const struct core *c, const struct job *j)
{
    return core_job_queue(c, j)->name;
}

/* The nanoseconds of a scheduled job's time (kept in its struct job_ext). */
static uint32_t
time_ns(const struct core *c, const struct job *j)
{
    REQUIRE(j->flags & JOB_F_TIMED);
    const struct job_ext *x = core_job_ext(c, j);
    REQUIRE(x != NULL);
    REQUIRE(((j->flags & JOB_F_NS) != 0) == (x->time_ns != 0));
    return x->time_ns;
}

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

/* ---- segment names ---- */

START_TEST(test_segment_names)
{
    char name[14];
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

/* ---- replay ---- */

/* An add record for job n on queue name, created at created, with ttl. */
static void
add_rec(struct ref_buf *b, uint64_t n, const char *name, int64_t created, uint64_t ttl)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    ref_rec_add(b, created, id, name, 60000, ttl, 0, 0, 0, "payload", 7, created);
}

static void
id_rec(struct ref_buf *b, int code, uint64_t n)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    ref_rec_id(b, NOW - 1000, code, id);
}

static void
result_rec(struct ref_buf *b, int code, uint64_t n, const char *result)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    ref_rec_result(b, NOW - 1000, code, id, result, strlen(result));
}

START_TEST(test_replay_states)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    uint8_t id[JOBID_LEN];
    int64_t t0 = NOW - HOUR;

    /* 1: add -> NEW, ready, every field back */
    id_of(1, id);
    ref_rec_add(&b, t0, id, "q1", 45000, TTL_LONG, -5, 3, 2, "hello", 5, t0 - 7);
    /* 2: schedule in the future -> NEW, scheduled */
    id_of(2, id);
    ref_rec_schedule_ns(&b, t0, id, "q2", 30000, HOUR, 7, 0, 0, "s", 1, NOW + HOUR, 123456, t0);
    /* 3: schedule in the past, still alive -> NEW, ready */
    id_of(3, id);
    ref_rec_schedule(&b, t0, id, "q2", 30000, 2 * HOUR, 0, 0, 0, "", 0, t0 + 1, t0);
    /* 4: add, start -> LEASED, a fresh TTR */
    add_rec(&b, 4, "q1", t0, TTL_LONG);
    id_rec(&b, REF_START_ATTEMPT, 4);
    /* 5: add, start, timeout -> PENDING, ready */
    add_rec(&b, 5, "q1", t0, TTL_LONG);
    id_rec(&b, REF_START_ATTEMPT, 5);
    id_rec(&b, REF_TIMEOUT_ATTEMPT, 5);
    /* 6: max-attempts 1, start, timeout -> FAILED, empty result */
    id_of(6, id);
    ref_rec_add(&b, t0, id, "q1", 1000, TTL_LONG, 0, 1, 0, "", 0, t0);
    id_rec(&b, REF_START_ATTEMPT, 6);
    id_rec(&b, REF_TIMEOUT_ATTEMPT, 6);
    /* 7: add, start, complete -> COMPLETED */
    add_rec(&b, 7, "q3", t0, TTL_LONG);
    id_rec(&b, REF_START_ATTEMPT, 7);
    result_rec(&b, REF_COMPLETE, 7, "done");
    /* 8: add, fail -> FAILED */
    add_rec(&b, 8, "q3", t0, TTL_LONG);
    result_rec(&b, REF_FAIL, 8, "bad");
    /* 9: max-fails 3: start, fail-retry, start, fail -> FAILED, 2 fails */
    id_of(9, id);
    ref_rec_add(&b, t0, id, "q4", 1000, TTL_LONG, 0, 0, 3, "", 0, t0);
    id_rec(&b, REF_START_ATTEMPT, 9);
    id_rec(&b, REF_FAIL_RETRY, 9);
    id_rec(&b, REF_START_ATTEMPT, 9);
    result_rec(&b, REF_FAIL, 9, "again");
    /* 10: max-fails 3: start, fail-retry -> PENDING, ready */
    id_of(10, id);
    ref_rec_add(&b, t0, id, "q4", 1000, TTL_LONG, 0, 0, 3, "", 0, t0);
    id_rec(&b, REF_START_ATTEMPT, 10);
    id_rec(&b, REF_FAIL_RETRY, 10);
    /* 11: delete; 12: expire; 13: complete then delete */
    add_rec(&b, 11, "q1", t0, TTL_LONG);
    id_rec(&b, REF_DELETE, 11);
    add_rec(&b, 12, "q1", t0, TTL_LONG);
    id_rec(&b, REF_EXPIRE, 12);
    add_rec(&b, 13, "q1", t0, TTL_LONG);
    result_rec(&b, REF_COMPLETE, 13, "x");
    id_rec(&b, REF_DELETE, 13);
    /* 14: leased twice over (start, timeout, start) -> LEASED, 2 attempts */
    add_rec(&b, 14, "q5", t0, TTL_LONG);
    id_rec(&b, REF_START_ATTEMPT, 14);
    id_rec(&b, REF_TIMEOUT_ATTEMPT, 14);
    id_rec(&b, REF_START_ATTEMPT, 14);
    /* records for jobs that are not there are ignored */
    id_rec(&b, REF_START_ATTEMPT, 99);
    result_rec(&b, REF_COMPLETE, 99, "nobody");
    id_rec(&b, REF_DELETE, 98);
    id_rec(&b, REF_FAIL_RETRY, 97);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);

    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 1);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + b.len);
    ck_assert_uint_eq(r.records, 39);
    struct core *c = r.core;
    ck_assert_uint_eq(core_job_count(c), 11);
    /* ready: 1 3 5 10; scheduled: 2; leased: 4 14; completed: 7; failed: 6 8 9 */
    require_stats(c, 4, 1, 2, 1, 3);

    struct job *j = find(c, 1);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_str_eq(queue_name(c, j), "q1");
    ck_assert_uint_eq(j->ttr, 45000);
    ck_assert_uint_eq(j->ttl, TTL_LONG);
    ck_assert_int_eq(j->priority, -5);
    ck_assert_uint_eq(j->max_attempts, 3);
    ck_assert_uint_eq(j->max_fails, 2);
    ck_assert_uint_eq(j->payload_len, 5);
    ck_assert_mem_eq(j->payload, "hello", 5);
    ck_assert_int_eq(core_job_created(c, j), t0 - 7);
    ck_assert_uint_eq(core_job_expiry(j), (uint64_t)(t0 - 7) + TTL_LONG);
    ck_assert_uint_eq(j->attempts, 0);
    REQUIRE(!(j->flags & JOB_F_TIMED));

    j = find(c, 2);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_int_eq(j->place, JOB_IN_SCHEDULED);
    REQUIRE(j->flags & JOB_F_TIMED);
    ck_assert_int_eq(j->base_ms, NOW + HOUR);
    ck_assert_uint_eq(time_ns(c, j), 123456);
    ck_assert_int_eq(core_job_created(c, j), t0);
    ck_assert_uint_eq(core_job_expiry(j), (uint64_t)(NOW + 2 * HOUR)); /* time + ttl */
    ck_assert_int_eq(j->priority, 7);

    j = find(c, 3);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_uint_eq(core_job_expiry(j), (uint64_t)(t0 + 1 + 2 * HOUR));

    j = find(c, 4);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_LEASED);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(core_job_deadline(c, j), (uint64_t)NOW + 60000); /* a fresh TTR from now */

    j = find(c, 5);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_PENDING);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_uint_eq(j->attempts, 1);

    j = find(c, 6);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_FAILED);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(j->fails, 0);
    require_result(c, j, "");

    j = find(c, 7);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_COMPLETED);
    ck_assert_uint_eq(j->attempts, 1);
    require_result(c, j, "done");

    j = find(c, 8);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_FAILED);
    ck_assert_uint_eq(j->attempts, 0);
    ck_assert_uint_eq(j->fails, 1);
    require_result(c, j, "bad");

    j = find(c, 9);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_FAILED);
    ck_assert_uint_eq(j->attempts, 2);
    ck_assert_uint_eq(j->fails, 2);
    require_result(c, j, "again");

    j = find(c, 10);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_PENDING);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(j->fails, 1);
    require_result(c, j, "");

    REQUIRE(find(c, 11) == NULL);
    REQUIRE(find(c, 12) == NULL);
    REQUIRE(find(c, 13) == NULL);

    j = find(c, 14);
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_LEASED);
    ck_assert_uint_eq(j->attempts, 2);

    REQUIRE(find(c, 99) == NULL);
    REQUIRE(core_queue(c, "q1", 2) != NULL);
    REQUIRE(core_queue(c, "q3", 2) == NULL); /* only done jobs: no active queue */

    /* replay leaves a clean log as it was */
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_int_eq(s.status, REF_OK);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + b.len);
    ref_seg_free(&s);

    replay_free(&r);
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

/* The order of the ready queue comes back: priority, then arrival. */
START_TEST(test_replay_ready_order)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    uint8_t id[JOBID_LEN];
    static const int64_t prios[] = {0, 5, -5, 5, 0};
    for (uint64_t n = 1; n <= 5; n++) {
        id_of(n, id);
        ref_rec_add(&b, NOW - 100, id, "q", 1000, HOUR, prios[n - 1], 0, 0, "", 0, NOW - 100);
    }
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    static const uint64_t want[] = {2, 4, 1, 5, 3};
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct wq_str name = {"q", 1};
        struct job *j = NULL;
        struct waiter *w = NULL;
        ck_assert_int_eq(core_lease(r.core, &name, 1, 0, NOW, NULL, NULL, &j, &w), CORE_OK);
        uint8_t wid[JOBID_LEN];
        id_of(want[i], wid);
        ck_assert_mem_eq(j->id, wid, JOBID_LEN);
    }
    replay_free(&r);
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

START_TEST(test_replay_expiry)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    uint8_t id[JOBID_LEN];
    /* 1: add, created + ttl before now -> gone */
    add_rec(&b, 1, "q", NOW - 10000, 5000);
    /* 2: add, created + ttl == now -> gone (its life has ended) */
    add_rec(&b, 2, "q", NOW - 10000, 10000);
    /* 3: add, created + ttl just after now -> back */
    add_rec(&b, 3, "q", NOW - 10000, 10001);
    /* 4: schedule, time + ttl before now -> gone */
    id_of(4, id);
    ref_rec_schedule(&b, NOW - 20000, id, "q", 1000, 5000, 0, 0, 0, "", 0, NOW - 10000,
                     NOW - 20000);
    /* 5: schedule long ago with a time in the future: expiry is time + ttl,
     * not created + ttl */
    id_of(5, id);
    ref_rec_schedule(&b, NOW - 10 * HOUR, id, "q", 1000, HOUR, 0, 0, 0, "", 0, NOW + HOUR,
                     NOW - 10 * HOUR);
    /* 6: add with a huge ttl (saturates) */
    add_rec(&b, 6, "q", NOW - 10000, UINT64_MAX);
    /* 7: a completed job past its TTL -> gone with its result */
    add_rec(&b, 7, "q", NOW - 10000, 5000);
    result_rec(&b, REF_COMPLETE, 7, "late");
    /* 8: a leased job past its TTL -> gone */
    add_rec(&b, 8, "q", NOW - 10000, 5000);
    id_rec(&b, REF_START_ATTEMPT, 8);
    /* 9: a job created in the future (clock went back) is kept */
    add_rec(&b, 9, "q", NOW + HOUR, 5000);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);

    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.records, 11);
    REQUIRE(find(r.core, 1) == NULL);
    REQUIRE(find(r.core, 2) == NULL);
    REQUIRE(find(r.core, 3) != NULL);
    ck_assert_uint_eq(core_job_expiry(find(r.core, 3)), (uint64_t)NOW + 1);
    REQUIRE(find(r.core, 4) == NULL);
    REQUIRE(find(r.core, 5) != NULL);
    ck_assert_uint_eq(core_job_expiry(find(r.core, 5)), (uint64_t)(NOW + 2 * HOUR));
    REQUIRE(find(r.core, 6) != NULL);
    ck_assert_uint_eq(core_job_expiry(find(r.core, 6)), UINT64_MAX);
    REQUIRE(find(r.core, 7) == NULL);
    REQUIRE(find(r.core, 8) == NULL);
    REQUIRE(find(r.core, 9) != NULL);
    ck_assert_uint_eq(core_job_count(r.core), 4);
    require_stats(r.core, 3, 1, 0, 0, 0);
    /* the restored ones do expire at their original time */
    core_advance(r.core, NOW + 1000);
    REQUIRE(find(r.core, 3) == NULL);
    REQUIRE(find(r.core, 6) != NULL);
    replay_free(&r);
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

/* An id added again after its delete is a new job. */
START_TEST(test_replay_readd)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    add_rec(&b, 1, "first", NOW - 1000, HOUR);
    id_rec(&b, REF_START_ATTEMPT, 1);
    id_rec(&b, REF_DELETE, 1);
    add_rec(&b, 1, "second", NOW - 500, HOUR);
    /* a duplicate add of a live id is ignored */
    add_rec(&b, 1, "third", NOW - 400, HOUR);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    struct job *j = find(r.core, 1);
    REQUIRE(j != NULL);
    ck_assert_str_eq(queue_name(r.core, j), "second");
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_uint_eq(j->attempts, 0);
    ck_assert_int_eq(core_job_created(r.core, j), NOW - 500);
    require_stats(r.core, 1, 0, 0, 0, 0);
    replay_free(&r);
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

START_TEST(test_replay_empty)
{
    struct tdir d;
    tdir_open(&d);
    struct replay r;
    /* no segments at all */
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 0);
    ck_assert_uint_eq(r.last_size, 0);
    ck_assert_uint_eq(r.records, 0);
    replay_free(&r);
    /* other files are not segments */
    REQUIRE(ref_seg_write_raw(d.path, 1, "junk", 4) == 0);
    REQUIRE(renameat(d.fd, "000000001.log", d.fd, "000000001.log.tmp") == 0);
    int fd = openat(d.fd, "notes.txt", O_WRONLY | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    close(fd);
    /* a header-only segment */
    REQUIRE(ref_seg_write(d.path, 3, NULL, 0) == 0);
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 3);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN);
    ck_assert_uint_eq(r.records, 0);
    replay_free(&r);
    /* an empty last segment (a crash before its header) */
    REQUIRE(ref_seg_write_raw(d.path, 4, "", 0) == 0);
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 4);
    ck_assert_uint_eq(r.last_size, 0);
    replay_free(&r);
    /* a torn header in the last segment is cut to nothing */
    REQUIRE(ref_seg_write_raw(d.path, 4, "wqw", 3) == 0);
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 4);
    ck_assert_uint_eq(r.last_size, 0);
    replay_free(&r);
    struct ref_seg s;
    seg_read(&d, 4, &s);
    ck_assert_uint_eq(s.len, 0);
    ref_seg_free(&s);
    char names[256];
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log.tmp 000000003.log 000000004.log notes.txt");
    tdir_close(&d);
}
END_TEST

/* A torn last record is cut off, whatever the cut. */
START_TEST(test_replay_torn_tail)
{
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_START_ATTEMPT, 1);
    size_t good = b.len;
    result_rec(&b, REF_COMPLETE, 2, "the result that was being written");
    size_t whole = b.len;
    for (size_t keep = good + 1; keep < whole; keep++) {
        struct tdir d;
        tdir_open(&d);
        REQUIRE(ref_seg_write(d.path, 1, b.data, keep) == 0);
        struct replay r;
        replay(&d, NOW, false, &r);
        ck_assert_int_eq(r.rc, 0);
        ck_assert_uint_eq(r.records, 3);
        ck_assert_uint_eq(r.last, 1);
        ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + good);
        ck_assert_int_eq(find(r.core, 1)->state, JOB_LEASED);
        ck_assert_int_eq(find(r.core, 2)->state, JOB_NEW);
        replay_free(&r);
        struct ref_seg s;
        seg_read(&d, 1, &s);
        ck_assert_int_eq(s.status, REF_OK);
        ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + good);
        ck_assert_uint_eq(s.nrecs, 3);
        ref_seg_free(&s);
        tdir_close(&d);
    }
    ref_buf_free(&b);
}
END_TEST

/* Garbage after the last good record (zeros of a preallocated file, a
 * record with a bad CRC, random bytes) is a torn tail too. */
START_TEST(test_replay_garbage_tail)
{
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    size_t good = b.len;
    for (int kind = 0; kind < 4; kind++) {
        struct ref_buf t = {0};
        ref_buf_put(&t, b.data, good);
        if (kind == 0) {
            uint8_t z[4096] = {0};
            ref_buf_put(&t, z, sizeof z);
        } else if (kind == 1) {
            size_t at = t.len;
            id_rec(&t, REF_DELETE, 1);
            t.data[t.len - 1] ^= 1; /* its CRC */
            REQUIRE(at > 0);
        } else if (kind == 2) {
            uint32_t x = 99;
            for (int i = 0; i < 300; i++) {
                x = x * 1103515245u + 12345u;
                uint8_t c = (uint8_t)(x >> 16);
                ref_buf_put(&t, &c, 1);
            }
        } else {
            size_t at = t.len;
            id_rec(&t, REF_DELETE, 1);
            t.data[at + 20] ^= 0x40; /* inside the payload */
        }
        struct tdir d;
        tdir_open(&d);
        REQUIRE(ref_seg_write(d.path, 1, t.data, t.len) == 0);
        struct replay r;
        replay(&d, NOW, false, &r);
        if (r.rc != 0)
            ck_abort_msg("garbage tail kind %d: replay failed", kind);
        ck_assert_uint_eq(r.records, 1);
        ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + good);
        REQUIRE(find(r.core, 1) != NULL);
        replay_free(&r);
        struct ref_seg s;
        seg_read(&d, 1, &s);
        ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + good);
        ref_seg_free(&s);
        tdir_close(&d);
        ref_buf_free(&t);
    }
    ref_buf_free(&b);
}
END_TEST

/* Damage with valid records after it refuses, and changes nothing; with
 * truncate it cuts there. */
/* Zeros after a segment's last record are padding (a preallocated
 * segment whose server stopped without trimming it): cut, not damage, in
 * the last segment and in earlier ones, after a torn header too, and a
 * file of zeros is an empty segment.  Records after zeros are damage. */
START_TEST(test_replay_padding)
{
    static const uint8_t zeros[5000];
    struct ref_buf a = {0}, b = {0};
    add_rec(&a, 1, "q", NOW - 1000, HOUR);
    id_rec(&a, REF_START_ATTEMPT, 1);
    size_t recs_a = a.len;
    ref_buf_put(&a, zeros, sizeof zeros);
    add_rec(&b, 2, "q", NOW - 1000, HOUR);

    /* the last segment, and a middle one */
    for (int middle = 0; middle < 2; middle++) {
        struct tdir d;
        tdir_open(&d);
        REQUIRE(ref_seg_write(d.path, 1, a.data, a.len) == 0);
        if (middle)
            REQUIRE(ref_seg_write(d.path, 2, b.data, b.len) == 0);
        struct replay r;
        replay(&d, NOW, false, &r);
        ck_assert_int_eq(r.rc, 0);
        ck_assert_uint_eq(r.records, middle ? 3 : 2);
        ck_assert_uint_eq(r.last, middle ? 2 : 1);
        ck_assert_int_eq(find(r.core, 1)->state, JOB_LEASED);
        replay_free(&r);
        struct ref_seg s;
        seg_read(&d, 1, &s);
        ck_assert_int_eq(s.status, REF_OK);
        ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + recs_a);
        ref_seg_free(&s);
        tdir_close(&d);
    }

    /* a last segment of zeros, or of part of a header and zeros */
    static const char *const heads[] = {"", "wqw", "wqwq\0\0\0"};
    static const size_t head_lens[] = {0, 3, 7};
    for (size_t h = 0; h < 3; h++) {
        struct tdir d;
        tdir_open(&d);
        REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
        struct ref_buf raw = {0};
        ref_buf_put(&raw, heads[h], head_lens[h]);
        ref_buf_put(&raw, zeros, 4096);
        REQUIRE(ref_seg_write_raw(d.path, 2, raw.data, raw.len) == 0);
        struct replay r;
        replay(&d, NOW, false, &r);
        ck_assert_int_eq(r.rc, 0);
        ck_assert_uint_eq(r.records, 1);
        ck_assert_uint_eq(r.last, 2);
        ck_assert_uint_eq(r.last_size, 0);
        replay_free(&r);
        struct stat st;
        char path[300];
        seg_path(&d, 2, path, sizeof path);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_size, 0);
        ref_buf_free(&raw);
        tdir_close(&d);
    }

    /* a record after the zeros: they were not padding */
    struct tdir d;
    tdir_open(&d);
    ref_buf_put(&a, b.data, b.len);
    REQUIRE(ref_seg_write(d.path, 1, a.data, a.len) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, -1);
    replay_free(&r);
    tdir_close(&d);
    ref_buf_free(&a);
    ref_buf_free(&b);
}
END_TEST

/* Cleaning rewrites a padded closed segment without its padding. */
START_TEST(test_clean_padded_segment)
{
    static const uint8_t zeros[300];
    struct ref_buf s1 = {0}, s2 = {0}, s3 = {0};
    add_rec(&s1, 1, "q", NOW - 1000, HOUR);
    size_t first = s1.len;
    add_rec(&s1, 2, "q", NOW - 1000, HOUR);
    ref_buf_put(&s1, zeros, sizeof zeros);
    id_rec(&s2, REF_DELETE, 1);
    add_rec(&s3, 3, "q", NOW - 1000, HOUR);
    struct tdir d;
    tdir_open(&d);
    REQUIRE(ref_seg_write(d.path, 1, s1.data, s1.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);
    ck_assert_int_eq(cmdlog_files_clean(d.fd, 3), 0);
    char names[256];
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log 000000003.log");
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_int_eq(s.status, REF_OK);
    ck_assert_uint_eq(s.nrecs, 1);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + s1.len - first - sizeof zeros);
    ref_seg_free(&s);
    tdir_close(&d);
    ref_buf_free(&s1);
    ref_buf_free(&s2);
    ref_buf_free(&s3);
}
END_TEST

START_TEST(test_replay_damage_middle)
{
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    size_t bad_at = b.len;
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    add_rec(&b, 3, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_START_ATTEMPT, 3);
    b.data[bad_at + 30] ^= 0x01; /* inside record 2's payload */

    struct tdir d;
    tdir_open(&d);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, -1);
    replay_free(&r);
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + b.len);
    ck_assert_mem_eq(s.data + CMDLOG_HEADER_LEN, b.data, b.len);
    ck_assert_int_eq(s.status, REF_BAD);
    ck_assert_uint_eq(s.bad_off, CMDLOG_HEADER_LEN + bad_at);
    ref_seg_free(&s);

    /* asked to truncate: the log ends before the damage */
    replay(&d, NOW, true, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 1);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + bad_at);
    ck_assert_uint_eq(r.records, 1);
    REQUIRE(find(r.core, 1) != NULL);
    REQUIRE(find(r.core, 2) == NULL);
    REQUIRE(find(r.core, 3) == NULL);
    replay_free(&r);
    seg_read(&d, 1, &s);
    ck_assert_int_eq(s.status, REF_OK);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + bad_at);
    ref_seg_free(&s);
    /* and then it is clean */
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    replay_free(&r);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* Damage in a segment that is not the last one, even at its very end. */
START_TEST(test_replay_damage_earlier_segment)
{
    struct ref_buf s1 = {0}, s2 = {0}, s3 = {0};
    add_rec(&s1, 1, "q", NOW - 1000, HOUR);
    size_t good1 = s1.len;
    add_rec(&s1, 2, "q", NOW - 1000, HOUR);
    size_t cut1 = s1.len - 3; /* torn, but followed by whole segments */
    add_rec(&s2, 3, "q", NOW - 1000, HOUR);
    add_rec(&s3, 4, "q", NOW - 1000, HOUR);

    struct tdir d;
    tdir_open(&d);
    REQUIRE(ref_seg_write(d.path, 1, s1.data, cut1) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, -1);
    replay_free(&r);
    char names[256];
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log 000000002.log 000000003.log");
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + cut1);
    ref_seg_free(&s);

    replay(&d, NOW, true, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.last, 1);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + good1);
    ck_assert_uint_eq(r.records, 1);
    ck_assert_uint_eq(core_job_count(r.core), 1);
    replay_free(&r);
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log");
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + good1);
    ck_assert_int_eq(s.status, REF_OK);
    ref_seg_free(&s);
    tdir_close(&d);

    /* a bad header in the first of two segments */
    tdir_open(&d);
    REQUIRE(ref_seg_write_raw(d.path, 1, "wqwq\0\0\0\2", 8) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, -1);
    replay_free(&r);
    /* a bad header in the only segment, with records after it */
    REQUIRE(unlinkat(d.fd, "000000002.log", 0) == 0);
    struct ref_buf h = {0};
    ref_buf_put(&h, "WQWQ\0\0\0\1", 8);
    ref_buf_put(&h, s2.data, s2.len);
    REQUIRE(ref_seg_write_raw(d.path, 1, h.data, h.len) == 0);
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, -1);
    ck_assert_uint_eq(core_job_count(r.core), 0);
    replay_free(&r);
    ref_buf_free(&h);
    tdir_close(&d);

    ref_buf_free(&s1);
    ref_buf_free(&s2);
    ref_buf_free(&s3);
}
END_TEST

/* Segments replay in numeric order, across gaps in the numbering. */
START_TEST(test_replay_multi_segment)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf s = {0};
    add_rec(&s, 1, "q", NOW - 1000, HOUR);
    REQUIRE(ref_seg_write(d.path, 2, s.data, s.len) == 0);
    s.len = 0;
    id_rec(&s, REF_START_ATTEMPT, 1);
    REQUIRE(ref_seg_write(d.path, 9, s.data, s.len) == 0);
    s.len = 0;
    result_rec(&s, REF_COMPLETE, 1, "r");
    id_rec(&s, REF_DELETE, 1);
    add_rec(&s, 1, "q2", NOW - 1000, HOUR);
    REQUIRE(ref_seg_write(d.path, 10, s.data, s.len) == 0);
    s.len = 0;
    id_rec(&s, REF_START_ATTEMPT, 1);
    REQUIRE(ref_seg_write(d.path, 123456789, s.data, s.len) == 0);
    size_t last_len = s.len;

    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.records, 6);
    ck_assert_uint_eq(r.last, 123456789);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + last_len);
    struct job *j = find(r.core, 1);
    REQUIRE(j != NULL);
    ck_assert_str_eq(queue_name(r.core, j), "q2");
    ck_assert_int_eq(j->state, JOB_LEASED);
    ck_assert_uint_eq(j->attempts, 1);
    replay_free(&r);
    ref_buf_free(&s);
    tdir_close(&d);
}
END_TEST

/* ---- cleaning ---- */

/* Compare two cores job by job (ids 1..max). */
static void
require_same_core(const struct core *a, const struct core *b, uint64_t max)
{
    ck_assert_uint_eq(core_job_count(a), core_job_count(b));
    ck_assert_mem_eq(&a->stats, &b->stats, sizeof a->stats);
    for (uint64_t n = 1; n <= max; n++) {
        const struct job *x = find(a, n), *y = find(b, n);
        if ((x == NULL) != (y == NULL))
            ck_abort_msg("job %llu: %s before cleaning, %s after", (unsigned long long)n,
                         x ? "present" : "absent", y ? "present" : "absent");
        if (x == NULL)
            continue;
        ck_assert_str_eq(queue_name(a, x), queue_name(b, y));
        ck_assert_int_eq(x->state, y->state);
        ck_assert_int_eq(x->place, y->place);
        ck_assert_uint_eq(x->attempts, y->attempts);
        ck_assert_uint_eq(x->fails, y->fails);
        ck_assert_uint_eq(core_job_expiry(x), core_job_expiry(y));
        ck_assert_uint_eq(core_job_deadline(a, x), core_job_deadline(b, y));
        ck_assert_int_eq(x->priority, y->priority);
        uint32_t xlen, ylen;
        const char *xres = core_job_result(a, x, &xlen), *yres = core_job_result(b, y, &ylen);
        ck_assert_uint_eq(xlen, ylen);
        if (xlen > 0)
            ck_assert_mem_eq(xres, yres, xlen);
        ck_assert_uint_eq(x->payload_len, y->payload_len);
    }
}

/* The codes and ids of a segment's records, as "code:id code:id ...". */
static void
seg_summary(const struct tdir *d, uint32_t n, char *out, size_t size)
{
    struct ref_seg s;
    seg_read(d, n, &s);
    ck_assert_int_eq(s.status, REF_OK);
    out[0] = '\0';
    for (size_t i = 0; i < s.nrecs; i++) {
        char one[32];
        snprintf(one, sizeof one, "%s%d:%u", i ? " " : "", s.recs[i].code,
                 (unsigned)s.recs[i].id[15]);
        strncat(out, one, size - strlen(out) - 1);
    }
    ref_seg_free(&s);
}

START_TEST(test_clean)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf s1 = {0}, s2 = {0}, s3 = {0};
    int64_t t = NOW - 1000;
    /* segment 1 */
    add_rec(&s1, 1, "a", t, HOUR); /* A: deleted in 1 */
    add_rec(&s1, 2, "b", t, HOUR); /* B: lives, completed in 2 */
    id_rec(&s1, REF_START_ATTEMPT, 2);
    add_rec(&s1, 3, "c", t, HOUR); /* C: expired in 2 */
    id_rec(&s1, REF_DELETE, 1);
    add_rec(&s1, 5, "e", t, HOUR); /* E: deleted in 3 (not cleaned yet) */
    /* segment 2 */
    result_rec(&s2, REF_COMPLETE, 2, "r");
    id_rec(&s2, REF_EXPIRE, 3);
    add_rec(&s2, 1, "a2", t, HOUR); /* A again, after its delete: lives */
    add_rec(&s2, 6, "f", t, HOUR);  /* F: deleted in 2 */
    id_rec(&s2, REF_START_ATTEMPT, 6);
    id_rec(&s2, REF_DELETE, 6);
    /* segment 3, the one being written */
    id_rec(&s3, REF_DELETE, 5);
    id_rec(&s3, REF_START_ATTEMPT, 1);
    add_rec(&s3, 7, "g", t, HOUR);
    id_rec(&s3, REF_DELETE, 7);
    REQUIRE(ref_seg_write(d.path, 1, s1.data, s1.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);

    struct replay before, after;
    replay(&d, NOW, false, &before);
    ck_assert_int_eq(before.rc, 0);
    ck_assert_uint_eq(core_job_count(before.core), 2); /* B completed, A2 leased */

    ck_assert_int_eq(cmdlog_files_clean(d.fd, 3), 0);
    char sum[512];
    seg_summary(&d, 1, sum, sizeof sum);
    ck_assert_str_eq(sum, "1:2 7:2 1:5");
    seg_summary(&d, 2, sum, sizeof sum);
    ck_assert_str_eq(sum, "3:2 1:1");
    struct ref_seg s;
    seg_read(&d, 3, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + s3.len);
    ck_assert_mem_eq(s.data + CMDLOG_HEADER_LEN, s3.data, s3.len);
    ref_seg_free(&s);
    char names[256];
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log 000000002.log 000000003.log");

    replay(&d, NOW, false, &after);
    ck_assert_int_eq(after.rc, 0);
    require_same_core(before.core, after.core, 10);
    replay_free(&after);

    /* cleaning again changes nothing */
    ck_assert_int_eq(cmdlog_files_clean(d.fd, 3), 0);
    seg_summary(&d, 1, sum, sizeof sum);
    ck_assert_str_eq(sum, "1:2 7:2 1:5");
    seg_summary(&d, 2, sum, sizeof sum);
    ck_assert_str_eq(sum, "3:2 1:1");

    /* with segment 3 closed too: E and G go, and so does everything of
     * segment 3 but A's lease */
    ck_assert_int_eq(cmdlog_files_clean(d.fd, 4), 0);
    seg_summary(&d, 1, sum, sizeof sum);
    ck_assert_str_eq(sum, "1:2 7:2");
    seg_summary(&d, 3, sum, sizeof sum);
    ck_assert_str_eq(sum, "7:1");
    replay(&d, NOW, false, &after);
    ck_assert_int_eq(after.rc, 0);
    require_same_core(before.core, after.core, 10);
    replay_free(&after);

    replay_free(&before);
    ref_buf_free(&s1);
    ref_buf_free(&s2);
    ref_buf_free(&s3);
    tdir_close(&d);
}
END_TEST

START_TEST(test_clean_removes_empty_segments)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_START_ATTEMPT, 1);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    b.len = 0;
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_DELETE, 1);
    add_rec(&b, 3, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_EXPIRE, 3);
    REQUIRE(ref_seg_write(d.path, 2, b.data, b.len) == 0);
    b.len = 0;
    add_rec(&b, 4, "q", NOW - 1000, HOUR);
    REQUIRE(ref_seg_write(d.path, 3, b.data, b.len) == 0);
    /* a header-only segment holds nothing to clean */
    REQUIRE(ref_seg_write(d.path, 4, NULL, 0) == 0);

    struct replay before, after;
    replay(&d, NOW, false, &before);
    ck_assert_int_eq(before.rc, 0);
    ck_assert_int_eq(cmdlog_files_clean(d.fd, 5), 0);
    char names[256], sum[256];
    tdir_list(&d, names, sizeof names);
    REQUIRE(strcmp(names, "000000002.log 000000003.log 000000004.log") == 0 ||
            strcmp(names, "000000002.log 000000003.log") == 0);
    seg_summary(&d, 2, sum, sizeof sum);
    ck_assert_str_eq(sum, "1:2");
    replay(&d, NOW, false, &after);
    ck_assert_int_eq(after.rc, 0);
    require_same_core(before.core, after.core, 5);
    replay_free(&after);
    replay_free(&before);
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

/* A segment that does not read cleanly to its end is left alone. */
START_TEST(test_clean_skips_damaged)
{
    struct tdir d;
    tdir_open(&d);
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_DELETE, 1);
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    b.data[b.len - 2] ^= 0xff;
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, NULL, 0) == 0);
    ck_assert_int_eq(cmdlog_files_clean(d.fd, 2), 0);
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + b.len);
    ck_assert_mem_eq(s.data + CMDLOG_HEADER_LEN, b.data, b.len);
    ref_seg_free(&s);
    char names[256];
    tdir_list(&d, names, sizeof names);
    ck_assert_str_eq(names, "000000001.log 000000002.log");
    ref_buf_free(&b);
    tdir_close(&d);
}
END_TEST

/* ---- the Go server's data directory ---- */

static const char *
fixtures_dir(char *buf, size_t size)
{
    const char *env = getenv("WQ_FIXTURES");
    if (env != NULL && env[0] != '\0')
        return env;
    /* make check sets WQ_FIXTURES; by hand, find them next to this file */
    snprintf(buf, size, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash != NULL)
        snprintf(slash, size - (size_t)(slash - buf), "/fixtures");
    else
        snprintf(buf, size, "fixtures");
    return buf;
}

/* Copy every file of src into the temporary directory. */
static void
copy_dir(const char *src, const struct tdir *d)
{
    DIR *dir = opendir(src);
    if (dir == NULL)
        ck_abort_msg("cannot open %s: %s (set WQ_FIXTURES)", src, strerror(errno));
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[1300]; /* a fixtures_dir path, a name */
        snprintf(path, sizeof path, "%s/%s", src, de->d_name);
        struct ref_seg s;
        REQUIRE(ref_seg_read(path, &s) == 0);
        int fd = openat(d->fd, de->d_name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(write(fd, s.data, s.len) == (ssize_t)s.len);
        close(fd);
        ref_seg_free(&s);
    }
    closedir(dir);
}

static struct job *
find_text(const struct core *c, const char *text)
{
    uint8_t id[JOBID_LEN];
    REQUIRE(jobid_parse(text, strlen(text), id) == 0);
    return core_find(c, id);
}

START_TEST(test_go_fixture)
{
    char buf[1024], src[1100];
    snprintf(src, sizeof src, "%s/workq-go", fixtures_dir(buf, sizeof buf));
    struct tdir d;
    tdir_open(&d);
    copy_dir(src, &d);

    /* the reference reads every byte of it */
    struct ref_seg s;
    size_t sizes[3] = {0};
    for (uint32_t n = 1; n <= 2; n++) {
        seg_read(&d, n, &s);
        ck_assert_int_eq(s.status, REF_OK);
        sizes[n] = s.len;
        ref_seg_free(&s);
    }
    REQUIRE(!seg_exists(&d, 3));

    /* as of the real clock: the fixture's live jobs last until 2117 */
    uint64_t now = (uint64_t)time(NULL) * 1000;
    struct replay r;
    replay(&d, now, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.records, 18);
    ck_assert_uint_eq(r.last, 2);
    ck_assert_uint_eq(r.last_size, sizes[2]);
    struct core *c = r.core;
    ck_assert_uint_eq(core_job_count(c), 6);
    require_stats(c, 2, 1, 1, 1, 1);

    /* J1: add -> NEW */
    struct job *j = find_text(c, "0f8fad5b-d9cb-469f-a165-70867728950e");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_str_eq(queue_name(c, j), "ping");
    ck_assert_uint_eq(j->payload_len, 5);
    ck_assert_mem_eq(j->payload, "hello", 5);
    ck_assert_uint_eq(j->ttr, 60000);
    ck_assert_uint_eq(j->ttl, 3155760000000ull);
    ck_assert_int_eq(j->priority, 0);
    ck_assert_uint_eq(j->max_attempts, 0);
    ck_assert_uint_eq(j->max_fails, 0);
    ck_assert_int_eq(core_job_created(c, j), 1489504166535LL); /* 2017-03-14T15:09:26.535897932Z */
    ck_assert_uint_eq(core_job_expiry(j), 1489504166535ull + 3155760000000ull);
    ck_assert_uint_eq(j->attempts, 0);

    /* J2: schedule for 2099-12-31T23:59:59.123456789Z -> NEW, scheduled */
    j = find_text(c, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_NEW);
    ck_assert_int_eq(j->place, JOB_IN_SCHEDULED);
    ck_assert_str_eq(queue_name(c, j), "reports");
    ck_assert_uint_eq(j->payload_len, 6);
    ck_assert_mem_eq(j->payload, "yearly", 6);
    ck_assert_uint_eq(j->ttr, 30000);
    ck_assert_int_eq(j->priority, 10);
    ck_assert_int_eq(j->base_ms, 4102444799123LL);
    ck_assert_uint_eq(time_ns(c, j), 456789);
    ck_assert_uint_eq(core_job_expiry(j), 4102444799123ull + 3155760000000ull);

    /* J3: add, start-attempt -> LEASED with a fresh TTR */
    j = find_text(c, "2c1b3d6e-5a4f-4e8b-9c7d-1e2f3a4b5c6d");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_LEASED);
    ck_assert_str_eq(queue_name(c, j), "emails");
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(core_job_deadline(c, j), now + 120000);
    ck_assert_uint_eq(j->payload_len, 25);
    ck_assert_mem_eq(j->payload, "{\"to\":\"ann@example.com\"}\n", 25);

    /* J4: add, start-attempt, complete -> COMPLETED */
    j = find_text(c, "3d2c4e7f-6b5a-4f9c-8d8e-2f3a4b5c6d7e");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_COMPLETED);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(j->fails, 0);
    require_result(c, j, "sent");

    /* J5: add, start-attempt, fail -> FAILED */
    j = find_text(c, "4e3d5f80-7c6b-4a0d-9e9f-3a4b5c6d7e8f");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_FAILED);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(j->fails, 1);
    require_result(c, j, "smtp down");

    /* J6: add, delete -> gone */
    REQUIRE(find_text(c, "5f4e6091-8d7c-4b1e-afa0-4b5c6d7e8f90") == NULL);

    /* J7: priority -5, max-attempts 3, max-fails 2; start, timeout -> PENDING */
    j = find_text(c, "60f571a2-9e8d-4c2f-b0b1-5c6d7e8f9001");
    REQUIRE(j != NULL);
    ck_assert_int_eq(j->state, JOB_PENDING);
    ck_assert_int_eq(j->place, JOB_IN_READY);
    ck_assert_str_eq(queue_name(c, j), "thumbs");
    ck_assert_int_eq(j->priority, -5);
    ck_assert_uint_eq(j->max_attempts, 3);
    ck_assert_uint_eq(j->max_fails, 2);
    ck_assert_uint_eq(j->attempts, 1);
    ck_assert_uint_eq(j->fails, 0);
    ck_assert_uint_eq(j->payload_len, 0);

    /* J8: ttl 60000 from 2017 -> not restored; J9: expired -> gone */
    REQUIRE(find_text(c, "71a682b3-af9e-4d30-81c2-6d7e8f900112") == NULL);
    REQUIRE(find_text(c, "82b793c4-b0af-4e41-92d3-7e8f90011223") == NULL);
    replay_free(&r);

    /* replay did not touch the files */
    for (uint32_t n = 1; n <= 2; n++) {
        seg_read(&d, n, &s);
        ck_assert_uint_eq(s.len, sizes[n]);
        ref_seg_free(&s);
    }
    tdir_close(&d);
}
END_TEST

/* ---- suite ---- */

static Suite *
cmdlog_suite(void)
{
    Suite *s = suite_create("cmdlog");
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"crc32c_vectors", test_crc32c_vectors},
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
        {"rec_size_boundaries", test_rec_size_boundaries},
        {"segment_names", test_segment_names},
        {"replay_states", test_replay_states},
        {"replay_ready_order", test_replay_ready_order},
        {"replay_expiry", test_replay_expiry},
        {"replay_readd", test_replay_readd},
        {"replay_empty", test_replay_empty},
        {"replay_torn_tail", test_replay_torn_tail},
        {"replay_garbage_tail", test_replay_garbage_tail},
        {"replay_padding", test_replay_padding},
        {"clean_padded_segment", test_clean_padded_segment},
        {"replay_damage_middle", test_replay_damage_middle},
        {"replay_damage_earlier_segment", test_replay_damage_earlier_segment},
        {"replay_multi_segment", test_replay_multi_segment},
        {"clean", test_clean},
        {"clean_removes_empty_segments", test_clean_removes_empty_segments},
        {"clean_skips_damaged", test_clean_skips_damaged},
        {"go_fixture", test_go_fixture},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    /* one run per record spec */
    const struct {
        const char *name;
        const TTest *test;
    } looped[] = {
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
    /* damage and torn tails log by design; keep the output to errors */
    wq_log_level = LOG_LVL_ERROR;
    SRunner *sr = srunner_create(cmdlog_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
