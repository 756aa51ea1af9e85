/* workq-bench.c - load generator for workq-server, in the spirit of
 * redis-benchmark, that can also drive beanstalkd for comparison.
 *
 * One thread, one libevent loop, N connections.  Each connection keeps up to
 * P requests in flight and a FIFO of what it expects back, so every reply is
 * parsed completely and checked against the request that caused it: a reply
 * that is not exactly what the protocol promises is an error, never
 * throughput.  A job's payload is its id's text repeated (a deterministic
 * function of the id), so a leased payload is checked without storing it.
 *
 * Standalone on purpose: no code from src/, only libevent_core and libuuid.
 *
 * Why one file of this size (house rule R14): it is a single tool with no
 * callers, and keeping it self-contained lets it be built and copied alone. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include <uuid.h>

/* How a run goes.
 *
 * Connect: all connections at once; beanstalkd consumers first `watch` every
 * tube.  Backlog (--backlog, not measured): every connection adds its share
 * of N jobs per name at the lowest priority.  Prefill (lease-complete only,
 * not measured): every connection adds its share of the jobs.  Measure:
 * producers take the next job from a shared counter and add/schedule/run/put
 * it; consumers lease (or reserve) and complete (or delete) what they get.
 * Each phase ends when nothing is in flight and no connection may send: then
 * every reply has been read.
 *
 * Consumers never have more leases in flight than there are jobs left to
 * lease (the lease budget, bench_lease_budget), so at the end no lease is
 * left waiting for a job that will never come, and a lease that comes back
 * empty after all producers are done means the server lost jobs.  Jobs
 * whose creation failed leave the budget (wb_jobs_lost), so errors do not turn
 * into hangs; --timeout is the last resort.
 *
 * With a backlog, a lease must never find the queue without a measured job,
 * or it would take a backlog job (the highest-priority ready job wins, and
 * workq picks among the listed names at random, whatever their priorities).
 * So every accepted measured job becomes a ticket, and a consumer leases
 * only with a ticket, from that job's name alone, and takes only a job of
 * that name (beanstalkd: reserve, which takes the most urgent job of all
 * watched tubes).  A consumer without a ticket waits in bench.starved
 * until an add is accepted.  Leases then never wait for producers, which in
 * cycle leaves that wait out of lease latency. */

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

/* The TTL of backlog jobs: the largest `add` takes (2^64 - 1 ms).  workq
 * caps created + TTL at 2^64 - 1, which its clock never reaches, so they
 * never expire.  With --ttl they could run out mid-run and leave the
 * measured phase on an emptying queue without an error. */
#define BENCH_BACKLOG_TTL_MS UINT64_MAX

/* Priorities.  --priorities draws 0 .. BENCH_PRIORITIES - 1, which is also the
 * default 0 without it; the backlog sits below all of them.  beanstalkd
 * inverts them (lower is more urgent): 1023 .. 0, 1024 without
 * --priorities, and the least urgent of all for the backlog. */
#define BENCH_PRIORITIES       1024
#define BENCH_BACKLOG_PRIORITY INT32_MIN
#define BENCH_BS_BACKLOG_PRI   UINT32_MAX
_Static_assert(BENCH_BACKLOG_PRIORITY < 0 && BENCH_PRIORITIES < UINT32_MAX,
               "the backlog must rank below every measured job");

/* ------------------------------------------------------------------------ */
/* Enumerations and their name tables                                       */

enum wb_workload { WL_ADD, WL_LEASE_COMPLETE, WL_CYCLE, WL_RUN, WL_SCHEDULE, WL_COUNT };
static const char *const wb_workload_names[] = {"add", "lease-complete", "cycle", "run",
                                                "schedule"};
_Static_assert(BENCH_ARRAY_LEN(wb_workload_names) == WL_COUNT, "wb_workload_names out of sync");

enum wb_proto { WB_PROTO_WORKQ, WB_PROTO_BEANSTALKD, WB_PROTO_COUNT };
static const char *const wb_proto_names[] = {"workq", "beanstalkd"};
_Static_assert(BENCH_ARRAY_LEN(wb_proto_names) == WB_PROTO_COUNT, "wb_proto_names out of sync");

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
    OP_COUNT
};

/* Only replies read in PH_MEASURE count towards throughput and latency. */
enum wb_phase { PH_CONNECT, PH_BACKLOG, PH_PREFILL, PH_MEASURE, PH_DONE };

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

/* A log-linear histogram of microseconds, in the manner of HdrHistogram:
 * values below 2*WB_HIST_SUB are exact, above that every power of two is split
 * into WB_HIST_SUB buckets, so a reported value is within 1/WB_HIST_SUB (0.8%) of
 * the truth.  Fixed size (34 KiB); recording never allocates. */
#define WB_HIST_SUB_BITS 7
#define WB_HIST_SUB      (1u << WB_HIST_SUB_BITS)
#define WB_HIST_MAX_BITS 40 /* 2^40 us is 12 days; larger values are clamped */
#define WB_HIST_BUCKETS  ((WB_HIST_MAX_BITS - WB_HIST_SUB_BITS + 1) * WB_HIST_SUB)

struct wb_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t buckets[WB_HIST_BUCKETS];
};

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

struct wb_conn {
    struct bench *b;
    unsigned idx;
    struct bufferevent *bev;
    struct evbuffer *out; /* requests not yet written; see bench_flush */
    bool ready;           /* connected and set up */
    bool closed;          /* failed; never used again */
    bool producer;        /* in the current phase */
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
    enum wb_workload workload;
    enum wb_proto proto;
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
};

/* Everything about one run; one instance, passed around (no globals). */
struct bench {
    struct wb_opts opt;
    char addr[300]; /* as shown in reports */
    struct event_base *base;
    struct addrinfo *ai;
    struct event *progress_ev, *timeout_ev, *sigint_ev;
    bool progress;
    struct wb_conn *conns;
    struct wb_conn **dirty; /* connections with output to flush */
    size_t ndirty, dirty_cap;
    unsigned nready, nprod;
    enum wb_phase phase;
    bool drained; /* a lease found nothing although all jobs were sent */
    bool timed_out, interrupted, fatal;

    struct wb_job *jobs; /* opt.jobs measured jobs, then nbacklog backlog jobs */
    uint32_t nbacklog;
    uint32_t *idmap; /* 1 + job index, by id; open addressing */
    size_t idmap_mask;
    struct wb_bs_slot *bidmap;
    size_t bidmap_mask, bidmap_used;
    struct wb_bs_held *held;
    size_t nheld, held_cap, held_open;
    char (*names)[24];
    char *lease_line;
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
};

/* The parts of one complete reply, found in the input buffer. */
struct wb_frame {
    const char *line; /* first line, without CRLF */
    size_t line_len;
    const char *line2; /* workq: the header line of a data block, else NULL */
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
/* Small helpers                                                            */

/* calloc that exits on failure: every size here is ours, none a server's. */
static void *
wb_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL) {
        fprintf(stderr, "workq-bench: out of memory\n");
        exit(1);
    }
    return p;
}

/* Monotonic nanoseconds: send and arrival times of requests. */
static uint64_t
wb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: priorities and schedule offsets need no better. */
static uint64_t
wb_rng_next(struct bench *b)
{
    uint64_t z = (b->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Does token t spell exactly s? */
static bool
wb_tok_is(struct wb_tok t, const char *s)
{
    return t.len == strlen(s) && memcmp(t.s, s, t.len) == 0;
}

/* Split s on single spaces into at most max tokens; returns the count, or
 * max + 1 if there are more.  Empty tokens are kept, so they fail later. */
static int
wb_tokenize(const char *s, size_t len, struct wb_tok *t, int max)
{
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ' ')
            continue;
        if (n == max)
            return max + 1;
        t[n].s = s + start;
        t[n].len = i - start;
        n++;
        start = i + 1;
    }
    return n;
}

