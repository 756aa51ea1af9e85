/* fuzz_glob.c - libFuzzer target: the glob matcher of src/lib/glob.c, which
 * MUTATE runs over job texts with a client's pattern.  The input's first
 * byte is the pattern's length (cut to what follows), then the pattern,
 * then the text.  Besides no crash, leak or UB:
 *
 *   - the answer is the reference's (tests/common/glob_ref.h: Redis's rules read
 *     straight off the pattern, a star trying every split), whenever the
 *     reference finishes within its budget of steps;
 *   - a pattern GLOB_STRICT takes matches as without it, and one it
 *     refuses holds a range written high to low or across 0x80.
 *
 * Pattern and text are copied into buffers of their own size, so that
 * ASan sees a read past either. */
#include "lib/wq.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "lib/glob.h"
#include "../common/glob_ref.h"

#define REF_BUDGET 200000 /* steps: enough for most inputs of a few hundred bytes */

/* Does p[0..n) hold a range GLOB_STRICT refuses?  (Sets read as glob.h
 * says: after [ and an optional ^, \x pairs, ] closes, a-b ranges.) */
static bool
has_strict_range(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (p[i] == '\\' && n - i >= 2) {
            i += 2;
            continue;
        }
        if (p[i++] != '[')
            continue;
        i += i < n && p[i] == '^';
        while (i < n) {
            if (p[i] == '\\' && n - i >= 2) {
                i += 2;
            } else if (p[i] == ']') {
                i++;
                break;
            } else if (n - i >= 3 && p[i + 1] == '-') {
                if (p[i] > p[i + 2] || ((p[i] ^ p[i + 2]) & 0x80) != 0)
                    return true;
                i += 3;
            } else {
                i++;
            }
        }
    }
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t pn = WQ_MIN((size_t)data[0], size - 1), tn = size - 1 - pn;
    const char *p = (const char *)data + 1;
    /* copies of their own size, so that ASan sees a read past either */
    char *pattern = malloc(pn + 1), *text = malloc(tn + 1);
    if (pattern == NULL || text == NULL)
        abort();
    memcpy(pattern, p, pn);
    memcpy(text, p + pn, tn);

    struct glob *g = glob_new(pattern, pn, 0);
    if (g == NULL)
        abort();
    bool got = glob_match(g, text, tn);
    int want = glob_ref_match(pattern, pn, text, tn, REF_BUDGET);
    if (want >= 0 && got != (want == 1))
        abort();

    struct glob *strict = glob_new(pattern, pn, GLOB_STRICT);
    if ((strict == NULL) != has_strict_range((const unsigned char *)pattern, pn))
        abort();
    if (strict != NULL && glob_match(strict, text, tn) != got)
        abort();
    glob_free(strict);
    glob_free(g);
    free(text);
    free(pattern);
    return 0;
}
