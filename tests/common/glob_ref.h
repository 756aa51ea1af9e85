/* glob_ref.h - a reference for src/lib/glob.c, shared by tests/unit/lib/check_glob.c and
 * tests/fuzz/fuzz_glob.c: Redis's MATCH rules read straight off the
 * pattern bytes, one token at a time, with a star trying every split of
 * the rest of the text.  Exponential at worst, so it runs under a budget
 * of steps and says when that ran out. */
#ifndef WQ_TESTS_GLOB_REF_H
#define WQ_TESTS_GLOB_REF_H

#include <stdbool.h>
#include <stddef.h>

/* Does the one-byte token at p[i] take byte c?  *next gets where the
 * token ends. */
static inline bool
glob_ref_token(const unsigned char *p, size_t pn, size_t i, unsigned char c, size_t *next)
{
    if (p[i] == '?') {
        *next = i + 1;
        return true;
    }
    if (p[i] == '\\' && pn - i >= 2) {
        *next = i + 2;
        return p[i + 1] == c;
    }
    if (p[i] != '[') {
        *next = i + 1;
        return p[i] == c;
    }
    size_t k = i + 1;
    bool negated = k < pn && p[k] == '^', in = false;
    k += negated;
    while (k < pn) { /* a set not closed takes the rest of the pattern */
        if (p[k] == '\\' && pn - k >= 2) {
            in |= p[k + 1] == c;
            k += 2;
        } else if (p[k] == ']') {
            k++;
            break;
        } else if (pn - k >= 3 && p[k + 1] == '-') {
            unsigned char a = p[k], b = p[k + 2];
            in |= a <= b ? (c >= a && c <= b) : (c >= b && c <= a);
            k += 3;
        } else {
            in |= p[k++] == c;
        }
    }
    *next = k;
    return in != negated;
}

/* p[i..) against s[j..): 1, 0, or -1 when *budget ran out. */
static inline int
glob_ref_from(const unsigned char *p, size_t pn, size_t i, const unsigned char *s, size_t sn,
              size_t j, long *budget)
{
    for (;;) {
        if (--*budget < 0)
            return -1;
        if (i == pn)
            return j == sn;
        if (p[i] == '*') {
            for (size_t k = j; k <= sn; k++) {
                int r = glob_ref_from(p, pn, i + 1, s, sn, k, budget);
                if (r != 0)
                    return r;
            }
            return 0;
        }
        if (j == sn || !glob_ref_token(p, pn, i, s[j], &i))
            return 0;
        j++;
    }
}

/* Does the whole of s[0..sn) match p[0..pn)?  1, 0, or -1 when it took
 * more than budget steps.  The empty text matches only the empty pattern,
 * as in Redis. */
static inline int
glob_ref_match(const char *p, size_t pn, const char *s, size_t sn, long budget)
{
    if (sn == 0)
        return pn == 0;
    return glob_ref_from((const unsigned char *)p, pn, 0, (const unsigned char *)s, sn, 0, &budget);
}

#endif /* WQ_TESTS_GLOB_REF_H */
