/* nfp_broker.c - the NFP broker's routing and heartbeats (nfp_broker.h). */
#include "lib/wq.h"
#include "norfab/nfp_broker.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "engine/workers.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "norfab/nfp_internal.h"

/* The workers a request resolves to fit on the stack up to this many (a
 * target names each of its service's workers once at most). */
#define NFP_TARGET_LOCAL 16

static void
nfp_service_key(const void *elem, const void **key, size_t *len)
{
    const struct nfp_service *s = elem;
    *key = s->name;
    *len = s->len;
}

static void
nfp_worker_key(const void *elem, const void **key, size_t *len)
{
    const struct nfp_worker *w = elem;
    *key = w->name;
    *len = w->len;
}

static void
nfp_client_key(const void *elem, const void **key, size_t *len)
{
    const struct nfp_client *c = elem;
    *key = c->name;
    *len = c->len;
}

struct nfp_broker *
nfp_broker_new(const struct nfp_broker_config *cfg, struct core *core, nfp_send_fn send, void *arg,
               const uint64_t *now_ms)
{
    struct nfp_broker *b = wq_calloc(1, sizeof *b);
    b->cfg = *cfg;
    b->send = send;
    b->send_arg = arg;
    b->now_ms = now_ms;
    b->started_ms = cfg->started_ms;
    b->workers = registry_new(nfp_worker_key);
    b->services = registry_new(nfp_service_key);
    b->clients = registry_new(nfp_client_key);
    list_init(&b->worker_list);
    list_init(&b->client_list);
    nfp_jobs_open(b, core);
    return b;
}

static void
nfp_service_free(void *elem, void *arg)
{
    (void)arg;
    struct nfp_service *s = elem;
    wq_free(s->workers);
    wq_free(s);
}

void
nfp_broker_free(struct nfp_broker *b)
{
    if (b == NULL)
        return;
    nfp_jobs_close(b);
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->worker_list)
    {
        wq_free(list_item(n, struct nfp_worker, link));
    }
    list_each_safe(n, tmp, &b->client_list)
    {
        wq_free(list_item(n, struct nfp_client, link));
    }
    registry_foreach(b->services, nfp_service_free, NULL);
    registry_free(b->services);
    registry_free(b->workers);
    registry_free(b->clients);
    wq_free(b);
}

void
nfp_broker_counts(const struct nfp_broker *b, struct nfp_broker_counts *out)
{
    *out = b->counts;
    out->workers = registry_count(b->workers);
    out->services = registry_count(b->services);
    out->clients = registry_count(b->clients);
}

/* ---- sending ---- */

struct nfp_frame
nfp_str(const char *s)
{
    return (struct nfp_frame){s, strlen(s)};
}

/* Send a broker command to worker w: "", NFPB01, cmd, then extra. */
static void
nfp_to_worker(struct nfp_broker *b, const struct nfp_worker *w, uint8_t cmd,
              const struct nfp_frame *extra, size_t nextra)
{
    char cbuf[4];
    struct nfp_frame f[8] = {
        {w->name, w->len}, {"", 0}, nfp_str(NFP_BROKER), nfp_cmd_frame(cmd, w->ascii, cbuf)};
    size_t n = 4;
    for (size_t i = 0; i < nextra && n < WQ_ARRAY_LEN(f); i++)
        f[n++] = extra[i];
    b->send(b->send_arg, f, n, cmd == NFP_KEEPALIVE);
}

void
nfp_to_client(struct nfp_broker *b, struct nfp_frame client, uint8_t cmd, struct nfp_frame service,
              struct nfp_frame uuid, const char *status, struct nfp_frame body)
{
    /* in the form the client used last; as NORFAB writes commands for one
     * not seen lately */
    const struct nfp_client *c = registry_find(b->clients, client.p, client.n);
    char cbuf[4];
    struct nfp_frame f[] = {client,
                            {"", 0},
                            nfp_str(NFP_BROKER),
                            nfp_cmd_frame(cmd, c != NULL ? c->ascii : true, cbuf),
                            service,
                            uuid,
                            nfp_str(status),
                            body};
    b->send(b->send_arg, f, WQ_ARRAY_LEN(f), false);
}

void
nfp_json_to_client(struct nfp_broker *b, struct nfp_frame client, struct nfp_frame service,
                   struct nfp_frame uuid, const char *status, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    if (text == NULL)
        wq_panic(__FILE__, __LINE__, "json_dumps failed");
    nfp_to_client(b, client, NFP_RESPONSE, service, uuid, status, nfp_str(text));
    free(text);
}

