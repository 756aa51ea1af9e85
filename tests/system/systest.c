/* systest.c - talk to the server over TCP, wait and sleep scaled by
 * WQ_TEST_SLOW, and the text, job and suite helpers of the system tests. */
#include "config.h"
#include "systest.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#define SYSTEST_WAIT_MS 5000

int
systest_slow(void)
{
    const char *s = getenv("WQ_TEST_SLOW");
    int v = s != NULL ? atoi(s) : 1;
    return v > 0 ? v : 1;
}

void
systest_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int
systest_listen(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    socklen_t len = sizeof sin;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    *port = ntohs(sin.sin_port);
    return fd;
}

int
systest_connect_port(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int
systest_connect(const struct systest_server *s)
{
    return systest_connect_port(s->port);
}

void
systest_send(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        ck_assert_msg(w > 0, "send failed: %s", strerror(errno));
        p += w;
        len -= (size_t)w;
    }
}

void
systest_sends(int fd, const char *text)
{
    systest_send(fd, text, strlen(text));
}

/* Make bytes readable in a failure message: CR LF as \r\n, others as \xNN. */
static void
systest_escape(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\r')
            o += (size_t)snprintf(out + o, cap - o, "\\r");
        else if (c == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else if (c < 32 || c > 126)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

void
systest_expect_bytes(int fd, const void *expected, size_t len)
{
    char *got = malloc(len + 1);
    size_t n = 0;
    int wait = systest_wait_ms();
    while (n < len) {
        struct pollfd p = {fd, POLLIN, 0};
        int pr = poll(&p, 1, wait);
        if (pr <= 0)
            break;
        ssize_t r = recv(fd, got + n, len - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n != len || memcmp(got, expected, len) != 0) {
        char e[2048], g[2048];
        systest_escape(expected, len, e, sizeof e);
        systest_escape(got, n, g, sizeof g);
        free(got);
        ck_abort_msg("reply mismatch:\n expected \"%s\"\n      got \"%s\"%s", e, g,
                     n < len ? " (then nothing)" : "");
    }
    free(got);
}

void
systest_expect(int fd, const char *expected)
{
    systest_expect_bytes(fd, expected, strlen(expected));
}

void
systest_roundtrip(int fd, const char *text, const char *expected)
{
    systest_sends(fd, text);
    systest_expect(fd, expected);
}

void
systest_expect_silence(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int pr = poll(&p, 1, ms * systest_slow());
    if (pr > 0) {
        char buf[256], e[1024];
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        systest_escape(buf, r > 0 ? (size_t)r : 0, e, sizeof e);
        ck_abort_msg("expected no reply, got \"%s\"%s", e, r == 0 ? " (closed)" : "");
    }
}

void
systest_expect_closed(int fd)
{
    char buf[256];
    struct pollfd p = {fd, POLLIN, 0};
    ck_assert_msg(poll(&p, 1, systest_wait_ms()) > 0, "connection not closed");
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    ck_assert_msg(r == 0 || (r < 0 && errno == ECONNRESET), "expected close, got %zd bytes", r);
}

int
systest_wait_ms(void)
{
    return SYSTEST_WAIT_MS * systest_slow();
}

bool
systest_exact_timing(void)
{
    return systest_slow() == 1;
}

bool
systest_wrapped(void)
{
    const char *w = getenv("WQ_SERVER_WRAPPER");
    return w != NULL && *w != '\0';
}

void
systest_sleep_past(int ms)
{
    systest_sleep_ms((ms + 300) * systest_slow());
}

int64_t
systest_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
systest_read_n(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {fd, POLLIN, 0};
        ck_assert_msg(poll(&p, 1, systest_wait_ms()) > 0, "no reply (got %zu of %zu)", got, n);
        ssize_t r = recv(fd, buf + got, n - got, 0);
        ck_assert_msg(r > 0, "connection closed (got %zu of %zu)", got, n);
        got += (size_t)r;
    }
    buf[n] = '\0';
}

const char *
systest_read_line_within(int fd, int ms)
{
    static char ring[4][70000];
    static unsigned next;
    char *b = ring[next++ % 4];
    size_t n = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, ms) <= 0)
            return NULL;
        if (recv(fd, b + n, 1, 0) != 1)
            return NULL;
        if (b[n] == '\n')
            break;
        ck_assert_msg(++n < sizeof ring[0] - 1, "reply line too long");
    }
    ck_assert_msg(n > 0 && b[n - 1] == '\r', "bare LF in reply: %.*s", (int)n, b);
    b[n - 1] = '\0';
    return b;
}

const char *
systest_read_line(int fd)
{
    const char *l = systest_read_line_within(fd, systest_wait_ms());
    ck_assert_msg(l != NULL, "no reply line");
    return l;
}

uint64_t
systest_server_stat(int fd, const char *key)
{
    systest_sends(fd, "inspect server\r\n");
    systest_expect(fd, "+OK 1\r\n");
    unsigned k = 0;
    const char *head = systest_read_line(fd);
    ck_assert_msg(sscanf(head, "server %u", &k) == 1, "inspect server head \"%s\"", head);
    uint64_t value = 0;
    bool seen = false;
    size_t kl = strlen(key);
    for (unsigned i = 0; i < k; i++) {
        const char *l = systest_read_line(fd);
        if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
            value = strtoull(l + kl + 1, NULL, 10);
            seen = true;
        }
    }
    ck_assert_msg(seen, "inspect server has no %s", key);
    return value;
}

