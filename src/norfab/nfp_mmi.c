/* nfp_mmi.c - the broker's own service, mmi.service.broker: show_broker,
 * show_workers, show_services, show_clients, disconnect (nfp_internal.h).
 * Answers are JSON as NORFAB's broker writes them, status 200. */
#include "lib/wq.h"
#include "norfab/nfp_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/registry.h"

static json_t *
nfp_mmi_str(const char *p, size_t n)
{
    json_t *s = json_stringn(p, n);
    return s != NULL ? s : json_string("");
}

/* Does the JSON string filter (absent: "all") admit value[0..n)? */
static bool
nfp_mmi_admits(const json_t *filter, const char *value, size_t n)
{
    if (!json_is_string(filter) || strcmp(json_string_value(filter), "all") == 0)
        return true;
    return json_string_length(filter) == n && memcmp(json_string_value(filter), value, n) == 0;
}

static json_t *
nfp_mmi_show_broker(struct nfp_broker *b, uint64_t now)
{
    return json_pack("{s:s, s:s, s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:s, s:{s:b, s:s?}}", "endpoint",
                     b->cfg.endpoints, "status", "active", "keepalives", "interval",
                     (json_int_t)b->cfg.keepalive_ms, "multiplier", (json_int_t)b->cfg.liveness,
                     "workers count", (json_int_t)registry_count(b->workers), "services count",
                     (json_int_t)registry_count(b->services), "clients count",
                     (json_int_t)registry_count(b->clients), "uptime (s)",
                     (json_int_t)((now - b->started_ms) / 1000), "broker", "workq " PACKAGE_VERSION,
                     "security", "zmq-auth", b->cfg.curve_public != NULL, "broker-public-key",
                     b->cfg.curve_public);
}

/* show_workers: name, service, alive or dead, seconds left before it is
 * dead, keepalives sent and received, seconds since its READY; filtered
 * by kwargs service and status.  None: one empty entry, as NORFAB does. */
static json_t *
nfp_mmi_show_workers(struct nfp_broker *b, const json_t *kwargs, uint64_t now)
{
    json_t *out = json_array();
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->worker_list)
    {
        const struct nfp_worker *w = list_item(n, struct nfp_worker, link);
        if (w->service == NULL)
            continue;
        bool dead = nfp_worker_dead(b, w, now);
        const char *status = dead ? "dead" : "alive";
        if (!nfp_mmi_admits(json_object_get(kwargs, "service"), w->service->name,
                            w->service->len) ||
            !nfp_mmi_admits(json_object_get(kwargs, "status"), status, strlen(status)))
            continue;
        uint64_t until = w->seen_ms + b->cfg.liveness * b->cfg.keepalive_ms;
        char hold[32], ka[48], up[24];
        snprintf(hold, sizeof hold, "%.1f", dead ? 0.0 : (double)(until - now) / 1000.0);
        snprintf(ka, sizeof ka, "%llu / %llu", (unsigned long long)w->keepalives_tx,
                 (unsigned long long)w->keepalives_rx);
        snprintf(up, sizeof up, "%llu", (unsigned long long)((now - w->ready_ms) / 1000));
        json_t *e = json_object();
        json_object_set_new(e, "name", nfp_mmi_str(w->name, w->len));
        json_object_set_new(e, "service", nfp_mmi_str(w->service->name, w->service->len));
        json_object_set_new(e, "status", json_string(status));
        json_object_set_new(e, "holdtime", json_string(hold));
        json_object_set_new(e, "keepalives tx/rx", json_string(ka));
        json_object_set_new(e, "alive (s)", json_string(up));
        json_array_append_new(out, e);
    }
    if (json_array_size(out) == 0)
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s}", "name", "", "service", "", "status", ""));
    return out;
}

struct nfp_mmi_walk {
    json_t *out;
};

static void
nfp_mmi_service_cb(void *elem, void *arg)
{
    const struct nfp_service *s = elem;
    struct nfp_mmi_walk *walk = arg;
    json_t *e = json_object();
    json_object_set_new(e, "name", nfp_mmi_str(s->name, s->len));
    json_object_set_new(e, "workers", json_integer((json_int_t)s->n));
    json_object_set_new(e, "requests", json_integer((json_int_t)s->requests));
    json_array_append_new(walk->out, e);
}

