/* systest.h - helpers for system tests: start the real workq-server on a
 * free port, talk TCP, compare replies byte for byte.
 *
 * Environment:
 *   WQ_SERVER          path of the workq-server binary (set by make check)
 *   WQ_SERVER_WRAPPER  command words put before it, e.g. "valgrind -q ..."
 *   WQ_TEST_SLOW       a multiplier for every wait (e.g. 20 under valgrind)
 */
#ifndef WQ_SYSTEST_H
#define WQ_SYSTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct systest_server {
    pid_t pid;
    int   port;
    int   out_fd; /* the server's stdout */
};

/* Start the server on 127.0.0.1 port 0 with extra arguments (NULL
 * terminated list, may be empty) and wait until it listens. */
void systest_start(struct systest_server *s, ...);
/* SIGTERM it and check that it exits with status 0. */
void systest_stop(struct systest_server *s);

/* A new connection to the server. */
int  systest_connect(const struct systest_server *s);
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

#endif /* WQ_SYSTEST_H */
