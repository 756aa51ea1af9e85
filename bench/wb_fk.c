/* wb_fk.c - workq-bench's Faktory Work Protocol client: the handshake
 * (the greeting HI, then HELLO, with the iterated SHA-256 password hash
 * when the server asks for one), PUSH, FETCH and ACK, the checks of every
 * reply, and the clean-up (ACK, then QUEUE REMOVE).  A job's jid is its
 * id's text, its payload the one string of its args; a fetched job is
 * decoded with jansson and checked member by member.  Exports only its
 * table, wb_proto_faktory; calls wb_conn.c, wb_jobs.c, wb_frame.c and
 * wb_util.c. */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/sha.h>

/* Iterations of the password hash we agree to compute: Faktory asks for
 * thousands; a server asking for more than this is refused. */
#define FK_MAX_ITERATIONS 1000000
#define FK_MAX_SALT       256 /* bytes; Faktory's are 16 hex digits */

/* r->job of a clean-up's QUEUE REMOVE: this bit and the name's index.  Job
 * indices stay below it (BENCH_MAX_ALL_JOBS). */
#define CLEAN_NAME_BIT 0x80000000u
_Static_assert(BENCH_MAX_ALL_JOBS < CLEAN_NAME_BIT, "job indices must stay below CLEAN_NAME_BIT");

/* Lowercase hex of SHA-256 applied iterations times: first over password
 * and salt, then over the previous 32-byte digest.  The password is at most
 * BENCH_MAX_PASSWORD bytes, the salt at most FK_MAX_SALT. */
static void
fk_pwdhash(const char *password, const char *salt, size_t salt_len, uint64_t iterations,
           char out[65])
{
    unsigned char d[SHA256_DIGEST_LENGTH], in[BENCH_MAX_PASSWORD + FK_MAX_SALT];
    size_t plen = strlen(password);
    memcpy(in, password, plen);
    memcpy(in + plen, salt, salt_len);
    SHA256(in, plen + salt_len, d);
    for (uint64_t i = 1; i < iterations; i++)
        SHA256(d, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* Consumers FETCH from every name at once, with the server's wait (2 s,
 * as ours). */
static void
fk_init(struct bench *b)
{
    wb_jobs_lease_line(b, "FETCH", "\r\n");
}

/* Connected: the server speaks first.  The greeting is waited for like the
 * reply to a request that was never written; the HELLO follows it.  Returns
 * the set-up replies the connection waits for. */
static unsigned
fk_setup(struct wb_conn *c)
{
    wb_conn_push(c, OP_HI, BENCH_JOB_NONE);
    return 2;
}

/* Faktory's framing: RESP, whose bulk strings carry a data block. */
static int
fk_frame(struct evbuffer *in, enum wb_op op, struct wb_frame *f, const char **why)
{
    return wb_frame_find(in, WB_PROTO_FAKTORY, op, f, why);
}

/* The greeting: +HI {"v":2} or +HI {"v":2,"i":N,"s":"salt"}; answered with
 * HELLO, which has a wid on connections that will FETCH (Faktory lets only
 * workers fetch) and the password hash when asked for. */
static void
fk_reply_hi(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    json_t *hi = NULL;
    if (f->data == NULL && f->line_len >= 4 && memcmp(f->line, "+HI ", 4) == 0)
        hi = json_loadb(f->line + 4, f->line_len - 4, 0, NULL);
    json_t *v = json_object_get(hi, "v"), *i = json_object_get(hi, "i"),
           *s = json_object_get(hi, "s");
    const char *what = NULL;
    if (!json_is_object(hi) || !json_is_integer(v))
        what = "not a Faktory greeting";
    else if (json_integer_value(v) != 2)
        what = "protocol version not 2";
    else if ((i == NULL) != (s == NULL) ||
             (i != NULL && (!json_is_integer(i) || json_integer_value(i) <= 0 ||
                            json_integer_value(i) > FK_MAX_ITERATIONS || !json_is_string(s) ||
                            json_string_length(s) > FK_MAX_SALT)))
        what = "malformed password challenge";
    if (what != NULL) {
        json_decref(hi);
        wb_conn_setup_fail(c, r, f, what, BENCH_EXIT_FAILED);
        return;
    }
    uint64_t iter = i != NULL ? (uint64_t)json_integer_value(i) : 0;
    char salt[FK_MAX_SALT + 1] = "";
    size_t salt_len = 0;
    if (s != NULL) {
        salt_len = json_string_length(s);
        memcpy(salt, json_string_value(s), salt_len);
    }
    json_decref(hi);
    if (iter > 0 && b->opt.password == NULL) {
        wb_conn_setup_fail(c, r, f,
                           "the server wants a password (--password-file or FAKTORY_PASSWORD)",
                           BENCH_EXIT_PASSWORD);
        return;
    }
    char line[256];
    int n = snprintf(line, sizeof line, "HELLO {\"v\":2");
    if (c->worker)
        n += snprintf(line + n, sizeof line - (size_t)n, ",\"wid\":\"wb%06x-%u\",\"pid\":%ld",
                      b->tag, c->idx, (long)getpid());
    if (iter > 0) {
        char hash[65];
        fk_pwdhash(b->opt.password, salt, salt_len, iter, hash);
        n += snprintf(line + n, sizeof line - (size_t)n, ",\"pwdhash\":\"%s\"", hash);
    }
    n += snprintf(line + n, sizeof line - (size_t)n, "}\r\n");
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_HELLO, BENCH_JOB_NONE);
}

