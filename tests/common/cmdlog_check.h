/* cmdlog_check.h - what the command-log unit tests (check_cmdlog_codec.c,
 * check_cmdlog_files.c, check_cmdlog_reader.c) share: their fake time, the
 * reference reader's sizes checked against src's, and a scratch directory
 * for segment files. */
#ifndef WQ_TESTS_CMDLOG_CHECK_H
#define WQ_TESTS_CMDLOG_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/cmdlog_codec.h"
#include "store/cmdlog_reader.h"
#include "cmdlog_ref.h"
#include "lib/jobid.h"
#include "unit.h"

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

/* A temporary directory holding segment files. */
struct tdir {
    char path[256];
    int fd;
};

/* Make one, $TMPDIR/wq-TAG-XXXXXX (or under /tmp). */
static inline void
tdir_open(struct tdir *d, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/wq-%s-XXXXXX", tmp != NULL ? tmp : "/tmp", tag);
    REQUIRE(mkdtemp(d->path) != NULL);
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(d->fd >= 0);
}

/* Remove it with what it holds (files, links, FIFOs, empty directories). */
static inline void
tdir_close(struct tdir *d)
{
    DIR *dir = opendir(d->path);
    REQUIRE(dir != NULL);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(d->fd, de->d_name, 0) != 0)
            REQUIRE(errno == EISDIR && unlinkat(d->fd, de->d_name, AT_REMOVEDIR) == 0);
    }
    closedir(dir);
    close(d->fd);
    REQUIRE(rmdir(d->path) == 0);
}

/* Segment seg in dirfd reads as one record, then damage at file offset
 * off, its buffer no larger for the length the damage claims. */
static inline void
expect_record_then_damage(int dirfd, uint64_t seg, uint64_t off)
{
    struct cmdlog_reader rd;
    ck_assert_int_eq(cmdlog_reader_open(&rd, dirfd, seg), 0);
    size_t cap = rd.cap;
    struct cmdlog_rec r;
    const uint8_t *bytes;
    size_t len;
    uint64_t at;
    ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &len, &at), CMDLOG_READ_REC);
    ck_assert_int_eq(cmdlog_reader_next(&rd, &r, &bytes, &len, &at), CMDLOG_READ_DAMAGED);
    ck_assert_uint_eq(rd.off, off);
    ck_assert_uint_eq(rd.cap, cap);
    cmdlog_reader_close(&rd);
}

#endif /* WQ_TESTS_CMDLOG_CHECK_H */
