/* check_listener.c - unit tests for listening sockets (src/net/listener.c):
 * binding disabled, the address really bound as the start-up lines show
 * it, a port already taken, and the refusal of a client beyond
 * -max-connections. */
#include "lib/wq.h"
#include "net/listener.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "net/conn.h"
#include "unit.h"

static struct listen_addr
addr(const char *host, const char *port, bool tls)
{
    struct listen_addr a = {.tls = tls};
    snprintf(a.host, sizeof a.host, "%s", host);
    snprintf(a.port, sizeof a.port, "%s", port);
    return a;
}

/* The port l really bound. */
static unsigned
bound_port(struct evconnlistener *l)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    ck_assert_int_eq(getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss, &len), 0);
    return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Port 0 becomes the port the kernel picked; tls:// addresses say so. */
START_TEST(test_bind_describe)
{
    struct event_base *base = event_base_new();
    struct listen_addr a = addr("127.0.0.1", "0", false);
    struct evconnlistener *l = listener_bind(base, &a);
    ck_assert_ptr_nonnull(l);
    char want[LISTEN_BOUND_MAX], got[LISTEN_BOUND_MAX];
    snprintf(want, sizeof want, "127.0.0.1:%u", bound_port(l));
    ck_assert_uint_ne(bound_port(l), 0);
    listener_describe(l, false, got);
    ck_assert_str_eq(got, want);
    snprintf(want, sizeof want, "tls://127.0.0.1:%u", bound_port(l));
    listener_describe(l, true, got);
    ck_assert_str_eq(got, want);
    evconnlistener_free(l);

    a = addr("::1", "0", false);
    l = listener_bind(base, &a);
    if (l != NULL) { /* a machine without IPv6 cannot say more */
        snprintf(want, sizeof want, "[::1]:%u", bound_port(l));
        listener_describe(l, false, got);
        ck_assert_str_eq(got, want);
        evconnlistener_free(l);
    }
    event_base_free(base);
}
END_TEST

/* A port already taken fails (after logging why). */
START_TEST(test_bind_fails)
{
    struct event_base *base = event_base_new();
    struct listen_addr a = addr("127.0.0.1", "0", false);
    struct evconnlistener *l = listener_bind(base, &a);
    ck_assert_ptr_nonnull(l);
    char port[16];
    snprintf(port, sizeof port, "%u", bound_port(l));
    struct listen_addr b = addr("127.0.0.1", port, false);
    ck_assert_ptr_null(listener_bind(base, &b));
    evconnlistener_free(l);
    event_base_free(base);
}
END_TEST

static uint64_t
no_begin(void *arg)
{
    return 0;
}

static void
no_end(void *arg)
{
}

/* At max_connections a client is told why and closed, and counted. */
START_TEST(test_refused_at_max)
{
    struct event_base *base = event_base_new();
    const struct conn_hooks hooks = {NULL, no_begin, no_end, no_end};
    struct conn_set *conns = conn_set_new(base, &hooks, 64);
    uint64_t clients = 1; /* one open already */
    struct listeners *s = listeners_new(base, conns, 1, &clients);
    static const struct conn_service svc = {0};
    struct listen_addr a = addr("127.0.0.1", "0", false);
    char bound[LISTEN_BOUND_MAX];
    ck_assert_int_eq(listeners_add(s, &a, &svc, bound), 0);
    listeners_enable(s, true);

    struct sockaddr_in sin = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    sin.sin_port = htons((uint16_t)atoi(strchr(bound, ':') + 1));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    for (int i = 0; i < 500 && listeners_refused(s) == 0; i++) {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(2000);
    }
    ck_assert_uint_eq(listeners_refused(s), 1);
    ck_assert_uint_eq(listeners_accepted(s), 0);
    char buf[64] = "";
    struct pollfd p = {fd, POLLIN, 0};
    ck_assert_int_eq(poll(&p, 1, 2000), 1);
    ck_assert_int_gt(read(fd, buf, sizeof buf - 1), 0);
    ck_assert_str_eq(buf, "-SERVER-ERROR Too many connections\r\n");
    close(fd);
    listeners_free(s);
    conn_set_free(conns);
    event_base_free(base);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"bind_describe", test_bind_describe},
        {"bind_fails", test_bind_fails},
        {"refused_at_max", test_refused_at_max},
    };
    return unit_run(unit_suite("listener", cases, WQ_ARRAY_LEN(cases)), NULL);
}
