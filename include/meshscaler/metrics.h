/*
 * metrics.h - a small registry of Prometheus counters, gauges and histograms
 * with labels, rendered in the text exposition format (version 0.0.4) for the
 * controller's /metrics endpoint.
 *
 * Families are declared once at start (they return an id); series are created
 * on first use and can be removed (an object was deleted). Label values are
 * copied. Thread-safe: every call takes the registry's mutex, so workers
 * update while the server thread renders. Allocation failure aborts with a
 * log line (xalloc.h).
 */
#ifndef MESHSCALER_METRICS_H
#define MESHSCALER_METRICS_H

#include <stddef.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"

#define MS_METRICS_MAX_LABELS 4

typedef struct ms_metrics ms_metrics_t;

typedef enum { MS_METRIC_COUNTER = 0, MS_METRIC_GAUGE, MS_METRIC_HISTOGRAM } ms_metric_kind_t;

/* Never NULL. */
ms_metrics_t *ms_metrics_new(void);
/* NULL does nothing. */
void ms_metrics_free(ms_metrics_t *m);

/* Declare a family; name and help must be static strings (borrowed for the
 * registry's life), at most MS_METRICS_MAX_LABELS label names. Histograms
 * take ascending bucket bounds (copied). Returns the family id, or -1 for
 * more labels than MS_METRICS_MAX_LABELS. */
int ms_metrics_family(ms_metrics_t *m, ms_metric_kind_t kind, const char *name, const char *help,
                      const char *const *labels, size_t nlabels, const double *buckets,
                      size_t nbuckets);

/* label_values has as many entries as the family has labels. */
void ms_metrics_add(ms_metrics_t *m, int family, const char *const *label_values, double delta);
void ms_metrics_set(ms_metrics_t *m, int family, const char *const *label_values, double value);
void ms_metrics_observe(ms_metrics_t *m, int family, const char *const *label_values, double value);
/* Forget one series (e.g. the gauges of a deleted object). */
void ms_metrics_remove(ms_metrics_t *m, int family, const char *const *label_values);
/* Forget every series whose first n label values are these (an object's
 * per-metric series, whatever the metric names were). Scans the family. */
void ms_metrics_remove_matching(ms_metrics_t *m, int family, const char *const *label_values,
                                size_t n);

/* Append the exposition text to out. MS_ERR_NOMEM / MS_ERR_TOOLARGE. */
ms_err_t ms_metrics_render(ms_metrics_t *m, ms_buf_t *out);

#endif
