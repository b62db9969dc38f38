/*
 * strmap.h - a string-keyed hash map of pointers (open addressing with
 * linear probing, FNV-1a, deletion by backward shift, so lookups stay short
 * after many deletes). The one map of the project: the informer's cache,
 * the work queue's keys, the metrics' series index, the Prometheus tick's
 * indexes and the controller's tables use it.
 *
 * Ownership: the map never owns the values: a caller that stores allocated
 * values frees them (ms_strmap_next walks them) before ms_strmap_cleanup.
 * Keys: a map from ms_strmap_init owns copies of its keys. A map from
 * ms_strmap_init_intrusive stores no keys: its values carry them (an
 * informer entry, a queue entry, a metric series) and key_of reads them, so
 * each value's key must stay the same while it is in the map; put's key is
 * then the value's own. Allocation failure aborts (xalloc.h). Not
 * thread-safe: the owner locks.
 */
#ifndef MESHSCALER_STRMAP_H
#define MESHSCALER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The key that val (a value of the map) carries; ctx as given at init. */
typedef const char *(*ms_strmap_key_fn)(const void *val, const void *ctx);

typedef struct {
    char **keys; /* owned copies; NULL in an intrusive map */
    void **vals; /* NULL: an empty slot */
    size_t cap;  /* a power of two, or 0 */
    size_t n;
    ms_strmap_key_fn key_of; /* intrusive maps only */
    const void *key_ctx;
} ms_strmap_t;

/* An empty map that copies its keys; allocates nothing until the first put. */
void ms_strmap_init(ms_strmap_t *m);
/* An empty map whose values carry their keys (see above); ctx is borrowed
 * for the map's life. */
void ms_strmap_init_intrusive(ms_strmap_t *m, ms_strmap_key_fn key_of, const void *ctx);
/* Free the table and the key copies (not the values); the map is empty
 * afterwards, of the same kind. */
void ms_strmap_cleanup(ms_strmap_t *m);

/* The value under key (its first len bytes), or NULL. */
void *ms_strmap_getn(const ms_strmap_t *m, const char *key, size_t len);
void *ms_strmap_get(const ms_strmap_t *m, const char *key);
/* Store val (not NULL) under key; returns the value it replaced, or NULL.
 * Replacing a present key never moves the others. */
void *ms_strmap_put(ms_strmap_t *m, const char *key, void *val);
/* Remove key; returns its value, or NULL when absent. */
void *ms_strmap_del(ms_strmap_t *m, const char *key);
size_t ms_strmap_size(const ms_strmap_t *m);

/* Walk the map: start with *pos = 0; each call fills the next key and value
 * and returns true, false at the end. The map must not change meanwhile
 * (except ms_strmap_put of a key already present). */
bool ms_strmap_next(const ms_strmap_t *m, size_t *pos, const char **key, void **val);

/* 64-bit FNV-1a, the project's one hash: start from MS_FNV1A_BASIS and
 * extend h by the n bytes at p (the map's keys; the decision fingerprint of
 * controller/report.c over several fields in turn). Pure. */
#define MS_FNV1A_BASIS 1469598103934665603ull
uint64_t ms_fnv1a(uint64_t h, const void *p, size_t n);

/* The map's hash of key's first len bytes (64-bit FNV-1a); a key's first
 * probe is the slot its low bits name. Tests use it to place a key in a
 * given slot. */
uint64_t ms_strmap_hash(const char *key, size_t len);

#endif
