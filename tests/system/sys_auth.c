/* sys_auth.c - system tests of passwords on the Workq listener
 * (-password-file, the auth command; doc/protocol-reference.md 4.14): the
 * real workq-server over TCP, byte-exact: what an unauthenticated client
 * gets, the delayed answer to a wrong password and its log line, waits
 * that grow per address, the password re-read on SIGHUP, the start-up
 * errors, and the Faktory listener keeping its own password. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "systest.h"

#define EX_CONFIG_STATUS 78
#define AUTH_REQUIRED    "-CLIENT-ERROR Authentication required\r\n"
#define INVALID_PASSWORD "-CLIENT-ERROR Invalid password\r\n"
#define ID1              "6ba7b810-9dad-11d1-80b4-00c04fd430c1"

/* Replace the file at path with text. */
static void
write_file(char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fputs(text, fp) >= 0, 1);
    ck_assert_int_eq(fclose(fp), 0);
}

/* A server whose Workq password is in a new file holding text; the file's
 * path into path (room for 32 bytes). */
static void
start(struct systest_proc *p, char *path, const char *text)
{
    strcpy(path, "/tmp/wq-pw-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    write_file(path, text);
    const char *args[] = {"-listen", "127.0.0.1:0", "-password-file", path, NULL};
    systest_proc_start(p, args);
}

static void
stop(struct systest_proc *p, const char *path)
{
    systest_proc_stop(p);
    systest_proc_free(p);
    unlink(path);
}

/* Before auth every command is refused and changes nothing; its data block
 * is read and dropped, so the next command is framed right. */
START_TEST(test_required)
{
    struct systest_proc p;
    char path[32];
    start(&p, path, "s3cret\n");
    int fd = systest_connect(&p.s);
    systest_roundtrip(fd, "add " ID1 " q 1000 60000 5\r\nhello\r\n", AUTH_REQUIRED);
    systest_roundtrip(fd, "inspect server\r\n", AUTH_REQUIRED);
    systest_roundtrip(fd, "lease q 0\r\n", AUTH_REQUIRED);
    systest_roundtrip(fd, "nonsense here\r\n", AUTH_REQUIRED);
    systest_roundtrip(fd, "complete " ID1 " 2\r\nok\r\n", AUTH_REQUIRED);
    /* a block over the size limit is skipped as it streams in */
    systest_sends(fd, "add " ID1 " q 1000 60000 2000000\r\n");
    char *big = calloc(1, 2000002);
    memset(big, 'x', 2000000);
    memcpy(big + 2000000, "\r\n", 2);
    systest_send(fd, big, 2000002);
    free(big);
    systest_expect(fd, AUTH_REQUIRED);
    systest_roundtrip(fd, "auth s3cret\r\n", "+OK\r\n");
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 0);
    systest_roundtrip(fd, "add " ID1 " q 1000 60000 5\r\nhello\r\n", "+OK\r\n");
    /* another connection has not authenticated */
    int other = systest_connect(&p.s);
    systest_roundtrip(other, "delete " ID1 "\r\n", AUTH_REQUIRED);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    close(other);
    close(fd);
    stop(&p, path);
}
END_TEST

/* A wrong password is answered after a delay (the connection waits, and
 * what it pipelined behind waits too, in order); the failure is logged with
 * the peer's address; the next failure from the address waits longer. */
START_TEST(test_wrong_password)
{
    struct systest_proc p;
    char path[32];
    start(&p, path, "s3cret\r\nsecond line\n");
    int fd = systest_connect(&p.s);
    int64_t t0 = systest_now_ms();
    systest_sends(fd, "auth S3cret\r\ninspect server\r\n");
    if (systest_exact_timing())
        systest_expect_silence(fd, 150);
    systest_expect(fd, INVALID_PASSWORD AUTH_REQUIRED);
    ck_assert_int_ge(systest_now_ms() - t0, 250);
    ck_assert(systest_proc_wait(&p, true, "auth failed peer=127.0.0.1:"));
    ck_assert(systest_proc_wait(&p, true, " failures=1 delay_ms=250\n"));
    /* another connection from the same address: twice as long */
    int fd2 = systest_connect(&p.s);
    systest_sends(fd2, "auth s3cre\r\n");
    if (systest_exact_timing())
        systest_expect_silence(fd2, 400);
    systest_expect(fd2, INVALID_PASSWORD);
    ck_assert(systest_proc_wait(&p, true, " failures=2 delay_ms=500\n"));
    /* the right one (the file's first line, its CR LF cut) opens both */
    systest_roundtrip(fd2, "auth s3cret\r\n", "+OK\r\n");
    systest_roundtrip(fd, "auth s3cret\r\n", "+OK\r\n");
    /* a wrong one later leaves the connection open, and is forgiven the
     * address's past failures */
    systest_roundtrip(fd, "auth nope\r\n", INVALID_PASSWORD);
    ck_assert(systest_proc_wait(&p, true, " failures=1 delay_ms=250\n"));
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 0);
    close(fd);
    close(fd2);
    stop(&p, path);
}
END_TEST

/* A client that leaves while its wrong password waits is forgotten; the
 * server goes on serving the others (from the same address, once its
 * delay is over: a password sent during it is refused unchecked). */
START_TEST(test_leave_while_delayed)
{
    struct systest_proc p;
    char path[32];
    start(&p, path, "s3cret\n");
    for (int i = 0; i < 5; i++) {
        int fd = systest_connect(&p.s);
        systest_sends(fd, "auth wrong\r\nauth wrong\r\n");
        close(fd);
    }
    int fd = systest_connect(&p.s);
    const char *got = NULL;
    for (int tries = 0; tries < 5; tries++) {
        systest_sends(fd, "auth s3cret\r\n");
        got = systest_read_line(fd);
        if (strcmp(got, "+OK") == 0)
            break;
        ck_assert_str_eq(got, "-CLIENT-ERROR Invalid password");
    }
    ck_assert_str_eq(got, "+OK");
    systest_roundtrip(fd, "result " ID1 " 0\r\n", "-NOT-FOUND\r\n");
    close(fd);
    stop(&p, path);
}
END_TEST

