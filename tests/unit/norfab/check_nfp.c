/* check_nfp.c - unit tests for src/norfab/nfp.c: NFP messages as a ROUTER
 * socket receives them (the peer's identity first) read by nfp_parse into
 * every outcome of enum nfp_check, commands in both forms (NORFAB's four
 * ASCII bytes "0x04", the protocol text's one byte 0x04), which commands a
 * client and a worker may send and how many frames each needs, and the
 * command frames and names the broker writes. */
#include "lib/wq.h"
#include "norfab/nfp.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"

/* A frame of a string literal, which may hold NUL bytes. */
#define LIT(s) ((struct nfp_frame){(s), sizeof(s) - 1})

/* Up to this many frames in a test message. */
#define MAX_FRAMES 16

/* Parse the frames given as C strings (NULL terminated; the command
 * "\x00" cannot be one: see parse_frames). */
static enum nfp_check
parse(struct nfp_msg *m, ...)
{
    struct nfp_frame frames[MAX_FRAMES];
    size_t n = 0;
    va_list ap;
    va_start(ap, m);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        ck_assert_uint_lt(n, MAX_FRAMES);
        frames[n++] = (struct nfp_frame){s, strlen(s)};
    }
    va_end(ap);
    /* m points into frames for the checks that follow: keep a copy */
    static struct nfp_frame kept[MAX_FRAMES];
    memcpy(kept, frames, sizeof frames);
    enum nfp_check c = nfp_parse(kept, n, m);
    if (c == NFP_VALID) {
        ck_assert_ptr_eq(m->args, kept + 4);
        ck_assert_uint_eq(m->nargs, n - 4);
    }
    return c;
}

static bool
frame_is(struct nfp_frame f, const char *s)
{
    return f.n == strlen(s) && memcmp(f.p, s, f.n) == 0;
}

/* The outcome of parse, as text in a failure message. */
#define EXPECT(want, ...)                                                                          \
    do {                                                                                           \
        struct nfp_msg m_;                                                                         \
        enum nfp_check got_ = parse(&m_, __VA_ARGS__, (const char *)NULL);                         \
        ck_assert_msg(got_ == (want), "%s: got %d (%s), want %d (%s)", #__VA_ARGS__, (int)got_,    \
                      nfp_check_text(got_), (int)(want), nfp_check_text(want));                    \
    } while (0)

START_TEST(test_short)
{
    struct nfp_msg m;
    ck_assert_int_eq(nfp_parse(NULL, 0, &m), NFP_SHORT);
    EXPECT(NFP_SHORT, "c1");
    EXPECT(NFP_SHORT, "c1", "");
    EXPECT(NFP_SHORT, "c1", "", "NFPC01");
    EXPECT(NFP_SHORT, "w1", "", "NFPW01");
    /* too short is said before anything else is looked at */
    EXPECT(NFP_SHORT, "c1", "x", "junk");
}
END_TEST

START_TEST(test_no_empty)
{
    EXPECT(NFP_NO_EMPTY, "c1", "x", "NFPC01", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_NO_EMPTY, "c1", "NFPC01", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_NO_EMPTY, "w1", "NFPW01", "0x01", "svc");
    /* one NUL byte is not empty */
    struct nfp_frame f[] = {LIT("c1"), LIT("\0"), LIT("NFPC01"), LIT("0x00")};
    struct nfp_msg m;
    ck_assert_int_eq(nfp_parse(f, 4, &m), NFP_NO_EMPTY);
}
END_TEST

START_TEST(test_bad_header)
{
    EXPECT(NFP_BAD_HEADER, "c1", "", "NFPB01", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "c1", "", "NFPC02", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "c1", "", "nfpc01", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "c1", "", "NFPC0", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "c1", "", "NFPC011", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "c1", "", "", "0x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_HEADER, "w1", "", "MDPW01", "0x01", "svc");
    /* the header comes before the command */
    EXPECT(NFP_BAD_HEADER, "w1", "", "NFPX01", "junk");
    struct nfp_frame f[] = {LIT("c1"), LIT(""), LIT("NFPC01\0"), LIT("0x00")};
    struct nfp_msg m;
    ck_assert_int_eq(nfp_parse(f, 4, &m), NFP_BAD_HEADER);
}
END_TEST

START_TEST(test_bad_cmd_form)
{
    /* not a command in either form */
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x4", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x004", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0X04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "1x04", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "00x4", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x0g", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x 4", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "POST", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "04", "svc", "any", "u1", "{}");
    /* a command the protocol does not have */
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x12", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0xff", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "\x12", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "4", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "w1", "", "NFPW01", "\xff", "svc");
    EXPECT(NFP_BAD_CMD, "w1", "", "NFPW01", "0x0a", "svc");
    /* PUT is 0x10, not 0x0a (10) */
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "0x0a", "svc", "any", "u1", "{}");
    EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", "\x0a", "svc", "any", "u1", "{}");
}
END_TEST

