/* wb_proto.h - workq-bench's protocol table and reply framing.  Each
 * protocol client (wb_wq.c for Workq, wb_bs.c for beanstalkd, wb_fk.c for
 * Faktory, wb_hero.c for the Hero Dispatcher's Redis protocol) exports one
 * struct wb_proto and nothing else; wb_protos.c maps
 * --protocol to them.  The connections (wb_conn.c), the run (wb_run.c) and
 * the clean-up (wb_clean.c) reach a protocol only through bench.proto.
 * The framing and tokens of replies (wb_frame.c) are shared by all of them. */
#ifndef WB_PROTO_H
#define WB_PROTO_H

#include "wb.h"

/* ------------------------------------------------------------------------ */
/* The protocol table                                                       */

/* What a protocol client does for the rest of workq-bench.  Its requests
 * go out with wb_conn_send/wb_conn_push (wb_conn.c); what its replies
 * mean is counted with wb_jobs_* (wb_jobs.c). */
struct wb_proto {
    const char *name; /* --protocol's word, and in reports */
    const char *port; /* the default port */
    /* The server speaks first (Faktory's +HI); for the others such a
     * greeting shows a wrong listener. */
    bool greets;
    /* What producers send in the measured phase, by workload, and what
     * consumers send: for the report's latency rows. */
    enum wb_op produce_op[WL_COUNT];
    enum wb_op lease_op, complete_op;
    /* Requests a job needs besides those (Hero's), in the order they are
     * sent, for the report's rows: produce_more[0 .. nproduce_more) after
     * the producing one, work_more[0 .. nwork_more) between the lease and
     * the complete.  None for the other protocols. */
    enum wb_op produce_more[2], work_more[3];
    unsigned nproduce_more, nwork_more;

    /* Before connecting, after wb_jobs_init: what the protocol keeps in
     * the run (the lease line, beanstalkd's id map). */
    void (*init)(struct bench *b);
    /* c is connected: queue its set-up requests (auth, watch, the wait for
     * Faktory's greeting); the replies it waits for before it is ready. */
    unsigned (*setup)(struct wb_conn *c);
    /* Find the reply to a request of type op at the head of in, as
     * wb_frame_find does. */
    int (*frame)(struct evbuffer *in, enum wb_op op, struct wb_frame *f, const char **why);
    /* A reply that ends the run whatever was asked (and is then not passed
     * to reply); NULL if the protocol has none. */
    bool (*refused)(struct wb_conn *c, const struct wb_frame *f);
    /* Check the reply f to request r and act on it: count the job, send
     * the complete, delete or ACK of a leased one at once. */
    void (*reply)(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
    /* Send job ji (id: its text): add, schedule, run, put or PUSH, as the
     * phase and workload say. */
    void (*produce)(struct wb_conn *c, uint32_t ji, const char *id);
    /* Ask for a job: with a ticket (a job index, else BENCH_JOB_NONE) from
     * that job's name alone where the protocol can. */
    void (*lease)(struct wb_conn *c, uint32_t ticket);
    /* Before the clean-up: is anything left on the server to remove? */
    bool (*clean_prepare)(struct bench *b);
    /* Queue the next clean-up request on c (OP_CLEAN); false when none is
     * left. */
    bool (*clean_send)(struct wb_conn *c);
};

extern const struct wb_proto wb_proto_workq;      /* wb_wq.c */
extern const struct wb_proto wb_proto_beanstalkd; /* wb_bs.c */
extern const struct wb_proto wb_proto_faktory;    /* wb_fk.c */
extern const struct wb_proto wb_proto_hero;       /* wb_hero.c */

/* Every protocol, by enum wb_proto_id (wb_protos.c). */
extern const struct wb_proto *const wb_protos[WB_PROTO_COUNT];

/* ------------------------------------------------------------------------ */
/* wb_frame.c: finding a reply and splitting it into tokens                */

/* Does token t spell exactly s? */
bool wb_tok_is(struct wb_tok t, const char *s);

/* Split s on single spaces into at most max tokens; the count, or max + 1. */
int wb_tokenize(const char *s, size_t len, struct wb_tok *t, int max);

/* Decimal digits only, no sign, at most 19 of them; 0 or -1. */
int wb_tok_u64(struct wb_tok t, uint64_t *out);

/* Is the reply the single line s (and no data block)? */
bool wb_frame_is(const struct wb_frame *f, const char *s);

/* Count an unexpected reply f to r as an error, quoting it. */
void wb_error_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                    const char *what);

/* Find the reply to a request of type op at the head of in: 1 with *f filled
 * in, 0 if more bytes are needed, -1 if framing is lost (*why says why).
 * With WB_PROTO_HERO, any RESP2 reply (arrays nested or not). */
int wb_frame_find(struct evbuffer *in, enum wb_proto_id proto, enum wb_op op, struct wb_frame *f,
                  const char **why);

/* The elements of a RESP array reply f (found by wb_frame_find) when all
 * are bulk strings: their count, with each element in el[] (a null bulk
 * string has .s NULL); -1 if f is not an array, is the null array, has
 * another kind of element, or more than max. */
int wb_resp_array(const struct wb_frame *f, struct wb_tok *el, int max);

/* A RESP integer reply `:<n>`, n >= 0: 0 with *out, else -1. */
int wb_resp_uint(const struct wb_frame *f, uint64_t *out);

#endif /* WB_PROTO_H */
