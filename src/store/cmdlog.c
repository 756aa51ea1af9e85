/* cmdlog.c - the command log: the pass's batch of records and its write
 * (event loop), the sync thread, the cleaner thread. */
#include "lib/wq.h"
#include "store/cmdlog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_clean.h"
#include "store/cmdlog_files.h"
#include "lib/hist.h"
#include "lib/log.h"

/* A batch buffer larger than this is freed once written, so that one burst
 * does not keep its memory. */
#define CMDLOG_BATCH_KEEP (1u << 20)
/* Under always, how long the sync thread may wait, at most, for the clients
 * its last sync released to send their next records (see
 * cmdlog_sync_main); it never waits longer than twice what that sync took. */
#define CMDLOG_GATHER_MAX_NS 2000000u
/* Under always, when the last sync covered at least CMDLOG_POLL_MIN_BATCH
 * records in less than CMDLOG_POLL_MAX_SYNC_NS, a thread about to wait for
 * the other one polls instead of sleeping, for at most CMDLOG_POLL_NS:
 * waking a sleeping thread costs 30-40 us on a small virtual machine, twice
 * per sync, against syncs of 100-150 us, and it delays every client of the
 * sync.  With fewer clients per sync, or slower syncs, the CPU burnt buys
 * little (doc/design.md). */
#define CMDLOG_POLL_NS          300000u
#define CMDLOG_POLL_MIN_BATCH   12u
#define CMDLOG_POLL_MAX_SYNC_NS 1000000u
/* Under always, the open segment's blocks are allocated this far ahead of
 * its records (fallocate), so that a sync writes data only: appending would
 * change the file's size with every write, and each fdatasync would then
 * wait for a journal commit (doc/benchmarks.md).  Segments smaller than
 * CMDLOG_PREALLOC_MIN are not worth it. */
#define CMDLOG_PREALLOC_STEP (8u << 20)
#define CMDLOG_PREALLOC_MIN  (1u << 20)
/* Under preallocation, the log keeps at least this much allocated past its
 * records (past the segment's end too, until it is closed and trimmed).
 * When the disk cannot give it, the server turns read-only at once: the
 * records already made still fit, so no reply waits for space, and new
 * changes are refused before they are applied. */
#define CMDLOG_HEADROOM (4u << 20)
/* fallocate leaves its blocks unwritten, and the first write into such a
 * block makes the next fdatasync wait for a journal commit, where a write
 * over a block already written makes it flush the data only.  So under
 * preallocation the blocks just ahead of the records are also written with
 * zeros, CMDLOG_ZERO_STEP at a time, to stay CMDLOG_ZERO_AHEAD ahead. */
#define CMDLOG_ZERO_STEP  (256u << 10)
#define CMDLOG_ZERO_AHEAD (1u << 20)

/* Records of the batch bound for one segment. */
struct chunk {
    uint64_t seg;
    size_t off, len;
    uint64_t lsn; /* sequence number of its last record */
};

struct cmdlog {
    struct cmdlog_config cfg;
    char dir[4096];
    int dirfd;
    int event_fd;

    /* Event loop only. */
    uint8_t *buf; /* the batch: encoded records not yet written */
    size_t len, cap;
    struct chunk *chunks;
    size_t nchunks, chunks_cap;
    size_t chunks_done;    /* of a batch whose write failed part way */
    uint64_t seg;          /* segment new records go to */
    uint64_t seg_bytes;    /* its size once the batch is written */
    uint64_t replayed_seg; /* the last segment found at start, 0 if none */
    int fd;                /* the segment being written, -1 before the first */
    uint64_t fd_seg;
    uint64_t fd_size;   /* its bytes that are whole records */
    uint64_t fd_alloc;  /* its size: fd_size, plus zeros preallocated */
    uint64_t fd_zeroed; /* up to here written: records, then zeros */
    bool fd_torn;       /* a failed write left bytes past fd_size */
    bool prealloc;      /* preallocate (always, large segments) */
    uint64_t appended, written;
    bool write_failed;
    bool space_low;       /* the headroom could not be allocated */
    uint64_t retry_ms;    /* when a failed write (or the headroom) may be tried again */
    uint64_t synced_seen; /* as of the last ack */
    bool poll_seen;       /* the last sync asked for polling, as of the last ack */
    uint64_t poll_since;  /* when the loop last made progress, under always */
    uint64_t poll_appended, poll_released; /* as it was then */
    uint64_t bytes_written;                /* handed to the kernel since start */
    uint64_t replay_records;               /* read back at start */
    uint64_t replay_ms;                    /* and how long that took */
    bool sync_failed_seen;