/* Decimal digits only, no sign, at most 19 of them. */
static int
wb_tok_u64(struct wb_tok t, uint64_t *out)
{
    if (t.len == 0 || t.len > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < t.len; i++) {
        if (t.s[i] < '0' || t.s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(t.s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Is the reply the single line s (and no data block)? */
static bool
wb_frame_is(const struct wb_frame *f, const char *s)
{
    return f->data == NULL && f->line_len == strlen(s) && memcmp(f->line, s, f->line_len) == 0;
}

/* Copy up to 100 bytes of s into out (>= 420 bytes) for an error message,
 * with unprintable bytes escaped. */
static void
quote_bytes(char *out, const char *s, size_t len)
{
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < len && i < 100; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)sprintf(out + o, "\\x%02x", ch);
    }
    if (len > 100)
        o += (size_t)sprintf(out + o, "...");
    out[o++] = '"';
    out[o] = '\0';
}

/* A job's payload: its id's text, repeated and cut to len bytes. */
static void
wb_payload_fill(char *dst, size_t len, const char *id)
{
    for (size_t off = 0; off < len; off += BENCH_ID_LEN) {
        size_t n = len - off < BENCH_ID_LEN ? len - off : BENCH_ID_LEN;
        memcpy(dst + off, id, n);
    }
}

/* The check for wb_payload_fill: is p the payload of the job with this id? */
static bool
wb_payload_matches(const char *p, size_t len, const char *id)
{
    for (size_t off = 0; off < len; off += BENCH_ID_LEN) {
        size_t n = len - off < BENCH_ID_LEN ? len - off : BENCH_ID_LEN;
        if (memcmp(p + off, id, n) != 0)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Histogram                                                                */

/* Bucket of v: v itself below WB_HIST_SUB; above, the top WB_HIST_SUB_BITS + 1
 * significant bits of v (which start with a 1) offset by one WB_HIST_SUB-sized
 * block per power of two, so bucket width doubles with each power. */
static unsigned
hist_index(uint64_t v)
{
    if (v < WB_HIST_SUB)
        return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - WB_HIST_SUB_BITS;
    return shift * WB_HIST_SUB + (unsigned)(v >> shift);
}

/* The largest value that lands in bucket i. */
static uint64_t
hist_upper(unsigned i)
{
    if (i < 2 * WB_HIST_SUB)
        return i;
    unsigned shift = i / WB_HIST_SUB - 1;
    uint64_t mant = i - shift * WB_HIST_SUB;
    return ((mant + 1) << shift) - 1;
}

/* Count one sample, clamped into the histogram's range. */
static void
wb_hist_record(struct wb_hist *h, uint64_t us)
{
    if (us >= ((uint64_t)1 << WB_HIST_MAX_BITS))
        us = ((uint64_t)1 << WB_HIST_MAX_BITS) - 1;
    h->buckets[hist_index(us)]++;
    h->count++;
    h->sum += us;
    if (us > h->max)
        h->max = us;
}

/* The smallest bucket bound with at least permyriad/10000 of the samples at
 * or below it (nearest rank), capped at the largest sample; 0 if empty. */
static uint64_t
wb_hist_percentile(const struct wb_hist *h, unsigned permyriad)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (h->count * permyriad + 9999) / 10000;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < WB_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t v = hist_upper(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */

/* Count an error; print the first few, so a broken server does not drown
 * the terminal. */
__attribute__((format(printf, 2, 3))) static void
wb_error(struct bench *b, const char *fmt, ...)
{
    b->errors++;
    if (b->errors > BENCH_ERRORS_SHOWN)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->progress)
        fprintf(stderr, "\r%-79s\r", "");
    fprintf(stderr, "workq-bench: error: %s\n", msg);
    if (b->errors == BENCH_ERRORS_SHOWN)
        fprintf(stderr, "workq-bench: (further errors are counted, not shown)\n");
}

static const char *const wb_op_names[] = {"add", "schedule", "run",    "lease", "complete",
                                          "put", "reserve",  "delete", "use",   "watch"};
_Static_assert(BENCH_ARRAY_LEN(wb_op_names) == OP_COUNT, "wb_op_names out of sync");

/* An unexpected reply to r, quoted. */
static void
wb_error_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f,
               const char *what)
{
    char q[420], q2[420] = "";
    quote_bytes(q, f->line, f->line_len);
    if (f->line2 != NULL) {
        q2[0] = ' ';
        quote_bytes(q2 + 1, f->line2, f->line2_len);
    }
    wb_error(c->b, "conn %u: %s: %s: %s%s", c->idx, wb_op_names[r->op], what, q, q2);
}

/* ------------------------------------------------------------------------ */
/* Jobs and the id maps                                                     */

/* The first 8 bytes of an id, as a hash: random ids need no mixing. */
static uint64_t
load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Index job i by its id; false if another job has the same id. */
static bool
jobs_index(struct bench *b, uint32_t i)
{
    size_t s = (size_t)load64(b->jobs[i].id) & b->idmap_mask;
    for (;; s = (s + 1) & b->idmap_mask) {
        if (b->idmap[s] == 0) {
            b->idmap[s] = i + 1;
            return true;
        }
        if (uuid_compare(b->jobs[b->idmap[s] - 1].id, b->jobs[i].id) == 0)
            return false;
    }
}

/* Random version 4 ids, made as libuuid's uuid_generate_random makes them
 * but from one getrandom call per BENCH_ID_BATCH ids: libuuid reseeds for
 * every id (about 5 us), which would make a backlog of a million jobs take
 * seconds to set up. */
static void
ids_random(uuid_t *ids, size_t n)
{
    unsigned char *p = (unsigned char *)ids;
    size_t len = n * sizeof(uuid_t), off = 0;
    while (off < len) {
        ssize_t got = getrandom(p + off, len - off, 0);
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "workq-bench: getrandom: %s\n", strerror(errno));
            exit(1);
        }
        if (got > 0)
            off += (size_t)got;
    }
    for (size_t i = 0; i < n; i++) {
        ids[i][6] = (unsigned char)((ids[i][6] & 0x0f) | 0x40); /* version 4 */
        ids[i][8] = (unsigned char)((ids[i][8] & 0x3f) | 0x80); /* RFC 4122 variant */
    }
}

/* Generate every job's random v4 id up front, so the measured phase only
 * looks them up.  The ids are random: their first bytes are a fine hash.
 * Backlog jobs come after the measured ones, N per name in name order. */
static void
wb_jobs_init(struct bench *b)
{
    uint32_t total = b->opt.jobs + b->nbacklog;
    size_t cap = 16;
    while (cap < 2 * (size_t)total)
        cap <<= 1;
    b->jobs = wb_xcalloc(total, sizeof *b->jobs);
    b->idmap = wb_xcalloc(cap, sizeof *b->idmap);
    b->idmap_mask = cap - 1;
    uuid_t *batch = wb_xcalloc(BENCH_ID_BATCH, sizeof *batch);
    size_t left = 0;
    for (uint32_t i = 0; i < total; i++) {
        do {
            if (left == 0) {
                ids_random(batch, BENCH_ID_BATCH);
                left = BENCH_ID_BATCH;
            }
            uuid_copy(b->jobs[i].id, batch[--left]);
        } while (!jobs_index(b, i));
        if (i >= b->opt.jobs) {
            b->jobs[i].priority = BENCH_BACKLOG_PRIORITY;
            b->jobs[i].name = (uint16_t)((i - b->opt.jobs) / b->opt.backlog);
        } else if (b->opt.priorities) {
            b->jobs[i].priority = (int32_t)(wb_rng_next(b) % BENCH_PRIORITIES);
        }
    }
    free(batch);
    if (b->nbacklog > 0) {
        b->tickets = wb_xcalloc(b->opt.jobs, sizeof *b->tickets);
        b->starved = wb_xcalloc(b->opt.conns, sizeof *b->starved);
    }
    if (b->opt.proto == WB_PROTO_BEANSTALKD) {
        b->bidmap = wb_xcalloc(cap, sizeof *b->bidmap);
        b->bidmap_mask = cap - 1;
    }
}

/* The job whose id is the canonical lowercase text t, or NULL. */
static struct wb_job *
wb_jobs_find(struct bench *b, struct wb_tok t)
{
    char text[BENCH_ID_LEN + 1], again[BENCH_ID_LEN + 1];
    uuid_t id;
    if (t.len != BENCH_ID_LEN)
        return NULL;
    memcpy(text, t.s, BENCH_ID_LEN);
    text[BENCH_ID_LEN] = '\0';
    if (uuid_parse(text, id) != 0)
        return NULL;
    uuid_unparse_lower(id, again);
    if (memcmp(text, again, BENCH_ID_LEN) != 0) /* not canonical lowercase */
        return NULL;
    for (size_t s = (size_t)load64(id) & b->idmap_mask; b->idmap[s] != 0;
         s = (s + 1) & b->idmap_mask) {
        struct wb_job *j = &b->jobs[b->idmap[s] - 1];
        if (uuid_compare(j->id, id) == 0)
            return j;
    }
    return NULL;
}

/* Is j one of the backlog (never expected to complete)? */
static bool
wb_jobs_is_backlog(const struct bench *b, const struct wb_job *j)
{
    return (size_t)(j - b->jobs) >= b->opt.jobs;
}

/* A job that will never complete: stop counting on it. */
static void
wb_jobs_lost(struct bench *b, struct wb_job *j)
{
    if ((j->flags & (WB_JOB_LEASED | WB_JOB_LOST)) || wb_jobs_is_backlog(b, j))
        return;
    j->flags |= WB_JOB_LOST;
    if (b->jobs_expected > 0)
        b->jobs_expected--;
}

/* The slot of beanstalkd id bid: its own, or the empty one it would take. */
static struct wb_bs_slot *
bidmap_slot(struct bench *b, uint64_t bid)
{
    size_t s = (size_t)((bid * 0x9E3779B97F4A7C15ull) >> 20) & b->bidmap_mask;
    while (b->bidmap[s].bid != 0 && b->bidmap[s].bid != bid)
        s = (s + 1) & b->bidmap_mask;
    return &b->bidmap[s];
}

/* Claim an empty slot for bid; NULL (an error) if the map is full, which
 * only a server inventing ids can cause. */
static struct wb_bs_slot *
bidmap_claim(struct bench *b, struct wb_bs_slot *s, uint64_t bid)
{
    if (b->bidmap_used >= b->bidmap_mask / 4 * 3) {
        wb_error(b, "too many distinct beanstalkd job ids");
        return NULL;
    }
    b->bidmap_used++;
    s->bid = bid;
    s->job = BENCH_JOB_NONE;
    s->held = 0;
    return s;
}

/* ------------------------------------------------------------------------ */
/* Connections: the request ring and accounting                             */

/* Classes of requests, for the counters: producing requests bring a job
 * into being, lease requests draw on the lease budget, and only measured
 * requests take a pipeline slot and count in latency and requests/s. */
static bool
op_is_produce(enum wb_op op)
{
    return op == OP_ADD || op == OP_SCHEDULE || op == OP_RUN || op == OP_PUT;
}

static bool
op_is_lease(enum wb_op op)
{
    return op == OP_LEASE || op == OP_RESERVE;
}

static bool
op_is_measured(enum wb_op op)
{
    return op != OP_USE && op != OP_WATCH;
}

/* Queue bytes of a request; wb_conn_push marks the connection for flushing. */
static void
wb_conn_send(struct wb_conn *c, const void *data, size_t len)
{
    evbuffer_add(c->out, data, len);
}

/* Record a request that was just queued on c: the ring holds what c
 * expects back, in order, with the time it was queued. */
static void
wb_conn_push(struct wb_conn *c, enum wb_op op, uint32_t job)
{
    struct bench *b = c->b;
    if (c->count == c->cap) {
        /* Grow and unwrap the ring. */
        uint32_t ncap = c->cap == 0 ? 16 : c->cap * 2;
        struct wb_req *r = wb_xcalloc(ncap, sizeof *r);
        for (uint32_t i = 0; i < c->count; i++)
            r[i] = c->ring[(c->head + i) & (c->cap - 1)];
        free(c->ring);
        c->ring = r;
        c->cap = ncap;
        c->head = 0;
    }
    struct wb_req *r = &c->ring[(c->head + c->count) & (c->cap - 1)];
    if (!c->dirty) {
        /* Grows only if a connection fails in bench_flush and others are
         * refilled in the same pass. */
        if (b->ndirty == b->dirty_cap) {
            b->dirty_cap *= 2;
            b->dirty = realloc(b->dirty, b->dirty_cap * sizeof *b->dirty);
            if (b->dirty == NULL) {
                fprintf(stderr, "workq-bench: out of memory\n");
                exit(1);
            }
        }
        c->dirty = true;
        b->dirty[b->ndirty++] = c;
    }
    r->op = (uint8_t)op;
    r->job = job;
    r->sent_ns = wb_now_ns();
    c->count++;
    b->inflight++;
    if (op_is_measured(op))
        c->work++;
    if (op_is_produce(op))
        b->prod_inflight++;
    if (op_is_lease(op)) {
        c->leases++;
        b->leases_inflight++;
    }
}

/* Remove the oldest request and undo its accounting; returns a copy. */
static struct wb_req
wb_conn_pop(struct wb_conn *c)
{
    struct bench *b = c->b;
    struct wb_req r = c->ring[c->head];
    c->head = (c->head + 1) & (c->cap - 1);
    c->count--;
    b->inflight--;
    if (op_is_measured((enum wb_op)r.op))
        c->work--;
    if (op_is_produce((enum wb_op)r.op))
        b->prod_inflight--;
    if (op_is_lease((enum wb_op)r.op)) {
        c->leases--;
        b->leases_inflight--;
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */

/* Has every job been sent and every producing request answered? */
static bool
bench_producers_done(const struct bench *b)
{
    return b->next_job == b->opt.jobs && b->prod_inflight == 0;
}

/* What producers send in this workload and protocol. */
static enum wb_op
wb_run_produce_op(const struct bench *b)
{
    if (b->opt.proto == WB_PROTO_BEANSTALKD)
        return OP_PUT;
    if (b->opt.workload == WL_RUN)
        return OP_RUN;
    if (b->opt.workload == WL_SCHEDULE)
        return OP_SCHEDULE;
    return OP_ADD;
}

/* Format a schedule time offset_ms from now, with milliseconds. */
static void
format_time(char *out, size_t cap, int64_t offset_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + offset_ms;
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Write header + payload + CRLF (the header is already in b->scratch). */
static void
wb_conn_write_block(struct wb_conn *c, int hlen, const char *id)
{
    struct bench *b = c->b;
    char *p = b->scratch + hlen;
    wb_payload_fill(p, b->opt.payload, id);
    memcpy(p + b->opt.payload, "\r\n", 2);
    wb_conn_send(c, b->scratch, (size_t)hlen + b->opt.payload + 2);
}

/* workq: add, schedule or run job ji. */
static void
wb_wq_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    const char *name = b->names[j->name];
    char prio[32] = "", when[80];
    if (b->opt.priorities || wb_jobs_is_backlog(b, j))
        snprintf(prio, sizeof prio, " -priority=%" PRId32, j->priority);
    /* The backlog and the prefill of lease-complete always add. */
    enum wb_op op = b->phase != PH_MEASURE ? OP_ADD : wb_run_produce_op(b);
    uint64_t ttl = wb_jobs_is_backlog(b, j) ? BENCH_BACKLOG_TTL_MS : b->opt.ttl_ms;
    int n;
    if (op == OP_SCHEDULE) {
        int64_t off = (int64_t)(wb_rng_next(b) % (BENCH_SCHED_PAST_MS + BENCH_SCHED_AHEAD_MS + 1)) -
                      BENCH_SCHED_PAST_MS;
        format_time(when, sizeof when, off);
        n = snprintf(b->scratch, 512, "schedule %s %s %" PRIu32 " %" PRIu64 " %s %" PRIu32 "%s\r\n",
                     id, name, b->opt.ttr_ms, ttl, when, b->opt.payload, prio);
    } else if (op == OP_RUN) {
        n = snprintf(b->scratch, 512, "run %s %s %" PRIu32 " %d %" PRIu32 "%s\r\n", id, name,
                     b->opt.ttr_ms, BENCH_RUN_WAIT_MS, b->opt.payload, prio);
    } else {
        n = snprintf(b->scratch, 512, "add %s %s %" PRIu32 " %" PRIu64 " %" PRIu32 "%s\r\n", id,
                     name, b->opt.ttr_ms, ttl, b->opt.payload, prio);
    }
    wb_conn_write_block(c, n, id);
    wb_conn_push(c, op, ji);
}

/* beanstalkd: put job ji, after a `use` if this connection's tube differs.
 * Priorities are inverted (beanstalkd serves the lowest first); a
 * "schedule" in the future becomes a delay of one second, the smallest
 * beanstalkd has. */
static void
wb_bs_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    if (c->tube != j->name) {
        char use[64];
        int n = snprintf(use, sizeof use, "use %s\r\n", b->names[j->name]);
        wb_conn_send(c, use, (size_t)n);
        wb_conn_push(c, OP_USE, j->name);
        c->tube = j->name;
    }
    unsigned delay = 0;
    if (b->opt.workload == WL_SCHEDULE && b->phase == PH_MEASURE) {
        uint64_t r = wb_rng_next(b) % (BENCH_SCHED_PAST_MS + BENCH_SCHED_AHEAD_MS + 1);
        delay = r > BENCH_SCHED_PAST_MS ? 1 : 0;
    }
    uint32_t pri = wb_jobs_is_backlog(b, j) ? BENCH_BS_BACKLOG_PRI
                   : b->opt.priorities      ? BENCH_PRIORITIES - 1 - (uint32_t)j->priority
                                            : BENCH_PRIORITIES;
    uint32_t ttr_s = (b->opt.ttr_ms + 999) / 1000;
    int n = snprintf(b->scratch, 512, "put %" PRIu32 " %u %" PRIu32 " %" PRIu32 "\r\n", pri, delay,
                     ttr_s, b->opt.payload);
    wb_conn_write_block(c, n, id);
    wb_conn_push(c, OP_PUT, ji);
}

/* Has this phase jobs left for producers to send? */
static bool
bench_produce_left(const struct bench *b)
{
    if (b->phase == PH_BACKLOG)
        return b->next_backlog < b->nbacklog;
    return b->next_job < b->opt.jobs;
}

/* Hand the next job to producer c.  Names rotate so that all K names are
 * used: producer i takes names i, i + nprod, ... (a fixed one if K <= nprod).
 * Backlog jobs have their names already, in blocks: producers change names
 * (and beanstalkd tubes) together, once per name. */
static void
producer_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    uint32_t ji;
    if (b->phase == PH_BACKLOG) {
        ji = b->opt.jobs + b->next_backlog++;
    } else {
        ji = b->next_job++;
        b->jobs[ji].name = (uint16_t)c->name;
        c->name += b->nprod;
        if (c->name >= b->opt.names)
            c->name = c->prod_idx % b->opt.names;
    }
    struct wb_job *j = &b->jobs[ji];
    char id[BENCH_ID_LEN + 1];
    j->flags |= WB_JOB_SENT;
    uuid_unparse_lower(j->id, id);
    if (b->opt.proto == WB_PROTO_WORKQ)
        wb_wq_produce(c, ji, id);
    else
        wb_bs_produce(c, ji, id);
}

/* Ask for a job.  workq: the precomputed lease line over every name, with a
 * wait, or with a ticket (job ticket, else BENCH_JOB_NONE) that job's name
 * alone, which the request keeps so that the reply can be held to it;
 * beanstalkd: reserve-with-timeout over the watched tubes. */
static void
consumer_lease(struct wb_conn *c, uint32_t ticket)
{
    struct bench *b = c->b;
    if (b->opt.proto == WB_PROTO_WORKQ && ticket != BENCH_JOB_NONE) {
        uint32_t name = b->jobs[ticket].name;
        char line[64];
        int n = snprintf(line, sizeof line, "lease %s %d\r\n", b->names[name], BENCH_LEASE_WAIT_MS);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_LEASE, name);
    } else if (b->opt.proto == WB_PROTO_WORKQ) {
        wb_conn_send(c, b->lease_line, b->lease_len);
        wb_conn_push(c, OP_LEASE, BENCH_JOB_NONE);
    } else {
        char line[64];
        int n =
            snprintf(line, sizeof line, "reserve-with-timeout %d\r\n", BENCH_LEASE_WAIT_MS / 1000);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_RESERVE, BENCH_JOB_NONE);
    }
}

