/* norfab_bench.c - round trips through a NORFAB broker (NFP over ZeroMQ):
 * client POST -> broker -> worker -> RESPONSE -> broker -> client.
 *
 * C client threads (DEALER, identity = client name) each keep --inflight
 * POSTs to target "any" outstanding, every one with its own uuid; W worker
 * threads (DEALER, identity = worker name, READY for --service) answer
 * every POST at once with RESPONSE 200 {"<worker>":"ok"} and send a
 * KEEPALIVE every 2 s.  A round trip is done when its client gets the
 * worker's 200 for that uuid; the broker's 202 for each POST (workq-server
 * sends one, the relay does not) is read and skipped.  One line on
 * stdout: clients, workers, in flight, round trips, seconds, round trips
 * per second, p50 and p99 latency (POST sent to 200 read).  Exit status 1
 * when a round trip is lost (no progress for --timeout seconds), answered
 * twice, or answered with another status; 64 on a usage error.
 *
 * --relay PORT is the floor to compare a broker with: a single-threaded
 * ROUTER that does the least NFP routing (READY registers a worker for a
 * service, a POST goes to the service's next worker in turn with no 202,
 * a worker's RESPONSE goes back to its client, KEEPALIVEs are ignored);
 * it runs until killed.
 *
 * Standalone: only libzmq and pthreads, one ZeroMQ context, each thread
 * its own sockets. */
#include "lib/wq.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <zmq.h>

#define EXIT_USAGE    64
#define MAX_FRAMES    10 /* frames kept of a message; the rest are read and dropped */
#define KEEPALIVE_MS  2000
#define POLL_MS       100
#define SETTLE_MS     50 /* after the workers' handshakes, for their READYs to arrive */
#define CONNECT_MS    10000
#define DUP_WINDOW_MS 100 /* listening for late duplicates after the last round trip */
#define MAX_ID        255 /* a ZeroMQ routing id's longest */

#define HDR_CLIENT "NFPC01"
#define HDR_WORKER "NFPW01"
#define HDR_BROKER "NFPB01"
#define CMD_READY  "0x01"
#define CMD_KA     "0x02"
#define CMD_DISC   "0x03"
#define CMD_POST   "0x04"
#define CMD_RESP   "0x05"
#define POST_BODY  "{\"task\":\"bench\",\"kwargs\":{},\"args\":[]}"

struct opts {
    const char *host;
    int port;
    int relay_port; /* -1: measure */
    int clients, workers, inflight;
    uint64_t roundtrips;
    const char *service;
    int timeout_s;
};

/* What the client threads keep of a run. */
struct client {
    pthread_t thread;
    int idx;
    uint64_t quota; /* round trips this client makes */
    uint64_t sent, done, failed, dup, unknown, acks;
    int64_t *sent_ns;  /* by sequence number: when its POST went */
    uint8_t *answered; /* by sequence number: its final answer came */
    int64_t *lat_ns;   /* by completion */
    int64_t end_ns;    /* the last completion */
    bool timed_out, setup_failed;
};

struct worker {
    pthread_t thread;
    int idx;
    char name[64];
    uint64_t answered, disconnects;
};

static struct opts opt = {
    .host = "127.0.0.1",
    .port = 5555,
    .relay_port = -1,
    .clients = 4,
    .workers = 8,
    .inflight = 1,
    .roundtrips = 50000,
    .service = "bench",
    .timeout_s = 10,
};
static void *ctx;
static char endpoint[300];
static uint32_t run_tag; /* the first 8 hex digits of every uuid of this run */
static pthread_barrier_t go;
static atomic_bool workers_stop;
static atomic_int clients_finished;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int workers_ready, workers_failed;

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One received message: its first MAX_FRAMES frames. */
struct frames {
    zmq_msg_t m[MAX_FRAMES];
    int n;
};

/* Receive one whole message into f (frames past MAX_FRAMES are dropped).
 * The number of frames, or -1 with errno (EAGAIN with ZMQ_DONTWAIT). */
