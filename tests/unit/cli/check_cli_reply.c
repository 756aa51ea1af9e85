/* check_cli_reply.c - unit tests for src/cli/cli_reply.c, workq-cli's reply
 * reader: framing (whole, byte by byte, malformed), printing (status,
 * jobs, inspect tables, raw), and the first bytes of other servers. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_reply.h"
#include "systest.h"

#define ID "6ba7b810-9dad-11d1-80b4-00c04fd430c8"

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
    {CLI_VIEW_FENCED, "+OK 1\r\n" ID " q 1000 3 4\r\na\r\nb\r\n"},
    {CLI_VIEW_RESULT, "+OK 2\r\n" ID " 1 2\r\nok\r\n" ID " 0 9\r\ncancelled\r\n"},
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
        {CLI_VIEW_FENCED, "+OK 1\r\n" ID " q 5 0\r\n\r\n", "unexpected job line"},
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
    /* lease -fencing=1: the attempt too */
    ck_assert_str_eq(printed("+OK 1\r\n" ID " emails 30000 2 2\r\nhi\r\n", CLI_VIEW_FENCED, false),
                     "id       " ID "\n"
                     "name     emails\n"
                     "ttr      30000\n"
                     "attempt  2\n"
                     "payload  \"hi\"\n");
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
    /* inspect workers: the same table */
    ck_assert_str_eq(printed("+OK 1\r\nw1 6\r\nhostname h\r\npid 7\r\nlabels []\r\n"
                             "connections 2\r\nlast-beat 2026-11-25T01:00:00Z\r\n"
                             "state quiet\r\n",
                             CLI_VIEW_QUEUES, false),
                     "name  hostname  pid  labels  connections  last-beat             state\n"
                     "w1    h         7    []      2            2026-11-25T01:00:00Z  quiet\n");
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

/* The first bytes of a connection tell another server's listener. */
START_TEST(test_reply_foreign)
{
    static const struct {
        const char *bytes;
        size_t len;
        enum cli_foreign want;
    } cases[] = {
        {"+HI {\"v\":2}\r\n", 12, CLI_FOREIGN_FAKTORY},
        {"+HI {", 5, CLI_FOREIGN_FAKTORY},
        {"+HI", 3, CLI_FOREIGN_NONE}, /* too few bytes to tell */
        {"+OK\r\n", 5, CLI_FOREIGN_NONE},
        {"-CLIENT-ERROR Unknown command\r\n", 31, CLI_FOREIGN_NONE},
        {"HTTP/1.1 400 Bad Request\r\n", 26, CLI_FOREIGN_HTTP},
        {"HTTP/1.0 200 OK\r\n", 17, CLI_FOREIGN_HTTP},
        {"\x15\x03\x03\x00\x02\x02\x46", 7, CLI_FOREIGN_TLS}, /* an alert */
        {"\x16\x03\x01", 3, CLI_FOREIGN_TLS},                 /* a handshake */
        {"\x15", 1, CLI_FOREIGN_NONE},
        {"\x15\x04", 2, CLI_FOREIGN_NONE},
        {"", 0, CLI_FOREIGN_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct cli_reply r;
        cli_reply_init(&r);
        cli_reply_start(&r, CLI_VIEW_STATUS);
        cli_reply_feed(&r, cases[i].bytes, cases[i].len);
        ck_assert_msg(cli_reply_foreign(&r) == cases[i].want, "case %zu", i);
        cli_reply_clear(&r);
    }
}
END_TEST

static Suite *
cli_reply_suite(void)
{
    const struct systest_group groups[] = {
        {"reply",
         {test_reply_frames, test_reply_malformed, test_reply_print_status, test_reply_print_jobs,
          test_reply_print_inspect, test_reply_print_raw, test_reply_foreign, NULL}},
    };
    return systest_suite("cli_reply", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(cli_reply_suite());
}
