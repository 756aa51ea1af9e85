/* check_cmdlog.c - unit tests for src/store/cmdlog.c, the writer: the batch a loop
 * pass appends, its write (one per segment, header first, rotation), the
 * replies it releases under each policy, read-only mode after a failed
 * write and the retry, and the files a cut-short cleaning pass leaves.
 * What the log wrote is read back with the reference reader
 * (tests/common/cmdlog_ref.c), which shares no code with src. */
#include "lib/wq.h"
#include "store/cmdlog.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdlog_ref.h"
#include "engine/core.h"
#include "unit.h"

#define NOW 1700000000000LL

/* A fresh temporary directory for a log. */
struct tdir {
    char path[256];
};

static void
tdir_make(struct tdir *d)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/wq-writer-XXXXXX", tmp != NULL ? tmp : "/tmp");
    REQUIRE(mkdtemp(d->path) != NULL);
}

static void
tdir_remove(struct tdir *d)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->path);
    REQUIRE(system(cmd) == 0);
}

static const char *
tdir_file(const struct tdir *d, const char *name)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    return path;
}

/* Segment n read back with the reference reader ({NULL} if missing). */
static struct ref_seg
seg(const struct tdir *d, uint32_t n)
{
    char name[14];
    ref_seg_name(n, name);
    struct ref_seg s;
    memset(&s, 0, sizeof s);
    if (ref_seg_read(tdir_file(d, name), &s) != 0)
        memset(&s, 0, sizeof s);
    return s;
}

static struct cmdlog *
open_log(const struct tdir *d, enum cmdlog_sync policy, uint64_t seg_size)
{
    struct cmdlog_config cfg = {
        .dir = d->path,
        .seg_size = seg_size,
        .sync = policy,
        .sync_int_ms = 10,
        .clean_int_ms = 3600000,
    };
    struct cmdlog *l = cmdlog_open(&cfg);
    ck_assert_ptr_nonnull(l);
    struct core *core = core_new((uint64_t)NOW);
    ck_assert_int_eq(cmdlog_replay(l, &core_replay_ops, core, (uint64_t)NOW), 0);
    core_free(core);
    ck_assert_int_eq(cmdlog_start(l), 0);
    return l;
}

/* Append the add record of job n (its name and payload say n). */
static void
append_add(struct cmdlog *l, uint64_t n)
{
    char name[32], payload[32];
    snprintf(name, sizeof name, "q%llu", (unsigned long long)n);
    snprintf(payload, sizeof payload, "payload-%llu", (unsigned long long)n);
    struct cmdlog_rec r = {
        .code = CMDLOG_ADD,
        .at_ms = NOW,
        .name = {name, strlen(name)},
        .ttr = 1000,
        .ttl = 60000,
        .payload = {payload, strlen(payload)},
        .created_ms = NOW,
    };
    ref_id(r.id, n);
    cmdlog_append(l, &r);
}

/* Do the records of s[...] add jobs from, to, from+1, ... in order? */
static void
require_adds(const struct ref_seg *s, uint64_t from, size_t count)
{
    ck_assert_int_eq(s->status, REF_OK);
    ck_assert_uint_eq(s->nrecs, count);
    for (size_t i = 0; i < count; i++) {
        uint8_t id[REF_ID_LEN];
        ref_id(id, from + i);
        ck_assert_int_eq(s->recs[i].code, REF_ADD);
        ck_assert_mem_eq(s->recs[i].id, id, REF_ID_LEN);
    }
}

/* Wait (up to 10 s) for the threads' news and take it. */
static void
await_news(struct cmdlog *l)
{
    struct pollfd p = {cmdlog_event_fd(l), POLLIN, 0};
    ck_assert_int_eq(poll(&p, 1, 10000), 1);
    cmdlog_event_ack(l);
}

/* Take the threads' news until records up to n are released. */
static void
await_released(struct cmdlog *l, uint64_t n)
{
    while (cmdlog_released(l) < n)
        await_news(l);
}

/* Records stay in memory until the pass ends; then one write puts them in
 * the segment, after its header, and their replies may go. */
