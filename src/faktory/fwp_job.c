/* fwp_job.c - Faktory work units: checking and keeping a pushed job, the
 * times in it, and what a failure does to it (the failure hash, the
 * backoff, the retries and the dead set). */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/backoff.h"
#include "lib/util.h"

#define FWP_DEFAULT_RETRY   25
#define FWP_DEFAULT_RESERVE 1800u
#define FWP_MIN_RESERVE     60u
#define FWP_MAX_RESERVE     86400u
#define FWP_MIN_JID         8u
#define FWP_MAX_ERRTYPE     100u
#define FWP_MAX_MESSAGE     1000u
#define FWP_MAX_BACKTRACE   50u
#define FWP_MAX_LINE_BYTES  1000u /* of one backtrace line */

void
fwp_time_format(uint64_t unix_ms, char out[32])
{
    char base[24];
    size_t n = util_format_time((int64_t)unix_ms, base); /* ...SSZ */
    snprintf(out, 32, "%.*s.%03uZ", (int)(n - 1), base, (unsigned)(unix_ms % 1000));
}

bool
fwp_time_parse(const char *s, size_t len, int64_t *unix_ms)
{
    uint32_t ns;
    if (len > 0 && (s[len - 1] == 'Z' || s[len - 1] == 'z')) {
        char copy[64];
        if (len >= sizeof copy)
            return false;
        memcpy(copy, s, len);
        copy[len - 1] = 'Z';
        if (len > 10 && (copy[10] == 't' || copy[10] == ' '))
            copy[10] = 'T';
        return util_parse_time_ns(copy, len, unix_ms, &ns) == 0;
    }
    /* a numeric offset: +hh:mm or -hh:mm in place of the Z */
    if (len < 25 || (s[len - 6] != '+' && s[len - 6] != '-') || s[len - 3] != ':')
        return false;
    int64_t oh, om;
    if (util_parse_i64(s + len - 5, 2, 0, 23, &oh) != 0 ||
        util_parse_i64(s + len - 2, 2, 0, 59, &om) != 0)
        return false;
    char copy[64];
    if (len - 5 >= sizeof copy)
        return false;
    memcpy(copy, s, len - 6);
    copy[len - 6] = 'Z';
    if (copy[10] == 't' || copy[10] == ' ')
        copy[10] = 'T';
    int64_t local;
    if (util_parse_time_ns(copy, len - 5, &local, &ns) != 0)
        return false;
    int64_t offset = (oh * 60 + om) * 60000;
    *unix_ms = s[len - 6] == '+' ? local - offset : local + offset;
    return true;
}

/* Append `,"key":value}` to text, whose last byte is the object's '}'. */
static void
fwp_text_append(char **text, size_t *len, const char *member)
{
    size_t m = strlen(member);
    *text = wq_realloc(*text, *len + m + 3);
    (*len)--; /* the closing brace */
    (*text)[(*len)++] = ',';
    memcpy(*text + *len, member, m);
    *len += m;
    (*text)[(*len)++] = '}';
    (*text)[*len] = '\0';
}

