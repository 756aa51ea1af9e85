/* cmdlog_ref.h - an independent reference implementation of the command-log
 * format (doc/protocol-reference.md section 6), for tests only.
 *
 * It is written from the format description alone and shares no code with
 * src/store/cmdlog_codec.c, so a test that writes with one and reads with the other
 * checks the format, not the server's code path against itself.  Plain C11
 * and libc: no project headers, no libevent, no check.
 *
 * Format reminder.  A segment file DIR/NNNNNNNNN.log (9 digits, from 1)
 * starts with the 8 bytes 77 71 77 71 00 00 00 01, then records
 *
 *     TIME(15) | SIZE(uvarint) | PAYLOAD(SIZE) | CRC(4, big-endian)
 *
 * CRC-32C over TIME, SIZE and PAYLOAD.  TIME is Go's time.MarshalBinary v1:
 * 01 | seconds since 0001-01-01 (int64 BE) | nanoseconds (int32 BE) |
 * offset minutes (int16 BE, FF FF = UTC).  PAYLOAD starts with a code:
 * 1 add / 2 schedule (id, name, ttr, ttl, prio, max-attempts, max-fails,
 * payload, time, created), 3 complete / 4 fail (id, result), 5 delete,
 * 6 expire, 7 start-attempt, 8 timeout-attempt, 9 fail-retry (id only).
 *
 * Memory: every function that cannot continue (out of memory) aborts; file
 * functions return 0 or -1 with errno.  Times are Unix milliseconds.
 *
 * Typical use:
 *
 *     struct ref_buf b;
 *     ref_buf_init(&b);
 *     uint8_t id[REF_ID_LEN];
 *     ref_id(id, 1);
 *     ref_rec_add(&b, now, id, "q1", 60000, 3600000, 0, 0, 0, "hi", 2, now);
 *     ref_rec_id(&b, now + 1, REF_START_ATTEMPT, id);
 *     ref_seg_write(dir, 1, b.data, b.len);     // dir/000000001.log
 *     ref_buf_free(&b);
 *
 *     struct ref_seg s;
 *     ref_seg_read(path, &s);   // s.recs[0..s.nrecs), s.status, s.bad_off
 *     ref_seg_free(&s);
 */
#ifndef WQ_TESTS_CMDLOG_REF_H
#define WQ_TESTS_CMDLOG_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REF_HEADER_LEN 8
#define REF_TIME_LEN   15
#define REF_CRC_LEN    4
#define REF_ID_LEN     16
/* Seconds from 0001-01-01T00:00:00Z to 1970-01-01T00:00:00Z. */
#define REF_EPOCH_OFFSET 62135596800LL

/* Command codes of the payload's first byte. */
enum ref_code {
    REF_ADD = 1,
    REF_SCHEDULE = 2,
    REF_COMPLETE = 3,
    REF_FAIL = 4,
    REF_DELETE = 5,
    REF_EXPIRE = 6,
    REF_START_ATTEMPT = 7,
    REF_TIMEOUT_ATTEMPT = 8,
    REF_FAIL_RETRY = 9, /* ours: a fail that sent the job back to waiting */
};

/* The segment header "wqwq" + version 1 (big-endian uint32). */
extern const uint8_t ref_header[REF_HEADER_LEN];

/* ---- primitives ---------------------------------------------------------- */

/* CRC-32C (Castagnoli, reflected 0x82F63B78, init/final xor ~0) of data,
 * bit by bit (no table, on purpose: a different algorithm from src's). */
uint32_t ref_crc32c(const void *data, size_t len);

/* Unsigned LEB128 into out (<= 10 bytes); returns the bytes written. */
size_t ref_uvarint_put(uint8_t out[10], uint64_t v);
/* Zig-zag signed varint (Go's binary.PutVarint); returns the bytes written. */
size_t ref_varint_put(uint8_t out[10], int64_t v);

/* Go's time.MarshalBinary (v1, UTC offset FF FF) of Unix ms unix_ms; with
 * has_time false, Go's zero time (01, then 12 zero bytes, then FF FF). */
