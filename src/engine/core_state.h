/* core_state.h - the job core's state: its statuses, its waiters, its
 * figures, struct core itself, a job's specification, and how its memory
 * is counted.  The types every file of the engine reads and front-ends
 * see through core.h; the core's functions are declared in core.h, the
 * engine's shared ones in core_internal.h. */
#ifndef WQ_CORE_STATE_H
#define WQ_CORE_STATE_H

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
    CORE_NOT_DEAD,   /* revive: the job is not in the dead set */
};

/* How a fail that leaves the job retries left brings it back
 * (job_spec.backoff). */
enum core_backoff {
    CORE_BACKOFF_NONE,    /* ready again at once (Workq's way) */
    CORE_BACKOFF_FAKTORY, /* after Faktory's backoff (lib/backoff.h) */
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
struct workers;
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
    void *owner;   /* the caller's (its connection) */
    uint8_t kind;  /* enum waiter_kind */
    uint8_t space; /* of its queues or its job */
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

/* The dead set: jobs that asked for it (job_spec.dead) and failed for
 * good, oldest death first, each kept until ttl_ms after its death (or its
 * own TTL) and at most max of them (the oldest go first). */
struct core_dead {
    struct list jobs; /* struct job_more's dead_link */
    uint64_t count;
    uint64_t ttl_ms;
    uint64_t max;
};

#define CORE_DEFAULT_DEAD_TTL_MS  (180ull * 24 * 3600 * 1000)
#define CORE_DEFAULT_DEAD_MAX     10000u
#define CORE_DEFAULT_BACKOFF_UNIT 1000u

struct core_stats {
    uint64_t ready, scheduled, leased, completed, failed; /* jobs in each */
    uint64_t waiting;                                     /* for prerequisites */
    uint64_t evicted;  /* jobs expired by TTL before their result */
    uint64_t parked;   /* waiting clients: leases and results */
    uint64_t retrying; /* of the scheduled: waiting out a retry's time (retry_at) */
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

/* One key space (job.h): its jobs, their job_exts, its queues, its dead
 * set and its figures. */
struct core_space {
    struct registry *jobs; /* key -> job */
    struct registry *exts; /* key -> job_ext, for jobs with JOB_F_EXT */
    struct queue_table queues;
    struct core_dead dead;
    struct core_stats stats;
    struct core_totals totals;
    bool open; /* JOB_SPACE_IDS always, another once core_space_open gave it */
    /* the owner of another space, its ways (CORE_SPACE_*) and the record
     * codes replay hands it (core_space_open) */
    const struct core_space_ops *ops;
    void *arg;
    unsigned flags;
    uint8_t code_lo, code_hi;
    const char *label;
};

/* The ways of a space other than the ids' (core_space_open). */
#define CORE_SPACE_ORDERED 0x1 /* a lease takes from the first listed queue with a ready job */
#define CORE_SPACE_FIFO    0x2 /* a job entering its queue goes last: first in, first out */

/* What the owner of a key space does for the core: the transitions the
 * core leaves to it, and its own records at replay (the core logs nothing
 * of another space's jobs).  Each callback gets the owner's arg; none may
 * park or cancel a waiter. */
struct core_space_ops {
    /* j's TTR ran out while LEASED: before returning the owner moves it
     * (core_job_retry_at, core_job_kill, core_delete_job). */
    void (*ttr_expired)(void *arg, struct core *c, struct job *j);
    /* j leaves the dead set by its bounds (aged: its time there is up;
     * else the set is over its count) and is destroyed after the call. */
    void (*dead_gone)(void *arg, struct core *c, struct job *j, bool aged);
    /* j entered its queue when its time came (retry: a retry's time, else
     * its scheduled time). */
    void (*due)(void *arg, struct core *c, struct job *j, bool retry);
    /* j was leased (the owner logs it): by a lease of the space, at once
     * or parked, or by core_job_take. */
    void (*leased)(void *arg, struct core *c, const struct job *j);
    /* Clear the owner's counters since start (core_clear_totals). */
    void (*clear_totals)(void *arg);
    /* A record of the codes the space was opened for, read back at start
     * as of now_ms. */
    void (*replay)(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);
};

/* Called with the record of every state change, before the change is made
 * (the command log appends it).  Run jobs are never logged. */
typedef void (*core_record_fn)(void *arg, const struct cmdlog_rec *r);

struct core {
    core_record_fn record; /* NULL: nothing is logged (and during replay) */
    void *record_arg;
    struct core_space space[JOB_SPACES];
    struct workers *workers;  /* workers.h: who identified themselves */
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
    uint64_t now_ms;     /* the time of the last core_advance */
    uint64_t bytes;      /* held by jobs, as core_job_bytes counts (queues: their tables') */
    uint64_t io_bytes;   /* held for clients: input being parsed, unsent replies (the server's) */
    uint64_t data_bytes; /* held by a front-end's plain data (Hero's keys) */
    uint64_t max_bytes;  /* refuse new jobs beyond this; 0: no limit */
    uint64_t backoff_unit_ms; /* a second of the backoff (tests shorten it) */
};

/* What add and schedule ask for; the values are already validated. */
struct job_spec {
    uint8_t id[JOBID_LEN];
    /* in a space other than JOB_SPACE_IDS (key.len > 0): its key, and id
     * is not read */
    struct job_key key;
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
    bool broadcast;  /* ours: a copy for every named worker present on the name */
    uint8_t backoff; /* enum core_backoff */
    bool dead;       /* out of retries, it enters the dead set */
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

/* What jobs, queues, a front-end's plain data and the clients' buffers
 * hold, as -max-memory counts it. */
static inline uint64_t
core_memory(const struct core *c)
{
    uint64_t queues = 0;
    for (size_t i = 0; i < JOB_SPACES; i++)
        queues += c->space[i].queues.bytes;
    return c->bytes + queues + c->io_bytes + c->data_bytes;
}

/* j's key space. */
static inline struct core_space *
core_space_of(const struct core *c, const struct job *j)
{
    return (struct core_space *)&c->space[job_space(j)];
}

/* The space of 16-byte ids, Workq's. */
static inline struct core_space *
core_ids(const struct core *c)
{
    return (struct core_space *)&c->space[JOB_SPACE_IDS];
}

/* Would n more bytes take the server past -max-memory? */
static inline bool
core_over_limit(const struct core *c, uint64_t n)
{
    return c->max_bytes > 0 && core_memory(c) + n > c->max_bytes;
}

#endif /* WQ_CORE_STATE_H */
