/* sys_metrics.c - system tests of the metrics endpoint (-metrics-listen):
 * the real workq-server, HTTP by hand over TCP, byte-exact status lines,
 * headers and bodies of /metrics, /healthz, /readyz, 404 and 405; the
 * counters moving after real Workq commands; the queue cap and its
 * queue="other"; OpenMetrics by the Accept header; /readyz while the
 * command log cannot be written (a file-size limit, as sys_persist's
 * full-disk test); and the flags' errors. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "systest.h"

#define EX_USAGE_STATUS       64
#define EX_UNAVAILABLE_STATUS 69

#define TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define OM_TYPE   "application/openmetrics-text; version=1.0.0; charset=utf-8"
/* What Prometheus 2.42 sends. */
#define PROM_ACCEPT                                                                                \
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"       \
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

/* A server with a metrics listener and extra arguments (NULL ended);
 * its metrics port. */
static int
start(struct systest_proc *p, const char *const *extra)
{
    const char *args[32] = {"-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0"};
    size_t n = 4;
    for (; extra != NULL && *extra != NULL; extra++)
        args[n++] = *extra;
    args[n] = NULL;
    systest_proc_start(p, args);
    ck_assert(systest_proc_wait(p, false, "metrics listening on"));
    ck_assert(systest_proc_wait(p, false, "metrics listening on 127.0.0.1:"));
    const char *line = strstr(p->out.p, "metrics listening on 127.0.0.1:");
    while (strchr(line, '\n') == NULL)
        ck_assert(systest_proc_pump(p, 100) || strchr(line, '\n') != NULL);
    return atoi(strchr(line, ':') + 1);
}

/* Send one HTTP/1.1 request (accept: NULL for none) with Connection:
 * close and return the whole response (free it). */
static char *
http(int port, const char *method, const char *path, const char *accept)
{
    int fd = systest_connect_port(port);
    systest_sends(fd,
                  f("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%sConnection: close\r\n\r\n", method,
                    path, accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : ""));
    struct sb r = {0};
    sb_add(&r, "");
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ck_assert_msg(poll(&pfd, 1, systest_wait_ms()) == 1, "no HTTP response: %s", r.p);
        char buf[65536];
        ssize_t got = read(fd, buf, sizeof buf);
        ck_assert_int_ge(got, 0);
        if (got == 0)
            break;
        sb_addn(&r, buf, (size_t)got);
    }
    close(fd);
    return r.p;
}

/* The response without its Date header (the only varying part). */
static char *
undated(char *resp)
{
    char *d = strstr(resp, "\r\nDate: ");
    ck_assert_ptr_nonnull(d);
    char *end = strstr(d + 2, "\r\n");
    memmove(d, end, strlen(end) + 1);
    return resp;
}

/* The body of a response. */
static const char *
body(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    ck_assert_ptr_nonnull(b);
    return b + 4;
}

/* Does the exposition have this exact line? */
static bool
has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

/* Fail unless text has the line (the whole text goes to stderr: too long
 * for check's message). */
static void
assert_line(const char *text, const char *line, int at)
{
    if (!has_line(text, line))
        fprintf(stderr, "line %d: no line %s in:\n%s\n", at, line, text);
    ck_assert_msg(has_line(text, line), "line %d: no line %s in the exposition", at, line);
}
#define ASSERT_LINE(text, line) assert_line((text), (line), __LINE__)

/* Scrape until line shows up (what the server does after a close comes
 * a loop pass later); fail after the usual wait. */
static void
wait_line(int port, const char *line)
{
    for (int waited = 0;; waited += 20) {
        char *r = http(port, "GET", "/metrics", NULL);
        bool ok = has_line(body(r), line);
        if (ok || waited >= systest_wait_ms())
            assert_line(body(r), line, __LINE__);
        free(r);
        if (ok)
            return;
        systest_sleep_ms(20);
    }
}

