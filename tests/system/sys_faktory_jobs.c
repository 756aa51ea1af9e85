/* sys_faktory_jobs.c - system tests of the Faktory job commands: the real
 * workq-server over TCP on its Faktory listener, byte-exact against
 * doc/faktory.md: PUSH (the kept text, what the server adds, every
 * refusal, `at` to the millisecond, priorities), PUSHB, FETCH (the order
 * of queues, the 2 s wait, paused queues, quiet workers), ACK, FAIL (the
 * failure hash, Faktory's backoff, the retries and dead sets and the dead
 * set's bound), MUTATE, QUEUE, INFO, FLUSH, Faktory's jobs apart from
 * Workq's, and every state across a SIGKILL and a restart on the same
 * command log.
 *
 * Timing: only lower bounds are checked (a job due at T comes at T or
 * later, never "by" some time), and every wait is scaled by WQ_TEST_SLOW.
 * FETCH's 2 s waits are few: the ones a test needs run side by side on
 * several connections.  Reservation expiry is not tested here:
 * reserve_for is at least 60 s.
 */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rng.h"
#include "systest.h"

#define FAR     "2099-01-01T00:00:00Z" /* an `at` that never comes during a test */
#define RO      "-ERR Read-only: command log write failed"
#define QNAME   "queue names must match \\A[a-zA-Z0-9._-]+\\z (at most 255 bytes)"
#define SKEW_MS 1000 /* between the server's time stamps and our clock */

/* A job with the three fields PUSH requires, and extra members (a
 * string literal starting with a comma, or empty). */
#define J(jid, extra) "{\"jid\":\"" jid "\",\"jobtype\":\"t\",\"args\":[]" extra "}"

/* ------------------------------------------------------------------------ */
/* The server */

static struct systest_proc srv;
static int fport; /* its Faktory listener */

/* Start a server with a Workq and a Faktory listener and these extra
 * arguments (NULL terminated); wait until both listen. */
static void
start(const char *arg, ...)
{
    const char *args[48] = {"-listen", "127.0.0.1:0", "-faktory-listen", "127.0.0.1:0"};
    size_t n = 4;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a != NULL; a = va_arg(ap, const char *)) {
        ck_assert_uint_lt(n, 47);
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    const char *key = "faktory listening on 127.0.0.1:";
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    for (;;) {
        const char *l = strstr(srv.out.p, key);
        if (l != NULL && strchr(l, '\n') != NULL) {
            fport = atoi(l + strlen(key));
            break;
        }
        ck_assert_msg(systest_now_ms() < deadline, "no Faktory listener (stdout: %s, stderr: %s)",
                      srv.out.p, srv.err.p);
        systest_proc_pump(&srv, 50);
    }
    ck_assert_int_gt(fport, 0);
}

/* SIGTERM, exit status 0 (under valgrind: no error either). */
static void
stop(void)
{
    systest_proc_stop(&srv);
    systest_untrack_pid(srv.s.pid);
    systest_proc_free(&srv);
}

/* ------------------------------------------------------------------------ */
/* Connections and commands */

static int
hello(const char *json)
{
    int fd = systest_connect_port(fport);
    ck_assert_str_eq(systest_read_line(fd), "+HI {\"v\":2}");
    systest_roundtrip(fd, f("HELLO %s\r\n", json), OK);
    return fd;
}

/* An identified Faktory client, without a worker. */
static int
client(void)
{
    return hello("{\"v\":2}");
}

/* An identified Faktory client of worker wid. */
static int
worker(const char *wid)
{
    return hello(f("{\"v\":2,\"wid\":\"%s\",\"hostname\":\"h\",\"pid\":1}", wid));
}

/* A connection to the Workq listener. */
static int
workq(void)
{
    return systest_connect_port(srv.s.port);
}

static void
send_line(int fd, const char *line)
{
    systest_sends(fd, f("%s\r\n", line));
}

/* Send line, expect reply (both without their CR LF). */
static void
rt(int fd, const char *line, const char *reply)
{
    send_line(fd, line);
    systest_expect(fd, f("%s\r\n", reply));
}

/* Send line, expect a one-line reply starting with prefix. */
static void
rt_prefix(int fd, const char *line, const char *prefix)
{
    send_line(fd, line);
    const char *l = systest_read_line(fd);
    ck_assert_msg(strncmp(l, prefix, strlen(prefix)) == 0, "%.200s: got \"%s\", want \"%s...\"",
                  line, l, prefix);
}

#define BULK_MAX 70000

/* One reply that must be a bulk string: its bytes (one of a ring of 8
 * buffers), or NULL for exactly "$-1\r\n". */
static const char *
read_bulk(int fd)
{
    static char ring[8][BULK_MAX];
    static unsigned next;
    const char *head = systest_read_line(fd);
    if (strcmp(head, "$-1") == 0)
        return NULL;
    char *end = NULL;
    unsigned long n = head[0] == '$' ? strtoul(head + 1, &end, 10) : 0;
    ck_assert_msg(head[0] == '$' && end != head + 1 && *end == '\0' && n + 2 < BULK_MAX,
                  "not a bulk string: \"%s\"", head);
    char *b = ring[next++ % 8];
    systest_read_n(fd, b, n + 2);
    ck_assert_msg(b[n] == '\r' && b[n + 1] == '\n', "a bulk string of %lu bytes without CR LF", n);
    b[n] = '\0';
    ck_assert_uint_eq(strlen(b), n);
    return b;
}

static void
push(int fd, const char *job)
{
    rt(fd, f("PUSH %s", job), "+OK");
}

/* FETCH queues (NULL: none named): the job, or NULL after the wait. */
static const char *
fetch(int fd, const char *queues)
{
    send_line(fd, queues != NULL ? f("FETCH %s", queues) : "FETCH");
    return read_bulk(fd);
}

/* FETCH until a job comes (for a job due later). */
static const char *
fetch_until(int fd, const char *queues)
{
    for (int i = 0; i < 5 * systest_slow(); i++) {
        const char *j = fetch(fd, queues);
        if (j != NULL)
            return j;
    }
    ck_abort_msg("FETCH %s: no job came", queues);
    return NULL;
}

/* The reply to a FETCH sent before, which is parked until the test gives
 * it a job (a push, a RESUME): the job.  On a slow machine its 2 s may run
 * out first (or the job come before it is parked): then FETCH again. */
static const char *
parked_gets(int fd, const char *queues)
{
    const char *j = read_bulk(fd);
    if (j == NULL) {
        ck_assert_msg(!systest_exact_timing(), "FETCH %s: $-1, want a job", queues);
        j = fetch(fd, queues);
    }
    return j;
}

/* Give a FETCH just sent the time to park (a FETCH not parked yet gets
 * the job all the same). */
static void
let_it_park(void)
{
    systest_sleep_ms(200);
}

/* The JSON of a job text (which may hold \u0000). */
static json_t *
parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &e);
    ck_assert_msg(v != NULL, "not JSON (%s): %s", e.text, text);
    return v;
}

static const char *
jid_of(const char *text)
{
    ck_assert_msg(text != NULL, "no job ($-1)");
    json_t *j = parse(text);
    const char *s = json_string_value(json_object_get(j, "jid"));
    ck_assert_msg(s != NULL, "no jid in %s", text);
    const char *out = f("%s", s);
    json_decref(j);
    return out;
}

/* FETCH queues and expect the job jid at once; its text. */
static const char *
fetch_jid(int fd, const char *queues, const char *jid)
{
    const char *text = fetch(fd, queues);
    ck_assert_msg(text != NULL, "FETCH %s: nothing, want %s", queues ? queues : "", jid);
    ck_assert_str_eq(jid_of(text), jid);
    return text;
}

static void
ack(int fd, const char *jid)
{
    rt(fd, f("ACK {\"jid\":\"%s\"}", jid), "+OK");
}

static void
fail_job(int fd, const char *jid)
{
    rt(fd, f("FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"M\"}", jid), "+OK");
}

static void
mutate(int fd, const char *json)
{
    rt(fd, f("MUTATE %s", json), "+OK");
}

/* ------------------------------------------------------------------------ */
/* Times */

/* A time the server writes, "YYYY-MM-DDTHH:MM:SS.mmmZ", as Unix ms. */
static int64_t
time_of(const char *s)
{
    int y, mo, d, h, mi, sec, ms;
    char z;
    ck_assert_msg(
        strlen(s) == 24 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
            s[16] == ':' && s[19] == '.' &&
            sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &sec, &ms, &z) == 8 &&
            z == 'Z',
        "not a server time (YYYY-MM-DDTHH:MM:SS.mmmZ): \"%s\"", s);
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* A server time stamp t taken between our clock's from and to. */
static void
check_between(int64_t t, int64_t from, int64_t to, const char *what)
{
    ck_assert_msg(t >= from - SKEW_MS && t <= to + SKEW_MS,
                  "%s %lld is not between %lld and %lld (our clock)", what, (long long)t,
                  (long long)from, (long long)to);
}

/* ms as an RFC 3339 time with milliseconds and an offset of minutes. */
static const char *
offset_time(int64_t ms, int minutes)
{
    const char *z = systest_time_ms(ms + (int64_t)minutes * 60000);
    int a = abs(minutes);
    return f("%.23s%c%02d:%02d", z, minutes < 0 ? '-' : '+', a / 60, a % 60);
}

/* ------------------------------------------------------------------------ */
/* Job texts */

/* A FETCH reply is the kept text of the job with ,"enqueued_at":"<time>"
 * as its last key: the kept text (with its closing brace); *enq, if not
 * NULL, gets the time. */
static const char *
kept_of(const char *got, int64_t *enq)
{
    static const char mark[] = ",\"enqueued_at\":\"";
    ck_assert_ptr_nonnull(got);
    size_t n = strlen(got), tail = strlen(mark) + 24 + 2;
    ck_assert_msg(n > tail && strncmp(got + n - tail, mark, strlen(mark)) == 0 &&
                      strcmp(got + n - 2, "\"}") == 0,
                  "enqueued_at is not the last key: %s", got);
    ck_assert_msg(strstr(got, "\"enqueued_at\"") == got + n - tail + 1, "enqueued_at twice: %s",
                  got);
    int64_t t = time_of(f("%.24s", got + n - 26));
    if (enq != NULL)
        *enq = t;
    return f("%.*s}", (int)(n - tail), got);
}

/* The kept text of a failed job is the text it had, then
 * ,"failure":<hash>: the hash, checking what comes before it. */
static const char *
failure_of(const char *kept, const char *before)
{
    size_t b = strlen(before) - 1; /* without its closing brace */
    static const char mark[] = ",\"failure\":";
    ck_assert_msg(strncmp(kept, before, b) == 0 && strncmp(kept + b, mark, strlen(mark)) == 0,
                  "want the text then the failure hash:\n%s\n got:\n%s", before, kept);
    const char *h = kept + b + strlen(mark);
    return f("%.*s", (int)strlen(h) - 1, h);
}

/* kept is the pushed text, or its bytes up to its closing brace and then
 * members the server added. */
static void
expect_pushed_first(const char *kept, const char *pushed)
{
    size_t n = strlen(pushed) - 1;
    ck_assert_msg(strcmp(kept, pushed) == 0 || (strncmp(kept, pushed, n) == 0 && kept[n] == ','),
                  "want the pushed bytes first:\n%s\n got:\n%s", pushed, kept);
}

/* The string member key of the JSON object text: a copy in one of a ring
 * of 64 buffers of its own (for times: short strings). */
static const char *
str_member(const char *text, const char *key)
{
    static char ring[64][64];
    static unsigned next;
    json_t *v = parse(text);
    const char *s = json_string_value(json_object_get(v, key));
    ck_assert_msg(s != NULL, "no string %s in %s", key, text);
    ck_assert_uint_lt(strlen(s), sizeof ring[0]);
    char *out = ring[next++ % 64];
    strcpy(out, s);
    json_decref(v);
    return out;
}

/* Move the job jid of set (scheduled, retries, dead) to its queue and
 * fetch it from there (it is then working): its kept text. */
static const char *
view(int fd, const char *set, const char *jid, const char *queue)
{
    mutate(fd,
           f("{\"cmd\":\"requeue\",\"target\":\"%s\",\"filter\":{\"jids\":[\"%s\"]}}", set, jid));
    return kept_of(fetch_jid(fd, queue, jid), NULL);
}

/* n bytes of c (a new string each call, from f's ring). */
static const char *
rep(size_t n, char c)
{
    ck_assert_uint_lt(n, 8000);
    char b[8000];
    memset(b, c, n);
    b[n] = '\0';
    return f("%s", b);
}

/* ------------------------------------------------------------------------ */
/* INFO */

static json_t *
info(int fd)
{
    send_line(fd, "INFO");
    const char *t = read_bulk(fd);
    ck_assert_msg(t != NULL, "INFO: $-1");
    json_t *v = parse(t);
    ck_assert_msg(json_is_object(v), "INFO is not an object: %s", t);
    return v;
}

/* The member at path ("a/b/c") of v, or NULL. */
static json_t *
at_path(json_t *v, const char *path)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = strtok_r(buf, "/", &save); k != NULL && v != NULL;
         k = strtok_r(NULL, "/", &save))
        v = json_object_get(v, k);
    return v;
}

static long long
num(json_t *root, const char *path)
{
    json_t *v = at_path(root, path);
    ck_assert_msg(json_is_integer(v), "INFO %s is not an integer", path);
    return (long long)json_integer_value(v);
}

/* INFO's total_enqueued and sets, then total_processed and total_failures
 * (-1: not checked). */
static void
expect_counts_pf(int fd, long long enqueued, long long scheduled, long long retries, long long dead,
                 long long working, long long processed, long long failures)
{
    json_t *i = info(fd);
    long long got[7] = {num(i, "faktory/total_enqueued"), num(i, "faktory/sets/scheduled"),
                        num(i, "faktory/sets/retries"),   num(i, "faktory/sets/dead"),
                        num(i, "faktory/sets/working"),   num(i, "faktory/total_processed"),
                        num(i, "faktory/total_failures")};
    long long want[7] = {enqueued, scheduled, retries, dead, working, processed, failures};
    for (int k = 5; k < 7; k++)
        if (want[k] < 0)
            got[k] = want[k];
    ck_assert_msg(memcmp(got, want, sizeof got) == 0,
                  "INFO enqueued/scheduled/retries/dead/working/processed/failures: "
                  "%lld/%lld/%lld/%lld/%lld/%lld/%lld, want %lld/%lld/%lld/%lld/%lld/%lld/%lld",
                  got[0], got[1], got[2], got[3], got[4], got[5], got[6], want[0], want[1], want[2],
                  want[3], want[4], want[5], want[6]);
    json_decref(i);
}

