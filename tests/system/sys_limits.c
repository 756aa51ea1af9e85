/* sys_limits.c - system tests of workq-server's limits: -max-connections,
 * -idle-timeout, -max-memory (also across a replay of the command log),
 * and several listen addresses (doc/workq-server.8).
 *
 * Tests check behaviour, never speed: every wait for something that must
 * happen is generous and scaled by WQ_TEST_SLOW, and checks that something
 * has NOT happened yet run only when WQ_TEST_SLOW is 1. */
#include "config.h"
#include "systest.h"
#include "engine/core.h" /* core_job_bytes: what -max-memory counts per job */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TTR   SYSTEST_TTR
#define TTL   SYSTEST_TTL
#define PARK  "60000" /* wait of a lease/result/run that must be woken */
#define LATER "2999-01-01T00:00:00Z"
#define OOM   "-SERVER-ERROR Out of memory\r\n"
/* The idle timeout of the idle tests. */
#define IDLE_MS 500

/* ------------------------------------------------------------------------ */
/* Talking to the server */

/* Wait (up to the scaled bound) until "inspect server" shows key = want. */
static void
wait_stat(int fd, const char *key, uint64_t want)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    uint64_t v;
    while ((v = systest_server_stat(fd, key)) != want) {
        ck_assert_msg(systest_now_ms() < deadline, "%s is %llu, want %llu", key,
                      (unsigned long long)v, (unsigned long long)want);
        systest_sleep_ms(10);
    }
}

/* Send a command that answers -NOT-FOUND on an accepted connection: true
 * if it did, false if the server refused the connection with FULL. */
static bool
try_sync(int fd)
{
    const char *cmd = "delete 00000000-0000-4000-8000-000000000001\r\n";
    (void)!send(fd, cmd, strlen(cmd), MSG_NOSIGNAL); /* a refused one may reset */
    char buf[64];
    size_t n = 0;
    while (n < strlen(FULL)) {
        struct pollfd p = {fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, systest_wait_ms()) > 0, "no reply");
        ssize_t r = recv(fd, buf + n, strlen(FULL) - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == strlen(NF) && memcmp(buf, NF, n) == 0)
            return true;
    }
    ck_assert_msg(n == strlen(FULL) && memcmp(buf, FULL, n) == 0,
                  "neither accepted nor refused (%zu bytes)", n);
    return false;
}

/* ------------------------------------------------------------------------ */
/* -max-connections */

START_TEST(test_maxconn_refuse)
{
    struct systest_server s;
    systest_start(&s, "--max-connections", "2", NULL);
    int a = systest_connect(&s), b = systest_connect(&s);
    systest_sync(a);
    systest_sync(b);
    ck_assert_uint_eq(systest_server_stat(a, "active-clients"), 2);
    /* the third and fourth get the reply, then EOF, whatever they send */
    int c = systest_connect(&s);
    systest_expect(c, FULL);
    systest_expect_closed(c);
    close(c);
    int d = systest_connect(&s);
    systest_expect(d, FULL);
    systest_expect_closed(d);
    close(d);
    /* the first two are unaffected */
    systest_sync(a);
    systest_sync(b);
    ck_assert_uint_eq(systest_server_stat(b, "active-clients"), 2);
    close(a);
    close(b);
    systest_stop(&s);
}
END_TEST

