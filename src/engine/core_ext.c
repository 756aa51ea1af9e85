/* core_ext.c - the core's side table of struct job_ext: the rarer fields
 * of a job (its result, the clients waiting for it, a scheduled job's
 * creation time), kept by id for the jobs that have them (JOB_F_EXT). */
#include "lib/wq.h"
#include "engine/core_ext.h"

#include "lib/alloc.h"

#include <string.h>

#include "lib/payload.h"

/* ---- the side table of struct job_ext ---- */

struct job_ext *
core_job_ext(const struct core *c, const struct job *j)
{
    return (j->flags & JOB_F_EXT) ? job_ext_find(j, core_space_of(c, j)->exts) : NULL;
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
    memcpy(x->id, j->id, JOBID_LEN); /* the id, or where the key is */
    registry_insert(core_space_of(c, j)->exts, x);
    j->flags |= JOB_F_EXT;
    c->bytes += CORE_EXT_BYTES;
    return x;
}

/* Free j's job_ext x and its result: the reverse of core_ext_need. */
void
core_ext_drop(struct core *c, struct job *j, struct job_ext *x)
{
    c->bytes -= CORE_EXT_BYTES + x->result_len;
    struct job_more *m = x->more;
    if (m != NULL)
        c->bytes -= sizeof *m + (uint64_t)m->dependents_cap * sizeof(struct job_dep) +
                    (uint64_t)m->ncopies * JOBID_LEN;
    core_more_free(m);
    payload_free(x->result, x->result_len);
    struct job_key key = job_key_of(j);
    registry_remove(core_space_of(c, j)->exts, key.p, key.len);
    pool_put(&c->ext_pool, x);
    j->flags &= ~JOB_F_EXT;
}

/* Drop j's job_ext if nothing in it is needed any more. */
void
core_ext_trim(struct core *c, struct job *j)
{
    struct job_ext *x = core_job_ext(c, j);
    const struct job_more *m = core_more_of(x);
    if (x != NULL && x->result == NULL && x->waiters.first == NULL && x->retry_at == 0 &&
        (m == NULL || (!m->cancelled && m->ndependents == 0 && m->unmet == 0 && m->holder == NULL &&
                       !m->broadcast && !list_linked(&m->dead_link))) &&
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

struct job_more *
core_more_need(struct core *c, struct job *j)
{
    struct job_ext *x = core_ext_need(c, j);
    if (x->more == NULL) {
        x->more = wq_calloc(1, sizeof *x->more);
        c->bytes += sizeof *x->more;
    }
    return x->more;
}

void
core_more_free(struct job_more *m)
{
    if (m == NULL)
        return;
    wq_free(m->dependents);
    wq_free(m->copies);
    wq_free(m);
}
