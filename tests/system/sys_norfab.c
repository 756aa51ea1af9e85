/* sys_norfab.c - system tests of NORFAB's broker (-norfab-listen): the real
 * workq-server, with clients and workers that are ZeroMQ DEALER sockets
 * sending the frames NORFAB's own client and worker send:
 * a client ["", "NFPC01", CMD, service, target, uuid, body], a worker
 * ["", "NFPW01", "0x01", service] (READY), KEEPALIVE, DISCONNECT, and
 * ["", "NFPW01", "0x05", client, "", uuid, status, body] (RESPONSE, EVENT).
 * Every message is checked frame for frame, and the bodies the broker
 * writes (202, 400, the management service's) byte for byte where it
 * defines them.
 *
 * The groups: dispatch (POST to any turn by turn, to all, to a name, to
 * names separated by commas, to a JSON list; GET, DELETE and PUT to a list
 * with a worker gone; 400 for no worker), relay (RESPONSE and EVENT back
 * to the client verbatim), forms (commands as NORFAB's "0x04" or the
 * protocol text's byte 0x04, each peer answered in its own), heartbeat
 * (KEEPALIVE to ready workers, silent workers dead, live ones kept),
 * disconnect (DISCONNECT both ways, unexpected commands), malformed
 * messages (dropped, the server unharmed), mmi (mmi.service.broker over
 * MMI, GET and POST), load (10 clients, 20 workers, 5000 POSTs, none lost
 * or doubled), and the process (exit status, no listener without
 * -norfab-listen, tls:// refused).  The POSTs as jobs: queue ("any" and
 * "all" waiting for a worker, GET and DELETE of a queued POST,
 * -norfab-queue-ttl), resend (an unanswered "any" job to another worker
 * after a DISCONNECT or a death, never a named one or one answered),
 * results (the final 200s kept for GETs, -norfab-result-ttl), persist
 * (kill -9 and SIGTERM with a command log), curve (CURVE and its ZAP
 * handler, the key files), figures (inspect workers and server, /metrics)
 * memory (-max-memory) and readonly (the command log cannot be
 * written).
 *
 * Every test ends with SIGTERM and expects exit status 0: behind
 * WQ_SERVER_WRAPPER (valgrind --error-exitcode) that is also where memory
 * errors and leaks show; waits are scaled by WQ_TEST_SLOW, and what
 * checks how soon something happens runs only without a wrapper. */
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
#include <unistd.h>
#include <zmq.h>

#include "systest.h"

#define MMI_SVC "mmi.service.broker"
#define SVC     "nornir"
#define NFPB    "NFPB01"
#define NFPC    "NFPC01"
#define NFPW    "NFPW01"

/* The 400 bodies' error texts. */
#define NO_WORKER        "the service has no worker"
#define NOT_WORKERS(num) num " of the workers the target names are not workers of the service"

/* A message has at most this many frames here. */
#define MAX_FRAMES 96

static struct systest_proc srv;
static int nport;       /* the NORFAB listener */
static int mport;       /* the metrics listener (start_metrics) */
static void *zctx;      /* this test's ZeroMQ context */
static void *socks[64]; /* every socket, closed by stop() */
static size_t nsocks;
static void *admin;                /* the helpers' own client (mmi()) */
static unsigned long long uuid_no; /* the last uuid() */

/* A test of timing only returns under a wrapper: ten times slower under
 * valgrind, and the sanitizers' run covers its memory. */
#define TIMING_ONLY()                                                                              \
    do {                                                                                           \
        if (systest_wrapped())                                                                     \
            return;                                                                                \
    } while (0)

/* ------------------------------------------------------------------------ */
/* The server */

/* Start a server with a Workq and a NORFAB listener and the options of
 * extra (NULL terminated; NULL: none). */
static void
start_with(const char *const *extra)
{
    const char *args[32] = {"-listen", "127.0.0.1:0", "-norfab-listen", "127.0.0.1:0"};
    size_t n = 4;
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i++) {
        ck_assert_uint_lt(n, 31);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    nport = systest_proc_port(&srv, "norfab");
    zctx = zmq_ctx_new();
    ck_assert_ptr_nonnull(zctx);
    nsocks = 0;
    admin = NULL;
}

static void
start(void)
{
    start_with(NULL);
}

/* Start with -norfab-keepalive-ms ms and -norfab-liveness liveness. */
static void
start_heartbeat(int ms, int liveness)
{
    const char *extra[] = {"-norfab-keepalive-ms", f("%d", ms), "-norfab-liveness",
                           f("%d", liveness), NULL};
    start_with(extra);
}

/* Close every socket, SIGTERM the server and expect exit status 0. */
static void
stop(void)
{
    for (size_t i = 0; i < nsocks; i++)
        zmq_close(socks[i]);
    nsocks = 0;
    admin = NULL;
    zmq_ctx_term(zctx);
    zctx = NULL;
    systest_proc_stop(&srv);
    systest_untrack_pid(srv.s.pid);
    systest_proc_free(&srv);
}

/* The end of what the server wrote to stderr, for a failure message. */
static const char *
server_said(void)
{
    while (systest_proc_pump(&srv, 0))
        ;
    size_t n = srv.err.p != NULL ? strlen(srv.err.p) : 0;
    return n > 1500 ? srv.err.p + n - 1500 : n > 0 ? srv.err.p : "";
}

/* ------------------------------------------------------------------------ */
/* Sockets and messages */

/* A DEALER with identity id[0..n) (none when n is 0) connected to the
 * NORFAB listener: linger 0, sends that wait at most the scaled bound. */
static void *
peer_id(const void *id, size_t n)
{
    void *s = zmq_socket(zctx, ZMQ_DEALER);
    ck_assert_ptr_nonnull(s);
    if (n > 0)
        ck_assert_int_eq(zmq_setsockopt(s, ZMQ_IDENTITY, id, n), 0);
    int zero = 0, wait = systest_wait_ms();
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_SNDTIMEO, &wait, sizeof wait), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_RCVTIMEO, &wait, sizeof wait), 0);
    ck_assert_int_eq(zmq_connect(s, f("tcp://127.0.0.1:%d", nport)), 0);
    ck_assert_uint_lt(nsocks, sizeof socks / sizeof socks[0]);
    socks[nsocks++] = s;
    return s;
}

/* A DEALER named name. */
static void *
peer(const char *name)
{
    return peer_id(name, strlen(name));
}

/* Close socket s (as a NORFAB worker closes its old one). */
static void
peer_close(void *s)
{
    for (size_t i = 0; i < nsocks; i++) {
        if (socks[i] == s) {
            zmq_close(s);
            socks[i] = socks[--nsocks];
            return;
        }
    }
    ck_abort_msg("no such socket");
}

/* One frame to send: any bytes. */
struct fr {
    const void *p;
    size_t n;
};

/* Send frames[0..n) as one message. */
static void
send_frames(void *s, const struct fr *frames, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int r = zmq_send(s, frames[i].p, frames[i].n, i + 1 < n ? ZMQ_SNDMORE : 0);
        ck_assert_msg(r == (int)frames[i].n, "zmq_send: %s", zmq_strerror(zmq_errno()));
    }
}

/* Send the C strings up to NULL as one message. */
static void
send_strs(void *s, const char *const *strs)
{
    struct fr frames[MAX_FRAMES];
    size_t n = 0;
    for (; strs[n] != NULL; n++) {
        ck_assert_uint_lt(n, MAX_FRAMES);
        frames[n] = (struct fr){strs[n], strlen(strs[n])};
    }
    send_frames(s, frames, n);
}

#define SEND(s, ...) send_strs((s), (const char *const[]){__VA_ARGS__, NULL})

/* A message received. */
struct zm {
    size_t n;
    char *f[MAX_FRAMES]; /* NUL terminated copies */
    size_t len[MAX_FRAMES];
    bool cut; /* had more than MAX_FRAMES frames */
};

static void
zm_free(struct zm *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->f[i]);
    m->n = 0;
}

/* Receive one whole message within ms (unscaled; 0: only one already
 * there): false if none came. */
static bool
zm_recv(void *s, struct zm *m, int ms)
{
    memset(m, 0, sizeof *m);
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    int r = zmq_poll(&it, 1, ms);
    ck_assert_int_ge(r, 0);
    if (r == 0)
        return false;
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        ck_assert_int_ge(zmq_msg_recv(&part, s, ZMQ_DONTWAIT), 0);
        size_t len = zmq_msg_size(&part);
        if (m->n < MAX_FRAMES) {
            char *copy = malloc(len + 1);
            ck_assert_ptr_nonnull(copy);
            memcpy(copy, zmq_msg_data(&part), len);
            copy[len] = '\0';
            m->f[m->n] = copy;
            m->len[m->n++] = len;
        } else {
            m->cut = true;
        }
        bool more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        if (!more)
            return true;
    }
}

/* Is frame i of m exactly s? */
static bool
zm_is(const struct zm *m, size_t i, const char *s)
{
    return i < m->n && m->len[i] == strlen(s) && memcmp(m->f[i], s, m->len[i]) == 0;
}

/* Frames as ["a", "b\x01"] into a ring of buffers (4 live at once). */
static const char *
show_frames(const char *const *f, const size_t *len, size_t n)
{
    static char ring[4][8192];
    static unsigned next;
    char *b = ring[next++ % 4];
    size_t at = 0, cap = sizeof ring[0] - 16;
    b[at++] = '[';
    for (size_t i = 0; i < n && at < cap; i++) {
        at += (size_t)snprintf(b + at, cap - at, "%s\"", i > 0 ? ", " : "");
        for (size_t k = 0; k < len[i] && at < cap; k++) {
            unsigned char c = (unsigned char)f[i][k];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                b[at++] = (char)c;
            else
                at += (size_t)snprintf(b + at, cap - at, "\\x%02x", c);
        }
        if (at < cap)
            b[at++] = '"';
    }
    b[at++] = ']';
    b[at] = '\0';
    return b;
}

static const char *
show(const struct zm *m)
{
    return show_frames((const char *const *)m->f, m->len, m->n);
}

/* Is m the broker's KEEPALIVE (either form)? */
static bool
is_keepalive(const struct zm *m)
{
    return m->n == 4 && zm_is(m, 0, "") && zm_is(m, 1, NFPB) &&
           (zm_is(m, 2, "0x02") || zm_is(m, 2, "\x02"));
}

/* The next message within the scaled bound, KEEPALIVEs skipped when
 * skip_ka; fails the test if none comes. */
static void
next_msg(void *s, bool skip_ka, struct zm *m, const char *waiting_for)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    for (;;) {
        int64_t left = deadline - systest_now_ms();
        if (left < 0 || !zm_recv(s, m, (int)(left > 0 ? left : 0)))
            ck_abort_msg("no message within %d ms, waiting for %s; server: %s", systest_wait_ms(),
                         waiting_for, server_said());
        if (!(skip_ka && is_keepalive(m)))
            return;
        zm_free(m);
    }
}

/* Expect the next message on s to be exactly the frames want[0..n). */
static void
expect_frames(void *s, bool skip_ka, const struct fr *want, size_t n)
{
    const char *wf[MAX_FRAMES] = {NULL};
    size_t wl[MAX_FRAMES] = {0};
    ck_assert_uint_le(n, MAX_FRAMES);
    for (size_t i = 0; i < n; i++) {
        wf[i] = want[i].p;
        wl[i] = want[i].n;
    }
    const char *w = show_frames(wf, wl, n);
    struct zm m;
    next_msg(s, skip_ka, &m, w);
    bool same = m.n == n && !m.cut;
    for (size_t i = 0; same && i < n; i++)
        same = m.len[i] == wl[i] && memcmp(m.f[i], wf[i], wl[i]) == 0;
    ck_assert_msg(same, "got %s, want %s", show(&m), w);
    zm_free(&m);
}

static void
expect_strs(void *s, bool skip_ka, const char *const *want)
{
    struct fr frames[MAX_FRAMES];
    size_t n = 0;
    for (; want[n] != NULL; n++)
        frames[n] = (struct fr){want[n], strlen(want[n])};
    expect_frames(s, skip_ka, frames, n);
}

/* A client expects exactly these frames next; a worker the same, past any
 * KEEPALIVE. */
#define EXPECT(s, ...)  expect_strs((s), false, (const char *const[]){__VA_ARGS__, NULL})
#define WEXPECT(s, ...) expect_strs((s), true, (const char *const[]){__VA_ARGS__, NULL})

/* Fail if a message (past KEEPALIVEs when skip_ka) comes within ms,
 * scaled. */
static void
expect_silence(void *s, bool skip_ka, int ms)
{
    int64_t deadline = systest_now_ms() + (int64_t)ms * systest_slow();
    for (;;) {
        int64_t left = deadline - systest_now_ms();
        struct zm m;
        if (!zm_recv(s, &m, left > 0 ? (int)left : 0))
            return;
        bool ka = is_keepalive(&m);
        const char *what = show(&m);
        zm_free(&m);
        ck_assert_msg(skip_ka && ka, "expected nothing, got %s", what);
    }
}

/* ------------------------------------------------------------------------ */
/* JSON and NFP */

/* A string as JSON writes it (quotes, backslashes, control characters
 * escaped), in a ring of buffers (8 live at once). */
static const char *
jstr(const char *s)
{
    static char ring[8][4096];
    static unsigned next;
    char *b = ring[next++ % 8];
    size_t at = 0;
    b[at++] = '"';
    for (; *s != '\0' && at < sizeof ring[0] - 8; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            b[at++] = '\\';
            b[at++] = (char)c;
        } else if (c < 0x20) {
            at += (size_t)snprintf(b + at, 8, "\\u%04x", c);
        } else {
            b[at++] = (char)c;
        }
    }
    b[at++] = '"';
    b[at] = '\0';
    return b;
}

/* The broker's 202 body: workers is a JSON list, the rest strings. */
static const char *
dispatched(const char *workers, const char *uuid, const char *target, const char *service)
{
    return f("{\"workers\":%s,\"uuid\":%s,\"target\":%s,\"status\":\"DISPATCHED\",\"service\":%s}",
             workers, jstr(uuid), jstr(target), jstr(service));
}

/* The broker's 400 body. */
static const char *
failed(const char *uuid, const char *target, const char *service, const char *error)
{
    return f("{\"workers\":null,\"uuid\":%s,\"target\":%s,\"status\":\"FAILED\",\"service\":%s,"
             "\"errors\":[%s]}",
             jstr(uuid), jstr(target), jstr(service), jstr(error));
}

/* A new uuid as NORFAB's client writes one (uuid4().hex: 32 hex digits). */
static const char *
uuid(void)
{
    return f("%032llx", ++uuid_no);
}

/* A new uuid into a local array v (uuid()'s text lives in a ring). */
#define NEW_UUID(v)                                                                                \
    char v[40];                                                                                    \
    snprintf(v, sizeof v, "%s", uuid())

/* A request of client c: ["", "NFPC01", cmd, service, target, uuid, body]. */
static void
request(void *c, const char *cmd, const char *service, const char *target, const char *id,
        const char *body)
{
    SEND(c, "", NFPC, cmd, service, target, id, body);
}

/* A POST to SVC. */
static void
post(void *c, const char *target, const char *id, const char *body)
{
    request(c, "0x04", SVC, target, id, body);
}

/* The 202 and 400 a client expects for its request to SVC (ASCII form). */
static void
expect_202(void *c, const char *id, const char *target, const char *workers)
{
    EXPECT(c, "", NFPB, "0x05", SVC, id, "202", dispatched(workers, id, target, SVC));
}

static void
expect_400(void *c, const char *service, const char *id, const char *target, const char *error)
{
    EXPECT(c, "", NFPB, "0x05", service, id, "400", failed(id, target, service, error));
}

/* What a worker expects for a request relayed to it. */
static void
expect_job(void *w, const char *cmd, const char *client, const char *id, const char *body)
{
    WEXPECT(w, "", NFPB, cmd, client, "", id, body);
}

/* A worker's READY for service. */
static void
ready(void *w, const char *service)
{
    SEND(w, "", NFPW, "0x01", service);
}

/* A task's body as NORFAB's client writes it. */
static const char *
task(const char *name)
{
    return f("{\"task\":%s,\"kwargs\":{},\"args\":[]}", jstr(name));
}

/* Ask mmi.service.broker for task with kwargs (a JSON object) from client
 * c over cmd ("0x11": the answer is an MMI, otherwise a RESPONSE) and
 * expect status; the answer's body, parsed (json_decref it). */
static json_t *
mmi_on(void *c, const char *cmd, const char *t, const char *kwargs, const char *status)
{
    const char *id = uuid();
    char idc[40];
    snprintf(idc, sizeof idc, "%s", id);
    request(c, cmd, MMI_SVC, "all", idc,
            f("{\"task\":%s,\"kwargs\":%s,\"args\":[]}", jstr(t), kwargs));
    struct zm m;
    next_msg(c, false, &m, f("the answer to %s", t));
    bool byte = strlen(cmd) == 1, over_mmi = strcmp(cmd, "0x11") == 0 || strcmp(cmd, "\x11") == 0;
    const char *reply_cmd = over_mmi ? (byte ? "\x11" : "0x11") : (byte ? "\x05" : "0x05");
    ck_assert_msg(m.n == 7 && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) && zm_is(&m, 2, reply_cmd) &&
                      zm_is(&m, 3, MMI_SVC) && zm_is(&m, 4, idc) && zm_is(&m, 5, status),
                  "%s: got %s", t, show(&m));
    json_error_t err;
    json_t *j = json_loadb(m.f[6], m.len[6], JSON_DECODE_ANY, &err);
    ck_assert_msg(j != NULL, "%s: not JSON: %s", t, m.f[6]);
    zm_free(&m);
    return j;
}

/* The same from the helpers' own client "admin" over MMI, status 200. */
static json_t *
mmi(const char *t, const char *kwargs)
{
    if (admin == NULL)
        admin = peer("admin");
    return mmi_on(admin, "0x11", t, kwargs, "200");
}

/* The names show_workers lists for kwargs, joined by commas ("" for its
 * one empty entry). */
static const char *
worker_names(const char *kwargs)
{
    json_t *j = mmi("show_workers", kwargs);
    ck_assert(json_is_array(j));
    char names[4096] = "";
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        ck_assert_ptr_nonnull(name);
        if (*name == '\0')
            continue;
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%s%s", at > 0 ? "," : "", name);
    }
    json_decref(j);
    return f("%s", names);
}

/* Wait until show_workers lists exactly names (joined by commas, in the
 * order they came) as the workers of service: what was sent to the broker
 * on other connections has been taken. */
