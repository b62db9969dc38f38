/*
 * convert.c - HorizontalPodAutoscaler to MeshAutoscaler (convert.h says what
 * becomes what).
 *
 * Two steps: read the HPA, whatever its version, into one shape (hpa_t, the
 * v2 vocabulary; every string borrowed from the input tree), then write the
 * MeshAutoscaler from that shape with a comment on every choice.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/convert.h"
#include "meshscaler/spec.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/yaml.h"

#define HPA_MAX_METRICS 32

typedef enum { V1, V2BETA1, V2BETA2, V2 } hpa_version_t;

static const char *const versions[] = {"autoscaling/v1", "autoscaling/v2beta1",
                                       "autoscaling/v2beta2", "autoscaling/v2"};
static const char *const metric_types[] = {"Resource", "ContainerResource", "Pods", "Object",
                                           "External"};
enum { M_RESOURCE, M_CONTAINER_RESOURCE, M_PODS, M_OBJECT, M_EXTERNAL };
static const char *const target_types[] = {"Utilization", "AverageValue", "Value"};
enum { T_UTILIZATION, T_AVERAGE_VALUE, T_VALUE };

/* One metric in the v2 vocabulary. Strings and nodes borrowed from the HPA. */
typedef struct {
    int type;              /* M_* */
    const char *name;      /* resource name (cpu, memory) or metric name */
    const char *container; /* ContainerResource only */
    int target_type;       /* T_* */
    const cJSON *target;   /* the number (Utilization) or quantity */
    const cJSON *selector; /* NULL when none */
} hpa_metric_t;

typedef struct {
    hpa_version_t version;
    const char *name, *ns;
    const char *ref_api_version, *ref_kind, *ref_name;
    int32_t min_replicas, max_replicas;
    bool min_given, metrics_defaulted;
    hpa_metric_t metrics[HPA_MAX_METRICS];
    size_t nmetrics;
    const cJSON *behavior;       /* v2beta2, v2; NULL when none */
    ms_scaling_rules_t up, down; /* behavior read (and checked) by the spec reader */
} hpa_t;

/* ---- reading ------------------------------------------------------------ */

/* An object name: a DNS subdomain (lower-case letters, digits, '-', '.';
 * at most 253), which is also what keeps names safe inside comments. */
static bool is_object_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
            return false;
    return true;
}

/* A container name: a DNS label ([a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63). */
bool ms_convert_is_dns_label(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

/* The string at obj.key (path p.key), required or optional (NULL). */
static ms_err_t read_str(const cJSON *obj, const char *key, bool required, ms_jpath_t *p,
                         const char **out, char *errbuf, size_t errlen)
{
    const cJSON *v = ms_json_child(obj, key);
    size_t mark = ms_jpath_push_key(p, key);
    ms_err_t err = MS_OK;

    if (ms_json_is_absent(v)) {
        *out = NULL;
        if (required)
            err = ms_jpath_errf(p, errbuf, errlen, "required");
    } else if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
        err = ms_jpath_errf(p, errbuf, errlen, "not a non-empty string");
    } else {
        *out = v->valuestring;
    }
    ms_jpath_pop(p, mark);
    return err;
}

static ms_err_t read_int(const cJSON *obj, const char *key, int32_t min, int32_t max, ms_jpath_t *p,
                         int32_t *out, bool *given, char *errbuf, size_t errlen)
{
    const cJSON *v = ms_json_child(obj, key);
    size_t mark = ms_jpath_push_key(p, key);
    ms_err_t err = MS_OK;

    *given = !ms_json_is_absent(v);
    if (*given)
        err = ms_json_int32(v, p, min, max, out, errbuf, errlen);
    ms_jpath_pop(p, mark);
    return err;
}

/* A target value: a whole percentage for Utilization, else a positive
 * quantity (a number or a string such as "500m"). */
static ms_err_t check_target_value(const cJSON *v, int target_type, ms_jpath_t *p, char *errbuf,
                                   size_t errlen)
{
    int32_t pct;
    double q;
    ms_err_t err;

    if (target_type == T_UTILIZATION)
        return ms_json_int32(v, p, 1, INT32_MAX, &pct, errbuf, errlen);
    err = ms_json_quantity(v, p, &q, errbuf, errlen);
    if (err == MS_OK && !(q > 0))
        err = ms_jpath_errf(p, errbuf, errlen, "must be greater than 0");
    return err;
}

/* v2beta2 and v2: target {type, averageUtilization | averageValue | value}. */
static ms_err_t read_target_v2(const cJSON *src, ms_jpath_t *p, hpa_metric_t *m, char *errbuf,
                               size_t errlen)
{
    static const char *const fields[] = {"averageUtilization", "averageValue", "value"};
    const cJSON *t = ms_json_child(src, "target");
    size_t mark = ms_jpath_push_key(p, "target");
    size_t inner;
    ms_err_t err = ms_json_object(t, p, errbuf, errlen);

    if (err != MS_OK)
        goto out;
    inner = ms_jpath_push_key(p, "type");
    err =
        ms_json_enum(ms_json_child(t, "type"), p, target_types, 3, &m->target_type, errbuf, errlen);
    ms_jpath_pop(p, inner);
    if (err != MS_OK)
        goto out;
    inner = ms_jpath_push_key(p, fields[m->target_type]);
    m->target = ms_json_child(t, fields[m->target_type]);
    if (ms_json_is_absent(m->target))
        err = ms_jpath_errf(p, errbuf, errlen, "required by type %s", target_types[m->target_type]);
    else
        err = check_target_value(m->target, m->target_type, p, errbuf, errlen);
    ms_jpath_pop(p, inner);
out:
    ms_jpath_pop(p, mark);
    return err;
}

