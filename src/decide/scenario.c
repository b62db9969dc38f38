/*
 * scenario.c - read and validate a decide scenario (docs/decide.md).
 *
 * Keys the contract names are type- and range-checked; other keys are
 * ignored (a top-level "about", comments in ticks). Names inside ticks
 * (metrics, downstreams, saturation entries) must be declared in the spec,
 * so a typo is an error rather than a silently missing metric.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/spec_json.h"
#include "meshscaler/xalloc.h"
#include "scenario.h"

/* A number or null (null/absent leaves *s missing). */
static ms_err_t read_sample(const cJSON *item, ms_jpath_t *p, double min, ms_sample_t *s,
                            char *errbuf, size_t errlen)
{
    double v = 0;
    ms_err_t err;

    if (ms_json_is_absent(item)) {
        s->present = false;
        return MS_OK;
    }
    if ((err = ms_json_number(item, p, &v, errbuf, errlen)) != MS_OK)
        return err;
    if (v < min)
        return ms_jpath_errf(p, errbuf, errlen, "must be at least %g", min);
    *s = (ms_sample_t){true, v};
    return MS_OK;
}

/* A tick's metric: a number or null, or {"value": <number|null>, "pods":
 * <int >= 0>} for a partial observation (docs/decide.md). Both keys of
 * the object are required, so a misspelt key is an error rather than a
 * silently missing value or an ignored pod count. */
static ms_err_t read_metric_value(const cJSON *item, ms_jpath_t *p, ms_sample_t *s, ms_pods_t *pods,
                                  char *errbuf, size_t errlen)
{
    const cJSON *value = ms_json_child(item, "value");
    ms_err_t err;
    size_t saved;

    /* Metric values may be negative (user PromQL can return them). */
    if (!cJSON_IsObject(item))
        return read_sample(item, p, -INFINITY, s, errbuf, errlen);
    saved = ms_jpath_push_key(p, "value");
    if (value == NULL)
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = read_sample(value, p, -INFINITY, s, errbuf, errlen)) != MS_OK)
        return err;
    ms_jpath_pop(p, saved);
    ms_jpath_push_key(p, "pods");
    if (ms_json_child(item, "pods") == NULL)
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = ms_json_int32(ms_json_child(item, "pods"), p, 0, INT32_MAX, &pods->count, errbuf,
                             errlen)) != MS_OK)
        return err;
    pods->known = true;
    ms_jpath_pop(p, saved);
    return MS_OK;
}

