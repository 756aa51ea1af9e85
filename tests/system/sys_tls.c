/* sys_tls.c - system tests of TLS on the listeners (tls:// addresses,
 * -tls-cert, -tls-key, -tls-ca; doc/security.md): the real workq-server and
 * an OpenSSL client, byte-exact.  A Workq job's whole life over TLS beside a
 * plain listener, Faktory and the metrics endpoint over TLS, client
 * certificates required, a client that trusts another CA, TLS 1.1 refused,
 * the certificate re-read on SIGHUP while a connection stays open, openssl
 * s_client and workq-cli against the listener, and the start-up errors.
 * Certificates are made here, at test time, with the openssl command. */
#include "config.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "systest.h"

#define EX_CONFIG_STATUS 78
#define ID1              "6ba7b810-9dad-11d1-80b4-00c04fd430c1"

/* The directory of this run's certificates (made once, in the runner). */
static char certs[32];

/* path of a file of the certificate directory (one of a ring of buffers). */
static const char *
cert(const char *name)
{
    return f("%s/%s", certs, name);
}

/* Make the test PKI: two CAs, server certificates "localhost" and
 * "second" from ca, a client certificate from ca and one from ca2.  Runs
 * before the suite: false after saying why. */
static bool
make_certs(void)
{
    strcpy(certs, "/tmp/wq-tls-XXXXXX");
    if (mkdtemp(certs) == NULL) {
        perror("mkdtemp");
        return false;
    }
    const char *script =
        "set -e; cd \"$WQ_CERTS\"\n"
        "key() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        " -keyout $1.key -out $1.csr -subj /CN=$2 2>/dev/null; }\n"
        "ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        " -keyout $1.key -out $1.pem -days 2 -subj /CN=$1 2>/dev/null; }\n"
        "sign() { openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial"
        " -out $1.pem -days 2 -extfile ext.cnf 2>/dev/null; }\n"
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext.cnf\n"
        "ca ca; ca ca2\n"
        "key srv localhost; sign srv ca\n"
        "key second second; sign second ca\n"
        "key client client; sign client ca\n"
        "key rogue rogue; sign rogue ca2\n";
    setenv("WQ_CERTS", certs, 1);
    if (system(script) != 0) {
        fprintf(stderr, "cannot make test certificates with openssl in %s\n", certs);
        return false;
    }
    return true;
}

/* Copy file from to to (replacing it). */
static void
copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = systest_slurp(from, &len);
    FILE *fp = fopen(to, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
    free(data);
}

/* A client context trusting ca_file, showing cert_name.pem/.key from the
 * certificate directory if cert_name is not NULL. */
static SSL_CTX *
client_ctx(const char *ca_file, const char *cert_name)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(SSL_CTX_load_verify_locations(ctx, ca_file, NULL), 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (cert_name != NULL) {
        ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(ctx, cert(f("%s.pem", cert_name))), 1);
        ck_assert_int_eq(
            SSL_CTX_use_PrivateKey_file(ctx, cert(f("%s.key", cert_name)), SSL_FILETYPE_PEM), 1);
    }
    return ctx;
}

