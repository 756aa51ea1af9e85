/* wb_report.c - what workq-bench shows: the progress line on a terminal
 * during the run, and the report at its end as text, one line (-q), CSV or
 * JSON. */
#include "wb.h"
#include "wb_proto.h" /* the protocol's name and request types */

#include <inttypes.h>
#include <stdio.h>

/* The progress line on a terminal: the rate over the last interval, not
 * the average, so stalls show. */
void
wb_report_progress(struct bench *b)
{
    const char *label = wb_workload_names[b->opt.workload];
    uint64_t now = wb_now_ns(), done = wb_jobs_done(b);
    uint32_t of = b->opt.jobs;
    if (b->phase == PH_BACKLOG) {
        label = "backlog";
        done = b->backlog_created;
        of = b->nbacklog;
    } else if (b->phase == PH_PREFILL) {
        label = "prefill";
        done = b->created;
    }
    double dt = (double)(now - b->last_ns) / 1e9;
    double rate = dt > 0 ? (double)(done - b->last_done) / dt : 0;
    b->last_done = done;
    b->last_ns = now;
    char line[160];
    snprintf(line, sizeof line, "%s: %" PRIu64 "/%" PRIu32 " jobs, %.0f jobs/s, %" PRIu64 " errors",
             label, done, of, rate, b->errors);
    fprintf(stderr, "\r%-79s", line);
}

/* The most request types a report shows: producing, lease, complete and
 * the protocol's others (wb_proto.h). */
#define REPORT_OPS 8

/* The request types a workload measures, in report order (the order they
 * are sent for a job): at most REPORT_OPS. */
static int
bench_report_ops(const struct bench *b, enum wb_op *ops)
{
    const struct wb_proto *p = b->proto;
    int n = 0;
    if (b->opt.workload != WL_LEASE_COMPLETE) {
        ops[n++] = p->produce_op[b->opt.workload];
        for (unsigned i = 0; i < p->nproduce_more; i++)
            ops[n++] = p->produce_more[i];
    }
    if (b->opt.workload != WL_ADD) {
        ops[n++] = p->lease_op;
        for (unsigned i = 0; i < p->nwork_more; i++)
            ops[n++] = p->work_more[i];
        ops[n++] = p->complete_op;
    }
    return n;
}

static const unsigned report_permyriads[] = {5000, 9000, 9900, 9990};
static const char *const report_pct_names[] = {"p50", "p90", "p99", "p99.9"};

/* Length of the measured phase: 0 if it never started (a --timeout or
 * Ctrl-C during connecting, the backlog or the prefill). */
static double
bench_seconds(const struct bench *b)
{
    if (b->t0_ns == 0 || b->t_end_ns <= b->t0_ns)
        return 0;
    return (double)(b->t_end_ns - b->t0_ns) / 1e9;
}

/* One row of the latency table, in milliseconds. */
static void
report_hist_line(const char *name, const struct wb_hist *h)
{
    printf("  %-10s %10" PRIu64, name, h->count);
    for (unsigned i = 0; i < BENCH_ARRAY_LEN(report_permyriads); i++)
        printf(" %9.3f", (double)wb_hist_percentile(h, report_permyriads[i]) / 1000.0);
    printf(" %9.3f\n", (double)h->max / 1000.0);
}

/* The default report, for people. */
static void
report_human(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    uint64_t done = wb_jobs_done(b);
    enum wb_op ops[REPORT_OPS];
    int nops = bench_report_ops(b, ops);
    printf("== %s, %s at %s ==\n", wb_workload_names[b->opt.workload], b->proto->name, b->addr);
    printf("connections %" PRIu32 " (%u producing), pipeline %" PRIu32 ", payload %" PRIu32
           " bytes, names %" PRIu32 "%s\n",
           b->opt.conns, b->nprod, b->opt.pipeline, b->opt.payload, b->opt.names,
           b->opt.priorities ? ", random priorities" : "");
    if (b->opt.backlog > 0)
        printf("%-12s%" PRIu32 " jobs per name at the lowest priority, %" PRIu64 " of %" PRIu32
               " added (not measured)\n",
               "backlog", b->opt.backlog, b->backlog_created, b->nbacklog);
    printf("%-12s%" PRIu64 " of %" PRIu32 " jobs in %.3f s\n",
           b->opt.workload == WL_ADD ? "added" : "completed", done, b->opt.jobs, secs);
    printf("%-12s%.0f jobs/s, %.0f requests/s\n", "throughput", secs > 0 ? (double)done / secs : 0,
           secs > 0 ? (double)b->requests / secs : 0);
    printf("%-12s%" PRIu64 "%s%s\n", "errors", b->errors, b->timed_out ? " (timed out)" : "",
           b->interrupted ? " (interrupted)" : "");
    if (incomplete > 0)
        printf("%-12s%" PRIu64 " jobs were accepted but not completed\n", "incomplete", incomplete);
    if (b->opt.workload != WL_ADD)
        printf("%-12s%" PRIu64 "\n", "empty waits", b->lease_timeouts);
    if (b->opt.keep)
        printf("%-12sskipped (--keep)\n", "clean-up");
    else
        printf("%-12s%" PRIu64 " jobs removed in %.3f s%s\n", "clean-up", b->cleaned,
               (double)b->clean_ns / 1e9, b->clean_done ? "" : " (not finished)");
    printf("latency (ms)      count       p50       p90       p99     p99.9       max\n");
    report_hist_line("all", &b->all);
    for (int i = 0; i < nops; i++)
        report_hist_line(wb_op_names[ops[i]], &b->hist[ops[i]]);
}

