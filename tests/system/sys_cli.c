/* sys_cli.c - workq-cli: system tests of the real binary against the real
 * server (its parts have unit tests: check_cli_cmd.c, check_cli_reply.c):
 * one-shot mode and its exit codes,
 * --raw, generated ids, script mode over stdin (line numbers), what the cli
 * says when another listener answers (TLS, Faktory, metrics) or a password
 * is wanted, and interactive mode on a pseudo-terminal (Ctrl-C, tab
 * completion).
 *
 * Environment: WQ_CLI is the binary (set by make check); WQ_CLI_WRAPPER
 * puts command words before it, e.g. "valgrind -q --leak-check=full
 * --errors-for-leak-kinds=definite,indirect --error-exitcode=99" (with
 * WQ_TEST_SLOW=5), so that every path below is also a leak check (any
 * valgrind report changes stderr or the exit status, and the test fails).
 * Not "all" kinds: libedit's history and terminal state are still
 * reachable at exit, so the terminal tests would fail on them. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli_cmd.h"
#include "systest.h"

#define ID   "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
#define WAIT 10000 /* ms to wait for the cli's output, scaled */

/* ------------------------------------------------------------------------ */
/* The binary */

struct cli_out {
    int status; /* exit status, or -signal */
    struct sb out, err;
};

static void
cli_out_free(struct cli_out *o)
{
    free(o->out.p);
    free(o->err.p);
    memset(o, 0, sizeof *o);
}

/* argv for the cli: WQ_CLI_WRAPPER's words, WQ_CLI, then args. */
static char **
cli_argv(const char *const *args, char **wrapper)
{
    const char *cli = getenv("WQ_CLI");
    ck_assert_msg(cli != NULL, "WQ_CLI is not set (run through make check)");
    char **argv = calloc(96, sizeof *argv);
    int argc = 0;
    *wrapper = getenv("WQ_CLI_WRAPPER") ? strdup(getenv("WQ_CLI_WRAPPER")) : NULL;
    if (*wrapper != NULL)
        for (char *w = strtok(*wrapper, " "); w != NULL && argc < 32; w = strtok(NULL, " "))
            argv[argc++] = w;
    argv[argc++] = (char *)cli;
    for (size_t i = 0; args[i] != NULL && argc < 95; i++)
        argv[argc++] = (char *)args[i];
    return argv;
}

/* Run the cli with args (NULL terminated) and, unless NULL, env ("NAME=value",
 * else WORKQ_ADDR is unset) and input on its stdin (else /dev/null).
 * Collect stdout, stderr and the exit status. */
static struct cli_out
cli_run_argv(const char *env, const char *input, const char *const *args)
{
    char *wrapper;
    char **argv = cli_argv(args, &wrapper);
    int in[2], out[2], err[2];
    ck_assert_int_eq(pipe(in), 0);
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(err), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (input == NULL) {
            close(in[0]);
            in[0] = open("/dev/null", O_RDONLY);
        }
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        for (int fd = 3; fd < 64; fd++)
            close(fd);
        if (env != NULL)
            putenv((char *)env);
        else
            unsetenv("WORKQ_ADDR");
        execvp(argv[0], argv);
        _exit(127);
    }
    free(argv);
    free(wrapper);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    struct cli_out o = {0};
    sb_add(&o.out, "");
    sb_add(&o.err, "");
    size_t sent = 0, want = input != NULL ? strlen(input) : 0;
    if (want == 0) {
        close(in[1]);
        in[1] = -1;
    } else {
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    }
    while (out[0] >= 0 || err[0] >= 0) {
        struct pollfd p[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
        int pr = poll(p, 3, WAIT * systest_slow());
        ck_assert_msg(pr > 0, "workq-cli gave no output for a long time");
        if (p[2].revents != 0) {
            ssize_t w = write(in[1], input + sent, want - sent);
            if (w > 0)
                sent += (size_t)w;
            if (w < 0 || sent == want) {
                close(in[1]);
                in[1] = -1;
            }
        }
        for (int i = 0; i < 2; i++) {
            if (p[i].revents == 0)
                continue;
            char buf[4096];
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n > 0) {
                sb_addn(i == 0 ? &o.out : &o.err, buf, (size_t)n);
            } else {
                close(p[i].fd);
                *(i == 0 ? &out[0] : &err[0]) = -1;
            }
        }
    }
    if (in[1] >= 0)
        close(in[1]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return o;
}

#define cli_run(env, input, ...) cli_run_argv(env, input, (const char *const[]){__VA_ARGS__, NULL})

/* What the cli says when nothing listens at addr. */
static const char *
refused(const char *addr)
{
    return f("workq-cli: cannot connect to %s: Connection refused\n", addr);
}

/* The address of systest_srv, for -a. */
static const char *
srv_addr(void)
{
    return f("127.0.0.1:%d", systest_srv.port);
}

/* Run one command against systest_srv, expect stdout, empty stderr and
 * the exit status. */
#define expect_run(status_, out_, ...)                                                             \
    do {                                                                                           \
        struct cli_out o_ = cli_run(NULL, NULL, "-a", srv_addr(), __VA_ARGS__);                    \
        ck_assert_str_eq(o_.out.p, out_);                                                          \
        ck_assert_str_eq(o_.err.p, "");                                                            \
        ck_assert_int_eq(o_.status, status_);                                                      \
        cli_out_free(&o_);                                                                         \
    } while (0)

