/* cmd_auth.c - passwords for the Workq protocol (our extension, doc/protocol.md
 * "auth"): the auth command and the constant-time check; the delays of
 * failing addresses are auth_guard.c's. */
#include "lib/wq.h"
#include "workq/cmd.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/alloc.h"
#include "net/auth_guard.h"
#include "lib/log.h"
#include "net/reply.h"

struct cmd_auth {
    unsigned char digest[EVP_MAX_MD_SIZE]; /* SHA-256 of the password */
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
    const char *peer = reply_peer(out);
    uint64_t wait = auth_guard_wait_ms(ctx->auth_guard, peer, *ctx->now_ms, "auth");
    if (wait > 0) { /* not checked: refused when its address's delay ends */
        reply_pause(out, wait);
        cmd_client_error(out, "Invalid password");
        return;
    }
    if (auth_matches(ctx->auth, given)) {
        *ctx->authed = true;
        auth_guard_passed(ctx->auth_guard, peer);
        cmd_reply_ok(out);
        return;
    }
    reply_pause(out, auth_guard_failed(ctx->auth_guard, peer, *ctx->now_ms, "auth"));
    cmd_client_error(out, "Invalid password");
}
