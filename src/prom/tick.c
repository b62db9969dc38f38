/*
 * tick.c - one observation round for many objects: plan the queries (one
 * per preset kind in use, plus each distinct expanded user query), share
 * the round out fairly among namespaces and objects, run the queries in one
 * bounded batch, and split the answers back per object.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/strmap.h"
#include "meshscaler/xalloc.h"

/* Per-object slots: every value one object may ask Prometheus for. */
#define SLOT_METRIC(i) (i)
#define SLOT_DS_USAGE(d) (MS_MAX_METRICS + (d))
#define SLOT_DS_LIMIT(d) (MS_MAX_METRICS + MS_MAX_DOWNSTREAMS + (d))
#define SLOT_RETRY (MS_MAX_METRICS + 2 * MS_MAX_DOWNSTREAMS)
#define SLOT_SAT_ADMITTED(i) (SLOT_RETRY + 1 + (i))
#define SLOT_SAT_REJECTED(i) (SLOT_RETRY + 1 + MS_MAX_METRICS + (i))
#define NSLOTS (SLOT_RETRY + 1 + 2 * MS_MAX_METRICS)

/* A slot holds a query index (>= 0), PLAN_NONE, PLAN_OVER_CAP (a query
 * past the object's cap, not sent), or a template error whose detail is
 * details[PLAN_TEMPLATE_BASE - value]. */
#define PLAN_NONE (-1)
#define PLAN_OVER_CAP (-2)
#define PLAN_TEMPLATE_BASE (-3)

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* The owner of a preset query: every object. */
#define NO_OWNER SIZE_MAX

enum { F_USAGE = 1, F_LIMIT = 2, F_USAGE_ALL = 4, F_PODS = 8, F_AGE = 16 };

typedef struct {
    unsigned have;
    double usage, limit, usage_all, pods, age;
} fields_t;

typedef struct {
    ms_prom_reason_t reason;
    double value;
    const char *detail;
} answer_t;

/* A namespace whose objects own user queries in this run. */
typedef struct {
    char *name; /* owned */
    size_t objects, queries, over_share;
    double seconds;
    size_t bytes;
} lane_t;

/* What the planning knows of one object. */
typedef struct {
    size_t lane;     /* its namespace's lane; valid when owned > 0 */
    size_t lane_pos; /* its place among the lane's objects */
    size_t owned;    /* distinct user queries it owns */
    size_t over_cap; /* user queries past MS_PROM_USER_QUERIES_PER_OBJECT */
} owner_t;

struct ms_prom_tick {
    ms_prom_preset_options_t opts; /* strings point at the copies below */
    char *workload_label;
    char *rate_window;

    /* Everything below belongs to the last run. */
    ms_prom_query_t *queries;
    char **texts; /* owned query text, parallel to queries */
    answer_t *answers;
    size_t *owner; /* the object that owns each query, or NO_OWNER (a preset) */
    size_t *rank;  /* a user query's place among its owner's queries */
    size_t nqueries, capqueries;
    int builtin[MS_PROM_KIND__COUNT];         /* query index, or -1 */
    size_t kind_objects[MS_PROM_KIND__COUNT]; /* objects that use each preset kind */
    ms_strmap_t dedup;                        /* user query text -> query index */
    int32_t *plan;                            /* nplanned * NSLOTS */
    size_t nplanned;
    char **details; /* owned detail lines */
    size_t ndetails, capdetails;
    ms_strmap_t groups; /* kind/namespace/workload/container -> fields index */
    fields_t *fields;
    size_t nfields, capfields;
    ms_strmap_t containers;
    const char **container_list; /* borrowed from the specs during the run */
    size_t ncontainers, capcontainers;
    ms_strmap_t namespaces;
    const char **namespace_list; /* borrowed from the objects during the run */
    size_t nnamespaces, capnamespaces;
    ms_strmap_t lane_index; /* namespace -> lane index */
    lane_t *lanes;
    size_t nlanes, caplanes;
    owner_t *owners; /* nplanned */
    ms_prom_round_limits_t limits;
    size_t user_bytes; /* what user queries may read together; 0: no cap */
    ms_prom_tick_stats_t stats;
};

/* The query maps hold indexes; the map stores pointers, never NULL. */
static bool index_get(const ms_strmap_t *m, const char *key, size_t len, size_t *idx)
{
    void *v = ms_strmap_getn(m, key, len);

    if (v == NULL)
        return false;
    *idx = (size_t)(uintptr_t)v - 1;
    return true;
}

static void index_put(ms_strmap_t *m, const char *key, size_t idx)
{
    ms_strmap_put(m, key, (void *)(uintptr_t)(idx + 1));
}

ms_prom_tick_t *ms_prom_tick_new(const ms_prom_preset_options_t *o, char *errbuf, size_t errlen)
{
    ms_prom_tick_t *t;
    char *probe = NULL;
    const char *c = "probe";
    ms_prom_preset_scope_t scope = {.containers = &c, .ncontainers = 1};

    /* Validate the options once by building a query with them. */
    if (ms_prom_preset_query(MS_PROM_KIND_CPU, o, &scope, &probe, errbuf, errlen) != MS_OK)
        return NULL;
    free(probe);
    t = ms_xcalloc(1, sizeof *t);
    t->workload_label = ms_xstrdup_opt(o->workload_label);
    t->rate_window = ms_xstrdup_opt(o->rate_window);
    t->opts = *o;
    t->opts.workload_label = t->workload_label;
    t->opts.rate_window = t->rate_window;
    ms_strmap_init(&t->dedup);
    ms_strmap_init(&t->groups);
    ms_strmap_init(&t->containers);
    ms_strmap_init(&t->namespaces);
    ms_strmap_init(&t->lane_index);
    return t;
}