static void
expect_counts(int fd, long long enqueued, long long scheduled, long long retries, long long dead,
              long long working)
{
    expect_counts_pf(fd, enqueued, scheduled, retries, dead, working, -1, -1);
}

/* INFO's count of queue name; -1 when it is not listed. */
static long long
queue_len(int fd, const char *name)
{
    json_t *i = info(fd);
    json_t *v = json_object_get(at_path(i, "faktory/queues"), name);
    long long n = v != NULL ? num(i, f("faktory/queues/%s", name)) : -1;
    json_decref(i);
    return n;
}

/* INFO's "faktory" object: every count there is. */
static json_t *
state(int fd)
{
    json_t *i = info(fd);
    json_t *s = json_incref(json_object_get(i, "faktory"));
    json_decref(i);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Nothing changed since want (state()) after what. */
static void
expect_state(int fd, json_t *want, const char *what)
{
    json_t *got = state(fd);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
        ck_abort_msg("%.300s changed the jobs: %s, was %s", what, g, w);
    }
    json_decref(got);
}

/* Wait until INFO counts n connections (a close is seen asynchronously). */
static void
wait_connections(int fd, long long n)
{
    for (int tries = 0;; tries++) {
        json_t *i = info(fd);
        long long c = num(i, "server/connections");
        json_decref(i);
        if (c == n)
            return;
        ck_assert_msg(tries < 250 * systest_slow(), "connections stay %lld, want %lld", c, n);
        systest_sleep_ms(20);
    }
}

/* ------------------------------------------------------------------------ */
/* PUSH */

/* The client's bytes come back as they were sent, with enqueued_at as the
 * last key; what is missing is added; a job carrying the server's fields
 * is written anew without them. */
START_TEST(test_push_kept)
{
    start(NULL);
    int fd = client();
    /* every field the server would add is there: the bytes come back as
     * sent, spaces, escapes and spellings of numbers included */
    const char *full = "{\"jid\": \"kept-0001\", \"jobtype\": \"Some::Job\", "
                       "\"args\": [0.1, 1e3, -0.0, 1.50E-7, \"\\u00e9\xc3\xa9\\n\", {\"a\": []}], "
                       "\"queue\": \"q1\", \"retry\": 3, \"created_at\": \"2001-02-03T04:05:06Z\", "
                       "\"priority\": 7, \"reserve_for\": 600, \"backtrace\": 2, "
                       "\"custom\": {\"trace\": \"abc\", \"f\": 0.30000000000000004}, "
                       "\"unknown\": [null, true, false]}";
    int64_t t0 = systest_now_ms();
    push(fd, full);
    const char *got = fetch(fd, "q1");
    int64_t t1 = systest_now_ms(), enq;
    ck_assert_str_eq(kept_of(got, &enq), full);
    check_between(enq, t0, t1, "enqueued_at");

    /* queue, retry and created_at added after the client's bytes */
    const char *mini = J("kept-0002", "");
    t0 = systest_now_ms();
    push(fd, mini);
    got = fetch(fd, NULL);
    t1 = systest_now_ms();
    const char *kept = kept_of(got, &enq);
    check_between(enq, t0, t1, "enqueued_at");
    ck_assert_msg(strncmp(kept, mini, strlen(mini) - 1) == 0 && kept[strlen(mini) - 1] == ',',
                  "not the client's bytes first: %s", kept);
    json_t *k = parse(kept);
    ck_assert_uint_eq(json_object_size(k), 6);
    ck_assert_str_eq(json_string_value(json_object_get(k, "queue")), "default");
    ck_assert(json_is_integer(json_object_get(k, "retry")));
    ck_assert_int_eq(json_integer_value(json_object_get(k, "retry")), 25);
    const char *created = json_string_value(json_object_get(k, "created_at"));
    ck_assert_ptr_nonnull(created);
    check_between(time_of(created), t0, t1, "created_at");
    json_decref(k);

    /* enqueued_at and failure are the server's: dropped, and the job is
     * written anew */
    const char *rewr = "{\"jid\":\"kept-0003\",\"jobtype\":\"t\",\"args\":[0.1,2],"
                       "\"enqueued_at\":\"1999-01-01T00:00:00.000Z\",\"queue\":\"q3\","
                       "\"failure\":{\"retry_count\":3},\"retry\":1,\"created_at\":\"x\","
                       "\"custom\":{\"k\":\"v\"}}";
    t0 = systest_now_ms();
    push(fd, rewr);
    got = fetch(fd, "q3");
    t1 = systest_now_ms();
    kept = kept_of(got, &enq);
    check_between(enq, t0, t1, "enqueued_at");
    ck_assert_msg(strstr(kept, "failure") == NULL && strstr(kept, "enqueued_at") == NULL, "%s",
                  kept);
    json_t *want = parse(rewr);
    json_object_del(want, "enqueued_at");
    json_object_del(want, "failure");
    k = parse(kept);
    ck_assert_msg(json_equal(k, want), "kept %s", kept);
    json_decref(k);
    json_decref(want);
    close(fd);
    stop();
}
END_TEST

/* Every refusal of the doc's table but the limits: its exact reply, and
 * nothing changes. */
START_TEST(test_push_errors)
{
    static const struct {
        const char *job, *reply;
    } cases[] = {
        {"[1]", "a job must be a JSON object"},
        {"[]", "a job must be a JSON object"},
        {"{\"jobtype\":\"t\",\"args\":[]}", "jobs must have a reasonable jid parameter"},
        {J("abcdefg", ""), "jobs must have a reasonable jid parameter"},
        {J("", ""), "jobs must have a reasonable jid parameter"},
        {"{\"jid\":12345678,\"jobtype\":\"t\",\"args\":[]}",
         "jobs must have a reasonable jid parameter"},
        {J("abcdefgh\\u0000", ""), "jid must not contain NUL"},
        {J("abc\\u0000defgh", ""), "jid must not contain NUL"},
        {"{\"jid\":\"no-jobtype\",\"args\":[]}", "jobs must have a jobtype parameter"},
        {"{\"jid\":\"no-jobtype\",\"jobtype\":\"\",\"args\":[]}",
         "jobs must have a jobtype parameter"},
        {"{\"jid\":\"no-jobtype\",\"jobtype\":5,\"args\":[]}",
         "jobs must have a jobtype parameter"},
        {"{\"jid\":\"no-args-1\",\"jobtype\":\"t\"}", "jobs must have an args parameter"},
        {"{\"jid\":\"no-args-1\",\"jobtype\":\"t\",\"args\":{}}",
         "jobs must have an args parameter"},
        {"{\"jid\":\"no-args-1\",\"jobtype\":\"t\",\"args\":\"a\"}",
         "jobs must have an args parameter"},
        {J("bad-queue", ",\"queue\":5"), "queue must be a string"},
        {J("bad-queue", ",\"queue\":[\"a\"]"), "queue must be a string"},
        {J("bad-queue", ",\"queue\":\"a b\""), QNAME},
        {J("bad-queue", ",\"queue\":\"a/b\""), QNAME},
        {J("bad-queue", ",\"queue\":\"q\\u00e9\""), QNAME},
        {J("bad-queue", ",\"queue\":\"*\""), QNAME},
        {J("bad-prio", ",\"priority\":0"), "priority must be an integer from 1 to 9"},
        {J("bad-prio", ",\"priority\":10"), "priority must be an integer from 1 to 9"},
        {J("bad-prio", ",\"priority\":-1"), "priority must be an integer from 1 to 9"},
        {J("bad-prio", ",\"priority\":\"5\""), "priority must be an integer from 1 to 9"},
        {J("bad-prio", ",\"priority\":5.5"), "priority must be an integer from 1 to 9"},
        {J("bad-reserve", ",\"reserve_for\":1.5"), "reserve_for must be a whole number of seconds"},
        {J("bad-reserve", ",\"reserve_for\":\"60\""),
         "reserve_for must be a whole number of seconds"},
        {J("bad-reserve", ",\"reserve_for\":-1"), "reserve_for must be a whole number of seconds"},
        {J("bad-reserve", ",\"reserve_for\":86401"),
         "jobs cannot be reserved for more than one day"},
        {J("bad-reserve", ",\"reserve_for\":100000000"),
         "jobs cannot be reserved for more than one day"},
        {J("bad-retry", ",\"retry\":\"3\""), "retry must be an integer"},
        {J("bad-retry", ",\"retry\":2.5"), "retry must be an integer"},
        {J("bad-retry", ",\"retry\":true"), "retry must be an integer"},
        {J("bad-at-1", ",\"at\":5"), "at must be an RFC 3339 time"},
        {J("bad-at-1", ",\"at\":true"), "at must be an RFC 3339 time"},
        {J("bad-at-1", ",\"at\":{}"), "at must be an RFC 3339 time"},
        {J("bad-at-1", ",\"at\":\"tomorrow\""), "invalid timestamp for 'at': \"tomorrow\""},
        {J("bad-at-1", ",\"at\":\"2030-02-30T00:00:00Z\""),
         "invalid timestamp for 'at': \"2030-02-30T00:00:00Z\""},
        {J("bad-at-1", ",\"at\":\"2030-01-01T00:00:00\""),
         "invalid timestamp for 'at': \"2030-01-01T00:00:00\""},
        {J("bad-at-1", ",\"at\":\"2030-01-01T25:00:00Z\""),
         "invalid timestamp for 'at': \"2030-01-01T25:00:00Z\""},
        {J("dupl-0001", ",\"queue\":\"other\""), "job dupl-0001 already exists"},
    };
    static const char *const not_json[] = {
        "{",
        "nope",
        J("trailing", "") " x",
        /* duplicate keys are refused */
        "{\"jid\":\"dupk-0001\",\"jid\":\"dupk-0002\",\"jobtype\":\"t\",\"args\":[]}",
    };
    start(NULL);
    int fd = client();
    const char *first = J("dupl-0001", ",\"queue\":\"errs\",\"custom\":1");
    push(fd, first);
    json_t *before = state(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rt(fd, f("PUSH %s", cases[i].job), f("-ERR %s", cases[i].reply));
        expect_state(fd, before, cases[i].job);
    }
    for (size_t i = 0; i < sizeof not_json / sizeof not_json[0]; i++) {
        rt_prefix(fd, f("PUSH %s", not_json[i]), "-ERR invalid JSON: ");
        expect_state(fd, before, not_json[i]);
    }
    /* the lengths: jid and queue at most 255 bytes */
    rt(fd, f("PUSH {\"jid\":\"%s\",\"jobtype\":\"t\",\"args\":[]}", rep(256, 'j')),
       "-ERR jid too long (at most 255 bytes)");
    rt(fd, f("PUSH " J("long-queue", ",\"queue\":\"%s\""), rep(256, 'q')), "-ERR " QNAME);
    expect_state(fd, before, "long jid and queue");
    /* a command without its argument, and commands that are not there */
    static const char *const verbs[] = {"PUSH", "PUSHB", "ACK", "FAIL", "MUTATE", "QUEUE", "BEAT"};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        rt(fd, verbs[i], f("-ERR invalid %s", verbs[i]));
        rt(fd, f("%s ", verbs[i]), f("-ERR invalid %s", verbs[i]));
    }
    rt(fd, "BATCH new {}", "-ERR unknown command BATCH");
    rt(fd, "TRACK get x", "-ERR unknown command TRACK");
    expect_state(fd, before, "commands without their argument");
    json_decref(before);
    /* the first dupl-0001 is still as it was pushed */
    expect_pushed_first(kept_of(fetch_jid(fd, "errs", "dupl-0001"), NULL), first);
    close(fd);
    stop();
}
END_TEST

/* The bounds of the rules are taken. */
START_TEST(test_push_bounds)
{
    start(NULL);
    int fd = client();
    const char *jid8 = "12345678";
    char jid255[256], q255[256];
    SET(jid255, rep(255, 'J'));
    SET(q255, rep(255, 'Q'));
    push(fd, f(J("%s", ""), jid8));
    push(fd, f(J("%s", ",\"queue\":\"b\""), jid255));
    push(fd, f(J("bound-q1", ",\"queue\":\"%s\""), q255));
    push(fd, J("bound-q2", ",\"queue\":\"a.b_c-D9\""));
    push(fd, J("bound-p1", ",\"queue\":\"b\",\"priority\":1"));
    push(fd, J("bound-p9", ",\"queue\":\"b\",\"priority\":9"));
    push(fd, J("bound-r0", ",\"queue\":\"b\",\"reserve_for\":0"));
    push(fd, J("bound-r59", ",\"queue\":\"b\",\"reserve_for\":59"));
    push(fd, J("bound-r1d", ",\"queue\":\"b\",\"reserve_for\":86400"));
    push(fd, J("bound-t0", ",\"queue\":\"b\",\"retry\":0"));
    push(fd, J("bound-t-1", ",\"queue\":\"b\",\"retry\":-1"));
    push(fd, J("bound-t1k", ",\"queue\":\"b\",\"retry\":1000"));
    /* an empty or past `at` is now */
    push(fd, J("bound-at-empty", ",\"queue\":\"b\",\"at\":\"\""));
    push(fd, J("bound-at-past", ",\"queue\":\"b\",\"at\":\"2001-01-01T00:00:00Z\""));
    push(fd, J("bound-at-pastoff", ",\"queue\":\"b\",\"at\":\"2001-01-01T00:00:00.5-05:00\""));
    push(fd, J("bound-at-frac9", ",\"queue\":\"b\",\"at\":\"2001-01-01T00:00:00.123456789Z\""));
    expect_counts(fd, 16, 0, 0, 0, 0);
    fetch_jid(fd, NULL, jid8);
    fetch_jid(fd, q255, "bound-q1");
    fetch_jid(fd, "a.b_c-D9", "bound-q2");
    /* priority first, then arrival */
    static const char *const b_order[] = {
        "bound-p9",         NULL /* jid255 */, "bound-r0",  "bound-r59",      "bound-r1d",
        "bound-t0",         "bound-t-1",       "bound-t1k", "bound-at-empty", "bound-at-past",
        "bound-at-pastoff", "bound-at-frac9",  "bound-p1"};
    for (size_t i = 0; i < sizeof b_order / sizeof b_order[0]; i++)
        fetch_jid(fd, "b", b_order[i] != NULL ? b_order[i] : jid255);
    expect_counts(fd, 0, 0, 0, 0, 16);
    close(fd);
    stop();
}
END_TEST