START_TEST(test_maxconn_accept_again)
{
    struct systest_server s;
    systest_start(&s, "-max-connections=1", NULL);
    int a = systest_connect(&s);
    systest_sync(a);
    int b = systest_connect(&s);
    ck_assert(!try_sync(b));
    close(b);
    close(a);
    /* Once the server has seen the close, a new client is accepted. */
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    int c;
    for (;;) {
        c = systest_connect(&s);
        if (try_sync(c))
            break;
        close(c);
        ck_assert_msg(systest_now_ms() < deadline, "no client accepted after one left");
        systest_sleep_ms(20);
    }
    systest_add(c, id4(1), "q", "x");
    /* and the limit holds again */
    int d = systest_connect(&s);
    systest_expect(d, FULL);
    systest_expect_closed(d);
    close(d);
    systest_lease_now(c, "q", id4(1), "x");
    close(c);
    systest_stop(&s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* -idle-timeout */

/* A silent connection is closed between 1 and 1.25 timeouts after it fell
 * silent, with nothing sent; one that keeps talking is not; neither is one
 * with half a command. */
START_TEST(test_idle_silent_closed)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int64_t t0 = systest_now_ms();
    int quiet = systest_connect(&s);
    int partial = systest_connect(&s);
    systest_sends(partial, "inspect ser");
    int busy = systest_connect(&s);
    if (systest_exact_timing()) {
        /* busy talks every 100 ms; quiet is not closed before the timeout */
        while (systest_now_ms() - t0 < IDLE_MS - 150) {
            systest_sleep_ms(100);
            systest_sync(busy);
        }
        systest_expect_silence(quiet, 50);
    }
    systest_expect_closed(quiet);
    int64_t closed = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(closed >= IDLE_MS - 10, "closed after %lld ms", (long long)closed);
    ck_assert_msg(closed <= IDLE_MS * 4 * systest_slow(), "closed after %lld ms",
                  (long long)closed);
    systest_expect_closed(partial);
    if (systest_exact_timing()) {
        /* three timeouts of talk keep busy open */
        for (int i = 0; i < 15; i++) {
            systest_sleep_ms(100);
            systest_sync(busy);
        }
        ck_assert_uint_eq(systest_server_stat(busy, "active-clients"), 1);
    }
    close(quiet);
    close(partial);
    close(busy);
    systest_stop(&s);
}
END_TEST

/* A client still reading a long answer is not idle, though it sends
 * nothing: its pipelined commands are all answered. */
START_TEST(test_idle_slow_reader)
{
    enum { LEN = 1048576, N = 12 };
    static char payload[LEN], buf[64 * 1024];
    memset(payload, 'p', LEN);
    struct systest_server s;
    /* 1 s: a test process starved of CPU that long would read nothing too */
    systest_start(&s, "--idle-timeout", "1s", NULL);
    int fd = systest_connect(&s);
    systest_sends(fd, f("add %s q 60000 60000 %d\r\n", id4(1), LEN));
    systest_send(fd, payload, LEN);
    systest_roundtrip(fd, "\r\n", OK);
    /* N answers of 1 MiB each: the server throttles this client's input
     * and it reads them over several idle timeouts. */
    for (int i = 0; i < N; i++)
        systest_sends(fd, f("inspect job %s\r\n", id4(1)));
    systest_sends(fd, f("delete %s\r\n", id4(9)));
    /* Read slowly, 64 KiB every 30 ms (about 2 MiB/s), until the answer
     * to the last command, -NOT-FOUND, ends the stream. */
    char tail[12] = "";
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        ck_assert_msg(n > 0, "closed after %zu bytes", got);
        got += (size_t)n;
        size_t keep = (size_t)n < sizeof tail ? sizeof tail - (size_t)n : 0;
        memmove(tail, tail + sizeof tail - keep, keep);
        memcpy(tail + keep, buf + (size_t)n - (sizeof tail - keep), sizeof tail - keep);
        if (memcmp(tail, "-NOT-FOUND\r\n", sizeof tail) == 0)
            break;
        systest_sleep_ms(30);
    }
    ck_assert_uint_gt(got, (size_t)N * LEN);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A parked lease, a waiting run and a waiting result are never idle; each
 * becomes idle from its reply on. */
START_TEST(test_idle_waiting_not_idle)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int ctl = systest_connect(&s);
    systest_add(ctl, id4(2), "r", "y");
    close(ctl);
    int leaser = systest_connect(&s);
    systest_sends(leaser, "lease q " PARK "\r\n");
    int runner = systest_connect(&s);
    systest_sends(runner, f("run %s w %u " PARK " 1\r\nx\r\n", id4(1), TTR));
    int waiter = systest_connect(&s);
    systest_sends(waiter, f("result %s " PARK "\r\n", id4(2)));

    /* Three timeouts later, all three are waiting still: never idle.  This
     * holds however slow the server is, so it needs no exact timing. */
    systest_sleep_ms(IDLE_MS * 3);
    ctl = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(ctl, "active-clients"), 4);
    ck_assert_uint_eq(systest_server_stat(ctl, "parked-clients"), 3);
    systest_add(ctl, id4(3), "q", "z");
    systest_expect_lease(leaser, id4(3), "q", "z");
    int64_t t0 = systest_now_ms();
    systest_lease_now(ctl, "w", id4(1), "x");
    systest_roundtrip(ctl, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_expect(runner, systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(ctl, f("complete %s 2\r\nok\r\n", id4(2)), OK);
    systest_expect(waiter, systest_result_reply(id4(2), 1, "ok"));
    close(ctl);

    /* idle from the reply on: not at once, but then */
    if (systest_exact_timing() && systest_now_ms() - t0 < 200)
        systest_expect_silence(leaser, 200);
    systest_expect_closed(leaser);
    systest_expect_closed(runner);
    systest_expect_closed(waiter);
    close(leaser);
    close(runner);
    close(waiter);
    systest_stop(&s);
}
END_TEST

/* After a wait ends with -TIMEOUT, idleness counts from that reply, not
 * from the command that parked. */
START_TEST(test_idle_after_timeout)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int ctl = systest_connect(&s);
    systest_add(ctl, id4(1), "q", "x");
    close(ctl);
    int leaser = systest_connect(&s);
    int waiter = systest_connect(&s);
    systest_sends(leaser, "lease empty 1000\r\n");
    systest_sends(waiter, f("result %s 1000\r\n", id4(1)));
    systest_expect(leaser, TO);
    int64_t t0 = systest_now_ms();
    systest_expect(waiter, TO);
    if (systest_exact_timing()) {
        /* Counted from the command, both would go at the next sweep. */
        systest_expect_silence(leaser, 300);
        systest_expect_silence(waiter, 10);
    }
    systest_expect_closed(leaser);
    int64_t after = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(after >= IDLE_MS - 100, "closed %lld ms after -TIMEOUT", (long long)after);
    systest_expect_closed(waiter);
    close(leaser);
    close(waiter);
    systest_stop(&s);
}
END_TEST

