/* cli_reply.c - framing and printing of replies for workq-cli.
 *
 * workq-cli is a standalone client, so it allocates with plain malloc (its
 * leaks stay visible to valgrind) rather than through alloc.h, which would
 * drag in jemalloc; the same holds for cli_cmd.c and cli.c. */
#include "lib/wq.h"
#include "cli/cli_reply.h"

#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

/* No reply line of ours comes near this; more without a LF is garbage. */
#define CLI_REPLY_MAX_LINE 65536
/* Largest count or data size believed; protects the offset arithmetic. */
#define CLI_REPLY_MAX_SIZE ((uint64_t)1 << 40)
/* The longest payload shown in a table cell, quotes included. */
#define CLI_REPLY_CELL_MAX 32

enum cli_reply_state {
    CLI_RS_STATUS,     /* the first line */
    CLI_RS_ENTRY_HEAD, /* "<id> ... <size>" of a LEASE or RESULT entry */
    CLI_RS_ENTRY_DATA, /* its data block */
    CLI_RS_BLOCK_HEAD, /* "<name> <k>" of an inspect block */
    CLI_RS_FIELD,      /* "<key> <value>", or "payload " + raw bytes */
    CLI_RS_DONE,
};

/* Tokens on an entry's head line, the size included. */
static const int cli_reply_entry_tokens[CLI_VIEW_COUNT] = {
    [CLI_VIEW_LEASE] = 4,
    [CLI_VIEW_FENCED] = 5,
    [CLI_VIEW_RESULT] = 3,
};

static const char *const cli_reply_job_states[] = {"NEW",     "COMPLETED", "FAILED",
                                                   "PENDING", "LEASED",    "WAITING"};

/* Columns of the jobs table after the id, when some job has them. */
static const char *const cli_reply_job_columns[] = {"state", "priority", "attempts", "fails",
                                                    "time",  "retry-at", "died",     "payload"};

static void *
cli_reply_grow(void *p, size_t n, size_t size)
{
    p = realloc(p, n * size);
    if (p == NULL) {
        fputs("workq-cli: out of memory\n", stderr);
        abort();
    }
    return p;
}

void
cli_reply_init(struct cli_reply *r)
{
    memset(r, 0, sizeof *r);
}

void
cli_reply_clear(struct cli_reply *r)
{
    free(r->buf);
    free(r->blocks);
    free(r->fields);
    memset(r, 0, sizeof *r);
}

void
cli_reply_start(struct cli_reply *r, enum cli_view view)
{
    if (r->end > 0) {
        memmove(r->buf, r->buf + r->end, r->len - r->end);
        r->len -= r->end;
    }
    r->view = view;
    r->end = r->pos = r->line_len = 0;
    r->state = CLI_RS_STATUS;
    r->blocks_left = r->fields_left = 0;
    r->have_payload_size = false;
    r->nblocks = r->nfields = 0;
    r->error[0] = '\0';
}

static enum cli_reply_status
cli_reply_malformed(struct cli_reply *r, const char *why)
{
    snprintf(r->error, sizeof r->error, "%s", why);
    return CLI_REPLY_MALFORMED;
}

/* The line at r->pos: *n is its length without CR LF, *next the offset after
 * its LF.  MORE while its LF has not come. */
static enum cli_reply_status
cli_reply_line(struct cli_reply *r, size_t *n, size_t *next)
{
    size_t avail = r->len - r->pos;
    if (avail == 0)
        return CLI_REPLY_MORE; /* and r->buf may still be NULL */
    const char *p = r->buf + r->pos;
    const char *lf = memchr(p, '\n', avail);
    if (lf == NULL)
        return avail > CLI_REPLY_MAX_LINE ? cli_reply_malformed(r, "line too long")
                                          : CLI_REPLY_MORE;
    size_t l = (size_t)(lf - p);
    *next = r->pos + l + 1;
    if (l > 0 && p[l - 1] == '\r')
        l--;
    *n = l;
    return CLI_REPLY_DONE;
}

