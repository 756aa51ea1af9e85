/* glob.h - glob patterns in the syntax of Redis's MATCH (KEYS, SCAN), as
 * Faktory's MUTATE hands its "regexp" to Redis:
 *
 *   *        any run of bytes, the empty one too
 *   ?        any one byte
 *   [set]    one byte of the set: bytes, ranges a-z (either way round:
 *            z-a is a-z), \x for the byte x; [^set] for one byte outside
 *            it.  ] right after [ or [^ closes an empty set (which takes
 *            nothing; [^] takes any byte); a set not closed runs to the
 *            pattern's end
 *   \x       the byte x (a \ at the pattern's end stands for itself)
 *   x        the byte x
 *
 * matched against the whole text, byte by byte (no case folding, no
 * UTF-8).  Two rules come from Redis as they are: the empty text matches
 * only the empty pattern (not "*"), and [!set] is no negation (! is a
 * member).  One does not: range ends are compared as unsigned bytes,
 * where Redis compares C chars (signed on x86-64, unsigned on arm64), so
 * a range from below 0x80 to 0x80 or above differs from Redis's on x86-64
 * (GLOB_STRICT refuses it).  Checked against Redis 7.0.15's KEYS on
 * 80,000 random patterns and texts: no other difference.
 *
 * A pattern is compiled once; a match costs O(n * ceil(m / 64)) for a text
 * of n bytes and a pattern of m: the parts between stars are found in
 * order, each at its leftmost place (which leaves the most room to the
 * rest), by a bit-parallel scan that never backtracks.  Pure: no I/O, no
 * state beyond the compiled pattern. */
#ifndef WQ_GLOB_H
#define WQ_GLOB_H

#include "lib/wq.h"

struct glob;

/* Refuse the ranges Redis reads in a way that surprises or depends on
 * the platform: written high to low (z-a), or from below 0x80 to 0x80 or
 * above.  Every pattern glob_new takes with it matches as in Redis. */
#define GLOB_STRICT 1u

/* Compile the pattern p[0..n), which may hold any bytes (NUL too); flags
 * is 0 or GLOB_STRICT.  NULL only when GLOB_STRICT refuses a range (it
 * aborts if memory is exhausted: the compiled pattern takes about 100
 * bytes per pattern byte, so callers bound n; MUTATE: 1024 bytes). */
struct glob *glob_new(const char *p, size_t n, unsigned flags);
/* Free a compiled pattern; NULL is ignored. */
void glob_free(struct glob *g);

/* Does the whole text s[0..n) match g? */
bool glob_match(const struct glob *g, const char *s, size_t n);

#endif /* WQ_GLOB_H */
