/* systest.h - the helpers of every system test: run the real workq-server
 * (start it on a free port, capture what it writes, stop or kill it, run one
 * that must exit by itself), talk TCP to it (send, read lines and blocks,
 * compare replies byte for byte, look up `inspect server`), and the text,
 * job and suite helpers the system tests share.  systest_proc.c holds the
 * process helpers, systest.c the rest.
 *
 * Environment:
 *   WQ_SERVER          path of the workq-server binary (set by make check)
 *   WQ_SERVER_WRAPPER  command words put before it, e.g. "valgrind -q ..."
 *   WQ_TEST_SLOW       a multiplier for every wait (e.g. 20 under valgrind)
 */
#ifndef WQ_SYSTEST_H
#define WQ_SYSTEST_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A growing byte string, NUL terminated; start from {0}, free(p) at the end. */
struct sb {
    char *p;
    size_t n, cap;
};

/* Append len bytes to s. */
void sb_addn(struct sb *s, const void *data, size_t len);
/* Append text to s. */
void sb_add(struct sb *s, const char *text);

/* ------------------------------------------------------------------------ */
/* The server process (systest_proc.c) */

struct systest_server {
    pid_t pid;
    int port;   /* from its first line, "... listening on 127.0.0.1:PORT" */
    int out_fd; /* the server's stdout */
};

/* Fork and exec the server (behind WQ_SERVER_WRAPPER) with exactly these
 * arguments (NULL terminated): its stdout to *out_fd, its stderr to err_fd
 * unless that is -1 (then it is inherited). */
pid_t systest_spawn(const char *const *args, int *out_fd, int err_fd);
/* Start the server on 127.0.0.1 port 0 with extra arguments (NULL
 * terminated list, may be empty) and wait until it listens. */
void systest_start(struct systest_server *s, ...) __attribute__((sentinel));
/* Start the server with exactly these arguments and wait until it listens.
 * Its stderr goes to a new file err_path, or is inherited if that is NULL;
 * a server that ends before listening fails the test with that file's text. */
void systest_start_argv(struct systest_server *s, const char *const *args, const char *err_path);
/* Check the server's first line "workq-server listening on 127.0.0.1:PORT"
 * and take PORT into s->port. */
void systest_parse_port(struct systest_server *s, const char *line);
/* SIGTERM it and check that it exits with status 0. */
void systest_stop(struct systest_server *s);
/* SIGKILL it and reap it. */
void systest_kill(struct systest_server *s);
/* Run a server that must end by itself (e.g. refuse to start) with exactly
 * these arguments, its stderr as in systest_start_argv; its exit status. */
int systest_run_argv(const char *const *args, const char *err_path);

/* A server whose stdout and stderr a test reads: both through pipes, what
 * came so far in out and err. */
struct systest_proc {
    struct systest_server s; /* pid, first port, stdout */
    int err_fd;
    struct sb out, err;
    bool out_open, err_open;
};

/* Start the server with exactly these arguments; do not wait for anything. */
void systest_proc_spawn(struct systest_proc *p, const char *const *args);
/* Start it and wait for its first listening line (its port into p->s.port). */
void systest_proc_start(struct systest_proc *p, const char *const *args);
/* Read what stdout and stderr offer within ms; false if nothing came. */
bool systest_proc_pump(struct systest_proc *p, int ms);
/* Wait (up to the scaled bound) until what was read of stdout (err false)
 * or stderr (err true) contains text; false if it never did. */
bool systest_proc_wait(struct systest_proc *p, bool err, const char *text);
/* Wait for the process to exit, keeping what it wrote; its exit status. */
int systest_proc_finish(struct systest_proc *p);
/* Run the server with args to its end; its output stays in p. */
int systest_proc_run(struct systest_proc *p, const char *const *args);
/* SIGTERM it, wait for it with its output and expect exit status 0. */
void systest_proc_stop(struct systest_proc *p);
/* SIGKILL it (under a wrapper, the wrapper's process), expect it killed,
 * untrack and free it. */