/* HELLO: +OK, else (a wrong password, say) the run cannot go on. */
static void
fk_reply_hello(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    /* (with a password, that is what a refusal is about) */
    if (!wb_frame_is(f, "+OK"))
        wb_conn_setup_fail(c, r, f, "HELLO refused",
                           c->b->opt.password != NULL ? BENCH_EXIT_PASSWORD : BENCH_EXIT_FAILED);
}

/* PUSH job ji: its id's text as jid, the payload as the one argument; a
 * priority for the backlog and with --priorities (see wb.h), and in
 * `schedule` an `at` from 1 s ago to 100 ms ahead. */
static void
fk_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    char extra[96] = "", when[64];
    size_t elen = 0;
    if (wb_jobs_is_backlog(b, j))
        elen += (size_t)snprintf(extra, sizeof extra, ",\"priority\":%d", BENCH_FK_BACKLOG_PRI);
    else if (b->opt.priorities)
        elen += (size_t)snprintf(extra, sizeof extra, ",\"priority\":%d",
                                 2 + (int)j->priority * 8 / BENCH_PRIORITIES);
    if (b->opt.workload == WL_SCHEDULE && b->phase == PH_MEASURE) {
        wb_format_time(when, sizeof when, wb_sched_offset_ms(b));
        snprintf(extra + elen, sizeof extra - elen, ",\"at\":\"%s\"", when);
    }
    int n =
        snprintf(b->scratch, 512, "PUSH {\"jid\":\"%s\",\"jobtype\":\"bench\",\"args\":[\"", id);
    size_t len = (size_t)n;
    wb_payload_fill(b->scratch + len, b->opt.payload, id);
    len += b->opt.payload;
    len += (size_t)snprintf(b->scratch + len, b->scratch_len - len, "\"],\"queue\":\"%s\"%s}\r\n",
                            b->names[j->name], extra);
    wb_conn_send(c, b->scratch, len);
    wb_conn_push(c, OP_PUSH, ji);
}

/* FETCH: with a ticket (a job index, else BENCH_JOB_NONE) from that job's
 * name alone, which the request keeps so that the reply can be held to it;
 * without, from every name (in their order: Faktory's FETCH tries the
 * queues it lists in order).  The server waits up to 2 s for a job. */
static void
fk_fetch(struct wb_conn *c, uint32_t ticket)
{
    struct bench *b = c->b;
    if (ticket != BENCH_JOB_NONE) {
        uint32_t name = b->jobs[ticket].name;
        char line[64];
        int n = snprintf(line, sizeof line, "FETCH %s\r\n", b->names[name]);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_FETCH, name);
    } else {
        wb_conn_send(c, b->lease_line, b->lease_len);
        wb_conn_push(c, OP_FETCH, BENCH_JOB_NONE);
    }
}

