/* nfp_jobs.c - the POSTs NORFAB's clients make, as jobs of the engine
 * (nfp_internal.h): queued while their service has no worker, re-sent
 * when the worker they went to dies without a word, their workers' final
 * answers kept for the GETs that come after that worker is gone. */
#include "lib/wq.h"
#include "norfab/nfp_internal.h"

#include <string.h>

#include "engine/core.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/registry.h"
#include "store/cmdlog_codec.h"

static void
nfp_post_key(const void *elem, const void **key, size_t *len)
{
    const struct nfp_post *p = elem;
    *key = p->uuid;
    *len = p->uuid_len;
}

static struct nfp_frame
nfp_frame_of(const char *p, size_t n)
{
    return (struct nfp_frame){p, n};
}

/* The engine's job of p, NULL once it has ended. */
static struct job *
nfp_post_job(const struct nfp_broker *b, const struct nfp_post *p)
{
    const struct job_key k = {(const uint8_t *)p->uuid, p->uuid_len, b->space};
    return core_find_key(b->core, &k);
}

/* Count bytes more (or fewer) against -max-memory. */
static void
nfp_post_count(struct nfp_broker *b, struct nfp_post *p, int64_t bytes)
{
    p->bytes += (uint64_t)bytes;
    b->core->data_bytes += (uint64_t)bytes;
}

void
nfp_post_free(struct nfp_broker *b, struct nfp_post *p)
{
    if (b->core != NULL) { /* NULL: the engine is gone first (nfp_jobs_close) */
        struct job *j = nfp_post_job(b, p);
        if (j != NULL)
            core_delete_job(b->core, j);
        b->core->data_bytes -= p->bytes;
    }
    for (size_t i = 0; i < p->ndest; i++) {
        wq_free(p->dests[i].name);
        wq_free(p->dests[i].result);
    }
    wq_free(p->dests);
    wq_free(p->client);
    wq_free(p->target);
    wq_free(p->body);
    list_unlink(&p->link);
    if (registry_find(b->posts, p->uuid, p->uuid_len) == p)
        registry_remove(b->posts, p->uuid, p->uuid_len);
    if (p->service != NULL) {
        p->service->posts--;
        if (b->core != NULL) /* not while the services are freed */
            nfp_service_release(b, p->service);
    }
    wq_free(p);
}

/* Forget p for good: in the log (it and its kept answers), then here. */
static void
nfp_post_forget(struct nfp_broker *b, struct nfp_post *p)
{
    for (size_t i = 0; i < p->ndest; i++)
        if (p->dests[i].result != NULL)
            nfp_log_gone(b, p, &p->dests[i]);
    nfp_log_gone(b, p, NULL);
    nfp_post_free(b, p);
}

/* The engine job's payload: the POST's body. */
static struct nfp_frame
nfp_post_body(const struct nfp_broker *b, const struct nfp_post *p)
{
    const struct job *j = nfp_post_job(b, p);
    return j != NULL ? nfp_frame_of(j->payload, j->payload_len) : nfp_frame_of("", 0);
}

/* Log p's state as it is now. */
static void
nfp_post_logged(struct nfp_broker *b, const struct nfp_post *p)
{
    nfp_log_post(b, p, nfp_post_body(b, p));
}

/* core_space_ops.ttr_expired: a job stays with its workers for as long as
 * they live (the heartbeats say): the engine's longest reservation starts
 * again. */
static void
nfp_ttr_expired(void *arg, struct core *c, struct job *j)
{
    struct nfp_broker *b = arg;
    core_job_retry_at(c, j, (int64_t)*b->now_ms);
    core_job_take(c, j, *b->now_ms);
}

static const struct core_space_ops nfp_space_ops = {
    .ttr_expired = nfp_ttr_expired,
    .replay = nfp_jobs_replay,
};

void
nfp_jobs_open(struct nfp_broker *b, struct core *core)
{
    b->core = core;
    b->space = core_space_open(core, "norfab", &nfp_space_ops, b, CORE_SPACE_FIFO, CMDLOG_N_POST,
                               CMDLOG_N_MAX);
    b->posts = registry_new(nfp_post_key);
    list_init(&b->sent);
    list_init(&b->ended);
}

