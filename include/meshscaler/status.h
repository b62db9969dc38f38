/*
 * status.h - the MeshAutoscaler `.status` (manifests/10-crd.yaml): built from
 * one sync's outcome and the previous status, compared with it so that an
 * unchanged sync writes nothing, turned into a JSON merge patch, and read
 * back after a restart to rebuild what it can of the engine's memory.
 *
 * Pure: no I/O, no clock. The sync's wall time arrives as RFC 3339 text
 * (`now`), so tests pass any time they like.
 *
 * Conditions have the metav1.Condition shape {type, status,
 * observedGeneration, lastTransitionTime, reason, message}. Their reasons and
 * sentences are one fixed table (MS_STATUS_CONDITION_MAP below), so
 * `kubectl describe` speaks one vocabulary. lastTransitionTime is kept from
 * the previous status unless the condition's status (True/False/Unknown)
 * flips; a new reason or message alone is not a transition.
 *
 * Ownership: every input is borrowed for the call; returned trees are the
 * caller's (cJSON_Delete). Reentrant.
 */
#ifndef MESHSCALER_STATUS_H
#define MESHSCALER_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "meshscaler/compare.h"
#include "meshscaler/engine.h"
#include "meshscaler/error.h"
#include "meshscaler/spec.h"

/* Condition types, in the order the status lists them. */
#define MS_STATUS_CONDITION_TYPES(X)                                                               \
    X(AbleToScale)                                                                                 \
    X(ScalingActive)                                                                               \
    X(ScalingLimited)                                                                              \
    X(DownstreamLimited)                                                                           \
    X(RetryStorm)                                                                                  \
    X(Saturated)                                                                                   \
    X(DryRun)

typedef enum {
#define MS__COND_TYPE_ENUM(name) MS_COND_##name,
    MS_STATUS_CONDITION_TYPES(MS__COND_TYPE_ENUM)
#undef MS__COND_TYPE_ENUM
        MS_COND__COUNT
} ms_condition_type_t;

/* Every reason a condition can carry: X(id, type, status, reason, sentence).
 * A caller's detail is appended to the sentence after ": ". */
#define MS_STATUS_CONDITION_MAP(X)                                                                 \
    X(ABLE_RESCALED, AbleToScale, "True", "SucceededRescale",                                      \
      "the target's replica count was updated")                                                    \
    X(ABLE_READY, AbleToScale, "True", "ReadyForNewScale",                                         \
      "the target's scale can be read and updated")                                                \
    X(ABLE_FAILED_GET, AbleToScale, "False", "FailedGetScale",                                     \
      "the target's scale cannot be read")                                                         \
    X(ABLE_FAILED_UPDATE, AbleToScale, "False", "FailedUpdateScale",                               \
      "the target's scale cannot be updated")                                                      \
    X(ABLE_CONFLICT, AbleToScale, "False", "ConflictingAutoscaler",                                \
      "another autoscaler targets the same workload, so this one does not write until it is "      \
      "removed")                                                                                   \
    X(ABLE_PAUSED, AbleToScale, "False", "Paused",                                                 \
      "scaling is paused by annotation, so the target is not written")                             \
    X(ACTIVE_VALID, ScalingActive, "True", "ValidMetricFound",                                     \
      "the replica count was computed from the metrics")                                           \
    X(ACTIVE_FAILED_METRICS, ScalingActive, "False", "FailedGetMetrics",                           \
      "metrics are missing, so the replica count is held and never lowered")                       \
    X(ACTIVE_INVALID_SPEC, ScalingActive, "False", "InvalidSpec", "the spec cannot be used")       \
    X(ACTIVE_DISABLED, ScalingActive, "False", "ScalingDisabled",                                  \
      "scaling is disabled since the replica count of the target is zero")                         \
    X(LIMITED_TOO_MANY, ScalingLimited, "True", "TooManyReplicas",                                 \
      "the desired replica count is more than the maximum replica count")                          \
    X(LIMITED_TOO_FEW, ScalingLimited, "True", "TooFewReplicas",                                   \
      "the desired replica count is less than the minimum replica count")                          \
    X(LIMITED_UP_RATE, ScalingLimited, "True", "ScaleUpLimit",                                     \
      "the desired replica count is increasing faster than the maximum scale rate")                \
    X(LIMITED_DOWN_RATE, ScalingLimited, "True", "ScaleDownLimit",                                 \
      "the desired replica count is decreasing faster than the maximum scale rate")                \
    X(LIMITED_NO, ScalingLimited, "False", "DesiredWithinRange",                                   \
      "the desired count is within the acceptable range")                                          \
    X(DOWNSTREAM_LIMIT, DownstreamLimited, "True", "DownstreamLimit",                              \
      "scaling out further would push a downstream limit past its allowed utilization")            \
    X(DOWNSTREAM_OK, DownstreamLimited, "False", "WithinDownstreamLimits",                         \
      "no downstream limit holds the scale-out")                                                   \
    X(DOWNSTREAM_NONE, DownstreamLimited, "False", "NotConfigured",                                \
      "no downstream guardrail is configured")                                                     \
    X(STORM_YES, RetryStorm, "True", "RetryShareAboveThreshold",                                   \
      "retries are above the threshold share of requests, so they are discounted and the "         \
      "replica count is not lowered")                                                              \
    X(STORM_NO, RetryStorm, "False", "RetryShareBelowThreshold",                                   \
      "retries are not above the threshold share of requests")                                     \
    X(STORM_NONE, RetryStorm, "False", "NotConfigured", "no retry-storm guardrail is configured")  \
    X(SATURATED_YES, Saturated, "True", "SaturationCorrected",                                     \
      "a saturated proxy rejects requests, so the demand it hides was added to the metric")        \
    X(SATURATED_NO, Saturated, "False", "NotSaturated",                                            \
      "no proxy rejects requests for saturation")                                                  \
    X(SATURATED_SETTLING, Saturated, "False", "ReadyPodsSettling",                                 \
      "pods turned Ready within the window of the saturation rates, which measured the pods "      \
      "before them: the correction waits for a window of the current pods")                        \
    X(SATURATED_NONE, Saturated, "False", "NotConfigured",                                         \
      "no saturation guardrail is configured")                                                     \
    X(DRYRUN_ON, DryRun, "True", "DryRunEnabled",                                                  \
      "decisions are recorded in the status but the target is never written")                      \
    X(DRYRUN_OFF, DryRun, "False", "DryRunDisabled", "decisions are applied to the target")

