/* core.h - the job core: every job, queue and waiter, and every transition
 * of doc/protocol-reference.md section 3.  One instance per server, owned by the
 * event-loop thread.  Pure: it never reads a clock or touches a socket; each
 * call takes the server time in ms, and blocked clients are represented by
 * waiters whose done callback the core calls when their wait ends. */
#ifndef WQ_CORE_H
#define WQ_CORE_H

#include "lib/wq.h"
#include "engine/core_state.h"
#include "engine/core_ext.h"
#include "engine/core_dead.h"

/* Would a new job with this payload (and a struct job_ext, with_ext: a
 * scheduled or run job) take the core past max_bytes?  Add and run check
 * it (and answer CORE_NOMEM); replay never does, since the log's jobs were
 * acknowledged. */
bool core_over_memory(const struct core *c, size_t payload_len, bool with_ext);

/* A new empty core at time now_ms (aborts if memory is exhausted). */
struct core *core_new(uint64_t now_ms);
/* Free every job and queue of every space; every waiter must have been
 * cancelled. */
void core_free(struct core *c);

/* What a key space holds, for inspect and the log lines of replay. */
struct core_space_counts {
    uint64_t jobs;   /* in any state */
    uint64_t queues; /* its queues (those that exist: with jobs, waiters, or paused) */
    /* its jobs: in the scheduled heaps (NEW: a time; PENDING: a retry's),
     * ready, leased, in the dead set */
    uint64_t scheduled, enqueued, working, retry, dead;
};

/* What space holds (all zero for a space not open). */
void core_space_counts(const struct core *c, uint8_t space, struct core_space_counts *out);
/* The space opened with label (core_space_open), JOB_SPACES if none is. */
uint8_t core_space_find(const struct core *c, const char *label);

/* Server ms at which a job with base time base_ms and this ttl expires
 * (saturating: 0 if already in the past, UINT64_MAX at most). */
uint64_t core_expiry(int64_t base_ms, uint64_t ttl);

/* When j expires: base + ttl, UINT64_MAX for a run job. */
uint64_t core_job_expiry(const struct job *j);
/* What j's timer is armed for: the nearest of expiry, TTR end (LEASED) and
 * scheduled time (in the scheduled heap). */
uint64_t core_job_deadline(const struct core *c, const struct job *j);

static inline struct queue *
core_job_queue(const struct core *c, const struct job *j)
{
    return queue_table_at(&core_space_of(c, j)->queues, j->queue_ix);
}

/* Is j the original of a broadcast (add -target=all)? */
bool core_job_is_broadcast(const struct core *c, const struct job *j);
/* The ids of broadcast original j's copies (NULL, 0 for any other job). */
const uint8_t (*core_job_copies(const struct core *c, const struct job *j, size_t *n))[JOBID_LEN];

/* Create a job: CORE_OK, CORE_DUPLICATE, CORE_BAD_PREREQ (s->after names
 * an unknown job) or CORE_NOMEM (nothing changed).  With prerequisites
 * the job is WAITING until each has COMPLETED; one that fails for good,
 * is deleted or expires fails it (and its own dependents) at once.  With
 * s->broadcast the job itself is never leased: a copy (id derived from its
 * id and the worker's name) goes to each named worker present on its name,
 * and the original waits (WAITING) until each copy has its result or is
 * gone, then COMPLETED with no result of its own.  A job of another space
 * than the ids' (s->key) has neither prerequisites nor copies, and the
 * core logs nothing of it: its space's owner does. */
enum core_status core_add(struct core *c, const struct job_spec *s, uint64_t now_ms);

/* core_add of a job read back from the command log: never refused for
 * -max-memory (the log's jobs were acknowledged). */
enum core_status core_restore(struct core *c, const struct job_spec *s, uint64_t now_ms);

/* Queue a run job (no TTL, one attempt, no retry) and park the caller on it:
 * CORE_PARKED, then done(owner) once with the job's result (GOT), TIMEOUT
 * (not leased within wait_ms, or its TTR ran out) or GONE (deleted).  With
 * wait_ms 0, only a leaser parked right now can take it: else CORE_TIMEOUT
 * and nothing is left behind.  CORE_DUPLICATE or CORE_NOMEM change nothing.
 * The job is removed once its client is answered or cancelled. */
enum core_status core_run(struct core *c, const struct job_spec *s, uint64_t wait_ms,
                          uint64_t now_ms, waiter_done_fn done, void *owner,
                          struct waiter **parked);

