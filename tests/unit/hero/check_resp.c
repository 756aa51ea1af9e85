/* check_resp.c - unit tests for src/hero/resp.c: multibulk and inline
 * requests as Redis 7 reads them, pipelined and cut anywhere, and each
 * protocol error's exact text. */
#include "lib/wq.h"
#include "hero/resp.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static struct resp_parser p;

static void
setup(void)
{
    resp_parser_init(&p, 1048576);
}

static void
teardown(void)
{
    resp_parser_free(&p);
}

/* Parse text (a C string) whole: the status, and the words joined by '|'. */
static enum resp_status
parse(const char *text, size_t *used, char *words, size_t size)
{
    const char *err = NULL;
    enum resp_status st = resp_parse(&p, text, strlen(text), used, &err);
    words[0] = '\0';
    if (st == RESP_ERROR) {
        snprintf(words, size, "%s", err);
        return st;
    }
    for (size_t i = 0; i < p.argc && st == RESP_OK; i++) {
        size_t at = strlen(words);
        snprintf(words + at, size - at, "%s%.*s", i ? "|" : "", (int)p.argv[i].n, p.argv[i].p);
    }
    return st;
}

static void
expect(const char *text, enum resp_status want, size_t want_used, const char *want_words)
{
    size_t used = 99;
    char words[512];
    enum resp_status st = parse(text, &used, words, sizeof words);
    ck_assert_msg(st == want, "%s: status %d, not %d", text, st, want);
    if (want != RESP_ERROR && want != RESP_MORE)
        ck_assert_uint_eq(used, want_used);
    if (want == RESP_MORE) /* how far the input must reach */
        ck_assert_uint_eq(used, want_used != 0 ? want_used : strlen(text) + 1);
    if (want_words != NULL)
        ck_assert_str_eq(words, want_words);
}

START_TEST(test_multibulk)
{
    expect("*1\r\n$4\r\nPING\r\n", RESP_OK, 14, "PING");
    expect("*3\r\n$4\r\nHSET\r\n$9\r\nhero:job:\r\n$0\r\n\r\n", RESP_OK, 35, "HSET|hero:job:|");
    /* binary values: a CR, an LF, a NUL inside a bulk */
    const char bin[] = "*2\r\n$4\r\nECHO\r\n$3\r\na\r\n\r\n";
    size_t used;
    const char *err;
    ck_assert_int_eq(resp_parse(&p, bin, sizeof bin - 1, &used, &err), RESP_OK);
    ck_assert_uint_eq(p.argv[1].n, 3);
    ck_assert_int_eq(memcmp(p.argv[1].p, "a\r\n", 3), 0);
    /* pipelined: one request at a time */
    const char two[] = "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nINFO\r\n";
    ck_assert_int_eq(resp_parse(&p, two, sizeof two - 1, &used, &err), RESP_OK);
    ck_assert_uint_eq(used, 14);
    ck_assert_int_eq(resp_parse(&p, two + used, sizeof two - 1 - used, &used, &err), RESP_OK);
    ck_assert_int_eq(memcmp(p.argv[0].p, "INFO", 4), 0);
    /* no request at all */
    expect("*0\r\n", RESP_EMPTY, 4, NULL);
    expect("*-1\r\n", RESP_EMPTY, 5, NULL);
}
END_TEST

/* Cut anywhere, a request asks for more and changes nothing. */
START_TEST(test_cut_anywhere)
{
    const char *reqs[] = {"*3\r\n$5\r\nLPUSH\r\n$3\r\nabc\r\n$12\r\n123456789012\r\n",
                          "BLPOP hero:q 0.5\r\n", "set \"a b\" 'c d'\n"};
    for (size_t r = 0; r < WQ_ARRAY_LEN(reqs); r++) {
        size_t n = strlen(reqs[r]), used;
        const char *err;
        for (size_t cut = 0; cut < n; cut++) {
            char *copy = malloc(cut + 1);
            memcpy(copy, reqs[r], cut);
            enum resp_status st = resp_parse(&p, copy, cut, &used, &err);
            ck_assert_msg(st == RESP_MORE, "%s cut at %zu: %d", reqs[r], cut, st);
            /* more than it has, never past the request's end */
            ck_assert_uint_gt(used, cut);
            ck_assert_uint_le(used, n);
            free(copy);
        }
    }
}
END_TEST

