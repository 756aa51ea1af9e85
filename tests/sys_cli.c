/* sys_cli.c - workq-cli: unit tests of cli_cmd (typed line -> protocol
 * bytes) and cli_reply (framing and printing), then system tests of the
 * real binary against the real server: one-shot mode and its exit codes,
 * --raw, generated ids, script mode over stdin, and interactive mode on a
 * pseudo-terminal.
 *
 * Environment: WQ_CLI is the binary (set by make check); WQ_CLI_WRAPPER
 * puts command words before it, e.g. "valgrind -q --leak-check=full
 * --errors-for-leak-kinds=all --error-exitcode=99", so that every path
 * below is also a leak check (any valgrind report changes stderr or the
 * exit status, and the test fails). */
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

#include "cli_cmd.h"
#include "cli_reply.h"
#include "systest.h"

#define ID   "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
#define WAIT 10000 /* ms to wait for the cli's output, scaled */

/* ------------------------------------------------------------------------ */
/* cli_cmd */

/* Parse line and expect it to become exactly wire[0..len). */
static struct cli_cmd
expect_wire_n(const char *line, const char *wire, size_t len)
{
    struct cli_cmd cmd;
    ck_assert_msg(cli_cmd_parse_line(&cmd, line, strlen(line)) == 0, "%s: %s", line, cmd.error);
    ck_assert_int_eq(cmd.kind, CLI_CMD_SEND);
    ck_assert_msg(cmd.wire_len == len && memcmp(cmd.wire, wire, len) == 0,
                  "%s:\n expected \"%s\"\n      got \"%s\"", line, wire, cmd.wire);
    cli_cmd_clear(&cmd);
    return cmd;
}

static struct cli_cmd
expect_wire(const char *line, const char *wire)
{
    return expect_wire_n(line, wire, strlen(wire));
}

/* Parse line and expect it to be refused with error. */
static void
expect_refused(const char *line, const char *error)
{
    struct cli_cmd cmd;
    ck_assert_msg(cli_cmd_parse_line(&cmd, line, strlen(line)) == -1, "%s: accepted", line);
    ck_assert_str_eq(cmd.error, error);
    ck_assert_ptr_null(cmd.wire);
    ck_assert_str_eq(cmd.id, "");
}

static enum cli_cmd_kind
kind_of(const char *line)
{
    struct cli_cmd cmd;
    ck_assert_int_eq(cli_cmd_parse_line(&cmd, line, strlen(line)), 0);
    ck_assert_ptr_null(cmd.wire);
    return cmd.kind;
}

/* A lowercase version-4 UUID. */
static bool
is_uuid4(const char *s)
{
    if (strlen(s) != 36 || s[14] != '4' || strchr("89ab", s[19]) == NULL)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : strchr("0123456789abcdef", s[i]) == NULL)
            return false;
    }
    return true;
}

