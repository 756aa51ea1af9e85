/* cmd_stats.h - the Workq commands' figures: each command counted by the
 * outcome its reply's first word tells, and their series on /metrics
 * (workq_commands_total).  Belongs to the loop thread: plain increments. */
#ifndef WQ_CMD_STATS_H
#define WQ_CMD_STATS_H

#include "lib/wq.h"

struct stats_out;

/* How a command ended, from its reply's first word. */
enum stats_outcome {
    STATS_OK,           /* +OK... */
    STATS_TIMEOUT,      /* -TIMEOUT */
    STATS_NOT_FOUND,    /* -NOT-FOUND */
    STATS_CLIENT_ERROR, /* -CLIENT-ERROR ... */
    STATS_SERVER_ERROR, /* -SERVER-ERROR ... (out of memory, read-only) */
    STATS_ABANDONED,    /* a waiting command whose client left first */
    STATS_OUTCOME_COUNT
};

/* Room for the Workq commands and "unknown" (cmd.c checks it). */
#define STATS_MAX_COMMANDS 24

struct cmd_stats {
    uint64_t commands[STATS_MAX_COMMANDS][STATS_OUTCOME_COUNT];
};

/* The label value of outcome o ("ok", "timeout", ...). */
const char *stats_outcome_name(enum stats_outcome o);
/* The outcome of a reply starting with reply[0..len) (at least its first
 * word): STATS_SERVER_ERROR for anything unrecognised. */
enum stats_outcome stats_outcome_of(const char *reply, size_t len);

/* Write the family workq_commands: row i of s named names[i], i < n. */
void cmd_stats_render(struct stats_out *o, const struct cmd_stats *s, const char *const *names,
                      size_t n);

#endif /* WQ_CMD_STATS_H */
