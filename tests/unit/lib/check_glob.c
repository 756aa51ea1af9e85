/* check_glob.c - unit tests for src/lib/glob.c: Redis's MATCH rules (each
 * case below is what Redis's stringmatchlen answers, read from its
 * rules), bytes beyond ASCII and NUL, the agreement with the reference
 * matcher of tests/common/glob_ref.h on many random small patterns and texts,
 * and the time a hostile pattern takes on a long text. */
#include "lib/wq.h"
#include "lib/glob.h"

#include <check.h>
#include <string.h>
#include <time.h>

#include "lib/alloc.h"
#include "glob_ref.h"
#include "rng.h"
#include "unit.h"

/* Does text match pattern (both C strings)? */
static bool
match(const char *pattern, const char *text)
{
    struct glob *g = glob_new(pattern, strlen(pattern), 0);
    bool m = glob_match(g, text, strlen(text));
    glob_free(g);
    return m;
}

struct glob_case {
    const char *pattern, *text;
    bool match;
};

static void
check_cases(const struct glob_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct glob_case *c = &cases[i];
        ck_assert_msg(match(c->pattern, c->text) == c->match, "\"%s\" against \"%s\": want %s",
                      c->pattern, c->text, c->match ? "a match" : "none");
        /* the reference agrees */
        ck_assert_int_eq(
            glob_ref_match(c->pattern, strlen(c->pattern), c->text, strlen(c->text), 1000000),
            c->match);
    }
}

/* Redis's documented examples (KEYS), and the plain cases. */
START_TEST(test_glob_basics)
{
    static const struct glob_case cases[] = {
        {"h?llo", "hello", true},
        {"h?llo", "hallo", true},
        {"h?llo", "hllo", false},
        {"h*llo", "hllo", true},
        {"h*llo", "heeeello", true},
        {"h*llo", "hello!", false},
        {"h[ae]llo", "hello", true},
        {"h[ae]llo", "hallo", true},
        {"h[ae]llo", "hillo", false},
        {"h[^e]llo", "hallo", true},
        {"h[^e]llo", "hbllo", true},
        {"h[^e]llo", "hello", false},
        {"h[a-b]llo", "hallo", true},
        {"h[a-b]llo", "hbllo", true},
        {"h[a-b]llo", "hcllo", false},
        {"abc", "abc", true},
        {"abc", "abcd", false},
        {"abc", "ab", false},
        {"*", "x", true},
        {"*", "anything", true},
        {"**", "x", true},
        {"a*", "a", true},
        {"*a", "a", true},
        {"a*a", "a", false},
        {"a*a", "aa", true},
        {"*a*b*c*", "xaybzc", true},
        {"*a*b*c*", "xcybza", false},
        {"*needle*", "{\"args\":[\"needle\"]}", true},
        {"needle", "{\"args\":[\"needle\"]}", false}, /* no star: the whole text */
        {"*ab", "aab", true},
        {"*aab", "aaab", true},
        {"*ab*ab", "abab", true},
        {"*ab*ab", "abb", false},
        {"a?c*", "abc", true},
        {"a?c*", "ac", false},
    };
    check_cases(cases, WQ_ARRAY_LEN(cases));
}
END_TEST

/* The corners where Redis's rules are its own. */
START_TEST(test_glob_redis_rules)
{
    static const struct glob_case cases[] = {
        /* the empty text matches only the empty pattern */
        {"", "", true},
        {"*", "", false},
        {"", "a", false},
        /* ! is no negation: a member */
        {"[!a]", "!", true},
        {"[!a]", "a", true},
        {"[!a]", "b", false},
        /* ranges either way round */
        {"[z-a]", "m", true},
        {"[z-a]", "A", false},
        /* ] at once closes an empty set, which takes nothing; [^] takes any byte */
        {"[]", "]", false},
        {"[]a]", "a]", false},
        {"[]a]", "]", false},
        {"[^]", "x", true},
        {"[^]a]", "xa]", true},
        /* a set not closed runs to the pattern's end */
        {"[abc", "b", true},
        {"[abc", "[", false},
        {"x[", "x", false},
        {"x[", "x[", false},
        {"x[^", "xy", true},
        {"*[ab", "zzb", true},
        /* escapes: outside a set and in one; a final \ is itself */
        {"\\*", "*", true},
        {"\\*", "x", false},
        {"\\?", "?", true},
        {"\\?", "x", false},
        {"a\\", "a\\", true},
        {"\\\\", "\\", true},
        {"[\\]]", "]", true},
        {"[\\]]", "\\", false},
        {"[\\^a]", "^", true},
        {"[a\\-z]", "-", true},
        {"[a\\-z]", "b", false}, /* an escaped byte starts no range */
        {"[-a]", "-", true},
        {"[-a]", "b", false},
        /* a range's end is any byte, ] and \ too */
        {"[a-]", "_", true},  /* ']'..'a' */
        {"[a-]", "-", false}, /* and the set is not closed */
        {"[a-\\]", "^", true},
        {"[a-\\]", "]", true},
        {"[a-\\]", "b", false},
        {"[a-\\]x", "ax", true},
        /* ^ only first */
        {"[a^]", "^", true},
        {"[^^]", "^", false},
        {"[^^]", "a", true},
        /* a star followed by stars, ?s and sets */
        {"*?", "a", true},
        {"*?", "", false},
        {"?*", "a", true},
        {"*[0-9]", "abc7", true},
        {"*[0-9]*", "abc", false},
        {"a*\\*", "ab*", true},
        {"a*\\*", "ab", false},
    };
    check_cases(cases, WQ_ARRAY_LEN(cases));
}
END_TEST

