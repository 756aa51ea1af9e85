/* seeds.c - writes the binary seed corpora of the fuzz targets with the
 * server's own encoder (cmdlog_rec_encode), so that they stay valid when
 * the format grows:
 *   tests/fuzz/seeds DIR     (make fuzz-seeds: DIR is tests/fuzz)
 * DIR/cmdlog_rec/: one record of each code, and a torn and a garbled one;
 * DIR/replay/: whole logs (segments one after the other, as fuzz_replay
 * reads them), clean and with the damage replay must handle;
 * DIR/cmdlog_scan/: what follows the last good record of a last segment:
 * torn and damaged records, records with their CRC right and their payload
 * wrong, bytes that claim a record every 42 bytes, records after them. */
#include "lib/wq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/cmdlog_codec.h"

#define T0 1700000000000LL

/* Bytes of a seed (they are small). */
struct buf {
    uint8_t data[16384];
    size_t len;
};

static void
put(struct buf *b, const void *p, size_t n)
{
    if (b->len + n > sizeof b->data)
        abort();
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void
put_rec(struct buf *b, const struct cmdlog_rec *r)
{
    uint8_t tmp[4096];
    if (cmdlog_rec_size(r) > sizeof tmp)
        abort();
    cmdlog_rec_encode(r, tmp);
    put(b, tmp, cmdlog_rec_size(r));
}

static void
write_file(const char *dir, const char *sub, const char *name, const uint8_t *p, size_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Job id number n (never the nil id). */
static void
make_id(uint8_t id[JOBID_LEN], int n)
{
    memset(id, 0, JOBID_LEN);
    id[0] = 0x6b;
    id[15] = (uint8_t)n;
}

static struct cmdlog_rec
rec_add(int n, const char *queue, const char *payload)
{
    struct cmdlog_rec r = {.code = CMDLOG_ADD, .at_ms = T0 + n};
    make_id(r.id, n);
    r.name = (struct wq_str){queue, strlen(queue)};
    r.ttr = 60000;
    r.ttl = 3600000;
    r.priority = -3;
    r.max_attempts = 5;
    r.max_fails = 2;
    r.payload = (struct wq_str){payload, strlen(payload)};
    r.created_ms = T0;
    return r;
}

static struct cmdlog_rec
rec_id(uint8_t code, int n)
{
    struct cmdlog_rec r = {.code = code, .at_ms = T0 + 100 + n};
    make_id(r.id, n);
    return r;
}

static struct cmdlog_rec
rec_faktory(uint8_t code, const char *jid)
{
    static const char text[] = "{\"jid\":\"f1\",\"jobtype\":\"T\",\"args\":[1]}";
    struct cmdlog_rec r = {.code = code, .at_ms = T0 + 200};
    r.jid = (struct wq_str){jid, strlen(jid)};
    r.payload = (struct wq_str){text, sizeof text - 1};
    r.time_ms = T0 + 5000;
    r.timed = code != CMDLOG_F_PUSH; /* a push is timed only when scheduled */
    if (code == CMDLOG_F_PUSH) {
        r.name = (struct wq_str){"default", 7};
        r.priority = 5;
        r.ttr = 1800;
    }
    if (code >= CMDLOG_F_PAUSE)
        r.name = (struct wq_str){"default", 7};
    return r;
}

/* Every code, one record each. */
static void
write_records(const char *dir)
{
    static const struct {
        const char *name;
        uint8_t code;
    } ids[] = {
        {"delete", CMDLOG_DELETE},         {"expire", CMDLOG_EXPIRE},
        {"start", CMDLOG_START_ATTEMPT},   {"timeout", CMDLOG_TIMEOUT_ATTEMPT},
        {"fail_retry", CMDLOG_FAIL_RETRY}, {"cancel", CMDLOG_CANCEL},
    };
    static const struct {
        const char *name;
        uint8_t code;
    } fk[] = {
        {"f_push", CMDLOG_F_PUSH},       {"f_fetch", CMDLOG_F_FETCH},
        {"f_ack", CMDLOG_F_ACK},         {"f_retry", CMDLOG_F_RETRY},
        {"f_dead", CMDLOG_F_DEAD},       {"f_discard", CMDLOG_F_DISCARD},
        {"f_requeue", CMDLOG_F_REQUEUE}, {"f_pause", CMDLOG_F_PAUSE},
        {"f_resume", CMDLOG_F_RESUME},
    };
    struct buf b = {.len = 0};
    struct cmdlog_rec r = rec_add(1, "emails", "{\"to\":\"a@b\"}");
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "add", b.data, b.len);
    write_file(dir, "cmdlog_rec", "torn", b.data, b.len - 7);
    b.data[b.len - 1] ^= 0x55;
    write_file(dir, "cmdlog_rec", "bad_crc", b.data, b.len);
    r.code = CMDLOG_SCHEDULE;
    r.timed = true;
    r.time_ms = T0 + 60000;
    r.time_ns = 123456;
    b.len = 0;
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "schedule", b.data, b.len);
    for (size_t i = 0; i < WQ_ARRAY_LEN(ids); i++) {
        r = rec_id(ids[i].code, 1);
        b.len = 0;
        put_rec(&b, &r);
        write_file(dir, "cmdlog_rec", ids[i].name, b.data, b.len);
    }
    r = rec_id(CMDLOG_COMPLETE, 1);
    r.result = (struct wq_str){"done", 4};
    b.len = 0;
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "complete", b.data, b.len);
    r.code = CMDLOG_FAIL;
    b.len = 0;
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "fail", b.data, b.len);
    uint8_t after[2 * JOBID_LEN];
    make_id(after, 2);
    make_id(after + JOBID_LEN, 3);
    r = rec_id(CMDLOG_AFTER, 1);
    r.after = (struct wq_str){(const char *)after, sizeof after};
    b.len = 0;
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "after", b.data, b.len);
    r.code = CMDLOG_BROADCAST;
    b.len = 0;
    put_rec(&b, &r);
    write_file(dir, "cmdlog_rec", "broadcast", b.data, b.len);
    for (size_t i = 0; i < WQ_ARRAY_LEN(fk); i++) {
        r = rec_faktory(fk[i].code, "f1");
        b.len = 0;
        put_rec(&b, &r);
        write_file(dir, "cmdlog_rec", fk[i].name, b.data, b.len);
    }
}

