/*
 * presets.c - the PromQL of the built-in metric sources.
 *
 * Every preset is one query for all objects. Per pod it computes the usage U
 * (in-flight requests, or CPU cores) and, where the proxy exports one, the
 * limit L; then per workload it returns up to five fields, told apart by the
 * label ms_field:
 *   usage      sum of U over pods that also report L
 *   limit      sum of L over pods that also report U
 *   usage_all  sum of U over every pod
 *   pods       number of pods reporting U
 *   age        seconds since the oldest pod's newest raw sample
 * tick.c turns these into the value the metric's target type wants.
 * docs/metrics.md shows the expanded queries; keep the two in step.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/buf.h"
#include "meshscaler/log.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/xalloc.h"

#define DERIVED_LABEL "ms_workload"
/* Deployment pods are <deployment>-<pod-template-hash>-<5 chars>, StatefulSet
 * pods <statefulset>-<ordinal>. The second rule runs last, so a Deployment
 * pod whose random suffix happens to be all digits still resolves right. */
#define STS_POD_RE "(.+)-[0-9]+"
#define DEPLOY_POD_RE "(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}"
/* Longest namespace or container alternation put into a query. */
#define NAMES_MAX (16u * 1024u)

static const char *const kind_names[MS_PROM_KIND__COUNT] = {"envoy", "haproxy", "linkerd", "cpu"};

const char *ms_prom_kind_name(ms_prom_kind_t kind)
{
    return (unsigned)kind < MS_PROM_KIND__COUNT ? kind_names[kind] : "unknown";
}

const char *ms_prom_preset_workload_label(const ms_prom_preset_options_t *o)
{
    return o->workload_label != NULL && o->workload_label[0] != '\0' ? o->workload_label
                                                                     : DERIVED_LABEL;
}

static bool valid_label_name(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* A PromQL duration: digits and units, e.g. "2m", "1m30s". */
static bool valid_duration(const char *s)
{
    if (*s == '\0' || strlen(s) > 32)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || strchr("smhdwy", *s) != NULL))
            return false;
    return true;
}

typedef struct {
    ms_buf_t b;
} text_t;

/* Append to t, whose buffer has no cap: with our own formats, only memory
 * can run out. */
__attribute__((format(printf, 2, 3))) static void add(text_t *t, const char *fmt, ...)
{
    va_list ap;
    ms_err_t err;

    va_start(ap, fmt);
    err = ms_buf_vappendf(&t->b, fmt, ap);
    va_end(ap);
    if (err != MS_OK)
        ms_oom("preset query");
}

typedef struct {
    const char *pod_key;   /* "namespace, pod[, container][, LABEL]" */
    const char *group_key; /* "namespace, ms_workload[, container]" */
    bool derived;
    const char *usage;   /* per-pod usage, grouped by pod_key */
    const char *limit;   /* per-pod limit, or NULL */
    const char *age_src; /* raw series whose timestamps tell the age */
} shape_t;

/* WL(x): attach the workload label when it is derived from pod names. */
static void add_wl(text_t *t, const shape_t *s, const char *inner)
{
    if (!s->derived) {
        add(t, "%s", inner);
        return;
    }
    add(t,
        "label_replace(label_replace(%s, \"" DERIVED_LABEL "\", \"$1\", \"pod\", \"" STS_POD_RE
        "\"), \"" DERIVED_LABEL "\", \"$1\", \"pod\", \"" DEPLOY_POD_RE "\")",
        inner);
}

static void add_field(text_t *t, const shape_t *s, const char *agg, const char *inner,
                      const char *field, bool first)
{
    if (!first)
        add(t, "\nor ");
    add(t, "label_replace(%s by (%s) (", agg, s->group_key);
    add_wl(t, s, inner);
    add(t, "), \"ms_field\", \"%s\", \"\", \"\")", field);
}

static char *compose(const shape_t *s)
{
    text_t t;
    char *inner;

    ms_buf_init(&t.b, (size_t)-1);
    if (s->limit != NULL) {
        inner = ms_xasprintf("(%s) and on (%s) (%s)", s->usage, s->pod_key, s->limit);
        add_field(&t, s, "sum", inner, "usage", true);
        free(inner);
        inner = ms_xasprintf("(%s) and on (%s) (%s)", s->limit, s->pod_key, s->usage);
        add_field(&t, s, "sum", inner, "limit", false);
        free(inner);
    }
    add_field(&t, s, "sum", s->usage, "usage_all", s->limit == NULL);
    add_field(&t, s, "count", s->usage, "pods", false);
    inner = ms_xasprintf("max by (%s) (time() - timestamp(%s))", s->pod_key, s->age_src);
    add_field(&t, s, "max", inner, "age", false);
    free(inner);
    return t.b.data;
}

/* label=~"a|b" with each value regex- and string-escaped; NULL when the
 * names do not fit in max bytes. */
static char *regex_matcher(const char *label, const char *const *names, size_t n, size_t max)
{
    char *re = ms_prom_pod_regex(names, n); /* the same escaping and joining */
    ms_prom_template_vars_t v = {.pod_regex = re};
    char *tmpl = ms_xasprintf("%s=~\"{{podRegex}}\"", label);
    char *out = NULL;

    if (strlen(re) > max || ms_prom_template_expand(tmpl, &v, &out, NULL, 0) != MS_OK)
        out = NULL;
    free(tmpl);
    free(re);
    return out;
}