struct nfp_collect {
    struct nfp_post **posts;
    size_t n;
};

static void
nfp_collect_cb(void *elem, void *arg)
{
    struct nfp_collect *c = arg;
    c->posts[c->n++] = elem;
}

/* Every post, the longest in its state first. */
static struct nfp_post **
nfp_posts_sorted(struct nfp_broker *b, size_t *n)
{
    struct nfp_collect c = {wq_malloc((registry_count(b->posts) + 1) * sizeof *c.posts), 0};
    registry_foreach(b->posts, nfp_collect_cb, &c);
    for (size_t i = 1; i < c.n; i++) { /* insertion sort: posts read back are few */
        struct nfp_post *p = c.posts[i];
        size_t k = i;
        for (; k > 0 && c.posts[k - 1]->since_ms > p->since_ms; k--)
            c.posts[k] = c.posts[k - 1];
        c.posts[k] = p;
    }
    *n = c.n;
    return c.posts;
}

/* Free the posts queued in service elem (registry_foreach). */
static void
nfp_service_free_waiting(void *elem, void *arg)
{
    struct nfp_service *s = elem;
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->waiting)
    {
        nfp_post_free(arg, list_item(n, struct nfp_post, link));
    }
}

void
nfp_jobs_close(struct nfp_broker *b)
{
    b->core = NULL; /* the server frees the engine before its front-ends */
    struct list *lists[] = {&b->sent, &b->ended};
    for (size_t i = 0; i < WQ_ARRAY_LEN(lists); i++) {
        struct list *n, *tmp;
        list_each_safe(n, tmp, lists[i])
        {
            nfp_post_free(b, list_item(n, struct nfp_post, link));
        }
    }
    registry_foreach(b->services, nfp_service_free_waiting, b);
    /* read back but never made jobs (the server stopped before) */
    size_t n;
    struct nfp_post **posts = nfp_posts_sorted(b, &n);
    for (size_t i = 0; i < n; i++)
        nfp_post_free(b, posts[i]);
    wq_free(posts);
    registry_free(b->posts);
}

/* ---- sending a POST ---- */

/* The names of p's workers, as JSON. */
static json_t *
nfp_post_names(const struct nfp_post *p)
{
    json_t *names = json_array();
    for (size_t i = 0; i < p->ndest; i++)
        json_array_append_new(names,
                              nfp_json_frame(nfp_frame_of(p->dests[i].name, p->dests[i].len)));
    return names;
}

/* Tell p's client its 202: the workers p went to. */
static void
nfp_post_202(struct nfp_broker *b, const struct nfp_post *p)
{
    struct nfp_frame uuid = nfp_frame_of(p->uuid, p->uuid_len);
    struct nfp_frame svc = nfp_frame_of(p->service->name, p->service->len);
    nfp_json_to_client(b, nfp_frame_of(p->client, p->client_len), svc, uuid, "202",
                       nfp_json_answer(nfp_post_names(p), uuid,
                                       nfp_frame_of(p->target, p->target_len), "DISPATCHED", svc,
                                       NULL));
}

/* Send p to worker w (a new destination). */
static void
nfp_post_send_to(struct nfp_broker *b, struct nfp_post *p, struct nfp_dest *d,
                 const struct nfp_worker *w)
{
    d->name = wq_malloc(w->len + 1);
    memcpy(d->name, w->name, w->len);
    d->len = w->len;
    nfp_post_count(b, p, (int64_t)w->len);
    nfp_forward(b, w, NFP_POST, nfp_frame_of(p->client, p->client_len),
                nfp_frame_of(p->uuid, p->uuid_len), nfp_post_body(b, p));
}

/* p goes to workers[0..n) (n > 0): leased, its 202, then the POST to
 * each, as NORFAB's broker sends them. */