/* An empty queue name is "default", as Faktory's server takes it. */
START_TEST(test_push_empty_queue)
{
    start(NULL);
    int fd = client();
    rt(fd, "PUSH " J("empty-queue", ",\"queue\":\"\""), "+OK");
    fetch_jid(fd, "default", "empty-queue");
    close(fd);
    stop();
}
END_TEST

/* job too large (the kept text over -max-payload) and Out of memory
 * (-max-memory): refused, nothing changes. */
START_TEST(test_push_limits)
{
    start("-max-payload", "1000", "-max-memory", "30000", NULL);
    int fd = client();
    /* with queue, retry and created_at given, the kept text is the text */
#define BIG                                                                                        \
    "{\"jid\":\"big-000%d\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"big\",\"retry\":1,"          \
    "\"created_at\":\"x\",\"pad\":\"%s\"}"
#define BIG_NO_CREATED                                                                             \
    "{\"jid\":\"big-0003\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"big\",\"retry\":1,"           \
    "\"pad\":\"%s\"}"
    size_t base_len = strlen(f(BIG, 1, ""));
    json_t *before = state(fd);
    rt(fd, f("PUSH %s", f(BIG, 1, rep(1001 - base_len, 'x'))),
       "-ERR job too large (at most 1000 bytes)");
    expect_state(fd, before, "a job too large");
    char fits[1001];
    SET(fits, f(BIG, 2, rep(1000 - base_len, 'x')));
    ck_assert_uint_eq(strlen(fits), 1000);
    push(fd, fits);
    /* 990 bytes sent, but created_at added: over */
    const char *grows = f(BIG_NO_CREATED, rep(990 - strlen(f(BIG_NO_CREATED, "")), 'y'));
    ck_assert_uint_eq(strlen(grows), 990);
    json_decref(before);
    before = state(fd);
    rt(fd, f("PUSH %s", grows), "-ERR job too large (at most 1000 bytes)");
    expect_state(fd, before, "a job grown too large");
    json_decref(before);
    ck_assert_str_eq(kept_of(fetch_jid(fd, "big", "big-0002"), NULL), fits);
    ack(fd, "big-0002");

    /* fill the memory */
    int pushed = 0;
    for (;; pushed++) {
        ck_assert_int_lt(pushed, 5000);
        send_line(fd, f("PUSH " J("mem-%05d", ",\"queue\":\"mem\""), pushed));
        const char *l = systest_read_line(fd);
        if (strcmp(l, "-ERR Out of memory") == 0)
            break;
        ck_assert_msg(strcmp(l, "+OK") == 0, "PUSH mem-%05d: %s", pushed, l);
    }
    ck_assert_int_gt(pushed, 10);
    expect_counts(fd, pushed, 0, 0, 0, 0);
    before = state(fd);
    rt(fd, "PUSH " J("mem-other", ",\"queue\":\"mem\""), "-ERR Out of memory");
    expect_state(fd, before, "a push out of memory");
    json_decref(before);
    /* a job done makes room */
    fetch_jid(fd, "mem", "mem-00000");
    ack(fd, "mem-00000");
    push(fd, J("mem-other", ",\"queue\":\"mem\""));
    expect_counts(fd, pushed, 0, 0, 0, 0);
    close(fd);
    stop();
#undef BIG
#undef BIG_NO_CREATED
}
END_TEST

/* While the command log cannot be written, PUSH is refused and INFO
 * answers.  The file-size limit is set on the server's pid, so not under
 * a wrapper (see sys_persist.c). */
START_TEST(test_push_readonly)
{
    if (systest_wrapped())
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    start("-cmdlog-path", dir, "-cmdlog-sync", "always", NULL);
    int fd = client();
    push(fd, J("ro-00001", ""));
    struct rlimit old, lim;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, NULL, &old), 0);
    lim.rlim_cur = 1;
    lim.rlim_max = old.rlim_max;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &lim, NULL), 0);
    /* the push whose record fails first may have its reply held until the
     * record is written: then go on on another connection */
    int held = -1;
    send_line(fd, "PUSH " J("ro-00002", ""));
    const char *l = systest_read_line_within(fd, 1000 * systest_slow());
    if (l == NULL) {
        held = fd;
        fd = client();
    } else {
        ck_assert_str_eq(l, RO);
    }
    json_t *before = state(fd);
    rt(fd, "PUSH " J("ro-00003", ""), RO);
    rt(fd, "PUSHB [" J("ro-00004", "") "]", RO);
    rt(fd, "MUTATE {\"cmd\":\"clear\",\"target\":\"dead\"}", RO);
    expect_state(fd, before, "a read-only PUSH");
    json_decref(before);
    /* room again: the server leaves read-only mode */
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &old, NULL), 0);
    for (int tries = 0;; tries++) {
        send_line(fd, "PUSH " J("ro-00005", ""));
        l = systest_read_line(fd);
        if (strcmp(l, "+OK") == 0)
            break;
        ck_assert_str_eq(l, RO);
        ck_assert_int_lt(tries, 100 * systest_slow());
        systest_sleep_ms(50);
    }
    if (held >= 0) {
        systest_expect(held, OK);
        close(held);
    }
    expect_counts(fd, held >= 0 ? 3 : 2, 0, 0, 0, 0);
    close(fd);
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* `at` now + 300 ms, to the millisecond, with Z and with a +01:00 offset:
 * the job is scheduled until then, and enters its queue at or after it. */
START_TEST(test_push_at)
{
    start(NULL);
    int fd = client();
    int64_t at1 = systest_now_ms() + 300;
    char j1[256], j2[256];
    SET(j1, f(J("at-zulu-1", ",\"queue\":\"atz\",\"at\":\"%s\""), systest_time_ms(at1)));
    push(fd, j1);
    int64_t at2 = systest_now_ms() + 300;
    SET(j2, f(J("at-offset", ",\"queue\":\"ato\",\"at\":\"%s\""), offset_time(at2, 60)));
    push(fd, j2);
    json_t *i = info(fd);
    if (systest_now_ms() < at1) { /* INFO was answered before either was due */
        ck_assert_int_eq(num(i, "faktory/sets/scheduled"), 2);
        ck_assert_int_eq(num(i, "faktory/total_enqueued"), 0);
    }
    json_decref(i);
    const struct {
        const char *queue, *pushed;
        int64_t at;
    } jobs[] = {{"atz", j1, at1}, {"ato", j2, at2}};
    for (int k = 0; k < 2; k++) {
        const char *got = fetch_until(fd, jobs[k].queue);
        int64_t now = systest_now_ms(), enq;
        expect_pushed_first(kept_of(got, &enq), jobs[k].pushed);
        ck_assert_msg(enq >= jobs[k].at, "%s: enqueued_at %s before at %s", jobs[k].queue,
                      systest_time_ms(enq), systest_time_ms(jobs[k].at));
        /* (our clock and the server's may round 1 ms apart) */
        ck_assert_msg(now >= jobs[k].at - 2, "%s: fetched at %lld, due at %lld", jobs[k].queue,
                      (long long)now, (long long)jobs[k].at);
    }
    expect_counts(fd, 0, 0, 0, 0, 2);
    close(fd);
    stop();
}
END_TEST

/* `at` is an RFC 3339 time, whose fraction of a second is optional, with
 * a Z or a +hh:mm offset. */
START_TEST(test_push_at_offset_without_fraction)
{
    start(NULL);
    int fd = client();
    push(fd, J("at-nofrac-1", ",\"queue\":\"atn\",\"at\":\"2099-01-01T01:00:00+01:00\""));
    push(fd, J("at-nofrac-2", ",\"queue\":\"atn\",\"at\":\"2001-01-01T01:00:00+01:00\""));
    expect_counts(fd, 1, 1, 0, 0, 0);
    fetch_jid(fd, "atn", "at-nofrac-2");
    close(fd);
    stop();
}
END_TEST

