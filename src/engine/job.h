/* job.h - struct job: one job, its state and its ordering keys.
 * A job lives in the core's registry from add until delete or TTL expiry.
 * While NEW or PENDING it sits in its queue's ready heap or, before its
 * scheduled time, in the queue's scheduled heap; while LEASED it is counted
 * by its queue; COMPLETED and FAILED jobs keep their result until TTL. */
#ifndef WQ_JOB_H
#define WQ_JOB_H

#include "lib/wq.h"
#include "lib/jobid.h"
#include "lib/list.h"
#include "lib/registry.h"
#include "lib/wheel.h"

/* The numbers are the protocol's (inspect shows them). */
enum job_state {
    JOB_NEW = 0,
    JOB_COMPLETED = 1,
    JOB_FAILED = 2,
    JOB_PENDING = 3,
    JOB_LEASED = 4,
    JOB_WAITING = 5, /* ours: for its prerequisites (add -after) */
    JOB_STATE_COUNT
};

/* Where a job waits, when it waits at all. */
enum job_place { JOB_NOWHERE, JOB_IN_READY, JOB_IN_SCHEDULED };

#define JOB_F_TIMED   0x1  /* was scheduled (has a time) */
#define JOB_F_RUN     0x2  /* queued by run: lives only while its client waits */
#define JOB_F_EXT     0x4  /* has a struct job_ext in the core's side table */
#define JOB_F_NS      0x8  /* its scheduled time has nanoseconds below the ms */
#define JOB_F_BACKOFF 0x10 /* a fail that retries waits for Faktory's backoff */
#define JOB_F_DEAD    0x20 /* out of retries, it enters the dead set */
#define JOB_F_KEY     0x40 /* named by a key of another space than ids' (its key, not id) */

/* Attempts are counted up to this (with max-attempts 0 a job may be leased
 * forever); max-attempts and max-fails, at most 255, are never reached by it. */
#define JOB_ATTEMPTS_MAX ((1u << 21) - 1)
#define JOB_SEQ_BITS     44
#define JOB_SEQ_LIMIT    ((uint64_t)1 << JOB_SEQ_BITS)

struct queue;
struct registry;
struct waiter;
struct worker;

/* The key spaces of the job core: each has its own jobs and queues, so
 * that the same bytes or the same queue name in two of them name different
 * things.  Space 0 holds the jobs named by a 16-byte id (a UUID); a
 * front-end whose jobs are named otherwise takes a space of its own, where
 * keys are 1 to JOB_KEY_MAX bytes. */
#define JOB_SPACES    4
#define JOB_SPACE_IDS 0
#define JOB_KEY_MAX   255u

/* A job's name as the core's functions take it: its space and its bytes
 * (JOBID_LEN of them in JOB_SPACE_IDS). */
struct job_key {
    const uint8_t *p;
    size_t len;
    uint8_t space;
};

/* Where a job of a space other than JOB_SPACE_IDS keeps its key: its bytes
 * are allocated apart (job_key_new), and the job and its job_ext point at
 * them. */
struct job_keyref {
    uint8_t *bytes;
    uint8_t len;
    uint8_t space;
};

/* 88 bytes: a queued job costs this, its heap item and its registry slot.
 * What most jobs never have lives in a struct job_ext found by id or key. */
struct job {
    union {
        uint8_t id[JOBID_LEN]; /* in JOB_SPACE_IDS */
        struct job_keyref key; /* JOB_F_KEY: elsewhere */
    };
    char *payload;
    struct wheel_entry timer; /* armed for the next of expiry, TTR end, ready time */
    int64_t base_ms;          /* Unix ms the TTL counts from: created, or the scheduled time */
    uint64_t ttl;
    uint64_t seq : JOB_SEQ_BITS; /* arrival order, for FIFO among equals */
    uint64_t state : 3;          /* enum job_state */
    uint64_t place : 2;          /* enum job_place */
    uint64_t flags : 7;          /* JOB_F_* */
    uint64_t max_attempts : 8;
    uint64_t ttr : 27; /* ms, at most WQ_MAX_TTR_MS */
    uint64_t max_fails : 8;
    uint64_t fails : 8;     /* at most max(max_fails, 1) */
    uint64_t attempts : 21; /* at most JOB_ATTEMPTS_MAX */
    uint32_t payload_len;
    int32_t priority;
    union {
        uint32_t heap_index; /* in the ready or scheduled heap */
        uint32_t lease_end;  /* while LEASED: the TTR end, Unix ms mod 2^32 */
    };
    uint32_t queue_ix; /* the core's queue table */
};

_Static_assert(sizeof(struct job) == 88, "struct job must stay 88 bytes");

/* The rarer parts of a job (JOB_F_EXT): a result, waiting clients, for
 * a scheduled job its creation time and the nanoseconds of its time, and
 * for a job waiting out a backoff when it is due. */