static void
nfp_post_dispatch(struct nfp_broker *b, struct nfp_post *p, struct nfp_worker **workers, size_t n)
{
    wq_free(p->dests); /* a queued POST read back has an empty one */
    p->dests = wq_calloc(n, sizeof *p->dests);
    p->ndest = n;
    nfp_post_count(b, p, (int64_t)(n * sizeof *p->dests));
    for (size_t i = 0; i < n; i++) {
        p->dests[i].name = wq_malloc(workers[i]->len + 1);
        memcpy(p->dests[i].name, workers[i]->name, workers[i]->len);
        p->dests[i].len = workers[i]->len;
        nfp_post_count(b, p, (int64_t)workers[i]->len);
    }
    struct job *j = nfp_post_job(b, p);
    if (j != NULL && j->state != JOB_LEASED)
        core_job_take(b->core, j, *b->now_ms);
    list_unlink(&p->link);
    list_push_back(&b->sent, &p->link);
    p->state = NFP_SENT;
    nfp_post_logged(b, p);
    nfp_post_202(b, p);
    struct nfp_frame body = nfp_post_body(b, p);
    for (size_t i = 0; i < n; i++)
        nfp_forward(b, workers[i], NFP_POST, nfp_frame_of(p->client, p->client_len),
                    nfp_frame_of(p->uuid, p->uuid_len), body);
    p->service->requests++;
}

/* p waits in its service's line. */
static void
nfp_post_queue(struct nfp_broker *b, struct nfp_post *p)
{
    list_unlink(&p->link);
    list_push_back(&p->service->waiting, &p->link);
    p->state = NFP_QUEUED;
    p->since_ms = *b->now_ms;
}

/* A copy of f, counted for p. */
static char *
nfp_post_copy(struct nfp_broker *b, struct nfp_post *p, struct nfp_frame f)
{
    char *c = wq_malloc(f.n + 1);
    memcpy(c, f.p, f.n);
    nfp_post_count(b, p, (int64_t)f.n);
    return c;
}

/* While the command log cannot be written, m (a change) is answered 500
 * and changes nothing: true when it was. */
static bool
nfp_refuse_readonly(struct nfp_broker *b, const struct nfp_msg *m)
{
    if (!*b->cfg.readonly)
        return false;
    nfp_json_to_client(b, m->peer, m->args[0], m->args[2], "500",
                       nfp_json_answer(NULL, m->args[2], m->args[1], "FAILED", m->args[0],
                                       "read-only: the command log cannot be written"));
    return true;
}

void
nfp_jobs_post(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
              struct nfp_service *s, struct nfp_worker **workers, size_t n)
{
    struct nfp_frame svc = m->args[0], target = m->args[1], uuid = m->args[2], body = m->args[3];
    struct nfp_post *p = registry_find(b->posts, uuid.p, uuid.n);
    if (p != NULL && p->state == NFP_SENT) {
        nfp_post_202(b, p); /* a POST again: no second copy */
        return;
    }
    if (p != NULL && p->state == NFP_QUEUED)
        return; /* its 202 comes with a worker */
    if (nfp_refuse_readonly(b, m))
        return;
    if (p != NULL)
        nfp_post_forget(b, p); /* ended: a new job under the same uuid */
    const struct job_spec js = {
        .key = {(const uint8_t *)uuid.p, uuid.n, b->space},
        .name = {svc.p, svc.n},
        .ttr = WQ_MAX_TTR_MS,
        .ttl = UINT64_MAX,
        .payload = body.p,
        .payload_len = body.n,
    };
    enum core_status st = core_add(b->core, &js, *b->now_ms);
    if (st != CORE_OK) {
        nfp_json_to_client(b, m->peer, svc, uuid, "500",
                           nfp_json_answer(NULL, uuid, target, "FAILED", svc,
                                           st == CORE_NOMEM ? "out of memory (-max-memory)"
                                                            : "the job cannot be kept"));
        return;
    }
    p = wq_calloc(1, sizeof *p + uuid.n + 1);
    memcpy(p->uuid, uuid.p, uuid.n);
    p->uuid_len = uuid.n;
    nfp_post_count(b, p, (int64_t)(sizeof *p + uuid.n));
    p->service = s;
    s->posts++;
    p->all = target.n == 3 && memcmp(target.p, "all", 3) == 0;
    p->any = target.n == 3 && memcmp(target.p, "any", 3) == 0;
    p->client = nfp_post_copy(b, p, (struct nfp_frame){c->name, c->len});
    p->client_len = c->len;
    p->target = nfp_post_copy(b, p, target);
    p->target_len = target.n;
    list_init(&p->link);
    registry_insert(b->posts, p);
    if (n > 0) {
        nfp_post_dispatch(b, p, workers, n);
    } else {
        nfp_post_queue(b, p);
        nfp_post_logged(b, p);
    }
}

