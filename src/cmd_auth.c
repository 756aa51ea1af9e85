/* cmd_auth.c - passwords for the Workq protocol (our extension, doc/protocol.md
 * "auth"): the auth command, the constant-time check, and the record of
 * failing addresses that makes each further failure from one wait longer. */
#include "wq.h"
#include "cmd.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "alloc.h"
#include "log.h"
#include "reply.h"

/* A wrong password is answered after AUTH_DELAY_MS, doubled for each
 * earlier failure from the same address, up to AUTH_DELAY_MAX_MS; an
 * address that has not failed for AUTH_FORGET_MS starts again. */
#define AUTH_DELAY_MS     250u
#define AUTH_DELAY_MAX_MS 10000u
#define AUTH_FORGET_MS    (15u * 60u * 1000u)
/* Addresses remembered; when full, the one that failed longest ago goes. */
#define AUTH_SLOTS 256

struct auth_slot {
    char addr[64]; /* the peer's host, without its port; "" when free */
    uint32_t failures;
    uint64_t last_ms;
};

struct cmd_auth {
    unsigned char digest[EVP_MAX_MD_SIZE]; /* SHA-256 of the password */
    struct auth_slot slots[AUTH_SLOTS];
};

/* SHA-256 of p[0..n) into out (32 bytes). */
static void
auth_digest(const void *p, size_t n, unsigned char *out)
{
    unsigned int len = 0;
    if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1)
        wq_panic(__FILE__, __LINE__, "SHA-256 failed");
}

struct cmd_auth *
cmd_auth_new(const char *password)
{
    struct cmd_auth *a = wq_calloc(1, sizeof *a);
    auth_digest(password, strlen(password), a->digest);
    return a;
}

void
cmd_auth_set_password(struct cmd_auth *a, const char *password)
{
    auth_digest(password, strlen(password), a->digest);
}

void
cmd_auth_free(struct cmd_auth *a)
{
    if (a != NULL)
        OPENSSL_cleanse(a->digest, sizeof a->digest);
    wq_free(a);
}

bool
cmd_auth_valid_password(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > CMD_AUTH_MAX_PASSWORD)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)
            return false;
    return true;
}

/* Compare digests, not the texts: the time taken says nothing of where
 * the texts differ, nor of the password's length. */
static bool
auth_matches(const struct cmd_auth *a, const struct wq_str *given)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    auth_digest(given->p, given->n, d);
    return CRYPTO_memcmp(d, a->digest, 32) == 0;
}

/* The host part of "HOST:PORT" or "[V6]:PORT" into out. */
static void
auth_host(const char *peer, char *out, size_t cap)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon != NULL ? (size_t)(colon - peer) : strlen(peer);
    n = WQ_MIN(n, cap - 1);
    memcpy(out, peer, n);
    out[n] = '\0';
}

/* Count a failure from host at now_ms; returns how many it has made
 * (this one included) since it last went AUTH_FORGET_MS without one. */
static uint32_t
auth_count_failure(struct cmd_auth *a, const char *host, uint64_t now_ms)
{
    struct auth_slot *slot = NULL, *oldest = &a->slots[0];
    for (size_t i = 0; i < AUTH_SLOTS && slot == NULL; i++) {
        struct auth_slot *s = &a->slots[i];
        if (s->addr[0] != '\0' && strcmp(s->addr, host) == 0)
            slot = s;
        else if (s->addr[0] == '\0' || s->last_ms < oldest->last_ms)
            oldest = s;
    }
    if (slot == NULL) {
        slot = oldest;
        snprintf(slot->addr, sizeof slot->addr, "%s", host);
        slot->failures = 0;
    }
    if (now_ms - slot->last_ms > AUTH_FORGET_MS)
        slot->failures = 0;
    slot->failures++;
    slot->last_ms = now_ms;
    return slot->failures;
}

/* A right password from host: its past failures are forgiven. */
static void
auth_forget(struct cmd_auth *a, const char *host)
{
    for (size_t i = 0; i < AUTH_SLOTS; i++)
        if (strcmp(a->slots[i].addr, host) == 0)
            memset(&a->slots[i], 0, sizeof a->slots[i]);
}

uint64_t
cmd_auth_delay_ms(uint32_t failures)
{
    uint64_t ms = AUTH_DELAY_MS;
    for (uint32_t i = 1; i < failures && ms < AUTH_DELAY_MAX_MS; i++)
        ms *= 2;
    return WQ_MIN(ms, (uint64_t)AUTH_DELAY_MAX_MS);
}

/* auth <password>: the one token after the name is the password, whatever
 * it looks like (one starting with '-' and holding '=' parses as a flag). */
void
cmd_auth(struct cmd_ctx *ctx, struct reply *out, const struct request *r)
{
    if (r->nargs + r->nflags != 1) {
        cmd_client_error(out, "Invalid command args");
        return;
    }
    if (ctx->auth == NULL) {
        cmd_client_error(out, "Authentication not enabled");
        return;
    }
    const struct wq_str *given = r->nargs == 1 ? &r->args[0] : &r->flags[0];
    char host[64];
    auth_host(reply_peer(out), host, sizeof host);
    if (auth_matches(ctx->auth, given)) {
        *ctx->authed = true;
        auth_forget(ctx->auth, host);
        cmd_reply_ok(out);
        return;
    }
    uint32_t failures = auth_count_failure(ctx->auth, host, ctx->now_ms);
    uint64_t delay = cmd_auth_delay_ms(failures);
    wq_log(LOG_LVL_WARN, "auth failed peer=%s failures=%u delay_ms=%llu", reply_peer(out), failures,
           (unsigned long long)delay);
    reply_pause(out, delay);
    cmd_client_error(out, "Invalid password");
}