void systest_proc_crash(struct systest_proc *p);
/* Free what was read (the process must have ended). */
void systest_proc_free(struct systest_proc *p);
/* The ports of a server with every kind of listener. */
struct systest_ports {
    int plain, tls, faktory, metrics;
};
/* Start p with a plain and a tls:// Workq listener, a Faktory and a
 * metrics listener, its certificate self-signed for localhost and
 * 127.0.0.1 (made with the openssl command as dir/cert.pem, its key
 * dir/key.pem); their ports. */
void systest_proc_start_every_listener(struct systest_proc *p, const char *dir,
                                       struct systest_ports *ports);
/* The port of the n-th (from 0) "listening on 127.0.0.1:PORT" line of out. */
int systest_listening_port(const char *out, int n);
/* Wait until p prints "workq-server NAME listening on 127.0.0.1:PORT" (a
 * front-end's plain address); PORT. */
int systest_proc_port(struct systest_proc *p, const char *name);
/* The number of lines of s. */
int systest_count_lines(const char *s);

/* What a test leaves if a check fails (check ends the test's process) is
 * noted in memory shared with the runner, and systest_main cleans it up
 * after the suite: a daemon that left the process group, a directory. */

/* Kill pid (if still a workq-server) after the suite unless untracked. */
void systest_track_pid(pid_t pid);
void systest_untrack_pid(pid_t pid);
/* A new directory /tmp/wq-test-XXXXXX into dir (>= 32 bytes), removed after
 * the suite unless systest_tmpdir_remove removes it first. */
void systest_tmpdir_new(char *dir);
void systest_tmpdir_remove(const char *dir);
/* Set up and run the clean-up (systest_main calls them). */
void systest_cleanup_init(void);
void systest_cleanup_run(void);

/* ------------------------------------------------------------------------ */
/* Talking to the server (systest.c) */

/* A new connection to the server, or to 127.0.0.1:port. */
int systest_connect(const struct systest_server *s);
int systest_connect_port(int port);
/* A listener on 127.0.0.1 at a free port, for a test to serve by hand. */
int systest_listen(int *port);
void systest_send(int fd, const void *data, size_t len);
void systest_sends(int fd, const char *text);
/* Read exactly strlen(expected) bytes (waiting up to a few seconds) and
 * fail the test unless they are expected. */
void systest_expect(int fd, const char *expected);
void systest_expect_bytes(int fd, const void *expected, size_t len);
/* Send text and expect the reply. */
void systest_roundtrip(int fd, const char *text, const char *expected);
/* Fail if any byte arrives within ms milliseconds (scaled by WQ_TEST_SLOW). */
void systest_expect_silence(int fd, int ms);
/* Expect the server to close the connection (after any bytes already read). */
void systest_expect_closed(int fd);
/* Read exactly n bytes into buf (NUL terminated), waiting up to a few
 * seconds for each piece. */
void systest_read_n(int fd, char *buf, size_t n);
/* One reply line, which must end in CR LF, without it; one of a ring of
 * buffers (4 results live at once).  Fails the test if none comes within
 * the wait. */
const char *systest_read_line(int fd);
/* The same, waiting up to ms (not scaled): NULL if no line came by then or
 * the connection closed. */
const char *systest_read_line_within(int fd, int ms);
/* Does the server on Workq connection fd allocate with jemalloc (inspect
 * server's allocator)?  Sanitizer builds do not: their RSS holds shadow
 * memory and a quarantine of freed blocks, so RSS bounds do not apply. */
bool systest_uses_jemalloc(int fd);
/* The value of key in the reply to `inspect server` (sent here). */
uint64_t systest_server_stat(int fd, const char *key);

/* ------------------------------------------------------------------------ */
/* Time */

/* Sleep ms milliseconds, not scaled. */
/* Is s a lowercase canonical version-4 UUID? */
bool systest_is_uuid4(const char *s);
/* The whole file at path, NUL-terminated ("" if there is none or no path;
 * *len, if not NULL, gets its length); free it. */
