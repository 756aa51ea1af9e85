/* wb.h - what the files of workq-bench share: its limits, the enums of
 * workloads, protocols, request types and phases, the job, request,
 * connection and run structures, and the functions of one file that others
 * call (the protocol table and the framing are in wb_proto.h, the
 * histogram in wb_hist.h).  Every .c of workq-bench includes it first.
 *
 * The files stand on floors: each calls only functions of files on lower
 * floors, so no two call each other, directly or in a loop.  Upward, they
 * go through pointers: the connections reach the protocol through the
 * table in bench.proto (wb_proto.h) and the phase that opened them (the
 * run, or the clean-up) through the hooks in bench.driver.
 *   0  wb_util.c    allocation, the clock, random numbers, errors, stopping
 *      wb_hist.c    the latency histogram
 *      wb_tls.c     --tls
 *   1  wb_frame.c   reply framing and tokens
 *   2  wb_jobs.c    the jobs, their names and ids, and their counts
 *   3  wb_conn.c    connections: requests in flight, reading, flushing
 *      wb_report.c  the progress line and the report
 *   4  wb_wq.c, wb_bs.c, wb_fk.c, wb_hero.c   the protocols, each one table
 *      wb_run.c     the run: roles, phases, what to send next
 *      wb_clean.c   the clean-up after the run
 *   5  wb_protos.c  the table of every protocol, by --protocol
 *   6  wb_opts.c    the command line
 *   7  workq-bench.c  main
 * (`nm --undefined-only` on the objects shows which file uses which.) */
#ifndef WB_H
#define WB_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uuid.h>

#include "wb_hist.h"

struct addrinfo;
struct bufferevent;
struct evbuffer;
struct event;
struct event_base;

#define BENCH_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define BENCH_ID_LEN         36          /* canonical UUID text */
#define BENCH_MAX_NAMES      4096        /* every name is on each lease line */
#define BENCH_MAX_LINE       (70 * 1024) /* longest reply line we wait for */
#define BENCH_MAX_BLOCK      (1u << 30)  /* largest data block we accept */
#define BENCH_MAX_PAYLOAD    (64u << 20)
#define BENCH_MAX_PIPELINE   100000
#define BENCH_ERRORS_SHOWN   10
#define BENCH_PREFILL_DEPTH  16    /* lease-complete fills with at least this */
#define BENCH_LEASE_WAIT_MS  2000  /* lease / reserve-with-timeout wait */
#define BENCH_RUN_WAIT_MS    30000 /* how long a run waits for a worker */
#define BENCH_SCHED_PAST_MS  1000  /* schedule times: now - 1000 ms ... */
#define BENCH_SCHED_AHEAD_MS 100   /* ... up to now + 100 ms */
#define BENCH_PROGRESS_MS    250
#define BENCH_JOB_NONE       UINT32_MAX
#define BENCH_MAX_ALL_JOBS   2000000000u /* -n plus the backlog: indices fit in uint32_t */
#define BENCH_BACKLOG_DEPTH  128         /* the backlog is added with this pipeline */
#define BENCH_ID_BATCH       4096        /* ids per getrandom call */
#define BENCH_MAX_PASSWORD   1024        /* a password, bytes */
#define BENCH_CLEAN_CONNS    4           /* connections of the clean-up */
#define BENCH_CLEAN_DEPTH    256         /* clean-up requests in flight per connection */
#define BENCH_CLEAN_TIMES    3           /* the clean-up's --timeout: this many times the run's */
#define BENCH_CLEAN_LINE     8192        /* longest QUEUE REMOVE line of the clean-up */

/* Exit statuses (sysexits.h's where there is one). */
#define BENCH_EXIT_FAILED   1  /* errors, lost jobs, --timeout, Ctrl-C, the server unusable */
#define BENCH_EXIT_USAGE    64 /* EX_USAGE */
#define BENCH_EXIT_NOINPUT  66 /* EX_NOINPUT: the password file */
#define BENCH_EXIT_PASSWORD 77 /* EX_NOPERM: a password needed but not given, or refused */

/* The TTL of backlog jobs: the largest `add` takes (2^64 - 1 ms).  workq
 * caps created + TTL at 2^64 - 1, which its clock never reaches, so they
 * never expire.  With --ttl they could run out mid-run and leave the
 * measured phase on an emptying queue without an error. */
#define BENCH_BACKLOG_TTL_MS UINT64_MAX

