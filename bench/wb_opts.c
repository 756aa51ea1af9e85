/* wb_opts.c - workq-bench's command line: the usage text, and the parsing
 * and checking of every option (and the password and address it takes from
 * the environment).  Usage errors exit 64 (EX_USAGE), as the server's and
 * workq-cli's do. */
#include "wb.h"
#include "wb_proto.h" /* wb_tok_u64, wb_protos */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --help, and the text shown on a usage error. */
static void
opts_usage(FILE *out)
{
    fprintf(out,
            "Usage: workq-bench [OPTIONS]\n"
            "Load generator for workq-server (and beanstalkd, for comparison).\n"
            "\n"
            "  -h HOST             server host (default 127.0.0.1)\n"
            "  -p PORT             server port (default 9922; 11300 for beanstalkd, 7419\n"
            "                      for faktory, 6379 for hero)\n"
            "  --addr HOST:PORT    both at once ([::1]:PORT for IPv6; HOST alone, :PORT)\n"
            "                      (default with the workq protocol: $WORKQ_ADDR, if set\n"
            "                      and none of -h, -p, --addr is given)\n"
            "  -c N                connections (default 50)\n"
            "  -n N                jobs (default 100000)\n"
            "  -d BYTES            payload size (default 16)\n"
            "  -P N                requests in flight per connection (default 1)\n"
            "  -t WORKLOAD         add, lease-complete, cycle, run or schedule (default cycle)\n"
            "  --names K           spread jobs over K queue names (default 1)\n"
            "  --priorities        give jobs random priorities (0 to 1023)\n"
            "  --backlog N         first add N jobs to every name at the lowest priority, not\n"
            "                      measured, so the measured phase runs on a queue that\n"
            "                      holds them throughout (default 0; lease-complete and\n"
            "                      cycle only); they never expire: one fresh server per run\n"
            "  --ttr MS            job TTR (default 60000)\n"
            "  --ttl MS            TTL of the measured jobs (default 3600000)\n"
            "  --keep              leave the jobs on the server; by default the run\n"
            "                      removes what it added at its end (not measured)\n"
            "  --timeout SECONDS   give up after this long (default 300; 0: never), counted\n"
            "                      from the start: connecting, the backlog and the prefill\n"
            "                      count too\n"
            "  --protocol P        workq (default), beanstalkd, faktory (the Faktory\n"
            "                      Work Protocol: PUSH, FETCH + ACK), or hero (the Hero\n"
            "                      Dispatcher's Redis protocol: HSET + LPUSH, BLPOP +\n"
            "                      HGETALL + HSET + HSET + LPUSH; workq-server's\n"
            "                      -hero-listen or a Redis server)\n"
            "  --password-file F   the server's password is F's first line (default: the\n"
            "                      WORKQ_PASSWORD environment variable, or with --protocol\n"
            "                      faktory FAKTORY_PASSWORD, if set; hero: the file only)\n"
            "  --tls               connect over TLS, checking the server's certificate\n"
            "  --cacert FILE       trust the CAs in FILE (PEM; default: the system's)\n"
            "  --cert FILE         show this client certificate (PEM), with --key\n"
            "  --key FILE          the client certificate's private key (PEM)\n"
            "  --csv               a header line and one line of results\n"
            "  --json              one JSON object\n"
            "  -q                  quiet: one summary line, no progress\n"
            "  --help              this help\n"
            "  -V, --version       show the version\n"
            "\n"
            "Workloads:\n"
            "  add             add N jobs; measures adds\n"
            "  lease-complete  add N jobs (not measured), then drain them with lease + complete\n"
            "  cycle           half the connections add, half lease + complete; measures\n"
            "                  completed jobs (the steady state)\n"
            "  run             half the connections send run and wait for the result, half\n"
            "                  lease + complete (workq only)\n"
            "  schedule        like cycle, with schedule at times from 1 s ago to 100 ms ahead\n"
            "                  (not hero)\n"
            "\n"
            "Exit status: 0 if every reply was as expected and every job done, 1 otherwise\n"
            "(also when the server cannot be used), 64 on a usage error, 66 if the password\n"
            "file cannot be read, 77 if the server wants a password and has none or\n"
            "refuses it.\n");
}

