/* hero_jobs.h - what the job files of the Hero front-end share (the rules
 * in hero_jobs.c, the prerequisites in hero_deps.c, the restart in
 * hero_jobs_replay.c).  A job is the engine's job (its key space
 * h->space) named by the id, queued on its work queue (the engine's queue
 * of that name) and bound to one element of that list: the one whose
 * number is info.seq.  Any other element with the same bytes is plain
 * data. */
#ifndef WQ_HERO_JOBS_H
#define WQ_HERO_JOBS_H

#include "lib/wq.h"
#include "hero/hero.h"

struct job;

#define HERO_JOB_PREFIX "hero:job:"
#define HERO_WQ_PREFIX  "hero:work_queue:"
#define HERO_SQ_PREFIX  "hero:stop_queue:"
#define HERO_ID_MAX     512 /* the longest job id */

/* What the engine's job keeps of a Hero job (its payload). */
struct hero_info {
    uint64_t seq;        /* its element in its work queue */
    uint64_t timeout_ms; /* of its hand-out (0: none) */
    uint32_t handed;     /* times handed out */
};

/* A job handed to a connection. */
struct hero_run {
    struct list link;     /* in its connection's list */
    struct hero_conn *st; /* NULL: its connection is gone (or replay's) */
    uint64_t taken_ms;
    uint32_t len;
    char id[];
};

/* Does p[0..n) start with prefix? */
bool hero_prefixed(const char *p, size_t n, const char *prefix);
/* The hash of job id[0..n), or NULL (never expires a key). */
struct hkey *hero_job_hash(struct hero_ctx *h, const char *id, size_t n);
/* Field f of hash k (NULL: none), or an empty value. */
struct wq_str hero_field(const struct hkey *k, const char *f);
bool hero_str_is(struct wq_str s, const char *w);
/* The engine's job for id, or NULL. */
struct job *hero_job(struct hero_ctx *h, const char *id, size_t n);
struct hero_info hero_job_info(const struct job *j);
/* Is element v of a work queue job j's own? */
bool hero_job_element(const struct job *j, const struct hval *v);
/* The job's records: handed out (CMDLOG_H_TAKE) or back on its list
 * (CMDLOG_H_BACK) with the times handed out; ended. */
void hero_log_take(struct hero_ctx *h, uint8_t code, const char *id, size_t n, struct wq_str queue,
                   uint32_t handed);
void hero_log_end(struct hero_ctx *h, const char *id, size_t n);
/* Make job id queued on the work queue named queue, bound to element seq,
 * handed out `handed` times so far; NULL if the engine refused it. */
struct job *hero_job_add(struct hero_ctx *h, struct wq_str queue, const char *id, size_t n,
                         uint64_t seq, uint32_t handed);
/* j ends: no longer queued nor handed out (counted a success or not). */
void hero_job_end(struct hero_ctx *h, struct job *j, bool success);
/* Take j's element out of its work queue (logged), if it is there. */
void hero_unqueue(struct hero_ctx *h, const struct job *j);
/* The server decides job id's outcome: status error, error why,
 * updated_at; its dependents fail in turn (hero_deps_status). */
void hero_job_fail(struct hero_ctx *h, const char *id, size_t n, const char *why);
/* j, handed out, was not finished in time (why: "timeout", "worker
 * lost"): back to the head of its list while its retries allow, else
 * failed. */
void hero_job_lost(struct hero_ctx *h, struct job *j, const char *why);

/* Prerequisites (hero_deps.c).  Note that job id waits for the
 * prerequisites of its hash k that are not finished. */
void hero_deps_note(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n);
/* Job id's status became finished (or error): its dependents may go (or
 * fail, each in turn, without recursion). */
void hero_deps_status(struct hero_ctx *h, const char *id, size_t n, bool finished);
void hero_deps_open(struct hero_ctx *h);
void hero_deps_free(struct hero_ctx *h);

#endif /* WQ_HERO_JOBS_H */
