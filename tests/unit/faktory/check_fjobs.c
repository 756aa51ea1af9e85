/* check_fjobs.c - unit tests for the Faktory front-end's jobs in the core
 * (src/faktory/fjobs.c): queue order and priorities, scheduled jobs, parked
 * FETCHes, reservations running out, the retries and dead sets and their
 * bounds, pause and resume, flush, the memory count, and the records:
 * encoded, decoded and replayed into a fresh core, which must end up the
 * same. */
#include "lib/wq.h"
#include "faktory/fjobs.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "store/cmdlog_codec.h"
#include "engine/core.h"
#include "unit.h"

#define NOW 1700000000000ULL

static struct core *core;
static struct fjobs *fs; /* core's Faktory space */

/* The records made, encoded one after the other. */
static struct {
    uint8_t *buf;
    size_t len, cap;
    size_t count;
} log_;

static void
record(void *arg, const struct cmdlog_rec *r)
{
    size_t n = cmdlog_rec_size(r);
    if (log_.len + n > log_.cap) {
        log_.cap = (log_.len + n) * 2;
        log_.buf = wq_realloc(log_.buf, log_.cap);
    }
    cmdlog_rec_encode(r, log_.buf + log_.len);
    log_.len += n;
    log_.count++;
}

static void
setup(void)
{
    core = core_new(NOW);
    fs = fjobs_new(core);
    core->record = record;
    log_.len = log_.count = 0;
}

static void
teardown(void)
{
    core_free(core);
    fjobs_free(fs);
    wq_free(log_.buf);
    log_.buf = NULL;
    log_.cap = 0;
}

static struct wq_str
s_(const char *s)
{
    return (struct wq_str){s, strlen(s)};
}

/* Push jid to queue with priority and at (0: now); the text names them. */
static enum core_status
push(const char *jid, const char *queue, int priority, int64_t at_ms)
{
    char *text = wq_malloc(128);
    snprintf(text, 128, "{\"jid\":\"%s\",\"queue\":\"%s\"}", jid, queue);
    struct fjob_spec s = {
        .jid = s_(jid),
        .queue = s_(queue),
        .priority = (uint8_t)priority,
        .reserve_s = 60,
        .at_ms = at_ms,
        .text = text,
        .text_len = strlen(text),
    };
    enum core_status st = fjobs_push(fs, &s, core->now_ms);
    wq_free(text);
    return st;
}

/* The jid FETCH gets from the queues (space-separated), without waiting;
 * "" when none. */
static const char *
fetch(const char *queues)
{
    struct wq_str names[8];
    size_t n = 0;
    static char buf[256];
    snprintf(buf, sizeof buf, "%s", queues);
    for (char *p = strtok(buf, " "); p != NULL; p = strtok(NULL, " "))
        names[n++] = s_(p);
    struct job *j = NULL;
    struct waiter *w = NULL;
    if (fjobs_fetch(fs, names, n, 0, core->now_ms, NULL, NULL, &j, &w) != CORE_OK)
        return "";
    static char jid[64];
    snprintf(jid, sizeof jid, "%.*s", (int)fjob_jid_len(j), fjob_jid(j));
    return jid;
}

static void
advance(uint64_t ms)
{
    core_advance(core, core->now_ms + ms);
}

static const struct fjobs_stats *
stats(void)
{
    return &fs->stats;
}

/* How many of f's jobs Faktory sees in state. */
static uint64_t
count_of(const struct fjobs *f, enum fjob_state state)
{
    struct core_space_counts k;
    fjobs_counts(f, &k);
    const uint64_t by[FJOB_STATE_COUNT] = {k.scheduled, k.enqueued, k.working, k.retry, k.dead};
    return by[state];
}

static uint64_t
count(enum fjob_state state)
{
    return count_of(fs, state);
}

