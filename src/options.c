/* options.c - command-line and config-file parsing with getopt_long_only. */
#include "wq.h"
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "alloc.h"
#include "util.h"

#define MIN_MAX_LINE    64
#define MAX_MAX_LINE    (16u << 20)
#define MAX_MAX_PAYLOAD (1024u << 20)
#define MAX_IDLE_MS     (30ull * 24 * 3600 * 1000) /* 30 days */
#define MAX_CONNECTIONS 10000000u
#define CONFIG_LINE_MAX 4096 /* characters in a config line, not counting its end */

enum {
    OPT_LISTEN = 'l',
    OPT_DAEMONIZE = 'd',
    OPT_PIDFILE = 'P',
    OPT_USER = 'u',
    OPT_VERBOSE = 'v',
    OPT_LOG_FILE = 'L',
    OPT_CONFIG = 'c',
    OPT_MAX_LINE = 256,
    OPT_MAX_PAYLOAD,
    OPT_CMDLOG_PATH,
    OPT_CMDLOG_SEG_SIZE,
    OPT_CMDLOG_SYNC,
    OPT_CMDLOG_SYNC_INT,
    OPT_CMDLOG_CLEAN_INT,
    OPT_CMDLOG_TRUNCATE,
    OPT_LOG_LEVEL,
    OPT_SYSLOG,
    OPT_MAX_CONNECTIONS,
    OPT_IDLE_TIMEOUT,
    OPT_MAX_MEMORY,
};

#define OPTSTRING ":hVdvl:P:u:L:c:"

static const struct option long_options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"max-line", required_argument, NULL, OPT_MAX_LINE},
    {"max-payload", required_argument, NULL, OPT_MAX_PAYLOAD},
    {"cmdlog-path", required_argument, NULL, OPT_CMDLOG_PATH},
    {"cmdlog-seg-size", required_argument, NULL, OPT_CMDLOG_SEG_SIZE},
    {"cmdlog-sync", required_argument, NULL, OPT_CMDLOG_SYNC},
    {"cmdlog-sync-int", required_argument, NULL, OPT_CMDLOG_SYNC_INT},
    {"cmdlog-clean-int", required_argument, NULL, OPT_CMDLOG_CLEAN_INT},
    {"cmdlog-truncate", no_argument, NULL, OPT_CMDLOG_TRUNCATE},
    {"daemonize", no_argument, NULL, OPT_DAEMONIZE},
    {"pidfile", required_argument, NULL, OPT_PIDFILE},
    {"user", required_argument, NULL, OPT_USER},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-file", required_argument, NULL, OPT_LOG_FILE},
    {"syslog", no_argument, NULL, OPT_SYSLOG},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static void
options_usage(FILE *f)
{
    fprintf(f,
            "Usage: workq-server [OPTIONS]\n"
            "A job server speaking the Workq protocol.\n"
            "\n"
            "Options (one dash or two; -flag value or -flag=value):\n"
            "  -l, -listen HOST:PORT[,...]  addresses to listen on (default %s:%s);\n"
            "                        HOST may be a name, an IPv4 address or [IPv6];\n"
            "                        port 0 picks a free port\n"
            "  -max-line BYTES       longest command line (default %u)\n"
            "  -max-payload BYTES    largest job payload or result (default %u)\n"
            "  -max-connections N    refuse clients beyond N open connections\n"
            "                        (default 0: no limit)\n"
            "  -idle-timeout TIME    close connections silent for TIME, e.g. 300, 90s,\n"
            "                        5m, 1500ms (bare numbers are seconds; default 0:\n"
            "                        never); waiting leases and runs are never idle\n"
            "  -max-memory BYTES     refuse new jobs with -SERVER-ERROR Out of memory once\n"
            "                        jobs hold this much, e.g. 512M, 2G (default 0: no\n"
            "                        limit)\n"
            "\n"
            "Command log:\n"
            "  -cmdlog-path DIR      keep a command log in DIR (default: none, jobs live\n"
            "                        in memory only)\n"
            "  -cmdlog-seg-size BYTES  start a new segment file at this size (default %u)\n"
            "  -cmdlog-sync POLICY   os, interval or always (default interval)\n"
            "  -cmdlog-sync-int MS   the interval of the interval policy (default %u)\n"
            "  -cmdlog-clean-int MS  how often old segments are cleaned (default %u)\n"
            "  -cmdlog-truncate      at start, cut a damaged log at the damage instead of\n"
            "                        refusing to start (what follows it is lost)\n"
            "\n"
            "Daemon:\n"
            "  -d, -daemonize        detach and run in the background once ready\n"
            "  -P, -pidfile FILE     write the process id to FILE (removed at exit)\n"
            "  -u, -user USER        drop to USER (and its groups) after binding\n"
            "  -log-level LEVEL      error, warn, info or debug (default info)\n"
            "  -v                    one level more verbose (repeatable)\n"
            "  -L, -log-file FILE    log to FILE, reopened on SIGHUP (default stderr;\n"
            "                        syslog when daemonized)\n"
            "  -syslog               log to syslog (facility daemon)\n"
            "  -c, -config FILE      read settings from FILE: the long option names\n"
            "                        as keys, \"key value\" or \"key = value\", one per line,\n"
            "                        # comments; flags override it\n"
            "  -h, -help             show this help and exit\n"
            "  -V, -version          show the version and exit\n",
            WQ_DEFAULT_HOST, WQ_DEFAULT_PORT, WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD,
            CMDLOG_DEFAULT_SEG_SIZE, CMDLOG_DEFAULT_SYNC_INT, CMDLOG_DEFAULT_CLEAN_INT);
}