/* PUSH: +OK */
static void
fk_reply_push(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (wb_frame_is(f, "+OK")) {
        wb_jobs_created(b, r->job);
        return;
    }
    wb_error_reply(c, r, f, "unexpected reply");
    wb_jobs_lost(b, &b->jobs[r->job]);
}

/* Check a fetched job (f->data, the job's JSON) completely: a job this run
 * pushed and has not fetched yet, with its own queue, jobtype and
 * payload.  The job, or NULL after an error. */
static struct wb_job *
fk_fetch_check(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    json_t *job = json_loadb(f->data, f->data_len, 0, NULL);
    json_t *jid = json_object_get(job, "jid"), *queue = json_object_get(job, "queue");
    json_t *type = json_object_get(job, "jobtype"), *args = json_object_get(job, "args");
    json_t *payload = json_array_get(args, 0);
    struct wb_job *j = NULL;
    const char *what = NULL;
    char id[BENCH_ID_LEN + 1];
    if (!json_is_object(job))
        what = "malformed job JSON";
    else if (!json_is_string(jid))
        what = "no jid";
    else if ((j = wb_jobs_find(
                  b, (struct wb_tok){json_string_value(jid), json_string_length(jid)})) == NULL)
        what = "unknown jid";
    else if (wb_jobs_is_backlog(b, j))
        what = "backlog job fetched before the measured jobs";
    else if (!json_is_string(queue) || strcmp(json_string_value(queue), b->names[j->name]) != 0)
        what = "wrong queue";
    else if (r->job != BENCH_JOB_NONE && j->name != r->job)
        what = "job from a queue not asked for";
    else if (!json_is_string(type) || strcmp(json_string_value(type), "bench") != 0)
        what = "wrong jobtype";
    else if (json_array_size(args) != 1 || !json_is_string(payload) ||
             json_string_length(payload) != b->opt.payload ||
             (uuid_unparse_lower(j->id, id),
              !wb_payload_matches(json_string_value(payload), json_string_length(payload), id)))
        what = "wrong args";
    else if (!(j->flags & WB_JOB_SENT))
        what = "job fetched before it was pushed";
    else if (j->flags & WB_JOB_LEASED)
        what = "job fetched twice";
    json_decref(job);
    if (what == NULL)
        return j;
    /* Quote the job, not its `$<len>` line. */
    wb_error_reply(c, r, &(struct wb_frame){.line = f->data, .line_len = f->data_len}, what);
    return NULL;
}

/* FETCH: a job, checked and acknowledged at once on the same connection,
 * or the null bulk string after the wait. */
