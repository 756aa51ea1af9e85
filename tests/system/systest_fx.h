/* systest_fx.h - the fixture of the command-log system tests (sys_persist,
 * sys_cmdlog_hostile): a scratch directory whose log/ is the server's
 * -cmdlog-path, a stderr file per server started, and starting or running
 * a server on it. */
#ifndef WQ_TESTS_SYSTEST_FX_H
#define WQ_TESTS_SYSTEST_FX_H

#include <stdbool.h>

#include "systest.h"

struct systest_fx {
    char base[64];
    char dir[96];  /* the command log: base/log */
    char err[112]; /* stderr of the last server started */
    unsigned runs;
    bool err_inherit; /* stderr to ours instead of a file */
};

/* A new scratch directory /tmp/wq-TAG-XXXXXX; with make_dir, its log/ made
 * too (else the server makes it). */
void systest_fx_init(struct systest_fx *x, const char *tag, bool make_dir);
/* Remove it all (a file system mounted on it first). */
void systest_fx_free(struct systest_fx *x);
/* A new stderr file for the next server, x->err; NULL when the server is
 * to inherit ours. */
const char *systest_fx_next_err(struct systest_fx *x);
/* Start a server on x->dir with the extra arguments (NULL terminated)
 * and wait until it listens. */
void systest_fx_start(struct systest_fx *x, struct systest_server *s, ...)
    __attribute__((sentinel));
/* Run a server on x->dir that must end by itself (e.g. refuse to start):
 * its exit status; the test fails if it starts listening instead. */
int systest_fx_run(struct systest_fx *x, ...) __attribute__((sentinel));

#endif /* WQ_TESTS_SYSTEST_FX_H */
