/*
 * explain.c - a decision as one readable line: each metric's value,
 * effective value and ask, then what each later step did to the count.
 * This is what status.lastDecision.message, events and dry-run print.
 */
#include <stdarg.h>
#include <stdio.h>

#include "meshscaler/engine.h"

typedef struct {
    char *buf;
    size_t len;
    size_t used; /* what the whole text needs, even past len */
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;
    size_t room = o->used < o->len ? o->len - o->used : 0;

    va_start(ap, fmt);
    n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

/* Step 3's missing-pods rule: "(3 of 8 pods reported, 70 with the rest
 * counted busy)". */
static void explain_partial(const ms_decision_t *d, const ms_metric_result_t *m, out_t *o)
{
    put(o, " (%d of %d pods reported", (int)m->pods.count, (int)d->ready_replicas);
    if (m->ratio != 1.0)
        put(o, ", %.4g with the rest counted %s", m->partial_value,
            m->ratio < 1.0 ? "busy" : "idle");
    put(o, ")");
}

static void explain_metrics(const ms_spec_t *spec, const ms_decision_t *d, out_t *o)
{
    for (size_t i = 0; i < d->nmetrics; i++) {
        const ms_metric_result_t *m = &d->metrics[i];

        put(o, "%s%s ", i ? ", " : "", spec->metrics[i].name);
        if (!m->value.present) {
            put(o, "missing");
            continue;
        }
        put(o, "%.4g", m->value.value);
        if (!m->has_replicas)
            continue;
        if (m->saturation_applied || m->retry_discount_applied)
            put(o, " (effective %.4g%s%s)", m->effective.value,
                m->saturation_applied ? ", rejections reveal hidden demand" : "",
                m->retry_discount_applied ? ", retries discounted" : "");
        if (m->partial)
            explain_partial(d, m, o);
        put(o, " asks %d", (int)m->replicas);
    }
}

size_t ms_decision_explain(const ms_spec_t *spec, const ms_decision_t *d, char *buf, size_t len)
{
    out_t o = {buf, len, 0};

    if (len > 0)
        buf[0] = '\0';
    explain_metrics(spec, d, &o);
    put(&o, "; ");
    switch (d->reason) {
    case MS_REASON_ScalingDisabled:
    case MS_REASON_AboveMaxReplicas:
    case MS_REASON_BelowMinReplicas:
        put(&o, "%s", ms_reason_sentence(d->reason));
        goto done;
    case MS_REASON_MetricsUnavailable:
        put(&o, "%zu of %zu metrics missing, holding %d replicas", d->metrics_missing,
            d->nmetrics, (int)d->current_replicas);
        if (d->failures > 0)
            put(&o, " (%u consecutive failed ticks)", d->failures);
        goto done;
    default:
        break;
    }
    if (d->fallback_used) {
        put(&o, "every metric missing for %u ticks, fallback %d", d->failures,
            (int)spec->fallback.replicas);
        if (d->recommendation != spec->fallback.replicas)
            put(&o, ", CurrentIfHigher keeps %d", (int)d->recommendation);
        put(&o, "; ");
    }
    if (d->retry_storm)
        put(&o, "retry storm%s; ", d->held_by_storm ? ", holding the current count" : "");
    put(&o, "recommendation %d", (int)d->recommendation);
    if (d->stabilized)
        put(&o, ", stabilized to %d", (int)d->stabilized_value);
    if (d->rate_reason != MS_REASON_DesiredWithinRange)
        put(&o, ", %s to %d", ms_reason_name(d->rate_reason), (int)d->rate_limited_value);
    for (size_t i = 0; i < d->ndownstreams; i++) {
        const ms_downstream_result_t *r = &d->downstreams[i];

        if (!r->observed)
            put(&o, ", downstream %s not observed", spec->downstreams[i].name);
        else if (r->bound)
            put(&o, ", downstream %s allows only %d", spec->downstreams[i].name, (int)r->allowed);
    }
done:
    put(&o, "; desired %d", (int)d->desired_replicas);
    if (d->reason != MS_REASON_DesiredWithinRange)
        put(&o, " (%s: %s)", ms_reason_name(d->reason), ms_reason_sentence(d->reason));
    return o.used;
}
