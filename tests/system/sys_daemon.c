/* sys_daemon.c - system tests of what makes workq-server a daemon: -d with
 * its pidfile and start-up status, sd_notify, the log (format, levels,
 * SIGHUP), -user and the config file (doc/workq-server.8).
 *
 * Tests check behaviour, never speed: every wait for something that must
 * happen is generous and scaled by WQ_TEST_SLOW, and checks that something
 * has NOT happened yet run only when WQ_TEST_SLOW is 1.
 *
 * A daemon leaves the test's process group (setsid), so check's clean-up
 * would not take it.  The daemon tests make the test process a child
 * subreaper: the daemon is re-parented to it, so its exit status can be
 * read; and a daemon whose pid a test learnt is killed after the suite
 * should the test fail (systest_track_pid), as temporary directories are
 * removed (systest_tmpdir_new).
 *
 * The -user tests need root for the real thing: as root they drop to
 * nobody, and check the refusal (77) by running the server as nobody; as
 * another user they check only the refusal. */
#include "config.h"
#include "systest.h"
#include "engine/core.h" /* core_job_bytes: what -max-memory counts per job */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
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

/* Re-parent orphans (the daemon of -d) to this process. */
static void
become_subreaper(void)
{
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
}

/* Wait (up to the scaled bound) for pid to be gone.  Returns its wait
 * status when it was our child (a re-parented daemon), else -1. */
static int
wait_gone(pid_t pid)
{
    int64_t deadline = systest_now_ms() + 2 * (int64_t)systest_wait_ms();
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            systest_untrack_pid(pid);
            return st;
        }
        if (r < 0 && errno == ECHILD && kill(pid, 0) != 0 && errno == ESRCH) {
            systest_untrack_pid(pid);
            return -1;
        }
        ck_assert_msg(systest_now_ms() < deadline, "process %ld did not exit", (long)pid);
        systest_sleep_ms(10);
    }
}

/* Wait for daemon pid to be gone; if it was re-parented here, check that
 * it exited with status 0. */
static void
expect_gone_ok(pid_t pid)
{
    int st = wait_gone(pid);
    if (st != -1)
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon %ld: wait status %d",
                      (long)pid, st);
}

/* The exit status of a re-parented orphan other than `except`, waiting for
 * it up to the scaled bound. */
static int
reap_orphan(pid_t except)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    for (;;) {
        int st;
        pid_t r = waitpid(-1, &st, WNOHANG);
        ck_assert_msg(r >= 0, "no orphan to reap: %s", strerror(errno));
        ck_assert_msg(r == 0 || r != except, "process %ld ended unexpectedly", (long)except);
        if (r > 0) {
            ck_assert_msg(WIFEXITED(st), "orphan %ld killed by signal %d", (long)r,
                          WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            return WEXITSTATUS(st);
        }
        ck_assert_msg(systest_now_ms() < deadline, "the daemon did not exit");
        systest_sleep_ms(10);
    }
}

/* ------------------------------------------------------------------------ */
/* Files */

static void
write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    ck_assert_msg(fp != NULL, "cannot write %s: %s", path, strerror(errno));
    fputs(text, fp);
    ck_assert_int_eq(fclose(fp), 0);
}

/* The contents of path into buf (NUL terminated); -1 if it cannot be read. */
static ssize_t
read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

static bool
file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Wait (up to the scaled bound) until path contains text. */
static bool
wait_file_contains(const char *path, const char *text)
{
    static char buf[65536];
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    for (;;) {
        if (read_file(path, buf, sizeof buf) >= 0 && strstr(buf, text) != NULL)
            return true;
        if (systest_now_ms() >= deadline)
            return false;
        systest_sleep_ms(10);
    }
}

/* The pid in a pidfile, which must be exactly "<digits>\n". */
static pid_t
read_pidfile(const char *path)
{
    char buf[64];
    ck_assert_msg(read_file(path, buf, sizeof buf) > 0, "no pidfile %s", path);
    size_t digits = strspn(buf, "0123456789");
    ck_assert_msg(digits > 0 && strcmp(buf + digits, "\n") == 0, "pidfile holds \"%s\"", buf);
    return (pid_t)atol(buf);
}

/* A field line of /proc/PID/status ("Uid:"), the text after the tab. */
static void
proc_status_field(pid_t pid, const char *field, char *out, size_t cap)
{
    char buf[8192];
    ck_assert_int_gt(read_file(f("/proc/%ld/status", (long)pid), buf, sizeof buf), 0);
    char *line = strstr(buf, field);
    ck_assert_msg(line != NULL, "no %s in /proc/%ld/status", field, (long)pid);
    line += strlen(field);
    line += strspn(line, "\t ");
    size_t n = strcspn(line, "\n");
    ck_assert_uint_lt(n, cap);
    memcpy(out, line, n);
    out[n] = '\0';
}

/* Check that the numbers of a Uid:/Gid: line are all want. */
static void
expect_ids(const char *line, long want)
{
    char *end;
    const char *p = line;
    for (int i = 0; i < 4; i++) {
        long v = strtol(p, &end, 10);
        ck_assert_msg(end != p && v == want, "ids \"%s\", want all %ld", line, want);
        p = end;
    }
}

/* ------------------------------------------------------------------------ */
/* -d, -pidfile */

