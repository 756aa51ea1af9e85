/* systest_proc.c - the server process of a system test: spawn it (behind
 * WQ_SERVER_WRAPPER), read its port from its first line, capture its
 * stdout and stderr, stop it, kill it, run one that must exit by itself. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SYSTEST_MAX_ARGS 80
#define SYSTEST_EXIT_MS  30000 /* how long a server may take to end, scaled */

pid_t
systest_spawn(const char *const *args, int *out_fd, int err_fd)
{
    const char *server = getenv("WQ_SERVER");
    ck_assert_msg(server != NULL, "WQ_SERVER is not set (run through make check)");
    char *argv[SYSTEST_MAX_ARGS];
    int argc = 0;
    char *wrapper = getenv("WQ_SERVER_WRAPPER") ? strdup(getenv("WQ_SERVER_WRAPPER")) : NULL;
    if (wrapper != NULL) {
        for (char *w = strtok(wrapper, " "); w != NULL && argc < 32; w = strtok(NULL, " "))
            argv[argc++] = w;
    }
    argv[argc++] = (char *)server;
    for (size_t i = 0; args[i] != NULL; i++) {
        ck_assert_int_lt(argc, SYSTEST_MAX_ARGS - 1);
        argv[argc++] = (char *)args[i];
    }
    argv[argc] = NULL;

    int out[2];
    ck_assert_int_eq(pipe(out), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        if (err_fd >= 0) {
            dup2(err_fd, STDERR_FILENO);
            close(err_fd);
        }
        execvp(argv[0], argv); /* the wrapper may be a bare "valgrind" */
        _exit(127);
    }
    free(wrapper);
    close(out[1]);
    *out_fd = out[0];
    return pid;
}

/* A new file err_path for a server's stderr, or -1 (inherit) if NULL. */
static int
systest_err_file(const char *err_path)
{
    if (err_path == NULL)
        return -1;
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "cannot create %s: %s", err_path, strerror(errno));
    return fd;
}

char *
systest_slurp(const char *path, size_t *len)
{
    struct sb b = {0};
    sb_add(&b, "");
    FILE *fp = path != NULL ? fopen(path, "rb") : NULL;
    if (fp != NULL) {
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
            sb_addn(&b, chunk, n);
        fclose(fp);
    }
    if (len != NULL)
        *len = b.n;
    return b.p;
}

void
systest_start_argv(struct systest_server *s, const char *const *args, const char *err_path)
{
    int efd = systest_err_file(err_path);
    s->pid = systest_spawn(args, &s->out_fd, efd);
    if (efd >= 0)
        close(efd);
    char line[256];
    size_t n = 0;
    while (n + 1 < sizeof line) {
        struct pollfd p = {s->out_fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, SYSTEST_EXIT_MS * systest_slow()) > 0,
                      "server did not report its port");
        if (read(s->out_fd, line + n, 1) != 1) {
            int status = 0;
            waitpid(s->pid, &status, 0);
            char *err = systest_slurp(err_path, NULL);
            ck_abort_msg("server ended before listening, status %d: %s",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
        }
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    systest_parse_port(s, line);
}

void
systest_start(struct systest_server *s, ...)
{
    const char *args[SYSTEST_MAX_ARGS];
    int argc = 0;
    args[argc++] = "-listen";
    args[argc++] = "127.0.0.1:0";
    va_list ap;
    va_start(ap, s);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        ck_assert_int_lt(argc, SYSTEST_MAX_ARGS - 1);
        args[argc++] = a;
    }
    va_end(ap);
    args[argc] = NULL;
    systest_start_argv(s, args, NULL);
}

void
systest_parse_port(struct systest_server *s, const char *line)
{
    const char *prefix = "workq-server listening on 127.0.0.1:";
    ck_assert_msg(strncmp(line, prefix, strlen(prefix)) == 0, "unexpected first line: %s", line);
    s->port = atoi(line + strlen(prefix));
    ck_assert_int_gt(s->port, 0);
}