/* Expect a usage error: nothing on stdout, err on stderr, status 64. */
#define expect_usage(err_, ...)                                                                    \
    do {                                                                                           \
        struct cli_out o_ = cli_run(NULL, NULL, __VA_ARGS__);                                      \
        ck_assert_str_eq(o_.out.p, "");                                                            \
        ck_assert_str_eq(o_.err.p, err_);                                                          \
        ck_assert_int_eq(o_.status, 64);                                                           \
        cli_out_free(&o_);                                                                         \
    } while (0)

START_TEST(test_one_shot)
{
    systest_start_srv();
    expect_run(0, "OK\n", "add", ID, "emails", "60000", "600000", "hello world", "-priority=3");
    expect_run(0, "id       " ID "\nname     emails\nttr      60000\npayload  \"hello world\"\n",
               "lease", "emails", "0");
    expect_run(1, "TIMEOUT\n", "lease", "emails", "0");
    expect_run(0, "OK\n", "complete", ID, "sent\n");
    expect_run(0, "id      " ID "\nstatus  completed\nresult  \"sent\\n\"\n", "result", ID, "0");
    expect_run(0, "OK\n", "delete", ID);
    expect_run(1, "NOT-FOUND\n", "delete", ID);
    expect_run(1, "error: Invalid ID\n", "add", "bad", "q", "1", "1", "x");
    expect_run(1, "error: Invalid command flags\n", "add", ID, "q", "1", "1", "x", "-prio=1");
    expect_run(1, "error: Invalid command args\n", "delete", ID, "-prio=1");
    expect_run(0, "(none)\n", "inspect", "queues", "0", "10");
    systest_stop_srv();
}
END_TEST

START_TEST(test_one_shot_inspect)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, ID, "q", 60000, "600000", "first\r\nline", "-priority=7");
    systest_add_full(fd, id4(2), "q", 60000, "600000", "", NULL);
    systest_roundtrip(fd, f("schedule %s q 60000 600000 2030-01-01T00:00:00Z 3\r\nabc\r\n", id4(3)),
                      OK);
    systest_roundtrip(
        fd, f("schedule %s other 60000 600000 2030-01-01T00:00:00Z 0\r\n\r\n", id4(4)), OK);
    expect_run(0,
               "name   ready-len  scheduled-len\n"
               "other  0          1\n"
               "q      2          1\n",
               "inspect", "queues", "0", "10");
    expect_run(0, "name  ready-len  scheduled-len\nq     2          1\n", "inspect", "queue", "q");
    expect_run(
        0,
        "id                                    state  priority  attempts  fails  payload\n" ID
        "  NEW    7         0         0      \"first\\r\\nline\"\n"
        "00000002-58cc-4372-a567-0e02b2c3d479  NEW    0         0         0      \"\"\n",
        "inspect", "jobs", "q", "0", "10");
    expect_run(0,
               "id                                    state  priority  attempts  fails  time      "
               "            payload\n"
               "00000003-58cc-4372-a567-0e02b2c3d479  NEW    0         0         0      "
               "2030-01-01T00:00:00Z  \"abc\"\n",
               "inspect", "scheduled-jobs", "q", "0", "10");
    expect_run(1, "NOT-FOUND\n", "inspect", "jobs", "nothing", "0", "10");

    struct cli_out o = cli_run(NULL, NULL, "-a", srv_addr(), "inspect", "job", ID);
    ck_assert_int_eq(o.status, 0);
    static const char job[] = "id            " ID "\n"
                              "name          q\n"
                              "ttr           60000\n"
                              "ttl           600000\n"
                              "payload-size  11\n"
                              "payload       \"first\\r\\nline\"\n"
                              "max-attempts  0\n"
                              "attempts      0\n"
                              "max-fails     0\n"
                              "fails         0\n"
                              "priority      7\n"
                              "state         NEW\n"
                              "created       ";
    ck_assert_msg(strncmp(o.out.p, job, sizeof job - 1) == 0, "got: %s", o.out.p);
    ck_assert_uint_eq(o.out.n, sizeof job - 1 + 21); /* the time and a LF */
    cli_out_free(&o);

    o = cli_run(NULL, NULL, "-a", srv_addr(), "inspect", "server");
    ck_assert_int_eq(o.status, 0);
    static const char server[] = "active-clients  2\nevicted-jobs    0\nstarted         ";
    ck_assert_msg(strncmp(o.out.p, server, sizeof server - 1) == 0, "got: %s", o.out.p);
    ck_assert_ptr_nonnull(strstr(o.out.p, "\njobs            4\n"));
    ck_assert_ptr_nonnull(strstr(o.out.p, "\nscheduled-jobs  2\n"));
    cli_out_free(&o);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_new_id)
{
    systest_start_srv();
    struct cli_out o =
        cli_run(NULL, NULL, "-a", srv_addr(), "add", "-", "q", "60000", "600000", "hi");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.err.p, "");
    ck_assert_uint_eq(o.out.n, strlen("id \nOK\n") + 36);
    ck_assert(strncmp(o.out.p, "id ", 3) == 0);
    char id[37];
    memcpy(id, o.out.p + 3, 36);
    id[36] = '\0';
    ck_assert_msg(systest_is_uuid4(id), "not a v4 uuid: %s", id);
    ck_assert_str_eq(o.out.p + 39, "\nOK\n");
    cli_out_free(&o);
    /* The server has the job under that id. */
    int fd = systest_conn();
    systest_lease_now(fd, "q", id, "hi");

    /* With --raw, stdout is the reply alone; the id goes to stderr. */
    o = cli_run(NULL, NULL, "-a", srv_addr(), "--raw", "schedule", "-", "q", "60000", "600000",
                "2030-01-01T00:00:00Z", "hi");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.out.p, "+OK\\r\\n\n");
    ck_assert_uint_eq(o.err.n, 40);
    ck_assert(strncmp(o.err.p, "id ", 3) == 0 && o.err.p[39] == '\n');
    cli_out_free(&o);

    /* The id is shown only once the server has the job: after an error,
     * only the error. */
    expect_run(1, "error: Invalid TTR\n", "add", "-", "emails", "abc", "1000", "x");
    expect_run(1, "-CLIENT-ERROR Invalid TTL\\r\\n\n", "-r", "add", "-", "q", "1", "0", "x");
    int before = (int)systest_server_stat(fd, "jobs");
    o = cli_run(NULL, "add - q 1 x y\nrun - q 1 0 z\n", "-a", srv_addr());
    ck_assert_str_eq(o.out.p, "line 1: error: Invalid TTL\nline 2: TIMEOUT\n");
    ck_assert_str_eq(o.err.p, "");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), before);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_raw)
{
    systest_start_srv();
    expect_run(0, "+OK\\r\\n\n", "--raw", "add", ID, "q", "60000", "600000", "a\r\nb\\");
    expect_run(0, "+OK 1\\r\\n\n" ID " q 60000 5\\r\\n\na\\r\\n\nb\\\\\\r\\n\n", "-r", "lease", "q",
               "0");
    expect_run(1, "-TIMEOUT\\r\\n\n", "--raw", "lease", "q", "0");
    expect_run(1, "-CLIENT-ERROR Invalid ID\\r\\n\n", "--raw", "delete", "x");
    systest_stop_srv();
}
END_TEST