static void
await_workers(const char *service, const char *names)
{
    const char *kwargs = f("{\"service\":%s}", jstr(service));
    char kw[256];
    snprintf(kw, sizeof kw, "%s", kwargs);
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    const char *got;
    while (strcmp(got = worker_names(kw), names) != 0) {
        ck_assert_msg(systest_now_ms() < deadline, "workers of %s: %s, want %s", service, got,
                      names);
        while (systest_proc_pump(&srv, 0))
            ;
        systest_sleep_ms(10);
    }
}

/* A worker named name, ready for SVC and known to the broker (it is the
 * service's only worker). */
static void *
ready_worker(const char *name)
{
    void *w = peer(name);
    ready(w, SVC);
    await_workers(SVC, name);
    return w;
}

/* A new POST of client c ("c1") to target reaches worker w ("w1"). */
static void
expect_post_to_w1(void *c, void *w, const char *target)
{
    NEW_UUID(id);
    post(c, target, id, "{}");
    expect_202(c, id, target, "[\"w1\"]");
    expect_job(w, "0x04", "c1", id, "{}");
}

/* Workers ready for SVC one after the other (READYs on different
 * connections may arrive in any order), known to the broker: names are
 * theirs, joined by commas. */
static void
ready_all(void *const *w, size_t n, const char *names)
{
    char prefix[1024];
    const char *comma = names;
    for (size_t i = 0; i < n; i++) {
        ready(w[i], SVC);
        comma = strchr(comma, ',');
        size_t len = comma != NULL ? (size_t)(comma - names) : strlen(names);
        ck_assert_uint_lt(len, sizeof prefix);
        memcpy(prefix, names, len);
        prefix[len] = '\0';
        await_workers(SVC, prefix);
        if (comma != NULL)
            comma++;
        else
            ck_assert_uint_eq(i + 1, n);
    }
}

/* A worker answers a request: RESPONSE (or EVENT) to client. */
static void
answer(void *w, const char *cmd, const char *client, const char *id, const char *status,
       const char *body)
{
    SEND(w, "", NFPW, cmd, client, "", id, status, body);
}

/* Is j an object with exactly these keys (NULL terminated)? */
static void
assert_keys(const json_t *j, const char *const *keys)
{
    ck_assert(json_is_object(j));
    size_t n = 0;
    for (; keys[n] != NULL; n++)
        ck_assert_msg(json_object_get(j, keys[n]) != NULL, "no key %s", keys[n]);
    ck_assert_uint_eq(json_object_size(j), n);
}

static const char *
jget(const json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    ck_assert_msg(s != NULL, "%s is no string", key);
    return s;
}

/* ------------------------------------------------------------------------ */
/* dispatch */

/* POST to "any" goes to the workers turn by turn; the 202 names the one. */
START_TEST(test_post_any_turns)
{
    start();
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *c = peer("c1");
    int first = -1;
    for (int i = 0; i < 8; i++) {
        const char *id = uuid(), *body = task(f("t%d", i));
        post(c, "any", id, body);
        struct zm m;
        next_msg(c, false, &m, "a 202");
        int to = zm_is(&m, 6, dispatched("[\"w1\"]", id, "any", SVC))   ? 0
                 : zm_is(&m, 6, dispatched("[\"w2\"]", id, "any", SVC)) ? 1
                                                                        : -1;
        ck_assert_msg(m.n == 7 && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) && zm_is(&m, 2, "0x05") &&
                          zm_is(&m, 3, SVC) && zm_is(&m, 4, id) && zm_is(&m, 5, "202") && to >= 0,
                      "got %s", show(&m));
        zm_free(&m);
        if (first < 0)
            first = to;
        ck_assert_msg(to == (first + i) % 2, "POST %d went to w%d again", i, to + 1);
        expect_job(w[to], "0x04", "c1", id, body);
        expect_silence(w[1 - to], true, 20);
    }
    stop();
}
END_TEST

/* POST to "all": each worker gets it, the 202 names them all in the order
 * they came. */
START_TEST(test_post_all)
{
    start();
    void *w[3] = {peer("w1"), peer("w2"), peer("w3")};
    ready_all(w, 3, "w1,w2,w3");
    void *other = peer("nb1");
    ready(other, "netbox");
    await_workers("netbox", "nb1");
    void *c = peer("c1");
    const char *id = uuid(), *body = task("get_facts");
    post(c, "all", id, body);
    expect_202(c, id, "all", "[\"w1\",\"w2\",\"w3\"]");
    for (int i = 0; i < 3; i++)
        expect_job(w[i], "0x04", "c1", id, body);
    expect_silence(other, true, 100);
    expect_silence(c, false, 0);
    stop();
}
END_TEST

/* POST to one worker by name, to names separated by commas, to a JSON
 * list as orjson (compact) and as json.dumps (", ") write it: the 202
 * names exactly those, target echoes the frame, the others get nothing. */
START_TEST(test_post_named)
{
    start();
    void *w[3] = {peer("w1"), peer("w2"), peer("w3")};
    ready_all(w, 3, "w1,w2,w3");
    void *c = peer("c1");
    static const struct {
        const char *target, *workers;
        bool to[3];
    } cases[] = {
        {"w2", "[\"w2\"]", {false, true, false}},
        {"w3,w1", "[\"w3\",\"w1\"]", {true, false, true}},
        {"w1,w1", "[\"w1\"]", {true, false, false}},
        {"[\"w1\",\"w2\"]", "[\"w1\",\"w2\"]", {true, true, false}},
        {"[\"w3\", \"w2\"]", "[\"w3\",\"w2\"]", {false, true, true}},
        {"[\"w2\",\"w2\"]", "[\"w2\"]", {false, true, false}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *id = uuid(), *body = task(f("t%zu", i));
        char idc[40], bodyc[128];
        snprintf(idc, sizeof idc, "%s", id);
        snprintf(bodyc, sizeof bodyc, "%s", body);
        post(c, cases[i].target, idc, bodyc);
        expect_202(c, idc, cases[i].target, cases[i].workers);
        for (int k = 0; k < 3; k++)
            if (cases[i].to[k])
                expect_job(w[k], "0x04", "c1", idc, bodyc);
        for (int k = 0; k < 3; k++)
            expect_silence(w[k], true, cases[i].to[k] ? 0 : 30);
    }
    stop();
}
END_TEST

/* No worker of the service is named: 400 with NORFAB's keys, and nothing
 * reaches any worker.  A POST naming a worker that is not there goes
 * nowhere, even when others it names are.  ("any" and "all" to a service
 * with no worker wait for one: test_queued_post.) */
START_TEST(test_post_no_workers)
{
    start();
    void *w1 = peer("w1");
    ready(w1, SVC);
    void *nb = peer("nb1");
    ready(nb, "netbox");
    await_workers(SVC, "w1");
    await_workers("netbox", "nb1");
    void *c = peer("c1");
    const char *id;
    /* a service nobody serves, named workers */
    static const struct {
        const char *target, *error;
    } none[] = {
        {"w1", NOT_WORKERS("1")}, {"[\"w1\"]", NOT_WORKERS("1")}, {"w1,w2", NOT_WORKERS("2")}};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        id = uuid();
        request(c, "0x04", "nothere", none[i].target, id, task("x"));
        expect_400(c, "nothere", id, none[i].target, none[i].error);
    }
    /* names that are no worker of the service: unknown, or of another
     * service (workq's choice: NORFAB's broker would send it to nb1) */
    static const struct {
        const char *target, *error;
    } cases[] = {
        {"w9", NOT_WORKERS("1")},
        {"nb1", NOT_WORKERS("1")},
        {"w9,w8", NOT_WORKERS("2")},
        {"w1,w9", NOT_WORKERS("1")},
        {"[\"w9\"]", NOT_WORKERS("1")},
        {"[\"w1\",\"w9\"]", NOT_WORKERS("1")},
        {"[\"w1\",\"nb1\"]", NOT_WORKERS("1")},
        {"[\"w1\",7]", NOT_WORKERS("1")},
        {"[]", NO_WORKER},
        {"[\"w1\"", NOT_WORKERS("1")},
        {"", NOT_WORKERS("1")},
        {"ANY", NOT_WORKERS("1")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        id = uuid();
        post(c, cases[i].target, id, task("x"));
        expect_400(c, SVC, id, cases[i].target, cases[i].error);
    }
    expect_silence(w1, true, 100);
    expect_silence(nb, true, 0);
    /* and a good one still goes through */
    id = uuid();
    post(c, "w1", id, task("x"));
    expect_202(c, id, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, task("x"));
    stop();
}
END_TEST

/* GET, DELETE and PUT to a JSON list with a worker gone (as NORFAB's
 * client polls the workers of the last 202): relayed to the others; GET
 * gets a 202 naming only them, DELETE and PUT no 202.  With none left:
 * 400. */
START_TEST(test_get_delete_put_partial)
{
    start();
    void *w[3] = {peer("w1"), peer("w2"), peer("w3")};
    ready_all(w, 3, "w1,w2,w3");
    void *c = peer("c1");
    const char *target = "[\"w1\",\"w2\",\"w3\"]";
    char posted[40]; /* uuid()'s text lives in a ring that turns */
    snprintf(posted, sizeof posted, "%s", uuid());
    const char *body = task("get_facts");
    /* a job posted to all three before w2 left */
    post(c, "all", posted, body);
    expect_202(c, posted, "all", "[\"w1\",\"w2\",\"w3\"]");
    for (int i = 0; i < 3; i++)
        expect_job(w[i], "0x04", "c1", posted, body);
    SEND(w[1], "", NFPW, "0x03", SVC);
    await_workers(SVC, "w1,w3");
    const char *id = posted;
    request(c, "0x06", SVC, target, id, body);
    expect_202(c, id, target, "[\"w1\",\"w3\"]");
    expect_job(w[0], "0x06", "c1", id, body);
    expect_job(w[2], "0x06", "c1", id, body);
    id = uuid();
    request(c, "0x07", SVC, target, id, body);
    expect_job(w[0], "0x07", "c1", id, body);
    expect_job(w[2], "0x07", "c1", id, body);
    id = uuid();
    const char *credit = "{\"offset\":65536}";
    request(c, "0x10", SVC, target, id, credit);
    expect_job(w[0], "0x10", "c1", id, credit);
    expect_job(w[2], "0x10", "c1", id, credit);
    expect_silence(c, false, 100);
    expect_silence(w[1], true, 0);
    /* GET to all: a 202 as for POST */
    id = posted;
    request(c, "0x06", SVC, "all", id, body);
    expect_202(c, id, "all", "[\"w1\",\"w3\"]");
    expect_job(w[0], "0x06", "c1", id, body);
    expect_job(w[2], "0x06", "c1", id, body);
    /* nobody left of those named: DELETE and PUT 400; a GET falls back
     * to the job's workers still there */
    static const char *const cmds[] = {"0x07", "0x10"};
    for (size_t i = 0; i < 2; i++) {
        id = uuid();
        request(c, cmds[i], SVC, "[\"w2\",\"w9\"]", id, body);
        expect_400(c, SVC, id, "[\"w2\",\"w9\"]", NOT_WORKERS("2"));
    }
    request(c, "0x06", SVC, "[\"w2\",\"w9\"]", posted, body);
    expect_202(c, posted, "[\"w2\",\"w9\"]", "[\"w1\",\"w3\"]");
    expect_job(w[0], "0x06", "c1", posted, body);
    expect_job(w[2], "0x06", "c1", posted, body);
    /* a GET for a uuid never posted */
    id = uuid();
    request(c, "0x06", SVC, "all", id, body);
    expect_400(c, SVC, id, "all", "no job with this uuid was posted");
    expect_silence(w[0], true, 50);
    expect_silence(w[2], true, 0);
    stop();
}
END_TEST

/* "any" keeps its turn when a worker leaves: after w1 w2 w3 w1 w2, w1
 * leaves; w3's turn has not come yet.  w1's two jobs, never answered, go
 * again first (to w3, then w2), then the next four go w3 w2 w3 w2. */
START_TEST(test_any_turn_after_leave)
{
    start();
    void *w[3] = {peer("w1"), peer("w2"), peer("w3")};
    ready_all(w, 3, "w1,w2,w3");
    void *c = peer("c1");
    char order[16] = "";
    char ids[6][40];
    for (int i = 0; i < 5; i++) {
        const char *id = uuid();
        if (i == 0 || i == 3) /* w1's */
            snprintf(ids[i == 0 ? 0 : 1], sizeof ids[0], "%s", id);
        post(c, "any", id, "{}");
        struct zm m;
        next_msg(c, false, &m, "a 202");
        for (int k = 0; k < 3; k++)
            if (zm_is(&m, 6, dispatched(f("[\"w%d\"]", k + 1), id, "any", SVC)))
                order[strlen(order)] = (char)('1' + k);
        zm_free(&m);
    }
    ck_assert_str_eq(order, "12312");
    SEND(w[0], "", NFPW, "0x03", SVC);
    await_workers(SVC, "w2,w3");
    memset(order, 0, sizeof order);
    for (int i = 0; i < 6; i++) { /* w1's two again, then four new */
        if (i >= 2) {
            snprintf(ids[i], sizeof ids[i], "%s", uuid());
            post(c, "any", ids[i], "{}");
        }
        struct zm m;
        next_msg(c, false, &m, "a 202");
        for (int k = 1; k < 3; k++)
            if (zm_is(&m, 6, dispatched(f("[\"w%d\"]", k + 1), ids[i], "any", SVC)))
                order[strlen(order)] = (char)('1' + k);
        zm_free(&m);
    }
    ck_assert_msg(strcmp(order, "323232") == 0, "after w1 left, any went to %s, want 323232",
                  order);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* relay */

/* What workers answer reaches the client verbatim under the worker's
 * service: 201 (ACK), 300 (pending), 200 (results), 404, EVENTs, and
 * frames past the body. */
START_TEST(test_relay_answers)
{
    start();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    const char *id = uuid(), *body = task("get_facts");
    char idc[40];
    snprintf(idc, sizeof idc, "%s", id);
    post(c, "w1", idc, body);
    expect_202(c, idc, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", idc, body);
    const char *ack = f(
        "{\"worker\":\"w1\",\"uuid\":\"%s\",\"status\":\"ACCEPTED\",\"service\":\"nornir\"}", idc);
    answer(w1, "0x05", "c1", idc, "201", ack);
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "201", ack);
    const char *event =
        f("{\"worker\":\"w1\",\"service\":\"nornir\",\"uuid\":\"%s\",\"message\":\"started\","
          "\"task\":\"get_facts\",\"event_type\":\"job_event\",\"status\":\"running\","
          "\"severity\":\"INFO\",\"timestamp\":\"10:00:00\",\"resource\":[],\"extras\":{}}",
          idc);
    answer(w1, "0x08", "c1", idc, "200", event);
    EXPECT(c, "", NFPB, "0x08", SVC, idc, "200", event);
    const char *pending = f("{\"worker\":\"w1\",\"uuid\":\"%s\",\"status\":\"PENDING\"}", idc);
    answer(w1, "0x05", "c1", idc, "300", pending);
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "300", pending);
    const char *result = "{\"w1\":{\"result\":{\"r1\":{\"facts\":[1,2,3]}},\"failed\":false,"
                         "\"errors\":[],\"messages\":[]}}";
    answer(w1, "0x05", "c1", idc, "200", result);
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "200", result);
    answer(w1, "0x05", "c1", idc, "404", "{\"status\":\"JOB NOT FOUND\"}");
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "404", "{\"status\":\"JOB NOT FOUND\"}");
    /* verbatim: no body, several frames after it, bytes that are no text */
    SEND(w1, "", NFPW, "0x05", "c1", "", idc, "200");
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "200");
    SEND(w1, "", NFPW, "0x05", "c1", "", idc, "200", "a", "", "b");
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "200", "a", "", "b");
    const struct fr stream[] = {{"", 0}, {NFPW, 6}, {"0x09", 4}, {"c1", 2},
                                {"", 0}, {idc, 32}, {"200", 3},  {"\x00\xff\x80z", 4}};
    send_frames(w1, stream, 8);
    const struct fr want[] = {{"", 0},   {NFPB, 6},  {"0x09", 4},         {SVC, strlen(SVC)},
                              {idc, 32}, {"200", 3}, {"\x00\xff\x80z", 4}};
    expect_frames(c, false, want, 7);
    expect_silence(c, false, 50);
    stop();
}
END_TEST

/* Answers go to the client the worker names, whichever asked; each of two
 * clients gets only its own. */
