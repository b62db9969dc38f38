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
        tick.obs.running_replicas = (ms_pods_t){tick.has_running, tick.running};
        if ((err = ms_engine_decide(&sc.spec, &sc.memory, &tick.obs, &d)) != MS_OK) {
            ms_errf(errbuf, errlen, err, "ticks[%zu]: the engine refused the tick", index);
            goto out;
        }
        if (format == MS_DECIDE_TEXT) {
            line = decision_text(&sc.spec, tick.time, &d);
        } else {
            cJSON *o = ms_decision_to_json(&sc.spec, &sc.memory, tick.time, &d);
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
