/* nfp_frontend.h - NORFAB's broker as a front-end of the server
 * (net/frontend.h): a ZeroMQ ROUTER socket on each -norfab-listen address,
 * driven from the server's event loop, its heartbeat timer, and its series
 * on /metrics.  Built only with libzmq (HAVE_ZMQ). */
#ifndef WQ_NFP_FRONTEND_H
#define WQ_NFP_FRONTEND_H

#include "lib/wq.h"

struct frontend_env;

/* Its own options. */
struct nfp_frontend_config {
    uint64_t keepalive_ms;     /* -norfab-keepalive-ms */
    uint64_t liveness;         /* -norfab-liveness */
    uint64_t queue_ttl_ms;     /* -norfab-queue-ttl */
    uint64_t result_ttl_ms;    /* -norfab-result-ttl */
    const char *curve_secret;  /* -norfab-curve-secret; NULL: no CURVE */
    const char *curve_clients; /* -norfab-curve-clients; NULL: any key */
};

extern const struct frontend_ops nfp_frontend_ops;

/* Open the NORFAB front-end on env; NULL after logging, with *bad_file
 * true when a CURVE key file is to blame (else ZeroMQ failed). */
void *nfp_frontend_open(const struct frontend_env *env, const struct nfp_frontend_config *cfg,
                        bool *bad_file);

#endif /* WQ_NFP_FRONTEND_H */
