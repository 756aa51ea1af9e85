/* sys_faktory_clients.c - system tests of the Faktory listener with the
 * bytes Faktory's shipped clients send, as read from their sources
 * (doc/faktory.md lists them with their versions): the Go client
 * (contribsys/faktory client and faktory_worker_go), faktory_worker_ruby
 * and faktory_worker_python, each as a producer (no wid) and as a worker,
 * without and with a password: HELLO, then PUSH, FETCH and ACK on the same
 * connection; BEAT with current_state, INFO's tasks, QUEUE LATENCY, MUTATE
 * and PUSHB as those clients send them.  Byte-exact replies; times only
 * bounded from below. */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "systest.h"

static struct systest_proc srv;
static int fport;            /* the Faktory listener */
static const char *password; /* NULL: none */

/* Start a server with a Faktory listener, with a password file holding pw
 * (NULL: none). */
static void
start(const char *pw)
{
    static char path[] = "/tmp/wq-fkcl-XXXXXX";
    const char *args[] = {"-listen",
                          "127.0.0.1:0",
                          "-faktory-listen",
                          "127.0.0.1:0",
                          pw != NULL ? "-faktory-password-file" : NULL,
                          path,
                          NULL};
    if (pw != NULL) {
        snprintf(path, sizeof path, "/tmp/wq-fkcl-XXXXXX");
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, pw, strlen(pw)), (ssize_t)strlen(pw));
        close(fd);
    }
    password = pw;
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    ck_assert(systest_proc_wait(&srv, false, "faktory listening on"));
    ck_assert(systest_proc_wait(&srv, false, "\n"));
    const char *line = strstr(srv.out.p, "faktory listening on 127.0.0.1:");
    ck_assert_ptr_nonnull(line);
    fport = atoi(strchr(line, ':') + 1);
    ck_assert_int_gt(fport, 0);
    if (pw != NULL)
        unlink(path);
}

static void
stop(void)
{
    systest_proc_stop(&srv);
    systest_untrack_pid(srv.s.pid);
    systest_proc_free(&srv);
}

/* Connect and read HI: the hash a client of this version sends for the
 * password (v2: the iterations HI asks for; v1: one round), "" without a
 * password. */
static int
connect_hi(bool v2, const char **hash)
{
    int fd = systest_connect_port(fport);
    const char *hi = systest_read_line(fd);
    *hash = "";
    if (password == NULL) {
        ck_assert_str_eq(hi, "+HI {\"v\":2}");
        return fd;
    }
    int iterations = 0;
    char salt[32] = "";
    ck_assert_msg(sscanf(hi, "+HI {\"v\":2,\"i\":%d,\"s\":\"%31[0-9a-f]\"}", &iterations, salt) ==
                      2,
                  "%s", hi);
    *hash = systest_pwdhash(password, salt, v2 ? iterations : 1);
    return fd;
}

/* A bulk reply's text (NULL for $-1). */
static const char *
bulk(int fd)
{
    const char *head = systest_read_line(fd);
    ck_assert_msg(head[0] == '$', "not a bulk string: %s", head);
    int n = atoi(head + 1);
    if (n < 0)
        return NULL;
    static char buf[8192];
    ck_assert_int_lt(n + 2, (int)sizeof buf);
    systest_read_n(fd, buf, (size_t)n + 2);
    ck_assert(buf[n] == '\r' && buf[n + 1] == '\n');
    buf[n] = '\0';
    return buf;
}

/* Send a command line and return the bulk reply. */
static const char *
bulk_of(int fd, const char *line)
{
    systest_sends(fd, f("%s\r\n", line));
    return bulk(fd);
}

/* The member at path ("a/b") of INFO's reply, as an integer. */
static long long
info_num(int fd, const char *path)
{
    json_t *v = json_loads(bulk_of(fd, "INFO"), 0, NULL);
    ck_assert_ptr_nonnull(v);
    json_t *m = v;
    char buf[128], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = strtok_r(buf, "/", &save); k != NULL && m != NULL;
         k = strtok_r(NULL, "/", &save))
        m = json_object_get(m, k);
    ck_assert_msg(json_is_integer(m), "INFO %s is not an integer", path);
    long long n = (long long)json_integer_value(m);
    json_decref(v);
    return n;
}

/* PUSH job (its jid is jid), FETCH it back with fetch on the same
 * connection, ACK it, the JSON spaced as Python writes it or compact. */
