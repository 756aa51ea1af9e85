/* fwp_admin.c - the Faktory commands that look at or change everything:
 * INFO, FLUSH, MUTATE (on the scheduled, retries and dead sets) and QUEUE
 * (PAUSE, RESUME, REMOVE). */
#include "wq.h"
#include "fwp_internal.h"

#include <string.h>
#include <time.h>

#include "alloc.h"
#include "config.h"
#include "glob.h"
#include "workers.h"

static const char *const fwp_set_names[FSET_COUNT] = {"scheduled", "retries", "dead"};

/* One of INFO's tasks that move jobs out of a set on time, as Faktory's
 * scanners report themselves: how many they moved and the set's size
 * (workq runs no scan cycles: jobs move on the timer wheels). */
static json_t *
fwp_info_scanner(uint64_t moved, uint64_t size)
{
    return json_pack("{s:i, s:I, s:I, s:i}", "cycles", 0, "enqueued", (json_int_t)moved, "size",
                     (json_int_t)size, "wall_time_sec", 0);
}

/* INFO's "faktory" object, with Faktory 1.9's keys in its order. */
static json_t *
fwp_info_data(const struct fwp_ctx *f)
{
    const struct fjobs_stats *s = &f->core->fjobs->stats;
    json_t *queues = json_object();
    size_t n;
    struct fqueue **qs = fjobs_queues_sorted(f->core, &n);
    for (size_t i = 0; i < n; i++)
        json_object_set_new(queues, qs[i]->name, json_integer(fqueue_size(qs[i])));
    wq_free(qs);
    json_t *tasks =
        json_pack("{s:{s:I, s:I}, s:o, s:o, s:o, s:{s:i, s:I}}", "Busy", "reaped",
                  (json_int_t)s->expired, "size", (json_int_t)s->count[FJOB_WORKING], "Dead",
                  fwp_info_scanner(s->dead_expired, s->count[FJOB_DEAD]), "Retries",
                  fwp_info_scanner(s->due_retries, s->count[FJOB_RETRY]), "Scheduled",
                  fwp_info_scanner(s->due_scheduled, s->count[FJOB_SCHEDULED]), "Workers", "reaped",
                  0, "size", (json_int_t)workers_count_kind(f->core->workers, WORKER_FAKTORY));
    return json_pack("{s:I, s:I, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I}, s:o}", "total_failures",
                     (json_int_t)s->failures, "total_processed", (json_int_t)s->processed,
                     "total_enqueued", (json_int_t)s->count[FJOB_ENQUEUED], "total_queues",
                     (json_int_t)n, "queues", queues, "sets", "dead",
                     (json_int_t)s->count[FJOB_DEAD], "retries", (json_int_t)s->count[FJOB_RETRY],
                     "scheduled", (json_int_t)s->count[FJOB_SCHEDULED], "working",
                     (json_int_t)s->count[FJOB_WORKING], "tasks", tasks);
}

/* INFO: Faktory's keys, from the core's counts. */
void
fwp_info(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    uint64_t now = *f->now_ms;
    char when[32], utc[32];
    fwp_time_format(now, when);
    memcpy(utc, when + 11, 8);
    strcpy(utc + 8, " UTC");
    json_t *server =
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "description", "workq", "faktory_version",
                  PACKAGE_VERSION, "uptime", (json_int_t)((now - f->started_ms) / 1000),
                  "connections", (json_int_t)*f->clients, "command_count", (json_int_t)f->commands,
                  "used_memory_mb", (json_int_t)((alloc_memory_used() + (1 << 20) - 1) >> 20));
    json_t *info = json_pack("{s:s, s:s, s:o, s:o}", "now", when, "server_utc_time", utc, "faktory",
                             fwp_info_data(f), "server", server);
    fwp_bulk_json(out, info, 0);
    json_decref(info);
}

/* FLUSH: every Faktory job goes (Workq's jobs stay). */
void
fwp_flush(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    if (!fwp_refuse_readonly(f, out)) {
        fjobs_flush(f->core);
        fwp_ok(out);
    }
}