/* A data block of size bytes at start, then CR LF or LF: *next is the offset
 * after it. */
static enum cli_reply_status
cli_reply_data(struct cli_reply *r, size_t start, uint64_t size, size_t *next)
{
    size_t at = start + (size_t)size;
    if (r->len <= at)
        return CLI_REPLY_MORE;
    if (r->buf[at] == '\n') {
        *next = at + 1;
        return CLI_REPLY_DONE;
    }
    if (r->buf[at] == '\r') {
        if (r->len <= at + 1)
            return CLI_REPLY_MORE;
        if (r->buf[at + 1] == '\n') {
            *next = at + 2;
            return CLI_REPLY_DONE;
        }
    }
    return cli_reply_malformed(r, "data block not followed by a line end");
}

/* The number after the last space of p[0..n), and that space's offset. */
static int
cli_reply_last_number(const char *p, size_t n, uint64_t *value, size_t *space)
{
    const char *sp = NULL;
    for (size_t i = n; i > 0; i--) {
        if (p[i - 1] == ' ') {
            sp = p + i - 1;
            break;
        }
    }
    if (sp == NULL)
        return -1;
    *space = (size_t)(sp - p);
    return util_parse_u64(sp + 1, n - *space - 1, CLI_REPLY_MAX_SIZE, value);
}

static size_t
cli_reply_count_tokens(const char *p, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && (i == 0 || p[i - 1] == ' '))
            count++;
    return count;
}

static void
cli_reply_add_block(struct cli_reply *r, size_t head, size_t head_len)
{
    if (r->nblocks == r->blocks_cap) {
        r->blocks_cap = r->blocks_cap ? r->blocks_cap * 2 : 8;
        r->blocks = cli_reply_grow(r->blocks, r->blocks_cap, sizeof *r->blocks);
    }
    r->blocks[r->nblocks++] = (struct cli_reply_block){head, head_len, r->nfields, 0};
}

static void
cli_reply_add_field(struct cli_reply *r, size_t key, size_t key_len, size_t val, size_t val_len)
{
    if (r->nfields == r->fields_cap) {
        r->fields_cap = r->fields_cap ? r->fields_cap * 2 : 32;
        r->fields = cli_reply_grow(r->fields, r->fields_cap, sizeof *r->fields);
    }
    r->fields[r->nfields++] = (struct cli_reply_field){key, key_len, val, val_len};
    r->blocks[r->nblocks - 1].n++;
}

/* After an entry or a block: the next one, or the end. */
static void
cli_reply_next_block(struct cli_reply *r)
{
    bool entries = cli_reply_entry_tokens[r->view] > 0;
    if (--r->blocks_left == 0)
        r->state = CLI_RS_DONE;
    else
        r->state = entries ? CLI_RS_ENTRY_HEAD : CLI_RS_BLOCK_HEAD;
}

static enum cli_reply_status
cli_reply_status_line(struct cli_reply *r)
{
    size_t n, next;
    enum cli_reply_status st = cli_reply_line(r, &n, &next);
    if (st != CLI_REPLY_DONE)
        return st;
    const char *p = r->buf;
    r->line_len = n;
    r->pos = next;
    if (n > 0 && p[0] == '-') {
        r->state = CLI_RS_DONE;
        return CLI_REPLY_DONE;
    }
    if (n == 0 || p[0] != '+')
        return cli_reply_malformed(r, "reply does not start with + or -");
    if (r->view == CLI_VIEW_STATUS) {
        r->state = CLI_RS_DONE;
        return CLI_REPLY_DONE;
    }
    if (n < 5 || memcmp(p, "+OK ", 4) != 0 ||
        util_parse_u64(p + 4, n - 4, CLI_REPLY_MAX_SIZE, &r->blocks_left) != 0)
        return cli_reply_malformed(r, "expected +OK <count>");
    r->blocks_left++; /* cli_reply_next_block counts it down */
    cli_reply_next_block(r);
    return CLI_REPLY_DONE;
}

