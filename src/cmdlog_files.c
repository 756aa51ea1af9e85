/* cmdlog_files.c - segment files: list, read, replay. */
#include "wq.h"
#include "cmdlog_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "cmdlog_codec.h"
#include "core.h"
#include "log.h"

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A directory stream over dirfd from its first entry (dirfd stays open);
 * NULL (errno).  A new open of the directory, not a dup: a dup shares its
 * offset, and the loop (the metrics) and the cleaner thread may list at
 * once. */
static DIR *
cmdlog_files_opendir(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(d);
    return d;
}

/* List the segments; with stray, also the first name that looks like a
 * segment's and is none (cmdlog_segment_parse -1), into *stray (free it
 * with wq_free; NULL if there is none).  0 or -1 (errno). */
static int
cmdlog_files_list_dir(int dirfd, uint64_t **nums, size_t *count, char **stray)
{
    DIR *d = cmdlog_files_opendir(dirfd);
    if (d == NULL)
        return -1;
    size_t n = 0, cap = 16;
    uint64_t *v = wq_malloc(cap * sizeof *v);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        uint64_t num;
        int kind = cmdlog_segment_parse(de->d_name, &num);
        if (kind < 0 && stray != NULL && *stray == NULL) {
            size_t len = strlen(de->d_name) + 1;
            *stray = memcpy(wq_malloc(len), de->d_name, len);
        }
        if (kind != 1)
            continue;
        if (n == cap)
            v = wq_realloc(v, (cap *= 2) * sizeof *v);
        v[n++] = num;
    }
    closedir(d);
    qsort(v, n, sizeof *v, u64_cmp);
    *nums = v;
    *count = n;
    return 0;
}

int
cmdlog_files_list(int dirfd, uint64_t **nums, size_t *count)
{
    return cmdlog_files_list_dir(dirfd, nums, count, NULL);
}

int
cmdlog_files_remove_tmp(int dirfd)
{
    DIR *d = cmdlog_files_opendir(dirfd);
    if (d == NULL)
        return -1;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char seg[CMDLOG_SEGMENT_NAME_SIZE];
        size_t n = strlen(de->d_name);
        if (n <= 4 || n - 4 >= sizeof seg || strcmp(de->d_name + n - 4, ".tmp") != 0)
            continue;
        memcpy(seg, de->d_name, n - 4);
        seg[n - 4] = '\0';
        if (cmdlog_segment_number(seg) == 0)
            continue;
        if (unlinkat(dirfd, de->d_name, 0) != 0) {
            rc = -1;
            break;
        }
        wq_log(LOG_LVL_WARN, "cmdlog removed file=%s of a cleaning pass cut short", de->d_name);
    }
    closedir(d);
    return rc;
}

