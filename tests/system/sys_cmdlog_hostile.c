/* sys_cmdlog_hostile.c - system tests of the command log's replay against
 * hostile directories (doc/cmdlog.md "What replay accepts", doc/security.md):
 * the real workq-server started on a log directory that someone crafted.
 *
 *   - a last segment whose garbage claims a record at every 42nd byte
 *     (tests/common/cmdlog_ref.c, ref_crafted_tail): replay cuts it as a torn tail
 *     in time linear in its size, counted by the scan's own figures (its
 *     debug line) for 1 and 4 MiB;
 *   - segment numbers past 999,999,999: 100 acknowledged adds in segments
 *     of one record each, from 999999990.log on, all back after a kill;
 *     and names that no segment has, refused with exit status 78;
 *   - a segment that is a symbolic link to /dev/zero, a FIFO, a directory
 *     in the middle: refused with exit status 78 and a line naming the
 *     file, nothing changed, and no wait on the FIFO;
 *   - a 10 GiB sparse last segment: replayed, with the server's peak
 *     resident size (VmHWM) far below the file's size.
 *
 * Every test makes its own directory /tmp/wq-hostile-XXXXXX (log in
 * BASE/log, each server's stderr in BASE/stderr.N), removed when it
 * passes.  Waits are scaled by WQ_TEST_SLOW; under WQ_SERVER_WRAPPER the
 * resident size is the wrapper's and is not checked. */
#include "config.h"
#include "systest.h"
#include "systest_fx.h"
#include "cmdlog_ref.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EX_CONFIG_STATUS 78
#define TTR              600000u
#define TTL              "3600000"
/* The crafted records' TIME: fixed, so that the bytes are the same on
 * every run. */
#define CRAFT_MS 1700000000000LL

/* ------------------------------------------------------------------------ */
/* Helpers */

static const char *
path_of(const struct systest_fx *x, const char *name)
{
    return f("%s/%s", x->dir, name);
}

/* The text form of ref_id(n). */
static const char *
idt(uint64_t n)
{
    return f("00000000-0000-4000-8000-%012" PRIx64, n);
}

static void
add(int fd, uint64_t n)
{
    systest_sends(fd, f("add %s q %u %s 3\r\nj%02u\r\n", idt(n), TTR, TTL, (unsigned)(n % 100)));
    systest_expect(fd, OK);
}

/* Is job n there (inspect finds it)? */
static bool
has_job(int fd, uint64_t n)
{
    systest_sends(fd, f("inspect job %s\r\n", idt(n)));
    const char *l = systest_read_line(fd);
    if (strcmp(l, "-NOT-FOUND") == 0)
        return false;
    ck_assert_str_eq(l, "+OK 1");
    const char *head = systest_read_line(fd);
    int k = 0;
    char id[64];
    ck_assert_int_eq(sscanf(head, "%63s %d", id, &k), 2);
    for (int i = 0; i < k; i++) {
        l = systest_read_line(fd);
        size_t plen;
        if (sscanf(l, "payload-size %zu", &plen) == 1) {
            char p[64];
            ck_assert_uint_lt(plen + 10, sizeof p);
            systest_read_n(fd, p, plen + 10);
            i++;
        }
    }
    return true;
}

/* A file's bytes ("" if missing); free it. */
static char *
slurp(const char *path, size_t *len)
{
    return systest_slurp(path, len);
}

