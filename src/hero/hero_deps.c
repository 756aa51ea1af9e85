/* hero_deps.c - the prerequisites of the Hero jobs (doc/hero.md): the
 * fields prerequisites and dependencies of a job's hash, JSON arrays of
 * ids that must all be finished before the job is handed out.  The jobs
 * waiting for a prerequisite are noted under its id; its status finished
 * serves their lists, its status error fails them, and theirs in turn,
 * through a list of failures worked off in a loop, never by recursion. */
#include "lib/wq.h"
#include "hero/hero_jobs.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "engine/core.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/registry.h"

/* The jobs waiting for a prerequisite, by the prerequisite's id. */
struct hero_dep {
    struct wq_str *ids; /* copies */
    uint32_t n, cap;
    uint32_t len;
    char id[];
};

/* A job to fail for its prerequisite. */
struct hero_fail {
    char *id, *prereq;
    size_t n, pn;
};

static void
hero_dep_key(const void *elem, const void **key, size_t *len)
{
    const struct hero_dep *d = elem;
    *key = d->id;
    *len = d->len;
}

static char *
hero_copy(const char *p, size_t n)
{
    char *c = wq_malloc(n ? n : 1);
    memcpy(c, p, n);
    return c;
}

/* The prerequisites of job hash k, each passed to fn until it returns
 * false. */
static void
hero_prereqs(const struct hkey *k, bool (*fn)(void *arg, const char *id, size_t n), void *arg)
{
    static const char *const fields[] = {"prerequisites", "dependencies"};
    for (size_t f = 0; f < WQ_ARRAY_LEN(fields); f++) {
        struct wq_str v = hero_field(k, fields[f]);
        if (v.n == 0)
            continue;
        json_t *a = json_loadb(v.p, v.n, JSON_DECODE_ANY, NULL);
        size_t i;
        json_t *e;
        bool go = true;
        json_array_foreach(a, i, e)
        {
            if (go && json_is_string(e))
                go = fn(arg, json_string_value(e), json_string_length(e));
        }
        json_decref(a);
        if (!go)
            return;
    }
}

/* What a walk over a job's prerequisites finds. */
struct hero_check {
    struct hero_ctx *h;
    bool waits;
    struct hero_failed *failed; /* the first prerequisite in error */
};

static bool
hero_check_one(void *arg, const char *id, size_t n)
{
    struct hero_check *ck = arg;
    struct wq_str st = hero_field(hero_job_hash(ck->h, id, n), "status");
    if (hero_str_is(st, "finished"))
        return true;
    if (hero_str_is(st, "error")) {
        ck->failed->len = WQ_MIN(n, sizeof ck->failed->id);
        memcpy(ck->failed->id, id, ck->failed->len);
        return false;
    }
    ck->waits = true;
    return true;
}

enum hero_ready
hero_jobs_ready(struct hero_ctx *h, const struct hval *v, struct hero_failed *failed)
{
    struct job *j = hero_job(h, v->p, v->len);
    if (j == NULL || !hero_job_element(j, v))
        return HERO_READY; /* plain data */
    failed->len = 0;
    struct hero_check ck = {.h = h, .failed = failed};
    hero_prereqs(hero_job_hash(h, v->p, v->len), hero_check_one, &ck);
    if (failed->len > 0)
        return HERO_FAILED;
    return ck.waits ? HERO_WAITS : HERO_READY;
}

/* "prerequisite P failed" into why. */
static void
hero_why(char *why, size_t size, const char *prereq, size_t n)
{
    snprintf(why, size, "prerequisite %.*s failed", (int)WQ_MIN(n, HERO_ID_MAX), prereq);
}

void
hero_jobs_fail_prereq(struct hero_ctx *h, const char *id, size_t n,
                      const struct hero_failed *failed)
{
    struct job *j = hero_job(h, id, n);
    if (j == NULL)
        return;
    char why[64 + HERO_ID_MAX];
    hero_why(why, sizeof why, failed->id, failed->len);
    hero_job_end(h, j, false);
    hero_job_fail(h, id, n, why);
}

/* A job being noted as the dependent of its prerequisites. */
struct hero_note {
    struct hero_ctx *h;
    const char *id;
    size_t n;
};