void ms_prom_tick_set_round(ms_prom_tick_t *t, const ms_prom_round_limits_t *l)
{
    t->limits = *l;
}

/* Forget the last run. */
static void reset(ms_prom_tick_t *t)
{
    for (size_t i = 0; i < t->nqueries; i++) {
        ms_prom_result_cleanup(&t->queries[i].result);
        free(t->texts[i]);
    }
    t->nqueries = 0;
    for (size_t i = 0; i < t->ndetails; i++)
        free(t->details[i]);
    t->ndetails = 0;
    ms_strmap_cleanup(&t->dedup);
    ms_strmap_cleanup(&t->groups);
    ms_strmap_cleanup(&t->containers);
    ms_strmap_cleanup(&t->namespaces);
    ms_strmap_cleanup(&t->lane_index);
    for (size_t i = 0; i < t->nlanes; i++)
        free(t->lanes[i].name);
    t->nlanes = 0;
    free(t->owners);
    t->owners = NULL;
    t->user_bytes = 0;
    t->nfields = 0;
    memset(t->kind_objects, 0, sizeof t->kind_objects);
    t->ncontainers = 0;
    t->nnamespaces = 0;
    free(t->plan);
    t->plan = NULL;
    t->nplanned = 0;
    for (int k = 0; k < MS_PROM_KIND__COUNT; k++)
        t->builtin[k] = -1;
}

void ms_prom_tick_free(ms_prom_tick_t *t)
{
    if (t == NULL)
        return;
    reset(t);
    free(t->queries);
    free(t->texts);
    free(t->answers);
    free(t->owner);
    free(t->rank);
    free(t->lanes);
    free(t->details);
    free(t->fields);
    free(t->container_list);
    free(t->namespace_list);
    free(t->workload_label);
    free(t->rate_window);
    free(t);
}

/* Keep a detail line; returns its index. */
static size_t keep_detail(ms_prom_tick_t *t, const char *line)
{
    t->details = ms_xgrow(t->details, &t->capdetails, t->ndetails + 1, sizeof *t->details);
    t->details[t->ndetails] = ms_xstrdup_opt(line);
    return t->ndetails++;
}

/* Append a query that takes ownership of text; returns its index. The
 * five per-query arrays grow together. */
static size_t add_query(ms_prom_tick_t *t, char *text, size_t owner)
{
    size_t i = t->nqueries;

    if (i == t->capqueries) {
        size_t cap = t->capqueries;
        t->queries = ms_xgrow(t->queries, &cap, i + 1, sizeof *t->queries);
        cap = t->capqueries;
        t->texts = ms_xgrow(t->texts, &cap, i + 1, sizeof *t->texts);
        cap = t->capqueries;
        t->answers = ms_xgrow(t->answers, &cap, i + 1, sizeof *t->answers);
        cap = t->capqueries;
        t->owner = ms_xgrow(t->owner, &cap, i + 1, sizeof *t->owner);
        cap = t->capqueries;
        t->rank = ms_xgrow(t->rank, &cap, i + 1, sizeof *t->rank);
        t->capqueries = cap;
    }
    t->owner[i] = owner;
    t->rank[i] = 0;
    memset(&t->queries[i], 0, sizeof t->queries[i]);
    ms_prom_result_init(&t->queries[i].result);
    t->queries[i].query = text;
    /* 0: Prometheus's own now. At ours, a clock ahead of Prometheus's by
     * more than its lookback (5 min) reads nothing and one behind reads old
     * values that look fresh (an instant result carries the evaluation
     * time); the presets' age is computed by Prometheus too. */
    t->queries[i].time = 0;
    t->texts[i] = text;
    t->nqueries++;
    return i;
}

/* The lane of an object's namespace, made on its first user query. */
static size_t lane_of(ms_prom_tick_t *t, const char *ns)
{
    size_t idx;

    if (index_get(&t->lane_index, ns, strlen(ns), &idx))
        return idx;
    t->lanes = ms_xgrow(t->lanes, &t->caplanes, t->nlanes + 1, sizeof *t->lanes);
    memset(&t->lanes[t->nlanes], 0, sizeof t->lanes[t->nlanes]);
    t->lanes[t->nlanes].name = ms_xstrdup(ns);
    index_put(&t->lane_index, ns, t->nlanes);
    return t->nlanes++;
}

/* Object i becomes the owner of a new query. */
static void own(ms_prom_tick_t *t, size_t i, const char *ns, size_t q)
{
    owner_t *w = &t->owners[i];

    if (w->owned == 0) {
        w->lane = lane_of(t, ns);
        w->lane_pos = t->lanes[w->lane].objects++;
    }
    t->rank[q] = w->owned++;
    t->lanes[w->lane].queries++;
}

/* Plan one user query for object i: expand, deduplicate within its
 * namespace (a query is its namespace's cost: another namespace's same
 * text is its own query), remember. */
