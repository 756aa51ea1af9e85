/* check_cmdlog_files.c - unit tests for the command log's files
 * (src/store/cmdlog_files.c, cmdlog_files_replay.c, cmdlog_reader.c,
 * cmdlog_clean.c): replay into a core, torn tails, padding, damage, the
 * streaming reader and cleaning, whole and in chunks.
 *
 * Replay tests write their segment files with the reference writer of
 * tests/common/cmdlog_ref.c (built from doc/protocol-reference.md section 6, sharing no
 * code with src) into a fresh temporary directory, so src's writer is not
 * trusted to produce what src's reader expects.  The last test replays
 * tests/fixtures/workq-go (see its README.md), a data directory in the
 * format of the original Go server. */
#include "lib/wq.h"
#include "store/cmdlog_files.h"
#include "store/cmdlog_clean.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/cmdlog_codec.h"
#include "cmdlog_ref.h"
#include "engine/core.h"
#include "engine/job.h"
#include "lib/jobid.h"
#include "lib/log.h"
#include "engine/queue.h"
#include "cmdlog_check.h"
#include "store/cmdlog_reader.h"
#include "rng.h"
#include "unit.h"

/* ---- helpers ---- */

static struct job *
find(const struct core *c, uint64_t n)
{
    uint8_t id[JOBID_LEN];
    id_of(n, id);
    return core_find(c, id);
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
    uint64_t last;
    uint64_t last_size;
    uint64_t records;
};

