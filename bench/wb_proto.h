/* wb_proto.h - workq-bench's protocol clients: framing and tokens of
 * replies (wb_frame.c), the workq client (wb_wq.c), the beanstalkd client
 * (wb_bs.c) and the Faktory client (wb_fk.c).  Each formats requests, queues them on a connection
 * with wb_conn_push, and checks the replies; reply handlers are called by
 * wb_conn.c, one per request type. */
#ifndef WB_PROTO_H
#define WB_PROTO_H

#include "wb.h"

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
 * in, 0 if more bytes are needed, -1 if framing is lost (*why says why). */
int wb_frame_find(struct evbuffer *in, enum wb_proto proto, enum wb_op op, struct wb_frame *f,
                  const char **why);

/* ------------------------------------------------------------------------ */
/* wb_wq.c: the workq client                                                */

/* Add, schedule or run job ji (id: its text), as the phase and workload say. */
void wb_wq_produce(struct wb_conn *c, uint32_t ji, const char *id);

/* Lease: with a ticket (a job index) from that job's name, else from all. */
void wb_wq_lease(struct wb_conn *c, uint32_t ticket);

void wb_wq_reply_created(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_wq_reply_lease(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_wq_reply_complete(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_wq_reply_run(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
/* Send auth with the password; the set-up replies it waits for (1). */
unsigned wb_wq_auth(struct wb_conn *c);
/* auth: +OK, else (a wrong password) the run cannot go on. */
void wb_wq_reply_auth(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
/* A set-up reply that makes the run impossible: say why, and stop with
 * exit status status. */
void wb_setup_fail(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                   const char *what, int status);

/* ------------------------------------------------------------------------ */
/* wb_bs.c: the beanstalkd client                                           */

/* Put job ji (id: its text), after a `use` if c's tube differs. */
void wb_bs_produce(struct wb_conn *c, uint32_t ji, const char *id);

/* reserve-with-timeout over the watched tubes. */
void wb_bs_reserve(struct wb_conn *c);

/* A consumer's set-up: watch every name, ignore default; the requests queued. */
unsigned wb_bs_watch_all(struct wb_conn *c);

void wb_bs_reply_put(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_bs_reply_reserve(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_bs_reply_delete(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_bs_reply_use(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_bs_reply_watch(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);

/* ------------------------------------------------------------------------ */
/* wb_fk.c: the Faktory Work Protocol client                                */

/* A new connection waits for the greeting; the set-up replies it waits for. */
unsigned wb_fk_greet(struct wb_conn *c);

/* PUSH job ji (id: its text, also its jid), with a priority and a time as
 * the options, the phase and the workload say. */
void wb_fk_produce(struct wb_conn *c, uint32_t ji, const char *id);

/* FETCH: with a ticket (a job index) from that job's name, else from all. */
void wb_fk_fetch(struct wb_conn *c, uint32_t ticket);

/* Lowercase hex of SHA-256 applied iterations times (at least once), the
 * first round over password and salt, each later one over the previous
 * 32-byte digest; password at most BENCH_MAX_PASSWORD bytes, salt at most
 * 256. */
void wb_fk_pwdhash(const char *password, const char *salt, size_t salt_len, uint64_t iterations,
                   char out[65]);

void wb_fk_reply_hi(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_fk_reply_hello(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_fk_reply_push(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_fk_reply_fetch(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);
void wb_fk_reply_ack(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);

#endif /* WB_PROTO_H */
