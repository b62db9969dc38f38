/*
 * engine.c - one decision, in the steps of docs/decision-rules.md: each
 * step is a static function named after its row, and ms_engine_decide (at
 * the end) calls them in order.
 *
 * Formulas and rounding follow the HPA controller (replica_calculator.go,
 * horizontal.go) so that a MeshAutoscaler with a plain metric behaves as an
 * HPA would; the mesh rules (saturation, retry storms, fallback, downstream
 * guardrails) are layered on at the steps the rules name.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "engine_internal.h"

static const char *const reason_names[] = {
#define MS__REASON_NAME(name, sentence) #name,
    MS_REASON_MAP(MS__REASON_NAME)
#undef MS__REASON_NAME
};

static const char *const reason_sentences[] = {
#define MS__REASON_SENTENCE(name, sentence) sentence,
    MS_REASON_MAP(MS__REASON_SENTENCE)
#undef MS__REASON_SENTENCE
};

const char *ms_reason_name(ms_reason_t reason)
{
    return (unsigned)reason < MS_REASON__COUNT ? reason_names[reason] : "Unknown";
}

const char *ms_reason_sentence(ms_reason_t reason)
{
    return (unsigned)reason < MS_REASON__COUNT ? reason_sentences[reason] : "unknown reason";
}

int ms_reason_from_name(const char *name)
{
    for (int i = 0; i < MS_REASON__COUNT; i++)
        if (strcmp(reason_names[i], name) == 0)
            return i;
    return -1;
}

void ms_observation_init(ms_observation_t *obs)
{
    memset(obs, 0, sizeof *obs);
}

static bool usable(ms_sample_t s)
{
    return s.present && isfinite(s.value);
}

/* Step 2: the value the metric would read if the proxy were not saturated
 * and clients were not retrying. */
static void effective_value(const ms_spec_t *spec, const ms_observation_t *obs, size_t i,
                            bool storm, ms_metric_result_t *m)
{
    double v = obs->metrics[i].value;

    if (spec->saturation[i].enabled) {
        ms_sample_t admitted = obs->saturation[i].admitted;
        ms_sample_t rejected = obs->saturation[i].rejected;

        if (usable(admitted) && usable(rejected) && admitted.value > 0 && rejected.value >= 0) {
            double factor = (admitted.value + rejected.value) / admitted.value;

            /* A trickle admitted against a flood refused can overflow: the
             * demand is then "as large as can be", never NaN or missing. */
            if (!isfinite(factor))
                factor = DBL_MAX;
            v = v * factor;
            m->saturation_applied = rejected.value > 0;
        }
    }
    if (storm) {
        v = v * (1.0 - obs->retry_share.value);
        m->retry_discount_applied = true;
    }
    if (isinf(v))
        v = v > 0 ? DBL_MAX : -DBL_MAX;
    m->effective = (ms_sample_t){true, v};
}

static bool in_band(const ms_spec_t *spec, double ratio)
{
    return 1.0 - spec->scale_down.tolerance <= ratio && ratio <= 1.0 + spec->scale_up.tolerance;
}

double ms_engine_ratio(const ms_metric_spec_t *m, double value, int32_t current)
{
    if (m->target_type == MS_TARGET_AVERAGE_VALUE)
        return value / (m->target * current);
    return value / m->target;
}

/* Step 3's ratio of value v and the count it asks for (HPA
 * GetResourceReplicas and GetObjectMetricReplicas /
 * GetExternalPerPodMetricReplicas), before any tolerance. */
static double ratio_and_ask(const ms_metric_spec_t *ms, double v, int32_t current, int32_t ready,
                            double *ask)
{
    double ratio = ms_engine_ratio(ms, v, current);

    if (ms->target_type == MS_TARGET_AVERAGE_VALUE)
        *ask = ceil(v / ms->target);
    else
        *ask = ceil(ratio * ready);
    return ratio;
}

static int32_t ask_count(double ask)
{
    return ms__clamp_double(ask < 0 ? 0 : ask);
}

/* v' of the missing-pods rule: pods that did not report count as busy
 * (max(100, target) percent, or the target per pod) when r < 1 and as idle
 * when r > 1, so a partial scrape can damp a scale change, never enlarge it. */