char *systest_slurp(const char *path, size_t *len);
void systest_sleep_ms(int ms);
/* The WQ_TEST_SLOW multiplier (1 by default). */
int systest_slow(void);
/* True when WQ_TEST_SLOW is 1: checks that something has NOT happened yet
 * run only then. */
bool systest_exact_timing(void);
/* Is the server run under a wrapper (WQ_SERVER_WRAPPER, e.g. valgrind)?
 * Then its pid is the wrapper's, and it runs several times slower. */
bool systest_wrapped(void);
/* Sleep long enough for a server-side deadline of ms to have passed
 * (ms + 300, scaled). */
void systest_sleep_past(int ms);
/* Wall clock, Unix milliseconds. */
int64_t systest_now_ms(void);
/* How long to wait for anything that must happen: 5 s, scaled. */
int systest_wait_ms(void);

/* ------------------------------------------------------------------------ */
/* Text helpers: short names, for test code only. */

/* Replies. */
#define OK        "+OK\r\n"
#define NF        "-NOT-FOUND\r\n"
#define TO        "-TIMEOUT\r\n"
#define ERR(text) "-CLIENT-ERROR " text "\r\n"
#define FULL      "-SERVER-ERROR Too many connections\r\n"

/* printf into one of a ring of buffers: up to 16 results live at once. */
const char *f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A Faktory pwdhash: SHA-256 applied iterations times, the first over
 * password+salt (OpenSSL's one-shot SHA256, not the server's code). */
const char *systest_pwdhash(const char *password, const char *salt, int iterations);

/* Distinct ids: version 4 and version 1 (the protocol text's examples). */
const char *id4(unsigned n);
/* The version-1 id number n (see id4). */
const char *id1(unsigned n);

/* ------------------------------------------------------------------------ */
/* One server at a time, and jobs with the default TTR/TTL. */

#define SYSTEST_TTR 60000u /* long enough never to expire during a test */
#define SYSTEST_TTL "600000"

/* The server of systest_start_srv/systest_stop_srv/systest_conn. */
extern struct systest_server systest_srv;

/* systest_start(&systest_srv) without extra arguments. */
void systest_start_srv(void);
/* systest_stop(&systest_srv). */
void systest_stop_srv(void);
/* A new connection to systest_srv. */
int systest_conn(void);

/* The reply to a lease that got job id of queue name. */
const char *systest_lease_reply(const char *id, const char *name, unsigned ttr,
                                const char *payload);
/* The reply to a result of a finished job. */
const char *systest_result_reply(const char *id, int success, const char *result);
/* add with the given ttr/ttl/flags (flags may be NULL), expect +OK. */
void systest_add_full(int fd, const char *id, const char *name, unsigned ttr, const char *ttl,
                      const char *payload, const char *flags);
/* add with SYSTEST_TTR and SYSTEST_TTL, expect +OK. */
void systest_add(int fd, const char *id, const char *name, const char *payload);
/* Expect the lease reply for a job with SYSTEST_TTR. */
void systest_expect_lease(int fd, const char *id, const char *name, const char *payload);
/* lease name 0, and expect job id (SYSTEST_TTR) to come. */
void systest_lease_now(int fd, const char *name, const char *id, const char *payload);
/* A command that always answers -NOT-FOUND: proves that everything sent
 * before it got exactly the replies already checked. */
void systest_sync(int fd);
/* One add with a 3-byte payload and these arguments: exactly one reply,
 * the given one (an error). */
void systest_add_error(int fd, const char *args, const char *reply);
/* A line of exactly len bytes: spaces, then cmd. */
const char *systest_padded_line(size_t len, const char *cmd);
/* A name of n copies of c (two results live at once). */
const char *systest_name_of(size_t n, char c);

/* ------------------------------------------------------------------------ */
/* Jobs, times, queues and counters (systest_job.c) */