/* Strict decimal in [min, max]: no sign, no spaces, no trailing junk. */
static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    struct wb_tok t = {s, strlen(s)};
    uint64_t v;
    if (wb_tok_u64(t, &v) < 0 || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Say what is wrong with the command line and exit 64. */
static void opt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
opt_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("workq-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(BENCH_EXIT_USAGE);
}

/* Parse a numeric option or exit with a usage error. */
static uint64_t
opt_number(const char *name, const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v;
    if (parse_u64(arg, min, max, &v) < 0)
        opt_die("%s must be a number from %" PRIu64 " to %" PRIu64, name, min, max);
    return v;
}

/* An address as workq-cli takes it: HOST:PORT, [IPV6]:PORT, HOST alone or
 * :PORT (host 127.0.0.1); a port of NULL is the protocol's default.  The
 * strings point into o->addr_buf, a copy of arg.  -1 if it is none of
 * those. */
static int
opt_addr(struct wb_opts *o, const char *arg)
{
    free(o->addr_buf);
    char *host = o->addr_buf = strdup(arg), *port = NULL, *colon;
    if (host == NULL)
        return -1;
    if (host[0] == '[') {
        char *close = strchr(host, ']');
        if (close == NULL || (close[1] != '\0' && close[1] != ':'))
            return -1;
        *close = '\0';
        port = close[1] == ':' ? close + 2 : NULL;
        host++;
    } else if ((colon = strchr(host, ':')) != NULL && strchr(colon + 1, ':') == NULL) {
        *colon = '\0';
        port = colon + 1;
    }
    uint64_t v;
    if (port != NULL && parse_u64(port, 1, 65535, &v) < 0)
        return -1;
    o->host = host[0] != '\0' ? host : "127.0.0.1";
    o->port = port;
    return 0;
}

/* Index of arg in a name table, or exit with a usage error. */
static int
opt_lookup(const char *const *names, int n, const char *what, const char *arg)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], arg) == 0)
            return i;
    opt_die("unknown %s: %s", what, arg);
}

/* The protocol --protocol names, or exit with a usage error. */
static enum wb_proto_id
opt_protocol(const char *arg)
{
    for (int i = 0; i < WB_PROTO_COUNT; i++)
        if (strcmp(wb_protos[i]->name, arg) == 0)
            return (enum wb_proto_id)i;
    opt_die("unknown protocol: %s", arg);
}

/* The option getopt_long just refused, as written: a long one, or the
 * letter (which may stand in a group such as -qx). */
static const char *
opt_name(char **argv, bool missing_value)
{
    static char letter[3] = "-?";
    const char *word = argv[optind - 1];
    if (optopt == 0 || optopt > 255 || (missing_value && strncmp(word, "--", 2) == 0))
        return word;
    letter[1] = (char)optopt;
    return letter;
}

enum {
    WB_OPT_ADDR = 256,
    WB_OPT_NAMES,
    WB_OPT_PRIORITIES,
    WB_OPT_CSV,
    WB_OPT_JSON,
    WB_OPT_TIMEOUT,
    WB_OPT_PROTOCOL,
    WB_OPT_TTR,
    WB_OPT_TTL,
    WB_OPT_BACKLOG,
    WB_OPT_PASSWORD_FILE,
    WB_OPT_TLS,
    WB_OPT_CACERT,
    WB_OPT_CERT,
    WB_OPT_KEY,
    WB_OPT_KEEP,
    WB_OPT_HELP
};

static void opt_finish(struct wb_opts *o, const char *password_file, bool addr_given);

/* Fill o from the command line and the environment; exits 64 on anything
 * invalid, 0 after --help and --version. */