/* Priorities.  --priorities draws 0 .. BENCH_PRIORITIES - 1, which is also the
 * default 0 without it; the backlog sits below all of them.  beanstalkd
 * inverts them (lower is more urgent): 1023 .. 0, 1024 without
 * --priorities, and the least urgent of all for the backlog.  Faktory has
 * 1 .. 9 (higher first): the draws map onto 2 .. 9 in eight equal bands,
 * the backlog is 1, and without --priorities no priority is sent (the
 * server's default, 5). */
#define BENCH_PRIORITIES       1024
#define BENCH_BACKLOG_PRIORITY INT32_MIN
#define BENCH_BS_BACKLOG_PRI   UINT32_MAX
#define BENCH_FK_BACKLOG_PRI   1
_Static_assert(BENCH_BACKLOG_PRIORITY < 0 && BENCH_PRIORITIES < UINT32_MAX,
               "the backlog must rank below every measured job");

/* ------------------------------------------------------------------------ */
/* Enumerations and their name tables                                       */

enum wb_workload { WL_ADD, WL_LEASE_COMPLETE, WL_CYCLE, WL_RUN, WL_SCHEDULE, WL_COUNT };
extern const char *const wb_workload_names[]; /* wb_util.c */

/* --protocol: an index into wb_protos (wb_proto.h), whose entries have the
 * names. */
enum wb_proto_id {
    WB_PROTO_WORKQ,
    WB_PROTO_BEANSTALKD,
    WB_PROTO_FAKTORY,
    WB_PROTO_HERO,
    WB_PROTO_COUNT
};

/* What a request in flight was; it decides how its reply is parsed. */
enum wb_op {
    OP_ADD,
    OP_SCHEDULE,
    OP_RUN,
    OP_LEASE,
    OP_COMPLETE,
    OP_PUT,
    OP_RESERVE,
    OP_DELETE,
    OP_USE,   /* beanstalkd tube selection: bookkeeping, not measured */
    OP_WATCH, /* beanstalkd watch / ignore: set-up, not measured */
    OP_PUSH,
    OP_FETCH,
    OP_ACK,
    OP_HSET,     /* Hero: HSET hero:job:{id} with the job's fields */
    OP_LPUSH,    /* Hero: LPUSH hero:work_queue:{name} {id}, once the HSET is answered */
    OP_BLPOP,    /* Hero: the worker's wait for a job */
    OP_HGETALL,  /* Hero: the worker reads the job it popped */
    OP_STARTED,  /* Hero: HSET ... status started */
    OP_FINISHED, /* Hero: HSET ... status finished output done */
    OP_REPLY,    /* Hero: LPUSH hero:reply:{id} done, which completes the job */
    OP_HI,       /* Faktory's greeting, which comes unasked: set-up, not measured */
    OP_HELLO,    /* Faktory's HELLO: set-up, not measured */
    OP_AUTH,     /* workq's auth: set-up, not measured */
    OP_CLEAN,    /* the clean-up's delete, ACK or QUEUE REMOVE: not measured */
    OP_COUNT
};
extern const char *const wb_op_names[]; /* wb_util.c */

/* Only replies read in PH_MEASURE count towards throughput and latency.
 * PH_CLEAN is the clean-up after the run, on connections of its own. */
enum wb_phase { PH_CONNECT, PH_BACKLOG, PH_PREFILL, PH_MEASURE, PH_DONE, PH_CLEAN };

/* Per-job bookkeeping bits. */
enum wb_job_flag {
    WB_JOB_SENT = 1,   /* its add/schedule/run/put was written */
    WB_JOB_ACKED = 2,  /* ... and accepted */
    WB_JOB_LEASED = 4, /* a lease/reserve returned it (twice is an error) */
    WB_JOB_DONE = 8,   /* complete/delete/run result confirmed */
    WB_JOB_LOST = 16   /* creation failed: no longer expected to complete */
};

/* ------------------------------------------------------------------------ */
/* Data structures                                                          */

/* One job of the run.  All are generated before the clock starts, so the
 * measured phase only formats and looks them up. */
struct wb_job {
    uuid_t id;
    int32_t priority; /* 0..1023 with --priorities, else 0; backlog: INT32_MIN */
    uint16_t name;    /* index into bench.names */
    uint8_t flags;    /* enum wb_job_flag */
};

/* One request in flight. */
struct wb_req {
    uint64_t sent_ns;
    /* An index into bench.jobs; for OP_USE and for a lease with a ticket the
     * index of the name asked for (bench.names); else BENCH_JOB_NONE. */
    uint32_t job;
    uint8_t op; /* enum wb_op */
};

