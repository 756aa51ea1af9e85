/* queue.h - one queue per job name: a heap of ready jobs, a heap of jobs
 * waiting for their scheduled time, a count of leased jobs, and a FIFO of
 * parked leasers.  The queue is shared by reference: every job of the name
 * and every parked leaser holds one, and the core frees the queue when the
 * last goes.  A queue is "active" (visible to clients) while it holds a
 * ready, scheduled or leased job or a parked leaser. */
#ifndef WQ_QUEUE_H
#define WQ_QUEUE_H

#include "lib/wq.h"
#include "lib/heap.h"
#include "lib/list.h"
#include "lib/ostree.h"
#include "lib/registry.h"

struct job;
struct registry;
struct waiter;

/* A leaser's place in one queue's FIFO of parked leasers. */
struct park_node {
    struct list link; /* in the queue's parked FIFO */
    struct waiter *waiter;
    struct queue *queue;
};

/* A queue of jobs that only some named workers may lease (add -worker,
 * ours) is a hidden queue named "<name>" QUEUE_TARGET_SEP "<workers>",
 * the workers sorted and comma-separated; it refers to its base queue
 * "<name>", where their leases park.  Client names never hold the
 * separator. */
#define QUEUE_TARGET_SEP '\x1f'

struct queue {
    struct heap ready;
    struct heap scheduled;
    struct list parked_fifo; /* struct park_node, oldest first */
    uint64_t refs;           /* jobs of this name + parked nodes */
    uint64_t mark;           /* scratch stamp for de-duplicating names in one lease */
    uint32_t leased;
    uint32_t parked;
    /* jobs of the name neither queued nor leased, by state (the core
     * keeps them; the metrics read them) */
    uint32_t waiting, completed, failed;
    uint32_t ix;          /* in the core's queue table (jobs name their queue by it) */
    uint8_t space;        /* the key space whose table it is in (job.h) */
    bool paused;          /* leases pass it by (core_queue_pause); held by a reference */
    bool dispatch_queued; /* on the core's list of queues to dispatch */
    struct queue *dispatch_next;
    struct queue *base; /* a hidden targeted queue's base queue, else NULL */
    /* its place in the table's index of names (not for targeted queues);
     * counted while active */
    struct ostree_node order;
    uint8_t name_len;
    char name[]; /* NUL-terminated */
};

/* A new empty queue named name[0..len) (len <= WQ_MAX_NAME), refs 0;
 * exts is the registry of struct job_ext, which orders timed jobs. */
struct queue *queue_new(const char *name, size_t len, struct registry *exts);
/* Free q, which must hold nothing; NULL is ignored. */
void queue_free(struct queue *q);

static inline bool
queue_is_active(const struct queue *q)
{
    return heap_len(&q->ready) + heap_len(&q->scheduled) + q->leased + q->parked > 0;
}

/* Count q in the index of names while it is active; every change of what
 * queue_is_active reads goes through here. */
static inline void
queue_note_active(struct queue *q)
{
    bool active = queue_is_active(q);
    if (active != q->order.counted)
        ostree_set_counted(&q->order, active);
}

/* Put j in the ready heap / the scheduled heap (sets j->place). */
void queue_push_ready(struct queue *q, struct job *j);
void queue_push_scheduled(struct queue *q, struct job *j);
/* Take j out of whichever heap holds it (j->place becomes JOB_NOWHERE). */
void queue_remove(struct queue *q, struct job *j);
/* One more / one fewer of q's jobs is leased. */
static inline void
queue_lease(struct queue *q)
{
    q->leased++;
    queue_note_active(q);
}

static inline void
queue_unlease(struct queue *q)
{
    q->leased--;
    queue_note_active(q);
}

/* The first ready job, or NULL; it stays in the heap. */
struct job *queue_peek_ready(const struct queue *q);

/* Append node (with its waiter set) to the FIFO of parked leasers. */
void queue_park(struct queue *q, struct park_node *node);
/* Take node out of the FIFO. */
void queue_unpark(struct queue *q, struct park_node *node);
static inline struct park_node *
queue_first_parked(const struct queue *q)
{
    return list_empty(&q->parked_fifo) ? NULL
                                       : list_item(q->parked_fifo.next, struct park_node, link);
}

/* registry_key_fn for the name table. */
void queue_name_key(const void *elem, const void **key, size_t *len);

/* Every queue, by name and by a 4-byte index (jobs name their queue by
 * it).  A queue lives while something refers to it (q->refs: its jobs and
 * parked nodes); then it is freed and its index reused.  The queues
 * clients see (all but the targeted ones) are also in an ordered index of
 * their names, where the active ones count, so that inspect queues finds
 * its offset in O(log n) rather than sorting every name. */
struct queue_table {
    struct registry *by_name;
    struct ostree in_order; /* their order nodes, names in byte order */
    struct queue **tab;     /* ix -> queue, NULL when free */
    uint32_t *free;         /* free indices of tab */
    uint32_t cap, used, nfree;
    uint32_t named; /* queues in in_order: all but the hidden targeted ones */
    uint64_t bytes; /* what the queues hold, as queue_bytes counts it */
    uint8_t space;  /* the key space of its queues */
};

/* What a queue named by len bytes holds while it exists, beside its jobs:
 * the struct and its name, its slots in the table and the index by name,
 * the allocator's rounding. */
#define QUEUE_INDEX_BYTES 64
static inline uint64_t
queue_bytes(size_t len)
{
    return sizeof(struct queue) + len + 1 + QUEUE_INDEX_BYTES;
}

void queue_table_init(struct queue_table *t, uint8_t space);
/* Free every queue, whatever it holds (the core frees the jobs). */
void queue_table_clear(struct queue_table *t);
/* The queue named name[0..len), created if need be (exts as in queue_new),
 * with one more reference.  A new targeted queue takes a reference to its
 * base. */
struct queue *queue_table_ref(struct queue_table *t, const char *name, size_t len,
                              struct registry *exts);
/* The name clients know q by: its base's for a targeted queue. */
static inline const char *
queue_visible_name(const struct queue *q)
{
    return q->base != NULL ? q->base->name : q->name;
}

/* Drop a reference; the last one frees q (and drops its base's). */
void queue_table_unref(struct queue_table *t, struct queue *q);

/* The active queue clients see that has `rank` such queues before it in
 * byte order of names, or NULL past the end: O(log n). */
struct queue *queue_table_select(const struct queue_table *t, uint64_t rank);
/* The next active queue clients see after q (one of them) by name, or NULL:
 * O(log n), amortised O(1) over a walk. */
struct queue *queue_table_next(const struct queue *q);

static inline struct queue *
queue_table_at(const struct queue_table *t, uint32_t ix)
{
    return t->tab[ix];
}

#endif /* WQ_QUEUE_H */
