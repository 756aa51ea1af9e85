/* util.h - strict number parsing, times, and the server clock. */
#ifndef WQ_UTIL_H
#define WQ_UTIL_H

#include "lib/wq.h"

#include <string.h>

/* The next item of the comma-separated list that ends at end, from *p
 * (start it at the list's first byte): true with *item set and *p moved
 * past its comma, false once the list is done.  "a,,b" has an empty item,
 * and so does an empty list. */
static inline bool
util_list_next(const char **p, const char *end, struct wq_str *item)
{
    if (*p > end)
        return false;
    const char *comma = memchr(*p, ',', (size_t)(end - *p));
    *item = (struct wq_str){*p, (size_t)((comma != NULL ? comma : end) - *p)};
    *p += item->n + 1;
    return true;
}

/* Parse s[0..len) as decimal digits only (no sign, no spaces, leading zeros
 * fine) into a value <= max.  0 on success, -1 otherwise. */
int util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);
/* Parse an optional sign ('+' or '-') and decimal digits into [min, max]. */
int util_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out);

/* Parse a byte count: digits and an optional binary unit K, M, G or T
 * (also KB/KiB..., any case; "B" or none means bytes) into [0, max]. */
int util_parse_size(const char *s, uint64_t max, uint64_t *out);
/* Parse a duration into ms: digits and a unit ms, s, m or h; bare digits
 * are seconds.  The result must be at most max. */
int util_parse_duration_ms(const char *s, uint64_t max, uint64_t *out);

/* Format Unix milliseconds as YYYY-MM-DDTHH:MM:SSZ into buf (>= 21 bytes);
 * returns the length (20).  Times outside the years 0000-9999 are clamped. */
size_t util_format_time(int64_t unix_ms, char *buf);
/* Parse YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z (a real UTC date) into Unix ms
 * (fraction truncated to ms).  0 on success, -1 otherwise. */
int util_parse_time(const char *s, size_t len, int64_t *unix_ms);
/* The same, also giving the nanoseconds below the millisecond. */
int util_parse_time_ns(const char *s, size_t len, int64_t *unix_ms, uint32_t *sub_ms_ns);

/* The server clock in milliseconds: the wall clock read once at start plus
 * the monotonic time elapsed since, so it tracks UTC but never jumps. */
uint64_t util_now_ms(void);

#endif /* WQ_UTIL_H */
