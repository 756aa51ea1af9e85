/* password_file.c - a listener's password from a file (password_file.h). */
#include "lib/wq.h"
#include "net/password_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"

int
password_file_read(const char *file, const char *what, char *line, size_t cap)
{
    FILE *fp = fopen(file, "r");
    if (fp == NULL || fgets(line, (int)cap, fp) == NULL) {
        wq_log(LOG_LVL_ERROR, "cannot read the %s file=%s error=\"%s\"", what, file,
               fp == NULL ? strerror(errno) : "it is empty");
        if (fp != NULL)
            fclose(fp);
        return -1;
    }
    fclose(fp);
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0') {
        wq_log(LOG_LVL_ERROR, "the %s file=%s starts with an empty line", what, file);
        return -1;
    }
    return 0;
}