/* Hex digits in either case: "0x0a" and "0x0A" are both 10, "0x1F" 31
 * (none of them a command), the form ASCII. */
START_TEST(test_hex_case)
{
    static const struct {
        const char *frame;
        uint8_t cmd;
    } cases[] = {{"0x0a", 0x0a}, {"0x0A", 0x0a}, {"0x1f", 0x1f}, {"0x1F", 0x1f},
                 {"0xAb", 0xab}, {"0xaB", 0xab}, {"0xFF", 0xff}, {"0xff", 0xff}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        struct nfp_frame f[] = {LIT("c1"), LIT(""),  LIT("NFPC01"), {cases[i].frame, 4},
                                LIT("s"),  LIT("t"), LIT("u"),      LIT("{}")};
        struct nfp_msg m;
        ck_assert_int_eq(nfp_parse(f, WQ_ARRAY_LEN(f), &m), NFP_BAD_CMD);
        ck_assert_msg(m.cmd == cases[i].cmd && m.ascii, "%s read as 0x%02x ascii %d",
                      cases[i].frame, m.cmd, m.ascii);
    }
    /* the real commands in either case (digits only: the same bytes) and
     * the upper-case form of every command parses as its lower-case one */
    for (unsigned c = 0; c < 256; c++) {
        char lo[5], up[5];
        snprintf(lo, sizeof lo, "0x%02x", c);
        snprintf(up, sizeof up, "0x%02X", c);
        struct nfp_frame fl[] = {LIT("w1"), LIT(""), LIT("NFPW01"), {lo, 4}, LIT("svc")};
        struct nfp_frame fu[] = {LIT("w1"), LIT(""), LIT("NFPW01"), {up, 4}, LIT("svc")};
        struct nfp_msg ml, mu;
        enum nfp_check cl = nfp_parse(fl, 5, &ml), cu = nfp_parse(fu, 5, &mu);
        REQUIRE(cl == cu);
        REQUIRE(ml.cmd == c && mu.cmd == c);
        REQUIRE(ml.ascii && mu.ascii);
    }
}
END_TEST

/* Which commands each peer may send. */
START_TEST(test_roles)
{
    /* a client sends OPEN, DISCONNECT, POST, GET, DELETE, PUT, MMI */
    static const char *const client_not[] = {"0x01", "0x02", "0x05", "0x08", "0x09",
                                             "\x01", "\x02", "\x05", "\x08", "\x09"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(client_not); i++)
        EXPECT(NFP_BAD_CMD, "c1", "", "NFPC01", client_not[i], "svc", "any", "u1", "{}", "x");
    /* a worker sends OPEN, READY, KEEPALIVE, DISCONNECT, RESPONSE, EVENT,
     * STREAM */
    static const char *const worker_not[] = {"0x04", "0x06", "0x07", "0x10", "0x11",
                                             "\x04", "\x06", "\x07", "\x10", "\x11"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(worker_not); i++)
        EXPECT(NFP_BAD_CMD, "w1", "", "NFPW01", worker_not[i], "c1", "", "u1", "200", "{}");
}
END_TEST

/* Too few frames after the command. */
START_TEST(test_bad_args)
{
    static const char *const requests[] = {"0x04", "0x06", "0x07", "0x10", "0x11",
                                           "\x04", "\x06", "\x07", "\x10", "\x11"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(requests); i++) {
        const char *c = requests[i];
        EXPECT(NFP_BAD_ARGS, "c1", "", "NFPC01", c);
        EXPECT(NFP_BAD_ARGS, "c1", "", "NFPC01", c, "svc");
        EXPECT(NFP_BAD_ARGS, "c1", "", "NFPC01", c, "svc", "any");
        EXPECT(NFP_BAD_ARGS, "c1", "", "NFPC01", c, "svc", "any", "u1");
        EXPECT(NFP_VALID, "c1", "", "NFPC01", c, "svc", "any", "u1", "{}");
    }
    EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", "0x01");
    EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", "\x01");
    static const char *const answers[] = {"0x05", "0x08", "0x09", "\x05", "\x08", "\x09"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(answers); i++) {
        const char *c = answers[i];
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c);
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1");
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1", "");
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1", "", "u1");
        /* the client's address must be followed by an empty frame */
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1", "u1", "200", "{}");
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1", "x", "u1", "200", "{}");
        EXPECT(NFP_BAD_ARGS, "w1", "", "NFPW01", c, "c1", "u1", "200", "{}", "");
        /* the body may be missing: status is the last required frame */
        EXPECT(NFP_VALID, "w1", "", "NFPW01", c, "c1", "", "u1", "200");
        EXPECT(NFP_VALID, "w1", "", "NFPW01", c, "c1", "", "u1", "200", "{}");
    }
}
END_TEST

