/* wb_json.h - workq-bench's JSON scanner, for the Faktory client: checks
 * that a text is one well-formed JSON value of the kind asked for and finds
 * the values of an object's top-level members by key, building nothing and
 * copying nothing (values are slices of the text).  Needs only wb.h's
 * struct wb_tok. */
#ifndef WB_JSON_H
#define WB_JSON_H

#include "wb.h"

/* Scan s (len bytes) as exactly one JSON object, whitespace around it
 * allowed.  For each of the n keys (plain ASCII, compared with the raw text
 * of the member names, so a name written with escapes does not match),
 * vals[i] gets the raw text of that member's value (a string with its
 * quotes), or {NULL, 0} if the object has no such member.  Returns 0, or -1
 * if s is anything else (malformed, nested deeper than 64, trailing bytes)
 * or names a wanted key twice. */
int wb_json_members(const char *s, size_t len, const char *const *keys, struct wb_tok *vals, int n);

/* Is t (raw JSON text) a string without escapes?  Then its contents, the
 * bytes between the quotes, go to *out. */
bool wb_json_plain_string(struct wb_tok t, struct wb_tok *out);

/* Is t (raw JSON text) an array of exactly one string without escapes?
 * Then that string's contents go to *out. */
bool wb_json_one_string_array(struct wb_tok t, struct wb_tok *out);

#endif /* WB_JSON_H */