START_TEST(test_daemon_pidfile)
{
    become_subreaper();
    char dir[32], pidfile[64], logfile[64];
    systest_tmpdir_new(dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    snprintf(logfile, sizeof logfile, "%s/wq.log", dir);
    const char *const args[] = {"-d", "-listen", "127.0.0.1:0", "-P", pidfile, "-L", logfile, NULL};
    struct systest_proc p;

    /* The foreground process returns 0 once the daemon listens; the
     * daemon printed its line on the inherited stdout first. */
    ck_assert_int_eq(systest_proc_run(&p, args), 0);
    ck_assert_int_eq(systest_count_lines(p.out.p), 1);
    int port = systest_listening_port(p.out.p, 0);
    ck_assert_str_eq(p.err.p, "");

    pid_t pid = read_pidfile(pidfile);
    systest_track_pid(pid);
    ck_assert_int_ne(pid, p.s.pid);
    ck_assert_int_eq(kill(pid, 0), 0);
    /* Detached: a session of its own that it does not lead, cwd "/". */
    ck_assert_int_ne(getsid(pid), getsid(0));
    ck_assert_int_ne(getsid(pid), pid);
    char cwd[256];
    ssize_t n = readlink(f("/proc/%ld/cwd", (long)pid), cwd, sizeof cwd - 1);
    ck_assert_int_gt(n, 0);
    cwd[n] = '\0';
    ck_assert_str_eq(cwd, "/");

    int fd = systest_connect_port(port);
    systest_add(fd, id4(1), "q", "x");
    systest_lease_now(fd, "q", id4(1), "x");
    close(fd);
    ck_assert(wait_file_contains(
        logfile, f(" info workq-server started version=%s pid=%ld ", PACKAGE_VERSION, (long)pid)));

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    expect_gone_ok(pid);
    ck_assert_msg(!file_exists(pidfile), "pidfile left behind");
    ck_assert(wait_file_contains(logfile, " info workq-server stopped\n"));
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* Relative -pidfile and -log-file name files in the directory the command
 * ran in, although the daemon moves to "/"; SIGHUP reopens the log there. */
START_TEST(test_daemon_relative_paths)
{
    become_subreaper();
    char dir[32], path[64], moved[64];
    systest_tmpdir_new(dir);
    ck_assert_int_eq(chdir(dir), 0);
    const char *const args[] = {
        "-daemonize", "-listen=127.0.0.1:0", "--pidfile", "rel.pid", "--log-file", "rel.log", NULL};
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), 0);
    int port = systest_listening_port(p.out.p, 0);
    ck_assert_int_eq(chdir("/"), 0);

    snprintf(path, sizeof path, "%s/rel.pid", dir);
    pid_t pid = read_pidfile(path);
    systest_track_pid(pid);
    snprintf(path, sizeof path, "%s/rel.log", dir);
    snprintf(moved, sizeof moved, "%s/rel.log.1", dir);
    ck_assert(wait_file_contains(path, " info workq-server started "));
    ck_assert_int_eq(rename(path, moved), 0);
    ck_assert_int_eq(kill(pid, SIGHUP), 0);
    ck_assert_msg(wait_file_contains(path, " info log reopened\n"), "no new log file at %s", path);

    int fd = systest_connect_port(port);
    systest_sync(fd);
    close(fd);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    expect_gone_ok(pid);
    ck_assert(wait_file_contains(path, " info workq-server stopped\n"));
    char buf[8192];
    ck_assert_int_gt(read_file(moved, buf, sizeof buf), 0);
    ck_assert_ptr_null(strstr(buf, "reopened"));
    ck_assert_ptr_null(strstr(buf, "stopped"));
    snprintf(path, sizeof path, "%s/rel.pid", dir);
    ck_assert(!file_exists(path));
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* A daemon that cannot start makes the foreground process exit with its
 * status, and leaves no pidfile and no process. */
START_TEST(test_daemon_failure)
{
    become_subreaper();
    char dir[32], pidfile[64], logfile[64], badlog[80], badpid[80];
    systest_tmpdir_new(dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    snprintf(logfile, sizeof logfile, "%s/wq.log", dir);
    snprintf(badlog, sizeof badlog, "%s/no/such/dir.log", dir);
    snprintf(badpid, sizeof badpid, "%s/no/such/dir.pid", dir);
    struct systest_proc busy, p;
    systest_proc_start(&busy, (const char *const[]){"-listen", "127.0.0.1:0", NULL});
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", busy.s.port);

    /* the port is taken: 69 (EX_UNAVAILABLE) */
    const char *const taken[] = {"-d", "-listen", addr, "-P", pidfile, "-L", logfile, NULL};
    ck_assert_int_eq(systest_proc_run(&p, taken), 69);
    ck_assert_str_eq(p.out.p, "");
    ck_assert_int_eq(reap_orphan(busy.s.pid), 69);
    ck_assert(!file_exists(pidfile));
    ck_assert(wait_file_contains(logfile, f(" error cannot listen address=%s ", addr)));
    systest_proc_free(&p);

    /* the log file cannot be opened: 73 (EX_CANTCREAT), said on stderr */
    const char *const nolog[] = {"-d", "-listen", "127.0.0.1:0", "-P", pidfile, "-L", badlog, NULL};
    ck_assert_int_eq(systest_proc_run(&p, nolog), 73);
    ck_assert_str_eq(p.out.p, "");
    ck_assert_msg(strstr(p.err.p, f(" error cannot open log file path=%s ", badlog)) != NULL,
                  "stderr: %s", p.err.p);
    ck_assert_int_eq(reap_orphan(busy.s.pid), 73);
    ck_assert(!file_exists(pidfile));
    systest_proc_free(&p);

    /* the pidfile cannot be written: 73 */
    const char *const nopid[] = {"-d", "-listen", "127.0.0.1:0", "-P", badpid, "-L", logfile, NULL};
    ck_assert_int_eq(systest_proc_run(&p, nopid), 73);
    ck_assert_str_eq(p.out.p, "");
    ck_assert_int_eq(reap_orphan(busy.s.pid), 73);
    ck_assert(wait_file_contains(logfile, f(" error cannot write pidfile path=%s ", badpid)));
    systest_proc_free(&p);

    /* the first server never noticed */
    int fd = systest_connect(&busy.s);
    systest_sync(fd);
    close(fd);
    systest_proc_stop(&busy);
    systest_proc_free(&busy);
    systest_tmpdir_remove(dir);
}
END_TEST

/* A second server never takes over the pidfile of one that runs. */
START_TEST(test_daemon_pidfile_in_use)
{
    char dir[32], pidfile[64];
    systest_tmpdir_new(dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    struct systest_proc first, p;
    systest_proc_start(&first,
                       (const char *const[]){"-listen", "127.0.0.1:0", "-P", pidfile, NULL});
    ck_assert_int_eq(read_pidfile(pidfile), first.s.pid);

    const char *const again[] = {"-listen", "127.0.0.1:0", "-P", pidfile, NULL};
    ck_assert_int_eq(systest_proc_run(&p, again), 73);
    ck_assert_msg(strstr(p.err.p, f(" error pidfile names a running process path=%s pid=%ld\n",
                                    pidfile, (long)first.s.pid)) != NULL,
                  "stderr: %s", p.err.p);
    ck_assert_int_eq(read_pidfile(pidfile), first.s.pid);
    systest_proc_free(&p);

    /* A stale pidfile (its process gone) is replaced. */
    systest_proc_stop(&first);
    systest_proc_free(&first);
    FILE *fp = fopen(pidfile, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp, "%d\n", 999999999);
    fclose(fp);
    systest_proc_start(&first,
                       (const char *const[]){"-listen", "127.0.0.1:0", "-P", pidfile, NULL});
    ck_assert_int_eq(read_pidfile(pidfile), first.s.pid);
    systest_proc_stop(&first);
    systest_proc_free(&first);
    ck_assert(!file_exists(pidfile));
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* sd_notify */

/* A datagram socket bound to name ("@..." for the abstract namespace). */
static int
notify_socket(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    ck_assert_uint_lt(len, sizeof sa.sun_path);
    memcpy(sa.sun_path, name, len);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(
        bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
        0);
    return fd;
}

/* The next datagram (waiting up to the scaled bound), NUL terminated. */
static const char *
notify_recv(int fd)
{
    static char buf[512];
    struct pollfd p = {fd, POLLIN, 0};
    ck_assert_msg(poll(&p, 1, systest_wait_ms()) > 0, "no notification");
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    return buf;
}

static void
notify_check_ready(const char *msg, int port, pid_t pid)
{
    ck_assert_msg(strncmp(msg, "READY=1\n", 8) == 0, "notification: %s", msg);
    ck_assert_str_eq(msg,
                     f("READY=1\nSTATUS=listening on 127.0.0.1:%d\nMAINPID=%ld", port, (long)pid));
}

/* NOTIFY_SOCKET names the socket; the server sends READY with its pid once
 * listening, nothing more until SIGTERM, then STOPPING. */
static void
notify_round(const char *name)
{
    int ns = notify_socket(name);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
    struct systest_server s;
    systest_start(&s, NULL);
    notify_check_ready(notify_recv(ns), s.port, s.pid);
    struct pollfd pf = {ns, POLLIN, 0};
    ck_assert_int_eq(poll(&pf, 1, 100), 0);
    int fd = systest_connect(&s);
    systest_sync(fd);
    close(fd);
    systest_stop(&s);
    ck_assert_str_eq(notify_recv(ns), "STOPPING=1");
    unsetenv("NOTIFY_SOCKET");
    close(ns);
}

START_TEST(test_notify_path)
{
    char dir[32], name[64];
    systest_tmpdir_new(dir);
    snprintf(name, sizeof name, "%s/notify", dir);
    notify_round(name);
    systest_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_notify_abstract)
{
    char name[64];
    snprintf(name, sizeof name, "@wq-daemon-test-%ld-%lld", (long)getpid(),
             (long long)systest_now_ms());
    notify_round(name);
}
END_TEST

/* With -d, MAINPID is the daemon's pid (the pidfile's), not the pid of the
 * process that was started. */
START_TEST(test_notify_daemon)
{
    become_subreaper();
    char dir[32], name[64], pidfile[64], logfile[64];
    systest_tmpdir_new(dir);
    snprintf(name, sizeof name, "%s/notify", dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    snprintf(logfile, sizeof logfile, "%s/wq.log", dir);
    int ns = notify_socket(name);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
    struct systest_proc p;
    const char *const args[] = {"-d", "-l", "127.0.0.1:0", "-P", pidfile, "-L", logfile, NULL};
    ck_assert_int_eq(systest_proc_run(&p, args), 0);
    pid_t pid = read_pidfile(pidfile);
    systest_track_pid(pid);
    notify_check_ready(notify_recv(ns), systest_listening_port(p.out.p, 0), pid);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    ck_assert_str_eq(notify_recv(ns), "STOPPING=1");
    expect_gone_ok(pid);
    unsetenv("NOTIFY_SOCKET");
    close(ns);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The log */

#define LOG_TIME_RE "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"

/* Check that every line of text reads "<time> <level> <event...>", and
 * return how many lines there are. */
static int
check_log_lines(const char *text)
{
    regex_t re;
    ck_assert_int_eq(regcomp(&re, "^" LOG_TIME_RE " (error|warn|info|debug) [a-z]", REG_EXTENDED),
                     0);
    int n = 0;
    char line[2048];
    for (const char *p = text; *p != '\0'; n++) {
        size_t len = strcspn(p, "\n");
        ck_assert_msg(p[len] == '\n', "unterminated log line: %s", p);
        ck_assert_uint_lt(len, sizeof line);
        memcpy(line, p, len);
        line[len] = '\0';
        ck_assert_msg(regexec(&re, line, 0, NULL, 0) == 0, "log line: %s", line);
        p += len + 1;
    }
    regfree(&re);
    return n;
}

/* The start-up line of a log, checked field by field against want, a
 * NULL-terminated list of "key=value" ("key=" alone: any non-empty value),
 * in order. */
static void
check_started_line(const char *log, const char *const *want)
{
    const char *event = " info workq-server started ";
    const char *at = strstr(log, event);
    ck_assert_msg(at != NULL, "no start-up line in: %s", log);
    while (at > log && at[-1] != '\n')
        at--;
    char line[2048];
    size_t len = strcspn(at, "\n");
    ck_assert_uint_lt(len, sizeof line);
    memcpy(line, at, len);
    line[len] = '\0';

    /* The time stamp is UTC and now (give or take a minute). */
    regex_t re;
    ck_assert_int_eq(regcomp(&re, "^" LOG_TIME_RE " info workq-server started ", REG_EXTENDED), 0);
    ck_assert_msg(regexec(&re, line, 0, NULL, 0) == 0, "start-up line: %s", line);
    regfree(&re);
    struct tm tm = {0};
    ck_assert_ptr_nonnull(strptime(line, "%Y-%m-%dT%H:%M:%S", &tm));
    int64_t t = (int64_t)timegm(&tm) * 1000;
    ck_assert_msg(llabs(t - systest_now_ms()) < 60000, "time stamp: %s", line);

    char *fields = strstr(line, event) + strlen(event);
    size_t i = 0;
    for (char *save, *tok = strtok_r(fields, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save), i++) {
        char *eq = strchr(tok, '=');
        ck_assert_msg(eq != NULL && eq > tok && eq[1] != '\0', "not key=value: %s", tok);
        ck_assert_msg(want[i] != NULL, "unexpected field %s", tok);
        size_t wl = strlen(want[i]);
        if (want[i][wl - 1] == '=')
            ck_assert_msg(strncmp(tok, want[i], wl) == 0, "field %s, want %s", tok, want[i]);
        else
            ck_assert_str_eq(tok, want[i]);
    }
    ck_assert_msg(want[i] == NULL, "missing field %s", want[i]);
}

START_TEST(test_log_format)
{
    unsetenv("JOURNAL_STREAM"); /* no journal: lines carry their time */
    char dir[32];
    systest_tmpdir_new(dir);
    struct systest_proc p;

    /* defaults */
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", NULL});
    ck_assert(systest_proc_wait(&p, true, "started"));
    ck_assert(systest_proc_wait(&p, true, "\n"));
    char pid[32], listen[64];
    snprintf(pid, sizeof pid, "pid=%ld", (long)p.s.pid);
    snprintf(listen, sizeof listen, "listen=127.0.0.1:%d", p.s.port);
    const char *const defaults[] = {"version=" PACKAGE_VERSION,
                                    pid,
                                    listen,
                                    "allocator=",
                                    "max_line=65536",
                                    "max_payload=1048576",
                                    "max_connections=0",
                                    "idle_timeout_ms=0",
                                    "max_memory=0",
                                    "cmdlog=none",
                                    "sync=interval",
                                    "sync_int_ms=1000",
                                    NULL};
    check_started_line(p.err.p, defaults);
    systest_proc_stop(&p);
    ck_assert_int_eq(check_log_lines(p.err.p), 3); /* started, stopping, stopped */
    ck_assert_ptr_nonnull(strstr(p.err.p, " info stopping signal=15 clients=0\n"));
    ck_assert_ptr_nonnull(strstr(p.err.p, " info workq-server stopped\n"));
    systest_proc_free(&p);

    /* every value shows what the flags set */
    char cmdlog[64];
    snprintf(cmdlog, sizeof cmdlog, "cmdlog=%s", dir);
    const char *const args[] = {"-listen",
                                "127.0.0.1:0",
                                "--max-line",
                                "1000",
                                "-max-payload",
                                "2K",
                                "--max-connections",
                                "7",
                                "-idle-timeout",
                                "90s",
                                "--max-memory=1M",
                                "-cmdlog-path",
                                dir,
                                "-cmdlog-sync",
                                "always",
                                NULL};
    systest_proc_start(&p, args);
    ck_assert(systest_proc_wait(&p, true, "started"));
    ck_assert(systest_proc_wait(&p, true, "sync_int_ms="));
    ck_assert(systest_proc_wait(&p, true, "sync_int_ms=1000\n"));
    snprintf(pid, sizeof pid, "pid=%ld", (long)p.s.pid);
    snprintf(listen, sizeof listen, "listen=127.0.0.1:%d", p.s.port);
    const char *const set[] = {"version=" PACKAGE_VERSION,
                               pid,
                               listen,
                               "allocator=",
                               "max_line=1000",
                               "max_payload=2048",
                               "max_connections=7",
                               "idle_timeout_ms=90000",
                               "max_memory=1048576",
                               cmdlog,
                               "sync=always",
                               "sync_int_ms=1000",
                               NULL};
    check_started_line(p.err.p, set);
    systest_proc_stop(&p);
    check_log_lines(p.err.p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* Start a server with args plus -max-connections 1, make it log a warning
 * (a refused client), stop it and return its stderr (free it). */
static char *
log_with_warning(const char *const *args)
{
    const char *all[16];
    size_t n = 0;
    for (; args[n] != NULL; n++)
        all[n] = args[n];
    all[n++] = "-max-connections";
    all[n++] = "1";
    all[n] = NULL;
    struct systest_proc p;
    systest_proc_start(&p, all);
    int a = systest_connect(&p.s);
    systest_sync(a);
    int b = systest_connect(&p.s);
    systest_expect(b, FULL);
    systest_expect_closed(b);
    close(b);
    close(a);
    systest_proc_stop(&p); /* the warning was written before the refusal was sent */
    check_log_lines(p.err.p);
    free(p.out.p);
    return p.err.p;
}

START_TEST(test_log_levels)
{
    static const char *const warn_levels[][4] = {
        {"-listen", "127.0.0.1:0", "--log-level", "warn"},
        {"-listen", "127.0.0.1:0", "-log-level=warning", NULL},
        {"-listen", "127.0.0.1:0", "--log-level=error", "-v"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(warn_levels); i++) {
        const char *args[5] = {0};
        memcpy(args, warn_levels[i], sizeof warn_levels[i]);
        char *err = log_with_warning(args);
        ck_assert_msg(strstr(err, " warn refusing clients max_connections=1\n") != NULL,
                      "stderr: %s", err);
        ck_assert_msg(strstr(err, " info ") == NULL, "info lines at warn: %s", err);
        free(err);
    }
    /* error (also "err"): only errors */
    static const char *const err_levels[][5] = {
        {"-listen", "127.0.0.1:0", "--log-level", "error", NULL},
        {"-listen", "127.0.0.1:0", "-log-level", "err", NULL},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(err_levels); i++) {
        char *err = log_with_warning(err_levels[i]);
        ck_assert_str_eq(err, "");
        free(err);
    }
    /* info, the default: warnings and info */
    char *err = log_with_warning((const char *const[]){"-listen", "127.0.0.1:0", NULL});
    ck_assert_ptr_nonnull(strstr(err, " warn refusing clients max_connections=1\n"));
    ck_assert_ptr_nonnull(strstr(err, " info workq-server started "));
    free(err);
}
END_TEST

/* Debug lines (an idle connection closed) need -v, -vv or -log-level
 * debug; more -v than levels stays at debug. */
START_TEST(test_log_verbose)
{
    static const char *const levels[][6] = {
        {"-listen", "127.0.0.1:0", "-idle-timeout", "200ms", NULL},
        {"-listen", "127.0.0.1:0", "-idle-timeout", "200ms", "-v", NULL},
        {"-listen", "127.0.0.1:0", "-idle-timeout", "200ms", "-vv", NULL},
        {"-listen", "127.0.0.1:0", "-idle-timeout", "200ms", "-log-level=debug", NULL},
        {"-listen", "127.0.0.1:0", "-idle-timeout", "200ms", "-v", "-v"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(levels); i++) {
        const char *args[7] = {0};
        memcpy(args, levels[i], sizeof levels[i]);
        struct systest_proc p;
        systest_proc_start(&p, args);
        int fd = systest_connect(&p.s);
        systest_expect_closed(fd); /* logged before the close */
        close(fd);
        systest_proc_stop(&p);
        check_log_lines(p.err.p);
        bool debug = strstr(p.err.p, " debug closing idle connection peer=127.0.0.1:") != NULL;
        ck_assert_msg(debug == (i > 0), "%s: stderr: %s", args[4] ? args[4] : "(default)", p.err.p);
        ck_assert_ptr_nonnull(strstr(p.err.p, " info workq-server started "));
        systest_proc_free(&p);
    }
}
END_TEST

/* SIGHUP reopens -log-file: after logrotate's rename, lines go to a new
 * file at the old path. */
START_TEST(test_log_sighup)
{
    char dir[32], log[64], moved[64];
    systest_tmpdir_new(dir);
    snprintf(log, sizeof log, "%s/wq.log", dir);
    snprintf(moved, sizeof moved, "%s/wq.log.1", dir);
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-L", log, NULL});
    ck_assert(wait_file_contains(log, " info workq-server started "));

    ck_assert_int_eq(rename(log, moved), 0);
    ck_assert_int_eq(kill(p.s.pid, SIGHUP), 0);
    ck_assert_msg(wait_file_contains(log, " info log reopened\n"), "no new log file");
    int fd = systest_connect(&p.s); /* still serving */
    systest_sync(fd);
    close(fd);
    /* and again */
    ck_assert_int_eq(unlink(log), 0);
    ck_assert_int_eq(kill(p.s.pid, SIGHUP), 0);
    ck_assert(wait_file_contains(log, " info log reopened\n"));
    systest_proc_stop(&p);

    char buf[8192];
    ck_assert_int_gt(read_file(log, buf, sizeof buf), 0);
    ck_assert_int_eq(check_log_lines(buf), 3); /* reopened, stopping, stopped */
    ck_assert_ptr_nonnull(strstr(buf, " info stopping signal=15 "));
    ck_assert_ptr_nonnull(strstr(buf, " info workq-server stopped\n"));
    ck_assert_int_gt(read_file(moved, buf, sizeof buf), 0);
    ck_assert_int_eq(check_log_lines(buf), 1); /* started */
    ck_assert_str_eq(p.err.p, "");             /* nothing on stderr with -L */
    systest_proc_free(&p);

    /* without -L, SIGHUP is harmless */
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", NULL});
    ck_assert_int_eq(kill(p.s.pid, SIGHUP), 0);
    ck_assert(systest_proc_wait(&p, true, " info log reopened\n"));
    fd = systest_connect(&p.s);
    systest_sync(fd);
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* A log file that cannot be reopened: the old one stays in use and says
 * so. */
START_TEST(test_log_sighup_failure)
{
    char dir[32], sub[64], log[80], moved[64], movedlog[96];
    systest_tmpdir_new(dir);
    snprintf(sub, sizeof sub, "%s/logs", dir);
    snprintf(log, sizeof log, "%s/wq.log", sub);
    snprintf(moved, sizeof moved, "%s/gone", dir);
    snprintf(movedlog, sizeof movedlog, "%s/wq.log", moved);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-L", log, NULL});
    ck_assert(wait_file_contains(log, " info workq-server started "));
    ck_assert_int_eq(rename(sub, moved), 0);
    ck_assert_int_eq(kill(p.s.pid, SIGHUP), 0);
    ck_assert(wait_file_contains(
        movedlog, " error cannot reopen the log file error=\"No such file or directory\"\n"));
    int fd = systest_connect(&p.s);
    systest_sync(fd);
    close(fd);
    systest_proc_stop(&p);
    ck_assert(wait_file_contains(movedlog, " info workq-server stopped\n"));
    ck_assert(!file_exists(sub));
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* -user */

/* A copy of the server binary that any user may run, in a new directory
 * (dir gets its name): the build tree may sit below a directory only root
 * can enter, such as a mktemp -d one. */
static void
server_copy_for_all(char dir[32], char path[64])
{
    systest_tmpdir_new(dir);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    snprintf(path, 64, "%s/workq-server", dir);
    const char *src = getenv("WQ_SERVER");
    ck_assert_ptr_nonnull(src);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    ck_assert(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    ck_assert_int_eq(n, 0);
    close(in);
    ck_assert_int_eq(close(out), 0);
}

/* Run the server with args as user pw (we are root): its exit status, its
 * stderr into err. */
static int
run_as(const struct passwd *pw, const char *const *args, char *err, size_t cap)
{
    char dir[32], server[64];
    server_copy_for_all(dir, server);
    int ep[2];
    ck_assert_int_eq(pipe2(ep, O_CLOEXEC), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
            _exit(126);
        setenv("WQ_SERVER", server, 1);
        dup2(ep[1], STDERR_FILENO);
        int out;
        pid_t s = systest_spawn(args, &out, -1); /* behind the wrapper, if any */
        char buf[256];
        while (read(out, buf, sizeof buf) > 0)
            ;
        int st;
        if (waitpid(s, &st, 0) != s)
            _exit(125);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    close(ep[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(ep[0], err + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(ep[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    systest_tmpdir_remove(dir);
    return WEXITSTATUS(st);
}

/* As root: -user nobody drops uid, gid and groups after binding. */
START_TEST(test_user_drop)
{
    if (geteuid() != 0) {
        fprintf(stderr, "test_user_drop: not root, only the refusal is tested\n");
        return;
    }
    struct passwd *pw = getpwnam("nobody");
    ck_assert_ptr_nonnull(pw);
    uid_t uid = pw->pw_uid;
    gid_t gid = pw->pw_gid;
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-u", "nobody", NULL});
    char line[512];
    proc_status_field(p.s.pid, "Uid:", line, sizeof line);
    expect_ids(line, (long)uid);
    proc_status_field(p.s.pid, "Gid:", line, sizeof line);
    expect_ids(line, (long)gid);
    /* The groups are nobody's, root's are gone. */
    gid_t want[64];
    int nwant = 64;
    ck_assert_int_ge(getgrouplist("nobody", gid, want, &nwant), 0);
    proc_status_field(p.s.pid, "Groups:", line, sizeof line);
    int ngot = 0;
    for (char *save, *tok = strtok_r(line, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save), ngot++) {
        bool found = false;
        for (int i = 0; i < nwant; i++)
            found = found || (long)want[i] == atol(tok);
        ck_assert_msg(found, "group %s is not nobody's", tok);
    }
    ck_assert_int_eq(ngot, nwant);

    /* nothing it could run may gain privileges back */
    proc_status_field(p.s.pid, "NoNewPrivs:", line, sizeof line);
    ck_assert_str_eq(line, "1");

    int fd = systest_connect(&p.s);
    systest_add(fd, id4(1), "q", "x");
    systest_lease_now(fd, "q", id4(1), "x");
    close(fd);
    ck_assert(systest_proc_wait(
        &p, true,
        f(" info dropped privileges user=nobody uid=%ld gid=%ld\n", (long)uid, (long)gid)));
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* A command log directory the server cannot write is refused at start,
 * before it says it is ready: the path and the reason, exit 73 (it was
 * found at the first write, whose client then waited for ever).  As root
 * the server runs as nobody (-user) in root's directory; else the
 * directory is made read-only. */
START_TEST(test_cmdlog_dir_unwritable)
{
    char dir[64];
    systest_tmpdir_new(dir);
    bool root = geteuid() == 0;
    ck_assert_int_eq(chmod(dir, root ? 0755 : 0555), 0);
    const char *args[] = {"-listen", "127.0.0.1:0", "-cmdlog-path", dir, root ? "-u" : NULL,
                          "nobody",  NULL};
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, args), 73);
    ck_assert_ptr_nonnull(
        strstr(p.err.p, f(" error cmdlog cannot write in its directory dir=%s error=\"Permission "
                          "denied\" (the server's user must own it or be able to write it)\n",
                          dir)));
    ck_assert_ptr_null(strstr(p.out.p, "listening on"));
    systest_proc_free(&p);
    chmod(dir, 0755);
    systest_tmpdir_remove(dir);
}
END_TEST

/* As root: -user gives the log file to the user, so that SIGHUP reopens
 * it, and warns at start that a pidfile in a directory the user cannot
 * write will stay behind. */
START_TEST(test_user_log_and_pidfile)
{
    if (geteuid() != 0)
        return;
    struct passwd *pw = getpwnam("nobody");
    ck_assert_ptr_nonnull(pw);
    char dir[64];
    systest_tmpdir_new(dir);
    const char *log = f("%s/server.log", dir), *pid = f("%s/server.pid", dir);
    char logpath[128], pidpath[128];
    snprintf(logpath, sizeof logpath, "%s", log);
    snprintf(pidpath, sizeof pidpath, "%s", pid);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-u", "nobody",
                                                 "-log-file", logpath, "-pidfile", pidpath, NULL});
    struct stat st;
    ck_assert_int_eq(stat(logpath, &st), 0);
    ck_assert_int_eq(st.st_uid, pw->pw_uid);
    ck_assert_int_eq(rename(logpath, f("%s.1", logpath)), 0);
    /* the directory is root's: the server could not create the file anew */
    int fd = open(logpath, O_WRONLY | O_CREAT, 0640);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchown(fd, pw->pw_uid, pw->pw_gid), 0);
    close(fd);
    kill(p.s.pid, SIGHUP);
    char *text = NULL;
    for (int i = 0; i < 200; i++) {
        free(text);
        text = systest_slurp(logpath, NULL);
        if (text != NULL && strstr(text, "log reopened") != NULL)
            break;
        systest_sleep_ms(10);
    }
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, "log reopened") != NULL, "%s", text);
    free(text);
    text = systest_slurp(f("%s.1", logpath), NULL);
    ck_assert_ptr_nonnull(strstr(text, " warn the pidfile cannot be removed at exit: its directory "
                                       "is not writable after dropping privileges path="));
    free(text);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    unlink(pidpath);
    /* a symlink where the log file goes (the user may write its
     * directory) is neither followed nor given away: the start fails */
    const char *target = f("%s/roots", dir);
    char targetpath[128];
    snprintf(targetpath, sizeof targetpath, "%s", target);
    int tfd = open(targetpath, O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(tfd, 0);
    close(tfd);
    unlink(logpath);
    ck_assert_int_eq(symlink(targetpath, logpath), 0);
    ck_assert_int_eq(
        systest_proc_run(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-u", "nobody",
                                                   "-log-file", logpath, NULL}),
        73);
    systest_proc_free(&p);
    ck_assert_int_eq(stat(targetpath, &st), 0);
    ck_assert_int_eq(st.st_uid, 0);
    ck_assert_int_eq(st.st_size, 0);
    systest_tmpdir_remove(dir);
}
END_TEST

/* Not root: -user is refused with 77 (EX_NOPERM).  As root, this runs the
 * server as nobody asking for another user. */
START_TEST(test_user_not_root)
{
    char err[4096];
    struct passwd *nobody = getpwnam("nobody");
    ck_assert_ptr_nonnull(nobody);
    if (geteuid() != 0) {
        const char *target = geteuid() == nobody->pw_uid ? "root" : "nobody";
        struct systest_proc p;
        int rc = systest_proc_run(
            &p, (const char *const[]){"-listen", "127.0.0.1:0", "--user", target, NULL});
        ck_assert_int_eq(rc, 77);
        ck_assert_ptr_nonnull(strstr(
            p.err.p, f(" error cannot drop privileges to user=%s: not running as root\n", target)));
        ck_assert_str_eq(p.out.p, "");
        systest_proc_free(&p);
        return;
    }
    static const char *const targets[] = {"root", "daemon"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(targets); i++) {
        const char *const args[] = {"-listen", "127.0.0.1:0", "--user", targets[i], NULL};
        int rc = run_as(nobody, args, err, sizeof err);
        ck_assert_msg(rc == 77, "--user %s as nobody: exit %d (stderr: %s)", targets[i], rc, err);
        ck_assert_ptr_nonnull(strstr(
            err, f(" error cannot drop privileges to user=%s: not running as root\n", targets[i])));
    }
    /* the user it already is: nothing to drop */
    const char *const same[] = {"-listen", "127.0.0.1:0", "--user", "nobody", "-V", NULL};
    ck_assert_int_eq(run_as(nobody, same, err, sizeof err), 0);
}
END_TEST

/* An unknown user: 67 (EX_NOUSER), and the pidfile written before is
 * removed again. */
START_TEST(test_user_unknown)
{
    char dir[32], pidfile[64];
    systest_tmpdir_new(dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    struct systest_proc p;
    const char *const args[] = {"-listen", "127.0.0.1:0", "-user", "wq-no-such-user",
                                "-P",      pidfile,       NULL};
    ck_assert_int_eq(systest_proc_run(&p, args), 67);
    ck_assert_ptr_nonnull(
        strstr(p.err.p, " error cannot drop privileges: no such user user=wq-no-such-user\n"));
    ck_assert_str_eq(p.out.p, "");
    ck_assert(!file_exists(pidfile));
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* As root: -u nobody with the pidfile in a directory nobody may write:
 * the pidfile is removed at exit ("when the directory allows it"), in the
 * foreground and with -d. */
START_TEST(test_user_daemon_pidfile)
{
    if (geteuid() != 0)
        return;
    become_subreaper();
    struct passwd *pw = getpwnam("nobody");
    ck_assert_ptr_nonnull(pw);
    char dir[32], pidfile[64], logfile[64];
    systest_tmpdir_new(dir);
    ck_assert_int_eq(chown(dir, pw->pw_uid, pw->pw_gid), 0);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    snprintf(logfile, sizeof logfile, "%s/wq.log", dir);
    struct systest_proc p;
    systest_proc_start(
        &p, (const char *const[]){"-listen", "127.0.0.1:0", "-u", "nobody", "-P", pidfile, NULL});
    ck_assert_int_eq(read_pidfile(pidfile), p.s.pid);
    systest_proc_stop(&p);
    ck_assert_msg(!file_exists(pidfile), "pidfile left behind (foreground)");
    systest_proc_free(&p);

    const char *const args[] = {"-d", "-listen", "127.0.0.1:0", "-u",    "nobody",
                                "-P", pidfile,   "-L",          logfile, NULL};
    ck_assert_int_eq(systest_proc_run(&p, args), 0);
    pid_t pid = read_pidfile(pidfile);
    systest_track_pid(pid);
    char line[512];
    proc_status_field(pid, "Uid:", line, sizeof line);
    expect_ids(line, (long)pw->pw_uid);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    expect_gone_ok(pid);
    ck_assert(wait_file_contains(logfile, " info workq-server stopped\n"));
    struct stat sb;
    if (stat(pidfile, &sb) == 0)
        ck_abort_msg(
            "pidfile left behind by -d in a directory owned by nobody (mode %o, owner %ld)",
            (unsigned)(sb.st_mode & 07777), (long)sb.st_uid);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The config file */

/* A line of max_line+1 bytes is too long, one of max_line is fine. */
static void
expect_max_line(const struct systest_server *s, size_t max_line)
{
    int fd = systest_connect(s);
    systest_roundtrip(
        fd,
        f("%s\r\n", systest_padded_line(max_line, "delete 00000000-0000-4000-8000-000000000001")),
        NF);
    systest_sends(
        fd, f("%s\r\n",
              systest_padded_line(max_line + 1, "delete 00000000-0000-4000-8000-000000000001")));
    systest_expect(fd, ERR("Line too long"));
    systest_expect_closed(fd);
    close(fd);
}

/* Every spelling of a line: "key value", "key = value", "key=value", tabs,
 * spaces around, CR LF, comments, blank lines. */
START_TEST(test_config_honoured)
{
    char dir[32], conf[64];
    systest_tmpdir_new(dir);
    snprintf(conf, sizeof conf, "%s/wq.conf", dir);
    write_file(conf, "# workq-server settings\n"
                     "\n"
                     "   # an indented comment\n"
                     "   \t  \n"
                     "listen = 127.0.0.1:0\n"
                     "max-line=100\n"
                     "log-level\twarn\r\n"
                     "  max-connections   5  \n"
                     "idle-timeout 1h\n"
                     "max-memory = 1M\n"
                     "cmdlog-truncate\n"
                     "daemonize no\n"
                     "syslog = off\n"
                     "#listen 127.0.0.1:1\n");
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-c", conf, NULL});
    expect_max_line(&p.s, 100);
    systest_proc_stop(&p);
    ck_assert_str_eq(p.err.p, ""); /* warn: no info lines */
    ck_assert_int_eq(systest_count_lines(p.out.p), 1);
    systest_proc_free(&p);

    /* one -v on top of the file's warn: info, and the start-up line shows
     * every value */
    systest_proc_start(&p, (const char *const[]){"--config", conf, "-v", NULL});
    ck_assert(systest_proc_wait(&p, true, "sync_int_ms="));
    ck_assert(systest_proc_wait(&p, true,
                                " max_line=100 max_payload=1048576 max_connections=5 "
                                "idle_timeout_ms=3600000 max_memory=1048576 cmdlog=none "));
    systest_proc_stop(&p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* Flags override the file, wherever they stand. */
START_TEST(test_config_flags_override)
{
    char dir[32], conf[64], eq[80], text[256];
    systest_tmpdir_new(dir);
    snprintf(conf, sizeof conf, "%s/wq.conf", dir);
    snprintf(eq, sizeof eq, "--config=%s", conf);
    struct systest_proc busy, p;
    systest_proc_start(&busy, (const char *const[]){"-listen", "127.0.0.1:0", NULL});
    snprintf(text, sizeof text, "listen 127.0.0.1:%d\nmax-line 100\nlog-level error\n",
             busy.s.port);
    write_file(conf, text);

    /* the file alone: its (taken) address, its level */
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-c", conf, NULL}), 69);
    ck_assert_msg(strstr(p.err.p, f(" error cannot listen address=127.0.0.1:%d ", busy.s.port)),
                  "stderr: %s", p.err.p);
    ck_assert_int_eq(check_log_lines(p.err.p), 1);
    systest_proc_free(&p);

    const char *const before[] = {
        "-listen", "127.0.0.1:0", "--max-line=200", "-log-level", "info", "-c", conf, NULL};
    const char *const after[] = {"--max-line",       "200", eq, "-listen=127.0.0.1:0",
                                 "--log-level=info", NULL};
    const char *const *forms[] = {before, after};
    for (size_t i = 0; i < 2; i++) {
        systest_proc_start(&p, forms[i]);
        ck_assert_int_ne(p.s.port, busy.s.port);
        expect_max_line(&p.s, 200);
        ck_assert(systest_proc_wait(&p, true, " max_line=200 "));
        systest_proc_stop(&p);
        systest_proc_free(&p);
    }
    systest_proc_stop(&busy);
    systest_proc_free(&busy);
    systest_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_config_errors)
{
    char dir[32], conf[64];
    systest_tmpdir_new(dir);
    snprintf(conf, sizeof conf, "%s/wq.conf", dir);
    static char long_line[5000 + 16];
    memset(long_line, 'x', 5000);
    memcpy(long_line, "max-line ", 9);
    strcpy(long_line + 5000, "\n");
    static char ok_long[4000 + 16];
    memset(ok_long, 'x', 4000);
    ok_long[0] = '#';
    strcpy(ok_long + 4000, "\nbogus\n");

    const struct {
        const char *text;
        const char *tail; /* stderr after "workq-server: FILE:" */
    } cases[] = {
        {"# settings\n\nbogus 1\n", "3: unknown key 'bogus'\n"},
        {"config /etc/other.conf\n", "1: unknown key 'config'\n"},
        {"help\n", "1: unknown key 'help'\n"},
        {"version = 1\n", "1: unknown key 'version'\n"},
        {"--max-line 100\n", "1: unknown key '--max-line' (keys have no dashes: max-line)\n"},
        {"max-memory 12Q\n",
         "1: invalid max-memory '12Q' (expected bytes, or a size such as 512M or 2G; 0 means no "
         "limit)\n"},
        {"idle-timeout = 5 minutes\n",
         "1: invalid idle-timeout '5 minutes' (expected a duration such as 300, 90s, 5m or "
         "1500ms; at most 30 days)\n"},
        {"log-level=loud\n", "1: invalid log-level 'loud' (expected error, warn, info or debug)\n"},
        {"daemonize maybe\n", "1: invalid daemonize 'maybe' (expected yes or no)\n"},
        {"syslog 2\n", "1: invalid syslog '2' (expected yes or no)\n"},
        {"listen nonsense\n", "1: invalid listen 'nonsense' (expected HOST:PORT[,HOST:PORT...])\n"},
        {"max-line 10\n", "1: invalid max-line '10' (expected 64..16777216)\n"},
        {"max-connections -1\n",
         "1: invalid max-connections '-1' (expected 0..10000000; 0 means no limit)\n"},
        {"max-line\n", "1: max-line needs a value\n"},
        {"\npidfile =\n", "2: pidfile needs a value\n"},
        {"listen =   \n", "1: listen needs a value\n"},
        {"bogus\nmax-line 1\n", "1: unknown key 'bogus'\n"}, /* the first error stops */
        {long_line, "1: line too long\n"},
        {ok_long, "2: unknown key 'bogus'\n"}, /* 4000 bytes are fine */
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        write_file(conf, cases[i].text);
        struct systest_proc p;
        int rc =
            systest_proc_run(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-c", conf, NULL});
        ck_assert_msg(rc == 78, "case %zu: exit %d (stderr: %s)", i, rc, p.err.p);
        ck_assert_str_eq(p.err.p, f("workq-server: %s:%s", conf, cases[i].tail));
        ck_assert_str_eq(p.out.p, "");
        systest_proc_free(&p);
    }
    systest_tmpdir_remove(dir);
}
END_TEST

/* A config file that cannot be read: 66 (EX_NOINPUT), its absolute path
 * named. */
START_TEST(test_config_unreadable)
{
    char dir[32], missing[64];
    systest_tmpdir_new(dir);
    snprintf(missing, sizeof missing, "%s/none.conf", dir);
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-c", missing, NULL}), 66);
    ck_assert_str_eq(p.err.p, f("workq-server: cannot read config file %s: No such file or "
                                "directory\n",
                                missing));
    systest_proc_free(&p);
    /* a directory opens but cannot be read */
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-config", dir, NULL}), 66);
    ck_assert_str_eq(p.err.p, f("workq-server: cannot read config file %s: Is a directory\n", dir));
    systest_proc_free(&p);
    /* a relative name is named absolute */
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"--config", "none.conf", NULL}),
                     66);
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_str_eq(p.err.p, f("workq-server: cannot read config file %s: No such file or "
                                "directory\n",
                                missing));
    systest_proc_free(&p);
    /* a bad flag is found before the file is read */
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-c", missing, "--bogus", NULL}),
                     64);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* Boolean keys: alone they mean yes. */
START_TEST(test_config_booleans)
{
    become_subreaper();
    char dir[32], conf[64], pidfile[64], logfile[64], text[512];
    systest_tmpdir_new(dir);
    snprintf(conf, sizeof conf, "%s/wq.conf", dir);
    snprintf(pidfile, sizeof pidfile, "%s/wq.pid", dir);
    snprintf(logfile, sizeof logfile, "%s/wq.log", dir);
    snprintf(text, sizeof text,
             "listen 127.0.0.1:0\ndaemonize\npidfile %s\nlog-file = %s\ncmdlog-truncate = YES\n",
             pidfile, logfile);
    write_file(conf, text);
    struct systest_proc p;
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-c", conf, NULL}), 0);
    pid_t pid = read_pidfile(pidfile);
    systest_track_pid(pid);
    ck_assert_int_ne(pid, p.s.pid);
    int fd = systest_connect_port(systest_listening_port(p.out.p, 0));
    systest_sync(fd);
    close(fd);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    expect_gone_ok(pid);
    ck_assert(!file_exists(pidfile));
    systest_proc_free(&p);

    /* "daemonize off": the foreground process is the server */
    snprintf(text, sizeof text, "listen 127.0.0.1:0\ndaemonize off\nsyslog false\n");
    write_file(conf, text);
    systest_proc_start(&p, (const char *const[]){"-c", conf, NULL});
    ck_assert(systest_proc_wait(&p, true, " info workq-server started "));
    ck_assert(systest_proc_wait(&p, true, f(" pid=%ld ", (long)p.s.pid)));
    systest_proc_stop(&p);
    systest_proc_free(&p);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *
daemon_suite(void)
{
    const struct systest_group groups[] = {
        {"daemonize",
         {test_daemon_pidfile, test_daemon_relative_paths, test_daemon_failure,
          test_daemon_pidfile_in_use, NULL}},
        {"notify", {test_notify_path, test_notify_abstract, test_notify_daemon, NULL}},
        {"log",
         {test_log_format, test_log_levels, test_log_verbose, test_log_sighup,
          test_log_sighup_failure, NULL}},
        {"user",
         {test_user_drop, test_user_log_and_pidfile, test_cmdlog_dir_unwritable, test_user_not_root,
          test_user_unknown, test_user_daemon_pidfile, NULL}},
        {"config",
         {test_config_honoured, test_config_flags_override, test_config_errors,
          test_config_unreadable, test_config_booleans, NULL}},
    };
    return systest_suite("daemon", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(daemon_suite());
}