static int
frames_recv(void *sock, struct frames *f, int flags)
{
    f->n = 0;
    for (;;) {
        zmq_msg_t scratch, *m = f->n < MAX_FRAMES ? &f->m[f->n] : &scratch;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, f->n == 0 ? flags : 0) < 0) {
            zmq_msg_close(m);
            for (int i = 0; i < f->n && i < MAX_FRAMES; i++)
                zmq_msg_close(&f->m[i]);
            f->n = 0;
            return -1;
        }
        int more = zmq_msg_more(m);
        if (m == &scratch)
            zmq_msg_close(m);
        else
            f->n++;
        if (!more)
            return f->n;
    }
}

static void
frames_close(struct frames *f)
{
    for (int i = 0; i < f->n; i++)
        zmq_msg_close(&f->m[i]);
    f->n = 0;
}

/* Is frame i of f exactly the text s? */
static bool
frame_is(struct frames *f, int i, const char *s)
{
    size_t n = strlen(s);
    return i < f->n && zmq_msg_size(&f->m[i]) == n && memcmp(zmq_msg_data(&f->m[i]), s, n) == 0;
}

static int
send_str(void *sock, const char *s, int flags)
{
    return zmq_send(sock, s, strlen(s), flags);
}

/* Send frames of text, the last without ZMQ_SNDMORE unless more is set.
 * 0, or -1 with errno. */
static int
send_strs(void *sock, const char *const *s, size_t n, bool more)
{
    for (size_t i = 0; i < n; i++)
        if (send_str(sock, s[i], i + 1 < n || more ? ZMQ_SNDMORE : 0) < 0)
            return -1;
    return 0;
}

/* Send frame i of f (moving it), with ZMQ_SNDMORE when more is set. */
static int
send_frame(void *sock, struct frames *f, int i, bool more)
{
    return zmq_msg_send(&f->m[i], sock, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

/* A DEALER socket named id; NULL on failure. */
static void *
dealer_new(const char *id, int linger_ms)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    if (s == NULL)
        return NULL;
    if (zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id)) != 0 ||
        zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof linger_ms) != 0) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

/* Connect s (named id) to the broker.  0, or -1 (said on stderr). */
static int
dealer_connect(void *s, const char *id)
{
    if (zmq_connect(s, endpoint) == 0)
        return 0;
    fprintf(stderr, "norfab_bench: %s: %s: %s\n", id, endpoint, zmq_strerror(zmq_errno()));
    return -1;
}

/* ---- workers ---- */

/* Tell the main thread that w is connected (ok) or never will be. */
static void
worker_ready(bool ok)
{
    pthread_mutex_lock(&ready_lock);
    if (ok)
        workers_ready++;
    else
        workers_failed++;
    pthread_cond_signal(&ready_cond);
    pthread_mutex_unlock(&ready_lock);
}

/* A PAIR socket that will hear when s has done its ZMTP handshake with
 * the broker (a socket monitor); set up before s connects, so the event
 * cannot be missed.  NULL on failure. */
