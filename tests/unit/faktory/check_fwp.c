/* check_fwp.c - unit tests for the Faktory protocol module (src/faktory/fwp.c)
 * through a fake reply (fake_reply.h): the password hash against vectors
 * computed elsewhere, the HI greeting, HELLO with and without a password,
 * versions and wids, the worker registry it feeds, BEAT, END, unknown
 * commands and line limits, every reply to the byte. */
#include "lib/wq.h"
#include "faktory/fwp.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "net/auth_guard.h"
#include "net/conn.h"
#include "engine/core.h"
#include "fake_reply.h"
#include "faktory/fjobs.h"
#include "faktory/fwp_internal.h"
#include "unit.h"
#include "engine/workers.h"

#define NOW 1700000000000ULL

static struct core *core;
static struct fwp_ctx ctx;
static struct fjobs *fs;
static uint64_t now_ms;
static bool readonly;
static uint64_t clients;

static void
setup(void)
{
    core = core_new(NOW);
    fs = fjobs_new(core);
    now_ms = NOW;
    readonly = false;
    clients = 1;
    ctx = (struct fwp_ctx){
        .core = core,
        .fjobs = fs,
        .password = NULL,
        .auth_guard = auth_guard_new(),
        .max_line = 200,
        .max_job = 1000,
        .backoff_unit_ms = 1000,
        .now_ms = &now_ms,
        .readonly = &readonly,
        .clients = &clients,
        .started_ms = NOW,
        .rng = 1,
    };
    fjobs_set_expired(fs, fwp_reservation_expired, &ctx);
}

static void
teardown(void)
{
    core_free(core);
    fjobs_free(fs);
    auth_guard_free(ctx.auth_guard);
}

/* A client and its protocol state (the module's state is opaque: room
 * enough for it). */
struct client {
    struct fake f;
    _Alignas(16) char state[256];
};

static void
client_open(struct client *c)
{
    ck_assert_uint_le(fwp_protocol.state_size, sizeof c->state);
    fake_init(&c->f);
    c->f.clock = &now_ms;
    memset(c->state, 0, sizeof c->state);
    fwp_protocol.open(&ctx, c->state, &c->f.reply);
}

static void
client_close(struct client *c)
{
    fwp_protocol.close(&ctx, c->state);
}

/* Feed lines as a connection would; what was answered since. */
static const char *
feed(struct client *c, const char *input)
{
    size_t start = c->f.len, off = 0, n = strlen(input);
    while (off < n && !c->f.closed) {
        size_t need = 0;
        size_t used = fwp_protocol.handle(&ctx, c->state, &c->f.reply, input + off, n - off, &need);
        off += used;
        if (used == 0)
            break;
    }
    return c->f.out + start;
}

/* "$<n>\r\n<s>\r\n". */
static const char *
f_bulk(const char *s)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "$%zu\r\n%s\r\n", strlen(s), s);
    return buf;
}

/* The salt and iterations of a HI with a password. */
static void
hi_params(const char *hi, char salt[32], int *iterations)
{
    json_t *o = json_loads(hi + 4, 0, NULL);
    ck_assert_ptr_nonnull(o);
    snprintf(salt, 32, "%s", json_string_value(json_object_get(o, "s")));
    *iterations = (int)json_integer_value(json_object_get(o, "i"));
    json_decref(o);
}

/* Vectors from Python's hashlib: sha256("passwordsalt"), then twice more
 * over the raw digest. */
START_TEST(test_password_hash)
{
    char out[65];
    fwp_password_hash("password", "salt", 1, out);
    ck_assert_str_eq(out, "7a37b85c8918eac19a9089c0fa5a2ab4dce3f90528dcdeec108b23ddf3607b99");
    fwp_password_hash("password", "salt", 3, out);
    ck_assert_str_eq(out, "cc19a87959d70ba1d9d2979b5fc2323e0d62a40fb2545492e9ec4d57ce79956d");
}
END_TEST

