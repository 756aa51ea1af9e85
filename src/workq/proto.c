/* proto.c - framing and tokenizing of command lines and data blocks. */
#include "lib/wq.h"
#include "workq/proto.h"

#include <string.h>

#include "lib/alloc.h"
#include "lib/util.h"

/* Token slots a connection keeps between lines. */
#define PROTO_KEEP_TOKENS 16

void
proto_init(struct proto *p, proto_lookup_fn lookup, size_t max_line, uint64_t max_payload)
{
    /* Block arithmetic (line + size + terminator) must not wrap. */
    WQ_ASSERT(max_payload <= SIZE_MAX / 4 && max_line <= SIZE_MAX / 4);
    memset(p, 0, sizeof *p);
    p->lookup = lookup;
    p->max_line = max_line;
    p->max_payload = max_payload;
    p->state = PROTO_LINE;
}

void
proto_clear(struct proto *p)
{
    wq_free(p->args);
    wq_free(p->flags);
    p->args = p->flags = NULL;
    p->cap = 0;
}

void
proto_flag_split(const struct wq_str *flag, struct wq_str *key, struct wq_str *value)
{
    const char *eq = memchr(flag->p, '=', flag->n);
    WQ_ASSERT(eq != NULL && flag->n > 0 && flag->p[0] == '-');
    key->p = flag->p + 1;
    key->n = (size_t)(eq - key->p);
    value->p = eq + 1;
    value->n = flag->n - (size_t)(value->p - flag->p);
}

static bool
proto_is_flag(const char *tok, size_t n)
{
    return n > 0 && tok[0] == '-' && memchr(tok, '=', n) != NULL;
}

/* Size the token arrays for exactly this line (plus a little), so a
 * connection keeps no more than its largest line needs, and gives a long
 * line's worth back on the next short one. */
static void
proto_reserve(struct proto *p, size_t count)
{
    if (count <= p->cap && (p->cap <= PROTO_KEEP_TOKENS || count > p->cap / 4))
        return;
    size_t cap = WQ_MAX(count, (size_t)PROTO_KEEP_TOKENS);
    p->args = wq_realloc(p->args, cap * sizeof *p->args);
    p->flags = wq_realloc(p->flags, cap * sizeof *p->flags);
    p->cap = cap;
}

/* Split line[0..len) on runs of spaces: the name into *name, the rest into
 * req->args and req->flags.  Returns false for a blank line. */
static bool
proto_tokenize(struct proto *p, const char *line, size_t len, struct wq_str *name,
               struct request *req)
{
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += line[i] != ' ' && (i == 0 || line[i - 1] == ' ');
    proto_reserve(p, count);
    req->nargs = req->nflags = 0;
    name->p = NULL;
    size_t i = 0;
    for (;;) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        struct wq_str tok = {line + start, i - start};
        if (name->p == NULL)
            *name = tok;
        else if (proto_is_flag(tok.p, tok.n))
            p->flags[req->nflags++] = tok;
        else
            p->args[req->nargs++] = tok;
    }
    req->args = p->args;
    req->flags = p->flags;
    return name->p != NULL;
}