void ref_time_put(uint8_t out[REF_TIME_LEN], bool has_time, int64_t unix_ms);
/* The same with nanoseconds below the millisecond (sub_ns < 1000000). */
void ref_time_put_ns(uint8_t out[REF_TIME_LEN], bool has_time, int64_t unix_ms, uint32_t sub_ns);
/* The same, with every field given raw (for malformed/odd encodings):
 * version byte, seconds since year 1, nanoseconds, offset in minutes. */
void ref_time_put_raw(uint8_t out[REF_TIME_LEN], uint8_t version, int64_t go_sec, int32_t nsec,
                      int16_t offset_min);
/* Decode; *has_time false for Go's zero time (seconds and nanos 0).  The
 * nanoseconds are truncated to ms (floor).  Returns 0, or -1 if the version
 * byte is not 1 or the nanoseconds are out of [0, 1e9).  The offset is
 * ignored, as the notes require. */
int ref_time_get(const uint8_t in[REF_TIME_LEN], bool *has_time, int64_t *unix_ms);
/* The same, also giving the nanoseconds below the millisecond. */
int ref_time_get_ns(const uint8_t in[REF_TIME_LEN], bool *has_time, int64_t *unix_ms,
                    uint32_t *sub_ns);

/* A deterministic, valid (version 4, non-nil) job id for test number n:
 * 00000000-0000-4000-8000-NNNNNNNNNNNN with n in the last 6 bytes.
 * Text form of the same id: "00000000-0000-4000-8000-%012llx". */
void ref_id(uint8_t id[REF_ID_LEN], uint64_t n);

/* ---- building records ------------------------------------------------------ */

/* A growable byte buffer.  Zero-initialised (or ref_buf_init) is empty. */
struct ref_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void ref_buf_init(struct ref_buf *b);
void ref_buf_free(struct ref_buf *b); /* frees data, leaves b empty */
void ref_buf_put(struct ref_buf *b, const void *p, size_t n);

/* Each ref_rec_* appends one framed record (TIME at_ms, SIZE, PAYLOAD, CRC)
 * to b and returns its offset in b (so a test can damage it later).  name
 * is NUL-terminated; payload/data may be NULL when len is 0. */

/* Code 1: add.  The time field is Go's zero time; created is created_ms. */
size_t ref_rec_add(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN], const char *name,
                   uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts,
                   uint64_t max_fails, const void *payload, size_t len, int64_t created_ms);
/* Code 2: schedule, to run at time_ms. */
size_t ref_rec_schedule(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN],
                        const char *name, uint64_t ttr, uint64_t ttl, int64_t prio,
                        uint64_t max_attempts, uint64_t max_fails, const void *payload, size_t len,
                        int64_t time_ms, int64_t created_ms);
/* The same with the scheduled time to the nanosecond: time_ms + time_ns
 * (time_ns < 1000000, the part below the millisecond). */
size_t ref_rec_schedule_ns(struct ref_buf *b, int64_t at_ms, const uint8_t id[REF_ID_LEN],
                           const char *name, uint64_t ttr, uint64_t ttl, int64_t prio,
                           uint64_t max_attempts, uint64_t max_fails, const void *payload,
                           size_t len, int64_t time_ms, uint32_t time_ns, int64_t created_ms);
/* Code 3 (complete) or 4 (fail) with a result. */
size_t ref_rec_result(struct ref_buf *b, int64_t at_ms, int code, const uint8_t id[REF_ID_LEN],
                      const void *data, size_t len);
/* Codes 5..9 (delete, expire, start-attempt, timeout-attempt, fail-retry). */
size_t ref_rec_id(struct ref_buf *b, int64_t at_ms, int code, const uint8_t id[REF_ID_LEN]);
/* Frame an arbitrary payload (code byte included) as a record: for unknown
 * codes and malformed payloads with a valid CRC. */
size_t ref_rec_raw(struct ref_buf *b, int64_t at_ms, const void *payload, size_t len);
/* The same with the record's TIME given as 15 raw bytes (see ref_time_put_raw). */
size_t ref_rec_raw_time(struct ref_buf *b, const uint8_t at[REF_TIME_LEN], const void *payload,
                        size_t len);
