/* sys_hero.c - system tests of the Hero listener (-hero-listen): the real
 * workq-server over TCP, speaking RESP2 as Redis 7.0 does for the keys
 * under "hero:".  Every reply is checked byte for byte against what Debian's
 * redis-server 7.0.15 answered to the very same request bytes (sent raw over
 * a socket; the only values not Redis's own are HELLO's server, version and
 * id).  The groups: the connection's commands (PING, ECHO, HELLO, SELECT,
 * CLIENT, QUIT, unknown commands, arity), AUTH with -hero-password-file,
 * hashes, lists, the keyspace (EXISTS, DEL, TYPE, KEYS, SCAN, DBSIZE,
 * expiry), BLPOP and BRPOP, the limits (past -max-memory, and while the
 * command log cannot be written), pipelining and big values, and protocol
 * errors.
 *
 * Where workq differs from Redis on purpose, the test says so and checks
 * workq's bytes (those tests end in _workq): a key outside "hero:" is
 * refused, Redis commands the listener does not carry (GET, SET, SADD,
 * MULTI...) are answered as unknown ones, HELLO 3 is refused as an
 * unsupported protocol version and CLIENT SETINFO answers +OK as Redis 7.2
 * does (7.0 has no such subcommand).  Two more are Redis's own bytes under
 * another setting: only database 0 exists (SELECT 1 is answered as by a
 * Redis started with --databases 1), and a bulk over -max-payload (1 MiB by
 * default) as one over Redis's proto-max-bulk-len.  With those two settings
 * every test not ending in _workq passes against redis-server 7.0.15 itself
 * behind the hero port, test_oom aside: its replies are Redis's past
 * maxmemory, its sizes -max-memory's (Redis counts from about 1 MB).  A
 * wrong password may be answered late (workq slows guessers down): only
 * the bytes are checked, never how soon. */
#include "config.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "systest.h"

/* Redis 7.0.15's replies. */
#define PONG        "+PONG\r\n"
#define EMPTY       "*0\r\n"
#define NULLBULK    "$-1\r\n"
#define NULLARRAY   "*-1\r\n"
#define WRONGTYPE   "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
#define NOTINT      "-ERR value is not an integer or out of range\r\n"
#define SYNTAX      "-ERR syntax error\r\n"
#define POSITIVE    "-ERR value is out of range, must be positive\r\n"
#define TIMEOUT_NAN "-ERR timeout is not a float or out of range\r\n"
#define TIMEOUT_NEG "-ERR timeout is negative\r\n"
#define NOAUTH      "-NOAUTH Authentication required.\r\n"
#define WRONGPASS   "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
#define NOPROTO     "-NOPROTO unsupported protocol version\r\n"
#define OOM         "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
#define HELLO_NOAUTH                                                                               \
    "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "     \
    "AUTH <user> <pass> option can be used to authenticate the client and select the RESP "        \
    "protocol version at the same time\r\n"
#define NOPASS                                                                                     \
    "-ERR AUTH <password> called without any password configured for the default user. Are you "   \
    "sure your configuration is correct?\r\n"
#define ARITY(cmd)  "-ERR wrong number of arguments for '" cmd "' command\r\n"
#define PROTO(text) "-ERR Protocol error: " text "\r\n"
#define UNKNOWN(name, args)                                                                        \
    "-ERR unknown command '" name "', with args beginning with: " args "\r\n"
/* workq's own: a key outside "hero:". */
#define OUTSIDE(key) "-ERR key '" key "' is outside 'hero:': this server keeps only Hero's keys\r\n"
/* workq's own: the command log cannot be written (Redis's code; a Redis
 * replica says "You can't write against a read only replica."). */
#define READONLY                                                                                   \
    "-READONLY You can't write against a read only server: its command log cannot be "             \
    "written.\r\n"

static struct systest_proc srv;
static int hport; /* the Hero listener */

/* Start a server with a Workq and a Hero listener, with a password file
 * holding password and a newline (NULL: no password), and the options of
 * extra (NULL-terminated; NULL: none). */
static void
start_with(const char *password, const char *const *extra)
{
    char path[] = "/tmp/wq-hero-XXXXXX";
    const char *args[32] = {"-listen", "127.0.0.1:0", "-hero-listen", "127.0.0.1:0"};
    size_t n = 4;
    if (password != NULL) {
        args[n++] = "-hero-password-file";
        args[n++] = path;
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        const char *text = f("%s\n", password);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
    }
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i++) {
        ck_assert_uint_lt(n, 31);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    systest_proc_start(&srv, args);
    systest_track_pid(srv.s.pid);
    hport = systest_proc_port(&srv, "hero");
    if (password != NULL)
        unlink(path);
}

static void
start(const char *password)
{
    start_with(password, NULL);
}

static void
stop(void)
{
    systest_proc_stop(&srv);
    systest_untrack_pid(srv.s.pid);
    systest_proc_free(&srv);
}

/* A new connection to the Hero listener. */
static int
conn(void)
{
    return systest_connect_port(hport);
}

/* A copy of n bytes in a ring of buffers: 16 results live at once. */
static const char *
keep(const char *s, size_t n)
{
    static char ring[16][16384];
    static unsigned next;
    ck_assert_uint_lt(n, sizeof ring[0]);
    char *b = ring[next++ % 16];
    memcpy(b, s, n);
    b[n] = '\0';
    return b;
}

/* Append the RESP request of args[0..n) to s, argument i of lens[i] bytes
 * (lens NULL: each is a C string). */
static void
req_add(struct sb *s, size_t n, const char *const *args, const size_t *lens)
{
    char head[32];
    snprintf(head, sizeof head, "*%zu\r\n", n);
    sb_add(s, head);
    for (size_t i = 0; i < n; i++) {
        size_t len = lens != NULL ? lens[i] : strlen(args[i]);
        snprintf(head, sizeof head, "$%zu\r\n", len);
        sb_add(s, head);
        sb_addn(s, args[i], len);
        sb_add(s, "\r\n");
    }
}

static const char *
vreq(const char *first, va_list ap)
{
    const char *args[64];
    size_t n = 0;
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
        ck_assert_uint_lt(n, 64);
        args[n++] = a;
    }
    struct sb s = {0};
    req_add(&s, n, args, NULL);
    const char *r = keep(s.p, s.n);
    free(s.p);
    return r;
}

/* The RESP request (multibulk) of the arguments, a NULL-terminated list. */
static const char *req(const char *first, ...) __attribute__((sentinel));
static const char *
req(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    const char *r = vreq(first, ap);
    va_end(ap);
    return r;
}
#define REQ(...) req(__VA_ARGS__, NULL)

/* Send the request of the arguments (NULL-terminated) and expect reply. */
static void rt(int fd, const char *reply, const char *first, ...) __attribute__((sentinel));
static void
rt(int fd, const char *reply, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    const char *r = vreq(first, ap);
    va_end(ap);
    systest_roundtrip(fd, r, reply);
}
#define RT(fd, reply, ...) rt(fd, reply, __VA_ARGS__, NULL)

/* Stands for a null bulk string in an array of arr(). */
static const char NIL[] = "(nil)";

/* An array reply of bulk strings (NIL: $-1), the list NULL-terminated. */
static const char *arr(const char *first, ...) __attribute__((sentinel));
static const char *
arr(const char *first, ...)
{
    struct sb items = {0};
    sb_add(&items, "");
    size_t n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *), n++) {
        if (a == NIL) {
            sb_add(&items, NULLBULK);
        } else {
            char head[32];
            snprintf(head, sizeof head, "$%zu\r\n", strlen(a));
            sb_add(&items, head);
            sb_add(&items, a);
            sb_add(&items, "\r\n");
        }
    }
    va_end(ap);
    struct sb s = {0};
    char head[32];
    snprintf(head, sizeof head, "*%zu\r\n", n);
    sb_add(&s, head);
    sb_addn(&s, items.p, items.n);
    const char *r = keep(s.p, s.n);
    free(s.p);
    free(items.p);
    return r;
}
#define ARR(...) arr(__VA_ARGS__, NULL)

/* A bulk string reply's bytes (in a ring of 4 buffers, NUL terminated) and
 * its length into *len (if not NULL); NULL for $-1. */
static const char *
read_bulk(int fd, size_t *len)
{
    static char ring[4][70000];
    static unsigned next;
    const char *head = systest_read_line(fd);
    ck_assert_msg(head[0] == '$', "not a bulk string: %s", head);
    long n = strtol(head + 1, NULL, 10);
    if (n < 0)
        return NULL;
    char *b = ring[next++ % 4];
    ck_assert_int_lt(n + 2, (long)sizeof ring[0]);
    systest_read_n(fd, b, (size_t)n + 2);
    ck_assert(b[n] == '\r' && b[n + 1] == '\n');
    b[n] = '\0';
    if (len != NULL)
        *len = (size_t)n;
    return b;
}

/* An integer reply's value. */
static long long
read_int(int fd)
{
    const char *l = systest_read_line(fd);
    ck_assert_msg(l[0] == ':', "not an integer: %s", l);
    char *end;
    long long v = strtoll(l + 1, &end, 10);
    ck_assert_msg(*end == '\0' && end > l + 1, "not an integer: %s", l);
    return v;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An array of bulk strings whose order is the server's (KEYS, SCAN's
 * keys): sorted, joined by spaces ("" for none). */
static const char *
read_sorted(int fd)
{
    const char *head = systest_read_line(fd);
    ck_assert_msg(head[0] == '*', "not an array: %s", head);
    int n = atoi(head + 1);
    ck_assert_int_ge(n, 0);
    ck_assert_int_le(n, 64);
    char *items[64];
    for (int i = 0; i < n; i++) {
        const char *b = read_bulk(fd, NULL);
        ck_assert_ptr_nonnull(b);
        items[i] = strdup(b);
    }
    qsort(items, (size_t)n, sizeof items[0], cmp_str);
    struct sb s = {0};
    sb_add(&s, "");
    for (int i = 0; i < n; i++) {
        if (i > 0)
            sb_add(&s, " ");
        sb_add(&s, items[i]);
        free(items[i]);
    }
    const char *r = keep(s.p, s.n);
    free(s.p);
    return r;
}

/* Send a request whose reply is such an array; the array as read_sorted
 * gives it. */
static const char *
sorted_of(int fd, const char *request)
{
    systest_sends(fd, request);
    return read_sorted(fd);
}

/* Send a SCAN request: its cursor into cursor (size bytes), its keys as
 * read_sorted gives them. */
static const char *
scan(int fd, const char *request, char *cursor, size_t size)
{
    systest_sends(fd, request);
    systest_expect(fd, "*2\r\n");
    const char *c = read_bulk(fd, NULL);
    ck_assert_ptr_nonnull(c);
    snprintf(cursor, size, "%s", c);
    return read_sorted(fd);
}

/* HELLO's reply in RESP2, a map as a flat array of 14: the keys and the
 * proto, mode, role and modules values exactly as Redis 7.0 sends them.
 * server and version are workq's to name (any bulk string: Redis says
 * "redis" and "7.0.15"); id is the connection's id, as CLIENT ID gives it
 * (an integer).  Returns the id. */
static long long
expect_hello(int fd)
{
    systest_expect(fd, "*14\r\n$6\r\nserver\r\n");
    const char *server = read_bulk(fd, NULL);
    ck_assert_ptr_nonnull(server);
    ck_assert_uint_gt(strlen(server), 0);
    systest_expect(fd, "$7\r\nversion\r\n");
    const char *version = read_bulk(fd, NULL);
    ck_assert_ptr_nonnull(version);
    ck_assert_uint_gt(strlen(version), 0);
    systest_expect(fd, "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n");
    long long id = read_int(fd);
    systest_expect(fd, "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
                       "$7\r\nmodules\r\n*0\r\n");
    return id;
}

/* Time for the server to take a request just sent on another connection
 * (a blocked client can be asked nothing that would prove it). */
static void
let_block(void)
{
    systest_sleep_ms(100 * systest_slow());
}

/* The number that INFO section's line "name:N" gives. */
static unsigned long long
info_number(int fd, const char *section, const char *name)
{
    systest_sends(fd, REQ("INFO", section));
    const char *text = read_bulk(fd, NULL);
    ck_assert_ptr_nonnull(text);
    const char *at = strstr(text, f("\r\n%s:", name));
    ck_assert_msg(at != NULL, "INFO %s has no %s: %s", section, name, text);
    char *end;
    unsigned long long v = strtoull(at + 3 + strlen(name), &end, 10);
    ck_assert_msg(end > at + 3 + strlen(name) && *end == '\r', "INFO %s: %s", name, text);
    return v;
}

/* The names of the commands that COMMAND gives flag, sorted, joined by
 * spaces. */
