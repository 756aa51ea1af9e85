/* check_ostree.c - unit tests for the order-statistic treap (src/lib/ostree.c).
 * Test nodes carry an integer key; a plain array of flags is the model of
 * which keys are in the tree and which count.  After each operation
 * ostree_verify() checks the links, the order, the treap priorities and
 * every subtree count, and the model is compared with select, next and
 * the walk over every node. */
#include "lib/wq.h"
#include "lib/ostree.h"

#include <check.h>
#include <stdlib.h>

#include "rng.h"
#include "unit.h"

struct el {
    struct ostree_node node;
    uint32_t key;
    bool in_tree; /* the model */
};

static int
el_cmp(const struct ostree_node *a, const struct ostree_node *b)
{
    uint32_t x = WQ_CONTAINER_OF(a, struct el, node)->key;
    uint32_t y = WQ_CONTAINER_OF(b, struct el, node)->key;
    return (x > y) - (x < y);
}

static uint32_t
key_of(const struct ostree_node *n)
{
    return WQ_CONTAINER_OF(n, const struct el, node)->key;
}

/* Check the subtree at n (keys in (lo, hi), parent p); its size. */
static uint32_t
verify_sub(const struct ostree_node *n, const struct ostree_node *p, int64_t lo, int64_t hi)
{
    if (n == NULL)
        return 0;
    REQUIRE(n->parent == p);
    REQUIRE((int64_t)key_of(n) > lo && (int64_t)key_of(n) < hi);
    REQUIRE(p == NULL || p->prio >= n->prio);
    uint32_t left = verify_sub(n->left, n, lo, key_of(n));
    uint32_t right = verify_sub(n->right, n, key_of(n), hi);
    uint32_t l = n->left != NULL ? n->left->count : 0, r = n->right != NULL ? n->right->count : 0;
    REQUIRE(n->count == l + r + n->counted);
    return left + right + 1;
}

/* The tree against the model: shape, counts, and every counted element
 * found by rank and in order by next. */
static void
ostree_verify(const struct ostree *t, const struct el *els, size_t n)
{
    size_t in = 0, counted = 0;
    for (size_t i = 0; i < n; i++) {
        in += els[i].in_tree;
        counted += els[i].in_tree && els[i].node.counted;
    }
    REQUIRE(verify_sub(t->root, NULL, -1, INT64_MAX) == in);
    REQUIRE(ostree_count(t) == counted);
    const struct ostree_node *walk = ostree_select(t, 0);
    uint64_t rank = 0;
    for (size_t i = 0; i < n; i++) { /* els are in key order */
        if (!els[i].in_tree || !els[i].node.counted)
            continue;
        REQUIRE(ostree_select(t, rank) == &els[i].node);
        REQUIRE(walk == &els[i].node);
        walk = ostree_next(walk);
        rank++;
    }
    REQUIRE(walk == NULL);
    REQUIRE(ostree_select(t, rank) == NULL);
    /* every node, counted or not, in order */
    walk = ostree_min_any(t);
    for (size_t i = 0; i < n; i++) {
        if (!els[i].in_tree)
            continue;
        REQUIRE(walk == &els[i].node);
        walk = ostree_next_any(walk);
    }
    REQUIRE(walk == NULL);
}

/* n elements with keys 10, 20, ... (so key order is array order). */
static struct el *
els_new(size_t n)
{
    struct el *els = calloc(n, sizeof *els);
    for (size_t i = 0; i < n; i++)
        els[i].key = (uint32_t)(i + 1) * 10;
    return els;
}

START_TEST(test_empty)
{
    struct ostree t;
    ostree_init(&t, el_cmp);
    ck_assert_uint_eq(ostree_count(&t), 0);
    ck_assert_ptr_null(ostree_select(&t, 0));
    ck_assert_ptr_null(ostree_min_any(&t));
    struct el lone = {.key = 1};
    ostree_set_counted(&lone.node, true); /* outside a tree: itself only */
    ck_assert_uint_eq(lone.node.count, 1);
    ostree_set_counted(&lone.node, false);
    ck_assert_uint_eq(lone.node.count, 0);
}
END_TEST

/* Keys in order, then backwards, then all counted, then half uncounted:
 * select and next skip the uncounted ones. */
