/* core_internal.h - what the core's files share and nothing outside the
 * core may call.  They call one another downwards: core_replay.c (records
 * read back at start) and core_cmd.c (the commands) on core_deps.c (the
 * links of prerequisites) and core.c (the jobs' transitions, time, and
 * what a job's end does to its dependents); those on core_wait.c
 * (waiters) and core_target.c (the targeted queues' index); all on
 * core_ext.c (the job_ext side table). */
#ifndef WQ_CORE_INTERNAL_H
#define WQ_CORE_INTERNAL_H

#include "lib/wq.h"
#include "engine/core.h"
#include "engine/core_ext.h"
#include "engine/core_wait.h"
#include "engine/core_dead.h"

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
/* j's TTR ran out (at ended_ms: a death's time): fail it or put it back
 * as of now_ms. */
void core_job_ttr_expired(struct core *c, struct job *j, uint64_t now_ms, int64_t ended_ms);
/* Give j its result and final state, and wake its waiters. */
void core_job_settle(struct core *c, struct job *j, enum job_state state, char *result,
                     uint32_t result_len);
/* Log a fail of j that sends it to wait until at_ms. */
void core_record_backoff(struct core *c, const struct job *j, int64_t at_ms);
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
/* j (not done) failed and waits until at_ms (Unix ms) before it is ready
 * again: PENDING in its scheduled heap. */
void core_job_backoff(struct core *c, struct job *j, int64_t at_ms);
/* j has just FAILED for good at died_ms: into the dead set if it asked
 * for it (JOB_F_DEAD), the oldest dead jobs beyond the set's bound going
 * (j itself with a bound of 0: it may be gone after). */
void core_job_die(struct core *c, struct job *j, int64_t died_ms);
/* Detached j (NEW or PENDING) enters its queue when its time comes: as
 * core_make_ready, and in a CORE_SPACE_FIFO space last of its priority,
 * its base_ms the time it entered. */
void core_job_enter(struct core *c, struct job *j, uint64_t now_ms);
/* j, in the dead set, goes back to its queue with no result, no fails and
 * no attempts, PENDING, in line as if added now. */
void core_job_revive(struct core *c, struct job *j, uint64_t now_ms);
/* Fail j (no result yet) as cancelled, marked so for its worker. */
void core_job_cancel(struct core *c, struct job *j);
/* Remove j and everything that refers to it. */
void core_job_destroy(struct core *c, struct job *j);
/* Fail waiting job d because its prerequisite (gone: deleted or expired,
 * else failed) will not complete; its result names the prerequisite. */
void core_deps_fail(struct core *c, struct job *d, const uint8_t prereq[JOBID_LEN], bool gone);

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
