/* cmd_stats.c - the Workq commands' outcomes and their series (cmd_stats.h). */
#include "lib/wq.h"
#include "workq/cmd_stats.h"

#include <string.h>

#include "lib/stats_text.h"

static const char *const stats_outcome_names[] = {
    "ok", "timeout", "not_found", "client_error", "server_error", "abandoned",
};
_Static_assert(WQ_ARRAY_LEN(stats_outcome_names) == STATS_OUTCOME_COUNT,
               "stats_outcome_names out of sync");

const char *
stats_outcome_name(enum stats_outcome o)
{
    return stats_outcome_names[o];
}

/* Does reply[0..len) start with word, followed by its end, CR or space? */
static bool
stats_word(const char *reply, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(reply, word, n) == 0 &&
           (len == n || reply[n] == '\r' || reply[n] == ' ' || reply[n] == '\n');
}

enum stats_outcome
stats_outcome_of(const char *reply, size_t len)
{
    if (len > 0 && reply[0] == '+')
        return STATS_OK;
    if (stats_word(reply, len, "-TIMEOUT"))
        return STATS_TIMEOUT;
    if (stats_word(reply, len, "-NOT-FOUND"))
        return STATS_NOT_FOUND;
    if (stats_word(reply, len, "-CLIENT-ERROR"))
        return STATS_CLIENT_ERROR;
    return STATS_SERVER_ERROR;
}

void
cmd_stats_render(struct stats_out *o, const struct cmd_stats *s, const char *const *names, size_t n)
{
    stats_family(o, "workq_commands", "counter", NULL,
                 "Workq protocol commands by name and outcome (unknown names count as "
                 "command=\"unknown\").");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < STATS_OUTCOME_COUNT; k++)
            stats_printf(o->b, "workq_commands_total{command=\"%s\",outcome=\"%s\"} %llu\n",
                         names[i], stats_outcome_names[k], (unsigned long long)s->commands[i][k]);
}