/* workq: complete job j with its id's text as the result. */
static void
wb_wq_complete(struct wb_conn *c, struct wb_job *j)
{
    char id[BENCH_ID_LEN + 1], line[128];
    uuid_unparse_lower(j->id, id);
    int n = snprintf(line, sizeof line, "complete %s %d\r\n%s\r\n", id, BENCH_ID_LEN, id);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_COMPLETE, (uint32_t)(j - c->b->jobs));
}

/* beanstalkd: delete reserved job bid (job: our index, or BENCH_JOB_NONE
 * while its INSERTED has not been read). */
static void
wb_bs_delete(struct wb_conn *c, uint64_t bid, uint32_t job)
{
    char line[64];
    int n = snprintf(line, sizeof line, "delete %" PRIu64 "\r\n", bid);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_DELETE, job);
}

/* May a consumer send another lease?  Never more leases than jobs left to
 * lease, so no lease is left waiting for a job that will not come. */
static bool
bench_lease_budget(const struct bench *b)
{
    return !b->drained && b->leases_inflight + b->leased < b->jobs_expected;
}

static void consumer_starve(struct wb_conn *c);

/* Send what c may send now, up to its pipeline depth.  In `run`, a worker
 * keeps at most one lease in flight: a parked lease holds back every later
 * command on its connection, and a `complete` stuck behind it would keep
 * its run client (and so the next job) waiting.  With a backlog, each lease
 * takes a ticket, and a consumer finding none waits until bench_ticket. */
