/* fwp_mutate.c - Faktory's MUTATE: clear, discard, kill or requeue the
 * jobs of the scheduled, retries or dead set that a filter picks. */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "lib/alloc.h"
#include "net/conn.h"
#include "lib/glob.h"

static const char *const fwp_set_names[FSET_COUNT] = {"scheduled", "retries", "dead"};

#define FWP_MAX_PATTERN 1024u /* bytes of a MUTATE regexp */

/* A MUTATE filter: jids (exact), else a glob over the job's text (as
 * Redis's MATCH reads Faktory's "regexp") and a jobtype. */
struct fwp_filter {
    json_t *jids;         /* a non-empty array, or NULL */
    struct glob *pattern; /* NULL: any text */
    const char *jobtype;  /* NULL: any */
};

/* The jobs of set that jids name (strings; anything else names none),
 * each once, in the set's order, as fjobs_set_jobs would list them: each
 * jid is looked up in the core's table of jobs, so the cost is
 * O(jids * log(jids)) whatever the set's size (comparing every jid with
 * every job cost their product).  *n gets their number. */
static struct job **
fwp_jobs_named(const struct fjobs *fs, enum fjob_set set, json_t *jids, size_t *n)
{
    static const uint8_t state_of[FSET_COUNT] = {FJOB_SCHEDULED, FJOB_RETRY, FJOB_DEAD};
    struct job **out = wq_malloc((json_array_size(jids) + 1) * sizeof *out);
    size_t found = 0, i;
    json_t *v;
    json_array_foreach(jids, i, v)
    {
        struct job *j =
            json_is_string(v) ? fjobs_find(fs, json_string_value(v), json_string_length(v)) : NULL;
        if (j != NULL && fjobs_state(fs, j) == state_of[set])
            out[found++] = j;
    }
    fjobs_sort_due(fs, out, found);
    *n = 0;
    for (i = 0; i < found; i++) /* a jid named twice: its job is acted on once */
        if (*n == 0 || out[*n - 1] != out[i])
            out[(*n)++] = out[i];
    return out;
}

/* Does j pass the pattern and jobtype of filter m? */
static bool
fwp_filter_match(const struct fwp_filter *m, const struct job *j)
{
    if (m->pattern != NULL && !glob_match(m->pattern, j->payload, j->payload_len))
        return false;
    if (m->jobtype == NULL)
        return true;
    json_t *job = fwp_json_load(j->payload, j->payload_len, JSON_ALLOW_NUL, NULL);
    const char *type = fwp_json_str(job, "jobtype", NULL);
    bool ok = type != NULL && strcmp(type, m->jobtype) == 0;
    json_decref(job);
    return ok;
}

static void
fwp_filter_clear(struct fwp_filter *m)
{
    glob_free(m->pattern);
    *m = (struct fwp_filter){0};
}

/* Read filter from MUTATE's "filter" (which may be absent): NULL, or the
 * error.  A member of the wrong type is an error rather than no filter:
 * a filter that was meant to narrow a discard must not widen it. */
static const char *
fwp_filter_read(json_t *filter, struct fwp_filter *m)
{
    *m = (struct fwp_filter){0};
    if (filter == NULL || json_is_null(filter))
        return NULL;
    if (!json_is_object(filter))
        return "invalid filter for mutation command";
    json_t *jids = json_object_get(filter, "jids");
    json_t *re = json_object_get(filter, "regexp");
    json_t *type = json_object_get(filter, "jobtype");
    if ((jids != NULL && !json_is_null(jids) && !json_is_array(jids)) ||
        (type != NULL && !json_is_null(type) && !json_is_string(type)))
        return "invalid filter for mutation command";
    if (re != NULL && !json_is_null(re) && !json_is_string(re))
        return "invalid regexp";
    size_t re_len = json_string_length(re); /* 0 when not a string */
    if (re_len > FWP_MAX_PATTERN)
        return "regexp too long (at most 1024 bytes)";
    if (re_len > 0 && !(re_len == 1 && json_string_value(re)[0] == '*')) {
        /* strict: a range Redis would read high to low, or by the sign of
         * char, is refused rather than matched otherwise than there */
        m->pattern = glob_new(json_string_value(re), re_len, GLOB_STRICT);
        if (m->pattern == NULL)
            return "invalid regexp";
    }
    if (json_array_size(jids) > 0) { /* then the rest is ignored */
        glob_free(m->pattern);
        m->pattern = NULL;
        m->jids = jids;
    } else if (json_string_length(type) > 0) {
        m->jobtype = json_string_value(type);
    }
    return NULL;
}

