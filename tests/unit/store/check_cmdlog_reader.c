/* check_cmdlog_reader.c - unit tests for src/store/cmdlog_reader.c beyond what
 * replay and cleaning show (check_cmdlog_files.c): the recovery scan that
 * tells a torn tail from damage, against the definition it replaces
 * (decode at every offset), its cost on crafted bytes, its limits, and the
 * reader's bounds (nothing past the size at open, no buffer grown for a
 * length whose CRC does not match, holes skipped unread). */
#include "lib/wq.h"
#include "store/cmdlog_reader.h"
#include "cmdlog_scan_ref.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/cmdlog_codec.h"
#include "cmdlog_ref.h"
#include "cmdlog_check.h"
#include "rng.h"
#include "unit.h"

/* ---- helpers ---- */

/* Write bytes as the file `name` of d and open it for reading. */
static int
file_of(const struct tdir *d, const char *name, const void *bytes, size_t len)
{
    int fd = openat(d->fd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(pwrite(fd, bytes, len, 0) == (ssize_t)len);
    return fd;
}

static void
add_rec(struct ref_buf *b, uint64_t n, size_t payload_len)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    char *payload = malloc(payload_len + 1);
    REQUIRE(payload != NULL);
    for (size_t i = 0; i < payload_len; i++)
        payload[i] = (char)rng_next(); /* any byte, 0x01 included */
    ref_rec_add(b, NOW, id, "q", 60000, HOUR, 0, 0, 0, payload, payload_len, NOW);
    free(payload);
}

/* One piece of a random tail. */
static void
random_piece(struct ref_buf *b)
{
    uint8_t id[JOBID_LEN];
    id_of(rng_below(1000), id);
    switch (rng_below(9)) {
    case 0: /* a small record */
        ref_rec_id(b, NOW, REF_DELETE, id);
        break;
    case 1: /* a record up to several windows long */
        add_rec(b, rng_below(1000), (size_t)rng_below(3000));
        break;
    case 2: { /* a record with a matching CRC and a malformed payload */
        uint8_t p[64] = {REF_COMPLETE};
        memcpy(p + 1, id, JOBID_LEN);
        p[1 + JOBID_LEN] = 40; /* a result longer than what follows */
        size_t len = 1 + JOBID_LEN + 1 + (size_t)rng_below(20);
        ref_rec_raw(b, NOW, p, len);
        break;
    }
    case 3: { /* the same, long */
        size_t len = 200 + (size_t)rng_below(2000);
        uint8_t *p = calloc(1, len);
        REQUIRE(p != NULL);
        p[0] = 99; /* no such code */
        ref_rec_raw(b, NOW, p, len);
        free(p);
        break;
    }
    case 4: /* bytes that claim overlapping records */
        ref_crafted_tail(b, NOW, 50 + (size_t)rng_below(600));
        break;
    case 5: { /* zeros */
        static const uint8_t zeros[700];
        ref_buf_put(b, zeros, (size_t)rng_below(sizeof zeros));
        break;
    }
    default: { /* garbage rich in version bytes and varint bytes */
        static const uint8_t alphabet[] = {0, 1, 1, 1, 0x80, 0xff, 0x7f, 3, 16, 0x81};
        size_t n = (size_t)rng_below(200);
        for (size_t i = 0; i < n; i++) {
            uint8_t c = rng_below(3) == 0 ? (uint8_t)rng_next() : alphabet[rng_below(10)];
            ref_buf_put(b, &c, 1);
        }
        break;
    }
    }
}

/* ---- the recovery scan ---- */

/* On random bytes, records, records with their CRC right and their
 * payload wrong, crafted overlapping claims and zeros, damaged here and
 * there, the scan answers what decoding at every offset answers, with
 * windows small enough for records to be larger than them. */
START_TEST(test_scan_matches_naive)
{
    static const size_t windows[] = {64, 100, 257, 4096, 0};
    struct tdir d;
    tdir_open(&d, "reader");
    size_t found = 0, cases = RUNNING_ON_VALGRIND ? 60 : 600;
    for (uint64_t seed = 1; seed <= cases; seed++) {
        rng_seed(seed);
        struct ref_buf b = {0};
        size_t pieces = 1 + (size_t)rng_below(8);
        for (size_t i = 0; i < pieces; i++)
            random_piece(&b);
        for (uint64_t flips = rng_below(4); flips > 0 && b.len > 0; flips--)
            b.data[rng_below(b.len)] ^= (uint8_t)(1u << rng_below(8));
        int fd = file_of(&d, "seg", b.data, b.len);
        size_t from = rng_below(2) == 0 || b.len == 0 ? 0 : (size_t)rng_below(b.len);
        bool want = naive_valid_after(b.data, b.len, from);
        found += want;
        for (size_t w = 0; w < WQ_ARRAY_LEN(windows); w++) {
            struct cmdlog_scan_limits lim;
            cmdlog_scan_defaults(&lim);
            if (windows[w] != 0)
                lim.window = windows[w];
            struct cmdlog_scan_stats st;
            enum cmdlog_scan_result res = cmdlog_scan(fd, from, b.len, &lim, &st);
            if (res != (want ? CMDLOG_SCAN_FOUND : CMDLOG_SCAN_NONE))
                ck_abort_msg("seed %llu window %zu from %zu of %zu: scan %d, naive %d",
                             (unsigned long long)seed, lim.window, from, b.len, res, want);
            REQUIRE(st.crc_checks <= st.candidates);
        }
        close(fd);
        ref_buf_free(&b);
    }
    /* both answers came up often enough to mean something */
    ck_assert_uint_gt(found, cases / 10);
    ck_assert_uint_lt(found, cases - cases / 10);
    tdir_close(&d);
}
END_TEST

