/* check_jobid.c - unit tests for job ids (src/lib/jobid.c): the canonical form
 * in either case, every malformed one refused, and format then parse giving
 * the same 16 bytes back. */
#include "lib/wq.h"
#include "lib/jobid.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"
#include "unit.h"

static int
pid_str(const char *s, uint8_t id[JOBID_LEN])
{
    return jobid_parse(s, strlen(s), id);
}

START_TEST(test_jobid_parse_canonical)
{
    static const uint8_t want[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                     0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    static const char *const forms[] = {
        "00112233-4455-6677-8899-aabbccddeeff",
        "00112233-4455-6677-8899-AABBCCDDEEFF",
        "00112233-4455-6677-8899-AaBbCcDdEeFf",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(forms); i++) {
        uint8_t id[JOBID_LEN];
        ck_assert_msg(pid_str(forms[i], id) == 0, "rejected %s", forms[i]);
        ck_assert_mem_eq(id, want, 16);
        char text[JOBID_TEXT_LEN + 1];
        jobid_format(id, text);
        ck_assert_str_eq(text, forms[0]);
    }
    /* Any version: v1 (time-based), v4, v7, and odd ones. */
    static const char *const any[] = {
        "6ba7b810-9dad-11d1-80b4-00c04fd430c4", "3f1e4c2a-9b7d-4e8f-a1b2-c3d4e5f60718",
        "018f6b6e-4a3c-7d2e-9f10-112233445566", "00000000-0000-0000-0000-000000000001",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(any); i++) {
        uint8_t id[JOBID_LEN];
        char text[JOBID_TEXT_LEN + 1];
        ck_assert_msg(pid_str(any[i], id) == 0, "rejected %s", any[i]);
        jobid_format(id, text);
        ck_assert_str_eq(text, any[i]);
    }
    /* Only s[0..len) is read. */
    uint8_t id[JOBID_LEN];
    ck_assert_int_eq(jobid_parse("6ba7b810-9dad-11d1-80b4-00c04fd430c4 rest", 36, id), 0);
    ck_assert_int_eq(jobid_parse("6ba7b810-9dad-11d1-80b4-00c04fd430c4", 35, id), -1);
}
END_TEST

START_TEST(test_jobid_parse_invalid)
{
    static const char *const bad[] = {
        "",
        "00000000-0000-0000-0000-000000000000",  /* nil */
        "6ba7b810-9dad-11d1-80b4-00c04fd430c",   /* 35 */
        "6ba7b810-9dad-11d1-80b4-00c04fd430c4a", /* 37 */
        "6ba7b810-9dad-11d1-80b4-00c04fd430c4\n",
        " 6ba7b810-9dad-11d1-80b4-00c04fd430c4",
        "{6ba7b810-9dad-11d1-80b4-00c04fd430c4}",
        "urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c4",
        "6ba7b8109dad11d180b400c04fd430c4",     /* no dashes */
        "6ba7b8109-dad-11d1-80b4-00c04fd430c4", /* dash moved */
        "6ba7b810-9dad1-1d1-80b4-00c04fd430c4",
        "6ba7b810-9dad-11d18-0b4-00c04fd430c4",
        "6ba7b810-9dad-11d1-80b40-0c04fd430c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd430-4",
        "6ba7b810_9dad_11d1_80b4_00c04fd430c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd430cg", /* non-hex */
        "6ba7b81G-9dad-11d1-80b4-00c04fd430c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c ",
        "+ba7b810-9dad-11d1-80b4-00c04fd430c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd430\xc3\xa4",
        "6ba7b810-9dad-11d1-80b4-00c04fd4:0c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd4`0c4",
        "6ba7b810-9dad-11d1-80b4-00c04fd4@0c4",
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(bad); i++) {
        uint8_t id[JOBID_LEN];
        ck_assert_msg(pid_str(bad[i], id) == -1, "accepted \"%s\"", bad[i]);
    }
    /* An embedded NUL is not hex either. */
    uint8_t id[JOBID_LEN];
    ck_assert_int_eq(jobid_parse("6ba7b810-9dad-11d1-80b4-00c04fd430\0"
                                 "4",
                                 36, id),
                     -1);
}
END_TEST

START_TEST(test_jobid_format_roundtrip)
{
    rng_seed(0x853c49e6748fea9bULL);
    for (int i = 0; i < 10000; i++) {
        uint8_t id[JOBID_LEN], back[JOBID_LEN];
        uint64_t a = rng_next(), b = rng_next() | 1; /* never nil */
        memcpy(id, &a, 8);
        memcpy(id + 8, &b, 8);
        char text[JOBID_TEXT_LEN + 2];
        text[JOBID_TEXT_LEN + 1] = 'x';
        jobid_format(id, text);
        REQUIRE(text[JOBID_TEXT_LEN] == '\0' && text[JOBID_TEXT_LEN + 1] == 'x');
        for (size_t k = 0; k < JOBID_TEXT_LEN; k++) {
            bool dash = k == 8 || k == 13 || k == 18 || k == 23;
            char c = text[k];
            REQUIRE(dash ? c == '-' : ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
        }
        REQUIRE(jobid_parse(text, JOBID_TEXT_LEN, back) == 0);
        REQUIRE(memcmp(id, back, JOBID_LEN) == 0);
    }
}
END_TEST

static Suite *
jobid_suite(void)
{
    const struct unit_case cases[] = {
        {"parse_canonical", test_jobid_parse_canonical},
        {"parse_invalid", test_jobid_parse_invalid},
        {"format_roundtrip", test_jobid_format_roundtrip},
    };
    return unit_suite("jobid", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(jobid_suite(), NULL);
}
