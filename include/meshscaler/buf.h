/*
 * buf.h - a growable byte buffer with a hard size cap (curl's dynbuf idea):
 * everything read from outside goes into one of these, so no input can
 * make meshscaler allocate without bound. And ms_fixbuf_t, formatted text
 * into a caller's fixed array, cut where it ends (one-line messages).
 *
 * Caller-provided storage: ms_buf_init() it, ms_buf_cleanup() it. The buffer
 * owns `data`, which is always NUL-terminated once anything was appended.
 * An ms_fixbuf_t owns nothing. Not thread-safe per buffer.
 */
#ifndef MESHSCALER_BUF_H
#define MESHSCALER_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "meshscaler/error.h"

typedef struct {
    char *data; /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    size_t max; /* len never exceeds this */
} ms_buf_t;

void ms_buf_init(ms_buf_t *b, size_t max);
/* Append n bytes. MS_ERR_TOOLARGE (buffer unchanged) past max; MS_ERR_NOMEM. */
ms_err_t ms_buf_append(ms_buf_t *b, const void *data, size_t n);
/* Append printf-formatted text (no NUL). Same errors as ms_buf_append. */
ms_err_t ms_buf_appendf(ms_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ms_err_t ms_buf_vappendf(ms_buf_t *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Append everything f yields until EOF. MS_ERR_IO on a read error,
 * MS_ERR_TOOLARGE past max (the buffer then holds a truncated prefix). */
ms_err_t ms_buf_read_stream(ms_buf_t *b, FILE *f);
/* Free data and reset to empty (max kept). NULL does nothing. */
void ms_buf_cleanup(ms_buf_t *b);

/* printf piece by piece into a caller's array of cap bytes (borrowed while
 * in use). Text past the end is cut and the array stays NUL-terminated;
 * `used` counts the bytes the whole text needs, as snprintf's result does
 * (used >= cap: it was cut). Never fails, never allocates. */
typedef struct {
    char *data;
    size_t cap;
    size_t used;
} ms_fixbuf_t;

/* Start empty text in data (data[0] = '\0' when cap > 0). */
void ms_fixbuf_init(ms_fixbuf_t *f, char *data, size_t cap);
void ms_fixbuf_appendf(ms_fixbuf_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
