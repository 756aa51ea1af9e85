/* cmdlog_files_replay.c - replaying a command-log directory at start:
 * every segment's records in order, through bounded reads
 * (cmdlog_reader.c), the torn tail and padding cut off, damage refused or
 * cut as asked. */
#include "lib/wq.h"
#include "store/cmdlog_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_codec.h"
#include "store/cmdlog_reader.h"
#include "lib/log.h"

/* Cut the log at segment nums[i], offset `at`: truncate it, remove later
 * ones. */
static int
cmdlog_files_cut(int dirfd, const uint64_t *nums, size_t count, size_t i, uint64_t at)
{
    if (cmdlog_files_truncate(dirfd, nums[i], at) != 0)
        return -1;
    for (size_t k = i + 1; k < count; k++) {
        char name[CMDLOG_SEGMENT_NAME_SIZE];
        cmdlog_segment_name(nums[k], name);
        if (unlinkat(dirfd, name, 0) != 0)
            return -1;
        wq_log(LOG_LVL_WARN, "cmdlog removed segment=%s after the cut", name);
    }
    return fsync(dirfd);
}

/* A replay in progress. */
struct replay {
    int dirfd;
    const char *dir;
    const struct cmdlog_replay_ops *ops;
    void *arg;
    uint64_t now_ms;
    uint64_t records;
};

/* How a segment's records ended. */
struct replay_end {
    uint64_t at;   /* where the records end */
    uint64_t size; /* the file's size */
    bool damaged;  /* bytes after `at` that are no torn tail */
    bool padded;   /* only zeros after `at` */
};

/* Refuse what is in the directory before anything is read: a name that
 * looks like a segment's and is none, or a segment that is not a regular
 * file.  0, or -1 after logging the file's path and why. */
static int
cmdlog_files_refuse(const struct replay *rp, const uint64_t *nums, size_t count, const char *stray)
{
    if (stray != NULL) {
        wq_log(LOG_LVL_ERROR,
               "cmdlog refused path=%s/%s: not a segment name (9 digits, or more without a "
               "leading zero, from 1 to %" PRIu64 ")",
               rp->dir, stray, UINT64_MAX);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        char name[CMDLOG_SEGMENT_NAME_SIZE];
        cmdlog_segment_name(nums[i], name);
        struct stat st;
        if (fstatat(rp->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            wq_log(LOG_LVL_ERROR, "cmdlog cannot read segment=%s: %s", name, strerror(errno));
            return -1;
        }
        const char *kind = cmdlog_files_kind(st.st_mode);
        if (kind != NULL) {
            wq_log(LOG_LVL_ERROR, "cmdlog refused path=%s/%s: %s, not a regular file", rp->dir,
                   name, kind);
            return -1;
        }
    }
    return 0;
}

static uint64_t
cmdlog_files_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Is the garbage after the last record of the last segment a torn tail?
 * Damage if a valid record starts after it (or if the scan cannot tell).
 * 0, or -1 (errno). */
static int
cmdlog_files_tail(const char *name, int fd, struct replay_end *e)
{
    struct cmdlog_scan_stats st;
    uint64_t t0 = cmdlog_files_ms();
    enum cmdlog_scan_result res = cmdlog_scan(fd, e->at + 1, e->size, NULL, &st);
    int err = errno;
    static const char *const results[] = {"torn tail", "valid record", "gave up", "error"};
    wq_log(LOG_LVL_DEBUG,
           "cmdlog recovery scan segment=%s offset=%" PRIu64 " bytes=%" PRIu64
           " candidates=%" PRIu64 " crc_checks=%" PRIu64 " crc_bytes=%" PRIu64
           " max_waiting=%" PRIu64 " ms=%" PRIu64 " result=%s",
           name, e->at, e->size - e->at, st.candidates, st.crc_checks, st.crc_bytes, st.max_waiting,
           cmdlog_files_ms() - t0, results[res]);
    if (res == CMDLOG_SCAN_ERROR) {
        errno = err;
        return -1;
    }
    if (res == CMDLOG_SCAN_GAVE_UP)
        wq_log(LOG_LVL_ERROR,
               "cmdlog recovery scan gave up segment=%s offset=%" PRIu64 " candidates=%" PRIu64
               ": the bytes after it claim more records than the scan follows; taken as damage",
               name, e->at, st.candidates);
    e->damaged = res != CMDLOG_SCAN_NONE;
    return 0;
}

/* Replay the records of segment n through rp->ops, with a bounded
 * buffer, and say how they ended.  0, or -1 after logging why. */
static int
cmdlog_files_replay_one(struct replay *rp, uint64_t n, bool is_last, struct replay_end *e)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    cmdlog_segment_name(n, name);
    struct cmdlog_reader rd;
    if (cmdlog_reader_open(&rd, rp->dirfd, n) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot read segment=%s: %s", name, strerror(errno));
        return -1;
    }
    enum cmdlog_read_result res;
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len;
    uint64_t off;
    while ((res = cmdlog_reader_next(&rd, &r, &bytes, &len, &off)) == CMDLOG_READ_REC) {
        rp->ops->apply(rp->arg, &r, rp->now_ms);
        rp->records++;
    }
    *e = (struct replay_end){.at = rd.off, .size = rd.size};
    int rc = 0, z;
    if (res == CMDLOG_READ_END) {
        e->padded = e->at < e->size;
    } else if (res == CMDLOG_READ_DAMAGED && rd.off == 0) {
        /* No whole header.  A crash before the first write was whole
         * leaves part of it (then perhaps preallocated zeros), or only
         * zeros. */
        size_t k = 0;
        while (k < rd.end && k < CMDLOG_HEADER_LEN && rd.buf[k] == cmdlog_header[k])
            k++;
        if ((z = cmdlog_reader_zeros(rd.fd, k, e->size)) < 0)
            rc = -1;
        e->padded = k == 0 && z == 1;
        e->damaged = !e->padded && !(is_last && z == 1);
    } else if (res == CMDLOG_READ_DAMAGED) {
        e->damaged = !is_last;
        if (is_last)
            rc = cmdlog_files_tail(name, rd.fd, e);
    } else {
        rc = -1;
    }
    if (rc != 0)
        wq_log(LOG_LVL_ERROR, "cmdlog cannot read segment=%s: %s", name, strerror(errno));
    cmdlog_reader_close(&rd);
    return rc;
}