static void
append_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    ck_assert_msg(fd >= 0, "cannot open %s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* What the directory holds: names, types and sizes, sorted. */
static char *
dir_listing(const struct systest_fx *x)
{
    struct dirent **names;
    int n = scandir(x->dir, &names, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    struct sb b = {0};
    for (int i = 0; i < n; i++) {
        struct stat st;
        ck_assert_int_eq(lstat(path_of(x, names[i]->d_name), &st), 0);
        sb_add(&b, f("%s %o %lld\n", names[i]->d_name, (unsigned)(st.st_mode & S_IFMT),
                     (long long)st.st_size));
        free(names[i]);
    }
    free(names);
    sb_add(&b, "");
    return b.p;
}

/* A log of one segment holding jobs 1..n, written by a server. */
static void
make_log(struct systest_fx *x, unsigned n)
{
    struct systest_server s;
    systest_fx_start(x, &s, NULL);
    int fd = systest_connect(&s);
    for (unsigned i = 1; i <= n; i++)
        add(fd, i);
    close(fd);
    systest_stop(&s);
}

/* The server must refuse the directory: exit 78 with exactly `want` in
 * its log, and the directory as it was. */
static void
expect_refused(struct systest_fx *x, const char *want)
{
    char *before = dir_listing(x);
    int rc = systest_fx_run(x, NULL);
    char *err = slurp(x->err, NULL);
    ck_assert_msg(rc == EX_CONFIG_STATUS, "exit %d, want 78; stderr: %s", rc, err);
    ck_assert_msg(strstr(err, want) != NULL, "stderr does not say \"%s\": %s", want, err);
    free(err);
    char *after = dir_listing(x);
    ck_assert_str_eq(after, before);
    free(before);
    free(after);
}

/* ------------------------------------------------------------------------ */
/* A crafted last segment */

/* What the scan's debug line said. */
struct scan_line {
    unsigned long long offset, bytes, candidates, crc_checks, crc_bytes, ms;
    char result[32];
};

static void
parse_scan_line(const char *err, struct scan_line *sl)
{
    const char *p = strstr(err, "cmdlog recovery scan segment=000000001.log ");
    ck_assert_msg(p != NULL, "no scan line: %s", err);
    unsigned long long waiting;
    ck_assert_int_eq(sscanf(p,
                            "cmdlog recovery scan segment=000000001.log offset=%llu bytes=%llu "
                            "candidates=%llu crc_checks=%llu crc_bytes=%llu max_waiting=%llu "
                            "ms=%llu result=%31[a-z ]",
                            &sl->offset, &sl->bytes, &sl->candidates, &sl->crc_checks,
                            &sl->crc_bytes, &waiting, &sl->ms, sl->result),
                     8);
}

/* Append len crafted bytes to the log of job 1, start a server, and check
 * that it cut them as a torn tail and kept the job.  Its scan line. */
static void
replay_crafted(struct systest_fx *x, size_t len, struct scan_line *sl, size_t *claims)
{
    const char *seg = path_of(x, "000000001.log");
    char segpath[160];
    snprintf(segpath, sizeof segpath, "%s", seg);
    size_t good;
    free(slurp(segpath, &good));
    struct ref_buf b = {0};
    *claims = ref_crafted_tail(&b, CRAFT_MS, len);
    append_file(segpath, b.data, b.len);
    ref_buf_free(&b);

    struct systest_server s;
    systest_fx_start(x, &s, "-log-level", "debug", NULL);
    char *err = slurp(x->err, NULL);
    parse_scan_line(err, sl);
    const char *cut =
        f("cmdlog cut torn tail segment=000000001.log offset=%zu bytes=%zu", good, len);
    ck_assert_msg(strstr(err, cut) != NULL, "no \"%s\": %s", cut, err);
    free(err);
    int fd = systest_connect(&s);
    ck_assert(has_job(fd, 1));
    close(fd);
    systest_stop(&s);
    size_t after;
    free(slurp(segpath, &after));
    ck_assert_uint_eq(after, good);
    ck_assert_str_eq(sl->result, "torn tail");
    ck_assert_uint_eq(sl->offset, good);
    ck_assert_uint_eq(sl->bytes, len);
}

/* The old scan checked the CRC of every claim, each running to the end:
 * 1, 2, 4 MiB took 1.4, 5.7, 23.9 s, 64 MiB about 1.7 hours.  Now the work
 * is linear: 4 times the bytes, 4 times the candidates and the bytes
 * checksummed (the scan's own counts), and a time that grows far less than
 * the 16 times of a quadratic scan. */
START_TEST(test_crafted_tail_linear)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 1);
    struct scan_line one, four;
    size_t claims1, claims4;
    replay_crafted(&x, 1u << 20, &one, &claims1);
    replay_crafted(&x, 4u << 20, &four, &claims4);
    /* every claim but the first (where replay's decoding failed) was a
     * candidate, its CRC checked once */
    ck_assert_uint_eq(one.candidates, claims1 - 1);
    ck_assert_uint_eq(four.candidates, claims4 - 1);
    ck_assert_uint_eq(one.crc_checks, one.candidates);
    ck_assert_uint_eq(four.crc_checks, four.candidates);
    ck_assert_uint_le(one.crc_bytes, 1u << 20);
    ck_assert_uint_le(four.crc_bytes, 4u << 20);
    ck_assert_uint_le(four.crc_bytes * 10, one.crc_bytes * 41);
    /* time: a quadratic scan takes 16 times as long for 4 times the bytes */
    unsigned long long bound = 8 * (one.ms > 50 ? one.ms : 50) + 500ull * systest_slow();
    ck_assert_msg(four.ms <= bound, "4 MiB took %llu ms, 1 MiB %llu ms", four.ms, one.ms);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Segment names */

/* From 999999990.log on, in segments of one record each, 100 adds are
 * acknowledged; after a kill all of them come back (the old 14-byte name
 * buffer cut 1000000000.log to "1000000000.lo", which replay passed over:
 * 77 of 100 jobs lost). */
START_TEST(test_names_past_9_digits)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 1);
    ck_assert_int_eq(rename(path_of(&x, "000000001.log"), path_of(&x, "999999990.log")), 0);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-seg-size", "15", NULL);
    int fd = systest_connect(&s);
    for (unsigned i = 2; i <= 101; i++)
        add(fd, i);
    close(fd);
    systest_kill(&s);
    ck_assert_int_eq(access(path_of(&x, "1000000000.log"), F_OK), 0);
    ck_assert_int_eq(access(path_of(&x, "1000000090.log"), F_OK), 0);
    ck_assert_int_ne(access(path_of(&x, "1000000000.lo"), F_OK), 0);

    systest_fx_start(&x, &s, "-cmdlog-seg-size", "15", NULL);
    fd = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 101);
    for (unsigned i = 1; i <= 101; i++)
        ck_assert_msg(has_job(fd, i), "job %u lost", i);
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* A name that looks like a segment's and that no segment has stops the
 * start, whatever else is there: it is never passed over. */