static void
replay(const struct tdir *d, uint64_t now, bool truncate, struct replay *r)
{
    r->core = core_new(now);
    r->rc = cmdlog_files_replay(d->fd, d->path, &core_replay_ops, r->core, now, truncate, &r->last,
                                &r->last_size, &r->records);
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
    ck_assert_uint_eq(core_ids(c)->stats.ready, ready);
    ck_assert_uint_eq(core_ids(c)->stats.scheduled, scheduled);
    ck_assert_uint_eq(core_ids(c)->stats.leased, leased);
    ck_assert_uint_eq(core_ids(c)->stats.completed, completed);
    ck_assert_uint_eq(core_ids(c)->stats.failed, failed);
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
    tdir_open(&d, "cmdlog");
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

    /* Every job's state, place, counts and result. */
    static const struct {
        uint64_t n;
        bool gone;
        int state, place; /* place -1: not in a queue's list, not checked */
        unsigned attempts, fails;
        const char *result; /* NULL: none to check */
    } want[] = {
        {1, false, JOB_NEW, JOB_IN_READY, 0, 0, NULL},
        {2, false, JOB_NEW, JOB_IN_SCHEDULED, 0, 0, NULL},
        {3, false, JOB_NEW, JOB_IN_READY, 0, 0, NULL},
        {4, false, JOB_LEASED, -1, 1, 0, NULL},
        {5, false, JOB_PENDING, JOB_IN_READY, 1, 0, NULL},
        {6, false, JOB_FAILED, -1, 1, 0, ""},
        {7, false, JOB_COMPLETED, -1, 1, 0, "done"},
        {8, false, JOB_FAILED, -1, 0, 1, "bad"},
        {9, false, JOB_FAILED, -1, 2, 2, "again"},
        {10, false, JOB_PENDING, JOB_IN_READY, 1, 1, ""},
        {11, true, 0, 0, 0, 0, NULL},
        {12, true, 0, 0, 0, 0, NULL},
        {13, true, 0, 0, 0, 0, NULL},
        {14, false, JOB_LEASED, -1, 2, 0, NULL},
        {99, true, 0, 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(want); i++) {
        struct job *j = find(c, want[i].n);
        ck_assert_msg((j == NULL) == want[i].gone, "job %llu: found %d",
                      (unsigned long long)want[i].n, j != NULL);
        if (j == NULL)
            continue;
        ck_assert_msg(j->state == want[i].state && j->attempts == want[i].attempts &&
                          j->fails == want[i].fails,
                      "job %llu: state %d attempts %u fails %u", (unsigned long long)want[i].n,
                      (int)j->state, (unsigned)j->attempts, (unsigned)j->fails);
        if (want[i].place >= 0)
            ck_assert_int_eq(j->place, want[i].place);
        if (want[i].result != NULL)
            require_result(c, j, want[i].result);
    }

    /* Every field of job 1 comes back. */
    struct job *j = find(c, 1);
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
    REQUIRE(!(j->flags & JOB_F_TIMED));

    /* Job 2 keeps its time to the nanosecond; 3 and 4 their expiry and TTR. */
    j = find(c, 2);
    REQUIRE(j->flags & JOB_F_TIMED);
    ck_assert_int_eq(j->base_ms, NOW + HOUR);
    ck_assert_uint_eq(time_ns(c, j), 123456);
    ck_assert_int_eq(core_job_created(c, j), t0);
    ck_assert_uint_eq(core_job_expiry(j), (uint64_t)(NOW + 2 * HOUR)); /* time + ttl */
    ck_assert_int_eq(j->priority, 7);
    ck_assert_uint_eq(core_job_expiry(find(c, 3)), (uint64_t)(t0 + 1 + 2 * HOUR));
    /* a fresh TTR from now */
    ck_assert_uint_eq(core_job_deadline(c, find(c, 4)), (uint64_t)NOW + 60000);

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
    tdir_open(&d, "cmdlog");
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
        ck_assert_int_eq(core_lease(r.core, &name, 1, 0, NOW, NULL, NULL, NULL, &j, &w), CORE_OK);
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
    tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
        tdir_open(&d, "cmdlog");
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
        tdir_open(&d, "cmdlog");
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
        tdir_open(&d, "cmdlog");
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
        tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
static void
check_clean_padded_segment(size_t budget)
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
    tdir_open(&d, "cmdlog");
    REQUIRE(ref_seg_write(d.path, 1, s1.data, s1.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);
    ck_assert_int_eq(cmdlog_clean(d.fd, 3, budget), 0);
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

START_TEST(test_clean_padded_segment)
{
    check_clean_padded_segment(SIZE_MAX);
}
END_TEST

START_TEST(test_clean_padded_segment_chunked)
{
    check_clean_padded_segment(1);
}
END_TEST

/* A Hero record into b, encoded by src (the reference knows no Hero
 * codes). */
static void
hero_rec(struct ref_buf *b, struct cmdlog_rec r)
{
    uint8_t out[512];
    r.at_ms = NOW;
    REQUIRE(cmdlog_rec_size(&r) <= sizeof out);
    cmdlog_rec_encode(&r, out);
    ref_buf_put(b, out, cmdlog_rec_size(&r));
}

/* Segment n's records as "code:key[:field or element]", read by src. */
static void
hero_summary(const struct tdir *d, uint64_t n, char *out, size_t size)
{
    struct cmdlog_reader rd;
    ck_assert_int_eq(cmdlog_reader_open(&rd, d->fd, n), 0);
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len;
    uint64_t at;
    out[0] = '\0';
    while (cmdlog_reader_next(&rd, &r, &bytes, &len, &at) == CMDLOG_READ_REC) {
        char one[64];
        int k = snprintf(one, sizeof one, "%s%d:%.*s", out[0] ? " " : "", r.code, (int)r.jid.n,
                         r.jid.p);
        if (r.code == CMDLOG_H_HSET || r.code == CMDLOG_H_HDEL)
            snprintf(one + k, sizeof one - (size_t)k, ":%.*s", (int)r.name.n, r.name.p);
        else if (r.code == CMDLOG_H_PUSH || r.code == CMDLOG_H_POP)
            snprintf(one + k, sizeof one - (size_t)k, ":%llu", (unsigned long long)r.seq);
        strncat(out, one, size - strlen(out) - 1);
    }
    cmdlog_reader_close(&rd);
}

/* Hero's records: a field set again keeps only its last set, a field
 * removed and an element popped go with their records, an expiry given
 * again keeps its last, and one ended goes; a key's bytes and a field's
 * bytes never run together (key "hero:ab" field "c" is not key "hero:a"
 * field "bc"). */
static void
check_clean_hero(size_t budget)
{
    struct ref_buf s1 = {0}, s2 = {0}, s3 = {0};
#define HK(k) .jid = {k, sizeof k - 1}
#define HF(f) .name = {f, sizeof f - 1}
#define HV(v) .payload = {v, sizeof v - 1}
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:a"), HF("f"), HV("1")});
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:a"), HF("g"), HV("1")});
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:ab"), HF("c"), HV("1")});
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:a"), HF("bc"), HV("1")});
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_PUSH, HK("hero:l"), .seq = 1, HV("x")});
    hero_rec(&s1, (struct cmdlog_rec){.code = CMDLOG_H_PUSH, HK("hero:l"), .seq = 2, HV("y")});
    hero_rec(&s1, (struct cmdlog_rec){
                      .code = CMDLOG_H_EXPIRE, HK("hero:l"), .timed = true, .time_ms = NOW + HOUR});
    hero_rec(&s1, (struct cmdlog_rec){
                      .code = CMDLOG_H_TAKE, HK("j1"), HF("hero:work_queue:w"), .seq = 1});
    hero_rec(&s2, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:a"), HF("f"), HV("2")});
    hero_rec(&s2, (struct cmdlog_rec){.code = CMDLOG_H_HDEL, HK("hero:a"), HF("g")});
    hero_rec(&s2, (struct cmdlog_rec){.code = CMDLOG_H_HDEL, HK("hero:ab"), HF("c")});
    hero_rec(&s2, (struct cmdlog_rec){.code = CMDLOG_H_POP, HK("hero:l"), .seq = 1});
    hero_rec(&s2,
             (struct cmdlog_rec){
                 .code = CMDLOG_H_EXPIRE, HK("hero:l"), .timed = true, .time_ms = NOW + 2 * HOUR});
    hero_rec(&s2, (struct cmdlog_rec){.code = CMDLOG_H_END, HK("j1")});
    hero_rec(&s3, (struct cmdlog_rec){.code = CMDLOG_H_HSET, HK("hero:a"), HF("f"), HV("3")});
#undef HK
#undef HF
#undef HV
    struct tdir d;
    tdir_open(&d, "cmdlog");
    REQUIRE(ref_seg_write(d.path, 1, s1.data, s1.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);
    ck_assert_int_eq(cmdlog_clean(d.fd, 3, budget), 0); /* segment 3 is the open one */
    char sum[512];
    hero_summary(&d, 1, sum, sizeof sum);
    ck_assert_str_eq(sum, "48:hero:a:bc 50:hero:l:2");
    hero_summary(&d, 2, sum, sizeof sum);
    ck_assert_str_eq(sum, "48:hero:a:f 52:hero:l");
    hero_summary(&d, 3, sum, sizeof sum);
    ck_assert_str_eq(sum, "48:hero:a:f");
    tdir_close(&d);
    ref_buf_free(&s1);
    ref_buf_free(&s2);
    ref_buf_free(&s3);
}

START_TEST(test_clean_hero)
{
    check_clean_hero(SIZE_MAX);
}
END_TEST

START_TEST(test_clean_hero_chunked)
{
    check_clean_hero(1);
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
    tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
    tdir_open(&d, "cmdlog");
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
    ck_assert_mem_eq(&core_ids(a)->stats, &core_ids(b)->stats, sizeof core_ids(a)->stats);
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

static void
check_clean(size_t budget)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
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

    ck_assert_int_eq(cmdlog_clean(d.fd, 3, budget), 0);
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
    ck_assert_int_eq(cmdlog_clean(d.fd, 3, budget), 0);
    seg_summary(&d, 1, sum, sizeof sum);
    ck_assert_str_eq(sum, "1:2 7:2 1:5");
    seg_summary(&d, 2, sum, sizeof sum);
    ck_assert_str_eq(sum, "3:2 1:1");

    /* with segment 3 closed too: E and G go, and so does everything of
     * segment 3 but A's lease */
    ck_assert_int_eq(cmdlog_clean(d.fd, 4, budget), 0);
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

START_TEST(test_clean)
{
    check_clean(SIZE_MAX);
}
END_TEST

/* One noted end a chunk: the same result. */
START_TEST(test_clean_chunked)
{
    check_clean(1);
}
END_TEST

static void
check_clean_removes_empty_segments(size_t budget)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
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
    ck_assert_int_eq(cmdlog_clean(d.fd, 5, budget), 0);
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

START_TEST(test_clean_removes_empty_segments)
{
    check_clean_removes_empty_segments(SIZE_MAX);
}
END_TEST

START_TEST(test_clean_removes_empty_segments_chunked)
{
    check_clean_removes_empty_segments(1);
}
END_TEST

/* A segment that does not read cleanly to its end is left alone. */
START_TEST(test_clean_skips_damaged)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_DELETE, 1);
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    b.data[b.len - 2] ^= 0xff;
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, NULL, 0) == 0);
    ck_assert_int_eq(cmdlog_clean(d.fd, 2, SIZE_MAX), 0);
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

/* A damaged segment ends what cleaning reads: an end after it must not
 * drop a record before it (replay stops at the damage, and cutting the log
 * there would lose the job). */
START_TEST(test_clean_stops_at_damage)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
    struct ref_buf s1 = {0}, s2 = {0}, s3 = {0};
    add_rec(&s1, 1, "q", NOW - 1000, HOUR);
    add_rec(&s1, 3, "q", NOW - 1000, HOUR);
    id_rec(&s1, REF_DELETE, 3); /* an end before the damage still counts */
    add_rec(&s2, 2, "q", NOW - 1000, HOUR);
    s2.data[s2.len - 2] ^= 0xff;
    add_rec(&s2, 4, "q", NOW - 1000, HOUR);
    id_rec(&s3, REF_DELETE, 1);
    REQUIRE(ref_seg_write(d.path, 1, s1.data, s1.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, s2.data, s2.len) == 0);
    REQUIRE(ref_seg_write(d.path, 3, s3.data, s3.len) == 0);
    REQUIRE(ref_seg_write(d.path, 4, NULL, 0) == 0);
    ck_assert_int_eq(cmdlog_clean(d.fd, 4, SIZE_MAX), 0);
    char sum[64];
    seg_summary(&d, 1, sum, sizeof sum); /* job 1's add stays: its delete is past the damage */
    ck_assert_str_eq(sum, "1:1");
    struct ref_seg s;
    seg_read(&d, 2, &s); /* damaged: as it was */
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + s2.len);
    ck_assert_mem_eq(s.data + CMDLOG_HEADER_LEN, s2.data, s2.len);
    ref_seg_free(&s);
    seg_read(&d, 3, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + s3.len);
    ref_seg_free(&s);
    ref_buf_free(&s1);
    ref_buf_free(&s2);
    ref_buf_free(&s3);
    tdir_close(&d);
}
END_TEST