static enum cli_reply_status
cli_reply_entry_head(struct cli_reply *r)
{
    size_t n, next, space;
    enum cli_reply_status st = cli_reply_line(r, &n, &next);
    if (st != CLI_REPLY_DONE)
        return st;
    const char *p = r->buf + r->pos;
    if (cli_reply_count_tokens(p, n) != (size_t)cli_reply_entry_tokens[r->view] ||
        cli_reply_last_number(p, n, &r->payload_size, &space) != 0)
        return cli_reply_malformed(r, "unexpected job line");
    cli_reply_add_block(r, r->pos, n);
    r->pos = next;
    r->state = CLI_RS_ENTRY_DATA;
    return CLI_REPLY_DONE;
}

static enum cli_reply_status
cli_reply_entry_data(struct cli_reply *r)
{
    size_t next;
    enum cli_reply_status st = cli_reply_data(r, r->pos, r->payload_size, &next);
    if (st != CLI_REPLY_DONE)
        return st;
    cli_reply_add_field(r, r->pos, 0, r->pos, (size_t)r->payload_size);
    r->pos = next;
    cli_reply_next_block(r);
    return CLI_REPLY_DONE;
}

static enum cli_reply_status
cli_reply_block_head(struct cli_reply *r)
{
    size_t n, next, space;
    enum cli_reply_status st = cli_reply_line(r, &n, &next);
    if (st != CLI_REPLY_DONE)
        return st;
    if (cli_reply_last_number(r->buf + r->pos, n, &r->fields_left, &space) != 0 || space == 0)
        return cli_reply_malformed(r, "expected <name> <count>");
    cli_reply_add_block(r, r->pos, space);
    r->pos = next;
    r->have_payload_size = false;
    if (r->fields_left == 0)
        cli_reply_next_block(r);
    else
        r->state = CLI_RS_FIELD;
    return CLI_REPLY_DONE;
}

/* One key line.  In a job block, "payload " is followed by payload-size raw
 * bytes, which may hold anything, CR LF included. */
static enum cli_reply_status
cli_reply_field(struct cli_reply *r)
{
    static const char payload_key[] = "payload ";
    const size_t key_n = sizeof payload_key - 1;
    size_t avail = r->len - r->pos, next;
    enum cli_reply_status st;
    if (r->have_payload_size && memcmp(r->buf + r->pos, payload_key, WQ_MIN(avail, key_n)) == 0) {
        if (avail < key_n)
            return CLI_REPLY_MORE;
        st = cli_reply_data(r, r->pos + key_n, r->payload_size, &next);
        if (st != CLI_REPLY_DONE)
            return st;
        cli_reply_add_field(r, r->pos, key_n - 1, r->pos + key_n, (size_t)r->payload_size);
        r->have_payload_size = false;
    } else {
        size_t n;
        st = cli_reply_line(r, &n, &next);
        if (st != CLI_REPLY_DONE)
            return st;
        const char *p = r->buf + r->pos;
        const char *sp = memchr(p, ' ', n);
        size_t key_len = sp != NULL ? (size_t)(sp - p) : n;
        size_t val = sp != NULL ? key_len + 1 : n;
        cli_reply_add_field(r, r->pos, key_len, r->pos + val, n - val);
        if (key_len == 12 && memcmp(p, "payload-size", 12) == 0) {
            if (util_parse_u64(p + val, n - val, CLI_REPLY_MAX_SIZE, &r->payload_size) != 0)
                return cli_reply_malformed(r, "bad payload-size");
            r->have_payload_size = true;
        }
    }
    r->pos = next;
    if (--r->fields_left == 0)
        cli_reply_next_block(r);
    return CLI_REPLY_DONE;
}

