/* hstore.c - Hero's keys as Redis keeps them (hstore.h): a registry of
 * keys by their bytes, a table of them in scan order, a wheel of their
 * expiries; hashes as arrays of fields in the order first set, indexed by
 * name once they grow; lists as rings of values. */
#include "lib/wq.h"
#include "hero/hstore.h"

#include <string.h>

#include "lib/alloc.h"
#include "lib/payload.h"
#include "lib/registry.h"

/* A hash of more fields than this finds them through an index (a Hero
 * job has a dozen or two: linear, with no index to allocate). */
#define HHASH_LINEAR 32

/* What -max-memory counts: a key (its struct, bytes, registry slot, scan
 * slots), a field (struct, name, array slot, index share), a list slot. */
#define HKEY_BYTES(n)   (sizeof(struct hkey) + (n) + 32)
#define HFIELD_BYTES(n) (sizeof(struct hfield) + (n) + 16)
#define HSLOT_BYTES     sizeof(struct hval)

/* The scan table: 2^bits buckets by the top bits of a key's scan value,
 * each a chain in scan order, so that the buckets in turn are the keys in
 * scan order.  It doubles past one key per bucket and halves below one in
 * eight, never below 2^HSCAN_MIN_BITS buckets. */
#define HSCAN_MIN_BITS 4

struct hstore {
    struct registry *keys;
    struct hkey **scan;   /* the scan table's buckets */
    unsigned scan_bits;   /* 2^scan_bits of them */
    uint8_t scan_key[16]; /* the scan hash's key */
    struct wheel wheel;
    uint64_t *bytes;
    uint64_t freeing;  /* what *bytes counts while the store is freed */
    uint64_t next_seq; /* the next list element's number */
    hstore_expired_fn expired;
    void *arg;
};

static void hkey_destroy(struct hstore *s, struct hkey *k);

static void
hkey_key(const void *elem, const void **key, size_t *len)
{
    const struct hkey *k = elem;
    *key = k->key;
    *len = k->len;
}

static void
hfield_key(const void *elem, const void **key, size_t *len)
{
    const struct hfield *f = elem;
    *key = f->name;
    *len = f->len;
}

/* Does x come before y in scan order (the hash, then the bytes)? */
static bool
hkey_before(const struct hkey *x, const struct hkey *y)
{
    if (x->scan != y->scan)
        return x->scan < y->scan;
    int c = memcmp(x->key, y->key, WQ_MIN(x->len, y->len));
    return c != 0 ? c < 0 : x->len < y->len;
}

/* The scan bucket of scan value v in a table of 2^bits buckets. */
static size_t
hscan_bucket(uint64_t v, unsigned bits)
{
    return (size_t)(v >> (64 - bits));
}

/* Link k into its bucket of table t (2^bits buckets), in order. */
static void
hscan_link(struct hkey **t, unsigned bits, struct hkey *k)
{
    struct hkey **pp = &t[hscan_bucket(k->scan, bits)];
    while (*pp != NULL && hkey_before(*pp, k))
        pp = &(*pp)->scan_next;
    k->scan_next = *pp;
    *pp = k;
}

/* The scan table at 2^bits buckets, every key moved over. */
static void
hscan_resize(struct hstore *s, unsigned bits)
{
    struct hkey **t = wq_calloc((size_t)1 << bits, sizeof *t);
    size_t old = (size_t)1 << s->scan_bits;
    for (size_t b = 0; b < old; b++) {
        for (struct hkey *k = s->scan[b], *next; k != NULL; k = next) {
            next = k->scan_next;
            hscan_link(t, bits, k);
        }
    }
    wq_free(s->scan);
    s->scan = t;
    s->scan_bits = bits;
}

static uint64_t
hkey_deadline(const struct wheel_entry *e, void *arg)
{
    (void)arg;
    return WQ_CONTAINER_OF(e, const struct hkey, expiry)->expire_ms;
}

static void
hkey_fire(struct wheel_entry *e, uint64_t now_ms, void *arg)
{
    (void)now_ms;
    struct hstore *s = arg;
    struct hkey *k = WQ_CONTAINER_OF(e, struct hkey, expiry);
    if (s->expired != NULL)
        s->expired(k, s->arg);
    hstore_delete(s, k);
}

struct hstore *
hstore_new(uint64_t now_ms, uint64_t *bytes, hstore_expired_fn expired, void *arg)
{
    struct hstore *s = wq_calloc(1, sizeof *s);
    s->keys = registry_new(hkey_key);
    s->scan_bits = HSCAN_MIN_BITS;
    s->scan = wq_calloc((size_t)1 << s->scan_bits, sizeof *s->scan);
    registry_key_new(s->scan_key, s);
    wheel_init(&s->wheel, now_ms, hkey_deadline, hkey_fire, s);
    s->bytes = bytes;
    s->next_seq = 1;
    s->expired = expired;
    s->arg = arg;
    return s;
}

