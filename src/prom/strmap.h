/*
 * strmap.h - a small string -> index hash map (open addressing, FNV-1a),
 * private to src/prom. The map owns copies of its keys. Not thread-safe.
 */
#ifndef MESHSCALER_PROM_STRMAP_H
#define MESHSCALER_PROM_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char **keys;
    size_t *vals;
    size_t cap; /* a power of two, or 0 */
    size_t n;
} ms__strmap_t;

void ms__strmap_init(ms__strmap_t *m);
void ms__strmap_cleanup(ms__strmap_t *m);
/* The value stored under key (len bytes), if any. */
bool ms__strmap_get(const ms__strmap_t *m, const char *key, size_t len, size_t *val);
/* Insert key -> val unless present; returns the value now stored under key.
 * Aborts on allocation failure. */
size_t ms__strmap_put(ms__strmap_t *m, const char *key, size_t len, size_t val);

#endif
