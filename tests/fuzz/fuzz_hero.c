/* fuzz_hero.c - libFuzzer target: the Hero front-end (src/hero/resp.c,
 * hero.c, hero_conn.c, hero_keys.c, hero_hash.c, hero_list.c, hero_jobs.c,
 * hstore.c) through its connection module.
 *
 * The input is what a Redis client sends.  It is fed to the module's
 * handle as a connection feeds it, answered through a reply that drops the
 * bytes (fuzz_reply.h), against a fresh core and store.  A BLPOP that
 * parks is withdrawn, as when its client leaves; after each request the
 * clock moves on a second, so timeouts and expiries run.  At the end the
 * connection closes (its jobs are lost), and once every key is deleted the
 * store's bytes are back to 0: what it counted is what it held. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdlib.h>

#include "engine/core.h"
#include "fuzz_reply.h"
#include "hero/hero.h"
#include "hero/hstore.h"
#include "net/auth_guard.h"
#include "net/conn.h"

#define FUZZ_NOW_MS   1700000000000ULL
#define FUZZ_MAX_BULK 512

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    uint64_t now_ms = FUZZ_NOW_MS, clients = 1;
    bool readonly = false;
    struct core *core = core_new(now_ms);
    struct auth_guard *guard = auth_guard_new();
    struct hero_ctx h = {
        .core = core,
        .auth_guard = guard,
        .max_bulk = FUZZ_MAX_BULK,
        .now_ms = &now_ms,
        .readonly = &readonly,
        .clients = &clients,
        .started_ms = now_ms,
    };
    h.store = hstore_new(now_ms, &core->data_bytes, hero_key_expired, &h);
    hero_ctx_init(&h);
    hero_jobs_open(&h);
    hero_jobs_replayed(&h);

    struct fuzz_client c;
    fuzz_client_init(&c);
    void *state = calloc(1, hero_protocol.state_size);
    if (state == NULL)
        abort();
    hero_protocol.open(&h, state, &c.reply);
    size_t off = 0;
    while (off < size && !c.closed) {
        size_t need;
        size_t used = hero_protocol.handle(&h, state, &c.reply, in + off, size - off, &need);
        if (used == 0)
            break; /* the input ends inside a request */
        off += used;
        if (c.waiting != NULL) {
            hero_protocol.cancel(&h, c.waiting);
            c.waiting = NULL;
        }
        now_ms += 1000;
        core_advance(core, now_ms);
        hstore_advance(h.store, now_ms);
    }
    hero_protocol.close(&h, state);
    free(state);
    now_ms += 86400000ULL;
    core_advance(core, now_ms);
    hstore_advance(h.store, now_ms);
    for (struct hkey *k = hstore_scan(h.store, 0); k != NULL; k = hstore_scan(h.store, 0))
        hero_key_delete(&h, k);
    if (core->data_bytes != 0)
        abort(); /* the count went astray */
    hero_ctx_close(&h);
    hero_jobs_close(&h);
    core_free(core);
    hstore_free(h.store);
    auth_guard_free(guard);
    return 0;
}
