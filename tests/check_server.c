/* check_server.c - system tests: the real workq-server over TCP, byte-exact
 * against doc protocol-notes sections 1-4 (stage: add, lease, complete, fail,
 * delete, result; schedule, run and inspect have tests of their own in
 * check_protocol.c).
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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TTR     SYSTEST_TTR
#define TTL     SYSTEST_TTL
#define PARK    "60000"   /* wait of a lease/result that must be woken */

/* ------------------------------------------------------------------------ */
/* Helpers */

/* Expect one of two replies of the same length; returns 0 or 1. */
static int
expect_one_of(int fd, const char *a, const char *b)
{
    size_t n = strlen(a);
    ck_assert_uint_eq(n, strlen(b));
    char *got = malloc(n + 1);
    systest_read_n(fd, got, n);
    int which = strcmp(got, a) == 0 ? 0 : strcmp(got, b) == 0 ? 1 : -1;
    if (which < 0) {
        free(got);
        ck_abort_msg("reply is neither of the two expected ones:\n %s\n %s", a, b);
    }
    free(got);
    return which;
}

/* ------------------------------------------------------------------------ */
/* add */

START_TEST(test_add_success)
{
    systest_start_srv();
    int fd = systest_conn();
    /* version-1 and version-4 ids */
    systest_add(fd, id1(1), "q", "hello");
    systest_add(fd, id4(2), "q", "world");
    systest_lease_now(fd, "q", id1(1), "hello");
    systest_lease_now(fd, "q", id4(2), "world");

    /* an uppercase id is echoed in lowercase, and found in either case */
    systest_roundtrip(fd, f("add 6BA7B810-9DAD-11D1-80B4-00C04FD430C8 up %u %s 2\r\nUP\r\n", TTR,
                            TTL),
                      OK);
    systest_lease_now(fd, "up", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "UP");
    systest_roundtrip(fd, "complete 6ba7b810-9DAD-11d1-80b4-00C04FD430C8 1\r\nx\r\n", OK);
    systest_roundtrip(fd, "result 6ba7b810-9dad-11d1-80b4-00c04fd430c8 0\r\n",
                      systest_result_reply("6ba7b810-9dad-11d1-80b4-00c04fd430c8", 1, "x"));

    /* any version but nil; the all-ones uuid too */
    systest_add(fd, "00000000-0000-0000-0000-000000000001", "v", "a");
    systest_add(fd, "ffffffff-ffff-ffff-ffff-ffffffffffff", "v", "b");
    systest_add(fd, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "v", "c"); /* version 7 */
    systest_lease_now(fd, "v", "00000000-0000-0000-0000-000000000001", "a");
    systest_lease_now(fd, "v", "ffffffff-ffff-ffff-ffff-ffffffffffff", "b");
    systest_lease_now(fd, "v", "017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "c");

    /* empty payload */
    systest_roundtrip(fd, f("add %s e %u %s 0\r\n\r\n", id4(3), TTR, TTL), OK);
    systest_roundtrip(fd, "lease e 0\r\n", f("+OK 1\r\n%s e %u 0\r\n\r\n", id4(3), TTR));

    /* binary payload with CR, LF, NUL and 0xff inside */
    static const char bin[] = "a\r\nb\0c\n\r\xff";
    size_t binlen = sizeof bin - 1;
    systest_sends(fd, f("add %s bin %u %s %zu\r\n", id4(4), TTR, TTL, binlen));
    systest_send(fd, bin, binlen);
    systest_roundtrip(fd, "\r\n", OK);
    systest_roundtrip(fd, "lease bin 0\r\n", f("+OK 1\r\n%s bin %u %zu\r\n", id4(4), TTR, binlen));
    systest_expect_bytes(fd, bin, binlen);
    systest_expect(fd, "\r\n");

    /* a 200 KB payload in one send */
    size_t big = 200000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    struct sb req = {0};
    sb_add(&req, f("add %s big %u %s %zu\r\n", id4(5), TTR, TTL, big));
    sb_addn(&req, data, big);
    sb_add(&req, "\r\n");
    systest_send(fd, req.p, req.n);
    systest_expect(fd, OK);
    systest_roundtrip(fd, "lease big 0\r\n", f("+OK 1\r\n%s big %u %zu\r\n", id4(5), TTR, big));
    systest_expect_bytes(fd, data, big);
    systest_expect(fd, "\r\n");
    free(req.p);
    free(data);

    /* limits and leading zeros: ttr 86400000, ttl 2^64-1, name of 255 */
    systest_roundtrip(fd, f("add %s lim 86400000 18446744073709551615 1\r\nL\r\n", id4(6)), OK);
    systest_roundtrip(fd, "lease lim 0\r\n", systest_lease_reply(id4(6), "lim", 86400000, "L"));
    systest_roundtrip(fd, f("add %s lz 000100 0001000 003\r\nabc\r\n", id4(7)), OK);
    systest_roundtrip(fd, "lease lz 0\r\n", systest_lease_reply(id4(7), "lz", 100, "abc"));
    const char *n255 = systest_name_of(255, 'n');
    systest_add(fd, id4(8), n255, "long");
    systest_lease_now(fd, n255, id4(8), "long");
    /* every allowed name character; a name may start with '-' */
    systest_add(fd, id4(9), "Az09_.-", "chars");
    systest_lease_now(fd, "Az09_.-", id4(9), "chars");
    systest_add(fd, id4(10), "-", "dash");
    systest_add(fd, id4(11), "-q", "dashq");
    systest_lease_now(fd, "-", id4(10), "dash");
    systest_lease_now(fd, "-q", id4(11), "dashq");
    /* names are case-sensitive */
    systest_add(fd, id4(12), "Case", "C");
    systest_roundtrip(fd, "lease case 0\r\n", TO);
    systest_lease_now(fd, "Case", id4(12), "C");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_invalid_id)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const bad[] = {
        "bad",
        "00000000-0000-0000-0000-000000000000",   /* nil */
        "{6ba7b810-9dad-11d1-80b4-00c04fd430c8}", /* braces */
        "6ba7b8109dad11d180b400c04fd430c8",       /* no dashes */
        "urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8x",  /* trailing garbage */
        "6ba7b810-9dad-11d1-80b4-00c04fd430c",    /* one digit short */
        "6ba7b810-9dad-11d1-80b4-00c04fd430g8",   /* not hex */
        "6ba7b810-9dad11d1-80b4-00c04fd430c8a",   /* dash misplaced */
        "6ba7b810+9dad-11d1-80b4-00c04fd430c8",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_add_error(fd, f("%s q %u %s 3", bad[i], TTR, TTL), ERR("Invalid ID"));
    /* the id is checked first, whatever else is wrong */
    systest_add_error(fd, "bad a*b 0 0 3 -priority=x", ERR("Invalid ID"));
    systest_roundtrip(fd, "add bad q 1 1 0 -prioirty=5\r\n\r\n", ERR("Invalid ID"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_invalid_name)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_error(fd, f("%s %s %u %s 3", id4(1), systest_name_of(256, 'n'), TTR, TTL),
              ERR("Invalid Name"));
    static const char *const bad[] = {"a*b", "*", "q/r", "q:1", "q,r", "\xc3\xa9", "a\"b", "x\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_add_error(fd, f("%s %s %u %s 3", id4(1), bad[i], TTR, TTL), ERR("Invalid Name"));
    /* the name is checked before ttr, ttl and flags */
    systest_add_error(fd, f("%s a*b 0 0 3 -priority=x", id4(1)), ERR("Invalid Name"));
    /* a name cannot be empty: with only flags around, the count is wrong */
    systest_roundtrip(fd, f("add %s -a=1 %u %s 3\r\n", id4(1), TTR, TTL),
                      ERR("Invalid command args"));
    /* none of these jobs exists */
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_invalid_ttr_ttl)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const bad_ttr[] = {"0", "86400001", "+1", "abc", "-1", "1.5", "000",
                                          "18446744073709551616", "1e3"};
    for (size_t i = 0; i < sizeof bad_ttr / sizeof bad_ttr[0]; i++)
        systest_add_error(fd, f("%s q %s %s 3", id4(1), bad_ttr[i], TTL), ERR("Invalid TTR"));
    /* ttr before ttl and flags */
    systest_add_error(fd, f("%s q 0 0 3 -priority=x", id4(1)), ERR("Invalid TTR"));

    static const char *const bad_ttl[] = {"0", "18446744073709551616", "+1", "abc", "-5",
                                          "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_ttl / sizeof bad_ttl[0]; i++)
        systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, bad_ttl[i]), ERR("Invalid TTL"));
    /* ttl before flags */
    systest_add_error(fd, f("%s q %u 0 3 -prioirty=5", id4(1), TTR), ERR("Invalid TTL"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* the largest values are accepted */
    systest_add_full(fd, id4(2), "q", 86400000, "18446744073709551615", "abc", NULL);
    systest_add_full(fd, id4(3), "q", 1, "1000000", "abc", NULL);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_flag_values)
{
    systest_start_srv();
    int fd = systest_conn();
    unsigned n = 1;
    /* accepted values */
    static const char *const good[] = {
        "-priority=-2147483648", "-priority=2147483647", "-priority=+5",  "-priority=0",
        "-priority=-0",          "-priority=007",        "-max-attempts=0", "-max-attempts=255",
        "-max-fails=0",          "-max-fails=255",       "-max-attempts=0255",
        "-priority=1 -max-attempts=2 -max-fails=3",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        systest_add_full(fd, id4(n++), "q", TTR, TTL, "abc", good[i]);

    struct {
        const char *flags, *error;
    } bad[] = {
        {"-priority=2147483648", "Invalid Priority"},
        {"-priority=-2147483649", "Invalid Priority"},
        {"-priority=99999999999999999999", "Invalid Priority"},
        {"-priority=abc", "Invalid Priority"},
        {"-priority=1=2", "Invalid Priority"},
        {"-priority=1.5", "Invalid Priority"},
        {"-priority=+", "Invalid Priority"},
        {"-priority=-", "Invalid Priority"},
        {"-priority=++1", "Invalid Priority"},
        {"-max-attempts=256", "Invalid Max Attempts"},
        {"-max-attempts=+1", "Invalid Max Attempts"},
        {"-max-attempts=-1", "Invalid Max Attempts"},
        {"-max-attempts=x", "Invalid Max Attempts"},
        {"-max-fails=256", "Invalid Max Fails"},
        {"-max-fails=+1", "Invalid Max Fails"},
        {"-max-fails=-1", "Invalid Max Fails"},
        {"-max-fails=18446744073709551616", "Invalid Max Fails"},
        /* the first bad flag, in line order, decides */
        {"-max-fails=256 -priority=x", "Invalid Max Fails"},
        {"-priority=x -max-fails=256", "Invalid Priority"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_roundtrip(fd, f("add %s q %u %s 3 %s\r\nabc\r\n", id4(n), TTR, TTL, bad[i].flags),
                          f("-CLIENT-ERROR %s\r\n", bad[i].error));
    /* nothing was added under that id */
    systest_roundtrip(fd, f("delete %s\r\n", id4(n)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_flag_keys)
{
    systest_start_srv();
    int fd = systest_conn();
    struct {
        const char *flags, *error;
    } bad[] = {
        {"-prioirty=5", "Invalid command flags"},
        {"-=5", "Invalid command flags"},
        {"-=", "Invalid command flags"},
        {"-priority=", "Invalid command flags"},
        {"-priority=1 -priority=2", "Invalid command flags"},
        {"-priority=1 -priority=1", "Invalid command flags"},
        {"-max-fails=1 -max-fails=1", "Invalid command flags"},
        {"--priority=1", "Invalid command flags"},
        {"-Priority=1", "Invalid command flags"},
        {"-ttl=5", "Invalid command flags"},
        /* flags in line order: the first problem decides */
        {"-prioirty=5 -priority=x", "Invalid command flags"},
        {"-priority=x -prioirty=5", "Invalid Priority"},
        {"-priority=1 -max-attempts=256 -priority=2", "Invalid Max Attempts"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_roundtrip(fd, f("add %s q %u %s 3 %s\r\nabc\r\n", id4(1), TTR, TTL, bad[i].flags),
                          f("-CLIENT-ERROR %s\r\n", bad[i].error));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* positional arguments are validated before any flag */
    systest_roundtrip(fd, "add bad q 1 1 0 -prioirty=5\r\n\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("add %s q 0 1 0 -prioirty=5\r\n\r\n", id4(1)), ERR("Invalid TTR"));

    /* flags may stand anywhere: before the size token, before the id */
    systest_roundtrip(fd, f("add %s fl %u %s -priority=3 3\r\nabc\r\n", id4(2), TTR, TTL), OK);
    systest_roundtrip(fd, f("add -priority=5 %s fl %u %s 3\r\ndef\r\n", id4(3), TTR, TTL), OK);
    systest_roundtrip(fd, f("add %s -priority=4 fl -max-fails=1 %u %s 3\r\nghi\r\n", id4(4), TTR,
                            TTL),
                      OK);
    /* and they take effect: priority 5, 4, 3 */
    systest_lease_now(fd, "fl", id4(3), "def");
    systest_lease_now(fd, "fl", id4(4), "ghi");
    systest_lease_now(fd, "fl", id4(2), "abc");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_duplicate)
{
    systest_start_srv();
    int fd = systest_conn();
    /* NEW */
    systest_add(fd, id4(1), "q", "one");
    systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));
    systest_add_error(fd, f("%s other %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));
    /* argument errors come before the duplicate check */
    systest_add_error(fd, f("%s q 0 %s 3", id4(1), TTL), ERR("Invalid TTR"));
    systest_add_error(fd, f("%s q %u %s 3 -prioirty=1", id4(1), TTR, TTL), ERR("Invalid command flags"));
    /* the original is untouched */
    systest_lease_now(fd, "q", id4(1), "one");
    /* LEASED */
    systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));
    /* COMPLETED */
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "ok"));
    /* FAILED */
    systest_add(fd, id4(2), "q", "two");
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id4(2)), OK);
    systest_add_error(fd, f("%s q %u %s 3", id4(2), TTR, TTL), ERR("Duplicate job"));
    /* the same id in another case is the same job */
    systest_add_error(fd, f("%s q %u %s 3", "0000000A-58CC-4372-A567-0E02B2C3D479", TTR, TTL), OK);
    systest_add_error(fd, f("%s q %u %s 3", "0000000a-58cc-4372-a567-0e02b2c3d479", TTR, TTL),
              ERR("Duplicate job"));
    /* after a delete the id is free again */
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_add(fd, id4(1), "q", "again");
    systest_lease_now(fd, "q", "0000000a-58cc-4372-a567-0e02b2c3d479", "abc");
    systest_lease_now(fd, "q", id4(1), "again");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_arg_count)
{
    systest_start_srv();
    int fd = systest_conn();
    /* too few: no data block is read, the data line is the next command */
    systest_roundtrip(fd, f("add %s q %u 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    /* too many */
    systest_roundtrip(fd, f("add %s q %u %s 9 3\r\nabc\r\n", id4(1), TTR, TTL),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "add\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("add %s\r\n", id4(1)), ERR("Invalid command args"));
    /* the data line may itself be a command: it runs */
    systest_roundtrip(fd, f("add %s q 3\r\ndelete %s\r\n", id4(1), id4(1)),
                      ERR("Invalid command args") NF);
    /* a bad flag does not make a wrong count any better */
    systest_roundtrip(fd, f("add %s q %u -priority=1 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_bad_size)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const bad[] = {"+1", "-1", "abc", "18446744073709551616", "1.0", "0x3",
                                      "99999999999999999999999", "3a"};
    /* no data block is read: "abc" comes back as an unknown command */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        systest_roundtrip(fd, f("add %s q %u %s %s\r\nabc\r\n", id4(1), TTR, TTL, bad[i]),
                          ERR("Invalid payload size") ERR("Unknown command"));
    /* the size is checked before the other arguments */
    systest_roundtrip(fd, "add bad q 0 0 +3\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_size_over_max)
{
    systest_start(&systest_srv, "--max-payload", "16", NULL);
    int fd = systest_conn();
    /* 17 bytes that look like commands are skipped, then one error */
    const char *skip = "x\r\nlease q 0\r\nabc"; /* 17 bytes */
    ck_assert_uint_eq(strlen(skip), 17);
    systest_roundtrip(fd, f("add %s q %u %s 17\r\n%s\r\n", id4(1), TTR, TTL, skip),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* with a bare LF terminator too */
    systest_roundtrip(fd, f("add %s q %u %s 17\n%s\n", id4(1), TTR, TTL, skip),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    /* the other arguments do not matter */
    systest_roundtrip(fd, f("add bad q 0 0 17\r\n%s\r\n", skip), ERR("Invalid payload size"));
    systest_sync(fd);
    /* skipped bytes not followed by a terminator: still one error, and the
     * rest is discarded through the next LF */
    systest_roundtrip(fd, f("add %s q %u %s 17\r\n%sXY delete %s\r\n", id4(1), TTR, TTL, skip,
                            id4(9)),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    /* 16 bytes are fine */
    systest_add(fd, id4(2), "q", "0123456789abcdef");
    systest_lease_now(fd, "q", id4(2), "0123456789abcdef");
    /* results are limited the same way */
    systest_roundtrip(fd, f("complete %s 17\r\n%s\r\n", id4(2), skip), ERR("Invalid result size"));
    systest_roundtrip(fd, f("fail %s 17\r\n%s\r\n", id4(2), skip), ERR("Invalid result size"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), TO);
    systest_roundtrip(fd, f("complete %s 16\r\n0123456789ABCDEF\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)),
                      systest_result_reply(id4(2), 1, "0123456789ABCDEF"));

    /* a large block, in pieces, is skipped without trouble */
    size_t big = 300000;
    char *junk = malloc(big);
    for (size_t i = 0; i < big; i++)
        junk[i] = (i % 50 == 49) ? '\n' : 'z';
    systest_sends(fd, f("add %s q %u %s %zu\r\n", id4(3), TTR, TTL, big));
    for (size_t off = 0; off < big; off += 70000)
        systest_send(fd, junk + off, big - off < 70000 ? big - off : 70000);
    systest_roundtrip(fd, "\r\n", ERR("Invalid payload size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);

    /* a client that leaves while its oversized block is being skipped */
    int gone = systest_conn();
    systest_sends(gone, f("add %s q %u %s %zu\r\n", id4(4), TTR, TTL, big));
    systest_send(gone, junk, 1000);
    close(gone);
    free(junk);
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_add_block_terminator)
{
    systest_start_srv();
    int fd = systest_conn();
    /* size 2, then "abcd\r\n": error, "cd\r\n" discarded, nothing stored */
    systest_roundtrip(fd, f("add %s q %u %s 2\r\nabcd\r\n", id4(1), TTR, TTL),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* a CR not followed by LF is no terminator: discard from the CR */
    systest_roundtrip(fd, f("add %s q %u %s 2\r\nab\rx\r\n", id4(1), TTR, TTL),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    /* the discarded rest may look like a command: it is not run */
    systest_roundtrip(fd, f("add %s q %u %s 2\r\nabXdelete %s\r\n", id4(1), TTR, TTL, id4(9)),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    /* size 0 and bytes where the terminator should be */
    systest_roundtrip(fd, f("add %s q %u %s 0\r\nxyz\r\n", id4(1), TTR, TTL),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);

    /* complete <id> 2\r\nabc\n: stores nothing and discards "c\n" */
    systest_add(fd, id4(2), "q", "job");
    systest_roundtrip(fd, f("complete %s 2\r\nabc\n", id4(2)), ERR("Invalid result size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("fail %s 2\r\nabc\r\n", id4(2)), ERR("Invalid result size"));
    systest_sync(fd);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), TO);
    systest_lease_now(fd, "q", id4(2), "job");
    /* a bare LF terminator is fine */
    systest_roundtrip(fd, f("complete %s 2\r\nab\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 1, "ab"));
    close(fd);
    systest_stop_srv();
}
END_TEST

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
    static const char *const names[] = {"ADD", "Add", "LEASE", "Delete", "RESULT", "Complete",
                                        "FAIL", "foo", "addx", "ad", "-add", "+OK"};
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
/* lease */

START_TEST(test_lease_immediate)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 1234, TTL, "payload", NULL);
    systest_roundtrip(fd, "lease q 1000\r\n", systest_lease_reply(id4(1), "q", 1234, "payload"));
    /* a leased job is not leased again */
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* the longest wait is accepted */
    systest_add(fd, id4(2), "q", "x");
    systest_roundtrip(fd, "lease q 86400000\r\n", systest_lease_reply(id4(2), "q", TTR, "x"));
    systest_roundtrip(fd, "lease q 00\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_wait_zero_empty)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "lease a b c 0\r\n", TO);
    systest_add(fd, id4(1), "other", "x");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_woken_by_add)
{
    systest_start_srv();
    int w = systest_conn(), p = systest_conn();
    systest_sends(w, "lease q " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(p, id1(1), "q", "wake");
    systest_expect_lease(w, id1(1), "q", "wake");
    /* parked on several names, woken by the second one */
    systest_sends(w, "lease x y z " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(p, id1(2), "q", "not for w");
    systest_add(p, id1(3), "y", "for w");
    systest_expect_lease(w, id1(3), "y", "for w");
    systest_expect_silence(w, 50);
    systest_lease_now(p, "q", id1(2), "not for w");
    close(w);
    close(p);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_timeout)
{
    systest_start_srv();
    int fd = systest_conn();
    if (systest_exact_timing()) {
        systest_sends(fd, "lease q 1000\r\n");
        systest_expect_silence(fd, 100);
        systest_expect(fd, TO);
    }
    systest_roundtrip(fd, "lease q 200\r\n", TO);
    systest_roundtrip(fd, "lease q r 150\r\n", TO);
    /* a leaser that timed out takes no later job */
    int p = systest_conn();
    systest_add(p, id4(1), "q", "later");
    systest_lease_now(p, "q", id4(1), "later");
    systest_expect_silence(fd, 50);
    close(p);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_multiple_names)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "a", "pa");
    systest_add(fd, id4(2), "b", "pb");
    const char *ra = systest_lease_reply(id4(1), "a", TTR, "pa");
    const char *rb = systest_lease_reply(id4(2), "b", TTR, "pb");
    systest_sends(fd, "lease a b 0\r\n");
    int first = expect_one_of(fd, ra, rb);
    systest_roundtrip(fd, "lease a b 0\r\n", first == 0 ? rb : ra);
    systest_roundtrip(fd, "lease a b 0\r\n", TO);
    /* only one listed name has a job */
    systest_add(fd, id4(3), "c", "pc");
    systest_roundtrip(fd, "lease a b c d 0\r\n", systest_lease_reply(id4(3), "c", TTR, "pc"));
    /* across names, each name keeps its own order */
    systest_add(fd, id4(4), "a", "a1");
    systest_add(fd, id4(5), "a", "a2");
    systest_add(fd, id4(6), "b", "b1");
    int got_a = 0, got_b = 0;
    for (int i = 0; i < 3; i++) {
        const char *next_a = got_a == 0 ? systest_lease_reply(id4(4), "a", TTR, "a1")
                                        : systest_lease_reply(id4(5), "a", TTR, "a2");
        const char *next_b = systest_lease_reply(id4(6), "b", TTR, "b1");
        if (got_b) {
            systest_roundtrip(fd, "lease b a 0\r\n", next_a);
            got_a++;
        } else if (got_a == 2) {
            systest_roundtrip(fd, "lease b a 0\r\n", next_b);
            got_b++;
        } else {
            systest_sends(fd, "lease b a 0\r\n");
            if (expect_one_of(fd, next_a, next_b) == 0)
                got_a++;
            else
                got_b++;
        }
    }
    systest_roundtrip(fd, "lease a b 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_name_twice)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "one");
    systest_roundtrip(fd, "lease q q 0\r\n", systest_lease_reply(id4(1), "q", TTR, "one"));
    systest_roundtrip(fd, "lease q q 0\r\n", TO);
    /* parked with a name twice: served once */
    int w = systest_conn();
    systest_sends(w, "lease q q q " PARK "\r\n");
    systest_expect_silence(w, 100);
    systest_add(fd, id4(2), "q", "two");
    systest_add(fd, id4(3), "q", "three");
    systest_expect_lease(w, id4(2), "q", "two");
    systest_expect_silence(w, 50);
    systest_lease_now(fd, "q", id4(3), "three");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_parked_fcfs)
{
    systest_start_srv();
    int w1 = systest_conn(), w2 = systest_conn(), w3 = systest_conn(), p = systest_conn();
    systest_sends(w1, "lease q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_sends(w2, "lease r q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_sends(w3, "lease q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    systest_add(p, id4(1), "q", "first");
    systest_expect_lease(w1, id4(1), "q", "first");
    systest_add(p, id4(2), "q", "second");
    systest_expect_lease(w2, id4(2), "q", "second");
    systest_add(p, id4(3), "q", "third");
    systest_expect_lease(w3, id4(3), "q", "third");
    systest_expect_silence(w1, 30);
    systest_expect_silence(w2, 0);
    systest_expect_silence(w3, 0);
    close(w1);
    close(w2);
    close(w3);
    close(p);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_priority_order)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "j1", "-priority=1");
    systest_add_full(fd, id4(2), "q", TTR, TTL, "j2", "-priority=5");
    systest_add_full(fd, id4(3), "q", TTR, TTL, "j3", "-priority=-3");
    systest_add_full(fd, id4(4), "q", TTR, TTL, "j4", "-priority=+5");
    systest_add_full(fd, id4(5), "q", TTR, TTL, "j5", NULL);
    systest_add_full(fd, id4(6), "q", TTR, TTL, "j6", "-priority=2147483647");
    systest_add_full(fd, id4(7), "q", TTR, TTL, "j7", "-priority=-2147483648");
    systest_add_full(fd, id4(8), "q", TTR, TTL, "j8", "-priority=0");
    static const unsigned order[] = {6, 2, 4, 1, 5, 8, 3, 7};
    for (size_t i = 0; i < 8; i++)
        systest_lease_now(fd, "q", id4(order[i]), f("j%u", order[i]));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_fifo)
{
    systest_start_srv();
    int fd = systest_conn();
    for (unsigned i = 1; i <= 20; i++)
        systest_add(fd, (i % 2) ? id1(i) : id4(i), "q", f("p%u", i));
    for (unsigned i = 1; i <= 20; i++)
        systest_lease_now(fd, "q", (i % 2) ? id1(i) : id4(i), f("p%u", i));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, "lease a*b 0\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, "lease q r*s 0\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, f("lease %s 0\r\n", systest_name_of(256, 'n')), ERR("Invalid Name"));
    systest_roundtrip(fd, "lease a*b 86400001\r\n", ERR("Invalid Name"));
    systest_roundtrip(fd, "lease q 86400001\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q abc\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q -1\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q +1\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease q 18446744073709551616\r\n", ERR("Invalid wait timeout"));
    systest_roundtrip(fd, "lease 100\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease q\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "lease 0 0\r\n", TO); /* "0" is a valid name */
    systest_roundtrip(fd, f("lease %s 0\r\n", systest_name_of(255, 'n')), TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_disconnect_while_parked)
{
    systest_start_srv();
    int w = systest_conn();
    systest_sends(w, "lease q " PARK "\r\n");
    int w2 = systest_conn();
    systest_sends(w2, "lease r q " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    close(w);
    close(w2);
    systest_sleep_ms(100 * systest_slow());
    int fd = systest_conn();
    /* with one attempt allowed, a job taken by a ghost could not be leased */
    systest_add_full(fd, id4(1), "q", TTR, TTL, "x", "-max-attempts=1");
    systest_add_full(fd, id4(2), "r", TTR, TTL, "y", "-max-attempts=1");
    systest_lease_now(fd, "q", id4(1), "x");
    systest_lease_now(fd, "r", id4(2), "y");
    /* a live parked leaser after the dead ones still works */
    int w3 = systest_conn();
    systest_sends(w3, "lease q " PARK "\r\n");
    systest_expect_silence(w3, 100);
    systest_add(fd, id4(3), "q", "z");
    systest_expect_lease(w3, id4(3), "q", "z");
    close(w3);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_lease_pipeline_held)
{
    systest_start_srv();
    int w = systest_conn(), p = systest_conn();
    /* the delete must run after the lease is answered: then it finds the job */
    systest_sends(w, f("lease q " PARK "\r\ndelete %s\r\nlease q 0\r\n", id4(1)));
    systest_expect_silence(w, 100);
    /* other connections are not blocked */
    systest_roundtrip(p, "lease other 0\r\n", TO);
    systest_add(p, id4(1), "q", "held");
    systest_expect_lease(w, id4(1), "q", "held");
    systest_expect(w, OK);
    systest_expect(w, TO);
    close(w);
    close(p);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* TTR */

START_TEST(test_ttr_requeue)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "again", NULL);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "again"));
    /* woken when the TTR ends and the job is ready again */
    systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(1), "q", 100, "again"));
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    /* a completed job is not re-queued by its old TTR */
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "ok"));

    if (systest_exact_timing()) {
        /* not before the TTR ends */
        systest_add_full(fd, id4(2), "r", 1000, TTL, "slow", NULL);
        systest_roundtrip(fd, "lease r 0\r\n", systest_lease_reply(id4(2), "r", 1000, "slow"));
        systest_sleep_ms(100);
        systest_roundtrip(fd, "lease r 0\r\n", TO);
        systest_roundtrip(fd, "lease r 3000\r\n", systest_lease_reply(id4(2), "r", 1000, "slow"));
    }
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_max_attempts)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "job", "-max-attempts=2");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "job"));
    systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(1), "q", 100, "job"));
    /* the second TTR expiry fails it, with an empty result */
    systest_roundtrip(fd, f("result %s " PARK "\r\n", id4(1)),
                      f("+OK 1\r\n%s 0 0\r\n\r\n", id4(1)));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    systest_add_error(fd, f("%s q %u %s 3", id4(1), TTR, TTL), ERR("Duplicate job"));

    /* max-attempts 1: the first expiry is final */
    systest_add_full(fd, id4(2), "q", 100, TTL, "one", "-max-attempts=1");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(2), "q", 100, "one"));
    systest_roundtrip(fd, f("result %s " PARK "\r\n", id4(2)), systest_result_reply(id4(2), 0, ""));

    /* max-attempts 0: unlimited */
    systest_add_full(fd, id4(3), "q", 100, TTL, "inf", "-max-attempts=0");
    for (int i = 0; i < 4; i++)
        systest_roundtrip(fd, "lease q " PARK "\r\n", systest_lease_reply(id4(3), "q", 100, "inf"));
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, ""));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_keeps_place)
{
    systest_start_srv();
    int fd = systest_conn();
    /* two attempts: its second lease cannot come back and overtake j2 */
    systest_add_full(fd, id4(1), "q", 100, TTL, "j1", "-max-attempts=2");
    systest_add(fd, id4(2), "q", "j2");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "j1"));
    systest_add(fd, id4(3), "q", "j3");
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "j1"));
    systest_lease_now(fd, "q", id4(2), "j2");
    systest_lease_now(fd, "q", id4(3), "j3");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttr_late_result)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    systest_add_full(fd, id4(1), "q", 100, TTL, "late", NULL);
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(1), "q", 100, "late"));
    systest_sleep_past(100);
    /* PENDING again; the late worker's result still counts */
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(1)), OK);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "late"));
    /* a leased job deleted before its TTR ends: the TTR does not bring it back */
    systest_add_full(fd, id4(2), "q", 100, TTL, "gone", NULL);
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(2), "q", 100, "gone"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_sleep_past(100);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), NF);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* TTL */

