/*
 * strmap.c - see strmap.h. Kept at most half full, so probes stay short.
 * An empty slot is a NULL value (values are never NULL).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/strmap.h"
#include "meshscaler/xalloc.h"

uint64_t ms_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t ms_strmap_hash(const char *s, size_t len)
{
    return ms_fnv1a(MS_FNV1A_BASIS, s, len);
}

void ms_strmap_init(ms_strmap_t *m)
{
    memset(m, 0, sizeof *m);
}

void ms_strmap_init_intrusive(ms_strmap_t *m, ms_strmap_key_fn key_of, const void *ctx)
{
    ms_strmap_init(m);
    m->key_of = key_of;
    m->key_ctx = ctx;
}

void ms_strmap_cleanup(ms_strmap_t *m)
{
    ms_strmap_key_fn key_of = m->key_of;
    const void *ctx = m->key_ctx;

    for (size_t i = 0; i < m->cap && m->keys != NULL; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    ms_strmap_init_intrusive(m, key_of, ctx);
}

/* The key of occupied slot i. */
static const char *key_at(const ms_strmap_t *m, size_t i)
{
    return m->key_of != NULL ? m->key_of(m->vals[i], m->key_ctx) : m->keys[i];
}

static size_t home(const ms_strmap_t *m, const char *key, size_t len)
{
    return (size_t)ms_strmap_hash(key, len) & (m->cap - 1);
}

static bool same(const char *stored, const char *key, size_t len)
{
    return strncmp(stored, key, len) == 0 && stored[len] == '\0';
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t find(const ms_strmap_t *m, const char *key, size_t len)
{
    size_t i = home(m, key, len);

    while (m->vals[i] != NULL && !same(key_at(m, i), key, len))
        i = (i + 1) & (m->cap - 1);
    return i;
}

void *ms_strmap_getn(const ms_strmap_t *m, const char *key, size_t len)
{
    return m->cap > 0 ? m->vals[find(m, key, len)] : NULL;
}

void *ms_strmap_get(const ms_strmap_t *m, const char *key)
{
    return ms_strmap_getn(m, key, strlen(key));
}

static void grow(ms_strmap_t *m)
{
    ms_strmap_t bigger = *m;

    bigger.cap = m->cap ? m->cap * 2 : 16;
    bigger.keys = m->key_of != NULL ? NULL : ms_xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = ms_xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->vals[i] != NULL) {
            const char *key = key_at(m, i);
            size_t j = find(&bigger, key, strlen(key));
            if (bigger.keys != NULL)
                bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
        }
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

void *ms_strmap_put(ms_strmap_t *m, const char *key, void *val)
{
    size_t len = strlen(key), i;
    void *old;

    if (m->cap > 0 && m->vals[i = find(m, key, len)] != NULL) {
        old = m->vals[i];
        m->vals[i] = val;
        return old;
    }
    if ((m->n + 1) * 2 > m->cap)
        grow(m);
    i = find(m, key, len);
    if (m->keys != NULL)
        m->keys[i] = ms_xstrndup(key, len);
    m->vals[i] = val;
    m->n++;
    return NULL;
}

void *ms_strmap_del(ms_strmap_t *m, const char *key)
{
    size_t len = strlen(key), i, j;
    void *val;

    if (m->cap == 0)
        return NULL;
    i = find(m, key, len);
    if ((val = m->vals[i]) == NULL)
        return NULL;
    if (m->keys != NULL) {
        free(m->keys[i]);
        m->keys[i] = NULL;
    }
    m->vals[i] = NULL;
    m->n--;
    /* Backward shift: move later members of the probe run into the hole when
     * their home slot is not between the hole and where they sit. */
    for (j = (i + 1) & (m->cap - 1); m->vals[j] != NULL; j = (j + 1) & (m->cap - 1)) {
        const char *k = key_at(m, j);
        size_t h = home(m, k, strlen(k));
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays)
            continue;
        if (m->keys != NULL) {
            m->keys[i] = m->keys[j];
            m->keys[j] = NULL;
        }
        m->vals[i] = m->vals[j];
        m->vals[j] = NULL;
        i = j;
    }
    return val;
}

size_t ms_strmap_size(const ms_strmap_t *m)
{
    return m->n;
}

bool ms_strmap_next(const ms_strmap_t *m, size_t *pos, const char **key, void **val)
{
    while (*pos < m->cap) {
        size_t i = (*pos)++;
        if (m->vals[i] != NULL) {
            *key = key_at(m, i);
            *val = m->vals[i];
            return true;
        }
    }
    return false;
}
