/* core_internal.h - what the core's files share and nothing outside the
 * core may call.  They call one another downwards: core_replay.c (records
 * read back at start) and core_cmd.c (the commands) on core.c (the jobs'
 * transitions, time) and core_deps.c (prerequisites), which call each
 * other (settling a job settles or releases its dependents); those on
 * core_wait.c (waiters) and core_target.c (the targeted queues' index);
 * all on core_ext.c (the job_ext side table). */
#ifndef WQ_CORE_INTERNAL_H
#define WQ_CORE_INTERNAL_H

#include "lib/wq.h"
#include "engine/core.h"

/* core_ext.c */
/* j's job_ext, created empty if it has none. */
struct job_ext *core_ext_need(struct core *c, struct job *j);
/* Free j's job_ext x and its result: the reverse of core_ext_need. */
void core_ext_drop(struct core *c, struct job *j, struct job_ext *x);
/* j's struct job_more (and job_ext), created empty if it has none. */
struct job_more *core_more_need(struct core *c, struct job *j);
/* The struct job_more of job_ext x (NULL, or NULL when it has none). */
static inline struct job_more *
core_more_of(const struct job_ext *x)
{
    return x != NULL ? x->more : NULL;
}
/* Free m and what it holds (core_free: workers are not told). */
void core_more_free(struct job_more *m);
/* Drop j's job_ext if nothing in it is needed any more. */
void core_ext_trim(struct core *c, struct job *j);

/* core_wait.c */
struct waiter *core_waiter_new(struct core *c, enum waiter_kind kind, uint64_t deadline,
                               waiter_done_fn done, void *owner);
/* Take w out of everything and free it (its owner is not told). */
void core_waiter_free(struct core *c, struct waiter *w);
/* End a wait: take the waiter out of everything, then tell its owner. */
void core_waiter_finish(struct core *c, struct waiter *w, enum waiter_outcome how, struct job *j);
/* Link waiter w to job j's list of waiters. */
void core_waiter_link(struct core *c, struct waiter *w, struct job *j);
/* Answer every result waiter of j (it has its result, or is going away);
 * x is j's job_ext or NULL.  Returns the job_ext j still has, or NULL. */
struct job_ext *core_wake_result_waiters(struct core *c, struct job *j, struct job_ext *x,
                                         enum waiter_outcome how);
/* The waiting client of run job j, or NULL. */
struct waiter *core_run_waiter(const struct core *c, const struct job *j);
/* The wait wheel's deadline callback (its timer callback is core.c's). */
uint64_t core_waiter_deadline(const struct wheel_entry *e, void *arg);

/* core_cmd.c */
/* Create (or, in replay, re-create) a job; limited: check -max-memory. */
enum core_status core_add_job(struct core *c, const struct job_spec *s, uint64_t now_ms,
                              bool limited);

/* core.c */
/* Log a record that carries only j's id (nothing for a run job). */
void core_record_id(struct core *c, const struct job *j, enum cmdlog_code code);
/* Take j out of its heap and its stats bucket. */
void core_job_detach(struct core *c, struct job *j);
/* Lease detached job j from now_ms (to named worker who, or NULL). */
void core_lease_job(struct core *c, struct job *j, uint64_t now_ms, struct worker *who);
/* Detached j (NEW or PENDING) is ready: leased at once to the first parked
 * leaser that may take it, else into its ready heap. */
void core_make_ready(struct core *c, struct job *j, uint64_t now_ms);
/* Named worker who waits in a lease on names[0..n) (for inspect). */
void core_worker_waits(struct worker *who, const struct wq_str *names, size_t n);
/* j's TTR ran out: fail it or put it back. */
void core_job_ttr_expired(struct core *c, struct job *j, uint64_t now_ms);
/* Give j its result and final state, and wake its waiters. */
void core_job_settle(struct core *c, struct job *j, enum job_state state, char *result,
                     uint32_t result_len);
/* Log a result (complete or final fail) of j. */
void core_record_result(struct core *c, const struct job *j, enum cmdlog_code code,
                        const char *data, size_t len);
/* Detached j (out of every bucket) is in state (NEW, PENDING): ready,
 * scheduled, or leased at once to a parked leaser, as add places a job. */
void core_job_place(struct core *c, struct job *j, enum job_state state, uint64_t now_ms);
/* WAITING j's prerequisites have all completed: place it as add would. */
void core_job_release(struct core *c, struct job *j, uint64_t now_ms);
/* Arm j's timer for the nearest of its deadlines. */
void core_job_arm(struct core *c, struct job *j);
/* Fail j (no result yet) as cancelled, marked so for its worker. */
void core_job_cancel(struct core *c, struct job *j);
/* Remove j and everything that refers to it. */
void core_job_destroy(struct core *c, struct job *j);

/* core_deps.c */
/* CORE_OK if every job of after[0..n) may be a prerequisite, else
 * CORE_BAD_PREREQ. */
enum core_status core_deps_check(const struct core *c, const uint8_t (*after)[JOBID_LEN], size_t n);
/* New job j (not yet placed) waits for after[0..n): true when that placed
 * it (WAITING, or FAILED at once for a prerequisite that failed), false
 * when none is left to wait for.  Unknown ones count as completed (in
 * replay: cleaned away). */
bool core_deps_wait(struct core *c, struct job *j, const uint8_t (*after)[JOBID_LEN], size_t n);
/* Unplaced job j is the original of the broadcast copies[0..n): it waits
 * (WAITING) until each has its result or is gone (unknown ones count as
 * gone), then COMPLETED. */
void core_deps_broadcast(struct core *c, struct job *j, const uint8_t (*copies)[JOBID_LEN],
                         size_t n);
/* j has its final state: release (COMPLETED) or fail its dependents (x
 * is j's job_ext, or NULL: no lookup on the common path). */
void core_deps_settled(struct core *c, struct job *j, struct job_ext *x);
/* j is going (deleted, expired): fail its dependents. */
void core_deps_gone(struct core *c, struct job *j, struct job_ext *x);

/* core_target.c */
/* Index targeted queue q (new or not) under its base and each worker. */
void core_target_register(struct core *c, const struct queue *q);
/* May who (NULL: anonymous) lease the jobs of q? */
bool core_target_allows(const struct queue *q, const struct worker *who);
/* The queue whose first ready job who should lease from base: base itself
 * or one of who's targeted queues of it; NULL if none has a ready job. */
struct queue *core_target_pick(struct core *c, struct queue *base, const struct worker *who);
/* The first lease parked on q's base that may take q's jobs, or NULL. */
struct park_node *core_target_first_parked(const struct queue *q);
void core_targets_free(struct core *c);

#endif /* WQ_CORE_INTERNAL_H */
