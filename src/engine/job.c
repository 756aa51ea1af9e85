/* job.c - job ordering keys and small helpers. */
#include "lib/wq.h"
#include "engine/job.h"

#include <string.h>

#include "lib/alloc.h"
#include "lib/payload.h"
#include "lib/registry.h"

const char *const job_state_names[JOB_STATE_COUNT] = {"new",     "completed", "failed",
                                                      "pending", "leased",    "waiting"};

/* Heap keys are 64-bit prefixes of the orders below, made so that most
 * comparisons end on the key: a key that is less means "before"; equal
 * keys go to the tie functions, which compare in full.  A field that does
 * not fit is clamped to a code of its own at either end, and the fields
 * after a clamped one are left 0, so a clamped key never orders two jobs
 * wrongly, it only ties them. */

#define PRIO_BITS 16
#define PRIO_TOP  ((1u << PRIO_BITS) - 1) /* 65535 */
#define TIME_BITS 47
#define TIME_TOP  (((uint64_t)1 << TIME_BITS) - 1)
#define TIME_FROM ((int64_t)1577836800000) /* 2020-01-01, Unix ms */

/* Priority code, higher priority first: -32767..32766 exactly as 65534..1;
 * higher priorities clamp to 0, lower ones to PRIO_TOP. */
static inline uint64_t
prio_code(int32_t priority, bool *clamped)
{
    int64_t o = (int64_t)priority + 32768; /* 1..65534 is exact */
    *clamped = o < 1 || o > PRIO_TOP - 1;
    o = o < 1 ? 0 : o > PRIO_TOP - 1 ? PRIO_TOP : o;
    return PRIO_TOP - (uint64_t)o;
}

/* Time code: ms since 2020 (until the year 6482) as 1..TIME_TOP-1, with
 * earlier times clamped to 0 and later ones to TIME_TOP. */
static inline uint64_t
time_code(int64_t ms, bool *clamped)
{
    *clamped = true;
    if (ms < TIME_FROM + 1)
        return 0;
    if ((uint64_t)(ms - TIME_FROM) > TIME_TOP - 1)
        return TIME_TOP;
    *clamped = false;
    return (uint64_t)(ms - TIME_FROM);
}

/* Ready order: priority descending, untimed before timed, time, arrival.
 * Key: 16 bits of priority, the timed bit, then 47 bits of the arrival
 * number (untimed) or of the time in ms (timed). */
uint64_t
job_ready_key(const struct job *j)
{
    bool clamped, time_clamped;
    uint64_t key = prio_code(j->priority, &clamped) << (64 - PRIO_BITS);
    if (clamped)
        return key;
    if (!(j->flags & JOB_F_TIMED))
        return key | j->seq;
    return key | (uint64_t)1 << TIME_BITS | time_code(j->base_ms, &time_clamped);
}

int64_t
job_due_ms(const struct job *j, const struct registry *exts)
{
    if (!(j->flags & JOB_F_BACKOFF) || !(j->flags & JOB_F_EXT))
        return j->base_ms;
    const struct job_ext *x = job_ext_find(j, exts);
    return x->retry_at != 0 ? x->retry_at : j->base_ms;
}

/* Is j waiting out a backoff (its due time is not its scheduled time)? */
static bool
job_backing_off(const struct job *j, const struct registry *exts)
{
    return (j->flags & JOB_F_BACKOFF) && job_due_ms(j, exts) != j->base_ms;
}

/* Scheduled order: due time (to the ns), priority descending, arrival.
 * Key: 47 bits of the time in ms, then 16 bits of priority for a time
 * without nanoseconds (those come first within their ms), else PRIO_TOP. */
uint64_t
job_scheduled_key(const struct job *j, const struct registry *exts)
{
    bool clamped, prio_clamped;
    uint64_t key = time_code(job_due_ms(j, exts), &clamped) << PRIO_BITS;
    if (clamped)
        return key;
    if ((j->flags & JOB_F_NS) && !job_backing_off(j, exts))
        return key | PRIO_TOP;
    return key | prio_code(j->priority, &prio_clamped);
}

/* The nanoseconds of a scheduled job's due time (0 for most, and for a
 * retry's). */
static uint32_t
job_time_ns(const struct job *j, const struct registry *exts)
{
    if (!(j->flags & JOB_F_NS) || job_backing_off(j, exts))
        return 0;
    return job_ext_find(j, exts)->time_ns;
}

