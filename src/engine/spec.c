/* spec.c - defaults, cleanup and cross-field validation of ms_spec_t. */
#include <stdlib.h>
#include <string.h>

#include "meshscaler/spec.h"
#include "meshscaler/xalloc.h"

void ms_scaling_rules_default(ms_scaling_rules_t *rules, bool up)
{
    memset(rules, 0, sizeof *rules);
    rules->select = MS_SELECT_MAX;
    rules->tolerance = MS_DEFAULT_TOLERANCE;
    rules->policies[0] = (ms_policy_t){MS_POLICY_PERCENT, 100, 15};
    if (up) {
        rules->window_seconds = 0;
        rules->policies[1] = (ms_policy_t){MS_POLICY_PODS, 4, 15};
        rules->npolicies = 2;
    } else {
        rules->window_seconds = MS_DEFAULT_SCALE_DOWN_WINDOW;
        rules->npolicies = 1;
    }
}

void ms_spec_init(ms_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->metrics = ms_xcalloc(MS_MAX_METRICS, sizeof *spec->metrics);
    spec->saturation = ms_xcalloc(MS_MAX_METRICS, sizeof *spec->saturation);
    spec->downstreams = ms_xcalloc(MS_MAX_DOWNSTREAMS, sizeof *spec->downstreams);
    spec->metrics_cap = MS_MAX_METRICS;
    spec->downstreams_cap = MS_MAX_DOWNSTREAMS;
    spec->min_replicas = 1;
    spec->max_replicas = 1;
    ms_scaling_rules_default(&spec->scale_up, true);
    ms_scaling_rules_default(&spec->scale_down, false);
    spec->retry_storm.threshold = MS_DEFAULT_RETRY_THRESHOLD;
    spec->fallback.failure_threshold = MS_DEFAULT_FAILURE_THRESHOLD;
    /* An outage of the metrics pipeline hits every object at once: by
     * default the fallback may raise counts, never lower them
     * (docs/decision-rules.md#resource). */
    spec->fallback.mode = MS_FALLBACK_CURRENT_IF_HIGHER;
}

void ms_spec_cleanup(ms_spec_t *spec)
{
    if (spec == NULL)
        return;
    free(spec->target_api_version);
    free(spec->target_kind);
    free(spec->target_name);
    for (size_t i = 0; i < spec->metrics_cap; i++) {
        free(spec->metrics[i].container);
        free(spec->metrics[i].query);
        free(spec->saturation[i].rejected_query);
        free(spec->saturation[i].admitted_query);
    }
    for (size_t i = 0; i < spec->downstreams_cap; i++) {
        free(spec->downstreams[i].usage_query);
        free(spec->downstreams[i].limit_query);
    }
    free(spec->retry_storm.retry_share_query);
    free(spec->metrics);
    free(spec->saturation);
    free(spec->downstreams);
    memset(spec, 0, sizeof *spec);
}

/* Entries past the count hold nothing: a parser fills them in order. */
void ms_spec_shrink(ms_spec_t *spec)
{
    size_t m = spec->nmetrics > 0 ? spec->nmetrics : 1;
    size_t d = spec->ndownstreams > 0 ? spec->ndownstreams : 1;

    if (m < spec->metrics_cap) {
        spec->metrics = ms_xrealloc(spec->metrics, m * sizeof *spec->metrics);
        spec->saturation = ms_xrealloc(spec->saturation, m * sizeof *spec->saturation);
        spec->metrics_cap = m;
    }
    if (d < spec->downstreams_cap) {
        spec->downstreams = ms_xrealloc(spec->downstreams, d * sizeof *spec->downstreams);
        spec->downstreams_cap = d;
    }
}

int ms_spec_metric_index(const ms_spec_t *spec, const char *name)
{
    for (size_t i = 0; i < spec->nmetrics; i++)
        if (strcmp(spec->metrics[i].name, name) == 0)
            return (int)i;
    return -1;
}

