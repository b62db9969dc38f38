/*
 * scenario.h - the parsed form of a decide scenario. Internal to src/decide.
 *
 * The cJSON tree stays the source of truth for ticks: ticks are read one at
 * a time into an observation, so a scenario of many ticks costs its JSON and
 * one observation, not one observation per tick.
 */
#ifndef MESHSCALER_DECIDE_SCENARIO_H
#define MESHSCALER_DECIDE_SCENARIO_H

#include <cjson/cJSON.h>

#include "meshscaler/engine.h"
#include "meshscaler/json.h"
#include "meshscaler/spec.h"
#include "meshscaler/decide.h"

/* One object of a round scenario (docs/decide.md, "Rounds"). */
typedef struct {
    const char *key;   /* "namespace/name", borrowed from the root */
    const cJSON *item; /* its objects[] entry, borrowed from the root */
    ms_spec_t spec;    /* owned strings */
    ms_engine_memory_t memory;
} ms__object_t;

typedef struct {
    cJSON *root;        /* owned */
    const cJSON *ticks; /* borrowed from root */
    ms_spec_t spec;     /* owned strings */
    ms_engine_memory_t memory;
    double first_time; /* time of ticks[0] */
    /* Rounds: top-level "objects" instead of "spec" (then spec and memory
     * above are unused). Owned; sorted by key; NULL for one object. */
    ms__object_t *objects;
    size_t nobjects;
} ms__scenario_t;

/* One tick as read from the scenario. */
typedef struct {
    double time;
    bool has_current;
    int32_t current;
    bool has_ready;
    int32_t ready;
    bool has_running;
    int32_t running;
    ms_observation_t obs; /* metrics and signals; now/replicas set by the runner */
} ms__tick_t;

/* Parse text into *sc: the spec, the state and a check of every tick.
 * On failure returns MS_ERR_INVALID/MS_ERR_NOMEM with the message in errbuf
 * and *sc holds nothing to free. On success free with ms__scenario_cleanup. */
ms_err_t ms__scenario_parse(const char *text, size_t len, ms__scenario_t *sc, char *errbuf,
                            size_t errlen);
void ms__scenario_cleanup(ms__scenario_t *sc);

/* Read ticks[index] (an item of sc->ticks) into *tick. prev_time is the
 * previous tick's time (or -inf). Validation already passed, so in the runner
 * this cannot fail; it is also the validator. */
ms_err_t ms__tick_read(const ms__scenario_t *sc, const cJSON *item, size_t index, double prev_time,
                       ms__tick_t *tick, char *errbuf, size_t errlen);

/* Index of the round object called key, or -1. */
int ms__scenario_object_index(const ms__scenario_t *sc, const char *key);

/* Check round ticks[index] (an item of sc->ticks): its time (no earlier
 * than prev_time, into *time) and each object it names, which must exist.
 * seen[o] says object o was decided before (currentReplicas is required
 * on an object's first round); it is set for every object read. */
ms_err_t ms__round_read(const ms__scenario_t *sc, const cJSON *item, size_t index, double prev_time,
                        bool *seen, double *time, char *errbuf, size_t errlen);

/* Read what a round says about object `object` (round: its value in the
 * round's "objects") into *t; t->time is left 0. Validation already
 * passed, so in the runner this cannot fail. */
ms_err_t ms__round_object_read(const ms__scenario_t *sc, const cJSON *round, size_t object,
                               bool first, ms__tick_t *t, char *errbuf, size_t errlen);

#endif
