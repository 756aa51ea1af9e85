/* cmdlog_reader.c - a segment's records through a bounded buffer, and the
 * recovery scan. */
#include "lib/wq.h"
#include "store/cmdlog_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "store/cmdlog_files.h"

/* The buffer's size to start with; it grows only for a larger record. */
#define READER_CHUNK (1u << 20)
#define READER_MIN   4096u
/* What reads a file in pieces without keeping them (a CRC, zeros). */
#define READER_SCRATCH (64u << 10)

/* pread all of [at, at + len) into p, or less at the end of the file:
 * the bytes read, or -1 (errno). */
static ssize_t
reader_pread(int fd, void *p, size_t len, uint64_t at)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (uint8_t *)p + got, len - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Read more into the buffer, moving what is unread to its front and growing
 * it when it is full of one unfinished record (never past what the file
 * has left).  0, or -1 (errno). */
static int
reader_fill(struct cmdlog_reader *rd)
{
    if (rd->start > 0) {
        memmove(rd->buf, rd->buf + rd->start, rd->end - rd->start);
        rd->end -= rd->start;
        rd->start = 0;
    }
    uint64_t at = rd->off + rd->end; /* the file offset of buf[end] */
    if (rd->end == rd->cap) {
        uint64_t left = rd->size > rd->off ? rd->size - rd->off : 0;
        rd->cap = (size_t)WQ_MIN((uint64_t)rd->cap * 2, WQ_MAX(left, (uint64_t)rd->cap + 1));
        rd->buf = wq_realloc(rd->buf, rd->cap);
    }
    size_t want = at < rd->size ? (size_t)WQ_MIN(rd->size - at, (uint64_t)(rd->cap - rd->end)) : 0;
    ssize_t got = want > 0 ? pread(rd->fd, rd->buf + rd->end, want, (off_t)at) : 0;
    if (got < 0)
        return errno == EINTR ? 0 : -1;
    rd->eof = got == 0; /* the end, or the file is shorter than it was */
    rd->end += (size_t)got;
    return 0;
}

int
cmdlog_reader_zeros(int fd, uint64_t from, uint64_t size)
{
    uint8_t *scratch = wq_malloc(READER_SCRATCH);
    int rc = 1;
    while (rc == 1 && from < size) {
        /* A hole reads as zeros: skip it. */
        off_t data = lseek(fd, (off_t)from, SEEK_DATA);
        if (data < 0 && errno == ENXIO)
            break;
        if (data > (off_t)from)
            from = (uint64_t)data;
        if (from >= size)
            break;
        ssize_t got = reader_pread(fd, scratch, (size_t)WQ_MIN(size - from, READER_SCRATCH), from);
        if (got < 0)
            rc = -1;
        else if (got == 0)
            break;
        for (ssize_t i = 0; rc == 1 && i < got; i++)
            if (scratch[i] != 0)
                rc = 0;
        from += (uint64_t)WQ_MAX(got, 0);
    }
    wq_free(scratch);
    return rc;
}

/* Is everything from rd->start to the end of the file zero bytes?  Leaves
 * rd->off where the records ended. */
static enum cmdlog_read_result
reader_rest_is_padding(struct cmdlog_reader *rd)
{
    for (size_t i = rd->start; i < rd->end; i++)
        if (rd->buf[i] != 0)
            return CMDLOG_READ_DAMAGED;
    switch (cmdlog_reader_zeros(rd->fd, rd->off + (rd->end - rd->start), rd->size)) {
    case 1:
        return CMDLOG_READ_END;
    case 0:
        return CMDLOG_READ_DAMAGED;
    default:
        return CMDLOG_READ_ERROR;
    }
}

/* Does the CRC of the record at rd->off, total bytes long and larger than
 * the buffer, match?  Read through the file in pieces, so that a length
 * that garbage claims costs reading, never memory.  1, 0, or -1 (errno). */
