/* options.c - the option table, and parsing the command line (getopt_long_only)
 * and config files by it. */
#include "lib/wq.h"
#include "daemon/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "lib/util.h"

_Static_assert(sizeof(size_t) == sizeof(uint64_t), "sizes are set as uint64_t");

#define MIN_MAX_LINE    64
#define MAX_MAX_LINE    (16u << 20)
#define MAX_MAX_PAYLOAD (1024u << 20)
#define MAX_IDLE_MS     (30ull * 24 * 3600 * 1000)   /* 30 days */
#define MAX_DEAD_TTL_MS (3650ull * 24 * 3600 * 1000) /* 10 years */
#define MAX_CONNECTIONS 10000000u
#define CONFIG_LINE_MAX 4096 /* characters in a config line, not counting its end */

/* How an option's value is read, and where it goes. */
enum opt_kind {
    OPT_LISTEN,   /* addresses (struct listen_set) */
    OPT_SIZE,     /* bytes, with K/M/G units (uint64_t) */
    OPT_NUMBER,   /* a plain decimal number (uint64_t) */
    OPT_DURATION, /* ms, with ms/s/m/h units; bare numbers are seconds (uint64_t) */
    OPT_BOOL,     /* a flag; "yes", "no"... in a config file (bool) */
    OPT_PATH,     /* a file or directory, made absolute (const char *) */
    OPT_NAME,     /* any non-empty text (const char *) */
    OPT_SYNC,     /* a command-log policy (enum cmdlog_sync) */
    OPT_LEVEL,    /* a log level (enum log_level) */
    OPT_LOG_FILE, /* a path that also sends the log there */
    OPT_SYSLOG,   /* a flag that sends the log to syslog */
    OPT_VERBOSE,  /* -v: one level more, repeatable (command line only) */
    OPT_CONFIG,   /* the config file (command line only) */
    OPT_HELP,
    OPT_VERSION,
};

/* One option: every place it shows comes from here (getopt, -help, the
 * config file's keys, the default). */
struct opt_def {
    const char *name; /* the long option, and the config key */
    char letter;      /* the short option, 0 if none */
    enum opt_kind kind;
    size_t at; /* offsetof(struct options, ...) */
    uint64_t min, max;
    const char *def;    /* the default, as it would be given; NULL: none */
    const char *expect; /* told with a bad value; RANGE in it stands for min..max */
    const char *arg;    /* the value's name in -help; NULL: takes none */
    const char *help;   /* the -help text ('\n' between lines) */
    const char *group;  /* a heading -help prints before this option */
};

#define AT(field) offsetof(struct options, field)

