/* check_payload.c - unit tests for payload buffers (src/lib/payload.c): small
 * payloads are plain copies, large ones are reference counted and outlive
 * their job while an output buffer still sends them. */
#include "lib/wq.h"
#include "lib/payload.h"

#include <check.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "unit.h"

/* len bytes of a pattern that depends on seed. */
static char *
pattern(size_t len, unsigned seed)
{
    static char buf[1 << 16];
    ck_assert_uint_le(len, sizeof buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)((i * 7 + seed) % 251);
    return buf;
}

START_TEST(test_small_is_a_plain_copy)
{
    size_t live = payload_shared_live();
    char *src = pattern(PAYLOAD_SHARE_MIN - 1, 1);
    char *p = payload_new(src, PAYLOAD_SHARE_MIN - 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_ne(p, src);
    ck_assert_mem_eq(p, src, PAYLOAD_SHARE_MIN - 1);
    ck_assert(!payload_shared(PAYLOAD_SHARE_MIN - 1));
    ck_assert_uint_eq(payload_shared_live(), live);
    payload_free(p, PAYLOAD_SHARE_MIN - 1);
    payload_free(NULL, 0);
}
END_TEST

START_TEST(test_large_is_counted)
{
    size_t live = payload_shared_live();
    size_t len = PAYLOAD_SHARE_MIN;
    char *p = payload_new(pattern(len, 2), len);
    ck_assert_ptr_nonnull(p);
    ck_assert(payload_shared(len));
    ck_assert_uint_eq(payload_shared_live(), live + 1);
    /* Two more holders: the bytes live until the last lets go. */
    payload_ref(p);
    payload_ref(p);
    payload_free(p, len); /* the job goes away */
    ck_assert_uint_eq(payload_shared_live(), live + 1);
    ck_assert_mem_eq(p, pattern(len, 2), len);
    payload_release(p, len, NULL);
    ck_assert_uint_eq(payload_shared_live(), live + 1);
    payload_release(p, len, NULL);
    ck_assert_uint_eq(payload_shared_live(), live);
}
END_TEST

START_TEST(test_alignment)
{
    /* The bytes of a shared payload start max_align_t-aligned, as a plain
     * allocation's do. */
    for (size_t len = PAYLOAD_SHARE_MIN; len < PAYLOAD_SHARE_MIN + 64; len += 7) {
        char *p = payload_new(pattern(len, 3), len);
        ck_assert_uint_eq((uintptr_t)p % alignof(max_align_t), 0);
        payload_free(p, len);
    }
}
END_TEST

/* The path the server takes: a reference added to an output buffer keeps
 * the bytes after the job frees them; draining the buffer releases them. */
START_TEST(test_evbuffer_reference)
{
    size_t live = payload_shared_live();
    size_t len = 40000;
    char *p = payload_new(pattern(len, 4), len);
    struct evbuffer *out = evbuffer_new();
    for (int i = 0; i < 3; i++) {
        payload_ref(p);
        ck_assert_int_eq(evbuffer_add_reference(out, p, len, payload_release, NULL), 0);
    }
    payload_free(p, len); /* the job is deleted while its lease reply waits */
    ck_assert_uint_eq(payload_shared_live(), live + 1);
    ck_assert_uint_eq(evbuffer_get_length(out), 3 * len);

    /* Moving the chains to another buffer (held replies) keeps them. */
    struct evbuffer *sock = evbuffer_new();
    evbuffer_add_buffer(sock, out);
    ck_assert_uint_eq(payload_shared_live(), live + 1);

    static char got[40000];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(evbuffer_remove(sock, got, len), (int)len);
        ck_assert_mem_eq(got, pattern(len, 4), len);
    }
    ck_assert_uint_eq(payload_shared_live(), live);
    evbuffer_free(out);
    evbuffer_free(sock);
}
END_TEST

START_TEST(test_freed_buffer_releases)
{
    size_t live = payload_shared_live();
    size_t len = 5000;
    char *p = payload_new(pattern(len, 5), len);
    struct evbuffer *out = evbuffer_new();
    payload_ref(p);
    evbuffer_add_reference(out, p, len, payload_release, NULL);
    payload_free(p, len);
    /* A connection closed with the reply unsent frees its buffer. */
    evbuffer_free(out);
    ck_assert_uint_eq(payload_shared_live(), live);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"small", test_small_is_a_plain_copy},
        {"large", test_large_is_counted},
        {"alignment", test_alignment},
        {"evbuffer", test_evbuffer_reference},
        {"freed_buffer", test_freed_buffer_releases},
    };
    return unit_run(unit_suite("payload", cases, WQ_ARRAY_LEN(cases)), NULL);
}
