/* nfp_internal.h - the broker's records, shared by nfp_broker.c (routing,
 * heartbeats) and nfp_mmi.c (the management service). */
#ifndef WQ_NFP_INTERNAL_H
#define WQ_NFP_INTERNAL_H

#include "lib/wq.h"
#include "lib/list.h"
#include "norfab/nfp.h"
#include "norfab/nfp_broker.h"

struct registry;

/* A service: its ready workers, in the order they came. */
struct nfp_service {
    struct nfp_worker **workers;
    size_t n, cap;
    size_t next;       /* where the next "any" starts: turn by turn */
    uint64_t requests; /* routed to it */
    size_t len;
    char name[];
};

/* A worker, by its ZeroMQ identity (its name). */
struct nfp_worker {
    struct list link;            /* in the broker's list */
    struct nfp_service *service; /* its READY's */
    bool ascii;                  /* its commands come as "0xNN" */
    uint64_t seen_ms;            /* its last command */
    uint64_t ready_ms;           /* its READY */
    uint64_t keepalives_tx, keepalives_rx;
    size_t len;
    char name[];
};

/* A client, by its identity: seen recently. */
struct nfp_client {
    struct list link; /* in the broker's list, the least recently seen first */
    bool ascii;
    uint64_t first_ms, seen_ms;
    uint64_t requests;
    size_t len;
    char name[];
};

struct nfp_broker {
    struct nfp_broker_config cfg;
    nfp_send_fn send;
    void *send_arg;
    const uint64_t *now_ms;
    uint64_t started_ms;
    struct registry *workers;  /* identity -> struct nfp_worker */
    struct list worker_list;   /* every worker */
    struct registry *services; /* name -> struct nfp_service */
    struct registry *clients;  /* identity -> struct nfp_client */
    struct list client_list;
    struct nfp_broker_counts counts;
};

/* The broker's own service. */
#define NFP_MMI_SERVICE "mmi.service.broker"

/* Answer the client's request m to mmi.service.broker: its body is JSON
 * {"task", "args", "kwargs"}; the answer is a RESPONSE, or an MMI for an
 * MMI request, status 200. */
void nfp_mmi(struct nfp_broker *b, const struct nfp_msg *m, struct nfp_client *c);

/* Send a RESPONSE-shaped message to client c: cmd (RESPONSE, MMI),
 * service, uuid, status, body. */
void nfp_to_client(struct nfp_broker *b, const struct nfp_client *c, uint8_t cmd,
                   struct nfp_frame service, struct nfp_frame uuid, const char *status,
                   struct nfp_frame body);

/* Forget worker w (after its DISCONNECT, or dead); with tell, send it a
 * DISCONNECT first. */
void nfp_worker_drop(struct nfp_broker *b, struct nfp_worker *w, bool tell);

/* Is w dead (unheard of for liveness intervals) at now? */
bool nfp_worker_dead(const struct nfp_broker *b, const struct nfp_worker *w, uint64_t now);

#endif /* WQ_NFP_INTERNAL_H */
