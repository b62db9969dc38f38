/*
 * decide.c - run a validated scenario tick by tick and print each decision
 * as JSON Lines (the contract) or as readable text.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/decide.h"
#include "meshscaler/decision_json.h"
#include "meshscaler/xalloc.h"
#include "scenario.h"

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

/* One output line: the decision as JSON (with "key" first for a round's
 * object) or as text. Returns NULL without memory; the caller frees it. */
static char *decision_line(const ms_spec_t *spec, const ms_engine_memory_t *mem, const char *key,
                           double time, const ms_decision_t *d, ms_decide_format_t format)
{
    char *line;

    if (format == MS_DECIDE_TEXT) {
        char *text = decision_text(spec, time, d);

        if (text == NULL || key == NULL)
            return text;
        line = malloc(strlen(key) + strlen(text) + 2);
        if (line != NULL)
            snprintf(line, strlen(key) + strlen(text) + 2, "%s %s", key, text);
        free(text);
        return line;
    }
    cJSON *o = ms_decision_to_json(spec, mem, time, d);
    if (o != NULL && key != NULL) {
        cJSON *k = cJSON_CreateString(key);

        if (k == NULL || !cJSON_AddItemToObject(o, "key", k)) {
            cJSON_Delete(k);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_DetachItemViaPointer(o, k); /* keeps its name: move it first */
        cJSON_InsertItemInArray(o, 0, k);
    }
    line = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return line;
}

/* Hand line to emit and free it. */
static ms_err_t emit_line(ms_decide_emit_fn emit, void *ctx, char *line, size_t index, char *errbuf,
                          size_t errlen)
{
    int stop;

    if (line == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory writing ticks[%zu]", index);
    stop = emit(ctx, line, strlen(line));
    free(line);
    if (stop)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "output stopped at ticks[%zu]", index);
    return MS_OK;
}

/* The observation of a tick: counts default as docs/decide.md says. */
static void fill_counts(ms__tick_t *t, double time, int32_t closed_loop)
{
    t->obs.now = time;
    t->obs.current_replicas = t->has_current ? t->current : closed_loop;
    t->obs.ready_replicas = t->has_ready ? t->ready : t->obs.current_replicas;
    t->obs.running_replicas = (ms_pods_t){t->has_running, t->running};
}

static ms_err_t run_single(ms__scenario_t *sc, ms_decide_format_t format, ms_decide_emit_fn emit,
                           void *ctx, char *errbuf, size_t errlen)
{
    const cJSON *item;
    double prev = -INFINITY;
    int32_t closed_loop = 0; /* the previous tick's desired count */
    size_t index = 0;
    ms_err_t err;

    cJSON_ArrayForEach(item, sc->ticks)
    {
        ms__tick_t tick;
        ms_decision_t d;

        if ((err = ms__tick_read(sc, item, index, prev, &tick, errbuf, errlen)) != MS_OK)
            return err;
        fill_counts(&tick, tick.time, closed_loop);
        if (ms_engine_decide(&sc->spec, &sc->memory, &tick.obs, &d) != MS_OK)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "ticks[%zu]: the engine refused the tick", index);
        err =
            emit_line(emit, ctx, decision_line(&sc->spec, &sc->memory, NULL, tick.time, &d, format),
                      index, errbuf, errlen);
        if (err != MS_OK)
            return err;
        closed_loop = d.desired_replicas;
        prev = tick.time;
        index++;
    }
    return MS_OK;
}

/* Per-object state of a run of rounds, indexed like sc->objects. */
typedef struct {
    bool *seen;           /* decided in an earlier round */
    int32_t *closed_loop; /* its previous desired count */
    ms_decision_t *decisions;
    ms_round_member_t *members;
} rounds_t;

/* One round (docs/decision-rules.md §2b): steps 1-7 for every object it
 * lists, the shared budgets, then step 8 and a line per object in key order. */
