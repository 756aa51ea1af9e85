/* cmdlog_codec.c - command-log record encoding and decoding. */
#include "lib/wq.h"
#include "store/cmdlog_codec.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* A record payload larger than this is corruption, not data: the biggest
 * real one is an add with a maximal payload and name. */
#define CMDLOG_MAX_PAYLOAD ((uint64_t)1 << 31)

const uint8_t cmdlog_header[CMDLOG_HEADER_LEN] = {0x77, 0x71, 0x77, 0x71, 0, 0, 0, 1};

#define CRC32C_POLY 0x82F63B78u /* reflected: x^0 in bit 31 */

static uint32_t crc32c_table[256];
/* x^(2^k) modulo the polynomial, for cmdlog_crc32c_combine: 8 * a length
 * of up to 2^64 bytes needs k up to 66. */
static uint32_t crc32c_x2k[67];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

/* a * b modulo the polynomial, both in the CRC's reflected bit order. */
static uint32_t
crc32c_mul(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
        if (a & bit)
            prod ^= b;
        b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1; /* b * x */
    }
    return prod;
}

/* Build the tables once. */
static void
crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[i] = c;
    }
    crc32c_x2k[0] = 1u << 30; /* x^1 */
    for (size_t k = 1; k < WQ_ARRAY_LEN(crc32c_x2k); k++)
        crc32c_x2k[k] = crc32c_mul(crc32c_x2k[k - 1], crc32c_x2k[k - 1]);
}

/* Byte-at-a-time table CRC, for machines without the instruction. */
static uint32_t
crc32c_soft(uint32_t crc, const uint8_t *p, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init); /* the writer and cleaner threads call this too */
    while (len--)
        crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
/* SSE4.2 has a CRC-32C instruction: 8 bytes a step instead of 1. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

uint32_t
cmdlog_crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc32c_hw(~crc, data, len);
#endif
    return ~crc32c_soft(~crc, data, len);
}

uint32_t
cmdlog_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    pthread_once(&crc32c_once, crc32c_init);
    /* CRC(A B) = CRC(A) * x^(8 len_b) + CRC(B): the pre- and post-
     * conditioning cancel out (they are the same for both parts). */
    uint32_t xn = 1u << 31; /* x^0 */
    for (size_t k = 3; len_b != 0; len_b >>= 1, k++)
        if (len_b & 1)
            xn = crc32c_mul(crc32c_x2k[k], xn);
    return crc32c_mul(xn, crc_a) ^ crc_b;
}

static void
put_be(uint8_t *out, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        out[i] = (uint8_t)v;
        v >>= 8;
    }
}

static uint64_t
get_be(const uint8_t *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | in[i];
    return v;
}

/* Go's binary time of Unix ms plus sub_ns nanoseconds (< 1 ms). */
static void
cmdlog_time_put_ns(uint8_t out[CMDLOG_TIME_LEN], bool has_time, int64_t unix_ms, uint32_t sub_ns)
{
    int64_t sec = 0, nsec = 0;
    if (has_time) {
        int64_t s = unix_ms / 1000, ms = unix_ms % 1000;
        if (ms < 0) {
            ms += 1000;
            s--;
        }
        sec = s + CMDLOG_EPOCH_OFFSET;
        nsec = ms * 1000000 + sub_ns % 1000000;
    }
    out[0] = 1;
    put_be(out + 1, (uint64_t)sec, 8);
    put_be(out + 9, (uint64_t)nsec, 4);
    put_be(out + 13, 0xffff, 2); /* UTC */
}

void
cmdlog_time_put(uint8_t out[CMDLOG_TIME_LEN], bool has_time, int64_t unix_ms)
{
    cmdlog_time_put_ns(out, has_time, unix_ms, 0);
}

/* Read a binary time as Unix ms plus the nanoseconds below it. */
static int
cmdlog_time_get_ns(const uint8_t in[CMDLOG_TIME_LEN], bool *has_time, int64_t *unix_ms,
                   uint32_t *sub_ns)
{
    if (in[0] != 1)
        return -1;
    int64_t sec = (int64_t)get_be(in + 1, 8);
    int32_t nsec = (int32_t)(uint32_t)get_be(in + 9, 4);
    if (nsec < 0 || nsec >= 1000000000)
        return -1;
    *has_time = sec != 0 || nsec != 0;
    __int128 ms = ((__int128)sec - CMDLOG_EPOCH_OFFSET) * 1000 + nsec / 1000000;
    if (ms > INT64_MAX || ms < INT64_MIN)
        return -1;
    *unix_ms = *has_time ? (int64_t)ms : 0;
    *sub_ns = (uint32_t)(nsec % 1000000);
    return 0;
}