enum cli_reply_status
cli_reply_feed(struct cli_reply *r, const void *data, size_t len)
{
    if (len > 0) {
        if (r->len + len > r->cap) {
            r->cap = WQ_MAX(r->cap * 2, r->len + len);
            r->buf = cli_reply_grow(r->buf, r->cap, 1);
        }
        memcpy(r->buf + r->len, data, len);
        r->len += len;
    }
    if (r->error[0] != '\0')
        return CLI_REPLY_MALFORMED;
    enum cli_reply_status st = CLI_REPLY_DONE;
    while (st == CLI_REPLY_DONE && r->state != CLI_RS_DONE) {
        switch (r->state) {
        case CLI_RS_STATUS:
            st = cli_reply_status_line(r);
            break;
        case CLI_RS_ENTRY_HEAD:
            st = cli_reply_entry_head(r);
            break;
        case CLI_RS_ENTRY_DATA:
            st = cli_reply_entry_data(r);
            break;
        case CLI_RS_BLOCK_HEAD:
            st = cli_reply_block_head(r);
            break;
        default:
            st = cli_reply_field(r);
            break;
        }
    }
    if (st == CLI_REPLY_DONE)
        r->end = r->pos;
    return st;
}

enum cli_foreign
cli_reply_foreign(const struct cli_reply *r)
{
    static const char faktory[] = "+HI {", http[] = "HTTP/1.";
    if (r->len >= sizeof faktory - 1 && memcmp(r->buf, faktory, sizeof faktory - 1) == 0)
        return CLI_FOREIGN_FAKTORY;
    if (r->len >= sizeof http - 1 && memcmp(r->buf, http, sizeof http - 1) == 0)
        return CLI_FOREIGN_HTTP;
    /* A TLS record: content type, then version 3.x (SSL 3.0 to TLS 1.3). */
    if (r->len >= 2 && (r->buf[0] == 0x15 || r->buf[0] == 0x16) && r->buf[1] == 0x03)
        return CLI_FOREIGN_TLS;
    return CLI_FOREIGN_NONE;
}

bool
cli_reply_is_error(const struct cli_reply *r)
{
    return r->end > 0 && r->buf[0] == '-';
}

/* ------------------------------------------------------------------------ */
/* Printing */

void
cli_text_add(struct cli_text *t, const void *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        t->cap = WQ_MAX(t->cap * 2, t->n + n + 1);
        t->p = cli_reply_grow(t->p, t->cap, 1);
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
}

/* The escaped form of byte c into e (4 bytes at most); its length. */
static size_t
cli_escape_byte(unsigned char c, bool quoted, char e[5])
{
    e[0] = '\\';
    if (c == '\r')
        e[1] = 'r';
    else if (c == '\n')
        e[1] = 'n';
    else if (c == '\t')
        e[1] = 't';
    else if (c == '\\' || (c == '"' && quoted))
        e[1] = (char)c;
    else if (c < 0x20 || c > 0x7e)
        return (size_t)snprintf(e, 5, "\\x%02x", c);
    else
        return e[0] = (char)c, 1;
    return 2;
}

/* Append p[0..n) escaped; with quoted, between double quotes and with `"`
 * escaped too.  With max > 0 and a text longer than max bytes, cut it
 * between two escapes so that it ends with "..." at most max bytes long. */
static void
cli_text_escape(struct cli_text *t, const char *p, size_t n, bool quoted, size_t max)
{
    char e[5];
    size_t whole = quoted ? 2 : 0, start = t->n, i;
    for (i = 0; i < n && max > 0 && whole <= max; i++)
        whole += cli_escape_byte((unsigned char)p[i], quoted, e);
    if (whole <= max)
        max = 0;
    cli_text_add(t, quoted ? "\"" : "", quoted ? 1 : 0); /* never leaves t->p NULL */
    for (i = 0; i < n; i++) {
        size_t en = cli_escape_byte((unsigned char)p[i], quoted, e);
        if (max > 0 && t->n - start + en + (quoted ? 1 : 0) + 3 > max)
            break;
        cli_text_add(t, e, en);
    }
    if (quoted)
        cli_text_add(t, "\"", 1);
    if (i < n)
        cli_text_add(t, "...", 3);
}

