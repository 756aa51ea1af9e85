/* fuzz_cmdlog_scan.c - libFuzzer target: the recovery scan (cmdlog_scan,
 * src/store/cmdlog_reader.c), which replay runs over the bytes after the last
 * record of the last segment to tell a torn tail from damage.
 *
 * The input is those bytes: any bytes.  They are put in a memfd and
 * scanned from offset 0 and 1 with windows of 64, 100 and 257 bytes (so
 * that records outrun the window, which the scan checks by reading them
 * again) and the server's, and the answer must be what decoding at every
 * offset (cmdlog_rec_decode, the definition the scan replaces) answers.
 * With its limits made tiny (2 candidates waiting, nothing read again) the
 * scan may also give up, and must answer nothing else.  What it reports
 * must hold too: each byte read and checksummed at most once, no more CRC
 * checks than candidates. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store/cmdlog_codec.h"
#include "store/cmdlog_reader.h"
#include "../common/cmdlog_scan_ref.h"

static void
check(int fd, const uint8_t *data, size_t size, size_t from, const struct cmdlog_scan_limits *lim,
      bool may_give_up)
{
    struct cmdlog_scan_stats st;
    enum cmdlog_scan_result res = cmdlog_scan(fd, from, size, lim, &st);
    enum cmdlog_scan_result want =
        naive_valid_after(data, size, from) ? CMDLOG_SCAN_FOUND : CMDLOG_SCAN_NONE;
    if (res != want && !(may_give_up && res == CMDLOG_SCAN_GAVE_UP)) {
        fprintf(stderr, "fuzz_cmdlog_scan: window %zu from %zu: scan %d, decoding %d\n",
                lim->window, from, res, want);
        abort();
    }
    uint64_t range = size > from ? size - from : 0;
    if (st.bytes_read > range || st.crc_bytes > range || st.crc_checks > st.candidates) {
        fprintf(stderr, "fuzz_cmdlog_scan: read %llu, checksummed %llu of %llu bytes\n",
                (unsigned long long)st.bytes_read, (unsigned long long)st.crc_bytes,
                (unsigned long long)range);
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_cmdlog_scan", MFD_CLOEXEC);
    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
        abort();
    static const size_t windows[] = {64, 100, 257, 0};
    for (size_t from = 0; from < 2; from++) {
        for (size_t w = 0; w < WQ_ARRAY_LEN(windows); w++) {
            struct cmdlog_scan_limits lim;
            cmdlog_scan_defaults(&lim);
            if (windows[w] != 0)
                lim.window = windows[w];
            check(fd, data, size, from, &lim, false);
            lim.max_waiting = 2;
            lim.decode_bytes = 0;
            check(fd, data, size, from, &lim, true);
        }
    }
    close(fd);
    return 0;
}