static int32_t plan_user(ms_prom_tick_t *t, size_t i, const ms_prom_object_t *o, const char *tmpl)
{
    ms_prom_template_vars_t v = {o->namespace_name, o->name, o->kind, o->pod_regex};
    const char *ns = o->namespace_name ? o->namespace_name : "";
    char err[MS_ERRBUF_SIZE];
    char *text = NULL, *key;
    size_t idx;

    if (tmpl == NULL)
        return PLAN_NONE;
    t->stats.user_refs++;
    if (ms_prom_template_expand(tmpl, &v, &text, err, sizeof err) != MS_OK)
        return (int32_t)(PLAN_TEMPLATE_BASE - (int64_t)keep_detail(t, err));
    key = ms_xmalloc(strlen(ns) + strlen(text) + 2);
    sprintf(key, "%s\x1f%s", ns, text);
    if (index_get(&t->dedup, key, strlen(key), &idx)) {
        free(key);
        free(text);
        return (int32_t)idx;
    }
    if (t->owners[i].owned >= (t->limits.max_user_queries ? t->limits.max_user_queries
                                                          : MS_PROM_USER_QUERIES_PER_OBJECT)) {
        t->owners[i].over_cap++;
        free(key);
        free(text);
        return PLAN_OVER_CAP;
    }
    idx = add_query(t, text, i);
    own(t, i, ns, idx);
    index_put(&t->dedup, key, idx);
    free(key);
    t->stats.user_queries++;
    return (int32_t)idx;
}

/* Remember a borrowed name once in (map, list). */
static void remember(ms_strmap_t *map, const char ***list, size_t *n, size_t *cap, const char *name)
{
    size_t idx;

    if (index_get(map, name, strlen(name), &idx))
        return;
    index_put(map, name, *n);
    *list = ms_xgrow(*list, cap, *n + 1, sizeof **list);
    (*list)[(*n)++] = name;
}

static void plan_object(ms_prom_tick_t *t, size_t oi, const ms_prom_object_t *o, int32_t *plan)
{
    const ms_spec_t *s = o->spec;
    bool kinds[MS_PROM_KIND__COUNT] = {false};

    if (o->namespace_name != NULL)
        remember(&t->namespaces, &t->namespace_list, &t->nnamespaces, &t->capnamespaces,
                 o->namespace_name);

    for (size_t i = 0; i < NSLOTS; i++)
        plan[i] = PLAN_NONE;
    for (size_t i = 0; i < s->nmetrics && i < MS_MAX_METRICS; i++) {
        const ms_metric_spec_t *m = &s->metrics[i];
        switch (m->source) {
        case MS_SOURCE_SIDECAR_CONCURRENCY:
            if (m->proxy == MS_PROXY_ENVOY)
                kinds[MS_PROM_KIND_ENVOY] = true;
            else if (m->proxy == MS_PROXY_HAPROXY)
                kinds[MS_PROM_KIND_HAPROXY] = true;
            else if (m->proxy == MS_PROXY_LINKERD)
                kinds[MS_PROM_KIND_LINKERD] = true;
            break;
        case MS_SOURCE_SIDECAR_CPU:
            if (m->container != NULL) {
                kinds[MS_PROM_KIND_CPU] = true;
                remember(&t->containers, &t->container_list, &t->ncontainers, &t->capcontainers,
                         m->container);
            }
            break;
        case MS_SOURCE_PROMETHEUS:
            break;
        }
    }
    /* The guardrails first: within the object's cap they go out before its
     * own metric queries, and are the last to be left out. */
    for (size_t d = 0; d < s->ndownstreams && d < MS_MAX_DOWNSTREAMS; d++) {
        plan[SLOT_DS_USAGE(d)] = plan_user(t, oi, o, s->downstreams[d].usage_query);
        plan[SLOT_DS_LIMIT(d)] = plan_user(t, oi, o, s->downstreams[d].limit_query);
    }
    if (s->retry_storm.enabled)
        plan[SLOT_RETRY] = plan_user(t, oi, o, s->retry_storm.retry_share_query);
    for (size_t i = 0; i < s->nmetrics && i < MS_MAX_METRICS; i++)
        if (s->saturation[i].enabled) {
            plan[SLOT_SAT_ADMITTED(i)] = plan_user(t, oi, o, s->saturation[i].admitted_query);
            plan[SLOT_SAT_REJECTED(i)] = plan_user(t, oi, o, s->saturation[i].rejected_query);
        }
    for (size_t i = 0; i < s->nmetrics && i < MS_MAX_METRICS; i++)
        if (s->metrics[i].source == MS_SOURCE_PROMETHEUS)
            plan[SLOT_METRIC(i)] = plan_user(t, oi, o, s->metrics[i].query);
    for (int k = 0; k < MS_PROM_KIND__COUNT; k++)
        t->kind_objects[k] += kinds[k];
}

/* "kind\x1fnamespace\x1fworkload\x1fcontainer" into buf; false if too long. */
static bool group_key(char *buf, size_t cap, ms_prom_kind_t kind, const char *ns, const char *wl,
                      const char *container, size_t *len)
{
    int n = snprintf(buf, cap, "%d\x1f%s\x1f%s\x1f%s", (int)kind, ns ? ns : "", wl ? wl : "",
                     container ? container : "");
    if (n < 0 || (size_t)n >= cap)
        return false;
    *len = (size_t)n;
    return true;
}

