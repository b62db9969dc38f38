/*
 * spec.h - the MeshAutoscaler spec (docs/decision-rules.md#resource) as
 * plain C data.
 *
 * A ms_spec_t is a value: caller-provided storage, set up with
 * ms_spec_init() (which applies every documented default) and released with
 * ms_spec_cleanup(). It owns the strings it points to (queries, target
 * reference, container names); everything else is inline, so copying the
 * struct without its strings is never needed by callers.
 *
 * Limits are fixed so per-object memory is bounded: at most MS_MAX_METRICS
 * metrics, MS_MAX_POLICIES policies per direction, MS_MAX_DOWNSTREAMS
 * downstream guardrails.
 *
 * Not thread-safe per object; distinct specs may be used from distinct threads.
 */
#ifndef MESHSCALER_SPEC_H
#define MESHSCALER_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/error.h"

#define MS_MAX_METRICS 16
#define MS_MAX_POLICIES 8
#define MS_MAX_DOWNSTREAMS 8
#define MS_NAME_MAX 63 /* metric and downstream names, like a DNS label */

/* Bounds from autoscaling/v2 validation. */
#define MS_MAX_WINDOW_SECONDS 3600
#define MS_MAX_POLICY_PERIOD_SECONDS 1800
#define MS_MAX_SYNC_PERIOD_SECONDS 3600

typedef enum {
    MS_SOURCE_SIDECAR_CONCURRENCY = 1,
    MS_SOURCE_SIDECAR_CPU,
    MS_SOURCE_PROMETHEUS
} ms_source_type_t;

typedef enum { MS_PROXY_ENVOY = 1, MS_PROXY_HAPROXY, MS_PROXY_LINKERD } ms_proxy_t;

typedef enum {
    MS_TARGET_UTILIZATION = 1, /* averageUtilization, value in percent */
    MS_TARGET_VALUE,           /* value, compared with the whole metric */
    MS_TARGET_AVERAGE_VALUE    /* averageValue, metric is a total */
} ms_target_type_t;

typedef struct {
    char name[MS_NAME_MAX + 1];
    ms_source_type_t source;
    /* SidecarConcurrency */
    ms_proxy_t proxy;
    bool has_limit;
    double limit;
    /* SidecarCPU: owned, NULL when absent */
    char *container;
    /* Prometheus: owned, NULL when absent */
    char *query;
    ms_target_type_t target_type;
    double target; /* > 0: percent, value or average value */
} ms_metric_spec_t;

typedef enum { MS_POLICY_PODS = 1, MS_POLICY_PERCENT } ms_policy_type_t;

typedef struct {
    ms_policy_type_t type;
    int32_t value;          /* > 0 */
    int32_t period_seconds; /* 1..MS_MAX_POLICY_PERIOD_SECONDS */
} ms_policy_t;

typedef enum { MS_SELECT_MAX = 0, MS_SELECT_MIN, MS_SELECT_DISABLED } ms_select_t;

/* One direction of autoscaling/v2 behavior, plus meshscaler's tolerance. */
typedef struct {
    int32_t window_seconds; /* stabilization window */
    ms_select_t select;
    double tolerance; /* >= 0 */
    size_t npolicies;
    ms_policy_t policies[MS_MAX_POLICIES];
} ms_scaling_rules_t;

typedef struct {
    char name[MS_NAME_MAX + 1];
    char *usage_query; /* owned, NULL when absent */
    char *limit_query; /* owned, NULL when absent */
    bool has_limit;    /* static limit given */
    double limit;
    double per_replica;     /* > 0: usage one more replica adds */
    double max_utilization; /* (0, 1] */
    /* §2b's shared budget this entry's room belongs to: a DNS-1123 label,
     * "" when the entry names none (it then guards this object alone). */
    char budget[MS_NAME_MAX + 1];
} ms_downstream_spec_t;

typedef struct {
    bool enabled;
    char *retry_share_query; /* owned, NULL when absent */
    double threshold;        /* [0, 1) */
} ms_retry_storm_spec_t;

