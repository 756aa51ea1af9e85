/* resp.c - RESP2 requests, multibulk and inline (resp.h). */
#include "lib/wq.h"
#include "hero/resp.h"

#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"

void
resp_parser_init(struct resp_parser *p, size_t max_bulk)
{
    memset(p, 0, sizeof *p);
    p->max_bulk = max_bulk;
}

void
resp_parser_free(struct resp_parser *p)
{
    wq_free(p->argv);
    wq_free(p->words);
    memset(p, 0, sizeof *p);
}

/* Room for n arguments. */
static void
resp_args_room(struct resp_parser *p, size_t n)
{
    if (n <= p->cap)
        return;
    size_t cap = p->cap ? p->cap : 8;
    while (cap < n)
        cap *= 2;
    p->argv = wq_realloc(p->argv, cap * sizeof *p->argv);
    p->cap = cap;
}

bool
resp_number(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    bool neg = s[0] == '-';
    size_t i = neg;
    if (i == n || s[i] < '1' || s[i] > '9')
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* The line at in[at..len) up to its "\r\n": its length into *n; false if
 * the bytes end first. */
static bool
resp_line(const char *in, size_t len, size_t at, size_t *n)
{
    const char *cr = memchr(in + at, '\r', len - at);
    if (cr == NULL || (size_t)(cr - in) + 1 >= len)
        return false;
    *n = (size_t)(cr - (in + at));
    return true;
}

/* A multibulk request at in[0..len) (in[0] is '*'). */
static enum resp_status
resp_multibulk(struct resp_parser *p, const char *in, size_t len, size_t *used, const char **err)
{
    size_t n;
    if (!resp_line(in, len, 0, &n)) {
        if (len > RESP_MAX_INLINE) {
            *err = "Protocol error: too big mbulk count string";
            return RESP_ERROR;
        }
        *used = len + 1;
        return RESP_MORE;
    }
    int64_t count;
    if (!resp_number(in + 1, n - 1, &count) || count > (int64_t)RESP_MAX_ARGS) {
        *err = "Protocol error: invalid multibulk length";
        return RESP_ERROR;
    }
    if (p->unauth && count > RESP_UNAUTH_ARGS) {
        *err = "Protocol error: unauthenticated multibulk length";
        return RESP_ERROR;
    }
    size_t at = n + 2;
    if (count <= 0) {
        *used = at;
        return RESP_EMPTY;
    }
    p->argc = 0;
    for (int64_t i = 0; i < count; i++) {
        if (at == len) {
            *used = len + 1;
            return RESP_MORE;
        }
        if (in[at] != '$') {
            snprintf(p->err, sizeof p->err, "Protocol error: expected '$', got '%c'", in[at]);
            *err = p->err;
            return RESP_ERROR;
        }
        if (!resp_line(in, len, at, &n)) {
            if (len - at > RESP_MAX_INLINE) {
                *err = "Protocol error: too big bulk count string";
                return RESP_ERROR;
            }
            *used = len + 1;
            return RESP_MORE;
        }
        int64_t blen;
        if (!resp_number(in + at + 1, n - 1, &blen) || blen < 0 || (uint64_t)blen > p->max_bulk) {
            *err = "Protocol error: invalid bulk length";
            return RESP_ERROR;
        }
        if (p->unauth && blen > RESP_UNAUTH_BULK) {
            *err = "Protocol error: unauthenticated bulk length";
            return RESP_ERROR;
        }
        at += n + 2;
        if (len - at < (size_t)blen + 2) {
            *used = at + (size_t)blen + 2;
            return RESP_MORE;
        }
        resp_args_room(p, p->argc + 1);
        p->argv[p->argc++] = (struct wq_str){in + at, (size_t)blen};
        at += (size_t)blen + 2; /* the CRLF after the bytes is not checked, as by Redis */
    }
    *used = at;
    return RESP_OK;
}

static int
resp_hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static bool
resp_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Split line s[0..n) into words as Redis does (sdssplitargs): spaces
 * part them; "..." holds escapes (\n \r \t \b \a \xHH, \ and any other
 * byte as itself); '...' holds only \'; a closing quote must end its
 * word.  False for unbalanced quotes. */
static bool
resp_words(struct resp_parser *p, const char *s, size_t n)
{
    if (p->words_cap < n + 1) {
        p->words = wq_realloc(p->words, n + 1);
        p->words_cap = n + 1;
    }
    char *o = p->words;
    size_t i = 0;
    p->argc = 0;
    for (;;) {
        while (i < n && resp_space(s[i]))
            i++;
        if (i == n)
            return true;
        char *start = o;
        bool dq = false, sq = false, done = false;
        while (!done) {
            if (dq) {
                if (i == n)
                    return false;
                if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' && resp_hex(s[i + 2]) >= 0 &&
                    resp_hex(s[i + 3]) >= 0) {
                    *o++ = (char)(resp_hex(s[i + 2]) * 16 + resp_hex(s[i + 3]));
                    i += 4;
                } else if (s[i] == '\\' && i + 1 < n) {
                    char c = s[i + 1];
                    *o++ = c == 'n'   ? '\n'
                           : c == 'r' ? '\r'
                           : c == 't' ? '\t'
                           : c == 'b' ? '\b'
                           : c == 'a' ? '\a'
                                      : c;
                    i += 2;
                } else if (s[i] == '"') {
                    if (i + 1 < n && !resp_space(s[i + 1]))
                        return false; /* a closing quote must end the word */
                    done = true;
                    i++;
                } else {
                    *o++ = s[i++];
                }
            } else if (sq) {
                if (i == n)
                    return false;
                if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\'') {
                    *o++ = '\'';
                    i += 2;
                } else if (s[i] == '\'') {
                    if (i + 1 < n && !resp_space(s[i + 1]))
                        return false;
                    done = true;
                    i++;
                } else {
                    *o++ = s[i++];
                }
            } else if (i == n || resp_space(s[i])) {
                done = true;
            } else if (s[i] == '"') {
                dq = true;
                i++;
            } else if (s[i] == '\'') {
                sq = true;
                i++;
            } else {
                *o++ = s[i++];
            }
        }
        resp_args_room(p, p->argc + 1);
        p->argv[p->argc++] = (struct wq_str){start, (size_t)(o - start)};
    }
}

/* An inline request: one line, up to LF. */
static enum resp_status
resp_inline(struct resp_parser *p, const char *in, size_t len, size_t *used, const char **err)
{
    const char *lf = memchr(in, '\n', len);
    if (lf == NULL) {
        if (len > RESP_MAX_INLINE) {
            *err = "Protocol error: too big inline request";
            return RESP_ERROR;
        }
        *used = len + 1;
        return RESP_MORE;
    }
    size_t n = (size_t)(lf - in);
    *used = n + 1;
    if (n > 0 && in[n - 1] == '\r')
        n--;
    if (!resp_words(p, in, n)) {
        *err = "Protocol error: unbalanced quotes in request";
        return RESP_ERROR;
    }
    return p->argc == 0 ? RESP_EMPTY : RESP_OK;
}

enum resp_status
resp_parse(struct resp_parser *p, const char *in, size_t len, size_t *used, const char **err)
{
    *used = 0;
    p->argc = 0;
    if (len == 0) {
        *used = 1;
        return RESP_MORE;
    }
    if (in[0] == '*')
        return resp_multibulk(p, in, len, used, err);
    return resp_inline(p, in, len, used, err);
}
