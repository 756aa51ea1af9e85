/* cmdlog_codec.h - the bytes of Workq's command log (doc/cmdlog.md,
 * doc/protocol-reference.md section 6): segment header, record framing,
 * CRC-32C, varints, Go's binary time, and the payload of each command
 * code.  Pure: no files. */
#ifndef WQ_CMDLOG_CODEC_H
#define WQ_CMDLOG_CODEC_H

#include "lib/wq.h"
#include "lib/jobid.h"

#define CMDLOG_HEADER_LEN 8
#define CMDLOG_TIME_LEN   15
#define CMDLOG_CRC_LEN    4
/* Seconds from 0001-01-01T00:00:00Z to the Unix epoch. */
#define CMDLOG_EPOCH_OFFSET 62135596800LL

extern const uint8_t cmdlog_header[CMDLOG_HEADER_LEN];

enum cmdlog_code {
    CMDLOG_ADD = 1,
    CMDLOG_SCHEDULE = 2,
    CMDLOG_COMPLETE = 3,
    CMDLOG_FAIL = 4,
    CMDLOG_DELETE = 5,
    CMDLOG_EXPIRE = 6,
    CMDLOG_START_ATTEMPT = 7,   /* a lease */
    CMDLOG_TIMEOUT_ATTEMPT = 8, /* a TTR expiry */
    /* Ours, from 9 up (doc/cmdlog.md): */
    CMDLOG_FAIL_RETRY = 9, /* a fail that sent the job back to waiting */
    CMDLOG_WORKQ_MAX = 9,
    /* The Faktory front-end's jobs (fjobs.h), 16 to 31; their body starts
     * with the jid instead of a 16-byte id. */
    CMDLOG_F_PUSH = 16,    /* jid, queue, priority, reserve_for, text, at */
    CMDLOG_F_FETCH = 17,   /* jid: a reservation starts */
    CMDLOG_F_ACK = 18,     /* jid: done, gone */
    CMDLOG_F_RETRY = 19,   /* jid, text, when: into the retries set */
    CMDLOG_F_DEAD = 20,    /* jid, text, until: into the dead set */
    CMDLOG_F_DISCARD = 21, /* jid: removed, whatever its state */
    CMDLOG_F_REQUEUE = 22, /* jid: from a set back to its queue */
    CMDLOG_F_PAUSE = 23,   /* queue name */
    CMDLOG_F_RESUME = 24,  /* queue name */
    CMDLOG_F_MAX = 24,
    /* The job model's extensions, 32 to 47 (a 16-byte id first, as
     * Workq's): */
    CMDLOG_CANCEL = 32,       /* id: failed with "cancelled", its worker refused */
    CMDLOG_AFTER = 33,        /* id, its prerequisites: follows the job's add */
    CMDLOG_BROADCAST = 34,    /* id, its copies: follows the copies' adds */
    CMDLOG_POLICY = 35,       /* id, backoff, dead: follows the job's add */
    CMDLOG_FAIL_BACKOFF = 36, /* id, when: a fail that sent the job to wait until then */
    CMDLOG_REVIVE = 37,       /* id: out of the dead set, back to its queue */
    CMDLOG_EXT_MAX = 37,
    /* The Hero front-end's keys, 48 to 55; their body starts with the
     * Redis key (in jid) instead of a 16-byte id. */
    CMDLOG_H_HSET = 48,   /* key, field (name), value (payload) */
    CMDLOG_H_HDEL = 49,   /* key, field (name) */
    CMDLOG_H_PUSH = 50,   /* key, element (seq), flags (left, job), value (payload) */
    CMDLOG_H_POP = 51,    /* key, element (seq): it left the list, however */
    CMDLOG_H_EXPIRE = 52, /* key, when (time_ms; not timed: no expiry, or the key went) */
    CMDLOG_H_TAKE = 53,   /* job id (in jid), work queue (name), times handed out (seq) */
    CMDLOG_H_END = 54,    /* job id: ended (after a 53 or 55) */
    CMDLOG_H_BACK = 55,   /* job id, work queue, times handed out: back on its list */
    CMDLOG_H_MAX = 55,
    /* The NORFAB front-end's POSTs, 56 to 58; their body starts with the
     * POST's uuid (in jid). */
    CMDLOG_N_POST = 56,   /* uuid, service (name), body (payload), client (result),
                           * target and workers (after), all (left), state (seq) */
    CMDLOG_N_RESULT = 57, /* uuid, worker (name), its final 200 body (payload) */
    CMDLOG_N_GONE = 58,   /* uuid, worker (name; empty: the POST itself): forgotten */
    CMDLOG_N_MAX = 58,
    CMDLOG_CODE_MAX = 58,
};