    /* Shared with the threads, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t sync_wake, clean_wake;
    uint64_t to_sync; /* written records, published for the sync thread */
    int sync_fd;      /* the segment being written */
    bool rotated;     /* a segment was created or closed since the last sync */
    bool sync_idle;   /* the sync thread waits for work with no deadline */
    bool gathering;   /* ... or for to_sync to reach gather_goal */
    uint64_t gather_goal;
    int busy_fd;  /* the fd the sync thread is syncing, -1 */
    int close_fd; /* an fd the loop let go of while it was busy, -1 */
    uint64_t synced;
    bool poll; /* the last sync covered many records, quickly (polling pays) */
    bool sync_failed;
    uint64_t open_seg; /* segments below it are closed for good */
    bool stop;
    struct hist sync_hist;  /* the syncs' durations */
    uint64_t sync_failures; /* syncs that failed */
    uint64_t cleanings;     /* cleaning passes done */

    pthread_t syncer, cleaner;
    bool has_syncer, has_cleaner;
};

int
cmdlog_sync_parse(const char *s, enum cmdlog_sync *out)
{
    if (strcmp(s, "interval") == 0)
        *out = CMDLOG_SYNC_INTERVAL;
    else if (strcmp(s, "os") == 0)
        *out = CMDLOG_SYNC_OS;
    else if (strcmp(s, "always") == 0)
        *out = CMDLOG_SYNC_ALWAYS;
    else
        return -1;
    return 0;
}

static uint64_t
cmdlog_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
cmdlog_mono_ms(void)
{
    return cmdlog_mono_ns() / 1000000u;
}

/* Wait on cv until monotonic ns `at` (or a signal). */
static void
cmdlog_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, uint64_t at)
{
    struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
    pthread_cond_timedwait(cv, m, &ts);
}

/* Tell the event loop something changed (synced, or a sync failed). */
static void
cmdlog_notify(struct cmdlog *l)
{
    uint64_t one = 1;
    ssize_t w = write(l->event_fd, &one, sizeof one);
    (void)w; /* a full counter still wakes the loop */
}

