/* wb_bs.c - workq-bench's beanstalkd protocol client: formats use, watch,
 * put, reserve-with-timeout and delete, maps beanstalkd's job ids back to
 * the run's jobs, checks every reply, holding a reserved payload whose
 * INSERTED has not been read yet, and deletes the run's jobs in the
 * clean-up.  Exports only its table, wb_proto_beanstalkd; calls
 * wb_conn.c, wb_jobs.c, wb_frame.c and wb_util.c. */
#include "wb.h"
#include "wb_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The id map has as many slots as the id map of the jobs. */
static void
bs_init(struct bench *b)
{
    b->bidmap = wb_xcalloc(b->idmap_mask + 1, sizeof *b->bidmap);
    b->bidmap_mask = b->idmap_mask;
}

/* beanstalkd's framing: RESERVED carries a data block. */
static int
bs_frame(struct evbuffer *in, enum wb_op op, struct wb_frame *f, const char **why)
{
    return wb_frame_find(in, WB_PROTO_BEANSTALKD, op, f, why);
}

/* The slot of beanstalkd id bid: its own, or the empty one it would take. */
static struct wb_bs_slot *
bidmap_slot(struct bench *b, uint64_t bid)
{
    size_t s = (size_t)((bid * 0x9E3779B97F4A7C15ull) >> 20) & b->bidmap_mask;
    while (b->bidmap[s].bid != 0 && b->bidmap[s].bid != bid)
        s = (s + 1) & b->bidmap_mask;
    return &b->bidmap[s];
}

/* Claim an empty slot for bid; NULL (an error) if the map is full, which
 * only a server inventing ids can cause. */
static struct wb_bs_slot *
bidmap_claim(struct bench *b, struct wb_bs_slot *s, uint64_t bid)
{
    if (b->bidmap_used >= b->bidmap_mask / 4 * 3) {
        wb_error(b, "too many distinct beanstalkd job ids");
        return NULL;
    }
    b->bidmap_used++;
    s->bid = bid;
    s->job = BENCH_JOB_NONE;
    s->held = 0;
    return s;
}

/* beanstalkd: put job ji, after a `use` if this connection's tube differs.
 * Priorities are inverted (beanstalkd serves the lowest first); a
 * "schedule" in the future becomes a delay of one second, the smallest
 * beanstalkd has. */
static void
bs_produce(struct wb_conn *c, uint32_t ji, const char *id)
{
    struct bench *b = c->b;
    const struct wb_job *j = &b->jobs[ji];
    if (c->tube != j->name) {
        char use[64];
        int n = snprintf(use, sizeof use, "use %s\r\n", b->names[j->name]);
        wb_conn_send(c, use, (size_t)n);
        wb_conn_push(c, OP_USE, j->name);
        c->tube = j->name;
    }
    unsigned delay = 0;
    if (b->opt.workload == WL_SCHEDULE && b->phase == PH_MEASURE)
        delay = wb_sched_offset_ms(b) > 0 ? 1 : 0;
    uint32_t pri = wb_jobs_is_backlog(b, j) ? BENCH_BS_BACKLOG_PRI
                   : b->opt.priorities      ? BENCH_PRIORITIES - 1 - (uint32_t)j->priority
                                            : BENCH_PRIORITIES;
    uint32_t ttr_s = (b->opt.ttr_ms + 999) / 1000;
    int n = snprintf(b->scratch, 512, "put %" PRIu32 " %u %" PRIu32 " %" PRIu32 "\r\n", pri, delay,
                     ttr_s, b->opt.payload);
    wb_conn_write_block(c, n, id);
    wb_conn_push(c, OP_PUT, ji);
}

/* reserve-with-timeout over the watched tubes: beanstalkd cannot reserve
 * from one tube alone, so a ticket makes no difference. */
static void
bs_reserve(struct wb_conn *c, uint32_t ticket)
{
    (void)ticket;
    char line[64];
    int n = snprintf(line, sizeof line, "reserve-with-timeout %d\r\n", BENCH_LEASE_WAIT_MS / 1000);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_RESERVE, BENCH_JOB_NONE);
}

/* A worker's set-up: watch every name and ignore `default`.  Returns the
 * number of requests queued, whose replies the connection waits for. */
