/* sys_persist.c - system tests of the command log (doc/protocol-reference.md
 * section 6): the real workq-server logging to a directory, stopped with
 * SIGTERM or killed with SIGKILL, and started again on the same directory.
 * The files it writes are read back with the reference reader of
 * cmdlog_ref.h (which shares no code with the server), and damaged or torn
 * logs are crafted with the reference writer.
 *
 * Every test makes its own directory BASE=/tmp/wq-persist-XXXXXX: the log
 * goes to BASE/log and each server's stderr to BASE/stderr.N.  A passing
 * test removes BASE; a failing one leaves it for a look (its path is in the
 * message of most checks).
 *
 * Tests check behaviour, never speed: every wait is generous and scaled by
 * WQ_TEST_SLOW.  The full-disk test lowers the file-size limit of the
 * server's pid with prlimit(2), so it skips itself when WQ_SERVER_WRAPPER is
 * set: the pid is then valgrind's, whose own writes (its error report to a
 * file) would meet the limit too.  The SIGKILL tests do run under the
 * wrapper (killing valgrind kills the server it runs), with one round. */
#include "config.h"
#include "systest.h"
#include "systest_fx.h"
#include "cmdlog_ref.h"
#include "rng.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RO "-SERVER-ERROR Read-only: command log write failed\r\n"

#define TTR              600000u   /* never runs out during a test */
#define TTL              "3600000" /* nor does this */
#define EX_CONFIG_STATUS 78

enum { GONE = -1 }; /* the state of a job inspect does not find */

/* ------------------------------------------------------------------------ */
/* Helpers: text */

/* The text form of ref_id(n), so that records and commands name the same
 * job. */
static const char *
idt(uint64_t n)
{
    return f("00000000-0000-4000-8000-%012" PRIx64, n);
}

static bool
same_id(const uint8_t id[REF_ID_LEN], uint64_t n)
{
    uint8_t want[REF_ID_LEN];
    ref_id(want, n);
    return memcmp(id, want, REF_ID_LEN) == 0;
}

/* YYYY-MM-DDTHH:MM:SS[.mmm]Z of Unix ms. */
static const char *
iso_time(int64_t ms, bool frac)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    return frac ? f("%s.%03dZ", b, (int)(ms % 1000)) : f("%sZ", b);
}

/* ------------------------------------------------------------------------ */
/* Helpers: the test directory and the server process */

static long long
file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ------------------------------------------------------------------------ */
/* Helpers: talking to the server */

/* Send a command line followed by a data block. */
static void
send_block(int fd, const char *line, const void *data, size_t len)
{
    struct sb b = {0};
    sb_add(&b, line);
    sb_addn(&b, data, len);
    sb_add(&b, "\r\n");
    systest_send(fd, b.p, b.n);
    free(b.p);
}

static void
send_add(int fd, uint64_t n, const char *name, unsigned ttr, const char *ttl, const void *payload,
         size_t len, const char *flags)
{
    send_block(fd,
               f("add %s %s %u %s %zu%s%s\r\n", idt(n), name, ttr, ttl, len, flags ? " " : "",
                 flags ? flags : ""),
               payload, len);
}

static void
add_ex(int fd, uint64_t n, const char *name, unsigned ttr, const char *ttl, const char *payload,
       const char *flags)
{
    send_add(fd, n, name, ttr, ttl, payload, strlen(payload), flags);
    systest_expect(fd, OK);
}

static void
add(int fd, uint64_t n, const char *name, const char *payload)
{
    add_ex(fd, n, name, TTR, TTL, payload, NULL);
}

static void
expect_lease(int fd, uint64_t n, const char *name, unsigned ttr, const void *payload, size_t len)
{
    struct sb e = {0};
    sb_add(&e, f("+OK 1\r\n%s %s %u %zu\r\n", idt(n), name, ttr, len));
    sb_addn(&e, payload, len);
    sb_add(&e, "\r\n");
    systest_expect_bytes(fd, e.p, e.n);
    free(e.p);
}

static void
lease_now(int fd, const char *name, uint64_t n, unsigned ttr, const char *payload)
{
    systest_sends(fd, f("lease %s 0\r\n", name));
    expect_lease(fd, n, name, ttr, payload, strlen(payload));
}

/* complete or fail with a result; expect the reply. */
static void
finish(int fd, const char *verb, uint64_t n, const void *res, size_t len, const char *reply)
{
    send_block(fd, f("%s %s %zu\r\n", verb, idt(n), len), res, len);
    systest_expect(fd, reply);
}

static void
expect_result(int fd, uint64_t n, int success, const void *res, size_t len)
{
    systest_sends(fd, f("result %s 0\r\n", idt(n)));
    struct sb e = {0};
    sb_add(&e, f("+OK 1\r\n%s %d %zu\r\n", idt(n), success, len));
    sb_addn(&e, res, len);
    sb_add(&e, "\r\n");
    systest_expect_bytes(fd, e.p, e.n);
    free(e.p);
}

/* What `inspect job` said: the whole reply, and a few fields. */
struct ji {
    bool found;
    struct sb raw;
    char id[64];
    int state;
    unsigned attempts, fails;
};

/* Read one job block (after the "+OK n" line) into j. */
static void
read_job_block(int fd, struct ji *j)
{
    const char *head = systest_read_line(fd);
    int k = 0;
    sb_add(&j->raw, head);
    sb_add(&j->raw, "\r\n");
    ck_assert_msg(sscanf(head, "%63s %d", j->id, &k) == 2 && (k == 12 || k == 13),
                  "bad job block head \"%s\"", head);
    for (int i = 0; i < k; i++) {
        const char *l = systest_read_line(fd);
        sb_add(&j->raw, l);
        sb_add(&j->raw, "\r\n");
        size_t plen;
        if (sscanf(l, "payload-size %zu", &plen) == 1) {
            char *p = malloc(plen + 11);
            systest_read_n(fd, p, plen + 10);
            ck_assert_msg(memcmp(p, "payload ", 8) == 0 && memcmp(p + 8 + plen, "\r\n", 2) == 0,
                          "bad payload line");
            sb_addn(&j->raw, p, plen + 10);
            free(p);
            i++;
            continue;
        }
        sscanf(l, "state %d", &j->state);
        sscanf(l, "attempts %u", &j->attempts);
        sscanf(l, "fails %u", &j->fails);
    }
}

static void
inspect_job(int fd, uint64_t n, struct ji *j)
{
    memset(j, 0, sizeof *j);
    sb_add(&j->raw, "");
    j->state = GONE;
    systest_sends(fd, f("inspect job %s\r\n", idt(n)));
    const char *l = systest_read_line(fd);
    if (strcmp(l, "-NOT-FOUND") == 0) {
        sb_add(&j->raw, NF);
        return;
    }
    ck_assert_msg(strcmp(l, "+OK 1") == 0, "inspect job %s: \"%s\"", idt(n), l);
    sb_add(&j->raw, "+OK 1\r\n");
    j->found = true;
    read_job_block(fd, j);
}

/* The state of job n (GONE if not found). */
static int
job_state(int fd, uint64_t n)
{
    struct ji j;
    inspect_job(fd, n, &j);
    free(j.raw.p);
    return j.state;
}

/* Wait (generously) until job n is in state `state` (GONE: not found). */
static void
wait_state(int fd, uint64_t n, int state)
{
    int st = GONE;
    for (int waited = 0; waited < 4 * systest_wait_ms(); waited += 20) {
        st = job_state(fd, n);
        if (st == state)
            return;
        systest_sleep_ms(20);
    }
    ck_abort_msg("job %s is in state %d, want %d", idt(n), st, state);
}

/* `inspect jobs|scheduled-jobs NAME 0 1000`: the raw reply, and the ids in
 * order into ids (if not NULL).  Returns the count, or -1 for -NOT-FOUND. */
static int
inspect_list(int fd, const char *what, const char *name, struct sb *raw, char (*ids)[64],
             size_t cap)
{
    systest_sends(fd, f("inspect %s %s 0 1000\r\n", what, name));
    const char *l = systest_read_line(fd);
    if (strcmp(l, "-NOT-FOUND") == 0) {
        sb_add(raw, NF);
        return -1;
    }
    int n = -1;
    ck_assert_msg(sscanf(l, "+OK %d", &n) == 1 && n >= 0, "inspect %s: \"%s\"", what, l);
    sb_add(raw, l);
    sb_add(raw, "\r\n");
    for (int i = 0; i < n; i++) {
        struct ji j;
        memset(&j, 0, sizeof j);
        read_job_block(fd, &j);
        sb_addn(raw, j.raw.p, j.raw.n);
        if (ids != NULL && (size_t)i < cap)
            snprintf(ids[i], 64, "%s", j.id);
        free(j.raw.p);
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Helpers: segment files */

/* The numbers of the segment files in dir (names of exactly 9 digits and
 * ".log"), ascending; other names are ignored. */
static size_t
seg_list(const char *dir, uint32_t *nums, size_t cap)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *s = de->d_name;
        if (strlen(s) != 13 || strcmp(s + 9, ".log") != 0 || strspn(s, "0123456789") != 9)
            continue;
        ck_assert_uint_lt(n, cap);
        nums[n++] = (uint32_t)strtoul(s, NULL, 10);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few hundred at most */
        for (size_t k = i; k > 0 && nums[k - 1] > nums[k]; k--) {
            uint32_t t = nums[k];
            nums[k] = nums[k - 1];
            nums[k - 1] = t;
        }
    return n;
}

static const char *
seg_path(const char *dir, uint32_t n)
{
    char name[14];
    ref_seg_name(n, name);
    return f("%s/%s", dir, name);
}

static void
seg_read(const char *dir, uint32_t n, struct ref_seg *s)
{
    const char *path = seg_path(dir, n);
    ck_assert_msg(ref_seg_read(path, s) == 0, "cannot read %s: %s", path, strerror(errno));
}

/* Does the record belong to job n? */
static bool
rec_is(const struct ref_rec *r, uint64_t n)
{
    return same_id(r->id, n);
}

/* Write bytes over the file at path (whole file). */
static void
write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

static void
append_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "ab");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