/* Scan the crafted tail of len bytes after a good record, as replay does
 * after the first record that fails. */
static void
scan_crafted(size_t len, struct cmdlog_scan_stats *st, size_t *claims)
{
    struct ref_buf b = {0};
    ref_buf_put(&b, ref_header, REF_HEADER_LEN);
    add_rec(&b, 1, 10);
    size_t at = b.len;
    *claims = ref_crafted_tail(&b, NOW, len);
    struct tdir d;
    tdir_open(&d, "reader");
    int fd = file_of(&d, "000000001.log", b.data, b.len);
    ck_assert_int_eq(cmdlog_scan(fd, at + 1, b.len, NULL, st), CMDLOG_SCAN_NONE);
    close(fd);
    tdir_close(&d);
    ref_buf_free(&b);
}

/* Bytes that claim a record at every 42nd offset, each running to the
 * end, cost the old scan a CRC over each claim: quadratic (1, 2, 4 MiB
 * took 1.4, 5.7, 23.9 s).  The scan's work grows as the bytes do: four
 * times the bytes, four times the candidates, the CRC'd bytes and the
 * bytes read, all counted (no clock). */
START_TEST(test_scan_crafted_is_linear)
{
    struct cmdlog_scan_stats one, four;
    size_t claims1, claims4;
    scan_crafted(1u << 20, &one, &claims1);
    scan_crafted(4u << 20, &four, &claims4);
    /* every claim was a candidate, checked once */
    ck_assert_uint_eq(one.candidates, claims1 - 1);
    ck_assert_uint_eq(four.candidates, claims4 - 1);
    ck_assert_uint_eq(one.crc_checks, one.candidates);
    ck_assert_uint_eq(four.crc_checks, four.candidates);
    /* each byte read and checksummed once */
    ck_assert_uint_le(one.crc_bytes, 1u << 20);
    ck_assert_uint_le(four.crc_bytes, 4u << 20);
    ck_assert_uint_le(four.bytes_read, (4u << 20) + 64);
    ck_assert_uint_le(four.candidates * 10, one.candidates * 41);
    ck_assert_uint_le(four.crc_bytes * 10, one.crc_bytes * 41);
    /* what checking each claim's CRC in turn would have cost */
    uint64_t quadratic = 0;
    for (size_t j = 0; j < claims4; j++)
        quadratic += (4u << 20) - j * REF_CRAFT_STEP;
    ck_assert_uint_gt(quadratic, 1000 * four.crc_bytes);
}
END_TEST

