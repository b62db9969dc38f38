/*
 * xalloc.h - allocation of small objects that cannot sensibly fail.
 *
 * When memory for a few hundred bytes is gone, the process cannot do useful
 * work; these log one line and abort instead of threading NULL through every
 * caller. Anything sized by outside input uses a capped ms_buf_t or a
 * checked malloc instead (docs/CONVENTIONS.md, "Memory: two tiers"). The
 * caller owns every result.
 *
 * Every out-of-memory abort of the project goes through ms_oom(), also for
 * allocators that are not ours (cJSON's, OpenSSL's, strdup in a struct
 * initializer): wrap their result in ms_xcheck().
 */
#ifndef MESHSCALER_XALLOC_H
#define MESHSCALER_XALLOC_H

#include <stddef.h>

/* Log "out of memory" with what (a short noun: "informer cache") and abort. */
_Noreturn void ms_oom(const char *what);
/* p when not NULL; else ms_oom(what). For other libraries' allocators:
 * copy = ms_xcheck(cJSON_Duplicate(obj, true), "object copy"). */
void *ms_xcheck(void *p, const char *what);

void *ms_xmalloc(size_t n);
void *ms_xcalloc(size_t count, size_t size);
void *ms_xrealloc(void *p, size_t n);
char *ms_xstrdup(const char *s);
/* A copy of s, or NULL when s is NULL (optional settings). */
char *ms_xstrdup_opt(const char *s);
char *ms_xstrndup(const char *s, size_t n);
/* Make the array p of *cap elements of size bytes hold at least need:
 * doubles from 16, updates *cap, returns the (maybe moved) array. The one
 * growth loop of the project; aborts when the size would overflow. */
void *ms_xgrow(void *p, size_t *cap, size_t need, size_t size);
/* A new string from a printf format. */
char *ms_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Give the free pages inside the heap back to the kernel (glibc's
 * malloc_trim; elsewhere nothing): after a burst (10,000 queued status
 * patches drained) the holes stay resident otherwise. Costs a walk of the
 * free lists: call it seldom. */
void ms_heap_trim(void);

#endif