/* A field's value as shown: payloads quoted, job states by name. */
static void
cli_text_value(struct cli_text *t, const struct cli_reply *r, const struct cli_reply_field *fl,
               bool job, size_t max)
{
    const char *key = r->buf + fl->key, *val = r->buf + fl->val;
    if (job && fl->key_len == 7 && memcmp(key, "payload", 7) == 0) {
        cli_text_escape(t, val, fl->val_len, true, max);
        return;
    }
    if (job && fl->key_len == 5 && memcmp(key, "state", 5) == 0 && fl->val_len == 1 &&
        val[0] >= '0' && (size_t)(val[0] - '0') < WQ_ARRAY_LEN(cli_reply_job_states)) {
        const char *name = cli_reply_job_states[val[0] - '0'];
        cli_text_add(t, name, strlen(name));
        return;
    }
    cli_text_escape(t, val, fl->val_len, false, 0);
}

/* The field of block b named key, or NULL. */
static const struct cli_reply_field *
cli_reply_find(const struct cli_reply *r, const struct cli_reply_block *b, const char *key)
{
    size_t kn = strlen(key);
    for (size_t i = b->first; i < b->first + b->n; i++)
        if (r->fields[i].key_len == kn && memcmp(r->buf + r->fields[i].key, key, kn) == 0)
            return &r->fields[i];
    return NULL;
}

/* Print rows of two cells, the first column padded to one width. */
static void
cli_reply_print_pairs(const struct cli_text *cells, size_t nrows, FILE *out)
{
    size_t w = 0;
    for (size_t i = 0; i < nrows; i++)
        w = WQ_MAX(w, cells[2 * i].n);
    for (size_t i = 0; i < nrows; i++) {
        if (cells[2 * i + 1].n == 0)
            fprintf(out, "%s\n", cells[2 * i].p);
        else
            fprintf(out, "%-*s  %s\n", (int)w, cells[2 * i].p, cells[2 * i + 1].p);
    }
}

/* n empty texts. */
static struct cli_text *
cli_text_array(size_t n)
{
    struct cli_text *t = cli_reply_grow(NULL, n, sizeof *t);
    memset(t, 0, n * sizeof *t);
    return t;
}

static void
cli_text_array_free(struct cli_text *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(t[i].p);
    free(t);
}

/* A LEASE or RESULT entry: id, name and ttr, or id and status; then the data. */
static void
cli_reply_print_entry(const struct cli_reply *r, const struct cli_reply_block *b, FILE *out)
{
    static const char *const lease_labels[] = {"id", "name", "ttr", "payload"};
    static const char *const fenced_labels[] = {"id", "name", "ttr", "attempt", "payload"};
    static const char *const result_labels[] = {"id", "status", "result"};
    bool lease = r->view != CLI_VIEW_RESULT;
    const char *const *labels = r->view == CLI_VIEW_FENCED ? fenced_labels
                                : lease                    ? lease_labels
                                                           : result_labels;
    size_t ntok = (size_t)cli_reply_entry_tokens[r->view];
    struct cli_text cells[10] = {{0}};
    const char *p = r->buf + b->head, *end = p + b->head_len;
    for (size_t i = 0; i + 1 < ntok; i++) {
        while (*p == ' ')
            p++;
        const char *q = memchr(p, ' ', (size_t)(end - p));
        size_t n = (size_t)(q - p); /* the size token follows: q != NULL */
        cli_text_add(&cells[2 * i], labels[i], strlen(labels[i]));
        if (!lease && i == 1 && n == 1 && (*p == '0' || *p == '1'))
            cli_text_add(&cells[2 * i + 1], *p == '1' ? "completed" : "failed", *p == '1' ? 9 : 6);
        else
            cli_text_escape(&cells[2 * i + 1], p, n, false, 0);
        p = q;
    }
    const struct cli_reply_field *data = &r->fields[b->first];
    cli_text_add(&cells[2 * (ntok - 1)], labels[ntok - 1], strlen(labels[ntok - 1]));
    cli_text_escape(&cells[2 * (ntok - 1) + 1], r->buf + data->val, data->val_len, true, 0);
    cli_reply_print_pairs(cells, ntok, out);
    for (size_t i = 0; i < 2 * ntok; i++)
        free(cells[i].p);
}

