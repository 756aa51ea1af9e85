/* sys_jobs.c - system tests of a job's life from the client's side: add,
 * schedule, run, result and delete, and a job's TTL; the real workq-server
 * over TCP, byte-exact against doc/protocol-reference.md sections 1-4.  Scheduled
 * times lie 600-1500 ms ahead (scaled); times on the wire are UTC, and the
 * server's "now" is compared with the test's clock within seconds.
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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TTR     SYSTEST_TTR
#define TTL     SYSTEST_TTL
#define TTL_MAX "18446744073709551615"
#define PARK    "60000" /* wait of a lease/result/run that must be woken */
#define HOUR_MS 3600000LL

/* Fixed texts for tables (f()'s ring would not outlive a table). */
#define ID1   "00000001-58cc-4372-a567-0e02b2c3d479" /* id4(1) */
#define TTRS  "60000"                                /* TTR */
#define LATER "2999-01-01T00:00:00Z"

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
    systest_roundtrip(
        fd, f("add 6BA7B810-9DAD-11D1-80B4-00C04FD430C8 up %u %s 2\r\nUP\r\n", TTR, TTL), OK);
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
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8x", /* trailing garbage */
        "6ba7b810-9dad-11d1-80b4-00c04fd430c",   /* one digit short */
        "6ba7b810-9dad-11d1-80b4-00c04fd430g8",  /* not hex */
        "6ba7b810-9dad11d1-80b4-00c04fd430c8a",  /* dash misplaced */
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
    static const char *const bad_ttr[] = {
        "0", "86400001", "+1", "abc", "-1", "1.5", "000", "18446744073709551616", "1e3"};
    for (size_t i = 0; i < sizeof bad_ttr / sizeof bad_ttr[0]; i++)
        systest_add_error(fd, f("%s q %s %s 3", id4(1), bad_ttr[i], TTL), ERR("Invalid TTR"));
    /* ttr before ttl and flags */
    systest_add_error(fd, f("%s q 0 0 3 -priority=x", id4(1)), ERR("Invalid TTR"));

    static const char *const bad_ttl[] = {"0",  "18446744073709551616", "+1", "abc",
                                          "-5", "99999999999999999999"};
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
        "-priority=-2147483648", "-priority=2147483647", "-priority=+5",
        "-priority=0",           "-priority=-0",         "-priority=007",
        "-max-attempts=0",       "-max-attempts=255",    "-max-fails=0",
        "-max-fails=255",        "-max-attempts=0255",   "-priority=1 -max-attempts=2 -max-fails=3",
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
    systest_roundtrip(
        fd, f("add %s -priority=4 fl -max-fails=1 %u %s 3\r\nghi\r\n", id4(4), TTR, TTL), OK);
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
    systest_add_error(fd, f("%s q %u %s 3 -prioirty=1", id4(1), TTR, TTL),
                      ERR("Invalid command flags"));
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
    static const char *const bad[] = {
        "+1", "-1", "abc", "18446744073709551616", "1.0", "0x3", "99999999999999999999999", "3a"};
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
    systest_roundtrip(fd,
                      f("add %s q %u %s 17\r\n%sXY delete %s\r\n", id4(1), TTR, TTL, skip, id4(9)),
                      ERR("Invalid payload size"));
    systest_sync(fd);
    /* 16 bytes are fine */
    systest_add(fd, id4(2), "q", "0123456789abcdef");
    systest_lease_now(fd, "q", id4(2), "0123456789abcdef");
    /* results are limited the same way */
    systest_roundtrip(fd, f("complete %s 17\r\n%s\r\n", id4(2), skip), ERR("Invalid payload size"));
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
    systest_roundtrip(fd, f("complete %s 2\r\nabc\n", id4(2)), ERR("Invalid payload size"));
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

/* One schedule with a 3-byte payload: exactly one reply, the given one. */
static void
sched_error(int fd, const char *args, const char *reply)
{
    systest_roundtrip(fd, f("schedule %s\r\nabc\r\n", args), reply);
}

/* Send a run; the reply is for the caller to read. */
static void
run_send(int fd, const char *id, const char *name, unsigned ttr, const char *wait,
         const char *payload, const char *flags)
{
    systest_sends(fd, f("run %s %s %u %s %zu%s%s\r\n%s\r\n", id, name, ttr, wait, strlen(payload),
                        flags != NULL ? " " : "", flags != NULL ? flags : "", payload));
}

static void
run_error(int fd, const char *args, const char *reply)
{
    systest_roundtrip(fd, f("run %s\r\nabc\r\n", args), reply);
}

/* Wait until `inspect job id` finds the job (e.g. a run from another
 * connection has been queued). */
static void
wait_job(int fd, const char *id)
{
    for (int tries = 0;; tries++) {
        systest_sends(fd, f("inspect job %s\r\n", id));
        const char *l = systest_read_line(fd);
        if (strcmp(l, "+OK 1") == 0) {
            systest_skip_job_block(fd);
            return;
        }
        ck_assert_str_eq(l, "-NOT-FOUND");
        ck_assert_msg(tries < 500 * systest_slow(), "job %s never appeared", id);
        systest_sleep_ms(10);
    }
}

static void
expect_queue(int fd, const char *name, unsigned ready, unsigned scheduled)
{
    systest_roundtrip(fd, f("inspect queue %s\r\n", name),
                      f("+OK 1\r\n%s", systest_queue_block(name, ready, scheduled)));
}

/* ------------------------------------------------------------------------ */
/* schedule */