/* Valid messages of a client: each field where it belongs. */
START_TEST(test_valid_client)
{
    struct nfp_msg m;
    ck_assert_int_eq(
        parse(&m, "c1", "", "NFPC01", "0x04", "nornir", "any", "u1", "{\"task\":\"x\"}", NULL),
        NFP_VALID);
    ck_assert(frame_is(m.peer, "c1"));
    ck_assert_int_eq(m.role, NFP_FROM_CLIENT);
    ck_assert_uint_eq(m.cmd, NFP_POST);
    ck_assert(m.ascii);
    ck_assert_uint_eq(m.nargs, 4);
    ck_assert(frame_is(m.args[0], "nornir"));
    ck_assert(frame_is(m.args[1], "any"));
    ck_assert(frame_is(m.args[2], "u1"));
    ck_assert(frame_is(m.args[3], "{\"task\":\"x\"}"));
    /* the byte form */
    ck_assert_int_eq(parse(&m, "c1", "", "NFPC01", "\x04", "nornir", "all", "u2", "{}", NULL),
                     NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_POST);
    ck_assert(!m.ascii);
    ck_assert(frame_is(m.args[1], "all"));
    /* every request in both forms; frames past the body are kept */
    static const struct {
        const char *ascii, *byte;
        uint8_t cmd;
    } reqs[] = {{"0x04", "\x04", NFP_POST},
                {"0x06", "\x06", NFP_GET},
                {"0x07", "\x07", NFP_DELETE},
                {"0x10", "\x10", NFP_PUT},
                {"0x11", "\x11", NFP_MMI}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(reqs); i++) {
        ck_assert_int_eq(parse(&m, "c1", "", "NFPC01", reqs[i].ascii, "s", "t", "u", "b", NULL),
                         NFP_VALID);
        ck_assert_uint_eq(m.cmd, reqs[i].cmd);
        ck_assert(m.ascii);
        ck_assert_int_eq(
            parse(&m, "c1", "", "NFPC01", reqs[i].byte, "s", "t", "u", "b", "more", NULL),
            NFP_VALID);
        ck_assert_uint_eq(m.cmd, reqs[i].cmd);
        ck_assert(!m.ascii);
        ck_assert_uint_eq(m.nargs, 5);
        ck_assert(frame_is(m.args[4], "more"));
    }
    /* OPEN and DISCONNECT need nothing after the command */
    ck_assert_int_eq(parse(&m, "c1", "", "NFPC01", "0x00", NULL), NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_OPEN);
    ck_assert_uint_eq(m.nargs, 0);
    ck_assert_int_eq(parse(&m, "c1", "", "NFPC01", "0x03", NULL), NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_DISCONNECT);
    ck_assert_int_eq(parse(&m, "c1", "", "NFPC01", "\x03", NULL), NFP_VALID);
    ck_assert(!m.ascii);
    /* OPEN as its byte: a NUL */
    struct nfp_frame f[] = {LIT("c1"), LIT(""), LIT("NFPC01"), LIT("\0")};
    ck_assert_int_eq(nfp_parse(f, 4, &m), NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_OPEN);
    ck_assert(!m.ascii);
    ck_assert_int_eq(m.role, NFP_FROM_CLIENT);
}
END_TEST