static double filled_value(const ms_metric_spec_t *ms, double v, double ratio, int32_t pods,
                           int32_t ready)
{
    double missing = (double)ready - (double)pods;

    if (ms->target_type == MS_TARGET_UTILIZATION) {
        double fill = ratio < 1.0 ? fmax(100.0, ms->target) : 0.0;
        return (v * pods + fill * missing) / ready;
    }
    return ratio < 1.0 ? v + ms->target * missing : v; /* AverageValue: v is a total */
}

/* Step 3 for one metric with effective value v: fills m's ratio and
 * partial fields and returns the count the metric asks for. */
static int32_t metric_replicas(const ms_spec_t *spec, const ms_metric_spec_t *ms, double v,
                               ms_pods_t pods, int32_t current, int32_t ready,
                               ms_metric_result_t *m)
{
    bool per_pod =
        ms->target_type == MS_TARGET_UTILIZATION || ms->target_type == MS_TARGET_AVERAGE_VALUE;
    double r, ask, r2, ask2;

    r = ratio_and_ask(ms, v, current, ready, &ask);
    m->ratio = r;
    if (!per_pod || !pods.known || pods.count >= ready)
        return in_band(spec, r) ? current : ask_count(ask);

    /* Partial observation: HPA's missing-pods rule. At r = 1 nothing is
     * filled in and the metric is satisfied. */
    m->partial = true;
    m->partial_value = v;
    m->partial_ratio = r;
    if (r == 1.0)
        return current;
    m->partial_value = filled_value(ms, v, r, pods.count, ready);
    r2 = ratio_and_ask(ms, m->partial_value, current, ready, &ask2);
    m->partial_ratio = r2;
    if (in_band(spec, r2) || (r < 1.0 && r2 > 1.0) || (r > 1.0 && r2 < 1.0))
        return current;
    /* An ask that moves against r' (a surge or a rollout makes ready differ
     * from current) would scale the wrong way: hold instead. */
    if ((r2 < 1.0 && ask2 > current) || (r2 > 1.0 && ask2 < current))
        return current;
    return ask_count(ask2);
}

/* Step 7's `starting`: replicas the target has whose pods are not running
 * yet. They will each take perReplica of a downstream once they start, but
 * its usage cannot show them yet. */
static int32_t starting_replicas(const ms_observation_t *obs)
{
    if (!obs->running_replicas.known || obs->running_replicas.count >= obs->current_replicas)
        return 0;
    return obs->current_replicas - obs->running_replicas.count;
}

/* Step 7: the smallest replica count any observed downstream allows, with
 * perReplica reserved for each starting replica. */
static void downstream_cap(const ms_spec_t *spec, const ms_observation_t *obs, int32_t current,
                           ms_decision_t *d, int32_t *cap, int *binding)
{
    *cap = INT32_MAX;
    *binding = -1;
    d->ndownstreams = spec->ndownstreams;
    for (size_t i = 0; i < spec->ndownstreams; i++) {
        const ms_downstream_spec_t *ds = &spec->downstreams[i];
        const ms_downstream_obs_t *o = &obs->downstreams[i];
        ms_downstream_result_t *r = &d->downstreams[i];
        double limit, headroom;
        int64_t allowed;

        memset(r, 0, sizeof *r);
        if (usable(o->limit))
            limit = o->limit.value;
        else if (ds->has_limit)
            limit = ds->limit;
        else
            continue;
        if (!usable(o->usage))
            continue;
        r->observed = true;
        r->reserved = ds->per_replica * d->starting_replicas;
        r->room = ds->max_utilization * limit - o->usage.value; /* §2b's room */
        headroom =
            floor((ds->max_utilization * limit - o->usage.value - r->reserved) / ds->per_replica);
        allowed = (int64_t)current + ms__clamp_double(headroom);
        if (allowed < current) /* a guardrail only refuses growth */
            allowed = current;
        r->allowed = ms__clamp_i64(allowed);
        if (r->allowed < *cap) {
            *cap = r->allowed;
            *binding = (int)i;
        }
    }
}

void ms_engine_record_scale(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                            int32_t change)
{
    ms__memory_store_event(mem, spec, now, change);
}

/* Steps 1 and 4's early exits: the count stays or is forced, nothing more. */
static void finish_early(ms_decision_t *d, int32_t desired, ms_reason_t reason)
{
    d->desired_replicas = desired;
    d->stabilized_value = desired;
    d->rate_limited_value = desired;
    d->rate_reason = MS_REASON_DesiredWithinRange;
    d->reason = reason;
}

