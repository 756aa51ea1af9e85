/* fwp.c - the Faktory Work Protocol: line framing, the handshake (HI,
 * HELLO, the password), and the dispatch of an identified connection's
 * commands (to fwp_cmd.c, fwp_admin.c, fwp_mutate.c). */
#include "lib/wq.h"
#include "faktory/fwp.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/random.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "net/auth_guard.h"
#include "net/conn.h"
#include "engine/core.h"
#include "faktory/fwp_internal.h"
#include "net/reply.h"
#include "lib/util.h"
#include "engine/workers.h"

/* The longest first line: a HELLO is a few hundred bytes; a connection
 * that has not identified itself may not make the server hold a job-sized
 * line. */
#define FWP_HELLO_MAX_LINE 16384u

/* Faktory's server asks for 4,000 to 8,095 hash iterations: about a
 * millisecond of a client's time. */
#define FWP_ITERATIONS_MIN  4000u
#define FWP_ITERATIONS_SPAN 4096u

void
fwp_password_hash(const char *password, const char *salt, uint32_t iterations, char out[65])
{
    unsigned char digest[32];
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL)
        wq_panic(__FILE__, __LINE__, "out of memory hashing a password");
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    EVP_DigestUpdate(md, password, strlen(password));
    EVP_DigestUpdate(md, salt, strlen(salt));
    EVP_DigestFinal_ex(md, digest, NULL);
    for (uint32_t i = 1; i < iterations; i++) {
        EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        EVP_DigestUpdate(md, digest, sizeof digest);
        EVP_DigestFinal_ex(md, digest, NULL);
    }
    EVP_MD_CTX_free(md);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

/* ---- the handshake ---- */

static void
fwp_open(void *ctx, void *state, struct reply *out)
{
    const struct fwp_ctx *f = ctx;
    struct fwp_state *st = state;
    char hi[96];
    if (f->password == NULL) {
        snprintf(hi, sizeof hi, "+HI {\"v\":2}\r\n");
    } else {
        uint64_t r[2] = {0, 0};
        if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r[0] = util_now_ms(), r[1] = (uint64_t)(uintptr_t)st;
        st->iterations = FWP_ITERATIONS_MIN + (uint32_t)(r[0] % FWP_ITERATIONS_SPAN);
        snprintf(st->salt, sizeof st->salt, "%llx", (unsigned long long)(r[1] >> 1));
        snprintf(hi, sizeof hi, "+HI {\"v\":2,\"i\":%u,\"s\":\"%s\"}\r\n", st->iterations,
                 st->salt);
    }
    reply_str(out, hi);
}

/* Register the worker a HELLO names (wid), with its details. */
static void
fwp_hello_worker(const struct fwp_ctx *f, struct fwp_state *st, json_t *hello, const char *wid,
                 size_t wid_len, const char *address)
{
    const char *hostname = fwp_json_str(hello, "hostname", NULL);
    int64_t pid = 0;
    fwp_json_int(json_object_get(hello, "pid"), &pid);
    json_t *labels = json_object_get(hello, "labels");
    char *labels_text = json_is_array(labels) ? json_dumps(labels, JSON_COMPACT) : NULL;
    st->worker =
        workers_attach(f->core->workers, wid, wid_len, hostname ? hostname : "", pid,
                       labels_text ? labels_text : "[]", WORKER_FAKTORY, address, *f->now_ms);
    snprintf(st->worker->last_command, sizeof st->worker->last_command, "HELLO");
    free(labels_text);
}

/* Is s shaped as a pwdhash, 64 lowercase hex digits?  Nothing else can
 * match, so it is refused without hashing. */