START_TEST(test_relay_two_clients)
{
    start();
    void *w1 = ready_worker("w1");
    void *c1 = peer("c1"), *c2 = peer("c2");
    char id1[40], id2[40];
    snprintf(id1, sizeof id1, "%s", uuid());
    snprintf(id2, sizeof id2, "%s", uuid());
    post(c1, "any", id1, "{}");
    expect_202(c1, id1, "any", "[\"w1\"]");
    post(c2, "any", id2, "{}");
    expect_202(c2, id2, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id1, "{}");
    expect_job(w1, "0x04", "c2", id2, "{}");
    answer(w1, "0x05", "c2", id2, "200", "{\"w1\":2}");
    answer(w1, "0x05", "c1", id1, "200", "{\"w1\":1}");
    EXPECT(c1, "", NFPB, "0x05", SVC, id1, "200", "{\"w1\":1}");
    EXPECT(c2, "", NFPB, "0x05", SVC, id2, "200", "{\"w1\":2}");
    expect_silence(c1, false, 50);
    expect_silence(c2, false, 0);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* forms */

/* A client that sends its commands as bytes is answered in bytes, and in
 * "0xNN" again once it uses that form; a worker gets its own form. */
START_TEST(test_client_byte_commands)
{
    start();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    const char *id = uuid();
    char idc[40];
    snprintf(idc, sizeof idc, "%s", id);
    request(c, "\x04", SVC, "w1", idc, "{}");
    EXPECT(c, "", NFPB, "\x05", SVC, idc, "202", dispatched("[\"w1\"]", idc, "w1", SVC));
    expect_job(w1, "0x04", "c1", idc, "{}");
    answer(w1, "0x05", "c1", idc, "200", "{\"w1\":true}");
    EXPECT(c, "", NFPB, "\x05", SVC, idc, "200", "{\"w1\":true}");
    answer(w1, "0x08", "c1", idc, "200", "{}");
    EXPECT(c, "", NFPB, "\x08", SVC, idc, "200", "{}");
    /* the byte form of 400 and of the management service */
    request(c, "\x04", "nothere", "w9", idc, "{}");
    EXPECT(c, "", NFPB, "\x05", "nothere", idc, "400",
           failed(idc, "w9", "nothere", NOT_WORKERS("1")));
    json_t *j = mmi_on(c, "\x11", "show_workers", "{}", "200");
    json_decref(j);
    request(c, "\x06", SVC, "w1", idc, "{}");
    EXPECT(c, "", NFPB, "\x05", SVC, idc, "202", dispatched("[\"w1\"]", idc, "w1", SVC));
    expect_job(w1, "0x06", "c1", idc, "{}");
    /* ASCII again */
    post(c, "w1", idc, "{}");
    expect_202(c, idc, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", idc, "{}");
    answer(w1, "0x05", "c1", idc, "200", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "200", "{}");
    stop();
}
END_TEST

/* A worker that sends READY as the byte 0x01 gets KEEPALIVE as the byte
 * 0x02 and requests in bytes; its byte RESPONSE reaches an ASCII client in
 * ASCII. */
START_TEST(test_worker_byte_commands)
{
    start_heartbeat(100 * systest_slow(), 50);
    void *w1 = peer("w1");
    SEND(w1, "", NFPW, "\x01", SVC);
    EXPECT(w1, "", NFPB, "\x02", SVC);
    EXPECT(w1, "", NFPB, "\x02", SVC);
    void *c = peer("c1");
    const char *id = uuid();
    char idc[40];
    snprintf(idc, sizeof idc, "%s", id);
    post(c, "w1", idc, "{}");
    expect_202(c, idc, "w1", "[\"w1\"]");
    expect_job(w1, "\x04", "c1", idc, "{}");
    answer(w1, "\x05", "c1", idc, "201", "{\"worker\":\"w1\"}");
    EXPECT(c, "", NFPB, "0x05", SVC, idc, "201", "{\"worker\":\"w1\"}");
    /* a KEEPALIVE in ASCII: ASCII from then on */
    SEND(w1, "", NFPW, "0x02", SVC);
    struct zm m;
    /* those in bytes were sent before the broker took it */
    for (next_msg(w1, false, &m, "a KEEPALIVE"); is_keepalive(&m) && zm_is(&m, 2, "\x02");
         next_msg(w1, false, &m, "a KEEPALIVE"))
        zm_free(&m);
    ck_assert_msg(m.n == 4 && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) && zm_is(&m, 2, "0x02") &&
                      zm_is(&m, 3, SVC),
                  "got %s", show(&m));
    zm_free(&m);
    stop();
}
END_TEST

/* OPEN is answered with OPEN, in the peer's form. */
START_TEST(test_open)
{
    start();
    void *c = peer("c1");
    SEND(c, "", NFPC, "0x00");
    EXPECT(c, "", NFPB, "0x00", "");
    const struct fr open_byte[] = {{"", 0}, {NFPC, 6}, {"\0", 1}};
    send_frames(c, open_byte, 3);
    const struct fr want[] = {{"", 0}, {NFPB, 6}, {"\0", 1}, {"", 0}};
    expect_frames(c, false, want, 4);
    /* OPEN is no READY: a worker that sent it is no worker */
    void *w = peer("w1");
    SEND(w, "", NFPW, "0x00");
    EXPECT(w, "", NFPB, "0x00", "");
    ck_assert_str_eq(worker_names("{}"), "");
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* heartbeat */

/* A ready worker gets KEEPALIVE every -norfab-keepalive-ms, whatever else
 * it is sent; one that is not ready gets none. */
START_TEST(test_keepalive_sent)
{
    TIMING_ONLY();
    int ka = 100 * systest_slow();
    start_heartbeat(ka, 6);
    void *idle = peer("idle");
    SEND(idle, "", NFPW, "0x00"); /* connected, never ready */
    EXPECT(idle, "", NFPB, "0x00", "");
    void *w1 = peer("w1");
    ready(w1, SVC);
    int64_t t0 = systest_now_ms();
    for (int i = 0; i < 6; i++) {
        EXPECT(w1, "", NFPB, "0x02", SVC);
        SEND(w1, "", NFPW, "0x02", SVC);
    }
    int64_t took = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(took >= 5 * ka - 60 && took <= 6 * ka + 1000, "6 KEEPALIVEs took %lld ms",
                      (long long)took);
    /* traffic does not hold KEEPALIVEs back */
    void *c = peer("c1");
    int kas = 0;
    for (int i = 0; i < 40 && kas < 2; i++) {
        const char *id = uuid();
        post(c, "w1", id, "{}");
        expect_202(c, id, "w1", "[\"w1\"]");
        struct zm m;
        for (next_msg(w1, false, &m, "a POST"); is_keepalive(&m);
             next_msg(w1, false, &m, "a POST")) {
            kas++;
            zm_free(&m);
        }
        ck_assert_msg(zm_is(&m, 2, "0x04"), "got %s", show(&m));
        zm_free(&m);
        systest_sleep_ms(ka / 4);
    }
    ck_assert_int_ge(kas, 2);
    expect_silence(idle, false, 3 * ka / systest_slow());
    /* show_workers counts them both ways: 6 received, at least 8 sent */
    unsigned long long tx = 0, rx = 0;
    for (int64_t t1 = systest_now_ms(); rx < 6; systest_sleep_ms(10)) {
        ck_assert_msg(systest_now_ms() - t1 < systest_wait_ms(), "rx %llu", rx);
        json_t *j = mmi("show_workers", "{}");
        const char *txrx =
            json_string_value(json_object_get(json_array_get(j, 0), "keepalives tx/rx"));
        ck_assert_ptr_nonnull(txrx);
        ck_assert_int_eq(sscanf(txrx, "%llu / %llu", &tx, &rx), 2);
        json_decref(j);
    }
    ck_assert_uint_eq(rx, 6);
    ck_assert_uint_ge(tx, 8);
    stop();
}
END_TEST

/* A worker that sends nothing is dead after -norfab-liveness intervals:
 * show_workers no longer lists it and a POST gets 400; its next KEEPALIVE
 * is answered with DISCONNECT (no service: it is forgotten), its READY
 * makes it a worker again. */
START_TEST(test_silent_worker_dies)
{
    int ka = 100 * systest_slow();
    start_heartbeat(ka, 3);
    void *w1 = peer("w1"), *w2 = peer("w2");
    void *w[2] = {w1, w2};
    ready_all(w, 2, "w1,w2");
    /* w2 answers every KEEPALIVE, w1 nothing */
    int64_t t0 = systest_now_ms();
    const char *names;
    while (strcmp(names = worker_names("{\"service\":\"nornir\"}"), "w2") != 0) {
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "still %s", names);
        struct zm m;
        while (zm_recv(w2, &m, 0)) {
            ck_assert_msg(is_keepalive(&m), "w2 got %s", show(&m));
            zm_free(&m);
            SEND(w2, "", NFPW, "0x02", SVC);
        }
        systest_sleep_ms(ka / 4);
    }
    int64_t took = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(took >= 3 * ka - 100, "dead after %lld ms", (long long)took);
    void *c = peer("c1");
    const char *id = uuid();
    post(c, "w1", id, "{}");
    expect_400(c, SVC, id, "w1", NOT_WORKERS("1"));
    id = uuid();
    post(c, "all", id, "{}");
    expect_202(c, id, "all", "[\"w2\"]");
    /* w1 comes back with a KEEPALIVE: told to register again */
    SEND(w1, "", NFPW, "0x02", SVC);
    WEXPECT(w1, "", NFPB, "0x03", "");
    ready(w1, SVC);
    await_workers(SVC, "w2,w1");
    /* once w2 falls silent too it goes: a POST naming it gets 400 */
    int64_t t1 = systest_now_ms();
    while (strcmp(names = worker_names("{}"), "") != 0)
        ck_assert_msg(systest_now_ms() - t1 < systest_wait_ms(), "still %s", names);
    id = uuid();
    post(c, "w2", id, "{}");
    expect_400(c, SVC, id, "w2", NOT_WORKERS("1"));
    stop();
}
END_TEST

/* A worker that keeps sending KEEPALIVE (and nothing else) for many
 * liveness spans stays, alive, and gets requests. */
START_TEST(test_live_worker_stays)
{
    TIMING_ONLY();
    int ka = 100 * systest_slow();
    start_heartbeat(ka, 3);
    void *w1 = ready_worker("w1");
    int64_t t0 = systest_now_ms();
    unsigned sent = 0;
    while (systest_now_ms() - t0 < 15 * ka) {
        SEND(w1, "", NFPW, "0x02", SVC);
        sent++;
        struct zm m;
        while (zm_recv(w1, &m, 0)) {
            ck_assert_msg(is_keepalive(&m), "w1 got %s", show(&m));
            zm_free(&m);
        }
        systest_sleep_ms(ka / 2);
    }
    ck_assert_str_eq(worker_names("{\"status\":\"alive\"}"), "w1");
    ck_assert_str_eq(worker_names("{\"status\":\"dead\"}"), "");
    void *c = peer("c1");
    expect_post_to_w1(c, w1, "any");
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* disconnect */

/* A worker's DISCONNECT removes it at once; it can come back with READY. */
START_TEST(test_worker_disconnect)
{
    start();
    void *w1 = ready_worker("w1");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    void *c = peer("c1");
    char queued[40];
    snprintf(queued, sizeof queued, "%s", uuid());
    post(c, "w1", queued, "{}");
    expect_400(c, SVC, queued, "w1", NOT_WORKERS("1"));
    /* "any" with no worker waits for one */
    snprintf(queued, sizeof queued, "%s", uuid());
    post(c, "any", queued, "{}");
    expect_silence(c, false, 100);
    /* a DISCONNECT from one the broker does not know: nothing */
    void *w2 = peer("w2");
    SEND(w2, "", NFPW, "\x03");
    expect_silence(w2, false, 100);
    /* back: the waiting POST goes to it */
    ready(w1, SVC);
    expect_202(c, queued, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", queued, "{}");
    await_workers(SVC, "w1");
    expect_post_to_w1(c, w1, "any");
    stop();
}
END_TEST

/* A second READY, or a RESPONSE, EVENT or KEEPALIVE before READY: the
 * broker answers DISCONNECT ["", "NFPB01", "0x03", service or ""] and
 * forgets the worker. */
START_TEST(test_unexpected_worker_commands)
{
    start();
    void *w1 = ready_worker("w1");
    ready(w1, SVC);
    WEXPECT(w1, "", NFPB, "0x03", SVC);
    await_workers(SVC, "");
    void *c = peer("c1");
    const char *id = uuid();
    post(c, "w1", id, "{}");
    expect_400(c, SVC, id, "w1", NOT_WORKERS("1"));
    /* before READY */
    void *w2 = peer("w2");
    SEND(w2, "", NFPW, "0x02", SVC);
    EXPECT(w2, "", NFPB, "0x03", "");
    answer(w2, "0x05", "c1", id, "200", "{}");
    EXPECT(w2, "", NFPB, "0x03", "");
    answer(w2, "0x08", "c1", id, "200", "{}");
    EXPECT(w2, "", NFPB, "0x03", "");
    SEND(w2, "", NFPW, "\x02");
    EXPECT(w2, "", NFPB, "\x03", "");
    /* none of it reached the client */
    expect_silence(c, false, 50);
    ck_assert_str_eq(worker_names("{}"), "");
    /* READY after all that: a worker */
    ready(w2, "netbox");
    await_workers("netbox", "w2");
    stop();
}
END_TEST

/* A worker connecting again under its name, as NORFAB's does when its
 * holdtime expires (DISCONNECT on its old socket, closed, then READY on a
 * new one).  When the DISCONNECT came, the READY makes it a worker at
 * once; when it was lost (linger 0), the READY is a second one:
 * DISCONNECT, and its next READY makes it a worker. */
START_TEST(test_worker_reconnects)
{
    start();
    void *c = peer("c1");
    /* the DISCONNECT came */
    void *old = ready_worker("w1");
    SEND(old, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    peer_close(old);
    void *fresh = ready_worker("w1");
    expect_post_to_w1(c, fresh, "w1");
    /* the DISCONNECT was lost */
    peer_close(fresh);
    void *again = peer("w1");
    ready(again, SVC);
    WEXPECT(again, "", NFPB, "0x03", SVC);
    await_workers(SVC, "");
    ready(again, SVC);
    await_workers(SVC, "w1");
    expect_post_to_w1(c, again, "any");
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* malformed */

/* The metrics port of the server started by start_metrics. */
static void
start_metrics(void)
{
    const char *extra[] = {"-metrics-listen", "127.0.0.1:0", NULL};
    start_with(extra);
    mport = systest_proc_port(&srv, "metrics");
}

/* The value of a series in /metrics. */
static unsigned long long
metric(const char *name)
{
    int fd = systest_connect_port(mport);
    systest_sends(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    struct sb r = {0};
    sb_add(&r, "");
    for (;;) {
        char buf[65536];
        struct pollfd pfd = {fd, POLLIN, 0};
        ck_assert_msg(poll(&pfd, 1, systest_wait_ms()) == 1, "no HTTP response: %s", r.p);
        ssize_t got = recv(fd, buf, sizeof buf, 0);
        ck_assert_int_ge(got, 0);
        if (got == 0)
            break;
        sb_addn(&r, buf, (size_t)got);
    }
    close(fd);
    const char *line = f("\n%s ", name);
    const char *at = strstr(r.p, line);
    ck_assert_msg(at != NULL, "no %s in /metrics", name);
    unsigned long long v = strtoull(at + strlen(line), NULL, 10);
    free(r.p);
    return v;
}

/* Messages that are no NFP message are dropped, each counted; the peer
 * gets nothing and its next valid request is answered. */
START_TEST(test_malformed_dropped)
{
    start_metrics();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    static const char *const junk[][10] = {
        {""},                                           /* too few frames */
        {"", NFPC},                                     /* too few frames */
        {"", NFPC, "0x04", SVC, "any", "u"},            /* no body */
        {"x", NFPC, "0x04", SVC, "any", "u", "{}"},     /* no empty frame */
        {NFPC, "0x04", SVC, "any", "u", "{}"},          /* no empty frame */
        {"", "NFPX01", "0x04", SVC, "any", "u", "{}"},  /* unknown header */
        {"", NFPB, "0x04", SVC, "any", "u", "{}"},      /* the broker's header */
        {"", NFPC, "0x99", SVC, "any", "u", "{}"},      /* unknown command */
        {"", NFPC, "0x0a", SVC, "any", "u", "{}"},      /* unknown command */
        {"", NFPC, "POST", SVC, "any", "u", "{}"},      /* unknown command */
        {"", NFPC, "0x01", SVC},                        /* a client's READY */
        {"", NFPC, "0x02", SVC},                        /* a client's KEEPALIVE */
        {"", NFPC, "0x05", "w1", "", "u", "200", "{}"}, /* a client's RESPONSE */
        {"", NFPW, "0x04", SVC, "any", "u", "{}"},      /* a worker's POST */
        {"", NFPW, "0x05", "c1", "u", "200", "{}"},     /* RESPONSE, no empty frame */
        {"", NFPW, "0x08", "c1", "u", "200", "{}"},     /* EVENT, no empty frame */
        {"", NFPW, "0x01"},                             /* READY, no service */
    };
    const size_t njunk = sizeof junk / sizeof junk[0];
    unsigned long long dropped0 = metric("workq_norfab_dropped_total");
    for (size_t i = 0; i < njunk; i++) {
        /* from a client socket and from the ready worker: neither answered */
        send_strs(c, junk[i]);
        send_strs(w1, junk[i]);
    }
    /* the worker is still ready: a POST reaches it */
    const char *id = uuid();
    post(c, "w1", id, "{}");
    expect_202(c, id, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "200", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{}");
    expect_silence(c, false, 100);
    expect_silence(w1, true, 0);
    unsigned long long dropped = metric("workq_norfab_dropped_total") - dropped0;
    ck_assert_uint_eq(dropped, 2 * njunk);
    /* more frames than a message may have */
    const char *many[80];
    many[0] = "";
    many[1] = NFPC;
    many[2] = "0x04";
    many[3] = SVC;
    many[4] = "any";
    many[5] = "u";
    for (int i = 6; i < 79; i++)
        many[i] = "{}";
    many[79] = NULL;
    send_strs(c, many);
    /* a request with frames past the body is no junk */
    id = uuid();
    SEND(c, "", NFPC, "0x04", SVC, "w1", id, "{}", "extra");
    expect_202(c, id, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    stop();
}
END_TEST

/* A simple generator of test bytes (xorshift64). */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Many junk messages, fast, from several sockets: random frames, and
 * NFP-shaped messages each broken one way; then the server still answers
 * at once. */
START_TEST(test_garbage_flood)
{
    start();
    enum { NJUNK = 6 };
    void *g[NJUNK];
    for (int i = 0; i < NJUNK; i++)
        g[i] = peer(f("junk-%d", i));
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int count = systest_wrapped() ? 3000 : 30000;
    static const char *const heads[] = {NFPC, NFPW, "NFPX01", "", "NFPC0"};
    static const char *const cmds[] = {"0x99", "0x0a", "\x12", "0X04", "", "0x4", "\xff"};
    for (int i = 0; i < count; i++) {
        void *s = g[rnd(&seed) % NJUNK];
        unsigned char bytes[8][24];
        struct fr fr[8];
        size_t n = 1 + rnd(&seed) % 8;
        for (size_t k = 0; k < 8; k++) {
            size_t len = rnd(&seed) % 24;
            for (size_t b = 0; b < len; b++)
                bytes[k][b] = (unsigned char)rnd(&seed);
            fr[k] = (struct fr){bytes[k], len};
        }
        switch (rnd(&seed) % 4) {
        case 0: /* random frames */
            break;
        case 1: /* a header, then a command that is none */
            n = n < 4 ? 4 : n;
            fr[0] = (struct fr){"", 0};
            fr[1] = (struct fr){heads[rnd(&seed) % 2], 6};
            const char *cmd = cmds[rnd(&seed) % 7];
            fr[2] = (struct fr){cmd, strlen(cmd)};
            break;
        case 2: /* a request with too few frames */
            n = 3 + rnd(&seed) % 4;
            fr[0] = (struct fr){"", 0};
            fr[1] = (struct fr){NFPC, 6};
            fr[2] = (struct fr){"0x04", 4};
            break;
        default: /* no empty frame first, or a header that is none */
            n = 7;
            if (rnd(&seed) % 2) {
                fr[0] = (struct fr){"x", 1};
                fr[1] = (struct fr){NFPC, 6};
            } else {
                const char *head = heads[2 + rnd(&seed) % 3];
                fr[0] = (struct fr){"", 0};
                fr[1] = (struct fr){head, strlen(head)};
            }
            fr[2] = (struct fr){"0x04", 4};
            break;
        }
        send_frames(s, fr, n);
    }
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    expect_post_to_w1(c, w1, "any");
    for (int i = 0; i < NJUNK; i++)
        expect_silence(g[i], false, i == 0 ? 100 : 0);
    stop();
}
END_TEST

/* The entries show_workers lists for kwargs (its one empty entry, service
 * "", not counted). */
static size_t
count_workers(const char *kwargs)
{
    json_t *j = mmi("show_workers", kwargs);
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(j, i, e)
    {
        n += *json_string_value(json_object_get(e, "service")) != '\0';
    }
    json_decref(j);
    return n;
}

/* Frames that are not UTF-8 (a ZeroMQ identity, a uuid, a target or a
 * service is any bytes; a DEALER without an identity gets one of a NUL
 * byte and 4 random bytes): the broker answers and stays up.  Each case
 * on a server of its own. */
START_TEST(test_not_utf8_request)
{
    static const struct {
        const char *service, *target, *uuid;
    } cases[] = {
        {"svc\xff", "any", "u1"},       /* the service */
        {SVC, "w\xfe", "u2"},           /* the target */
        {SVC, "any", "u\xc3"},          /* the uuid */
        {SVC, "[\"w\xe2\x82\"]", "u3"}, /* a name in a JSON list */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        start();
        void *c = peer("c1");
        request(c, "0x04", cases[i].service, cases[i].target, cases[i].uuid, "{}");
        struct zm m;
        next_msg(c, false, &m, f("a 400 (case %zu)", i));
        ck_assert_msg(m.n == 7 && zm_is(&m, 3, cases[i].service) && zm_is(&m, 4, cases[i].uuid) &&
                          zm_is(&m, 5, "400"),
                      "got %s", show(&m));
        json_t *j = json_loadb(m.f[6], m.len[6], 0, NULL);
        ck_assert_msg(json_is_object(j), "not a JSON object: %s", show(&m));
        ck_assert_str_eq(jget(j, "status"), "FAILED");
        json_decref(j);
        zm_free(&m);
        /* still up */
        const char *id = uuid();
        request(c, "0x04", "nothere", "w9", id, "{}");
        expect_400(c, "nothere", id, "w9", NOT_WORKERS("1"));
        stop();
    }
}
END_TEST

START_TEST(test_not_utf8_worker)
{
    start();
    void *c = peer("c1");
    void *w = peer("w\xff\x80");
    ready(w, SVC);
    for (int64_t t0 = systest_now_ms(); count_workers("{\"service\":\"nornir\"}") < 1;
         systest_sleep_ms(10))
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "no worker");
    post(c, "any", "u1", "{}");
    struct zm m;
    next_msg(c, false, &m, "a 202 for worker w\\xff\\x80");
    ck_assert_msg(m.n == 7 && zm_is(&m, 4, "u1") && zm_is(&m, 5, "202"), "got %s", show(&m));
    json_t *j = json_loadb(m.f[6], m.len[6], 0, NULL);
    ck_assert_msg(json_is_object(j), "not a JSON object: %s", show(&m));
    ck_assert_uint_eq(json_array_size(json_object_get(j, "workers")), 1);
    json_decref(j);
    zm_free(&m);
    WEXPECT(w, "", NFPB, "0x04", "c1", "", "u1", "{}");
    /* a worker without an identity: ZeroMQ makes one up */
    void *anon = peer_id(NULL, 0);
    ready(anon, "anon");
    for (int64_t t0 = systest_now_ms(); count_workers("{\"service\":\"anon\"}") < 1;
         systest_sleep_ms(10))
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "no anonymous worker");
    request(c, "0x04", "anon", "all", "u2", "{}");
    next_msg(c, false, &m, "a 202 for the anonymous worker");
    ck_assert_msg(m.n == 7 && zm_is(&m, 4, "u2") && zm_is(&m, 5, "202"), "got %s", show(&m));
    zm_free(&m);
    next_msg(anon, true, &m, "the POST");
    ck_assert_msg(m.n == 7 && zm_is(&m, 2, "0x04") && zm_is(&m, 5, "u2"), "got %s", show(&m));
    zm_free(&m);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* mmi */

/* show_workers over MMI: one entry per ready worker with NORFAB's keys,
 * filtered by service and status; none: NORFAB's one empty entry.  Only
 * an MMI answers (no RESPONSE first). */
START_TEST(test_mmi_show_workers)
{
    start();
    json_t *j = mmi("show_workers", "{}");
    char *text = json_dumps(j, JSON_COMPACT);
    ck_assert_str_eq(text, "[{\"name\":\"\",\"service\":\"\",\"status\":\"\"}]");
    free(text);
    json_decref(j);
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *nb = peer("nb1");
    ready(nb, "netbox");
    await_workers("netbox", "nb1");
    j = mmi("show_workers", "{}");
    ck_assert_uint_eq(json_array_size(j), 3);
    static const char *const names[] = {"w1", "w2", "nb1"}, *const svcs[] = {SVC, SVC, "netbox"};
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(j, i);
        assert_keys(e, (const char *const[]){"name", "service", "status", "holdtime",
                                             "keepalives tx/rx", "alive (s)", NULL});
        ck_assert_str_eq(jget(e, "name"), names[i]);
        ck_assert_str_eq(jget(e, "service"), svcs[i]);
        ck_assert_str_eq(jget(e, "status"), "alive");
        char *end;
        double hold = strtod(jget(e, "holdtime"), &end);
        ck_assert_msg(*end == '\0' && hold > 0 && hold <= 15.0, "holdtime %s", jget(e, "holdtime"));
        ck_assert_ptr_nonnull(strchr(jget(e, "holdtime"), '.'));
        unsigned long long tx, rx;
        ck_assert_int_eq(sscanf(jget(e, "keepalives tx/rx"), "%llu / %llu", &tx, &rx), 2);
        ck_assert_uint_eq(rx, 0);
        ck_assert_uint_lt(strtoull(jget(e, "alive (s)"), &end, 10), 60);
        ck_assert(*end == '\0');
    }
    json_decref(j);
    ck_assert_str_eq(worker_names("{\"service\":\"nornir\"}"), "w1,w2");
    ck_assert_str_eq(worker_names("{\"service\":\"netbox\"}"), "nb1");
    ck_assert_str_eq(worker_names("{\"service\":\"all\"}"), "w1,w2,nb1");
    ck_assert_str_eq(worker_names("{\"service\":\"none\"}"), "");
    ck_assert_str_eq(worker_names("{\"status\":\"alive\"}"), "w1,w2,nb1");
    ck_assert_str_eq(worker_names("{\"status\":\"dead\"}"), "");
    ck_assert_str_eq(worker_names("{\"status\":\"alive\",\"service\":\"netbox\"}"), "nb1");
    /* over MMI only the MMI comes, no RESPONSE before it */
    expect_silence(admin, false, 100);
    stop();
}
END_TEST

/* The management service over GET and POST: answered with a RESPONSE
 * (0x05), status 200, no 202 first, nothing after. */
START_TEST(test_mmi_over_get_post)
{
    start();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    static const char *const cmds[] = {"0x06", "0x04"};
    for (size_t i = 0; i < 2; i++) {
        json_t *j = mmi_on(c, cmds[i], "show_workers", "{}", "200");
        ck_assert_uint_eq(json_array_size(j), 1);
        ck_assert_str_eq(jget(json_array_get(j, 0), "name"), "w1");
        json_decref(j);
        expect_silence(c, false, 50);
    }
    expect_silence(w1, true, 0);
    stop();
}
END_TEST

START_TEST(test_mmi_show_broker)
{
    start_heartbeat(700, 4);
    (void)ready_worker("w1");
    json_t *j = mmi("show_broker", "{}");
    assert_keys(j, (const char *const[]){"endpoint", "status", "keepalives", "workers count",
                                         "services count", "clients count", "uptime (s)", "broker",
                                         "security", NULL});
    json_t *sec = json_object_get(j, "security");
    assert_keys(sec, (const char *const[]){"zmq-auth", "broker-public-key", NULL});
    ck_assert(json_is_false(json_object_get(sec, "zmq-auth")));
    ck_assert(json_is_null(json_object_get(sec, "broker-public-key"))); /* no CURVE */
    ck_assert_str_eq(jget(j, "endpoint"), f("tcp://127.0.0.1:%d", nport));
    ck_assert_str_eq(jget(j, "status"), "active");
    json_t *ka = json_object_get(j, "keepalives");
    assert_keys(ka, (const char *const[]){"interval", "multiplier", NULL});
    ck_assert_int_eq(json_integer_value(json_object_get(ka, "interval")), 700);
    ck_assert_int_eq(json_integer_value(json_object_get(ka, "multiplier")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "workers count")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "services count")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "clients count")), 1);
    ck_assert(json_is_integer(json_object_get(j, "uptime (s)")));
    ck_assert_int_lt(json_integer_value(json_object_get(j, "uptime (s)")), 120);
    ck_assert_str_eq(jget(j, "broker"), "workq " PACKAGE_VERSION);
    json_decref(j);
    stop();
}
END_TEST

/* The entry of show_services or show_clients named name. */
static json_t *
entry(json_t *list, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (strcmp(jget(e, "name"), name) == 0)
            return e;
    }
    ck_abort_msg("no entry %s", name);
    return NULL;
}

START_TEST(test_mmi_show_services_clients)
{
    start();
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *c1 = peer("c1"), *c2 = peer("c2"), *ops = peer("ops");
    for (int i = 0; i < 3; i++) {
        const char *id = uuid();
        post(c1, "any", id, "{}");
        expect_202(c1, id, "any", i % 2 ? "[\"w2\"]" : "[\"w1\"]");
    }
    const char *id = uuid();
    request(c2, "0x04", "nothere", "any", id, "{}"); /* waits for a worker */
    expect_silence(c2, false, 50);
    json_t *j = mmi_on(ops, "0x11", "show_services", "{}", "200");
    ck_assert_uint_eq(json_array_size(j), 2);
    json_t *e = entry(j, SVC);
    assert_keys(e, (const char *const[]){"name", "workers", "requests", NULL});
    ck_assert_int_eq(json_integer_value(json_object_get(e, "workers")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "requests")), 3);
    e = entry(j, "nothere");
    ck_assert_int_eq(json_integer_value(json_object_get(e, "workers")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "requests")), 0);
    json_decref(j);
    /* the least recently seen first: admin (await_workers), c1, c2, ops
     * (asking now, its second request) */
    j = mmi_on(ops, "0x11", "show_clients", "{}", "200");
    ck_assert_uint_eq(json_array_size(j), 4);
    static const char *const order[] = {"admin", "c1", "c2", "ops"};
    static const int requests[] = {-1, 3, 1, 2};
    for (size_t i = 0; i < 4; i++) {
        e = json_array_get(j, i);
        assert_keys(
            e, (const char *const[]){"name", "requests", "last seen (s)", "first seen (s)", NULL});
        ck_assert_str_eq(jget(e, "name"), order[i]);
        if (requests[i] >= 0)
            ck_assert_int_eq(json_integer_value(json_object_get(e, "requests")), requests[i]);
        ck_assert(json_is_integer(json_object_get(e, "last seen (s)")));
        ck_assert(json_is_integer(json_object_get(e, "first seen (s)")));
    }
    json_decref(j);
    /* a client's DISCONNECT: forgotten (no answer) */
    SEND(c1, "", NFPC, "0x03");
    int64_t t0 = systest_now_ms();
    for (;;) {
        j = mmi_on(ops, "0x11", "show_clients", "{}", "200");
        if (json_array_size(j) == 3)
            break;
        json_decref(j);
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "c1 still listed");
        systest_sleep_ms(10);
    }
    ck_assert_str_eq(jget(json_array_get(j, 0), "name"), "admin");
    ck_assert_str_eq(jget(json_array_get(j, 1), "name"), "c2");
    ck_assert_str_eq(jget(json_array_get(j, 2), "name"), "ops");
    json_decref(j);
    expect_silence(c1, false, 50);
    stop();
}
END_TEST

