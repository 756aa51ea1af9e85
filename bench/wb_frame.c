/* wb_frame.c - workq-bench's reply framing: find one complete reply (a
 * line, or a line and a data block: workq's, beanstalkd's, or a RESP bulk
 * string of Faktory's) at the head of a connection's input, split reply
 * lines into tokens, and quote a bad reply in an error.  Calls only
 * wb_error and wb_op_names (wb_util.c), which the unit test of the framing
 * (tests/unit/bench/) provides itself. */
#include "wb.h"
#include "wb_proto.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

/* Does token t spell exactly s? */
bool
wb_tok_is(struct wb_tok t, const char *s)
{
    return t.len == strlen(s) && memcmp(t.s, s, t.len) == 0;
}

/* Split s on single spaces into at most max tokens; returns the count, or
 * max + 1 if there are more.  Empty tokens are kept, so they fail later. */
int
wb_tokenize(const char *s, size_t len, struct wb_tok *t, int max)
{
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ' ')
            continue;
        if (n == max)
            return max + 1;
        t[n].s = s + start;
        t[n].len = i - start;
        n++;
        start = i + 1;
    }
    return n;
}

/* Decimal digits only, no sign, at most 19 of them. */
int
wb_tok_u64(struct wb_tok t, uint64_t *out)
{
    if (t.len == 0 || t.len > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < t.len; i++) {
        if (t.s[i] < '0' || t.s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(t.s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Is the reply the single line s (and no data block)? */
bool
wb_frame_is(const struct wb_frame *f, const char *s)
{
    return f->data == NULL && f->line_len == strlen(s) && memcmp(f->line, s, f->line_len) == 0;
}

/* Copy up to 100 bytes of s into out (>= 420 bytes) for an error message,
 * with unprintable bytes escaped. */
static void
quote_bytes(char *out, const char *s, size_t len)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < len && i < 100; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)sprintf(out + o, "\\x%02x", ch);
    }
    if (len > 100)
        o += (size_t)sprintf(out + o, "...");
    out[o++] = '"';
    out[o] = '\0';
}

/* An unexpected reply to r, quoted. */
void
wb_error_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
               const char *what)
{
    char q[420], q2[420] = "";
    quote_bytes(q, f->line, f->line_len);
    if (f->line2 != NULL) {
        q2[0] = ' ';
        quote_bytes(q2 + 1, f->line2, f->line2_len);
    }
    wb_error(c->b, "conn %u: %s: %s: %s%s", c->idx, wb_op_names[r->op], what, q, q2);
}

/* The length of a RESP bulk string from its header line `$<len>`: 1 with
 * *out, 0 for the null bulk string `$-1`, -1 if malformed. */
static int
resp_bulk_size(const char *s, size_t len, size_t *out)
{
    uint64_t v;
    if (len == 3 && memcmp(s, "$-1", 3) == 0)
        return 0;
    if (wb_tok_u64((struct wb_tok){s + 1, len - 1}, &v) < 0 || v > BENCH_MAX_BLOCK)
        return -1;
    *out = (size_t)v;
    return 1;
}

/* The size token ending a header line (the data block's length). */
static int
header_size(const char *s, size_t len, size_t *out)
{
    size_t i = len;
    while (i > 0 && s[i - 1] != ' ')
        i--;
    uint64_t v;
    if (wb_tok_u64((struct wb_tok){s + i, len - i}, &v) < 0 || v > BENCH_MAX_BLOCK)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Find the reply to a request of type op at the head of in.  Returns 1 with
 * *f filled in (pointers valid until in changes), 0 if more bytes are
 * needed, -1 if the stream cannot be a reply (*why says why): then framing
 * is lost and the connection must go. */
int
wb_frame_find(struct evbuffer *in, enum wb_proto_id proto, enum wb_op op, struct wb_frame *f,
              const char **why)
{
    size_t avail = evbuffer_get_length(in), eol, size = 0, l2 = 0;
    struct evbuffer_ptr p = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_CRLF_STRICT);
    *why = "reply line too long";
    if (p.pos < 0)
        return avail > BENCH_MAX_LINE ? -1 : 0;
    size_t l1 = (size_t)p.pos, head = l1 + 2;
    const char *s = (const char *)evbuffer_pullup(in, (ev_ssize_t)head);
    memset(f, 0, sizeof *f);
    /* A workq lease/run reply with a job is `+OK 1`, a header line ending in
     * the block size, the block and CRLF; beanstalkd's RESERVED line and
     * Faktory's `$<len>` carry the size themselves.  Every other reply is
     * one line. */
    bool wq_block = proto == WB_PROTO_WORKQ && (op == OP_LEASE || op == OP_RUN) && l1 == 5 &&
                    memcmp(s, "+OK 1", 5) == 0;
    bool bs_block = proto == WB_PROTO_BEANSTALKD && op == OP_RESERVE && l1 > 9 &&
                    memcmp(s, "RESERVED ", 9) == 0;
    /* RESP says what each reply is by its first byte, whatever was asked:
     * a bulk string `$<len>` (or the null one, `$-1`) carries a block. */
    bool fk_block = proto == WB_PROTO_FAKTORY && l1 > 0 && s[0] == '$';
    if (fk_block) {
        *why = "malformed RESP bulk string header";
        int rc = resp_bulk_size(s, l1, &size);
        if (rc < 0)
            return -1;
        fk_block = rc > 0; /* `$-1` is a line alone */
    }
    if (!wq_block && !bs_block && !fk_block) {
        f->line = s;
        f->line_len = l1;
        f->total = head;
        return 1;
    }
    *why = "malformed data block header";
    if (wq_block) {
        if (evbuffer_ptr_set(in, &p, head, EVBUFFER_PTR_SET) < 0)
            return 0;
        p = evbuffer_search_eol(in, &p, &eol, EVBUFFER_EOL_CRLF_STRICT);
        if (p.pos < 0)
            return avail - head > BENCH_MAX_LINE ? -1 : 0;
        l2 = (size_t)p.pos - head;
        s = (const char *)evbuffer_pullup(in, (ev_ssize_t)(head + l2 + 2));
        if (header_size(s + head, l2, &size) < 0)
            return -1;
        head += l2 + 2;
    } else if (bs_block && header_size(s, l1, &size) < 0) {
        return -1;
    }
    /* Wait for the whole block before pulling it up, so a large payload is
     * copied into one piece once, not at every read. */
    if (avail < head + size + 2)
        return 0;
    s = (const char *)evbuffer_pullup(in, (ev_ssize_t)(head + size + 2));
    *why = "data block not followed by CRLF";
    if (s[head + size] != '\r' || s[head + size + 1] != '\n')
        return -1;
    f->line = s;
    f->line_len = l1;
    f->line2 = wq_block ? s + l1 + 2 : NULL;
    f->line2_len = l2;
    f->data = s + head;
    f->data_len = size;
    f->total = head + size + 2;
    return 1;
}
