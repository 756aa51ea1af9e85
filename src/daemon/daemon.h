/* daemon.h - what makes workq-server a Unix daemon: detaching (-d) with the
 * original process waiting until the server is ready, the pidfile,
 * dropping privileges, and systemd's readiness protocol (sd_notify(3),
 * spoken directly: no libsystemd). */
#ifndef WQ_DAEMON_H
#define WQ_DAEMON_H

#include "lib/wq.h"

/* Fork into the background (twice, with setsid between).  The original
 * process stays in the foreground until daemon_ready or daemon_exit and
 * then exits with the daemon's start-up status.  Returns 0 in the daemon,
 * or -1 (in the original process, nothing forked) after logging. */
int daemon_detach(void);
/* The server is up: let the waiting original process exit 0, and point
 * stdin, stdout and stderr at /dev/null.  A no-op without daemon_detach. */
void daemon_ready(void);
/* The daemon failed to start with this exit status: the original process
 * exits with it too.  A no-op without daemon_detach or after daemon_ready. */
void daemon_failed(int status);

/* Write our pid to path atomically (a temporary file renamed over it).
 * Returns 0, or -1 after logging. */
int daemon_write_pidfile(const char *path);
/* Remove the pidfile if it still holds our pid. */
void daemon_remove_pidfile(const char *path);

/* Become user (its uid, gid and supplementary groups), for good, with
 * no_new_privs set; the log file, if there is one, is given to user
 * first, so that SIGHUP can reopen it.  Returns 0, or an exit status
 * (EX_NOUSER, EX_NOPERM, EX_OSERR) after logging. */
int daemon_drop_user(const char *user);

/* Send state (e.g. "READY=1") to systemd's $NOTIFY_SOCKET, if set. */
void daemon_notify(const char *state);

#endif /* WQ_DAEMON_H */
