/*
 * explain.c - a decision as one readable line: each metric's value,
 * effective value and ask, then what each later step did to the count.
 * This is what status.lastDecision.message, events and dry-run print.
 */
#include <stdio.h>

#include "meshscaler/buf.h"
#include "meshscaler/engine.h"

/* Step 3's missing-pods rule: "(3 of 8 pods reported, 70 with the rest
 * counted busy)". */
static void explain_partial(const ms_decision_t *d, const ms_metric_result_t *m, ms_fixbuf_t *o)
{
    ms_fixbuf_appendf(o, " (%d of %d pods reported", (int)m->pods.count, (int)d->ready_replicas);
    if (m->ratio != 1.0)
        ms_fixbuf_appendf(o, ", %.4g with the rest counted %s", m->partial_value,
                          m->ratio < 1.0 ? "busy" : "idle");
    ms_fixbuf_appendf(o, ")");
}

static void explain_metrics(const ms_spec_t *spec, const ms_decision_t *d, ms_fixbuf_t *o)
{
    for (size_t i = 0; i < d->nmetrics; i++) {
        const ms_metric_result_t *m = &d->metrics[i];

        ms_fixbuf_appendf(o, "%s%s ", i ? ", " : "", spec->metrics[i].name);
        if (!m->value.present) {
            ms_fixbuf_appendf(o, "missing");
            continue;
        }
        ms_fixbuf_appendf(o, "%.4g", m->value.value);
        if (!m->has_replicas)
            continue;
        if (m->saturation_applied || m->retry_discount_applied)
            ms_fixbuf_appendf(o, " (effective %.4g%s%s)", m->effective.value,
                              m->saturation_applied ? ", rejections reveal hidden demand" : "",
                              m->retry_discount_applied ? ", retries discounted" : "");
        if (m->partial)
            explain_partial(d, m, o);
        ms_fixbuf_appendf(o, " asks %d", (int)m->replicas);
    }
}

bool ms_decision_reservation(const ms_decision_t *d, size_t i, char *buf, size_t len)
{
    ms_fixbuf_t o;
    bool one = d->starting_replicas == 1;

    if (i >= d->ndownstreams || !(d->downstreams[i].reserved > 0))
        return false;
    ms_fixbuf_init(&o, buf, len);
    ms_fixbuf_appendf(&o, "%d starting replica%s reserve%s %.4g flows", (int)d->starting_replicas,
                      one ? "" : "s", one ? "s" : "", d->downstreams[i].reserved);
    return true;
}

/* Step 7's cap that bound, and the replicas it reserved for, if any:
 * "downstream edge allows only 5 (3 starting replicas reserve 75 flows)". */
static void explain_bound_downstream(const char *name, const ms_decision_t *d, size_t i,
                                     ms_fixbuf_t *o)
{
    char reserve[96];

    ms_fixbuf_appendf(o, ", downstream %s allows only %d", name, (int)d->downstreams[i].allowed);
    if (ms_decision_reservation(d, i, reserve, sizeof reserve))
        ms_fixbuf_appendf(o, " (%s)", reserve);
}

bool ms_decision_budget(const ms_spec_t *spec, const ms_decision_t *d, size_t i, char *buf,
                        size_t len)
{
    const ms_budget_result_t *b = &d->budgets[i];

    if (i >= d->nbudgets || !b->bound || b->downstream >= spec->ndownstreams)
        return false;
    snprintf(buf, len, "budget %s: %d of %d replica%s asked, room %.4g flows shared by %u object%s",
             spec->downstreams[b->downstream].budget, (int)b->grant, (int)b->ask,
             b->ask == 1 ? "" : "s", b->room, b->members, b->members == 1 ? "" : "s");
    return true;
}

/* §2b's budgets that lowered the count: "budget edge: 2 of 3 replicas
 * asked, room 90 flows shared by 2 objects". */
static void explain_budgets(const ms_spec_t *spec, const ms_decision_t *d, ms_fixbuf_t *o)
{
    char line[MS_NAME_MAX + 128];

    for (size_t i = 0; i < d->nbudgets; i++)
        if (ms_decision_budget(spec, d, i, line, sizeof line))
            ms_fixbuf_appendf(o, ", %s", line);
}

size_t ms_decision_explain(const ms_spec_t *spec, const ms_decision_t *d, char *buf, size_t len)
{
    ms_fixbuf_t o;

    ms_fixbuf_init(&o, buf, len);
    explain_metrics(spec, d, &o);
    ms_fixbuf_appendf(&o, "; ");
    switch (d->reason) {
    case MS_REASON_ScalingDisabled:
    case MS_REASON_AboveMaxReplicas:
    case MS_REASON_BelowMinReplicas:
        ms_fixbuf_appendf(&o, "%s", ms_reason_sentence(d->reason));
        goto done;
    case MS_REASON_MetricsUnavailable:
        ms_fixbuf_appendf(&o, "%zu of %zu metrics missing, holding %d replicas", d->metrics_missing,
                          d->nmetrics, (int)d->current_replicas);
        if (d->failures > 0)
            ms_fixbuf_appendf(&o, " (%u consecutive failed ticks)", d->failures);
        goto done;
    default:
        break;
    }
    if (d->fallback_used) {
        ms_fixbuf_appendf(&o, "every metric missing for %u ticks, fallback %d", d->failures,
                          (int)spec->fallback.replicas);
        if (d->recommendation != spec->fallback.replicas)
            ms_fixbuf_appendf(&o, ", CurrentIfHigher keeps %d", (int)d->recommendation);
        ms_fixbuf_appendf(&o, "; ");
    }
    if (d->retry_storm)
        ms_fixbuf_appendf(&o, "retry storm%s; ",
                          d->held_by_storm ? ", holding the current count" : "");
    ms_fixbuf_appendf(&o, "recommendation %d", (int)d->recommendation);
    if (d->stabilized)
        ms_fixbuf_appendf(&o, ", stabilized to %d", (int)d->stabilized_value);
    if (d->rate_reason != MS_REASON_DesiredWithinRange)
        ms_fixbuf_appendf(&o, ", %s to %d", ms_reason_name(d->rate_reason),
                          (int)d->rate_limited_value);
    for (size_t i = 0; i < d->ndownstreams; i++) {
        const ms_downstream_result_t *r = &d->downstreams[i];

        if (!r->observed)
            ms_fixbuf_appendf(&o, ", downstream %s not observed", spec->downstreams[i].name);
        else if (r->bound)
            explain_bound_downstream(spec->downstreams[i].name, d, i, &o);
    }
    explain_budgets(spec, d, &o);
done:
    ms_fixbuf_appendf(&o, "; desired %d", (int)d->desired_replicas);
    if (d->reason != MS_REASON_DesiredWithinRange)
        ms_fixbuf_appendf(&o, " (%s: %s)", ms_reason_name(d->reason),
                          ms_reason_sentence(d->reason));
    return o.used;
}