/* beanstalkd assigns its own ids; this maps them back to our jobs.  When a
 * RESERVED arrives before the INSERTED of the same job (the two come on
 * different connections), the payload is held until the INSERTED names it. */
struct wb_bs_slot {
    uint64_t bid;  /* 0: empty (beanstalkd ids start at 1) */
    uint32_t job;  /* BENCH_JOB_NONE while only the reservation is known */
    uint32_t held; /* 1 + index into bench.held, or 0 */
};

struct wb_bs_held {
    char *data;
    size_t len;
};

struct bench;
struct wb_conn;
struct wb_proto;

/* The phase that opened the connections, as they call it: the run
 * (wb_run.c) or the clean-up (wb_clean.c).  In bench.driver, so that the
 * connections and the jobs' counts need neither file. */
struct wb_driver {
    void (*start)(struct bench *b);               /* every connection is up */
    void (*fill)(struct wb_conn *c);              /* c may send (its replies were read) */
    void (*idle)(struct bench *b);                /* perhaps nothing is in flight: go on, or end */
    void (*ticket)(struct bench *b, uint32_t ji); /* measured job ji was accepted (run only) */
};

struct wb_conn {
    struct bench *b;
    unsigned idx;
    struct bufferevent *bev;
    struct evbuffer *out; /* requests not yet written; see bench_flush (wb_conn.c) */
    bool ready;           /* connected and set up */
    bool closed;          /* failed; never used again */
    bool answered;        /* has received bytes (the first may show a foreign server) */
    bool producer;        /* in the current phase */
    bool worker;          /* leases in the measured phase (set before connecting) */
    unsigned prod_idx;    /* its index among producers */
    uint32_t name;        /* name of the next job it produces */
    uint32_t tube;        /* beanstalkd: the tube in `use`, or UINT32_MAX */
    unsigned setup_left;
    struct wb_req *ring; /* requests in flight, oldest at head */
    uint32_t cap, head, count;
    uint32_t work;   /* measured requests in flight (pipeline slots) */
    uint32_t leases; /* lease/reserve in flight */
    bool dirty;      /* has output not yet written; in bench.dirty */
    bool starved;    /* waits for a ticket; in bench.starved */
};

/* The command line, checked. */
struct wb_opts {
    const char *host;
    const char *port; /* NULL: the protocol's default */
    char *addr_buf;   /* what host and port point into after --addr or WORKQ_ADDR */
    enum wb_workload workload;
    enum wb_proto_id proto;
    uint32_t conns;
    uint32_t jobs;
    uint32_t payload;
    uint32_t pipeline;
    uint32_t names;
    uint32_t ttr_ms;
    uint64_t ttl_ms;
    uint32_t timeout_s;
    uint32_t backlog; /* unmeasured jobs added to every name first */
    bool priorities, csv, json, quiet;
    bool keep; /* --keep: no clean-up after the run */
    /* --password-file's first line, else WORKQ_PASSWORD (workq) or
     * FAKTORY_PASSWORD (Faktory), else NULL (a server that asks for a
     * password is then refused); Hero takes the file only. */
    char *password;
    /* --tls, and the PEM files of --cacert (NULL: the system's CAs),
     * --cert and --key (NULL: no client certificate). */
    bool tls;
    const char *cacert, *cert, *key;
};

/* Everything about one run; one instance, passed around (no globals). */
struct bench {
    struct wb_opts opt;
    const struct wb_proto *proto;   /* wb_protos[opt.proto] */
    const struct wb_driver *driver; /* the run's, then the clean-up's */
    char addr[300];                 /* as shown in reports */
    struct event_base *base;
    struct addrinfo *ai;
    struct ssl_ctx_st *tls; /* the client context with --tls, else NULL */
    struct event *progress_ev, *timeout_ev, *sigint_ev;
    bool progress;
    struct wb_conn *conns;
    unsigned nconns;        /* opened in this phase: opt.conns, or the clean-up's */
    struct wb_conn **dirty; /* connections with output to flush */
    size_t ndirty, dirty_cap;
    unsigned nready, nprod;
    enum wb_phase phase;
    bool drained; /* a lease found nothing although all jobs were sent */
    bool timed_out, interrupted;
    bool answered; /* some connection has had a reply */
    int fatal;     /* the exit status after a failure that ends everything (no report); 0: none */

