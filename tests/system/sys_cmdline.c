/* sys_cmdline.c - system tests of workq-server's command line: -version
 * and -help, every spelling of the flags, bad options and their exit
 * status (64), the command-log flags, an address already in use (69),
 * and, built without libzmq, -norfab-listen refused (78).
 *
 * Tests check behaviour, never speed: every wait is generous and scaled by
 * WQ_TEST_SLOW. */
#include "config.h"
#include "systest.h"
#include "engine/core.h" /* core_job_bytes: what -max-memory counts per job */

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* command line */

/* Start a server with exactly these arguments and read its port. */
static void
start_listening(const char *const *args)
{
    systest_start_argv(&systest_srv, args, NULL);
    ck_assert_int_ne(systest_srv.port, 9922); /* the flag was not ignored */
}

START_TEST(test_cli_version_help)
{
    struct systest_proc p;
    const char *expected = "workq-server " PACKAGE_VERSION "\n";
    static const char *const v1[] = {"-V", NULL}, *const v2[] = {"--version", NULL},
                             *const v3[] = {"-version", NULL};
    const char *const *versions[] = {v1, v2, v3};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(systest_proc_run(&p, versions[i]), 0);
        ck_assert_str_eq(p.out.p, expected);
        systest_proc_free(&p);
    }
    static const char *const h1[] = {"-h", NULL}, *const h2[] = {"--help", NULL},
                             *const h3[] = {"-help", NULL};
    const char *const *helps[] = {h1, h2, h3};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(systest_proc_run(&p, helps[i]), 0);
        ck_assert_msg(strstr(p.out.p, "Usage") != NULL && strstr(p.out.p, "listen") != NULL,
                      "no usage text: %s", p.out.p);
        systest_proc_free(&p);
    }
}
END_TEST

