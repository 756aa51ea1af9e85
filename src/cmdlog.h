/* cmdlog.h - the command log: every state change appended to segment files
 * in Workq's format (cmdlog_codec.h), replayed at start.
 *
 * The event loop appends records to an in-memory batch (cmdlog_append,
 * never blocking on disk); a writer thread writes batches to the current
 * segment, rotates segments, and syncs them by the policy:
 *   os        write(2) only; the kernel decides when data reaches the disk
 *   interval  fdatasync at most every sync_int_ms
 *   always    fdatasync every batch (group commit); with this policy the
 *             server holds each reply until cmdlog_durable() covers it.
 * A write error puts the log in read-only mode (cmdlog_readonly): the
 * batch is kept and retried until it succeeds.  A cleaner thread rewrites
 * closed segments without the records of jobs that are gone.  The threads
 * report to the loop through an eventfd (cmdlog_event_fd). */
#ifndef WQ_CMDLOG_H
#define WQ_CMDLOG_H

#include "wq.h"
#include "cmdlog_codec.h"

struct core;

enum cmdlog_sync { CMDLOG_SYNC_INTERVAL, CMDLOG_SYNC_OS, CMDLOG_SYNC_ALWAYS };

struct cmdlog_config {
    const char      *dir;
    uint64_t         seg_size;
    enum cmdlog_sync sync;
    uint64_t         sync_int_ms;
    uint64_t         clean_int_ms;
    bool             truncate_damage; /* cut the log at damage instead of refusing to start */
};

#define CMDLOG_DEFAULT_SEG_SIZE  (64u << 20)
#define CMDLOG_DEFAULT_SYNC_INT  1000u
#define CMDLOG_DEFAULT_CLEAN_INT 300000u

struct cmdlog;

/* Open (creating it if needed) and lock the directory.  NULL after logging
 * why. */
struct cmdlog *cmdlog_open(const struct cmdlog_config *cfg);
/* Replay every segment into core as of now_ms; cut a torn tail.  0, or -1
 * after logging the damaged segment and offset. */
int            cmdlog_replay(struct cmdlog *l, struct core *core, uint64_t now_ms);
/* Start the writer and cleaner threads; 0 or -1. */
int            cmdlog_start(struct cmdlog *l);
/* Write and sync everything appended, stop the threads, free l. */
void           cmdlog_close(struct cmdlog *l);

/* Append one record (a core_log_fn: arg is the cmdlog). */
void     cmdlog_append(void *arg, const struct cmdlog_rec *r);
/* Records appended so far (a sequence number). */
uint64_t cmdlog_appended(const struct cmdlog *l);
/* Records known to be written (and synced, under the always policy), and
 * whether the log is read-only, as of the last cmdlog_event_ack. */
uint64_t cmdlog_durable(const struct cmdlog *l);
bool     cmdlog_readonly(const struct cmdlog *l);
/* Does a reply have to wait for cmdlog_durable to reach cmdlog_appended?
 * (Under always, unless read-only.) */
bool     cmdlog_holds_replies(const struct cmdlog *l);

/* Readable when the threads have news; cmdlog_event_ack takes it. */
int  cmdlog_event_fd(const struct cmdlog *l);
void cmdlog_event_ack(struct cmdlog *l);

/* Parse "os", "interval" or "always"; 0 or -1. */
int cmdlog_sync_parse(const char *s, enum cmdlog_sync *out);

#endif /* WQ_CMDLOG_H */