/* Valid messages of a worker. */
START_TEST(test_valid_worker)
{
    struct nfp_msg m;
    ck_assert_int_eq(parse(&m, "w1", "", "NFPW01", "0x01", "nornir", NULL), NFP_VALID);
    ck_assert(frame_is(m.peer, "w1"));
    ck_assert_int_eq(m.role, NFP_FROM_WORKER);
    ck_assert_uint_eq(m.cmd, NFP_READY);
    ck_assert(m.ascii);
    ck_assert_uint_eq(m.nargs, 1);
    ck_assert(frame_is(m.args[0], "nornir"));
    ck_assert_int_eq(parse(&m, "w1", "", "NFPW01", "\x01", "nornir", NULL), NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_READY);
    ck_assert(!m.ascii);
    /* KEEPALIVE and DISCONNECT: with the service NORFAB adds, or without */
    static const struct {
        const char *ascii, *byte;
        uint8_t cmd;
    } bare[] = {{"0x02", "\x02", NFP_KEEPALIVE}, {"0x03", "\x03", NFP_DISCONNECT}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bare); i++) {
        ck_assert_int_eq(parse(&m, "w1", "", "NFPW01", bare[i].ascii, "nornir", NULL), NFP_VALID);
        ck_assert_uint_eq(m.cmd, bare[i].cmd);
        ck_assert(m.ascii);
        ck_assert_int_eq(parse(&m, "w1", "", "NFPW01", bare[i].byte, NULL), NFP_VALID);
        ck_assert_uint_eq(m.cmd, bare[i].cmd);
        ck_assert(!m.ascii);
        ck_assert_uint_eq(m.nargs, 0);
    }
    ck_assert_int_eq(parse(&m, "w1", "", "NFPW01", "0x00", NULL), NFP_VALID);
    ck_assert_uint_eq(m.cmd, NFP_OPEN);
    ck_assert_int_eq(m.role, NFP_FROM_WORKER);
    /* RESPONSE, EVENT, STREAM: client, "", uuid, status, body */
    static const struct {
        const char *ascii, *byte;
        uint8_t cmd;
    } ans[] = {
        {"0x05", "\x05", NFP_RESPONSE}, {"0x08", "\x08", NFP_EVENT}, {"0x09", "\x09", NFP_STREAM}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(ans); i++) {
        ck_assert_int_eq(
            parse(&m, "w1", "", "NFPW01", ans[i].ascii, "c1", "", "u1", "200", "{}", NULL),
            NFP_VALID);
        ck_assert_uint_eq(m.cmd, ans[i].cmd);
        ck_assert(m.ascii);
        ck_assert_uint_eq(m.nargs, 5);
        ck_assert(frame_is(m.args[0], "c1"));
        ck_assert_uint_eq(m.args[1].n, 0);
        ck_assert(frame_is(m.args[2], "u1"));
        ck_assert(frame_is(m.args[3], "200"));
        ck_assert(frame_is(m.args[4], "{}"));
        ck_assert_int_eq(
            parse(&m, "w1", "", "NFPW01", ans[i].byte, "c1", "", "u1", "201", "{}", NULL),
            NFP_VALID);
        ck_assert_uint_eq(m.cmd, ans[i].cmd);
        ck_assert(!m.ascii);
    }
}
END_TEST

/* The frames given are read, not copied: m points into them. */
START_TEST(test_points_into_frames)
{
    struct nfp_frame f[] = {LIT("c1"), LIT(""),  LIT("NFPC01"), LIT("0x06"),
                            LIT("s"),  LIT("t"), LIT("u"),      LIT("b")};
    struct nfp_msg m;
    ck_assert_int_eq(nfp_parse(f, WQ_ARRAY_LEN(f), &m), NFP_VALID);
    ck_assert_ptr_eq(m.peer.p, f[0].p);
    ck_assert_ptr_eq(m.args, &f[4]);
    ck_assert_uint_eq(m.nargs, 4);
    ck_assert_uint_eq(m.cmd, NFP_GET);
}
END_TEST

START_TEST(test_check_text)
{
    static const enum nfp_check all[] = {NFP_VALID,      NFP_SHORT,   NFP_NO_EMPTY,
                                         NFP_BAD_HEADER, NFP_BAD_CMD, NFP_BAD_ARGS};
    for (size_t i = 0; i < WQ_ARRAY_LEN(all); i++) {
        ck_assert_ptr_nonnull(nfp_check_text(all[i]));
        ck_assert_uint_gt(strlen(nfp_check_text(all[i])), 0);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(nfp_check_text(all[i]), nfp_check_text(all[j]));
    }
}
END_TEST

