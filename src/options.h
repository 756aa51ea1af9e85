/* options.h - command-line options: the table, defaults, parsing, --help.
 * Long options take one dash or two, "-flag value" or "-flag=value", as
 * Workq's did. */
#ifndef WQ_OPTIONS_H
#define WQ_OPTIONS_H

#include "wq.h"
#include "cmdlog.h"

struct options {
    char     host[256]; /* "" means every address */
    char     port[16];
    size_t   max_line;
    uint64_t max_payload;
    struct cmdlog_config cmdlog; /* cmdlog.dir NULL: no command log */
};

/* Fill opts from argv.  Returns -1 to continue, or an exit status: 0 after
 * --help or --version, EX_USAGE or EX_CONFIG after printing the problem. */
int options_parse(struct options *opts, int argc, char **argv);

/* Split "HOST:PORT", "[V6]:PORT" or ":PORT" into opts; 0 or -1. */
int options_set_listen(struct options *opts, const char *addr);

#endif /* WQ_OPTIONS_H */
