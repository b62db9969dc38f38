/*
 * test_spec_json.c - reading a MeshAutoscaler spec from JSON: every field,
 * every default, and refusals that name the exact path of the fault.
 *
 * Specs are written with single quotes for readability; read_spec() turns
 * them into double quotes before parsing (no test string needs a real ').
 * Every spec read is released with ms_spec_cleanup, refused ones included:
 * the Sanitize build's leak checker holds the reader to its ownership rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/spec_json.h"

/* One valid metric, for specs that are about something else. */
#define METRIC_M "{'name': 'm', 'type': 'Prometheus', 'target': {'type': 'Value', 'value': 1}}"
#define METRIC_N "{'name': 'n', 'type': 'Prometheus', 'target': {'type': 'Value', 'value': 1}}"
/* A spec's head and tail around a few extra fields. */
#define SPEC_WITH(fields) "{'maxReplicas': 10, 'metrics': [" METRIC_M "]" fields "}"

/* The example of docs/decision-rules.md#resource (with a Static fallback),
 * as the API server would send it. */
static const char full_spec[] =
    "{'scaleTargetRef': {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'api'},"
    " 'minReplicas': 2, 'maxReplicas': 40, 'dryRun': false, 'syncPeriodSeconds': 15,"
    " 'metrics': ["
    "  {'name': 'sidecar', 'type': 'SidecarConcurrency',"
    "   'sidecarConcurrency': {'proxy': 'envoy', 'limit': 100},"
    "   'target': {'type': 'Utilization', 'averageUtilization': 70}},"
    "  {'name': 'proxy-cpu', 'type': 'SidecarCPU', 'sidecarCPU': {'container': 'istio-proxy'},"
    "   'target': {'type': 'Utilization', 'averageUtilization': 75}},"
    "  {'name': 'rps', 'type': 'Prometheus',"
    "   'prometheus': {'query': 'sum(rate(http_requests_total[1m]))'},"
    "   'target': {'type': 'AverageValue', 'averageValue': '120'}}],"
    " 'behavior': {},"
    " 'guardrails': {"
    "  'downstream': [{'name': 'edge-lb', 'usageQuery': 'sum(sessions)',"
    "    'limitQuery': 'sum(limit_sessions)', 'perReplica': 40, 'maxUtilization': 0.7}],"
    "  'retryStorm': {'retryShareQuery': 'sum(retries) / sum(attempts)', 'threshold': 0.3},"
    "  'saturation': [{'metric': 'sidecar', 'rejectedQuery': 'sum(overflow)',"
    "    'admittedQuery': 'sum(total)'}]},"
    " 'fallback': {'failureThreshold': 3, 'replicas': 6, 'mode': 'Static'}}";

/* Parse a single-quoted spec into *spec (freshly initialised here). */
static ms_err_t read_spec(const char *squoted, bool offline, ms_spec_t *spec, char *errbuf,
                          size_t errlen)
{
    char *text = strdup(squoted);
    cJSON *json;
    ms_jpath_t p;
    ms_err_t err;

    assert_non_null(text);
    for (char *c = text; *c; c++)
        if (*c == '\'')
            *c = '"';
    json = cJSON_Parse(text);
    if (json == NULL)
        fail_msg("test spec is not JSON: %s", text);
    ms_spec_init(spec);
    ms_jpath_init(&p, "spec");
    err = ms_spec_from_json(json, &p, offline, spec, errbuf, errlen);
    cJSON_Delete(json);
    free(text);
    return err;
}

static void check_refused(const char *squoted, bool offline, const char *message, const char *file,
                          int line)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_spec_t spec;
    ms_err_t err = read_spec(squoted, offline, &spec, errbuf, sizeof errbuf);

    ms_spec_cleanup(&spec);
    if (err != MS_ERR_INVALID)
        fail_msg("%s:%d: got %s (%s), want MS_ERR_INVALID with \"%s\"", file, line,
                 ms_err_name(err), errbuf, message);
    if (strcmp(errbuf, message) != 0)
        fail_msg("%s:%d: message\n  got:  %s\n  want: %s", file, line, errbuf, message);
}

