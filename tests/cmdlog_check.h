/* cmdlog_check.h - what the command-log unit tests (check_cmdlog_codec.c,
 * check_cmdlog_files.c) share: their fake time, and the reference reader's
 * sizes checked against src's. */
#ifndef WQ_TESTS_CMDLOG_CHECK_H
#define WQ_TESTS_CMDLOG_CHECK_H

#include "cmdlog_codec.h"
#include "cmdlog_ref.h"
#include "jobid.h"

/* A fake "now" (2023-11-14T22:13:20Z) and a long TTL. */
#define NOW      1700000000000LL
#define HOUR     3600000LL
#define TTL_LONG ((uint64_t)HOUR * 24 * 365)

_Static_assert(REF_ID_LEN == JOBID_LEN, "id sizes differ");
_Static_assert(REF_TIME_LEN == CMDLOG_TIME_LEN, "time sizes differ");
_Static_assert(REF_HEADER_LEN == CMDLOG_HEADER_LEN, "header sizes differ");

/* The id of job number n, as the reference writer makes it. */
static inline void
id_of(uint64_t n, uint8_t id[JOBID_LEN])
{
    ref_id(id, n);
}

#endif /* WQ_TESTS_CMDLOG_CHECK_H */
