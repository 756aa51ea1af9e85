/* metrics_frontend.c - the metrics endpoint's row of the server's
 * front-end table (metrics_frontend.h). */
#include "lib/wq.h"
#include "http/metrics_frontend.h"

#include "http/metrics.h"
#include "net/frontend.h"
#include "net/tls.h"

void *
metrics_frontend_open(const struct frontend_env *env)
{
    const struct metrics_config cfg = {env->render, env->ready,
                                       env->arg,    env->tls ? tls_http_bev : NULL,
                                       env->tls,    env->max_connections};
    return metrics_new(env->base, &cfg);
}

static int
metrics_frontend_add_listener(void *fe, struct evconnlistener *l, bool tls)
{
    return metrics_add_listener(fe, l, tls);
}

static void
metrics_frontend_accept(void *fe)
{
    metrics_accept(fe);
}

static void
metrics_frontend_close(void *fe)
{
    metrics_free(fe);
}

const struct frontend_ops metrics_frontend_ops = {
    .add_listener = metrics_frontend_add_listener,
    .accept = metrics_frontend_accept,
    .close = metrics_frontend_close,
};