/* Bytes are bytes: NUL, and 0x80 and above, unsigned in ranges. */
START_TEST(test_glob_bytes)
{
    struct glob *g = glob_new("a\0*\0", 4, 0);
    ck_assert(glob_match(g, "a\0\0", 3));
    ck_assert(glob_match(g, "a\0xyz\0", 6));
    ck_assert(!glob_match(g, "a\0xyz", 5));
    ck_assert(!glob_match(g, "a", 1));
    glob_free(g);
    g = glob_new("[\x01-\xff]", 5, 0);
    ck_assert(glob_match(g, "\x80", 1));
    ck_assert(glob_match(g, "\xff", 1));
    ck_assert(!glob_match(g, "\0", 1));
    glob_free(g);
    g = glob_new("*\xc3\xa9*", 4, 0); /* é, as UTF-8 */
    ck_assert(glob_match(g, "caf\xc3\xa9!", 6));
    ck_assert(!glob_match(g, "cafe", 4));
    glob_free(g);
    g = glob_new("?", 1, 0); /* one byte, not one character */
    ck_assert(!glob_match(g, "\xc3\xa9", 2));
    glob_free(g);
    glob_free(NULL);
}
END_TEST

/* GLOB_STRICT refuses the ranges Redis reads high to low or by the sign
 * of char, and takes the rest as they are. */
START_TEST(test_glob_strict)
{
    static const char *const refused[] = {"[z-a]",    "x*[a-]",   "[a-\\]", "[\x01-\xff]",
                                          "[a-\x80]", "[\xff-a]", "[^b-a]"};
    for (size_t i = 0; i < WQ_ARRAY_LEN(refused); i++) {
        const char *p = refused[i];
        ck_assert_msg(glob_new(p, strlen(p), GLOB_STRICT) == NULL, "%s taken", p);
        glob_free(glob_new(p, strlen(p), 0)); /* without the flag: taken */
    }
    static const struct glob_case taken[] = {
        {"[a-z]", "m", true},     {"[a-a]", "a", true},          {"[\\z-a]", "-", true},
        {"z-a", "z-a", true},     {"[\x80-\xff]", "\xc3", true}, {"[-a]", "-", true},
        {"*[0-9]*", "x7y", true}, {"[a-z", "q", true},
    };
    for (size_t i = 0; i < WQ_ARRAY_LEN(taken); i++) {
        const struct glob_case *c = &taken[i];
        struct glob *g = glob_new(c->pattern, strlen(c->pattern), GLOB_STRICT);
        ck_assert_msg(g != NULL, "%s refused", c->pattern);
        ck_assert(glob_match(g, c->text, strlen(c->text)) == c->match);
        glob_free(g);
    }
}
END_TEST

/* Segments between stars longer than a word (the shift-and scan's
 * several words), found at their leftmost place or not at all. */
START_TEST(test_glob_long_segments)
{
    for (size_t len = 60; len <= 1100; len += len < 200 ? 1 : 97) {
        /* pattern: x*<len-1 a>b*y ; text: x, a run of a's, the segment, y */
        char *p = wq_malloc(len + 8), *t = wq_malloc(2 * len + 8);
        size_t pn = 0, tn = 0;
        p[pn++] = 'x', p[pn++] = '*';
        memset(p + pn, 'a', len - 1);
        pn += len - 1;
        p[pn++] = 'b', p[pn++] = '*', p[pn++] = 'y';
        t[tn++] = 'x';
        memset(t + tn, 'a', 2 * len - 1);
        tn += 2 * len - 1;
        t[tn++] = 'y';
        struct glob *g = glob_new(p, pn, 0);
        REQUIRE(!glob_match(g, t, tn)); /* no b */
        t[tn - 2] = 'b';
        REQUIRE(glob_match(g, t, tn));
        t[tn - 2] = 'a';
        t[len - 1] = 'b'; /* one a too few before it */
        REQUIRE(!glob_match(g, t, tn));
        t[len - 1] = 'a';
        t[len] = 'b';
        REQUIRE(glob_match(g, t, tn));
        glob_free(g);
        wq_free(p);
        wq_free(t);
    }
}
END_TEST

