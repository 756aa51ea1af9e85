/* daemon.c - detaching, pidfile, privilege drop, readiness notification. */
#include "lib/wq.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "lib/log.h"

/* The daemon's end of the pipe the original process waits on; -1 when
 * not detached or already reported. */
static int daemon_report_fd = -1;

static void daemon_report(unsigned char status);

/* In the original process: wait for the daemon's one status byte and exit
 * with it.  EOF without a byte means the daemon died starting up. */
static _Noreturn void
daemon_wait_ready(int fd)
{
    unsigned char status;
    ssize_t n;
    do
        n = read(fd, &status, 1);
    while (n < 0 && errno == EINTR);
    _exit(n == 1 ? status : EX_SOFTWARE);
}

int
daemon_detach(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot daemonize: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        wq_log(LOG_LVL_ERROR, "cannot daemonize: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid > 0) {
        close(fds[1]);
        /* Reap the intermediate child at once; the daemon reports by pipe. */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        daemon_wait_ready(fds[0]);
    }
    close(fds[0]);
    daemon_report_fd = fds[1];
    /* A new session without a controlling terminal; the second fork makes
     * sure the daemon can never acquire one again. */
    if (setsid() < 0 || (pid = fork()) < 0) {
        daemon_report(EX_OSERR);
        _exit(EX_OSERR);
    }
    if (pid > 0)
        _exit(0);
    umask(027);
    if (chdir("/") != 0) {
        daemon_report(EX_OSERR);
        _exit(EX_OSERR);
    }
    return 0;
}

/* Send the status byte to the original process, once. */
static void
daemon_report(unsigned char status)
{
    if (daemon_report_fd < 0)
        return;
    ssize_t n;
    do
        n = write(daemon_report_fd, &status, 1);
    while (n < 0 && errno == EINTR);
    close(daemon_report_fd);
    daemon_report_fd = -1;
}

void
daemon_ready(void)
{
    if (daemon_report_fd < 0)
        return;
    fflush(stdout);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    daemon_report(0);
}

void
daemon_failed(int status)
{
    daemon_report((unsigned char)status);
}

/* The pid in the pidfile at path, or 0 if none can be read. */
static long
daemon_read_pidfile(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    long pid = fgets(buf, sizeof buf, f) != NULL ? strtol(buf, NULL, 10) : 0;
    fclose(f);
    return pid > 0 ? pid : 0;
}

int
daemon_write_pidfile(const char *path)
{
    /* Never take over the pidfile of a server that still runs: it would
     * lose its pidfile when this one fails (its command log is locked). */
    long other = daemon_read_pidfile(path);
    if (other != 0 && other != (long)getpid() && (kill((pid_t)other, 0) == 0 || errno == EPERM)) {
        wq_log(LOG_LVL_ERROR, "pidfile names a running process path=%s pid=%ld", path, other);
        return -1;
    }
    char tmp[4200], buf[32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    /* A fresh file, never one planted (or a symlink) under the name. */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        wq_log(LOG_LVL_ERROR, "cannot write pidfile path=%s error=\"%s\"", path, strerror(errno));
        return -1;
    }
    /* Readable by all whatever the umask: scripts read it, and so does
     * daemon_remove_pidfile after -user dropped root. */
    bool ok = fchmod(fd, 0644) == 0 && write(fd, buf, (size_t)len) == len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot write pidfile path=%s error=\"%s\"", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void
daemon_remove_pidfile(const char *path)
{
    errno = 0;
    long pid = daemon_read_pidfile(path);
    if (pid == 0 && errno != 0 && errno != ENOENT)
        wq_log(LOG_LVL_WARN, "cannot read pidfile path=%s error=\"%s\"", path, strerror(errno));
    if (pid == (long)getpid() && unlink(path) != 0)
        wq_log(LOG_LVL_WARN, "cannot remove pidfile path=%s error=\"%s\"", path, strerror(errno));
}

int
daemon_drop_user(const char *user)
{
    errno = 0;
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot drop privileges: no such user user=%s", user);
        return EX_NOUSER;
    }
    if (getuid() == pw->pw_uid && geteuid() == pw->pw_uid)
        return 0; /* already that user */
    if (geteuid() != 0) {
        wq_log(LOG_LVL_ERROR, "cannot drop privileges to user=%s: not running as root", user);
        return EX_NOPERM;
    }
    /* the log file stays the server's to reopen on SIGHUP (the open
     * file, not its name: a symlink put there must not be followed) */
    if (log_give(pw->pw_uid, pw->pw_gid) != 0)
        wq_log(LOG_LVL_WARN, "cannot give the log file to user=%s error=\"%s\"", user,
               strerror(errno));
    if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot drop privileges to user=%s error=\"%s\"", user,
               strerror(errno));
        return EX_NOPERM;
    }
    if (pw->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
        wq_log(LOG_LVL_ERROR, "dropped privileges can be regained user=%s", user);
        return EX_NOPERM;
    }
#ifdef PR_SET_NO_NEW_PRIVS
    /* nothing it runs (it runs nothing) may gain privileges back */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        wq_log(LOG_LVL_ERROR, "cannot set no_new_privs user=%s error=\"%s\"", user,
               strerror(errno));
        return EX_OSERR;
    }
#endif
    wq_log(LOG_LVL_INFO, "dropped privileges user=%s uid=%ld gid=%ld", user, (long)pw->pw_uid,
           (long)pw->pw_gid);
    return 0;
}

void
daemon_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || (path[0] != '/' && path[0] != '@'))
        return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* the abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        wq_log(LOG_LVL_WARN, "cannot notify systemd socket=%s error=\"%s\"", path, strerror(errno));
    close(fd);
}