int
cmdlog_files_open(int dirfd, uint64_t n, int flags, uint64_t *size)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    cmdlog_segment_name(n, name);
    int fd = openat(dirfd, name, flags | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

int
cmdlog_files_read(int dirfd, uint64_t n, uint8_t **buf, size_t *len)
{
    uint64_t st_size;
    int fd = cmdlog_files_open(dirfd, n, O_RDONLY, &st_size);
    if (fd < 0)
        return -1;
    size_t size = (size_t)st_size, got = 0;
    uint8_t *b = wq_malloc(size + 1);
    while (got < size) {
        ssize_t r = read(fd, b + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* shorter than stat said: read what there is */
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = got;
    return 0;
}

/* Are p[0..n) all zero bytes?  Zeros after a segment's last record are
 * padding: the blocks the writer preallocated (doc/cmdlog.md). */
static bool
cmdlog_files_zeros(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* Is there any valid record at or after `from` in buf? */
static bool
cmdlog_files_valid_after(const uint8_t *buf, size_t len, size_t from)
{
    struct cmdlog_rec r;
    size_t used;
    for (size_t at = from; at + CMDLOG_TIME_LEN + 1 + CMDLOG_CRC_LEN <= len; at++) {
        if (buf[at] == 1 && cmdlog_rec_decode(buf + at, len - at, &r, &used) == CMDLOG_REC_OK)
            return true;
    }
    return false;
}

static int
cmdlog_files_truncate(int dirfd, uint64_t n, size_t size)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    cmdlog_segment_name(n, name);
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)size) == 0 && fsync(fd) == 0 ? 0 : -1;
    close(fd);
    return rc;
}

/* Cut the log at segment n, offset `at`: truncate it, remove later ones. */
static int
cmdlog_files_cut(int dirfd, const uint64_t *nums, size_t count, size_t i, size_t at)
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

int
cmdlog_files_replay(int dirfd, const char *dir, struct core *core, uint64_t now_ms, bool truncate,
                    uint64_t *last, uint64_t *last_size, uint64_t *records)
{
    uint64_t *nums;
    size_t count;
    char *stray = NULL;
    *last = 0;
    *last_size = 0;
    *records = 0;
    if (cmdlog_files_list_dir(dirfd, &nums, &count, &stray) != 0) {
        wq_log(LOG_LVL_ERROR, "cmdlog cannot list the directory: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    if (stray != NULL) {
        /* Never passed over as if it were not there: it may hold records. */
        wq_log(LOG_LVL_ERROR,
               "cmdlog refused path=%s/%s: not a segment name (9 digits, or more without a "
               "leading zero, from 1 to %" PRIu64 ")",
               dir, stray, UINT64_MAX);
        rc = -1;
    }
    for (size_t i = 0; i < count && rc == 0; i++) {
        bool is_last = i + 1 == count;
        uint8_t *buf;
        size_t len;
        char name[CMDLOG_SEGMENT_NAME_SIZE];
        cmdlog_segment_name(nums[i], name);
        if (cmdlog_files_read(dirfd, nums[i], &buf, &len) != 0) {
            wq_log(LOG_LVL_ERROR, "cmdlog cannot read segment=%s: %s", name, strerror(errno));
            rc = -1;
            break;
        }
        size_t at = 0;
        bool damaged = false, padded = false; /* padded: only zeros after at */
        if (len < CMDLOG_HEADER_LEN || memcmp(buf, cmdlog_header, CMDLOG_HEADER_LEN) != 0) {
            /* A crash before the first write was whole leaves part of the
             * header (then perhaps preallocated zeros), or only zeros. */
            size_t k = 0;
            while (k < len && k < CMDLOG_HEADER_LEN && buf[k] == cmdlog_header[k])
                k++;
            bool torn_header = cmdlog_files_zeros(buf + k, len - k);
            padded = cmdlog_files_zeros(buf, len);
            damaged = !padded && !(is_last && torn_header);
        } else {
            at = CMDLOG_HEADER_LEN;
            while (at < len) {
                struct cmdlog_rec r;
                size_t used;
                enum cmdlog_decode_result d = cmdlog_rec_decode(buf + at, len - at, &r, &used);
                if (d != CMDLOG_REC_OK) {
                    padded = cmdlog_files_zeros(buf + at, len - at);
                    damaged = !padded && (!is_last || cmdlog_files_valid_after(buf, len, at + 1));
                    break;
                }
                core_replay(core, &r, now_ms);
                (*records)++;
                at += used;
            }
        }
        if (damaged) {
            wq_log(LOG_LVL_ERROR, "cmdlog damaged segment=%s offset=%zu%s", name, at,
                   truncate ? ": cutting the log there as asked" : "");
            if (!truncate || cmdlog_files_cut(dirfd, nums, count, i, at) != 0)
                rc = -1;
            count = i + 1; /* nothing after the cut */
        } else if (at < len) {
            if (padded)
                wq_log(LOG_LVL_DEBUG, "cmdlog cut padding segment=%s offset=%zu bytes=%zu", name,
                       at, len - at);
            else
                wq_log(LOG_LVL_WARN, "cmdlog cut torn tail segment=%s offset=%zu bytes=%zu", name,
                       at, len - at);
            if (cmdlog_files_truncate(dirfd, nums[i], at) != 0)
                rc = -1;
        }
        if (rc == 0 && i + 1 == count) {
            *last = nums[i];
            *last_size = at;
        }
        wq_free(buf);
    }
    wq_free(stray);
    wq_free(nums);
    return rc;
}