/* A garbled length past the end of the file is damage at once: the reader
 * does not grow its buffer to read the file to its end. */
START_TEST(test_reader_garbled_length)
{
    static const uint8_t zeros[3u << 20]; /* past the reader's first 1 MiB */
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    size_t first = b.len;
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    b.data[first + REF_TIME_LEN] = 0xff; /* a varint length of about 2 GB */
    b.data[first + REF_TIME_LEN + 1] = 0xff;
    b.data[first + REF_TIME_LEN + 2] = 0xff;
    b.data[first + REF_TIME_LEN + 3] = 0x07;
    ref_buf_put(&b, zeros, sizeof zeros);
    b.data[b.len - 1] = 1;
    struct tdir d;
    tdir_open(&d, "cmdlog");
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    expect_record_then_damage(d.fd, 1, CMDLOG_HEADER_LEN + first);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* A random log of nsegs segments over job numbers 1..RAND_JOBS, each job
 * added, leased, completed, deleted or expired in order and its number
 * used again after its end; some segments padded.  Written to every dir. */
#define RAND_JOBS 60
static void
write_random_log(struct tdir *dirs, size_t ndirs, uint32_t nsegs)
{
    enum { ABSENT, READY, LEASED, DONE } state[RAND_JOBS + 1] = {ABSENT};
    static const uint8_t zeros[100];
    for (uint32_t seg = 1; seg <= nsegs; seg++) {
        struct ref_buf b = {0};
        for (uint64_t k = rng_below(30); k > 0; k--) {
            uint64_t n = 1 + rng_below(RAND_JOBS);
            switch (state[n]) {
            case ABSENT:
                add_rec(&b, n, rng_below(2) ? "a" : "b", NOW - 1000, HOUR);
                state[n] = READY;
                break;
            case READY:
            case LEASED:
            case DONE:
                if (rng_below(3) == 0) {
                    id_rec(&b, rng_below(2) ? REF_DELETE : REF_EXPIRE, n);
                    state[n] = ABSENT;
                } else if (state[n] == READY) {
                    id_rec(&b, REF_START_ATTEMPT, n);
                    state[n] = LEASED;
                } else if (state[n] == LEASED) {
                    result_rec(&b, REF_COMPLETE, n, "done");
                    state[n] = DONE;
                }
                break;
            }
        }
        if (rng_below(4) == 0)
            ref_buf_put(&b, zeros, sizeof zeros);
        for (size_t i = 0; i < ndirs; i++)
            REQUIRE(ref_seg_write(dirs[i].path, seg, b.data, b.len) == 0);
        ref_buf_free(&b);
    }
}

/* Are the segment files of a and b (1..nsegs) the same, present or not? */
static void
require_same_segments(const struct tdir *a, const struct tdir *b, uint32_t nsegs)
{
    char la[4096], lb[4096];
    tdir_list(a, la, sizeof la);
    tdir_list(b, lb, sizeof lb);
    ck_assert_str_eq(la, lb);
    for (uint32_t n = 1; n <= nsegs; n++) {
        if (!seg_exists(a, n))
            continue;
        struct ref_seg x, y;
        seg_read(a, n, &x);
        seg_read(b, n, &y);
        ck_assert_uint_eq(x.len, y.len);
        ck_assert_mem_eq(x.data, y.data, x.len);
        ref_seg_free(&x);
        ref_seg_free(&y);
    }
}

/* Cleaning in chunks of any size gives the same files as in one, and the
 * same jobs on replay as before cleaning. */
START_TEST(test_clean_random_chunks)
{
    static const size_t budgets[] = {1, 300, 3000};
    enum { NSEGS = 12, ROUNDS = 20 };
    for (uint64_t round = 1; round <= ROUNDS; round++) {
        rng_seed(round);
        struct tdir dirs[5]; /* 0: cleaned whole, 1-3: in chunks, 4: not */
        for (size_t i = 0; i < 5; i++)
            tdir_open(&dirs[i], "cmdlog");
        write_random_log(dirs, 5, NSEGS);
        uint32_t below = 1 + (uint32_t)rng_below(NSEGS + 1);
        ck_assert_int_eq(cmdlog_clean(dirs[0].fd, below, SIZE_MAX), 0);
        for (size_t i = 1; i < 4; i++) {
            ck_assert_int_eq(cmdlog_clean(dirs[i].fd, below, budgets[i - 1]), 0);
            require_same_segments(&dirs[0], &dirs[i], NSEGS);
        }
        /* a second pass finds nothing more to drop */
        ck_assert_int_eq(cmdlog_clean(dirs[1].fd, below, 1), 0);
        require_same_segments(&dirs[0], &dirs[1], NSEGS);
        struct replay before, after;
        replay(&dirs[4], NOW, false, &before);
        ck_assert_int_eq(before.rc, 0);
        replay(&dirs[0], NOW, false, &after);
        ck_assert_int_eq(after.rc, 0);
        require_same_core(before.core, after.core, RAND_JOBS);
        replay_free(&after);
        replay_free(&before);
        for (size_t i = 0; i < 5; i++)
            tdir_close(&dirs[i]);
    }
}
END_TEST

/* A record larger than the reader's first buffer (1 MiB) is read whole and
 * kept whole. */
START_TEST(test_clean_big_record)
{
    size_t big = 3u << 20;
    char *payload = malloc(big);
    REQUIRE(payload != NULL);
    for (size_t i = 0; i < big; i++)
        payload[i] = (char)('a' + i % 26);
    uint8_t id[JOBID_LEN];
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    id_of(2, id);
    ref_rec_add(&b, NOW - 1000, id, "q", 60000, HOUR, 0, 0, 0, payload, big, NOW - 1000);
    id_rec(&b, REF_DELETE, 1);
    struct tdir d;
    tdir_open(&d, "cmdlog");
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    REQUIRE(ref_seg_write(d.path, 2, NULL, 0) == 0);

    struct cmdlog_reader rd;
    ck_assert_int_eq(cmdlog_reader_open(&rd, d.fd, 1), 0);
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len, lens[3] = {0};
    uint64_t at, ats[3] = {0};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &lens[i], &ats[i]), CMDLOG_READ_REC);
        ck_assert_mem_eq(bytes, b.data + ats[i] - CMDLOG_HEADER_LEN, lens[i]);
    }
    ck_assert_uint_eq(r.code, CMDLOG_DELETE);
    ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &len, &at), CMDLOG_READ_END);
    ck_assert_uint_eq(rd.off, CMDLOG_HEADER_LEN + b.len);
    cmdlog_reader_close(&rd);

    ck_assert_int_eq(cmdlog_clean(d.fd, 2, SIZE_MAX), 0);
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.nrecs, 1);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + lens[1]);
    ck_assert_mem_eq(s.data + CMDLOG_HEADER_LEN, b.data + ats[1] - CMDLOG_HEADER_LEN, lens[1]);
    ref_seg_free(&s);
    tdir_close(&d);
    ref_buf_free(&b);
    free(payload);
}
END_TEST

