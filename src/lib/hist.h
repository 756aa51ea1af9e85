/* hist.h - a fixed-bucket histogram of durations in nanoseconds, as
 * Prometheus histograms count them: each observation lands in the first
 * bucket whose upper bound it does not exceed (the last bucket is +Inf),
 * with a running count and sum.  Plain integers: the owner decides who may
 * write (the loop thread, or a thread under its own lock). */
#ifndef WQ_HIST_H
#define WQ_HIST_H

#include "lib/wq.h"

#define HIST_MAX_BUCKETS 16

struct hist {
    const uint64_t *bounds;                /* upper bounds in ns, ascending */
    uint32_t nbounds;                      /* < HIST_MAX_BUCKETS; +Inf is extra */
    uint64_t counts[HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative */
    uint64_t count;
    uint64_t sum_ns;
};

/* The bounds of the job latency histograms (lease wait, result), 1 ms to
 * 1 h, and of the command log's sync histogram, 100 us to 10 s. */
extern const uint64_t hist_job_bounds[];
extern const uint32_t hist_job_nbounds;
extern const uint64_t hist_sync_bounds[];
extern const uint32_t hist_sync_nbounds;

/* Set h up, empty, with bounds[0..n) (kept by reference). */
void hist_init(struct hist *h, const uint64_t *bounds, uint32_t n);

/* Count one observation of ns nanoseconds. */
static inline void
hist_observe(struct hist *h, uint64_t ns)
{
    uint32_t i = 0;
    while (i < h->nbounds && ns > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum_ns += ns;
}

#endif /* WQ_HIST_H */