/* Parse a command line of buf (LF at line_len); see proto_parse. */
static enum proto_result
proto_line(struct proto *p, const char *b, size_t n, size_t line_len, struct request *req,
           const char **error, size_t *used, size_t *need)
{
    size_t end = line_len;
    if (end > 0 && b[end - 1] == '\r')
        end--;
    size_t hdr = line_len + 1;
    *used = hdr;
    p->scanned = 0;

    struct wq_str name;
    if (!proto_tokenize(p, b, end, &name, req))
        return PROTO_NEED; /* blank line: dropped without a reply */
    req->cmd = p->lookup(name.p, name.n);
    if (req->cmd == NULL) {
        *error = "Unknown command";
        return PROTO_ERROR;
    }
    if (req->nargs < req->cmd->min_args ||
        (req->cmd->max_args != PROTO_ANY_ARGS && req->nargs > req->cmd->max_args)) {
        *error = "Invalid command args";
        return PROTO_ERROR;
    }
    req->block = NULL;
    req->block_len = 0;
    if (!req->cmd->block)
        return PROTO_REQUEST;

    const struct wq_str *size = &req->args[req->nargs - 1];
    uint64_t len;
    if (util_parse_u64(size->p, size->n, UINT64_MAX, &len) != 0) {
        *error = req->cmd->size_error;
        return PROTO_ERROR;
    }
    if (len > proto_skip_max(p->max_payload)) {
        /* Reading past it would leave the client unanswered for too long
         * (99999999999 bytes: 100 GB): answer now and close. */
        *error = req->cmd->size_error;
        return PROTO_FATAL;
    }
    bool room = len <= p->max_payload;
    if (!room || (n < hdr + len + 1 && p->fits != NULL && !p->fits(p->fits_arg, len))) {
        /* Drop the block as it streams in; answer when it has passed. */
        p->state = PROTO_SKIP_BLOCK;
        p->skip_left = len;
        p->skip_error = room ? PROTO_OUT_OF_MEMORY : req->cmd->size_error;
        p->skip_server = room;
        return PROTO_NEED;
    }
    if (n < hdr + len + 1) {
        *used = 0;
        *need = hdr + len + 1;
        p->scanned = line_len; /* the next call finds this LF at once */
        return PROTO_NEED;
    }
    size_t term = 1;
    if (b[hdr + len] == '\r') {
        if (n < hdr + len + 2) {
            *used = 0;
            *need = hdr + len + 2;
            p->scanned = line_len;
            return PROTO_NEED;
        }
        term = b[hdr + len + 1] == '\n' ? 2 : 0;
    } else if (b[hdr + len] != '\n') {
        term = 0;
    }
    if (term == 0) {
        /* No terminator after the block: drop through the next LF. */
        *used = hdr + len;
        p->state = PROTO_SKIP_LINE;
        *error = req->cmd->size_error;
        return PROTO_ERROR;
    }
    req->block = b + hdr;
    req->block_len = len;
    *used = hdr + len + term;
    return PROTO_REQUEST;
}

enum proto_result
proto_parse(struct proto *p, const char *buf, size_t len, struct request *req, const char **error,
            size_t *consumed, size_t *need)
{
    size_t off = 0;
    for (;;) {
        const char *b = buf + off;
        size_t n = len - off;
        *consumed = off;
        *need = 1;

        switch (p->state) {
        case PROTO_SKIP_LINE: {
            const char *lf = memchr(b, '\n', n);
            if (lf == NULL) {
                *consumed = len;
                return PROTO_NEED;
            }
            off += (size_t)(lf - b) + 1;
            p->state = PROTO_LINE;
            continue;
        }
        case PROTO_SKIP_BLOCK: {
            uint64_t take = WQ_MIN((uint64_t)n, p->skip_left);
            off += (size_t)take;
            p->skip_left -= take;
            if (p->skip_left > 0) {
                *consumed = off;
                return PROTO_NEED;
            }
            p->state = PROTO_SKIP_END;
            continue;
        }
        case PROTO_SKIP_END:
            if (n == 0)
                return PROTO_NEED;
            *error = p->skip_error;
            if (b[0] == '\r' && n < 2) {
                *need = 2;
                return PROTO_NEED;
            }
            if (b[0] == '\n' || (b[0] == '\r' && b[1] == '\n')) {
                *consumed = off + (b[0] == '\n' ? 1 : 2);
                p->state = PROTO_LINE;
            } else {
                p->state = PROTO_SKIP_LINE; /* drop from this byte through the LF */
            }
            return p->skip_server ? PROTO_SERVER_ERROR : PROTO_ERROR;
        case PROTO_LINE:
            break;
        }

        size_t limit = WQ_MIN(n, p->max_line + 2); /* line, CR, LF */
        const char *lf = NULL;
        if (p->scanned < limit)
            lf = memchr(b + p->scanned, '\n', limit - p->scanned);
        size_t line_len = lf != NULL ? (size_t)(lf - b) : 0;
        bool too_long =
            lf == NULL ? (n > p->max_line + 1 || (n == p->max_line + 1 && b[p->max_line] != '\r'))
                       : (line_len > p->max_line + 1 ||
                          (line_len == p->max_line + 1 && b[p->max_line] != '\r'));
        if (too_long) {
            *error = "Line too long";
            return PROTO_FATAL;
        }
        if (lf == NULL) {
            p->scanned = n;
            *need = n + 1;
            return PROTO_NEED;
        }
        size_t used;
        enum proto_result r = proto_line(p, b, n, line_len, req, error, &used, need);
        off += used;
        *consumed = off;
        if (r == PROTO_NEED && used > 0)
            continue; /* a blank line, or a skip starts */
        return r;
    }
}