/* disconnect: each worker (of kwargs service) gets DISCONNECT and is
 * gone; the answer names them. */
START_TEST(test_mmi_disconnect)
{
    start();
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *nb = peer("nb1");
    ready(nb, "netbox");
    await_workers("netbox", "nb1");
    json_t *j = mmi("disconnect", "{\"service\":\"nornir\"}");
    char *text = json_dumps(j, JSON_COMPACT);
    ck_assert_str_eq(text, "[\"w1\",\"w2\"]");
    free(text);
    json_decref(j);
    WEXPECT(w[0], "", NFPB, "0x03", SVC);
    WEXPECT(w[1], "", NFPB, "0x03", SVC);
    ck_assert_str_eq(worker_names("{}"), "nb1");
    expect_silence(nb, true, 50);
    /* as a NORFAB worker does: READY again */
    ready_all(w, 2, "w1,w2");
    j = mmi("disconnect", "{}");
    text = json_dumps(j, JSON_COMPACT);
    ck_assert_str_eq(text, "[\"nb1\",\"w1\",\"w2\"]");
    free(text);
    json_decref(j);
    WEXPECT(nb, "", NFPB, "0x03", "netbox");
    WEXPECT(w[0], "", NFPB, "0x03", SVC);
    WEXPECT(w[1], "", NFPB, "0x03", SVC);
    ck_assert_str_eq(worker_names("{}"), "");
    j = mmi("disconnect", "{}");
    text = json_dumps(j, JSON_COMPACT);
    ck_assert_str_eq(text, "[]");
    free(text);
    json_decref(j);
    stop();
}
END_TEST

/* Tasks the service does not have, restart and shutdown among them: 200
 * with NORFAB's JSON string, and the server goes on; a body that is no JSON
 * object: 400. */
START_TEST(test_mmi_unsupported)
{
    start();
    void *c = peer("c1");
    static const char *const tasks[] = {"restart", "shutdown", "show_broker_version", "",
                                        "Show_Workers"};
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
        json_t *j = mmi_on(c, "0x11", tasks[i], "{}", "200");
        ck_assert(json_is_string(j));
        ck_assert_str_eq(json_string_value(j), f("Unsupported task '%s'", tasks[i]));
        json_decref(j);
    }
    /* the exact bytes */
    const char *id = uuid();
    request(c, "0x11", MMI_SVC, "all", id, "{\"task\":\"restart\",\"kwargs\":{},\"args\":[]}");
    EXPECT(c, "", NFPB, "0x11", MMI_SVC, id, "200", "\"Unsupported task 'restart'\"");
    /* no task, or not a string */
    request(c, "0x11", MMI_SVC, "all", id, "{\"kwargs\":{}}");
    EXPECT(c, "", NFPB, "0x11", MMI_SVC, id, "200", "\"Unsupported task ''\"");
    request(c, "0x11", MMI_SVC, "all", id, "{\"task\":7}");
    EXPECT(c, "", NFPB, "0x11", MMI_SVC, id, "200", "\"Unsupported task ''\"");
    /* not a JSON object */
    static const char *const bodies[] = {"not json", "", "[1,2]", "\"show_workers\"", "{\"task\":"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        request(c, "0x11", MMI_SVC, "all", id, bodies[i]);
        EXPECT(c, "", NFPB, "0x11", MMI_SVC, id, "400",
               "\"MMI request is not a JSON object {\\\"task\\\", \\\"args\\\", \\\"kwargs\\\"}\"");
    }
    request(c, "0x06", MMI_SVC, "all", id, "not json");
    EXPECT(c, "", NFPB, "0x05", MMI_SVC, id, "400",
           "\"MMI request is not a JSON object {\\\"task\\\", \\\"args\\\", \\\"kwargs\\\"}\"");
    /* still up, still serving */
    json_t *j = mmi("show_broker", "{}");
    ck_assert_str_eq(jget(j, "status"), "active");
    json_decref(j);
    stop();
}
END_TEST

/* A task name too long for the answer's text is cut, on a character:
 * the answer is still a JSON string. */