START_TEST(test_cli_bad_options)
{
    struct systest_proc p;
    static const char *const bad[][4] = {
        {"--bogus", NULL},
        {"-x", NULL},
        {"stray", NULL},
        {"-listen", NULL},
        {"-listen", "nonsense", NULL},
        {"-listen", "127.0.0.1:65536", NULL},
        {"-listen", "127.0.0.1:", NULL},
        {"--max-line", "63", NULL},
        {"--max-line", "abc", NULL},
        {"--max-payload", "-1", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = systest_proc_run(&p, bad[i]);
        ck_assert_msg(rc == 64, "%s %s: exit %d, want 64", bad[i][0], bad[i][1] ? bad[i][1] : "",
                      rc);
        ck_assert_msg(p.err.p[0] != '\0', "%s: no message on stderr", bad[i][0]);
        systest_proc_free(&p);
    }
}
END_TEST

START_TEST(test_cli_cmdlog)
{
    char dir[] = "/tmp/wq-cli-XXXXXX", eq[64], rm[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(eq, sizeof eq, "--cmdlog-path=%s", dir);
    /* Workq's flags in every spelling start a server that logs to dir. */
    const char *const forms[][14] = {
        {"-listen=127.0.0.1:0", "-cmdlog-path", dir, NULL},
        {"-listen=127.0.0.1:0", eq, "-cmdlog-sync=always", NULL},
        {"-listen=127.0.0.1:0", "-cmdlog-path", dir, "-cmdlog-seg-size", "1024", "-cmdlog-sync",
         "os", "-cmdlog-sync-int", "10", "-cmdlog-clean-int", "10", NULL},
        {"-listen=127.0.0.1:0", "--cmdlog-path", dir, "--cmdlog-sync", "interval",
         "--cmdlog-sync-int=0", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        start_listening(forms[i]);
        int fd = systest_conn();
        systest_add(fd, id4((unsigned)i + 1), "q", "x");
        systest_lease_now(fd, "q", id4((unsigned)i + 1), "x");
        close(fd);
        systest_stop_srv();
    }
    static const char *const bad[][3] = {
        {"-cmdlog-sync", "sometimes", NULL},
        {"-cmdlog-seg-size", "0", NULL},
        {"-cmdlog-sync-int", "x", NULL},
        {"-cmdlog-clean-int", "-5", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = systest_run_argv(bad[i], NULL);
        ck_assert_msg(rc == 64, "%s %s: exit %d, want 64", bad[i][0], bad[i][1], rc);
    }
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(test_cli_listen_forms)
{
    static const char *const forms[][4] = {
        {"-listen", "127.0.0.1:0", NULL},
        {"--listen", "127.0.0.1:0", NULL},
        {"-listen=127.0.0.1:0", NULL},
        {"--listen=127.0.0.1:0", NULL},
        {"-listen", "127.0.0.1:0", "-max-line=100", NULL},
        {"--max-payload", "10", "--listen=127.0.0.1:0", NULL},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        start_listening(forms[i]);
        int fd = systest_conn();
        systest_add(fd, id4((unsigned)i + 1), "q", "x");
        systest_lease_now(fd, "q", id4((unsigned)i + 1), "x");
        close(fd);
        systest_stop_srv();
    }
    /* a later -listen overrides the one systest_start passes */
    systest_start(&systest_srv, "-listen", "127.0.0.1:0", "--max-line=64", NULL);
    int fd = systest_conn();
    systest_sync(fd);
    systest_sends(fd, systest_padded_line(65, "x"));
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

START_TEST(test_cli_cannot_bind)
{
    systest_start_srv();
    const char *addr = f("127.0.0.1:%d", systest_srv.port);
    const char *const args[] = {"-listen", addr, NULL};
    ck_assert_int_eq(systest_run_argv(args, NULL), 69);
    /* the first server is unaffected */
    int fd = systest_conn();
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST

#ifndef HAVE_ZMQ
/* A workq-server built without libzmq (./configure --without-zmq) has no
 * NORFAB broker: -norfab-listen exits 78 (EX_CONFIG), saying what to
 * install, and starts nothing; without it the server starts as ever. */
START_TEST(test_cli_no_zmq)
{
    const char *const args[] = {"-listen", "127.0.0.1:0", "-norfab-listen", "127.0.0.1:0", NULL};
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), 78);
    ck_assert_str_eq(p.err.p, "workq-server: -norfab-listen needs libzmq, and this workq-server "
                              "was built without it (install libzmq3-dev, then ./configure && "
                              "make)\n");
    ck_assert_str_eq(p.out.p, "");
    systest_proc_free(&p);
    systest_start_srv();
    int fd = systest_conn();
    systest_sync(fd);
    close(fd);
    systest_stop_srv();
}
END_TEST
#endif

/* ------------------------------------------------------------------------ */
/* -help and flag errors */

START_TEST(test_cli_help)
{
    static const char *const names[] = {
        "-listen",
        "-max-line",
        "-max-payload",
        "-max-connections",
        "-idle-timeout",
        "-max-memory",
        "-cmdlog-path",
        "-cmdlog-seg-size",
        "-cmdlog-sync ",
        "-cmdlog-sync-int",
        "-cmdlog-clean-int",
        "-cmdlog-truncate",
        "-daemonize",
        "-pidfile",
        "-user",
        "-log-level",
        "-log-file",
        "-syslog",
        "-config",
        "-help",
        "-version",
        "-l, ",
        "-d, ",
        "-P, ",
        "-u, ",
        "-L, ",
        "-c, ",
        "-h, ",
        "-V, ",
        "  -v ",
    };
    static const char *const forms[] = {"-h", "-help", "--help"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(forms); i++) {
        struct systest_proc p;
        ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){forms[i], NULL}), 0);
        ck_assert_str_eq(p.err.p, "");
        ck_assert_msg(strncmp(p.out.p, "Usage: workq-server ", 20) == 0, "%s", p.out.p);
        for (size_t n = 0; n < WQ_ARRAY_LEN(names); n++)
            ck_assert_msg(strstr(p.out.p, names[n]) != NULL, "%s is not in -help", names[n]);
        systest_proc_free(&p);
    }
}
END_TEST

START_TEST(test_cli_flag_errors)
{
    static const struct {
        const char *args[4];
        const char *err;
    } cases[] = {
        {{"--max-memory", "12Q"},
         "invalid -max-memory '12Q' (expected bytes, or a size such as 512M or 2G; 0 means no "
         "limit)"},
        {{"--idle-timeout=5x"},
         "invalid -idle-timeout '5x' (expected a duration such as 300, 90s, 5m or 1500ms; at "
         "most 30 days)"},
        {{"-idle-timeout", "721h"},
         "invalid -idle-timeout '721h' (expected a duration such as 300, 90s, 5m or 1500ms; at "
         "most 30 days)"},
        {{"-log-level", "loud"}, "invalid -log-level 'loud' (expected error, warn, info or debug)"},
        {{"-max-connections", "10000001"},
         "invalid -max-connections '10000001' (expected 0..10000000; 0 means no limit)"},
        {{"-user="}, "invalid -user '' (expected a user name)"},
        {{"-P", ""}, "invalid -pidfile '' (expected a file name)"},
        {{"--log-file="}, "invalid -log-file '' (expected a file name)"},
        {{"-pidfile"}, "option '-pidfile' needs a value"},
        {{"--bogus"}, "unknown option '--bogus' (see -help)"},
        {{"stray"}, "unexpected argument 'stray' (see -help)"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        struct systest_proc p;
        int rc = systest_proc_run(&p, cases[i].args);
        ck_assert_msg(rc == 64, "%s: exit %d", cases[i].args[0], rc);
        ck_assert_str_eq(p.err.p, f("workq-server: %s\n", cases[i].err));
        ck_assert_str_eq(p.out.p, "");
        systest_proc_free(&p);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
cmdline_suite(void)
{
    const struct systest_group groups[] = {
        {"options",
         {test_cli_version_help, test_cli_bad_options, test_cli_cmdlog, test_cli_listen_forms,
          test_cli_cannot_bind, NULL}},
        {"help", {test_cli_help, test_cli_flag_errors, NULL}},
#ifndef HAVE_ZMQ
        {"no-zmq", {test_cli_no_zmq, NULL}},
#endif
    };
    return systest_suite("cmdline", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(cmdline_suite());
}
