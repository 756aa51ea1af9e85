/* wb_hist.h - workq-bench's latency histogram: a fixed-size log-linear
 * histogram of microseconds and its percentiles.  Needs nothing else of
 * workq-bench. */
#ifndef WB_HIST_H
#define WB_HIST_H

#include <stdint.h>

/* A log-linear histogram of microseconds, in the manner of HdrHistogram:
 * values below 2*WB_HIST_SUB are exact, above that every power of two is split
 * into WB_HIST_SUB buckets, so a reported value is within 1/WB_HIST_SUB (0.8%) of
 * the truth.  Fixed size (34 KiB); recording never allocates. */
#define WB_HIST_SUB_BITS 7
#define WB_HIST_SUB      (1u << WB_HIST_SUB_BITS)
#define WB_HIST_MAX_BITS 40 /* 2^40 us is 12 days; larger values are clamped */
#define WB_HIST_BUCKETS  ((WB_HIST_MAX_BITS - WB_HIST_SUB_BITS + 1) * WB_HIST_SUB)

struct wb_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t buckets[WB_HIST_BUCKETS];
};

/* Count one sample, clamped into the histogram's range. */
void wb_hist_record(struct wb_hist *h, uint64_t us);

/* The smallest bucket bound with at least permyriad/10000 of the samples at
 * or below it (nearest rank), capped at the largest sample; 0 if empty. */
uint64_t wb_hist_percentile(const struct wb_hist *h, unsigned permyriad);

#endif /* WB_HIST_H */
