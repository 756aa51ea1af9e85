/* sys_metrics_limits.c - system tests of the metrics endpoint's bounds
 * against clients that abuse it: the cap on its connections (it stops
 * accepting, and says so once), a request trickled a byte at a time
 * (closed at its deadline), pipelined requests whose replies are never
 * read (no longer read: the server's memory stays put, another client is
 * answered), and the descriptor limit (accepting pauses, one log line a
 * second, no spinning).  Measured: the server's RSS and CPU time, and
 * another client's answer. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "systest.h"

#define HEALTHZ      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
#define OK_REPLY_END "\r\n\r\nok\n"

static struct systest_proc srv;
static int mport; /* the metrics listener */

/* Start a server with a metrics listener and extra (NULL ended). */
static void
start(const char *const *extra)
{
    const char *args[16] = {"-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0"};
    size_t n = 4;
    for (; extra != NULL && *extra != NULL; extra++)
        args[n++] = *extra;
    args[n] = NULL;
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    ck_assert(systest_proc_wait(&srv, false, "metrics listening on 127.0.0.1:"));
    const char *line = strstr(srv.out.p, "metrics listening on 127.0.0.1:");
    while (strchr(line, '\n') == NULL)
        ck_assert(systest_proc_pump(&srv, 100) || strchr(line, '\n') != NULL);
    mport = atoi(strchr(line, ':') + 1);
}

static void
stop(void)
{
    systest_proc_stop(&srv);
    systest_untrack_pid(srv.s.pid);
    systest_proc_free(&srv);
}

/* A field of /proc/PID/status, in kB. */
static long
status_kb(const char *key)
{
    FILE *fp = fopen(f("/proc/%d/status", (int)srv.s.pid), "r");
    ck_assert_ptr_nonnull(fp);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, fp) != NULL)
        if (strncmp(line, key, strlen(key)) == 0)
            kb = atol(line + strlen(key) + 1);
    fclose(fp);
    ck_assert_int_ge(kb, 0);
    return kb;
}

/* The server's CPU time so far, in clock ticks. */
static long
cpu_ticks(void)
{
    FILE *fp = fopen(f("/proc/%d/stat", (int)srv.s.pid), "r");
    ck_assert_ptr_nonnull(fp);
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    ck_assert_ptr_nonnull(p);
    long utime = 0, stime = 0;
    /* after ")": state, then fields 4..13, then utime (14) and stime (15) */
    ck_assert_int_eq(
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime), 2);
    return utime + stime;
}

/* Does fd answer a /healthz with 200 within ms? */
static bool
healthz_within(int fd, int ms)
{
    systest_sends(fd, HEALTHZ);
    struct sb r = {0};
    sb_add(&r, "");
    int64_t end = systest_now_ms() + ms;
    while (strstr(r.p, OK_REPLY_END) == NULL) {
        int left = (int)(end - systest_now_ms());
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, left) != 1)
            break;
        char buf[4096];
        ssize_t got = read(fd, buf, sizeof buf);
        if (got <= 0)
            break;
        sb_addn(&r, buf, (size_t)got);
    }
    bool ok = strncmp(r.p, "HTTP/1.1 200 OK\r\n", 17) == 0 && strstr(r.p, OK_REPLY_END) != NULL;
    free(r.p);
    return ok;
}

/* At the cap (-max-connections 2 here) the listener stops accepting, and
 * says so once; a connection waiting in the backlog is served when one
 * closes. */
START_TEST(test_cap)
{
    start((const char *const[]){"-max-connections", "2", NULL});
    int a = systest_connect_port(mport), b = systest_connect_port(mport);
    ck_assert(healthz_within(a, systest_wait_ms()));
    ck_assert(healthz_within(b, systest_wait_ms()));
    ck_assert(
        systest_proc_wait(&srv, true, " warn metrics refusing connections max_connections=2\n"));
    int c = systest_connect_port(mport); /* the kernel completes it: the backlog */
    ck_assert(!healthz_within(c, 300));
    close(a);
    ck_assert(healthz_within(c, systest_wait_ms())); /* its request was waiting */
    ck_assert(
        systest_proc_wait(&srv, true, " info metrics accepting connections again connections=1\n"));
    close(b);
    close(c);
    stop();
}
END_TEST

/* A request trickled a byte a second (each byte would restart evhttp's
 * own 10 s timeout) is closed once it has been arriving for 10 s; one
 * sent whole after idling as long is answered. */
