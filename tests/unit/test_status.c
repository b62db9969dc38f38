/*
 * test_status.c - the MeshAutoscaler status: fields, the conditions and
 * their transition times, "nothing changed, nothing written", the merge
 * patch, and memory rebuilt after a restart. Decisions come from the real
 * engine on specs parsed by the real parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "meshscaler/spec_json.h"
#include "meshscaler/status.h"

#define T0 "2026-11-30T02:00:00Z"
#define T1 "2026-11-30T02:00:15Z"
#define T2 "2026-11-30T02:00:30Z"
#define T3 "2026-11-30T02:00:45Z"

static const char spec_two_metrics[] =
    "{\"scaleTargetRef\": {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"name\": "
    "\"api\"},"
    " \"minReplicas\": 2, \"maxReplicas\": 10,"
    " \"metrics\": ["
    "  {\"name\": \"sidecar\", \"type\": \"SidecarConcurrency\","
    "   \"sidecarConcurrency\": {\"proxy\": \"envoy\", \"limit\": 100},"
    "   \"target\": {\"type\": \"Utilization\", \"averageUtilization\": 70}},"
    "  {\"name\": \"rps\", \"type\": \"Prometheus\", \"prometheus\": {\"query\": \"q\"},"
    "   \"target\": {\"type\": \"AverageValue\", \"averageValue\": \"120\"}}]}";

static const char spec_guardrails[] =
    "{\"scaleTargetRef\": {\"apiVersion\": \"apps/v1\", \"kind\": \"StatefulSet\", \"name\": "
    "\"db\"},"
    " \"minReplicas\": 1, \"maxReplicas\": 40, \"dryRun\": true,"
    " \"metrics\": [{\"name\": \"sidecar\", \"type\": \"SidecarConcurrency\","
    "   \"sidecarConcurrency\": {\"proxy\": \"envoy\", \"limit\": 100},"
    "   \"target\": {\"type\": \"Utilization\", \"averageUtilization\": 70}}],"
    " \"guardrails\": {"
    "   \"downstream\": [{\"name\": \"edge-lb\", \"usageQuery\": \"u\", \"limitQuery\": \"l\","
    "                    \"perReplica\": 400, \"maxUtilization\": 0.7},"
    "                   {\"name\": \"db-conns\", \"usageQuery\": \"u\", \"limit\": 100,"
    "                    \"perReplica\": 1}],"
    "   \"retryStorm\": {\"retryShareQuery\": \"r\", \"threshold\": 0.3},"
    "   \"saturation\": [{\"metric\": \"sidecar\", \"rejectedQuery\": \"r\","
    "                     \"admittedQuery\": \"a\"}]}}";

static void load_spec(const char *json, ms_spec_t *spec)
{
    cJSON *tree = cJSON_Parse(json);
    ms_jpath_t p;
    char err[MS_ERRBUF_SIZE] = "";

    assert_non_null(tree);
    ms_spec_init(spec);
    ms_jpath_init(&p, "spec");
    if (ms_spec_from_json(tree, &p, true, spec, err, sizeof err) != MS_OK)
        fail_msg("spec: %s", err);
    cJSON_Delete(tree);
}

/* One decision at `now` for two metric values (NAN: missing). */
static void decide(const ms_spec_t *spec, ms_engine_memory_t *mem, double now, int32_t current,
                   double v0, double v1, ms_decision_t *d)
{
    ms_observation_t obs;

    ms_observation_init(&obs);
    obs.now = now;
    obs.current_replicas = current;
    obs.ready_replicas = current;
    obs.metrics[0] = (ms_sample_t){!isnan(v0), isnan(v0) ? 0 : v0};
    obs.metrics[1] = (ms_sample_t){!isnan(v1), isnan(v1) ? 0 : v1};
    assert_int_equal(ms_engine_decide(spec, mem, &obs, d), MS_OK);
}

static cJSON *build(const ms_status_input_t *in, bool *changed)
{
    cJSON *out = NULL;

    assert_int_equal(ms_status_build(in, &out, changed), MS_OK);
    assert_non_null(out);
    return out;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *s = get(obj, key);
    assert_true(cJSON_IsString(s));
    return s->valuestring;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *n = get(obj, key);
    assert_true(cJSON_IsNumber(n));
    return n->valuedouble;
}

static const cJSON *condition(const cJSON *status, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, get(status, "conditions"))
    {
        if (strcmp(str(c, "type"), type) == 0)
            return c;
    }
    fail_msg("no condition %s", type);
    return NULL;
}

static void expect_condition(const cJSON *status, const char *type, const char *st,
                             const char *reason, const char *since)
{
    const cJSON *c = condition(status, type);

    assert_string_equal(str(c, "status"), st);
    assert_string_equal(str(c, "reason"), reason);
    assert_string_equal(str(c, "lastTransitionTime"), since);
}

static void input(ms_status_input_t *in, const cJSON *prev, const ms_spec_t *spec,
                  const ms_decision_t *d, const char *now)
{
    ms_status_input_init(in);
    in->previous = prev;
    in->spec = spec;
    in->generation = 3;
    in->now = now;
    in->decision = d;
    in->desired = d ? d->desired_replicas : 0;
}

/* ---- the decided status ---- */

