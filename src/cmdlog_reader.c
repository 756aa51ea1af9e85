/* cmdlog_reader.c - a segment's records through a bounded buffer. */
#include "wq.h"
#include "cmdlog_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cmdlog_files.h"

/* The buffer's size to start with; it grows only for a larger record. */
#define READER_CHUNK (1u << 20)
#define READER_MIN   4096u

/* Read more into the buffer, moving what is unread to its front and
 * doubling it when it is full of one unfinished record.  0, or -1 (errno). */
static int
reader_fill(struct cmdlog_reader *rd)
{
    if (rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
        rd->end -= rd->start;
        rd->start = 0;
    }
    if (rd->end == rd->cap) {
        rd->cap *= 2;
        rd->buf = wq_realloc(rd->buf, rd->cap);
    }
    for (;;) {
        ssize_t got = read(rd->fd, rd->buf + rd->end, rd->cap - rd->end);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        rd->eof = got == 0;
        rd->end += (size_t)got;
        return 0;
    }
}

/* Is everything from rd->start to the end of the file zero bytes?  Reads
 * to the end; rd->off stays where the records ended. */
static enum cmdlog_read_result
reader_rest_is_padding(struct cmdlog_reader *rd)
{
    for (;;) {
        for (size_t i = rd->start; i < rd->end; i++)
            if (rd->buf[i] != 0)
                return CMDLOG_READ_DAMAGED;
        rd->start = rd->end = 0;
        if (rd->eof)
            return CMDLOG_READ_END;
        if (reader_fill(rd) != 0)
            return CMDLOG_READ_ERROR;
    }
}

/* Does the record at rd->start say it is longer than the rest of the file?
 * (A garbled length: reading on would only grow the buffer.) */
static bool
reader_past_end(const struct cmdlog_reader *rd)
{
    const uint8_t *p = rd->buf + rd->start;
    size_t have = rd->end - rd->start;
    uint64_t size;
    if (have <= CMDLOG_TIME_LEN)
        return false;
    size_t n = cmdlog_uvarint_get(p + CMDLOG_TIME_LEN, have - CMDLOG_TIME_LEN, &size);
    if (n == 0)
        return false;
    uint64_t left = rd->size > rd->off ? rd->size - rd->off : 0;
    return size > left || CMDLOG_TIME_LEN + n + size + CMDLOG_CRC_LEN > left;
}

int
cmdlog_reader_open(struct cmdlog_reader *rd, int dirfd, uint64_t n)
{
    memset(rd, 0, sizeof *rd);
    rd->fd = cmdlog_files_open(dirfd, n, O_RDONLY, &rd->size);
    if (rd->fd < 0)
        return -1;
    uint64_t size = rd->size;
    rd->cap = size < READER_MIN ? READER_MIN : size < READER_CHUNK ? (size_t)size : READER_CHUNK;
    rd->buf = wq_malloc(rd->cap);
    return 0;
}

enum cmdlog_read_result
cmdlog_reader_next(struct cmdlog_reader *rd, struct cmdlog_rec *r, const uint8_t **bytes,
                   size_t *len, uint64_t *at)
{
    while (rd->off == 0 && rd->end < CMDLOG_HEADER_LEN && !rd->eof)
        if (reader_fill(rd) != 0)
            return CMDLOG_READ_ERROR;
    if (rd->off == 0) {
        if (rd->end < CMDLOG_HEADER_LEN || memcmp(rd->buf, cmdlog_header, CMDLOG_HEADER_LEN) != 0)
            return CMDLOG_READ_DAMAGED;
        rd->start = CMDLOG_HEADER_LEN;
        rd->off = CMDLOG_HEADER_LEN;
    }
    for (;;) {
        size_t used;
        enum cmdlog_decode_result d =
            cmdlog_rec_decode(rd->buf + rd->start, rd->end - rd->start, r, &used);
        if (d == CMDLOG_REC_OK) {
            *bytes = rd->buf + rd->start;
            *len = used;
            *at = rd->off;
            rd->start += used;
            rd->off += used;
            return CMDLOG_READ_REC;
        }
        if (d == CMDLOG_REC_BAD || rd->eof || reader_past_end(rd))
            return reader_rest_is_padding(rd);
        if (reader_fill(rd) != 0)
            return CMDLOG_READ_ERROR;
    }
}

void
cmdlog_reader_close(struct cmdlog_reader *rd)
{
    if (rd->fd >= 0)
        close(rd->fd);
    wq_free(rd->buf);
    rd->fd = -1;
    rd->buf = NULL;
}
