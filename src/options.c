/* options.c - command-line parsing with getopt_long_only. */
#include "wq.h"
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "util.h"

#define MIN_MAX_LINE    64
#define MAX_MAX_LINE    (16u << 20)
#define MAX_MAX_PAYLOAD (1024u << 20)

enum {
    OPT_LISTEN = 256,
    OPT_MAX_LINE,
    OPT_MAX_PAYLOAD,
    OPT_CMDLOG_PATH,
    OPT_CMDLOG_SEG_SIZE,
    OPT_CMDLOG_SYNC,
    OPT_CMDLOG_SYNC_INT,
    OPT_CMDLOG_CLEAN_INT,
    OPT_CMDLOG_TRUNCATE,
};

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
            "  -listen HOST:PORT     address to listen on (default %s:%s);\n"
            "                        HOST may be a name, an IPv4 address or [IPv6];\n"
            "                        port 0 picks a free port\n"
            "  -max-line BYTES       longest command line (default %u)\n"
            "  -max-payload BYTES    largest job payload or result (default %u)\n"
            "  -cmdlog-path DIR      keep a command log in DIR (default: none, jobs live\n"
            "                        in memory only)\n"
            "  -cmdlog-seg-size BYTES  start a new segment file at this size (default %u)\n"
            "  -cmdlog-sync POLICY   os, interval or always (default interval)\n"
            "  -cmdlog-sync-int MS   the interval of the interval policy (default %u)\n"
            "  -cmdlog-clean-int MS  how often old segments are cleaned (default %u)\n"
            "  -cmdlog-truncate      at start, cut a damaged log at the damage instead of\n"
            "                        refusing to start (what follows it is lost)\n"
            "  -h, -help             show this help and exit\n"
            "  -V, -version          show the version and exit\n",
            WQ_DEFAULT_HOST, WQ_DEFAULT_PORT, WQ_DEFAULT_MAX_LINE, WQ_DEFAULT_MAX_PAYLOAD,
            CMDLOG_DEFAULT_SEG_SIZE, CMDLOG_DEFAULT_SYNC_INT, CMDLOG_DEFAULT_CLEAN_INT);
}

int
options_set_listen(struct options *opts, const char *addr)
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon[1] == '\0')
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
    if (util_parse_u64(p, strlen(p), 65535, &port) != 0 || hlen >= sizeof opts->host)
        return -1;
    memcpy(opts->host, host, hlen);
    opts->host[hlen] = '\0';
    snprintf(opts->port, sizeof opts->port, "%u", (unsigned)port);
    return 0;
}

/* Parse a byte count within [min, max] for option `name`. */
static int
options_bytes(const char *name, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
    if (util_parse_u64(arg, strlen(arg), max, out) != 0 || *out < min) {
        fprintf(stderr, "workq-server: invalid -%s '%s' (expected %llu..%llu)\n", name, arg,
                (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    return 0;
}

int
options_parse(struct options *opts, int argc, char **argv)
{
    memset(opts, 0, sizeof *opts);
    snprintf(opts->host, sizeof opts->host, "%s", WQ_DEFAULT_HOST);
    snprintf(opts->port, sizeof opts->port, "%s", WQ_DEFAULT_PORT);
    opts->max_line = WQ_DEFAULT_MAX_LINE;
    opts->max_payload = WQ_DEFAULT_MAX_PAYLOAD;
    opts->cmdlog.seg_size = CMDLOG_DEFAULT_SEG_SIZE;
    opts->cmdlog.sync = CMDLOG_SYNC_INTERVAL;
    opts->cmdlog.sync_int_ms = CMDLOG_DEFAULT_SYNC_INT;
    opts->cmdlog.clean_int_ms = CMDLOG_DEFAULT_CLEAN_INT;

    int ch, idx;
    uint64_t v;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long_only(argc, argv, ":hV", long_options, &idx)) != -1) {
        switch (ch) {
        case OPT_LISTEN:
            if (options_set_listen(opts, optarg) != 0) {
                fprintf(stderr, "workq-server: invalid -listen '%s' (expected HOST:PORT)\n",
                        optarg);
                return EX_USAGE;
            }
            break;
        case OPT_MAX_LINE:
            if (options_bytes("max-line", optarg, MIN_MAX_LINE, MAX_MAX_LINE, &v) != 0)
                return EX_USAGE;
            opts->max_line = (size_t)v;
            break;
        case OPT_MAX_PAYLOAD:
            if (options_bytes("max-payload", optarg, 0, MAX_MAX_PAYLOAD, &v) != 0)
                return EX_USAGE;
            opts->max_payload = v;
            break;
        case OPT_CMDLOG_PATH:
            if (optarg[0] == '\0') {
                fprintf(stderr, "workq-server: -cmdlog-path needs a directory\n");
                return EX_USAGE;
            }
            opts->cmdlog.dir = optarg;
            break;
        case OPT_CMDLOG_SEG_SIZE:
            if (options_bytes("cmdlog-seg-size", optarg, 1, UINT64_MAX, &opts->cmdlog.seg_size))
                return EX_USAGE;
            break;
        case OPT_CMDLOG_SYNC:
            if (cmdlog_sync_parse(optarg, &opts->cmdlog.sync) != 0) {
                fprintf(stderr, "workq-server: invalid -cmdlog-sync '%s' (os, interval, always)\n",
                        optarg);
                return EX_USAGE;
            }
            break;
        case OPT_CMDLOG_SYNC_INT:
            if (options_bytes("cmdlog-sync-int", optarg, 0, UINT32_MAX, &opts->cmdlog.sync_int_ms))
                return EX_USAGE;
            break;
        case OPT_CMDLOG_CLEAN_INT:
            if (options_bytes("cmdlog-clean-int", optarg, 1, UINT32_MAX,
                              &opts->cmdlog.clean_int_ms))
                return EX_USAGE;
            break;
        case OPT_CMDLOG_TRUNCATE:
            opts->cmdlog.truncate_damage = true;
            break;
        case 'h':
            options_usage(stdout);
            return 0;
        case 'V':
            printf("workq-server %s\n", PACKAGE_VERSION);
            return 0;
        case ':':
            fprintf(stderr, "workq-server: option '%s' needs a value\n", argv[optind - 1]);
            return EX_USAGE;
        default:
            fprintf(stderr, "workq-server: unknown option '%s' (see -help)\n", argv[optind - 1]);
            return EX_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "workq-server: unexpected argument '%s' (see -help)\n", argv[optind]);
        return EX_USAGE;
    }
    return -1;
}