static void test_fresh_status_has_every_field(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;
    const cJSON *m, *ld, *c;
    int nconds = 0;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    /* 4 replicas at 91.2345% of the sidecar limit (70% target) and 300 rps
     * (120 per replica): sidecar asks 6, rps asks 3. */
    decide(&spec, &mem, 1000, 4, 91.2345, 300, &d);
    assert_int_equal(d.desired_replicas, 6);
    input(&in, NULL, &spec, &d, T0);
    in.scaled = true;
    st = build(&in, &changed);
    assert_true(changed);

    assert_int_equal((int)num(st, "observedGeneration"), 3);
    assert_string_equal(str(st, "reference"), "Deployment/api");
    assert_string_equal(str(st, "targets"), "sidecar: 91%/70%, rps: 75/120");
    assert_int_equal((int)num(st, "currentReplicas"), 4);
    assert_int_equal((int)num(st, "desiredReplicas"), 6);
    assert_string_equal(str(st, "lastScaleTime"), T0);

    m = get(st, "currentMetrics");
    assert_int_equal(cJSON_GetArraySize(m), 2);
    assert_string_equal(str(cJSON_GetArrayItem(m, 0), "name"), "sidecar");
    assert_true(num(cJSON_GetArrayItem(m, 0), "value") == 91.235); /* milli-units */
    assert_true(num(cJSON_GetArrayItem(m, 0), "effectiveValue") == 91.235);
    assert_int_equal((int)num(cJSON_GetArrayItem(m, 0), "replicas"), 6);
    assert_true(num(cJSON_GetArrayItem(m, 1), "value") == 300);
    assert_int_equal((int)num(cJSON_GetArrayItem(m, 1), "replicas"), 3);

    ld = get(st, "lastDecision");
    assert_string_equal(str(ld, "time"), T0);
    assert_int_equal((int)num(ld, "recommendation"), 6);
    assert_int_equal((int)num(ld, "desired"), 6);
    assert_string_equal(str(ld, "reason"), "DesiredWithinRange");
    assert_non_null(strstr(str(ld, "message"), "sidecar 91.23 asks 6"));

    /* Seven conditions in a fixed order, each complete. */
    static const char *const types[] = {
        "AbleToScale", "ScalingActive", "ScalingLimited", "DownstreamLimited",
        "RetryStorm",  "Saturated",     "DryRun"};
    cJSON_ArrayForEach(c, get(st, "conditions"))
    {
        assert_string_equal(str(c, "type"), types[nconds]);
        assert_int_equal((int)num(c, "observedGeneration"), 3);
        assert_string_equal(str(c, "lastTransitionTime"), T0);
        assert_true(strlen(str(c, "message")) > 10);
        nconds++;
    }
    assert_int_equal(nconds, 7);
    expect_condition(st, "AbleToScale", "True", "SucceededRescale", T0);
    assert_string_equal(str(condition(st, "AbleToScale"), "message"),
                        "the target's replica count was updated: from 4 to 6");
    expect_condition(st, "ScalingActive", "True", "ValidMetricFound", T0);
    expect_condition(st, "ScalingLimited", "False", "DesiredWithinRange", T0);
    expect_condition(st, "DownstreamLimited", "False", "NotConfigured", T0);
    expect_condition(st, "RetryStorm", "False", "NotConfigured", T0);
    expect_condition(st, "Saturated", "False", "NotConfigured", T0);
    expect_condition(st, "DryRun", "False", "DryRunDisabled", T0);
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_unchanged_sync_writes_nothing(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *s0, *s1, *s2;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d); /* within tolerance: holds 6 */
    input(&in, NULL, &spec, &d, T0);
    s0 = build(&in, &changed);
    assert_true(changed);
    /* The same observations 15 s later: a new `now`, nothing else. */
    decide(&spec, &mem, 1015, 6, 60, 300, &d);
    input(&in, s0, &spec, &d, T1);
    s1 = build(&in, &changed);
    assert_false(changed);
    assert_string_equal(str(get(s1, "lastDecision"), "time"), T0);
    expect_condition(s1, "AbleToScale", "True", "ReadyForNewScale", T0);
    assert_null(get(s1, "lastScaleTime"));
    /* Float noise below milli-units changes nothing either. */
    decide(&spec, &mem, 1030, 6, 60.0000004, 300.0002, &d);
    input(&in, s1, &spec, &d, T2);
    s2 = build(&in, &changed);
    assert_false(changed);
    cJSON_Delete(s2);
    /* A metric value that moved is a change, but the decision's time holds
     * while desired, reason and message hold... */
    decide(&spec, &mem, 1030, 6, 61, 300, &d);
    input(&in, s1, &spec, &d, T2);
    s2 = build(&in, &changed);
    assert_true(changed);
    assert_true(num(cJSON_GetArrayItem(get(s2, "currentMetrics"), 0), "value") == 61);
    assert_string_equal(str(get(s2, "lastDecision"), "time"), T2); /* message names 61 */
    cJSON_Delete(s2);
    cJSON_Delete(s1);
    cJSON_Delete(s0);
    ms_spec_cleanup(&spec);
}

