/* cmdlog_files.c - a command-log directory's segment files: list, open,
 * truncate, and remove what a cleaning pass cut short left; replay is
 * cmdlog_files_replay.c. */
#include "lib/wq.h"
#include "store/cmdlog_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_codec.h"
#include "lib/log.h"

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

int
cmdlog_files_list(int dirfd, uint64_t **nums, size_t *count, char **stray)
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

const char *
cmdlog_files_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:
        return NULL;
    case S_IFLNK:
        return "a symbolic link";
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a fifo";
    case S_IFSOCK:
        return "a socket";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    default:
        return "of an unknown type";
    }
}

int
cmdlog_files_open(int dirfd, uint64_t n, int flags, uint64_t *size)
{
    char name[CMDLOG_SEGMENT_NAME_SIZE];
    cmdlog_segment_name(n, name);
    /* No symbolic link may take the log elsewhere (/dev/zero swallows what
     * is written), and a FIFO must not hold the open until a writer comes:
     * whatever is there is looked at before it is read or written. */
    int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0, fl;
    if (fstat(fd, &st) != 0)
        err = errno;
    else if (!S_ISREG(st.st_mode))
        err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    else if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        err = errno;
    if (err != 0) {
        close(fd);
        errno = err;
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

int
cmdlog_files_truncate(int dirfd, uint64_t n, uint64_t size)
{
    uint64_t old;
    int fd = cmdlog_files_open(dirfd, n, O_WRONLY, &old);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)size) == 0 && fsync(fd) == 0 ? 0 : -1;
    close(fd);
    return rc;
}
