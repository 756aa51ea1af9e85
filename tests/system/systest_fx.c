/* systest_fx.c - the command-log system tests' fixture (systest_fx.h). */
#include "config.h"
#include "systest_fx.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

void
systest_fx_init(struct systest_fx *x, const char *tag, bool make_dir)
{
    memset(x, 0, sizeof *x);
    snprintf(x->base, sizeof x->base, "/tmp/wq-%s-XXXXXX", tag);
    ck_assert_ptr_nonnull(mkdtemp(x->base));
    snprintf(x->dir, sizeof x->dir, "%s/log", x->base);
    if (make_dir)
        ck_assert_int_eq(mkdir(x->dir, 0755), 0);
}

void
systest_fx_free(struct systest_fx *x)
{
    umount2(x->base, MNT_DETACH); /* a test's own file system, if any */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->base);
    ck_assert_int_eq(system(cmd), 0);
}

const char *
systest_fx_next_err(struct systest_fx *x)
{
    snprintf(x->err, sizeof x->err, "%s/stderr.%u", x->base, ++x->runs);
    return x->err_inherit ? NULL : x->err;
}

/* -listen 127.0.0.1:0 -cmdlog-path DIR, then the NULL-terminated extras. */
static void
systest_fx_args(const struct systest_fx *x, const char **args, size_t cap, va_list ap)
{
    size_t n = 0;
    args[n++] = "-listen";
    args[n++] = "127.0.0.1:0";
    args[n++] = "-cmdlog-path";
    args[n++] = x->dir;
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        ck_assert_uint_lt(n, cap - 1);
        args[n++] = a;
    }
    args[n] = NULL;
}

void
systest_fx_start(struct systest_fx *x, struct systest_server *s, ...)
{
    const char *args[40];
    va_list ap;
    va_start(ap, s);
    systest_fx_args(x, args, 40, ap);
    va_end(ap);
    systest_start_argv(s, args, systest_fx_next_err(x));
}

int
systest_fx_run(struct systest_fx *x, ...)
{
    const char *args[40];
    va_list ap;
    va_start(ap, x);
    systest_fx_args(x, args, 40, ap);
    va_end(ap);
    return systest_run_argv(args, systest_fx_next_err(x));
}