static void *
monitor_open(void *s, int idx)
{
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://norfab-bench-mon-%d", idx);
    if (zmq_socket_monitor(s, mon, ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0)
        return NULL;
    void *pair = zmq_socket(ctx, ZMQ_PAIR);
    int ms = CONNECT_MS;
    if (pair != NULL &&
        (zmq_setsockopt(pair, ZMQ_RCVTIMEO, &ms, sizeof ms) != 0 || zmq_connect(pair, mon) != 0)) {
        zmq_close(pair);
        pair = NULL;
    }
    if (pair == NULL)
        zmq_socket_monitor(s, NULL, 0);
    return pair;
}

/* Wait up to CONNECT_MS for the handshake monitor_open(s) listens for, then
 * stop monitoring.  0, or -1 if it did not come. */
static int
monitor_wait(void *s, void *pair)
{
    struct frames f;
    int rc = frames_recv(pair, &f, 0) >= 1 ? 0 : -1; /* the only event asked for */
    frames_close(&f);
    zmq_close(pair);
    zmq_socket_monitor(s, NULL, 0);
    return rc;
}

/* Answer POST f (["", hdr, 0x04, client, "", uuid, body]) at once:
 * RESPONSE ["", NFPW01, 0x05, client, "", uuid, "200", body]. */
static int
worker_answer(void *s, struct frames *f, const char *body)
{
    static const char *const head[] = {"", HDR_WORKER, CMD_RESP};
    if (send_strs(s, head, WQ_ARRAY_LEN(head), true) != 0 || send_frame(s, f, 3, true) != 0 ||
        send_str(s, "", ZMQ_SNDMORE) < 0 || send_frame(s, f, 5, true) != 0 ||
        send_str(s, "200", ZMQ_SNDMORE) < 0 || send_str(s, body, 0) < 0)
        return -1;
    return 0;
}

/* A worker thread: READY, then answer every POST and send a KEEPALIVE
 * every KEEPALIVE_MS until workers_stop; then DISCONNECT. */
static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    const char *const ready[] = {"", HDR_WORKER, CMD_READY, opt.service};
    const char *const ka[] = {"", HDR_WORKER, CMD_KA, opt.service};
    const char *const disc[] = {"", HDR_WORKER, CMD_DISC, opt.service};
    char body[128];
    snprintf(body, sizeof body, "{\"%s\":\"ok\"}", w->name);
    void *s = dealer_new(w->name, 200);
    void *mon = s != NULL ? monitor_open(s, w->idx) : NULL;
    if (mon == NULL || dealer_connect(s, w->name) != 0 ||
        send_strs(s, ready, WQ_ARRAY_LEN(ready), false) != 0 || monitor_wait(s, mon) != 0) {
        fprintf(stderr, "norfab_bench: worker %s: no connection to %s within %d ms\n", w->name,
                endpoint, CONNECT_MS);
        worker_ready(false);
        if (s != NULL)
            zmq_close(s);
        return NULL;
    }
    worker_ready(true);
    int64_t next_ka = now_ns() + (int64_t)KEEPALIVE_MS * 1000000;
    while (!atomic_load(&workers_stop)) {
        int64_t wait_ms = (next_ka - now_ns()) / 1000000;
        zmq_pollitem_t pi = {.socket = s, .events = ZMQ_POLLIN};
        zmq_poll(&pi, 1, WQ_MAX(0, WQ_MIN(wait_ms, POLL_MS)));
        struct frames f;
        while (frames_recv(s, &f, ZMQ_DONTWAIT) >= 0) {
            if (f.n >= 7 && frame_is(&f, 2, CMD_POST)) {
                if (worker_answer(s, &f, body) == 0)
                    w->answered++;
            } else if (f.n >= 3 && frame_is(&f, 2, CMD_DISC)) {
                /* the broker forgot us: register again, as NORFAB's worker does */
                w->disconnects++;
                send_strs(s, ready, WQ_ARRAY_LEN(ready), false);
            } /* a KEEPALIVE, or anything else: nothing to do */
            frames_close(&f);
        }
        if (now_ns() >= next_ka) {
            send_strs(s, ka, WQ_ARRAY_LEN(ka), false);
            next_ka += (int64_t)KEEPALIVE_MS * 1000000;
        }
    }
    send_strs(s, disc, WQ_ARRAY_LEN(disc), false);
    zmq_close(s);
    return NULL;
}

/* ---- clients ---- */

/* uuid of round trip seq: 32 hex digits, as NORFAB's uuid4().hex: the run's
 * tag, the client, the sequence number. */
static void
make_uuid(char out[33], int client, uint64_t seq)
{
    snprintf(out, 33, "%08" PRIx32 "%08x%016" PRIx64, run_tag, (unsigned)client, seq);
}