/* The reader tells padding from damage, and a bad header from a good one. */
START_TEST(test_reader_end_and_damage)
{
    static const uint8_t zeros[5000];
    struct ref_buf b = {0};
    add_rec(&b, 1, "q", NOW - 1000, HOUR);
    size_t first = b.len;
    ref_buf_put(&b, zeros, sizeof zeros);
    struct tdir d;
    tdir_open(&d, "cmdlog");
    REQUIRE(ref_seg_write(d.path, 1, b.data, b.len) == 0);
    b.data[first + 4000] = 1; /* not padding any more */
    REQUIRE(ref_seg_write(d.path, 2, b.data, b.len) == 0);
    REQUIRE(ref_seg_write_raw(d.path, 3, "WQLOG", 5) == 0);
    static const uint8_t header_zeros[CMDLOG_HEADER_LEN];
    REQUIRE(ref_seg_write_raw(d.path, 4, header_zeros, sizeof header_zeros) == 0);

    static const enum cmdlog_read_result want[] = {CMDLOG_READ_END, CMDLOG_READ_DAMAGED,
                                                   CMDLOG_READ_DAMAGED, CMDLOG_READ_DAMAGED};
    for (uint32_t n = 1; n <= 4; n++) {
        struct cmdlog_reader rd;
        ck_assert_int_eq(cmdlog_reader_open(&rd, d.fd, n), 0);
        struct cmdlog_rec r;
        const uint8_t *bytes;
        size_t len;
        uint64_t at;
        enum cmdlog_read_result res = cmdlog_reader_next(&rd, &r, &bytes, &len, &at);
        if (n <= 2) {
            ck_assert_int_eq(res, CMDLOG_READ_REC);
            ck_assert_uint_eq(at, CMDLOG_HEADER_LEN);
            res = cmdlog_reader_next(&rd, &r, &bytes, &len, &at);
            ck_assert_uint_eq(rd.off, CMDLOG_HEADER_LEN + first);
        }
        ck_assert_int_eq(res, want[n - 1]);
        cmdlog_reader_close(&rd);
    }
    struct cmdlog_reader rd;
    ck_assert_int_eq(cmdlog_reader_open(&rd, d.fd, 5), -1);
    ck_assert_int_eq(errno, ENOENT);
    tdir_close(&d);
    ref_buf_free(&b);
}
END_TEST