static const char *
flagged(int fd, const char *flag)
{
    systest_sends(fd, REQ("COMMAND"));
    const char *head = systest_read_line(fd);
    ck_assert_msg(head[0] == '*', "not an array: %s", head);
    int n = atoi(head + 1);
    ck_assert_int_gt(n, 0);
    ck_assert_int_le(n, 64);
    char *names[64];
    int found = 0;
    for (int i = 0; i < n; i++) {
        systest_expect(fd, "*10\r\n");
        char *name = strdup(read_bulk(fd, NULL));
        read_int(fd); /* arity */
        const char *l = systest_read_line(fd);
        ck_assert_msg(l[0] == '*', "not an array of flags: %s", l);
        int k = atoi(l + 1);
        bool has = false;
        for (int j = 0; j < k; j++) {
            l = systest_read_line(fd);
            ck_assert_msg(l[0] == '+', "not a flag: %s", l);
            has = has || strcmp(l + 1, flag) == 0;
        }
        for (int j = 0; j < 3; j++)
            read_int(fd); /* the keys */
        systest_expect(fd, EMPTY EMPTY EMPTY EMPTY);
        if (has)
            names[found++] = name;
        else
            free(name);
    }
    qsort(names, (size_t)found, sizeof names[0], cmp_str);
    struct sb s = {0};
    sb_add(&s, "");
    for (int i = 0; i < found; i++) {
        if (i > 0)
            sb_add(&s, " ");
        sb_add(&s, names[i]);
        free(names[i]);
    }
    const char *r = keep(s.p, s.n);
    free(s.p);
    return r;
}

/* ------------------------------------------------------------------------ */
/* The connection */

/* PING bare and with an argument, ECHO (binary-safe), in any case, as
 * multibulk and inline. */
START_TEST(test_ping_echo)
{
    start(NULL);
    int fd = conn();
    RT(fd, PONG, "PING");
    RT(fd, "$5\r\nhello\r\n", "PING", "hello");
    RT(fd, "$0\r\n\r\n", "PING", "");
    RT(fd, ARITY("ping"), "PING", "a", "b");
    RT(fd, PONG, "ping");
    RT(fd, "$2\r\nhi\r\n", "ECHO", "hi");
    RT(fd, "$2\r\nhi\r\n", "eChO", "hi");
    RT(fd, ARITY("echo"), "ECHO");
    RT(fd, ARITY("echo"), "ECHO", "a", "b");
    static const char echo[] = "*2\r\n$4\r\nECHO\r\n$5\r\na\0b\r\n\r\n";
    static const char echoed[] = "$5\r\na\0b\r\n\r\n";
    systest_send(fd, echo, sizeof echo - 1);
    systest_expect_bytes(fd, echoed, sizeof echoed - 1);
    systest_roundtrip(fd, "PING\r\n", PONG);
    systest_roundtrip(fd, "ping\n", PONG);
    systest_roundtrip(fd, "PING a b\r\n", ARITY("ping"));
    close(fd);
    stop();
}
END_TEST

/* HELLO 2 and a bare HELLO answer the map of the connection in RESP2 (its id
 * is CLIENT ID's); other versions are refused; a bad version, an unknown
 * option or AUTH without both its arguments are errors; SETNAME names the
 * connection. */
START_TEST(test_hello)
{
    start(NULL);
    int fd = conn();
    systest_sends(fd, REQ("HELLO", "2"));
    long long id = expect_hello(fd);
    systest_sends(fd, REQ("CLIENT", "ID"));
    ck_assert_int_eq(read_int(fd), id);
    systest_sends(fd, REQ("HELLO"));
    ck_assert_int_eq(expect_hello(fd), id);
    systest_sends(fd, "HELLO 2\r\n");
    ck_assert_int_eq(expect_hello(fd), id);
    RT(fd, NOPROTO, "HELLO", "4");
    RT(fd, NOPROTO, "HELLO", "1");
    RT(fd, NOPROTO, "HELLO", "0");
    RT(fd, NOPROTO, "HELLO", "-1");
    RT(fd, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "x");
    RT(fd, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "2.0");
    RT(fd, "-ERR Syntax error in HELLO option 'FOO'\r\n", "HELLO", "2", "FOO");
    RT(fd, "-ERR Syntax error in HELLO option 'AUTH'\r\n", "HELLO", "2", "AUTH", "default");
    RT(fd, NULLBULK, "CLIENT", "GETNAME");
    systest_sends(fd, REQ("HELLO", "2", "SETNAME", "nm"));
    ck_assert_int_eq(expect_hello(fd), id);
    RT(fd, "$2\r\nnm\r\n", "CLIENT", "GETNAME");
    /* another connection has another id */
    int other = conn();
    systest_sends(other, REQ("CLIENT", "ID"));
    ck_assert_int_ne(read_int(other), id);
    close(other);
    close(fd);
    stop();
}
END_TEST

/* workq: HELLO 3 is refused as Redis refuses a protocol it does not speak;
 * the connection goes on in RESP2. */
START_TEST(test_hello_3_workq)
{
    start(NULL);
    int fd = conn();
    RT(fd, NOPROTO, "HELLO", "3");
    RT(fd, NOPROTO, "HELLO", "3", "SETNAME", "nm");
    RT(fd, NULLBULK, "CLIENT", "GETNAME");
    RT(fd, NULLBULK, "HGET", "hero:none", "f");
    systest_sends(fd, REQ("HELLO", "2"));
    expect_hello(fd);
    close(fd);
    stop();
}
END_TEST

/* SELECT 0 is the only database: others are out of range (workq has one
 * database; Redis answers so when started with --databases 1). */