static void check_accepted(const char *squoted, bool offline, const char *file, int line)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_spec_t spec;
    ms_err_t err = read_spec(squoted, offline, &spec, errbuf, sizeof errbuf);

    ms_spec_cleanup(&spec);
    if (err != MS_OK)
        fail_msg("%s:%d: refused (%s): %s", file, line, ms_err_name(err), errbuf);
}

#define REFUSED(spec, offline, message)                                                            \
    check_refused((spec), (offline), (message), __FILE__, __LINE__)
#define ACCEPTED(spec, offline) check_accepted((spec), (offline), __FILE__, __LINE__)

/* Read a spec that must be valid; the test cleans it up. */
static void read_valid(const char *squoted, bool offline, ms_spec_t *spec)
{
    char errbuf[MS_ERRBUF_SIZE] = "";

    if (read_spec(squoted, offline, spec, errbuf, sizeof errbuf) != MS_OK)
        fail_msg("refused: %s", errbuf);
}

static void assert_rules_equal(const ms_scaling_rules_t *got, const ms_scaling_rules_t *want)
{
    assert_int_equal(got->window_seconds, want->window_seconds);
    assert_int_equal(got->select, want->select);
    assert_true(got->tolerance == want->tolerance);
    assert_int_equal(got->npolicies, want->npolicies);
    for (size_t i = 0; i < want->npolicies; i++) {
        assert_int_equal(got->policies[i].type, want->policies[i].type);
        assert_int_equal(got->policies[i].value, want->policies[i].value);
        assert_int_equal(got->policies[i].period_seconds, want->policies[i].period_seconds);
    }
}

static void assert_default_rules(const ms_scaling_rules_t *got, bool up)
{
    ms_scaling_rules_t want;

    ms_scaling_rules_default(&want, up);
    assert_rules_equal(got, &want);
}

/* ---- valid specs ---- */

static void test_full_example_lands_in_every_field(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(full_spec, false, &s);
    assert_string_equal(s.target_api_version, "apps/v1");
    assert_string_equal(s.target_kind, "Deployment");
    assert_string_equal(s.target_name, "api");
    assert_int_equal(s.min_replicas, 2);
    assert_int_equal(s.max_replicas, 40);
    assert_false(s.dry_run);
    assert_int_equal(s.sync_period_seconds, 15);

    assert_int_equal(s.nmetrics, 3);
    assert_string_equal(s.metrics[0].name, "sidecar");
    assert_int_equal(s.metrics[0].source, MS_SOURCE_SIDECAR_CONCURRENCY);
    assert_int_equal(s.metrics[0].proxy, MS_PROXY_ENVOY);
    assert_true(s.metrics[0].has_limit);
    assert_true(s.metrics[0].limit == 100.0);
    assert_int_equal(s.metrics[0].target_type, MS_TARGET_UTILIZATION);
    assert_true(s.metrics[0].target == 70.0);
    assert_string_equal(s.metrics[1].name, "proxy-cpu");
    assert_int_equal(s.metrics[1].source, MS_SOURCE_SIDECAR_CPU);
    assert_string_equal(s.metrics[1].container, "istio-proxy");
    assert_true(s.metrics[1].target == 75.0);
    assert_string_equal(s.metrics[2].name, "rps");
    assert_int_equal(s.metrics[2].source, MS_SOURCE_PROMETHEUS);
    assert_string_equal(s.metrics[2].query, "sum(rate(http_requests_total[1m]))");
    assert_int_equal(s.metrics[2].target_type, MS_TARGET_AVERAGE_VALUE);
    assert_true(s.metrics[2].target == 120.0); /* from the quantity string "120" */

    /* behavior: {} is the autoscaling/v2 default in both directions. */
    assert_default_rules(&s.scale_up, true);
    assert_default_rules(&s.scale_down, false);

    assert_int_equal(s.ndownstreams, 1);
    assert_string_equal(s.downstreams[0].name, "edge-lb");
    assert_string_equal(s.downstreams[0].usage_query, "sum(sessions)");
    assert_string_equal(s.downstreams[0].limit_query, "sum(limit_sessions)");
    assert_false(s.downstreams[0].has_limit);
    assert_true(s.downstreams[0].per_replica == 40.0);
    assert_true(s.downstreams[0].max_utilization == 0.7);
    assert_true(s.retry_storm.enabled);
    assert_string_equal(s.retry_storm.retry_share_query, "sum(retries) / sum(attempts)");
    assert_true(s.retry_storm.threshold == 0.3);
    assert_true(s.saturation[0].enabled);
    assert_string_equal(s.saturation[0].rejected_query, "sum(overflow)");
    assert_string_equal(s.saturation[0].admitted_query, "sum(total)");
    assert_false(s.saturation[1].enabled);
    assert_false(s.saturation[2].enabled);
    assert_true(s.fallback.enabled);
    assert_int_equal(s.fallback.failure_threshold, 3);
    assert_int_equal(s.fallback.replicas, 6);
    assert_int_equal(s.fallback.mode, MS_FALLBACK_STATIC);
    ms_spec_cleanup(&s);
}