static const struct opt_def opt_defs[] = {
    {"listen", 'l', OPT_LISTEN, AT(listen), 0, 0, WQ_DEFAULT_HOST ":" WQ_DEFAULT_PORT,
     "(expected HOST:PORT[,HOST:PORT...])", "HOST:PORT[,...]",
     "addresses to listen on; HOST may be a name, an IPv4\naddress or [IPv6]; port 0 picks a "
     "free port;\ntls://HOST:PORT serves TLS there (-tls-cert)\n",
     "Options (one dash or two; -flag value or -flag=value):"},
    {"password-file", 0, OPT_PATH, AT(password_file), 0, 0, NULL, "(expected a file name)", "FILE",
     "Workq clients must authenticate with this password\n(the file's first line, one word) "
     "before any\nother command; re-read on SIGHUP (default: off)",
     NULL},
    {"faktory-listen", 0, OPT_LISTEN, AT(faktory_listen), 0, 0, NULL,
     "(expected HOST:PORT[,HOST:PORT...])", "HOST:PORT[,...]",
     "also serve the Faktory work protocol there\n(default: off; 7419 is Faktory's port)", NULL},
    {"faktory-password-file", 0, OPT_PATH, AT(faktory_password_file), 0, 0, NULL,
     "(expected a file name)", "FILE",
     "Faktory clients must give this password (its first\nline); default: FAKTORY_PASSWORD from "
     "the environment,\nif set",
     NULL},
    {"faktory-dead-ttl", 0, OPT_DURATION, AT(faktory_dead_ttl_ms), 0, MAX_DEAD_TTL_MS, "4320h",
     "(expected a duration such as 720h, 90m or 30s; at most 10 years)", "TIME",
     "how long a Faktory job out of retries stays in the\ndead set (180 days)", NULL},
    {"faktory-dead-max", 0, OPT_NUMBER, AT(faktory_dead_max), 0, UINT32_MAX, "10000",
     "(expected RANGE)", "N", "at most N jobs in the dead set (the oldest go first)", NULL},
    {"faktory-backoff-unit", 0, OPT_NUMBER, AT(faktory_backoff_unit_ms), 1, 1000, "1000",
     "(expected milliseconds, RANGE)", "MS",
     "the length of a second of Faktory's retry backoff\n(for tests: 10 makes retries 100 "
     "times sooner)",
     NULL},
    {"hero-listen", 0, OPT_LISTEN, AT(hero_listen), 0, 0, NULL,
     "(expected HOST:PORT[,HOST:PORT...])", "HOST:PORT[,...]",
     "also serve the Hero Dispatcher's Redis protocol there,\non keys under hero: (default: off; "
     "6379 is Redis's port)",
     NULL},
    {"hero-password-file", 0, OPT_PATH, AT(hero_password_file), 0, 0, NULL,
     "(expected a file name)", "FILE",
     "Hero clients must AUTH with this password (its first\nline) before other commands "
     "(default: off)",
     NULL},
    {"norfab-listen", 0, OPT_LISTEN, AT(norfab_listen), 0, 0, NULL,
     "(expected HOST:PORT[,HOST:PORT...])", "HOST:PORT[,...]",
     "also be the broker of NORFAB's clients and workers\n(NFP over ZeroMQ) there (default: off; "
     "5555 is\nNORFAB's port)",
     NULL},
    {"norfab-keepalive-ms", 0, OPT_NUMBER, AT(norfab_keepalive_ms), 10, 3600000, "2500",
     "(expected milliseconds, RANGE)", "MS",
     "NFP's heartbeat: a KEEPALIVE to each worker this often", NULL},
    {"norfab-liveness", 0, OPT_NUMBER, AT(norfab_liveness), 2, 1000, "6", "(expected RANGE)", "N",
     "a NORFAB worker is dead after N heartbeats without\nits KEEPALIVE", NULL},
    {"norfab-queue-ttl", 0, OPT_DURATION, AT(norfab_queue_ttl_ms), 1, MAX_DEAD_TTL_MS, "10m",
     "(expected a duration such as 10m or 30s; at most 10 years)", "TIME",
     "how long a NORFAB POST to \"any\" or \"all\" waits for a\nworker of its service (then "
     "answered 408; 10m:\nNORFAB's client gives up on a job after 10 minutes)",
     NULL},
    {"norfab-result-ttl", 0, OPT_DURATION, AT(norfab_result_ttl_ms), 1, MAX_DEAD_TTL_MS, "10m",
     "(expected a duration such as 10m or 30s; at most 10 years)", "TIME",
     "how long the broker keeps a NORFAB job's final answers\nfor GETs after its worker is gone",
     NULL},
    {"norfab-curve-secret", 0, OPT_PATH, AT(norfab_curve_secret), 0, 0, NULL,
     "(expected a file name)", "FILE",
     "CURVE on the NORFAB socket, as NORFAB's clients and\nworkers expect by default, with the "
     "broker's secret\nkey (40 characters of Z85) on the file's first line\n(default: off)",
     NULL},
    {"norfab-curve-clients", 0, OPT_PATH, AT(norfab_curve_clients), 0, 0, NULL,
     "(expected a file name)", "FILE",
     "with CURVE, let in only the client and worker public\nkeys of FILE, one Z85 key per line "
     "(default: any\nkey, as NORFAB's broker)",
     NULL},
    {"dead-ttl", 0, OPT_DURATION, AT(dead_ttl_ms), 0, MAX_DEAD_TTL_MS, "4320h",
     "(expected a duration such as 720h, 90m or 30s; at most 10 years)", "TIME",
     "how long a Workq job out of retries (add -dead=1)\nstays in the dead set (180 days)", NULL},
    {"dead-max", 0, OPT_NUMBER, AT(dead_max), 0, UINT32_MAX, "10000", "(expected RANGE)", "N",
     "at most N Workq jobs in the dead set (the oldest go\nfirst)", NULL},
    {"backoff-unit", 0, OPT_NUMBER, AT(backoff_unit_ms), 1, 1000, "1000",
     "(expected milliseconds, RANGE)", "MS",
     "the length of a second of the retry backoff of Workq\njobs (add -backoff=faktory; for "
     "tests)",
     NULL},
    {"max-line", 0, OPT_SIZE, AT(max_line), MIN_MAX_LINE, MAX_MAX_LINE, "65536", "(expected RANGE)",
     "BYTES", "longest command line", NULL},
    {"max-payload", 0, OPT_SIZE, AT(max_payload), 0, MAX_MAX_PAYLOAD, "1048576", "(expected RANGE)",
     "BYTES", "largest job payload or result", NULL},
    {"max-connections", 0, OPT_NUMBER, AT(max_connections), 0, MAX_CONNECTIONS, NULL,
     "(expected RANGE; 0 means no limit)", "N",
     "refuse clients beyond N open connections\n(default 0: no limit)", NULL},
    {"idle-timeout", 0, OPT_DURATION, AT(idle_timeout_ms), 0, MAX_IDLE_MS, NULL,
     "(expected a duration such as 300, 90s, 5m or 1500ms; at most 30 days)", "TIME",
     "close connections silent for TIME, e.g. 300, 90s,\n5m, 1500ms (bare numbers are "
     "seconds; default 0:\nnever); waiting leases and runs are never idle",
     NULL},
    {"max-memory", 0, OPT_SIZE, AT(max_memory), 0, UINT64_MAX, NULL,
     "(expected bytes, or a size such as 512M or 2G; 0 means no limit)", "BYTES",
     "refuse new jobs with -SERVER-ERROR Out of memory\nonce jobs and their queues hold this "
     "much, e.g.\n512M, 2G (default 0: no limit)",
     NULL},
    {"metrics-listen", 0, OPT_LISTEN, AT(metrics_listen), 0, 0, NULL,
     "(expected HOST:PORT[,HOST:PORT...])", "HOST:PORT[,...]",
     "serve Prometheus metrics over HTTP there: /metrics,\n/healthz, /readyz (default: off)",
     "Metrics:"},
    {"metrics-max-queues", 0, OPT_NUMBER, AT(metrics_max_queues), 0, 1000000, "1000",
     "(expected RANGE)", "N",
     "queues with series of their own (the first N by\nname); the rest are summed into "
     "queue=\"other\"",
     NULL},
    {"tls-cert", 0, OPT_PATH, AT(tls_cert), 0, 0, NULL, "(expected a file name)", "FILE",
     "the certificate chain (PEM) of the tls:// addresses\nof -listen, -faktory-listen and "
     "-metrics-listen;\nre-read with the key on SIGHUP",
     "TLS:"},
    {"tls-key", 0, OPT_PATH, AT(tls_key), 0, 0, NULL, "(expected a file name)", "FILE",
     "the private key (PEM) of -tls-cert", NULL},
    {"tls-ca", 0, OPT_PATH, AT(tls_ca), 0, 0, NULL, "(expected a file name)", "FILE",
     "require TLS clients to show a certificate issued by\none of these CAs (PEM; default: "
     "none asked)",
     NULL},
    {"cmdlog-path", 0, OPT_PATH, AT(cmdlog.dir), 0, 0, NULL, "(expected a directory)", "DIR",
     "keep a command log in DIR (default: none, jobs live in\nmemory only)", "Command log:"},
    {"cmdlog-seg-size", 0, OPT_SIZE, AT(cmdlog.seg_size), 1, UINT64_MAX, "67108864",
     "(expected a size of at least 1 byte)", "BYTES", "start a new segment file at this size",
     NULL},
    {"cmdlog-sync", 0, OPT_SYNC, AT(cmdlog.sync), 0, 0, "interval",
     "(expected os, interval or always)", "POLICY",
     "os, interval or always: when the log is forced to\ndisk (replies always wait for the "
     "write; under\nalways also for the disk)",
     NULL},
    {"cmdlog-sync-int", 0, OPT_NUMBER, AT(cmdlog.sync_int_ms), 0, UINT32_MAX, "1000",
     "(expected milliseconds)", "MS", "the interval of the interval policy", NULL},
    {"cmdlog-clean-int", 0, OPT_NUMBER, AT(cmdlog.clean_int_ms), 1, UINT32_MAX, "300000",
     "(expected milliseconds, at least 1)", "MS", "how often old segments are cleaned", NULL},
    {"cmdlog-truncate", 0, OPT_BOOL, AT(cmdlog.truncate_damage), 0, 0, NULL, "(expected yes or no)",
     NULL,
     "at start, cut a damaged log at the damage instead of\nrefusing to start (what follows it "
     "is lost)",
     NULL},
    {"daemonize", 'd', OPT_BOOL, AT(daemonize), 0, 0, NULL, "(expected yes or no)", NULL,
     "detach and run in the background once ready", "Daemon:"},
    {"pidfile", 'P', OPT_PATH, AT(pidfile), 0, 0, NULL, "(expected a file name)", "FILE",
     "write the process id to FILE (removed at exit)", NULL},
    {"user", 'u', OPT_NAME, AT(user), 0, 0, NULL, "(expected a user name)", "USER",
     "drop to USER (and its groups) after binding", NULL},
    {"log-level", 0, OPT_LEVEL, AT(log_level), 0, 0, "info",
     "(expected error, warn, info or debug)", "LEVEL", "error, warn, info or debug", NULL},
    {"v", 'v', OPT_VERBOSE, 0, 0, 0, NULL, NULL, NULL, "one level more verbose (repeatable)", NULL},
    {"log-file", 'L', OPT_LOG_FILE, AT(log_file), 0, 0, NULL, "(expected a file name)", "FILE",
     "log to FILE, reopened on SIGHUP (default stderr;\nsyslog when daemonized)", NULL},
    {"syslog", 0, OPT_SYSLOG, 0, 0, 0, NULL, "(expected yes or no)", NULL,
     "log to syslog (facility daemon)", NULL},
    {"config", 'c', OPT_CONFIG, AT(config), 0, 0, NULL, NULL, "FILE",
     "read settings from FILE: the long option names as\nkeys, \"key value\" or \"key = "
     "value\", one per line,\n# comments; flags override it",
     NULL},
    {"help", 'h', OPT_HELP, 0, 0, 0, NULL, NULL, NULL, "show this help and exit", NULL},
    {"version", 'V', OPT_VERSION, 0, 0, 0, NULL, NULL, NULL, "show the version and exit", NULL},
};