/* auth's arguments: exactly one token, whatever it looks like. */
START_TEST(test_arguments)
{
    struct systest_proc p;
    char path[32];
    start(&p, path, "-x=y\n");
    int fd = systest_connect(&p.s);
    systest_roundtrip(fd, "auth\r\n", "-CLIENT-ERROR Invalid command args\r\n");
    systest_roundtrip(fd, "auth -x=y extra\r\n", "-CLIENT-ERROR Invalid command args\r\n");
    systest_roundtrip(fd, "auth   -x=y  \r\n", "+OK\r\n");
    close(fd);
    stop(&p, path);
}
END_TEST

/* Without -password-file nothing needs auth, and auth says so. */
START_TEST(test_not_enabled)
{
    struct systest_server s;
    systest_start(&s, NULL);
    int fd = systest_connect(&s);
    systest_roundtrip(fd, "auth s3cret\r\n", "-CLIENT-ERROR Authentication not enabled\r\n");
    systest_roundtrip(fd, "result " ID1 " 0\r\n", "-NOT-FOUND\r\n");
    close(fd);
    systest_stop(&s);
}
END_TEST

/* SIGHUP re-reads the file: new connections need the new password,
 * authenticated ones stay so; a file that cannot be read keeps the one in
 * use, and says so. */
START_TEST(test_sighup_reload)
{
    struct systest_proc p;
    char path[32];
    start(&p, path, "first\n");
    int fd = systest_connect(&p.s);
    systest_roundtrip(fd, "auth first\r\n", "+OK\r\n");
    write_file(path, "second\n");
    kill(p.s.pid, SIGHUP);
    ck_assert(systest_proc_wait(&p, true, "Workq password re-read"));
    int fd2 = systest_connect(&p.s);
    systest_roundtrip(fd2, "auth first\r\n", INVALID_PASSWORD);
    systest_roundtrip(fd2, "auth second\r\n", "+OK\r\n");
    systest_roundtrip(fd, "result " ID1 " 0\r\n", "-NOT-FOUND\r\n");
    write_file(path, "two words\n");
    kill(p.s.pid, SIGHUP);
    ck_assert(systest_proc_wait(&p, true, "keeping the Workq password in use"));
    int fd3 = systest_connect(&p.s);
    systest_roundtrip(fd3, "auth second\r\n", "+OK\r\n");
    close(fd);
    close(fd2);
    close(fd3);
    stop(&p, path);
}
END_TEST

/* Bad password files stop the start with EX_CONFIG and a clear message. */
START_TEST(test_start_errors)
{
    static const struct {
        const char *text, *error;
    } cases[] = {
        {"", "cannot read the Workq password file=%s error=\"it is empty\""},
        {"\nlater\n", "the Workq password file=%s starts with an empty line"},
        {"two words\n", "the Workq password in file=%s is not one word of at most 1024 "
                        "printable characters"},
    };
    char path[] = "/tmp/wq-pw-XXXXXX";
    int pfd = mkstemp(path);
    ck_assert_int_ge(pfd, 0);
    close(pfd);
    const char *args[] = {"-listen", "127.0.0.1:0", "-password-file", path, NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text);
        struct systest_proc p;
        ck_assert_int_eq(systest_proc_run(&p, args), EX_CONFIG_STATUS);
        char want[256];
        snprintf(want, sizeof want, cases[i].error, path);
        ck_assert_msg(strstr(p.err.p, want) != NULL, "%zu: %s", i, p.err.p);
        systest_proc_free(&p);
    }
    unlink(path);
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), EX_CONFIG_STATUS);
    char want[256];
    snprintf(want, sizeof want,
             "cannot read the Workq password file=%s error=\"No such file or directory\"", path);
    ck_assert_msg(strstr(p.err.p, want) != NULL, "%s", p.err.p);
    systest_proc_free(&p);
}
END_TEST

/* The Faktory listener keeps its own password: -password-file does not
 * touch its greeting. */
START_TEST(test_faktory_untouched)
{
    char path[] = "/tmp/wq-pw-XXXXXX";
    int pfd = mkstemp(path);
    ck_assert_int_ge(pfd, 0);
    close(pfd);
    write_file(path, "s3cret\n");
    const char *args[] = {
        "-listen", "127.0.0.1:0", "-faktory-listen", "127.0.0.1:0", "-password-file", path, NULL};
    struct systest_proc p;
    systest_proc_start(&p, args);
    ck_assert(systest_proc_wait(&p, false, "faktory listening on"));
    ck_assert(systest_proc_wait(&p, false, "\n"));
    const char *line = strstr(p.out.p, "faktory listening on 127.0.0.1:");
    ck_assert_ptr_nonnull(line);
    int fk = systest_connect_port(atoi(strchr(line, ':') + 1));
    ck_assert_str_eq(systest_read_line(fk), "+HI {\"v\":2}");
    close(fk);
    stop(&p, path);
}
END_TEST

static Suite *
auth_suite(void)
{
    const struct systest_group groups[] = {
        {"required", {test_required, test_not_enabled, test_arguments, NULL}},
        {"wrong", {test_wrong_password, test_leave_while_delayed, NULL}},
        {"file", {test_sighup_reload, test_start_errors, test_faktory_untouched, NULL}},
    };
    return systest_suite("auth", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(auth_suite());
}
