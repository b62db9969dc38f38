/*
 * output.c - `meshscaler replay`'s output formats (include/meshscaler/replay.h):
 * the table, decide's JSON lines with actualReplicas, the decide scenario
 * of exactly the values the engine was given, and the summary in words and
 * in JSON. cmd/meshscaler/cmd_replay.c picks one per -o and stays thin.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "meshscaler/clock.h"
#include "meshscaler/decision_json.h"
#include "meshscaler/replay.h"

void ms_replay_table_header(FILE *to, const ms_spec_t *spec)
{
    fprintf(to, "%-20s %6s %8s %7s", "TIME", "ACTUAL", "REPLICAS", "DESIRED");
    for (size_t i = 0; i < spec->nmetrics; i++)
        fprintf(to, "  %-18.18s", spec->metrics[i].name);
    fprintf(to, "  REASON\n");
}

void ms_replay_table_row(FILE *to, const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    const ms_decision_t *d = tk->decision;
    char when[40], actual[16];

    ms_time_rfc3339(tk->time, false, when, sizeof when);
    snprintf(actual, sizeof actual, "%d", (int)tk->actual);
    fprintf(to, "%-20s %6s %8d %7d", when, tk->actual >= 0 ? actual : "-", (int)d->current_replicas,
            (int)d->desired_replicas);
    for (size_t i = 0; i < spec->nmetrics; i++) {
        char cell[32];
        if (tk->obs->metrics[i].present)
            snprintf(cell, sizeof cell, "%.4g/%.4g", tk->obs->metrics[i].value,
                     spec->metrics[i].target);
        else
            snprintf(cell, sizeof cell, "%s", ms_prom_reason_name(tk->why->metrics[i].reason));
        fprintf(to, "  %-18.18s", cell);
    }
    fprintf(to, "  %s\n", ms_reason_name(d->reason));
}

void ms_replay_json_line(FILE *to, const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    cJSON *line = ms_decision_to_json(spec, tk->memory, tk->time, tk->decision);
    char *text;

    if (line == NULL)
        return;
    if (tk->actual >= 0)
        cJSON_AddNumberToObject(line, "actualReplicas", tk->actual);
    else
        cJSON_AddNullToObject(line, "actualReplicas");
    text = cJSON_PrintUnformatted(line);
    if (text != NULL)
        fprintf(to, "%s\n", text);
    free(text);
    cJSON_Delete(line);
}

static cJSON *sample(ms_sample_t s)
{
    return s.present ? cJSON_CreateNumber(s.value) : cJSON_CreateNull();
}

cJSON *ms_replay_scenario_tick(const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    const ms_observation_t *o = tk->obs;
    cJSON *t = cJSON_CreateObject(), *metrics = cJSON_AddObjectToObject(t, "metrics");
    cJSON *signals = cJSON_AddObjectToObject(t, "signals");

    cJSON_AddNumberToObject(t, "time", tk->time);
    cJSON_AddNumberToObject(t, "currentReplicas", o->current_replicas);
    for (size_t i = 0; i < spec->nmetrics; i++) {
        cJSON *v = sample(o->metrics[i]);
        if (o->metrics[i].present && o->metric_pods[i].known) {
            cJSON *partial = cJSON_CreateObject();
            cJSON_AddItemToObject(partial, "value", v);
            cJSON_AddNumberToObject(partial, "pods", o->metric_pods[i].count);
            v = partial;
        }
        cJSON_AddItemToObject(metrics, spec->metrics[i].name, v);
    }
    if (spec->ndownstreams > 0) {
        cJSON *ds = cJSON_AddObjectToObject(signals, "downstream");
        for (size_t i = 0; i < spec->ndownstreams; i++) {
            cJSON *one = cJSON_AddObjectToObject(ds, spec->downstreams[i].name);
            cJSON_AddItemToObject(one, "usage", sample(o->downstreams[i].usage));
            cJSON_AddItemToObject(one, "limit", sample(o->downstreams[i].limit));
        }
    }
    if (spec->retry_storm.enabled)
        cJSON_AddItemToObject(signals, "retryShare", sample(o->retry_share));
    for (size_t i = 0; i < spec->nmetrics; i++) {
        cJSON *sat, *one;
        if (!spec->saturation[i].enabled)
            continue;
        sat = cJSON_GetObjectItemCaseSensitive(signals, "saturation");
        if (sat == NULL)
            sat = cJSON_AddObjectToObject(signals, "saturation");
        one = cJSON_AddObjectToObject(sat, spec->metrics[i].name);
        cJSON_AddItemToObject(one, "admitted", sample(o->saturation[i].admitted));
        cJSON_AddItemToObject(one, "rejected", sample(o->saturation[i].rejected));
    }
    return t;
}

void ms_replay_summary_print(FILE *to, const ms_replay_summary_t *s)
{
    char first[40] = "never", actual_first[40] = "never";

    if (!isnan(s->first_scale_up))
        ms_time_rfc3339(s->first_scale_up, false, first, sizeof first);
    if (!isnan(s->first_actual_scale_up))
        ms_time_rfc3339(s->first_actual_scale_up, false, actual_first, sizeof actual_first);
    fprintf(to, "\n%zu steps of %.0f s\n", s->steps, s->step);
    fprintf(to, "replica-seconds: meshscaler %.0f", s->replica_seconds);
    if (s->known_steps > 0)
        fprintf(to,
                "; over the %zu steps the target's count is known: meshscaler %.0f, "
                "actual %.0f (%+.1f%%)",
                s->known_steps, s->meshscaler_same_span, s->actual_replica_seconds,
                s->actual_replica_seconds > 0
                    ? 100 * (s->meshscaler_same_span - s->actual_replica_seconds) /
                          s->actual_replica_seconds
                    : 0.0);
    fprintf(to, "\ntime above target: meshscaler %.0f s, actual %.0f s\n", s->above_target_seconds,
            s->actual_above_target_seconds);
    fprintf(to, "scale events: meshscaler %u, actual %u\n", s->scale_events, s->actual_changes);
    fprintf(to, "first scale-up: meshscaler %s, actual %s\n", first, actual_first);
    if (s->blind_steps > 0)
        fprintf(to, "steps with every metric missing: %zu\n", s->blind_steps);
}

cJSON *ms_replay_summary_json(const ms_replay_summary_t *s)
{
    cJSON *o = cJSON_CreateObject(), *sum = cJSON_AddObjectToObject(o, "summary");

    cJSON_AddNumberToObject(sum, "steps", (double)s->steps);
    cJSON_AddNumberToObject(sum, "stepSeconds", s->step);
    cJSON_AddNumberToObject(sum, "replicaSeconds", s->replica_seconds);
    cJSON_AddNumberToObject(sum, "knownSteps", (double)s->known_steps);
    cJSON_AddNumberToObject(sum, "actualReplicaSeconds", s->actual_replica_seconds);
    cJSON_AddNumberToObject(sum, "replicaSecondsWhenKnown", s->meshscaler_same_span);
    cJSON_AddNumberToObject(sum, "aboveTargetSeconds", s->above_target_seconds);
    cJSON_AddNumberToObject(sum, "actualAboveTargetSeconds", s->actual_above_target_seconds);
    cJSON_AddNumberToObject(sum, "scaleEvents", s->scale_events);
    cJSON_AddNumberToObject(sum, "actualChanges", s->actual_changes);
    if (isnan(s->first_scale_up))
        cJSON_AddNullToObject(sum, "firstScaleUp");
    else
        cJSON_AddNumberToObject(sum, "firstScaleUp", s->first_scale_up);
    if (isnan(s->first_actual_scale_up))
        cJSON_AddNullToObject(sum, "firstActualScaleUp");
    else
        cJSON_AddNumberToObject(sum, "firstActualScaleUp", s->first_actual_scale_up);
    cJSON_AddNumberToObject(sum, "blindSteps", (double)s->blind_steps);
    return o;
}
