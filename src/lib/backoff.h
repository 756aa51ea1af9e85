/* backoff.h - when a failed job is tried again: Faktory's retry backoff,
 * which both the engine's retry policy (add -backoff=faktory) and the
 * Faktory front-end use. */
#ifndef WQ_BACKOFF_H
#define WQ_BACKOFF_H

#include "lib/wq.h"

/* The latest time a backoff gives: 9999-12-31T23:59:59.999Z, Unix ms (the
 * last a time of the protocols can say). */
#define BACKOFF_MAX_MS 253402300799999ull

/* When the retry after the count-th failure (0 for the first) is due, Unix
 * ms: after now, 15 + count^4 + r * (count + 1) seconds of unit ms each
 * (r a random number below 30), at most BACKOFF_MAX_MS.  Saturating, not
 * wrapping: count^4 alone passes 2^64 at count 65536. */
uint64_t backoff_faktory_at(uint64_t now, uint64_t count, uint64_t r, uint64_t unit);

#endif /* WQ_BACKOFF_H */