/* Parse one "HOST:PORT" of n bytes into a. */
static int
options_parse_addr(const char *addr, size_t n, struct listen_addr *a)
{
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (addr[i] == ':')
            colon = addr + i;
    if (colon == NULL || colon == addr + n - 1)
        return -1;
    const char *host = addr;
    size_t hlen = (size_t)(colon - addr);
    if (hlen > 0 && host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']')
            return -1;
        host++;
        hlen -= 2;
    } else if (memchr(host, ':', hlen) != NULL) {
        return -1; /* an IPv6 address must be bracketed */
    }
    uint64_t port;
    const char *p = colon + 1;
    if (util_parse_u64(p, (size_t)(addr + n - p), 65535, &port) != 0 || hlen >= sizeof a->host)
        return -1;
    memcpy(a->host, host, hlen);
    a->host[hlen] = '\0';
    snprintf(a->port, sizeof a->port, "%u", (unsigned)port);
    return 0;
}

int
options_set_listen(struct options *opts, const char *list)
{
    struct listen_addr addrs[OPTIONS_MAX_LISTEN];
    size_t n = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == OPTIONS_MAX_LISTEN || options_parse_addr(p, len, &addrs[n]) != 0)
            return -1;
        n++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(opts->listen, addrs, n * sizeof addrs[0]);
    opts->nlisten = n;
    return 0;
}

/* Keep a copy of s as string setting which, replacing an earlier one. */
static const char *
options_keep(struct options *opts, enum options_string which, const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = wq_malloc(n);
    memcpy(copy, s, n);
    wq_free(opts->strings[which]);
    opts->strings[which] = copy;
    return copy;
}