_Static_assert(WQ_ARRAY_LEN(opt_defs) <= OPTIONS_MAX_DEFS, "raise OPTIONS_MAX_DEFS");

/* What getopt_long_only is given, built from opt_defs once. */
static struct option long_options[WQ_ARRAY_LEN(opt_defs) + 1];
static char optstring[2 * WQ_ARRAY_LEN(opt_defs) + 2];

/* getopt's value for option i: its letter, or 256 + i. */
static int
opt_val(size_t i)
{
    return opt_defs[i].letter ? opt_defs[i].letter : 256 + (int)i;
}

/* The option getopt answered val for, or NULL. */
static const struct opt_def *
opt_by_val(int val)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(opt_defs); i++)
        if (opt_val(i) == val)
            return &opt_defs[i];
    return NULL;
}

static void
options_build_getopt(void)
{
    size_t n = 0, nlong = 0;
    optstring[n++] = ':';
    for (size_t i = 0; i < WQ_ARRAY_LEN(opt_defs); i++) {
        const struct opt_def *d = &opt_defs[i];
        if (d->kind != OPT_VERBOSE) /* -v has no long form */
            long_options[nlong++] = (struct option){
                d->name, d->arg ? required_argument : no_argument, NULL, opt_val(i)};
        if (d->letter) {
            optstring[n++] = d->letter;
            if (d->arg)
                optstring[n++] = ':';
        }
    }
    optstring[n] = '\0';
}

