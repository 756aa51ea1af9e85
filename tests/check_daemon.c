/* check_daemon.c - system tests of what makes workq-server a daemon: -d with
 * its pidfile and start-up status, sd_notify, the log (format, levels,
 * SIGHUP), -user, -max-connections, -idle-timeout, -max-memory, the config
 * file, several listen addresses and -help (doc/workq-server.8).
 *
 * Tests check behaviour, never speed: every wait for something that must
 * happen is generous and scaled by WQ_TEST_SLOW, and checks that something
 * has NOT happened yet run only when WQ_TEST_SLOW is 1.
 *
 * A daemon leaves the test's process group (setsid), so check's clean-up
 * would not take it.  The daemon tests make the test process a child
 * subreaper: the daemon is re-parented to it, so its exit status can be
 * read; and a daemon whose pid a test learnt is killed after the suite
 * should the test fail.  Temporary directories /tmp/wq-test-XXXXXX are
 * removed after the suite too.
 *
 * The -user tests need root for the real thing: as root they drop to
 * nobody, and check the refusal (77) by running the server as nobody; as
 * another user they check only the refusal. */
#include "config.h"
#include "systest.h"

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

#include "core.h" /* core_job_bytes: what -max-memory counts per job */

#define TTR   SYSTEST_TTR
#define TTL   SYSTEST_TTL
#define PARK  "60000" /* wait of a lease/result/run that must be woken */
#define LATER "2999-01-01T00:00:00Z"
#define OOM   "-SERVER-ERROR Out of memory\r\n"
/* The idle timeout of the idle tests. */
#define IDLE_MS 500

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
/* Talking to the server */

/* Wait (up to the scaled bound) until "inspect server" shows key = want. */
static void
wait_stat(int fd, const char *key, uint64_t want)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    uint64_t v;
    while ((v = systest_server_stat(fd, key)) != want) {
        ck_assert_msg(systest_now_ms() < deadline, "%s is %llu, want %llu", key,
                      (unsigned long long)v, (unsigned long long)want);
        systest_sleep_ms(10);
    }
}

/* Send a command that answers -NOT-FOUND on an accepted connection: true
 * if it did, false if the server refused the connection with FULL. */
static bool
try_sync(int fd)
{
    const char *cmd = "delete 00000000-0000-4000-8000-000000000001\r\n";
    (void)!send(fd, cmd, strlen(cmd), MSG_NOSIGNAL); /* a refused one may reset */
    char buf[64];
    size_t n = 0;
    while (n < strlen(FULL)) {
        struct pollfd p = {fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, systest_wait_ms()) > 0, "no reply");
        ssize_t r = recv(fd, buf + n, strlen(FULL) - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == strlen(NF) && memcmp(buf, NF, n) == 0)
            return true;
    }
    ck_assert_msg(n == strlen(FULL) && memcmp(buf, FULL, n) == 0,
                  "neither accepted nor refused (%zu bytes)", n);
    return false;
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
    systest_proc_start(&first, (const char *const[]){"-listen", "127.0.0.1:0", "-P", pidfile, NULL});
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
    systest_proc_start(&first, (const char *const[]){"-listen", "127.0.0.1:0", "-P", pidfile, NULL});
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
        bool debug = strstr(p.err.p, " debug closing idle connection fd=") != NULL;
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
        int rc =
            systest_proc_run(&p, (const char *const[]){"-listen", "127.0.0.1:0", "--user", target, NULL});
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
/* -max-connections */

START_TEST(test_maxconn_refuse)
{
    struct systest_server s;
    systest_start(&s, "--max-connections", "2", NULL);
    int a = systest_connect(&s), b = systest_connect(&s);
    systest_sync(a);
    systest_sync(b);
    ck_assert_uint_eq(systest_server_stat(a, "active-clients"), 2);
    /* the third and fourth get the reply, then EOF, whatever they send */
    int c = systest_connect(&s);
    systest_expect(c, FULL);
    systest_expect_closed(c);
    close(c);
    int d = systest_connect(&s);
    systest_expect(d, FULL);
    systest_expect_closed(d);
    close(d);
    /* the first two are unaffected */
    systest_sync(a);
    systest_sync(b);
    ck_assert_uint_eq(systest_server_stat(b, "active-clients"), 2);
    close(a);
    close(b);
    systest_stop(&s);
}
END_TEST