/* ------------------------------------------------------------------------ */
/* restart: every state survives a graceful stop */

static const char *const sync_policies[] = {"os", "interval", "always"};

static const char bin_result[] = "done\r\n\0bin\xff";
#define BIN_RESULT_LEN (sizeof bin_result - 1)

/* Ids of the restart test. */
enum {
    R_Q_FIRST = 1, /* 1..8 added to q with priorities, 9 scheduled in the past */
    R_Q_PAST = 9,
    R_Q_FUTURE = 10, /* scheduled an hour ahead */
    R_LEASED = 20,
    R_PENDING_TTR = 21,
    R_FAILED_TTR = 22,
    R_COMPLETED = 23,
    R_COMPLETED_NEW = 24,
    R_FAILED = 25,
    R_RETRIED = 26,
    R_RETRIED_LEASED = 27,
    R_DELETED = 28,
    R_DELETED_DONE = 29,
    R_LAST = 29,
};

static const int q_prio[] = {0, 0, 5, 0, -3, 5, 0, 2147483647, -2147483647 - 1};

/* Build every state there is; return the lease order of queue q. */
static void
restart_build(int fd)
{
    for (unsigned n = 1; n <= 8; n++)
        add_ex(fd, n, "q", TTR, TTL, f("p%u", n), f("-priority=%d", q_prio[n]));
    int64_t now = systest_now_ms();
    send_block(fd,
               f("schedule %s q %u %s %s 2 -priority=0\r\n", idt(R_Q_PAST), TTR, TTL,
                 iso_time(now - 10000, false)),
               "p9", 2);
    systest_expect(fd, OK);
    send_block(fd,
               f("schedule %s q %u %s %s 3 -priority=9\r\n", idt(R_Q_FUTURE), TTR, TTL,
                 iso_time(now + 3600000, true)),
               "p10", 3);
    systest_expect(fd, OK);

    add(fd, R_LEASED, "l", "leased");
    lease_now(fd, "l", R_LEASED, TTR, "leased");

    add_ex(fd, R_PENDING_TTR, "p", 100, TTL, "ttr", NULL);
    lease_now(fd, "p", R_PENDING_TTR, 100, "ttr");
    add_ex(fd, R_FAILED_TTR, "x", 100, TTL, "ttr1", "-max-attempts=1");
    lease_now(fd, "x", R_FAILED_TTR, 100, "ttr1");
    wait_state(fd, R_PENDING_TTR, PENDING);
    wait_state(fd, R_FAILED_TTR, FAILED);

    add(fd, R_COMPLETED, "c", "c1");
    lease_now(fd, "c", R_COMPLETED, TTR, "c1");
    finish(fd, "complete", R_COMPLETED, bin_result, BIN_RESULT_LEN, OK);
    add(fd, R_COMPLETED_NEW, "c2", "c2");
    finish(fd, "complete", R_COMPLETED_NEW, "", 0, OK);

    add(fd, R_FAILED, "f", "f1");
    lease_now(fd, "f", R_FAILED, TTR, "f1");
    finish(fd, "fail", R_FAILED, "oops", 4, OK);

    add_ex(fd, R_RETRIED, "r", TTR, TTL, "r1", "-max-fails=3");
    lease_now(fd, "r", R_RETRIED, TTR, "r1");
    finish(fd, "fail", R_RETRIED, "e1", 2, OK);

    add_ex(fd, R_RETRIED_LEASED, "r2", TTR, TTL, "r2", "-max-fails=3 -max-attempts=5");
    for (int i = 0; i < 2; i++) {
        lease_now(fd, "r2", R_RETRIED_LEASED, TTR, "r2");
        finish(fd, "fail", R_RETRIED_LEASED, "e", 1, OK);
    }
    lease_now(fd, "r2", R_RETRIED_LEASED, TTR, "r2");

    add(fd, R_DELETED, "d", "d1");
    systest_roundtrip(fd, f("delete %s\r\n", idt(R_DELETED)), OK);
    add(fd, R_DELETED_DONE, "d", "d2");
    lease_now(fd, "d", R_DELETED_DONE, TTR, "d2");
    finish(fd, "complete", R_DELETED_DONE, "x", 1, OK);
    systest_roundtrip(fd, f("delete %s\r\n", idt(R_DELETED_DONE)), OK);
}

/* Everything a restart must keep, as the server shows it. */
struct snapshot {
    struct ji jobs[R_LAST + 1];
    struct sb ready, scheduled;
    unsigned long long stats[6];
};

static const char *const snap_stats[] = {"jobs",        "ready-jobs",     "scheduled-jobs",
                                         "leased-jobs", "completed-jobs", "failed-jobs"};

static void
snapshot_take(int fd, struct snapshot *s)
{
    memset(s, 0, sizeof *s);
    for (unsigned n = 1; n <= R_LAST; n++)
        inspect_job(fd, n, &s->jobs[n]);
    inspect_list(fd, "jobs", "q", &s->ready, NULL, 0);
    inspect_list(fd, "scheduled-jobs", "q", &s->scheduled, NULL, 0);
    for (size_t i = 0; i < 6; i++)
        s->stats[i] = systest_server_stat(fd, snap_stats[i]);
}

static void
snapshot_free(struct snapshot *s)
{
    for (unsigned n = 1; n <= R_LAST; n++)
        free(s->jobs[n].raw.p);
    free(s->ready.p);
    free(s->scheduled.p);
}

static void
snapshot_compare(const struct snapshot *a, const struct snapshot *b, const char *policy)
{
    for (unsigned n = 1; n <= R_LAST; n++) {
        const struct sb *x = &a->jobs[n].raw, *y = &b->jobs[n].raw;
        ck_assert_msg(x->n == y->n && memcmp(x->p, y->p, x->n) == 0,
                      "sync %s: inspect job %u differs after the restart:\n%s\n--- now ---\n%s",
                      policy, n, x->p, y->p);
    }
    ck_assert_msg(a->ready.n == b->ready.n && memcmp(a->ready.p, b->ready.p, a->ready.n) == 0,
                  "sync %s: inspect jobs q differs after the restart:\n%s\n--- now ---\n%s", policy,
                  a->ready.p, b->ready.p);
    ck_assert_msg(a->scheduled.n == b->scheduled.n &&
                      memcmp(a->scheduled.p, b->scheduled.p, a->scheduled.n) == 0,
                  "sync %s: inspect scheduled-jobs q differs after the restart", policy);
    for (size_t i = 0; i < 6; i++)
        ck_assert_msg(a->stats[i] == b->stats[i], "sync %s: %s was %llu, is %llu", policy,
                      snap_stats[i], a->stats[i], b->stats[i]);
}