START_TEST(test_usage)
{
    /* None of these reaches a server: the port is never used. */
    expect_usage("workq-cli: usage: add <id> <name> <ttr> <ttl> <payload> [-priority=N] "
                 "[-max-attempts=N] [-max-fails=N] [-after=ID,...] [-idempotent=1] "
                 "[-worker=NAME,...] [-target=all] [-backoff=faktory] [-dead=1]\n",
                 "-a", "127.0.0.1:1", "add", "-", "q");
    expect_usage("workq-cli: usage: complete <id> <result> [-attempt=N]\n", "complete", ID);
    expect_usage("workq-cli: unknown command \"frob\" (help lists them)\n", "frob");
    /* The shape of every command is checked here, its values by the server. */
    expect_usage("workq-cli: usage: delete <id>\n", "-a", "127.0.0.1:1", "delete");
    expect_usage("workq-cli: usage: result <id> <wait-timeout>\n", "result", ID, "1", "2");
    expect_usage("workq-cli: unknown inspect subject \"bogus\" (server, queues, queue, job, jobs, "
                 "scheduled-jobs, dead-jobs or workers)\n",
                 "inspect", "bogus");
    expect_usage("workq-cli: usage: inspect jobs <name> <offset> <limit>\n", "inspect", "jobs",
                 "q");
    expect_usage("workq-cli: \"a b\": only a payload may be empty or hold spaces or line breaks\n",
                 "lease", "a b", "0");
    expect_usage("workq-cli: unknown option \"--bogus\" (see workq-cli --help)\n", "--bogus");
    expect_usage("workq-cli: unknown option \"-x\" (see workq-cli --help)\n", "-rx", "help");
    expect_usage("workq-cli: missing value for option \"-a\" (see workq-cli --help)\n", "-a");
    expect_usage("workq-cli: missing value for option \"--timeout\" (see workq-cli --help)\n",
                 "--timeout");
    expect_usage("workq-cli: bad timeout \"1s\" (see workq-cli --help)\n", "-t", "1s", "help");
    expect_usage("workq-cli: bad timeout \"86401\" (see workq-cli --help)\n", "--timeout=86401",
                 "help");
    expect_usage("workq-cli: bad address \"h:99999\" (see workq-cli --help)\n", "-a", "h:99999");
    expect_usage("workq-cli: bad address \"h:\" (see workq-cli --help)\n", "--addr=h:");
    expect_usage("workq-cli: bad address \"[::1\" (see workq-cli --help)\n", "-a", "[::1");
    expect_usage("workq-cli: bad address \"[::1]x\" (see workq-cli --help)\n", "-a", "[::1]x");
    struct cli_out o = cli_run("WORKQ_ADDR=nonsense:port", NULL, "help");
    ck_assert_str_eq(o.err.p, "workq-cli: bad address \"nonsense:port\" (see workq-cli --help)\n");
    ck_assert_int_eq(o.status, 64);
    cli_out_free(&o);
}
END_TEST

