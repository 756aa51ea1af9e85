/* sys_faktory.c - system tests of the Faktory listener (-faktory-listen):
 * the real workq-server over TCP, byte-exact against doc/faktory.md: the
 * greeting, HELLO, the password from a file or FAKTORY_PASSWORD (and
 * what a bad one does at start), END closing the socket after the client's
 * half-close, BEAT, and the Workq listener going on beside it. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "systest.h"

#define EX_CONFIG_STATUS 78

/* A server with a Faktory listener and flag (NULL: none) set to value;
 * its Faktory port. */
static int
start_with(struct systest_proc *p, const char *flag, const char *value)
{
    const char *args[] = {"-listen", "127.0.0.1:0", "-faktory-listen", "127.0.0.1:0", flag,
                          value,     NULL};
    systest_proc_start(p, args);
    ck_assert(systest_proc_wait(p, false, "faktory listening on"));
    ck_assert(systest_proc_wait(p, false, "\n"));
    const char *line = strstr(p->out.p, "faktory listening on 127.0.0.1:");
    ck_assert_ptr_nonnull(line);
    return atoi(strchr(line, ':') + 1);
}

/* The same with a password file (NULL: none). */
static int
start(struct systest_proc *p, const char *password_file)
{
    return start_with(p, password_file ? "-faktory-password-file" : NULL, password_file);
}

/* A new password file holding text; its path into path (from a
 * "/tmp/wq-fkpw-XXXXXX" template). */
static void
password_file(char *path, const char *text)
{
    int pfd = mkstemp(path);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(write(pfd, text, strlen(text)), (ssize_t)strlen(text));
    close(pfd);
}

/* Connect, read HI, and answer HELLO with the password (NULL: none). */
static int
hello(int port, const char *password, const char *reply)
{
    int fd = systest_connect_port(port);
    const char *hi = systest_read_line(fd);
    if (password == NULL) {
        ck_assert_str_eq(hi, "+HI {\"v\":2}");
        systest_sends(fd, "HELLO {\"v\":2,\"wid\":\"w9\",\"hostname\":\"h\",\"pid\":1}\r\n");
    } else {
        int iterations = 0;
        char salt[32] = "";
        ck_assert_msg(
            sscanf(hi, "+HI {\"v\":2,\"i\":%d,\"s\":\"%31[0-9a-f]\"}", &iterations, salt) == 2,
            "%s", hi);
        systest_sends(fd, f("HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n",
                            systest_pwdhash(password, salt, iterations)));
    }
    systest_expect(fd, reply);
    return fd;
}

START_TEST(test_handshake_and_end)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    int fd = hello(port, NULL, "+OK\r\n");
    systest_roundtrip(fd, "BEAT {\"wid\":\"w9\"}\r\n", "+OK\r\n");
    systest_roundtrip(fd, "NOPE\r\n", "-ERR unknown command NOPE\r\n");
    /* END, then the half-close the node client sends: the server closes */
    systest_sends(fd, "END\r\n");
    shutdown(fd, SHUT_WR);
    systest_expect_closed(fd);
    close(fd);
    /* a connection that leaves without HELLO (a health probe) is fine */
    fd = systest_connect_port(port);
    ck_assert_str_eq(systest_read_line(fd), "+HI {\"v\":2}");
    close(fd);
    /* a first line that is not HELLO: closed without a reply */
    fd = systest_connect_port(port);
    ck_assert_str_eq(systest_read_line(fd), "+HI {\"v\":2}");
    systest_sends(fd, "PUSH {}\r\n");
    systest_expect_closed(fd);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

START_TEST(test_password_file)
{
    char path[] = "/tmp/wq-fkpw-XXXXXX";
    password_file(path, "open sesame\nsecond line\n");
    struct systest_proc p;
    int port = start(&p, path);
    int fd = hello(port, "open sesame", "+OK\r\n");
    close(fd);
    fd = hello(port, "open sesam", "-ERR Invalid password\r\n");
    systest_expect_closed(fd);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);

    /* an empty file, or none, refuses to start */
    ck_assert_int_eq(truncate(path, 0), 0);
    const char *args[] = {
        "-listen", "127.0.0.1:0", "-faktory-listen", "127.0.0.1:0", "-faktory-password-file",
        path,      NULL};
    ck_assert_int_eq(systest_proc_run(&p, args), EX_CONFIG_STATUS);
    ck_assert_ptr_nonnull(strstr(p.err.p, "cannot read the Faktory password file"));
    systest_proc_free(&p);
    unlink(path);
    ck_assert_int_eq(systest_proc_run(&p, args), EX_CONFIG_STATUS);
    ck_assert_ptr_nonnull(strstr(p.err.p, "No such file or directory"));
    systest_proc_free(&p);
}
END_TEST