void
nfp_jobs_ready(struct nfp_broker *b, struct nfp_service *s)
{
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->waiting)
    {
        struct nfp_post *p = list_item(n, struct nfp_post, link);
        struct nfp_worker *any;
        if (p->all)
            nfp_post_dispatch(b, p, s->workers, s->n);
        else if ((any = nfp_service_next(s)) != NULL)
            nfp_post_dispatch(b, p, &any, 1);
    }
}

/* ---- answers ---- */

/* The destination of p named name[0..len), NULL if none. */
static struct nfp_dest *
nfp_post_dest(struct nfp_post *p, const char *name, size_t len)
{
    for (size_t i = 0; i < p->ndest; i++)
        if (p->dests[i].len == len && memcmp(p->dests[i].name, name, len) == 0)
            return &p->dests[i];
    return NULL;
}

/* p ends: its engine job goes, its workers' answers stay for the result
 * TTL. */
static void
nfp_post_end(struct nfp_broker *b, struct nfp_post *p)
{
    struct job *j = nfp_post_job(b, p);
    if (j != NULL)
        core_delete_job(b->core, j);
    p->state = NFP_ENDED;
    p->since_ms = *b->now_ms;
    list_unlink(&p->link);
    list_push_back(&b->ended, &p->link);
    nfp_log_post(b, p, nfp_frame_of("", 0));
}

/* Are all of p's workers that owe it a final answer gone (dead, or not
 * back since a restart)?  Then nobody will answer it: it ends. */
static bool
nfp_post_orphaned(const struct nfp_broker *b, const struct nfp_post *p)
{
    for (size_t i = 0; i < p->ndest; i++) {
        const struct nfp_dest *d = &p->dests[i];
        if (!d->ended && registry_find(b->workers, d->name, d->len) != NULL)
            return false;
    }
    return true;
}

void
nfp_jobs_answered(struct nfp_broker *b, const struct nfp_worker *w, const struct nfp_msg *m)
{
    struct nfp_frame uuid = m->args[2], status = m->args[3];
    struct nfp_post *p = registry_find(b->posts, uuid.p, uuid.n);
    struct nfp_dest *d =
        p != NULL && p->state == NFP_SENT ? nfp_post_dest(p, w->name, w->len) : NULL;
    if (d == NULL)
        return;
    bool first = !d->answered;
    d->answered = true;
    bool ok = status.n >= 3 && memcmp(status.p, "200", 3) == 0;
    bool failed = status.n >= 1 && (status.p[0] == '4' || status.p[0] == '5');
    if (d->ended || (!ok && !failed)) {
        if (first) /* it has the job now: it is not sent again */
            nfp_post_logged(b, p);
        return;
    }
    d->ended = true;
    if (ok && m->nargs > 4) {
        d->result = wq_malloc(m->args[4].n + 1);
        memcpy(d->result, m->args[4].p, m->args[4].n);
        d->result_len = m->args[4].n;
        nfp_post_count(b, p, (int64_t)m->args[4].n);
        nfp_log_result(b, p, d);
    }
    for (size_t i = 0; i < p->ndest; i++) {
        if (!p->dests[i].ended) {
            nfp_post_logged(b, p);
            return;
        }
    }
    nfp_post_end(b, p); /* every worker has its final answer */
}

/* Does target t (any, all, a name, names separated by commas, a JSON
 * list: list, parsed) name the worker name[0..len)? */
