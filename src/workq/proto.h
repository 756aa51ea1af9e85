/* proto.h - framing and tokenizing of the Workq text protocol
 * (doc/protocol-reference.md section 1), and nothing else: no I/O, no jobs.
 * The caller feeds the unconsumed input as one contiguous buffer; the
 * parser reports a request, an error reply, or how many bytes it needs,
 * and how many bytes the caller may drop.  State carries over between
 * calls (oversized data blocks are skipped as they stream in, never
 * buffered). */
#ifndef WQ_PROTO_H
#define WQ_PROTO_H

#include "lib/wq.h"

#define PROTO_ANY_ARGS 0xffff

/* A data block declared larger than the limit is read past (dropped as it
 * streams in) up to this size; a larger one is answered at once with the
 * size error and the connection closed.  64 times the limit, and at least
 * 64 MiB. */
#define PROTO_SKIP_FACTOR 64
#define PROTO_SKIP_FLOOR  (64ull << 20)
static inline uint64_t
proto_skip_max(uint64_t max_payload)
{
    return max_payload > PROTO_SKIP_FLOOR / PROTO_SKIP_FACTOR ? max_payload * PROTO_SKIP_FACTOR
                                                              : PROTO_SKIP_FLOOR;
}

/* The shape of a command: what framing needs to know. */
struct proto_syntax {
    const char *name;
    uint16_t min_args, max_args; /* positional tokens after the name */
    bool block;                  /* the last positional is a data block size */
    const char *size_error;      /* error for a bad block size */
};

/* Find the syntax of a command name, or NULL if unknown. */
typedef const struct proto_syntax *(*proto_lookup_fn)(const char *name, size_t len);

struct request {
    const struct proto_syntax *cmd;
    const struct wq_str *args; /* positional tokens after the name */
    size_t nargs;
    const struct wq_str *flags; /* tokens "-key=value", in order */
    size_t nflags;
    const char *block; /* the data block, when cmd->block */
    size_t block_len;
};

enum proto_result {
    PROTO_NEED,         /* call again once at least *need bytes are buffered */
    PROTO_REQUEST,      /* *req is valid until *consumed bytes are dropped */
    PROTO_ERROR,        /* reply -CLIENT-ERROR *error; the connection goes on */
    PROTO_FATAL,        /* reply -CLIENT-ERROR *error, then close */
    PROTO_SERVER_ERROR, /* reply -SERVER-ERROR *error; the connection goes on */
};

/* May a data block of len bytes be buffered now (the server's memory)?
 * When not, the block is dropped as it streams in and the command gets
 * PROTO_SERVER_ERROR "Out of memory". */
typedef bool (*proto_fits_fn)(void *arg, uint64_t len);
#define PROTO_OUT_OF_MEMORY "Out of memory"

enum proto_state { PROTO_LINE, PROTO_SKIP_BLOCK, PROTO_SKIP_END, PROTO_SKIP_LINE };

struct proto {
    proto_lookup_fn lookup;
    size_t max_line;
    uint64_t max_payload;
    enum proto_state state;
    uint64_t skip_left;     /* PROTO_SKIP_BLOCK: block bytes still to drop */
    const char *skip_error; /* the error to send once the skip ends */
    bool skip_server;       /* ... as a server error */
    proto_fits_fn fits;     /* NULL: any block within max_payload may be buffered */
    void *fits_arg;
    size_t scanned; /* PROTO_LINE: leading bytes known to hold no LF */
    struct wq_str *args, *flags;
    size_t cap; /* room in args and in flags */
};

void proto_init(struct proto *p, proto_lookup_fn lookup, size_t max_line, uint64_t max_payload);
void proto_clear(struct proto *p);

/* Parse buf[0..len), the unconsumed input.  Always sets *consumed (bytes
 * the caller must drop after handling the result) and, for PROTO_NEED,
 * *need (> len).  A buffer that grows between calls must keep its
 * unconsumed prefix unchanged. */
enum proto_result proto_parse(struct proto *p, const char *buf, size_t len, struct request *req,
                              const char **error, size_t *consumed, size_t *need);

/* Split a flag token "-key=value" into key and value (either may be empty). */
void proto_flag_split(const struct wq_str *flag, struct wq_str *key, struct wq_str *value);

#endif /* WQ_PROTO_H */