/* What one job block of inspect must say. The strings are copied in, so
 * arrays of them outlive f()'s ring of buffers. */
struct systest_job {
    char id[48], name[256], ttl[24], time[24]; /* time "": not scheduled */
    char payload[256];
    size_t plen;
    unsigned ttr, max_attempts, attempts, max_fails, fails, state;
    int priority;
    /* ours, after the others when set: add -backoff's policy ("": none),
     * -dead=1, and whether it waits out a backoff (retry-at) or is in the
     * dead set (died), those times "now" */
    char backoff[16];
    bool dead, retry_at, died;
};

/* Copy text into a char array field of struct systest_job. */
#define SET(field, value) snprintf((field), sizeof(field), "%s", (value))

/* The job states of inspect. */
enum { NEW = 0, COMPLETED = 1, FAILED = 2, PENDING = 3, LEASED = 4 };

/* For systest_expect_stats' values. */
#define U(x) ((unsigned long long)(x))

/* Sleep until the wall clock reaches ms (Unix milliseconds). */
void systest_sleep_until(int64_t ms);
/* A time ms milliseconds ahead, scaled. */
int64_t systest_ahead(int ms);
/* ms as "YYYY-MM-DDTHH:MM:SS.mmmZ", and as "YYYY-MM-DDTHH:MM:SSZ" (rounded
 * down, as inspect shows it). */
const char *systest_time_ms(int64_t ms);
const char *systest_time_s(int64_t ms);
/* Check that a server "now" (created, started) is UTC within seconds of
 * our clock. */
void systest_check_recent(const char *t);
/* schedule with the given time text and flags (may be NULL), expect +OK. */
void systest_schedule_full(int fd, const char *id, const char *name, unsigned ttr, const char *ttl,
                           const char *time, const char *payload, const char *flags);
/* schedule at time_ms with SYSTEST_TTR and SYSTEST_TTL, expect +OK. */
void systest_schedule(int fd, const char *id, const char *name, int64_t time_ms,
                      const char *payload);
/* A job as `add` leaves it with SYSTEST_TTR and SYSTEST_TTL; payload may hold
 * any bytes (len). */
struct systest_job systest_job_bin(const char *id, const char *name, const void *payload,
                                   size_t len);
struct systest_job systest_job(const char *id, const char *name, const char *payload);
/* The same for `run`: ttl 0, max-attempts 1, max-fails 0. */
struct systest_job systest_job_run(const char *id, const char *name, const char *payload);
/* Expect one job block, byte for byte; created must be "now". */
void systest_expect_job_block(int fd, const struct systest_job *j);
/* inspect job j->id, expect exactly j. */
void systest_expect_inspect_job(int fd, const struct systest_job *j);
/* inspect jobs / scheduled-jobs: expect exactly these blocks. */
void systest_expect_inspect_list(int fd, const char *what, const char *name, const char *range,
                                 const struct systest_job *jobs, size_t n);
/* Read a job block without checking it; returns its id. */
const char *systest_skip_job_block(int fd);
/* Wait until `inspect queue name` finds the queue (e.g. a leaser from
 * another connection has parked on it). */
void systest_wait_queue(int fd, const char *name);
/* The block of one queue in `inspect queue(s)`. */
const char *systest_queue_block(const char *name, unsigned ready, unsigned scheduled);
/* Check counters of `inspect server`: pairs of key and unsigned long long
 * value (see U), ended by NULL. */
void systest_expect_stats(int fd, ...) __attribute__((sentinel));

/* ------------------------------------------------------------------------ */
/* Suites */

/* A test case: its name and its tests, NULL terminated. */
struct systest_group {
    const char *name;
    const TTest *tests[24];
};

/* A suite of one test case per group, each with a timeout of 30 s (scaled). */
Suite *systest_suite(const char *name, const struct systest_group *groups, size_t n);
/* Run the suite (with SIGPIPE ignored) and return main's exit status. */
int systest_main(Suite *s);

#endif /* WQ_SYSTEST_H */
