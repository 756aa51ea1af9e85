/* fwp_cmd.c - the Faktory job commands: PUSH, PUSHB, FETCH, ACK, FAIL. */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "engine/workers.h"

#define FWP_FETCH_WAIT_MS 2000u

/* Parse a command's JSON argument: NULL, with the error answered. */
static json_t *
fwp_parse(struct reply *out, struct fwp_args a)
{
    json_error_t e;
    json_t *v = fwp_json_load(a.p, a.n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
    if (v == NULL)
        fwp_errorf(out, "invalid JSON: %s", e.text);
    return v;
}

void
fwp_push(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_t *job = fwp_parse(out, a);
    if (job == NULL)
        return;
    char err[256];
    const char *e = fwp_refuse_readonly(f, out) ? "" : fwp_job_push(f, a.p, a.n, job, err);
    if (e == NULL)
        fwp_ok(out);
    else if (e[0] != '\0')
        fwp_error(out, e);
    json_decref(job);
}

/* Skip white space and one sep (if there) from p; returns where it stops. */
static const char *
fwp_skip(const char *p, const char *end, char sep)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    if (p < end && *p == sep)
        p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* PUSHB [job, ...]: each job pushed on its own, from its own bytes (found
 * by decoding the elements one by one); the reply maps the jids of those
 * refused to the reasons. */
void
fwp_pushb(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_t *jobs = fwp_parse(out, a);
    if (jobs == NULL)
        return;
    if (!json_is_array(jobs)) {
        fwp_error(out, "PUSHB takes a JSON array of jobs");
    } else if (!fwp_refuse_readonly(f, out)) {
        json_t *refused = json_object();
        const char *p = fwp_skip(a.p, a.p + a.n, '['), *end = a.p + a.n;
        for (size_t i = 0; i < json_array_size(jobs); i++) {
            json_error_t e;
            json_t *job = fwp_json_load(p, (size_t)(end - p),
                                        JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL | JSON_DECODE_ANY |
                                            JSON_REJECT_DUPLICATES,
                                        &e);
            size_t used = job != NULL ? (size_t)e.position : 0;
            char err[256];
            const char *why =
                job == NULL ? "a job must be a JSON object" : fwp_job_push(f, p, used, job, err);
            if (why != NULL) {
                const char *jid = json_is_object(job) ? fwp_json_str(job, "jid", NULL) : NULL;
                json_object_set_new(refused, jid != NULL ? jid : "", json_string(why));
            }
            json_decref(job);
            p = fwp_skip(p + used, end, ',');
        }
        fwp_bulk_json(out, refused, JSON_SORT_KEYS);
        json_decref(refused);
    }
    json_decref(jobs);
}

/* "$<n>\r\n<job>\r\n": the kept text with enqueued_at added. */
static void
fwp_reply_job(struct reply *out, const struct job *j)
{
    char tail[64], head[32];
    char when[32];
    fwp_time_format(fjob_enqueued_ms(j), when);
    int t = snprintf(tail, sizeof tail, ",\"enqueued_at\":\"%s\"}\r\n", when);
    int h = snprintf(head, sizeof head, "$%zu\r\n", (size_t)j->payload_len - 1 + (size_t)t - 2);
    reply_bytes(out, head, (size_t)h);
    /* copied: a shared payload must be sent whole (its length frees it) */
    reply_bytes(out, j->payload, j->payload_len - 1);
    reply_bytes(out, tail, (size_t)t);
}

/* waiter_done_fn of a parked FETCH. */
static void
fwp_fetch_done(void *owner, enum waiter_outcome how, const struct core *c, struct job *j)
{
    struct reply *out = owner;
    if (how == WAITER_GOT)
        fwp_reply_job(out, j);
    else
        reply_str(out, "$-1\r\n");
    reply_wake(out);
}

/* FETCH [queue ...]: the first job of the first queue that has one,
 * waiting up to 2 s; none for a worker asked to be quiet. */
void
fwp_fetch(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    struct wq_str names[FJOB_MAX_FETCH];
    size_t n = 0;
    const char *p = a.p, *end = a.p + a.n;
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        size_t len = sp != NULL ? (size_t)(sp - p) : (size_t)(end - p);
        if (len == 0 || len > FJOB_MAX_QUEUE) {
            fwp_error(out, len == 0 ? "FETCH: empty queue name" : "FETCH: queue name too long");
            return;
        }
        if (!fwp_queue_name_valid(p, len)) {
            fwp_errorf(out, "FETCH: queue names must match %s", FWP_QUEUE_PATTERN);
            return;
        }
        if (n == FJOB_MAX_FETCH) {
            fwp_errorf(out, "FETCH takes at most %u queues", FJOB_MAX_FETCH);
            return;
        }
        names[n++] = (struct wq_str){p, len};
        p += len + (sp != NULL);
    }
    if (n == 0)
        names[n++] = (struct wq_str){"default", 7};
    if (st->worker != NULL && st->worker->state != WORKER_RUNNING)
        n = 0; /* quiet: wait, then nothing */
    else if (fwp_refuse_readonly(f, out))
        return;
    struct job *j;
    struct waiter *w;
    switch (fjobs_fetch(f->fjobs, names, n, FWP_FETCH_WAIT_MS, *f->now_ms, fwp_fetch_done, out, &j,
                        &w)) {
    case CORE_OK:
        fwp_reply_job(out, j);
        break;
    case CORE_PARKED:
        reply_park(out, w);
        break;
    default:
        reply_str(out, "$-1\r\n");
        break;
    }
}