START_TEST(test_cmd_payload)
{
    struct cli_cmd c =
        expect_wire("add " ID " q 1000 60000 hello", "add " ID " q 1000 60000 5\r\nhello\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_STATUS);
    ck_assert_uint_eq(c.wait_ms, 0);
    /* Runs of spaces and tabs separate tokens; the payload keeps its place
     * among the flags. */
    expect_wire("  add\t" ID "  q 1 2 -priority=5 \"x\" -max-fails=2 ",
                "add " ID " q 1 2 -priority=5 1 -max-fails=2\r\nx\r\n");
    expect_wire("schedule " ID " q 1 2 2030-01-01T00:00:00Z \"hello world\"",
                "schedule " ID " q 1 2 2030-01-01T00:00:00Z 11\r\nhello world\r\n");
    expect_wire("complete " ID " \"\"", "complete " ID " 0\r\n\r\n");
    expect_wire("fail " ID " oops", "fail " ID " 4\r\noops\r\n");
    /* Quoted, "-a=b" is a payload; bare, it is a flag. */
    expect_wire("complete " ID " \"-a=b\"", "complete " ID " 4\r\n-a=b\r\n");
    /* In a bare word, quotes and backslashes are ordinary bytes. */
    expect_wire("complete " ID " a\\n\"b", "complete " ID " 5\r\na\\n\"b\r\n");
    c = expect_wire("run " ID " q 5000 2000 p -priority=-1",
                    "run " ID " q 5000 2000 1 -priority=-1\r\np\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_RESULT);
    ck_assert_uint_eq(c.wait_ms, 7000); /* the wait, then the TTR of the lease */
}
END_TEST

START_TEST(test_cmd_escapes)
{
    static const char wire[] = "complete " ID " 11\r\na b\r\n\t\\\"\x00\xff"
                               "Z\r\n";
    expect_wire_n("complete " ID " \"a b\\r\\n\\t\\\\\\\"\\x00\\xFfZ\"", wire, sizeof wire - 1);
}
END_TEST

START_TEST(test_cmd_other)
{
    struct cli_cmd c = expect_wire("lease a b c 1500", "lease a b c 1500\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_LEASE);
    ck_assert_uint_eq(c.wait_ms, 1500);
    c = expect_wire("result " ID " 250", "result " ID " 250\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_RESULT);
    ck_assert_uint_eq(c.wait_ms, 250);
    /* A wait the server will refuse does not make the cli wait. */
    c = expect_wire("lease q soon", "lease q soon\r\n");
    ck_assert_uint_eq(c.wait_ms, 0);
    c = expect_wire("delete " ID, "delete " ID "\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_STATUS);
    /* The server judges the arity of commands without a payload. */
    expect_wire("delete", "delete\r\n");
    expect_wire("lease \"q\" 0", "lease q 0\r\n");

    static const struct {
        const char *line;
        enum cli_view view;
    } inspect[] = {
        {"inspect server", CLI_VIEW_SERVER},      {"inspect job " ID, CLI_VIEW_JOB},
        {"inspect queues 0 10", CLI_VIEW_QUEUES}, {"inspect queue q", CLI_VIEW_QUEUES},
        {"inspect jobs q 0 10", CLI_VIEW_JOBS},   {"inspect scheduled-jobs q 0 1", CLI_VIEW_JOBS},
        {"inspect nothing", CLI_VIEW_SERVER},
    };
    for (size_t i = 0; i < sizeof inspect / sizeof inspect[0]; i++) {
        c = expect_wire(inspect[i].line, f("%s\r\n", inspect[i].line));
        ck_assert_int_eq(c.view, inspect[i].view);
    }
}
END_TEST

START_TEST(test_cmd_new_id)
{
    static const char *const lines[] = {
        "add - q 1 2 x",
        "schedule - q 1 2 2030-01-01T00:00:00Z x",
        "run - q 1 2 x",
    };
    char first[37] = "";
    for (size_t i = 0; i < 3; i++) {
        struct cli_cmd cmd;
        ck_assert_int_eq(cli_cmd_parse_line(&cmd, lines[i], strlen(lines[i])), 0);
        ck_assert_msg(is_uuid4(cmd.id), "not a v4 uuid: %s", cmd.id);
        ck_assert_str_ne(cmd.id, first);
        strcpy(first, cmd.id);
        const char *sp = strchr(lines[i], ' ');
        ck_assert_str_eq(cmd.wire, f("%.*s %s%.*s 1\r\nx\r\n", (int)(sp - lines[i]), lines[i],
                                     cmd.id, (int)strlen(sp + 2) - 2, sp + 2));
        cli_cmd_clear(&cmd);
    }
    /* Only a bare "-" in the id's place asks for an id. */
    struct cli_cmd c = expect_wire("add \"-\" q 1 2 x", "add - q 1 2 1\r\nx\r\n");
    ck_assert_str_eq(c.id, "");
    c = expect_wire("add " ID " - 1 2 x", "add " ID " - 1 2 1\r\nx\r\n");
    ck_assert_str_eq(c.id, "");
    c = expect_wire("add " ID " q 1 2 -", "add " ID " q 1 2 1\r\n-\r\n");
    ck_assert_str_eq(c.id, "");
    c = expect_wire("delete -", "delete -\r\n");
    ck_assert_str_eq(c.id, "");
    /* A refused command forgets the id it made. */
    expect_refused("add - q \"a b\" 2 x",
                   "\"a b\": only a payload may be empty or hold spaces or line breaks");
}
END_TEST

START_TEST(test_cmd_local)
{
    ck_assert_int_eq(kind_of(""), CLI_CMD_EMPTY);
    ck_assert_int_eq(kind_of(" \t "), CLI_CMD_EMPTY);
    ck_assert_int_eq(kind_of("# add - q 1 2 x"), CLI_CMD_EMPTY);
    ck_assert_int_eq(kind_of("help"), CLI_CMD_HELP);
    ck_assert_int_eq(kind_of("quit"), CLI_CMD_QUIT);
    ck_assert_int_eq(kind_of("exit"), CLI_CMD_QUIT);

    char *text;
    size_t len;
    FILE *out = open_memstream(&text, &len);
    cli_cmd_print_help(out);
    fclose(out);
    static const char *const lines[] = {
        "\n  add <id> <name> <ttr> <ttl> <payload> [-priority=N] [-max-attempts=N] "
        "[-max-fails=N]\n",
        "\n  schedule <id> <name> <ttr> <ttl> <time> <payload> [-priority=N] "
        "[-max-attempts=N] [-max-fails=N]\n",
        "\n  run <id> <name> <ttr> <wait-timeout> <payload> [-priority=N]\n",
        "\n  result <id> <wait-timeout>\n",
        "\n  lease <name>... <wait-timeout>\n",
        "\n  complete <id> <result>\n",
        "\n  fail <id> <result>\n",
        "\n  delete <id>\n",
        "\n  inspect server\n",
        "\n  inspect scheduled-jobs <name> <offset> <limit>\n",
        "\n  help\n",
        "\n  quit, exit\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text, lines[i]) != NULL, "help lacks %s", lines[i]);
    free(text);
}
END_TEST

START_TEST(test_cmd_words)
{
    /* One-shot mode: each word is one token, taken as it is. */
    char *add[] = {"add", ID, "q", "1", "2", "hello world\r\n"};
    struct cli_cmd cmd;
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, add, 6), 0);
    ck_assert_str_eq(cmd.wire, "add " ID " q 1 2 13\r\nhello world\r\n\r\n");
    cli_cmd_clear(&cmd);
    char *escapes[] = {"complete", ID, "\"a\\n\""};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, escapes, 3), 0);
    ck_assert_str_eq(cmd.wire, "complete " ID " 5\r\n\"a\\n\"\r\n");
    cli_cmd_clear(&cmd);
    char *id[] = {"add", "-", "q", "1", "2", ""};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, id, 6), 0);
    ck_assert(is_uuid4(cmd.id));
    ck_assert_str_eq(cmd.wire, f("add %s q 1 2 0\r\n\r\n", cmd.id));
    cli_cmd_clear(&cmd);
    char *spaced[] = {"lease", "a b", "0"};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, spaced, 3), -1);
    ck_assert_str_eq(cmd.error,
                     "\"a b\": only a payload may be empty or hold spaces or line breaks");
    char *empty[] = {"inspect", ""};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, empty, 2), -1);
    ck_assert_str_eq(cmd.error, "\"\": only a payload may be empty or hold spaces or line breaks");
}
END_TEST

