/* ostree.h - an order-statistic tree: a treap of nodes embedded in the
 * caller's objects, ordered by a comparison function.  A node is "counted"
 * or not, and each node knows how many counted nodes its subtree holds, so
 * the k-th counted node in order is found in O(log n) and the walk on from
 * it skips uncounted runs a subtree at a time.  Marking a node counted or
 * not touches its ancestors only (no comparisons).  The shape is a treap
 * whose priorities hash the nodes' addresses: depth O(log n) expected,
 * whatever order the keys come in. */
#ifndef WQ_OSTREE_H
#define WQ_OSTREE_H

#include "lib/wq.h"

/* 32 bytes on LP64: embed it in the object it orders. */
struct ostree_node {
    struct ostree_node *left, *right, *parent;
    uint32_t count;       /* counted nodes in this subtree, this one included */
    uint32_t prio : 31;   /* a parent's priority is never below its children's */
    uint32_t counted : 1; /* this node counts */
};

/* Order of two nodes: negative, 0 (only for the same node), positive. */
typedef int (*ostree_cmp_fn)(const struct ostree_node *a, const struct ostree_node *b);

struct ostree {
    struct ostree_node *root;
    ostree_cmp_fn cmp;
};

void ostree_init(struct ostree *t, ostree_cmp_fn cmp);

/* Link n (not in any tree, its key unlike every other's); n counts if
 * n->counted is set. */
void ostree_insert(struct ostree *t, struct ostree_node *n);
/* Unlink n from t. */
void ostree_remove(struct ostree *t, struct ostree_node *n);
/* Make n count or not, fixing its ancestors' counts.  n may be outside any
 * tree (then only n changes). */
void ostree_set_counted(struct ostree_node *n, bool counted);

/* The counted nodes in t. */
static inline uint32_t
ostree_count(const struct ostree *t)
{
    return t->root != NULL ? t->root->count : 0;
}

/* The counted node with `rank` counted nodes before it, or NULL if rank is
 * at or past ostree_count. */
struct ostree_node *ostree_select(const struct ostree *t, uint64_t rank);
/* The first counted node after n in order, or NULL. */
struct ostree_node *ostree_next(const struct ostree_node *n);
/* Every node in order, counted or not: the first, or NULL if t is empty;
 * the one after n, or NULL. */
struct ostree_node *ostree_min_any(const struct ostree *t);
struct ostree_node *ostree_next_any(const struct ostree_node *n);

#endif /* WQ_OSTREE_H */