START_TEST(test_stray_names_refused)
{
    static const char *const stray[] = {"18446744073709551616.log", "0000000002.log",
                                        "00000002.log"};
    for (size_t i = 0; i < sizeof stray / sizeof stray[0]; i++) {
        struct systest_fx x;
        systest_fx_init(&x, "hostile", true);
        make_log(&x, 1);
        ck_assert_int_eq(link(path_of(&x, "000000001.log"), path_of(&x, stray[i])), 0);
        expect_refused(&x, f("cmdlog refused path=%s/%s: not a segment name (9 digits, or more "
                             "without a leading zero, from 1 to 18446744073709551615)",
                             x.dir, stray[i]));
        systest_fx_free(&x);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* File types */

/* A symbolic link to /dev/zero as the last segment read as an empty one,
 * and every later write went to /dev/zero: refused. */
START_TEST(test_symlink_refused)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 2);
    ck_assert_int_eq(symlink("/dev/zero", path_of(&x, "000000002.log")), 0);
    expect_refused(&x, f("cmdlog refused path=%s/000000002.log: a symbolic link, not a regular "
                         "file",
                         x.dir));
    systest_fx_free(&x);
}
END_TEST

/* A FIFO held the start for ever (an open waiting for a writer): refused
 * at once. */
START_TEST(test_fifo_refused)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 2);
    ck_assert_int_eq(mkfifo(path_of(&x, "000000002.log"), 0644), 0);
    int64_t t0 = systest_now_ms();
    expect_refused(&x,
                   f("cmdlog refused path=%s/000000002.log: a fifo, not a regular file", x.dir));
    ck_assert_int_lt(systest_now_ms() - t0, systest_wait_ms());
    systest_fx_free(&x);
}
END_TEST

/* A directory in the middle read as an empty segment: refused. */
START_TEST(test_directory_refused)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 2);
    ck_assert_int_eq(mkdir(path_of(&x, "000000002.log"), 0755), 0);
    ck_assert_int_eq(link(path_of(&x, "000000001.log"), path_of(&x, "000000003.log")), 0);
    expect_refused(
        &x, f("cmdlog refused path=%s/000000002.log: a directory, not a regular file", x.dir));
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* A sparse segment */

/* The server's peak resident size, in KiB (VmHWM). */
static long
vm_hwm_kib(pid_t pid)
{
    char *status = slurp(f("/proc/%d/status", (int)pid), NULL);
    const char *p = strstr(status, "VmHWM:");
    long kib = -1;
    if (p != NULL)
        sscanf(p, "VmHWM: %ld", &kib);
    free(status);
    return kib;
}

/* A last segment of 10 GiB, its records and then a hole, took 10.5 GB of
 * RSS to replay (the whole file in memory): now the hole is padding, cut
 * off, and the server stays small. */
START_TEST(test_sparse_segment_bounded)
{
    struct systest_fx x;
    systest_fx_init(&x, "hostile", true);
    make_log(&x, 3);
    const char *seg = path_of(&x, "000000001.log");
    char segpath[160];
    snprintf(segpath, sizeof segpath, "%s", seg);
    size_t good;
    free(slurp(segpath, &good));
    ck_assert_int_eq(truncate(segpath, (off_t)(10ull << 30)), 0);

    struct systest_server s;
    systest_fx_start(&x, &s, NULL);
    long kib = vm_hwm_kib(s.pid);
    int fd = systest_connect(&s);
    for (unsigned i = 1; i <= 3; i++)
        ck_assert(has_job(fd, i));
    close(fd);
    if (!systest_wrapped())
        ck_assert_msg(kib > 0 && kib < 256 * 1024, "VmHWM %ld KiB after a 10 GiB segment", kib);
    systest_stop(&s);
    struct stat st;
    ck_assert_int_eq(stat(segpath, &st), 0);
    ck_assert_int_eq(st.st_size, (off_t)good);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */

int
main(void)
{
    const struct systest_group groups[] = {
        {"crafted", {test_crafted_tail_linear, NULL}},
        {"names", {test_names_past_9_digits, test_stray_names_refused, NULL}},
        {"types", {test_symlink_refused, test_fifo_refused, test_directory_refused, NULL}},
        {"sparse", {test_sparse_segment_bounded, NULL}},
    };
    return systest_main(systest_suite("cmdlog_hostile", groups, sizeof groups / sizeof groups[0]));
}