START_TEST(test_help_version)
{
    struct cli_out o = cli_run(NULL, NULL, "--version");
    ck_assert_str_eq(o.out.p, "workq-cli " PACKAGE_VERSION "\n");
    ck_assert_int_eq(o.status, 0);
    cli_out_free(&o);
    o = cli_run(NULL, NULL, "-V");
    ck_assert_str_eq(o.out.p, "workq-cli " PACKAGE_VERSION "\n");
    cli_out_free(&o);

    char *help;
    size_t len;
    FILE *out = open_memstream(&help, &len);
    cli_cmd_print_help(out);
    fclose(out);
    o = cli_run(NULL, NULL, "--help");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.err.p, "");
    static const char usage[] = "Usage: workq-cli [OPTIONS] [COMMAND ARGUMENTS...]\n";
    ck_assert(strncmp(o.out.p, usage, sizeof usage - 1) == 0);
    ck_assert_ptr_nonnull(strstr(o.out.p, "  -a, --addr HOST:PORT   "));
    ck_assert_str_eq(o.out.p + o.out.n - len, help); /* the command list ends it */
    cli_out_free(&o);
    /* `help` needs no server. */
    o = cli_run(NULL, NULL, "-a", "127.0.0.1:1", "help");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.out.p, help);
    cli_out_free(&o);
    o = cli_run(NULL, NULL, "quit");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.out.p, "");
    cli_out_free(&o);
    free(help);
}
END_TEST

START_TEST(test_addr)
{
    systest_start_srv();
    /* WORKQ_ADDR, unless -a says otherwise. */
    const char *env = f("WORKQ_ADDR=127.0.0.1:%d", systest_srv.port);
    struct cli_out o = cli_run(env, NULL, "delete", ID);
    ck_assert_str_eq(o.out.p, "NOT-FOUND\n");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    o = cli_run("WORKQ_ADDR=nonsense:port", NULL, "-a", srv_addr(), "delete", ID);
    ck_assert_str_eq(o.out.p, "NOT-FOUND\n");
    cli_out_free(&o);
    o = cli_run(NULL, NULL, "--addr", f("localhost:%d", systest_srv.port), "delete", ID);
    ck_assert_str_eq(o.out.p, "NOT-FOUND\n");
    ck_assert_str_eq(o.err.p, "");
    cli_out_free(&o);
    systest_stop_srv();
    /* Nothing listens there any more. */
    o = cli_run(NULL, NULL, "-a", srv_addr(), "delete", ID);
    ck_assert_str_eq(o.out.p, "");
    ck_assert_str_eq(o.err.p, refused(srv_addr()));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
    o = cli_run(NULL, NULL, "-a", "no-such-host.invalid:9922", "delete", ID);
    ck_assert(strncmp(o.err.p, "workq-cli: cannot resolve no-such-host.invalid: ", 48) == 0);
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
}
END_TEST

/* In a child, serve the connections on lfd by a script: for each command
 * read, write the next reply, or for "" close the connection (the next
 * command must come on a new one).  The child's status is 0 if all went
 * so. */
static pid_t
fake_server(int lfd, const char *const *replies)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid > 0)
        return pid;
    int c = -1;
    for (size_t i = 0; replies[i] != NULL; i++) {
        char buf[4096];
        if (c < 0 && (c = accept(lfd, NULL, NULL)) < 0)
            _exit(1);
        if (read(c, buf, sizeof buf) <= 0)
            _exit(2);
        if (replies[i][0] == '\0') {
            close(c);
            c = -1;
        } else if (write(c, replies[i], strlen(replies[i])) < 0) {
            _exit(3);
        }
    }
    _exit(0);
}

static void
fake_server_done(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(status, 0);
}

START_TEST(test_bad_server)
{
    int port;
    int lfd = systest_listen(&port);
    const char *addr = f("127.0.0.1:%d", port);
    /* A server that never answers: the cli gives up after its timeout. */
    struct cli_out o = cli_run(NULL, NULL, "-t", "1", "-a", addr, "delete", ID);
    ck_assert_str_eq(o.out.p, "");
    ck_assert_str_eq(o.err.p, f("workq-cli: no reply from %s in time\n", addr));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
    close(accept(lfd, NULL, NULL)); /* its connection, waiting in the backlog */

    /* Nonsense, a reply cut short, no reply at all (as from a tls://
     * listener), TLS bytes (an alert record's start). */
    static const char *const replies[][2] = {{"hello\r\n", NULL},
                                             {"+OK 1\r\n" ID " q 1 5\r\nab", NULL},
                                             {"", NULL},
                                             {"\x15\x03\x03", NULL}};
    const char *errors[] = {
        f("workq-cli: malformed reply from %s: reply does not start with + or -\n", addr),
        f("workq-cli: connection closed by %s in the middle of a reply\n", addr),
        f("workq-cli: connection closed by %s\n"
          "workq-cli: hint: if %s is a tls:// listener, add --tls\n",
          addr, addr),
        f("workq-cli: %s answered in TLS: it is a tls:// listener\n"
          "workq-cli: hint: add --tls (and --cacert FILE if the system does not trust its "
          "certificate's CA)\n",
          addr),
    };
    static const int statuses[] = {76, 69, 69, 76};
    for (int i = 0; i < 4; i++) {
        pid_t pid = fake_server(lfd, replies[i]);
        o = cli_run(NULL, NULL, "-a", addr, "lease", "q", "0");
        ck_assert_str_eq(o.out.p, "");
        ck_assert_str_eq(o.err.p, errors[i]);
        ck_assert_int_eq(o.status, statuses[i]);
        cli_out_free(&o);
        fake_server_done(pid);
    }
    close(lfd);
}
END_TEST