START_TEST(test_request_deadline)
{
    start(NULL);
    int slow = systest_connect_port(mport);
    int idle = systest_connect_port(mport);
    int64_t t0 = systest_now_ms();
    const char *req = "GET /healthz HTTP/1.1\r\nHost: a-very-long-host-name\r\n";
    bool closed = false;
    for (size_t i = 0; req[i] != '\0' && !closed; i++) {
        if (send(slow, req + i, 1, MSG_NOSIGNAL) != 1)
            closed = true;
        struct pollfd pfd = {slow, POLLIN, 0};
        if (poll(&pfd, 1, 1000) == 1) {
            char buf[64];
            closed = read(slow, buf, sizeof buf) <= 0;
        }
    }
    int64_t took = systest_now_ms() - t0;
    ck_assert_msg(closed, "a request trickled for %lld ms is still open", (long long)took);
    ck_assert_int_ge(took, 10000);
    close(slow);
    /* idle, not trickling: evhttp's own timeout is the one that applies */
    close(idle);
    int fresh = systest_connect_port(mport);
    ck_assert(healthz_within(fresh, systest_wait_ms()));
    close(fresh);
    stop();
}
END_TEST

/* Eight clients pipeline /healthz without reading a reply: once the
 * replies fill their sockets, the server stops reading them, so its
 * memory stays put (it grew by gigabytes) and another client is
 * answered at once. */
START_TEST(test_pipelined_unread)
{
    if (systest_wrapped())
        return; /* valgrind's memory is not the server's */
    start(NULL);
    int wq = systest_connect_port(srv.s.port);
    bool jemalloc = systest_uses_jemalloc(wq); /* else a sanitizer's quarantine grows the RSS */
    close(wq);
    long before = status_kb("VmRSS:");
    int fds[8];
    static char burst[100 * (sizeof HEALTHZ - 1) + 1];
    for (size_t i = 0; i < 100; i++)
        memcpy(burst + i * (sizeof HEALTHZ - 1), HEALTHZ, sizeof HEALTHZ - 1);
    for (int i = 0; i < 8; i++) {
        fds[i] = systest_connect_port(mport);
        ck_assert_int_eq(fcntl(fds[i], F_SETFL, O_NONBLOCK), 0);
    }
    long long sent = 0;
    int64_t end = systest_now_ms() + 3000;
    while (systest_now_ms() < end) {
        for (int i = 0; i < 8; i++) {
            ssize_t n = send(fds[i], burst, sizeof burst - 1, MSG_NOSIGNAL);
            if (n > 0)
                sent += n;
        }
        systest_sleep_ms(1);
    }
    long after = status_kb("VmRSS:");
    ck_assert_msg(!jemalloc || after - before < 32 * 1024,
                  "RSS grew from %ld to %ld kB (%lld bytes sent)", before, after, sent);
    int probe = systest_connect_port(mport);
    ck_assert(healthz_within(probe, 1000));
    close(probe);
    for (int i = 0; i < 8; i++)
        close(fds[i]);
    stop();
}
END_TEST

/* Out of descriptors (Workq clients took them): the metrics listener
 * pauses instead of spinning, logs once a second at most, and serves
 * again once descriptors are free. */
START_TEST(test_descriptor_limit)
{
    if (systest_wrapped())
        return; /* valgrind needs descriptors of its own */
    struct rlimit old, low = {64, 64};
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
    low.rlim_max = old.rlim_max;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    start(NULL);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    int wq[80], n = 0;
    for (; n < 80; n++) {
        wq[n] = systest_connect_port(srv.s.port);
        /* the server has its descriptors when the job listener refuses */
        systest_sends(wq[n], "inspect queue none\r\n");
        const char *l = systest_read_line_within(wq[n], 1000);
        if (l == NULL) {
            close(wq[n]);
            break;
        }
    }
    ck_assert_int_lt(n, 64);
    long cpu0 = cpu_ticks();
    int64_t t0 = systest_now_ms();
    int m[10];
    for (int i = 0; i < 10; i++)
        m[i] = systest_connect_port(mport); /* in the backlog */
    systest_sleep_ms(2500);
    long ticks = cpu_ticks() - cpu0;
    int64_t secs = (systest_now_ms() - t0) / 1000 + 1;
    ck_assert_msg(ticks < sysconf(_SC_CLK_TCK) / 2, "the server spun: %ld ticks in 2.5 s", ticks);
    systest_proc_pump(&srv, 100);
    int lines = 0;
    for (const char *p = srv.err.p;
         (p = strstr(p, "warn metrics accept failed, pausing ms=100 "
                        "error=\"Too many open files\" repeats=")) != NULL;
         p++)
        lines++;
    ck_assert_msg(lines >= 1 && lines <= secs + 1, "%d accept failure lines in %lld s", lines,
                  (long long)secs);
    for (int i = 0; i < n; i++)
        close(wq[i]);
    ck_assert(healthz_within(m[0], systest_wait_ms()));
    for (int i = 0; i < 10; i++)
        close(m[i]);
    stop();
}
END_TEST

static Suite *
metrics_limits_suite(void)
{
    const struct systest_group groups[] = {
        {"cap", {test_cap, NULL}},
        {"deadline", {test_request_deadline, NULL}},
        {"pipelined", {test_pipelined_unread, NULL}},
        {"descriptors", {test_descriptor_limit, NULL}},
    };
    return systest_suite("metrics_limits", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(metrics_limits_suite());
}