/* The value of n hex digits at p; false if one is not a hex digit. */
static bool
hex_value(const char *p, int n, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        int c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* The sequence number of c's uuid u (n bytes); false if u is none of the
 * POSTs c has sent. */
static bool
parse_uuid(const struct client *c, const char *u, size_t n, uint64_t *seq)
{
    uint64_t tag, idx;
    return n == 32 && hex_value(u, 8, &tag) && tag == run_tag && hex_value(u + 8, 8, &idx) &&
           idx == (uint64_t)c->idx && hex_value(u + 16, 16, seq) && *seq < c->sent;
}

/* POST round trip c->sent: ["", NFPC01, 0x04, service, "any", uuid, body]. */
static int
client_post(void *s, struct client *c)
{
    char uuid[33];
    make_uuid(uuid, c->idx, c->sent);
    const char *const f[] = {"", HDR_CLIENT, CMD_POST, opt.service, "any", uuid, POST_BODY};
    c->sent_ns[c->sent] = now_ns();
    if (send_strs(s, f, WQ_ARRAY_LEN(f), false) != 0)
        return -1;
    c->sent++;
    return 0;
}

/* One message from the broker: ["", NFPB01, 0x05, service, uuid, status,
 * body].  A 202 is skipped; a 200 ends its round trip (and, while post is
 * set, the next POST goes); any other status fails it. */
static void
client_handle(void *s, struct client *c, struct frames *f, bool post)
{
    uint64_t seq;
    if (f->n < 7 || !frame_is(f, 2, CMD_RESP) ||
        !parse_uuid(c, zmq_msg_data(&f->m[4]), zmq_msg_size(&f->m[4]), &seq)) {
        c->unknown++;
        return;
    }
    if (frame_is(f, 5, "202")) {
        c->acks++;
        return;
    }
    int64_t t = now_ns();
    if (c->answered[seq]) {
        c->dup++;
        return;
    }
    c->answered[seq] = 1;
    if (frame_is(f, 5, "200")) {
        c->lat_ns[c->done++] = t - c->sent_ns[seq];
        c->end_ns = t;
    } else {
        if (c->failed++ < 3)
            fprintf(stderr, "norfab_bench: client %d: status %.*s: %.*s\n", c->idx,
                    (int)zmq_msg_size(&f->m[5]), (const char *)zmq_msg_data(&f->m[5]),
                    (int)WQ_MIN(zmq_msg_size(&f->m[6]), 200), (const char *)zmq_msg_data(&f->m[6]));
    }
    if (post && c->sent < c->quota && client_post(s, c) != 0)
        fprintf(stderr, "norfab_bench: client %d: send: %s\n", c->idx, zmq_strerror(zmq_errno()));
}

/* Read what s has now, or wait up to ms for it. */
static void
client_read(void *s, struct client *c, int ms, bool post)
{
    zmq_pollitem_t pi = {.socket = s, .events = ZMQ_POLLIN};
    if (zmq_poll(&pi, 1, ms) <= 0)
        return;
    struct frames f;
    while (frames_recv(s, &f, ZMQ_DONTWAIT) >= 0) {
        client_handle(s, c, &f, post);
        frames_close(&f);
    }
}

/* A client thread: keep opt.inflight POSTs out until its quota has been
 * answered or nothing comes for opt.timeout_s; then, until every client
 * is through and DUP_WINDOW_MS more, count answers that come twice. */
static void *
client_main(void *arg)
{
    struct client *c = arg;
    char name[64];
    snprintf(name, sizeof name, "norfab-bench-%" PRIx32 "-c%d", run_tag, c->idx);
    void *s = dealer_new(name, 0);
    if (s != NULL && dealer_connect(s, name) != 0) {
        zmq_close(s);
        s = NULL;
    }
    c->setup_failed = s == NULL;
    pthread_barrier_wait(&go);
    if (s == NULL) {
        atomic_fetch_add(&clients_finished, 1);
        return NULL;
    }
    while (c->sent < c->quota && c->sent < (uint64_t)opt.inflight)
        if (client_post(s, c) != 0)
            break;
    int64_t progress_ns = now_ns();
    uint64_t seen = 0;
    while (c->done + c->failed < c->quota) {
        client_read(s, c, POLL_MS, true);
        int64_t t = now_ns();
        if (c->done + c->failed != seen) {
            seen = c->done + c->failed;
            progress_ns = t;
        } else if (t - progress_ns > (int64_t)opt.timeout_s * 1000000000) {
            c->timed_out = true;
            break;
        }
    }
    atomic_fetch_add(&clients_finished, 1);
    while (atomic_load(&clients_finished) < opt.clients)
        client_read(s, c, POLL_MS / 2, false);
    int64_t until = now_ns() + (int64_t)DUP_WINDOW_MS * 1000000;
    for (int64_t t = now_ns(); t < until; t = now_ns())
        client_read(s, c, (int)((until - t) / 1000000) + 1, false);
    zmq_close(s);
    return NULL;
}

/* ---- the run ---- */

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Start the workers and wait until each is connected (and SETTLE_MS for
 * their READYs).  0, or -1 if one could not connect. */
static int
start_workers(struct worker *ws)
{
    for (int i = 0; i < opt.workers; i++) {
        ws[i].idx = i;
        snprintf(ws[i].name, sizeof ws[i].name, "norfab-bench-%" PRIx32 "-w%d", run_tag, i);
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            perror("norfab_bench: pthread_create");
            exit(1);
        }
    }
    pthread_mutex_lock(&ready_lock);
    while (workers_ready + workers_failed < opt.workers)
        pthread_cond_wait(&ready_cond, &ready_lock);
    int failed = workers_failed;
    pthread_mutex_unlock(&ready_lock);
    nanosleep(&(struct timespec){0, SETTLE_MS * 1000000L}, NULL);
    return failed ? -1 : 0;
}

