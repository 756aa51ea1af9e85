/* nfp_broker.h - the NFP broker: NORFAB's workers by name and service,
 * their heartbeats, its clients, and the routing of every request and
 * answer between them, with the broker's own service mmi.service.broker.
 * It knows no socket: it reads messages as a ROUTER socket receives them
 * and sends through the owner's function (nfp_frontend.c binds them to
 * ZeroMQ).  doc/norfab.md says what it does and where it differs from
 * NORFAB's own broker. */
#ifndef WQ_NFP_BROKER_H
#define WQ_NFP_BROKER_H

#include "lib/wq.h"
#include "norfab/nfp.h"

struct core;
struct nfp_broker;
struct stats_out;

/* Its settings. */
struct nfp_broker_config {
    uint64_t keepalive_ms;    /* a KEEPALIVE to each worker this often */
    uint64_t liveness;        /* a worker unheard of for this many intervals is dead */
    const char *endpoints;    /* what show_broker says it listens on */
    uint64_t started_ms;      /* the server's start (Unix ms) */
    uint64_t queue_ttl_ms;    /* a POST waits this long for a worker */
    uint64_t result_ttl_ms;   /* workers' final answers are kept this long */
    const char *curve_public; /* the broker's CURVE public key (Z85); NULL: no CURVE */
    const bool *readonly;     /* the command log cannot be written: no new POSTs */
};

/* Send frames[0..n) (the peer's identity first): false when the peer is
 * gone or cannot take it (the message is dropped).  heartbeat: the message
 * states nothing (a KEEPALIVE), so it need not wait for the command log. */
typedef bool (*nfp_send_fn)(void *arg, const struct nfp_frame *frames, size_t n, bool heartbeat);

/* A broker sending through send(arg, ...), its jobs on core's space
 * "norfab"; *now_ms is the server's clock (Unix ms). */
struct nfp_broker *nfp_broker_new(const struct nfp_broker_config *cfg, struct core *core,
                                  nfp_send_fn send, void *arg, const uint64_t *now_ms);
void nfp_broker_free(struct nfp_broker *b);

/* One message as the ROUTER socket received it. */
void nfp_broker_handle(struct nfp_broker *b, const struct nfp_frame *frames, size_t n);

/* Every keepalive_ms: a KEEPALIVE to each worker; workers unheard of for
 * liveness intervals are dead (forgotten, told nothing). */
void nfp_broker_tick(struct nfp_broker *b);

/* The command log has been read back: its POSTs are jobs again. */
void nfp_broker_replayed(struct nfp_broker *b);

/* Counts, for the metrics and show_broker. */
struct nfp_broker_counts {
    uint64_t workers, services, clients;
    uint64_t requests;    /* client requests routed (or answered by the broker) */
    uint64_t responses;   /* worker answers relayed */
    uint64_t dropped;     /* invalid messages */
    uint64_t disconnects; /* DISCONNECTs sent for unexpected commands */
    uint64_t dead;        /* workers declared dead */
    uint64_t resent;      /* POSTs sent again to another worker */
    uint64_t expired;     /* POSTs that found no worker in the queue TTL */
};
void nfp_broker_counts(const struct nfp_broker *b, struct nfp_broker_counts *out);

#endif /* WQ_NFP_BROKER_H */
