/* workers.h - the registry of workers: the processes that identify
 * themselves to the server (a Faktory HELLO with a wid), whatever protocol
 * they speak.  A worker is known while at least one of its connections is
 * open; it records its host, pid and labels, when it last beat, and the
 * state an operator asked of it (quiet, terminate), which its next beat
 * reports. */
#ifndef WQ_WORKERS_H
#define WQ_WORKERS_H

#include "lib/wq.h"

#define WORKERS_MAX_ID 255 /* bytes of a wid */
#define WORKERS_SEEN   32  /* queues a worker is remembered on */

enum worker_state { WORKER_RUNNING, WORKER_QUIET, WORKER_TERMINATE };

/* Which protocols a worker spoke through (a name may be used by both). */
#define WORKER_FAKTORY 0x1 /* a Faktory HELLO with a wid */
#define WORKER_WORKQ   0x2 /* a Workq hello (ours) */
#define WORKER_NORFAB  0x4 /* a NORFAB worker's READY */

struct worker {
    char *wid; /* NUL-terminated */
    size_t wid_len;
    char *hostname; /* NUL-terminated, "" if not given */
    int64_t pid;
    char *labels; /* the labels as compact JSON ("[]" if none) */
    uint32_t connections;
    uint64_t last_beat_ms;
    enum worker_state state;
    uint8_t kinds;         /* WORKER_* */
    char address[64];      /* its first connection's peer, "" if unknown */
    uint64_t connected_ms; /* since when it is known */
    char last_command[16]; /* the verb of its last command */
    char *waiting_on;      /* the names of its waiting lease, or NULL */
    uint32_t holding;      /* LEASED jobs it leased */
    bool gone;             /* out of the registry, kept while it holds jobs */
    /* the queues it leased from or waited on, the latest WORKERS_SEEN */
    char *seen[WORKERS_SEEN];
    uint32_t nseen;
};

struct workers;

/* A new empty registry (aborts if memory is exhausted). */
struct workers *workers_new(void);
/* Free every worker and the registry; NULL is ignored. */
void workers_free(struct workers *w);
size_t workers_count(const struct workers *w);

/* A connection of worker wid[0..len) opened (a HELLO of kind, a
 * WORKER_* bit, from address): the worker, created with these details if
 * it is new (a known one keeps its own), with one more connection, as if
 * it beat at now_ms. */
struct worker *workers_attach(struct workers *w, const char *wid, size_t len, const char *hostname,
                              int64_t pid, const char *labels, uint8_t kind, const char *address,
                              uint64_t now_ms);
/* One of k's connections closed; the last one takes k out of the registry
 * (it is freed once it holds no job). */
void workers_detach(struct workers *w, struct worker *k);
/* k leased a job / one of its leased jobs left LEASED (the last one frees
 * a worker that is gone). */
void workers_hold(struct worker *k);
void workers_unhold(struct worker *k);
/* What k's waiting lease waits on (names, comma-separated); NULL: none. */
void workers_set_waiting(struct worker *k, const char *names);
/* k leased from or waits on the queue named name[0..len). */
void workers_note_queue(struct worker *k, const char *name, size_t len);
/* Is k connected and has it leased from or waited on that queue lately? */
bool workers_present(const struct worker *k, const char *name, size_t len);
/* Ask k to quiet or terminate, or k says it does: a state only moves
 * forward (running, quiet, terminate), so a lesser one leaves it. */
void workers_signal(struct worker *k, enum worker_state want);
/* How many workers have spoken through a protocol of kind (WORKER_*). */
size_t workers_count_kind(const struct workers *w, uint8_t kind);
/* The worker with this wid, or NULL. */
struct worker *workers_find(const struct workers *w, const char *wid, size_t len);

/* The workers sorted by wid (bytes), in an array the caller frees with
 * wq_free; *n gets their number. */
struct worker **workers_sorted(const struct workers *w, size_t *n);
/* Is wid[0..len) a wid: 1 to WORKERS_MAX_ID visible ASCII characters, no
 * space (it is printed in line protocols)? */
bool workers_valid_id(const char *wid, size_t len);

/* "running", "quiet" or "terminate". */
const char *worker_state_name(enum worker_state s);

#endif /* WQ_WORKERS_H */