/* Measure: workers, then clients, then the report.  The exit status. */
static int
bench(void)
{
    struct worker *ws = calloc((size_t)opt.workers, sizeof *ws);
    struct client *cs = calloc((size_t)opt.clients, sizeof *cs);
    if (ws == NULL || cs == NULL) {
        perror("norfab_bench");
        return 1;
    }
    run_tag = (uint32_t)getpid() ^ (uint32_t)time(NULL) << 12;
    bool ok = start_workers(ws) == 0;
    for (int i = 0; i < opt.clients && ok; i++) {
        struct client *c = &cs[i];
        c->idx = i;
        c->quota = opt.roundtrips / (uint64_t)opt.clients +
                   ((uint64_t)i < opt.roundtrips % (uint64_t)opt.clients);
        c->sent_ns = calloc(c->quota + 1, sizeof *c->sent_ns);
        c->lat_ns = calloc(c->quota + 1, sizeof *c->lat_ns);
        c->answered = calloc(c->quota + 1, 1);
        if (c->sent_ns == NULL || c->lat_ns == NULL || c->answered == NULL) {
            perror("norfab_bench");
            return 1;
        }
    }
    int64_t t0 = 0;
    if (ok) {
        pthread_barrier_init(&go, NULL, (unsigned)opt.clients + 1);
        for (int i = 0; i < opt.clients; i++)
            if (pthread_create(&cs[i].thread, NULL, client_main, &cs[i]) != 0) {
                perror("norfab_bench: pthread_create");
                exit(1);
            }
        pthread_barrier_wait(&go);
        t0 = now_ns();
        for (int i = 0; i < opt.clients; i++)
            pthread_join(cs[i].thread, NULL);
        pthread_barrier_destroy(&go);
    }
    atomic_store(&workers_stop, true);
    for (int i = 0; i < opt.workers; i++)
        pthread_join(ws[i].thread, NULL);
    if (!ok)
        return 1;

    uint64_t sent = 0, done = 0, failed = 0, dup = 0, unknown = 0, acks = 0, answered = 0;
    uint64_t disc = 0;
    int64_t end = t0;
    bool timed_out = false, setup_failed = false;
    for (int i = 0; i < opt.clients; i++) {
        sent += cs[i].sent;
        done += cs[i].done;
        failed += cs[i].failed;
        dup += cs[i].dup;
        unknown += cs[i].unknown;
        acks += cs[i].acks;
        end = WQ_MAX(end, cs[i].end_ns);
        timed_out = timed_out || cs[i].timed_out;
        setup_failed = setup_failed || cs[i].setup_failed;
    }
    for (int i = 0; i < opt.workers; i++) {
        answered += ws[i].answered;
        disc += ws[i].disconnects;
    }
    int64_t *lat = malloc((done + 1) * sizeof *lat);
    if (lat == NULL) {
        perror("norfab_bench");
        return 1;
    }
    size_t k = 0;
    for (int i = 0; i < opt.clients; i++) {
        memcpy(lat + k, cs[i].lat_ns, cs[i].done * sizeof *lat);
        k += cs[i].done;
    }
    qsort(lat, done, sizeof *lat, cmp_i64);
    double secs = (double)(end - t0) / 1e9;
    double p50 = done ? (double)lat[done / 2] / 1e6 : 0;
    double p99 = done ? (double)lat[done * 99 / 100] / 1e6 : 0;
    uint64_t lost = sent - done - failed; /* POSTs never answered */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("clients=%d workers=%d inflight=%d roundtrips=%" PRIu64 " seconds=%.3f rt_per_s=%.0f"
           " p50_ms=%.3f p99_ms=%.3f lost=%" PRIu64 " duplicated=%" PRIu64 " failed=%" PRIu64
           " acks=%" PRIu64 " bench_cpu_s=%.2f\n",
           opt.clients, opt.workers, opt.inflight, done, secs, secs > 0 ? (double)done / secs : 0,
           p50, p99, lost, dup, failed, acks, cpu);
    if (answered != done + failed + dup)
        fprintf(stderr,
                "norfab_bench: the workers answered %" PRIu64 " POSTs, the clients got %" PRIu64
                "\n",
                answered, done + failed + dup);
    if (unknown)
        fprintf(stderr, "norfab_bench: %" PRIu64 " messages for no POST of this run\n", unknown);
    if (disc)
        fprintf(stderr, "norfab_bench: the broker disconnected workers %" PRIu64 " times\n", disc);
    if (timed_out)
        fprintf(stderr,
                "norfab_bench: no progress for %d s: %" PRIu64 " POSTs unanswered, %" PRIu64
                " never sent\n",
                opt.timeout_s, lost, opt.roundtrips - sent);
    return setup_failed || timed_out || done != opt.roundtrips || lost || dup || failed || unknown
               ? 1
               : 0;
}

