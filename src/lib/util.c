/* util.c - strict number parsing, times, the server clock. */
#include "lib/wq.h"
#include "lib/util.h"

#include <string.h>
#include <strings.h>
#include <time.h>

int
util_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    if (len == 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9)
            return -1;
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

int
util_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    bool neg = false;
    if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        s++;
        len--;
    }
    uint64_t mag;
    if (util_parse_u64(s, len, (uint64_t)INT64_MAX + 1, &mag) != 0)
        return -1;
    int64_t v;
    if (neg)
        v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else if (mag > (uint64_t)INT64_MAX)
        return -1;
    else
        v = (int64_t)mag;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Split s into its leading digits and the unit after them, parse the
 * digits and scale them by the unit's factor from units (NULL-terminated
 * names; an empty name is the bare number).  0, or -1 for an unknown unit,
 * no digits, overflow or a result above max. */
static int
util_parse_scaled(const char *s, const char *const *units, const uint64_t *factors, uint64_t max,
                  uint64_t *out)
{
    size_t n = 0, len = strlen(s);
    while (n < len && s[n] >= '0' && s[n] <= '9')
        n++;
    uint64_t v;
    if (util_parse_u64(s, n, UINT64_MAX, &v) != 0)
        return -1;
    for (size_t i = 0; units[i] != NULL; i++) {
        if (strcasecmp(s + n, units[i]) != 0)
            continue;
        if (factors[i] != 0 && v > max / factors[i])
            return -1;
        v *= factors[i];
        if (v > max)
            return -1;
        *out = v;
        return 0;
    }
    return -1;
}

int
util_parse_size(const char *s, uint64_t max, uint64_t *out)
{
    static const char *const units[] = {"",  "b",  "k",   "kb", "kib", "m",   "mb", "mib",
                                        "g", "gb", "gib", "t",  "tb",  "tib", NULL};
    static const uint64_t factors[] = {1,          1,          1ull << 10, 1ull << 10, 1ull << 10,
                                       1ull << 20, 1ull << 20, 1ull << 20, 1ull << 30, 1ull << 30,
                                       1ull << 30, 1ull << 40, 1ull << 40, 1ull << 40};
    return util_parse_scaled(s, units, factors, max, out);
}

int
util_parse_duration_ms(const char *s, uint64_t max, uint64_t *out)
{
    static const char *const units[] = {"", "ms", "s", "m", "h", NULL};
    static const uint64_t factors[] = {1000, 1, 1000, 60000, 3600000};
    return util_parse_scaled(s, units, factors, max, out);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil algorithm). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* The inverse of days_from_civil (same source). */
static void
civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Write v as exactly n decimal digits, zero-padded. */
static char *
put_digits(char *p, unsigned v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + n;
}

/* 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the years the format
 * (and util_parse_time) can express. */
#define UTIL_TIME_MIN_MS (-62167219200000LL)
#define UTIL_TIME_MAX_MS 253402300799999LL

size_t
util_format_time(int64_t unix_ms, char *buf)
{
    /* Four-digit years only (as Go's RFC 3339 layout, and what
     * util_parse_time reads back); times outside them are clamped rather
     * than overflowing the 21-byte buffer.  strftime is not used: glibc's %Y
     * does not pad years below 1000. */
    unix_ms = WQ_MAX(WQ_MIN(unix_ms, UTIL_TIME_MAX_MS), UTIL_TIME_MIN_MS);
    int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    unsigned sod = (unsigned)(secs - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);

    char *p = put_digits(buf, (unsigned)y, 4);
    *p++ = '-';
    p = put_digits(p, m, 2);
    *p++ = '-';
    p = put_digits(p, d, 2);
    *p++ = 'T';
    p = put_digits(p, sod / 3600, 2);
    *p++ = ':';
    p = put_digits(p, sod / 60 % 60, 2);
    *p++ = ':';
    p = put_digits(p, sod % 60, 2);
    *p++ = 'Z';
    *p = '\0';
    return (size_t)(p - buf);
}

static bool
digits(const char *s, size_t n, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

int
util_parse_time(const char *s, size_t len, int64_t *unix_ms)
{
    uint32_t sub;
    return util_parse_time_ns(s, len, unix_ms, &sub);
}

int
util_parse_time_ns(const char *s, size_t len, int64_t *unix_ms, uint32_t *sub_ms_ns)
{
    /* YYYY-MM-DDTHH:MM:SS is 19 bytes, then an optional .f{1,9}, then Z */
    unsigned y, mo, d, h, mi, sec, ms = 0, ns = 0;
    if (len < 20 || s[len - 1] != 'Z')
        return -1;
    if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
        return -1;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
        return -1;
    size_t rest = len - 20; /* bytes between the seconds and the Z */
    if (rest > 0) {
        size_t nfrac = rest - 1;
        unsigned frac;
        if (s[19] != '.' || nfrac < 1 || nfrac > 9 || !digits(s + 20, nfrac, &frac))
            return -1;
        ns = frac; /* scale the fraction to nanoseconds */
        for (size_t i = nfrac; i < 9; i++)
            ns *= 10;
        ms = ns / 1000000;
        ns %= 1000000;
    }
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
        return -1;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return -1;
    int64_t days = days_from_civil((int64_t)y, mo, d);
    *unix_ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)sec * 1000 + ms;
    *sub_ms_ns = ns;
    return 0;
}

uint64_t
util_now_ms(void)
{
    /* In nanoseconds, rounded down once at the end: rounding the two
     * readings apart could put the clock up to 1 ms ahead of UTC. */
    static int64_t base_ns = -1;
    static int64_t mono_base_ns;
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t mono = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (base_ns < 0) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        base_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
        mono_base_ns = mono;
    }
    return (uint64_t)((base_ns + (mono - mono_base_ns)) / 1000000);
}