static void test_last_decision_time_moves_only_with_the_decision(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *s0, *s1, *s2;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    in.message = "steady";
    s0 = build(&in, &changed);
    /* Same desired, reason and message, other metric values: time kept. */
    decide(&spec, &mem, 1015, 6, 62, 310, &d);
    input(&in, s0, &spec, &d, T1);
    in.message = "steady";
    s1 = build(&in, &changed);
    assert_true(changed); /* currentMetrics moved */
    assert_string_equal(str(get(s1, "lastDecision"), "time"), T0);
    /* Desired changes (a pause held it, say): time moves. */
    input(&in, s1, &spec, &d, T2);
    in.message = "steady";
    in.desired = 7;
    s2 = build(&in, &changed);
    assert_true(changed);
    assert_string_equal(str(get(s2, "lastDecision"), "time"), T2);
    assert_int_equal((int)num(get(s2, "lastDecision"), "desired"), 7);
    cJSON_Delete(s2);
    cJSON_Delete(s1);
    cJSON_Delete(s0);
    ms_spec_cleanup(&spec);
}

static void test_condition_flips_and_one_that_does_not(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *s0, *s1, *s2, *s3;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    s0 = build(&in, &changed);
    expect_condition(s0, "AbleToScale", "True", "ReadyForNewScale", T0);

    /* Reason changes, status stays True: no transition. */
    input(&in, s0, &spec, &d, T1);
    in.scaled = true;
    s1 = build(&in, &changed);
    assert_true(changed);
    expect_condition(s1, "AbleToScale", "True", "SucceededRescale", T0);
    assert_string_equal(str(s1, "lastScaleTime"), T1);

    /* True -> False: transition at T2; the other conditions keep T0. */
    input(&in, s1, &spec, &d, T2);
    in.conflict = true;
    in.problem = "HorizontalPodAutoscaler shop/api targets Deployment/api";
    s2 = build(&in, &changed);
    assert_true(changed);
    expect_condition(s2, "AbleToScale", "False", "ConflictingAutoscaler", T2);
    assert_string_equal(str(condition(s2, "AbleToScale"), "message"),
                        "another autoscaler targets the same workload, so this one does not "
                        "write until it is removed: HorizontalPodAutoscaler shop/api targets "
                        "Deployment/api");
    expect_condition(s2, "ScalingActive", "True", "ValidMetricFound", T0);
    expect_condition(s2, "DryRun", "False", "DryRunDisabled", T0);
    assert_string_equal(str(s2, "lastScaleTime"), T1); /* kept */

    /* Back to True at T3. */
    input(&in, s2, &spec, &d, T3);
    s3 = build(&in, &changed);
    expect_condition(s3, "AbleToScale", "True", "ReadyForNewScale", T3);
    cJSON_Delete(s3);
    cJSON_Delete(s2);
    cJSON_Delete(s1);
    cJSON_Delete(s0);
    ms_spec_cleanup(&spec);
}