typedef enum {
#define MS__COND_REASON_ENUM(id, type, status, reason, sentence) MS_CR_##id,
    MS_STATUS_CONDITION_MAP(MS__COND_REASON_ENUM)
#undef MS__COND_REASON_ENUM
        MS_CR__COUNT
} ms_condition_reason_t;

/* "AbleToScale"; static, never NULL ("" outside the enum). */
const char *ms_condition_type_name(ms_condition_type_t type);
/* The table's columns for one reason; static, never NULL. */
ms_condition_type_t ms_condition_reason_type(ms_condition_reason_t r);
const char *ms_condition_reason_status(ms_condition_reason_t r); /* "True"/"False" */
const char *ms_condition_reason_name(ms_condition_reason_t r);   /* "FailedGetScale" */
const char *ms_condition_reason_sentence(ms_condition_reason_t r);

/* What this sync came to. */
typedef enum {
    MS_STATUS_DECIDED = 0,     /* the engine decided: `decision` is set */
    MS_STATUS_INVALID_SPEC,    /* the spec is unusable (a spec error, no hot retry) */
    MS_STATUS_FAILED_GET_SCALE /* the target's scale could not be read */
} ms_status_outcome_t;

typedef struct {
    const cJSON *previous; /* the object's .status; NULL or non-object: none */
    const ms_spec_t *spec; /* for INVALID_SPEC it may be partial (NULL target ref) */
    long long generation;  /* metadata.generation */
    const char *now;       /* RFC 3339 wall time of this sync: "2026-11-30T02:05:00Z" */
    ms_status_outcome_t outcome;
    const char *problem; /* one-line detail: why the spec is invalid, why the scale
                            could not be read or written, which autoscaler conflicts;
                            NULL: none */

    /* MS_STATUS_DECIDED only */
    const ms_decision_t *decision;
    int32_t desired;             /* what the controller aims at (decision's desired after
                                    pausing annotations) */
    const char *message;         /* lastDecision.message; NULL: ms_decision_explain() */
    const char *missing;         /* why a missing metric is missing, for ScalingActive:
                                    "sidecar: TIMEOUT the round's deadline passed"; NULL: none */
    const char *saturation_held; /* for Saturated: which corrections wait for pods that
                                just turned Ready, and why; NULL: none */
    bool scaled;                 /* a scale update was applied in this sync: lastScaleTime = now */
    bool write_failed;           /* an update was tried and refused (problem says why) */
    bool conflict;               /* another autoscaler targets the workload (problem names it) */
    bool paused;                 /* the paused annotation stops writes */
    const char *pause_note; /* detail for Paused, e.g. ms_pause_effect_sentence(); may be NULL */
    bool dry_run;           /* spec.dryRun or --dry-run */
    /* Shadow mode beside an HPA (DECIDED): status.hpaComparison. NULL name: none. */
    const char *hpa_name;
    int32_t hpa_desired;
    const ms_compare_t *hpa_compare;
    double hpa_since; /* wall seconds of the first compared sync */
} ms_status_input_t;

