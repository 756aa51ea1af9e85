/* check_options.c - unit tests for the server's settings (src/daemon/options.c):
 * defaults, every option, one or two dashes and "=", -v, the config file
 * and its precedence; and for the size and duration parsers they use
 * (util_parse_size, util_parse_duration_ms in src/lib/util.c).  Two suites,
 * "options" and "units".
 *
 * options_parse prints its complaints; each call here catches stdout and
 * stderr in temporary files so the messages can be compared. */
#include "lib/wq.h"
#include "daemon/options.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "lib/log.h"
#include "unit.h"
#include "lib/util.h"

#define NOT_DONE (-1) /* options_parse: go on and start */

/* ---- helpers ----------------------------------------------------------- */

static char parse_out[8192], parse_err[8192];

/* Point fd at a new temporary file; returns the saved fd. */
static int
capture_begin(int fd, FILE **tmp)
{
    *tmp = tmpfile();
    ck_assert_ptr_nonnull(*tmp);
    int saved = dup(fd);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(*tmp), fd), 0);
    return saved;
}

/* Restore fd and read what went to the temporary file into buf. */
static void
capture_end(int fd, int saved, FILE *tmp, char *buf, size_t cap)
{
    dup2(saved, fd);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, cap - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

/* options_parse of "workq-server" and the NULL-terminated words; what it
 * printed is in parse_out and parse_err.  Returns its status. */
static int
parse(struct options *o, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = "workq-server";
    va_list ap;
    va_start(ap, o);
    for (char *w; (w = va_arg(ap, char *)) != NULL;) {
        ck_assert_int_lt(argc, 63);
        argv[argc++] = w;
    }
    va_end(ap);
    argv[argc] = NULL;

    FILE *tout, *terr;
    fflush(stdout);
    fflush(stderr);
    int sout = capture_begin(STDOUT_FILENO, &tout);
    int serr = capture_begin(STDERR_FILENO, &terr);
    int status = options_parse(o, argc, argv);
    fflush(stdout);
    fflush(stderr);
    capture_end(STDOUT_FILENO, sout, tout, parse_out, sizeof parse_out);
    capture_end(STDERR_FILENO, serr, terr, parse_err, sizeof parse_err);
    return status;
}

/* parse, expect success, and leave the result in o (free it). */
#define PARSE_OK(o, ...)                                                                           \
    do {                                                                                           \
        int st_ = parse((o), __VA_ARGS__, (char *)NULL);                                           \
        ck_assert_msg(st_ == NOT_DONE, "status %d, stderr: %s", st_, parse_err);                   \
        ck_assert_str_eq(parse_err, "");                                                           \
    } while (0)

/* parse, expect status and exactly the message "workq-server: <msg>\n". */
static void
expect_error(int status, const char *msg, char *const *words)
{
    struct options o;
    char *argv[16];
    int argc = 0;
    argv[argc++] = "workq-server";
    for (size_t i = 0; words[i] != NULL; i++)
        argv[argc++] = words[i];
    argv[argc] = NULL;
    FILE *terr;
    int serr = capture_begin(STDERR_FILENO, &terr);
    int got = options_parse(&o, argc, argv);
    fflush(stderr);
    capture_end(STDERR_FILENO, serr, terr, parse_err, sizeof parse_err);
    options_free(&o);
    ck_assert_msg(got == status, "%s: status %d, want %d (stderr: %s)", words[0], got, status,
                  parse_err);
    char want[1024];
    snprintf(want, sizeof want, "workq-server: %s\n", msg);
    ck_assert_str_eq(parse_err, want);
}

#define EXPECT_ERROR(status, msg, ...)                                                             \
    expect_error((status), (msg), (char *const[]){__VA_ARGS__, NULL})

/* A temporary config file with text; its path in path (>= 32 bytes). */
static void
config_file(char *path, const char *text)
{
    strcpy(path, "/tmp/wq-options-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

/* path made absolute against the working directory. */
static const char *
absolute(const char *path)
{
    static char buf[8192];
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(buf, sizeof buf, "%s/%s", cwd, path);
    return buf;
}

/* ---- options ----------------------------------------------------------- */

START_TEST(test_defaults)
{
    struct options o;
    PARSE_OK(&o, NULL);
    ck_assert_uint_eq(o.listen.n, 1);
    ck_assert_str_eq(o.listen.addr[0].host, WQ_DEFAULT_HOST);
    ck_assert_str_eq(o.listen.addr[0].port, WQ_DEFAULT_PORT);
    ck_assert_uint_eq(o.max_line, WQ_DEFAULT_MAX_LINE);
    ck_assert_uint_eq(o.max_payload, WQ_DEFAULT_MAX_PAYLOAD);
    ck_assert_ptr_null(o.cmdlog.dir);
    ck_assert_uint_eq(o.cmdlog.seg_size, CMDLOG_DEFAULT_SEG_SIZE);
    ck_assert_int_eq(o.cmdlog.sync, CMDLOG_SYNC_INTERVAL);
    ck_assert_uint_eq(o.cmdlog.sync_int_ms, CMDLOG_DEFAULT_SYNC_INT);
    ck_assert_uint_eq(o.cmdlog.clean_int_ms, CMDLOG_DEFAULT_CLEAN_INT);
    ck_assert(!o.cmdlog.truncate_damage);
    ck_assert(!o.daemonize);
    ck_assert_ptr_null(o.pidfile);
    ck_assert_ptr_null(o.user);
    ck_assert_int_eq(o.log_level, LOG_LVL_INFO);
    ck_assert_int_eq(o.log_target, LOG_TO_STDERR);
    ck_assert_ptr_null(o.log_file);
    ck_assert_uint_eq(o.max_connections, 0);
    ck_assert_uint_eq(o.idle_timeout_ms, 0);
    ck_assert_uint_eq(o.max_memory, 0);
    ck_assert_ptr_null(o.config);
    ck_assert_str_eq(parse_out, "");
    options_free(&o);
}
END_TEST

START_TEST(test_listen)
{
    struct options o;
    PARSE_OK(&o, "-listen", "localhost:1");
    ck_assert_uint_eq(o.listen.n, 1);
    ck_assert_str_eq(o.listen.addr[0].host, "localhost");
    ck_assert_str_eq(o.listen.addr[0].port, "1");
    options_free(&o);

    /* a list, IPv6 in brackets, an empty host, leading zeros */
    PARSE_OK(&o, "-l", "127.0.0.1:0,[::1]:9922,:00080,0.0.0.0:65535");
    ck_assert_uint_eq(o.listen.n, 4);
    ck_assert_str_eq(o.listen.addr[0].host, "127.0.0.1");
    ck_assert_str_eq(o.listen.addr[0].port, "0");
    ck_assert_str_eq(o.listen.addr[1].host, "::1");
    ck_assert_str_eq(o.listen.addr[1].port, "9922");
    ck_assert_str_eq(o.listen.addr[2].host, "");
    ck_assert_str_eq(o.listen.addr[2].port, "80");
    ck_assert_str_eq(o.listen.addr[3].port, "65535");
    options_free(&o);

    /* a later flag replaces the whole list */
    PARSE_OK(&o, "-l", "a:1,b:2,c:3", "--listen=d:4");
    ck_assert_uint_eq(o.listen.n, 1);
    ck_assert_str_eq(o.listen.addr[0].host, "d");
    options_free(&o);

    /* eight at most */
    PARSE_OK(&o, "-l", "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8");
    ck_assert_uint_eq(o.listen.n, 8);
    ck_assert_str_eq(o.listen.addr[7].port, "8");
    options_free(&o);
    const char *why = "(expected HOST:PORT[,HOST:PORT...])";
    static const char *const bad[] = {
        "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9",
        "nonsense",
        "a:",
        "a:65536",
        "a:-1",
        "a:1,",
        ",a:1",
        "::1:80",
        "[::1:80",
        "[]:80",
        "a:1 ",
        "",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        char msg[256];
        snprintf(msg, sizeof msg, "invalid -listen '%s' %s", bad[i], why);
        EXPECT_ERROR(EX_USAGE, msg, "--listen", (char *)bad[i]);
    }
    /* options_set_listen leaves the list alone on failure */
    PARSE_OK(&o, "-l", "x:1,y:2");
    ck_assert_int_eq(options_set_listen(&o.listen, "z:3,bad"), -1);
    ck_assert_uint_eq(o.listen.n, 2);
    ck_assert_str_eq(o.listen.addr[1].host, "y");
    options_free(&o);
}
END_TEST

/* Every long option takes one dash or two, and "-flag value" or
 * "-flag=value". */
START_TEST(test_dash_forms)
{
    static const char *const forms[][3] = {
        {"-max-line", "100", NULL},
        {"--max-line", "100", NULL},
        {"-max-line=100", NULL, NULL},
        {"--max-line=100", NULL, NULL},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(forms); i++) {
        struct options o;
        PARSE_OK(&o, (char *)forms[i][0], (char *)forms[i][1]);
        ck_assert_uint_eq(o.max_line, 100);
        options_free(&o);
    }
    struct options o;
    PARSE_OK(&o, "-idle-timeout=5m", "--max-memory", "2G", "-max-connections", "9",
             "--log-level=debug", "-user=svc", "--daemonize", "-syslog");
    ck_assert_uint_eq(o.idle_timeout_ms, 300000);
    ck_assert_uint_eq(o.max_memory, 2ull << 30);
    ck_assert_uint_eq(o.max_connections, 9);
    ck_assert_int_eq(o.log_level, LOG_LVL_DEBUG);
    ck_assert_str_eq(o.user, "svc");
    ck_assert(o.daemonize);
    ck_assert_int_eq(o.log_target, LOG_TO_SYSLOG);
    options_free(&o);

    /* the short letters */
    PARSE_OK(&o, "-d", "-l", "h:5", "-P", "/run/x.pid", "-u", "svc", "-L", "/var/log/x.log");
    ck_assert(o.daemonize);
    ck_assert_str_eq(o.listen.addr[0].host, "h");
    ck_assert_str_eq(o.pidfile, "/run/x.pid");
    ck_assert_str_eq(o.user, "svc");
    ck_assert_str_eq(o.log_file, "/var/log/x.log");
    ck_assert_int_eq(o.log_target, LOG_TO_FILE);
    options_free(&o);
    /* short letters together, and glued to their value */
    PARSE_OK(&o, "-dv", "-l127.0.0.1:7");
    ck_assert(o.daemonize);
    ck_assert_int_eq(o.log_level, LOG_LVL_DEBUG);
    ck_assert_str_eq(o.listen.addr[0].port, "7");
    options_free(&o);
}
END_TEST

START_TEST(test_sizes)
{
    static const struct {
        const char *v;
        uint64_t want;
    } mem[] = {
        {"0", 0},
        {"1", 1},
        {"512", 512},
        {"1B", 1},
        {"1K", 1024},
        {"1k", 1024},
        {"3KB", 3072},
        {"3KiB", 3072},
        {"512M", 512ull << 20},
        {"512mb", 512ull << 20},
        {"2G", 2ull << 30},
        {"2gib", 2ull << 30},
        {"1T", 1ull << 40},
        {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(mem); i++) {
        struct options o;
        PARSE_OK(&o, "--max-memory", (char *)mem[i].v);
        ck_assert_msg(o.max_memory == mem[i].want, "%s: %llu", mem[i].v,
                      (unsigned long long)o.max_memory);
        options_free(&o);
    }
    const char *why = "(expected bytes, or a size such as 512M or 2G; 0 means no limit)";
    static const char *const bad[] = {"12Q",  "",    "M",  "-1",        "+1",
                                      "1.5G", "1 K", " 1", "16777216T", "18446744073709551616",
                                      "1KK",  "1Ki"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        char msg[256];
        snprintf(msg, sizeof msg, "invalid -max-memory '%s' %s", bad[i], why);
        EXPECT_ERROR(EX_USAGE, msg, "--max-memory", (char *)bad[i]);
    }

    /* the other sizes take units too, within their ranges */
    struct options o;
    PARSE_OK(&o, "--max-line", "1K", "--max-payload", "2M", "--cmdlog-seg-size", "1g");
    ck_assert_uint_eq(o.max_line, 1024);
    ck_assert_uint_eq(o.max_payload, 2u << 20);
    ck_assert_uint_eq(o.cmdlog.seg_size, 1ull << 30);
    options_free(&o);
    PARSE_OK(&o, "--max-line", "64", "--max-payload", "1024M");
    ck_assert_uint_eq(o.max_line, 64);
    ck_assert_uint_eq(o.max_payload, 1024u << 20);
    options_free(&o);
    PARSE_OK(&o, "--max-line", "16M", "--max-payload", "0");
    ck_assert_uint_eq(o.max_line, 16u << 20);
    ck_assert_uint_eq(o.max_payload, 0);
    options_free(&o);
    EXPECT_ERROR(EX_USAGE, "invalid -max-line '63' (expected 64..16777216)", "--max-line", "63");
    EXPECT_ERROR(EX_USAGE, "invalid -max-line '16777217' (expected 64..16777216)", "--max-line",
                 "16777217");
    EXPECT_ERROR(EX_USAGE, "invalid -max-payload '1025M' (expected 0..1073741824)", "--max-payload",
                 "1025M");
    EXPECT_ERROR(EX_USAGE, "invalid -cmdlog-seg-size '0K' (expected a size of at least 1 byte)",
                 "--cmdlog-seg-size", "0K");
}
END_TEST

START_TEST(test_durations)
{
    static const struct {
        const char *v;
        uint64_t want;
    } ok[] = {
        {"0", 0},
        {"300", 300000},
        {"90s", 90000},
        {"90S", 90000},
        {"5m", 300000},
        {"1500ms", 1500},
        {"1500MS", 1500},
        {"2h", 7200000},
        {"720h", 2592000000ull}, /* 30 days, the most */
        {"2592000000ms", 2592000000ull},
        {"0ms", 0},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        struct options o;
        PARSE_OK(&o, "--idle-timeout", (char *)ok[i].v);
        ck_assert_msg(o.idle_timeout_ms == ok[i].want, "%s: %llu", ok[i].v,
                      (unsigned long long)o.idle_timeout_ms);
        options_free(&o);
    }
    const char *why = "(expected a duration such as 300, 90s, 5m or 1500ms; at most 30 days)";
    static const char *const bad[] = {
        "721h", "2592000001ms",        "1d", "5x", "", "s", "-1", "1.5s", "1 s",
        "5min", "18446744073709551615"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        char msg[256];
        snprintf(msg, sizeof msg, "invalid -idle-timeout '%s' %s", bad[i], why);
        EXPECT_ERROR(EX_USAGE, msg, "-idle-timeout", (char *)bad[i]);
    }
}
END_TEST

START_TEST(test_max_connections)
{
    struct options o;
    PARSE_OK(&o, "--max-connections", "10000000");
    ck_assert_uint_eq(o.max_connections, 10000000);
    options_free(&o);
    PARSE_OK(&o, "--max-connections", "0");
    ck_assert_uint_eq(o.max_connections, 0);
    options_free(&o);
    static const char *const bad[] = {"10000001", "-1", "1K", "", "x"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "invalid -max-connections '%s' (expected 0..10000000; 0 means no limit)", bad[i]);
        EXPECT_ERROR(EX_USAGE, msg, "--max-connections", (char *)bad[i]);
    }
}
END_TEST

START_TEST(test_log_options)
{
    static const struct {
        const char *v;
        enum log_level want;
    } levels[] = {
        {"error", LOG_LVL_ERROR},  {"err", LOG_LVL_ERROR}, {"warn", LOG_LVL_WARN},
        {"warning", LOG_LVL_WARN}, {"info", LOG_LVL_INFO}, {"debug", LOG_LVL_DEBUG},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(levels); i++) {
        struct options o;
        PARSE_OK(&o, "--log-level", (char *)levels[i].v);
        ck_assert_int_eq(o.log_level, levels[i].want);
        options_free(&o);
    }
    static const char *const bad[] = {"loud", "", "3", "errors"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        char msg[256];
        snprintf(msg, sizeof msg, "invalid -log-level '%s' (expected error, warn, info or debug)",
                 bad[i]);
        EXPECT_ERROR(EX_USAGE, msg, "--log-level", (char *)bad[i]);
    }

    /* -v: one level more each, capped at debug, after -log-level wherever
     * it stands */
    static const struct {
        const char *w[4];
        enum log_level want;
    } verbose[] = {
        {{"-v"}, LOG_LVL_DEBUG},
        {{"-vv"}, LOG_LVL_DEBUG},
        {{"-v", "-v", "-v"}, LOG_LVL_DEBUG},
        {{"--log-level", "error", "-v"}, LOG_LVL_WARN},
        {{"-v", "--log-level", "error"}, LOG_LVL_WARN},
        {{"-vv", "--log-level=error"}, LOG_LVL_INFO},
        {{"-v", "-log-level=err", "-v"}, LOG_LVL_INFO},
        {{"-log-level=warn", "-vvv"}, LOG_LVL_DEBUG},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(verbose); i++) {
        struct options o;
        PARSE_OK(&o, (char *)verbose[i].w[0], (char *)verbose[i].w[1], (char *)verbose[i].w[2],
                 (char *)verbose[i].w[3]);
        ck_assert_msg(o.log_level == verbose[i].want, "case %zu: level %d", i, o.log_level);
        options_free(&o);
    }

    struct options o;
    PARSE_OK(&o, "-L", "wq.log");
    ck_assert_int_eq(o.log_target, LOG_TO_FILE);
    ck_assert_str_eq(o.log_file, absolute("wq.log"));
    options_free(&o);
    PARSE_OK(&o, "--syslog");
    ck_assert_int_eq(o.log_target, LOG_TO_SYSLOG);
    options_free(&o);
    /* the later of -log-file and -syslog decides */
    PARSE_OK(&o, "--syslog", "--log-file=/x.log");
    ck_assert_int_eq(o.log_target, LOG_TO_FILE);
    options_free(&o);
    PARSE_OK(&o, "--log-file=/x.log", "-syslog");
    ck_assert_int_eq(o.log_target, LOG_TO_SYSLOG);
    options_free(&o);
    EXPECT_ERROR(EX_USAGE, "invalid -log-file '' (expected a file name)", "--log-file=");
}
END_TEST

START_TEST(test_daemon_options)
{
    ck_assert_int_eq(chdir("/tmp"), 0); /* for the relative names below */
    struct options o;
    PARSE_OK(&o, "-daemonize", "-pidfile", "run/wq.pid", "-user", "nobody", "-c", "/dev/null");
    ck_assert(o.daemonize);
    ck_assert_str_eq(o.pidfile, absolute("run/wq.pid"));
    ck_assert_str_eq(o.user, "nobody"); /* a name, not a path */
    ck_assert_str_eq(o.config, "/dev/null");
    options_free(&o);
    PARSE_OK(&o, "--pidfile=/run/wq.pid", "--cmdlog-path", "data", "--config=../dev/null");
    ck_assert_str_eq(o.pidfile, "/run/wq.pid");
    ck_assert_str_eq(o.cmdlog.dir, absolute("data"));
    ck_assert_str_eq(o.config, absolute("../dev/null"));
    options_free(&o);
    EXPECT_ERROR(EX_USAGE, "invalid -pidfile '' (expected a file name)", "-P", "");
    EXPECT_ERROR(EX_USAGE, "invalid -user '' (expected a user name)", "--user=");
    EXPECT_ERROR(EX_USAGE, "option '-pidfile' needs a value", "-pidfile");
    EXPECT_ERROR(EX_USAGE, "option '--user' needs a value", "-d", "--user");
    EXPECT_ERROR(EX_USAGE, "unknown option '--daemonize=yes' (see -help)", "--daemonize=yes");
}
END_TEST

START_TEST(test_cmdlog_options)
{
    struct options o;
    PARSE_OK(&o, "-cmdlog-path", "/d", "-cmdlog-sync", "always", "-cmdlog-sync-int", "10",
             "-cmdlog-clean-int", "20", "-cmdlog-truncate");
    ck_assert_str_eq(o.cmdlog.dir, "/d");
    ck_assert_int_eq(o.cmdlog.sync, CMDLOG_SYNC_ALWAYS);
    ck_assert_uint_eq(o.cmdlog.sync_int_ms, 10);
    ck_assert_uint_eq(o.cmdlog.clean_int_ms, 20);
    ck_assert(o.cmdlog.truncate_damage);
    options_free(&o);
    EXPECT_ERROR(EX_USAGE, "invalid -cmdlog-sync 'sometimes' (expected os, interval or always)",
                 "-cmdlog-sync", "sometimes");
    EXPECT_ERROR(EX_USAGE, "invalid -cmdlog-clean-int '0' (expected milliseconds, at least 1)",
                 "-cmdlog-clean-int", "0");
}
END_TEST

START_TEST(test_usage_errors)
{
    EXPECT_ERROR(EX_USAGE, "unknown option '--bogus' (see -help)", "--bogus");
    EXPECT_ERROR(EX_USAGE, "unknown option '-x' (see -help)", "-x");
    EXPECT_ERROR(EX_USAGE, "unexpected argument 'stray' (see -help)", "stray");
    EXPECT_ERROR(EX_USAGE, "unexpected argument 'stray' (see -help)", "-d", "stray", "-v");
    EXPECT_ERROR(EX_USAGE, "option '-listen' needs a value", "-listen");
    /* an unknown name is named as typed, never read as bundled letters,
     * with the nearest flag when one is close */
    EXPECT_ERROR(EX_USAGE, "unknown option '-debug' (see -help)", "-debug");
    EXPECT_ERROR(EX_USAGE, "unknown option '-verbose' (see -help)", "-l", "127.0.0.1:1",
                 "-verbose");
    EXPECT_ERROR(EX_USAGE, "unknown option '-listn' (did you mean -listen? see -help)", "-listn",
                 "127.0.0.1:1");
    EXPECT_ERROR(EX_USAGE, "unknown option '-cmdlog-pth' (did you mean -cmdlog-path? see -help)",
                 "-cmdlog-pth", "/tmp");
    EXPECT_ERROR(EX_USAGE,
                 "unknown option '--max-conections' (did you mean -max-connections? see "
                 "-help)",
                 "--max-conections=5");
    EXPECT_ERROR(EX_USAGE, "unknown option '-confg' (did you mean -config? see -help)", "-confg",
                 "x");
    /* the first bad flag decides, before any config file is read */
    EXPECT_ERROR(EX_USAGE, "unknown option '--bogus' (see -help)", "-c", "/nonexistent/x.conf",
                 "--bogus");
}
END_TEST

START_TEST(test_help_version)
{
    static const char *const help[] = {"-h", "-help", "--help"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(help); i++) {
        struct options o;
        ck_assert_int_eq(parse(&o, (char *)help[i], (char *)NULL), 0);
        options_free(&o);
        ck_assert_msg(strncmp(parse_out, "Usage: workq-server", 19) == 0, "%s", parse_out);
        ck_assert_str_eq(parse_err, "");
    }
    static const char *const version[] = {"-V", "-version", "--version"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(version); i++) {
        struct options o;
        ck_assert_int_eq(parse(&o, (char *)version[i], (char *)NULL), 0);
        options_free(&o);
        ck_assert_str_eq(parse_out, "workq-server " PACKAGE_VERSION "\n");
    }
    /* -help wins over the flags after it, and is not applied twice */
    struct options o;
    ck_assert_int_eq(parse(&o, "-help", "--max-line", "1", (char *)NULL), 0);
    options_free(&o);
    ck_assert_uint_eq(strstr(parse_out, "Usage:") - parse_out, 0);
    ck_assert_ptr_null(strstr(parse_out + 1, "Usage:"));
}
END_TEST

/* ---- the config file --------------------------------------------------- */

START_TEST(test_config_values)
{
    char path[32];
    config_file(path, "# a comment\n"
                      "\n"
                      "listen = 127.0.0.1:1,[::1]:2\n"
                      "max-line=100\n"
                      "max-payload 1K\n"
                      "log-level\twarn\r\n"
                      "   max-connections   5   \n"
                      "idle-timeout 90s\n"
                      "max-memory = 2G\n"
                      "pidfile wq.pid\n"
                      "user = svc\n"
                      "log-file /var/log/wq.log\n"
                      "cmdlog-path = /data\n"
                      "cmdlog-sync os\n"
                      "cmdlog-seg-size 1M\n"
                      "cmdlog-sync-int 5\n"
                      "cmdlog-clean-int 6\n"
                      "cmdlog-truncate\n"
                      "daemonize = yes\n");
    struct options o;
    PARSE_OK(&o, "-c", path);
    ck_assert_uint_eq(o.listen.n, 2);
    ck_assert_str_eq(o.listen.addr[1].host, "::1");
    ck_assert_uint_eq(o.max_line, 100);
    ck_assert_uint_eq(o.max_payload, 1024);
    ck_assert_int_eq(o.log_level, LOG_LVL_WARN);
    ck_assert_uint_eq(o.max_connections, 5);
    ck_assert_uint_eq(o.idle_timeout_ms, 90000);
    ck_assert_uint_eq(o.max_memory, 2ull << 30);
    ck_assert_str_eq(o.pidfile, absolute("wq.pid"));
    ck_assert_str_eq(o.user, "svc");
    ck_assert_str_eq(o.log_file, "/var/log/wq.log");
    ck_assert_int_eq(o.log_target, LOG_TO_FILE);
    ck_assert_str_eq(o.cmdlog.dir, "/data");
    ck_assert_int_eq(o.cmdlog.sync, CMDLOG_SYNC_OS);
    ck_assert_uint_eq(o.cmdlog.seg_size, 1u << 20);
    ck_assert_uint_eq(o.cmdlog.sync_int_ms, 5);
    ck_assert_uint_eq(o.cmdlog.clean_int_ms, 6);
    ck_assert(o.cmdlog.truncate_damage);
    ck_assert(o.daemonize);
    ck_assert_str_eq(o.config, path);
    options_free(&o);
    unlink(path);

    /* an empty file changes nothing */
    config_file(path, "");
    PARSE_OK(&o, "--config", path);
    ck_assert_uint_eq(o.max_line, WQ_DEFAULT_MAX_LINE);
    ck_assert_str_eq(o.listen.addr[0].port, WQ_DEFAULT_PORT);
    options_free(&o);
    unlink(path);
}
END_TEST

START_TEST(test_config_booleans)
{
    static const struct {
        const char *v;
        bool want;
    } vals[] = {
        {"", true},     {"yes", true},  {"YES", true}, {"true", true}, {"True", true},
        {"on", true},   {"1", true},    {"no", false}, {"NO", false},  {"false", false},
        {"off", false}, {"Off", false}, {"0", false},
    };
    static const char *const keys[] = {"daemonize", "syslog", "cmdlog-truncate"};
    for (size_t k = 0; k < WQ_ARRAY_LEN(keys); k++) {
        for (size_t i = 0; i < WQ_ARRAY_LEN(vals); i++) {
            char path[32], text[128];
            snprintf(text, sizeof text, "%s %s\n", keys[k], vals[i].v);
            config_file(path, text);
            struct options o;
            PARSE_OK(&o, "-c", path);
            bool got = k == 0   ? o.daemonize
                       : k == 1 ? o.log_target == LOG_TO_SYSLOG
                                : o.cmdlog.truncate_damage;
            ck_assert_msg(got == vals[i].want, "%s", text);
            options_free(&o);
            unlink(path);
        }
    }
    /* syslog no after log-file keeps the file; after syslog, stderr again */
    char path[32];
    config_file(path, "log-file /x.log\nsyslog no\n");
    struct options o;
    PARSE_OK(&o, "-c", path);
    ck_assert_int_eq(o.log_target, LOG_TO_FILE);
    options_free(&o);
    unlink(path);
    config_file(path, "syslog\nsyslog = off\n");
    PARSE_OK(&o, "-c", path);
    ck_assert_int_eq(o.log_target, LOG_TO_STDERR);
    options_free(&o);
    unlink(path);
}
END_TEST

/* Flags override the file wherever they stand; the rest of the file holds. */
START_TEST(test_config_precedence)
{
    char path[32], eq[64];
    config_file(path, "max-line 100\nmax-connections 5\nlisten 127.0.0.1:1\nlog-level error\n"
                      "idle-timeout 1m\n");
    snprintf(eq, sizeof eq, "--config=%s", path);
    struct options o;
    PARSE_OK(&o, "--max-line", "200", "-c", path, "-l", "h:2");
    ck_assert_uint_eq(o.max_line, 200);
    ck_assert_uint_eq(o.max_connections, 5);
    ck_assert_uint_eq(o.idle_timeout_ms, 60000);
    ck_assert_str_eq(o.listen.addr[0].host, "h");
    ck_assert_int_eq(o.log_level, LOG_LVL_ERROR);
    options_free(&o);
    PARSE_OK(&o, eq, "--max-line=300", "-v", "-idle-timeout=0");
    ck_assert_uint_eq(o.max_line, 300);
    ck_assert_int_eq(o.log_level, LOG_LVL_WARN); /* the file's error, one more */
    ck_assert_str_eq(o.listen.addr[0].port, "1");
    ck_assert_uint_eq(o.idle_timeout_ms, 0);
    options_free(&o);
    /* the last -c is the one read */
    PARSE_OK(&o, "-c", "/nonexistent/x.conf", "-c", path);
    ck_assert_uint_eq(o.max_line, 100);
    options_free(&o);
    unlink(path);
}
END_TEST

START_TEST(test_config_errors)
{
    static char long_line[5000 + 2];
    memset(long_line, 'x', 5000);
    long_line[5000] = '\n';
    const struct {
        const char *text;
        int status;
        const char *tail; /* the message after "FILE:" */
    } cases[] = {
        {"\n# c\nbogus 1\n", EX_CONFIG, "3: unknown key 'bogus'"},
        {"config /x\n", EX_CONFIG, "1: unknown key 'config'"},
        {"help\n", EX_CONFIG, "1: unknown key 'help'"},
        {"version\n", EX_CONFIG, "1: unknown key 'version'"},
        {"v\n", EX_CONFIG, "1: unknown key 'v'"},
        {"max-memory 12Q\n", EX_CONFIG,
         "1: invalid max-memory '12Q' (expected bytes, or a size such as 512M or 2G; 0 means no "
         "limit)"},
        {"max-line 100 # comment\n", -1, NULL},
        {"max-line 100\t# comment\n", -1, NULL},
        {"max-line 1#00\n", EX_CONFIG, "1: invalid max-line '1#00' (expected 64..16777216)"},
        {"max-memry 1G\n", EX_CONFIG, "1: unknown key 'max-memry' (did you mean max-memory?)"},
        {"daemonize maybe\n", EX_CONFIG, "1: invalid daemonize 'maybe' (expected yes or no)"},
        {"cmdlog-truncate 2\n", EX_CONFIG, "1: invalid cmdlog-truncate '2' (expected yes or no)"},
        {"max-line\n", EX_CONFIG, "1: max-line needs a value"},
        {"user =\n", EX_CONFIG, "1: user needs a value"},
        {"max-line 100\n", -1, NULL},
        {long_line, EX_CONFIG, "1: line too long"},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(cases); i++) {
        char path[32];
        config_file(path, cases[i].text);
        struct options o;
        int st = parse(&o, "-c", path, (char *)NULL);
        options_free(&o);
        ck_assert_msg(st == cases[i].status, "case %zu: status %d", i, st);
        if (cases[i].tail != NULL) {
            char want[512];
            snprintf(want, sizeof want, "workq-server: %s:%s\n", path, cases[i].tail);
            ck_assert_str_eq(parse_err, want);
        }
        unlink(path);
    }
    EXPECT_ERROR(EX_NOINPUT,
                 "cannot read config file /nonexistent/x.conf: No such file or directory", "-c",
                 "/nonexistent/x.conf");
    EXPECT_ERROR(EX_NOINPUT, "cannot read config file /tmp: Is a directory", "-c", "/tmp");
}
END_TEST

/* Lines up to the buffer's size fit: 4094 bytes and the LF. */
START_TEST(test_config_line_length)
{
    static char text[8192];
    char path[32];
    memset(text, ' ', 4094);
    memcpy(text + 4094 - 12, "max-line 100", 12);
    strcpy(text + 4094, "\n");
    config_file(path, text);
    struct options o;
    PARSE_OK(&o, "-c", path);
    ck_assert_uint_eq(o.max_line, 100);
    options_free(&o);
    unlink(path);
}
END_TEST

/* A line of 4096 bytes with its LF (4095 before it) is not too long;
 * neither is a last line of 4095 bytes without one. */
START_TEST(test_config_line_4096)
{
    static char text[8192];
    char path[32];
    for (int lf = 1; lf >= 0; lf--) {
        memset(text, ' ', 4095);
        memcpy(text + 4095 - 12, "max-line 100", 12);
        strcpy(text + 4095, lf ? "\n" : "");
        config_file(path, text);
        struct options o;
        int st = parse(&o, "-c", path, (char *)NULL);
        options_free(&o);
        unlink(path);
        ck_assert_msg(st == NOT_DONE, "a line of 4095 bytes%s: status %d, stderr: %s",
                      lf ? " and its LF" : " at the end", st, parse_err);
        ck_assert_uint_eq(o.max_line, 100);
    }
}
END_TEST

/* ---- util_parse_size, util_parse_duration_ms ---------------------------- */

START_TEST(test_parse_size)
{
    static const struct {
        const char *s;
        uint64_t max, want;
    } ok[] = {
        {"0", UINT64_MAX, 0},
        {"00", UINT64_MAX, 0},
        {"0K", UINT64_MAX, 0},
        {"7", UINT64_MAX, 7},
        {"7b", UINT64_MAX, 7},
        {"7B", UINT64_MAX, 7},
        {"1k", UINT64_MAX, 1024},
        {"1K", UINT64_MAX, 1024},
        {"1kb", UINT64_MAX, 1024},
        {"1KiB", UINT64_MAX, 1024},
        {"1kIb", UINT64_MAX, 1024},
        {"1m", UINT64_MAX, 1u << 20},
        {"1MiB", UINT64_MAX, 1u << 20},
        {"1g", UINT64_MAX, 1u << 30},
        {"1GB", UINT64_MAX, 1u << 30},
        {"1t", UINT64_MAX, 1ull << 40},
        {"1TiB", UINT64_MAX, 1ull << 40},
        {"16777215T", UINT64_MAX, 16777215ull << 40},
        {"17179869183G", UINT64_MAX, 17179869183ull << 30},
        {"18446744073709551615", UINT64_MAX, UINT64_MAX},
        {"18014398509481983K", UINT64_MAX, 18014398509481983ull << 10},
        {"1024", 1024, 1024},
        {"1K", 1024, 1024},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        uint64_t v = 12345;
        ck_assert_msg(util_parse_size(ok[i].s, ok[i].max, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_msg(v == ok[i].want, "%s: %llu", ok[i].s, (unsigned long long)v);
    }
    static const struct {
        const char *s;
        uint64_t max;
    } bad[] = {
        {"", UINT64_MAX},
        {"K", UINT64_MAX},
        {"KB", UINT64_MAX},
        {"1X", UINT64_MAX},
        {"1KX", UINT64_MAX},
        {"1Kbb", UINT64_MAX},
        {"1bk", UINT64_MAX},
        {"1iB", UINT64_MAX},
        {"1 K", UINT64_MAX},
        {" 1", UINT64_MAX},
        {"1 ", UINT64_MAX},
        {"-1", UINT64_MAX},
        {"+1", UINT64_MAX},
        {"1.5K", UINT64_MAX},
        {"0x10", UINT64_MAX},
        {"1e3", UINT64_MAX},
        {"18446744073709551616", UINT64_MAX},
        {"99999999999999999999999", UINT64_MAX},
        {"16777216T", UINT64_MAX},
        {"17179869184G", UINT64_MAX},
        {"18014398509481984K", UINT64_MAX},
        {"1025", 1024},
        {"2K", 1024},
        {"1M", 1048575},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        uint64_t v = 12345;
        ck_assert_msg(util_parse_size(bad[i].s, bad[i].max, &v) == -1, "accepted \"%s\"", bad[i].s);
        ck_assert_uint_eq(v, 12345); /* untouched */
    }
}
END_TEST

START_TEST(test_parse_duration)
{
    const uint64_t h_max = UINT64_MAX / 3600000;
    char h_ok[32], h_over[32], s_ok[32], s_over[32];
    snprintf(h_ok, sizeof h_ok, "%lluh", (unsigned long long)h_max);
    snprintf(h_over, sizeof h_over, "%lluh", (unsigned long long)h_max + 1);
    snprintf(s_ok, sizeof s_ok, "%llu", (unsigned long long)(UINT64_MAX / 1000));
    snprintf(s_over, sizeof s_over, "%llu", (unsigned long long)(UINT64_MAX / 1000) + 1);
    const struct {
        const char *s;
        uint64_t max, want;
    } ok[] = {
        {"0", UINT64_MAX, 0},
        {"1", UINT64_MAX, 1000},
        {"1s", UINT64_MAX, 1000},
        {"1S", UINT64_MAX, 1000},
        {"1ms", UINT64_MAX, 1},
        {"1Ms", UINT64_MAX, 1},
        {"1MS", UINT64_MAX, 1},
        {"1m", UINT64_MAX, 60000},
        {"1M", UINT64_MAX, 60000}, /* minutes, whatever the case */
        {"1h", UINT64_MAX, 3600000},
        {"1H", UINT64_MAX, 3600000},
        {"007s", UINT64_MAX, 7000},
        {"18446744073709551615ms", UINT64_MAX, UINT64_MAX},
        {h_ok, UINT64_MAX, h_max * 3600000},
        {s_ok, UINT64_MAX, UINT64_MAX / 1000 * 1000},
        {"10s", 10000, 10000},
        {"10000ms", 10000, 10000},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(ok); i++) {
        uint64_t v = 12345;
        ck_assert_msg(util_parse_duration_ms(ok[i].s, ok[i].max, &v) == 0, "rejected %s", ok[i].s);
        ck_assert_msg(v == ok[i].want, "%s: %llu", ok[i].s, (unsigned long long)v);
    }
    const struct {
        const char *s;
        uint64_t max;
    } bad[] = {
        {"", UINT64_MAX},     {"s", UINT64_MAX},
        {"ms", UINT64_MAX},   {"1d", UINT64_MAX},
        {"1sec", UINT64_MAX}, {"1min", UINT64_MAX},
        {"1 s", UINT64_MAX},  {"1s ", UINT64_MAX},
        {"-1", UINT64_MAX},   {"+1", UINT64_MAX},
        {"1.5s", UINT64_MAX}, {"1us", UINT64_MAX},
        {"1hm", UINT64_MAX},  {h_over, UINT64_MAX},
        {s_over, UINT64_MAX}, {"18446744073709551616ms", UINT64_MAX},
        {"11s", 10000},       {"10001ms", 10000},
        {"11", 10000},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        uint64_t v = 12345;
        ck_assert_msg(util_parse_duration_ms(bad[i].s, bad[i].max, &v) == -1, "accepted \"%s\"",
                      bad[i].s);
        ck_assert_uint_eq(v, 12345);
    }
}
END_TEST

/* ------------------------------------------------------------------------ */

int
main(void)
{
    const struct unit_case options_cases[] = {
        {"defaults", test_defaults},
        {"listen", test_listen},
        {"dash_forms", test_dash_forms},
        {"sizes", test_sizes},
        {"durations", test_durations},
        {"max_connections", test_max_connections},
        {"log_options", test_log_options},
        {"daemon_options", test_daemon_options},
        {"cmdlog_options", test_cmdlog_options},
        {"usage_errors", test_usage_errors},
        {"help_version", test_help_version},
        {"config_values", test_config_values},
        {"config_booleans", test_config_booleans},
        {"config_precedence", test_config_precedence},
        {"config_errors", test_config_errors},
        {"config_line_length", test_config_line_length},
        {"config_line_4096", test_config_line_4096},
    };
    const struct unit_case units_cases[] = {
        {"parse_size", test_parse_size},
        {"parse_duration", test_parse_duration},
    };
    return unit_run(unit_suite("options", options_cases, WQ_ARRAY_LEN(options_cases)),
                    unit_suite("units", units_cases, WQ_ARRAY_LEN(units_cases)));
}