static bool
nfp_target_names(struct nfp_frame t, const json_t *list, const char *name, size_t len)
{
    if (t.n == 3 && (memcmp(t.p, "any", 3) == 0 || memcmp(t.p, "all", 3) == 0))
        return true;
    if (list != NULL) {
        size_t k;
        json_t *v;
        json_array_foreach(list, k, v)
        {
            if (json_is_string(v) && json_string_length(v) == len &&
                memcmp(json_string_value(v), name, len) == 0)
                return true;
        }
        return false;
    }
    for (const char *q = t.p, *end = t.p + t.n; q <= end;) {
        const char *comma = memchr(q, ',', (size_t)(end - q));
        const char *stop = comma != NULL ? comma : end;
        if ((size_t)(stop - q) == len && memcmp(q, name, len) == 0)
            return true;
        q = stop + 1;
    }
    return false;
}

/* Sort p's workers that target t names (all of them when every_one) into
 * those still there (live) and those gone with a final 200 kept (kept);
 * their names into names. */
static void
nfp_get_split(struct nfp_broker *b, const struct nfp_post *p, struct nfp_frame t, bool every_one,
              struct nfp_worker **live, size_t *nlive, struct nfp_dest **kept, size_t *nkept,
              json_t *names)
{
    json_t *list = t.n > 0 && t.p[0] == '[' ? json_loadb(t.p, t.n, 0, NULL) : NULL;
    *nlive = *nkept = 0;
    for (size_t i = 0; i < p->ndest; i++) {
        struct nfp_dest *d = &p->dests[i];
        if (!every_one && !nfp_target_names(t, list, d->name, d->len))
            continue;
        struct nfp_worker *w = registry_find(b->workers, d->name, d->len);
        if (w != NULL && w->service == p->service)
            live[(*nlive)++] = w;
        else if (d->result != NULL)
            kept[(*nkept)++] = d;
        else
            continue;
        json_array_append_new(names, nfp_json_frame(nfp_frame_of(d->name, d->len)));
    }
    json_decref(list);
}

void
nfp_jobs_get(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c,
             struct nfp_service *s)
{
    struct nfp_frame svc = m->args[0], target = m->args[1], uuid = m->args[2];
    struct nfp_post *p = registry_find(b->posts, uuid.p, uuid.n);
    if (p == NULL || p->service != s) {
        nfp_json_to_client(
            b, m->peer, svc, uuid, "400",
            nfp_json_answer(NULL, uuid, target, "FAILED", svc, "no job with this uuid was posted"));
        return;
    }
    if (p->state == NFP_QUEUED) { /* with no worker yet: a 202 naming none */
        nfp_json_to_client(b, m->peer, svc, uuid, "202",
                           nfp_json_answer(json_array(), uuid, target, "QUEUED", svc, NULL));
        return;
    }
    /* the workers the target names: those there get the GET, those gone
     * with a final 200 kept are answered with it, the others are left out;
     * naming none of them (the job went to another worker while the
     * client was away), the job's own workers */
    struct nfp_worker **live = wq_malloc((p->ndest + 1) * sizeof *live);
    struct nfp_dest **kept = wq_malloc((p->ndest + 1) * sizeof *kept);
    size_t nlive, nkept;
    json_t *names = json_array();
    nfp_get_split(b, p, target, false, live, &nlive, kept, &nkept, names);
    if (nlive + nkept == 0)
        nfp_get_split(b, p, target, true, live, &nlive, kept, &nkept, names);
    if (nlive + nkept == 0) {
        json_decref(names);
        nfp_json_to_client(b, m->peer, svc, uuid, "400",
                           nfp_json_answer(NULL, uuid, target, "FAILED", svc,
                                           "no worker of the job is there, and none left its "
                                           "result"));
    } else {
        nfp_json_to_client(b, m->peer, svc, uuid, "202",
                           nfp_json_answer(names, uuid, target, "DISPATCHED", svc, NULL));
        for (size_t i = 0; i < nlive; i++)
            nfp_forward(b, live[i], NFP_GET, (struct nfp_frame){c->name, c->len}, uuid, m->args[3]);
        for (size_t i = 0; i < nkept; i++)
            nfp_to_client(b, m->peer, NFP_RESPONSE, svc, uuid, "200",
                          nfp_frame_of(kept[i]->result, kept[i]->result_len));
        s->requests++;
    }
    wq_free(live);
    wq_free(kept);
}