void
systest_stop(struct systest_server *s)
{
    int status = 0;
    ck_assert_int_eq(kill(s->pid, SIGTERM), 0);
    ck_assert_int_eq(waitpid(s->pid, &status, 0), s->pid);
    close(s->out_fd);
    ck_assert_msg(WIFEXITED(status), "server did not exit normally (signal %d)",
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ck_assert_msg(WEXITSTATUS(status) == 0, "server exited with status %d", WEXITSTATUS(status));
}

void
systest_kill(struct systest_server *s)
{
    int status;
    ck_assert_int_eq(kill(s->pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(s->pid, &status, 0), s->pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "server not killed");
    close(s->out_fd);
}

int
systest_run_argv(const char *const *args, const char *err_path)
{
    int ofd, status = 0;
    int efd = systest_err_file(err_path);
    pid_t pid = systest_spawn(args, &ofd, efd);
    if (efd >= 0)
        close(efd);
    for (int waited = 0;; waited += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        if (waited > SYSTEST_EXIT_MS * systest_slow()) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            char out[256] = "";
            ssize_t r = read(ofd, out, sizeof out - 1);
            out[r > 0 ? r : 0] = '\0';
            ck_abort_msg("server did not exit; its stdout: %s", out);
        }
        systest_sleep_ms(10);
    }
    close(ofd);
    ck_assert_msg(WIFEXITED(status), "server died of signal %d",
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

/* ------------------------------------------------------------------------ */
/* What a server wrote to stdout */

/* The port of the n-th (from 0) "listening on 127.0.0.1:PORT" line. */
int
systest_listening_port(const char *out, int n)
{
    const char *prefix = "workq-server listening on 127.0.0.1:";
    const char *p = out;
    for (int i = 0; i < n; i++) {
        p = strchr(p, '\n');
        ck_assert_ptr_nonnull(p);
        p++;
    }
    ck_assert_msg(strncmp(p, prefix, strlen(prefix)) == 0, "line %d of stdout: %s", n, p);
    return atoi(p + strlen(prefix));
}

int
systest_proc_port(struct systest_proc *p, const char *name)
{
    const char *prefix = f("workq-server %s listening on 127.0.0.1:", name);
    ck_assert_msg(systest_proc_wait(p, false, prefix), "no %s listener: %s", name, p->out.p);
    while (strchr(strstr(p->out.p, prefix), '\n') == NULL)
        ck_assert(systest_proc_pump(p, systest_wait_ms()));
    int port = atoi(strstr(p->out.p, prefix) + strlen(prefix));
    ck_assert_int_gt(port, 0);
    return port;
}

int
systest_count_lines(const char *s)
{
    int n = 0;
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

/* ------------------------------------------------------------------------ */
/* A server with its stdout and stderr captured */

void
systest_proc_spawn(struct systest_proc *p, const char *const *args)
{
    memset(p, 0, sizeof *p);
    int err[2];
    ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0); /* the child keeps only its stderr */
    p->s.pid = systest_spawn(args, &p->s.out_fd, err[1]);
    close(err[1]);
    p->err_fd = err[0];
    p->out_open = p->err_open = true;
    sb_add(&p->out, "");
    sb_add(&p->err, "");
}

bool
systest_proc_pump(struct systest_proc *p, int ms)
{
    struct pollfd fds[2] = {{p->out_open ? p->s.out_fd : -1, POLLIN, 0},
                            {p->err_open ? p->err_fd : -1, POLLIN, 0}};
    if ((!p->out_open && !p->err_open) || poll(fds, 2, ms) <= 0)
        return false;
    char tmp[4096];
    for (int i = 0; i < 2; i++) {
        if (fds[i].revents == 0)
            continue;
        ssize_t r = read(fds[i].fd, tmp, sizeof tmp);
        if (r > 0)
            sb_addn(i == 0 ? &p->out : &p->err, tmp, (size_t)r);
        else if (i == 0)
            p->out_open = false;
        else
            p->err_open = false;
    }
    return true;
}

bool
systest_proc_wait(struct systest_proc *p, bool err, const char *text)
{
    int64_t deadline = systest_now_ms() + systest_wait_ms();
    const struct sb *b = err ? &p->err : &p->out;
    while (strstr(b->p, text) == NULL) {
        int64_t left = deadline - systest_now_ms();
        if (left <= 0 || (!p->out_open && !p->err_open))
            return false;
        systest_proc_pump(p, (int)left);
    }
    return true;
}

/* Not waiting for the pipes' end: with -d the daemon holds them until it
 * is ready, and behind a wrapper such as valgrind for good (a copy of
 * stderr for its own messages).  What the process wrote before it exited
 * is in the pipes by then. */
int
systest_proc_finish(struct systest_proc *p)
{
    int64_t deadline = systest_now_ms() + (int64_t)SYSTEST_EXIT_MS * systest_slow();
    int st;
    pid_t r;
    while ((r = waitpid(p->s.pid, &st, WNOHANG)) == 0) {
        ck_assert_msg(systest_now_ms() < deadline, "the server did not exit (stderr: %s)",
                      p->err.p);
        if (!systest_proc_pump(p, 20) && !p->out_open && !p->err_open)
            systest_sleep_ms(20);
    }
    ck_assert_int_eq(r, p->s.pid);
    while (systest_proc_pump(p, 50))
        ;
    close(p->s.out_fd);
    close(p->err_fd);
    p->out_open = p->err_open = false;
    ck_assert_msg(WIFEXITED(st), "server killed by signal %d (stderr: %s)",
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0, p->err.p);
    return WEXITSTATUS(st);
}

void
systest_proc_free(struct systest_proc *p)
{
    free(p->out.p);
    free(p->err.p);
    p->out.p = p->err.p = NULL;
}

int
systest_proc_run(struct systest_proc *p, const char *const *args)
{
    systest_proc_spawn(p, args);
    return systest_proc_finish(p);
}

void
systest_proc_start(struct systest_proc *p, const char *const *args)
{
    systest_proc_spawn(p, args);
    ck_assert_msg(systest_proc_wait(p, false, "\n"), "server did not report its port (stderr: %s)",
                  p->err.p);
    char line[256];
    size_t n = strcspn(p->out.p, "\n");
    ck_assert_uint_lt(n, sizeof line);
    memcpy(line, p->out.p, n);
    line[n] = '\0';
    systest_parse_port(&p->s, line);
}

void
systest_proc_crash(struct systest_proc *p)
{
    int st = 0;
    ck_assert_int_eq(kill(p->s.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(p->s.pid, &st, 0), p->s.pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "server not killed");
    systest_untrack_pid(p->s.pid);
    close(p->s.out_fd);
    close(p->err_fd);
    systest_proc_free(p);
}

void
systest_proc_stop(struct systest_proc *p)
{
    ck_assert_int_eq(kill(p->s.pid, SIGTERM), 0);
    int status = systest_proc_finish(p);
    ck_assert_msg(status == 0, "server exited with %d (stderr: %s)", status, p->err.p);
}

void
systest_proc_start_every_listener(struct systest_proc *p, const char *dir,
                                  struct systest_ports *ports)
{
    ck_assert_int_eq(system(f("cd '%s' && openssl req -x509 -newkey ec -pkeyopt "
                              "ec_paramgen_curve:P-256 -nodes -keyout key.pem -out cert.pem "
                              "-days 2 -subj /CN=localhost -addext "
                              "subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null",
                              dir)),
                     0);
    char cert[96], key[96];
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    const char *args[] = {"-listen",
                          "127.0.0.1:0,tls://127.0.0.1:0",
                          "-faktory-listen",
                          "127.0.0.1:0",
                          "-metrics-listen",
                          "127.0.0.1:0",
                          "-tls-cert",
                          cert,
                          "-tls-key",
                          key,
                          NULL};
    systest_proc_start(p, args);
    while (systest_count_lines(p->out.p) < 4) /* four listening lines */
        ck_assert(systest_proc_pump(p, systest_wait_ms()));
    ports->plain = systest_listening_port(p->out.p, 0);
    ports->tls = atoi(strstr(p->out.p, "listening on tls://127.0.0.1:") + 29);
    ports->faktory = atoi(strstr(p->out.p, "faktory listening on 127.0.0.1:") + 31);
    ports->metrics = atoi(strstr(p->out.p, "metrics listening on 127.0.0.1:") + 31);
}
