/* tls.c - the TLS server context and the bufferevents made from it. */
#include "lib/wq.h"
#include "net/tls.h"

#include <string.h>
#include <sys/stat.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lib/alloc.h"
#include "lib/log.h"
#include "net/conn.h"

struct tls {
    SSL_CTX *ctx; /* what new connections use; each SSL holds a reference */
    char *cert, *key, *ca;
};

/* The OpenSSL errors queued for bev (NULL: this thread's), joined, into
 * out[0..n); the queue is emptied.  "" when there are none. */
static const char *
tls_errors(struct bufferevent *bev, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned long e; (e = bev ? bufferevent_get_openssl_error(bev) : ERR_get_error()) != 0;) {
        if (used + 2 >= n || ERR_GET_LIB(e) == 0)
            continue; /* drain the rest; libevent's own codes say nothing */
        if (used > 0)
            out[used++] = ';', out[used] = '\0';
        ERR_error_string_n(e, out + used, n - used);
        used += strlen(out + used);
    }
    return out;
}

/* TLS 1.2's suites: forward secret and AEAD only (no CBC, no SHA-1);
 * every client we serve (Go, Ruby, Python, Node, OpenSSL) has them. */
#define TLS12_CIPHERS                                                                              \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"     \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* Is each of t's files a regular file (after symlinks, which certificate
 * tools use)?  A FIFO there would block the loop on SIGHUP, a directory
 * fail obscurely.  NULL, or the file that is not. */
static const char *
tls_not_regular(const struct tls *t)
{
    const char *files[] = {t->cert, t->key, t->ca};
    for (size_t i = 0; i < WQ_ARRAY_LEN(files); i++) {
        struct stat st;
        if (files[i] != NULL && stat(files[i], &st) == 0 && !S_ISREG(st.st_mode))
            return files[i];
    }
    return NULL;
}

/* A new server context from t's files; NULL after logging. */
static SSL_CTX *
tls_context(const struct tls *t)
{
    char err[512];
    const char *odd = tls_not_regular(t);
    if (odd != NULL) {
        wq_log(LOG_LVL_ERROR, "TLS file is not a regular file path=%s", odd);
        return NULL;
    }
    const char *what = "cannot create a TLS context";
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    what = "cannot set the TLS 1.2 cipher suites";
    if (SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1)
        goto fail;
    /* Renegotiation costs the server a handshake at the client's whim;
     * releasing the record buffers while idle saves ~34 KiB a connection
     * (an idle TLS connection then costs about 15 KB, doc/tls.md). */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* OpenSSL 3 reports a close without close_notify as an error, which
     * libevent's dirty-shutdown rule does not recognise: make it an EOF. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    what = "cannot load the TLS certificate";
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
        goto fail;
    what = "cannot load the TLS key";
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)
        goto fail;
    what = "the TLS key does not match the certificate";
    if (SSL_CTX_check_private_key(ctx) != 1)
        goto fail;
    if (t->ca != NULL) {
        what = "cannot load the TLS client CAs";
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
        if (names == NULL || SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        /* Resumed sessions must carry a verified client too. */
        static const unsigned char sid[] = "workq";
        SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    }
    return ctx;
fail:
    wq_log(LOG_LVL_ERROR, "%s cert=%s key=%s ca=%s error=\"%s\"", what, t->cert, t->key,
           t->ca ? t->ca : "none", tls_errors(NULL, err, sizeof err));
    SSL_CTX_free(ctx);
    return NULL;
}

/* A copy of s, or NULL for NULL. */
static char *
tls_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    return memcpy(wq_malloc(n), s, n);
}

struct tls *
tls_new(const char *cert, const char *key, const char *ca)
{
    struct tls *t = wq_calloc(1, sizeof *t);
    t->cert = tls_strdup(cert);
    t->key = tls_strdup(key);
    t->ca = tls_strdup(ca);
    t->ctx = tls_context(t);
    if (t->ctx == NULL) {
        tls_free(t);
        return NULL;
    }
    return t;
}

int
tls_reload(struct tls *t)
{
    SSL_CTX *ctx = tls_context(t);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(t->ctx); /* open connections hold their own references */
    t->ctx = ctx;
    return 0;
}

void
tls_free(struct tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    wq_free(t->cert);
    wq_free(t->key);
    wq_free(t->ca);
    wq_free(t);
}

struct bufferevent *
tls_accept_bev(struct event_base *base, int fd, void *arg)
{
    struct tls *t = arg;
    SSL *ssl = SSL_new(t->ctx);
    if (ssl == NULL)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* A client that closes without close_notify (most do) has ended its
     * stream, as over plain TCP: an EOF, not an error. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

struct bufferevent *
tls_http_bev(struct event_base *base, void *arg)
{
    return tls_accept_bev(base, -1, arg);
}

void
tls_log_failure(struct bufferevent *bev, const char *peer)
{
    char text[512];
    if (tls_errors(bev, text, sizeof text)[0] != '\0')
        wq_log(LOG_LVL_INFO, "TLS connection failed peer=%s error=\"%s\"", peer, text);
    ERR_clear_error();
}

void
tls_service(struct conn_service *out, const struct conn_service *plain, struct tls *t)
{
    *out = *plain;
    out->transport = tls_accept_bev;
    out->transport_arg = t;
    out->transport_failed = tls_log_failure;
}
