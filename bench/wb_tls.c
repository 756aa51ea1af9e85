/* wb_tls.c - workq-bench over TLS (--tls, --cacert, --cert, --key): the
 * client context, and connections that connect, then shake hands inside
 * libevent (bufferevent_openssl), reporting BEV_EVENT_CONNECTED after the
 * handshake as a plain connection does after connect. */
#include "wb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* Exit 1 after saying what failed and OpenSSL's reason. */
static void
wb_tls_die(const char *what, const char *path)
{
    char why[256] = "";
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, why, sizeof why);
    fprintf(stderr, "workq-bench: %s%s%s: %s\n", what, path ? " " : "", path ? path : "", why);
    exit(1);
}

void
wb_tls_init(struct bench *b)
{
    const struct wb_opts *o = &b->opt;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        wb_tls_die("cannot set up TLS", NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((o->cacert != NULL ? SSL_CTX_load_verify_locations(ctx, o->cacert, NULL)
                           : SSL_CTX_set_default_verify_paths(ctx)) != 1)
        wb_tls_die("cannot load CA certificates", o->cacert);
    if (o->cert != NULL && SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1)
        wb_tls_die("cannot load the client certificate", o->cert);
    if (o->key != NULL && (SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1 ||
                           SSL_CTX_check_private_key(ctx) != 1))
        wb_tls_die("cannot load the client key", o->key);
    b->tls = ctx;
}

void
wb_tls_clear(struct bench *b)
{
    SSL_CTX_free(b->tls);
}

struct bufferevent *
wb_tls_connect(struct bench *b)
{
    const struct addrinfo *ai = b->ai;
    evutil_socket_t fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        fprintf(stderr, "workq-bench: cannot connect to %s: %s\n", b->addr, strerror(errno));
        exit(1);
    }
    evutil_make_socket_nonblocking(fd);
    SSL *ssl = SSL_new(b->tls);
    unsigned char ip[16];
    const char *host = b->opt.host;
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (ssl == NULL ||
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
               : SSL_set1_host(ssl, host) && SSL_set_tlsext_host_name(ssl, host)) != 1)
        wb_tls_die("cannot set up TLS", NULL);
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        b->base, fd, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        wb_tls_die("cannot create a TLS connection", NULL);
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

const char *
wb_tls_error(struct bufferevent *bev)
{
    static char why[256];
    unsigned long e;
    why[0] = '\0';
    while ((e = bufferevent_get_openssl_error(bev)) != 0)
        if (why[0] == '\0' && ERR_GET_LIB(e) != 0)
            ERR_error_string_n(e, why, sizeof why);
    return why[0] != '\0' ? why : NULL;
}