/* Append to p the PAYLOAD of an add/schedule (code, id, ..., time, created)
 * with both times given raw, for encodings Go may write that ref_rec_add
 * does not (nanoseconds, zone offsets).  Frame it with ref_rec_raw*. */
void ref_payload_job(struct ref_buf *p, int code, const uint8_t id[REF_ID_LEN], const char *name,
                     uint64_t ttr, uint64_t ttl, int64_t prio, uint64_t max_attempts,
                     uint64_t max_fails, const void *payload, size_t len,
                     const uint8_t time[REF_TIME_LEN], const uint8_t created[REF_TIME_LEN]);

/* Append len bytes of garbage that claims records at every REF_CRAFT_STEP
 * bytes: each a complete (code 3) with a TIME of at_ms and SIZE and result
 * lengths (5-byte varints) that make it end at the last 4 bytes, which no
 * CRC matches.  A scan that checks the CRC of each in turn does quadratic
 * work.  The number of such records. */
#define REF_CRAFT_STEP 42
size_t ref_crafted_tail(struct ref_buf *b, int64_t at_ms, size_t len);

/* ---- segment files --------------------------------------------------------- */

/* "NNNNNNNNN.log" for n (9 digits, zero-padded) into out. */
void ref_seg_name(uint32_t n, char out[14]);
/* Create (or replace) dir/NNNNNNNNN.log holding the header and then
 * recs[0..len).  With len 0 the file holds only the header.  0 or -1. */
int ref_seg_write(const char *dir, uint32_t n, const void *recs, size_t len);
/* Write exactly bytes[0..len) as dir/NNNNNNNNN.log (no header added), for
 * empty or damaged files.  0 or -1. */
int ref_seg_write_raw(const char *dir, uint32_t n, const void *bytes, size_t len);

/* ---- reading --------------------------------------------------------------- */

/* One decoded record.  Pointers refer into the buffer it was decoded from. */
struct ref_rec {
    size_t off;  /* offset of the record in that buffer */
    size_t size; /* its framed size */
    int code;
    int64_t at_ms; /* the record's TIME */
    uint8_t id[REF_ID_LEN];
    /* REF_ADD, REF_SCHEDULE */
    const uint8_t *name;
    size_t name_len;
    uint64_t ttr, ttl;
    int64_t prio;
    uint64_t max_attempts, max_fails;
    const uint8_t *payload;
    size_t payload_len;
    bool has_time; /* false for add (Go's zero time) */
    int64_t time_ms;
    uint32_t time_ns; /* the scheduled time's nanoseconds below time_ms */
    int64_t created_ms;
    /* REF_COMPLETE, REF_FAIL */
    const uint8_t *result;
    size_t result_len;
};

enum ref_status {
    REF_OK = 0,    /* a whole valid record / segment */
    REF_SHORT = 1, /* the bytes end inside a record */
    REF_BAD = 2,   /* CRC mismatch, malformed payload or unknown code */
    REF_NOHDR = 3, /* (segments) the file is shorter than or differs from the header */
};

/* Decode the record at in[0..len) into *r (r->off is 0).  REF_OK sets
 * *used to its framed size.  Codes outside 1..9 are REF_BAD. */
enum ref_status ref_rec_decode(const uint8_t *in, size_t len, struct ref_rec *r, size_t *used);

/* A segment read into memory and walked record by record. */
struct ref_seg {
    uint8_t *data; /* whole file */
    size_t len;
    struct ref_rec *recs; /* the valid records before the first problem */
    size_t nrecs;
    enum ref_status status; /* REF_OK if every byte was a valid record */
    size_t bad_off;         /* offset of the first bad/short record (== len if OK) */
};

/* Read and walk the file at path.  Returns 0 (whatever the status), or -1
 * with errno if it cannot be read.  Free with ref_seg_free. */
int ref_seg_read(const char *path, struct ref_seg *s);
/* The same over bytes already in memory (copied into s->data). */
void ref_seg_parse(const void *bytes, size_t len, struct ref_seg *s);
void ref_seg_free(struct ref_seg *s);

#endif /* WQ_TESTS_CMDLOG_REF_H */