START_TEST(test_maxconn_accept_again)
{
    struct systest_server s;
    systest_start(&s, "-max-connections=1", NULL);
    int a = systest_connect(&s);
    systest_sync(a);
    int b = systest_connect(&s);
    ck_assert(!try_sync(b));
    close(b);
    close(a);
    /* Once the server has seen the close, a new client is accepted. */
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    int c;
    for (;;) {
        c = systest_connect(&s);
        if (try_sync(c))
            break;
        close(c);
        ck_assert_msg(systest_now_ms() < deadline, "no client accepted after one left");
        systest_sleep_ms(20);
    }
    systest_add(c, id4(1), "q", "x");
    /* and the limit holds again */
    int d = systest_connect(&s);
    systest_expect(d, FULL);
    systest_expect_closed(d);
    close(d);
    systest_lease_now(c, "q", id4(1), "x");
    close(c);
    systest_stop(&s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* -idle-timeout */

/* A silent connection is closed between 1 and 1.25 timeouts after it fell
 * silent, with nothing sent; one that keeps talking is not; neither is one
 * with half a command. */
START_TEST(test_idle_silent_closed)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int64_t t0 = systest_now_ms();
    int quiet = systest_connect(&s);
    int partial = systest_connect(&s);
    systest_sends(partial, "inspect ser");
    int busy = systest_connect(&s);
    if (systest_exact_timing()) {
        /* busy talks every 100 ms; quiet is not closed before the timeout */
        while (systest_now_ms() - t0 < IDLE_MS - 150) {
            systest_sleep_ms(100);
            systest_sync(busy);
        }
        systest_expect_silence(quiet, 50);
    }
    systest_expect_closed(quiet);
    int64_t closed = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(closed >= IDLE_MS - 10, "closed after %lld ms", (long long)closed);
    ck_assert_msg(closed <= IDLE_MS * 4 * systest_slow(), "closed after %lld ms",
                  (long long)closed);
    systest_expect_closed(partial);
    if (systest_exact_timing()) {
        /* three timeouts of talk keep busy open */
        for (int i = 0; i < 15; i++) {
            systest_sleep_ms(100);
            systest_sync(busy);
        }
        ck_assert_uint_eq(systest_server_stat(busy, "active-clients"), 1);
    }
    close(quiet);
    close(partial);
    close(busy);
    systest_stop(&s);
}
END_TEST

/* A client still reading a long answer is not idle, though it sends
 * nothing: its pipelined commands are all answered. */
START_TEST(test_idle_slow_reader)
{
    enum { LEN = 1048576, N = 12 };
    static char payload[LEN], buf[64 * 1024];
    memset(payload, 'p', LEN);
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int fd = systest_connect(&s);
    systest_sends(fd, f("add %s q 60000 60000 %d\r\n", id4(1), LEN));
    systest_send(fd, payload, LEN);
    systest_roundtrip(fd, "\r\n", OK);
    /* N answers of 1 MiB each: the server throttles this client's input
     * and it reads them over several idle timeouts. */
    for (int i = 0; i < N; i++)
        systest_sends(fd, f("inspect job %s\r\n", id4(1)));
    systest_sends(fd, f("delete %s\r\n", id4(9)));
    /* Read slowly, 64 KiB every 30 ms (about 2 MiB/s), until the answer
     * to the last command, -NOT-FOUND, ends the stream. */
    char tail[12] = "";
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        ck_assert_msg(n > 0, "closed after %zu bytes", got);
        got += (size_t)n;
        size_t keep = (size_t)n < sizeof tail ? sizeof tail - (size_t)n : 0;
        memmove(tail, tail + sizeof tail - keep, keep);
        memcpy(tail + keep, buf + (size_t)n - (sizeof tail - keep), sizeof tail - keep);
        if (memcmp(tail, "-NOT-FOUND\r\n", sizeof tail) == 0)
            break;
        systest_sleep_ms(30);
    }
    ck_assert_uint_gt(got, (size_t)N * LEN);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A parked lease, a waiting run and a waiting result are never idle; each
 * becomes idle from its reply on. */
START_TEST(test_idle_waiting_not_idle)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int ctl = systest_connect(&s);
    systest_add(ctl, id4(2), "r", "y");
    close(ctl);
    int leaser = systest_connect(&s);
    systest_sends(leaser, "lease q " PARK "\r\n");
    int runner = systest_connect(&s);
    systest_sends(runner, f("run %s w %u " PARK " 1\r\nx\r\n", id4(1), TTR));
    int waiter = systest_connect(&s);
    systest_sends(waiter, f("result %s " PARK "\r\n", id4(2)));

    /* Three timeouts later, all three are waiting still: never idle.  This
     * holds however slow the server is, so it needs no exact timing. */
    systest_sleep_ms(IDLE_MS * 3);
    ctl = systest_connect(&s);
    ck_assert_uint_eq(systest_server_stat(ctl, "active-clients"), 4);
    ck_assert_uint_eq(systest_server_stat(ctl, "parked-clients"), 3);
    systest_add(ctl, id4(3), "q", "z");
    systest_expect_lease(leaser, id4(3), "q", "z");
    int64_t t0 = systest_now_ms();
    systest_lease_now(ctl, "w", id4(1), "x");
    systest_roundtrip(ctl, f("complete %s 4\r\ndone\r\n", id4(1)), OK);
    systest_expect(runner, systest_result_reply(id4(1), 1, "done"));
    systest_roundtrip(ctl, f("complete %s 2\r\nok\r\n", id4(2)), OK);
    systest_expect(waiter, systest_result_reply(id4(2), 1, "ok"));
    close(ctl);

    /* idle from the reply on: not at once, but then */
    if (systest_exact_timing() && systest_now_ms() - t0 < 200)
        systest_expect_silence(leaser, 200);
    systest_expect_closed(leaser);
    systest_expect_closed(runner);
    systest_expect_closed(waiter);
    close(leaser);
    close(runner);
    close(waiter);
    systest_stop(&s);
}
END_TEST

