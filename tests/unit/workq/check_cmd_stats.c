/* check_cmd_stats.c - unit tests for the Workq commands' outcomes
 * (src/workq/cmd_stats.c); their series are checked with the exposition
 * (tests/unit/http/check_metrics.c). */
#include "lib/wq.h"
#include "workq/cmd_stats.h"

#include <check.h>

#include "unit.h"

START_TEST(test_outcome_of)
{
    ck_assert_int_eq(stats_outcome_of("+OK\r\n", 5), STATS_OK);
    ck_assert_int_eq(stats_outcome_of("+OK 1\r\n", 7), STATS_OK);
    ck_assert_int_eq(stats_outcome_of("-TIMEOUT\r\n", 10), STATS_TIMEOUT);
    ck_assert_int_eq(stats_outcome_of("-NOT-FOUND\r\n", 12), STATS_NOT_FOUND);
    ck_assert_int_eq(stats_outcome_of("-CLIENT-ERROR ", 14), STATS_CLIENT_ERROR);
    ck_assert_int_eq(stats_outcome_of("-CLIENT-ERROR", 13), STATS_CLIENT_ERROR);
    ck_assert_int_eq(stats_outcome_of("-SERVER-ERROR Out of memory\r\n", 29), STATS_SERVER_ERROR);
    /* a word that only starts the same is not it */
    ck_assert_int_eq(stats_outcome_of("-TIMEOUTS\r\n", 11), STATS_SERVER_ERROR);
    ck_assert_int_eq(stats_outcome_of("", 0), STATS_SERVER_ERROR);
    ck_assert_str_eq(stats_outcome_name(STATS_NOT_FOUND), "not_found");
    ck_assert_str_eq(stats_outcome_name(STATS_ABANDONED), "abandoned");
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"outcome", test_outcome_of},
    };
    return unit_run(unit_suite("cmd_stats", cases, WQ_ARRAY_LEN(cases)), NULL);
}
