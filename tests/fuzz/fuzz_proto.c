/* fuzz_proto.c - libFuzzer target: the Workq request parser (src/workq/proto.c)
 * with the real command table (cmd_lookup) and flag rules
 * (cmd_parse_flags) of src/workq/cmd.c.
 *
 * The input is what a client sends.  It is parsed twice: all of it in one
 * buffer, and as it would trickle in from the socket, one byte more per
 * call (or as many as the parser says it needs).  Framing must not depend
 * on how reads split the stream, so both passes must give the same
 * transcript of requests and errors; a difference aborts.  The limits are
 * small so that long lines and oversized blocks are reached, but a line
 * holds an add with its id and every flag. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workq/cmd.h"
#include "workq/proto.h"

#define FUZZ_MAX_LINE    256
#define FUZZ_MAX_PAYLOAD 32

/* What a pass saw, as bytes to compare. */
struct transcript {
    char *p;
    size_t len, cap;
};

static void
transcript_add(struct transcript *t, const void *data, size_t n)
{
    if (t->len + n > t->cap) {
        t->cap = WQ_MAX(t->len + n, 2 * t->cap + 256);
        t->p = realloc(t->p, t->cap);
        if (t->p == NULL)
            abort();
    }
    memcpy(t->p + t->len, data, n);
    t->len += n;
}

/* A length-prefixed string, so that tokens cannot run together. */
static void
transcript_str(struct transcript *t, const char *s, size_t n)
{
    transcript_add(t, &n, sizeof n);
    transcript_add(t, s, n);
}

/* Record one result of proto_parse; a request's flags are checked as the
 * handlers would check them. */
static void
transcript_note(struct transcript *t, enum proto_result r, const struct request *req,
                const char *err)
{
    transcript_add(t, &r, sizeof r);
    if (r != PROTO_REQUEST) {
        transcript_str(t, err, strlen(err));
        return;
    }
    transcript_str(t, req->cmd->name, strlen(req->cmd->name));
    for (size_t i = 0; i < req->nargs; i++)
        transcript_str(t, req->args[i].p, req->args[i].n);
    transcript_add(t, "|", 1);
    for (size_t i = 0; i < req->nflags; i++)
        transcript_str(t, req->flags[i].p, req->flags[i].n);
    transcript_str(t, req->block != NULL ? req->block : "", req->block_len);
    /* cmd_dispatch refuses flags on a command that takes none */
    if (WQ_CONTAINER_OF(req->cmd, struct cmd_spec, syntax)->flags != NULL) {
        int64_t values[CMD_FLAG_COUNT] = {0};
        const char *ferr = cmd_parse_flags(req, values);
        if (ferr != NULL) /* the values are then undefined */
            transcript_str(t, ferr, strlen(ferr));
        else
            transcript_add(t, values, sizeof values);
    }
}

/* Parse in[0..len) with everything there at once, or trickling in. */
static void
parse_stream(const char *in, size_t len, bool trickle, struct transcript *t)
{
    struct proto p;
    proto_init(&p, cmd_lookup, FUZZ_MAX_LINE, FUZZ_MAX_PAYLOAD);
    size_t off = 0, avail = trickle ? 0 : len;
    for (;;) {
        struct request req;
        const char *err = NULL;
        size_t consumed, need;
        size_t n = avail - off;
        enum proto_result r = proto_parse(&p, in + off, n, &req, &err, &consumed, &need);
        /* proto.h's contract: need counts from the first byte not consumed */
        if (consumed > n || (r == PROTO_NEED && need <= n - consumed))
            abort();
        off += consumed;
        if (r == PROTO_FATAL) {
            transcript_note(t, r, &req, err);
            break;
        }
        if (r != PROTO_NEED) {
            transcript_note(t, r, &req, err);
            continue;
        }
        if (avail == len)
            break;
        avail = trickle ? WQ_MIN(len, WQ_MAX(avail + 1, off + need)) : len;
    }
    proto_clear(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct transcript whole = {0}, trickled = {0};
    parse_stream((const char *)data, size, false, &whole);
    parse_stream((const char *)data, size, true, &trickled);
    if (whole.len != trickled.len ||
        (whole.len > 0 && memcmp(whole.p, trickled.p, whole.len) != 0)) {
        fprintf(stderr, "fuzz_proto: the transcripts differ (%zu and %zu bytes)\n", whole.len,
                trickled.len);
        abort();
    }
    free(whole.p);
    free(trickled.p);
    return 0;
}
