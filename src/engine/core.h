/* core.h - the job core: every job, queue and waiter, and every transition
 * of doc/protocol-reference.md section 3.  One instance per server, owned by the
 * event-loop thread.  Pure: it never reads a clock or touches a socket; each
 * call takes the server time in ms, and blocked clients are represented by
 * waiters whose done callback the core calls when their wait ends. */
#ifndef WQ_CORE_H
#define WQ_CORE_H

#include "lib/wq.h"
#include "store/cmdlog_codec.h"
#include "lib/hist.h"
#include "engine/job.h"
#include "lib/pool.h"
#include "engine/queue.h"
#include "lib/registry.h"
#include "lib/wheel.h"

enum core_status {
    CORE_OK,
    CORE_PARKED,  /* the caller's waiter will be called later */
    CORE_TIMEOUT, /* a wait of 0 found nothing */
    CORE_NOT_FOUND,
    CORE_DUPLICATE,  /* a job with that id exists */
    CORE_DUP_RESULT, /* the job has its result already */
    CORE_NOMEM,
    CORE_CANCELLED,  /* the job was cancelled (its worker learns it so) */
    CORE_STALE,      /* the lease asked for is not the job's current one */
    CORE_BAD_PREREQ, /* a prerequisite (add -after) does not exist */
};

enum waiter_kind {
    WAITER_LEASE,
    WAITER_RESULT,
    WAITER_RUN,
    WAITER_ALL,  /* a fan-in over several jobs (core_wait_all) */
    WAITER_PART, /* one job of a fan-in: no timer, not a client of its own */
};
enum waiter_outcome {
    WAITER_GOT,     /* lease: the job, now leased; result, run: the job, now done */
    WAITER_TIMEOUT, /* the wait-timeout passed */
    WAITER_GONE,    /* result: the job was deleted or expired */
};

struct core;
struct dep_work;
struct fjobs;
struct workers;
struct core_side_ops;
struct cmdlog_replay_ops;

/* Called once when a wait ends, after the waiter is freed; j is valid only
 * during the call, and c is given to read it with.  It must not call back
 * into the core. */
typedef void (*waiter_done_fn)(void *owner, enum waiter_outcome how, const struct core *c,
                               struct job *j);
/* Called once when a fan-in ends (GOT: every job has its result or is
 * gone; TIMEOUT: the time is up), with the ids it waited for; the caller
 * reads their results.  The same rules as waiter_done_fn. */
typedef void (*wait_all_fn)(void *owner, enum waiter_outcome how, const struct core *c,
                            const uint8_t (*ids)[JOBID_LEN], size_t n);

/* A blocked client: a parked lease, a result waiting for its job, or the
 * client of a run job waiting for it to be leased and then done. */
struct waiter {
    struct wheel_entry timer; /* the wait-timeout */
    uint64_t deadline;
    waiter_done_fn done;
    void *owner;  /* the caller's (its connection) */
    uint8_t kind; /* enum waiter_kind */
    /* WAITER_LEASE: one node per distinct name, and who leases (NULL:
     * an anonymous client) */
    struct worker *who;
    struct park_node *nodes;
    uint32_t nnodes;
    struct park_node one; /* storage when there is a single name */
    /* WAITER_RESULT, WAITER_RUN, WAITER_PART: the job's list of waiters */
    struct job *job;
    struct hlist_node link; /* in the job_ext's waiters */
    /* WAITER_ALL: its ids, and its parts (NULL once a part is done) */
    uint8_t (*ids)[JOBID_LEN];
    struct waiter **parts;
    uint32_t nids, pending;
    wait_all_fn all_done;
    /* WAITER_PART: its fan-in, and its place in the fan-in's parts */
    struct waiter *group;
    uint32_t part_ix;
};

/* The waiter whose link (in a job_ext's waiters) is n. */
static inline struct waiter *
core_waiter_of(struct hlist_node *n)
{
    return WQ_CONTAINER_OF(n, struct waiter, link);
}

struct core_stats {
    uint64_t ready, scheduled, leased, completed, failed; /* jobs in each */
    uint64_t waiting;                                     /* for prerequisites */
    uint64_t evicted; /* jobs expired by TTL before their result */
    uint64_t parked;  /* waiting clients: leases and results */
};

/* Counters of transitions since start (replay's transitions are not
 * counted: the server clears them after replay), for the metrics. */
struct core_totals {
    uint64_t added;         /* jobs created: add, schedule, run, broadcast copies */
    uint64_t leased;        /* leases, every attempt */
    uint64_t completed;     /* jobs that reached COMPLETED */
    uint64_t failed;        /* jobs that reached FAILED (for good) */
    uint64_t retried;       /* back to the queue after a fail or a TTR end */
    uint64_t ttr_expired;   /* leases whose TTR ran out */
    uint64_t evicted;       /* jobs expired by TTL before their result */
    struct hist lease_wait; /* due time (created or scheduled) to first lease */
    struct hist result;     /* due time to result (completed or failed) */
};

