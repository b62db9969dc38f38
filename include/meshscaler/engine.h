/*
 * engine.h - the decision engine: one HPA-compatible decision per call
 * (docs/decision-rules.md), with meshscaler's saturation, retry-storm, fallback
 * and downstream rules on top.
 *
 * Pure: no I/O, no globals, no clock. Everything arrives as arguments,
 * including `now` (seconds on any monotonic scale), so tests time-travel by
 * passing a later `now`.
 *
 * Ownership: the caller owns every struct. ms_engine_memory_t is a fixed-size
 * value (no heap, MS_ENGINE_MEMORY_BYTES at most) holding the
 * recommendations and scale events of one object; old entries are reused in
 * place as the HPA controller does, and when the fixed slots are all live the
 * memory is compacted (see engine_memory.c) so it never grows.
 *
 * Thread safety: reentrant; one memory must not be used by two threads at once.
 */
#ifndef MESHSCALER_ENGINE_H
#define MESHSCALER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/error.h"
#include "meshscaler/spec.h"

/* Decision reasons, with the sentence that explains each.
 * X(name, sentence) */
#define MS_REASON_MAP(X)                                                                           \
    X(DesiredWithinRange, "the desired count is within the acceptable range")                      \
    X(ScalingDisabled, "scaling is disabled since the replica count of the target is zero")        \
    X(AboveMaxReplicas, "the current replica count is above maxReplicas")                          \
    X(BelowMinReplicas, "the current replica count is below minReplicas")                          \
    X(MetricsUnavailable, "metrics are missing, so the replica count is held")                     \
    X(Fallback, "every metric failed repeatedly, so the fallback replica count applies")           \
    X(ScaleUpLimit, "the desired replica count is increasing faster than the maximum scale rate")  \
    X(TooManyReplicas, "the desired replica count is more than the maximum replica count")         \
    X(ScaleDownLimit,                                                                              \
      "the desired replica count is decreasing faster than the maximum scale rate")                \
    X(TooFewReplicas, "the desired replica count is less than the minimum replica count")          \
    X(DownstreamLimit,                                                                             \
      "scaling out further would push a downstream limit past its allowed utilization")

typedef enum {
#define MS__REASON_ENUM(name, sentence) MS_REASON_##name,
    MS_REASON_MAP(MS__REASON_ENUM)
#undef MS__REASON_ENUM
        MS_REASON__COUNT
} ms_reason_t;

/* "ScaleUpLimit"; static, never NULL. */
const char *ms_reason_name(ms_reason_t reason);
/* The explaining sentence; static, never NULL. */
const char *ms_reason_sentence(ms_reason_t reason);
/* Reason called name, or -1. */
int ms_reason_from_name(const char *name);

#define MS_ENGINE_MAX_RECOMMENDATIONS 32
#define MS_ENGINE_MAX_EVENTS 16

/* The engine's memory for one object. Zero-initialise it (or use
 * ms_engine_memory_init) for a new object. Entries are unordered, as in HPA.
 *
 * Scale events are kept as HPA keeps them: every policy counts the events of
 * both directions newer than its period, and a new event reuses the last slot
 * of its own direction older than that direction's longest period (so a
 * scale-up a long scale-down policy could still count goes when a later
 * scale-up takes its slot, as in HPA's storeScaleEvent). When all 16 slots
 * are live, what goes first: events no policy of either direction counts
 * (exact); then the two oldest neighbouring events of one direction merge at
 * the newer time, which errs on the safe side for that direction's limit but
 * not for the other's (it counts the older change up to newer - older
 * seconds too long, and may allow up to that change more); with directions
 * strictly alternating, the oldest event (its direction's limit loosens by
 * it). docs/decision-rules.md#memory has the whole rule. */
typedef struct {
    double rec_time[MS_ENGINE_MAX_RECOMMENDATIONS];
    int32_t rec_replicas[MS_ENGINE_MAX_RECOMMENDATIONS];
    double event_time[MS_ENGINE_MAX_EVENTS];
    int32_t event_change[MS_ENGINE_MAX_EVENTS]; /* signed replica change */
    uint32_t failures;                          /* consecutive all-missing ticks */
    uint8_t nrecs;
    uint8_t nevents;
} ms_engine_memory_t;

#define MS_ENGINE_MEMORY_BYTES sizeof(ms_engine_memory_t)

void ms_engine_memory_init(ms_engine_memory_t *mem);

/* Add a recommendation or a scale event to the memory as if recorded at
 * `now` (used to restore memory, e.g. from a scenario's state or an object's
 * status). Compacts when full, exactly like a decision does. */