/* Is code one of the Faktory front-end's? */
static inline bool
cmdlog_code_is_faktory(uint8_t code)
{
    return code >= CMDLOG_F_PUSH && code <= CMDLOG_F_MAX;
}

/* Is code one of the Hero front-end's? */
static inline bool
cmdlog_code_is_hero(uint8_t code)
{
    return code >= CMDLOG_H_HSET && code <= CMDLOG_H_MAX;
}

/* Is code one of the NORFAB front-end's? */
static inline bool
cmdlog_code_is_norfab(uint8_t code)
{
    return code >= CMDLOG_N_POST && code <= CMDLOG_N_MAX;
}

/* Does a record of code name a job by its 16-byte id (the engine's own
 * records), rather than by a front-end's key (Faktory's jid, a queue, a
 * Hero key, a NORFAB uuid)? */
static inline bool
cmdlog_code_has_id(uint8_t code)
{
    return !cmdlog_code_is_faktory(code) && !cmdlog_code_is_hero(code) &&
           !cmdlog_code_is_norfab(code);
}

/* One record, decoded.  Pointers refer into the buffer it was decoded from
 * (or that the caller owns, to encode). */
struct cmdlog_rec {
    uint8_t code;
    int64_t at_ms; /* when it was written, Unix ms */
    uint8_t id[JOBID_LEN];
    /* CMDLOG_ADD, CMDLOG_SCHEDULE */
    struct wq_str name;
    uint64_t ttr;
    uint64_t ttl;
    int64_t priority;
    uint64_t max_attempts;
    uint64_t max_fails;
    struct wq_str payload;
    bool timed; /* has a scheduled time */
    int64_t time_ms;
    uint32_t time_ns; /* the scheduled time below the millisecond */
    int64_t created_ms;
    /* CMDLOG_COMPLETE, CMDLOG_FAIL */
    struct wq_str result;
    /* CMDLOG_AFTER, CMDLOG_BROADCAST: the prerequisites' or copies' ids,
     * 16 bytes each */
    struct wq_str after;
    /* CMDLOG_POLICY: the retry policy (the engine's enum core_backoff) and
     * whether the job enters the dead set (CMDLOG_FAIL_BACKOFF's time is
     * time_ms) */
    uint8_t backoff;
    bool dead;
    /* The Faktory codes: the job's jid (in place of id); name is the queue,
     * priority, ttr (reserve_for, seconds), payload (the job's text) and
     * time_ms (when, until, at: timed) as the code says.  The Hero codes:
     * jid is the key, name a hash's field, payload a value, seq a list's
     * element (its number in the log), left whether it went to the head,
     * job whether it is a job's. */
    struct wq_str jid;
    uint64_t seq;
    bool left; /* pushed at the head */
    bool job;  /* the element a job is bound to */
};

/* CRC-32C (Castagnoli) continued from crc (0 to start). */
uint32_t cmdlog_crc32c(uint32_t crc, const void *data, size_t len);
/* The CRC of A followed by B from crc_a and crc_b, the CRCs of A and of B,
 * and B's length, in O(log len_b) steps.  So the CRC of B is crc_ab ^
 * cmdlog_crc32c_combine(crc_a, 0, len_b): what a scan needs to check a
 * record at any offset from the running CRC of the bytes before it. */
uint32_t cmdlog_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* Go's time.MarshalBinary (version 1, UTC) of Unix ms; has_time false
 * writes Go's zero time. */
