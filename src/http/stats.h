/* stats.h - the server's figures for the metrics endpoint (metrics.c) and
 * how they are written in the Prometheus text format 0.0.4 or OpenMetrics
 * 1.0.  The counters the core keeps (core_stats, core_totals, the queues'
 * counts, fjobs_stats) and the command log's (cmdlog_stats) are read where
 * they are; this module keeps only what no lower layer can see: commands by
 * outcome (counted by the Workq protocol module) and connections (counted
 * by the listener).  Everything here belongs to the loop thread: plain
 * increments, no atomics.  Rendering never walks jobs: per queue it reads
 * counts the queues keep, so a scrape costs O(queues log queues). */
#ifndef WQ_STATS_H
#define WQ_STATS_H

#include "lib/wq.h"

struct cmdlog;
struct core;

/* How a command ended, from its reply's first word. */
enum stats_outcome {
    STATS_OK,           /* +OK... */
    STATS_TIMEOUT,      /* -TIMEOUT */
    STATS_NOT_FOUND,    /* -NOT-FOUND */
    STATS_CLIENT_ERROR, /* -CLIENT-ERROR ... */
    STATS_SERVER_ERROR, /* -SERVER-ERROR ... (out of memory, read-only) */
    STATS_ABANDONED,    /* a waiting command whose client left first */
    STATS_OUTCOME_COUNT
};

/* Room for the Workq commands and "unknown" (cmd.c checks it). */
#define STATS_MAX_COMMANDS 24

struct stats {
    uint64_t commands[STATS_MAX_COMMANDS][STATS_OUTCOME_COUNT];
    uint64_t accepted; /* connections accepted, every listener */
    uint64_t refused;  /* refused at -max-connections */
};

/* The label value of outcome o ("ok", "timeout", ...). */
const char *stats_outcome_name(enum stats_outcome o);
/* The outcome of a reply starting with reply[0..len) (at least its first
 * word): STATS_SERVER_ERROR for anything unrecognised. */
enum stats_outcome stats_outcome_of(const char *reply, size_t len);

/* What a scrape reads. */
struct stats_source {
    const struct core *core;
    struct cmdlog *cmdlog;       /* NULL: no command log */
    const struct stats *counted; /* NULL: none (the command and connection series are left out) */
    const char *const *commands; /* the label values of counted->commands' rows */
    size_t ncommands;
    uint64_t connections; /* open now */
    bool readonly;
    bool faktory;          /* the Faktory listener is on */
    uint64_t max_queues;   /* -metrics-max-queues */
    uint64_t max_memory;   /* -max-memory, 0: none */
    uint64_t now_ms;       /* Unix ms */
    uint64_t started_ms;   /* Unix ms */
    const char *version;   /* PACKAGE_VERSION */
    const char *allocator; /* alloc_name() */
};

/* A growing text buffer. */
struct stats_buf {
    char *p;
    size_t len, cap;
};

/* Append the exposition of src to out: the Prometheus text format 0.0.4,
 * or with openmetrics OpenMetrics 1.0 text (ending "# EOF\n").  Queues
 * beyond max_queues (by name, in byte order: the first max_queues names
 * get series of their own) are summed into queue="other", as is a queue
 * named "other".  Aborts if memory is exhausted. */
void stats_render(const struct stats_source *src, bool openmetrics, struct stats_buf *out);
/* Free out's bytes. */
void stats_buf_clear(struct stats_buf *out);

#endif /* WQ_STATS_H */
