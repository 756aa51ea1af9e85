/* fuzz_replay.c - libFuzzer target: replay of a whole command-log
 * directory and its cleaning (src/store/cmdlog.c, cmdlog_files_replay.c,
 * cmdlog_files.c, core_replay.c, cmdlog_clean.c, cmdlog_reader.c).
 *
 * The input is the directory's segments one after the other: a new
 * segment starts at each segment header (cmdlog_header) after the first
 * byte, so the concatenation of a real log's files is an input.  They are
 * written as 000000001.log, 000000002.log, ... into a fresh directory
 * (under $TMPDIR, else /dev/shm), which is opened with cmdlog_open and
 * replayed into a fresh core as the server does at start; the core is
 * then advanced past every deadline and freed.
 *
 * What must hold: a log that replay refused (damage) replays once
 * truncate_damage cuts it, as an operator would ask; a log that
 * replayed (perhaps after cutting a torn tail or padding) replays again
 * the same records and jobs; and after a cleaning pass over every
 * segment (src/store/cmdlog_clean.c, in chunks of a few jobs) the same jobs in
 * the same states. */
#include "lib/wq.h"
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/cmdlog.h"
#include "store/cmdlog_clean.h"
#include "engine/core.h"
#include "faktory/fjobs.h"
#include "lib/log.h"

#define FUZZ_NOW_MS       1700000000000ULL
#define FUZZ_MAX_SEGMENTS 16
#define FUZZ_DAY_MS       86400000ULL

static char dir[4096];

/* Remove every file of dir (no subdirectories are ever made). */
static void
clear_dir(void)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        abort();
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
}

static void
remove_dir(void)
{
    clear_dir();
    rmdir(dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/workq-fuzz-replay-XXXXXX", tmp);
    if (mkdtemp(dir) == NULL) {
        perror("fuzz_replay: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    wq_log_level = LOG_LVL_ERROR;
    return 0;
}

/* Write segment n of the directory. */
static void
write_segment(uint32_t n, const uint8_t *p, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%09u.log", dir, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, p, len) != (ssize_t)len)
        abort();
    close(fd);
}

/* Split the input into segments. */
static void
write_segments(const uint8_t *data, size_t size)
{
    uint32_t n = 1;
    size_t start = 0;
    for (size_t at = 1; at + CMDLOG_HEADER_LEN <= size && n < FUZZ_MAX_SEGMENTS; at++) {
        if (memcmp(data + at, cmdlog_header, CMDLOG_HEADER_LEN) == 0) {
            write_segment(n++, data + start, at - start);
            start = at;
        }
    }
    write_segment(n, data + start, size - start);
}

/* What a replay gave: its records, and the jobs in each state. */
struct outcome {
    uint64_t records;
    size_t jobs;
    uint64_t ready, scheduled, leased, completed, failed, waiting;
};

/* Replay the directory into a fresh core as the server would, into *o.
 * 0, or -1 if replay refused. */
static int
replay(bool truncate, struct outcome *o)
{
    struct cmdlog_config cfg = {
        .dir = dir,
        .seg_size = CMDLOG_DEFAULT_SEG_SIZE,
        .sync = CMDLOG_SYNC_OS,
        .sync_int_ms = CMDLOG_DEFAULT_SYNC_INT,
        .clean_int_ms = CMDLOG_DEFAULT_CLEAN_INT,
        .truncate_damage = truncate,
    };
    struct cmdlog *l = cmdlog_open(&cfg);
    if (l == NULL)
        abort();
    struct core *c = core_new(FUZZ_NOW_MS);
    struct fjobs *fs = fjobs_new(c);
    int rc = cmdlog_replay(l, &core_replay_ops, c, FUZZ_NOW_MS);
    if (rc == 0) {
        struct cmdlog_stats st;
        cmdlog_get_stats(l, &st);
        const struct core_stats *cs = &core_ids(c)->stats;
        *o = (struct outcome){st.replay_records, core_job_count(c), cs->ready,  cs->scheduled,
                              cs->leased,        cs->completed,     cs->failed, cs->waiting};
        /* what start-up does next, then the rest of every job's life */
        core_advance(c, FUZZ_NOW_MS);
        core_advance(c, FUZZ_NOW_MS + 400 * FUZZ_DAY_MS);
    }
    core_free(c);
    fjobs_free(fs);
    cmdlog_close(l);
    return rc;
}

/* The same jobs in the same states (the records may differ). */
static bool
same_jobs(const struct outcome *a, const struct outcome *b)
{
    return a->jobs == b->jobs && a->ready == b->ready && a->scheduled == b->scheduled &&
           a->leased == b->leased && a->completed == b->completed && a->failed == b->failed &&
           a->waiting == b->waiting;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome first, again;
    clear_dir();
    write_segments(data, size);
    if (replay(false, &first) != 0 && replay(true, &first) != 0) {
        fprintf(stderr, "fuzz_replay: replay refused a log truncate_damage had cut\n");
        abort();
    }
    if (replay(false, &again) != 0 || again.records != first.records ||
        !same_jobs(&first, &again)) {
        fprintf(stderr, "fuzz_replay: a replayed log does not replay the same again\n");
        abort();
    }
    /* Cleaning every segment, in chunks of a few jobs, changes no job. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || cmdlog_clean(dfd, UINT32_MAX, 300) != 0) {
        fprintf(stderr, "fuzz_replay: cleaning failed\n");
        abort();
    }
    close(dfd);
    if (replay(false, &again) != 0 || !same_jobs(&first, &again)) {
        fprintf(stderr, "fuzz_replay: cleaning changed the jobs a log replays\n");
        abort();
    }
    return 0;
}
