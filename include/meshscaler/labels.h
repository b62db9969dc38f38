/*
 * labels.h - Kubernetes label selectors: the text form a scale subresource's
 * status.selector carries ("app=web,tier in (a,b),!canary") and the
 * LabelSelector object a Deployment's spec.selector is ({matchLabels,
 * matchExpressions}), both turned into one matcher that says whether a
 * pod's labels are selected. The semantics are apimachinery's labels.Parse
 * and metav1.LabelSelectorAsSelector: `!=` and `notin` also select objects
 * without the key; an empty selector selects everything.
 *
 * Ownership: a selector owns copies of its keys and values; the caller frees
 * it. Matching borrows the labels for the call. Reentrant; a built selector
 * may be shared by threads for matching.
 */
#ifndef MESHSCALER_LABELS_H
#define MESHSCALER_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"

/* Longest selector text accepted (a scale subresource's status.selector). */
#define MS_LABEL_SELECTOR_MAX 8192

typedef struct ms_label_selector ms_label_selector_t;

/* Parse the text form. On success *out is the caller's. MS_ERR_INVALID with
 * a one-line reason naming the offset otherwise (*out untouched). */
ms_err_t ms_label_selector_parse(const char *text, ms_label_selector_t **out, char *errbuf,
                                 size_t errlen);

/* From a metav1.LabelSelector object (matchLabels, matchExpressions with
 * In, NotIn, Exists, DoesNotExist). NULL or a JSON null selects nothing, as
 * apimachinery's nil selector; {} selects everything. MS_ERR_INVALID with a
 * reason on a malformed object. */
ms_err_t ms_label_selector_from_json(const cJSON *selector, ms_label_selector_t **out, char *errbuf,
                                     size_t errlen);

/* Whether labels (a JSON object of strings, or NULL for none) are selected. */
bool ms_label_selector_matches(const ms_label_selector_t *s, const cJSON *labels);

/* NULL does nothing. */
void ms_label_selector_free(ms_label_selector_t *s);

#endif