START_TEST(test_write_at_end_of_pass)
{
    static const enum cmdlog_sync policies[] = {CMDLOG_SYNC_OS, CMDLOG_SYNC_INTERVAL};
    for (size_t p = 0; p < 2; p++) {
        struct tdir d;
        tdir_make(&d);
        struct cmdlog *l = open_log(&d, policies[p], CMDLOG_DEFAULT_SEG_SIZE);
        ck_assert(!cmdlog_holds_replies(l, 0));
        for (uint64_t n = 1; n <= 3; n++)
            append_add(l, n);
        ck_assert_uint_eq(cmdlog_appended(l), 3);
        ck_assert_uint_eq(cmdlog_released(l), 0);
        ck_assert(cmdlog_holds_replies(l, 0));
        ck_assert(cmdlog_holds_replies(l, 3)); /* a read waits too: it saw them */
        struct ref_seg s = seg(&d, 1);
        ck_assert_ptr_null(s.data); /* nothing on disk yet */

        ck_assert_int_eq(cmdlog_write(l), 0);
        ck_assert_uint_eq(cmdlog_released(l), 3);
        ck_assert(!cmdlog_holds_replies(l, 0));
        ck_assert(!cmdlog_readonly(l));
        s = seg(&d, 1);
        require_adds(&s, 1, 3);
        ref_seg_free(&s);
        ck_assert_int_eq(cmdlog_write(l), 0); /* nothing to do */

        append_add(l, 4);
        ck_assert_int_eq(cmdlog_write(l), 0);
        s = seg(&d, 1);
        require_adds(&s, 1, 4);
        ref_seg_free(&s);
        cmdlog_close(l);
        tdir_remove(&d);
    }
}
END_TEST

/* A segment is closed once it has reached the size: each later one starts
 * with its header and holds whole records, and a batch spanning several
 * is written whole. */
START_TEST(test_rotation)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_INTERVAL, 15); /* a record per file */
    for (uint64_t n = 1; n <= 5; n++)
        append_add(l, n);
    ck_assert_int_eq(cmdlog_write(l), 0);
    append_add(l, 6);
    ck_assert_int_eq(cmdlog_write(l), 0);
    ck_assert_uint_eq(cmdlog_released(l), 6);
    for (uint32_t i = 1; i <= 6; i++) {
        struct ref_seg s = seg(&d, i);
        ck_assert_ptr_nonnull(s.data);
        require_adds(&s, i, 1);
        ref_seg_free(&s);
    }
    cmdlog_close(l);

    /* A second log on the same directory goes on after segment 6 (which
     * is full). */
    l = open_log(&d, CMDLOG_SYNC_OS, 15);
    append_add(l, 7);
    ck_assert_int_eq(cmdlog_write(l), 0);
    struct ref_seg s = seg(&d, 7);
    require_adds(&s, 7, 1);
    ref_seg_free(&s);
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

/* The file `name` of d as a segment, read back ({NULL} if missing). */
static struct ref_seg
seg_named(const struct tdir *d, const char *name)
{
    struct ref_seg s;
    memset(&s, 0, sizeof s);
    if (ref_seg_read(tdir_file(d, name), &s) != 0)
        memset(&s, 0, sizeof s);
    return s;
}

/* Write a segment file `name` holding the header and one add of job n. */
static void
put_segment_add(const struct tdir *d, const char *name, uint64_t n)
{
    struct ref_buf b = {0};
    uint8_t id[REF_ID_LEN];
    ref_id(id, n);
    ref_rec_add(&b, NOW, id, "q", 1000, 60000, 0, 0, 0, "p", 1, NOW);
    FILE *fp = fopen(tdir_file(d, name), "w");
    ck_assert_ptr_nonnull(fp);
    fwrite(ref_header, 1, REF_HEADER_LEN, fp);
    fwrite(b.data, 1, b.len, fp);
    fclose(fp);
    ref_buf_free(&b);
}

/* After segment 999,999,999 comes 1000000000.log, whole (a 14-byte name
 * buffer made it "1000000000.lo", which replay passed over), and a restart
 * replays every record, in order. */
START_TEST(test_rotation_past_9_digits)
{
    struct tdir d;
    tdir_make(&d);
    put_segment_add(&d, "999999999.log", 1);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_OS, 15);
    for (uint64_t n = 2; n <= 4; n++)
        append_add(l, n);
    ck_assert_int_eq(cmdlog_write(l), 0);
    cmdlog_close(l);
    static const char *const names[] = {"1000000000.log", "1000000001.log", "1000000002.log"};
    for (size_t i = 0; i < 3; i++) {
        struct ref_seg s = seg_named(&d, names[i]);
        ck_assert_ptr_nonnull(s.data);
        require_adds(&s, 2 + i, 1);
        ref_seg_free(&s);
    }
    ck_assert_int_ne(access(tdir_file(&d, "1000000000.lo"), F_OK), 0);
    struct cmdlog_config cfg = {.dir = d.path, .seg_size = 15, .sync = CMDLOG_SYNC_OS};
    l = cmdlog_open(&cfg);
    ck_assert_ptr_nonnull(l);
    struct core *core = core_new((uint64_t)NOW);
    ck_assert_int_eq(cmdlog_replay(l, &core_replay_ops, core, (uint64_t)NOW), 0);
    ck_assert_uint_eq(core_job_count(core), 4);
    struct cmdlog_stats st;
    cmdlog_get_stats(l, &st);
    ck_assert_uint_eq(st.replay_records, 4);
    ck_assert_uint_eq(st.segment, 1000000002u);
    core_free(core);
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