/* ACK {"jid":"..."}: the job is done.  As Faktory's server does, a jid
 * that is not being worked on is answered OK too. */
void
fwp_ack(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_t *ack = fwp_json_load(a.p, a.n, 0, NULL);
    size_t len;
    const char *jid = json_is_object(ack) ? fwp_json_str(ack, "jid", &len) : NULL;
    if (jid == NULL) {
        fwp_errorf(out, "invalid ACK %.*s", (int)WQ_MIN(a.n, 128u), a.p);
    } else if (!fwp_refuse_readonly(f, out)) {
        fjobs_ack(f->fjobs, jid, len);
        fwp_ok(out);
    }
    json_decref(ack);
}

/* FAIL {"jid", "errtype", "message", "backtrace"}: the job failed; it is
 * retried later, killed or discarded as its retry policy says. */
void
fwp_fail(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_t *fail = fwp_json_load(a.p, a.n, JSON_ALLOW_NUL, NULL);
    size_t len = 0;
    const char *jid = json_is_object(fail) ? fwp_json_str(fail, "jid", &len) : NULL;
    struct job *j = jid != NULL ? fjobs_find(f->fjobs, jid, len) : NULL;
    if (!json_is_object(fail)) {
        fwp_errorf(out, "invalid FAIL %.*s", (int)WQ_MIN(a.n, 128u), a.p);
    } else if (jid == NULL || len == 0) {
        fwp_error(out, "missing JID");
    } else if (fwp_refuse_readonly(f, out)) {
        /* answered */
    } else if (j == NULL || fjobs_state(f->fjobs, j) != FJOB_WORKING) {
        fwp_errorf(out, "Job not found %.*s", (int)WQ_MIN(len, 255u), jid);
    } else if (!fwp_job_fail(f, j, fwp_json_str(fail, "errtype", NULL),
                             fwp_json_str(fail, "message", NULL),
                             json_object_get(fail, "backtrace"), true)) {
        fwp_error(out, "Out of memory"); /* the job is still working */
    } else {
        f->fjobs->stats.failures++;
        f->fjobs->stats.processed++; /* as Faktory counts */
        fwp_ok(out);
    }
    json_decref(fail);
}
