/* job.c - job ordering keys and small helpers. */
#include "wq.h"
#include "job.h"

const char *const job_state_names[JOB_STATE_COUNT] = {"new", "completed", "failed", "pending",
                                                      "leased"};

/* Map a priority so that a higher priority gives a smaller key. */
static inline uint64_t
priority_desc(int32_t priority)
{
    uint32_t ordered = (uint32_t)priority ^ 0x80000000u; /* int32 order as uint32 order */
    return (uint64_t)(uint32_t)~ordered;
}

/* Map signed Unix ms onto uint64 preserving order. */
static inline uint64_t
time_key(int64_t ms)
{
    return (uint64_t)ms ^ 0x8000000000000000ull;
}

void
job_ready_key(const struct job *j, uint64_t k[3])
{
    bool timed = j->flags & JOB_F_TIMED;
    k[0] = (priority_desc(j->priority) << 1) | timed;
    k[1] = timed ? time_key(j->time_ms) : 0;
    k[2] = ((uint64_t)j->time_ns << 44) | j->seq; /* time_ns is 0 untimed */
}

void
job_scheduled_key(const struct job *j, uint64_t k[3])
{
    k[0] = time_key(j->time_ms);
    k[1] = ((uint64_t)j->time_ns << 32) | priority_desc(j->priority);
    k[2] = j->seq;
}

void
job_set_heap_index(void *elem, uint32_t idx)
{
    ((struct job *)elem)->heap_index = idx;
}

void
job_id_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct job *)elem)->id;
    *len = JOBID_LEN;
}
