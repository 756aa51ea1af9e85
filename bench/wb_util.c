/* wb_util.c - what every file of workq-bench uses, on its lowest floor (it
 * calls no other file): allocation, the clock, the run's random numbers,
 * counting errors, stopping the event loop, schedule times, and the names
 * of workloads and request types. */
#include "wb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

const char *const wb_workload_names[] = {"add", "lease-complete", "cycle", "run", "schedule"};
_Static_assert(BENCH_ARRAY_LEN(wb_workload_names) == WL_COUNT, "wb_workload_names out of sync");

/* Request types by name, for errors and reports. */
const char *const wb_op_names[] = {
    "add",     "schedule", "run",      "lease", "complete", "put",   "reserve", "delete",
    "use",     "watch",    "push",     "fetch", "ack",      "hset",  "lpush",   "blpop",
    "hgetall", "started",  "finished", "reply", "hi",       "hello", "auth",    "clean-up"};
_Static_assert(BENCH_ARRAY_LEN(wb_op_names) == OP_COUNT, "wb_op_names out of sync");

/* calloc that exits on failure: every size here is ours, none a server's. */
void *
wb_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL) {
        fprintf(stderr, "workq-bench: out of memory\n");
        exit(1);
    }
    return p;
}

/* Monotonic nanoseconds: send and arrival times of requests. */
uint64_t
wb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: priorities and schedule offsets need no better. */
uint64_t
wb_rng_next(struct bench *b)
{
    uint64_t z = (b->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Count an error; print the first few, so a broken server does not drown
 * the terminal. */
void
wb_error(struct bench *b, const char *fmt, ...)
{
    b->errors++;
    if (b->errors > BENCH_ERRORS_SHOWN)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->progress)
        fprintf(stderr, "\r%-79s\r", "");
    fprintf(stderr, "workq-bench: error: %s\n", msg);
    if (b->errors == BENCH_ERRORS_SHOWN)
        fprintf(stderr, "workq-bench: (further errors are counted, not shown)\n");
}

/* End the phase: stop the clock and leave the event loop.  (The clean-up
 * keeps its own clock.) */
void
wb_stop(struct bench *b)
{
    if (b->phase != PH_CLEAN) {
        b->t_end_ns = wb_now_ns();
        b->phase = PH_DONE;
    }
    event_base_loopbreak(b->base);
}

/* The run cannot go on: stop, and exit with status (the first one given)
 * without a report. */
void
wb_fatal(struct bench *b, int status)
{
    if (b->fatal == 0)
        b->fatal = status;
    wb_stop(b);
}

/* Format a schedule time offset_ms from now, with milliseconds (UTC, RFC
 * 3339: workq's schedule and Faktory's `at` both read it). */
void
wb_format_time(char *out, size_t cap, int64_t offset_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + offset_ms;
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* A random schedule offset: BENCH_SCHED_PAST_MS ago to BENCH_SCHED_AHEAD_MS
 * ahead. */
int64_t
wb_sched_offset_ms(struct bench *b)
{
    return (int64_t)(wb_rng_next(b) % (BENCH_SCHED_PAST_MS + BENCH_SCHED_AHEAD_MS + 1)) -
           BENCH_SCHED_PAST_MS;
}
