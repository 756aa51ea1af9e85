/* ostree.c - the order-statistic treap: rotations that keep counts and
 * parent links, insert and remove by rotation, select and successor guided
 * by the counts. */
#include "lib/wq.h"
#include "lib/ostree.h"

#include <stddef.h>

void
ostree_init(struct ostree *t, ostree_cmp_fn cmp)
{
    t->root = NULL;
    t->cmp = cmp;
}

static inline uint32_t
ostree_sub(const struct ostree_node *n)
{
    return n != NULL ? n->count : 0;
}

static inline void
ostree_recount(struct ostree_node *n)
{
    n->count = ostree_sub(n->left) + ostree_sub(n->right) + n->counted;
}

/* A priority from n's address (splitmix64's finaliser): allocation order
 * cannot line the nodes up into a list, and no key a client picks can. */
static uint32_t
ostree_prio_of(const struct ostree_node *n)
{
    uint64_t x = (uint64_t)(uintptr_t)n;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((x ^ (x >> 31)) >> 33);
}

/* The link that points at n: its parent's child pointer, or the root. */
static struct ostree_node **
ostree_link(struct ostree *t, struct ostree_node *n)
{
    if (n->parent == NULL)
        return &t->root;
    return n->parent->left == n ? &n->parent->left : &n->parent->right;
}

/* Rotate n above its parent, keeping the in-order sequence. */
static void
ostree_rotate_up(struct ostree *t, struct ostree_node *n)
{
    struct ostree_node *p = n->parent, *moved;
    *ostree_link(t, p) = n;
    n->parent = p->parent;
    if (p->left == n) {
        moved = n->right;
        p->left = moved;
        n->right = p;
    } else {
        moved = n->left;
        p->right = moved;
        n->left = p;
    }
    if (moved != NULL)
        moved->parent = p;
    p->parent = n;
    ostree_recount(p);
    ostree_recount(n);
}

/* Add delta to the counts of n and of every ancestor. */
static void
ostree_add_up(struct ostree_node *n, uint32_t delta)
{
    for (; n != NULL; n = n->parent)
        n->count += delta;
}

void
ostree_insert(struct ostree *t, struct ostree_node *n)
{
    struct ostree_node *parent = NULL, **at = &t->root;
    while (*at != NULL) {
        parent = *at;
        at = t->cmp(n, parent) < 0 ? &parent->left : &parent->right;
    }
    *at = n;
    n->parent = parent;
    n->left = n->right = NULL;
    n->prio = ostree_prio_of(n);
    n->count = 0;
    ostree_add_up(n, n->counted);
    while (n->parent != NULL && n->parent->prio < n->prio)
        ostree_rotate_up(t, n);
}

void
ostree_remove(struct ostree *t, struct ostree_node *n)
{
    /* Rotate n down below its higher-priority child until it has one. */
    while (n->left != NULL && n->right != NULL)
        ostree_rotate_up(t, n->left->prio > n->right->prio ? n->left : n->right);
    struct ostree_node *child = n->left != NULL ? n->left : n->right;
    *ostree_link(t, n) = child;
    if (child != NULL)
        child->parent = n->parent;
    ostree_add_up(n->parent, -(uint32_t)n->counted);
    n->left = n->right = n->parent = NULL;
    n->count = n->counted;
}

void
ostree_set_counted(struct ostree_node *n, bool counted)
{
    if (n->counted == counted)
        return;
    n->counted = counted;
    ostree_add_up(n, counted ? 1u : -1u);
}

struct ostree_node *
ostree_select(const struct ostree *t, uint64_t rank)
{
    struct ostree_node *n = t->root;
    if (rank >= ostree_count(t))
        return NULL;
    for (;;) {
        uint32_t left = ostree_sub(n->left);
        if (rank < left) {
            n = n->left;
            continue;
        }
        rank -= left;
        if (n->counted) {
            if (rank == 0)
                return n;
            rank--;
        }
        n = n->right;
    }
}

/* The first counted node of the subtree at n, which holds one. */
static struct ostree_node *
ostree_first(struct ostree_node *n)
{
    for (;;) {
        if (ostree_sub(n->left) > 0)
            n = n->left;
        else if (n->counted)
            return n;
        else
            n = n->right;
    }
}

struct ostree_node *
ostree_next(const struct ostree_node *n)
{
    if (ostree_sub(n->right) > 0)
        return ostree_first(n->right);
    /* Climb to the first ancestor n is left of; it, or its right subtree,
     * is next if it counts. */
    for (; n->parent != NULL; n = n->parent) {
        struct ostree_node *p = n->parent;
        if (p->left != n)
            continue;
        if (p->counted)
            return p;
        if (ostree_sub(p->right) > 0)
            return ostree_first(p->right);
    }
    return NULL;
}

struct ostree_node *
ostree_min_any(const struct ostree *t)
{
    struct ostree_node *n = t->root;
    while (n != NULL && n->left != NULL)
        n = n->left;
    return n;
}

struct ostree_node *
ostree_next_any(const struct ostree_node *n)
{
    if (n->right != NULL) {
        struct ostree_node *m = n->right;
        while (m->left != NULL)
            m = m->left;
        return m;
    }
    while (n->parent != NULL && n->parent->right == n)
        n = n->parent;
    return n->parent;
}