struct cmdlog *
cmdlog_open(const struct cmdlog_config *cfg)
{
    if (mkdir(cfg->dir, 0755) != 0 && errno != EEXIST) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot create dir=%s: %s", cfg->dir, strerror(errno));
        return NULL;
    }
    int dirfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot open dir=%s: %s", cfg->dir, strerror(errno));
        return NULL;
    }
    if (flock(dirfd, LOCK_EX | LOCK_NB) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog dir=%s is in use by another server", cfg->dir);
        close(dirfd);
        return NULL;
    }
    if (cmdlog_files_remove_tmp(dirfd) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot clear dir=%s: %s", cfg->dir, strerror(errno));
        close(dirfd);
        return NULL;
    }
    struct cmdlog *l = wq_calloc(1, sizeof *l);
    l->cfg = *cfg;
    snprintf(l->dir, sizeof l->dir, "%s", cfg->dir);
    l->cfg.dir = l->dir;
    l->dirfd = dirfd;
    l->fd = l->sync_fd = l->busy_fd = l->close_fd = -1;
    l->seg = 1;
    l->prealloc = cfg->sync == CMDLOG_SYNC_ALWAYS && cfg->seg_size >= CMDLOG_PREALLOC_MIN;
    l->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&l->lock, NULL);
    hist_init(&l->sync_hist, hist_sync_bounds, hist_sync_nbounds);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->sync_wake, &ca);
    pthread_cond_init(&l->clean_wake, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

int
cmdlog_replay(struct cmdlog *l, const struct cmdlog_replay_ops *ops, void *arg, uint64_t now_ms)
{
    uint64_t last, size, records, workq, faktory;
    uint64_t t0 = cmdlog_mono_ms();
    if (cmdlog_files_replay(l->dirfd, l->dir, ops, arg, now_ms, l->cfg.truncate_damage, &last,
                            &size, &records) != 0)
        return -1;
    l->replayed_seg = last;
    l->replay_records = records;
    l->replay_ms = cmdlog_mono_ms() - t0;
    l->seg = last > 0 ? last : 1;
    l->seg_bytes = size;
    l->open_seg = l->seg;
    ops->jobs(arg, &workq, &faktory);
    wq_log(LOG_LVL_INFO, "cmdlog replayed records=%llu jobs=%llu segment=%llu ms=%llu",
           (unsigned long long)records, (unsigned long long)workq, (unsigned long long)l->seg,
           (unsigned long long)(cmdlog_mono_ms() - t0));
    return 0;
}

/* ---- the batch (event loop) ---- */

static void
cmdlog_reserve(struct cmdlog *l, size_t more)
{
    if (l->len + more > l->cap) {
        l->cap = WQ_MAX(l->len + more, 2 * l->cap + 4096);
        l->buf = wq_realloc(l->buf, l->cap);
    }
    if (l->nchunks == l->chunks_cap) {
        l->chunks_cap = 2 * l->chunks_cap + 8;
        l->chunks = wq_realloc(l->chunks, l->chunks_cap * sizeof *l->chunks);
    }
}

void
cmdlog_append(void *arg, const struct cmdlog_rec *r)
{
    struct cmdlog *l = arg;
    size_t size = cmdlog_rec_size(r);

    /* A segment that has reached the size limit is closed: start the next,
     * whose header goes first in the same write as its first record.  The
     * segment of the last number grows on instead: 2^64 segments are never
     * reached, but a number must never wrap to 0, a name replay refuses. */
    if (l->seg_bytes >= l->cfg.seg_size && l->seg < UINT64_MAX) {
        l->seg++;
        l->seg_bytes = 0;
    }
    size_t header = l->seg_bytes == 0 ? CMDLOG_HEADER_LEN : 0;
    cmdlog_reserve(l, header + size);
    struct chunk *last = l->nchunks > 0 ? &l->chunks[l->nchunks - 1] : NULL;
    if (last == NULL || last->seg != l->seg) {
        last = &l->chunks[l->nchunks++];
        *last = (struct chunk){.seg = l->seg, .off = l->len};
    }
    memcpy(l->buf + l->len, cmdlog_header, header);
    cmdlog_rec_encode(r, l->buf + l->len + header);
    l->len += header + size;
    last->len += header + size;
    last->lsn = ++l->appended;
    l->seg_bytes += header + size;
}

/* Let go of a segment's fd: at once, unless the sync thread is syncing it
 * right now (then it closes it when done). */
static void
cmdlog_let_go(struct cmdlog *l, int fd)
{
    if (fd < 0)
        return;
    pthread_mutex_lock(&l->lock);
    if (l->busy_fd == fd)
        l->close_fd = fd;
    else
        close(fd);
    pthread_mutex_unlock(&l->lock);
}

/* The open segment's file holds nothing past its records (it was just cut
 * there, or opened): no zeros preallocated, none written. */
static void
cmdlog_nothing_ahead(struct cmdlog *l)
{
    l->fd_alloc = l->fd_zeroed = l->fd_size;
}

/* Cut the preallocated zeros off the open segment, so that a closed
 * segment (or the last one, after a clean stop) holds exactly its records.
 * If that fails the zeros stay: replay and cleaning take them as padding. */
static void
cmdlog_trim(struct cmdlog *l)
{
    if (l->fd < 0 || l->fd_alloc <= l->fd_size || l->fd_torn)
        return;
    if (ftruncate(l->fd, (off_t)l->fd_size) != 0)
        wq_log(LOG_LVL_WARN, "cmdlog cannot trim segment=%llu: %s", (unsigned long long)l->fd_seg,
               strerror(errno));
    cmdlog_nothing_ahead(l);
}

/* Make l->fd the file of segment seg.  A segment the log has not seen yet
 * must not exist (O_EXCL): its first write starts with the header. */
static int
cmdlog_use_segment(struct cmdlog *l, uint64_t seg)
{
    if (l->fd >= 0 && l->fd_seg == seg)
        return 0;
    bool known = seg == l->replayed_seg;
    uint64_t size;
    int fd = cmdlog_files_open(l->dirfd, seg, O_WRONLY | O_CREAT | (known ? 0 : O_EXCL), &size);
    if (fd < 0)
        return -1;
    bool rotated = l->fd >= 0 || !known;
    cmdlog_trim(l);
    cmdlog_let_go(l, l->fd);
    l->fd = fd;
    l->fd_seg = seg;
    l->fd_size = size;
    cmdlog_nothing_ahead(l);
    l->fd_torn = false;
    pthread_mutex_lock(&l->lock);
    l->sync_fd = fd;
    l->rotated |= rotated;
    l->open_seg = seg;
    pthread_mutex_unlock(&l->lock);
    return 0;
}

/* Allocate the open segment's blocks ahead of n more bytes, if it is
 * preallocated.  Failing that (a full disk, a file system without
 * fallocate) the write just appends. */
static void
cmdlog_preallocate(struct cmdlog *l, size_t n)
{
    if (!l->prealloc || l->fd_size + n <= l->fd_alloc)
        return;
    uint64_t len = WQ_MAX((uint64_t)n, (uint64_t)CMDLOG_PREALLOC_STEP);
    if (fallocate(l->fd, 0, (off_t)l->fd_size, (off_t)len) == 0)
        l->fd_alloc = l->fd_size + len;
    else if (errno == EOPNOTSUPP)
        l->prealloc = false; /* and never ask again */
}

/* Keep CMDLOG_HEADROOM allocated past the open segment's records, under
 * preallocation; the disk's refusal turns the log read-only (space_low)
 * until a later try succeeds.  0, or -1 while space is low. */
static int
cmdlog_headroom(struct cmdlog *l)
{
    if (!l->prealloc || l->fd < 0 || l->fd_torn || l->fd_alloc >= l->fd_size + CMDLOG_HEADROOM) {
        l->space_low = false;
        return 0;
    }
    if (fallocate(l->fd, 0, (off_t)l->fd_size, (off_t)CMDLOG_PREALLOC_STEP) == 0) {
        l->fd_alloc = WQ_MAX(l->fd_alloc, l->fd_size + CMDLOG_PREALLOC_STEP);
        if (l->space_low)
            wq_log(LOG_LVL_INFO, "cmdlog has room again");
        l->space_low = false;
        return 0;
    }
    if (errno == EOPNOTSUPP) {
        l->prealloc = false;
        l->space_low = false;
        return 0;
    }
    if (!l->space_low)
        wq_log(LOG_LVL_ERROR, "cmdlog cannot allocate %u MiB ahead, read-only until it can: %s",
               CMDLOG_HEADROOM >> 20, strerror(errno));
    l->space_low = true;
    l->retry_ms = cmdlog_mono_ms() + CMDLOG_RETRY_MS;
    return -1;
}

/* Write zeros over the preallocated blocks just ahead of the open
 * segment's records, so that they are written up to CMDLOG_ZERO_AHEAD past
 * them (the first sync after each step flushes the zeros and the block
 * map; the ones after it, data only).  A failure costs speed only. */
static void
cmdlog_zero_ahead(struct cmdlog *l)
{
    static uint8_t zeros[CMDLOG_ZERO_STEP];
    if (!l->prealloc || l->fd < 0 || l->fd_torn)
        return;
    l->fd_zeroed = WQ_MAX(l->fd_zeroed, l->fd_size);
    /* Not past the segment's end either: those blocks are trimmed off. */
    uint64_t end = WQ_MIN(l->fd_alloc, WQ_MAX(l->cfg.seg_size, l->fd_size));
    while (l->fd_zeroed < l->fd_size + CMDLOG_ZERO_AHEAD && l->fd_zeroed < end) {
        size_t n = (size_t)WQ_MIN((uint64_t)sizeof zeros, end - l->fd_zeroed);
        ssize_t w = pwrite(l->fd, zeros, n, (off_t)l->fd_zeroed);
        if (w <= 0)
            return;
        l->fd_zeroed += (uint64_t)w;
    }
}

/* Write n bytes after the open segment's records, whole or not at all: a
 * failure cuts what made it (and the preallocated zeros), so that the retry
 * writes cleanly. */
static int
cmdlog_write_all(struct cmdlog *l, const uint8_t *p, size_t n)
{
    if (l->fd_torn) {
        if (ftruncate(l->fd, (off_t)l->fd_size) != 0)
            return -1;
        l->fd_torn = false;
        cmdlog_nothing_ahead(l);
    }
    cmdlog_preallocate(l, n);
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(l->fd, p + done, n - done, (off_t)(l->fd_size + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = w < 0 ? errno : ENOSPC;
            l->fd_torn = ftruncate(l->fd, (off_t)l->fd_size) != 0;
            cmdlog_nothing_ahead(l);
            errno = err;
            return -1;
        }
        done += (size_t)w;
    }
    l->fd_size += n;
    l->fd_alloc = WQ_MAX(l->fd_alloc, l->fd_size);
    l->bytes_written += n;
    return 0;
}

/* The batch is written: empty it, and give the sync thread the news. */
static void
cmdlog_written(struct cmdlog *l)
{
    l->len = 0;
    l->nchunks = 0;
    l->chunks_done = 0;
    if (l->cap > CMDLOG_BATCH_KEEP) {
        wq_free(l->buf);
        l->buf = NULL;
        l->cap = 0;
    }
}

/* Tell the sync thread how far the log is written. */
static void
cmdlog_publish(struct cmdlog *l)
{
    if (!l->has_syncer)
        return;
    pthread_mutex_lock(&l->lock);
    __atomic_store_n(&l->to_sync, l->written, __ATOMIC_RELEASE);
    if (l->sync_idle || (l->gathering && l->to_sync >= l->gather_goal))
        pthread_cond_signal(&l->sync_wake);
    pthread_mutex_unlock(&l->lock);
}

int
cmdlog_write(struct cmdlog *l)
{
    if (l->nchunks == 0 && !l->space_low)
        return 0;
    if ((l->write_failed || (l->space_low && l->nchunks == 0)) && cmdlog_mono_ms() < l->retry_ms)
        return -1;
    if (l->nchunks == 0)
        return cmdlog_headroom(l);
    uint64_t before = l->written;
    int rc = 0;
    while (rc == 0 && l->chunks_done < l->nchunks) {
        const struct chunk *ch = &l->chunks[l->chunks_done];
        rc = cmdlog_use_segment(l, ch->seg);
        if (rc == 0)
            rc = cmdlog_write_all(l, l->buf + ch->off, ch->len);
        if (rc == 0) {
            l->written = ch->lsn;
            l->chunks_done++;
        }
    }
    int err = errno;
    if (l->written != before)
        cmdlog_publish(l);
    if (rc != 0) {
        if (!l->write_failed)
            wq_log(LOG_LVL_ERROR, "cmdlog write failed, read-only until it succeeds: %s",
                   strerror(err));
        l->write_failed = true;
        l->retry_ms = cmdlog_mono_ms() + CMDLOG_RETRY_MS;
        errno = err;
        return -1;
    }
    cmdlog_written(l);
    if (l->write_failed)
        wq_log(LOG_LVL_INFO, "cmdlog writes succeed again");
    l->write_failed = false;
    rc = cmdlog_headroom(l);
    cmdlog_zero_ahead(l);
    return rc;
}

uint64_t
cmdlog_appended(const struct cmdlog *l)
{
    return l->appended;
}

uint64_t
cmdlog_released(const struct cmdlog *l)
{
    return l->cfg.sync == CMDLOG_SYNC_ALWAYS ? l->synced_seen : l->written;
}

bool
cmdlog_readonly(const struct cmdlog *l)
{
    return l->write_failed || l->sync_failed_seen || l->space_low;
}

bool
cmdlog_poll(struct cmdlog *l)
{
    if (l->cfg.sync != CMDLOG_SYNC_ALWAYS || l->appended == l->synced_seen || !l->poll_seen)
        return false;
    uint64_t now = cmdlog_mono_ns();
    if (l->appended != l->poll_appended || l->synced_seen != l->poll_released) {
        l->poll_appended = l->appended;
        l->poll_released = l->synced_seen;
        l->poll_since = now;
    }
    return now - l->poll_since < CMDLOG_POLL_NS;
}

bool
cmdlog_holds_replies(const struct cmdlog *l, uint64_t mark)
{
    if (l->appended == cmdlog_released(l))
        return false;
    return !cmdlog_readonly(l) || l->appended > mark;
}

int
cmdlog_event_fd(const struct cmdlog *l)
{
    return l->event_fd;
}

void
cmdlog_event_ack(struct cmdlog *l)
{
    uint64_t v;
    ssize_t r = read(l->event_fd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&l->lock);
    l->synced_seen = l->synced;
    l->poll_seen = l->poll;
    l->sync_failed_seen = l->sync_failed;
    pthread_mutex_unlock(&l->lock);
}

/* ---- the sync thread ---- */

/* Force what is written to disk: every file, and the directory, when a
 * segment was created or closed since the last sync (syncfs: the closed
 * segments' fds are gone, and a file per record would be a sync per
 * file); else just the open segment. */
static int
cmdlog_sync_files(int dirfd, int fd, bool rotated)
{
    if (rotated)
        return syncfs(dirfd);
    return fd >= 0 ? fdatasync(fd) : 0;
}

/* Poll, giving up the CPU between looks, until the loop has written the
 * goal, or until monotonic ns `until`, or a stop. */
static void
cmdlog_poll_for(struct cmdlog *l, uint64_t goal, uint64_t until)
{
    while (__atomic_load_n(&l->to_sync, __ATOMIC_ACQUIRE) < goal &&
           !__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE) && cmdlog_mono_ns() < until)
        sched_yield();
}

