/* sys_framing.c - system tests of the wire format: lines (CR LF or LF,
 * blanks, spaces, tabs, too long), pipelining and split reads, flags on
 * commands, data blocks and their terminators, unknown commands and EOF;
 * the real workq-server over TCP, byte-exact against doc/protocol-reference.md
 * sections 1-4.
 *
 * Every test starts its own server on 127.0.0.1:0 and stops it at the end, so
 * every test also checks a clean shutdown (exit status 0; under valgrind with
 * --error-exitcode that is where memory errors and leaks show up).
 *
 * Tests check behaviour, never speed: TTR/TTL/wait values are short, and
 * every wait for a server-side deadline is generous and scaled by
 * WQ_TEST_SLOW. Checks that something has NOT happened yet run only when
 * WQ_TEST_SLOW is 1. If a check fails, check kills the test's process group,
 * which takes the server with it. */
#include "config.h"
#include "systest.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TTR  SYSTEST_TTR
#define TTL  SYSTEST_TTL
#define PARK "60000" /* wait of a lease/result that must be woken */

/* ------------------------------------------------------------------------ */
/* framing */

START_TEST(test_framing_lf_only)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, f("add %s q %u %s 3\nabc\n", id4(1), TTR, TTL), OK);
    systest_roundtrip(fd, "lease q 0\n", systest_lease_reply(id4(1), "q", TTR, "abc"));
    systest_roundtrip(fd, f("complete %s 2\nok\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\n", id4(1)), systest_result_reply(id4(1), 1, "ok"));
    /* mixed line ends in one send */
    systest_roundtrip(fd, f("delete %s\ndelete %s\r\ndelete %s\n", id4(1), id4(1), id4(1)),
                      OK NF NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_pipelining)
{
    systest_start_srv();
    int fd = systest_conn();
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < 50; i++) {
        sb_add(&req, f("add %s q %u %s 3\r\n%03u\r\n", id4(i + 1), TTR, TTL, i));
        sb_add(&exp, OK);
    }
    sb_add(&req, "delete bad\r\n\r\n   \r\n");
    sb_add(&exp, ERR("Invalid ID"));
    sb_add(&req, "nope\r\n");
    sb_add(&exp, ERR("Unknown command"));
    for (unsigned i = 0; i < 50; i++) {
        sb_add(&req, "lease q 0\r\n");
        sb_add(&exp, systest_lease_reply(id4(i + 1), "q", TTR, f("%03u", i)));
    }
    sb_add(&req, "lease q 0\r\n");
    sb_add(&exp, TO);
    for (unsigned i = 0; i < 50; i += 2) {
        sb_add(&req, f("complete %s 1\r\n%c\r\n", id4(i + 1), 'a' + i % 26));
        sb_add(&exp, OK);
        sb_add(&req, f("result %s 0\r\n", id4(i + 1)));
        sb_add(&exp, systest_result_reply(id4(i + 1), 1, f("%c", 'a' + i % 26)));
        sb_add(&req, f("result %s 0\r\n", id4(i + 2)));
        sb_add(&exp, TO);
        sb_add(&req, f("delete %s\r\n", id4(i + 2)));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    systest_expect_silence(fd, 50);
    free(req.p);
    free(exp.p);
    close(fd);
    systest_stop_srv();
}
END_TEST

static void
send_bytewise(int fd, const char *text)
{
    for (size_t i = 0; text[i] != '\0'; i++) {
        systest_send(fd, text + i, 1);
        systest_sleep_ms(2);
    }
}

