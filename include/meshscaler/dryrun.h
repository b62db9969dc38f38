/*
 * dryrun.h - the decision lines `meshscaler controller --dry-run` prints on
 * stdout, one per decision: a table (TIME NAMESPACE/NAME TARGET CURRENT ->
 * DESIRED REASON METRICS, header once) or JSON Lines carrying the same
 * fields as `meshscaler decide` (decision_json.h) plus namespace, name and target.
 *
 * Pure and reentrant; everything in a record is borrowed for the call.
 */
#ifndef MESHSCALER_DRYRUN_H
#define MESHSCALER_DRYRUN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/buf.h"
#include "meshscaler/engine.h"
#include "meshscaler/error.h"
#include "meshscaler/spec.h"

typedef enum { MS_DRYRUN_TABLE = 0, MS_DRYRUN_JSON } ms_dryrun_format_t;

typedef struct {
    double wall_time; /* unix seconds: TIME column, "timestamp" in JSON */
    double time;      /* the engine's `now` ("time" in JSON, as decide) */
    const char *namespace_;
    const char *name;
    const char *target_kind;
    const char *target_name;
    const ms_spec_t *spec;
    const ms_decision_t *decision;
    const ms_engine_memory_t *memory; /* JSON "state"; NULL: omitted */
    int32_t desired; /* what would be written (after pausing); usually decision->desired_replicas */
    const char *note; /* pause or conflict sentence, or NULL */
    /* The HPA that scales the same target (shadow mode), or NULL; its
     * status.desiredReplicas (-1: none yet). Table: "(HPA ns/name: 4)";
     * JSON: "hpa": {"name", "desiredReplicas"}. */
    const char *hpa;
    int32_t hpa_desired;
    const cJSON *hpa_metrics; /* its status.currentMetrics, as the HPA wrote them (JSON only) */
    /* Why each missing metric is missing, indexed like spec->metrics: a short
     * code for the table ("NO_DATA") and a sentence for JSON ("missing"
     * object). NULL arrays or entries: not said. */
    const char *const *missing_code;
    const char *const *missing_detail;
} ms_dryrun_record_t;

/* The table header (no newline); static. */
const char *ms_dryrun_table_header(void);

/* Append one line (no newline) for r to out. MS_ERR_NOMEM/MS_ERR_TOOLARGE
 * when out cannot hold it; out then holds a partial line. */
ms_err_t ms_dryrun_format(ms_dryrun_format_t format, const ms_dryrun_record_t *r, ms_buf_t *out);

#endif