static void test_other_enum_values(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid("{'maxReplicas': 5, 'dryRun': true, 'metrics': ["
               " {'name': 'a', 'type': 'SidecarConcurrency',"
               "  'sidecarConcurrency': {'proxy': 'linkerd'},"
               "  'target': {'type': 'Value', 'value': 3}},"
               " {'name': 'b', 'type': 'SidecarConcurrency',"
               "  'sidecarConcurrency': {'proxy': 'haproxy'},"
               "  'target': {'type': 'AverageValue', 'averageValue': 9}}],"
               " 'behavior': {'scaleDown': {'selectPolicy': 'Disabled'}},"
               " 'fallback': {'replicas': 0, 'mode': 'CurrentIfHigher'}}",
               true, &s);
    assert_true(s.dry_run);
    assert_int_equal(s.metrics[0].proxy, MS_PROXY_LINKERD);
    assert_false(s.metrics[0].has_limit); /* the proxy exports it */
    assert_int_equal(s.metrics[0].target_type, MS_TARGET_VALUE);
    assert_true(s.metrics[0].target == 3.0);
    assert_int_equal(s.metrics[1].proxy, MS_PROXY_HAPROXY);
    assert_int_equal(s.scale_down.select, MS_SELECT_DISABLED);
    assert_int_equal(s.fallback.replicas, 0);
    assert_int_equal(s.fallback.mode, MS_FALLBACK_CURRENT_IF_HIGHER);
    ms_spec_cleanup(&s);
}

static void test_defaults_of_a_minimal_spec(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(SPEC_WITH(""), true, &s);
    assert_int_equal(s.min_replicas, 1);
    assert_int_equal(s.max_replicas, 10);
    assert_false(s.dry_run);
    assert_int_equal(s.sync_period_seconds, 0); /* the controller's --sync-period */
    assert_default_rules(&s.scale_up, true);
    assert_default_rules(&s.scale_down, false);
    assert_false(s.retry_storm.enabled);
    assert_false(s.fallback.enabled);
    assert_int_equal(s.ndownstreams, 0);
    assert_null(s.target_name);
    ms_spec_cleanup(&s);
}

static void test_guardrail_and_fallback_defaults(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(SPEC_WITH(", 'guardrails': {"
                         "  'downstream': [{'name': 'db', 'limit': 100, 'perReplica': 5}],"
                         "  'retryStorm': {}},"
                         " 'fallback': {'replicas': 4}"),
               true, &s);
    assert_true(s.downstreams[0].has_limit);
    assert_true(s.downstreams[0].limit == 100.0);
    assert_true(s.downstreams[0].max_utilization == 0.7);
    assert_true(s.retry_storm.enabled);
    assert_true(s.retry_storm.threshold == 0.3);
    assert_true(s.fallback.enabled);
    assert_int_equal(s.fallback.failure_threshold, 3);
    /* docs/decision-rules.md#resource: an outage hits every object at once, so by default the
     * fallback may raise counts but never lower them. */
    assert_int_equal(s.fallback.mode, MS_FALLBACK_CURRENT_IF_HIGHER);
    ms_spec_cleanup(&s);
}