/* A block as key/value rows; a job block starts with its id. */
static void
cli_reply_print_kv(const struct cli_reply *r, const struct cli_reply_block *b, FILE *out)
{
    bool job = r->view == CLI_VIEW_JOB;
    size_t nrows = b->n + (job ? 1 : 0), row = 0;
    struct cli_text *cells = cli_text_array(2 * nrows);
    if (job) {
        cli_text_add(&cells[0], "id", 2);
        cli_text_escape(&cells[1], r->buf + b->head, b->head_len, false, 0);
        row++;
    }
    for (size_t i = 0; i < b->n; i++, row++) {
        const struct cli_reply_field *fl = &r->fields[b->first + i];
        cli_text_escape(&cells[2 * row], r->buf + fl->key, fl->key_len, false, 0);
        cli_text_value(&cells[2 * row + 1], r, fl, job, 0);
    }
    cli_reply_print_pairs(cells, nrows, out);
    cli_text_array_free(cells, 2 * nrows);
}

/* The columns of a table: the QUEUES view has every key in the order they
 * first appear, the JOBS view those of cli_reply_job_columns that some job
 * has.  Returns how many; *cols is an array of key texts. */
static size_t
cli_reply_columns(const struct cli_reply *r, struct cli_text **cols)
{
    size_t n = 0, cap = 8;
    struct cli_text *c = cli_text_array(cap);
    const char *first = r->view == CLI_VIEW_JOBS ? "id" : "name";
    cli_text_add(&c[n++], first, strlen(first));
    if (r->view == CLI_VIEW_JOBS) {
        for (size_t k = 0; k < WQ_ARRAY_LEN(cli_reply_job_columns); k++) {
            for (size_t b = 0; b < r->nblocks; b++) {
                if (cli_reply_find(r, &r->blocks[b], cli_reply_job_columns[k]) != NULL) {
                    cli_text_add(&c[n++], cli_reply_job_columns[k],
                                 strlen(cli_reply_job_columns[k]));
                    break;
                }
            }
        }
        *cols = c;
        return n;
    }
    for (size_t i = 0; i < r->nfields; i++) {
        const struct cli_reply_field *fl = &r->fields[i];
        size_t k = 1;
        while (k < n && !(c[k].n == fl->key_len && memcmp(c[k].p, r->buf + fl->key, c[k].n) == 0))
            k++;
        if (k < n)
            continue;
        if (n == cap) {
            c = cli_reply_grow(c, cap * 2, sizeof *c);
            memset(c + cap, 0, cap * sizeof *c);
            cap *= 2;
        }
        cli_text_escape(&c[n++], r->buf + fl->key, fl->key_len, false, 0);
    }
    *cols = c;
    return n;
}

/* Blocks as a table: a header row, then a row per block, columns aligned
 * and separated by two spaces; a cell a block lacks shows "-". */