START_TEST(test_mmi_long_task)
{
    start();
    void *c = peer("c1");
    /* 119 bytes, then a character of 2 bytes across the 120th */
    char name[256];
    memset(name, 'a', 119);
    snprintf(name + 119, sizeof name - 119, "\xc3\xa9tail");
    json_t *j = mmi_on(c, "0x11", name, "{}", "200");
    ck_assert(json_is_string(j));
    ck_assert_int_eq(strncmp(json_string_value(j), "Unsupported task 'aaaa", 22), 0);
    json_decref(j);
    /* a long name of 1-byte characters, whole or cut */
    memset(name, 'b', 200);
    name[200] = '\0';
    j = mmi_on(c, "0x11", name, "{}", "200");
    ck_assert(json_is_string(j));
    ck_assert_int_eq(strncmp(json_string_value(j), "Unsupported task 'bbbb", 22), 0);
    json_decref(j);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* load */

enum { LC = 10, LW = 20, LPOSTS = 500, LWINDOW = 50 };

/* 10 clients post 500 jobs each to "any" of 20 workers, each answering
 * 200 at once, 50 jobs in flight per client: every job gets exactly one
 * 202 naming one worker, then exactly that worker's 200; nothing else
 * comes; the workers got 250 each (turn by turn). */
START_TEST(test_load)
{
    start();
    void *c[LC], *w[LW];
    char cname[LC][16], wname[LW][16];
    struct sb names = {0};
    sb_add(&names, "");
    for (int j = 0; j < LW; j++) {
        snprintf(wname[j], sizeof wname[j], "worker-%02d", j);
        w[j] = peer(wname[j]);
        sb_add(&names, j > 0 ? "," : "");
        sb_add(&names, wname[j]);
    }
    ready_all(w, LW, names.p);
    free(names.p);
    for (int i = 0; i < LC; i++) {
        snprintf(cname[i], sizeof cname[i], "client-%d", i);
        c[i] = peer(cname[i]);
    }
    static struct {
        signed char worker; /* of the 202, -1 before it */
        bool done;
    } jobs[LC][LPOSTS];
    for (int i = 0; i < LC; i++)
        for (int k = 0; k < LPOSTS; k++) {
            jobs[i][k].worker = -1;
            jobs[i][k].done = false;
        }
    unsigned sent[LC] = {0}, open[LC] = {0}, got[LW] = {0};
    unsigned done = 0;
    zmq_pollitem_t items[LC + LW];
    for (int i = 0; i < LC; i++)
        items[i] = (zmq_pollitem_t){c[i], 0, ZMQ_POLLIN, 0};
    for (int j = 0; j < LW; j++)
        items[LC + j] = (zmq_pollitem_t){w[j], 0, ZMQ_POLLIN, 0};
    int64_t deadline = systest_now_ms() + 20 * (int64_t)systest_wait_ms();
    while (done < LC * LPOSTS) {
        ck_assert_msg(systest_now_ms() < deadline, "%u of %u jobs done; server: %s", done,
                      LC * LPOSTS, server_said());
        for (int i = 0; i < LC; i++) {
            for (; open[i] < LWINDOW && sent[i] < LPOSTS; open[i]++, sent[i]++) {
                char id[40];
                snprintf(id, sizeof id, "%02x%030x", i, sent[i]);
                post(c[i], "any", id,
                     f("{\"task\":\"echo\",\"kwargs\":{\"n\":%u},\"args\":[]}", sent[i]));
            }
        }
        ck_assert_int_ge(zmq_poll(items, LC + LW, 100), 0);
        for (int j = 0; j < LW; j++) {
            struct zm m;
            while ((items[LC + j].revents & ZMQ_POLLIN) && zm_recv(w[j], &m, 0)) {
                if (is_keepalive(&m)) {
                    zm_free(&m);
                    continue;
                }
                unsigned ci = LC, k = LPOSTS;
                if (m.n == 7 && m.len[5] == 32) {
                    char two[3] = {m.f[5][0], m.f[5][1], 0};
                    ci = (unsigned)strtoul(two, NULL, 16);
                    k = (unsigned)strtoul(m.f[5] + 2, NULL, 16);
                }
                ck_assert_msg(
                    ci < LC && k < LPOSTS && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) &&
                        zm_is(&m, 2, "0x04") && zm_is(&m, 3, cname[ci]) && zm_is(&m, 4, "") &&
                        zm_is(&m, 6, f("{\"task\":\"echo\",\"kwargs\":{\"n\":%u},\"args\":[]}", k)),
                    "%s got %s", wname[j], show(&m));
                answer(w[j], "0x05", cname[ci], m.f[5], "200",
                       f("{\"%s\":{\"result\":\"%s\"}}", wname[j], m.f[5]));
                got[j]++;
                zm_free(&m);
            }
        }
        for (int i = 0; i < LC; i++) {
            struct zm m;
            while ((items[i].revents & ZMQ_POLLIN) && zm_recv(c[i], &m, 0)) {
                unsigned k = LPOSTS;
                if (m.n == 7 && m.len[4] == 32 &&
                    (unsigned)strtoul(f("%.2s", m.f[4]), NULL, 16) == (unsigned)i)
                    k = (unsigned)strtoul(m.f[4] + 2, NULL, 16);
                ck_assert_msg(k < sent[i] && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) &&
                                  zm_is(&m, 2, "0x05") && zm_is(&m, 3, SVC),
                              "%s got %s", cname[i], show(&m));
                if (zm_is(&m, 5, "202")) {
                    ck_assert_msg(jobs[i][k].worker < 0 && !jobs[i][k].done, "%s: a second 202 %s",
                                  cname[i], show(&m));
                    int wj = -1;
                    for (int j = 0; j < LW && wj < 0; j++)
                        if (zm_is(&m, 6, dispatched(f("[\"%s\"]", wname[j]), m.f[4], "any", SVC)))
                            wj = j;
                    ck_assert_msg(wj >= 0, "%s got %s", cname[i], show(&m));
                    jobs[i][k].worker = (signed char)wj;
                } else {
                    int wj = jobs[i][k].worker;
                    ck_assert_msg(
                        zm_is(&m, 5, "200") && wj >= 0 && !jobs[i][k].done &&
                            zm_is(&m, 6, f("{\"%s\":{\"result\":\"%s\"}}", wname[wj], m.f[4])),
                        "%s got %s (202 named %d, done %d)", cname[i], show(&m), wj,
                        jobs[i][k].done);
                    jobs[i][k].done = true;
                    open[i]--;
                    done++;
                }
                zm_free(&m);
            }
        }
        while (systest_proc_pump(&srv, 0))
            ;
    }
    for (int i = 0; i < LC; i++)
        expect_silence(c[i], false, i == 0 ? 200 : 0);
    for (int j = 0; j < LW; j++) {
        expect_silence(w[j], true, 0);
        ck_assert_msg(got[j] == LC * LPOSTS / LW, "%s got %u jobs", wname[j], got[j]);
    }
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* process */

/* SIGTERM with workers and clients connected and jobs in flight: exit
 * status 0 (no leak under valgrind). */
START_TEST(test_sigterm)
{
    start();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    for (int i = 0; i < 20; i++)
        post(c, "any", uuid(), "{}");
    expect_job(w1, "0x04", "c1", f("%032llx", uuid_no - 19), "{}");
    json_t *j = mmi("show_broker", "{}");
    json_decref(j);
    stop();
}
END_TEST

/* Without -norfab-listen there is no NORFAB listener (its options alone
 * open none). */
START_TEST(test_no_listener)
{
    const char *args[] = {"-listen", "127.0.0.1:0", "-norfab-keepalive-ms", "100", NULL};
    struct systest_proc p;
    systest_proc_start(&p, args);
    systest_track_pid(p.s.pid);
    systest_proc_pump(&p, 200 * systest_slow());
    ck_assert_ptr_null(strstr(p.out.p, "norfab"));
    ck_assert_ptr_null(strstr(p.err.p, "norfab="));
    systest_proc_stop(&p);
    systest_untrack_pid(p.s.pid);
    systest_proc_free(&p);
}
END_TEST

/* tls:// for NORFAB: refused at start, EX_CONFIG, saying why; so are
 * heartbeat settings out of range (EX_USAGE). */
