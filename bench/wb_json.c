/* wb_json.c - workq-bench's JSON scanner (wb_json.h): a recursive-descent
 * check of RFC 8259's grammar that keeps only where the wanted members'
 * values are.  Strings are checked for their escapes and for control
 * bytes, not for valid UTF-8. */
#include "wb.h"
#include "wb_json.h"

#include <string.h>

#define JSON_MAX_DEPTH 64

static const char *skip_value(const char *p, const char *end, int depth);

static const char *
skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool
is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string starting at p (its opening quote): just past its closing quote,
 * or NULL.  *escaped, if not NULL, tells whether it had escapes. */
static const char *
skip_string(const char *p, const char *end, bool *escaped)
{
    bool esc = false;
    if (p >= end || *p != '"')
        return NULL;
    for (p++; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (escaped != NULL)
                *escaped = esc;
            return p + 1;
        }
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        esc = true;
        if (++p >= end)
            return NULL;
        if (*p == 'u') {
            if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]))
                return NULL;
            p += 4;
        } else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
            return NULL;
        }
    }
    return NULL;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static const char *
skip_number(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end || !is_digit(*p))
        return NULL;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    if (p < end && *p == '.') {
        if (++p >= end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    return p;
}

static const char *
skip_literal(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - p) < n || memcmp(p, word, n) != 0)
        return NULL;
    return p + n;
}

/* An object from its '{': each member name is matched against keys (n of
 * them; none when n is 0) and the wanted values noted in vals. */
static const char *
scan_object(const char *p, const char *end, int depth, const char *const *keys, struct wb_tok *vals,
            int n)
{
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        const char *name = p;
        if ((p = skip_string(p, end, NULL)) == NULL)
            return NULL;
        size_t name_len = (size_t)(p - name) - 2;
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return NULL;
        p = skip_ws(p + 1, end);
        const char *value = p;
        if ((p = skip_value(p, end, depth + 1)) == NULL)
            return NULL;
        for (int i = 0; i < n; i++) {
            if (strlen(keys[i]) != name_len || memcmp(keys[i], name + 1, name_len) != 0)
                continue;
            if (vals[i].s != NULL)
                return NULL; /* a wanted key twice: which one counts is unclear */
            vals[i].s = value;
            vals[i].len = (size_t)(p - value);
        }
        p = skip_ws(p, end);
        if (p < end && *p == '}')
            return p + 1;
        if (p >= end || *p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
}

static const char *
skip_array(const char *p, const char *end, int depth)
{
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return p + 1;
    for (;;) {
        if ((p = skip_value(p, end, depth + 1)) == NULL)
            return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ']')
            return p + 1;
        if (p >= end || *p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
}

/* One value at p (no whitespace before it): just past it, or NULL. */
static const char *
skip_value(const char *p, const char *end, int depth)
{
    if (p >= end || depth > JSON_MAX_DEPTH)
        return NULL;
    switch (*p) {
    case '{':
        return scan_object(p, end, depth, NULL, NULL, 0);
    case '[':
        return skip_array(p, end, depth);
    case '"':
        return skip_string(p, end, NULL);
    case 't':
        return skip_literal(p, end, "true");
    case 'f':
        return skip_literal(p, end, "false");
    case 'n':
        return skip_literal(p, end, "null");
    default:
        return skip_number(p, end);
    }
}

int
wb_json_members(const char *s, size_t len, const char *const *keys, struct wb_tok *vals, int n)
{
    const char *end = s + len, *p = skip_ws(s, end);
    for (int i = 0; i < n; i++)
        vals[i] = (struct wb_tok){NULL, 0};
    if (p >= end || *p != '{')
        return -1;
    if ((p = scan_object(p, end, 1, keys, vals, n)) == NULL)
        return -1;
    return skip_ws(p, end) == end ? 0 : -1;
}

bool
wb_json_plain_string(struct wb_tok t, struct wb_tok *out)
{
    bool escaped;
    const char *p = skip_string(t.s, t.s + t.len, &escaped);
    if (p == NULL || p != t.s + t.len || escaped)
        return false;
    out->s = t.s + 1;
    out->len = t.len - 2;
    return true;
}

bool
wb_json_one_string_array(struct wb_tok t, struct wb_tok *out)
{
    const char *end = t.s + t.len, *p = t.s, *str;
    bool escaped;
    if (p >= end || *p != '[')
        return false;
    str = p = skip_ws(p + 1, end);
    if ((p = skip_string(p, end, &escaped)) == NULL || escaped)
        return false;
    const char *after = p;
    p = skip_ws(p, end);
    if (p + 1 != end || *p != ']')
        return false;
    out->s = str + 1;
    out->len = (size_t)(after - str) - 2;
    return true;
}
