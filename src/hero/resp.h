/* resp.h - RESP2 requests as Redis 7 reads them: a multibulk request
 * (`*<n>` and n bulks `$<len>` + bytes, each line ending in CRLF) or an
 * inline one (a line of words, as typed into telnet, with Redis's double
 * and single quotes).  Pure: it reads bytes and says what they are; the
 * error texts are Redis's own (the reply is "-ERR " and the text, then the
 * connection closes). */
#ifndef WQ_RESP_H
#define WQ_RESP_H

#include "lib/wq.h"

#define RESP_MAX_INLINE (64u * 1024) /* an inline line, a count line */
#define RESP_MAX_ARGS   INT32_MAX    /* Redis's bound on a count */
/* Before AUTH, Redis reads no more than these. */
#define RESP_UNAUTH_ARGS 10
#define RESP_UNAUTH_BULK 16384

enum resp_status {
    RESP_OK,    /* one request: argv[0..argc) */
    RESP_MORE,  /* the bytes end inside a request: read more */
    RESP_EMPTY, /* *used bytes of no request (an empty line, `*0`, `*-1`): skip them */
    RESP_ERROR, /* a protocol error: answer *err, then close */
};

/* What resp_parse keeps between requests: the arguments of the last one
 * and the room for an inline request's words. */
struct resp_parser {
    struct wq_str *argv;
    size_t argc, cap;
    char *words; /* an inline request's words, unquoted */
    size_t words_cap;
    size_t max_bulk; /* the longest bulk accepted */
    bool unauth;     /* the client has yet to authenticate: Redis's tighter bounds */
    char err[64];    /* an error text that names a byte */
};

/* A decimal number as Redis's string2ll reads one (its counts, lengths and
 * integer arguments): an optional '-', no leading zeros (but "0"), no
 * '+', no space, within int64.  True, with *out. */
bool resp_number(const char *s, size_t n, int64_t *out);

void resp_parser_init(struct resp_parser *p, size_t max_bulk);
void resp_parser_free(struct resp_parser *p);

/* Read one request from in[0..len).  RESP_OK: *used bytes make it, and
 * p->argv[0..p->argc) are its arguments (valid until the next call and
 * while in is; a bulk points into in).  RESP_MORE: nothing used, and
 * *used is the length the input must reach before it is worth reading
 * again (more than len: to the end of a line, or of a bulk).
 * RESP_EMPTY: skip *used bytes.  RESP_ERROR: *err is the text of Redis's
 * protocol error. */
enum resp_status resp_parse(struct resp_parser *p, const char *in, size_t len, size_t *used,
                            const char **err);

#endif /* WQ_RESP_H */
