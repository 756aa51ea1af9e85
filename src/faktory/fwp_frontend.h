/* fwp_frontend.h - the Faktory Work Protocol as a front-end of the server
 * (net/frontend.h): its context, its services over TCP and TLS, its
 * password (-faktory-password-file, else FAKTORY_PASSWORD), the limits of
 * its job store, and its series on /metrics. */
#ifndef WQ_FWP_FRONTEND_H
#define WQ_FWP_FRONTEND_H

#include "lib/wq.h"

struct frontend_env;

/* Its own options. */
struct fwp_frontend_config {
    bool listening;            /* it has addresses: its series are shown */
    const char *password_file; /* NULL: FAKTORY_PASSWORD, if set */
    uint64_t backoff_unit_ms;  /* a second of the retry backoff */
    uint64_t dead_ttl_ms;      /* how long a dead job stays */
    uint64_t dead_max;         /* at most this many dead jobs */
};

extern const struct frontend_ops fwp_frontend_ops;

/* Open the Faktory front-end on env; NULL after logging (a password file
 * it cannot read). */
void *fwp_frontend_open(const struct frontend_env *env, const struct fwp_frontend_config *cfg);

#endif /* WQ_FWP_FRONTEND_H */