typedef struct {
    bool enabled;
    char *rejected_query; /* owned, NULL when absent */
    char *admitted_query; /* owned, NULL when absent */
} ms_saturation_spec_t;

typedef enum { MS_FALLBACK_STATIC = 0, MS_FALLBACK_CURRENT_IF_HIGHER } ms_fallback_mode_t;

typedef struct {
    bool enabled;
    int32_t failure_threshold; /* >= 1 */
    int32_t replicas;          /* >= 0 */
    ms_fallback_mode_t mode;
} ms_fallback_spec_t;

typedef struct {
    /* scaleTargetRef: owned, NULL when absent (allowed offline only) */
    char *target_api_version;
    char *target_kind;
    char *target_name;

    int32_t min_replicas; /* >= 1 */
    int32_t max_replicas; /* >= min_replicas */
    bool dry_run;
    int32_t sync_period_seconds; /* 0: the controller's --sync-period */

    /* The three lists below are owned arrays: ms_spec_init gives each room
     * for its maximum, ms_spec_shrink cuts them to what is used (a spec kept
     * for each of 10,000 objects then costs a few hundred bytes, not 3.5 KB). */
    size_t nmetrics;
    ms_metric_spec_t *metrics; /* MS_MAX_METRICS slots, or nmetrics after a shrink */

    ms_scaling_rules_t scale_up;
    ms_scaling_rules_t scale_down;

    size_t ndownstreams;
    ms_downstream_spec_t *downstreams; /* MS_MAX_DOWNSTREAMS slots, or ndownstreams */
    ms_retry_storm_spec_t retry_storm;
    /* Indexed like metrics[]: saturation[i] corrects metrics[i]. */
    ms_saturation_spec_t *saturation;
    size_t metrics_cap, downstreams_cap; /* slots of the arrays above */

    ms_fallback_spec_t fallback;
} ms_spec_t;

/* Defaults (docs/decision-rules.md#resource): tolerance 0.1 each way,
 * scale-up window 0 s with Percent 100/15 s and Pods 4/15 s, scale-down
 * window 300 s with Percent 100/15 s, select Max, threshold 0.3,
 * maxUtilization 0.7. */
#define MS_DEFAULT_TOLERANCE 0.1
#define MS_DEFAULT_SCALE_DOWN_WINDOW 300
#define MS_DEFAULT_RETRY_THRESHOLD 0.3
#define MS_DEFAULT_MAX_UTILIZATION 0.7
#define MS_DEFAULT_FAILURE_THRESHOLD 3

/* Set *spec to an empty spec with every default applied (min 1, max 1,
 * default behavior, no metrics) and room for the most metrics and
 * downstreams; ms_spec_cleanup frees it. Never fails (aborts without memory). */
void ms_spec_init(ms_spec_t *spec);

/* Cut the lists to the entries in use, for a spec kept long. */
void ms_spec_shrink(ms_spec_t *spec);

/* Default scaling rules of one direction (up: true for scale-up). */
void ms_scaling_rules_default(ms_scaling_rules_t *rules, bool up);

/* Free what *spec owns; it may then only be given to ms_spec_init again or
 * to ms_spec_cleanup. NULL does nothing. */
void ms_spec_cleanup(ms_spec_t *spec);

/* Index of the metric called name, or -1. */
int ms_spec_metric_index(const ms_spec_t *spec, const char *name);

/* Index of the downstream called name, or -1. */
int ms_spec_downstream_index(const ms_spec_t *spec, const char *name);

/* Longest policy period of either direction, in seconds (0 when none). */
int32_t ms_spec_longest_period(const ms_spec_t *spec);

/* Check the cross-field rules a parser cannot see field by field
 * (min <= max, unique names, a metric per saturation entry, a limit per
 * downstream). On failure returns MS_ERR_INVALID with "path: reason" in
 * errbuf. `offline` relaxes the rules about queries (decide ignores them). */
ms_err_t ms_spec_validate(const ms_spec_t *spec, bool offline, char *errbuf, size_t errlen);

const char *ms_source_type_name(ms_source_type_t t);
const char *ms_proxy_name(ms_proxy_t p);
const char *ms_target_type_name(ms_target_type_t t);

#endif