    struct wb_job *jobs; /* opt.jobs measured jobs, then nbacklog backlog jobs */
    uint32_t nbacklog;
    uint32_t *idmap; /* 1 + job index, by id; open addressing */
    size_t idmap_mask;
    struct wb_bs_slot *bidmap;
    size_t bidmap_mask, bidmap_used;
    struct wb_bs_held *held;
    size_t nheld, held_cap, held_open;
    char (*names)[24];
    unsigned tag;     /* of this run: in the names and Faktory wids */
    char *lease_line; /* workq: lease over every name; Faktory: FETCH */
    size_t lease_len;
    char *scratch;
    size_t scratch_len;
    uint64_t rng;

    /* With a backlog: accepted measured jobs not yet leased are tickets[
     * ticket_head .. nticket) (each job is one ticket once, so no wrap), and
     * consumers waiting for one are a FIFO ring of opt.conns. */
    uint32_t *tickets;
    uint32_t ticket_head, nticket;
    struct wb_conn **starved;
    uint32_t starved_head, nstarved;

    /* Counters.  created: adds/puts accepted; leased: valid lease replies;
     * completes_ok: complete/delete +OK; runs_ok: run results checked.  The
     * *_inflight counters are kept by wb_conn_push and wb_conn_pop only. */
    uint32_t next_job;      /* next job a producer takes */
    uint32_t next_backlog;  /* next backlog job, counted from the first */
    uint64_t jobs_expected; /* jobs that should end up done */
    uint64_t created, backlog_created, leased, completes_ok, runs_ok;
    uint64_t requests, errors, lease_timeouts;
    uint64_t inflight, prod_inflight, leases_inflight;
    uint64_t t0_ns; /* start of the measured phase; 0 until it starts */
    uint64_t t_end_ns;
    uint64_t last_done, last_ns; /* for the progress rate */

    struct wb_hist all;
    struct wb_hist hist[OP_COUNT];

    /* The clean-up (wb_clean.c, and each protocol's clean_send): the next
     * job (or beanstalkd id slot) to remove, then the next queue name
     * (Faktory's QUEUE REMOVE); what it removed; whether it ran to its end,
     * and how long it took. */
    size_t clean_next;
    uint32_t clean_name;
    uint64_t cleaned;
    bool clean_done;
    uint64_t clean_ns;
    uint64_t *clean_enqueued; /* Faktory: per name, jobs pushed and never fetched */
};

/* The parts of one complete reply, found in the input buffer. */
struct wb_frame {
    const char *line; /* first line, without CRLF */
    size_t line_len;
    const char *line2; /* workq: the header line of a data block, else NULL */
    /* The data block: workq's and beanstalkd's, or a RESP bulk string
     * (Faktory's, Hero's: its line is its `$<len>` header); a null bulk
     * string (`$-1`) is a line without data.  A RESP array (Hero's: the
     * line `*<count>`) has its elements, still in RESP, as its data, and
     * the null array (`*-1`) is a line without data.  A RESP reply's
     * bytes are contiguous, from line to line + total. */
    size_t line2_len;
    const char *data; /* data block, without CRLF, or NULL if none */
    size_t data_len;
    size_t total; /* bytes the reply occupies */
};

/* A token of a reply line: a slice of the input buffer, not a string. */
struct wb_tok {
    const char *s;
    size_t len;
};

/* ------------------------------------------------------------------------ */
/* wb_util.c: helpers every file uses                                       */

/* calloc that exits on failure: every size here is ours, none a server's. */
void *wb_xcalloc(size_t n, size_t size);

/* Monotonic nanoseconds. */
uint64_t wb_now_ns(void);

/* The run's pseudo-random numbers (splitmix64). */
uint64_t wb_rng_next(struct bench *b);

/* Count an error; print only the first BENCH_ERRORS_SHOWN. */
__attribute__((format(printf, 2, 3))) void wb_error(struct bench *b, const char *fmt, ...);

/* End the phase: stop the clock (not the clean-up's) and leave the event
 * loop. */
void wb_stop(struct bench *b);

/* Something makes the run impossible (the server is not there or not what
 * it should be, a password is wanted): stop at once; the exit status is
 * status, with no report. */
void wb_fatal(struct bench *b, int status);

/* The time text of a schedule offset_ms from now: YYYY-MM-DDTHH:MM:SS.mmmZ. */
void wb_format_time(char *out, size_t cap, int64_t offset_ms);

/* A random schedule offset: BENCH_SCHED_PAST_MS ago to BENCH_SCHED_AHEAD_MS ahead. */
int64_t wb_sched_offset_ms(struct bench *b);

