/* auth_guard.c - failing addresses and their delays (see auth_guard.h). */
#include "lib/wq.h"
#include "net/auth_guard.h"

#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "lib/log.h"

#define AUTH_DELAY_MS     250u
#define AUTH_DELAY_MAX_MS 10000u
#define AUTH_FORGET_MS    (15u * 60u * 1000u)
/* Hosts remembered; when full, the one that failed longest ago goes. */
#define AUTH_SLOTS 256

struct auth_slot {
    char host[64]; /* "" when free */
    uint32_t failures;
    uint32_t unchecked; /* passwords refused unchecked since the last failure's line */
    uint64_t last_ms;   /* its last failure */
    uint64_t until_ms;  /* no check before */
};

struct auth_guard {
    struct auth_slot slots[AUTH_SLOTS];
};

struct auth_guard *
auth_guard_new(void)
{
    return wq_calloc(1, sizeof(struct auth_guard));
}

void
auth_guard_free(struct auth_guard *g)
{
    wq_free(g);
}

/* The host part of "HOST:PORT" or "[V6]:PORT" into out. */
static void
auth_host(const char *peer, char *out, size_t cap)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon != NULL ? (size_t)(colon - peer) : strlen(peer);
    n = WQ_MIN(n, cap - 1);
    memcpy(out, peer, n);
    out[n] = '\0';
}

/* The slot of peer's host, or NULL; with make, a new one if need be (the
 * free one, or the one that failed longest ago). */
static struct auth_slot *
auth_slot(struct auth_guard *g, const char *peer, bool make)
{
    char host[sizeof g->slots[0].host];
    auth_host(peer, host, sizeof host);
    struct auth_slot *oldest = &g->slots[0];
    for (size_t i = 0; i < AUTH_SLOTS; i++) {
        struct auth_slot *s = &g->slots[i];
        if (s->host[0] != '\0' && strcmp(s->host, host) == 0)
            return s;
        if (s->host[0] == '\0' || s->last_ms < oldest->last_ms)
            oldest = s;
    }
    if (!make)
        return NULL;
    *oldest = (struct auth_slot){0};
    snprintf(oldest->host, sizeof oldest->host, "%s", host);
    return oldest;
}

uint64_t
auth_guard_wait_ms(struct auth_guard *g, const char *peer, uint64_t now_ms, const char *what)
{
    struct auth_slot *s = auth_slot(g, peer, false);
    if (s == NULL || now_ms >= s->until_ms)
        return 0;
    if (s->unchecked++ == 0) /* the first of this delay; the next failure's line counts them */
        wq_log(LOG_LVL_WARN, "%s refused unchecked peer=%s wait_ms=%llu", what, peer,
               (unsigned long long)(s->until_ms - now_ms));
    return s->until_ms - now_ms;
}

uint64_t
auth_guard_failed(struct auth_guard *g, const char *peer, uint64_t now_ms, const char *what)
{
    struct auth_slot *s = auth_slot(g, peer, true);
    if (now_ms - s->last_ms > AUTH_FORGET_MS)
        s->failures = 0;
    s->failures++;
    s->last_ms = now_ms;
    uint64_t delay = auth_guard_delay_ms(s->failures);
    s->until_ms = now_ms + delay;
    if (s->unchecked == 0)
        wq_log(LOG_LVL_WARN, "%s failed peer=%s failures=%u delay_ms=%llu", what, peer, s->failures,
               (unsigned long long)delay);
    else
        wq_log(LOG_LVL_WARN, "%s failed peer=%s failures=%u delay_ms=%llu unchecked=%u", what, peer,
               s->failures, (unsigned long long)delay, s->unchecked);
    s->unchecked = 0;
    return delay;
}

void
auth_guard_passed(struct auth_guard *g, const char *peer)
{
    struct auth_slot *s = auth_slot(g, peer, false);
    if (s != NULL)
        *s = (struct auth_slot){0};
}

uint64_t
auth_guard_delay_ms(uint32_t failures)
{
    uint64_t ms = AUTH_DELAY_MS;
    for (uint32_t i = 1; i < failures && ms < AUTH_DELAY_MAX_MS; i++)
        ms *= 2;
    return WQ_MIN(ms, (uint64_t)AUTH_DELAY_MAX_MS);
}