/* §2b: a budget is a DNS-1123 label, as the CRD's schema says. */
static void test_downstream_budget_is_a_dns_label(void **state)
{
    ms_spec_t s;
    char name63[64];
    char spec[512];

    (void)state;
    read_valid(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                         " 'perReplica': 5, 'budget': 'pg-main-1'}]}"),
               true, &s);
    assert_string_equal(s.downstreams[0].budget, "pg-main-1");
    ms_spec_cleanup(&s);
    read_valid(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                         " 'perReplica': 5}]}"),
               true, &s);
    assert_string_equal(s.downstreams[0].budget, "");
    ms_spec_cleanup(&s);

    static const char *const bad[] = {"Edge", "edge_lb", "-edge", "edge-", "edge.lb", "a b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[256];
        snprintf(spec, sizeof spec,
                 SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                           " 'perReplica': 5, 'budget': '%s'}]}"),
                 bad[i]);
        snprintf(want, sizeof want,
                 "spec.guardrails.downstream[0].budget: \"%s\" must be a DNS-1123 label "
                 "(lower-case letters, digits and '-', starting and ending with a letter or digit)",
                 bad[i]);
        REFUSED(spec, true, want);
    }
    memset(name63, 'a', 63);
    name63[63] = '\0';
    snprintf(spec, sizeof spec,
             SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                       " 'perReplica': 5, 'budget': '%sa'}]}"),
             name63);
    REFUSED(
        spec, true,
        "spec.guardrails.downstream[0].budget: must be a DNS-1123 label (at most 63 characters)");
    snprintf(spec, sizeof spec,
             SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                       " 'perReplica': 5, 'budget': '%s'}]}"),
             name63);
    ACCEPTED(spec, true);
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 100,"
                      " 'perReplica': 5, 'budget': 7}]}"),
            true, "spec.guardrails.downstream[0].budget: not a string (found a number)");
}

static void test_one_direction_given_leaves_the_other_default(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(SPEC_WITH(", 'behavior': {'scaleDown': {'stabilizationWindowSeconds': 60}}"), true,
               &s);
    /* autoscaling/v2 fills each direction on its own: scale-down keeps its
     * default policy, select and tolerance, only the window changes. */
    assert_int_equal(s.scale_down.window_seconds, 60);
    assert_int_equal(s.scale_down.npolicies, 1);
    assert_int_equal(s.scale_down.policies[0].type, MS_POLICY_PERCENT);
    assert_int_equal(s.scale_down.policies[0].value, 100);
    assert_int_equal(s.scale_down.policies[0].period_seconds, 15);
    assert_int_equal(s.scale_down.select, MS_SELECT_MAX);
    assert_true(s.scale_down.tolerance == 0.1);
    assert_default_rules(&s.scale_up, true);
    ms_spec_cleanup(&s);
}

static void test_some_fields_of_a_direction_given(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(SPEC_WITH(", 'behavior': {'scaleUp': {'selectPolicy': 'Min',"
                         " 'policies': [{'type': 'Pods', 'value': 2, 'periodSeconds': 60}],"
                         " 'tolerance': '50m'}}"),
               true, &s);
    /* Given policies replace the default ones; the window stays default. */
    assert_int_equal(s.scale_up.window_seconds, 0);
    assert_int_equal(s.scale_up.select, MS_SELECT_MIN);
    assert_int_equal(s.scale_up.npolicies, 1);
    assert_int_equal(s.scale_up.policies[0].type, MS_POLICY_PODS);
    assert_int_equal(s.scale_up.policies[0].value, 2);
    assert_int_equal(s.scale_up.policies[0].period_seconds, 60);
    assert_true(s.scale_up.tolerance == 0.05);
    assert_default_rules(&s.scale_down, false);
    assert_int_equal(ms_spec_longest_period(&s), 60);
    ms_spec_cleanup(&s);
}

