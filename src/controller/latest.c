/*
 * latest.c - a queue that keeps the latest value per key: the status writer
 * and the scale writer hold one pending write per object in it. Keys leave in
 * the order they first arrived; a key queued again keeps its place and takes
 * the newer value (the older one is handed back to its owner, never
 * written). Not locked: its user holds its own lock around it.
 */
#include <stdlib.h>

#include "controller_internal.h"
#include "meshscaler/xalloc.h"

void ms__latest_init(ms__latest_t *q, size_t capacity)
{
    q->cap = capacity > 0 ? capacity : 1024;
    q->order = ms_xcalloc(q->cap, sizeof *q->order);
    q->head = 0;
    q->len = 0;
    ms_strmap_init(&q->values);
}

ms__latest_put_t ms__latest_put(ms__latest_t *q, const char *key, void *val, void **replaced)
{
    void *old = ms_strmap_get(&q->values, key);

    *replaced = NULL;
    if (old != NULL) {
        ms_strmap_put(&q->values, key, val); /* in place: its turn stays */
        *replaced = old;
        return MS__LATEST_REPLACED;
    }
    if (q->len == q->cap)
        return MS__LATEST_FULL;
    ms_strmap_put(&q->values, key, val);
    q->order[(q->head + q->len) % q->cap] = ms_xstrdup(key);
    q->len++;
    return MS__LATEST_ADDED;
}

void *ms__latest_pop(ms__latest_t *q)
{
    char *key;
    void *val;

    if (q->len == 0)
        return NULL;
    key = q->order[q->head];
    q->order[q->head] = NULL;
    q->head = (q->head + 1) % q->cap;
    q->len--;
    val = ms_strmap_del(&q->values, key);
    free(key);
    return val;
}

void ms__latest_cleanup(ms__latest_t *q, void (*free_val)(void *val))
{
    void *val;

    while ((val = ms__latest_pop(q)) != NULL)
        if (free_val != NULL)
            free_val(val);
    ms_strmap_cleanup(&q->values);
    free(q->order);
    q->order = NULL;
    q->cap = 0;
}
