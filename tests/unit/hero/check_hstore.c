/* check_hstore.c - unit tests for src/hero/hstore.c: hashes in the order
 * their fields were first set (small and indexed), lists against a model
 * under random pushes, pops, removals and trims, expiry (found late, or
 * fired by the wheel), stable scan cursors, and the byte count back to 0
 * once every key is gone. */
#include "lib/wq.h"
#include "hero/hstore.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "unit.h"

static uint64_t bytes;
static struct hstore *s;
static int expired;

static void
on_expired(struct hkey *k, void *arg)
{
    (void)k;
    (void)arg;
    expired++;
}

static void
setup(void)
{
    bytes = 0;
    expired = 0;
    s = hstore_new(1000, &bytes, on_expired, NULL);
}

static void
teardown(void)
{
    /* every key deleted, the count is back to 0 */
    for (struct hkey *k = hstore_scan(s, 0); k != NULL; k = hstore_scan(s, 0))
        hstore_delete(s, k);
    ck_assert_uint_eq(bytes, 0);
    hstore_free(s);
}

static struct hkey *
key(const char *name, enum hkey_type type)
{
    struct hkey *k = hstore_find(s, name, strlen(name), 1000);
    return k != NULL ? k : hstore_create(s, name, strlen(name), type);
}

static bool
val_is(const struct hval *v, const char *text)
{
    return v != NULL && v->len == strlen(text) && (v->len == 0 || memcmp(v->p, text, v->len) == 0);
}

START_TEST(test_hash)
{
    struct hkey *k = key("hero:job:1", HKEY_HASH);
    ck_assert_int_eq(hhash_set(s, k, "status", 6, "dispatched", 10), 1);
    ck_assert_int_eq(hhash_set(s, k, "id", 2, "1", 1), 1);
    ck_assert_int_eq(hhash_set(s, k, "empty", 5, "", 0), 1);
    ck_assert_int_eq(hhash_set(s, k, "status", 6, "started", 7), 0);
    ck_assert_uint_eq(hhash_len(k), 3);
    ck_assert(val_is(hhash_get(k, "status", 6), "started"));
    ck_assert(val_is(hhash_get(k, "empty", 5), ""));
    ck_assert_ptr_null(hhash_get(k, "nope", 4));
    /* insertion order, a replaced value keeping its place */
    ck_assert(hhash_at(k, 0)->len == 6 && memcmp(hhash_at(k, 0)->name, "status", 6) == 0);
    ck_assert_uint_eq(hhash_at(k, 1)->len, 2);
    ck_assert(!hhash_del(s, k, "nope", 4));
    ck_assert(hhash_del(s, k, "status", 6));
    ck_assert_uint_eq(hhash_len(k), 2);
    ck_assert(val_is(&hhash_at(k, 0)->value, "1"));
    /* past the linear search: an index, the order kept */
    char name[16];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "f%d", i);
        ck_assert_int_eq(hhash_set(s, k, name, strlen(name), name, strlen(name)), 1);
    }
    ck_assert_int_eq(hhash_set(s, k, "f7", 2, "seven", 5), 0);
    ck_assert(val_is(hhash_get(k, "f7", 2), "seven"));
    ck_assert(hhash_del(s, k, "f50", 3));
    ck_assert_ptr_null(hhash_get(k, "f50", 3));
    ck_assert(val_is(hhash_get(k, "f99", 3), "f99"));
    ck_assert_uint_eq(hhash_len(k), 101);
    ck_assert(val_is(&hhash_at(k, 2)->value, "f0"));
    ck_assert(val_is(&hhash_at(k, 100)->value, "f99"));
    ck_assert_uint_gt(bytes, 0);
}
END_TEST

/* The model: a plain array of small integers, pushed as their decimal
 * text. */
struct model {
    int v[4096];
    int n;
};

static void
model_check(const struct model *m, const struct hkey *k)
{
    ck_assert_uint_eq(hlst_len(k), (uint32_t)m->n);
    for (int i = 0; i < m->n; i++) {
        char text[16];
        snprintf(text, sizeof text, "%d", m->v[i]);
        ck_assert_msg(val_is(hlst_at(k, (uint32_t)i), text), "index %d", i);
    }
}

