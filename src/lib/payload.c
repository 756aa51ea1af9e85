/* payload.c - payload bytes, reference counted when large. */
#include "lib/wq.h"
#include "lib/payload.h"

#include <stdalign.h>
#include <string.h>

#include "lib/alloc.h"

/* The header before the bytes of a shared payload; its size keeps the
 * bytes as aligned as the allocation. */
struct payload_head {
    alignas(max_align_t) uint32_t refs;
};

static size_t payload_live;

static struct payload_head *
payload_head(const void *p)
{
    return (struct payload_head *)((char *)p - sizeof(struct payload_head));
}

char *
payload_new(const void *data, size_t len)
{
    if (!payload_shared(len)) {
        char *p = wq_try_malloc(len);
        if (p != NULL)
            memcpy(p, data, len);
        return p;
    }
    struct payload_head *h = wq_try_malloc(sizeof *h + len);
    if (h == NULL)
        return NULL;
    h->refs = 1;
    payload_live++;
    char *p = (char *)(h + 1);
    memcpy(p, data, len);
    return p;
}

void
payload_ref(char *p)
{
    payload_head(p)->refs++;
}

/* Drop one reference to shared p; free it with the last. */
static void
payload_unref(char *p, size_t len)
{
    struct payload_head *h = payload_head(p);
    WQ_ASSERT(h->refs > 0);
    if (--h->refs > 0)
        return;
    payload_live--;
    wq_sized_free(h, sizeof *h + len);
}

void
payload_free(char *p, size_t len)
{
    if (p == NULL)
        return;
    if (payload_shared(len))
        payload_unref(p, len);
    else
        wq_sized_free(p, len);
}

void
payload_release(const void *data, size_t len, void *extra)
{
    payload_unref((char *)data, len);
}

size_t
payload_shared_live(void)
{
    return payload_live;
}
