/* password_file.h - reading a listener's password or key from a file (the
 * first line), as -password-file and -norfab-curve-secret name it. */
#ifndef WQ_PASSWORD_FILE_H
#define WQ_PASSWORD_FILE_H

#include "lib/wq.h"

/* The first line of file into line (cap bytes, its end of line cut); what
 * names the secret in errors ("Workq password", "NORFAB CURVE secret
 * key").  0, or -1 after logging (unreadable, empty, or an empty first
 * line). */
int password_file_read(const char *file, const char *what, char *line, size_t cap);

#endif /* WQ_PASSWORD_FILE_H */