static void
options_usage(FILE *f)
{
    fprintf(f, "Usage: workq-server [OPTIONS]\nA job server speaking the Workq protocol.\n");
    for (size_t i = 0; i < WQ_ARRAY_LEN(opt_defs); i++) {
        const struct opt_def *d = &opt_defs[i];
        if (d->group != NULL)
            fprintf(f, "\n%s\n", d->group);
        char head[64];
        int n;
        if (d->kind == OPT_VERBOSE)
            n = snprintf(head, sizeof head, "  -v");
        else if (d->letter)
            n = snprintf(head, sizeof head, "  -%c, -%s%s%s", d->letter, d->name, d->arg ? " " : "",
                         d->arg ? d->arg : "");
        else
            n = snprintf(head, sizeof head, "  -%s%s%s", d->name, d->arg ? " " : "",
                         d->arg ? d->arg : "");
        fputs(head, f);
        if (n > 22) { /* the text starts at column 24, on a line of its own if need be */
            fputc('\n', f);
            n = 0;
        }
        fprintf(f, "%*s", 24 - n, "");
        for (const char *p = d->help; *p != '\0'; p++) {
            fputc(*p, f);
            if (*p == '\n')
                fprintf(f, "%24s", "");
        }
        if (d->def != NULL) /* after the text, or on a line the text ended */
            fprintf(f, "%s(default %s)", d->help[strlen(d->help) - 1] == '\n' ? "" : " ", d->def);
        fputc('\n', f);
    }
}