/* s made absolute against the working directory, kept as which. */
static const char *
options_keep_path(struct options *opts, enum options_string which, const char *s)
{
    char cwd[4096], path[8192];
    if (s[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        return options_keep(opts, which, s);
    snprintf(path, sizeof path, "%s/%s", cwd, s);
    return options_keep(opts, which, path);
}

/* Parse a boolean of a config file: empty (the key alone) means yes. */
static int
options_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"", "yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(yes); i++)
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, 0;
    for (size_t i = 0; i < WQ_ARRAY_LEN(no); i++)
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, 0;
    return -1;
}

/* Set option id from value v (NULL for a flag without one).  Returns 0, or
 * -1 with what was expected in why. */
static int
options_apply(struct options *o, int id, const char *v, const char **why)
{
    uint64_t n;
    bool b = true;
    static char range[96];
    switch (id) {
    case OPT_LISTEN:
        *why = "(expected HOST:PORT[,HOST:PORT...])";
        return options_set_listen(o, v);
    case OPT_MAX_LINE:
        snprintf(range, sizeof range, "(expected %u..%u)", MIN_MAX_LINE, MAX_MAX_LINE);
        *why = range;
        if (util_parse_size(v, MAX_MAX_LINE, &n) != 0 || n < MIN_MAX_LINE)
            return -1;
        o->max_line = (size_t)n;
        return 0;
    case OPT_MAX_PAYLOAD:
        snprintf(range, sizeof range, "(expected 0..%u)", MAX_MAX_PAYLOAD);
        *why = range;
        return util_parse_size(v, MAX_MAX_PAYLOAD, &o->max_payload);
    case OPT_CMDLOG_PATH:
        *why = "(expected a directory)";
        if (v[0] == '\0')
            return -1;
        o->cmdlog.dir = options_keep_path(o, OPTS_CMDLOG_DIR, v);
        return 0;
    case OPT_CMDLOG_SEG_SIZE:
        *why = "(expected a size of at least 1 byte)";
        if (util_parse_size(v, UINT64_MAX, &n) != 0 || n == 0)
            return -1;
        o->cmdlog.seg_size = n;
        return 0;
    case OPT_CMDLOG_SYNC:
        *why = "(expected os, interval or always)";
        return cmdlog_sync_parse(v, &o->cmdlog.sync);
    case OPT_CMDLOG_SYNC_INT:
        *why = "(expected milliseconds)";
        return util_parse_u64(v, strlen(v), UINT32_MAX, &o->cmdlog.sync_int_ms);
    case OPT_CMDLOG_CLEAN_INT:
        *why = "(expected milliseconds, at least 1)";
        if (util_parse_u64(v, strlen(v), UINT32_MAX, &n) != 0 || n == 0)
            return -1;
        o->cmdlog.clean_int_ms = n;
        return 0;
    case OPT_CMDLOG_TRUNCATE:
        *why = "(expected yes or no)";
        if (v != NULL && options_bool(v, &b) != 0)
            return -1;
        o->cmdlog.truncate_damage = b;
        return 0;
    case OPT_DAEMONIZE:
        *why = "(expected yes or no)";
        if (v != NULL && options_bool(v, &b) != 0)
            return -1;
        o->daemonize = b;
        return 0;
    case OPT_SYSLOG:
        *why = "(expected yes or no)";
        if (v != NULL && options_bool(v, &b) != 0)
            return -1;
        if (b)
            o->log_target = LOG_TO_SYSLOG;
        else if (o->log_target == LOG_TO_SYSLOG)
            o->log_target = LOG_TO_STDERR;
        return 0;
    case OPT_PIDFILE:
        *why = "(expected a file name)";
        if (v[0] == '\0')
            return -1;
        o->pidfile = options_keep_path(o, OPTS_PIDFILE, v);
        return 0;
    case OPT_USER:
        *why = "(expected a user name)";
        if (v[0] == '\0')
            return -1;
        o->user = options_keep(o, OPTS_USER, v);
        return 0;
    case OPT_LOG_FILE:
        *why = "(expected a file name)";
        if (v[0] == '\0')
            return -1;
        o->log_file = options_keep_path(o, OPTS_LOG_FILE, v);
        o->log_target = LOG_TO_FILE;
        return 0;
    case OPT_LOG_LEVEL:
        *why = "(expected error, warn, info or debug)";
        return log_level_parse(v, &o->log_level);
    case OPT_MAX_CONNECTIONS:
        snprintf(range, sizeof range, "(expected 0..%u; 0 means no limit)", MAX_CONNECTIONS);
        *why = range;
        return util_parse_u64(v, strlen(v), MAX_CONNECTIONS, &o->max_connections);
    case OPT_IDLE_TIMEOUT:
        *why = "(expected a duration such as 300, 90s, 5m or 1500ms; at most 30 days)";
        return util_parse_duration_ms(v, MAX_IDLE_MS, &o->idle_timeout_ms);
    case OPT_MAX_MEMORY:
        *why = "(expected bytes, or a size such as 512M or 2G; 0 means no limit)";
        return util_parse_size(v, UINT64_MAX, &o->max_memory);
    }
    *why = "";
    return -1;
}

static void
options_defaults(struct options *opts)
{
    memset(opts, 0, sizeof *opts);
    snprintf(opts->listen[0].host, sizeof opts->listen[0].host, "%s", WQ_DEFAULT_HOST);
    snprintf(opts->listen[0].port, sizeof opts->listen[0].port, "%s", WQ_DEFAULT_PORT);
    opts->nlisten = 1;
    opts->max_line = WQ_DEFAULT_MAX_LINE;
    opts->max_payload = WQ_DEFAULT_MAX_PAYLOAD;
    opts->cmdlog.seg_size = CMDLOG_DEFAULT_SEG_SIZE;
    opts->cmdlog.sync = CMDLOG_SYNC_INTERVAL;
    opts->cmdlog.sync_int_ms = CMDLOG_DEFAULT_SYNC_INT;
    opts->cmdlog.clean_int_ms = CMDLOG_DEFAULT_CLEAN_INT;
    opts->log_level = LOG_LVL_INFO;
    opts->log_target = LOG_TO_STDERR;
}

/* Trim spaces at both ends of s in place; returns the new start. */
static char *
options_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Apply the config file path: lines "key value", "key = value" or "key";
 * blank lines and lines starting with # are skipped.  Returns -1, or an
 * exit status after printing the problem. */
static int
options_read_config(struct options *opts, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "workq-server: cannot read config file %s: %s\n", path, strerror(errno));
        return EX_NOINPUT;
    }
    char buf[CONFIG_LINE_MAX + 3]; /* the line, CR LF, NUL */
    int lineno = 0, status = -1;
    while (status < 0 && fgets(buf, sizeof buf, f) != NULL) {
        lineno++;
        size_t n = strlen(buf);
        bool ended = n > 0 && buf[n - 1] == '\n';
        n -= ended;
        n -= n > 0 && buf[n - 1] == '\r';
        if (n > CONFIG_LINE_MAX || (!ended && !feof(f))) {
            fprintf(stderr, "workq-server: %s:%d: line too long\n", path, lineno);
            status = EX_CONFIG;
            break;
        }
        char *line = options_trim(buf);
        if (line[0] == '\0' || line[0] == '#')
            continue;
        char *key = line, *val = line + strcspn(line, " \t=");
        bool has_val = *val != '\0';
        if (has_val) {
            *val++ = '\0';
            val = options_trim(val);
            if (*val == '=')
                val = options_trim(val + 1);
        }
        const struct option *o = long_options;
        while (o->name != NULL && strcmp(o->name, key) != 0)
            o++;
        if (o->name == NULL || o->val == OPT_CONFIG || o->val == 'h' || o->val == 'V') {
            fprintf(stderr, "workq-server: %s:%d: unknown key '%s'\n", path, lineno, key);
            status = EX_CONFIG;
        } else if (o->has_arg == required_argument && val[0] == '\0') {
            fprintf(stderr, "workq-server: %s:%d: %s needs a value\n", path, lineno, key);
            status = EX_CONFIG;
        } else {
            const char *why;
            if (options_apply(opts, o->val, val, &why) != 0) {
                fprintf(stderr, "workq-server: %s:%d: invalid %s '%s' %s\n", path, lineno, key,
                        val, why);
                status = EX_CONFIG;
            }
        }
    }
    if (status < 0 && ferror(f)) {
        fprintf(stderr, "workq-server: cannot read config file %s: %s\n", path, strerror(errno));
        status = EX_NOINPUT;
    }
    fclose(f);
    return status;
}

