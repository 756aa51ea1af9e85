/* cmdlog_ref.c - reference command-log writer and reader for the tests,
 * written from doc/protocol-reference.md section 6 without looking at src/. */
#ifdef HAVE_CONFIG_H
#include "config.h" /* _GNU_SOURCE, for ssize_t and friends under -std=c11 */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "cmdlog_ref.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const uint8_t ref_header[REF_HEADER_LEN] = {'w', 'q', 'w', 'q', 0, 0, 0, 1};

static void *
ref_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n != 0 ? n : 1);
    if (q == NULL)
        abort();
    return q;
}

/* ---- primitives ---------------------------------------------------------- */

uint32_t
ref_crc32c(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

size_t
ref_uvarint_put(uint8_t out[10], uint64_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        out[n++] = (uint8_t)(b | (v != 0 ? 0x80 : 0));
    } while (v != 0);
    return n;
}

size_t
ref_varint_put(uint8_t out[10], int64_t v)
{
    /* zig-zag: 0, -1, 1, -2, 2, ... -> 0, 1, 2, 3, 4, ... */
    uint64_t u = v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
    return ref_uvarint_put(out, u);
}

/* Read a uvarint from in[0..len) at *pos; -1 if it does not fit (or > 64 bits). */
static int
ref_uvarint_get(const uint8_t *in, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = in[(*pos)++];
        if (shift == 63 && b > 1)
            return -1;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static void
ref_be_put(uint8_t *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t
ref_be_get(const uint8_t *in, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | in[i];
    return v;
}

void
ref_time_put_raw(uint8_t out[REF_TIME_LEN], uint8_t version, int64_t go_sec, int32_t nsec,
                 int16_t offset_min)
{
    out[0] = version;
    ref_be_put(out + 1, (uint64_t)go_sec, 8);
    ref_be_put(out + 9, (uint32_t)nsec, 4);
    ref_be_put(out + 13, (uint16_t)offset_min, 2);
}

void
ref_time_put_ns(uint8_t out[REF_TIME_LEN], bool has_time, int64_t unix_ms, uint32_t sub_ns)
{
    if (!has_time) {
        ref_time_put_raw(out, 1, 0, 0, -1);
        return;
    }
    /* floor division, so that times before 1970 have nanos in [0, 1e9) */
    int64_t sec = unix_ms / 1000;
    int64_t rem = unix_ms - sec * 1000;
    if (rem < 0) {
        sec -= 1;
        rem += 1000;
    }
    ref_time_put_raw(out, 1, sec + REF_EPOCH_OFFSET, (int32_t)(rem * 1000000 + sub_ns % 1000000),
                     -1);
}

void
ref_time_put(uint8_t out[REF_TIME_LEN], bool has_time, int64_t unix_ms)
{
    ref_time_put_ns(out, has_time, unix_ms, 0);
}

int
ref_time_get_ns(const uint8_t in[REF_TIME_LEN], bool *has_time, int64_t *unix_ms, uint32_t *sub_ns)
{
    if (in[0] != 1)
        return -1;
    int64_t sec = (int64_t)ref_be_get(in + 1, 8);
    int64_t nsec = (int32_t)(uint32_t)ref_be_get(in + 9, 4);
    if (nsec < 0 || nsec >= 1000000000)
        return -1;
    *has_time = !(sec == 0 && nsec == 0);
    *unix_ms = 0;
    *sub_ns = 0;
    if (!*has_time)
        return 0;
    /* tests stay far from int64 ms overflow; guard anyway */
    int64_t usec = sec - REF_EPOCH_OFFSET;
    if (usec > INT64_MAX / 1000 - 1 || usec < INT64_MIN / 1000 + 1)
        return -1;
    *unix_ms = usec * 1000 + nsec / 1000000;
    *sub_ns = (uint32_t)(nsec % 1000000);
    return 0;
}

int
ref_time_get(const uint8_t in[REF_TIME_LEN], bool *has_time, int64_t *unix_ms)
{
    uint32_t sub_ns;
    return ref_time_get_ns(in, has_time, unix_ms, &sub_ns);
}

void
ref_id(uint8_t id[REF_ID_LEN], uint64_t n)
{
    memset(id, 0, REF_ID_LEN);
    id[6] = 0x40; /* version 4 */
    id[8] = 0x80; /* RFC 4122 variant */
    for (int i = 0; i < 6; i++)
        id[15 - i] = (uint8_t)(n >> (8 * i));
}

/* ---- building records ------------------------------------------------------ */

void
ref_buf_init(struct ref_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
}

void
ref_buf_free(struct ref_buf *b)
{
    free(b->data);
    ref_buf_init(b);
}

void
ref_buf_put(struct ref_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n)
            cap *= 2;
        b->data = ref_xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void
ref_put_uvarint(struct ref_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    ref_buf_put(b, tmp, ref_uvarint_put(tmp, v));
}

static void
ref_put_bytes(struct ref_buf *b, const void *p, size_t n)
{
    ref_put_uvarint(b, n);
    ref_buf_put(b, p, n);
}

size_t
ref_rec_raw_time(struct ref_buf *b, const uint8_t at[REF_TIME_LEN], const void *payload, size_t len)
{
    size_t off = b->len;
    ref_buf_put(b, at, REF_TIME_LEN);
    ref_put_uvarint(b, len);
    ref_buf_put(b, payload, len);
    uint8_t crc[REF_CRC_LEN];
    ref_be_put(crc, ref_crc32c(b->data + off, b->len - off), 4);
    ref_buf_put(b, crc, sizeof crc);
    return off;
}

size_t
ref_rec_raw(struct ref_buf *b, int64_t at_ms, const void *payload, size_t len)
{
    uint8_t at[REF_TIME_LEN];
    ref_time_put(at, true, at_ms);
    return ref_rec_raw_time(b, at, payload, len);
}

void
ref_payload_job(struct ref_buf *p, int code, const uint8_t id[REF_ID_LEN], const char *name,
                uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts, uint64_t max_fails,
                const void *payload, size_t len, const uint8_t time[REF_TIME_LEN],
                const uint8_t created[REF_TIME_LEN])
{
    uint8_t c = (uint8_t)code, tmp[10];
    ref_buf_put(p, &c, 1);
    ref_buf_put(p, id, REF_ID_LEN);
    ref_put_bytes(p, name, strlen(name));
    ref_put_uvarint(p, ttr);
    ref_put_uvarint(p, ttl);
    ref_buf_put(p, tmp, ref_varint_put(tmp, prio));
    ref_put_uvarint(p, max_attempts);
    ref_put_uvarint(p, max_fails);
    ref_put_bytes(p, payload, len);
    ref_buf_put(p, time, REF_TIME_LEN);
    ref_buf_put(p, created, REF_TIME_LEN);
}

static size_t
ref_rec_job(struct ref_buf *b, int code, int64_t at_ms, const uint8_t id[REF_ID_LEN],
            const char *name, uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts,
            uint64_t max_fails, const void *payload, size_t len, bool timed, int64_t time_ms,
            uint32_t time_ns, int64_t created_ms)
{
    struct ref_buf p = {0};
    uint8_t t[REF_TIME_LEN], cr[REF_TIME_LEN];
    ref_time_put_ns(t, timed, time_ms, time_ns);
    ref_time_put(cr, true, created_ms);
    ref_payload_job(&p, code, id, name, ttr, ttl, prio, max_attempts, max_fails, payload, len, t,
                    cr);
    size_t off = ref_rec_raw(b, at_ms, p.data, p.len);
    ref_buf_free(&p);
    return off;
}

size_t
ref_rec_add(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN], const char *name,
            uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts, uint64_t max_fails,
            const void *payload, size_t len, int64_t created_ms)
{
    return ref_rec_job(b, REF_ADD, at_ms, id, name, ttr, ttl, prio, max_attempts, max_fails,
                       payload, len, false, 0, 0, created_ms);
}

size_t
ref_rec_schedule_ns(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN],
                    const char *name, uint64_t ttr, uint64_t ttl, int64_t prio,
                    uint64_t max_attempts, uint64_t max_fails, const void *payload, size_t len,
                    int64_t time_ms, uint32_t time_ns, int64_t created_ms)
{
    return ref_rec_job(b, REF_SCHEDULE, at_ms, id, name, ttr, ttl, prio, max_attempts, max_fails,
                       payload, len, true, time_ms, time_ns, created_ms);
}

