/* hstore.h - Hero's keys as Redis keeps them: hashes and lists under byte
 * keys, each key with an optional expiry time.  The store knows no wire
 * format and no clock: time is a parameter, as in the engine.  A hash keeps
 * its fields in the order they were first set (as Redis does for the small
 * hashes Hero writes); a list is a ring of values.  A key whose last field
 * or element goes is deleted, as in Redis.  Values are payloads
 * (lib/payload.h), so a large one is sent without a copy; an empty value
 * is a NULL pointer.  What the store holds is counted in bytes, for
 * -max-memory. */
#ifndef WQ_HSTORE_H
#define WQ_HSTORE_H

#include "lib/wq.h"
#include "lib/wheel.h"

enum hkey_type {
    HKEY_HASH = 1,
    HKEY_LIST = 2,
};

/* A value: len bytes at p (a payload; NULL when len is 0); in a list, the
 * element's number, unique in the store (the command log names it so). */
struct hval {
    char *p;
    uint32_t len;
    uint64_t seq;
};

struct hkey;

/* A value leaves a list (LREM, LTRIM): the owner may log it. */
typedef void (*hstore_gone_fn)(void *arg, const struct hkey *k, const struct hval *v);

struct hfield {
    struct hval value;
    uint32_t len; /* of the name */
    char name[];
};

struct hkey {
    struct hkey *scan_next;    /* the next key of its scan bucket */
    struct wheel_entry expiry; /* armed while expire_ms is set */
    uint64_t scan;             /* the key's place in scan order (never 0) */
    uint64_t expire_ms;        /* Unix ms; 0: none */
    uint8_t type;              /* enum hkey_type */
    uint32_t len;
    union {
        struct {
            struct hfield **fields; /* in the order first set */
            uint32_t n, cap;
            struct registry *index; /* name -> field, once there are many */
        } hash;
        struct {
            struct hval *ring;
            uint32_t head, n, cap;
        } list;
    } u;
    char key[];
};

struct hstore;

/* A key is about to expire (its time has come): the owner may log it.  The
 * store deletes it after the call. */
typedef void (*hstore_expired_fn)(struct hkey *k, void *arg);

/* A new empty store at time now_ms; *bytes is kept as what it holds (the
 * engine's count of plain data, for -max-memory). */
struct hstore *hstore_new(uint64_t now_ms, uint64_t *bytes, hstore_expired_fn expired, void *arg);
/* Free every key (without counting it off *bytes, which may be gone). */
void hstore_free(struct hstore *s);

/* Keys that exist (expired ones not yet removed count until then), and
 * those of them with an expiry time. */
size_t hstore_count(const struct hstore *s);
size_t hstore_expiring(const struct hstore *s);
/* The key k[0..n), or NULL; one whose time has come by now_ms is expired
 * first (reported, deleted) and not found. */
struct hkey *hstore_find(struct hstore *s, const char *k, size_t n, uint64_t now_ms);
/* The key k[0..n) as it is, or NULL: no expiry runs (for the owner's own
 * bookkeeping, which must not see keys go under it). */
struct hkey *hstore_peek(const struct hstore *s, const char *k, size_t n);
/* A new empty key of type (k[0..n) must not exist). */
struct hkey *hstore_create(struct hstore *s, const char *k, size_t n, enum hkey_type type);
/* Delete k and its values. */
void hstore_delete(struct hstore *s, struct hkey *k);
/* Expire k at at_ms (Unix ms); 0: never. */
void hstore_set_expiry(struct hstore *s, struct hkey *k, uint64_t at_ms);
/* Run the expiries due by now_ms. */
void hstore_advance(struct hstore *s, uint64_t now_ms);
/* When hstore_advance has work next (WHEEL_NEVER: none). */
uint64_t hstore_next_event(const struct hstore *s);

/* Scan order is that of a keyed hash of the keys' bytes (its key random
 * per store), then of the bytes.  hstore_scan: the first key at or after
 * cursor in it (NULL: none left); hstore_scan_next: the key after k;
 * hstore_cursor: k's cursor.  Cursors are stable: a walk that resumes from
 * a key's cursor finds every key that existed all along, once, whatever
 * was added or deleted meanwhile. */
struct hkey *hstore_scan(const struct hstore *s, uint64_t cursor);
struct hkey *hstore_scan_next(const struct hstore *s, const struct hkey *k);
static inline uint64_t
hstore_cursor(const struct hkey *k)
{
    return k->scan;
}

/* Hashes.  The value of field f[0..n) of hash k, or NULL. */
const struct hval *hhash_get(const struct hkey *k, const char *f, size_t n);
/* Set field f to v[0..vn): 1 if the field is new, 0 if it was replaced;
 * -1 when memory is exhausted (nothing changed). */
int hhash_set(struct hstore *s, struct hkey *k, const char *f, size_t n, const char *v, size_t vn);
/* Remove field f: whether it was there.  The key stays even when empty:
 * the caller deletes it (hstore_delete) once it has done with it. */
bool hhash_del(struct hstore *s, struct hkey *k, const char *f, size_t n);
static inline uint32_t
hhash_len(const struct hkey *k)
{
    return k->u.hash.n;
}
static inline const struct hfield *
hhash_at(const struct hkey *k, uint32_t i)
{
    return k->u.hash.fields[i];
}

/* Lists.  Push v[0..n) at the head (left) or the tail as element seq (0: a
 * new number): 0, or -1 when memory is exhausted. */
int hlst_push(struct hstore *s, struct hkey *k, bool left, const char *v, size_t n, uint64_t seq);
/* Take the value at the head or the tail (the list must not be empty); the
 * caller owns it (hstore_val_free).  An emptied key stays for the caller
 * to delete. */
struct hval hlst_pop(struct hstore *s, struct hkey *k, bool left);
/* The number the next element pushed (with seq 0) gets. */
uint64_t hstore_next_seq(const struct hstore *s);
/* Take the value at index i (0 .. len-1); the caller owns it. */
struct hval hlst_take(struct hstore *s, struct hkey *k, uint32_t i);
/* The index of element seq, or the list's length. */
uint32_t hlst_find_seq(const struct hkey *k, uint64_t seq);
/* Free a value taken from the store. */
void hstore_val_free(struct hval v);
static inline uint32_t
hlst_len(const struct hkey *k)
{
    return k->u.list.n;
}
/* The value at index i (0 .. len-1, from the head). */
static inline const struct hval *
hlst_at(const struct hkey *k, uint32_t i)
{
    return &k->u.list.ring[(k->u.list.head + i) & (k->u.list.cap - 1)];
}
/* Remove the values equal to v: count > 0 the first count from the head,
 * < 0 from the tail, 0 all.  How many went. */
uint32_t hlst_rem(struct hstore *s, struct hkey *k, int64_t count, const char *v, size_t n,
                  hstore_gone_fn gone, void *arg);
/* Keep only indexes start..stop (inclusive, already in range, start <=
 * stop); everything when start > stop is the caller's delete.  gone
 * hears of each value removed, before it goes. */
void hlst_trim(struct hstore *s, struct hkey *k, uint32_t start, uint32_t stop, hstore_gone_fn gone,
               void *arg);

/* Bytes the store holds, as counted for -max-memory. */
uint64_t hstore_bytes(const struct hstore *s);

#endif /* WQ_HSTORE_H */
