/* check_bench_resp.c - unit tests for workq-bench's RESP2 framing for
 * --protocol hero (bench/wb_frame.c): every kind of reply (simple strings,
 * errors, integers, bulk strings, arrays, nested arrays, the null bulk
 * string and the null array), whole, byte by byte and pipelined; the
 * elements of an array of bulk strings (wb_resp_array), integers
 * (wb_resp_uint); malformed replies.  sys_bench.c runs the client against
 * workq-server's Hero listener and, where it is installed, redis-server. */
#include "wb.h"
#include "wb_proto.h"

#include <check.h>
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

/* Frame s (NUL-terminated) as a Hero reply, given all at once; the buffer
 * is kept in *keep for the frame's pointers. */
static int
frame(const char *s, struct wb_frame *f, struct evbuffer **keep)
{
    const char *why;
    struct evbuffer *in = evbuffer_new();
    evbuffer_add(in, s, strlen(s));
    *keep = in;
    return wb_frame_find(in, WB_PROTO_HERO, OP_BLPOP, f, &why);
}

START_TEST(test_resp_lines)
{
    static const char *const lines[] = {
        "+OK", "-ERR unknown command 'x'", ":0", ":11", ":-3", "$-1", "*-1"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char buf[64];
        struct wb_frame f;
        struct evbuffer *in;
        snprintf(buf, sizeof buf, "%s\r\n:1\r\n", lines[i]);
        ck_assert_int_eq(frame(buf, &f, &in), 1);
        ck_assert_msg(wb_frame_is(&f, lines[i]), "%s", lines[i]);
        ck_assert_uint_eq(f.total, strlen(lines[i]) + 2);
        evbuffer_free(in);
    }
    uint64_t n;
    struct wb_frame f;
    struct evbuffer *in;
    ck_assert_int_eq(frame(":11\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_uint(&f, &n), 0);
    ck_assert_uint_eq(n, 11);
    evbuffer_free(in);
    ck_assert_int_eq(frame(":-1\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_uint(&f, &n), -1); /* negative */
    evbuffer_free(in);
    ck_assert_int_eq(frame("+11\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_uint(&f, &n), -1); /* not an integer reply */
    evbuffer_free(in);
    ck_assert_int_eq(frame("+OK\r", &f, &in), 0);
    evbuffer_free(in);
    ck_assert_int_eq(frame("+OK\n", &f, &in), 0); /* CRLF strictly */
    evbuffer_free(in);
}
END_TEST

START_TEST(test_resp_bulk)
{
    struct wb_frame f;
    struct evbuffer *in;
    /* A CRLF inside the block is data. */
    ck_assert_int_eq(frame("$6\r\na\r\nb\r\n\r\n+OK\r\n", &f, &in), 1);
    ck_assert(memcmp(f.line, "$6", 2) == 0 && f.line_len == 2);
    ck_assert_uint_eq(f.data_len, 6);
    ck_assert(memcmp(f.data, "a\r\nb\r\n", 6) == 0);
    ck_assert_uint_eq(f.total, 12);
    evbuffer_free(in);
    ck_assert_int_eq(frame("$0\r\n\r\n", &f, &in), 1);
    ck_assert_ptr_nonnull(f.data);
    ck_assert_uint_eq(f.data_len, 0);
    ck_assert_uint_eq(f.total, 6);
    evbuffer_free(in);
}
END_TEST

/* BLPOP's reply: [key, id]; HGETALL's: field, value, ... */
START_TEST(test_resp_array)
{
    static const char blpop[] = "*2\r\n$19\r\nhero:work_queue:w.0\r\n$3\r\nj-1\r\n";
    struct wb_frame f;
    struct evbuffer *in;
    struct wb_tok el[4];
    ck_assert_int_eq(frame(blpop, &f, &in), 1);
    ck_assert_uint_eq(f.total, sizeof blpop - 1);
    ck_assert(memcmp(f.line, "*2", 2) == 0 && f.line_len == 2);
    ck_assert_int_eq(wb_resp_array(&f, el, 4), 2);
    ck_assert(wb_tok_is(el[0], "hero:work_queue:w.0"));
    ck_assert(wb_tok_is(el[1], "j-1"));
    ck_assert_int_eq(wb_resp_array(&f, el, 1), -1); /* more than max */
    evbuffer_free(in);
    /* A null element, an empty one. */
    ck_assert_int_eq(frame("*3\r\n$-1\r\n$0\r\n\r\n$2\r\n\r\n\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_array(&f, el, 4), 3);
    ck_assert_ptr_null(el[0].s);
    ck_assert_ptr_nonnull(el[1].s);
    ck_assert_uint_eq(el[1].len, 0);
    ck_assert(wb_tok_is(el[2], "\r\n"));
    evbuffer_free(in);
    /* The empty array has no element; the null array is no array. */
    ck_assert_int_eq(frame("*0\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_array(&f, el, 4), 0);
    ck_assert_uint_eq(f.total, 4);
    evbuffer_free(in);
    ck_assert_int_eq(frame("*-1\r\n", &f, &in), 1);
    ck_assert_int_eq(wb_resp_array(&f, el, 4), -1);
    evbuffer_free(in);
    /* Nested arrays and integers frame whole, but are not bulk strings. */
    static const char nested[] = "*3\r\n:1\r\n*2\r\n+a\r\n$1\r\nb\r\n-ERR x\r\n+next\r\n";
    ck_assert_int_eq(frame(nested, &f, &in), 1);
    ck_assert_uint_eq(f.total, sizeof nested - 1 - 7);
    ck_assert_int_eq(wb_resp_array(&f, el, 4), -1);
    evbuffer_free(in);
    ck_assert_int_eq(frame("*1\r\n*0\r\n", &f, &in), 1);
    ck_assert_uint_eq(f.total, 8);
    evbuffer_free(in);
}
END_TEST

/* Byte by byte: incomplete until the last byte; then two pipelined replies
 * one after the other. */
START_TEST(test_resp_partial)
{
    static const char reply[] = "*2\r\n$5\r\nk\r\ney\r\n$2\r\nid\r\n:7\r\n";
    size_t first = sizeof reply - 1 - 4;
    struct wb_frame f;
    const char *why;
    struct evbuffer *in = evbuffer_new();
    for (size_t i = 0; i < first; i++) {
        evbuffer_add(in, reply + i, 1);
        REQUIRE(wb_frame_find(in, WB_PROTO_HERO, OP_BLPOP, &f, &why) == (i == first - 1 ? 1 : 0));
    }
    ck_assert_uint_eq(f.total, first);
    struct wb_tok el[2];
    ck_assert_int_eq(wb_resp_array(&f, el, 2), 2);
    ck_assert(wb_tok_is(el[0], "k\r\ney"));
    evbuffer_drain(in, f.total);
    evbuffer_add(in, reply + first, 4);
    ck_assert_int_eq(wb_frame_find(in, WB_PROTO_HERO, OP_LPUSH, &f, &why), 1);
    ck_assert(wb_frame_is(&f, ":7"));
    evbuffer_free(in);
}
END_TEST

START_TEST(test_resp_malformed)
{
    static const char *const bad[] = {"\r\n",    "x\r\n",
                                      "$\r\n",   "$x\r\n",
                                      "$-2\r\n", "$1\r\nxy\r\n",
                                      "*\r\n",   "*-2\r\n",
                                      "*1x\r\n", "*2\r\n+a\r\n?\r\n",
                                      ":\r\n",   ":1a\r\n",
                                      ":-\r\n",  "$99999999999999999999\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct wb_frame f;
        struct evbuffer *in;
        ck_assert_msg(frame(bad[i], &f, &in) == -1, "%s", bad[i]);
        evbuffer_free(in);
    }
    /* No line end within BENCH_MAX_LINE: framing is lost. */
    static char big[BENCH_MAX_LINE + 10];
    memset(big, 'a', sizeof big - 1);
    big[0] = '+';
    struct wb_frame f;
    struct evbuffer *in;
    ck_assert_int_eq(frame(big, &f, &in), -1);
    evbuffer_free(in);
}
END_TEST

static Suite *
bench_resp_suite(void)
{
    const struct unit_case cases[] = {
        {"resp_lines", test_resp_lines},         {"resp_bulk", test_resp_bulk},
        {"resp_array", test_resp_array},         {"resp_partial", test_resp_partial},
        {"resp_malformed", test_resp_malformed},
    };
    return unit_suite("bench_resp", cases, sizeof cases / sizeof cases[0]);
}

int
main(void)
{
    return unit_run(bench_resp_suite(), NULL);
}
