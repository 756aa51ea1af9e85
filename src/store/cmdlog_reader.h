/* cmdlog_reader.h - read a segment through bounded buffers: its records in
 * order (replay's and the cleaner thread's reader), whether its end is only
 * zeros, and the recovery scan that tells a torn tail from damage.  The
 * buffers hold at most a chunk (1 MiB) or the largest record whose CRC
 * matches, never the whole segment, and nothing past the size the file
 * had when it was opened is read. */
#ifndef WQ_CMDLOG_READER_H
#define WQ_CMDLOG_READER_H

#include "lib/wq.h"

#include "store/cmdlog_codec.h"

struct cmdlog_reader {
    int fd;
    uint8_t *buf;
    size_t cap;
    size_t start, end; /* the bytes read and not yet returned: buf[start..end) */
    uint64_t off;      /* the file offset of buf[start] */
    uint64_t size;     /* the file's size at open: nothing past it is read */
    uint64_t big_ok;   /* 1 + the offset of a record larger than the buffer whose CRC matched */
    bool eof;
};

enum cmdlog_read_result {
    CMDLOG_READ_REC,     /* a record */
    CMDLOG_READ_END,     /* the end: nothing, or only zeros (padding), is left */
    CMDLOG_READ_DAMAGED, /* a bad header, or bytes that are neither records nor padding */
    CMDLOG_READ_ERROR,   /* read(2) failed (errno) */
};

/* Open segment n of directory dirfd at its first record (cmdlog_files_open:
 * a regular file only).  0, or -1 (errno); on success, close it with
 * cmdlog_reader_close. */
int cmdlog_reader_open(struct cmdlog_reader *rd, int dirfd, uint64_t n);

/* The next record: on CMDLOG_READ_REC, *r is decoded, *bytes and *len are
 * its framed bytes (valid until the next call) and *at its file offset.
 * After any other result, rd->off is where the records ended.  A record
 * larger than the buffer is read whole only once its CRC, checked through
 * the file, matches. */
enum cmdlog_read_result cmdlog_reader_next(struct cmdlog_reader *rd, struct cmdlog_rec *r,
                                           const uint8_t **bytes, size_t *len, uint64_t *at);

void cmdlog_reader_close(struct cmdlog_reader *rd);

/* Are the bytes of fd from `from` to size all zeros?  1, 0, or -1 (errno).
 * Holes (SEEK_DATA) are skipped unread. */
int cmdlog_reader_zeros(int fd, uint64_t from, uint64_t size);

/* ---- the recovery scan ---- */

/* Bounds of the recovery scan; cmdlog_scan_defaults gives the server's. */
struct cmdlog_scan_limits {
    size_t window;         /* bytes read at a time (>= 64) */
    size_t max_waiting;    /* candidates waiting for their CRC at once */
    uint64_t decode_bytes; /* bytes read again to decode records larger than the window */
};

/* What a scan did (for the log and the tests). */
struct cmdlog_scan_stats {
    uint64_t candidates;  /* offsets whose framing fits the segment and passed the cheap checks */
    uint64_t crc_checks;  /* CRCs compared, by combining (cmdlog_crc32c_combine) */
    uint64_t crc_bytes;   /* bytes run through the CRC */
    uint64_t bytes_read;  /* bytes read from the file */
    uint64_t max_waiting; /* the most candidates waiting at once */
    uint64_t decoded;     /* bytes read again to decode records larger than the window */
};

enum cmdlog_scan_result {
    CMDLOG_SCAN_NONE,    /* no valid record starts in the range: a torn tail */
    CMDLOG_SCAN_FOUND,   /* one does: damage */
    CMDLOG_SCAN_GAVE_UP, /* the bytes are crafted past the limits: undecided */
    CMDLOG_SCAN_ERROR,   /* a read failed (errno) */
};

void cmdlog_scan_defaults(struct cmdlog_scan_limits *lim);

/* Does a valid record (one cmdlog_rec_decode takes, within the file) start
 * at any offset in [from, size) of fd?  The answer decoding at every
 * offset would give, in one pass: a candidate is decoded in the window
 * without its CRC, and its CRC is checked in O(log n) by combining the
 * running CRC at its start and at its end, so crafted bytes that claim
 * long records everywhere cost time linear in the range, not quadratic.
 * Memory is the window plus 16 bytes per waiting candidate; GAVE_UP past
 * lim's bounds (lim NULL: the defaults).  st may be NULL. */
enum cmdlog_scan_result cmdlog_scan(int fd, uint64_t from, uint64_t size,
                                    const struct cmdlog_scan_limits *lim,
                                    struct cmdlog_scan_stats *st);

#endif /* WQ_CMDLOG_READER_H */
