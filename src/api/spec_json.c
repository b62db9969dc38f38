/*
 * spec_json.c - JSON to ms_spec_t, field by field, with the ranges of
 * autoscaling/v2 where meshscaler mirrors it.
 *
 * Each reader follows one pattern: look the key up, return early when it is
 * absent and optional, push it on the path, read, pop. A failure returns at
 * once; the path still names the faulty field when the message is written.
 */
#include <string.h>

#include "meshscaler/quantity.h"
#include "meshscaler/spec_json.h"

#define QUERY_MAX 8192
#define REF_MAX 253

ms_err_t ms_json_quantity(const cJSON *item, const ms_jpath_t *p, double *out, char *errbuf,
                          size_t errlen)
{
    char reason[MS_ERRBUF_SIZE];
    double v;

    if (cJSON_IsNumber(item))
        return ms_json_number(item, p, out, errbuf, errlen);
    if (!cJSON_IsString(item))
        return ms_jpath_errf(p, errbuf, errlen, "not a number or quantity string (found %s)",
                             ms_json_kind(item));
    if (ms_quantity_parse(item->valuestring, &v, reason, sizeof reason) != MS_OK)
        return ms_jpath_errf(p, errbuf, errlen, "%s", reason);
    *out = v;
    return MS_OK;
}

/* Read obj.key with reader call `expr`, maintaining the path. Optional keys
 * that are absent or null are skipped. */
#define READ_KEY(obj, key, required, expr)                                                         \
    do {                                                                                           \
        const cJSON *item = ms_json_child((obj), (key));                                           \
        size_t saved_ = ms_jpath_push_key(p, (key));                                               \
        if (ms_json_is_absent(item)) {                                                             \
            if (required) {                                                                        \
                err = ms_jpath_errf(p, errbuf, errlen, "required");                                \
                goto out;                                                                          \
            }                                                                                      \
        } else if ((err = (expr)) != MS_OK) {                                                      \
            goto out;                                                                              \
        }                                                                                          \
        ms_jpath_pop(p, saved_);                                                                   \
    } while (0)