/* v2beta1: the first of the fields present gives the target and its type. */
typedef struct {
    const char *field;
    int target_type;
} v1_target_t;

static ms_err_t read_target_v2beta1(const cJSON *src, const v1_target_t *choices, size_t n,
                                    ms_jpath_t *p, hpa_metric_t *m, char *errbuf, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const cJSON *v = ms_json_child(src, choices[i].field);
        size_t mark;
        ms_err_t err;

        if (ms_json_is_absent(v))
            continue;
        m->target = v;
        m->target_type = choices[i].target_type;
        mark = ms_jpath_push_key(p, choices[i].field);
        err = check_target_value(v, m->target_type, p, errbuf, errlen);
        ms_jpath_pop(p, mark);
        return err;
    }
    return ms_jpath_errf(p, errbuf, errlen, "needs one of %s%s%s", choices[0].field,
                         n > 1 ? " or " : "", n > 1 ? choices[1].field : "");
}

/* The source block of metric m (resource, pods, ...) in version v. */
static ms_err_t read_source(const cJSON *src, hpa_version_t v, ms_jpath_t *p, hpa_metric_t *m,
                            char *errbuf, size_t errlen)
{
    static const v1_target_t resource_t[] = {{"targetAverageUtilization", T_UTILIZATION},
                                             {"targetAverageValue", T_AVERAGE_VALUE}};
    static const v1_target_t pods_t[] = {{"targetAverageValue", T_AVERAGE_VALUE}};
    static const v1_target_t object_t[] = {{"targetValue", T_VALUE},
                                           {"averageValue", T_AVERAGE_VALUE}};
    static const v1_target_t external_t[] = {{"targetValue", T_VALUE},
                                             {"targetAverageValue", T_AVERAGE_VALUE}};
    bool resource = m->type == M_RESOURCE || m->type == M_CONTAINER_RESOURCE;
    ms_err_t err;

    if (m->type == M_CONTAINER_RESOURCE) {
        err = read_str(src, "container", true, p, &m->container, errbuf, errlen);
        if (err == MS_OK && !ms_convert_is_dns_label(m->container)) {
            size_t mark = ms_jpath_push_key(p, "container");
            err =
                ms_jpath_errf(p, errbuf, errlen, "\"%.64s\" is not a container name", m->container);
            ms_jpath_pop(p, mark);
        }
        if (err != MS_OK)
            return err;
    }
    if (v != V2BETA1) {
        /* v2: resources name themselves; other metrics have a metric block. */
        const cJSON *id = resource ? src : ms_json_child(src, "metric");
        size_t mark = resource ? p->len : ms_jpath_push_key(p, "metric");

        err = resource ? MS_OK : ms_json_object(id, p, errbuf, errlen);
        if (err == MS_OK)
            err = read_str(id, "name", true, p, &m->name, errbuf, errlen);
        m->selector = resource ? NULL : ms_json_child(id, "selector");
        ms_jpath_pop(p, mark);
        return err != MS_OK ? err : read_target_v2(src, p, m, errbuf, errlen);
    }
    err = read_str(src, resource ? "name" : "metricName", true, p, &m->name, errbuf, errlen);
    if (err != MS_OK)
        return err;
    m->selector = ms_json_child(src, m->type == M_EXTERNAL ? "metricSelector" : "selector");
    switch (m->type) {
    case M_PODS:
        return read_target_v2beta1(src, pods_t, 1, p, m, errbuf, errlen);
    case M_OBJECT:
        return read_target_v2beta1(src, object_t, 2, p, m, errbuf, errlen);
    case M_EXTERNAL:
        return read_target_v2beta1(src, external_t, 2, p, m, errbuf, errlen);
    default:
        return read_target_v2beta1(src, resource_t, 2, p, m, errbuf, errlen);
    }
}