/* Replay stops at damage (segment i of nums[0..count), at offset at of
 * its size bytes) without -cmdlog-truncate: say how to start anyway, and
 * what that would drop, so that the operator can choose. */
static void
cmdlog_files_damage_hint(const struct replay *rp, const uint64_t *nums, size_t count, size_t i,
                         uint64_t at, uint64_t size)
{
    uint64_t later_bytes = 0, workq, faktory;
    rp->ops->jobs(rp->arg, &workq, &faktory);
    for (size_t k = i + 1; k < count; k++) {
        char name[CMDLOG_SEGMENT_NAME_SIZE];
        struct stat st;
        cmdlog_segment_name(nums[k], name);
        if (fstatat(rp->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            later_bytes += (uint64_t)st.st_size;
    }
    wq_log(LOG_LVL_ERROR,
           "cmdlog cannot start past the damage; to start with what comes before it, start once "
           "with -cmdlog-truncate, which cuts the log there and drops bytes=%" PRIu64
           " of that segment and segments=%zu after it (bytes=%" PRIu64
           "); the jobs before the damage, which it keeps: %" PRIu64 " Workq, %" PRIu64 " Faktory",
           size > at ? size - at : 0, count - i - 1, later_bytes, workq, faktory);
}

int
cmdlog_files_replay(int dirfd, const char *dir, const struct cmdlog_replay_ops *ops, void *arg,
                    uint64_t now_ms, bool truncate, uint64_t *last, uint64_t *last_size,
                    uint64_t *records)
{
    uint64_t *nums;
    size_t count;
    char *stray = NULL;
    *last = 0;
    *last_size = 0;
    *records = 0;
    if (cmdlog_files_list(dirfd, &nums, &count, &stray) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot list the directory: %s", strerror(errno));
        return -1;
    }
    struct replay rp = {dirfd, dir, ops, arg, now_ms, 0};
    int rc = cmdlog_files_refuse(&rp, nums, count, stray);
    for (size_t i = 0; i < count && rc == 0; i++) {
        char name[CMDLOG_SEGMENT_NAME_SIZE];
        cmdlog_segment_name(nums[i], name);
        struct replay_end e;
        if (cmdlog_files_replay_one(&rp, nums[i], i + 1 == count, &e) != 0) {
            rc = -1;
            break;
        }
        if (e.damaged) {
            wq_log(LOG_LVL_ERROR, "cmdlog damaged segment=%s offset=%" PRIu64 "%s", name, e.at,
                   truncate ? ": cutting the log there as asked" : "");
            if (!truncate)
                cmdlog_files_damage_hint(&rp, nums, count, i, e.at, e.size);
            if (!truncate || cmdlog_files_cut(dirfd, nums, count, i, e.at) != 0)
                rc = -1;
            count = i + 1; /* nothing after the cut */
        } else if (e.at < e.size) {
            if (e.padded)
                wq_log(LOG_LVL_DEBUG,
                       "cmdlog cut padding segment=%s offset=%" PRIu64 " bytes=%" PRIu64, name,
                       e.at, e.size - e.at);
            else
                wq_log(LOG_LVL_WARN,
                       "cmdlog cut torn tail segment=%s offset=%" PRIu64 " bytes=%" PRIu64, name,
                       e.at, e.size - e.at);
            if (cmdlog_files_truncate(dirfd, nums[i], e.at) != 0)
                rc = -1;
        }
        if (rc == 0 && i + 1 == count) {
            *last = nums[i];
            *last_size = e.at;
        }
    }
    *records = rp.records;
    wq_free(stray);
    wq_free(nums);
    return rc;
}
