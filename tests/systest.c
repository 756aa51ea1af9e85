/* systest.c - start the real server and talk to it over TCP. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define SYSTEST_MAX_ARGS 64
#define SYSTEST_WAIT_MS  5000

int
systest_slow(void)
{
    const char *s = getenv("WQ_TEST_SLOW");
    int v = s != NULL ? atoi(s) : 1;
    return v > 0 ? v : 1;
}

void
systest_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Read one line of the server's stdout (up to LF) within the wait. */
static int
systest_read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, SYSTEST_WAIT_MS * systest_slow() * 4) <= 0)
            return -1;
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0)
            return -1;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return 0;
}

void
systest_start(struct systest_server *s, ...)
{
    const char *server = getenv("WQ_SERVER");
    ck_assert_msg(server != NULL, "WQ_SERVER is not set (run through make check)");
    char *argv[SYSTEST_MAX_ARGS];
    int argc = 0;
    char *wrapper = getenv("WQ_SERVER_WRAPPER") ? strdup(getenv("WQ_SERVER_WRAPPER")) : NULL;
    if (wrapper != NULL) {
        for (char *w = strtok(wrapper, " "); w != NULL && argc < SYSTEST_MAX_ARGS / 2;
             w = strtok(NULL, " "))
            argv[argc++] = w;
    }
    argv[argc++] = (char *)server;
    argv[argc++] = "-listen";
    argv[argc++] = "127.0.0.1:0";
    va_list ap;
    va_start(ap, s);
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < SYSTEST_MAX_ARGS - 1;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;

    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    free(wrapper);
    s->pid = pid;
    s->out_fd = pipefd[0];

    char line[256];
    ck_assert_msg(systest_read_line(s->out_fd, line, sizeof line) == 0,
                  "server did not report its port");
    char *colon = strrchr(line, ':');
    ck_assert_msg(colon != NULL && strstr(line, "listening on") != NULL,
                  "unexpected first line: %s", line);
    s->port = atoi(colon + 1);
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

int
systest_connect(const struct systest_server *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)s->port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void
systest_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        ck_assert_msg(w > 0, "send failed: %s", strerror(errno));
        p += w;
        len -= (size_t)w;
    }
}

void
systest_sends(int fd, const char *text)
{
    systest_send(fd, text, strlen(text));
}

/* Make bytes readable in a failure message: CR LF as \r\n, others as \xNN. */
static void
systest_escape(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\r')
            o += (size_t)snprintf(out + o, cap - o, "\\r");
        else if (c == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else if (c < 32 || c > 126)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

void
systest_expect_bytes(int fd, const void *expected, size_t len)
{
    char *got = malloc(len + 1);
    size_t n = 0;
    int wait = SYSTEST_WAIT_MS * systest_slow();
    while (n < len) {
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, wait);
        if (pr <= 0)
            break;
        ssize_t r = recv(fd, got + n, len - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n != len || memcmp(got, expected, len) != 0) {
        char e[2048], g[2048];
        systest_escape(expected, len, e, sizeof e);
        systest_escape(got, n, g, sizeof g);
        free(got);
        ck_abort_msg("reply mismatch:\n expected \"%s\"\n      got \"%s\"%s", e, g,
                     n < len ? " (then nothing)" : "");
    }
    free(got);
}

void
systest_expect(int fd, const char *expected)
{
    systest_expect_bytes(fd, expected, strlen(expected));
}

void
systest_roundtrip(int fd, const char *text, const char *expected)
{
    systest_sends(fd, text);
    systest_expect(fd, expected);
}

void
systest_expect_silence(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int pr = poll(&p, 1, ms * systest_slow());
    if (pr > 0) {
        char buf[256], e[1024];
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        systest_escape(buf, r > 0 ? (size_t)r : 0, e, sizeof e);
        ck_abort_msg("expected no reply, got \"%s\"%s", e, r == 0 ? " (closed)" : "");
    }
}

void
systest_expect_closed(int fd)
{
    char buf[256];
    struct pollfd p = {fd, POLLIN, 0};
    ck_assert_msg(poll(&p, 1, SYSTEST_WAIT_MS * systest_slow()) > 0, "connection not closed");
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    ck_assert_msg(r == 0 || (r < 0 && errno == ECONNRESET), "expected close, got %zd bytes", r);
}
