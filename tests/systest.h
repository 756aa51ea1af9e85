/* systest.h - helpers for system tests: start the real workq-server on a
 * free port, talk TCP, compare replies byte for byte; and the text, job and
 * suite helpers that check_server.c, check_protocol.c and check_persist.c
 * share.
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

struct systest_server {
    pid_t pid;
    int   port;
    int   out_fd; /* the server's stdout */
};

/* Start the server on 127.0.0.1 port 0 with extra arguments (NULL
 * terminated list, may be empty) and wait until it listens. */
void systest_start(struct systest_server *s, ...);
/* Fork and exec the server (behind WQ_SERVER_WRAPPER) with exactly these
 * arguments (NULL terminated): its stdout to *out_fd, its stderr to err_fd
 * unless that is -1 (then it is inherited). */
pid_t systest_spawn(const char *const *args, int *out_fd, int err_fd);
/* Check the server's first line "workq-server listening on 127.0.0.1:PORT"
 * and take PORT into s->port. */
void systest_parse_port(struct systest_server *s, const char *line);
/* SIGTERM it and check that it exits with status 0. */
void systest_stop(struct systest_server *s);

/* A new connection to the server. */
int  systest_connect(const struct systest_server *s);
/* A listener on 127.0.0.1 at a free port, for a test to serve by hand. */
int  systest_listen(int *port);
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
/* Sleep ms milliseconds, not scaled. */
void systest_sleep_ms(int ms);
/* The WQ_TEST_SLOW multiplier (1 by default). */
int  systest_slow(void);
/* True when WQ_TEST_SLOW is 1: checks that something has NOT happened yet
 * run only then. */
bool systest_exact_timing(void);
/* Sleep long enough for a server-side deadline of ms to have passed
 * (ms + 300, scaled). */
void systest_sleep_past(int ms);
/* Wall clock, Unix milliseconds. */
int64_t systest_now_ms(void);
/* Read exactly n bytes into buf (NUL terminated), waiting up to a few
 * seconds for each piece. */
void systest_read_n(int fd, char *buf, size_t n);

/* ------------------------------------------------------------------------ */
/* Text helpers: short names, for test code only. */

/* Replies. */
#define OK        "+OK\r\n"
#define NF        "-NOT-FOUND\r\n"
#define TO        "-TIMEOUT\r\n"
#define ERR(text) "-CLIENT-ERROR " text "\r\n"

/* printf into one of a ring of buffers: up to 16 results live at once. */
const char *f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growing byte string, NUL terminated; start from {0}, free(p) at the end. */
struct sb {
    char  *p;
    size_t n, cap;
};

/* Append len bytes to s. */
void sb_addn(struct sb *s, const void *data, size_t len);
/* Append text to s. */
void sb_add(struct sb *s, const char *text);

/* Distinct ids: version 4 and version 1 (the protocol text's examples). */
const char *id4(unsigned n);
/* The version-1 id number n (see id4). */
const char *id1(unsigned n);

/* ------------------------------------------------------------------------ */
/* One server at a time, and jobs with the default TTR/TTL (check_server.c,
 * check_protocol.c). */

#define SYSTEST_TTR 60000u   /* long enough never to expire during a test */
#define SYSTEST_TTL "600000"

/* The server of systest_start_srv/systest_stop_srv/systest_conn. */
extern struct systest_server systest_srv;

/* systest_start(&systest_srv) without extra arguments. */
void systest_start_srv(void);
/* systest_stop(&systest_srv). */
void systest_stop_srv(void);
/* A new connection to systest_srv. */
int  systest_conn(void);

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
/* A name of n copies of c (two results live at once). */
const char *systest_name_of(size_t n, char c);

/* ------------------------------------------------------------------------ */
/* Suites */

/* A test case: its name and its tests, NULL terminated. */
struct systest_group {
    const char  *name;
    const TTest *tests[24];
};

/* A suite of one test case per group, each with a timeout of 30 s (scaled). */
Suite *systest_suite(const char *name, const struct systest_group *groups, size_t n);
/* Run the suite (with SIGPIPE ignored) and return main's exit status. */
int systest_main(Suite *s);

#endif /* WQ_SYSTEST_H */