/* Lease the first job of one of names[0..n) that has a ready job (picked at
 * random among them): CORE_OK with *out leased.  Otherwise CORE_TIMEOUT if
 * wait_ms is 0, else CORE_PARKED with *parked set up to call done(owner).
 * Names must be valid.  who (NULL: anonymous) is the named worker that
 * leases: the job counts as held by it while LEASED. */
enum core_status core_lease(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms,
                            uint64_t now_ms, struct worker *who, waiter_done_fn done, void *owner,
                            struct job **out, struct waiter **parked);

/* core_lease among the queues of space. */
enum core_status core_lease_in(struct core *c, uint8_t space, const struct wq_str *names, size_t n,
                               uint64_t wait_ms, uint64_t now_ms, struct worker *who,
                               waiter_done_fn done, void *owner, struct job **out,
                               struct waiter **parked);

/* Store a result: success true for complete, false for fail (which may
 * retry).  With attempt > 0 (a fencing token), only while the job is
 * LEASED in that attempt.  CORE_OK, CORE_NOT_FOUND, CORE_CANCELLED,
 * CORE_STALE (attempt given, not the current lease), CORE_DUP_RESULT or
 * CORE_NOMEM. */
enum core_status core_finish(struct core *c, const uint8_t id[JOBID_LEN], bool success,
                             const char *data, size_t len, uint32_t attempt, uint64_t now_ms);

/* Restart a LEASED job's TTR from now: for ttr_ms (0: the job's TTR) this
 * once.  With attempt > 0, only in that attempt.  CORE_OK, CORE_NOT_FOUND
 * (no such job, or not LEASED), CORE_CANCELLED, CORE_STALE. */
enum core_status core_touch(struct core *c, const uint8_t id[JOBID_LEN], uint32_t ttr_ms,
                            uint32_t attempt, uint64_t now_ms);

/* Stop a job that has no result yet, whatever its state: it fails with
 * the result "cancelled" (its result waiters and run client are answered
 * so) and, if LEASED, its worker's next touch, complete or fail is told
 * CORE_CANCELLED.  CORE_OK, CORE_NOT_FOUND, CORE_DUP_RESULT (it has its
 * result already). */
enum core_status core_cancel_job(struct core *c, const uint8_t id[JOBID_LEN], uint64_t now_ms);
#define CORE_CANCELLED_RESULT "cancelled"

/* Is j what s would create (name, payload, TTR, TTL, priority, limits,
 * scheduled time)?  For an idempotent add. */
bool core_same_job(const struct core *c, const struct job *j, const struct job_spec *s);

/* Put a job of the dead set back to work: out of the set, its result,
 * fails and attempts cleared, PENDING in its queue as if added now (its TTL
 * unchanged).  CORE_OK, CORE_NOT_FOUND, CORE_NOT_DEAD (not in the set). */
enum core_status core_revive(struct core *c, const uint8_t id[JOBID_LEN], uint64_t now_ms);
/* Bound the dead set: a job stays at most ttl_ms after its death, and at
 * most max jobs stay (the oldest go first).  Applies from the next death,
 * and to the jobs already in it as their timers fire. */
void core_set_dead_limits(struct core *c, uint8_t space, uint64_t ttl_ms, uint64_t max);

/* Remove a job in any state: CORE_OK or CORE_NOT_FOUND. */
enum core_status core_delete(struct core *c, const uint8_t id[JOBID_LEN]);

/* core_finish, core_delete and core_revive of job j (found by its key:
 * core_find_key), in any space. */
enum core_status core_finish_job(struct core *c, struct job *j, bool success, const char *data,
                                 size_t len, uint32_t attempt, uint64_t now_ms);
void core_delete_job(struct core *c, struct job *j);
enum core_status core_revive_job(struct core *c, struct job *j, uint64_t now_ms);

/* The result of a job: CORE_OK with *out done, CORE_NOT_FOUND, CORE_TIMEOUT
 * (wait 0), or CORE_PARKED with *parked set up as for core_lease. */
enum core_status core_result(struct core *c, const uint8_t id[JOBID_LEN], uint64_t wait_ms,
                             uint64_t now_ms, waiter_done_fn done, void *owner, struct job **out,
                             struct waiter **parked);

/* Fan-in: wait until every job of ids[0..n) has its result.  CORE_OK when
 * they all have one already; CORE_NOT_FOUND if one is unknown; with
 * wait_ms 0, CORE_TIMEOUT when some have none; else CORE_PARKED, and
 * done(owner) is called once: GOT when the last has its result (or is
 * deleted or expired), TIMEOUT after wait_ms. */