START_TEST(test_restart_keeps_everything)
{
    const char *policy = sync_policies[_i];
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-sync", policy, "-cmdlog-sync-int", "50", NULL);
    int fd = systest_connect(&s);
    restart_build(fd);

    /* What the server says before and after must be identical. */
    struct snapshot before, after;
    snapshot_take(fd, &before);
    ck_assert_int_eq(before.jobs[R_LEASED].state, LEASED);
    ck_assert_int_eq(before.jobs[R_PENDING_TTR].state, PENDING);
    ck_assert_int_eq(before.jobs[R_RETRIED].state, PENDING);
    ck_assert_uint_eq(before.jobs[R_RETRIED_LEASED].attempts, 3);
    ck_assert_uint_eq(before.jobs[R_RETRIED_LEASED].fails, 2);
    ck_assert_int_eq(before.jobs[R_DELETED].state, GONE);
    close(fd);
    systest_stop(&s);

    systest_fx_start(&x, &s, "-cmdlog-sync", policy, "-cmdlog-sync-int", "50", NULL);
    fd = systest_connect(&s);
    snapshot_take(fd, &after);
    snapshot_compare(&before, &after, policy);
    snapshot_free(&before);
    snapshot_free(&after);

    /* results */
    expect_result(fd, R_COMPLETED, 1, bin_result, BIN_RESULT_LEN);
    expect_result(fd, R_COMPLETED_NEW, 1, "", 0);
    expect_result(fd, R_FAILED, 0, "oops", 4);
    expect_result(fd, R_FAILED_TTR, 0, "", 0);
    systest_roundtrip(fd, f("result %s 0\r\n", idt(R_RETRIED)), TO);

    /* lease order of q: priority, then unscheduled before scheduled, FIFO */
    static const unsigned order[] = {7, 2, 5, 1, 3, 6, R_Q_PAST, 4, 8};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        lease_now(fd, "q", order[i], TTR, f("p%u", order[i]));
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* the restored jobs go on living */
    lease_now(fd, "p", R_PENDING_TTR, 100, "ttr");
    finish(fd, "complete", R_PENDING_TTR, "t", 1, OK); /* leased or pending again: both fine */
    lease_now(fd, "r", R_RETRIED, TTR, "r1");
    finish(fd, "complete", R_RETRIED, "fine", 4, OK);
    finish(fd, "complete", R_LEASED, "late", 4, OK);
    finish(fd, "fail", R_RETRIED_LEASED, "e", 1, OK); /* fails 3 of 3: final */
    expect_result(fd, R_RETRIED_LEASED, 0, "e", 1);
    finish(fd, "complete", R_COMPLETED, "again", 5, "-CLIENT-ERROR Duplicate result\r\n");
    add(fd, 100, "q", "new");
    close(fd);
    systest_stop(&s);

    /* and a second restart sees those changes too */
    systest_fx_start(&x, &s, "-cmdlog-sync", policy, NULL);
    fd = systest_connect(&s);
    expect_result(fd, R_RETRIED, 1, "fine", 4);
    expect_result(fd, R_LEASED, 1, "late", 4);
    expect_result(fd, R_RETRIED_LEASED, 0, "e", 1);
    expect_result(fd, R_PENDING_TTR, 1, "t", 1);
    lease_now(fd, "q", 100, TTR, "new");
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* A replayed lease gets a fresh TTR; a replayed job keeps its original
 * expiry (created + ttl), which may pass while the server is down. */
START_TEST(test_restart_ttr_fresh_ttl_original)
{
    unsigned t = 1000u * (unsigned)systest_slow();
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, NULL);
    int fd = systest_connect(&s);
    add_ex(fd, 1, "l", t, TTL, "a", NULL);
    lease_now(fd, "l", 1, t, "a");
    add_ex(fd, 2, "e", TTR, f("%u", t), "b", NULL);
    int64_t now = systest_now_ms();
    send_block(fd, f("schedule %s e %u %u %s 1\r\n", idt(3), TTR, 2 * t, iso_time(now + 100, true)),
               "c", 1);
    systest_expect(fd, OK);
    add(fd, 4, "e", "d");
    close(fd);
    systest_stop(&s);

    /* Down for longer than the TTR, the TTL of 2, and the time + ttl of 3. */
    systest_sleep_ms((int)(2 * t + 500));

    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    /* The old TTR is over; had replay kept it, the job would be PENDING. */
    struct ji j;
    inspect_job(fd, 1, &j);
    ck_assert_int_eq(j.state, LEASED);
    ck_assert_uint_eq(j.attempts, 1);
    free(j.raw.p);
    ck_assert_int_eq(job_state(fd, 2), GONE);
    ck_assert_int_eq(job_state(fd, 3), GONE);
    ck_assert_int_eq(job_state(fd, 4), NEW);
    /* The fresh TTR runs out as any other. */
    wait_state(fd, 1, PENDING);
    lease_now(fd, "l", 1, t, "a");
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* SIGKILL under load: a crash of the process loses nothing acknowledged,
 * under every sync policy */

enum kop { K_ADD, K_LEASE, K_COMPLETE, K_DELETE, K_END };

/* What each job goes through, by job number modulo 4. */
static const enum kop kplans[4][4] = {
    {K_ADD, K_LEASE, K_COMPLETE, K_END},
    {K_ADD, K_DELETE, K_END, K_END},
    {K_ADD, K_END, K_END, K_END}, /* stays NEW, in a queue nobody leases */
    {K_ADD, K_LEASE, K_END, K_END},
};

struct kjob {
    uint64_t n;
    int plan, round, conn;
    int sent, acked; /* ops of the plan sent, and acknowledged */
};

#define KCONNS    8 /* clients, unless a case says otherwise */
#define KMAXCONNS 32
#define KMAXJOBS  20000

struct kconn {
    int fd;
    bool open, busy;
    struct kjob *job;
    char expect[256];
    size_t explen;
    char buf[512];
    size_t len;
};

struct kworld {
    struct kjob *jobs;
    size_t njobs;
    uint64_t acked_ops, sent_ops; /* every op writes exactly one record */
    unsigned seed;
};

static const char *
kqueue(const struct kjob *j)
{
    return f("%c%d_%d", j->plan == 2 ? 'n' : 'k', j->round, j->conn);
}

/* Send the next op of c's job, starting a new job when it is done. */
static void
kconn_send(struct kworld *w, struct kconn *c, int round, int ci)
{
    struct kjob *j = c->job;
    if (j == NULL || kplans[j->plan][j->sent] == K_END) {
        ck_assert_uint_lt(w->njobs, KMAXJOBS);
        j = &w->jobs[w->njobs];
        j->n = (uint64_t)(round + 1) * 100000u + w->njobs;
        j->plan = (int)(w->njobs % 4);
        j->round = round;
        j->conn = ci;
        j->sent = j->acked = 0;
        w->njobs++;
        c->job = j;
    }
    const char *payload = f("payload-%" PRIu64, j->n);
    const char *result = f("result-%" PRIu64, j->n);
    const char *cmd = NULL, *exp = OK;
    switch (kplans[j->plan][j->sent]) {
    case K_ADD:
        cmd = f("add %s %s %u %s %zu\r\n%s\r\n", idt(j->n), kqueue(j), TTR, TTL, strlen(payload),
                payload);
        break;
    case K_LEASE:
        cmd = f("lease %s 0\r\n", kqueue(j));
        exp = f("+OK 1\r\n%s %s %u %zu\r\n%s\r\n", idt(j->n), kqueue(j), TTR, strlen(payload),
                payload);
        break;
    case K_COMPLETE:
        cmd = f("complete %s %zu\r\n%s\r\n", idt(j->n), strlen(result), result);
        break;
    case K_DELETE:
        cmd = f("delete %s\r\n", idt(j->n));
        break;
    default:
        ck_abort_msg("bad plan");
    }
    c->explen = strlen(exp);
    memcpy(c->expect, exp, c->explen + 1);
    systest_sends(c->fd, cmd);
    j->sent++;
    w->sent_ops++;
    c->busy = true;
}

/* Run the stream of commands over n connections and SIGKILL the server
 * once `target` replies have come; then take whatever replies were already
 * on their way. */
static void
kstream(struct kworld *w, struct systest_server *s, int n, int round, uint64_t target)
{
    struct kconn cs[KMAXCONNS];
    memset(cs, 0, sizeof cs);
    for (int i = 0; i < n; i++) {
        cs[i].fd = systest_connect(s);
        cs[i].open = true;
    }
    bool killed = false;
    uint64_t replies = 0;
    for (;;) {
        if (!killed) {
            for (int i = 0; i < n; i++)
                if (!cs[i].busy)
                    kconn_send(w, &cs[i], round, i);
            if (replies >= target) {
                /* Commands are in flight on every connection right now. */
                ck_assert_int_eq(kill(s->pid, SIGKILL), 0);
                killed = true;
            }
        }
        struct pollfd p[KMAXCONNS];
        int nopen = 0;
        for (int i = 0; i < n; i++) {
            p[i] = (struct pollfd){cs[i].open ? cs[i].fd : -1, POLLIN, 0};
            nopen += cs[i].open;
        }
        if (nopen == 0)
            break;
        int pr = poll(p, (nfds_t)n, systest_wait_ms());
        ck_assert_msg(pr > 0 || killed, "seed %u: the server stopped answering", w->seed);
        if (pr <= 0)
            break;
        for (int i = 0; i < n; i++) {
            struct kconn *c = &cs[i];
            if (!c->open || p[i].revents == 0)
                continue;
            ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
            if (r <= 0) {
                ck_assert_msg(killed, "seed %u: the server closed a connection", w->seed);
                c->open = false;
                continue;
            }
            c->len += (size_t)r;
            size_t cmp = c->len < c->explen ? c->len : c->explen;
            ck_assert_msg(c->busy && memcmp(c->buf, c->expect, cmp) == 0,
                          "seed %u: job %s: unexpected reply \"%.*s\", want \"%s\"", w->seed,
                          c->job ? idt(c->job->n) : "-", (int)c->len, c->buf, c->expect);
            if (c->len >= c->explen) {
                ck_assert_uint_eq(c->len, c->explen); /* one command in flight */
                c->len = 0;
                c->busy = false;
                c->job->acked++;
                w->acked_ops++;
                replies++;
            }
        }
    }
    for (int i = 0; i < n; i++)
        close(cs[i].fd);
    int status;
    ck_assert_int_eq(waitpid(s->pid, &status, 0), s->pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "server not killed");
    close(s->out_fd);
}

/* The state a plan leaves after k of its ops. */
static int
kplan_state(int plan, int k)
{
    if (k == 0)
        return GONE;
    switch (kplans[plan][k - 1]) {
    case K_ADD:
        return NEW;
    case K_LEASE:
        return LEASED;
    case K_COMPLETE:
        return COMPLETED;
    default:
        return GONE;
    }
}

/* After a restart: every acknowledged op is there, nothing unsent is, and a
 * job whose last op went unanswered shows either outcome.  The outcome seen
 * is then fixed for the next rounds. */
static void
kverify(struct kworld *w, int fd)
{
    unsigned long long present = 0;
    for (size_t i = 0; i < w->njobs; i++) {
        struct kjob *j = &w->jobs[i];
        struct ji info;
        inspect_job(fd, j->n, &info);
        int seen = -1;
        for (int k = j->acked; k <= j->sent && seen < 0; k++) {
            int want = kplan_state(j->plan, k);
            unsigned attempts = want == NEW ? 0 : 1;
            if (info.state == want && (want == GONE || info.attempts == attempts))
                seen = k;
        }
        ck_assert_msg(seen >= 0,
                      "seed %u: job %s (plan %d, %d ops sent, %d acknowledged) is in state %d "
                      "after the restart",
                      w->seed, idt(j->n), j->plan, j->sent, j->acked, info.state);
        free(info.raw.p);
        if (info.state == COMPLETED) {
            const char *res = f("result-%" PRIu64, j->n);
            expect_result(fd, j->n, 1, res, strlen(res));
        }
        present += info.state != GONE;
        w->acked_ops += (uint64_t)(seen - j->acked);
        w->sent_ops -= (uint64_t)(j->sent - seen);
        j->acked = j->sent = seen;
    }
    /* Nothing else: no job that was never sent. */
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), present);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(job_state(fd, (uint64_t)(w->jobs[w->njobs - 1].n + 1 + i)), GONE);
}

/* Are p[0..n) all zero bytes? */
static bool
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* The files a killed server left: 000000001.log up to N with no gap, every
 * one but the last whole (a crash can tear only the end of the last, which
 * may also end in preallocated zeros), and as many records as ops
 * acknowledged at least, sent at most.  With one_per_file, every file holds
 * one record (the last one may hold none). */
