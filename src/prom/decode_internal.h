/*
 * decode_internal.h - what the two halves of the Prometheus response
 * decoder share: decode.c reads the document (status, error bodies,
 * scalars, strings, warnings) and calls decode_series.c for the vectors
 * and matrices; both call down into result.c (ms__prom_fail, the result
 * type, sample values), which calls neither. Private to src/prom. All are
 * reentrant.
 */
#ifndef MESHSCALER_PROM_DECODE_INTERNAL_H
#define MESHSCALER_PROM_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "jscan.h"
#include "meshscaler/prom.h"

/* ---- result.c ---- */

/* Set r->reason and a one-line message (newlines become spaces); returns
 * the reason. */
__attribute__((format(printf, 3, 4))) ms_prom_reason_t
ms__prom_fail(ms_prom_result_t *r, ms_prom_reason_t reason, const char *fmt, ...);

/* ---- decode_series.c ---- */

/* The next value of s, read whole. When it is an array, *n gets its length
 * and e[0], e[1] its first two elements (containers among them passed
 * over); otherwise *n is 0. False on a scanner error. */
bool ms__prom_read_array2(ms__jscan_t *s, ms__jval_t e[2], size_t *n);

typedef enum {
    MS__PAIR_OK,    /* *pt filled */
    MS__PAIR_BAD,   /* read whole, but not [finite time, "sample value"]; *pt untouched */
    MS__PAIR_BROKEN /* a scanner error (s->err) */
} ms__prom_pair_t;

/* The next value of s as a [time, "value"] pair. */
ms__prom_pair_t ms__prom_read_pair(ms__jscan_t *s, ms_prom_point_t *pt);

/* The data.result array of a vector or matrix, at byte `at` of a body the
 * first pass checked, into r->series (and the blocks behind it). MS_PROM_OK
 * with r owning them; any other reason with r's message set and nothing
 * owned: MALFORMED or WRONG_TYPE for a series of the wrong shape, TOO_LARGE
 * when memory ran out. */
ms_prom_reason_t ms__prom_decode_series(const char *body, size_t len, size_t at, bool matrix,
                                        ms_prom_result_t *r);

#endif
