/* cli_reply.h - workq-cli's side of a reply: read one complete reply from
 * the socket, however TCP cuts it, and print it either pretty (aligned
 * key/value lists and tables) or raw (the exact bytes, escaped).  The
 * parser only frames; it never judges the values. */
#ifndef WQ_CLI_REPLY_H
#define WQ_CLI_REPLY_H

#include "lib/wq.h"

#include <stdio.h>

/* What the command expects back, which decides both how the reply is framed
 * and how it is shown.  An error reply is always one line. */
enum cli_view {
    CLI_VIEW_STATUS, /* one line: +OK */
    CLI_VIEW_LEASE,  /* +OK n, then n of "<id> <name> <ttr> <size>" + payload */
    CLI_VIEW_FENCED, /* the same with the attempt: "<id> <name> <ttr> <attempt> <size>" */
    CLI_VIEW_RESULT, /* +OK n, then n of "<id> <1|0> <size>" + result */
    CLI_VIEW_SERVER, /* +OK n, then blocks; shown as key/value lists */
    CLI_VIEW_JOB,    /* the same, a job's id first */
    CLI_VIEW_QUEUES, /* +OK n, then blocks; shown as a table, a row per queue */
    CLI_VIEW_JOBS,   /* the same, a row per job, selected columns */
    CLI_VIEW_COUNT
};

/* A block: its head line, and its fields at fields[first .. first + n).  In
 * LEASE and RESULT replies a block is one entry: the head line and one field
 * with an empty key whose value is the data.  Offsets are into buf. */
struct cli_reply_block {
    size_t head, head_len;
    size_t first, n;
};

struct cli_reply_field {
    size_t key, key_len;
    size_t val, val_len;
};

struct cli_reply {
    enum cli_view view;
    char *buf; /* bytes received; buf[0..end) is this reply */
    size_t len, cap;
    size_t end;      /* length of the complete reply, 0 until then */
    size_t pos;      /* parsed up to here */
    size_t line_len; /* the status line, without its terminator */
    int state;       /* enum cli_reply_state, in cli_reply.c */
    uint64_t blocks_left, fields_left;
    uint64_t payload_size; /* of the current job block or entry */
    bool have_payload_size;
    struct cli_reply_block *blocks;
    size_t nblocks, blocks_cap;
    struct cli_reply_field *fields;
    size_t nfields, fields_cap;
    char error[96]; /* why the reply is malformed */
};

enum cli_reply_status {
    CLI_REPLY_DONE,        /* a complete reply is in buf[0..end) */
    CLI_REPLY_MORE,        /* feed more bytes */
    CLI_REPLY_MALFORMED,   /* not a reply of this view; r->error says why */
    CLI_REPLY_CLOSED,      /* cli_conn_read_reply: the peer closed before the end */
    CLI_REPLY_TIMEOUT,     /* cli_conn_read_reply: nothing arrived in time */
    CLI_REPLY_IO_ERROR,    /* cli_conn_read_reply: recv failed, see errno */
    CLI_REPLY_INTERRUPTED, /* cli_conn_read_reply: the user pressed Ctrl-C */
    CLI_REPLY_FOREIGN,     /* workq-cli: another server answered (cli_reply_foreign) */
};

/* What else than a Workq server the first bytes a connection received
 * come from: a listener of the same workq-server for another protocol, or
 * a TLS one spoken to in plain text. */
enum cli_foreign {
    CLI_FOREIGN_NONE,    /* a Workq reply, or too few bytes to tell */
    CLI_FOREIGN_FAKTORY, /* "+HI {": Faktory's greeting (-faktory-listen) */
    CLI_FOREIGN_HTTP,    /* "HTTP/1.": the metrics endpoint (-metrics-listen) */
    CLI_FOREIGN_TLS,     /* a TLS record: an alert (0x15) or a handshake (0x16) */
};

/* A growing byte string, NUL terminated once anything was added (also
 * used by cli_cmd to build requests). */
struct cli_text {
    char *p;
    size_t n, cap;
};
/* Append n bytes of s (aborts when memory runs out). */
void cli_text_add(struct cli_text *t, const void *s, size_t n);

void cli_reply_init(struct cli_reply *r);
void cli_reply_clear(struct cli_reply *r);
/* Forget the previous reply (bytes after it are kept) and expect one of
 * view. */
void cli_reply_start(struct cli_reply *r, enum cli_view view);
/* Append len bytes and parse as far as they go: DONE, MORE or MALFORMED. */
enum cli_reply_status cli_reply_feed(struct cli_reply *r, const void *data, size_t len);

/* Judge the bytes received so far (r->buf[0..r->len)) as the first of a
 * connection. */
enum cli_foreign cli_reply_foreign(const struct cli_reply *r);

/* True if the complete reply is an error (starts with '-'). */
bool cli_reply_is_error(const struct cli_reply *r);
/* Print the complete reply for people: "OK", "error: <text>", aligned
 * key/value lists and tables. */
void cli_reply_print(const struct cli_reply *r, FILE *out);
/* Print the complete reply's bytes exactly, escaped: printable ASCII as
 * itself, \r \n \t \\ and \xNN otherwise, and a newline after each \n. */
void cli_reply_print_raw(const struct cli_reply *r, FILE *out);

#endif /* WQ_CLI_REPLY_H */