START_TEST(test_resend)
{
    int port;
    int lfd = systest_listen(&port);
    const char *addr = f("127.0.0.1:%d", port);
    /* The server closes the connection on the second command without an
     * answer: it is sent again on a new connection, once. */
    pid_t pid = fake_server(lfd, (const char *const[]){"+OK\r\n", "", NF, NULL});
    struct cli_out o = cli_run(NULL, "delete a\ndelete b\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "OK\nline 2: NOT-FOUND\n");
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\n", addr));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    fake_server_done(pid);

    pid = fake_server(lfd, (const char *const[]){"+OK\r\n", "", "", NULL});
    o = cli_run(NULL, "delete a\ndelete b\ndelete c\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "OK\n");
    /* (no hint about TLS: this server has answered before) */
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\nworkq-cli: connection closed by "
                                "%s\nworkq-cli: script stopped at line 2\n",
                                addr, addr));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
    fake_server_done(pid);
    close(lfd);
}
END_TEST

START_TEST(test_long_wait)
{
    /* lease may wait longer than --timeout: its own wait-timeout counts. */
    systest_start_srv();
    struct cli_out o = cli_run(NULL, NULL, "-t", "1", "-a", srv_addr(), "lease", "q", "2500");
    ck_assert_str_eq(o.out.p, "TIMEOUT\n");
    ck_assert_str_eq(o.err.p, "");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    systest_stop_srv();
}
END_TEST

START_TEST(test_script)
{
    systest_start_srv();
    const char *script = f("# a comment, then an empty line\n"
                           "\n"
                           "add %s q 60000 600000 \"first\\nsecond\"\r\n"
                           "lease q 0\n"
                           "complete %s \"ok\"\n"
                           "result %s 0\n"
                           "delete %s\n"
                           "bogus\n"
                           "add - q 1 2\n"
                           "inspect queues 0 10\n"
                           "quit\n"
                           "inspect server\n",
                           ID, ID, ID, id4(9));
    struct cli_out o = cli_run(NULL, script, "-a", srv_addr());
    ck_assert_str_eq(o.out.p, "OK\n"
                              "id       " ID "\n"
                              "name     q\n"
                              "ttr      60000\n"
                              "payload  \"first\\nsecond\"\n"
                              "OK\n"
                              "id      " ID "\n"
                              "status  completed\n"
                              "result  \"ok\"\n"
                              "line 7: NOT-FOUND\n"
                              "(none)\n");
    ck_assert_str_eq(
        o.err.p, "workq-cli: line 8: unknown command \"bogus\" (help lists them)\n"
                 "workq-cli: line 9: usage: add <id> <name> <ttr> <ttl> <payload> "
                 "[-priority=N] [-max-attempts=N] [-max-fails=N] [-after=ID,...] "
                 "[-idempotent=1] [-worker=NAME,...] [-target=all] [-backoff=faktory] [-dead=1]\n");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);

    /* All good: 0, and the end of input ends it without quit.  Raw too. */
    o = cli_run(NULL, f("add %s q 60000 600000 x\ndelete %s", id4(5), id4(5)), "-a", srv_addr(),
                "-r");
    ck_assert_str_eq(o.out.p, "+OK\\r\\n\n+OK\\r\\n\n");
    ck_assert_str_eq(o.err.p, "");
    ck_assert_int_eq(o.status, 0);
    cli_out_free(&o);

    /* help prints the list and goes on. */
    char *help;
    size_t len;
    FILE *out = open_memstream(&help, &len);
    cli_cmd_print_help(out);
    fclose(out);
    o = cli_run(NULL, f("help\ndelete %s\n", id4(9)), "-a", srv_addr());
    ck_assert_str_eq(o.out.p, f("%sline 2: NOT-FOUND\n", help));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    free(help);
    systest_stop_srv();

    /* Without a server the script stops at the first command. */
    o = cli_run(NULL, "help\ndelete x\ndelete y\n", "-a", srv_addr());
    ck_assert(strncmp(o.out.p, "Commands", 8) == 0);
    ck_assert_str_eq(o.err.p, f("%sworkq-cli: script stopped at line 2\n", refused(srv_addr())));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
}
END_TEST

