/* nfp_internal.h - the broker's records, shared by nfp_broker.c (routing,
 * heartbeats) and nfp_mmi.c (the management service). */
#ifndef WQ_NFP_INTERNAL_H
#define WQ_NFP_INTERNAL_H

#include "lib/wq.h"

#include <jansson.h>

#include "lib/list.h"
#include "norfab/nfp.h"
#include "norfab/nfp_broker.h"

struct cmdlog_rec;
struct core;
struct worker;
struct registry;

/* A service: its ready workers, in the order they came. */
struct nfp_service {
    struct list waiting; /* struct nfp_post.link: POSTs queued for a worker, oldest first */
    struct nfp_worker **workers;
    size_t n, cap;
    size_t next;       /* the index of the worker whose "any" turn it is */
    size_t posts;      /* POSTs of it the broker keeps */
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
    struct worker *reg; /* in the engine's worker registry (NULL: not a valid wid) */
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

/* A worker a POST went to. */
struct nfp_dest {
    char *name;
    size_t len;
    bool answered; /* it sent a RESPONSE for the job */
    bool ended;    /* its final one: 200 (kept in result), a 4xx or a 5xx */
    char *result;  /* the body of its 200 */
    size_t result_len;
};

enum nfp_post_state { NFP_QUEUED, NFP_SENT, NFP_ENDED };

/* A POST the broker keeps (nfp_jobs.c): an engine job of the space
 * "norfab" keyed by its uuid, in the queue named by its service, whose
 * payload is the request's body.  Queued until a worker of the service
 * is there, then leased while with its workers; once each has sent its
 * final answer the engine job ends and the answers stay for the result
 * TTL. */
struct nfp_post {
    struct list link; /* QUEUED: in its service's waiting; else in the broker's sent or ended */
    struct nfp_service *service;
    enum nfp_post_state state;
    bool all;           /* target "all" */
    bool any;           /* target "any": the one kind sent again to another worker */
    uint64_t since_ms;  /* QUEUED: since; ENDED: since */
    uint64_t orphan_ms; /* SENT: since when all its owing workers are gone (0: they are not) */
    char *client;       /* who posted it */
    size_t client_len;
    char *target;
    size_t target_len;
    struct nfp_dest *dests;
    size_t ndest;
    uint64_t bytes; /* what it adds to -max-memory's count */
    char *body;     /* read back from the log, until its engine job is made */
    size_t body_len;
    size_t uuid_len;
    char uuid[];
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
    /* the jobs (nfp_jobs.c) */
    struct core *core;
    uint8_t space;
    struct registry *posts; /* uuid -> struct nfp_post */
    struct list sent;       /* the posts with their workers */
    struct list ended;      /* the posts ended, the oldest first */
};

/* A uuid is 1 to this many bytes (an engine key; NORFAB's are 32). */
#define NFP_UUID_MAX 255

/* The broker's own service. */
#define NFP_MMI_SERVICE "mmi.service.broker"

/* Answer the client's request m to mmi.service.broker: its body is JSON
 * {"task", "args", "kwargs"}; the answer is a RESPONSE, or an MMI for an
 * MMI request, status 200. */
void nfp_mmi(struct nfp_broker *b, const struct nfp_msg *m, struct nfp_client *c);

/* Send a RESPONSE-shaped message to client (its identity; it may be
 * gone): cmd (RESPONSE, MMI), service, uuid, status, body. */
void nfp_to_client(struct nfp_broker *b, struct nfp_frame client, uint8_t cmd,
                   struct nfp_frame service, struct nfp_frame uuid, const char *status,
                   struct nfp_frame body);

/* A frame as a JSON string (the empty string where it is not UTF-8). */
json_t *nfp_json_frame(struct nfp_frame f);

/* Forget worker w (after its DISCONNECT, or dead); with tell, send it a
 * DISCONNECT first. */
void nfp_worker_drop(struct nfp_broker *b, struct nfp_worker *w, bool tell);

/* Is w dead (unheard of for liveness intervals) at now? */
bool nfp_worker_dead(const struct nfp_broker *b, const struct nfp_worker *w, uint64_t now);

/* A frame of the text s. */
struct nfp_frame nfp_str(const char *s);

/* Send client (which may be gone) a RESPONSE for service and uuid with
 * status and the JSON body j (taken). */
void nfp_json_to_client(struct nfp_broker *b, struct nfp_frame client, struct nfp_frame service,
                        struct nfp_frame uuid, const char *status, json_t *j);

/* The JSON object NORFAB's broker answers a request with: workers (taken;
 * NULL: null), uuid, target, status, service, and errors when why is not
 * NULL. */
json_t *nfp_json_answer(json_t *workers, struct nfp_frame uuid, struct nfp_frame target,
                        const char *status, struct nfp_frame service, const char *why);

/* Forward request cmd of client (its uuid, body) to worker w. */
void nfp_forward(struct nfp_broker *b, const struct nfp_worker *w, uint8_t cmd,
                 struct nfp_frame client, struct nfp_frame uuid, struct nfp_frame body);

/* The next ready worker of s in turn, NULL if it has none. */
struct nfp_worker *nfp_service_next(struct nfp_service *s);
/* The service named f, created if need be. */
struct nfp_service *nfp_service(struct nfp_broker *b, struct nfp_frame f);
/* Free s if nothing holds it (no worker, no POST), so that the names
 * clients make up do not pile up. */
void nfp_service_release(struct nfp_broker *b, struct nfp_service *s);

/* ---- the jobs (nfp_jobs.c) ---- */

/* Open the broker's engine space. */
void nfp_jobs_open(struct nfp_broker *b, struct core *core);
/* Free the posts (the engine's jobs go with the engine). */
void nfp_jobs_close(struct nfp_broker *b);
/* Client c's POST m to service s, whose target named workers[0..n) (none:
 * "any" or "all" with no worker yet, which queues it). */
void nfp_jobs_post(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
                   struct nfp_service *s, struct nfp_worker **workers, size_t n);
/* Client c's GET m: answered (400 for a uuid never posted, the kept 200
 * of a worker gone) or relayed to the named workers still there. */
void nfp_jobs_get(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
                  struct nfp_service *s);
/* Client c's DELETE m: true when it cancelled a POST still queued (and
 * answered); false: relay it. */
bool nfp_jobs_delete(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c);
/* Worker w answered (RESPONSE m): note it for its job. */
void nfp_jobs_answered(struct nfp_broker *b, const struct nfp_worker *w, const struct nfp_msg *m);
/* Worker s got a worker (READY): the POSTs waiting for one go. */
void nfp_jobs_ready(struct nfp_broker *b, struct nfp_service *s);
/* Worker w is gone (dead, DISCONNECT; out of its service already): its
 * "any" jobs it never answered go to another worker, or wait for one. */
void nfp_jobs_worker_gone(struct nfp_broker *b, const struct nfp_worker *w);
/* Every keepalive interval: queued POSTs past the queue TTL are answered
 * 408; ended ones past the result TTL are forgotten; "any" POSTs whose
 * worker has not come back since a restart go to another. */
void nfp_jobs_tick(struct nfp_broker *b);
/* The log has been read back: the POSTs read become the engine's jobs. */
void nfp_jobs_replayed(struct nfp_broker *b);
/* Free p (its engine job too, while the engine is there). */
void nfp_post_free(struct nfp_broker *b, struct nfp_post *p);

/* ---- the log (nfp_log.c) ---- */

/* Record p's state whole (its body, body: the engine job's payload). */
void nfp_log_post(struct nfp_broker *b, const struct nfp_post *p, struct nfp_frame body);
/* Record d's final 200 body. */
void nfp_log_result(struct nfp_broker *b, const struct nfp_post *p, const struct nfp_dest *d);
/* Record that p (d NULL) or d's kept answer is forgotten. */
void nfp_log_gone(struct nfp_broker *b, const struct nfp_post *p, const struct nfp_dest *d);
/* core_space_ops.replay: a record of codes 56 to 58. */
void nfp_jobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms);

#endif /* WQ_NFP_INTERNAL_H */
