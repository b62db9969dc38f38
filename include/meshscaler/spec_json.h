/*
 * spec_json.h - read a MeshAutoscaler spec (docs/decision-rules.md#resource)
 * from JSON.
 *
 * Used by `meshscaler decide` for scenario files and by the controller for
 * objects from the API server, so both accept and refuse exactly the same
 * specs. Every refusal names the JSON path of the fault.
 *
 * Reentrant; the caller owns the cJSON tree and the resulting ms_spec_t.
 */
#ifndef MESHSCALER_SPEC_JSON_H
#define MESHSCALER_SPEC_JSON_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "meshscaler/json.h"
#include "meshscaler/spec.h"

/* Parse json (the value of `spec`, at path p) into *out, which must be
 * freshly ms_spec_init()ed. `offline` accepts specs without queries and
 * without scaleTargetRef (the decide command ignores both).
 * On success returns MS_OK and *out is valid (ms_spec_validate passes).
 * On failure returns MS_ERR_INVALID (or MS_ERR_NOMEM) with "path: reason" in
 * errbuf; *out may hold partial data and must still be ms_spec_cleanup()ed. */
ms_err_t ms_spec_from_json(const cJSON *json, ms_jpath_t *p, bool offline, ms_spec_t *out,
                           char *errbuf, size_t errlen);

/* The behavior block alone (autoscaling/v2 HPA behavior plus a tolerance per
 * direction), at path p, into up and down, which hold the defaults
 * (ms_scaling_rules_default) for what the block leaves out. Errors as
 * ms_spec_from_json. */
ms_err_t ms_behavior_from_json(const cJSON *j, ms_jpath_t *p, ms_scaling_rules_t *up,
                               ms_scaling_rules_t *down, char *errbuf, size_t errlen);

/* A JSON number or a Kubernetes quantity string ("1.5k", "250m"), read like
 * json.h's readers. It lives here, not in json.h, because it parses with the
 * engine's quantity parser and util/ imports nothing of the project. */
ms_err_t ms_json_quantity(const cJSON *item, const ms_jpath_t *p, double *out, char *errbuf,
                          size_t errlen);

#endif
