/* util.c - strict number parsing, times, the server clock. */
#include "wq.h"
#include "util.h"

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

size_t
util_format_time(int64_t unix_ms, char *buf)
{
    int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    return strftime(buf, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
    /* YYYY-MM-DDTHH:MM:SS is 19 bytes, then an optional .f{1,9}, then Z */
    unsigned y, mo, d, h, mi, sec, ms = 0;
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
        ms = frac;
        for (size_t i = nfrac; i < 3; i++)
            ms *= 10;
        for (size_t i = 3; i < nfrac; i++)
            ms /= 10;
    }
    static const unsigned mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59)
        return -1;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return -1;
    int64_t days = days_from_civil((int64_t)y, mo, d);
    *unix_ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)sec * 1000 + ms;
    return 0;
}

uint64_t
util_now_ms(void)
{
    static int64_t base_ms = -1;
    static int64_t mono_base_ms;
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t mono = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (base_ms < 0) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        base_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
        mono_base_ms = mono;
    }
    return (uint64_t)(base_ms + (mono - mono_base_ms));
}