json_t *
nfp_json_frame(struct nfp_frame f)
{
    json_t *s = json_stringn(f.p, f.n); /* NULL: not UTF-8 */
    return s != NULL ? s : json_string("");
}

/* ---- peers ---- */

bool
nfp_worker_dead(const struct nfp_broker *b, const struct nfp_worker *w, uint64_t now)
{
    return now > w->seen_ms + b->cfg.liveness * b->cfg.keepalive_ms;
}

/* Take w out of its service's turn. */
static void
nfp_service_leave(struct nfp_service *s, struct nfp_worker *w)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->workers[i] == w) {
            memmove(&s->workers[i], &s->workers[i + 1], (s->n - i - 1) * sizeof *s->workers);
            s->n--;
            if (s->next > i)
                s->next--;
            break;
        }
    }
}

json_t *
nfp_json_answer(json_t *workers, struct nfp_frame uuid, struct nfp_frame target, const char *status,
                struct nfp_frame service, const char *why)
{
    json_t *j = json_object();
    json_object_set_new(j, "workers", workers != NULL ? workers : json_null());
    json_object_set_new(j, "uuid", nfp_json_frame(uuid));
    json_object_set_new(j, "target", nfp_json_frame(target));
    json_object_set_new(j, "status", json_string(status));
    json_object_set_new(j, "service", nfp_json_frame(service));
    if (why != NULL) {
        json_t *errors = json_array();
        json_array_append_new(errors, json_string(why));
        json_object_set_new(j, "errors", errors);
    }
    return j;
}

void
nfp_forward(struct nfp_broker *b, const struct nfp_worker *w, uint8_t cmd, struct nfp_frame client,
            struct nfp_frame uuid, struct nfp_frame body)
{
    struct nfp_frame extra[] = {client, {"", 0}, uuid, body};
    nfp_to_worker(b, w, cmd, extra, WQ_ARRAY_LEN(extra));
}

struct nfp_worker *
nfp_service_next(struct nfp_service *s)
{
    if (s->n == 0)
        return NULL;
    if (s->next >= s->n) /* next is the index of the worker whose turn it is */
        s->next = 0;
    return s->workers[s->next++];
}

void
nfp_worker_drop(struct nfp_broker *b, struct nfp_worker *w, bool tell)
{
    if (tell) {
        struct nfp_frame svc = w->service != NULL
                                   ? (struct nfp_frame){w->service->name, w->service->len}
                                   : (struct nfp_frame){"", 0};
        nfp_to_worker(b, w, NFP_DISCONNECT, &svc, 1);
        b->counts.disconnects++;
    }
    if (w->service != NULL) {
        nfp_service_leave(w->service, w);
        nfp_jobs_worker_gone(b, w);
    }
    if (w->reg != NULL)
        workers_detach(b->core->workers, w->reg);
    if (w->service != NULL)
        nfp_service_release(b, w->service);
    registry_remove(b->workers, w->name, w->len);
    list_unlink(&w->link);
    wq_free(w);
}

/* w, ready, joins the engine's worker registry (inspect workers) under
 * its name, with its service as its label. */
static void
nfp_worker_register(struct nfp_broker *b, struct nfp_worker *w, uint64_t now)
{
    if (!workers_valid_id(w->name, w->len))
        return;
    json_t *labels = json_array();
    json_array_append_new(labels,
                          nfp_json_frame((struct nfp_frame){w->service->name, w->service->len}));
    char *text = json_dumps(labels, JSON_COMPACT);
    json_decref(labels);
    w->reg = workers_attach(b->core->workers, w->name, w->len, "", 0, text != NULL ? text : "[]",
                            WORKER_NORFAB, "", now);
    snprintf(w->reg->last_command, sizeof w->reg->last_command, "READY");
    free(text);
}

void
nfp_service_release(struct nfp_broker *b, struct nfp_service *s)
{
    if (s->n > 0 || s->posts > 0)
        return;
    registry_remove(b->services, s->name, s->len);
    wq_free(s->workers);
    wq_free(s);
}

struct nfp_service *
nfp_service(struct nfp_broker *b, struct nfp_frame f)
{
    struct nfp_service *s = registry_find(b->services, f.p, f.n);
    if (s == NULL) {
        s = wq_calloc(1, sizeof *s + f.n + 1);
        memcpy(s->name, f.p, f.n);
        s->len = f.n;
        list_init(&s->waiting);
        registry_insert(b->services, s);
    }
    return s;
}