static void test_able_to_scale_reasons(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 4, 91, 300, &d);

    input(&in, NULL, &spec, &d, T0);
    in.write_failed = true;
    in.problem = "PATCH scale: 403 Forbidden";
    st = build(&in, &changed);
    expect_condition(st, "AbleToScale", "False", "FailedUpdateScale", T0);
    assert_string_equal(str(condition(st, "AbleToScale"), "message"),
                        "the target's scale cannot be updated: PATCH scale: 403 Forbidden");
    assert_null(get(st, "lastScaleTime"));
    cJSON_Delete(st);

    input(&in, NULL, &spec, &d, T0);
    in.paused = true;
    in.pause_note = "the paused annotation stops every write";
    st = build(&in, &changed);
    expect_condition(st, "AbleToScale", "False", "Paused", T0);
    assert_string_equal(str(condition(st, "AbleToScale"), "message"),
                        "scaling is paused by annotation, so the target is not written: the "
                        "paused annotation stops every write");
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_scaling_active_reasons(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;
    const cJSON *m;

    (void)state;
    load_spec(spec_two_metrics, &spec);

    /* Every metric missing: held, FailedGetMetrics, nulls in currentMetrics. */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 4, NAN, NAN, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingActive", "False", "FailedGetMetrics", T0);
    assert_string_equal(str(condition(st, "ScalingActive"), "message"),
                        "metrics are missing, so the replica count is held and never lowered: "
                        "2 of 2 metrics missing");
    assert_string_equal(str(st, "targets"), "sidecar: <unknown>/70%, rps: <unknown>/120");
    m = cJSON_GetArrayItem(get(st, "currentMetrics"), 0);
    assert_true(cJSON_IsNull(get(m, "value")));
    assert_true(cJSON_IsNull(get(m, "effectiveValue")));
    assert_true(cJSON_IsNull(get(m, "replicas")));
    assert_true(cJSON_IsNull(get(get(st, "lastDecision"), "recommendation")));
    assert_string_equal(str(get(st, "lastDecision"), "reason"), "MetricsUnavailable");
    cJSON_Delete(st);

    /* Why a metric is missing, when the caller knows: named as HPA names it. */
    input(&in, NULL, &spec, &d, T0);
    in.missing = "sidecar: TIMEOUT the round's deadline passed";
    st = build(&in, &changed);
    assert_string_equal(str(condition(st, "ScalingActive"), "message"),
                        "metrics are missing, so the replica count is held and never lowered: "
                        "2 of 2 metrics missing (sidecar: TIMEOUT the round's deadline passed)");
    cJSON_Delete(st);

    /* One missing and the other asks for fewer: MetricsUnavailable too. */
    decide(&spec, &mem, 1015, 4, 10, NAN, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingActive", "False", "FailedGetMetrics", T0);
    cJSON_Delete(st);

    /* One missing, the other scales up: active, and says what is missing. */
    decide(&spec, &mem, 1030, 4, 91, NAN, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingActive", "True", "ValidMetricFound", T0);
    assert_string_equal(str(condition(st, "ScalingActive"), "message"),
                        "the replica count was computed from the metrics: 1 of 2 metrics missing");
    cJSON_Delete(st);

    /* A target scaled to zero. */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 0, 91, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingActive", "False", "ScalingDisabled", T0);
    assert_string_equal(str(st, "targets"), "sidecar: 91%/70%, rps: <unknown>/120");
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_fallback_is_reported(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    spec.fallback.enabled = true;
    spec.fallback.failure_threshold = 2;
    spec.fallback.replicas = 5;
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 4, NAN, NAN, &d);
    decide(&spec, &mem, 1015, 4, NAN, NAN, &d);
    assert_true(d.fallback_used);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingActive", "False", "FailedGetMetrics", T0);
    assert_string_equal(str(condition(st, "ScalingActive"), "message"),
                        "metrics are missing, so the replica count is held and never lowered: "
                        "every metric missing for 2 consecutive syncs, the fallback of 5 "
                        "replicas applies");
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_scaling_limited_reasons(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_two_metrics, &spec);

    /* Above maxReplicas before anything else. */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 12, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingLimited", "True", "TooManyReplicas", T0);
    assert_string_equal(str(condition(st, "ScalingLimited"), "message"),
                        "the desired replica count is more than the maximum replica count: "
                        "maxReplicas is 10");
    cJSON_Delete(st);

    /* Below minReplicas. */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 1, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingLimited", "True", "TooFewReplicas", T0);
    cJSON_Delete(st);

    /* A recommendation past maxReplicas. */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 8, 300, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingLimited", "True", "TooManyReplicas", T0);
    cJSON_Delete(st);

    /* Scale-up rate: 2 -> 4 at most (Percent 100 / Pods 4: max 6 from 2). */
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 2, 500, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "ScalingLimited", "True", "ScaleUpLimit", T0);
    assert_non_null(strstr(str(condition(st, "ScalingLimited"), "message"), ": limited to "));
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

/* spec_guardrails' object at 4 replicas asking 8 (sidecar 140 for 70);
 * edge-lb: 0.7 * 20000 - 13500 = 500 headroom, 400 per replica: 1 more. */
static void edge_lb_nearly_full(ms_observation_t *obs)
{
    ms_observation_init(obs);
    obs->now = 1000;
    obs->current_replicas = 4;
    obs->ready_replicas = 4;
    obs->metrics[0] = (ms_sample_t){true, 140};
    obs->downstreams[0].usage = (ms_sample_t){true, 13500};
    obs->downstreams[0].limit = (ms_sample_t){true, 20000};
}

static void test_guardrail_conditions(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_observation_t obs;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_guardrails, &spec);
    ms_engine_memory_init(&mem);
    edge_lb_nearly_full(&obs);
    /* db-conns: not observed. */
    obs.retry_share = (ms_sample_t){true, 0.5};
    obs.saturation[0].admitted = (ms_sample_t){true, 900};
    obs.saturation[0].rejected = (ms_sample_t){true, 300};
    assert_int_equal(ms_engine_decide(&spec, &mem, &obs, &d), MS_OK);
    assert_true(d.downstream_bound);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    assert_string_equal(str(st, "reference"), "StatefulSet/db");
    expect_condition(st, "DownstreamLimited", "True", "DownstreamLimit", T0);
    assert_string_equal(str(condition(st, "DownstreamLimited"), "message"),
                        "scaling out further would push a downstream limit past its allowed "
                        "utilization: edge-lb allows at most 5 replicas, db-conns not observed");
    expect_condition(st, "RetryStorm", "True", "RetryShareAboveThreshold", T0);
    expect_condition(st, "Saturated", "True", "SaturationCorrected", T0);
    assert_string_equal(str(condition(st, "Saturated"), "message"),
                        "a saturated proxy rejects requests, so the demand it hides was added to "
                        "the metric: corrected: sidecar");
    expect_condition(st, "DryRun", "True", "DryRunEnabled", T0); /* spec.dryRun */
    /* The effective value differs from the value. */
    const cJSON *m = cJSON_GetArrayItem(get(st, "currentMetrics"), 0);
    assert_true(num(m, "value") == 140);
    assert_true(num(m, "effectiveValue") == 93.333); /* 140 * 4/3 * 0.5 */
    cJSON_Delete(st);

    /* Calm: every guardrail configured, none active. */
    obs.now = 1015;
    obs.current_replicas = 6;
    obs.ready_replicas = 6;
    obs.metrics[0] = (ms_sample_t){true, 70};
    obs.retry_share = (ms_sample_t){true, 0.01};
    obs.saturation[0].rejected = (ms_sample_t){true, 0};
    obs.downstreams[1].usage = (ms_sample_t){true, 10};
    assert_int_equal(ms_engine_decide(&spec, &mem, &obs, &d), MS_OK);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "DownstreamLimited", "False", "WithinDownstreamLimits", T0);
    assert_string_equal(str(condition(st, "DownstreamLimited"), "message"),
                        "no downstream limit holds the scale-out");
    expect_condition(st, "RetryStorm", "False", "RetryShareBelowThreshold", T0);
    expect_condition(st, "Saturated", "False", "NotSaturated", T0);
    cJSON_Delete(st);

    /* §2b: a shared budget's grant short of the ask holds the scale-out as a
     * downstream cap does, and the condition says the split. */
    snprintf(spec.downstreams[0].budget, sizeof spec.downstreams[0].budget, "edge");
    d.nbudgets = 1;
    d.budgets[0] = (ms_budget_result_t){
        .downstream = 0, .bound = true, .members = 2, .room = 40, .ask = 3, .grant = 1};
    d.reason = MS_REASON_DownstreamLimit;
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "DownstreamLimited", "True", "DownstreamLimit", T0);
    assert_string_equal(str(condition(st, "DownstreamLimited"), "message"),
                        "scaling out further would push a downstream limit past its allowed "
                        "utilization: budget edge: 1 of 3 replicas asked, room 40 flows shared "
                        "by 2 objects");
    cJSON_Delete(st);
    d.budgets[0].bound = false; /* the room held the ask: nothing to say */
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "DownstreamLimited", "False", "WithinDownstreamLimits", T0);
    cJSON_Delete(st);
    spec.downstreams[0].budget[0] = '\0';

    /* The controller held the correction (its rates passed as missing) for
     * a pod that just turned Ready: Saturated says so, and why. */
    obs.now = 1030;
    obs.saturation[0].admitted.present = false;
    obs.saturation[0].rejected.present = false;
    assert_int_equal(ms_engine_decide(&spec, &mem, &obs, &d), MS_OK);
    input(&in, NULL, &spec, &d, T0);
    in.saturation_held = "sidecar: a pod turned Ready 2 s ago, inside the 60 s its rates read";
    st = build(&in, &changed);
    expect_condition(st, "Saturated", "False", "ReadyPodsSettling", T0);
    assert_non_null(strstr(str(condition(st, "Saturated"), "message"),
                           "the correction waits for a window of the current pods: sidecar: a "
                           "pod turned Ready 2 s ago, inside the 60 s its rates read"));
    cJSON_Delete(st);

    /* Step 7's reservation shows when the cap it lowered binds: 3 of 4
     * running: 500 - 400 reserved = 100, under one replica's 400: allowed 4
     * (5 without it). */
    ms_engine_memory_init(&mem);
    edge_lb_nearly_full(&obs);
    obs.running_replicas = (ms_pods_t){true, 3};
    assert_int_equal(ms_engine_decide(&spec, &mem, &obs, &d), MS_OK);
    input(&in, NULL, &spec, &d, T0);
    st = build(&in, &changed);
    expect_condition(st, "DownstreamLimited", "True", "DownstreamLimit", T0);
    assert_string_equal(str(condition(st, "DownstreamLimited"), "message"),
                        "scaling out further would push a downstream limit past its allowed "
                        "utilization: edge-lb allows at most 4 replicas (1 starting replica "
                        "reserves 400 flows), db-conns not observed");
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_dry_run_from_input(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    in.dry_run = true;
    st = build(&in, &changed);
    expect_condition(st, "DryRun", "True", "DryRunEnabled", T0);
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

/* Shadow mode beside an HPA: hpaComparison holds both counts and the
 * comparison; without an HPA there is none (a previous one is removed by
 * the merge patch, the field being absent). */
static void test_hpa_comparison(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    ms_compare_t cmp;
    const cJSON *h;
    bool changed;
    cJSON *st, *again, *patch;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d);
    ms_compare_init(&cmp);
    ms_compare_add(&cmp, 1796000000, 6, 6);
    ms_compare_add(&cmp, 1796000015, 9, 6);
    ms_compare_add(&cmp, 1796000075, 9, 8);
    input(&in, NULL, &spec, &d, T0);
    in.dry_run = true;
    in.hpa_name = "api";
    in.hpa_desired = 8;
    in.hpa_compare = &cmp;
    in.hpa_since = 1796000000;
    st = build(&in, &changed);
    h = get(st, "hpaComparison");
    assert_non_null(h);
    assert_string_equal(str(h, "hpa"), "api");
    assert_true(num(h, "hpaDesiredReplicas") == 8);
    assert_string_equal(str(h, "since"), "2026-11-30T00:53:20Z");
    assert_true(num(h, "syncs") == 3);
    assert_true(num(h, "differingSyncs") == 2);
    assert_true(num(h, "meanAbsoluteDifference") == 1.333); /* (0 + 3 + 1) / 3 */
    assert_true(num(h, "maxDifference") == 3);
    assert_true(num(h, "meshscalerFirstUp") == 1);
    assert_true(num(h, "hpaFirstUp") == 0);
    assert_true(num(h, "lastLeadSeconds") == 60);
    assert_null(get(h, "leading"));
    cJSON_Delete(st);
    ms_compare_add(&cmp, 1796000090, 9, 10); /* the HPA goes higher first */
    st = build(&in, &changed);
    h = get(st, "hpaComparison");
    assert_string_equal(str(h, "leading"), "hpa");
    assert_string_equal(str(h, "leadingSince"), "2026-11-30T00:54:50Z");
    input(&in, st, &spec, &d, T0);
    in.dry_run = true;
    again = build(&in, &changed);
    assert_true(changed);
    assert_null(get(again, "hpaComparison"));
    patch = ms_status_merge_patch(st, again);
    assert_true(cJSON_IsNull(get(get(patch, "status"), "hpaComparison")));
    cJSON_Delete(patch);
    cJSON_Delete(again);
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

static void test_targets_column(void **state)
{
    ms_spec_t spec;
    ms_decision_t d;
    char buf[256];
    size_t n;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    memset(&d, 0, sizeof d);
    d.nmetrics = 2;
    d.current_replicas = 3;
    d.metrics[0].value = (ms_sample_t){true, 69.5};
    d.metrics[1].value = (ms_sample_t){true, 100};
    n = ms_status_targets(&spec, &d, buf, sizeof buf);
    assert_string_equal(buf, "sidecar: 70%/70%, rps: 33.33/120");
    assert_int_equal(n, strlen(buf));
    /* Truncation is safe and reports the length needed. */
    assert_int_equal(ms_status_targets(&spec, &d, buf, 8), n);
    assert_string_equal(buf, "sidecar");

    /* Value targets, a third metric, and fractional targets. */
    spec.metrics[1].target_type = MS_TARGET_VALUE;
    spec.metrics[1].target = 0.25;
    spec.nmetrics = 3;
    spec.metrics[2] = spec.metrics[0];
    snprintf(spec.metrics[2].name, sizeof spec.metrics[2].name, "third");
    spec.metrics[2].container = NULL;
    spec.metrics[2].query = NULL;
    d.nmetrics = 3;
    d.metrics[1].value = (ms_sample_t){true, 0.126};
    ms_status_targets(&spec, &d, buf, sizeof buf);
    assert_string_equal(buf, "sidecar: 70%/70%, rps: 0.13/0.25 + 1 more...");
    spec.nmetrics = 2;
    ms_spec_cleanup(&spec);
}

/* ---- sync failures ---- */

static void test_invalid_spec_keeps_the_rest(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *s0, *s1, *s2;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 6, 60, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    s0 = build(&in, &changed);

    ms_status_input_init(&in);
    in.previous = s0;
    in.generation = 4;
    in.now = T1;
    in.outcome = MS_STATUS_INVALID_SPEC;
    in.problem = "spec.metrics[1].target.averageValue: not a quantity";
    s1 = build(&in, &changed);
    assert_true(changed);
    assert_int_equal((int)num(s1, "observedGeneration"), 4);
    assert_int_equal((int)num(s1, "desiredReplicas"), 6); /* kept */
    assert_string_equal(str(s1, "reference"), "Deployment/api");
    expect_condition(s1, "ScalingActive", "False", "InvalidSpec", T1);
    assert_string_equal(str(condition(s1, "ScalingActive"), "message"),
                        "the spec cannot be used: spec.metrics[1].target.averageValue: not a "
                        "quantity");
    assert_int_equal((int)num(condition(s1, "ScalingActive"), "observedGeneration"), 4);
    expect_condition(s1, "AbleToScale", "True", "ReadyForNewScale", T0); /* untouched */
    assert_int_equal((int)num(condition(s1, "AbleToScale"), "observedGeneration"), 3);
    assert_int_equal(cJSON_GetArraySize(get(s1, "conditions")), 7);

    /* The same failure again: nothing to write. */
    in.previous = s1;
    in.now = T2;
    s2 = build(&in, &changed);
    assert_false(changed);
    cJSON_Delete(s2);

    /* No previous status at all. */
    in.previous = NULL;
    s2 = build(&in, &changed);
    assert_true(changed);
    assert_int_equal(cJSON_GetArraySize(get(s2, "conditions")), 1);
    assert_null(get(s2, "reference"));
    cJSON_Delete(s2);
    cJSON_Delete(s1);
    cJSON_Delete(s0);
    ms_spec_cleanup(&spec);
}

static void test_failed_get_scale(void **state)
{
    ms_spec_t spec;
    ms_status_input_t in;
    bool changed;
    cJSON *st;

    (void)state;
    load_spec(spec_guardrails, &spec);
    ms_status_input_init(&in);
    in.spec = &spec;
    in.generation = 1;
    in.now = T0;
    in.outcome = MS_STATUS_FAILED_GET_SCALE;
    in.problem = "GET /apis/apps/v1/namespaces/shop/statefulsets/db/scale: 404 NotFound";
    st = build(&in, &changed);
    assert_true(changed);
    assert_string_equal(str(st, "reference"), "StatefulSet/db");
    expect_condition(st, "AbleToScale", "False", "FailedGetScale", T0);
    assert_string_equal(str(condition(st, "AbleToScale"), "message"),
                        "the target's scale cannot be read: GET "
                        "/apis/apps/v1/namespaces/shop/statefulsets/db/scale: 404 NotFound");
    expect_condition(st, "DryRun", "True", "DryRunEnabled", T0);
    assert_int_equal(cJSON_GetArraySize(get(st, "conditions")), 2);
    cJSON_Delete(st);
    ms_spec_cleanup(&spec);
}

/* ---- what the API server gives back ---- */

static void test_server_round_trip_compares_equal(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_status_input_t in;
    bool changed;
    cJSON *s0, *s1, *served;
    char *text;

    (void)state;
    load_spec(spec_two_metrics, &spec);
    ms_engine_memory_init(&mem);
    decide(&spec, &mem, 1000, 4, NAN, 300, &d);
    input(&in, NULL, &spec, &d, T0);
    s0 = build(&in, &changed);
    /* The server may drop nulls, reorder keys and add a foreign condition
     * (it is kept; a status equal but for that is still unchanged). */
    text = cJSON_PrintUnformatted(s0);
    served = cJSON_Parse(text);
    cJSON_free(text);
    cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(served, "currentMetrics"), 0);
    cJSON_DeleteItemFromObjectCaseSensitive(m0, "value");
    cJSON_DeleteItemFromObjectCaseSensitive(m0, "effectiveValue");
    cJSON_DeleteItemFromObjectCaseSensitive(m0, "replicas");
    cJSON *targets = cJSON_DetachItemFromObjectCaseSensitive(served, "targets");
    cJSON_AddItemToObject(served, "targets", targets); /* now last */
    cJSON *foreign = cJSON_Parse("{\"type\": \"Ready\", \"status\": \"True\", "
                                 "\"lastTransitionTime\": \"2026-01-01T00:00:00Z\", "
                                 "\"reason\": \"Other\", \"message\": \"someone else's\"}");
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(served, "conditions"), foreign);

    decide(&spec, &mem, 1015, 4, NAN, 300, &d);
    input(&in, served, &spec, &d, T1);
    s1 = build(&in, &changed);
    assert_false(changed);
    assert_int_equal(cJSON_GetArraySize(get(s1, "conditions")), 8);
    assert_string_equal(str(cJSON_GetArrayItem(get(s1, "conditions"), 7), "type"), "Ready");
    cJSON_Delete(s1);
    cJSON_Delete(served);
    cJSON_Delete(s0);
    ms_spec_cleanup(&spec);
}

