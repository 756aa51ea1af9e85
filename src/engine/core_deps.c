/* core_deps.c - jobs that wait for other jobs (add -after, ours): a job
 * with prerequisites is WAITING and counts those not yet completed; each
 * prerequisite keeps the list of its dependents, so that completing,
 * failing or losing it touches its own dependents only.  Failures spread
 * down a chain through a work list, not by recursion, so a chain of any
 * depth costs no stack. */
#include "lib/wq.h"
#include "engine/core.h"
#include "engine/core_internal.h"

#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/payload.h"

/* The dependents of one prerequisite, taken from it to be worked through:
 * released (it completed) or failed (it failed or went). */
struct dep_work {
    struct dep_work *next;
    struct job_dep *deps;
    uint32_t n, cap;
    bool completed;
    bool gone; /* deleted or expired, rather than failed */
    uint8_t prereq[JOBID_LEN];
};

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

/* Fail waiting job d for prerequisite p (the result names it). */
static void
core_deps_fail(struct core *c, struct job *d, const struct dep_work *w)
{
    char id[JOBID_TEXT_LEN + 1], text[96];
    jobid_format(w->prereq, id);
    int n = snprintf(text, sizeof text, w->gone ? CORE_PREREQ_GONE : CORE_PREREQ_FAILED, id);
    char *result = payload_new(text, (size_t)n);
    if (result == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory failing a dependent job");
    core_record_result(c, d, CMDLOG_FAIL, text, (size_t)n);
    core_job_settle(c, d, JOB_FAILED, result, (uint32_t)n);
}

/* Work through the pending lists until none is left: releasing a job
 * changes nothing here, failing one adds its own dependents at the end. */
static void
core_deps_run(struct core *c)
{
    if (c->deps_busy)
        return;
    c->deps_busy = true;
    while (c->deps != NULL) {
        struct dep_work *w = c->deps;
        c->deps = w->next;
        for (uint32_t i = 0; i < w->n; i++) {
            struct job *d = core_find(c, w->deps[i].id);
            if (d == NULL || d->seq != w->deps[i].seq || d->state != JOB_WAITING)
                continue;
            struct job_more *dm = core_more_of(core_job_ext(c, d));
            if (dm->broadcast) { /* a copy is done, whatever came of it */
                if (--dm->unmet == 0)
                    core_job_settle(c, d, JOB_COMPLETED, NULL, 0);
                continue;
            }
            if (!w->completed) {
                core_deps_fail(c, d, w);
            } else if (--dm->unmet == 0) {
                core_job_release(c, d, c->now_ms);
                core_ext_trim(c, d);
            }
        }
        c->bytes -= (uint64_t)w->cap * sizeof *w->deps;
        wq_free(w->deps);
        wq_free(w);
    }
    c->deps_busy = false;
}

/* Hand j's dependents (x is its job_ext, or NULL) over to the work list
 * (completed: release them). */
static void
core_deps_take(struct core *c, struct job *j, struct job_ext *x, bool completed, bool gone)
{
    struct job_more *m = core_more_of(x);
    if (m == NULL || m->ndependents == 0)
        return;
    struct dep_work *w = wq_malloc(sizeof *w);
    *w = (struct dep_work){
        .deps = m->dependents,
        .n = m->ndependents,
        .cap = m->dependents_cap,
        .completed = completed,
        .gone = gone,
    };
    memcpy(w->prereq, j->id, JOBID_LEN);
    m->dependents = NULL;
    m->ndependents = m->dependents_cap = 0;
    /* last in line, so a chain fails in the order its links were made */
    struct dep_work **tail = &c->deps;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = w;
    core_deps_run(c);
}

void
core_deps_settled(struct core *c, struct job *j, struct job_ext *x)
{
    core_deps_take(c, j, x, j->state == JOB_COMPLETED, false);
}

void
core_deps_gone(struct core *c, struct job *j, struct job_ext *x)
{
    core_deps_take(c, j, x, false, true);
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
    c->stats.waiting++;
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
        struct dep_work w = {.completed = false};
        memcpy(w.prereq, failed->id, JOBID_LEN);
        j->state = JOB_WAITING; /* so that it fails as a waiting job */
        c->stats.waiting++;
        core_job_queue(c, j)->waiting++;
        core_deps_fail(c, j, &w);
        return true;
    }
    if (unmet == 0)
        return false;
    core_more_need(c, j)->unmet = unmet;
    j->state = JOB_WAITING;
    c->stats.waiting++;
    core_job_queue(c, j)->waiting++;
    return true;
}