/* The last number there is (2^64 - 1) is never followed by a wrap to 0,
 * a name replay would pass over: that segment goes on growing past the
 * size limit. */
START_TEST(test_last_segment_number)
{
    struct tdir d;
    tdir_make(&d);
    put_segment_add(&d, "18446744073709551615.log", 1);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_OS, 15);
    for (uint64_t n = 2; n <= 4; n++)
        append_add(l, n);
    ck_assert_int_eq(cmdlog_write(l), 0);
    cmdlog_close(l);
    struct ref_seg s = seg_named(&d, "18446744073709551615.log");
    require_adds(&s, 1, 4);
    ref_seg_free(&s);
    DIR *dir = opendir(d.path);
    REQUIRE(dir != NULL);
    size_t files = 0;
    for (struct dirent *de; (de = readdir(dir)) != NULL;)
        files += de->d_name[0] != '.';
    closedir(dir);
    ck_assert_uint_eq(files, 1);
    tdir_remove(&d);
}
END_TEST

/* Under always the write is not enough: replies wait for the sync thread,
 * which syncs what was written and says so through the event fd. */
START_TEST(test_always_waits_for_sync)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_ALWAYS, 100);
    for (uint64_t n = 1; n <= 4; n++)
        append_add(l, n);
    ck_assert_int_eq(cmdlog_write(l), 0);
    while (cmdlog_released(l) < 4) {
        ck_assert(cmdlog_holds_replies(l, 0));
        await_news(l);
    }
    ck_assert_uint_eq(cmdlog_released(l), 4);
    ck_assert(!cmdlog_holds_replies(l, 0));
    ck_assert(!cmdlog_readonly(l));
    append_add(l, 5);
    ck_assert(cmdlog_holds_replies(l, 5));
    ck_assert_int_eq(cmdlog_write(l), 0);
    await_released(l, 5);
    cmdlog_close(l);
    size_t total = 0;
    for (uint32_t i = 1; i <= 5; i++) {
        struct ref_seg s = seg(&d, i);
        ck_assert_int_eq(s.status, REF_OK);
        total += s.nrecs;
        ref_seg_free(&s);
    }
    ck_assert_uint_eq(total, 5);
    tdir_remove(&d);
}
END_TEST

/* Under always the loop polls rather than sleeps while it holds replies
 * for a sync, once a sync has covered many records (12) in less than 1 ms,
 * and only until it has made no progress for a while; never after a small
 * sync, nor under the other policies. */
START_TEST(test_always_polls)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_ALWAYS, 64u << 20);
    append_add(l, 1);
    ck_assert_int_eq(cmdlog_write(l), 0);
    ck_assert(!cmdlog_poll(l)); /* no sync seen yet */
    await_released(l, 1);
    append_add(l, 2);
    ck_assert_int_eq(cmdlog_write(l), 0);
    ck_assert(!cmdlog_poll(l)); /* the last sync covered 1 record */
    await_released(l, 2);
    /* A sync of 20 records; tried again if it took 1 ms or more (a slow
     * disk), after which the loop does not poll either. */
    uint64_t n = 2;
    bool polled = false;
    for (int tries = 0; tries < 10 && !polled; tries++) {
        for (int i = 0; i < 20; i++)
            append_add(l, ++n);
        ck_assert_int_eq(cmdlog_write(l), 0);
        await_released(l, n);
        ck_assert(!cmdlog_poll(l)); /* nothing held */
        append_add(l, ++n);
        ck_assert_int_eq(cmdlog_write(l), 0);
        polled = cmdlog_poll(l);
        if (polled) {
            usleep(20000); /* no progress seen meanwhile: the news is not taken */
            ck_assert(!cmdlog_poll(l));
        }
        await_released(l, n);
    }
    ck_assert(polled);
    cmdlog_close(l);
    tdir_remove(&d);

    tdir_make(&d);
    l = open_log(&d, CMDLOG_SYNC_INTERVAL, 64u << 20);
    for (uint64_t k = 1; k <= 20; k++)
        append_add(l, k);
    ck_assert(!cmdlog_poll(l));
    ck_assert_int_eq(cmdlog_write(l), 0);
    ck_assert(!cmdlog_poll(l));
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

