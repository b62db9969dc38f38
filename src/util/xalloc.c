/* xalloc.c - allocate or log and abort. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__ /* defined by the headers above */
#include <malloc.h>
#endif

#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

static void *check(void *p, size_t n)
{
    if (p == NULL) {
        MS_LOG_ERROR("out of memory", MS_I("bytes", (long long)n));
        abort();
    }
    return p;
}

void ms_oom(const char *what)
{
    MS_LOG_ERROR("out of memory", MS_S("what", what));
    abort();
}

void *ms_xcheck(void *p, const char *what)
{
    if (p == NULL)
        ms_oom(what);
    return p;
}

void *ms_xmalloc(size_t n)
{
    return check(malloc(n ? n : 1), n);
}

void *ms_xcalloc(size_t count, size_t size)
{
    return check(calloc(count ? count : 1, size ? size : 1), count * size);
}

void *ms_xrealloc(void *p, size_t n)
{
    return check(realloc(p, n ? n : 1), n);
}

void *ms_xgrow(void *p, size_t *cap, size_t need, size_t size)
{
    size_t ncap = *cap ? *cap : 16;

    if (need <= *cap)
        return p;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            check(NULL, SIZE_MAX);
        ncap *= 2;
    }
    if (size != 0 && ncap > SIZE_MAX / size)
        check(NULL, SIZE_MAX);
    p = ms_xrealloc(p, ncap * size);
    *cap = ncap;
    return p;
}

char *ms_xstrdup(const char *s)
{
    return check(strdup(s), strlen(s) + 1);
}

char *ms_xstrdup_opt(const char *s)
{
    return s != NULL ? ms_xstrdup(s) : NULL;
}

char *ms_xstrndup(const char *s, size_t n)
{
    return check(strndup(s, n), n + 1);
}

char *ms_xasprintf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *out;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { /* not memory: a format of ours that cannot print is a bug */
        MS_LOG_ERROR("cannot format a string", MS_S("format", fmt));
        abort();
    }
    out = ms_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

void ms_heap_trim(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