static void
wb_run_fill(struct wb_conn *c)
{
    struct bench *b = c->b;
    if (c->closed || !c->ready || b->phase == PH_CONNECT || b->phase == PH_DONE)
        return;
    if (c->producer) {
        uint32_t depth = b->opt.pipeline;
        if (b->phase == PH_PREFILL && depth < BENCH_PREFILL_DEPTH)
            depth = BENCH_PREFILL_DEPTH;
        if (b->phase == PH_BACKLOG && depth < BENCH_BACKLOG_DEPTH)
            depth = BENCH_BACKLOG_DEPTH;
        while (c->work < depth && bench_produce_left(b))
            producer_send(c);
        return;
    }
    uint32_t lease_max = b->opt.workload == WL_RUN ? 1 : b->opt.pipeline;
    while (c->work < b->opt.pipeline && c->leases < lease_max && bench_lease_budget(b)) {
        if (b->tickets == NULL) {
            consumer_lease(c, BENCH_JOB_NONE);
        } else if (b->ticket_head < b->nticket) {
            consumer_lease(c, b->tickets[b->ticket_head++]);
        } else {
            consumer_starve(c);
            break;
        }
    }
}

/* Consumer c could lease but has no ticket: queue it for the next one. */
static void
consumer_starve(struct wb_conn *c)
{
    struct bench *b = c->b;
    if (c->starved)
        return;
    c->starved = true;
    b->starved[(b->starved_head + b->nstarved++) % b->opt.conns] = c;
}

/* Measured job ji was accepted.  With a backlog it becomes a ticket, and
 * the consumers that waited longest for one may lease again. */
static void
bench_ticket(struct bench *b, uint32_t ji)
{
    if (b->tickets == NULL)
        return;
    b->tickets[b->nticket++] = ji;
    while (b->nstarved > 0 && b->ticket_head < b->nticket) {
        struct wb_conn *c = b->starved[b->starved_head];
        b->starved_head = (b->starved_head + 1) % b->opt.conns;
        b->nstarved--;
        c->starved = false;
        wb_run_fill(c);
    }
}

/* Let every connection send what it may (after a phase change or a failure). */
static void
wb_run_fill_all(struct bench *b)
{
    for (unsigned i = 0; i < b->opt.conns; i++)
        wb_run_fill(&b->conns[i]);
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                  */

/* A lease or reserve that found nothing within its wait.  In lease-complete
 * every job is ready before the drain, and with a backlog every lease has a
 * ticket, so that is an error; elsewhere it is normal while producers run,
 * and means "nothing left" once they are done. */
static void
wb_run_lease_timed_out(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    b->lease_timeouts++;
    if (b->opt.workload == WL_LEASE_COMPLETE || b->tickets != NULL) {
        wb_error_reply(c, r, f, "nothing to lease although jobs are left");
        b->drained = true;
    } else if (bench_producers_done(b)) {
        b->drained = true;
    }
}

/* Job ji was accepted (add, schedule, put). */
static void
wb_run_created(struct bench *b, uint32_t ji)
{
    struct wb_job *j = &b->jobs[ji];
    j->flags |= WB_JOB_ACKED;
    if (wb_jobs_is_backlog(b, j)) {
        b->backlog_created++;
        return;
    }
    b->created++;
    bench_ticket(b, ji);
}

/* add, schedule (and backlog and prefill adds): +OK */
static void
wb_wq_reply_created(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    if (wb_frame_is(f, "+OK")) {
        wb_run_created(b, r->job);
        return;
    }
    wb_error_reply(c, r, f, "unexpected reply");
    wb_jobs_lost(b, j);
}

/* Check a workq lease reply completely; the job, or NULL after an error. */
static struct wb_job *
wb_wq_lease_check(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_tok t[5];
    uint64_t ttr, size;
    const char *what = NULL;
    struct wb_job *j = NULL;
    char id[BENCH_ID_LEN + 1];
    if (wb_tokenize(f->line2, f->line2_len, t, 5) != 4 || wb_tok_u64(t[2], &ttr) < 0 ||
        wb_tok_u64(t[3], &size) < 0)
        what = "malformed lease header";
    else if ((j = wb_jobs_find(b, t[0])) == NULL)
        what = "unknown job id";
    else if (wb_jobs_is_backlog(b, j))
        what = "backlog job leased before the measured jobs";
    else if (!wb_tok_is(t[1], b->names[j->name]))
        what = "wrong queue name";
    else if (r->job != BENCH_JOB_NONE && j->name != r->job)
        what = "job from a queue not asked for";
    else if (ttr != b->opt.ttr_ms)
        what = "wrong ttr";
    else if (size != b->opt.payload)
        what = "wrong payload size";
    else if (uuid_unparse_lower(j->id, id), !wb_payload_matches(f->data, f->data_len, id))
        what = "wrong payload";
    else if (!(j->flags & WB_JOB_SENT))
        what = "job leased before it was sent";
    else if (j->flags & WB_JOB_LEASED)
        what = "job leased twice";
    if (what == NULL)
        return j;
    wb_error_reply(c, r, f, what);
    return NULL;
}

/* lease: a job, checked and completed at once on the same connection, or
 * -TIMEOUT after the wait. */
static void
wb_wq_reply_lease(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (f->data == NULL) {
        if (wb_frame_is(f, "-TIMEOUT"))
            wb_run_lease_timed_out(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    struct wb_job *j = wb_wq_lease_check(c, r, f);
    if (j == NULL)
        return;
    j->flags |= WB_JOB_LEASED;
    b->leased++;
    wb_wq_complete(c, j);
}

/* complete (workq) and delete (beanstalkd). */
static void
reply_complete(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (!wb_frame_is(f, r->op == OP_COMPLETE ? "+OK" : "DELETED")) {
        wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    b->completes_ok++;
    if (r->job != BENCH_JOB_NONE)
        b->jobs[r->job].flags |= WB_JOB_DONE;
}

/* run: the result a worker stored, which must be the job's id. */
static void
wb_wq_reply_run(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    struct wb_tok t[4];
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    if (f->data == NULL) {
        wb_error_reply(c, r, f, "no result");
        wb_jobs_lost(b, j);
        return;
    }
    if (wb_tokenize(f->line2, f->line2_len, t, 4) != 3 || !wb_tok_is(t[0], id) ||
        !wb_tok_is(t[1], "1") || f->data_len != BENCH_ID_LEN ||
        memcmp(f->data, id, BENCH_ID_LEN) != 0) {
        wb_error_reply(c, r, f, "wrong result");
        return;
    }
    j->flags |= WB_JOB_DONE;
    b->runs_ok++;
}

/* beanstalkd: check a reserved payload against job ji. */
static void
wb_bs_reserve_check(struct wb_conn *c, uint64_t bid, uint32_t ji, const char *data, size_t len)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[ji];
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    if (len != b->opt.payload || !wb_payload_matches(data, len, id))
        wb_error(b, "conn %u: reserve: wrong payload for job %" PRIu64, c->idx, bid);
    else if (j->flags & WB_JOB_LEASED)
        wb_error(b, "conn %u: reserve: job %" PRIu64 " reserved twice", c->idx, bid);
    j->flags |= WB_JOB_LEASED;
}

/* put: INSERTED <id>; also settles a reservation that came first. */
static void
wb_bs_reply_put(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    struct wb_tok t[3];
    uint64_t bid;
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "INSERTED") ||
        wb_tok_u64(t[1], &bid) < 0 || bid == 0 || f->data != NULL) {
        wb_error_reply(c, r, f, "unexpected reply");
        wb_jobs_lost(b, j);
        return;
    }
    wb_run_created(b, r->job);
    struct wb_bs_slot *s = bidmap_slot(b, bid);
    if (s->bid == 0 && (s = bidmap_claim(b, s, bid)) == NULL)
        return;
    if (s->job != BENCH_JOB_NONE) {
        wb_error_reply(c, r, f, "id given to two jobs");
        return;
    }
    s->job = r->job;
    if (s->held != 0) {
        struct wb_bs_held *h = &b->held[s->held - 1];
        wb_bs_reserve_check(c, bid, r->job, h->data, h->len);
        free(h->data);
        h->data = NULL;
        s->held = 0;
        b->held_open--;
    }
}

/* Keep a reserved payload whose INSERTED has not been read yet. */
static void
wb_bs_hold(struct bench *b, struct wb_bs_slot *s, const struct wb_frame *f)
{
    if (b->nheld == b->held_cap) {
        b->held_cap = b->held_cap == 0 ? 64 : b->held_cap * 2;
        b->held = realloc(b->held, b->held_cap * sizeof *b->held);
        if (b->held == NULL) {
            fprintf(stderr, "workq-bench: out of memory\n");
            exit(1);
        }
    }
    struct wb_bs_held *h = &b->held[b->nheld++];
    h->data = wb_xcalloc(1, f->data_len);
    memcpy(h->data, f->data, f->data_len);
    h->len = f->data_len;
    s->held = (uint32_t)b->nheld;
    b->held_open++;
}

/* reserve-with-timeout: RESERVED <id> <bytes> + data, or TIMED_OUT. */
static void
wb_bs_reply_reserve(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_tok t[4];
    uint64_t bid, size;
    if (f->data == NULL) {
        if (wb_frame_is(f, "TIMED_OUT") || wb_frame_is(f, "DEADLINE_SOON"))
            wb_run_lease_timed_out(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    if (wb_tokenize(f->line, f->line_len, t, 4) != 3 || wb_tok_u64(t[1], &bid) < 0 || bid == 0 ||
        wb_tok_u64(t[2], &size) < 0) {
        wb_error_reply(c, r, f, "malformed reply");
        return;
    }
    /* The INSERTED naming this id comes on another connection and may not
     * have been read yet: then hold the payload until it is.  The delete
     * needs only the id, so it goes out at once either way. */
    struct wb_bs_slot *s = bidmap_slot(b, bid);
    if (s->bid == 0 && (s = bidmap_claim(b, s, bid)) == NULL)
        return;
    /* Every backlog put was answered before the measured phase, so a
     * backlog job is always known here.  It is left reserved, not deleted,
     * so it comes back when its TTR ends; until then the backlog is one job
     * short, and the run fails. */
    if (s->job != BENCH_JOB_NONE && wb_jobs_is_backlog(b, &b->jobs[s->job])) {
        wb_error_reply(c, r, f, "backlog job reserved before the measured jobs");
        return;
    }
    if (s->job != BENCH_JOB_NONE)
        wb_bs_reserve_check(c, bid, s->job, f->data, f->data_len);
    else if (s->held != 0)
        wb_error_reply(c, r, f, "job reserved twice");
    else
        wb_bs_hold(b, s, f);
    b->leased++;
    wb_bs_delete(c, bid, s->job);
}

/* use: USING <tube> */
static void
wb_bs_reply_use(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct wb_tok t[3];
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "USING") ||
        !wb_tok_is(t[1], c->b->names[r->job]))
        wb_error_reply(c, r, f, "unexpected reply");
}

/* watch, ignore: WATCHING <count> */
static void
wb_bs_reply_watch(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct wb_tok t[3];
    uint64_t n;
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "WATCHING") ||
        wb_tok_u64(t[1], &n) < 0)
        wb_error_reply(c, r, f, "unexpected reply");
}