START_TEST(test_bad_options)
{
    const char *args[] = {"-listen", "127.0.0.1:0", "-norfab-listen", "tls://127.0.0.1:0", NULL};
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), 78);
    ck_assert_msg(strstr(p.err.p, "-norfab-listen takes HOST:PORT, not tls://") != NULL, "%s",
                  p.err.p);
    ck_assert_str_eq(p.out.p, "");
    systest_proc_free(&p);
    /* an address in use: EX_UNAVAILABLE */
    int port, busy = systest_listen(&port);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    const char *in_use[] = {"-listen", "127.0.0.1:0", "-norfab-listen", addr, NULL};
    ck_assert_int_eq(systest_proc_run(&p, in_use), 69);
    ck_assert_msg(strstr(p.err.p, f("cannot listen for NORFAB address=tcp://%s", addr)) != NULL,
                  "%s", p.err.p);
    systest_proc_free(&p);
    close(busy);
    static const struct {
        const char *opt, *value;
    } bad[] = {{"-norfab-keepalive-ms", "9"},
               {"-norfab-keepalive-ms", "3600001"},
               {"-norfab-keepalive-ms", "x"},
               {"-norfab-liveness", "1"},
               {"-norfab-liveness", "1001"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[] = {"-listen",    "127.0.0.1:0", "-norfab-listen", "127.0.0.1:0", bad[i].opt,
                           bad[i].value, NULL};
        ck_assert_int_eq(systest_proc_run(&p, a), 64);
        ck_assert_msg(strstr(p.err.p, f("invalid %s '%s'", bad[i].opt, bad[i].value)) != NULL, "%s",
                      p.err.p);
        systest_proc_free(&p);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* queue */

/* One of the broker's own bodies: workers a JSON list or "null", an error
 * (NULL: no "errors" key). */
static const char *
broker_body(const char *workers, const char *id, const char *target, const char *status,
            const char *service, const char *error)
{
    if (error == NULL)
        return f("{\"workers\":%s,\"uuid\":%s,\"target\":%s,\"status\":%s,\"service\":%s}", workers,
                 jstr(id), jstr(target), jstr(status), jstr(service));
    return f("{\"workers\":%s,\"uuid\":%s,\"target\":%s,\"status\":%s,\"service\":%s,"
             "\"errors\":[%s]}",
             workers, jstr(id), jstr(target), jstr(status), jstr(service), jstr(error));
}

#define EXPIRED_WHY "no worker of the service came within the queue TTL"
#define NO_JOB      "no job with this uuid was posted"
#define NO_RESULT   "no worker of the job is there, and none left its result"

/* A GET of client c for id, a POST of service still queued: a 202 naming
 * no worker. */
static void
expect_queued(void *c, const char *service, const char *id)
{
    request(c, "0x06", service, "any", id, "{}");
    EXPECT(c, "", NFPB, "0x05", service, id, "202",
           broker_body("[]", id, "any", "QUEUED", service, NULL));
}

/* The next message of worker w that is no KEEPALIVE, within the scaled
 * bound; each KEEPALIVE is answered with one for service, as NORFAB's
 * worker does, so that w stays alive while it waits. */
static void
next_alive(void *w, const char *service, struct zm *m, const char *waiting_for)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    for (;;) {
        int64_t left = deadline - systest_now_ms();
        if (left < 0 || !zm_recv(w, m, (int)(left > 0 ? left : 0)))
            ck_abort_msg("no message within %d ms, waiting for %s; server: %s", systest_wait_ms(),
                         waiting_for, server_said());
        if (!is_keepalive(m))
            return;
        zm_free(m);
        SEND(w, "", NFPW, "0x02", service);
    }
}

/* expect_job for a worker of service that stays alive while it waits. */
static void
expect_job_alive(void *w, const char *service, const char *cmd, const char *client, const char *id,
                 const char *body)
{
    const char *want = show_frames(
        (const char *const[]){"", NFPB, cmd, client, "", id, body},
        (const size_t[]){0, 6, strlen(cmd), strlen(client), 0, strlen(id), strlen(body)}, 7);
    struct zm m;
    next_alive(w, service, &m, want);
    ck_assert_msg(m.n == 7 && zm_is(&m, 0, "") && zm_is(&m, 1, NFPB) && zm_is(&m, 2, cmd) &&
                      zm_is(&m, 3, client) && zm_is(&m, 4, "") && zm_is(&m, 5, id) &&
                      zm_is(&m, 6, body),
                  "got %s, want %s", show(&m), want);
    zm_free(&m);
}

/* "any" POSTs to a service with no worker wait, first in first out, with
 * no answer; a POST again with a queued uuid adds nothing.  The first
 * worker's READY sends them all to it, each with its 202.  Once sent, a
 * POST again gets its 202 again and no second copy. */
START_TEST(test_queued_any)
{
    start();
    void *c = peer("c1");
    NEW_UUID(a);
    NEW_UUID(b);
    post(c, "any", a, task("first"));
    post(c, "any", b, task("second"));
    expect_silence(c, false, 100);
    post(c, "any", a, task("first"));
    expect_silence(c, false, 50);
    /* no worker yet, but one of another service */
    void *nb = peer("nb1");
    ready(nb, "netbox");
    await_workers("netbox", "nb1");
    expect_silence(c, false, 50);
    void *w1 = peer("w1");
    ready(w1, SVC);
    expect_202(c, a, "any", "[\"w1\"]");
    expect_202(c, b, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", a, task("first"));
    expect_job(w1, "0x04", "c1", b, task("second"));
    expect_silence(w1, true, 100);
    expect_silence(c, false, 0);
    expect_silence(nb, true, 0);
    post(c, "any", a, task("first"));
    expect_202(c, a, "any", "[\"w1\"]");
    expect_silence(w1, true, 100);
    expect_silence(c, false, 0);
    stop();
}
END_TEST

/* An "all" POST queued goes to the workers ready when it goes out: the
 * first worker's READY sends it to that one only; the second gets
 * nothing.  An "all" POST then goes to both. */
START_TEST(test_queued_all)
{
    start();
    void *c = peer("c1");
    NEW_UUID(q);
    NEW_UUID(any);
    post(c, "all", q, task("all"));
    post(c, "any", any, task("any"));
    expect_silence(c, false, 100);
    void *w1 = peer("w1"), *w2 = peer("w2");
    ready(w1, SVC);
    expect_202(c, q, "all", "[\"w1\"]");
    expect_202(c, any, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", q, task("all"));
    expect_job(w1, "0x04", "c1", any, task("any"));
    ready(w2, SVC);
    await_workers(SVC, "w1,w2");
    expect_silence(w2, true, 100);
    expect_silence(w1, true, 0);
    expect_silence(c, false, 0);
    NEW_UUID(both);
    post(c, "all", both, "{}");
    expect_202(c, both, "all", "[\"w1\",\"w2\"]");
    expect_job(w1, "0x04", "c1", both, "{}");
    expect_job(w2, "0x04", "c1", both, "{}");
    stop();
}
END_TEST

/* A GET for a queued POST: a 202 naming no worker, "QUEUED", with the
 * GET's target; for a POST of another service: 400.  A DELETE of a
 * queued POST: 200 "DELETED", and it is gone: a GET gets 400, a DELETE
 * again goes to the workers (none: 400), a worker that comes gets only
 * the other one. */
START_TEST(test_queued_get_delete)
{
    start();
    void *c = peer("c1");
    NEW_UUID(q);
    NEW_UUID(d);
    post(c, "any", q, task("kept"));
    post(c, "all", d, task("deleted"));
    expect_silence(c, false, 50);
    expect_queued(c, SVC, q);
    request(c, "0x06", SVC, "[]", d, "{\"x\":1}");
    EXPECT(c, "", NFPB, "0x05", SVC, d, "202", broker_body("[]", d, "[]", "QUEUED", SVC, NULL));
    request(c, "0x06", "netbox", "any", q, "{}");
    expect_400(c, "netbox", q, "any", NO_JOB);
    request(c, "0x07", SVC, "all", d, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, d, "200", broker_body("null", d, "all", "DELETED", SVC, NULL));
    request(c, "0x06", SVC, "all", d, "{}");
    expect_400(c, SVC, d, "all", NO_JOB);
    request(c, "0x07", SVC, "all", d, "{}");
    expect_400(c, SVC, d, "all", NO_WORKER);
    void *w1 = peer("w1");
    ready(w1, SVC);
    expect_202(c, q, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", q, task("kept"));
    expect_silence(w1, true, 100);
    expect_silence(c, false, 0);
    /* sent now: a GET names w1 and goes to it */
    request(c, "0x06", SVC, "any", q, "{}");
    expect_202(c, q, "any", "[\"w1\"]");
    expect_job(w1, "0x06", "c1", q, "{}");
    /* a DELETE of a sent POST is relayed, with no answer of the broker's */
    request(c, "0x07", SVC, "w1", q, "{}");
    expect_job(w1, "0x07", "c1", q, "{}");
    expect_silence(c, false, 50);
    stop();
}
END_TEST

/* A DELETE under another service does not cancel a queued POST (as a
 * GET under another service does not find it): it is that service's
 * request, which has no worker (400); the POST is still queued and goes
 * to its worker. */
START_TEST(test_queued_delete_other_service)
{
    start();
    void *c = peer("c1");
    NEW_UUID(q);
    post(c, "any", q, "{}");
    expect_silence(c, false, 50);
    request(c, "0x07", "netbox", "any", q, "{}");
    expect_400(c, "netbox", q, "any", NO_WORKER);
    expect_queued(c, SVC, q);
    void *w1 = peer("w1");
    ready(w1, SVC);
    expect_202(c, q, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", q, "{}");
    stop();
}
END_TEST

/* Many services' queued POSTs expire at once: each is answered 408 in
 * the same heartbeat (give or take the one after), and the services go.
 * Found: the last POST of a service expiring freed the service while its
 * line was being walked (a read of freed memory) and took it out of the
 * registry of services being walked, which skipped others: their 408s
 * came up to four heartbeats late. */
START_TEST(test_queue_ttl_many_services)
{
    TIMING_ONLY();
    int ka = 100 * systest_slow(), ttl = 300 * systest_slow();
    const char *kas = f("%d", ka), *ttls = f("%dms", ttl);
    const char *extra[] = {"-norfab-keepalive-ms", kas, "-norfab-queue-ttl", ttls, NULL};
    start_with(extra);
    void *c = peer("c1");
    enum { N = 400 };
    static bool got[N];
    memset(got, 0, sizeof got);
    for (int i = 0; i < N; i++)
        request(c, "0x04", f("svc%03d", i), "any", f("%032d", i), "{}");
    int64_t first = 0, last = 0;
    for (int k = 0; k < N; k++) {
        struct zm m;
        next_msg(c, false, &m, f("the 408s (%d so far)", k));
        int i = m.n == 7 && m.len[4] == 32 ? atoi(m.f[4]) : -1;
        ck_assert_msg(i >= 0 && i < N && !got[i] && zm_is(&m, 3, f("svc%03d", i)) &&
                          zm_is(&m, 5, "408") &&
                          zm_is(&m, 6,
                                broker_body("null", f("%032d", i), "any", "EXPIRED",
                                            f("svc%03d", i), EXPIRED_WHY)),
                      "got %s", show(&m));
        got[i] = true;
        zm_free(&m);
        last = systest_now_ms();
        if (k == 0)
            first = last;
    }
    if (systest_exact_timing())
        ck_assert_msg(last - first <= ka + 150, "the 408s came over %lld ms (heartbeat %d ms)",
                      (long long)(last - first), ka);
    json_t *j = mmi("show_services", "{}");
    ck_assert_uint_eq(json_array_size(j), 0);
    json_decref(j);
    stop();
}
END_TEST

/* -norfab-queue-ttl: a POST still queued after it is answered 408
 * "EXPIRED" and goes: a GET gets 400, a worker that comes gets nothing.
 * A POST queued again (its worker left before answering) has its TTL
 * start again. */
START_TEST(test_queue_ttl)
{
    int ka = 100 * systest_slow(), ttl = 300 * systest_slow();
    const char *kas = f("%d", ka), *ttls = f("%dms", ttl);
    const char *extra[] = {"-norfab-keepalive-ms",
                           kas,
                           "-norfab-liveness",
                           "50",
                           "-norfab-queue-ttl",
                           ttls,
                           "-metrics-listen",
                           "127.0.0.1:0",
                           NULL};
    start_with(extra);
    mport = systest_proc_port(&srv, "metrics");
    void *c = peer("c1");
    NEW_UUID(a);
    NEW_UUID(b);
    int64_t t0 = systest_now_ms();
    post(c, "any", a, "{}");
    post(c, "all", b, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, a, "408",
           broker_body("null", a, "any", "EXPIRED", SVC, EXPIRED_WHY));
    int64_t took = systest_now_ms() - t0;
    EXPECT(c, "", NFPB, "0x05", SVC, b, "408",
           broker_body("null", b, "all", "EXPIRED", SVC, EXPIRED_WHY));
    if (systest_exact_timing())
        ck_assert_msg(took >= ttl - 20 && took <= ttl + ka + 500, "408 after %lld ms",
                      (long long)took);
    ck_assert_uint_eq(metric("workq_norfab_expired_total"), 2);
    request(c, "0x06", SVC, "any", a, "{}");
    expect_400(c, SVC, a, "any", NO_JOB);
    void *w1 = ready_worker("w1");
    expect_silence(w1, true, 100);
    expect_silence(c, false, 0);
    /* sent to w1, which leaves after the TTL without a word: queued again,
     * for a whole TTL */
    NEW_UUID(r);
    post(c, "any", r, "{}");
    expect_202(c, r, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", r, "{}");
    systest_sleep_ms(2 * ttl);
    int64_t t1 = systest_now_ms();
    SEND(w1, "", NFPW, "0x03", SVC);
    EXPECT(c, "", NFPB, "0x05", SVC, r, "408",
           broker_body("null", r, "any", "EXPIRED", SVC, EXPIRED_WHY));
    took = systest_now_ms() - t1;
    if (systest_exact_timing())
        ck_assert_msg(took >= ttl - 20 && took <= ttl + ka + 500,
                      "408 %lld ms after it was queued again", (long long)took);
    ck_assert_uint_eq(metric("workq_norfab_expired_total"), 3);
    ck_assert_uint_eq(metric("workq_norfab_resent_total"), 1);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* resend */

/* An "any" POST whose worker sends DISCONNECT before any answer goes at
 * once to the next worker: a new 202 naming it, the same POST; a GET
 * naming the first worker (the client missed that 202) goes to the new
 * one.  Once a worker has answered (201), it keeps the job when it
 * leaves.  With no worker left the job waits (a GET: QUEUED) for the next
 * READY. */
START_TEST(test_resend_disconnect)
{
    start();
    void *w[3] = {peer("w1"), peer("w2"), peer("w3")};
    ready_all(w, 2, "w1,w2");
    void *c = peer("c1");
    NEW_UUID(id);
    const char *body = task("get_facts");
    char bodyc[128];
    snprintf(bodyc, sizeof bodyc, "%s", body);
    post(c, "any", id, bodyc);
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w[0], "0x04", "c1", id, bodyc);
    SEND(w[0], "", NFPW, "0x03", SVC);
    expect_202(c, id, "any", "[\"w2\"]");
    expect_job(w[1], "0x04", "c1", id, bodyc);
    expect_silence(c, false, 100);
    request(c, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c, id, "[\"w1\"]", "[\"w2\"]");
    expect_job(w[1], "0x06", "c1", id, "{}");
    const char *ack = "{\"worker\":\"w2\",\"status\":\"ACCEPTED\"}";
    answer(w[1], "0x05", "c1", id, "201", ack);
    EXPECT(c, "", NFPB, "0x05", SVC, id, "201", ack);
    ready(w[0], SVC);
    await_workers(SVC, "w2,w1");
    SEND(w[1], "", NFPW, "0x03", SVC);
    await_workers(SVC, "w1");
    expect_silence(c, false, 100);
    expect_silence(w[0], true, 0);
    /* only w1 left, and it leaves too: the job waits */
    NEW_UUID(next);
    post(c, "any", next, "{}");
    expect_202(c, next, "any", "[\"w1\"]");
    expect_job(w[0], "0x04", "c1", next, "{}");
    SEND(w[0], "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    request(c, "0x06", SVC, "[\"w1\"]", next, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, next, "202",
           broker_body("[]", next, "[\"w1\"]", "QUEUED", SVC, NULL));
    ready(w[2], SVC);
    expect_202(c, next, "any", "[\"w3\"]");
    expect_job(w[2], "0x04", "c1", next, "{}");
    expect_silence(c, false, 50);
    stop();
}
END_TEST

/* A POST named to a worker, or to "all", is not moved when a worker
 * leaves: the others get nothing more; a GET for the named one, whose
 * worker is gone with no result, gets 400. */
START_TEST(test_resend_not_named)
{
    start();
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *c = peer("c1");
    NEW_UUID(named);
    NEW_UUID(all);
    post(c, "w1", named, "{}");
    expect_202(c, named, "w1", "[\"w1\"]");
    post(c, "all", all, "{}");
    expect_202(c, all, "all", "[\"w1\",\"w2\"]");
    expect_job(w[0], "0x04", "c1", named, "{}");
    expect_job(w[0], "0x04", "c1", all, "{}");
    expect_job(w[1], "0x04", "c1", all, "{}");
    SEND(w[0], "", NFPW, "0x03", SVC);
    await_workers(SVC, "w2");
    expect_silence(c, false, 150);
    expect_silence(w[1], true, 0);
    request(c, "0x06", SVC, "[\"w1\"]", named, "{}");
    expect_400(c, SVC, named, "[\"w1\"]", NO_RESULT);
    /* the "all" one: w2 is still there */
    request(c, "0x06", SVC, "[\"w1\",\"w2\"]", all, "{}");
    expect_202(c, all, "[\"w1\",\"w2\"]", "[\"w2\"]");
    expect_job(w[1], "0x06", "c1", all, "{}");
    stop();
}
END_TEST

/* With heartbeats: a silent worker's unanswered "any" job goes to another
 * worker once the broker finds it dead, within the window doc/norfab.md
 * gives; with no worker left, a dead worker's job waits for the next
 * READY. */
START_TEST(test_resend_dead)
{
    TIMING_ONLY();
    int ka = 100 * systest_slow();
    start_heartbeat(ka, 3);
    void *w1 = peer("w1"), *w2 = peer("w2"), *w3 = peer("w3");
    int64_t t0 = systest_now_ms(); /* before w1's last word, its READY */
    ready(w1, SVC);
    await_workers(SVC, "w1");
    int64_t t_ready = systest_now_ms(); /* after it */
    ready(w2, SVC);
    await_workers(SVC, "w1,w2");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "any", id, task("x"));
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, task("x"));
    expect_job_alive(w2, SVC, "0x04", "c1", id, task("x"));
    int64_t t1 = systest_now_ms();
    expect_202(c, id, "any", "[\"w2\"]");
    if (systest_exact_timing()) {
        ck_assert_msg(t1 - t0 >= 2 * ka, "re-sent %lld ms after w1's last word",
                      (long long)(t1 - t0));
        ck_assert_msg(t1 - t_ready <= 4 * ka + 300, "re-sent %lld ms after w1's last word",
                      (long long)(t1 - t_ready));
    }
    ck_assert_str_eq(worker_names("{}"), "w2");
    /* w2 falls silent with both jobs: they wait for w3 */
    NEW_UUID(next);
    post(c, "any", next, "{}");
    expect_202(c, next, "any", "[\"w2\"]");
    expect_job(w2, "0x04", "c1", next, "{}");
    await_workers(SVC, "");
    request(c, "0x06", SVC, "any", next, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, next, "202",
           broker_body("[]", next, "any", "QUEUED", SVC, NULL));
    ready(w3, SVC);
    /* the first job too: w2 never answered it either; first in, first out */
    expect_202(c, id, "any", "[\"w3\"]");
    expect_202(c, next, "any", "[\"w3\"]");
    expect_job(w3, "0x04", "c1", id, task("x"));
    expect_job(w3, "0x04", "c1", next, "{}");
    expect_silence(c, false, 50);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* results */

/* A worker's final 200 is kept: after the worker has left, a GET naming it
 * gets a 202 naming it, then that 200 from the broker, byte for byte.  A
 * GET for a uuid never posted: 400. */
START_TEST(test_kept_result)
{
    start();
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "any", id, task("get_facts"));
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, task("get_facts"));
    const char *ack = "{\"worker\":\"w1\",\"status\":\"ACCEPTED\"}";
    answer(w1, "0x05", "c1", id, "201", ack);
    EXPECT(c, "", NFPB, "0x05", SVC, id, "201", ack);
    request(c, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c, id, "[\"w1\"]", "[\"w1\"]");
    expect_job(w1, "0x06", "c1", id, "{}");
    /* its result: JSON, with bytes that are no text at its end */
    static const char result[] = "{\"w1\":{\"result\":{\"r1\":[1,2]},\"failed\":false}}\x00\xff\n";
    const size_t rlen = sizeof result - 1;
    const struct fr answer200[] = {{"", 0}, {NFPW, 6}, {"0x05", 4}, {"c1", 2},
                                   {"", 0}, {id, 32},  {"200", 3},  {result, rlen}};
    send_frames(w1, answer200, 8);
    const struct fr want200[] = {{"", 0},  {NFPB, 6},  {"0x05", 4},   {SVC, strlen(SVC)},
                                 {id, 32}, {"200", 3}, {result, rlen}};
    expect_frames(c, false, want200, 7);
    /* still there: a GET goes to w1 */
    request(c, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c, id, "[\"w1\"]", "[\"w1\"]");
    expect_job(w1, "0x06", "c1", id, "{}");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    static const char *const targets[] = {"[\"w1\"]", "w1", "any", "all", "[\"w9\"]"};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        request(c, "0x06", SVC, targets[i], id, "{}");
        expect_202(c, id, targets[i], "[\"w1\"]");
        expect_frames(c, false, want200, 7);
    }
    expect_silence(c, false, 50);
    /* a GET from another client gets it too, as its own */
    void *c2 = peer("c2");
    request(c2, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c2, id, "[\"w1\"]", "[\"w1\"]");
    expect_frames(c2, false, want200, 7);
    NEW_UUID(never);
    request(c, "0x06", SVC, "[\"w1\"]", never, "{}");
    expect_400(c, SVC, never, "[\"w1\"]", NO_JOB);
    stop();
}
END_TEST

/* An "all" job: each worker's 200 kept; a GET naming both, one of them
 * still there and owing its answer, goes to that one and gets the other's
 * kept 200; once both have answered and left, both kept 200s come, in
 * the order of the 202. */
START_TEST(test_kept_results_all)
{
    start();
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "all", id, "{}");
    expect_202(c, id, "all", "[\"w1\",\"w2\"]");
    expect_job(w[0], "0x04", "c1", id, "{}");
    expect_job(w[1], "0x04", "c1", id, "{}");
    answer(w[0], "0x05", "c1", id, "200", "{\"w1\":1}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":1}");
    SEND(w[0], "", NFPW, "0x03", SVC);
    await_workers(SVC, "w2");
    const char *both = "[\"w1\",\"w2\"]";
    request(c, "0x06", SVC, both, id, "{}");
    expect_202(c, id, both, both);
    expect_job(w[1], "0x06", "c1", id, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":1}");
    /* w2 answers 300 (pending), then 200, and leaves */
    answer(w[1], "0x05", "c1", id, "300", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "300", "{}");
    answer(w[1], "0x05", "c1", id, "200", "{\"w2\":2}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w2\":2}");
    SEND(w[1], "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    request(c, "0x06", SVC, both, id, "{}");
    expect_202(c, id, both, both);
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":1}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w2\":2}");
    request(c, "0x06", SVC, "[\"w2\"]", id, "{}");
    expect_202(c, id, "[\"w2\"]", "[\"w2\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w2\":2}");
    expect_silence(c, false, 50);
    stop();
}
END_TEST

/* -norfab-result-ttl: the kept 200 goes after it; the GET then gets 400.
 * The job's uuid can then be posted again, a new job. */
START_TEST(test_result_ttl)
{
    TIMING_ONLY();
    int ka = 100 * systest_slow(), ttl = 1000 * systest_slow();
    const char *kas = f("%d", ka), *ttls = f("%dms", ttl);
    const char *extra[] = {
        "-norfab-keepalive-ms", kas, "-norfab-liveness", "50", "-norfab-result-ttl", ttls, NULL};
    start_with(extra);
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "w1", id, "{}");
    expect_202(c, id, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "200", "{\"w1\":\"done\"}");
    int64_t t0 = systest_now_ms();
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":\"done\"}");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    request(c, "0x06", SVC, "w1", id, "{}");
    expect_202(c, id, "w1", "[\"w1\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":\"done\"}");
    int64_t deadline = systest_now_ms() + ttl + systest_wait_ms();
    for (;;) {
        ck_assert_msg(systest_now_ms() < deadline, "the kept 200 never went");
        request(c, "0x06", SVC, "w1", id, "{}");
        struct zm m;
        next_msg(c, false, &m, "the GET's answer");
        bool gone = zm_is(&m, 5, "400");
        ck_assert_msg(gone || zm_is(&m, 6, dispatched("[\"w1\"]", id, "w1", SVC)), "got %s",
                      show(&m));
        if (gone) {
            ck_assert_msg(m.n == 7 && zm_is(&m, 6, failed(id, "w1", SVC, NO_JOB)), "got %s",
                          show(&m));
            zm_free(&m);
            break;
        }
        zm_free(&m);
        EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":\"done\"}");
        systest_sleep_ms(50);
    }
    int64_t took = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(took >= ttl - 20 && took <= ttl + ka + 1000, "kept for %lld ms",
                      (long long)took);
    /* a new job under the same uuid */
    ready(w1, SVC);
    await_workers(SVC, "w1");
    post(c, "any", id, "{\"again\":1}");
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{\"again\":1}");
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* persist */

/* Start with a command log in dir, every record synced, and more options
 * (NULL terminated; NULL: none). */
static void
start_logged(const char *dir, const char *const *more)
{
    const char *extra[24] = {"-cmdlog-path", dir, "-cmdlog-sync", "always"};
    size_t n = 4;
    for (size_t i = 0; more != NULL && more[i] != NULL; i++) {
        ck_assert_uint_lt(n, 23);
        extra[n++] = more[i];
    }
    extra[n] = NULL;
    start_with(extra);
}

/* Every record the broker made so far is written: the reply to a Workq
 * command is held until the log has released the records before it. */
static void
log_written(void)
{
    int fd = systest_connect_port(srv.s.port);
    (void)systest_server_stat(fd, "jobs");
    close(fd);
}

/* Close every socket and SIGKILL the server (under a wrapper, the
 * wrapper's process). */
static void
crash(void)
{
    for (size_t i = 0; i < nsocks; i++)
        zmq_close(socks[i]);
    nsocks = 0;
    admin = NULL;
    zmq_ctx_term(zctx);
    zctx = NULL;
    systest_proc_crash(&srv);
}

/* The three kinds of POST a restart keeps, made on a logged server: q
 * queued (service netbox, no worker), e ended (w1's 200 kept: result),
 * u sent to w1 and unanswered; and d queued, then deleted. */
