/* bench_replay.c - how fast a command log replays: writes a log of N jobs
 * (each an add, a lease and a complete: 3 records) with the codec, then
 * times cmdlog_files_replay into a fresh core.  Reports records/s as the
 * median of several runs. */
#include "lib/wq.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_codec.h"
#include "store/cmdlog_files.h"
#include "engine/core.h"
#include "faktory/fjobs.h"
#include "lib/log.h"
#include "lib/util.h"

#define RUNS 5

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Write n jobs' records to segment 1 of dir. */
static uint64_t
write_log(const char *dir, uint64_t n, int64_t now_ms)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/000000001.log", dir);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fwrite(cmdlog_header, 1, CMDLOG_HEADER_LEN, f);
    uint8_t buf[512];
    static const char payload[] = "0123456789abcdef";
    uint64_t records = 0;
    for (uint64_t i = 0; i < n; i++) {
        struct cmdlog_rec r = {.code = CMDLOG_ADD, .at_ms = now_ms};
        memcpy(r.id, &i, sizeof i);
        r.id[15] = 0x42; /* never the nil id */
        r.name = (struct wq_str){"bench", 5};
        r.ttr = 60000;
        r.ttl = 86400000;
        r.payload = (struct wq_str){payload, 16};
        r.created_ms = now_ms;
        fwrite(buf, 1, (cmdlog_rec_encode(&r, buf), cmdlog_rec_size(&r)), f);
        records++;
        if (i % 2 == 0) {
            struct cmdlog_rec l = {.code = CMDLOG_START_ATTEMPT, .at_ms = now_ms};
            memcpy(l.id, r.id, JOBID_LEN);
            cmdlog_rec_encode(&l, buf);
            fwrite(buf, 1, cmdlog_rec_size(&l), f);
            struct cmdlog_rec c = {.code = CMDLOG_COMPLETE, .at_ms = now_ms};
            memcpy(c.id, r.id, JOBID_LEN);
            c.result = (struct wq_str){"ok", 2};
            cmdlog_rec_encode(&c, buf);
            fwrite(buf, 1, cmdlog_rec_size(&c), f);
            records += 2;
        }
    }
    fclose(f);
    return records;
}

int
main(int argc, char **argv)
{
    uint64_t jobs = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    char dir[] = "/tmp/wq-bench-replay-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    wq_log_level = LOG_LVL_WARN;
    int64_t now = (int64_t)util_now_ms();
    uint64_t records = write_log(dir, jobs, now);
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    double rates[RUNS];
    for (int i = 0; i < RUNS; i++) {
        struct core *c = core_new((uint64_t)now);
        struct fjobs *fs = fjobs_new(c);
        uint64_t last, size, n;
        double t0 = now_s();
        if (cmdlog_files_replay(dirfd, dir, &core_replay_ops, c, (uint64_t)now, false, &last, &size,
                                &n) != 0 ||
            n != records) {
            fprintf(stderr, "replay failed\n");
            return 1;
        }
        rates[i] = (double)n / (now_s() - t0);
        core_free(c);
        fjobs_free(fs);
    }
    qsort(rates, RUNS, sizeof rates[0], cmp_double);
    printf("replay: %llu records (%llu jobs), median %.0f records/s (min %.0f, max %.0f)\n",
           (unsigned long long)records, (unsigned long long)jobs, rates[RUNS / 2], rates[0],
           rates[RUNS - 1]);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    close(dirfd);
    return system(rm) == 0 ? 0 : 1;
}
