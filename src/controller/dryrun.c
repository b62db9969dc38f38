/*
 * dryrun.c - one decision as a table row or a JSON line (dry-run stdout).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshscaler/clock.h"
#include "meshscaler/decision_json.h"
#include "meshscaler/dryrun.h"

const char *ms_dryrun_table_header(void)
{
    return "TIME                 NAMESPACE/NAME                 TARGET                    "
           "CURRENT -> DESIRED REASON              METRICS";
}

/* "sidecar=91.5(asks 6),rps=missing": every metric, one token each. */
static ms_err_t metrics_column(const ms_dryrun_record_t *r, ms_buf_t *out)
{
    const ms_decision_t *d = r->decision;
    ms_err_t err = MS_OK;

    if (d->nmetrics == 0)
        return ms_buf_append(out, "-", 1);
    for (size_t i = 0; i < d->nmetrics && err == MS_OK; i++) {
        const ms_metric_result_t *m = &d->metrics[i];
        const char *sep = i ? "," : "";

        if (!m->value.present && r->missing_code != NULL && r->missing_code[i] != NULL)
            err = ms_buf_appendf(out, "%s%s=missing(%s)", sep, r->spec->metrics[i].name,
                                 r->missing_code[i]);
        else if (!m->value.present)
            err = ms_buf_appendf(out, "%s%s=missing", sep, r->spec->metrics[i].name);
        else if (m->has_replicas)
            err = ms_buf_appendf(out, "%s%s=%.4g(asks %d)", sep, r->spec->metrics[i].name,
                                 m->value.value, (int)m->replicas);
        else
            err = ms_buf_appendf(out, "%s%s=%.4g", sep, r->spec->metrics[i].name, m->value.value);
    }
    return err;
}

/* " (edge allows 5: 3 starting replicas reserve 75 flows)" when step 7's
 * cap bound with room reserved for pods not running yet. */
static ms_err_t reservation_note(const ms_dryrun_record_t *r, ms_buf_t *out)
{
    const ms_decision_t *d = r->decision;
    char reserve[96];

    for (size_t i = 0; i < d->ndownstreams; i++)
        if (d->downstreams[i].bound && ms_decision_reservation(d, i, reserve, sizeof reserve))
            return ms_buf_appendf(out, " (%s allows %d: %s)", r->spec->downstreams[i].name,
                                  (int)d->downstreams[i].allowed, reserve);
    return MS_OK;
}

static ms_err_t table_row(const ms_dryrun_record_t *r, ms_buf_t *out)
{
    char when[32], object[256], target[256];
    ms_err_t err;

    ms_time_rfc3339(r->wall_time, false, when, sizeof when);
    snprintf(object, sizeof object, "%s/%s", r->namespace_, r->name);
    snprintf(target, sizeof target, "%s/%s", r->target_kind, r->target_name);
    err = ms_buf_appendf(out, "%-20s %-30s %-25s %7d -> %-7d %-19s ", when, object, target,
                         (int)r->decision->current_replicas, (int)r->desired,
                         ms_reason_name(r->decision->reason));
    if (err == MS_OK)
        err = metrics_column(r, out);
    if (err == MS_OK)
        err = reservation_note(r, out);
    if (err == MS_OK && r->note != NULL && r->note[0] != '\0')
        err = ms_buf_appendf(out, " (%s)", r->note);
    if (err == MS_OK && r->hpa != NULL && r->hpa_desired >= 0)
        err = ms_buf_appendf(out, " (HPA %s: %d)", r->hpa, (int)r->hpa_desired);
    return err;
}

static ms_err_t json_line(const ms_dryrun_record_t *r, ms_buf_t *out)
{
    cJSON *o = ms_decision_to_json(r->spec, r->memory, r->time, r->decision);
    char when[32], target[256];
    char *text;
    ms_err_t err;

    if (o == NULL)
        return MS_ERR_NOMEM;
    ms_time_rfc3339(r->wall_time, false, when, sizeof when);
    snprintf(target, sizeof target, "%s/%s", r->target_kind, r->target_name);
    cJSON_AddStringToObject(o, "timestamp", when);
    cJSON_AddStringToObject(o, "namespace", r->namespace_);
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "target", target);
    if (r->desired != r->decision->desired_replicas)
        cJSON_AddNumberToObject(o, "appliedReplicas", r->desired);
    if (r->note != NULL && r->note[0] != '\0')
        cJSON_AddStringToObject(o, "note", r->note);
    if (r->hpa != NULL) {
        cJSON *hpa = cJSON_AddObjectToObject(o, "hpa");
        cJSON_AddStringToObject(hpa, "name", r->hpa);
        if (r->hpa_desired >= 0)
            cJSON_AddNumberToObject(hpa, "desiredReplicas", r->hpa_desired);
        else
            cJSON_AddNullToObject(hpa, "desiredReplicas");
        if (r->hpa_metrics != NULL)
            cJSON_AddItemToObject(hpa, "currentMetrics", cJSON_Duplicate(r->hpa_metrics, true));
    }
    if (r->missing_detail != NULL) {
        cJSON *missing = NULL;
        for (size_t i = 0; i < r->decision->nmetrics; i++) {
            if (r->decision->metrics[i].value.present || r->missing_detail[i] == NULL)
                continue;
            if (missing == NULL)
                missing = cJSON_AddObjectToObject(o, "missing");
            cJSON_AddStringToObject(missing, r->spec->metrics[i].name, r->missing_detail[i]);
        }
    }
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        return MS_ERR_NOMEM;
    err = ms_buf_append(out, text, strlen(text));
    free(text);
    return err;
}

ms_err_t ms_dryrun_format(ms_dryrun_format_t format, const ms_dryrun_record_t *r, ms_buf_t *out)
{
    return format == MS_DRYRUN_JSON ? json_line(r, out) : table_row(r, out);
}