typedef void (*wb_reply_fn)(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f);

static const wb_reply_fn reply_table[] = {
    [OP_ADD] = wb_wq_reply_created,     [OP_SCHEDULE] = wb_wq_reply_created,
    [OP_RUN] = wb_wq_reply_run,         [OP_LEASE] = wb_wq_reply_lease,
    [OP_COMPLETE] = reply_complete,     [OP_PUT] = wb_bs_reply_put,
    [OP_RESERVE] = wb_bs_reply_reserve, [OP_DELETE] = reply_complete,
    [OP_USE] = wb_bs_reply_use,         [OP_WATCH] = wb_bs_reply_watch,
};
_Static_assert(BENCH_ARRAY_LEN(reply_table) == OP_COUNT, "reply_table out of sync");

/* ------------------------------------------------------------------------ */
/* Framing                                                                  */

/* The size token ending a header line (the data block's length). */
static int
header_size(const char *s, size_t len, size_t *out)
{
    size_t i = len;
    while (i > 0 && s[i - 1] != ' ')
        i--;
    uint64_t v;
    if (wb_tok_u64((struct wb_tok){s + i, len - i}, &v) < 0 || v > BENCH_MAX_BLOCK)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Find the reply to a request of type op at the head of in.  Returns 1 with
 * *f filled in (pointers valid until in changes), 0 if more bytes are
 * needed, -1 if the stream cannot be a reply (*why says why): then framing
 * is lost and the connection must go. */
static int
wb_frame_find(struct evbuffer *in, enum wb_proto proto, enum wb_op op, struct wb_frame *f,
              const char **why)
{
    size_t avail = evbuffer_get_length(in), eol, size = 0, l2 = 0;
    struct evbuffer_ptr p = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_CRLF_STRICT);
    *why = "reply line too long";
    if (p.pos < 0)
        return avail > BENCH_MAX_LINE ? -1 : 0;
    size_t l1 = (size_t)p.pos, head = l1 + 2;
    const char *s = (const char *)evbuffer_pullup(in, (ev_ssize_t)head);
    memset(f, 0, sizeof *f);
    /* A workq lease/run reply with a job is `+OK 1`, a header line ending in
     * the block size, the block and CRLF; beanstalkd's RESERVED line carries
     * the size itself.  Every other reply is one line. */
    bool wq_block = proto == WB_PROTO_WORKQ && (op == OP_LEASE || op == OP_RUN) && l1 == 5 &&
                    memcmp(s, "+OK 1", 5) == 0;
    bool bs_block = proto == WB_PROTO_BEANSTALKD && op == OP_RESERVE && l1 > 9 &&
                    memcmp(s, "RESERVED ", 9) == 0;
    if (!wq_block && !bs_block) {
        f->line = s;
        f->line_len = l1;
        f->total = head;
        return 1;
    }
    *why = "malformed data block header";
    if (wq_block) {
        if (evbuffer_ptr_set(in, &p, head, EVBUFFER_PTR_SET) < 0)
            return 0;
        p = evbuffer_search_eol(in, &p, &eol, EVBUFFER_EOL_CRLF_STRICT);
        if (p.pos < 0)
            return avail - head > BENCH_MAX_LINE ? -1 : 0;
        l2 = (size_t)p.pos - head;
        s = (const char *)evbuffer_pullup(in, (ev_ssize_t)(head + l2 + 2));
        if (header_size(s + head, l2, &size) < 0)
            return -1;
        head += l2 + 2;
    } else if (header_size(s, l1, &size) < 0) {
        return -1;
    }
    /* Wait for the whole block before pulling it up, so a large payload is
     * copied into one piece once, not at every read. */
    if (avail < head + size + 2)
        return 0;
    s = (const char *)evbuffer_pullup(in, (ev_ssize_t)(head + size + 2));
    *why = "data block not followed by CRLF";
    if (s[head + size] != '\r' || s[head + size + 1] != '\n')
        return -1;
    f->line = s;
    f->line_len = l1;
    f->line2 = wq_block ? s + l1 + 2 : NULL;
    f->line2_len = l2;
    f->data = s + head;
    f->data_len = size;
    f->total = head + size + 2;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The run: phases, connection events                                       */

/* The jobs a run has done: accepted adds for add, checked run results for
 * run, confirmed completes (deletes) for the others. */
static uint64_t
wb_run_done(const struct bench *b)
{
    if (b->opt.workload == WL_ADD)
        return b->created;
    if (b->opt.workload == WL_RUN)
        return b->runs_ok;
    return b->completes_ok;
}

/* End the run: stop the clock and leave the event loop. */
static void
wb_run_stop(struct bench *b)
{
    b->t_end_ns = wb_now_ns();
    b->phase = PH_DONE;
    event_base_loopbreak(b->base);
}

/* Does connection idx produce in the measured phase?  In cycle, run and
 * schedule the first half produce and the rest consume; add only produces,
 * lease-complete only consumes (after a prefill in which everyone adds). */
static bool
wb_run_is_producer(const struct bench *b, unsigned idx)
{
    enum wb_workload w = b->opt.workload;
    return w == WL_ADD || (w != WL_LEASE_COMPLETE && idx < b->opt.conns / 2);
}

/* Give every connection its role for the prefill or the measured phase;
 * producers are numbered, for the rotation of names. */
static void
bench_set_roles(struct bench *b, bool prefill)
{
    b->nprod = 0;
    for (unsigned i = 0; i < b->opt.conns; i++) {
        struct wb_conn *c = &b->conns[i];
        c->producer = prefill || wb_run_is_producer(b, i);
        if (c->producer) {
            c->prod_idx = b->nprod++;
            c->name = c->prod_idx % b->opt.names;
        }
    }
}

static void wb_run_check_idle(struct bench *b);

/* Enter the measured phase: roles for the workload, the clock from zero.
 * In lease-complete the jobs to drain are those the prefill created. */
static void
bench_start_measure(struct bench *b)
{
    bench_set_roles(b, false);
    b->phase = PH_MEASURE;
    if (b->opt.workload == WL_LEASE_COMPLETE)
        b->jobs_expected = b->created;
    b->t0_ns = b->last_ns = wb_now_ns();
    b->last_done = 0;
    wb_run_fill_all(b);
    wb_run_check_idle(b);
}

/* Enter an unmeasured phase in which every connection adds: the backlog
 * or the prefill of lease-complete. */
static void
bench_start_fill(struct bench *b, enum wb_phase phase)
{
    bench_set_roles(b, true);
    b->phase = phase;
    b->last_ns = wb_now_ns();
    b->last_done = 0;
    wb_run_fill_all(b);
    wb_run_check_idle(b);
}

/* The phase after the backlog (or after connecting, without one). */
static void
bench_after_backlog(struct bench *b)
{
    if (b->opt.workload == WL_LEASE_COMPLETE)
        bench_start_fill(b, PH_PREFILL);
    else
        bench_start_measure(b);
}

/* Every connection is up: begin (with the backlog, then the prefill for
 * lease-complete). */
static void
wb_run_start(struct bench *b)
{
    struct timeval tv = {BENCH_PROGRESS_MS / 1000, (BENCH_PROGRESS_MS % 1000) * 1000};
    if (b->progress)
        event_add(b->progress_ev, &tv);
    if (b->nbacklog > 0)
        bench_start_fill(b, PH_BACKLOG);
    else
        bench_after_backlog(b);
}

/* Nothing in flight: maybe someone can send again (budget freed by a
 * failure); if not, this phase is over. */
static void
wb_run_check_idle(struct bench *b)
{
    if (b->phase == PH_CONNECT || b->phase == PH_DONE || b->inflight != 0)
        return;
    wb_run_fill_all(b);
    if (b->inflight != 0)
        return;
    if (b->phase == PH_BACKLOG)
        bench_after_backlog(b);
    else if (b->phase == PH_PREFILL)
        bench_start_measure(b);
    else
        wb_run_stop(b);
}

/* c is connected and set up; the run starts when the last one is. */
static void
wb_conn_ready(struct wb_conn *c)
{
    c->ready = true;
    if (++c->b->nready == c->b->opt.conns)
        wb_run_start(c->b);
}

/* The connection broke: count what was in flight as lost and go on without
 * it.  Before set-up finished it is fatal: the server is not there. */
static void
wb_conn_fail(struct wb_conn *c, const char *why)
{
    struct bench *b = c->b;
    if (!c->ready) {
        fprintf(stderr, "workq-bench: cannot use %s: %s\n", b->addr, why);
        b->fatal = true;
        wb_run_stop(b);
        return;
    }
    wb_error(b, "conn %u: %s (%u requests lost)", c->idx, why, (unsigned)c->count);
    /* A lost add may or may not have created its job; either way this run
     * will not complete it.  Lost leases return their budget (wb_conn_pop), so
     * other consumers take over; jobs they had leased stay incomplete. */
    while (c->count > 0) {
        struct wb_req r = wb_conn_pop(c);
        if (op_is_produce((enum wb_op)r.op))
            wb_jobs_lost(b, &b->jobs[r.job]);
        if (op_is_measured((enum wb_op)r.op))
            b->errors++;
    }
    bufferevent_free(c->bev);
    c->bev = NULL;
    evbuffer_drain(c->out, evbuffer_get_length(c->out));
    c->closed = true;
    wb_run_check_idle(b);
}

/* Requests are written here, at the end of each callback, not by the
 * bufferevent: left to itself, a socket bufferevent adds its write event when
 * data is queued and deletes it once the data is gone, two epoll_ctl calls
 * and an extra loop pass per round trip.  Each connection queues into its own
 * evbuffer (the bufferevent's output may only be drained by the bufferevent)
 * and writes it at once; what the socket does not take goes to the
 * bufferevent, which then writes everything in order until it is drained. */
static void
bench_flush(struct bench *b)
{
    for (size_t i = 0; i < b->ndirty; i++) {
        struct wb_conn *c = b->dirty[i];
        c->dirty = false;
        if (c->closed || evbuffer_get_length(c->out) == 0)
            continue;
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0) {
            bufferevent_write_buffer(c->bev, c->out);
            continue;
        }
        if (evbuffer_write(c->out, bufferevent_getfd(c->bev)) < 0 && errno != EAGAIN &&
            errno != EWOULDBLOCK && errno != EINTR) {
            wb_conn_fail(c, strerror(errno));
            continue;
        }
        if (evbuffer_get_length(c->out) > 0) {
            bufferevent_write_buffer(c->bev, c->out);
            bufferevent_enable(c->bev, EV_WRITE);
        }
    }
    b->ndirty = 0;
}