/* After a wait ends with -TIMEOUT, idleness counts from that reply, not
 * from the command that parked. */
START_TEST(test_idle_after_timeout)
{
    struct systest_server s;
    systest_start(&s, "--idle-timeout", "500ms", NULL);
    int ctl = systest_connect(&s);
    systest_add(ctl, id4(1), "q", "x");
    close(ctl);
    int leaser = systest_connect(&s);
    int waiter = systest_connect(&s);
    systest_sends(leaser, "lease empty 1000\r\n");
    systest_sends(waiter, f("result %s 1000\r\n", id4(1)));
    systest_expect(leaser, TO);
    int64_t t0 = systest_now_ms();
    systest_expect(waiter, TO);
    if (systest_exact_timing()) {
        /* Counted from the command, both would go at the next sweep. */
        systest_expect_silence(leaser, 300);
        systest_expect_silence(waiter, 10);
    }
    systest_expect_closed(leaser);
    int64_t after = systest_now_ms() - t0;
    if (systest_exact_timing())
        ck_assert_msg(after >= IDLE_MS - 100, "closed %lld ms after -TIMEOUT", (long long)after);
    systest_expect_closed(waiter);
    close(leaser);
    close(waiter);
    systest_stop(&s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* -max-memory */

static const char *
u64s(uint64_t v)
{
    return f("%llu", (unsigned long long)v);
}

/* Job bytes are exact: a limit of one 10-byte and one 5-byte job takes
 * those and refuses a byte more; add, schedule and run are refused with
 * nothing changed; delete makes room. */
START_TEST(test_memory_refusals)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(core_job_bytes(10) + core_job_bytes(5)), NULL);
    int fd = systest_connect(&s);
    systest_add(fd, id4(1), "q", "0123456789");
    const char *six = "012345";
    systest_roundtrip(fd, f("add %s q %u %s 6\r\n%s\r\n", id4(2), TTR, TTL, six), OOM);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 6\r\n%s\r\n", id4(2), TTR, TTL, LATER, six),
                      OOM);
    systest_roundtrip(fd, f("run %s q %u 1000 6\r\n%s\r\n", id4(2), TTR, six), OOM);
    systest_roundtrip(fd, f("add %s q %u %s 6 -priority=5\r\n%s\r\n", id4(2), TTR, TTL, six), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    ck_assert_uint_eq(systest_server_stat(fd, "ready-jobs"), 1);
    systest_roundtrip(fd, f("inspect job %s\r\n", id4(2)), NF);
    /* what is refused is not a duplicate afterwards: exactly 5 bytes fit */
    systest_add(fd, id4(2), "q", "01234");
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(3), TTR, TTL), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    /* other commands go on */
    systest_lease_now(fd, "q", id4(1), "0123456789");
    systest_roundtrip(fd, f("fail %s 0\r\n\r\n", id4(1)), OK);
    /* delete frees the room of a 10-byte job */
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 11\r\n01234567890\r\n", id4(3), TTR, TTL), OOM);
    systest_add(fd, id4(3), "q", "0123456789");
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    /* room for a 5-byte add, but a scheduled job also needs its extension */
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 1\r\nx\r\n", id4(4), TTR, TTL, LATER), OK);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A scheduled or run job also holds a job extension (its creation time, or
 * its waiting client): it is refused when that would not fit. */
