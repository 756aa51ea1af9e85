/* wb_hero.c - workq-bench's Hero Dispatcher client: Redis's protocol
 * (RESP2) on keys under hero:, with the job cycle of Hero's client and
 * worker (the Hero Dispatcher protocol):
 *   producer: HSET hero:job:{id} with the job's fields, then, once that is
 *     answered, LPUSH hero:work_queue:{name} {id};
 *   worker: BLPOP hero:work_queue:{name} ... (waiting 2 s), then for the
 *     job it popped, one after the other: HGETALL hero:job:{id}, HSET
 *     status started, HSET status finished output done, and LPUSH
 *     hero:reply:{id} done, whose reply completes the job.
 * Requests are RESP arrays of bulk strings, as redis-rs sends them; every
 * reply is framed as RESP (wb_frame.c) and checked against its request.  A
 * job's worker_id is its queue name, its script its payload.  The same
 * bytes work against workq-server's -hero-listen, where the work queues
 * are a job server's, and against a Redis server, where they are plain
 * data.  The clean-up deletes each job's hash and reply list, then each
 * work queue.  Exports only its table, wb_proto_hero; calls wb_conn.c,
 * wb_jobs.c, wb_frame.c and wb_util.c. */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HERO_FIELDS    11 /* of a job's hash, as the producer sets them */
#define HERO_OUTPUT    "done"
#define HERO_KEY_JOB   "hero:job:"
#define HERO_KEY_QUEUE "hero:work_queue:"
#define HERO_KEY_REPLY "hero:reply:"
/* Room for a request but the payload: the job's HSET is the longest, 24
 * arguments of at most 64 bytes each (the queue name, the keys, the
 * timestamps) with their headers. */
#define HERO_REQUEST_ROOM 4096

/* r->job of a clean-up's DEL of a work queue: this bit and the name's
 * index.  Job indices stay below it (BENCH_MAX_ALL_JOBS). */
#define CLEAN_NAME_BIT 0x80000000u
_Static_assert(BENCH_MAX_ALL_JOBS < CLEAN_NAME_BIT, "job indices must stay below CLEAN_NAME_BIT");

/* A request being written: a RESP array of bulk strings, in b->scratch. */
struct hero_cmd {
    char *p;
    size_t len;
};

static void
cmd_start(struct hero_cmd *m, struct bench *b, unsigned argc)
{
    m->p = b->scratch;
    m->len = (size_t)sprintf(m->p, "*%u\r\n", argc);
}

/* Add an argument of n bytes; returns where its bytes go. */
static char *
cmd_space(struct hero_cmd *m, size_t n)
{
    m->len += (size_t)sprintf(m->p + m->len, "$%zu\r\n", n);
    char *d = m->p + m->len;
    memcpy(d + n, "\r\n", 2);
    m->len += n + 2;
    return d;
}

static void
cmd_arg(struct hero_cmd *m, const char *s)
{
    size_t n = strlen(s);
    memcpy(cmd_space(m, n), s, n);
}

/* An argument made with printf: a key, a number. */
__attribute__((format(printf, 2, 3))) static void
cmd_argf(struct hero_cmd *m, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cmd_arg(m, buf);
}

/* Queue the request on c as a request of type op for job (or name) ji. */
static void
cmd_send(struct wb_conn *c, struct hero_cmd *m, enum wb_op op, uint32_t ji)
{
    wb_conn_send(c, m->p, m->len);
    wb_conn_push(c, op, ji);
}

/* Room for the requests, and the BLPOP over every name that consumers
 * without a ticket send: BLPOP, each work queue, the wait in seconds. */
