/* fjobs.h - the Faktory front-end's jobs, the core's side store
 * (core_side_ops): jobs named by string jids in their own namespace, in
 * their own queues, with Faktory's states (scheduled, enqueued, working,
 * retries, dead).  The store keeps a job's text (its JSON, which it never
 * reads), its queue, priority and reservation time, and moves it between
 * states and sets on commands and on time; what a failure does to the
 * text and where the job goes next is the front-end's decision
 * (fwp_job.c), given back through fjobs_retry, fjobs_kill and
 * fjobs_discard.  It shares the core's clock, memory limit and command
 * log: every change is recorded (codes 16 to 24 of cmdlog_codec.h) before
 * it is made, and the core advances its timers and hands it its records
 * at replay.  Pure like the core: times are given. */
#ifndef WQ_FJOBS_H
#define WQ_FJOBS_H

#include "lib/wq.h"
#include "engine/core.h"
#include "lib/heap.h"
#include "lib/list.h"

#define FJOB_MAX_JID      255u
#define FJOB_MAX_QUEUE    255u
#define FJOB_MAX_FETCH    64u /* queues one FETCH may name */
#define FJOB_PRIORITY_MIN 1
#define FJOB_PRIORITY_MAX 9

enum fjob_state {
    FJOB_SCHEDULED, /* waiting for its `at` */
    FJOB_ENQUEUED,  /* in its queue */
    FJOB_WORKING,   /* fetched, reserved until due_ms */
    FJOB_RETRY,     /* failed, enqueued again at due_ms */
    FJOB_DEAD,      /* out of retries, dropped at due_ms */
    FJOB_STATE_COUNT
};

/* The sets of jobs waiting for a time, as MUTATE names them. */
enum fjob_set { FSET_SCHEDULED, FSET_RETRIES, FSET_DEAD, FSET_COUNT };

struct fqueue;

struct fjob {
    struct wheel_entry timer; /* armed for due_ms unless enqueued */
    uint64_t due_ms;          /* see enum fjob_state */
    uint64_t enqueued_ms;     /* Unix ms it last entered its queue */
    uint64_t seq;             /* arrival order in its queue or set */
    char *text;               /* the job as JSON, without enqueued_at (payload.h) */
    struct fqueue *queue;
    uint32_t text_len;
    uint32_t heap_index; /* in its queue's ready heap or its set */
    uint32_t reserve_s;  /* reserve_for */
    uint8_t priority;
    uint8_t state; /* enum fjob_state */
    uint16_t jid_len;
    char jid[]; /* NUL-terminated */
};

struct fqueue {
    struct heap ready;       /* enqueued jobs: priority, then arrival */
    struct list parked_fifo; /* struct fpark of FETCHes waiting */
    uint64_t refs;           /* its jobs (any state) and parked FETCHes */
    uint64_t mark;           /* scratch stamp for de-duplicating a FETCH's names */
    bool paused;
    uint8_t name_len;
    char name[]; /* NUL-terminated */
};

enum fetch_outcome { FETCH_GOT, FETCH_TIMEOUT };
/* Called once when a parked FETCH ends, after its waiter is freed; j (the
 * job, now working, for FETCH_GOT) is valid during the call.  It must not
 * call back into the core. */
typedef void (*fetch_done_fn)(void *owner, enum fetch_outcome how, const struct fjob *j);

struct fpark {
    struct list link; /* in the queue's parked FIFO */
    struct fwaiter *waiter;
    struct fqueue *queue;
};

/* A parked FETCH: one node per distinct queue it named. */
struct fwaiter {
    struct wheel_entry timer;
    uint64_t deadline;
    fetch_done_fn done;
    void *owner;
    uint32_t n;
    struct fpark nodes[];
};

/* The front-end's decision when a reservation runs out: it must call
 * fjobs_retry, fjobs_kill or fjobs_discard on j (which is still working). */
typedef void (*fjobs_expired_fn)(void *arg, struct core *c, struct fjob *j);

struct fjobs_stats {
    uint64_t count[FJOB_STATE_COUNT];
    uint64_t processed; /* acknowledged or failed since start (as Faktory counts) */
    uint64_t failures;  /* failed or expired since start */
    /* since start, not counting replay (the metrics) */
    uint64_t pushed;  /* PUSH, PUSHB's jobs */
    uint64_t fetched; /* jobs handed to a FETCH */
    uint64_t acked;   /* ACK */
    /* what time did since start (INFO's tasks) */
    uint64_t expired;       /* reservations run out */
    uint64_t due_scheduled; /* scheduled jobs that entered their queue */
    uint64_t due_retries;   /* retried jobs that entered their queue */
    uint64_t dead_expired;  /* dead jobs dropped at their end */
};