/* Without a password: HI {"v":2}, HELLO, and commands. */
START_TEST(test_handshake)
{
    struct client c;
    client_open(&c);
    ck_assert_str_eq(c.f.out, "+HI {\"v\":2}\r\n");
    ck_assert_str_eq(feed(&c, "HELLO {\"v\":2}\r\n"), "+OK\r\n");
    ck_assert_str_eq(feed(&c, "PING\r\n"), "-ERR unknown command PING\r\n");
    ck_assert_str_eq(feed(&c, "HELLO {\"v\":2}\n"), "-ERR unknown command HELLO\r\n");
    ck_assert_str_eq(feed(&c, "\r\n"), "-ERR unknown command \r\n");
    ck_assert(!c.f.closed);
    ck_assert_str_eq(feed(&c, "END\r\nPING\r\n"), ""); /* closed at once, no reply */
    ck_assert(c.f.closed);
    client_close(&c);
}
END_TEST

/* What ends a connection before it is identified: anything but a HELLO
 * with a JSON object is closed without a reply, as Faktory's server does;
 * a "v" that is not a number, or a wid that is not one, gets an error
 * first. */
START_TEST(test_bad_hello)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"PING\r\n", ""},
        {"HELLO\r\n", ""},
        {"HELLO {\"v\":2\r\n", ""},
        {"HELLO [2]\r\n", ""},
        {"hello {\"v\":2}\r\n", ""},
        {"HELLO {\"v\":\"2\"}\r\n", "-ERR Unsupported protocol version\r\n"},
        {"HELLO {\"v\":[2]}\r\n", "-ERR Unsupported protocol version\r\n"},
        {"HELLO {\"v\":2,\"wid\":5}\r\n", "-ERR Invalid wid\r\n"},
        {"HELLO {\"v\":2,\"wid\":\"a b\"}\r\n", "-ERR Invalid wid\r\n"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        struct client c;
        client_open(&c);
        const char *got = feed(&c, cases[i].in);
        ck_assert_msg(strcmp(got, cases[i].out) == 0, "%s: \"%s\"", cases[i].in, got);
        ck_assert_msg(c.f.closed, "%s: not closed", cases[i].in);
        client_close(&c);
    }
    ck_assert_uint_eq(workers_count(core->workers), 0);
}
END_TEST

/* Any version, or none, is accepted; a HELLO whose wid is absent, null or
 * "" is a producer's: identified, but no worker. */
START_TEST(test_hello_any_version_and_producers)
{
    static const char *const hellos[] = {
        "HELLO {}\r\n",
        "HELLO {\"v\":1}\r\n",
        "HELLO {\"v\":3,\"wid\":null}\r\n",
        "HELLO {\"v\":null,\"wid\":\"\"}\r\n",
        "HELLO {\"hostname\": \"vm\", \"pid\": 1, \"labels\": []}\r\n",
        "HELLO {\"hostname\":\"vm\",\"wid\":\"\",\"pid\":30472,\"labels\":[\"golang\"],"
        "\"username\":\"\",\"pwdhash\":\"\",\"v\":2}\r\n",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(hellos); i++) {
        struct client c;
        client_open(&c);
        ck_assert_msg(strcmp(feed(&c, hellos[i]), "+OK\r\n") == 0, "%s", hellos[i]);
        ck_assert_str_eq(feed(&c, "BEAT {\"wid\":\"\"}\r\n"), "-ERR unknown worker \r\n");
        ck_assert(!c.f.closed);
        client_close(&c);
    }
    ck_assert_uint_eq(workers_count(core->workers), 0);
}
END_TEST

/* With a password: HI gives the iterations and a salt; the right hash is
 * accepted, a wrong or missing one refused and the connection closed. */
