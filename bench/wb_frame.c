/* wb_frame.c - workq-bench's reply framing: find one complete reply (a
 * line, or a line and a data block: workq's, beanstalkd's, or a RESP bulk
 * string of Faktory's; or any RESP2 reply, arrays included, of Hero's) at
 * the head of a connection's input, split reply lines and RESP arrays into
 * tokens, and quote a bad reply in an error.  Calls only
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

/* The RESP header line h (len bytes, its type byte first) of a bulk string
 * or an array: its size, or -1 for the null one (`$-1`, `*-1`); -2 if
 * malformed or above BENCH_MAX_BLOCK. */
static int64_t
resp_header_size(const char *h, size_t len)
{
    uint64_t v;
    if (len == 3 && h[1] == '-' && h[2] == '1')
        return -1;
    if (wb_tok_u64((struct wb_tok){h + 1, len - 1}, &v) < 0 || v > BENCH_MAX_BLOCK)
        return -2;
    return (int64_t)v;
}

/* Is the RESP integer line h (`:` first) well formed: an optional minus
 * and 1 to 19 digits? */
static bool
resp_integer_ok(const char *h, size_t len)
{
    uint64_t v;
    size_t sign = len > 1 && h[1] == '-';
    return wb_tok_u64((struct wb_tok){h + 1 + sign, len - 1 - sign}, &v) == 0;
}

/* Any RESP2 reply at the head of in: a simple string, an error, an integer,
 * a bulk string or an array (of any of these, nested), as Hero's server and
 * Redis send them.  Its headers are walked in place (a bulk string's bytes
 * are skipped by their length, so a CRLF inside one is data), and only the
 * whole reply is pulled up, once it is all there.  Returns as
 * wb_frame_find: the first line is f->line; a bulk string's bytes, or an
 * array's elements (still in RESP), are f->data. */
static int
resp_find(struct evbuffer *in, struct wb_frame *f, const char **why)
{
    size_t avail = evbuffer_get_length(in), pos = 0, l1 = 0;
    uint64_t left = 1; /* values still to read: each header adds its elements */
    int64_t first_size = -1;
    char first = 0;
    while (left > 0) {
        struct evbuffer_ptr start, p;
        size_t eol;
        if (pos >= avail)
            return 0;
        if (evbuffer_ptr_set(in, &start, pos, EVBUFFER_PTR_SET) < 0)
            return 0;
        p = evbuffer_search_eol(in, &start, &eol, EVBUFFER_EOL_CRLF_STRICT);
        *why = "reply line too long";
        if (p.pos < 0)
            return avail - pos > BENCH_MAX_LINE ? -1 : 0;
        size_t len = (size_t)p.pos - pos;
        char h[32];
        *why = "not a RESP reply";
        if (len == 0)
            return -1;
        evbuffer_copyout_from(in, &start, h, len < sizeof h ? len : sizeof h);
        int64_t size = 0;
        left--;
        size_t next = pos + len + 2;
        switch (h[0]) {
        case '+':
        case '-':
            break;
        case ':':
            *why = "malformed RESP integer";
            if (len >= sizeof h || !resp_integer_ok(h, len))
                return -1;
            break;
        case '$':
        case '*':
            *why =
                h[0] == '$' ? "malformed RESP bulk string header" : "malformed RESP array header";
            if (len >= sizeof h || (size = resp_header_size(h, len)) < -1)
                return -1;
            if (h[0] == '*' && size > 0)
                left += (uint64_t)size;
            if (h[0] == '$' && size >= 0) {
                /* Wait for the whole block, and its CRLF. */
                next += (size_t)size + 2;
                if (avail < next)
                    return 0;
                char crlf[2];
                struct evbuffer_ptr end;
                evbuffer_ptr_set(in, &end, next - 2, EVBUFFER_PTR_SET);
                evbuffer_copyout_from(in, &end, crlf, 2);
                *why = "data block not followed by CRLF";
                if (crlf[0] != '\r' || crlf[1] != '\n')
                    return -1;
            }
            break;
        default:
            return -1;
        }
        if (pos == 0) {
            first = h[0];
            first_size = size;
            l1 = len;
        }
        pos = next;
    }
    const char *s = (const char *)evbuffer_pullup(in, (ev_ssize_t)pos);
    memset(f, 0, sizeof *f);
    f->line = s;
    f->line_len = l1;
    f->total = pos;
    if ((first == '$' || first == '*') && first_size >= 0) {
        f->data = s + l1 + 2;
        f->data_len = first == '$' ? (size_t)first_size : pos - l1 - 2;
    }
    return 1;
}

/* The elements of a RESP array whose elements are all bulk strings. */
int
wb_resp_array(const struct wb_frame *f, struct wb_tok *el, int max)
{
    if (f->data == NULL || f->line_len < 2 || f->line[0] != '*')
        return -1;
    int64_t count = resp_header_size(f->line, f->line_len);
    if (count < 0 || count > max)
        return -1;
    /* wb_frame_find checked the framing: every header ends in CRLF, every
     * block has the length it says, all within data. */
    const char *q = f->data, *end = f->data + f->data_len;
    for (int64_t i = 0; i < count; i++) {
        const char *cr = memchr(q, '\r', (size_t)(end - q));
        if (cr == NULL || q[0] != '$')
            return -1;
        int64_t size = resp_header_size(q, (size_t)(cr - q));
        if (size < -1)
            return -1;
        el[i] = (struct wb_tok){size < 0 ? NULL : cr + 2, size < 0 ? 0 : (size_t)size};
        q = cr + 2 + (size < 0 ? 0 : (size_t)size + 2);
    }
    return (int)count;
}

/* A RESP integer reply that is not negative. */
int
wb_resp_uint(const struct wb_frame *f, uint64_t *out)
{
    if (f->data != NULL || f->line_len < 2 || f->line[0] != ':')
        return -1;
    return wb_tok_u64((struct wb_tok){f->line + 1, f->line_len - 1}, out);
}

/* Find the reply to a request of type op at the head of in.  Returns 1 with
 * *f filled in (pointers valid until in changes), 0 if more bytes are
 * needed, -1 if the stream cannot be a reply (*why says why): then framing
 * is lost and the connection must go. */
int
wb_frame_find(struct evbuffer *in, enum wb_proto_id proto, enum wb_op op, struct wb_frame *f,
              const char **why)
{
    if (proto == WB_PROTO_HERO)
        return resp_find(in, f, why);
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
