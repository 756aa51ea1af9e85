/* check_conn.c - unit tests for the connection layer (src/net/conn.c) with a
 * protocol of the test's own, plugged in as any module is (conn.h), over
 * socket pairs and a real libevent loop.  The toy protocol greets, counts
 * each connection's requests in its own state, parks one client until
 * another wakes it, closes after a reply, and logs a record whose reply
 * the layer must hold until the command log has written it.  A transport
 * hook wraps the socket in a filter that upper-cases what is sent. */
#include "lib/wq.h"
#include "net/conn.h"

#include <check.h>
#include <ctype.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "store/cmdlog.h"
#include "engine/core.h"
#include "unit.h"

#define NOW 1700000000000ULL

/* The toy protocol's server-wide state. */
struct toy {
    struct reply *parked;  /* the client waiting in "wait" */
    struct cmdlog *cmdlog; /* for "rec" */
    int cancels;           /* waits withdrawn because the client left */
    int closes;            /* connections gone */
};

/* A connection's state. */
struct toy_state {
    unsigned requests;
};

static void
toy_open(void *ctx, void *state, struct reply *out)
{
    reply_str(out, "hello\n");
}

/* One request a line: ping, wait, go, bye, rec. */
static size_t
toy_handle(void *ctx, void *state, struct reply *out, const char *in, size_t len, size_t *need)
{
    struct toy *t = ctx;
    struct toy_state *st = state;
    const char *lf = memchr(in, '\n', len);
    if (lf == NULL) {
        *need = len + 1;
        return 0;
    }
    size_t n = (size_t)(lf - in);
    char word[16];
    snprintf(word, sizeof word, "%.*s", (int)WQ_MIN(n, sizeof word - 1), in);
    st->requests++;
    if (strcmp(word, "ping") == 0) {
        char line[32];
        snprintf(line, sizeof line, "pong %u\n", st->requests);
        reply_str(out, line);
    } else if (strcmp(word, "wait") == 0) {
        t->parked = out;
        reply_park(out, t);
    } else if (strcmp(word, "go") == 0) {
        if (t->parked != NULL) {
            reply_str(t->parked, "go\n");
            reply_wake(t->parked);
            t->parked = NULL;
        }
        reply_str(out, "ok\n");
    } else if (strcmp(word, "bye") == 0) {
        reply_str(out, "bye\n");
        reply_close(out);
    } else if (strcmp(word, "rec") == 0) {
        struct cmdlog_rec r = {.code = CMDLOG_DELETE, .at_ms = (int64_t)NOW};
        cmdlog_append(t->cmdlog, &r);
        reply_str(out, "rec\n");
    } else {
        reply_str(out, "what\n");
    }
    *need = 0;
    return n + 1;
}

static void
toy_cancel(void *ctx, void *waiting)
{
    struct toy *t = waiting;
    t->parked = NULL;
    t->cancels++;
}

static void
toy_close(void *ctx, void *state)
{
    ((struct toy *)ctx)->closes++;
}

static const struct conn_proto toy_proto = {
    .name = "toy",
    .state_size = sizeof(struct toy_state),
    .open = toy_open,
    .handle = toy_handle,
    .cancel = toy_cancel,
    .close = toy_close,
};

/* ---- the loop around it ---- */

static struct event_base *base;
static struct conn_set *set;
static struct toy toy;
static struct conn_service svc;
static int gone;

static uint64_t
hook_begin(void *arg)
{
    return NOW;
}

static void
hook_end(void *arg)
{
}

static void
hook_gone(void *arg)
{
    gone++;
}

static void
setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the server does */
    base = event_base_new();
    const struct conn_hooks hooks = {NULL, hook_begin, hook_end, hook_gone};
    set = conn_set_new(base, &hooks, sizeof(struct toy_state));
    memset(&toy, 0, sizeof toy);
    svc =
        (struct conn_service){.proto = &toy_proto, .ctx = &toy, .pull_min = 64, .max_request = 64};
    gone = 0;
}

static void
teardown(void)
{
    conn_set_free(set);
    event_base_free(base);
}

/* A client: the test's end of a socket pair whose other end is served. */
static int
client(void)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    conn_new(set, &svc, sv[1]);
    return sv[0];
}

