/* rng.h - the one pseudo-random generator of the tests, unit and system:
 * xorshift64*, so that a seed gives the same sequence on every run and
 * platform.  Each file that includes it has its own state. */
#ifndef WQ_TESTS_RNG_H
#define WQ_TESTS_RNG_H

#include <stdint.h>

static uint64_t rng_state = 1;

/* Start the sequence of seed (0, which xorshift would keep for ever, is
 * taken as 1). */
static inline void
rng_seed(uint64_t seed)
{
    rng_state = seed != 0 ? seed : 1;
}

static inline uint64_t
rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* A number below n (> 0); the modulo's slight bias does not matter here. */
static inline uint64_t
rng_below(uint64_t n)
{
    return rng_next() % n;
}

#endif /* WQ_TESTS_RNG_H */
