/* wheel.h - a hierarchical timer wheel with millisecond resolution.
 * Eleven levels of 64 slots cover the whole 64-bit range of deadlines.  An
 * entry sits at the level of the highest 6-bit digit in which its deadline
 * differs from the wheel's current time, and moves down a level when time
 * reaches its slot, so add and cancel are O(1) and advancing costs O(levels)
 * per occupied slot, however far time jumps.  Entries are embedded in their
 * owners (jobs, waiters) and hold only their links (16 bytes): each wheel has
 * one fire callback and asks its owners for an entry's deadline when it moves
 * the entry down a level, so a deadline the owner knows anyway is not stored
 * twice.  The wheel never allocates.  Pure: time is given. */
#ifndef WQ_WHEEL_H
#define WQ_WHEEL_H

#include "lib/wq.h"
#include "lib/list.h"

#define WHEEL_BITS   6
#define WHEEL_SLOTS  64
#define WHEEL_LEVELS 11
#define WHEEL_NEVER  UINT64_MAX

struct wheel_entry {
    struct hlist_node link; /* unlinked when not armed */
};

/* Called when e is due; e is no longer armed and may be re-added. */
typedef void (*wheel_fire_fn)(struct wheel_entry *e, uint64_t now_ms, void *arg);
/* The deadline e was last added with (asked while e is armed). */
typedef uint64_t (*wheel_deadline_fn)(const struct wheel_entry *e, void *arg);

struct wheel {
    uint64_t now;
    struct hlist due; /* entries whose deadline has come */
    uint64_t occupied[WHEEL_LEVELS];
    struct hlist slots[WHEEL_LEVELS][WHEEL_SLOTS];
    size_t count;
    wheel_deadline_fn deadline_of;
    wheel_fire_fn fire;
    void *arg; /* passed to both callbacks */
};

/* Start an empty wheel at time now_ms. */
void wheel_init(struct wheel *w, uint64_t now_ms, wheel_deadline_fn deadline_of, wheel_fire_fn fire,
                void *arg);

/* Prepare an unarmed entry. */
static inline void
wheel_entry_init(struct wheel_entry *e)
{
    hlist_node_init(&e->link);
}

static inline bool
wheel_entry_armed(const struct wheel_entry *e)
{
    return hlist_linked(&e->link);
}

/* Arm e for deadline_ms (re-arming an armed entry moves it).  A deadline at
 * or before the wheel's time fires on the next wheel_advance.  Until e fires
 * or is cancelled, the wheel's deadline_of(e) must return deadline_ms. */
void wheel_add(struct wheel *w, struct wheel_entry *e, uint64_t deadline_ms);
/* Disarm e; nothing happens if it is not armed. */
void wheel_cancel(struct wheel *w, struct wheel_entry *e);

/* Move time to now_ms, firing every entry due by then in deadline order of
 * their slots.  Callbacks may add and cancel entries. */
void wheel_advance(struct wheel *w, uint64_t now_ms);

/* The next time at which wheel_advance has work to do (an entry to fire or a
 * slot to move down), WHEEL_NEVER when empty.  It is never later than the
 * earliest deadline (or the wheel's time, for an entry already due), and may
 * be earlier.  The fire callbacks get the wheel's stepped time, which is the
 * entry's slot time, not the time passed to wheel_advance. */
uint64_t wheel_next_event(const struct wheel *w);

static inline size_t
wheel_count(const struct wheel *w)
{
    return w->count;
}

#endif /* WQ_WHEEL_H */