START_TEST(test_reconnect)
{
    /* The server closes the connection after "Line too long": the next
     * command goes over a new one. */
    struct systest_server s;
    systest_start(&s, "-max-line", "100", NULL);
    const char *addr = f("127.0.0.1:%d", s.port);
    const char *script = f("lease %s 0\ndelete %s\ndelete %s\n", systest_name_of(200, 'a'), ID, ID);
    struct cli_out o = cli_run(NULL, script, "-a", addr);
    ck_assert_str_eq(o.out.p,
                     "line 1: error: Line too long\nline 2: NOT-FOUND\nline 3: NOT-FOUND\n");
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\n", addr));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    systest_stop(&s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Other listeners of the server */

/* What the cli says on stderr, and its exit status, for one command. */
#define expect_fail(status_, err_, ...)                                                            \
    do {                                                                                           \
        struct cli_out o_ = cli_run(NULL, NULL, __VA_ARGS__);                                      \
        ck_assert_str_eq(o_.out.p, "");                                                            \
        ck_assert_str_eq(o_.err.p, err_);                                                          \
        ck_assert_int_eq(o_.status, status_);                                                      \
        cli_out_free(&o_);                                                                         \
    } while (0)

/* A server with every kind of listener (a self-signed certificate for the
 * TLS one, made with the openssl command): the cli says what answered
 * when it is not a plain Workq listener, and what to do. */
START_TEST(test_other_listeners)
{
    char dir[64];
    systest_tmpdir_new(dir);
    struct systest_proc p;
    struct systest_ports ports;
    systest_proc_start_every_listener(&p, dir, &ports);
    char plain[32], tls[32], faktory[32], metrics[32];
    strcpy(plain, f("127.0.0.1:%d", ports.plain));
    strcpy(tls, f("127.0.0.1:%d", ports.tls));
    strcpy(faktory, f("127.0.0.1:%d", ports.faktory));
    strcpy(metrics, f("127.0.0.1:%d", ports.metrics));
    char cert[96];
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);

    /* A tls:// listener closes a plain-text connection at once. */
    const char *closed = f("workq-cli: connection closed by %s\n"
                           "workq-cli: hint: if %s is a tls:// listener, add --tls\n",
                           tls, tls);
    expect_fail(69, closed, "-a", tls, "delete", ID);
    struct cli_out o = cli_run("WORKQ_PASSWORD=pw", "delete " ID "\n", "-a", tls);
    ck_assert_str_eq(o.err.p, f("%sworkq-cli: script stopped at line 1\n", closed));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);
    o = cli_run(NULL, NULL, "-a", tls, "--tls", "--cacert", cert, "delete", ID);
    ck_assert_str_eq(o.out.p, "NOT-FOUND\n");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);

    /* --tls to a plain listener: the handshake fails on its first bytes. */
    o = cli_run(NULL, NULL, "-a", plain, "--tls", "--cacert", cert, "delete", ID);
    ck_assert_msg(strncmp(o.err.p, f("workq-cli: TLS handshake with %s failed: ", plain),
                          strlen(f("workq-cli: TLS handshake with %s failed: ", plain))) == 0 &&
                      strstr(o.err.p, "wrong version number\n") != NULL,
                  "got %s", o.err.p);
    ck_assert_ptr_nonnull(
        strstr(o.err.p, f("\nworkq-cli: hint: %s does not speak TLS; without --tls?\n", plain)));
    ck_assert_int_eq(o.status, 69);
    cli_out_free(&o);

    /* Faktory greets first; the metrics endpoint answers in HTTP. */
    const char *fk = f("workq-cli: %s is a Faktory listener (it greeted with +HI), not a Workq "
                       "one\nworkq-cli: hint: give the address of the server's -listen, not of "
                       "its -faktory-listen\n",
                       faktory);
    expect_fail(76, fk, "-a", faktory, "delete", ID);
    expect_fail(76, fk, "-a", faktory, "inspect", "server");
    o = cli_run("WORKQ_PASSWORD=pw", "delete " ID "\n", "-a", faktory);
    ck_assert_str_eq(o.err.p, f("%sworkq-cli: script stopped at line 1\n", fk));
    ck_assert_int_eq(o.status, 76);
    cli_out_free(&o);
    const char *http = f("workq-cli: %s answered in HTTP: it is a metrics listener, not a Workq "
                         "one\nworkq-cli: hint: give the address of the server's -listen, not "
                         "of its -metrics-listen\n",
                         metrics);
    expect_fail(76, http, "-a", metrics, "delete", ID);
    expect_fail(76, http, "-a", metrics, "-r", "inspect", "server");

    systest_proc_stop(&p);
    systest_proc_free(&p);
    ck_assert_int_eq(system(f("rm -rf '%s'", dir)), 0);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Interactive mode on a pseudo-terminal */

struct tty {
    pid_t pid;
    int fd;         /* the master side */
    struct sb seen; /* everything it showed */
    size_t pos;     /* tty_expect searches from here */
};

/* Start the cli on a new terminal with HOME set to home, for the server at
 * addr. */
static void
tty_start(struct tty *t, const char *home, const char *addr)
{
    char *wrapper;
    char **argv = cli_argv((const char *const[]){"-a", addr, NULL}, &wrapper);
    struct winsize ws = {.ws_row = 24, .ws_col = 200};
    memset(&t->seen, 0, sizeof t->seen);
    sb_add(&t->seen, "");
    t->pos = 0;
    t->pid = forkpty(&t->fd, NULL, NULL, &ws);
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        setenv("TERM", "dumb", 1);
        setenv("HOME", home, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    free(argv);
    free(wrapper);
}

/* Read the terminal until text appears after what earlier calls found. */
static void
tty_expect(struct tty *t, const char *text)
{
    const char *at;
    while ((at = strstr(t->seen.p + t->pos, text)) == NULL) {
        struct pollfd p = {t->fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, WAIT * systest_slow()) > 0, "no \"%s\" in: %s", text,
                      t->seen.p + t->pos);
        char buf[4096];
        ssize_t n = read(t->fd, buf, sizeof buf);
        ck_assert_msg(n > 0, "terminal closed; no \"%s\" in: %s", text, t->seen.p + t->pos);
        sb_addn(&t->seen, buf, (size_t)n);
    }
    t->pos = (size_t)(at - t->seen.p) + strlen(text);
}

/* Wait for the prompt, then until the line editor has the terminal (out
 * of canonical mode): what is typed before that is cooked by the kernel,
 * and a ^D would not reach the editor as an end of input. */