static void test_quantity_strings_are_accepted(void **state)
{
    ms_spec_t s;

    (void)state;
    read_valid(
        "{'maxReplicas': 10, 'metrics': ["
        " {'name': 'rps', 'type': 'Prometheus',"
        "  'target': {'type': 'AverageValue', 'averageValue': '1.5k'}},"
        " {'name': 'conc', 'type': 'SidecarConcurrency',"
        "  'sidecarConcurrency': {'proxy': 'envoy', 'limit': '2k'},"
        "  'target': {'type': 'Value', 'value': '500m'}}],"
        " 'guardrails': {'downstream': [{'name': 'db', 'limit': '1Ki', 'perReplica': '2.5'}]}}",
        true, &s);
    assert_true(s.metrics[0].target == 1500.0);
    assert_true(s.metrics[1].limit == 2000.0);
    assert_true(s.metrics[1].target == 0.5);
    assert_true(s.downstreams[0].limit == 1024.0);
    assert_true(s.downstreams[0].per_replica == 2.5);
    ms_spec_cleanup(&s);
}

/* ms_json_quantity alone: numbers, quantity strings, and its refusals. */
static void test_quantity_reads_numbers_and_strings(void **state)
{
    cJSON *num = cJSON_Parse("120"), *str = cJSON_Parse("\"1.5k\"");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    double out = 0;

    (void)state;
    ms_jpath_init(&p, "x");
    assert_int_equal(ms_json_quantity(num, &p, &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == 120.0);
    assert_int_equal(ms_json_quantity(str, &p, &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == 1500.0);
    cJSON_Delete(num);
    cJSON_Delete(str);
}

static void test_quantity_failures(void **state)
{
    cJSON *bad = cJSON_Parse("\"1.5Q\""), *flag = cJSON_Parse("false");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    double out = 7;

    (void)state;
    ms_jpath_init(&p, "spec");
    ms_jpath_push_key(&p, "limit");
    assert_int_equal(ms_json_quantity(bad, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    /* The quantity parser's reason, behind the path. */
    assert_non_null(strstr(errbuf, "spec.limit: quantity \"1.5Q\" has an unknown suffix"));
    assert_int_equal(ms_json_quantity(flag, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "spec.limit: not a number or quantity string (found a boolean)");
    assert_true(out == 7);
    cJSON_Delete(bad);
    cJSON_Delete(flag);
}

static void test_limits_at_their_edges_are_accepted(void **state)
{
    (void)state;
    ACCEPTED(SPEC_WITH(", 'minReplicas': 10"), true); /* min == max */
    ACCEPTED(SPEC_WITH(", 'behavior': {'scaleDown': {'stabilizationWindowSeconds': 3600,"
                       " 'tolerance': 0,"
                       " 'policies': [{'type': 'Pods', 'value': 1, 'periodSeconds': 1800}]}}"),
             true);
    ACCEPTED(SPEC_WITH(", 'guardrails': {'retryStorm': {'threshold': 0},"
                       " 'downstream': [{'name': 'd', 'limit': 1, 'perReplica': 1,"
                       " 'maxUtilization': 1}]}"),
             true);
    /* Eight policies is the most autoscaling/v2 allows, not one fewer. */
    ACCEPTED(SPEC_WITH(", 'behavior': {'scaleUp': {'policies': ["
                       "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 2, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 3, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 4, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 5, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 6, 'periodSeconds': 15},"
                       "{'type': 'Pods', 'value': 7, 'periodSeconds': 15},"
                       "{'type': 'Percent', 'value': 8, 'periodSeconds': 15}]}}"),
             true);
}

static void test_scale_target_ref_is_required_online_only(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(""), false, "spec.scaleTargetRef: required");
    ACCEPTED(SPEC_WITH(""), true);
    REFUSED(SPEC_WITH(", 'scaleTargetRef': {'apiVersion': 'apps/v1', 'kind': 'Deployment'}"), false,
            "spec.scaleTargetRef.name: required");
}

/* ---- refusals ---- */

static void test_refuses_min_above_max(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'minReplicas': 11"), true,
            "spec.maxReplicas: 10 is less than minReplicas 11");
    REFUSED(SPEC_WITH(", 'minReplicas': 0"), true, "spec.minReplicas: must be at least 1");
    REFUSED("{'metrics': [" METRIC_M "]}", true, "spec.maxReplicas: required");
    REFUSED(SPEC_WITH(", 'minReplicas': 2.5"), true, "spec.minReplicas: not an integer");
}

static void test_refuses_bad_metrics_lists(void **state)
{
    (void)state;
    REFUSED("{'maxReplicas': 10, 'metrics': []}", true,
            "spec.metrics: at least one metric is required");
    REFUSED("{'maxReplicas': 10}", true, "spec.metrics: required");
    REFUSED("{'maxReplicas': 10, 'metrics': {}}", true,
            "spec.metrics: not an array (found an object)");
    REFUSED("{'maxReplicas': 10, 'metrics': [" METRIC_M ", " METRIC_N ", " METRIC_M "]}", true,
            "spec.metrics[2].name: duplicate metric name \"m\"");
}

static void test_refuses_more_than_16_metrics(void **state)
{
    char text[4096] = "{'maxReplicas': 10, 'metrics': [";
    size_t len = strlen(text);

    (void)state;
    for (int i = 0; i < 17; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{'name': 'm%d', 'type': 'Prometheus',"
                                " 'target': {'type': 'Value', 'value': 1}}",
                                i ? ", " : "", i);
    snprintf(text + len, sizeof text - len, "]}");
    REFUSED(text, true, "spec.metrics: at most 16 metrics are allowed");
}

static void test_refuses_bad_metric_names_and_types(void **state)
{
    (void)state;
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': '-m', 'type': 'Prometheus',"
            " 'target': {'type': 'Value', 'value': 1}}]}",
            true,
            "spec.metrics[0].name: \"-m\" is not a valid name (letters, digits, '-', '_' and "
            "'.', starting with a letter or digit)");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Datadog',"
            " 'target': {'type': 'Value', 'value': 1}}]}",
            true,
            "spec.metrics[0].type: unknown value \"Datadog\" (want one of SidecarConcurrency, "
            "SidecarCPU, Prometheus)");
}

static void test_refuses_unknown_target_type(void **state)
{
    (void)state;
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'Percent', 'value': 1}}]}",
            true,
            "spec.metrics[0].target.type: unknown value \"Percent\" (want one of Utilization, "
            "Value, AverageValue)");
}