START_TEST(test_password)
{
    ctx.password = "s3cret";
    static const char *const attempts[] = {"right", "wrong", "missing", "upper"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(attempts); i++) {
        struct client c;
        client_open(&c);
        ck_assert_msg(strncmp(c.f.out, "+HI {\"v\":2,\"i\":", 15) == 0, "%s", c.f.out);
        char salt[32], hash[65], line[160];
        int iterations;
        hi_params(c.f.out, salt, &iterations);
        ck_assert_int_ge(iterations, 4000);
        ck_assert_int_lt(iterations, 8096);
        fwp_password_hash(i == 1 ? "s3cre" : "s3cret", salt, (uint32_t)iterations, hash);
        if (i == 3)
            for (char *p = hash; *p; p++)
                *p = (char)(*p >= 'a' ? *p - 32 : *p);
        if (i == 2)
            snprintf(line, sizeof line, "HELLO {\"v\":2}\r\n");
        else
            snprintf(line, sizeof line, "HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n", hash);
        const char *got = feed(&c, line);
        if (i == 0) {
            ck_assert_str_eq(got, "+OK\r\n");
            ck_assert(!c.f.closed);
        } else {
            ck_assert_str_eq(got, "-ERR Invalid password\r\n");
            ck_assert(c.f.closed);
        }
        client_close(&c);
    }
    /* every connection gets its own salt */
    struct client a, b;
    client_open(&a);
    client_open(&b);
    ck_assert_str_ne(a.f.out, b.f.out);
    client_close(&a);
    client_close(&b);
}
END_TEST

/* A wrong password is answered after its address's delay, and the
 * connection closes only then; while the delay runs, another connection
 * from the address is refused the same way without its hash being
 * checked, the right one too. */
START_TEST(test_password_delays)
{
    ctx.password = "s3cret";
    struct client a, b, c;
    client_open(&a);
    client_open(&b);
    a.f.clock = b.f.clock = NULL; /* side by side: the test moves the time */
    char salt[32], hash[65], line[160];
    int iterations;
    ck_assert_str_eq(feed(&a, "HELLO {\"v\":2,\"pwdhash\":\"nothex\"}\r\n"),
                     "-ERR Invalid password\r\n");
    ck_assert_uint_eq(a.f.paused_ms, 250);
    ck_assert(a.f.closed);
    now_ms += 100;
    hi_params(b.f.out, salt, &iterations);
    fwp_password_hash("s3cret", salt, (uint32_t)iterations, hash);
    snprintf(line, sizeof line, "HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n", hash);
    ck_assert_str_eq(feed(&b, line), "-ERR Invalid password\r\n");
    ck_assert_uint_eq(b.f.paused_ms, 150);
    now_ms += 150;
    client_open(&c);
    hi_params(c.f.out, salt, &iterations);
    fwp_password_hash("s3cret", salt, (uint32_t)iterations, hash);
    snprintf(line, sizeof line, "HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n", hash);
    ck_assert_str_eq(feed(&c, line), "+OK\r\n");
    ck_assert_uint_eq(c.f.paused_ms, 0);
    client_close(&a);
    client_close(&b);
    client_close(&c);
}
END_TEST

/* A client whose "v" is absent or below 2 hashes the password once,
 * whatever HI asked for (Faktory's rule, which its Python client follows);
 * one of version 2 or more hashes as often as HI asked. */
START_TEST(test_password_rounds_by_version)
{
    ctx.password = "s3cret";
    static const struct {
        const char *v; /* the HELLO's "v" member, or "" */
        bool once;     /* hashed once, else the iterations HI gave */
        bool ok;
    } cases[] = {
        {"", true, true},          {"\"v\":1,", true, true},     {"\"v\":null,", true, true},
        {"\"v\":2,", false, true}, {"\"v\":3,", false, true},    {"", false, false},
        {"\"v\":2,", true, false}, {"\"v\":1.5,", false, false},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        struct client c;
        client_open(&c);
        char salt[32], hash[65], line[160];
        int iterations;
        hi_params(c.f.out, salt, &iterations);
        fwp_password_hash("s3cret", salt, cases[i].once ? 1 : (uint32_t)iterations, hash);
        snprintf(line, sizeof line, "HELLO {%s\"pwdhash\":\"%s\"}\r\n", cases[i].v, hash);
        ck_assert_msg(
            strcmp(feed(&c, line), cases[i].ok ? "+OK\r\n" : "-ERR Invalid password\r\n") == 0,
            "case %zu: %s", i, line);
        client_close(&c);
    }
}
END_TEST

/* A HELLO with a wid registers the worker for as long as one of its
 * connections is open; BEAT on any of them answers its state. */