void
hstore_free(struct hstore *s)
{
    if (s == NULL)
        return;
    /* the caller's count may be gone already (the engine's, freed first) */
    s->bytes = &s->freeing;
    for (size_t b = 0, n = (size_t)1 << s->scan_bits; b < n; b++) {
        for (struct hkey *k = s->scan[b], *next; k != NULL; k = next) {
            next = k->scan_next;
            hkey_destroy(s, k);
        }
    }
    registry_free(s->keys);
    wq_free(s->scan);
    wq_free(s);
}

size_t
hstore_count(const struct hstore *s)
{
    return registry_count(s->keys);
}

size_t
hstore_expiring(const struct hstore *s)
{
    return wheel_count(&s->wheel);
}

uint64_t
hstore_bytes(const struct hstore *s)
{
    return *s->bytes;
}

struct hkey *
hstore_find(struct hstore *s, const char *k, size_t n, uint64_t now_ms)
{
    struct hkey *key = registry_find(s->keys, k, n);
    if (key != NULL && key->expire_ms != 0 && key->expire_ms <= now_ms) {
        wheel_cancel(&s->wheel, &key->expiry);
        if (s->expired != NULL)
            s->expired(key, s->arg);
        hstore_delete(s, key);
        return NULL;
    }
    return key;
}

struct hkey *
hstore_peek(const struct hstore *s, const char *k, size_t n)
{
    return registry_find(s->keys, k, n);
}

struct hkey *
hstore_create(struct hstore *s, const char *k, size_t n, enum hkey_type type)
{
    struct hkey *key = wq_calloc(1, sizeof *key + n);
    memcpy(key->key, k, n);
    key->len = (uint32_t)n;
    key->type = (uint8_t)type;
    key->scan = registry_siphash(s->scan_key, k, n) | 1;
    wheel_entry_init(&key->expiry);
    registry_insert(s->keys, key);
    if (registry_count(s->keys) > ((size_t)1 << s->scan_bits))
        hscan_resize(s, s->scan_bits + 1);
    hscan_link(s->scan, s->scan_bits, key);
    *s->bytes += HKEY_BYTES(n);
    return key;
}

static void
hval_free(struct hval *v)
{
    payload_free(v->p, v->len);
    v->p = NULL;
    v->len = 0;
}

void
hstore_val_free(struct hval v)
{
    hval_free(&v);
}

/* A value holding a copy of p[0..n): 0, or -1 when memory is exhausted. */
static int
hval_set(struct hval *v, const char *p, size_t n)
{
    char *copy = NULL;
    if (n > 0 && (copy = payload_new(p, n)) == NULL)
        return -1;
    v->p = copy;
    v->len = (uint32_t)n;
    v->seq = 0;
    return 0;
}

void
hstore_delete(struct hstore *s, struct hkey *k)
{
    registry_remove(s->keys, k->key, k->len);
    struct hkey **pp = &s->scan[hscan_bucket(k->scan, s->scan_bits)];
    while (*pp != k)
        pp = &(*pp)->scan_next;
    *pp = k->scan_next;
    if (s->scan_bits > HSCAN_MIN_BITS && registry_count(s->keys) < ((size_t)1 << s->scan_bits) / 8)
        hscan_resize(s, s->scan_bits - 1);
    hkey_destroy(s, k);
}

/* Free k (found no more) and its values; *s->bytes counts them no more. */
static void
hkey_destroy(struct hstore *s, struct hkey *k)
{
    wheel_cancel(&s->wheel, &k->expiry);
    uint64_t freed = HKEY_BYTES(k->len);
    if (k->type == HKEY_HASH) {
        for (uint32_t i = 0; i < k->u.hash.n; i++) {
            struct hfield *f = k->u.hash.fields[i];
            freed += HFIELD_BYTES(f->len) + f->value.len;
            hval_free(&f->value);
            wq_free(f);
        }
        registry_free(k->u.hash.index);
        wq_free(k->u.hash.fields);
    } else {
        for (uint32_t i = 0; i < k->u.list.n; i++) {
            struct hval *v = (struct hval *)hlst_at(k, i);
            freed += HSLOT_BYTES + v->len;
            hval_free(v);
        }
        wq_free(k->u.list.ring);
    }
    *s->bytes -= freed;
    wq_free(k);
}

void
hstore_set_expiry(struct hstore *s, struct hkey *k, uint64_t at_ms)
{
    k->expire_ms = at_ms;
    if (at_ms == 0)
        wheel_cancel(&s->wheel, &k->expiry);
    else
        wheel_add(&s->wheel, &k->expiry, at_ms);
}

void
hstore_advance(struct hstore *s, uint64_t now_ms)
{
    wheel_advance(&s->wheel, now_ms);
}

