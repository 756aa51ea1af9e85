/* check_pool.c - unit tests for the fixed-size object pools (src/lib/pool.c).
 * Objects are filled with a pattern naming their owner and checked later,
 * so overlapping objects or a free list that writes into live objects show
 * up as changed bytes (and, under ASan or valgrind, as bad accesses). */
#include "lib/wq.h"
#include "lib/pool.h"

#include <check.h>
#include <signal.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include "unit.h"

static void
fill(void *obj, size_t size, size_t tag)
{
    memset(obj, (int)(tag * 31 % 251 + 1), size);
}

static bool
filled(const void *obj, size_t size, size_t tag)
{
    const unsigned char *p = obj;
    for (size_t i = 0; i < size; i++) {
        if (p[i] != (unsigned char)(tag * 31 % 251 + 1))
            return false;
    }
    return true;
}

static int
ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

/* The alignment a type of `size` bytes can need: the largest power of two
 * dividing it, up to max_align_t. */
static size_t
obj_align(size_t size)
{
    return WQ_MIN(size & -size, alignof(max_align_t));
}

/* Get n objects of `size` bytes from p and check they are aligned, distinct
 * and do not overlap; each is filled with its tag. */
static void **
get_many(struct pool *p, size_t n, size_t size)
{
    void **objs = malloc(n * sizeof *objs);
    ck_assert_ptr_nonnull(objs);
    for (size_t i = 0; i < n; i++) {
        objs[i] = pool_get(p);
        REQUIRE(objs[i] != NULL);
        REQUIRE((uintptr_t)objs[i] % obj_align(p->obj_size) == 0);
        fill(objs[i], size, i);
    }
    void **sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, objs, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, ptr_cmp);
    for (size_t i = 1; i < n; i++)
        REQUIRE((uintptr_t)sorted[i] - (uintptr_t)sorted[i - 1] >= size);
    free(sorted);
    for (size_t i = 0; i < n; i++)
        REQUIRE(filled(objs[i], size, i));
    return objs;
}

START_TEST(test_distinct_aligned)
{
    static const size_t sizes[] = {1, 7, 8, 15, 16, 17, 24, 33, 88, 100, 1000, 4097};
    for (size_t s = 0; s < WQ_ARRAY_LEN(sizes); s++) {
        struct pool p;
        pool_init(&p, sizes[s], 64);
        ck_assert_uint_ge(p.obj_size, sizes[s]);
        size_t word = alignof(void *);
        ck_assert_uint_eq(p.obj_size, WQ_MAX((sizes[s] + word - 1) / word * word, sizeof(void *)));
        void **objs = get_many(&p, 300, sizes[s]);
        ck_assert_uint_eq(p.in_use, 300);
        free(objs);
        pool_clear(&p);
    }
}
END_TEST

START_TEST(test_put_then_get_reuses)
{
    struct pool p;
    pool_init(&p, 48, 16);
    void *a = pool_get(&p);
    pool_put(&p, a);
    ck_assert_ptr_eq(pool_get(&p), a);

    /* Put back a set: the next gets hand out exactly that set before any
     * new object is cut. */
    void **objs = get_many(&p, 40, 48);
    void *put[10];
    for (size_t i = 0; i < 10; i++) {
        put[i] = objs[i * 4];
        pool_put(&p, put[i]);
    }
    for (size_t i = 0; i < 10; i++) {
        void *o = pool_get(&p);
        bool known = false;
        for (size_t j = 0; j < 10; j++) {
            if (put[j] == o) {
                known = true;
                put[j] = NULL; /* each one once */
            }
        }
        ck_assert_msg(known, "object %zu was not one of those put back", i);
        fill(o, 48, 1000 + i);
    }
    /* Objects never put back kept their contents. */
    for (size_t i = 0; i < 40; i++) {
        if (i % 4 != 0)
            ck_assert(filled(objs[i], 48, i));
    }
    /* A fresh object is none of the 41 in use (a and the 40). */
    void *fresh = pool_get(&p);
    ck_assert_ptr_ne(fresh, a);
    for (size_t i = 0; i < 40; i++)
        ck_assert_ptr_ne(fresh, objs[i]);
    free(objs);
    pool_clear(&p);
}
END_TEST