/* The bufferevent wrote what the socket refused before: back to flushing. */
static void
wb_conn_write_cb(struct bufferevent *bev, void *arg)
{
    (void)arg;
    bufferevent_disable(bev, EV_WRITE);
}

/* One complete reply to request r: its latency if measured, then the
 * handler for its type; the last set-up reply makes the connection ready. */
static void
wb_conn_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f, uint64_t now)
{
    struct bench *b = c->b;
    if (b->phase == PH_MEASURE && op_is_measured((enum wb_op)r->op)) {
        uint64_t us = now > r->sent_ns ? (now - r->sent_ns) / 1000 : 0;
        wb_hist_record(&b->hist[r->op], us);
        wb_hist_record(&b->all, us);
        b->requests++;
    }
    reply_table[r->op](c, r, f);
    if (!c->ready && --c->setup_left == 0)
        wb_conn_ready(c);
}

/* Parse every complete reply in the input, oldest request first; a partial
 * one stays for the next read.  Then refill the pipeline and flush. */
static void
wb_conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct wb_conn *c = arg;
    struct bench *b = c->b;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint64_t now = wb_now_ns(); /* all replies read at once arrived at once */
    while (evbuffer_get_length(in) > 0) {
        struct wb_frame f;
        const char *why;
        if (c->count == 0) {
            wb_conn_fail(c, "reply to no request");
            bench_flush(b);
            return;
        }
        int rc = wb_frame_find(in, b->opt.proto, (enum wb_op)c->ring[c->head].op, &f, &why);
        if (rc == 0)
            break;
        if (rc < 0) {
            wb_conn_fail(c, why);
            bench_flush(b);
            return;
        }
        struct wb_req r = wb_conn_pop(c);
        wb_conn_reply(c, &r, &f, now);
        evbuffer_drain(in, f.total);
        if (b->phase == PH_DONE)
            return;
    }
    wb_run_fill(c);
    wb_run_check_idle(b);
    bench_flush(b);
}

/* beanstalkd connections select their tube and watch every name first. */
static void
wb_conn_setup(struct wb_conn *c)
{
    struct bench *b = c->b;
    c->setup_left = 0;
    if (b->opt.proto == WB_PROTO_BEANSTALKD && !wb_run_is_producer(b, c->idx)) {
        char line[64];
        for (uint32_t k = 0; k < b->opt.names; k++) {
            int n = snprintf(line, sizeof line, "watch %s\r\n", b->names[k]);
            wb_conn_send(c, line, (size_t)n);
            wb_conn_push(c, OP_WATCH, k);
            c->setup_left++;
        }
        wb_conn_send(c, "ignore default\r\n", 16);
        wb_conn_push(c, OP_WATCH, BENCH_JOB_NONE);
        c->setup_left++;
    }
    if (c->setup_left == 0)
        wb_conn_ready(c);
}

/* Connected (set TCP_NODELAY: requests are small and latency is measured),
 * or the connection broke. */
static void
wb_conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct wb_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        evutil_socket_t fd = bufferevent_getfd(bev);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        wb_conn_setup(c);
    } else if (what & BEV_EVENT_EOF) {
        wb_conn_fail(c, "server closed the connection");
    } else {
        wb_conn_fail(c, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    }
    bench_flush(c->b);
}

/* Start connecting c to the one address given; replies are read in chunks
 * of up to 256 KiB so a pipelined burst needs few callbacks. */
static void
wb_conn_open(struct bench *b, struct wb_conn *c)
{
    c->bev = bufferevent_socket_new(b->base, -1, BEV_OPT_CLOSE_ON_FREE);
    c->out = evbuffer_new();
    if (c->bev == NULL || c->out == NULL) {
        fprintf(stderr, "workq-bench: cannot create a connection\n");
        exit(1);
    }
    bufferevent_setcb(c->bev, wb_conn_read_cb, wb_conn_write_cb, wb_conn_event_cb, c);
    bufferevent_set_max_single_read(c->bev, 256 * 1024);
    bufferevent_enable(c->bev, EV_READ); /* EV_WRITE: see bench_flush */
    if (bufferevent_socket_connect(c->bev, b->ai->ai_addr, (int)b->ai->ai_addrlen) < 0) {
        fprintf(stderr, "workq-bench: cannot connect to %s\n", b->addr);
        exit(1);
    }
}

/* ------------------------------------------------------------------------ */
/* Timers and signals                                                       */

/* The progress line on a terminal: the rate over the last interval, not
 * the average, so stalls show. */
static void
wb_report_progress_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bench *b = arg;
    const char *label = wb_workload_names[b->opt.workload];
    uint64_t now = wb_now_ns(), done = wb_run_done(b);
    uint32_t of = b->opt.jobs;
    if (b->phase == PH_BACKLOG) {
        label = "backlog";
        done = b->backlog_created;
        of = b->nbacklog;
    } else if (b->phase == PH_PREFILL) {
        label = "prefill";
        done = b->created;
    }
    double dt = (double)(now - b->last_ns) / 1e9;
    double rate = dt > 0 ? (double)(done - b->last_done) / dt : 0;
    b->last_done = done;
    b->last_ns = now;
    char line[160];
    snprintf(line, sizeof line, "%s: %" PRIu64 "/%" PRIu32 " jobs, %.0f jobs/s, %" PRIu64 " errors",
             label, done, of, rate, b->errors);
    fprintf(stderr, "\r%-79s", line);
}

/* --timeout expired: report what was done and fail. */
static void
bench_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bench *b = arg;
    b->timed_out = true;
    wb_run_stop(b);
}

/* Ctrl-C: report what was done so far and fail. */
static void
bench_sigint_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bench *b = arg;
    b->interrupted = true;
    wb_run_stop(b);
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                  */

/* The request types a workload measures, in report order. */
static int
bench_report_ops(const struct bench *b, enum wb_op *ops)
{
    int n = 0;
    bool bs = b->opt.proto == WB_PROTO_BEANSTALKD;
    if (b->opt.workload != WL_LEASE_COMPLETE)
        ops[n++] = wb_run_produce_op(b);
    if (b->opt.workload != WL_ADD) {
        ops[n++] = bs ? OP_RESERVE : OP_LEASE;
        ops[n++] = bs ? OP_DELETE : OP_COMPLETE;
    }
    return n;
}

static const unsigned report_permyriads[] = {5000, 9000, 9900, 9990};
static const char *const report_pct_names[] = {"p50", "p90", "p99", "p99.9"};

/* Length of the measured phase: 0 if it never started (a --timeout or
 * Ctrl-C during connecting, the backlog or the prefill). */
static double
bench_seconds(const struct bench *b)
{
    if (b->t0_ns == 0 || b->t_end_ns <= b->t0_ns)
        return 0;
    return (double)(b->t_end_ns - b->t0_ns) / 1e9;
}

/* One row of the latency table, in milliseconds. */
static void
report_hist_line(const char *name, const struct wb_hist *h)
{
    printf("  %-10s %10" PRIu64, name, h->count);
    for (unsigned i = 0; i < BENCH_ARRAY_LEN(report_permyriads); i++)
        printf(" %9.3f", (double)wb_hist_percentile(h, report_permyriads[i]) / 1000.0);
    printf(" %9.3f\n", (double)h->max / 1000.0);
}

/* The default report, for people. */
static void
report_human(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    uint64_t done = wb_run_done(b);
    enum wb_op ops[3];
    int nops = bench_report_ops(b, ops);
    printf("== %s, %s at %s ==\n", wb_workload_names[b->opt.workload], wb_proto_names[b->opt.proto],
           b->addr);
    printf("connections %" PRIu32 " (%u producing), pipeline %" PRIu32 ", payload %" PRIu32
           " bytes, names %" PRIu32 "%s\n",
           b->opt.conns, b->nprod, b->opt.pipeline, b->opt.payload, b->opt.names,
           b->opt.priorities ? ", random priorities" : "");
    if (b->opt.backlog > 0)
        printf("%-12s%" PRIu32 " jobs per name at the lowest priority, %" PRIu64 " of %" PRIu32
               " added (not measured)\n",
               "backlog", b->opt.backlog, b->backlog_created, b->nbacklog);
    printf("%-12s%" PRIu64 " of %" PRIu32 " jobs in %.3f s\n",
           b->opt.workload == WL_ADD ? "added" : "completed", done, b->opt.jobs, secs);
    printf("%-12s%.0f jobs/s, %.0f requests/s\n", "throughput", secs > 0 ? (double)done / secs : 0,
           secs > 0 ? (double)b->requests / secs : 0);
    printf("%-12s%" PRIu64 "%s%s\n", "errors", b->errors, b->timed_out ? " (timed out)" : "",
           b->interrupted ? " (interrupted)" : "");
    if (incomplete > 0)
        printf("%-12s%" PRIu64 " jobs were accepted but not completed\n", "incomplete", incomplete);
    if (b->opt.workload != WL_ADD)
        printf("%-12s%" PRIu64 "\n", "empty waits", b->lease_timeouts);
    printf("latency (ms)      count       p50       p90       p99     p99.9       max\n");
    report_hist_line("all", &b->all);
    for (int i = 0; i < nops; i++)
        report_hist_line(wb_op_names[ops[i]], &b->hist[ops[i]]);
}

