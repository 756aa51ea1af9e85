/* check_list.c - unit tests for src/lib/list.h: both shapes of list, order,
 * unlinking from any place, and walking while unlinking. */
#include "lib/wq.h"
#include "lib/list.h"

#include <check.h>

#include "unit.h"

struct item {
    int v;
    struct list node;
    struct hlist_node hnode;
};

/* The values of head's items in order, as digits ("" when empty). */
static const char *
order(const struct list *head)
{
    static char s[32];
    size_t n = 0;
    for (const struct list *l = head->next; l != head; l = l->next) {
        ck_assert_ptr_eq(l->next->prev, l); /* linked both ways */
        s[n++] = (char)('0' + list_item(l, const struct item, node)->v);
    }
    s[n] = '\0';
    return s;
}

START_TEST(test_list_order_and_unlink)
{
    struct list head;
    struct item it[5] = {{.v = 0}, {.v = 1}, {.v = 2}, {.v = 3}, {.v = 4}};
    list_init(&head);
    ck_assert(list_empty(&head));
    ck_assert(!list_linked(&it[0].node));
    list_push_back(&head, &it[1].node);
    list_push_back(&head, &it[2].node);
    list_push_front(&head, &it[0].node);
    list_push_back(&head, &it[3].node);
    ck_assert_str_eq(order(&head), "0123");
    list_unlink(&it[2].node); /* the middle */
    ck_assert(!list_linked(&it[2].node));
    ck_assert_str_eq(order(&head), "013");
    list_unlink(&it[0].node); /* the front */
    list_unlink(&it[3].node); /* the back */
    ck_assert_str_eq(order(&head), "1");
    list_insert_before(&it[1].node, &it[4].node);
    ck_assert_str_eq(order(&head), "41");
    list_unlink(&it[4].node);
    list_unlink(&it[1].node);
    ck_assert(list_empty(&head));
}
END_TEST

/* The walk survives unlinking (as freeing would) the node it stands on. */
START_TEST(test_list_each_safe)
{
    struct list head;
    struct item it[6];
    list_init(&head);
    for (int i = 0; i < 6; i++) {
        it[i] = (struct item){.v = i};
        list_push_back(&head, &it[i].node);
    }
    struct list *n, *tmp;
    int seen = 0;
    list_each_safe(n, tmp, &head)
    {
        struct item *x = list_item(n, struct item, node);
        ck_assert_int_eq(x->v, seen++);
        if (x->v % 2 == 0)
            list_unlink(n);
    }
    ck_assert_int_eq(seen, 6);
    ck_assert_str_eq(order(&head), "135");
}
END_TEST

START_TEST(test_hlist)
{
    struct hlist h = {NULL};
    struct item it[4];
    for (int i = 0; i < 4; i++) {
        it[i] = (struct item){.v = i};
        hlist_node_init(&it[i].hnode);
        ck_assert(!hlist_linked(&it[i].hnode));
        hlist_push(&h, &it[i].hnode);
        ck_assert(hlist_linked(&it[i].hnode));
    }
    /* pushed at the front: 3 2 1 0; unlink the first, a middle one, the last */
    hlist_unlink(&it[3].hnode);
    hlist_unlink(&it[1].hnode);
    hlist_unlink(&it[0].hnode);
    ck_assert(!hlist_linked(&it[1].hnode));
    ck_assert_ptr_eq(h.first, &it[2].hnode);
    ck_assert_ptr_null(it[2].hnode.next);
    ck_assert_ptr_eq(it[2].hnode.pprev, &h.first);
    hlist_unlink(&it[2].hnode);
    ck_assert_ptr_null(h.first);
}
END_TEST

int
main(void)
{
    const struct unit_case cases[] = {
        {"list_order_and_unlink", test_list_order_and_unlink},
        {"list_each_safe", test_list_each_safe},
        {"hlist", test_hlist},
    };
    return unit_run(unit_suite("list", cases, WQ_ARRAY_LEN(cases)), NULL);
}
