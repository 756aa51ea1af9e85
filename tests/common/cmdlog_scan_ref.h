/* cmdlog_scan_ref.h - the definition the recovery scan (cmdlog_scan) must
 * keep, for its unit test and its fuzz target: the old scan, a decode
 * tried at every offset. */
#ifndef WQ_TESTS_CMDLOG_SCAN_REF_H
#define WQ_TESTS_CMDLOG_SCAN_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/cmdlog_codec.h"

/* Is there an offset in [from, len) where cmdlog_rec_decode takes a
 * record from the bytes to the end? */
static inline bool
naive_valid_after(const uint8_t *buf, size_t len, size_t from)
{
    struct cmdlog_rec r;
    size_t used;
    for (size_t at = from; at + CMDLOG_TIME_LEN + 1 + CMDLOG_CRC_LEN <= len; at++)
        if (buf[at] == 1 && cmdlog_rec_decode(buf + at, len - at, &r, &used) == CMDLOG_REC_OK)
            return true;
    return false;
}

#endif /* WQ_TESTS_CMDLOG_SCAN_REF_H */
