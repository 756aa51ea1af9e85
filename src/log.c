/* log.c - leveled logging to stderr. */
#include "wq.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum log_level wq_log_level = LOG_LVL_INFO;

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};
_Static_assert(WQ_ARRAY_LEN(log_level_names) == LOG_LVL_COUNT, "log_level_names out of sync");

__attribute__((format(printf, 2, 0))) static void
log_vwrite(const char *level, const char *fmt, va_list ap)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ %s ", ts.tv_nsec / 1000000, level);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    /* One fputs per line keeps lines whole when several processes share stderr. */
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    fputs(line, stderr);
}

void
wq_log_write(enum log_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(log_level_names[lvl], fmt, ap);
    va_end(ap);
}

int
log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(log_level_names); i++) {
        if (strcmp(s, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void
wq_panic(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wq_log_write(LOG_LVL_ERROR, "panic file=%s line=%d: %s", file, line, msg);
    abort();
}
