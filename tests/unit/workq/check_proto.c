/* check_proto.c - unit tests for framing and tokenizing (src/workq/proto.c).
 * A small driver plays the connection: it buffers input, calls proto_parse
 * while the contract allows, drops consumed bytes and writes every result as
 * one line of text ("R:..." request, "E:..." error, "F:..." fatal), so two
 * runs over the same stream compare as two strings however the stream was
 * cut into reads. */
#include "lib/wq.h"
#include "workq/proto.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "rng.h"
#include "unit.h"

#define ID "0f0e0d0c-0b0a-4908-8706-050403020100"

/* ---- the syntax table, shaped like src/workq/cmd.c's ---- */

static const struct proto_syntax test_syntax[] = {
    {"add", 5, 5, true, "Invalid payload size"},
    {"complete", 2, 2, true, "Invalid result size"},
    {"fail", 2, 2, true, "Invalid result size"},
    {"result", 2, 2, false, NULL},
    {"delete", 1, 1, false, NULL},
    {"lease", 2, PROTO_ANY_ARGS, false, NULL},
};

static const struct proto_syntax *
test_lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(test_syntax); i++) {
        const char *n = test_syntax[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return &test_syntax[i];
    }
    return NULL;
}

/* ---- a growable string ---- */

struct sbuf {
    char *p;
    size_t len, cap;
};

static void
sb_put(struct sbuf *s, const char *data, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + n + 1)
            cap *= 2;
        s->p = realloc(s->p, cap);
        REQUIRE(s->p != NULL);
        s->cap = cap;
    }
    memcpy(s->p + s->len, data, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static void
sb_puts(struct sbuf *s, const char *str)
{
    sb_put(s, str, strlen(str));
}

static void sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(struct sbuf *s, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    REQUIRE(n >= 0 && (size_t)n < sizeof tmp);
    sb_put(s, tmp, (size_t)n);
}

/* Printable bytes as they are, everything else (and '\\') as \xHH. */
static void
sb_escaped(struct sbuf *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch >= 0x21 && ch < 0x7f && ch != '\\')
            sb_put(s, p + i, 1);
        else
            sb_printf(s, "\\x%02x", ch);
    }
}

static const char *
sb_str(const struct sbuf *s)
{
    return s->p ? s->p : "";
}

static void
sb_free(struct sbuf *s)
{
    free(s->p);
    *s = (struct sbuf){0};
}

/* ---- the connection driver ---- */

struct drv {
    struct proto p;
    char *buf; /* unconsumed input; reallocated on every append */
    size_t len;
    size_t need; /* the parser asked for this many bytes */
    bool eager;  /* ignore need: call after every append */
    bool closed;
    struct sbuf ev;
    size_t nevents;
    size_t calls;
    size_t max_len; /* most bytes ever buffered */
};

static void
drv_init(struct drv *d, size_t max_line, uint64_t max_payload, bool eager)
{
    memset(d, 0, sizeof *d);
    proto_init(&d->p, test_lookup, max_line, max_payload);
    d->eager = eager;
    d->need = 1;
}

static void
drv_free(struct drv *d)
{
    proto_clear(&d->p);
    free(d->buf);
    sb_free(&d->ev);
}

static void
drv_record(struct drv *d, enum proto_result r, const struct request *req, const char *err)
{
    switch (r) {
    case PROTO_NEED:
        return;
    case PROTO_REQUEST:
        sb_printf(&d->ev, "R:%s", req->cmd->name);
        for (size_t i = 0; i < req->nargs; i++) {
            sb_puts(&d->ev, " a:");
            sb_escaped(&d->ev, req->args[i].p, req->args[i].n);
        }
        for (size_t i = 0; i < req->nflags; i++) {
            sb_puts(&d->ev, " f:");
            sb_escaped(&d->ev, req->flags[i].p, req->flags[i].n);
        }
        if (req->cmd->block) {
            REQUIRE(req->block != NULL || req->block_len == 0);
            sb_printf(&d->ev, " b%zu:", req->block_len);
            sb_escaped(&d->ev, req->block, req->block_len);
        }
        break;
    case PROTO_ERROR:
        REQUIRE(err != NULL);
        sb_printf(&d->ev, "E:%s", err);
        break;
    case PROTO_FATAL:
        REQUIRE(err != NULL);
        sb_printf(&d->ev, "F:%s", err);
        break;
    case PROTO_SERVER_ERROR:
        REQUIRE(err != NULL);
        sb_printf(&d->ev, "S:%s", err);
        break;
    }
    sb_puts(&d->ev, "\n");
    d->nevents++;
}

/* Call the parser while the contract allows. */
static void
drv_pump(struct drv *d)
{
    int stalls = 0;
    while (!d->closed && (d->eager || d->len >= d->need)) {
        struct request req;
        memset(&req, 0, sizeof req);
        const char *err = NULL;
        size_t consumed = (size_t)-1, need = 0;
        enum proto_result r = proto_parse(&d->p, d->buf, d->len, &req, &err, &consumed, &need);
        d->calls++;
        REQUIRE(consumed <= d->len);
        drv_record(d, r, &req, err);
        memmove(d->buf, d->buf + consumed, d->len - consumed);
        d->len -= consumed;
        if (r == PROTO_NEED) {
            REQUIRE(need > d->len); /* it must really be waiting for more */
            d->need = need;
            return;
        }
        d->need = 0;
        if (r == PROTO_FATAL)
            d->closed = true;
        /* An answer without consuming anything must change the state; it can
         * not happen twice in a row. */
        stalls = consumed == 0 ? stalls + 1 : 0;
        REQUIRE(stalls < 2);
    }
}

/* Append data as one read, into a fresh allocation (a parser that kept a
 * pointer into the old buffer would be caught by ASan or valgrind). */
