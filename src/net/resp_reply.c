/* resp_reply.c - RESP2 replies (resp_reply.h). */
#include "lib/wq.h"
#include "net/resp_reply.h"

#include <inttypes.h>
#include <stdio.h>
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
resp_reply_integer(struct reply *out, int64_t v)
{
    char line[32];
    int n = snprintf(line, sizeof line, ":%" PRId64 "\r\n", v);
    reply_bytes(out, line, (size_t)n);
}

void
resp_reply_bulk(struct reply *out, const void *p, size_t n)
{
    char head[32];
    int h = snprintf(head, sizeof head, "$%zu\r\n", n);
    reply_bytes(out, head, (size_t)h);
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
    char head[32];
    int h = snprintf(head, sizeof head, "*%zu\r\n", n);
    reply_bytes(out, head, (size_t)h);
}

void
resp_reply_null_array(struct reply *out)
{
    reply_bytes(out, "*-1\r\n", 5);
}