START_TEST(test_in_use_count)
{
    struct pool p;
    pool_init(&p, 32, 8);
    ck_assert_uint_eq(p.in_use, 0);
    void *objs[20];
    for (size_t i = 0; i < 20; i++) {
        objs[i] = pool_get(&p);
        ck_assert_uint_eq(p.in_use, i + 1);
    }
    for (size_t i = 0; i < 20; i += 2) {
        pool_put(&p, objs[i]);
        ck_assert_uint_eq(p.in_use, 20 - i / 2 - 1);
    }
    pool_put(&p, NULL); /* ignored */
    ck_assert_uint_eq(p.in_use, 10);
    for (size_t i = 0; i < 10; i++)
        objs[i * 2] = pool_get(&p);
    ck_assert_uint_eq(p.in_use, 20);
    for (size_t i = 0; i < 20; i++)
        pool_put(&p, objs[i]);
    ck_assert_uint_eq(p.in_use, 0);
    pool_clear(&p);
}
END_TEST

START_TEST(test_many_blocks)
{
    /* Tiny blocks (1, 2, 3 objects) force a new block every few gets; a
     * per_block of 0 means 1.  Objects from different blocks never overlap,
     * and churn across blocks keeps the contents of live objects intact. */
    static const size_t per[] = {0, 1, 2, 3, 7};
    for (size_t k = 0; k < WQ_ARRAY_LEN(per); k++) {
        const size_t n = 2000, size = 40;
        struct pool p;
        pool_init(&p, size, per[k]);
        void **objs = get_many(&p, n, size);
        /* Put back every third, get as many again, verify everything. */
        for (size_t i = 0; i < n; i += 3)
            pool_put(&p, objs[i]);
        for (size_t i = 0; i < n; i += 3) {
            objs[i] = pool_get(&p);
            fill(objs[i], size, i);
        }
        REQUIRE(p.in_use == n);
        for (size_t i = 0; i < n; i++)
            REQUIRE(filled(objs[i], size, i));
        free(objs);
        pool_clear(&p);
    }
}
END_TEST

START_TEST(test_clear_then_reuse)
{
    struct pool p;
    pool_init(&p, 24, 10);
    size_t obj_size = p.obj_size;
    void **objs = get_many(&p, 95, 24); /* ten blocks */
    free(objs);
    pool_clear(&p);
    ck_assert_uint_eq(p.in_use, 0);
    ck_assert_uint_eq(p.obj_size, obj_size);
    ck_assert_ptr_null(p.open);
    ck_assert_ptr_null(p.full);
    ck_assert_uint_eq(p.blocks, 0);

    /* The cleared pool works as new, with the same object size. */
    objs = get_many(&p, 95, 24);
    ck_assert_uint_eq(p.in_use, 95);
    for (size_t i = 0; i < 95; i++)
        pool_put(&p, objs[i]);
    free(objs);
    pool_clear(&p);
    pool_clear(&p); /* twice is harmless */
    ck_assert_uint_eq(p.in_use, 0);
}
END_TEST

/* Blocks whose objects all came back are given back to the allocator,
 * except one to take from; live objects keep their blocks and contents. */
START_TEST(test_empty_blocks_released)
{
    const size_t n = 5000, size = 88;
    struct pool p;
    pool_init(&p, size, 64);
    ck_assert_uint_ge(p.per_block, 64);
    void **objs = get_many(&p, n, size);
    size_t full = (n + p.per_block - 1) / p.per_block;
    ck_assert_uint_eq(p.blocks, full);
    /* every object is inside the block its address masks to */
    for (size_t i = 0; i < n; i++)
        REQUIRE((uintptr_t)objs[i] % p.block_size + size <= p.block_size);
    /* put back all but every 1000th: the blocks holding those stay */
    for (size_t i = 0; i < n; i++)
        if (i % 1000 != 0)
            pool_put(&p, objs[i]);
    ck_assert_uint_le(p.blocks, 5 + 1);
    for (size_t i = 0; i < n; i += 1000)
        REQUIRE(filled(objs[i], size, i));
    for (size_t i = 0; i < n; i += 1000)
        pool_put(&p, objs[i]);
    ck_assert_uint_eq(p.in_use, 0);
    ck_assert_uint_eq(p.blocks, 1);
    /* and the pool grows again as before */
    free(objs);
    objs = get_many(&p, n, size);
    ck_assert_uint_eq(p.blocks, full);
    for (size_t i = 0; i < n; i++)
        pool_put(&p, objs[i]);
    ck_assert_uint_eq(p.blocks, 1);
    free(objs);
    pool_clear(&p);
    ck_assert_uint_eq(p.blocks, 0);
}
END_TEST