START_TEST(test_inline)
{
    expect("PING\r\n", RESP_OK, 6, "PING");
    expect("ping\n", RESP_OK, 5, "ping");
    expect("  HGET  hero:job:1\t id \r\n", RESP_OK, 25, "HGET|hero:job:1|id");
    expect("\r\n", RESP_EMPTY, 2, NULL);
    expect("   \n", RESP_EMPTY, 4, NULL);
    /* Redis's quotes */
    expect("SET \"a b\" 'c d'\r\n", RESP_OK, 17, "SET|a b|c d");
    expect("ECHO \"\\x41\\n\\\"q\\\\\"\r\n", RESP_OK, 20, NULL);
    ck_assert_uint_eq(p.argv[1].n, 5);
    ck_assert_int_eq(memcmp(p.argv[1].p, "A\n\"q\\", 5), 0);
    expect("ECHO 'it\\'s'\r\n", RESP_OK, 14, "ECHO|it's");
    expect("ECHO \"\"\r\n", RESP_OK, 9, "ECHO|");
    expect("ECHO ab\"c d\"e\r\n", RESP_ERROR, 0, "Protocol error: unbalanced quotes in request");
    expect("ECHO a\"b c\"\r\n", RESP_OK, 13, "ECHO|ab c");
}
END_TEST

/* Every protocol error, byte for byte (the server answers "-ERR " and it,
 * then closes). */
START_TEST(test_errors)
{
    expect("*x\r\n", RESP_ERROR, 0, "Protocol error: invalid multibulk length");
    expect("*2147483648\r\n", RESP_ERROR, 0, "Protocol error: invalid multibulk length");
    /* before AUTH: Redis's tighter bounds */
    p.unauth = true;
    expect("*11\r\n", RESP_ERROR, 0, "Protocol error: unauthenticated multibulk length");
    expect("*1\r\n$16385\r\n", RESP_ERROR, 0, "Protocol error: unauthenticated bulk length");
    expect("*10\r\n$16384\r\n", RESP_MORE, 13 + 16384 + 2, NULL);
    p.unauth = false;
    expect("*01\r\n", RESP_ERROR, 0, "Protocol error: invalid multibulk length");
    expect("*1\r\nfooz\r\n", RESP_ERROR, 0, "Protocol error: expected '$', got 'f'");
    expect("*2\r\n$3\r\nSET\r\n:1\r\n", RESP_ERROR, 0, "Protocol error: expected '$', got ':'");
    expect("*1\r\n$-1\r\n", RESP_ERROR, 0, "Protocol error: invalid bulk length");
    expect("*1\r\n$x\r\n", RESP_ERROR, 0, "Protocol error: invalid bulk length");
    expect("*1\r\n$1048577\r\n", RESP_ERROR, 0, "Protocol error: invalid bulk length");
    expect("\"unclosed\r\n", RESP_ERROR, 0, "Protocol error: unbalanced quotes in request");
    expect("'unclosed\r\n", RESP_ERROR, 0, "Protocol error: unbalanced quotes in request");
    /* the bulk at its limit is fine */
    char *big = malloc(1048576 + 64);
    int h = snprintf(big, 64, "*1\r\n$1048576\r\n");
    memset(big + h, 'v', 1048576);
    memcpy(big + h + 1048576, "\r\n", 2);
    size_t used;
    const char *err;
    ck_assert_int_eq(resp_parse(&p, big, (size_t)h + 1048576 + 2, &used, &err), RESP_OK);
    ck_assert_uint_eq(p.argv[0].n, 1048576);
    free(big);
    /* lines too long to wait for */
    char *line = malloc(RESP_MAX_INLINE + 8);
    memset(line, 'a', RESP_MAX_INLINE + 8);
    ck_assert_int_eq(resp_parse(&p, line, RESP_MAX_INLINE, &used, &err), RESP_MORE);
    ck_assert_int_eq(resp_parse(&p, line, RESP_MAX_INLINE + 1, &used, &err), RESP_ERROR);
    ck_assert_str_eq(err, "Protocol error: too big inline request");
    line[0] = '*';
    ck_assert_int_eq(resp_parse(&p, line, RESP_MAX_INLINE + 1, &used, &err), RESP_ERROR);
    ck_assert_str_eq(err, "Protocol error: too big mbulk count string");
    memcpy(line, "*1\r\n$", 5);
    ck_assert_int_eq(resp_parse(&p, line, RESP_MAX_INLINE + 5, &used, &err), RESP_ERROR);
    ck_assert_str_eq(err, "Protocol error: too big bulk count string");
    free(line);
}
END_TEST

static Suite *
resp_suite(void)
{
    const struct unit_case cases[] = {
        {"multibulk", test_multibulk},
        {"cut_anywhere", test_cut_anywhere},
        {"inline", test_inline},
        {"errors", test_errors},
    };
    return unit_suite_fixture("resp", cases, WQ_ARRAY_LEN(cases), setup, teardown);
}

int
main(void)
{
    return unit_run(resp_suite(), NULL);
}