/* Called with the record of every state change, before the change is made
 * (the command log appends it).  Run jobs are never logged. */
typedef void (*core_record_fn)(void *arg, const struct cmdlog_rec *r);

struct core {
    core_record_fn record; /* NULL: nothing is logged (and during replay) */
    void *record_arg;
    struct registry *jobs; /* id -> job */
    struct registry *exts; /* id -> job_ext, for jobs with JOB_F_EXT */
    struct queue_table queues;
    struct workers *workers; /* workers.h: who identified themselves */
    /* The side store (core_attach_side), or NULL: the core reaches it only
     * through side_ops. */
    const struct core_side_ops *side_ops;
    void *side;
    /* The Faktory front-end's jobs, which are the side store: set by
     * fjobs_new for its own files (fjobs.h); the core never reads it. */
    struct fjobs *fjobs;
    struct registry *targets; /* core_target.c: targeted queues by base and worker */
    struct wheel wheel;       /* jobs' deadlines */
    struct wheel wait_wheel;  /* waiters' timeouts */
    bool firing;              /* the job wheel is firing: see core_make_ready */
    struct dep_work *deps;    /* dependents to release or fail (core_deps.c) */
    bool deps_busy;           /* they are being worked through */
    struct queue *dispatch;   /* queues with jobs made ready for parked leasers */
    struct pool job_pool;
    struct pool ext_pool;
    struct pool waiter_pool;
    uint64_t next_seq;
    uint64_t lease_stamp;
    uint64_t rng;
    uint64_t now_ms;    /* the time of the last core_advance */
    uint64_t bytes;     /* held by jobs, as core_job_bytes counts (queues: queues.bytes) */
    uint64_t io_bytes;  /* held for clients: input being parsed, unsent replies (the server's) */
    uint64_t max_bytes; /* refuse new jobs beyond this; 0: no limit */
    struct core_stats stats;
    struct core_totals totals;
};

/* What add and schedule ask for; the values are already validated. */
struct job_spec {
    uint8_t id[JOBID_LEN];
    struct wq_str name;
    uint32_t ttr;
    uint64_t ttl;
    int32_t priority;
    uint8_t max_attempts;
    uint8_t max_fails;
    bool timed;
    int64_t time_ms;  /* Unix ms, when timed */
    uint32_t time_ns; /* and the nanoseconds below that ms */
    const char *payload;
    size_t payload_len;
    int64_t created_ms;                /* Unix ms; 0 means now (replay passes the original) */
    const uint8_t (*after)[JOBID_LEN]; /* prerequisites (ours), nafter of them */
    size_t nafter;
    bool broadcast; /* ours: a copy for every named worker present on the name */
};

#define CORE_MAX_AFTER 100 /* prerequisites of one job */
/* The result of a job failed for its prerequisite (doc/protocol.md). */
#define CORE_PREREQ_FAILED "prerequisite %s failed"
#define CORE_PREREQ_GONE   "prerequisite %s is gone"

/* What a job with a payload of payload_len bytes holds: the payload, the
 * job struct, and its share of the heap and the registry (a 16-byte heap
 * item and an 8-byte slot at a load of 1/2).  A struct job_ext adds
 * CORE_EXT_BYTES, a result its length. */
#define CORE_JOB_INDEX_BYTES 32
#define CORE_EXT_BYTES       (sizeof(struct job_ext) + 16)
static inline uint64_t
core_job_bytes(size_t payload_len)
{
    return sizeof(struct job) + CORE_JOB_INDEX_BYTES + payload_len;
}

/* What jobs, queues and the clients' buffers hold, as -max-memory counts
 * it. */
static inline uint64_t
core_memory(const struct core *c)
{
    return c->bytes + c->queues.bytes + c->io_bytes;
}

/* Would n more bytes take the server past -max-memory? */
static inline bool
core_over_limit(const struct core *c, uint64_t n)
{
    return c->max_bytes > 0 && core_memory(c) + n > c->max_bytes;
}

/* Would a new job with this payload (and a struct job_ext, with_ext: a
 * scheduled or run job) take the core past max_bytes?  Add and run check
 * it (and answer CORE_NOMEM); replay never does, since the log's jobs were
 * acknowledged. */
bool core_over_memory(const struct core *c, size_t payload_len, bool with_ext);

/* A new empty core at time now_ms (aborts if memory is exhausted). */
struct core *core_new(uint64_t now_ms);
/* Free every job and queue, and the side store; every waiter must have
 * been cancelled. */
void core_free(struct core *c);