START_TEST(test_framing_split_every_byte)
{
    systest_start_srv();
    int fd = systest_conn();
    const char *cmd = f("add %s q %u %s 7\r\nab\r\ncd\n\r\n", id4(1), TTR, TTL);
    size_t n = strlen(cmd);
    for (size_t i = 0; i + 1 < n; i++) {
        systest_send(fd, cmd + i, 1);
        systest_sleep_ms(2);
    }
    systest_expect_silence(fd, 30);
    systest_send(fd, cmd + n - 1, 1);
    systest_expect(fd, OK);
    send_bytewise(fd, "lease q 0\r\n");
    systest_expect(fd, systest_lease_reply(id4(1), "q", TTR, "ab\r\ncd\n"));
    send_bytewise(fd, f("complete %s 0\n\n", id4(1)));
    systest_expect(fd, OK);
    send_bytewise(fd, f("result %s 0\n", id4(1)));
    systest_expect(fd, systest_result_reply(id4(1), 1, ""));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_split_terminator)
{
    systest_start_srv();
    int fd = systest_conn();
    /* the CR and LF ending a data block in separate sends */
    systest_sends(fd, f("add %s q %u %s 3\r\nabc\r", id4(1), TTR, TTL));
    systest_expect_silence(fd, 50);
    systest_roundtrip(fd, "\n", OK);
    /* payload, CR and LF all separate */
    systest_sends(fd, f("add %s q %u %s 3\r\n", id4(2), TTR, TTL));
    systest_sleep_ms(20);
    systest_sends(fd, "abc");
    systest_sleep_ms(20);
    systest_sends(fd, "\r");
    systest_sleep_ms(20);
    systest_roundtrip(fd, "\n", OK);
    /* a payload that ends in CR, then the terminator split */
    systest_sends(fd, f("add %s q %u %s 2\r\nx\r", id4(3), TTR, TTL));
    systest_sleep_ms(20);
    systest_sends(fd, "\r");
    systest_sleep_ms(20);
    systest_roundtrip(fd, "\n", OK);
    /* the CR and LF of a command line, and a size token split in two */
    systest_sends(fd, "lease q 0\r");
    systest_sleep_ms(20);
    systest_roundtrip(fd, "\n", systest_lease_reply(id4(1), "q", TTR, "abc"));
    systest_sends(fd, f("add %s q %u %s 1", id4(4), TTR, TTL));
    systest_sleep_ms(20);
    systest_sends(fd, "0\r\n01234");
    systest_sleep_ms(20);
    systest_roundtrip(fd, "56789\r\n", OK);
    systest_lease_now(fd, "q", id4(2), "abc");
    systest_lease_now(fd, "q", id4(3), "x\r");
    systest_lease_now(fd, "q", id4(4), "0123456789");
    /* a complete whose block terminator is split */
    systest_sends(fd, f("complete %s 2\r\nok\r", id4(4)));
    systest_sleep_ms(20);
    systest_roundtrip(fd, "\n", OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), systest_result_reply(id4(4), 1, "ok"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_blank_lines)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_sends(fd, "\r\n\n   \r\n \n          \n");
    systest_expect_silence(fd, 50);
    systest_roundtrip(fd, f("\r\n\r\n delete %s\r\n\r\n \r\n", id4(1)), NF);
    systest_expect_silence(fd, 50);
    /* a blank line between a command and another one */
    systest_roundtrip(fd, f("add %s q %u %s 1\r\nx\r\n\r\nlease q 0\r\n", id4(1), TTR, TTL),
                      OK "+OK 1\r\n");
    systest_expect(fd, f("%s q %u 1\r\nx\r\n", id4(1), TTR));
    systest_expect_silence(fd, 50);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_spaces)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, f("   add   %s  q    %u  %s   3   \r\nabc\r\n", id4(1), TTR, TTL), OK);
    systest_roundtrip(fd, "  lease   q     0  \r\n", systest_lease_reply(id4(1), "q", TTR, "abc"));
    systest_roundtrip(fd, f(" complete  %s  -x=1  1 \r\nz\r\n", id4(1)),
                      ERR("Invalid command args"));
    systest_roundtrip(fd, f(" complete  %s    1    \r\nz\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("    result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "z"));
    systest_roundtrip(fd, f("delete %s          \r\n", id4(1)), OK);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_tabs_and_cr)
{
    systest_start_srv();
    int fd = systest_conn();
    /* a tab is an ordinary character */
    systest_roundtrip(fd, f("add\t%s q %u %s 0\r\n", id4(1), TTR, TTL), ERR("Unknown command"));
    systest_roundtrip(fd, f("delete\t%s\r\n", id4(1)), ERR("Unknown command"));
    systest_roundtrip(fd, f("delete %s\t\r\n", id4(1)), ERR("Invalid ID"));
    systest_roundtrip(fd, f("add %s q\tr %u %s 1\r\nx\r\n", id4(1), TTR, TTL), ERR("Invalid Name"));
    systest_roundtrip(fd, "\t\r\n", ERR("Unknown command"));
    /* a CR that is not right before the LF is an ordinary byte */
    systest_roundtrip(fd, f("delete %s\r\r\n", id4(1)), ERR("Invalid ID"));
    systest_roundtrip(fd, f("delete\r %s\r\n", id4(1)), ERR("Unknown command"));
    systest_roundtrip(fd, "\r\r\n", ERR("Unknown command"));
    systest_roundtrip(fd, f("add %s q\r %u %s 1\r\nx\r\n", id4(1), TTR, TTL), ERR("Invalid Name"));
    /* a NUL byte too */
    systest_send(fd, "delete\0x\r\n", 10);
    systest_expect(fd, ERR("Unknown command"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_unknown_commands)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const names[] = {"ADD",  "Add", "LEASE", "Delete", "RESULT", "Complete",
                                        "FAIL", "foo", "addx",  "ad",     "-add",   "+OK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        systest_roundtrip(fd, f("%s %s q %u %s 0\r\n", names[i], id4(1), TTR, TTL),
                          ERR("Unknown command"));
    /* inspect with no object is an arity error; an unknown object is unknown */
    systest_roundtrip(fd, "inspect\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "inspect servers\r\n", ERR("Unknown command"));
    systest_roundtrip(fd, "INSPECT server\r\n", ERR("Unknown command"));
    systest_expect_silence(fd, 30);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_flags_on_plain_commands)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "abc");
    systest_roundtrip(fd, f("delete %s -x=1\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("delete -x=1 %s\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("delete %s -=\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q 0 -a=b\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease -a=b q 0\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q 0 -priority=1\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("result %s 0 -x=1\r\n", id4(1)), ERR("Invalid command args"));
    /* a command with a data block: the block is read, then exactly one reply */
    systest_roundtrip(fd, f("complete %s 1 -x=1\r\nX\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("complete %s -x=1 1\r\nX\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("fail %s 1 -x=1\r\nX\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("fail %s 1 -max-fails=1\r\nX\r\n", id4(1)),
                      ERR("Invalid command args"));
    systest_expect_silence(fd, 30);
    /* nothing happened to the job */
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_lease_now(fd, "q", id4(1), "abc");
    /* a token that starts with '-' without '=' is positional */
    systest_roundtrip(fd, f("delete %s -x\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "delete -x\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_line_too_long)
{
    systest_start(&systest_srv, "--max-line", "64", NULL);
    const char *del = f("delete %s", id4(1)); /* 43 bytes */
    const char *l64 = systest_padded_line(64, del);
    const char *l65 = systest_padded_line(65, del);
    ck_assert_uint_eq(strlen(l64), 64);
    ck_assert_uint_eq(strlen(l65), 65);

    /* 64 bytes are fine, however the terminator arrives */
    int fd = systest_conn();
    systest_roundtrip(fd, f("%s\r\n", l64), NF);
    systest_roundtrip(fd, f("%s\n", l64), NF);
    systest_sends(fd, l64);
    systest_sleep_ms(30);
    systest_sends(fd, "\r");
    systest_sleep_ms(30);
    systest_roundtrip(fd, "\n", NF);
    systest_sends(fd, l64);
    systest_sleep_ms(30);
    systest_roundtrip(fd, "\n", NF);
    /* a data block is not part of the line */
    char payload[201];
    memset(payload, 'p', 200);
    payload[200] = '\0';
    systest_add(fd, id4(2), "q", payload);
    systest_lease_now(fd, "q", id4(2), payload);
    close(fd);

    /* 65 bytes without a line end: error, then the connection is closed */
    fd = systest_conn();
    systest_sends(fd, l65);
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);

    /* the same, arriving in pieces after a good command */
    fd = systest_conn();
    systest_roundtrip(fd, f("%s\r\n", l64), NF);
    systest_sends(fd, "          ");
    systest_sleep_ms(20);
    systest_sends(fd, l65 + 10);
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);

    /* 65 bytes with a line end in the same send: too long as well */
    fd = systest_conn();
    systest_sends(fd, f("%s\r\n", l65));
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);

    /* other connections are unaffected */
    fd = systest_conn();
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A block declared past 64 times -max-payload (at least 64 MiB) is not read
 * past: the size error at once, after the replies due, then the close. */
START_TEST(test_framing_size_past_bound)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_sends(fd, f("delete %s\r\nadd %s q 1000 60000 99999999999\r\nxyz\r\n", id4(1), id4(1)));
    systest_expect(fd, NF ERR("Invalid payload size"));
    systest_expect_closed(fd);
    close(fd);
    fd = systest_conn();
    systest_sends(fd, f("fail %s 67108865\r\n", id4(1)));
    systest_expect(fd, ERR("Invalid result size"));
    systest_expect_closed(fd);
    close(fd);
    /* up to the bound the block is read past and the connection goes on */
    fd = systest_conn();
    systest_sends(fd, f("complete %s 2000000\r\n", id4(1)));
    char *big = malloc(2000002);
    memset(big, 'x', 2000000);
    memcpy(big + 2000000, "\r\n", 2);
    systest_send(fd, big, 2000002);
    free(big);
    systest_expect(fd, ERR("Invalid payload size"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_eof)
{
    systest_start_srv();
    /* replies of commands already received are still written after EOF */
    int fd = systest_conn();
    systest_sends(fd, f("add %s q %u %s 3\r\nabc\r\nlease q 0\r\nlease q 0\r\n", id4(1), TTR, TTL));
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    systest_expect(fd, OK);
    systest_expect(fd, systest_lease_reply(id4(1), "q", TTR, "abc"));
    systest_expect(fd, TO);
    systest_expect_closed(fd);
    close(fd);

    /* a parked lease is cancelled at EOF and never takes a job */
    fd = systest_conn();
    systest_sends(fd, "lease p " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    systest_expect_closed(fd);
    close(fd);
    int c2 = systest_conn();
    systest_add_full(c2, id4(2), "p", TTR, TTL, "x", "-max-attempts=1");
    systest_lease_now(c2, "p", id4(2), "x");

    /* a waiting result is cancelled at EOF too; the job is untouched */
    fd = systest_conn();
    systest_sends(fd, f("result %s " PARK "\r\n", id4(2)));
    systest_sleep_ms(100 * systest_slow());
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    systest_expect_closed(fd);
    close(fd);
    systest_roundtrip(c2, f("complete %s 1\r\nr\r\n", id4(2)), OK);
    systest_roundtrip(c2, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 1, "r"));
    close(c2);
    systest_stop_srv();
}
END_TEST

START_TEST(test_framing_disconnect_mid_payload)
{
    systest_start_srv();
    /* mid-payload */
    int a = systest_conn();
    systest_sends(a, f("add %s q %u %s 10\r\nabc", id4(1), TTR, TTL));
    systest_sleep_ms(20);
    close(a);
    /* mid-payload of a big block */
    int b = systest_conn();
    char *junk = calloc(1, 150000);
    systest_sends(b, f("add %s q %u %s 400000\r\n", id4(2), TTR, TTL));
    systest_send(b, junk, 150000);
    close(b);
    free(junk);
    /* mid-line, and right after the line of a block command */
    int c = systest_conn();
    systest_sends(c, "add 6ba7b810-9dad");
    close(c);
    int d = systest_conn();
    systest_sends(d, f("complete %s 5\r\n", id4(1)));
    close(d);
    /* mid-terminator */
    int e = systest_conn();
    systest_sends(e, f("add %s q %u %s 1\r\nx\r", id4(3), TTR, TTL));
    close(e);
    /* a client that sends many commands and leaves without reading */
    int g = systest_conn();
    struct sb req = {0};
    for (int i = 0; i < 2000; i++)
        sb_add(&req, "lease nothing 0\r\nnope\r\n");
    systest_send(g, req.p, req.n);
    free(req.p);
    close(g);

    systest_sleep_ms(100 * systest_slow());
    int fd = systest_conn();
    /* no partial job was stored */
    systest_add(fd, id4(1), "q", "one");
    systest_add(fd, id4(2), "q", "two");
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_lease_now(fd, "q", id4(1), "one");
    systest_lease_now(fd, "q", id4(2), "two");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
framing_suite(void)
{
    const struct systest_group groups[] = {
        {"framing",
         {test_framing_lf_only, test_framing_pipelining, test_framing_split_every_byte,
          test_framing_split_terminator, test_framing_blank_lines, test_framing_spaces,
          test_framing_tabs_and_cr, test_framing_unknown_commands,
          test_framing_flags_on_plain_commands, test_framing_line_too_long,
          test_framing_size_past_bound, test_framing_eof, test_framing_disconnect_mid_payload,
          NULL}},
    };
    return systest_suite("framing", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(framing_suite());
}