static void
say(int fd, const char *text)
{
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* Run the loop until fd has received exactly want (or EOF, when want ends
 * in "<EOF>"); fail after 5 s. */
static void
expect(int fd, const char *want)
{
    char got[256] = "";
    size_t n = 0;
    bool eof_wanted = strstr(want, "<EOF>") != NULL;
    for (int i = 0; i < 5000; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        ssize_t r = read(fd, got + n, sizeof got - 1 - n);
        if (r > 0)
            n += (size_t)r;
        else if (r == 0 && eof_wanted) {
            snprintf(got + n, sizeof got - n, "<EOF>");
            n += 5;
        }
        got[n] = '\0';
        if (strcmp(got, want) == 0)
            return;
        if (n >= strlen(want) || r == 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 1);
    }
    ck_abort_msg("got \"%s\", want \"%s\"", got, want);
}

/* Nothing more arrives while the loop runs a little. */
static void
expect_nothing(int fd)
{
    for (int i = 0; i < 20; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        char b;
        ck_assert_int_lt(read(fd, &b, 1), 0);
        usleep(1000);
    }
}

/* ---- tests ---- */

/* A new client is greeted; each connection counts its own requests. */
START_TEST(test_greets_and_keeps_state)
{
    int a = client(), b = client();
    ck_assert_uint_eq(conn_count(set), 2);
    expect(a, "hello\n");
    expect(b, "hello\n");
    say(a, "ping\nping\n");
    expect(a, "pong 1\npong 2\n");
    say(b, "pi");
    expect_nothing(b);
    say(b, "ng\n");
    expect(b, "pong 1\n");
    close(a);
    close(b);
}
END_TEST

/* A parked client takes no input until it is woken; then it goes on with
 * what it had sent. */
START_TEST(test_parks_until_woken)
{
    int a = client(), b = client();
    expect(a, "hello\n");
    expect(b, "hello\n");
    say(a, "wait\nping\n");
    expect_nothing(a);
    say(b, "go\n");
    expect(b, "ok\n");
    expect(a, "go\npong 2\n");
    close(a);
    close(b);
}
END_TEST

/* A client that leaves while parked has its wait withdrawn, and its
 * connection goes. */
START_TEST(test_leaving_client_cancelled)
{
    int a = client();
    expect(a, "hello\n");
    say(a, "wait\n");
    expect_nothing(a);
    close(a);
    for (int i = 0; i < 100 && gone == 0; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    ck_assert_int_eq(toy.cancels, 1);
    ck_assert_int_eq(toy.closes, 1);
    ck_assert_int_eq(gone, 1);
    ck_assert_uint_eq(conn_count(set), 0);
}
END_TEST

/* A protocol that closes after a reply: the reply arrives, then the end;
 * what followed is never answered. */
START_TEST(test_closes_after_reply)
{
    int a = client();
    expect(a, "hello\n");
    say(a, "bye\nping\n");
    expect(a, "bye\n<EOF>");
    close(a);
}
END_TEST

/* A transport wraps the socket: here a filter that upper-cases output. */
static enum bufferevent_filter_result
upper_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
          enum bufferevent_flush_mode mode, void *arg)
{
    size_t n = evbuffer_get_length(src);
    unsigned char *p = evbuffer_pullup(src, (ev_ssize_t)n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)toupper(p[i]);
    evbuffer_add_buffer(dst, src);
    return BEV_OK;
}

static struct bufferevent *
upper_transport(struct event_base *b, int fd, void *arg)
{
    struct bufferevent *raw = bufferevent_socket_new(b, fd, BEV_OPT_CLOSE_ON_FREE);
    return bufferevent_filter_new(raw, NULL, upper_out, BEV_OPT_CLOSE_ON_FREE, NULL, NULL);
}

START_TEST(test_transport_hook)
{
    svc.transport = upper_transport;
    int a = client();
    expect(a, "HELLO\n");
    say(a, "ping\nbye\n");
    expect(a, "PONG 1\nBYE\n<EOF>");
    close(a);
}
END_TEST

/* A reply made after a record was appended waits until the log has
 * written it, and so do the replies after it on that connection, and the
 * replies of others made meanwhile (they may show what it changed). */
START_TEST(test_replies_held_for_the_log)
{
    char dir[] = "/tmp/wq-conn-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct cmdlog_config cfg = {.dir = dir, .seg_size = 1 << 20, .sync = CMDLOG_SYNC_OS};
    toy.cmdlog = cmdlog_open(&cfg);
    ck_assert_ptr_nonnull(toy.cmdlog);
    struct core *core = core_new(NOW);
    ck_assert_int_eq(cmdlog_replay(toy.cmdlog, &core_replay_ops, core, NOW), 0);
    conn_set_cmdlog(set, toy.cmdlog);

    int a = client(), b = client();
    expect(a, "hello\n");
    expect(b, "hello\n");
    say(a, "rec\nping\n");
    expect_nothing(a);
    say(b, "go\n");
    expect_nothing(b);
    ck_assert_int_eq(cmdlog_write(toy.cmdlog), 0);
    conn_release_held(set, cmdlog_released(toy.cmdlog));
    expect(a, "rec\npong 2\n");
    expect(b, "ok\n");
    say(b, "ping\n"); /* nothing unwritten now: at once */
    expect(b, "pong 2\n");
    close(a);
    close(b);
    conn_set_free(set);
    set = NULL;
    cmdlog_close(toy.cmdlog);
    core_free(core);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    const struct conn_hooks hooks = {NULL, hook_begin, hook_end, hook_gone};
    set = conn_set_new(base, &hooks, sizeof(struct toy_state));
}
END_TEST

/* Closing everything writes what is due first; idle connections that wait
 * for nothing are closed, parked ones are not. */
START_TEST(test_close_all_and_idle)
{
    int a = client(), b = client();
    expect(a, "hello\n");
    expect(b, "hello\n");
    say(b, "wait\n");
    expect_nothing(b);
    conn_close_idle(set, UINT64_MAX, UINT64_MAX); /* a is idle, b waits */
    expect(a, "<EOF>");
    ck_assert_uint_eq(conn_count(set), 1);
    conn_close_all(set);
    expect(b, "<EOF>");
    ck_assert_int_eq(toy.cancels, 1);
    ck_assert_uint_eq(conn_count(set), 0);
    close(a);
    close(b);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"greets_and_keeps_state", test_greets_and_keeps_state},
        {"parks_until_woken", test_parks_until_woken},
        {"leaving_client_cancelled", test_leaving_client_cancelled},
        {"closes_after_reply", test_closes_after_reply},
        {"transport_hook", test_transport_hook},
        {"replies_held_for_the_log", test_replies_held_for_the_log},
        {"close_all_and_idle", test_close_all_and_idle},
    };
    return unit_run(unit_suite_fixture("conn", cases, WQ_ARRAY_LEN(cases), setup, teardown), NULL);
}