START_TEST(test_workers_and_beat)
{
    struct client a, b, p;
    client_open(&a);
    client_open(&b);
    client_open(&p);
    ck_assert_str_eq(feed(&a, "HELLO {\"v\":2,\"wid\":\"w1\",\"hostname\":\"h\",\"pid\":42,"
                              "\"labels\":[\"x\",\"y\"]}\r\n"),
                     "+OK\r\n");
    ck_assert_str_eq(feed(&b, "HELLO {\"v\":2,\"wid\":\"w1\"}\r\n"), "+OK\r\n");
    ck_assert_str_eq(feed(&p, "HELLO {\"v\":2}\r\n"), "+OK\r\n"); /* a producer */
    ck_assert_uint_eq(workers_count(core->workers), 1);
    struct worker *w = workers_find(core->workers, "w1", 2);
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(w->hostname, "h");
    ck_assert_int_eq(w->pid, 42);
    ck_assert_str_eq(w->labels, "[\"x\",\"y\"]");
    ck_assert_uint_eq(w->connections, 2);

    ck_assert_str_eq(feed(&p, "BEAT {\"wid\":\"w1\"}\r\n"), "+OK\r\n"); /* any connection */
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\": \"w1\", \"rss_kb\": 54176}\r\n"), "+OK\r\n");
    w->state = WORKER_QUIET;
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\":\"w1\"}\r\n"), "$17\r\n{\"state\":\"quiet\"}\r\n");
    w->state = WORKER_TERMINATE;
    ck_assert_str_eq(feed(&b, "BEAT {\"wid\":\"w1\"}\r\n"), "$21\r\n{\"state\":\"terminate\"}\r\n");
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\":\"w2\"}\r\n"), "-ERR unknown worker w2\r\n");
    ck_assert_str_eq(feed(&a, "BEAT {\"id\":1}\r\n"), "-ERR unknown worker \r\n");
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\":1}\r\n"), "-ERR invalid BEAT {\"wid\":1}\r\n");
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\":\"w1\",\"current_state\":2}\r\n"),
                     "-ERR invalid BEAT {\"wid\":\"w1\",\"current_state\":2}\r\n");
    ck_assert_str_eq(feed(&a, "BEAT {\"wid\":\"w1\",\"rss_kb\":\"x\"}\r\n"),
                     "-ERR invalid BEAT {\"wid\":\"w1\",\"rss_kb\":\"x\"}\r\n");
    ck_assert_str_eq(feed(&a, "BEAT oops\r\n"), "-ERR invalid BEAT oops\r\n");
    ck_assert_str_eq(feed(&a, "BEAT\r\n"), "-ERR invalid BEAT\r\n");

    client_close(&a);
    ck_assert_uint_eq(w->connections, 1);
    client_close(&b);
    ck_assert_uint_eq(workers_count(core->workers), 0); /* the last connection closed */
    client_close(&p);
}
END_TEST

/* A line past the limit is answered and the connection closed; a partial
 * line waits for more. */
/* The text core keeps for jid. */
static const char *
job_text(const char *jid)
{
    struct job *j = fjobs_find(fs, jid, strlen(jid));
    ck_assert_ptr_nonnull(j);
    static char buf[2048];
    snprintf(buf, sizeof buf, "%.*s", (int)j->payload_len, j->payload);
    return buf;
}

/* Move the server's clock (and the core's) on by ms. */
static void
clock_on(uint64_t ms)
{
    now_ms += ms;
    core_advance(core, now_ms);
}

