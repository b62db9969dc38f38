/* buf.c - capped growable buffer. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/buf.h"

void ms_buf_init(ms_buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

ms_err_t ms_buf_append(ms_buf_t *b, const void *data, size_t n)
{
    size_t need;

    if (n > b->max - b->len)
        return MS_ERR_TOOLARGE;
    need = b->len + n + 1; /* room for the terminating NUL */
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;

        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        p = realloc(b->data, cap);
        if (p == NULL)
            return MS_ERR_NOMEM;
        b->data = p;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return MS_OK;
}

ms_err_t ms_buf_vappendf(ms_buf_t *b, const char *fmt, va_list ap)
{
    char small[512];
    char *big;
    va_list again;
    int n;
    ms_err_t err;

    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0 || (size_t)n < sizeof small) {
        va_end(again);
        return n < 0 ? MS_ERR_INVALID : ms_buf_append(b, small, (size_t)n);
    }
    /* Longer than the stack buffer: format once more into the heap. */
    if ((size_t)n > b->max - b->len) {
        va_end(again);
        return MS_ERR_TOOLARGE;
    }
    big = malloc((size_t)n + 1);
    if (big == NULL) {
        va_end(again);
        return MS_ERR_NOMEM;
    }
    vsnprintf(big, (size_t)n + 1, fmt, again);
    va_end(again);
    err = ms_buf_append(b, big, (size_t)n);
    free(big);
    return err;
}

ms_err_t ms_buf_appendf(ms_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    ms_err_t err;

    va_start(ap, fmt);
    err = ms_buf_vappendf(b, fmt, ap);
    va_end(ap);
    return err;
}

ms_err_t ms_buf_read_stream(ms_buf_t *b, FILE *f)
{
    char chunk[65536];
    size_t n;
    ms_err_t err;

    if ((err = ms_buf_append(b, "", 0)) != MS_OK) /* data is never NULL after this */
        return err;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if ((err = ms_buf_append(b, chunk, n)) != MS_OK)
            return err;
    return ferror(f) ? MS_ERR_IO : MS_OK;
}

void ms_buf_cleanup(ms_buf_t *b)
{
    if (b == NULL)
        return;
    free(b->data);
    ms_buf_init(b, b->max);
}

void ms_fixbuf_init(ms_fixbuf_t *f, char *data, size_t cap)
{
    f->data = data;
    f->cap = cap;
    f->used = 0;
    if (cap > 0)
        data[0] = '\0';
}

void ms_fixbuf_appendf(ms_fixbuf_t *f, const char *fmt, ...)
{
    size_t room = f->used < f->cap ? f->cap - f->used : 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(room ? f->data + f->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        f->used += (size_t)n;
}