/* ---- hostile files ---- */

/* Create (or replace) the file `name` of d holding bytes. */
static void
put_file(const struct tdir *d, const char *name, const void *bytes, size_t len)
{
    int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bytes, len) == (ssize_t)len);
    close(fd);
}

/* A segment's bytes: the header, then recs. */
static void
put_segment(const struct tdir *d, const char *name, const struct ref_buf *recs)
{
    struct ref_buf b = {0};
    ref_buf_put(&b, ref_header, REF_HEADER_LEN);
    ref_buf_put(&b, recs->data, recs->len);
    put_file(d, name, b.data, b.len);
    ref_buf_free(&b);
}

/* What d holds: each name with its type, size and CRC, sorted. */
static void
tdir_snapshot(const struct tdir *d, char *out, size_t size)
{
    struct dirent **names;
    int n = scandir(d->path, &names, NULL, alphasort);
    REQUIRE(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        struct stat st;
        const char *name = names[i]->d_name;
        REQUIRE(fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
        uint32_t crc = 0;
        if (S_ISREG(st.st_mode)) {
            struct ref_seg s;
            char path[600];
            snprintf(path, sizeof path, "%s/%s", d->path, name);
            REQUIRE(ref_seg_read(path, &s) == 0);
            crc = cmdlog_crc32c(0, s.data, s.len);
            ref_seg_free(&s);
        }
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s %o %lld %08x;", name, (unsigned)(st.st_mode & S_IFMT),
                 (long long)st.st_size, crc);
        free(names[i]);
    }
    free(names);
}

