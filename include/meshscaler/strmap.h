/*
 * strmap.h - a string-keyed hash map of pointers (open addressing with
 * linear probing, FNV-1a, deletion by backward shift, so lookups stay short
 * after many deletes). The one map of the project: caches, indexes and
 * tables keyed by "namespace/name" use it.
 *
 * Ownership: the map owns copies of its keys, never the values: a caller
 * that stores allocated values frees them (ms_strmap_next walks them)
 * before ms_strmap_cleanup. Not thread-safe: the owner locks.
 */
#ifndef MESHSCALER_STRMAP_H
#define MESHSCALER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char **keys;  /* NULL: an empty slot */
    void **vals;
    size_t cap;   /* a power of two, or 0 */
    size_t n;
} ms_strmap_t;

void ms_strmap_init(ms_strmap_t *m);
/* Free the keys and the table (not the values). */
void ms_strmap_cleanup(ms_strmap_t *m);

/* The value under key (its first len bytes), or NULL. */
void *ms_strmap_getn(const ms_strmap_t *m, const char *key, size_t len);
void *ms_strmap_get(const ms_strmap_t *m, const char *key);
/* Store val (not NULL) under key; returns the value it replaced, or NULL.
 * Aborts on allocation failure. */
void *ms_strmap_put(ms_strmap_t *m, const char *key, void *val);
/* Remove key; returns its value, or NULL when absent. */
void *ms_strmap_del(ms_strmap_t *m, const char *key);
size_t ms_strmap_size(const ms_strmap_t *m);

/* Walk the map: start with *pos = 0; each call fills the next key and value
 * and returns true, false at the end. The map must not change meanwhile
 * (except ms_strmap_put of a key already present). */
bool ms_strmap_next(const ms_strmap_t *m, size_t *pos, const char **key, void **val);

#endif