/* -q: one line. */
static void
report_quiet(const struct bench *b)
{
    double secs = bench_seconds(b);
    printf("%s: %.0f jobs/s, p50 %.3f ms, p99 %.3f ms, errors %" PRIu64 "\n",
           wb_workload_names[b->opt.workload], secs > 0 ? (double)wb_run_done(b) / secs : 0,
           (double)wb_hist_percentile(&b->all, 5000) / 1000.0,
           (double)wb_hist_percentile(&b->all, 9900) / 1000.0, b->errors);
}

/* --csv: a header and one line; latency columns in microseconds for all
 * measured requests, then per request type of the workload. */
static void
report_csv(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    enum wb_op ops[4] = {OP_COUNT};
    int nops = bench_report_ops(b, ops + 1) + 1;
    printf("workload,protocol,address,connections,pipeline,payload,names,priorities,backlog,"
           "backlog_added,jobs,done,errors,incomplete,timed_out,seconds,jobs_per_sec,"
           "requests_per_sec");
    for (int i = 0; i < nops; i++) {
        const char *p = i == 0 ? "all" : wb_op_names[ops[i]];
        printf(",%s_count,%s_p50_us,%s_p90_us,%s_p99_us,%s_p999_us,%s_max_us", p, p, p, p, p, p);
    }
    printf("\n%s,%s,%s,%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%d,%" PRIu32 ",%" PRIu64
           ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d,%.6f,%.1f,%.1f",
           wb_workload_names[b->opt.workload], wb_proto_names[b->opt.proto], b->addr, b->opt.conns,
           b->opt.pipeline, b->opt.payload, b->opt.names, b->opt.priorities, b->opt.backlog,
           b->backlog_created, b->opt.jobs, wb_run_done(b), b->errors, incomplete,
           b->timed_out || b->interrupted, secs, secs > 0 ? (double)wb_run_done(b) / secs : 0,
           secs > 0 ? (double)b->requests / secs : 0);
    for (int i = 0; i < nops; i++) {
        const struct wb_hist *h = i == 0 ? &b->all : &b->hist[ops[i]];
        printf(",%" PRIu64, h->count);
        for (unsigned k = 0; k < BENCH_ARRAY_LEN(report_permyriads); k++)
            printf(",%" PRIu64, wb_hist_percentile(h, report_permyriads[k]));
        printf(",%" PRIu64, h->max);
    }
    printf("\n");
}

/* One latency object of the JSON report, in microseconds. */
static void
report_json_hist(const char *name, const struct wb_hist *h, bool last)
{
    printf("\"%s\":{\"count\":%" PRIu64 ",\"mean\":%.1f", name, h->count,
           h->count > 0 ? (double)h->sum / (double)h->count : 0.0);
    for (unsigned k = 0; k < BENCH_ARRAY_LEN(report_permyriads); k++)
        printf(",\"%s\":%" PRIu64, report_pct_names[k],
               wb_hist_percentile(h, report_permyriads[k]));
    printf(",\"max\":%" PRIu64 "}%s", h->max, last ? "" : ",");
}

/* --json: one object on one line. */
static void
report_json(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    enum wb_op ops[3];
    int nops = bench_report_ops(b, ops);
    /* The address is host:port from the command line, with nothing to escape
     * in practice; names are ours. */
    printf(
        "{\"workload\":\"%s\",\"protocol\":\"%s\",\"address\":\"%s\",\"connections\":%" PRIu32
        ",\"pipeline\":%" PRIu32 ",\"payload\":%" PRIu32 ",\"names\":%" PRIu32
        ",\"priorities\":%s,\"backlog\":%" PRIu32 ",\"backlog_added\":%" PRIu64 ",\"jobs\":%" PRIu32
        ",\"done\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"incomplete\":%" PRIu64
        ",\"timed_out\":%s,\"interrupted\":%s,\"empty_waits\":%" PRIu64
        ",\"seconds\":%.6f,\"jobs_per_sec\":%.1f,\"requests_per_sec\":%.1f,\"latency_us\":{",
        wb_workload_names[b->opt.workload], wb_proto_names[b->opt.proto], b->addr, b->opt.conns,
        b->opt.pipeline, b->opt.payload, b->opt.names, b->opt.priorities ? "true" : "false",
        b->opt.backlog, b->backlog_created, b->opt.jobs, wb_run_done(b), b->errors, incomplete,
        b->timed_out ? "true" : "false", b->interrupted ? "true" : "false", b->lease_timeouts, secs,
        secs > 0 ? (double)wb_run_done(b) / secs : 0, secs > 0 ? (double)b->requests / secs : 0);
    report_json_hist("all", &b->all, nops == 0);
    for (int i = 0; i < nops; i++)
        report_json_hist(wb_op_names[ops[i]], &b->hist[ops[i]], i == nops - 1);
    printf("}}\n");
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

/* --help, and the text shown on a usage error. */
static void
opts_usage(FILE *out)
{
    fprintf(out,
            "Usage: workq-bench [OPTIONS]\n"
            "Load generator for workq-server (and beanstalkd, for comparison).\n"
            "\n"
            "  -h HOST             server host (default 127.0.0.1)\n"
            "  -p PORT             server port (default 9922; 11300 for beanstalkd)\n"
            "  --addr HOST:PORT    both at once ([::1]:PORT for IPv6)\n"
            "  -c N                connections (default 50)\n"
            "  -n N                jobs (default 100000)\n"
            "  -d BYTES            payload size (default 16)\n"
            "  -P N                requests in flight per connection (default 1)\n"
            "  -t WORKLOAD         add, lease-complete, cycle, run or schedule (default cycle)\n"
            "  --names K           spread jobs over K queue names (default 1)\n"
            "  --priorities        give jobs random priorities (0 to 1023)\n"
            "  --backlog N         first add N jobs to every name at the lowest priority, not\n"
            "                      measured, so the measured phase runs on a queue that\n"
            "                      holds them throughout (default 0; lease-complete and\n"
            "                      cycle only); they never expire: one fresh server per run\n"
            "  --ttr MS            job TTR (default 60000)\n"
            "  --ttl MS            TTL of the measured jobs (default 3600000)\n"
            "  --timeout SECONDS   give up after this long (default 300; 0: never), counted\n"
            "                      from the start: connecting, the backlog and the prefill\n"
            "                      count too\n"
            "  --protocol P        workq (default) or beanstalkd\n"
            "  --csv               a header line and one line of results\n"
            "  --json              one JSON object\n"
            "  -q                  quiet: one summary line, no progress\n"
            "  --help              this help\n"
            "\n"
            "Workloads:\n"
            "  add             add N jobs; measures adds\n"
            "  lease-complete  add N jobs (not measured), then drain them with lease + complete\n"
            "  cycle           half the connections add, half lease + complete; measures\n"
            "                  completed jobs (the steady state)\n"
            "  run             half the connections send run and wait for the result, half\n"
            "                  lease + complete (workq only)\n"
            "  schedule        like cycle, with schedule at times from 1 s ago to 100 ms ahead\n"
            "\n"
            "Exit status: 0 if every reply was as expected and every job done, 1 otherwise,\n"
            "2 on a usage error.\n");
}

/* Strict decimal in [min, max]: no sign, no spaces, no trailing junk. */
static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    struct wb_tok t = {s, strlen(s)};
    uint64_t v;
    if (wb_tok_u64(t, &v) < 0 || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Parse a numeric option or exit with a usage error. */
static uint64_t
opt_number(const char *name, const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v;
    if (parse_u64(arg, min, max, &v) < 0) {
        fprintf(stderr, "workq-bench: %s must be a number from %" PRIu64 " to %" PRIu64 "\n", name,
                min, max);
        exit(2);
    }
    return v;
}

/* HOST:PORT, [IPV6]:PORT; the strings point into arg, which is modified. */
static void
opt_addr(struct wb_opts *o, char *arg)
{
    char *colon = strrchr(arg, ':');
    if (colon == NULL || colon[1] == '\0' || colon == arg) {
        fprintf(stderr, "workq-bench: --addr wants HOST:PORT\n");
        exit(2);
    }
    *colon = '\0';
    o->port = colon + 1;
    if (arg[0] == '[' && colon[-1] == ']') {
        colon[-1] = '\0';
        arg++;
    }
    o->host = arg;
}

/* Index of arg in a name table, or exit with a usage error. */
static int
opt_lookup(const char *const *names, int n, const char *what, const char *arg)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], arg) == 0)
            return i;
    fprintf(stderr, "workq-bench: unknown %s: %s\n", what, arg);
    exit(2);
}

enum {
    WB_OPT_ADDR = 256,
    WB_OPT_NAMES,
    WB_OPT_PRIORITIES,
    WB_OPT_CSV,
    WB_OPT_JSON,
    WB_OPT_TIMEOUT,
    WB_OPT_PROTOCOL,
    WB_OPT_TTR,
    WB_OPT_TTL,
    WB_OPT_BACKLOG,
    WB_OPT_HELP
};

static void opt_finish(struct wb_opts *o);

/* Fill o from the command line; exits 2 on anything invalid, 0 after
 * --help. */
