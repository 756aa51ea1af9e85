/* queue.c - per-name queues (ready and scheduled heaps, parked leasers)
 * and the table of them. */
#include "lib/wq.h"
#include "engine/queue.h"

#include <string.h>

#include "lib/alloc.h"
#include "engine/job.h"

struct queue *
queue_new(const char *name, size_t len, struct registry *exts)
{
    WQ_ASSERT(len > 0 && len <= WQ_MAX_NAME);
    struct queue *q = wq_calloc(1, sizeof *q + len + 1);
    heap_init(&q->ready, job_set_heap_index, job_ready_tie, exts);
    heap_init(&q->scheduled, job_set_heap_index, job_scheduled_tie, exts);
    list_init(&q->parked_fifo);
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
    queue_note_active(q);
}

void
queue_push_scheduled(struct queue *q, struct job *j)
{
    heap_push(&q->scheduled, job_scheduled_key(j, q->scheduled.arg), j);
    j->place = JOB_IN_SCHEDULED;
    queue_note_active(q);
}

void
queue_remove(struct queue *q, struct job *j)
{
    if (j->place == JOB_IN_READY)
        heap_remove(&q->ready, j->heap_index);
    else if (j->place == JOB_IN_SCHEDULED)
        heap_remove(&q->scheduled, j->heap_index);
    j->place = JOB_NOWHERE;
    queue_note_active(q);
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
    list_push_back(&q->parked_fifo, &node->link);
    q->parked++;
    queue_note_active(q);
}

void
queue_unpark(struct queue *q, struct park_node *node)
{
    list_unlink(&node->link);
    q->parked--;
    queue_note_active(q);
}

void
queue_name_key(const void *elem, const void **key, size_t *len)
{
    const struct queue *q = elem;
    *key = q->name;
    *len = q->name_len;
}

/* ---- the table of queues ---- */

/* Byte order of names, a shorter name before the longer one it starts. */
static int
queue_order_cmp(const struct ostree_node *a, const struct ostree_node *b)
{
    const struct queue *qa = WQ_CONTAINER_OF(a, const struct queue, order);
    const struct queue *qb = WQ_CONTAINER_OF(b, const struct queue, order);
    int d = memcmp(qa->name, qb->name, WQ_MIN(qa->name_len, qb->name_len));
    return d != 0 ? d : (int)qa->name_len - (int)qb->name_len;
}

void
queue_table_init(struct queue_table *t, uint8_t space)
{
    memset(t, 0, sizeof *t);
    t->space = space;
    t->by_name = registry_new(queue_name_key);
    ostree_init(&t->in_order, queue_order_cmp);
}

static void
queue_table_free_one(void *elem, void *arg)
{
    struct queue *q = elem;
    heap_clear(&q->ready);
    heap_clear(&q->scheduled);
    wq_free(q);
}

void
queue_table_clear(struct queue_table *t)
{
    registry_foreach(t->by_name, queue_table_free_one, NULL);
    registry_free(t->by_name);
    wq_free(t->tab);
    wq_free(t->free);
    memset(t, 0, sizeof *t);
}

/* Give q a place in the table, so that jobs name it in 4 bytes. */
static void
queue_table_place(struct queue_table *t, struct queue *q)
{
    if (t->nfree > 0) {
        q->ix = t->free[--t->nfree];
    } else {
        if (t->used == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 16;
            t->tab = wq_realloc(t->tab, t->cap * sizeof *t->tab);
            t->free = wq_realloc(t->free, t->cap * sizeof *t->free);
        }
        q->ix = t->used++;
    }
    t->tab[q->ix] = q;
}

struct queue *
queue_table_ref(struct queue_table *t, const char *name, size_t len, struct registry *exts)
{
    struct queue *q = registry_find(t->by_name, name, len);
    if (q == NULL) {
        q = queue_new(name, len, exts);
        q->space = t->space;
        registry_insert(t->by_name, q);
        queue_table_place(t, q);
        t->bytes += queue_bytes(len);
        /* targeted queues: the space of ids' only */
        const char *sep = t->space == 0 ? memchr(name, QUEUE_TARGET_SEP, len) : NULL;
        if (sep != NULL)
            q->base = queue_table_ref(t, name, (size_t)(sep - name), exts);
        else {
            ostree_insert(&t->in_order, &q->order);
            t->named++;
        }
    }
    q->refs++;
    return q;
}

void
queue_table_unref(struct queue_table *t, struct queue *q)
{
    WQ_ASSERT(q->refs > 0);
    if (--q->refs == 0) {
        registry_remove(t->by_name, q->name, q->name_len);
        if (q->base == NULL) {
            ostree_remove(&t->in_order, &q->order);
            t->named--;
        }
        t->tab[q->ix] = NULL;
        t->free[t->nfree++] = q->ix;
        t->bytes -= queue_bytes(q->name_len);
        struct queue *base = q->base;
        queue_free(q);
        if (base != NULL)
            queue_table_unref(t, base);
    }
}

struct queue *
queue_table_select(const struct queue_table *t, uint64_t rank)
{
    struct ostree_node *n = ostree_select(&t->in_order, rank);
    return n != NULL ? WQ_CONTAINER_OF(n, struct queue, order) : NULL;
}

struct queue *
queue_table_next(const struct queue *q)
{
    struct ostree_node *n = ostree_next(&q->order);
    return n != NULL ? WQ_CONTAINER_OF(n, struct queue, order) : NULL;
}
