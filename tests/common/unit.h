/* unit.h - what every unit-test binary shares: a suite of one test case per
 * test, the runner main() returns, REQUIRE for hot loops, and
 * RUNNING_ON_VALGRIND (0 without valgrind's header). */
#ifndef WQ_TESTS_UNIT_H
#define WQ_TESTS_UNIT_H

#include <check.h>
#include <stddef.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
/* Without valgrind's header, tests take the sizes meant for native runs. */
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* check's ck_assert_* records a mark point (a write to a file) even when it
 * passes; loops that check many facts test first and call check only to
 * report a failure. */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("failed: %s", #cond);                                                     \
    } while (0)

struct unit_case {
    const char *name;
    const TTest *test;
};

/* A suite named name with one test case (60 s timeout) per case, each run
 * between setup and teardown when they are not NULL. */
static inline Suite *
unit_suite_fixture(const char *name, const struct unit_case *cases, size_t n, SFun setup,
                   SFun teardown)
{
    Suite *s = suite_create(name);
    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        if (setup != NULL || teardown != NULL)
            tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

/* The same without a fixture. */
static inline Suite *
unit_suite(const char *name, const struct unit_case *cases, size_t n)
{
    return unit_suite_fixture(name, cases, n, NULL, NULL);
}

/* Run s (and more, if not NULL); main's exit status. */
static inline int
unit_run(Suite *s, Suite *more)
{
    SRunner *sr = srunner_create(s);
    if (more != NULL)
        srunner_add_suite(sr, more);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

#endif /* WQ_TESTS_UNIT_H */