/* What a side store holds, for inspect and the log lines of replay. */
struct core_side_counts {
    uint64_t jobs;   /* in any state */
    uint64_t queues; /* its own queues */
    /* its jobs by state */
    uint64_t scheduled, enqueued, working, retry, dead;
};

/* A side store: jobs kept beside the core's, in their own namespace, on
 * the core's clock and command log (today the Faktory front-end's,
 * fjobs.h).  Its owner creates it at the core's time and attaches it; the
 * core then runs its timers in core_advance (after the core's own of the
 * same millisecond), hands it the log records the core has no use for at
 * replay, clears its totals with the core's, and frees it with the core.
 * Every callback gets the side pointer given to core_attach_side. */
struct core_side_ops {
    /* Run what is due by now_ms. */
    void (*advance)(void *side, uint64_t now_ms);
    /* When advance next has work, WHEEL_NEVER if never. */
    uint64_t (*next_event)(const void *side);
    /* Apply record r of the command log as of now_ms (see core_replay):
     * it ignores the records that are not its own. */
    void (*replay)(void *side, const struct cmdlog_rec *r, uint64_t now_ms);
    /* Clear its counters since start (see core_clear_totals). */
    void (*clear_totals)(void *side);
    /* What it holds now. */
    void (*counts)(const void *side, struct core_side_counts *out);
    /* Free it and everything it holds (core_free). */
    void (*free)(void *side);
};

/* Attach side store side to c, which has none yet. */
void core_attach_side(struct core *c, const struct core_side_ops *ops, void *side);
/* What c's side store holds (all zero without one). */
void core_side_counts(const struct core *c, struct core_side_counts *out);

/* Server ms at which a job with base time base_ms and this ttl expires
 * (saturating: 0 if already in the past, UINT64_MAX at most). */
uint64_t core_expiry(int64_t base_ms, uint64_t ttl);

/* When j expires: base + ttl, UINT64_MAX for a run job. */
uint64_t core_job_expiry(const struct job *j);
/* What j's timer is armed for: the nearest of expiry, TTR end (LEASED) and
 * scheduled time (in the scheduled heap). */
uint64_t core_job_deadline(const struct core *c, const struct job *j);

static inline struct queue *
core_job_queue(const struct core *c, const struct job *j)
{
    return queue_table_at(&c->queues, j->queue_ix);
}

/* j's struct job_ext, NULL if it has none (see JOB_F_EXT). */
struct job_ext *core_job_ext(const struct core *c, const struct job *j);
/* j's result (NULL and 0 when it has none). */
char *core_job_result(const struct core *c, const struct job *j, uint32_t *len);
/* When j was created, Unix ms. */
int64_t core_job_created(const struct core *c, const struct job *j);

/* Is j the original of a broadcast (add -target=all)? */
bool core_job_is_broadcast(const struct core *c, const struct job *j);
/* The ids of broadcast original j's copies (NULL, 0 for any other job). */
const uint8_t (*core_job_copies(const struct core *c, const struct job *j, size_t *n))[JOBID_LEN];

/* Create a job: CORE_OK, CORE_DUPLICATE, CORE_BAD_PREREQ (s->after names
 * an unknown job) or CORE_NOMEM (nothing changed).  With prerequisites
 * the job is WAITING until each has COMPLETED; one that fails for good,
 * is deleted or expires fails it (and its own dependents) at once.  With
 * s->broadcast the job itself is never leased: a copy (id derived from its
 * id and the worker's name) goes to each named worker present on its name,
 * and the original waits (WAITING) until each copy has its result or is
 * gone, then COMPLETED with no result of its own. */
enum core_status core_add(struct core *c, const struct job_spec *s, uint64_t now_ms);

/* Queue a run job (no TTL, one attempt, no retry) and park the caller on it:
 * CORE_PARKED, then done(owner) once with the job's result (GOT), TIMEOUT
 * (not leased within wait_ms, or its TTR ran out) or GONE (deleted).  With
 * wait_ms 0, only a leaser parked right now can take it: else CORE_TIMEOUT
 * and nothing is left behind.  CORE_DUPLICATE or CORE_NOMEM change nothing.
 * The job is removed once its client is answered or cancelled. */
enum core_status core_run(struct core *c, const struct job_spec *s, uint64_t wait_ms,
                          uint64_t now_ms, waiter_done_fn done, void *owner,
                          struct waiter **parked);

/* Lease the first job of one of names[0..n) that has a ready job (picked at
 * random among them): CORE_OK with *out leased.  Otherwise CORE_TIMEOUT if
 * wait_ms is 0, else CORE_PARKED with *parked set up to call done(owner).
 * Names must be valid.  who (NULL: anonymous) is the named worker that
 * leases: the job counts as held by it while LEASED. */