/* Sync what the loop has written, by the policy, until stopped.  Under
 * always this is group commit: a sync covers every record written while the
 * one before ran.  With many clients that alone splits them in two cohorts,
 * each waiting for two syncs per request: the records that arrive during a
 * sync wait for all of it and then for the next.  So after a sync that
 * released R records, the next one waits (at most twice as long as that
 * sync took) until 3R/4 more are written: most clients just answered have
 * sent their next commands by then, and ride along; waiting for the last
 * few would hold up all the others (3/4 measured best: doc/benchmarks.md).
 * After a sync of many records the wait starts as polling (CMDLOG_POLL_NS),
 * once the first record is there. */
static void *
cmdlog_sync_main(void *arg)
{
    struct cmdlog *l = arg;
    bool always = l->cfg.sync == CMDLOG_SYNC_ALWAYS;
    bool failing = false;
    uint64_t last_ns = 0;             /* when the last sync started */
    uint64_t gather_until = 0;        /* until when a sync waits for gather_goal */
    uint64_t poll_until = 0;          /* ... polling, not sleeping, until then */
    prctl(PR_SET_TIMERSLACK, 1000UL); /* the waits are short: 1 us slack, not 50 */
    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        if (l->to_sync == l->synced && !l->rotated) {
            l->sync_idle = true;
            pthread_cond_wait(&l->sync_wake, &l->lock);
            l->sync_idle = false;
            continue;
        }
        uint64_t now = cmdlog_mono_ns();
        if (now < poll_until && l->to_sync < l->gather_goal) {
            uint64_t goal = l->gather_goal;
            pthread_mutex_unlock(&l->lock);
            cmdlog_poll_for(l, goal, WQ_MIN(poll_until, gather_until));
            pthread_mutex_lock(&l->lock);
            poll_until = 0;
            continue;
        }
        uint64_t at = failing                       ? last_ns + CMDLOG_RETRY_MS * 1000000u
                      : !always                     ? last_ns + l->cfg.sync_int_ms * 1000000u
                      : l->to_sync < l->gather_goal ? gather_until
                                                    : now;
        if (now < at) {
            l->gathering = always && !failing;
            cmdlog_wait_until(&l->sync_wake, &l->lock, at);
            l->gathering = false;
            continue;
        }
        uint64_t target = l->to_sync;
        bool rotated = l->rotated;
        int fd = l->sync_fd;
        l->rotated = false;
        l->busy_fd = fd;
        last_ns = now;
        pthread_mutex_unlock(&l->lock);

        int rc = cmdlog_sync_files(l->dirfd, fd, rotated);
        int err = errno;
        uint64_t took = cmdlog_mono_ns() - now;

        pthread_mutex_lock(&l->lock);
        l->busy_fd = -1;
        if (l->close_fd >= 0) {
            close(l->close_fd);
            l->close_fd = -1;
        }
        bool changed = failing != (rc != 0);
        if (rc == 0)
            hist_observe(&l->sync_hist, took);
        else
            l->sync_failures++;
        if (rc == 0) {
            uint64_t batch = target - l->synced;
            l->gather_goal = target + batch * 3 / 4;
            gather_until = now + took + WQ_MIN(2 * took, CMDLOG_GATHER_MAX_NS);
            l->poll = always && batch >= CMDLOG_POLL_MIN_BATCH && took < CMDLOG_POLL_MAX_SYNC_NS;
            poll_until = l->poll ? now + took + CMDLOG_POLL_NS : 0;
            l->synced = target;
            if (failing)
                wq_log(LOG_LVL_INFO, "cmdlog syncs succeed again");
        } else {
            l->poll = false;
            poll_until = 0;
            l->rotated |= rotated;
            if (!failing)
                wq_log(LOG_LVL_ERROR, "cmdlog sync failed, read-only until it succeeds: %s",
                       strerror(err));
        }
        failing = rc != 0;
        l->sync_failed = failing;
        if (always || changed)
            cmdlog_notify(l);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* ---- the cleaner thread ---- */

static void *
cmdlog_cleaner_main(void *arg)
{
    struct cmdlog *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        uint64_t at = cmdlog_mono_ns() + l->cfg.clean_int_ms * 1000000u;
        while (!l->stop && cmdlog_mono_ns() < at)
            cmdlog_wait_until(&l->clean_wake, &l->lock, at);
        if (l->stop)
            break;
        uint64_t below = l->open_seg;
        pthread_mutex_unlock(&l->lock);
        if (below > 1)
            cmdlog_clean(l->dirfd, below, CMDLOG_CLEAN_BUDGET);
        pthread_mutex_lock(&l->lock);
        l->cleanings++;
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* Stop and join the threads that run. */
static void
cmdlog_stop_threads(struct cmdlog *l)
{
    pthread_mutex_lock(&l->lock);
    __atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&l->sync_wake);
    pthread_cond_broadcast(&l->clean_wake);
    pthread_mutex_unlock(&l->lock);
    if (l->has_syncer)
        pthread_join(l->syncer, NULL);
    if (l->has_cleaner)
        pthread_join(l->cleaner, NULL);
    l->has_syncer = l->has_cleaner = false;
}

int
cmdlog_start(struct cmdlog *l)
{
    if (l->cfg.sync != CMDLOG_SYNC_OS) {
        if (pthread_create(&l->syncer, NULL, cmdlog_sync_main, l) != 0)
            return -1;
        l->has_syncer = true;
    }
    if (pthread_create(&l->cleaner, NULL, cmdlog_cleaner_main, l) != 0) {
        cmdlog_stop_threads(l);
        return -1;
    }
    l->has_cleaner = true;
    return 0;
}

void
cmdlog_close(struct cmdlog *l)
{
    if (l == NULL)
        return;
    l->retry_ms = 0; /* one last try, whenever the last one was */
    if (cmdlog_write(l) != 0)
        wq_log(LOG_LVL_ERROR,
               "cmdlog stopping with records unwritten (none of them was "
               "acknowledged): %s",
               strerror(errno));
    cmdlog_stop_threads(l);
    cmdlog_trim(l);
    if (l->cfg.sync != CMDLOG_SYNC_OS && (l->written > l->synced || l->rotated) &&
        cmdlog_sync_files(l->dirfd, l->fd, l->rotated) != 0)
        wq_log(LOG_LVL_ERROR, "cmdlog final sync failed: %s", strerror(errno));
    if (l->close_fd >= 0)
        close(l->close_fd);
    if (l->fd >= 0)
        close(l->fd);
    close(l->dirfd); /* releases the lock */
    close(l->event_fd);
    wq_free(l->buf);
    wq_free(l->chunks);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->sync_wake);
    pthread_cond_destroy(&l->clean_wake);
    wq_free(l);
}

void
cmdlog_get_stats(struct cmdlog *l, struct cmdlog_stats *out)
{
    out->bytes_written = l->bytes_written;
    out->segment = l->seg;
    out->replay_records = l->replay_records;
    out->replay_ms = l->replay_ms;
    uint64_t *nums = NULL;
    size_t n = 0;
    out->segments = cmdlog_files_list(l->dirfd, &nums, &n, NULL) == 0 ? n : 0;
    wq_free(nums);
    pthread_mutex_lock(&l->lock);
    out->sync = l->sync_hist;
    out->sync_failures = l->sync_failures;
    out->cleanings = l->cleanings;
    pthread_mutex_unlock(&l->lock);
}