static unsigned
bs_setup(struct wb_conn *c)
{
    struct bench *b = c->b;
    char line[64];
    if (!c->worker)
        return 0;
    for (uint32_t k = 0; k < b->opt.names; k++) {
        int n = snprintf(line, sizeof line, "watch %s\r\n", b->names[k]);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_WATCH, k);
    }
    wb_conn_send(c, "ignore default\r\n", 16);
    wb_conn_push(c, OP_WATCH, BENCH_JOB_NONE);
    return b->opt.names + 1;
}

/* beanstalkd: delete reserved job bid (job: our index, or BENCH_JOB_NONE
 * while its INSERTED has not been read). */
static void
bs_delete(struct wb_conn *c, uint64_t bid, uint32_t job)
{
    char line[64];
    int n = snprintf(line, sizeof line, "delete %" PRIu64 "\r\n", bid);
    wb_conn_send(c, line, (size_t)n);
    wb_conn_push(c, OP_DELETE, job);
}

/* beanstalkd: check a reserved payload against job ji. */
static void
bs_reserve_check(struct wb_conn *c, uint64_t bid, uint32_t ji, const char *data, size_t len)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[ji];
    char id[BENCH_ID_LEN + 1];
    uuid_unparse_lower(j->id, id);
    if (len != b->opt.payload || !wb_payload_matches(data, len, id))
        wb_error(b, "conn %u: reserve: wrong payload for job %" PRIu64, c->idx, bid);
    else if (j->flags & WB_JOB_LEASED)
        wb_error(b, "conn %u: reserve: job %" PRIu64 " reserved twice", c->idx, bid);
    j->flags |= WB_JOB_LEASED;
}

/* put: INSERTED <id>; also settles a reservation that came first. */
static void
bs_reply_put(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_job *j = &b->jobs[r->job];
    struct wb_tok t[3];
    uint64_t bid;
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "INSERTED") ||
        wb_tok_u64(t[1], &bid) < 0 || bid == 0 || f->data != NULL) {
        wb_error_reply(c, r, f, "unexpected reply");
        wb_jobs_lost(b, j);
        return;
    }
    wb_jobs_created(b, r->job);
    struct wb_bs_slot *s = bidmap_slot(b, bid);
    if (s->bid == 0 && (s = bidmap_claim(b, s, bid)) == NULL)
        return;
    if (s->job != BENCH_JOB_NONE) {
        wb_error_reply(c, r, f, "id given to two jobs");
        return;
    }
    s->job = r->job;
    if (s->held != 0) {
        struct wb_bs_held *h = &b->held[s->held - 1];
        bs_reserve_check(c, bid, r->job, h->data, h->len);
        free(h->data);
        h->data = NULL;
        s->held = 0;
        b->held_open--;
    }
}

/* Keep a reserved payload whose INSERTED has not been read yet. */
static void
bs_hold(struct bench *b, struct wb_bs_slot *s, const struct wb_frame *f)
{
    if (b->nheld == b->held_cap) {
        b->held_cap = b->held_cap == 0 ? 64 : b->held_cap * 2;
        b->held = realloc(b->held, b->held_cap * sizeof *b->held);
        if (b->held == NULL) {
            fprintf(stderr, "workq-bench: out of memory\n");
            exit(1);
        }
    }
    struct wb_bs_held *h = &b->held[b->nheld++];
    h->data = wb_xcalloc(1, f->data_len);
    memcpy(h->data, f->data, f->data_len);
    h->len = f->data_len;
    s->held = (uint32_t)b->nheld;
    b->held_open++;
}