/* Segment numbers past 999,999,999 take a tenth digit (and more): the
 * writer's 1000000000.log replays after 999999999.log, in numeric order. */
START_TEST(test_replay_names_past_9_digits)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
    struct ref_buf a = {0}, b = {0}, c = {0}, e = {0};
    add_rec(&a, 1, "q", NOW - 1000, HOUR);
    id_rec(&b, REF_START_ATTEMPT, 1);
    result_rec(&c, REF_COMPLETE, 1, "done");
    add_rec(&e, 2, "q", NOW - 1000, HOUR);
    put_segment(&d, "999999998.log", &a);
    put_segment(&d, "999999999.log", &b);
    put_segment(&d, "1000000000.log", &c);
    put_segment(&d, "18446744073709551615.log", &e);
    struct replay r;
    replay(&d, NOW, false, &r);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.records, 4);
    ck_assert_uint_eq(r.last, UINT64_MAX);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + e.len);
    ck_assert_int_eq(find(r.core, 1)->state, JOB_COMPLETED);
    ck_assert_int_eq(find(r.core, 2)->state, JOB_NEW);
    replay_free(&r);
    tdir_close(&d);
    ref_buf_free(&a);
    ref_buf_free(&b);
    ref_buf_free(&c);
    ref_buf_free(&e);
}
END_TEST

