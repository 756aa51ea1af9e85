/* stats.c - the figures a scrape shows, written in the Prometheus text
 * format 0.0.4 or OpenMetrics 1.0 (doc/metrics.md lists every series). */
#include "lib/wq.h"
#include "daemon/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "store/cmdlog.h"
#include "engine/core.h"
#include "lib/stats_text.h"
#include "engine/job.h"
#include "engine/queue.h"
#include "engine/workers.h"

/* ---- queues ---- */

enum { QS_READY, QS_SCHEDULED, QS_LEASED, QS_WAITING, QS_COMPLETED, QS_FAILED, QS_COUNT };
static const char *const stats_queue_states[] = {"ready",   "scheduled", "leased",
                                                 "waiting", "completed", "failed"};
_Static_assert(WQ_ARRAY_LEN(stats_queue_states) == QS_COUNT, "stats_queue_states out of sync");

/* One visible queue: its own figures plus its hidden targeted queues'. */
struct stats_queue {
    const char *name;
    uint64_t n[QS_COUNT];
    uint64_t head_age_ms; /* of the first job of the ready heap(s), 0 if none */
};

static void
stats_queue_add(struct stats_queue *e, const struct queue *q, uint64_t now_ms)
{
    e->n[QS_READY] += heap_len(&q->ready);
    e->n[QS_SCHEDULED] += heap_len(&q->scheduled);
    e->n[QS_LEASED] += q->leased;
    e->n[QS_WAITING] += q->waiting;
    e->n[QS_COMPLETED] += q->completed;
    e->n[QS_FAILED] += q->failed;
    const struct job *j = queue_peek_ready(q);
    if (j != NULL && (int64_t)now_ms > j->base_ms)
        e->head_age_ms = WQ_MAX(e->head_age_ms, now_ms - (uint64_t)j->base_ms);
}

/* The visible queues in name order, the first max of them apart (a queue
 * named "other" never), the rest summed into *other.  Only the kept ones
 * get an entry (and one more, for the caller's "other"). */
static struct stats_queue *
stats_queues(const struct core *c, uint64_t now_ms, uint64_t max, size_t *n_out,
             struct stats_queue *other, bool *has_other)
{
    enum { OTHER = UINT32_MAX };
    const struct queue_table *t = &core_ids(c)->queues;
    struct stats_queue *v = wq_calloc(WQ_MIN(max, (uint64_t)t->used) + 1, sizeof *v);
    uint32_t *slot = wq_malloc((t->cap + 1) * sizeof *slot);
    memset(slot, 0xff, (t->cap + 1) * sizeof *slot); /* OTHER */
    memset(other, 0, sizeof *other);
    other->name = "other";
    *has_other = false;
    size_t kept = 0;
    /* the index of names holds every visible queue, in order: no sort, and
     * no walk past the first max */
    for (const struct ostree_node *o = ostree_min_any(&t->in_order); o != NULL && kept < max;
         o = ostree_next_any(o)) {
        const struct queue *q = WQ_CONTAINER_OF(o, const struct queue, order);
        if (strcmp(q->name, "other") != 0) {
            slot[q->ix] = (uint32_t)kept;
            v[kept++].name = q->name;
        }
    }
    for (uint32_t ix = 0; ix < t->used; ix++) {
        const struct queue *q = t->tab[ix];
        if (q == NULL)
            continue;
        uint32_t to = slot[q->base != NULL ? q->base->ix : ix];
        *has_other |= to == OTHER;
        stats_queue_add(to == OTHER ? other : &v[to], q, now_ms);
    }
    wq_free(slot);
    *n_out = kept;
    return v;
}