/* The input contract of ms_engine_decide (engine.h). */
static bool observation_valid(const ms_spec_t *spec, const ms_observation_t *obs)
{
    if (obs->current_replicas < 0 || obs->ready_replicas < 0 || !isfinite(obs->now))
        return false;
    if (obs->running_replicas.known && obs->running_replicas.count < 0)
        return false;
    for (size_t i = 0; i < spec->nmetrics; i++)
        if (obs->metric_pods[i].known && obs->metric_pods[i].count < 0)
            return false;
    return true;
}

/* A decision that has seen the observation and nothing else yet. */
static void start_decision(const ms_spec_t *spec, const ms_engine_memory_t *mem,
                           const ms_observation_t *obs, ms_decision_t *d)
{
    memset(d, 0, sizeof *d);
    d->current_replicas = obs->current_replicas;
    d->ready_replicas = obs->ready_replicas;
    d->running_replicas = obs->running_replicas;
    d->starting_replicas = starting_replicas(obs);
    d->nmetrics = spec->nmetrics;
    d->failures = mem->failures;
    for (size_t i = 0; i < spec->nmetrics; i++) {
        d->metrics[i].value = obs->metrics[i];
        d->metrics[i].pods = obs->metric_pods[i];
    }
}

/* Step 0 (HPA recordInitialRecommendation): a new (or forgetful) memory
 * starts from the current count, so a restart never scales down inside
 * the scale-down window. */
static void record_initial_recommendation(const ms_spec_t *spec, ms_engine_memory_t *mem,
                                          const ms_observation_t *obs)
{
    if (mem->nrecs == 0)
        ms__memory_record(mem, spec, obs->now, obs->current_replicas);
}

/* Step 1: a count outside [minReplicas, maxReplicas], or 0, decides alone
 * (HPA reconcileAutoscaler's checks before any metric is read). Returns
 * true when it did. */
static bool out_of_range(const ms_spec_t *spec, ms_decision_t *d)
{
    int32_t current = d->current_replicas;

    if (current == 0)
        finish_early(d, 0, MS_REASON_ScalingDisabled);
    else if (current > spec->max_replicas)
        finish_early(d, spec->max_replicas, MS_REASON_AboveMaxReplicas);
    else if (current < spec->min_replicas)
        finish_early(d, spec->min_replicas, MS_REASON_BelowMinReplicas);
    else
        return false;
    return true;
}

/* Steps 2 and 3 for every metric with a value: each metric's effective
 * value and ask (HPA's replica calculator per metric); missing ones are
 * counted. */
static void replicas_per_metric(const ms_spec_t *spec, const ms_observation_t *obs,
                                ms_decision_t *d)
{
    d->retry_storm = spec->retry_storm.enabled && usable(obs->retry_share) &&
                     obs->retry_share.value > spec->retry_storm.threshold;
    for (size_t i = 0; i < spec->nmetrics; i++) {
        ms_metric_result_t *m = &d->metrics[i];

        if (!usable(obs->metrics[i])) {
            d->metrics_missing++;
            continue;
        }
        effective_value(spec, obs, i, d->retry_storm, m);
        m->replicas =
            metric_replicas(spec, &spec->metrics[i], m->effective.value, obs->metric_pods[i],
                            d->current_replicas, obs->ready_replicas, m);
        m->has_replicas = true;
        d->saturated = d->saturated || m->saturation_applied;
    }
}

/* Step 4 (HPA computeReplicasForMetrics): the largest ask; missing data
 * holds, a run of failed ticks falls back, a retry storm never shrinks.
 * Returns false when the count is held (MetricsUnavailable: nothing
 * recorded), else sets *recommendation. */
static bool combine(const ms_spec_t *spec, ms_engine_memory_t *mem, ms_decision_t *d,
                    int32_t *recommendation)
{
    int32_t current = d->current_replicas, largest = INT32_MIN;
    bool any_valid = false;

    for (size_t i = 0; i < d->nmetrics; i++) {
        if (!d->metrics[i].has_replicas)
            continue;
        any_valid = true;
        if (d->metrics[i].replicas > largest)
            largest = d->metrics[i].replicas;
    }
    if (!any_valid) {
        if (mem->failures < UINT32_MAX)
            mem->failures++;
        d->failures = mem->failures;
        if (!spec->fallback.enabled || mem->failures < (uint32_t)spec->fallback.failure_threshold) {
            finish_early(d, current, MS_REASON_MetricsUnavailable);
            return false;
        }
        largest = spec->fallback.replicas;
        if (spec->fallback.mode == MS_FALLBACK_CURRENT_IF_HIGHER && current > largest)
            largest = current;
        d->fallback_used = true;
    } else {
        mem->failures = 0;
        d->failures = 0;
        if (d->metrics_missing > 0 && largest < current) {
            finish_early(d, current, MS_REASON_MetricsUnavailable);
            return false;
        }
    }
    if (d->retry_storm && largest < current) {
        largest = current;
        d->held_by_storm = true;
    }
    *recommendation = largest;
    return true;
}