static void
hero_init(struct bench *b)
{
    free(b->scratch);
    b->scratch_len = HERO_REQUEST_ROOM + (size_t)b->opt.payload;
    b->scratch = wb_xcalloc(1, b->scratch_len);
    struct hero_cmd m;
    cmd_start(&m, b, b->opt.names + 2);
    cmd_arg(&m, "BLPOP");
    for (uint32_t k = 0; k < b->opt.names; k++)
        cmd_argf(&m, HERO_KEY_QUEUE "%s", b->names[k]);
    cmd_argf(&m, "%d", BENCH_LEASE_WAIT_MS / 1000);
    b->lease_line = wb_xcalloc(1, m.len);
    memcpy(b->lease_line, m.p, m.len);
    b->lease_len = m.len;
}

/* With a password, every connection says AUTH first. */
static unsigned
hero_setup(struct wb_conn *c)
{
    const char *pw = c->b->opt.password;
    if (pw == NULL)
        return 0;
    struct hero_cmd m;
    cmd_start(&m, c->b, 2);
    cmd_arg(&m, "AUTH");
    cmd_arg(&m, pw);
    cmd_send(c, &m, OP_AUTH, BENCH_JOB_NONE);
    return 1;
}

/* RESP2: any reply, arrays included. */
static int
hero_frame(struct evbuffer *in, enum wb_op op, struct wb_frame *f, const char **why)
{
    return wb_frame_find(in, WB_PROTO_HERO, op, f, why);
}

/* A reply that says the run cannot go on, whatever was asked: the server
 * wants a password that was not given.  Says so and stops (exit 77). */
static bool
hero_refused(struct wb_conn *c, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (f->data != NULL || f->line_len < 7 || memcmp(f->line, "-NOAUTH", 7) != 0)
        return false;
    if (b->fatal == 0) {
        if (b->progress)
            fprintf(stderr, "\r%-79s\r", "");
        fprintf(stderr,
                "workq-bench: %s wants a password (%.*s)\n"
                "workq-bench: hint: give --password-file FILE\n",
                b->addr, (int)(f->line_len - 1 < 100 ? f->line_len - 1 : 100), f->line + 1);
    }
    wb_fatal(b, BENCH_EXIT_PASSWORD);
    return true;
}

/* AUTH: +OK, else (a wrong password) the run cannot go on. */
static void
hero_reply_auth(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (!wb_frame_is(f, "+OK"))
        wb_conn_setup_fail(c, r, f, "AUTH refused", BENCH_EXIT_PASSWORD);
}

/* Quote the whole reply f, not only its first line, in an error. */
static void
hero_error(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f, const char *what)
{
    size_t len = f->total >= 2 ? f->total - 2 : f->total;
    wb_error_reply(c, r, &(struct wb_frame){.line = f->line, .line_len = len}, what);
}

/* The job's HSET: every field Hero's client sets (no log_path, env_vars,
 * prerequisites or dependents), its script the payload, its worker the
 * queue name, its timeout --ttr in seconds. */
static void
hero_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    char now[64];
    wb_format_time(now, sizeof now, 0);
    struct hero_cmd m;
    cmd_start(&m, b, 2 + 2 * HERO_FIELDS);
    cmd_arg(&m, "HSET");
    cmd_argf(&m, HERO_KEY_JOB "%s", id);
    cmd_arg(&m, "id");
    cmd_arg(&m, id);
    cmd_arg(&m, "caller_id");
    cmd_arg(&m, "bench");
    cmd_arg(&m, "worker_id");
    cmd_arg(&m, b->names[j->name]);
    cmd_arg(&m, "context_id");
    cmd_arg(&m, "bench");
    cmd_arg(&m, "script");
    wb_payload_fill(cmd_space(&m, b->opt.payload), b->opt.payload, id);
    cmd_arg(&m, "timeout");
    if (b->opt.ttr_ms % 1000 == 0)
        cmd_argf(&m, "%" PRIu32, b->opt.ttr_ms / 1000);
    else
        cmd_argf(&m, "%" PRIu32 ".%03" PRIu32, b->opt.ttr_ms / 1000, b->opt.ttr_ms % 1000);
    cmd_arg(&m, "retries");
    cmd_arg(&m, "0");
    cmd_arg(&m, "concurrent");
    cmd_arg(&m, "false");
    cmd_arg(&m, "status");
    cmd_arg(&m, "dispatched");
    cmd_arg(&m, "created_at");
    cmd_arg(&m, now);
    cmd_arg(&m, "updated_at");
    cmd_arg(&m, now);
    cmd_send(c, &m, OP_HSET, ji);
}