enum core_status core_wait_all(struct core *c, const uint8_t (*ids)[JOBID_LEN], size_t n,
                               uint64_t wait_ms, uint64_t now_ms, wait_all_fn done, void *owner,
                               struct waiter **parked);

/* Withdraw a waiter whose client left; its done callback is not called.
 * A run job goes with its waiter. */
void core_cancel(struct core *c, struct waiter *w);

/* The job with this id (in the space of ids), or NULL. */
struct job *core_find(const struct core *c, const uint8_t id[JOBID_LEN]);
/* The job with key k, or NULL (also for a space not open). */
struct job *core_find_key(const struct core *c, const struct job_key *k);

/* A key space of c's own for a front-end whose jobs are named otherwise
 * than by 16-byte ids (job.h): its jobs and queues are apart from every
 * other space's.  ops and arg: its owner's (struct core_space_ops), which
 * must outlive the core; label names it for core_space_find; flags:
 * CORE_SPACE_*; replay hands the records of codes code_lo to code_hi to
 * ops->replay.  Aborts when all JOB_SPACES are taken. */
uint8_t core_space_open(struct core *c, const char *label, const struct core_space_ops *ops,
                        void *arg, unsigned flags, uint8_t code_lo, uint8_t code_hi);

/* The queue of space named name[0..len), or NULL if it does not exist
 * (or the space is not open). */
struct queue *core_space_queue(const struct core *c, uint8_t space, const char *name, size_t len);
/* Pause (or resume) the queue of space named name, created if need be: a
 * paused queue keeps its jobs, and leases, parked ones too, pass it by;
 * it exists while paused.  A resume hands its ready jobs to the leases
 * parked on it. */
void core_queue_pause(struct core *c, uint8_t space, const char *name, size_t len, bool paused);

/* For the owner of a space (the core decides these for the ids' jobs):
 * j goes to wait until at_ms, PENDING in its queue's scheduled heap, and
 * then enters its queue (a fail's retry, or the end of a reservation). */
void core_job_retry_at(struct core *c, struct job *j, int64_t at_ms);
/* j (not dead) fails for good and enters its space's dead set at died_ms,
 * whose bounds may end it (or older jobs) at once. */
void core_job_kill(struct core *c, struct job *j, int64_t died_ms);
/* j, waiting for a time (its own or a retry's) or in the dead set, enters
 * its queue now. */
void core_job_requeue(struct core *c, struct job *j, uint64_t now_ms);
/* j (NEW or PENDING, anywhere) is leased from now_ms, to no named worker
 * (a lease read back from the command log). */
void core_job_take(struct core *c, struct job *j, uint64_t now_ms);
/* j's payload becomes a copy of data[0..len) (len > 0). */
void core_job_set_payload(struct core *c, struct job *j, const char *data, size_t len);
/* j's TTR for its next lease: ttr_ms, 1 to WQ_MAX_TTR_MS. */
void core_job_set_ttr(struct job *j, uint32_t ttr_ms);

/* Apply a record read back from the command log at start-up, as of now_ms:
 * jobs keep their original expiry (those already past it go at the next
 * core_advance) and a replayed lease gets a fresh TTR.  Records of codes
 * a space was opened for go to its owner.  Records that do not fit
 * the state (a damaged or foreign log) are ignored.  Nothing is logged
 * meanwhile. */
void core_replay(struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);
/* The command log's replay into a core (store/cmdlog_files.h): with a
 * struct core * as arg, core_replay for each record, and the jobs of the
 * space of ids and of the other spaces for the log lines.  For instance
 * cmdlog_replay(l, &core_replay_ops, c, now_ms). */
extern const struct cmdlog_replay_ops core_replay_ops;

/* Run every deadline due by now_ms (TTR, TTL, scheduled time, waits). */
void core_advance(struct core *c, uint64_t now_ms);
/* When core_advance next has work, WHEEL_NEVER if never. */
uint64_t core_next_event(const struct core *c);

/* The jobs of the space of ids (Workq's). */
static inline uint64_t
core_job_count(const struct core *c)
{
    return registry_count(core_ids(c)->jobs);
}

/* Clear every space's totals (after replay, so that they count from the
 * start). */
void core_clear_totals(struct core *c);

/* The active queue with this name, or NULL. */
struct queue *core_queue(const struct core *c, const char *name, size_t len);

#endif /* WQ_CORE_H */
