/* wb_wq.c - workq-bench's workq protocol client: formats auth, add,
 * schedule, run, lease and complete, checks every reply completely against
 * the request and the job it names, and removes the run's jobs in the
 * clean-up.  Exports only its table, wb_proto_workq; calls wb_conn.c,
 * wb_jobs.c, wb_frame.c and wb_util.c. */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Consumers without a ticket lease from every name at once, with one line
 * made here; they wait as long as a ticketed lease. */
static void
wq_init(struct bench *b)
{
    char tail[32];
    snprintf(tail, sizeof tail, " %d\r\n", BENCH_LEASE_WAIT_MS);
    wb_jobs_lease_line(b, "lease", tail);
}

/* With a password, every connection sends auth first. */
static unsigned
wq_setup(struct wb_conn *c)
{
    const char *pw = c->b->opt.password;
    if (pw == NULL)
        return 0;
    wb_conn_send(c, "auth ", 5);
    wb_conn_send(c, pw, strlen(pw));
    wb_conn_send(c, "\r\n", 2);
    wb_conn_push(c, OP_AUTH, BENCH_JOB_NONE);
    return 1;
}

/* workq's framing: a lease or run reply with a job has a header line and
 * a data block. */
static int
wq_frame(struct evbuffer *in, enum wb_op op, struct wb_frame *f, const char **why)
{
    return wb_frame_find(in, WB_PROTO_WORKQ, op, f, why);
}

/* A reply that says the run cannot go on, whatever was asked: the server
 * wants a password that was not given.  Says so and stops (exit 77). */
static bool
wq_refused(struct wb_conn *c, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (!wb_frame_is(f, "-CLIENT-ERROR Authentication required"))
        return false;
    if (b->fatal == 0) {
        if (b->progress)
            fprintf(stderr, "\r%-79s\r", "");
        fprintf(stderr,
                "workq-bench: %s wants a password (-CLIENT-ERROR Authentication required)\n"
                "workq-bench: hint: give --password-file FILE, or set WORKQ_PASSWORD\n",
                b->addr);
    }
    wb_fatal(b, BENCH_EXIT_PASSWORD);
    return true;
}

/* auth: +OK, else (a wrong password) the run cannot go on. */
static void
wq_reply_auth(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (!wb_frame_is(f, "+OK"))
        wb_conn_setup_fail(c, r, f, "auth refused", BENCH_EXIT_PASSWORD);
}

/* workq: add, schedule or run job ji. */
static void
wq_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    const char *name = b->names[j->name];
    char prio[32] = "", when[80];
    if (b->opt.priorities || wb_jobs_is_backlog(b, j))
        snprintf(prio, sizeof prio, " -priority=%" PRId32, j->priority);
    /* The backlog and the prefill of lease-complete always add. */
    enum wb_op op = b->phase != PH_MEASURE ? OP_ADD : wb_proto_workq.produce_op[b->opt.workload];
    uint64_t ttl = wb_jobs_is_backlog(b, j) ? BENCH_BACKLOG_TTL_MS : b->opt.ttl_ms;
    int n;
    if (op == OP_SCHEDULE) {
        wb_format_time(when, sizeof when, wb_sched_offset_ms(b));
        n = snprintf(b->scratch, 512, "schedule %s %s %" PRIu32 " %" PRIu64 " %s %" PRIu32 "%s\r\n",
                     id, name, b->opt.ttr_ms, ttl, when, b->opt.payload, prio);
    } else if (op == OP_RUN) {
        n = snprintf(b->scratch, 512, "run %s %s %" PRIu32 " %d %" PRIu32 "%s\r\n", id, name,
                     b->opt.ttr_ms, BENCH_RUN_WAIT_MS, b->opt.payload, prio);
    } else {
        n = snprintf(b->scratch, 512, "add %s %s %" PRIu32 " %" PRIu64 " %" PRIu32 "%s\r\n", id,
                     name, b->opt.ttr_ms, ttl, b->opt.payload, prio);
    }
    wb_conn_write_block(c, n, id);
    wb_conn_push(c, op, ji);
}

/* Ask for a job: with a ticket (a job index, else BENCH_JOB_NONE) from that
 * job's name alone, which the request keeps so that the reply can be held
 * to it; without, the precomputed lease line over every name.  Both wait. */
static void
wq_lease(struct wb_conn *c, uint32_t ticket)
{
    struct bench *b = c->b;
    if (ticket != BENCH_JOB_NONE) {
        uint32_t name = b->jobs[ticket].name;
        char line[64];
        int n = snprintf(line, sizeof line, "lease %s %d\r\n", b->names[name], BENCH_LEASE_WAIT_MS);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_LEASE, name);
    } else {
        wb_conn_send(c, b->lease_line, b->lease_len);
        wb_conn_push(c, OP_LEASE, BENCH_JOB_NONE);
    }
}

/* workq: complete job j with its id's text as the result. */
static void
wq_complete(struct wb_conn *c, struct wb_job *j)
{
    char id[BENCH_ID_LEN + 1], line[128];
    uuid_unparse_lower(j->id, id);
    int n = snprintf(line, sizeof line, "complete %s %d\r\n%s\r\n", id, BENCH_ID_LEN, id);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_COMPLETE, (uint32_t)(j - c->b->jobs));
}

/* add, schedule (and backlog and prefill adds): +OK */
static void
wq_reply_created(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    if (wb_frame_is(f, "+OK")) {
        wb_jobs_created(b, r->job);
        return;
    }
    wb_error_reply(c, r, f, "unexpected reply");
    wb_jobs_lost(b, j);
}

