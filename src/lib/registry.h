/* registry.h - an open-addressing hash table of elements found by a byte key
 * (job ids, queue names).  Keys are hashed with SipHash-1-3 under a random
 * per-table key, so clients who choose ids or names cannot force collisions.
 * Linear probing with backward-shift deletion: no tombstones, O(1) expected
 * for find, insert and remove.  The table stores pointers (8 bytes a slot,
 * pointer and hash tag together); the elements and their keys are the
 * caller's. */
#ifndef WQ_REGISTRY_H
#define WQ_REGISTRY_H

#include "lib/wq.h"

/* Report the key bytes of elem.  Also called on elements other than the one
 * sought (their hashes are recomputed when slots move), so every element's key
 * must stay readable and unchanged while the element is in the table. */
typedef void (*registry_key_fn)(const void *elem, const void **key, size_t *len);

struct registry;

/* A new empty table (aborts if memory is exhausted). */
struct registry *registry_new(registry_key_fn key_of);
/* Free the table, not the elements; NULL is ignored. */
void registry_free(struct registry *r);

size_t registry_count(const struct registry *r);
/* Slots allocated (8 bytes each), both tables while one is being moved. */
size_t registry_slots(const struct registry *r);
/* The element with this key, or NULL. */
void *registry_find(const struct registry *r, const void *key, size_t len);
/* Add elem, whose key must not be present yet. */
void registry_insert(struct registry *r, void *elem);
/* Remove and return the element with this key, or NULL if absent. */
void *registry_remove(struct registry *r, const void *key, size_t len);

/* Call fn on every element, in no particular order; fn must not change the
 * table. */
void registry_foreach(const struct registry *r, void (*fn)(void *elem, void *arg), void *arg);

/* SipHash-1-3 of data under the 16-byte key k. */
uint64_t registry_siphash(const uint8_t k[16], const void *data, size_t len);
/* A random key for registry_siphash (salt, an address, mixes into the
 * fallback when the kernel has no entropy yet). */
void registry_key_new(uint8_t k[16], const void *salt);

#endif /* WQ_REGISTRY_H */
