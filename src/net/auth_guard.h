/* auth_guard.h - the record of the addresses whose passwords failed, one
 * for every listener (Workq's auth, Faktory's HELLO).  Each failure from a
 * host (whatever its port) is answered after a delay, 250 ms doubling to
 * 10 s, and until the delay is over no password from that host is checked
 * at all: it is refused when the delay ends.  So parallel connections
 * guess no faster than one, and a costly check (Faktory's thousands of
 * hash rounds) runs at most once per delay per host.  A right password
 * forgives its host; one that has not failed for 15 minutes starts
 * afresh. */
#ifndef WQ_AUTH_GUARD_H
#define WQ_AUTH_GUARD_H

#include "lib/wq.h"

struct auth_guard;

/* A new record (aborts if memory is exhausted); free it with
 * auth_guard_free (NULL is ignored). */
struct auth_guard *auth_guard_new(void);
void auth_guard_free(struct auth_guard *g);

/* How long the host of peer ("HOST:PORT") must still wait before a
 * password of its is checked; 0: check it now.  A wait counts the
 * attempt as refused unchecked: the first of a delay logs "<what> refused
 * unchecked peer=... wait_ms=W", and the host's next failure line says
 * how many there were. */
uint64_t auth_guard_wait_ms(struct auth_guard *g, const char *peer, uint64_t now_ms,
                            const char *what);
/* A password checked from peer at now_ms was wrong: logs "<what> failed
 * peer=... failures=N delay_ms=D" (and " unchecked=U" when U passwords
 * from its host were refused unchecked since its last such line) and
 * returns D, the delay before the answer and before its host's next
 * check. */
uint64_t auth_guard_failed(struct auth_guard *g, const char *peer, uint64_t now_ms,
                           const char *what);
/* A right password from peer: its host's failures are forgiven. */
void auth_guard_passed(struct auth_guard *g, const char *peer);
/* The delay after a host's n-th failure in a row (n >= 1). */
uint64_t auth_guard_delay_ms(uint32_t failures);

#endif /* WQ_AUTH_GUARD_H */