/* A segment of Workq jobs: added, leased, finished in each way. */
static void
put_workq_segment(struct buf *b, int first)
{
    put(b, cmdlog_header, CMDLOG_HEADER_LEN);
    struct cmdlog_rec r;
    for (int n = first; n < first + 6; n++) {
        r = rec_add(n, n % 2 ? "q1" : "q2", "payload");
        put_rec(b, &r);
    }
    uint8_t after[JOBID_LEN];
    make_id(after, first);
    r = rec_id(CMDLOG_AFTER, first + 5);
    r.after = (struct wq_str){(const char *)after, sizeof after};
    put_rec(b, &r);
    r = rec_id(CMDLOG_START_ATTEMPT, first);
    put_rec(b, &r);
    r = rec_id(CMDLOG_COMPLETE, first);
    r.result = (struct wq_str){"ok", 2};
    put_rec(b, &r);
    r = rec_id(CMDLOG_START_ATTEMPT, first + 1);
    put_rec(b, &r);
    r = rec_id(CMDLOG_FAIL_RETRY, first + 1);
    put_rec(b, &r);
    r = rec_id(CMDLOG_START_ATTEMPT, first + 2);
    put_rec(b, &r);
    r = rec_id(CMDLOG_TIMEOUT_ATTEMPT, first + 2);
    put_rec(b, &r);
    r = rec_id(CMDLOG_DELETE, first + 3);
    put_rec(b, &r);
    r = rec_id(CMDLOG_CANCEL, first + 4);
    put_rec(b, &r);
}

/* A segment of Faktory jobs through their states. */
static void
put_faktory_segment(struct buf *b)
{
    static const uint8_t codes[] = {
        CMDLOG_F_PUSH,  CMDLOG_F_FETCH, CMDLOG_F_RETRY, CMDLOG_F_DEAD,   CMDLOG_F_REQUEUE,
        CMDLOG_F_FETCH, CMDLOG_F_ACK,   CMDLOG_F_PAUSE, CMDLOG_F_RESUME, CMDLOG_F_DISCARD};
    put(b, cmdlog_header, CMDLOG_HEADER_LEN);
    for (size_t i = 0; i < WQ_ARRAY_LEN(codes); i++) {
        struct cmdlog_rec r = rec_faktory(codes[i], "f1");
        put_rec(b, &r);
    }
    struct cmdlog_rec r = rec_faktory(CMDLOG_F_PUSH, "f2");
    r.timed = true;
    put_rec(b, &r);
}

static void
write_logs(const char *dir)
{
    static const uint8_t zeros[64];
    struct buf b = {.len = 0};
    put_workq_segment(&b, 1);
    write_file(dir, "replay", "one_segment", b.data, b.len);
    size_t one = b.len;
    put_workq_segment(&b, 20);
    write_file(dir, "replay", "two_segments", b.data, b.len);
    write_file(dir, "replay", "torn_tail", b.data, b.len - 9);
    b.data[one + 40] ^= 0xff; /* inside the second segment's first record */
    write_file(dir, "replay", "damaged_last", b.data, b.len);
    put_workq_segment(&b, 40);
    write_file(dir, "replay", "damaged_middle", b.data, b.len);
    b.len = 0;
    put_workq_segment(&b, 1);
    put(&b, zeros, sizeof zeros);
    write_file(dir, "replay", "padded", b.data, b.len);
    put(&b, cmdlog_header, 5);
    write_file(dir, "replay", "torn_header", b.data, b.len);
    b.len = 0;
    put_faktory_segment(&b);
    write_file(dir, "replay", "faktory", b.data, b.len);
    put_workq_segment(&b, 60);
    write_file(dir, "replay", "faktory_and_workq", b.data, b.len);
    write_file(dir, "replay", "header_only", cmdlog_header, CMDLOG_HEADER_LEN);
    write_file(dir, "replay", "zeros", zeros, sizeof zeros);
}