/* A file named like a segment that no segment can be (a number cut short,
 * a tenth digit after a leading zero, zero, past 2^64 - 1) stops replay
 * before anything is read or cut: it cannot be passed over unnoticed. */
START_TEST(test_replay_refuses_stray_names)
{
    static const char *const stray[] = {
        "1.log",
        "00000001.log",
        "0000000001.log",
        "000000000.log",
        "18446744073709551616.log",
        "123456789012345678901.log",
    };
    static const uint8_t zeros[3000];
    struct ref_buf a = {0}, b = {0};
    add_rec(&a, 1, "q", NOW - 1000, HOUR);
    ref_buf_put(&a, zeros, sizeof zeros); /* padding, which a replay would cut */
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    for (size_t i = 0; i < WQ_ARRAY_LEN(stray); i++) {
        struct tdir d;
        tdir_open(&d, "cmdlog");
        put_segment(&d, "000000001.log", &a);
        put_segment(&d, stray[i], &b);
        char before[1024], after[1024];
        tdir_snapshot(&d, before, sizeof before);
        struct replay r;
        replay(&d, NOW, false, &r);
        if (r.rc != -1)
            ck_abort_msg("%s: replay did not refuse", stray[i]);
        ck_assert_uint_eq(r.records, 0);
        ck_assert_uint_eq(core_job_count(r.core), 0);
        replay_free(&r);
        replay(&d, NOW, true, &r); /* truncate is for damage, not for this */
        ck_assert_int_eq(r.rc, -1);
        replay_free(&r);
        tdir_snapshot(&d, after, sizeof after);
        ck_assert_str_eq(after, before);
        tdir_close(&d);
    }
    ref_buf_free(&a);
    ref_buf_free(&b);
}
END_TEST

/* A segment that is not a regular file stops replay before anything is
 * read: a symbolic link (to /dev/zero, which would swallow every write, or
 * to a segment elsewhere), a FIFO (which would hold the open), a directory
 * in the middle (which read as an empty segment), a socket.  Opening one
 * fails without following or waiting. */
START_TEST(test_replay_refuses_non_regular)
{
    static const uint8_t zeros[3000];
    struct ref_buf a = {0}, b = {0};
    add_rec(&a, 1, "q", NOW - 1000, HOUR);
    ref_buf_put(&a, zeros, sizeof zeros);
    add_rec(&b, 2, "q", NOW - 1000, HOUR);
    enum { SYMLINK_ZERO, SYMLINK_SEG, FIFO, DIRECTORY, SOCKET, KINDS };
    static const int open_errno[KINDS] = {ELOOP, ELOOP, EINVAL, EISDIR, ENXIO};
    for (int kind = 0; kind < KINDS; kind++) {
        struct tdir d;
        tdir_open(&d, "cmdlog");
        put_segment(&d, "000000001.log", &a);
        put_segment(&d, "000000003.log", &b);
        put_segment(&d, "elsewhere", &b);
        switch (kind) {
        case SYMLINK_ZERO:
            REQUIRE(symlinkat("/dev/zero", d.fd, "000000002.log") == 0);
            break;
        case SYMLINK_SEG:
            REQUIRE(symlinkat("elsewhere", d.fd, "000000002.log") == 0);
            break;
        case FIFO:
            REQUIRE(mkfifoat(d.fd, "000000002.log", 0644) == 0);
            break;
        case DIRECTORY:
            REQUIRE(mkdirat(d.fd, "000000002.log", 0755) == 0);
            break;
        default:
            REQUIRE(mknodat(d.fd, "000000002.log", S_IFSOCK | 0644, 0) == 0);
            break;
        }
        char before[1024], after[1024];
        tdir_snapshot(&d, before, sizeof before);
        for (int truncate = 0; truncate < 2; truncate++) {
            struct replay r;
            replay(&d, NOW, truncate, &r);
            ck_assert_int_eq(r.rc, -1);
            ck_assert_uint_eq(r.records, 0);
            replay_free(&r);
        }
        tdir_snapshot(&d, after, sizeof after);
        ck_assert_str_eq(after, before);
        uint64_t size;
        for (int wr = 0; wr < 2; wr++) {
            errno = 0;
            ck_assert_int_eq(cmdlog_files_open(d.fd, 2, wr ? O_WRONLY : O_RDONLY, &size), -1);
            int want = open_errno[kind];
            if (kind == FIFO && wr)
                want = ENXIO; /* no reader: refused by open itself */
            if (kind == SOCKET && !wr)
                want = ENXIO;
            ck_assert_int_eq(errno, want);
        }
        REQUIRE(unlinkat(d.fd, "000000002.log", kind == DIRECTORY ? AT_REMOVEDIR : 0) == 0);
        tdir_close(&d);
    }
    ref_buf_free(&a);
    ref_buf_free(&b);
}
END_TEST