/* metric{m1,m2,...} from the matchers that are set; the bare name if none. */
static char *selector(const char *metric, const char *m1, const char *m2, const char *m3)
{
    const char *m[3] = {m1, m2, m3};
    text_t t;
    size_t used = 0;

    ms_buf_init(&t.b, (size_t)-1);
    add(&t, "%s", metric);
    for (size_t i = 0; i < 3; i++) {
        if (m[i] == NULL || m[i][0] == '\0')
            continue;
        add(&t, "%s%s", used++ ? "," : "{", m[i]);
    }
    if (used)
        add(&t, "}");
    return t.b.data;
}

/* The series of one preset: its selectors (sel, and sel2 for the limit) and
 * the per-pod usage and limit expressions over them (limit NULL: none). */
typedef struct {
    char *sel, *sel2, *usage, *limit;
} series_t;

static void kind_series(ms_prom_kind_t kind, const char *pod_key, const char *ns,
                        const char *cmatch, const char *window, series_t *q)
{
    switch (kind) {
    case MS_PROM_KIND_ENVOY:
        q->sel = selector("envoy_cluster_upstream_rq_active", "cluster_name=~\"inbound\\\\|.*\"",
                          ns, NULL);
        q->sel2 = selector("envoy_cluster_circuit_breakers_default_remaining_rq",
                           "cluster_name=~\"inbound\\\\|.*\"", ns, NULL);
        q->usage = ms_xasprintf("sum by (%s) (%s)", pod_key, q->sel);
        q->limit = ms_xasprintf("sum by (%s) (%s + %s)", pod_key, q->sel, q->sel2);
        break;
    case MS_PROM_KIND_HAPROXY:
        q->sel = selector("haproxy_server_current_sessions", ns, NULL, NULL);
        q->sel2 = selector("haproxy_server_limit_sessions", ns, NULL, NULL);
        q->usage = ms_xasprintf("sum by (%s) (%s)", pod_key, q->sel);
        q->limit = ms_xasprintf("sum by (%s) (%s > 0)", pod_key, q->sel2);
        break;
    case MS_PROM_KIND_LINKERD:
        /* Little's law: latency-milliseconds accrued per second / 1000 is the
         * mean number of requests in flight. Linkerd exports no limit. */
        q->sel = selector("response_latency_ms_sum", "direction=\"inbound\"", ns, NULL);
        q->usage = ms_xasprintf("sum by (%s) (rate(%s[%s])) / 1000", pod_key, q->sel, window);
        break;
    default: /* MS_PROM_KIND_CPU */
        q->sel = selector("container_cpu_usage_seconds_total", cmatch, ns, NULL);
        q->sel2 = selector("kube_pod_container_resource_limits", "resource=\"cpu\"", cmatch, ns);
        q->usage = ms_xasprintf("sum by (%s) (rate(%s[%s]))", pod_key, q->sel, window);
        q->limit = ms_xasprintf("sum by (%s) (%s)", pod_key, q->sel2);
        break;
    }
}

ms_err_t ms_prom_preset_query(ms_prom_kind_t kind, const ms_prom_preset_options_t *o,
                              const ms_prom_preset_scope_t *scope, char **out, char *errbuf,
                              size_t errlen)
{
    static const ms_prom_preset_scope_t everything = {0};
    const char *window = o->rate_window ? o->rate_window : "2m";
    const char *label = ms_prom_preset_workload_label(o);
    bool derived = strcmp(label, DERIVED_LABEL) == 0;
    bool cpu = kind == MS_PROM_KIND_CPU;
    char *ns = NULL, *cmatch = NULL, *pod_key, *group_key;
    series_t q = {0};
    shape_t s;

    if (scope == NULL)
        scope = &everything;
    if (!valid_label_name(label) || strlen(label) > 100)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "workload label \"%.100s\" is not a label name", label);
    if (!valid_duration(window))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "rate window \"%.40s\" is not a duration",
                       window);
    if ((unsigned)kind >= MS_PROM_KIND__COUNT)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "unknown preset kind %d", (int)kind);
    if (cpu) {
        if (scope->ncontainers == 0)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID, "the cpu preset needs a container name");
        cmatch = regex_matcher("container", scope->containers, scope->ncontainers, NAMES_MAX);
        if (cmatch == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "the sidecar container names are too long");
    }
    /* Only the namespaces that hold objects; every namespace when the list
     * would make the query too long (ns stays NULL). */
    if (scope->nnamespaces > 0)
        ns = regex_matcher("namespace", scope->namespaces, scope->nnamespaces, NAMES_MAX);

    pod_key = ms_xasprintf("namespace, pod%s%s%s", cpu ? ", container" : "", derived ? "" : ", ",
                           derived ? "" : label);
    group_key = ms_xasprintf("namespace, %s%s", label, cpu ? ", container" : "");
    kind_series(kind, pod_key, ns, cmatch, window, &q);
    s = (shape_t){.pod_key = pod_key,
                  .group_key = group_key,
                  .derived = derived,
                  .usage = q.usage,
                  .limit = q.limit,
                  .age_src = q.sel};
    *out = compose(&s);
    free(pod_key);
    free(group_key);
    free(q.usage);
    free(q.limit);
    free(q.sel);
    free(q.sel2);
    free(ns);
    free(cmatch);
    return MS_OK;
}