static void
kcheck_files(const struct kworld *w, const char *dir, bool one_per_file)
{
    static uint32_t nums[KMAXJOBS * 4];
    size_t count = seg_list(dir, nums, sizeof nums / sizeof nums[0]);
    ck_assert_uint_gt(count, 0);
    uint64_t records = 0;
    for (size_t i = 0; i < count; i++) {
        ck_assert_msg(nums[i] == i + 1, "seed %u: segment %zu is %s", w->seed, i + 1,
                      seg_path(dir, nums[i]));
        struct ref_seg sg;
        seg_read(dir, nums[i], &sg);
        bool last = i + 1 == count;
        bool torn_header = sg.status == REF_NOHDR && sg.len < REF_HEADER_LEN &&
                           memcmp(sg.data, ref_header, sg.len) == 0;
        bool padded = sg.status != REF_OK && sg.status != REF_NOHDR &&
                      all_zero(sg.data + sg.bad_off, sg.len - sg.bad_off);
        ck_assert_msg(sg.status == REF_OK ||
                          (last && (sg.status == REF_SHORT || torn_header || padded)),
                      "seed %u: %s is damaged at %zu (status %d)", w->seed, seg_path(dir, nums[i]),
                      sg.bad_off, sg.status);
        if (one_per_file)
            ck_assert_msg(sg.nrecs == 1 || (last && sg.nrecs == 0), "seed %u: %s holds %zu records",
                          w->seed, seg_path(dir, nums[i]), sg.nrecs);
        records += sg.nrecs;
        ref_seg_free(&sg);
    }
    ck_assert_msg(records >= w->acked_ops && records <= w->sent_ops,
                  "seed %u: %" PRIu64 " records for %" PRIu64 " ops acknowledged, %" PRIu64 " sent",
                  w->seed, records, w->acked_ops, w->sent_ops);
}

/* How a kill test runs the server. */
struct kcase {
    const char *policy;
    const char *seg_size;
    const char *clean_int; /* NULL: the default (no cleaning during the test) */
    int conns;             /* clients; 0: KCONNS */
};

/* Rounds of: start the server, check every job against what was
 * acknowledged, stream commands, SIGKILL it after a random number of
 * replies.  Without cleaning the files are checked too (cleaning removes
 * records and whole segments).  Returns the number of segments cleaned, as
 * the servers' debug logs say. */
static unsigned
kill_rounds(const struct kcase *k)
{
    struct kworld w = {0};
    w.jobs = calloc(KMAXJOBS, sizeof *w.jobs);
    w.seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    rng_seed(w.seed);
    int rounds = systest_wrapped() ? 1 : 3;
    unsigned cleaned = 0;
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    const char *clean_int = k->clean_int ? k->clean_int : "300000";
    for (int round = 0; round <= rounds; round++) {
        systest_fx_start(&x, &s, "-cmdlog-sync", k->policy, "-cmdlog-seg-size", k->seg_size,
                         "-cmdlog-clean-int", clean_int, "-log-level", "debug", NULL);
        if (round > 0) {
            int fd = systest_connect(&s);
            kverify(&w, fd);
            close(fd);
        }
        if (round == rounds)
            break;
        uint64_t target = 20 + rng_below(1500);
        kstream(&w, &s, k->conns > 0 ? k->conns : KCONNS, round, target);
        if (k->clean_int == NULL)
            kcheck_files(&w, x.dir, strcmp(k->seg_size, "15") == 0);
        char *err = systest_slurp(x.err, NULL);
        for (const char *p = err; (p = strstr(p, "cmdlog cleaned segment")) != NULL; p++)
            cleaned++;
        free(err);
    }
    systest_stop(&s);
    free(w.jobs);
    systest_fx_free(&x);
    return cleaned;
}

static const struct kcase kill_cases[] = {
    {"os", "67108864", NULL, 0}, {"interval", "67108864", NULL, 0}, {"always", "67108864", NULL, 0},
    {"os", "15", NULL, 0},       {"interval", "15", NULL, 0},       {"always", "15", NULL, 0},
};

/* 8 clients adding, leasing, completing and deleting as fast as replies
 * come, killed at a random moment; every policy, with the default segment
 * size and with one record per file (a rotation per record). */
START_TEST(test_kill_under_load)
{
    kill_rounds(&kill_cases[_i]);
}
END_TEST

/* Every state there is (restart_build), then 1,000 adds sent 100 at a
 * time, and SIGKILL as soon as the last +OK is read: after the restart
 * the server shows exactly what it showed before, plus the 1,000 jobs. */
START_TEST(test_kill_after_last_ack)
{
    enum { BULK_FIRST = 1000, BULK = 1000, BATCH = 100 };
    const struct kcase *k = &kill_cases[_i];
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-sync", k->policy, "-cmdlog-seg-size", k->seg_size, NULL);
    int fd = systest_connect(&s);
    restart_build(fd);
    struct snapshot before, after;
    snapshot_take(fd, &before);
    for (unsigned b = 0; b < BULK; b += BATCH) {
        struct sb req = {0};
        for (unsigned i = b; i < b + BATCH; i++) {
            const char *payload = f("bulk-%u", i);
            sb_add(&req, f("add %s bulk %u %s %zu\r\n%s\r\n", idt(BULK_FIRST + i), TTR, TTL,
                           strlen(payload), payload));
        }
        systest_send(fd, req.p, req.n);
        free(req.p);
        for (unsigned i = b; i < b + BATCH; i++)
            systest_expect(fd, OK);
    }
    systest_kill(&s);
    close(fd);

    systest_fx_start(&x, &s, "-cmdlog-sync", k->policy, "-cmdlog-seg-size", k->seg_size, NULL);
    fd = systest_connect(&s);
    snapshot_take(fd, &after);
    after.stats[0] -= BULK; /* jobs */
    after.stats[1] -= BULK; /* ready-jobs */
    snapshot_compare(&before, &after, f("%s, segments of %s", k->policy, k->seg_size));
    snapshot_free(&before);
    snapshot_free(&after);
    expect_result(fd, R_COMPLETED, 1, bin_result, BIN_RESULT_LEN);
    expect_result(fd, R_FAILED, 0, "oops", 4);
    expect_result(fd, R_FAILED_TTR, 0, "", 0);
    static char ids[BULK][64];
    struct sb raw = {0};
    ck_assert_int_eq(inspect_list(fd, "jobs", "bulk", &raw, ids, BULK), BULK);
    free(raw.p);
    for (unsigned i = 0; i < BULK; i++)
        ck_assert_str_eq(ids[i], idt(BULK_FIRST + i));
    lease_now(fd, "bulk", BULK_FIRST, TTR, "bulk-0");
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* The same with cleaning every 10 ms over 4 KiB segments, so that kills
 * land during rotations and cleaning passes. */
START_TEST(test_kill_while_cleaning)
{
    static const struct kcase k = {"always", "4096", "10", 0};
    unsigned cleaned = kill_rounds(&k);
    ck_assert_msg(cleaned > 0 || systest_wrapped(), "no segment was cleaned during the test");
}
END_TEST

/* The same with 32 clients under always: syncs then cover enough records
 * that the event loop and the sync thread poll for each other instead of
 * sleeping (doc/cmdlog.md). */
START_TEST(test_kill_many_clients)
{
    static const struct kcase k = {"always", "67108864", NULL, KMAXCONNS};
    kill_rounds(&k);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* torn and damaged logs */

/* Half a record at the end of the last segment is a crash mid-write: it is
 * cut off and start-up goes on. */
START_TEST(test_torn_last_record)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, NULL);
    int fd = systest_connect(&s);
    for (unsigned n = 1; n <= 5; n++)
        add(fd, n, "q", f("job%u", n));
    close(fd);
    systest_stop(&s);

    const char *seg = seg_path(x.dir, 1);
    char segbuf[128];
    snprintf(segbuf, sizeof segbuf, "%s", seg);
    size_t nrecs = 5;
    uint8_t id[REF_ID_LEN];
    struct ref_buf rec;
    ref_buf_init(&rec);
    ref_id(id, 99);
    ref_rec_add(&rec, systest_now_ms(), id, "q", TTR, 3600000, 0, 0, 0, "torn", 4,
                systest_now_ms());
    /* cut inside TIME, right after it, inside SIZE..PAYLOAD, and 1 byte short */
    const size_t cuts[] = {1, 14, 15, 16, 17, rec.len / 2, rec.len - 4, rec.len - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        long long good = file_size(segbuf);
        append_file(segbuf, rec.data, cuts[c]);
        ck_assert_int_eq(file_size(segbuf), good + (long long)cuts[c]);

        systest_fx_start(&x, &s, NULL);
        /* replay cut the tail before listening */
        ck_assert_msg(file_size(segbuf) == good, "cut %zu: size %lld, want %lld", cuts[c],
                      file_size(segbuf), good);
        char *err = systest_slurp(x.err, NULL);
        ck_assert_msg(strstr(err, "000000001.log") != NULL,
                      "cut %zu: no log line names the "
                      "segment: %s",
                      cuts[c], err);
        free(err);
        fd = systest_connect(&s);
        for (unsigned n = 1; n <= 5; n++)
            ck_assert_int_eq(job_state(fd, n), NEW);
        ck_assert_int_eq(job_state(fd, 99), GONE);
        ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 5 + c);
        add(fd, 200 + c, "new", "after");
        close(fd);
        systest_stop(&s);

        struct ref_seg sg;
        seg_read(x.dir, 1, &sg);
        ck_assert_msg(sg.status == REF_OK, "cut %zu: damaged at %zu", cuts[c], sg.bad_off);
        ck_assert_uint_eq(sg.nrecs, ++nrecs);
        ck_assert_int_eq(sg.recs[nrecs - 1].code, REF_ADD);
        ck_assert(rec_is(&sg.recs[nrecs - 1], 200 + c));
        ref_seg_free(&sg);
    }

    /* A new last segment torn inside its header (a crash right after it was
     * created) is cut too, and then used. */
    ck_assert_int_eq(ref_seg_write_raw(x.dir, 2, ref_header, 3), 0);
    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    ck_assert_int_eq(job_state(fd, 1), NEW);
    add(fd, 300, "new", "seg2");
    close(fd);
    systest_stop(&s);
    uint32_t nums[8];
    ck_assert_uint_eq(seg_list(x.dir, nums, 8), 2);
    struct ref_seg sg;
    seg_read(x.dir, 2, &sg);
    ck_assert_int_eq(sg.status, REF_OK);
    ck_assert_uint_eq(sg.nrecs, 1);
    ck_assert(rec_is(&sg.recs[0], 300));
    ref_seg_free(&sg);
    /* An empty last segment is no damage either. */
    ck_assert_int_eq(ref_seg_write_raw(x.dir, 3, "", 0), 0);
    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    ck_assert_int_eq(job_state(fd, 300), NEW);
    close(fd);
    systest_stop(&s);

    ref_buf_free(&rec);
    systest_fx_free(&x);
}
END_TEST

