/*
 * status.c - build, compare, patch and read back the MeshAutoscaler status.
 *
 * The status is rebuilt in full on every decided sync and compared with the
 * previous one; only times are carried over (lastTransitionTime while a
 * condition's status holds, lastDecision.time while the decision holds,
 * lastScaleTime until the next scale), so an unchanged sync compares equal
 * and writes nothing.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/buf.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/status.h"
#include "meshscaler/xalloc.h"

/* ---- the condition table ---- */

static const char *const type_names[] = {
#define MS__COND_TYPE_NAME(name) #name,
    MS_STATUS_CONDITION_TYPES(MS__COND_TYPE_NAME)
#undef MS__COND_TYPE_NAME
};

static const struct {
    ms_condition_type_t type;
    const char *status, *reason, *sentence;
} reasons[] = {
#define MS__COND_REASON_ROW(id, type, status, reason, sentence)                                    \
    {MS_COND_##type, status, reason, sentence},
    MS_STATUS_CONDITION_MAP(MS__COND_REASON_ROW)
#undef MS__COND_REASON_ROW
};

const char *ms_condition_type_name(ms_condition_type_t type)
{
    return (unsigned)type < MS_COND__COUNT ? type_names[type] : "";
}

static ms_condition_reason_t checked(ms_condition_reason_t r)
{
    return (unsigned)r < MS_CR__COUNT ? r : MS_CR_ABLE_READY;
}

ms_condition_type_t ms_condition_reason_type(ms_condition_reason_t r)
{
    return reasons[checked(r)].type;
}

const char *ms_condition_reason_status(ms_condition_reason_t r)
{
    return reasons[checked(r)].status;
}

const char *ms_condition_reason_name(ms_condition_reason_t r)
{
    return reasons[checked(r)].reason;
}

const char *ms_condition_reason_sentence(ms_condition_reason_t r)
{
    return reasons[checked(r)].sentence;
}

/* ---- small helpers ---- */

/* cJSON fails only when memory runs out. */
static cJSON *must(cJSON *item)
{
    return ms_xcheck(item, "status");
}

static void add(cJSON *obj, const char *key, cJSON *item)
{
    if (!cJSON_AddItemToObject(obj, key, must(item)))
        ms_oom("status");
}

static void add_string(cJSON *obj, const char *key, const char *s)
{
    add(obj, key, cJSON_CreateString(s));
}

static void add_number(cJSON *obj, const char *key, double v)
{
    add(obj, key, cJSON_CreateNumber(v));
}

static void replace(cJSON *obj, const char *key, cJSON *item)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, must(item));
    else
        add(obj, key, item);
}

