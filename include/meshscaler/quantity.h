/*
 * quantity.h - Kubernetes resource quantities ("120", "1500m", "2k", "1.5Mi",
 * "1e3") as doubles.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource): an optionally signed
 * decimal number followed by a binary-SI suffix (Ki Mi Gi Ti Pi Ei), a
 * decimal-SI suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
 * No surrounding spaces are accepted, as in Kubernetes.
 *
 * Pure and reentrant.
 */
#ifndef MESHSCALER_QUANTITY_H
#define MESHSCALER_QUANTITY_H

#include <stddef.h>

#include "meshscaler/error.h"

/* Parse the NUL-terminated text into *out.
 * On success returns MS_OK and sets *out to a finite value.
 * On failure returns MS_ERR_PARSE (bad syntax) or MS_ERR_RANGE (too large to
 * represent), writes a one-line reason naming the text into errbuf, and leaves
 * *out unmodified. */
ms_err_t ms_quantity_parse(const char *text, double *out, char *errbuf, size_t errlen);

/* Same, for a text of explicit length (it need not be NUL-terminated and
 * must not contain NUL bytes). Used by the fuzz target and JSON readers. */
ms_err_t ms_quantity_parse_n(const char *text, size_t len, double *out, char *errbuf,
                             size_t errlen);

#endif