/* Parse one "[tls://]HOST:PORT" of n bytes into a. */
static int
options_parse_addr(const char *addr, size_t n, struct listen_addr *a)
{
    a->tls = n > 6 && strncasecmp(addr, "tls://", 6) == 0;
    if (a->tls)
        addr += 6, n -= 6;
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
options_set_listen(struct listen_set *set, const char *list)
{
    struct listen_addr addrs[LISTEN_MAX];
    size_t n = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == LISTEN_MAX || options_parse_addr(p, len, &addrs[n]) != 0)
            return -1;
        n++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    memcpy(set->addr, addrs, n * sizeof addrs[0]);
    set->n = n;
    return 0;
}

/* Keep a copy of s as option d's value, replacing an earlier one. */
static const char *
options_keep(struct options *opts, const struct opt_def *d, const char *s)
{
    size_t n = strlen(s) + 1, which = (size_t)(d - opt_defs);
    char *copy = wq_malloc(n);
    memcpy(copy, s, n);
    wq_free(opts->strings[which]);
    opts->strings[which] = copy;
    return copy;
}

/* s made absolute against the working directory, kept as d's value. */
static const char *
options_keep_path(struct options *opts, const struct opt_def *d, const char *s)
{
    char cwd[4096], path[8192];
    if (s[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        return options_keep(opts, d, s);
    snprintf(path, sizeof path, "%s/%s", cwd, s);
    return options_keep(opts, d, path);
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

/* Set option d from value v (NULL for a flag given without one): 0, or
 * -1 (options_expected says what was wanted). */
static int
options_apply(struct options *o, const struct opt_def *d, const char *v)
{
    void *at = (char *)o + d->at;
    uint64_t n;
    bool b = true;
    switch (d->kind) {
    case OPT_LISTEN:
        return options_set_listen(at, v);
    case OPT_SIZE:
    case OPT_NUMBER:
        if ((d->kind == OPT_SIZE ? util_parse_size(v, d->max, &n)
                                 : util_parse_u64(v, strlen(v), d->max, &n)) != 0 ||
            n < d->min)
            return -1;
        *(uint64_t *)at = n;
        return 0;
    case OPT_DURATION:
        return util_parse_duration_ms(v, d->max, at);
    case OPT_BOOL:
    case OPT_SYSLOG:
        if (v != NULL && options_bool(v, &b) != 0)
            return -1;
        if (d->kind == OPT_BOOL)
            *(bool *)at = b;
        else if (b)
            o->log_target = LOG_TO_SYSLOG;
        else if (o->log_target == LOG_TO_SYSLOG)
            o->log_target = LOG_TO_STDERR;
        return 0;
    case OPT_PATH:
    case OPT_NAME:
    case OPT_LOG_FILE:
        if (v[0] == '\0')
            return -1;
        *(const char **)at =
            d->kind == OPT_NAME ? options_keep(o, d, v) : options_keep_path(o, d, v);
        if (d->kind == OPT_LOG_FILE)
            o->log_target = LOG_TO_FILE;
        return 0;
    case OPT_SYNC:
        return cmdlog_sync_parse(v, at);
    case OPT_LEVEL:
        return log_level_parse(v, at);
    default:
        return -1; /* the command line's own: not a setting */
    }
}

/* What option d wanted, for an error message. */
static const char *
options_expected(const struct opt_def *d)
{
    static char text[128];
    const char *range = strstr(d->expect, "RANGE");
    if (range == NULL)
        return d->expect;
    snprintf(text, sizeof text, "%.*s%llu..%llu%s", (int)(range - d->expect), d->expect,
             (unsigned long long)d->min, (unsigned long long)d->max, range + 5);
    return text;
}

static void
options_defaults(struct options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->log_target = LOG_TO_STDERR;
    for (size_t i = 0; i < WQ_ARRAY_LEN(opt_defs); i++)
        if (opt_defs[i].def != NULL && options_apply(opts, &opt_defs[i], opt_defs[i].def) != 0)
            wq_panic(__FILE__, __LINE__, "bad default of -%s", opt_defs[i].name);
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

/* The edit distance between a[0..an) and b (insertions, deletions,
 * substitutions), or 3 once it is past 2: enough to suggest a near name. */
static size_t
options_distance(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an > bn + 2 || bn > an + 2 || an >= 64 || bn >= 64)
        return 3;
    size_t row[64], prev_diag;
    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        prev_diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t best = prev_diag + (a[i - 1] != b[j - 1]);
            best = WQ_MIN(best, up + 1);
            best = WQ_MIN(best, row[j - 1] + 1);
            row[j] = best;
            prev_diag = up;
        }
    }
    return WQ_MIN(row[bn], (size_t)3);
}

/* The option name nearest to name[0..len), within two edits (for names
 * of three characters or more), among the flags (cmdline) or the config
 * file's keys; NULL if none is. */
static const char *
options_nearest(const char *name, size_t len, bool cmdline)
{
    const char *near = NULL;
    size_t best = len > 2 ? 3 : 0;
    for (size_t k = 0; k < WQ_ARRAY_LEN(opt_defs); k++) {
        size_t dist = options_distance(name, len, opt_defs[k].name);
        bool fits = cmdline ? opt_defs[k].kind != OPT_VERBOSE : opt_defs[k].kind < OPT_VERBOSE;
        if (fits && dist < best) {
            best = dist;
            near = opt_defs[k].name;
        }
    }
    return near;
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
        for (char *hash = strchr(buf, '#'); hash != NULL; hash = strchr(hash + 1, '#'))
            if (hash == buf || hash[-1] == ' ' || hash[-1] == '\t') {
                *hash = '\0'; /* a comment: at the start, or after a blank */
                break;
            }
        char *line = options_trim(buf);
        if (line[0] == '\0')
            continue;
        char *key = line, *val = line + strcspn(line, " \t=");
        bool has_val = *val != '\0';
        if (has_val) {
            *val++ = '\0';
            val = options_trim(val);
            if (*val == '=')
                val = options_trim(val + 1);
        }
        const struct opt_def *d = opt_defs;
        while (d < opt_defs + WQ_ARRAY_LEN(opt_defs) && strcmp(d->name, key) != 0)
            d++;
        if (d == opt_defs + WQ_ARRAY_LEN(opt_defs) || d->kind >= OPT_VERBOSE) {
            const char *bare = key + strspn(key, "-");
            const char *near = options_nearest(bare, strlen(bare), false);
            if (near != NULL && bare != key && strcmp(near, bare) == 0)
                fprintf(stderr, "workq-server: %s:%d: unknown key '%s' (keys have no dashes: %s)\n",
                        path, lineno, key, near);
            else if (near != NULL)
                fprintf(stderr, "workq-server: %s:%d: unknown key '%s' (did you mean %s?)\n", path,
                        lineno, key, near);
            else
                fprintf(stderr, "workq-server: %s:%d: unknown key '%s'\n", path, lineno, key);
            status = EX_CONFIG;
        } else if (d->arg != NULL && val[0] == '\0') {
            fprintf(stderr, "workq-server: %s:%d: %s needs a value\n", path, lineno, key);
            status = EX_CONFIG;
        } else if (options_apply(opts, d, val) != 0) {
            fprintf(stderr, "workq-server: %s:%d: invalid %s '%s' %s\n", path, lineno, key, val,
                    options_expected(d));
            status = EX_CONFIG;
        }
    }
    if (status < 0 && ferror(f)) {
        fprintf(stderr, "workq-server: cannot read config file %s: %s\n", path, strerror(errno));
        status = EX_NOINPUT;
    }
    fclose(f);
    return status;
}

