/* cmdlog_clean.c - the cleaning pass, in chunks of bounded memory.
 *
 * A chunk reads the closed segments from where the last chunk stopped and
 * notes, per job, the position (segment, offset) of the last record that
 * ended it, until the notes reach the budget; then it rewrites every
 * segment up to there without the records of those jobs at or before that
 * position (a job id may be used again after its end).  A record that
 * supersedes the earlier ones of its key (a Hero field set again) is
 * noted the same way, but stays.  Segments are
 * streamed through cmdlog_reader, so memory is the budget plus a record
 * buffer and a write buffer, whatever the log's size. */
#include "lib/wq.h"
#include "store/cmdlog_clean.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_codec.h"
#include "store/cmdlog_files.h"
#include "store/cmdlog_reader.h"
#include "lib/log.h"
#include "lib/registry.h"

/* Per job (cmdlog_rec_key), where the last record that ended it is, or
 * that made the records before it unneeded (and is kept itself). */
struct clean_gone {
    size_t seg; /* index into the pass's segment list */
    uint64_t at;
    bool keeps; /* the record at (seg, at) stays: it superseded the others */
    size_t len;
    uint8_t key[];
};

/* What a note costs against the budget, besides its key: the element, its
 * allocator rounding and a registry slot at the table's lowest load. */
#define CLEAN_GONE_COST (sizeof(struct clean_gone) + 32)

/* Room for any record's key: a kind byte and a Workq id or a jid. */
#define CLEAN_KEY_MAX (1 + 65536)

/* The stdio buffer of a rewritten segment. */
#define CLEAN_OUT_CAP (1u << 20)

struct clean {
    int dirfd;
    uint64_t *nums; /* the closed segments, ascending; 0 once removed */
    size_t count;   /* cut at the first damaged segment */
    size_t synced;  /* segments [0, synced) fdatasync'ed by this pass */
    size_t budget;
    struct registry *gone;
    size_t gone_bytes;
    uint8_t *key;     /* CLEAN_KEY_MAX bytes */
    size_t rewritten; /* segments replaced or removed */
    uint64_t saved;   /* bytes dropped */
};

static void
clean_gone_key(const void *elem, const void **key, size_t *len)
{
    const struct clean_gone *g = elem;
    *key = g->key;
    *len = g->len;
}

static void
clean_gone_free(void *elem, void *arg)
{
    wq_free(elem);
}

static void
clean_forget(struct clean *c)
{
    registry_foreach(c->gone, clean_gone_free, NULL);
    registry_free(c->gone);
    c->gone = registry_new(clean_gone_key);
    c->gone_bytes = 0;
}

/* Note the jobs that segments from[seg], from its offset `at`, onwards end,
 * until the notes reach the budget.  *stop_seg and *stop_at get where the
 * notes stop (the offset after the last record read; UINT64_MAX when the
 * last segment was read to its end).  0, or -1 (errno). */
static int
clean_note_ends(struct clean *c, size_t seg, uint64_t at, size_t *stop_seg, uint64_t *stop_at)
{
    for (size_t i = seg; i < c->count; i++) {
        struct cmdlog_reader rd;
        if (c->nums[i] == 0)
            continue;
        if (cmdlog_reader_open(&rd, c->dirfd, c->nums[i]) != 0)
            return -1;
        struct cmdlog_rec r;
        const uint8_t *bytes;
        size_t len;
        uint64_t pos;
        enum cmdlog_read_result res = CMDLOG_READ_ERROR;
        /* Its ends drop records of earlier segments: it must be on disk
         * before they are rewritten (a closed segment may not be synced
         * yet under the policies other than always). */
        if (i >= c->synced) {
            if (fdatasync(rd.fd) != 0)
                goto failed;
            c->synced = i + 1;
        }
        while ((res = cmdlog_reader_next(&rd, &r, &bytes, &len, &pos)) == CMDLOG_READ_REC) {
            if (i == seg && pos < at)
                continue;
            bool ends = cmdlog_rec_ends_job(&r), supersedes = !ends && cmdlog_rec_supersedes(&r);
            if (!ends && !supersedes)
                continue;
            size_t klen = cmdlog_rec_key(&r, c->key, CLEAN_KEY_MAX);
            if (klen == 0)
                continue;
            struct clean_gone *g = registry_find(c->gone, c->key, klen);
            if (g == NULL) {
                g = wq_malloc(sizeof *g + klen);
                memcpy(g->key, c->key, klen);
                g->len = klen;
                registry_insert(c->gone, g);
                c->gone_bytes += CLEAN_GONE_COST + klen;
            }
            g->seg = i;
            g->at = pos;
            g->keeps = supersedes;
            if (c->gone_bytes >= c->budget) {
                cmdlog_reader_close(&rd);
                *stop_seg = i;
                *stop_at = pos + len;
                return 0;
            }
        }
        if (res == CMDLOG_READ_DAMAGED) {
            /* Replay stops here, and would cut the log here if told to:
             * the ends after it must not drop the records before it. */
            char name[CMDLOG_SEGMENT_NAME_SIZE];
            cmdlog_segment_name(c->nums[i], name);
            wq_log(LOG_LVL_WARN, "cmdlog cleaning stops at damaged segment=%s offset=%llu", name,
                   (unsigned long long)rd.off);
            c->count = i + 1;
        }
    failed:;
        int err = errno;
        cmdlog_reader_close(&rd);
        if (res == CMDLOG_READ_ERROR) {
            errno = err;
            return -1;
        }
    }
    *stop_seg = c->count - 1;
    *stop_at = UINT64_MAX;
    return 0;
}