struct fjobs {
    struct core *core;       /* whose side store it is */
    struct registry *jobs;   /* jid -> fjob */
    struct registry *queues; /* name -> fqueue */
    struct heap sets[FSET_COUNT];
    struct wheel wheel; /* jobs' due times */
    struct wheel waits; /* FETCHes' timeouts */
    uint64_t next_seq;
    uint64_t mark;
    uint64_t dead_ttl_ms;
    uint64_t dead_max;
    fjobs_expired_fn expired;
    void *expired_arg;
    struct fjobs_stats stats;
};

#define FJOBS_DEFAULT_DEAD_TTL_MS (180ull * 24 * 3600 * 1000)
#define FJOBS_DEFAULT_DEAD_MAX    10000u

/* What PUSH asks for; validated by the front-end. */
struct fjob_spec {
    struct wq_str jid;
    struct wq_str queue;
    uint8_t priority;
    uint32_t reserve_s;
    int64_t at_ms; /* Unix ms; 0: now */
    const char *text;
    size_t text_len;
};

/* Create c->fjobs at c's time now_ms and attach it to c as its side store
 * (core_attach_side): from then on c runs its timers, replays its records
 * and frees it (core_free).  Whoever sets up the core calls it, whether or
 * not Faktory is served: a log may hold Faktory records. */
struct fjobs *fjobs_new(struct core *c, uint64_t now_ms);

/* Who decides about an expired reservation (NULL: the job is retried
 * at once, its text unchanged). */
void fjobs_set_expired(struct core *c, fjobs_expired_fn fn, void *arg);
/* The dead set's bounds: how long a job stays, how many stay. */
void fjobs_set_dead_limits(struct core *c, uint64_t ttl_ms, uint64_t max);

/* Bytes a job with this jid and text holds. */
uint64_t fjobs_job_bytes(size_t jid_len, size_t text_len);

/* A new job: CORE_OK, CORE_DUPLICATE (the jid is known) or CORE_NOMEM. */
enum core_status fjobs_push(struct core *c, const struct fjob_spec *s, uint64_t now_ms);

/* The first job of the first of names[0..n) (distinct or not; paused
 * queues skipped) that has one: CORE_OK with *out working.  Otherwise
 * CORE_TIMEOUT if wait_ms is 0, else CORE_PARKED with *parked set up to
 * call done(owner) once. */
enum core_status fjobs_fetch(struct core *c, const struct wq_str *names, size_t n, uint64_t wait_ms,
                             uint64_t now_ms, fetch_done_fn done, void *owner, struct fjob **out,
                             struct fwaiter **parked);
/* Withdraw a parked FETCH whose client left; done is not called. */
void fjobs_cancel(struct core *c, struct fwaiter *w);

/* The job with this jid, or NULL. */
struct fjob *fjobs_find(const struct core *c, const char *jid, size_t len);

/* The job a FETCH of the queue named name would take next (the first of
 * its highest priority), paused or not; NULL if it has none. */
const struct fjob *fjobs_queue_head(const struct core *c, struct wq_str name);

/* A working job is done: it goes (CORE_OK); CORE_NOT_FOUND if no working
 * job has this jid. */
enum core_status fjobs_ack(struct core *c, const char *jid, size_t len);

/* j (working, or in a set) goes to the retries set until at_ms, with
 * text as its new text.  Counts a failure when it was working. */
void fjobs_retry(struct core *c, struct fjob *j, const char *text, size_t len, uint64_t at_ms);
/* j goes to the dead set (text NULL: keeps its text); the oldest dead jobs
 * beyond the bound go. */
void fjobs_kill(struct core *c, struct fjob *j, const char *text, size_t len);
/* j goes, whatever its state. */
void fjobs_discard(struct core *c, struct fjob *j);
/* j (in a set) goes back to its queue now. */
void fjobs_requeue(struct core *c, struct fjob *j);

/* Pause or resume the queue named name (created if need be): a paused
 * queue keeps its jobs but FETCH skips it. */
void fjobs_pause(struct core *c, struct wq_str name, bool paused);
/* Discard every enqueued job of the queue named name. */
void fjobs_queue_clear(struct core *c, struct wq_str name);
/* Discard every job and resume every queue. */
void fjobs_flush(struct core *c);

/* The jobs of a set in due order, into an array the caller frees with
 * wq_free; *n gets their number. */
struct fjob **fjobs_set_jobs(const struct core *c, enum fjob_set set, size_t *n);
/* The queues by name, as for fjobs_set_jobs. */
struct fqueue **fjobs_queues_sorted(const struct core *c, size_t *n);

static inline uint32_t
fqueue_size(const struct fqueue *q)
{
    return heap_len(&q->ready);
}

#endif /* WQ_FJOBS_H */
