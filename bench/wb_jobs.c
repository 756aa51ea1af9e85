/* wb_jobs.c - the jobs of a workq-bench run: their random ids, made before
 * the clock starts, the map from id to job, the payload each id implies,
 * and which jobs are still expected to complete. */
#include "wb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* A job's payload: its id's text, repeated and cut to len bytes. */
void
wb_payload_fill(char *dst, size_t len, const char *id)
{
    for (size_t off = 0; off < len; off += BENCH_ID_LEN) {
        size_t n = len - off < BENCH_ID_LEN ? len - off : BENCH_ID_LEN;
        memcpy(dst + off, id, n);
    }
}

/* The check for wb_payload_fill: is p the payload of the job with this id? */
bool
wb_payload_matches(const char *p, size_t len, const char *id)
{
    for (size_t off = 0; off < len; off += BENCH_ID_LEN) {
        size_t n = len - off < BENCH_ID_LEN ? len - off : BENCH_ID_LEN;
        if (memcmp(p + off, id, n) != 0)
            return false;
    }
    return true;
}

/* The first 8 bytes of an id, as a hash: random ids need no mixing. */
static uint64_t
load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Index job i by its id; false if another job has the same id. */
static bool
jobs_index(struct bench *b, uint32_t i)
{
    size_t s = (size_t)load64(b->jobs[i].id) & b->idmap_mask;
    for (;; s = (s + 1) & b->idmap_mask) {
        if (b->idmap[s] == 0) {
            b->idmap[s] = i + 1;
            return true;
        }
        if (uuid_compare(b->jobs[b->idmap[s] - 1].id, b->jobs[i].id) == 0)
            return false;
    }
}

/* Random version 4 ids, made as libuuid's uuid_generate_random makes them
 * but from one getrandom call per BENCH_ID_BATCH ids: libuuid reseeds for
 * every id (about 5 us), which would make a backlog of a million jobs take
 * seconds to set up. */
static void
ids_random(uuid_t *ids, size_t n)
{
    unsigned char *p = (unsigned char *)ids;
    size_t len = n * sizeof(uuid_t), off = 0;
    while (off < len) {
        ssize_t got = getrandom(p + off, len - off, 0);
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "workq-bench: getrandom: %s\n", strerror(errno));
            exit(1);
        }
        if (got > 0)
            off += (size_t)got;
    }
    for (size_t i = 0; i < n; i++) {
        ids[i][6] = (unsigned char)((ids[i][6] & 0x0f) | 0x40); /* version 4 */
        ids[i][8] = (unsigned char)((ids[i][8] & 0x3f) | 0x80); /* RFC 4122 variant */
    }
}

/* Generate every job's random v4 id up front, so the measured phase only
 * looks them up.  The ids are random: their first bytes are a fine hash.
 * Backlog jobs come after the measured ones, N per name in name order. */
void
wb_jobs_init(struct bench *b)
{
    uint32_t total = b->opt.jobs + b->nbacklog;
    size_t cap = 16;
    while (cap < 2 * (size_t)total)
        cap <<= 1;
    b->jobs = wb_xcalloc(total, sizeof *b->jobs);
    b->idmap = wb_xcalloc(cap, sizeof *b->idmap);
    b->idmap_mask = cap - 1;
    uuid_t *batch = wb_xcalloc(BENCH_ID_BATCH, sizeof *batch);
    size_t left = 0;
    for (uint32_t i = 0; i < total; i++) {
        do {
            if (left == 0) {
                ids_random(batch, BENCH_ID_BATCH);
                left = BENCH_ID_BATCH;
            }
            uuid_copy(b->jobs[i].id, batch[--left]);
        } while (!jobs_index(b, i));
        if (i >= b->opt.jobs) {
            b->jobs[i].priority = BENCH_BACKLOG_PRIORITY;
            b->jobs[i].name = (uint16_t)((i - b->opt.jobs) / b->opt.backlog);
        } else if (b->opt.priorities) {
            b->jobs[i].priority = (int32_t)(wb_rng_next(b) % BENCH_PRIORITIES);
        }
    }
    free(batch);
    if (b->nbacklog > 0) {
        b->tickets = wb_xcalloc(b->opt.jobs, sizeof *b->tickets);
        b->starved = wb_xcalloc(b->opt.conns, sizeof *b->starved);
    }
    if (b->opt.proto == WB_PROTO_BEANSTALKD) {
        b->bidmap = wb_xcalloc(cap, sizeof *b->bidmap);
        b->bidmap_mask = cap - 1;
    }
}

/* The job whose id is the canonical lowercase text t, or NULL. */
struct wb_job *
wb_jobs_find(struct bench *b, struct wb_tok t)
{
    char text[BENCH_ID_LEN + 1], again[BENCH_ID_LEN + 1];
    uuid_t id;
    if (t.len != BENCH_ID_LEN)
        return NULL;
    memcpy(text, t.s, BENCH_ID_LEN);
    text[BENCH_ID_LEN] = '\0';
    if (uuid_parse(text, id) != 0)
        return NULL;
    uuid_unparse_lower(id, again);
    if (memcmp(text, again, BENCH_ID_LEN) != 0) /* not canonical lowercase */
        return NULL;
    for (size_t s = (size_t)load64(id) & b->idmap_mask; b->idmap[s] != 0;
         s = (s + 1) & b->idmap_mask) {
        struct wb_job *j = &b->jobs[b->idmap[s] - 1];
        if (uuid_compare(j->id, id) == 0)
            return j;
    }
    return NULL;
}

/* Is j one of the backlog (never expected to complete)? */
bool
wb_jobs_is_backlog(const struct bench *b, const struct wb_job *j)
{
    return (size_t)(j - b->jobs) >= b->opt.jobs;
}

/* A job that will never complete: stop counting on it. */
void
wb_jobs_lost(struct bench *b, struct wb_job *j)
{
    if ((j->flags & (WB_JOB_LEASED | WB_JOB_LOST)) || wb_jobs_is_backlog(b, j))
        return;
    j->flags |= WB_JOB_LOST;
    if (b->jobs_expected > 0)
        b->jobs_expected--;
}
