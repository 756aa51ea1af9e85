/* core_wait.h - the core's waiters (core_wait.c): clients parked in lease,
 * and clients waiting for a job's result. */
#ifndef WQ_CORE_WAIT_H
#define WQ_CORE_WAIT_H

#include "lib/wq.h"
#include "engine/core_state.h"

/* A new waiter of kind for a job or queues of space, until deadline,
 * counted as parked in the space's figures. */
struct waiter *core_waiter_new(struct core *c, uint8_t space, enum waiter_kind kind,
                               uint64_t deadline, waiter_done_fn done, void *owner);
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

/* Named worker who waits in a lease on names[0..n) (for inspect). */
void core_worker_waits(struct worker *who, const struct wq_str *names, size_t n);

#endif /* WQ_CORE_WAIT_H */