/* Under always, a large segment's blocks are allocated ahead of its
 * records (zeros after them, so that a sync changes no size); a closed
 * segment, and the last one after a clean stop, hold exactly their
 * records. */
START_TEST(test_always_preallocates)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_ALWAYS, 2u << 20);
    append_add(l, 1);
    ck_assert_int_eq(cmdlog_write(l), 0);
    struct ref_seg s = seg(&d, 1);
    size_t used = s.bad_off;
    ck_assert_uint_ge(s.len, 2u << 20);
    ck_assert_uint_eq(s.nrecs, 1);
    for (size_t i = used; i < s.len; i++)
        REQUIRE(s.data[i] == 0);
    ref_seg_free(&s);
    /* fill segment 1 past its size with 40 KiB records: it is closed */
    static char big[40000];
    memset(big, 'b', sizeof big);
    for (uint64_t n = 2; n <= 60; n++) {
        struct cmdlog_rec r = {.code = CMDLOG_COMPLETE, .at_ms = NOW, .result = {big, sizeof big}};
        ref_id(r.id, n);
        cmdlog_append(l, &r);
    }
    ck_assert_int_eq(cmdlog_write(l), 0);
    s = seg(&d, 1);
    ck_assert_int_eq(s.status, REF_OK); /* trimmed */
    size_t in_first = s.nrecs;
    ref_seg_free(&s);
    s = seg(&d, 2);
    ck_assert_uint_gt(s.len, s.bad_off); /* the open one is padded */
    ref_seg_free(&s);
    cmdlog_close(l);
    s = seg(&d, 2);
    ck_assert_int_eq(s.status, REF_OK);
    ck_assert_uint_eq(in_first + s.nrecs, 60);
    ref_seg_free(&s);
    tdir_remove(&d);
}
END_TEST

/* Does the extent map of fd show unwritten (allocated, never written)
 * blocks in [from, to)?  -1 if the file system cannot tell. */
static int
unwritten_in(int fd, uint64_t from, uint64_t to)
{
    enum { N = 64 };
    struct {
        struct fiemap m;
        struct fiemap_extent e[N];
    } fm;
    memset(&fm, 0, sizeof fm);
    fm.m.fm_start = from;
    fm.m.fm_length = to - from;
    fm.m.fm_flags = FIEMAP_FLAG_SYNC;
    fm.m.fm_extent_count = N;
    if (ioctl(fd, FS_IOC_FIEMAP, &fm.m) != 0)
        return -1;
    for (uint32_t i = 0; i < fm.m.fm_mapped_extents; i++)
        if (fm.e[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN)
            return 1;
    return 0;
}

/* Under always the blocks just ahead of the records are written (zeros),
 * not merely allocated: a sync over them then writes data only.  The
 * blocks allocated further on stay unwritten, which shows that the file
 * system reports the difference (else the check is skipped). */
START_TEST(test_always_zeroes_ahead)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_ALWAYS, 64u << 20);
    append_add(l, 1);
    ck_assert_int_eq(cmdlog_write(l), 0);
    char name[14];
    ref_seg_name(1, name);
    int fd = open(tdir_file(&d, name), O_RDONLY);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    ck_assert_int_ge(st.st_size, 4 << 20);
    if (unwritten_in(fd, 2u << 20, (uint64_t)st.st_size) == 1)
        ck_assert_int_eq(unwritten_in(fd, 0, 1u << 20), 0);
    else
        fprintf(stderr, "check_cmdlog: no unwritten extents shown here; zeros not checked\n");
    close(fd);
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

/* A write that fails (here: the file-size limit) leaves whole records
 * only, keeps the batch and its replies held, and makes the log read-only;
 * while read-only a reply that appended nothing goes out.  The next try
 * comes only CMDLOG_RETRY_MS later, and then writes every record once. */