/* The client of m, recorded (or seen again): the most recently seen last. */
static struct nfp_client *
nfp_client(struct nfp_broker *b, const struct nfp_msg *m, uint64_t now)
{
    struct nfp_client *c = registry_find(b->clients, m->peer.p, m->peer.n);
    if (c == NULL) {
        c = wq_calloc(1, sizeof *c + m->peer.n + 1);
        memcpy(c->name, m->peer.p, m->peer.n);
        c->len = m->peer.n;
        c->first_ms = now;
        registry_insert(b->clients, c);
    } else {
        list_unlink(&c->link);
    }
    list_push_back(&b->client_list, &c->link);
    c->ascii = m->ascii;
    c->seen_ms = now;
    return c;
}

/* ---- targets ---- */

/* Add worker w to the list (once). */
static void
nfp_target_add(struct nfp_worker **out, size_t *n, struct nfp_worker *w)
{
    for (size_t i = 0; i < *n; i++)
        if (out[i] == w)
            return;
    out[(*n)++] = w; /* each once: out has room for all of the service's */
}

/* The worker of service s named name[0..len), or NULL. */
static struct nfp_worker *
nfp_service_worker(const struct nfp_broker *b, const struct nfp_service *s, const char *name,
                   size_t len)
{
    struct nfp_worker *w = registry_find(b->workers, name, len);
    return w != NULL && w->service == s ? w : NULL;
}

/* The workers that target t names in service s, into out (room for s->n:
 * each at most once; *n of them);
 * the names that are none of its workers are counted in *unknown.
 * "any": the next one in turn; "all": each; otherwise a name, names
 * separated by commas, or a JSON list of names. */
static void
nfp_resolve(const struct nfp_broker *b, struct nfp_service *s, struct nfp_frame t,
            struct nfp_worker **out, size_t *n, size_t *unknown)
{
    *n = *unknown = 0;
    if (t.n == 3 && memcmp(t.p, "any", 3) == 0) {
        struct nfp_worker *w = nfp_service_next(s);
        if (w != NULL)
            out[(*n)++] = w;
        return;
    }
    if (t.n == 3 && memcmp(t.p, "all", 3) == 0) {
        for (size_t i = 0; i < s->n; i++)
            out[(*n)++] = s->workers[i];
        return;
    }
    if (t.n > 0 && t.p[0] == '[') {
        json_t *list = json_loadb(t.p, t.n, 0, NULL);
        size_t i;
        json_t *v;
        if (!json_is_array(list)) {
            (*unknown)++;
        } else {
            json_array_foreach(list, i, v)
            {
                struct nfp_worker *w =
                    json_is_string(v)
                        ? nfp_service_worker(b, s, json_string_value(v), json_string_length(v))
                        : NULL;
                if (w != NULL)
                    nfp_target_add(out, n, w);
                else
                    (*unknown)++;
            }
        }
        json_decref(list);
        return;
    }
    for (const char *p = t.p, *end = t.p + t.n; p <= end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end;
        struct nfp_worker *w = nfp_service_worker(b, s, p, (size_t)(stop - p));
        if (w != NULL)
            nfp_target_add(out, n, w);
        else
            (*unknown)++;
        p = stop + 1;
    }
}

/* ---- client requests ---- */

/* Relay client c's request m (GET, DELETE, PUT) to workers[0..n), a GET
 * after a 202 naming them, as NORFAB's broker does. */
static void
nfp_dispatch(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
             struct nfp_service *s, struct nfp_worker **workers, size_t n)
{
    if (m->cmd == NFP_GET) {
        json_t *names = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(
                names, nfp_json_frame((struct nfp_frame){workers[i]->name, workers[i]->len}));
        nfp_json_to_client(
            b, m->peer, m->args[0], m->args[2], "202",
            nfp_json_answer(names, m->args[2], m->args[1], "DISPATCHED", m->args[0], NULL));
    }
    for (size_t i = 0; i < n; i++)
        nfp_forward(b, workers[i], m->cmd, (struct nfp_frame){c->name, c->len}, m->args[2],
                    m->args[3]);
    s->requests++;
}

/* Answer request m with 400: no worker of the service is named by its
 * target (or it has none). */
static void
nfp_no_workers(struct nfp_broker *b, const struct nfp_msg *m, size_t unknown)
{
    char why[160];
    snprintf(why, sizeof why,
             unknown > 0 ? "%zu of the workers the target names are not workers of the service"
                         : "the service has no worker",
             unknown);
    nfp_json_to_client(b, m->peer, m->args[0], m->args[2], "400",
                       nfp_json_answer(NULL, m->args[2], m->args[1], "FAILED", m->args[0], why));
}