/* -q: one line. */
static void
report_quiet(const struct bench *b)
{
    double secs = bench_seconds(b);
    printf("%s: %.0f jobs/s, p50 %.3f ms, p99 %.3f ms, errors %" PRIu64 "\n",
           wb_workload_names[b->opt.workload], secs > 0 ? (double)wb_jobs_done(b) / secs : 0,
           (double)wb_hist_percentile(&b->all, 5000) / 1000.0,
           (double)wb_hist_percentile(&b->all, 9900) / 1000.0, b->errors);
}

/* --csv: a header and one line; latency columns in microseconds for all
 * measured requests, then per request type of the workload. */
static void
report_csv(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    enum wb_op ops[REPORT_OPS + 1] = {OP_COUNT};
    int nops = bench_report_ops(b, ops + 1) + 1;
    printf("workload,protocol,address,connections,pipeline,payload,names,priorities,backlog,"
           "backlog_added,jobs,done,errors,incomplete,timed_out,seconds,jobs_per_sec,"
           "requests_per_sec");
    for (int i = 0; i < nops; i++) {
        const char *p = i == 0 ? "all" : wb_op_names[ops[i]];
        printf(",%s_count,%s_p50_us,%s_p90_us,%s_p99_us,%s_p999_us,%s_max_us", p, p, p, p, p, p);
    }
    printf(",cleaned");
    printf("\n%s,%s,%s,%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%d,%" PRIu32 ",%" PRIu64
           ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d,%.6f,%.1f,%.1f",
           wb_workload_names[b->opt.workload], b->proto->name, b->addr, b->opt.conns,
           b->opt.pipeline, b->opt.payload, b->opt.names, b->opt.priorities, b->opt.backlog,
           b->backlog_created, b->opt.jobs, wb_jobs_done(b), b->errors, incomplete,
           b->timed_out || b->interrupted, secs, secs > 0 ? (double)wb_jobs_done(b) / secs : 0,
           secs > 0 ? (double)b->requests / secs : 0);
    for (int i = 0; i < nops; i++) {
        const struct wb_hist *h = i == 0 ? &b->all : &b->hist[ops[i]];
        printf(",%" PRIu64, h->count);
        for (unsigned k = 0; k < BENCH_ARRAY_LEN(report_permyriads); k++)
            printf(",%" PRIu64, wb_hist_percentile(h, report_permyriads[k]));
        printf(",%" PRIu64, h->max);
    }
    printf(",%" PRIu64 "\n", b->cleaned);
}

/* One latency object of the JSON report, in microseconds. */
static void
report_json_hist(const char *name, const struct wb_hist *h, bool last)
{
    printf("\"%s\":{\"count\":%" PRIu64 ",\"mean\":%.1f", name, h->count,
           h->count > 0 ? (double)h->sum / (double)h->count : 0.0);
    for (unsigned k = 0; k < BENCH_ARRAY_LEN(report_permyriads); k++)
        printf(",\"%s\":%" PRIu64, report_pct_names[k],
               wb_hist_percentile(h, report_permyriads[k]));
    printf(",\"max\":%" PRIu64 "}%s", h->max, last ? "" : ",");
}

/* --json: one object on one line. */
static void
report_json(const struct bench *b, uint64_t incomplete)
{
    double secs = bench_seconds(b);
    enum wb_op ops[REPORT_OPS];
    int nops = bench_report_ops(b, ops);
    /* The address is host:port from the command line, with nothing to escape
     * in practice; names are ours. */
    printf("{\"workload\":\"%s\",\"protocol\":\"%s\",\"address\":\"%s\",\"connections\":%" PRIu32
           ",\"pipeline\":%" PRIu32 ",\"payload\":%" PRIu32 ",\"names\":%" PRIu32
           ",\"priorities\":%s,\"backlog\":%" PRIu32 ",\"backlog_added\":%" PRIu64
           ",\"jobs\":%" PRIu32 ",\"done\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"incomplete\":%" PRIu64
           ",\"timed_out\":%s,\"interrupted\":%s,\"empty_waits\":%" PRIu64
           ",\"seconds\":%.6f,\"jobs_per_sec\":%.1f,\"requests_per_sec\":%.1f,\"cleaned\":%" PRIu64
           ",\"clean_seconds\":%.6f,\"latency_us\":{",
           wb_workload_names[b->opt.workload], b->proto->name, b->addr, b->opt.conns,
           b->opt.pipeline, b->opt.payload, b->opt.names, b->opt.priorities ? "true" : "false",
           b->opt.backlog, b->backlog_created, b->opt.jobs, wb_jobs_done(b), b->errors, incomplete,
           b->timed_out ? "true" : "false", b->interrupted ? "true" : "false", b->lease_timeouts,
           secs, secs > 0 ? (double)wb_jobs_done(b) / secs : 0,
           secs > 0 ? (double)b->requests / secs : 0, b->cleaned, (double)b->clean_ns / 1e9);
    report_json_hist("all", &b->all, nops == 0);
    for (int i = 0; i < nops; i++)
        report_json_hist(wb_op_names[ops[i]], &b->hist[ops[i]], i == nops - 1);
    printf("}}\n");
}

/* The report on stdout, in the format the options ask for; incomplete is
 * the count of accepted jobs that were never completed. */
void
wb_report_print(const struct bench *b, uint64_t incomplete)
{
    if (b->opt.csv)
        report_csv(b, incomplete);
    else if (b->opt.json)
        report_json(b, incomplete);
    else if (b->opt.quiet)
        report_quiet(b);
    else
        report_human(b, incomplete);
}