size_t
ref_rec_schedule(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN], const char *name,
                 uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts,
                 uint64_t max_fails, const void *payload, size_t len, int64_t time_ms,
                 int64_t created_ms)
{
    return ref_rec_schedule_ns(b, at_ms, id, name, ttr, ttl, prio, max_attempts, max_fails, payload,
                               len, time_ms, 0, created_ms);
}

size_t
ref_rec_result(struct ref_buf *b, int64_t at_ms, int code, const uint8_t id[REF_ID_LEN],
               const void *data, size_t len)
{
    struct ref_buf p = {0};
    uint8_t c = (uint8_t)code;
    ref_buf_put(&p, &c, 1);
    ref_buf_put(&p, id, REF_ID_LEN);
    ref_put_bytes(&p, data, len);
    size_t off = ref_rec_raw(b, at_ms, p.data, p.len);
    ref_buf_free(&p);
    return off;
}

size_t
ref_rec_id(struct ref_buf *b, int64_t at_ms, int code, const uint8_t id[REF_ID_LEN])
{
    uint8_t p[1 + REF_ID_LEN];
    p[0] = (uint8_t)code;
    memcpy(p + 1, id, REF_ID_LEN);
    return ref_rec_raw(b, at_ms, p, sizeof p);
}

/* v as a varint of exactly 5 bytes (LEB128 allows padding with 0x80s). */
static void
ref_uvarint5(uint8_t out[5], uint64_t v)
{
    for (int i = 0; i < 4; i++, v >>= 7)
        out[i] = (uint8_t)(0x80 | (v & 0x7f));
    out[4] = (uint8_t)v;
}