START_TEST(test_failures)
{
    struct client a;
    client_open(&a);
    ck_assert_str_eq(feed(&a, "HELLO {\"v\":2}\r\n"), "+OK\r\n");
    ck_assert_str_eq(feed(&a, "PUSH {\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":[0.1],"
                              "\"retry\":2,\"backtrace\":1,\"created_at\":\"c\"}\r\n"),
                     "+OK\r\n");
    const char *kept = "{\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":[0.1],\"retry\":2,"
                       "\"backtrace\":1,\"created_at\":\"c\",\"queue\":\"default\"}";
    ck_assert_str_eq(job_text("job-0001"), kept);
    const char *fetched = "{\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":[0.1],\"retry\":2,"
                          "\"backtrace\":1,\"created_at\":\"c\",\"queue\":\"default\","
                          "\"enqueued_at\":\"2023-11-14T22:13:20.000Z\"}";
    ck_assert_str_eq(feed(&a, "FETCH\r\n"), f_bulk(fetched));
    ck_assert_str_eq(feed(&a, "FAIL {\"jid\":\"job-0001\",\"errtype\":\"  E \",\"message\":\"\","
                              "\"backtrace\":[\"l1\",\"l2\"]}\r\n"),
                     "+OK\r\n");
    struct job *j = fjobs_find(fs, "job-0001", 8);
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_RETRY);
    /* 15 + 0 + rand(30) * 1 seconds */
    ck_assert_uint_ge(fjobs_due(fs, j), NOW + 15000);
    ck_assert_uint_le(fjobs_due(fs, j), NOW + 44000);
    json_t *job = json_loadb(j->payload, j->payload_len, 0, NULL);
    json_t *fail = json_object_get(job, "failure");
    char *hash = json_dumps(fail, JSON_COMPACT);
    char want[512];
    char next[32];
    fwp_time_format(fjobs_due(fs, j), next);
    snprintf(
        want, sizeof want,
        "{\"failed_at\":\"2023-11-14T22:13:20.000Z\",\"message\":\"unknown\",\"errtype\":\"E\","
        "\"backtrace\":[\"l1\"],\"retry_count\":0,\"remaining\":2,\"next_at\":\"%s\"}",
        next);
    ck_assert_str_eq(hash, want);
    free(hash);
    json_decref(job);
    /* the failure hash is the text's last member; the rest is as pushed */
    ck_assert_int_eq(strncmp(job_text("job-0001"), kept, strlen(kept) - 1), 0);
    ck_assert_str_eq(feed(&a, "FAIL {\"jid\":\"job-0001\"}\r\n"),
                     "-ERR Job not found job-0001\r\n");

    /* back in its queue at next_at; then its reservation runs out */
    clock_on(fjobs_due(fs, j) - now_ms);
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_ENQUEUED);
    ck_assert_str_eq(strstr(feed(&a, "FETCH default\r\n"), "\"failure\":{\"failed_at\"") != NULL
                         ? "found"
                         : "missing",
                     "found");
    clock_on(1800 * 1000);
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_RETRY);
    job = json_loadb(j->payload, j->payload_len, 0, NULL);
    fail = json_object_get(job, "failure");
    ck_assert_str_eq(json_string_value(json_object_get(fail, "errtype")), "ReservationExpired");
    ck_assert_str_eq(json_string_value(json_object_get(fail, "message")),
                     "Faktory job reservation expired");
    ck_assert_ptr_null(json_object_get(fail, "backtrace"));
    ck_assert_int_eq(json_integer_value(json_object_get(fail, "retry_count")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(fail, "remaining")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(fail, "failed_at")),
                     "2023-11-14T22:13:20.000Z");
    json_decref(job);
    ck_assert_uint_eq(fs->stats.failures, 2);

    /* out of retries: dead */
    clock_on(fjobs_due(fs, j) - now_ms);
    feed(&a, "FETCH\r\n");
    ck_assert_str_eq(feed(&a, "FAIL {\"jid\":\"job-0001\",\"message\":\"m\"}\r\n"), "+OK\r\n");
    ck_assert_int_eq(fjobs_state(fs, j), FJOB_DEAD);
    ck_assert_ptr_null(strstr(job_text("job-0001"), "next_at"));

    /* retry 0: dropped at the first failure */
    ck_assert_str_eq(
        feed(&a, "PUSH {\"jid\":\"job-0002\",\"jobtype\":\"t\",\"args\":[],\"retry\":0}\r\n"),
        "+OK\r\n");
    feed(&a, "FETCH\r\n");
    ck_assert_str_eq(feed(&a, "FAIL {\"jid\":\"job-0002\"}\r\n"), "+OK\r\n");
    ck_assert_ptr_null(fjobs_find(fs, "job-0002", 8));
    client_close(&a);
}
END_TEST

/* Errors of the job commands that the system tests do not reach, byte for
 * byte; none of them changes anything. */
