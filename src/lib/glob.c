/* glob.c - Redis's MATCH glob syntax, compiled once and matched in time
 * linear in the text (see glob.h).
 *
 * Compiling turns the pattern into tokens that each take one byte (a
 * literal, ?, a set: all of them a set of the 256 byte values), split by
 * the stars into segments: seg[0] * seg[1] * ... * seg[k].  A text
 * matches when seg[0] is at its start, seg[k] at its end (k > 0), and the
 * segments between can be placed in order, without overlapping, in what
 * is left: placing each at its leftmost place is never worse than any
 * other place, so one pass finds them.  The anchored ends are checked
 * token by token (skipping the ?s, which take anything); the segments
 * between are found by the shift-and scan, which keeps in bit t whether
 * the segment's first t + 1 tokens match the bytes just read. */
#include "lib/wq.h"
#include "lib/glob.h"

#include <string.h>

#include "lib/alloc.h"

/* A run of tokens between stars. */
struct glob_seg {
    uint32_t first; /* its first token */
    uint32_t len;   /* its tokens (bytes it takes) */
    uint32_t check; /* its tokens that are not ?: checks[check .. check_end) */
    uint32_t check_end;
};

struct glob {
    bool empty;  /* the pattern is empty */
    size_t nseg; /* 1 + the stars (runs of stars count once) */
    size_t ntok;
    size_t words; /* of a row of cols */
    struct glob_seg *segs;
    uint64_t (*sets)[4]; /* per token: the bytes it takes (bit b of word b/64) */
    int16_t *lit;        /* per token: its byte when it takes only one, else -1 */
    uint32_t *checks;    /* the tokens that are not ?, in order */
    uint64_t *cols;      /* row b (words wide): bit t set if token t takes byte b */
};

static inline bool
glob_takes(const uint64_t set[4], unsigned char b)
{
    return (set[b >> 6] >> (b & 63)) & 1;
}

static inline void
glob_add(uint64_t set[4], unsigned char b)
{
    set[b >> 6] |= (uint64_t)1 << (b & 63);
}

/* Read the set whose body starts at p[*i] (after the '[') into set, as
 * Redis reads it; *i ends past its ']' or at n.  False if strict and a
 * range is one GLOB_STRICT refuses. */
static bool
glob_read_set(const unsigned char *p, size_t n, size_t *i, uint64_t set[4], bool strict)
{
    bool negated = *i < n && p[*i] == '^';
    if (negated)
        (*i)++;
    memset(set, 0, 4 * sizeof set[0]);
    while (*i < n) {
        if (p[*i] == '\\' && n - *i >= 2) { /* an escaped byte: itself, never a range's start */
            glob_add(set, p[*i + 1]);
            *i += 2;
        } else if (p[*i] == ']') {
            (*i)++;
            break;
        } else if (n - *i >= 3 && p[*i + 1] == '-') { /* a range, whatever its end byte is */
            if (strict && (p[*i] > p[*i + 2] || ((p[*i] ^ p[*i + 2]) & 0x80) != 0))
                return false;
            unsigned lo = WQ_MIN(p[*i], p[*i + 2]), hi = WQ_MAX(p[*i], p[*i + 2]);
            for (unsigned b = lo; b <= hi; b++)
                glob_add(set, (unsigned char)b);
            *i += 3;
        } else {
            glob_add(set, p[(*i)++]);
        }
    }
    if (negated)
        for (int w = 0; w < 4; w++)
            set[w] = ~set[w];
    return true;
}

/* Build what matching reads from the tokens (sets) and segments. */
static void
glob_index(struct glob *g)
{
    g->lit = wq_malloc((g->ntok + 1) * sizeof *g->lit);
    g->checks = wq_malloc((g->ntok + 1) * sizeof *g->checks);
    /* one spare word: a segment's window of a row may start mid-word */
    g->words = g->ntok / 64 + 2;
    g->cols = wq_calloc(256 * g->words, sizeof *g->cols);
    size_t nchecks = 0;
    for (size_t s = 0; s < g->nseg; s++) {
        struct glob_seg *seg = &g->segs[s];
        seg->check = (uint32_t)nchecks;
        for (uint32_t t = seg->first; t < seg->first + seg->len; t++) {
            int count = 0, last = -1;
            for (unsigned b = 0; b < 256; b++)
                if (glob_takes(g->sets[t], (unsigned char)b)) {
                    count++;
                    last = (int)b;
                    g->cols[b * g->words + t / 64] |= (uint64_t)1 << (t % 64);
                }
            g->lit[t] = (int16_t)(count == 1 ? last : -1);
            if (count < 256)
                g->checks[nchecks++] = t;
        }
        seg->check_end = (uint32_t)nchecks;
    }
}

