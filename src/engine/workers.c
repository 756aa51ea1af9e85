/* workers.c - the registry of workers, by wid. */
#include "lib/wq.h"
#include "engine/workers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/registry.h"

struct workers {
    struct registry *by_wid;
};

static void
workers_key(const void *elem, const void **key, size_t *len)
{
    const struct worker *k = elem;
    *key = k->wid;
    *len = k->wid_len;
}

/* A NUL-terminated copy of s[0..n). */
static char *
workers_strndup(const char *s, size_t n)
{
    char *c = wq_malloc(n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

struct workers *
workers_new(void)
{
    struct workers *w = wq_calloc(1, sizeof *w);
    w->by_wid = registry_new(workers_key);
    return w;
}

static void
workers_free_one(void *elem, void *arg)
{
    struct worker *k = elem;
    wq_free(k->wid);
    wq_free(k->hostname);
    wq_free(k->labels);
    wq_free(k->waiting_on);
    for (uint32_t i = 0; i < k->nseen; i++)
        wq_free(k->seen[i]);
    wq_free(k);
}

/* At the server's end: a worker still holding jobs is freed with them
 * (core_free frees the workers before the jobs, which never touch them
 * then). */
void
workers_free(struct workers *w)
{
    if (w == NULL)
        return;
    registry_foreach(w->by_wid, workers_free_one, NULL);
    registry_free(w->by_wid);
    wq_free(w);
}

size_t
workers_count(const struct workers *w)
{
    return registry_count(w->by_wid);
}

void
workers_signal(struct worker *k, enum worker_state want)
{
    if (want > k->state)
        k->state = want;
}

struct workers_kind_count {
    uint8_t kind;
    size_t n;
};

static void
workers_count_one(void *elem, void *arg)
{
    const struct worker *k = elem;
    struct workers_kind_count *c = arg;
    c->n += (k->kinds & c->kind) != 0;
}

size_t
workers_count_kind(const struct workers *w, uint8_t kind)
{
    struct workers_kind_count c = {kind, 0};
    registry_foreach(w->by_wid, workers_count_one, &c);
    return c.n;
}

struct worker *
workers_find(const struct workers *w, const char *wid, size_t len)
{
    return registry_find(w->by_wid, wid, len);
}

struct worker *
workers_attach(struct workers *w, const char *wid, size_t len, const char *hostname, int64_t pid,
               const char *labels, uint8_t kind, const char *address, uint64_t now_ms)
{
    WQ_ASSERT(len > 0 && len <= WORKERS_MAX_ID);
    struct worker *k = workers_find(w, wid, len);
    if (k == NULL) {
        k = wq_calloc(1, sizeof *k);
        k->wid = workers_strndup(wid, len);
        k->wid_len = len;
        k->hostname = workers_strndup(hostname, strlen(hostname));
        k->pid = pid;
        k->labels = workers_strndup(labels, strlen(labels));
        snprintf(k->address, sizeof k->address, "%s", address);
        k->connected_ms = now_ms;
        registry_insert(w->by_wid, k);
    }
    k->kinds |= kind;
    k->connections++;
    k->last_beat_ms = now_ms;
    return k;
}

void
workers_detach(struct workers *w, struct worker *k)
{
    WQ_ASSERT(k->connections > 0);
    if (--k->connections > 0)
        return;
    registry_remove(w->by_wid, k->wid, k->wid_len);
    k->gone = true;
    if (k->holding == 0)
        workers_free_one(k, NULL);
}

void
workers_hold(struct worker *k)
{
    k->holding++;
}

void
workers_unhold(struct worker *k)
{
    WQ_ASSERT(k->holding > 0);
    if (--k->holding == 0 && k->gone)
        workers_free_one(k, NULL);
}

void
workers_note_queue(struct worker *k, const char *name, size_t len)
{
    for (uint32_t i = 0; i < k->nseen; i++)
        if (strlen(k->seen[i]) == len && memcmp(k->seen[i], name, len) == 0)
            return;
    if (k->nseen == WORKERS_SEEN) { /* forget the oldest */
        wq_free(k->seen[0]);
        memmove(k->seen, k->seen + 1, (WORKERS_SEEN - 1) * sizeof *k->seen);
        k->nseen--;
    }
    k->seen[k->nseen++] = workers_strndup(name, len);
}

bool
workers_present(const struct worker *k, const char *name, size_t len)
{
    if (k->gone || k->connections == 0)
        return false;
    for (uint32_t i = 0; i < k->nseen; i++)
        if (strlen(k->seen[i]) == len && memcmp(k->seen[i], name, len) == 0)
            return true;
    return false;
}

void
workers_set_waiting(struct worker *k, const char *names)
{
    wq_free(k->waiting_on);
    k->waiting_on = names != NULL ? workers_strndup(names, strlen(names)) : NULL;
}

struct workers_list {
    struct worker **k;
    size_t n;
};

static void
workers_list_add(void *elem, void *arg)
{
    struct workers_list *l = arg;
    l->k[l->n++] = elem;
}

static int
workers_wid_cmp(const void *a, const void *b)
{
    const struct worker *x = *(struct worker *const *)a, *y = *(struct worker *const *)b;
    int d = memcmp(x->wid, y->wid, WQ_MIN(x->wid_len, y->wid_len));
    return d != 0 ? d : (x->wid_len > y->wid_len) - (x->wid_len < y->wid_len);
}

struct worker **
workers_sorted(const struct workers *w, size_t *n)
{
    struct workers_list l = {wq_malloc((registry_count(w->by_wid) + 1) * sizeof *l.k), 0};
    registry_foreach(w->by_wid, workers_list_add, &l);
    qsort(l.k, l.n, sizeof *l.k, workers_wid_cmp);
    *n = l.n;
    return l.k;
}

bool
workers_valid_id(const char *wid, size_t len)
{
    if (len == 0 || len > WORKERS_MAX_ID)
        return false;
    for (size_t i = 0; i < len; i++)
        if (wid[i] <= ' ' || wid[i] > '~')
            return false;
    return true;
}

const char *
worker_state_name(enum worker_state s)
{
    static const char *const names[] = {"running", "quiet", "terminate"};
    return names[s];
}