struct job_ext {
    union { /* its job's */
        uint8_t id[JOBID_LEN];
        struct job_keyref key;
    };
    char *result;
    struct hlist waiters; /* result waiters (struct waiter), woken on the result */
    int64_t created_ms;   /* JOB_F_TIMED: Unix ms (base_ms is the time) */
    uint32_t time_ns;     /* JOB_F_TIMED: the time below the millisecond */
    uint32_t result_len;
    struct job_more *more; /* the job model's extensions, when used */
    int64_t retry_at;      /* PENDING in the scheduled heap after a fail (JOB_F_BACKOFF):
                            * when it is ready again, Unix ms; else 0 */
};

/* A job_ext fills one cache line: at 56 bytes, most of them straddled two,
 * and the plain add, lease, complete cycle (which makes one for each
 * result) ran 11% slower (doc/benchmarks.md). */
_Static_assert(sizeof(struct job_ext) == 64, "struct job_ext must fill one cache line");

/* What only jobs that use the job model's extensions (ours) need, kept out
 * of struct job_ext so that the common job_ext (a result) stays small. */
struct job_more {
    struct worker *holder;        /* LEASED by a named worker (workers.h) */
    struct job_dep *dependents;   /* the jobs waiting for this one (add -after) */
    uint8_t (*copies)[JOBID_LEN]; /* a broadcast's original: its copies */
    uint32_t ndependents, dependents_cap;
    uint32_t unmet; /* JOB_WAITING: prerequisites (or copies) not yet done */
    uint32_t ncopies;
    bool cancelled; /* failed by cancel: its worker's complete is refused */
    bool broadcast; /* the original of a broadcast (add -target=all) */
    /* in the dead set (JOB_F_DEAD, FAILED for good): its place in the
     * core's list, oldest death first, when it died (Unix ms), and the job */
    struct list dead_link;
    int64_t died_ms;
    struct job *job;
};

/* A dependent job, by id and by its arrival number (an id used again by
 * a later job is not the same job). */
struct job_dep {
    uint8_t id[JOBID_LEN];
    uint64_t seq;
};

extern const char *const job_state_names[JOB_STATE_COUNT];

/* Has the job its final result (COMPLETED or FAILED)? */
static inline bool
job_is_done(const struct job *j)
{
    return j->state == JOB_COMPLETED || j->state == JOB_FAILED;
}

/* Heap order: ready jobs by priority descending, untimed before timed,
 * time, then arrival; scheduled jobs by time, priority descending, arrival.
 * Times order to the nanosecond.  A heap key is a 64-bit prefix of that
 * order, exact for most jobs; equal keys are decided by the tie functions,
 * which compare in full (their arg is the registry of struct job_ext, for
 * the nanoseconds). */
uint64_t job_ready_key(const struct job *j);
uint64_t job_scheduled_key(const struct job *j, const struct registry *exts);
bool job_ready_tie(const void *a, const void *b, void *exts);
bool job_scheduled_tie(const void *a, const void *b, void *exts);

/* When j, in the scheduled heap, is due: its retry_at while it waits out a
 * backoff, else its scheduled time (base_ms).  exts: the core's job_ext
 * registry. */
int64_t job_due_ms(const struct job *j, const struct registry *exts);

/* j's space, and its key in it. */
static inline uint8_t
job_space(const struct job *j)
{
    return (j->flags & JOB_F_KEY) ? j->key.space : JOB_SPACE_IDS;
}

static inline struct job_key
job_key_of(const struct job *j)
{
    if (j->flags & JOB_F_KEY)
        return (struct job_key){j->key.bytes, j->key.len, j->key.space};
    return (struct job_key){j->id, JOBID_LEN, JOB_SPACE_IDS};
}

/* The job_ext of j in exts (its space's registry of them), NULL if none. */
static inline struct job_ext *
job_ext_find(const struct job *j, const struct registry *exts)
{
    if (j->flags & JOB_F_KEY)
        return registry_find(exts, j->key.bytes, j->key.len);
    return registry_find(exts, j->id, JOBID_LEN);
}

/* A job of another space than the ids': its key k and a copy of its
 * payload[0..len), for the memory of a small job kept once: a key that
 * is bytes of the payload (k->p points into it) is kept there, else in
 * one allocation with a payload that is not shared (payload.h); sets
 * JOB_F_KEY.  False if the payload cannot be allocated. */
bool job_keyed_set(struct job *j, const struct job_key *k, const char *payload, size_t len);
/* Free what job_keyed_set allocated. */
void job_keyed_free(struct job *j);
/* Replace keyed j's payload by a copy of payload[0..len) (its key moves
 * with it: the new address of its bytes is returned, for its job_ext). */
uint8_t *job_keyed_set_payload(struct job *j, const char *payload, size_t len);

/* heap_index_fn for heaps of jobs. */
void job_set_heap_index(void *elem, uint32_t idx);

/* registry_key_fn for the registries of jobs and of job_exts: by id in
 * JOB_SPACE_IDS, by key in the other spaces. */
void job_id_key(const void *elem, const void **key, size_t *len);
void job_ext_id_key(const void *elem, const void **key, size_t *len);
void job_ref_key(const void *elem, const void **key, size_t *len);
void job_ext_ref_key(const void *elem, const void **key, size_t *len);

#endif /* WQ_JOB_H */
