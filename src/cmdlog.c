/* cmdlog.c - the command log: batches, the writer and cleaner threads. */
#include "wq.h"
#include "cmdlog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "cmdlog_files.h"
#include "core.h"
#include "log.h"

/* How long the writer waits before retrying after a write error. */
#define CMDLOG_RETRY_MS 200

/* Bytes bound for one segment, inside a batch. */
struct chunk {
    uint32_t seg;
    size_t   off, len;
    size_t   done; /* bytes of it already written */
};

/* Records waiting to be written, and where they go. */
struct batch {
    uint8_t      *buf;
    size_t        len, cap;
    struct chunk *chunks;
    size_t        nchunks, chunks_cap;
    uint64_t      last_lsn; /* sequence number of its last record */
};

struct cmdlog {
    struct cmdlog_config cfg;
    char                 dir[4096];
    int                  dirfd;
    int                  event_fd;

    /* Event-loop side (touched only by the loop, except under `lock`). */
    uint32_t seg;       /* segment new records go to */
    uint64_t seg_bytes; /* its size once everything appended is written */
    uint64_t appended;
    uint64_t durable_seen; /* as of the last ack */
    bool     readonly_seen;

    pthread_mutex_t lock;
    pthread_cond_t  wake;       /* the writer's */
    pthread_cond_t  clean_wake; /* the cleaner's */
    struct batch    active;  /* appends go here (under lock) */
    uint64_t        durable; /* under lock */
    bool            readonly;
    bool            stop;
    uint32_t        writing_seg; /* segment the writer last opened (under lock) */

    /* Writer thread only. */
    struct batch writing;
    int          fd; /* open segment */
    uint32_t     fd_seg;
    uint64_t     fd_size;  /* bytes in it that are known good */
    bool         dirty;    /* written since the last sync */
    uint64_t     last_sync_ms;