/* ---- the relay ---- */

struct relay_worker {
    uint8_t id[MAX_ID];
    size_t id_len;
    size_t service; /* index in relay.services */
};

struct relay_service {
    char name[MAX_ID + 1];
    size_t len;
    size_t next; /* round robin over its workers */
};

/* The relay's whole state: few workers and services, so arrays. */
static struct {
    struct relay_worker *workers;
    size_t nworkers, cap_workers;
    struct relay_service *services;
    size_t nservices, cap_services;
    uint64_t dropped;
} relay;

/* a, of *cap elements of size sz, grown to hold one more than n. */
static void *
grow(void *a, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return a;
    *cap = *cap ? *cap * 2 : 16;
    a = realloc(a, *cap * sz);
    if (a == NULL) {
        perror("norfab_bench: relay");
        exit(1);
    }
    return a;
}

static struct relay_worker *
relay_find_worker(zmq_msg_t *id)
{
    for (size_t i = 0; i < relay.nworkers; i++)
        if (relay.workers[i].id_len == zmq_msg_size(id) &&
            memcmp(relay.workers[i].id, zmq_msg_data(id), zmq_msg_size(id)) == 0)
            return &relay.workers[i];
    return NULL;
}

/* The index of service m's text, added when add is set; -1 if not found. */
static long
relay_service(zmq_msg_t *m, bool add)
{
    size_t n = zmq_msg_size(m);
    for (size_t i = 0; i < relay.nservices; i++)
        if (relay.services[i].len == n && memcmp(relay.services[i].name, zmq_msg_data(m), n) == 0)
            return (long)i;
    if (!add || n > MAX_ID)
        return -1;
    relay.services =
        grow(relay.services, &relay.cap_services, relay.nservices, sizeof *relay.services);
    struct relay_service *s = &relay.services[relay.nservices];
    memcpy(s->name, zmq_msg_data(m), n);
    s->len = n;
    s->next = 0;
    return (long)relay.nservices++;
}

