/*
 * decision_json.c - a decision as the JSON object `meshscaler decide`
 * prints, with the engine's memory as its "state".
 */
#include "meshscaler/decision_json.h"

/* cJSON allocation failures surface as NULL; one check at the end of each
 * object keeps the builders readable. */
static cJSON *sample_json(ms_sample_t s)
{
    return s.present ? cJSON_CreateNumber(s.value) : cJSON_CreateNull();
}

static cJSON *state_json(const ms_engine_memory_t *mem)
{
    cJSON *state = cJSON_CreateObject();
    cJSON *recs = cJSON_AddArrayToObject(state, "recommendations");
    cJSON *events = cJSON_AddArrayToObject(state, "scaleEvents");

    for (size_t i = 0; i < mem->nrecs; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "time", mem->rec_time[i]);
        cJSON_AddNumberToObject(r, "replicas", mem->rec_replicas[i]);
        cJSON_AddItemToArray(recs, r);
    }
    for (size_t i = 0; i < mem->nevents; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "time", mem->event_time[i]);
        cJSON_AddNumberToObject(e, "change", mem->event_change[i]);
        cJSON_AddItemToArray(events, e);
    }
    cJSON_AddNumberToObject(state, "failures", mem->failures);
    return state;
}

/* §2b, for round lines: {"<budget>": {"room", "ask", "grant", "objects"}}. */
static cJSON *budgets_json(const ms_spec_t *spec, const ms_decision_t *d)
{
    cJSON *budgets = cJSON_CreateObject();

    for (size_t i = 0; i < d->nbudgets; i++) {
        const ms_budget_result_t *b = &d->budgets[i];
        cJSON *bj;

        if (b->downstream >= spec->ndownstreams)
            continue;
        bj = cJSON_AddObjectToObject(budgets, spec->downstreams[b->downstream].budget);
        cJSON_AddNumberToObject(bj, "room", b->room);
        cJSON_AddNumberToObject(bj, "ask", b->ask);
        cJSON_AddNumberToObject(bj, "grant", b->grant);
        cJSON_AddNumberToObject(bj, "objects", b->members);
    }
    return budgets;
}

cJSON *ms_decision_to_json(const ms_spec_t *spec, const ms_engine_memory_t *mem, double time,
                           const ms_decision_t *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *metrics, *downstreams;
    char message[1024];

    cJSON_AddNumberToObject(o, "time", time);
    cJSON_AddNumberToObject(o, "currentReplicas", d->current_replicas);
    cJSON_AddNumberToObject(o, "readyReplicas", d->ready_replicas);
    if (d->running_replicas.known) /* step 7's input, when given (docs/decide.md) */
        cJSON_AddNumberToObject(o, "runningReplicas", d->running_replicas.count);
    cJSON_AddNumberToObject(o, "desiredReplicas", d->desired_replicas);
    if (d->has_recommendation)
        cJSON_AddNumberToObject(o, "recommendation", d->recommendation);
    else
        cJSON_AddNullToObject(o, "recommendation");
    cJSON_AddBoolToObject(o, "stabilized", d->stabilized);
    cJSON_AddStringToObject(o, "reason", ms_reason_name(d->reason));
    metrics = cJSON_AddObjectToObject(o, "metrics");
    for (size_t i = 0; i < d->nmetrics; i++) {
        const ms_metric_result_t *m = &d->metrics[i];
        cJSON *mj = cJSON_AddObjectToObject(metrics, spec->metrics[i].name);

        cJSON_AddItemToObject(mj, "value", sample_json(m->value));
        if (m->pods.known) /* a partial observation (docs/decide.md) */
            cJSON_AddNumberToObject(mj, "pods", m->pods.count);
        cJSON_AddItemToObject(mj, "effective", sample_json(m->effective));
        if (m->has_replicas)
            cJSON_AddNumberToObject(mj, "replicas", m->replicas);
        else
            cJSON_AddNullToObject(mj, "replicas");
    }
    cJSON_AddBoolToObject(o, "retryStorm", d->retry_storm);
    cJSON_AddBoolToObject(o, "saturated", d->saturated);
    cJSON_AddBoolToObject(o, "fallback", d->fallback_used);
    downstreams = cJSON_AddObjectToObject(o, "downstream");
    for (size_t i = 0; i < d->ndownstreams; i++) {
        const ms_downstream_result_t *r = &d->downstreams[i];
        cJSON *dj = cJSON_AddObjectToObject(downstreams, spec->downstreams[i].name);

        cJSON_AddBoolToObject(dj, "observed", r->observed);
        if (r->observed)
            cJSON_AddNumberToObject(dj, "allowed", r->allowed);
        if (r->reserved > 0) /* for starting replicas (step 7) */
            cJSON_AddNumberToObject(dj, "reserved", r->reserved);
        cJSON_AddBoolToObject(dj, "bound", r->bound);
    }
    if (d->nbudgets > 0)
        cJSON_AddItemToObject(o, "budgets", budgets_json(spec, d));
    ms_decision_explain(spec, d, message, sizeof message);
    cJSON_AddStringToObject(o, "message", message);
    if (mem != NULL)
        cJSON_AddItemToObject(o, "state", state_json(mem));
    return o;
}
