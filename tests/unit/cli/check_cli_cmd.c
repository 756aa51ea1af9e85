/* check_cli_cmd.c - unit tests for src/cli/cli_cmd.c, workq-cli's parser:
 * a typed line becomes the exact protocol bytes (payloads inline, escapes,
 * generated ids), a local command, or a refusal with its message. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_cmd.h"
#include "systest.h"

#define ID "6ba7b810-9dad-11d1-80b4-00c04fd430c8"

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
    expect_wire("lease \"q\" 0", "lease q 0\r\n");
    /* The server judges the values. */
    expect_wire("delete x", "delete x\r\n");
    expect_wire("touch x y -attempt=z", "touch x y -attempt=z\r\n");
    c = expect_wire("worker quiet w1", "worker quiet w1\r\n");
    ck_assert_int_eq(c.view, CLI_VIEW_STATUS);
    expect_wire("worker terminate w1", "worker terminate w1\r\n");

    static const struct {
        const char *line;
        enum cli_view view;
    } inspect[] = {
        {"inspect server", CLI_VIEW_SERVER},       {"inspect job " ID, CLI_VIEW_JOB},
        {"inspect queues 0 10", CLI_VIEW_QUEUES},  {"inspect queue q", CLI_VIEW_QUEUES},
        {"inspect jobs q 0 10", CLI_VIEW_JOBS},    {"inspect scheduled-jobs q 0 1", CLI_VIEW_JOBS},
        {"inspect workers 0 10", CLI_VIEW_QUEUES},
    };
    for (size_t i = 0; i < sizeof inspect / sizeof inspect[0]; i++) {
        c = expect_wire(inspect[i].line, f("%s\r\n", inspect[i].line));
        ck_assert_int_eq(c.view, inspect[i].view);
    }
}
END_TEST

/* The cli checks the shape of a command itself: its name, the number of
 * positional arguments (flags are not counted), and the subject of inspect
 * and worker; never the values. */