START_TEST(test_select)
{
    start(NULL);
    int fd = conn();
    RT(fd, OK, "SELECT", "0");
    RT(fd, "-ERR DB index is out of range\r\n", "SELECT", "1");
    RT(fd, "-ERR DB index is out of range\r\n", "SELECT", "16");
    RT(fd, "-ERR DB index is out of range\r\n", "SELECT", "-1");
    RT(fd, NOTINT, "SELECT", "x");
    RT(fd, NOTINT, "SELECT", "00");
    RT(fd, NOTINT, "SELECT", "99999999999999999999");
    RT(fd, ARITY("select"), "SELECT");
    RT(fd, ARITY("select"), "SELECT", "0", "1");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* CLIENT SETNAME/GETNAME/ID: names without spaces or special bytes, an
 * empty name clears it, ids are integers; unknown subcommands and wrong
 * arity with Redis's texts (the subcommand named as sent). */
START_TEST(test_client)
{
    start(NULL);
    int fd = conn();
    RT(fd, NULLBULK, "CLIENT", "GETNAME");
    RT(fd, OK, "CLIENT", "SETNAME", "hero-worker");
    RT(fd, "$11\r\nhero-worker\r\n", "CLIENT", "GETNAME");
    RT(fd, OK, "client", "setname", "~!@#");
    RT(fd, "$4\r\n~!@#\r\n", "client", "getname");
    static const char *const bad[] = {"my name", "a\nb", "\xc3\xa9", "a\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        RT(fd, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
           "CLIENT", "SETNAME", bad[i]);
    RT(fd, "$4\r\n~!@#\r\n", "CLIENT", "GETNAME");
    RT(fd, OK, "CLIENT", "SETNAME", "");
    RT(fd, NULLBULK, "CLIENT", "GETNAME");
    systest_sends(fd, REQ("CLIENT", "ID"));
    ck_assert_int_gt(read_int(fd), 0);
    RT(fd, "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n", "CLIENT", "BOGUS");
    RT(fd, "-ERR unknown subcommand 'bogus'. Try CLIENT HELP.\r\n", "client", "bogus", "x");
    RT(fd, ARITY("client"), "CLIENT");
    RT(fd, ARITY("client|setname"), "CLIENT", "SETNAME");
    RT(fd, ARITY("client|setname"), "CLIENT", "SETNAME", "x", "y");
    RT(fd, ARITY("client|getname"), "CLIENT", "GETNAME", "x");
    RT(fd, ARITY("client|id"), "CLIENT", "ID", "x");
    close(fd);
    stop();
}
END_TEST

/* workq: CLIENT SETINFO as redis-rs sends it on connecting, pipelined,
 * answers +OK twice (as Redis 7.2 does; 7.0 knows no SETINFO). */
START_TEST(test_client_setinfo_workq)
{
    start(NULL);
    int fd = conn();
    systest_sends(fd, f("%s%s", REQ("CLIENT", "SETINFO", "LIB-NAME", "redis-rs"),
                        REQ("CLIENT", "SETINFO", "LIB-VER", "0.23.0")));
    systest_expect(fd, OK OK);
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* QUIT answers +OK and closes, whatever its arguments; what was pipelined
 * before it is done, nothing after it. */
START_TEST(test_quit)
{
    start(NULL);
    int fd = conn();
    systest_sends(fd, f("%s%s%s%s", REQ("HSET", "hero:x", "f", "v"), REQ("QUIT"),
                        REQ("DEL", "hero:x"), REQ("PING")));
    systest_expect(fd, ":1\r\n" OK);
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    RT(fd, ":1\r\n", "EXISTS", "hero:x");
    systest_sends(fd, "PING\r\nQUIT\r\nPING\r\n");
    systest_expect(fd, PONG OK);
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    RT(fd, OK, "QUIT", "x");
    systest_expect_closed(fd);
    close(fd);
    stop();
}
END_TEST

/* An unknown command: named as sent, its first arguments quoted, each ending
 * in a space, CR and LF shown as spaces, the name and the arguments cut at
 * 128 bytes; the connection goes on. */
START_TEST(test_unknown_command)
{
    start(NULL);
    int fd = conn();
    RT(fd, UNKNOWN("FOO", ""), "FOO");
    RT(fd, UNKNOWN("foo", "'a' 'b' 'c' "), "foo", "a", "b", "c");
    RT(fd, UNKNOWN("", ""), "");
    RT(fd, UNKNOWN("FOO", "'a b' 'c  d' 'it's' "), "FOO", "a b", "c\r\nd", "it's");
    systest_sends(fd, REQ("FOO", systest_name_of(200, 'x')));
    systest_expect(fd, f("-ERR unknown command 'FOO', with args beginning with: '%s' \r\n",
                         systest_name_of(128, 'x')));
    systest_sends(fd, REQ(systest_name_of(200, 'F'), "x"));
    systest_expect(fd, f("-ERR unknown command '%s', with args beginning with: 'x' \r\n",
                         systest_name_of(128, 'F')));
    const char *args[41];
    args[0] = "foo";
    for (int i = 1; i < 41; i++)
        args[i] = strdup(f("a%d", i - 1));
    struct sb s = {0};
    req_add(&s, 41, args, NULL);
    systest_send(fd, s.p, s.n);
    free(s.p);
    for (int i = 1; i < 41; i++)
        free((char *)args[i]);
    systest_expect(fd, UNKNOWN("foo", "'a0' 'a1' 'a2' 'a3' 'a4' 'a5' 'a6' 'a7' 'a8' 'a9' 'a10' "
                                      "'a11' 'a12' 'a13' 'a14' 'a15' 'a16' 'a17' 'a18' 'a19' "
                                      "'a20' 'a21' 'a22' "));
    systest_roundtrip(fd, "NOPE hero:x\r\n", UNKNOWN("NOPE", "'hero:x' "));
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* workq: Redis commands the listener does not carry are answered as
 * unknown commands, whatever Redis would do with them. */
START_TEST(test_unsupported_workq)
{
    start(NULL);
    int fd = conn();
    RT(fd, UNKNOWN("GET", "'hero:x' "), "GET", "hero:x");
    RT(fd, UNKNOWN("get", "'hero:x' "), "get", "hero:x");
    RT(fd, UNKNOWN("SET", "'hero:x' 'v' 'EX' '10' "), "SET", "hero:x", "v", "EX", "10");
    RT(fd, UNKNOWN("sadd", "'hero:s' 'm' "), "sadd", "hero:s", "m");
    RT(fd, UNKNOWN("ZADD", "'hero:z' '1' 'm' "), "ZADD", "hero:z", "1", "m");
    RT(fd, UNKNOWN("MULTI", ""), "MULTI");
    RT(fd, UNKNOWN("EXEC", ""), "EXEC");
    systest_roundtrip(fd, "get hero:x\r\n", UNKNOWN("get", "'hero:x' "));
    RT(fd, ":0\r\n", "EXISTS", "hero:x", "hero:s", "hero:z");
    close(fd);
    stop();
}
END_TEST

/* Wrong arity: the command's name in lower case whatever the case sent; it
 * is checked before the key (a key outside "hero:" too). */
START_TEST(test_arity)
{
    start(NULL);
    int fd = conn();
    static const struct {
        const char *reply;
        const char *args[4];
    } cases[] = {
        {ARITY("hset"), {"HsEt", "hero:a"}},
        {ARITY("hset"), {"HSET", "hero:a", "f"}},
        {ARITY("hset"), {"HSET", "foo", "f"}},
        {ARITY("hmset"), {"hmset", "hero:a", "f"}},
        {ARITY("hsetnx"), {"HSETNX", "hero:a", "f"}},
        {ARITY("hget"), {"HGET", "hero:a"}},
        {ARITY("hmget"), {"HMGET", "hero:a"}},
        {ARITY("hgetall"), {"HGETALL"}},
        {ARITY("hdel"), {"HDEL", "hero:a"}},
        {ARITY("hexists"), {"HEXISTS", "hero:a"}},
        {ARITY("hlen"), {"HLEN"}},
        {ARITY("hkeys"), {"HKEYS"}},
        {ARITY("hvals"), {"HVALS"}},
        {ARITY("hincrby"), {"HINCRBY", "hero:a", "f"}},
        {ARITY("lpush"), {"LPUSH", "hero:a"}},
        {ARITY("rpush"), {"RPUSH", "hero:a"}},
        {ARITY("lpop"), {"LPOP"}},
        {ARITY("lpop"), {"LPOP", "hero:a", "1", "2"}},
        {ARITY("rpop"), {"RPOP"}},
        {ARITY("blpop"), {"BLPOP", "hero:a"}},
        {ARITY("brpop"), {"BRPOP", "hero:a"}},
        {ARITY("llen"), {"LLEN"}},
        {ARITY("llen"), {"LLEN", "hero:a", "x"}},
        {ARITY("lrange"), {"LRANGE", "hero:a", "1"}},
        {ARITY("lindex"), {"LINDEX", "hero:a"}},
        {ARITY("lrem"), {"LREM", "hero:a", "1"}},
        {ARITY("ltrim"), {"LTRIM", "hero:a", "1"}},
        {ARITY("exists"), {"EXISTS"}},
        {ARITY("del"), {"DEL"}},
        {ARITY("unlink"), {"UNLINK"}},
        {ARITY("type"), {"TYPE"}},
        {ARITY("type"), {"TYPE", "a", "b"}},
        {ARITY("keys"), {"KEYS"}},
        {ARITY("keys"), {"KEYS", "a", "b"}},
        {ARITY("scan"), {"SCAN"}},
        {ARITY("dbsize"), {"DBSIZE", "x"}},
        {ARITY("expire"), {"EXPIRE", "hero:a"}},
        {ARITY("pexpire"), {"PEXPIRE", "hero:a"}},
        {ARITY("ttl"), {"TTL"}},
        {ARITY("ttl"), {"TTL", "hero:a", "x"}},
        {ARITY("pttl"), {"PTTL"}},
        {ARITY("persist"), {"PERSIST"}},
        {ARITY("auth"), {"AUTH"}},
        {ARITY("select"), {"SELECT"}},
        {ARITY("echo"), {"ECHO"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0;
        while (n < 4 && cases[i].args[n] != NULL)
            n++;
        struct sb s = {0};
        req_add(&s, n, cases[i].args, NULL);
        systest_send(fd, s.p, s.n);
        free(s.p);
        systest_expect(fd, cases[i].reply);
    }
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* AUTH */

/* Before AUTH every known command but AUTH, HELLO with AUTH and QUIT gets
 * NOAUTH and does nothing (a key outside "hero:" too, a blocking pop does
 * not block); an unknown command and a wrong arity are answered as such
 * first; HELLO alone gets its own NOAUTH, an unsupported version NOPROTO.
 * AUTH with the file's first line lets everything in. */
START_TEST(test_auth_required)
{
    start("s3cret");
    int fd = conn();
    RT(fd, NOAUTH, "PING");
    RT(fd, NOAUTH, "ECHO", "x");
    RT(fd, NOAUTH, "HSET", "hero:a", "f", "v");
    RT(fd, NOAUTH, "HSET", "foo", "f", "v");
    RT(fd, NOAUTH, "SELECT", "0");
    RT(fd, NOAUTH, "CLIENT", "ID");
    RT(fd, NOAUTH, "CLIENT", "SETNAME", "x");
    RT(fd, NOAUTH, "KEYS", "*");
    RT(fd, NOAUTH, "BLPOP", "hero:q", "0");
    RT(fd, NOAUTH, "DBSIZE");
    RT(fd, UNKNOWN("FOO", ""), "FOO");
    RT(fd, ARITY("hset"), "HSET");
    RT(fd, HELLO_NOAUTH, "HELLO");
    RT(fd, HELLO_NOAUTH, "HELLO", "2");
    RT(fd, NOPROTO, "HELLO", "4");
    RT(fd, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "x");
    systest_roundtrip(fd, "PING\r\n", NOAUTH);
    RT(fd, OK, "AUTH", "s3cret");
    RT(fd, PONG, "PING");
    /* the refused writes did nothing */
    RT(fd, ":0\r\n", "EXISTS", "hero:a");
    close(fd);
    stop();
}
END_TEST

/* QUIT before AUTH: +OK and the close. */
START_TEST(test_auth_quit)
{
    start("s3cret");
    int fd = conn();
    RT(fd, OK, "QUIT");
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    systest_roundtrip(fd, "QUIT\r\n", OK);
    systest_expect_closed(fd);
    close(fd);
    stop();
}
END_TEST

/* AUTH default PASSWORD, HELLO 2 AUTH default PASSWORD (the map, then the
 * connection is in), inline AUTH; more than two arguments are a syntax
 * error. */
START_TEST(test_auth_default_user)
{
    start("s3cret");
    int fd = conn();
    RT(fd, SYNTAX, "AUTH", "default", "s3cret", "extra");
    RT(fd, NOAUTH, "PING");
    RT(fd, OK, "AUTH", "default", "s3cret");
    RT(fd, PONG, "PING");
    close(fd);
    fd = conn();
    systest_sends(fd, REQ("HELLO", "2", "AUTH", "default", "s3cret"));
    expect_hello(fd);
    RT(fd, PONG, "PING");
    close(fd);
    fd = conn();
    systest_sends(fd, REQ("HELLO", "2", "SETNAME", "nm", "AUTH", "default", "s3cret"));
    expect_hello(fd);
    RT(fd, "$2\r\nnm\r\n", "CLIENT", "GETNAME");
    close(fd);
    fd = conn();
    systest_roundtrip(fd, "AUTH s3cret\r\n", OK);
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* A wrong password (its case counts) gets WRONGPASS, perhaps late, and
 * leaves the connection out; the right one then lets it in; a wrong one
 * after that leaves it in. */
START_TEST(test_auth_wrong)
{
    start("s3cret");
    int fd = conn();
    RT(fd, WRONGPASS, "AUTH", "S3cret");
    RT(fd, NOAUTH, "PING");
    RT(fd, OK, "AUTH", "s3cret");
    RT(fd, WRONGPASS, "AUTH", "bad");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* Only the user "default" (in that case) exists; HELLO's AUTH checks the
 * same way. */
START_TEST(test_auth_wrong_user)
{
    start("s3cret");
    int fd = conn();
    RT(fd, WRONGPASS, "AUTH", "DEFAULT", "s3cret");
    RT(fd, WRONGPASS, "HELLO", "2", "AUTH", "default", "bad");
    RT(fd, NOAUTH, "PING");
    RT(fd, OK, "AUTH", "default", "s3cret");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* Without a password file: AUTH PASSWORD is Redis's error for a server
 * without one; AUTH default ANYTHING and HELLO's AUTH succeed (Redis's
 * default user takes any password then); another user does not exist. */
START_TEST(test_auth_unconfigured)
{
    start(NULL);
    int fd = conn();
    RT(fd, PONG, "PING");
    RT(fd, NOPASS, "AUTH", "x");
    RT(fd, OK, "AUTH", "default", "x");
    RT(fd, OK, "AUTH", "default", "");
    systest_sends(fd, REQ("HELLO", "2", "AUTH", "default", "x"));
    expect_hello(fd);
    RT(fd, WRONGPASS, "AUTH", "bob", "x");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* Before AUTH a request may have at most 10 arguments, each of at most
 * 16384 bytes (Redis's protocol errors, then the close); after AUTH the
 * usual limits. */
START_TEST(test_auth_unauthenticated_limits)
{
    start("s3cret");
    int fd = conn();
    systest_sends(fd, "*11\r\n");
    systest_expect(fd, PROTO("unauthenticated multibulk length"));
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    systest_sends(fd, "*1\r\n$4\r\nPING\r\n*11\r\n");
    systest_expect(fd, NOAUTH PROTO("unauthenticated multibulk length"));
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    systest_sends(fd, "*2\r\n$4\r\nECHO\r\n$16385\r\n");
    systest_expect(fd, PROTO("unauthenticated bulk length"));
    systest_expect_closed(fd);
    close(fd);
    /* at the limits: NOAUTH */
    fd = conn();
    RT(fd, NOAUTH, "HSET", "hero:a", "1", "2", "3", "4", "5", "6", "7", "8");
    char *big = malloc(16385);
    memset(big, 'v', 16384);
    big[16384] = '\0';
    struct sb s = {0};
    const char *echo[] = {"ECHO", big};
    req_add(&s, 2, echo, NULL);
    systest_send(fd, s.p, s.n);
    systest_expect(fd, NOAUTH);
    /* past them once in */
    RT(fd, OK, "AUTH", "s3cret");
    RT(fd, ":5\r\n", "HSET", "hero:a", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10");
    free(s.p);
    s = (struct sb){0};
    big = realloc(big, 16386);
    memset(big, 'w', 16385);
    big[16385] = '\0';
    echo[1] = big;
    req_add(&s, 2, echo, NULL);
    systest_send(fd, s.p, s.n);
    systest_expect(fd, "$16385\r\n");
    char *back = malloc(16385 + 3);
    systest_read_n(fd, back, 16385 + 2);
    ck_assert_int_eq(memcmp(back, big, 16385), 0);
    ck_assert_int_eq(memcmp(back + 16385, "\r\n", 2), 0);
    free(back);
    free(big);
    free(s.p);
    close(fd);
    stop();
}
END_TEST

/* workq: before AUTH, a Redis command the listener does not carry is an
 * unknown command (answered before AUTH is asked for, as Redis answers an
 * unknown command); HELLO 3 is NOPROTO before AUTH too, and does not let
 * the connection in even with the right password. */
START_TEST(test_auth_unsupported_workq)
{
    start("s3cret");
    int fd = conn();
    RT(fd, UNKNOWN("GET", "'hero:x' "), "GET", "hero:x");
    RT(fd, NOPROTO, "HELLO", "3");
    RT(fd, NOPROTO, "HELLO", "3", "AUTH", "default", "s3cret");
    RT(fd, NOAUTH, "PING");
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Hashes */

/* HSET counts the new fields, HMSET answers +OK, HSETNX sets only a new
 * field; HGET, HMGET, HGETALL (insertion order: an updated field keeps
 * its place), HEXISTS, HLEN, HKEYS, HVALS, on a missing key too. */
START_TEST(test_hash_set_get)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":3\r\n", "HSET", "hero:h", "a", "1", "b", "2", "c", "3");
    RT(fd, ":1\r\n", "HSET", "hero:h", "a", "10", "d", "4");
    RT(fd, ":0\r\n", "HSET", "hero:h", "a", "10");
    RT(fd, OK, "HMSET", "hero:h", "e", "5");
    RT(fd, ":0\r\n", "HSETNX", "hero:h", "e", "6");
    RT(fd, ":1\r\n", "HSETNX", "hero:h", "f", "6");
    RT(fd, "$2\r\n10\r\n", "HGET", "hero:h", "a");
    RT(fd, "$1\r\n5\r\n", "HGET", "hero:h", "e");
    RT(fd, NULLBULK, "HGET", "hero:h", "zz");
    RT(fd, NULLBULK, "HGET", "hero:nope", "a");
    RT(fd, ARR("10", NIL, "2"), "HMGET", "hero:h", "a", "zz", "b");
    RT(fd, ARR(NIL, NIL), "HMGET", "hero:nope", "a", "b");
    RT(fd, ARR("a", "10", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6"), "HGETALL", "hero:h");
    RT(fd, EMPTY, "HGETALL", "hero:nope");
    RT(fd, ":1\r\n", "HEXISTS", "hero:h", "c");
    RT(fd, ":0\r\n", "HEXISTS", "hero:h", "zz");
    RT(fd, ":0\r\n", "HEXISTS", "hero:nope", "a");
    RT(fd, ":6\r\n", "HLEN", "hero:h");
    RT(fd, ":0\r\n", "HLEN", "hero:nope");
    RT(fd, ARR("a", "b", "c", "d", "e", "f"), "HKEYS", "hero:h");
    RT(fd, ARR("10", "2", "3", "4", "5", "6"), "HVALS", "hero:h");
    RT(fd, EMPTY, "HKEYS", "hero:nope");
    RT(fd, EMPTY, "HVALS", "hero:nope");
    /* empty field and value */
    RT(fd, ":1\r\n", "HSET", "hero:h", "", "");
    RT(fd, "$0\r\n\r\n", "HGET", "hero:h", "");
    RT(fd, OK, "HMSET", "hero:m", "x", "1", "y", "2");
    RT(fd, ARR("x", "1", "y", "2"), "HGETALL", "hero:m");
    close(fd);
    stop();
}
END_TEST

/* HDEL counts the fields it removed (a field named twice once); a field
 * set again goes to the end; the last field's removal removes the key. */
START_TEST(test_hash_del)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":4\r\n", "HSET", "hero:h", "a", "1", "b", "2", "c", "3", "d", "4");
    RT(fd, ":2\r\n", "HDEL", "hero:h", "a", "zz", "a", "b");
    RT(fd, ":0\r\n", "HDEL", "hero:nope", "a");
    RT(fd, ":1\r\n", "HSET", "hero:h", "a", "again");
    RT(fd, ARR("c", "3", "d", "4", "a", "again"), "HGETALL", "hero:h");
    RT(fd, ":3\r\n", "HDEL", "hero:h", "c", "d", "a");
    RT(fd, ":0\r\n", "EXISTS", "hero:h");
    RT(fd, "+none\r\n", "TYPE", "hero:h");
    RT(fd, EMPTY, "HGETALL", "hero:h");
    close(fd);
    stop();
}
END_TEST

/* HINCRBY: a new field or key starts from 0; Redis's errors for an
 * increment that is no integer (with a sign, a leading zero, empty), a
 * value that is none, and a sum out of 64 bits (the field unchanged). */
START_TEST(test_hincrby)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":5\r\n", "HINCRBY", "hero:h", "n", "5");
    RT(fd, ":-2\r\n", "HINCRBY", "hero:h", "n", "-7");
    RT(fd, "$2\r\n-2\r\n", "HGET", "hero:h", "n");
    RT(fd, ":1\r\n", "HINCRBY", "hero:new", "n", "1");
    static const char *const bad_incr[] = {"x",  "1.5", "+1", "01",
                                           "-0", "",    " 1", "9223372036854775808"};
    for (size_t i = 0; i < sizeof bad_incr / sizeof bad_incr[0]; i++)
        RT(fd, NOTINT, "HINCRBY", "hero:h", "n", bad_incr[i]);
    RT(fd, ":1\r\n", "HSET", "hero:h", "s", "0");
    static const char *const bad_value[] = {"abc", " 1", "+1", "007", "1.0", ""};
    for (size_t i = 0; i < sizeof bad_value / sizeof bad_value[0]; i++) {
        RT(fd, ":0\r\n", "HSET", "hero:h", "s", bad_value[i]);
        RT(fd, "-ERR hash value is not an integer\r\n", "HINCRBY", "hero:h", "s", "1");
    }
    RT(fd, ":1\r\n", "HSET", "hero:h", "big", "9223372036854775807");
    RT(fd, "-ERR increment or decrement would overflow\r\n", "HINCRBY", "hero:h", "big", "1");
    RT(fd, ":9223372036854775807\r\n", "HINCRBY", "hero:h", "big", "0");
    RT(fd, ":1\r\n", "HSET", "hero:h", "small", "-9223372036854775808");
    RT(fd, "-ERR increment or decrement would overflow\r\n", "HINCRBY", "hero:h", "small", "-1");
    RT(fd, ":-1\r\n", "HINCRBY", "hero:h", "small", "9223372036854775807");
    RT(fd, "$2\r\n-2\r\n", "HGET", "hero:h", "n");
    close(fd);
    stop();
}
END_TEST

/* Fields and values are bytes: NUL, CR and LF inside them come back as
 * sent. */
START_TEST(test_hash_binary)
{
    start(NULL);
    int fd = conn();
    static const char field[] = "k\0\r\nz", value[] = "v\0\r\n\r\nw";
    const char *set[] = {"HSET", "hero:bin", field, value};
    const size_t set_len[] = {4, 8, sizeof field - 1, sizeof value - 1};
    struct sb s = {0};
    req_add(&s, 4, set, set_len);
    systest_send(fd, s.p, s.n);
    systest_expect(fd, ":1\r\n");
    free(s.p);
    s = (struct sb){0};
    const char *get[] = {"HGET", "hero:bin", field};
    const size_t get_len[] = {4, 8, sizeof field - 1};
    req_add(&s, 3, get, get_len);
    systest_send(fd, s.p, s.n);
    static const char got[] = "$7\r\nv\0\r\n\r\nw\r\n";
    systest_expect_bytes(fd, got, sizeof got - 1);
    free(s.p);
    RT(fd, NULLBULK, "HGET", "hero:bin", "k");
    systest_sends(fd, REQ("HGETALL", "hero:bin"));
    static const char all[] = "*2\r\n$5\r\nk\0\r\nz\r\n$7\r\nv\0\r\n\r\nw\r\n";
    systest_expect_bytes(fd, all, sizeof all - 1);
    close(fd);
    stop();
}
END_TEST

/* List commands on a hash and hash commands on a list: WRONGTYPE, nothing
 * changed.  BLPOP checks its keys in order: an empty one before a hash
 * does not save it, a non-empty list before a hash is popped. */
START_TEST(test_wrongtype)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":1\r\n", "HSET", "hero:h", "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:l", "a");
    static const char *const on_hash[][5] = {
        {"LPUSH", "hero:h", "x"},
        {"RPUSH", "hero:h", "x"},
        {"LPOP", "hero:h"},
        {"RPOP", "hero:h", "2"},
        {"LLEN", "hero:h"},
        {"LRANGE", "hero:h", "0", "-1"},
        {"LINDEX", "hero:h", "0"},
        {"LREM", "hero:h", "0", "x"},
        {"LTRIM", "hero:h", "0", "1"},
        {"BLPOP", "hero:h", "0"},
        {"BRPOP", "hero:h", "0.1"},
        {"BLPOP", "hero:none", "hero:h", "0"},
        {"HSET", "hero:l", "f", "v"},
        {"HMSET", "hero:l", "f", "v"},
        {"HSETNX", "hero:l", "f", "v"},
        {"HGET", "hero:l", "f"},
        {"HMGET", "hero:l", "f"},
        {"HGETALL", "hero:l"},
        {"HDEL", "hero:l", "f"},
        {"HEXISTS", "hero:l", "f"},
        {"HLEN", "hero:l"},
        {"HKEYS", "hero:l"},
        {"HVALS", "hero:l"},
        {"HINCRBY", "hero:l", "f", "1"},
    };
    for (size_t i = 0; i < sizeof on_hash / sizeof on_hash[0]; i++) {
        size_t n = 0;
        while (n < 5 && on_hash[i][n] != NULL)
            n++;
        struct sb s = {0};
        req_add(&s, n, on_hash[i], NULL);
        systest_send(fd, s.p, s.n);
        free(s.p);
        systest_expect(fd, WRONGTYPE);
    }
    RT(fd, ARR("f", "v"), "HGETALL", "hero:h");
    RT(fd, ARR("a"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ARR("hero:l", "a"), "BLPOP", "hero:l", "hero:h", "0");
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Lists */

/* LPUSH and RPUSH answer the new length (LPUSH's values in turn at the
 * head); LPOP and RPOP one element; LLEN. */
START_TEST(test_push_pop)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":3\r\n", "LPUSH", "hero:l", "c", "b", "a");
    RT(fd, ":5\r\n", "RPUSH", "hero:l", "d", "e");
    RT(fd, ARR("a", "b", "c", "d", "e"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ":5\r\n", "LLEN", "hero:l");
    RT(fd, "$1\r\na\r\n", "LPOP", "hero:l");
    RT(fd, "$1\r\ne\r\n", "RPOP", "hero:l");
    RT(fd, ":3\r\n", "LLEN", "hero:l");
    RT(fd, ":0\r\n", "LLEN", "hero:nope");
    RT(fd, ":2\r\n", "LPUSH", "hero:m", "1", "2");
    RT(fd, ARR("2", "1"), "LRANGE", "hero:m", "0", "-1");
    close(fd);
    stop();
}
END_TEST

/* LPOP and RPOP with a count: an array (empty for 0, short when the list
 * is); on a missing key a null bulk without a count, a null array with
 * one (0 too); a negative or non-integer count is Redis's "must be
 * positive". */
START_TEST(test_pop_count)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":5\r\n", "RPUSH", "hero:l", "a", "b", "c", "d", "e");
    RT(fd, EMPTY, "LPOP", "hero:l", "0");
    RT(fd, EMPTY, "RPOP", "hero:l", "0");
    RT(fd, ARR("a", "b"), "LPOP", "hero:l", "2");
    RT(fd, ARR("e", "d"), "RPOP", "hero:l", "2");
    RT(fd, POSITIVE, "LPOP", "hero:l", "-1");
    RT(fd, POSITIVE, "RPOP", "hero:l", "-1");
    RT(fd, POSITIVE, "LPOP", "hero:l", "x");
    RT(fd, POSITIVE, "RPOP", "hero:l", "1.5");
    RT(fd, ARR("c"), "RPOP", "hero:l", "10");
    RT(fd, NULLBULK, "LPOP", "hero:l");
    RT(fd, NULLBULK, "RPOP", "hero:l");
    RT(fd, NULLARRAY, "LPOP", "hero:l", "2");
    RT(fd, NULLARRAY, "RPOP", "hero:l", "2");
    RT(fd, NULLARRAY, "LPOP", "hero:l", "0");
    RT(fd, POSITIVE, "LPOP", "hero:l", "-1");
    RT(fd, POSITIVE, "LPOP", "hero:l", "x");
    close(fd);
    stop();
}
END_TEST

/* LRANGE with negative and out-of-range indexes, LINDEX, bad integers. */
START_TEST(test_range_index)
{
    start(NULL);
    int fd = conn();
    RT(fd, EMPTY, "LRANGE", "hero:l", "0", "-1");
    RT(fd, NULLBULK, "LINDEX", "hero:l", "0");
    RT(fd, ":5\r\n", "RPUSH", "hero:l", "a", "b", "c", "d", "e");
    RT(fd, ARR("c", "d", "e"), "LRANGE", "hero:l", "-3", "-1");
    RT(fd, ARR("a", "b", "c", "d", "e"), "LRANGE", "hero:l", "-100", "100");
    RT(fd, ARR("b", "c"), "LRANGE", "hero:l", "1", "2");
    RT(fd, EMPTY, "LRANGE", "hero:l", "3", "1");
    RT(fd, EMPTY, "LRANGE", "hero:l", "5", "10");
    RT(fd, EMPTY, "LRANGE", "hero:l", "-1", "-2");
    RT(fd, NOTINT, "LRANGE", "hero:l", "1", "x");
    RT(fd, NOTINT, "LRANGE", "hero:l", "1.0", "2");
    RT(fd, "$1\r\na\r\n", "LINDEX", "hero:l", "0");
    RT(fd, "$1\r\ne\r\n", "LINDEX", "hero:l", "-1");
    RT(fd, "$1\r\na\r\n", "LINDEX", "hero:l", "-5");
    RT(fd, NULLBULK, "LINDEX", "hero:l", "5");
    RT(fd, NULLBULK, "LINDEX", "hero:l", "-6");
    RT(fd, NOTINT, "LINDEX", "hero:l", "x");
    /* as Redis: LINDEX reads the key before the index; the others the
     * integers first */
    RT(fd, NULLBULK, "LINDEX", "hero:none", "x");
    RT(fd, ":1\r\n", "HSET", "hero:h", "f", "v");
    RT(fd, WRONGTYPE, "LINDEX", "hero:h", "x");
    RT(fd, NOTINT, "LRANGE", "hero:h", "x", "1");
    RT(fd, NOTINT, "LTRIM", "hero:h", "0", "x");
    RT(fd, NOTINT, "LREM", "hero:h", "x", "v");
    RT(fd, NOTINT, "LRANGE", "hero:none", "x", "1");
    close(fd);
    stop();
}
END_TEST

/* LREM from the head (count > 0), from the tail (< 0), all (0); LTRIM
 * keeps a range; either can empty the list, which removes the key. */
START_TEST(test_lrem_ltrim)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":7\r\n", "RPUSH", "hero:l", "x", "a", "x", "b", "x", "c", "x");
    RT(fd, ":2\r\n", "LREM", "hero:l", "2", "x");
    RT(fd, ARR("a", "b", "x", "c", "x"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ":1\r\n", "LREM", "hero:l", "-1", "x");
    RT(fd, ARR("a", "b", "x", "c"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ":6\r\n", "RPUSH", "hero:l", "x", "x");
    RT(fd, ":3\r\n", "LREM", "hero:l", "0", "x");
    RT(fd, ARR("a", "b", "c"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ":0\r\n", "LREM", "hero:l", "0", "zz");
    RT(fd, ":0\r\n", "LREM", "hero:nope", "0", "zz");
    RT(fd, NOTINT, "LREM", "hero:l", "x", "zz");
    RT(fd, OK, "LTRIM", "hero:l", "1", "-1");
    RT(fd, ARR("b", "c"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, NOTINT, "LTRIM", "hero:l", "0", "x");
    RT(fd, OK, "LTRIM", "hero:nope", "0", "1");
    RT(fd, ":0\r\n", "EXISTS", "hero:nope");
    RT(fd, OK, "LTRIM", "hero:l", "5", "10");
    RT(fd, ":0\r\n", "EXISTS", "hero:l");
    RT(fd, ":2\r\n", "RPUSH", "hero:l", "a", "b");
    RT(fd, ":1\r\n", "LREM", "hero:l", "0", "a");
    RT(fd, ":1\r\n", "LREM", "hero:l", "0", "b");
    RT(fd, ":0\r\n", "EXISTS", "hero:l");
    RT(fd, "+none\r\n", "TYPE", "hero:l");
    close(fd);
    stop();
}
END_TEST

/* A list emptied by pops is gone: EXISTS 0, TYPE none, not in KEYS or
 * DBSIZE; a push makes it anew without the old expiry. */
START_TEST(test_list_vanishes)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":2\r\n", "RPUSH", "hero:l", "a", "b");
    RT(fd, ":1\r\n", "EXPIRE", "hero:l", "100");
    RT(fd, "$1\r\na\r\n", "LPOP", "hero:l");
    RT(fd, ARR("b"), "RPOP", "hero:l", "5");
    RT(fd, ":0\r\n", "EXISTS", "hero:l");
    RT(fd, "+none\r\n", "TYPE", "hero:l");
    RT(fd, EMPTY, "KEYS", "*");
    RT(fd, ":0\r\n", "DBSIZE");
    RT(fd, ":-2\r\n", "TTL", "hero:l");
    RT(fd, ":1\r\n", "RPUSH", "hero:l", "a");
    RT(fd, ":-1\r\n", "TTL", "hero:l");
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Keys */

/* EXISTS counts every key named that exists (a key named twice twice);
 * DEL and UNLINK count the keys they removed (once each); TYPE. */
START_TEST(test_exists_del_type)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":1\r\n", "HSET", "hero:job:1", "f", "v");
    RT(fd, ":1\r\n", "HSET", "hero:job:2", "f", "v");
    RT(fd, ":1\r\n", "HSET", "hero:job:10", "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:a", "x");
    RT(fd, ":3\r\n", "EXISTS", "hero:job:1", "hero:job:1", "hero:nope", "hero:queue:a");
    RT(fd, ":0\r\n", "EXISTS", "hero:nope");
    RT(fd, "+hash\r\n", "TYPE", "hero:job:1");
    RT(fd, "+list\r\n", "TYPE", "hero:queue:a");
    RT(fd, "+none\r\n", "TYPE", "hero:nope");
    RT(fd, ":2\r\n", "DEL", "hero:job:1", "hero:job:1", "hero:nope", "hero:job:2");
    RT(fd, ":2\r\n", "UNLINK", "hero:job:10", "hero:nope", "hero:queue:a");
    RT(fd, ":0\r\n", "DEL", "hero:job:1");
    RT(fd, ":0\r\n", "EXISTS", "hero:job:1", "hero:job:2", "hero:job:10", "hero:queue:a");
    close(fd);
    stop();
}
END_TEST

/* KEYS with Redis's glob: ? and *, [a-c], [^a] (and [!a], where ! is a
 * member, not a negation), a backslash taking the next byte as it is;
 * the order is the server's, so the keys are compared sorted. */
START_TEST(test_keys_patterns)
{
    start(NULL);
    int fd = conn();
    static const char *const hashes[] = {"hero:job:1", "hero:job:2", "hero:job:10", "hero:*",
                                         "hero:a?b"};
    for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
        RT(fd, ":1\r\n", "HSET", hashes[i], "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:a", "x");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:b", "x");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:d", "x");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:job:?")), "hero:job:1 hero:job:2");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:job:*")), "hero:job:1 hero:job:10 hero:job:2");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:queue:[a-c]")), "hero:queue:a hero:queue:b");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:queue:[^a]")), "hero:queue:b hero:queue:d");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:queue:[!a]")), "hero:queue:a");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:\\*")), "hero:*");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:a\\?b")), "hero:a?b");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "*")),
                     "hero:* hero:a?b hero:job:1 hero:job:10 hero:job:2 hero:queue:a "
                     "hero:queue:b hero:queue:d");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "hero:*")),
                     "hero:* hero:a?b hero:job:1 hero:job:10 hero:job:2 hero:queue:a "
                     "hero:queue:b hero:queue:d");
    RT(fd, EMPTY, "KEYS", "nomatch*");
    RT(fd, EMPTY, "KEYS", "");
    RT(fd, ARR("hero:job:10"), "KEYS", "hero:job:10");
    close(fd);
    stop();
}
END_TEST

