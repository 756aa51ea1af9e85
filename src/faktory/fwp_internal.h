/* fwp_internal.h - what the Faktory front-end's files share: fwp.c
 * (framing, the handshake, dispatch), fwp_cmd.c (the job commands),
 * fwp_admin.c (INFO, FLUSH, QUEUE) and fwp_mutate.c (MUTATE), above
 * fwp_job.c (work units, times, failures), fwp_reply.c (RESP replies) and
 * fwp_json.c (JSON values). */
#ifndef WQ_FWP_INTERNAL_H
#define WQ_FWP_INTERNAL_H

#include "lib/wq.h"
#include "faktory/fwp.h"

#include <jansson.h>

#include "faktory/fjobs.h"
#include "net/reply.h"

enum fwp_stage {
    FWP_NOT_IDENTIFIED, /* greeted, waiting for HELLO */
    FWP_IDENTIFIED,
};

/* A connection's state. */
struct fwp_state {
    enum fwp_stage stage;
    size_t scanned;      /* bytes of an unfinished line searched for its end */
    uint32_t iterations; /* of the password hash asked for */
    char salt[17];
    struct worker *worker;  /* after a HELLO with a wid */
    struct fwaiter *parked; /* a FETCH waiting */
};

/* A command's arguments: the text after the verb and its space. */
struct fwp_args {
    const char *p;
    size_t n;
};

/* ---- replies (fwp_reply.c) ---- */
/* "-ERR <text>\r\n". */
void fwp_error(struct reply *out, const char *text);
/* The same from a format. */
void fwp_errorf(struct reply *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "+OK\r\n". */
void fwp_ok(struct reply *out);
/* "$<n>\r\n<bytes>\r\n". */
void fwp_bulk(struct reply *out, const char *s, size_t n);
/* A JSON value as a bulk string, compact, with jansson's dump flags
 * (JSON_SORT_KEYS where Faktory's server writes a Go map). */
void fwp_bulk_json(struct reply *out, json_t *v, size_t flags);
/* Refuse a change while the log cannot be written: true if refused. */
bool fwp_refuse_readonly(const struct fwp_ctx *f, struct reply *out);

/* ---- JSON values (fwp_json.c) ---- */
/* The string value of key in object o, or NULL (absent or not a string). */
const char *fwp_json_str(json_t *o, const char *key, size_t *len);
/* Decode JSON (jansson flags as for json_loadb).  Integers beyond 64 bits,
 * which JavaScript clients write for large numbers, are decoded as reals
 * rather than refused (only then: every other integer stays one). */
json_t *fwp_json_load(const char *p, size_t n, size_t flags, json_error_t *e);
/* Is v a whole number (an integer, or a real without a fraction within
 * +-2^53)?  Then *out gets it. */
bool fwp_json_int(const json_t *v, int64_t *out);

/* ---- work units and times (fwp_job.c) ---- */
#define FWP_QUEUE_PATTERN "\\A[a-zA-Z0-9._-]+\\z"
/* Is name a queue name: FWP_QUEUE_PATTERN, at most FJOB_MAX_QUEUE bytes? */
bool fwp_queue_name_valid(const char *name, size_t len);
/* "2006-01-02T15:04:05.000Z" for Unix ms (out: at least 32 bytes). */
void fwp_time_format(uint64_t unix_ms, char out[32]);
/* An RFC 3339 time with optional fractional seconds and a Z or numeric
 * offset, to Unix ms (rounded down); false if it is not one. */
bool fwp_time_parse(const char *s, size_t len, int64_t *unix_ms);

/* Check and normalise the work unit in job (an object): fills *spec
 * (pointing into *text, which the caller frees) and *text (the job as kept:
 * queue, retry and created_at added when missing, enqueued_at and failure
 * dropped).  Returns NULL, or the error (in err, 256 bytes). */
const char *fwp_job_prepare(const struct fwp_ctx *f, json_t *job, const char *raw, size_t raw_len,
                            struct fjob_spec *spec, char **text, char err[256]);
/* Push the work unit raw[0..len): NULL when done, else the error (in err,
 * 256 bytes). */
const char *fwp_job_push(struct fwp_ctx *f, const char *raw, size_t len, json_t *job,
                         char err[256]);

/* Working job j failed (FAIL, or its reservation ran out): update its
 * failure hash from errtype, message and backtrace (may be NULL), and
 * retry it, kill it or discard it as its retry policy says.  With
 * may_refuse, a failure whose text would take the core past -max-memory
 * changes nothing: false. */
bool fwp_job_fail(struct fwp_ctx *f, struct job *j, const char *errtype, const char *message,
                  json_t *backtrace, bool may_refuse);

/* ---- commands ---- */
void fwp_push(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_pushb(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_fetch(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_ack(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_fail(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_info(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_flush(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
void fwp_mutate(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);
/* If waiting is a MUTATE under way (parked), drop it unanswered: true. */
bool fwp_mutation_cancel(struct fwp_ctx *f, void *waiting);
void fwp_queue(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a);

#endif /* WQ_FWP_INTERNAL_H */
