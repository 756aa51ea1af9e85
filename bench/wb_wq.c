/* wb_wq.c - workq-bench's workq protocol client: formats add, schedule,
 * run, lease and complete, and checks every reply completely against the
 * request and the job it names. */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void
wb_setup_fail(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f, const char *what,
              int status)
{
    wb_error_reply(c, r, f, what);
    wb_fatal(c->b, status);
}

unsigned
wb_wq_auth(struct wb_conn *c)
{
    const char *pw = c->b->opt.password;
    wb_conn_send(c, "auth ", 5);
    wb_conn_send(c, pw, strlen(pw));
    wb_conn_send(c, "\r\n", 2);
    wb_conn_push(c, OP_AUTH, BENCH_JOB_NONE);
    return 1;
}

void
wb_wq_reply_auth(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (!wb_frame_is(f, "+OK"))
        wb_setup_fail(c, r, f, "auth refused", BENCH_EXIT_PASSWORD);
}

/* workq: add, schedule or run job ji. */
void
wb_wq_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    const char *name = b->names[j->name];
    char prio[32] = "", when[80];
    if (b->opt.priorities || wb_jobs_is_backlog(b, j))
        snprintf(prio, sizeof prio, " -priority=%" PRId32, j->priority);
    /* The backlog and the prefill of lease-complete always add. */
    enum wb_op op = b->phase != PH_MEASURE ? OP_ADD : wb_run_produce_op(b);
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
void
wb_wq_lease(struct wb_conn *c, uint32_t ticket)
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
wb_wq_complete(struct wb_conn *c, struct wb_job *j)
{
    char id[BENCH_ID_LEN + 1], line[128];
    uuid_unparse_lower(j->id, id);
    int n = snprintf(line, sizeof line, "complete %s %d\r\n%s\r\n", id, BENCH_ID_LEN, id);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_COMPLETE, (uint32_t)(j - c->b->jobs));
}

/* add, schedule (and backlog and prefill adds): +OK */
void
wb_wq_reply_created(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    if (wb_frame_is(f, "+OK")) {
        wb_run_created(b, r->job);
        return;
    }
    wb_error_reply(c, r, f, "unexpected reply");
    wb_jobs_lost(b, j);
}

/* Check a workq lease reply completely; the job, or NULL after an error. */
static struct wb_job *
wb_wq_lease_check(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
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
void
wb_wq_reply_lease(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (f->data == NULL) {
        if (wb_frame_is(f, "-TIMEOUT"))
            wb_run_lease_timed_out(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    struct wb_job *j = wb_wq_lease_check(c, r, f);
    if (j == NULL)
        return;
    j->flags |= WB_JOB_LEASED;
    b->leased++;
    wb_wq_complete(c, j);
}

/* complete: +OK */
void
wb_wq_reply_complete(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    wb_run_completed(c, r, f, "+OK");
}

/* run: the result a worker stored, which must be the job's id. */
void
wb_wq_reply_run(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
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
