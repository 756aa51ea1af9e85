/* cmdlog_clean.h - the cleaning pass of a command-log directory, run by
 * the cleaner thread (it blocks on disk). */
#ifndef WQ_CMDLOG_CLEAN_H
#define WQ_CMDLOG_CLEAN_H

#include "lib/wq.h"

/* The memory a cleaning pass may spend on its notes of ended jobs. */
#define CMDLOG_CLEAN_BUDGET (16u << 20)

/* Rewrite the segments numbered below `below` without the records of jobs
 * that are gone (deleted, expired, acknowledged or discarded in those
 * segments), each through a temporary file, fsync and rename; a segment
 * left empty is removed.  A segment that does not read cleanly to its end
 * is left as it is.  The pass works in chunks whose notes of ended jobs
 * stay within about `budget` bytes (at least one job a chunk).  0, or -1
 * after logging. */
int cmdlog_clean(int dirfd, uint64_t below, size_t budget);

#endif /* WQ_CMDLOG_CLEAN_H */