/* SCAN with MATCH, COUNT and TYPE (in any case, the last of each option
 * wins): with few keys and a big COUNT one call returns cursor "0" and
 * every match; a walk with COUNT 1 sees every key by the time the cursor
 * is "0" again; Redis's errors for a bad cursor, COUNT, or option. */
START_TEST(test_scan)
{
    start(NULL);
    int fd = conn();
    static const char *const hashes[] = {"hero:job:1", "hero:job:2", "hero:job:10", "hero:a"};
    for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
        RT(fd, ":1\r\n", "HSET", hashes[i], "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:a", "x");
    RT(fd, ":1\r\n", "RPUSH", "hero:queue:b", "x");
    char cursor[32];
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "MATCH", "hero:job:*", "COUNT", "100"), cursor, sizeof cursor),
        "hero:job:1 hero:job:10 hero:job:2");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(scan(fd, REQ("SCAN", "0", "MATCH", "hero:*", "TYPE", "list", "COUNT", "100"),
                          cursor, sizeof cursor),
                     "hero:queue:a hero:queue:b");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "TYPE", "HASH", "COUNT", "1000"), cursor, sizeof cursor),
        "hero:a hero:job:1 hero:job:10 hero:job:2");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "match", "hero:job:1", "count", "100"), cursor, sizeof cursor),
        "hero:job:1");
    ck_assert_str_eq(
        scan(fd,
             REQ("SCAN", "0", "MATCH", "nomatch", "MATCH", "hero:a", "COUNT", "1", "COUNT", "100"),
             cursor, sizeof cursor),
        "hero:a");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "MATCH", "nomatch*", "COUNT", "100"), cursor, sizeof cursor), "");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "TYPE", "string", "COUNT", "100"), cursor, sizeof cursor), "");
    ck_assert_str_eq(cursor, "0");
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "TYPE", "bogus", "COUNT", "100"), cursor, sizeof cursor), "");
    ck_assert_str_eq(cursor, "0");
    /* a whole walk, one key at a time */
    char seen[16][32];
    int nseen = 0, calls = 0;
    snprintf(cursor, sizeof cursor, "0");
    do {
        ck_assert_int_lt(calls++, 100);
        systest_sends(fd, REQ("SCAN", cursor, "COUNT", "1"));
        systest_expect(fd, "*2\r\n");
        snprintf(cursor, sizeof cursor, "%s", read_bulk(fd, NULL));
        const char *head = systest_read_line(fd);
        ck_assert_msg(head[0] == '*', "not an array: %s", head);
        for (int n = atoi(head + 1); n > 0; n--) {
            const char *key = read_bulk(fd, NULL);
            bool known = false;
            for (int i = 0; i < nseen; i++)
                known |= strcmp(seen[i], key) == 0;
            if (!known) {
                ck_assert_int_lt(nseen, 16);
                snprintf(seen[nseen++], sizeof seen[0], "%s", key);
            }
        }
    } while (strcmp(cursor, "0") != 0);
    ck_assert_int_eq(nseen, 6);
    /* errors */
    RT(fd, "-ERR invalid cursor\r\n", "SCAN", "x");
    RT(fd, "-ERR invalid cursor\r\n", "SCAN", " 0");
    RT(fd, SYNTAX, "SCAN", "0", "COUNT", "0");
    RT(fd, SYNTAX, "SCAN", "0", "COUNT", "-1");
    RT(fd, NOTINT, "SCAN", "0", "COUNT", "x");
    RT(fd, SYNTAX, "SCAN", "0", "COUNT");
    RT(fd, SYNTAX, "SCAN", "0", "MATCH");
    RT(fd, SYNTAX, "SCAN", "0", "FOO", "x");
    close(fd);
    stop();
}
END_TEST

