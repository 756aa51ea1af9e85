/* core_ext.c - the core's side table of struct job_ext: the rarer fields
 * of a job (its result, the clients waiting for it, a scheduled job's
 * creation time), kept by id for the jobs that have them (JOB_F_EXT). */
#include "wq.h"
#include "core.h"
#include "core_internal.h"

#include "alloc.h"

#include <string.h>

#include "payload.h"

/* ---- the side table of struct job_ext ---- */

struct job_ext *
core_job_ext(const struct core *c, const struct job *j)
{
    return (j->flags & JOB_F_EXT) ? registry_find(c->exts, j->id, JOBID_LEN) : NULL;
}

/* j's job_ext, created empty if it has none. */
struct job_ext *
core_ext_need(struct core *c, struct job *j)
{
    struct job_ext *x = core_job_ext(c, j);
    if (x != NULL)
        return x;
    x = pool_get(&c->ext_pool);
    memset(x, 0, sizeof *x);
    memcpy(x->id, j->id, JOBID_LEN);
    registry_insert(c->exts, x);
    j->flags |= JOB_F_EXT;
    c->bytes += CORE_EXT_BYTES;
    return x;
}

/* Free j's job_ext x and its result: the reverse of core_ext_need. */
void
core_ext_drop(struct core *c, struct job *j, struct job_ext *x)
{
    c->bytes -=
        CORE_EXT_BYTES + x->result_len + (uint64_t)x->dependents_cap * sizeof(struct job_dep);
    payload_free(x->result, x->result_len);
    wq_free(x->dependents);
    registry_remove(c->exts, j->id, JOBID_LEN);
    pool_put(&c->ext_pool, x);
    j->flags &= ~JOB_F_EXT;
}

/* Drop j's job_ext if nothing in it is needed any more. */
void
core_ext_trim(struct core *c, struct job *j)
{
    struct job_ext *x = core_job_ext(c, j);
    if (x != NULL && x->result == NULL && x->waiters.first == NULL && !x->cancelled &&
        x->ndependents == 0 && x->unmet == 0 && x->holder == NULL && !x->broadcast &&
        !(j->flags & JOB_F_TIMED))
        core_ext_drop(c, j, x);
}

char *
core_job_result(const struct core *c, const struct job *j, uint32_t *len)
{
    const struct job_ext *x = core_job_ext(c, j);
    *len = x != NULL ? x->result_len : 0;
    return x != NULL ? x->result : NULL;
}

int64_t
core_job_created(const struct core *c, const struct job *j)
{
    return (j->flags & JOB_F_TIMED) ? core_job_ext(c, j)->created_ms : j->base_ms;
}
