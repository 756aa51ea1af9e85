/* sys_bench.c - system test of the load generator: workq-bench runs
 * briefly against the real server, and its counts must add up with what the
 * server reports; against a fake server that breaks one rule, it must fail.
 * Its clean-up leaves the server as it found it; its command line (exit
 * statuses, -V, WORKQ_ADDR); it stops at once, saying why, when a password
 * is wanted or the address is another kind of listener.  Behaviour only:
 * its speed is never checked here. */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <openssl/sha.h>

#include "systest.h"

/* Run workq-bench against 127.0.0.1:port with extra arguments; return its
 * exit status and its stdout (the --csv line) in out.  Its stderr goes to
 * the file err_path, or stays the test's if that is NULL. */
static int
bench_run_port(int port, const char *args, const char *err_path, char *out, size_t cap)
{
    const char *bench = getenv("WQ_BENCH");
    ck_assert_msg(bench != NULL, "WQ_BENCH is not set (run through make check)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -h 127.0.0.1 -p %d -q --csv %s%s%s", bench, port, args,
             err_path != NULL ? " 2>" : "", err_path != NULL ? err_path : "");
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run workq-bench against systest_srv with extra arguments; return its exit
 * status and its stdout (the --csv line) in out. */
static int
bench_run(const char *args, char *out, size_t cap)
{
    return bench_run_port(systest_srv.port, args, NULL, out, cap);
}

/* Run workq-bench with exactly these arguments, its output as redirect
 * says (a shell redirection, or ""); return its exit status and what it
 * wrote to our end of the pipe in out. */
static int
bench_popen(const char *args, const char *redirect, char *out, size_t cap)
{
    const char *bench = getenv("WQ_BENCH");
    ck_assert_msg(bench != NULL, "WQ_BENCH is not set (run through make check)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s%s", bench, args, redirect);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Its exit status and stdout (its stderr is the test's). */
static int
bench_run_args(const char *args, char *out, size_t cap)
{
    return bench_popen(args, "", out, cap);
}

/* Its exit status and stderr (no server needed: for usage errors). */
static int
bench_run_stderr(const char *args, char *err, size_t cap)
{
    return bench_popen(args, " 2>&1 >/dev/null", err, cap);
}

/* The value of column `name` in a two-line CSV (header, data). */
static long
csv_field(const char *csv, const char *name)
{
    char *copy = strdup(csv);
    char *nl = strchr(copy, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    char *header = copy, *data = nl + 1, *hs, *ds;
    long value = -1;
    for (char *h = strtok_r(header, ",", &hs), *d = strtok_r(data, ",\n", &ds); h && d;
         h = strtok_r(NULL, ",", &hs), d = strtok_r(NULL, ",\n", &ds)) {
        if (strcmp(h, name) == 0) {
            value = atol(d);
            break;
        }
    }
    free(copy);
    ck_assert_msg(value >= 0, "no column %s in: %s", name, csv);
    return value;
}

START_TEST(test_bench_counts)
{
    char out[8192];
    systest_start_srv();
    int fd = systest_conn();

    /* --keep: the jobs stay, so the server's counts can be checked. */
    ck_assert_int_eq(bench_run("-t add -n 500 -c 4 --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 500);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "ready-jobs"), 500);

    ck_assert_int_eq(bench_run("-t lease-complete -n 300 -c 3 -P 4 --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "completed-jobs"), 300);

    ck_assert_int_eq(
        bench_run("-t cycle -n 400 -c 4 --names 3 --priorities --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 400);
    ck_assert_int_eq(systest_server_stat(fd, "completed-jobs"), 700);
    ck_assert_int_eq(systest_server_stat(fd, "ready-jobs"), 500);

    ck_assert_int_eq(bench_run("-t run -n 200 -c 4 --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 200);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 500 + 300 + 400); /* run jobs are gone */
    ck_assert_int_eq(systest_server_stat(fd, "parked-clients"), 0);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* The ready-len of every queue on the server, from `inspect queues`; returns
 * how many queues there are (at most max). */
static int
queue_ready_lens(int fd, long *lens, int max)
{
    const char *line;
    int n;
    systest_sends(fd, "inspect queues 0 1000\r\n");
    line = systest_read_line(fd);
    ck_assert_msg(sscanf(line, "+OK %d", &n) == 1, "inspect queues: %s", line);
    ck_assert_int_le(n, max);
    for (int i = 0; i < n; i++) {
        systest_read_line(fd); /* <name> 2 */
        line = systest_read_line(fd);
        ck_assert_msg(sscanf(line, "ready-len %ld", &lens[i]) == 1, "not ready-len: %s", line);
        systest_read_line(fd); /* scheduled-len */
    }
    return n;
}

/* The backlog is added to every name, stays queued under the measured jobs
 * and is not counted among them. */
START_TEST(test_bench_backlog)
{
    char out[8192];
    long lens[8];
    systest_start_srv();
    int fd = systest_conn();

    ck_assert_int_eq(bench_run("-t lease-complete -n 300 -c 3 -P 4 --names 2 --priorities "
                               "--backlog 30 --keep",
                               out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "backlog"), 30);
    ck_assert_int_eq(csv_field(out, "backlog_added"), 60);
    ck_assert_int_eq(csv_field(out, "jobs"), 300);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "lease_count"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "incomplete"), 0);
    ck_assert_int_eq(queue_ready_lens(fd, lens, 8), 2);
    ck_assert_int_eq(lens[0], 30);
    ck_assert_int_eq(lens[1], 30);
    ck_assert_int_eq(systest_server_stat(fd, "completed-jobs"), 300);

    /* More consumers than producers, pipelined: a lease that did not wait
     * for its job's add to be accepted would take a backlog job. */
    ck_assert_int_eq(
        bench_run("-t cycle -n 400 -c 3 -P 8 --names 3 --backlog 20 --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "backlog"), 20);
    ck_assert_int_eq(csv_field(out, "backlog_added"), 60);
    ck_assert_int_eq(csv_field(out, "done"), 400);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "incomplete"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "ready-jobs"), 2 * 30 + 3 * 20);
    ck_assert_int_eq(systest_server_stat(fd, "leased-jobs"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "completed-jobs"), 700);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* --ttl is the measured jobs' alone: the backlog outlives it, so a short
 * TTL cannot empty the queue under the measured phase. */
START_TEST(test_bench_backlog_ttl)
{
    char out[8192];
    systest_start_srv();
    int fd = systest_conn();
    ck_assert_int_eq(
        bench_run("-t lease-complete -n 20 -c 1 --names 2 --backlog 5 --ttl 1000 --keep", out,
                  sizeof out),
        0);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    systest_sleep_past(1000);
    ck_assert_int_eq(systest_server_stat(fd, "evicted-jobs"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 2 * 5); /* the 20 completed ones are gone */
    ck_assert_int_eq(systest_server_stat(fd, "ready-jobs"), 2 * 5);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* A --timeout while the backlog is added: the report says how much of it
 * was added, and no measured phase (0 seconds).  The server is a listening
 * socket nobody accepts from: connections complete, no reply ever comes. */
START_TEST(test_bench_backlog_timeout)
{
    char out[8192];
    int port;
    int lfd = systest_listen(&port);
    ck_assert_int_eq(bench_run_port(port, "-t cycle -n 10 -c 2 --names 3 --backlog 4 --timeout 1",
                                    "/dev/null", out, sizeof out),
                     1);
    ck_assert_int_eq(csv_field(out, "timed_out"), 1);
    ck_assert_int_eq(csv_field(out, "backlog"), 4);
    ck_assert_int_eq(csv_field(out, "backlog_added"), 0);
    ck_assert_int_eq(csv_field(out, "done"), 0);
    ck_assert_msg(strstr(out, ",0.000000,") != NULL, "seconds not 0: %s", out);
    close(lfd);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* A server that answers a lease from the wrong queue                       */

#define FAKE_JOBS 64

struct fake_job {
    char id[40], name[40], ttr[24];
    char payload[80]; /* with its CRLF */
    size_t len;
    bool given;
};

/* Serve one workq-bench connection on listening socket lfd: accept adds
 * and completes, and answer each `lease <name> <wait>` with a measured job
 * the tool added under another name, byte for byte as a lease reply with
 * that job's own name, TTR and payload.  Only a check of the name asked for
 * can tell.  Returns 0 (the exit status) once the client has gone, if at
 * least one such job was given out. */
static int
fake_serve(int lfd)
{
    static struct fake_job jobs[FAKE_JOBS];
    int njobs = 0, given = 0, fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return 1;
    FILE *in = fdopen(fd, "r"), *out = fdopen(dup(fd), "w");
    char line[512], name[40], skip[80];
    size_t size;
    while (fgets(line, sizeof line, in) != NULL) {
        struct fake_job *j = &jobs[njobs];
        if (sscanf(line, "add %39s %39s %23s %*s %zu", j->id, j->name, j->ttr, &size) == 4) {
            if (njobs == FAKE_JOBS || size + 2 > sizeof j->payload ||
                fread(j->payload, 1, size + 2, in) != size + 2)
                return 1;
            j->len = size;
            if (strstr(line, " -priority=-") == NULL) /* a backlog job is never given */
                njobs++;
            fputs("+OK\r\n", out);
        } else if (sscanf(line, "complete %*s %zu", &size) == 1) {
            if (size + 2 > sizeof skip || fread(skip, 1, size + 2, in) != size + 2)
                return 1;
            fputs("+OK\r\n", out);
        } else if (sscanf(line, "lease %39s %*d", name) == 1) {
            int k = 0;
            while (k < njobs && (jobs[k].given || strcmp(jobs[k].name, name) == 0))
                k++;
            if (k == njobs) {
                fputs("-TIMEOUT\r\n", out);
            } else {
                fprintf(out, "+OK 1\r\n%s %s %s %zu\r\n", jobs[k].id, jobs[k].name, jobs[k].ttr,
                        jobs[k].len);
                fwrite(jobs[k].payload, 1, jobs[k].len + 2, out);
                jobs[k].given = true;
                given++;
            }
        } else {
            return 1;
        }
        fflush(out);
    }
    return given > 0 ? 0 : 1;
}

/* With a backlog every lease names one queue, and a job from another queue
 * is an error even when it is a valid job of this run. */
START_TEST(test_bench_lease_other_queue)
{
    char out[8192], err[4096], err_path[] = "/tmp/sys_bench.XXXXXX";
    int port;
    int lfd = systest_listen(&port);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(10 * (unsigned)systest_slow()); /* never outlive a failed test */
        _exit(fake_serve(lfd));
    }
    close(lfd);
    int efd = mkstemp(err_path);
    ck_assert_int_ge(efd, 0);
    int rc = bench_run_port(
        port, "-t lease-complete --names 2 --backlog 1 -c 1 -n 20 --timeout 10 --keep", err_path,
        out, sizeof out);
    ssize_t n = read(efd, err, sizeof err - 1);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(err_path);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the fake server gave out no job of another queue");
    ck_assert_int_eq(rc, 1);
    ck_assert_int_gt(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "done"), 0);
    ck_assert_msg(strstr(err, ": lease: job from a queue not asked for: ") != NULL, "stderr: %s",
                  err);
}
END_TEST

/* Workloads whose consumers cannot keep off the backlog refuse it. */
START_TEST(test_bench_backlog_refused)
{
    static const char *const workloads[] = {"add", "run", "schedule"};
    const char *want = "workq-bench: --backlog works only with -t lease-complete or -t cycle\n";
    char err[1024], args[128];
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++) {
        snprintf(args, sizeof args, "-t %s -n 10 -c 2 --backlog 5", workloads[i]);
        ck_assert_int_eq(bench_run_stderr(args, err, sizeof err), 64);
        ck_assert_str_eq(err, want);
    }
    ck_assert_int_eq(
        bench_run_stderr("-t add -n 10 --backlog 5 --protocol beanstalkd", err, sizeof err), 64);
    ck_assert_str_eq(err, want);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* A fake Faktory server                                                    */

#define XSTR(x)  #x
#define ZSTR(x)  XSTR(x)
#define FK_CONNS 8
#define FK_JOBS  512
#define FK_SALT  "5a1t"
#define FK_ITER  4321

struct fk_conn {
    int fd;
    char buf[4096];
    size_t len;
    bool hello;
};

struct fk_job {
    char jid[64], queue[64], payload[128];
    int state; /* 0 queued, 1 fetched, 2 acked */
};

struct fk_fake {
    const char *password; /* NULL: no challenge */
    int corrupt;          /* give the corrupt-th job fetched a wrong payload (0: none) */
    struct fk_job jobs[FK_JOBS];
    int njobs, fetched, acked;
    bool refused; /* a HELLO was refused: the run ends with status 91 */
};

/* SHA-256 iterated as doc/faktory.md says, with OpenSSL's one-shot SHA256. */
static void
fk_hash(const char *password, char out[65])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    char in[256];
    snprintf(in, sizeof in, "%s%s", password, FK_SALT);
    SHA256((const unsigned char *)in, strlen(in), d);
    for (int i = 1; i < FK_ITER; i++)
        SHA256(d, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void
fk_send(int fd, const char *s)
{
    size_t len = strlen(s), off = 0;
    while (off < len) {
        ssize_t n = write(fd, s + off, len - off);
        if (n <= 0)
            _exit(90);
        off += (size_t)n;
    }
}

/* One command line (without its CRLF); returns an exit status for a
 * violation of the rules, else 0.  The job JSON a FETCH returns has its
 * members in another order than PUSH sent them, with spaces, nesting and
 * members of its own: the client must not depend on a layout. */
static int
fk_command(struct fk_fake *fk, struct fk_conn *c, char *line)
{
    char jid[64], queue[64], payload[128], hash[65], want[128];
    if (!c->hello) {
        if (fk->password == NULL)
            snprintf(want, sizeof want, "HELLO {\"v\":2");
        else
            fk_hash(fk->password, hash), snprintf(want, sizeof want, "\"pwdhash\":\"%s\"}", hash);
        if (strncmp(line, "HELLO {\"v\":2", 12) != 0 || strstr(line, want) == NULL) {
            /* every connection is refused alike: which one the client
             * hears first does not matter */
            fk_send(c->fd, "-ERR Invalid password\r\n");
            fk->refused = true;
            return 0;
        }
        c->hello = true;
        fk_send(c->fd, "+OK\r\n");
        return 0;
    }
    if (sscanf(line,
               "PUSH {\"jid\":\"%63[^\"]\",\"jobtype\":\"bench\",\"args\":[\"%127[^\"]\"],"
               "\"queue\":\"%63[^\"]\"}",
               jid, payload, queue) == 3) {
        if (fk->njobs == FK_JOBS || strlen(jid) < 8)
            return 92;
        struct fk_job *j = &fk->jobs[fk->njobs++];
        snprintf(j->jid, sizeof j->jid, "%s", jid);
        snprintf(j->queue, sizeof j->queue, "%s", queue);
        snprintf(j->payload, sizeof j->payload, "%s", payload);
        fk_send(c->fd, "+OK\r\n");
        return 0;
    }
    if (strncmp(line, "FETCH ", 6) == 0) {
        for (int k = 0; k < fk->njobs; k++) {
            struct fk_job *j = &fk->jobs[k];
            char q[70];
            snprintf(q, sizeof q, " %s", j->queue);
            if (j->state != 0 || strstr(line + 5, q) == NULL)
                continue;
            j->state = 1;
            if (++fk->fetched == fk->corrupt)
                j->payload[0] ^= 1;
            char body[512], out[600];
            snprintf(body, sizeof body,
                     "{\"queue\": \"%s\", \"args\": [ \"%s\" ], \"jid\":\"%s\", \"retry\":25,"
                     "\"custom\":{\"jid\":[1,-2.5e3,{\"b\":null}],\"s\":\"a\\\"\\u00e9\"},"
                     "\"created_at\":\"2024-01-01T00:00:00Z\",\"jobtype\":\"bench\"}",
                     j->queue, j->payload, j->jid);
            snprintf(out, sizeof out, "$%zu\r\n%s\r\n", strlen(body), body);
            fk_send(c->fd, out);
            return 0;
        }
        fk_send(c->fd, "$-1\r\n");
        return 0;
    }
    if (sscanf(line, "ACK {\"jid\":\"%63[^\"]\"}", jid) == 1) {
        for (int k = 0; k < fk->njobs; k++) {
            if (strcmp(fk->jobs[k].jid, jid) != 0)
                continue;
            if (fk->jobs[k].state != 1)
                return 93;
            fk->jobs[k].state = 2;
            fk->acked++;
            fk_send(c->fd, "+OK\r\n");
            return 0;
        }
        return 94;
    }
    return 95;
}

/* Serve workq-bench's connections on lfd until the last one closes: at most
 * FK_CONNS of them, every line ending in CRLF.  Returns 0 if every rule was
 * kept and `acks` jobs were acknowledged (each once: a second ACK breaks a
 * rule). */
static int
fk_serve(struct fk_fake *fk, int lfd, int acks)
{
    struct fk_conn conns[FK_CONNS];
    struct pollfd pfd[FK_CONNS + 1];
    int n = 0, open = 0;
    for (;;) {
        pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < n; i++)
            pfd[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)n + 1, -1) < 0)
            return 96;
        if (pfd[0].revents & POLLIN) {
            if (n == FK_CONNS)
                return 97;
            struct fk_conn *c = &conns[n++];
            c->fd = accept(lfd, NULL, NULL);
            c->len = 0;
            c->hello = false;
            open++;
            fk_send(c->fd, fk->password == NULL
                               ? "+HI {\"v\":2}\r\n"
                               : "+HI {\"v\":2,\"i\":" ZSTR(FK_ITER) ",\"s\":\"" FK_SALT "\"}\r\n");
        }
        for (int i = 0; i < n; i++) {
            struct fk_conn *c = &conns[i];
            if (c->fd < 0 || !(pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
            if (got <= 0) {
                close(c->fd);
                c->fd = -1;
                if (--open == 0)
                    return fk->refused ? 91 : fk->acked == acks ? 0 : 98;
                continue;
            }
            c->len += (size_t)got;
            char *nl;
            while ((nl = memchr(c->buf, '\n', c->len)) != NULL) {
                if (nl == c->buf || nl[-1] != '\r')
                    return 99;
                nl[-1] = '\0';
                int rc = fk_command(fk, c, c->buf);
                if (rc != 0)
                    return rc;
                c->len -= (size_t)(nl + 1 - c->buf);
                memmove(c->buf, nl + 1, c->len);
            }
            if (c->len == sizeof c->buf)
                return 100;
        }
    }
}

/* Run workq-bench (args) against a forked fake Faktory server; the fake's
 * exit status in *fake_status, the bench's returned, its stderr in err. */
static int
fk_run(struct fk_fake *fk, int acks, const char *args, int *fake_status, char *out, size_t cap,
       char *err, size_t err_cap)
{
    char err_path[] = "/tmp/sys_bench.XXXXXX", full[512];
    int port;
    int lfd = systest_listen(&port);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(20 * (unsigned)systest_slow()); /* never outlive a failed test */
        _exit(fk_serve(fk, lfd, acks));
    }
    close(lfd);
    int efd = mkstemp(err_path);
    ck_assert_int_ge(efd, 0);
    /* --keep: the fake serves the run's connections only */
    snprintf(full, sizeof full, "--protocol faktory --timeout 15 --keep %s", args);
    int rc = bench_run_port(port, full, err_path, out, cap);
    ssize_t n = read(efd, err, err_cap - 1);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(err_path);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    *fake_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return rc;
}

/* The handshake with a password, PUSH, FETCH and ACK over several
 * connections, pipelined, and a job layout unlike what was pushed. */
START_TEST(test_bench_faktory_fake)
{
    static struct fk_fake fk;
    char out[8192], err[4096], pw[] = "/tmp/sys_bench_pw.XXXXXX";
    int status;
    int pfd = mkstemp(pw);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(write(pfd, "open sesame\r\nnot this\n", 22), 22);
    close(pfd);

    fk = (struct fk_fake){.password = "open sesame"};
    int rc = fk_run(&fk, 300, f("-t cycle -n 300 -c 4 -P 3 --names 2 --password-file %s", pw),
                    &status, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && status == 0, "bench %d, fake %d: %s", rc, status, err);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "push_count"), 300);
    ck_assert_int_eq(csv_field(out, "ack_count"), 300);

    fk = (struct fk_fake){.password = NULL};
    rc = fk_run(&fk, 50, "-t lease-complete -n 50 -c 2", &status, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && status == 0, "bench %d, fake %d: %s", rc, status, err);
    ck_assert_int_eq(csv_field(out, "done"), 50);
    ck_assert_int_eq(csv_field(out, "fetch_count"), 50);

    /* The wrong password: the server's refusal ends the run at once. */
    fk = (struct fk_fake){.password = "other"};
    rc = fk_run(&fk, 0, f("-t add -n 10 -c 2 --password-file %s", pw), &status, out, sizeof out,
                err, sizeof err);
    ck_assert_int_eq(rc, 77);
    ck_assert_int_eq(status, 91);
    ck_assert_msg(strstr(err, ": hello: HELLO refused: \"-ERR Invalid password\"") != NULL,
                  "stderr: %s", err);
    unlink(pw);
}
END_TEST

/* A fetched job whose payload is not the one pushed is an error. */
START_TEST(test_bench_faktory_wrong_payload)
{
    static struct fk_fake fk;
    char out[8192], err[4096];
    int status;
    fk = (struct fk_fake){.corrupt = 5};
    int rc =
        fk_run(&fk, 19, "-t lease-complete -n 20 -c 1", &status, out, sizeof out, err, sizeof err);
    ck_assert_int_eq(rc, 1);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(csv_field(out, "done"), 19);
    /* The job; then the FETCH that finds nothing although a job is left;
     * then that job, never completed. */
    ck_assert_int_eq(csv_field(out, "errors"), 3);
    ck_assert_msg(strstr(err, ": fetch: wrong args: ") != NULL, "stderr: %s", err);
}
END_TEST

/* run, which has no Faktory equivalent, and a password file for beanstalkd
 * are refused, with exit status 64; a password file without a password
 * with 66 (EX_NOINPUT), as workq-cli. */
START_TEST(test_bench_faktory_refused)
{
    char err[1024];
    ck_assert_int_eq(bench_run_stderr("--protocol faktory -t run -n 10 -c 2", err, sizeof err), 64);
    ck_assert_str_eq(err, "workq-bench: Faktory has no equivalent of run\n");
    ck_assert_int_eq(
        bench_run_stderr("--protocol beanstalkd --password-file /dev/null", err, sizeof err), 64);
    ck_assert_str_eq(err, "workq-bench: beanstalkd has no password (--password-file)\n");
    ck_assert_int_eq(bench_run_stderr("-t cycle --password-file /dev/null", err, sizeof err), 66);
    ck_assert_str_eq(err, "workq-bench: /dev/null: the first line must hold the password (1 to "
                          "1024 bytes)\n");
    ck_assert_int_eq(bench_run_stderr("--password-file /nonexistent/pw", err, sizeof err), 66);
    ck_assert_str_eq(err, "workq-bench: /nonexistent/pw: No such file or directory\n");
    ck_assert_int_eq(
        bench_run_stderr("--protocol faktory --password-file /dev/null", err, sizeof err), 66);
    ck_assert_str_eq(err, "workq-bench: /dev/null: the first line must hold the password (1 to "
                          "1024 bytes)\n");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* --protocol faktory against the real server                               */

/* A server with a Faktory listener (and a password file, if not NULL): its
 * Workq port in *wq_port, its Faktory port returned. */
static int
fk_start(struct systest_proc *p, const char *password_file, int *wq_port)
{
    const char *args[] = {"-listen",
                          "127.0.0.1:0",
                          "-faktory-listen",
                          "127.0.0.1:0",
                          password_file ? "-faktory-password-file" : NULL,
                          password_file,
                          NULL};
    systest_proc_start(p, args);
    ck_assert(systest_proc_wait(p, false, "faktory listening on"));
    ck_assert(systest_proc_wait(p, false, "\n"));
    *wq_port = systest_listening_port(p->out.p, 0);
    const char *line = strstr(p->out.p, "faktory listening on 127.0.0.1:");
    ck_assert_ptr_nonnull(line);
    return atoi(strchr(line, ':') + 1);
}

/* Every workload but run over the Faktory listener: every job done, and the
 * server's own counts agree (ACKed jobs are gone, pushed ones and the
 * backlog wait in their queues). */
START_TEST(test_bench_faktory_server)
{
    struct systest_proc p;
    char out[8192];
    int wq_port, port = fk_start(&p, NULL, &wq_port);
    int fd = systest_connect_port(wq_port);

    ck_assert_int_eq(bench_run_port(port, "--protocol faktory -t add -n 300 -c 3 -P 4 --keep", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "push_count"), 300);
    ck_assert_int_eq(systest_server_stat(fd, "faktory-jobs"), 300);
    ck_assert_int_eq(systest_server_stat(fd, "faktory-enqueued-jobs"), 300);

    ck_assert_int_eq(bench_run_port(port, "--protocol faktory -t cycle -n 400 -c 4 --names 3", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 400);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "incomplete"), 0);
    ck_assert_int_eq(csv_field(out, "ack_count"), 400);

    ck_assert_int_eq(bench_run_port(port, "--protocol faktory -t lease-complete -n 200 -c 2 -P 3",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 200);
    ck_assert_int_eq(csv_field(out, "fetch_count"), 200);

    /* Pipelined cycle, more consumers than producers. */
    ck_assert_int_eq(bench_run_port(port, "--protocol faktory -t cycle -n 300 -c 3 -P 8 -d 100",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);

    /* schedule (`at`) and random priorities. */
    ck_assert_int_eq(bench_run_port(port,
                                    "--protocol faktory -t schedule -n 300 -c 4 -P 2 --names 2 "
                                    "--priorities",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);

    /* A backlog at priority 1 stays below the measured jobs throughout. */
    ck_assert_int_eq(bench_run_port(port,
                                    "--protocol faktory -t cycle -n 300 -c 3 -P 8 --names 3 "
                                    "--backlog 20",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "backlog_added"), 60);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "cleaned"), 60); /* the backlog, by QUEUE REMOVE */

    /* An add run cleans up after itself too. */
    ck_assert_int_eq(bench_run_port(port, "--protocol faktory -t add -n 100 -c 2 --names 2", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "cleaned"), 100);

    /* Only the jobs of the --keep add run are left, still queued. */
    ck_assert_int_eq(systest_server_stat(fd, "faktory-jobs"), 300);
    ck_assert_int_eq(systest_server_stat(fd, "faktory-enqueued-jobs"), 300);
    ck_assert_int_eq(systest_server_stat(fd, "faktory-working-jobs"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 0); /* no Workq job */
    close(fd);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* The password from a file and from FAKTORY_PASSWORD; a wrong one ends the
 * run with the server's refusal. */
START_TEST(test_bench_faktory_password)
{
    struct systest_proc p;
    char out[8192], err[4096], pw[] = "/tmp/sys_bench_pw.XXXXXX",
                               err_path[] = "/tmp/sys_bench.XXXXXX";
    int pfd = mkstemp(pw);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(write(pfd, "s3cret\n", 7), 7);
    close(pfd);
    int wq_port, port = fk_start(&p, pw, &wq_port);

    ck_assert_int_eq(
        bench_run_port(port, f("--protocol faktory -t cycle -n 100 -c 4 --password-file %s", pw),
                       NULL, out, sizeof out),
        0);
    ck_assert_int_eq(csv_field(out, "done"), 100);
    ck_assert_int_eq(csv_field(out, "errors"), 0);

    ck_assert_int_eq(setenv("FAKTORY_PASSWORD", "s3cret", 1), 0);
    ck_assert_int_eq(
        bench_run_port(port, "--protocol faktory -t add -n 10 -c 2", NULL, out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 10);

    int efd = mkstemp(err_path);
    ck_assert_int_ge(efd, 0);
    ck_assert_int_eq(setenv("FAKTORY_PASSWORD", "s3cre", 1), 0);
    ck_assert_int_eq(
        bench_run_port(port, "--protocol faktory -t add -n 10 -c 2", err_path, out, sizeof out),
        77);
    ck_assert_int_eq(unsetenv("FAKTORY_PASSWORD"), 0);
    ssize_t n = read(efd, err, sizeof err - 1);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(err_path);
    ck_assert_msg(strstr(err, ": hello: HELLO refused: \"-ERR Invalid password\"") != NULL,
                  "stderr: %s", err);
    ck_assert_str_eq(out, ""); /* no report after a failed set-up */
    unlink(pw);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* workq with -password-file: every connection sends auth first, from
 * --password-file or WORKQ_PASSWORD; a wrong one ends the run with the
 * server's refusal and no report. */
START_TEST(test_bench_workq_password)
{
    char out[8192], err[4096], pw[] = "/tmp/sys_bench_pw.XXXXXX",
                               err_path[] = "/tmp/sys_bench.XXXXXX";
    int pfd = mkstemp(pw);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(write(pfd, "s3cret\r\n", 8), 8);
    close(pfd);
    const char *args[] = {"-listen", "127.0.0.1:0", "-password-file", pw, NULL};
    struct systest_proc p;
    systest_proc_start(&p, args);
    ck_assert_int_eq(bench_run_port(p.s.port, f("-t cycle -n 100 -c 4 --password-file %s", pw),
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 100);
    ck_assert_int_eq(csv_field(out, "errors"), 0);

    ck_assert_int_eq(setenv("WORKQ_PASSWORD", "s3cret", 1), 0);
    ck_assert_int_eq(bench_run_port(p.s.port, "-t add -n 10 -c 2", NULL, out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 10);

    int efd = mkstemp(err_path);
    ck_assert_int_ge(efd, 0);
    ck_assert_int_eq(setenv("WORKQ_PASSWORD", "s3cre", 1), 0);
    ck_assert_int_eq(bench_run_port(p.s.port, "-t add -n 10 -c 2", err_path, out, sizeof out), 77);
    ck_assert_int_eq(unsetenv("WORKQ_PASSWORD"), 0);
    ssize_t n = read(efd, err, sizeof err - 1);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(err_path);
    ck_assert_msg(strstr(err, ": auth: auth refused: \"-CLIENT-ERROR Invalid password\"") != NULL,
                  "stderr: %s", err);
    ck_assert_str_eq(out, "");

    /* No password at all: the first "Authentication required" ends the
     * run, said once (not once per request), exit 77, no report. */
    ck_assert_int_eq(bench_run_stderr(f("-p %d -n 1000 -c 8 -P 4", p.s.port), err, sizeof err), 77);
    ck_assert_str_eq(err, f("workq-bench: 127.0.0.1:%d wants a password (-CLIENT-ERROR "
                            "Authentication required)\n"
                            "workq-bench: hint: give --password-file FILE, or set WORKQ_PASSWORD\n",
                            p.s.port));
    ck_assert_int_eq(bench_run_port(p.s.port, "-t add -n 10 -c 2", NULL, out, sizeof out), 77);
    ck_assert_str_eq(out, "");
    unlink(pw);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* The clean-up: after every workload, after --timeout and after Ctrl-C,
 * `inspect server` counts as many jobs as before the run; --keep leaves
 * them. */
START_TEST(test_bench_clean)
{
    char out[8192];
    systest_start_srv();
    int fd = systest_conn();
    systest_add(fd, id4(1), "mine", "x"); /* not the bench's: stays */
    static const struct {
        const char *args;
        long cleaned;
    } runs[] = {
        {"-t add -n 300 -c 3 -P 4", 300},
        {"-t cycle -n 300 -c 4", 300}, /* completed jobs stay until their TTL */
        {"-t cycle -n 200 -c 3 -P 8 --names 3 --backlog 10", 200 + 30},
        {"-t lease-complete -n 200 -c 2 --names 2 --backlog 5", 200 + 10},
        {"-t schedule -n 200 -c 4 -P 2", 200},
        {"-t run -n 100 -c 4", 0}, /* the server removes run jobs itself */
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        ck_assert_int_eq(bench_run(runs[i].args, out, sizeof out), 0);
        ck_assert_int_eq(csv_field(out, "errors"), 0);
        ck_assert_int_eq(csv_field(out, "cleaned"), runs[i].cleaned);
        ck_assert_msg(systest_server_stat(fd, "jobs") == 1, "%s left jobs", runs[i].args);
    }

    /* Cut short by --timeout: what was added is removed all the same. */
    ck_assert_int_eq(bench_run("-t add -n 2000000 -c 4 -P 16 --timeout 1", out, sizeof out), 1);
    ck_assert_int_eq(csv_field(out, "timed_out"), 1);
    ck_assert_int_gt(csv_field(out, "cleaned"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 1);

    /* Ctrl-C, with leases waiting and jobs in flight. */
    const char *bench = getenv("WQ_BENCH");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        execl(bench, bench, "-p", f("%d", systest_srv.port), "-t", "cycle", "-n", "2000000", "-c",
              "8", "-P", "8", "--backlog", "50", "-q", (char *)NULL);
        _exit(127);
    }
    for (int waited = 0; systest_server_stat(fd, "completed-jobs") < 1000; waited += 20) {
        ck_assert_msg(waited < systest_wait_ms(), "the run does not get going");
        systest_sleep_ms(20);
    }
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 1);

    /* --keep leaves them. */
    ck_assert_int_eq(bench_run("-t add -n 50 -c 2 --keep", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "cleaned"), 0);
    ck_assert_int_eq(systest_server_stat(fd, "jobs"), 51);
    close(fd);
    systest_stop_srv();
}
END_TEST

/* -V and --version as the server's and workq-cli's; usage errors exit 64. */
START_TEST(test_bench_version_usage)
{
    char out[256], err[1024];
    ck_assert_int_eq(bench_run_args("-V", out, sizeof out), 0);
    ck_assert_str_eq(out, "workq-bench " PACKAGE_VERSION "\n");
    ck_assert_int_eq(bench_run_args("--version", out, sizeof out), 0);
    ck_assert_str_eq(out, "workq-bench " PACKAGE_VERSION "\n");
    static const char *const cases[][2] = {
        {"--bogus", "workq-bench: unknown option \"--bogus\" (see workq-bench --help)\n"},
        {"-qx", "workq-bench: unknown option \"-x\" (see workq-bench --help)\n"},
        {"-c", "workq-bench: missing value for option \"-c\" (see workq-bench --help)\n"},
        {"--names", "workq-bench: missing value for option \"--names\" (see workq-bench "
                    "--help)\n"},
        {"-c 0", "workq-bench: -c must be a number from 1 to 10000\n"},
        {"-t nap", "workq-bench: unknown workload: nap\n"},
        {"--csv --json", "workq-bench: --csv and --json exclude each other\n"},
        {"--addr [::1", "workq-bench: bad address \"[::1\" (--addr HOST:PORT)\n"},
        {"--addr h:0", "workq-bench: bad address \"h:0\" (--addr HOST:PORT)\n"},
        {"extra", "workq-bench: unexpected argument: extra\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(bench_run_stderr(cases[i][0], err, sizeof err), 64);
        ck_assert_str_eq(err, cases[i][1]);
    }
}
END_TEST

/* WORKQ_ADDR, as workq-cli reads it: the server when no option names one;
 * -h, -p and --addr win over it; only the workq protocol reads it. */
START_TEST(test_bench_workq_addr)
{
    char out[8192], err[1024];
    systest_start_srv();
    const char *addr = f("127.0.0.1:%d", systest_srv.port);
    ck_assert_int_eq(setenv("WORKQ_ADDR", addr, 1), 0);
    ck_assert_int_eq(bench_run_args("-t add -n 20 -c 2 --csv -q", out, sizeof out), 0);
    ck_assert_int_eq(csv_field(out, "done"), 20);
    ck_assert_ptr_nonnull(strstr(out, f(",%s,", addr)));
    ck_assert_int_eq(setenv("WORKQ_ADDR", f(":%d", systest_srv.port), 1), 0); /* host 127.0.0.1 */
    ck_assert_int_eq(bench_run_args("-t add -n 20 -c 2 --csv -q", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, f(",%s,", addr)));
    /* An option wins, whatever the variable holds. */
    ck_assert_int_eq(setenv("WORKQ_ADDR", "nonsense:port", 1), 0);
    ck_assert_int_eq(bench_run("-t add -n 20 -c 2", out, sizeof out), 0);
    ck_assert_int_eq(
        bench_run_args(f("--addr %s -t add -n 20 -c 2 --csv -q", addr), out, sizeof out), 0);
    ck_assert_int_eq(bench_run_stderr("-t add -n 20", err, sizeof err), 64);
    ck_assert_str_eq(err, "workq-bench: bad address \"nonsense:port\" in WORKQ_ADDR\n");
    /* Faktory's port is not WORKQ_ADDR's: nothing is read from it. */
    ck_assert_int_eq(setenv("WORKQ_ADDR", addr, 1), 0);
    bench_run_stderr("--protocol faktory -t add -n 1 -c 1 --timeout 2", err, sizeof err);
    ck_assert_msg(strstr(err, addr) == NULL, "stderr: %s", err);
    systest_stop_srv();
}
END_TEST

/* Another listener than the protocol's: the run stops at once, saying what
 * answered and what to try (exit 1, no report). */
START_TEST(test_bench_other_listeners)
{
    char dir[64], err[4096];
    systest_tmpdir_new(dir);
    struct systest_proc p;
    struct systest_ports ports;
    systest_proc_start_every_listener(&p, dir, &ports);
    int plain = ports.plain, tls = ports.tls, fk = ports.faktory, metrics = ports.metrics;
    char cert[96];
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);

    ck_assert_int_eq(bench_run_stderr(f("-p %d -n 1000 -c 8", tls), err, sizeof err), 1);
    ck_assert_str_eq(err, f("workq-bench: cannot use 127.0.0.1:%d: it closed the connection "
                            "before answering\n"
                            "workq-bench: hint: if 127.0.0.1:%d is a tls:// listener, add --tls\n",
                            tls, tls));
    ck_assert_int_eq(bench_run_stderr(f("-p %d -n 1000 -c 8", fk), err, sizeof err), 1);
    ck_assert_str_eq(err, f("workq-bench: cannot use 127.0.0.1:%d: it is a Faktory listener (it "
                            "greeted with +HI)\n"
                            "workq-bench: hint: add --protocol faktory, or give the address of "
                            "the server's -listen\n",
                            fk));
    ck_assert_int_eq(bench_run_stderr(f("-p %d -n 1000 -c 8", metrics), err, sizeof err), 1);
    ck_assert_str_eq(err, f("workq-bench: cannot use 127.0.0.1:%d: it answered in HTTP (a metrics "
                            "listener)\n"
                            "workq-bench: hint: give the address of the server's -listen\n",
                            metrics));
    ck_assert_int_eq(
        bench_run_stderr(f("-p %d -n 10 -c 2 --tls --cacert %s", plain, cert), err, sizeof err), 1);
    ck_assert_msg(strstr(err, "wrong version number\n") != NULL, "stderr: %s", err);
    ck_assert_ptr_nonnull(strstr(
        err, f("\nworkq-bench: hint: 127.0.0.1:%d does not speak TLS; without --tls?\n", plain)));
    /* The right way round works. */
    ck_assert_int_eq(
        bench_run_stderr(f("-p %d -n 100 -c 2 --tls --cacert %s", tls, cert), err, sizeof err), 0);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    ck_assert_int_eq(system(f("rm -rf '%s'", dir)), 0);
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* --protocol hero: workq-server's Hero listener, and redis-server           */

/* A server with a Hero listener (and a password file, if not NULL): its
 * Hero port. */
static int
hero_start(struct systest_proc *p, const char *password_file)
{
    const char *args[] = {"-listen",
                          "127.0.0.1:0",
                          "-hero-listen",
                          "127.0.0.1:0",
                          password_file ? "-hero-password-file" : NULL,
                          password_file,
                          NULL};
    systest_proc_start(p, args);
    return systest_proc_port(p, "hero");
}

/* The keys a RESP server on port holds (DBSIZE), AUTH'd with password if
 * not NULL. */
static long
hero_dbsize(int port, const char *password)
{
    int fd = systest_connect_port(port);
    if (password != NULL)
        systest_roundtrip(fd, f("AUTH %s\r\n", password), "+OK\r\n");
    systest_sends(fd, "DBSIZE\r\n");
    const char *l = systest_read_line(fd);
    ck_assert_msg(l[0] == ':', "DBSIZE: %s", l);
    long n = atol(l + 1);
    close(fd);
    return n;
}

/* Every workload Hero has, over several connections and names, pipelined,
 * with a backlog: every job done, and the clean-up leaves only what --keep
 * kept (each job's hash, and the work queue). */
static void
hero_workloads(int port)
{
    char out[8192];
    long keys = hero_dbsize(port, NULL);
    ck_assert_int_eq(bench_run_port(port, "--protocol hero -t add -n 300 -c 3 -P 4 --keep", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "hset_count"), 300);
    ck_assert_int_eq(csv_field(out, "lpush_count"), 300);
    ck_assert_int_eq(hero_dbsize(port, NULL), keys + 301);

    ck_assert_int_eq(bench_run_port(port, "--protocol hero -t cycle -n 400 -c 4 --names 3", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 400);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "incomplete"), 0);
    ck_assert_int_eq(csv_field(out, "blpop_count"), 400);
    ck_assert_int_eq(csv_field(out, "hgetall_count"), 400);
    ck_assert_int_eq(csv_field(out, "started_count"), 400);
    ck_assert_int_eq(csv_field(out, "finished_count"), 400);
    ck_assert_int_eq(csv_field(out, "reply_count"), 400);
    ck_assert_int_eq(csv_field(out, "cleaned"), 400);

    ck_assert_int_eq(bench_run_port(port, "--protocol hero -t lease-complete -n 200 -c 2 -P 3",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 200);

    /* Pipelined, more workers than producers, a larger script. */
    ck_assert_int_eq(bench_run_port(port, "--protocol hero -t cycle -n 300 -c 3 -P 8 -d 1000", NULL,
                                    out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);

    /* A backlog stays under the measured jobs (LPUSH and BLPOP: the last
     * pushed is popped first); the clean-up deletes it too. */
    ck_assert_int_eq(bench_run_port(port,
                                    "--protocol hero -t cycle -n 300 -c 3 -P 8 --names 3 "
                                    "--backlog 20",
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "backlog_added"), 60);
    ck_assert_int_eq(csv_field(out, "done"), 300);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(csv_field(out, "cleaned"), 360);

    /* Only the --keep run's keys are left. */
    ck_assert_int_eq(hero_dbsize(port, NULL), keys + 301);
}

START_TEST(test_bench_hero_server)
{
    struct systest_proc p;
    int port = hero_start(&p, NULL);
    hero_workloads(port);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* The same bytes against Redis itself, where it is installed. */
START_TEST(test_bench_hero_redis)
{
    if (system("command -v redis-server >/dev/null 2>&1") != 0) {
        fprintf(stderr, "sys_bench: redis-server is not installed: hero_redis skipped\n");
        return;
    }
    int port;
    close(systest_listen(&port)); /* a free port, most likely still free */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        execlp("redis-server", "redis-server", "--port", f("%d", port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", "/tmp", (char *)NULL);
        _exit(127);
    }
    systest_track_pid(pid);
    int fd = -1;
    for (int i = 0; i < 100 && fd < 0; i++) {
        systest_sleep_ms(50);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            close(fd);
            fd = -1;
        }
    }
    ck_assert_msg(fd >= 0, "redis-server did not start on port %d", port);
    close(fd);
    hero_workloads(port);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    systest_untrack_pid(pid);
}
END_TEST

/* A password: AUTH first; without one the server's -NOAUTH ends the run
 * (77), as a wrong one does; run, schedule and --priorities are refused
 * (64). */
START_TEST(test_bench_hero_password)
{
    struct systest_proc p;
    char out[8192], err[4096], pw[] = "/tmp/sys_bench_pw.XXXXXX",
                               err_path[] = "/tmp/sys_bench.XXXXXX",
                               bad[] = "/tmp/sys_bench_pw.XXXXXX";
    int pfd = mkstemp(pw), bfd = mkstemp(bad);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_ge(bfd, 0);
    ck_assert_int_eq(write(pfd, "s3cret\n", 7), 7);
    ck_assert_int_eq(write(bfd, "s3cre\n", 6), 6);
    close(pfd);
    close(bfd);
    int port = hero_start(&p, pw);

    ck_assert_int_eq(bench_run_port(port, f("--protocol hero -n 100 -c 4 --password-file %s", pw),
                                    NULL, out, sizeof out),
                     0);
    ck_assert_int_eq(csv_field(out, "done"), 100);
    ck_assert_int_eq(csv_field(out, "errors"), 0);
    ck_assert_int_eq(hero_dbsize(port, "s3cret"), 0);

    int efd = mkstemp(err_path);
    ck_assert_int_ge(efd, 0);
    ck_assert_int_eq(bench_run_port(port, "--protocol hero -n 10 -c 2", err_path, out, sizeof out),
                     77);
    ck_assert_str_eq(out, ""); /* no report */
    ssize_t n = read(efd, err, sizeof err - 1);
    err[n > 0 ? n : 0] = '\0';
    ck_assert_msg(strstr(err, " wants a password (NOAUTH Authentication required.)\n") != NULL,
                  "stderr: %s", err);
    ck_assert_int_eq(bench_run_port(port, f("--protocol hero -n 10 -c 2 --password-file %s", bad),
                                    err_path, out, sizeof out),
                     77);
    lseek(efd, 0, SEEK_SET);
    n = read(efd, err, sizeof err - 1);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    unlink(err_path);
    ck_assert_msg(strstr(err, ": auth: AUTH refused: \"-WRONGPASS ") != NULL, "stderr: %s", err);
    systest_proc_stop(&p);
    systest_proc_free(&p);
    unlink(pw);
    unlink(bad);

    ck_assert_int_eq(bench_run_stderr("--protocol hero -t run", err, sizeof err), 64);
    ck_assert_str_eq(err,
                     "workq-bench: hero measures add, lease-complete and cycle only (no run)\n");
    ck_assert_int_eq(bench_run_stderr("--protocol hero -t schedule", err, sizeof err), 64);
    ck_assert_int_eq(bench_run_stderr("--protocol hero --priorities", err, sizeof err), 64);
    ck_assert_str_eq(err, "workq-bench: Hero's jobs have no priorities (--priorities)\n");
}
END_TEST

START_TEST(test_bench_refused)
{
    char out[8192];
    /* Nothing listens on the port of a stopped server: an error, not a result. */
    systest_start_srv();
    systest_stop_srv();
    ck_assert_int_ne(bench_run("-t add -n 10 -c 1 --timeout 5", out, sizeof out), 0);
}
END_TEST

static Suite *
bench_suite(void)
{
    const struct systest_group groups[] = {
        {"bench",
         {test_bench_counts, test_bench_refused, test_bench_clean, test_bench_version_usage,
          test_bench_workq_addr, test_bench_other_listeners, NULL}},
        {"backlog",
         {test_bench_backlog, test_bench_backlog_ttl, test_bench_backlog_timeout,
          test_bench_lease_other_queue, test_bench_backlog_refused, NULL}},
        {"faktory",
         {test_bench_faktory_fake, test_bench_faktory_wrong_payload, test_bench_faktory_refused,
          test_bench_faktory_server, test_bench_faktory_password, test_bench_workq_password, NULL}},
        {"hero", {test_bench_hero_server, test_bench_hero_redis, test_bench_hero_password, NULL}},
    };
    return systest_suite("bench", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(bench_suite());
}
