/* fwp_admin.c - the Faktory commands that look at or change everything:
 * INFO, FLUSH and QUEUE (PAUSE, RESUME, REMOVE, LATENCY); MUTATE is
 * fwp_mutate.c's. */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <string.h>
#include <time.h>

#include "lib/alloc.h"
#include "config.h"
#include "engine/workers.h"

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
    const struct fjobs_stats *s = &f->fjobs->stats;
    struct core_space_counts k;
    fjobs_counts(f->fjobs, &k);
    json_t *queues = json_object();
    size_t n;
    struct queue **qs = fjobs_queues_sorted(f->fjobs, &n);
    for (size_t i = 0; i < n; i++)
        json_object_set_new(queues, qs[i]->name, json_integer(heap_len(&qs[i]->ready)));
    wq_free(qs);
    json_t *tasks = json_pack(
        "{s:{s:I, s:I}, s:o, s:o, s:o, s:{s:i, s:I}}", "Busy", "reaped", (json_int_t)s->expired,
        "size", (json_int_t)k.working, "Dead", fwp_info_scanner(s->dead_expired, k.dead), "Retries",
        fwp_info_scanner(s->due_retries, k.retry), "Scheduled",
        fwp_info_scanner(s->due_scheduled, k.scheduled), "Workers", "reaped", 0, "size",
        (json_int_t)workers_count_kind(f->core->workers, WORKER_FAKTORY));
    return json_pack("{s:I, s:I, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I}, s:o}", "total_failures",
                     (json_int_t)s->failures, "total_processed", (json_int_t)s->processed,
                     "total_enqueued", (json_int_t)k.enqueued, "total_queues", (json_int_t)n,
                     "queues", queues, "sets", "dead", (json_int_t)k.dead, "retries",
                     (json_int_t)k.retry, "scheduled", (json_int_t)k.scheduled, "working",
                     (json_int_t)k.working, "tasks", tasks);
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
        fjobs_flush(f->fjobs);
        fwp_ok(out);
    }
}

/* QUEUE's subcommand sub (0 pause, 1 resume, 2 remove) on one queue. */
static void
fwp_queue_one(struct fwp_ctx *f, int sub, struct wq_str name)
{
    if (sub == 2)
        fjobs_queue_clear(f->fjobs, name);
    else
        fjobs_pause(f->fjobs, name, sub == 0);
}

/* The same on every queue.  Their names are copied first: resuming one
 * serves its waiting FETCHes, which may free other queues they held. */
static void
fwp_queue_all(struct fwp_ctx *f, int sub)
{
    size_t n;
    struct queue **all = fjobs_queues_sorted(f->fjobs, &n);
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
        const struct job *j = fjobs_queue_head(f->fjobs, (struct wq_str){p, len});
        char name[FJOB_MAX_QUEUE + 1];
        memcpy(name, p, len);
        name[len] = '\0';
        if (j == NULL || fjob_enqueued_ms(j) >= *f->now_ms)
            json_object_set_new(times, name, json_integer(0));
        else
            json_object_set_new(times, name,
                                json_real((double)(*f->now_ms - fjob_enqueued_ms(j)) / 1e3));
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