static void
push_fetch_ack(int fd, const char *job, const char *jid, const char *fetch, bool spaced)
{
    systest_roundtrip(fd, f("PUSH %s\r\n", job), OK);
    const char *got = bulk_of(fd, fetch);
    ck_assert_ptr_nonnull(got);
    json_t *v = json_loads(got, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(v, "jid")), jid);
    ck_assert(json_is_string(json_object_get(v, "enqueued_at")));
    json_decref(v);
    systest_roundtrip(fd, f(spaced ? "ACK {\"jid\": \"%s\"}\r\n" : "ACK {\"jid\":\"%s\"}\r\n", jid),
                      OK);
}

/* ------------------------------------------------------------------------ */
/* The Go client (contribsys/faktory client 1.9.1; faktory_worker_go) */

/* client.Dial: json.Marshal of ClientData, its fields in struct order. */
static int
go_hello(const char *wid)
{
    const char *hash;
    int fd = connect_hi(true, &hash);
    systest_roundtrip(fd,
                      f("HELLO {\"hostname\":\"vm\",\"wid\":\"%s\",\"pid\":30472,\"labels\":"
                        "[\"golang\"],\"username\":\"\",\"pwdhash\":\"%s\",\"v\":2}\r\n",
                        wid, hash),
                      OK);
    return fd;
}

static void
go_client(void)
{
    /* a producer (a web application): wid "" */
    int fd = go_hello("");
    push_fetch_ack(fd,
                   "{\"jid\":\"Kq3XhGZ1o5J3vB8M\",\"queue\":\"default\",\"jobtype\":\"SomeJob\","
                   "\"args\":[1,\"two\"],\"created_at\":\"2026-11-27T18:00:00.123456789Z\","
                   "\"retry\":25}",
                   "Kq3XhGZ1o5J3vB8M", "FETCH default", false);
    /* PushBulk: a JSON array of jobs; the refused ones by jid (none) */
    ck_assert_str_eq(bulk_of(fd, "PUSHB [{\"jid\":\"b-Kq3XhGZ1\",\"queue\":\"default\",\"jobtype\":"
                                 "\"SomeJob\",\"args\":[],\"retry\":25},{\"jid\":\"short\","
                                 "\"queue\":\"default\",\"jobtype\":\"SomeJob\",\"args\":[],"
                                 "\"retry\":25},{\"jid\":\"a-short\",\"queue\":\"default\","
                                 "\"jobtype\":\"SomeJob\",\"args\":[],\"retry\":25}]"),
                     "{\"a-short\":\"jobs must have a reasonable jid parameter\","
                     "\"short\":\"jobs must have a reasonable jid parameter\"}");
    /* Clear(Scheduled): no filter */
    systest_roundtrip(fd, "MUTATE {\"cmd\":\"clear\",\"target\":\"scheduled\"}\r\n", OK);
    /* a producer is no worker: faktory_worker_go's tests read this size */
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Workers/size"), 0);

    /* a worker process: its wid, then BEAT with rss_kb (a Go map: keys
     * sorted), current_state once it quiets */
    int w = go_hello("4l3g7a9d2ht1");
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Workers/size"), 1);
    push_fetch_ack(w,
                   "{\"jid\":\"Zm9vYmFyYmF6cXV4\",\"queue\":\"critical\",\"jobtype\":\"SomeJob\","
                   "\"args\":[],\"created_at\":\"2026-11-27T18:00:00.5Z\",\"retry\":25}",
                   "Zm9vYmFyYmF6cXV4", "FETCH critical default bulk", false);
    systest_roundtrip(w, "BEAT {\"rss_kb\":10240,\"wid\":\"4l3g7a9d2ht1\"}\r\n", OK);
    systest_roundtrip(
        w, "BEAT {\"current_state\":\"quiet\",\"rss_kb\":10240,\"wid\":\"4l3g7a9d2ht1\"}\r\n",
        "$17\r\n{\"state\":\"quiet\"}\r\n");
    systest_roundtrip(w, "BEAT {\"rss_kb\":10240,\"wid\":\"4l3g7a9d2ht1\"}\r\n",
                      "$17\r\n{\"state\":\"quiet\"}\r\n");
    systest_roundtrip(w,
                      "BEAT {\"current_state\":\"terminate\",\"rss_kb\":10240,\"wid\":"
                      "\"4l3g7a9d2ht1\"}\r\n",
                      "$21\r\n{\"state\":\"terminate\"}\r\n");
    close(w);
    close(fd);
}

