/* core_deps.c - jobs that wait for other jobs (add -after, ours): a job
 * with prerequisites is WAITING and counts those not yet completed; each
 * prerequisite keeps the list of its dependents, so that completing,
 * failing or losing it touches its own dependents only.  This file makes
 * those links (a job added after others, a broadcast's copies); what a
 * prerequisite's end does to its dependents is core.c's, beside the
 * transition that ends it. */
#include "lib/wq.h"
#include "engine/core.h"
#include "engine/core_internal.h"

#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"

/* Record j as a dependent of prerequisite p. */
static void
core_deps_link(struct core *c, struct job *p, const struct job *j)
{
    struct job_more *m = core_more_need(c, p);
    if (m->ndependents == m->dependents_cap) {
        uint32_t cap = m->dependents_cap == 0 ? 4 : m->dependents_cap * 2;
        m->dependents = wq_realloc(m->dependents, cap * sizeof *m->dependents);
        c->bytes += (uint64_t)(cap - m->dependents_cap) * sizeof *m->dependents;
        m->dependents_cap = cap;
    }
    struct job_dep *d = &m->dependents[m->ndependents++];
    memcpy(d->id, j->id, JOBID_LEN);
    d->seq = j->seq;
}

enum core_status
core_deps_check(const struct core *c, const uint8_t (*after)[JOBID_LEN], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct job *p = core_find(c, after[i]);
        if (p == NULL || (p->flags & JOB_F_RUN))
            return CORE_BAD_PREREQ;
    }
    return CORE_OK;
}

void
core_deps_broadcast(struct core *c, struct job *j, const uint8_t (*copies)[JOBID_LEN], size_t n)
{
    struct job_more *m = core_more_need(c, j);
    m->broadcast = true;
    m->copies = wq_malloc((n + 1) * JOBID_LEN);
    memcpy(m->copies, copies, n * JOBID_LEN);
    m->ncopies = (uint32_t)n;
    c->bytes += (uint64_t)n * JOBID_LEN;
    uint32_t unmet = 0;
    for (size_t i = 0; i < n; i++) {
        struct job *p = core_find(c, copies[i]);
        if (p == NULL || job_is_done(p))
            continue;
        core_deps_link(c, p, j);
        unmet++;
    }
    j->state = JOB_WAITING;
    core_space_of(c, j)->stats.waiting++;
    core_job_queue(c, j)->waiting++;
    m->unmet = unmet;
    if (unmet == 0)
        core_job_settle(c, j, JOB_COMPLETED, NULL, 0);
}

bool
core_deps_wait(struct core *c, struct job *j, const uint8_t (*after)[JOBID_LEN], size_t n)
{
    uint32_t unmet = 0;
    struct job *failed = NULL;
    for (size_t i = 0; i < n; i++) {
        struct job *p = core_find(c, after[i]);
        /* unknown in replay: cleaned away after it completed */
        if (p == NULL || p == j || (p->flags & JOB_F_RUN) || p->state == JOB_COMPLETED)
            continue;
        if (p->state == JOB_FAILED) {
            failed = failed != NULL ? failed : p;
            continue;
        }
        bool listed = false; /* a prerequisite named twice counts once */
        for (size_t k = 0; k < i && !listed; k++)
            listed = memcmp(after[k], after[i], JOBID_LEN) == 0;
        if (listed)
            continue;
        core_deps_link(c, p, j);
        unmet++;
    }
    if (failed != NULL) {
        j->state = JOB_WAITING; /* so that it fails as a waiting job */
        core_space_of(c, j)->stats.waiting++;
        core_job_queue(c, j)->waiting++;
        core_deps_fail(c, j, failed->id, false);
        return true;
    }
    if (unmet == 0)
        return false;
    core_more_need(c, j)->unmet = unmet;
    j->state = JOB_WAITING;
    core_space_of(c, j)->stats.waiting++;
    core_job_queue(c, j)->waiting++;
    return true;
}