/* A client that trickles in a command it never finishes (slowloris) is
 * idle from its last answer, whatever it sends; one that finishes its
 * commands slowly is not. */
START_TEST(test_idle_slowloris)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int slow = systest_connect(&s);
    int steady = systest_connect(&s);
    systest_sync(slow);
    int64_t t0 = systest_now_ms();
    const char *line = "inspect server and a line that never ends ";
    bool closed = false;
    for (size_t i = 0; !closed && systest_now_ms() - t0 < IDLE_MS * 8 * systest_slow(); i++) {
        /* a byte every 50 ms, and a whole command from steady every 150 */
        closed = send(slow, line + i % strlen(line), 1, MSG_NOSIGNAL) < 0;
        if (i % 3 == 0)
            systest_sync(steady);
        systest_sleep_ms(50);
        if (!closed) {
            char b;
            ssize_t n = recv(slow, &b, 1, MSG_DONTWAIT);
            ck_assert_msg(n != 1, "a reply to an unfinished line");
            closed = n == 0;
        }
    }
    ck_assert_msg(closed, "the trickling client is still open after %lld ms",
                  (long long)(systest_now_ms() - t0));
    if (systest_exact_timing())
        ck_assert_int_ge(systest_now_ms() - t0, IDLE_MS - 50);
    systest_sync(steady);
    close(slow);
    close(steady);
    systest_stop(&s);
}
END_TEST

/* A client that never reads its replies is closed once it has taken none
 * of them for the timeout: its unsent replies are dropped, not kept.  Past
 * its unread-output cap (4 MiB) its requests stop being read first; both
 * steps are logged. */
