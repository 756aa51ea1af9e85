/* nfp_log.c - NORFAB's POSTs in the command log (records 56 to 58,
 * doc/cmdlog.md), and their replay.  A POST's state is one record (56)
 * written whole at each change that matters (queued, sent to whom, who
 * has answered, ended), which supersedes the earlier ones; a worker's
 * final 200 is a record of its own (57); a record 58 forgets either.  So
 * cleaning keeps one record per POST and one per kept answer. */
#include "lib/wq.h"
#include "norfab/nfp_internal.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "lib/alloc.h"
#include "lib/registry.h"
#include "store/cmdlog_codec.h"

/* A destination's flags in a POST's record. */
#define NFP_DEST_ANSWERED 1
#define NFP_DEST_ENDED    2

/* Append r if the server keeps a log (the core's record hook). */
static void
nfp_record(struct nfp_broker *b, struct cmdlog_rec *r)
{
    struct core *c = b->core;
    if (c == NULL || c->record == NULL)
        return;
    r->at_ms = (int64_t)*b->now_ms;
    c->record(c->record_arg, r);
}

void
nfp_log_post(struct nfp_broker *b, const struct nfp_post *p, struct nfp_frame body)
{
    /* the target, then the workers: uvarint lengths and their bytes, a
     * flags byte after each worker's name */
    size_t cap = 10 + p->target_len + 10;
    for (size_t i = 0; i < p->ndest; i++)
        cap += 10 + p->dests[i].len + 1;
    uint8_t *packed = wq_malloc(cap), *o = packed;
    o += cmdlog_uvarint_put(o, p->target_len);
    memcpy(o, p->target, p->target_len);
    o += p->target_len;
    o += cmdlog_uvarint_put(o, p->ndest);
    for (size_t i = 0; i < p->ndest; i++) {
        const struct nfp_dest *d = &p->dests[i];
        o += cmdlog_uvarint_put(o, d->len);
        memcpy(o, d->name, d->len);
        o += d->len;
        *o++ = (uint8_t)((d->answered ? NFP_DEST_ANSWERED : 0) | (d->ended ? NFP_DEST_ENDED : 0));
    }
    struct cmdlog_rec r = {.code = CMDLOG_N_POST,
                           .jid = {p->uuid, p->uuid_len},
                           .name = {p->service->name, p->service->len},
                           .payload = {body.p, body.n},
                           .result = {p->client, p->client_len},
                           .after = {(const char *)packed, (size_t)(o - packed)},
                           .left = p->all,
                           .seq = (uint64_t)p->state};
    nfp_record(b, &r);
    wq_free(packed);
}

void
nfp_log_result(struct nfp_broker *b, const struct nfp_post *p, const struct nfp_dest *d)
{
    struct cmdlog_rec r = {.code = CMDLOG_N_RESULT,
                           .jid = {p->uuid, p->uuid_len},
                           .name = {d->name, d->len},
                           .payload = {d->result, d->result_len}};
    nfp_record(b, &r);
}

void
nfp_log_gone(struct nfp_broker *b, const struct nfp_post *p, const struct nfp_dest *d)
{
    struct cmdlog_rec r = {.code = CMDLOG_N_GONE,
                           .jid = {p->uuid, p->uuid_len},
                           .name = {d != NULL ? d->name : "", d != NULL ? d->len : 0}};
    nfp_record(b, &r);
}

/* ---- replay ---- */

/* Read the target and workers of a record 56 into p: false if malformed. */
static bool
nfp_replay_unpack(struct nfp_broker *b, struct nfp_post *p, struct wq_str packed)
{
    const uint8_t *in = (const uint8_t *)packed.p, *end = in + packed.n;
    uint64_t len, n;
    size_t k = cmdlog_uvarint_get(in, (size_t)(end - in), &len);
    if (k == 0 || len > (uint64_t)(end - in - (ptrdiff_t)k))
        return false;
    in += k;
    p->target = wq_malloc(len + 1);
    memcpy(p->target, in, len);
    p->target_len = len;
    in += len;
    if ((k = cmdlog_uvarint_get(in, (size_t)(end - in), &n)) == 0 || n > packed.n)
        return false;
    in += k;
    p->dests = wq_calloc(n + 1, sizeof *p->dests);
    for (; p->ndest < n; p->ndest++) {
        struct nfp_dest *d = &p->dests[p->ndest];
        if ((k = cmdlog_uvarint_get(in, (size_t)(end - in), &len)) == 0 ||
            len + 1 > (uint64_t)(end - in - (ptrdiff_t)k))
            return false;
        in += k;
        d->name = wq_malloc(len + 1);
        memcpy(d->name, in, len);
        d->len = len;
        in += len;
        d->answered = *in & NFP_DEST_ANSWERED;
        d->ended = *in & NFP_DEST_ENDED;
        in++;
    }
    (void)b;
    p->any = p->target_len == 3 && memcmp(p->target, "any", 3) == 0;
    return in == end;
}