static void
persist_setup(const char *q, const char *e, const char *u, const char *d, const char *result)
{
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    post(c, "any", e, task("ended"));
    expect_202(c, e, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", e, task("ended"));
    answer(w1, "0x05", "c1", e, "201", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, e, "201", "{}");
    answer(w1, "0x05", "c1", e, "200", result);
    EXPECT(c, "", NFPB, "0x05", SVC, e, "200", result);
    post(c, "any", u, task("unanswered"));
    expect_202(c, u, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", u, task("unanswered"));
    request(c, "0x04", "netbox", "any", q, task("queued"));
    request(c, "0x04", "netbox", "all", d, task("deleted"));
    request(c, "0x07", "netbox", "all", d, "{}");
    EXPECT(c, "", NFPB, "0x05", "netbox", d, "200",
           broker_body("null", d, "all", "DELETED", "netbox", NULL));
    expect_queued(c, "netbox", q);
    int fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 2);
    close(fd);
    log_written();
}

/* After the restart: the kept 200 of e; d gone; q goes to the first
 * netbox worker. */
static void
persist_check(void *c, const char *q, const char *e, const char *d, const char *result)
{
    request(c, "0x06", SVC, "[\"w1\"]", e, "{}");
    expect_202(c, e, "[\"w1\"]", "[\"w1\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, e, "200", result);
    request(c, "0x06", "netbox", "all", d, "{}");
    expect_400(c, "netbox", d, "all", NO_JOB);
    expect_queued(c, "netbox", q);
    void *nb = peer("nb1");
    ready(nb, "netbox");
    EXPECT(c, "", NFPB, "0x05", "netbox", q, "202", dispatched("[\"nb1\"]", q, "any", "netbox"));
    expect_job(nb, "0x04", "c1", q, task("queued"));
    expect_silence(nb, true, 50);
}

/* kill -9 with a command log: after the restart the queued POST waits and
 * goes to the first worker of its service, the unanswered "any" POST goes
 * to another worker once w1 has had its liveness to come back (it does
 * not), the ended one's kept 200 answers a GET. */
START_TEST(test_persist_kill)
{
    char dir[32];
    systest_tmpdir_new(dir);
    NEW_UUID(q);
    NEW_UUID(e);
    NEW_UUID(u);
    NEW_UUID(d);
    const char *result = "{\"w1\":{\"result\":\"kept\",\"failed\":false}}";
    start_logged(dir, NULL);
    persist_setup(q, e, u, d, result);
    crash();

    int ka = 200 * systest_slow();
    const char *kas = f("%d", ka);
    const char *hb[] = {"-norfab-keepalive-ms", kas, "-norfab-liveness", "3", NULL};
    start_logged(dir, hb);
    int64_t t0 = systest_now_ms(); /* after the server's start */
    void *c = peer("c1");
    void *w2 = peer("w2");
    ready(w2, SVC);
    persist_check(c, q, e, d, result);
    int fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 2);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-queued-jobs"), 0);
    expect_job_alive(w2, SVC, "0x04", "c1", u, task("unanswered"));
    int64_t took = systest_now_ms() - t0;
    expect_202(c, u, "any", "[\"w2\"]");
    if (systest_exact_timing())
        ck_assert_msg(took >= 2 * ka, "re-sent %lld ms after the restart", (long long)took);
    /* w2 answers it; a GET after w2 left gets the kept 200 */
    answer(w2, "0x05", "c1", u, "200", "{\"w2\":true}");
    EXPECT(c, "", NFPB, "0x05", SVC, u, "200", "{\"w2\":true}");
    SEND(w2, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    request(c, "0x06", SVC, "any", u, "{}");
    expect_202(c, u, "any", "[\"w2\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, u, "200", "{\"w2\":true}");
    /* and so after another kill -9 */
    log_written();
    close(fd);
    crash();
    start_logged(dir, NULL);
    c = peer("c1");
    request(c, "0x06", SVC, "any", u, "{}");
    expect_202(c, u, "any", "[\"w2\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, u, "200", "{\"w2\":true}");
    request(c, "0x06", SVC, "any", e, "{}");
    expect_202(c, e, "any", "[\"w1\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, e, "200", result);
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* Start with a command log in dir and no NORFAB listener: its records are
 * skipped and kept. */
static void
start_logged_plain(const char *dir)
{
    const char *args[] = {"-listen", "127.0.0.1:0", "-cmdlog-path", dir, "-cmdlog-sync",
                          "always",  NULL};
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    nport = 0;
    zctx = zmq_ctx_new();
    ck_assert_ptr_nonnull(zctx);
    nsocks = 0;
    admin = NULL;
}

/* SIGTERM (exit status 0) and a restart replay the same; so does a
 * restart with -norfab-listen again after one without it, which leaves
 * NORFAB's records alone (and has no norfab keys in inspect server). */
START_TEST(test_persist_restart)
{
    char dir[32];
    systest_tmpdir_new(dir);
    NEW_UUID(q);
    NEW_UUID(e);
    NEW_UUID(u);
    NEW_UUID(d);
    const char *result = "{\"w1\":{\"result\":\"kept\",\"failed\":false}}";
    start_logged(dir, NULL);
    persist_setup(q, e, u, d, result);
    stop();

    start_logged_plain(dir);
    int fd = systest_connect_port(srv.s.port);
    systest_sends(fd, "inspect server\r\n");
    systest_expect(fd, "+OK 1\r\n");
    unsigned k = 0;
    ck_assert_int_eq(sscanf(systest_read_line(fd), "server %u", &k), 1);
    ck_assert_uint_eq(k, 14);
    close(fd);
    stop();

    start_logged(dir, NULL);
    void *c = peer("c1");
    fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 2);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-queued-jobs"), 1);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-sent-jobs"), 1);
    close(fd);
    persist_check(c, q, e, d, result);
    /* w1 comes back: u is still its job */
    void *w1 = ready_worker("w1");
    request(c, "0x06", SVC, "any", u, "{}");
    expect_202(c, u, "any", "[\"w1\"]");
    expect_job(w1, "0x06", "c1", u, "{}");
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* The queue TTL and the result TTL go on across a kill -9: a POST queued
 * before it expires that long after it was queued, not after the
 * restart; a kept 200 goes that long after its job ended. */
START_TEST(test_persist_ttls)
{
    TIMING_ONLY();
    char dir[32];
    systest_tmpdir_new(dir);
    int ka = 100 * systest_slow(), ttl = 1500 * systest_slow();
    char kas[16], ttls[16]; /* opts serve two starts: not in f()'s ring */
    snprintf(kas, sizeof kas, "%d", ka);
    snprintf(ttls, sizeof ttls, "%dms", ttl);
    const char *opts[] = {"-norfab-keepalive-ms",
                          kas,
                          "-norfab-liveness",
                          "50",
                          "-norfab-queue-ttl",
                          ttls,
                          "-norfab-result-ttl",
                          ttls,
                          NULL};
    start_logged(dir, opts);
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    NEW_UUID(e);
    NEW_UUID(q);
    post(c, "any", e, "{}");
    expect_202(c, e, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", e, "{}");
    int64_t t_ended = systest_now_ms();
    answer(w1, "0x05", "c1", e, "200", "{\"w1\":1}");
    EXPECT(c, "", NFPB, "0x05", SVC, e, "200", "{\"w1\":1}");
    int64_t t_queued = systest_now_ms();
    request(c, "0x04", "netbox", "any", q, "{}");
    log_written();
    systest_sleep_ms(ttl / 2);
    crash();

    start_logged(dir, opts);
    c = peer("c1");
    request(c, "0x06", SVC, "any", e, "{}");
    expect_202(c, e, "any", "[\"w1\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, e, "200", "{\"w1\":1}");
    expect_queued(c, "netbox", q);
    EXPECT(c, "", NFPB, "0x05", "netbox", q, "408",
           broker_body("null", q, "any", "EXPIRED", "netbox", EXPIRED_WHY));
    int64_t took = systest_now_ms() - t_queued;
    if (systest_exact_timing())
        ck_assert_msg(took >= ttl - 20 && took <= ttl + ka + 400, "408 %lld ms after the POST",
                      (long long)took);
    for (int64_t t0 = systest_now_ms();; systest_sleep_ms(20)) {
        ck_assert_msg(systest_now_ms() - t0 < ttl + systest_wait_ms(), "the kept 200 stays");
        request(c, "0x06", SVC, "any", e, "{}");
        struct zm m;
        next_msg(c, false, &m, "the GET's answer");
        bool gone = zm_is(&m, 5, "400");
        ck_assert_msg(m.n == 7 && zm_is(&m, 6,
                                        gone ? failed(e, "any", SVC, NO_JOB)
                                             : dispatched("[\"w1\"]", e, "any", SVC)),
                      "got %s", show(&m));
        zm_free(&m);
        if (gone)
            break;
        EXPECT(c, "", NFPB, "0x05", SVC, e, "200", "{\"w1\":1}");
    }
    took = systest_now_ms() - t_ended;
    if (systest_exact_timing())
        ck_assert_msg(took >= ttl - 20 && took <= ttl + ka + 400,
                      "the kept 200 went %lld ms after the job ended", (long long)took);
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* A worker that has answered a job (201) keeps it while it is away
 * (doc/norfab.md, "Re-sent": NORFAB's workers hold their jobs and answer
 * for them when they come back): it comes back, answers the client's GET
 * with 200, leaves, and that 200 is kept for the next GET. */
START_TEST(test_answered_job_waits_for_worker)
{
    int ka = 100 * systest_slow();
    start_heartbeat(ka, 3);
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "any", id, "{}");
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "201", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "201", "{}");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    /* a few heartbeats pass (past the grace of the start too) */
    systest_sleep_ms(6 * ka);
    int fd = systest_connect_port(srv.s.port);
    uint64_t sent_while_away = systest_server_stat(fd, "norfab-sent-jobs");
    close(fd);
    ready(w1, SVC);
    await_workers(SVC, "w1");
    request(c, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c, id, "[\"w1\"]", "[\"w1\"]");
    expect_job_alive(w1, SVC, "0x06", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "200", "{\"w1\":\"late\"}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":\"late\"}");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    request(c, "0x06", SVC, "[\"w1\"]", id, "{}");
    expect_202(c, id, "[\"w1\"]", "[\"w1\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{\"w1\":\"late\"}");
    /* and it was still a job, sent, while w1 was away */
    ck_assert_uint_eq(sent_while_away, 1);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* curve */

/* A DEALER named name with CURVE: the broker's public key server_pub, its
 * own key pair (Z85). */
static void *
peer_curve(const char *name, const char *server_pub, const char *pub, const char *sec)
{
    void *s = zmq_socket(zctx, ZMQ_DEALER);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_IDENTITY, name, strlen(name)), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_pub, 40), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 40), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 40), 0);
    int zero = 0, wait = systest_wait_ms();
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero), 0);
    ck_assert_int_eq(zmq_setsockopt(s, ZMQ_SNDTIMEO, &wait, sizeof wait), 0);
    ck_assert_int_eq(zmq_connect(s, f("tcp://127.0.0.1:%d", nport)), 0);
    ck_assert_uint_lt(nsocks, sizeof socks / sizeof socks[0]);
    socks[nsocks++] = s;
    return s;
}

/* A CURVE key pair (Z85, 40 characters each). */
struct keys {
    char pub[41], sec[41];
};

static struct keys
keypair(void)
{
    struct keys k;
    ck_assert_int_eq(zmq_curve_keypair(k.pub, k.sec), 0);
    return k;
}

/* Write text to dir/name; its path. */
static const char *
write_file(const char *dir, const char *name, const char *text)
{
    const char *path = f("%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fputs(text, fp) >= 0, 1);
    ck_assert_int_eq(fclose(fp), 0);
    return path;
}

/* show_broker for a CURVE client: "security" says so and gives the
 * broker's public key; the MMI is answered, the worker's jobs go; a
 * client without CURVE, or with another broker key, gets nothing. */
START_TEST(test_curve)
{
    if (!zmq_has("curve"))
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    struct keys broker = keypair(), client = keypair(), worker = keypair(), other = keypair();
    char keyfile[96];
    snprintf(keyfile, sizeof keyfile, "%s", write_file(dir, "broker.key", f("%s\n", broker.sec)));
    const char *extra[] = {"-norfab-curve-secret", keyfile, NULL};
    start_with(extra);
    ck_assert_msg(systest_proc_wait(&srv, true,
                                    f("NORFAB CURVE on public_key=%s clients=any key", broker.pub)),
                  "%s", srv.err.p);
    ck_assert_ptr_null(strstr(srv.err.p, broker.sec));
    void *c = peer_curve("c1", broker.pub, client.pub, client.sec);
    json_t *j = mmi_on(c, "0x11", "show_broker", "{}", "200");
    json_t *sec = json_object_get(j, "security");
    char *text = json_dumps(sec, JSON_COMPACT);
    ck_assert_str_eq(text, f("{\"zmq-auth\":true,\"broker-public-key\":%s}", jstr(broker.pub)));
    free(text);
    json_decref(j);
    void *w1 = peer_curve("w1", broker.pub, worker.pub, worker.sec);
    ready(w1, SVC);
    expect_silence(c, false, 50);
    NEW_UUID(id);
    for (int64_t t0 = systest_now_ms();; systest_sleep_ms(10)) {
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "w1 never ready");
        j = mmi_on(c, "0x11", "show_workers", "{}", "200");
        bool ready_now = strcmp(jget(json_array_get(j, 0), "name"), "w1") == 0;
        json_decref(j);
        if (ready_now)
            break;
    }
    post(c, "any", id, "{}");
    expect_202(c, id, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "200", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{}");
    /* no CURVE; CURVE with another broker's key: nothing comes */
    void *plain = peer("plain");
    void *wrong = peer_curve("wrong", other.pub, client.pub, client.sec);
    const char *mmi_body = task("show_broker");
    request(plain, "0x11", MMI_SVC, "all", "u1", mmi_body);
    request(wrong, "0x11", MMI_SVC, "all", "u2", mmi_body);
    ready(plain, SVC);
    expect_silence(plain, false, 300);
    expect_silence(wrong, false, 0);
    j = mmi_on(c, "0x11", "show_workers", "{}", "200");
    ck_assert_uint_eq(json_array_size(j), 1);
    json_decref(j);
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* -norfab-curve-clients: only the keys listed get in (the others are
 * refused and logged); the file takes comments and blank lines. */
START_TEST(test_curve_clients)
{
    if (!zmq_has("curve"))
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    struct keys broker = keypair(), allowed = keypair(), refused = keypair();
    char keyfile[96], clients[96];
    snprintf(keyfile, sizeof keyfile, "%s", write_file(dir, "broker.key", f("%s\n", broker.sec)));
    snprintf(clients, sizeof clients, "%s",
             write_file(dir, "clients", f("# the operators\n\n  %s\r\n", allowed.pub)));
    const char *extra[] = {"-norfab-curve-secret", keyfile, "-norfab-curve-clients", clients, NULL};
    start_with(extra);
    ck_assert_msg(
        systest_proc_wait(&srv, true,
                          f("NORFAB CURVE on public_key=%s clients=%s", broker.pub, clients)),
        "%s", srv.err.p);
    void *in = peer_curve("in", broker.pub, allowed.pub, allowed.sec);
    void *out = peer_curve("out", broker.pub, refused.pub, refused.sec);
    request(out, "0x11", MMI_SVC, "all", "u1", task("show_broker"));
    json_t *j = mmi_on(in, "0x11", "show_broker", "{}", "200");
    ck_assert(json_is_true(json_object_get(json_object_get(j, "security"), "zmq-auth")));
    json_decref(j);
    ck_assert_msg(systest_proc_wait(&srv, true,
                                    f("NORFAB client refused key=%s why=\"this client key is not "
                                      "let in (-norfab-curve-clients)\"",
                                      refused.pub)),
                  "%s", srv.err.p);
    expect_silence(out, false, 200);
    j = mmi_on(in, "0x11", "show_clients", "{}", "200");
    ck_assert_uint_eq(json_array_size(j), 1);
    ck_assert_str_eq(jget(json_array_get(j, 0), "name"), "in");
    json_decref(j);
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* Key files that are no key: the server does not start, saying why, with
 * exit status 78 (EX_CONFIG, as for another listener's bad password
 * file); -norfab-curve-clients without -norfab-curve-secret: 78. */
START_TEST(test_curve_bad_options)
{
    if (!zmq_has("curve"))
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    struct keys broker = keypair();
    char missing[96], empty[96], blank[96], shortkey[96], longkey[96], notz85[96], good[96],
        badclients[96];
    snprintf(missing, sizeof missing, "%s/none", dir);
    snprintf(empty, sizeof empty, "%s", write_file(dir, "empty", ""));
    snprintf(blank, sizeof blank, "%s", write_file(dir, "blank", f("\n%s\n", broker.sec)));
    snprintf(shortkey, sizeof shortkey, "%s", write_file(dir, "short", f("%.39s\n", broker.sec)));
    snprintf(longkey, sizeof longkey, "%s", write_file(dir, "long", f("%s \n", broker.sec)));
    snprintf(notz85, sizeof notz85, "%s", write_file(dir, "notz85", f("~%.39s\n", broker.sec + 1)));
    snprintf(good, sizeof good, "%s", write_file(dir, "good", f("%s\n", broker.sec)));
    snprintf(badclients, sizeof badclients, "%s",
             write_file(dir, "clients", f("# ok\n%s\n", broker.sec + 1)));
    static const char *const cannot = "cannot read the NORFAB CURVE secret key file=%s error=%s";
    static const char *const not_key =
        "the NORFAB CURVE secret key file=%s does not start with a 40-character Z85 key";
    struct {
        const char *secret, *clients;
        char says[256];
    } cases[] = {
        {missing, NULL, ""}, {empty, NULL, ""},  {blank, NULL, ""},      {shortkey, NULL, ""},
        {longkey, NULL, ""}, {notz85, NULL, ""}, {good, badclients, ""}, {good, missing, ""},
    };
    snprintf(cases[0].says, 256, cannot, missing, "\"No such file or directory\"");
    snprintf(cases[1].says, 256, cannot, empty, "\"it is empty\"");
    snprintf(cases[2].says, 256, "the NORFAB CURVE secret key file=%s starts with an empty line",
             blank);
    snprintf(cases[3].says, 256, not_key, shortkey);
    snprintf(cases[4].says, 256, not_key, longkey);
    snprintf(cases[5].says, 256, not_key, notz85);
    snprintf(cases[6].says, 256,
             "the NORFAB client keys file=%s line=2 is not a 40-character Z85 key", badclients);
    snprintf(cases[7].says, 256,
             "cannot read the NORFAB client keys file=%s error=\"No such file or directory\"",
             missing);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"-listen",
                              "127.0.0.1:0",
                              "-norfab-listen",
                              "127.0.0.1:0",
                              "-norfab-curve-secret",
                              cases[i].secret,
                              cases[i].clients != NULL ? "-norfab-curve-clients" : NULL,
                              cases[i].clients,
                              NULL};
        struct systest_proc p;
        int st = systest_proc_run(&p, args);
        ck_assert_msg(st == 78, "case %zu: exit status %d: %s", i, st, p.err.p);
        ck_assert_msg(strstr(p.err.p, cases[i].says) != NULL, "case %zu: %s", i, p.err.p);
        ck_assert_ptr_null(strstr(p.err.p, broker.sec));
        systest_proc_free(&p);
    }
    const char *args[] = {"-listen",     "127.0.0.1:0",           "-norfab-listen",
                          "127.0.0.1:0", "-norfab-curve-clients", good,
                          NULL};
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), 78);
    ck_assert_msg(strstr(p.err.p, "-norfab-curve-clients needs -norfab-curve-secret") != NULL, "%s",
                  p.err.p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* figures */

/* The KEEPALIVEs show_workers says w1 has sent. */
static unsigned long long
keepalives_rx(void)
{
    json_t *j = mmi("show_workers", "{}");
    unsigned long long tx = 0, rx = 0;
    ck_assert_int_eq(
        sscanf(jget(json_array_get(j, 0), "keepalives tx/rx"), "%llu / %llu", &tx, &rx), 2);
    json_decref(j);
    return rx;
}

/* Expect the record in inspect workers of the NORFAB worker name, with
 * this label and last command. */
static void
expect_worker_record(int fd, const char *name, const char *label, const char *last)
{
    ck_assert_str_eq(systest_read_line(fd), f("%s 12", name));
    ck_assert_str_eq(systest_read_line(fd), "hostname ");
    ck_assert_str_eq(systest_read_line(fd), "pid 0");
    ck_assert_str_eq(systest_read_line(fd), f("labels [%s]", jstr(label)));
    ck_assert_str_eq(systest_read_line(fd), "connections 1");
    const char *l = systest_read_line(fd);
    ck_assert_msg(strncmp(l, "last-beat ", 10) == 0, "%s", l);
    systest_check_recent(l + 10);
    ck_assert_str_eq(systest_read_line(fd), "state running");
    ck_assert_str_eq(systest_read_line(fd), "kind norfab");
    ck_assert_str_eq(systest_read_line(fd), "address ");
    l = systest_read_line(fd);
    ck_assert_msg(strncmp(l, "connected ", 10) == 0, "%s", l);
    systest_check_recent(l + 10);
    ck_assert_str_eq(systest_read_line(fd), f("last-command %s", last));
    ck_assert_str_eq(systest_read_line(fd), "waiting-on ");
    ck_assert_str_eq(systest_read_line(fd), "jobs 0");
}

/* A ready worker is in Workq's worker registry: kind norfab, its service
 * as its label, its last command; gone when it leaves. */
START_TEST(test_inspect_workers)
{
    start();
    int fd = systest_connect_port(srv.s.port);
    systest_roundtrip(fd, "inspect workers 0 10\r\n", "+OK 0\r\n");
    void *w1 = ready_worker("w1");
    systest_sends(fd, "inspect workers 0 10\r\n");
    systest_expect(fd, "+OK 1\r\n");
    expect_worker_record(fd, "w1", SVC, "READY");
    SEND(w1, "", NFPW, "0x02", SVC);
    for (int64_t t0 = systest_now_ms(); keepalives_rx() < 1; systest_sleep_ms(10))
        ck_assert_msg(systest_now_ms() - t0 < systest_wait_ms(), "no KEEPALIVE taken");
    systest_sends(fd, "inspect workers 0 10\r\n");
    systest_expect(fd, "+OK 1\r\n");
    expect_worker_record(fd, "w1", SVC, "KEEPALIVE");
    void *c = peer("c1");
    NEW_UUID(id);
    post(c, "w1", id, "{}");
    expect_202(c, id, "w1", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", id, "{}");
    answer(w1, "0x05", "c1", id, "200", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, id, "200", "{}");
    systest_sends(fd, "inspect workers 0 10\r\n");
    systest_expect(fd, "+OK 1\r\n");
    expect_worker_record(fd, "w1", SVC, "RESPONSE");
    /* a worker of another service; both sorted by name */
    void *nb = peer("a-nb");
    ready(nb, "netbox");
    await_workers("netbox", "a-nb");
    systest_sends(fd, "inspect workers 0 10\r\n");
    systest_expect(fd, "+OK 2\r\n");
    expect_worker_record(fd, "a-nb", "netbox", "READY");
    expect_worker_record(fd, "w1", SVC, "RESPONSE");
    SEND(w1, "", NFPW, "0x03", SVC);
    SEND(nb, "", NFPW, "0x03", "netbox");
    await_workers(SVC, "");
    await_workers("netbox", "");
    systest_roundtrip(fd, "inspect workers 0 10\r\n", "+OK 0\r\n");
    close(fd);
    stop();
}
END_TEST

/* Check the norfab keys of inspect server and the series of /metrics. */
static void
expect_figures(int fd, unsigned jobs, unsigned queued, unsigned sent, unsigned queues)
{
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), jobs);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-queued-jobs"), queued);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-sent-jobs"), sent);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-queues"), queues);
    ck_assert_uint_eq(metric("workq_norfab_jobs{state=\"queued\"}"), queued);
    ck_assert_uint_eq(metric("workq_norfab_jobs{state=\"sent\"}"), sent);
}

