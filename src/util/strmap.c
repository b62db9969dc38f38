/*
 * strmap.c - see strmap.h. Kept at most half full, so probes stay short.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/strmap.h"
#include "meshscaler/xalloc.h"

uint64_t ms_strmap_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static size_t home(const ms_strmap_t *m, const char *key, size_t len)
{
    return (size_t)ms_strmap_hash(key, len) & (m->cap - 1);
}

void ms_strmap_init(ms_strmap_t *m) { memset(m, 0, sizeof *m); }

void ms_strmap_init_borrowed(ms_strmap_t *m)
{
    ms_strmap_init(m);
    m->borrowed = true;
}

void ms_strmap_cleanup(ms_strmap_t *m)
{
    bool borrowed = m->borrowed;

    for (size_t i = 0; i < m->cap && !borrowed; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
    m->borrowed = borrowed;
}

static bool same(const char *stored, const char *key, size_t len)
{
    return strncmp(stored, key, len) == 0 && stored[len] == '\0';
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t find(const ms_strmap_t *m, const char *key, size_t len)
{
    size_t i = home(m, key, len);

    while (m->keys[i] != NULL && !same(m->keys[i], key, len))
        i = (i + 1) & (m->cap - 1);
    return i;
}

void *ms_strmap_getn(const ms_strmap_t *m, const char *key, size_t len)
{
    size_t i;

    if (m->cap == 0)
        return NULL;
    i = find(m, key, len);
    return m->keys[i] != NULL ? m->vals[i] : NULL;
}

void *ms_strmap_get(const ms_strmap_t *m, const char *key) { return ms_strmap_getn(m, key, strlen(key)); }

static void grow(ms_strmap_t *m)
{
    ms_strmap_t bigger = {0};

    bigger.borrowed = m->borrowed;
    bigger.cap = m->cap ? m->cap * 2 : 16;
    bigger.keys = ms_xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = ms_xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] != NULL) {
            size_t j = find(&bigger, m->keys[i], strlen(m->keys[i]));
            bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
        }
    }
    bigger.n = m->n;
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

void *ms_strmap_put(ms_strmap_t *m, const char *key, void *val)
{
    size_t len = strlen(key), i;
    void *old;

    if (m->cap > 0 && m->keys[i = find(m, key, len)] != NULL) {
        old = m->vals[i];
        m->vals[i] = val;
        if (m->borrowed)
            m->keys[i] = (char *)key;
        return old;
    }
    if ((m->n + 1) * 2 > m->cap)
        grow(m);
    i = find(m, key, len);
    m->keys[i] = m->borrowed ? (char *)key : ms_xstrndup(key, len);
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
    if (m->keys[i] == NULL)
        return NULL;
    val = m->vals[i];
    if (!m->borrowed)
        free(m->keys[i]);
    m->keys[i] = NULL;
    m->n--;
    /* Backward shift: move later members of the probe run into the hole when
     * their home slot is not between the hole and where they sit. */
    for (j = (i + 1) & (m->cap - 1); m->keys[j] != NULL; j = (j + 1) & (m->cap - 1)) {
        size_t h = home(m, m->keys[j], strlen(m->keys[j]));
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->keys[j] = NULL;
        i = j;
    }
    return val;
}

size_t ms_strmap_size(const ms_strmap_t *m) { return m->n; }

bool ms_strmap_next(const ms_strmap_t *m, size_t *pos, const char **key, void **val)
{
    while (*pos < m->cap) {
        size_t i = (*pos)++;
        if (m->keys[i] != NULL) {
            *key = m->keys[i];
            *val = m->vals[i];
            return true;
        }
    }
    return false;
}
