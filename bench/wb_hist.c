/* wb_hist.c - workq-bench's latency histogram: bucketing, recording and
 * percentiles (see wb_hist.h). */
#include "wb_hist.h"

/* Bucket of v: v itself below WB_HIST_SUB; above, the top WB_HIST_SUB_BITS + 1
 * significant bits of v (which start with a 1) offset by one WB_HIST_SUB-sized
 * block per power of two, so bucket width doubles with each power. */
static unsigned
hist_index(uint64_t v)
{
    if (v < WB_HIST_SUB)
        return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - WB_HIST_SUB_BITS;
    return shift * WB_HIST_SUB + (unsigned)(v >> shift);
}

/* The largest value that lands in bucket i. */
static uint64_t
hist_upper(unsigned i)
{
    if (i < 2 * WB_HIST_SUB)
        return i;
    unsigned shift = i / WB_HIST_SUB - 1;
    uint64_t mant = i - shift * WB_HIST_SUB;
    return ((mant + 1) << shift) - 1;
}

/* Count one sample, clamped into the histogram's range. */
void
wb_hist_record(struct wb_hist *h, uint64_t us)
{
    if (us >= ((uint64_t)1 << WB_HIST_MAX_BITS))
        us = ((uint64_t)1 << WB_HIST_MAX_BITS) - 1;
    h->buckets[hist_index(us)]++;
    h->count++;
    h->sum += us;
    if (us > h->max)
        h->max = us;
}

/* The smallest bucket bound with at least permyriad/10000 of the samples at
 * or below it (nearest rank), capped at the largest sample; 0 if empty. */
uint64_t
wb_hist_percentile(const struct wb_hist *h, unsigned permyriad)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (h->count * permyriad + 9999) / 10000;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < WB_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t v = hist_upper(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}