size_t
ref_crafted_tail(struct ref_buf *b, int64_t at_ms, size_t len)
{
    size_t start = b->len, n = 0;
    uint8_t *zero = calloc(1, len);
    if (zero == NULL)
        abort();
    ref_buf_put(b, zero, len);
    free(zero);
    uint8_t *t = b->data + start;
    for (size_t j = 0; j + REF_CRAFT_STEP + REF_CRC_LEN <= len; j += REF_CRAFT_STEP, n++) {
        uint8_t *p = t + j;
        uint64_t size = (uint64_t)(len - j) - REF_TIME_LEN - 5 - REF_CRC_LEN;
        ref_time_put(p, true, at_ms);
        ref_uvarint5(p + REF_TIME_LEN, size);
        p[REF_TIME_LEN + 5] = REF_COMPLETE;
        memset(p + REF_TIME_LEN + 6, 0x5a, REF_ID_LEN);
        ref_uvarint5(p + REF_TIME_LEN + 6 + REF_ID_LEN, size - 1 - REF_ID_LEN - 5);
    }
    memcpy(t + len - REF_CRC_LEN, "\xde\xad\xbe\xef", REF_CRC_LEN);
    return n;
}

/* ---- segment files --------------------------------------------------------- */

void
ref_seg_name(uint32_t n, char out[14])
{
    snprintf(out, 14, "%09u", (unsigned)n);
    memcpy(out + 9, ".log", 5);
}