/* Zero *in (every flag false, pointers NULL, outcome DECIDED). */
void ms_status_input_init(ms_status_input_t *in);

/* The reason each condition gets when in->outcome is DECIDED (the table
 * row ms_status_build writes), indexed by ms_condition_type_t: what the
 * per-object condition gauges show. */
void ms_status_condition_reasons(const ms_status_input_t *in,
                                 ms_condition_reason_t out[MS_COND__COUNT]);

/* Build the new status into *out (the caller's; cJSON_Delete) and set
 * *changed to whether it differs from in->previous (a field absent on one
 * side and null on the other counts as equal; numbers equal within 1e-9).
 * Rules:
 *  - DECIDED sets everything: observedGeneration, reference ("Kind/name"),
 *    targets (kubectl-get-hpa style: "sidecar: 91%/70%, rps: 100/120",
 *    "<unknown>" for a missing value), currentReplicas, desiredReplicas,
 *    currentMetrics (values rounded to milli-units to keep float noise out
 *    of the status; null when missing), lastDecision (its `time` stays the
 *    previous one unless desired, recommendation, reason or message
 *    changed), lastScaleTime (now when `scaled`, else the previous one) and
 *    all seven conditions.
 *  - INVALID_SPEC and FAILED_GET_SCALE keep the previous status's fields and
 *    set observedGeneration (and reference when the spec names a target),
 *    ScalingActive=False InvalidSpec or AbleToScale=False FailedGetScale
 *    respectively; other conditions stay as they were (DryRun is refreshed
 *    when the spec is usable).
 *  - Conditions of types this module does not know are kept, after ours.
 * Returns MS_ERR_INVALID (nothing built) when in->now is NULL or DECIDED has
 * no decision or spec. Allocation failure aborts. */
ms_err_t ms_status_build(const ms_status_input_t *in, cJSON **out, bool *changed);

/* The JSON merge patch that turns `previous` into `status` on the status
 * subresource: {"status": {...status, plus null for every top-level key
 * previous has and status lacks}}. The caller owns the result. previous may
 * be NULL. Arrays (currentMetrics, conditions) are replaced whole, as merge
 * patch does. */
cJSON *ms_status_merge_patch(const cJSON *previous, const cJSON *status);

/* Rebuild the engine memory of an object this process has not synced yet
 * (after a restart or a leader change) from its previous status. *mem is
 * reset, then holds:
 *  - current_replicas recorded at now_engine, as the engine's step 0 does
 *    (a restart never scales down inside the scale-down window);
 *  - status.lastDecision.recommendation at status.lastDecision.time, when
 *    both are present and readable and the time is within the longer
 *    stabilization window (a scale-up in progress is not forgotten).
 * Times convert from wall to engine seconds as
 * t_engine = now_engine - (now_wall - t_wall); a time in the future is
 * taken as now.
 * What is lost, and why: the earlier recommendations inside the windows
 * (the status keeps only the last); every scale event (lastScaleTime says
 * when but not by how much, and an invented size would make the rate
 * policies wrong either way), so the rate policies start afresh; and the
 * count of consecutive all-missing ticks, so the fallback threshold counts
 * from zero again.
 * Returns true when the last recommendation was restored. */
bool ms_status_restore_memory(const cJSON *previous, const ms_spec_t *spec, double now_wall,
                              double now_engine, int32_t current_replicas, ms_engine_memory_t *mem);

/* The "targets" column for a decision ("sidecar: 91%/70%, rps: 100/120",
 * at most two metrics then " + N more...", as kubectl prints HPAs) into
 * buf[len] (always NUL-terminated when len > 0). Returns the length needed. */
size_t ms_status_targets(const ms_spec_t *spec, const ms_decision_t *d, char *buf, size_t len);

#endif