/* Check a workq lease reply completely; the job, or NULL after an error. */
static struct wb_job *
wq_lease_check(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_tok t[5];
    uint64_t ttr, size;
    const char *what = NULL;
    struct wb_job *j = NULL;
    char id[BENCH_ID_LEN + 1];
    if (wb_tokenize(f->line2, f->line2_len, t, 5) != 4 || wb_tok_u64(t[2], &ttr) < 0 ||
        wb_tok_u64(t[3], &size) < 0)
        what = "malformed lease header";
    else if ((j = wb_jobs_find(b, t[0])) == NULL)
        what = "unknown job id";
    else if (wb_jobs_is_backlog(b, j))
        what = "backlog job leased before the measured jobs";
    else if (!wb_tok_is(t[1], b->names[j->name]))
        what = "wrong queue name";
    else if (r->job != BENCH_JOB_NONE && j->name != r->job)
        what = "job from a queue not asked for";
    else if (ttr != b->opt.ttr_ms)
        what = "wrong ttr";
    else if (size != b->opt.payload)
        what = "wrong payload size";
    else if (uuid_unparse_lower(j->id, id), !wb_payload_matches(f->data, f->data_len, id))
        what = "wrong payload";
    else if (!(j->flags & WB_JOB_SENT))
        what = "job leased before it was sent";
    else if (j->flags & WB_JOB_LEASED)
        what = "job leased twice";
    if (what == NULL)
        return j;
    wb_error_reply(c, r, f, what);
    return NULL;
}

/* lease: a job, checked and completed at once on the same connection, or
 * -TIMEOUT after the wait. */
static void
wq_reply_lease(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (f->data == NULL) {
        if (wb_frame_is(f, "-TIMEOUT"))
            wb_jobs_lease_empty(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    struct wb_job *j = wq_lease_check(c, r, f);
    if (j == NULL)
        return;
    j->flags |= WB_JOB_LEASED;
    b->leased++;
    wq_complete(c, j);
}

/* run: the result a worker stored, which must be the job's id. */
static void
wq_reply_run(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    struct wb_tok t[4];
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    if (f->data == NULL) {
        wb_error_reply(c, r, f, "no result");
        wb_jobs_lost(b, j);
        return;
    }
    if (wb_tokenize(f->line2, f->line2_len, t, 4) != 3 || !wb_tok_is(t[0], id) ||
        !wb_tok_is(t[1], "1") || f->data_len != BENCH_ID_LEN ||
        memcmp(f->data, id, BENCH_ID_LEN) != 0) {
        wb_error_reply(c, r, f, "wrong result");
        return;
    }
    j->flags |= WB_JOB_DONE;
    b->runs_ok++;
}

/* May job j be on the server, for the clean-up to delete?  Every job whose
 * add, schedule or run was sent, the backlog too (a completed job stays
 * until its TTL otherwise), except run jobs, which the server removes
 * after their reply or with their client. */
static bool
wq_clean_left(const struct bench *b, const struct wb_job *j)
{
    if (!(j->flags & WB_JOB_SENT))
        return false;
    return b->opt.workload != WL_RUN || wb_jobs_is_backlog(b, j);
}

/* Is any job of the run left to delete? */
static bool
wq_clean_prepare(struct bench *b)
{
    for (uint32_t ji = 0; ji < b->opt.jobs + b->nbacklog; ji++)
        if (wq_clean_left(b, &b->jobs[ji]))
            return true;
    return false;
}

/* delete the next job that may be left. */
static bool
wq_clean_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    while (b->clean_next < (size_t)b->opt.jobs + b->nbacklog) {
        uint32_t ji = (uint32_t)b->clean_next++;
        if (!wq_clean_left(b, &b->jobs[ji]))
            continue;
        char line[96], id[BENCH_ID_LEN + 1];
        uuid_unparse_lower(b->jobs[ji].id, id);
        int n = snprintf(line, sizeof line, "delete %s\r\n", id);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_CLEAN, ji);
        return true;
    }
    return false;
}

/* The clean-up's delete: +OK, or -NOT-FOUND (the job never was, or is
 * gone). */
static void
wq_clean_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (wb_frame_is(f, "+OK"))
        c->b->cleaned++;
    else if (!wb_frame_is(f, "-NOT-FOUND"))
        wb_error_reply(c, r, f, "unexpected reply in the clean-up");
}

/* A reply, by the type of its request (a workq connection sends no
 * other). */
static void
wq_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    switch (r->op) {
    case OP_ADD:
    case OP_SCHEDULE:
        wq_reply_created(c, r, f);
        break;
    case OP_RUN:
        wq_reply_run(c, r, f);
        break;
    case OP_LEASE:
        wq_reply_lease(c, r, f);
        break;
    case OP_COMPLETE:
        wb_jobs_completed(c, r, f, "+OK");
        break;
    case OP_AUTH:
        wq_reply_auth(c, r, f);
        break;
    case OP_CLEAN:
        wq_clean_reply(c, r, f);
        break;
    }
}

const struct wb_proto wb_proto_workq = {
    .name = "workq",
    .port = "9922",
    .greets = false,
    .produce_op = {[WL_ADD] = OP_ADD,
                   [WL_LEASE_COMPLETE] = OP_ADD,
                   [WL_CYCLE] = OP_ADD,
                   [WL_RUN] = OP_RUN,
                   [WL_SCHEDULE] = OP_SCHEDULE},
    .lease_op = OP_LEASE,
    .complete_op = OP_COMPLETE,
    .init = wq_init,
    .setup = wq_setup,
    .frame = wq_frame,
    .refused = wq_refused,
    .reply = wq_reply,
    .produce = wq_produce,
    .lease = wq_lease,
    .clean_prepare = wq_clean_prepare,
    .clean_send = wq_clean_send,
};