/* Step 5 (HPA stabilizeRecommendationWithBehaviors): the limits come from
 * the memory before this tick's recommendation is recorded. */
static int32_t stabilize(const ms_spec_t *spec, ms_engine_memory_t *mem, double now,
                         ms_decision_t *d, int32_t recommendation)
{
    int32_t result = ms__stabilize(mem, spec, now, d->current_replicas, recommendation);

    ms__memory_record(mem, spec, now, recommendation);
    d->has_recommendation = true;
    d->recommendation = recommendation;
    d->stabilized_value = result;
    d->stabilized = result != recommendation;
    return result;
}

/* Step 6 (HPA convertDesiredReplicasWithBehaviorRate): rate policies and
 * min/max. */
static int32_t rate_and_bounds(const ms_spec_t *spec, const ms_engine_memory_t *mem, double now,
                               ms_decision_t *d, int32_t stabilized)
{
    d->rate_limited_value =
        ms__apply_rate(mem, spec, now, d->current_replicas, stabilized, &d->rate_reason);
    return d->rate_limited_value;
}

/* Step 7: a scale-out is capped by the smallest allowance of any observed
 * downstream; every downstream is reported either way. */
static int32_t downstream_guardrail(const ms_spec_t *spec, const ms_observation_t *obs,
                                    ms_decision_t *d, int32_t result)
{
    int32_t cap;
    int binding;

    downstream_cap(spec, obs, d->current_replicas, d, &cap, &binding);
    if (result > d->current_replicas && binding >= 0 && cap < result) {
        result = cap;
        d->downstream_bound = true;
        d->downstream_cap = cap;
        d->downstreams[binding].bound = true;
    }
    return result;
}

/* The reason of a decision that went through steps 5 to 7. */
static ms_reason_t final_reason(const ms_decision_t *d)
{
    if (d->downstream_bound)
        return MS_REASON_DownstreamLimit;
    if (d->rate_reason != MS_REASON_DesiredWithinRange)
        return d->rate_reason;
    if (d->fallback_used)
        return MS_REASON_Fallback;
    return MS_REASON_DesiredWithinRange;
}

/* Step 8 (HPA storeScaleEvent): a change is a scale event, unless the
 * caller stores it itself once the scale really happened. */
static void store_scale_event(const ms_spec_t *spec, ms_engine_memory_t *mem,
                              const ms_observation_t *obs, ms_decision_t *d)
{
    if (d->desired_replicas == d->current_replicas)
        return;
    if (!obs->defer_scale_event)
        ms__memory_store_event(mem, spec, obs->now,
                               ms__clamp_i64((int64_t)d->desired_replicas - d->current_replicas));
    d->scaled = true;
}

/* One decision, one call per row of docs/decision-rules.md. Steps 1 and 4
 * may decide early; step 8 then stores any change they forced. */
ms_err_t ms_engine_decide(const ms_spec_t *spec, ms_engine_memory_t *mem,
                          const ms_observation_t *obs, ms_decision_t *out)
{
    ms_decision_t d;
    int32_t result;

    if (!observation_valid(spec, obs))
        return MS_ERR_INVALID;
    start_decision(spec, mem, obs, &d);

    record_initial_recommendation(spec, mem, obs); /* step 0 */
    if (out_of_range(spec, &d))                    /* step 1 */
        goto store;
    replicas_per_metric(spec, obs, &d);   /* steps 2, 3 */
    if (!combine(spec, mem, &d, &result)) /* step 4 */
        goto store;
    result = stabilize(spec, mem, obs->now, &d, result);       /* step 5 */
    result = rate_and_bounds(spec, mem, obs->now, &d, result); /* step 6 */
    result = downstream_guardrail(spec, obs, &d, result);      /* step 7 */
    d.desired_replicas = result;
    d.reason = final_reason(&d);
store:
    store_scale_event(spec, mem, obs, &d); /* step 8 */
    *out = d;
    return MS_OK;
}