enum fwp_mutate_cmd { FWP_CLEAR, FWP_KILL, FWP_DISCARD, FWP_REQUEUE };

/* A MUTATE works in slices of about this long, each in a loop pass of its
 * own, so that no client waits behind it longer than behind another
 * command (a filter that reads every job's text over 300 MB took 0.6 s, a
 * jobtype filter 3.4 s). */
#define FWP_MUTATE_SLICE_NS 2000000ull

/* A MUTATE under way: the jids of the jobs it may act on, in the set's
 * order, taken when it began; each is looked up again when its turn
 * comes (a job that left the set meanwhile is skipped). */
struct fwp_mutation {
    struct list link; /* in its context's mutations */
    struct fwp_ctx *f;
    struct reply *out;
    json_t *op; /* holds the filter's strings */
    struct fwp_filter m;
    int what;
    enum fjob_set set;
    bool named; /* the jids filter picked the jobs */
    char *jids; /* NUL-terminated, one after another */
    size_t *at; /* where each starts */
    size_t n, next;
    struct event *ev; /* the next slice */
};

static uint64_t
fwp_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A mutation of the jobs[0..n) (each once) with filter m and op. */
static struct fwp_mutation *
fwp_mutation_new(struct fwp_ctx *f, struct reply *out, json_t *op, const struct fwp_filter *m,
                 int what, enum fjob_set set, bool named, struct job **jobs, size_t n)
{
    struct fwp_mutation *mu = wq_calloc(1, sizeof *mu);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += fjob_jid_len(jobs[i]) + 1u;
    mu->jids = wq_malloc(bytes + 1);
    mu->at = wq_malloc((n + 1) * sizeof *mu->at);
    for (size_t i = 0, off = 0; i < n; i++) {
        mu->at[i] = off;
        memcpy(mu->jids + off, fjob_jid(jobs[i]), fjob_jid_len(jobs[i]));
        mu->jids[off + fjob_jid_len(jobs[i])] = '\0';
        off += fjob_jid_len(jobs[i]) + 1u;
    }
    mu->f = f;
    mu->out = out;
    mu->op = json_incref(op);
    mu->m = *m;
    mu->what = what;
    mu->set = set;
    mu->named = named;
    mu->n = n;
    return mu;
}

static void
fwp_mutation_free(struct fwp_mutation *mu)
{
    if (list_linked(&mu->link))
        list_unlink(&mu->link);
    if (mu->ev != NULL)
        event_free(mu->ev);
    fwp_filter_clear(&mu->m);
    json_decref(mu->op);
    wq_free(mu->jids);
    wq_free(mu->at);
    wq_free(mu);
}

/* Act on the jobs from mu->next on, for one slice (all of them without an
 * event loop): true once every one is done. */
static bool
fwp_mutation_step(struct fwp_mutation *mu)
{
    static const uint8_t state_of[FSET_COUNT] = {FJOB_SCHEDULED, FJOB_RETRY, FJOB_DEAD};
    struct fjobs *fs = mu->f->fjobs;
    uint64_t end = mu->f->base != NULL ? fwp_clock_ns() + FWP_MUTATE_SLICE_NS : UINT64_MAX;
    for (unsigned k = 0; mu->next < mu->n; k++) {
        if ((k & 15) == 15 && fwp_clock_ns() >= end)
            return false;
        const char *jid = mu->jids + mu->at[mu->next++];
        struct job *j = fjobs_find(fs, jid, strlen(jid));
        if (j == NULL || fjobs_state(fs, j) != state_of[mu->set])
            continue; /* it left the set meanwhile */
        if (mu->what != FWP_CLEAR && !mu->named && !fwp_filter_match(&mu->m, j))
            continue;
        if (mu->what == FWP_KILL && mu->set != FSET_DEAD)
            fjobs_kill(fs, j, NULL, 0);
        else if (mu->what == FWP_REQUEUE)
            fjobs_requeue(fs, j);
        else if (mu->what == FWP_CLEAR || mu->what == FWP_DISCARD)
            fjobs_discard(fs, j);
    }
    return true;
}

