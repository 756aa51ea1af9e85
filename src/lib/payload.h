/* payload.h - the bytes of job payloads and results: allocated once when a
 * job is added or finished, and sent to clients without a copy.
 *
 * A payload of at least PAYLOAD_SHARE_MIN bytes carries a reference count
 * in a small header before its bytes: the job holds one reference and each
 * output buffer sending it holds another (evbuffer_add_reference), so a
 * large payload is never copied on lease, result or inspect, and the job
 * may go away while its bytes are still being written.  Smaller payloads
 * are plain allocations, copied into the output: a copy of a few hundred
 * bytes is cheaper than the chain a reference costs.  Whether a payload is
 * shared follows from its length alone.  Event-loop thread only. */
#ifndef WQ_PAYLOAD_H
#define WQ_PAYLOAD_H

#include "lib/wq.h"

#define PAYLOAD_SHARE_MIN 2048u

/* A copy of data (len > 0), or NULL if memory is exhausted. */
char *payload_new(const void *data, size_t len);
/* Drop the owner's reference to p (len bytes); NULL is ignored. */
void payload_free(char *p, size_t len);

/* Does a payload of len bytes carry a reference count? */
static inline bool
payload_shared(size_t len)
{
    return len >= PAYLOAD_SHARE_MIN;
}

/* Take one more reference to shared p, for a buffer that will release it
 * with payload_release. */
void payload_ref(char *p);
/* Release a reference taken with payload_ref; the signature of libevent's
 * evbuffer_ref_cleanup_cb. */
void payload_release(const void *data, size_t len, void *extra);

/* Shared payloads alive (for tests and leak checks). */
size_t payload_shared_live(void);

#endif /* WQ_PAYLOAD_H */