static int
reader_big_crc_ok(const struct cmdlog_reader *rd, size_t total)
{
    size_t body = total - CMDLOG_CRC_LEN, have = rd->end - rd->start;
    uint32_t crc = cmdlog_crc32c(0, rd->buf + rd->start, WQ_MIN(have, body));
    uint8_t *scratch = wq_malloc(READER_SCRATCH);
    uint64_t at = rd->off + have, end = rd->off + body;
    int rc = 1;
    while (rc == 1 && at < end) {
        ssize_t got = reader_pread(rd->fd, scratch, (size_t)WQ_MIN(end - at, READER_SCRATCH), at);
        if (got <= 0)
            rc = got < 0 ? -1 : 0;
        else
            crc = cmdlog_crc32c(crc, scratch, (size_t)got);
        at += (uint64_t)WQ_MAX(got, 0);
    }
    if (rc == 1) {
        ssize_t got = reader_pread(rd->fd, scratch, CMDLOG_CRC_LEN, end);
        if (got < 0)
            rc = -1;
        else
            rc = got == CMDLOG_CRC_LEN &&
                 crc == ((uint32_t)scratch[0] << 24 | (uint32_t)scratch[1] << 16 |
                         (uint32_t)scratch[2] << 8 | scratch[3]);
    }
    wq_free(scratch);
    return rc;
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
        size_t used, total;
        const uint8_t *p = rd->buf + rd->start;
        size_t have = rd->end - rd->start;
        enum cmdlog_decode_result d = cmdlog_rec_decode(p, have, r, &used);
        if (d == CMDLOG_REC_OK) {
            *bytes = p;
            *len = used;
            *at = rd->off;
            rd->start += used;
            rd->off += used;
            return CMDLOG_READ_REC;
        }
        if (d == CMDLOG_REC_BAD || rd->eof)
            return reader_rest_is_padding(rd);
        if (cmdlog_rec_frame(p, have, &total) == CMDLOG_REC_OK) {
            /* A length longer than the rest of the file is garbled:
             * reading on would only grow the buffer. */
            uint64_t left = rd->size > rd->off ? rd->size - rd->off : 0;
            if (total > left)
                return reader_rest_is_padding(rd);
            if (total > rd->cap && rd->big_ok != rd->off + 1) {
                int ok = reader_big_crc_ok(rd, total);
                if (ok < 0)
                    return CMDLOG_READ_ERROR;
                if (ok == 0)
                    return reader_rest_is_padding(rd);
                rd->big_ok = rd->off + 1;
            }
        }
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

/* ---- the recovery scan ----
 *
 * One pass from `from` to the end keeps the running CRC of the bytes
 * passed (from the last moment nothing waited).  At each offset holding a
 * 1 (a TIME's version byte) whose SIZE fits the file, the record is decoded
 * without its CRC if the window holds it, or only its TIME checked if not;
 * if that passes it waits, in a heap ordered by where its CRC lies, with
 * the running CRC at its start.  When the pass reaches that offset, the
 * CRC of the record's bytes is the running CRC there combined with the one
 * at its start (cmdlog_crc32c_combine), whatever their distance.  So each
 * byte is read and checksummed once, and each candidate costs O(log n). */

#define SCAN_WINDOW      (1u << 20)
#define SCAN_MAX_WAITING (4u << 20) /* 64 MiB of waits */
#define SCAN_MIN_WAITING 65536u
#define SCAN_DECODE      (64u << 20)
#define SCAN_DECODED     (1ull << 63) /* in scan_wait.crc_at: decoded whole already */

struct scan_wait {
    uint64_t crc_at;     /* the offset of its CRC, | SCAN_DECODED */
    uint32_t len;        /* its bytes before the CRC */
    uint32_t crc_before; /* the running CRC at its start */
};

struct scan {
    int fd;
    uint64_t size;
    uint64_t cand_end; /* a record can start only before this */
    const struct cmdlog_scan_limits *lim;
    struct cmdlog_scan_stats *st;
    size_t window; /* the buffer's size: the limit's, or less for a short range */
    size_t max_waiting;
    uint8_t *buf; /* the window: [base, base + have) of the file */
    uint64_t base;
    size_t have;
    uint64_t pos;  /* the running CRC covers up to here */
    uint32_t crc;  /* of the bytes from where nothing waited to pos */
    uint64_t next; /* the next offset that may start a record */
    struct scan_wait *heap;
    size_t n, heap_cap;
};

static uint64_t
scan_key(const struct scan_wait *w)
{
    return w->crc_at & ~SCAN_DECODED;
}

static void
scan_push(struct scan *s, struct scan_wait w)
{
    if (s->n == s->heap_cap) {
        s->heap_cap = s->heap_cap == 0 ? 256 : 2 * s->heap_cap;
        s->heap = wq_realloc(s->heap, s->heap_cap * sizeof *s->heap);
    }
    size_t i = s->n++;
    while (i > 0 && scan_key(&s->heap[(i - 1) / 2]) > scan_key(&w)) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = w;
    if (s->n > s->st->max_waiting)
        s->st->max_waiting = s->n;
}

static struct scan_wait
scan_pop(struct scan *s)
{
    struct scan_wait top = s->heap[0], last = s->heap[--s->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n)
            break;
        if (c + 1 < s->n && scan_key(&s->heap[c + 1]) < scan_key(&s->heap[c]))
            c++;
        if (scan_key(&s->heap[c]) >= scan_key(&last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n > 0)
        s->heap[i] = last;
    return top;
}

/* Keep the window over [pos, pos + window) (or to the end): read when less
 * than half of it is left ahead of pos.  0, or -1 (errno). */
static int
scan_window(struct scan *s)
{
    size_t cap = s->window;
    uint64_t wend = s->base + s->have;
    if (s->pos >= s->base && s->pos <= wend && (wend >= s->size || wend - s->pos > cap / 2))
        return 0;
    if (s->pos >= s->base && s->pos < wend) {
        s->have = (size_t)(wend - s->pos);
        memmove(s->buf, s->buf + (s->pos - s->base), s->have);
    } else {
        s->have = 0;
    }
    s->base = s->pos;
    size_t want = (size_t)WQ_MIN((uint64_t)(cap - s->have), s->size - (s->base + s->have));
    ssize_t got = reader_pread(s->fd, s->buf + s->have, want, s->base + s->have);
    if (got < 0)
        return -1;
    s->st->bytes_read += (uint64_t)got;
    s->have += (size_t)got;
    if ((size_t)got < want) { /* the file is shorter than it was */
        s->size = s->base + s->have;
        s->cand_end = WQ_MIN(s->cand_end, s->size);
    }
    return 0;
}

/* Move pos to `to` (within the window), carrying the running CRC along
 * while something waits for it. */
static void
scan_advance(struct scan *s, uint64_t to)
{
    if (s->n == 0) {
        s->crc = 0; /* nothing needs the CRC of what lies before */
    } else {
        s->crc = cmdlog_crc32c(s->crc, s->buf + (s->pos - s->base), (size_t)(to - s->pos));
        s->st->crc_bytes += to - s->pos;
    }
    s->pos = to;
}

/* Take the candidate starting at pos: queue it if it may be a record. */
static void
scan_candidate(struct scan *s)
{
    const uint8_t *in = s->buf + (s->pos - s->base);
    size_t avail = (size_t)(s->base + s->have - s->pos);
    size_t total, used;
    if (cmdlog_rec_frame(in, avail, &total) != CMDLOG_REC_OK || total > s->size - s->pos)
        return;
    struct scan_wait w = {s->pos + total - CMDLOG_CRC_LEN, (uint32_t)(total - CMDLOG_CRC_LEN),
                          s->crc};
    if (total <= avail) {
        struct cmdlog_rec r;
        if (cmdlog_rec_decode_unchecked(in, avail, &r, &used) != CMDLOG_REC_OK)
            return;
        w.crc_at |= SCAN_DECODED;
    } else {
        bool has;
        int64_t ms;
        if (cmdlog_time_get(in, &has, &ms) != 0)
            return;
    }
    s->st->candidates++;
    scan_push(s, w);
}

/* Decode the record of w, larger than the window and with a matching CRC,
 * read again from the file.  1 if it is one, 0 if not, -1 (errno), -2 if
 * that would take more than the limits allow. */
static int
scan_decode_big(struct scan *s, const struct scan_wait *w)
{
    size_t total = (size_t)w->len + CMDLOG_CRC_LEN;
    uint64_t start = scan_key(w) - w->len;
    struct cmdlog_rec r;
    size_t used;
    if (start >= s->base) /* the window holds it after all */
        return cmdlog_rec_decode(s->buf + (start - s->base), total, &r, &used) == CMDLOG_REC_OK;
    if (s->st->decoded + total > s->lim->decode_bytes)
        return -2;
    uint8_t *p = wq_try_malloc(total);
    if (p == NULL)
        return -2;
    s->st->decoded += total;
    ssize_t got = reader_pread(s->fd, p, total, start);
    int rc = got < 0               ? -1
             : (size_t)got < total ? 0
                                   : cmdlog_rec_decode(p, total, &r, &used) == CMDLOG_REC_OK;
    wq_free(p);
    return rc;
}

/* Check every candidate whose CRC lies at pos. */
static enum cmdlog_scan_result
scan_resolve(struct scan *s)
{
    while (s->n > 0 && scan_key(&s->heap[0]) == s->pos) {
        struct scan_wait w = scan_pop(s);
        if (s->pos + CMDLOG_CRC_LEN > s->base + s->have)
            continue; /* the file ended before its CRC */
        const uint8_t *c = s->buf + (s->pos - s->base);
        uint32_t stored =
            (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | (uint32_t)c[3];
        /* The running CRC here is that of (before the record, the record):
         * taking out the part before leaves the record's own. */
        uint32_t crc = s->crc ^ cmdlog_crc32c_combine(w.crc_before, 0, w.len);
        s->st->crc_checks++;
        if (crc != stored)
            continue;
        if (w.crc_at & SCAN_DECODED)
            return CMDLOG_SCAN_FOUND;
        int ok = scan_decode_big(s, &w);
        if (ok == -1)
            return CMDLOG_SCAN_ERROR;
        if (ok == -2)
            return CMDLOG_SCAN_GAVE_UP;
        if (ok == 1)
            return CMDLOG_SCAN_FOUND;
    }
    return CMDLOG_SCAN_NONE;
}

void
cmdlog_scan_defaults(struct cmdlog_scan_limits *lim)
{
    lim->window = SCAN_WINDOW;
    lim->max_waiting = SCAN_MAX_WAITING;
    lim->decode_bytes = SCAN_DECODE;
}

/* The scan's loop over the file. */
static enum cmdlog_scan_result
scan_run(struct scan *s)
{
    size_t half = s->window / 2;
    while (s->pos < s->size) {
        if (scan_window(s) != 0)
            return CMDLOG_SCAN_ERROR;
        uint64_t wend = s->base + s->have;
        if (s->pos >= wend)
            break; /* the file ended early */
        /* Up to safe_end the window holds at least half a window ahead:
         * every record that fits in that is decoded there, and a CRC
         * found there can be read. */
        uint64_t safe_end = wend >= s->size ? s->size : wend - half;
        uint64_t search_end = WQ_MIN(s->cand_end, safe_end), cand = UINT64_MAX;
        if (s->next < s->pos)
            s->next = s->pos;
        if (s->next < search_end) {
            const uint8_t *p =
                memchr(s->buf + (s->next - s->base), 1, (size_t)(search_end - s->next));
            if (p != NULL)
                cand = s->base + (uint64_t)(p - s->buf);
            else
                s->next = search_end;
        }
        uint64_t wait = s->n > 0 ? scan_key(&s->heap[0]) : UINT64_MAX;
        uint64_t to = WQ_MIN(WQ_MIN(cand, wait), safe_end);
        scan_advance(s, to);
        if (to == wait) {
            enum cmdlog_scan_result res = scan_resolve(s);
            if (res != CMDLOG_SCAN_NONE)
                return res;
        }
        if (to == cand) {
            scan_candidate(s);
            s->next = cand + 1;
            if (s->n > s->max_waiting)
                return CMDLOG_SCAN_GAVE_UP;
        }
        if (s->n == 0 && s->next >= s->cand_end)
            break; /* nothing can start, nothing waits */
        if (s->n == 0 && to == safe_end && cand == UINT64_MAX) {
            /* Nothing waits and the window held no candidate: a hole ahead
             * holds none either. */
            off_t data = lseek(s->fd, (off_t)s->pos, SEEK_DATA);
            if (data < 0 && errno == ENXIO)
                break;
            if (data > (off_t)s->pos)
                s->pos = s->next = (uint64_t)data;
        }
    }
    return CMDLOG_SCAN_NONE;
}

enum cmdlog_scan_result
cmdlog_scan(int fd, uint64_t from, uint64_t size, const struct cmdlog_scan_limits *lim,
            struct cmdlog_scan_stats *st)
{
    struct cmdlog_scan_limits def;
    struct cmdlog_scan_stats dummy;
    if (lim == NULL) {
        cmdlog_scan_defaults(&def);
        lim = &def;
    }
    if (st == NULL)
        st = &dummy;
    memset(st, 0, sizeof *st);
    WQ_ASSERT(lim->window >= 64);
    const uint64_t min_rec = CMDLOG_TIME_LEN + 1 + CMDLOG_CRC_LEN;
    uint64_t range = size > from ? size - from : 0;
    size_t window = (size_t)WQ_MIN((uint64_t)lim->window, WQ_MAX(range, (uint64_t)64));
    struct scan s = {
        .fd = fd,
        .size = size,
        .cand_end = size >= min_rec ? size - min_rec + 1 : 0,
        .lim = lim,
        .st = st,
        .window = window,
        /* 16 bytes a wait: never more than the range holds, and within the
         * limit. */
        .max_waiting = (size_t)WQ_MIN((uint64_t)lim->max_waiting,
                                      WQ_MAX((uint64_t)SCAN_MIN_WAITING, range / 16)),
        .buf = wq_malloc(window),
        .base = from,
        .pos = from,
        .next = from,
    };
    enum cmdlog_scan_result res = from < s.cand_end ? scan_run(&s) : CMDLOG_SCAN_NONE;
    wq_free(s.buf);
    wq_free(s.heap);
    return res;
}
