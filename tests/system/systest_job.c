/* systest_job.c - jobs as the system tests see them: times on the wire,
 * schedule, the job blocks of `inspect job(s)`, queues and counters. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sleep until the wall clock reaches ms. */
void
systest_sleep_until(int64_t ms)
{
    int64_t d = ms - systest_now_ms();
    if (d > 0)
        systest_sleep_ms((int)d);
}

/* A time `ms` milliseconds ahead, scaled. */
int64_t
systest_ahead(int ms)
{
    return systest_now_ms() + (int64_t)ms * systest_slow();
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" (frac) or "YYYY-MM-DDTHH:MM:SSZ" (seconds,
 * rounded down, as inspect shows it). */
static const char *
fmt_time(int64_t ms, bool frac)
{
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    time_t t = (time_t)secs;
    struct tm tm;
    ck_assert_ptr_nonnull(gmtime_r(&t, &tm));
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac)
        return f("%s.%03dZ", day, (int)(ms - secs * 1000));
    return f("%sZ", day);
}

const char *
systest_time_ms(int64_t ms)
{
    return fmt_time(ms, true);
}

const char *
systest_time_s(int64_t ms)
{
    return fmt_time(ms, false);
}

/* Check "YYYY-MM-DDTHH:MM:SSZ" and return it as Unix seconds. */
static int64_t
parse_time_s(const char *t)
{
    ck_assert_msg(strlen(t) == 20, "bad time \"%s\"", t);
    for (int i = 0; i < 20; i++) {
        char want = i == 4 || i == 7     ? '-'
                    : i == 10            ? 'T'
                    : i == 13 || i == 16 ? ':'
                    : i == 19            ? 'Z'
                                         : '0';
        if (want == '0')
            ck_assert_msg(t[i] >= '0' && t[i] <= '9', "bad time \"%s\"", t);
        else
            ck_assert_msg(t[i] == want, "bad time \"%s\"", t);
    }
    struct tm tm = {0};
    tm.tm_year = atoi(t) - 1900;
    tm.tm_mon = atoi(t + 5) - 1;
    tm.tm_mday = atoi(t + 8);
    tm.tm_hour = atoi(t + 11);
    tm.tm_min = atoi(t + 14);
    tm.tm_sec = atoi(t + 17);
    return (int64_t)timegm(&tm);
}

/* A server "now" (created, started): UTC, within seconds of our clock. */
void
systest_check_recent(const char *t)
{
    int64_t s = parse_time_s(t);
    int64_t now = systest_now_ms() / 1000;
    ck_assert_msg(s <= now + 2 && s >= now - 10 - 10 * systest_slow(),
                  "time \"%s\" is not now (%s)", t, systest_time_s(now * 1000));
}

/* schedule with the given time text and flags (may be NULL), expect +OK. */
void
systest_schedule_full(int fd, const char *id, const char *name, unsigned ttr, const char *ttl,
                      const char *time, const char *payload, const char *flags)
{
    systest_roundtrip(fd,
                      f("schedule %s %s %u %s %s %zu%s%s\r\n%s\r\n", id, name, ttr, ttl, time,
                        strlen(payload), flags != NULL ? " " : "", flags != NULL ? flags : "",
                        payload),
                      OK);
}

void
systest_schedule(int fd, const char *id, const char *name, int64_t time_ms, const char *payload)
{
    systest_schedule_full(fd, id, name, SYSTEST_TTR, SYSTEST_TTL, systest_time_ms(time_ms), payload,
                          NULL);
}

/* A job as `add` leaves it with the defaults of these tests; payload may
 * hold any bytes (len). */
struct systest_job
systest_job_bin(const char *id, const char *name, const void *payload, size_t len)
{
    struct systest_job j;
    memset(&j, 0, sizeof j);
    SET(j.id, id);
    SET(j.name, name);
    SET(j.ttl, SYSTEST_TTL);
    ck_assert_uint_lt(len, sizeof j.payload);
    memcpy(j.payload, payload, len);
    j.plen = len;
    j.ttr = SYSTEST_TTR;
    return j;
}

struct systest_job
systest_job(const char *id, const char *name, const char *payload)
{
    return systest_job_bin(id, name, payload, strlen(payload));
}

/* The same for `run`: ttl 0, max-attempts 1, max-fails 0. */
struct systest_job
systest_job_run(const char *id, const char *name, const char *payload)
{
    struct systest_job j = systest_job(id, name, payload);
    SET(j.ttl, "0");
    j.max_attempts = 1;
    return j;
}