START_TEST(test_idle_never_reads)
{
    enum { LEN = 1048576, N = 16 };
    static char payload[LEN];
    memset(payload, 'p', LEN);
    struct systest_proc p;
    systest_proc_start(
        &p, (const char *const[]){"-listen", "127.0.0.1:0", "--idle-timeout", "500ms", NULL});
    int fd = systest_connect(&p.s);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    systest_sends(fd, f("add %s q 60000 60000 %d\r\n", id4(1), LEN));
    systest_send(fd, payload, LEN);
    systest_roundtrip(fd, "\r\n", OK);
    for (int i = 0; i < N; i++)
        systest_sends(fd, f("inspect job %s\r\n", id4(1)));
    int64_t t0 = systest_now_ms();
    int ctl = systest_connect(&p.s);
    /* the server gives up on it: the connection count drops to ctl's */
    while (systest_server_stat(ctl, "active-clients") != 1) {
        ck_assert_msg(systest_now_ms() - t0 < IDLE_MS * 8 * systest_slow(),
                      "a client that reads nothing is still open");
        systest_sleep_ms(50);
    }
    if (systest_exact_timing())
        ck_assert_int_ge(systest_now_ms() - t0, IDLE_MS - 50);
    ck_assert(systest_proc_wait(
        &p, true, " info not reading a connection's requests until it reads its replies peer="));
    ck_assert(systest_proc_wait(&p, true, " info closing a connection that reads nothing peer="));
    close(fd);
    close(ctl);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* -max-memory */

static const char *
u64s(uint64_t v)
{
    return f("%llu", (unsigned long long)v);
}

/* Job bytes are exact: a limit of one 10-byte and one 5-byte job takes
 * those and refuses a byte more; add, schedule and run are refused with
 * nothing changed; delete makes room. */
/* memory-used counts what is really allocated: unread answers that send a
 * 1 MiB payload by reference add no copy of it (libevent would allocate a
 * chain as large as the payload for the line end after it). */
START_TEST(test_memory_used_unread_payloads)
{
    enum { LEN = 1048576, N = 8 };
    static char payload[LEN];
    memset(payload, 'p', LEN);
    struct systest_server s;
    systest_start(&s, NULL);
    int ctl = systest_connect(&s);
    systest_sends(ctl, f("add %s q 60000 60000 %d\r\n", id4(1), LEN));
    systest_send(ctl, payload, LEN);
    systest_roundtrip(ctl, "\r\n", OK);
    uint64_t before = systest_server_stat(ctl, "memory-used");
    int idle[N];
    for (int i = 0; i < N; i++) {
        idle[i] = systest_connect(&s);
        int small = 4096;
        setsockopt(idle[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        for (int k = 0; k < 8; k++) /* more than the socket buffers take */
            systest_sends(idle[i], f("inspect job %s\r\n", id4(1)));
    }
    /* every command sent before this round trip has been answered */
    systest_sync(ctl);
    uint64_t after = systest_server_stat(ctl, "memory-used");
    ck_assert_msg(after < before + LEN / 2, "memory-used grew from %llu to %llu", U(before),
                  U(after));
    for (int i = 0; i < N; i++)
        close(idle[i]);
    close(ctl);
    systest_stop(&s);
}
END_TEST

/* Sanitizer builds use their own allocator, and report the RSS as
 * memory-used. */
static bool
uses_jemalloc(int fd)
{
    return systest_uses_jemalloc(fd);
}

/* The resident size of process pid, in bytes (0 if unknown). */
static uint64_t
rss_of(pid_t pid)
{
    char path[64], *status, *line;
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    status = systest_slurp(path, NULL);
    uint64_t kb = 0;
    if ((line = strstr(status, "\nVmRSS:")) != NULL)
        kb = strtoull(line + 8, NULL, 10);
    free(status);
    return kb * 1024;
}

/* Memory goes back to the system after a drain: 64 MB of 1 KiB jobs added
 * and deleted leave the server's RSS within 2 x its idle size + 16 MB in
 * 25 s, inside the test's time limit (jemalloc's decay on a background thread; the pools and tables
 * shrink).  Only with jemalloc: sanitizer builds use their own. */
START_TEST(test_memory_given_back)
{
    enum { LEN = 1024, N = 65536, BATCH = 1024 };
    struct systest_server s;
    systest_start(&s, NULL);
    int fd = systest_connect(&s);
    bool jemalloc = uses_jemalloc(fd);
    close(fd);
    if (!jemalloc) {
        systest_stop(&s);
        return;
    }
    fd = systest_connect(&s);
    systest_sync(fd);
    uint64_t baseline = rss_of(s.pid);
    static char block[BATCH * (LEN + 64)];
    char payload[LEN];
    memset(payload, 'm', LEN);
    for (int b = 0; b < N / BATCH; b++) {
        size_t n = 0;
        for (int i = 0; i < BATCH; i++) {
            n +=
                (size_t)sprintf(block + n, "add %s q 60000 600000 %d\r\n", id4(b * BATCH + i), LEN);
            memcpy(block + n, payload, LEN);
            n += LEN;
            memcpy(block + n, "\r\n", 2);
            n += 2;
        }
        systest_send(fd, block, n);
        for (int i = 0; i < BATCH; i++)
            systest_expect(fd, OK);
    }
    uint64_t full = rss_of(s.pid);
    ck_assert_uint_gt(full, baseline + (uint64_t)N * LEN / 2);
    for (int b = 0; b < N / BATCH; b++) {
        size_t n = 0;
        for (int i = 0; i < BATCH; i++)
            n += (size_t)sprintf(block + n, "delete %s\r\n", id4(b * BATCH + i));
        systest_send(fd, block, n);
        for (int i = 0; i < BATCH; i++)
            systest_expect(fd, OK);
    }
    uint64_t bound = 2 * baseline + (16u << 20), rss = 0;
    int64_t t0 = systest_now_ms();
    while ((rss = rss_of(s.pid)) > bound && systest_now_ms() - t0 < 25000 * systest_slow())
        systest_sleep_ms(250);
    ck_assert_msg(rss <= bound, "RSS %llu after the drain (idle %llu, full %llu)", U(rss),
                  U(baseline), U(full));
    close(fd);
    systest_stop(&s);
}
END_TEST

START_TEST(test_memory_refusals)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(queue_bytes(1) + core_job_bytes(10) + core_job_bytes(5)),
                  NULL);
    int fd = systest_connect(&s);
    systest_add(fd, id4(1), "q", "0123456789");
    const char *six = "012345";
    systest_roundtrip(fd, f("add %s q %u %s 6\r\n%s\r\n", id4(2), TTR, TTL, six), OOM);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 6\r\n%s\r\n", id4(2), TTR, TTL, LATER, six),
                      OOM);
    systest_roundtrip(fd, f("run %s q %u 1000 6\r\n%s\r\n", id4(2), TTR, six), OOM);
    systest_roundtrip(fd, f("add %s q %u %s 6 -priority=5\r\n%s\r\n", id4(2), TTR, TTL, six), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    ck_assert_uint_eq(systest_server_stat(fd, "ready-jobs"), 1);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(2)), NF);
    /* what is refused is not a duplicate afterwards: exactly 5 bytes fit */
    systest_add(fd, id4(2), "q", "01234");
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(3), TTR, TTL), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    /* other commands go on */
    systest_lease_now(fd, "q", id4(1), "0123456789");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(1)), OK);
    /* delete frees the room of a 10-byte job */
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 11\r\n01234567890\r\n", id4(3), TTR, TTL), OOM);
    systest_add(fd, id4(3), "q", "0123456789");
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    /* room for a 5-byte add, but a scheduled job also needs its extension */
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OK);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* Each queue counts: one-byte jobs on distinct names stop at the limit as
 * jobs plus their queues, not as jobs alone; deleting them gives the room
 * back. */