START_TEST(test_endpoints)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    char *r = undated(http(port, "GET", "/healthz", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: 3\r\nConnection: close\r\n\r\nok\n");
    free(r);
    r = undated(http(port, "GET", "/readyz", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: 6\r\nConnection: close\r\n\r\nready\n");
    free(r);
    r = undated(http(port, "GET", "/metricsx", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
    free(r);
    r = undated(http(port, "GET", "/", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
    free(r);
    const char *methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        r = undated(http(port, methods[i], "/metrics", NULL));
        ck_assert_str_eq(r, "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n"
                            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\n"
                            "Connection: close\r\n\r\nmethod not allowed\n");
        free(r);
    }
    /* HEAD: the headers of GET, no body. */
    r = undated(http(port, "HEAD", "/healthz", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Connection: close\r\n\r\n");
    free(r);
    r = undated(http(port, "HEAD", "/metrics", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 200 OK\r\nContent-Type: " TEXT_TYPE "\r\n"
                        "Connection: close\r\n\r\n");
    free(r);
    /* A query string does not change the path. */
    r = http(port, "GET", "/metrics?x=1", NULL);
    ck_assert_ptr_nonnull(strstr(r, "HTTP/1.1 200 OK\r\nContent-Type: " TEXT_TYPE "\r\n"));
    ASSERT_LINE(body(r), "# TYPE workq_jobs_added_total counter");
    free(r);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

START_TEST(test_counters_move)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    char *r = http(port, "GET", "/metrics", NULL);
    const char *m = body(r);
    ASSERT_LINE(m, "workq_jobs_added_total 0");
    ASSERT_LINE(m, "workq_commands_total{command=\"add\",outcome=\"ok\"} 0");
    ASSERT_LINE(m, "workq_queues 0");
    ASSERT_LINE(m, "workq_commands_total{command=\"lease\",outcome=\"abandoned\"} 0");
    ASSERT_LINE(m, "workq_read_only 0");
    ck_assert_ptr_null(strstr(m, "queue=\"emails\""));
    free(r);

    int fd = systest_connect(&p.s);
    systest_add(fd, id4(1), "emails", "one");
    systest_add(fd, id4(2), "emails", "two");
    systest_lease_now(fd, "emails", id4(1), "one");
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(9)), NF);
    systest_roundtrip(fd, "lease nothing 10\r\n", TO);
    systest_roundtrip(fd, "bogus\r\n", ERR("Unknown command"));
    systest_roundtrip(fd, "add x\r\n", ERR("Invalid command args"));
    /* A waiting lease whose client leaves is abandoned. */
    int w = systest_connect(&p.s);
    systest_sends(w, "lease parked 60000\r\n");
    wait_line(port, "workq_parked_clients 1");
    close(w);

    r = http(port, "GET", "/metrics", NULL);
    m = body(r);
    ASSERT_LINE(m, "workq_queues 1");
    ASSERT_LINE(m, "workq_jobs{queue=\"emails\",state=\"ready\"} 1");
    ASSERT_LINE(m, "workq_jobs{queue=\"emails\",state=\"leased\"} 0");
    ASSERT_LINE(m, "workq_jobs{queue=\"emails\",state=\"completed\"} 1");
    ASSERT_LINE(m, "workq_jobs{queue=\"emails\",state=\"failed\"} 0");
    ASSERT_LINE(m, "workq_jobs_added_total 2");
    ASSERT_LINE(m, "workq_jobs_leased_total 1");
    ASSERT_LINE(m, "workq_jobs_completed_total 1");
    ASSERT_LINE(m, "workq_jobs_failed_total 0");
    ASSERT_LINE(m, "workq_lease_wait_seconds_count 1");
    ASSERT_LINE(m, "workq_result_latency_seconds_count 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"add\",outcome=\"ok\"} 2");
    ASSERT_LINE(m, "workq_commands_total{command=\"add\",outcome=\"client_error\"} 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"lease\",outcome=\"ok\"} 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"lease\",outcome=\"timeout\"} 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"complete\",outcome=\"ok\"} 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"delete\",outcome=\"not_found\"} 1");
    ASSERT_LINE(m, "workq_commands_total{command=\"unknown\",outcome=\"client_error\"} 1");
    ASSERT_LINE(m, "workq_connections_accepted_total 2");
    free(r);
    wait_line(port, "workq_commands_total{command=\"lease\",outcome=\"abandoned\"} 1");
    wait_line(port, "workq_connections 1");
    wait_line(port, "workq_parked_clients 0");

    /* A fail with retries left goes back to the queue; a TTR end too (a
     * TTR of 2 s: the first lease must not run out before its fail, even
     * under valgrind on a busy machine, or the count would be 2). */
    systest_add_full(fd, id4(3), "retry", 2000, SYSTEST_TTL, "r", "-max-fails=2");
    systest_roundtrip(fd, "lease retry 0\r\n", f("+OK 1\r\n%s retry 2000 1\r\nr\r\n", id4(3)));
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(3)), OK);
    systest_roundtrip(fd, "lease retry 0\r\n", f("+OK 1\r\n%s retry 2000 1\r\nr\r\n", id4(3)));
    wait_line(port, "workq_jobs_ttr_expired_total 1");
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_jobs_retried_total 2");
    ASSERT_LINE(body(r), "workq_commands_total{command=\"fail\",outcome=\"ok\"} 1");
    ASSERT_LINE(body(r), "workq_dead_jobs 0");
    free(r);

    /* The dead set (add -dead=1), and revive */
    systest_add_full(fd, id4(4), "dead", SYSTEST_TTR, SYSTEST_TTL, "d", "-dead=1");
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(4)), OK);
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_dead_jobs 1");
    ASSERT_LINE(body(r), "workq_jobs{queue=\"dead\",state=\"failed\"} 1");
    free(r);
    systest_roundtrip(fd, f("revive %s\r\n", id4(4)), OK);
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_dead_jobs 0");
    ASSERT_LINE(body(r), "workq_commands_total{command=\"revive\",outcome=\"ok\"} 1");
    free(r);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

START_TEST(test_queue_cap)
{
    struct systest_proc p;
    const char *extra[] = {"-metrics-max-queues", "2", NULL};
    int port = start(&p, extra);
    int fd = systest_connect(&p.s);
    /* "other" is a valid queue name: it shares the summed series. */
    const char *names[] = {"d", "other", "c", "b", "a", "a"};
    for (unsigned i = 0; i < 6; i++)
        systest_add(fd, id4(i + 1), names[i], "x");
    char *r = http(port, "GET", "/metrics", NULL);
    const char *m = body(r);
    ASSERT_LINE(m, "workq_queues 5");
    ASSERT_LINE(m, "workq_jobs{queue=\"a\",state=\"ready\"} 2");
    ASSERT_LINE(m, "workq_jobs{queue=\"b\",state=\"ready\"} 1");
    ASSERT_LINE(m, "workq_jobs{queue=\"other\",state=\"ready\"} 3");
    ASSERT_LINE(m, "workq_jobs{queue=\"other\",state=\"leased\"} 0");
    ck_assert_ptr_null(strstr(m, "queue=\"c\""));
    ck_assert_ptr_null(strstr(m, "queue=\"d\""));
    /* One series per state for each of a, b and other. */
    int n = 0;
    for (const char *q = m; (q = strstr(q, "\nworkq_jobs{")) != NULL; q++)
        n++;
    ck_assert_int_eq(n, 3 * 6);
    free(r);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

START_TEST(test_openmetrics)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    const char *accepts[] = {PROM_ACCEPT, "application/openmetrics-text",
                             "text/plain;q=0.5, application/openmetrics-text; version=1.0.0"};
    for (size_t i = 0; i < sizeof accepts / sizeof accepts[0]; i++) {
        char *r = http(port, "GET", "/metrics", accepts[i]);
        ck_assert_msg(strncmp(r, "HTTP/1.1 200 OK\r\nContent-Type: " OM_TYPE "\r\n",
                              strlen("HTTP/1.1 200 OK\r\nContent-Type: " OM_TYPE "\r\n")) == 0,
                      "accept %s: %s", accepts[i], r);
        const char *m = body(r);
        size_t n = strlen(m);
        ck_assert_uint_gt(n, 6);
        ck_assert_str_eq(m + n - 6, "# EOF\n");
        ASSERT_LINE(m, "# TYPE workq_jobs_added counter");
        ASSERT_LINE(m, "workq_jobs_added_total 0");
        ASSERT_LINE(m, "# TYPE workq_lease_wait_seconds histogram");
        ASSERT_LINE(m, "# UNIT workq_lease_wait_seconds seconds");
        ASSERT_LINE(m, "# TYPE workq_build info");
        ck_assert_ptr_null(strstr(m, "# TYPE workq_jobs_added_total"));
        free(r);
    }
    /* The text format for everyone else, and for a lower q. */
    const char *texts[] = {"text/plain", "*/*", "application/json",
                           "application/openmetrics-text;q=0.2,text/plain;q=0.9",
                           "application/openmetrics-text;version=0.0.1"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char *r = http(port, "GET", "/metrics", texts[i]);
        ck_assert_msg(strncmp(r, "HTTP/1.1 200 OK\r\nContent-Type: " TEXT_TYPE "\r\n",
                              strlen("HTTP/1.1 200 OK\r\nContent-Type: " TEXT_TYPE "\r\n")) == 0,
                      "accept %s: %s", texts[i], r);
        ck_assert_ptr_null(strstr(r, "# EOF"));
        ASSERT_LINE(body(r), "# TYPE workq_jobs_added_total counter");
        free(r);
    }
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* An add with a 100-byte payload; its reply line, NULL if none came. */
static const char *
try_add(int fd, unsigned n)
{
    char payload[101];
    memset(payload, 'x', 100);
    payload[100] = '\0';
    systest_sends(fd, f("add %s q 60000 600000 100\r\n%s\r\n", id4(n), payload));
    return systest_read_line_within(fd, 1000 * systest_slow());
}

START_TEST(test_readyz_read_only)
{
    if (systest_wrapped())
        return; /* prlimit needs the server's own pid */
    char dir[64];
    systest_tmpdir_new(dir);
    struct systest_proc p;
    const char *extra[] = {"-cmdlog-path", dir, "-cmdlog-sync", "os", NULL};
    int port = start(&p, extra);
    int fd = systest_connect(&p.s);
    ck_assert_str_eq(try_add(fd, 1), "+OK");
    /* Room for no more records: the next write fails. */
    struct stat st;
    ck_assert_int_eq(stat(f("%s/%09u.log", dir, 1u), &st), 0);
    struct rlimit old, lim;
    ck_assert_int_eq(prlimit(p.s.pid, RLIMIT_FSIZE, NULL, &old), 0);
    lim.rlim_cur = (rlim_t)st.st_size;
    lim.rlim_max = old.rlim_max;
    ck_assert_int_eq(prlimit(p.s.pid, RLIMIT_FSIZE, &lim, NULL), 0);
    unsigned n = 2;
    const char *l = try_add(fd, n++);
    if (l == NULL) { /* held: its record waits for room; ask on another connection */
        fd = systest_connect(&p.s);
        l = try_add(fd, n++);
    }
    ck_assert_str_eq(l, "-SERVER-ERROR Read-only: command log write failed");
    char *r = undated(http(port, "GET", "/readyz", NULL));
    ck_assert_str_eq(r, "HTTP/1.1 503 Service Unavailable\r\n"
                        "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 36\r\n"
                        "Connection: close\r\n\r\nread-only: command log write failed\n");
    free(r);
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_read_only 1");
    ASSERT_LINE(body(r), "workq_commands_total{command=\"add\",outcome=\"server_error\"} 1");
    free(r);
    r = undated(http(port, "GET", "/healthz", NULL));
    ck_assert_str_eq(body(r), "ok\n");
    free(r);
    /* Room again: ready again. */
    ck_assert_int_eq(prlimit(p.s.pid, RLIMIT_FSIZE, &old, NULL), 0);
    bool ready = false;
    for (int waited = 0; !ready && waited < 4 * systest_wait_ms(); waited += 50) {
        r = http(port, "GET", "/readyz", NULL);
        ready = strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0;
        free(r);
        if (!ready)
            systest_sleep_ms(50);
    }
    ck_assert_msg(ready, "not ready after the limit was raised");
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_read_only 0");
    ck_assert_ptr_nonnull(strstr(body(r), "\nworkq_cmdlog_written_bytes_total "));
    ASSERT_LINE(body(r), "workq_cmdlog_segments 1");
    ASSERT_LINE(body(r), "workq_cmdlog_replay_records 0");
    free(r);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_flags)
{
    struct systest_proc p;
    const char *bad[][3] = {
        {"-metrics-listen", "nonsense",
         "workq-server: invalid -metrics-listen 'nonsense' (expected HOST:PORT[,HOST:PORT...])\n"},
        {"-metrics-listen", "127.0.0.1:70000",
         "workq-server: invalid -metrics-listen '127.0.0.1:70000' (expected "
         "HOST:PORT[,HOST:PORT...])\n"},
        {"-metrics-max-queues", "-1",
         "workq-server: invalid -metrics-max-queues '-1' (expected 0..1000000)\n"},
        {"-metrics-max-queues", "1000001",
         "workq-server: invalid -metrics-max-queues '1000001' (expected 0..1000000)\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {bad[i][0], bad[i][1], NULL};
        ck_assert_int_eq(systest_proc_run(&p, args), EX_USAGE_STATUS);
        ck_assert_str_eq(p.err.p, bad[i][2]);
        ck_assert_str_eq(p.out.p, "");
        systest_proc_free(&p);
    }
    /* A port that is taken: exit 69 with the log line. */
    int taken;
    int lfd = systest_listen(&taken);
    const char *args[] = {"-listen", "127.0.0.1:0", "-metrics-listen", f("127.0.0.1:%d", taken),
                          NULL};
    ck_assert_int_eq(systest_proc_run(&p, args), EX_UNAVAILABLE_STATUS);
    ck_assert_ptr_nonnull(
        strstr(p.err.p,
               f("cannot listen address=127.0.0.1:%d error=\"Address already in use\"\n", taken)));
    systest_proc_free(&p);
    close(lfd);

    /* The config file's key, and a comma list. */
    char dir[64];
    systest_tmpdir_new(dir);
    FILE *cf = fopen(f("%s/workq.conf", dir), "w");
    ck_assert_ptr_nonnull(cf);
    fprintf(cf, "metrics-listen = 127.0.0.1:0,127.0.0.1:0\nmetrics-max-queues 0\n");
    fclose(cf);
    const char *cargs[] = {"-listen", "127.0.0.1:0", "-c", f("%s/workq.conf", dir), NULL};
    systest_proc_start(&p, cargs);
    ck_assert(systest_proc_wait(&p, false, "metrics listening on 127.0.0.1:"));
    const char *second =
        strstr(strstr(p.out.p, "metrics listening on") + 1, "metrics listening on");
    for (int i = 0; second == NULL && i < 50; i++) {
        systest_proc_pump(&p, 100);
        second = strstr(strstr(p.out.p, "metrics listening on") + 1, "metrics listening on");
    }
    ck_assert_ptr_nonnull(second);
    int port2 = atoi(strchr(second, ':') + 1);
    int fd = systest_connect(&p.s);
    systest_add(fd, id4(1), "a", "x");
    char *r = http(port2, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_jobs{queue=\"other\",state=\"ready\"} 1");
    free(r);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_faktory)
{
    struct systest_proc p;
    const char *extra[] = {"-faktory-listen", "127.0.0.1:0", NULL};
    int port = start(&p, extra);
    const char *line = strstr(p.out.p, "faktory listening on 127.0.0.1:");
    ck_assert_ptr_nonnull(line);
    int fk = systest_connect_port(atoi(strchr(line, ':') + 1));
    ck_assert_str_eq(systest_read_line(fk), "+HI {\"v\":2}");
    systest_roundtrip(fk, "HELLO {\"v\":2,\"wid\":\"w1\",\"hostname\":\"h\",\"pid\":1}\r\n", OK);
    char *r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_faktory_pushed_total 0");
    ASSERT_LINE(body(r), "workq_workers{kind=\"faktory\",state=\"running\"} 1");
    free(r);
    systest_roundtrip(fk, "PUSH {\"jid\":\"jid-0000000001\",\"jobtype\":\"t\",\"args\":[]}\r\n",
                      OK);
    systest_roundtrip(fk, "PUSH {\"jid\":\"jid-0000000002\",\"jobtype\":\"t\",\"args\":[]}\r\n",
                      OK);
    r = http(port, "GET", "/metrics", NULL);
    ASSERT_LINE(body(r), "workq_faktory_pushed_total 2");
    ASSERT_LINE(body(r), "workq_faktory_jobs{state=\"enqueued\"} 2");
    free(r);
    systest_sends(fk, "FETCH default\r\n");
    const char *len = systest_read_line(fk);
    ck_assert_int_eq(len[0], '$');
    systest_read_line(fk);
    systest_roundtrip(fk, "ACK {\"jid\":\"jid-0000000001\"}\r\n", OK);
    r = http(port, "GET", "/metrics", NULL);
    const char *m = body(r);
    ASSERT_LINE(m, "workq_faktory_fetched_total 1");
    ASSERT_LINE(m, "workq_faktory_acked_total 1");
    ASSERT_LINE(m, "workq_faktory_failed_total 0");
    ASSERT_LINE(m, "workq_faktory_jobs{state=\"enqueued\"} 1");
    ASSERT_LINE(m, "workq_faktory_jobs{state=\"working\"} 0");
    ASSERT_LINE(m, "workq_faktory_jobs{state=\"dead\"} 0");
    ASSERT_LINE(m, "workq_connections 1");
    free(r);
    close(fk);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

static Suite *
metrics_suite(void)
{
    const struct systest_group groups[] = {
        {"endpoints", {test_endpoints, NULL}},     {"counters", {test_counters_move, NULL}},
        {"cap", {test_queue_cap, NULL}},           {"openmetrics", {test_openmetrics, NULL}},
        {"readyz", {test_readyz_read_only, NULL}}, {"flags", {test_flags, NULL}},
        {"faktory", {test_faktory, NULL}},
    };
    return systest_suite("metrics", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(metrics_suite());
}
