/* metrics_frontend.h - the monitoring endpoint (metrics.h) as a front-end
 * of the server (net/frontend.h), with evhttp as its own transport: it
 * serves the figures the server's environment renders. */
#ifndef WQ_METRICS_FRONTEND_H
#define WQ_METRICS_FRONTEND_H

#include "lib/wq.h"

struct frontend_env;

extern const struct frontend_ops metrics_frontend_ops;

/* Open the endpoint on env, serving no socket yet; NULL after logging. */
void *metrics_frontend_open(const struct frontend_env *env);

#endif /* WQ_METRICS_FRONTEND_H */
