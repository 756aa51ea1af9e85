/* jobid.c - job id parsing and formatting. */
#include "wq.h"
#include "jobid.h"

#include <string.h>
#include <uuid.h>

int
jobid_parse(const char *s, size_t len, uint8_t id[JOBID_LEN])
{
    char text[JOBID_TEXT_LEN + 1];
    if (len != JOBID_TEXT_LEN)
        return -1;
    /* uuid_parse is lenient about nothing we care for, but check the shape
     * ourselves so the rule is ours: dashes at 8/13/18/23, hex elsewhere. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')))
            return -1;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    if (uuid_parse(text, id) != 0 || uuid_is_null(id))
        return -1;
    return 0;
}

void
jobid_format(const uint8_t id[JOBID_LEN], char out[JOBID_TEXT_LEN + 1])
{
    uuid_unparse_lower(id, out);
}