START_TEST(test_list_model)
{
    rng_seed(7);
    struct model m = {.n = 0};
    struct hkey *k = key("hero:work_queue:w", HKEY_LIST);
    for (int op = 0; op < 20000; op++) {
        int x = (int)rng_below(20);
        char text[16];
        snprintf(text, sizeof text, "%d", x);
        switch (rng_below(9)) {
        case 0:
        case 1: /* LPUSH */
            if (m.n == 4096)
                break;
            memmove(m.v + 1, m.v, (size_t)m.n * sizeof m.v[0]);
            m.v[0] = x;
            m.n++;
            ck_assert_int_eq(hlst_push(s, k, true, text, strlen(text), 0), 0);
            break;
        case 2:
        case 3: /* RPUSH */
            if (m.n == 4096)
                break;
            m.v[m.n++] = x;
            ck_assert_int_eq(hlst_push(s, k, false, text, strlen(text), 0), 0);
            break;
        case 4: { /* LPOP or RPOP */
            if (m.n == 0)
                break;
            bool left = rng_below(2) == 0;
            int want = left ? m.v[0] : m.v[m.n - 1];
            if (left)
                memmove(m.v, m.v + 1, (size_t)(m.n - 1) * sizeof m.v[0]);
            m.n--;
            struct hval v = hlst_pop(s, k, left);
            snprintf(text, sizeof text, "%d", want);
            ck_assert(val_is(&v, text));
            hstore_val_free(v);
            break;
        }
        case 5: { /* LREM count x */
            int64_t count = (int64_t)rng_below(5) - 2;
            uint64_t limit = count == 0 ? UINT64_MAX : (uint64_t)(count < 0 ? -count : count);
            bool gone[4096] = {false};
            uint32_t want = 0;
            for (int j = 0; j < m.n && want < limit; j++) {
                int i = count < 0 ? m.n - 1 - j : j;
                if (m.v[i] == x) {
                    gone[i] = true;
                    want++;
                }
            }
            int out = 0;
            for (int i = 0; i < m.n; i++)
                if (!gone[i])
                    m.v[out++] = m.v[i];
            m.n = out;
            ck_assert_uint_eq(hlst_rem(s, k, count, text, strlen(text), NULL, NULL), want);
            break;
        }
        case 6: /* LTRIM of a few at either end, now and then */
            if (m.n > 40 && rng_below(10) == 0) {
                uint32_t start = (uint32_t)rng_below(5);
                uint32_t stop = (uint32_t)m.n - 1 - (uint32_t)rng_below(5);
                memmove(m.v, m.v + start, (stop - start + 1) * sizeof m.v[0]);
                m.n = (int)(stop - start + 1);
                hlst_trim(s, k, start, stop, NULL, NULL);
            }
            break;
        case 7: /* an element from the middle, found by its number */
            if (m.n > 0 && rng_below(3) == 0) {
                uint32_t i = (uint32_t)rng_below((uint64_t)m.n);
                uint64_t seq = hlst_at(k, i)->seq;
                ck_assert_uint_eq(hlst_find_seq(k, seq), i);
                struct hval v = hlst_take(s, k, i);
                snprintf(text, sizeof text, "%d", m.v[i]);
                ck_assert(val_is(&v, text));
                ck_assert_uint_eq(v.seq, seq);
                hstore_val_free(v);
                memmove(m.v + i, m.v + i + 1, (size_t)(m.n - (int)i - 1) * sizeof m.v[0]);
                m.n--;
                ck_assert_uint_eq(hlst_find_seq(k, seq), (uint32_t)m.n);
                break;
            }
            /* fall through */
        default:
            model_check(&m, k);
            break;
        }
    }
    model_check(&m, k);
}
END_TEST

START_TEST(test_expiry)
{
    struct hkey *k = key("hero:a", HKEY_LIST);
    ck_assert_int_eq(hlst_push(s, k, true, "x", 1, 0), 0);
    hstore_set_expiry(s, k, 1500);
    key("hero:b", HKEY_HASH);
    struct hkey *c = key("hero:c", HKEY_HASH);
    ck_assert_int_eq(hhash_set(s, c, "f", 1, "v", 1), 1);
    hstore_set_expiry(s, c, 1200);
    hstore_set_expiry(s, c, 0); /* persisted */
    ck_assert_uint_le(hstore_next_event(s), 1500);
    /* found after its time: gone, and reported */
    ck_assert_ptr_nonnull(hstore_find(s, "hero:a", 6, 1499));
    ck_assert_ptr_null(hstore_find(s, "hero:a", 6, 1500));
    ck_assert_int_eq(expired, 1);
    /* or fired by the wheel */
    k = key("hero:d", HKEY_LIST);
    ck_assert_int_eq(hlst_push(s, k, true, "y", 1, 0), 0);
    hstore_set_expiry(s, k, 3000);
    hstore_advance(s, 2999);
    ck_assert_uint_eq(hstore_count(s), 3);
    hstore_advance(s, 3000);
    ck_assert_int_eq(expired, 2);
    ck_assert_uint_eq(hstore_count(s), 2);
    ck_assert_uint_eq(hstore_next_event(s), WHEEL_NEVER);
}
END_TEST