/* The job's hash is new (its id is this run's): HSET answers :11, the
 * fields it added.  Then the job is submitted. */
static void
hero_reply_hset(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    if (!wb_frame_is(f, ":11")) {
        hero_error(c, r, f, "unexpected reply");
        wb_jobs_lost(b, j);
        return;
    }
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    struct hero_cmd m;
    cmd_start(&m, b, 3);
    cmd_arg(&m, "LPUSH");
    cmd_argf(&m, HERO_KEY_QUEUE "%s", b->names[j->name]);
    cmd_arg(&m, id);
    cmd_send(c, &m, OP_LPUSH, r->job);
}

/* LPUSH onto the work queue: the list's length, at least 1. */
static void
hero_reply_lpush(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    uint64_t n;
    if (wb_resp_uint(f, &n) == 0 && n >= 1) {
        wb_jobs_created(b, r->job);
        return;
    }
    hero_error(c, r, f, "unexpected reply");
    wb_jobs_lost(b, &b->jobs[r->job]);
}

/* BLPOP: with a ticket (a job index, else BENCH_JOB_NONE) that job's work
 * queue alone, which the request keeps (the name's index) so that the reply
 * can be held to it; without, every work queue, in their order.  Both wait
 * BENCH_LEASE_WAIT_MS. */
static void
hero_lease(struct wb_conn *c, uint32_t ticket)
{
    struct bench *b = c->b;
    if (ticket == BENCH_JOB_NONE) {
        wb_conn_send(c, b->lease_line, b->lease_len);
        wb_conn_push(c, OP_BLPOP, BENCH_JOB_NONE);
        return;
    }
    uint32_t name = b->jobs[ticket].name;
    struct hero_cmd m;
    cmd_start(&m, b, 3);
    cmd_arg(&m, "BLPOP");
    cmd_argf(&m, HERO_KEY_QUEUE "%s", b->names[name]);
    cmd_argf(&m, "%d", BENCH_LEASE_WAIT_MS / 1000);
    cmd_send(c, &m, OP_BLPOP, name);
}

/* Does token t spell prefix followed by s? */
static bool
tok_is2(struct wb_tok t, const char *prefix, const char *s)
{
    size_t pl = strlen(prefix), sl = strlen(s);
    return t.s != NULL && t.len == pl + sl && memcmp(t.s, prefix, pl) == 0 &&
           memcmp(t.s + pl, s, sl) == 0;
}

/* A popped job, [key, id]: a job this run pushed and has not popped yet,
 * from its own work queue (and, with a ticket, the one asked for).  The
 * job, or NULL after an error. */
static struct wb_job *
hero_pop_check(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_tok el[2];
    struct wb_job *j = NULL;
    const char *what = NULL;
    if (wb_resp_array(f, el, 2) != 2 || el[0].s == NULL || el[1].s == NULL)
        what = "unexpected reply";
    else if ((j = wb_jobs_find(b, el[1])) == NULL)
        what = "unknown job id";
    else if (wb_jobs_is_backlog(b, j))
        what = "backlog job popped before the measured jobs";
    else if (!tok_is2(el[0], HERO_KEY_QUEUE, b->names[j->name]))
        what = "wrong queue";
    else if (r->job != BENCH_JOB_NONE && j->name != r->job)
        what = "job from a queue not asked for";
    else if (!(j->flags & WB_JOB_SENT))
        what = "job popped before it was pushed";
    else if (j->flags & WB_JOB_LEASED)
        what = "job popped twice";
    if (what == NULL)
        return j;
    hero_error(c, r, f, what);
    return NULL;
}

/* A request of the worker's on job j: the key hero:job:{id} after the
 * command, then extra, the next arguments, up to 6 (NULL-terminated). */