static void take_builtin(ms_prom_tick_t *t, ms_prom_kind_t kind, const ms_prom_result_t *r)
{
    const char *wl_label = ms_prom_preset_workload_label(&t->opts);
    char key[1024];

    if (r->reason != MS_PROM_OK || r->type != MS_PROM_TYPE_VECTOR)
        return;
    for (size_t i = 0; i < r->nseries; i++) {
        const ms_prom_series_t *s = &r->series[i];
        const char *field = ms_prom_series_label(s, "ms_field");
        const char *container =
            kind == MS_PROM_KIND_CPU ? ms_prom_series_label(s, "container") : "";
        double v = s->points[0].v;
        size_t len, idx;
        fields_t *f;

        if (field == NULL || !isfinite(v) ||
            !group_key(key, sizeof key, kind, ms_prom_series_label(s, "namespace"),
                       ms_prom_series_label(s, wl_label), container, &len))
            continue;
        if (!index_get(&t->groups, key, len, &idx)) {
            idx = t->nfields;
            t->fields = ms_xgrow(t->fields, &t->capfields, idx + 1, sizeof *t->fields);
            memset(&t->fields[idx], 0, sizeof t->fields[idx]);
            index_put(&t->groups, key, idx);
            t->nfields++;
        }
        f = &t->fields[idx];
        if (strcmp(field, "usage") == 0)
            f->usage = v, f->have |= F_USAGE;
        else if (strcmp(field, "limit") == 0)
            f->limit = v, f->have |= F_LIMIT;
        else if (strcmp(field, "usage_all") == 0)
            f->usage_all = v, f->have |= F_USAGE_ALL;
        else if (strcmp(field, "pods") == 0)
            f->pods = v, f->have |= F_PODS;
        else if (strcmp(field, "age") == 0)
            f->age = v, f->have |= F_AGE;
    }
}

static const char *const no_data_detail[MS_PROM_KIND__COUNT] = {
    "no envoy_cluster_upstream_rq_active series of an inbound cluster for this workload",
    "no haproxy_server_current_sessions series for this workload",
    "no response_latency_ms_sum{direction=\"inbound\"} series for this workload",
    "no container_cpu_usage_seconds_total series of this container for this workload",
};

static const char *const no_limit_detail[MS_PROM_KIND__COUNT] = {
    "no envoy_cluster_circuit_breakers_default_remaining_rq series and no limit in the spec",
    "no haproxy_server_limit_sessions above 0 (server maxconn) and no limit in the spec",
    "linkerd exports no in-flight limit: set sidecarConcurrency.limit",
    "no kube_pod_container_resource_limits{resource=\"cpu\"} series for this container",
};

static void set(ms_sample_t *s, ms_prom_why_t *w, ms_prom_reason_t reason, double v,
                const char *detail)
{
    w->reason = reason;
    w->detail = detail ? detail : "";
    if (reason == MS_PROM_OK && !isfinite(v)) {
        w->reason = isnan(v) ? MS_PROM_NOT_A_NUMBER : MS_PROM_INFINITE;
        w->detail = ms_prom_reason_sentence(w->reason);
    }
    s->present = w->reason == MS_PROM_OK;
    s->value = s->present ? v : 0;
}

/* The value of a preset metric for one object, and the pods it covers. */
static void fill_preset(const ms_prom_tick_t *t, const ms_prom_object_t *o,
                        const ms_metric_spec_t *m, ms_sample_t *s, ms_pods_t *pods,
                        ms_prom_why_t *w)
{
    ms_prom_kind_t kind = m->source == MS_SOURCE_SIDECAR_CPU ? MS_PROM_KIND_CPU
                          : m->proxy == MS_PROXY_ENVOY       ? MS_PROM_KIND_ENVOY
                          : m->proxy == MS_PROXY_HAPROXY     ? MS_PROM_KIND_HAPROXY
                                                             : MS_PROM_KIND_LINKERD;
    const ms_prom_result_t *r;
    const fields_t *f;
    char key[1024];
    size_t len, idx;

    if (t->builtin[kind] < 0) {
        set(s, w, MS_PROM_NOT_CONFIGURED, 0, "the preset query was not built");
        return;
    }
    r = &t->queries[t->builtin[kind]].result;
    if (r->reason != MS_PROM_OK) {
        set(s, w, r->reason, 0, r->message);
        return;
    }
    if (r->type != MS_PROM_TYPE_VECTOR) {
        set(s, w, MS_PROM_WRONG_TYPE, 0, "the preset query did not return a vector");
        return;
    }
    if (!group_key(key, sizeof key, kind, o->namespace_name, o->workload ? o->workload : o->name,
                   kind == MS_PROM_KIND_CPU ? m->container : "", &len) ||
        !index_get(&t->groups, key, len, &idx) || !((f = &t->fields[idx])->have & F_PODS) ||
        f->pods <= 0 || !(f->have & F_USAGE_ALL)) {
        set(s, w, MS_PROM_NO_DATA, 0, no_data_detail[kind]);
        return;
    }
    if (t->opts.max_age > 0 && (f->have & F_AGE) && f->age > t->opts.max_age) {
        set(s, w, MS_PROM_STALE, 0,
            "the newest sample of some pod is older than the staleness limit");
        return;
    }
    /* A usage or limit below 0 is a broken exporter, not a demand. */
    if (f->usage_all < 0 || ((f->have & F_USAGE) && f->usage < 0) ||
        ((f->have & F_LIMIT) && f->limit < 0)) {
        set(s, w, MS_PROM_MALFORMED, 0,
            "the exporter reported a negative usage or limit for this workload");
        return;
    }
    switch (m->target_type) {
    case MS_TARGET_UTILIZATION:
        /* Percent of the limit: the spec's per-pod limit, else the exported one. */
        if (m->has_limit && m->source == MS_SOURCE_SIDECAR_CONCURRENCY) {
            if (m->limit <= 0)
                set(s, w, MS_PROM_NO_LIMIT, 0, "the spec limit is not positive");
            else
                set(s, w, MS_PROM_OK, 100.0 * f->usage_all / (m->limit * f->pods), NULL);
        } else if ((f->have & F_USAGE) && (f->have & F_LIMIT) && f->limit > 0) {
            set(s, w, MS_PROM_OK, 100.0 * f->usage / f->limit, NULL);
        } else {
            set(s, w, MS_PROM_NO_LIMIT, 0, no_limit_detail[kind]);
        }
        break;
    case MS_TARGET_AVERAGE_VALUE:
        set(s, w, MS_PROM_OK, f->usage_all, NULL); /* the total; the engine divides */
        break;
    default:
        set(s, w, MS_PROM_OK, f->usage_all / f->pods, NULL); /* per pod */
        break;
    }
    /* The pods that reported (f->pods > 0 here; no real count passes int32). */
    pods->known = s->present;
    pods->count = f->pods < INT32_MAX ? (int32_t)f->pods : INT32_MAX;
}

