/* options.h - the server's settings: one table in options.c declares each
 * option once (its flag, config key, default, checks and -help text) and
 * drives parsing of the command line and of a config file, and --help.  Long options take one dash
 * or two, "-flag value" or "-flag=value", as Workq's did.  A config file
 * (--config FILE) holds the same keys as the long flags, one per line;
 * flags given on the command line override it. */
#ifndef WQ_OPTIONS_H
#define WQ_OPTIONS_H

#include "lib/wq.h"
#include "store/cmdlog.h"
#include "lib/log.h"
#include "net/listener.h"

/* Room for the options of the table in options.c, each of which may keep
 * an owned copy of its text (a later value frees the earlier one). */
#define OPTIONS_MAX_DEFS 48

struct options {
    struct listen_set listen;          /* the Workq protocol */
    struct listen_set faktory_listen;  /* the Faktory protocol (n 0: off) */
    const char *faktory_password_file; /* NULL: FAKTORY_PASSWORD, if set */
    const char *password_file;         /* Workq clients must auth; NULL: off */
    uint64_t faktory_dead_ttl_ms;      /* how long a dead job stays */
    uint64_t faktory_dead_max;         /* at most this many dead jobs */
    uint64_t faktory_backoff_unit_ms;  /* a second of the retry backoff */
    struct listen_set hero_listen;     /* the Hero Dispatcher's RESP (n 0: off) */
    const char *hero_password_file;    /* Hero clients must AUTH; NULL: off */
    struct listen_set norfab_listen;   /* NORFAB's NFP over ZeroMQ (n 0: off) */
    uint64_t norfab_keepalive_ms;      /* NFP's heartbeat interval */
    uint64_t norfab_liveness;          /* a worker is dead after this many missed */
    uint64_t norfab_queue_ttl_ms;      /* a POST waits this long for a worker */
    uint64_t norfab_result_ttl_ms;     /* workers' final answers are kept this long */
    const char *norfab_curve_secret;   /* CURVE's secret key (Z85); NULL: no CURVE */
    const char *norfab_curve_clients;  /* the client keys let in; NULL: any */
    uint64_t dead_ttl_ms;              /* Workq's dead set: how long a job stays */
    uint64_t dead_max;                 /* and how many stay */
    uint64_t backoff_unit_ms;          /* a second of Workq's retry backoff */
    struct listen_set metrics_listen;  /* the HTTP metrics endpoint (n 0: off) */
    uint64_t metrics_max_queues;       /* queues with series of their own */
    const char *tls_cert;              /* PEM chain for tls:// addresses */
    const char *tls_key;               /* its private key */
    const char *tls_ca;                /* client certificates must chain here; NULL: none asked */
    size_t max_line;
    uint64_t max_payload;
    struct cmdlog_config cmdlog; /* cmdlog.dir NULL: no command log */
    bool daemonize;
    const char *pidfile; /* NULL: none */
    const char *user;    /* NULL: stay who we are */
    enum log_level log_level;
    enum log_target log_target;
    const char *log_file;            /* with LOG_TO_FILE */
    uint64_t max_connections;        /* 0: no limit */
    uint64_t idle_timeout_ms;        /* 0: never */
    uint64_t max_memory;             /* bytes held by jobs; 0: no limit */
    const char *config;              /* the config file read, or NULL */
    char *strings[OPTIONS_MAX_DEFS]; /* owned copies of the above */
};

/* Fill opts from the config file named in argv (if any), then from argv.
 * Returns -1 to continue, or an exit status: 0 after --help or --version,
 * EX_USAGE for a bad flag, EX_NOINPUT for an unreadable config file,
 * EX_CONFIG for a bad line in it or for settings that do not fit together
 * (a tls:// address without -tls-cert and -tls-key), each after printing
 * the problem.
 * Relative paths are made absolute, so -d may change directory. */
int options_parse(struct options *opts, int argc, char **argv);
/* Free what options_parse copied. */
void options_free(struct options *opts);

/* Parse a comma-separated list of "HOST:PORT", "[V6]:PORT" or ":PORT",
 * each of which may start with "tls://", into set; 0, or -1 leaving set
 * unchanged. */
int options_set_listen(struct listen_set *set, const char *list);

#endif /* WQ_OPTIONS_H */
