/* jobid.h - job ids: canonical UUID text <-> 16 bytes, over libuuid. */
#ifndef WQ_JOBID_H
#define WQ_JOBID_H

#include "lib/wq.h"

#define JOBID_LEN      16
#define JOBID_TEXT_LEN 36

/* Parse canonical 8-4-4-4-12 hex text of either case (any version, not the
 * nil UUID) from s[0..len).  0 on success, -1 otherwise. */
int jobid_parse(const char *s, size_t len, uint8_t id[JOBID_LEN]);
/* Write the lowercase canonical text (36 bytes + NUL) into out. */
void jobid_format(const uint8_t id[JOBID_LEN], char out[JOBID_TEXT_LEN + 1]);

#endif /* WQ_JOBID_H */