/* ------------------------------------------------------------------------ */
/* Text helpers */

const char *
f(const char *fmt, ...)
{
    static char ring[16][8192];
    static unsigned next;
    char *b = ring[next++ % 16];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof ring[0], fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof ring[0])
        ck_abort_msg("f(): text too long");
    return b;
}

void
sb_addn(struct sb *s, const void *data, size_t len)
{
    if (s->n + len + 1 > s->cap) {
        s->cap = (s->n + len + 1) * 2;
        s->p = realloc(s->p, s->cap);
        ck_assert_ptr_nonnull(s->p);
    }
    memcpy(s->p + s->n, data, len);
    s->n += len;
    s->p[s->n] = '\0';
}

void
sb_add(struct sb *s, const char *text)
{
    sb_addn(s, text, strlen(text));
}

const char *
id4(unsigned n)
{
    return f("%08x-58cc-4372-a567-0e02b2c3d479", n);
}

const char *
id1(unsigned n)
{
    return f("%08x-9dad-11d1-80b4-00c04fd430c8", n);
}

/* ------------------------------------------------------------------------ */
/* One server at a time, and jobs with the default TTR/TTL */

struct systest_server systest_srv;

void
systest_start_srv(void)
{
    systest_start(&systest_srv, NULL);
}

void
systest_stop_srv(void)
{
    systest_stop(&systest_srv);
}

int
systest_conn(void)
{
    return systest_connect(&systest_srv);
}

const char *
systest_lease_reply(const char *id, const char *name, unsigned ttr, const char *payload)
{
    return f("+OK 1\r\n%s %s %u %zu\r\n%s\r\n", id, name, ttr, strlen(payload), payload);
}

const char *
systest_result_reply(const char *id, int success, const char *result)
{
    return f("+OK 1\r\n%s %d %zu\r\n%s\r\n", id, success, strlen(result), result);
}

void
systest_add_full(int fd, const char *id, const char *name, unsigned ttr, const char *ttl,
                 const char *payload, const char *flags)
{
    systest_roundtrip(fd,
                      f("add %s %s %u %s %zu%s%s\r\n%s\r\n", id, name, ttr, ttl, strlen(payload),
                        flags != NULL ? " " : "", flags != NULL ? flags : "", payload),
                      OK);
}

void
systest_add(int fd, const char *id, const char *name, const char *payload)
{
    systest_add_full(fd, id, name, SYSTEST_TTR, SYSTEST_TTL, payload, NULL);
}

void
systest_expect_lease(int fd, const char *id, const char *name, const char *payload)
{
    systest_expect(fd, systest_lease_reply(id, name, SYSTEST_TTR, payload));
}

void
systest_lease_now(int fd, const char *name, const char *id, const char *payload)
{
    systest_roundtrip(fd, f("lease %s 0\r\n", name),
                      systest_lease_reply(id, name, SYSTEST_TTR, payload));
}

void
systest_sync(int fd)
{
    systest_roundtrip(fd, f("delete %s\r\n", id4(0xdeadbeef)), NF);
}

void
systest_add_error(int fd, const char *args, const char *reply)
{
    systest_roundtrip(fd, f("add %s\r\nabc\r\n", args), reply);
}

const char *
systest_padded_line(size_t len, const char *cmd)
{
    size_t n = strlen(cmd);
    ck_assert_uint_le(n, len);
    return f("%*s%s", (int)(len - n), "", cmd);
}

const char *
systest_name_of(size_t n, char c)
{
    static char buf[2][512];
    static unsigned next;
    char *b = buf[next++ % 2];
    ck_assert_uint_lt(n, sizeof buf[0]);
    memset(b, c, n);
    b[n] = '\0';
    return b;
}

/* ------------------------------------------------------------------------ */
/* Suites */

Suite *
systest_suite(const char *name, const struct systest_group *groups, size_t n)
{
    Suite *s = suite_create(name);
    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(groups[i].name);
        tcase_set_timeout(tc, 30 * systest_slow());
        for (size_t t = 0; groups[i].tests[t] != NULL; t++)
            tcase_add_test(tc, groups[i].tests[t]);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
systest_main(Suite *s)
{
    /* A test writing to a connection the server has closed must fail, not die. */
    signal(SIGPIPE, SIG_IGN);
    systest_cleanup_init();
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    systest_cleanup_run();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

bool
systest_is_uuid4(const char *s)
{
    if (strlen(s) != 36 || s[14] != '4' || strchr("89ab", s[19]) == NULL)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : strchr("0123456789abcdef", s[i]) == NULL)
            return false;
    }
    return true;
}

const char *
systest_pwdhash(const char *password, const char *salt, int iterations)
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    const char *in = f("%s%s", password, salt);
    SHA256((const unsigned char *)in, strlen(in), d);
    for (int i = 1; i < iterations; i++)
        SHA256(d, sizeof d, d);
    struct sb hex = {0};
    for (size_t i = 0; i < sizeof d; i++)
        sb_add(&hex, f("%02x", d[i]));
    const char *out = f("%s", hex.p);
    free(hex.p);
    return out;
}

bool
systest_uses_jemalloc(int fd)
{
    bool jemalloc = false;
    systest_roundtrip(fd, "inspect server\r\n", "+OK 1\r\n");
    int keys = atoi(systest_read_line(fd) + 7); /* "server N", then N lines */
    for (int i = 0; i < keys; i++)
        jemalloc |= strncmp(systest_read_line(fd), "allocator jemalloc", 18) == 0;
    return jemalloc;
}
