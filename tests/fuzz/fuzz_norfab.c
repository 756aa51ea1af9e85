/* fuzz_norfab.c - libFuzzer target: NORFAB's broker (src/norfab/nfp.c,
 * nfp_broker.c, nfp_jobs.c, nfp_mmi.c) fed messages as its ROUTER socket
 * receives them.
 *
 * The input is lines.  A line starting with '!' lets a keepalive interval
 * pass (the heartbeat runs); any other line is one message whose frames
 * are separated by '|' (the peer's identity first, then usually an empty
 * frame, a header, a command and its frames).  What the broker sends is
 * checked to be a message with an identity and then dropped.  At the end
 * the clock moves on past every liveness, queue TTL and result TTL: every
 * worker dies, every POST goes (an orphan after a result TTL, its answers
 * after another), and the bytes counted for -max-memory
 * must be back to 0. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "norfab/nfp_broker.h"

#define FUZZ_NOW_MS    1700000000000ULL
#define FUZZ_KA_MS     1000
#define FUZZ_TTL_MS    10000
#define FUZZ_MAX_FRAME 64

/* The broker's sending: a message has its identity frame and is sent
 * whole (to nobody). */
static bool
fuzz_send(void *arg, const struct nfp_frame *f, size_t n, bool heartbeat)
{
    (void)arg;
    (void)heartbeat;
    if (n < 2 || f[0].n == 0)
        abort();
    for (size_t i = 0; i < n; i++)
        if (f[i].n > 0 && f[i].p == NULL)
            abort();
    return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *end = in + size;
    uint64_t now_ms = FUZZ_NOW_MS;
    bool readonly = false;
    struct core *core = core_new(now_ms);
    const struct nfp_broker_config cfg = {
        .keepalive_ms = FUZZ_KA_MS,
        .liveness = 3,
        .endpoints = "tcp://127.0.0.1:5555",
        .started_ms = now_ms,
        .queue_ttl_ms = FUZZ_TTL_MS,
        .result_ttl_ms = FUZZ_TTL_MS,
        .readonly = &readonly,
    };
    struct nfp_broker *b = nfp_broker_new(&cfg, core, fuzz_send, NULL, &now_ms);
    nfp_broker_replayed(b);
    for (const char *line = in; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL)
            eol = end;
        if (line < eol && line[0] == '!') {
            now_ms += FUZZ_KA_MS;
            core_advance(core, now_ms);
            nfp_broker_tick(b);
        } else {
            struct nfp_frame frames[FUZZ_MAX_FRAME];
            size_t n = 0;
            for (const char *f = line; f <= eol && n < FUZZ_MAX_FRAME;) {
                const char *bar = memchr(f, '|', (size_t)(eol - f));
                const char *stop = bar != NULL ? bar : eol;
                frames[n++] = (struct nfp_frame){f, (size_t)(stop - f)};
                f = stop + 1;
            }
            nfp_broker_handle(b, frames, n);
        }
        line = eol + 1;
    }
    for (int i = 0; i < 3 * (FUZZ_TTL_MS / FUZZ_KA_MS) + 10; i++) {
        now_ms += FUZZ_KA_MS;
        core_advance(core, now_ms);
        nfp_broker_tick(b);
    }
    if (core->data_bytes != 0)
        abort(); /* the count went astray, or a POST never went */
    core_free(core);
    nfp_broker_free(b);
    return 0;
}