uint64_t
hstore_next_event(const struct hstore *s)
{
    return wheel_next_event(&s->wheel);
}

/* The first key of the buckets from b on, NULL if they are empty. */
static struct hkey *
hscan_first(const struct hstore *s, size_t b)
{
    for (size_t n = (size_t)1 << s->scan_bits; b < n; b++)
        if (s->scan[b] != NULL)
            return s->scan[b];
    return NULL;
}

struct hkey *
hstore_scan(const struct hstore *s, uint64_t cursor)
{
    size_t b = hscan_bucket(cursor, s->scan_bits);
    for (struct hkey *k = s->scan[b]; k != NULL; k = k->scan_next)
        if (k->scan >= cursor)
            return k;
    return hscan_first(s, b + 1);
}

struct hkey *
hstore_scan_next(const struct hstore *s, const struct hkey *k)
{
    return k->scan_next != NULL ? k->scan_next
                                : hscan_first(s, hscan_bucket(k->scan, s->scan_bits) + 1);
}

/* Hashes */

/* The index of field f in hash k, or k's length. */
static uint32_t
hhash_find(const struct hkey *k, const char *f, size_t n)
{
    struct hfield *const *fields = k->u.hash.fields;
    if (k->u.hash.index != NULL) {
        const struct hfield *hit = registry_find(k->u.hash.index, f, n);
        if (hit == NULL)
            return k->u.hash.n;
        uint32_t i = 0;
        while (fields[i] != hit)
            i++;
        return i;
    }
    for (uint32_t i = 0; i < k->u.hash.n; i++)
        if (fields[i]->len == n && memcmp(fields[i]->name, f, n) == 0)
            return i;
    return k->u.hash.n;
}

const struct hval *
hhash_get(const struct hkey *k, const char *f, size_t n)
{
    if (k->u.hash.index != NULL) {
        const struct hfield *hit = registry_find(k->u.hash.index, f, n);
        return hit != NULL ? &hit->value : NULL;
    }
    uint32_t i = hhash_find(k, f, n);
    return i < k->u.hash.n ? &k->u.hash.fields[i]->value : NULL;
}

int
hhash_set(struct hstore *s, struct hkey *k, const char *f, size_t n, const char *v, size_t vn)
{
    struct hval nv;
    if (hval_set(&nv, v, vn) != 0)
        return -1;
    const struct hval *old = hhash_get(k, f, n);
    if (old != NULL) {
        struct hfield *hit = WQ_CONTAINER_OF(old, struct hfield, value);
        *s->bytes += vn;
        *s->bytes -= hit->value.len;
        hval_free(&hit->value);
        hit->value = nv;
        return 0;
    }
    if (k->u.hash.n == k->u.hash.cap) {
        uint32_t cap = k->u.hash.cap ? k->u.hash.cap * 2 : 4;
        k->u.hash.fields = wq_realloc(k->u.hash.fields, cap * sizeof *k->u.hash.fields);
        k->u.hash.cap = cap;
    }
    struct hfield *field = wq_malloc(sizeof *field + n);
    memcpy(field->name, f, n);
    field->len = (uint32_t)n;
    field->value = nv;
    k->u.hash.fields[k->u.hash.n++] = field;
    if (k->u.hash.index != NULL) {
        registry_insert(k->u.hash.index, field);
    } else if (k->u.hash.n > HHASH_LINEAR) {
        k->u.hash.index = registry_new(hfield_key);
        for (uint32_t i = 0; i < k->u.hash.n; i++)
            registry_insert(k->u.hash.index, k->u.hash.fields[i]);
    }
    *s->bytes += HFIELD_BYTES(n) + vn;
    return 1;
}

bool
hhash_del(struct hstore *s, struct hkey *k, const char *f, size_t n)
{
    uint32_t i = hhash_find(k, f, n);
    if (i == k->u.hash.n)
        return false;
    struct hfield *field = k->u.hash.fields[i];
    if (k->u.hash.index != NULL)
        registry_remove(k->u.hash.index, field->name, field->len);
    memmove(&k->u.hash.fields[i], &k->u.hash.fields[i + 1],
            (k->u.hash.n - i - 1) * sizeof *k->u.hash.fields);
    k->u.hash.n--;
    *s->bytes -= HFIELD_BYTES(field->len) + field->value.len;
    hval_free(&field->value);
    wq_free(field);
    return true;
}

/* Lists */

/* Room for one more value in k's ring (a power of two). */
static void
hlst_grow(struct hkey *k)
{
    if (k->u.list.n < k->u.list.cap)
        return;
    uint32_t cap = k->u.list.cap ? k->u.list.cap * 2 : 4;
    struct hval *ring = wq_malloc(cap * sizeof *ring);
    for (uint32_t i = 0; i < k->u.list.n; i++)
        ring[i] = *hlst_at(k, i);
    wq_free(k->u.list.ring);
    k->u.list.ring = ring;
    k->u.list.head = 0;
    k->u.list.cap = cap;
}