static ms_err_t read_tick_metrics(const ms_spec_t *spec, const cJSON *m, ms_jpath_t *p,
                                  ms__tick_t *t, char *errbuf, size_t errlen)
{
    const cJSON *it;
    ms_err_t err = ms_json_object(m, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    cJSON_ArrayForEach(it, m)
    {
        size_t saved = ms_jpath_push_key(p, it->string);
        int i = ms_spec_metric_index(spec, it->string);

        if (i < 0)
            return ms_jpath_errf(p, errbuf, errlen, "metric not declared in spec.metrics");
        if ((err = read_metric_value(it, p, &t->obs.metrics[i], &t->obs.metric_pods[i], errbuf,
                                     errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

/* An observation of two non-negative samples, {"<a>": n, "<b>": n}, at path p;
 * null or absent leaves both missing. */
static ms_err_t read_pair(const cJSON *obj, ms_jpath_t *p, const char *a, ms_sample_t *sa,
                          const char *b, ms_sample_t *sb, char *errbuf, size_t errlen)
{
    ms_err_t err;
    size_t saved;

    if (ms_json_is_absent(obj))
        return MS_OK;
    if ((err = ms_json_object(obj, p, errbuf, errlen)) != MS_OK)
        return err;
    saved = ms_jpath_push_key(p, a);
    if ((err = read_sample(ms_json_child(obj, a), p, 0, sa, errbuf, errlen)) != MS_OK)
        return err;
    ms_jpath_pop(p, saved);
    ms_jpath_push_key(p, b);
    if ((err = read_sample(ms_json_child(obj, b), p, 0, sb, errbuf, errlen)) != MS_OK)
        return err;
    ms_jpath_pop(p, saved);
    return MS_OK;
}

static ms_err_t read_downstream_signals(const ms_spec_t *spec, const cJSON *obj, ms_jpath_t *p,
                                        ms__tick_t *t, char *errbuf, size_t errlen)
{
    const cJSON *it;
    ms_err_t err = ms_json_object(obj, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    cJSON_ArrayForEach(it, obj)
    {
        size_t saved = ms_jpath_push_key(p, it->string);
        int i = ms_spec_downstream_index(spec, it->string);
        ms_downstream_obs_t *o;

        if (i < 0)
            return ms_jpath_errf(p, errbuf, errlen,
                                 "downstream not declared in spec.guardrails.downstream");
        o = &t->obs.downstreams[i];
        if ((err = read_pair(it, p, "usage", &o->usage, "limit", &o->limit, errbuf, errlen)) !=
            MS_OK)
            return err;
        if (o->limit.present && !(o->limit.value > 0)) {
            ms_jpath_push_key(p, "limit");
            return ms_jpath_errf(p, errbuf, errlen, "must be greater than 0");
        }
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

static ms_err_t read_saturation_signals(const ms_spec_t *spec, const cJSON *obj, ms_jpath_t *p,
                                        ms__tick_t *t, char *errbuf, size_t errlen)
{
    const cJSON *it;
    ms_err_t err = ms_json_object(obj, p, errbuf, errlen);

    if (err != MS_OK)
        return err;
    cJSON_ArrayForEach(it, obj)
    {
        size_t saved = ms_jpath_push_key(p, it->string);
        int i = ms_spec_metric_index(spec, it->string);
        ms_saturation_obs_t *o;

        if (i < 0 || !spec->saturation[i].enabled)
            return ms_jpath_errf(p, errbuf, errlen,
                                 "metric not declared in spec.guardrails.saturation");
        o = &t->obs.saturation[i];
        if ((err = read_pair(it, p, "admitted", &o->admitted, "rejected", &o->rejected, errbuf,
                             errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

static ms_err_t read_signals(const ms_spec_t *spec, const cJSON *s, ms_jpath_t *p, ms__tick_t *t,
                             char *errbuf, size_t errlen)
{
    const cJSON *item;
    ms_err_t err = ms_json_object(s, p, errbuf, errlen);
    size_t saved;

    if (err != MS_OK)
        return err;
    if (!ms_json_is_absent(item = ms_json_child(s, "downstream"))) {
        saved = ms_jpath_push_key(p, "downstream");
        if ((err = read_downstream_signals(spec, item, p, t, errbuf, errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    saved = ms_jpath_push_key(p, "retryShare");
    if ((err = read_sample(ms_json_child(s, "retryShare"), p, 0, &t->obs.retry_share, errbuf,
                           errlen)) != MS_OK)
        return err;
    if (t->obs.retry_share.present && t->obs.retry_share.value > 1)
        return ms_jpath_errf(p, errbuf, errlen, "must be at most 1 (a share of attempts)");
    ms_jpath_pop(p, saved);
    if (!ms_json_is_absent(item = ms_json_child(s, "saturation"))) {
        saved = ms_jpath_push_key(p, "saturation");
        if ((err = read_saturation_signals(spec, item, p, t, errbuf, errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

/* An optional replica count of a tick, an integer >= 0 (absent: *has
 * stays false and the runner applies the default). */
static ms_err_t read_count(const cJSON *tick, ms_jpath_t *p, const char *key, bool *has,
                           int32_t *count, char *errbuf, size_t errlen)
{
    const cJSON *field = ms_json_child(tick, key);
    size_t saved = ms_jpath_push_key(p, key);
    ms_err_t err;

    if (!ms_json_is_absent(field)) {
        if ((err = ms_json_int32(field, p, 0, INT32_MAX, count, errbuf, errlen)) != MS_OK)
            return err;
        *has = true;
    }
    ms_jpath_pop(p, saved);
    return MS_OK;
}

/* What a tick says about one object, after its time (a single-object tick)
 * or under its key (a round): counts, metrics and signals. `first`: the
 * object's first tick, where currentReplicas is required. */
static ms_err_t read_tick_body(const ms_spec_t *spec, const cJSON *item, ms_jpath_t *p, bool first,
                               ms__tick_t *t, char *errbuf, size_t errlen)
{
    const cJSON *field;
    ms_err_t err;
    size_t saved;

    saved = ms_jpath_push_key(p, "currentReplicas");
    if (!ms_json_is_absent(field = ms_json_child(item, "currentReplicas"))) {
        if ((err = ms_json_int32(field, p, 0, INT32_MAX, &t->current, errbuf, errlen)) != MS_OK)
            return err;
        t->has_current = true;
    } else if (first) {
        return ms_jpath_errf(p, errbuf, errlen, "required on the first tick");
    }
    ms_jpath_pop(p, saved);

    if ((err = read_count(item, p, "readyReplicas", &t->has_ready, &t->ready, errbuf, errlen)) !=
        MS_OK)
        return err;
    if ((err = read_count(item, p, "runningReplicas", &t->has_running, &t->running, errbuf,
                          errlen)) != MS_OK)
        return err;

    if (!ms_json_is_absent(field = ms_json_child(item, "metrics"))) {
        saved = ms_jpath_push_key(p, "metrics");
        if ((err = read_tick_metrics(spec, field, p, t, errbuf, errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    if (!ms_json_is_absent(field = ms_json_child(item, "signals"))) {
        saved = ms_jpath_push_key(p, "signals");
        if ((err = read_signals(spec, field, p, t, errbuf, errlen)) != MS_OK)
            return err;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

/* ticks[index] as an object with a time no earlier than prev_time; the
 * path is left at ticks[index]. */
static ms_err_t read_tick_time(const cJSON *item, ms_jpath_t *p, size_t index, double prev_time,
                               double *time, char *errbuf, size_t errlen)
{
    const cJSON *field;
    ms_err_t err;
    size_t saved;

    ms_jpath_init(p, "ticks");
    ms_jpath_push_index(p, index);
    if ((err = ms_json_object(item, p, errbuf, errlen)) != MS_OK)
        return err;
    saved = ms_jpath_push_key(p, "time");
    if (ms_json_is_absent(field = ms_json_child(item, "time")))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = ms_json_number(field, p, time, errbuf, errlen)) != MS_OK)
        return err;
    if (*time < prev_time)
        return ms_jpath_errf(p, errbuf, errlen, "%g is earlier than the previous tick's %g", *time,
                             prev_time);
    ms_jpath_pop(p, saved);
    return MS_OK;
}

ms_err_t ms__tick_read(const ms__scenario_t *sc, const cJSON *item, size_t index, double prev_time,
                       ms__tick_t *t, char *errbuf, size_t errlen)
{
    ms_jpath_t path;
    ms_err_t err;

    memset(t, 0, sizeof *t);
    if ((err = read_tick_time(item, &path, index, prev_time, &t->time, errbuf, errlen)) != MS_OK)
        return err;
    return read_tick_body(&sc->spec, item, &path, index == 0, t, errbuf, errlen);
}

static int object_by_key(const void *key, const void *obj)
{
    return strcmp(key, ((const ms__object_t *)obj)->key);
}

int ms__scenario_object_index(const ms__scenario_t *sc, const char *key)
{
    const ms__object_t *o =
        bsearch(key, sc->objects, sc->nobjects, sizeof *sc->objects, object_by_key);
    return o ? (int)(o - sc->objects) : -1;
}

ms_err_t ms__round_read(const ms__scenario_t *sc, const cJSON *item, size_t index, double prev_time,
                        bool *seen, double *time, char *errbuf, size_t errlen)
{
    ms_jpath_t path, *p = &path;
    const cJSON *objects, *it;
    ms_err_t err;

    if ((err = read_tick_time(item, p, index, prev_time, time, errbuf, errlen)) != MS_OK)
        return err;
    ms_jpath_push_key(p, "objects");
    objects = ms_json_child(item, "objects");
    if (ms_json_is_absent(objects))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = ms_json_object(objects, p, errbuf, errlen)) != MS_OK)
        return err;
    cJSON_ArrayForEach(it, objects)
    {
        size_t saved = ms_jpath_push_key(p, it->string);
        int o = ms__scenario_object_index(sc, it->string);
        ms__tick_t tick;

        if (o < 0)
            return ms_jpath_errf(p, errbuf, errlen, "no such object");
        memset(&tick, 0, sizeof tick);
        if ((err = ms_json_object(it, p, errbuf, errlen)) != MS_OK)
            return err;
        if ((err = read_tick_body(&sc->objects[o].spec, it, p, !seen[o], &tick, errbuf, errlen)) !=
            MS_OK)
            return err;
        seen[o] = true;
        ms_jpath_pop(p, saved);
    }
    return MS_OK;
}

ms_err_t ms__round_object_read(const ms__scenario_t *sc, const cJSON *round, size_t object,
                               bool first, ms__tick_t *t, char *errbuf, size_t errlen)
{
    ms_jpath_t path;

    memset(t, 0, sizeof *t);
    ms_jpath_init(&path, "ticks");
    return read_tick_body(&sc->objects[object].spec, round, &path, first, t, errbuf, errlen);
}

/* One state entry: {"time": t, <key>: integer}. */
static ms_err_t read_entry(const cJSON *e, ms_jpath_t *p, const char *key, int32_t min,
                           double *time, int32_t *value, char *errbuf, size_t errlen)
{
    ms_err_t err = ms_json_object(e, p, errbuf, errlen);
    size_t saved;

    if (err != MS_OK)
        return err;
    saved = ms_jpath_push_key(p, "time");
    if (ms_json_is_absent(ms_json_child(e, "time")))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = ms_json_number(ms_json_child(e, "time"), p, time, errbuf, errlen)) != MS_OK)
        return err;
    ms_jpath_pop(p, saved);
    ms_jpath_push_key(p, key);
    if (ms_json_is_absent(ms_json_child(e, key)))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if ((err = ms_json_int32(ms_json_child(e, key), p, min, INT32_MAX, value, errbuf, errlen)) !=
        MS_OK)
        return err;
    ms_jpath_pop(p, saved);
    return MS_OK;
}

static ms_err_t read_state_list(const ms_spec_t *spec, ms_engine_memory_t *memory,
                                double first_time, const cJSON *state, ms_jpath_t *p,
                                const char *list, const char *key, int32_t min, char *errbuf,
                                size_t errlen)
{
    const cJSON *arr = ms_json_child(state, list), *e;
    size_t saved, n = 0;
    ms_err_t err;

    if (ms_json_is_absent(arr))
        return MS_OK;
    saved = ms_jpath_push_key(p, list);
    if ((err = ms_json_array(arr, p, errbuf, errlen)) != MS_OK)
        return err;
    cJSON_ArrayForEach(e, arr)
    {
        size_t at = ms_jpath_push_index(p, n++);
        double time = 0;
        int32_t value = 0;

        if ((err = read_entry(e, p, key, min, &time, &value, errbuf, errlen)) != MS_OK)
            return err;
        if (time > first_time) {
            ms_jpath_push_key(p, "time");
            return ms_jpath_errf(p, errbuf, errlen, "%g is after the first tick's time %g", time,
                                 first_time);
        }
        if (strcmp(list, "recommendations") == 0)
            ms_engine_memory_add_recommendation(memory, spec, first_time, time, value);
        else
            ms_engine_memory_add_event(memory, spec, first_time, time, value);
        ms_jpath_pop(p, at);
    }
    ms_jpath_pop(p, saved);
    return MS_OK;
}

/* An object's "state" at path p (its memory before the first tick). */
static ms_err_t read_state(const ms_spec_t *spec, ms_engine_memory_t *memory, double first_time,
                           const cJSON *state, ms_jpath_t *p, char *errbuf, size_t errlen)
{
    ms_err_t err;
    int32_t failures = 0;

    if ((err = ms_json_object(state, p, errbuf, errlen)) != MS_OK)
        return err;
    if ((err = read_state_list(spec, memory, first_time, state, p, "recommendations", "replicas", 0,
                               errbuf, errlen)) != MS_OK)
        return err;
    if ((err = read_state_list(spec, memory, first_time, state, p, "scaleEvents", "change",
                               INT32_MIN, errbuf, errlen)) != MS_OK)
        return err;
    if (!ms_json_is_absent(ms_json_child(state, "failures"))) {
        ms_jpath_push_key(p, "failures");
        if ((err = ms_json_int32(ms_json_child(state, "failures"), p, 0, INT32_MAX, &failures,
                                 errbuf, errlen)) != MS_OK)
            return err;
        memory->failures = (uint32_t)failures;
    }
    return MS_OK;
}

static ms_err_t check_ticks(ms__scenario_t *sc, char *errbuf, size_t errlen)
{
    ms__tick_t tick;
    const cJSON *it;
    double prev = -INFINITY;
    size_t i = 0;
    ms_err_t err;

    cJSON_ArrayForEach(it, sc->ticks)
    {
        if ((err = ms__tick_read(sc, it, i++, prev, &tick, errbuf, errlen)) != MS_OK)
            return err;
        prev = tick.time;
    }
    return MS_OK;
}

static ms_err_t check_rounds(ms__scenario_t *sc, char *errbuf, size_t errlen)
{
    bool *seen = ms_xcalloc(sc->nobjects, sizeof *seen);
    const cJSON *it;
    double prev = -INFINITY, time = 0;
    size_t i = 0;
    ms_err_t err = MS_OK;

    cJSON_ArrayForEach(it, sc->ticks)
    {
        if ((err = ms__round_read(sc, it, i++, prev, seen, &time, errbuf, errlen)) != MS_OK)
            break;
        prev = time;
    }
    free(seen);
    return err;
}

/* A round's key: "namespace/name", each part non-empty, one slash. */
static bool valid_key(const char *key)
{
    const char *slash = strchr(key, '/');

    return slash != NULL && slash != key && slash[1] != '\0' && strchr(slash + 1, '/') == NULL;
}

static int by_object_key(const void *a, const void *b)
{
    return strcmp(((const ms__object_t *)a)->key, ((const ms__object_t *)b)->key);
}

/* objects[index]: {"key", "spec", "state"}; the state needs the first
 * tick's time, so it is read by read_objects' caller. */
static ms_err_t read_object(const cJSON *item, size_t index, ms__object_t *o, char *errbuf,
                            size_t errlen)
{
    ms_jpath_t path, *p = &path;
    const cJSON *field;
    ms_err_t err;
    size_t saved;

    ms_jpath_init(p, "objects");
    ms_jpath_push_index(p, index);
    if ((err = ms_json_object(item, p, errbuf, errlen)) != MS_OK)
        return err;
    saved = ms_jpath_push_key(p, "key");
    field = ms_json_child(item, "key");
    if (ms_json_is_absent(field))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    if (!cJSON_IsString(field))
        return ms_jpath_errf(p, errbuf, errlen, "not a string (found %s)", ms_json_kind(field));
    if (!valid_key(field->valuestring))
        return ms_jpath_errf(p, errbuf, errlen, "\"%.64s\" is not a namespace/name key",
                             field->valuestring);
    o->key = field->valuestring;
    ms_jpath_pop(p, saved);
    ms_jpath_push_key(p, "spec");
    field = ms_json_child(item, "spec");
    if (ms_json_is_absent(field))
        return ms_jpath_errf(p, errbuf, errlen, "required");
    return ms_spec_from_json(field, p, true, &o->spec, errbuf, errlen);
}

/* Top-level "objects" of a round scenario: each object's key and spec,
 * sorted by key (a key given twice is an error). */
static ms_err_t read_objects(ms__scenario_t *sc, const cJSON *objects, char *errbuf, size_t errlen)
{
    ms_jpath_t path;
    const cJSON *it;
    size_t n = 0;
    ms_err_t err;

    ms_jpath_init(&path, "objects");
    if ((err = ms_json_array(objects, &path, errbuf, errlen)) != MS_OK)
        return err;
    if (cJSON_GetArraySize(objects) == 0)
        return ms_jpath_errf(&path, errbuf, errlen, "at least one object is required");
    sc->objects = ms_xcalloc((size_t)cJSON_GetArraySize(objects), sizeof *sc->objects);
    cJSON_ArrayForEach(it, objects)
    {
        ms__object_t *o = &sc->objects[n];

        ms_spec_init(&o->spec);
        ms_engine_memory_init(&o->memory);
        o->item = it;
        sc->nobjects = ++n;
        if ((err = read_object(it, n - 1, o, errbuf, errlen)) != MS_OK)
            return err;
    }
    qsort(sc->objects, sc->nobjects, sizeof *sc->objects, by_object_key);
    for (size_t i = 1; i < sc->nobjects; i++)
        if (strcmp(sc->objects[i - 1].key, sc->objects[i].key) == 0)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID, "objects: key \"%s\" is given twice",
                           sc->objects[i].key);
    return MS_OK;
}

/* Every object's state, loaded at the first round's time. */
static ms_err_t read_object_states(ms__scenario_t *sc, char *errbuf, size_t errlen)
{
    ms_err_t err;

    for (size_t i = 0; i < sc->nobjects; i++) {
        ms__object_t *o = &sc->objects[i];
        const cJSON *state = ms_json_child(o->item, "state");
        ms_jpath_t path;
        int index = 0;
        const cJSON *it;

        if (ms_json_is_absent(state))
            continue;
        cJSON_ArrayForEach(it, ms_json_child(sc->root, "objects"))
        {
            if (it == o->item)
                break;
            index++;
        }
        ms_jpath_init(&path, "objects");
        ms_jpath_push_index(&path, (size_t)index);
        ms_jpath_push_key(&path, "state");
        if ((err = read_state(&o->spec, &o->memory, sc->first_time, state, &path, errbuf,
                              errlen)) != MS_OK)
            return err;
    }
    return MS_OK;
}

/* "ticks": a non-empty array; sc->first_time from ticks[0].time. */
static ms_err_t read_ticks_array(ms__scenario_t *sc, char *errbuf, size_t errlen)
{
    ms_jpath_t path;
    ms_err_t err;

    ms_jpath_init(&path, "ticks");
    sc->ticks = ms_json_child(sc->root, "ticks");
    if (ms_json_is_absent(sc->ticks))
        return ms_jpath_errf(&path, errbuf, errlen, "required");
    if ((err = ms_json_array(sc->ticks, &path, errbuf, errlen)) != MS_OK)
        return err;
    if (cJSON_GetArraySize(sc->ticks) == 0)
        return ms_jpath_errf(&path, errbuf, errlen, "at least one tick is required");
    /* The first tick's time is needed to check and load the state. */
    return read_tick_time(sc->ticks->child, &path, 0, -INFINITY, &sc->first_time, errbuf, errlen);
}

static ms_err_t parse_single(ms__scenario_t *sc, char *errbuf, size_t errlen)
{
    const cJSON *item = ms_json_child(sc->root, "spec");
    ms_jpath_t path;
    ms_err_t err;

    ms_jpath_init(&path, "spec");
    if (ms_json_is_absent(item))
        return ms_jpath_errf(&path, errbuf, errlen, "required");
    if ((err = ms_spec_from_json(item, &path, true, &sc->spec, errbuf, errlen)) != MS_OK)
        return err;
    if ((err = read_ticks_array(sc, errbuf, errlen)) != MS_OK)
        return err;
    /* ticks[0] in full before the state, as the single-object reader always did. */
    {
        ms__tick_t first;
        if ((err = ms__tick_read(sc, sc->ticks->child, 0, -INFINITY, &first, errbuf, errlen)) !=
            MS_OK)
            return err;
    }
    item = ms_json_child(sc->root, "state");
    ms_jpath_init(&path, "state");
    if (!ms_json_is_absent(item) && (err = read_state(&sc->spec, &sc->memory, sc->first_time, item,
                                                      &path, errbuf, errlen)) != MS_OK)
        return err;
    return check_ticks(sc, errbuf, errlen);
}

static ms_err_t parse_rounds(ms__scenario_t *sc, const cJSON *objects, char *errbuf, size_t errlen)
{
    ms_err_t err;

    if ((err = read_objects(sc, objects, errbuf, errlen)) != MS_OK)
        return err;
    if ((err = read_ticks_array(sc, errbuf, errlen)) != MS_OK)
        return err;
    if ((err = read_object_states(sc, errbuf, errlen)) != MS_OK)
        return err;
    return check_rounds(sc, errbuf, errlen);
}

ms_err_t ms__scenario_parse(const char *text, size_t len, ms__scenario_t *sc, char *errbuf,
                            size_t errlen)
{
    const char *end = NULL;
    const cJSON *objects;
    ms_jpath_t path;
    ms_err_t err = MS_OK;

    memset(sc, 0, sizeof *sc);
    ms_spec_init(&sc->spec);
    ms_engine_memory_init(&sc->memory);
    if (len > MS_DECIDE_MAX_INPUT_BYTES) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "$: input is larger than %u bytes",
                      MS_DECIDE_MAX_INPUT_BYTES);
        goto out;
    }
    sc->root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (sc->root == NULL) {
        size_t line = 1, column = 1;
        if (end != NULL)
            ms_json_position(text, end, &line, &column);
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "$: not valid JSON (at line %zu, column %zu)",
                      line, column);
        goto out;
    }
    /* cJSON stops after the first value; anything but space after it means
     * the file is not the one document it claims to be. */
    while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
        end++;
    if (end < text + len) {
        size_t line = 1, column = 1;
        ms_json_position(text, end, &line, &column);
        err = ms_errf(
            errbuf, errlen, MS_ERR_INVALID,
            "$: not valid JSON (unexpected data after the document at line %zu, column %zu)", line,
            column);
        goto out;
    }
    ms_jpath_init(&path, "");
    if ((err = ms_json_object(sc->root, &path, errbuf, errlen)) != MS_OK)
        goto out;
    /* A key given twice is read differently by different JSON readers (cJSON
     * takes the first, the API server the last): refuse it. */
    if ((err = ms_json_unique_keys(sc->root, &path, errbuf, errlen)) != MS_OK)
        goto out;
    /* Rounds (§3): top-level "objects" instead of "spec". */
    objects = ms_json_child(sc->root, "objects");
    if (ms_json_is_absent(objects))
        err = parse_single(sc, errbuf, errlen);
    else if (ms_json_is_absent(ms_json_child(sc->root, "spec")))
        err = parse_rounds(sc, objects, errbuf, errlen);
    else
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID,
                      "$: give either spec (one object) or objects (rounds), not both");
out:
    if (err != MS_OK)
        ms__scenario_cleanup(sc);
    return err;
}

void ms__scenario_cleanup(ms__scenario_t *sc)
{
    if (sc == NULL)
        return;
    cJSON_Delete(sc->root);
    sc->root = NULL;
    sc->ticks = NULL;
    ms_spec_cleanup(&sc->spec);
    for (size_t i = 0; i < sc->nobjects; i++)
        ms_spec_cleanup(&sc->objects[i].spec);
    free(sc->objects);
    sc->objects = NULL;
    sc->nobjects = 0;
}