/* Is f 1 to max bytes of UTF-8 (a service's name, a uuid: they are
 * echoed in JSON answers)? */
static bool
nfp_text(struct nfp_frame f, size_t max)
{
    if (f.n == 0 || f.n > max)
        return false;
    json_t *s = json_stringn(f.p, f.n);
    json_decref(s);
    return s != NULL;
}

/* Does target t wait for a worker when there is none ("any", "all")? */
static bool
nfp_target_waits(struct nfp_frame t)
{
    return t.n == 3 && (memcmp(t.p, "any", 3) == 0 || memcmp(t.p, "all", 3) == 0);
}

/* Route client c's request m to service s. */
static void
nfp_route(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
          struct nfp_service *s)
{
    if (m->cmd == NFP_GET) {
        nfp_jobs_get(b, m, c, s);
        return;
    }
    if (m->cmd == NFP_DELETE && nfp_jobs_delete(b, m, c))
        return;
    struct nfp_worker *local[NFP_TARGET_LOCAL];
    struct nfp_worker **workers =
        s->n <= NFP_TARGET_LOCAL ? local : wq_malloc(s->n * sizeof *workers);
    size_t n, unknown;
    nfp_resolve(b, s, m->args[1], workers, &n, &unknown);
    bool waits = m->cmd == NFP_POST && unknown == 0 && nfp_target_waits(m->args[1]);
    /* a POST goes to every worker its target names or nowhere ("any" and
     * "all" wait for one); a DELETE or PUT to those of them still there */
    if ((n == 0 && !waits) || (unknown > 0 && m->cmd == NFP_POST))
        nfp_no_workers(b, m, unknown);
    else if (m->cmd == NFP_POST)
        nfp_jobs_post(b, m, c, s, workers, n);
    else
        nfp_dispatch(b, m, c, s, workers, n);
    if (workers != local)
        wq_free(workers);
}

static void
nfp_from_client(struct nfp_broker *b, const struct nfp_msg *m, uint64_t now)
{
    struct nfp_client *c = nfp_client(b, m, now);
    switch (m->cmd) {
    case NFP_OPEN: {
        char cbuf[4];
        struct nfp_frame f[] = {{c->name, c->len},
                                {"", 0},
                                nfp_str(NFP_BROKER),
                                nfp_cmd_frame(NFP_OPEN, c->ascii, cbuf),
                                {"", 0}};
        b->send(b->send_arg, f, WQ_ARRAY_LEN(f), false);
        return;
    }
    case NFP_DISCONNECT:
        registry_remove(b->clients, c->name, c->len);
        list_unlink(&c->link);
        wq_free(c);
        return;
    default:
        break;
    }
    c->requests++;
    b->counts.requests++;
    struct nfp_frame svc = m->args[0];
    if (svc.n == strlen(NFP_MMI_SERVICE) && memcmp(svc.p, NFP_MMI_SERVICE, svc.n) == 0) {
        nfp_mmi(b, m, c);
        return;
    }
    if (!nfp_text(svc, WQ_MAX_NAME) || !nfp_text(m->args[2], NFP_UUID_MAX)) {
        nfp_json_to_client(b, m->peer, m->args[0], m->args[2], "400",
                           nfp_json_answer(NULL, m->args[2], m->args[1], "FAILED", m->args[0],
                                           "the service name or the uuid is not 1 to 255 "
                                           "bytes of UTF-8"));
        return;
    }
    struct nfp_service *s = nfp_service(b, svc);
    s->posts++; /* held while the request is handled (a POST forgotten may release it) */
    nfp_route(b, m, c, s);
    s->posts--;
    nfp_service_release(b, s);
}

/* ---- worker messages ---- */