static void
cli_reply_print_table(const struct cli_reply *r, FILE *out)
{
    struct cli_text *cols;
    size_t ncols = cli_reply_columns(r, &cols), nrows = r->nblocks;
    bool job = r->view == CLI_VIEW_JOBS;
    struct cli_text *cells = cli_text_array(nrows * ncols);
    size_t *w = cli_reply_grow(NULL, ncols, sizeof *w);
    for (size_t c = 0; c < ncols; c++)
        w[c] = cols[c].n;
    for (size_t b = 0; b < nrows; b++) {
        const struct cli_reply_block *bl = &r->blocks[b];
        struct cli_text *row = &cells[b * ncols];
        cli_text_escape(&row[0], r->buf + bl->head, bl->head_len, false, 0);
        for (size_t c = 1; c < ncols; c++) {
            const struct cli_reply_field *fl = cli_reply_find(r, bl, cols[c].p);
            if (fl == NULL)
                cli_text_add(&row[c], "-", 1);
            else
                cli_text_value(&row[c], r, fl, job, CLI_REPLY_CELL_MAX);
        }
        for (size_t c = 0; c < ncols; c++)
            w[c] = WQ_MAX(w[c], row[c].n);
    }
    for (size_t b = 0; b <= nrows; b++) {
        const struct cli_text *row = b == 0 ? cols : &cells[(b - 1) * ncols];
        for (size_t c = 0; c < ncols; c++) {
            if (c + 1 < ncols)
                fprintf(out, "%-*s  ", (int)w[c], row[c].p);
            else
                fprintf(out, "%s\n", row[c].p);
        }
    }
    free(w);
    cli_text_array_free(cells, nrows * ncols);
    cli_text_array_free(cols, ncols);
}

/* The first line of an error reply, for people. */
static void
cli_reply_print_error(const struct cli_reply *r, FILE *out)
{
    static const struct {
        const char *prefix, *shown;
    } kinds[] = {{"-CLIENT-ERROR ", "error: "}, {"-SERVER-ERROR ", "server error: "}};
    const char *p = r->buf;
    size_t n = r->line_len;
    struct cli_text t = {0};
    for (size_t i = 0; i < WQ_ARRAY_LEN(kinds); i++) {
        size_t pn = strlen(kinds[i].prefix);
        if (n >= pn && memcmp(p, kinds[i].prefix, pn) == 0) {
            cli_text_add(&t, kinds[i].shown, strlen(kinds[i].shown));
            p += pn;
            n -= pn;
            break;
        }
    }
    if (t.n == 0) {
        p++;
        n--;
    }
    cli_text_escape(&t, p, n, false, 0);
    fprintf(out, "%s\n", t.p);
    free(t.p);
}

void
cli_reply_print(const struct cli_reply *r, FILE *out)
{
    if (cli_reply_is_error(r)) {
        cli_reply_print_error(r, out);
        return;
    }
    if (r->view == CLI_VIEW_STATUS) {
        struct cli_text t = {0};
        cli_text_escape(&t, r->buf + 1, r->line_len - 1, false, 0);
        fprintf(out, "%s\n", t.p);
        free(t.p);
        return;
    }
    if (r->nblocks == 0) {
        fputs("(none)\n", out);
        return;
    }
    if (r->view == CLI_VIEW_QUEUES || r->view == CLI_VIEW_JOBS) {
        cli_reply_print_table(r, out);
        return;
    }
    for (size_t b = 0; b < r->nblocks; b++) {
        if (b > 0)
            fputc('\n', out);
        if (cli_reply_entry_tokens[r->view] > 0)
            cli_reply_print_entry(r, &r->blocks[b], out);
        else
            cli_reply_print_kv(r, &r->blocks[b], out);
    }
}

void
cli_reply_print_raw(const struct cli_reply *r, FILE *out)
{
    struct cli_text t = {0};
    size_t from = 0;
    /* Escape line by line, so that each \n is followed by a real newline. */
    for (size_t i = 0; i < r->end; i++) {
        if (r->buf[i] != '\n' && i + 1 < r->end)
            continue;
        t.n = 0;
        cli_text_escape(&t, r->buf + from, i + 1 - from, false, 0);
        fwrite(t.p, 1, t.n, out);
        if (r->buf[i] == '\n')
            fputc('\n', out);
        from = i + 1;
    }
    free(t.p);
}