/* The option getopt_long_only would take name[0..len) for: its exact long
 * name, or a prefix of exactly one; NULL if none. */
static const struct opt_def *
options_long_match(const char *name, size_t len)
{
    const struct opt_def *found = NULL;
    size_t prefixes = 0;
    for (size_t i = 0; i < WQ_ARRAY_LEN(opt_defs); i++) {
        const struct opt_def *d = &opt_defs[i];
        if (d->kind == OPT_VERBOSE || strncmp(d->name, name, len) != 0)
            continue;
        if (d->name[len] == '\0')
            return d;
        found = d;
        prefixes++;
    }
    return prefixes == 1 ? found : NULL;
}

/* The option of short letter ch, or NULL. */
static const struct opt_def *
options_letter(char ch)
{
    for (size_t k = 0; k < WQ_ARRAY_LEN(opt_defs); k++)
        if (opt_defs[k].letter != 0 && opt_defs[k].letter == ch)
            return &opt_defs[k];
    return NULL;
}

/* Is letters (after one dash) a bundle of short options, the last of
 * them maybe taking the rest, or the next argument (*takes_next), as its
 * value? */
static bool
options_bundle(const char *letters, bool *takes_next)
{
    *takes_next = false;
    for (const char *p = letters; *p != '\0'; p++) {
        const struct opt_def *d = options_letter(*p);
        if (d == NULL)
            return false;
        if (d->arg != NULL) {
            *takes_next = p[1] == '\0';
            return true;
        }
    }
    return true;
}