START_TEST(test_failed_write_is_retried)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_INTERVAL, CMDLOG_DEFAULT_SEG_SIZE);
    append_add(l, 1);
    ck_assert_int_eq(cmdlog_write(l), 0);
    struct ref_seg s = seg(&d, 1);
    size_t size = s.len, one = s.len - REF_HEADER_LEN;
    ref_seg_free(&s);

    /* room for one and a half more records; no check until the limit is
     * lifted: check itself writes a file at every assertion */
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)(size + one + one / 2);
    signal(SIGXFSZ, SIG_IGN);
    int set = setrlimit(RLIMIT_FSIZE, &lim);
    for (uint64_t n = 2; n <= 4; n++)
        append_add(l, n);
    int wrote = cmdlog_write(l);
    bool readonly = cmdlog_readonly(l);
    uint64_t released = cmdlog_released(l);
    bool holds3 = cmdlog_holds_replies(l, 3), holds4 = cmdlog_holds_replies(l, 4);
    int reset = setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_eq(set, 0);
    ck_assert_int_eq(reset, 0);
    ck_assert_int_eq(wrote, -1);
    ck_assert(readonly);
    ck_assert_uint_eq(released, 1);
    ck_assert(holds3);  /* it appended record 4 */
    ck_assert(!holds4); /* a read or a refusal */
    s = seg(&d, 1);
    require_adds(&s, 1, 1); /* the part that fitted was cut */
    ck_assert_uint_eq(s.len, size);
    ref_seg_free(&s);

    append_add(l, 5);
    ck_assert_int_eq(cmdlog_write(l), -1); /* too soon to try again */
    ck_assert(cmdlog_readonly(l));
    struct timespec wait = {0, (CMDLOG_RETRY_MS + 20) * 1000000L};
    nanosleep(&wait, NULL);
    ck_assert_int_eq(cmdlog_write(l), 0);
    ck_assert(!cmdlog_readonly(l));
    ck_assert_uint_eq(cmdlog_released(l), 5);
    s = seg(&d, 1);
    require_adds(&s, 1, 5);
    ref_seg_free(&s);
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

/* A new segment's file must not exist: a stray file of that name is never
 * written into (a header there would sit mid-file), the log turns
 * read-only instead and stays whole. */
START_TEST(test_stray_segment_refused)
{
    struct tdir d;
    tdir_make(&d);
    struct cmdlog *l = open_log(&d, CMDLOG_SYNC_OS, 15);
    append_add(l, 1);
    ck_assert_int_eq(cmdlog_write(l), 0);
    FILE *fp = fopen(tdir_file(&d, "000000002.log"), "w");
    ck_assert_ptr_nonnull(fp);
    fputs("stray", fp);
    fclose(fp);
    append_add(l, 2);
    ck_assert_int_eq(cmdlog_write(l), -1);
    ck_assert(cmdlog_readonly(l));
    struct ref_seg s = seg(&d, 2);
    ck_assert_uint_eq(s.len, 5);
    ref_seg_free(&s);
    cmdlog_close(l); /* its last try fails too, and says so */
    tdir_remove(&d);
}
END_TEST

/* The temporary files of a cleaning pass that was killed are removed at
 * open; the segments and anything else stay. */
START_TEST(test_open_removes_cleaning_leftovers)
{
    struct tdir d;
    tdir_make(&d);
    REQUIRE(mkdir(tdir_file(&d, "log"), 0755) == 0);
    static const char *const names[] = {"log/000000001.log.tmp", "log/000000001.log",
                                        "log/notes.tmp", "log/1.log.tmp"};
    for (size_t i = 0; i < 4; i++) {
        FILE *fp = fopen(tdir_file(&d, names[i]), "w");
        ck_assert_ptr_nonnull(fp);
        fwrite(ref_header, 1, REF_HEADER_LEN, fp);
        fclose(fp);
    }
    struct cmdlog_config cfg = {.dir = tdir_file(&d, "log"), .seg_size = 100};
    struct cmdlog *l = cmdlog_open(&cfg);
    ck_assert_ptr_nonnull(l);
    ck_assert_int_ne(access(tdir_file(&d, names[0]), F_OK), 0);
    for (size_t i = 1; i < 4; i++)
        ck_assert_int_eq(access(tdir_file(&d, names[i]), F_OK), 0);
    cmdlog_close(l);
    tdir_remove(&d);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"write_at_end_of_pass", test_write_at_end_of_pass},
        {"rotation", test_rotation},
        {"rotation_past_9_digits", test_rotation_past_9_digits},
        {"last_segment_number", test_last_segment_number},
        {"always_waits_for_sync", test_always_waits_for_sync},
        {"always_polls", test_always_polls},
        {"always_preallocates", test_always_preallocates},
        {"always_zeroes_ahead", test_always_zeroes_ahead},
        {"failed_write_is_retried", test_failed_write_is_retried},
        {"stray_segment_refused", test_stray_segment_refused},
        {"open_removes_cleaning_leftovers", test_open_removes_cleaning_leftovers},
    };
    return unit_run(unit_suite("cmdlog", cases, sizeof cases / sizeof cases[0]), NULL);
}