static void
hero_job_cmd(struct wb_conn *c, struct wb_job *j, enum wb_op op, const char *cmd,
             const char *const *extra)
{
    struct bench *b = c->b;
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    unsigned n = 0;
    while (extra != NULL && extra[n] != NULL)
        n++;
    struct hero_cmd m;
    cmd_start(&m, b, 2 + n);
    cmd_arg(&m, cmd);
    if (op == OP_REPLY)
        cmd_argf(&m, HERO_KEY_REPLY "%s", id);
    else
        cmd_argf(&m, HERO_KEY_JOB "%s", id);
    for (unsigned i = 0; i < n; i++)
        cmd_arg(&m, extra[i]);
    cmd_send(c, &m, op, (uint32_t)(j - b->jobs));
}

/* BLPOP: a job, checked and read at once on the same connection, or the
 * null array after the wait. */
static void
hero_reply_blpop(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (wb_frame_is(f, "*-1")) {
        wb_jobs_lease_empty(c, r, f);
        return;
    }
    struct wb_job *j = hero_pop_check(c, r, f);
    if (j == NULL)
        return;
    j->flags |= WB_JOB_LEASED;
    b->leased++;
    hero_job_cmd(c, j, OP_HGETALL, "HGETALL", NULL);
}

/* HGETALL: exactly the fields the producer set, each once, with this job's
 * id, queue, script (the payload) and status dispatched; the server
 * changed nothing.  Then the job is started. */
static void
hero_reply_hgetall(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    static const char *const fields[HERO_FIELDS] = {
        "id",      "caller_id",  "worker_id", "context_id", "script",    "timeout",
        "retries", "concurrent", "status",    "created_at", "updated_at"};
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    struct wb_tok el[2 * HERO_FIELDS];
    unsigned seen = 0;
    const char *what = NULL;
    if (wb_resp_array(f, el, 2 * HERO_FIELDS) != 2 * HERO_FIELDS)
        what = "not the job's fields";
    for (int i = 0; what == NULL && i < 2 * HERO_FIELDS; i += 2) {
        struct wb_tok k = el[i], v = el[i + 1];
        int fi = 0;
        while (fi < HERO_FIELDS && !(k.s != NULL && wb_tok_is(k, fields[fi])))
            fi++;
        if (fi == HERO_FIELDS || (seen & (1u << fi)) || v.s == NULL)
            what = "not the job's fields";
        else if ((fi == 0 && !wb_tok_is(v, id)) || (fi == 2 && !wb_tok_is(v, b->names[j->name])))
            what = "wrong id or worker_id";
        else if (fi == 4 && (v.len != b->opt.payload || !wb_payload_matches(v.s, v.len, id)))
            what = "wrong script";
        else if (fi == 8 && !wb_tok_is(v, "dispatched"))
            what = "status not dispatched";
        seen |= 1u << fi;
    }
    if (what != NULL) {
        hero_error(c, r, f, what);
        return;
    }
    char now[64];
    wb_format_time(now, sizeof now, 0);
    hero_job_cmd(c, j, OP_STARTED, "HSET",
                 (const char *const[]){"status", "started", "updated_at", now, NULL});
}

/* HSET status started: :0 (no field is new); then the job is done. */
static void
hero_reply_started(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (!wb_frame_is(f, ":0")) {
        hero_error(c, r, f, "unexpected reply");
        return;
    }
    char now[64];
    wb_format_time(now, sizeof now, 0);
    hero_job_cmd(c, &c->b->jobs[r->job], OP_FINISHED, "HSET",
                 (const char *const[]){"status", "finished", "output", HERO_OUTPUT, "updated_at",
                                       now, NULL});
}

/* HSET status finished output done: :1 (output is new); then the reply. */
static void
hero_reply_finished(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (!wb_frame_is(f, ":1")) {
        hero_error(c, r, f, "unexpected reply");
        return;
    }
    hero_job_cmd(c, &c->b->jobs[r->job], OP_REPLY, "LPUSH",
                 (const char *const[]){HERO_OUTPUT, NULL});
}