START_TEST(test_ttl_expires)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, "200", "new", NULL);     /* NEW */
    systest_add_full(fd, id4(2), "l", TTR, "200", "leased", NULL);  /* LEASED */
    systest_add_full(fd, id4(3), "c", TTR, "200", "done", NULL);    /* COMPLETED */
    systest_add_full(fd, id4(4), "f", TTR, "200", "failed", NULL);  /* FAILED */
    systest_lease_now(fd, "l", id4(2), "leased");
    systest_roundtrip(fd, f("complete %s 1\r\nc\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("fail %s 1\r\nf\r\n", id4(4)), OK);
    /* a waiting result learns of the expiry */
    systest_roundtrip(w, f("result %s " PARK "\r\n", id4(1)), NF);
    systest_sleep_past(200);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), NF);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), NF);
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), NF);
    /* the ids are free again */
    for (unsigned i = 1; i <= 4; i++)
        systest_add(fd, id4(i), "q", "new");
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttl_leased_expiring)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, "300", "x", NULL);
    systest_lease_now(fd, "q", id4(1), "x");
    if (systest_exact_timing())
        systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_sleep_past(300);
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* a job whose TTR outlives its TTL: the TTL wins */
    systest_add_full(fd, id4(2), "q", 100, "300", "y", NULL);
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(2), "q", 100, "y"));
    systest_sleep_past(300);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), NF);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_ttl_not_before)
{
    if (!systest_exact_timing())
        return;
    systest_start_srv();
    int fd = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, "3000", "x", NULL);
    systest_sleep_ms(100);
    systest_lease_now(fd, "q", id4(1), "x");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(1)), OK);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* complete and fail */