START_TEST(test_cmd_frame)
{
    static const struct {
        uint8_t cmd;
        const char *ascii;
    } cases[] = {{NFP_OPEN, "0x00"},       {NFP_READY, "0x01"},  {NFP_KEEPALIVE, "0x02"},
                 {NFP_DISCONNECT, "0x03"}, {NFP_POST, "0x04"},   {NFP_RESPONSE, "0x05"},
                 {NFP_GET, "0x06"},        {NFP_DELETE, "0x07"}, {NFP_EVENT, "0x08"},
                 {NFP_STREAM, "0x09"},     {NFP_PUT, "0x10"},    {NFP_MMI, "0x11"},
                 {0x0a, "0x0a"},           {0xab, "0xab"},       {0xff, "0xff"}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        char buf[4];
        struct nfp_frame f = nfp_cmd_frame(cases[i].cmd, true, buf);
        ck_assert_ptr_eq(f.p, buf);
        ck_assert_uint_eq(f.n, 4);
        ck_assert_msg(memcmp(f.p, cases[i].ascii, 4) == 0, "0x%02x: %.4s", cases[i].cmd, f.p);
        f = nfp_cmd_frame(cases[i].cmd, false, buf);
        ck_assert_ptr_eq(f.p, buf);
        ck_assert_uint_eq(f.n, 1);
        ck_assert_uint_eq((uint8_t)f.p[0], cases[i].cmd);
    }
    /* what the broker writes, a peer's message carries back: every byte in
     * both forms parses as itself */
    for (unsigned c = 0; c < 256; c++) {
        for (int ascii = 0; ascii < 2; ascii++) {
            char buf[4];
            struct nfp_frame cmd = nfp_cmd_frame((uint8_t)c, ascii, buf);
            struct nfp_frame f[] = {LIT("c1"), LIT(""),  LIT("NFPC01"), cmd,
                                    LIT("s"),  LIT("t"), LIT("u"),      LIT("b")};
            struct nfp_msg m;
            enum nfp_check check = nfp_parse(f, WQ_ARRAY_LEN(f), &m);
            REQUIRE(check == NFP_VALID || check == NFP_BAD_CMD);
            REQUIRE(m.cmd == c);
            REQUIRE(m.ascii == (ascii != 0));
            bool request = c == NFP_OPEN || c == NFP_DISCONNECT || c == NFP_POST || c == NFP_GET ||
                           c == NFP_DELETE || c == NFP_PUT || c == NFP_MMI;
            REQUIRE((check == NFP_VALID) == request);
        }
    }
}
END_TEST

START_TEST(test_cmd_name)
{
    static const struct {
        uint8_t cmd;
        const char *name;
    } cases[] = {{NFP_OPEN, "OPEN"},
                 {NFP_READY, "READY"},
                 {NFP_KEEPALIVE, "KEEPALIVE"},
                 {NFP_DISCONNECT, "DISCONNECT"},
                 {NFP_POST, "POST"},
                 {NFP_RESPONSE, "RESPONSE"},
                 {NFP_GET, "GET"},
                 {NFP_DELETE, "DELETE"},
                 {NFP_EVENT, "EVENT"},
                 {NFP_STREAM, "STREAM"},
                 {NFP_PUT, "PUT"},
                 {NFP_MMI, "MMI"}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++)
        ck_assert_str_eq(nfp_cmd_name(cases[i].cmd), cases[i].name);
    static const uint8_t none[] = {0x0a, 0x0b, 0x0f, 0x12, 0x20, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < WQ_ARRAY_LEN(none); i++)
        ck_assert_str_eq(nfp_cmd_name(none[i]), "?");
    /* exactly the twelve commands have names */
    unsigned named = 0;
    for (unsigned c = 0; c < 256; c++)
        named += strcmp(nfp_cmd_name((uint8_t)c), "?") != 0;
    ck_assert_uint_eq(named, 12);
}
END_TEST

static Suite *
nfp_suite(void)
{
    const struct unit_case cases[] = {
        {"short", test_short},
        {"no_empty", test_no_empty},
        {"bad_header", test_bad_header},
        {"bad_cmd_form", test_bad_cmd_form},
        {"hex_case", test_hex_case},
        {"roles", test_roles},
        {"bad_args", test_bad_args},
        {"valid_client", test_valid_client},
        {"valid_worker", test_valid_worker},
        {"points_into_frames", test_points_into_frames},
        {"check_text", test_check_text},
        {"cmd_frame", test_cmd_frame},
        {"cmd_name", test_cmd_name},
    };
    return unit_suite("nfp", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(nfp_suite(), NULL);
}
