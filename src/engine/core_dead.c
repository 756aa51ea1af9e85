/* core_dead.c - the dead set's list (struct core_dead): the jobs that
 * asked for it (add -dead=1) and failed for good, oldest death first.
 * Only the list: core.c decides when a job dies, is revived or goes. */
#include "lib/wq.h"
#include "engine/core_dead.h"

#include "engine/core_ext.h"

void
core_dead_link(struct core *c, struct job *j, int64_t died_ms)
{
    struct job_more *m = core_more_need(c, j);
    WQ_ASSERT(!list_linked(&m->dead_link));
    m->died_ms = died_ms > 0 ? died_ms : 1; /* 0 says "not dead" */
    m->job = j;
    struct core_dead *d = &core_space_of(c, j)->dead;
    list_push_back(&d->jobs, &m->dead_link);
    d->count++;
}

/* j's job_more when j is in the dead set, else NULL. */
static struct job_more *
core_dead_more(const struct core *c, const struct job *j)
{
    if (!(j->flags & JOB_F_DEAD) || j->state != JOB_FAILED)
        return NULL;
    struct job_more *m = core_more_of(core_job_ext(c, j));
    return m != NULL && list_linked(&m->dead_link) ? m : NULL;
}

void
core_dead_unlink(struct core *c, struct job *j)
{
    struct job_more *m = core_dead_more(c, j);
    if (m == NULL)
        return;
    list_unlink(&m->dead_link);
    m->died_ms = 0;
    m->job = NULL;
    core_space_of(c, j)->dead.count--;
}

int64_t
core_job_died(const struct core *c, const struct job *j)
{
    const struct job_more *m = core_dead_more(c, j);
    return m != NULL ? m->died_ms : 0;
}

uint64_t
core_dead_end(const struct core *c, const struct job *j)
{
    const struct job_more *m = core_dead_more(c, j);
    if (m == NULL)
        return UINT64_MAX;
    uint64_t died = m->died_ms > 0 ? (uint64_t)m->died_ms : 0, end;
    uint64_t ttl = core_space_of(c, j)->dead.ttl_ms;
    return __builtin_add_overflow(died, ttl, &end) ? UINT64_MAX : end;
}

struct job *
core_dead_oldest(const struct core *c, uint8_t space)
{
    const struct core_dead *d = &c->space[space].dead;
    if (list_empty(&d->jobs))
        return NULL;
    return list_item(d->jobs.next, struct job_more, dead_link)->job;
}

size_t
core_dead_jobs(const struct core *c, uint8_t space, uint64_t offset, size_t limit,
               const struct job **out)
{
    const struct list *head = &c->space[space].dead.jobs;
    size_t n = 0;
    uint64_t skip = 0;
    for (const struct list *l = head->next; l != head && n < limit; l = l->next) {
        if (skip++ < offset)
            continue;
        out[n++] = list_item(l, const struct job_more, dead_link)->job;
    }
    return n;
}