bool
fwp_queue_name_valid(const char *name, size_t len)
{
    if (len == 0 || len > FJOB_MAX_QUEUE)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* Check the fields of work unit job; NULL or the error (in err). */
static const char *
fwp_job_check(const struct fwp_ctx *f, json_t *job, struct fjob_spec *spec, char err[256])
{
    size_t jid_len = 0, queue_len = 0;
    const char *jid = fwp_json_str(job, "jid", &jid_len);
    const char *type = fwp_json_str(job, "jobtype", NULL);
    json_t *queue = json_object_get(job, "queue");
    json_t *priority = json_object_get(job, "priority");
    json_t *reserve = json_object_get(job, "reserve_for");
    json_t *retry = json_object_get(job, "retry");
    json_t *at = json_object_get(job, "at");
    if (jid == NULL || jid_len < FWP_MIN_JID)
        return "jobs must have a reasonable jid parameter";
    if (jid_len > FJOB_MAX_JID)
        return "jid too long (at most 255 bytes)";
    if (memchr(jid, '\0', jid_len) != NULL)
        return "jid must not contain NUL";
    if (type == NULL || type[0] == '\0')
        return "jobs must have a jobtype parameter";
    if (!json_is_array(json_object_get(job, "args")))
        return "jobs must have an args parameter";
    const char *qname = "default";
    queue_len = 7;
    if (queue != NULL && !json_is_null(queue)) {
        if (!json_is_string(queue))
            return "queue must be a string";
        if (json_string_length(queue) > 0) {
            qname = json_string_value(queue);
            queue_len = json_string_length(queue);
        }
    }
    if (!fwp_queue_name_valid(qname, queue_len))
        return "queue names must match " FWP_QUEUE_PATTERN " (at most 255 bytes)";
    int64_t prio = 5;
    if (priority != NULL && !json_is_null(priority)) {
        if (!fwp_json_int(priority, &prio) || prio < FJOB_PRIORITY_MIN || prio > FJOB_PRIORITY_MAX)
            return "priority must be an integer from 1 to 9";
    }
    int64_t rf = 0;
    if (reserve != NULL && !json_is_null(reserve)) {
        if (!fwp_json_int(reserve, &rf) || rf < 0)
            return "reserve_for must be a whole number of seconds";
        if (rf > FWP_MAX_RESERVE)
            return "jobs cannot be reserved for more than one day";
    }
    int64_t retry_value;
    if (retry != NULL && !json_is_null(retry) && !fwp_json_int(retry, &retry_value))
        return "retry must be an integer";
    int64_t at_ms = 0;
    if (at != NULL && !json_is_null(at)) {
        if (!json_is_string(at))
            return "at must be an RFC 3339 time";
        if (json_string_length(at) > 0 &&
            !fwp_time_parse(json_string_value(at), json_string_length(at), &at_ms)) {
            snprintf(err, 256, "invalid timestamp for 'at': \"%.64s\"", json_string_value(at));
            return err;
        }
        at_ms = WQ_MAX(at_ms, 1);
    }
    *spec = (struct fjob_spec){
        .jid = {jid, jid_len},
        .queue = {qname, queue_len},
        .priority = (uint8_t)prio,
        .reserve_s = rf == 0 ? FWP_DEFAULT_RESERVE : (uint32_t)WQ_MAX(rf, FWP_MIN_RESERVE),
        .at_ms = at_ms,
    };
    return NULL;
}

const char *
fwp_job_prepare(const struct fwp_ctx *f, json_t *job, const char *raw, size_t raw_len,
                struct fjob_spec *spec, char **text, char err[256])
{
    *text = NULL;
    if (!json_is_object(job))
        return "a job must be a JSON object";
    const char *e = fwp_job_check(f, job, spec, err);
    if (e != NULL)
        return e;
    /* Keep the client's bytes where nothing must go: the fields a client
     * may not set are dropped by writing the job anew. */
    json_t *queue = json_object_get(job, "queue");
    bool rewrite = json_object_get(job, "enqueued_at") != NULL ||
                   json_object_get(job, "failure") != NULL ||
                   (queue != NULL && (!json_is_string(queue) || json_string_length(queue) == 0));
    size_t len;
    if (rewrite) {
        /* written anew: only from a decoding that kept every integer one */
        json_t *exact = json_loadb(raw, raw_len, JSON_ALLOW_NUL, NULL);
        json_decref(exact);
        if (exact == NULL)
            return "a job with enqueued_at or failure must not hold integers beyond 64 bits";
        json_object_del(job, "enqueued_at");
        json_object_del(job, "failure");
        if (queue != NULL && (!json_is_string(queue) || json_string_length(queue) == 0))
            json_object_del(job, "queue");
        char *dump = json_dumps(job, JSON_COMPACT);
        len = strlen(dump);
        *text = wq_malloc(len + 1);
        memcpy(*text, dump, len + 1);
        free(dump);
    } else {
        /* JSON's white space around the object is not kept: the text ends
         * in its closing brace, where server fields are appended */
        while (raw_len > 0 && strchr(" \t\r\n", raw[0]) != NULL)
            raw++, raw_len--;
        while (raw_len > 0 && strchr(" \t\r\n", raw[raw_len - 1]) != NULL)
            raw_len--;
        *text = wq_malloc(raw_len + 1);
        memcpy(*text, raw, raw_len);
        (*text)[raw_len] = '\0';
        len = raw_len;
    }
    if (json_object_get(job, "queue") == NULL)
        fwp_text_append(text, &len, "\"queue\":\"default\"");
    if (json_object_get(job, "retry") == NULL)
        fwp_text_append(text, &len, "\"retry\":25");
    if (json_object_get(job, "created_at") == NULL) {
        char now[32], member[48];
        fwp_time_format(*f->now_ms, now);
        snprintf(member, sizeof member, "\"created_at\":\"%s\"", now);
        fwp_text_append(text, &len, member);
    }
    if (len > f->max_job) {
        snprintf(err, 256, "job too large (at most %zu bytes)", f->max_job);
        return err;
    }
    spec->text = *text;
    spec->text_len = len;
    return NULL;
}

const char *
fwp_job_push(struct fwp_ctx *f, const char *raw, size_t len, json_t *job, char err[256])
{
    struct fjob_spec spec;
    char *text;
    const char *e = fwp_job_prepare(f, job, raw, len, &spec, &text, err);
    if (e == NULL) {
        switch (fjobs_push(f->fjobs, &spec, *f->now_ms)) {
        case CORE_OK:
            break;
        case CORE_DUPLICATE:
            snprintf(err, 256, "job %.*s already exists", (int)spec.jid.n, spec.jid.p);
            e = err;
            break;
        default:
            e = "Out of memory";
            break;
        }
    }
    wq_free(text);
    return e;
}

/* ---- failures ---- */

/* xorshift64*. */
static uint64_t
fwp_random(struct fwp_ctx *f)
{
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 0x2545F4914F6CDD1DULL;
}

/* The length of s[0..n) cut to at most max bytes on a character
 * boundary (UTF-8). */
static size_t
fwp_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* s trimmed of white space, then cut to at most max bytes on a character
 * boundary; "unknown" when empty. */
static json_t *
fwp_failure_text(const char *s, size_t max)
{
    if (s == NULL)
        s = "";
    size_t n = strlen(s);
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    n = fwp_utf8_cut(s, n, max);
    return n == 0 ? json_string("unknown") : json_stringn(s, n);
}

/* A backtrace line, cut to FWP_MAX_LINE_BYTES on a character boundary. */
static json_t *
fwp_failure_line(const char *s, size_t n)
{
    return json_stringn(s, fwp_utf8_cut(s, n, FWP_MAX_LINE_BYTES));
}

/* The failure hash after this failure: Faktory's fields, the retry count
 * growing from 0 with each failure after the first. */
static json_t *
fwp_failure_update(json_t *job, json_t *old, int64_t retry, uint64_t now_ms, const char *errtype,
                   const char *message, json_t *backtrace)
{
    json_t *fail = json_object();
    char now[32];
    fwp_time_format(now_ms, now);
    int64_t count = 0, remaining = retry;
    const char *failed_at = now;
    if (json_is_object(old)) {
        json_t *c = json_object_get(old, "retry_count");
        json_t *r = json_object_get(old, "remaining");
        count = !fwp_json_int(c, &count) ? 0 : count < INT64_MAX ? count + 1 : count;
        if (!fwp_json_int(r, &remaining))
            remaining = retry;
        if (remaining > 0)
            remaining--;
        const char *first = fwp_json_str(old, "failed_at", NULL);
        if (first != NULL)
            failed_at = first;
    }
    json_object_set_new(fail, "failed_at", json_string(failed_at));
    json_object_set_new(fail, "message", fwp_failure_text(message, FWP_MAX_MESSAGE));
    json_object_set_new(fail, "errtype", fwp_failure_text(errtype, FWP_MAX_ERRTYPE));
    /* the job's `backtrace` says how many lines to keep */
    json_t *keep = json_object_get(job, "backtrace");
    int64_t want = 0;
    size_t lines = fwp_json_int(keep, &want) && want > 0
                       ? (size_t)WQ_MIN(want, (int64_t)FWP_MAX_BACKTRACE)
                       : 0;
    if (lines > 0 && json_is_array(backtrace) && json_array_size(backtrace) > 0) {
        json_t *bt = json_array();
        for (size_t i = 0; i < json_array_size(backtrace) && i < lines; i++) {
            json_t *line = json_array_get(backtrace, i);
            if (json_is_string(line))
                json_array_append_new(
                    bt, fwp_failure_line(json_string_value(line), json_string_length(line)));
        }
        json_object_set_new(fail, "backtrace", bt);
    }
    json_object_set_new(fail, "retry_count", json_integer(count));
    json_object_set_new(fail, "remaining", json_integer(remaining));
    return fail;
}

/* The job's text with fail as its failure hash: the hash is always the
 * last member, so an earlier one is cut off and the rest kept as it is. */
static char *
fwp_text_with_failure(const struct job *j, bool had_failure, json_t *fail, size_t *len)
{
    size_t keep = j->payload_len - 1; /* without the closing brace */
    if (had_failure) {
        const char *mark = ",\"failure\":{";
        for (size_t i = j->payload_len - strlen(mark) + 1; i-- > 0;)
            if (memcmp(j->payload + i, mark, strlen(mark)) == 0) {
                keep = i;
                break;
            }
    }
    char *hash = json_dumps(fail, JSON_COMPACT);
    size_t h = strlen(hash);
    char *text = wq_malloc(keep + h + 14);
    memcpy(text, j->payload, keep);
    *len = keep + (size_t)sprintf(text + keep, ",\"failure\":%s}", hash);
    free(hash);
    return text;
}

bool
fwp_job_fail(struct fwp_ctx *f, struct job *j, const char *errtype, const char *message,
             json_t *backtrace, bool may_refuse)
{
    uint64_t now = *f->now_ms;
    json_t *job = fwp_json_load(j->payload, j->payload_len, JSON_ALLOW_NUL, NULL);
    int64_t retry = FWP_DEFAULT_RETRY;
    fwp_json_int(json_object_get(job, "retry"), &retry);
    if (retry == 0) { /* no retry, no death: gone */
        fjobs_discard(f->fjobs, j);
        json_decref(job);
        return true;
    }
    json_t *old = json_object_get(job, "failure");
    json_t *fail = fwp_failure_update(job, old, retry, now, errtype, message, backtrace);
    int64_t count = json_integer_value(json_object_get(fail, "retry_count"));
    uint64_t at = 0;
    if (count < retry) {
        at = backoff_faktory_at(now, (uint64_t)count, fwp_random(f) % 30, f->backoff_unit_ms);
        char next[32];
        fwp_time_format(at, next);
        json_object_set_new(fail, "next_at", json_string(next));
    }
    size_t len;
    char *text = fwp_text_with_failure(j, json_is_object(old), fail, &len);
    /* what the failure adds to the text counts toward -max-memory */
    bool fits =
        !may_refuse || len <= j->payload_len || !core_over_limit(f->core, len - j->payload_len);
    if (fits && count < retry)
        fjobs_retry(f->fjobs, j, text, len, at);
    else if (fits)
        fjobs_kill(f->fjobs, j, text, len);
    wq_free(text);
    json_decref(fail);
    json_decref(job);
    return fits;
}

void
fwp_reservation_expired(void *arg, struct fjobs *fs, struct job *j)
{
    /* the server's own failure: never refused (it adds little) */
    fwp_job_fail(arg, j, "ReservationExpired", "Faktory job reservation expired", NULL, false);
}