int
hlst_push(struct hstore *s, struct hkey *k, bool left, const char *v, size_t n, uint64_t seq)
{
    struct hval nv;
    if (hval_set(&nv, v, n) != 0)
        return -1;
    nv.seq = seq != 0 ? seq : s->next_seq;
    s->next_seq = WQ_MAX(s->next_seq, nv.seq + 1);
    hlst_grow(k);
    uint32_t mask = k->u.list.cap - 1;
    if (left) {
        k->u.list.head = (k->u.list.head - 1) & mask;
        k->u.list.ring[k->u.list.head] = nv;
    } else {
        k->u.list.ring[(k->u.list.head + k->u.list.n) & mask] = nv;
    }
    k->u.list.n++;
    *s->bytes += HSLOT_BYTES + n;
    return 0;
}

struct hval
hlst_pop(struct hstore *s, struct hkey *k, bool left)
{
    uint32_t mask = k->u.list.cap - 1;
    struct hval v;
    if (left) {
        v = k->u.list.ring[k->u.list.head];
        k->u.list.head = (k->u.list.head + 1) & mask;
    } else {
        v = k->u.list.ring[(k->u.list.head + k->u.list.n - 1) & mask];
    }
    k->u.list.n--;
    *s->bytes -= HSLOT_BYTES + v.len;
    return v;
}

uint64_t
hstore_next_seq(const struct hstore *s)
{
    return s->next_seq;
}

struct hval
hlst_take(struct hstore *s, struct hkey *k, uint32_t i)
{
    struct hval v = *hlst_at(k, i);
    uint32_t n = k->u.list.n;
    /* close the gap from the nearer end */
    if (i < n / 2) {
        for (uint32_t j = i; j > 0; j--)
            *(struct hval *)hlst_at(k, j) = *hlst_at(k, j - 1);
        k->u.list.head = (k->u.list.head + 1) & (k->u.list.cap - 1);
    } else {
        for (uint32_t j = i; j + 1 < n; j++)
            *(struct hval *)hlst_at(k, j) = *hlst_at(k, j + 1);
    }
    k->u.list.n--;
    *s->bytes -= HSLOT_BYTES + v.len;
    return v;
}

uint32_t
hlst_find_seq(const struct hkey *k, uint64_t seq)
{
    uint32_t n = k->u.list.n;
    /* pops take from the ends: look there first */
    if (n > 0 && hlst_at(k, 0)->seq == seq)
        return 0;
    for (uint32_t i = n; i > 0; i--)
        if (hlst_at(k, i - 1)->seq == seq)
            return i - 1;
    return n;
}

/* Remove the values at the indexes where keep[i] is false, keeping the
 * order of the rest. */
static void
hlst_compact(struct hstore *s, struct hkey *k, const bool *keep, hstore_gone_fn gone, void *arg)
{
    uint32_t out = 0, n = k->u.list.n;
    for (uint32_t i = 0; i < n; i++) {
        struct hval *v = (struct hval *)hlst_at(k, i);
        if (keep[i]) {
            *(struct hval *)hlst_at(k, out++) = *v;
        } else {
            if (gone != NULL)
                gone(arg, k, v);
            *s->bytes -= HSLOT_BYTES + v->len;
            hval_free(v);
        }
    }
    k->u.list.n = out;
}

uint32_t
hlst_rem(struct hstore *s, struct hkey *k, int64_t count, const char *v, size_t n,
         hstore_gone_fn gone, void *arg)
{
    uint32_t len = k->u.list.n, removed = 0;
    uint64_t limit = count == 0 ? UINT64_MAX : count > 0 ? (uint64_t)count : (uint64_t)-count;
    bool *keep = wq_malloc(len ? len : 1);
    for (uint32_t j = 0; j < len; j++) {
        uint32_t i = count < 0 ? len - 1 - j : j;
        const struct hval *x = hlst_at(k, i);
        keep[i] = removed == limit || x->len != n || (n > 0 && memcmp(x->p, v, n) != 0);
        removed += !keep[i];
    }
    if (removed > 0)
        hlst_compact(s, k, keep, gone, arg);
    wq_free(keep);
    return removed;
}

void
hlst_trim(struct hstore *s, struct hkey *k, uint32_t start, uint32_t stop, hstore_gone_fn gone,
          void *arg)
{
    uint32_t len = k->u.list.n;
    bool *keep = wq_malloc(len ? len : 1);
    for (uint32_t i = 0; i < len; i++)
        keep[i] = i >= start && i <= stop;
    hlst_compact(s, k, keep, gone, arg);
    wq_free(keep);
}