/* Within a queue: 9 before 5 before 1, first in first out among equals. */
START_TEST(test_push_priority)
{
    static const struct {
        const char *jid, *prio;
    } pushed[] = {{"prio-1-a", ",\"priority\":1"}, {"prio-5-a", ",\"priority\":5"},
                  {"prio-9-a", ",\"priority\":9"}, {"prio-5-b", ""},
                  {"prio-1-b", ",\"priority\":1"}, {"prio-9-b", ",\"priority\":9"},
                  {"prio-5-c", ",\"priority\":5"}, {"prio-3-a", ",\"priority\":3"}};
    static const char *const order[] = {"prio-9-a", "prio-9-b", "prio-5-a", "prio-5-b",
                                        "prio-5-c", "prio-3-a", "prio-1-a", "prio-1-b"};
    start(NULL);
    int fd = client();
    for (size_t i = 0; i < sizeof pushed / sizeof pushed[0]; i++)
        push(fd, f(J("%s", ",\"queue\":\"prio\"%s"), pushed[i].jid, pushed[i].prio));
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        fetch_jid(fd, "prio", order[i]);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* PUSHB */

/* Every job pushed on its own: {} when all are taken, else the refused
 * jids and their reasons; an argument that is not an array pushes
 * nothing. */
START_TEST(test_pushb)
{
    start(NULL);
    int fd = client();
    const char *g1 = J("pb-good-1", ",\"queue\":\"pb\", \"x\": [1, 2.50]");
    const char *g2 = J("pb-good-2", ",\"queue\":\"pb\"");
    /* spaces around the elements: each is kept as its own bytes */
    send_line(fd, f("PUSHB [ %s , %s ]", g1, g2));
    systest_expect(fd, "$2\r\n{}\r\n");
    expect_pushed_first(kept_of(fetch_jid(fd, "pb", "pb-good-1"), NULL), g1);
    expect_pushed_first(kept_of(fetch_jid(fd, "pb", "pb-good-2"), NULL), g2);

    /* a mix */
    const char *g3 = J("pb-good-3", ",\"queue\":\"pb\"");
    const char *g4 = J("pb-good-4", ",\"queue\":\"pb\"");
    send_line(fd, f("PUSHB [%s,{\"jid\":\"pb-bad-01\",\"args\":[]},%s,"
                    "{\"jid\":\"short\",\"jobtype\":\"t\",\"args\":[]},%s,%s,%s]",
                    g3, g1, g4, J("pb-bad-02", ",\"priority\":0"), g4));
    const char *reply = read_bulk(fd);
    ck_assert_ptr_nonnull(reply);
    json_t *got = parse(reply);
    json_t *want = parse("{\"pb-bad-01\":\"jobs must have a jobtype parameter\","
                         "\"pb-good-1\":\"job pb-good-1 already exists\","
                         "\"short\":\"jobs must have a reasonable jid parameter\","
                         "\"pb-bad-02\":\"priority must be an integer from 1 to 9\","
                         "\"pb-good-4\":\"job pb-good-4 already exists\"}");
    ck_assert_msg(json_equal(got, want), "PUSHB refused %s", reply);
    json_decref(got);
    json_decref(want);
    expect_counts(fd, 2, 0, 0, 0, 2);
    fetch_jid(fd, "pb", "pb-good-3");
    fetch_jid(fd, "pb", "pb-good-4");

    /* not an array, or not JSON: nothing pushed */
    json_t *before = state(fd);
    rt(fd, f("PUSHB %s", J("pb-good-5", ",\"queue\":\"pb\"")),
       "-ERR PUSHB takes a JSON array of jobs");
    rt_prefix(fd, "PUSHB 5", "-ERR invalid JSON: ");
    rt_prefix(fd, "PUSHB [", "-ERR invalid JSON: ");
    rt_prefix(fd, f("PUSHB [%s,", J("pb-good-5", ",\"queue\":\"pb\"")), "-ERR invalid JSON: ");
    expect_state(fd, before, "PUSHB of no array");
    json_decref(before);
    /* and an empty array: nothing refused */
    send_line(fd, "PUSHB []");
    systest_expect(fd, "$2\r\n{}\r\n");
    expect_counts(fd, 0, 0, 0, 0, 4);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* FETCH */

/* The first listed queue that has a job wins; default when none is
 * listed; a paused queue is skipped; at most 64 queues of at most 255
 * bytes. */
START_TEST(test_fetch_order)
{
    start(NULL);
    int fd = client();
    push(fd, J("order-b-1", ",\"queue\":\"b\""));
    push(fd, J("order-c-1", ",\"queue\":\"c\""));
    push(fd, J("order-a-1", ",\"queue\":\"a\""));
    push(fd, J("order-a-2", ",\"queue\":\"a\""));
    push(fd, J("order-d-1", ""));
    fetch_jid(fd, "c b a", "order-c-1");
    fetch_jid(fd, "a b c", "order-a-1");
    fetch_jid(fd, "nosuch b a", "order-b-1");
    fetch_jid(fd, NULL, "order-d-1");
    /* paused: skipped */
    push(fd, J("order-b-2", ",\"queue\":\"b\""));
    rt(fd, "QUEUE PAUSE a", "+OK");
    fetch_jid(fd, "a b", "order-b-2");
    rt(fd, "QUEUE RESUME a", "+OK");
    fetch_jid(fd, "b a", "order-a-2");

    /* 64 queues: the last one has the job */
    struct sb names = {0};
    for (int i = 0; i < 63; i++)
        sb_add(&names, f("n%02d ", i));
    sb_add(&names, "last");
    push(fd, J("order-last", ",\"queue\":\"last\""));
    fetch_jid(fd, names.p, "order-last");
    /* 65: refused */
    sb_add(&names, " n99");
    json_t *before = state(fd);
    rt(fd, f("FETCH %s", names.p), "-ERR FETCH takes at most 64 queues");
    free(names.p);
    rt(fd, "FETCH a  b", "-ERR FETCH: empty queue name");
    rt(fd, f("FETCH a %s", rep(256, 'q')), "-ERR FETCH: queue name too long");
    expect_state(fd, before, "FETCH errors");
    json_decref(before);
    /* 255 bytes is a name */
    char q255[256];
    SET(q255, rep(255, 'q'));
    push(fd, f(J("order-255", ",\"queue\":\"%s\""), q255));
    fetch_jid(fd, f("a %s", q255), "order-255");
    /* a FETCH parked by a connection that closes is withdrawn: the next
     * job of its queue waits for another FETCH */
    int gone = client();
    send_line(gone, "FETCH order-gone");
    let_it_park();
    close(gone);
    wait_connections(fd, 1);
    push(fd, J("order-gone", ",\"queue\":\"order-gone\""));
    expect_counts(fd, 1, 0, 0, 0, 8);
    fetch_jid(fd, "order-gone", "order-gone");
    close(fd);
    stop();
}
END_TEST

/* The 2 s waits, side by side: nothing ($-1 after 2 s), a quiet worker
 * and a terminating one (nothing although a job is there), a paused queue
 * (the same); a FETCH parked on two empty queues gets a job pushed on
 * another connection to the second; one parked on a paused queue gets its
 * job on RESUME. */
START_TEST(test_fetch_waits)
{
    start(NULL);
    int ctl = client(), wq = workq();
    int plain = client(), quiet = worker("quiet-wid-1"), term = worker("term-wid-1");
    int paused = client(), later = client();
    push(ctl, J("wait-qq-1", ",\"queue\":\"qq\""));
    push(ctl, J("wait-pp-1", ",\"queue\":\"pp\""));
    rt(ctl, "QUEUE PAUSE pp", "+OK");
    systest_roundtrip(wq, "worker quiet quiet-wid-1\r\n", OK);
    systest_roundtrip(wq, "worker terminate term-wid-1\r\n", OK);
    int64_t t0 = systest_now_ms();
    send_line(plain, "FETCH empty-1");
    send_line(quiet, "FETCH qq");
    send_line(term, "FETCH");
    send_line(paused, "FETCH pp");
    send_line(later, "FETCH later-1 later-2");
    let_it_park();
    push(ctl, J("wait-lt-1", ",\"queue\":\"later-2\""));
    push(ctl, J("wait-df-1", ""));
    ck_assert_str_eq(jid_of(parked_gets(later, "later-1 later-2")), "wait-lt-1");
    const int waiting[] = {plain, quiet, term, paused};
    for (int i = 0; i < 4; i++) {
        systest_expect(waiting[i], "$-1\r\n");
        int64_t waited = systest_now_ms() - t0;
        ck_assert_msg(waited >= 1990, "$-1 after %lld ms", (long long)waited);
    }
    expect_counts(ctl, 3, 0, 0, 0, 1);
    ck_assert_int_eq(queue_len(ctl, "qq"), 1);
    ck_assert_int_eq(queue_len(ctl, "pp"), 1);
    ck_assert_int_eq(queue_len(ctl, "default"), 1);

    send_line(paused, "FETCH pp");
    let_it_park();
    rt(ctl, "QUEUE RESUME pp", "+OK");
    ck_assert_str_eq(jid_of(parked_gets(paused, "pp")), "wait-pp-1");
    expect_counts(ctl, 2, 0, 0, 0, 2);
    const int all[] = {ctl, wq, plain, quiet, term, paused, later};
    for (int i = 0; i < 7; i++)
        close(all[i]);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* ACK */

START_TEST(test_ack)
{
    start(NULL);
    int c1 = client(), c2 = client();
    push(c1, J("ack-0001", ""));
    fetch_jid(c1, NULL, "ack-0001");
    ack(c1, "ack-0001");
    expect_counts_pf(c1, 0, 0, 0, 0, 0, 1, 0);
    /* gone: the next FETCH gets the next job */
    push(c1, J("ack-0002", ""));
    fetch_jid(c1, NULL, "ack-0002");
    /* unknown: +OK, nothing done */
    ack(c1, "ack-nosuch");
    ack(c1, "ack-0001");
    expect_counts_pf(c1, 0, 0, 0, 0, 1, 1, 0);
    /* on another connection than the FETCH */
    ack(c2, "ack-0002");
    expect_counts_pf(c1, 0, 0, 0, 0, 0, 2, 0);
    /* a job that is not working: +OK, and it stays */
    push(c1, J("ack-0003", ""));
    ack(c1, "ack-0003");
    expect_counts_pf(c1, 1, 0, 0, 0, 0, 2, 0);
    /* fetched by a connection that then closes: still working */
    int c3 = client();
    fetch_jid(c3, NULL, "ack-0003");
    close(c3);
    wait_connections(c1, 2);
    expect_counts_pf(c1, 0, 0, 0, 0, 1, 2, 0);
    push(c1, J("ack-0004", ""));
    fetch_jid(c1, NULL, "ack-0004");
    ack(c2, "ack-0003");
    expect_counts_pf(c1, 0, 0, 0, 0, 1, 3, 0);
    /* not an object with a string jid */
    json_t *before = state(c1);
    rt(c1, "ACK {}", "-ERR invalid ACK {}");
    rt(c1, "ACK {\"jid\":5}", "-ERR invalid ACK {\"jid\":5}");
    rt(c1, "ACK [\"ack-0004\"]", "-ERR invalid ACK [\"ack-0004\"]");
    rt(c1, "ACK ack-0004", "-ERR invalid ACK ack-0004");
    expect_state(c1, before, "ACK errors");
    json_decref(before);
    close(c1);
    close(c2);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* FAIL */

/* The failure hash: first failure, later ones (failed_at kept, counts
 * moving, message, errtype and backtrace replaced), white space trimmed,
 * `unknown` for empty, the backtrace cut to the job's `backtrace`. */
START_TEST(test_fail_hash)
{
    start(NULL);
    int fd = client();
    const char *j1 = "{\"jid\":\"fail-0001\",\"jobtype\":\"t\",\"args\":[1],\"queue\":\"fh\","
                     "\"retry\":5,\"created_at\":\"x\",\"backtrace\":2}";
    push(fd, j1);
    fetch_jid(fd, "fh", "fail-0001");
    int64_t t0 = systest_now_ms();
    rt(fd,
       "FAIL {\"jid\":\"fail-0001\",\"errtype\":\" \\tRuntimeError\\n\","
       "\"message\":\"\\r\\n boom \\t\",\"backtrace\":[\"l1\",\"l2\",\"l3\"]}",
       "+OK");
    int64_t t1 = systest_now_ms();
    expect_counts_pf(fd, 0, 0, 1, 0, 0, 1, 1);
    const char *hash = failure_of(view(fd, "retries", "fail-0001", "fh"), j1);
    char failed_at[32];
    SET(failed_at, str_member(hash, "failed_at"));
    const char *next_at = str_member(hash, "next_at");
    int64_t fa = time_of(failed_at), na = time_of(next_at);
    check_between(fa, t0, t1, "failed_at");
    /* 15 + 0^4 + rand(0..29) * 1 seconds */
    ck_assert_msg(na - fa >= 15000 && na - fa <= 44000, "next_at %s, failed_at %s", next_at,
                  failed_at);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"boom\",\"errtype\":"
                             "\"RuntimeError\",\"backtrace\":[\"l1\",\"l2\"],\"retry_count\":0,"
                             "\"remaining\":5,\"next_at\":\"%s\"}",
                             failed_at, next_at));

    /* the second: empty message and errtype, no backtrace */
    t0 = systest_now_ms();
    rt(fd, "FAIL {\"jid\":\"fail-0001\",\"errtype\":\"\",\"message\":\" \\n \"}", "+OK");
    t1 = systest_now_ms();
    hash = failure_of(view(fd, "retries", "fail-0001", "fh"), j1);
    next_at = str_member(hash, "next_at");
    na = time_of(next_at);
    /* 15 + 1^4 + rand(0..29) * 2 seconds */
    ck_assert_msg(na >= t0 + 16000 - SKEW_MS && na <= t1 + 74000 + SKEW_MS, "next_at %s", next_at);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"unknown\",\"errtype\":"
                             "\"unknown\",\"retry_count\":1,\"remaining\":4,\"next_at\":\"%s\"}",
                             failed_at, next_at));
    /* the third: none at all, a backtrace again */
    rt(fd, "FAIL {\"jid\":\"fail-0001\",\"backtrace\":[\"a\",\"b\",\"c\",\"d\"]}", "+OK");
    hash = failure_of(view(fd, "retries", "fail-0001", "fh"), j1);
    next_at = str_member(hash, "next_at");
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"unknown\",\"errtype\":"
                             "\"unknown\",\"backtrace\":[\"a\",\"b\"],\"retry_count\":2,"
                             "\"remaining\":3,\"next_at\":\"%s\"}",
                             failed_at, next_at));

    /* cut to 1000 and 100 bytes, on a character boundary; at most 50
     * lines of backtrace */
    const char *j2 = "{\"jid\":\"fail-0002\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"fh\","
                     "\"retry\":25,\"created_at\":\"x\",\"backtrace\":100}";
    push(fd, j2);
    fetch_jid(fd, "fh", "fail-0002");
    struct sb bt = {0}, bt50 = {0};
    for (int i = 0; i < 60; i++) {
        sb_add(&bt, f("%s\"b%02d\"", i > 0 ? "," : "", i));
        if (i < 50)
            sb_add(&bt50, f("%s\"b%02d\"", i > 0 ? "," : "", i));
    }
    rt(fd,
       f("FAIL {\"jid\":\"fail-0002\",\"errtype\":\"%s\",\"message\":\"%s\",\"backtrace\":[%s]}",
         rep(150, 'e'), rep(1005, 'm'), bt.p),
       "+OK");
    hash = failure_of(view(fd, "retries", "fail-0002", "fh"), j2);
    SET(failed_at, str_member(hash, "failed_at"));
    next_at = str_member(hash, "next_at");
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"%s\",\"errtype\":\"%s\","
                             "\"backtrace\":[%s],\"retry_count\":0,\"remaining\":25,"
                             "\"next_at\":\"%s\"}",
                             failed_at, rep(1000, 'm'), rep(100, 'e'), bt50.p, next_at));
    free(bt.p);
    free(bt50.p);
    /* 999 + a 3-byte character; 99 + a 2-byte one */
    rt(fd,
       f("FAIL {\"jid\":\"fail-0002\",\"errtype\":\"%s\xc3\xa9\",\"message\":\"%s\xe2\x82\xac\"}",
         rep(99, 'e'), rep(999, 'a')),
       "+OK");
    hash = failure_of(view(fd, "retries", "fail-0002", "fh"), j2);
    next_at = str_member(hash, "next_at");
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"%s\",\"errtype\":\"%s\","
                             "\"retry_count\":1,\"remaining\":24,\"next_at\":\"%s\"}",
                             failed_at, rep(999, 'a'), rep(99, 'e'), next_at));

    /* a job without `backtrace` keeps none */
    const char *j3 = "{\"jid\":\"fail-0003\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"fh\","
                     "\"retry\":2,\"created_at\":\"x\"}";
    push(fd, j3);
    fetch_jid(fd, "fh", "fail-0003");
    rt(fd, "FAIL {\"jid\":\"fail-0003\",\"errtype\":\"E\",\"message\":\"M\",\"backtrace\":[\"x\"]}",
       "+OK");
    hash = failure_of(view(fd, "retries", "fail-0003", "fh"), j3);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":0,\"remaining\":2,\"next_at\":\"%s\"}",
                             str_member(hash, "failed_at"), str_member(hash, "next_at")));
    expect_counts_pf(fd, 0, 0, 0, 0, 3, 6, 6);
    close(fd);
    stop();
}
END_TEST

/* Faktory's backoff, 100 times sooner (-faktory-backoff-unit 10): the job
 * comes back into its queue at its next_at, 150 to 440 ms after the first
 * failure; then the second; then, out of retries, the dead set. */
START_TEST(test_fail_backoff)
{
    start("-faktory-backoff-unit", "10", NULL);
    int fd = client();
    const char *j1 = J("back-0001", ",\"queue\":\"bq\"");
    push(fd, j1);
    fetch_jid(fd, "bq", "back-0001");
    int64_t t0 = systest_now_ms();
    fail_job(fd, "back-0001");
    const char *got = fetch_until(fd, "bq");
    int64_t t1 = systest_now_ms(), enq;
    ck_assert_str_eq(jid_of(got), "back-0001");
    ck_assert_msg(t1 >= t0 + 150 - 2, "back after %lld ms", (long long)(t1 - t0));
    const char *kept = kept_of(got, &enq);
    expect_pushed_first(kept, j1);
    ck_assert_ptr_nonnull(strstr(kept, ",\"failure\":"));
    char before_failure[512], failed_at[32];
    SET(before_failure, f("%.*s}", (int)(strstr(kept, ",\"failure\":") - kept), kept));
    const char *hash = failure_of(kept, before_failure);
    SET(failed_at, str_member(hash, "failed_at"));
    const char *next_at = str_member(hash, "next_at");
    int64_t fa = time_of(failed_at), na = time_of(next_at);
    ck_assert_msg(na - fa >= 150 && na - fa <= 440, "next_at %s, failed_at %s", next_at, failed_at);
    ck_assert_msg(enq >= na, "enqueued_at %s before next_at %s", systest_time_ms(enq), next_at);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":0,\"remaining\":25,\"next_at\":\"%s\"}",
                             failed_at, next_at));
    /* the second failure */
    int64_t t2 = systest_now_ms();
    fail_job(fd, "back-0001");
    got = fetch_until(fd, "bq");
    kept = kept_of(got, &enq);
    hash = failure_of(kept, before_failure);
    const char *next2 = str_member(hash, "next_at");
    na = time_of(next2);
    ck_assert_msg(na >= t2 + 160 - 2 && enq >= na, "next_at %s, enqueued_at %s", next2,
                  systest_time_ms(enq));
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":1,\"remaining\":24,\"next_at\":\"%s\"}",
                             failed_at, next2));
    ack(fd, "back-0001");

    /* retry 1: failed twice, dead */
    const char *j2 = "{\"jid\":\"back-0002\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"bq\","
                     "\"retry\":1,\"created_at\":\"x\"}";
    push(fd, j2);
    fetch_jid(fd, "bq", "back-0002");
    fail_job(fd, "back-0002");
    ck_assert_str_eq(jid_of(fetch_until(fd, "bq")), "back-0002");
    fail_job(fd, "back-0002");
    expect_counts_pf(fd, 0, 0, 0, 1, 0, 5, 4);
    hash = failure_of(view(fd, "dead", "back-0002", "bq"), j2);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":1,\"remaining\":0}",
                             str_member(hash, "failed_at")));
    close(fd);
    stop();
}
END_TEST