static void
stats_render_queues(struct stats_out *o, const struct stats_source *src)
{
    size_t n;
    struct stats_queue other;
    bool has_other;
    struct stats_queue *v =
        stats_queues(src->core, src->now_ms, src->max_queues, &n, &other, &has_other);
    if (has_other)
        v[n++] = other;
    stats_gauge(o, "workq_queues", NULL, "Queues (job names) that hold jobs or waiting leasers.",
                core_ids(src->core)->queues.named);
    stats_family(o, "workq_jobs", "gauge", NULL,
                 "Jobs by queue and state (queues beyond -metrics-max-queues are summed into "
                 "queue=\"other\").");
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < QS_COUNT; s++)
            stats_printf(o->b, "workq_jobs{queue=\"%s\",state=\"%s\"} %llu\n", v[i].name,
                         stats_queue_states[s], (unsigned long long)v[i].n[s]);
    stats_family(o, "workq_queue_head_age_seconds", "gauge", "seconds",
                 "Age of the job first in line in the ready queue (the oldest ready job when "
                 "its jobs share a priority); 0 when none is ready.");
    char age[40];
    for (size_t i = 0; i < n; i++) {
        stats_seconds(age, sizeof age, v[i].head_age_ms * 1000000u);
        stats_printf(o->b, "workq_queue_head_age_seconds{queue=\"%s\"} %s\n", v[i].name, age);
    }
    wq_free(v);
}

/* ---- the rest ---- */

static void
stats_render_connections(struct stats_out *o, const struct stats_source *src)
{
    stats_gauge(o, "workq_connections", NULL, "Open client connections (every protocol).",
                src->connections);
    stats_counter(o, "workq_connections_accepted", NULL, "Client connections accepted.",
                  src->accepted);
    stats_counter(o, "workq_connections_refused", NULL,
                  "Client connections refused at -max-connections.", src->refused);
}

static void
stats_render_jobs(struct stats_out *o, const struct stats_source *src)
{
    const struct core_totals *t = &core_ids(src->core)->totals;
    stats_counter(o, "workq_jobs_added", NULL,
                  "Jobs created (add, schedule, run, broadcast copies).", t->added);
    stats_counter(o, "workq_jobs_leased", NULL, "Leases of jobs (every attempt).", t->leased);
    stats_counter(o, "workq_jobs_completed", NULL, "Jobs completed.", t->completed);
    stats_counter(o, "workq_jobs_failed", NULL,
                  "Jobs failed for good (out of attempts or fails, cancelled, or a failed "
                  "prerequisite).",
                  t->failed);
    stats_counter(o, "workq_jobs_retried", NULL,
                  "Jobs put back in their queue after a fail or the end of their TTR.", t->retried);
    stats_counter(o, "workq_jobs_ttr_expired", NULL, "Leases whose TTR ran out.", t->ttr_expired);
    stats_counter(o, "workq_jobs_evicted", NULL, "Jobs expired by their TTL before a result.",
                  t->evicted);
    stats_histogram(o, "workq_lease_wait_seconds",
                    "Time from a job's due time (creation, or its scheduled time) to its first "
                    "lease.",
                    &t->lease_wait);
    stats_histogram(o, "workq_result_latency_seconds",
                    "Time from a job's due time to its result (completed or failed).", &t->result);
    stats_gauge(o, "workq_parked_clients", NULL, "Clients waiting in lease, result, run or wait.",
                core_ids(src->core)->stats.parked);
    stats_gauge(o, "workq_dead_jobs", NULL,
                "Jobs in the dead set: failed for good, having asked for it (add -dead=1).",
                core_ids(src->core)->dead.count);
}

static void
stats_render_memory(struct stats_out *o, const struct stats_source *src)
{
    stats_gauge(o, "workq_memory_jobs_bytes", "bytes",
                "Bytes held by jobs, queues and clients' buffers as -max-memory counts them.",
                core_memory(src->core));
    if (src->max_memory > 0)
        stats_gauge(o, "workq_memory_limit_bytes", "bytes", "The -max-memory limit.",
                    src->max_memory);
    size_t allocated, resident;
    if (alloc_jemalloc_stats(&allocated, &resident) == 0) {
        stats_gauge(o, "workq_allocator_allocated_bytes", "bytes",
                    "jemalloc stats.allocated: bytes allocated by the application.", allocated);
        stats_gauge(o, "workq_allocator_resident_bytes", "bytes",
                    "jemalloc stats.resident: bytes in physically resident allocator pages.",
                    resident);
    }
}