START_TEST(test_go)
{
    start(NULL);
    go_client();
    stop();
    start("go s3cret");
    go_client();
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* faktory_worker_ruby 2.2.0 */

/* Client#open_socket: wid, hostname, pid, labels, username (nil without
 * one in the URL), v, then pwdhash when the server asks for a password. */
static int
ruby_hello(const char *wid)
{
    const char *hash;
    int fd = connect_hi(true, &hash);
    const char *pw = password != NULL ? f(",\"pwdhash\":\"%s\"", hash) : "";
    systest_roundtrip(fd,
                      f("HELLO {\"wid\":\"%s\",\"hostname\":\"vm\",\"pid\":1,\"labels\":"
                        "[\"ruby-3.1.2\"],\"username\":null,\"v\":2%s}\r\n",
                        wid, pw),
                      OK);
    return fd;
}

static void
ruby_client(void)
{
    int fd = ruby_hello("");
    systest_roundtrip(fd, "FLUSH\r\n", OK);
    /* queue_latency("default", "foo") after a flush; then one pushed job */
    ck_assert_str_eq(bulk_of(fd, "QUEUE LATENCY default foo"), "{\"default\":0,\"foo\":0}");
    systest_roundtrip(fd,
                      "PUSH {\"jobtype\":\"mike\",\"jid\":\"123456789\",\"args\":[],"
                      "\"queue\":\"default\"}\r\n",
                      OK);
    systest_sleep_ms(20);
    json_t *lat = json_loads(bulk_of(fd, "QUEUE LATENCY default"), 0, NULL);
    ck_assert(json_is_real(json_object_get(lat, "default")));
    ck_assert(json_real_value(json_object_get(lat, "default")) >= 0.02);
    ck_assert_uint_eq(json_object_size(lat), 1);
    json_decref(lat);
    systest_roundtrip(fd, "QUEUE LATENCY *\r\n",
                      "-ERR QUEUE LATENCY does not support wildcards\r\n");
    /* the system test: push, fetch, ack or fail on one connection */
    const char *got = bulk_of(fd, "FETCH default");
    ck_assert_ptr_nonnull(strstr(got, "\"jid\":\"123456789\""));
    systest_roundtrip(fd,
                      "FAIL {\"message\":\"oops\",\"errtype\":\"RuntimeError\",\"jid\":"
                      "\"123456789\",\"backtrace\":[\"test/system_test.rb:37:in `block\"]}\r\n",
                      OK);
    push_fetch_ack(fd,
                   "{\"retry\":3,\"backtrace\":10,\"blargh\":\"foo\",\"queue\":\"custom\","
                   "\"jobtype\":\"SystemTest::TestJob\",\"args\":[1,\"bob\"],\"custom\":"
                   "{\"locale\":\"en\"},\"jid\":\"0f1e2d3c4b5a69788796a5b4\"}",
                   "0f1e2d3c4b5a69788796a5b4", "FETCH custom", false);
    /* perform_in: at with nine digits and +00:00; then the mutate test */
    systest_roundtrip(fd, "FLUSH\r\n", OK);
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Scheduled/size"), 0);
    for (int i = 0; i < 2; i++)
        systest_roundtrip(fd,
                          f("PUSH {\"retry\":25,\"queue\":\"default\",\"jobtype\":"
                            "\"MutateTest::MutateJob\",\"args\":[\"%s\"],\"at\":"
                            "\"2099-01-01T00:1%d:00.123456789+00:00\",\"jid\":"
                            "\"9a8b7c6d5e4f3a2b1c0d9e8%d\"}\r\n",
                            i == 0 ? "elephant" : "zebra", i, i),
                          OK);
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Scheduled/size"), 2);
    systest_roundtrip(fd,
                      "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\",\"filter\":"
                      "{\"jobtype\":\"MutateTest::MutateJob\",\"regexp\":\"*elephant*\"}}\r\n",
                      OK);
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Scheduled/size"), 1);
    systest_roundtrip(fd, "MUTATE {\"cmd\":\"discard\",\"target\":\"scheduled\"}\r\n", OK);
    ck_assert_int_eq(info_num(fd, "faktory/tasks/Scheduled/size"), 0);
    /* a producer's beat names wid "" */
    systest_roundtrip(fd, "BEAT {\"wid\":\"\"}\r\n", "-ERR unknown worker \r\n");
    systest_roundtrip(fd, "QUEUE PAUSE foo bar\r\n", OK);
    systest_roundtrip(fd, "QUEUE RESUME *\r\n", OK);

    /* Client.worker!: a 16-digit hex wid; the launcher's beat carries
     * rss_kb, then wid, then current_state */
    int w = ruby_hello("0123456789abcdef");
    systest_roundtrip(w, "BEAT {\"rss_kb\":51200,\"wid\":\"0123456789abcdef\"}\r\n", OK);
    systest_roundtrip(
        w, "BEAT {\"rss_kb\":51200,\"wid\":\"0123456789abcdef\",\"current_state\":\"quiet\"}\r\n",
        "$17\r\n{\"state\":\"quiet\"}\r\n");
    close(w);
    systest_sends(fd, "END\r\n");
    systest_expect_closed(fd);
    close(fd);
}

START_TEST(test_ruby)
{
    start(NULL);
    ruby_client();
    stop();
    start("ruby s3cret");
    ruby_client();
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* faktory_worker_python 1.0.0 */

/* Connection.connect: json.dumps (with its spaces), no "v"; the password
 * hashed once, whatever HI asks. */
static int
python_hello(const char *wid)
{
    const char *hash;
    int fd = connect_hi(false, &hash);
    const char *w = wid != NULL ? f(", \"wid\": \"%s\"", wid) : "";
    const char *pw = password != NULL ? f(", \"pwdhash\": \"%s\"", hash) : "";
    systest_roundtrip(
        fd, f("HELLO {\"hostname\": \"vm\", \"pid\": 1, \"labels\": []%s%s}\r\n", w, pw), OK);
    return fd;
}

static void
python_client(void)
{
    /* Client.queue: a producer */
    int fd = python_hello(NULL);
    push_fetch_ack(fd,
                   "{\"jid\": \"6f1c1e2e9a8b4c7d8e9f0a1b2c3d4e5f\", \"queue\": \"default\", "
                   "\"jobtype\": \"add\", \"priority\": 5, \"args\": [1, 2], \"retry\": 5, "
                   "\"backtrace\": 0}",
                   "6f1c1e2e9a8b4c7d8e9f0a1b2c3d4e5f", "FETCH default", true);
    close(fd);
    /* Worker: a uuid4 hex wid; FAIL with errtype and message; BEAT */
    const char *wid = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    int w = python_hello(wid);
    systest_roundtrip(w,
                      "PUSH {\"jid\": \"7e2d2f3f0b9c5d8e9f0a1b2c3d4e5f60\", \"queue\": "
                      "\"default\", \"jobtype\": \"add\", \"priority\": 5, \"args\": [1], "
                      "\"retry\": 5, \"backtrace\": 0}\r\n",
                      OK);
    ck_assert_ptr_nonnull(bulk_of(w, "FETCH default"));
    systest_roundtrip(w,
                      "FAIL {\"jid\": \"7e2d2f3f0b9c5d8e9f0a1b2c3d4e5f60\", \"errtype\": "
                      "\"ValueError\", \"message\": \"boom\"}\r\n",
                      OK);
    systest_roundtrip(w, f("BEAT {\"wid\": \"%s\"}\r\n", wid), OK);
    close(w);
}

START_TEST(test_python)
{
    start(NULL);
    python_client();
    stop();
    start("py s3cret");
    python_client();
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* What the clients read back */

/* INFO's "faktory" object on a server with nothing in it, byte for byte
 * in Faktory 1.9's order (the Go client unmarshals it; faktory_worker_go
 * and faktory_worker_ruby's tests read tasks). */
START_TEST(test_info_bytes)
{
    start(NULL);
    int fd = go_hello("");
    const char *info = bulk_of(fd, "INFO");
    const char *from = strstr(info, ",\"faktory\":"), *to = strstr(info, ",\"server\":");
    ck_assert(from != NULL && to != NULL && from < to);
    ck_assert_str_eq(
        f("%.*s", (int)(to - from), from),
        ",\"faktory\":{\"total_failures\":0,\"total_processed\":0,\"total_enqueued\":0,"
        "\"total_queues\":0,\"queues\":{},\"sets\":{\"dead\":0,\"retries\":0,\"scheduled\":0,"
        "\"working\":0},\"tasks\":{\"Busy\":{\"reaped\":0,\"size\":0},\"Dead\":{\"cycles\":0,"
        "\"enqueued\":0,\"size\":0,\"wall_time_sec\":0},\"Retries\":{\"cycles\":0,"
        "\"enqueued\":0,\"size\":0,\"wall_time_sec\":0},\"Scheduled\":{\"cycles\":0,"
        "\"enqueued\":0,\"size\":0,\"wall_time_sec\":0},\"Workers\":{\"reaped\":0,\"size\":0}}}");
    ck_assert_ptr_nonnull(strstr(info, ",\"server\":{\"description\":\"workq\","));
    close(fd);
    stop();
}
END_TEST

/* A worker that quiets itself: its state is kept (running does not undo
 * it), shown to an operator, and its FETCHes get nothing after the 2 s
 * wait, as for one an operator quieted; terminate comes after. */
START_TEST(test_self_quiet)
{
    start(NULL);
    int w = go_hello("selfquiet1");
    int p = go_hello("");
    systest_roundtrip(p, "PUSH {\"jid\":\"quietjob1\",\"jobtype\":\"t\",\"args\":[]}\r\n", OK);
    systest_roundtrip(w, "BEAT {\"wid\":\"selfquiet1\",\"current_state\":\"quiet\"}\r\n",
                      "$17\r\n{\"state\":\"quiet\"}\r\n");
    systest_roundtrip(w, "BEAT {\"wid\":\"selfquiet1\",\"current_state\":\"running\"}\r\n",
                      "$17\r\n{\"state\":\"quiet\"}\r\n");
    int wq = systest_connect_port(srv.s.port);
    systest_sends(wq, "inspect workers 0 10\r\n");
    ck_assert_str_eq(systest_read_line(wq), "+OK 1");
    bool seen = false;
    for (int i = 0; i < 13; i++)
        seen |= strcmp(systest_read_line(wq), "state quiet") == 0;
    ck_assert(seen);
    int64_t t0 = systest_now_ms();
    systest_roundtrip(w, "FETCH default\r\n", "$-1\r\n");
    ck_assert_int_ge(systest_now_ms() - t0, 1900);
    /* the producer's connection still fetches */
    ck_assert_ptr_nonnull(bulk_of(p, "FETCH default"));
    systest_roundtrip(wq, "worker terminate selfquiet1\r\n", OK);
    systest_roundtrip(w, "BEAT {\"wid\":\"selfquiet1\"}\r\n",
                      "$21\r\n{\"state\":\"terminate\"}\r\n");
    systest_roundtrip(w, "BEAT {\"wid\":\"selfquiet1\",\"current_state\":\"quiet\"}\r\n",
                      "$21\r\n{\"state\":\"terminate\"}\r\n");
    /* an unknown wid is an error; the connection stays */
    systest_roundtrip(w, "BEAT {\"wid\":\"nosuchwid\"}\r\n", "-ERR unknown worker nosuchwid\r\n");
    systest_roundtrip(w, "BEAT {\"wid\":\"selfquiet1\"}\r\n",
                      "$21\r\n{\"state\":\"terminate\"}\r\n");
    close(wq);
    close(p);
    close(w);
    stop();
}
END_TEST

/* A client of version 2 that hashes once, or a v-less one that hashes as
 * often as HI asks, is refused; so is a pwdhash that is no hash. */
START_TEST(test_password_rounds)
{
    start("rounds");
    const char *hash;
    int fd = connect_hi(false, &hash);
    systest_roundtrip(fd, f("HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n", hash),
                      "-ERR Invalid password\r\n");
    systest_expect_closed(fd);
    close(fd);
    fd = connect_hi(true, &hash);
    systest_roundtrip(fd, f("HELLO {\"pwdhash\":\"%s\"}\r\n", hash), "-ERR Invalid password\r\n");
    systest_expect_closed(fd);
    close(fd);
    fd = connect_hi(true, &hash);
    systest_roundtrip(fd, "HELLO {\"v\":2,\"pwdhash\":\"\"}\r\n", "-ERR Invalid password\r\n");
    systest_expect_closed(fd);
    close(fd);
    stop();
}
END_TEST

static Suite *
clients_suite(void)
{
    const struct systest_group groups[] = {
        {"go", {test_go, NULL}},
        {"ruby", {test_ruby, NULL}},
        {"python", {test_python, NULL}},
        {"read", {test_info_bytes, test_self_quiet, test_password_rounds, NULL}},
    };
    return systest_suite("faktory_clients", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(clients_suite());
}
