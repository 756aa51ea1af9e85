/* wq.h - project-wide base: config.h, limits, assertions, small macros.
 * Every .c file includes this first. */
#ifndef WQ_WQ_H
#define WQ_WQ_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protocol limits (doc/protocol-reference.md section 2). */
#define WQ_MAX_NAME          255
#define WQ_MAX_TTR_MS        86400000u
#define WQ_MAX_WAIT_MS       86400000u
#define WQ_MAX_ATTEMPTS      255u
#define WQ_MAX_FAILS         255u
#define WQ_MAX_INSPECT_LIMIT 1000u
#define WQ_MAX_WAIT_IDS      1000u /* ids in one wait (ours) */

/* Defaults of the tunable limits (flags --max-line, --max-payload). */
#define WQ_DEFAULT_MAX_LINE    65536u
#define WQ_DEFAULT_MAX_PAYLOAD 1048576u
#define WQ_DEFAULT_HOST        "127.0.0.1"
#define WQ_DEFAULT_PORT        "9922"

#define WQ_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define WQ_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define WQ_MAX(a, b)    ((a) > (b) ? (a) : (b))

/* The struct that holds member `field` at address `ptr`. */
#define WQ_CONTAINER_OF(ptr, type, field) ((type *)(void *)((char *)(ptr)-offsetof(type, field)))

/* A byte string that is not NUL-terminated: a token of a command line. */
struct wq_str {
    const char *p;
    size_t n;
};

/* Log and abort: for broken internal invariants, never for client input. */
_Noreturn void wq_panic(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Internal invariant check; stays on in release builds. */
#define WQ_ASSERT(e) ((e) ? (void)0 : wq_panic(__FILE__, __LINE__, "assertion failed: %s", #e))

#endif /* WQ_WQ_H */