static void test_refuses_target_field_of_another_type(void **state)
{
    (void)state;
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'Utilization', 'value': 50}}]}",
            true, "spec.metrics[0].target.value: not allowed with target type Utilization");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'AverageValue', 'averageValue': 5, 'averageUtilization': 50}}]}",
            true,
            "spec.metrics[0].target.averageUtilization: not allowed with target type AverageValue");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'Value'}}]}",
            true, "spec.metrics[0].target.value: required");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'Value', 'value': 0}}]}",
            true, "spec.metrics[0].target.value: must be greater than 0");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'target': {'type': 'AverageValue', 'averageValue': '1.5Q'}}]}",
            true,
            "spec.metrics[0].target.averageValue: quantity \"1.5Q\" has an unknown suffix \"Q\" "
            "(want one of n u m k M G T P E Ki Mi Gi Ti Pi Ei or an exponent like e3)");
}

static void test_refuses_source_block_of_another_type(void **state)
{
    (void)state;
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'sidecarCPU': {'container': 'c'}, 'target': {'type': 'Value', 'value': 1}}]}",
            true, "spec.metrics[0].sidecarCPU: not allowed with type Prometheus");
    REFUSED("{'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'SidecarConcurrency',"
            " 'sidecarConcurrency': {'proxy': 'nginx'}, 'target': {'type': 'Value', 'value': 1}}]}",
            true,
            "spec.metrics[0].sidecarConcurrency.proxy: unknown value \"nginx\" (want one of envoy, "
            "haproxy, linkerd)");
}

static void test_refuses_missing_queries_online(void **state)
{
    (void)state;
    /* Offline (decide) ignores queries; the controller cannot. */
    REFUSED("{'scaleTargetRef': {'apiVersion': 'v1', 'kind': 'D', 'name': 'x'},"
            " 'maxReplicas': 10, 'metrics': [" METRIC_M "]}",
            false, "spec.metrics[0].prometheus.query: required for type Prometheus");
}

