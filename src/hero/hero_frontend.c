/* hero_frontend.c - the Hero Dispatcher's row of the server's front-end
 * table (hero_frontend.h). */
#include "lib/wq.h"
#include "hero/hero_frontend.h"

#include <openssl/crypto.h>
#include <string.h>

#include "engine/core.h"
#include "hero/hero.h"
#include "hero/hstore.h"
#include "lib/alloc.h"
#include "lib/stats_text.h"
#include "net/conn.h"
#include "net/frontend.h"
#include "net/password_file.h"
#include "net/tls.h"

/* The longest inline request or count line, Redis's (resp.h). */
#define HERO_MAX_LINE RESP_MAX_INLINE

struct hero_frontend {
    struct hero_ctx ctx;
    struct conn_service plain, tls;
    bool listening;
};

static void
hero_frontend_close(void *arg)
{
    struct hero_frontend *fe = arg;
    hero_ctx_close(&fe->ctx);
    hero_jobs_close(&fe->ctx);
    hstore_free(fe->ctx.store);
    OPENSSL_cleanse(fe->ctx.password, sizeof fe->ctx.password);
    wq_free(fe);
}

void *
hero_frontend_open(const struct frontend_env *env, bool listening, const char *password_file)
{
    struct hero_frontend *fe = wq_calloc(1, sizeof *fe);
    fe->listening = listening;
    fe->ctx = (struct hero_ctx){
        .core = env->core,
        .auth_guard = env->auth_guard,
        .max_bulk = env->max_payload,
        .now_ms = env->now_ms,
        .readonly = env->readonly,
        .clients = env->clients,
        .started_ms = env->started_ms,
        .base = env->base,
        .hooks = env->hooks,
    };
    fe->ctx.store = hstore_new(env->started_ms, &env->core->data_bytes, hero_key_expired, &fe->ctx);
    hero_ctx_init(&fe->ctx);
    hero_jobs_open(&fe->ctx);
    if (password_file != NULL) {
        char line[4096];
        if (password_file_read(password_file, "Hero password", line, sizeof line) != 0) {
            hero_frontend_close(fe);
            return NULL;
        }
        hero_password_digest(line, strlen(line), fe->ctx.password);
        fe->ctx.has_password = true;
        OPENSSL_cleanse(line, sizeof line);
    }
    /* a request is read whole: its count lines, and a bulk up to
     * -max-payload (a longer one is refused; past that much, a request
     * of many arguments closes the connection).  The module sees all
     * that is buffered, up to that: a request's end is found in one pass
     * over what has come, not a line at a time. */
    fe->ctx.max_request = HERO_MAX_LINE + env->max_payload + 64;
    fe->plain = (struct conn_service){
        .proto = &hero_protocol,
        .ctx = &fe->ctx,
        .pull_min = fe->ctx.max_request,
        .max_request = fe->ctx.max_request,
    };
    tls_service(&fe->tls, &fe->plain, env->tls);
    return fe;
}

static const struct conn_service *
hero_frontend_service(void *arg, bool tls)
{
    struct hero_frontend *fe = arg;
    return tls ? &fe->tls : &fe->plain;
}

/* The Hero keys' series. */
static void
hero_frontend_stats(void *arg, struct stats_out *o)
{
    struct hero_frontend *fe = arg;
    if (!fe->listening)
        return;
    stats_counter(o, "workq_hero_commands", NULL, "Hero (RESP) commands handled.",
                  fe->ctx.commands);
    stats_gauge(o, "workq_hero_keys", NULL, "Hero keys (hashes and lists).",
                hstore_count(fe->ctx.store));
    stats_gauge(o, "workq_hero_blocked_clients", NULL, "Hero clients waiting in BLPOP or BRPOP.",
                fe->ctx.nblocked);
    const struct hero_job_stats *j = &fe->ctx.jobs;
    stats_counter(o, "workq_hero_jobs_submitted", NULL,
                  "Hero jobs pushed onto a work queue (not a second copy).", j->submitted);
    stats_counter(o, "workq_hero_jobs_handed_out", NULL, "Hero jobs popped from a work queue.",
                  j->handed);
    stats_counter(o, "workq_hero_jobs_finished", NULL, "Hero jobs a worker set finished.",
                  j->finished);
    stats_counter(o, "workq_hero_jobs_failed", NULL,
                  "Hero jobs ended otherwise: set error, timed out or lost for good, stopped, "
                  "withdrawn.",
                  j->failed);
    stats_counter(o, "workq_hero_jobs_retried", NULL,
                  "Hero jobs back on their list after a timeout or a lost worker.", j->retried);
    struct core_space_counts k;
    core_space_counts(fe->ctx.core, fe->ctx.space, &k);
    stats_family(o, "workq_hero_jobs", "gauge", NULL, "Hero jobs by state.");
    stats_printf(o->b, "workq_hero_jobs{state=\"queued\"} %llu\n",
                 (unsigned long long)(k.enqueued + k.retry));
    stats_printf(o->b, "workq_hero_jobs{state=\"handed_out\"} %llu\n",
                 (unsigned long long)k.working);
}

static void
hero_frontend_replayed(void *arg)
{
    struct hero_frontend *fe = arg;
    hero_jobs_replayed(&fe->ctx);
    hero_expiry_arm(&fe->ctx);
}

const struct frontend_ops hero_frontend_ops = {
    .service = hero_frontend_service,
    .replayed = hero_frontend_replayed,
    .stats = hero_frontend_stats,
    .close = hero_frontend_close,
};
