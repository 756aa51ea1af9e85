/* cmdlog_files.h - the segment files of a command-log directory: listing,
 * opening and truncating them (cmdlog_files.c), and replaying them through
 * the caller's callbacks (cmdlog_files_replay.c); cleaning is
 * cmdlog_clean.c.  Used by cmdlog.c; all of it blocks on disk, so only
 * start-up and the cleaner thread call it. */
#ifndef WQ_CMDLOG_FILES_H
#define WQ_CMDLOG_FILES_H

#include "lib/wq.h"

#include <sys/types.h>

struct cmdlog_rec;

/* Where replay puts the records it reads back: the caller's state (for a
 * core, the engine's core_replay_ops).  Each callback gets the arg given
 * with the ops. */
struct cmdlog_replay_ops {
    /* Apply record r as of now_ms. */
    void (*apply)(void *arg, const struct cmdlog_rec *r, uint64_t now_ms);
    /* The jobs held now, Workq's and Faktory's (for the log lines). */
    void (*jobs)(const void *arg, uint64_t *workq, uint64_t *faktory);
};

/* The segment numbers in directory dirfd, ascending (names that are not a
 * segment's are passed over).  With stray (*stray NULL), also the first
 * name that looks like a segment's and is none (cmdlog_segment_parse -1)
 * into *stray, to free with wq_free (NULL if there is none).  0 or -1
 * (errno). */
int cmdlog_files_list(int dirfd, uint64_t **nums, size_t *count, char **stray);

/* Remove the temporary files (NNNNNNNNN.log.tmp) of a cleaning pass that
 * was cut short: the segments they were to replace are still whole.  0 or
 * -1 (errno). */
int cmdlog_files_remove_tmp(int dirfd);

/* Open segment n with these open(2) flags (O_CLOEXEC is added) and give
 * its size.  Only a regular file is opened: never through a symbolic link
 * (ELOOP), never waiting on a FIFO; anything else is -1 with EISDIR for a
 * directory, EINVAL for the rest.  The fd, or -1 (errno). */
int cmdlog_files_open(int dirfd, uint64_t n, int flags, uint64_t *size);

/* Truncate segment n to size bytes and sync it.  0 or -1 (errno). */
int cmdlog_files_truncate(int dirfd, uint64_t n, uint64_t size);

/* What a file of this mode is, when it is not a regular file ("a symbolic
 * link", "a directory", "a fifo", ...); NULL for a regular file. */
const char *cmdlog_files_kind(mode_t mode);

/* Replay every segment of directory dirfd (whose path is dir, for the log)
 * as of now_ms: ops->apply(arg, record, now_ms) for each record in order
 * (for a core, the caller then runs core_advance to expire the jobs whose
 * life ended meanwhile).  Segments are read in bounded chunks,
 * never whole.  Zeros after a segment's last record are padding
 * (preallocated blocks) and are cut off.  A torn tail (a partial or
 * garbled end of the last segment after which no valid record starts:
 * cmdlog_scan) is cut off with a log line.  Other damage stops with -1
 * after a log line naming segment and offset, unless truncate is set: then
 * the log is cut there (that segment truncated, later ones removed).  A
 * file named like a segment that is not one (cmdlog_segment_parse), or a
 * segment that is not a regular file, stops with -1 before anything is
 * read, after a log line giving its path and why.  On success *last and
 * *last_size give the last segment and its size (0, 0 if none). */
int cmdlog_files_replay(int dirfd, const char *dir, const struct cmdlog_replay_ops *ops, void *arg,
                        uint64_t now_ms, bool truncate, uint64_t *last, uint64_t *last_size,
                        uint64_t *records);

#endif /* WQ_CMDLOG_FILES_H */