/* Start a server that must refuse the damaged log: exit 78 and a message
 * naming the segment and the offset; the files stay as they were. */
static void
expect_refused(struct systest_fx *x, uint32_t seg, size_t off)
{
    uint32_t before[64], after[64];
    size_t nb = seg_list(x->dir, before, 64);
    size_t len0;
    char *bytes0 = systest_slurp(seg_path(x->dir, seg), &len0);
    int rc = systest_fx_run(x, NULL);
    char *err = systest_slurp(x->err, NULL);
    ck_assert_msg(rc == EX_CONFIG_STATUS, "exit %d, want 78; stderr: %s", rc, err);
    char name[14];
    ref_seg_name(seg, name);
    const char *want = f("cmdlog damaged segment=%s offset=%zu", name, off);
    ck_assert_msg(strstr(err, want) != NULL, "stderr does not say \"%s\": %s", want, err);
    /* and what to do, with what it would cost */
    want = f("error cmdlog cannot start past the damage; to start with what comes before it, "
             "start once with -cmdlog-truncate, which cuts the log there and drops bytes=%zu of "
             "that segment and segments=",
             len0 - off);
    ck_assert_msg(strstr(err, want) != NULL, "stderr does not say \"%s\": %s", want, err);
    free(err);
    ck_assert_uint_eq(seg_list(x->dir, after, 64), nb);
    size_t len1;
    char *bytes1 = systest_slurp(seg_path(x->dir, seg), &len1);
    ck_assert_msg(len0 == len1 && memcmp(bytes0, bytes1, len0) == 0, "a refused start changed %s",
                  name);
    free(bytes0);
    free(bytes1);
}

START_TEST(test_damage_middle_record)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, NULL);
    int fd = systest_connect(&s);
    for (unsigned n = 1; n <= 6; n++)
        add(fd, n, "q", f("job%u", n));
    close(fd);
    systest_stop(&s);

    char seg[128];
    snprintf(seg, sizeof seg, "%s", seg_path(x.dir, 1));
    struct ref_seg sg;
    seg_read(x.dir, 1, &sg);
    ck_assert_int_eq(sg.status, REF_OK);
    ck_assert_uint_eq(sg.nrecs, 6);
    size_t len;
    char *orig = systest_slurp(seg, &len);

    /* A flipped byte in record 3 (its time, its id, its CRC), or in record
     * 1; valid records follow, so it is no torn tail. */
    const struct {
        size_t rec, at;
    } flips[] = {{2, 3}, {2, 16 + 1 + 1 + 4}, {2, SIZE_MAX}, {0, 20}};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        const struct ref_rec *r = &sg.recs[flips[i].rec];
        size_t at = r->off + (flips[i].at == SIZE_MAX ? r->size - 1 : flips[i].at);
        char *bad = malloc(len);
        memcpy(bad, orig, len);
        bad[at] ^= 0x20;
        write_file(seg, bad, len);
        free(bad);
        expect_refused(&x, 1, r->off);
        char *err = systest_slurp(x.err, NULL);
        const char *kept = f(" after it (bytes=0); the jobs before the damage, which it keeps: %zu "
                             "Workq, 0 Faktory\n",
                             flips[i].rec);
        ck_assert_msg(strstr(err, kept) != NULL, "stderr does not say \"%s\": %s", kept, err);
        free(err);
    }

    /* Asked to, the server cuts the log at the damage and starts. */
    const struct ref_rec *r = &sg.recs[2];
    size_t cut = r->off;
    char *bad = malloc(len);
    memcpy(bad, orig, len);
    bad[r->off + 20] ^= 0x01;
    write_file(seg, bad, len);
    free(bad);
    systest_fx_start(&x, &s, "--cmdlog-truncate", NULL);
    ck_assert_int_eq(file_size(seg), (long long)cut);
    fd = systest_connect(&s);
    ck_assert_int_eq(job_state(fd, 1), NEW);
    ck_assert_int_eq(job_state(fd, 2), NEW);
    for (unsigned n = 3; n <= 6; n++)
        ck_assert_int_eq(job_state(fd, n), GONE);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    add(fd, 7, "q", "job7");
    close(fd);
    systest_stop(&s);
    ref_seg_free(&sg);
    seg_read(x.dir, 1, &sg);
    ck_assert_int_eq(sg.status, REF_OK);
    ck_assert_uint_eq(sg.nrecs, 3);
    ck_assert(rec_is(&sg.recs[2], 7));
    ref_seg_free(&sg);
    /* and a normal start is happy again */
    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 3);
    close(fd);
    systest_stop(&s);
    free(orig);
    systest_fx_free(&x);
}
END_TEST

/* Damage in a segment that is not the last is never a torn tail: even a
 * short last record there stops start-up.  With --cmdlog-truncate the log
 * ends there and the later segments go. */
START_TEST(test_damage_earlier_segment)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-seg-size", "100", NULL);
    int fd = systest_connect(&s);
    for (unsigned n = 1; n <= 8; n++)
        add(fd, n, "q", f("job%u", n));
    close(fd);
    systest_stop(&s);

    uint32_t nums[64];
    size_t count = seg_list(x.dir, nums, 64);
    ck_assert_uint_ge(count, 3);
    /* where each job's add record lives */
    uint32_t seg_of[9] = {0};
    for (size_t i = 0; i < count; i++) {
        struct ref_seg sg;
        seg_read(x.dir, nums[i], &sg);
        ck_assert_int_eq(sg.status, REF_OK);
        for (size_t k = 0; k < sg.nrecs; k++)
            for (unsigned n = 1; n <= 8; n++)
                if (rec_is(&sg.recs[k], n))
                    seg_of[n] = nums[i];
        ref_seg_free(&sg);
    }
    for (unsigned n = 1; n <= 8; n++)
        ck_assert_uint_ne(seg_of[n], 0);

    /* segment 2: a flipped byte in its first record */
    struct ref_seg sg2;
    seg_read(x.dir, 2, &sg2);
    ck_assert_uint_ge(sg2.nrecs, 1);
    size_t len2;
    char *orig2 = systest_slurp(seg_path(x.dir, 2), &len2);
    char *bad = malloc(len2);
    memcpy(bad, orig2, len2);
    bad[sg2.recs[0].off + 18] ^= 0x40;
    write_file(seg_path(x.dir, 2), bad, len2);
    free(bad);
    expect_refused(&x, 2, sg2.recs[0].off);
    write_file(seg_path(x.dir, 2), orig2, len2);
    free(orig2);

    /* segment 1: its last record torn */
    struct ref_seg sg1;
    seg_read(x.dir, 1, &sg1);
    const struct ref_rec *last = &sg1.recs[sg1.nrecs - 1];
    size_t cut = last->off;
    ck_assert_int_eq(truncate(seg_path(x.dir, 1), (off_t)(last->off + last->size - 3)), 0);
    expect_refused(&x, 1, cut);

    systest_fx_start(&x, &s, "-cmdlog-seg-size", "100", "--cmdlog-truncate", NULL);
    uint32_t left[64];
    ck_assert_uint_eq(seg_list(x.dir, left, 64), 1);
    ck_assert_int_eq(file_size(seg_path(x.dir, 1)), (long long)cut);
    fd = systest_connect(&s);
    unsigned kept = 0;
    for (unsigned n = 1; n <= 8; n++) {
        bool before = false;
        for (size_t k = 0; k + 1 < sg1.nrecs; k++)
            before = before || rec_is(&sg1.recs[k], n);
        ck_assert_int_eq(job_state(fd, n), before ? NEW : GONE);
        kept += before;
    }
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), kept);
    add(fd, 9, "q", "job9");
    add(fd, 10, "q", "job10");
    close(fd);
    systest_stop(&s);
    /* the log goes on cleanly from the cut */
    count = seg_list(x.dir, nums, 64);
    size_t recs = 0;
    for (size_t i = 0; i < count; i++) {
        ck_assert_uint_eq(nums[i], i + 1);
        struct ref_seg sg;
        seg_read(x.dir, nums[i], &sg);
        ck_assert_int_eq(sg.status, REF_OK);
        recs += sg.nrecs;
        ref_seg_free(&sg);
    }
    ck_assert_uint_eq(recs, kept + 2);
    ref_seg_free(&sg1);
    ref_seg_free(&sg2);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* full disk */

/* Write a file of mib MiB at path; 0, or -1 when the disk is full first. */
static int
fill_file(const char *path, int mib)
{
    static char block[1 << 20];
    memset(block, 'f', sizeof block);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    int rc = 0;
    for (int i = 0; i < mib && rc == 0; i++)
        rc = fwrite(block, 1, sizeof block, fp) == sizeof block ? 0 : -1;
    return fclose(fp) != 0 ? -1 : rc;
}

/* A disk that really fills up, under always: a tmpfs of 24 MiB (where the
 * test may mount one: as root), 13 MiB of it taken by another file.  The
 * log keeps 4 MiB allocated ahead of its records; once the disk cannot give
 * more the server is read-only at once, so every add is answered without
 * delay, +OK or Read-only, and none is held.  Freeing space makes it
 * writable again; after a SIGKILL every acknowledged job is there. */
