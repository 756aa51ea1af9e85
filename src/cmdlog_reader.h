/* cmdlog_reader.h - read a closed segment's records in order through a
 * bounded buffer: the buffer holds at most a chunk (1 MiB) or the largest
 * record, never the whole segment.  The cleaner thread's reader. */
#ifndef WQ_CMDLOG_READER_H
#define WQ_CMDLOG_READER_H

#include "wq.h"

#include "cmdlog_codec.h"

struct cmdlog_reader {
    int fd;
    uint8_t *buf;
    size_t cap;
    size_t start, end; /* the bytes read and not yet returned: buf[start..end) */
    uint64_t off;      /* the file offset of buf[start] */
    uint64_t size;     /* the file's size at open */
    bool eof;
};

enum cmdlog_read_result {
    CMDLOG_READ_REC,     /* a record */
    CMDLOG_READ_END,     /* the end: nothing, or only zeros (padding), is left */
    CMDLOG_READ_DAMAGED, /* a bad header, or bytes that are neither records nor padding */
    CMDLOG_READ_ERROR,   /* read(2) failed (errno) */
};

/* Open segment n of directory dirfd at its first record.  0, or -1 (errno);
 * on success, close it with cmdlog_reader_close. */
int cmdlog_reader_open(struct cmdlog_reader *rd, int dirfd, uint64_t n);

/* The next record: on CMDLOG_READ_REC, *r is decoded, *bytes and *len are
 * its framed bytes (valid until the next call) and *at its file offset.
 * After any other result, rd->off is where the records ended. */
enum cmdlog_read_result cmdlog_reader_next(struct cmdlog_reader *rd, struct cmdlog_rec *r,
                                           const uint8_t **bytes, size_t *len, uint64_t *at);

void cmdlog_reader_close(struct cmdlog_reader *rd);

#endif /* WQ_CMDLOG_READER_H */