static void
wb_opts_parse(struct wb_opts *o, int argc, char **argv)
{
    static const struct option long_options[] = {
        {"addr", required_argument, NULL, WB_OPT_ADDR},
        {"names", required_argument, NULL, WB_OPT_NAMES},
        {"priorities", no_argument, NULL, WB_OPT_PRIORITIES},
        {"csv", no_argument, NULL, WB_OPT_CSV},
        {"json", no_argument, NULL, WB_OPT_JSON},
        {"timeout", required_argument, NULL, WB_OPT_TIMEOUT},
        {"protocol", required_argument, NULL, WB_OPT_PROTOCOL},
        {"ttr", required_argument, NULL, WB_OPT_TTR},
        {"ttl", required_argument, NULL, WB_OPT_TTL},
        {"backlog", required_argument, NULL, WB_OPT_BACKLOG},
        {"help", no_argument, NULL, WB_OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    *o = (struct wb_opts){.host = "127.0.0.1",
                          .workload = WL_CYCLE,
                          .proto = WB_PROTO_WORKQ,
                          .conns = 50,
                          .jobs = 100000,
                          .payload = 16,
                          .pipeline = 1,
                          .names = 1,
                          .ttr_ms = 60000,
                          .ttl_ms = 3600000,
                          .timeout_s = 300};
    int ch;
    while ((ch = getopt_long(argc, argv, "h:p:c:n:d:P:t:q", long_options, NULL)) != -1) {
        switch (ch) {
        case 'h':
            o->host = optarg;
            break;
        case 'p':
            opt_number("-p", optarg, 1, 65535);
            o->port = optarg;
            break;
        case 'c':
            o->conns = (uint32_t)opt_number("-c", optarg, 1, 10000);
            break;
        case 'n':
            o->jobs = (uint32_t)opt_number("-n", optarg, 1, 1000000000);
            break;
        case 'd':
            o->payload = (uint32_t)opt_number("-d", optarg, 0, BENCH_MAX_PAYLOAD);
            break;
        case 'P':
            o->pipeline = (uint32_t)opt_number("-P", optarg, 1, BENCH_MAX_PIPELINE);
            break;
        case 't':
            o->workload =
                (enum wb_workload)opt_lookup(wb_workload_names, WL_COUNT, "workload", optarg);
            break;
        case 'q':
            o->quiet = true;
            break;
        case WB_OPT_ADDR:
            opt_addr(o, optarg);
            break;
        case WB_OPT_NAMES:
            o->names = (uint32_t)opt_number("--names", optarg, 1, BENCH_MAX_NAMES);
            break;
        case WB_OPT_PRIORITIES:
            o->priorities = true;
            break;
        case WB_OPT_CSV:
            o->csv = true;
            break;
        case WB_OPT_JSON:
            o->json = true;
            break;
        case WB_OPT_TIMEOUT:
            o->timeout_s = (uint32_t)opt_number("--timeout", optarg, 0, 86400 * 365);
            break;
        case WB_OPT_PROTOCOL:
            o->proto =
                (enum wb_proto)opt_lookup(wb_proto_names, WB_PROTO_COUNT, "protocol", optarg);
            break;
        case WB_OPT_TTR:
            o->ttr_ms = (uint32_t)opt_number("--ttr", optarg, 1, 86400000);
            break;
        case WB_OPT_TTL:
            o->ttl_ms = opt_number("--ttl", optarg, 1, UINT64_MAX / 2);
            break;
        case WB_OPT_BACKLOG:
            o->backlog = (uint32_t)opt_number("--backlog", optarg, 0, BENCH_MAX_ALL_JOBS);
            break;
        case WB_OPT_HELP:
            opts_usage(stdout);
            exit(0);
        default:
            opts_usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "workq-bench: unexpected argument: %s\n", argv[optind]);
        exit(2);
    }
    opt_finish(o);
}

/* Defaults that depend on other options, and combinations that make no
 * sense; exits 2 on those. */
static void
opt_finish(struct wb_opts *o)
{
    if (o->port == NULL)
        o->port = o->proto == WB_PROTO_BEANSTALKD ? "11300" : "9922";
    if (o->csv && o->json) {
        fprintf(stderr, "workq-bench: --csv and --json exclude each other\n");
        exit(2);
    }
    if (o->conns < 2 && o->workload != WL_ADD && o->workload != WL_LEASE_COMPLETE) {
        fprintf(stderr, "workq-bench: %s needs at least 2 connections\n",
                wb_workload_names[o->workload]);
        exit(2);
    }
    if (o->proto == WB_PROTO_BEANSTALKD && o->workload == WL_RUN) {
        fprintf(stderr, "workq-bench: beanstalkd has no equivalent of run\n");
        exit(2);
    }
    /* add measures no lease, and run and schedule consumers cannot lease
     * only jobs whose creation was acknowledged: run jobs leave the queue
     * by themselves, scheduled ones become ready later. */
    if (o->backlog > 0 && o->workload != WL_LEASE_COMPLETE && o->workload != WL_CYCLE) {
        fprintf(stderr, "workq-bench: --backlog works only with -t lease-complete or -t cycle\n");
        exit(2);
    }
    if ((uint64_t)o->backlog * o->names + o->jobs > BENCH_MAX_ALL_JOBS) {
        fprintf(stderr, "workq-bench: -n plus --backlog times --names must be at most %u\n",
                BENCH_MAX_ALL_JOBS);
        exit(2);
    }
}

/* ------------------------------------------------------------------------ */
/* Set-up, main                                                             */

/* Resolve the address, make the names, the lease line, the jobs and the
 * connections; nothing is connected yet. */
static void
bench_init(struct bench *b)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(b->opt.host, b->opt.port, &hints, &b->ai);
    if (rc != 0) {
        fprintf(stderr, "workq-bench: %s: %s\n", b->opt.host, gai_strerror(rc));
        exit(1);
    }
    snprintf(b->addr, sizeof b->addr, strchr(b->opt.host, ':') ? "[%s]:%s" : "%s:%s", b->opt.host,
             b->opt.port);
    b->rng = wb_now_ns() ^ ((uint64_t)getpid() << 32);
    b->jobs_expected = b->opt.jobs;
    b->nbacklog = b->opt.backlog * b->opt.names; /* opt_finish keeps it in range */
    /* Names carry a tag of this run, so jobs left on the server by an earlier
     * run (an `add` run leaves all of them) are never leased by this one. */
    unsigned tag = (unsigned)(wb_rng_next(b) & 0xffffff);
    b->names = wb_xcalloc(b->opt.names, sizeof *b->names);
    size_t cap = 32;
    for (uint32_t k = 0; k < b->opt.names; k++) {
        snprintf(b->names[k], sizeof b->names[k], "bench.%06x.%" PRIu32, tag, k);
        cap += strlen(b->names[k]) + 1;
    }
    /* Consumers lease from every name at once. */
    b->lease_line = wb_xcalloc(1, cap);
    size_t len = (size_t)sprintf(b->lease_line, "lease");
    for (uint32_t k = 0; k < b->opt.names; k++)
        len += (size_t)sprintf(b->lease_line + len, " %s", b->names[k]);
    len += (size_t)sprintf(b->lease_line + len, " %d\r\n", BENCH_LEASE_WAIT_MS);
    b->lease_len = len;
    b->scratch_len = 512 + (size_t)b->opt.payload + 2;
    b->scratch = wb_xcalloc(1, b->scratch_len);
    wb_jobs_init(b);
    b->conns = wb_xcalloc(b->opt.conns, sizeof *b->conns);
    b->dirty_cap = b->opt.conns;
    b->dirty = wb_xcalloc(b->dirty_cap, sizeof *b->dirty);
    for (unsigned i = 0; i < b->opt.conns; i++) {
        b->conns[i].b = b;
        b->conns[i].idx = i;
        b->conns[i].tube = UINT32_MAX;
    }
}

/* Free everything, so valgrind can vouch for the rest. */
static void
bench_free(struct bench *b)
{
    for (unsigned i = 0; i < b->opt.conns; i++) {
        if (b->conns[i].bev != NULL)
            bufferevent_free(b->conns[i].bev);
        if (b->conns[i].out != NULL)
            evbuffer_free(b->conns[i].out);
        free(b->conns[i].ring);
    }
    for (size_t i = 0; i < b->nheld; i++)
        free(b->held[i].data);
    free(b->held);
    free(b->conns);
    free(b->dirty);
    free(b->jobs);
    free(b->tickets);
    free(b->starved);
    free(b->idmap);
    free(b->bidmap);
    free(b->names);
    free(b->lease_line);
    free(b->scratch);
    event_free(b->progress_ev);
    event_free(b->timeout_ev);
    event_free(b->sigint_ev);
    event_base_free(b->base);
    freeaddrinfo(b->ai);
    free(b);
}

/* Jobs that were accepted but neither done nor failed: a server that loses
 * jobs must not pass. */
static uint64_t
bench_incomplete(struct bench *b)
{
    if (b->timed_out || b->interrupted)
        return 0;
    uint64_t done = wb_run_done(b),
             incomplete = b->jobs_expected > done ? b->jobs_expected - done : 0;
    if (b->held_open > 0)
        wb_error(b, "%zu reserved payloads never matched a put", b->held_open);
    if (incomplete > 0)
        wb_error(b, "%" PRIu64 " jobs were accepted but never completed", incomplete);
    return incomplete;
}

int
main(int argc, char **argv)
{
    struct bench *b = wb_xcalloc(1, sizeof *b);
    wb_opts_parse(&b->opt, argc, argv);
    signal(SIGPIPE, SIG_IGN);
    b->progress = !b->opt.quiet && isatty(STDERR_FILENO);
    bench_init(b);
    b->base = event_base_new();
    if (b->base == NULL) {
        fprintf(stderr, "workq-bench: cannot create an event base\n");
        return 1;
    }
    b->progress_ev = event_new(b->base, -1, EV_PERSIST, wb_report_progress_cb, b);
    b->timeout_ev = evtimer_new(b->base, bench_timeout_cb, b);
    b->sigint_ev = evsignal_new(b->base, SIGINT, bench_sigint_cb, b);
    event_add(b->sigint_ev, NULL);
    if (b->opt.timeout_s > 0) {
        struct timeval tv = {(time_t)b->opt.timeout_s, 0};
        event_add(b->timeout_ev, &tv);
    }
    for (unsigned i = 0; i < b->opt.conns; i++)
        wb_conn_open(b, &b->conns[i]);
    event_base_dispatch(b->base);
    if (b->progress)
        fprintf(stderr, "\r%-79s\r", "");
    if (b->fatal) {
        bench_free(b);
        return 1;
    }
    if (b->timed_out)
        wb_error(b, "timed out after %" PRIu32 " s", b->opt.timeout_s);
    uint64_t incomplete = bench_incomplete(b);
    if (b->opt.csv)
        report_csv(b, incomplete);
    else if (b->opt.json)
        report_json(b, incomplete);
    else if (b->opt.quiet)
        report_quiet(b);
    else
        report_human(b, incomplete);
    int status = b->errors > 0 || incomplete > 0 || b->timed_out || b->interrupted ? 1 : 0;
    bench_free(b);
    return status;
}
