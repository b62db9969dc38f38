/*
 * decision_json.h - the engine's decision as JSON: the object `meshscaler
 * decide` prints per tick, which the controller's dry-run lines and
 * `meshscaler replay` extend. With spec_json.h (JSON to a spec), the api/
 * area is the JSON face of the engine's types, both ways: decide/,
 * controller/ and replay use it; the engine knows no JSON.
 *
 * Reentrant; the caller owns what it gets.
 */
#ifndef MESHSCALER_DECISION_JSON_H
#define MESHSCALER_DECISION_JSON_H

#include <cjson/cJSON.h>

#include "meshscaler/engine.h"

/* The JSON object `decide` prints for one decision (docs/decide.md:
 * time, currentReplicas, desiredReplicas, recommendation, stabilized,
 * reason, metrics, message, ...), with "state" from mem unless mem is NULL.
 * The controller's dry-run JSON Lines add their fields to it. The caller
 * owns the result (cJSON_Delete); NULL on allocation failure. */
cJSON *ms_decision_to_json(const ms_spec_t *spec, const ms_engine_memory_t *mem, double time,
                           const ms_decision_t *d);

#endif
