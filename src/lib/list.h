/* list.h - intrusive doubly-linked lists, in two shapes:
 *   struct list   a head node, circular through it: push at either end, walk
 *                 in order (connections, parked leasers);
 *   struct hlist  a head of one pointer, for arrays of many heads and
 *                 structs that count every byte (timer wheel slots, a job's
 *                 waiters): push at the front only.
 * Each element embeds a node; insert and unlink are O(1) and need no head;
 * an unlinked node has NULL links. */
#ifndef WQ_LIST_H
#define WQ_LIST_H

#include "lib/wq.h"

struct list {
    struct list *prev, *next;
};

static inline void
list_init(struct list *head)
{
    head->prev = head->next = head;
}

static inline bool
list_empty(const struct list *head)
{
    return head->next == head;
}

/* Is node n in a list?  (Zeroed and unlinked nodes are not.) */
static inline bool
list_linked(const struct list *n)
{
    return n->next != NULL;
}

/* Link n in before pos (pos may be the head: then n goes last). */
static inline void
list_insert_before(struct list *pos, struct list *n)
{
    n->prev = pos->prev;
    n->next = pos;
    pos->prev->next = n;
    pos->prev = n;
}

static inline void
list_push_back(struct list *head, struct list *n)
{
    list_insert_before(head, n);
}

static inline void
list_push_front(struct list *head, struct list *n)
{
    list_insert_before(head->next, n);
}

static inline void
list_unlink(struct list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
}

/* The element that embeds node n as member. */
#define list_item(n, type, member) WQ_CONTAINER_OF(n, type, member)

/* Walk head's nodes in order; the current one may be unlinked (and its
 * element freed) in the body, no other. */
#define list_each_safe(n, tmp, head)                                                               \
    for ((n) = (head)->next, (tmp) = (n)->next; (n) != (head); (n) = (tmp), (tmp) = (n)->next)

/* ---- one-pointer heads ---- */

struct hlist_node {
    struct hlist_node *next;
    struct hlist_node **pprev; /* the link that points at this node; NULL: unlinked */
};

struct hlist {
    struct hlist_node *first;
};

static inline void
hlist_node_init(struct hlist_node *n)
{
    n->next = NULL;
    n->pprev = NULL;
}

static inline bool
hlist_linked(const struct hlist_node *n)
{
    return n->pprev != NULL;
}

static inline void
hlist_push(struct hlist *h, struct hlist_node *n)
{
    n->next = h->first;
    if (n->next != NULL)
        n->next->pprev = &n->next;
    n->pprev = &h->first;
    h->first = n;
}

static inline void
hlist_unlink(struct hlist_node *n)
{
    *n->pprev = n->next;
    if (n->next != NULL)
        n->next->pprev = n->pprev;
    n->next = NULL;
    n->pprev = NULL;
}

#endif /* WQ_LIST_H */
