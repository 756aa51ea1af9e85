/* job.c - job ordering keys and small helpers. */
#include "wq.h"
#include "job.h"

#include "registry.h"

const char *const job_state_names[JOB_STATE_COUNT] = {"new", "completed", "failed", "pending",
                                                      "leased"};

/* Map a priority so that a higher priority gives a smaller key. */
static inline uint32_t
priority_desc(int32_t priority)
{
    uint32_t ordered = (uint32_t)priority ^ 0x80000000u; /* int32 order as uint32 order */
    return ~ordered;
}

/* Map signed Unix ms onto uint64 preserving order. */
static inline uint64_t
time_key(int64_t ms)
{
    return (uint64_t)ms ^ 0x8000000000000000ull;
}

/* Unix ms from 2020 on, in 31 bits of seconds (until 2088), clamped: an
 * order-preserving prefix of a time, exact to the second in that range. */
static inline uint64_t
time_prefix31(int64_t ms)
{
    const int64_t from = 1577836800000; /* 2020-01-01 */
    const int64_t span = ((int64_t)1 << 31) - 1;
    if (ms <= from)
        return 0;
    int64_t s = (ms - from) / 1000;
    return (uint64_t)(s < span ? s : span);
}

/* Priority in the top half, then the timed bit, then 31 bits of the time
 * (timed) or of the arrival number (untimed; equal within 8192 arrivals). */
uint64_t
job_ready_key(const struct job *j)
{
    bool timed = j->flags & JOB_F_TIMED;
    uint64_t low = timed ? time_prefix31(j->base_ms) : j->seq >> (JOB_SEQ_BITS - 31);
    return (uint64_t)priority_desc(j->priority) << 32 | (uint64_t)timed << 31 | low;
}

uint64_t
job_scheduled_key(const struct job *j)
{
    return time_key(j->base_ms);
}

/* The nanoseconds of a scheduled job's time (0 for most). */
static uint32_t
job_time_ns(const struct job *j, const struct registry *exts)
{
    if (!(j->flags & JOB_F_NS))
        return 0;
    const struct job_ext *x = registry_find(exts, j->id, JOBID_LEN);
    return x->time_ns;
}

/* Called only when the keys are equal: same priority and timedness. */
bool
job_ready_tie(const void *a, const void *b, void *exts)
{
    const struct job *x = a, *y = b;
    if (x->flags & JOB_F_TIMED) {
        if (x->base_ms != y->base_ms)
            return x->base_ms < y->base_ms;
        uint32_t xn = job_time_ns(x, exts), yn = job_time_ns(y, exts);
        if (xn != yn)
            return xn < yn;
    }
    return x->seq < y->seq;
}

/* Called only when the keys are equal: the same millisecond. */
bool
job_scheduled_tie(const void *a, const void *b, void *exts)
{
    const struct job *x = a, *y = b;
    uint32_t xn = job_time_ns(x, exts), yn = job_time_ns(y, exts);
    if (xn != yn)
        return xn < yn;
    if (x->priority != y->priority)
        return x->priority > y->priority;
    return x->seq < y->seq;
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

void
job_ext_id_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct job_ext *)elem)->id;
    *len = JOBID_LEN;
}