/* The next slice, in a batch of its own; the answer once it is done, or
 * the read-only refusal if the log failed meanwhile (what was done
 * stays done). */
static void
fwp_mutation_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fwp_mutation *mu = arg;
    const struct conn_hooks *h = mu->f->hooks;
    h->begin(h->arg);
    bool done = fwp_refuse_readonly(mu->f, mu->out);
    if (!done && fwp_mutation_step(mu)) {
        fwp_ok(mu->out);
        done = true;
    }
    if (done) {
        struct reply *out = mu->out;
        fwp_mutation_free(mu);
        reply_wake(out);
    } else {
        static const struct timeval now = {0, 0}; /* after the sockets ready by then */
        event_add(mu->ev, &now);
    }
    h->end(h->arg);
}

bool
fwp_mutation_cancel(struct fwp_ctx *f, void *waiting)
{
    for (struct list *n = f->mutations.next; n != NULL && n != &f->mutations; n = n->next)
        if (n == &((struct fwp_mutation *)waiting)->link) {
            fwp_mutation_free(waiting);
            return true;
        }
    return false;
}

/* MUTATE {"cmd", "target", "filter"}: act on the matching jobs of a set,
 * in slices when they are many. */
void
fwp_mutate(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_error_t e;
    json_t *op = fwp_json_load(a.p, a.n, 0, &e);
    if (!json_is_object(op)) {
        fwp_errorf(out, "invalid JSON: %s", op == NULL ? e.text : "not an object");
        json_decref(op);
        return;
    }
    const char *cmd = fwp_json_str(op, "cmd", NULL);
    const char *target = fwp_json_str(op, "target", NULL);
    static const char *const cmds[] = {"clear", "kill", "discard", "requeue"};
    int what = -1, set = -1;
    for (int i = 0; cmd != NULL && i < 4; i++)
        if (strcmp(cmd, cmds[i]) == 0)
            what = i;
    for (int i = 0; target != NULL && i < FSET_COUNT; i++)
        if (strcmp(target, fwp_set_names[i]) == 0)
            set = i;
    struct fwp_filter m = {0};
    const char *error = what < 0  ? "unknown mutate operation"
                        : set < 0 ? "invalid target for mutation command"
                                  : fwp_filter_read(json_object_get(op, "filter"), &m);
    if (error != NULL || fwp_refuse_readonly(f, out)) {
        if (error != NULL)
            fwp_error(out, error);
        fwp_filter_clear(&m);
        json_decref(op);
        return;
    }
    size_t n;
    bool named = what != FWP_CLEAR && m.jids != NULL; /* clear takes the whole set */
    struct job **jobs = named ? fwp_jobs_named(f->fjobs, (enum fjob_set)set, m.jids, &n)
                              : fjobs_set_jobs(f->fjobs, (enum fjob_set)set, &n);
    struct fwp_mutation *mu =
        fwp_mutation_new(f, out, op, &m, what, (enum fjob_set)set, named, jobs, n);
    wq_free(jobs);
    json_decref(op);
    if (fwp_mutation_step(mu)) {
        fwp_ok(out);
        fwp_mutation_free(mu);
        return;
    }
    mu->ev = evtimer_new(f->base, fwp_mutation_cb, mu);
    if (mu->ev == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory creating an event");
    static const struct timeval now = {0, 0};
    event_add(mu->ev, &now);
    list_push_back(&f->mutations, &mu->link);
    reply_park(out, mu);
}
