/* systest_cleanup.c - what a system test leaves behind when a check fails
 * (check ends the test's process with _exit, a timeout kills it): daemons
 * that left the test's process group and temporary directories, noted in
 * memory shared with the runner, which cleans up after the suite. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A failed check ends the test's process with _exit and a timeout kills
 * it, so what a test must clean up is noted in memory shared with the
 * runner, which cleans up after the suite. */
#define MAX_TRACKED 16

struct tracked {
    pid_t pids[MAX_TRACKED];
    char dirs[MAX_TRACKED][32];
};

static struct tracked *tracked;

/* The command line of pid (NULs made spaces) into buf; false if gone. */
static bool
read_cmdline(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    return true;
}

void
systest_cleanup_init(void)
{
    tracked =
        mmap(NULL, sizeof *tracked, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (tracked == MAP_FAILED) {
        perror("mmap");
        exit(EXIT_FAILURE);
    }
    memset(tracked, 0, sizeof *tracked);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void
rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Kill the daemons and remove the directories that tests left behind. */
void
systest_cleanup_run(void)
{
    for (size_t i = 0; i < MAX_TRACKED; i++) {
        char cmd[256];
        pid_t pid = tracked->pids[i];
        /* only if the pid is still a server's, not a recycled one */
        if (pid > 0 && read_cmdline(pid, cmd, sizeof cmd) && strstr(cmd, "workq-server") != NULL)
            kill(pid, SIGKILL);
        if (tracked->dirs[i][0] != '\0')
            rm_tree(tracked->dirs[i]);
    }
    memset(tracked, 0, sizeof *tracked);
}

/* Kill pid after the suite unless untracked first. */
void
systest_track_pid(pid_t pid)
{
    for (size_t i = 0; i < MAX_TRACKED; i++) {
        if (tracked->pids[i] <= 0) {
            tracked->pids[i] = pid;
            return;
        }
    }
    ck_abort_msg("too many tracked pids");
}

void
systest_untrack_pid(pid_t pid)
{
    for (size_t i = 0; i < MAX_TRACKED; i++)
        if (tracked->pids[i] == pid)
            tracked->pids[i] = 0;
}

/* A new directory /tmp/wq-test-XXXXXX into dir (>= 32 bytes), removed
 * after the suite unless tmpdir_remove does it first. */
void
systest_tmpdir_new(char *dir)
{
    strcpy(dir, "/tmp/wq-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (size_t i = 0; i < MAX_TRACKED; i++) {
        if (tracked->dirs[i][0] == '\0') {
            snprintf(tracked->dirs[i], sizeof tracked->dirs[i], "%s", dir);
            return;
        }
    }
    ck_abort_msg("too many temporary directories");
}

void
systest_tmpdir_remove(const char *dir)
{
    rm_tree(dir);
    for (size_t i = 0; i < MAX_TRACKED; i++)
        if (strcmp(tracked->dirs[i], dir) == 0)
            tracked->dirs[i][0] = '\0';
}