/* The full ready order. */
bool
job_ready_tie(const void *a, const void *b, void *exts)
{
    const struct job *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority;
    bool xt = x->flags & JOB_F_TIMED, yt = y->flags & JOB_F_TIMED;
    if (xt != yt)
        return yt;
    if (xt) {
        if (x->base_ms != y->base_ms)
            return x->base_ms < y->base_ms;
        uint32_t xn = job_time_ns(x, exts), yn = job_time_ns(y, exts);
        if (xn != yn)
            return xn < yn;
    }
    return x->seq < y->seq;
}

/* The full scheduled order. */
bool
job_scheduled_tie(const void *a, const void *b, void *exts)
{
    const struct job *x = a, *y = b;
    int64_t xd = job_due_ms(x, exts), yd = job_due_ms(y, exts);
    if (xd != yd)
        return xd < yd;
    uint32_t xn = job_time_ns(x, exts), yn = job_time_ns(y, exts);
    if (xn != yn)
        return xn < yn;
    if (x->priority != y->priority)
        return x->priority > y->priority;
    return x->seq < y->seq;
}

void
job_set_heap_index(void *elem, uint32_t idx)
{
    ((struct job *)elem)->heap_index = idx;
}

void
job_id_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct job *)elem)->id;
    *len = JOBID_LEN;
}

void
job_ext_id_key(const void *elem, const void **key, size_t *len)
{
    *key = ((const struct job_ext *)elem)->id;
    *len = JOBID_LEN;
}

void
job_ref_key(const void *elem, const void **key, size_t *len)
{
    const struct job_keyref *k = &((const struct job *)elem)->key;
    *key = k->bytes;
    *len = k->len;
}

void
job_ext_ref_key(const void *elem, const void **key, size_t *len)
{
    const struct job_keyref *k = &((const struct job_ext *)elem)->key;
    *key = k->bytes;
    *len = k->len;
}

/* ---- a key kept apart, and the payload beside it ---- */

/* Where keyed j's key is (job_keyed_set). */
enum job_key_home { JOB_KEY_IN_PAYLOAD, JOB_KEY_BEFORE_PAYLOAD, JOB_KEY_APART };

static enum job_key_home
job_key_home(const struct job *j)
{
    const char *k = (const char *)j->key.bytes;
    if (j->payload != NULL && k >= j->payload && k < j->payload + j->payload_len)
        return JOB_KEY_IN_PAYLOAD;
    if (j->payload != NULL && j->payload == k + j->key.len)
        return JOB_KEY_BEFORE_PAYLOAD;
    return JOB_KEY_APART;
}

bool
job_keyed_set(struct job *j, const struct job_key *k, const char *payload, size_t len)
{
    const char *kp = (const char *)k->p;
    bool in = len > 0 && kp >= payload && kp + k->len <= payload + len;
    if (in || len == 0 || payload_shared(len)) {
        char *copy = NULL;
        if (len > 0 && (copy = payload_new(payload, len)) == NULL)
            return false;
        if (in) { /* the key is bytes of the payload: kept once */
            j->key.bytes = (uint8_t *)copy + (kp - payload);
        } else {
            j->key.bytes = wq_malloc(k->len);
            memcpy(j->key.bytes, k->p, k->len);
        }
        j->payload = copy;
    } else { /* one block: key, then payload */
        uint8_t *block = wq_malloc(k->len + len);
        memcpy(block, k->p, k->len);
        memcpy(block + k->len, payload, len);
        j->key.bytes = block;
        j->payload = (char *)block + k->len;
    }
    j->key.len = (uint8_t)k->len;
    j->key.space = k->space;
    j->payload_len = (uint32_t)len;
    j->flags |= JOB_F_KEY;
    return true;
}

void
job_keyed_free(struct job *j)
{
    switch (job_key_home(j)) {
    case JOB_KEY_IN_PAYLOAD:
        payload_free(j->payload, j->payload_len);
        break;
    case JOB_KEY_BEFORE_PAYLOAD:
        wq_free(j->key.bytes);
        break;
    case JOB_KEY_APART:
        payload_free(j->payload, j->payload_len);
        wq_free(j->key.bytes);
        break;
    }
}

uint8_t *
job_keyed_set_payload(struct job *j, const char *payload, size_t len)
{
    struct job_key k = {j->key.bytes, j->key.len, j->key.space};
    /* the new payload holds the key where the old one did: kept there */
    if (job_key_home(j) == JOB_KEY_IN_PAYLOAD) {
        size_t at = (size_t)((const char *)k.p - j->payload);
        if (at + k.len <= len && memcmp(payload + at, k.p, k.len) == 0)
            k.p = (const uint8_t *)payload + at;
    }
    struct job old = *j;
    if (!job_keyed_set(j, &k, payload, len))
        wq_panic(__FILE__, __LINE__, "out of memory keeping a job's payload");
    job_keyed_free(&old);
    return j->key.bytes;
}