void
wb_opts_parse(struct wb_opts *o, int argc, char **argv)
{
    static const struct option wb_long_options[] = {
        {"addr", required_argument, NULL, WB_OPT_ADDR},
        {"names", required_argument, NULL, WB_OPT_NAMES},
        {"priorities", no_argument, NULL, WB_OPT_PRIORITIES},
        {"csv", no_argument, NULL, WB_OPT_CSV},
        {"json", no_argument, NULL, WB_OPT_JSON},
        {"timeout", required_argument, NULL, WB_OPT_TIMEOUT},
        {"protocol", required_argument, NULL, WB_OPT_PROTOCOL},
        {"ttr", required_argument, NULL, WB_OPT_TTR},
        {"ttl", required_argument, NULL, WB_OPT_TTL},
        {"backlog", required_argument, NULL, WB_OPT_BACKLOG},
        {"password-file", required_argument, NULL, WB_OPT_PASSWORD_FILE},
        {"tls", no_argument, NULL, WB_OPT_TLS},
        {"cacert", required_argument, NULL, WB_OPT_CACERT},
        {"cert", required_argument, NULL, WB_OPT_CERT},
        {"key", required_argument, NULL, WB_OPT_KEY},
        {"keep", no_argument, NULL, WB_OPT_KEEP},
        {"help", no_argument, NULL, WB_OPT_HELP},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct wb_opts){.host = "127.0.0.1",
                          .workload = WL_CYCLE,
                          .proto = WB_PROTO_WORKQ,
                          .conns = 50,
                          .jobs = 100000,
                          .payload = 16,
                          .pipeline = 1,
                          .names = 1,
                          .ttr_ms = 60000,
                          .ttl_ms = 3600000,
                          .timeout_s = 300};
    const char *password_file = NULL;
    bool addr_given = false;
    int ch;
    opterr = 0; /* its messages are ours, below */
    while ((ch = getopt_long(argc, argv, ":h:p:c:n:d:P:t:qV", wb_long_options, NULL)) != -1) {
        switch (ch) {
        case 'h':
            o->host = optarg;
            addr_given = true;
            break;
        case 'p':
            opt_number("-p", optarg, 1, 65535);
            o->port = optarg;
            addr_given = true;
            break;
        case 'c':
            o->conns = (uint32_t)opt_number("-c", optarg, 1, 10000);
            break;
        case 'n':
            o->jobs = (uint32_t)opt_number("-n", optarg, 1, 1000000000);
            break;
        case 'd':
            o->payload = (uint32_t)opt_number("-d", optarg, 0, BENCH_MAX_PAYLOAD);
            break;
        case 'P':
            o->pipeline = (uint32_t)opt_number("-P", optarg, 1, BENCH_MAX_PIPELINE);
            break;
        case 't':
            o->workload =
                (enum wb_workload)opt_lookup(wb_workload_names, WL_COUNT, "workload", optarg);
            break;
        case 'q':
            o->quiet = true;
            break;
        case WB_OPT_ADDR:
            if (opt_addr(o, optarg) < 0)
                opt_die("bad address \"%s\" (--addr HOST:PORT)", optarg);
            addr_given = true;
            break;
        case WB_OPT_NAMES:
            o->names = (uint32_t)opt_number("--names", optarg, 1, BENCH_MAX_NAMES);
            break;
        case WB_OPT_PRIORITIES:
            o->priorities = true;
            break;
        case WB_OPT_CSV:
            o->csv = true;
            break;
        case WB_OPT_JSON:
            o->json = true;
            break;
        case WB_OPT_TIMEOUT:
            o->timeout_s = (uint32_t)opt_number("--timeout", optarg, 0, 86400 * 365);
            break;
        case WB_OPT_PROTOCOL:
            o->proto = opt_protocol(optarg);
            break;
        case WB_OPT_TTR:
            o->ttr_ms = (uint32_t)opt_number("--ttr", optarg, 1, 86400000);
            break;
        case WB_OPT_TTL:
            o->ttl_ms = opt_number("--ttl", optarg, 1, UINT64_MAX / 2);
            break;
        case WB_OPT_BACKLOG:
            o->backlog = (uint32_t)opt_number("--backlog", optarg, 0, BENCH_MAX_ALL_JOBS);
            break;
        case WB_OPT_PASSWORD_FILE:
            password_file = optarg;
            break;
        case WB_OPT_TLS:
            o->tls = true;
            break;
        case WB_OPT_CACERT:
            o->cacert = optarg;
            break;
        case WB_OPT_CERT:
            o->cert = optarg;
            break;
        case WB_OPT_KEY:
            o->key = optarg;
            break;
        case WB_OPT_KEEP:
            o->keep = true;
            break;
        case WB_OPT_HELP:
            opts_usage(stdout);
            exit(0);
        case 'V':
            printf("workq-bench %s\n", PACKAGE_VERSION);
            exit(0);
        case ':':
            opt_die("missing value for option \"%s\" (see workq-bench --help)",
                    opt_name(argv, true));
        default:
            opt_die("unknown option \"%s\" (see workq-bench --help)", opt_name(argv, false));
        }
    }
    if (optind < argc)
        opt_die("unexpected argument: %s", argv[optind]);
    opt_finish(o, password_file, addr_given);
}