START_TEST(test_cmd_arity)
{
    static const char *const accepted[] = {
        "result x y",
        "lease q 0",
        "lease a b c d e 0 -fencing=1",
        "touch x",
        "touch x 1 -attempt=2",
        "cancel x",
        "wait 0 x",
        "wait 0 x y z",
        "delete x -bogus=1",
        "inspect server",
        "inspect queues 0 10",
        "inspect queue q",
        "inspect job x",
        "inspect jobs q 0 1",
        "inspect scheduled-jobs q 0 1",
        "inspect workers 0 1",
        "hello w -labels=a",
        "worker quiet w",
        "worker terminate w",
        "auth pw",
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        expect_wire(accepted[i], f("%s\r\n", accepted[i]));
    static const char *const cases[][2] = {
        {"delete", "usage: delete <id>"},
        {"delete a b", "usage: delete <id>"},
        {"delete -x=1", "usage: delete <id>"},
        {"result x", "usage: result <id> <wait-timeout>"},
        {"lease 0", "usage: lease <name>... <wait-timeout> [-fencing=1]"},
        {"touch", "usage: touch <id> [<ttr>] [-attempt=N]"},
        {"touch a b c", "usage: touch <id> [<ttr>] [-attempt=N]"},
        {"cancel", "usage: cancel <id>"},
        {"wait 0", "usage: wait <wait-timeout> <id>..."},
        {"hello", "usage: hello <name> [-labels=a,b]"},
        {"auth", "usage: auth <password>"},
        {"auth a b", "usage: auth <password>"},
        {"inspect", "inspect needs a subject: server, queues, queue, job, jobs, scheduled-jobs, "
                    "dead-jobs or workers"},
        {"inspect bogus", "unknown inspect subject \"bogus\" (server, queues, queue, job, jobs, "
                          "scheduled-jobs, dead-jobs or workers)"},
        {"inspect server now", "usage: inspect server"},
        {"inspect queues 0", "usage: inspect queues <offset> <limit>"},
        {"inspect queue", "usage: inspect queue <name>"},
        {"inspect job", "usage: inspect job <id>"},
        {"inspect jobs q 0", "usage: inspect jobs <name> <offset> <limit>"},
        {"inspect scheduled-jobs q", "usage: inspect scheduled-jobs <name> <offset> <limit>"},
        {"inspect workers", "usage: inspect workers <offset> <limit>"},
        {"worker", "worker needs an action: quiet or terminate"},
        {"worker stop w", "unknown worker action \"stop\" (quiet or terminate)"},
        {"worker quiet", "usage: worker quiet <wid>"},
        {"worker terminate a b", "usage: worker terminate <wid>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused(cases[i][0], cases[i][1]);
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
        ck_assert_msg(systest_is_uuid4(cmd.id), "not a v4 uuid: %s", cmd.id);
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
        "[-max-fails=N] [-after=ID,...] [-idempotent=1] [-worker=NAME,...] [-target=all] "
        "[-backoff=faktory] [-dead=1]\n",
        "\n  schedule <id> <name> <ttr> <ttl> <time> <payload> [-priority=N] "
        "[-max-attempts=N] [-max-fails=N] [-after=ID,...] [-idempotent=1] [-worker=NAME,...] "
        "[-target=all] [-backoff=faktory] [-dead=1]\n",
        "\n  run <id> <name> <ttr> <wait-timeout> <payload> [-priority=N]\n",
        "\n  result <id> <wait-timeout>\n",
        "\n  lease <name>... <wait-timeout> [-fencing=1]\n",
        "\n  complete <id> <result> [-attempt=N]\n",
        "\n  fail <id> <result> [-attempt=N]\n",
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
    ck_assert(systest_is_uuid4(cmd.id));
    ck_assert_str_eq(cmd.wire, f("add %s q 1 2 0\r\n\r\n", cmd.id));
    cli_cmd_clear(&cmd);
    char *spaced[] = {"lease", "a b", "0"};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, spaced, 3), -1);
    ck_assert_str_eq(cmd.error,
                     "\"a b\": only a payload may be empty or hold spaces or line breaks");
    char *empty[] = {"delete", ""};
    ck_assert_int_eq(cli_cmd_parse_words(&cmd, empty, 2), -1);
    ck_assert_str_eq(cmd.error, "\"\": only a payload may be empty or hold spaces or line breaks");
}
END_TEST

START_TEST(test_cmd_errors)
{
    static const char *const cases[][2] = {
        {"add " ID " q 1 2",
         "usage: add <id> <name> <ttr> <ttl> <payload> [-priority=N] [-max-attempts=N] "
         "[-max-fails=N] [-after=ID,...] [-idempotent=1] [-worker=NAME,...] [-target=all] "
         "[-backoff=faktory] [-dead=1]"},
        {"add " ID " q 1 2 -a=b",
         "usage: add <id> <name> <ttr> <ttl> <payload> [-priority=N] "
         "[-max-attempts=N] [-max-fails=N] [-after=ID,...] "
         "[-idempotent=1] [-worker=NAME,...] [-target=all] [-backoff=faktory] [-dead=1]"},
        {"schedule " ID " q 1 2 x", "usage: schedule <id> <name> <ttr> <ttl> <time> <payload> "
                                    "[-priority=N] [-max-attempts=N] [-max-fails=N] "
                                    "[-after=ID,...] [-idempotent=1] [-worker=NAME,...] "
                                    "[-target=all] [-backoff=faktory] [-dead=1]"},
        {"run " ID " q 1 2 x y", "usage: run <id> <name> <ttr> <wait-timeout> <payload> "
                                 "[-priority=N]"},
        {"complete " ID " a b", "usage: complete <id> <result> [-attempt=N]"},
        {"fail " ID, "usage: fail <id> <result> [-attempt=N]"},
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
/* Tab completion */

/* What cli_cmd_complete says for the last word of line (the word being
 * typed: after the last space, possibly empty). */
static struct cli_complete
complete(const char *line)
{
    struct cli_complete c;
    const char *sp = strrchr(line, ' ');
    size_t start = sp != NULL ? (size_t)(sp - line) + 1 : 0;
    cli_cmd_complete(&c, line, start, strlen(line));
    return c;
}

/* Expect the words of line's completion to be exactly want (a list
 * separated by spaces). */
static void
expect_words(const char *line, const char *want)
{
    struct cli_complete c = complete(line);
    ck_assert_msg(c.kind == CLI_COMPLETE_WORDS, "%s: kind %d", line, (int)c.kind);
    char got[512] = "";
    for (size_t i = 0; c.words[i] != NULL; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", c.words[i]);
    ck_assert_str_eq(got, want);
}

START_TEST(test_complete)
{
    static const char commands[] = "add schedule run result lease complete fail touch cancel "
                                   "wait delete revive inspect hello worker auth help quit exit";
    expect_words("", commands);
    expect_words("de", commands);
    expect_words("  ", commands);
    expect_words("inspect ", "server queues queue job jobs scheduled-jobs dead-jobs workers");
    expect_words("inspect -x=1 qu",
                 "server queues queue job jobs scheduled-jobs dead-jobs workers");
    expect_words("worker ", "quiet terminate");
    expect_words("add - q 1 2 x -p", "-priority= -max-attempts= -max-fails= -after= "
                                     "-idempotent=1 -worker= -target=all -backoff=faktory -dead=1");
    expect_words("run " ID " q 1 2 -", "-priority=");
    expect_words("lease q -f", "-fencing=1");
    expect_words("complete " ID " \"a b\" -", "-attempt=");
    expect_words("hello w -", "-labels=");

    static const char *const queues[] = {
        "add - ",
        "add - q 1 2 x -priority=1 ", /* no: the ttr */
        "schedule x ",
        "run \"x\" ",
        "lease ",
        "lease a b ",
        "inspect queue ",
        "inspect jobs ",
        "inspect scheduled-jobs ",
    };
    for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++)
        ck_assert_msg(complete(queues[i]).kind ==
                          (i == 1 ? CLI_COMPLETE_NOTHING : CLI_COMPLETE_QUEUES),
                      "%s", queues[i]);
    static const char *const nothing[] = {
        "add ",  /* an id */
        "add -", /* the new id, not a flag */
        "add - q ",       "delete ",         "delete -",
        "inspect job ",   "inspect jobs q ", "inspect queues ",
        "inspect bogus ", "worker quiet ",   "frob ",
        "help ",          "quit ",           "complete x \"open ", /* inside a quoted string */
    };
    for (size_t i = 0; i < sizeof nothing / sizeof nothing[0]; i++)
        ck_assert_msg(complete(nothing[i]).kind == CLI_COMPLETE_NOTHING, "%s", nothing[i]);
}
END_TEST

static Suite *
cli_cmd_suite(void)
{
    const struct systest_group groups[] = {
        {"cmd",
         {test_cmd_payload, test_cmd_escapes, test_cmd_other, test_cmd_arity, test_cmd_new_id,
          test_cmd_local, test_cmd_words, test_cmd_errors, NULL}},
        {"complete", {test_complete, NULL}},
    };
    return systest_suite("cli_cmd", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(cli_cmd_suite());
}