/* Check every flag's name before getopt reads them: getopt_long_only
 * reads an unknown -name as bundled letters and then blames the wrong
 * argument (-debug named the program, -cmdlog-pth read a config file
 * named "mdlog-pth").  A flag is a long name (or a unique prefix of one)
 * after one dash or two, or letters after one dash (-dv, -l127.0.0.1:7);
 * one dash and a word within two edits of a long name is a mistyped long
 * name, not letters.  -1, or EX_USAGE after naming the flag as typed,
 * with the nearest name if one is close. */
static int
options_check_names(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return -1;
        if (a[0] != '-' || a[1] == '\0')
            continue; /* an operand: getopt says it is unexpected */
        bool two = a[1] == '-';
        const char *name = a + 1 + two;
        size_t len = strcspn(name, "=");
        const struct opt_def *d = options_long_match(name, len);
        if (d != NULL) {
            if (d->arg != NULL && name[len] != '=')
                i++; /* its value */
            continue;
        }
        const char *near = options_nearest(name, len, true);
        bool takes_next = false;
        if (!two && near == NULL && options_bundle(name, &takes_next)) {
            i += takes_next;
            continue;
        }
        if (near != NULL)
            fprintf(stderr, "workq-server: unknown option '%.*s' (did you mean -%s? see -help)\n",
                    (int)(len + 1 + two), a, near);
        else
            fprintf(stderr, "workq-server: unknown option '%.*s' (see -help)\n",
                    (int)(len + 1 + two), a);
        return EX_USAGE;
    }
    return -1;
}