/* A scan resumed from a cursor finds every key that was there all along,
 * once, while keys come and go between its steps. */
START_TEST(test_scan)
{
    enum { N = 500 };
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "hero:k%d", i);
        key(name, HKEY_HASH);
    }
    int seen[N] = {0};
    uint64_t cursor = 0;
    int steps = 0, extra = 0;
    do {
        struct hkey *k = hstore_scan(s, cursor);
        for (int i = 0; i < 7 && k != NULL; i++, k = hstore_scan_next(s, k)) {
            char text[32] = "";
            int n;
            memcpy(text, k->key, WQ_MIN(k->len, sizeof text - 1));
            if (sscanf(text, "hero:k%d", &n) == 1)
                seen[n]++;
        }
        cursor = k != NULL ? hstore_cursor(k) : 0;
        /* churn: new keys, and the ones of the extra range deleted */
        snprintf(name, sizeof name, "hero:x%d", extra++);
        key(name, HKEY_LIST);
        if (extra % 2 == 0) {
            snprintf(name, sizeof name, "hero:x%d", extra - 2);
            hstore_delete(s, hstore_find(s, name, strlen(name), 1000));
        }
        steps++;
    } while (cursor != 0);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
    ck_assert_int_ge(steps, N / 7);
}
END_TEST

/* The scan table halves as keys go and doubles as they come, between two
 * steps of a scan: the keys there all along are still found once each,
 * and the walk from cursor 0 visits the keys in the order of their
 * cursors. */
START_TEST(test_scan_resize)
{
    enum { N = 3000, KEEP = 20 };
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "hero:k%d", i);
        key(name, HKEY_HASH);
    }
    int seen[N] = {0};
    uint64_t cursor = 0;
    int steps = 0;
    do {
        struct hkey *k = hstore_scan(s, cursor);
        for (int i = 0; i < 50 && k != NULL; i++, k = hstore_scan_next(s, k)) {
            int n;
            char text[32] = "";
            memcpy(text, k->key, WQ_MIN(k->len, sizeof text - 1));
            if (sscanf(text, "hero:k%d", &n) == 1)
                seen[n]++;
        }
        cursor = k != NULL ? hstore_cursor(k) : 0;
        steps++;
        if (steps == 10) { /* shrink: only every KEEP-th key stays */
            for (int i = 0; i < N; i++) {
                snprintf(name, sizeof name, "hero:k%d", i);
                struct hkey *d = hstore_find(s, name, strlen(name), 1000);
                if (i % KEEP != 0)
                    hstore_delete(s, d);
            }
        } else if (steps == 12) { /* grow again */
            for (int i = 0; i < 4 * N; i++) {
                snprintf(name, sizeof name, "hero:y%d", i);
                key(name, HKEY_LIST);
            }
        }
    } while (cursor != 0);
    for (int i = 0; i < N; i += KEEP)
        ck_assert_int_eq(seen[i], 1);
    uint64_t last = 0;
    size_t walked = 0;
    for (struct hkey *k = hstore_scan(s, 0); k != NULL; k = hstore_scan_next(s, k)) {
        ck_assert_uint_ge(hstore_cursor(k), last);
        last = hstore_cursor(k);
        walked++;
    }
    ck_assert_uint_eq(walked, hstore_count(s));
    ck_assert_uint_eq(walked, N / KEEP + 4 * N);
}
END_TEST

/* A store freed with its keys in it frees every one (leak checkers see
 * the rest). */
START_TEST(test_free_full)
{
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "hero:k%d", i);
        struct hkey *k = key(name, i % 2 ? HKEY_HASH : HKEY_LIST);
        if (i % 2)
            ck_assert_int_eq(hhash_set(s, k, "f", 1, "v", 1), 1);
        else
            hstore_set_expiry(s, k, 5000 + (uint64_t)i);
    }
    hstore_free(s);
    ck_assert_uint_gt(bytes, 0); /* the store counted into its own */
    bytes = 0;
    s = hstore_new(1000, &bytes, on_expired, NULL);
}
END_TEST

static Suite *
hstore_suite(void)
{
    const struct unit_case cases[] = {
        {"hash", test_hash}, {"list_model", test_list_model},   {"expiry", test_expiry},
        {"scan", test_scan}, {"scan_resize", test_scan_resize}, {"free_full", test_free_full},
    };
    return unit_suite_fixture("hstore", cases, WQ_ARRAY_LEN(cases), setup, teardown);
}

int
main(void)
{
    return unit_run(hstore_suite(), NULL);
}