/* ------------------------------------------------------------------------ */
/* wb_tls.c: --tls                                                          */

/* Make b->tls from the options; exits 1 if a file cannot be loaded. */
void wb_tls_init(struct bench *b);
void wb_tls_clear(struct bench *b);
/* Connect to b->ai (blocking: loopback is quick) and start the handshake;
 * the bufferevent reports BEV_EVENT_CONNECTED once it is done.  Exits if
 * the connection fails. */
struct bufferevent *wb_tls_connect(struct bench *b);
/* Why TLS connection bev failed (OpenSSL's text), or NULL if not TLS's. */
const char *wb_tls_error(struct bufferevent *bev);

/* ------------------------------------------------------------------------ */
/* wb_jobs.c: the jobs of a run, their names, ids and payloads, their counts */

/* Make the queue names, every job and its random id, and size the maps;
 * exits on OOM. */
void wb_jobs_init(struct bench *b);

/* b->lease_line: verb, every queue name, then tail (which ends the line). */
void wb_jobs_lease_line(struct bench *b, const char *verb, const char *tail);

/* The job whose id is the canonical lowercase text t, or NULL. */
struct wb_job *wb_jobs_find(struct bench *b, struct wb_tok t);

/* Is j one of the backlog (never expected to complete)? */
bool wb_jobs_is_backlog(const struct bench *b, const struct wb_job *j);

/* A job that will never complete: stop counting on it. */
void wb_jobs_lost(struct bench *b, struct wb_job *j);

/* Job ji was accepted (add, schedule, put, PUSH); a measured one goes on
 * to b->driver->ticket. */
void wb_jobs_created(struct bench *b, uint32_t ji);

/* A complete, delete or ACK was answered: the job is done if the reply is
 * the line ok. */
void wb_jobs_completed(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                       const char *ok);

/* A lease, reserve or FETCH found nothing within its wait. */
void wb_jobs_lease_empty(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);

/* The jobs the run has done, as its workload counts them. */
uint64_t wb_jobs_done(const struct bench *b);

/* Write the payload of the job with this id text into dst (len bytes). */
void wb_payload_fill(char *dst, size_t len, const char *id);

/* Is p the payload of the job with this id text? */
bool wb_payload_matches(const char *p, size_t len, const char *id);

/* ------------------------------------------------------------------------ */
/* wb_conn.c: connections, their request rings and the libevent callbacks   */

/* Queue bytes of a request on c; wb_conn_push must follow. */
void wb_conn_send(struct wb_conn *c, const void *data, size_t len);

/* Queue header (hlen bytes, already in b->scratch), payload and CRLF. */
void wb_conn_write_block(struct wb_conn *c, int hlen, const char *id);

/* Record the request just queued on c: its type, job and time. */
void wb_conn_push(struct wb_conn *c, enum wb_op op, uint32_t job);

/* A set-up reply that makes the run impossible: say why, and stop with
 * exit status status. */
void wb_conn_setup_fail(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
                        const char *what, int status);

/* Start connecting c; exits if the connection cannot be created. */
void wb_conn_open(struct bench *b, struct wb_conn *c);

/* Free what c holds (the structure itself is the caller's). */
void wb_conn_clear(struct wb_conn *c);

/* ------------------------------------------------------------------------ */
/* wb_run.c: roles, phases and what each connection sends next             */

/* Connect every connection and run the event loop until the run ends
 * (done, --timeout, Ctrl-C, or a failure that makes it impossible). */
void wb_run(struct bench *b);

/* ------------------------------------------------------------------------ */
/* wb_clean.c: the clean-up after the run                                   */

/* Remove what the run left on the server (unless --keep), over new
 * connections; runs the event loop until done, --timeout or Ctrl-C. */
void wb_clean(struct bench *b);

/* ------------------------------------------------------------------------ */
/* wb_report.c: the progress line and the report                           */

/* Rewrite the progress line on the terminal (every BENCH_PROGRESS_MS). */
void wb_report_progress(struct bench *b);

/* Print the report in the format the options ask for. */
void wb_report_print(const struct bench *b, uint64_t incomplete);

/* ------------------------------------------------------------------------ */
/* wb_opts.c: the command line                                              */

/* Fill o from the command line and the environment (WORKQ_ADDR, the
 * passwords); exits 64 on anything invalid (66 for an unreadable password
 * file), 0 after --help and --version. */
void wb_opts_parse(struct wb_opts *o, int argc, char **argv);

#endif /* WB_H */
