/* cmd_frontend.h - the Workq protocol as a front-end of the server
 * (net/frontend.h): its context, its services over TCP and TLS, its
 * password (-password-file, read again on SIGHUP) and its command
 * figures. */
#ifndef WQ_CMD_FRONTEND_H
#define WQ_CMD_FRONTEND_H

#include "lib/wq.h"

struct frontend_env;

/* Its own options. */
struct cmd_frontend_config {
    const char *password_file; /* clients must auth; NULL: off */
    bool faktory;              /* a Faktory listener is on (inspect server says so) */
    bool hero;                 /* a Hero listener is on (inspect server says so) */
    bool norfab;               /* a NORFAB listener is on (inspect server says so) */
};

extern const struct frontend_ops cmd_frontend_ops;

/* Open the Workq front-end on env; NULL after logging (a password file it
 * cannot use). */
void *cmd_frontend_open(const struct frontend_env *env, const struct cmd_frontend_config *cfg);

#endif /* WQ_CMD_FRONTEND_H */