/* DBSIZE counts the keys. */
START_TEST(test_dbsize)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":0\r\n", "DBSIZE");
    RT(fd, ":2\r\n", "HSET", "hero:a", "f", "v", "g", "w");
    RT(fd, ":3\r\n", "RPUSH", "hero:b", "1", "2", "3");
    RT(fd, ":2\r\n", "DBSIZE");
    RT(fd, ":1\r\n", "DEL", "hero:a");
    RT(fd, ":1\r\n", "DBSIZE");
    close(fd);
    stop();
}
END_TEST

/* TTL and PTTL: -1 without an expiry, -2 for a missing key; EXPIRE's TTL is
 * rounded to the nearest second; PERSIST; a write keeps the expiry; EXPIRE
 * on a missing key is 0; Redis's errors for a bad or too big time. */
START_TEST(test_expire_ttl)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":1\r\n", "HSET", "hero:a", "f", "v");
    RT(fd, ":-1\r\n", "TTL", "hero:a");
    RT(fd, ":-1\r\n", "PTTL", "hero:a");
    RT(fd, ":-2\r\n", "TTL", "hero:nope");
    RT(fd, ":-2\r\n", "PTTL", "hero:nope");
    RT(fd, ":1\r\n", "EXPIRE", "hero:a", "100");
    RT(fd, ":100\r\n", "TTL", "hero:a");
    systest_sends(fd, REQ("PTTL", "hero:a"));
    long long pttl = read_int(fd);
    ck_assert_msg(pttl > 90000 && pttl <= 100000, "PTTL %lld", pttl);
    RT(fd, ":1\r\n", "HSET", "hero:a", "g", "w");
    RT(fd, ":100\r\n", "TTL", "hero:a");
    RT(fd, ":1\r\n", "PERSIST", "hero:a");
    RT(fd, ":0\r\n", "PERSIST", "hero:a");
    RT(fd, ":0\r\n", "PERSIST", "hero:nope");
    RT(fd, ":-1\r\n", "TTL", "hero:a");
    RT(fd, ":0\r\n", "EXPIRE", "hero:nope", "100");
    RT(fd, ":0\r\n", "PEXPIRE", "hero:nope", "100");
    /* 2900 ms is 3 s to TTL, 10000 ms 10 s */
    systest_sends(fd, f("%s%s", REQ("PEXPIRE", "hero:a", "2900"), REQ("TTL", "hero:a")));
    systest_expect(fd, ":1\r\n");
    long long ttl = read_int(fd);
    if (systest_exact_timing())
        ck_assert_int_eq(ttl, 3);
    else
        ck_assert(ttl == 2 || ttl == 3);
    RT(fd, ":1\r\n", "PEXPIRE", "hero:a", "10000");
    RT(fd, ":10\r\n", "TTL", "hero:a");
    static const char *const bad[] = {"x", "1.5", "+5", " 5", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        RT(fd, NOTINT, "EXPIRE", "hero:a", bad[i]);
        RT(fd, NOTINT, "PEXPIRE", "hero:a", bad[i]);
    }
    RT(fd, "-ERR invalid expire time in 'expire' command\r\n", "EXPIRE", "hero:a",
       "9223372036854775807");
    RT(fd, "-ERR invalid expire time in 'pexpire' command\r\n", "PEXPIRE", "hero:a",
       "9223372036854775807");
    RT(fd, ":10\r\n", "TTL", "hero:a");
    close(fd);
    stop();
}
END_TEST

/* A key whose time is up is gone (EXISTS, TTL, reads, KEYS, DBSIZE); EXPIRE
 * or PEXPIRE with 0 or a negative time deletes at once. */
START_TEST(test_expire_deletes)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":1\r\n", "HSET", "hero:c", "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:d", "x");
    RT(fd, ":1\r\n", "HSET", "hero:keep", "f", "v");
    RT(fd, ":1\r\n", "PEXPIRE", "hero:c", "100");
    RT(fd, ":1\r\n", "PEXPIRE", "hero:d", "100");
    systest_sends(fd, REQ("PTTL", "hero:c"));
    long long pttl = read_int(fd);
    ck_assert_msg(pttl >= 0 && pttl <= 100, "PTTL %lld", pttl);
    systest_sleep_past(100);
    RT(fd, ":0\r\n", "EXISTS", "hero:c");
    RT(fd, ":-2\r\n", "TTL", "hero:c");
    RT(fd, NULLBULK, "HGET", "hero:c", "f");
    RT(fd, EMPTY, "LRANGE", "hero:d", "0", "-1");
    RT(fd, ARR("hero:keep"), "KEYS", "*");
    RT(fd, ":1\r\n", "DBSIZE");
    /* at once */
    RT(fd, ":1\r\n", "HSET", "hero:a", "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:b", "x");
    RT(fd, ":1\r\n", "HSET", "hero:e", "f", "v");
    RT(fd, ":1\r\n", "EXPIRE", "hero:a", "0");
    RT(fd, ":1\r\n", "EXPIRE", "hero:b", "-5");
    RT(fd, ":1\r\n", "PEXPIRE", "hero:e", "0");
    RT(fd, ":0\r\n", "EXISTS", "hero:a", "hero:b", "hero:e");
    RT(fd, ":0\r\n", "EXPIRE", "hero:a", "0");
    RT(fd, ":1\r\n", "DBSIZE");
    close(fd);
    stop();
}
END_TEST

/* workq: a key outside "hero:" (case counts; "hero:" itself is inside) is
 * refused with the key named (CR and LF shown as spaces, as Redis shows
 * them in errors), by every command that names keys, and the first
 * offending key of a multi-key command is named with nothing done (a
 * blocking pop does not block); KEYS and SCAN never show such keys. */