/* Fail the retry jid of queue n times more: requeue it, fetch it, fail
 * it, n times, sent 100 at a time. */
static void
fail_again(int fd, const char *jid, const char *queue, int n)
{
    char cycle[512], batch[100 * 512];
    SET(cycle, f("MUTATE {\"cmd\":\"requeue\",\"target\":\"retries\",\"filter\":"
                 "{\"jids\":[\"%s\"]}}\r\nFETCH %s\r\n"
                 "FAIL {\"jid\":\"%s\",\"errtype\":\"E\",\"message\":\"M\"}\r\n",
                 jid, queue, jid));
    for (int done = 0; done < n;) {
        int k = n - done < 100 ? n - done : 100;
        batch[0] = '\0';
        for (int i = 0; i < k; i++)
            strcat(batch, cycle);
        systest_sends(fd, batch);
        for (int i = 0; i < k; i++) {
            systest_expect(fd, "+OK\r\n");
            ck_assert_str_eq(jid_of(read_bulk(fd)), jid);
            systest_expect(fd, "+OK\r\n");
        }
        done += k;
    }
}

/* A job whose retry is near 2^62 fails as often as it is fetched, and
 * its backoff of count^4 seconds and more passes year 9999 at count 709,
 * 2^63 ms at count 9,794 and 2^64 at count 11,586: it saturates at the
 * last time RFC 3339 writes, and the job stays in the retries set, where
 * it wrapped to year 0000 or to a time already past.  (Natively up to
 * count 12,000; under a wrapper only to 709.) */
START_TEST(test_fail_backoff_saturates)
{
    start(NULL);
    int fd = client();
    const char *job =
        J("huge-retry", ",\"queue\":\"hr\",\"retry\":4611686018427387904,\"created_at\":\"x\"");
    push(fd, job);
    fetch_jid(fd, "hr", "huge-retry");
    fail_job(fd, "huge-retry");
    fail_again(fd, "huge-retry", "hr", 708);
    int64_t t0 = systest_now_ms();
    /* count 708: 708^4 s from now, still before year 10000 */
    const char *hash = failure_of(view(fd, "retries", "huge-retry", "hr"), job);
    char failed_at[32];
    SET(failed_at, str_member(hash, "failed_at"));
    const char *next_at = str_member(hash, "next_at");
    int64_t na = time_of(next_at), max = time_of("9999-12-31T23:59:59.999Z");
    ck_assert_msg(na >= t0 - SKEW_MS + 708ll * 708 * 708 * 708 * 1000 && na < max, "next_at %s",
                  next_at);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":708,\"remaining\":4611686018427387196,"
                             "\"next_at\":\"%s\"}",
                             failed_at, next_at));
    /* count 709: past it */
    fail_job(fd, "huge-retry");
    expect_counts(fd, 0, 0, 1, 0, 0);
    ck_assert_str_eq(failure_of(view(fd, "retries", "huge-retry", "hr"), job),
                     f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                       "\"retry_count\":709,\"remaining\":4611686018427387195,"
                       "\"next_at\":\"9999-12-31T23:59:59.999Z\"}",
                       failed_at));
    fail_job(fd, "huge-retry");
    if (!systest_wrapped()) {
        /* counts 9,794 to 11,585 wrapped to year 0000, 11,586 on anywhere */
        fail_again(fd, "huge-retry", "hr", 12000 - 710);
        expect_counts(fd, 0, 0, 1, 0, 0);
        ck_assert_str_eq(failure_of(view(fd, "retries", "huge-retry", "hr"), job),
                         f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                           "\"retry_count\":12000,\"remaining\":4611686018427375904,"
                           "\"next_at\":\"9999-12-31T23:59:59.999Z\"}",
                           failed_at));
    }
    close(fd);
    stop();
}
END_TEST

/* A queue is ordered by priority, then arrival, first in first out among
 * equals: a retried job that enters its queue again after another job of
 * the same priority comes after it. */
START_TEST(test_fail_retried_job_queues_last)
{
    start("-faktory-backoff-unit", "10", NULL);
    int fd = client();
    push(fd, J("fifo-0001", ",\"queue\":\"fifo\""));
    fetch_jid(fd, "fifo", "fifo-0001");
    push(fd, J("fifo-0002", ",\"queue\":\"fifo\""));
    fail_job(fd, "fifo-0001"); /* back in 150 ms or more: after fifo-0002 */
    for (int tries = 0;; tries++) {
        json_t *i = info(fd);
        long long back = num(i, "faktory/total_enqueued");
        json_decref(i);
        if (back == 2)
            break;
        ck_assert_int_lt(tries, 250 * systest_slow());
        systest_sleep_ms(20);
    }
    fetch_jid(fd, "fifo", "fifo-0002");
    fetch_jid(fd, "fifo", "fifo-0001");
    close(fd);
    stop();
}
END_TEST

/* retry 0: dropped; retry -1: straight to the dead set; remaining does not
 * go below 0. */
START_TEST(test_fail_policies)
{
    start(NULL);
    int fd = client();
    push(fd, J("pol-drop", ",\"queue\":\"pol\",\"retry\":0"));
    fetch_jid(fd, "pol", "pol-drop");
    fail_job(fd, "pol-drop");
    expect_counts_pf(fd, 0, 0, 0, 0, 0, 1, 1);
    push(fd, J("pol-drop", ",\"queue\":\"pol\",\"retry\":0")); /* its jid is free */
    fetch_jid(fd, "pol", "pol-drop");
    ack(fd, "pol-drop");

    const char *jd = "{\"jid\":\"pol-dead\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"pol\","
                     "\"retry\":-1,\"created_at\":\"x\"}";
    push(fd, jd);
    fetch_jid(fd, "pol", "pol-dead");
    fail_job(fd, "pol-dead");
    expect_counts_pf(fd, 0, 0, 0, 1, 0, 3, 2);
    const char *hash = failure_of(view(fd, "dead", "pol-dead", "pol"), jd);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":0,\"remaining\":-1}",
                             str_member(hash, "failed_at")));
    ack(fd, "pol-dead");

    /* retry 1: retries, then dead (remaining 0), then dead again
     * (remaining still 0) */
    const char *j1 = "{\"jid\":\"pol-once\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"pol\","
                     "\"retry\":1,\"created_at\":\"x\"}";
    push(fd, j1);
    fetch_jid(fd, "pol", "pol-once");
    fail_job(fd, "pol-once");
    expect_counts(fd, 0, 0, 1, 0, 0);
    hash = failure_of(view(fd, "retries", "pol-once", "pol"), j1);
    char failed_at[32];
    SET(failed_at, str_member(hash, "failed_at"));
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":0,\"remaining\":1,\"next_at\":\"%s\"}",
                             failed_at, str_member(hash, "next_at")));
    fail_job(fd, "pol-once");
    expect_counts(fd, 0, 0, 0, 1, 0);
    hash = failure_of(view(fd, "dead", "pol-once", "pol"), j1);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":1,\"remaining\":0}",
                             failed_at));
    fail_job(fd, "pol-once");
    expect_counts_pf(fd, 0, 0, 0, 1, 0, 7, 5);
    hash = failure_of(view(fd, "dead", "pol-once", "pol"), j1);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"M\",\"errtype\":\"E\","
                             "\"retry_count\":2,\"remaining\":0}",
                             failed_at));
    close(fd);
    stop();
}
END_TEST

START_TEST(test_fail_errors)
{
    start(NULL);
    int fd = client();
    push(fd, J("ferr-enq", ""));
    push(fd, J("ferr-ret", ",\"queue\":\"r\""));
    fetch_jid(fd, "r", "ferr-ret");
    fail_job(fd, "ferr-ret");
    push(fd, J("ferr-sch", ",\"at\":\"" FAR "\""));
    json_t *before = state(fd);
    rt(fd, "FAIL {\"jid\":\"ferr-nosuch\"}", "-ERR Job not found ferr-nosuch");
    rt(fd, "FAIL {\"jid\":\"ferr-enq\",\"message\":\"x\"}", "-ERR Job not found ferr-enq");
    rt(fd, "FAIL {\"jid\":\"ferr-ret\"}", "-ERR Job not found ferr-ret");
    rt(fd, "FAIL {\"jid\":\"ferr-sch\"}", "-ERR Job not found ferr-sch");
    rt(fd, "FAIL {}", "-ERR missing JID");
    rt(fd, "FAIL {\"jid\":\"\"}", "-ERR missing JID");
    rt(fd, "FAIL {\"jid\":5,\"message\":\"x\"}", "-ERR missing JID");
    rt(fd, "FAIL [1]", "-ERR invalid FAIL [1]");
    rt(fd, "FAIL nope", "-ERR invalid FAIL nope");
    rt(fd, "FAIL {\"jid\":", "-ERR invalid FAIL {\"jid\":");
    expect_state(fd, before, "FAIL errors");
    json_decref(before);
    close(fd);
    stop();
}
END_TEST

/* -max-memory counts what a FAIL adds (a message, an errtype and 50
 * backtrace lines of 1,000 bytes: about 52 KB to the job's text): once
 * the jobs fill the limit, such a FAIL is refused, the job stays working,
 * and its ACK still works. */
START_TEST(test_fail_max_memory)
{
    start("-max-memory", "2M", "-max-line", "200000", NULL);
    int fd = client();
    push(fd, J("fmem-0000", ",\"backtrace\":50"));
    fetch_jid(fd, "default", "fmem-0000");
    static char pad[4001];
    memset(pad, 'p', sizeof pad - 1);
    int pushed = 1;
    for (; pushed < 2000; pushed++) {
        send_line(fd, f("PUSH {\"jid\":\"fmem-%04d\",\"jobtype\":\"t\",\"args\":[\"%s\"],"
                        "\"queue\":\"fill\"}",
                        pushed, pad));
        const char *l = systest_read_line(fd);
        if (strcmp(l, "-ERR Out of memory") == 0)
            break;
        ck_assert_str_eq(l, "+OK");
    }
    ck_assert_int_lt(pushed, 2000);
    struct sb fail = {0};
    sb_add(&fail,
           "FAIL {\"jid\":\"fmem-0000\",\"errtype\":\"E\",\"message\":\"M\",\"backtrace\":[");
    static char line[1001];
    memset(line, 'b', sizeof line - 1);
    for (int i = 0; i < 50; i++)
        sb_add(&fail, f("%s\"%s\"", i == 0 ? "" : ",", line));
    sb_add(&fail, "]}\r\n");
    json_t *before = state(fd);
    systest_sends(fd, fail.p);
    systest_expect(fd, "-ERR Out of memory\r\n");
    expect_state(fd, before, "a FAIL over -max-memory");
    json_decref(before);
    free(fail.p);
    expect_counts(fd, pushed - 1, 0, 0, 0, 1);
    rt(fd, "ACK {\"jid\":\"fmem-0000\"}", "+OK");
    expect_counts(fd, pushed - 1, 0, 0, 0, 0);
    close(fd);
    stop();
}
END_TEST

/* -faktory-dead-max 2: the 2 newest dead jobs stay. */
START_TEST(test_dead_max)
{
    start("-faktory-dead-max", "2", NULL);
    int fd = client();
    const char *jids[] = {"dmax-0001", "dmax-0002", "dmax-0003"};
    for (int i = 0; i < 3; i++)
        push(fd, f(J("%s", ",\"queue\":\"dm\",\"retry\":-1"), jids[i]));
    for (int i = 0; i < 3; i++)
        fetch_jid(fd, "dm", jids[i]);
    for (int i = 0; i < 3; i++) {
        fail_job(fd, jids[i]);
        systest_sleep_ms(3); /* each dies in a millisecond of its own */
    }
    expect_counts(fd, 0, 0, 0, 2, 0);
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"dead\"}");
    fetch_jid(fd, "dm", "dmax-0002");
    fetch_jid(fd, "dm", "dmax-0003");
    expect_counts(fd, 0, 0, 0, 0, 2);
    close(fd);
    stop();
}
END_TEST

/* -faktory-dead-ttl: a dead job goes once it has been dead that long. */
START_TEST(test_dead_ttl)
{
    start("-faktory-dead-ttl", "300ms", NULL);
    int fd = client();
    push(fd, J("dttl-0001", ",\"retry\":-1"));
    fetch_jid(fd, NULL, "dttl-0001");
    int64_t t0 = systest_now_ms();
    fail_job(fd, "dttl-0001");
    json_t *i = info(fd);
    if (systest_now_ms() < t0 + 300) /* answered before it was due */
        ck_assert_int_eq(num(i, "faktory/sets/dead"), 1);
    json_decref(i);
    for (int tries = 0;; tries++) {
        i = info(fd);
        long long dead = num(i, "faktory/sets/dead");
        json_decref(i);
        if (dead == 0)
            break;
        ck_assert_int_lt(tries, 250 * systest_slow());
        systest_sleep_ms(20);
    }
    int64_t waited = systest_now_ms() - t0;
    ck_assert_msg(waited >= 300 - 2, "gone after %lld ms", (long long)waited);
    expect_counts(fd, 0, 0, 0, 0, 0);
    push(fd, J("dttl-0001", "")); /* its jid is free */
    close(fd);
    stop();
}
END_TEST

/* At most -faktory-dead-max jobs stay, the oldest death going first, even
 * when deaths share a millisecond: three FAILs in one write, in the
 * reverse of the order the jobs were pushed; dmax-0003 died first. */
START_TEST(test_dead_max_same_ms)
{
    start("-faktory-dead-max", "2", NULL);
    int fd = client();
    const char *jids[] = {"dmax-0001", "dmax-0002", "dmax-0003"};
    for (int i = 0; i < 3; i++)
        push(fd, f(J("%s", ",\"queue\":\"dm\",\"retry\":-1"), jids[i]));
    for (int i = 0; i < 3; i++)
        fetch_jid(fd, "dm", jids[i]);
    systest_sends(fd, "FAIL {\"jid\":\"dmax-0003\"}\r\nFAIL {\"jid\":\"dmax-0002\"}\r\n"
                      "FAIL {\"jid\":\"dmax-0001\"}\r\n");
    systest_expect(fd, OK OK OK);
    expect_counts(fd, 0, 0, 0, 2, 0);
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"dead\"}");
    const char *a = jid_of(fetch(fd, "dm")), *b = jid_of(fetch(fd, "dm"));
    ck_assert_msg((strcmp(a, "dmax-0001") == 0 && strcmp(b, "dmax-0002") == 0) ||
                      (strcmp(a, "dmax-0002") == 0 && strcmp(b, "dmax-0001") == 0),
                  "dead set kept %s and %s, want dmax-0002 and dmax-0001", a, b);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* MUTATE */