static void fill_user(const ms_prom_tick_t *t, int32_t plan, ms_sample_t *s, ms_prom_why_t *w)
{
    if (plan == PLAN_NONE) {
        set(s, w, MS_PROM_NOT_CONFIGURED, 0, ms_prom_reason_sentence(MS_PROM_NOT_CONFIGURED));
    } else if (plan == PLAN_OVER_CAP) {
        set(s, w, MS_PROM_OVER_SHARE, 0,
            "not sent: this object asks for more distinct user queries than a round runs per "
            "object (" STRINGIFY(MS_PROM_USER_QUERIES_PER_OBJECT) "; its guardrails go first)");
    } else if (plan <= PLAN_TEMPLATE_BASE) {
        set(s, w, MS_PROM_TEMPLATE, 0, t->details[(size_t)((int64_t)PLAN_TEMPLATE_BASE - plan)]);
    } else {
        const answer_t *a = &t->answers[plan];
        set(s, w, a->reason, a->value, a->detail);
    }
}

static void fill_object(const ms_prom_tick_t *t, const ms_prom_object_t *o, const int32_t *plan,
                        ms_prom_object_obs_t *out)
{
    const ms_spec_t *s = o->spec;
    ms_observation_t *obs = &out->obs;

    memset(out, 0, sizeof *out);
    ms_observation_init(obs);
    for (size_t i = 0; i < MS_MAX_METRICS; i++) {
        const char *none = ms_prom_reason_sentence(MS_PROM_NOT_CONFIGURED);
        out->metrics[i] = (ms_prom_why_t){MS_PROM_NOT_CONFIGURED, none};
        out->saturation_admitted[i] = out->saturation_rejected[i] = out->metrics[i];
        if (i < MS_MAX_DOWNSTREAMS)
            out->downstream_usage[i] = out->downstream_limit[i] = out->metrics[i];
        out->retry_share = out->metrics[i];
    }
    if (plan == NULL) /* not an object of the last run: nothing was asked for it */
        return;
    for (size_t i = 0; i < s->nmetrics && i < MS_MAX_METRICS; i++) {
        const ms_metric_spec_t *m = &s->metrics[i];
        if (m->source == MS_SOURCE_PROMETHEUS)
            fill_user(t, plan[SLOT_METRIC(i)], &obs->metrics[i], &out->metrics[i]);
        else
            fill_preset(t, o, m, &obs->metrics[i], &obs->metric_pods[i], &out->metrics[i]);
        fill_user(t, plan[SLOT_SAT_ADMITTED(i)], &obs->saturation[i].admitted,
                  &out->saturation_admitted[i]);
        fill_user(t, plan[SLOT_SAT_REJECTED(i)], &obs->saturation[i].rejected,
                  &out->saturation_rejected[i]);
    }
    for (size_t d = 0; d < s->ndownstreams && d < MS_MAX_DOWNSTREAMS; d++) {
        fill_user(t, plan[SLOT_DS_USAGE(d)], &obs->downstreams[d].usage, &out->downstream_usage[d]);
        fill_user(t, plan[SLOT_DS_LIMIT(d)], &obs->downstreams[d].limit, &out->downstream_limit[d]);
    }
    fill_user(t, plan[SLOT_RETRY], &obs->retry_share, &out->retry_share);
    /* A share outside [0, 1] is a broken query, not a storm: the engine would
     * multiply demand by a negative 1 - share. Offline decide refuses it too. */
    if (obs->retry_share.present && !(obs->retry_share.value >= 0 && obs->retry_share.value <= 1))
        set(&obs->retry_share, &out->retry_share, MS_PROM_MALFORMED, 0,
            "the retry share is outside [0, 1]; it is a share of attempts (retries / attempts)");
}

typedef struct {
    ms_prom_client_t *client;
    const ms_prom_run_options_t *bounds;
    const ms_prom_tick_t *tick;
} client_run_t;

