/* cmd_frontend.c - the Workq protocol's row of the server's front-end
 * table (cmd_frontend.h). */
#include "lib/wq.h"
#include "workq/cmd_frontend.h"

#include <openssl/crypto.h>

#include "lib/alloc.h"
#include "lib/log.h"
#include "net/conn.h"
#include "net/frontend.h"
#include "net/password_file.h"
#include "net/tls.h"
#include "workq/cmd.h"
#include "workq/cmd_stats.h"

struct cmd_frontend {
    struct cmd_ctx ctx;
    struct conn_service plain, tls;
    struct cmd_stats stats;
    const char *password_file;
};

/* Read the password file into ctx.auth (again on SIGHUP).  0, or -1
 * (logged; a password already in use is kept). */
static int
cmd_frontend_password(struct cmd_frontend *fe)
{
    const char *file = fe->password_file;
    char line[CMD_AUTH_MAX_PASSWORD + 2];
    if (file == NULL)
        return 0;
    int rc = password_file_read(file, "Workq password", line, sizeof line);
    if (rc == 0 && !cmd_auth_valid_password(line)) {
        wq_log(LOG_LVL_ERROR,
               "the Workq password in file=%s is not one word of at most %d printable "
               "characters",
               file, CMD_AUTH_MAX_PASSWORD);
        rc = -1;
    }
    if (rc == 0 && fe->ctx.auth == NULL)
        fe->ctx.auth = cmd_auth_new(line);
    else if (rc == 0)
        cmd_auth_set_password(fe->ctx.auth, line);
    OPENSSL_cleanse(line, sizeof line);
    return rc;
}

static void
cmd_frontend_close(void *arg)
{
    struct cmd_frontend *fe = arg;
    cmd_auth_free(fe->ctx.auth);
    wq_free(fe);
}

void *
cmd_frontend_open(const struct frontend_env *env, const struct cmd_frontend_config *cfg)
{
    struct cmd_frontend *fe = wq_calloc(1, sizeof *fe);
    fe->password_file = cfg->password_file;
    fe->ctx = (struct cmd_ctx){
        .core = env->core,
        .now_ms = env->now_ms,
        .started_ms = env->started_ms,
        .clients = env->clients,
        .readonly = env->readonly,
        .faktory = cfg->faktory,
        .hero = cfg->hero,
        .norfab = cfg->norfab,
        .max_line = env->max_line,
        .max_payload = env->max_payload,
        .auth_guard = env->auth_guard,
        .stats = &fe->stats,
    };
    fe->plain = (struct conn_service){
        .proto = &cmd_protocol,
        .ctx = &fe->ctx,
        .pull_min = env->max_line + 2, /* a line and its CR LF */
        .max_request = env->max_line + 2 + env->max_payload + 2,
    };
    tls_service(&fe->tls, &fe->plain, env->tls);
    if (cmd_frontend_password(fe) != 0) {
        cmd_frontend_close(fe);
        return NULL;
    }
    return fe;
}

static const struct conn_service *
cmd_frontend_service(void *arg, bool tls)
{
    struct cmd_frontend *fe = arg;
    return tls ? &fe->tls : &fe->plain;
}

/* SIGHUP: the password file again. */
static void
cmd_frontend_reload(void *arg)
{
    struct cmd_frontend *fe = arg;
    if (fe->password_file == NULL)
        return;
    if (cmd_frontend_password(fe) == 0)
        wq_log(LOG_LVL_INFO, "Workq password re-read file=%s", fe->password_file);
    else
        wq_log(LOG_LVL_ERROR, "keeping the Workq password in use");
}

static void
cmd_frontend_stats(void *arg, struct stats_out *o)
{
    static const char *names[STATS_MAX_COMMANDS];
    struct cmd_frontend *fe = arg;
    size_t n = cmd_count();
    for (size_t i = 0; i < n; i++)
        names[i] = cmd_name(i);
    cmd_stats_render(o, &fe->stats, names, n);
}

const struct frontend_ops cmd_frontend_ops = {
    .service = cmd_frontend_service,
    .reload = cmd_frontend_reload,
    .stats = cmd_frontend_stats,
    .close = cmd_frontend_close,
};