static void
nfp_from_worker(struct nfp_broker *b, const struct nfp_msg *m, uint64_t now)
{
    struct nfp_worker *w = registry_find(b->workers, m->peer.p, m->peer.n);
    if (m->cmd == NFP_DISCONNECT) {
        if (w != NULL)
            nfp_worker_drop(b, w, false);
        return;
    }
    if (m->cmd == NFP_OPEN) {
        char cbuf[4];
        struct nfp_frame f[] = {m->peer,
                                {"", 0},
                                nfp_str(NFP_BROKER),
                                nfp_cmd_frame(NFP_OPEN, m->ascii, cbuf),
                                {"", 0}};
        b->send(b->send_arg, f, WQ_ARRAY_LEN(f), false);
        return;
    }
    if (w == NULL) {
        w = wq_calloc(1, sizeof *w + m->peer.n + 1);
        memcpy(w->name, m->peer.p, m->peer.n);
        w->len = m->peer.n;
        registry_insert(b->workers, w);
        list_push_back(&b->worker_list, &w->link);
    }
    w->ascii = m->ascii;
    w->seen_ms = now;
    if (w->reg != NULL) {
        w->reg->last_beat_ms = now;
        snprintf(w->reg->last_command, sizeof w->reg->last_command, "%s", nfp_cmd_name(m->cmd));
    }
    if (m->cmd == NFP_READY && w->service == NULL) {
        w->service = nfp_service(b, m->args[0]);
        w->ready_ms = now;
        struct nfp_service *s = w->service;
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 4;
            s->workers = wq_realloc(s->workers, s->cap * sizeof *s->workers);
        }
        s->workers[s->n++] = w;
        nfp_worker_register(b, w, now);
        wq_log(LOG_LVL_INFO, "NORFAB worker ready worker=%.*s service=%.*s",
               (int)WQ_MIN(w->len, 128), w->name, (int)WQ_MIN(s->len, 128), s->name);
        nfp_jobs_ready(b, s);
        return;
    }
    if (w->service == NULL || m->cmd == NFP_READY) {
        /* valid but unexpected: a second READY, anything but READY first */
        wq_log(LOG_LVL_INFO, "NORFAB worker sent %s %s: disconnecting it worker=%.*s",
               nfp_cmd_name(m->cmd), w->service != NULL ? "again" : "before READY",
               (int)WQ_MIN(w->len, 128), w->name);
        nfp_worker_drop(b, w, true);
        return;
    }
    if (m->cmd == NFP_KEEPALIVE) {
        w->keepalives_rx++;
        return;
    }
    /* RESPONSE, EVENT, STREAM: to the client, verbatim, under the
     * worker's service */
    struct nfp_client *c = registry_find(b->clients, m->args[0].p, m->args[0].n);
    char cbuf[4];
    struct nfp_frame f[64] = {m->args[0],
                              {"", 0},
                              nfp_str(NFP_BROKER),
                              nfp_cmd_frame(m->cmd, c != NULL ? c->ascii : true, cbuf),
                              {w->service->name, w->service->len}};
    size_t n = 5;
    for (size_t i = 2; i < m->nargs && n < WQ_ARRAY_LEN(f); i++)
        f[n++] = m->args[i];
    b->counts.responses++;
    if (m->cmd == NFP_RESPONSE) /* first: the answer waits for its record */
        nfp_jobs_answered(b, w, m);
    b->send(b->send_arg, f, n, false);
}

void
nfp_broker_handle(struct nfp_broker *b, const struct nfp_frame *frames, size_t n)
{
    struct nfp_msg m;
    enum nfp_check check = nfp_parse(frames, n, &m);
    if (check != NFP_VALID) {
        b->counts.dropped++;
        wq_log(LOG_LVL_DEBUG, "NORFAB message dropped frames=%zu why=\"%s\"", n,
               nfp_check_text(check));
        return;
    }
    if (m.role == NFP_FROM_CLIENT)
        nfp_from_client(b, &m, *b->now_ms);
    else
        nfp_from_worker(b, &m, *b->now_ms);
}

void
nfp_broker_replayed(struct nfp_broker *b)
{
    nfp_jobs_replayed(b);
}

void
nfp_broker_tick(struct nfp_broker *b)
{
    uint64_t now = *b->now_ms;
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->worker_list)
    {
        struct nfp_worker *w = list_item(n, struct nfp_worker, link);
        if (nfp_worker_dead(b, w, now)) {
            wq_log(LOG_LVL_INFO, "NORFAB worker dead: no word for %llu ms worker=%.*s",
                   (unsigned long long)(now - w->seen_ms), (int)WQ_MIN(w->len, 128), w->name);
            b->counts.dead++;
            nfp_worker_drop(b, w, false);
            continue;
        }
        if (w->service == NULL)
            continue;
        struct nfp_frame svc = {w->service->name, w->service->len};
        nfp_to_worker(b, w, NFP_KEEPALIVE, &svc, 1);
        w->keepalives_tx++;
    }
    /* clients send no heartbeat: forget those unseen for a liveness span
     * of hours (show_clients lists the others) */
    uint64_t keep_ms = 3600 * 1000;
    list_each_safe(n, tmp, &b->client_list)
    {
        struct nfp_client *c = list_item(n, struct nfp_client, link);
        if (now < c->seen_ms + keep_ms)
            break; /* the rest were seen later */
        registry_remove(b->clients, c->name, c->len);
        list_unlink(&c->link);
        wq_free(c);
    }
    nfp_jobs_tick(b);
}