void ms_engine_memory_add_recommendation(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                                         double time, int32_t replicas);
void ms_engine_memory_add_event(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                                double time, int32_t change);

/* An observed number, or missing. */
typedef struct {
    bool present;
    double value;
} ms_sample_t;

/* How many pods a metric's value covers (docs/decision-rules.md#step-3,
 * "Partial observations"). The sidecar presets count the pods that
 * reported; a user PromQL value cannot say. Zero-initialised means "not
 * known", and then the missing-pods rule does not apply. */
typedef struct {
    bool known;
    int32_t count; /* pods that reported; >= 0 when known */
} ms_pods_t;

typedef struct {
    ms_sample_t usage;
    ms_sample_t limit; /* missing: the spec's static limit, if any */
} ms_downstream_obs_t;

typedef struct {
    ms_sample_t admitted;
    ms_sample_t rejected;
} ms_saturation_obs_t;

/* Everything one decision observes. Arrays are indexed like the spec's. */
typedef struct {
    double now;
    int32_t current_replicas; /* scale spec.replicas, >= 0 */
    int32_t ready_replicas;   /* >= 0; use current_replicas when unknown */
    /* The target's pods in phase Running and not terminating (step 7's
     * reservation: current_replicas - running replicas are starting and
     * reserve perReplica of each downstream). Not known (zero-initialised):
     * current_replicas, nothing reserved. */
    ms_pods_t running_replicas;
    ms_sample_t metrics[MS_MAX_METRICS];
    /* metric_pods[i]: the pods metrics[i] covers, when known. A parallel
     * array, not a field of ms_sample_t, because only metric values have a
     * pod count (downstream, retry and saturation samples are totals). For
     * Utilization and Value metrics[i] is the reporting pods' average, for
     * AverageValue their total. */
    ms_pods_t metric_pods[MS_MAX_METRICS];
    ms_downstream_obs_t downstreams[MS_MAX_DOWNSTREAMS];
    ms_sample_t retry_share;
    ms_saturation_obs_t saturation[MS_MAX_METRICS];
    /* Step 8 stores a change as a scale event. A controller that may not
     * apply the decision (dry-run, paused, a failed update) sets this and
     * calls ms_engine_record_scale() only once the scale really happened,
     * as the HPA controller stores events only after a successful update. */
    bool defer_scale_event;
} ms_observation_t;

/* Zero every sample (all missing), now 0, replicas 0. */
void ms_observation_init(ms_observation_t *obs);

typedef struct {
    ms_sample_t value;     /* as observed */
    ms_pods_t pods;        /* as observed: the pods value covers */
    ms_sample_t effective; /* after saturation and retry-storm corrections */
    bool has_replicas;     /* false when missing or not evaluated */
    int32_t replicas;      /* what this metric asks for */
    double ratio;          /* r: effective / target (per replica for AverageValue) */
    bool saturation_applied;
    bool retry_discount_applied;
    /* Step 3's missing-pods rule: set when fewer pods reported than are
     * ready and the target is Utilization or AverageValue. partial_value is
     * v' (the effective value with the missing pods filled in; the
     * effective value itself when r = 1), partial_ratio is r'. */
    bool partial;
    double partial_value;
    double partial_ratio;
} ms_metric_result_t;

typedef struct {
    bool observed; /* usage and a limit were known */
    int32_t allowed;
    bool bound;      /* this downstream set the cap that bound */
    double reserved; /* flows held back for starting replicas: perReplica x starting */
    double room;     /* maxUtilization x limit - usage, in flows, when observed */
} ms_downstream_result_t;

/* What §2b's shared budget did to one object (docs/decision-rules.md#2b).
 * The budget's name is spec->downstreams[downstream].budget. */
typedef struct {
    uint8_t downstream; /* the object's entry in the budget with the largest perReplica */
    bool bound;         /* the grant fell short of the ask: desired was lowered */
    uint32_t members;   /* objects of the round taking part in the budget */
    double room;        /* the budget's room R, flows (after every reservation) */
    int32_t ask;        /* e_i: replicas this object asked for (0 when not growing) */
    int32_t grant;      /* g_i: replicas granted (the ask when the room held every ask) */
} ms_budget_result_t;

