/* check_cmd.c - unit tests for the Workq command handlers (src/cmd*.c)
 * through the protocol module the connection layer drives (cmd_protocol):
 * the real parser, dispatch and core, answering through a fake reply
 * (reply.h) instead of a connection.  Every error path is checked to the
 * byte, and the order in which arguments are validated. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/auth_guard.h"
#include "net/conn.h"
#include "engine/core.h"
#include "workq/proto.h"
#include "lib/registry.h"
#include "net/reply.h"
#include "fake_reply.h"
#include "unit.h"
#include "engine/workers.h"

#define NOW     1700000000000ULL
#define ID1     "6ba7b810-9dad-11d1-80b4-00c04fd430c1"
#define ID2     "6ba7b810-9dad-11d1-80b4-00c04fd430c2"
#define CE(msg) "-CLIENT-ERROR " msg "\r\n"
#define RO      "-SERVER-ERROR Read-only: command log write failed\r\n"

/* A client, and its parser state. */
struct client {
    struct fake f;
    _Alignas(16) char parser[256]; /* the module's state: room enough for it */
};

static struct cmd_ctx ctx;

/* The server's clock, connection count and log state, as ctx sees them. */
static uint64_t now_ms;
static const uint64_t clients = 1;
static bool readonly;

static void
setup(void)
{
    memset(&ctx, 0, sizeof ctx);
    ctx.core = core_new(NOW);
    now_ms = NOW;
    ctx.now_ms = &now_ms;
    ctx.started_ms = NOW;
    ctx.clients = &clients;
    readonly = false;
    ctx.readonly = &readonly;
    ctx.max_line = 200;
    ctx.max_payload = 16;
    ctx.auth_guard = auth_guard_new();
}

static void
teardown(void)
{
    core_free(ctx.core);
    auth_guard_free(ctx.auth_guard);
}

static void
client_open(struct client *c)
{
    ck_assert_uint_le(cmd_protocol.state_size, sizeof c->parser);
    fake_init(&c->f);
    c->f.clock = &now_ms;
    cmd_protocol.open(&ctx, c->parser, &c->f.reply);
}

static void
client_close(struct client *c)
{
    if (c->f.waiting != NULL)
        cmd_protocol.cancel(&ctx, c->f.waiting);
    cmd_protocol.close(&ctx, c->parser);
}

/* Feed input as a connection would (all of it at once, the unconsumed rest
 * again after each request) and return what was answered since. */
static const char *
feed(struct client *c, const char *input, size_t n)
{
    size_t start = c->f.len, off = 0;
    while (off < n && c->f.waiting == NULL && !c->f.closed) {
        size_t need = 0;
        size_t used =
            cmd_protocol.handle(&ctx, c->parser, &c->f.reply, input + off, n - off, &need);
        off += used;
        if (need > 0 && used == 0)
            break;
    }
    return c->f.out + start;
}

/* One client, one exchange: the reply to input. */
static const char *
ask(const char *input)
{
    static struct client c;
    client_open(&c);
    static char reply[sizeof c.f.out];
    snprintf(reply, sizeof reply, "%s", feed(&c, input, strlen(input)));
    client_close(&c);
    return reply;
}

struct exchange {
    const char *in, *out;
};

/* Each input, on a fresh client, gets exactly its reply. */
static void
require_exchanges(const struct exchange *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *got = ask(x[i].in);
        ck_assert_msg(strcmp(got, x[i].out) == 0, "%zu: \"%s\"\n got  \"%s\"\n want \"%s\"", i,
                      x[i].in, got, x[i].out);
    }
}

/* add checks its arguments left to right, then its flags in order; the
 * first failure is the reply and nothing is stored. */