/* May job ji have keys on the server?  Every job whose HSET was sent. */
static bool
hero_clean_prepare(struct bench *b)
{
    for (uint32_t ji = 0; ji < b->opt.jobs + b->nbacklog; ji++)
        if (b->jobs[ji].flags & WB_JOB_SENT)
            return true;
    return false;
}

/* DEL of each job's hash and reply list, then of each work queue (what is
 * still queued, the backlog among it). */
static bool
hero_clean_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    char id[BENCH_ID_LEN + 1];
    struct hero_cmd m;
    while (b->clean_next < (size_t)b->opt.jobs + b->nbacklog) {
        uint32_t ji = (uint32_t)b->clean_next++;
        if (!(b->jobs[ji].flags & WB_JOB_SENT))
            continue;
        uuid_unparse_lower(b->jobs[ji].id, id);
        cmd_start(&m, b, 3);
        cmd_arg(&m, "DEL");
        cmd_argf(&m, HERO_KEY_JOB "%s", id);
        cmd_argf(&m, HERO_KEY_REPLY "%s", id);
        cmd_send(c, &m, OP_CLEAN, ji);
        return true;
    }
    if (b->clean_name >= b->opt.names)
        return false;
    uint32_t k = b->clean_name++;
    cmd_start(&m, b, 2);
    cmd_arg(&m, "DEL");
    cmd_argf(&m, HERO_KEY_QUEUE "%s", b->names[k]);
    cmd_send(c, &m, OP_CLEAN, CLEAN_NAME_BIT | k);
    return true;
}

/* The clean-up's DEL: the keys it removed.  A job counts as removed when
 * its hash (or its reply list) was there. */
static void
hero_clean_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    uint64_t n;
    if (wb_resp_uint(f, &n) < 0 || n > 2)
        hero_error(c, r, f, "unexpected reply in the clean-up");
    else if (!(r->job & CLEAN_NAME_BIT) && n > 0)
        c->b->cleaned++;
}

/* A reply, by the type of its request (a Hero connection sends no other). */
static void
hero_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    switch (r->op) {
    case OP_AUTH:
        hero_reply_auth(c, r, f);
        break;
    case OP_HSET:
        hero_reply_hset(c, r, f);
        break;
    case OP_LPUSH:
        hero_reply_lpush(c, r, f);
        break;
    case OP_BLPOP:
        hero_reply_blpop(c, r, f);
        break;
    case OP_HGETALL:
        hero_reply_hgetall(c, r, f);
        break;
    case OP_STARTED:
        hero_reply_started(c, r, f);
        break;
    case OP_FINISHED:
        hero_reply_finished(c, r, f);
        break;
    case OP_REPLY:
        /* The reply list is new: LPUSH answers :1. */
        wb_jobs_completed(c, r, f, ":1");
        break;
    case OP_CLEAN:
        hero_clean_reply(c, r, f);
        break;
    }
}

const struct wb_proto wb_proto_hero = {
    .name = "hero",
    .port = "6379",
    .greets = false,
    .produce_op = {[WL_ADD] = OP_HSET,
                   [WL_LEASE_COMPLETE] = OP_HSET,
                   [WL_CYCLE] = OP_HSET,
                   [WL_RUN] = OP_HSET,
                   [WL_SCHEDULE] = OP_HSET},
    .lease_op = OP_BLPOP,
    .complete_op = OP_REPLY,
    .produce_more = {OP_LPUSH},
    .nproduce_more = 1,
    .work_more = {OP_HGETALL, OP_STARTED, OP_FINISHED},
    .nwork_more = 3,
    .init = hero_init,
    .setup = hero_setup,
    .frame = hero_frame,
    .refused = hero_refused,
    .reply = hero_reply,
    .produce = hero_produce,
    .lease = hero_lease,
    .clean_prepare = hero_clean_prepare,
    .clean_send = hero_clean_send,
};
