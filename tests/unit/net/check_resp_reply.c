/* check_resp_reply.c - unit tests for src/net/resp_reply.c: each RESP2
 * reply byte for byte as Redis 7 writes it. */
#include "lib/wq.h"
#include "net/resp_reply.h"

#include <check.h>
#include <stdint.h>

#include "fake_reply.h"
#include "unit.h"

START_TEST(test_replies)
{
    struct fake f;
    fake_init(&f);
    resp_reply_ok(&f.reply);
    resp_reply_simple(&f.reply, "PONG");
    resp_reply_error(&f.reply, "ERR", "unknown command 'x\r\ny', with args beginning with: ");
    resp_reply_error(&f.reply, "WRONGTYPE",
                     "Operation against a key holding the wrong kind of value");
    resp_reply_integer(&f.reply, 0);
    resp_reply_integer(&f.reply, -2);
    resp_reply_integer(&f.reply, INT64_MAX);
    resp_reply_integer(&f.reply, INT64_MIN);
    resp_reply_integer(&f.reply, 1234567890);
    resp_reply_bulk(&f.reply, "a\r\nb", 4);
    resp_reply_bulk(&f.reply, "", 0);
    resp_reply_null(&f.reply);
    resp_reply_array(&f.reply, 2);
    resp_reply_array(&f.reply, 0);
    resp_reply_null_array(&f.reply);
    ck_assert_str_eq(f.out, "+OK\r\n"
                            "+PONG\r\n"
                            "-ERR unknown command 'x  y', with args beginning with: \r\n"
                            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
                            ":0\r\n"
                            ":-2\r\n"
                            ":9223372036854775807\r\n"
                            ":-9223372036854775808\r\n"
                            ":1234567890\r\n"
                            "$4\r\na\r\nb\r\n"
                            "$0\r\n\r\n"
                            "$-1\r\n"
                            "*2\r\n"
                            "*0\r\n"
                            "*-1\r\n");
}
END_TEST

static Suite *
resp_reply_suite(void)
{
    const struct unit_case cases[] = {
        {"replies", test_replies},
    };
    return unit_suite("resp_reply", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(resp_reply_suite(), NULL);
}