#define FWP_MAX_PATTERN 1024u /* bytes of a MUTATE regexp */

/* A MUTATE filter: jids (exact), else a glob over the job's text (as
 * Redis's MATCH reads Faktory's "regexp") and a jobtype. */
struct fwp_filter {
    json_t *jids;         /* a non-empty array, or NULL */
    struct glob *pattern; /* NULL: any text */
    const char *jobtype;  /* NULL: any */
};

/* The order of fjobs_set_jobs: due time, then arrival in the set. */
static int
fwp_cmp_due(const void *a, const void *b)
{
    const struct fjob *x = *(struct fjob *const *)a, *y = *(struct fjob *const *)b;
    if (x->due_ms != y->due_ms)
        return x->due_ms < y->due_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The jobs of set that jids name (strings; anything else names none),
 * each once, in the set's order, as fjobs_set_jobs would list them: each
 * jid is looked up in the core's table of jobs, so the cost is
 * O(jids * log(jids)) whatever the set's size (comparing every jid with
 * every job cost their product).  *n gets their number. */
static struct fjob **
fwp_jobs_named(const struct core *c, enum fjob_set set, json_t *jids, size_t *n)
{
    static const uint8_t state_of[FSET_COUNT] = {FJOB_SCHEDULED, FJOB_RETRY, FJOB_DEAD};
    struct fjob **out = wq_malloc((json_array_size(jids) + 1) * sizeof *out);
    size_t found = 0, i;
    json_t *v;
    json_array_foreach(jids, i, v)
    {
        struct fjob *j =
            json_is_string(v) ? fjobs_find(c, json_string_value(v), json_string_length(v)) : NULL;
        if (j != NULL && j->state == state_of[set])
            out[found++] = j;
    }
    qsort(out, found, sizeof *out, fwp_cmp_due);
    *n = 0;
    for (i = 0; i < found; i++) /* a jid named twice: its job is acted on once */
        if (*n == 0 || out[*n - 1] != out[i])
            out[(*n)++] = out[i];
    return out;
}

/* Does j pass the pattern and jobtype of filter m? */
static bool
fwp_filter_match(const struct fwp_filter *m, const struct fjob *j)
{
    if (m->pattern != NULL && !glob_match(m->pattern, j->text, j->text_len))
        return false;
    if (m->jobtype == NULL)
        return true;
    json_t *job = fwp_json_load(j->text, j->text_len, JSON_ALLOW_NUL, NULL);
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

enum fwp_mutation { FWP_CLEAR, FWP_KILL, FWP_DISCARD, FWP_REQUEUE };

/* MUTATE {"cmd", "target", "filter"}: act on the matching jobs of a set. */
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
    if (error != NULL) {
        fwp_error(out, error);
    } else if (!fwp_refuse_readonly(f, out)) {
        size_t n;
        bool named = what != FWP_CLEAR && m.jids != NULL; /* clear takes the whole set */
        struct fjob **jobs = named ? fwp_jobs_named(f->core, (enum fjob_set)set, m.jids, &n)
                                   : fjobs_set_jobs(f->core, (enum fjob_set)set, &n);
        for (size_t i = 0; i < n; i++) {
            if (what != FWP_CLEAR && !named && !fwp_filter_match(&m, jobs[i]))
                continue;
            if (what == FWP_KILL && set != FSET_DEAD)
                fjobs_kill(f->core, jobs[i], NULL, 0);
            else if (what == FWP_REQUEUE)
                fjobs_requeue(f->core, jobs[i]);
            else if (what == FWP_CLEAR || what == FWP_DISCARD)
                fjobs_discard(f->core, jobs[i]);
        }
        wq_free(jobs);
        fwp_ok(out);
    }
    fwp_filter_clear(&m);
    json_decref(op);
}