/* READY from f (id in frame 0, service in frame 4): the worker serves it. */
static void
relay_ready(struct frames *f)
{
    long svc = relay_service(&f->m[4], true);
    if (svc < 0 || zmq_msg_size(&f->m[0]) > MAX_ID)
        return;
    struct relay_worker *w = relay_find_worker(&f->m[0]);
    if (w == NULL) {
        relay.workers =
            grow(relay.workers, &relay.cap_workers, relay.nworkers, sizeof *relay.workers);
        w = &relay.workers[relay.nworkers++];
        w->id_len = zmq_msg_size(&f->m[0]);
        memcpy(w->id, zmq_msg_data(&f->m[0]), w->id_len);
    }
    w->service = (size_t)svc;
}

static void
relay_forget(struct relay_worker *w)
{
    *w = relay.workers[--relay.nworkers];
}

/* POST f ([client, "", NFPC01, 0x04, service, target, uuid, body]) to the
 * service's next worker in turn: [worker, "", NFPB01, 0x04, client, "",
 * uuid, body].  Dropped when the service has no worker. */
static void
relay_post(void *r, struct frames *f)
{
    long svc = relay_service(&f->m[4], false);
    struct relay_worker *w = NULL;
    if (svc >= 0) {
        struct relay_service *s = &relay.services[svc];
        for (size_t k = 0; k < relay.nworkers && w == NULL; k++) {
            struct relay_worker *c = &relay.workers[(s->next + k) % relay.nworkers];
            if (c->service == (size_t)svc) {
                w = c;
                s->next = (s->next + k + 1) % relay.nworkers;
            }
        }
    }
    if (w == NULL) {
        if (relay.dropped++ == 0)
            fprintf(stderr, "norfab_bench: relay: a POST for a service with no worker: dropped\n");
        return;
    }
    static const char *const head[] = {"", HDR_BROKER, CMD_POST};
    zmq_send(r, w->id, w->id_len, ZMQ_SNDMORE);
    send_strs(r, head, WQ_ARRAY_LEN(head), true);
    send_frame(r, f, 0, true);
    send_str(r, "", ZMQ_SNDMORE);
    send_frame(r, f, 6, true);
    send_frame(r, f, 7, false);
}

/* RESPONSE f ([worker, "", NFPW01, 0x05, client, "", uuid, status, body])
 * to its client: [client, "", NFPB01, 0x05, service, uuid, status, body]. */
static void
relay_response(void *r, struct frames *f, const struct relay_worker *w)
{
    static const char *const head[] = {"", HDR_BROKER, CMD_RESP};
    const struct relay_service *s = &relay.services[w->service];
    send_frame(r, f, 4, true);
    send_strs(r, head, WQ_ARRAY_LEN(head), true);
    zmq_send(r, s->name, s->len, ZMQ_SNDMORE);
    send_frame(r, f, 6, true);
    send_frame(r, f, 7, true);
    send_frame(r, f, 8, false);
}