/* A sparse segment of 4 GiB (its records, then a hole) replays through the
 * reader's bounded buffer: the hole is padding, cut off, and the process
 * grows by a few MiB, not by the file's size. */
START_TEST(test_replay_sparse_segment)
{
    struct tdir d;
    tdir_open(&d, "cmdlog");
    struct ref_buf a = {0};
    add_rec(&a, 1, "q", NOW - 1000, HOUR);
    id_rec(&a, REF_START_ATTEMPT, 1);
    put_segment(&d, "000000001.log", &a);
    int fd = openat(d.fd, "000000001.log", O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, (off_t)(4ull << 30)) == 0);
    close(fd);
    struct rusage ru0, ru1;
    REQUIRE(getrusage(RUSAGE_SELF, &ru0) == 0);
    struct replay r;
    replay(&d, NOW, false, &r);
    REQUIRE(getrusage(RUSAGE_SELF, &ru1) == 0);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_uint_eq(r.records, 2);
    ck_assert_uint_eq(r.last_size, CMDLOG_HEADER_LEN + a.len);
    ck_assert_int_eq(find(r.core, 1)->state, JOB_LEASED);
    replay_free(&r);
    ck_assert_int_lt(ru1.ru_maxrss - ru0.ru_maxrss, 64 * 1024); /* KiB */
    struct ref_seg s;
    seg_read(&d, 1, &s);
    ck_assert_uint_eq(s.len, CMDLOG_HEADER_LEN + a.len);
    ref_seg_free(&s);
    tdir_close(&d);
    ref_buf_free(&a);
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
        char path[2048]; /* a fixtures_dir path, a name */
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
    tdir_open(&d, "cmdlog");
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

static Suite *
cmdlog_files_suite(void)
{
    const struct unit_case cases[] = {
        {"replay_states", test_replay_states},
        {"replay_ready_order", test_replay_ready_order},
        {"replay_expiry", test_replay_expiry},
        {"replay_readd", test_replay_readd},
        {"replay_empty", test_replay_empty},
        {"replay_torn_tail", test_replay_torn_tail},
        {"replay_garbage_tail", test_replay_garbage_tail},
        {"replay_padding", test_replay_padding},
        {"clean_padded_segment", test_clean_padded_segment},
        {"clean_padded_segment_chunked", test_clean_padded_segment_chunked},
        {"replay_damage_middle", test_replay_damage_middle},
        {"replay_damage_earlier_segment", test_replay_damage_earlier_segment},
        {"replay_multi_segment", test_replay_multi_segment},
        {"clean", test_clean},
        {"clean_chunked", test_clean_chunked},
        {"clean_removes_empty_segments", test_clean_removes_empty_segments},
        {"clean_removes_empty_segments_chunked", test_clean_removes_empty_segments_chunked},
        {"clean_skips_damaged", test_clean_skips_damaged},
        {"clean_random_chunks", test_clean_random_chunks},
        {"clean_big_record", test_clean_big_record},
        {"clean_hero", test_clean_hero},
        {"clean_hero_chunked", test_clean_hero_chunked},
        {"reader_end_and_damage", test_reader_end_and_damage},
        {"clean_stops_at_damage", test_clean_stops_at_damage},
        {"reader_garbled_length", test_reader_garbled_length},
        {"replay_names_past_9_digits", test_replay_names_past_9_digits},
        {"replay_refuses_stray_names", test_replay_refuses_stray_names},
        {"replay_refuses_non_regular", test_replay_refuses_non_regular},
        {"replay_sparse_segment", test_replay_sparse_segment},
        {"go_fixture", test_go_fixture},
    };
    return unit_suite("cmdlog_files", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    /* damage and torn tails log by design; keep the output to errors */
    wq_log_level = LOG_LVL_ERROR;
    return unit_run(cmdlog_files_suite(), NULL);
}
