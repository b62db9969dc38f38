/* strmap.c - string -> index map for query deduplication and result lookup. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"
#include "strmap.h"

static uint64_t hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void ms__strmap_init(ms__strmap_t *m) { memset(m, 0, sizeof *m); }

void ms__strmap_cleanup(ms__strmap_t *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    ms__strmap_init(m);
}

/* Slot of key, or of the empty slot where it would go. */
static size_t find(const ms__strmap_t *m, const char *key, size_t len)
{
    size_t i = (size_t)hash(key, len) & (m->cap - 1);

    while (m->keys[i] != NULL && (strlen(m->keys[i]) != len || memcmp(m->keys[i], key, len) != 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

bool ms__strmap_get(const ms__strmap_t *m, const char *key, size_t len, size_t *val)
{
    size_t i;

    if (m->cap == 0)
        return false;
    i = find(m, key, len);
    if (m->keys[i] == NULL)
        return false;
    *val = m->vals[i];
    return true;
}

static void grow(ms__strmap_t *m)
{
    ms__strmap_t bigger;

    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.n = m->n;
    bigger.keys = ms_xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = ms_xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] != NULL) {
            size_t j = find(&bigger, m->keys[i], strlen(m->keys[i]));
            bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

size_t ms__strmap_put(ms__strmap_t *m, const char *key, size_t len, size_t val)
{
    size_t i;

    if ((m->n + 1) * 4 > m->cap * 3)
        grow(m);
    i = find(m, key, len);
    if (m->keys[i] != NULL)
        return m->vals[i];
    m->keys[i] = ms_xstrndup(key, len);
    m->vals[i] = val;
    m->n++;
    return val;
}
