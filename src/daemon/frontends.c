/* frontends.c - the rows of the server's front-end table (frontends.h):
 * each front-end's options turned into its own settings. */
#include "lib/wq.h"
#include "daemon/frontends.h"

#include <stddef.h>
#include <sysexits.h>

#include "daemon/options.h"
#include "faktory/fwp_frontend.h"
#include "hero/hero_frontend.h"
#include "http/metrics_frontend.h"
#include "net/frontend.h"
#include "workq/cmd_frontend.h"
#ifdef HAVE_ZMQ
#include "norfab/nfp_frontend.h"
#endif

static int
workq_open(const struct frontend_env *env, const struct options *o, void **fe)
{
    const struct cmd_frontend_config cfg = {o->password_file, o->faktory_listen.n > 0,
                                            o->hero_listen.n > 0, o->norfab_listen.n > 0};
    *fe = cmd_frontend_open(env, &cfg);
    return *fe == NULL ? EX_CONFIG : 0;
}

/* Open even without addresses: its jobs replay from the command log. */
static int
faktory_open(const struct frontend_env *env, const struct options *o, void **fe)
{
    const struct fwp_frontend_config cfg = {
        .listening = o->faktory_listen.n > 0,
        .password_file = o->faktory_password_file,
        .backoff_unit_ms = o->faktory_backoff_unit_ms,
        .dead_ttl_ms = o->faktory_dead_ttl_ms,
        .dead_max = o->faktory_dead_max,
    };
    *fe = fwp_frontend_open(env, &cfg);
    return *fe == NULL ? EX_CONFIG : 0;
}

/* Open even without addresses: its keys replay from the command log. */
static int
hero_open(const struct frontend_env *env, const struct options *o, void **fe)
{
    *fe = hero_frontend_open(env, o->hero_listen.n > 0, o->hero_password_file);
    return *fe == NULL ? EX_CONFIG : 0;
}

#ifdef HAVE_ZMQ
/* Only with addresses (-norfab-listen). */
static int
norfab_open(const struct frontend_env *env, const struct options *o, void **fe)
{
    *fe = NULL;
    if (o->norfab_listen.n == 0)
        return 0;
    const struct nfp_frontend_config cfg = {o->norfab_keepalive_ms, o->norfab_liveness,
                                            o->norfab_queue_ttl_ms, o->norfab_result_ttl_ms,
                                            o->norfab_curve_secret, o->norfab_curve_clients};
    bool bad_file;
    *fe = nfp_frontend_open(env, &cfg, &bad_file);
    return *fe == NULL ? (bad_file ? EX_CONFIG : EX_UNAVAILABLE) : 0;
}
#endif

/* Only with addresses (-metrics-listen). */
static int
metrics_open(const struct frontend_env *env, const struct options *o, void **fe)
{
    *fe = NULL;
    if (o->metrics_listen.n == 0)
        return 0;
    *fe = metrics_frontend_open(env);
    return *fe == NULL ? EX_UNAVAILABLE : 0;
}

const struct frontend_row frontend_rows[] = {
    {NULL, &cmd_frontend_ops, offsetof(struct options, listen), workq_open},
    {"faktory", &fwp_frontend_ops, offsetof(struct options, faktory_listen), faktory_open},
    {"hero", &hero_frontend_ops, offsetof(struct options, hero_listen), hero_open},
#ifdef HAVE_ZMQ
    {"norfab", &nfp_frontend_ops, offsetof(struct options, norfab_listen), norfab_open},
#endif
    {"metrics", &metrics_frontend_ops, offsetof(struct options, metrics_listen), metrics_open},
};
const size_t frontend_nrows = WQ_ARRAY_LEN(frontend_rows);

const struct listen_set *
frontend_addresses(const struct frontend_row *row, const struct options *o)
{
    return (const struct listen_set *)((const char *)o + row->addresses);
}
_Static_assert(WQ_ARRAY_LEN(frontend_rows) <= FRONTENDS_MAX, "raise FRONTENDS_MAX");
