/* core_dead.h - the dead set's list (core_dead.c): which jobs are in it,
 * in what order, and until when. */
#ifndef WQ_CORE_DEAD_H
#define WQ_CORE_DEAD_H

#include "lib/wq.h"
#include "engine/core_state.h"

/* Put j (FAILED, JOB_F_DEAD, not in the set) last in the dead set: it died
 * at died_ms, Unix ms. */
void core_dead_link(struct core *c, struct job *j, int64_t died_ms);
/* Take j out of the dead set if it is in it. */
void core_dead_unlink(struct core *c, struct job *j);
/* When j died (Unix ms), 0 if it is not in the dead set. */
int64_t core_job_died(const struct core *c, const struct job *j);
/* When j leaves the dead set by its age (died + the set's TTL), UINT64_MAX
 * if it is not in it. */
uint64_t core_dead_end(const struct core *c, const struct job *j);
/* The job of space's dead set that died first, NULL when it is empty. */
struct job *core_dead_oldest(const struct core *c, uint8_t space);
/* Up to limit jobs of space's dead set from the offset-th (0: the oldest)
 * into out, oldest first; how many. */
size_t core_dead_jobs(const struct core *c, uint8_t space, uint64_t offset, size_t limit,
                      const struct job **out);

#endif /* WQ_CORE_DEAD_H */