/* Expect one job block, byte for byte; created must be "now". */
void
systest_expect_job_block(int fd, const struct systest_job *j)
{
    struct sb e = {0};
    int k =
        (j->time[0] != '\0' ? 13 : 12) + (j->backoff[0] != '\0') + j->dead + j->retry_at + j->died;
    sb_add(&e, f("%s %d\r\nname %s\r\nttr %u\r\nttl %s\r\npayload-size %zu\r\npayload ", j->id, k,
                 j->name, j->ttr, j->ttl, j->plen));
    sb_addn(&e, j->payload, j->plen);
    sb_add(&e, f("\r\nmax-attempts %u\r\nattempts %u\r\nmax-fails %u\r\nfails %u\r\npriority "
                 "%d\r\nstate %u\r\ncreated ",
                 j->max_attempts, j->attempts, j->max_fails, j->fails, j->priority, j->state));
    systest_expect_bytes(fd, e.p, e.n);
    free(e.p);
    char created[21];
    systest_read_n(fd, created, 20);
    systest_check_recent(created);
    systest_expect(fd, "\r\n");
    if (j->time[0] != '\0')
        systest_expect(fd, f("time %s\r\n", j->time));
    if (j->backoff[0] != '\0')
        systest_expect(fd, f("backoff %s\r\n", j->backoff));
    if (j->dead)
        systest_expect(fd, "dead 1\r\n");
    char t[21];
    if (j->retry_at) { /* at most a day ahead: the first retries' backoff */
        systest_expect(fd, "retry-at ");
        systest_read_n(fd, t, 20);
        int64_t at = parse_time_s(t), now = systest_now_ms() / 1000;
        ck_assert_msg(at >= now - 10 - 10 * systest_slow() && at <= now + 86400,
                      "retry-at \"%s\" is not soon", t);
        systest_expect(fd, "\r\n");
    }
    if (j->died) {
        systest_expect(fd, "died ");
        systest_read_n(fd, t, 20);
        systest_check_recent(t);
        systest_expect(fd, "\r\n");
    }
}

void
systest_expect_inspect_job(int fd, const struct systest_job *j)
{
    systest_roundtrip(fd, f("inspect job %s\r\n", j->id), "+OK 1\r\n");
    systest_expect_job_block(fd, j);
}

/* inspect jobs / scheduled-jobs: expect exactly these blocks. */
void
systest_expect_inspect_list(int fd, const char *what, const char *name, const char *range,
                            const struct systest_job *jobs, size_t n)
{
    systest_roundtrip(fd, f("inspect %s %s %s\r\n", what, name, range), f("+OK %zu\r\n", n));
    for (size_t i = 0; i < n; i++)
        systest_expect_job_block(fd, &jobs[i]);
}

/* Read a job block without checking it; returns its id. */
const char *
systest_skip_job_block(int fd)
{
    static char id[64];
    const char *head = systest_read_line(fd);
    int k = 0;
    ck_assert_int_eq(sscanf(head, "%63s %d", id, &k), 2);
    ck_assert_msg(k >= 12 && k <= 17, "job block of %d keys", k);
    for (int i = 0; i < 3; i++)
        systest_read_line(fd); /* name ttr ttl */
    size_t plen = 0;
    ck_assert_int_eq(sscanf(systest_read_line(fd), "payload-size %zu", &plen), 1);
    char *p = malloc(plen + 11);
    systest_read_n(fd, p, plen + 10);
    ck_assert_msg(memcmp(p, "payload ", 8) == 0 && memcmp(p + 8 + plen, "\r\n", 2) == 0,
                  "bad payload line");
    free(p);
    for (int i = 5; i < k; i++)
        systest_read_line(fd);
    return id;
}

/* Wait until `inspect queue name` finds the queue (e.g. a leaser from
 * another connection has parked on it). */
void
systest_wait_queue(int fd, const char *name)
{
    for (int tries = 0;; tries++) {
        systest_sends(fd, f("inspect queue %s\r\n", name));
        const char *l = systest_read_line(fd);
        if (strcmp(l, "+OK 1") == 0) {
            for (int i = 0; i < 3; i++)
                systest_read_line(fd);
            return;
        }
        ck_assert_str_eq(l, "-NOT-FOUND");
        ck_assert_msg(tries < 500 * systest_slow(), "queue %s never appeared", name);
        systest_sleep_ms(10);
    }
}

const char *
systest_queue_block(const char *name, unsigned ready, unsigned scheduled)
{
    return f("%s 2\r\nready-len %u\r\nscheduled-len %u\r\n", name, ready, scheduled);
}

/* Check counters: pairs of key and value, ended by NULL. */
void
systest_expect_stats(int fd, ...)
{
    va_list ap;
    va_start(ap, fd);
    for (const char *key; (key = va_arg(ap, const char *)) != NULL;) {
        unsigned long long want = va_arg(ap, unsigned long long);
        unsigned long long got = systest_server_stat(fd, key);
        ck_assert_msg(got == want, "%s is %llu, want %llu", key, got, want);
    }
    va_end(ap);
}