static void test_merge_patch(void **state)
{
    cJSON *prev = cJSON_Parse("{\"observedGeneration\": 1, \"oldField\": \"x\","
                              " \"lastScaleTime\": \"" T0 "\","
                              " \"lastDecision\": {\"time\": \"" T0 "\", \"legacy\": 1},"
                              " \"conditions\": [{\"type\": \"A\"}, {\"type\": \"B\"}]}");
    cJSON *next = cJSON_Parse("{\"observedGeneration\": 2,"
                              " \"lastDecision\": {\"time\": \"" T1 "\"},"
                              " \"conditions\": [{\"type\": \"A\"}]}");
    cJSON *patch = ms_status_merge_patch(prev, next);
    cJSON *want = cJSON_Parse("{\"status\": {\"observedGeneration\": 2,"
                              " \"lastDecision\": {\"time\": \"" T1 "\", \"legacy\": null},"
                              " \"conditions\": [{\"type\": \"A\"}],"
                              " \"oldField\": null, \"lastScaleTime\": null}}");

    (void)state;
    assert_true(cJSON_Compare(patch, want, true));
    cJSON_Delete(patch);
    /* No previous status: the status itself. */
    patch = ms_status_merge_patch(NULL, next);
    assert_true(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(patch, "status"), next, true));
    cJSON_Delete(patch);
    cJSON_Delete(want);
    cJSON_Delete(next);
    cJSON_Delete(prev);
}