START_TEST(test_password_from_environment)
{
    setenv("FAKTORY_PASSWORD", "from-env", 1);
    struct systest_proc p;
    int port = start(&p, NULL);
    unsetenv("FAKTORY_PASSWORD");
    int fd = hello(port, "from-env", "+OK\r\n");
    close(fd);
    fd = hello(port, "", "-ERR Invalid password\r\n");
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* Guessers on parallel connections from one address: each wrong HELLO is
 * answered after the address's delay, and the connection closes only
 * then; while a delay runs, no hash is checked (the log shows a few
 * failures, the rest counted unchecked); a Workq client is answered
 * meanwhile, and the right password works once the delay is over. */
START_TEST(test_password_guessers)
{
    char path[] = "/tmp/wq-fkpw-XXXXXX";
    password_file(path, "guess me\n");
    struct systest_proc p;
    int port = start(&p, path);
    enum { GUESSERS = 40 };
    int fds[GUESSERS];
    for (int i = 0; i < GUESSERS; i++) {
        fds[i] = systest_connect_port(port);
        systest_read_line(fds[i]); /* HI */
    }
    int64_t t0 = systest_now_ms();
    for (int i = 0; i < GUESSERS; i++)
        systest_sends(fds[i], f("HELLO {\"v\":2,\"pwdhash\":\"%064d\"}\r\n", i));
    int wq = systest_connect_port(p.s.port);
    systest_roundtrip(wq, "inspect queue none\r\n", "-NOT-FOUND\r\n");
    for (int i = 0; i < GUESSERS; i++) {
        systest_expect(fds[i], "-ERR Invalid password\r\n");
        systest_expect_closed(fds[i]);
        close(fds[i]);
    }
    ck_assert_int_ge(systest_now_ms() - t0, 250);
    systest_proc_pump(&p, 50);
    int checked = 0;
    for (const char *l = p.err.p;
         (l = strstr(l, "warn faktory auth failed peer=127.0.0.1:")) != NULL; l++)
        checked++;
    ck_assert_msg(checked >= 1 && checked <= 3, "%d checked of %d guesses", checked, GUESSERS);
    /* the right password, once the address's delay is over */
    const char *hi = NULL;
    for (int tries = 0; tries < 6; tries++) {
        int fd = systest_connect_port(port);
        int iterations = 0;
        char salt[32] = "";
        hi = systest_read_line(fd);
        ck_assert_int_eq(
            sscanf(hi, "+HI {\"v\":2,\"i\":%d,\"s\":\"%31[0-9a-f]\"}", &iterations, salt), 2);
        systest_sends(fd, f("HELLO {\"v\":2,\"pwdhash\":\"%s\"}\r\n",
                            systest_pwdhash("guess me", salt, iterations)));
        hi = systest_read_line(fd);
        close(fd);
        if (strcmp(hi, "+OK") == 0)
            break;
        ck_assert_str_eq(hi, "-ERR Invalid password");
    }
    ck_assert_str_eq(hi, "+OK");
    ck_assert(systest_proc_wait(&p, true, " warn faktory auth refused unchecked peer=127.0.0.1:"));
    close(wq);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    unlink(path);
}
END_TEST

/* An operator on the Workq listener quiets, then stops, a Faktory worker:
 * its next BEAT says so. */
START_TEST(test_quiet_and_terminate)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    int fk = hello(port, NULL, "+OK\r\n");
    int wq = systest_connect_port(p.s.port);
    systest_sends(wq, "inspect workers 0 10\r\n");
    static const char *const lines[] = {"+OK 1",        "w9 12",
                                        "hostname h",   "pid 1",
                                        "labels []",    "connections 1",
                                        "last-beat 2",  "state running",
                                        "kind faktory", "address 127.0.0.1:",
                                        "connected 2",  "last-command HELLO",
                                        "waiting-on ",  "jobs 0"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *l = systest_read_line(wq);
        ck_assert_msg(strncmp(l, lines[i], strlen(lines[i])) == 0, "\"%s\", want \"%s\"", l,
                      lines[i]);
    }
    systest_roundtrip(wq, "worker quiet w9\r\n", "+OK\r\n");
    systest_roundtrip(fk, "BEAT {\"wid\":\"w9\"}\r\n", "$17\r\n{\"state\":\"quiet\"}\r\n");
    systest_roundtrip(wq, "worker terminate w9\r\n", "+OK\r\n");
    systest_roundtrip(fk, "BEAT {\"wid\":\"w9\"}\r\n", "$21\r\n{\"state\":\"terminate\"}\r\n");
    /* gone with its last connection */
    close(fk);
    for (int i = 0; i < 100; i++) {
        systest_sends(wq, "worker quiet w9\r\n");
        if (strcmp(systest_read_line(wq), "-NOT-FOUND") == 0)
            break;
        systest_sleep_ms(10);
    }
    systest_roundtrip(wq, "inspect workers 0 10\r\n", "+OK 0\r\n");
    close(wq);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* The Workq listener serves as before, beside a Faktory client. */
START_TEST(test_workq_beside)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    int fk = hello(port, NULL, "+OK\r\n");
    int wq = systest_connect_port(p.s.port);
    systest_add(wq, id4(1), "q", "x");
    systest_lease_now(wq, "q", id4(1), "x");
    ck_assert_uint_eq(systest_server_stat(wq, "active-clients"), 2);
    systest_roundtrip(fk, "BEAT {\"wid\":\"w9\"}\r\n", "+OK\r\n");
    close(wq);
    close(fk);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* -idle-timeout closes a Faktory connection that has not said HELLO, never
 * an identified one (a worker closed on without a quiet or terminate BEAT
 * counts it a fault). */
START_TEST(test_idle_identified_kept)
{
    struct systest_proc p;
    int port = start_with(&p, "-idle-timeout", "300ms");
    int worker = hello(port, NULL, "+OK\r\n");
    int probe = systest_connect_port(port);
    ck_assert_str_eq(systest_read_line(probe), "+HI {\"v\":2}");
    systest_expect_closed(probe);
    close(probe);
    systest_sleep_ms(900 * systest_slow());
    systest_roundtrip(worker, "BEAT {\"wid\":\"w9\"}\r\n", "+OK\r\n");
    close(worker);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* inspect server shows Faktory's counts after Workq's keys when the server
 * has a Faktory listener; Workq's own keys and counts do not see them. */
START_TEST(test_inspect_server_counts)
{
    struct systest_proc p;
    int port = start(&p, NULL);
    int fk = hello(port, NULL, "+OK\r\n");
    int wq = systest_connect_port(p.s.port);
    systest_roundtrip(fk, "PUSH {\"jid\":\"job-0001\",\"jobtype\":\"t\",\"args\":[]}\r\n",
                      "+OK\r\n");
    systest_roundtrip(fk,
                      "PUSH {\"jid\":\"job-0002\",\"jobtype\":\"t\",\"args\":[],"
                      "\"at\":\"2999-01-01T00:00:00Z\"}\r\n",
                      "+OK\r\n");
    systest_sends(wq, "inspect server\r\n");
    ck_assert_str_eq(systest_read_line(wq), "+OK 1");
    ck_assert_str_eq(systest_read_line(wq), "server 21");
    static const char *const keys[] = {"active-clients",
                                       "evicted-jobs",
                                       "started",
                                       "version",
                                       "uptime",
                                       "jobs",
                                       "ready-jobs",
                                       "scheduled-jobs",
                                       "leased-jobs",
                                       "completed-jobs",
                                       "failed-jobs",
                                       "parked-clients",
                                       "memory-used",
                                       "allocator",
                                       "faktory-jobs",
                                       "faktory-scheduled-jobs",
                                       "faktory-enqueued-jobs",
                                       "faktory-working-jobs",
                                       "faktory-retry-jobs",
                                       "faktory-dead-jobs",
                                       "faktory-queues"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *line = systest_read_line(wq);
        ck_assert_msg(strncmp(line, keys[i], strlen(keys[i])) == 0 && line[strlen(keys[i])] == ' ',
                      "key %zu: %s, want %s", i, line, keys[i]);
    }
    ck_assert_uint_eq(systest_server_stat(wq, "jobs"), 0);
    ck_assert_uint_eq(systest_server_stat(wq, "ready-jobs"), 0);
    ck_assert_uint_eq(systest_server_stat(wq, "faktory-jobs"), 2);
    ck_assert_uint_eq(systest_server_stat(wq, "faktory-enqueued-jobs"), 1);
    ck_assert_uint_eq(systest_server_stat(wq, "faktory-scheduled-jobs"), 1);
    ck_assert_uint_eq(systest_server_stat(wq, "faktory-working-jobs"), 0);
    ck_assert_uint_eq(systest_server_stat(wq, "faktory-queues"), 1);
    close(wq);
    close(fk);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

static Suite *
faktory_suite(void)
{
    const struct systest_group groups[] = {
        {"handshake", {test_handshake_and_end, NULL}},
        {"password", {test_password_file, test_password_from_environment, NULL}},
        {"guessers", {test_password_guessers, NULL}},
        {"beside", {test_workq_beside, test_quiet_and_terminate, NULL}},
        {"idle", {test_idle_identified_kept, NULL}},
        {"inspect", {test_inspect_server_counts, NULL}},
    };
    return systest_suite("faktory", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(faktory_suite());
}
