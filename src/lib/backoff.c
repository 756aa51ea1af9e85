/* backoff.c - Faktory's retry backoff. */
#include "lib/wq.h"
#include "lib/backoff.h"

uint64_t
backoff_faktory_at(uint64_t now, uint64_t count, uint64_t r, uint64_t unit)
{
    uint64_t c2, c4, extra, secs, ms, at;
    if (__builtin_mul_overflow(count, count, &c2) || __builtin_mul_overflow(c2, c2, &c4) ||
        __builtin_mul_overflow(r, count + 1, &extra) ||
        __builtin_add_overflow(c4, 15 + extra, &secs) || __builtin_mul_overflow(secs, unit, &ms) ||
        __builtin_add_overflow(now, ms, &at))
        return BACKOFF_MAX_MS;
    return WQ_MIN(at, BACKOFF_MAX_MS);
}