START_TEST(test_outside_hero_workq)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":1\r\n", "HSET", "hero:a", "f", "v");
    RT(fd, ":1\r\n", "RPUSH", "hero:l", "x");
    RT(fd, OUTSIDE("foo"), "HSET", "foo", "f", "v");
    RT(fd, OUTSIDE("foo"), "HMSET", "foo", "f", "v");
    RT(fd, OUTSIDE("foo"), "HSETNX", "foo", "f", "v");
    RT(fd, OUTSIDE("foo"), "HGET", "foo", "f");
    RT(fd, OUTSIDE("foo"), "HMGET", "foo", "f");
    RT(fd, OUTSIDE("foo"), "HGETALL", "foo");
    RT(fd, OUTSIDE("foo"), "HDEL", "foo", "f");
    RT(fd, OUTSIDE("foo"), "HEXISTS", "foo", "f");
    RT(fd, OUTSIDE("foo"), "HLEN", "foo");
    RT(fd, OUTSIDE("foo"), "HKEYS", "foo");
    RT(fd, OUTSIDE("foo"), "HVALS", "foo");
    RT(fd, OUTSIDE("foo"), "HINCRBY", "foo", "f", "1");
    RT(fd, OUTSIDE("foo"), "LPUSH", "foo", "x");
    RT(fd, OUTSIDE("foo"), "RPUSH", "foo", "x");
    RT(fd, OUTSIDE("foo"), "LPOP", "foo");
    RT(fd, OUTSIDE("foo"), "RPOP", "foo", "2");
    RT(fd, OUTSIDE("foo"), "LLEN", "foo");
    RT(fd, OUTSIDE("foo"), "LRANGE", "foo", "0", "-1");
    RT(fd, OUTSIDE("foo"), "LINDEX", "foo", "0");
    RT(fd, OUTSIDE("foo"), "LREM", "foo", "0", "x");
    RT(fd, OUTSIDE("foo"), "LTRIM", "foo", "0", "1");
    RT(fd, OUTSIDE("foo"), "TYPE", "foo");
    RT(fd, OUTSIDE("foo"), "EXPIRE", "foo", "10");
    RT(fd, OUTSIDE("foo"), "PEXPIRE", "foo", "10");
    RT(fd, OUTSIDE("foo"), "TTL", "foo");
    RT(fd, OUTSIDE("foo"), "PTTL", "foo");
    RT(fd, OUTSIDE("foo"), "PERSIST", "foo");
    RT(fd, OUTSIDE("HERO:a"), "HGET", "HERO:a", "f");
    RT(fd, OUTSIDE("hero"), "TYPE", "hero");
    RT(fd, OUTSIDE(""), "TYPE", "");
    RT(fd, OUTSIDE("a  b"), "HSET", "a\r\nb", "f", "v");
    /* multi-key: the first outside key, nothing done */
    RT(fd, OUTSIDE("foo"), "EXISTS", "hero:a", "foo", "bar");
    RT(fd, OUTSIDE("foo"), "DEL", "hero:a", "foo", "bar");
    RT(fd, OUTSIDE("bar"), "UNLINK", "hero:a", "bar", "foo");
    RT(fd, ":1\r\n", "EXISTS", "hero:a");
    RT(fd, OUTSIDE("foo"), "BLPOP", "hero:q", "foo", "0");
    RT(fd, OUTSIDE("foo"), "BRPOP", "hero:l", "foo", "0");
    RT(fd, ARR("x"), "LRANGE", "hero:l", "0", "-1");
    /* "hero:" itself is a hero key */
    RT(fd, ":1\r\n", "HSET", "hero:", "f", "v");
    RT(fd, "+hash\r\n", "TYPE", "hero:");
    /* KEYS and SCAN */
    RT(fd, EMPTY, "KEYS", "foo*");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "*")), "hero: hero:a hero:l");
    char cursor[32];
    ck_assert_str_eq(
        scan(fd, REQ("SCAN", "0", "MATCH", "foo*", "COUNT", "100"), cursor, sizeof cursor), "");
    ck_assert_str_eq(cursor, "0");
    RT(fd, ":3\r\n", "DBSIZE");
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Blocking pops */

/* Clients blocked on a key (0: for ever) are served first come first
 * served, each popping at its own end, across the keys they wait on; the
 * push answers the length before they were served, and a list they empty
 * is gone. */
START_TEST(test_blpop_fifo)
{
    start(NULL);
    int a = conn(), b = conn(), c = conn(), p = conn();
    systest_sends(a, REQ("BLPOP", "hero:q", "0"));
    let_block();
    systest_sends(b, REQ("BLPOP", "hero:q", "hero:r", "0"));
    let_block();
    systest_sends(c, REQ("BRPOP", "hero:r", "hero:q", "0"));
    let_block();
    if (systest_exact_timing())
        systest_expect_silence(a, 200);
    RT(p, ":2\r\n", "RPUSH", "hero:q", "x", "y");
    systest_expect(a, ARR("hero:q", "x"));
    systest_expect(b, ARR("hero:q", "y"));
    RT(p, ":0\r\n", "EXISTS", "hero:q");
    systest_expect_silence(c, 50);
    RT(p, ":1\r\n", "RPUSH", "hero:q", "z");
    systest_expect(c, ARR("hero:q", "z"));
    /* one pops at the head, one at the tail */
    systest_sends(a, REQ("BLPOP", "hero:q", "0"));
    let_block();
    systest_sends(b, REQ("BRPOP", "hero:q", "0"));
    let_block();
    RT(p, ":4\r\n", "RPUSH", "hero:q", "1", "2", "3", "4");
    systest_expect(a, ARR("hero:q", "1"));
    systest_expect(b, ARR("hero:q", "4"));
    RT(p, ARR("2", "3"), "LRANGE", "hero:q", "0", "-1");
    RT(p, ":1\r\n", "DEL", "hero:q");
    /* LPUSH: the last value is the head */
    systest_sends(a, REQ("BLPOP", "hero:q", "0"));
    let_block();
    RT(p, ":3\r\n", "LPUSH", "hero:q", "1", "2", "3");
    systest_expect(a, ARR("hero:q", "3"));
    RT(p, ARR("2", "1"), "LRANGE", "hero:q", "0", "-1");
    close(a);
    close(b);
    close(c);
    close(p);
    stop();
}
END_TEST

