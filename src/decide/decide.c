/*
 * decide.c - run a validated scenario tick by tick and print each decision
 * as JSON Lines (the contract) or as readable text.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/decide.h"
#include "scenario.h"

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

cJSON *ms_decide_decision_json(const ms_spec_t *spec, const ms_engine_memory_t *mem, double time,
                               const ms_decision_t *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *metrics, *downstreams;
    char message[1024];

    cJSON_AddNumberToObject(o, "time", time);
    cJSON_AddNumberToObject(o, "currentReplicas", d->current_replicas);
    cJSON_AddNumberToObject(o, "readyReplicas", d->ready_replicas);
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
        cJSON_AddBoolToObject(dj, "bound", r->bound);
    }
    ms_decision_explain(spec, d, message, sizeof message);
    cJSON_AddStringToObject(o, "message", message);
    if (mem != NULL)
        cJSON_AddItemToObject(o, "state", state_json(mem));
    return o;
}

static char *decision_text(const ms_spec_t *spec, double time, const ms_decision_t *d)
{
    char message[1024];
    char *line = malloc(1200);

    if (line == NULL)
        return NULL;
    ms_decision_explain(spec, d, message, sizeof message);
    snprintf(line, 1200, "t=%-6g %4d -> %-4d %-18s %s", time, (int)d->current_replicas,
             (int)d->desired_replicas, ms_reason_name(d->reason), message);
    return line;
}

ms_err_t ms_decide_validate(const char *text, size_t len, char *errbuf, size_t errlen)
{
    ms__scenario_t sc;
    ms_err_t err = ms__scenario_parse(text, len, &sc, errbuf, errlen);

    if (err == MS_OK)
        ms__scenario_cleanup(&sc);
    return err;
}

ms_err_t ms_decide_run(const char *text, size_t len, ms_decide_format_t format,
                       ms_decide_emit_fn emit, void *ctx, char *errbuf, size_t errlen)
{
    ms__scenario_t sc;
    const cJSON *item;
    double prev = -INFINITY;
    int32_t closed_loop = 0; /* the previous tick's desired count */
    size_t index = 0;
    ms_err_t err = ms__scenario_parse(text, len, &sc, errbuf, errlen);

    if (err != MS_OK)
        return err;
    cJSON_ArrayForEach(item, sc.ticks) {
        ms__tick_t tick;
        ms_decision_t d;
        char *line = NULL;
        int stop;

        if ((err = ms__tick_read(&sc, item, index, prev, &tick, errbuf, errlen)) != MS_OK)
            goto out;
        tick.obs.now = tick.time;
        tick.obs.current_replicas = tick.has_current ? tick.current : closed_loop;
        tick.obs.ready_replicas = tick.has_ready ? tick.ready : tick.obs.current_replicas;
        if ((err = ms_engine_decide(&sc.spec, &sc.memory, &tick.obs, &d)) != MS_OK) {
            ms_errf(errbuf, errlen, err, "ticks[%zu]: the engine refused the tick", index);
            goto out;
        }
        if (format == MS_DECIDE_TEXT) {
            line = decision_text(&sc.spec, tick.time, &d);
        } else {
            cJSON *o = ms_decide_decision_json(&sc.spec, &sc.memory, tick.time, &d);
            line = o ? cJSON_PrintUnformatted(o) : NULL;
            cJSON_Delete(o);
        }
        if (line == NULL) {
            err = ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory writing ticks[%zu]", index);
            goto out;
        }
        stop = emit(ctx, line, strlen(line));
        free(line);
        if (stop) {
            err = ms_errf(errbuf, errlen, MS_ERR_IO, "output stopped at ticks[%zu]", index);
            goto out;
        }
        closed_loop = d.desired_replicas;
        prev = tick.time;
        index++;
    }
out:
    ms__scenario_cleanup(&sc);
    return err;
}