static void
tty_prompt(struct tty *t, const char *prompt)
{
    tty_expect(t, prompt);
#if defined(HAVE_LIBEDIT) || defined(HAVE_READLINE)
    struct termios tio;
    for (int waited = 0;; waited += 5) {
        ck_assert_int_eq(tcgetattr(t->fd, &tio), 0); /* the master sees the slave's modes */
        if (!(tio.c_lflag & ICANON))
            break;
        ck_assert_msg(waited < WAIT * systest_slow(), "the editor never took the terminal");
        systest_sleep_ms(5);
    }
#endif
}

static void
tty_type(struct tty *t, const char *text)
{
    ck_assert_int_eq(write(t->fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* Wait for the cli to exit; its status. */
static int
tty_wait(struct tty *t)
{
    char buf[4096];
    /* Drain the terminal, or the cli could block writing to it. */
    while (read(t->fd, buf, sizeof buf) > 0)
        ;
    int status;
    ck_assert_int_eq(waitpid(t->pid, &status, 0), t->pid);
    close(t->fd);
    free(t->seen.p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(test_tty)
{
    systest_start_srv();
    char home[] = "/tmp/sys_cli.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(home));
    struct tty t;
    tty_start(&t, home, srv_addr());
    const char *prompt = f("workq %s> ", srv_addr());
    tty_prompt(&t, prompt);
    tty_type(&t, "add " ID " q 60000 600000 \"hi there\"\r");
    tty_expect(&t, "\nOK\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "lease q 0\r");
    tty_expect(&t, "id       " ID "\r\n"
                   "name     q\r\n"
                   "ttr      60000\r\n"
                   "payload  \"hi there\"\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "frob\r");
    tty_expect(&t, "workq-cli: unknown command \"frob\" (help lists them)\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "quit\r");
    ck_assert_int_eq(tty_wait(&t), 0);

    /* The history file has the commands (libedit encodes spaces). */
    char path[64];
    snprintf(path, sizeof path, "%s/.workq_history", home);
#if defined(HAVE_LIBEDIT) || defined(HAVE_READLINE)
    FILE *h = fopen(path, "r");
    ck_assert_ptr_nonnull(h);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, h);
    text[n] = '\0';
    fclose(h);
    ck_assert_msg(strstr(text, "lease") != NULL && strstr(text, "frob") != NULL, "history: %s",
                  text);
    ck_assert_int_eq(unlink(path), 0);
#endif
    ck_assert_int_eq(rmdir(home), 0);

    /* A HOME that cannot hold the history: not a word about it; and the
     * end of input (^D) leaves like quit. */
    tty_start(&t, "/nonexistent/home", srv_addr());
    tty_prompt(&t, prompt);
    tty_type(&t, f("delete %s\r", id4(9)));
    tty_expect(&t, "NOT-FOUND\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "\x04");
    ck_assert_int_eq(tty_wait(&t), 0);
    systest_stop_srv();
}
END_TEST

/* Wait until the server's `inspect server` says key is value. */
static void
wait_stat(int fd, const char *key, uint64_t value)
{
    for (int waited = 0; systest_server_stat(fd, key) != value; waited += 10) {
        ck_assert_msg(waited < systest_wait_ms(), "%s never became %llu", key, U(value));
        systest_sleep_ms(10);
    }
}

/* Ctrl-C while a command waits ends that command (its connection is
 * closed, so the server cancels it) and the session goes on; Ctrl-C at the
 * prompt ends the session. */
START_TEST(test_tty_interrupt)
{
    systest_start_srv();
    int fd = systest_conn();
    struct tty t;
    tty_start(&t, "/nonexistent/home", srv_addr());
    const char *prompt = f("workq %s> ", srv_addr());
    tty_prompt(&t, prompt);
    tty_type(&t, "lease q 60000\r");
    wait_stat(fd, "parked-clients", 1);
    tty_type(&t, "\x03");
    tty_expect(&t, "workq-cli: interrupted (connection closed: the server cancels the waiting "
                   "command)\r\n");
    tty_prompt(&t, prompt);
    /* The lease is gone: a job added now stays ready. */
    wait_stat(fd, "parked-clients", 0);
    systest_add(fd, ID, "q", "x");
    ck_assert_int_eq(systest_server_stat(fd, "ready-jobs"), 1);
    tty_type(&t, "delete " ID "\r");
    tty_expect(&t, f("workq-cli: reconnected to %s\r\nOK\r\n", srv_addr()));
    tty_prompt(&t, prompt);
    tty_type(&t, "\x03");
    ck_assert_int_eq(tty_wait(&t), 0);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A Ctrl-C typed right behind other keys ends the session at once, wherever
 * it lands in the editor's reading of them (it once waited for the next
 * key).  The race is narrow: twenty tries. */
START_TEST(test_tty_interrupt_typing)
{
    systest_start_srv();
    const char *prompt = f("workq %s> ", srv_addr());
    for (int i = 0; i < 20; i++) {
        struct tty t;
        tty_start(&t, "/nonexistent/home", srv_addr());
        tty_prompt(&t, prompt);
        tty_type(&t, "lease x");
        tty_type(&t, "\x03");
        ck_assert_int_eq(tty_wait(&t), 0);
    }
    systest_stop_srv();
}
END_TEST

/* Tab completes commands, subjects and flags, and queue names from the
 * server, which it asks on a connection of its own, never waiting long. */
START_TEST(test_tty_complete)
{
#if defined(HAVE_LIBEDIT) || defined(HAVE_READLINE)
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, ID, "emails", "x");
    systest_add(fd, id4(2), "reports", "y");
    struct tty t;
    tty_start(&t, "/nonexistent/home", srv_addr());
    const char *prompt = f("workq %s> ", srv_addr());
    tty_prompt(&t, prompt);
    tty_type(&t, "ins\tqueue em\t\r");
    tty_expect(&t, "inspect queue emails \r\n");
    tty_expect(&t, "name    ready-len  scheduled-len\r\nemails  1          0\r\n");
    tty_prompt(&t, prompt);
    /* A flag that wants a value goes on without a space. */
    tty_type(&t, "add - q 1000 60000 x -pri\t5\r");
    tty_expect(&t, "add - q 1000 60000 x -priority=5\r\n");
    tty_expect(&t, "\r\nOK\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "lease r\t0\r");
    tty_expect(&t, "lease reports 0\r\n");
    tty_expect(&t, "payload  \"y\"\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "quit\r");
    ck_assert_int_eq(tty_wait(&t), 0);
    close(fd);
    systest_stop_srv();

    /* A server that never answers: the editor has nothing to offer, and
     * echoes the next key within about CLI_COMPLETE_MS (500 ms), not the
     * 10 s of -t. */
    int port;
    int lfd = systest_listen(&port);
    const char *addr = f("127.0.0.1:%d", port);
    tty_start(&t, "/nonexistent/home", addr);
    tty_prompt(&t, f("workq %s> ", addr));
    tty_type(&t, "lease e");
    tty_expect(&t, "lease e");
    int64_t t0 = systest_now_ms();
    tty_type(&t, "\tx");
    tty_expect(&t, "x");
    int64_t took = systest_now_ms() - t0;
    ck_assert_msg(took < 3000 * systest_slow(), "completion took %lld ms", (long long)took);
    tty_type(&t, "\x03");
    ck_assert_int_eq(tty_wait(&t), 0);
    close(lfd);
#endif
}
END_TEST

/* Against a server with -password-file: the password from --password-file
 * or WORKQ_PASSWORD goes first on every connection (a script runs on);
 * without it the server's refusal is shown; a wrong one exits 77. */
START_TEST(test_password)
{
    char pw[] = "/tmp/sys_cli_pw.XXXXXX";
    int pfd = mkstemp(pw);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(write(pfd, "s3cret\n", 7), 7);
    close(pfd);
    const char *args[] = {"-listen", "127.0.0.1:0", "-password-file", pw, NULL};
    struct systest_proc p;
    systest_proc_start(&p, args);
    const char *addr = f("127.0.0.1:%d", p.s.port);
    struct cli_out o = cli_run(NULL, NULL, "-a", addr, "--password-file", pw, "delete", ID);
    ck_assert_str_eq(o.out.p, "NOT-FOUND\n");
    ck_assert_str_eq(o.err.p, "");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    o = cli_run("WORKQ_PASSWORD=s3cret", "delete " ID "\ndelete " ID "\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "line 1: NOT-FOUND\nline 2: NOT-FOUND\n");
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    /* Without the password: the server's refusal, and a hint (once). */
    const char *hint = f("workq-cli: hint: %s wants a password: give --password-file FILE, or "
                         "set WORKQ_PASSWORD\n",
                         addr);
    o = cli_run(NULL, NULL, "-a", addr, "delete", ID);
    ck_assert_str_eq(o.out.p, "error: Authentication required\n");
    ck_assert_str_eq(o.err.p, hint);
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    o = cli_run(NULL, "delete " ID "\ndelete " ID "\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "line 1: error: Authentication required\n"
                              "line 2: error: Authentication required\n");
    ck_assert_str_eq(o.err.p, hint);
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    o = cli_run(NULL, "auth s3cret\ndelete " ID "\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "OK\nline 2: NOT-FOUND\n");
    ck_assert_str_eq(o.err.p, "");
    cli_out_free(&o);
    o = cli_run("WORKQ_PASSWORD=s3cre", NULL, "-a", addr, "delete", ID);
    ck_assert_str_eq(o.out.p, "");
    ck_assert_str_eq(o.err.p, f("workq-cli: %s refused the password: -CLIENT-ERROR Invalid "
                                "password\n",
                                addr));
    ck_assert_int_eq(o.status, 77);
    cli_out_free(&o);
    unlink(pw);
    o = cli_run(NULL, NULL, "-a", addr, "--password-file", pw, "delete", ID);
    ck_assert_str_eq(o.err.p, f("workq-cli: %s: No such file or directory\n", pw));
    ck_assert_int_eq(o.status, 66);
    cli_out_free(&o);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

static Suite *
cli_suite(void)
{
    const struct systest_group groups[] = {
        {"one_shot",
         {test_one_shot, test_one_shot_inspect, test_new_id, test_raw, test_usage,
          test_help_version, test_addr, test_bad_server, test_long_wait, test_password, NULL}},
        {"script", {test_script, test_reconnect, test_resend, NULL}},
        {"listeners", {test_other_listeners, NULL}},
        {"tty", {test_tty, test_tty_interrupt, test_tty_interrupt_typing, test_tty_complete, NULL}},
    };
    return systest_suite("cli", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(cli_suite());
}
