/* cli_conn.c - workq-cli's connection: TCP or TLS, each wait bounded. */
#include "lib/wq.h"
#include "cli/cli_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

int64_t
cli_conn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Say why something failed, on stderr, unless c is quiet. */
static void cli_conn_say(const struct cli_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
cli_conn_say(const struct cli_conn *c, const char *fmt, ...)
{
    if (c->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* Wait up to ms (-1: forever), and never past c->deadline_ms, for c->fd to
 * become ready for events.  0, or -1 with errno ETIMEDOUT, or EINTR once
 * *c->interrupt is set. */
static int
cli_conn_wait(const struct cli_conn *c, short events, int ms)
{
    struct pollfd p = {c->fd, events, 0};
    int pr;
    for (;;) {
        int wait = ms;
        if (c->deadline_ms > 0) {
            int64_t left = WQ_MAX(c->deadline_ms - cli_conn_now_ms(), 0);
            wait = ms < 0 || left < ms ? (int)WQ_MIN(left, (int64_t)INT32_MAX) : ms;
        }
        if ((pr = poll(&p, 1, wait)) >= 0 || errno != EINTR)
            break;
        if (c->interrupt != NULL && *c->interrupt)
            return -1; /* errno is EINTR */
    }
    if (pr == 0)
        errno = ETIMEDOUT;
    return pr > 0 ? 0 : -1;
}

/* The oldest OpenSSL error queued, as text ("" if none); the queue is
 * emptied. */
static const char *
cli_conn_ssl_error(void)
{
    static char text[256];
    unsigned long e = ERR_get_error();
    text[0] = '\0';
    if (e != 0)
        ERR_error_string_n(e, text, sizeof text);
    ERR_clear_error();
    return text;
}

int
cli_conn_tls(struct cli_conn *c, const char *cacert, const char *cert, const char *key)
{
    c->tls = SSL_CTX_new(TLS_client_method());
    if (c->tls == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(c->tls, TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_CTX_set_options(c->tls, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_verify(c->tls, SSL_VERIFY_PEER, NULL);
    if ((cacert != NULL ? SSL_CTX_load_verify_locations(c->tls, cacert, NULL)
                        : SSL_CTX_set_default_verify_paths(c->tls)) != 1) {
        cli_conn_say(c, "workq-cli: cannot load CA certificates %s: %s\n",
                     cacert ? cacert : "(the system's)", cli_conn_ssl_error());
        return -1;
    }
    if ((cert == NULL) != (key == NULL)) {
        cli_conn_say(c, "workq-cli: --cert and --key go together\n");
        return -1;
    }
    if (cert != NULL && (SSL_CTX_use_certificate_chain_file(c->tls, cert) != 1 ||
                         SSL_CTX_use_PrivateKey_file(c->tls, key, SSL_FILETYPE_PEM) != 1 ||
                         SSL_CTX_check_private_key(c->tls) != 1)) {
        cli_conn_say(c, "workq-cli: cannot load client certificate %s and key %s: %s\n", cert, key,
                     cli_conn_ssl_error());
        return -1;
    }
    return 0;
fail:
    cli_conn_say(c, "workq-cli: cannot set up TLS: %s\n", cli_conn_ssl_error());
    return -1;
}

/* Connect one address without blocking longer than the time limit. */
static int
cli_conn_connect_one(const struct cli_conn *c, const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int err = 0;
        socklen_t len = sizeof err;
        struct cli_conn w = *c;
        w.fd = fd;
        if (errno != EINPROGRESS || cli_conn_wait(&w, POLLOUT, c->timeout_ms) != 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            if (err != 0)
                errno = err;
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Wait (up to ms) as the last TLS call on c, which returned rc, asks; 0 to
 * call it again, or -1 (errno ETIMEDOUT, or EPROTO for a TLS failure, with
 * the OpenSSL error still queued; 0 for the end of the stream). */
static int
cli_conn_tls_wait(struct cli_conn *c, int rc, int ms)
{
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        return cli_conn_wait(c, POLLIN, ms);
    case SSL_ERROR_WANT_WRITE:
        return cli_conn_wait(c, POLLOUT, ms);
    case SSL_ERROR_ZERO_RETURN:
        errno = 0;
        return -1;
    case SSL_ERROR_SYSCALL:
        if (errno == 0)
            errno = ECONNRESET;
        return -1;
    default:
        errno = EPROTO;
        return -1;
    }
}

/* The TLS handshake on the new connection, checking that the server's
 * certificate is for host.  0, or -1 after saying why. */
static int
cli_conn_handshake(struct cli_conn *c, const char *host, const char *addr)
{
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    c->ssl = SSL_new(c->tls);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host)
               : SSL_set1_host(c->ssl, host) && SSL_set_tlsext_host_name(c->ssl, host)) != 1) {
        cli_conn_say(c, "workq-cli: cannot set up TLS: %s\n", cli_conn_ssl_error());
        return -1;
    }
    int rc;
    while ((rc = SSL_connect(c->ssl)) != 1)
        if (cli_conn_tls_wait(c, rc, c->timeout_ms) != 0)
            break;
    if (rc == 1)
        return 0;
    long verify = SSL_get_verify_result(c->ssl);
    /* A plain-text listener answers a ClientHello with something that is
     * not a TLS record (a Workq error line, Faktory's +HI). */
    int reason = ERR_GET_REASON(ERR_peek_error());
    bool not_tls = errno == EPROTO &&
                   (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG);
    if (errno == ETIMEDOUT || errno == EINTR)
        cli_conn_say(c, "workq-cli: TLS handshake with %s failed: %s\n", addr, strerror(errno));
    else if (verify != X509_V_OK)
        cli_conn_say(c, "workq-cli: TLS handshake with %s failed: certificate verify failed: %s\n",
                     addr, X509_verify_cert_error_string(verify));
    else
        cli_conn_say(c, "workq-cli: TLS handshake with %s failed: %s\n", addr,
                     errno == EPROTO ? cli_conn_ssl_error() : "connection closed");
    if (not_tls)
        cli_conn_say(c, "workq-cli: hint: %s does not speak TLS; without --tls?\n", addr);
    ERR_clear_error();
    return -1;
}

int
cli_conn_open(struct cli_conn *c, const char *host, const char *port, const char *addr)
{
    struct addrinfo hints = {0}, *res;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        cli_conn_say(c, "workq-cli: cannot resolve %s: %s\n", host, gai_strerror(gai));
        return -1;
    }
    for (const struct addrinfo *ai = res; ai != NULL && c->fd < 0; ai = ai->ai_next)
        c->fd = cli_conn_connect_one(c, ai);
    int err = errno;
    freeaddrinfo(res);
    if (c->fd < 0) {
        cli_conn_say(c, "workq-cli: cannot connect to %s: %s\n", addr, strerror(err));
        return -1;
    }
    if (c->tls != NULL && cli_conn_handshake(c, host, addr) != 0) {
        cli_conn_close(c);
        return -1;
    }
    return 0;
}

void
cli_conn_close(struct cli_conn *c)
{
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void
cli_conn_free(struct cli_conn *c)
{
    SSL_CTX_free(c->tls);
    c->tls = NULL;
}

bool
cli_conn_peer_closed(struct cli_conn *c)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
        return false;
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

int
cli_conn_send(struct cli_conn *c, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w;
        if (c->ssl != NULL) {
            int rc = SSL_write(c->ssl, p, (int)WQ_MIN(len, (size_t)INT32_MAX));
            if (rc <= 0 && cli_conn_tls_wait(c, rc, c->timeout_ms) != 0) {
                ERR_clear_error();
                if (errno == 0)
                    errno = EPIPE;
                return -1;
            }
            w = rc > 0 ? rc : 0;
        } else {
            w = send(c->fd, p, len, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR && (c->interrupt == NULL || !*c->interrupt))
                continue;
            if (w < 0 && errno == EAGAIN) {
                if (cli_conn_wait(c, POLLOUT, c->timeout_ms) != 0)
                    return -1;
                continue;
            }
            if (w < 0)
                return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Read what is there, up to n bytes, waiting up to ms for some: the count,
 * 0 at the end of the stream, or -1 with errno. */
static ssize_t
cli_conn_recv(struct cli_conn *c, char *buf, size_t n, int ms)
{
    for (;;) {
        if (c->ssl != NULL) {
            int rc = SSL_read(c->ssl, buf, (int)WQ_MIN(n, (size_t)INT32_MAX));
            if (rc > 0)
                return rc;
            if (cli_conn_tls_wait(c, rc, ms) == 0)
                continue;
            if (errno == EPROTO)
                cli_conn_say(c, "workq-cli: TLS error: %s\n", cli_conn_ssl_error());
            return errno == 0 || errno == ECONNRESET ? 0 : -1;
        }
        ssize_t r = recv(c->fd, buf, n, 0);
        if (r >= 0)
            return r;
        if (errno == ECONNRESET)
            return 0;
        if (errno == EINTR && c->interrupt != NULL && *c->interrupt)
            return -1;
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        if (errno == EAGAIN && cli_conn_wait(c, POLLIN, ms) != 0)
            return -1;
    }
}

enum cli_reply_status
cli_conn_read_reply(struct cli_conn *c, struct cli_reply *r, int first_ms)
{
    enum cli_reply_status st = cli_reply_feed(r, NULL, 0);
    char chunk[65536];
    bool got = r->len > 0;
    while (st == CLI_REPLY_MORE) {
        ssize_t n = cli_conn_recv(c, chunk, sizeof chunk, got ? c->timeout_ms : first_ms);
        if (n < 0)
            return errno == ETIMEDOUT ? CLI_REPLY_TIMEOUT
                   : errno == EINTR   ? CLI_REPLY_INTERRUPTED
                                      : CLI_REPLY_IO_ERROR;
        if (n == 0)
            return CLI_REPLY_CLOSED;
        got = true;
        st = cli_reply_feed(r, chunk, (size_t)n);
    }
    return st;
}