int ms_spec_downstream_index(const ms_spec_t *spec, const char *name)
{
    for (size_t i = 0; i < spec->ndownstreams; i++)
        if (strcmp(spec->downstreams[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int32_t longest_rule_period(const ms_scaling_rules_t *rules)
{
    int32_t longest = 0;

    for (size_t i = 0; i < rules->npolicies; i++)
        if (rules->policies[i].period_seconds > longest)
            longest = rules->policies[i].period_seconds;
    return longest;
}

int32_t ms_spec_longest_period(const ms_spec_t *spec)
{
    int32_t up = longest_rule_period(&spec->scale_up);
    int32_t down = longest_rule_period(&spec->scale_down);

    return up > down ? up : down;
}

ms_err_t ms_spec_validate(const ms_spec_t *spec, bool offline, char *errbuf, size_t errlen)
{
    if (spec->min_replicas < 1)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "spec.minReplicas: must be at least 1");
    if (spec->max_replicas < spec->min_replicas)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "spec.maxReplicas: %d is less than minReplicas %d", (int)spec->max_replicas,
                       (int)spec->min_replicas);
    if (spec->nmetrics == 0)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "spec.metrics: at least one metric is required");
    if (!offline && (spec->target_kind == NULL || spec->target_name == NULL ||
                     spec->target_api_version == NULL))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "spec.scaleTargetRef: apiVersion, kind and name are required");

    for (size_t i = 0; i < spec->nmetrics; i++) {
        const ms_metric_spec_t *m = &spec->metrics[i];

        for (size_t j = 0; j < i; j++)
            if (strcmp(spec->metrics[j].name, m->name) == 0)
                return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                               "spec.metrics[%zu].name: duplicate metric name \"%s\"", i, m->name);
        if (offline)
            continue;
        if (m->source == MS_SOURCE_PROMETHEUS && m->query == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "spec.metrics[%zu].prometheus.query: required for type Prometheus", i);
        if (m->source == MS_SOURCE_SIDECAR_CPU && m->container == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "spec.metrics[%zu].sidecarCPU.container: required for type SidecarCPU",
                           i);
        if (m->source == MS_SOURCE_SIDECAR_CONCURRENCY && m->proxy == 0)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "spec.metrics[%zu].sidecarConcurrency.proxy: required for type "
                           "SidecarConcurrency",
                           i);
    }

    for (size_t i = 0; i < spec->ndownstreams; i++) {
        const ms_downstream_spec_t *d = &spec->downstreams[i];

        for (size_t j = 0; j < i; j++)
            if (strcmp(spec->downstreams[j].name, d->name) == 0)
                return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                               "spec.guardrails.downstream[%zu].name: duplicate name \"%s\"", i,
                               d->name);
        if (!d->has_limit && d->limit_query == NULL && !offline)
            return ms_errf(
                errbuf, errlen, MS_ERR_INVALID,
                "spec.guardrails.downstream[%zu]: one of limit or limitQuery is required", i);
        if (!offline && d->usage_query == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "spec.guardrails.downstream[%zu].usageQuery: required", i);
    }
    if (!offline && spec->retry_storm.enabled && spec->retry_storm.retry_share_query == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "spec.guardrails.retryStorm.retryShareQuery: required");
    for (size_t i = 0; i < spec->nmetrics && !offline; i++)
        if (spec->saturation[i].enabled && (spec->saturation[i].rejected_query == NULL ||
                                            spec->saturation[i].admitted_query == NULL))
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "spec.guardrails.saturation: metric \"%s\" needs rejectedQuery and "
                           "admittedQuery",
                           spec->metrics[i].name);
    return MS_OK;
}

const char *ms_source_type_name(ms_source_type_t t)
{
    switch (t) {
    case MS_SOURCE_SIDECAR_CONCURRENCY:
        return "SidecarConcurrency";
    case MS_SOURCE_SIDECAR_CPU:
        return "SidecarCPU";
    case MS_SOURCE_PROMETHEUS:
        return "Prometheus";
    }
    return "Unknown";
}

const char *ms_proxy_name(ms_proxy_t p)
{
    switch (p) {
    case MS_PROXY_ENVOY:
        return "envoy";
    case MS_PROXY_HAPROXY:
        return "haproxy";
    case MS_PROXY_LINKERD:
        return "linkerd";
    }
    return "unknown";
}

const char *ms_target_type_name(ms_target_type_t t)
{
    switch (t) {
    case MS_TARGET_UTILIZATION:
        return "Utilization";
    case MS_TARGET_VALUE:
        return "Value";
    case MS_TARGET_AVERAGE_VALUE:
        return "AverageValue";
    }
    return "Unknown";
}