static void test_refuses_bad_saturation_entries(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'guardrails': {'saturation': [{'metric': 'nope'}]}"), true,
            "spec.guardrails.saturation[0].metric: \"nope\" is not a metric of spec.metrics");
    REFUSED(SPEC_WITH(", 'guardrails': {'saturation': [{'metric': 'm'}, {'metric': 'm'}]}"), true,
            "spec.guardrails.saturation[1].metric: metric \"m\" already has a saturation entry");
}

static void test_refuses_incomplete_downstreams(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'limit': 10}]}"), true,
            "spec.guardrails.downstream[0].perReplica: required");
    /* Online, a downstream needs a limit from somewhere; offline the tick's
     * signals carry it. */
    REFUSED("{'scaleTargetRef': {'apiVersion': 'v1', 'kind': 'D', 'name': 'x'},"
            " 'maxReplicas': 10, 'metrics': [{'name': 'm', 'type': 'Prometheus',"
            " 'prometheus': {'query': 'q'}, 'target': {'type': 'Value', 'value': 1}}],"
            " 'guardrails': {'downstream': [{'name': 'db', 'usageQuery': 'u', 'perReplica': 1}]}}",
            false, "spec.guardrails.downstream[0]: one of limit or limitQuery is required");
    ACCEPTED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'perReplica': 1}]}"), true);
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'perReplica': 1},"
                      " {'name': 'db', 'perReplica': 2}]}"),
            true, "spec.guardrails.downstream[1].name: duplicate name \"db\"");
}

static void test_refuses_max_utilization_outside_zero_to_one(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'perReplica': 1,"
                      " 'maxUtilization': 0}]}"),
            true, "spec.guardrails.downstream[0].maxUtilization: must be in (0, 1]");
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': [{'name': 'db', 'perReplica': 1,"
                      " 'maxUtilization': 1.5}]}"),
            true, "spec.guardrails.downstream[0].maxUtilization: must be in (0, 1]");
}

static void test_refuses_retry_threshold_of_one(void **state)
{
    (void)state;
    /* A share can never exceed 1, so threshold 1 would never fire. */
    REFUSED(SPEC_WITH(", 'guardrails': {'retryStorm': {'threshold': 1}}"), true,
            "spec.guardrails.retryStorm.threshold: must be in [0, 1)");
    REFUSED(SPEC_WITH(", 'guardrails': {'retryStorm': {'threshold': -0.1}}"), true,
            "spec.guardrails.retryStorm.threshold: must be in [0, 1)");
}

static void test_refuses_bad_policies(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'behavior': {'scaleUp': {'policies': []}}"), true,
            "spec.behavior.scaleUp.policies: at least one policy is required");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleUp': {'policies': ["
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15}]}}"),
            true, "spec.behavior.scaleUp.policies: at most 8 policies are allowed");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleDown': {'policies': ["
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 0}]}}"),
            true, "spec.behavior.scaleDown.policies[0].periodSeconds: must be at least 1");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleDown': {'policies': ["
                      "{'type': 'Pods', 'value': 1, 'periodSeconds': 15},"
                      "{'type': 'Percent', 'value': 1, 'periodSeconds': 1801}]}}"),
            true, "spec.behavior.scaleDown.policies[1].periodSeconds: must be at most 1800");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleDown': {'policies': ["
                      "{'type': 'Pods', 'value': 0, 'periodSeconds': 15}]}}"),
            true, "spec.behavior.scaleDown.policies[0].value: must be at least 1");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleUp': {'selectPolicy': 'Average'}}"), true,
            "spec.behavior.scaleUp.selectPolicy: unknown value \"Average\" (want one of Max, "
            "Min, Disabled)");
}

