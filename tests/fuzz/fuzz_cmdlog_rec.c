/* fuzz_cmdlog_rec.c - libFuzzer target: the command-log record decoder
 * (cmdlog_rec_decode, src/store/cmdlog_codec.c).
 *
 * The input is the bytes at a record's start in a segment.  It is decoded
 * as it is, and again with its CRC made right, so that mutations reach the
 * payload decoder instead of stopping at the checksum.  A record that
 * decodes is encoded again (cmdlog_rec_encode), and that encoding must
 * decode and encode to the same bytes. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/cmdlog_codec.h"

/* Go's zero time, 0001-01-01T00:00:00Z, in Unix ms: a record may carry that
 * instant with nanoseconds the ms drop, and it then comes back as "no
 * time", so such a record cannot round-trip. */
#define ZERO_TIME_MS (-CMDLOG_EPOCH_OFFSET * 1000)

static bool
has_zero_time(const struct cmdlog_rec *r)
{
    return r->at_ms == ZERO_TIME_MS || r->created_ms == ZERO_TIME_MS ||
           (r->timed && r->time_ms == ZERO_TIME_MS);
}

/* Encode r into a new buffer of *len bytes. */
static uint8_t *
encode(const struct cmdlog_rec *r, size_t *len)
{
    *len = cmdlog_rec_size(r);
    uint8_t *out = malloc(*len);
    if (out == NULL)
        abort();
    cmdlog_rec_encode(r, out);
    return out;
}

/* Decode in[0..len); when it is a record, check what the codec says of it. */
static void
check_record(const uint8_t *in, size_t len)
{
    struct cmdlog_rec r, again;
    size_t used, used2;
    if (cmdlog_rec_decode(in, len, &r, &used) != CMDLOG_REC_OK)
        return;
    if (used > len)
        abort();
    uint8_t key[1 + 256];
    (void)cmdlog_rec_key(&r, key, sizeof key);
    (void)cmdlog_rec_ends_job(&r);
    if (has_zero_time(&r))
        return;
    size_t n1, n2;
    uint8_t *first = encode(&r, &n1);
    if (cmdlog_rec_decode(first, n1, &again, &used2) != CMDLOG_REC_OK || used2 != n1) {
        fprintf(stderr, "fuzz_cmdlog_rec: a record encoded from a decoded one does not decode\n");
        abort();
    }
    uint8_t *second = encode(&again, &n2);
    if (n1 != n2 || memcmp(first, second, n1) != 0) {
        fprintf(stderr, "fuzz_cmdlog_rec: encode(decode(x)) is not stable\n");
        abort();
    }
    free(first);
    free(second);
}

/* Write the right CRC after the record framed at the start of b, if its
 * framing is whole; false if it is not. */
static bool
fix_crc(uint8_t *b, size_t len)
{
    uint64_t size;
    if (len < CMDLOG_TIME_LEN + 1)
        return false;
    size_t n = cmdlog_uvarint_get(b + CMDLOG_TIME_LEN, len - CMDLOG_TIME_LEN, &size);
    size_t head = CMDLOG_TIME_LEN + n;
    if (n == 0 || size > len || head + size + CMDLOG_CRC_LEN > len)
        return false;
    uint32_t crc = cmdlog_crc32c(0, b, head + (size_t)size);
    uint8_t *at = b + head + size;
    for (int i = 0; i < 4; i++)
        at[i] = (uint8_t)(crc >> (24 - 8 * i));
    return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_record(data, size);
    uint8_t *copy = malloc(size + 1); /* + 1: malloc(0) may give NULL */
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    if (fix_crc(copy, size))
        check_record(copy, size);
    free(copy);
    return 0;
}
