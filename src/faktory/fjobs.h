/* fjobs.h - the Faktory front-end's jobs, in a key space of the job core
 * of their own (engine/core.h, core_space_open): jobs named by their jid
 * (1 to 255 bytes), in queues apart from every other protocol's, with the
 * core's states seen as Faktory's (scheduled, enqueued, working, retries,
 * dead).  The core keeps each job, its text (its JSON, which neither the
 * core nor this file reads), queue, priority and reservation; this file
 * translates Faktory's moves into the core's and logs them (codes 16 to
 * 24 of cmdlog_codec.h) before they are made, and replays them.  What a
 * failure does to the text and where the job goes next is the front-end's
 * decision (fwp_job.c), given back through fjobs_retry, fjobs_kill and
 * fjobs_discard.  Pure like the core: times are given. */
#ifndef WQ_FJOBS_H
#define WQ_FJOBS_H

#include "lib/wq.h"
#include "engine/core.h"

#define FJOB_MAX_JID      255u
#define FJOB_MAX_QUEUE    255u
#define FJOB_MAX_FETCH    64u /* queues one FETCH may name */
#define FJOB_PRIORITY_MIN 1
#define FJOB_PRIORITY_MAX 9

enum fjob_state {
    FJOB_SCHEDULED, /* waiting for its `at` */
    FJOB_ENQUEUED,  /* in its queue */
    FJOB_WORKING,   /* fetched, reserved */
    FJOB_RETRY,     /* failed, enqueued again at its retry's time */
    FJOB_DEAD,      /* out of retries, in the dead set */
    FJOB_STATE_COUNT
};

/* The sets of jobs waiting for a time, as MUTATE names them. */
enum fjob_set { FSET_SCHEDULED, FSET_RETRIES, FSET_DEAD, FSET_COUNT };

struct fjobs;

/* The front-end's decision when a reservation runs out: it must call
 * fjobs_retry, fjobs_kill or fjobs_discard on j (which is still working). */
typedef void (*fjobs_expired_fn)(void *arg, struct fjobs *fs, struct job *j);

struct fjobs_stats {
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
    struct core *core;
    uint8_t space; /* its key space in the core */
    uint64_t dead_ttl_ms;
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

/* Open Faktory's space in c (labelled "faktory"), whether or not Faktory is
 * served: a log may hold Faktory records.  Freed with fjobs_free after
 * the core. */
struct fjobs *fjobs_new(struct core *c);
void fjobs_free(struct fjobs *fs);

/* Who decides about an expired reservation (NULL: the job is retried at
 * once, its text unchanged). */
void fjobs_set_expired(struct fjobs *fs, fjobs_expired_fn fn, void *arg);
/* The dead set's bounds: how long a job stays, how many stay. */
void fjobs_set_dead_limits(struct fjobs *fs, uint64_t ttl_ms, uint64_t max);

/* Bytes a job with this jid and text holds. */
uint64_t fjobs_job_bytes(size_t jid_len, size_t text_len);

/* A new job: CORE_OK, CORE_DUPLICATE (the jid is known) or CORE_NOMEM. */
enum core_status fjobs_push(struct fjobs *fs, const struct fjob_spec *s, uint64_t now_ms);

/* The first job of the first of names[0..n) (distinct or not; paused
 * queues skipped) that has one: CORE_OK with *out working.  Otherwise
 * CORE_TIMEOUT if wait_ms is 0, else CORE_PARKED with *parked set up to
 * call done(owner) once (the core's waiter: done with WAITER_GOT and the
 * job, now working, or WAITER_TIMEOUT).  Every job fetched is logged. */
enum core_status fjobs_fetch(struct fjobs *fs, const struct wq_str *names, size_t n,
                             uint64_t wait_ms, uint64_t now_ms, waiter_done_fn done, void *owner,
                             struct job **out, struct waiter **parked);
/* Withdraw a parked FETCH whose client left; done is not called. */
void fjobs_cancel(struct fjobs *fs, struct waiter *w);

/* The job with this jid, or NULL. */
struct job *fjobs_find(const struct fjobs *fs, const char *jid, size_t len);
/* What Faktory calls j's state. */
enum fjob_state fjobs_state(const struct fjobs *fs, const struct job *j);
/* j's jid (not NUL-terminated: often bytes of its text) and its length. */
static inline const char *
fjob_jid(const struct job *j)
{
    return (const char *)j->key.bytes;
}
static inline size_t
fjob_jid_len(const struct job *j)
{
    return j->key.len;
}
/* When j last entered its queue, Unix ms (its enqueued_at). */
static inline uint64_t
fjob_enqueued_ms(const struct job *j)
{
    return (uint64_t)j->base_ms;
}
/* When j's set lets it go: its time or its retry's (scheduled, retries),
 * the end of its time in the dead set (dead). */
uint64_t fjobs_due(const struct fjobs *fs, const struct job *j);

/* The queue named name of Faktory's space, NULL if it does not exist. */
struct queue *fjobs_queue(const struct fjobs *fs, struct wq_str name);
/* The job a FETCH of the queue named name would take next (the first of
 * its highest priority), paused or not; NULL if it has none. */
const struct job *fjobs_queue_head(const struct fjobs *fs, struct wq_str name);

/* A working job is done: it goes (CORE_OK); CORE_NOT_FOUND if no working
 * job has this jid. */
enum core_status fjobs_ack(struct fjobs *fs, const char *jid, size_t len);

/* j (working; at replay, in any set) goes to the retries set until
 * at_ms, with text as its new text. */
void fjobs_retry(struct fjobs *fs, struct job *j, const char *text, size_t len, uint64_t at_ms);
/* j goes to the dead set (text NULL: keeps its text); the oldest dead jobs
 * beyond the bound go. */
void fjobs_kill(struct fjobs *fs, struct job *j, const char *text, size_t len);
/* j goes, whatever its state. */
void fjobs_discard(struct fjobs *fs, struct job *j);
/* j (in a set) goes back to its queue now. */
void fjobs_requeue(struct fjobs *fs, struct job *j);

/* Pause or resume the queue named name (created if need be): a paused
 * queue keeps its jobs but FETCH skips it. */
void fjobs_pause(struct fjobs *fs, struct wq_str name, bool paused);
/* Discard every enqueued job of the queue named name. */
void fjobs_queue_clear(struct fjobs *fs, struct wq_str name);
/* Discard every job and resume every queue. */
void fjobs_flush(struct fjobs *fs);

/* The jobs of a set in due order, into an array the caller frees with
 * wq_free; *n gets their number. */
struct job **fjobs_set_jobs(const struct fjobs *fs, enum fjob_set set, size_t *n);
/* Sort jobs[0..n) of a set in its order: due time, then arrival. */
void fjobs_sort_due(const struct fjobs *fs, struct job **jobs, size_t n);
/* The queues by name, as for fjobs_set_jobs. */
struct queue **fjobs_queues_sorted(const struct fjobs *fs, size_t *n);

/* What Faktory's space holds. */
void fjobs_counts(const struct fjobs *fs, struct core_space_counts *out);

#endif /* WQ_FJOBS_H */