static void
fk_reply_fetch(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (f->data == NULL) {
        if (wb_frame_is(f, "$-1"))
            wb_jobs_lease_empty(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    struct wb_job *j = fk_fetch_check(c, r, f);
    if (j == NULL)
        return;
    j->flags |= WB_JOB_LEASED;
    b->leased++;
    char id[BENCH_ID_LEN + 1], line[80];
    uuid_unparse_lower(j->id, id);
    int n = snprintf(line, sizeof line, "ACK {\"jid\":\"%s\"}\r\n", id);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_ACK, (uint32_t)(j - b->jobs));
}

/* May job ji be on the server, for the clean-up to ACK?  One the run
 * fetched and did not ACK; after a run cut short or with errors, every one
 * it pushed and did not ACK: a FETCH whose reply was not read holds a job
 * too, and ACK of a job that is not working is +OK. */
static bool
fk_clean_left(const struct bench *b, uint32_t ji)
{
    const struct wb_job *j = &b->jobs[ji];
    if (!(j->flags & WB_JOB_SENT))
        return false;
    bool clean_end = !b->timed_out && !b->interrupted && b->errors == 0;
    return !(j->flags & WB_JOB_DONE) && ((j->flags & WB_JOB_LEASED) || !clean_end);
}

/* Count what each name still holds (pushed, accepted, never fetched), which
 * its QUEUE REMOVE drops; then, if anything is to be removed, wait for a
 * schedule run's last jobs: Faktory enqueues the jobs of `at` by their
 * time, up to BENCH_SCHED_AHEAD_MS after the run's end, and only then can
 * QUEUE REMOVE drop them. */
static bool
fk_clean_prepare(struct bench *b)
{
    bool any = false;
    b->clean_enqueued = wb_xcalloc(b->opt.names, sizeof *b->clean_enqueued);
    for (uint32_t ji = 0; ji < b->opt.jobs + b->nbacklog; ji++) {
        const struct wb_job *j = &b->jobs[ji];
        any = any || fk_clean_left(b, ji);
        if (j->flags & WB_JOB_SENT) {
            any = true; /* its queue, at least, is to be removed */
            if ((j->flags & WB_JOB_ACKED) && !(j->flags & WB_JOB_LEASED))
                b->clean_enqueued[j->name]++;
        }
    }
    if (!any || b->opt.workload != WL_SCHEDULE)
        return any;
    uint64_t until = b->t_end_ns + (BENCH_SCHED_AHEAD_MS + 100) * 1000000ull, now = wb_now_ns();
    if (now < until) {
        struct timespec ts = {(time_t)((until - now) / 1000000000u),
                              (long)((until - now) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* ACK the next job that may be left, then QUEUE REMOVE each name. */
static bool
fk_clean_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    char line[96], id[BENCH_ID_LEN + 1];
    int n;
    while (b->clean_next < (size_t)b->opt.jobs + b->nbacklog) {
        uint32_t ji = (uint32_t)b->clean_next++;
        if (!fk_clean_left(b, ji))
            continue;
        uuid_unparse_lower(b->jobs[ji].id, id);
        n = snprintf(line, sizeof line, "ACK {\"jid\":\"%s\"}\r\n", id);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_CLEAN, ji);
        return true;
    }
    if (b->clean_name >= b->opt.names)
        return false;
    uint32_t k = b->clean_name++;
    n = snprintf(line, sizeof line, "QUEUE REMOVE %s\r\n", b->names[k]);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_CLEAN, CLEAN_NAME_BIT | k);
    return true;
}

/* The clean-up's ACK and QUEUE REMOVE: +OK.  An ACK counts for a job known
 * to be working; the others are counted with their queue. */
static void
fk_clean_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    if (!wb_frame_is(f, "+OK"))
        wb_error_reply(c, r, f, "unexpected reply in the clean-up");
    else if (r->job & CLEAN_NAME_BIT)
        b->cleaned += b->clean_enqueued[r->job & ~CLEAN_NAME_BIT];
    else if (b->jobs[r->job].flags & WB_JOB_LEASED)
        b->cleaned++;
}

/* A reply, by the type of its request (a Faktory connection sends no
 * other). */
static void
fk_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    switch (r->op) {
    case OP_HI:
        fk_reply_hi(c, r, f);
        break;
    case OP_HELLO:
        fk_reply_hello(c, r, f);
        break;
    case OP_PUSH:
        fk_reply_push(c, r, f);
        break;
    case OP_FETCH:
        fk_reply_fetch(c, r, f);
        break;
    case OP_ACK:
        wb_jobs_completed(c, r, f, "+OK");
        break;
    case OP_CLEAN:
        fk_clean_reply(c, r, f);
        break;
    }
}

const struct wb_proto wb_proto_faktory = {
    .name = "faktory",
    .port = "7419",
    .greets = true,
    .produce_op = {[WL_ADD] = OP_PUSH,
                   [WL_LEASE_COMPLETE] = OP_PUSH,
                   [WL_CYCLE] = OP_PUSH,
                   [WL_RUN] = OP_PUSH,
                   [WL_SCHEDULE] = OP_PUSH},
    .lease_op = OP_FETCH,
    .complete_op = OP_ACK,
    .init = fk_init,
    .setup = fk_setup,
    .frame = fk_frame,
    .refused = NULL,
    .reply = fk_reply,
    .produce = fk_produce,
    .lease = fk_fetch,
    .clean_prepare = fk_clean_prepare,
    .clean_send = fk_clean_send,
};