/* One decision. Plain data; nothing to free. */
typedef struct {
    int32_t current_replicas;
    int32_t ready_replicas;
    ms_pods_t running_replicas; /* as observed */
    int32_t starting_replicas;  /* step 7: max(0, current - running); 0 when not known */
    int32_t desired_replicas;
    ms_reason_t reason;

    bool has_recommendation;  /* step 5 recorded one */
    int32_t recommendation;   /* pre-stabilization, as recorded */
    int32_t stabilized_value; /* after step 5 */
    bool stabilized;          /* step 5 changed the recommendation */
    int32_t rate_limited_value;
    ms_reason_t rate_reason; /* step 6: ScaleUpLimit ... DesiredWithinRange */
    bool downstream_bound;
    int32_t downstream_cap; /* valid when downstream_bound */

    bool fallback_used;
    bool retry_storm;       /* retryShare above the threshold */
    bool held_by_storm;     /* a smaller recommendation was held at current */
    bool saturated;         /* a saturation correction raised some metric */
    size_t metrics_missing; /* how many metrics had no value */
    uint32_t failures;      /* consecutive all-missing ticks after this one */
    bool scaled;            /* desired != current: a scale event was stored */

    size_t nmetrics;
    ms_metric_result_t metrics[MS_MAX_METRICS];
    size_t ndownstreams;
    ms_downstream_result_t downstreams[MS_MAX_DOWNSTREAMS];
    /* §2b, filled by ms_engine_share_budgets only: one per budget the
     * object took part in, in ascending budget name. */
    size_t nbudgets;
    ms_budget_result_t budgets[MS_MAX_DOWNSTREAMS];
} ms_decision_t;

/* Decide once. spec must be valid (ms_spec_validate); obs->now must not be
 * earlier than any time already in mem.
 * On success returns MS_OK, fills *out and updates *mem (recommendation,
 * scale event, failure count). Returns MS_ERR_INVALID, leaving *mem and *out
 * untouched, when obs has negative replica counts, a known negative pod
 * or running count, or a non-finite now. */
ms_err_t ms_engine_decide(const ms_spec_t *spec, ms_engine_memory_t *mem,
                          const ms_observation_t *obs, ms_decision_t *out);

/* Store an applied scale of `change` replicas at `now` (step 8 for callers
 * that set defer_scale_event). A zero change does nothing. */
void ms_engine_record_scale(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                            int32_t change);

/* One object of a round for §2b. Everything is borrowed from the caller
 * for the duration of the call. */
typedef struct {
    const char *key;         /* "namespace/name"; unique within the round */
    const ms_spec_t *spec;   /* its spec (downstream entries and budgets) */
    ms_decision_t *decision; /* steps 1-7 done (with defer_scale_event), updated in place */
} ms_round_member_t;

/* §2b: split each shared budget's room among the members of one round,
 * budgets in ascending name. Lowers decision->desired_replicas to
 * current + grant (reason DownstreamLimit, scaled updated) where a grant
 * falls short of the ask, and fills decision->budgets for every member that
 * took part. Members must have been decided with defer_scale_event set; the
 * caller then stores each final change with ms_engine_record_scale (step 8).
 * Pure; allocates scratch it frees before returning (aborts without memory).
 * Returns MS_ERR_INVALID, changing nothing, when two members share a key. */
ms_err_t ms_engine_share_budgets(ms_round_member_t *members, size_t n);

/* Step 3's ratio of metric m's reading `value` to its target at `current`
 * replicas, before any tolerance (HPA's usage ratio): value / target, or
 * value / (target x current) for an AverageValue total. The one home of the
 * rule, for callers that weigh readings as the engine does (replay's
 * above-target time). Pure. */
double ms_engine_ratio(const ms_metric_spec_t *m, double value, int32_t current);

/* Explain a decision in one line of readable sentences into buf (always
 * NUL-terminated when len > 0). Returns the length it needed, like snprintf. */
size_t ms_decision_explain(const ms_spec_t *spec, const ms_decision_t *d, char *buf, size_t len);

/* Step 7's reservation at downstream i of d as "3 starting replicas reserve
 * 75 flows" into buf (NUL-terminated when len > 0). Returns false, writing
 * nothing, when that downstream reserved nothing. */
bool ms_decision_reservation(const ms_decision_t *d, size_t i, char *buf, size_t len);

/* §2b's budget i of d (d->budgets[i]) when it lowered the count, as "budget
 * edge: 1 of 3 replicas asked, room 40 flows shared by 2 objects" into buf
 * (NUL-terminated when len > 0). Returns false, writing nothing, when it
 * did not (the room held the ask) or i is out of range. */
bool ms_decision_budget(const ms_spec_t *spec, const ms_decision_t *d, size_t i, char *buf,
                        size_t len);

#endif
