/*
 * xalloc.h - allocation of small objects that cannot sensibly fail.
 *
 * When memory for a few hundred bytes is gone, the process cannot do useful
 * work; these log one line and abort instead of threading NULL through every
 * caller (CONVENTIONS.md). Anything sized by outside input uses a capped
 * ms_buf_t or a checked malloc instead. The caller owns every result.
 */
#ifndef MESHSCALER_XALLOC_H
#define MESHSCALER_XALLOC_H

#include <stddef.h>

void *ms_xmalloc(size_t n);
void *ms_xcalloc(size_t count, size_t size);
void *ms_xrealloc(void *p, size_t n);
char *ms_xstrdup(const char *s);
char *ms_xstrndup(const char *s, size_t n);
/* A new string from a printf format. */
char *ms_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