/* Is the record r at (seg, at) one of a noted job, at or before its end
 * (before the record that superseded it)? */
static bool
clean_drops(struct clean *c, const struct cmdlog_rec *r, size_t seg, uint64_t at)
{
    size_t klen = cmdlog_rec_key(r, c->key, CLEAN_KEY_MAX);
    const struct clean_gone *g = klen > 0 ? registry_find(c->gone, c->key, klen) : NULL;
    return g != NULL &&
           (seg < g->seg || (seg == g->seg && (at < g->at || (at == g->at && !g->keeps))));
}

/* Read segment seg; write the records it keeps to out unless NULL.  Counts
 * *dropped records; *kept_bytes is the size it keeps (header included) and
 * *stop_new where the record at offset stop_at lands in it (UINT64_MAX if
 * no record starts there).  The read's result, or CMDLOG_READ_ERROR when a
 * write failed (errno). */
static enum cmdlog_read_result
clean_scan(struct clean *c, size_t seg, FILE *out, uint64_t stop_at, size_t *dropped,
           uint64_t *kept_bytes, uint64_t *stop_new)
{
    struct cmdlog_reader rd;
    if (cmdlog_reader_open(&rd, c->dirfd, c->nums[seg]) != 0)
        return CMDLOG_READ_ERROR;
    *dropped = 0;
    *kept_bytes = CMDLOG_HEADER_LEN;
    *stop_new = UINT64_MAX;
    if (out != NULL && fwrite(cmdlog_header, CMDLOG_HEADER_LEN, 1, out) != 1)
        goto failed;
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len;
    uint64_t at;
    enum cmdlog_read_result res;
    while ((res = cmdlog_reader_next(&rd, &r, &bytes, &len, &at)) == CMDLOG_READ_REC) {
        if (at == stop_at)
            *stop_new = *kept_bytes;
        if (clean_drops(c, &r, seg, at)) {
            (*dropped)++;
            continue;
        }
        if (out != NULL && fwrite(bytes, len, 1, out) != 1)
            goto failed;
        *kept_bytes += len;
    }
    if (out != NULL && res == CMDLOG_READ_END && fflush(out) != 0)
        goto failed;
    cmdlog_reader_close(&rd);
    return res;
failed:;
    int err = errno;
    cmdlog_reader_close(&rd);
    errno = err;
    return CMDLOG_READ_ERROR;
}

/* Rewrite segment seg without the noted jobs' records, through a
 * temporary file, fsync and rename, or remove it if nothing is left; then
 * sync the directory, so that a segment's change is on disk before a later
 * segment's (which may drop the record that ended a job).  A segment that
 * does not read cleanly to its end is left alone.  *stop_new: where
 * offset stop_at of the segment is afterwards.  0, or -1 (errno). */
