/* log.h - leveled logging to stderr, one line per event.
 * Levels follow syslog names; the level is checked before formatting. */
#ifndef WQ_LOG_H
#define WQ_LOG_H

#include "wq.h"

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG, LOG_LVL_COUNT };

extern enum log_level wq_log_level;

/* Write one formatted line at level lvl (use the wq_log macro instead). */
void wq_log_write(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a level name ("error", "warn", "info", "debug"); -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);

#define wq_log(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) <= wq_log_level)                                                                 \
            wq_log_write((lvl), __VA_ARGS__);                                                      \
    } while (0)

#endif /* WQ_LOG_H */
