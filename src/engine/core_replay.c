/* core_replay.c - applying the command log's records to the core at
 * start-up (doc/cmdlog.md, "Replay"), those of the side store by way of
 * its replay callback. */
#include "lib/wq.h"
#include "engine/core.h"
#include "engine/core_internal.h"

#include <string.h>

#include "store/cmdlog_files.h"
#include "lib/payload.h"

/* Re-create the job of an add or schedule record, unless already gone. */
static void
core_replay_add(struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    struct job_spec s = {
        .name = r->name,
        .ttr = (uint32_t)r->ttr,
        .ttl = r->ttl,
        .priority = (int32_t)r->priority,
        .max_attempts = (uint8_t)r->max_attempts,
        .max_fails = (uint8_t)r->max_fails,
        .timed = r->code == CMDLOG_SCHEDULE && r->timed,
        .time_ms = r->time_ms,
        .time_ns = r->time_ns,
        .payload = r->payload.p,
        .payload_len = r->payload.n,
        .created_ms = r->created_ms,
    };
    memcpy(s.id, r->id, JOBID_LEN);
    /* Values the protocol could never have accepted mean a damaged record. */
    struct wq_str name = r->name;
    if (name.n == 0 || name.n > WQ_MAX_NAME || r->ttr == 0 || r->ttr > WQ_MAX_TTR_MS ||
        r->ttl == 0 || r->priority < INT32_MIN || r->priority > INT32_MAX ||
        r->max_attempts > WQ_MAX_ATTEMPTS || r->max_fails > WQ_MAX_FAILS ||
        r->payload.n > UINT32_MAX || s.created_ms == 0)
        return;
    /* A job whose life ended while the server was down comes back too: the
     * first core_advance expires it, and logs that, so cleaning can drop
     * its records. */
    core_add_job(c, &s, now_ms, false);
}

void
core_replay(struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    core_record_fn record = c->record;
    c->record = NULL;
    c->now_ms = WQ_MAX(c->now_ms, now_ms);
    if (!cmdlog_code_has_id(r->code)) { /* not the core's: a space owner's */
        for (size_t i = 0; i < JOB_SPACES; i++) {
            struct core_space *sp = &c->space[i];
            if (sp->ops != NULL && sp->ops->replay != NULL && r->code >= sp->code_lo &&
                r->code <= sp->code_hi)
                sp->ops->replay(sp->arg, c, r, now_ms);
        }
        c->record = record;
        return;
    }
    struct job *j = core_find(c, r->id);
    switch (r->code) {
    case CMDLOG_ADD:
    case CMDLOG_SCHEDULE:
        if (j == NULL)
            core_replay_add(c, r, now_ms);
        break;
    case CMDLOG_START_ATTEMPT:
        /* The lease starts over with a fresh TTR from now. */
        if (j != NULL && (j->state == JOB_NEW || j->state == JOB_PENDING)) {
            core_job_detach(c, j);
            core_lease_job(c, j, now_ms, NULL);
        }
        break;
    case CMDLOG_TIMEOUT_ATTEMPT:
        if (j != NULL && j->state == JOB_LEASED)
            core_job_ttr_expired(c, j, now_ms, r->at_ms); /* it died then */
        break;
    case CMDLOG_COMPLETE:
    case CMDLOG_FAIL:
        if (j != NULL && !job_is_done(j)) {
            char *result = NULL;
            if (r->result.n > 0 && (result = payload_new(r->result.p, r->result.n)) == NULL)
                wq_panic(__FILE__, __LINE__, "out of memory replaying a result");
            if (r->code == CMDLOG_FAIL)
                j->fails++;
            core_job_settle(c, j, r->code == CMDLOG_COMPLETE ? JOB_COMPLETED : JOB_FAILED, result,
                            (uint32_t)r->result.n);
            if (r->code == CMDLOG_FAIL)
                core_job_die(c, j, r->at_ms);
        }
        break;
    case CMDLOG_FAIL_BACKOFF:
        if (j != NULL && !job_is_done(j) && j->state != JOB_WAITING) {
            if (j->fails < WQ_MAX_FAILS)
                j->fails++;
            core_job_backoff(c, j, r->time_ms);
        }
        break;
    case CMDLOG_POLICY:
        /* right after its add */
        if (j != NULL && j->state == JOB_NEW)
            j->flags |= (r->backoff == CORE_BACKOFF_FAKTORY ? JOB_F_BACKOFF : 0) |
                        (r->dead ? JOB_F_DEAD : 0);
        break;
    case CMDLOG_REVIVE:
        if (j != NULL && core_job_died(c, j) != 0)
            core_job_revive(c, j, now_ms);
        break;
    case CMDLOG_FAIL_RETRY:
        if (j != NULL && !job_is_done(j))
            core_finish(c, r->id, false, NULL, 0, 0, now_ms);
        break;
    case CMDLOG_CANCEL:
        if (j != NULL && !job_is_done(j))
            core_job_cancel(c, j);
        break;
    case CMDLOG_BROADCAST:
        if (j != NULL && j->state == JOB_NEW && j->place != JOB_NOWHERE) {
            core_job_detach(c, j);
            core_deps_broadcast(c, j, (const uint8_t(*)[JOBID_LEN])r->after.p,
                                r->after.n / JOBID_LEN);
            core_job_arm(c, j);
        }
        break;
    case CMDLOG_AFTER:
        /* right after its add: the job waits again for what is left */
        if (j != NULL && j->state == JOB_NEW && j->place != JOB_NOWHERE &&
            r->after.n / JOBID_LEN <= CORE_MAX_AFTER) {
            core_job_detach(c, j);
            if (core_deps_wait(c, j, (const uint8_t(*)[JOBID_LEN])r->after.p,
                               r->after.n / JOBID_LEN)) {
                if ((j = core_find(c, r->id)) != NULL) /* see core_add_job */
                    core_job_arm(c, j);
            } else
                core_job_place(c, j, JOB_NEW, now_ms);
        }
        break;
    case CMDLOG_DELETE:
    case CMDLOG_EXPIRE:
        if (j != NULL)
            core_job_destroy(c, j);
        break;
    }
    c->record = record;
}

/* cmdlog_replay_ops.apply: into core arg. */
static void
core_replay_apply(void *arg, const struct cmdlog_rec *r, uint64_t now_ms)
{
    core_replay(arg, r, now_ms);
}

/* cmdlog_replay_ops.jobs: the space of ids', and the other spaces'. */
static void
core_replay_jobs(const void *arg, uint64_t *own, uint64_t *side)
{
    const struct core *c = arg;
    *own = core_job_count(c);
    *side = 0;
    for (uint8_t i = 1; i < JOB_SPACES; i++)
        if (c->space[i].open)
            *side += registry_count(c->space[i].jobs);
}

const struct cmdlog_replay_ops core_replay_ops = {
    .apply = core_replay_apply,
    .jobs = core_replay_jobs,
};