START_TEST(test_memory_extension)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(core_job_bytes(5) + CORE_EXT_BYTES - 1), NULL);
    int fd = systest_connect(&s);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 5\r\n01234\r\n", id4(1), TTR, TTL, LATER),
                      OOM);
    systest_roundtrip(fd, f("run %s q %u 1000 5\r\n01234\r\n", id4(1), TTR), OOM);
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 0);
    systest_add(fd, id4(1), "q", "01234");
    close(fd);
    systest_stop(&s);
    systest_start(&s, "--max-memory", u64s(core_job_bytes(5) + CORE_EXT_BYTES), NULL);
    fd = systest_connect(&s);
    systest_roundtrip(fd, f("schedule %s q %u %s %s 5\r\n01234\r\n", id4(1), TTR, TTL, LATER),
                      OK);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A result counts its bytes and the job extension that holds it; a job's
 * expiry frees them with the job. */
START_TEST(test_memory_results_and_expiry)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(2 * core_job_bytes(10) + CORE_EXT_BYTES), NULL);
    int fd = systest_connect(&s);
    systest_add_full(fd, id4(1), "q", TTR, "1000", "0123456789", NULL);
    /* complete is never refused, and its 4 result bytes count */
    systest_roundtrip(fd, f("complete %s 4\r\nabcd\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 7\r\n0123456\r\n", id4(2), TTR, TTL), OOM);
    systest_add(fd, id4(2), "q", "012345");
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 2);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(3), TTR, TTL), OOM);
    /* the completed job expires: payload and result are freed */
    wait_stat(fd, "jobs", 1);
    systest_add(fd, id4(3), "q", "0123");
    close(fd);
    systest_stop(&s);
}
END_TEST

/* A run job holds memory while it waits and frees it once answered. */
START_TEST(test_memory_run_freed)
{
    struct systest_server s;
    systest_start(&s, "--max-memory", u64s(core_job_bytes(10) + CORE_EXT_BYTES), NULL);
    int runner = systest_connect(&s);
    int fd = systest_connect(&s);
    systest_sends(runner, f("run %s w %u " PARK " 10\r\n0123456789\r\n", id4(1), TTR));
    wait_stat(fd, "parked-clients", 1); /* the run is in */
    systest_lease_now(fd, "w", id4(1), "0123456789");
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(2), TTR, TTL), OOM);
    systest_roundtrip(fd, f("complete %s 2\r\nok\r\n", id4(1)), OK);
    systest_expect(runner, systest_result_reply(id4(1), 1, "ok"));
    systest_add(fd, id4(2), "q", "0123456789");
    close(runner);
    close(fd);
    systest_stop(&s);
}
END_TEST

/* Jobs replayed from the command log are never refused, even beyond the
 * limit; new ones are, until enough are gone. */
START_TEST(test_memory_replay)
{
    char dir[32];
    systest_tmpdir_new(dir);
    struct systest_server s;
    systest_start(&s, "-cmdlog-path", dir, NULL);
    int fd = systest_connect(&s);
    for (unsigned i = 1; i <= 3; i++)
        systest_add(fd, id4(i), "q", "0123456789");
    close(fd);
    systest_stop(&s);

    systest_start(&s, "-cmdlog-path", dir, "-max-memory", u64s(core_job_bytes(10)), NULL);
    fd = systest_connect(&s);
    uint64_t jobs = systest_server_stat(fd, "jobs");
    ck_assert_msg(jobs == 3, "%llu of 3 logged jobs replayed under -max-memory",
                  (unsigned long long)jobs);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(4), TTR, TTL), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(1)), OK);
    systest_roundtrip(fd, f("delete %s\r\n", id4(2)), OK);
    systest_roundtrip(fd, f("add %s q %u %s 0\r\n\r\n", id4(4), TTR, TTL), OOM);
    systest_roundtrip(fd, f("delete %s\r\n", id4(3)), OK);
    systest_add(fd, id4(4), "q", "0123456789");
    ck_assert_uint_eq(systest_server_stat(fd, "jobs"), 1);
    close(fd);
    systest_stop(&s);
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
    systest_roundtrip(fd, f("%s\r\n", systest_padded_line(max_line, "delete 00000000-0000-4000-8000-000000000001")), NF);
    systest_sends(fd, f("%s\r\n", systest_padded_line(max_line + 1, "delete 00000000-0000-4000-8000-000000000001")));
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
        {"--max-line 100\n", "1: unknown key '--max-line'\n"},
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
        int rc = systest_proc_run(&p, (const char *const[]){"-listen", "127.0.0.1:0", "-c", conf, NULL});
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
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"--config", "none.conf", NULL}), 66);
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_str_eq(p.err.p, f("workq-server: cannot read config file %s: No such file or "
                                "directory\n",
                                missing));
    systest_proc_free(&p);
    /* a bad flag is found before the file is read */
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"-c", missing, "--bogus", NULL}), 64);
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
/* Several listen addresses */