static int
clean_rewrite(struct clean *c, size_t seg, uint64_t stop_at, uint64_t *stop_new)
{
    size_t dropped;
    uint64_t kept;
    if (c->nums[seg] == 0) {
        *stop_new = UINT64_MAX;
        return 0;
    }
    enum cmdlog_read_result res = clean_scan(c, seg, NULL, stop_at, &dropped, &kept, stop_new);
    if (res == CMDLOG_READ_ERROR)
        return -1;
    if (res != CMDLOG_READ_END || dropped == 0) {
        *stop_new = stop_at;
        return 0;
    }
    char name[CMDLOG_SEGMENT_NAME_SIZE], tmp[CMDLOG_SEGMENT_NAME_SIZE + 4];
    cmdlog_segment_name(c->nums[seg], name);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    struct stat st;
    if (fstatat(c->dirfd, name, &st, 0) != 0)
        return -1;
    if (kept == CMDLOG_HEADER_LEN) {
        if (unlinkat(c->dirfd, name, 0) != 0)
            return -1;
        c->nums[seg] = 0;
        kept = 0;
    } else {
        int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (out == NULL) {
            int err = errno;
            if (fd >= 0)
                close(fd);
            unlinkat(c->dirfd, tmp, 0);
            errno = err;
            return -1;
        }
        setvbuf(out, NULL, _IOFBF, CLEAN_OUT_CAP);
        res = clean_scan(c, seg, out, stop_at, &dropped, &kept, stop_new);
        int rc = res == CMDLOG_READ_END ? fsync(fd) : -1;
        if (res == CMDLOG_READ_DAMAGED)
            errno = EIO; /* changed under us */
        int err = errno;
        fclose(out);
        if (rc == 0) {
            rc = renameat(c->dirfd, tmp, c->dirfd, name);
            err = errno;
        }
        if (rc != 0) {
            unlinkat(c->dirfd, tmp, 0);
            errno = err;
            return -1;
        }
    }
    wq_log(LOG_LVL_DEBUG, "cmdlog cleaned segment=%s bytes=%llu->%llu", name,
           (unsigned long long)st.st_size, (unsigned long long)kept);
    c->rewritten++;
    c->saved += (uint64_t)st.st_size - kept;
    return fsync(c->dirfd);
}

static uint64_t
clean_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int
cmdlog_clean(int dirfd, uint64_t below, size_t budget)
{
    uint64_t started = clean_now_ms();
    uint64_t *nums;
    size_t count;
    if (cmdlog_files_list(dirfd, &nums, &count, NULL) != 0) {
        wq_log(LOG_LVL_WARN, "cmdlog cleaning cannot list the directory: %s", strerror(errno));
        return -1;
    }
    while (count > 0 && nums[count - 1] >= below)
        count--;
    struct clean c = {
        .dirfd = dirfd,
        .nums = nums,
        .count = count,
        .budget = budget,
        .gone = registry_new(clean_gone_key),
        .key = wq_malloc(CLEAN_KEY_MAX),
    };
    size_t seg = 0, chunks = 0;
    uint64_t at = 0;
    int rc = 0;
    while (rc == 0 && seg < c.count) {
        size_t stop_seg;
        uint64_t stop_at, stop_new = 0;
        rc = clean_note_ends(&c, seg, at, &stop_seg, &stop_at);
        if (rc != 0 || registry_count(c.gone) == 0)
            break;
        chunks++;
        for (size_t i = 0; i <= stop_seg && rc == 0; i++)
            rc = clean_rewrite(&c, i, i == stop_seg ? stop_at : UINT64_MAX, &stop_new);
        if (rc != 0)
            break;
        clean_forget(&c);
        if (stop_at == UINT64_MAX || stop_new == UINT64_MAX) {
            seg = stop_seg + 1;
            at = 0;
        } else {
            seg = stop_seg;
            at = stop_new;
        }
    }
    if (rc != 0) /* errno is the failure's: nothing ran since */
        wq_log(LOG_LVL_WARN, "cmdlog cleaning failed: %s", strerror(errno));
    else if (c.rewritten > 0)
        wq_log(LOG_LVL_INFO,
               "cmdlog cleaned segments=%zu of %zu chunks=%zu bytes_saved=%llu ms=%llu",
               c.rewritten, count, chunks, (unsigned long long)c.saved,
               (unsigned long long)(clean_now_ms() - started));
    clean_forget(&c);
    registry_free(c.gone);
    wq_free(c.key);
    wq_free(nums);
    return rc;
}