START_TEST(test_full_disk_headroom)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    if (mount("tmpfs", x.base, "tmpfs", 0, "size=24m,mode=0700") != 0) {
        systest_fx_free(&x); /* not allowed to mount here: nothing to test */
        return;
    }
    char filler[128];
    snprintf(filler, sizeof filler, "%s/filler", x.base);
    ck_assert_int_eq(fill_file(filler, 13), 0);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-sync", "always", NULL);
    int fd = systest_connect(&s);
    char payload[1001];
    memset(payload, 'p', 1000);
    payload[1000] = '\0';
    unsigned n = 1, acked = 0;
    const char *l = NULL;
    for (; n < 20000; n++) {
        send_add(fd, n, "q", TTR, TTL, payload, 1000, NULL);
        l = systest_read_line_within(fd, systest_wait_ms());
        ck_assert_msg(l != NULL, "add %u: no reply (held) with the disk nearly full", n);
        if (strcmp(l, "+OK") != 0)
            break;
        acked++;
    }
    ck_assert_str_eq(l, "-SERVER-ERROR Read-only: command log write failed");
    ck_assert_uint_gt(acked, 1000);
    /* reads go on; changes are refused at once */
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), acked);
    systest_roundtrip(fd, f("delete %s\r\n", idt(1)), RO);
    /* room again: within a few retries the server takes changes */
    ck_assert_int_eq(unlink(filler), 0);
    int64_t t0 = systest_now_ms();
    for (;; n++) {
        send_add(fd, n, "q", TTR, TTL, payload, 1000, NULL);
        l = systest_read_line_within(fd, systest_wait_ms());
        ck_assert_ptr_nonnull(l);
        if (strcmp(l, "+OK") == 0)
            break;
        ck_assert_str_eq(l, "-SERVER-ERROR Read-only: command log write failed");
        ck_assert_int_lt(systest_now_ms() - t0, systest_wait_ms());
        systest_sleep_ms(50);
    }
    acked++;
    systest_kill(&s);
    systest_fx_start(&x, &s, "-cmdlog-sync", "always", NULL);
    close(fd);
    fd = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), acked);
    ck_assert_int_eq(job_state(fd, n), NEW);
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

static const char *const full_policies[] = {"always", "interval", "os"};

/* Send add n and return its reply line (NULL if none came in the wait). */
static const char *
try_add(int fd, uint64_t n, const char *payload)
{
    send_add(fd, n, "q", TTR, TTL, payload, strlen(payload), NULL);
    return systest_read_line_within(fd, systest_wait_ms());
}

START_TEST(test_full_disk)
{
    const char *policy = full_policies[_i];
    if (systest_wrapped())
        return; /* prlimit needs the server's own pid; see the top of the file */
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    x.err_inherit = true; /* a stderr file would meet the limit too */
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-sync", policy, "-cmdlog-sync-int", "20", NULL);
    int fd = systest_connect(&s);
    char payload[101];
    memset(payload, 'x', 100);
    payload[100] = '\0';
    static bool acked[1000], refused[1000];
    memset(acked, 0, sizeof acked);
    memset(refused, 0, sizeof refused);
    for (unsigned n = 1; n <= 3; n++) {
        add(fd, n, "q", payload);
        acked[n] = true;
    }
    char seg[128];
    snprintf(seg, sizeof seg, "%s", seg_path(x.dir, 1));
    /* Where the records end (under always the segment's blocks are
     * preallocated: zeros follow them, and writes there would not meet a
     * limit on the file's size). */
    struct ref_seg sg;
    seg_read(x.dir, 1, &sg);
    long long size = (long long)sg.bad_off;
    ref_seg_free(&sg);
    ck_assert_int_gt(size, 3 * 100);

    /* Room for about two more records. */
    struct rlimit old, lim;
    ck_assert_int_eq(prlimit(s.pid, RLIMIT_FSIZE, NULL, &old), 0);
    lim.rlim_cur = (rlim_t)size + 300;
    lim.rlim_max = old.rlim_max;
    ck_assert_int_eq(prlimit(s.pid, RLIMIT_FSIZE, &lim, NULL), 0);

    /* An add whose record could not be written may get its reply late,
     * once the record is written after all (under always it cannot be +OK
     * before): its connection is put aside, and the test goes on with a new
     * one.  The other connections must not wait for it. */
    unsigned n = 4, nheld = 0;
    struct {
        int fd;
        unsigned n;
    } held[8];
    bool readonly = false;
    for (int waited = 0; !readonly && waited < 4 * systest_wait_ms(); waited += 20, n++) {
        ck_assert_uint_lt(n, 900);
        send_add(fd, n, "q", TTR, TTL, payload, strlen(payload), NULL);
        const char *l = systest_read_line_within(fd, 1000 * systest_slow());
        if (l == NULL) {
            ck_assert_msg(nheld < 2,
                          "sync %s: no reply on %u connections in a row after the file-size "
                          "limit (%lld bytes): the replies of every connection are held",
                          policy, nheld + 1, (long long)lim.rlim_cur);
            held[nheld].fd = fd;
            held[nheld++].n = n;
            fd = systest_connect(&s);
            continue;
        }
        if (strcmp(l, "+OK") == 0) {
            acked[n] = true;
        } else {
            ck_assert_msg(strcmp(l, "-SERVER-ERROR Read-only: command log write failed") == 0,
                          "sync %s: add %u: \"%s\"", policy, n, l);
            refused[n] = true;
            readonly = true;
        }
        systest_sleep_ms(20);
    }
    ck_assert_msg(readonly, "sync %s: never read-only", policy);

    /* Every state-changing command is refused, after its arguments are
     * checked; reads go on, on this connection and on a new one. */
    systest_roundtrip(fd, "delete not-an-id\r\n", "-CLIENT-ERROR Invalid ID\r\n");
    systest_roundtrip(fd, "lease q 0\r\n", RO);
    finish(fd, "complete", 1, "r", 1, RO);
    finish(fd, "fail", 1, "r", 1, RO);
    systest_roundtrip(fd, f("delete %s\r\n", idt(1)), RO);
    send_block(fd,
               f("schedule %s q %u %s %s 1\r\n", idt(n), TTR, TTL,
                 iso_time(systest_now_ms() + 60000, false)),
               "s", 1);
    systest_expect(fd, RO);
    refused[n++] = true;
    send_add(fd, n, "q", TTR, TTL, "a", 1, NULL);
    systest_expect(fd, RO);
    refused[n++] = true;
    /* (a held add is in memory: it counts) */
    unsigned nacked = nheld;
    for (unsigned i = 0; i < n; i++)
        nacked += acked[i];
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), nacked);
    int fd2 = systest_connect(&s);
    ck_assert_int_eq(job_state(fd2, 1), NEW);
    systest_roundtrip(fd2, f("result %s 0\r\n", idt(1)), TO);
    ck_assert_uint_eq(systest_server_stat(fd2, "jobs"), nacked);
    systest_roundtrip(fd2, "inspect queue q\r\n",
                      f("+OK 1\r\nq 2\r\nready-len %u\r\nscheduled-len 0\r\n", nacked));
    close(fd2);

    /* Room again: the server leaves read-only mode by itself. */
    ck_assert_int_eq(prlimit(s.pid, RLIMIT_FSIZE, &old, NULL), 0);
    bool writable = false;
    for (int waited = 0; !writable && waited < 4 * systest_wait_ms(); waited += 50, n++) {
        ck_assert_uint_lt(n, 990);
        const char *l = try_add(fd, n, payload);
        ck_assert_msg(l != NULL, "sync %s: no reply to add %u after the limit was raised", policy,
                      n);
        if (strcmp(l, "+OK") == 0) {
            acked[n] = true;
            writable = true;
        } else {
            ck_assert_msg(strcmp(l, "-SERVER-ERROR Read-only: command log write failed") == 0,
                          "sync %s: add %u: \"%s\"", policy, n, l);
            refused[n] = true;
            systest_sleep_ms(50);
        }
    }
    ck_assert_msg(writable, "sync %s: still read-only after the limit was raised", policy);
    /* A held add was applied: its reply is +OK, never an error. */
    for (unsigned i = 0; i < nheld; i++) {
        const char *l = systest_read_line(held[i].fd);
        ck_assert_msg(strcmp(l, "+OK") == 0, "sync %s: held add %u: \"%s\"", policy, held[i].n, l);
        acked[held[i].n] = true;
        close(held[i].fd);
    }
    for (int i = 0; i < 3; i++, n++) {
        add(fd, n, "q", payload);
        acked[n] = true;
    }
    lease_now(fd, "q", 1, TTR, payload);
    close(fd);
    systest_stop(&s);

    /* Every acknowledged add is in the log, no refused one. */
    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    nacked = 0;
    for (unsigned i = 2; i < n; i++) {
        ck_assert_msg(!(acked[i] && refused[i]), "job %u both", i);
        int st = job_state(fd, i);
        if (acked[i])
            ck_assert_msg(st == NEW, "sync %s: acknowledged job %u is in state %d", policy, i, st);
        else
            ck_assert_msg(st == GONE, "sync %s: refused job %u exists (state %d)", policy, i, st);
        nacked += acked[i];
    }
    ck_assert_int_eq(job_state(fd, 1), LEASED);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), nacked + 1);
    close(fd);
    systest_stop(&s);
    seg_read(x.dir, 1, &sg);
    ck_assert_msg(sg.status == REF_OK, "log damaged at %zu", sg.bad_off);
    ref_seg_free(&sg);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* cleaning */

/* The job number of a record (ids are ref_id(n), n < 2^48). */
static uint64_t
rec_num(const struct ref_rec *r)
{
    uint64_t n = 0;
    for (size_t b = 10; b < REF_ID_LEN; b++)
        n = n << 8 | r->id[b];
    return n;
}

/* What became of each job of the cleaning test. */
enum { C_NONE, C_LIVE, C_GONE, C_REBORN };

/* Is the cleaning done?  Closed segments (all but the last) are whole and
 * hold no record of a gone job, and a job added again after its delete has
 * only its new add left (all of its records are in closed segments). */
