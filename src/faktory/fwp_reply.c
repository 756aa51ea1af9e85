/* fwp_reply.c - the RESP replies every Faktory command file writes:
 * errors, +OK, bulk strings and JSON, and the read-only refusal. */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/reply.h"
#include "net/resp_reply.h"

void
fwp_error(struct reply *out, const char *text)
{
    /* a line protocol: a client's text quoted in an error must not end it */
    resp_reply_error(out, "ERR", text);
}

void
fwp_errorf(struct reply *out, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fwp_error(out, text);
}

void
fwp_ok(struct reply *out)
{
    resp_reply_ok(out);
}

void
fwp_bulk(struct reply *out, const char *s, size_t n)
{
    resp_reply_bulk(out, s, n);
}

void
fwp_bulk_json(struct reply *out, json_t *v, size_t flags)
{
    char *text = json_dumps(v, JSON_COMPACT | flags);
    if (text == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory writing JSON");
    fwp_bulk(out, text, strlen(text));
    free(text);
}

bool
fwp_refuse_readonly(const struct fwp_ctx *f, struct reply *out)
{
    if (f->readonly == NULL || !*f->readonly)
        return false;
    fwp_error(out, "Read-only: command log write failed");
    return true;
}