START_TEST(test_listen_two)
{
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"-listen", "127.0.0.1:0,127.0.0.1:0", NULL});
    ck_assert(systest_proc_wait(&p, false, "\nworkq-server listening on 127.0.0.1:"));
    ck_assert(systest_proc_wait(&p, true, "sync_int_ms="));
    while (systest_count_lines(p.out.p) < 2)
        ck_assert(systest_proc_pump(&p, systest_wait_ms()));
    int p1 = systest_listening_port(p.out.p, 0), p2 = systest_listening_port(p.out.p, 1);
    ck_assert_int_ne(p1, p2);
    ck_assert(systest_proc_wait(&p, true, f(" listen=127.0.0.1:%d,127.0.0.1:%d ", p1, p2)));
    /* one server behind both */
    int a = systest_connect_port(p1), b = systest_connect_port(p2);
    systest_add(a, id4(1), "q", "x");
    systest_lease_now(b, "q", id4(1), "x");
    close(a);
    close(b);
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 2);
    systest_proc_free(&p);
}
END_TEST

/* At most 8 addresses: 8 all listen, 9 are a usage error. */
START_TEST(test_listen_eight)
{
    char list[256] = "127.0.0.1:0";
    for (int i = 1; i < 8; i++)
        strcat(list, ",127.0.0.1:0");
    struct systest_proc p;
    systest_proc_start(&p, (const char *const[]){"--listen", list, NULL});
    while (systest_count_lines(p.out.p) < 8)
        ck_assert(systest_proc_pump(&p, systest_wait_ms()));
    for (int i = 0; i < 8; i++) {
        int fd = systest_connect_port(systest_listening_port(p.out.p, i));
        systest_sync(fd);
        close(fd);
    }
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 8);
    systest_proc_free(&p);

    strcat(list, ",127.0.0.1:0");
    ck_assert_int_eq(systest_proc_run(&p, (const char *const[]){"--listen", list, NULL}), 64);
    ck_assert_str_eq(p.err.p, f("workq-server: invalid -listen '%s' (expected "
                                "HOST:PORT[,HOST:PORT...])\n",
                                list));
    systest_proc_free(&p);
}
END_TEST

/* A later -listen replaces an earlier one, list and all. */
START_TEST(test_listen_replaced)
{
    struct systest_proc p;
    systest_proc_start(&p,
               (const char *const[]){"-l", "127.0.0.1:0,127.0.0.1:0", "-l", "127.0.0.1:0", NULL});
    int fd = systest_connect(&p.s);
    systest_sync(fd);
    close(fd);
    systest_proc_stop(&p);
    ck_assert_int_eq(systest_count_lines(p.out.p), 1);
    systest_proc_free(&p);
}
END_TEST

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
daemon_suite(void)
{
    const struct systest_group groups[] = {
        {"daemonize", {test_daemon_pidfile, test_daemon_relative_paths, test_daemon_failure, test_daemon_pidfile_in_use, NULL}},
        {"notify", {test_notify_path, test_notify_abstract, test_notify_daemon, NULL}},
        {"log",
         {test_log_format, test_log_levels, test_log_verbose, test_log_sighup,
          test_log_sighup_failure, NULL}},
        {"user",
         {test_user_drop, test_user_not_root, test_user_unknown, test_user_daemon_pidfile, NULL}},
        {"max-connections", {test_maxconn_refuse, test_maxconn_accept_again, NULL}},
        {"idle-timeout",
         {test_idle_silent_closed, test_idle_waiting_not_idle, test_idle_slow_reader, test_idle_after_timeout, NULL}},
        {"max-memory",
         {test_memory_refusals, test_memory_extension, test_memory_results_and_expiry,
          test_memory_run_freed,
          test_memory_replay, NULL}},
        {"config",
         {test_config_honoured, test_config_flags_override, test_config_errors,
          test_config_unreadable, test_config_booleans, NULL}},
        {"listen", {test_listen_two, test_listen_eight, test_listen_replaced, NULL}},
        {"cli", {test_cli_help, test_cli_flag_errors, NULL}},
    };
    return systest_suite("daemon", groups, WQ_ARRAY_LEN(groups));
}

int
main(void)
{
    return systest_main(daemon_suite());
}