START_TEST(test_memory_queues_count)
{
    const uint64_t limit = 65536, each = core_job_bytes(1) + queue_bytes(6);
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(limit), NULL);
    int fd = systest_connect(&s);
    unsigned n = 0;
    for (;; n++) {
        systest_sends(fd, f("add %s n%05u %u %s 1\r\nx\r\n", id4(n), n, TTR, TTL));
        const char *reply = systest_read_line(fd);
        if (strcmp(reply, "-SERVER-ERROR Out of memory") == 0)
            break;
        ck_assert_str_eq(reply, "+OK");
    }
    ck_assert_uint_eq(n, limit / each);
    for (unsigned i = 0; i < n; i++)
        systest_roundtrip(fd, f("delete %s\r\n", id4(i)), OK);
    systest_roundtrip(fd, f("add %s n%05u %u %s 1\r\nx\r\n", id4(n), n, TTR, TTL), OK);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* At the limit, a data block is not buffered: it is dropped as it streams
 * in and its command answered Out of memory, whatever the command; so
 * connections that each start a 1 MiB block cannot fill the memory.  A
 * result that would not fit is refused too, and the job stays leased. */
START_TEST(test_memory_blocks_at_limit)
{
    enum { LEN = 1048576, N = 20, LIMIT = 4 << 20 };
    static char half[LEN / 2];
    memset(half, 'h', sizeof half);
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(LIMIT), NULL);
    int fd = systest_connect(&s);
    systest_add(fd, id4(1), "q", "x");
    systest_lease_now(fd, "q", id4(1), "x");
    uint64_t before = systest_server_stat(fd, "memory-used");
    int c[N];
    for (int i = 0; i < N; i++) {
        c[i] = systest_connect(&s);
        systest_sends(c[i], f("add %s q %u %s %d\r\n", id4(100 + i), TTR, TTL, LEN));
        systest_send(c[i], half, sizeof half);
    }
    systest_sync(fd);
    uint64_t during = systest_server_stat(fd, "memory-used");
    ck_assert_msg(!uses_jemalloc(fd) || during < before + LIMIT + (2u << 20),
                  "memory-used %llu with %d half blocks", U(during), N);
    /* the rest of each block: refused ones get Out of memory, others +OK
     * or Out of memory from the limit itself; every connection goes on */
    int refused = 0;
    for (int i = 0; i < N; i++) {
        systest_send(c[i], half, sizeof half);
        systest_sends(c[i], "\r\n");
        const char *reply = systest_read_line(c[i]);
        if (strcmp(reply, "-SERVER-ERROR Out of memory") == 0)
            refused++;
        else
            ck_assert_str_eq(reply, "+OK");
        systest_sync(c[i]);
        close(c[i]);
    }
    ck_assert_int_ge(refused, N - LIMIT / LEN);
    /* fill up to the limit with small jobs, then a result does not fit */
    for (unsigned i = 200;; i++) {
        systest_sends(fd, f("add %s q %u %s 1000\r\n%01000d\r\n", id4(i), TTR, TTL, 0));
        if (strcmp(systest_read_line(fd), "+OK") != 0)
            break;
    }
    systest_roundtrip(fd, f("complete %s 2000\r\n%02000d\r\n", id4(1), 0),
                      "-SERVER-ERROR Out of memory\r\n");
    /* a long listing is refused too; a short one still answers */
    systest_roundtrip(fd, "inspect jobs q 0 1000\r\n", "-SERVER-ERROR Out of memory\r\n");
    systest_roundtrip(fd, "inspect jobs none 0 1000\r\n", NF);
    /* the job is still leased: a result without bytes is taken */
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(1)), OK);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A scheduled or run job also holds a job extension (its creation time, or
 * its waiting client): it is refused when that would not fit. */