static ms_err_t read_metric(const cJSON *item, hpa_version_t v, ms_jpath_t *p, hpa_metric_t *m,
                            char *errbuf, size_t errlen)
{
    /* The source block's key: the type with a lower-case first letter. */
    static const char *const blocks[] = {"resource", "containerResource", "pods", "object",
                                         "external"};
    size_t mark;
    ms_err_t err = ms_json_object(item, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    mark = ms_jpath_push_key(p, "type");
    err = ms_json_enum(ms_json_child(item, "type"), p, metric_types, 5, &m->type, errbuf, errlen);
    ms_jpath_pop(p, mark);
    if (err != MS_OK)
        return err;
    mark = ms_jpath_push_key(p, blocks[m->type]);
    err = ms_json_object(ms_json_child(item, blocks[m->type]), p, errbuf, errlen);
    if (err == MS_OK)
        err = read_source(ms_json_child(item, blocks[m->type]), v, p, m, errbuf, errlen);
    ms_jpath_pop(p, mark);
    return err;
}

/* spec.metrics, or the one cpu metric of v1 and of a v2 without metrics. */
static ms_err_t read_metrics(const cJSON *spec, hpa_t *h, ms_jpath_t *p, char *errbuf,
                             size_t errlen)
{
    /* The HPA's default target, as if written; read only. */
    static cJSON default_cpu = {.type = cJSON_Number,
                                .valueint = MS_CONVERT_HPA_DEFAULT_CPU,
                                .valuedouble = MS_CONVERT_HPA_DEFAULT_CPU};
    const cJSON *list = ms_json_child(spec, "metrics");
    size_t mark;
    ms_err_t err = MS_OK;

    if (h->version == V1) {
        int32_t pct;
        bool given;

        err = read_int(spec, "targetCPUUtilizationPercentage", 1, INT32_MAX, p, &pct, &given,
                       errbuf, errlen);
        if (err != MS_OK)
            return err;
        h->metrics[0] = (hpa_metric_t){M_RESOURCE,
                                       "cpu",
                                       NULL,
                                       T_UTILIZATION,
                                       given ? ms_json_child(spec, "targetCPUUtilizationPercentage")
                                             : &default_cpu,
                                       NULL};
        h->nmetrics = 1;
        h->metrics_defaulted = !given;
        return MS_OK;
    }
    if (ms_json_is_absent(list) || cJSON_GetArraySize(list) == 0) {
        h->metrics[0] = (hpa_metric_t){M_RESOURCE, "cpu", NULL, T_UTILIZATION, &default_cpu, NULL};
        h->nmetrics = 1;
        h->metrics_defaulted = true;
        return MS_OK;
    }
    mark = ms_jpath_push_key(p, "metrics");
    err = ms_json_array(list, p, errbuf, errlen);
    if (err == MS_OK && cJSON_GetArraySize(list) > HPA_MAX_METRICS)
        err = ms_jpath_errf(p, errbuf, errlen, "more than %d metrics", HPA_MAX_METRICS);
    for (const cJSON *it = list->child; err == MS_OK && it != NULL; it = it->next) {
        size_t inner = ms_jpath_push_index(p, h->nmetrics);
        err = read_metric(it, h->version, p, &h->metrics[h->nmetrics++], errbuf, errlen);
        ms_jpath_pop(p, inner);
    }
    ms_jpath_pop(p, mark);
    return err;
}

/* "group/version" or "version": lower-case letters, digits, '.', '-', one
 * '/' at most, at most 253 bytes. */
static bool is_api_version(const char *s)
{
    size_t n = strlen(s), slashes = 0;

    if (n == 0 || n > 253 || s[0] == '/' || s[n - 1] == '/')
        return false;
    for (; *s; s++) {
        if (*s == '/')
            slashes++;
        else if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
            return false;
    }
    return slashes <= 1;
}

/* A kind: a letter, then letters and digits, at most 63 bytes. */
static bool is_kind(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static ms_err_t ref_error(ms_jpath_t *p, const char *key, const char *value, const char *what,
                          char *errbuf, size_t errlen)
{
    size_t mark = ms_jpath_push_key(p, key);
    ms_err_t err = ms_jpath_errf(p, errbuf, errlen, "\"%.64s\" is not %s", value, what);

    ms_jpath_pop(p, mark);
    return err;
}

/* The target, held to what a MeshAutoscaler's scaleTargetRef takes. */
static ms_err_t read_ref(const cJSON *spec, hpa_t *h, ms_jpath_t *p, char *errbuf, size_t errlen)
{
    const cJSON *ref = ms_json_child(spec, "scaleTargetRef");
    size_t mark = ms_jpath_push_key(p, "scaleTargetRef");
    ms_err_t err = ms_json_object(ref, p, errbuf, errlen);

    if (err == MS_OK)
        err = read_str(ref, "apiVersion", false, p, &h->ref_api_version, errbuf, errlen);
    if (err == MS_OK && h->ref_api_version != NULL && !is_api_version(h->ref_api_version))
        err = ref_error(p, "apiVersion", h->ref_api_version, "an API version", errbuf, errlen);
    if (err == MS_OK)
        err = read_str(ref, "kind", true, p, &h->ref_kind, errbuf, errlen);
    if (err == MS_OK && !is_kind(h->ref_kind))
        err = ref_error(p, "kind", h->ref_kind, "a kind", errbuf, errlen);
    if (err == MS_OK)
        err = read_str(ref, "name", true, p, &h->ref_name, errbuf, errlen);
    if (err == MS_OK && !is_object_name(h->ref_name))
        err = ref_error(p, "name", h->ref_name, "a Kubernetes name", errbuf, errlen);
    ms_jpath_pop(p, mark);
    return err;
}

static ms_err_t read_spec(const cJSON *spec, hpa_t *h, ms_jpath_t *p, char *errbuf, size_t errlen)
{
    bool max_given;
    ms_err_t err = ms_json_object(spec, p, errbuf, errlen);

    if (err == MS_OK)
        err = read_ref(spec, h, p, errbuf, errlen);
    /* minReplicas 0 is HPAScaleToZero, which meshscaler does not do. */
    if (err == MS_OK)
        err = read_int(spec, "minReplicas", 1, INT32_MAX, p, &h->min_replicas, &h->min_given,
                       errbuf, errlen);
    if (err == MS_OK)
        err = read_int(spec, "maxReplicas", 1, INT32_MAX, p, &h->max_replicas, &max_given, errbuf,
                       errlen);
    if (err == MS_OK && !max_given) {
        size_t mark = ms_jpath_push_key(p, "maxReplicas");
        err = ms_jpath_errf(p, errbuf, errlen, "required");
        ms_jpath_pop(p, mark);
    }
    if (!h->min_given)
        h->min_replicas = 1;
    if (err == MS_OK && h->min_replicas > h->max_replicas)
        err = ms_jpath_errf(p, errbuf, errlen, "minReplicas %d is above maxReplicas %d",
                            (int)h->min_replicas, (int)h->max_replicas);
    if (err == MS_OK)
        err = read_metrics(spec, h, p, errbuf, errlen);
    /* The HPA's behavior is the MeshAutoscaler's (which adds only tolerance,
     * as recent HPAs do): the spec reader checks it by the same rules. */
    if (err == MS_OK && h->version >= V2BETA2 &&
        !ms_json_is_absent(ms_json_child(spec, "behavior"))) {
        size_t mark = ms_jpath_push_key(p, "behavior");
        h->behavior = ms_json_child(spec, "behavior");
        ms_scaling_rules_default(&h->up, true);
        ms_scaling_rules_default(&h->down, false);
        err = ms_behavior_from_json(h->behavior, p, &h->up, &h->down, errbuf, errlen);
        ms_jpath_pop(p, mark);
    }
    return err;
}

static ms_err_t name_error(ms_jpath_t *p, const char *key, const char *value, char *errbuf,
                           size_t errlen)
{
    size_t mark = ms_jpath_push_key(p, key);
    ms_err_t err = ms_jpath_errf(p, errbuf, errlen, "\"%.64s\" is not a Kubernetes name", value);

    ms_jpath_pop(p, mark);
    return err;
}

static ms_err_t read_hpa(const cJSON *doc, hpa_t *h, ms_jpath_t *p, char *errbuf, size_t errlen)
{
    const char *kind = NULL;
    const cJSON *meta = ms_json_child(doc, "metadata");
    size_t mark;
    int v;
    ms_err_t err = ms_json_object(doc, p, errbuf, errlen);

    if (err == MS_OK)
        err = read_str(doc, "kind", true, p, &kind, errbuf, errlen);
    if (err == MS_OK && strcmp(kind, "HorizontalPodAutoscaler") != 0) {
        mark = ms_jpath_push_key(p, "kind");
        err = ms_jpath_errf(p, errbuf, errlen, "\"%s\" is not HorizontalPodAutoscaler", kind);
        ms_jpath_pop(p, mark);
    }
    if (err != MS_OK)
        return err;
    mark = ms_jpath_push_key(p, "apiVersion");
    err = ms_json_enum(ms_json_child(doc, "apiVersion"), p, versions, 4, &v, errbuf, errlen);
    ms_jpath_pop(p, mark);
    if (err != MS_OK)
        return err;
    h->version = (hpa_version_t)v;
    mark = ms_jpath_push_key(p, "metadata");
    err = ms_json_object(meta, p, errbuf, errlen);
    if (err == MS_OK)
        err = read_str(meta, "name", true, p, &h->name, errbuf, errlen);
    if (err == MS_OK && !is_object_name(h->name))
        err = name_error(p, "name", h->name, errbuf, errlen);
    if (err == MS_OK)
        err = read_str(meta, "namespace", false, p, &h->ns, errbuf, errlen);
    if (err == MS_OK && h->ns != NULL && !ms_convert_is_dns_label(h->ns))
        err = name_error(p, "namespace", h->ns, errbuf, errlen);
    ms_jpath_pop(p, mark);
    if (err != MS_OK)
        return err;
    mark = ms_jpath_push_key(p, "spec");
    err = read_spec(ms_json_child(doc, "spec"), h, p, errbuf, errlen);
    ms_jpath_pop(p, mark);
    return err;
}

/* ---- the proxy ---------------------------------------------------------- */

static const char *const proxy_names[] = {"auto", "envoy", "haproxy", "linkerd"};
static const char *const proxy_containers[] = {NULL, "istio-proxy", "haproxy", "linkerd-proxy"};

/* Which proxy a pod template runs: the first container whose name is a
 * known sidecar's (istio-proxy, linkerd-proxy) or contains "haproxy" or
 * "envoy". */
static ms_convert_proxy_t proxy_of(const char *const *containers, size_t n, const char **which)
{
    for (size_t i = 0; i < n; i++) {
        const char *c = containers[i];
        ms_convert_proxy_t found = MS_CONVERT_PROXY_AUTO;

        if (strcmp(c, "istio-proxy") == 0 || strstr(c, "envoy") != NULL)
            found = MS_CONVERT_PROXY_ENVOY;
        else if (strcmp(c, "linkerd-proxy") == 0)
            found = MS_CONVERT_PROXY_LINKERD;
        else if (strstr(c, "haproxy") != NULL)
            found = MS_CONVERT_PROXY_HAPROXY;
        if (found != MS_CONVERT_PROXY_AUTO) {
            *which = c;
            return found;
        }
    }
    return MS_CONVERT_PROXY_AUTO;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct {
    ms_buf_t *out;
    ms_buf_t *report;
    ms_err_t err;                   /* the first append that failed; later appends do nothing */
    char names[MS_MAX_METRICS][64]; /* the metric names written, unique */
    size_t nnames;
} writer_t;

static void w_put(writer_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void w_put(writer_t *w, const char *fmt, ...)
{
    va_list ap;

    if (w->err != MS_OK)
        return;
    va_start(ap, fmt);
    w->err = ms_buf_vappendf(w->out, fmt, ap);
    va_end(ap);
}

/* s as a YAML double-quoted scalar (JSON's escapes are YAML's). */
static void w_quoted(writer_t *w, const char *s)
{
    cJSON *str = cJSON_CreateStringReference(s);
    char *text = str != NULL ? cJSON_PrintUnformatted(str) : NULL;

    cJSON_Delete(str);
    if (text == NULL) {
        if (w->err == MS_OK)
            w->err = MS_ERR_NOMEM;
        return;
    }
    if (w->err == MS_OK)
        w->err = ms_buf_append(w->out, text, strlen(text));
    free(text);
}

/* key: "value" on its own line at the given indent. */
static void w_str(writer_t *w, int indent, const char *key, const char *value)
{
    w_put(w, "%*s%s: ", indent, "", key);
    w_quoted(w, value);
    w_put(w, "\n");
}

static void w_report(writer_t *w, const hpa_t *h, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void w_report(writer_t *w, const hpa_t *h, const char *fmt, ...)
{
    va_list ap;

    if (w->err == MS_OK)
        w->err =
            ms_buf_appendf(w->report, "%s%s%s: ", h->ns ? h->ns : "", h->ns ? "/" : "", h->name);
    if (w->err != MS_OK)
        return;
    va_start(ap, fmt);
    w->err = ms_buf_vappendf(w->report, fmt, ap);
    va_end(ap);
    if (w->err == MS_OK)
        w->err = ms_buf_append(w->report, "\n", 1);
}

/* The target value as written in the HPA: a number or a quantity text. */
static void target_text(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v))
        snprintf(buf, cap, "%s", v->valuestring);
    else
        snprintf(buf, cap, "%.15g", v->valuedouble);
}

static void w_target(writer_t *w, int target_type, const cJSON *value)
{
    static const char *const fields[] = {"averageUtilization", "averageValue", "value"};
    char text[64];

    target_text(value, text, sizeof text);
    w_put(w, "    target:\n      type: %s\n", target_types[target_type]);
    if (target_type == T_UTILIZATION)
        w_put(w, "      %s: %s\n", fields[target_type], text);
    else
        w_str(w, 6, fields[target_type], text);
}

/* Text for a comment or a report line stays one line of ASCII, whatever the
 * input: YAML also breaks lines at U+0085, U+2028 and U+2029, and a cut
 * may split a UTF-8 sequence (found by fuzz_convert). */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

/* The HPA's metric in words, for comments and the report. */
static void describe(const hpa_metric_t *m, char *buf, size_t cap)
{
    static const char *const fields[] = {"averageUtilization", "averageValue", "value"};
    char text[64];

    target_text(m->target, text, sizeof text);
    snprintf(buf, cap, "%s %s%s%s, %s %s%s", metric_types[m->type], m->name,
             m->container ? " of container " : "", m->container ? m->container : "",
             fields[m->target_type], text, m->target_type == T_UTILIZATION ? "%" : "");
    one_line(buf);
}

/* The utilization the proxy's metrics get from the HPA's resource metrics:
 * the lowest Utilization among cpu and memory (the tightest headroom the HPA
 * kept), or the default when none is a Utilization. */
static int32_t proxy_utilization(const hpa_t *h, bool *derived)
{
    int32_t u = INT32_MAX;

    for (size_t i = 0; i < h->nmetrics; i++) {
        const hpa_metric_t *m = &h->metrics[i];
        if ((m->type == M_RESOURCE || m->type == M_CONTAINER_RESOURCE) &&
            m->target_type == T_UTILIZATION && m->target->valuedouble < u)
            u = (int32_t)m->target->valuedouble;
    }
    *derived = u != INT32_MAX;
    /* A proxy at 100% of its concurrency refuses work: an HPA aiming above 90%
     * of a request (allowed: requests are not limits) gets 90. */
    return *derived ? (u > 90 ? 90 : u) : MS_CONVERT_DEFAULT_UTILIZATION;
}

static void w_proxy_metrics(writer_t *w, const hpa_t *h, ms_convert_proxy_t proxy,
                            const char *container, const ms_convert_options_t *o)
{
    bool derived;
    int32_t u = proxy_utilization(h, &derived);
    char what[160] = "";

    w_put(w, "  # The HPA scaled on the application's own resources:\n");
    for (size_t i = 0; i < h->nmetrics; i++)
        if (h->metrics[i].type == M_RESOURCE || h->metrics[i].type == M_CONTAINER_RESOURCE) {
            describe(&h->metrics[i], what, sizeof what);
            w_put(w, "  #   %s\n", what);
        }
    w_put(w,
          "  # A sidecar proxy refuses work while they are far from their target, so\n"
          "  # meshscaler scales on the proxy's limits: %d%% of them, ",
          (int)u);
    if (derived)
        w_put(w, "the headroom the HPA\n  # kept (its lowest Utilization target, at most 90).\n");
    else
        w_put(
            w,
            "its default (the HPA's\n  # targets are absolute values: no share to carry over).\n");
    w_put(w,
          "  - name: sidecar-concurrency\n    type: SidecarConcurrency\n"
          "    sidecarConcurrency:\n      proxy: %s\n",
          proxy_names[proxy]);
    if (o->concurrency_limit > 0) {
        w_put(w, "      limit: %d\n", (int)o->concurrency_limit);
    } else if (proxy == MS_CONVERT_PROXY_LINKERD) {
        w_put(w, "      # Linkerd exports no in-flight limit: add `limit: N`, the concurrency\n"
                 "      # each proxy is allowed (--concurrency-limit), or this metric reads "
                 "NO_LIMIT.\n");
        w_report(w, h,
                 "warning: Linkerd exports no in-flight limit; set "
                 "sidecarConcurrency.limit (--concurrency-limit N)");
    }
    w_put(w, "    target:\n      type: Utilization\n      averageUtilization: %d\n", (int)u);
    w_put(w, "  - name: sidecar-cpu\n    type: SidecarCPU\n    sidecarCPU:\n");
    w_str(w, 6, "container", container);
    w_put(w, "    # The proxy's CPU against its own CPU limit (the container needs one).\n");
    w_put(w, "    target:\n      type: Utilization\n      averageUtilization: %d\n", (int)u);
}

/* --keep-app-cpu: what the HPA computed, as PromQL: the application
 * containers' CPU usage over their requests, in percent, over the target's
 * pods (sidecar excluded). Container names are DNS labels (checked when
 * read), safe inside a PromQL string. */
static void w_app_cpu(writer_t *w, const hpa_metric_t *m, const char *sidecar)
{
    ms_buf_t q, sel;
    bool util = m->target_type == T_UTILIZATION;

    ms_buf_init(&q, 4096);
    ms_buf_init(&sel, 1024);
    (void)ms_buf_appendf(&sel,
                         "namespace=\"{{namespace}}\",pod=~\"{{podRegex}}\",container!=\"\","
                         "container!=\"POD\",container%s\"%s\"",
                         m->container ? "=" : "!=", m->container ? m->container : sidecar);
    if (util)
        (void)ms_buf_appendf(&q,
                             "100 * sum(rate(container_cpu_usage_seconds_total{%s}[2m])) / "
                             "sum(kube_pod_container_resource_requests{resource=\"cpu\",%s})",
                             sel.data, sel.data);
    else
        (void)ms_buf_appendf(&q, "sum(rate(container_cpu_usage_seconds_total{%s}[2m]))", sel.data);
    w_put(w,
          "  # --keep-app-cpu: the application's CPU as the HPA measured it (cAdvisor and\n"
          "  # kube-state-metrics series), %s.\n",
          util ? "usage over requests of all pods, in percent"
               : "cores in total (AverageValue compares per pod)");
    w_put(w, "  - name: app-cpu\n    type: Prometheus\n    prometheus:\n");
    if (q.data == NULL && w->err == MS_OK)
        w->err = MS_ERR_NOMEM;
    if (q.data != NULL)
        w_str(w, 6, "query", q.data);
    w_target(w, util ? T_VALUE : T_AVERAGE_VALUE, m->target);
    ms_buf_cleanup(&q);
    ms_buf_cleanup(&sel);
}

static const char *mapped_query(const ms_convert_options_t *o, const char *metric)
{
    for (size_t i = 0; i < o->nmap; i++)
        if (strcmp(o->map[i].metric, metric) == 0)
            return o->map[i].query;
    return NULL;
}

static bool name_taken(const writer_t *w, const char *name)
{
    for (size_t i = 0; i < w->nnames; i++)
        if (strcmp(w->names[i], name) == 0)
            return true;
    return false;
}

/* Record a metric name; false when the MeshAutoscaler is full. */
static bool take_name(writer_t *w, const char *name)
{
    if (w->nnames == MS_MAX_METRICS)
        return false;
    snprintf(w->names[w->nnames++], sizeof w->names[0], "%s", name);
    return true;
}

/* A metric name the CRD takes ([A-Za-z0-9][A-Za-z0-9._-]*, at most 63) and
 * no other metric has: other characters become '-', a clash gets "-2", "-3". */
static void metric_name(const writer_t *w, const char *from, char *buf, size_t cap)
{
    char base[56];
    size_t n = 0;

    for (const char *s = from; *s && n + 2 < sizeof base; s++) {
        char c = *s;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (n == 0 && !alnum)
            base[n++] = 'm'; /* a name starts with a letter or digit */
        base[n++] = alnum || c == '.' || c == '_' || c == '-' ? c : '-';
    }
    base[n] = '\0';
    snprintf(buf, cap, "%s", base);
    for (int k = 2; name_taken(w, buf); k++)
        snprintf(buf, cap, "%s-%d", base, k);
}

/* Pods, Object, External: a Prometheus metric through the map, or reported. */
static bool w_mapped(writer_t *w, const hpa_t *h, const hpa_metric_t *m,
                     const ms_convert_options_t *o)
{
    const char *query = mapped_query(o, m->name);
    char what[160], name[64], quoted[72];

    describe(m, what, sizeof what);
    snprintf(quoted, sizeof quoted, "%s", m->name);
    one_line(quoted);
    if (query == NULL) {
        w_put(w, "  # NOT CONVERTED: the HPA's %s (no --metric-map entry for \"%s\").\n", what,
              quoted);
        w_report(w, h,
                 "%s not converted: add \"%s\" to the --metric-map file (metric name: "
                 "PromQL template)",
                 what, quoted);
        return false;
    }
    metric_name(w, m->name, name, sizeof name);
    if (!take_name(w, name)) {
        w_report(w, h, "%s not converted: a MeshAutoscaler holds at most %d metrics", what,
                 MS_MAX_METRICS);
        return false;
    }
    w_put(w, "  # The HPA's %s, through --metric-map.\n", what);
    if (m->target_type == T_AVERAGE_VALUE)
        w_put(w, "  # AverageValue compares the query's value with averageValue x the current\n"
                 "  # replicas, as the HPA does: the query returns the total over the pods.\n");
    if (m->selector != NULL)
        w_put(w, "  # The HPA's selector for it is not carried over: put it in the query.\n");
    w_put(w, "  - name: %s\n    type: Prometheus\n    prometheus:\n", name);
    w_str(w, 6, "query", query);
    w_target(w, m->target_type, m->target);
    return true;
}

static size_t w_metrics(writer_t *w, const hpa_t *h, ms_convert_proxy_t proxy,
                        const char *container, const ms_convert_options_t *o)
{
    size_t written = 0;
    bool resources = false, kept_cpu = false;

    /* The proxy's names first, so a mapped metric cannot take them. */
    for (size_t i = 0; i < h->nmetrics && !resources; i++)
        resources = h->metrics[i].type == M_RESOURCE || h->metrics[i].type == M_CONTAINER_RESOURCE;
    if (resources) {
        take_name(w, "sidecar-concurrency");
        take_name(w, "sidecar-cpu");
        if (o->keep_app_cpu)
            take_name(w, "app-cpu");
    }
    resources = false;
    w_put(w, "  metrics:\n");
    if (h->metrics_defaulted)
        w_put(w, "  # The HPA names no metric: it scales on cpu at %d%%, its default.\n",
              MS_CONVERT_HPA_DEFAULT_CPU);
    for (size_t i = 0; i < h->nmetrics; i++) {
        const hpa_metric_t *m = &h->metrics[i];

        if (m->type != M_RESOURCE && m->type != M_CONTAINER_RESOURCE) {
            written += w_mapped(w, h, m, o);
            continue;
        }
        if (!resources) {
            w_proxy_metrics(w, h, proxy, container, o);
            written += 2;
            resources = true;
        }
        if (o->keep_app_cpu && !kept_cpu && strcmp(m->name, "cpu") == 0 &&
            (m->container == NULL || strcmp(m->container, container) != 0)) {
            w_app_cpu(w, m, container);
            written++;
            kept_cpu = true;
        }
    }
    return written;
}

/* behavior, rule by rule: the fields the HPA gives, as the spec reader read
 * them (the same fields mean the same in both). */
static void w_rules(writer_t *w, const char *dir, const cJSON *given, const ms_scaling_rules_t *r)
{
    static const char *const selects[] = {"Max", "Min", "Disabled"};

    if (given == NULL)
        return;
    w_put(w, "    %s:\n", dir);
    if (!ms_json_is_absent(ms_json_child(given, "stabilizationWindowSeconds")))
        w_put(w, "      stabilizationWindowSeconds: %d\n", (int)r->window_seconds);
    if (!ms_json_is_absent(ms_json_child(given, "selectPolicy")))
        w_put(w, "      selectPolicy: %s\n", selects[r->select]);
    if (!ms_json_is_absent(ms_json_child(given, "tolerance")))
        w_put(w, "      tolerance: \"%.15g\"\n", r->tolerance);
    if (ms_json_is_absent(ms_json_child(given, "policies")))
        return;
    w_put(w, "      policies:\n");
    for (size_t i = 0; i < r->npolicies; i++)
        w_put(w, "      - type: %s\n        value: %d\n        periodSeconds: %d\n",
              r->policies[i].type == MS_POLICY_PODS ? "Pods" : "Percent", (int)r->policies[i].value,
              (int)r->policies[i].period_seconds);
}

static void w_behavior(writer_t *w, const hpa_t *h)
{
    if (h->behavior == NULL) {
        w_put(w,
              "  # No behavior: the HPA's defaults, which are meshscaler's too (scale up\n"
              "  # by 100%% or 4 pods per 15 s, down by 100%% per 15 s after a 300 s window).\n");
        return;
    }
    w_put(w, "  # The HPA's behavior, unchanged.\n  behavior:\n");
    w_rules(w, "scaleUp", ms_json_child(h->behavior, "scaleUp"), &h->up);
    w_rules(w, "scaleDown", ms_json_child(h->behavior, "scaleDown"), &h->down);
}

static void w_header(writer_t *w, const hpa_t *h, const ms_convert_options_t *o)
{
    w_put(w, "# meshscaler convert: from %s HorizontalPodAutoscaler %s%s%s.\n",
          versions[h->version], h->ns ? h->ns : "", h->ns ? "/" : "", h->name);
    w_put(w, "apiVersion: autoscaling.meshscaler.io/v1alpha1\nkind: MeshAutoscaler\nmetadata:\n");
    w_str(w, 2, "name", h->name);
    if (h->ns != NULL)
        w_str(w, 2, "namespace", h->ns);
    w_put(w, "spec:\n  # The HPA's target.\n  scaleTargetRef:\n");
    /* v1 and v2 leave apiVersion optional; the CRD wants it, and "apps/v1"
     * is what every workload kind the HPA scales by default lives in. */
    w_str(w, 4, "apiVersion", h->ref_api_version ? h->ref_api_version : "apps/v1");
    w_str(w, 4, "kind", h->ref_kind);
    w_str(w, 4, "name", h->ref_name);
    w_put(w, "  minReplicas: %d%s\n", (int)h->min_replicas,
          h->min_given ? "" : "  # omitted in the HPA: 1, its default");
    w_put(w, "  maxReplicas: %d\n", (int)h->max_replicas);
    if (o->live)
        w_put(w,
              "  # Live: meshscaler scales the target. Delete the HPA first (docs/migration.md).\n"
              "  dryRun: false\n");
    else
        w_put(w, "  # Shadow mode: meshscaler decides and records it in status, never scales,\n"
                 "  # while the HPA goes on. docs/migration.md says when to set it false.\n"
                 "  dryRun: true\n");
}

static ms_err_t choose_proxy(const hpa_t *h, const ms_convert_options_t *o, ms_jpath_t *p,
                             ms_convert_proxy_t *proxy, const char **container, char *errbuf,
                             size_t errlen)
{
    const char *found = NULL;

    *proxy = o->proxy;
    if (*proxy == MS_CONVERT_PROXY_AUTO) {
        *proxy = proxy_of(o->containers, o->ncontainers, &found);
        if (*proxy == MS_CONVERT_PROXY_AUTO) {
            ms_err_t err;
            size_t mark = ms_jpath_push_key(p, "spec");
            ms_jpath_push_key(p, "scaleTargetRef");
            err = ms_jpath_errf(p, errbuf, errlen,
                                "cannot tell the proxy of %s %s: %s; pass --proxy "
                                "envoy|haproxy|linkerd",
                                h->ref_kind, h->ref_name,
                                o->ncontainers == 0 ? "no pod template was read (a file)"
                                                    : "no container is a known sidecar");
            ms_jpath_pop(p, mark);
            return err;
        }
    }
    *container = o->sidecar_container ? o->sidecar_container
                 : found              ? found
                                      : proxy_containers[*proxy];
    return MS_OK;
}

ms_err_t ms_convert_hpa(const cJSON *hpa, ms_jpath_t *p, const ms_convert_options_t *o,
                        ms_buf_t *out, ms_buf_t *report, char *errbuf, size_t errlen)
{
    hpa_t h = {.version = V1};
    writer_t w = {.out = out, .report = report, .err = MS_OK};
    ms_convert_proxy_t proxy = MS_CONVERT_PROXY_AUTO;
    const char *container = NULL;
    bool needs_proxy = false;
    ms_err_t err = read_hpa(hpa, &h, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    for (size_t i = 0; i < h.nmetrics; i++)
        needs_proxy |= h.metrics[i].type == M_RESOURCE || h.metrics[i].type == M_CONTAINER_RESOURCE;
    if (needs_proxy) {
        err = choose_proxy(&h, o, p, &proxy, &container, errbuf, errlen);
        if (err != MS_OK)
            return err;
    }
    w_header(&w, &h, o);
    if (w_metrics(&w, &h, proxy, container, o) == 0 && w.err == MS_OK) {
        size_t mark = ms_jpath_push_key(p, "spec");
        ms_jpath_push_key(p, "metrics");
        err = ms_jpath_errf(p, errbuf, errlen,
                            "no metric could be converted (the lines above say why); a "
                            "MeshAutoscaler needs at least one");
        ms_jpath_pop(p, mark);
        return err;
    }
    w_behavior(&w, &h);
    return w.err;
}

ms_err_t ms_convert_map_parse(const char *text, size_t len, cJSON **tree,
                              ms_convert_mapping_t **map, size_t *n, char *errbuf, size_t errlen)
{
    cJSON *docs = NULL;
    const cJSON *root;
    ms_convert_mapping_t *m = NULL;
    size_t count = 0;
    ms_jpath_t p;
    ms_err_t err = ms_yaml_load_all(text, len, &docs, errbuf, errlen);

    if (err != MS_OK)
        return err;
    ms_jpath_init(&p, "");
    root = cJSON_GetArraySize(docs) == 1 ? docs->child : NULL;
    if (root == NULL || !cJSON_IsObject(root)) {
        err =
            ms_jpath_errf(&p, errbuf, errlen, "want one mapping of metric name to PromQL template");
        goto out;
    }
    err = ms_json_unique_keys(root, &p, errbuf, errlen);
    if (err != MS_OK)
        goto out;
    m = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *m);
    if (m == NULL) {
        err = MS_ERR_NOMEM;
        goto out;
    }
    for (const cJSON *e = root->child; e != NULL; e = e->next) {
        size_t mark = ms_jpath_push_key(&p, e->string);
        if (!cJSON_IsString(e) || e->valuestring[0] == '\0')
            err = ms_jpath_errf(&p, errbuf, errlen, "not a PromQL template (a non-empty string)");
        ms_jpath_pop(&p, mark);
        if (err != MS_OK)
            goto out;
        m[count++] = (ms_convert_mapping_t){e->string, e->valuestring};
    }
out:
    if (err != MS_OK) {
        free(m);
        cJSON_Delete(docs);
        return err;
    }
    *tree = docs;
    *map = m;
    *n = count;
    return MS_OK;
}

/* One document: an HPA, or a List whose items are HPAs. */
static ms_err_t convert_doc(const cJSON *doc, ms_jpath_t *p, const ms_convert_options_t *o,
                            ms_buf_t *out, ms_buf_t *report, char *errbuf, size_t errlen)
{
    const cJSON *kind = ms_json_child(doc, "kind");
    const cJSON *items = ms_json_child(doc, "items");
    ms_err_t err = MS_OK;

    if (!(cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0)) {
        if (out->len > 0)
            err = ms_buf_append(out, "---\n", 4);
        return err != MS_OK ? err : ms_convert_hpa(doc, p, o, out, report, errbuf, errlen);
    }
    size_t mark = ms_jpath_push_key(p, "items"), i = 0;
    err = ms_json_array(items, p, errbuf, errlen);
    for (const cJSON *it = err == MS_OK ? items->child : NULL; it != NULL && err == MS_OK;
         it = it->next) {
        size_t inner = ms_jpath_push_index(p, i++);
        err = convert_doc(it, p, o, out, report, errbuf, errlen);
        ms_jpath_pop(p, inner);
    }
    ms_jpath_pop(p, mark);
    return err;
}

ms_err_t ms_convert_text(const char *name, const char *text, size_t len,
                         const ms_convert_options_t *o, ms_buf_t *out, ms_buf_t *report,
                         char *errbuf, size_t errlen)
{
    cJSON *docs = NULL;
    char inner[MS_ERRBUF_SIZE];
    size_t i = 0;
    ms_err_t err = ms_yaml_load_all(text, len, &docs, inner, sizeof inner);

    if (err != MS_OK)
        return ms_errf(errbuf, errlen, err, "%s: %s", name, inner);
    for (const cJSON *d = docs->child; d != NULL && err == MS_OK; d = d->next, i++) {
        ms_jpath_t p;

        /* "documents[1]" only when there are several, so a single HPA's
         * paths read as they do everywhere else ("spec.maxReplicas"). */
        ms_jpath_init(&p, "");
        if (!(d == docs->child && d->next == NULL)) {
            ms_jpath_push_key(&p, "documents");
            ms_jpath_push_index(&p, i);
        }
        err = convert_doc(d, &p, o, out, report, inner, sizeof inner);
        if (err != MS_OK)
            ms_errf(errbuf, errlen, err, "%s: %s", name, inner);
    }
    if (err == MS_OK && i == 0)
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: no document", name);
    cJSON_Delete(docs);
    return err;
}