/* A TLS connection to 127.0.0.1:port; NULL if the handshake fails. */
static SSL *
tls_connect(SSL_CTX *ctx, int port)
{
    int fd = systest_connect_port(port);
    struct timeval tv = {systest_wait_ms() / 1000, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL *ssl = SSL_new(ctx);
    ck_assert_ptr_nonnull(ssl);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    ck_assert_int_eq(SSL_set1_host(ssl, "localhost"), 1);
    if (SSL_connect(ssl) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    return ssl;
}

static void
tls_close(SSL *ssl)
{
    int fd = SSL_get_fd(ssl);
    SSL_free(ssl);
    close(fd);
}

static void
tls_send(SSL *ssl, const char *text)
{
    ck_assert_int_eq(SSL_write(ssl, text, (int)strlen(text)), (int)strlen(text));
}

/* Read up to n bytes (fewer if the connection ends) into buf; the count. */
static size_t
tls_read(SSL *ssl, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        int r = SSL_read(ssl, buf + got, (int)(n - got));
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    ERR_clear_error();
    return got;
}

/* Read exactly strlen(expected) bytes and compare. */
static void
tls_expect(SSL *ssl, const char *expected)
{
    size_t n = strlen(expected);
    char *buf = calloc(1, n + 1);
    size_t got = tls_read(ssl, buf, n);
    ck_assert_msg(got == n && memcmp(buf, expected, n) == 0, "expected \"%s\", got \"%.*s\"",
                  expected, (int)got, buf);
    free(buf);
}

static void
tls_roundtrip(SSL *ssl, const char *text, const char *expected)
{
    tls_send(ssl, text);
    tls_expect(ssl, expected);
}

/* The common name of the certificate the server showed on ssl. */
static const char *
peer_cn(SSL *ssl)
{
    static char cn[64];
    X509 *x = SSL_get1_peer_certificate(ssl);
    ck_assert_ptr_nonnull(x);
    cn[0] = '\0';
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
    X509_free(x);
    return cn;
}

/* The port of the first "<what> listening on tls://127.0.0.1:PORT" line. */
static int
tls_port(struct systest_proc *p, const char *what)
{
    const char *key = f("%s listening on tls://127.0.0.1:", what);
    ck_assert(systest_proc_wait(p, false, key));
    const char *line = strstr(p->out.p, key);
    while (strchr(line, '\n') == NULL)
        ck_assert(systest_proc_pump(p, systest_wait_ms()));
    return atoi(line + strlen(key));
}

/* A server with a plain and a TLS Workq listener and the test certificate
 * (files copied to srv-live.*, which a test may replace), plus more
 * arguments (NULL terminated, at most 8). */
static void
start(struct systest_proc *p, const char *const *more)
{
    copy_file(cert("srv.pem"), cert("live.pem"));
    copy_file(cert("srv.key"), cert("live.key"));
    const char *args[24] = {"-listen",   "127.0.0.1:0,tls://127.0.0.1:0",
                            "-tls-cert", strdup(cert("live.pem")),
                            "-tls-key",  strdup(cert("live.key"))};
    size_t n = 6;
    for (size_t i = 0; more != NULL && more[i] != NULL; i++)
        args[n++] = more[i];
    systest_proc_start(p, args);
    free((char *)args[3]);
    free((char *)args[5]);
}

/* A job's whole life over TLS, with a plain listener beside it. */
START_TEST(test_workq_over_tls)
{
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    SSL_CTX *ctx = client_ctx(cert("ca.pem"), NULL);
    SSL *c = tls_connect(ctx, port);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(peer_cn(c), "localhost");
    ck_assert_int_ge(SSL_version(c), TLS1_2_VERSION);
    tls_roundtrip(c, "add " ID1 " q 60000 600000 5\r\nhello\r\n", OK);
    tls_roundtrip(c, "lease q 1000\r\n", f("+OK 1\r\n%s q 60000 5\r\nhello\r\n", ID1));
    tls_roundtrip(c, "complete " ID1 " 4\r\ndone\r\n", OK);
    tls_roundtrip(c, "result " ID1 " 0\r\n", f("+OK 1\r\n%s 1 4\r\ndone\r\n", ID1));
    /* an error is the same bytes as over plain TCP */
    tls_roundtrip(c, "lease\r\n", ERR("Invalid command args"));
    /* the plain listener sees the same jobs */
    int plain = systest_connect(&p.s);
    systest_roundtrip(plain, "result " ID1 " 0\r\n", f("+OK 1\r\n%s 1 4\r\ndone\r\n", ID1));
    close(plain);
    tls_close(c);
    SSL_CTX_free(ctx);
    systest_proc_stop(&p);
    ck_assert_ptr_nonnull(strstr(p.err.p, "listen=127.0.0.1:"));
    ck_assert_ptr_nonnull(strstr(p.err.p, ",tls://127.0.0.1:"));
    systest_proc_free(&p);
}
END_TEST

/* A plain client on the TLS port is closed, and the server says why. */
START_TEST(test_plain_client_on_tls_port)
{
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    int fd = systest_connect_port(port);
    systest_sends(fd, "inspect server\r\n");
    systest_expect_closed(fd);
    close(fd);
    ck_assert(systest_proc_wait(&p, true, "TLS connection failed peer=127.0.0.1:"));
    /* one that waits for a greeting, as Faktory's clients do, is closed
     * once the handshake has not come for 10 s (there is no -idle-timeout
     * here), and the server says why */
    fd = systest_connect_port(port);
    int64_t t0 = systest_now_ms();
    struct pollfd pfd = {fd, POLLIN, 0};
    ck_assert_int_eq(poll(&pfd, 1, 20000 * systest_slow()), 1);
    char byte;
    ck_assert_int_le(recv(fd, &byte, 1, 0), 0);
    ck_assert_int_ge(systest_now_ms() - t0, 9000);
    close(fd);
    ck_assert(
        systest_proc_wait(&p, true, "error=\"no handshake within 10 s: a plain-text client?\"\n"));
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* Faktory's handshake and the metrics endpoint over TLS. */
START_TEST(test_faktory_and_metrics_over_tls)
{
    struct systest_proc p;
    const char *more[] = {"-faktory-listen", "tls://127.0.0.1:0", "-metrics-listen",
                          "127.0.0.1:0,tls://127.0.0.1:0", NULL};
    start(&p, more);
    SSL_CTX *ctx = client_ctx(cert("ca.pem"), NULL);
    SSL *fk = tls_connect(ctx, tls_port(&p, "faktory"));
    ck_assert_ptr_nonnull(fk);
    tls_expect(fk, "+HI {\"v\":2}\r\n");
    tls_roundtrip(fk, "HELLO {\"v\":2,\"wid\":\"w9\",\"hostname\":\"h\",\"pid\":1}\r\n", "+OK\r\n");
    tls_roundtrip(fk, "PUSH {\"jid\":\"tls-job-1\",\"jobtype\":\"t\",\"args\":[]}\r\n", "+OK\r\n");
    tls_close(fk);
    SSL *m = tls_connect(ctx, tls_port(&p, "metrics"));
    ck_assert_ptr_nonnull(m);
    tls_send(m, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    char buf[2048] = "";
    tls_read(m, buf, sizeof buf - 1);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "got %s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nok\n"));
    tls_close(m);
    SSL_CTX_free(ctx);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* With -tls-ca a client must show a certificate from one of its CAs. */
START_TEST(test_client_certificate_required)
{
    struct systest_proc p;
    const char *more[] = {"-tls-ca", cert("ca.pem"), NULL};
    start(&p, more);
    int port = tls_port(&p, "workq-server");
    /* with one: served */
    SSL_CTX *good = client_ctx(cert("ca.pem"), "client");
    SSL *c = tls_connect(good, port);
    ck_assert_ptr_nonnull(c);
    tls_roundtrip(c, "add " ID1 " q 60000 600000 1\r\nx\r\n", OK);
    tls_close(c);
    /* without one, or with one from another CA: no reply, closed (TLS 1.3
     * may finish the client's side of the handshake before the server
     * refuses, so the refusal shows at the first read) */
    const char *refused[] = {NULL, "rogue"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        SSL_CTX *ctx = client_ctx(cert("ca.pem"), refused[i]);
        SSL *r = tls_connect(ctx, port);
        if (r != NULL) {
            SSL_write(r, "inspect server\r\n", 16);
            char buf[64];
            ck_assert_uint_eq(tls_read(r, buf, sizeof buf), 0);
            tls_close(r);
        }
        SSL_CTX_free(ctx);
    }
    ck_assert(systest_proc_wait(&p, true, "TLS connection failed peer=127.0.0.1:"));
    /* nothing the refused clients sent was done */
    c = tls_connect(good, port);
    ck_assert_ptr_nonnull(c);
    tls_send(c, "inspect server\r\n");
    char buf[4096] = "";
    SSL_read(c, buf, sizeof buf - 1);
    ck_assert_ptr_nonnull(strstr(buf, "\r\njobs 1\r\n"));
    tls_close(c);
    SSL_CTX_free(good);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* A client that trusts another CA refuses the server; one that offers only
 * TLS 1.1 is refused by it. */
START_TEST(test_wrong_ca_and_old_protocol)
{
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    SSL_CTX *ctx = client_ctx(cert("ca2.pem"), NULL);
    ck_assert_ptr_null(tls_connect(ctx, port));
    SSL_CTX_free(ctx);
    ctx = client_ctx(cert("ca.pem"), NULL);
    /* the client itself would allow TLS 1.1 */
    SSL_CTX_set_security_level(ctx, 0);
    SSL_CTX_set_min_proto_version(ctx, TLS1_1_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_1_VERSION);
    ck_assert_ptr_null(tls_connect(ctx, port));
    SSL_CTX_free(ctx);
    ck_assert(systest_proc_wait(&p, true, "unsupported protocol"));
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* TLS 1.2 offers only forward-secret AEAD suites: a client that offers
 * nothing but CBC with SHA-1 is refused; one that offers GCM is taken. */
START_TEST(test_tls12_suites)
{
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    SSL_CTX *ctx = client_ctx(cert("ca.pem"), NULL);
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    ck_assert_int_eq(SSL_CTX_set_cipher_list(ctx, "ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA:"
                                                  "AES128-SHA:AES256-SHA"),
                     1);
    ck_assert_ptr_null(tls_connect(ctx, port));
    ck_assert_int_eq(
        SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"),
        1);
    SSL *ssl = tls_connect(ctx, port);
    ck_assert_ptr_nonnull(ssl);
    ck_assert_str_eq(SSL_get_version(ssl), "TLSv1.2");
    ck_assert_ptr_nonnull(strstr(SSL_get_cipher_name(ssl), "-AES128-GCM-SHA256"));
    tls_close(ssl);
    SSL_CTX_free(ctx);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* The common name of the certificate a new connection to port gets (the
 * chain checked, not the host name: "second" has no localhost name). */
static const char *
fresh_cn(int port)
{
    SSL_CTX *any = client_ctx(cert("ca.pem"), NULL);
    int fd = systest_connect_port(port);
    SSL *ssl = SSL_new(any);
    SSL_set_fd(ssl, fd);
    ck_assert_int_eq(SSL_connect(ssl), 1);
    const char *cn = peer_cn(ssl);
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(any);
    return cn;
}

/* SIGHUP re-reads the certificate: new connections get the new one, an
 * open connection goes on; a broken file keeps the one in use. */
START_TEST(test_reload_on_sighup)
{
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    SSL_CTX *ctx = client_ctx(cert("ca.pem"), NULL);
    SSL *old = tls_connect(ctx, port);
    ck_assert_ptr_nonnull(old);
    ck_assert_str_eq(peer_cn(old), "localhost");
    tls_roundtrip(old, "add " ID1 " q 60000 600000 1\r\nx\r\n", OK);

    copy_file(cert("second.pem"), cert("live.pem"));
    copy_file(cert("second.key"), cert("live.key"));
    kill(p.s.pid, SIGHUP);
    ck_assert(systest_proc_wait(&p, true, "TLS certificate re-read"));
    ck_assert_str_eq(fresh_cn(port), "second");
    tls_roundtrip(old, "lease q 0\r\n", f("+OK 1\r\n%s q 60000 1\r\nx\r\n", ID1));

    /* a key that does not match: logged, the certificate in use stays */
    copy_file(cert("srv.key"), cert("live.key"));
    kill(p.s.pid, SIGHUP);
    ck_assert(systest_proc_wait(&p, true, "keeping the TLS certificate in use"));
    ck_assert_ptr_nonnull(strstr(p.err.p, "cannot load the TLS key cert="));
    ck_assert_str_eq(fresh_cn(port), "second");
    tls_roundtrip(old, "complete " ID1 " 0\r\n\r\n", OK);
    /* a FIFO where the certificate was would block the server reading it:
     * refused unread, the certificate in use stays, the server answers */
    ck_assert_int_eq(unlink(cert("live.pem")), 0);
    ck_assert_int_eq(mkfifo(cert("live.pem"), 0600), 0);
    kill(p.s.pid, SIGHUP);
    ck_assert(systest_proc_wait(
        &p, true, f(" error TLS file is not a regular file path=%s\n", cert("live.pem"))));
    ck_assert_str_eq(fresh_cn(port), "second");
    tls_roundtrip(old, "result " ID1 " 0\r\n", f("+OK 1\r\n%s 1 0\r\n\r\n", ID1));
    unlink(cert("live.pem"));
    copy_file(cert("second.pem"), cert("live.pem"));
    tls_close(old);
    SSL_CTX_free(ctx);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* Run cmd through the shell; its stdout (free it). */
static char *
run_output(const char *cmd)
{
    FILE *fp = popen(cmd, "r");
    ck_assert_ptr_nonnull(fp);
    struct sb out = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        sb_addn(&out, buf, n);
    pclose(fp);
    return out.p ? out.p : strdup("");
}

/* openssl s_client, as a person would try the listener by hand: a line
 * too long ends the connection after the replies, and s_client with it. */
START_TEST(test_openssl_s_client)
{
    struct systest_proc p;
    const char *more[] = {"-max-line", "64", NULL};
    start(&p, more);
    int port = tls_port(&p, "workq-server");
    char *out = run_output(
        f("(printf 'add %s q 1000 60000 2\\r\\nhi\\r\\ninspect queues 0 10\\r\\n%%080d\\r\\n' 0) | "
          "timeout %d openssl s_client -quiet -verify_return_error -CAfile %s "
          "-connect 127.0.0.1:%d 2>/dev/null",
          ID1, systest_wait_ms() / 1000 + 5, cert("ca.pem"), port));
    ck_assert_str_eq(
        out, "+OK\r\n+OK 1\r\nq 2\r\nready-len 1\r\nscheduled-len 0\r\n" ERR("Line too long"));
    free(out);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* workq-cli --tls with --cacert, and with a client certificate. */
START_TEST(test_cli_over_tls)
{
    const char *cli = getenv("WQ_CLI");
    ck_assert_msg(cli != NULL, "WQ_CLI is not set (run through make check)");
    struct systest_proc p;
    const char *more[] = {"-tls-ca", cert("ca.pem"), NULL};
    start(&p, more);
    int port = tls_port(&p, "workq-server");
    char *out =
        run_output(f("%s -a 127.0.0.1:%d --tls --cacert %s --cert %s --key %s add %s q "
                     "60000 600000 hello 2>&1",
                     cli, port, cert("ca.pem"), cert("client.pem"), cert("client.key"), ID1));
    ck_assert_str_eq(out, "OK\n");
    free(out);
    out = run_output(f("%s -a 127.0.0.1:%d --tls --cacert %s --cert %s --key %s lease q 0 2>&1",
                       cli, port, cert("ca.pem"), cert("client.pem"), cert("client.key")));
    ck_assert_msg(strstr(out, ID1) != NULL && strstr(out, "hello") != NULL, "got %s", out);
    free(out);
    /* no client certificate: the server refuses it; a wrong CA: the cli
     * refuses the server (exit 69 for both, with the reason) */
    out = run_output(f("%s -a 127.0.0.1:%d --tls --cacert %s inspect server >/dev/null 2>&1; "
                       "echo $?",
                       cli, port, cert("ca.pem")));
    ck_assert_str_eq(out, "69\n");
    free(out);
    out = run_output(f("%s -a 127.0.0.1:%d --tls --cacert %s --cert %s --key %s inspect server "
                       "2>&1 >/dev/null; echo $?",
                       cli, port, cert("ca2.pem"), cert("client.pem"), cert("client.key")));
    ck_assert_msg(strstr(out, "certificate verify failed") != NULL, "got %s", out);
    ck_assert_msg(strstr(out, "\n69\n") != NULL, "got %s", out);
    free(out);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* workq-bench --tls: a cycle over TLS with every reply checked; a server
 * certificate from another CA ends the run. */
START_TEST(test_bench_over_tls)
{
    const char *bench = getenv("WQ_BENCH");
    ck_assert_msg(bench != NULL, "WQ_BENCH is not set (run through make check)");
    struct systest_proc p;
    start(&p, NULL);
    int port = tls_port(&p, "workq-server");
    char *out = run_output(
        f("%s -p %d --tls --cacert %s -c 4 -n 200 -q 2>&1; echo $?", bench, port, cert("ca.pem")));
    ck_assert_msg(strstr(out, "errors 0\n0\n") != NULL, "got %s", out);
    free(out);
    out = run_output(
        f("%s -p %d --tls --cacert %s -c 2 -n 10 -q 2>&1; echo $?", bench, port, cert("ca2.pem")));
    ck_assert_msg(strstr(out, "certificate verify failed") != NULL, "got %s", out);
    ck_assert_msg(strstr(out, "\n1\n") != NULL, "got %s", out);
    free(out);
    systest_proc_stop(&p);
    systest_proc_free(&p);
}
END_TEST

/* Start-up errors: a tls:// address without a certificate, a missing
 * file, a key that does not match. */
START_TEST(test_startup_errors)
{
    struct systest_proc p;
    const char *no_cert[] = {"-listen", "tls://127.0.0.1:0", NULL};
    ck_assert_int_eq(systest_proc_run(&p, no_cert), EX_CONFIG_STATUS);
    ck_assert_str_eq(p.err.p, "workq-server: a tls:// address needs -tls-cert and -tls-key\n");
    systest_proc_free(&p);

    const char *missing[] = {"-listen",  "tls://127.0.0.1:0", "-tls-cert", cert("none.pem"),
                             "-tls-key", cert("srv.key"),     NULL};
    ck_assert_int_eq(systest_proc_run(&p, missing), EX_CONFIG_STATUS);
    ck_assert_ptr_nonnull(strstr(p.err.p, "cannot load the TLS certificate cert="));
    systest_proc_free(&p);

    const char *mismatch[] = {"-metrics-listen", "tls://127.0.0.1:0", "-tls-cert", cert("srv.pem"),
                              "-tls-key",        cert("client.key"),  NULL};
    ck_assert_int_eq(systest_proc_run(&p, mismatch), EX_CONFIG_STATUS);
    ck_assert_ptr_nonnull(strstr(p.err.p, "cannot load the TLS key cert="));
    ck_assert_ptr_nonnull(strstr(p.err.p, "key values mismatch"));
    systest_proc_free(&p);

    const char *bad_addr[] = {"-listen", "tls://127.0.0.1", NULL};
    ck_assert_int_eq(systest_proc_run(&p, bad_addr), 64);
    ck_assert_str_eq(p.err.p, "workq-server: invalid -listen 'tls://127.0.0.1' (expected "
                              "HOST:PORT[,HOST:PORT...])\n");
    systest_proc_free(&p);
}
END_TEST

int
main(void)
{
    if (!make_certs())
        return 99; /* a hard error for the test driver */
    const struct systest_group groups[] = {
        {"tls",
         {test_workq_over_tls, test_plain_client_on_tls_port, test_faktory_and_metrics_over_tls,
          test_client_certificate_required, test_wrong_ca_and_old_protocol, test_tls12_suites,
          test_reload_on_sighup, test_openssl_s_client, test_cli_over_tls, test_bench_over_tls,
          test_startup_errors, NULL}},
    };
    int status = systest_main(systest_suite("tls", groups, sizeof groups / sizeof groups[0]));
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", certs);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", certs);
    return status;
}