/* --relay: route NFP between clients and workers until killed. */
static int
relay_main(void)
{
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    char addr[300], bound[300];
    size_t len = sizeof bound;
    snprintf(addr, sizeof addr, "tcp://%s:%d", opt.host, opt.relay_port);
    if (r == NULL || zmq_bind(r, addr) != 0 ||
        zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, bound, &len) != 0) {
        fprintf(stderr, "norfab_bench: relay: %s: %s\n", addr, zmq_strerror(zmq_errno()));
        return 1;
    }
    printf("norfab_bench relay listening on %s\n", strncmp(bound, "tcp://", 6) ? bound : bound + 6);
    fflush(stdout);
    for (;;) {
        struct frames f;
        if (frames_recv(r, &f, 0) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            fprintf(stderr, "norfab_bench: relay: %s\n", zmq_strerror(zmq_errno()));
            return 1;
        }
        if (f.n >= 4 && zmq_msg_size(&f.m[1]) == 0) {
            struct relay_worker *w;
            if (frame_is(&f, 2, HDR_CLIENT) && frame_is(&f, 3, CMD_POST) && f.n >= 8 &&
                frame_is(&f, 5, "any"))
                relay_post(r, &f);
            else if (!frame_is(&f, 2, HDR_WORKER))
                ; /* anything else from a client: not the relay's business */
            else if (frame_is(&f, 3, CMD_READY) && f.n >= 5)
                relay_ready(&f);
            else if ((w = relay_find_worker(&f.m[0])) == NULL)
                ; /* not registered */
            else if (frame_is(&f, 3, CMD_RESP) && f.n >= 9)
                relay_response(r, &f, w);
            else if (frame_is(&f, 3, CMD_DISC))
                relay_forget(w);
            /* KEEPALIVE: ignored */
        }
        frames_close(&f);
    }
}

/* ---- the command line ---- */

static _Noreturn void
usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: norfab_bench [--host HOST] [--port PORT] [-c CLIENTS] [-w WORKERS]\n"
            "                    [--inflight N] [-n ROUNDTRIPS] [--service NAME] [--timeout S]\n"
            "       norfab_bench [--host HOST] --relay PORT\n"
            "  --port PORT      the broker (default 5555) on HOST (default 127.0.0.1)\n"
            "  -c CLIENTS       client threads (default 4)\n"
            "  -w WORKERS       worker threads (default 8)\n"
            "  --inflight N     POSTs outstanding per client (default 1)\n"
            "  -n ROUNDTRIPS    in all (default 50000)\n"
            "  --service NAME   the workers' service (default bench)\n"
            "  --timeout S      give up after S seconds without a round trip (default 10)\n"
            "  --relay PORT     be a plain ROUTER relay on HOST:PORT instead, until killed\n");
    exit(status);
}

/* The number in s, between lo and hi, or a usage error. */
static long long
number(const char *what, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "norfab_bench: %s: %s is not a number from %lld to %lld\n", what, s, lo,
                hi);
        exit(EXIT_USAGE);
    }
    return v;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'H'},     {"port", required_argument, NULL, 'p'},
        {"inflight", required_argument, NULL, 'P'}, {"service", required_argument, NULL, 's'},
        {"relay", required_argument, NULL, 'r'},    {"timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "c:w:n:p:P:h", longopts, NULL)) != -1) {
        switch (o) {
        case 'H':
            opt.host = optarg;
            break;
        case 'p':
            opt.port = (int)number("--port", optarg, 1, 65535);
            break;
        case 'c':
            opt.clients = (int)number("-c", optarg, 1, 1000);
            break;
        case 'w':
            opt.workers = (int)number("-w", optarg, 1, 1000);
            break;
        case 'P':
            opt.inflight = (int)number("--inflight", optarg, 1, 100000);
            break;
        case 'n':
            opt.roundtrips = (uint64_t)number("-n", optarg, 1, 100000000);
            break;
        case 's':
            opt.service = optarg;
            break;
        case 'r':
            opt.relay_port = (int)number("--relay", optarg, 0, 65535);
            break;
        case 't':
            opt.timeout_s = (int)number("--timeout", optarg, 1, 86400);
            break;
        case 'h':
            usage(0);
        default:
            usage(EXIT_USAGE);
        }
    }
    if (optind != argc)
        usage(EXIT_USAGE);
    if (strlen(opt.service) > MAX_ID) {
        fprintf(stderr, "norfab_bench: --service: longer than %d bytes\n", MAX_ID);
        return EXIT_USAGE;
    }
    ctx = zmq_ctx_new();
    if (ctx == NULL) {
        fprintf(stderr, "norfab_bench: zmq_ctx_new: %s\n", zmq_strerror(zmq_errno()));
        return 1;
    }
    if (opt.relay_port >= 0)
        return relay_main();
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%d", opt.host, opt.port);
    int rc = bench();
    zmq_ctx_term(ctx);
    return rc;
}