static ms_err_t run_round(ms__scenario_t *sc, rounds_t *r, const cJSON *item, size_t index,
                          double time, ms_decide_format_t format, ms_decide_emit_fn emit, void *ctx,
                          char *errbuf, size_t errlen)
{
    const cJSON *objects = cJSON_GetObjectItemCaseSensitive(item, "objects");
    size_t n = 0;
    ms_err_t err;

    for (size_t o = 0; o < sc->nobjects; o++) { /* sorted: key order */
        const cJSON *mine = cJSON_GetObjectItemCaseSensitive(objects, sc->objects[o].key);
        ms__tick_t tick;

        if (mine == NULL)
            continue; /* not due this round */
        if ((err = ms__round_object_read(sc, mine, o, !r->seen[o], &tick, errbuf, errlen)) != MS_OK)
            return err;
        fill_counts(&tick, time, r->closed_loop[o]);
        tick.obs.defer_scale_event = true; /* step 8 after the budgets */
        if (ms_engine_decide(&sc->objects[o].spec, &sc->objects[o].memory, &tick.obs,
                             &r->decisions[n]) != MS_OK)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "ticks[%zu].objects.%s: the engine refused the tick", index,
                           sc->objects[o].key);
        r->members[n] =
            (ms_round_member_t){sc->objects[o].key, &sc->objects[o].spec, &r->decisions[n]};
        n++;
    }
    if ((err = ms_engine_share_budgets(r->members, n)) != MS_OK)
        return ms_errf(errbuf, errlen, err, "ticks[%zu]: the budgets refused the round", index);
    for (size_t m = 0; m < n; m++) {
        int o = ms__scenario_object_index(sc, r->members[m].key);
        ms__object_t *obj = &sc->objects[o];
        const ms_decision_t *d = r->members[m].decision;

        ms_engine_record_scale(&obj->memory, &obj->spec, time,
                               d->desired_replicas - d->current_replicas); /* step 8 */
        r->seen[o] = true;
        r->closed_loop[o] = d->desired_replicas;
        err =
            emit_line(emit, ctx, decision_line(&obj->spec, &obj->memory, obj->key, time, d, format),
                      index, errbuf, errlen);
        if (err != MS_OK)
            return err;
    }
    return MS_OK;
}

static ms_err_t run_rounds(ms__scenario_t *sc, ms_decide_format_t format, ms_decide_emit_fn emit,
                           void *ctx, char *errbuf, size_t errlen)
{
    rounds_t r;
    const cJSON *item;
    size_t index = 0;
    ms_err_t err = MS_OK;

    r.seen = ms_xcalloc(sc->nobjects, sizeof *r.seen);
    r.closed_loop = ms_xcalloc(sc->nobjects, sizeof *r.closed_loop);
    r.decisions = ms_xcalloc(sc->nobjects, sizeof *r.decisions);
    r.members = ms_xcalloc(sc->nobjects, sizeof *r.members);
    cJSON_ArrayForEach(item, sc->ticks)
    {
        /* Validated: every round is an object with a number "time". */
        double time = cJSON_GetObjectItemCaseSensitive(item, "time")->valuedouble;

        if ((err = run_round(sc, &r, item, index, time, format, emit, ctx, errbuf, errlen)) !=
            MS_OK)
            goto out;
        index++;
    }
out:
    free(r.seen);
    free(r.closed_loop);
    free(r.decisions);
    free(r.members);
    return err;
}

ms_err_t ms_decide_run(const char *text, size_t len, ms_decide_format_t format,
                       ms_decide_emit_fn emit, void *ctx, char *errbuf, size_t errlen)
{
    ms__scenario_t sc;
    ms_err_t err = ms__scenario_parse(text, len, &sc, errbuf, errlen);

    if (err != MS_OK)
        return err;
    if (sc.objects != NULL)
        err = run_rounds(&sc, format, emit, ctx, errbuf, errlen);
    else
        err = run_single(&sc, format, emit, ctx, errbuf, errlen);
    ms__scenario_cleanup(&sc);
    return err;
}