static ms_err_t run_client(void *ctx, ms_prom_query_t *queries, size_t n)
{
    client_run_t *r = ctx;
    ms_prom_run_options_t o = {0};

    if (r->bounds != NULL)
        o = *r->bounds;
    o.max_user_bytes = r->tick->user_bytes;
    return ms_prom_run_bounded(r->client, queries, n, &o);
}

ms_err_t ms_prom_tick_run(ms_prom_tick_t *t, ms_prom_client_t *client, const ms_prom_object_t *objs,
                          size_t n, ms_prom_object_obs_t *out)
{
    return ms_prom_tick_run_bounded(t, client, objs, n, NULL, out);
}

ms_err_t ms_prom_tick_run_bounded(ms_prom_tick_t *t, ms_prom_client_t *client,
                                  const ms_prom_object_t *objs, size_t n,
                                  const ms_prom_run_options_t *bounds, ms_prom_object_obs_t *out)
{
    client_run_t r = {client, bounds, t};
    ms_prom_round_limits_t l = {0};

    ms_prom_client_limits(client, &l.slots, &l.max_body);
    if (bounds != NULL && bounds->deadline > 0)
        l.seconds = fmax(bounds->deadline - ms_clock_monotonic(), 0.001);
    if (bounds != NULL)
        l.max_bytes = bounds->max_total_bytes;
    ms_prom_tick_set_round(t, &l);
    return ms_prom_tick_run_with(t, run_client, &r, objs, n, out);
}

/* What is left of an answer once digested: its reason, type and message.
 * The series go (the groups and answers hold what objects read), so a tick
 * holds a few bytes per object between its run and its last reader, not the
 * answers. */
static void digested(ms_prom_result_t *r)
{
    ms_prom_reason_t reason = r->reason;
    ms_prom_type_t type = r->type;
    long status = r->http_status;
    double seconds = r->seconds;
    size_t bytes = r->bytes;
    char message[sizeof r->message];

    memcpy(message, r->message, sizeof message);
    ms_prom_result_cleanup(r);
    r->reason = reason;
    r->type = type;
    r->http_status = status;
    r->seconds = seconds;
    r->bytes = bytes;
    memcpy(r->message, message, sizeof message);
}

/* The answer of the preset query of a kind grows with the workloads it
 * covers: five series of a few hundred bytes each. */
#define PRESET_BYTES_PER_OBJECT 4096u

static void plan_presets(ms_prom_tick_t *t)
{
    for (int k = 0; k < MS_PROM_KIND__COUNT; k++) {
        ms_prom_preset_scope_t scope = {t->container_list, t->ncontainers, t->namespace_list,
                                        t->nnamespaces};
        char *text = NULL;
        char why[MS_ERRBUF_SIZE];
        size_t q, covered;

        if (t->kind_objects[k] == 0)
            continue;
        if (ms_prom_preset_query((ms_prom_kind_t)k, &t->opts, &scope, &text, why, sizeof why) !=
            MS_OK) {
            MS_LOG_ERROR("preset query", MS_S("kind", ms_prom_kind_name((ms_prom_kind_t)k)),
                         MS_S("detail", why));
            continue;
        }
        q = add_query(t, text, NO_OWNER);
        covered = t->kind_objects[k] > t->opts.answer_workloads ? t->kind_objects[k]
                                                                : t->opts.answer_workloads;
        t->queries[q].max_bytes = covered < SIZE_MAX / PRESET_BYTES_PER_OBJECT
                                      ? covered * PRESET_BYTES_PER_OBJECT
                                      : SIZE_MAX;
        t->queries[q].preset = true;
        t->builtin[k] = (int)q;
        t->stats.builtin_queries++;
    }
}

/* ---- fair shares ---- */

typedef struct {
    size_t turn, lane, index;
} send_key_t;

