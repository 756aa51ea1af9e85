/* stats.h - the server's figures, which the metrics endpoint serves: the
 * engine's (core_stats, core_totals, the queues' counts, the workers), the
 * command log's (cmdlog_stats) and the connections', read where they are,
 * and each front-end's own series, which it writes itself (a section).
 * Written in the Prometheus text format 0.0.4 or OpenMetrics 1.0
 * (lib/stats_text.h).  Rendering never walks jobs: per queue it reads
 * counts the queues keep, so a scrape costs O(queues log queues). */
#ifndef WQ_STATS_H
#define WQ_STATS_H

#include "lib/wq.h"
#include "lib/stats_text.h"

struct cmdlog;
struct core;

/* Series someone else writes: a front-end's. */
struct stats_section {
    void (*render)(void *arg, struct stats_out *o);
    void *arg;
};

/* What a scrape reads. */
struct stats_source {
    const struct core *core;
    struct cmdlog *cmdlog;                /* NULL: no command log */
    const struct stats_section *sections; /* the front-ends', after the jobs' series */
    size_t nsections;
    uint64_t connections; /* open now */
    uint64_t accepted;    /* connections accepted since start, every listener */
    uint64_t refused;     /* refused at -max-connections */
    bool readonly;
    uint64_t max_queues;   /* -metrics-max-queues */
    uint64_t max_memory;   /* -max-memory, 0: none */
    uint64_t now_ms;       /* Unix ms */
    uint64_t started_ms;   /* Unix ms */
    const char *version;   /* PACKAGE_VERSION */
    const char *allocator; /* alloc_name() */
};

/* Append the exposition of src to out: the Prometheus text format 0.0.4,
 * or with openmetrics OpenMetrics 1.0 text (ending "# EOF\n").  Queues
 * beyond max_queues (by name, in byte order: the first max_queues names
 * get series of their own) are summed into queue="other", as is a queue
 * named "other".  Aborts if memory is exhausted. */
void stats_render(const struct stats_source *src, bool openmetrics, struct stats_buf *out);

#endif /* WQ_STATS_H */