/* show_services: each service a client or worker has named, with its
 * ready workers and the requests routed to it. */
static json_t *
nfp_mmi_show_services(struct nfp_broker *b)
{
    struct nfp_mmi_walk walk = {json_array()};
    registry_foreach(b->services, nfp_mmi_service_cb, &walk);
    return walk.out;
}

/* show_clients: the clients seen in the last hour, the least recently
 * seen first. */
static json_t *
nfp_mmi_show_clients(struct nfp_broker *b, uint64_t now)
{
    json_t *out = json_array();
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->client_list)
    {
        const struct nfp_client *c = list_item(n, struct nfp_client, link);
        json_t *e = json_object();
        json_object_set_new(e, "name", nfp_mmi_str(c->name, c->len));
        json_object_set_new(e, "requests", json_integer((json_int_t)c->requests));
        json_object_set_new(e, "last seen (s)",
                            json_integer((json_int_t)((now - c->seen_ms) / 1000)));
        json_object_set_new(e, "first seen (s)",
                            json_integer((json_int_t)((now - c->first_ms) / 1000)));
        json_array_append_new(out, e);
    }
    return out;
}

/* disconnect: a DISCONNECT to every worker (of kwargs service), which
 * makes a NORFAB worker connect again and send READY; the names. */
static json_t *
nfp_mmi_disconnect(struct nfp_broker *b, const json_t *kwargs)
{
    json_t *out = json_array();
    struct list *n, *tmp;
    list_each_safe(n, tmp, &b->worker_list)
    {
        struct nfp_worker *w = list_item(n, struct nfp_worker, link);
        if (w->service == NULL ||
            !nfp_mmi_admits(json_object_get(kwargs, "service"), w->service->name, w->service->len))
            continue;
        json_array_append_new(out, nfp_mmi_str(w->name, w->len));
        nfp_worker_drop(b, w, true);
    }
    return out;
}

void
nfp_mmi(struct nfp_broker *b, const struct nfp_msg *m, struct nfp_client *c)
{
    uint64_t now = *b->now_ms;
    json_t *req = json_loadb(m->args[3].p, m->args[3].n, 0, NULL);
    json_t *task = json_object_get(req, "task");
    json_t *kwargs = json_object_get(req, "kwargs");
    const char *t = json_is_string(task) ? json_string_value(task) : "";
    const char *status = "200";
    json_t *ret;
    if (!json_is_object(req)) {
        status = "400";
        ret = json_string("MMI request is not a JSON object {\"task\", \"args\", \"kwargs\"}");
    } else if (strcmp(t, "show_broker") == 0) {
        ret = nfp_mmi_show_broker(b, now);
    } else if (strcmp(t, "show_workers") == 0) {
        ret = nfp_mmi_show_workers(b, kwargs, now);
    } else if (strcmp(t, "show_services") == 0) {
        ret = nfp_mmi_show_services(b);
    } else if (strcmp(t, "show_clients") == 0) {
        ret = nfp_mmi_show_clients(b, now);
    } else if (strcmp(t, "disconnect") == 0) {
        ret = nfp_mmi_disconnect(b, kwargs);
    } else {
        /* the task's first 120 bytes or fewer, not cutting a character */
        size_t cut = strlen(t);
        if (cut > 120)
            for (cut = 120; cut > 0 && ((unsigned char)t[cut] & 0xc0) == 0x80; cut--)
                ;
        char text[160];
        snprintf(text, sizeof text, "Unsupported task '%.*s'", (int)cut, t);
        ret = json_string(text);
    }
    json_decref(req);
    char *body = json_dumps(ret, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(ret);
    if (body == NULL)
        wq_panic(__FILE__, __LINE__, "json_dumps failed");
    (void)c;
    nfp_to_client(b, m->peer, m->cmd == NFP_MMI ? NFP_MMI : NFP_RESPONSE, m->args[0], m->args[2],
                  status, (struct nfp_frame){body, strlen(body)});
    free(body);
}