static const char *member_string(const cJSON *obj, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* Rounded to milli-units, as Kubernetes quantities are: float noise below
 * that would otherwise rewrite the status on every sync. */
static double milli(double v)
{
    return round(v * 1000.0) / 1000.0;
}

/* A number for people: at most two decimals, no trailing zeros. */
static void put_number(ms_fixbuf_t *o, double v)
{
    char tmp[64];
    size_t n;

    if (!isfinite(v) || fabs(v) >= 1e15) {
        ms_fixbuf_appendf(o, "%.3g", v);
        return;
    }
    snprintf(tmp, sizeof tmp, "%.2f", v);
    n = strlen(tmp);
    while (n > 0 && tmp[n - 1] == '0')
        tmp[--n] = '\0';
    if (n > 0 && tmp[n - 1] == '.')
        tmp[--n] = '\0';
    if (strcmp(tmp, "-0") == 0)
        snprintf(tmp, sizeof tmp, "0");
    ms_fixbuf_appendf(o, "%s", tmp);
}

/* ---- targets ---- */

#define TARGETS_SHOWN 2 /* kubectl get hpa shows two, then "+ N more..." */

size_t ms_status_targets(const ms_spec_t *spec, const ms_decision_t *d, char *buf, size_t len)
{
    ms_fixbuf_t o;
    size_t n = spec->nmetrics;

    ms_fixbuf_init(&o, buf, len);
    for (size_t i = 0; i < n && i < TARGETS_SHOWN; i++) {
        const ms_metric_spec_t *m = &spec->metrics[i];
        ms_sample_t v = i < d->nmetrics ? d->metrics[i].value : (ms_sample_t){false, 0};

        ms_fixbuf_appendf(&o, "%s%s: ", i ? ", " : "", m->name);
        switch (m->target_type) {
        case MS_TARGET_UTILIZATION:
            if (v.present)
                ms_fixbuf_appendf(&o, "%.0f%%", round(v.value));
            else
                ms_fixbuf_appendf(&o, "<unknown>");
            ms_fixbuf_appendf(&o, "/");
            put_number(&o, m->target);
            ms_fixbuf_appendf(&o, "%%");
            break;
        case MS_TARGET_AVERAGE_VALUE:
            /* The metric is a total; the target is per replica, so show the
             * average per replica as kubectl does. */
            if (v.present && d->current_replicas > 0)
                put_number(&o, v.value / d->current_replicas);
            else
                ms_fixbuf_appendf(&o, "<unknown>");
            ms_fixbuf_appendf(&o, "/");
            put_number(&o, m->target);
            break;
        default:
            if (v.present)
                put_number(&o, v.value);
            else
                ms_fixbuf_appendf(&o, "<unknown>");
            ms_fixbuf_appendf(&o, "/");
            put_number(&o, m->target);
            break;
        }
    }
    if (n > TARGETS_SHOWN)
        ms_fixbuf_appendf(&o, " + %zu more...", n - TARGETS_SHOWN);
    if (n == 0)
        ms_fixbuf_appendf(&o, "<none>");
    return o.used;
}

/* ---- conditions ---- */

typedef struct {
    bool set;
    ms_condition_reason_t reason;
    char detail[512];
} cond_t;

static void cond(cond_t *c, ms_condition_reason_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cond(cond_t *c, ms_condition_reason_t reason, const char *fmt, ...)
{
    va_list ap;

    c->set = true;
    c->reason = reason;
    c->detail[0] = '\0';
    if (fmt == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

/* Detail text, "" for NULL; used with "%s". */
static const char *text(const char *s)
{
    return s ? s : "";
}

static void able_to_scale(const ms_status_input_t *in, cond_t *c)
{
    const ms_decision_t *d = in->decision;

    if (in->conflict)
        cond(c, MS_CR_ABLE_CONFLICT, "%s", text(in->problem));
    else if (in->paused)
        cond(c, MS_CR_ABLE_PAUSED, "%s", text(in->pause_note));
    else if (in->write_failed)
        cond(c, MS_CR_ABLE_FAILED_UPDATE, "%s", text(in->problem));
    else if (in->scaled)
        cond(c, MS_CR_ABLE_RESCALED, "from %d to %d", (int)d->current_replicas, (int)in->desired);
    else
        cond(c, MS_CR_ABLE_READY, NULL);
}

static void scaling_active(const ms_decision_t *d, const char *missing, cond_t *c)
{
    bool all_missing = d->nmetrics > 0 && d->metrics_missing == d->nmetrics;
    /* HPA's FailedGetMetrics names the error; so does this one. */
    const char *sep = missing != NULL && missing[0] ? " (" : "";
    const char *end = sep[0] ? ")" : "";

    if (d->reason == MS_REASON_ScalingDisabled)
        cond(c, MS_CR_ACTIVE_DISABLED, NULL);
    else if (d->fallback_used)
        cond(c, MS_CR_ACTIVE_FAILED_METRICS,
             "every metric missing for %u consecutive syncs, the fallback of %d replicas applies",
             d->failures, (int)d->recommendation);
    else if (all_missing || d->reason == MS_REASON_MetricsUnavailable)
        cond(c, MS_CR_ACTIVE_FAILED_METRICS, "%zu of %zu metrics missing%s%s%s", d->metrics_missing,
             d->nmetrics, sep, sep[0] ? missing : "", end);
    else if (d->metrics_missing > 0)
        cond(c, MS_CR_ACTIVE_VALID, "%zu of %zu metrics missing%s%s%s", d->metrics_missing,
             d->nmetrics, sep, sep[0] ? missing : "", end);
    else
        cond(c, MS_CR_ACTIVE_VALID, NULL);
}

static void scaling_limited(const ms_spec_t *spec, const ms_decision_t *d, cond_t *c)
{
    ms_reason_t r = d->reason;

    if (r == MS_REASON_AboveMaxReplicas || d->rate_reason == MS_REASON_TooManyReplicas)
        cond(c, MS_CR_LIMITED_TOO_MANY, "maxReplicas is %d", (int)spec->max_replicas);
    else if (r == MS_REASON_BelowMinReplicas || d->rate_reason == MS_REASON_TooFewReplicas)
        cond(c, MS_CR_LIMITED_TOO_FEW, "minReplicas is %d", (int)spec->min_replicas);
    else if (d->rate_reason == MS_REASON_ScaleUpLimit)
        cond(c, MS_CR_LIMITED_UP_RATE, "limited to %d", (int)d->rate_limited_value);
    else if (d->rate_reason == MS_REASON_ScaleDownLimit)
        cond(c, MS_CR_LIMITED_DOWN_RATE, "limited to %d", (int)d->rate_limited_value);
    else
        cond(c, MS_CR_LIMITED_NO, NULL);
}

static void downstream_limited(const ms_spec_t *spec, const ms_decision_t *d, cond_t *c)
{
    ms_fixbuf_t o;

    if (spec->ndownstreams == 0) {
        cond(c, MS_CR_DOWNSTREAM_NONE, NULL);
        return;
    }
    bool shared = false;
    char line[MS_NAME_MAX + 128];

    for (size_t i = 0; i < d->nbudgets; i++)
        shared = shared || d->budgets[i].bound;
    cond(c, d->downstream_bound || shared ? MS_CR_DOWNSTREAM_LIMIT : MS_CR_DOWNSTREAM_OK, NULL);
    ms_fixbuf_init(&o, c->detail, sizeof c->detail);
    /* §2b: a shared budget's split, as the explanation says it. */
    for (size_t i = 0; i < d->nbudgets; i++)
        if (ms_decision_budget(spec, d, i, line, sizeof line))
            ms_fixbuf_appendf(&o, "%s%s", o.used ? ", " : "", line);
    for (size_t i = 0; i < d->ndownstreams && i < spec->ndownstreams; i++) {
        const ms_downstream_result_t *r = &d->downstreams[i];

        char reserve[96];

        if (r->bound)
            ms_fixbuf_appendf(&o, "%s%s allows at most %d replicas", o.used ? ", " : "",
                              spec->downstreams[i].name, (int)r->allowed);
        if (r->bound && ms_decision_reservation(d, i, reserve, sizeof reserve))
            ms_fixbuf_appendf(&o, " (%s)", reserve);
        else if (!r->observed)
            ms_fixbuf_appendf(&o, "%s%s not observed", o.used ? ", " : "",
                              spec->downstreams[i].name);
    }
}

static void retry_storm(const ms_spec_t *spec, const ms_decision_t *d, cond_t *c)
{
    if (!spec->retry_storm.enabled)
        cond(c, MS_CR_STORM_NONE, NULL);
    else if (d->retry_storm && d->held_by_storm)
        cond(c, MS_CR_STORM_YES, "the replica count is held at %d", (int)d->current_replicas);
    else if (d->retry_storm)
        cond(c, MS_CR_STORM_YES, NULL);
    else
        cond(c, MS_CR_STORM_NO, NULL);
}

static void saturated(const ms_spec_t *spec, const ms_decision_t *d, const char *held, cond_t *c)
{
    bool configured = false;
    ms_fixbuf_t o;

    for (size_t i = 0; i < spec->nmetrics; i++)
        configured = configured || spec->saturation[i].enabled;
    if (!configured) {
        cond(c, MS_CR_SATURATED_NONE, NULL);
        return;
    }
    if (!d->saturated && held != NULL) {
        cond(c, MS_CR_SATURATED_SETTLING, "%s", held);
        return;
    }
    cond(c, d->saturated ? MS_CR_SATURATED_YES : MS_CR_SATURATED_NO, NULL);
    ms_fixbuf_init(&o, c->detail, sizeof c->detail);
    for (size_t i = 0; i < d->nmetrics && d->saturated; i++)
        if (d->metrics[i].saturation_applied)
            ms_fixbuf_appendf(&o, "%s%s", o.used ? ", " : "corrected: ", spec->metrics[i].name);
}

static const cJSON *find_condition(const cJSON *conditions, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, conditions)
    {
        const char *t = member_string(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

/* One metav1.Condition; lastTransitionTime from prev while the status holds. */
static cJSON *make_condition(const cond_t *c, const cJSON *prev_conditions, long long generation,
                             const char *now)
{
    ms_condition_reason_t r = c->reason;
    const char *type = ms_condition_type_name(ms_condition_reason_type(r));
    const char *status = ms_condition_reason_status(r);
    const cJSON *prev = find_condition(prev_conditions, type);
    const char *since = now;
    char message[1024];
    cJSON *obj = must(cJSON_CreateObject());

    if (prev) {
        const char *prev_status = member_string(prev, "status");
        const char *prev_time = member_string(prev, "lastTransitionTime");
        if (prev_status && prev_time && strcmp(prev_status, status) == 0)
            since = prev_time;
    }
    if (c->detail[0])
        snprintf(message, sizeof message, "%s: %s", ms_condition_reason_sentence(r), c->detail);
    else
        snprintf(message, sizeof message, "%s", ms_condition_reason_sentence(r));
    add_string(obj, "type", type);
    add_string(obj, "status", status);
    add_number(obj, "observedGeneration", (double)generation);
    add_string(obj, "lastTransitionTime", since);
    add_string(obj, "reason", ms_condition_reason_name(r));
    add_string(obj, "message", message);
    return obj;
}

/* The conditions array: ours in table order (the ones set now, else the
 * previous ones of that type), then foreign types as they were. */
static cJSON *make_conditions(const cond_t *conds, const cJSON *prev_conditions,
                              long long generation, const char *now)
{
    cJSON *arr = must(cJSON_CreateArray());
    const cJSON *c;

    for (int t = 0; t < MS_COND__COUNT; t++) {
        cJSON *item = NULL;

        if (conds[t].set) {
            item = make_condition(&conds[t], prev_conditions, generation, now);
        } else {
            const cJSON *prev = find_condition(prev_conditions, type_names[t]);
            if (prev)
                item = must(cJSON_Duplicate(prev, true));
        }
        if (item)
            cJSON_AddItemToArray(arr, item);
    }
    cJSON_ArrayForEach(c, prev_conditions)
    {
        const char *type = member_string(c, "type");
        bool ours = false;

        for (int t = 0; t < MS_COND__COUNT && type; t++)
            ours = ours || strcmp(type, type_names[t]) == 0;
        if (type && !ours)
            cJSON_AddItemToArray(arr, must(cJSON_Duplicate(c, true)));
    }
    return arr;
}

/* ---- the decided status ---- */

static cJSON *nullable_number(bool present, double v)
{
    return present ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *current_metrics(const ms_spec_t *spec, const ms_decision_t *d)
{
    cJSON *arr = must(cJSON_CreateArray());

    for (size_t i = 0; i < spec->nmetrics; i++) {
        const ms_metric_result_t *m = i < d->nmetrics ? &d->metrics[i] : NULL;
        cJSON *obj = must(cJSON_CreateObject());
        bool has_value = m && m->value.present;
        bool has_effective = m && m->has_replicas && m->effective.present;

        add_string(obj, "name", spec->metrics[i].name);
        double value = has_value ? m->value.value : 0;
        /* Not evaluated (an early exit): the effective value is the value. */
        double effective = has_effective ? m->effective.value : value;

        add(obj, "value", nullable_number(has_value, milli(value)));
        add(obj, "effectiveValue", nullable_number(has_value, milli(effective)));
        add(obj, "replicas", nullable_number(m && m->has_replicas, m ? m->replicas : 0));
        cJSON_AddItemToArray(arr, obj);
    }
    return arr;
}

static bool same_number(const cJSON *item, bool present, double v)
{
    if (!present)
        return item == NULL || cJSON_IsNull(item);
    return cJSON_IsNumber(item) && item->valuedouble == v;
}

static cJSON *last_decision(const ms_status_input_t *in, const cJSON *prev)
{
    const ms_decision_t *d = in->decision;
    const char *reason = ms_reason_name(d->reason);
    char explained[2048];
    const char *message = in->message;
    const char *time = in->now;
    cJSON *obj = must(cJSON_CreateObject());

    if (message == NULL) {
        ms_decision_explain(in->spec, d, explained, sizeof explained);
        message = explained;
    }
    if (cJSON_IsObject(prev)) {
        const char *prev_time = member_string(prev, "time");
        const char *prev_reason = member_string(prev, "reason");
        const char *prev_message = member_string(prev, "message");

        if (prev_time && prev_reason && prev_message && strcmp(prev_reason, reason) == 0 &&
            strcmp(prev_message, message) == 0 &&
            same_number(cJSON_GetObjectItemCaseSensitive(prev, "desired"), true, in->desired) &&
            same_number(cJSON_GetObjectItemCaseSensitive(prev, "recommendation"),
                        d->has_recommendation, d->recommendation))
            time = prev_time;
    }
    add_string(obj, "time", time);
    add(obj, "recommendation", nullable_number(d->has_recommendation, d->recommendation));
    add_number(obj, "desired", in->desired);
    add_string(obj, "reason", reason);
    add_string(obj, "message", message);
    return obj;
}

static void add_reference(cJSON *status, const ms_spec_t *spec)
{
    char ref[256];

    if (spec == NULL || spec->target_kind == NULL || spec->target_name == NULL)
        return;
    snprintf(ref, sizeof ref, "%s/%s", spec->target_kind, spec->target_name);
    replace(status, "reference", cJSON_CreateString(ref));
}

/* The seven conditions of a decided sync, with their details. */
static void decided_conditions(const ms_status_input_t *in, cond_t conds[MS_COND__COUNT])
{
    const ms_spec_t *spec = in->spec;
    const ms_decision_t *d = in->decision;

    memset(conds, 0, MS_COND__COUNT * sizeof *conds);
    able_to_scale(in, &conds[MS_COND_AbleToScale]);
    scaling_active(d, in->missing, &conds[MS_COND_ScalingActive]);
    scaling_limited(spec, d, &conds[MS_COND_ScalingLimited]);
    downstream_limited(spec, d, &conds[MS_COND_DownstreamLimited]);
    retry_storm(spec, d, &conds[MS_COND_RetryStorm]);
    saturated(spec, d, in->saturation_held, &conds[MS_COND_Saturated]);
    cond(&conds[MS_COND_DryRun], in->dry_run || spec->dry_run ? MS_CR_DRYRUN_ON : MS_CR_DRYRUN_OFF,
         NULL);
}

void ms_status_condition_reasons(const ms_status_input_t *in,
                                 ms_condition_reason_t out[MS_COND__COUNT])
{
    cond_t conds[MS_COND__COUNT];

    decided_conditions(in, conds);
    for (size_t i = 0; i < MS_COND__COUNT; i++)
        out[i] = conds[i].reason;
}

/* Shadow mode beside an HPA: both desired counts, how often and by how much
 * they differed, who moved up first (compare.h). */
static cJSON *hpa_comparison(const ms_status_input_t *in)
{
    const ms_compare_t *c = in->hpa_compare;
    cJSON *o = must(cJSON_CreateObject());
    char since[40];

    ms_time_rfc3339(in->hpa_since, false, since, sizeof since);
    add_string(o, "hpa", in->hpa_name);
    add_number(o, "hpaDesiredReplicas", in->hpa_desired);
    add_string(o, "since", since);
    add_number(o, "syncs", (double)c->samples);
    add_number(o, "differingSyncs", (double)c->differing);
    add_number(o, "meanAbsoluteDifference", round(ms_compare_mean_difference(c) * 1000) / 1000);
    add_number(o, "maxDifference", c->max_difference);
    add_number(o, "meshscalerFirstUp", c->meshscaler_first);
    add_number(o, "hpaFirstUp", c->hpa_first);
    if (c->last_lead >= 0)
        add_number(o, "lastLeadSeconds", round(c->last_lead));
    if (c->leader != MS_COMPARE_NOBODY) {
        char start[40];
        ms_time_rfc3339(c->race_start, false, start, sizeof start);
        add_string(o, "leading", c->leader == MS_COMPARE_MESHSCALER ? "meshscaler" : "hpa");
        add_string(o, "leadingSince", start);
    }
    return o;
}

static cJSON *build_decided(const ms_status_input_t *in, const cJSON *prev)
{
    const ms_spec_t *spec = in->spec;
    const ms_decision_t *d = in->decision;
    const cJSON *prev_conditions = cJSON_GetObjectItemCaseSensitive(prev, "conditions");
    const char *prev_scale = member_string(prev, "lastScaleTime");
    cond_t conds[MS_COND__COUNT];
    cJSON *status = must(cJSON_CreateObject());
    char targets[1024];

    add_number(status, "observedGeneration", (double)in->generation);
    add_reference(status, spec);
    ms_status_targets(spec, d, targets, sizeof targets);
    add_string(status, "targets", targets);
    add_number(status, "currentReplicas", d->current_replicas);
    add_number(status, "desiredReplicas", in->desired);
    if (in->scaled)
        add_string(status, "lastScaleTime", in->now);
    else if (prev_scale)
        add_string(status, "lastScaleTime", prev_scale);
    add(status, "currentMetrics", current_metrics(spec, d));
    add(status, "lastDecision",
        last_decision(in, cJSON_GetObjectItemCaseSensitive(prev, "lastDecision")));

    decided_conditions(in, conds);
    add(status, "conditions", make_conditions(conds, prev_conditions, in->generation, in->now));
    if (in->hpa_name != NULL && in->hpa_compare != NULL)
        add(status, "hpaComparison", hpa_comparison(in));
    return status;
}

/* INVALID_SPEC and FAILED_GET_SCALE: the previous status with what this
 * sync learned on top. */
static cJSON *build_failed(const ms_status_input_t *in, const cJSON *prev)
{
    cJSON *status = prev ? must(cJSON_Duplicate(prev, true)) : must(cJSON_CreateObject());
    const cJSON *prev_conditions = cJSON_GetObjectItemCaseSensitive(prev, "conditions");
    cond_t conds[MS_COND__COUNT];

    memset(conds, 0, sizeof conds);
    replace(status, "observedGeneration", cJSON_CreateNumber((double)in->generation));
    add_reference(status, in->spec); /* a partial spec may still name its target */
    if (in->outcome == MS_STATUS_INVALID_SPEC) {
        cond(&conds[MS_COND_ScalingActive], MS_CR_ACTIVE_INVALID_SPEC, "%s", text(in->problem));
    } else {
        cond(&conds[MS_COND_AbleToScale], MS_CR_ABLE_FAILED_GET, "%s", text(in->problem));
        if (in->spec)
            cond(&conds[MS_COND_DryRun],
                 in->dry_run || in->spec->dry_run ? MS_CR_DRYRUN_ON : MS_CR_DRYRUN_OFF, NULL);
    }
    replace(status, "conditions", make_conditions(conds, prev_conditions, in->generation, in->now));
    return status;
}

/* ---- comparison ---- */

static bool nullish(const cJSON *x)
{
    return x == NULL || cJSON_IsNull(x);
}

static bool json_equal(const cJSON *a, const cJSON *b)
{
    const cJSON *c;

    if (nullish(a) || nullish(b))
        return nullish(a) && nullish(b);
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) {
        double scale = fmax(1.0, fmax(fabs(a->valuedouble), fabs(b->valuedouble)));
        return fabs(a->valuedouble - b->valuedouble) <= 1e-9 * scale;
    }
    if (cJSON_IsString(a) && cJSON_IsString(b))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsBool(a) && cJSON_IsBool(b))
        return cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!json_equal(x, y))
                return false;
        return x == NULL && y == NULL;
    }
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        cJSON_ArrayForEach(c, a)
        {
            if (!json_equal(c, cJSON_GetObjectItemCaseSensitive(b, c->string)))
                return false;
        }
        cJSON_ArrayForEach(c, b)
        {
            if (!nullish(c) && cJSON_GetObjectItemCaseSensitive(a, c->string) == NULL)
                return false;
        }
        return true;
    }
    return false;
}

/* ---- public ---- */

void ms_status_input_init(ms_status_input_t *in)
{
    memset(in, 0, sizeof *in);
}

ms_err_t ms_status_build(const ms_status_input_t *in, cJSON **out, bool *changed)
{
    const cJSON *prev = cJSON_IsObject(in->previous) ? in->previous : NULL;
    cJSON *status;

    *out = NULL;
    *changed = false;
    if (in->now == NULL)
        return MS_ERR_INVALID;
    switch (in->outcome) {
    case MS_STATUS_DECIDED:
        if (in->decision == NULL || in->spec == NULL)
            return MS_ERR_INVALID;
        status = build_decided(in, prev);
        break;
    case MS_STATUS_INVALID_SPEC:
    case MS_STATUS_FAILED_GET_SCALE:
        status = build_failed(in, prev);
        break;
    default:
        return MS_ERR_INVALID;
    }
    *changed = prev == NULL || !json_equal(prev, status);
    *out = status;
    return MS_OK;
}

/* Copy of `to` with null for every key of `from` it lacks, recursively
 * through objects present in both. */
static cJSON *patch_object(const cJSON *from, const cJSON *to)
{
    cJSON *patch = must(cJSON_CreateObject());
    const cJSON *c;

    cJSON_ArrayForEach(c, to)
    {
        const cJSON *old = cJSON_GetObjectItemCaseSensitive(from, c->string);
        if (cJSON_IsObject(c) && cJSON_IsObject(old))
            add(patch, c->string, patch_object(old, c));
        else
            add(patch, c->string, cJSON_Duplicate(c, true));
    }
    cJSON_ArrayForEach(c, from)
    {
        if (cJSON_GetObjectItemCaseSensitive(to, c->string) == NULL)
            add(patch, c->string, cJSON_CreateNull());
    }
    return patch;
}

cJSON *ms_status_merge_patch(const cJSON *previous, const cJSON *status)
{
    cJSON *body = must(cJSON_CreateObject());

    add(body, "status", patch_object(cJSON_IsObject(previous) ? previous : NULL, status));
    return body;
}

bool ms_status_restore_memory(const cJSON *previous, const ms_spec_t *spec, double now_wall,
                              double now_engine, int32_t current_replicas, ms_engine_memory_t *mem)
{
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(previous, "lastDecision");
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(last, "recommendation");
    const char *time = member_string(last, "time");
    double window = fmax(spec->scale_up.window_seconds, spec->scale_down.window_seconds);
    double wall, age;

    ms_engine_memory_init(mem);
    if (current_replicas < 0)
        return false; /* unknown: leave step 0 to the engine */
    ms_engine_memory_add_recommendation(mem, spec, now_engine, now_engine, current_replicas);
    if (!cJSON_IsNumber(rec) || time == NULL || !ms_time_parse_rfc3339(time, &wall))
        return false;
    if (!(rec->valuedouble >= 0 && rec->valuedouble <= INT32_MAX) ||
        rec->valuedouble != floor(rec->valuedouble))
        return false;
    age = now_wall - wall;
    if (age < 0)
        age = 0; /* a clock behind the writer's: take it as now */
    if (!(age < window))
        return false; /* no window can see it any more */
    ms_engine_memory_add_recommendation(mem, spec, now_engine, now_engine - age,
                                        (int32_t)rec->valuedouble);
    return true;
}