/* One getopt pass over argv.  With apply false, only check the flags and
 * find --config (and answer --help and --version); with apply true, set
 * every flag.  Returns -1 to go on, or an exit status. */
static int
options_pass(struct options *opts, int argc, char **argv, bool apply, const char **config)
{
    int ch, idx, verbose = 0;
    optind = 0; /* start over, also after an earlier pass permuted argv */
    opterr = 0;
    while ((ch = getopt_long_only(argc, argv, OPTSTRING, long_options, &idx)) != -1) {
        switch (ch) {
        case 'h':
            if (!apply)
                options_usage(stdout);
            return 0;
        case 'V':
            if (!apply)
                printf("workq-server %s\n", PACKAGE_VERSION);
            return 0;
        case ':':
            fprintf(stderr, "workq-server: option '%s' needs a value\n", argv[optind - 1]);
            return EX_USAGE;
        case '?':
            fprintf(stderr, "workq-server: unknown option '%s' (see -help)\n", argv[optind - 1]);
            return EX_USAGE;
        case OPT_VERBOSE:
            verbose++;
            break;
        case OPT_CONFIG:
            *config = optarg;
            break;
        default: {
            if (!apply)
                break;
            const char *why, *name = "?";
            for (const struct option *o = long_options; o->name != NULL; o++)
                if (o->val == ch)
                    name = o->name;
            if (options_apply(opts, ch, optarg, &why) != 0) {
                fprintf(stderr, "workq-server: invalid -%s '%s' %s\n", name, optarg, why);
                return EX_USAGE;
            }
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "workq-server: unexpected argument '%s' (see -help)\n", argv[optind]);
        return EX_USAGE;
    }
    if (apply)
        opts->log_level = (enum log_level)WQ_MIN((int)opts->log_level + verbose, LOG_LVL_DEBUG);
    return -1;
}

int
options_parse(struct options *opts, int argc, char **argv)
{
    options_defaults(opts);
    const char *config = NULL;
    int status = options_pass(opts, argc, argv, false, &config);
    if (status >= 0)
        return status;
    if (config != NULL) {
        opts->config = options_keep_path(opts, OPTS_CONFIG, config);
        status = options_read_config(opts, opts->config);
        if (status >= 0)
            return status;
    }
    return options_pass(opts, argc, argv, true, &config);
}

void
options_free(struct options *opts)
{
    for (size_t i = 0; i < OPTS_STRING_COUNT; i++) {
        wq_free(opts->strings[i]);
        opts->strings[i] = NULL;
    }
}