bool
nfp_jobs_delete(struct nfp_broker *b, const struct nfp_msg *m, const struct nfp_client *c)
{
    (void)c;
    struct nfp_frame svc = m->args[0], uuid = m->args[2];
    struct nfp_post *p = registry_find(b->posts, uuid.p, uuid.n);
    if (p == NULL || p->state != NFP_QUEUED || p->service->len != svc.n ||
        memcmp(p->service->name, svc.p, svc.n) != 0)
        return false; /* not a POST of that service still queued: relayed */
    if (nfp_refuse_readonly(b, m))
        return true;
    nfp_json_to_client(b, m->peer, svc, uuid, "200",
                       nfp_json_answer(NULL, uuid, m->args[1], "DELETED", svc, NULL));
    nfp_post_forget(b, p);
    return true;
}

/* ---- workers gone, time passing ---- */

/* p's only worker d never answered and is gone: p goes to the next
 * ready worker of its service, with a new 202, or back in the line. */
static void
nfp_post_resend(struct nfp_broker *b, struct nfp_post *p, struct nfp_dest *d)
{
    nfp_post_count(b, p, -(int64_t)d->len);
    wq_free(d->name);
    d->name = NULL;
    d->len = 0;
    b->counts.resent++;
    struct nfp_worker *next = nfp_service_next(p->service);
    if (next != NULL) {
        nfp_post_send_to(b, p, d, next);
        nfp_post_logged(b, p);
        nfp_post_202(b, p);
        return;
    }
    nfp_post_count(b, p, -(int64_t)(p->ndest * sizeof *p->dests));
    wq_free(p->dests);
    p->dests = NULL;
    p->ndest = 0;
    struct job *j = nfp_post_job(b, p);
    if (j != NULL)
        core_job_retry_at(b->core, j, (int64_t)*b->now_ms);
    nfp_post_queue(b, p);
    nfp_post_logged(b, p);
}

/* Is p an "any" POST its worker has not answered? */
static bool
nfp_post_unanswered(const struct nfp_post *p)
{
    return p->any && p->ndest == 1 && !p->dests[0].answered;
}

void
nfp_jobs_worker_gone(struct nfp_broker *b, const struct nfp_worker *w)
{
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->sent)
    {
        struct nfp_post *p = list_item(n, struct nfp_post, link);
        if (nfp_post_unanswered(p) && p->service == w->service && p->dests[0].len == w->len &&
            memcmp(p->dests[0].name, w->name, w->len) == 0)
            nfp_post_resend(b, p, &p->dests[0]);
    }
}

/* Answer queued p 408: no worker came in the queue TTL. */
static void
nfp_post_expire(struct nfp_broker *b, struct nfp_post *p)
{
    struct nfp_frame uuid = nfp_frame_of(p->uuid, p->uuid_len);
    struct nfp_frame svc = nfp_frame_of(p->service->name, p->service->len);
    nfp_json_to_client(b, nfp_frame_of(p->client, p->client_len), svc, uuid, "408",
                       nfp_json_answer(NULL, uuid, nfp_frame_of(p->target, p->target_len),
                                       "EXPIRED", svc,
                                       "no worker of the service came within the queue TTL"));
    b->counts.expired++;
    nfp_post_forget(b, p);
}

struct nfp_service_list {
    struct nfp_service **s;
    size_t n;
};

/* The queued posts of service s past the queue TTL; s goes if nothing
 * holds it any more. */
