/* wb_jobs.c - the jobs of a workq-bench run: their queue names and random
 * ids, made before the clock starts, the map from id to job, the payload
 * each id implies, and their counts as the protocols report them: which
 * jobs were created, done or lost, and what the run has done.  Calls only
 * wb_util.c and wb_frame.c; a created job goes up to the run through
 * bench.driver. */
#include "wb.h"
#include "wb_proto.h" /* wb_frame_is, wb_error_reply */

#include <errno.h>
#include <inttypes.h>
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

/* The queue names, then every job's random v4 id, made up front so the
 * measured phase only looks them up.  The ids are random: their first
 * bytes are a fine hash.  Backlog jobs come after the measured ones, N per
 * name in name order. */
void
wb_jobs_init(struct bench *b)
{
    /* Names carry a tag of this run, so jobs left on the server by an earlier
     * run (an `add` run leaves all of them) are never leased by this one. */
    b->tag = (unsigned)(wb_rng_next(b) & 0xffffff);
    b->names = wb_xcalloc(b->opt.names, sizeof *b->names);
    for (uint32_t k = 0; k < b->opt.names; k++)
        snprintf(b->names[k], sizeof b->names[k], "bench.%06x.%" PRIu32, b->tag, k);
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
}

/* Consumers lease from every name at once: the line is made once. */
void
wb_jobs_lease_line(struct bench *b, const char *verb, const char *tail)
{
    size_t cap = strlen(verb) + strlen(tail) + 1;
    for (uint32_t k = 0; k < b->opt.names; k++)
        cap += strlen(b->names[k]) + 1;
    b->lease_line = wb_xcalloc(1, cap);
    size_t len = (size_t)sprintf(b->lease_line, "%s", verb);
    for (uint32_t k = 0; k < b->opt.names; k++)
        len += (size_t)sprintf(b->lease_line + len, " %s", b->names[k]);
    len += (size_t)sprintf(b->lease_line + len, "%s", tail);
    b->lease_len = len;
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

/* Job ji was accepted (add, schedule, put, PUSH).  A measured one goes on
 * to the run, which makes it a ticket when there is a backlog. */
void
wb_jobs_created(struct bench *b, uint32_t ji)
{
    struct wb_job *j = &b->jobs[ji];
    j->flags |= WB_JOB_ACKED;
    if (wb_jobs_is_backlog(b, j)) {
        b->backlog_created++;
        return;
    }
    b->created++;
    b->driver->ticket(b, ji);
}

/* The reply f to a complete (workq), delete (beanstalkd) or ACK (Faktory)
 * r: if it is the line ok, the job is done.  r->job is BENCH_JOB_NONE for a
 * beanstalkd job whose INSERTED was not read before its delete went out. */
void
wb_jobs_completed(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                  const char *ok)
{
    struct bench *b = c->b;
    if (!wb_frame_is(f, ok)) {
        wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    b->completes_ok++;
    if (r->job != BENCH_JOB_NONE)
        b->jobs[r->job].flags |= WB_JOB_DONE;
}

/* A lease, reserve or FETCH that found nothing within its wait.  In
 * lease-complete every job is ready before the drain, and with a backlog
 * every lease has a ticket, so that is an error; elsewhere it is normal
 * while producers run, and means "nothing left" once every job has been
 * sent and every producing request answered. */
void
wb_jobs_lease_empty(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    b->lease_timeouts++;
    if (b->opt.workload == WL_LEASE_COMPLETE || b->tickets != NULL) {
        wb_error_reply(c, r, f, "nothing to lease although jobs are left");
        b->drained = true;
    } else if (b->next_job == b->opt.jobs && b->prod_inflight == 0) {
        b->drained = true;
    }
}

/* The jobs a run has done: accepted adds for add, checked run results for
 * run, confirmed completes (deletes) for the others. */
uint64_t
wb_jobs_done(const struct bench *b)
{
    if (b->opt.workload == WL_ADD)
        return b->created;
    if (b->opt.workload == WL_RUN)
        return b->runs_ok;
    return b->completes_ok;
}
