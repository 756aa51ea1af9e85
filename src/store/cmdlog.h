/* cmdlog.h - the command log: every state change appended to segment files
 * in Workq's format (cmdlog_codec.h), replayed at start.
 *
 * The event loop gathers the records of one loop pass in memory
 * (cmdlog_append) and hands them to the kernel with one write at the end of
 * the pass (cmdlog_write), before that pass's replies leave: a reply waits
 * until cmdlog_released() covers every record appended before it.  So a
 * crash of the process never loses an acknowledged change.  The policies
 * differ only in when the disk is forced, which a sync thread does so that
 * the loop never waits for it:
 *   os        never; the kernel writes dirty pages back on its own
 *   interval  fdatasync at most every sync_int_ms
 *   always    fdatasync as soon as records are written (group commit: one
 *             sync covers every record written while the last one ran), and
 *             replies wait for it
 * A failed write puts the log in read-only mode (cmdlog_readonly): the
 * records stay in memory, their replies stay held, and the next write
 * retries after CMDLOG_RETRY_MS.  A failed sync does the same until a sync
 * succeeds.  Under always, the open segment keeps 4 MiB allocated past its
 * records; a disk that cannot give them turns the log read-only at once,
 * so that a full disk refuses new changes rather than holding replies.  A cleaner thread rewrites
 * closed segments without the records of jobs that are gone.  The threads report to the loop
 * through an eventfd (cmdlog_event_fd). */
#ifndef WQ_CMDLOG_H
#define WQ_CMDLOG_H

#include "lib/wq.h"
#include "store/cmdlog_codec.h"
#include "lib/hist.h"

struct cmdlog_replay_ops;

enum cmdlog_sync { CMDLOG_SYNC_INTERVAL, CMDLOG_SYNC_OS, CMDLOG_SYNC_ALWAYS };

struct cmdlog_config {
    const char *dir;
    uint64_t seg_size;
    enum cmdlog_sync sync;
    uint64_t sync_int_ms;
    uint64_t clean_int_ms;
    bool truncate_damage; /* cut the log at damage instead of refusing to start */
};

#define CMDLOG_DEFAULT_SEG_SIZE  (64u << 20)
#define CMDLOG_DEFAULT_SYNC_INT  1000u
#define CMDLOG_DEFAULT_CLEAN_INT 300000u
/* How long after a failed write or sync the next attempt is made. */
#define CMDLOG_RETRY_MS 200

struct cmdlog;

/* Open (creating it if needed) and lock the directory, and remove the
 * temporary files of a cleaning pass that was cut short.  NULL after
 * logging why. */
struct cmdlog *cmdlog_open(const struct cmdlog_config *cfg);
/* Replay every segment as of now_ms through ops (cmdlog_files.h: for a
 * core, cmdlog_replay(l, &core_replay_ops, core, now_ms)); cut a torn
 * tail.  0, or -1 after logging the damaged segment and offset. */
int cmdlog_replay(struct cmdlog *l, const struct cmdlog_replay_ops *ops, void *arg,
                  uint64_t now_ms);
/* Start the sync thread (not under os) and the cleaner; 0 or -1. */
int cmdlog_start(struct cmdlog *l);
/* Write and sync everything appended (blocking: only at shutdown), stop the
 * threads, free l. */
void cmdlog_close(struct cmdlog *l);

/* Append one record to the pass's batch (a core_record_fn: arg is the
 * cmdlog).  Never touches the disk. */
void cmdlog_append(void *arg, const struct cmdlog_rec *r);
/* Hand the batch to the kernel: one write per segment it spans (a new
 * segment is created, with its header, when the current one is full).
 * 0 when everything appended is written; -1 while writes fail, or while
 * the preallocated headroom cannot be had (read-only; until
 * CMDLOG_RETRY_MS after a failure it does not even try). */
int cmdlog_write(struct cmdlog *l);
/* Records appended so far (a sequence number). */
uint64_t cmdlog_appended(const struct cmdlog *l);
/* Records whose replies may leave: those written, and under always those
 * synced as of the last cmdlog_event_ack. */
uint64_t cmdlog_released(const struct cmdlog *l);
/* Is the log read-only (a write failed, or a sync, as of the last
 * cmdlog_event_ack, or the headroom could not be allocated)? */
bool cmdlog_readonly(const struct cmdlog *l);
/* Should the event loop poll for events rather than sleep?  Under always,
 * after a sync of CMDLOG_POLL_MIN_BATCH records or more that took less than
 * CMDLOG_POLL_MAX_SYNC_NS: while it holds replies for a sync, for at most
 * CMDLOG_POLL_NS after its last progress (a record appended, or replies
 * released). */
bool cmdlog_poll(struct cmdlog *l);
/* Must a reply made now wait for cmdlog_released to reach cmdlog_appended?
 * mark is cmdlog_appended as the command began: while read-only, a reply
 * that appended nothing since (a read, a refusal) goes out at once. */
bool cmdlog_holds_replies(const struct cmdlog *l, uint64_t mark);

/* Readable when the threads have news; cmdlog_event_ack takes it. */
int cmdlog_event_fd(const struct cmdlog *l);
void cmdlog_event_ack(struct cmdlog *l);

/* What the metrics show of the log.  Written by the loop, except sync,
 * sync_failures and cleanings, which the threads keep under their lock. */
struct cmdlog_stats {
    uint64_t bytes_written;  /* record bytes handed to the kernel since start */
    uint64_t segment;        /* the number of the segment being written */
    uint64_t segments;       /* segment files in the directory */
    uint64_t replay_records; /* records read back at start */
    uint64_t replay_ms;      /* how long replay took */
    struct hist sync;        /* fdatasync / syncfs durations */
    uint64_t sync_failures;
    uint64_t cleanings; /* cleaning passes */
};

/* Fill out (takes the threads' lock briefly; lists the directory). */
void cmdlog_get_stats(struct cmdlog *l, struct cmdlog_stats *out);

/* Parse "os", "interval" or "always"; 0 or -1. */
int cmdlog_sync_parse(const char *s, enum cmdlog_sync *out);

#endif /* WQ_CMDLOG_H */
