/* bench_fsync.c - the disk's own fdatasync latency, to read beside the
 * command log's benchmarks: in a directory (default: the current one),
 * append 64-byte records to a new file, fdatasync after each, and report
 * percentiles of the fdatasync calls; then the same on a file whose blocks
 * were written (zeros) and synced beforehand, where a sync needs no
 * metadata (no size change).  The file is removed afterwards. */
#include "lib/wq.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SYNCS   2000
#define RECORD  64
#define PREPAID (SYNCS * RECORD)

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Time SYNCS write+fdatasync pairs at the file's start; print the
 * fdatasync percentiles.  0, or -1 on an I/O error. */
static int
measure(int fd, const char *what)
{
    static double t[SYNCS];
    char rec[RECORD];
    memset(rec, 'r', sizeof rec);
    for (int i = 0; i < SYNCS; i++) {
        if (pwrite(fd, rec, sizeof rec, (off_t)i * RECORD) != RECORD)
            return -1;
        double t0 = now_us();
        if (fdatasync(fd) != 0)
            return -1;
        t[i] = now_us() - t0;
    }
    qsort(t, SYNCS, sizeof t[0], cmp_double);
    printf("%-28s p50 %6.0f us  p90 %6.0f us  p99 %6.0f us  (%d syncs)\n", what, t[SYNCS / 2],
           t[SYNCS * 9 / 10], t[SYNCS * 99 / 100], SYNCS);
    return 0;
}

int
main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_fsync.%ld.tmp", dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    int rc = measure(fd, "appending (like a segment)");
    static char zeros[PREPAID];
    if (rc == 0)
        rc =
            ftruncate(fd, 0) == 0 && pwrite(fd, zeros, sizeof zeros, 0) == PREPAID && fsync(fd) == 0
                ? measure(fd, "overwriting written blocks")
                : -1;
    if (rc != 0)
        perror(path);
    close(fd);
    unlink(path);
    return rc == 0 ? 0 : 1;
}
