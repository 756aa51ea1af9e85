/* frontends.h - the server's table of front-ends: one row each for the
 * Workq protocol, the Faktory protocol and the metrics endpoint.  A row
 * says what the server needs to start one from the options: its name, its
 * addresses, how to open it (the one place that turns options into the
 * front-end's own settings) and its operations (net/frontend.h).  Adding a
 * front-end adds a folder, a row here (with its flags in options.c) and
 * lines in Makefile.am; nothing in net/ or server.c. */
#ifndef WQ_FRONTENDS_H
#define WQ_FRONTENDS_H

#include "lib/wq.h"

struct frontend_env;
struct frontend_ops;
struct listen_set;
struct options;

struct frontend_row {
    /* In the start-up lines: "workq-server NAME listening on ADDRESS",
     * and "NAME=ADDRESS" in the log; NULL for the Workq protocol, whose
     * lines name no protocol. */
    const char *name;
    const struct frontend_ops *ops;
    /* Where its addresses are in struct options (offsetof). */
    size_t addresses;
    /* Open it on env into *fe (NULL: not in service).  0, or the exit
     * status after logging. */
    int (*open)(const struct frontend_env *env, const struct options *o, void **fe);
};

/* The rows, in the order the server starts them and prints their
 * addresses. */
extern const struct frontend_row frontend_rows[];
extern const size_t frontend_nrows;

/* Row row's addresses in o. */
const struct listen_set *frontend_addresses(const struct frontend_row *row,
                                            const struct options *o);

/* Room for the rows (a server array's size). */
#define FRONTENDS_MAX 8

#endif /* WQ_FRONTENDS_H */