/* v as a varint of exactly 5 bytes (LEB128 allows padding). */
static void
put_uvarint5(uint8_t out[5], uint64_t v)
{
    for (int i = 0; i < 4; i++, v >>= 7)
        out[i] = (uint8_t)(0x80 | (v & 0x7f));
    out[4] = (uint8_t)v;
}

/* len bytes claiming a complete record every 42 bytes, each running to the
 * last 4 bytes, whose CRC none has (as tests/common/cmdlog_ref.c's
 * ref_crafted_tail). */
static void
put_crafted(struct buf *b, size_t len)
{
    uint8_t *t = b->data + b->len;
    put(b, (uint8_t[4096]){0}, len);
    for (size_t j = 0; j + 46 <= len; j += 42) {
        uint64_t size = len - j - CMDLOG_TIME_LEN - 5 - CMDLOG_CRC_LEN;
        cmdlog_time_put(t + j, true, T0);
        put_uvarint5(t + j + CMDLOG_TIME_LEN, size);
        t[j + CMDLOG_TIME_LEN + 5] = CMDLOG_COMPLETE;
        memset(t + j + CMDLOG_TIME_LEN + 6, 0x5a, JOBID_LEN);
        put_uvarint5(t + j + CMDLOG_TIME_LEN + 6 + JOBID_LEN, size - 1 - JOBID_LEN - 5);
    }
    memcpy(t + len - CMDLOG_CRC_LEN, "\xde\xad\xbe\xef", CMDLOG_CRC_LEN);
}

/* A record framed around payload bytes that are no record's, CRC right. */
static void
put_malformed(struct buf *b, size_t len)
{
    uint8_t rec[1024];
    if (len + 64 > sizeof rec)
        abort();
    cmdlog_time_put(rec, true, T0);
    size_t n = CMDLOG_TIME_LEN + cmdlog_uvarint_put(rec + CMDLOG_TIME_LEN, len);
    memset(rec + n, 0, len);
    rec[n] = 99; /* no such code */
    n += len;
    uint32_t crc = cmdlog_crc32c(0, rec, n);
    for (int i = 0; i < 4; i++)
        rec[n + (size_t)i] = (uint8_t)(crc >> (24 - 8 * i));
    put(b, rec, n + CMDLOG_CRC_LEN);
}

static void
write_scan(const char *dir)
{
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/cmdlog_scan", dir);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST) {
        perror(sub);
        exit(1);
    }
    static const char payload[] = "a payload long enough to outrun a small window: "
                                  "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghij"
                                  "klmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123"
                                  "456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn"
                                  "opqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";
    struct cmdlog_rec add = rec_add(7, "q", payload), del = rec_id(CMDLOG_DELETE, 7);
    struct cmdlog_rec push = rec_faktory(CMDLOG_F_PUSH, "f1");
    struct buf b = {.len = 0};
    put_rec(&b, &del);
    put_rec(&b, &add);
    write_file(dir, "cmdlog_scan", "records", b.data, b.len);
    write_file(dir, "cmdlog_scan", "torn", b.data, b.len - 30);
    b.data[3] ^= 0x10; /* the first one's TIME: its CRC fails, the second stands */
    write_file(dir, "cmdlog_scan", "bad_then_record", b.data, b.len);
    b.len = 0;
    put_crafted(&b, 2000);
    write_file(dir, "cmdlog_scan", "crafted", b.data, b.len);
    put_rec(&b, &del);
    write_file(dir, "cmdlog_scan", "crafted_then_record", b.data, b.len);
    b.len = 0;
    put_malformed(&b, 300);
    write_file(dir, "cmdlog_scan", "crc_right_payload_wrong", b.data, b.len);
    put_rec(&b, &add);
    write_file(dir, "cmdlog_scan", "malformed_then_big_record", b.data, b.len);
    b.len = 0;
    put(&b, (uint8_t[700]){0}, 700);
    put_rec(&b, &push);
    write_file(dir, "cmdlog_scan", "zeros_then_faktory", b.data, b.len);
    b.len = 0;
    uint32_t x = 2024;
    for (int i = 0; i < 600; i++) {
        x = x * 1103515245u + 12345u;
        uint8_t c = (uint8_t)(x >> 16);
        put(&b, &c, 1);
    }
    write_file(dir, "cmdlog_scan", "garbage", b.data, b.len);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 64;
    }
    write_records(argv[1]);
    write_logs(argv[1]);
    write_scan(argv[1]);
    return 0;
}