START_TEST(test_order)
{
    ck_assert_int_eq(push("low-0001", "a", 1, 0), CORE_OK);
    ck_assert_int_eq(push("mid-0001", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("high-001", "a", 9, 0), CORE_OK);
    ck_assert_int_eq(push("mid-0002", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("other-01", "b", 1, 0), CORE_OK);
    ck_assert_int_eq(count(FJOB_ENQUEUED), 5);
    /* queues in the order given, whatever the priorities */
    ck_assert_str_eq(fetch("b a"), "other-01");
    ck_assert_str_eq(fetch("nosuch a b"), "high-001");
    ck_assert_str_eq(fetch("a"), "mid-0001");
    ck_assert_str_eq(fetch("a"), "mid-0002");
    ck_assert_str_eq(fetch("a"), "low-0001");
    ck_assert_str_eq(fetch("a b"), "");
    ck_assert_int_eq(count(FJOB_WORKING), 5);
    ck_assert_int_eq(push("low-0001", "c", 5, 0), CORE_DUPLICATE);
}
END_TEST

START_TEST(test_memory)
{
    ck_assert_uint_eq(core->bytes, 0);
    ck_assert_int_eq(push("job-0001", "a", 5, 0), CORE_OK);
    uint64_t one = core->bytes;
    ck_assert_uint_ge(one, fjobs_job_bytes(8, 30));
    core->max_bytes = one + one / 2;
    ck_assert_int_eq(push("job-0002", "a", 5, 0), CORE_NOMEM);
    ck_assert_ptr_null(fjobs_find(fs, "job-0002", 8));
    ck_assert_str_eq(fetch("a"), "job-0001");
    ck_assert_int_eq(fjobs_ack(fs, "job-0001", 8), CORE_OK);
    ck_assert_int_eq(fjobs_ack(fs, "job-0001", 8), CORE_NOT_FOUND);
    ck_assert_uint_eq(core->bytes, 0);
    ck_assert_uint_eq(stats()->processed, 1);
    /* the queue went with its last job */
    ck_assert_uint_eq(registry_count(core->space[fs->space].queues.by_name), 0);
}
END_TEST

START_TEST(test_scheduled)
{
    ck_assert_int_eq(push("later-01", "a", 5, (int64_t)NOW + 1500), CORE_OK);
    ck_assert_int_eq(push("past-001", "a", 5, (int64_t)NOW - 1500), CORE_OK);
    ck_assert_int_eq(count(FJOB_SCHEDULED), 1);
    ck_assert_str_eq(fetch("a"), "past-001");
    ck_assert_str_eq(fetch("a"), "");
    advance(1499);
    ck_assert_str_eq(fetch("a"), "");
    advance(1);
    struct job *j = fjobs_find(fs, "later-01", 8);
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_ENQUEUED);
    ck_assert_uint_eq(fjob_enqueued_ms(j), NOW + 1500);
    ck_assert_str_eq(fetch("a"), "later-01");
}
END_TEST

/* What parked FETCHes were told. */
static int done_calls;
static enum waiter_outcome done_how;
static char done_jid[64];

static void
fetch_done(void *owner, enum waiter_outcome how, const struct core *c, struct job *j)
{
    done_calls++;
    done_how = how;
    snprintf(done_jid, sizeof done_jid, "%.*s", j != NULL ? (int)fjob_jid_len(j) : 0,
             j != NULL ? fjob_jid(j) : "");
}

START_TEST(test_parked)
{
    struct wq_str names[] = {s_("a"), s_("b"), s_("a")};
    struct job *j = NULL;
    struct waiter *w = NULL;
    done_calls = 0;
    ck_assert_int_eq(fjobs_fetch(fs, names, 3, 2000, core->now_ms, fetch_done, NULL, &j, &w),
                     CORE_PARKED);
    ck_assert_uint_eq(w->nnodes, 2); /* one node per distinct queue */
    ck_assert_int_eq(push("job-0001", "b", 5, 0), CORE_OK);
    ck_assert_int_eq(done_calls, 1);
    ck_assert_int_eq(done_how, WAITER_GOT);
    ck_assert_str_eq(done_jid, "job-0001");
    ck_assert_int_eq(fjobs_state(fs, fjobs_find(fs, "job-0001", 8)), FJOB_WORKING);
    /* a wait that times out; then one withdrawn */
    ck_assert_int_eq(fjobs_fetch(fs, names, 1, 2000, core->now_ms, fetch_done, NULL, &j, &w),
                     CORE_PARKED);
    advance(1999);
    ck_assert_int_eq(done_calls, 1);
    advance(1);
    ck_assert_int_eq(done_calls, 2);
    ck_assert_int_eq(done_how, WAITER_TIMEOUT);
    ck_assert_int_eq(fjobs_fetch(fs, names, 1, 2000, core->now_ms, fetch_done, NULL, &j, &w),
                     CORE_PARKED);
    fjobs_cancel(fs, w);
    advance(5000);
    ck_assert_int_eq(done_calls, 2);
    /* a paused queue's job waits for the resume */
    ck_assert_int_eq(push("job-0002", "a", 5, 0), CORE_OK);
    fjobs_pause(fs, s_("a"), true);
    ck_assert_int_eq(fjobs_fetch(fs, names, 1, 2000, core->now_ms, fetch_done, NULL, &j, &w),
                     CORE_PARKED);
    ck_assert_int_eq(push("job-0003", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(done_calls, 2);
    fjobs_pause(fs, s_("a"), false);
    ck_assert_int_eq(done_calls, 3);
    ck_assert_str_eq(done_jid, "job-0002");
}
END_TEST

/* An expiry hook that kills the job. */
static int expired_calls;
static void
expired_kill(void *arg, struct fjobs *f, struct job *j)
{
    expired_calls++;
    fjobs_kill(f, j, "{\"killed\":1}", 12);
}

START_TEST(test_reservation)
{
    ck_assert_int_eq(push("job-0001", "a", 5, 0), CORE_OK);
    ck_assert_str_eq(fetch("a"), "job-0001");
    /* without a hook: retried at once, text unchanged */
    advance(59999);
    ck_assert_int_eq(count(FJOB_WORKING), 1);
    advance(1);
    ck_assert_uint_eq(stats()->failures, 1);
    ck_assert_str_eq(fetch("a"), "job-0001");
    expired_calls = 0;
    fjobs_set_expired(fs, expired_kill, NULL);
    advance(60000);
    ck_assert_int_eq(expired_calls, 1);
    struct job *j = fjobs_find(fs, "job-0001", 8);
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_DEAD);
    ck_assert_int_eq(memcmp(j->payload, "{\"killed\":1}", 12), 0);
}
END_TEST

START_TEST(test_sets)
{
    fjobs_set_dead_limits(fs, 10000, 2);
    const char *jids[] = {"job-0001", "job-0002", "job-0003", "job-0004"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(push(jids[i], "a", 5, 0), CORE_OK);
        ck_assert_str_eq(fetch("a"), jids[i]);
    }
    struct job *j1 = fjobs_find(fs, "job-0001", 8);
    fjobs_retry(fs, j1, "{\"r\":1}", 7, core->now_ms + 100);
    ck_assert_int_eq(fjobs_state(fs, j1), FJOB_RETRY);
    ck_assert_uint_eq(j1->payload_len, 7);
    for (int i = 1; i < 4; i++) {
        advance(1);
        fjobs_kill(fs, fjobs_find(fs, jids[i], 8), NULL, 0);
    }
    /* the oldest dead job went */
    ck_assert_ptr_null(fjobs_find(fs, "job-0002", 8));
    ck_assert_int_eq(count(FJOB_DEAD), 2);
    size_t n;
    struct job **dead = fjobs_set_jobs(fs, FSET_DEAD, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(memcmp(fjob_jid(dead[0]), "job-0003", 8), 0);
    ck_assert_int_eq(memcmp(fjob_jid(dead[1]), "job-0004", 8), 0);
    wq_free(dead);
    fjobs_requeue(fs, fjobs_find(fs, "job-0003", 8));
    ck_assert_str_eq(fetch("a"), "job-0003");
    advance(100);
    ck_assert_str_eq(fetch("a"), "job-0001");
    /* the dead set's time */
    advance(9899); /* job-0004 died at NOW + 3, for 10000 ms */
    ck_assert_ptr_nonnull(fjobs_find(fs, "job-0004", 8));
    advance(1);
    ck_assert_ptr_null(fjobs_find(fs, "job-0004", 8));
    fjobs_discard(fs, fjobs_find(fs, "job-0003", 8));
    ck_assert_int_eq(count(FJOB_WORKING), 1);
}
END_TEST

START_TEST(test_clear_and_flush)
{
    ck_assert_int_eq(push("job-0001", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("job-0002", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("job-0003", "b", 5, 0), CORE_OK);
    ck_assert_int_eq(push("job-0004", "b", 5, (int64_t)NOW + 10), CORE_OK);
    fjobs_pause(fs, s_("a"), true);
    fjobs_pause(fs, s_("nosuch"), true); /* only queues that exist */
    ck_assert_ptr_null(fjobs_queue(fs, s_("nosuch")));
    fjobs_queue_clear(fs, s_("a"));
    ck_assert_ptr_null(fjobs_find(fs, "job-0001", 8));
    ck_assert_int_eq(count(FJOB_ENQUEUED), 1);
    fjobs_pause(fs, s_("b"), true);
    fjobs_flush(fs);
    ck_assert_uint_eq(registry_count(core->space[fs->space].jobs), 0);
    ck_assert_uint_eq(registry_count(core->space[fs->space].queues.by_name), 0);
    ck_assert_uint_eq(core->bytes, 0);
}
END_TEST

/* Replay log_ into a fresh core at now_ms; *f gets its Faktory space. */
static struct core *
replayed(uint64_t now_ms, struct fjobs **f)
{
    struct core *c = core_new(now_ms);
    *f = fjobs_new(c);
    size_t at = 0, used;
    struct cmdlog_rec r;
    while (at < log_.len) {
        ck_assert_int_eq(cmdlog_rec_decode(log_.buf + at, log_.len - at, &r, &used), CMDLOG_REC_OK);
        core_replay(c, &r, now_ms);
        at += used;
    }
    core_advance(c, now_ms);
    return c;
}

START_TEST(test_replay)
{
    fjobs_set_dead_limits(fs, 1000000, 100);
    ck_assert_int_eq(push("working1", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("enqueue1", "a", 1, 0), CORE_OK);
    ck_assert_int_eq(push("enqueue2", "a", 9, 0), CORE_OK);
    ck_assert_int_eq(push("sched-01", "b", 5, (int64_t)NOW + 5000), CORE_OK);
    ck_assert_int_eq(push("retry-01", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("dead-001", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("acked-01", "a", 5, 0), CORE_OK);
    ck_assert_int_eq(push("gone-001", "c", 5, 0), CORE_OK);
    ck_assert_str_eq(fetch("a"), "enqueue2");
    /* enqueue2 is fetched, then requeued by way of the retries set */
    fjobs_retry(fs, fjobs_find(fs, "enqueue2", 8), "{\"x\":2}", 7, core->now_ms + 1);
    fjobs_requeue(fs, fjobs_find(fs, "enqueue2", 8));
    ck_assert_str_eq(fetch("a"), "enqueue2");
    ck_assert_str_eq(fetch("a"), "working1");
    ck_assert_str_eq(fetch("a"), "retry-01");
    fjobs_retry(fs, fjobs_find(fs, "retry-01", 8), "{\"retry\":1}", 11, NOW + 7000);
    ck_assert_str_eq(fetch("a"), "dead-001");
    fjobs_kill(fs, fjobs_find(fs, "dead-001", 8), "{\"dead\":1}", 10);
    ck_assert_str_eq(fetch("a"), "acked-01");
    ck_assert_int_eq(fjobs_ack(fs, "acked-01", 8), CORE_OK);
    fjobs_discard(fs, fjobs_find(fs, "gone-001", 8));
    fjobs_retry(fs, fjobs_find(fs, "enqueue2", 8), "{\"x\":3}", 7, core->now_ms);
    advance(0);
    fjobs_pause(fs, s_("a"), true);

    struct fjobs *rf;
    struct core *c = replayed(NOW + 1000, &rf);
    for (int s = 0; s < FJOB_STATE_COUNT; s++)
        ck_assert_uint_eq(count_of(rf, (enum fjob_state)s), count((enum fjob_state)s));
    ck_assert_uint_eq(registry_count(c->space[rf->space].jobs),
                      registry_count(core->space[fs->space].jobs));
    ck_assert_uint_eq(c->bytes, core->bytes);
    struct job *w = fjobs_find(rf, "working1", 8);
    ck_assert_int_eq(fjobs_state(rf, w), FJOB_WORKING);
    ck_assert_uint_eq(core_job_deadline(c, w), NOW + 1000 + 60000); /* a fresh reservation */
    struct job *r = fjobs_find(rf, "retry-01", 8);
    ck_assert_int_eq(fjobs_state(rf, r), FJOB_RETRY);
    ck_assert_uint_eq(fjobs_due(rf, r), NOW + 7000);
    ck_assert_int_eq(memcmp(r->payload, "{\"retry\":1}", 11), 0);
    struct job *d = fjobs_find(rf, "dead-001", 8);
    ck_assert_int_eq(fjobs_state(rf, d), FJOB_DEAD);
    ck_assert_int_eq(memcmp(d->payload, "{\"dead\":1}", 10), 0);
    ck_assert_uint_eq(fjobs_due(rf, d), fjobs_due(fs, fjobs_find(fs, "dead-001", 8)));
    ck_assert_ptr_null(fjobs_find(rf, "acked-01", 8));
    ck_assert_ptr_null(fjobs_find(rf, "gone-001", 8));
    ck_assert(fjobs_queue(rf, s_("a"))->paused);
    /* the queue's order: enqueue2 (priority 9, retried) before enqueue1 */
    struct core *keep = core;
    struct fjobs *keep_fs = fs;
    core = c;
    fs = rf;
    fjobs_pause(fs, s_("a"), false);
    ck_assert_str_eq(fetch("a"), "enqueue2");
    ck_assert_int_eq(memcmp(fjobs_find(fs, "enqueue2", 8)->payload, "{\"x\":3}", 7), 0);
    ck_assert_str_eq(fetch("a"), "enqueue1");
    advance(4000);
    ck_assert_str_eq(fetch("b"), "sched-01");
    core = keep;
    fs = keep_fs;
    core_free(c);
    fjobs_free(rf);
}
END_TEST

/* A job scheduled when pushed enters its queue after the jobs pushed
 * before its time, also when its time passed while the server was down. */
START_TEST(test_replay_scheduled_order)
{
    ck_assert_int_eq(push("sched-01", "a", 5, (int64_t)NOW + 1000), CORE_OK);
    core_advance(core, NOW + 10);
    ck_assert_int_eq(push("plain-01", "a", 5, 0), CORE_OK);
    struct fjobs *rf;
    struct core *c = replayed(NOW + 5000, &rf);
    struct core *keep = core;
    struct fjobs *keep_fs = fs;
    core = c;
    fs = rf;
    ck_assert_str_eq(fetch("a"), "plain-01");
    ck_assert_str_eq(fetch("a"), "sched-01");
    core = keep;
    fs = keep_fs;
    core_free(c);
    fjobs_free(rf);
}
END_TEST

/* Every Faktory code encodes and decodes to the same fields; cleaning
 * keys records by jid. */
START_TEST(test_codec)
{
    struct cmdlog_rec in = {
        .code = CMDLOG_F_PUSH,
        .at_ms = (int64_t)NOW,
        .jid = s_("the-jid-1"),
        .name = s_("queue"),
        .priority = 9,
        .ttr = 1800,
        .payload = s_("{\"jid\":\"the-jid-1\"}"),
        .timed = true,
        .time_ms = (int64_t)NOW + 1234,
    };
    for (uint8_t code = CMDLOG_F_PUSH; code <= CMDLOG_F_RESUME; code++) {
        in.code = code;
        uint8_t buf[256];
        size_t n = cmdlog_rec_size(&in), used;
        ck_assert_uint_lt(n, sizeof buf);
        cmdlog_rec_encode(&in, buf);
        struct cmdlog_rec out;
        ck_assert_int_eq(cmdlog_rec_decode(buf, n, &out, &used), CMDLOG_REC_OK);
        ck_assert_uint_eq(used, n);
        ck_assert_uint_eq(out.code, code);
        uint8_t key[64];
        size_t klen = cmdlog_rec_key(&out, key, sizeof key);
        if (code >= CMDLOG_F_PAUSE) {
            ck_assert_uint_eq(out.name.n, in.name.n);
            ck_assert_uint_eq(klen, 0);
            continue;
        }
        ck_assert_uint_eq(klen, 1 + in.jid.n);
        ck_assert_int_eq(memcmp(key + 1, "the-jid-1", in.jid.n), 0);
        ck_assert_int_eq(memcmp(out.jid.p, in.jid.p, in.jid.n), 0);
        ck_assert_int_eq(cmdlog_rec_ends_job(&out),
                         code == CMDLOG_F_ACK || code == CMDLOG_F_DISCARD);
        if (code == CMDLOG_F_PUSH) {
            ck_assert_int_eq(memcmp(out.name.p, "queue", 5), 0);
            ck_assert_int_eq(out.priority, 9);
            ck_assert_uint_eq(out.ttr, 1800);
        }
        if (code == CMDLOG_F_PUSH || code == CMDLOG_F_RETRY || code == CMDLOG_F_DEAD) {
            ck_assert_uint_eq(out.payload.n, in.payload.n);
            ck_assert_int_eq(out.time_ms, in.time_ms);
        }
    }
    /* codes 10-15 and above 24 are no records */
    for (uint8_t code = 10; code < 16; code++) {
        in.code = CMDLOG_F_ACK;
        uint8_t buf[256];
        size_t n = cmdlog_rec_size(&in), used;
        cmdlog_rec_encode(&in, buf);
        size_t head = CMDLOG_TIME_LEN + 1; /* the size fits one byte */
        buf[head] = code;
        /* fix the CRC so that only the code is wrong */
        uint32_t crc = cmdlog_crc32c(0, buf, n - 4);
        for (int i = 0; i < 4; i++)
            buf[n - 4 + i] = (uint8_t)(crc >> (24 - 8 * i));
        struct cmdlog_rec out;
        ck_assert_int_eq(cmdlog_rec_decode(buf, n, &out, &used), CMDLOG_REC_BAD);
    }
}
END_TEST

static Suite *
fjobs_suite(void)
{
    const struct unit_case cases[] = {
        {"order", test_order},
        {"memory", test_memory},
        {"scheduled", test_scheduled},
        {"parked", test_parked},
        {"reservation", test_reservation},
        {"sets", test_sets},
        {"clear_and_flush", test_clear_and_flush},
        {"replay", test_replay},
        {"replay_scheduled_order", test_replay_scheduled_order},
        {"codec", test_codec},
    };
    return unit_suite_fixture("fjobs", cases, WQ_ARRAY_LEN(cases), setup, teardown);
}

int
main(void)
{
    return unit_run(fjobs_suite(), NULL);
}
