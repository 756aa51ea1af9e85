/* fuzz_fwp.c - libFuzzer target: the Faktory front-end (src/faktory/fwp.c,
 * fwp_job.c, fwp_cmd.c, fwp_admin.c, fwp_mutate.c, fwp_reply.c, fwp_json.c)
 * through its connection module.
 *
 * The input is what a client sends (a HELLO first, then commands).  It is
 * fed to the module's handle as a connection feeds it, and answered
 * through a reply that drops the bytes (fuzz_reply.h), against a fresh
 * core.  A FETCH that parks is let time out (the clock moves on), and at
 * the end every reservation runs out, so a job that was fetched fails as
 * the server fails it (fwp_job_fail: retry, dead set or discard). */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdlib.h>

#include "net/conn.h"
#include "engine/core.h"
#include "faktory/fjobs.h"
#include "fuzz_reply.h"
#include "faktory/fwp.h"

#define FUZZ_NOW_MS   1700000000000ULL
#define FUZZ_DAY_MS   86400000ULL
#define FUZZ_MAX_LINE 2048
#define FUZZ_MAX_JOB  1024
#define FUZZ_DEAD_MAX 4 /* small, so that the dead set overflows */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    uint64_t now_ms = FUZZ_NOW_MS, clients = 1;
    bool readonly = false;
    struct core *core = core_new(now_ms);
    struct fjobs *fs = fjobs_new(core);
    struct fwp_ctx f = {
        .core = core,
        .fjobs = fs,
        .max_line = FUZZ_MAX_LINE,
        .max_job = FUZZ_MAX_JOB,
        .backoff_unit_ms = 1000,
        .now_ms = &now_ms,
        .readonly = &readonly,
        .clients = &clients,
        .started_ms = now_ms,
        .rng = 1,
    };
    fjobs_set_expired(fs, fwp_reservation_expired, &f);
    fjobs_set_dead_limits(fs, 180 * FUZZ_DAY_MS, FUZZ_DEAD_MAX);

    struct fuzz_client c;
    fuzz_client_init(&c);
    void *state = calloc(1, fwp_protocol.state_size);
    if (state == NULL)
        abort();
    fwp_protocol.open(&f, state, &c.reply);
    size_t off = 0;
    while (off < size && !c.closed) {
        size_t need;
        size_t used = fwp_protocol.handle(&f, state, &c.reply, in + off, size - off, &need);
        if (used == 0)
            break; /* the input ends inside a line */
        off += used;
        if (c.waiting != NULL) {
            /* a FETCH waits at most 2 s: let it time out */
            now_ms += 3000;
            core_advance(core, now_ms);
            if (c.waiting != NULL)
                abort(); /* the wait never ended */
        }
    }
    fwp_protocol.close(&f, state);
    free(state);
    now_ms += 400 * FUZZ_DAY_MS;
    core_advance(core, now_ms);
    core_free(core);
    fjobs_free(fs);
    return 0;
}