/* Record 56: the POST as it was then, replacing what came before. */
static void
nfp_replay_post(struct nfp_broker *b, const struct cmdlog_rec *r)
{
    struct nfp_post *old = registry_find(b->posts, r->jid.p, r->jid.n);
    struct nfp_post *p = wq_calloc(1, sizeof *p + r->jid.n + 1);
    memcpy(p->uuid, r->jid.p, r->jid.n);
    p->uuid_len = r->jid.n;
    list_init(&p->link);
    p->service = nfp_service(b, (struct nfp_frame){r->name.p, r->name.n});
    p->service->posts++;
    p->state = r->seq <= NFP_ENDED ? (enum nfp_post_state)r->seq : NFP_ENDED;
    p->all = r->left;
    p->since_ms = (uint64_t)r->at_ms;
    p->client = wq_malloc(r->result.n + 1);
    memcpy(p->client, r->result.p, r->result.n);
    p->client_len = r->result.n;
    p->body = wq_malloc(r->payload.n + 1);
    memcpy(p->body, r->payload.p, r->payload.n);
    p->body_len = r->payload.n;
    if (!nfp_replay_unpack(b, p, r->after)) {
        nfp_post_free(b, p); /* malformed: as if never written */
        return;
    }
    if (old != NULL) { /* the kept answers carry over */
        for (size_t i = 0; i < old->ndest; i++) {
            struct nfp_dest *d = &old->dests[i];
            for (size_t j = 0; j < p->ndest && d->result != NULL; j++) {
                if (p->dests[j].len == d->len && memcmp(p->dests[j].name, d->name, d->len) == 0) {
                    p->dests[j].result = d->result;
                    p->dests[j].result_len = d->result_len;
                    d->result = NULL;
                }
            }
        }
        nfp_post_free(b, old);
    }
    registry_insert(b->posts, p);
}

/* The destination of p named r's worker, added if p has none of that
 * name. */
static struct nfp_dest *
nfp_replay_dest(struct nfp_post *p, const struct cmdlog_rec *r)
{
    for (size_t i = 0; i < p->ndest; i++)
        if (p->dests[i].len == r->name.n && memcmp(p->dests[i].name, r->name.p, r->name.n) == 0)
            return &p->dests[i];
    p->dests = wq_realloc(p->dests, (p->ndest + 1) * sizeof *p->dests);
    struct nfp_dest *d = &p->dests[p->ndest++];
    memset(d, 0, sizeof *d);
    d->name = wq_malloc(r->name.n + 1);
    memcpy(d->name, r->name.p, r->name.n);
    d->len = r->name.n;
    return d;
}

/* Record 57: a worker's kept answer.  Cleaning may have left it before
 * its POST's last state (56): it then waits in a post of no service,
 * whose answers the state takes over. */
static void
nfp_replay_result(struct nfp_broker *b, struct nfp_post *p, const struct cmdlog_rec *r)
{
    if (p == NULL) {
        p = wq_calloc(1, sizeof *p + r->jid.n + 1);
        memcpy(p->uuid, r->jid.p, r->jid.n);
        p->uuid_len = r->jid.n;
        list_init(&p->link);
        p->state = NFP_ENDED;
        registry_insert(b->posts, p);
    }
    struct nfp_dest *d = nfp_replay_dest(p, r);
    wq_free(d->result);
    d->result = wq_malloc(r->payload.n + 1);
    memcpy(d->result, r->payload.p, r->payload.n);
    d->result_len = r->payload.n;
}

void
nfp_jobs_replay(void *arg, struct core *c, const struct cmdlog_rec *r, uint64_t now_ms)
{
    (void)c;
    (void)now_ms;
    struct nfp_broker *b = arg;
    struct nfp_post *p = registry_find(b->posts, r->jid.p, r->jid.n);
    struct nfp_dest *d = NULL;
    for (size_t i = 0; p != NULL && i < p->ndest && r->name.n > 0; i++)
        if (p->dests[i].len == r->name.n && memcmp(p->dests[i].name, r->name.p, r->name.n) == 0)
            d = &p->dests[i];
    switch (r->code) {
    case CMDLOG_N_POST:
        nfp_replay_post(b, r);
        break;
    case CMDLOG_N_RESULT:
        nfp_replay_result(b, p, r);
        break;
    case CMDLOG_N_GONE:
        if (p != NULL && r->name.n == 0) {
            nfp_post_free(b, p);
        } else if (d != NULL) {
            wq_free(d->result);
            d->result = NULL;
            d->result_len = 0;
        }
        break;
    default:
        break;
    }
}