START_TEST(test_cmd_errors)
{
    static const char *const cases[][2] = {
        {"add " ID " q 1 2",
         "usage: add <id> <name> <ttr> <ttl> <payload> [-priority=N] [-max-attempts=N] "
         "[-max-fails=N]"},
        {"add " ID " q 1 2 -a=b", "usage: add <id> <name> <ttr> <ttl> <payload> [-priority=N] "
                                  "[-max-attempts=N] [-max-fails=N]"},
        {"schedule " ID " q 1 2 x", "usage: schedule <id> <name> <ttr> <ttl> <time> <payload> "
                                    "[-priority=N] [-max-attempts=N] [-max-fails=N]"},
        {"run " ID " q 1 2 x y", "usage: run <id> <name> <ttr> <wait-timeout> <payload> "
                                 "[-priority=N]"},
        {"complete " ID " a b", "usage: complete <id> <result>"},
        {"fail " ID, "usage: fail <id> <result>"},
        {"frobnicate x", "unknown command \"frobnicate\" (help lists them)"},
        {"ADD - q 1 2 x", "unknown command \"ADD\" (help lists them)"},
        {"\"add\" - q 1 2 x", "unknown command \"add\" (help lists them)"},
        {"complete " ID " \"abc", "unterminated quoted string"},
        {"complete " ID " \"abc\\", "unterminated quoted string"},
        {"complete " ID " \"a\\qb\"", "unknown escape \\q in a quoted string"},
        {"complete " ID " \"\\x4\"", "\\x needs two hex digits"},
        {"complete " ID " \"\\x4", "\\x needs two hex digits"},
        {"complete " ID " \"ab\"c", "text after a closing quote"},
        {"lease \"a b\" 0", "\"a b\": only a payload may be empty or hold spaces or line breaks"},
        {"lease \"a\\r\\n\" 0",
         "\"a\r\n\": only a payload may be empty or hold spaces or line breaks"},
        {"delete \"\"", "\"\": only a payload may be empty or hold spaces or line breaks"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused(cases[i][0], cases[i][1]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* cli_reply */

/* Feed text as one piece, or byte by byte, and expect it to be one whole
 * reply of view: MORE before the last byte, DONE at it. */
static void
expect_frame(struct cli_reply *r, enum cli_view view, const char *text, bool bytewise)
{
    size_t len = strlen(text);
    cli_reply_start(r, view);
    if (bytewise) {
        for (size_t i = 0; i + 1 < len; i++)
            ck_assert_msg(cli_reply_feed(r, text + i, 1) == CLI_REPLY_MORE,
                          "%s: complete after %zu bytes", text, i + 1);
        ck_assert_int_eq(cli_reply_feed(r, text + len - 1, 1), CLI_REPLY_DONE);
    } else {
        ck_assert_msg(cli_reply_feed(r, text, len) == CLI_REPLY_DONE, "%s: %s", text, r->error);
    }
    ck_assert_uint_eq(r->end, len);
}

/* The pretty (or raw) text of a complete reply. */
static const char *
printed(const char *reply, enum cli_view view, bool raw)
{
    struct cli_reply r;
    cli_reply_init(&r);
    expect_frame(&r, view, reply, false);
    char *text;
    size_t len;
    FILE *out = open_memstream(&text, &len);
    if (raw)
        cli_reply_print_raw(&r, out);
    else
        cli_reply_print(&r, out);
    fclose(out);
    const char *copy = f("%s", text);
    free(text);
    cli_reply_clear(&r);
    return copy;
}

#define JOB_BLOCK(id, payload_size, payload, state, extra)                                         \
    id " " extra "\r\nname q\r\nttr 1000\r\nttl 60000\r\npayload-size " payload_size               \
       "\r\npayload " payload "\r\nmax-attempts 3\r\nattempts 1\r\nmax-fails 0\r\nfails "          \
       "0\r\npriority -5\r\nstate " state "\r\ncreated 2026-11-22T06:50:00Z\r\n"

static const struct {
    enum cli_view view;
    const char *reply;
} frames[] = {
    {CLI_VIEW_STATUS, "+OK\r\n"},
    {CLI_VIEW_STATUS, "-CLIENT-ERROR Invalid ID\r\n"},
    {CLI_VIEW_LEASE, "-TIMEOUT\r\n"},
    {CLI_VIEW_LEASE, "+OK 1\r\n" ID " q 1000 4\r\na\r\nb\r\n"},
    {CLI_VIEW_LEASE, "+OK 2\n" ID " q 1000 0\n\n" ID " q 1000 1\nx\n"},
    {CLI_VIEW_RESULT, "+OK 1\r\n" ID " 0 0\r\n\r\n"},
    {CLI_VIEW_SERVER, "+OK 1\r\nserver 2\r\nactive-clients 1\r\nversion 0.1.0\r\n"},
    {CLI_VIEW_QUEUES, "+OK 2\r\na 2\r\nready-len 1\r\nscheduled-len 0\r\nb 0\r\n"},
    {CLI_VIEW_JOBS, "+OK 0\r\n"},
    /* The payload holds a line end and text that looks like keys. */
    {CLI_VIEW_JOB, "+OK 1\r\n" JOB_BLOCK(ID, "17", "x\r\nttr 5\r\nfails 9", "4", "12")},
    {CLI_VIEW_JOBS, "+OK 2\r\n" JOB_BLOCK(ID, "0", "", "0", "12")
                        JOB_BLOCK(ID, "2", "\r\n", "3", "13") "time 2030-01-01T00:00:00Z\r\n"},
};

START_TEST(test_reply_frames)
{
    struct cli_reply r;
    cli_reply_init(&r);
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
        expect_frame(&r, frames[i].view, frames[i].reply, false);
        expect_frame(&r, frames[i].view, frames[i].reply, true);
    }
    /* What follows a reply stays for the next one. */
    cli_reply_start(&r, CLI_VIEW_STATUS);
    ck_assert_int_eq(cli_reply_feed(&r, "+OK\r\n-NOT-FOUND\r\n+OK", 20), CLI_REPLY_DONE);
    ck_assert_uint_eq(r.end, 5);
    cli_reply_start(&r, CLI_VIEW_STATUS);
    ck_assert_int_eq(cli_reply_feed(&r, NULL, 0), CLI_REPLY_DONE);
    ck_assert_uint_eq(r.end, 12);
    ck_assert(cli_reply_is_error(&r));
    cli_reply_start(&r, CLI_VIEW_STATUS);
    ck_assert_int_eq(cli_reply_feed(&r, NULL, 0), CLI_REPLY_MORE);
    ck_assert_int_eq(cli_reply_feed(&r, "\r\n", 2), CLI_REPLY_DONE);
    ck_assert(!cli_reply_is_error(&r));
    cli_reply_clear(&r);
}
END_TEST

START_TEST(test_reply_malformed)
{
    static const struct {
        enum cli_view view;
        const char *reply, *error;
    } cases[] = {
        {CLI_VIEW_STATUS, "hello\r\n", "reply does not start with + or -"},
        {CLI_VIEW_STATUS, "\r\n", "reply does not start with + or -"},
        {CLI_VIEW_LEASE, "+OK\r\n", "expected +OK <count>"},
        {CLI_VIEW_SERVER, "+OK x\r\n", "expected +OK <count>"},
        {CLI_VIEW_LEASE, "+OK 1\r\n" ID " q 5\r\n", "unexpected job line"},
        {CLI_VIEW_RESULT, "+OK 1\r\n" ID " 1 x\r\n", "unexpected job line"},
        {CLI_VIEW_LEASE, "+OK 1\r\n" ID " q 5 2\r\nabc\r\n",
         "data block not followed by a line end"},
        {CLI_VIEW_RESULT, "+OK 1\r\n" ID " 1 2\r\nab\rx", "data block not followed by a line end"},
        {CLI_VIEW_SERVER, "+OK 1\r\nserver x\r\n", "expected <name> <count>"},
        {CLI_VIEW_SERVER, "+OK 1\r\n 2\r\n", "expected <name> <count>"},
        {CLI_VIEW_JOB, "+OK 1\r\n" ID " 2\r\npayload-size -1\r\n", "bad payload-size"},
    };
    struct cli_reply r;
    cli_reply_init(&r);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_reply_clear(&r);
        cli_reply_start(&r, cases[i].view);
        ck_assert_msg(cli_reply_feed(&r, cases[i].reply, strlen(cases[i].reply)) ==
                          CLI_REPLY_MALFORMED,
                      "accepted: %s", cases[i].reply);
        ck_assert_str_eq(r.error, cases[i].error);
        ck_assert_int_eq(cli_reply_feed(&r, "\r\n", 2), CLI_REPLY_MALFORMED);
    }
    /* A line that never ends. */
    cli_reply_clear(&r);
    cli_reply_start(&r, CLI_VIEW_STATUS);
    char *junk = malloc(70000);
    memset(junk, '+', 70000);
    ck_assert_int_eq(cli_reply_feed(&r, junk, 65536), CLI_REPLY_MORE);
    ck_assert_int_eq(cli_reply_feed(&r, junk, 1), CLI_REPLY_MALFORMED);
    ck_assert_str_eq(r.error, "line too long");
    free(junk);
    cli_reply_clear(&r);
}
END_TEST

START_TEST(test_reply_print_status)
{
    ck_assert_str_eq(printed("+OK\r\n", CLI_VIEW_STATUS, false), "OK\n");
    ck_assert_str_eq(printed("-CLIENT-ERROR Invalid ID\r\n", CLI_VIEW_STATUS, false),
                     "error: Invalid ID\n");
    ck_assert_str_eq(printed("-SERVER-ERROR Out of memory\r\n", CLI_VIEW_LEASE, false),
                     "server error: Out of memory\n");
    ck_assert_str_eq(printed("-NOT-FOUND\r\n", CLI_VIEW_RESULT, false), "NOT-FOUND\n");
    ck_assert_str_eq(printed("-TIMEOUT\r\n", CLI_VIEW_JOBS, false), "TIMEOUT\n");
    ck_assert_str_eq(printed("-\r\n", CLI_VIEW_JOBS, false), "\n");
    ck_assert_str_eq(printed("-CLIENT-ERROR \x1b[2J\r\n", CLI_VIEW_STATUS, false),
                     "error: \\x1b[2J\n");
    ck_assert_str_eq(printed("+OK 0\r\n", CLI_VIEW_LEASE, false), "(none)\n");
    ck_assert_str_eq(printed("+OK 0\r\n", CLI_VIEW_QUEUES, false), "(none)\n");
}
END_TEST

START_TEST(test_reply_print_jobs)
{
    ck_assert_str_eq(
        printed("+OK 1\r\n" ID " emails 30000 7\r\nhi\r\n\"\\\t\r\n", CLI_VIEW_LEASE, false),
        "id       " ID "\n"
        "name     emails\n"
        "ttr      30000\n"
        "payload  \"hi\\r\\n\\\"\\\\\\t\"\n");
    ck_assert_str_eq(printed("+OK 1\r\n" ID " 1 4\r\nsent\r\n", CLI_VIEW_RESULT, false),
                     "id      " ID "\n"
                     "status  completed\n"
                     "result  \"sent\"\n");
    ck_assert_str_eq(printed("+OK 1\r\n" ID " 0 0\r\n\r\n", CLI_VIEW_RESULT, false),
                     "id      " ID "\n"
                     "status  failed\n"
                     "result  \"\"\n");
    ck_assert_str_eq(
        printed("+OK 2\r\n" ID " a 1 1\r\nx\r\n" ID " b 2 0\r\n\r\n", CLI_VIEW_LEASE, false),
        "id       " ID "\nname     a\nttr      1\npayload  \"x\"\n\n"
        "id       " ID "\nname     b\nttr      2\npayload  \"\"\n");
}
END_TEST

START_TEST(test_reply_print_inspect)
{
    ck_assert_str_eq(printed("+OK 1\r\nserver 3\r\nactive-clients 1\r\nstarted "
                             "2026-11-22T06:50:00Z\r\nempty \r\n",
                             CLI_VIEW_SERVER, false),
                     "active-clients  1\n"
                     "started         2026-11-22T06:50:00Z\n"
                     "empty\n");
    ck_assert_str_eq(printed("+OK 3\r\nemails 2\r\nready-len 12\r\nscheduled-len 0\r\n"
                             "q 3\r\nready-len 0\r\nscheduled-len 3\r\nleased-len 1\r\n"
                             "reports-long-name 0\r\n",
                             CLI_VIEW_QUEUES, false),
                     "name               ready-len  scheduled-len  leased-len\n"
                     "emails             12         0              -\n"
                     "q                  0          3              1\n"
                     "reports-long-name  -          -              -\n");
    ck_assert_str_eq(printed("+OK 1\r\n" JOB_BLOCK(ID, "17", "x\r\nttr 5\r\nfails 9", "4",
                                                   "13") "time 2030-01-01T00:00:00Z\r\n",
                             CLI_VIEW_JOB, false),
                     "id            " ID "\n"
                     "name          q\n"
                     "ttr           1000\n"
                     "ttl           60000\n"
                     "payload-size  17\n"
                     "payload       \"x\\r\\nttr 5\\r\\nfails 9\"\n"
                     "max-attempts  3\n"
                     "attempts      1\n"
                     "max-fails     0\n"
                     "fails         0\n"
                     "priority      -5\n"
                     "state         LEASED\n"
                     "created       2026-11-22T06:50:00Z\n"
                     "time          2030-01-01T00:00:00Z\n");
    /* A row per job; long payloads cut, never inside an escape. */
    ck_assert_str_eq(
        printed("+OK 3\r\n" JOB_BLOCK(ID, "2", "ok", "0", "12") JOB_BLOCK(
                    "6ba7b810-9dad-11d1-80b4-00c04fd430c9", "30",
                    "0123456789012345678901234\r\n\r\n\r", "7",
                    "13") "time 2030-01-01T00:00:00Z\r\n" JOB_BLOCK("6ba7b810-9dad-11d1-80b4-"
                                                                    "00c04fd430ca",
                                                                    "40",
                                                                    "012345678901234567890123456789"
                                                                    "0123456789",
                                                                    "2", "12"),
                CLI_VIEW_JOBS, false),
        "id                                    state   priority  attempts  fails  time        "
        "          payload\n" ID
        "  NEW     -5        1         0      -                     \"ok\"\n"
        "6ba7b810-9dad-11d1-80b4-00c04fd430c9  7       -5        1         0      "
        "2030-01-01T00:00:00Z  \"0123456789012345678901234\\r\"...\n"
        "6ba7b810-9dad-11d1-80b4-00c04fd430ca  FAILED  -5        1         0      -           "
        "          \"012345678901234567890123456\"...\n");
    /* Exactly as long as a cell may be: shown whole. */
    ck_assert_str_eq(
        printed("+OK 1\r\n" JOB_BLOCK(ID, "30", "012345678901234567890123456789", "1", "12"),
                CLI_VIEW_JOBS, false),
        "id                                    state      priority  attempts  fails  "
        "payload\n" ID "  COMPLETED  -5        1         0      "
        "\"012345678901234567890123456789\"\n");
}
END_TEST

START_TEST(test_reply_print_raw)
{
    ck_assert_str_eq(printed("+OK 1\r\n" ID " q 1000 6\r\na\r\nb\\\x01\r\n", CLI_VIEW_LEASE, true),
                     "+OK 1\\r\\n\n" ID " q 1000 6\\r\\n\na\\r\\n\nb\\\\\\x01\\r\\n\n");
    ck_assert_str_eq(printed("-NOT-FOUND\n", CLI_VIEW_STATUS, true), "-NOT-FOUND\\n\n");
    ck_assert_str_eq(printed("+OK 1\r\n" ID " 1 2\r\n\t\xc3\r\n", CLI_VIEW_RESULT, true),
                     "+OK 1\\r\\n\n" ID " 1 2\\r\\n\n\\t\\xc3\\r\\n\n");
}
END_TEST

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
    expect_run(1, "error: Unknown command\n", "inspect", "bogus");
    expect_run(1, "error: Invalid command args\n", "delete");
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
    ck_assert_msg(is_uuid4(id), "not a v4 uuid: %s", id);
    ck_assert_str_eq(o.out.p + 39, "\nOK\n");
    cli_out_free(&o);
    /* The server has the job under that id. */
    int fd = systest_conn();
    systest_lease_now(fd, "q", id, "hi");
    close(fd);

    /* With --raw, stdout is the reply alone; the id goes to stderr. */
    o = cli_run(NULL, NULL, "-a", srv_addr(), "--raw", "schedule", "-", "q", "60000", "600000",
                "2030-01-01T00:00:00Z", "hi");
    ck_assert_int_eq(o.status, 0);
    ck_assert_str_eq(o.out.p, "+OK\\r\\n\n");
    ck_assert_uint_eq(o.err.n, 40);
    ck_assert(strncmp(o.err.p, "id ", 3) == 0 && o.err.p[39] == '\n');
    cli_out_free(&o);
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
                 "[-max-attempts=N] [-max-fails=N]\n",
                 "-a", "127.0.0.1:1", "add", "-", "q");
    expect_usage("workq-cli: usage: complete <id> <result>\n", "complete", ID);
    expect_usage("workq-cli: unknown command \"frob\" (help lists them)\n", "frob");
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

    /* Nonsense, a reply cut short, no reply at all. */
    static const char *const replies[][2] = {
        {"hello\r\n", NULL}, {"+OK 1\r\n" ID " q 1 5\r\nab", NULL}, {"", NULL}};
    static const char *const errors[][2] = {
        {"malformed reply from ", ": reply does not start with + or -"},
        {"connection closed by ", " in the middle of a reply"},
        {"connection closed by ", ""}};
    static const int statuses[] = {76, 69, 69};
    for (int i = 0; i < 3; i++) {
        pid_t pid = fake_server(lfd, replies[i]);
        o = cli_run(NULL, NULL, "-a", addr, "lease", "q", "0");
        ck_assert_str_eq(o.out.p, "");
        ck_assert_str_eq(o.err.p, f("workq-cli: %s%s%s\n", errors[i][0], addr, errors[i][1]));
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
    ck_assert_str_eq(o.out.p, "OK\nNOT-FOUND\n");
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\n", addr));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    fake_server_done(pid);

    pid = fake_server(lfd, (const char *const[]){"+OK\r\n", "", "", NULL});
    o = cli_run(NULL, "delete a\ndelete b\ndelete c\n", "-a", addr);
    ck_assert_str_eq(o.out.p, "OK\n");
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\nworkq-cli: connection closed by "
                                "%s\n",
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
                              "NOT-FOUND\n"
                              "(none)\n");
    ck_assert_str_eq(o.err.p, "workq-cli: unknown command \"bogus\" (help lists them)\n"
                              "workq-cli: usage: add <id> <name> <ttr> <ttl> <payload> "
                              "[-priority=N] [-max-attempts=N] [-max-fails=N]\n");
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
    ck_assert_str_eq(o.out.p, f("%sNOT-FOUND\n", help));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    free(help);
    systest_stop_srv();

    /* Without a server the script stops at the first command. */
    o = cli_run(NULL, "help\ndelete x\ndelete y\n", "-a", srv_addr());
    ck_assert(strncmp(o.out.p, "Commands", 8) == 0);
    ck_assert_str_eq(o.err.p, refused(srv_addr()));
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
    ck_assert_str_eq(o.out.p, "error: Line too long\nNOT-FOUND\nNOT-FOUND\n");
    ck_assert_str_eq(o.err.p, f("workq-cli: reconnected to %s\n", addr));
    ck_assert_int_eq(o.status, 1);
    cli_out_free(&o);
    systest_stop(&s);
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

/* Start the cli on a new terminal with HOME set to home. */
static void
tty_start(struct tty *t, const char *home)
{
    char *wrapper;
    char **argv = cli_argv((const char *const[]){"-a", srv_addr(), NULL}, &wrapper);
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
    tty_start(&t, home);
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
    tty_start(&t, "/nonexistent/home");
    tty_prompt(&t, prompt);
    tty_type(&t, f("delete %s\r", id4(9)));
    tty_expect(&t, "NOT-FOUND\r\n");
    tty_prompt(&t, prompt);
    tty_type(&t, "\x04");
    ck_assert_int_eq(tty_wait(&t), 0);
    systest_stop_srv();
}
END_TEST

static Suite *
cli_suite(void)
{
    const struct systest_group groups[] = {
        {"cmd",
         {test_cmd_payload, test_cmd_escapes, test_cmd_other, test_cmd_new_id, test_cmd_local,
          test_cmd_words, test_cmd_errors, NULL}},
        {"reply",
         {test_reply_frames, test_reply_malformed, test_reply_print_status, test_reply_print_jobs,
          test_reply_print_inspect, test_reply_print_raw, NULL}},
        {"one_shot",
         {test_one_shot, test_one_shot_inspect, test_new_id, test_raw, test_usage,
          test_help_version, test_addr, test_bad_server, test_long_wait, NULL}},
        {"script", {test_script, test_reconnect, test_resend, NULL}},
        {"tty", {test_tty, NULL}},
    };
    return systest_suite("cli", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(cli_suite());
}
