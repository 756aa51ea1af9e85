/* check_metrics.c - unit tests of the metrics' parts that need no socket:
 * daemon/stats.c (the exposition of a real core in both formats, with a
 * front-end's section, the queue cap, histogram buckets) and metrics.c's
 * content negotiation. */
#include "lib/wq.h"
#include "daemon/stats.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "lib/hist.h"
#include "http/metrics.h"
#include "workq/cmd_stats.h"
#include "unit.h"

#define T0 1800000000000ull /* a Unix ms */

START_TEST(test_negotiation)
{
    ck_assert(!metrics_wants_openmetrics(NULL));
    ck_assert(!metrics_wants_openmetrics(""));
    ck_assert(!metrics_wants_openmetrics("text/plain"));
    ck_assert(!metrics_wants_openmetrics("*/*"));
    ck_assert(metrics_wants_openmetrics("application/openmetrics-text"));
    ck_assert(metrics_wants_openmetrics("Application/OpenMetrics-Text; version=1.0.0"));
    ck_assert(metrics_wants_openmetrics(
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
        "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
    ck_assert(!metrics_wants_openmetrics("application/openmetrics-text;q=0.4, text/plain"));
    ck_assert(!metrics_wants_openmetrics("application/openmetrics-text;version=0.0.1"));
    ck_assert(!metrics_wants_openmetrics("application/openmetrics-text;q=0"));
    ck_assert(metrics_wants_openmetrics("text/plain;q=0.5 , application/openmetrics-text ;q=0.6"));
    /* a tie goes to OpenMetrics */
    ck_assert(metrics_wants_openmetrics("text/plain, application/openmetrics-text"));
}
END_TEST

START_TEST(test_hist_buckets)
{
    struct hist h;
    hist_init(&h, hist_job_bounds, hist_job_nbounds);
    hist_observe(&h, 0);
    hist_observe(&h, 1000000);               /* 1 ms: on the first bound, in its bucket */
    hist_observe(&h, 1000001);               /* just above: the next */
    hist_observe(&h, 7200ull * 1000000000u); /* 2 h: +Inf */
    ck_assert_uint_eq(h.counts[0], 2);
    ck_assert_uint_eq(h.counts[1], 1);
    ck_assert_uint_eq(h.counts[hist_job_nbounds], 1);
    ck_assert_uint_eq(h.count, 4);
    ck_assert_uint_eq(h.sum_ns, 2000001 + 7200ull * 1000000000u);
}
END_TEST

/* Add job n (payload "p") to queue name at now. */
static void
add(struct core *c, uint8_t n, const char *name, uint64_t now)
{
    struct job_spec s = {0};
    s.id[0] = 0xaa;
    s.id[15] = n;
    s.name = (struct wq_str){name, strlen(name)};
    s.ttr = 60000;
    s.ttl = 3600000;
    s.payload = "p";
    s.payload_len = 1;
    ck_assert_int_eq(core_add(c, &s, now), CORE_OK);
}

/* stats_section: the Workq front-end's commands, two of them. */
static void
render_commands(void *arg, struct stats_out *o)
{
    static const char *const names[] = {"add", "unknown"};
    cmd_stats_render(o, arg, names, 2);
}

static char *
render(const struct core *c, uint64_t max_queues, bool om, uint64_t now)
{
    struct cmd_stats counted = {0};
    counted.commands[0][STATS_OK] = 3;
    counted.commands[1][STATS_CLIENT_ERROR] = 1;
    const struct stats_section sections[] = {{render_commands, &counted}};
    const struct stats_source src = {
        .core = c,
        .sections = sections,
        .nsections = 1,
        .accepted = 5,
        .connections = 2,
        .max_queues = max_queues,
        .now_ms = now,
        .started_ms = T0,
        .version = "9.9",
        .allocator = "test",
    };
    struct stats_buf b = {0};
    stats_render(&src, om, &b);
    char *text = malloc(b.len + 1);
    memcpy(text, b.p, b.len);
    text[b.len] = '\0';
    stats_buf_clear(&b);
    return text;
}

static bool
has(const char *text, const char *part)
{
    return strstr(text, part) != NULL;
}

START_TEST(test_render_text)
{
    struct core *c = core_new(T0);
    add(c, 1, "b", T0);
    add(c, 2, "a", T0 + 500);
    add(c, 3, "a", T0 + 1000);
    char *t = render(c, 1000, false, T0 + 2500);
    ck_assert(has(t, "# HELP workq_build_info The server's version and allocator.\n"
                     "# TYPE workq_build_info gauge\n"
                     "workq_build_info{version=\"9.9\",allocator=\"test\"} 1\n"));
    ck_assert(has(t, "workq_start_time_seconds 1800000000.0\n"));
    ck_assert(has(t, "workq_queues 2\n"));
    /* sorted by name, every state */
    ck_assert(has(t, "# TYPE workq_jobs gauge\n"
                     "workq_jobs{queue=\"a\",state=\"ready\"} 2\n"
                     "workq_jobs{queue=\"a\",state=\"scheduled\"} 0\n"
                     "workq_jobs{queue=\"a\",state=\"leased\"} 0\n"
                     "workq_jobs{queue=\"a\",state=\"waiting\"} 0\n"
                     "workq_jobs{queue=\"a\",state=\"completed\"} 0\n"
                     "workq_jobs{queue=\"a\",state=\"failed\"} 0\n"
                     "workq_jobs{queue=\"b\",state=\"ready\"} 1\n"));
    ck_assert(has(t, "workq_queue_head_age_seconds{queue=\"a\"} 2.0\n"
                     "workq_queue_head_age_seconds{queue=\"b\"} 2.5\n"));
    ck_assert(has(t,
                  "# HELP workq_jobs_added_total Jobs created (add, schedule, run, broadcast "
                  "copies).\n# TYPE workq_jobs_added_total counter\nworkq_jobs_added_total 3\n"));
    ck_assert(has(t, "workq_commands_total{command=\"add\",outcome=\"ok\"} 3\n"
                     "workq_commands_total{command=\"add\",outcome=\"timeout\"} 0\n"));
    ck_assert(has(t, "workq_commands_total{command=\"unknown\",outcome=\"client_error\"} 1\n"));
    ck_assert(has(t, "workq_connections 2\nworkq_connections_accepted_total") ||
              has(t, "workq_connections 2\n# HELP workq_connections_accepted_total"));
    ck_assert(has(t, "workq_connections_accepted_total 5\n"));
    ck_assert(has(t, "workq_read_only 0\n"));
    ck_assert(has(t, "workq_lease_wait_seconds_bucket{le=\"0.001\"} 0\n"));
    ck_assert(has(t, "workq_lease_wait_seconds_bucket{le=\"1.0\"} 0\n"));
    ck_assert(has(t, "workq_lease_wait_seconds_bucket{le=\"+Inf\"} 0\n"
                     "workq_lease_wait_seconds_sum 0.0\nworkq_lease_wait_seconds_count 0\n"));
    ck_assert(!has(t, "# EOF"));
    ck_assert(!has(t, "# UNIT"));
    ck_assert(!has(t, "workq_faktory")); /* no Faktory listener */
    ck_assert(!has(t, "workq_cmdlog_")); /* no command log */
    ck_assert_int_eq(t[strlen(t) - 1], '\n');
    free(t);
    core_free(c);
}
END_TEST

START_TEST(test_render_openmetrics)
{
    struct core *c = core_new(T0);
    add(c, 1, "a", T0);
    char *t = render(c, 1000, true, T0);
    ck_assert(has(t, "# TYPE workq_build info\n# HELP workq_build The server's version and "
                     "allocator.\nworkq_build_info{version=\"9.9\",allocator=\"test\"} 1\n"));
    ck_assert(has(t, "# TYPE workq_jobs_added counter\n# HELP workq_jobs_added Jobs created (add, "
                     "schedule, run, broadcast copies).\nworkq_jobs_added_total 1\n"));
    ck_assert(has(t, "# TYPE workq_lease_wait_seconds histogram\n"
                     "# UNIT workq_lease_wait_seconds seconds\n"));
    ck_assert(has(t, "# TYPE workq_memory_jobs_bytes gauge\n"
                     "# UNIT workq_memory_jobs_bytes bytes\n"));
    ck_assert(!has(t, "_total counter"));
    size_t n = strlen(t);
    ck_assert_str_eq(t + n - 6, "# EOF\n");
    ck_assert(strstr(t, "# EOF") == t + n - 6);
    free(t);
    core_free(c);
}
END_TEST

START_TEST(test_queue_cap)
{
    struct core *c = core_new(T0);
    add(c, 1, "d", T0);
    add(c, 2, "c", T0 + 10);
    add(c, 3, "other", T0);
    add(c, 4, "b", T0);
    add(c, 5, "a", T0 + 20);
    add(c, 6, "a", T0);
    /* jobs for named workers count under their queue's name */
    add(c, 7, "b\x1fw1", T0); /* 0x1f, the separator, then "w1" */
    add(c, 8, "d\x1fw1,w2", T0);
    char *t = render(c, 2, false, T0 + 1000);
    ck_assert(has(t, "workq_queues 5\n"));
    ck_assert(has(t, "workq_jobs{queue=\"a\",state=\"ready\"} 2\n"));
    ck_assert(has(t, "workq_jobs{queue=\"b\",state=\"ready\"} 2\n"));
    ck_assert(has(t, "workq_jobs{queue=\"other\",state=\"ready\"} 4\n"));
    ck_assert(!has(t, "queue=\"c\""));
    ck_assert(!has(t, "queue=\"d\""));
    /* the oldest head among the summed queues */
    ck_assert(has(t, "workq_queue_head_age_seconds{queue=\"other\"} 1.0\n"));
    ck_assert(has(t, "workq_queue_head_age_seconds{queue=\"a\"} 0.98\n"));
    free(t);
    /* 0: every queue in other */
    t = render(c, 0, false, T0 + 1000);
    ck_assert(has(t, "workq_jobs{queue=\"other\",state=\"ready\"} 8\n"));
    ck_assert(!has(t, "queue=\"a\""));
    free(t);
    core_free(c);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"negotiation", test_negotiation}, {"hist", test_hist_buckets},
        {"render_text", test_render_text}, {"render_openmetrics", test_render_openmetrics},
        {"queue_cap", test_queue_cap},
    };
    return unit_run(unit_suite("metrics", cases, WQ_ARRAY_LEN(cases)), NULL);
}