/* Random patterns over the bytes that mean something, and texts over a
 * few letters, against the reference. */
START_TEST(test_glob_reference)
{
    static const char pattern_bytes[] = "ab*?[]^-\\!";
    static const char text_bytes[] = "ab]-^\\!";
    size_t rounds = RUNNING_ON_VALGRIND ? 20000 : 300000;
    size_t compared = 0;
    rng_seed(20261201);
    for (size_t r = 0; r < rounds; r++) {
        char p[12], t[16];
        size_t pn = rng_below(sizeof p + 1), tn = rng_below(sizeof t + 1);
        for (size_t i = 0; i < pn; i++)
            p[i] = pattern_bytes[rng_below(sizeof pattern_bytes - 1)];
        for (size_t i = 0; i < tn; i++)
            t[i] = rng_below(4) == 0 ? text_bytes[rng_below(sizeof text_bytes - 1)]
                                     : "ab"[rng_below(2)];
        int want = glob_ref_match(p, pn, t, tn, 100000);
        if (want < 0)
            continue;
        compared++;
        struct glob *g = glob_new(p, pn, 0);
        bool got = glob_match(g, t, tn);
        glob_free(g);
        if (got != (want == 1))
            ck_abort_msg("\"%.*s\" against \"%.*s\": glob says %d, the reference %d", (int)pn, p,
                         (int)tn, t, got, want);
    }
    ck_assert_uint_gt(compared, rounds * 9 / 10);
}
END_TEST

static double
seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The patterns that blow up a backtracking matcher or a regex engine, on
 * 300 KB of a and b: each answers at once (generous bound: 1 s for all,
 * natively; under valgrind only the answers are checked). */
START_TEST(test_glob_hostile)
{
    size_t n = 300 * 1024;
    char *text = wq_malloc(n);
    rng_seed(7);
    for (size_t i = 0; i < n; i++)
        text[i] = "ab"[rng_below(2)];
    char *p = wq_malloc(1100);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* *a then 1000 ?: the a must be 1001 bytes from the end */
    p[0] = '*', p[1] = 'a';
    memset(p + 2, '?', 1000);
    struct glob *g = glob_new(p, 1002, 0);
    ck_assert(glob_match(g, text, n) == (text[n - 1001] == 'a'));
    glob_free(g);
    /* *a?...?* with a b after it: found at the first a */
    p[1002] = '*', p[1003] = 'b';
    g = glob_new(p, 1004, 0);
    ck_assert(glob_match(g, text, n) == (text[n - 1] == 'b'));
    glob_free(g);
    /* *a*a*...*ac*: stars all the way, 511 segments to find, no c */
    for (size_t i = 0; i < 1022; i += 2)
        p[i] = '*', p[i + 1] = 'a';
    p[1022] = 'c', p[1023] = '*';
    g = glob_new(p, 1024, 0);
    ck_assert(!glob_match(g, text, n));
    glob_free(g);
    /* *<1022 a>b*: a long segment over a long run of a's */
    char *as = wq_malloc(n);
    memset(as, 'a', n);
    p[0] = '*';
    memset(p + 1, 'a', 1021);
    p[1022] = 'b', p[1023] = '*';
    g = glob_new(p, 1024, 0);
    ck_assert(!glob_match(g, as, n));
    as[n / 2] = 'b';
    ck_assert(glob_match(g, as, n));
    glob_free(g);
    /* [ab]?[ab]?...c as a middle segment: no literal to jump to, and
     * every byte keeps the scan going */
    p[0] = '*';
    for (size_t i = 1; i < 1021; i += 5)
        memcpy(p + i, "[ab]?", 5);
    p[1021] = 'c', p[1022] = '*';
    g = glob_new(p, 1023, 0);
    ck_assert(!glob_match(g, as, n));
    glob_free(g);
    double took = seconds_since(&t0);
    if (!RUNNING_ON_VALGRIND)
        ck_assert_msg(took < 1.0, "hostile patterns took %.3f s", took);
    wq_free(as);
    wq_free(p);
    wq_free(text);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"glob_basics", test_glob_basics},
        {"glob_redis_rules", test_glob_redis_rules},
        {"glob_bytes", test_glob_bytes},
        {"glob_strict", test_glob_strict},
        {"glob_long_segments", test_glob_long_segments},
        {"glob_reference", test_glob_reference},
        {"glob_hostile", test_glob_hostile},
    };
    return unit_run(unit_suite("glob", cases, WQ_ARRAY_LEN(cases)), NULL);
}
