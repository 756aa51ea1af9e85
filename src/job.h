/* job.h - struct job: one job, its state and its ordering keys.
 * A job lives in the core's registry from add until delete or TTL expiry.
 * While NEW or PENDING it sits in its queue's ready heap or, before its
 * scheduled time, in the queue's scheduled heap; while LEASED it is counted
 * by its queue; COMPLETED and FAILED jobs keep their result until TTL. */
#ifndef WQ_JOB_H
#define WQ_JOB_H

#include "wq.h"
#include "jobid.h"
#include "wheel.h"

/* The numbers are the protocol's (inspect shows them). */
enum job_state {
    JOB_NEW = 0,
    JOB_COMPLETED = 1,
    JOB_FAILED = 2,
    JOB_PENDING = 3,
    JOB_LEASED = 4,
    JOB_STATE_COUNT
};

/* Where a job waits, when it waits at all. */
enum job_place { JOB_NOWHERE, JOB_IN_READY, JOB_IN_SCHEDULED };

#define JOB_F_TIMED 0x01 /* was scheduled (has a time) */
#define JOB_F_RUN   0x02 /* queued by run: lives only while its client waits */

struct queue;
struct waiter;

struct job {
    uint8_t             id[JOBID_LEN];
    struct queue       *queue;     /* holds the name; referenced while the job lives */
    struct wheel_entry  timer;     /* armed for the next of expiry, TTR end, ready time */
    uint64_t            expires_at; /* server ms, UINT64_MAX if never */
    uint64_t            due_at;     /* TTR end (LEASED) or ready time (IN_SCHEDULED) */
    uint64_t            seq;        /* arrival order, for FIFO among equals */
    uint64_t            ttl;
    int64_t             created_ms; /* Unix ms */
    int64_t             time_ms;    /* scheduled time, Unix ms (JOB_F_TIMED) */
    char               *payload;
    char               *result;
    struct waiter      *waiters;    /* result waiters, woken on the result */
    uint32_t            payload_len;
    uint32_t            result_len;
    uint32_t            ttr;
    int32_t             priority;
    uint32_t            heap_index; /* in the ready or scheduled heap */
    uint32_t            attempts;
    uint32_t            fails;
    uint32_t            time_ns;    /* the scheduled time below the millisecond */
    uint8_t             max_attempts;
    uint8_t             max_fails;
    uint8_t             state;      /* enum job_state */
    uint8_t             place;      /* enum job_place */
    uint8_t             flags;
};

extern const char *const job_state_names[JOB_STATE_COUNT];

/* Has the job its final result (COMPLETED or FAILED)? */
static inline bool
job_is_done(const struct job *j)
{
    return j->state == JOB_COMPLETED || j->state == JOB_FAILED;
}

/* Heap keys: ready order is priority descending, untimed before timed, time,
 * then arrival; scheduled order is time, priority descending, arrival.
 * Times order to the nanosecond; arrival numbers must stay below 2^44. */
#define JOB_SEQ_LIMIT ((uint64_t)1 << 44)
void job_ready_key(const struct job *j, uint64_t k[3]);
void job_scheduled_key(const struct job *j, uint64_t k[3]);

/* heap_index_fn for heaps of jobs. */
void job_set_heap_index(void *elem, uint32_t idx);

/* registry_key_fn for the id registry. */
void job_id_key(const void *elem, const void **key, size_t *len);

#endif /* WQ_JOB_H */