static int by_turn(const void *a, const void *b)
{
    const send_key_t *x = a, *y = b;

    if (x->turn != y->turn)
        return x->turn < y->turn ? -1 : 1;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The send order: the presets first, then the user queries round-robin
 * across namespaces and, within one, across its objects (turn k of a
 * namespace is query k / objects of its object k % objects). The five
 * per-query arrays and every plan move with it. */
static void order_queries(ms_prom_tick_t *t)
{
    size_t n = t->nqueries;
    send_key_t *keys;
    size_t *newpos, *owner, *rank;
    ms_prom_query_t *queries;
    char **texts;

    if (n == 0)
        return;
    keys = ms_xmalloc(n * sizeof *keys);
    newpos = ms_xmalloc(n * sizeof *newpos);
    queries = ms_xmalloc(n * sizeof *queries);
    texts = ms_xmalloc(n * sizeof *texts);
    owner = ms_xmalloc(n * sizeof *owner);
    rank = ms_xmalloc(n * sizeof *rank);
    for (size_t q = 0; q < n; q++) {
        const owner_t *w = t->owner[q] == NO_OWNER ? NULL : &t->owners[t->owner[q]];
        keys[q] = w == NULL ? (send_key_t){0, 0, q}
                            : (send_key_t){1 + t->rank[q] * t->lanes[w->lane].objects + w->lane_pos,
                                           w->lane, q};
    }
    qsort(keys, n, sizeof *keys, by_turn);
    for (size_t i = 0; i < n; i++) {
        size_t q = keys[i].index;
        newpos[q] = i;
        queries[i] = t->queries[q];
        texts[i] = t->texts[q];
        owner[i] = t->owner[q];
        rank[i] = t->rank[q];
    }
    memcpy(t->queries, queries, n * sizeof *queries);
    memcpy(t->texts, texts, n * sizeof *texts);
    memcpy(t->owner, owner, n * sizeof *owner);
    memcpy(t->rank, rank, n * sizeof *rank);
    for (size_t i = 0; i < t->nplanned * NSLOTS; i++)
        if (t->plan[i] >= 0)
            t->plan[i] = (int32_t)newpos[t->plan[i]];
    for (int k = 0; k < MS_PROM_KIND__COUNT; k++)
        if (t->builtin[k] >= 0)
            t->builtin[k] = (int)newpos[t->builtin[k]];
    ms_strmap_cleanup(&t->dedup); /* its indexes are the old ones */
    ms_strmap_init(&t->dedup);
    free(keys);
    free(newpos);
    free(queries);
    free(texts);
    free(owner);
    free(rank);
}

static size_t slots_of(const ms_prom_round_limits_t *l)
{
    return l->slots ? l->slots : 8;
}

/* A time share of at least this part of the round is left to the round's
 * deadline: the two would race, and the deadline names the cause. */
#define ROUND_SHARE_MAX 0.95

/* An object's share of the round's query time (slot-seconds); 0: none. */
static double object_seconds(const ms_prom_tick_t *t, const owner_t *w)
{
    if (t->limits.seconds <= 0)
        return 0;
    return (double)slots_of(&t->limits) * t->limits.seconds / (double)t->nlanes /
           (double)t->lanes[w->lane].objects;
}

/* An object's share of the user queries' bytes; 0: none. */
static size_t object_bytes(const ms_prom_tick_t *t, const owner_t *w)
{
    if (t->user_bytes == 0)
        return 0;
    return t->user_bytes / t->nlanes / t->lanes[w->lane].objects;
}

/* The presets' reserve, the user queries' bytes, and each user query's
 * shares and group (its namespace's lane + 1). */
static void share_out(ms_prom_tick_t *t)
{
    size_t reserve = 0, max_body = t->limits.max_body ? t->limits.max_body : 1u << 20;

    if (t->limits.max_bytes > 0) {
        for (size_t q = 0; q < t->nqueries; q++)
            if (t->owner[q] == NO_OWNER)
                reserve += t->queries[q].max_bytes > max_body ? t->queries[q].max_bytes : max_body;
        if (reserve > t->limits.max_bytes / MS_PROM_PRESET_RESERVE_DIVISOR)
            reserve = t->limits.max_bytes / MS_PROM_PRESET_RESERVE_DIVISOR;
        t->user_bytes = t->limits.max_bytes - reserve;
    }
    for (size_t q = 0; q < t->nqueries; q++) {
        const owner_t *w;
        double seconds, floor_seconds;
        size_t bytes;

        if (t->owner[q] == NO_OWNER)
            continue;
        w = &t->owners[t->owner[q]];
        t->queries[q].group = w->lane + 1;
        /* A share as long as the round is no limit of its own: the round's
         * deadline ends such a query, and says so. */
        if ((seconds = object_seconds(t, w)) > 0) {
            floor_seconds = fmin(MS_PROM_MIN_QUERY_SECONDS, t->limits.seconds);
            seconds = fmax(seconds / (double)w->owned, floor_seconds);
            if (seconds < t->limits.seconds * ROUND_SHARE_MAX)
                t->queries[q].share_seconds = seconds;
        }
        if ((bytes = object_bytes(t, w)) > 0) {
            bytes /= w->owned;
            t->queries[q].share_bytes =
                bytes > MS_PROM_MIN_ANSWER_BYTES ? bytes : MS_PROM_MIN_ANSWER_BYTES;
        }
    }
}

/* The detail of a user query stopped at its share: which share, how it was
 * split, and the one this query had. */
static void name_the_share(ms_prom_tick_t *t, size_t q, char *out, size_t cap)
{
    const owner_t *w = &t->owners[t->owner[q]];
    const lane_t *l = &t->lanes[w->lane];
    const ms_prom_query_t *qq = &t->queries[q];
    char each[48];

    if (w->owned == 1)
        snprintf(each, sizeof each, "its one query");
    else
        snprintf(each, sizeof each, "each of its %zu queries", w->owned);
    if (strncmp(qq->result.message, "the answer", 10) == 0)
        snprintf(out, cap,
                 "this object's queries share %zu bytes of the round's answers (%zu for user "
                 "queries / %zu namespace%s / %zu objects of %s): %zu for %s; this answer "
                 "was larger",
                 object_bytes(t, w), t->user_bytes, t->nlanes, t->nlanes == 1 ? "" : "s",
                 l->objects, l->name, qq->share_bytes, each);
    else
        snprintf(out, cap,
                 "this object's queries share %.1f s of the round's query time (%zu slots x "
                 "%.1f s / %zu namespace%s / %zu objects of %s): %.1f s for %s; this one "
                 "ran longer",
                 object_seconds(t, w), slots_of(&t->limits), t->limits.seconds, t->nlanes,
                 t->nlanes == 1 ? "" : "s", l->objects, l->name, qq->share_seconds, each);
}

/* What each namespace's user queries cost. */
static void count_costs(ms_prom_tick_t *t)
{
    for (size_t q = 0; q < t->nqueries; q++) {
        lane_t *l;
        if (t->owner[q] == NO_OWNER)
            continue;
        l = &t->lanes[t->owners[t->owner[q]].lane];
        l->seconds += t->queries[q].result.seconds;
        l->bytes += t->queries[q].result.bytes;
        l->over_share += t->queries[q].result.reason == MS_PROM_OVER_SHARE;
    }
    for (size_t i = 0; i < t->nplanned; i++)
        if (t->owners[i].owned > 0) /* an object over the cap owns the first ones */
            t->lanes[t->owners[i].lane].over_share += t->owners[i].over_cap;
}

/* Turn each answer into what objects read: a user query's one number, a
 * preset's values per workload. */
static void digest(ms_prom_tick_t *t)
{
    for (size_t q = 0; q < t->nqueries; q++) {
        answer_t *a = &t->answers[q];
        char msg[MS_ERRBUF_SIZE];
        bool builtin = false;

        for (int k = 0; k < MS_PROM_KIND__COUNT; k++)
            builtin = builtin || t->builtin[k] == (int)q;
        if (t->queries[q].result.reason != MS_PROM_OK)
            t->stats.failed_queries++;
        if (t->queries[q].result.nwarnings > 0)
            MS_LOG_WARN("prometheus warning", MS_S("warning", t->queries[q].result.warning));
        if (builtin)
            continue; /* split per workload below, not one number */
        a->value = 0;
        a->reason = ms_prom_result_number(&t->queries[q].result, 0, t->opts.max_age, &a->value, msg,
                                          sizeof msg);
        a->detail = "";
        if (a->reason == MS_PROM_OVER_SHARE && t->owner[q] != NO_OWNER)
            name_the_share(t, q, msg, sizeof msg);
        if (a->reason != MS_PROM_OK) {
            size_t idx = keep_detail(t, msg); /* may move t->details */
            a->detail = t->details[idx];
        }
    }
    for (int k = 0; k < MS_PROM_KIND__COUNT; k++)
        if (t->builtin[k] >= 0)
            take_builtin(t, (ms_prom_kind_t)k, &t->queries[t->builtin[k]].result);
    count_costs(t);
    for (size_t q = 0; q < t->nqueries; q++)
        digested(&t->queries[q].result);
}

ms_err_t ms_prom_tick_run_with(ms_prom_tick_t *t, ms_prom_runner_fn run, void *ctx,
                               const ms_prom_object_t *objs, size_t n, ms_prom_object_obs_t *out)
{
    double started = ms_clock_monotonic();
    ms_err_t err;

    reset(t);
    memset(&t->stats, 0, sizeof t->stats);
    t->stats.objects = n;
    if (n > SIZE_MAX / NSLOTS / sizeof *t->plan)
        return MS_ERR_RANGE;
    t->plan = ms_xmalloc((n ? n : 1) * NSLOTS * sizeof *t->plan);
    t->owners = ms_xcalloc(n ? n : 1, sizeof *t->owners);
    t->nplanned = n;

    /* Plan every object (user queries deduplicated as they come), then one
     * query per preset kind in use; then the presets first, the user
     * queries round-robin, each with its owner's shares. */
    for (size_t i = 0; i < n; i++)
        plan_object(t, i, &objs[i], t->plan + i * NSLOTS);
    plan_presets(t);
    order_queries(t);
    share_out(t);
    err = run(ctx, t->queries, t->nqueries);
    t->stats.queries_sent = t->nqueries;
    digest(t);
    for (size_t i = 0; out != NULL && i < n; i++)
        fill_object(t, &objs[i], t->plan + i * NSLOTS, &out[i]);
    t->ncontainers = 0; /* the names were borrowed from the specs and objects */
    t->nnamespaces = 0;
    t->stats.seconds = ms_clock_monotonic() - started;
    return err;
}

void ms_prom_tick_observe(const ms_prom_tick_t *t, const ms_prom_object_t *objs, size_t i,
                          ms_prom_object_obs_t *out)
{
    fill_object(t, &objs[i], i < t->nplanned ? t->plan + i * NSLOTS : NULL, out);
}

void ms_prom_tick_stats(const ms_prom_tick_t *t, ms_prom_tick_stats_t *out)
{
    *out = t->stats;
}

static bool costs_more(const lane_t *a, const lane_t *b)
{
    return a->seconds != b->seconds ? a->seconds > b->seconds : a->bytes > b->bytes;
}

size_t ms_prom_tick_costs(const ms_prom_tick_t *t, ms_prom_namespace_cost_t *out, size_t max)
{
    size_t n = 0;

    /* Insertion into the top max (max is small). */
    for (size_t i = 0; i < t->nlanes; i++) {
        const lane_t *l = &t->lanes[i];
        size_t at = n;
        while (at > 0 && costs_more(l, &t->lanes[out[at - 1].objects]))
            at--;
        if (at >= max)
            continue;
        if (n < max)
            n++;
        memmove(&out[at + 1], &out[at], (n - 1 - at) * sizeof *out);
        out[at].objects = i; /* the lane's index until the loop below */
    }
    for (size_t i = 0; i < n; i++) {
        const lane_t *l = &t->lanes[out[i].objects];
        out[i] = (ms_prom_namespace_cost_t){l->name,       l->objects, l->queries,
                                            l->over_share, l->seconds, l->bytes};
    }
    return n;
}