static void
stats_render_cmdlog(struct stats_out *o, const struct stats_source *src)
{
    stats_gauge(o, "workq_read_only", NULL,
                "1 while the command log cannot be written and changes are refused.",
                src->readonly ? 1 : 0);
    if (src->cmdlog == NULL)
        return;
    struct cmdlog_stats cs;
    cmdlog_get_stats(src->cmdlog, &cs);
    stats_counter(o, "workq_cmdlog_written_bytes", "bytes",
                  "Command log bytes handed to the kernel.", cs.bytes_written);
    stats_histogram(o, "workq_cmdlog_sync_seconds",
                    "Duration of the command log's syncs (fdatasync, or syncfs after a new "
                    "segment).",
                    &cs.sync);
    stats_counter(o, "workq_cmdlog_sync_failures", NULL, "Command log syncs that failed.",
                  cs.sync_failures);
    stats_gauge(o, "workq_cmdlog_segments", NULL, "Segment files in the command log directory.",
                cs.segments);
    stats_gauge(o, "workq_cmdlog_segment_number", NULL, "The number of the segment being written.",
                cs.segment);
    stats_counter(o, "workq_cmdlog_cleanings", NULL, "Cleaning passes of closed segments.",
                  cs.cleanings);
    char secs[40];
    stats_seconds(secs, sizeof secs, cs.replay_ms * 1000000u);
    stats_family(o, "workq_cmdlog_replay_seconds", "gauge", "seconds",
                 "How long replaying the command log took at start.");
    stats_printf(o->b, "workq_cmdlog_replay_seconds %s\n", secs);
    stats_gauge(o, "workq_cmdlog_replay_records", NULL, "Records replayed at start.",
                cs.replay_records);
}

static void
stats_render_workers(struct stats_out *o, const struct stats_source *src)
{
    /* kinds: 1 faktory, 2 workq, 3 both */
    static const char *const kinds[] = {"faktory", "workq", "both"};
    uint64_t n[3][3] = {{0}};
    size_t count;
    struct worker **w = workers_sorted(src->core->workers, &count);
    for (size_t i = 0; i < count; i++)
        if (w[i]->kinds >= 1 && w[i]->kinds <= 3 && w[i]->state <= WORKER_TERMINATE)
            n[w[i]->kinds - 1][w[i]->state]++;
    wq_free(w);
    stats_family(o, "workq_workers", "gauge", NULL,
                 "Named workers (Faktory HELLO with a wid, Workq hello) by protocol and state.");
    for (int k = 0; k < 3; k++)
        for (int s = WORKER_RUNNING; s <= WORKER_TERMINATE; s++)
            stats_printf(o->b, "workq_workers{kind=\"%s\",state=\"%s\"} %llu\n", kinds[k],
                         worker_state_name((enum worker_state)s), (unsigned long long)n[k][s]);
}

void
stats_render(const struct stats_source *src, bool openmetrics, struct stats_buf *out)
{
    struct stats_out o = {out, openmetrics};
    if (openmetrics) {
        stats_printf(out, "# TYPE workq_build info\n# HELP workq_build The server's version and "
                          "allocator.\n");
    } else {
        stats_printf(out, "# HELP workq_build_info The server's version and allocator.\n"
                          "# TYPE workq_build_info gauge\n");
    }
    stats_printf(out, "workq_build_info{version=\"%s\",allocator=\"%s\"} 1\n", src->version,
                 src->allocator);
    char secs[40];
    stats_seconds(secs, sizeof secs, src->started_ms * 1000000u);
    stats_family(&o, "workq_start_time_seconds", "gauge", "seconds",
                 "When the server started, in seconds since the Unix epoch.");
    stats_printf(out, "workq_start_time_seconds %s\n", secs);
    stats_render_queues(&o, src);
    stats_render_jobs(&o, src);
    for (size_t i = 0; i < src->nsections; i++)
        src->sections[i].render(src->sections[i].arg, &o);
    stats_render_connections(&o, src);
    stats_render_memory(&o, src);
    stats_render_cmdlog(&o, src);
    stats_render_workers(&o, src);
    if (openmetrics)
        stats_printf(out, "# EOF\n");
}