START_TEST(test_complete_states)
{
    systest_start_srv();
    int fd = systest_conn(), other = systest_conn();
    /* NEW, never leased */
    systest_add(fd, id4(1), "q", "a");
    systest_roundtrip(fd, f("complete %s 3\r\nabc\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "abc"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* LEASED, completed from another connection */
    systest_add(fd, id1(2), "q", "b");
    systest_lease_now(fd, "q", id1(2), "b");
    systest_roundtrip(other, f("complete %s 5\r\nother\r\n", id1(2)), OK);
    /* the late leaser: first result wins */
    systest_roundtrip(fd, f("complete %s 4\r\nmine\r\n", id1(2)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("fail %s 4\r\nmine\r\n", id1(2)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id1(2)), systest_result_reply(id1(2), 1, "other"));
    /* empty and binary results */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), f("+OK 1\r\n%s 1 0\r\n\r\n", id4(3)));
    systest_add(fd, id4(4), "q", "d");
    systest_sends(fd, f("complete %s 6\r\n", id4(4)));
    systest_send(fd, "\r\n\0\n\r\x01\r\n", 8);
    systest_expect(fd, OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), f("+OK 1\r\n%s 1 6\r\n", id4(4)));
    systest_expect_bytes(fd, "\r\n\0\n\r\x01\r\n", 8);
    /* twice */
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(4)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), f("+OK 1\r\n%s 1 6\r\n", id4(4)));
    systest_expect_bytes(fd, "\r\n\0\n\r\x01\r\n", 8);
    close(other);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_complete_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, f("complete %s 3\r\nabc\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("fail %s 3\r\nabc\r\n", id4(1)), NF);
    systest_roundtrip(fd, "complete bad 3\r\nabc\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "fail bad 3\r\nabc\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "complete 00000000-0000-0000-0000-000000000000 0\r\n\r\n",
                      ERR("Invalid ID"));
    static const char *const bad[] = {"+1", "-1", "abc", "18446744073709551616", "1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        systest_roundtrip(fd, f("complete %s %s\r\nabc\r\n", id4(1), bad[i]),
                          ERR("Invalid result size") ERR("Unknown command"));
        systest_roundtrip(fd, f("fail %s %s\r\nabc\r\n", id4(1), bad[i]),
                          ERR("Invalid result size") ERR("Unknown command"));
    }
    /* the size comes first, then the id */
    systest_roundtrip(fd, "complete bad +1\r\nabc\r\n",
                      ERR("Invalid result size") ERR("Unknown command"));
    systest_roundtrip(fd, f("complete %s\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "complete\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("complete %s 1 2\r\nabc\r\n", id4(1)),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, f("fail %s q 1\r\nabc\r\n", id4(1)),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_final)
{
    systest_start_srv();
    int fd = systest_conn();
    /* max-fails 0 (the default): the first fail is final */
    systest_add(fd, id4(1), "q", "a");
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("fail %s 4\r\noops\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "oops"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(1)), ERR("Duplicate result"));
    /* explicitly 0, on a NEW job */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "b", "-max-fails=0");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 0, ""));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* complete, then fail */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(3)), ERR("Duplicate result"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, "ok"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_retry)
{
    systest_start_srv();
    int fd = systest_conn(), waiter = systest_conn();
    systest_add_full(fd, id4(1), "q", TTR, TTL, "job", "-max-fails=2");
    systest_add(fd, id4(2), "q", "next");
    systest_lease_now(fd, "q", id4(1), "job");
    systest_sends(waiter, f("result %s " PARK "\r\n", id4(1)));
    systest_expect_silence(waiter, 100);
    /* the first fail retries: no result, leasable again, at its old place */
    systest_roundtrip(fd, f("fail %s 2\r\ne1\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_expect_silence(waiter, 50);
    systest_lease_now(fd, "q", id4(1), "job");
    /* the second is final, with the second result */
    systest_roundtrip(fd, f("fail %s 2\r\ne2\r\n", id4(1)), OK);
    systest_expect(waiter, systest_result_reply(id4(1), 0, "e2"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "e2"));
    systest_lease_now(fd, "q", id4(2), "next");
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* a retry on a NEW job, then complete wins */
    systest_add_full(fd, id4(3), "q", TTR, TTL, "n", "-max-fails=3");
    systest_roundtrip(fd, f("fail %s 1\r\nx\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\ny\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), systest_result_reply(id4(3), 1, "y"));
    close(waiter);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_fail_attempts_exhausted)
{
    systest_start_srv();
    int fd = systest_conn();
    /* fails left but no attempts: the fail is final */
    systest_add_full(fd, id4(1), "q", TTR, TTL, "a", "-max-fails=5 -max-attempts=1");
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("fail %s 3\r\nend\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 0, "end"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* two attempts: one retry */
    systest_add_full(fd, id4(2), "q", TTR, TTL, "b", "-max-attempts=2 -max-fails=5");
    systest_lease_now(fd, "q", id4(2), "b");
    systest_roundtrip(fd, f("fail %s 1\r\n1\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), TO);
    systest_lease_now(fd, "q", id4(2), "b");
    systest_roundtrip(fd, f("fail %s 1\r\n2\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(2)), systest_result_reply(id4(2), 0, "2"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* result */

START_TEST(test_result_basic)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("result %s 1000\r\n", id4(1)), NF);
    systest_add(fd, id4(1), "q", "a");
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_roundtrip(fd, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    /* a done job answers at once, with any wait, any number of times */
    systest_roundtrip(fd, f("result %s 86400000\r\n", id4(1)),
                      systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(fd, f("result %s 5\r\n", id4(1)), systest_result_reply(id4(1), 1, "done"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_woken)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    systest_add(fd, id1(1), "q", "a");
    systest_sends(w, f("result %s " PARK "\r\n", id1(1)));
    systest_expect_silence(w, 100);
    systest_lease_now(fd, "q", id1(1), "a");
    systest_expect_silence(w, 50);
    systest_roundtrip(fd, f("complete %s 3\r\nres\r\n", id1(1)), OK);
    systest_expect(w, systest_result_reply(id1(1), 1, "res"));
    /* woken by a final fail too */
    systest_add(fd, id1(2), "q", "b");
    systest_sends(w, f("result %s " PARK "\r\n", id1(2)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id1(2)), OK);
    systest_expect(w, systest_result_reply(id1(2), 0, "bad"));
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_two_waiters)
{
    systest_start_srv();
    int w1 = systest_conn(), w2 = systest_conn(), w3 = systest_conn(), fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_sends(w1, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(w2, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(w3, f("result %s 300\r\n", id4(1)));
    systest_expect(w3, TO); /* the short one times out; the others keep waiting */
    systest_expect_silence(w1, 50);
    systest_expect_silence(w2, 0);
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_expect(w1, systest_result_reply(id4(1), 1, "ok"));
    systest_expect(w2, systest_result_reply(id4(1), 1, "ok"));
    systest_expect_silence(w3, 30);
    close(w1);
    close(w2);
    close(w3);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_job_vanishes)
{
    systest_start_srv();
    int w1 = systest_conn(), w2 = systest_conn(), fd = systest_conn();
    /* deleted while waited on */
    systest_add(fd, id4(1), "q", "a");
    systest_sends(w1, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(w2, f("result %s " PARK "\r\n", id4(1)));
    systest_expect_silence(w1, 100);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_expect(w1, NF);
    systest_expect(w2, NF);
    /* its TTL ends while waited on */
    systest_add_full(fd, id4(2), "q", TTR, "300", "b", NULL);
    systest_roundtrip(w1, f("result %s " PARK "\r\n", id4(2)), NF);
    /* a leased one */
    systest_add_full(fd, id4(3), "q", TTR, "300", "c", NULL);
    systest_lease_now(fd, "q", id4(3), "c");
    systest_roundtrip(w2, f("result %s " PARK "\r\n", id4(3)), NF);
    close(w1);
    close(w2);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_timeout)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    if (systest_exact_timing()) {
        systest_sends(fd, f("result %s 1000\r\n", id4(1)));
        systest_expect_silence(fd, 100);
        systest_expect(fd, TO);
    }
    systest_roundtrip(fd, f("result %s 200\r\n", id4(1)), TO);
    /* the job is still there */
    systest_lease_now(fd, "q", id4(1), "a");
    /* a timed-out waiter is not answered later */
    systest_roundtrip(fd, f("result %s 100\r\n", id4(1)), TO);
    systest_roundtrip(fd, f("complete %s 1\r\nx\r\n", id4(1)), OK);
    systest_expect_silence(fd, 50);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_roundtrip(fd, "result bad 0\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "result bad 86400001\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "result 00000000-0000-0000-0000-000000000000 0\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, f("result %s 86400001\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("result %s abc\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("result %s +1\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("result %s -1\r\n", id4(1)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("result %s 86400001\r\n", id4(9)), ERR("Invalid wait timeout"));
    systest_roundtrip(fd, f("result %s\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, f("result %s 0 0\r\n", id4(1)), ERR("Invalid command args"));
    systest_roundtrip(fd, "result\r\n", ERR("Invalid command args"));
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_result_pipeline_held)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    systest_sends(w, f("result %s " PARK "\r\ndelete %s\r\n", id4(1), id4(1)));
    systest_expect_silence(w, 100);
    /* the delete has not run yet */
    systest_lease_now(fd, "q", id4(1), "a");
    systest_roundtrip(fd, f("complete %s 1\r\nr\r\n", id4(1)), OK);
    systest_expect(w, systest_result_reply(id4(1), 1, "r"));
    systest_expect(w, OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* delete */

START_TEST(test_delete_states)
{
    systest_start_srv();
    int fd = systest_conn();
    /* NEW */
    systest_add(fd, id4(1), "q", "a");
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* LEASED */
    systest_add(fd, id4(2), "q", "b");
    systest_lease_now(fd, "q", id4(2), "b");
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(2)), NF);
    /* COMPLETED */
    systest_add(fd, id4(3), "q", "c");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), NF);
    /* FAILED */
    systest_add(fd, id4(4), "q", "d");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), NF);
    /* PENDING after a retried fail */
    systest_add_full(fd, id4(5), "q", TTR, TTL, "e", "-max-fails=2");
    systest_lease_now(fd, "q", id4(5), "e");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(5)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* in any case */
    systest_add(fd, id4(6), "q", "f");
    systest_roundtrip(fd, "delete 00000006-58CC-4372-A567-0E02B2C3D479\r\n", OK);
    /* errors */
    systest_roundtrip(fd, "delete bad\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "delete 00000000-0000-0000-0000-000000000000\r\n", ERR("Invalid ID"));
    systest_roundtrip(fd, "delete\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("delete %s %s\r\n", id4(1), id4(2)), ERR("Invalid command args"));
    /* the queue works afterwards */
    systest_add(fd, id4(7), "q", "g");
    systest_lease_now(fd, "q", id4(7), "g");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* robustness: waiters that vanish, many clients, stopping with state */

START_TEST(test_robust_waiters_vanish)
{
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "a");
    /* result waiters that disconnect, then the job gets its result */
    for (int i = 0; i < 3; i++) {
        int w = systest_conn();
        systest_sends(w, f("result %s " PARK "\r\n", id4(1)));
        systest_sleep_ms(50 * systest_slow());
        close(w);
    }
    int w = systest_conn();
    systest_sends(w, f("result %s " PARK "\r\n", id4(1)));
    systest_expect_silence(w, 100);
    systest_roundtrip(fd, f("complete %s 1\r\nr\r\n", id4(1)), OK);
    systest_expect(w, systest_result_reply(id4(1), 1, "r"));
    close(w);
    /* a result waiter that disconnects, then the job is deleted */
    systest_add(fd, id4(2), "q", "b");
    w = systest_conn();
    systest_sends(w, f("result %s " PARK "\r\n", id4(2)));
    systest_sleep_ms(50 * systest_slow());
    close(w);
    systest_sleep_ms(50 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    /* a parked leaser and a result waiter whose waits end after they left */
    w = systest_conn();
    systest_sends(w, "lease none 200\r\n");
    int w2 = systest_conn();
    systest_add(fd, id4(3), "q", "c");
    systest_sends(w2, f("result %s 200\r\n", id4(3)));
    systest_sleep_ms(50 * systest_slow());
    close(w);
    close(w2);
    systest_sleep_past(200);
    systest_lease_now(fd, "q", id4(3), "c");
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_robust_many_leasers)
{
    systest_start_srv();
    enum { N = 100 };
    int w[N];
    for (int i = 0; i < N; i++) {
        w[i] = systest_conn();
        systest_sends(w[i], "lease many " PARK "\r\n");
    }
    systest_sleep_ms(200 * systest_slow());
    int fd = systest_conn();
    struct sb req = {0}, exp = {0};
    for (unsigned i = 0; i < N; i++) {
        sb_add(&req, f("add %s many %u %s 4\r\n%04u\r\n", id1(i + 1), TTR, TTL, i));
        sb_add(&exp, OK);
    }
    systest_send(fd, req.p, req.n);
    systest_expect_bytes(fd, exp.p, exp.n);
    /* every leaser gets exactly one job, and every job goes to one leaser
     * (the order among clients parked within microseconds is not checked
     * here; test_lease_parked_fcfs does that with clear gaps) */
    bool seen[N] = {false};
    size_t len = strlen(systest_lease_reply(id1(1), "many", TTR, "0000"));
    for (unsigned i = 0; i < N; i++) {
        char got[256];
        systest_read_n(w[i], got, len);
        unsigned k = (unsigned)atoi(got + len - 6);
        ck_assert_uint_lt(k, N);
        ck_assert_msg(!seen[k], "job %u leased twice", k);
        seen[k] = true;
        ck_assert_str_eq(got, systest_lease_reply(id1(k + 1), "many", TTR, f("%04u", k)));
        systest_expect_silence(w[i], 0);
        close(w[i]);
    }
    free(req.p);
    free(exp.p);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A large payload goes to the output by reference: it must stay intact
 * while a slow reader's lease reply waits, even after the job is deleted
 * and its memory could be reused by a new job of the same size. */
START_TEST(test_robust_large_payload_outlives_job)
{
    enum { LEN = 1048576 };
    static char payload[LEN], other[LEN], got[LEN + 256];
    for (size_t i = 0; i < LEN; i++) {
        payload[i] = (char)('a' + i % 26);
        other[i] = (char)('0' + i % 10);
    }
    systest_start_srv();
    int fd = systest_conn();
    const char *id = id4(1);
    systest_sends(fd, f("add %s big 60000 60000 %d\r\n", id, LEN));
    systest_send(fd, payload, LEN);
    systest_roundtrip(fd, "\r\n", OK);

    /* A worker with a small receive buffer: most of the reply stays queued
     * in the server. */
    int w = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(w, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)systest_srv.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(w, (struct sockaddr *)&sa, sizeof sa), 0);
    systest_sends(w, "lease big 0\r\n");
    systest_sleep_ms(100);

    systest_roundtrip(fd, f("delete %s\r\n", id), OK);
    systest_sends(fd, f("add %s big 60000 60000 %d\r\n", id4(2), LEN));
    systest_send(fd, other, LEN);
    systest_roundtrip(fd, "\r\n", OK);

    const char *head = f("+OK 1\r\n%s big 60000 %d\r\n", id, LEN);
    size_t hlen = strlen(head);
    systest_read_n(w, got, hlen + LEN + 2);
    ck_assert_mem_eq(got, head, hlen);
    ck_assert_msg(memcmp(got + hlen, payload, LEN) == 0, "leased payload changed");
    ck_assert_mem_eq(got + hlen + LEN, "\r\n", 2);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_robust_stop_with_state)
{
    /* SIGTERM with jobs in every state, parked clients and half-sent input:
     * the server exits 0 (under valgrind: without leaks or errors) */
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "q", "new");
    systest_add(fd, id4(2), "q", "leased");
    systest_add_full(fd, id4(3), "q", 100, TTL, "pending", NULL);
    systest_add(fd, id4(4), "r", "completed");
    systest_add(fd, id4(5), "r", "failed");
    systest_add_full(fd, id4(6), "r", TTR, TTL, "retry", "-max-fails=3");
    systest_lease_now(fd, "q", id4(1), "new");
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(2), "q", TTR, "leased"));
    systest_roundtrip(fd, "lease q 0\r\n", systest_lease_reply(id4(3), "q", 100, "pending"));
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("fail %s 2\r\nno\r\n", id4(6)), OK);
    systest_sleep_past(100);
    int lw = systest_conn(), rw = systest_conn(), half = systest_conn(), skip;
    systest_sends(lw, "lease empty " PARK "\r\n");
    systest_sends(rw, f("result %s " PARK "\r\n", id4(1)));
    systest_sends(half, f("add %s q %u %s 100\r\nabc", id4(7), TTR, TTL));
    skip = systest_conn();
    systest_sends(skip, "add bad q");
    systest_sleep_ms(100 * systest_slow());
    systest_stop_srv();
    close(lw);
    close(rw);
    close(half);
    close(skip);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* command line */

/* Start a server with exactly these arguments and read its port. */
static void
start_listening(const char *const *args)
{
    systest_start_argv(&systest_srv, args, NULL);
    ck_assert_int_ne(systest_srv.port, 9922); /* the flag was not ignored */
}

START_TEST(test_cli_version_help)
{
    struct systest_proc p;
    const char *expected = "workq-server " PACKAGE_VERSION "\n";
    static const char *const v1[] = {"-V", NULL}, *const v2[] = {"--version", NULL},
                             *const v3[] = {"-version", NULL};
    const char *const *versions[] = {v1, v2, v3};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(systest_proc_run(&p, versions[i]), 0);
        ck_assert_str_eq(p.out.p, expected);
        systest_proc_free(&p);
    }
    static const char *const h1[] = {"-h", NULL}, *const h2[] = {"--help", NULL},
                             *const h3[] = {"-help", NULL};
    const char *const *helps[] = {h1, h2, h3};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(systest_proc_run(&p, helps[i]), 0);
        ck_assert_msg(strstr(p.out.p, "Usage") != NULL && strstr(p.out.p, "listen") != NULL,
                      "no usage text: %s", p.out.p);
        systest_proc_free(&p);
    }
}
END_TEST

START_TEST(test_cli_bad_options)
{
    struct systest_proc p;
    static const char *const bad[][4] = {
        {"--bogus", NULL},
        {"-x", NULL},
        {"stray", NULL},
        {"-listen", NULL},
        {"-listen", "nonsense", NULL},
        {"-listen", "127.0.0.1:65536", NULL},
        {"-listen", "127.0.0.1:", NULL},
        {"--max-line", "63", NULL},
        {"--max-line", "abc", NULL},
        {"--max-payload", "-1", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = systest_proc_run(&p, bad[i]);
        ck_assert_msg(rc == 64, "%s %s: exit %d, want 64", bad[i][0], bad[i][1] ? bad[i][1] : "",
                      rc);
        ck_assert_msg(p.err.p[0] != '\0', "%s: no message on stderr", bad[i][0]);
        systest_proc_free(&p);
    }
}
END_TEST

START_TEST(test_cli_cmdlog)
{
    char dir[] = "/tmp/wq-cli-XXXXXX", eq[64], rm[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(eq, sizeof eq, "--cmdlog-path=%s", dir);
    /* Workq's flags in every spelling start a server that logs to dir. */
    const char *const forms[][14] = {
        {"-listen=127.0.0.1:0", "-cmdlog-path", dir, NULL},
        {"-listen=127.0.0.1:0", eq, "-cmdlog-sync=always", NULL},
        {"-listen=127.0.0.1:0", "-cmdlog-path", dir, "-cmdlog-seg-size", "1024", "-cmdlog-sync",
         "os", "-cmdlog-sync-int", "10", "-cmdlog-clean-int", "10", NULL},
        {"-listen=127.0.0.1:0", "--cmdlog-path", dir, "--cmdlog-sync", "interval",
         "--cmdlog-sync-int=0", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        start_listening(forms[i]);
        int fd = systest_conn();
        systest_add(fd, id4((unsigned)i + 1), "q", "x");
        systest_lease_now(fd, "q", id4((unsigned)i + 1), "x");
        close(fd);
        systest_stop_srv();
    }
    static const char *const bad[][3] = {
        {"-cmdlog-sync", "sometimes", NULL},
        {"-cmdlog-seg-size", "0", NULL},
        {"-cmdlog-sync-int", "x", NULL},
        {"-cmdlog-clean-int", "-5", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = systest_run_argv(bad[i], NULL);
        ck_assert_msg(rc == 64, "%s %s: exit %d, want 64", bad[i][0], bad[i][1], rc);
    }
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(test_cli_listen_forms)
{
    static const char *const forms[][4] = {
        {"-listen", "127.0.0.1:0", NULL},
        {"--listen", "127.0.0.1:0", NULL},
        {"-listen=127.0.0.1:0", NULL},
        {"--listen=127.0.0.1:0", NULL},
        {"-listen", "127.0.0.1:0", "-max-line=100", NULL},
        {"--max-payload", "10", "--listen=127.0.0.1:0", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        start_listening(forms[i]);
        int fd = systest_conn();
        systest_add(fd, id4((unsigned)i + 1), "q", "x");
        systest_lease_now(fd, "q", id4((unsigned)i + 1), "x");
        close(fd);
        systest_stop_srv();
    }
    /* a later -listen overrides the one systest_start passes */
    systest_start(&systest_srv, "-listen", "127.0.0.1:0", "--max-line=64", NULL);
    int fd = systest_conn();
    systest_sync(fd);
    systest_sends(fd, systest_padded_line(65, "x"));
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cli_cannot_bind)
{
    systest_start_srv();
    const char *addr = f("127.0.0.1:%d", systest_srv.port);
    const char *const args[] = {"-listen", addr, NULL};
    ck_assert_int_eq(systest_run_argv(args, NULL), 69);
    /* the first server is unaffected */
    int fd = systest_conn();
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
server_suite(void)
{
    const struct systest_group groups[] = {
        {"add",
         {test_add_success, test_add_invalid_id, test_add_invalid_name, test_add_invalid_ttr_ttl,
          test_add_flag_values, test_add_flag_keys, test_add_duplicate, test_add_arg_count,
          test_add_bad_size, test_add_size_over_max, test_add_block_terminator, NULL}},
        {"framing",
         {test_framing_lf_only, test_framing_pipelining, test_framing_split_every_byte,
          test_framing_split_terminator, test_framing_blank_lines, test_framing_spaces,
          test_framing_tabs_and_cr, test_framing_unknown_commands,
          test_framing_flags_on_plain_commands, test_framing_line_too_long, test_framing_eof,
          test_framing_disconnect_mid_payload, NULL}},
        {"lease",
         {test_lease_immediate, test_lease_wait_zero_empty, test_lease_woken_by_add,
          test_lease_timeout, test_lease_multiple_names, test_lease_name_twice,
          test_lease_parked_fcfs, test_lease_priority_order, test_lease_fifo, test_lease_errors,
          test_lease_disconnect_while_parked, test_lease_pipeline_held, NULL}},
        {"ttr", {test_ttr_requeue, test_ttr_max_attempts, test_ttr_keeps_place,
                 test_ttr_late_result, NULL}},
        {"ttl", {test_ttl_expires, test_ttl_leased_expiring, test_ttl_not_before, NULL}},
        {"complete", {test_complete_states, test_complete_errors, NULL}},
        {"fail", {test_fail_final, test_fail_retry, test_fail_attempts_exhausted, NULL}},
        {"result",
         {test_result_basic, test_result_woken, test_result_two_waiters, test_result_job_vanishes,
          test_result_timeout, test_result_errors, test_result_pipeline_held, NULL}},
        {"delete", {test_delete_states, NULL}},
        {"robustness",
         {test_robust_waiters_vanish, test_robust_many_leasers, test_robust_stop_with_state,
          test_robust_large_payload_outlives_job, NULL}},
        {"cli",
         {test_cli_version_help, test_cli_bad_options, test_cli_cmdlog, test_cli_listen_forms,
          test_cli_cannot_bind, NULL}},
    };
    return systest_suite("server", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(server_suite());
}