/* reserve-with-timeout: RESERVED <id> <bytes> + data, or TIMED_OUT. */
static void
bs_reply_reserve(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct bench *b = c->b;
    struct wb_tok t[4];
    uint64_t bid, size;
    if (f->data == NULL) {
        if (wb_frame_is(f, "TIMED_OUT") || wb_frame_is(f, "DEADLINE_SOON"))
            wb_jobs_lease_empty(c, r, f);
        else
            wb_error_reply(c, r, f, "unexpected reply");
        return;
    }
    if (wb_tokenize(f->line, f->line_len, t, 4) != 3 || wb_tok_u64(t[1], &bid) < 0 || bid == 0 ||
        wb_tok_u64(t[2], &size) < 0) {
        wb_error_reply(c, r, f, "malformed reply");
        return;
    }
    /* The INSERTED naming this id comes on another connection and may not
     * have been read yet: then hold the payload until it is.  The delete
     * needs only the id, so it goes out at once either way. */
    struct wb_bs_slot *s = bidmap_slot(b, bid);
    if (s->bid == 0 && (s = bidmap_claim(b, s, bid)) == NULL)
        return;
    /* Every backlog put was answered before the measured phase, so a
     * backlog job is always known here.  It is left reserved, not deleted,
     * so it comes back when its TTR ends; until then the backlog is one job
     * short, and the run fails. */
    if (s->job != BENCH_JOB_NONE && wb_jobs_is_backlog(b, &b->jobs[s->job])) {
        wb_error_reply(c, r, f, "backlog job reserved before the measured jobs");
        return;
    }
    if (s->job != BENCH_JOB_NONE)
        bs_reserve_check(c, bid, s->job, f->data, f->data_len);
    else if (s->held != 0)
        wb_error_reply(c, r, f, "job reserved twice");
    else
        bs_hold(b, s, f);
    b->leased++;
    bs_delete(c, bid, s->job);
}

/* use: USING <tube> */
static void
bs_reply_use(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct wb_tok t[3];
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "USING") ||
        !wb_tok_is(t[1], c->b->names[r->job]))
        wb_error_reply(c, r, f, "unexpected reply");
}

/* watch, ignore: WATCHING <count> */
static void
bs_reply_watch(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    struct wb_tok t[3];
    uint64_t n;
    if (wb_tokenize(f->line, f->line_len, t, 3) != 2 || !wb_tok_is(t[0], "WATCHING") ||
        wb_tok_u64(t[1], &n) < 0)
        wb_error_reply(c, r, f, "unexpected reply");
}

/* Has any put been given an id (and so may its job be left)? */
static bool
bs_clean_prepare(struct bench *b)
{
    return b->bidmap_used > 0;
}

/* delete the next job whose id an INSERTED gave and that the run did not
 * delete. */
static bool
bs_clean_send(struct wb_conn *c)
{
    struct bench *b = c->b;
    while (b->clean_next <= b->bidmap_mask) {
        const struct wb_bs_slot *s = &b->bidmap[b->clean_next++];
        if (s->bid == 0 || s->job == BENCH_JOB_NONE || (b->jobs[s->job].flags & WB_JOB_DONE))
            continue;
        char line[96];
        int n = snprintf(line, sizeof line, "delete %" PRIu64 "\r\n", s->bid);
        wb_conn_send(c, line, (size_t)n);
        wb_conn_push(c, OP_CLEAN, s->job);
        return true;
    }
    return false;
}

/* The clean-up's delete: DELETED, or NOT_FOUND (the job is gone). */
static void
bs_clean_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    if (wb_frame_is(f, "DELETED"))
        c->b->cleaned++;
    else if (!wb_frame_is(f, "NOT_FOUND"))
        wb_error_reply(c, r, f, "unexpected reply in the clean-up");
}

/* A reply, by the type of its request (a beanstalkd connection sends no
 * other). */
static void
bs_reply(struct wb_conn *c, const struct wb_req *r, const struct wb_frame *f)
{
    switch (r->op) {
    case OP_PUT:
        bs_reply_put(c, r, f);
        break;
    case OP_RESERVE:
        bs_reply_reserve(c, r, f);
        break;
    case OP_DELETE:
        wb_jobs_completed(c, r, f, "DELETED");
        break;
    case OP_USE:
        bs_reply_use(c, r, f);
        break;
    case OP_WATCH:
        bs_reply_watch(c, r, f);
        break;
    case OP_CLEAN:
        bs_clean_reply(c, r, f);
        break;
    }
}

const struct wb_proto wb_proto_beanstalkd = {
    .name = "beanstalkd",
    .port = "11300",
    .greets = false,
    .produce_op = {[WL_ADD] = OP_PUT,
                   [WL_LEASE_COMPLETE] = OP_PUT,
                   [WL_CYCLE] = OP_PUT,
                   [WL_RUN] = OP_PUT,
                   [WL_SCHEDULE] = OP_PUT},
    .lease_op = OP_RESERVE,
    .complete_op = OP_DELETE,
    .init = bs_init,
    .setup = bs_setup,
    .frame = bs_frame,
    .refused = NULL,
    .reply = bs_reply,
    .produce = bs_produce,
    .lease = bs_reserve,
    .clean_prepare = bs_clean_prepare,
    .clean_send = bs_clean_send,
};