void cmdlog_time_put(uint8_t out[CMDLOG_TIME_LEN], bool has_time, int64_t unix_ms);
/* Read one; *has_time is false for the zero time.  0, or -1 if malformed. */
int cmdlog_time_get(const uint8_t in[CMDLOG_TIME_LEN], bool *has_time, int64_t *unix_ms);

/* LEB128 varints: put returns the bytes written (<= 10); get returns the
 * bytes read, or 0 if truncated or too long. */
size_t cmdlog_uvarint_put(uint8_t *out, uint64_t v);
size_t cmdlog_uvarint_get(const uint8_t *in, size_t len, uint64_t *v);
size_t cmdlog_varint_put(uint8_t *out, int64_t v); /* zig-zag */
size_t cmdlog_varint_get(const uint8_t *in, size_t len, int64_t *v);

/* Bytes the whole framed record will take. */
size_t cmdlog_rec_size(const struct cmdlog_rec *r);
/* Frame r into out (cmdlog_rec_size bytes): TIME, SIZE, PAYLOAD, CRC. */
void cmdlog_rec_encode(const struct cmdlog_rec *r, uint8_t *out);

enum cmdlog_decode_result {
    CMDLOG_REC_OK,
    CMDLOG_REC_SHORT, /* the buffer ends inside the record (a torn tail?) */
    CMDLOG_REC_BAD,   /* CRC mismatch or a malformed payload */
};
/* Decode the record at in[0..len): on OK, *used is its framed size.  The
 * CRC is checked last, after everything that costs nothing. */
enum cmdlog_decode_result cmdlog_rec_decode(const uint8_t *in, size_t len, struct cmdlog_rec *r,
                                            size_t *used);
/* cmdlog_rec_decode without the CRC check (its 4 bytes end the record): for
 * a scan that checks CRCs its own way. */
enum cmdlog_decode_result cmdlog_rec_decode_unchecked(const uint8_t *in, size_t len,
                                                      struct cmdlog_rec *r, size_t *used);
/* The framed size the record at in[0..len) claims (TIME, SIZE, PAYLOAD,
 * CRC) into *total, from its SIZE alone: OK, SHORT (in ends inside TIME or
 * SIZE) or BAD (a SIZE no record has), as cmdlog_rec_decode would see it. */
enum cmdlog_decode_result cmdlog_rec_frame(const uint8_t *in, size_t len, size_t *total);

/* The key that ties r to its job, for cleaning: a kind byte and the id or
 * jid, into key (at least 1 + the longest jid bytes); its length, 0 when r
 * belongs to no job (a queue's pause). */
size_t cmdlog_rec_key(const struct cmdlog_rec *r, uint8_t *key, size_t cap);
/* Does r end its job's life (delete, expire, ack, discard; a Hero field,
 * element or expiry gone)?  The records of its key up to it, itself
 * included, are no longer needed. */
bool cmdlog_rec_ends_job(const struct cmdlog_rec *r);
/* Does r make every earlier record of its key unneeded, but not itself (a
 * Hero field set again, a new expiry)? */
bool cmdlog_rec_supersedes(const struct cmdlog_rec *r);

/* Room for any segment file's name: up to 20 digits, ".log" and a NUL. */
#define CMDLOG_SEGMENT_NAME_SIZE 25

/* "NNNNNNNNN.log" for segment number n (>= 1): 9 digits with leading zeros,
 * more once n needs them (up to 20), so that no number is ever cut. */
void cmdlog_segment_name(uint64_t n, char out[CMDLOG_SEGMENT_NAME_SIZE]);
/* What a file name is: 1 for a segment's (*n its number), 0 for another
 * file's (not digits and ".log"), -1 for digits and ".log" that no segment
 * has: fewer than 9 digits, a leading zero past 9, zero, or past
 * UINT64_MAX (replay refuses these rather than pass over them). */
int cmdlog_segment_parse(const char *name, uint64_t *n);
/* The number of a segment file name, or 0 if it is not one. */
uint64_t cmdlog_segment_number(const char *name);

#endif /* WQ_CMDLOG_CODEC_H */
