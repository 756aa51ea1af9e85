/* fwp_json.c - reading the JSON of Faktory's commands and jobs:
 * decoding, and a key's string or whole-number value. */
#include "lib/wq.h"
#include "faktory/fwp_internal.h"

#include <string.h>

#include <jansson.h>

json_t *
fwp_json_load(const char *p, size_t n, size_t flags, json_error_t *e)
{
    json_error_t local;
    if (e == NULL)
        e = &local;
    json_t *v = json_loadb(p, n, flags, e);
    if (v == NULL && strncmp(e->text, "too big integer", 15) == 0)
        v = json_loadb(p, n, flags | JSON_DECODE_INT_AS_REAL, e);
    return v;
}

bool
fwp_json_int(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    double d = json_is_real(v) ? json_real_value(v) : 0.5;
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != (double)(int64_t)d)
        return false;
    *out = (int64_t)d;
    return true;
}

const char *
fwp_json_str(json_t *o, const char *key, size_t *len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return NULL;
    if (len != NULL)
        *len = json_string_length(v);
    return json_string_value(v);
}