static void test_bad_input(void **state)
{
    ms_status_input_t in;
    cJSON *out = (cJSON *)&in;
    bool changed = true;

    (void)state;
    ms_status_input_init(&in);
    in.now = NULL;
    in.outcome = MS_STATUS_INVALID_SPEC;
    assert_int_equal(ms_status_build(&in, &out, &changed), MS_ERR_INVALID);
    assert_null(out);
    assert_false(changed);
    in.now = T0;
    in.outcome = MS_STATUS_DECIDED; /* without a decision */
    assert_int_equal(ms_status_build(&in, &out, &changed), MS_ERR_INVALID);
    assert_null(out);
}

/* ---- memory after a restart ---- */

static void test_restore_memory(void **state)
{
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
    ms_observation_t obs;
    /* 02:00:00Z is 1796004000 unix seconds. */
    const double wall0 = 1796004000.0;
    cJSON *status = cJSON_Parse("{\"lastScaleTime\": \"2026-11-30T01:59:00Z\","
                                " \"lastDecision\": {\"time\": \"2026-11-30T01:58:00Z\","
                                " \"recommendation\": 9, \"desired\": 8, \"reason\": "
                                "\"ScaleUpLimit\", \"message\": \"m\"}}");

    (void)state;
    load_spec(spec_two_metrics, &spec);
    /* Engine clock at 500 when the wall clock reads 02:00:00Z. */
    assert_true(ms_status_restore_memory(status, &spec, wall0, 500, 4, &mem));
    assert_int_equal(mem.nrecs, 2);
    assert_int_equal(mem.nevents, 0); /* lastScaleTime invents no event */
    assert_int_equal(mem.failures, 0);
    bool saw_current = false, saw_rec = false;
    for (int i = 0; i < mem.nrecs; i++) {
        if (mem.rec_replicas[i] == 4 && mem.rec_time[i] == 500)
            saw_current = true;
        if (mem.rec_replicas[i] == 9 && mem.rec_time[i] == 380) /* 120 s earlier */
            saw_rec = true;
    }
    assert_true(saw_current);
    assert_true(saw_rec);

    /* The restored 9 holds a scale-down inside the 300 s window. */
    ms_observation_init(&obs);
    obs.now = 510;
    obs.current_replicas = 8;
    obs.ready_replicas = 8;
    obs.metrics[0] = (ms_sample_t){true, 20};
    obs.metrics[1] = (ms_sample_t){true, 100};
    assert_int_equal(ms_engine_decide(&spec, &mem, &obs, &d), MS_OK);
    assert_int_equal(d.desired_replicas, 8);
    assert_true(d.stabilized);

    /* Older than every window: only the current count. */
    assert_false(ms_status_restore_memory(status, &spec, wall0 + 3600, 500, 4, &mem));
    assert_int_equal(mem.nrecs, 1);
    /* A writer whose clock ran ahead: taken as now. */
    assert_true(ms_status_restore_memory(status, &spec, wall0 - 600, 500, 4, &mem));
    assert_true(mem.rec_time[1] == 500);
    /* Unknown current count: nothing, so the engine's step 0 applies. */
    assert_false(ms_status_restore_memory(status, &spec, wall0, 500, -1, &mem));
    assert_int_equal(mem.nrecs, 0);
    /* Nothing usable in the status. */
    assert_false(ms_status_restore_memory(NULL, &spec, wall0, 500, 4, &mem));
    assert_int_equal(mem.nrecs, 1);
    cJSON *bad = cJSON_Parse("{\"lastDecision\": {\"time\": \"yesterday\", "
                             "\"recommendation\": 9}}");
    assert_false(ms_status_restore_memory(bad, &spec, wall0, 500, 4, &mem));
    cJSON_Delete(bad);
    bad = cJSON_Parse("{\"lastDecision\": {\"time\": \"" T0 "\", \"recommendation\": null}}");
    assert_false(ms_status_restore_memory(bad, &spec, wall0, 500, 4, &mem));
    cJSON_Delete(bad);
    bad = cJSON_Parse("{\"lastDecision\": {\"time\": \"" T0 "\", \"recommendation\": 2.5}}");
    assert_false(ms_status_restore_memory(bad, &spec, wall0, 500, 4, &mem));
    cJSON_Delete(bad);
    cJSON_Delete(status);
    ms_spec_cleanup(&spec);
}

