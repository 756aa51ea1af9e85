/* queue.c - per-name queues. */
#include "wq.h"
#include "queue.h"

#include <string.h>

#include "alloc.h"
#include "job.h"

struct queue *
queue_new(const char *name, size_t len, struct registry *exts)
{
    WQ_ASSERT(len > 0 && len <= WQ_MAX_NAME);
    struct queue *q = wq_calloc(1, sizeof *q + len + 1);
    heap_init(&q->ready, job_set_heap_index, job_ready_tie, exts);
    heap_init(&q->scheduled, job_set_heap_index, job_scheduled_tie, exts);
    q->name_len = (uint8_t)len;
    memcpy(q->name, name, len);
    q->name[len] = '\0';
    return q;
}

void
queue_free(struct queue *q)
{
    if (q == NULL)
        return;
    WQ_ASSERT(q->refs == 0 && !queue_is_active(q));
    heap_clear(&q->ready);
    heap_clear(&q->scheduled);
    wq_free(q);
}

void
queue_push_ready(struct queue *q, struct job *j)
{
    heap_push(&q->ready, job_ready_key(j), j);
    j->place = JOB_IN_READY;
}

void
queue_push_scheduled(struct queue *q, struct job *j)
{
    heap_push(&q->scheduled, job_scheduled_key(j), j);
    j->place = JOB_IN_SCHEDULED;
}

void
queue_remove(struct queue *q, struct job *j)
{
    if (j->place == JOB_IN_READY)
        heap_remove(&q->ready, j->heap_index);
    else if (j->place == JOB_IN_SCHEDULED)
        heap_remove(&q->scheduled, j->heap_index);
    j->place = JOB_NOWHERE;
}

struct job *
queue_peek_ready(const struct queue *q)
{
    return heap_top(&q->ready);
}

void
queue_park(struct queue *q, struct park_node *node)
{
    node->queue = q;
    node->next = NULL;
    node->prev = q->park_tail;
    if (q->park_tail != NULL)
        q->park_tail->next = node;
    else
        q->park_head = node;
    q->park_tail = node;
    q->parked++;
}

void
queue_unpark(struct queue *q, struct park_node *node)
{
    if (node->prev != NULL)
        node->prev->next = node->next;
    else
        q->park_head = node->next;
    if (node->next != NULL)
        node->next->prev = node->prev;
    else
        q->park_tail = node->prev;
    node->prev = node->next = NULL;
    q->parked--;
}

void
queue_name_key(const void *elem, const void **key, size_t *len)
{
    const struct queue *q = elem;
    *key = q->name;
    *len = q->name_len;
}