static bool
fwp_pwdhash_shaped(const char *s)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (n == 64 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

/* The HELLO's password check: NULL if it passes (or none is asked), else
 * the error, out paused first for its address's delay (auth_guard.h: no
 * hash is computed while the address waits, nor for a pwdhash that cannot
 * be one).  As Faktory's server does, a client whose "v" is absent or
 * below 2 hashes once, whatever the greeting asked for. */
static const char *
fwp_hello_password(const struct fwp_ctx *f, const struct fwp_state *st, json_t *hello,
                   struct reply *out)
{
    if (f->password == NULL)
        return NULL; /* pwdhash, even "", is ignored */
    const char *peer = reply_peer(out);
    uint64_t wait = auth_guard_wait_ms(f->auth_guard, peer, *f->now_ms, "faktory auth");
    if (wait > 0) {
        reply_pause(out, wait);
        return "Invalid password";
    }
    const char *got = fwp_json_str(hello, "pwdhash", NULL);
    bool ok = false;
    if (got != NULL && fwp_pwdhash_shaped(got)) {
        json_t *v = json_object_get(hello, "v");
        uint32_t rounds = json_is_number(v) && json_number_value(v) >= 2 ? st->iterations : 1;
        char want[65];
        fwp_password_hash(f->password, st->salt, rounds, want);
        ok = CRYPTO_memcmp(got, want, 64) == 0;
    }
    if (ok) {
        auth_guard_passed(f->auth_guard, peer);
        return NULL;
    }
    reply_pause(out, auth_guard_failed(f->auth_guard, peer, *f->now_ms, "faktory auth"));
    return "Invalid password";
}

/* The first line: "HELLO {...}", with the right password.  Like Faktory's
 * server, a connection that sends anything else, or JSON that is not an
 * object, is closed without a reply.  A HELLO without a wid (absent, null
 * or "") is a connection of a process that is not a worker: a producer. */
static void
fwp_hello(const struct fwp_ctx *f, struct fwp_state *st, struct reply *out, const char *line,
          size_t n)
{
    json_t *hello = NULL;
    if (n > 6 && memcmp(line, "HELLO {", 7) == 0)
        hello = fwp_json_load(line + 6, n - 6, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(hello)) {
        json_decref(hello);
        reply_close(out);
        return;
    }
    json_t *v = json_object_get(hello, "v");
    json_t *wid_v = json_object_get(hello, "wid");
    size_t wid_len = json_is_string(wid_v) ? json_string_length(wid_v) : 0;
    const char *wid = wid_len > 0 ? json_string_value(wid_v) : NULL;
    const char *error = NULL;
    if (v != NULL && !json_is_null(v) && !json_is_number(v))
        error = "Unsupported protocol version";
    else
        error = fwp_hello_password(f, st, hello, out);
    if (error == NULL && wid_v != NULL && !json_is_null(wid_v) &&
        (!json_is_string(wid_v) || (wid != NULL && !workers_valid_id(wid, wid_len))))
        error = "Invalid wid";
    if (error != NULL) {
        fwp_error(out, error);
        reply_close(out);
    } else {
        if (wid != NULL)
            fwp_hello_worker(f, st, hello, wid, wid_len, reply_peer(out));
        st->stage = FWP_IDENTIFIED;
        reply_str(out, "+OK\r\n");
    }
    json_decref(hello);
}

/* ---- commands ---- */

/* BEAT's JSON as Faktory's server reads it: an object whose "wid" and
 * "current_state" are strings and "rss_kb" an integer, each of them null
 * or absent if not; the wid is "" when absent. */
static bool
fwp_beat_read(json_t *beat, struct wq_str *wid, const char **state)
{
    json_t *w = json_object_get(beat, "wid"), *s = json_object_get(beat, "current_state");
    json_t *rss = json_object_get(beat, "rss_kb");
    int64_t kb;
    if (!json_is_object(beat) || !(w == NULL || json_is_null(w) || json_is_string(w)) ||
        !(s == NULL || json_is_null(s) || json_is_string(s)) ||
        !(rss == NULL || json_is_null(rss) || fwp_json_int(rss, &kb)))
        return false;
    *wid = json_is_string(w) ? (struct wq_str){json_string_value(w), json_string_length(w)}
                             : (struct wq_str){"", 0};
    *state = json_is_string(s) ? json_string_value(s) : "";
    return true;
}

/* BEAT {"wid":"...","current_state":"..."}: the worker lives, and may say
 * it is quiet or terminating (a state it keeps: running does not undo
 * it); answer the state it is in. */
static void
fwp_beat(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, struct fwp_args a)
{
    json_t *beat = fwp_json_load(a.p, a.n, 0, NULL);
    struct wq_str wid;
    const char *state;
    char msg[WORKERS_MAX_ID + 32];
    struct worker *k = NULL;
    if (!fwp_beat_read(beat, &wid, &state)) {
        snprintf(msg, sizeof msg, "invalid BEAT %.*s", (int)WQ_MIN(a.n, 64u), a.p);
        fwp_error(out, msg);
    } else if ((k = workers_find(f->core->workers, wid.p, wid.n)) == NULL) {
        snprintf(msg, sizeof msg, "unknown worker %.*s", (int)WQ_MIN(wid.n, WORKERS_MAX_ID), wid.p);
        fwp_error(out, msg);
    } else {
        k->last_beat_ms = *f->now_ms;
        if (strcmp(state, "quiet") == 0)
            workers_signal(k, WORKER_QUIET);
        else if (strcmp(state, "terminate") == 0)
            workers_signal(k, WORKER_TERMINATE);
        if (k->state == WORKER_RUNNING) {
            reply_str(out, "+OK\r\n");
        } else {
            int m = snprintf(msg, sizeof msg, "{\"state\":\"%s\"}", worker_state_name(k->state));
            fwp_bulk(out, msg, (size_t)m);
        }
    }
    json_decref(beat);
}

typedef void (*fwp_handler_fn)(struct fwp_ctx *f, struct fwp_state *st, struct reply *out,
                               struct fwp_args a);

/* The commands of an identified connection: name, handler, and whether it
 * takes arguments (2: may or may not). */
static const struct fwp_command {
    const char *name;
    fwp_handler_fn handler;
    int args;
} fwp_commands[] = {
    {"PUSH", fwp_push, 1},   {"PUSHB", fwp_pushb, 1}, {"FETCH", fwp_fetch, 2},
    {"ACK", fwp_ack, 1},     {"FAIL", fwp_fail, 1},   {"BEAT", fwp_beat, 1},
    {"INFO", fwp_info, 0},   {"FLUSH", fwp_flush, 0}, {"MUTATE", fwp_mutate, 1},
    {"QUEUE", fwp_queue, 1},
};

/* A command line of an identified connection. */
static void
fwp_command(struct fwp_ctx *f, struct fwp_state *st, struct reply *out, const char *line, size_t n)
{
    const char *space = memchr(line, ' ', n);
    size_t verb = space ? (size_t)(space - line) : n;
    struct fwp_args a = {space ? space + 1 : line + n, 0};
    a.n = n - (size_t)(a.p - line);
    f->commands++;
    if (st->worker != NULL)
        snprintf(st->worker->last_command, sizeof st->worker->last_command, "%.*s",
                 (int)WQ_MIN(verb, sizeof st->worker->last_command - 1), line);
    if (verb == 3 && memcmp(line, "END", 3) == 0 && space == NULL) {
        reply_close(out); /* at once, no reply: the client waits for the close */
        return;
    }
    for (size_t i = 0; i < WQ_ARRAY_LEN(fwp_commands); i++) {
        const struct fwp_command *c = &fwp_commands[i];
        if (strlen(c->name) != verb || memcmp(c->name, line, verb) != 0)
            continue;
        if ((c->args == 1 && a.n == 0) || (c->args == 0 && space != NULL))
            fwp_errorf(out, "invalid %s", c->name);
        else
            c->handler(f, st, out, a);
        return;
    }
    fwp_errorf(out, "unknown command %.*s", (int)WQ_MIN(verb, 64u), line);
}

/* ---- the module ---- */

/* One line of in[0..len): CR LF or LF ends it.  The bytes of an
 * unfinished line already searched for its end are not searched again. */
static size_t
fwp_handle(void *ctx, void *state, struct reply *out, const char *in, size_t len, size_t *need)
{
    struct fwp_ctx *f = ctx;
    struct fwp_state *st = state;
    size_t max =
        st->stage == FWP_NOT_IDENTIFIED ? WQ_MIN(f->max_line, FWP_HELLO_MAX_LINE) : f->max_line;
    size_t from = WQ_MIN(st->scanned, len);
    const char *lf = memchr(in + from, '\n', WQ_MIN(len, max + 2) - WQ_MIN(from, max + 2));
    *need = 0;
    if (lf == NULL && len <= max + 1) {
        st->scanned = len;
        *need = len + 1;
        return 0;
    }
    st->scanned = 0;
    size_t n = lf != NULL ? (size_t)(lf - in) : len;
    if (n > 0 && in[n - 1] == '\r')
        n--;
    if (lf == NULL || n > max) {
        fwp_error(out, "Line too long");
        reply_close(out);
        return len;
    }
    if (st->stage == FWP_NOT_IDENTIFIED)
        fwp_hello(f, st, out, in, n);
    else
        fwp_command(f, st, out, in, n);
    return (size_t)(lf - in) + 1;
}

/* A parked command's client left: a MUTATE under way, or a FETCH. */
static void
fwp_cancel(void *ctx, void *waiting)
{
    struct fwp_ctx *f = ctx;
    if (!fwp_mutation_cancel(f, waiting))
        fjobs_cancel(f->fjobs, waiting);
}

/* Identified clients are never closed for idleness: a Faktory worker that
 * is closed on without a quiet or terminate BEAT before counts it a fault. */
static bool
fwp_may_idle_close(void *ctx, void *state)
{
    const struct fwp_state *st = state;
    return st->stage == FWP_NOT_IDENTIFIED;
}

static void
fwp_close(void *ctx, void *state)
{
    const struct fwp_ctx *f = ctx;
    struct fwp_state *st = state;
    if (st->worker != NULL)
        workers_detach(f->core->workers, st->worker);
    st->worker = NULL;
}

const struct conn_proto fwp_protocol = {
    .name = "faktory",
    .state_size = sizeof(struct fwp_state),
    .open = fwp_open,
    .handle = fwp_handle,
    .cancel = fwp_cancel,
    .close = fwp_close,
    .may_idle_close = fwp_may_idle_close,
};