static bool
clean_done(const char *dir, const uint8_t *kind, size_t nkind, long long *total, char *why,
           size_t whycap)
{
    uint32_t nums[4096];
    size_t count = seg_list(dir, nums, 4096);
    unsigned *recs = calloc(nkind, sizeof *recs);
    *total = 0;
    why[0] = '\0';
    bool done = true;
    for (size_t i = 0; i < count; i++) {
        struct ref_seg sg;
        if (ref_seg_read(seg_path(dir, nums[i]), &sg) != 0) {
            snprintf(why, whycap, "segment %u vanished while read", nums[i]);
            free(recs);
            return false; /* the cleaner removed it meanwhile: look again */
        }
        *total += (long long)sg.len;
        bool closed = i + 1 < count;
        if (closed && sg.status != REF_OK) {
            snprintf(why, whycap, "segment %u status %d", nums[i], sg.status);
            done = false;
        }
        for (size_t k = 0; k < sg.nrecs; k++) {
            uint64_t n = rec_num(&sg.recs[k]);
            if (n >= nkind)
                continue;
            recs[n]++;
            bool bad = kind[n] == C_GONE && closed;
            bad = bad || (kind[n] == C_REBORN &&
                          (sg.recs[k].code != REF_ADD || sg.recs[k].payload_len != 6 ||
                           memcmp(sg.recs[k].payload, "reborn", 6) != 0));
            if (bad && done) {
                snprintf(why, whycap, "segment %u holds a record (code %d) of gone job %s", nums[i],
                         sg.recs[k].code, idt(n));
                done = false;
            }
        }
        ref_seg_free(&sg);
    }
    for (size_t n = 0; n < nkind && done; n++) {
        if ((kind[n] == C_LIVE || kind[n] == C_REBORN) && recs[n] != 1) {
            snprintf(why, whycap, "job %s (kind %d) has %u records", idt(n), kind[n], recs[n]);
            done = false;
        }
    }
    free(recs);
    return done;
}

START_TEST(test_cleaning)
{
    enum { JOBS = 400, FILLER = 10000 };
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-seg-size", "200", "-cmdlog-clean-int", "100", "-cmdlog-sync",
                     "os", NULL);
    int fd = systest_connect(&s);
    static uint8_t kind[JOBS + 1];
    memset(kind, C_NONE, sizeof kind);
    const char *payload = "0123456789012345678901234567890123456789";
    struct ref_buf sizes; /* the records written, to know their size */
    ref_buf_init(&sizes);
    uint8_t id[REF_ID_LEN];
    unsigned nlive = 0;
    /* Job n: every 8th stays, every 8th+4 expires by TTL, the rest are
     * deleted a few adds later; the cleaner runs meanwhile. */
    for (unsigned n = 1; n <= JOBS; n++) {
        bool expires = n % 8 == 4;
        add_ex(fd, n, "c", TTR, expires ? "300" : TTL, payload, NULL);
        ref_id(id, n);
        ref_rec_add(&sizes, 0, id, "c", TTR, expires ? 300 : 3600000, 0, 0, 0, payload,
                    strlen(payload), 0);
        kind[n] = n % 8 == 0 ? C_LIVE : C_GONE;
        nlive += kind[n] == C_LIVE;
        if (expires)
            ref_rec_id(&sizes, 0, REF_EXPIRE, id);
        unsigned d = n - 3;
        if (n > 3 && kind[d] == C_GONE && d % 8 != 4) {
            systest_roundtrip(fd, f("delete %s\r\n", idt(d)), OK);
            ref_id(id, d);
            ref_rec_id(&sizes, 0, REF_DELETE, id);
        }
        if (n % 25 == 0)
            systest_sleep_ms(20);
    }
    for (unsigned d = JOBS - 2; d <= JOBS; d++)
        if (kind[d] == C_GONE && d % 8 != 4) {
            systest_roundtrip(fd, f("delete %s\r\n", idt(d)), OK);
            ref_id(id, d);
            ref_rec_id(&sizes, 0, REF_DELETE, id);
        }
    long long written = (long long)sizes.len;
    ref_buf_free(&sizes);

    /* the TTL-expiring jobs are gone (and their expire records logged) */
    for (int waited = 0; systest_server_stat(fd, "jobs") != nlive; waited += 50) {
        ck_assert_msg(waited < 4 * systest_wait_ms(), "jobs never came down to %u", nlive);
        systest_sleep_ms(50);
    }
    /* Some deleted ids come back: their old records must go, the new add
     * must stay. */
    unsigned nreborn = 0;
    for (unsigned n = 1; n <= JOBS; n += 32) {
        ck_assert_int_eq(kind[n], C_GONE);
        add(fd, n, "c", "reborn");
        kind[n] = C_REBORN;
        nreborn++;
    }
    /* Live fillers until the last segment holds nothing else: then every
     * record of the jobs above is in a closed segment. */
    unsigned fillers = 0;
    for (;;) {
        add(fd, FILLER + fillers, "fill", payload);
        fillers++;
        ck_assert_uint_lt(fillers, 20);
        systest_sleep_ms(20); /* os: let the writer catch up */
        uint32_t nums[4096];
        size_t count = seg_list(x.dir, nums, 4096);
        struct ref_seg sg;
        if (ref_seg_read(seg_path(x.dir, nums[count - 1]), &sg) != 0)
            continue;
        bool only = sg.status == REF_OK && sg.nrecs > 0;
        for (size_t k = 0; k < sg.nrecs; k++)
            only = only && rec_num(&sg.recs[k]) >= FILLER;
        ref_seg_free(&sg);
        if (only && fillers >= 3)
            break;
    }

    long long total = 0;
    char why[256];
    for (int waited = 0;; waited += 100) {
        if (clean_done(x.dir, kind, JOBS + 1, &total, why, sizeof why) && total < written / 4)
            break;
        ck_assert_msg(waited < 4 * systest_wait_ms(),
                      "cleaning did not finish: %s; %lld bytes in segments, %lld written", why,
                      total, written);
        systest_sleep_ms(100);
    }
    close(fd);
    systest_stop(&s);

    /* exactly the live jobs, in their order */
    systest_fx_start(&x, &s, "-cmdlog-seg-size", "200", NULL);
    fd = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), nlive + nreborn + fillers);
    static char ids[JOBS][64];
    struct sb raw = {0};
    ck_assert_int_eq(inspect_list(fd, "jobs", "c", &raw, ids, JOBS), (int)(nlive + nreborn));
    free(raw.p);
    unsigned k = 0;
    for (unsigned n = 1; n <= JOBS; n++)
        if (kind[n] == C_LIVE)
            ck_assert_str_eq(ids[k++], idt(n));
    for (unsigned n = 1; n <= JOBS; n++)
        if (kind[n] == C_REBORN)
            ck_assert_str_eq(ids[k++], idt(n));
    for (unsigned n = 1; n <= JOBS; n++)
        if (n % 7 == 0 || kind[n] == C_REBORN)
            ck_assert_int_eq(job_state(fd, n), kind[n] == C_GONE ? GONE : NEW);
    lease_now(fd, "fill", FILLER, TTR, payload);
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* what the records say */

/* Check that r is an add/schedule record with these fields. */
static void
expect_job_rec(const struct ref_rec *r, int code, uint64_t n, const char *name, uint64_t ttr,
               uint64_t ttl, int64_t prio, uint64_t ma, uint64_t mf, const void *payload,
               size_t plen, int64_t t0, int64_t t1)
{
    ck_assert_int_eq(r->code, code);
    ck_assert_msg(rec_is(r, n), "record of another job (want %s)", idt(n));
    ck_assert_uint_eq(r->name_len, strlen(name));
    ck_assert(memcmp(r->name, name, r->name_len) == 0);
    ck_assert_uint_eq(r->ttr, ttr);
    ck_assert_uint_eq(r->ttl, ttl);
    ck_assert_int_eq(r->prio, prio);
    ck_assert_uint_eq(r->max_attempts, ma);
    ck_assert_uint_eq(r->max_fails, mf);
    ck_assert_uint_eq(r->payload_len, plen);
    ck_assert(plen == 0 || memcmp(r->payload, payload, plen) == 0);
    ck_assert_msg(r->created_ms >= t0 - 1000 && r->created_ms <= t1 + 1000,
                  "created %" PRId64 " not in [%" PRId64 ", %" PRId64 "]", r->created_ms, t0, t1);
    ck_assert(code == REF_SCHEDULE ? r->has_time : !r->has_time);
}

static void
expect_id_rec(const struct ref_rec *r, int code, uint64_t n)
{
    ck_assert_msg(r->code == code && rec_is(r, n), "record code %d, want %d for job %s", r->code,
                  code, idt(n));
}

static void
expect_result_rec(const struct ref_rec *r, int code, uint64_t n, const void *res, size_t len)
{
    expect_id_rec(r, code, n);
    ck_assert_uint_eq(r->result_len, len);
    ck_assert(len == 0 || memcmp(r->result, res, len) == 0);
}