enum core_status core_lease(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms,
                            uint64_t now_ms, struct worker *who, waiter_done_fn done, void *owner,
                            struct job **out, struct waiter **parked);

/* Store a result: success true for complete, false for fail (which may
 * retry).  With attempt > 0 (a fencing token), only while the job is
 * LEASED in that attempt.  CORE_OK, CORE_NOT_FOUND, CORE_CANCELLED,
 * CORE_STALE (attempt given, not the current lease), CORE_DUP_RESULT or
 * CORE_NOMEM. */
enum core_status core_finish(struct core *c, const uint8_t id[JOBID_LEN], bool success,
                             const char *data, size_t len, uint32_t attempt, uint64_t now_ms);

/* Restart a LEASED job's TTR from now: for ttr_ms (0: the job's TTR) this
 * once.  With attempt > 0, only in that attempt.  CORE_OK, CORE_NOT_FOUND
 * (no such job, or not LEASED), CORE_CANCELLED, CORE_STALE. */
enum core_status core_touch(struct core *c, const uint8_t id[JOBID_LEN], uint32_t ttr_ms,
                            uint32_t attempt, uint64_t now_ms);

/* Stop a job that has no result yet, whatever its state: it fails with
 * the result "cancelled" (its result waiters and run client are answered
 * so) and, if LEASED, its worker's next touch, complete or fail is told
 * CORE_CANCELLED.  CORE_OK, CORE_NOT_FOUND, CORE_DUP_RESULT (it has its
 * result already). */
enum core_status core_cancel_job(struct core *c, const uint8_t id[JOBID_LEN], uint64_t now_ms);
#define CORE_CANCELLED_RESULT "cancelled"

/* Is j what s would create (name, payload, TTR, TTL, priority, limits,
 * scheduled time)?  For an idempotent add. */
bool core_same_job(const struct core *c, const struct job *j, const struct job_spec *s);

/* Remove a job in any state: CORE_OK or CORE_NOT_FOUND. */
enum core_status core_delete(struct core *c, const uint8_t id[JOBID_LEN]);

/* The result of a job: CORE_OK with *out done, CORE_NOT_FOUND, CORE_TIMEOUT
 * (wait 0), or CORE_PARKED with *parked set up as for core_lease. */
enum core_status core_result(struct core *c, const uint8_t id[JOBID_LEN], uint64_t wait_ms,
                             uint64_t now_ms, waiter_done_fn done, void *owner, struct job **out,
                             struct waiter **parked);

/* Fan-in: wait until every job of ids[0..n) has its result.  CORE_OK when
 * they all have one already; CORE_NOT_FOUND if one is unknown; with
 * wait_ms 0, CORE_TIMEOUT when some have none; else CORE_PARKED, and
 * done(owner) is called once: GOT when the last has its result (or is
 * deleted or expired), TIMEOUT after wait_ms. */
enum core_status core_wait_all(struct core *c, const uint8_t (*ids)[JOBID_LEN], size_t n,
                               uint64_t wait_ms, uint64_t now_ms, wait_all_fn done, void *owner,
                               struct waiter **parked);

/* Withdraw a waiter whose client left; its done callback is not called.
 * A run job goes with its waiter. */
void core_cancel(struct core *c, struct waiter *w);

/* The job with this id, or NULL. */
struct job *core_find(const struct core *c, const uint8_t id[JOBID_LEN]);

/* Apply a record read back from the command log at start-up, as of now_ms:
 * jobs keep their original expiry (those already past it go at the next
 * core_advance) and a replayed lease gets a fresh TTR.  Records of codes
 * the core does not know go to its side store.  Records that do not fit
 * the state (a damaged or foreign log) are ignored.  Nothing is logged
 * meanwhile. */
void core_replay(struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);
/* The command log's replay into a core (store/cmdlog_files.h): with a
 * struct core * as arg, core_replay for each record, and the jobs of the
 * core and of its side store for the log lines.  For instance
 * cmdlog_replay(l, &core_replay_ops, c, now_ms). */
extern const struct cmdlog_replay_ops core_replay_ops;

/* Run every deadline due by now_ms (TTR, TTL, scheduled time, waits, and
 * the side store's). */
void core_advance(struct core *c, uint64_t now_ms);
/* When core_advance next has work, WHEEL_NEVER if never. */
uint64_t core_next_event(const struct core *c);

static inline uint64_t
core_job_count(const struct core *c)
{
    return registry_count(c->jobs);
}

/* Clear c->totals and the side store's (after replay, so that they count
 * from the start). */
void core_clear_totals(struct core *c);

/* The active queue with this name, or NULL. */
struct queue *core_queue(const struct core *c, const char *name, size_t len);

#endif /* WQ_CORE_H */