/* Filters on the scheduled set: jids (the rest then ignored), a glob
 * over the whole text (no star: the whole text), jobtype, both; kill,
 * requeue, discard, clear. */
START_TEST(test_mutate_scheduled)
{
    start(NULL);
    int fd = client();
    static const char *const pushed[] = {
        "{\"jid\":\"s-alpha-1\",\"jobtype\":\"alpha\",\"args\":[\"needle\"],\"queue\":\"ms\","
        "\"at\":\"" FAR "\"}",
        "{\"jid\":\"s-beta-01\",\"jobtype\":\"beta\",\"args\":[],\"queue\":\"ms\",\"at\":\"" FAR
        "\"}",
        "{\"jid\":\"s-alpha-2\",\"jobtype\":\"alpha\",\"args\":[],\"queue\":\"ms\",\"at\":\"" FAR
        "\"}",
        "{\"jid\":\"s-beta-02\",\"jobtype\":\"beta\",\"args\":[\"needle\"],\"queue\":\"ms\","
        "\"at\":\"" FAR "\"}",
    };
    for (int i = 0; i < 4; i++)
        push(fd, pushed[i]);
    expect_counts(fd, 0, 4, 0, 0, 0);
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":{\"jids\":"
               "[\"s-beta-01\",\"s-nosuch\"],\"jobtype\":\"alpha\",\"regexp\":\"*zzz*\"}}");
    expect_counts(fd, 0, 3, 0, 0, 0);
    /* the glob is matched against the whole text */
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":{\"regexp\":\"needle\"}}");
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":{\"jobtype\":\"alph\"}}");
    expect_counts(fd, 0, 3, 0, 0, 0);
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":"
               "{\"regexp\":\"*needle*\",\"jobtype\":\"alpha\"}}");
    expect_counts(fd, 0, 2, 0, 1, 0);
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"scheduled\",\"filter\":{\"jobtype\":\"alpha\"}}");
    expect_counts(fd, 1, 1, 0, 1, 0);
    expect_pushed_first(kept_of(fetch_jid(fd, "ms", "s-alpha-2"), NULL), pushed[2]);
    /* ? and [...] */
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"scheduled\",\"filter\":"
               "{\"regexp\":\"*\\\"jid\\\":\\\"s-b?ta-0[2-9]\\\"*\"}}");
    expect_counts(fd, 1, 0, 0, 1, 1);
    expect_pushed_first(kept_of(fetch_jid(fd, "ms", "s-beta-02"), NULL), pushed[3]);
    /* the killed one, its text as it was */
    expect_pushed_first(view(fd, "dead", "s-alpha-1", "ms"), pushed[0]);
    /* clear: every job of the set, whatever the filter */
    push(fd, J("s-gamma-1", ",\"at\":\"" FAR "\""));
    push(fd, J("s-gamma-2", ",\"at\":\"" FAR "\""));
    expect_counts(fd, 0, 2, 0, 0, 3);
    mutate(fd, "{\"cmd\":\"clear\",\"target\":\"scheduled\",\"filter\":{\"jids\":[\"s-nosuch\"]}}");
    expect_counts(fd, 0, 0, 0, 0, 3);
    close(fd);
    stop();
}
END_TEST

/* Make each job of jids a retry (push, fetch, fail). */
static void
make_retries(int fd, const char *queue, const char *const *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        push(fd, jobs[i]);
        fetch_jid(fd, queue, jid_of(jobs[i]));
        fail_job(fd, jid_of(jobs[i]));
    }
}

START_TEST(test_mutate_retries)
{
    start(NULL);
    int fd = client();
    static const char *const jobs[] = {
        "{\"jid\":\"r-alpha-1\",\"jobtype\":\"alpha\",\"args\":[\"needle\"],\"queue\":\"mr\"}",
        "{\"jid\":\"r-beta-01\",\"jobtype\":\"beta\",\"args\":[\"needle\"],\"queue\":\"mr\"}",
        "{\"jid\":\"r-beta-02\",\"jobtype\":\"beta\",\"args\":[],\"queue\":\"mr\"}",
        "{\"jid\":\"r-beta-03\",\"jobtype\":\"beta\",\"args\":[],\"queue\":\"mr\"}",
    };
    make_retries(fd, "mr", jobs, 4);
    expect_counts(fd, 0, 0, 4, 0, 0);
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"retries\",\"filter\":"
               "{\"regexp\":\"*needle*\",\"jobtype\":\"beta\"}}");
    expect_counts(fd, 1, 0, 3, 0, 0);
    const char *kept = kept_of(fetch_jid(fd, "mr", "r-beta-01"), NULL);
    expect_pushed_first(kept, jobs[1]);
    ck_assert_ptr_nonnull(strstr(kept, ",\"failure\":{\"failed_at\":"));
    ack(fd, "r-beta-01");
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"retries\",\"filter\":{\"jobtype\":\"alpha\"}}");
    expect_counts(fd, 0, 0, 2, 1, 0);
    /* killed with its failure hash */
    kept = view(fd, "dead", "r-alpha-1", "mr");
    ck_assert_ptr_nonnull(strstr(kept, ",\"failure\":{\"failed_at\":"));
    mutate(fd,
           "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"jids\":[\"r-beta-02\"]}}");
    expect_counts(fd, 0, 0, 1, 0, 1);
    mutate(fd, "{\"cmd\":\"clear\",\"target\":\"retries\"}");
    expect_counts(fd, 0, 0, 0, 0, 1);
    /* discarded and cleared jobs are gone: their jids are free */
    push(fd, J("r-beta-02", ""));
    push(fd, J("r-beta-03", ""));
    close(fd);
    stop();
}
END_TEST

START_TEST(test_mutate_dead)
{
    start(NULL);
    int fd = client();
    static const char *const jobs[] = {
        "{\"jid\":\"d-dead-01\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"md\",\"retry\":-1}",
        "{\"jid\":\"d-dead-02\",\"jobtype\":\"t\",\"args\":[\"needle\"],\"queue\":\"md\","
        "\"retry\":-1}",
        "{\"jid\":\"d-dead-03\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"md\",\"retry\":-1}",
        "{\"jid\":\"d-dead-04\",\"jobtype\":\"u\",\"args\":[],\"queue\":\"md\",\"retry\":-1}",
    };
    make_retries(fd, "md", jobs, 4);
    expect_counts(fd, 0, 0, 0, 4, 0);
    mutate(fd, "{\"cmd\":\"requeue\",\"target\":\"dead\",\"filter\":{\"jids\":[\"d-dead-01\"]}}");
    expect_counts(fd, 1, 0, 0, 3, 0);
    fetch_jid(fd, "md", "d-dead-01");
    ack(fd, "d-dead-01");
    /* kill: they are dead already */
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"dead\"}");
    expect_counts(fd, 0, 0, 0, 3, 0);
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"regexp\":\"*needle*\"}}");
    expect_counts(fd, 0, 0, 0, 2, 0);
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"jobtype\":\"u\"}}");
    expect_counts(fd, 0, 0, 0, 1, 0);
    mutate(fd, "{\"cmd\":\"clear\",\"target\":\"dead\"}");
    expect_counts(fd, 0, 0, 0, 0, 0);
    push(fd, J("d-dead-02", ""));
    push(fd, J("d-dead-03", ""));
    push(fd, J("d-dead-04", ""));
    close(fd);
    stop();
}
END_TEST

START_TEST(test_mutate_errors)
{
    start(NULL);
    int fd = client();
    push(fd, J("merr-sch", ",\"at\":\"" FAR "\""));
    push(fd, J("merr-ret", ",\"queue\":\"m\""));
    push(fd, J("merr-dead", ",\"queue\":\"m\",\"retry\":-1"));
    fetch_jid(fd, "m", "merr-ret");
    fail_job(fd, "merr-ret");
    fetch_jid(fd, "m", "merr-dead");
    fail_job(fd, "merr-dead");
    expect_counts(fd, 0, 1, 1, 1, 0);
    json_t *before = state(fd);
    static const struct {
        const char *arg, *reply;
    } cases[] = {
        {"{\"cmd\":\"clear\",\"target\":\"queues\"}", "invalid target for mutation command"},
        {"{\"cmd\":\"clear\",\"target\":\"working\"}", "invalid target for mutation command"},
        {"{\"cmd\":\"clear\"}", "invalid target for mutation command"},
        {"{\"cmd\":\"clear\",\"target\":5}", "invalid target for mutation command"},
        {"{\"cmd\":\"explode\",\"target\":\"dead\"}", "unknown mutate operation"},
        {"{\"cmd\":\"CLEAR\",\"target\":\"dead\"}", "unknown mutate operation"},
        {"{\"target\":\"dead\"}", "unknown mutate operation"},
        {"{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":5}",
         "invalid filter for mutation command"},
        {"{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":\"x\"}",
         "invalid filter for mutation command"},
        {"{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":[]}",
         "invalid filter for mutation command"},
        {"{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"jids\":\"merr-dead\"}}",
         "invalid filter for mutation command"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rt(fd, f("MUTATE %s", cases[i].arg), f("-ERR %s", cases[i].reply));
        expect_state(fd, before, cases[i].arg);
    }
    rt_prefix(fd, "MUTATE {", "-ERR invalid JSON: ");
    rt_prefix(fd, "MUTATE {\"cmd\":\"clear\",\"target\":\"dead\"", "-ERR invalid JSON: ");
    /* (the doc does not say what a JSON argument that is not an object gets) */
    rt_prefix(fd, "MUTATE [\"clear\"]", "-ERR ");
    expect_state(fd, before, "MUTATE errors");
    json_decref(before);
    close(fd);
    stop();
}
END_TEST

/* An empty `jids` array is no filter (as Faktory's server takes it): this
 * MUTATE discards every retry. */
START_TEST(test_mutate_empty_jids)
{
    start(NULL);
    int fd = client();
    static const char *const jobs[] = {J("mej-0001", ",\"queue\":\"e\""),
                                       J("mej-0002", ",\"queue\":\"e\"")};
    make_retries(fd, "e", jobs, 2);
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"retries\",\"filter\":{\"jids\":[]}}");
    expect_counts(fd, 0, 0, 0, 0, 0); /* an empty jids list is no filter, as Faktory's */
    close(fd);
    stop();
}
END_TEST

/* The byte-exact replies of MUTATE's filter: a pattern too long, a range
 * Redis would read high to low or by the sign of char, members of the
 * wrong type, and JSON that is not an object.  None changes anything. */
START_TEST(test_mutate_filter_errors)
{
    start("-max-line", "4096", NULL);
    int fd = client();
    push(fd, J("mfe-dead", ",\"queue\":\"m\",\"retry\":-1"));
    fetch_jid(fd, "m", "mfe-dead");
    fail_job(fd, "mfe-dead");
    push(fd, J("mfe-sched", ",\"at\":\"" FAR "\""));
    json_t *before = state(fd);
    static const struct {
        const char *filter, *reply;
    } cases[] = {
        {"{\"regexp\":\"[z-a]\"}", "invalid regexp"},
        {"{\"regexp\":\"*[a-]*\"}", "invalid regexp"}, /* a to ']', high to low */
        {"{\"regexp\":\"[a-\\u00ff]\"}", "invalid regexp"},
        {"{\"regexp\":5}", "invalid regexp"},
        {"{\"regexp\":[\"*\"]}", "invalid regexp"},
        {"{\"regexp\":\"[z-a]\",\"jids\":[\"mfe-dead\"]}", "invalid regexp"},
        {"{\"jobtype\":5}", "invalid filter for mutation command"},
        {"{\"jobtype\":{}}", "invalid filter for mutation command"},
        {"{\"jids\":{}}", "invalid filter for mutation command"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *arg =
            f("{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":%s}", cases[i].filter);
        rt(fd, f("MUTATE %s", arg), f("-ERR %s", cases[i].reply));
        expect_state(fd, before, arg);
    }
    /* 1024 bytes of pattern are taken, 1025 are not */
    rt(fd,
       f("MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"regexp\":\"%s\"}}",
         rep(1024, 'x')),
       "+OK");
    rt(fd,
       f("MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"regexp\":\"%s\"}}",
         rep(1025, 'x')),
       "-ERR regexp too long (at most 1024 bytes)");
    rt(fd, "MUTATE [\"clear\"]", "-ERR invalid JSON: not an object");
    expect_state(fd, before, "MUTATE filter errors");
    /* null members are no filter */
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"regexp\":null,\"jobtype\":"
               "null,\"jids\":null}}");
    expect_counts(fd, 0, 1, 0, 0, 0);
    json_decref(before);
    close(fd);
    stop();
}
END_TEST