/* inspect server's norfab keys and /metrics' series follow the jobs:
 * queued, sent, ended, deleted. */
START_TEST(test_figures)
{
    start_metrics();
    int fd = systest_connect_port(srv.s.port);
    systest_sends(fd, "inspect server\r\n");
    systest_expect(fd, "+OK 1\r\n");
    systest_expect(fd, "server 18\r\n");
    for (int i = 0; i < 18; i++)
        (void)systest_read_line(fd);
    expect_figures(fd, 0, 0, 0, 0);
    void *c = peer("c1");
    NEW_UUID(q1);
    NEW_UUID(q2);
    request(c, "0x04", "netbox", "any", q1, "{}");
    request(c, "0x04", "netbox", "all", q2, "{}");
    expect_silence(c, false, 50);
    expect_figures(fd, 2, 2, 0, 1);
    void *w1 = ready_worker("w1");
    NEW_UUID(s1);
    post(c, "any", s1, "{}");
    expect_202(c, s1, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", s1, "{}");
    expect_figures(fd, 3, 2, 1, 2);
    ck_assert_uint_eq(metric("workq_norfab_workers"), 1);
    ck_assert_uint_eq(metric("workq_norfab_services"), 2);
    /* w1 answers 201: still sent; 200: ended, no longer a job */
    answer(w1, "0x05", "c1", s1, "201", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, s1, "201", "{}");
    expect_figures(fd, 3, 2, 1, 2);
    answer(w1, "0x05", "c1", s1, "200", "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, s1, "200", "{}");
    expect_figures(fd, 2, 2, 0, 1);
    request(c, "0x07", "netbox", "any", q1, "{}");
    EXPECT(c, "", NFPB, "0x05", "netbox", q1, "200",
           broker_body("null", q1, "any", "DELETED", "netbox", NULL));
    expect_figures(fd, 1, 1, 0, 1);
    void *nb = peer("nb1");
    ready(nb, "netbox");
    EXPECT(c, "", NFPB, "0x05", "netbox", q2, "202", dispatched("[\"nb1\"]", q2, "all", "netbox"));
    expect_figures(fd, 1, 0, 1, 1);
    /* a re-sent POST counts */
    unsigned long long resent = metric("workq_norfab_resent_total");
    NEW_UUID(r);
    post(c, "any", r, "{}");
    expect_202(c, r, "any", "[\"w1\"]");
    SEND(w1, "", NFPW, "0x03", SVC);
    await_workers(SVC, "");
    ck_assert_uint_eq(metric("workq_norfab_resent_total"), resent + 1);
    expect_figures(fd, 2, 1, 1, 2);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* memory */

/* A POST whose body would take the server past -max-memory: 500, kept
 * nowhere (no worker gets it, a GET gets 400); smaller ones still go. */
START_TEST(test_max_memory)
{
    const char *extra[] = {"-max-memory", "100000", NULL};
    start_with(extra);
    void *w1 = ready_worker("w1");
    void *c = peer("c1");
    NEW_UUID(small);
    post(c, "any", small, "{}");
    expect_202(c, small, "any", "[\"w1\"]");
    expect_job(w1, "0x04", "c1", small, "{}");
    size_t n = 150000;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', n);
    big[n] = '\0';
    static const char *const targets[] = {"any", "w1", "all"};
    for (size_t i = 0; i < 3; i++) {
        NEW_UUID(id);
        post(c, targets[i], id, big);
        EXPECT(c, "", NFPB, "0x05", SVC, id, "500",
               broker_body("null", id, targets[i], "FAILED", SVC, "out of memory (-max-memory)"));
        request(c, "0x06", SVC, "any", id, "{}");
        expect_400(c, SVC, id, "any", NO_JOB);
    }
    /* queued: the same */
    NEW_UUID(queued);
    request(c, "0x04", "netbox", "any", queued, big);
    EXPECT(c, "", NFPB, "0x05", "netbox", queued, "500",
           broker_body("null", queued, "any", "FAILED", "netbox", "out of memory (-max-memory)"));
    free(big);
    expect_silence(w1, true, 100);
    int fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 1);
    close(fd);
    expect_post_to_w1(c, w1, "any");
    stop();
}
END_TEST

/* A worker that reads nothing (ZeroMQ lets it queue one message, its
 * kernel 4 KiB): what the broker relays to it waits in ZeroMQ's queue,
 * and -max-memory counts it.  24 MB of GETs for it take the server past
 * its 16 MB: a POST is answered 500; once the worker has read them, the
 * count is back down and POSTs go again. */
START_TEST(test_max_memory_unsent)
{
    const char *extra[] = {"-metrics-listen", "127.0.0.1:0", "-max-memory", "16000000", NULL};
    start_with(extra);
    mport = systest_proc_port(&srv, "metrics");
    void *w1 = zmq_socket(zctx, ZMQ_DEALER);
    ck_assert_ptr_nonnull(w1);
    int one = 1, small = 4096, zero = 0;
    ck_assert_int_eq(zmq_setsockopt(w1, ZMQ_IDENTITY, "w1", 2), 0);
    ck_assert_int_eq(zmq_setsockopt(w1, ZMQ_RCVHWM, &one, sizeof one), 0);
    ck_assert_int_eq(zmq_setsockopt(w1, ZMQ_RCVBUF, &small, sizeof small), 0);
    ck_assert_int_eq(zmq_setsockopt(w1, ZMQ_LINGER, &zero, sizeof zero), 0);
    ck_assert_int_eq(zmq_connect(w1, f("tcp://127.0.0.1:%d", nport)), 0);
    socks[nsocks++] = w1;
    ready(w1, SVC);
    await_workers(SVC, "w1");
    unsigned long long idle = metric("workq_memory_jobs_bytes");
    void *c = peer("c1");
    NEW_UUID(job);
    post(c, "w1", job, "{}");
    expect_202(c, job, "w1", "[\"w1\"]");
    size_t n = 400000;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'g', n);
    big[n] = '\0';
    for (int i = 0; i < 60; i++) {
        request(c, "0x06", SVC, "w1", job, big);
        expect_202(c, job, "w1", "[\"w1\"]");
    }
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    while (metric("workq_memory_jobs_bytes") < 16000000) {
        ck_assert_msg(systest_now_ms() < deadline, "%llu bytes counted",
                      metric("workq_memory_jobs_bytes"));
        systest_sleep_ms(20);
    }
    NEW_UUID(over);
    post(c, "w1", over, "{}");
    EXPECT(c, "", NFPB, "0x05", SVC, over, "500",
           broker_body("null", over, "w1", "FAILED", SVC, "out of memory (-max-memory)"));
    /* the worker reads: its job, then the 60 GETs */
    expect_job(w1, "0x04", "c1", job, "{}");
    for (int i = 0; i < 60; i++)
        expect_job(w1, "0x06", "c1", job, big);
    free(big);
    deadline = systest_now_ms() + systest_wait_ms();
    while (metric("workq_memory_jobs_bytes") > idle + 100000) {
        ck_assert_msg(systest_now_ms() < deadline, "%llu bytes counted, %llu at first",
                      metric("workq_memory_jobs_bytes"), idle);
        systest_sleep_ms(20);
    }
    expect_post_to_w1(c, w1, "w1");
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* read-only */

#define READ_ONLY "read-only: the command log cannot be written"

/* The next message of worker w, within 20 intervals of ms, is a
 * KEEPALIVE. */
static void
expect_keepalive(void *w, int ms)
{
    struct zm m;
    ck_assert_msg(zm_recv(w, &m, 20 * ms), "no KEEPALIVE within %d ms", 20 * ms);
    ck_assert_msg(is_keepalive(&m), "got %s", show(&m));
    zm_free(&m);
}

/* While the command log cannot be written (a file-size limit of 1 byte
 * on the server): a POST, to any target, and a DELETE of a queued POST
 * are answered 500 FAILED after their target is checked, and change
 * nothing, in the log either (a restart shows the same jobs).  GETs,
 * relays and KEEPALIVEs go on: a peer waits only behind messages held
 * for itself, and KEEPALIVEs wait for nothing; a worker's answer that
 * makes a record (a final 200, kept) waits for it.  The POST whose record
 * failed is taken: its 202 and its job are held until the record is
 * written, and the messages after them to the same peers (a refusal),
 * and then go in order; once the limit is lifted, the broker takes POSTs
 * again.  The limit is set on the server's pid, so not under a wrapper. */
START_TEST(test_readonly)
{
    if (systest_wrapped())
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    int ka = 100 * systest_slow();
    const char *kas = f("%d", ka);
    const char *hb[] = {"-norfab-keepalive-ms", kas, "-norfab-liveness", "100", NULL};
    start_logged(dir, hb);
    void *w[2] = {peer("w1"), peer("w2")};
    ready_all(w, 2, "w1,w2");
    void *c1 = peer("c1");
    NEW_UUID(q);
    NEW_UUID(s);
    request(c1, "0x04", "netbox", "any", q, task("queued"));
    post(c1, "w2", s, task("sent"));
    expect_202(c1, s, "w2", "[\"w2\"]");
    expect_job(w[1], "0x04", "c1", s, task("sent"));
    answer(w[1], "0x05", "c1", s, "201", "{}");
    EXPECT(c1, "", NFPB, "0x05", SVC, s, "201", "{}");
    log_written();

    struct rlimit old, lim;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, NULL, &old), 0);
    lim.rlim_cur = 1;
    lim.rlim_max = old.rlim_max;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &lim, NULL), 0);
    /* the POST whose record fails is taken, its 202 and its job held
     * until the record is written, and what follows them to c1 and w1 */
    NEW_UUID(first);
    post(c1, "w1", first, task("first"));
    expect_silence(c1, false, 300);
    NEW_UUID(later);
    post(c1, "any", later, task("later"));
    expect_silence(c1, false, 100);
    /* KEEPALIVEs reach both workers, w1 too with its job held */
    expect_keepalive(w[0], ka);
    expect_keepalive(w[1], ka);

    void *c2 = peer("c2");
    static const char *const targets[] = {"any", "all", "w2", "w1,w2", "[\"w2\"]"};
    const char *refused[6];
    for (size_t i = 0; i < 5; i++) {
        refused[i] = strdup(uuid());
        post(c2, targets[i], refused[i], task("refused"));
        EXPECT(c2, "", NFPB, "0x05", SVC, refused[i], "500",
               broker_body("null", refused[i], targets[i], "FAILED", SVC, READ_ONLY));
    }
    refused[5] = strdup(uuid());
    request(c2, "0x04", "netbox", "all", refused[5], task("refused"));
    EXPECT(c2, "", NFPB, "0x05", "netbox", refused[5], "500",
           broker_body("null", refused[5], "all", "FAILED", "netbox", READ_ONLY));
    /* the target is checked first; the same uuid again: the same answer */
    NEW_UUID(nowhere);
    post(c2, "w9", nowhere, "{}");
    expect_400(c2, SVC, nowhere, "w9", NOT_WORKERS("1"));
    post(c2, "any", refused[0], task("refused"));
    EXPECT(c2, "", NFPB, "0x05", SVC, refused[0], "500",
           broker_body("null", refused[0], "any", "FAILED", SVC, READ_ONLY));
    for (size_t i = 0; i < 6; i++) {
        request(c2, "0x06", i < 5 ? SVC : "netbox", "any", refused[i], "{}");
        expect_400(c2, i < 5 ? SVC : "netbox", refused[i], "any", NO_JOB);
    }
    /* a DELETE of the queued POST: refused, it stays queued */
    request(c2, "0x07", "netbox", "any", q, "{}");
    EXPECT(c2, "", NFPB, "0x05", "netbox", q, "500",
           broker_body("null", q, "any", "FAILED", "netbox", READ_ONLY));
    expect_queued(c2, "netbox", q);
    /* GETs and the workers' answers that change nothing still go */
    request(c2, "0x06", SVC, "w2", s, "{}");
    expect_202(c2, s, "w2", "[\"w2\"]");
    expect_job(w[1], "0x06", "c2", s, "{}");
    answer(w[1], "0x05", "c2", s, "300", "{}");
    EXPECT(c2, "", NFPB, "0x05", SVC, s, "300", "{}");
    int fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 3);
    /* a final 200 is kept: its record first, then the answer (held) */
    answer(w[1], "0x05", "c2", s, "200", "{\"w2\":\"done\"}");
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    while (systest_server_stat(fd, "norfab-jobs") != 2) {
        ck_assert_msg(systest_now_ms() < deadline, "the 200 did not end the job");
        systest_sleep_ms(10);
    }
    close(fd);
    expect_silence(w[1], true, 50);
    expect_silence(c1, false, 50);
    expect_silence(c2, false, 50);

    /* room again: the held messages go, POSTs are taken again */
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &old, NULL), 0);
    EXPECT(c2, "", NFPB, "0x05", SVC, s, "200", "{\"w2\":\"done\"}");
    NEW_UUID(after);
    struct zm m;
    for (int tries = 0;; tries++) {
        post(c2, "w2", after, task("after"));
        next_msg(c2, false, &m, "a 202 or a 500");
        bool taken = zm_is(&m, 5, "202");
        ck_assert_msg(taken ||
                          zm_is(&m, 6, broker_body("null", after, "w2", "FAILED", SVC, READ_ONLY)),
                      "got %s", show(&m));
        zm_free(&m);
        if (taken)
            break;
        ck_assert_int_lt(tries, 100 * systest_slow());
        systest_sleep_ms(50);
    }
    expect_job(w[1], "0x04", "c2", after, task("after"));
    expect_202(c1, first, "w1", "[\"w1\"]");
    EXPECT(c1, "", NFPB, "0x05", SVC, later, "500",
           broker_body("null", later, "any", "FAILED", SVC, READ_ONLY));
    expect_job(w[0], "0x04", "c1", first, task("first"));
    log_written();
    stop();

    /* a restart: the same three jobs and kept answer, the refused ones
     * nowhere */
    start_logged(dir, NULL);
    fd = systest_connect_port(srv.s.port);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-jobs"), 3);
    ck_assert_uint_eq(systest_server_stat(fd, "norfab-queued-jobs"), 1);
    close(fd);
    void *c = peer("c1");
    for (size_t i = 0; i < 6; i++) {
        request(c, "0x06", i < 5 ? SVC : "netbox", "any", refused[i], "{}");
        expect_400(c, i < 5 ? SVC : "netbox", refused[i], "any", NO_JOB);
        free((void *)refused[i]);
    }
    expect_queued(c, "netbox", q);
    request(c, "0x06", SVC, "w2", s, "{}");
    expect_202(c, s, "w2", "[\"w2\"]");
    EXPECT(c, "", NFPB, "0x05", SVC, s, "200", "{\"w2\":\"done\"}");
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

static Suite *
norfab_suite(void)
{
    const struct systest_group groups[] = {
        {"dispatch",
         {test_post_any_turns, test_post_all, test_post_named, test_post_no_workers,
          test_get_delete_put_partial, test_any_turn_after_leave, NULL}},
        {"relay", {test_relay_answers, test_relay_two_clients, NULL}},
        {"forms", {test_client_byte_commands, test_worker_byte_commands, test_open, NULL}},
        {"heartbeat", {test_keepalive_sent, test_silent_worker_dies, test_live_worker_stays, NULL}},
        {"disconnect",
         {test_worker_disconnect, test_unexpected_worker_commands, test_worker_reconnects, NULL}},
        {"malformed",
         {test_malformed_dropped, test_garbage_flood, test_not_utf8_request, test_not_utf8_worker,
          NULL}},
        {"mmi",
         {test_mmi_show_workers, test_mmi_over_get_post, test_mmi_show_broker,
          test_mmi_show_services_clients, test_mmi_disconnect, test_mmi_unsupported,
          test_mmi_long_task, NULL}},
        {"load", {test_load, NULL}},
        {"process", {test_sigterm, test_no_listener, test_bad_options, NULL}},
        {"queue",
         {test_queued_any, test_queued_all, test_queued_get_delete,
          test_queued_delete_other_service, test_queue_ttl, test_queue_ttl_many_services, NULL}},
        {"resend",
         {test_resend_disconnect, test_resend_not_named, test_resend_dead,
          test_answered_job_waits_for_worker, NULL}},
        {"results", {test_kept_result, test_kept_results_all, test_result_ttl, NULL}},
        {"persist", {test_persist_kill, test_persist_restart, test_persist_ttls, NULL}},
        {"curve", {test_curve, test_curve_clients, test_curve_bad_options, NULL}},
        {"figures", {test_inspect_workers, test_figures, NULL}},
        {"memory", {test_max_memory, test_max_memory_unsent, NULL}},
        {"readonly", {test_readonly, NULL}},
    };
    return systest_suite("norfab", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(norfab_suite());
}