static void test_refuses_window_above_an_hour(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'behavior': {'scaleDown': {'stabilizationWindowSeconds': 3601}}"), true,
            "spec.behavior.scaleDown.stabilizationWindowSeconds: must be at most 3600");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleUp': {'stabilizationWindowSeconds': -1}}"), true,
            "spec.behavior.scaleUp.stabilizationWindowSeconds: must be at least 0");
}

static void test_refuses_negative_tolerance(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'behavior': {'scaleUp': {'tolerance': -0.1}}"), true,
            "spec.behavior.scaleUp.tolerance: must not be negative");
    REFUSED(SPEC_WITH(", 'behavior': {'scaleDown': {'tolerance': '-100m'}}"), true,
            "spec.behavior.scaleDown.tolerance: must not be negative");
}

static void test_refuses_bad_fallback(void **state)
{
    (void)state;
    REFUSED(SPEC_WITH(", 'fallback': {'failureThreshold': 2}"), true,
            "spec.fallback.replicas: required");
    REFUSED(SPEC_WITH(", 'fallback': {'replicas': 3, 'mode': 'Dynamic'}"), true,
            "spec.fallback.mode: unknown value \"Dynamic\" (want one of Static, CurrentIfHigher)");
    REFUSED(SPEC_WITH(", 'fallback': {'replicas': 3, 'failureThreshold': 0}"), true,
            "spec.fallback.failureThreshold: must be at least 1");
    REFUSED(SPEC_WITH(", 'fallback': {'replicas': -1}"), true,
            "spec.fallback.replicas: must be at least 0");
}

static void test_refuses_wrong_kinds_of_blocks(void **state)
{
    (void)state;
    REFUSED("[]", true, "spec: not an object (found an array)");
    REFUSED(SPEC_WITH(", 'behavior': []"), true, "spec.behavior: not an object (found an array)");
    REFUSED(SPEC_WITH(", 'guardrails': {'downstream': {}}"), true,
            "spec.guardrails.downstream: not an array (found an object)");
    REFUSED(SPEC_WITH(", 'dryRun': 'yes'"), true, "spec.dryRun: not a boolean (found a string)");
    REFUSED(SPEC_WITH(", 'syncPeriodSeconds': 0"), true,
            "spec.syncPeriodSeconds: must be at least 1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_example_lands_in_every_field),
        cmocka_unit_test(test_other_enum_values),
        cmocka_unit_test(test_defaults_of_a_minimal_spec),
        cmocka_unit_test(test_guardrail_and_fallback_defaults),
        cmocka_unit_test(test_downstream_budget_is_a_dns_label),
        cmocka_unit_test(test_one_direction_given_leaves_the_other_default),
        cmocka_unit_test(test_some_fields_of_a_direction_given),
        cmocka_unit_test(test_quantity_strings_are_accepted),
        cmocka_unit_test(test_quantity_reads_numbers_and_strings),
        cmocka_unit_test(test_quantity_failures),
        cmocka_unit_test(test_limits_at_their_edges_are_accepted),
        cmocka_unit_test(test_scale_target_ref_is_required_online_only),
        cmocka_unit_test(test_refuses_min_above_max),
        cmocka_unit_test(test_refuses_bad_metrics_lists),
        cmocka_unit_test(test_refuses_more_than_16_metrics),
        cmocka_unit_test(test_refuses_bad_metric_names_and_types),
        cmocka_unit_test(test_refuses_unknown_target_type),
        cmocka_unit_test(test_refuses_target_field_of_another_type),
        cmocka_unit_test(test_refuses_source_block_of_another_type),
        cmocka_unit_test(test_refuses_missing_queries_online),
        cmocka_unit_test(test_refuses_bad_saturation_entries),
        cmocka_unit_test(test_refuses_incomplete_downstreams),
        cmocka_unit_test(test_refuses_max_utilization_outside_zero_to_one),
        cmocka_unit_test(test_refuses_retry_threshold_of_one),
        cmocka_unit_test(test_refuses_bad_policies),
        cmocka_unit_test(test_refuses_window_above_an_hour),
        cmocka_unit_test(test_refuses_negative_tolerance),
        cmocka_unit_test(test_refuses_bad_fallback),
        cmocka_unit_test(test_refuses_wrong_kinds_of_blocks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