static bool valid_name(const char *s)
{
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
          (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return false;
    return true;
}

static ms_err_t read_name(const cJSON *item, ms_jpath_t *p, char *buf, char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_strcpy(item, p, buf, MS_NAME_MAX + 1, errbuf, errlen);

    if (err == MS_OK && !valid_name(buf))
        err = ms_jpath_errf(p, errbuf, errlen,
                            "\"%s\" is not a valid name (letters, digits, '-', '_' and '.', "
                            "starting with a letter or digit)",
                            buf);
    return err;
}

/* A DNS-1123 label (RFC 1123, as Kubernetes checks names): 1..63 of
 * [a-z0-9-], starting and ending with a letter or digit. */
static bool dns1123_label(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > MS_NAME_MAX || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
            return false;
    return true;
}

/* A downstream's budget (§2b): the same words the API server's schema
 * gives, so `decide` and `kubectl apply` refuse a name alike. */
static ms_err_t read_budget(const cJSON *item, ms_jpath_t *p, char *buf, char *errbuf,
                            size_t errlen)
{
    ms_err_t err;

    if (cJSON_IsString(item) && strlen(item->valuestring) > MS_NAME_MAX)
        return ms_jpath_errf(p, errbuf, errlen, "must be a DNS-1123 label (at most %d characters)",
                             MS_NAME_MAX);
    err = ms_json_strcpy(item, p, buf, MS_NAME_MAX + 1, errbuf, errlen);
    if (err == MS_OK && !dns1123_label(buf))
        err = ms_jpath_errf(p, errbuf, errlen,
                            "\"%s\" must be a DNS-1123 label (lower-case letters, digits and '-', "
                            "starting and ending with a letter or digit)",
                            buf);
    return err;
}

static ms_err_t positive(const cJSON *item, ms_jpath_t *p, double *out, char *errbuf, size_t errlen)
{
    double v = 0;
    ms_err_t err = ms_json_quantity(item, p, &v, errbuf, errlen);

    if (err == MS_OK && !(v > 0))
        err = ms_jpath_errf(p, errbuf, errlen, "must be greater than 0");
    if (err == MS_OK)
        *out = v;
    return err;
}

static ms_err_t fraction(const cJSON *item, ms_jpath_t *p, double lo, bool lo_open, double hi,
                         bool hi_open, double *out, char *errbuf, size_t errlen)
{
    double v = 0;
    ms_err_t err = ms_json_number(item, p, &v, errbuf, errlen);

    if (err == MS_OK && ((lo_open ? v <= lo : v < lo) || (hi_open ? v >= hi : v > hi)))
        err = ms_jpath_errf(p, errbuf, errlen, "must be in %c%g, %g%c", lo_open ? '(' : '[', lo, hi,
                            hi_open ? ')' : ']');
    if (err == MS_OK)
        *out = v;
    return err;
}

static ms_err_t read_target(const cJSON *t, ms_jpath_t *p, ms_metric_spec_t *m, char *errbuf,
                            size_t errlen)
{
    static const char *const types[] = {"Utilization", "Value", "AverageValue"};
    static const char *const fields[] = {"averageUtilization", "value", "averageValue"};
    ms_err_t err = ms_json_object(t, p, errbuf, errlen);
    int type = 0;
    int32_t utilization = 0;

    if (err != MS_OK)
        return err;
    READ_KEY(t, "type", true, ms_json_enum(item, p, types, 3, &type, errbuf, errlen));
    m->target_type = (ms_target_type_t)(type + 1);
    for (int i = 0; i < 3; i++) {
        if (i == type || ms_json_is_absent(ms_json_child(t, fields[i])))
            continue;
        ms_jpath_push_key(p, fields[i]);
        return ms_jpath_errf(p, errbuf, errlen, "not allowed with target type %s", types[type]);
    }
    if (m->target_type == MS_TARGET_UTILIZATION) {
        READ_KEY(t, "averageUtilization", true,
                 ms_json_int32(item, p, 1, INT32_MAX, &utilization, errbuf, errlen));
        m->target = utilization;
    } else if (m->target_type == MS_TARGET_VALUE) {
        READ_KEY(t, "value", true, positive(item, p, &m->target, errbuf, errlen));
    } else {
        READ_KEY(t, "averageValue", true, positive(item, p, &m->target, errbuf, errlen));
    }
out:
    return err;
}

static ms_err_t read_source(const cJSON *m_json, ms_jpath_t *p, ms_metric_spec_t *m, char *errbuf,
                            size_t errlen)
{
    static const char *const blocks[] = {"sidecarConcurrency", "sidecarCPU", "prometheus"};
    static const char *const proxies[] = {"envoy", "haproxy", "linkerd"};
    const cJSON *block = NULL;
    ms_err_t err = MS_OK;
    int proxy = 0;

    /* A block for another type is a mistake the user should hear about. */
    for (int i = 0; i < 3; i++) {
        if (i == (int)m->source - 1 || ms_json_is_absent(ms_json_child(m_json, blocks[i])))
            continue;
        ms_jpath_push_key(p, blocks[i]);
        return ms_jpath_errf(p, errbuf, errlen, "not allowed with type %s",
                             ms_source_type_name(m->source));
    }
    block = ms_json_child(m_json, blocks[m->source - 1]);
    if (ms_json_is_absent(block))
        return MS_OK; /* ms_spec_validate decides whether that is allowed */
    {
        size_t saved = ms_jpath_push_key(p, blocks[m->source - 1]);
        if ((err = ms_json_object(block, p, errbuf, errlen)) != MS_OK)
            goto out;
        switch (m->source) {
        case MS_SOURCE_SIDECAR_CONCURRENCY:
            READ_KEY(block, "proxy", true,
                     ms_json_enum(item, p, proxies, 3, &proxy, errbuf, errlen));
            m->proxy = (ms_proxy_t)(proxy + 1);
            READ_KEY(block, "limit", false, positive(item, p, &m->limit, errbuf, errlen));
            m->has_limit = !ms_json_is_absent(ms_json_child(block, "limit"));
            break;
        case MS_SOURCE_SIDECAR_CPU:
            READ_KEY(block, "container", true,
                     ms_json_strdup(item, p, REF_MAX, &m->container, errbuf, errlen));
            break;
        case MS_SOURCE_PROMETHEUS:
            READ_KEY(block, "query", true,
                     ms_json_strdup(item, p, QUERY_MAX, &m->query, errbuf, errlen));
            break;
        }
        ms_jpath_pop(p, saved);
    }
out:
    return err;
}

static ms_err_t read_metric(const cJSON *m_json, ms_jpath_t *p, ms_metric_spec_t *m, char *errbuf,
                            size_t errlen)
{
    static const char *const types[] = {"SidecarConcurrency", "SidecarCPU", "Prometheus"};
    ms_err_t err = ms_json_object(m_json, p, errbuf, errlen);
    int type = 0;

    if (err != MS_OK)
        return err;
    READ_KEY(m_json, "name", true, read_name(item, p, m->name, errbuf, errlen));
    READ_KEY(m_json, "type", true, ms_json_enum(item, p, types, 3, &type, errbuf, errlen));
    m->source = (ms_source_type_t)(type + 1);
    if ((err = read_source(m_json, p, m, errbuf, errlen)) != MS_OK)
        goto out;
    READ_KEY(m_json, "target", true, read_target(item, p, m, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_policy(const cJSON *j, ms_jpath_t *p, ms_policy_t *pol, char *errbuf,
                            size_t errlen)
{
    static const char *const types[] = {"Pods", "Percent"};
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);
    int type = 0;

    if (err != MS_OK)
        return err;
    READ_KEY(j, "type", true, ms_json_enum(item, p, types, 2, &type, errbuf, errlen));
    pol->type = (ms_policy_type_t)(type + 1);
    READ_KEY(j, "value", true, ms_json_int32(item, p, 1, INT32_MAX, &pol->value, errbuf, errlen));
    READ_KEY(j, "periodSeconds", true,
             ms_json_int32(item, p, 1, MS_MAX_POLICY_PERIOD_SECONDS, &pol->period_seconds, errbuf,
                           errlen));
out:
    return err;
}

static ms_err_t read_policies(const cJSON *arr, ms_jpath_t *p, ms_scaling_rules_t *r, char *errbuf,
                              size_t errlen)
{
    ms_err_t err = ms_json_array(arr, p, errbuf, errlen);
    size_t n = 0;
    const cJSON *it;

    if (err != MS_OK)
        return err;
    if (cJSON_GetArraySize(arr) < 1)
        return ms_jpath_errf(p, errbuf, errlen, "at least one policy is required");
    if (cJSON_GetArraySize(arr) > MS_MAX_POLICIES)
        return ms_jpath_errf(p, errbuf, errlen, "at most %d policies are allowed", MS_MAX_POLICIES);
    cJSON_ArrayForEach(it, arr)
    {
        size_t saved = ms_jpath_push_index(p, n);
        if ((err = read_policy(it, p, &r->policies[n], errbuf, errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
        n++;
    }
    r->npolicies = n;
    return MS_OK;
}

static ms_err_t read_rules(const cJSON *j, ms_jpath_t *p, ms_scaling_rules_t *r, char *errbuf,
                           size_t errlen)
{
    static const char *const selects[] = {"Max", "Min", "Disabled"};
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);
    int select = 0;

    if (err != MS_OK)
        return err;
    READ_KEY(j, "stabilizationWindowSeconds", false,
             ms_json_int32(item, p, 0, MS_MAX_WINDOW_SECONDS, &r->window_seconds, errbuf, errlen));
    READ_KEY(j, "selectPolicy", false, ms_json_enum(item, p, selects, 3, &select, errbuf, errlen));
    r->select = (ms_select_t)select;
    READ_KEY(j, "policies", false, read_policies(item, p, r, errbuf, errlen));
    READ_KEY(j, "tolerance", false, ms_json_quantity(item, p, &r->tolerance, errbuf, errlen));
    if (r->tolerance < 0) {
        ms_jpath_push_key(p, "tolerance");
        err = ms_jpath_errf(p, errbuf, errlen, "must not be negative");
    }
out:
    return err;
}

ms_err_t ms_behavior_from_json(const cJSON *j, ms_jpath_t *p, ms_scaling_rules_t *up,
                               ms_scaling_rules_t *down, char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    READ_KEY(j, "scaleUp", false, read_rules(item, p, up, errbuf, errlen));
    READ_KEY(j, "scaleDown", false, read_rules(item, p, down, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_behavior(const cJSON *j, ms_jpath_t *p, ms_spec_t *s, char *errbuf,
                              size_t errlen)
{
    return ms_behavior_from_json(j, p, &s->scale_up, &s->scale_down, errbuf, errlen);
}

static ms_err_t read_downstream(const cJSON *j, ms_jpath_t *p, ms_downstream_spec_t *d,
                                char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    d->max_utilization = MS_DEFAULT_MAX_UTILIZATION;
    READ_KEY(j, "name", true, read_name(item, p, d->name, errbuf, errlen));
    READ_KEY(j, "usageQuery", false,
             ms_json_strdup(item, p, QUERY_MAX, &d->usage_query, errbuf, errlen));
    READ_KEY(j, "limitQuery", false,
             ms_json_strdup(item, p, QUERY_MAX, &d->limit_query, errbuf, errlen));
    READ_KEY(j, "limit", false, positive(item, p, &d->limit, errbuf, errlen));
    d->has_limit = !ms_json_is_absent(ms_json_child(j, "limit"));
    READ_KEY(j, "perReplica", true, positive(item, p, &d->per_replica, errbuf, errlen));
    READ_KEY(j, "maxUtilization", false,
             fraction(item, p, 0, true, 1, false, &d->max_utilization, errbuf, errlen));
    READ_KEY(j, "budget", false, read_budget(item, p, d->budget, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_saturation(const cJSON *j, ms_jpath_t *p, ms_spec_t *s, char *errbuf,
                                size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);
    char metric[MS_NAME_MAX + 1] = "";
    int index;
    ms_saturation_spec_t *sat;

    if (err != MS_OK)
        return err;
    READ_KEY(j, "metric", true, ms_json_strcpy(item, p, metric, sizeof metric, errbuf, errlen));
    index = ms_spec_metric_index(s, metric);
    if (index < 0) {
        ms_jpath_push_key(p, "metric");
        return ms_jpath_errf(p, errbuf, errlen, "\"%s\" is not a metric of spec.metrics", metric);
    }
    sat = &s->saturation[index];
    if (sat->enabled) {
        ms_jpath_push_key(p, "metric");
        return ms_jpath_errf(p, errbuf, errlen, "metric \"%s\" already has a saturation entry",
                             metric);
    }
    sat->enabled = true;
    READ_KEY(j, "rejectedQuery", false,
             ms_json_strdup(item, p, QUERY_MAX, &sat->rejected_query, errbuf, errlen));
    READ_KEY(j, "admittedQuery", false,
             ms_json_strdup(item, p, QUERY_MAX, &sat->admitted_query, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_retry_storm(const cJSON *j, ms_jpath_t *p, ms_retry_storm_spec_t *r,
                                 char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    r->enabled = true;
    READ_KEY(j, "retryShareQuery", false,
             ms_json_strdup(item, p, QUERY_MAX, &r->retry_share_query, errbuf, errlen));
    READ_KEY(j, "threshold", false,
             fraction(item, p, 0, false, 1, true, &r->threshold, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_guardrails(const cJSON *j, ms_jpath_t *p, ms_spec_t *s, char *errbuf,
                                size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);
    const cJSON *arr, *it;
    size_t n, saved;

    if (err != MS_OK)
        return err;
    arr = ms_json_child(j, "downstream");
    if (!ms_json_is_absent(arr)) {
        saved = ms_jpath_push_key(p, "downstream");
        if ((err = ms_json_array(arr, p, errbuf, errlen)) != MS_OK)
            goto out;
        if (cJSON_GetArraySize(arr) > MS_MAX_DOWNSTREAMS) {
            err = ms_jpath_errf(p, errbuf, errlen, "at most %d downstream guardrails are allowed",
                                MS_MAX_DOWNSTREAMS);
            goto out;
        }
        n = 0;
        cJSON_ArrayForEach(it, arr)
        {
            size_t at = ms_jpath_push_index(p, n);
            if ((err = read_downstream(it, p, &s->downstreams[n], errbuf, errlen)) != MS_OK)
                goto out;
            s->ndownstreams = ++n;
            ms_jpath_pop(p, at);
        }
        ms_jpath_pop(p, saved);
    }
    READ_KEY(j, "retryStorm", false, read_retry_storm(item, p, &s->retry_storm, errbuf, errlen));
    arr = ms_json_child(j, "saturation");
    if (!ms_json_is_absent(arr)) {
        saved = ms_jpath_push_key(p, "saturation");
        if ((err = ms_json_array(arr, p, errbuf, errlen)) != MS_OK)
            goto out;
        n = 0;
        cJSON_ArrayForEach(it, arr)
        {
            size_t at = ms_jpath_push_index(p, n++);
            if ((err = read_saturation(it, p, s, errbuf, errlen)) != MS_OK)
                goto out;
            ms_jpath_pop(p, at);
        }
        ms_jpath_pop(p, saved);
    }
out:
    return err;
}

static ms_err_t read_fallback(const cJSON *j, ms_jpath_t *p, ms_fallback_spec_t *f, char *errbuf,
                              size_t errlen)
{
    static const char *const modes[] = {"Static", "CurrentIfHigher"};
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);
    int mode = (int)f->mode; /* the default from ms_spec_init(): CurrentIfHigher */

    if (err != MS_OK)
        return err;
    f->enabled = true;
    READ_KEY(j, "failureThreshold", false,
             ms_json_int32(item, p, 1, INT32_MAX, &f->failure_threshold, errbuf, errlen));
    READ_KEY(j, "replicas", true,
             ms_json_int32(item, p, 0, INT32_MAX, &f->replicas, errbuf, errlen));
    READ_KEY(j, "mode", false, ms_json_enum(item, p, modes, 2, &mode, errbuf, errlen));
    f->mode = (ms_fallback_mode_t)mode;
out:
    return err;
}

static ms_err_t read_target_ref(const cJSON *j, ms_jpath_t *p, ms_spec_t *s, char *errbuf,
                                size_t errlen)
{
    ms_err_t err = ms_json_object(j, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    READ_KEY(j, "apiVersion", true,
             ms_json_strdup(item, p, REF_MAX, &s->target_api_version, errbuf, errlen));
    READ_KEY(j, "kind", true, ms_json_strdup(item, p, REF_MAX, &s->target_kind, errbuf, errlen));
    READ_KEY(j, "name", true, ms_json_strdup(item, p, REF_MAX, &s->target_name, errbuf, errlen));
out:
    return err;
}

static ms_err_t read_metrics(const cJSON *arr, ms_jpath_t *p, ms_spec_t *s, char *errbuf,
                             size_t errlen)
{
    ms_err_t err = ms_json_array(arr, p, errbuf, errlen);
    const cJSON *it;
    size_t n = 0;

    if (err != MS_OK)
        return err;
    if (cJSON_GetArraySize(arr) < 1)
        return ms_jpath_errf(p, errbuf, errlen, "at least one metric is required");
    if (cJSON_GetArraySize(arr) > MS_MAX_METRICS)
        return ms_jpath_errf(p, errbuf, errlen, "at most %d metrics are allowed", MS_MAX_METRICS);
    cJSON_ArrayForEach(it, arr)
    {
        size_t saved = ms_jpath_push_index(p, n);
        if ((err = read_metric(it, p, &s->metrics[n], errbuf, errlen)) != MS_OK)
            return err;
        for (size_t j = 0; j < n; j++)
            if (strcmp(s->metrics[j].name, s->metrics[n].name) == 0) {
                ms_jpath_push_key(p, "name");
                return ms_jpath_errf(p, errbuf, errlen, "duplicate metric name \"%s\"",
                                     s->metrics[n].name);
            }
        s->nmetrics = ++n;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

ms_err_t ms_spec_from_json(const cJSON *json, ms_jpath_t *p, bool offline, ms_spec_t *s,
                           char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_object(json, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    READ_KEY(json, "scaleTargetRef", !offline, read_target_ref(item, p, s, errbuf, errlen));
    READ_KEY(json, "minReplicas", false,
             ms_json_int32(item, p, 1, INT32_MAX, &s->min_replicas, errbuf, errlen));
    READ_KEY(json, "maxReplicas", true,
             ms_json_int32(item, p, 1, INT32_MAX, &s->max_replicas, errbuf, errlen));
    if (s->max_replicas < s->min_replicas) {
        ms_jpath_push_key(p, "maxReplicas");
        return ms_jpath_errf(p, errbuf, errlen, "%d is less than minReplicas %d",
                             (int)s->max_replicas, (int)s->min_replicas);
    }
    READ_KEY(json, "dryRun", false, ms_json_bool(item, p, &s->dry_run, errbuf, errlen));
    READ_KEY(json, "syncPeriodSeconds", false,
             ms_json_int32(item, p, 1, MS_MAX_SYNC_PERIOD_SECONDS, &s->sync_period_seconds, errbuf,
                           errlen));
    READ_KEY(json, "metrics", true, read_metrics(item, p, s, errbuf, errlen));
    READ_KEY(json, "behavior", false, read_behavior(item, p, s, errbuf, errlen));
    READ_KEY(json, "guardrails", false, read_guardrails(item, p, s, errbuf, errlen));
    READ_KEY(json, "fallback", false, read_fallback(item, p, &s->fallback, errbuf, errlen));
    err = ms_spec_validate(s, offline, errbuf, errlen);
out:
    return err;
}
