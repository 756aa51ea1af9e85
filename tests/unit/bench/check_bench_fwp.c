/* check_bench_fwp.c - unit tests for workq-bench's Faktory parsing: RESP
 * framing in bench/wb_frame.c (simple strings, errors, bulk strings whole
 * and byte by byte, the null bulk string, malformed headers).  The jobs'
 * JSON is jansson's: sys_bench.c checks the client against real and fake
 * servers. */
#include "wb.h"
#include "wb_proto.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "unit.h"

/* What wb_frame.c needs of the rest of workq-bench. */
const char *const wb_op_names[OP_COUNT] = {"add"};
void
wb_error(struct bench *b, const char *fmt, ...)
{
    (void)b;
    (void)fmt;
}

/* Frame the bytes s as the reply to a FETCH, given all at once. */
static int
frame(const char *s, size_t len, struct wb_frame *f, struct evbuffer **keep)
{
    const char *why;
    struct evbuffer *in = evbuffer_new();
    evbuffer_add(in, s, len);
    *keep = in;
    return wb_frame_find(in, WB_PROTO_FAKTORY, OP_FETCH, f, &why);
}

START_TEST(test_frame_lines)
{
    struct wb_frame f;
    struct evbuffer *in;
    ck_assert_int_eq(frame("+OK\r\nrest", 9, &f, &in), 1);
    ck_assert_uint_eq(f.line_len, 3);
    ck_assert(memcmp(f.line, "+OK", 3) == 0);
    ck_assert_ptr_null(f.data);
    ck_assert_uint_eq(f.total, 5);
    evbuffer_free(in);
    ck_assert_int_eq(frame("-ERR no such queue\r\n", 20, &f, &in), 1);
    ck_assert(wb_frame_is(&f, "-ERR no such queue"));
    evbuffer_free(in);
    ck_assert_int_eq(frame("$-1\r\n", 5, &f, &in), 1);
    ck_assert(wb_frame_is(&f, "$-1"));
    ck_assert_uint_eq(f.total, 5);
    evbuffer_free(in);
    ck_assert_int_eq(frame("+OK\r", 4, &f, &in), 0);
    evbuffer_free(in);
    ck_assert_int_eq(frame("+OK\n", 4, &f, &in), 0); /* CRLF strictly */
    evbuffer_free(in);
}
END_TEST

START_TEST(test_frame_bulk)
{
    static const char reply[] = "$10\r\n{\"a\":\"\r\n\"}\r\n+OK\r\n";
    struct wb_frame f;
    struct evbuffer *in;
    ck_assert_int_eq(frame(reply, sizeof reply - 1, &f, &in), 1);
    ck_assert_uint_eq(f.line_len, 3);
    ck_assert_ptr_nonnull(f.data);
    ck_assert_uint_eq(f.data_len, 10);
    ck_assert(memcmp(f.data, "{\"a\":\"\r\n\"}", 10) == 0);
    ck_assert_ptr_null(f.line2);
    ck_assert_uint_eq(f.total, 17);
    evbuffer_free(in);
    /* An empty bulk string has data, of length 0. */
    ck_assert_int_eq(frame("$0\r\n\r\n", 6, &f, &in), 1);
    ck_assert_ptr_nonnull(f.data);
    ck_assert_uint_eq(f.data_len, 0);
    ck_assert_uint_eq(f.total, 6);
    evbuffer_free(in);
    /* Byte by byte: incomplete until the last byte of the block's CRLF. */
    const char *why;
    in = evbuffer_new();
    for (size_t i = 0; i < 17; i++) {
        evbuffer_add(in, reply + i, 1);
        REQUIRE(wb_frame_find(in, WB_PROTO_FAKTORY, OP_FETCH, &f, &why) == (i == 16 ? 1 : 0));
    }
    ck_assert_uint_eq(f.total, 17);
    ck_assert(memcmp(f.data, "{\"a\":\"\r\n\"}", 10) == 0);
    evbuffer_free(in);
}
END_TEST

START_TEST(test_frame_malformed)
{
    static const char *const bad[] = {
        "$\r\n",        "$x\r\n",       "$-2\r\n",         "$-1x\r\n",
        "$ 1\r\nx\r\n", "$1\r\nxy\r\n", "$2\r\nx\r\n\r\n", "$99999999999999999999\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct wb_frame f;
        struct evbuffer *in;
        ck_assert_msg(frame(bad[i], strlen(bad[i]), &f, &in) == -1, "%s", bad[i]);
        evbuffer_free(in);
    }
}
END_TEST

/* The other protocols keep their framing: a `$` line is a line there. */
START_TEST(test_frame_not_faktory)
{
    struct wb_frame f;
    const char *why;
    struct evbuffer *in = evbuffer_new();
    evbuffer_add(in, "$5\r\nhello\r\n", 11);
    ck_assert_int_eq(wb_frame_find(in, WB_PROTO_WORKQ, OP_LEASE, &f, &why), 1);
    ck_assert_ptr_null(f.data);
    ck_assert_uint_eq(f.total, 4);
    evbuffer_free(in);
}
END_TEST

static Suite *
bench_fwp_suite(void)
{
    const struct unit_case cases[] = {
        {"frame_lines", test_frame_lines},
        {"frame_bulk", test_frame_bulk},
        {"frame_malformed", test_frame_malformed},
        {"frame_not_faktory", test_frame_not_faktory},
    };
    return unit_suite("bench_fwp", cases, sizeof cases / sizeof cases[0]);
}

int
main(void)
{
    return unit_run(bench_fwp_suite(), NULL);
}
