/* wheel.c - hierarchical timer wheel.
 *
 * Invariant: every entry in slots[L][s] has a deadline d > now whose digits
 * above level L equal those of now, and whose digit L is s (> now's digit L).
 * When now's digit L becomes s, those entries are re-added and fall to lower
 * levels; at level 0 that means d == now, so they go to the due list. */
#include "lib/wq.h"
#include "lib/wheel.h"

static inline unsigned
wheel_digit(uint64_t t, unsigned level)
{
    return (unsigned)(t >> (level * WHEEL_BITS)) & (WHEEL_SLOTS - 1);
}

void
wheel_init(struct wheel *w, uint64_t now_ms, wheel_deadline_fn deadline_of, wheel_fire_fn fire,
           void *arg)
{
    *w = (struct wheel){0};
    w->now = now_ms;
    w->deadline_of = deadline_of;
    w->fire = fire;
    w->arg = arg;
}

static struct wheel_entry *
wheel_entry_of(struct hlist_node *n)
{
    return WQ_CONTAINER_OF(n, struct wheel_entry, link);
}

/* Place an armed-to-be entry by its deadline relative to w->now. */
static void
wheel_place(struct wheel *w, struct wheel_entry *e, uint64_t deadline)
{
    if (deadline <= w->now) {
        hlist_push(&w->due, &e->link);
        return;
    }
    unsigned top_bit = 63u - (unsigned)__builtin_clzll(deadline ^ w->now);
    unsigned level = top_bit / WHEEL_BITS;
    unsigned slot = wheel_digit(deadline, level);
    hlist_push(&w->slots[level][slot], &e->link);
    w->occupied[level] |= 1ULL << slot;
}

void
wheel_add(struct wheel *w, struct wheel_entry *e, uint64_t deadline_ms)
{
    wheel_cancel(w, e);
    wheel_place(w, e, deadline_ms);
    w->count++;
}

/* Unlink e without touching the count; keeps the occupancy bits true.  An
 * entry at the head of a slot's list has pprev pointing into w->slots, which
 * tells which slot may have become empty (entries store no level or slot). */
static void
wheel_unlink(struct wheel *w, struct wheel_entry *e)
{
    uintptr_t at = (uintptr_t)e->link.pprev, first = (uintptr_t)&w->slots[0][0];
    hlist_unlink(&e->link);
    if (at >= first && at < first + sizeof w->slots) {
        size_t i = (at - first) / sizeof w->slots[0][0];
        size_t level = i / WHEEL_SLOTS, slot = i % WHEEL_SLOTS;
        if (w->slots[level][slot].first == NULL)
            w->occupied[level] &= ~(1ULL << slot);
    }
}

void
wheel_cancel(struct wheel *w, struct wheel_entry *e)
{
    if (!wheel_entry_armed(e))
        return;
    wheel_unlink(w, e);
    w->count--;
}

/* The time at which now's digit at `level` next becomes an occupied slot, or
 * WHEEL_NEVER.  Occupied slots are always above now's digit (invariant). */
static uint64_t
wheel_level_event(const struct wheel *w, unsigned level)
{
    uint64_t occ = w->occupied[level];
    if (occ == 0)
        return WHEEL_NEVER;
    unsigned shift = level * WHEEL_BITS;
    unsigned digit = wheel_digit(w->now, level);
    uint64_t above = digit == 63 ? 0 : occ & (~0ULL << (digit + 1));
    WQ_ASSERT(above == occ);
    unsigned slot = (unsigned)__builtin_ctzll(above);
    /* now with digits at and below `level` cleared, then digit = slot */
    uint64_t base =
        shift + WHEEL_BITS >= 64 ? 0 : (w->now >> (shift + WHEEL_BITS)) << (shift + WHEEL_BITS);
    return base | ((uint64_t)slot << shift);
}

uint64_t
wheel_next_event(const struct wheel *w)
{
    if (w->count == 0) /* the common case of an idle wheel: no level walk */
        return WHEEL_NEVER;
    if (w->due.first != NULL)
        return w->now;
    uint64_t next = WHEEL_NEVER;
    for (unsigned level = 0; level < WHEEL_LEVELS; level++) {
        uint64_t t = wheel_level_event(w, level);
        if (t < next)
            next = t;
    }
    return next;
}

/* Re-place every entry of slots[level][slot] relative to the new w->now. */
static void
wheel_cascade(struct wheel *w, unsigned level, unsigned slot)
{
    struct hlist_node *n = w->slots[level][slot].first;
    w->slots[level][slot].first = NULL;
    w->occupied[level] &= ~(1ULL << slot);
    while (n != NULL) {
        struct hlist_node *next = n->next;
        wheel_place(w, wheel_entry_of(n), w->deadline_of(wheel_entry_of(n), w->arg));
        n = next;
    }
}

/* Set time to t (no occupied slot lies strictly between), moving down the
 * slots whose turn t is. */
static void
wheel_step_to(struct wheel *w, uint64_t t)
{
    uint64_t old = w->now;
    w->now = t;
    for (int level = WHEEL_LEVELS - 1; level >= 0; level--) {
        unsigned shift = (unsigned)level * WHEEL_BITS;
        if ((t >> shift) == (old >> shift))
            continue;
        unsigned slot = wheel_digit(t, (unsigned)level);
        if (w->occupied[level] & (1ULL << slot))
            wheel_cascade(w, (unsigned)level, slot);
    }
}

void
wheel_advance(struct wheel *w, uint64_t now_ms)
{
    if (w->count == 0) { /* nothing to place relative to the old time */
        w->now = WQ_MAX(w->now, now_ms);
        return;
    }
    for (;;) {
        while (w->due.first != NULL) {
            struct wheel_entry *e = wheel_entry_of(w->due.first);
            wheel_unlink(w, e);
            w->count--;
            w->fire(e, w->now, w->arg);
        }
        if (w->now >= now_ms)
            break;
        /* Step to the next event or to now_ms, whichever comes first.  An
         * event at UINT64_MAX (a deadline of UINT64_MAX) equals WHEEL_NEVER,
         * so "never" cannot end the loop: stepping to now_ms then still
         * cascades that slot and the entry fires on the next turn. */
        wheel_step_to(w, WQ_MIN(wheel_next_event(w), now_ms));
    }
}