START_TEST(test_add_validation_order)
{
    static const struct exchange x[] = {
        {"add bad q 0 -prioirty=5 0\r\n", CE("Invalid command args")},
        {"add bad q 0 0 x -prioirty=5\r\n", CE("Invalid payload size")},
        {"add bad q 0 0 1 -prioirty=5\r\nx\r\n", CE("Invalid ID")},
        {"add " ID1 " b@d 0 0 1 -prioirty=5\r\nx\r\n", CE("Invalid Name")},
        {"add " ID1 " q 0 0 1 -prioirty=5\r\nx\r\n", CE("Invalid TTR")},
        {"add " ID1 " q 86400001 1 1\r\nx\r\n", CE("Invalid TTR")},
        {"add " ID1 " q 1 0 1 -prioirty=5\r\nx\r\n", CE("Invalid TTL")},
        {"add " ID1 " q 1 1 1 -prioirty=5\r\nx\r\n", CE("Invalid command flags")},
        {"add " ID1 " q 1 1 1 -priority=x -max-fails=999\r\nx\r\n", CE("Invalid Priority")},
        {"add " ID1 " q 1 1 1 -max-fails=999 -priority=x\r\nx\r\n", CE("Invalid Max Fails")},
        {"add " ID1 " q 1 1 1 -max-attempts=256\r\nx\r\n", CE("Invalid Max Attempts")},
        {"add " ID1 " q 1 1 1 -priority=1 -priority=2\r\nx\r\n", CE("Invalid command flags")},
        {"add " ID1 " q 1 1 +1\r\nx\r\n", CE("Invalid payload size") CE("Unknown command")},
        {"add " ID1 " q 1 1 17\r\n01234567890123456\r\n", CE("Invalid payload size")},
        {"add " ID1 " q 1 1 1\r\nx\r\n", "+OK\r\n"},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
    ck_assert_uint_eq(core_job_count(ctx.core), 1);
    ck_assert_str_eq(ask("add " ID1 " q 1 1 1\r\ny\r\n"), CE("Duplicate job"));
}
END_TEST

/* The result of complete is a payload (its size error says so); fail's is
 * a result. */
START_TEST(test_finish_errors)
{
    static const struct exchange x[] = {
        {"complete " ID1 " 2\r\nabc\n", CE("Invalid payload size")},
        {"complete " ID1 " 17\r\n01234567890123456\r\n", CE("Invalid payload size")},
        {"fail " ID1 " 2\r\nabc\n", CE("Invalid result size")},
        {"fail " ID1 " x\r\nabc\r\n", CE("Invalid result size") CE("Unknown command")},
        {"complete bad 1\r\nx\r\n", CE("Invalid ID")},
        {"complete " ID1 " 1\r\nx\r\n", "-NOT-FOUND\r\n"},
        {"fail " ID1 " 1 -x=1\r\nx\r\n", CE("Invalid command args")},
        {"complete " ID1 "\r\n", CE("Invalid command args")},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
    ck_assert_str_eq(ask("add " ID1 " q 1000 60000 1\r\np\r\n"), "+OK\r\n");
    ck_assert_str_eq(ask("complete " ID1 " 2\r\nok\r\n"), "+OK\r\n");
    ck_assert_str_eq(ask("fail " ID1 " 0\r\n\r\n"), CE("Duplicate result"));
    ck_assert_str_eq(ask("result " ID1 " 0\r\n"), "+OK 1\r\n" ID1 " 1 2\r\nok\r\n");
}
END_TEST

/* The other commands' error paths. */
START_TEST(test_other_errors)
{
    static const struct exchange x[] = {
        {"lease q\r\n", CE("Invalid command args")},
        {"lease b@d 0\r\n", CE("Invalid Name")},
        {"lease q 86400001\r\n", CE("Invalid wait timeout")},
        {"lease q 0\r\n", "-TIMEOUT\r\n"},
        {"delete " ID2 "\r\n", "-NOT-FOUND\r\n"},
        {"delete x\r\n", CE("Invalid ID")},
        {"result " ID2 " x\r\n", CE("Invalid wait timeout")},
        {"result " ID2 " 0\r\n", "-NOT-FOUND\r\n"},
        {"inspect\r\n", CE("Invalid command args")},
        {"inspect nothing\r\n", CE("Unknown command")},
        {"inspect queue q\r\n", "-NOT-FOUND\r\n"},
        {"inspect queues 0 0\r\n", CE("Invalid limit")},
        {"inspect jobs q x 1\r\n", CE("Invalid cursor offset")},
        {"frobnicate\r\n", CE("Unknown command")},
        {"   \r\n\r\n", ""},
        {"run " ID1 " q 1000 0 1\r\nx\r\n", "-TIMEOUT\r\n"},
        {"schedule " ID1 " q 1000 1000 2000-01-01T00:00:00Z 1\r\nx\r\n", CE("Invalid Time")},
        {"schedule " ID1 " q 1000 1000 2000-13-01T00:00:00Z 1\r\nx\r\n", CE("Invalid Time")},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
}
END_TEST

/* worker quiet|terminate <wid> and inspect workers, on the registry. */
START_TEST(test_workers)
{
    static const struct exchange x[] = {
        {"worker quiet\r\n", CE("Invalid command args")},
        {"worker quiet w1 -x=1\r\n", CE("Invalid command args")},
        {"worker nap w1\r\n", CE("Invalid worker action")},
        {"worker quiet a\tb\r\n", CE("Invalid wid")},
        {"worker terminate w2\r\n", "-NOT-FOUND\r\n"},
        {"inspect workers 0 10\r\n", "+OK 0\r\n"},
        {"inspect workers 0 0\r\n", CE("Invalid limit")},
        {"inspect workers x 1\r\n", CE("Invalid cursor offset")},
        {"inspect workers 0\r\n", CE("Invalid command args")},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
    struct worker *w1 = workers_attach(ctx.core->workers, "w1", 2, "host\r\n", 42, "[\"a\"]",
                                       WORKER_FAKTORY, "10.0.0.1:5", NOW);
    workers_attach(ctx.core->workers, "w0", 2, "", 0, "[]", WORKER_FAKTORY, "", NOW + 1000);
    ck_assert_str_eq(ask("worker quiet w1\r\n"), "+OK\r\n");
    ck_assert_int_eq(w1->state, WORKER_QUIET);
    ck_assert_str_eq(ask("worker terminate w1\r\n"), "+OK\r\n");
    ck_assert_str_eq(ask("worker quiet w1\r\n"), "+OK\r\n"); /* terminate is final */
    ck_assert_int_eq(w1->state, WORKER_TERMINATE);
#define W1                                                                                         \
    "w1 12\r\nhostname host??\r\npid 42\r\nlabels [\"a\"]\r\nconnections 1\r\n"                    \
    "last-beat 2023-11-14T22:13:20Z\r\nstate terminate\r\nkind faktory\r\n"                        \
    "address 10.0.0.1:5\r\nconnected 2023-11-14T22:13:20Z\r\nlast-command \r\nwaiting-on \r\n"     \
    "jobs 0\r\n"
    ck_assert_str_eq(ask("inspect workers 0 10\r\n"),
                     "+OK 2\r\n"
                     "w0 12\r\nhostname \r\npid 0\r\nlabels []\r\nconnections 1\r\n"
                     "last-beat 2023-11-14T22:13:21Z\r\nstate running\r\nkind faktory\r\n"
                     "address \r\nconnected 2023-11-14T22:13:21Z\r\nlast-command \r\n"
                     "waiting-on \r\njobs 0\r\n" W1);
    ck_assert_str_eq(ask("inspect workers 1 1\r\n"), "+OK 1\r\n" W1);
    ck_assert_str_eq(ask("inspect workers 2 1\r\n"), "+OK 0\r\n");
}
END_TEST

/* While the log cannot be written, changes are refused once their
 * arguments are valid; reads go on. */
START_TEST(test_readonly)
{
    readonly = true;
    static const struct exchange x[] = {
        {"add bad q 1 1 1\r\nx\r\n", CE("Invalid ID")},
        {"add " ID1 " q 1 1 1\r\nx\r\n", RO},
        {"schedule " ID1 " q 1 60000 2000-01-01T00:00:00Z 1\r\nx\r\n", CE("Invalid Time")},
        {"schedule " ID1 " q 1 60000 2099-01-01T00:00:00Z 1\r\nx\r\n", RO},
        {"lease q 0\r\n", RO},
        {"complete " ID1 " 1\r\nx\r\n", RO},
        {"fail " ID1 " 1\r\nx\r\n", RO},
        {"delete " ID1 "\r\n", RO},
        {"result " ID1 " 0\r\n", "-NOT-FOUND\r\n"},
        {"inspect queue q\r\n", "-NOT-FOUND\r\n"},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
    ck_assert_uint_eq(core_job_count(ctx.core), 0);
}
END_TEST

/* A lease with nothing ready parks its client; a job that arrives is
 * answered to it, and its client woken. */
START_TEST(test_lease_parks)
{
    struct client worker, client;
    client_open(&worker);
    client_open(&client);
    const char *in = "lease q 5000\r\ninspect queue q\r\n";
    ck_assert_str_eq(feed(&worker, in, strlen(in)), "");
    ck_assert_ptr_nonnull(worker.f.waiting);
    const char *add = "add " ID1 " q 1000 60000 2\r\nhi\r\n";
    ck_assert_str_eq(feed(&client, add, strlen(add)), "+OK\r\n");
    ck_assert_ptr_null(worker.f.waiting);
    ck_assert_int_eq(worker.f.wakes, 1);
    ck_assert_str_eq(worker.f.out, "+OK 1\r\n" ID1 " q 1000 2\r\nhi\r\n");
    /* woken, it goes on with what it had sent */
    const char *rest = strstr(in, "inspect");
    ck_assert_str_eq(feed(&worker, rest, strlen(rest)),
                     "+OK 1\r\nq 2\r\nready-len 0\r\nscheduled-len 0\r\n");
    client_close(&worker);
    client_close(&client);
}
END_TEST

/* A client that leaves while parked is withdrawn: the job it would have
 * got stays ready. */
START_TEST(test_cancelled_lease)
{
    struct client worker;
    client_open(&worker);
    ck_assert_str_eq(feed(&worker, "lease q 5000\r\n", 14), "");
    ck_assert_ptr_nonnull(worker.f.waiting);
    client_close(&worker);
    ck_assert_str_eq(ask("add " ID1 " q 1000 60000 1\r\nx\r\n"), "+OK\r\n");
    ck_assert_str_eq(ask("lease q 0\r\n"), "+OK 1\r\n" ID1 " q 1000 1\r\nx\r\n");
}
END_TEST

/* A line past the limit ends the connection: the error, then close. */
START_TEST(test_line_too_long_closes)
{
    struct client f;
    client_open(&f);
    char line[300];
    memset(line, 'a', sizeof line);
    ck_assert_str_eq(feed(&f, line, sizeof line), CE("Line too long"));
    ck_assert(f.f.closed);
    client_close(&f);
}
END_TEST

/* With a password, every request but auth answers "Authentication
 * required" and changes nothing: data blocks are read and dropped, and
 * requests that do not parse get it too; the right password opens the
 * connection, and a wrong one on an open connection does not close it. */
START_TEST(test_auth_required)
{
    ctx.auth = cmd_auth_new("s3cret");
    static const char *const refused[] = {
        "add " ID1 " q 1000 60000 5\r\nhello\r\n",
        "schedule " ID1 " q 1000 60000 2016-01-02T15:04:05Z 1\r\nx\r\n",
        "run " ID1 " q 1000 60000 1\r\nx\r\n",
        "result " ID1 " 10\r\n",
        "lease q 10\r\n",
        "complete " ID1 " 1\r\nx\r\n",
        "fail " ID1 " 1\r\nx\r\n",
        "delete " ID1 "\r\n",
        "inspect server\r\n",
        "worker quiet w1\r\n",
        "touch " ID1 "\r\n",
        "cancel " ID1 "\r\n",
        "wait 10 " ID1 "\r\n",
        "hello w1\r\n",
        "bogus\r\n",
        "add\r\n",
        "add " ID1 " q 1000 60000 x\r\n",
        "add " ID1 " q 1000 60000 20\r\n01234567890123456789\r\n",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(refused); i++)
        ck_assert_msg(strcmp(ask(refused[i]), CE("Authentication required")) == 0, "%zu: %s", i,
                      ask(refused[i]));
    ck_assert_uint_eq(registry_count(core_ids(ctx.core)->jobs), 0);

    struct client c;
    client_open(&c);
    const char *in = "auth\r\nauth a b\r\nauth wrong\r\n";
    ck_assert_str_eq(feed(&c, in, strlen(in)),
                     CE("Invalid command args") CE("Invalid command args") CE("Invalid password"));
    ck_assert_uint_eq(c.f.paused_ms, auth_guard_delay_ms(1));
    in = "auth s3cret\r\nadd " ID1 " q 1000 60000 1\r\nx\r\nauth wrong\r\nresult " ID1 " 0\r\n";
    ck_assert_str_eq(feed(&c, in, strlen(in)),
                     "+OK\r\n+OK\r\n" CE("Invalid password") "-TIMEOUT\r\n");
    ck_assert_uint_eq(c.f.paused_ms, auth_guard_delay_ms(1) + auth_guard_delay_ms(1));
    client_close(&c);
    ck_assert_uint_eq(registry_count(core_ids(ctx.core)->jobs), 1);
    cmd_auth_free(ctx.auth);
}
END_TEST

/* Each failure from one address waits twice as long as the one before, up
 * to 10 s; a right password forgives them; another address starts afresh. */
START_TEST(test_auth_delays)
{
    ck_assert_uint_eq(auth_guard_delay_ms(1), 250);
    ck_assert_uint_eq(auth_guard_delay_ms(2), 500);
    ck_assert_uint_eq(auth_guard_delay_ms(6), 8000);
    ck_assert_uint_eq(auth_guard_delay_ms(7), 10000);
    ck_assert_uint_eq(auth_guard_delay_ms(100000), 10000);

    ctx.auth = cmd_auth_new("-x=y"); /* looks like a flag: still a password */
    struct client c;
    client_open(&c);
    for (int i = 1; i <= 3; i++) {
        uint64_t before = c.f.paused_ms;
        ck_assert_str_eq(feed(&c, "auth nope\r\n", 11), CE("Invalid password"));
        ck_assert_uint_eq(c.f.paused_ms - before, auth_guard_delay_ms((uint32_t)i));
    }
    ck_assert_str_eq(feed(&c, "auth -x=y\r\n", 11), "+OK\r\n");
    uint64_t before = c.f.paused_ms;
    ck_assert_str_eq(feed(&c, "auth nope\r\n", 11), CE("Invalid password"));
    ck_assert_uint_eq(c.f.paused_ms - before, auth_guard_delay_ms(1));
    /* the record of failures outlives a SIGHUP's new password */
    cmd_auth_set_password(ctx.auth, "other");
    before = c.f.paused_ms;
    ck_assert_str_eq(feed(&c, "auth -x=y\r\n", 11), CE("Invalid password"));
    ck_assert_uint_eq(c.f.paused_ms - before, auth_guard_delay_ms(2));
    ck_assert_str_eq(feed(&c, "auth other\r\n", 12), "+OK\r\n");
    client_close(&c);
    cmd_auth_free(ctx.auth);
}
END_TEST

/* Parallel connections from one address guess no faster than one: while
 * its delay runs, no password of its is checked (the right one neither):
 * each is refused when the delay ends. */
START_TEST(test_auth_parallel)
{
    ctx.auth = cmd_auth_new("s3cret");
    struct client a, b;
    client_open(&a);
    client_open(&b);
    a.f.clock = b.f.clock = NULL; /* side by side: the test moves the time */
    ck_assert_str_eq(feed(&a, "auth nope\r\n", 11), CE("Invalid password"));
    ck_assert_uint_eq(a.f.paused_ms, 250);
    now_ms += 100;
    ck_assert_str_eq(feed(&b, "auth s3cret\r\n", 13), CE("Invalid password"));
    ck_assert_uint_eq(b.f.paused_ms, 150);
    ck_assert_str_eq(feed(&b, "inspect server\r\n", 16), CE("Authentication required"));
    now_ms += 150;
    ck_assert_str_eq(feed(&b, "auth s3cret\r\n", 13), "+OK\r\n");
    ck_assert_uint_eq(b.f.paused_ms, 150);
    /* forgiven: a's next failure is its address's first again */
    ck_assert_str_eq(feed(&a, "auth nope\r\n", 11), CE("Invalid password"));
    ck_assert_uint_eq(a.f.paused_ms, 500);
    client_close(&a);
    client_close(&b);
    cmd_auth_free(ctx.auth);
}
END_TEST

/* help lists every command with its arguments as one record; quit
 * answers +OK and closes; both work before auth, nothing else does. */
START_TEST(test_help_and_quit)
{
    ctx.auth = cmd_auth_new("s3cret");
    struct client c;
    client_open(&c);
    const char *help = feed(&c, "help\r\n", 6);
    ck_assert_msg(strncmp(help, "+OK 1\r\nhelp 18\r\nadd <id> <name> <ttr> <ttl> <size> [", 47) ==
                      0,
                  "%s", help);
    ck_assert_ptr_nonnull(strstr(help, "\r\nlease <name>... <wait-timeout> [-fencing=1]\r\n"));
    ck_assert_ptr_nonnull(strstr(help, "\r\nauth <password>\r\nhelp\r\nquit\r\n"));
    int lines = 0;
    for (const char *p = help; (p = strstr(p, "\r\n")) != NULL; p += 2)
        lines++;
    ck_assert_int_eq(lines, 2 + 18);
    /* a malformed one is refused as any request before auth is */
    ck_assert_str_eq(feed(&c, "help me\r\n", 9), CE("Authentication required"));
    ck_assert_str_eq(feed(&c, "inspect server\r\n", 16), CE("Authentication required"));
    ck_assert(!c.f.closed);
    ck_assert_str_eq(feed(&c, "quit\r\n", 6), "+OK\r\n");
    ck_assert(c.f.closed);
    client_close(&c);
    cmd_auth_free(ctx.auth);
}
END_TEST

/* Without -password-file, auth is an error and nothing needs it. */
START_TEST(test_auth_not_enabled)
{
    static const struct exchange x[] = {
        {"auth x\r\n", CE("Authentication not enabled")},
        {"auth\r\n", CE("Invalid command args")},
        {"result " ID1 " 0\r\n", "-NOT-FOUND\r\n"},
    };
    require_exchanges(x, WQ_ARRAY_LEN(x));
}
END_TEST

/* A password file's line must be one word of printable ASCII. */
START_TEST(test_auth_valid_password)
{
    ck_assert(cmd_auth_valid_password("s3cret!"));
    ck_assert(!cmd_auth_valid_password(""));
    ck_assert(!cmd_auth_valid_password("two words"));
    ck_assert(!cmd_auth_valid_password("tab\there"));
    ck_assert(!cmd_auth_valid_password("del\x7f"));
    char long_one[CMD_AUTH_MAX_PASSWORD + 2];
    memset(long_one, 'a', sizeof long_one);
    long_one[CMD_AUTH_MAX_PASSWORD] = '\0';
    ck_assert(cmd_auth_valid_password(long_one));
    long_one[CMD_AUTH_MAX_PASSWORD] = 'a';
    long_one[CMD_AUTH_MAX_PASSWORD + 1] = '\0';
    ck_assert(!cmd_auth_valid_password(long_one));
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"add_validation_order", test_add_validation_order},
        {"finish_errors", test_finish_errors},
        {"other_errors", test_other_errors},
        {"readonly", test_readonly},
        {"workers", test_workers},
        {"lease_parks", test_lease_parks},
        {"cancelled_lease", test_cancelled_lease},
        {"line_too_long_closes", test_line_too_long_closes},
        {"auth_required", test_auth_required},
        {"auth_delays", test_auth_delays},
        {"auth_parallel", test_auth_parallel},
        {"help_and_quit", test_help_and_quit},
        {"auth_not_enabled", test_auth_not_enabled},
        {"auth_valid_password", test_auth_valid_password},
    };
    return unit_run(unit_suite_fixture("cmd", cases, WQ_ARRAY_LEN(cases), setup, teardown), NULL);
}