/* A timeout with a fraction: a null array once it is over, not before. */
START_TEST(test_blpop_timeout)
{
    start(NULL);
    int fd = conn();
    int64_t t0 = systest_now_ms();
    systest_sends(fd, REQ("BLPOP", "hero:q", "0.2"));
    if (systest_exact_timing())
        systest_expect_silence(fd, 120);
    systest_expect(fd, NULLARRAY);
    int64_t took = systest_now_ms() - t0;
    ck_assert_msg(took >= 190, "answered after %lld ms", (long long)took);
    t0 = systest_now_ms();
    systest_sends(fd, REQ("BRPOP", "hero:q", "hero:r", ".1"));
    systest_expect(fd, NULLARRAY);
    took = systest_now_ms() - t0;
    ck_assert_msg(took >= 90, "answered after %lld ms", (long long)took);
    /* other spellings Redis takes */
    RT(fd, NULLARRAY, "BLPOP", "hero:q", "1e-1");
    RT(fd, NULLARRAY, "BLPOP", "hero:q", "+0.1");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* A pop over several keys takes the first non-empty one in the order
 * given, at once; BRPOP at the tail. */
START_TEST(test_blpop_keys_order)
{
    start(NULL);
    int fd = conn();
    RT(fd, ":3\r\n", "RPUSH", "hero:b", "1", "2", "3");
    RT(fd, ARR("hero:b", "1"), "BLPOP", "hero:a", "hero:b", "hero:c", "0");
    RT(fd, ARR("hero:b", "3"), "BRPOP", "hero:a", "hero:b", "hero:c", "0");
    RT(fd, ":1\r\n", "RPUSH", "hero:c", "z");
    RT(fd, ARR("hero:c", "z"), "BLPOP", "hero:a", "hero:c", "hero:b", "0");
    RT(fd, ARR("hero:b", "2"), "BRPOP", "hero:c", "hero:b", "0.5");
    RT(fd, ":0\r\n", "EXISTS", "hero:a", "hero:b", "hero:c");
    close(fd);
    stop();
}
END_TEST

/* BRPOP blocks as BLPOP does and takes the tail. */
START_TEST(test_brpop)
{
    start(NULL);
    int fd = conn(), p = conn();
    systest_sends(fd, REQ("BRPOP", "hero:q", "5"));
    let_block();
    RT(p, ":3\r\n", "RPUSH", "hero:q", "a", "b", "c");
    systest_expect(fd, ARR("hero:q", "c"));
    RT(p, ARR("a", "b"), "LRANGE", "hero:q", "0", "-1");
    close(fd);
    close(p);
    stop();
}
END_TEST

/* Redis's errors for a timeout that is no number or negative. */
START_TEST(test_blocking_timeout_errors)
{
    start(NULL);
    int fd = conn();
    static const char *const nan[] = {"x", "0.5x", "nan", "", " 1", "1 ", "0,5"};
    for (size_t i = 0; i < sizeof nan / sizeof nan[0]; i++) {
        RT(fd, TIMEOUT_NAN, "BLPOP", "hero:q", nan[i]);
        RT(fd, TIMEOUT_NAN, "BRPOP", "hero:q", nan[i]);
    }
    static const char *const negative[] = {"-1", "-0.5", "-inf"};
    for (size_t i = 0; i < sizeof negative / sizeof negative[0]; i++) {
        RT(fd, TIMEOUT_NEG, "BLPOP", "hero:q", negative[i]);
        RT(fd, TIMEOUT_NEG, "BRPOP", "hero:q", negative[i]);
    }
    RT(fd, TIMEOUT_NAN, "BLPOP", "hero:q", "0.1", "x");
    RT(fd, PONG, "PING");
    close(fd);
    stop();
}
END_TEST

/* A client that leaves while blocked takes nothing: the list keeps a push
 * made after, or the next blocked client gets it. */
START_TEST(test_blocked_disconnect)
{
    start(NULL);
    int p = conn();
    int d = conn();
    systest_sends(d, REQ("BLPOP", "hero:q", "0"));
    let_block();
    close(d);
    let_block();
    RT(p, ":1\r\n", "RPUSH", "hero:q", "kept");
    RT(p, ARR("kept"), "LRANGE", "hero:q", "0", "-1");
    RT(p, ":1\r\n", "DEL", "hero:q");
    d = conn();
    int e = conn();
    systest_sends(d, REQ("BLPOP", "hero:q", "0"));
    let_block();
    systest_sends(e, REQ("BLPOP", "hero:q", "0"));
    let_block();
    close(d);
    let_block();
    RT(p, ":1\r\n", "RPUSH", "hero:q", "x");
    systest_expect(e, ARR("hero:q", "x"));
    RT(p, ":0\r\n", "EXISTS", "hero:q");
    close(e);
    close(p);
    stop();
}
END_TEST

/* A blocked client's next pipelined command waits for the pop's answer; a
 * key that becomes a hash meanwhile leaves it blocked, a list made anew
 * serves it. */
START_TEST(test_blocked_pipeline)
{
    start(NULL);
    int a = conn(), p = conn();
    systest_sends(a, f("%s%s", REQ("BLPOP", "hero:q", "0"), REQ("PING")));
    let_block();
    if (systest_exact_timing())
        systest_expect_silence(a, 100);
    RT(p, ":1\r\n", "HSET", "hero:q", "f", "v");
    systest_expect_silence(a, 100);
    RT(p, ":1\r\n", "DEL", "hero:q");
    RT(p, ":1\r\n", "RPUSH", "hero:q", "w");
    systest_expect(a, f("%s%s", ARR("hero:q", "w"), PONG));
    RT(p, ":0\r\n", "EXISTS", "hero:q");
    close(a);
    close(p);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Memory and the command log */

/* Send each request of cmds[0..n) (its arguments NULL-terminated) and
 * expect reply to each. */
static void
each_answers(int fd, const char *const (*cmds)[6], size_t n, const char *reply)
{
    for (size_t i = 0; i < n; i++) {
        size_t argc = 0;
        while (argc < 6 && cmds[i][argc] != NULL)
            argc++;
        struct sb s = {0};
        req_add(&s, argc, cmds[i], NULL);
        systest_send(fd, s.p, s.n);
        free(s.p);
        const char *l = systest_read_line(fd);
        ck_assert_msg(strcmp(f("%s\r\n", l), reply) == 0, "%s %s %s: %s", cmds[i][0], cmds[i][1],
                      argc > 2 ? cmds[i][2] : "", l);
    }
}

/* test_oom's keys as they were before the commands refused. */
static void
oom_unchanged(int fd, int keys)
{
    RT(fd, ARR("f", "v", "n", "5"), "HGETALL", "hero:h");
    RT(fd, ARR("a", "b", "c", "d", "e", "f", "g", "h", "i"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ARR("a", "1", "b", "2"), "HGETALL", "hero:x");
    RT(fd, ":0\r\n", "EXISTS", "hero:new");
    RT(fd, f(":%d\r\n", keys), "DBSIZE");
}

/* Past -max-memory, as Redis past maxmemory: the commands that add data
 * (COMMAND's denyoom: HSET, HMSET, HSETNX, HINCRBY, LPUSH, RPUSH) get
 * Redis's OOM error, checked after the arity and before anything else
 * (an odd count of HSET's arguments, an increment or a value not an
 * integer, the wrong type: as redis-server 7.0.15 answered with
 * maxmemory set under what it held), even when they would add nothing
 * (a field set to its value, HSETNX of a field there), and change
 * nothing; reads, pops, deletes and expiries go on; once deletes make
 * room, writes succeed again.  The sizes are workq's: Redis counts its
 * memory otherwise, from about 1 MB. */
START_TEST(test_oom)
{
    static const char *const extra[] = {"-max-memory", "30000", NULL};
    start_with(NULL, extra);
    int fd = conn();
    ck_assert_str_eq(flagged(fd, "denyoom"), "hincrby hmset hset hsetnx lpush rpush");
    RT(fd, ":2\r\n", "HSET", "hero:h", "f", "v", "n", "5");
    RT(fd, ":9\r\n", "RPUSH", "hero:l", "a", "b", "c", "d", "e", "f", "g", "h", "i");
    RT(fd, ":2\r\n", "HSET", "hero:x", "a", "1", "b", "2");
    /* fill it with values of 1000 bytes until one is refused */
    char *value = malloc(3501);
    memset(value, 'x', 3500);
    value[1000] = '\0';
    int filled = 0;
    for (;; filled++) {
        ck_assert_int_lt(filled, 100);
        systest_sends(fd, REQ("HSET", f("hero:fill:%04d", filled), "f", value));
        const char *l = systest_read_line(fd);
        if (strcmp(f("%s\r\n", l), OOM) == 0)
            break;
        ck_assert_msg(strcmp(l, ":1") == 0, "HSET hero:fill:%04d: %s", filled, l);
    }
    ck_assert_int_gt(filled, 10);
    RT(fd, ":0\r\n", "EXISTS", f("hero:fill:%04d", filled));
    /* without one of them it is where the last one found it, under the
     * limit: 3500 bytes more then take it well past, so that the frees
     * below leave it past (a request of more than 4 KiB may be read in
     * parts, and counted whole while it waits for the rest) */
    RT(fd, ":1\r\n", "DEL", "hero:fill:0000");
    value[1000] = 'y';
    value[3500] = '\0';
    RT(fd, ":1\r\n", "HSET", "hero:ballast", "f", value);
    free(value);
    ck_assert_uint_eq(info_number(fd, "memory", "maxmemory"), 30000);
    ck_assert_uint_gt(info_number(fd, "memory", "used_memory"), 30000);
    int keys = filled + 3; /* hero:h, hero:l, hero:x and hero:ballast */
    oom_unchanged(fd, keys);

    static const char *const refused[][6] = {
        {"HSET", "hero:h", "f", "v"}, /* the value it has */
        {"HSET", "hero:h", "f", "w"},
        {"HSET", "hero:h", "g", "w"},
        {"hset", "hero:h", "g", "w"},
        {"HSET", "hero:new", "f", "v"},
        {"HSET", "hero:h", "f", "v", "g"}, /* an odd count */
        {"HMSET", "hero:h", "f", "w"},
        {"HMSET", "hero:h", "g", "w", "k", "v"},
        {"HMSET", "hero:new", "f", "v", "g"},
        {"HSETNX", "hero:h", "f", "w"}, /* there: it would answer 0 */
        {"HSETNX", "hero:h", "g", "w"},
        {"HSETNX", "hero:new", "g", "w"},
        {"HINCRBY", "hero:h", "n", "1"},
        {"HINCRBY", "hero:h", "n", "0"},
        {"HINCRBY", "hero:h", "n", "x"}, /* not an integer */
        {"HINCRBY", "hero:h", "f", "1"}, /* nor is the value */
        {"HINCRBY", "hero:new", "n", "1"},
        {"LPUSH", "hero:l", "x"},
        {"RPUSH", "hero:l", "x", "y"},
        {"lpush", "hero:new", "x"},
        {"RPUSH", "hero:new", "x"},
        {"LPUSH", "hero:h", "x"}, /* the wrong type */
        {"HSET", "hero:l", "f", "v"},
        {"HINCRBY", "hero:l", "n", "1"},
    };
    each_answers(fd, refused, sizeof refused / sizeof refused[0], OOM);
    RT(fd, ARITY("hset"), "HSET", "hero:h", "f");
    RT(fd, ARITY("hsetnx"), "HSETNX", "hero:h", "f");
    RT(fd, ARITY("hincrby"), "HINCRBY", "hero:h", "n");
    RT(fd, ARITY("lpush"), "LPUSH", "hero:l");
    systest_sends(
        fd, f("%s%s%s", REQ("LPUSH", "hero:l", "x"), REQ("PING"), REQ("HSET", "hero:h", "f", "w")));
    systest_expect(fd, OOM PONG OOM);
    oom_unchanged(fd, keys);

    /* what adds nothing goes on */
    RT(fd, "$1\r\nv\r\n", "HGET", "hero:h", "f");
    RT(fd, ARR("v", NIL), "HMGET", "hero:h", "f", "g");
    RT(fd, ":2\r\n", "HLEN", "hero:h");
    RT(fd, ":9\r\n", "LLEN", "hero:l");
    RT(fd, "$1\r\nb\r\n", "LINDEX", "hero:l", "1");
    RT(fd, PONG, "PING");
    RT(fd, "$2\r\nhi\r\n", "ECHO", "hi");
    systest_sends(fd, REQ("INFO"));
    const char *info = read_bulk(fd, NULL);
    ck_assert_ptr_nonnull(info);
    ck_assert_msg(strncmp(info, "# Server\r\n", 10) == 0, "INFO: %s", info);
    RT(fd, ":1\r\n", "HDEL", "hero:x", "a");
    RT(fd, ":0\r\n", "HDEL", "hero:x", "zz");
    RT(fd, "$1\r\na\r\n", "LPOP", "hero:l");
    RT(fd, "$1\r\ni\r\n", "RPOP", "hero:l");
    RT(fd, ARR("b"), "LPOP", "hero:l", "1");
    RT(fd, ARR("hero:l", "c"), "BLPOP", "hero:l", "0");
    RT(fd, ARR("hero:l", "h"), "BRPOP", "hero:l", "0");
    RT(fd, ":1\r\n", "LREM", "hero:l", "0", "e");
    RT(fd, "+OK\r\n", "LTRIM", "hero:l", "0", "1");
    RT(fd, ARR("d", "f"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ":1\r\n", "EXPIRE", "hero:l", "100");
    RT(fd, ":100\r\n", "TTL", "hero:l");
    RT(fd, ":1\r\n", "PEXPIRE", "hero:l", "200000");
    RT(fd, ":200\r\n", "TTL", "hero:l");
    RT(fd, ":1\r\n", "PERSIST", "hero:l");
    RT(fd, ":-1\r\n", "TTL", "hero:l");
    RT(fd, ":0\r\n", "DEL", "hero:none");
    RT(fd, ":0\r\n", "UNLINK", "hero:none");
    RT(fd, ":1\r\n", "UNLINK", "hero:x");
    /* still past it */
    ck_assert_uint_gt(info_number(fd, "memory", "used_memory"), 30000);
    RT(fd, OOM, "HSET", "hero:h", "f", "w");
    RT(fd, OOM, "RPUSH", "hero:l", "x");
    RT(fd, ARR("f", "v", "n", "5"), "HGETALL", "hero:h");
    RT(fd, ARR("d", "f"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, f(":%d\r\n", keys - 1), "DBSIZE");

    /* room again */
    RT(fd, ":4\r\n", "DEL", "hero:ballast", "hero:fill:0001", "hero:fill:0002", "hero:fill:0003");
    ck_assert_uint_lt(info_number(fd, "memory", "used_memory"), 30000);
    RT(fd, ":0\r\n", "HSET", "hero:h", "f", "w");
    RT(fd, ":1\r\n", "HSETNX", "hero:h", "g", "1");
    RT(fd, "+OK\r\n", "HMSET", "hero:h", "k", "v");
    RT(fd, ":6\r\n", "HINCRBY", "hero:h", "n", "1");
    RT(fd, ":3\r\n", "LPUSH", "hero:l", "x");
    RT(fd, ":4\r\n", "RPUSH", "hero:l", "y");
    RT(fd, ":1\r\n", "HSET", "hero:new", "f", "v");
    RT(fd, ARR("f", "w", "n", "6", "g", "1", "k", "v"), "HGETALL", "hero:h");
    RT(fd, ARR("x", "d", "f", "y"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, f(":%d\r\n", keys - 4), "DBSIZE");
    close(fd);
    stop();
}
END_TEST

/* test_readonly_workq's keys as they were before the commands refused
 * (with hero:first when its HSET was done, its reply held). */
static void
ro_unchanged(int fd, bool first)
{
    RT(fd, ARR("f", "v", "n", "5"), "HGETALL", "hero:h");
    RT(fd, ARR("a", "b", "c", "d"), "LRANGE", "hero:l", "0", "-1");
    RT(fd, ARR("f", "v"), "HGETALL", "hero:e");
    systest_sends(fd, REQ("TTL", "hero:e"));
    long long ttl = read_int(fd);
    ck_assert_msg(ttl > 900 && ttl <= 1000, "TTL %lld", ttl);
    RT(fd, ":-1\r\n", "TTL", "hero:h");
    RT(fd, ":-1\r\n", "TTL", "hero:l");
    RT(fd, ":0\r\n", "EXISTS", "hero:new");
    RT(fd, first ? ARR("f", "1") : EMPTY, "HGETALL", "hero:first");
    RT(fd, first ? ":4\r\n" : ":3\r\n", "DBSIZE");
}

/* workq: while the command log cannot be written (a file-size limit of 1
 * byte on the server), every command COMMAND flags write, the pops
 * included, is refused with workq's READONLY error, checked after the
 * arity, a blocking pop's timeout and the keys' prefix but before
 * anything else (HSET's odd count of arguments, the wrong type, a
 * missing key or field, a value not an integer, LPOP's extra argument),
 * and changes nothing, in the log either (a restart shows the same
 * keys); reads go on.  Once the limit is lifted, the server leaves
 * read-only mode and writes succeed again.  The write whose record
 * failed first may have its reply held until that record is written.
 * The limit is set on the server's pid, so not under a wrapper. */
START_TEST(test_readonly_workq)
{
    if (systest_wrapped())
        return;
    char dir[32];
    systest_tmpdir_new(dir);
    const char *const extra[] = {"-cmdlog-path", dir, "-cmdlog-sync", "always", NULL};
    start_with(NULL, extra);
    int fd = conn();
    ck_assert_str_eq(flagged(fd, "write"), "blpop brpop del expire hdel hincrby hmset hset hsetnx "
                                           "lpop lpush lrem ltrim persist pexpire rpop rpush "
                                           "unlink");
    RT(fd, ":2\r\n", "HSET", "hero:h", "f", "v", "n", "5");
    RT(fd, ":4\r\n", "RPUSH", "hero:l", "a", "b", "c", "d");
    RT(fd, ":1\r\n", "HSET", "hero:e", "f", "v");
    RT(fd, ":1\r\n", "EXPIRE", "hero:e", "1000");
    struct rlimit old, lim;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, NULL, &old), 0);
    lim.rlim_cur = 1;
    lim.rlim_max = old.rlim_max;
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &lim, NULL), 0);
    /* the write whose record fails first may have its reply held until the
     * record is written: then go on on another connection */
    int held = -1;
    systest_sends(fd, REQ("HSET", "hero:first", "f", "1"));
    const char *l = systest_read_line_within(fd, 1000 * systest_slow());
    if (l == NULL) {
        held = fd;
        fd = conn();
    } else {
        ck_assert_str_eq(f("%s\r\n", l), READONLY);
    }
    ro_unchanged(fd, held >= 0);

    static const char *const refused[][6] = {
        {"HSET", "hero:h", "f", "w"},
        {"HSET", "hero:h", "f", "v"}, /* the value it has */
        {"hset", "hero:h", "g", "w"},
        {"HSET", "hero:new", "f", "v"},
        {"HSET", "hero:h", "f", "v", "g"}, /* an odd count */
        {"HMSET", "hero:h", "f", "w"},
        {"HMSET", "hero:new", "f", "w"},
        {"HSETNX", "hero:h", "g", "w"},
        {"HSETNX", "hero:h", "f", "w"}, /* there: it would answer 0 */
        {"HDEL", "hero:h", "f"},
        {"HDEL", "hero:h", "f", "n"},
        {"HDEL", "hero:h", "zz"}, /* not there */
        {"HINCRBY", "hero:h", "n", "1"},
        {"HINCRBY", "hero:h", "n", "x"}, /* not an integer */
        {"HINCRBY", "hero:new", "n", "1"},
        {"LPUSH", "hero:l", "x"},
        {"RPUSH", "hero:l", "x", "y"},
        {"LPUSH", "hero:new", "x"},
        {"RPUSH", "hero:h", "x"}, /* the wrong type */
        {"LPOP", "hero:l"},
        {"RPOP", "hero:l"},
        {"LPOP", "hero:l", "2"},
        {"RPOP", "hero:l", "1", "2"}, /* one argument too many */
        {"LPOP", "hero:none"},
        {"BLPOP", "hero:l", "0"},
        {"BRPOP", "hero:l", "0"},
        {"BLPOP", "hero:none", "0"}, /* it would wait */
        {"BRPOP", "hero:none", "hero:l", "1"},
        {"LREM", "hero:l", "0", "a"},
        {"LTRIM", "hero:l", "0", "0"},
        {"DEL", "hero:h"},
        {"DEL", "hero:h", "hero:l", "hero:e"},
        {"DEL", "hero:none"},
        {"UNLINK", "hero:l"},
        {"EXPIRE", "hero:h", "100"},
        {"EXPIRE", "hero:h", "0"}, /* it would delete */
        {"EXPIRE", "hero:h", "x"},
        {"PEXPIRE", "hero:l", "100000"},
        {"PEXPIRE", "hero:e", "1"},
        {"PERSIST", "hero:e"},
        {"PERSIST", "hero:h"},
    };
    each_answers(fd, refused, sizeof refused / sizeof refused[0], READONLY);
    RT(fd, ARITY("hset"), "HSET", "hero:h", "f");
    RT(fd, ARITY("del"), "DEL");
    RT(fd, ARITY("persist"), "PERSIST", "hero:e", "hero:h");
    RT(fd, TIMEOUT_NAN, "BLPOP", "hero:l", "x");
    RT(fd, TIMEOUT_NEG, "BRPOP", "hero:l", "-1");
    RT(fd, OUTSIDE("other"), "DEL", "other");
    systest_sends(fd, f("%s%s%s", REQ("LPOP", "hero:l"), REQ("PING"), REQ("DEL", "hero:h")));
    systest_expect(fd, READONLY PONG READONLY);
    /* reads go on */
    RT(fd, "$1\r\nv\r\n", "HGET", "hero:h", "f");
    RT(fd, ARR("v", "5"), "HMGET", "hero:h", "f", "n");
    RT(fd, ":4\r\n", "LLEN", "hero:l");
    RT(fd, ARR("b", "c"), "LRANGE", "hero:l", "1", "2");
    RT(fd, "+list\r\n", "TYPE", "hero:l");
    RT(fd, ":2\r\n", "EXISTS", "hero:h", "hero:e");
    RT(fd, PONG, "PING");
    ck_assert_str_eq(sorted_of(fd, REQ("KEYS", "*")),
                     held >= 0 ? "hero:e hero:first hero:h hero:l" : "hero:e hero:h hero:l");
    ro_unchanged(fd, held >= 0);

    /* room again: the server leaves read-only mode */
    ck_assert_int_eq(prlimit(srv.s.pid, RLIMIT_FSIZE, &old, NULL), 0);
    for (int tries = 0;; tries++) {
        systest_sends(fd, REQ("HSET", "hero:h", "f", "w"));
        l = systest_read_line(fd);
        if (strcmp(l, ":0") == 0)
            break;
        ck_assert_str_eq(f("%s\r\n", l), READONLY);
        ck_assert_int_lt(tries, 100 * systest_slow());
        systest_sleep_ms(50);
    }
    if (held >= 0) {
        systest_expect(held, ":1\r\n");
        close(held);
    }
    RT(fd, ":1\r\n", "HDEL", "hero:h", "n");
    RT(fd, "$1\r\na\r\n", "LPOP", "hero:l");
    RT(fd, ":1\r\n", "PERSIST", "hero:e");
    RT(fd, ":1\r\n", "RPUSH", "hero:new", "z");
    close(fd);
    /* and the log has every change made, none refused */
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            stop();
            start_with(NULL, extra);
        }
        fd = conn();
        RT(fd, ARR("f", "w"), "HGETALL", "hero:h");
        RT(fd, ARR("b", "c", "d"), "LRANGE", "hero:l", "0", "-1");
        RT(fd, ARR("f", "v"), "HGETALL", "hero:e");
        RT(fd, ":-1\r\n", "TTL", "hero:e");
        RT(fd, ARR("z"), "LRANGE", "hero:new", "0", "-1");
        RT(fd, held >= 0 ? ARR("f", "1") : EMPTY, "HGETALL", "hero:first");
        RT(fd, held >= 0 ? ":5\r\n" : ":4\r\n", "DBSIZE");
        close(fd);
    }
    stop();
    systest_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Pipelining and sizes */

/* 1000 commands in one write get 1000 replies in order; so do 1000 inline
 * PINGs. */
START_TEST(test_pipeline_1000)
{
    start(NULL);
    int fd = conn();
    struct sb out = {0}, in = {0};
    for (int i = 0; i < 1000; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        if (i % 2 == 0) {
            const char *args[] = {"RPUSH", "hero:p", v};
            req_add(&out, 3, args, NULL);
            sb_add(&in, f(":%d\r\n", i / 2 + 1));
        } else {
            const char *args[] = {"ECHO", v};
            req_add(&out, 2, args, NULL);
            sb_add(&in, f("$%zu\r\n%s\r\n", strlen(v), v));
        }
    }
    systest_send(fd, out.p, out.n);
    systest_expect_bytes(fd, in.p, in.n);
    RT(fd, ":500\r\n", "LLEN", "hero:p");
    RT(fd, ARR("v0", "v2"), "LRANGE", "hero:p", "0", "1");
    RT(fd, ARR("v998"), "LRANGE", "hero:p", "-1", "-1");
    free(out.p);
    free(in.p);
    out = (struct sb){0};
    in = (struct sb){0};
    for (int i = 0; i < 1000; i++) {
        sb_add(&out, "PING\r\n");
        sb_add(&in, PONG);
    }
    systest_send(fd, out.p, out.n);
    systest_expect_bytes(fd, in.p, in.n);
    free(out.p);
    free(in.p);
    close(fd);
    stop();
}
END_TEST

/* A value of exactly -max-payload (1 MiB by default) round-trips, any
 * bytes in it. */
START_TEST(test_big_value)
{
    start(NULL);
    int fd = conn();
    enum { MIB = 1048576 };
    char *v = malloc(MIB);
    for (size_t i = 0; i < MIB; i++)
        v[i] = (char)(i * 31 % 251);
    const char *set[] = {"HSET", "hero:big", "f", v};
    const size_t set_len[] = {4, 8, 1, MIB};
    struct sb s = {0};
    req_add(&s, 4, set, set_len);
    systest_send(fd, s.p, s.n);
    systest_expect(fd, ":1\r\n");
    free(s.p);
    RT(fd, ":1\r\n", "HSET", "hero:big", "g", "small");
    systest_sends(fd, REQ("HGET", "hero:big", "f"));
    struct sb want = {0};
    sb_add(&want, "$1048576\r\n");
    sb_addn(&want, v, MIB);
    sb_add(&want, "\r\n");
    systest_expect_bytes(fd, want.p, want.n);
    RT(fd, ":1\r\n", "HEXISTS", "hero:big", "f");
    free(want.p);
    free(v);
    close(fd);
    stop();
}
END_TEST

/* A bulk one byte over -max-payload: Redis's error for a bulk too long,
 * after the replies to what came before it, then the close. */
START_TEST(test_bulk_too_big)
{
    start(NULL);
    int fd = conn();
    systest_sends(
        fd, f("%s*4\r\n$4\r\nHSET\r\n$8\r\nhero:big\r\n$1\r\nf\r\n$1048577\r\n", REQ("PING")));
    systest_expect(fd, PONG PROTO("invalid bulk length"));
    systest_expect_closed(fd);
    close(fd);
    fd = conn();
    RT(fd, ":0\r\n", "EXISTS", "hero:big");
    close(fd);
    stop();
}
END_TEST

/* Inline commands as typed into telnet: Redis's double quotes (with \t,
 * \n, \xHH, \\ and \" escapes, other escapes the letter) and single quotes
 * (only \' escaped), blank lines skipped, LF alone ending a line, several
 * in one write. */
START_TEST(test_inline)
{
    start(NULL);
    int fd = conn();
    systest_roundtrip(fd, "HSET hero:a f \"x y\"\r\n", ":1\r\n");
    systest_roundtrip(fd, "hget hero:a f\r\n", "$3\r\nx y\r\n");
    systest_roundtrip(fd, "HSET hero:a g 'it\\'s' h \"tab\\there\\x41\\n\"\r\n", ":2\r\n");
    systest_roundtrip(fd, "HMGET hero:a g h\r\n", "*2\r\n$4\r\nit's\r\n$10\r\ntab\thereA\n\r\n");
    systest_roundtrip(fd, "ECHO \"\"\r\n", "$0\r\n\r\n");
    systest_roundtrip(fd, "ECHO \"\\xzz\"\r\n", "$3\r\nxzz\r\n");
    systest_roundtrip(fd, "ECHO \"a\\\\b\"\r\n", "$3\r\na\\b\r\n");
    systest_roundtrip(fd, "ECHO \"\\u\"\r\n", "$1\r\nu\r\n");
    systest_roundtrip(fd, "ECHO 'a\\nb'\r\n", "$4\r\na\\nb\r\n");
    systest_roundtrip(fd, "ECHO a\"b c\"\r\n", "$4\r\nab c\r\n");
    systest_roundtrip(fd, "  PING   \"hi there\"  \r\n", "$8\r\nhi there\r\n");
    systest_roundtrip(fd, "\r\n\r\n   \r\nPING\r\n", PONG);
    systest_roundtrip(fd, "RPUSH hero:l a b c\nLRANGE hero:l 0 -1\n",
                      ":3\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    systest_roundtrip(fd, "PING\r\n*1\r\n$4\r\nPING\r\nPING\r\n", PONG PONG PONG);
    close(fd);
    stop();
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Protocol errors */

/* Malformed requests: Redis's protocol error, each on a new connection,
 * then the close. */
START_TEST(test_protocol_errors)
{
    start(NULL);
    static const struct {
        const char *request, *reply;
    } cases[] = {
        {"*abc\r\n", PROTO("invalid multibulk length")},
        {"*\r\n", PROTO("invalid multibulk length")},
        {"*1 \r\n", PROTO("invalid multibulk length")},
        {"* 1\r\n", PROTO("invalid multibulk length")},
        {"*01\r\n$4\r\nPING\r\n", PROTO("invalid multibulk length")},
        {"*+1\r\n$4\r\nPING\r\n", PROTO("invalid multibulk length")},
        {"*2147483648\r\n", PROTO("invalid multibulk length")},
        {"*1\n$4\nPING\r\n", PROTO("invalid multibulk length")},
        {"*1\r\n+x\r\n", PROTO("expected '$', got '+'")},
        {"*1\r\n:1\r\n", PROTO("expected '$', got ':'")},
        {"*2\r\n$4\r\nECHO\r\nfoo\r\n", PROTO("expected '$', got 'f'")},
        {"*1\r\n$abc\r\n", PROTO("invalid bulk length")},
        {"*1\r\n$-1\r\n", PROTO("invalid bulk length")},
        {"*1\r\n$\r\n", PROTO("invalid bulk length")},
        {"*1\r\n$1 \r\n", PROTO("invalid bulk length")},
        {"*1\r\n$04\r\nPING\r\n", PROTO("invalid bulk length")},
        {"*1\r\n$+4\r\nPING\r\n", PROTO("invalid bulk length")},
        {"*1\r\n$536870913\r\n", PROTO("invalid bulk length")},
        {"\"unbalanced\r\n", PROTO("unbalanced quotes in request")},
        {"PING 'a\r\n", PROTO("unbalanced quotes in request")},
        {"PING \"a\"b\r\n", PROTO("unbalanced quotes in request")},
        {"ECHO \"a\"\"b\"\r\n", PROTO("unbalanced quotes in request")},
        {"PING\r\n*x\r\n", PONG PROTO("invalid multibulk length")},
        {"*1\r\n$4\r\nPING\r\n*1\r\n+x\r\n", PONG PROTO("expected '$', got '+'")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = conn();
        systest_sends(fd, cases[i].request);
        systest_expect(fd, cases[i].reply);
        systest_expect_closed(fd);
        close(fd);
    }
    stop();
}
END_TEST

/* Lines too long to wait for: more than 64 KiB of a line not ended (after
 * the lines already taken), for an inline request, a multibulk count, a
 * bulk length; 64 KiB is still waited for. */
START_TEST(test_protocol_long_lines)
{
    start(NULL);
    enum { LIMIT = 65536 };
    static const struct {
        const char *taken, *head; /* complete lines, then the line's start */
        char fill;
        const char *reply;
    } cases[] = {
        {"", "", 'a', PROTO("too big inline request")},
        {"", "*", '1', PROTO("too big mbulk count string")},
        {"*1\r\n", "$", '1', PROTO("too big bulk count string")},
    };
    char *buf = malloc(LIMIT + 16);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t t = strlen(cases[i].taken), h = strlen(cases[i].head);
        memcpy(buf, cases[i].taken, t);
        memcpy(buf + t, cases[i].head, h);
        memset(buf + t + h, cases[i].fill, LIMIT + 1 - h);
        int fd = conn();
        systest_send(fd, buf, t + LIMIT);
        systest_expect_silence(fd, 200);
        systest_send(fd, buf + t + LIMIT, 1);
        systest_expect(fd, cases[i].reply);
        systest_expect_closed(fd);
        close(fd);
    }
    free(buf);
    stop();
}
END_TEST

/* What Redis lets pass: an empty or negative multibulk count and blank
 * lines are skipped; the two bytes after a bulk are not checked to be CR
 * LF. */
START_TEST(test_protocol_lenient)
{
    start(NULL);
    int fd = conn();
    systest_roundtrip(fd, "*0\r\n*-1\r\n*-5\r\n\r\n\n*1\r\n$4\r\nPING\r\n", PONG);
    systest_roundtrip(fd, "*1\r\n$4\r\nPINGxx", PONG);
    systest_roundtrip(fd, "*2\r\n$4\r\nECHO\r\n$1\r\nabc*1\r\n$4\r\nPING\r\n", "$1\r\na\r\n" PONG);
    close(fd);
    stop();
}
END_TEST

static Suite *
hero_suite(void)
{
    const struct systest_group groups[] = {
        {"connection",
         {test_ping_echo, test_hello, test_hello_3_workq, test_select, test_client,
          test_client_setinfo_workq, test_quit, test_unknown_command, test_unsupported_workq,
          test_arity, NULL}},
        {"auth",
         {test_auth_required, test_auth_quit, test_auth_default_user, test_auth_wrong,
          test_auth_wrong_user, test_auth_unconfigured, test_auth_unauthenticated_limits,
          test_auth_unsupported_workq, NULL}},
        {"hashes",
         {test_hash_set_get, test_hash_del, test_hincrby, test_hash_binary, test_wrongtype, NULL}},
        {"lists",
         {test_push_pop, test_pop_count, test_range_index, test_lrem_ltrim, test_list_vanishes,
          NULL}},
        {"keys",
         {test_exists_del_type, test_keys_patterns, test_scan, test_dbsize, test_expire_ttl,
          test_expire_deletes, test_outside_hero_workq, NULL}},
        {"blocking",
         {test_blpop_fifo, test_blpop_timeout, test_blpop_keys_order, test_brpop,
          test_blocking_timeout_errors, test_blocked_disconnect, test_blocked_pipeline, NULL}},
        {"limits", {test_oom, test_readonly_workq, NULL}},
        {"pipelining", {test_pipeline_1000, test_big_value, test_bulk_too_big, test_inline, NULL}},
        {"protocol", {test_protocol_errors, test_protocol_long_lines, test_protocol_lenient, NULL}},
    };
    return systest_suite("hero", groups, sizeof groups / sizeof groups[0]);
}

int
main(void)
{
    return systest_main(hero_suite());
}
