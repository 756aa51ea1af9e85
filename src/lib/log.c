/* log.c - leveled logging to stderr, a file or syslog. */
#include "lib/wq.h"
#include "lib/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

enum log_level wq_log_level = LOG_LVL_INFO;

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};
_Static_assert(WQ_ARRAY_LEN(log_level_names) == LOG_LVL_COUNT, "log_level_names out of sync");
/* sd-daemon(3) prefixes and syslog priorities of the levels. */
static const int log_priorities[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

/* Atomic: the command log's threads log while the loop thread may switch
 * from stderr to syslog (at the end of a -d start-up). */
static _Atomic enum log_target log_target = LOG_TO_STDERR;
static _Atomic int log_fd = STDERR_FILENO; /* stderr, or the log file */
static char log_path[4096];
/* stderr is the journal: prefix lines with <priority>, no time stamp. */
static int log_journal = -1; /* -1: not looked at yet */

/* True when fd 2 is the stream systemd named in $JOURNAL_STREAM. */
static bool
log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
        return false;
    if (fstat(STDERR_FILENO, &st) != 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

__attribute__((format(printf, 2, 0))) static void
log_vwrite(enum log_level lvl, const char *fmt, va_list ap)
{
    char line[2048];
    int n = 0;

    enum log_target target = log_target;
    if (target == LOG_TO_SYSLOG) {
        vsnprintf(line, sizeof line, fmt, ap);
        syslog(log_priorities[lvl], "%s %s", log_level_names[lvl], line);
        return;
    }
    if (target == LOG_TO_STDERR && log_journal < 0)
        log_journal = log_stderr_is_journal();
    if (target == LOG_TO_STDERR && log_journal) {
        n = snprintf(line, sizeof line, "<%d>%s ", log_priorities[lvl], log_level_names[lvl]);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
        n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ %s ", ts.tv_nsec / 1000000,
                      log_level_names[lvl]);
    }
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2; /* cut, but still one whole line */
    line[len++] = '\n';
    /* One write per line keeps lines whole between threads and processes
     * sharing the file (O_APPEND). */
    ssize_t w;
    do
        w = write(log_fd, line, len);
    while (w < 0 && errno == EINTR);
}

void
wq_log_write(enum log_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(lvl, fmt, ap);
    va_end(ap);
}

int
log_level_parse(const char *s, enum log_level *out)
{
    static const struct {
        const char *name;
        enum log_level lvl;
    } aliases[] = {{"err", LOG_LVL_ERROR}, {"warning", LOG_LVL_WARN}};
    for (size_t i = 0; i < WQ_ARRAY_LEN(log_level_names); i++) {
        if (strcasecmp(s, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    for (size_t i = 0; i < WQ_ARRAY_LEN(aliases); i++) {
        if (strcasecmp(s, aliases[i].name) == 0) {
            *out = aliases[i].lvl;
            return 0;
        }
    }
    return -1;
}

const char *
log_level_name(enum log_level lvl)
{
    return log_level_names[lvl];
}

/* The log file, never through a symlink (root opens it, maybe in a
 * directory another user may write). */
static int
log_open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
}

int
log_give(uid_t uid, gid_t gid)
{
    struct stat st;
    if (log_target != LOG_TO_FILE)
        return 0;
    if (fstat(log_fd, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    return fchown(log_fd, uid, gid);
}

int
log_open(enum log_target target, const char *path)
{
    int fd = -1;
    if (target == LOG_TO_FILE) {
        fd = log_open_file(path);
        if (fd < 0)
            return -1;
    }
    log_close();
    if (target == LOG_TO_FILE) {
        snprintf(log_path, sizeof log_path, "%s", path);
        log_fd = fd;
    } else if (target == LOG_TO_SYSLOG) {
        openlog("workq-server", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    }
    log_target = target; /* last: other threads see a ready target */
    return 0;
}

int
log_reopen(void)
{
    if (log_target != LOG_TO_FILE)
        return 0;
    int fd = log_open_file(log_path);
    if (fd < 0)
        return -1;
    /* dup2 swaps the file under log_fd in one step, so a line written by
     * another thread meanwhile goes to the old file or the new, whole. */
    int rc = dup3(fd, log_fd, O_CLOEXEC);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc < 0 ? -1 : 0;
}

void
log_close(void)
{
    if (log_target == LOG_TO_FILE && log_fd != STDERR_FILENO)
        close(log_fd);
    else if (log_target == LOG_TO_SYSLOG)
        closelog();
    log_target = LOG_TO_STDERR;
    log_fd = STDERR_FILENO;
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