START_TEST(test_job_errors)
{
    struct client a;
    client_open(&a);
    ck_assert_str_eq(feed(&a, "HELLO {\"v\":2}\r\n"), "+OK\r\n");
    ck_assert_str_eq(feed(&a, "FETCH ok bad!name\r\n"),
                     "-ERR FETCH: queue names must match \\A[a-zA-Z0-9._-]+\\z\r\n");
    char line[1200];
    memset(line, 0, sizeof line);
    strcpy(line, "MUTATE {\"cmd\":\"discard\",\"target\":\"dead\",\"filter\":{\"regexp\":\"");
    memset(line + strlen(line), 'x', 1025);
    strcat(line, "\"}}\r\n");
    ctx.max_line = sizeof line;
    ck_assert_str_eq(feed(&a, line), "-ERR regexp too long (at most 1024 bytes)\r\n");
    ck_assert_str_eq(feed(&a, "MUTATE {\"cmd\":\"discard\",\"target\":\"dead\","
                              "\"filter\":{\"regexp\":\"[z-a]\"}}\r\n"),
                     "-ERR invalid regexp\r\n");
    ck_assert_str_eq(feed(&a, "PUSH {\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":"
                              "[18446744073709551616],\"enqueued_at\":\"x\"}\r\n"),
                     "-ERR a job with enqueued_at or failure must not hold integers beyond 64 "
                     "bits\r\n");
    ck_assert_uint_eq(registry_count(core->space[fs->space].jobs), 0);
    /* without enqueued_at the same job is taken, its big integer kept */
    ck_assert_str_eq(feed(&a, "PUSH {\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":"
                              "[18446744073709551616]}\r\n"),
                     "+OK\r\n");
    client_close(&a);
}
END_TEST

START_TEST(test_line_limits)
{
    struct client c;
    client_open(&c);
    size_t n = c.f.len;
    ck_assert_str_eq(feed(&c, "HELLO {\"v\""), "");
    ck_assert_uint_eq(c.f.len, n);
    ck_assert(!c.f.closed);

    struct client d;
    client_open(&d);
    char line[300];
    memset(line, 'a', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    ck_assert_str_eq(feed(&d, line), "-ERR Line too long\r\n");
    ck_assert(d.f.closed);
    client_close(&c);
    client_close(&d);

    /* before HELLO a line may not be job-sized: 16 KiB */
    ctx.max_line = 1 << 20;
    struct client e;
    client_open(&e);
    static char hello[20000];
    memset(hello, ' ', sizeof hello - 1);
    memcpy(hello, "HELLO {", 7);
    ck_assert_str_eq(feed(&e, hello), "-ERR Line too long\r\n");
    ck_assert(e.f.closed);
    client_close(&e);
    /* a HELLO just under it, arriving in pieces, is taken: the input so
     * far is handed over again each time, as the connection does */
    struct client g;
    client_open(&g);
    memset(hello, ' ', sizeof hello);
    memcpy(hello, "HELLO {", 7);
    strcpy(hello + 16380, "}\r\n");
    size_t used = 0, need = 0;
    for (size_t have = 4096; used == 0; have = WQ_MIN(have + 4096, strlen(hello))) {
        used = fwp_protocol.handle(&ctx, g.state, &g.f.reply, hello, have, &need);
        ck_assert(used == 0 ? need == have + 1 : used == strlen(hello));
    }
    ck_assert_str_eq(g.f.out + strlen(g.f.out) - 5, "+OK\r\n");
    client_close(&g);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"password_hash", test_password_hash},
        {"handshake", test_handshake},
        {"bad_hello", test_bad_hello},
        {"hello_any_version_and_producers", test_hello_any_version_and_producers},
        {"password", test_password},
        {"password_rounds_by_version", test_password_rounds_by_version},
        {"password_delays", test_password_delays},
        {"workers_and_beat", test_workers_and_beat},
        {"failures", test_failures},
        {"job_errors", test_job_errors},
        {"line_limits", test_line_limits},
    };
    return unit_run(unit_suite_fixture("fwp", cases, WQ_ARRAY_LEN(cases), setup, teardown), NULL);
}
