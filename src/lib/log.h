/* log.h - leveled logging, one line per event, to stderr (the default,
 * which journald captures), a file (reopened on SIGHUP) or syslog.
 * Levels follow syslog names; the level is checked before formatting.
 * Lines read "<time> <level> <event> key=value ...": the time is left out
 * when stderr is the journal or syslog, which stamp lines themselves. */
#ifndef WQ_LOG_H
#define WQ_LOG_H

#include "lib/wq.h"

#include <sys/types.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG, LOG_LVL_COUNT };

enum log_target { LOG_TO_STDERR, LOG_TO_FILE, LOG_TO_SYSLOG };

extern enum log_level wq_log_level;

/* Write one formatted line at level lvl (use the wq_log macro instead).
 * Safe from any thread. */
void wq_log_write(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a level name ("error", "warn", "info", "debug"; also "warning",
 * "err"); -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);
/* The name of a level. */
const char *log_level_name(enum log_level lvl);

/* Send lines to target from now on (path for LOG_TO_FILE, appended to).
 * Returns 0, or -1 with errno set when the file cannot be opened. */
int log_open(enum log_target target, const char *path);
/* Reopen the log file (after logrotate moved it); a no-op for the other
 * targets.  On failure the old file stays in use and -1 is returned. */
int log_reopen(void);
/* Give the log file (the one open, a regular file) to uid:gid, so that
 * SIGHUP can reopen it after privileges are dropped; 0 for the other
 * targets, or -1 with errno. */
int log_give(uid_t uid, gid_t gid);
/* Back to stderr, closing a file or syslog. */
void log_close(void);

#define wq_log(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) <= wq_log_level)                                                                 \
            wq_log_write((lvl), __VA_ARGS__);                                                      \
    } while (0)

#endif /* WQ_LOG_H */