int
cmdlog_time_get(const uint8_t in[CMDLOG_TIME_LEN], bool *has_time, int64_t *unix_ms)
{
    uint32_t sub_ns;
    return cmdlog_time_get_ns(in, has_time, unix_ms, &sub_ns);
}

size_t
cmdlog_uvarint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t
cmdlog_uvarint_get(const uint8_t *in, size_t len, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t i = 0; i < len && i < 10; i++) {
        uint8_t b = in[i];
        if (i == 9 && b > 1)
            return 0; /* more than 64 bits */
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

size_t
cmdlog_varint_put(uint8_t *out, int64_t v)
{
    uint64_t zz = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    return cmdlog_uvarint_put(out, zz);
}

size_t
cmdlog_varint_get(const uint8_t *in, size_t len, int64_t *v)
{
    uint64_t zz;
    size_t n = cmdlog_uvarint_get(in, len, &zz);
    if (n > 0)
        *v = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
    return n;
}

static size_t
uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t
varint_len(int64_t v)
{
    return uvarint_len(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Bytes of the payload (code and body) of a Faktory record. */
static size_t
cmdlog_faktory_size(const struct cmdlog_rec *r)
{
    const struct wq_str *first = r->code >= CMDLOG_F_PAUSE ? &r->name : &r->jid;
    size_t n = 1 + uvarint_len(first->n) + first->n;
    switch (r->code) {
    case CMDLOG_F_PUSH:
        n += uvarint_len(r->name.n) + r->name.n + uvarint_len((uint64_t)r->priority) +
             uvarint_len(r->ttr) + uvarint_len(r->payload.n) + r->payload.n + CMDLOG_TIME_LEN;
        break;
    case CMDLOG_F_RETRY:
    case CMDLOG_F_DEAD:
        n += uvarint_len(r->payload.n) + r->payload.n + CMDLOG_TIME_LEN;
        break;
    default:
        break;
    }
    return n;
}

/* Bytes of the payload (code and body) of a Hero record. */
static size_t
cmdlog_hero_size(const struct cmdlog_rec *r)
{
    size_t n = 1 + uvarint_len(r->jid.n) + r->jid.n;
    switch (r->code) {
    case CMDLOG_H_HSET:
        n += uvarint_len(r->payload.n) + r->payload.n;
        /* fall through */
    case CMDLOG_H_HDEL:
        n += uvarint_len(r->name.n) + r->name.n;
        break;
    case CMDLOG_H_PUSH:
        n += 1 + uvarint_len(r->payload.n) + r->payload.n;
        /* fall through */
    case CMDLOG_H_POP:
        n += uvarint_len(r->seq);
        break;
    case CMDLOG_H_EXPIRE:
        n += CMDLOG_TIME_LEN;
        break;
    case CMDLOG_H_TAKE:
    case CMDLOG_H_BACK:
        n += uvarint_len(r->name.n) + r->name.n + uvarint_len(r->seq);
        break;
    default:
        break;
    }
    return n;
}

/* Bytes of the payload (code and body) of a NORFAB record. */
static size_t
cmdlog_norfab_size(const struct cmdlog_rec *r)
{
    size_t n = 1 + uvarint_len(r->jid.n) + r->jid.n + uvarint_len(r->name.n) + r->name.n;
    if (r->code == CMDLOG_N_POST)
        n += uvarint_len(r->payload.n) + r->payload.n + uvarint_len(r->result.n) + r->result.n +
             uvarint_len(r->after.n) + r->after.n + 1 + uvarint_len(r->seq);
    else if (r->code == CMDLOG_N_RESULT)
        n += uvarint_len(r->payload.n) + r->payload.n;
    return n;
}

/* Bytes of the payload (code and body) of r. */
static size_t
cmdlog_payload_size(const struct cmdlog_rec *r)
{
    if (cmdlog_code_is_faktory(r->code))
        return cmdlog_faktory_size(r);
    if (cmdlog_code_is_hero(r->code))
        return cmdlog_hero_size(r);
    if (cmdlog_code_is_norfab(r->code))
        return cmdlog_norfab_size(r);
    size_t n = 1 + JOBID_LEN;
    switch (r->code) {
    case CMDLOG_ADD:
    case CMDLOG_SCHEDULE:
        n += uvarint_len(r->name.n) + r->name.n + uvarint_len(r->ttr) + uvarint_len(r->ttl) +
             varint_len(r->priority) + uvarint_len(r->max_attempts) + uvarint_len(r->max_fails) +
             uvarint_len(r->payload.n) + r->payload.n + 2 * CMDLOG_TIME_LEN;
        break;
    case CMDLOG_COMPLETE:
    case CMDLOG_FAIL:
        n += uvarint_len(r->result.n) + r->result.n;
        break;
    case CMDLOG_AFTER:
    case CMDLOG_BROADCAST:
        n += uvarint_len(r->after.n / JOBID_LEN) + r->after.n;
        break;
    case CMDLOG_POLICY:
        n += uvarint_len(r->backoff) + 1;
        break;
    case CMDLOG_FAIL_BACKOFF:
        n += CMDLOG_TIME_LEN;
        break;
    default:
        break;
    }
    return n;
}

size_t
cmdlog_rec_size(const struct cmdlog_rec *r)
{
    size_t p = cmdlog_payload_size(r);
    return CMDLOG_TIME_LEN + uvarint_len(p) + p + CMDLOG_CRC_LEN;
}

static uint8_t *
put_bytes(uint8_t *o, const struct wq_str *s)
{
    o += cmdlog_uvarint_put(o, s->n);
    if (s->n > 0)
        memcpy(o, s->p, s->n);
    return o + s->n;
}

/* The body of a Faktory record into o; returns its end. */
static uint8_t *
cmdlog_faktory_encode(const struct cmdlog_rec *r, uint8_t *o)
{
    o = put_bytes(o, r->code >= CMDLOG_F_PAUSE ? &r->name : &r->jid);
    switch (r->code) {
    case CMDLOG_F_PUSH:
        o = put_bytes(o, &r->name);
        o += cmdlog_uvarint_put(o, (uint64_t)r->priority);
        o += cmdlog_uvarint_put(o, r->ttr);
        o = put_bytes(o, &r->payload);
        cmdlog_time_put(o, r->timed, r->time_ms);
        o += CMDLOG_TIME_LEN;
        break;
    case CMDLOG_F_RETRY:
    case CMDLOG_F_DEAD:
        o = put_bytes(o, &r->payload);
        cmdlog_time_put(o, true, r->time_ms);
        o += CMDLOG_TIME_LEN;
        break;
    default:
        break;
    }
    return o;
}

/* The body of a Hero record into o; returns its end. */
static uint8_t *
cmdlog_hero_encode(const struct cmdlog_rec *r, uint8_t *o)
{
    o = put_bytes(o, &r->jid);
    switch (r->code) {
    case CMDLOG_H_HSET:
        o = put_bytes(o, &r->name);
        o = put_bytes(o, &r->payload);
        break;
    case CMDLOG_H_HDEL:
        o = put_bytes(o, &r->name);
        break;
    case CMDLOG_H_PUSH:
        o += cmdlog_uvarint_put(o, r->seq);
        *o++ = (uint8_t)((r->left ? 1 : 0) | (r->job ? 2 : 0));
        o = put_bytes(o, &r->payload);
        break;
    case CMDLOG_H_POP:
        o += cmdlog_uvarint_put(o, r->seq);
        break;
    case CMDLOG_H_EXPIRE:
        cmdlog_time_put(o, r->timed, r->time_ms);
        o += CMDLOG_TIME_LEN;
        break;
    case CMDLOG_H_TAKE:
    case CMDLOG_H_BACK:
        o = put_bytes(o, &r->name);
        o += cmdlog_uvarint_put(o, r->seq);
        break;
    default:
        break;
    }
    return o;
}

/* The body of a NORFAB record into o; returns its end. */
static uint8_t *
cmdlog_norfab_encode(const struct cmdlog_rec *r, uint8_t *o)
{
    o = put_bytes(o, &r->jid);
    o = put_bytes(o, &r->name);
    if (r->code == CMDLOG_N_POST) {
        o = put_bytes(o, &r->payload);
        o = put_bytes(o, &r->result);
        o = put_bytes(o, &r->after);
        *o++ = (uint8_t)(r->left ? 1 : 0);
        o += cmdlog_uvarint_put(o, r->seq);
    } else if (r->code == CMDLOG_N_RESULT) {
        o = put_bytes(o, &r->payload);
    }
    return o;
}

void
cmdlog_rec_encode(const struct cmdlog_rec *r, uint8_t *out)
{
    uint8_t *o = out;
    cmdlog_time_put(o, true, r->at_ms);
    o += CMDLOG_TIME_LEN;
    o += cmdlog_uvarint_put(o, cmdlog_payload_size(r));
    *o++ = r->code;
    if (!cmdlog_code_has_id(r->code)) {
        o = cmdlog_code_is_hero(r->code)     ? cmdlog_hero_encode(r, o)
            : cmdlog_code_is_norfab(r->code) ? cmdlog_norfab_encode(r, o)
                                             : cmdlog_faktory_encode(r, o);
        put_be(o, cmdlog_crc32c(0, out, (size_t)(o - out)), 4);
        return;
    }
    memcpy(o, r->id, JOBID_LEN);
    o += JOBID_LEN;
    if (r->code == CMDLOG_ADD || r->code == CMDLOG_SCHEDULE) {
        o = put_bytes(o, &r->name);
        o += cmdlog_uvarint_put(o, r->ttr);
        o += cmdlog_uvarint_put(o, r->ttl);
        o += cmdlog_varint_put(o, r->priority);
        o += cmdlog_uvarint_put(o, r->max_attempts);
        o += cmdlog_uvarint_put(o, r->max_fails);
        o = put_bytes(o, &r->payload);
        cmdlog_time_put_ns(o, r->timed, r->time_ms, r->time_ns);
        o += CMDLOG_TIME_LEN;
        cmdlog_time_put(o, true, r->created_ms);
        o += CMDLOG_TIME_LEN;
    } else if (r->code == CMDLOG_COMPLETE || r->code == CMDLOG_FAIL) {
        o = put_bytes(o, &r->result);
    } else if (r->code == CMDLOG_AFTER || r->code == CMDLOG_BROADCAST) {
        o += cmdlog_uvarint_put(o, r->after.n / JOBID_LEN);
        memcpy(o, r->after.p, r->after.n);
        o += r->after.n;
    } else if (r->code == CMDLOG_POLICY) {
        o += cmdlog_uvarint_put(o, r->backoff);
        *o++ = r->dead ? 1 : 0;
    } else if (r->code == CMDLOG_FAIL_BACKOFF) {
        cmdlog_time_put(o, true, r->time_ms);
        o += CMDLOG_TIME_LEN;
    }
    put_be(o, cmdlog_crc32c(0, out, (size_t)(o - out)), 4);
}

/* A cursor over a payload; every get fails once anything is missing. */
struct reader {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t
rd_uvarint(struct reader *rd)
{
    uint64_t v = 0;
    size_t n = rd->bad ? 0 : cmdlog_uvarint_get(rd->p, (size_t)(rd->end - rd->p), &v);
    rd->bad |= n == 0;
    rd->p += n;
    return v;
}

static int64_t
rd_varint(struct reader *rd)
{
    int64_t v = 0;
    size_t n = rd->bad ? 0 : cmdlog_varint_get(rd->p, (size_t)(rd->end - rd->p), &v);
    rd->bad |= n == 0;
    rd->p += n;
    return v;
}

static const uint8_t *
rd_take(struct reader *rd, uint64_t n)
{
    if (rd->bad || n > (uint64_t)(rd->end - rd->p)) {
        rd->bad = true;
        return NULL;
    }
    const uint8_t *at = rd->p;
    rd->p += n;
    return at;
}

static struct wq_str
rd_bytes(struct reader *rd)
{
    uint64_t n = rd_uvarint(rd);
    const uint8_t *at = rd_take(rd, n);
    return (struct wq_str){(const char *)at, at != NULL ? (size_t)n : 0};
}

static void
rd_time(struct reader *rd, bool *has, int64_t *ms, uint32_t *sub_ns)
{
    const uint8_t *at = rd_take(rd, CMDLOG_TIME_LEN);
    if (at != NULL && cmdlog_time_get_ns(at, has, ms, sub_ns) != 0)
        rd->bad = true;
}

/* Decode the body of a Faktory record (after the code) into r. */
static bool
cmdlog_faktory_decode(struct reader *rd, struct cmdlog_rec *r)
{
    uint32_t ns;
    if (r->code >= CMDLOG_F_PAUSE)
        r->name = rd_bytes(rd);
    else
        r->jid = rd_bytes(rd);
    switch (r->code) {
    case CMDLOG_F_PUSH:
        r->name = rd_bytes(rd);
        r->priority = (int64_t)rd_uvarint(rd);
        r->ttr = rd_uvarint(rd);
        r->payload = rd_bytes(rd);
        rd_time(rd, &r->timed, &r->time_ms, &ns);
        break;
    case CMDLOG_F_RETRY:
    case CMDLOG_F_DEAD:
        r->payload = rd_bytes(rd);
        rd_time(rd, &r->timed, &r->time_ms, &ns);
        break;
    default:
        break;
    }
    return !rd->bad && rd->p == rd->end;
}

/* Decode the body of a Hero record (after the code) into r. */
static bool
cmdlog_hero_decode(struct reader *rd, struct cmdlog_rec *r)
{
    uint32_t ns;
    r->jid = rd_bytes(rd);
    rd->bad |= r->jid.n == 0;
    switch (r->code) {
    case CMDLOG_H_HSET:
        r->name = rd_bytes(rd);
        r->payload = rd_bytes(rd);
        break;
    case CMDLOG_H_HDEL:
        r->name = rd_bytes(rd);
        break;
    case CMDLOG_H_PUSH: {
        r->seq = rd_uvarint(rd);
        const uint8_t *flags = rd_take(rd, 1);
        rd->bad |= flags != NULL && flags[0] > 3;
        r->left = flags != NULL && (flags[0] & 1);
        r->job = flags != NULL && (flags[0] & 2);
        r->payload = rd_bytes(rd);
        break;
    }
    case CMDLOG_H_POP:
        r->seq = rd_uvarint(rd);
        break;
    case CMDLOG_H_EXPIRE:
        rd_time(rd, &r->timed, &r->time_ms, &ns);
        break;
    case CMDLOG_H_TAKE:
    case CMDLOG_H_BACK:
        r->name = rd_bytes(rd);
        r->seq = rd_uvarint(rd);
        break;
    default:
        break;
    }
    return !rd->bad && rd->p == rd->end;
}

/* Decode the body of a NORFAB record (after the code) into r. */
static bool
cmdlog_norfab_decode(struct reader *rd, struct cmdlog_rec *r)
{
    r->jid = rd_bytes(rd);
    rd->bad |= r->jid.n == 0;
    r->name = rd_bytes(rd);
    if (r->code == CMDLOG_N_POST) {
        r->payload = rd_bytes(rd);
        r->result = rd_bytes(rd);
        r->after = rd_bytes(rd);
        const uint8_t *flags = rd_take(rd, 1);
        rd->bad |= flags != NULL && flags[0] > 1;
        r->left = flags != NULL && flags[0] == 1;
        r->seq = rd_uvarint(rd);
    } else if (r->code == CMDLOG_N_RESULT) {
        r->payload = rd_bytes(rd);
    }
    return !rd->bad && rd->p == rd->end;
}

/* Decode the payload (code onwards) into r. */
static bool
cmdlog_payload_decode(const uint8_t *p, size_t len, struct cmdlog_rec *r)
{
    struct reader rd = {p, p + len, false};
    const uint8_t *code = rd_take(&rd, 1);
    if (rd.bad || code[0] < CMDLOG_ADD || code[0] > CMDLOG_CODE_MAX ||
        (code[0] > CMDLOG_WORKQ_MAX && code[0] < CMDLOG_CANCEL &&
         !cmdlog_code_is_faktory(code[0])) ||
        (code[0] > CMDLOG_EXT_MAX && !cmdlog_code_is_hero(code[0]) &&
         !cmdlog_code_is_norfab(code[0])))
        return false;
    r->code = code[0];
    if (cmdlog_code_is_faktory(r->code))
        return cmdlog_faktory_decode(&rd, r);
    if (cmdlog_code_is_hero(r->code))
        return cmdlog_hero_decode(&rd, r);
    if (cmdlog_code_is_norfab(r->code))
        return cmdlog_norfab_decode(&rd, r);
    const uint8_t *id = rd_take(&rd, JOBID_LEN);
    if (rd.bad)
        return false;
    memcpy(r->id, id, JOBID_LEN);
    if (r->code == CMDLOG_ADD || r->code == CMDLOG_SCHEDULE) {
        bool has_created;
        uint32_t created_ns;
        r->name = rd_bytes(&rd);
        r->ttr = rd_uvarint(&rd);
        r->ttl = rd_uvarint(&rd);
        r->priority = rd_varint(&rd);
        r->max_attempts = rd_uvarint(&rd);
        r->max_fails = rd_uvarint(&rd);
        r->payload = rd_bytes(&rd);
        rd_time(&rd, &r->timed, &r->time_ms, &r->time_ns);
        rd_time(&rd, &has_created, &r->created_ms, &created_ns);
    } else if (r->code == CMDLOG_COMPLETE || r->code == CMDLOG_FAIL) {
        r->result = rd_bytes(&rd);
    } else if (r->code == CMDLOG_AFTER || r->code == CMDLOG_BROADCAST) {
        uint64_t count = rd_uvarint(&rd);
        const uint8_t *ids =
            count <= (uint64_t)len / JOBID_LEN ? rd_take(&rd, count * JOBID_LEN) : NULL;
        rd.bad |= ids == NULL;
        r->after = (struct wq_str){(const char *)ids, ids != NULL ? (size_t)count * JOBID_LEN : 0};
    } else if (r->code == CMDLOG_POLICY) {
        uint64_t backoff = rd_uvarint(&rd);
        const uint8_t *dead = rd_take(&rd, 1);
        rd.bad |= backoff > UINT8_MAX || (dead != NULL && dead[0] > 1);
        r->backoff = (uint8_t)backoff;
        r->dead = dead != NULL && dead[0] == 1;
    } else if (r->code == CMDLOG_FAIL_BACKOFF) {
        uint32_t ns;
        rd_time(&rd, &r->timed, &r->time_ms, &ns);
        rd.bad |= !r->timed;
    }
    return !rd.bad && rd.p == rd.end;
}

enum cmdlog_decode_result
cmdlog_rec_frame(const uint8_t *in, size_t len, size_t *total)
{
    if (len < CMDLOG_TIME_LEN + 1)
        return CMDLOG_REC_SHORT;
    uint64_t size;
    size_t n = cmdlog_uvarint_get(in + CMDLOG_TIME_LEN, len - CMDLOG_TIME_LEN, &size);
    if (n == 0)
        return len - CMDLOG_TIME_LEN >= 10 ? CMDLOG_REC_BAD : CMDLOG_REC_SHORT;
    if (size > CMDLOG_MAX_PAYLOAD)
        return CMDLOG_REC_BAD;
    *total = CMDLOG_TIME_LEN + n + (size_t)size + CMDLOG_CRC_LEN;
    return CMDLOG_REC_OK;
}

enum cmdlog_decode_result
cmdlog_rec_decode_unchecked(const uint8_t *in, size_t len, struct cmdlog_rec *r, size_t *used)
{
    memset(r, 0, sizeof *r);
    size_t total;
    enum cmdlog_decode_result f = cmdlog_rec_frame(in, len, &total);
    if (f != CMDLOG_REC_OK)
        return f;
    if (len < total)
        return CMDLOG_REC_SHORT;
    uint64_t size;
    size_t head =
        CMDLOG_TIME_LEN + cmdlog_uvarint_get(in + CMDLOG_TIME_LEN, len - CMDLOG_TIME_LEN, &size);
    bool has_at;
    if (cmdlog_time_get(in, &has_at, &r->at_ms) != 0 ||
        !cmdlog_payload_decode(in + head, (size_t)size, r))
        return CMDLOG_REC_BAD;
    *used = total;
    return CMDLOG_REC_OK;
}

enum cmdlog_decode_result
cmdlog_rec_decode(const uint8_t *in, size_t len, struct cmdlog_rec *r, size_t *used)
{
    /* Everything that costs nothing comes before the CRC, which costs the
     * record's length: a scan for records in garbage tries every offset. */
    size_t total;
    enum cmdlog_decode_result d = cmdlog_rec_decode_unchecked(in, len, r, &total);
    if (d != CMDLOG_REC_OK)
        return d;
    size_t body = total - CMDLOG_CRC_LEN;
    if ((uint32_t)get_be(in + body, 4) != cmdlog_crc32c(0, in, body)) {
        memset(r, 0, sizeof *r);
        return CMDLOG_REC_BAD;
    }
    *used = total;
    return CMDLOG_REC_OK;
}

size_t
cmdlog_rec_key(const struct cmdlog_rec *r, uint8_t *key, size_t cap)
{
    if (cmdlog_code_is_norfab(r->code)) {
        /* 'n', 'p' (the POST) or 'r' (a worker's result), the uuid's
         * length, the uuid, then the worker */
        bool result = r->code != CMDLOG_N_POST && r->name.n > 0;
        size_t n = 2 + 10 + r->jid.n + (result ? r->name.n : 0);
        if (n > cap)
            return 0;
        key[0] = 'n';
        key[1] = result ? 'r' : 'p';
        size_t at = 2 + cmdlog_uvarint_put(key + 2, r->jid.n);
        memcpy(key + at, r->jid.p, r->jid.n);
        at += r->jid.n;
        if (!result)
            return at;
        memcpy(key + at, r->name.p, r->name.n);
        return at + r->name.n;
    }
    if (cmdlog_code_is_hero(r->code)) {
        /* 'h', what (field, element, expiry), the key's length, the key,
         * then the field or the element */
        bool field = r->code == CMDLOG_H_HSET || r->code == CMDLOG_H_HDEL;
        bool element = r->code == CMDLOG_H_PUSH || r->code == CMDLOG_H_POP;
        size_t n = 2 + 10 + r->jid.n + (field ? r->name.n : element ? 8 : 0);
        if (n > cap)
            return 0;
        key[0] = 'h';
        bool job = r->code >= CMDLOG_H_TAKE;
        key[1] = field ? 'f' : element ? 'e' : job ? 'j' : 'x';
        size_t at = 2 + cmdlog_uvarint_put(key + 2, r->jid.n);
        memcpy(key + at, r->jid.p, r->jid.n);
        at += r->jid.n;
        if (field) {
            if (r->name.n > 0)
                memcpy(key + at, r->name.p, r->name.n);
            at += r->name.n;
        } else if (element) {
            put_be(key + at, r->seq, 8);
            at += 8;
        }
        return at;
    }
    if (!cmdlog_code_is_faktory(r->code)) {
        key[0] = 'w';
        memcpy(key + 1, r->id, JOBID_LEN);
        return 1 + JOBID_LEN;
    }
    if (r->code >= CMDLOG_F_PAUSE || r->jid.n + 1 > cap)
        return 0;
    key[0] = 'f';
    memcpy(key + 1, r->jid.p, r->jid.n);
    return 1 + r->jid.n;
}

bool
cmdlog_rec_ends_job(const struct cmdlog_rec *r)
{
    return r->code == CMDLOG_DELETE || r->code == CMDLOG_EXPIRE || r->code == CMDLOG_F_ACK ||
           r->code == CMDLOG_F_DISCARD || r->code == CMDLOG_H_HDEL || r->code == CMDLOG_H_POP ||
           (r->code == CMDLOG_H_EXPIRE && !r->timed) || r->code == CMDLOG_H_END ||
           r->code == CMDLOG_N_GONE;
}

bool
cmdlog_rec_supersedes(const struct cmdlog_rec *r)
{
    return r->code == CMDLOG_H_HSET || (r->code == CMDLOG_H_EXPIRE && r->timed) ||
           r->code == CMDLOG_H_TAKE || r->code == CMDLOG_H_BACK || r->code == CMDLOG_N_POST ||
           r->code == CMDLOG_N_RESULT;
}

void
cmdlog_segment_name(uint64_t n, char out[CMDLOG_SEGMENT_NAME_SIZE])
{
    snprintf(out, CMDLOG_SEGMENT_NAME_SIZE, "%09" PRIu64 ".log", n);
}

int
cmdlog_segment_parse(const char *name, uint64_t *n)
{
    size_t len = strlen(name);
    if (len <= 4 || strcmp(name + len - 4, ".log") != 0)
        return 0;
    size_t digits = len - 4;
    for (size_t i = 0; i < digits; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    /* Digits and ".log": a segment's name, or one this server would never
     * write (and so must not pass over: replay refuses it). */
    if (digits < 9 || (digits > 9 && name[0] == '0'))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < digits; i++) {
        unsigned d = (unsigned)(name[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v == 0)
        return -1;
    *n = v;
    return 1;
}

uint64_t
cmdlog_segment_number(const char *name)
{
    uint64_t n;
    return cmdlog_segment_parse(name, &n) == 1 ? n : 0;
}