/* QUEUE's subcommand sub (0 pause, 1 resume, 2 remove) on one queue. */
static void
fwp_queue_one(struct fwp_ctx *f, int sub, struct wq_str name)
{
    if (sub == 2)
        fjobs_queue_clear(f->core, name);
    else
        fjobs_pause(f->core, name, sub == 0);
}

/* The same on every queue.  Their names are copied first: resuming one
 * serves its waiting FETCHes, which may free other queues they held. */
static void
fwp_queue_all(struct fwp_ctx *f, int sub)
{
    size_t n;
    struct fqueue **all = fjobs_queues_sorted(f->core, &n);
    char(*names)[FJOB_MAX_QUEUE + 1] = wq_malloc((n + 1) * sizeof *names);
    for (size_t i = 0; i < n; i++)
        memcpy(names[i], all[i]->name, all[i]->name_len + 1u);
    wq_free(all);
    for (size_t i = 0; i < n; i++)
        fwp_queue_one(f, sub, (struct wq_str){names[i], strlen(names[i])});
    wq_free(names);
}

/* QUEUE LATENCY name ...: for each queue, in seconds, how long the job
 * its next FETCH would take has waited in it (0 when it has none), as a
 * JSON object by name.  A read: it works while the log is read-only. */
static void
fwp_queue_latency(struct fwp_ctx *f, struct reply *out, const char *p, const char *end)
{
    json_t *times = json_object();
    while (p < end) {
        const char *next = memchr(p, ' ', (size_t)(end - p));
        size_t len = next != NULL ? (size_t)(next - p) : (size_t)(end - p);
        if (len == 1 && p[0] == '*') {
            fwp_error(out, "QUEUE LATENCY does not support wildcards");
            json_decref(times);
            return;
        }
        if (!fwp_queue_name_valid(p, len)) {
            fwp_errorf(out, "QUEUE LATENCY: queue names must match %s", FWP_QUEUE_PATTERN);
            json_decref(times);
            return;
        }
        const struct fjob *j = fjobs_queue_head(f->core, (struct wq_str){p, len});
        char name[FJOB_MAX_QUEUE + 1];
        memcpy(name, p, len);
        name[len] = '\0';
        if (j == NULL || j->enqueued_ms >= *f->now_ms)
            json_object_set_new(times, name, json_integer(0));
        else
            json_object_set_new(times, name,
                                json_real((double)(*f->now_ms - j->enqueued_ms) / 1e3));
        p += len + (next != NULL);
    }
    fwp_bulk_json(out, times, JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(times);
}

/* QUEUE PAUSE|RESUME|REMOVE name ... (or *), QUEUE LATENCY name .... */
void
fwp_queue(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    const char *sp = memchr(a.p, ' ', a.n);
    size_t verb = sp != NULL ? (size_t)(sp - a.p) : a.n;
    static const char *const subs[] = {"PAUSE", "RESUME", "REMOVE", "LATENCY"};
    int sub = -1;
    for (int i = 0; i < 4; i++)
        if (verb == strlen(subs[i]) && strncasecmp(a.p, subs[i], verb) == 0)
            sub = i;
    if (sub < 0) {
        fwp_errorf(out, "no such QUEUE subcommand: %.*s", (int)WQ_MIN(verb, 64u), a.p);
        return;
    }
    const char *p = sp != NULL ? sp + 1 : a.p + a.n, *end = a.p + a.n;
    if (sub == 3) {
        fwp_queue_latency(f, out, p, end);
        return;
    }
    if (p == end) {
        fwp_errorf(out, "QUEUE %s needs queue names", subs[sub]);
        return;
    }
    if (fwp_refuse_readonly(f, out))
        return;
    while (p < end) {
        const char *next = memchr(p, ' ', (size_t)(end - p));
        size_t len = next != NULL ? (size_t)(next - p) : (size_t)(end - p);
        if (len == 1 && p[0] == '*')
            fwp_queue_all(f, sub);
        else if (fwp_queue_name_valid(p, len))
            fwp_queue_one(f, sub, (struct wq_str){p, len});
        p += len + (next != NULL);
    }
    fwp_ok(out);
}