START_TEST(test_schedule_becomes_ready)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    int64_t t = systest_ahead(800);
    systest_schedule(fd, id4(1), "q", t, "later");
    if (systest_exact_timing()) {
        /* not before its time */
        systest_roundtrip(fd, "lease q 0\r\n", TO);
        expect_queue(fd, "q", 0, 1);
    }
    /* a parked leaser is woken by the time arriving */
    systest_sends(w, f("lease q %d\r\n", 5000 * systest_slow()));
    if (systest_exact_timing())
        systest_expect_silence(w, 300);
    systest_expect_lease(w, id4(1), "q", "later");
    if (systest_exact_timing())
        ck_assert_msg(systest_now_ms() >= t - 100, "leased %lld ms before its time",
                      (long long)(t - systest_now_ms()));
    systest_expect_silence(w, 0);

    /* without a parked leaser: ready once the time has come */
    t = systest_ahead(600);
    systest_schedule(fd, id4(2), "q", t, "two");
    if (systest_exact_timing())
        systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_sleep_until(t + 300 * systest_slow());
    expect_queue(fd, "q", 1, 0);
    systest_lease_now(fd, "q", id4(2), "two");

    /* a leaser parked on several names, woken by the time on one of them */
    t = systest_ahead(700);
    systest_schedule(fd, id4(3), "r", t, "three");
    systest_sends(w, f("lease a r b %d\r\n", 5000 * systest_slow()));
    if (systest_exact_timing())
        systest_expect_silence(w, 300);
    systest_expect_lease(w, id4(3), "r", "three");
    systest_roundtrip(fd, "lease a r b 0\r\n", TO);

    /* deleted, completed and failed before their time: their time passes
     * without effect (under valgrind: no stale timer) */
    t = systest_ahead(600);
    systest_schedule(fd, id4(4), "d", t, "del");
    systest_schedule(fd, id4(5), "d", t + 10, "done");
    systest_schedule(fd, id4(6), "d", t + 20, "failed");
    systest_schedule(fd, id4(7), "d", t + 30, "stays");
    systest_expect_stats(fd, "jobs", U(7), "scheduled-jobs", U(4), "ready-jobs", U(0), NULL);
    systest_roundtrip(fd, f("delete %s\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\nc\r\n", id4(5)), OK);
    systest_roundtrip(fd, f("fail %s 1\r\nf\r\n", id4(6)), OK);
    systest_expect_stats(fd, "jobs", U(6), "scheduled-jobs", U(1), "completed-jobs", U(1),
                         "failed-jobs", U(1), NULL);
    systest_sleep_until(t + 30 + 300 * systest_slow());
    systest_expect_stats(fd, "jobs", U(6), "scheduled-jobs", U(0), "ready-jobs", U(1), NULL);
    systest_lease_now(fd, "d", id4(7), "stays");
    systest_roundtrip(fd, "lease d 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(5)), systest_result_reply(id4(5), 1, "c"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(6)), systest_result_reply(id4(6), 0, "f"));
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_past_time)
{
    systest_start_srv();
    int fd = systest_conn();
    /* a past time with time + ttl in the future: ready at once */
    systest_schedule(fd, id4(1), "q", systest_now_ms() - 10000, "past");
    systest_lease_now(fd, "q", id4(1), "past");
    systest_schedule_full(fd, id4(2), "q", TTR, "20000", systest_time_ms(systest_now_ms() - 10000),
                          "barely", NULL);
    systest_lease_now(fd, "q", id4(2), "barely");

    /* time + ttl in the past, or now: Invalid Time, and no job */
    sched_error(fd, f("%s q %u 5000 %s 3", id4(3), TTR, systest_time_ms(systest_now_ms() - 10000)),
                ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3", id4(3), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 1 0001-01-01T00:00:00Z 3", id4(3), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u 600000 2020-02-29T23:59:59.999999999Z 3", id4(3), TTR),
                ERR("Invalid Time"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* every accepted form, in the past with the longest ttl: ready at once,
     * in time order; inspect shows the time in whole seconds */
    static const struct {
        const char *in, *shown;
    } good[] = {
        {"2000-01-01T00:00:00.5Z", "2000-01-01T00:00:00Z"},
        {"2024-02-29T12:34:56.000000000Z", "2024-02-29T12:34:56Z"},
        {"1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59Z"},
        {"2000-02-29T23:59:59.123456789Z", "2000-02-29T23:59:59Z"},
        {"0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"},
        {"2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z"},
        {"1999-12-31T23:59:59.9Z", "1999-12-31T23:59:59Z"},
        {"2001-12-31T23:59:59.12Z", "2001-12-31T23:59:59Z"},
        {"1970-01-01T00:00:00.0001Z", "1970-01-01T00:00:00Z"},
    };
    static const unsigned order[] = {5, 3, 9, 7, 6, 1, 4, 8, 2}; /* by time */
    for (unsigned i = 0; i < 9; i++) {
        systest_schedule_full(fd, id4(10 + i), "p", TTR, TTL_MAX, good[i].in, f("g%u", i + 1),
                              NULL);
        struct systest_job j = systest_job(id4(10 + i), "p", f("g%u", i + 1));
        SET(j.ttl, TTL_MAX);
        SET(j.time, good[i].shown);
        systest_expect_inspect_job(fd, &j);
    }
    for (unsigned i = 0; i < 9; i++)
        systest_lease_now(fd, "p", id4(9 + order[i]), f("g%u", order[i]));
    systest_roundtrip(fd, "lease p 0\r\n", TO);

    /* the latest time there is, with ttl 1: accepted, not ready */
    systest_schedule_full(fd, id4(30), "z", TTR, "1", "9999-12-31T23:59:59.999999999Z", "end",
                          NULL);
    struct systest_job j = systest_job(id4(30), "z", "end");
    SET(j.ttl, "1");
    SET(j.time, "9999-12-31T23:59:59Z");
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "lease z 0\r\n", TO);
    expect_queue(fd, "z", 0, 1);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_invalid_time)
{
    systest_start_srv();
    int fd = systest_conn();
    static const char *const bad[] = {
        "2030-01-01T00:00:00",             /* no Z */
        "2030-01-01T00:00:00z",            /* lowercase z */
        "2030-01-01T00:00:00.1234567890Z", /* 10 fraction digits */
        "2030-01-01T00:00:00,5Z",          /* ',' fraction */
        "2030-02-30T00:00:00Z",            /* Feb 30 */
        "2023-02-29T00:00:00Z",            /* not a leap year */
        "2100-02-29T00:00:00Z",            /* not a leap year either */
        "2030-01-01T24:00:00Z",            /* hour 24 */
        "2030-01-01T00:00Z",               /* missing seconds */
        "2030-01-01T00:00:00.Z",           /* '.' without digits */
        "2030-01-01t00:00:00Z",            /* lowercase t */
        "2030-01-01T00:00:00+00:00",       /* an offset, not Z */
        "2030-01-01T00:00:00.5+01:00",
        "2030-13-01T00:00:00Z",
        "2030-00-01T00:00:00Z",
        "2030-01-00T00:00:00Z",
        "2030-01-32T00:00:00Z",
        "2030-04-31T00:00:00Z",
        "2030-01-01T00:60:00Z",
        "2030-01-01T00:00:60Z",
        "2030-1-01T00:00:00Z",
        "2030-01-01T0:00:00Z",
        "30-01-01T00:00:00Z",
        "+2030-01-01T00:00:00Z",
        "2030-01-01T00:00:00ZZ",
        "2030-01-01T00:00:00.1a3Z",
        "2030-01-01T00:00:00.-1Z",
        "2030/01/01T00:00:00Z",
        "2030-01-01",
        "1893456000",
        "Z",
        "2030-01-01T00:00:0aZ",
        "2030-01-01T00:00:00.5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        sched_error(fd, f("%s q %u %s %s 3", id4(1), TTR, TTL, bad[i]), ERR("Invalid Time"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);

    /* arguments left to right: id, name, ttr, ttl come before the time */
    sched_error(fd, "bad q 0 0 nope 3", ERR("Invalid ID"));
    sched_error(fd, f("%s a*b 0 0 nope 3", id4(1)), ERR("Invalid Name"));
    sched_error(fd, f("%s q 0 0 nope 3", id4(1)), ERR("Invalid TTR"));
    sched_error(fd, f("%s q %u 0 nope 3", id4(1), TTR), ERR("Invalid TTL"));
    /* the time comes before the flags */
    sched_error(fd, f("%s q %u %s nope 3 -prioirty=1", id4(1), TTR, TTL), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u %s nope 3 -priority=x", id4(1), TTR, TTL), ERR("Invalid Time"));
    /* the flags come before "time + ttl in the past" */
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -prioirty=1", id4(1), TTR),
                ERR("Invalid command flags"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -priority=x", id4(1), TTR),
                ERR("Invalid Priority"));
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3 -max-fails=256", id4(1), TTR),
                ERR("Invalid Max Fails"));
    /* and "time + ttl in the past" before Duplicate job */
    systest_add(fd, id4(2), "q", "dup");
    sched_error(fd, f("%s q %u 1 2000-01-01T00:00:00Z 3", id4(2), TTR), ERR("Invalid Time"));
    sched_error(fd, f("%s q %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(systest_ahead(HOUR_MS))),
                ERR("Duplicate job"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    systest_lease_now(fd, "q", id4(2), "dup");
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_args)
{
    systest_start_srv();
    int fd = systest_conn();
    /* wrong number of positional tokens: no data block is read */
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " 3\r\nabc\r\n",
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " 1 3\r\nabc\r\n",
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "schedule " ID1 "\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " -priority=1\r\n",
                      ERR("Invalid command args")); /* only 5 positional */
    /* the size, before anything else */
    systest_roundtrip(fd, "schedule " ID1 " q " TTRS " " TTL " " LATER " +3\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    systest_roundtrip(fd, "schedule bad q 0 0 nope x\r\nabc\r\n",
                      ERR("Invalid payload size") ERR("Unknown command"));
    /* the block is read, then exactly one error */
    static const struct {
        const char *args, *error;
    } bad[] = {
        {"bad q " TTRS " " TTL " " LATER " 3", "Invalid ID"},
        {"00000000-0000-0000-0000-000000000000 q " TTRS " " TTL " " LATER " 3", "Invalid ID"},
        {ID1 " a*b " TTRS " " TTL " " LATER " 3", "Invalid Name"},
        {ID1 " q 0 " TTL " " LATER " 3", "Invalid TTR"},
        {ID1 " q 86400001 " TTL " " LATER " 3", "Invalid TTR"},
        {ID1 " q " TTRS " 0 " LATER " 3", "Invalid TTL"},
        {ID1 " q " TTRS " 18446744073709551616 " LATER " 3", "Invalid TTL"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -priority=2147483648", "Invalid Priority"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -max-attempts=256", "Invalid Max Attempts"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -max-fails=-1", "Invalid Max Fails"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -ttl=5", "Invalid command flags"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -time=5", "Invalid command flags"},
        {ID1 " q " TTRS " " TTL " " LATER " 3 -priority=1 -priority=1", "Invalid command flags"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        sched_error(fd, bad[i].args, f("-CLIENT-ERROR %s\r\n", bad[i].error));
    sched_error(fd, f("%s %s %u %s %s 3", id4(1), systest_name_of(256, 'n'), TTR, TTL, LATER),
                ERR("Invalid Name"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);

    /* flags anywhere, and they take effect */
    int64_t t = systest_now_ms() + HOUR_MS;
    systest_roundtrip(fd,
                      f("schedule -priority=-4 %s q 1000 %s %s -max-attempts=7 -max-fails=9 "
                        "5\r\nflags\r\n",
                        id4(2), TTL, systest_time_ms(t)),
                      OK);
    struct systest_job j = systest_job(id4(2), "q", "flags");
    j.ttr = 1000;
    j.priority = -4;
    j.max_attempts = 7;
    j.max_fails = 9;
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    /* an uppercase id, a binary payload, an empty payload */
    systest_sends(fd, f("schedule 0000000A-58CC-4372-A567-0E02B2C3D479 q %u %s %s 4\r\n", TTR, TTL,
                        systest_time_ms(t)));
    systest_send(fd, "a\r\n\0", 4);
    systest_roundtrip(fd, "\r\n", OK);
    systest_schedule_full(fd, id4(11), "q", TTR, TTL, systest_time_ms(t), "", NULL);
    j = systest_job_bin(id4(10), "q", "a\r\n\0", 4);
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    j = systest_job(id4(11), "q", "");
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_order)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t now = systest_now_ms();
    /* equal priority: unscheduled (FIFO), then scheduled by time, then FIFO */
    systest_add(fd, id4(1), "q", "a1");
    systest_schedule(fd, id4(2), "q", now - 20000, "s1");
    systest_add(fd, id4(3), "q", "a2");
    systest_schedule(fd, id4(4), "q", now - 30000, "s2");
    systest_schedule(fd, id4(5), "q", now - 30000, "s3");
    systest_schedule(fd, id4(6), "q", now - 20001, "s4");
    /* a higher priority wins over everything of a lower one */
    systest_schedule_full(fd, id4(7), "q", TTR, TTL, systest_time_ms(now - 1000), "hs",
                          "-priority=5");
    systest_add_full(fd, id4(8), "q", TTR, TTL, "h1", "-priority=5");
    systest_schedule_full(fd, id4(9), "q", TTR, TTL, systest_time_ms(now - 50000), "hs2",
                          "-priority=5");
    systest_add_full(fd, id4(10), "q", TTR, TTL, "l1", "-priority=-1");
    systest_schedule_full(fd, id4(11), "q", TTR, TTL, systest_time_ms(now - 90000), "ls",
                          "-priority=-1");
    static const unsigned order[] = {8, 9, 7, 1, 3, 4, 5, 6, 2, 10, 11};
    static const char *const pay[] = {"",   "a1", "s1", "a2",  "s2", "s3",
                                      "s4", "hs", "h1", "hs2", "l1", "ls"};
    for (size_t i = 0; i < 11; i++)
        systest_lease_now(fd, "q", id4(order[i]), pay[order[i]]);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* scheduled jobs that become ready later still rank after unscheduled
     * ones that came after them, and among themselves by time, not arrival */
    int64_t t = systest_ahead(700);
    systest_schedule(fd, id4(20), "r", t + 100, "x1");
    systest_schedule(fd, id4(21), "r", t, "x2");
    systest_schedule_full(fd, id4(22), "r", TTR, TTL, systest_time_ms(t + 200), "xp",
                          "-priority=1");
    systest_sleep_until(t + 200 + 300 * systest_slow());
    systest_add(fd, id4(23), "r", "late");
    systest_lease_now(fd, "r", id4(22), "xp");
    systest_lease_now(fd, "r", id4(23), "late");
    systest_lease_now(fd, "r", id4(21), "x2");
    systest_lease_now(fd, "r", id4(20), "x1");
    systest_roundtrip(fd, "lease r 0\r\n", TO);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_order_fraction)
{
    systest_start_srv();
    int fd = systest_conn();
    /* scheduled time, to the last of its 9 fraction digits: both jobs are
     * ready, same priority; the earlier time goes first, not the earlier
     * arrival */
    systest_schedule_full(fd, id4(1), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.0009Z", "later",
                          NULL);
    systest_schedule_full(fd, id4(2), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.0001Z", "sooner",
                          NULL);
    systest_schedule_full(fd, id4(3), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.000000002Z", "n2",
                          NULL);
    systest_schedule_full(fd, id4(4), "q", TTR, TTL_MAX, "2020-01-01T00:00:00.000000001Z", "n1",
                          NULL);
    systest_lease_now(fd, "q", id4(4), "n1");
    systest_lease_now(fd, "q", id4(3), "n2");
    systest_lease_now(fd, "q", id4(2), "sooner");
    systest_lease_now(fd, "q", id4(1), "later");
    /* the same for jobs not due yet: soonest first */
    systest_schedule_full(fd, id4(5), "s", TTR, TTL, "2999-01-01T00:00:00.0009Z", "later", NULL);
    systest_schedule_full(fd, id4(6), "s", TTR, TTL, "2999-01-01T00:00:00.0001Z", "sooner", NULL);
    systest_roundtrip(fd, "inspect scheduled-jobs s 0 1\r\n", "+OK 1\r\n");
    struct systest_job j = systest_job(id4(6), "s", "sooner");
    SET(j.time, "2999-01-01T00:00:00Z");
    systest_expect_job_block(fd, &j);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_ttl)
{
    systest_start_srv();
    int fd = systest_conn(), w = systest_conn();
    /* expires at time + ttl, not at accept + ttl */
    int64_t t0 = systest_now_ms();
    int64_t t = t0 + 600 * systest_slow();
    int ttl = 700 * systest_slow();
    systest_schedule_full(fd, id4(1), "q", TTR, f("%d", ttl), systest_time_ms(t), "ttl", NULL);
    systest_sends(w, f("lease q %d\r\n", 5000 * systest_slow()));
    systest_expect_lease(w, id4(1), "q", "ttl");
    if (systest_exact_timing()) {
        /* past accept + ttl, before time + ttl: still there */
        systest_sleep_until(t0 + 1000);
        struct systest_job j = systest_job(id4(1), "q", "ttl");
        SET(j.ttl, f("%d", ttl));
        j.attempts = 1;
        j.state = LEASED;
        SET(j.time, systest_time_s(t));
        systest_expect_inspect_job(fd, &j);
    }
    systest_sleep_until(t + ttl + 300 * systest_slow());
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_expect_stats(fd, "evicted-jobs", U(1), "jobs", U(0), NULL);

    /* a past time: the TTL still counts from it; never leased */
    t0 = systest_now_ms();
    systest_schedule_full(fd, id4(2), "q", TTR, f("%d", 10000 + 600 * systest_slow()),
                          systest_time_ms(t0 - 10000), "old", NULL);
    expect_queue(fd, "q", 1, 0);
    systest_sleep_until(t0 + 900 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* one that expires before its time ever comes */
    t = systest_ahead(1500);
    systest_schedule_full(fd, id4(3), "s", TTR, "1", systest_time_ms(t), "never", NULL);
    expect_queue(fd, "s", 0, 1);
    systest_sleep_until(t + 300 * systest_slow());
    systest_roundtrip(fd, "lease s 0\r\n", TO);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), NF);
    systest_expect_stats(fd, "evicted-jobs", U(3), "jobs", U(0), "scheduled-jobs", U(0), NULL);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_schedule_duplicate_and_states)
{
    systest_start_srv();
    int fd = systest_conn();
    int64_t t = systest_now_ms() + HOUR_MS;
    /* Duplicate job between schedule, add and run, in every direction */
    systest_schedule(fd, id4(1), "s", t, "one");
    sched_error(fd, f("%s s %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t)),
                ERR("Duplicate job"));
    sched_error(fd, f("%s other %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t - 5000)),
                ERR("Duplicate job"));
    sched_error(
        fd,
        f("%s s %u %s %s 3", "00000001-58CC-4372-A567-0E02B2C3D479", TTR, TTL, systest_time_ms(t)),
        ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s s %u %s 3\r\nabc\r\n", id4(1), TTR, TTL), ERR("Duplicate job"));
    run_error(fd, f("%s s %u 1000 3", id4(1), TTR), ERR("Duplicate job"));
    run_error(fd, f("%s s %u 0 3", id4(1), TTR), ERR("Duplicate job"));
    systest_add(fd, id4(2), "s", "two");
    sched_error(fd, f("%s s %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(t)),
                ERR("Duplicate job"));
    /* argument errors come first */
    sched_error(fd, f("%s s 0 %s %s 3", id4(1), TTL, systest_time_ms(t)), ERR("Invalid TTR"));
    /* the original is untouched */
    struct systest_job j = systest_job(id4(1), "s", "one");
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_job(fd, &j);
    systest_lease_now(fd, "s", id4(2), "two");
    /* completed and failed jobs keep their ids */
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(2)), OK);
    sched_error(fd, f("%s s %u %s %s 3", id4(2), TTR, TTL, systest_time_ms(t)),
                ERR("Duplicate job"));

    /* a job that is not due yet can be completed: it never becomes ready */
    systest_roundtrip(fd, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), systest_result_reply(id4(1), 1, "done"));
    j.state = COMPLETED;
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(fd, "inspect queue s\r\n", NF);
    systest_roundtrip(fd, "inspect scheduled-jobs s 0 10\r\n", NF);
    sched_error(fd, f("%s s %u %s %s 3", id4(1), TTR, TTL, systest_time_ms(t)),
                ERR("Duplicate job"));

    /* a fail with retries left before the time: back to the scheduled jobs */
    systest_schedule_full(fd, id4(3), "s", TTR, TTL, systest_time_ms(t), "retry", "-max-fails=3");
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id4(3)), OK);
    j = systest_job(id4(3), "s", "retry");
    j.max_fails = 3;
    j.fails = 1;
    j.state = PENDING;
    SET(j.time, systest_time_s(t));
    systest_expect_inspect_list(fd, "scheduled-jobs", "s", "0 10", &j, 1);
    systest_expect_inspect_list(fd, "jobs", "s", "0 10", NULL, 0);
    systest_roundtrip(fd, "lease s 0\r\n", TO);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(3)), TO);
    /* and a final fail */
    systest_schedule_full(fd, id4(4), "s", TTR, TTL, systest_time_ms(t), "final", NULL);
    systest_roundtrip(fd, f("fail %s 3\r\nbad\r\n", id4(4)), OK);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(4)), systest_result_reply(id4(4), 0, "bad"));
    expect_queue(fd, "s", 0, 1);
    /* a scheduled job can be deleted; its id is free again */
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, "inspect queue s\r\n", NF);
    systest_schedule(fd, id4(3), "s", systest_now_ms() - 1000, "again");
    systest_lease_now(fd, "s", id4(3), "again");
    close(fd);
    systest_stop_srv();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* run */

START_TEST(test_run_complete)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "a b\r\nc", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(1), "q", TTR, "a b\r\nc"));
    struct systest_job j = systest_job_run(id4(1), "q", "a b\r\nc");
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    systest_roundtrip(w, f("complete %s 6\r\nok\r\n!!\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "ok\r\n!!"));
    /* removed after the reply */
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), NF);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(1)), NF);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* a leaser already parked gets it at once; an empty result */
    systest_sends(w, "lease q " PARK "\r\n");
    systest_wait_queue(fd, "q");
    run_send(r, id4(2), "q", 1234, PARK, "", NULL);
    systest_expect(w, f("+OK 1\r\n%s q 1234 0\r\n\r\n", id4(2)));
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 1, ""));

    /* its pipeline is held until the reply */
    systest_sends(r, f("run %s q %u %s 1\r\nx\r\ninspect job %s\r\ndelete %s\r\n", id4(3), TTR,
                       PARK, id4(3), id4(3)));
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(3), "q", TTR, "x"));
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    systest_roundtrip(w, f("complete %s 1\r\ny\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, "y"));
    systest_expect(r, NF NF);
    /* the id is free again */
    systest_add(fd, id4(3), "q", "reuse");
    systest_lease_now(fd, "q", id4(3), "reuse");

    /* a wait-timeout that ends after the lease does not matter any more */
    run_send(r, id4(4), "q", TTR, f("%d", 300 * systest_slow()), "w", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(4), "q", TTR, "w"));
    systest_sleep_past(300);
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(4)), OK);
    systest_expect(r, systest_result_reply(id4(4), 1, "late"));
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_fail)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* a fail is final at once (max-fails 0), result flag 0 */
    run_send(r, id4(1), "q", TTR, PARK, "job", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(1), "q", TTR, "job"));
    systest_roundtrip(w, f("fail %s 5\r\nno\r\nx\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 0, "no\r\nx"));
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* an empty fail */
    run_send(r, id4(2), "q", TTR, PARK, "job2", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "job2"));
    systest_roundtrip(w, f("fail %s 0\r\n\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 0, ""));
    /* complete and fail need no lease: a job answered while still queued */
    run_send(r, id4(3), "q", TTR, PARK, "job3", NULL);
    wait_job(fd, id4(3));
    systest_roundtrip(fd, f("fail %s 1\r\nE\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 0, "E"));
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_timeout_unleased)
{
    systest_start_srv();
    int r = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, "300", "x", NULL);
    if (systest_exact_timing())
        systest_expect_silence(r, 150);
    systest_expect(r, TO);
    /* the job is gone */
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* the id is free, the connection usable */
    run_send(r, id4(1), "q", TTR, "100", "y", NULL);
    systest_expect(r, TO);
    systest_add(fd, id4(1), "q", "reuse");
    systest_lease_now(fd, "q", id4(1), "reuse");
    /* a result waiter learns that the job is gone */
    int res = systest_conn();
    run_send(r, id4(2), "q", TTR, f("%d", 500 * systest_slow()), "z", NULL);
    wait_job(fd, id4(2));
    systest_roundtrip(res, f("result %s 0\r\n", id4(2)), TO);
    systest_sends(res, f("result %s " PARK "\r\n", id4(2)));
    systest_expect(r, TO);
    systest_expect(res, NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    close(res);
    close(r);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_timeout_leased)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", 300, PARK, "x", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(1), "q", 300, "x"));
    if (systest_exact_timing())
        systest_expect_silence(r, 150);
    /* the TTR ends: -TIMEOUT, and the job is not queued again */
    systest_expect(r, TO);
    systest_roundtrip(w, f("complete %s 4\r\nlate\r\n", id4(1)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* nor does a late worker find anything after a fail */
    run_send(r, id4(2), "q", 200, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", 200, "y"));
    systest_expect(r, TO);
    systest_roundtrip(w, f("fail %s 0\r\n\r\n", id4(2)), NF);
    /* a result waiter learns that the job is gone */
    int res = systest_conn();
    run_send(r, id4(3), "q", 300, PARK, "z", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(3), "q", 300, "z"));
    systest_sends(res, f("result %s " PARK "\r\n", id4(3)));
    systest_expect(r, TO);
    systest_expect(res, NF);
    close(res);
    systest_expect_stats(fd, "jobs", U(0), "leased-jobs", U(0), NULL);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_disconnect)
{
    systest_start_srv();
    int w = systest_conn(), fd = systest_conn();
    /* waiting to be leased: the job goes with the client */
    int r = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    close(r);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        systest_sends(fd, f("inspect job %s\r\n", id4(1)));
        if (strcmp(systest_read_line(fd), "-NOT-FOUND") == 0)
            break;
        systest_skip_job_block(fd);
        systest_sleep_ms(20);
    }
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);

    /* leased: the worker's complete finds nothing */
    r = systest_conn();
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "y"));
    close(r);
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(2)), NF);

    /* EOF (half close): no reply, the connection is closed, the job gone */
    r = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    ck_assert_int_eq(shutdown(r, SHUT_WR), 0);
    systest_expect_closed(r);
    close(r);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(3)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);

    /* a result waiter on the job learns that it is gone */
    r = systest_conn();
    int res = systest_conn();
    run_send(r, id4(4), "q", TTR, PARK, "r", NULL);
    wait_job(fd, id4(4));
    systest_sends(res, f("result %s " PARK "\r\n", id4(4)));
    systest_sleep_ms(100 * systest_slow());
    close(r);
    systest_expect(res, NF);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(4)), NF);
    close(res);
    systest_expect_stats(fd, "jobs", U(0), "ready-jobs", U(0), "leased-jobs", U(0), NULL);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_delete)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* deleted while queued: -NOT-FOUND at once */
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_expect(r, NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    /* deleted while leased */
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    systest_roundtrip(w, f("lease q %d\r\n", 5000 * systest_slow()),
                      systest_lease_reply(id4(2), "q", TTR, "y"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_expect(r, NF);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(2)), NF);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), NF);
    /* with a result waiter: both learn it */
    int res = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    systest_sends(res, f("result %s " PARK "\r\n", id4(3)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_expect(r, NF);
    systest_expect(res, NF);
    close(res);
    /* the run connection is usable afterwards */
    systest_sync(r);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_two_waiters)
{
    systest_start_srv();
    int r = systest_conn(), res = systest_conn(), w = systest_conn(), fd = systest_conn();
    run_send(r, id4(1), "q", TTR, PARK, "x", NULL);
    wait_job(fd, id4(1));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), TO);
    systest_sends(res, f("result %s " PARK "\r\n", id4(1)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(1), "q", TTR, "x"));
    if (systest_exact_timing()) {
        systest_expect_silence(r, 50);
        systest_expect_silence(res, 0);
    }
    systest_roundtrip(w, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "done"));
    systest_expect(res, systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(fd, f("result %s 0\r\n", id4(1)), NF);

    /* the same with a fail, two result waiters */
    int res2 = systest_conn();
    run_send(r, id4(2), "q", TTR, PARK, "y", NULL);
    wait_job(fd, id4(2));
    systest_sends(res, f("result %s " PARK "\r\n", id4(2)));
    systest_sends(res2, f("result %s " PARK "\r\n", id4(2)));
    systest_sleep_ms(100 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(2), "q", TTR, "y"));
    systest_roundtrip(w, f("fail %s 3\r\nbad\r\n", id4(2)), OK);
    systest_expect(r, systest_result_reply(id4(2), 0, "bad"));
    systest_expect(res, systest_result_reply(id4(2), 0, "bad"));
    systest_expect(res2, systest_result_reply(id4(2), 0, "bad"));

    /* a result waiter that leaves changes nothing */
    run_send(r, id4(3), "q", TTR, PARK, "z", NULL);
    wait_job(fd, id4(3));
    systest_sends(res2, f("result %s " PARK "\r\n", id4(3)));
    systest_sleep_ms(100 * systest_slow());
    close(res2);
    systest_sleep_ms(50 * systest_slow());
    systest_roundtrip(w, "lease q 0\r\n", systest_lease_reply(id4(3), "q", TTR, "z"));
    systest_roundtrip(w, f("complete %s 1\r\nZ\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, "Z"));
    close(r);
    close(res);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_wait_zero)
{
    systest_start_srv();
    int r = systest_conn(), w = systest_conn(), fd = systest_conn();
    /* no parked leaser: -TIMEOUT at once, no job left */
    systest_roundtrip(r, f("run %s q %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    systest_roundtrip(fd, "lease q 0\r\n", TO);
    systest_roundtrip(fd, "inspect queue q\r\n", NF);
    /* a leaser parked on another name does not count, and gets nothing */
    systest_sends(w, "lease other " PARK "\r\n");
    systest_wait_queue(fd, "other");
    systest_roundtrip(r, f("run %s q %u 00 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_roundtrip(r, f("run %s Other %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_expect_silence(w, 50);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);
    /* a ready job in the queue does not count either: it is no leaser */
    systest_add(fd, id4(2), "q", "queued");
    systest_roundtrip(r, f("run %s q %u 0 3\r\nabc\r\n", id4(1), TTR), TO);
    systest_lease_now(fd, "q", id4(2), "queued");
    /* with a leaser parked on it: leased to that leaser */
    systest_add(fd, id4(3), "other", "wake");
    systest_expect_lease(w, id4(3), "other", "wake");
    systest_sends(w, "lease x q y " PARK "\r\n");
    systest_wait_queue(fd, "x");
    run_send(r, id4(1), "q", TTR, "0", "abc", NULL);
    systest_expect_lease(w, id4(1), "q", "abc");
    if (systest_exact_timing())
        systest_expect_silence(r, 50);
    struct systest_job j = systest_job_run(id4(1), "q", "abc");
    j.attempts = 1;
    j.state = LEASED;
    systest_expect_inspect_job(fd, &j);
    systest_roundtrip(w, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_expect(r, systest_result_reply(id4(1), 1, "ok"));
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(1)), NF);

    /* a leaser that has left does not count */
    int g = systest_conn();
    systest_sends(g, "lease ghost " PARK "\r\n");
    systest_wait_queue(fd, "ghost");
    close(g);
    for (int i = 0; i < 100 * systest_slow(); i++) {
        systest_sends(fd, "inspect queue ghost\r\n");
        if (strcmp(systest_read_line(fd), "-NOT-FOUND") == 0)
            break;
        for (int k = 0; k < 3; k++)
            systest_read_line(fd);
        systest_sleep_ms(20);
    }
    systest_roundtrip(r, f("run %s ghost %u 0 1\r\ng\r\n", id4(5), TTR), TO);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(5)), NF);
    /* two parked leasers: the first one gets it */
    int w2 = systest_conn();
    systest_sends(w, "lease two " PARK "\r\n");
    systest_wait_queue(fd, "two");
    systest_sleep_ms(50 * systest_slow());
    systest_sends(w2, "lease two " PARK "\r\n");
    systest_sleep_ms(100 * systest_slow());
    run_send(r, id4(6), "two", TTR, "0", "fcfs", NULL);
    systest_expect_lease(w, id4(6), "two", "fcfs");
    systest_expect_silence(w2, 50);
    systest_roundtrip(w, f("complete %s 0\r\n\r\n", id4(6)), OK);
    systest_expect(r, systest_result_reply(id4(6), 1, ""));
    close(w2);
    close(r);
    close(w);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_order)
{
    systest_start_srv();
    int r1 = systest_conn(), r2 = systest_conn(), r3 = systest_conn(), fd = systest_conn();
    /* run jobs rank like add jobs: priority, then FIFO */
    systest_add(fd, id4(1), "q", "a1");
    run_send(r1, id4(2), "q", TTR, PARK, "r1", "-priority=5");
    wait_job(fd, id4(2));
    run_send(r2, id4(3), "q", TTR, PARK, "r2", NULL);
    wait_job(fd, id4(3));
    systest_add(fd, id4(4), "q", "a2");
    run_send(r3, id4(5), "q", TTR, PARK, "r3", "-priority=-2147483648");
    wait_job(fd, id4(5));
    int64_t ts = systest_now_ms() - 1000;
    systest_schedule(fd, id4(6), "q", ts, "s1");
    struct systest_job jobs[6] = {
        systest_job_run(id4(2), "q", "r1"), systest_job(id4(1), "q", "a1"),
        systest_job_run(id4(3), "q", "r2"), systest_job(id4(4), "q", "a2"),
        systest_job(id4(6), "q", "s1"),     systest_job_run(id4(5), "q", "r3")};
    jobs[0].priority = 5;
    SET(jobs[4].time, systest_time_s(ts));
    jobs[5].priority = INT32_MIN;
    systest_expect_inspect_list(fd, "jobs", "q", "0 10", jobs, 6);
    systest_lease_now(fd, "q", id4(2), "r1");
    systest_lease_now(fd, "q", id4(1), "a1");
    systest_lease_now(fd, "q", id4(3), "r2");
    systest_lease_now(fd, "q", id4(4), "a2");
    systest_lease_now(fd, "q", id4(6), "s1");
    systest_lease_now(fd, "q", id4(5), "r3");
    systest_roundtrip(fd, f("complete %s 1\r\n1\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\n2\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("complete %s 1\r\n3\r\n", id4(5)), OK);
    systest_expect(r1, systest_result_reply(id4(2), 1, "1"));
    systest_expect(r2, systest_result_reply(id4(3), 1, "2"));
    systest_expect(r3, systest_result_reply(id4(5), 1, "3"));
    close(r1);
    close(r2);
    close(r3);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_run_errors)
{
    systest_start_srv();
    int fd = systest_conn();
    static const struct {
        const char *args, *error;
    } bad[] = {
        {"bad q " TTRS " 1000 3", "Invalid ID"},
        {"00000000-0000-0000-0000-000000000000 q " TTRS " 1000 3", "Invalid ID"},
        {"0000000158cc4372a5670e02b2c3d479 q " TTRS " 1000 3", "Invalid ID"},
        {ID1 " a*b " TTRS " 1000 3", "Invalid Name"},
        {ID1 " q 0 1000 3", "Invalid TTR"},
        {ID1 " q 86400001 1000 3", "Invalid TTR"},
        {ID1 " q +5 1000 3", "Invalid TTR"},
        {ID1 " q " TTRS " 86400001 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " abc 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " -1 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " +1 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " 18446744073709551616 3", "Invalid wait timeout"},
        {ID1 " q " TTRS " 1000 3 -max-attempts=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -max-fails=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -prioirty=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=1 -priority=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -ttl=1", "Invalid command flags"},
        {ID1 " q " TTRS " 1000 3 -priority=x", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=2147483648", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=-2147483649", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -priority=1=2", "Invalid Priority"},
        /* left to right, positional before flags */
        {"bad a*b 0 x 3 -max-attempts=1", "Invalid ID"},
        {ID1 " a*b 0 x 3 -max-attempts=1", "Invalid Name"},
        {ID1 " q 0 x 3 -max-attempts=1", "Invalid TTR"},
        {ID1 " q " TTRS " x 3 -max-attempts=1", "Invalid wait timeout"},
        {ID1 " q " TTRS " 1000 3 -priority=x -max-attempts=1", "Invalid Priority"},
        {ID1 " q " TTRS " 1000 3 -max-attempts=1 -priority=x", "Invalid command flags"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        run_error(fd, bad[i].args, f("-CLIENT-ERROR %s\r\n", bad[i].error));
    /* the size: no data block is read */
    static const char *const bad_size[] = {"+3", "-3", "abc", "18446744073709551616", "3a"};
    for (size_t i = 0; i < sizeof bad_size / sizeof bad_size[0]; i++)
        systest_roundtrip(fd, f("run %s q %u 1000 %s\r\nabc\r\n", id4(1), TTR, bad_size[i]),
                          ERR("Invalid payload size") ERR("Unknown command"));
    /* the number of positional tokens */
    systest_roundtrip(fd, f("run %s q %u 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, f("run %s q %u 1000 5 3\r\nabc\r\n", id4(1), TTR),
                      ERR("Invalid command args") ERR("Unknown command"));
    systest_roundtrip(fd, "run\r\n", ERR("Invalid command args"));
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), NF);
    /* Duplicate job: an existing job, or a run job still waiting */
    systest_add(fd, id4(2), "q", "dup");
    run_error(fd, f("%s %s %u 1000 3", id4(1), systest_name_of(256, 'n'), TTR),
              ERR("Invalid Name"));
    run_error(fd, f("%s q %u 1000 3", id4(2), TTR), ERR("Duplicate job"));
    int r = systest_conn();
    run_send(r, id4(3), "q", TTR, PARK, "run", NULL);
    wait_job(fd, id4(3));
    run_error(fd, f("%s q %u 1000 3", id4(3), TTR), ERR("Duplicate job"));
    run_error(fd, f("%s q %u 0 3", id4(3), TTR), ERR("Duplicate job"));
    systest_roundtrip(fd, f("add %s q %u %s 3\r\nabc\r\n", id4(3), TTR, TTL), ERR("Duplicate job"));
    sched_error(fd, f("%s q %u %s %s 3", id4(3), TTR, TTL, systest_time_ms(systest_ahead(HOUR_MS))),
                ERR("Duplicate job"));
    /* neither original was touched; the limits are accepted */
    systest_lease_now(fd, "q", id4(2), "dup");
    systest_lease_now(fd, "q", id4(3), "run");
    systest_roundtrip(fd, f("complete %s 0\r\n\r\n", id4(3)), OK);
    systest_expect(r, systest_result_reply(id4(3), 1, ""));
    run_send(r, id4(4), systest_name_of(255, 'n'), 86400000, "86400000", "lim",
             "-priority=2147483647");
    systest_roundtrip(fd, f("lease %s %d\r\n", systest_name_of(255, 'n'), 5000 * systest_slow()),
                      systest_lease_reply(id4(4), systest_name_of(255, 'n'), 86400000, "lim"));
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(4)), OK);
    systest_expect(r, systest_result_reply(id4(4), 0, ""));
    close(r);
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
    systest_add_full(fd, id4(1), "q", TTR, "200", "new", NULL);    /* NEW */
    systest_add_full(fd, id4(2), "l", TTR, "200", "leased", NULL); /* LEASED */
    systest_add_full(fd, id4(3), "c", TTR, "200", "done", NULL);   /* COMPLETED */
    systest_add_full(fd, id4(4), "f", TTR, "200", "failed", NULL); /* FAILED */
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

static Suite *
jobs_suite(void)
{
    const struct systest_group groups[] = {
        {"add",
         {test_add_success, test_add_invalid_id, test_add_invalid_name, test_add_invalid_ttr_ttl,
          test_add_flag_values, test_add_flag_keys, test_add_duplicate, test_add_arg_count,
          test_add_bad_size, test_add_size_over_max, test_add_block_terminator, NULL}},
        {"schedule",
         {test_schedule_becomes_ready, test_schedule_past_time, test_schedule_invalid_time,
          test_schedule_args, test_schedule_order, test_schedule_order_fraction, test_schedule_ttl,
          test_schedule_duplicate_and_states, NULL}},
        {"run",
         {test_run_complete, test_run_fail, test_run_timeout_unleased, test_run_timeout_leased,
          test_run_disconnect, test_run_delete, test_run_two_waiters, test_run_wait_zero,
          test_run_order, test_run_errors, NULL}},
        {"result",
         {test_result_basic, test_result_woken, test_result_two_waiters, test_result_job_vanishes,
          test_result_timeout, test_result_errors, test_result_pipeline_held, NULL}},
        {"delete", {test_delete_states, NULL}},
        {"ttl", {test_ttl_expires, test_ttl_leased_expiring, test_ttl_not_before, NULL}},
    };
    return systest_suite("jobs", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(jobs_suite());
}
