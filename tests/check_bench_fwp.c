/* check_bench_fwp.c - unit tests for workq-bench's Faktory parsing: RESP
 * framing in bench/wb_frame.c (simple strings, errors, bulk strings whole
 * and byte by byte, the null bulk string, malformed headers) and the JSON
 * scanner of bench/wb_json.c (members found whatever the layout, malformed
 * text refused, plain strings and one-string arrays). */
#include "wb.h"
#include "wb_json.h"
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

static int
members(const char *s, struct wb_tok *v)
{
    static const char *const keys[] = {"jid", "queue", "args"};
    return wb_json_members(s, strlen(s), keys, v, 3);
}

static bool
tok_eq(struct wb_tok t, const char *s)
{
    return t.s != NULL && t.len == strlen(s) && memcmp(t.s, s, t.len) == 0;
}

START_TEST(test_json_members)
{
    struct wb_tok v[3], str;
    ck_assert_int_eq(
        members("{\"jid\":\"j1\",\"jobtype\":\"bench\",\"args\":[\"p\"],\"queue\":\"q\"}", v), 0);
    ck_assert(tok_eq(v[0], "\"j1\""));
    ck_assert(tok_eq(v[1], "\"q\""));
    ck_assert(tok_eq(v[2], "[\"p\"]"));
    /* Any order, whitespace, nesting (a nested "jid" is not the member). */
    ck_assert_int_eq(
        members(" \r\n{ \"custom\" : {\"jid\":[1,{\"x\":null}]} ,\t\"args\" : [ \"p\" ] "
                ", \"n\":-1.5e+3, \"t\":true, \"f\":false, \"e\":\"\\\"\\u00e9\\n\", "
                "\"jid\" : \"j2\" , \"o\":{} , \"a\":[] }\n",
                v),
        0);
    ck_assert(tok_eq(v[0], "\"j2\""));
    ck_assert_ptr_null(v[1].s);
    ck_assert(tok_eq(v[2], "[ \"p\" ]"));
    ck_assert(wb_json_one_string_array(v[2], &str));
    ck_assert(tok_eq(str, "p"));
    ck_assert_int_eq(members("{}", v), 0);
    ck_assert_ptr_null(v[0].s);
    /* A name written with escapes is another name. */
    ck_assert_int_eq(members("{\"j\\u0069d\":\"x\"}", v), 0);
    ck_assert_ptr_null(v[0].s);
    /* Duplicates: a wanted key twice is refused, another one is not. */
    ck_assert_int_eq(members("{\"jid\":\"a\",\"jid\":\"b\"}", v), -1);
    ck_assert_int_eq(members("{\"x\":1,\"x\":2}", v), 0);
}
END_TEST

START_TEST(test_json_malformed)
{
    static const char *const bad[] = {
        "",
        "[]",
        "\"jid\"",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,}",
        "{\"a\" 1}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":tru}",
        "{\"a\":nul}",
        "{\"a\":\"\\q\"}",
        "{\"a\":\"\\u12\"}",
        "{\"a\":\"x}",
        "{a:1}",
        "{\"a\":1}x",
        "{\"a\":1}{}",
        "{\"a\":[1,]}",
        "{\"a\":[1 2]}",
        "{\"a\":\"\t\"}",
        "{\"a\":'x'}",
        "{\"a\":+1}",
    };
    struct wb_tok v[3];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(members(bad[i], v) == -1, "accepted: %s", bad[i]);
    /* Nesting: 64 levels in all are fine, 65 are not. */
    char deep[200];
    for (int levels = 64; levels <= 65; levels++) {
        size_t n = 0;
        n += (size_t)sprintf(deep + n, "{\"a\":");
        for (int k = 1; k < levels; k++)
            deep[n++] = '[';
        for (int k = 1; k < levels; k++)
            deep[n++] = ']';
        deep[n++] = '}';
        deep[n] = '\0';
        ck_assert_int_eq(members(deep, v), levels == 64 ? 0 : -1);
    }
}
END_TEST

START_TEST(test_json_strings)
{
    struct wb_tok out;
    ck_assert(wb_json_plain_string((struct wb_tok){"\"abc\"", 5}, &out));
    ck_assert(tok_eq(out, "abc"));
    ck_assert(wb_json_plain_string((struct wb_tok){"\"\"", 2}, &out));
    ck_assert_uint_eq(out.len, 0);
    ck_assert(!wb_json_plain_string((struct wb_tok){"\"a\\\"b\"", 6}, &out));
    ck_assert(!wb_json_plain_string((struct wb_tok){"abc", 3}, &out));
    ck_assert(!wb_json_plain_string((struct wb_tok){"1", 1}, &out));
    ck_assert(!wb_json_plain_string((struct wb_tok){NULL, 0}, &out));
    ck_assert(wb_json_one_string_array((struct wb_tok){"[\"x\"]", 5}, &out));
    ck_assert(tok_eq(out, "x"));
    ck_assert(wb_json_one_string_array((struct wb_tok){"[ \"\" ]", 6}, &out));
    ck_assert_uint_eq(out.len, 0);
    ck_assert(!wb_json_one_string_array((struct wb_tok){"[\"x\",\"y\"]", 9}, &out));
    ck_assert(!wb_json_one_string_array((struct wb_tok){"[]", 2}, &out));
    ck_assert(!wb_json_one_string_array((struct wb_tok){"[1]", 3}, &out));
    ck_assert(!wb_json_one_string_array((struct wb_tok){"[\"\\n\"]", 6}, &out));
    ck_assert(!wb_json_one_string_array((struct wb_tok){"\"x\"", 3}, &out));
    ck_assert(!wb_json_one_string_array((struct wb_tok){NULL, 0}, &out));
}
END_TEST

static Suite *
bench_fwp_suite(void)
{
    const struct unit_case cases[] = {
        {"frame_lines", test_frame_lines},         {"frame_bulk", test_frame_bulk},
        {"frame_malformed", test_frame_malformed}, {"frame_not_faktory", test_frame_not_faktory},
        {"json_members", test_json_members},       {"json_malformed", test_json_malformed},
        {"json_strings", test_json_strings},
    };
    return unit_suite("bench_fwp", cases, sizeof cases / sizeof cases[0]);
}

int
main(void)
{
    return unit_run(bench_fwp_suite(), NULL);
}