static void
drv_feed(struct drv *d, const char *data, size_t n)
{
    if (d->closed)
        return;
    char *nb = malloc(d->len + n + 1);
    REQUIRE(nb != NULL);
    if (d->len > 0)
        memcpy(nb, d->buf, d->len);
    memcpy(nb + d->len, data, n);
    free(d->buf);
    d->buf = nb;
    d->len += n;
    if (d->len > d->max_len)
        d->max_len = d->len;
    drv_pump(d);
}

static void
drv_feeds(struct drv *d, const char *s)
{
    drv_feed(d, s, strlen(s));
}

/* Events of s fed at once with the default limits. */
static char *
events_of(const char *s, size_t max_line, uint64_t max_payload)
{
    struct drv d;
    drv_init(&d, max_line, max_payload, false);
    drv_feeds(&d, s);
    char *out = strdup(sb_str(&d.ev));
    drv_free(&d);
    return out;
}

/* Feed s at once (and, separately, byte by byte) and compare the events. */
static void
expect_lim(const char *s, size_t max_line, uint64_t max_payload, const char *want)
{
    char *got = events_of(s, max_line, max_payload);
    ck_assert_str_eq(got, want);
    free(got);

    struct drv d;
    drv_init(&d, max_line, max_payload, false);
    for (size_t i = 0; s[i] != '\0'; i++)
        drv_feed(&d, s + i, 1);
    ck_assert_str_eq(sb_str(&d.ev), want);
    drv_free(&d);
}

static void
expect(const char *s, const char *want)
{
    expect_lim(s, WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD, want);
}

/* ---- errors ---- */

START_TEST(test_unknown_command)
{
    expect("foo\r\n", "E:Unknown command\n");
    expect("ADD " ID " q 1 1 0\r\n", "E:Unknown command\n");
    expect("inspect server\r\n", "E:Unknown command\n"); /* not in this table */
    expect("deletex y\r\n", "E:Unknown command\n");
    expect("-a=b delete x\r\n", "E:Unknown command\n"); /* the first token is the name */
    /* The connection goes on. */
    expect("foo\r\ndelete x\r\n", "E:Unknown command\nR:delete a:x\n");
}
END_TEST

START_TEST(test_arg_counts)
{
    const char *inv = "E:Invalid command args\n";
    /* add: exactly 5 positional */
    expect("add " ID " q 1 1\r\n", inv);
    expect("add " ID " q 1 1 0 7\r\n", inv);
    expect("add\r\n", inv);
    /* complete / fail: exactly 2 */
    expect("complete " ID "\r\n", inv);
    expect("complete " ID " 0 0\r\n", inv);
    expect("fail\r\n", inv);
    expect("fail " ID " 1 2\r\n", inv);
    /* result: exactly 2 */
    expect("result " ID "\r\n", inv);
    expect("result " ID " 1 2\r\n", inv);
    /* delete: exactly 1 */
    expect("delete\r\n", inv);
    expect("delete a b\r\n", inv);
    /* lease: 2 or more */
    expect("lease 5\r\n", inv);
    expect("lease\r\n", inv);
    expect("lease a 5\r\n", "R:lease a:a a:5\n");
    expect("lease a b c d e f g h i j 0\r\n",
           "R:lease a:a a:b a:c a:d a:e a:f a:g a:h a:i a:j a:0\n");
    /* Flags are not positional: they do not make up for a missing one. */
    expect("delete -a=b\r\n", inv);
    expect("complete " ID " -x=1\r\n", inv);
    expect("delete x -a=b\r\n", "R:delete a:x f:-a=b\n");
    /* Wrong arity reads no data block: what follows is the next command. */
    expect("add " ID " q 1 1\r\ndelete y\r\n", "E:Invalid command args\nR:delete a:y\n");
    expect("complete " ID "\r\n2\r\n", "E:Invalid command args\nE:Unknown command\n");
}
END_TEST

/* ---- block sizes ---- */

