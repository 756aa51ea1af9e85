/* check_password_file.c - unit tests for reading a listener's password
 * from a file (src/net/password_file.c): the first line, its end of line
 * cut, and the files refused. */
#include "lib/wq.h"
#include "net/password_file.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"

/* A file holding text, its path in path (removed by the caller). */
static void
file_with(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "%s/check_password_file.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "w");
    fputs(text, fp);
    fclose(fp);
}

/* Read path's password into line; the result of password_file_read. */
static int
read_text(const char *text, char *line, size_t cap)
{
    char path[4096];
    file_with(path, sizeof path, text);
    int rc = password_file_read(path, "Test password", line, cap);
    unlink(path);
    return rc;
}

START_TEST(test_first_line)
{
    char line[64];
    ck_assert_int_eq(read_text("s3cret\nsecond line\n", line, sizeof line), 0);
    ck_assert_str_eq(line, "s3cret");
    ck_assert_int_eq(read_text("crlf\r\n", line, sizeof line), 0);
    ck_assert_str_eq(line, "crlf");
    ck_assert_int_eq(read_text("no end of line", line, sizeof line), 0);
    ck_assert_str_eq(line, "no end of line");
    ck_assert_int_eq(read_text("with spaces inside\n", line, sizeof line), 0);
    ck_assert_str_eq(line, "with spaces inside");
}
END_TEST

START_TEST(test_refused)
{
    char line[64];
    ck_assert_int_eq(read_text("", line, sizeof line), -1);
    ck_assert_int_eq(read_text("\nafter an empty line\n", line, sizeof line), -1);
    ck_assert_int_eq(read_text("\r\n", line, sizeof line), -1);
    ck_assert_int_eq(
        password_file_read("/nonexistent/password", "Test password", line, sizeof line), -1);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"first_line", test_first_line},
        {"refused", test_refused},
    };
    return unit_run(unit_suite("password_file", cases, WQ_ARRAY_LEN(cases)), NULL);
}