static void
nfp_service_expire(struct nfp_broker *b, struct nfp_service *s)
{
    s->posts++; /* held: its last POST going must not free it under the walk */
    struct list *n, *tmp;
    list_each_safe(n, tmp, &s->waiting)
    {
        struct nfp_post *p = list_item(n, struct nfp_post, link);
        if (*b->now_ms < p->since_ms + b->cfg.queue_ttl_ms)
            break; /* the line is oldest first */
        nfp_post_expire(b, p);
    }
    s->posts--;
    nfp_service_release(b, s);
}

/* The services with POSTs waiting (registry_foreach). */
static void
nfp_service_collect(void *elem, void *arg)
{
    struct nfp_service *s = elem;
    struct nfp_service_list *l = arg;
    if (!list_empty(&s->waiting))
        l->s[l->n++] = s;
}

void
nfp_jobs_tick(struct nfp_broker *b)
{
    /* the services first, then their lines: expiring may free a service,
     * which the registry's walk must not see */
    struct nfp_service_list l = {wq_malloc((registry_count(b->services) + 1) * sizeof *l.s), 0};
    registry_foreach(b->services, nfp_service_collect, &l);
    for (size_t i = 0; i < l.n; i++)
        nfp_service_expire(b, l.s[i]);
    wq_free(l.s);
    /* since a restart, a worker has had its liveness to come back */
    uint64_t grace = b->cfg.liveness * b->cfg.keepalive_ms;
    if (*b->now_ms >= b->started_ms + grace) {
        struct list *n, *tmp;
        list_each_safe(n, tmp, &b->sent)
        {
            struct nfp_post *p = list_item(n, struct nfp_post, link);
            if (nfp_post_unanswered(p) &&
                registry_find(b->workers, p->dests[0].name, p->dests[0].len) == NULL) {
                nfp_post_resend(b, p, &p->dests[0]);
            } else if (!nfp_post_orphaned(b, p)) {
                p->orphan_ms = 0;
            } else if (p->orphan_ms == 0) {
                p->orphan_ms = *b->now_ms;
            } else if (*b->now_ms >= p->orphan_ms + b->cfg.result_ttl_ms) {
                nfp_post_end(b, p); /* its workers have been gone a result TTL */
            }
        }
    }
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->ended)
    {
        struct nfp_post *p = list_item(n, struct nfp_post, link);
        if (*b->now_ms < p->since_ms + b->cfg.result_ttl_ms)
            break;
        nfp_post_forget(b, p);
    }
}

/* ---- after replay ---- */

void
nfp_jobs_replayed(struct nfp_broker *b)
{
    size_t n;
    struct nfp_post **posts = nfp_posts_sorted(b, &n);
    for (size_t i = 0; i < n; i++) {
        struct nfp_post *p = posts[i];
        if (p->service == NULL) { /* answers whose POST is gone from the log */
            for (size_t k = 0; k < p->ndest; k++)
                nfp_log_gone(b, p, &p->dests[k]);
            nfp_post_free(b, p);
            continue;
        }
        uint64_t bytes =
            sizeof *p + p->uuid_len + p->client_len + p->target_len + p->ndest * sizeof *p->dests;
        for (size_t k = 0; k < p->ndest; k++)
            bytes += p->dests[k].len + p->dests[k].result_len;
        nfp_post_count(b, p, (int64_t)bytes);
        if (p->state == NFP_ENDED) {
            list_push_back(&b->ended, &p->link);
            continue;
        }
        const struct job_spec js = {
            .key = {(const uint8_t *)p->uuid, p->uuid_len, b->space},
            .name = {p->service->name, p->service->len},
            .ttr = WQ_MAX_TTR_MS,
            .ttl = UINT64_MAX,
            .payload = p->body,
            .payload_len = p->body_len,
        };
        core_restore(b->core, &js, *b->now_ms);
        wq_free(p->body);
        p->body = NULL;
        struct job *j = nfp_post_job(b, p);
        if (p->state == NFP_SENT && j != NULL) {
            core_job_take(b->core, j, *b->now_ms);
            list_push_back(&b->sent, &p->link);
        } else {
            p->state = NFP_QUEUED;
            list_push_back(&p->service->waiting, &p->link);
        }
    }
    wq_free(posts);
}