START_TEST(test_size_syntax)
{
    const char *pay = "E:Invalid payload size\n";
    const char *res = "E:Invalid result size\n";
    expect("add " ID " q 1 1 +1\r\n", pay);
    expect("add " ID " q 1 1 -1\r\n", pay); /* no '=': positional, and not a number */
    expect("add " ID " q 1 1 abc\r\n", pay);
    expect("add " ID " q 1 1 1a\r\n", pay);
    expect("add " ID " q 1 1 0x1\r\n", pay);
    expect("add " ID " q 1 1 18446744073709551616\r\n", pay); /* 2^64 */
    expect("add " ID " q 1 1 99999999999999999999\r\n", pay);
    expect("complete " ID " +1\r\n", res);
    expect("complete " ID " -1\r\n", res);
    expect("fail " ID " abc\r\n", res);
    expect("fail " ID " 18446744073709551616\r\n", res);
    /* An empty token cannot come out of the tokenizer; the nearest thing is a
     * token of a tab, and the number parser itself rejects "". */
    expect("complete " ID " \t\r\n", res);
    uint64_t v = 7;
    ck_assert_int_eq(util_parse_u64("", 0, UINT64_MAX, &v), -1);
    ck_assert_int_eq(util_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
    ck_assert(v == UINT64_MAX);
    /* No block is read after a bad size: the bytes are the next command. */
    expect("complete " ID " +2\r\nab\r\ndelete y\r\n",
           "E:Invalid result size\nE:Unknown command\nR:delete a:y\n");
    /* Leading zeros are fine. */
    expect("complete " ID " 0002\r\nab\r\n", "R:complete a:" ID " a:0002 b2:ab\n");
    /* The size is the last positional, wherever the flags stand. */
    expect("complete " ID " 2 -a=b\r\nab\r\n", "R:complete a:" ID " a:2 f:-a=b b2:ab\n");
    expect("add -priority=5 " ID " q 1 1 -max-fails=2 0\r\n\r\n",
           "R:add a:" ID " a:q a:1 a:1 a:0 f:-priority=5 f:-max-fails=2 b0:\n");
}
END_TEST

START_TEST(test_size_limit)
{
    /* max_payload 16: 16 is accepted, 17 is skipped. */
    expect_lim("complete x 16\r\n0123456789abcdef\r\n", 64, 16,
               "R:complete a:x a:16 b16:0123456789abcdef\n");
    expect_lim("complete x 17\r\n0123456789abcdefg\r\ndelete y\r\n", 64, 16,
               "E:Invalid result size\nR:delete a:y\n");
    /* The skipped block may hold anything, commands included. */
    expect_lim("add " ID " q 1 1 20\r\ndelete a\r\ndelete b\r\n\r\ndelete c\n", 64, 16,
               "E:Invalid payload size\nR:delete a:c\n");
    /* A bare LF terminates a skipped block too. */
    expect_lim("fail x 17\r\n0123456789abcdefg\ndelete y\n", 64, 16,
               "E:Invalid result size\nR:delete a:y\n");
    /* Up to 64 MiB (here: 64 times 16 is less) a block is read past... */
    expect_lim("fail x 67108864\r\ndelete a\r\nfoo\r\n", 64, 16, "");
    /* ...above it the size error comes at once, and the connection closes. */
    expect_lim("fail x 67108865\r\ndelete a\r\n", 64, 16, "F:Invalid result size\n");
    expect_lim("add " ID " q 1 1 99999999999\r\n", 64, 16, "F:Invalid payload size\n");
    /* UINT64_MAX is a number, just too large. */
    expect_lim("fail x 18446744073709551615\r\ndelete a\r\nfoo\r\n", 64, 16,
               "F:Invalid result size\n");
    /* The bound is 64 times a limit above 1 MiB. */
    ck_assert_uint_eq(proto_skip_max(0), 64u << 20);
    ck_assert_uint_eq(proto_skip_max(1u << 20), 64u << 20);
    ck_assert_uint_eq(proto_skip_max(4u << 20), 256u << 20);
    /* max_payload 0: only empty blocks. */
    expect_lim("complete x 0\r\n\r\ncomplete x 1\r\na\r\n", 64, 0,
               "R:complete a:x a:0 b0:\nE:Invalid result size\n");
}
END_TEST

/* fits: a block that may not be buffered for lack of memory is dropped as
 * it streams in and answered with a server error; one already whole in
 * the input, or empty of new bytes, is parsed as usual. */
static uint64_t fits_room;
static bool
fits_test(void *arg, uint64_t len)
{
    (void)arg;
    return len <= fits_room;
}

START_TEST(test_block_fits)
{
    struct drv d;
    fits_room = 4;
    drv_init(&d, 64, 16, false);
    d.p.fits = fits_test;
    drv_feeds(&d, "complete x 10\r\n");
    drv_feeds(&d, "0123456789");
    drv_feeds(&d, "\r\ndelete y\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "S:Out of memory\nR:delete a:y\n");
    ck_assert_uint_eq(d.max_len, strlen("complete x 10\r\n")); /* nothing of it kept */
    /* a block that fits is buffered */
    drv_feeds(&d, "complete x 4\r\n0123\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "S:Out of memory\nR:delete a:y\nR:complete a:x a:4 b4:0123\n");
    drv_free(&d);
    /* the size limit still comes first */
    drv_init(&d, 64, 16, false);
    d.p.fits = fits_test;
    drv_feeds(&d, "complete x 17\r\n0123456789abcdefg\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\n");
    drv_free(&d);
}
END_TEST

/* The error for an oversize block comes only after the block and its
 * terminator have passed, and nothing of the block is kept. */
START_TEST(test_size_limit_timing)
{
    struct drv d;
    drv_init(&d, 64, 16, false);
    drv_feeds(&d, "complete x 20\r\n");
    ck_assert_uint_eq(d.nevents, 0);
    ck_assert_uint_eq(d.len, 0);
    drv_feeds(&d, "0123456789");
    ck_assert_uint_eq(d.nevents, 0);
    ck_assert_uint_eq(d.len, 0);
    drv_feeds(&d, "0123456789");
    ck_assert_uint_eq(d.nevents, 0);
    drv_feeds(&d, "\r");
    ck_assert_uint_eq(d.nevents, 0);
    drv_feeds(&d, "\n");
    ck_assert_uint_eq(d.nevents, 1);
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\n");
    ck_assert_uint_eq(d.len, 0);
    drv_feeds(&d, "delete y\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\nR:delete a:y\n");
    drv_free(&d);

    /* A bad terminator after a skipped block: one error, then the line is
     * discarded through its LF. */
    drv_init(&d, 64, 16, false);
    drv_feeds(&d, "complete x 17\r\n0123456789abcdefg");
    ck_assert_uint_eq(d.nevents, 0);
    drv_feeds(&d, "X");
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\n");
    drv_feeds(&d, "YZ delete q\r\n");
    drv_feeds(&d, "delete y\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\nR:delete a:y\n");
    drv_free(&d);

    /* A CR then something else. */
    expect_lim("complete x 17\r\n0123456789abcdefg\r\r\ndelete y\r\n", 64, 16,
               "E:Invalid result size\nR:delete a:y\n");
    expect_lim("complete x 17\r\n0123456789abcdefg\rdelete z\r\ndelete y\r\n", 64, 16,
               "E:Invalid result size\nR:delete a:y\n");
}
END_TEST

/* ---- the terminator of a block ---- */

START_TEST(test_block_terminator)
{
    const char *res = "E:Invalid result size\n";
    expect("complete x 2\r\nab\r\n", "R:complete a:x a:2 b2:ab\n");
    expect("complete x 2\r\nab\n", "R:complete a:x a:2 b2:ab\n");
    expect("complete x 2\nab\r\n", "R:complete a:x a:2 b2:ab\n");
    /* The block is raw bytes: CR, LF, spaces and NUL-free text as they are. */
    expect("complete x 4\r\n\r\n\r\n\r\n", "R:complete a:x a:4 b4:\\x0d\\x0a\\x0d\\x0a\n");
    expect("complete x 3\r\na b\r\n", "R:complete a:x a:3 b3:a\\x20b\n");
    expect("complete x 0\r\n\r\n", "R:complete a:x a:0 b0:\n");
    expect("complete x 0\n\n", "R:complete a:x a:0 b0:\n");
    /* Bad terminator: error, then discard through the next LF. */
    expect("complete x 2\r\nabc\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    expect("complete x 2\r\nabc\r\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    expect("complete x 2\r\nab\rc\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    expect("complete x 2\r\nab\r\r\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    expect("add " ID " q 1 1 2\r\nabc\ndelete y\r\n", "E:Invalid payload size\nR:delete a:y\n");
    /* A block that runs into the next command line eats it up to its LF. */
    expect("complete x 2\r\nabdelete y\r\ndelete z\r\n", "E:Invalid result size\nR:delete a:z\n");
    /* An empty block needs its terminator too. */
    expect("complete x 0\r\nX\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    expect("complete x 0\r\n\rX\ndelete y\r\n", "E:Invalid result size\nR:delete a:y\n");
    /* A short block: the parser waits, and a closed stream yields nothing. */
    expect("complete x 5\r\nab\r\n", "");
    /* The discarded tail is not a line: no length limit applies to it. */
    {
        struct sbuf s = {0};
        sb_puts(&s, "complete x 2\r\nab");
        for (int i = 0; i < 500; i++)
            sb_puts(&s, "zz");
        sb_puts(&s, "\ndelete y\r\n");
        expect_lim(sb_str(&s), 64, 16, "E:Invalid result size\nR:delete a:y\n");
        sb_free(&s);
    }
    (void)res;
}
END_TEST

/* ---- line length ---- */

/* "delete " + name of n - 7 bytes: a line of exactly n bytes. */
static void
line_of(struct sbuf *s, size_t n)
{
    sb_puts(s, "delete ");
    for (size_t i = 7; i < n; i++)
        sb_puts(s, "n");
}

START_TEST(test_line_too_long)
{
    const size_t max = 64;
    struct sbuf s = {0}, want = {0};

    /* Exactly max bytes + CRLF (or LF) is fine. */
    line_of(&s, max);
    sb_puts(&want, "R:delete a:");
    sb_put(&want, s.p + 7, max - 7);
    sb_puts(&want, "\n");
    sb_puts(&s, "\r\n");
    expect_lim(sb_str(&s), max, 16, sb_str(&want));
    s.len -= 2;
    sb_puts(&s, "\n");
    expect_lim(sb_str(&s), max, 16, sb_str(&want));

    /* max bytes + CR, waiting for the LF: not fatal. */
    struct drv d;
    drv_init(&d, max, 16, false);
    s.len -= 1;
    drv_feed(&d, s.p, s.len);
    ck_assert_uint_eq(d.nevents, 0);
    drv_feeds(&d, "\r");
    ck_assert_uint_eq(d.nevents, 0);
    ck_assert(!d.closed);
    drv_feeds(&d, "\n");
    ck_assert_str_eq(sb_str(&d.ev), sb_str(&want));
    drv_free(&d);

    /* max bytes + CR + something other than LF: the line is longer. */
    drv_init(&d, max, 16, false);
    drv_feed(&d, s.p, s.len);
    drv_feeds(&d, "\r");
    drv_feeds(&d, "x");
    ck_assert_str_eq(sb_str(&d.ev), "F:Line too long\n");
    ck_assert(d.closed);
    drv_free(&d);
    drv_init(&d, max, 16, false);
    drv_feed(&d, s.p, s.len);
    drv_feeds(&d, "\r\r\n"); /* a line of max + 1 bytes, the last a CR */
    ck_assert_str_eq(sb_str(&d.ev), "F:Line too long\n");
    drv_free(&d);

    /* max + 1 bytes without LF: fatal as soon as they are buffered. */
    drv_init(&d, max, 16, false);
    drv_feed(&d, s.p, s.len);
    ck_assert_uint_eq(d.nevents, 0);
    drv_feeds(&d, "n");
    ck_assert_str_eq(sb_str(&d.ev), "F:Line too long\n");
    ck_assert(d.closed);
    drv_feeds(&d, "\r\ndelete x\r\n"); /* nothing more is parsed */
    ck_assert_str_eq(sb_str(&d.ev), "F:Line too long\n");
    drv_free(&d);

    /* max + 1 bytes with the LF in the same read. */
    s.len = 0;
    line_of(&s, max + 1);
    sb_puts(&s, "\r\ndelete x\r\n");
    expect_lim(sb_str(&s), max, 16, "F:Line too long\n");
    s.len = 0;
    line_of(&s, max + 1);
    sb_puts(&s, "\n");
    expect_lim(sb_str(&s), max, 16, "F:Line too long\n");

    /* Spaces count: a blank line can be too long too. */
    s.len = 0;
    for (size_t i = 0; i < max + 1; i++)
        sb_puts(&s, " ");
    sb_puts(&s, "\r\n");
    expect_lim(sb_str(&s), max, 16, "F:Line too long\n");
    s.len = 0;
    for (size_t i = 0; i < max; i++)
        sb_puts(&s, " ");
    sb_puts(&s, "\r\ndelete x\r\n");
    expect_lim(sb_str(&s), max, 16, "R:delete a:x\n");

    /* Earlier commands in the same read are answered first. */
    s.len = 0;
    sb_puts(&s, "delete a\r\nfoo\r\n");
    line_of(&s, max + 10);
    expect_lim(sb_str(&s), max, 16, "R:delete a:a\nE:Unknown command\nF:Line too long\n");

    /* The limit does not cover the data block. */
    s.len = 0;
    sb_puts(&s, "complete x 200\r\n");
    for (int i = 0; i < 200; i++)
        sb_puts(&s, "b");
    sb_puts(&s, "\r\n");
    {
        char *got = events_of(sb_str(&s), max, 1000);
        ck_assert(strncmp(got, "R:complete a:x a:200 b200:bbbb", 30) == 0);
        free(got);
    }

    /* The default limit: 65536 fine, 65537 fatal. */
    s.len = 0;
    line_of(&s, WQ_DEFAULT_MAX_LINE);
    sb_puts(&s, "\r\n");
    {
        char *got = events_of(sb_str(&s), WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD);
        ck_assert(strncmp(got, "R:delete a:nnn", 14) == 0);
        ck_assert_uint_eq(strlen(got), strlen("R:delete a:\n") + WQ_DEFAULT_MAX_LINE - 7);
        free(got);
    }
    s.len = 0;
    line_of(&s, WQ_DEFAULT_MAX_LINE + 1);
    sb_puts(&s, "\r\n");
    {
        char *got = events_of(sb_str(&s), WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD);
        ck_assert_str_eq(got, "F:Line too long\n");
        free(got);
    }
    sb_free(&s);
    sb_free(&want);
}
END_TEST

/* ---- blank lines, line ends, tokens ---- */

START_TEST(test_blank_lines)
{
    expect("\r\n", "");
    expect("\n", "");
    expect("    \r\n", "");
    expect("  \n\n\r\n \r\n", "");
    expect("\r\n\r\ndelete x\r\n\n  \ndelete y\n", "R:delete a:x\nR:delete a:y\n");
    /* A tab is not a space: a tab-only line is a command name. */
    expect("\t\r\n", "E:Unknown command\n");
    /* A lone CR is an ordinary byte: "\r" is a command name. */
    expect("\r\r\n", "E:Unknown command\n");
}
END_TEST

START_TEST(test_line_endings)
{
    expect("delete x\r\n", "R:delete a:x\n");
    expect("delete x\n", "R:delete a:x\n");
    expect("delete x\r\ndelete y\ndelete z\r\n", "R:delete a:x\nR:delete a:y\nR:delete a:z\n");
    /* Only a CR directly before the LF belongs to the line end. */
    expect("delete x\r\r\n", "R:delete a:x\\x0d\n");
    expect("delete x\ry\r\n", "R:delete a:x\\x0dy\n");
    expect("delete \rx\n", "R:delete a:\\x0dx\n");
    expect("\rdelete x\n", "E:Unknown command\n");
    expect("delete\r x\r\n", "E:Unknown command\n");
    /* No line end yet: nothing. */
    expect("delete x", "");
    expect("delete x\r", "");
}
END_TEST

START_TEST(test_tokens)
{
    expect("  delete   x  \r\n", "R:delete a:x\n");
    expect("delete x   \n", "R:delete a:x\n");
    expect("   lease   a  b   0\r\n", "R:lease a:a a:b a:0\n");
    /* Tabs are ordinary bytes. */
    expect("delete\tx\r\n", "E:Unknown command\n");
    expect("delete x\ty\r\n", "R:delete a:x\\x09y\n");
    expect("lease a\tb 5\r\n", "R:lease a:a\\x09b a:5\n");
    expect("delete \tx\t \r\n", "R:delete a:\\x09x\\x09\n");
    /* Other bytes, even high ones, are tokens too. */
    expect("delete \xff\x01\r\n", "R:delete a:\\xff\\x01\n");
}
END_TEST

START_TEST(test_flags)
{
    /* A token starting with '-' and holding '=' anywhere is a flag. */
    expect("lease q -a=1 0 -b=2\r\n", "R:lease a:q a:0 f:-a=1 f:-b=2\n");
    expect("delete -abc\r\n", "R:delete a:-abc\n");
    expect("delete -\r\n", "R:delete a:-\n");
    expect("delete x -=x\r\n", "R:delete a:x f:-=x\n");
    expect("delete x -k=\r\n", "R:delete a:x f:-k=\n");
    expect("delete x -=\r\n", "R:delete a:x f:-=\n");
    expect("delete x -a=b=c\r\n", "R:delete a:x f:-a=b=c\n");
    expect("delete x -ab=\r\n", "R:delete a:x f:-ab=\n");
    expect("delete x --a=b\r\n", "R:delete a:x f:--a=b\n");
    /* '=' without a leading '-' is positional. */
    expect("delete a=b\r\n", "R:delete a:a=b\n");
    expect("delete =\r\n", "R:delete a:=\n");
    expect("delete a-b=c\r\n", "R:delete a:a-b=c\n");
    /* Flags keep their order, mixed in anywhere. */
    expect("lease -z=1 a -y=2 b -x=3 0 -w=4\r\n",
           "R:lease a:a a:b a:0 f:-z=1 f:-y=2 f:-x=3 f:-w=4\n");
    /* The same flag twice is passed on twice (the command rejects it). */
    expect("delete x -a=1 -a=1\r\n", "R:delete a:x f:-a=1 f:-a=1\n");
    /* The name is never a flag, and a flag can precede the size. */
    expect("add " ID " q 1 1 -priority=-5 2\nhi\n",
           "R:add a:" ID " a:q a:1 a:1 a:2 f:-priority=-5 b2:hi\n");
}
END_TEST

static void
split_flag(const char *tok, const char *key, const char *value)
{
    struct wq_str f = {tok, strlen(tok)}, k, v;
    proto_flag_split(&f, &k, &v);
    ck_assert_uint_eq(k.n, strlen(key));
    ck_assert(memcmp(k.p, key, k.n) == 0);
    ck_assert_uint_eq(v.n, strlen(value));
    ck_assert(memcmp(v.p, value, v.n) == 0);
    /* The parts point into the token. */
    ck_assert_ptr_eq(k.p, tok + 1);
    ck_assert_ptr_eq(v.p, tok + 1 + k.n + 1);
}

START_TEST(test_flag_split)
{
    split_flag("-priority=5", "priority", "5");
    split_flag("-k=v", "k", "v");
    split_flag("-=x", "", "x");
    split_flag("-k=", "k", "");
    split_flag("-=", "", "");
    split_flag("-a=b=c", "a", "b=c");
    split_flag("-max-attempts=0", "max-attempts", "0");
    split_flag("--a==", "-a", "=");
    /* Not NUL-terminated: only n bytes count. */
    struct wq_str f = {"-k=vXYZ", 4}, k, v;
    proto_flag_split(&f, &k, &v);
    ck_assert_uint_eq(k.n, 1);
    ck_assert_uint_eq(v.n, 1);
    ck_assert_int_eq(v.p[0], 'v');
}
END_TEST

/* Many tokens on one line: the token arrays grow as needed. */
START_TEST(test_many_tokens)
{
    struct sbuf s = {0}, want = {0};
    enum { N = 20000 }; /* about 60000 bytes */
    sb_puts(&s, "lease");
    sb_puts(&want, "R:lease");
    for (int i = 0; i < N; i++) {
        sb_puts(&s, i % 2 ? " b" : " -a=");
        sb_puts(&want, i % 2 ? " a:b" : "");
    }
    sb_puts(&s, " 0\r\n");
    sb_puts(&want, " a:0");
    for (int i = 0; i < N; i += 2)
        sb_puts(&want, " f:-a=");
    sb_puts(&want, "\n");
    char *got = events_of(sb_str(&s), WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD);
    ck_assert(strcmp(got, sb_str(&want)) == 0);
    free(got);
    /* A short line after a long one reuses the arrays. */
    sb_puts(&s, "delete x\r\n");
    sb_puts(&want, "R:delete a:x\n");
    got = events_of(sb_str(&s), WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD);
    ck_assert(strcmp(got, sb_str(&want)) == 0);
    free(got);
    sb_free(&s);
    sb_free(&want);
}
END_TEST

/* ---- need ---- */

START_TEST(test_need)
{
    struct proto p;
    struct request req;
    const char *err;
    size_t consumed, need;
    proto_init(&p, test_lookup, 64, 16);

    /* A partial line: at least one more byte. */
    const char *s = "delete x";
    ck_assert_int_eq(proto_parse(&p, s, 8, &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(need, 9);
    ck_assert_int_eq(proto_parse(&p, s, 0, &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(need, 1);

    /* A line with a block: the whole block and the first terminator byte. */
    s = "complete x 10\r\nabcdefghij\r\n";
    ck_assert_int_eq(proto_parse(&p, s, 15, &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(need, 26);
    ck_assert_int_eq(proto_parse(&p, s, 26, &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(need, 27); /* a CR: is it followed by LF? */
    ck_assert_int_eq(proto_parse(&p, s, 27, &req, &err, &consumed, &need), PROTO_REQUEST);
    ck_assert_uint_eq(consumed, 27);
    ck_assert_uint_eq(req.block_len, 10);
    ck_assert(memcmp(req.block, "abcdefghij", 10) == 0);

    /* Blank lines before a partial command are consumed at once; need is
     * counted from after them. */
    s = "\r\n  \r\ncomplete x 2\r\n";
    ck_assert_int_eq(proto_parse(&p, s, strlen(s), &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, 6);
    ck_assert_uint_eq(need, strlen("complete x 2\r\n") + 3);

    /* Blank lines, then an oversize block, in one read: all consumed. */
    proto_clear(&p);
    proto_init(&p, test_lookup, 64, 16);
    s = "\r\n\ncomplete x 17\r\n0123";
    ck_assert_int_eq(proto_parse(&p, s, strlen(s), &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, strlen(s));
    s = "456789abcdefg\r\n";
    ck_assert_int_eq(proto_parse(&p, s, strlen(s), &req, &err, &consumed, &need), PROTO_ERROR);
    ck_assert_uint_eq(consumed, strlen(s));
    ck_assert_str_eq(err, "Invalid result size");

    /* A skipped block is consumed as it comes; no need beyond one byte. */
    s = "complete x 100\r\n0123456789";
    ck_assert_int_eq(proto_parse(&p, s, strlen(s), &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, strlen(s));
    ck_assert_uint_eq(need, 1);
    proto_clear(&p);
}
END_TEST

/* ---- framing across arbitrary split points ---- */

static void
put_n(struct sbuf *s, const char *unit, size_t n)
{
    size_t u = strlen(unit);
    for (size_t i = 0; i < n; i++)
        sb_put(s, unit + i % u, 1);
}

#define SPLIT_MAX_LINE    64
#define SPLIT_MAX_PAYLOAD 32

/* A stream exercising every path, and the events it must give. */
static void
build_stream(struct sbuf *in, struct sbuf *want)
{
    struct sbuf tmp = {0};
#define IN(x)   sb_puts(in, x)
#define WANT(x) sb_puts(want, x)
    IN("add " ID " q 1000 60000 5\r\nhello\r\n");
    WANT("R:add a:" ID " a:q a:1000 a:60000 a:5 b5:hello\n");
    IN("\r\n");
    IN("   \n");
    IN("lease q r 0\n");
    WANT("R:lease a:q a:r a:0\n");
    IN("complete " ID " 3 -x=y\r\na\r\n\r\n");
    WANT("R:complete a:" ID " a:3 f:-x=y b3:a\\x0d\\x0a\n");
    IN("fail " ID " 40\r\n");
    put_n(in, "delete a\r\n", 40);
    IN("\r\n");
    WANT("E:Invalid result size\n");
    IN("complete " ID " 2\r\nabc\n");
    WANT("E:Invalid result size\n");
    IN("delete " ID "\r\n");
    WANT("R:delete a:" ID "\n");
    IN("complete " ID " 2\r\nab\rx\n");
    WANT("E:Invalid result size\n");
    IN("fail " ID " 33\r\n");
    put_n(in, "x\r\n", 33);
    IN("\n");
    WANT("E:Invalid result size\n");
    IN("fail " ID " 33\r\n");
    put_n(in, "\n", 33);
    IN("zz\r\n");
    WANT("E:Invalid result size\n");
    IN("fail " ID " 33\r\n");
    put_n(in, "\r", 33);
    IN("\r\r\n");
    WANT("E:Invalid result size\n");
    IN("bogus\r\n");
    WANT("E:Unknown command\n");
    IN("delete\r\n");
    WANT("E:Invalid command args\n");
    IN("add a b c d e f\r\n");
    WANT("E:Invalid command args\n");
    IN("complete " ID " +1\r\n");
    WANT("E:Invalid result size\n");
    IN("complete x 18446744073709551616\r\n");
    WANT("E:Invalid result size\n");
    IN("  delete   x\ty  \r\n");
    WANT("R:delete a:x\\x09y\n");
    IN("complete " ID " 0\n\n");
    WANT("R:complete a:" ID " a:0 b0:\n");
    IN("result " ID " 5\r\r\n");
    WANT("R:result a:" ID " a:5\\x0d\n");
    IN("complete " ID " 32\r\n");
    put_n(in, "0123456789\r\n", 32);
    IN("\r\n");
    tmp.len = 0;
    put_n(&tmp, "0123456789\r\n", 32);
    WANT("R:complete a:" ID " a:32 b32:");
    sb_escaped(want, tmp.p, tmp.len);
    WANT("\n");
    /* exactly SPLIT_MAX_LINE bytes */
    IN("lease ");
    put_n(in, "n", SPLIT_MAX_LINE - 8);
    IN(" 0\r\n");
    WANT("R:lease a:");
    put_n(want, "n", SPLIT_MAX_LINE - 8);
    WANT(" a:0\n");
    IN("lease a b a c -k=v 100\r\n");
    WANT("R:lease a:a a:b a:a a:c a:100 f:-k=v\n");
    IN("complete " ID " 150\r\n");
    put_n(in, "lease q 0\n", 150);
    IN("\r\n");
    WANT("E:Invalid result size\n");
    IN("add " ID " q 1 1 2 -priority=-5\nhi\n");
    WANT("R:add a:" ID " a:q a:1 a:1 a:2 f:-priority=-5 b2:hi\n");
    IN("delete -abc\r\n");
    WANT("R:delete a:-abc\n");
    IN("fail " ID " 4\r\n\r\n\r\n\r\n");
    WANT("R:fail a:" ID " a:4 b4:\\x0d\\x0a\\x0d\\x0a\n");
    IN("\n\n\n");
    IN("delete x\ry\n");
    WANT("R:delete a:x\\x0dy\n");
    IN("complete " ID " abc\r\nxyz\r\n");
    WANT("E:Invalid result size\nE:Unknown command\n");
    IN("complete " ID " 2\r\nab");
    put_n(in, "garbage ", 100);
    IN("\n");
    WANT("E:Invalid result size\n");
    IN("add " ID " q 1 1 33\r\n");
    put_n(in, "p", 33);
    IN("\r\n");
    WANT("E:Invalid payload size\n");
    IN("add " ID " q 1 1 1\r\n\n\n");
    WANT("R:add a:" ID " a:q a:1 a:1 a:1 b1:\\x0a\n");
    IN("delete last\r\n");
    WANT("R:delete a:last\n");
    /* an unterminated tail: nothing */
    IN("delete tail");
#undef IN
#undef WANT
    sb_free(&tmp);
}

/* Run in[0..n) cut at the given points (sorted, < n); return the events
 * and the bytes left buffered. */
static char *
run_cuts(const char *in, size_t n, const size_t *cuts, size_t ncuts, bool eager, size_t max_line,
         uint64_t max_payload, size_t *left)
{
    struct drv d;
    drv_init(&d, max_line, max_payload, eager);
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        REQUIRE(to >= at && to <= n);
        drv_feed(&d, in + at, to - at);
        at = to;
    }
    char *out = strdup(sb_str(&d.ev));
    if (left != NULL)
        *left = d.len;
    drv_free(&d);
    return out;
}

/* Every way of cutting must give the same events as the reference. */
static void
check_splits(const char *in, size_t n, const char *want, size_t want_left)
{
    size_t left;
    char *got;

    /* (a) at once, honouring need and eager */
    for (int eager = 0; eager < 2; eager++) {
        got = run_cuts(in, n, NULL, 0, eager, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, &left);
        ck_assert_str_eq(got, want);
        ck_assert_uint_eq(left, want_left);
        free(got);
    }

    /* (b) byte by byte */
    size_t *cuts = malloc(n * sizeof *cuts);
    REQUIRE(cuts != NULL);
    for (size_t i = 0; i < n; i++)
        cuts[i] = i;
    for (int eager = 0; eager < 2; eager++) {
        got = run_cuts(in, n, cuts, n, eager, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, &left);
        ck_assert_str_eq(got, want);
        ck_assert_uint_eq(left, want_left);
        free(got);
    }

    /* (c) every single split point */
    for (size_t at = 0; at <= n; at++) {
        got = run_cuts(in, n, &at, 1, at % 2 == 1, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, &left);
        if (strcmp(got, want) != 0 || left != want_left)
            ck_abort_msg("split at %zu: got\n%s\nwant\n%s", at, got, want);
        free(got);
    }

    /* (d) random chunkings */
    for (uint64_t seed = 1; seed <= 300; seed++) {
        rng_seed(seed * 0x9E3779B97F4A7C15ULL);
        size_t ncuts = 0, at = 0;
        uint64_t maxchunk = seed % 3 == 0 ? 4 : seed % 3 == 1 ? 40 : 300;
        while (at < n) {
            at += 1 + rng_next() % maxchunk;
            if (at < n)
                cuts[ncuts++] = at;
        }
        got = run_cuts(in, n, cuts, ncuts, seed % 2 == 0, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, &left);
        if (strcmp(got, want) != 0 || left != want_left)
            ck_abort_msg("seed %llu: got\n%s\nwant\n%s", (unsigned long long)seed, got, want);
        free(got);
    }
    free(cuts);
}

START_TEST(test_split_stream)
{
    struct sbuf in = {0}, want = {0};
    build_stream(&in, &want);
    check_splits(in.p, in.len, want.p, strlen("delete tail"));
    sb_free(&in);
    sb_free(&want);
}
END_TEST

START_TEST(test_split_stream_fatal)
{
    struct sbuf in = {0}, want = {0};
    sb_puts(&in, "complete " ID " 3 -x=y\r\na\r\n\r\n");
    sb_puts(&want, "R:complete a:" ID " a:3 f:-x=y b3:a\\x0d\\x0a\n");
    sb_puts(&in, "fail " ID " 40\r\n");
    put_n(&in, "delete a\r\n", 40);
    sb_puts(&in, "\r\n");
    sb_puts(&want, "E:Invalid result size\n");
    sb_puts(&in, "complete " ID " 2\r\nabc\n");
    sb_puts(&want, "E:Invalid result size\n");
    sb_puts(&in, "delete a\r\n\r\ndelete ");
    put_n(&in, "x", SPLIT_MAX_LINE);
    sb_puts(&in, "\r\ndelete b\r\n");
    sb_puts(&want, "R:delete a:a\nF:Line too long\n");
    /* What is left buffered at the close depends on the cuts; only the
     * events are compared, so pass the all-at-once count. */
    size_t left;
    char *got = run_cuts(in.p, in.len, NULL, 0, false, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, &left);
    ck_assert_str_eq(got, want.p);
    free(got);

    size_t n = in.len;
    for (size_t at = 0; at <= n; at++) {
        got = run_cuts(in.p, n, &at, 1, false, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, NULL);
        if (strcmp(got, want.p) != 0)
            ck_abort_msg("split at %zu: got\n%s\nwant\n%s", at, got, want.p);
        free(got);
    }
    size_t *cuts = malloc(n * sizeof *cuts);
    REQUIRE(cuts != NULL);
    for (size_t i = 0; i < n; i++)
        cuts[i] = i;
    got = run_cuts(in.p, n, cuts, n, true, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, NULL);
    ck_assert_str_eq(got, want.p);
    free(got);
    for (uint64_t seed = 1; seed <= 100; seed++) {
        rng_seed(seed * 0x9E3779B97F4A7C15ULL);
        size_t ncuts = 0, at = 0;
        while (at < n) {
            at += 1 + rng_next() % 50;
            if (at < n)
                cuts[ncuts++] = at;
        }
        got =
            run_cuts(in.p, n, cuts, ncuts, seed % 2 == 0, SPLIT_MAX_LINE, SPLIT_MAX_PAYLOAD, NULL);
        if (strcmp(got, want.p) != 0)
            ck_abort_msg("seed %llu: got\n%s\nwant\n%s", (unsigned long long)seed, got, want.p);
        free(got);
    }
    free(cuts);
    sb_free(&in);
    sb_free(&want);
}
END_TEST

/* ---- memory: an oversize block streams through ---- */

START_TEST(test_huge_block_streams)
{
    enum { CHUNK = 64 * 1024 };
    const uint64_t total = 60ull * 1024 * 1024; /* under the 64 MiB bound */
    static char chunk[CHUNK];
    for (size_t i = 0; i < CHUNK; i++)
        chunk[i] = "delete x\r\n"[i % 10]; /* commands and line ends: all block */

    struct proto p;
    struct request req;
    const char *err;
    size_t consumed, need;
    proto_init(&p, test_lookup, WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD);

    const char *line = "complete " ID " 62914560\r\n";
    ck_assert_int_eq(proto_parse(&p, line, strlen(line), &req, &err, &consumed, &need), PROTO_NEED);
    ck_assert_uint_eq(consumed, strlen(line));
    uint64_t fed = 0;
    while (fed < total) {
        size_t n = (size_t)WQ_MIN((uint64_t)CHUNK, total - fed);
        enum proto_result r = proto_parse(&p, chunk, n, &req, &err, &consumed, &need);
        REQUIRE(r == PROTO_NEED);
        REQUIRE(consumed == n);
        fed += n;
    }
    ck_assert_int_eq(proto_parse(&p, "\r\ndelete y\r\n", 12, &req, &err, &consumed, &need),
                     PROTO_ERROR);
    ck_assert_str_eq(err, "Invalid result size");
    ck_assert_uint_eq(consumed, 2);
    ck_assert_int_eq(proto_parse(&p, "delete y\r\n", 10, &req, &err, &consumed, &need),
                     PROTO_REQUEST);
    ck_assert_uint_eq(consumed, 10);
    proto_clear(&p);

    /* The same through the driver, with the line and the first bytes of the
     * block in one read: nothing stays buffered. */
    struct drv d;
    drv_init(&d, WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD, false);
    struct sbuf first = {0};
    sb_puts(&first, line);
    sb_put(&first, chunk, 1000);
    drv_feed(&d, first.p, first.len);
    ck_assert_uint_eq(d.len, 0);
    fed = 1000;
    while (fed < total) {
        size_t n = (size_t)WQ_MIN((uint64_t)CHUNK, total - fed);
        drv_feed(&d, chunk, n);
        REQUIRE(d.len == 0 && d.nevents == 0);
        fed += n;
    }
    ck_assert_uint_le(d.max_len, CHUNK + first.len);
    drv_feeds(&d, "\r\ndelete y\r\n");
    ck_assert_str_eq(sb_str(&d.ev), "E:Invalid result size\nR:delete a:y\n");
    sb_free(&first);
    drv_free(&d);
}
END_TEST

static Suite *
proto_suite(void)
{
    const struct unit_case cases[] = {
        {"unknown_command", test_unknown_command},
        {"arg_counts", test_arg_counts},
        {"size_syntax", test_size_syntax},
        {"size_limit", test_size_limit},
        {"size_limit_timing", test_size_limit_timing},
        {"block_terminator", test_block_terminator},
        {"line_too_long", test_line_too_long},
        {"blank_lines", test_blank_lines},
        {"line_endings", test_line_endings},
        {"tokens", test_tokens},
        {"flags", test_flags},
        {"flag_split", test_flag_split},
        {"many_tokens", test_many_tokens},
        {"need", test_need},
        {"split_stream", test_split_stream},
        {"split_stream_fatal", test_split_stream_fatal},
        {"huge_block_streams", test_huge_block_streams},
        {"block_fits", test_block_fits},
    };
    return unit_suite("proto", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(proto_suite(), NULL);
}