/* VmRSS of process pid, in kB. */
static long
rss_kb(pid_t pid)
{
    FILE *fp = fopen(f("/proc/%ld/status", (long)pid), "r");
    ck_assert_ptr_nonnull(fp);
    char line[256];
    long kb = -1;
    while (kb < 0 && fgets(line, sizeof line, fp) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    fclose(fp);
    ck_assert_int_ge(kb, 0);
    return kb;
}

/* How long (ms) an INFO on connection fd takes to be answered. */
static int64_t
info_wait(int fd)
{
    int64_t t0 = systest_now_ms();
    send_line(fd, "INFO");
    ck_assert_ptr_nonnull(read_bulk(fd));
    return systest_now_ms() - t0;
}

/* The pattern that made glibc's regex engine take 66 s and 7 GB on one
 * job of 300 KB (*a, then 1,000 ?): answered at once, another client's
 * INFO too, and the server's memory stays as it was (generous bounds). */
START_TEST(test_mutate_hostile_pattern)
{
    start("-max-line", "1000000", "-max-memory", "64M", NULL);
    int fd = client(), other = client();
    size_t n = 300 * 1024;
    char *args = malloc(n + 1);
    ck_assert_ptr_nonnull(args);
    rng_seed(3);
    for (size_t i = 0; i < n; i++)
        args[i] = "ab"[rng_below(2)];
    args[n] = '\0';
    /* created_at, queue and retry given: the text is kept as sent, its
     * args to 2 bytes from its end */
    char *job = malloc(n + 200);
    ck_assert_ptr_nonnull(job);
    int len = snprintf(job, n + 200,
                       "{\"jid\":\"hostile-1\",\"jobtype\":\"t\",\"at\":\"" FAR
                       "\",\"created_at\":\"x\",\"queue\":\"q\",\"retry\":1,"
                       "\"args\":[\"%s\"]}",
                       args);
    char *line = malloc((size_t)len + 8);
    ck_assert_ptr_nonnull(line);
    snprintf(line, (size_t)len + 8, "PUSH %s\r\n", job);
    systest_sends(fd, line);
    systest_expect(fd, OK);
    expect_counts(fd, 0, 1, 0, 0, 0);
    bool matches = job[len - 1001] == 'a';
    char pattern[1003] = "*a";
    memset(pattern + 2, '?', 1000);
    pattern[1002] = '\0';
    long rss0 = rss_kb(srv.s.pid);
    int64_t t0 = systest_now_ms();
    send_line(fd, f("MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
                    "{\"regexp\":\"%s\"}}",
                    pattern));
    int64_t waited = info_wait(other);
    systest_expect(fd, OK);
    int64_t took = systest_now_ms() - t0;
    long rss1 = rss_kb(srv.s.pid);
    ck_assert_msg(took < 2000 * systest_slow() && waited < 2000 * systest_slow(),
                  "MUTATE took %lld ms, INFO waited %lld ms", (long long)took, (long long)waited);
    ck_assert_msg(rss1 - rss0 < 64 * 1024, "RSS %ld kB, then %ld kB", rss0, rss1);
    expect_counts(fd, 0, matches ? 0 : 1, 0, 0, 0);
    /* and the other way round: the one that does not match stays */
    if (matches) {
        push(fd, J("hostile-2", ",\"at\":\"" FAR "\",\"created_at\":\"x\""));
        mutate(fd, f("{\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
                     "{\"regexp\":\"%s\"}}",
                     pattern));
        expect_counts(fd, 0, 1, 0, 0, 0);
    }
    free(line);
    free(job);
    free(args);
    close(other);
    close(fd);
    stop();
}
END_TEST

/* PUSHB n jobs in batches of batch, job(out, i) writing the i-th (at most
 * max bytes) into out and returning its length; none may be refused. */
static void
pushb_all(int fd, int n, int batch, size_t max, size_t (*job)(char *out, int i))
{
    char *buf = malloc((size_t)batch * (max + 1) + 64);
    ck_assert_ptr_nonnull(buf);
    for (int b = 0; b < n; b += batch) {
        size_t len = (size_t)sprintf(buf, "PUSHB [");
        for (int i = b; i < b + batch && i < n; i++) {
            if (i > b)
                buf[len++] = ',';
            len += job(buf + len, i);
        }
        strcpy(buf + len, "]\r\n");
        systest_sends(fd, buf);
        ck_assert_str_eq(read_bulk(fd), "{}");
    }
    free(buf);
}

/* test_mutate_many_jids's i-th job. */
static size_t
many_job(char *out, int i)
{
    return (size_t)sprintf(
        out, "{\"jid\":\"many-%06d\",\"jobtype\":\"t\",\"args\":[],\"at\":\"" FAR "\"}", i);
}

/* A jids filter costs the jids, not jids x jobs (20,000 x 20,000 took
 * 2.5 s): 20,000 scheduled jobs, a discard naming every other one and as
 * many jids that are not there; another client's INFO waits little. */
START_TEST(test_mutate_many_jids)
{
    enum { JOBS = 20000 };
    start("-max-line", "1000000", NULL);
    int fd = client(), other = client();
    pushb_all(fd, JOBS, 1000, 128, many_job);
    expect_counts(fd, 0, JOBS, 0, 0, 0);
    char *buf = malloc((size_t)JOBS * 32 + 256);
    ck_assert_ptr_nonnull(buf);
    size_t n = (size_t)sprintf(buf, "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\","
                                    "\"filter\":{\"jids\":[");
    for (int i = 0; i < JOBS; i++)
        n += (size_t)sprintf(buf + n, "%s\"%s-%06d\"", i == 0 ? "" : ",",
                             i % 2 == 0 ? "many" : "none", i);
    strcpy(buf + n, "]}}\r\n");
    int64_t t0 = systest_now_ms();
    systest_sends(fd, buf);
    int64_t waited = info_wait(other);
    systest_expect(fd, OK);
    int64_t took = systest_now_ms() - t0;
    ck_assert_msg(took < 2000 * systest_slow() && waited < 2000 * systest_slow(),
                  "MUTATE took %lld ms, INFO waited %lld ms", (long long)took, (long long)waited);
    expect_counts(fd, 0, JOBS / 2, 0, 0, 0);
    /* the odd ones are left, the even ones gone */
    push(fd, J("many-000000", ""));
    rt(fd, "PUSH " J("many-000001", ""), "-ERR job many-000001 already exists");
    free(buf);
    close(other);
    close(fd);
    stop();
}
END_TEST

/* test_mutate_in_slices's i-th job: 1 KB of args, every other one to drop. */
static size_t
slice_job(char *out, int i)
{
    static char pad[1025];
    memset(pad, 'p', sizeof pad - 1);
    return (size_t)sprintf(out,
                           "{\"jid\":\"slice-%06d\",\"jobtype\":\"%s\",\"args\":[\"%s\"],\"at\":"
                           "\"" FAR "\"}",
                           i, i % 2 ? "keep" : "drop", pad);
}

/* A MUTATE over a large set works in slices: another client's INFO, sent
 * while it runs, is answered before it ends, and between two replies of
 * that client no wait is as long as the whole MUTATE; the MUTATE does
 * exactly what it would at once.  A jobtype filter decodes every job,
 * the slowest filter there is. */
START_TEST(test_mutate_in_slices)
{
    enum { JOBS = 20000 };
    start("-max-line", "2000000", NULL);
    int fd = client(), other = client();
    pushb_all(fd, JOBS, 500, 1200, slice_job);
    expect_counts(fd, 0, JOBS, 0, 0, 0);
    int64_t t0 = systest_now_ms(), worst = 0;
    systest_sends(fd, "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
                      "{\"jobtype\":\"drop\"}}\r\n");
    int during = 0;
    for (;;) {
        int64_t waited = info_wait(other);
        worst = waited > worst ? waited : worst;
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) == 1)
            break; /* the MUTATE's answer is there */
        during++;
    }
    systest_expect(fd, OK);
    int64_t took = systest_now_ms() - t0;
    ck_assert_msg(took >= 40, "MUTATE took only %lld ms: the set is too small to see slices",
                  (long long)took);
    ck_assert_msg(during >= 2 && worst * 2 < took,
                  "MUTATE took %lld ms; INFO answered %d times during it, the longest wait "
                  "%lld ms",
                  (long long)took, during, (long long)worst);
    expect_counts(fd, 0, JOBS / 2, 0, 0, 0);
    rt(fd, "PUSH " J("slice-000000", ""), "+OK");
    rt(fd, "PUSH " J("slice-000001", ""), "-ERR job slice-000001 already exists");
    /* a client that leaves during its MUTATE: the server goes on */
    systest_sends(fd, "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
                      "{\"jobtype\":\"none\"}}\r\n");
    close(fd);
    info_wait(other);
    close(other);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* QUEUE */