/* The password: the first line of path (without its line end), or the
 * environment variable env if path is NULL (none if that is unset or
 * empty); exits 66 if the file cannot be read, or its first line is empty
 * or too long, 64 if the variable is too long. */
static char *
opt_password(const char *path, const char *env_name)
{
    char line[BENCH_MAX_PASSWORD + 3];
    if (path == NULL) {
        const char *env = getenv(env_name);
        if (env == NULL || env[0] == '\0')
            return NULL;
        if (strlen(env) > BENCH_MAX_PASSWORD)
            opt_die("%s is longer than %d bytes", env_name, BENCH_MAX_PASSWORD);
        return strdup(env);
    }
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "workq-bench: %s: %s\n", path, strerror(errno));
        exit(BENCH_EXIT_NOINPUT);
    }
    bool got = fgets(line, sizeof line, fp) != NULL;
    fclose(fp);
    size_t len = got ? strlen(line) : 0;
    bool whole = len > 0 && line[len - 1] == '\n';
    if (whole)
        line[--len] = '\0';
    if (whole && len > 0 && line[len - 1] == '\r')
        line[--len] = '\0';
    if (len == 0 || len > BENCH_MAX_PASSWORD) {
        fprintf(stderr, "workq-bench: %s: the first line must hold the password (1 to %d bytes)\n",
                path, BENCH_MAX_PASSWORD);
        exit(BENCH_EXIT_NOINPUT);
    }
    return strdup(line);
}

/* Defaults that depend on other options (WORKQ_ADDR names a Workq
 * listener, so only the workq protocol reads it, and only when no option
 * names the server, as workq-cli's -a wins over it), and combinations that
 * make no sense; exits 64 on those. */
static void
opt_finish(struct wb_opts *o, const char *password_file, bool addr_given)
{
    const char *env = getenv("WORKQ_ADDR");
    if (!addr_given && o->proto == WB_PROTO_WORKQ && env != NULL && env[0] != '\0' &&
        opt_addr(o, env) < 0)
        opt_die("bad address \"%s\" in WORKQ_ADDR", env);
    if (o->port == NULL)
        o->port = wb_protos[o->proto]->port;
    if (o->csv && o->json)
        opt_die("--csv and --json exclude each other");
    if (o->conns < 2 && o->workload != WL_ADD && o->workload != WL_LEASE_COMPLETE)
        opt_die("%s needs at least 2 connections", wb_workload_names[o->workload]);
    if (o->proto == WB_PROTO_BEANSTALKD && o->workload == WL_RUN)
        opt_die("beanstalkd has no equivalent of run");
    if (o->proto == WB_PROTO_FAKTORY && o->workload == WL_RUN)
        opt_die("Faktory has no equivalent of run");
    if (o->proto == WB_PROTO_HERO && (o->workload == WL_RUN || o->workload == WL_SCHEDULE))
        opt_die("hero measures add, lease-complete and cycle only (no %s)",
                wb_workload_names[o->workload]);
    if (o->proto == WB_PROTO_HERO && o->priorities)
        opt_die("Hero's jobs have no priorities (--priorities)");
    if ((o->cacert != NULL || o->cert != NULL || o->key != NULL) && !o->tls)
        opt_die("--cacert, --cert and --key need --tls");
    if ((o->cert == NULL) != (o->key == NULL))
        opt_die("--cert and --key go together");
    if (password_file != NULL && o->proto == WB_PROTO_BEANSTALKD)
        opt_die("beanstalkd has no password (--password-file)");
    /* add measures no lease, and run and schedule consumers cannot lease
     * only jobs whose creation was acknowledged: run jobs leave the queue
     * by themselves, scheduled ones become ready later. */
    if (o->backlog > 0 && o->workload != WL_LEASE_COMPLETE && o->workload != WL_CYCLE)
        opt_die("--backlog works only with -t lease-complete or -t cycle");
    if ((uint64_t)o->backlog * o->names + o->jobs > BENCH_MAX_ALL_JOBS)
        opt_die("-n plus --backlog times --names must be at most %u", BENCH_MAX_ALL_JOBS);
    if (o->proto == WB_PROTO_FAKTORY)
        o->password = opt_password(password_file, "FAKTORY_PASSWORD");
    else if (o->proto == WB_PROTO_WORKQ)
        o->password = opt_password(password_file, "WORKQ_PASSWORD");
    else if (o->proto == WB_PROTO_HERO && password_file != NULL)
        o->password = opt_password(password_file, NULL);
}