struct glob *
glob_new(const char *pattern, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)pattern;
    struct glob *g = wq_calloc(1, sizeof *g);
    g->empty = n == 0;
    /* at most one token per byte, one segment per star plus one */
    g->sets = wq_malloc((n + 1) * sizeof *g->sets);
    g->segs = wq_malloc((n + 2) * sizeof *g->segs);
    g->segs[0] = (struct glob_seg){0};
    g->nseg = 1;
    for (size_t i = 0; i < n;) {
        uint64_t *set = g->sets[g->ntok];
        if (p[i] == '*') {
            while (i < n && p[i] == '*')
                i++;
            g->segs[g->nseg++] = (struct glob_seg){.first = (uint32_t)g->ntok};
            continue;
        }
        if (p[i] == '?') {
            memset(set, 0xff, 4 * sizeof set[0]);
            i++;
        } else if (p[i] == '[') {
            i++;
            if (!glob_read_set(p, n, &i, set, (flags & GLOB_STRICT) != 0)) {
                glob_free(g);
                return NULL;
            }
        } else {
            if (p[i] == '\\' && n - i >= 2)
                i++;
            memset(set, 0, 4 * sizeof set[0]);
            glob_add(set, p[i++]);
        }
        g->segs[g->nseg - 1].len++;
        g->ntok++;
    }
    glob_index(g);
    return g;
}

void
glob_free(struct glob *g)
{
    if (g == NULL)
        return;
    wq_free(g->segs);
    wq_free(g->sets);
    wq_free(g->lit);
    wq_free(g->checks);
    wq_free(g->cols);
    wq_free(g);
}

/* Does seg match s[at .. at + seg->len)? */
static bool
glob_seg_at(const struct glob *g, const struct glob_seg *seg, const unsigned char *s, size_t at)
{
    for (uint32_t k = seg->check; k < seg->check_end; k++) {
        uint32_t t = g->checks[k];
        if (!glob_takes(g->sets[t], s[at + t - seg->first]))
            return false;
    }
    return true;
}

/* Bits [bit, bit + 64) of row, as one word. */
static inline uint64_t
glob_window(const uint64_t *row, size_t bit)
{
    size_t w = bit / 64, r = bit % 64;
    return r == 0 ? row[w] : (row[w] >> r) | (row[w + 1] << (64 - r));
}

/* Where seg (of at least one token) first matches wholly inside
 * s[from .. to), or SIZE_MAX.  Shift-and: bit t of d (ceil(len / 64)
 * words, zeroed) says whether the segment's tokens 0..t match the t + 1
 * bytes that end at s[j]. */
static size_t
glob_find_in(const struct glob *g, const struct glob_seg *seg, const unsigned char *s, size_t from,
             size_t to, uint64_t *d)
{
    size_t len = seg->len, nw = (len + 63) / 64, last = to - len; /* the last place it fits */
    uint64_t top_mask = len % 64 == 0 ? ~(uint64_t)0 : ((uint64_t)1 << (len % 64)) - 1;
    const uint64_t *first_set = g->sets[seg->first];
    int lit = g->lit[seg->first];
    bool live = false; /* d has a bit set */
    for (size_t j = from; j < to; j++) {
        if (!live) {
            /* nothing under way: jump to the next byte the first token takes */
            if (lit >= 0) {
                const unsigned char *q = j <= last ? memchr(s + j, lit, last - j + 1) : NULL;
                if (q == NULL)
                    return SIZE_MAX;
                j = (size_t)(q - s);
            } else {
                while (j <= last && !glob_takes(first_set, s[j]))
                    j++;
                if (j > last)
                    return SIZE_MAX;
            }
        }
        const uint64_t *row = g->cols + (size_t)s[j] * g->words;
        uint64_t carry = 1, any = 0;
        for (size_t w = 0; w < nw; w++) {
            uint64_t next = ((d[w] << 1) | carry) & glob_window(row, seg->first + 64 * w);
            carry = d[w] >> 63;
            d[w] = w + 1 == nw ? next & top_mask : next;
            any |= d[w];
        }
        live = any != 0;
        if ((d[nw - 1] >> ((len - 1) % 64)) & 1)
            return j + 1 - len;
    }
    return SIZE_MAX;
}

#define GLOB_STACK_WORDS 16 /* segments of up to 1024 tokens: MUTATE's */

/* Where seg first matches wholly inside s[from .. to), or SIZE_MAX. */
static size_t
glob_find(const struct glob *g, const struct glob_seg *seg, const unsigned char *s, size_t from,
          size_t to)
{
    if (to - from < seg->len)
        return SIZE_MAX;
    if (seg->len == 0)
        return from;
    size_t nw = (seg->len + 63) / 64;
    uint64_t stack[GLOB_STACK_WORDS] = {0};
    uint64_t *d = nw <= GLOB_STACK_WORDS ? stack : wq_calloc(nw, sizeof *d);
    size_t at = glob_find_in(g, seg, s, from, to, d);
    if (d != stack)
        wq_free(d);
    return at;
}

bool
glob_match(const struct glob *g, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    if (n == 0)
        return g->empty; /* as Redis: "*" does not match "" */
    const struct glob_seg *head = &g->segs[0], *tail = &g->segs[g->nseg - 1];
    if (g->nseg == 1)
        return n == head->len && glob_seg_at(g, head, s, 0);
    if ((size_t)head->len + tail->len > n || !glob_seg_at(g, head, s, 0) ||
        !glob_seg_at(g, tail, s, n - tail->len))
        return false;
    size_t from = head->len, to = n - tail->len;
    for (size_t k = 1; k + 1 < g->nseg; k++) {
        size_t at = glob_find(g, &g->segs[k], s, from, to);
        if (at == SIZE_MAX)
            return false;
        from = at + g->segs[k].len;
    }
    return true;
}
