/* core_target.c - jobs for named workers only (add -worker=A,B, ours).
 * Such a job waits in a hidden queue of its own target set (queue.h,
 * QUEUE_TARGET_SEP), so that a lease never walks past jobs it may not
 * take: the core keeps, for each base queue and worker name, the names of
 * the target-set queues that worker belongs to, and a named worker's lease
 * looks at those beside its base queue.  Costs grow with the distinct
 * target sets a worker is in, never with the jobs. */
#include "lib/wq.h"
#include "engine/core.h"
#include "engine/core_internal.h"

#include <string.h>

#include "lib/alloc.h"
#include "lib/util.h"
#include "lib/registry.h"
#include "engine/workers.h"

/* For one base queue and one worker name ("<base>" SEP "<worker>"): the
 * names of the target-set queues that hold the worker. */
struct target_index {
    char *key;
    size_t key_len;
    char **sets;
    uint32_t n, cap;
};

static void
target_index_key(const void *elem, const void **key, size_t *len)
{
    const struct target_index *t = elem;
    *key = t->key;
    *len = t->key_len;
}

static void
target_index_free(void *elem, void *arg)
{
    struct target_index *t = elem;
    for (uint32_t i = 0; i < t->n; i++)
        wq_free(t->sets[i]);
    wq_free(t->sets);
    wq_free(t->key);
    wq_free(t);
}

void
core_targets_free(struct core *c)
{
    if (c->targets == NULL)
        return;
    registry_foreach(c->targets, target_index_free, NULL);
    registry_free(c->targets);
}

/* The index entry of base and worker w[0..n) (created if make). */
static struct target_index *
core_target_entry(struct core *c, const char *base, size_t base_len, const char *w, size_t n,
                  bool make)
{
    char key[2 * WQ_MAX_NAME + 2];
    memcpy(key, base, base_len);
    key[base_len] = QUEUE_TARGET_SEP;
    memcpy(key + base_len + 1, w, n);
    size_t len = base_len + 1 + n;
    if (c->targets == NULL) {
        if (!make)
            return NULL;
        c->targets = registry_new(target_index_key);
    }
    struct target_index *t = registry_find(c->targets, key, len);
    if (t == NULL && make) {
        t = wq_calloc(1, sizeof *t);
        t->key = wq_malloc(len);
        memcpy(t->key, key, len);
        t->key_len = len;
        registry_insert(c->targets, t);
    }
    return t;
}

void
core_target_register(struct core *c, const struct queue *q)
{
    const char *sep = memchr(q->name, QUEUE_TARGET_SEP, q->name_len);
    size_t base_len = (size_t)(sep - q->name);
    const char *p = sep + 1;
    struct wq_str w;
    while (util_list_next(&p, q->name + q->name_len, &w)) {
        struct target_index *t = core_target_entry(c, q->name, base_len, w.p, w.n, true);
        bool known = false;
        for (uint32_t i = 0; i < t->n && !known; i++)
            known = strcmp(t->sets[i], q->name) == 0;
        if (!known) {
            if (t->n == t->cap) {
                t->cap = t->cap == 0 ? 2 : 2 * t->cap;
                t->sets = wq_realloc(t->sets, t->cap * sizeof *t->sets);
            }
            t->sets[t->n] = wq_malloc(q->name_len + 1u);
            memcpy(t->sets[t->n++], q->name, q->name_len + 1u);
        }
    }
}

bool
core_target_allows(const struct queue *q, const struct worker *who)
{
    if (q->base == NULL)
        return true;
    if (who == NULL)
        return false;
    const char *p = (const char *)memchr(q->name, QUEUE_TARGET_SEP, q->name_len) + 1;
    struct wq_str w;
    while (util_list_next(&p, q->name + q->name_len, &w))
        if (w.n == who->wid_len && memcmp(w.p, who->wid, w.n) == 0)
            return true;
    return false;
}

/* Is a's first ready job before b's (both have one)? */
static bool
core_target_before(const struct core *c, const struct queue *a, const struct queue *b)
{
    const struct heap_item *x = heap_at(&a->ready, 0), *y = heap_at(&b->ready, 0);
    if (x->key != y->key)
        return x->key < y->key;
    return job_ready_tie(x->elem, y->elem, c->space[a->space].exts);
}

struct queue *
core_target_pick(struct core *c, struct queue *base, const struct worker *who)
{
    struct queue *best = heap_len(&base->ready) > 0 ? base : NULL;
    struct target_index *t = who != NULL ? core_target_entry(c, base->name, base->name_len,
                                                             who->wid, who->wid_len, false)
                                         : NULL;
    for (uint32_t i = 0; t != NULL && i < t->n;) {
        struct queue *q =
            registry_find(core_ids(c)->queues.by_name, t->sets[i], strlen(t->sets[i]));
        if (q == NULL) { /* gone with its last job: forget it */
            wq_free(t->sets[i]);
            t->sets[i] = t->sets[--t->n];
            continue;
        }
        if (heap_len(&q->ready) > 0 && (best == NULL || core_target_before(c, q, best)))
            best = q;
        i++;
    }
    return best;
}

struct park_node *
core_target_first_parked(const struct queue *q)
{
    if (q->base == NULL)
        return queue_first_parked(q);
    const struct list *head = &q->base->parked_fifo;
    for (const struct list *l = head->next; l != head; l = l->next) {
        struct park_node *node = list_item(l, struct park_node, link);
        if (core_target_allows(q, node->waiter->who))
            return node;
    }
    return NULL;
}
