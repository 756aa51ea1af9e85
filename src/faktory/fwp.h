/* fwp.h - the Faktory Work Protocol as a module of the connection layer
 * (conn.h): commands are text lines, replies are RESP.  A connection is
 * greeted with HI (and, when the listener has a password, the iterations
 * and salt of its hash), must identify itself with HELLO, and then sends
 * commands until END.  The rules, and how they differ from Faktory's own
 * server, are in doc/faktory.md. */
#ifndef WQ_FWP_H
#define WQ_FWP_H

#include "lib/wq.h"
#include "lib/list.h"

struct auth_guard;
struct conn_hooks;
struct conn_proto;
struct event_base;
struct core;

/* The Faktory listeners' context (conn_service.ctx). */
struct fwp_ctx {
    struct core *core;
    struct fjobs *fjobs;           /* its jobs: its space of the core */
    const char *password;          /* NULL: none asked */
    struct auth_guard *auth_guard; /* failing addresses (every listener's) */
    size_t max_line;               /* longest command line */
    size_t max_job;                /* longest job (its JSON) */
    uint64_t backoff_unit_ms;      /* a second of the retry backoff (1000) */
    const uint64_t *now_ms;        /* the server's time for this batch, Unix ms */
    const bool *readonly;          /* the command log cannot be written */
    const uint64_t *clients;       /* open connections */
    uint64_t started_ms;
    uint64_t commands; /* handled since start */
    uint64_t rng;      /* xorshift state for the backoff's jitter (not 0) */
    /* Where a long MUTATE goes on in slices, a loop pass each, as a batch
     * of the connections' (NULL base: at once, as the unit tests run). */
    struct event_base *base;
    const struct conn_hooks *hooks;
    struct list mutations; /* struct fwp_mutation running; list_init'ed */
};

struct fjobs;
struct job;

/* fjobs_expired_fn: a reservation ran out; the job fails as a FAIL with
 * errtype "ReservationExpired" would make it (arg is a struct fwp_ctx). */
void fwp_reservation_expired(void *arg, struct fjobs *fs, struct job *j);

/* The module; its ctx is a struct fwp_ctx. */
extern const struct conn_proto fwp_protocol;

/* Lowercase hex of SHA-256 applied `iterations` times (at least once): the
 * first round over password and salt, each later one over the previous
 * 32-byte digest; into out (65 bytes). */
void fwp_password_hash(const char *password, const char *salt, uint32_t iterations, char out[65]);

#endif /* WQ_FWP_H */