static int
ref_write_file(const char *dir, uint32_t n, const void *a, size_t alen, const void *b, size_t blen)
{
    char name[14], path[4096];
    ref_seg_name(n, name);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    const void *parts[2] = {a, b};
    size_t lens[2] = {alen, blen};
    for (int i = 0; i < 2; i++) {
        const uint8_t *p = parts[i];
        size_t left = lens[i];
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                int e = errno;
                close(fd);
                errno = e;
                return -1;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    return close(fd);
}

int
ref_seg_write(const char *dir, uint32_t n, const void *recs, size_t len)
{
    return ref_write_file(dir, n, ref_header, REF_HEADER_LEN, recs, len);
}

int
ref_seg_write_raw(const char *dir, uint32_t n, const void *bytes, size_t len)
{
    return ref_write_file(dir, n, bytes, len, NULL, 0);
}

/* ---- reading --------------------------------------------------------------- */

/* A cursor over one payload. */
struct ref_cur {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
};

static uint64_t
ref_cur_uvarint(struct ref_cur *c)
{
    uint64_t v = 0;
    if (!c->bad && ref_uvarint_get(c->p, c->len, &c->pos, &v) != 0)
        c->bad = true;
    return v;
}

static const uint8_t *
ref_cur_take(struct ref_cur *c, uint64_t n)
{
    if (c->bad || n > c->len - c->pos) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *at = c->p + c->pos;
    c->pos += (size_t)n;
    return at;
}

static const uint8_t *
ref_cur_bytes(struct ref_cur *c, size_t *n)
{
    uint64_t len = ref_cur_uvarint(c);
    const uint8_t *at = ref_cur_take(c, len);
    *n = at != NULL ? (size_t)len : 0;
    return at;
}

static void
ref_cur_time(struct ref_cur *c, bool *has, int64_t *ms, uint32_t *ns)
{
    const uint8_t *at = ref_cur_take(c, REF_TIME_LEN);
    if (at != NULL && ref_time_get_ns(at, has, ms, ns) != 0)
        c->bad = true;
}

static bool
ref_payload_decode(const uint8_t *p, size_t len, struct ref_rec *r)
{
    struct ref_cur c = {p, len, 0, false};
    const uint8_t *code = ref_cur_take(&c, 1);
    const uint8_t *id = ref_cur_take(&c, REF_ID_LEN);
    if (c.bad || code[0] < REF_ADD || code[0] > REF_FAIL_RETRY)
        return false;
    r->code = code[0];
    memcpy(r->id, id, REF_ID_LEN);
    switch (r->code) {
    case REF_ADD:
    case REF_SCHEDULE: {
        bool has_created = false;
        uint32_t created_ns;
        r->name = ref_cur_bytes(&c, &r->name_len);
        r->ttr = ref_cur_uvarint(&c);
        r->ttl = ref_cur_uvarint(&c);
        uint64_t zz = ref_cur_uvarint(&c);
        r->prio = (zz & 1) ? (int64_t) ~(zz >> 1) : (int64_t)(zz >> 1);
        r->max_attempts = ref_cur_uvarint(&c);
        r->max_fails = ref_cur_uvarint(&c);
        r->payload = ref_cur_bytes(&c, &r->payload_len);
        ref_cur_time(&c, &r->has_time, &r->time_ms, &r->time_ns);
        ref_cur_time(&c, &has_created, &r->created_ms, &created_ns);
        break;
    }
    case REF_COMPLETE:
    case REF_FAIL:
        r->result = ref_cur_bytes(&c, &r->result_len);
        break;
    default:
        break;
    }
    return !c.bad && c.pos == c.len;
}

enum ref_status
ref_rec_decode(const uint8_t *in, size_t len, struct ref_rec *r, size_t *used)
{
    memset(r, 0, sizeof *r);
    size_t pos = REF_TIME_LEN;
    uint64_t size;
    if (len <= pos)
        return REF_SHORT;
    if (ref_uvarint_get(in, len, &pos, &size) != 0)
        /* ran off the end (short) unless 10 bytes were there (over-long) */
        return len - REF_TIME_LEN >= 10 ? REF_BAD : REF_SHORT;
    if (size > len - pos || REF_CRC_LEN > len - pos - size)
        return REF_SHORT;
    size_t body = pos + (size_t)size;
    if (ref_be_get(in + body, 4) != ref_crc32c(in, body))
        return REF_BAD;
    bool has_at;
    if (ref_time_get(in, &has_at, &r->at_ms) != 0)
        return REF_BAD;
    if (!ref_payload_decode(in + pos, (size_t)size, r))
        return REF_BAD;
    r->size = body + REF_CRC_LEN;
    *used = r->size;
    return REF_OK;
}

void
ref_seg_parse(const void *bytes, size_t len, struct ref_seg *s)
{
    memset(s, 0, sizeof *s);
    s->data = ref_xrealloc(NULL, len);
    if (len > 0)
        memcpy(s->data, bytes, len);
    s->len = len;
    if (len < REF_HEADER_LEN || memcmp(s->data, ref_header, REF_HEADER_LEN) != 0) {
        s->status = REF_NOHDR;
        s->bad_off = 0;
        return;
    }
    size_t off = REF_HEADER_LEN, cap = 0;
    while (off < len) {
        struct ref_rec r;
        size_t used = 0;
        enum ref_status st = ref_rec_decode(s->data + off, len - off, &r, &used);
        if (st != REF_OK) {
            s->status = st;
            s->bad_off = off;
            return;
        }
        r.off = off;
        if (s->nrecs == cap) {
            cap = cap ? cap * 2 : 16;
            s->recs = ref_xrealloc(s->recs, cap * sizeof *s->recs);
        }
        s->recs[s->nrecs++] = r;
        off += used;
    }
    s->status = REF_OK;
    s->bad_off = len;
}

int
ref_seg_read(const char *path, struct ref_seg *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    struct ref_buf b = {0};
    uint8_t chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ref_buf_put(&b, chunk, n);
    int err = ferror(f);
    fclose(f);
    if (err) {
        ref_buf_free(&b);
        errno = EIO;
        return -1;
    }
    ref_seg_parse(b.data, b.len, s);
    ref_buf_free(&b);
    return 0;
}

void
ref_seg_free(struct ref_seg *s)
{
    free(s->data);
    free(s->recs);
    memset(s, 0, sizeof *s);
}
