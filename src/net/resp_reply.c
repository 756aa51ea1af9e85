/* resp_reply.c - RESP2 replies (resp_reply.h). */
#include "lib/wq.h"
#include "net/resp_reply.h"

#include <string.h>

void
resp_reply_ok(struct reply *out)
{
    reply_bytes(out, "+OK\r\n", 5);
}

void
resp_reply_simple(struct reply *out, const char *s)
{
    reply_bytes(out, "+", 1);
    reply_str(out, s);
    reply_bytes(out, "\r\n", 2);
}

void
resp_reply_error(struct reply *out, const char *code, const char *text)
{
    reply_bytes(out, "-", 1);
    reply_str(out, code);
    reply_bytes(out, " ", 1);
    for (const char *p = text; *p != '\0';) {
        size_t n = strcspn(p, "\r\n");
        reply_bytes(out, p, n);
        p += n;
        if (*p != '\0') {
            reply_bytes(out, " ", 1);
            p++;
        }
    }
    reply_bytes(out, "\r\n", 2);
}

void
resp_reply_head(struct reply *out, char type, int64_t v)
{
    /* written from the end: the digits, then the sign and the type */
    char line[24];
    char *p = line + sizeof line;
    *--p = '\n';
    *--p = '\r';
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    *--p = type;
    reply_bytes(out, p, (size_t)(line + sizeof line - p));
}

void
resp_reply_integer(struct reply *out, int64_t v)
{
    resp_reply_head(out, ':', v);
}

void
resp_reply_bulk(struct reply *out, const void *p, size_t n)
{
    resp_reply_head(out, '$', (int64_t)n);
    reply_bytes(out, p, n);
    reply_bytes(out, "\r\n", 2);
}

void
resp_reply_null(struct reply *out)
{
    reply_bytes(out, "$-1\r\n", 5);
}

void
resp_reply_array(struct reply *out, size_t n)
{
    resp_reply_head(out, '*', (int64_t)n);
}

void
resp_reply_null_array(struct reply *out)
{
    reply_bytes(out, "*-1\r\n", 5);
}