static bool
hero_note_one(void *arg, const char *p, size_t n)
{
    struct hero_note *note = arg;
    struct hero_ctx *h = note->h;
    struct wq_str st = hero_field(hero_job_hash(h, p, n), "status");
    if (hero_str_is(st, "finished") || n == 0 || n > HERO_ID_MAX)
        return true;
    struct hero_dep *d = registry_find(h->deps, p, n);
    if (d == NULL) {
        d = wq_calloc(1, sizeof *d + n);
        d->len = (uint32_t)n;
        memcpy(d->id, p, n);
        registry_insert(h->deps, d);
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 2;
        d->ids = wq_realloc(d->ids, d->cap * sizeof *d->ids);
    }
    d->ids[d->n++] = (struct wq_str){hero_copy(note->id, note->n), note->n};
    return true;
}

void
hero_deps_note(struct hero_ctx *h, const struct hkey *k, const char *id, size_t n)
{
    struct hero_note note = {h, id, n};
    hero_prereqs(k, hero_note_one, &note);
}

/* Does a job's prerequisites name p (stop at it)? */
struct hero_names {
    const char *p;
    size_t n;
    bool found;
};

static bool
hero_names_one(void *arg, const char *id, size_t n)
{
    struct hero_names *nm = arg;
    nm->found = n == nm->n && memcmp(id, nm->p, n) == 0;
    return !nm->found;
}

/* Fail the jobs of the list, and those their failures add, in a loop. */
static void
hero_deps_work_off(struct hero_ctx *h)
{
    if (h->failing)
        return; /* the loop below, further up, goes on with them */
    h->failing = true;
    while (h->nfail > 0) {
        struct hero_fail f = h->failq[--h->nfail];
        struct job *j = hero_job(h, f.id, f.n);
        struct hero_names nm = {f.prereq, f.pn, false};
        if (j != NULL && j->state != JOB_LEASED)
            hero_prereqs(hero_job_hash(h, f.id, f.n), hero_names_one, &nm);
        /* still queued, and still waiting for it (its fields may have
         * changed since it was noted) */
        if (nm.found) {
            char why[64 + HERO_ID_MAX];
            hero_why(why, sizeof why, f.prereq, f.pn);
            hero_unqueue(h, j);
            hero_job_end(h, j, false);
            hero_job_fail(h, f.id, f.n, why); /* adds its dependents */
        }
        wq_free(f.id);
        wq_free(f.prereq);
    }
    h->failing = false;
}

void
hero_deps_status(struct hero_ctx *h, const char *id, size_t n, bool finished)
{
    struct hero_dep *d = registry_remove(h->deps, id, n);
    if (d == NULL)
        return;
    for (uint32_t i = 0; i < d->n; i++) {
        struct wq_str dep = d->ids[i];
        struct job *dj = hero_job(h, dep.p, dep.n);
        if (finished && dj != NULL && dj->state != JOB_LEASED) {
            const struct queue *q = core_job_queue(h->core, dj);
            hero_serve_key(h, (struct wq_str){q->name, q->name_len});
        } else if (!finished) {
            if (h->nfail == h->capfail) {
                h->capfail = h->capfail ? h->capfail * 2 : 8;
                h->failq = wq_realloc(h->failq, h->capfail * sizeof *h->failq);
            }
            h->failq[h->nfail++] = (struct hero_fail){(char *)dep.p, hero_copy(id, n), dep.n, n};
            continue; /* the list owns the copy now */
        }
        wq_free((char *)dep.p);
    }
    wq_free(d->ids);
    wq_free(d);
    hero_deps_work_off(h);
}

static void
hero_dep_free(void *elem, void *arg)
{
    (void)arg;
    struct hero_dep *d = elem;
    for (uint32_t i = 0; i < d->n; i++)
        wq_free((char *)d->ids[i].p);
    wq_free(d->ids);
    wq_free(d);
}

void
hero_deps_open(struct hero_ctx *h)
{
    h->deps = registry_new(hero_dep_key);
}

void
hero_deps_free(struct hero_ctx *h)
{
    registry_foreach(h->deps, hero_dep_free, NULL);
    registry_free(h->deps);
    wq_free(h->failq);
}