/* Clearing a pool with objects still out frees every block (full ones
 * too: LeakSanitizer and valgrind would tell). */
START_TEST(test_clear_with_objects_out)
{
    struct pool p;
    pool_init(&p, 40, 10);
    void **objs = get_many(&p, 3 * p.per_block + 1, 40);
    free(objs);
    pool_clear(&p);
    ck_assert_uint_eq(p.blocks, 0);
    ck_assert_uint_eq(p.in_use, 0);
}
END_TEST

START_TEST(test_smaller_than_pointer)
{
    /* 1- and 2-byte objects still hold the free-list link while free, and
     * writing all their bytes while in use does not break the list. */
    static const size_t sizes[] = {1, 2, sizeof(void *) - 1};
    for (size_t s = 0; s < WQ_ARRAY_LEN(sizes); s++) {
        struct pool p;
        pool_init(&p, sizes[s], 5);
        ck_assert_uint_ge(p.obj_size, sizeof(void *));
        void **objs = get_many(&p, 100, sizes[s]);
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < 100; i += 2)
                pool_put(&p, objs[i]);
            for (size_t i = 0; i < 100; i += 2) {
                objs[i] = pool_get(&p);
                fill(objs[i], sizes[s], i);
            }
            for (size_t i = 0; i < 100; i++)
                REQUIRE(filled(objs[i], sizes[s], i));
        }
        void **sorted = malloc(100 * sizeof *sorted);
        memcpy(sorted, objs, 100 * sizeof *sorted);
        qsort(sorted, 100, sizeof *sorted, ptr_cmp);
        for (size_t i = 1; i < 100; i++)
            ck_assert_ptr_ne(sorted[i], sorted[i - 1]);
        free(sorted);
        free(objs);
        pool_clear(&p);
    }
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
#define WQ_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WQ_TEST_SANITIZED 1
#endif
#endif

#ifndef WQ_TEST_SANITIZED
/* A pool that cannot get a block aborts with a log line (pool objects are
 * internal: callers never see NULL).  A block of 2^60 bytes fails at once.
 * Sanitizer builds report such an allocation themselves instead of
 * returning NULL, so the case runs only without them. */
START_TEST(test_exhausted_aborts)
{
    struct pool p;
    pool_init(&p, (size_t)1 << 40, (size_t)1 << 20);
    pool_get(&p);
    ck_abort_msg("pool_get returned without memory");
}
END_TEST
#endif

static Suite *
pool_suite(void)
{
    const struct unit_case cases[] = {
        {"distinct_aligned", test_distinct_aligned},
        {"put_then_get_reuses", test_put_then_get_reuses},
        {"empty_blocks_released", test_empty_blocks_released},
        {"clear_with_objects_out", test_clear_with_objects_out},
        {"in_use_count", test_in_use_count},
        {"many_blocks", test_many_blocks},
        {"clear_then_reuse", test_clear_then_reuse},
        {"smaller_than_pointer", test_smaller_than_pointer},
    };
    Suite *s = unit_suite("pool", cases, WQ_ARRAY_LEN(cases));
#ifndef WQ_TEST_SANITIZED
    TCase *tc = tcase_create("exhausted_aborts");
    tcase_add_test_raise_signal(tc, test_exhausted_aborts, SIGABRT);
    suite_add_tcase(s, tc);
#endif
    return s;
}

int
main(void)
{
    return unit_run(pool_suite(), NULL);
}
