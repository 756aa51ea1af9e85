/* main.c - parse options, start the server, run it until a stop signal. */
#include "wq.h"

#include <stdio.h>
#include <sysexits.h>

#include "alloc.h"
#include "log.h"
#include "options.h"
#include "server.h"

int
main(int argc, char **argv)
{
    struct options opts;
    int status = options_parse(&opts, argc, argv);
    if (status >= 0)
        return status;

    struct server srv;
    if (server_init(&srv, &opts) != 0) {
        server_clear(&srv);
        return EX_SOFTWARE;
    }
    /* Replay before listening: no client sees a half-loaded server. */
    if (server_open_log(&srv) != 0) {
        server_clear(&srv);
        return EX_CONFIG;
    }
    if (server_listen(&srv) != 0) {
        server_clear(&srv);
        return EX_UNAVAILABLE;
    }
    static const char *const sync_names[] = {"interval", "os", "always"};
    wq_log(LOG_LVL_INFO,
           "workq-server %s started listen=%s allocator=%s max_line=%zu max_payload=%llu "
           "cmdlog=%s sync=%s", PACKAGE_VERSION, srv.bound, alloc_name(), opts.max_line,
           (unsigned long long)opts.max_payload, opts.cmdlog.dir ? opts.cmdlog.dir : "none",
           sync_names[opts.cmdlog.sync]);
    /* One line on stdout that scripts and tests read to learn the port. */
    printf("workq-server listening on %s\n", srv.bound);
    fflush(stdout);

    server_run(&srv);
    server_clear(&srv);
    wq_log(LOG_LVL_INFO, "workq-server stopped");
    return 0;
}
