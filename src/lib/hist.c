/* hist.c - the bucket bounds the server's histograms use. */
#include "lib/wq.h"
#include "lib/hist.h"

#include <string.h>

#define MS(x) ((uint64_t)(x)*1000000u)
#define US(x) ((uint64_t)(x)*1000u)

/* Jobs wait and run from milliseconds to hours: the core counts in ms. */
const uint64_t hist_job_bounds[] = {
    MS(1),    MS(5),     MS(10),    MS(50),    MS(100),    MS(500),     MS(1000),
    MS(5000), MS(10000), MS(30000), MS(60000), MS(300000), MS(3600000),
};
const uint32_t hist_job_nbounds = WQ_ARRAY_LEN(hist_job_bounds);

/* fdatasync on an SSD takes 0.1-2 ms, on a disk 5-30 ms, stalled seconds. */
const uint64_t hist_sync_bounds[] = {
    US(100), US(250), US(500), MS(1),   US(2500), MS(5),     MS(10),
    MS(25),  MS(50),  MS(100), MS(250), MS(1000), MS(10000),
};
const uint32_t hist_sync_nbounds = WQ_ARRAY_LEN(hist_sync_bounds);

_Static_assert(WQ_ARRAY_LEN(hist_job_bounds) < HIST_MAX_BUCKETS, "raise HIST_MAX_BUCKETS");
_Static_assert(WQ_ARRAY_LEN(hist_sync_bounds) < HIST_MAX_BUCKETS, "raise HIST_MAX_BUCKETS");

void
hist_init(struct hist *h, const uint64_t *bounds, uint32_t n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->nbounds = n;
}