START_TEST(test_memory_extension)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(core_job_bytes(5) + CORE_EXT_BYTES - 1), NULL);
    int fd = systest_connect(&s);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 5\r\n01234\r\n", id4(1), TTR, TTL, LATER), OOM);
    systest_roundtrip(fd, f("run %s q %u 1000 5\r\n01234\r\n", id4(1), TTR), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 0);
    systest_add(fd, id4(1), "q", "01234");
    close(fd);
    systest_stop(&s);
    systest_start(&s, "--max-memory", u64s(core_job_bytes(5) + CORE_EXT_BYTES), NULL);
    fd = systest_connect(&s);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 5\r\n01234\r\n", id4(1), TTR, TTL, LATER), OK);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A result counts its bytes and the job extension that holds it; a job's
 * expiry frees them with the job. */
START_TEST(test_memory_results_and_expiry)
{
    struct systest_server s;
    systest_start(&s, "--max-memory",
                  u64s(queue_bytes(1) + 2 * core_job_bytes(10) + CORE_EXT_BYTES), NULL);
    int fd = systest_connect(&s);
    systest_add_full(fd, id4(1), "q", TTR, "1000", "0123456789", NULL);
    /* a result that fits is taken, and its 4 bytes count */
    systest_roundtrip(fd, f("complete %s 4\r\nabcd\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 7\r\n0123456\r\n", id4(2), TTR, TTL), OOM);
    systest_add(fd, id4(2), "q", "012345");
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(3), TTR, TTL), OOM);
    /* the completed job expires: payload and result are freed */
    wait_stat(fd, "jobs", 1);
    systest_add(fd, id4(3), "q", "0123");
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A run job holds memory while it waits and frees it once answered. */
START_TEST(test_memory_run_freed)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(core_job_bytes(10) + CORE_EXT_BYTES), NULL);
    int runner = systest_connect(&s);
    int fd = systest_connect(&s);
    systest_sends(runner, f("run %s w %u " PARK " 10\r\n0123456789\r\n", id4(1), TTR));
    wait_stat(fd, "parked-clients", 1); /* the run is in */
    systest_lease_now(fd, "w", id4(1), "0123456789");
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(2), TTR, TTL), OOM);
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_expect(runner, systest_result_reply(id4(1), 1, "ok"));
    systest_add(fd, id4(2), "q", "0123456789");
    close(runner);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* Jobs replayed from the command log are never refused, even beyond the
 * limit; new ones are, until enough are gone. */
