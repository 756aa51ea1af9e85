/* core_wait.c - the core's waiters: clients parked in lease (one node in
 * each named queue), and clients waiting for a job's result (result, run,
 * a fan-in's parts), linked to the job's job_ext; their wait-timeouts on
 * the core's second wheel (which core.c runs).  The commands that park
 * them are core_cmd.c's. */
#include "lib/wq.h"
#include "engine/core_wait.h"
#include "engine/core_ext.h"

#include <string.h>

#include "lib/alloc.h"
#include "engine/workers.h"

void
core_worker_waits(struct worker *who, const struct wq_str *names, size_t n)
{
    char text[256];
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        workers_note_queue(who, names[i].p, names[i].n);
    for (size_t i = 0; i < n && at + names[i].n + 2 < sizeof text; i++) {
        if (i > 0)
            text[at++] = ',';
        memcpy(text + at, names[i].p, names[i].n);
        at += names[i].n;
    }
    text[at] = '\0';
    workers_set_waiting(who, text);
}

uint64_t
core_waiter_deadline(const struct wheel_entry *e, void *arg)
{
    return WQ_CONTAINER_OF(e, const struct waiter, timer)->deadline;
}

/* Free part p of a fan-in (not counted as a client). */
static void
core_part_free(struct core *c, struct waiter *p)
{
    hlist_unlink(&p->link);
    core_ext_trim(c, p->job);
    p->group->parts[p->part_ix] = NULL;
    pool_put(&c->waiter_pool, p);
}

void
core_waiter_free(struct core *c, struct waiter *w)
{
    wheel_cancel(&c->wait_wheel, &w->timer);
    if (w->kind == WAITER_ALL) {
        for (uint32_t i = 0; i < w->nids; i++)
            if (w->parts[i] != NULL)
                core_part_free(c, w->parts[i]);
        wq_free(w->parts);
        wq_free(w->ids);
    } else if (w->kind == WAITER_LEASE) {
        if (w->who != NULL)
            workers_set_waiting(w->who, NULL);
        for (uint32_t i = 0; i < w->nnodes; i++) {
            struct queue *q = w->nodes[i].queue;
            queue_unpark(q, &w->nodes[i]);
            queue_table_unref(&c->space[q->space].queues, q);
        }
        if (w->nodes != &w->one)
            wq_free(w->nodes);
    } else if (w->job != NULL) {
        hlist_unlink(&w->link);
        core_ext_trim(c, w->job);
    }
    c->space[w->space].stats.parked--;
    pool_put(&c->waiter_pool, w);
}

/* End a wait: take the waiter out of everything, then tell its owner.  A
 * fan-in's part only counts down its fan-in, which ends with its last. */
void
core_waiter_finish(struct core *c, struct waiter *w, enum waiter_outcome how, struct job *j)
{
    if (w->kind == WAITER_PART) {
        struct waiter *group = w->group;
        core_part_free(c, w);
        if (--group->pending == 0)
            core_waiter_finish(c, group, WAITER_GOT, NULL);
        return;
    }
    if (w->kind == WAITER_ALL) {
        wait_all_fn done = w->all_done;
        void *owner = w->owner;
        uint8_t(*ids)[JOBID_LEN] = w->ids;
        size_t n = w->nids;
        w->ids = NULL; /* kept for the call */
        core_waiter_free(c, w);
        done(owner, how, c, (const uint8_t(*)[JOBID_LEN])ids, n);
        wq_free(ids);
        return;
    }
    waiter_done_fn done = w->done;
    void *owner = w->owner;
    core_waiter_free(c, w);
    done(owner, how, c, j);
}

struct waiter *
core_waiter_new(struct core *c, uint8_t space, enum waiter_kind kind, uint64_t deadline,
                waiter_done_fn done, void *owner)
{
    struct waiter *w = pool_get(&c->waiter_pool);
    memset(w, 0, sizeof *w);
    w->kind = (uint8_t)kind;
    w->space = space;
    w->done = done;
    w->owner = owner;
    w->deadline = deadline;
    wheel_entry_init(&w->timer);
    wheel_add(&c->wait_wheel, &w->timer, deadline);
    c->space[space].stats.parked++;
    return w;
}

/* Answer every result waiter of j (it has its result, or is going away);
 * x is j's job_ext or NULL.  Returns the job_ext j still has, or NULL. */
struct job_ext *
core_wake_result_waiters(struct core *c, struct job *j, struct job_ext *x, enum waiter_outcome how)
{
    while (x != NULL && x->waiters.first != NULL) {
        core_waiter_finish(c, core_waiter_of(x->waiters.first), how, j);
        if (!(j->flags & JOB_F_EXT))
            x = NULL; /* the last waiter took the job_ext with it */
    }
    return x;
}

/* The waiting client of run job j, or NULL. */
struct waiter *
core_run_waiter(const struct core *c, const struct job *j)
{
    const struct job_ext *x = core_job_ext(c, j);
    for (struct hlist_node *n = x != NULL ? x->waiters.first : NULL; n != NULL; n = n->next) {
        if (core_waiter_of(n)->kind == WAITER_RUN)
            return core_waiter_of(n);
    }
    return NULL;
}

/* Link waiter w to job j's list of waiters. */
void
core_waiter_link(struct core *c, struct waiter *w, struct job *j)
{
    struct job_ext *x = core_ext_need(c, j);
    w->job = j;
    hlist_push(&x->waiters, &w->link);
}
