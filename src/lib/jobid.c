/* jobid.c - job id parsing and formatting. */
#include "lib/wq.h"
#include "lib/jobid.h"

#include <string.h>
#include <uuid.h>

/* The value of hex digit c, or -1. */
static inline int
hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* lower case */
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int
jobid_parse(const char *s, size_t len, uint8_t id[JOBID_LEN])
{
    /* Parsed by hand: this runs for every command that names a job, and
     * libuuid's parser goes through strtoul for each field. */
    if (len != JOBID_TEXT_LEN)
        return -1;
    uint8_t any = 0;
    size_t i = 0;
    for (int b = 0; b < JOBID_LEN; b++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return -1;
            i++;
        }
        int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id[b] = (uint8_t)(hi << 4 | lo);
        any |= id[b];
        i += 2;
    }
    return any != 0 ? 0 : -1; /* the nil UUID is no job's id */
}

void
jobid_format(const uint8_t id[JOBID_LEN], char out[JOBID_TEXT_LEN + 1])
{
    uuid_unparse_lower(id, out);
}