START_TEST(test_queue)
{
    start(NULL);
    int fd = client(), fd2 = client();
    push(fd, J("queue-a-1", ",\"queue\":\"qa\""));
    push(fd, J("queue-b-1", ",\"queue\":\"qb\""));
    /* a paused queue keeps its jobs, takes pushes, is skipped */
    rt(fd, "QUEUE PAUSE qa", "+OK");
    fetch_jid(fd, "qa qb", "queue-b-1");
    push(fd, J("queue-a-2", ",\"queue\":\"qa\""));
    ck_assert_int_eq(queue_len(fd, "qa"), 2);
    rt(fd, "QUEUE RESUME qa", "+OK");
    fetch_jid(fd, "qa", "queue-a-1");
    /* every queue; a FETCH parked on paused queues gets a job on RESUME */
    push(fd, J("queue-b-2", ",\"queue\":\"qb\""));
    rt(fd, "QUEUE PAUSE *", "+OK");
    send_line(fd2, "FETCH qa qb");
    let_it_park();
    if (systest_exact_timing())
        systest_expect_silence(fd2, 0);
    rt(fd, "QUEUE RESUME *", "+OK");
    ck_assert_str_eq(jid_of(parked_gets(fd2, "qa qb")), "queue-a-2");
    fetch_jid(fd, "qa qb", "queue-b-2");
    /* several names; unknown ones are ignored (not paused later) */
    push(fd, J("queue-a-3", ",\"queue\":\"qa\""));
    push(fd, J("queue-b-3", ",\"queue\":\"qb\""));
    push(fd, J("queue-c-1", ",\"queue\":\"qc\""));
    rt(fd, "QUEUE PAUSE qa nosuch qb", "+OK");
    push(fd, J("queue-n-1", ",\"queue\":\"nosuch\""));
    fetch_jid(fd, "qa qb nosuch qc", "queue-n-1");
    fetch_jid(fd, "qa qb qc", "queue-c-1");
    /* REMOVE: the enqueued jobs go, working ones stay, the queue resumes */
    expect_counts(fd, 2, 0, 0, 0, 6);
    rt(fd, "QUEUE REMOVE qa", "+OK");
    expect_counts(fd, 1, 0, 0, 0, 6);
    push(fd, J("queue-a-4", ",\"queue\":\"qa\""));
    fetch_jid(fd, "qa qb", "queue-a-4");
    push(fd, J("queue-c-2", ",\"queue\":\"qc\""));
    rt(fd, "QUEUE REMOVE *", "+OK");
    expect_counts(fd, 0, 0, 0, 0, 7);
    push(fd, J("queue-b-4", ",\"queue\":\"qb\""));
    fetch_jid(fd, "qb", "queue-b-4");
    /* removed jobs are gone: their jids are free */
    push(fd, J("queue-a-3", ",\"queue\":\"qa\""));
    push(fd, J("queue-c-2", ",\"queue\":\"qc\""));
    /* errors */
    json_t *before = state(fd);
    rt(fd, "QUEUE LATENCY *", "-ERR QUEUE LATENCY does not support wildcards");
    rt(fd, "QUEUE LATENCY qa *", "-ERR QUEUE LATENCY does not support wildcards");
    rt(fd, "QUEUE LATENCY qa q/b",
       "-ERR QUEUE LATENCY: queue names must match \\A[a-zA-Z0-9._-]+\\z");
    rt(fd, "QUEUE NOPE", "-ERR no such QUEUE subcommand: NOPE");
    rt(fd, "QUEUE PAUSE", "-ERR QUEUE PAUSE needs queue names");
    rt(fd, "QUEUE RESUME", "-ERR QUEUE RESUME needs queue names");
    rt(fd, "QUEUE REMOVE", "-ERR QUEUE REMOVE needs queue names");
    expect_state(fd, before, "QUEUE errors");
    json_decref(before);
    close(fd);
    close(fd2);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* INFO, FLUSH, namespaces */

/* The keys of object v are exactly keys (NULL terminated). */
static void
expect_keys(json_t *v, const char *what, const char *const *keys)
{
    ck_assert_msg(json_is_object(v), "INFO %s is not an object", what);
    size_t n = 0;
    for (; keys[n] != NULL; n++)
        ck_assert_msg(json_object_get(v, keys[n]) != NULL, "INFO %s has no %s", what, keys[n]);
    ck_assert_msg(json_object_size(v) == n, "INFO %s has %zu keys, want %zu", what,
                  json_object_size(v), n);
}

START_TEST(test_info)
{
    start(NULL);
    int fd = client();
    int64_t t0 = systest_now_ms();
    json_t *i = info(fd);
    int64_t t1 = systest_now_ms();
    static const char *const top[] = {"now", "server_utc_time", "faktory", "server", NULL};
    static const char *const fk[] = {
        "total_failures", "total_processed", "total_enqueued", "total_queues",
        "queues",         "tasks",           "sets",           NULL};
    static const char *const sets[] = {"dead", "retries", "scheduled", "working", NULL};
    static const char *const tasks[] = {"Busy", "Dead", "Retries", "Scheduled", "Workers", NULL};
    static const char *const scanner[] = {"cycles", "enqueued", "size", "wall_time_sec", NULL};
    static const char *const reaper[] = {"reaped", "size", NULL};
    static const char *const server[] = {"description", "faktory_version", "uptime",
                                         "connections", "command_count",   "used_memory_mb",
                                         NULL};
    expect_keys(i, "", top);
    expect_keys(json_object_get(i, "faktory"), "faktory", fk);
    expect_keys(at_path(i, "faktory/sets"), "sets", sets);
    expect_keys(json_object_get(i, "server"), "server", server);
    expect_keys(at_path(i, "faktory/tasks"), "tasks", tasks);
    for (size_t k = 0; tasks[k] != NULL; k++) {
        bool reaps = strcmp(tasks[k], "Busy") == 0 || strcmp(tasks[k], "Workers") == 0;
        expect_keys(at_path(i, f("faktory/tasks/%s", tasks[k])), tasks[k],
                    reaps ? reaper : scanner);
    }
    expect_keys(at_path(i, "faktory/queues"), "queues", (const char *const[]){NULL});
    check_between(time_of(json_string_value(json_object_get(i, "now"))), t0, t1, "now");
    ck_assert(json_is_string(json_object_get(i, "server_utc_time")));
    ck_assert_str_eq(json_string_value(at_path(i, "server/description")), "workq");
    ck_assert_str_eq(json_string_value(at_path(i, "server/faktory_version")), PACKAGE_VERSION);
    ck_assert_int_ge(num(i, "server/uptime"), 0);
    ck_assert_int_ge(num(i, "server/used_memory_mb"), 0);
    ck_assert_int_eq(num(i, "server/connections"), 1);
    static const char *const zero[] = {"faktory/total_failures", "faktory/total_processed",
                                       "faktory/total_enqueued", "faktory/total_queues",
                                       "faktory/sets/scheduled", "faktory/sets/retries",
                                       "faktory/sets/dead",      "faktory/sets/working"};
    for (size_t k = 0; k < sizeof zero / sizeof zero[0]; k++)
        ck_assert_msg(num(i, zero[k]) == 0, "%s is %lld", zero[k], num(i, zero[k]));
    long long commands = num(i, "server/command_count");
    json_decref(i);
    i = info(fd);
    ck_assert_int_eq(num(i, "server/command_count"), commands + 1);
    json_decref(i);

    /* every count */
    int wq = workq();
    push(fd, J("info-a-1", ",\"queue\":\"ia\""));
    push(fd, J("info-a-2", ",\"queue\":\"ia\""));
    push(fd, J("info-a-3", ",\"queue\":\"ia\""));
    push(fd, J("info-b-1", ",\"queue\":\"ib\""));
    push(fd, J("info-s-1", ",\"queue\":\"ic\",\"at\":\"" FAR "\""));
    fetch_jid(fd, "ia", "info-a-1");
    ack(fd, "info-a-1");
    fetch_jid(fd, "ia", "info-a-2");
    fail_job(fd, "info-a-2");
    push(fd, J("info-d-1", ",\"queue\":\"id\",\"retry\":-1"));
    fetch_jid(fd, "id", "info-d-1");
    fail_job(fd, "info-d-1");
    push(fd, J("info-w-1", ",\"queue\":\"ie\""));
    fetch_jid(fd, "ie", "info-w-1");
    i = info(fd);
    ck_assert_int_eq(num(i, "faktory/total_failures"), 2);
    ck_assert_int_eq(num(i, "faktory/total_processed"), 3);
    ck_assert_int_eq(num(i, "faktory/total_enqueued"), 2);
    ck_assert_int_eq(num(i, "faktory/sets/scheduled"), 1);
    ck_assert_int_eq(num(i, "faktory/sets/retries"), 1);
    ck_assert_int_eq(num(i, "faktory/sets/dead"), 1);
    ck_assert_int_eq(num(i, "faktory/sets/working"), 1);
    /* the tasks count what their sets hold */
    ck_assert_int_eq(num(i, "faktory/tasks/Scheduled/size"), 1);
    ck_assert_int_eq(num(i, "faktory/tasks/Retries/size"), 1);
    ck_assert_int_eq(num(i, "faktory/tasks/Dead/size"), 1);
    ck_assert_int_eq(num(i, "faktory/tasks/Busy/size"), 1);
    ck_assert_int_eq(num(i, "faktory/tasks/Workers/size"), 0);
    ck_assert_int_eq(num(i, "server/connections"), 2); /* the Workq one too */
    ck_assert_int_eq(num(i, "faktory/queues/ia"), 1);
    ck_assert_int_eq(num(i, "faktory/queues/ib"), 1);
    /* (which queues without enqueued jobs are listed, the doc does not
     * say: those listed count 0) */
    json_t *queues = at_path(i, "faktory/queues");
    const char *name;
    json_t *v;
    json_object_foreach(queues, name, v)
    {
        ck_assert_msg(json_is_integer(v), "queue %s: not a number", name);
        if (strcmp(name, "ia") != 0 && strcmp(name, "ib") != 0)
            ck_assert_msg(json_integer_value(v) == 0, "queue %s counts %lld", name,
                          (long long)json_integer_value(v));
    }
    ck_assert_int_eq(num(i, "faktory/total_queues"), (long long)json_object_size(queues));
    json_decref(i);
    close(wq);
    close(fd);
    stop();
}
END_TEST

/* Every Faktory job goes, in every state, paused queues resume; Workq's
 * jobs stay. */
START_TEST(test_flush)
{
    start(NULL);
    int fd = client(), wq = workq();
    systest_add(wq, id4(1), "default", "workq-job");
    systest_add(wq, id4(2), "fl", "workq-job-2");
    push(fd, J("flush-enq", ""));
    push(fd, J("flush-sch", ",\"at\":\"" FAR "\""));
    push(fd, J("flush-ret", ",\"queue\":\"fl\""));
    push(fd, J("flush-dead", ",\"queue\":\"fl\",\"retry\":-1"));
    push(fd, J("flush-work", ",\"queue\":\"fl\""));
    push(fd, J("flush-paused", ",\"queue\":\"fp\""));
    fetch_jid(fd, "fl", "flush-ret");
    fail_job(fd, "flush-ret");
    fetch_jid(fd, "fl", "flush-dead");
    fail_job(fd, "flush-dead");
    fetch_jid(fd, "fl", "flush-work");
    rt(fd, "QUEUE PAUSE fp", "+OK");
    expect_counts(fd, 2, 1, 1, 1, 1);
    rt(fd, "FLUSH", "+OK");
    expect_counts(fd, 0, 0, 0, 0, 0);
    json_t *i = info(fd);
    json_t *queues = at_path(i, "faktory/queues");
    const char *name;
    json_t *v;
    json_object_foreach(queues, name, v)
    {
        ck_assert_msg(json_integer_value(v) == 0, "queue %s counts %lld after FLUSH", name,
                      (long long)json_integer_value(v));
    }
    json_decref(i);
    /* the working job is gone too */
    ack(fd, "flush-work");
    rt(fd, "FAIL {\"jid\":\"flush-work\"}", "-ERR Job not found flush-work");
    expect_counts_pf(fd, 0, 0, 0, 0, 0, 2, 2);
    /* fp resumed; the jids are free */
    push(fd, J("flush-paused", ",\"queue\":\"fp\""));
    fetch_jid(fd, "fp", "flush-paused");
    push(fd, J("flush-enq", ""));
    /* Workq's jobs are there */
    systest_lease_now(wq, "default", id4(1), "workq-job");
    systest_lease_now(wq, "fl", id4(2), "workq-job-2");
    close(wq);
    close(fd);
    stop();
}
END_TEST

/* A Workq add and a Faktory PUSH to queue default do not see each other,
 * even with the same id. */
START_TEST(test_namespaces)
{
    start(NULL);
    int fd = client(), wq = workq();
    systest_add(wq, id4(1), "default", "from-workq");
    push(fd, f(J("%s", ""), id4(2)));
    /* the same id in both */
    systest_add(wq, id4(3), "default", "same-id");
    push(fd, f(J("%s", ",\"queue\":\"other\""), id4(3)));
    ck_assert_int_eq(queue_len(fd, "default"), 1);
    expect_counts(fd, 2, 0, 0, 0, 0);
    systest_roundtrip(wq, "inspect queue default\r\n",
                      f("+OK 1\r\n%s", systest_queue_block("default", 2, 0)));
    systest_roundtrip(wq, f("inspect job %s\r\n", id4(2)), NF);
    fetch_jid(fd, NULL, id4(2));
    systest_lease_now(wq, "default", id4(1), "from-workq");
    systest_lease_now(wq, "default", id4(3), "same-id");
    systest_roundtrip(wq, "lease default 0\r\n", TO);
    fetch_jid(fd, "other", id4(3));
    ack(fd, id4(3));
    /* the Workq job of that id is still leased */
    systest_roundtrip(wq, f("complete %s 2\r\nok\r\n", id4(3)), OK);
    expect_counts_pf(fd, 0, 0, 0, 0, 1, 1, 0);
    close(wq);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Persistence */

/* Every state there is, SIGKILL right after the last acknowledgement, a
 * restart on the same command log: every job is back in its state, its
 * queue and its place, with its text; the paused queue is paused. */
START_TEST(test_persistence)
{
    char dir[32];
    systest_tmpdir_new(dir);
    start("-cmdlog-path", dir, "-cmdlog-sync", "always", NULL);
    int fd = client();
#define PJOB(jid, extra)                                                                           \
    "{\"jid\":\"" jid "\",\"jobtype\":\"t\",\"args\":[1,0.1,\"x\"],\"retry\":25,"                  \
    "\"created_at\":\"2001-01-01T00:00:00Z\",\"custom\":{\"k\":[true]}" extra "}"
    static const char *const w1 = PJOB("pers-work", ",\"queue\":\"pq\",\"priority\":9");
    static const char *const e1 = PJOB("pers-e-1", ",\"queue\":\"pq\"");
    static const char *const e2 = PJOB("pers-e-2", ",\"queue\":\"pq\",\"priority\":9");
    static const char *const e3 = PJOB("pers-e-3", ",\"queue\":\"pq\",\"priority\":5");
    static const char *const s1 = PJOB("pers-sch", ",\"queue\":\"ps\",\"at\":\"" FAR "\"");
    static const char *const r1 = PJOB("pers-ret", ",\"queue\":\"pr\",\"backtrace\":5");
    static const char *const k1 =
        "{\"jid\":\"pers-dead\",\"jobtype\":\"t\",\"args\":[],\"queue\":\"pk\",\"retry\":-1,"
        "\"created_at\":\"x\"}";
    static const char *const k2 = PJOB("pers-kill", ",\"queue\":\"pk\",\"at\":\"" FAR "\"");
    static const char *const p1 = PJOB("pers-paused", ",\"queue\":\"pp\"");
    push(fd, w1);
    fetch_jid(fd, "pq", "pers-work");
    push(fd, e1);
    push(fd, e2);
    push(fd, e3);
    push(fd, s1);
    push(fd, r1);
    fetch_jid(fd, "pr", "pers-ret");
    rt(fd,
       "FAIL {\"jid\":\"pers-ret\",\"errtype\":\"Err\",\"message\":\"it broke\","
       "\"backtrace\":[\"a.rb:1\",\"b.rb:2\"]}",
       "+OK");
    /* a dead job whose text (with its failure hash) is known exactly: seen
     * once, then failed again */
    push(fd, k1);
    fetch_jid(fd, "pk", "pers-dead");
    fail_job(fd, "pers-dead");
    const char *seen = view(fd, "dead", "pers-dead", "pk");
    fail_job(fd, "pers-dead");
    const char *rc = strstr(seen, "\"retry_count\":0,");
    ck_assert_ptr_nonnull(rc);
    char dead_kept[512];
    SET(dead_kept,
        f("%.*s\"retry_count\":1,%s", (int)(rc - seen), seen, rc + strlen("\"retry_count\":0,")));
    push(fd, k2);
    mutate(fd, "{\"cmd\":\"kill\",\"target\":\"scheduled\",\"filter\":{\"jids\":[\"pers-kill\"]}}");
    /* gone: acknowledged, discarded */
    push(fd, J("pers-acked", ",\"queue\":\"pa\""));
    fetch_jid(fd, "pa", "pers-acked");
    ack(fd, "pers-acked");
    push(fd, J("pers-discarded", ",\"at\":\"" FAR "\""));
    mutate(fd, "{\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
               "{\"jids\":[\"pers-discarded\"]}}");
    push(fd, p1);
    rt(fd, "QUEUE PAUSE pp", "+OK");
    systest_proc_crash(&srv);
    close(fd);

    start("-cmdlog-path", dir, "-cmdlog-sync", "always", NULL);
    fd = client();
    /* counters start from zero */
    expect_counts_pf(fd, 4, 1, 1, 2, 1, 0, 0);
    ck_assert_int_eq(queue_len(fd, "pq"), 3);
    ck_assert_int_eq(queue_len(fd, "pp"), 1);
    /* order and text; pp is still paused */
    expect_pushed_first(kept_of(fetch_jid(fd, "pp pq", "pers-e-2"), NULL), e2);
    expect_pushed_first(kept_of(fetch_jid(fd, "pp pq", "pers-e-1"), NULL), e1);
    expect_pushed_first(kept_of(fetch_jid(fd, "pp pq", "pers-e-3"), NULL), e3);
    /* the working job is still working */
    ack(fd, "pers-work");
    expect_counts_pf(fd, 1, 1, 1, 2, 3, 1, 0);
    /* the retry with its failure hash, still waiting for its next_at */
    const char *hash = failure_of(view(fd, "retries", "pers-ret", "pr"), r1);
    ck_assert_str_eq(hash, f("{\"failed_at\":\"%s\",\"message\":\"it broke\",\"errtype\":\"Err\","
                             "\"backtrace\":[\"a.rb:1\",\"b.rb:2\"],\"retry_count\":0,"
                             "\"remaining\":25,\"next_at\":\"%s\"}",
                             str_member(hash, "failed_at"), str_member(hash, "next_at")));
    ck_assert_int_gt(time_of(str_member(hash, "next_at")), time_of(str_member(hash, "failed_at")));
    /* the dead ones, byte for byte */
    ck_assert_str_eq(view(fd, "dead", "pers-dead", "pk"), dead_kept);
    ck_assert_str_eq(view(fd, "dead", "pers-kill", "pk"), k2);
    ck_assert_str_eq(view(fd, "scheduled", "pers-sch", "ps"), s1);
    rt(fd, "QUEUE RESUME pp", "+OK");
    expect_pushed_first(kept_of(fetch_jid(fd, "pp", "pers-paused"), NULL), p1);
    expect_counts(fd, 0, 0, 0, 0, 8);
    /* the acknowledged and the discarded are gone: their jids are free */
    push(fd, J("pers-acked", ""));
    push(fd, J("pers-discarded", ""));
    close(fd);
    stop();
    systest_tmpdir_remove(dir);
#undef PJOB
}
END_TEST

static Suite *
faktory_jobs_suite(void)
{
    const struct systest_group groups[] = {
        {"push",
         {test_push_kept, test_push_errors, test_push_bounds, test_push_empty_queue,
          test_push_limits, test_push_readonly, test_push_at, test_push_at_offset_without_fraction,
          test_push_priority, NULL}},
        {"pushb", {test_pushb, NULL}},
        {"fetch", {test_fetch_order, test_fetch_waits, NULL}},
        {"ack", {test_ack, NULL}},
        {"fail",
         {test_fail_hash, test_fail_backoff, test_fail_backoff_saturates,
          test_fail_retried_job_queues_last, test_fail_policies, test_fail_errors,
          test_fail_max_memory, test_dead_max, test_dead_max_same_ms, test_dead_ttl, NULL}},
        {"mutate",
         {test_mutate_scheduled, test_mutate_retries, test_mutate_dead, test_mutate_errors,
          test_mutate_empty_jids, test_mutate_filter_errors, test_mutate_hostile_pattern,
          test_mutate_many_jids, test_mutate_in_slices, NULL}},
        {"queue", {test_queue, NULL}},
        {"info", {test_info, test_flush, test_namespaces, NULL}},
        {"persist", {test_persistence, NULL}},
    };
    return systest_suite("faktory_jobs", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(faktory_jobs_suite());
}