/* ---- the table ---- */

static void test_condition_table(void **state)
{
    (void)state;
    for (int r = 0; r < MS_CR__COUNT; r++) {
        const char *reason = ms_condition_reason_name((ms_condition_reason_t)r);
        const char *st = ms_condition_reason_status((ms_condition_reason_t)r);
        const char *sentence = ms_condition_reason_sentence((ms_condition_reason_t)r);
        ms_condition_type_t t = ms_condition_reason_type((ms_condition_reason_t)r);

        /* metav1.Condition's reason pattern, in CamelCase. */
        assert_true(reason[0] >= 'A' && reason[0] <= 'Z');
        for (const char *p = reason; *p; p++)
            assert_true((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                        (*p >= '0' && *p <= '9'));
        assert_true(strcmp(st, "True") == 0 || strcmp(st, "False") == 0);
        /* Sentences: lower-case start, no trailing period (details follow). */
        assert_true(sentence[0] >= 'a' && sentence[0] <= 'z');
        assert_int_not_equal(sentence[strlen(sentence) - 1], '.');
        assert_true((int)t >= 0 && t < MS_COND__COUNT);
    }
    assert_string_equal(ms_condition_type_name(MS_COND_AbleToScale), "AbleToScale");
    assert_string_equal(ms_condition_type_name(MS_COND_DryRun), "DryRun");
    assert_string_equal(ms_condition_type_name(MS_COND__COUNT), "");
    assert_string_equal(ms_condition_reason_name(MS_CR_ABLE_CONFLICT), "ConflictingAutoscaler");
    assert_int_equal(ms_condition_reason_type(MS_CR_LIMITED_DOWN_RATE), MS_COND_ScalingLimited);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_status_has_every_field),
        cmocka_unit_test(test_unchanged_sync_writes_nothing),
        cmocka_unit_test(test_last_decision_time_moves_only_with_the_decision),
        cmocka_unit_test(test_condition_flips_and_one_that_does_not),
        cmocka_unit_test(test_able_to_scale_reasons),
        cmocka_unit_test(test_scaling_active_reasons),
        cmocka_unit_test(test_fallback_is_reported),
        cmocka_unit_test(test_scaling_limited_reasons),
        cmocka_unit_test(test_guardrail_conditions),
        cmocka_unit_test(test_dry_run_from_input),
        cmocka_unit_test(test_hpa_comparison),
        cmocka_unit_test(test_targets_column),
        cmocka_unit_test(test_invalid_spec_keeps_the_rest),
        cmocka_unit_test(test_failed_get_scale),
        cmocka_unit_test(test_server_round_trip_compares_equal),
        cmocka_unit_test(test_merge_patch),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_restore_memory),
        cmocka_unit_test(test_condition_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
