/* fwp_frontend.c - the Faktory Work Protocol's row of the server's
 * front-end table (fwp_frontend.h). */
#include "lib/wq.h"
#include "faktory/fwp_frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "faktory/fjobs.h"
#include "faktory/fwp.h"
#include "lib/alloc.h"
#include "lib/stats_text.h"
#include "net/conn.h"
#include "net/frontend.h"
#include "net/password_file.h"
#include "net/tls.h"

struct fwp_frontend {
    struct fwp_ctx ctx;
    struct conn_service plain, tls;
    bool listening;
    char *password; /* NULL: none */
};

/* The password from cfg's file, else FAKTORY_PASSWORD.  0, or -1 after
 * logging. */
static int
fwp_frontend_password(struct fwp_frontend *fe, const char *file)
{
    char line[4096] = "";
    if (file == NULL) {
        const char *env = getenv("FAKTORY_PASSWORD");
        if (env == NULL || env[0] == '\0')
            return 0;
        snprintf(line, sizeof line, "%s", env);
    } else if (password_file_read(file, "Faktory password", line, sizeof line) != 0) {
        return -1;
    }
    fe->password = wq_malloc(strlen(line) + 1);
    strcpy(fe->password, line);
    fe->ctx.password = fe->password;
    return 0;
}

static void
fwp_frontend_close(void *arg)
{
    struct fwp_frontend *fe = arg;
    fjobs_free(fe->ctx.fjobs);
    wq_free(fe->password);
    wq_free(fe);
}

void *
fwp_frontend_open(const struct frontend_env *env, const struct fwp_frontend_config *cfg)
{
    struct fwp_frontend *fe = wq_calloc(1, sizeof *fe);
    fe->listening = cfg->listening;
    /* A Faktory command line carries its job: room for a line and a payload. */
    size_t line = env->max_line + env->max_payload;
    fe->ctx = (struct fwp_ctx){
        .core = env->core,
        .auth_guard = env->auth_guard,
        .max_line = line,
        .max_job = WQ_MAX(env->max_payload, 256u),
        .backoff_unit_ms = cfg->backoff_unit_ms,
        .now_ms = env->now_ms,
        .readonly = env->readonly,
        .clients = env->clients,
        .started_ms = env->started_ms,
        .rng = env->started_ms | 1,
        .base = env->base,
        .hooks = env->hooks,
    };
    list_init(&fe->ctx.mutations);
    fe->plain = (struct conn_service){
        .proto = &fwp_protocol,
        .ctx = &fe->ctx,
        .pull_min = line + 2,
        .max_request = line + 2,
    };
    tls_service(&fe->tls, &fe->plain, env->tls);
    if (fwp_frontend_password(fe, cfg->password_file) != 0) {
        fwp_frontend_close(fe);
        return NULL;
    }
    /* its jobs, in a key space of the engine's: served or not, the command
     * log may hold them; an expired reservation fails through fe */
    fe->ctx.fjobs = fjobs_new(env->core);
    fjobs_set_expired(fe->ctx.fjobs, fwp_reservation_expired, &fe->ctx);
    fjobs_set_dead_limits(fe->ctx.fjobs, cfg->dead_ttl_ms, cfg->dead_max);
    return fe;
}

static const struct conn_service *
fwp_frontend_service(void *arg, bool tls)
{
    struct fwp_frontend *fe = arg;
    return tls ? &fe->tls : &fe->plain;
}

/* The Faktory jobs' series, where a Faktory listener is on. */
static void
fwp_frontend_stats(void *arg, struct stats_out *o)
{
    static const char *const states[] = {"scheduled", "enqueued", "working", "retry", "dead"};
    _Static_assert(WQ_ARRAY_LEN(states) == FJOB_STATE_COUNT, "states out of sync");
    struct fwp_frontend *fe = arg;
    if (!fe->listening)
        return;
    const struct fjobs_stats *f = &fe->ctx.fjobs->stats;
    struct core_space_counts k;
    fjobs_counts(fe->ctx.fjobs, &k);
    const uint64_t count[] = {k.scheduled, k.enqueued, k.working, k.retry, k.dead};
    stats_counter(o, "workq_faktory_pushed", NULL, "Faktory jobs pushed (PUSH, PUSHB).", f->pushed);
    stats_counter(o, "workq_faktory_fetched", NULL, "Faktory jobs handed to a FETCH.", f->fetched);
    stats_counter(o, "workq_faktory_acked", NULL, "Faktory jobs acknowledged (ACK).", f->acked);
    stats_counter(o, "workq_faktory_failed", NULL,
                  "Faktory jobs failed (FAIL, or reservation expired).", f->failures);
    stats_family(o, "workq_faktory_jobs", "gauge", NULL,
                 "Faktory jobs by state (scheduled, retry and dead are Faktory's sets).");
    for (int s = 0; s < FJOB_STATE_COUNT; s++)
        stats_printf(o->b, "workq_faktory_jobs{state=\"%s\"} %llu\n", states[s],
                     (unsigned long long)count[s]);
}

const struct frontend_ops fwp_frontend_ops = {
    .service = fwp_frontend_service,
    .stats = fwp_frontend_stats,
    .close = fwp_frontend_close,
};
