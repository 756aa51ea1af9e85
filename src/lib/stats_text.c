/* stats_text.c - the Prometheus and OpenMetrics text writer (stats_text.h). */
#include "lib/wq.h"
#include "lib/stats_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/hist.h"

void
stats_printf(struct stats_buf *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = o->cap - o->len;
        int n = vsnprintf(o->p ? o->p + o->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            wq_panic(__FILE__, __LINE__, "vsnprintf failed");
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        o->cap = WQ_MAX(o->cap * 2, o->len + (size_t)n + 4096);
        o->p = wq_realloc(o->p, o->cap);
    }
}

void
stats_buf_clear(struct stats_buf *out)
{
    wq_free(out->p);
    memset(out, 0, sizeof *out);
}

/* The metadata of a family.  name is the family's name: a counter's
 * samples add _total (which 0.0.4 also puts in HELP and TYPE); unit, for
 * OpenMetrics' UNIT line, is the name's last word or NULL. */
void
stats_family(struct stats_out *o, const char *name, const char *type, const char *unit,
             const char *help)
{
    const char *sfx = strcmp(type, "counter") == 0 && !o->om ? "_total" : "";
    if (o->om) {
        stats_printf(o->b, "# TYPE %s %s\n", name, type);
        if (unit != NULL)
            stats_printf(o->b, "# UNIT %s %s\n", name, unit);
        stats_printf(o->b, "# HELP %s %s\n", name, help);
    } else {
        stats_printf(o->b, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, sfx, help, name, sfx, type);
    }
}

void
stats_gauge(struct stats_out *o, const char *name, const char *unit, const char *help, uint64_t v)
{
    stats_family(o, name, "gauge", unit, help);
    stats_printf(o->b, "%s %llu\n", name, (unsigned long long)v);
}

void
stats_counter(struct stats_out *o, const char *name, const char *unit, const char *help, uint64_t v)
{
    stats_family(o, name, "counter", unit, help);
    stats_printf(o->b, "%s_total %llu\n", name, (unsigned long long)v);
}

/* ns as seconds, exactly: "1.5", "0.000250000" trimmed to "0.00025". */
void
stats_seconds(char *out, size_t size, uint64_t ns)
{
    int n = snprintf(out, size, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
                     (unsigned long long)(ns % 1000000000u));
    while (n > 0 && out[n - 1] == '0' && out[n - 2] != '.')
        out[--n] = '\0';
}

void
stats_histogram(struct stats_out *o, const char *name, const char *help, const struct hist *h)
{
    stats_family(o, name, "histogram", "seconds", help);
    uint64_t cum = 0;
    char le[40];
    for (uint32_t i = 0; i < h->nbounds; i++) {
        cum += h->counts[i];
        stats_seconds(le, sizeof le, h->bounds[i]);
        stats_printf(o->b, "%s_bucket{le=\"%s\"} %llu\n", name, le, (unsigned long long)cum);
    }
    stats_printf(o->b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
    stats_seconds(le, sizeof le, h->sum_ns);
    stats_printf(o->b, "%s_sum %s\n%s_count %llu\n", name, le, name, (unsigned long long)h->count);
}