START_TEST(test_memory_replay)
{
    char dir[32];
    systest_tmpdir_new(dir);
    struct systest_server s;
    systest_start(&s, "-cmdlog-path", dir, NULL);
    int fd = systest_connect(&s);
    for (unsigned i = 1; i <= 3; i++)
        systest_add(fd, id4(i), "q", "0123456789");
    close(fd);
    systest_stop(&s);

    systest_start(&s, "-cmdlog-path", dir, "-max-memory", u64s(core_job_bytes(10)), NULL);
    fd = systest_connect(&s);
    uint64_t jobs = systest_server_stat(fd, "jobs");
    ck_assert_msg(jobs == 3, "%llu of 3 logged jobs replayed under -max-memory",
                  (unsigned long long)jobs);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(4), TTR, TTL), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(4), TTR, TTL), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_add(fd, id4(4), "q", "0123456789");
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    close(fd);
    systest_stop(&s);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Several listen addresses */

START_TEST(test_listen_two)
{
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0,127.0.0.1:0", NULL});
    ck_assert(systest_proc_wait(&p, false, "\nworkq-server listening on 127.0.0.1:"));
    ck_assert(systest_proc_wait(&p, true, "sync_int_ms="));
    while (systest_count_lines(p.out.p) < 2)
        ck_assert(systest_proc_pump(&p, systest_wait_ms()));
    int p1 = systest_listening_port(p.out.p, 0), p2 = systest_listening_port(p.out.p, 1);
    ck_assert_int_ne(p1, p2);
    ck_assert(systest_proc_wait(&p, true, f(" listen=127.0.0.1:%d,127.0.0.1:%d ", p1, p2)));
    /* one server behind both */
    int a = systest_connect_port(p1), b = systest_connect_port(p2);
    systest_add(a, id4(1), "q", "x");
    systest_lease_now(b, "q", id4(1), "x");
    close(a);
    close(b);
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 2);
    systest_proc_free(&p);
}
END_TEST

/* At most 8 addresses: 8 all listen, 9 are a usage error. */
START_TEST(test_listen_eight)
{
    char list[256] = "127.0.0.1:0";
    for (int i = 1; i < 8; i++)
        strcat(list, ",127.0.0.1:0");
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"--listen", list, NULL});
    while (systest_count_lines(p.out.p) < 8)
        ck_assert(systest_proc_pump(&p, systest_wait_ms()));
    for (int i = 0; i < 8; i++) {
        int fd = systest_connect_port(systest_listening_port(p.out.p, i));
        systest_sync(fd);
        close(fd);
    }
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 8);
    systest_proc_free(&p);

    strcat(list, ",127.0.0.1:0");
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"--listen", list, NULL}), 64);
    ck_assert_str_eq(p.err.p, f("workq-server: invalid -listen '%s' (expected "
                                "HOST:PORT[,HOST:PORT...])\n",
                                list));
    systest_proc_free(&p);
}
END_TEST

/* A later -listen replaces an earlier one, list and all. */
START_TEST(test_listen_replaced)
{
    struct systest_proc p;
    systest_proc_start(
        &p, (const char *const[]){"-l", "127.0.0.1:0,127.0.0.1:0", "-l", "127.0.0.1:0", NULL});
    int fd = systest_connect(&p.s);
    systest_sync(fd);
    close(fd);
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 1);
    systest_proc_free(&p);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
limits_suite(void)
{
    const struct systest_group groups[] = {
        {"max-connections", {test_maxconn_refuse, test_maxconn_accept_again, NULL}},
        {"idle-timeout",
         {test_idle_silent_closed, test_idle_waiting_not_idle, test_idle_slow_reader,
          test_idle_after_timeout, test_idle_slowloris, test_idle_never_reads, NULL}},
        {"max-memory",
         {test_memory_refusals, test_memory_extension, test_memory_results_and_expiry,
          test_memory_run_freed, test_memory_replay, test_memory_used_unread_payloads,
          test_memory_given_back, test_memory_queues_count, test_memory_blocks_at_limit, NULL}},
        {"listen", {test_listen_two, test_listen_eight, test_listen_replaced, NULL}},
    };
    return systest_suite("limits", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(limits_suite());
}
