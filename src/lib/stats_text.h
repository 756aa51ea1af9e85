/* stats_text.h - writing figures in the Prometheus text format 0.0.4 or
 * OpenMetrics 1.0: a growing buffer, a family's metadata, gauges, counters
 * and histograms.  Whoever has figures to show (the engine's, the command
 * log's, each front-end's) writes them with these; the metrics endpoint
 * serves the buffer. */
#ifndef WQ_STATS_TEXT_H
#define WQ_STATS_TEXT_H

#include "lib/wq.h"

struct hist;

/* A growing text buffer. */
struct stats_buf {
    char *p;
    size_t len, cap;
};

/* Where a scrape is written, and in which format. */
struct stats_out {
    struct stats_buf *b;
    bool om; /* OpenMetrics */
};

/* Append printf-style text; aborts if memory is exhausted. */
void stats_printf(struct stats_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Free out's bytes. */
void stats_buf_clear(struct stats_buf *out);

/* The metadata of a family.  name is the family's name: a counter's
 * samples add _total (which 0.0.4 also puts in HELP and TYPE); unit, for
 * OpenMetrics' UNIT line, is the name's last word or NULL. */
void stats_family(struct stats_out *o, const char *name, const char *type, const char *unit,
                  const char *help);
/* A family of one gauge sample, or of one counter sample. */
void stats_gauge(struct stats_out *o, const char *name, const char *unit, const char *help,
                 uint64_t v);
void stats_counter(struct stats_out *o, const char *name, const char *unit, const char *help,
                   uint64_t v);
/* ns as seconds, exactly: "1.5", "0.000250000" trimmed to "0.00025". */
void stats_seconds(char *out, size_t size, uint64_t ns);
/* A histogram of durations, in seconds. */
void stats_histogram(struct stats_out *o, const char *name, const char *help, const struct hist *h);

#endif /* WQ_STATS_TEXT_H */