/* A record after crafted claims is still found: damage. */
START_TEST(test_scan_finds_record_after_crafted)
{
    struct ref_buf b = {0};
    ref_crafted_tail(&b, NOW, 100000);
    size_t rec = b.len;
    add_rec(&b, 2, 5000);
    struct tdir d;
    tdir_open(&d, "reader");
    int fd = file_of(&d, "seg", b.data, b.len);
    struct cmdlog_scan_limits lim;
    cmdlog_scan_defaults(&lim);
    for (size_t window = 64; window <= SIZE_MAX / 2; window *= 8) {
        lim.window = window;
        ck_assert_int_eq(cmdlog_scan(fd, 1, b.len, &lim, NULL), CMDLOG_SCAN_FOUND);
        ck_assert_int_eq(cmdlog_scan(fd, rec + 1, b.len, &lim, NULL), CMDLOG_SCAN_NONE);
        if (window > b.len)
            break;
    }
    close(fd);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* Past its limits the scan gives up (replay then takes the tail as damage)
 * instead of taking more memory: too many claims waiting, or records
 * larger than the window whose CRC matches and which must be read again. */
START_TEST(test_scan_gives_up)
{
    struct ref_buf b = {0};
    ref_crafted_tail(&b, NOW, 100000);
    struct tdir d;
    tdir_open(&d, "reader");
    int fd = file_of(&d, "seg", b.data, b.len);
    struct cmdlog_scan_limits lim;
    cmdlog_scan_defaults(&lim);
    lim.max_waiting = 100;
    struct cmdlog_scan_stats st;
    ck_assert_int_eq(cmdlog_scan(fd, 0, b.len, &lim, &st), CMDLOG_SCAN_GAVE_UP);
    ck_assert_uint_le(st.max_waiting, 101);
    close(fd);
    ref_buf_free(&b);

    /* records with a good CRC and a bad payload, larger than the window */
    for (int i = 0; i < 4; i++) {
        uint8_t p[3000] = {99};
        ref_rec_raw(&b, NOW, p, sizeof p);
    }
    fd = file_of(&d, "seg", b.data, b.len);
    cmdlog_scan_defaults(&lim);
    lim.window = 256;
    ck_assert_int_eq(cmdlog_scan(fd, 0, b.len, &lim, &st), CMDLOG_SCAN_NONE);
    ck_assert_uint_eq(st.decoded, b.len);
    lim.decode_bytes = b.len - 1;
    ck_assert_int_eq(cmdlog_scan(fd, 0, b.len, &lim, &st), CMDLOG_SCAN_GAVE_UP);
    close(fd);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* A hole is skipped unread while nothing waits: a record 1 GiB into a
 * sparse file is found after reading about a window. */
START_TEST(test_scan_skips_holes)
{
    struct tdir d;
    tdir_open(&d, "reader");
    struct ref_buf b = {0};
    add_rec(&b, 1, 100);
    int fd = file_of(&d, "seg", "garbage", 7);
    uint64_t far = 1ull << 30;
    REQUIRE(pwrite(fd, b.data, b.len, (off_t)far) == (ssize_t)b.len);
    struct cmdlog_scan_stats st;
    ck_assert_int_eq(cmdlog_scan(fd, 1, far + b.len, NULL, &st), CMDLOG_SCAN_FOUND);
    ck_assert_uint_lt(st.bytes_read, 16u << 20);
    /* and a sparse file of zeros holds nothing */
    REQUIRE(ftruncate(fd, (off_t)far) == 0);
    ck_assert_int_eq(cmdlog_scan(fd, 1, far, NULL, &st), CMDLOG_SCAN_NONE);
    ck_assert_uint_lt(st.bytes_read, 16u << 20);
    ck_assert_int_eq(cmdlog_reader_zeros(fd, 7, far), 1);
    ck_assert_int_eq(cmdlog_reader_zeros(fd, 0, far), 0);
    close(fd);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* ---- the reader's bounds ---- */

/* A length that claims most of a large sparse file, with no CRC to match,
 * is damage, found by reading through the file: the buffer does not grow
 * to hold it. */
START_TEST(test_reader_big_claim_bounded)
{
    struct tdir d;
    tdir_open(&d, "reader");
    struct ref_buf b = {0};
    add_rec(&b, 1, 10);
    size_t first = b.len;
    add_rec(&b, 2, 10);
    uint8_t big[5];
    uint64_t claim = 100u << 20;
    for (int i = 0; i < 4; i++, claim >>= 7)
        big[i] = (uint8_t)(0x80 | (claim & 0x7f));
    big[4] = (uint8_t)claim;
    memcpy(b.data + first + REF_TIME_LEN, big, 5); /* garbles record 2 (its CRC) */
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    int wfd = openat(d.fd, "000000001.log", O_WRONLY | O_CLOEXEC);
    REQUIRE(wfd >= 0);
    REQUIRE(ftruncate(wfd, 200 << 20) == 0); /* zeros (a hole) past it */
    close(wfd);
    expect_record_then_damage(d.fd, 1, CMDLOG_HEADER_LEN + first);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* What is appended after the reader opened the file is not read: the file's
 * size at open bounds every read. */
START_TEST(test_reader_stops_at_size)
{
    struct tdir d;
    tdir_open(&d, "reader");
    struct ref_buf b = {0};
    add_rec(&b, 1, 10);
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    struct cmdlog_reader rd;
    ck_assert_int_eq(cmdlog_reader_open(&rd, d.fd, 1), 0);
    int wfd = openat(d.fd, "000000001.log", O_WRONLY | O_APPEND | O_CLOEXEC);
    REQUIRE(wfd >= 0);
    REQUIRE(write(wfd, b.data, b.len) == (ssize_t)b.len);
    close(wfd);
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len;
    uint64_t at;
    ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &len, &at), CMDLOG_READ_REC);
    ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &len, &at), CMDLOG_READ_END);
    ck_assert_uint_eq(rd.off, CMDLOG_HEADER_LEN + b.len);
    cmdlog_reader_close(&rd);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"scan_matches_naive", test_scan_matches_naive},
        {"scan_crafted_is_linear", test_scan_crafted_is_linear},
        {"scan_finds_record_after_crafted", test_scan_finds_record_after_crafted},
        {"scan_gives_up", test_scan_gives_up},
        {"scan_skips_holes", test_scan_skips_holes},
        {"reader_big_claim_bounded", test_reader_big_claim_bounded},
        {"reader_stops_at_size", test_reader_stops_at_size},
    };
    return unit_run(unit_suite("cmdlog_reader", cases, WQ_ARRAY_LEN(cases)), NULL);
}