START_TEST(test_sequential)
{
    enum { N = 2000 };
    struct el *els = els_new(N);
    struct ostree t;
    ostree_init(&t, el_cmp);
    for (size_t i = 0; i < N; i++) {
        ostree_insert(&t, &els[i].node);
        els[i].in_tree = true;
    }
    ostree_verify(&t, els, N);
    for (size_t i = 0; i < N; i++)
        ostree_set_counted(&els[i].node, true);
    ostree_verify(&t, els, N);
    for (size_t i = 0; i < N; i += 2)
        ostree_set_counted(&els[i].node, false);
    ostree_verify(&t, els, N);
    ck_assert_uint_eq(key_of(ostree_select(&t, 0)), 20);
    ck_assert_uint_eq(key_of(ostree_select(&t, N / 2 - 1)), N * 10);
    for (size_t i = N; i-- > 0;) {
        ostree_remove(&t, &els[i].node);
        els[i].in_tree = false;
    }
    ostree_verify(&t, els, N);
    ck_assert_ptr_null(t.root);
    free(els);
}
END_TEST

/* A node inserted already counted counts at once; removing a counted node
 * takes its count away. */
START_TEST(test_insert_counted)
{
    struct el *els = els_new(3);
    struct ostree t;
    ostree_init(&t, el_cmp);
    els[1].node.counted = true;
    for (size_t i = 0; i < 3; i++) {
        ostree_insert(&t, &els[i].node);
        els[i].in_tree = true;
    }
    ostree_verify(&t, els, 3);
    ck_assert_ptr_eq(ostree_select(&t, 0), &els[1].node);
    ck_assert_ptr_null(ostree_next(&els[1].node));
    ck_assert_ptr_eq(ostree_next(&els[0].node), &els[1].node); /* from an uncounted node */
    ostree_remove(&t, &els[1].node);
    els[1].in_tree = false;
    ostree_verify(&t, els, 3);
    ck_assert_uint_eq(ostree_count(&t), 0);
    free(els);
}
END_TEST

/* Random inserts, removes and counted flips against the model. */
START_TEST(test_random)
{
    enum { N = 3000, OPS = 30000 };
    struct el *els = els_new(N);
    struct ostree t;
    ostree_init(&t, el_cmp);
    rng_seed(7);
    for (int op = 0; op < OPS; op++) {
        struct el *e = &els[rng_below(N)];
        switch (rng_below(3)) {
        case 0:
            if (!e->in_tree) {
                e->node.counted = rng_below(2);
                ostree_insert(&t, &e->node);
                e->in_tree = true;
            }
            break;
        case 1:
            if (e->in_tree) {
                ostree_remove(&t, &e->node);
                e->in_tree = false;
            }
            break;
        default:
            ostree_set_counted(&e->node, !e->node.counted);
            break;
        }
        if (op % 1000 == 0)
            ostree_verify(&t, els, N);
    }
    ostree_verify(&t, els, N);
    free(els);
}
END_TEST

/* The depth stays logarithmic when keys arrive sorted. */
static uint32_t
depth(const struct ostree_node *n)
{
    if (n == NULL)
        return 0;
    uint32_t l = depth(n->left), r = depth(n->right); /* WQ_MAX would call twice */
    return 1 + WQ_MAX(l, r);
}

START_TEST(test_depth)
{
    enum { N = 100000 };
    struct el *els = els_new(N);
    struct ostree t;
    ostree_init(&t, el_cmp);
    for (size_t i = 0; i < N; i++)
        ostree_insert(&t, &els[i].node);
    /* 2 ln n is about 23 here; a treap's depth is rarely past 3 ln n */
    ck_assert_uint_lt(depth(t.root), 60);
    free(els);
}
END_TEST

static Suite *
ostree_suite(void)
{
    const struct unit_case cases[] = {
        {"empty", test_empty},
        {"sequential", test_sequential},
        {"insert_counted", test_insert_counted},
        {"random", test_random},
        {"depth", test_depth},
    };
    return unit_suite("ostree", cases, WQ_ARRAY_LEN(cases));
}

int
main(void)
{
    return unit_run(ostree_suite(), NULL);
}