    pthread_t writer, cleaner;
    bool      threads;
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
cmdlog_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Tell the event loop something changed (durable or read-only). */
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
    struct cmdlog *l = wq_calloc(1, sizeof *l);
    l->cfg = *cfg;
    snprintf(l->dir, sizeof l->dir, "%s", cfg->dir);
    l->cfg.dir = l->dir;
    l->dirfd = dirfd;
    l->fd = -1;
    l->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->wake, &ca);
    pthread_cond_init(&l->clean_wake, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

int
cmdlog_replay(struct cmdlog *l, struct core *core, uint64_t now_ms)
{
    uint32_t last;
    uint64_t size, records;
    uint64_t t0 = cmdlog_mono_ms();
    if (cmdlog_files_replay(l->dirfd, core, now_ms, l->cfg.truncate_damage, &last, &size,
                            &records) != 0)
        return -1;
    l->seg = last > 0 ? last : 1;
    l->seg_bytes = size;
    wq_log(LOG_LVL_INFO, "cmdlog replayed records=%llu jobs=%llu segment=%u ms=%llu",
           (unsigned long long)records, (unsigned long long)core_job_count(core), l->seg,
           (unsigned long long)(cmdlog_mono_ms() - t0));
    return 0;
}

/* ---- appending (event loop) ---- */

static void
batch_reserve(struct batch *b, size_t more)
{
    if (b->len + more > b->cap) {
        b->cap = WQ_MAX(b->len + more, 2 * b->cap + 4096);
        b->buf = wq_realloc(b->buf, b->cap);
    }
    if (b->nchunks == b->chunks_cap) {
        b->chunks_cap = 2 * b->chunks_cap + 8;
        b->chunks = wq_realloc(b->chunks, b->chunks_cap * sizeof *b->chunks);
    }
}

void
cmdlog_append(void *arg, const struct cmdlog_rec *r)
{
    struct cmdlog *l = arg;
    size_t size = cmdlog_rec_size(r);

    /* A segment that has reached the size limit is closed: start the next. */
    if (l->seg_bytes >= l->cfg.seg_size) {
        l->seg++;
        l->seg_bytes = 0;
    }
    if (l->seg_bytes == 0)
        l->seg_bytes = CMDLOG_HEADER_LEN; /* the writer puts the header first */
    l->seg_bytes += size;
    l->appended++;

    pthread_mutex_lock(&l->lock);
    struct batch *b = &l->active;
    batch_reserve(b, size);
    cmdlog_rec_encode(r, b->buf + b->len);
    struct chunk *last = b->nchunks ? &b->chunks[b->nchunks - 1] : NULL;
    if (last != NULL && last->seg == l->seg) {
        last->len += size;
    } else {
        b->chunks[b->nchunks++] = (struct chunk){l->seg, b->len, size, 0};
    }
    b->len += size;
    b->last_lsn = l->appended;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

uint64_t
cmdlog_appended(const struct cmdlog *l)
{
    return l->appended;
}

uint64_t
cmdlog_durable(const struct cmdlog *l)
{
    return l->durable_seen;
}

bool
cmdlog_readonly(const struct cmdlog *l)
{
    return l->readonly_seen;
}

bool
cmdlog_holds_replies(const struct cmdlog *l)
{
    /* While read-only, replies that do not follow a held one go out: reads
     * keep working and refusals are answered at once. */
    return l->cfg.sync == CMDLOG_SYNC_ALWAYS && !l->readonly_seen && l->appended > l->durable_seen;
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
    l->durable_seen = l->durable;
    l->readonly_seen = l->readonly;
    pthread_mutex_unlock(&l->lock);
}

/* ---- the writer thread ---- */

static int
cmdlog_sync_fd(struct cmdlog *l)
{
    if (l->fd < 0 || !l->dirty)
        return 0;
    if (fdatasync(l->fd) != 0)
        return -1;
    l->dirty = false;
    l->last_sync_ms = cmdlog_mono_ms();
    return 0;
}

/* Make l->fd the file of segment seg, syncing and closing the previous one
 * and writing the header of a new one. */
static int
cmdlog_open_segment(struct cmdlog *l, uint32_t seg)
{
    if (l->fd >= 0 && l->fd_seg == seg)
        return 0;
    if (l->fd >= 0) {
        if (l->cfg.sync != CMDLOG_SYNC_OS && cmdlog_sync_fd(l) != 0)
            return -1;
        close(l->fd);
        l->fd = -1;
    }
    char name[14];
    cmdlog_segment_name(seg, name);
    int fd = openat(l->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    l->fd = fd;
    l->fd_seg = seg;
    l->fd_size = (uint64_t)st.st_size;
    if (l->fd_size == 0) {
        if (write(fd, cmdlog_header, CMDLOG_HEADER_LEN) != CMDLOG_HEADER_LEN) {
            if (ftruncate(fd, 0) != 0) {
                /* the next attempt truncates again */
            }
            close(fd);
            l->fd = -1;
            return -1;
        }
        l->fd_size = CMDLOG_HEADER_LEN;
        l->dirty = true;
        /* The new file's name must survive a crash too. */
        if (l->cfg.sync != CMDLOG_SYNC_OS && fsync(l->dirfd) != 0)
            return -1;
    }
    pthread_mutex_lock(&l->lock);
    l->writing_seg = seg;
    pthread_mutex_unlock(&l->lock);
    return 0;
}

/* Write what is left of the writing batch.  On error, cut the segment back
 * to its last whole record so that a retry appends cleanly. */
static int
cmdlog_write_batch(struct cmdlog *l)
{
    struct batch *b = &l->writing;
    for (size_t i = 0; i < b->nchunks; i++) {
        struct chunk *ch = &b->chunks[i];
        if (ch->done == ch->len)
            continue;
        if (cmdlog_open_segment(l, ch->seg) != 0)
            return -1;
        while (ch->done < ch->len) {
            ssize_t w = write(l->fd, b->buf + ch->off + ch->done, ch->len - ch->done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int err = w < 0 ? errno : ENOSPC;
                /* Records are whole or absent: drop the part of this chunk
                 * that made it, and write the whole chunk again later. */
                if (ftruncate(l->fd, (off_t)l->fd_size) != 0) {
                    close(l->fd);
                    l->fd = -1;
                }
                ch->done = 0;
                errno = err;
                return -1;
            }
            ch->done += (size_t)w;
        }
        l->fd_size += ch->len;
        l->dirty = true;
    }
    if (l->cfg.sync == CMDLOG_SYNC_ALWAYS && cmdlog_sync_fd(l) != 0)
        return -1;
    return 0;
}

static void
batch_clear(struct batch *b)
{
    b->len = 0;
    b->nchunks = 0;
}

static void *
cmdlog_writer_main(void *arg)
{
    struct cmdlog *l = arg;
    bool failing = false;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        bool have = l->writing.nchunks > 0 || l->active.nchunks > 0;
        bool sync_due = l->cfg.sync == CMDLOG_SYNC_INTERVAL && l->dirty &&
                        cmdlog_mono_ms() >= l->last_sync_ms + l->cfg.sync_int_ms;
        if (!have && !sync_due) {
            if (l->stop)
                break;
            if (l->cfg.sync == CMDLOG_SYNC_INTERVAL && l->dirty) {
                uint64_t at = l->last_sync_ms + l->cfg.sync_int_ms;
                struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000L};
                pthread_cond_timedwait(&l->wake, &l->lock, &ts);
            } else {
                pthread_cond_wait(&l->wake, &l->lock);
            }
            continue;
        }
        if (l->writing.nchunks == 0 && l->active.nchunks > 0) {
            struct batch t = l->writing;
            l->writing = l->active;
            l->active = t;
            batch_clear(&l->active);
        }
        pthread_mutex_unlock(&l->lock);

        int rc = l->writing.nchunks > 0 ? cmdlog_write_batch(l) : 0;
        if (rc == 0 && sync_due)
            rc = cmdlog_sync_fd(l);
        int err = errno;

        pthread_mutex_lock(&l->lock);
        if (rc == 0) {
            if (l->writing.nchunks > 0)
                l->durable = l->writing.last_lsn;
            batch_clear(&l->writing);
            if (failing)
                wq_log(LOG_LVL_INFO, "cmdlog writes succeed again: leaving read-only mode");
            failing = false;
            l->readonly = false;
            cmdlog_notify(l);
        } else {
            if (!failing)
                wq_log(LOG_LVL_ERROR, "cmdlog write failed, read-only until it succeeds: %s",
                       strerror(err));
            failing = true;
            l->readonly = true;
            cmdlog_notify(l);
            if (l->stop) {
                wq_log(LOG_LVL_ERROR, "cmdlog stopping with records unwritten: %s",
                       l->cfg.sync == CMDLOG_SYNC_ALWAYS ? "none of them was acknowledged"
                                                        : "they are lost");
                break;
            }
            uint64_t at = cmdlog_mono_ms() + CMDLOG_RETRY_MS;
            struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000L};
            pthread_cond_timedwait(&l->wake, &l->lock, &ts);
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (l->cfg.sync != CMDLOG_SYNC_OS)
        cmdlog_sync_fd(l);
    return NULL;
}

/* ---- the cleaner thread ---- */

static void *
cmdlog_cleaner_main(void *arg)
{
    struct cmdlog *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        uint64_t at = cmdlog_mono_ms() + l->cfg.clean_int_ms;
        struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000L};
        while (!l->stop && cmdlog_mono_ms() < at)
            pthread_cond_timedwait(&l->clean_wake, &l->lock, &ts);
        if (l->stop)
            break;
        /* Segments below the one being written are closed for good. */
        uint32_t below = l->writing_seg;
        pthread_mutex_unlock(&l->lock);
        if (below > 1)
            cmdlog_files_clean(l->dirfd, below);
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

int
cmdlog_start(struct cmdlog *l)
{
    l->last_sync_ms = cmdlog_mono_ms();
    if (pthread_create(&l->writer, NULL, cmdlog_writer_main, l) != 0)
        return -1;
    if (pthread_create(&l->cleaner, NULL, cmdlog_cleaner_main, l) != 0) {
        pthread_mutex_lock(&l->lock);
        l->stop = true;
        pthread_cond_broadcast(&l->wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->writer, NULL);
        return -1;
    }
    l->threads = true;
    return 0;
}

void
cmdlog_close(struct cmdlog *l)
{
    if (l == NULL)
        return;
    if (l->threads) {
        pthread_mutex_lock(&l->lock);
        l->stop = true;
        pthread_cond_broadcast(&l->wake);
        pthread_cond_broadcast(&l->clean_wake);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->writer, NULL);
        pthread_join(l->cleaner, NULL);
    }
    if (l->fd >= 0)
        close(l->fd);
    close(l->dirfd); /* releases the lock */
    close(l->event_fd);
    wq_free(l->active.buf);
    wq_free(l->active.chunks);
    wq_free(l->writing.buf);
    wq_free(l->writing.chunks);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->wake);
    pthread_cond_destroy(&l->clean_wake);
    wq_free(l);
}
