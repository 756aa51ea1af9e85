/* core_ext.h - the core's side table of struct job_ext (core_ext.c): a
 * job's rarer fields, made when first needed and dropped when empty. */
#ifndef WQ_CORE_EXT_H
#define WQ_CORE_EXT_H

#include "lib/wq.h"
#include "engine/core_state.h"

/* j's struct job_ext, NULL if it has none (see JOB_F_EXT). */
struct job_ext *core_job_ext(const struct core *c, const struct job *j);
/* j's result (NULL and 0 when it has none). */
char *core_job_result(const struct core *c, const struct job *j, uint32_t *len);
/* When j was created, Unix ms. */
int64_t core_job_created(const struct core *c, const struct job *j);
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

#endif /* WQ_CORE_EXT_H */