/* One getopt pass over argv.  With apply false, only check the flags and
 * find --config (and answer --help and --version); with apply true, set
 * every flag.  Returns -1 to go on, or an exit status. */
static int
options_pass(struct options *opts, int argc, char **argv, bool apply, const char **config)
{
    int ch, idx, verbose = 0;
    int named = options_check_names(argc, argv);
    if (named != -1)
        return named;
    optind = 0; /* start over, also after an earlier pass permuted argv */
    opterr = 0;
    while ((ch = getopt_long_only(argc, argv, optstring, long_options, &idx)) != -1) {
        const struct opt_def *d = opt_by_val(ch);
        if (ch == ':') {
            fprintf(stderr, "workq-server: option '%s' needs a value\n", argv[optind - 1]);
            return EX_USAGE;
        }
        if (d == NULL) {
            fprintf(stderr, "workq-server: unknown option '%s' (see -help)\n", argv[optind - 1]);
            return EX_USAGE;
        }
        switch (d->kind) {
        case OPT_HELP:
            if (!apply)
                options_usage(stdout);
            return 0;
        case OPT_VERSION:
            if (!apply)
                printf("workq-server %s\n", PACKAGE_VERSION);
            return 0;
        case OPT_VERBOSE:
            verbose++;
            break;
        case OPT_CONFIG:
            *config = optarg;
            break;
        default:
            if (apply && options_apply(opts, d, optarg) != 0) {
                fprintf(stderr, "workq-server: invalid -%s '%s' %s\n", d->name, optarg,
                        options_expected(d));
                return EX_USAGE;
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

/* Do the settings fit together?  -1, or EX_CONFIG after saying why. */
static int
options_check(const struct options *o)
{
    const struct listen_set *sets[] = {&o->listen, &o->faktory_listen, &o->hero_listen,
                                       &o->norfab_listen, &o->metrics_listen};
#ifndef HAVE_ZMQ
    if (o->norfab_listen.n > 0) {
        fprintf(stderr, "workq-server: -norfab-listen needs libzmq, and this workq-server was "
                        "built without it (install libzmq3-dev, then ./configure && make)\n");
        return EX_CONFIG;
    }
#endif
    if (o->norfab_curve_clients != NULL && o->norfab_curve_secret == NULL) {
        fprintf(stderr, "workq-server: -norfab-curve-clients needs -norfab-curve-secret\n");
        return EX_CONFIG;
    }
    for (size_t j = 0; j < o->norfab_listen.n; j++) {
        if (o->norfab_listen.addr[j].tls) {
            fprintf(stderr, "workq-server: -norfab-listen takes HOST:PORT, not tls://: NORFAB "
                            "encrypts with CURVE\n");
            return EX_CONFIG;
        }
    }
    bool tls = false;
    for (size_t i = 0; i < WQ_ARRAY_LEN(sets); i++)
        for (size_t j = 0; j < sets[i]->n; j++)
            tls |= sets[i]->addr[j].tls;
    if (tls && (o->tls_cert == NULL || o->tls_key == NULL)) {
        fprintf(stderr, "workq-server: a tls:// address needs -tls-cert and -tls-key\n");
        return EX_CONFIG;
    }
    return -1;
}

int
options_parse(struct options *opts, int argc, char **argv)
{
    if (optstring[0] == '\0')
        options_build_getopt();
    options_defaults(opts);
    const char *config = NULL;
    int status = options_pass(opts, argc, argv, false, &config);
    if (status >= 0)
        return status;
    if (config != NULL) {
        opts->config = options_keep_path(opts, opt_by_val('c'), config);
        status = options_read_config(opts, opts->config);
        if (status >= 0)
            return status;
    }
    status = options_pass(opts, argc, argv, true, &config);
    return status >= 0 ? status : options_check(opts);
}

void
options_free(struct options *opts)
{
    for (size_t i = 0; i < WQ_ARRAY_LEN(opts->strings); i++) {
        wq_free(opts->strings[i]);
        opts->strings[i] = NULL;
    }
}