START_TEST(test_records_decode)
{
    static const char bin[] = "bin\r\n\0\xff end";
    const size_t binlen = sizeof bin - 1;
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    int64_t t0 = systest_now_ms();
    int64_t when = (t0 / 1000 + 3600) * 1000 + 250;
    systest_fx_start(&x, &s, "-cmdlog-sync", "always", NULL);
    int fd = systest_connect(&s);
    send_add(fd, 1, "alpha", 30000, "600000", bin, binlen,
             "-priority=-7 -max-attempts=3 -max-fails=2");
    systest_expect(fd, OK);
    add_ex(fd, 2, "beta", 1000, "600000", "", NULL);
    send_block(fd,
               f("schedule %s gamma 5000 600000 %s 1 -priority=2147483647\r\n", idt(3),
                 iso_time(when, true)),
               "s", 1);
    systest_expect(fd, OK);
    systest_sends(fd, "lease alpha 0\r\n");
    expect_lease(fd, 1, "alpha", 30000, bin, binlen);
    finish(fd, "fail", 1, "e1", 2, OK); /* fails 1 < 2: retried */
    systest_sends(fd, "lease alpha 0\r\n");
    expect_lease(fd, 1, "alpha", 30000, bin, binlen);
    finish(fd, "complete", 1, "ok\r\n", 4, OK);
    lease_now(fd, "beta", 2, 1000, "");
    finish(fd, "fail", 2, "bad", 3, OK); /* max-fails 0: final */
    systest_roundtrip(fd, f("delete %s\r\n", idt(3)), OK);
    add_ex(fd, 4, "delta", 100, "600000", "d", NULL);
    lease_now(fd, "delta", 4, 100, "d");
    wait_state(fd, 4, PENDING);
    add_ex(fd, 5, "eps", TTR, "200", "e", NULL);
    wait_state(fd, 5, GONE);
    systest_roundtrip(fd, f("delete %s\r\n", idt(1)), OK);
    int64_t t1 = systest_now_ms();
    close(fd);
    systest_stop(&s);

    uint32_t nums[4];
    ck_assert_uint_eq(seg_list(x.dir, nums, 4), 1);
    struct ref_seg sg;
    seg_read(x.dir, 1, &sg);
    ck_assert_msg(sg.status == REF_OK, "damaged at %zu", sg.bad_off);
    ck_assert_uint_eq(sg.len, file_size(seg_path(x.dir, 1)));
    ck_assert_uint_eq(sg.nrecs, 16);
    const struct ref_rec *r = sg.recs;
    expect_job_rec(&r[0], REF_ADD, 1, "alpha", 30000, 600000, -7, 3, 2, bin, binlen, t0, t1);
    expect_job_rec(&r[1], REF_ADD, 2, "beta", 1000, 600000, 0, 0, 0, "", 0, t0, t1);
    expect_job_rec(&r[2], REF_SCHEDULE, 3, "gamma", 5000, 600000, 2147483647, 0, 0, "s", 1, t0, t1);
    ck_assert_int_eq(r[2].time_ms, when);
    expect_id_rec(&r[3], REF_START_ATTEMPT, 1);
    expect_id_rec(&r[4], REF_FAIL_RETRY, 1);
    expect_id_rec(&r[5], REF_START_ATTEMPT, 1);
    expect_result_rec(&r[6], REF_COMPLETE, 1, "ok\r\n", 4);
    expect_id_rec(&r[7], REF_START_ATTEMPT, 2);
    expect_result_rec(&r[8], REF_FAIL, 2, "bad", 3);
    expect_id_rec(&r[9], REF_DELETE, 3);
    expect_job_rec(&r[10], REF_ADD, 4, "delta", 100, 600000, 0, 0, 0, "d", 1, t0, t1);
    expect_id_rec(&r[11], REF_START_ATTEMPT, 4);
    expect_id_rec(&r[12], REF_TIMEOUT_ATTEMPT, 4);
    expect_job_rec(&r[13], REF_ADD, 5, "eps", TTR, 200, 0, 0, 0, "e", 1, t0, t1);
    expect_id_rec(&r[14], REF_EXPIRE, 5);
    expect_id_rec(&r[15], REF_DELETE, 1);
    /* record times: in order, and when it happened */
    for (size_t i = 0; i < sg.nrecs; i++) {
        ck_assert_msg(r[i].at_ms >= t0 - 1000 && r[i].at_ms <= t1 + 1000,
                      "record %zu at %" PRId64 ", not in [%" PRId64 ", %" PRId64 "]", i, r[i].at_ms,
                      t0, t1);
        ck_assert(i == 0 || r[i].at_ms >= r[i - 1].at_ms);
    }
    /* (less a millisecond: times are cut to whole ms) */
    ck_assert_int_ge(r[12].at_ms, r[11].at_ms + 99);       /* the TTR ran out */
    ck_assert_int_ge(r[14].at_ms, r[13].created_ms + 199); /* the TTL did */
    ref_seg_free(&sg);

    /* and a replay of what we just read gives what the server said */
    systest_fx_start(&x, &s, NULL);
    fd = systest_connect(&s);
    ck_assert_int_eq(job_state(fd, 1), GONE);
    expect_result(fd, 2, 0, "bad", 3);
    ck_assert_int_eq(job_state(fd, 3), GONE);
    struct ji j;
    inspect_job(fd, 4, &j);
    ck_assert_int_eq(j.state, PENDING);
    ck_assert_uint_eq(j.attempts, 1);
    free(j.raw.p);
    ck_assert_int_eq(job_state(fd, 5), GONE);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* the directory lock */

START_TEST(test_second_server_refused)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server a, b;
    systest_fx_start(&x, &a, NULL);
    int fd = systest_connect(&a);
    add(fd, 1, "q", "one");
    int rc = systest_fx_run(&x, NULL);
    char *err = systest_slurp(x.err, NULL);
    ck_assert_msg(rc == EX_CONFIG_STATUS, "second server: exit %d, want 78; stderr: %s", rc, err);
    ck_assert_msg(err[0] != '\0', "second server: no message");
    free(err);
    /* the first one goes on, and its log is intact */
    add(fd, 2, "q", "two");
    close(fd);
    systest_stop(&a);
    systest_fx_start(&x, &b, NULL);
    fd = systest_connect(&b);
    ck_assert_int_eq(job_state(fd, 1), NEW);
    ck_assert_int_eq(job_state(fd, 2), NEW);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    close(fd);
    systest_stop(&b);
    struct ref_seg sg;
    seg_read(x.dir, 1, &sg);
    ck_assert_int_eq(sg.status, REF_OK);
    ck_assert_uint_eq(sg.nrecs, 2);
    ref_seg_free(&sg);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* run jobs */

START_TEST(test_run_not_logged)
{
    struct systest_fx x;
    systest_fx_init(&x, "persist", false);
    struct systest_server s;
    systest_fx_start(&x, &s, "-cmdlog-sync", "always", NULL);
    int client = systest_connect(&s), worker = systest_connect(&s);
    add(worker, 10, "other", "logged");
    /* completed */
    send_block(client, f("run %s rq %u 10000 3\r\n", idt(7), TTR), "abc", 3);
    systest_sends(worker, "lease rq 10000\r\n");
    expect_lease(worker, 7, "rq", TTR, "abc", 3);
    finish(worker, "complete", 7, "ok", 2, OK);
    systest_expect(client, f("+OK 1\r\n%s 1 2\r\nok\r\n", idt(7)));
    /* failed */
    send_block(client, f("run %s rq %u 10000 3\r\n", idt(8), TTR), "def", 3);
    systest_sends(worker, "lease rq 10000\r\n");
    expect_lease(worker, 8, "rq", TTR, "def", 3);
    finish(worker, "fail", 8, "no", 2, OK);
    systest_expect(client, f("+OK 1\r\n%s 0 2\r\nno\r\n", idt(8)));
    /* nobody leased it */
    send_block(client, f("run %s rq %u 100 3\r\n", idt(9), TTR), "ghi", 3);
    systest_expect(client, TO);
    /* its TTR ran out */
    send_block(client, f("run %s rq 100 10000 3\r\n", idt(11)), "jkl", 3);
    systest_sends(worker, "lease rq 10000\r\n");
    expect_lease(worker, 11, "rq", 100, "jkl", 3);
    systest_expect(client, TO);
    /* still waiting at the stop */
    send_block(client, f("run %s rq %u 60000 3\r\n", idt(12), TTR), "mno", 3);
    add(worker, 13, "other", "logged too");
    close(worker);
    systest_stop(&s);
    close(client);

    uint32_t nums[4];
    size_t count = seg_list(x.dir, nums, 4);
    ck_assert_uint_eq(count, 1);
    struct ref_seg sg;
    seg_read(x.dir, 1, &sg);
    ck_assert_int_eq(sg.status, REF_OK);
    ck_assert_uint_eq(sg.nrecs, 2);
    expect_id_rec(&sg.recs[0], REF_ADD, 10);
    expect_id_rec(&sg.recs[1], REF_ADD, 13);
    ref_seg_free(&sg);

    systest_fx_start(&x, &s, NULL);
    int fd = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    ck_assert_int_eq(job_state(fd, 12), GONE);
    ck_assert_int_eq(job_state(fd, 13), NEW);
    close(fd);
    systest_stop(&s);
    systest_fx_free(&x);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
persist_suite(void)
{
    Suite *s = suite_create("persist");
    TCase *tc;
    int timeout = 60 * systest_slow();

    tc = tcase_create("restart");
    tcase_set_timeout(tc, timeout);
    tcase_add_loop_test(tc, test_restart_keeps_everything, 0, 3);
    tcase_add_test(tc, test_restart_ttr_fresh_ttl_original);
    suite_add_tcase(s, tc);

    tc = tcase_create("kill");
    tcase_set_timeout(tc, timeout);
    tcase_add_loop_test(tc, test_kill_under_load, 0, sizeof kill_cases / sizeof kill_cases[0]);
    tcase_add_test(tc, test_kill_while_cleaning);
    tcase_add_test(tc, test_kill_many_clients);
    tcase_add_loop_test(tc, test_kill_after_last_ack, 0, sizeof kill_cases / sizeof kill_cases[0]);
    suite_add_tcase(s, tc);

    tc = tcase_create("torn");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_torn_last_record);
    suite_add_tcase(s, tc);

    tc = tcase_create("damage");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_damage_middle_record);
    tcase_add_test(tc, test_damage_earlier_segment);
    suite_add_tcase(s, tc);

    tc = tcase_create("full_disk");
    tcase_set_timeout(tc, timeout);
    tcase_add_loop_test(tc, test_full_disk, 0, 3);
    tcase_add_test(tc, test_full_disk_headroom);
    suite_add_tcase(s, tc);

    tc = tcase_create("cleaning");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_cleaning);
    suite_add_tcase(s, tc);

    tc = tcase_create("records");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_records_decode);
    suite_add_tcase(s, tc);

    tc = tcase_create("lock");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_second_server_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("run");
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test_run_not_logged);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return systest_main(persist_suite());
}
