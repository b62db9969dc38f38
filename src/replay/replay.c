/*
 * replay.c - the engine over Prometheus' history (replay.h says what a
 * replay models).
 *
 * A tick plans the object's queries at every step, as in the controller; its
 * runner (answer_step) answers each from a cache of range queries holding
 * one chunk of steps per query text, fetched the first time a step of the
 * chunk asks for it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/replay.h"
#include "meshscaler/xalloc.h"

/* One query text and the matrix of its current chunk. */
typedef struct {
    char *text;  /* as sent: owned */
    char *plain; /* as the tick planned it, the cache key: owned */
    ms_prom_result_t matrix;
    size_t chunk; /* the chunk matrix holds; SIZE_MAX: none */
} cached_t;

typedef struct {
    ms_prom_client_t *client;
    const ms_replay_options_t *o;
    char *workload_filter; /* " and on (namespace, W) ...": narrows a preset; owned */
    cached_t *cache;
    size_t ncache, capcache;
    size_t chunk_steps;
    size_t max_bytes;             /* the memory budget (replay.h) */
    double t;                     /* the step being answered */
    char failure[MS_ERRBUF_SIZE]; /* why a chunk could not be read at all */
} runner_t;

static size_t chunk_of(const runner_t *r, double t)
{
    return (size_t)llround((t - r->o->from) / r->o->step) / r->chunk_steps;
}

static cached_t *lookup(runner_t *r, const char *text, bool preset)
{
    cached_t *c;

    for (size_t i = 0; i < r->ncache; i++)
        if (strcmp(r->cache[i].plain, text) == 0)
            return &r->cache[i];
    r->cache = ms_xgrow(r->cache, &r->capcache, r->ncache + 1, sizeof *r->cache);
    c = &r->cache[r->ncache++];
    c->plain = ms_xstrdup(text);
    c->text = preset ? ms_xasprintf("(%s)%s", text, r->workload_filter) : ms_xstrdup(text);
    ms_prom_result_init(&c->matrix);
    c->chunk = SIZE_MAX;
    return c;
}

/* Every query of a batch failed before Prometheus evaluated it: no
 * history can be read, which is the replay's error, not missing values. */
static bool unreachable(const ms_prom_query_t *qs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (qs[i].result.reason) {
        case MS_PROM_UNAVAILABLE:
        case MS_PROM_TIMEOUT:
        case MS_PROM_TLS:
        case MS_PROM_TRANSPORT:
        case MS_PROM_CREDENTIALS:
        case MS_PROM_UNAUTHORIZED:
        case MS_PROM_HTTP_STATUS:
        case MS_PROM_MALFORMED:
            break;
        default:
            return false;
        }
    }
    return true;
}

/* The budget as a person reads it: "64 MiB", "300 bytes". */
static void budget_text(size_t bytes, char *out, size_t cap)
{
    if (bytes >= 1024u * 1024u)
        snprintf(out, cap, "%.4g MiB", (double)bytes / (1024.0 * 1024.0));
    else
        snprintf(out, cap, "%zu bytes", bytes);
}

/* A query of the batch was cut off by the budget: the replay cannot be
 * right without it, so it stops and says how to ask for less. */
static ms_err_t over_budget(runner_t *r, const ms_prom_query_t *qs, size_t n, double start,
                            double end)
{
    char budget[32];

    for (size_t i = 0; i < n; i++) {
        if (qs[i].result.reason != MS_PROM_TOO_LARGE)
            continue;
        budget_text(r->max_bytes, budget, sizeof budget);
        ms_errf(r->failure, sizeof r->failure, MS_ERR_TOOLARGE,
                "%zu answers for %.0f..%.0f exceed the memory budget of %s (--max-memory): "
                "replay a shorter range (--from/--to), a longer --step or fewer --chunk-steps "
                "(now %zu)",
                n, start, end, budget, r->chunk_steps);
        return MS_ERR_TOOLARGE;
    }
    return MS_OK;
}

/* Read chunk k of every cached query that does not hold it, the answers
 * together within the memory budget. */
static ms_err_t load_chunk(runner_t *r, size_t k)
{
    const ms_replay_options_t *o = r->o;
    double start = o->from + (double)(k * r->chunk_steps) * o->step;
    double end = fmin(o->to, start + (double)(r->chunk_steps - 1) * o->step);
    ms_prom_query_t *qs = ms_xcalloc(r->ncache, sizeof *qs);
    size_t *which = ms_xcalloc(r->ncache, sizeof *which);
    ms_prom_run_options_t ro = {.max_total_bytes = r->max_bytes};
    size_t m = 0;
    ms_err_t err;

    for (size_t i = 0; i < r->ncache; i++) {
        if (r->cache[i].chunk == k)
            continue;
        /* What the matrix held before goes first: the budget is for one chunk. */
        ms_prom_result_cleanup(&r->cache[i].matrix);
        r->cache[i].chunk = SIZE_MAX;
        qs[m] = (ms_prom_query_t){.query = r->cache[i].text,
                                  .range = true,
                                  .start = start,
                                  .end = end,
                                  .step = o->step,
                                  .max_bytes = r->max_bytes};
        ms_prom_result_init(&qs[m].result);
        which[m++] = i;
    }
    err = m > 0 ? ms_prom_run_bounded(r->client, qs, m, &ro) : MS_OK;
    if (err == MS_OK)
        err = over_budget(r, qs, m, start, end);
    if (err == MS_OK && m > 0 && unreachable(qs, m)) {
        snprintf(r->failure, sizeof r->failure, "Prometheus: %.200s", qs[0].result.message);
        err = MS_ERR_UNAVAILABLE;
    }
    for (size_t j = 0; j < m; j++) {
        cached_t *c = &r->cache[which[j]];
        ms_prom_result_cleanup(&c->matrix);
        c->matrix = qs[j].result; /* moved: the query's copy is not cleaned */
        c->chunk = k;
    }
    if (err == MS_OK && m > 0 && o->progress != NULL)
        o->progress(o->progress_ctx, end, o->from, o->to);
    free(qs);
    free(which);
    return err;
}

/* The tick's runner: each planned query answered at r->t. */
static ms_err_t answer_step(void *ctx, ms_prom_query_t *queries, size_t n)
{
    runner_t *r = ctx;
    ms_err_t err;

    /* Every query into the cache first, so one batch reads a new chunk. */
    for (size_t i = 0; i < n; i++)
        lookup(r, queries[i].query, queries[i].preset);
    err = load_chunk(r, chunk_of(r, r->t));
    for (size_t i = 0; i < n && err == MS_OK; i++)
        ms_prom_result_at(&lookup(r, queries[i].query, queries[i].preset)->matrix, r->t,
                          &queries[i].result);
    return err;
}

/* ---- the object and its defaults ---- */

/* {{podRegex}} without a live scale selector: the pod names of the kind. */
static char *default_pod_regex(const ms_spec_t *spec)
{
    char *name = ms_prom_regex_escape(spec->target_name);
    char *re = ms_xasprintf(strcmp(spec->target_kind, "StatefulSet") == 0
                                ? "%s-[0-9]+"
                                : "%s-[a-z0-9]{6,10}-[a-z0-9]{5}",
                            name);

    free(name);
    return re;
}

static const char *default_replicas_query(const ms_spec_t *spec)
{
    if (strcmp(spec->target_kind, "Deployment") == 0)
        return "kube_deployment_spec_replicas{namespace=\"{{namespace}}\",deployment=\"{{name}}\"}";
    if (strcmp(spec->target_kind, "StatefulSet") == 0)
        return "kube_statefulset_replicas{namespace=\"{{namespace}}\",statefulset=\"{{name}}\"}";
    return "";
}

/* " and on (namespace, W) <one sample with the object's namespace and W>". */
static char *workload_filter(const ms_replay_options_t *o)
{
    const char *label = ms_prom_preset_workload_label(&o->presets);
    ms_prom_template_vars_t vars = {o->namespace_name, o->spec->target_name, NULL, NULL};
    char *out = NULL, *tmpl, errbuf[MS_ERRBUF_SIZE];

    tmpl = ms_xasprintf(" and on (namespace, %s) label_replace(label_replace(vector(1), "
                        "\"namespace\", \"{{namespace}}\", \"\", \"\"), \"%s\", \"{{name}}\", "
                        "\"\", \"\")",
                        label, label);
    if (ms_prom_template_expand(tmpl, &vars, &out, errbuf, sizeof errbuf) != MS_OK)
        out = ms_xstrdup(""); /* the whole namespace then: larger, still right */
    free(tmpl);
    return out;
}

/* ---- one step ---- */

static int32_t read_replicas(runner_t *r, const char *query)
{
    ms_prom_query_t q = {.query = query};
    double v;

    ms_prom_result_init(&q.result);
    if (answer_step(r, &q, 1) != MS_OK ||
        ms_prom_result_number(&q.result, 0, 0, &v, NULL, 0) != MS_PROM_OK || v < 0 ||
        v > INT32_MAX) {
        ms_prom_result_cleanup(&q.result);
        return -1;
    }
    ms_prom_result_cleanup(&q.result);
    return (int32_t)llround(v);
}

/* Per-pod readings spread over meshscaler's count (replay.h). */
static void spread(const ms_spec_t *spec, ms_observation_t *obs, int32_t actual, int32_t own)
{
    if (actual < 0 || actual == own)
        return;
    for (size_t i = 0; i < spec->nmetrics; i++) {
        if (!obs->metrics[i].present)
            continue;
        /* The pods that reported were the actual ones: no count to compare
         * with meshscaler's ready pods. */
        obs->metric_pods[i].known = false;
        if (spec->metrics[i].target_type != MS_TARGET_AVERAGE_VALUE)
            obs->metrics[i].value *= own > 0 ? (double)actual / own : 1.0;
    }
}

/* The reading over its target, as a ratio, at `count` replicas (the
 * engine's rule); NAN for a total spread over no replicas. */
static double load_ratio(const ms_metric_spec_t *m, double value, int32_t count)
{
    if (m->target_type == MS_TARGET_AVERAGE_VALUE && count <= 0)
        return NAN;
    return ms_engine_ratio(m, value, count);
}

static void account(const ms_spec_t *spec, const ms_replay_tick_t *tk, int32_t prev_actual,
                    ms_replay_summary_t *s)
{
    const ms_decision_t *d = tk->decision;
    bool above = false, actual_above = false;

    s->steps++;
    s->replica_seconds += d->desired_replicas * s->step;
    if (tk->actual >= 0) {
        s->known_steps++;
        s->actual_replica_seconds += tk->actual * s->step;
        s->meshscaler_same_span += d->desired_replicas * s->step;
    }
    for (size_t i = 0; i < spec->nmetrics; i++) {
        if (d->metrics[i].has_replicas && d->metrics[i].ratio > 1 + spec->scale_up.tolerance)
            above = true;
        if (tk->read->metrics[i].present && tk->actual >= 0 &&
            load_ratio(&spec->metrics[i], tk->read->metrics[i].value, tk->actual) >
                1 + spec->scale_up.tolerance)
            actual_above = true;
    }
    s->above_target_seconds += above ? s->step : 0;
    s->actual_above_target_seconds += actual_above ? s->step : 0;
    if (d->desired_replicas != d->current_replicas)
        s->scale_events++;
    if (d->desired_replicas > d->current_replicas && isnan(s->first_scale_up))
        s->first_scale_up = tk->time;
    if (prev_actual >= 0 && tk->actual >= 0 && tk->actual != prev_actual) {
        s->actual_changes++;
        if (tk->actual > prev_actual && isnan(s->first_actual_scale_up))
            s->first_actual_scale_up = tk->time;
    }
    if (spec->nmetrics > 0 && d->metrics_missing == spec->nmetrics)
        s->blind_steps++;
}

static ms_err_t check_options(const ms_replay_options_t *o, size_t *steps, char *errbuf,
                              size_t errlen)
{
    if (o->spec == NULL || o->spec->target_name == NULL || o->spec->target_kind == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "the MeshAutoscaler has no scaleTargetRef");
    if (!(isfinite(o->from) && isfinite(o->to) && o->from <= o->to))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "--from must not be after --to");
    if (!(o->step >= 1))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "--step must be at least 1 s");
    if ((o->to - o->from) / o->step >= MS_REPLAY_MAX_STEPS)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%.0f steps: at most %d (a longer --step, or a shorter range)",
                       floor((o->to - o->from) / o->step) + 1, MS_REPLAY_MAX_STEPS);
    *steps = (size_t)floor((o->to - o->from) / o->step) + 1;
    return MS_OK;
}

/* The replicas query for o (its template expanded; the default for the
 * target's kind), into *out (caller frees; NULL when there is none). */
static ms_err_t replicas_query(const ms_replay_options_t *o, const char *pod_regex, char **out,
                               char *errbuf, size_t errlen)
{
    const ms_spec_t *spec = o->spec;
    const char *tmpl = o->replicas_query ? o->replicas_query : default_replicas_query(spec);
    ms_prom_template_vars_t vars = {o->namespace_name, spec->target_name, spec->target_kind,
                                    pod_regex};
    char why[MS_ERRBUF_SIZE];

    *out = NULL;
    if (tmpl[0] != '\0' && ms_prom_template_expand(tmpl, &vars, out, why, sizeof why) != MS_OK)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "--replicas-query: %s", why);
    return MS_OK;
}

static void runner_cleanup(runner_t *r)
{
    for (size_t i = 0; i < r->ncache; i++) {
        free(r->cache[i].text);
        free(r->cache[i].plain);
        ms_prom_result_cleanup(&r->cache[i].matrix);
    }
    free(r->cache);
    free(r->workload_filter);
}

ms_err_t ms_replay_run(ms_prom_client_t *client, const ms_replay_options_t *o, ms_replay_tick_fn fn,
                       void *ctx, ms_replay_summary_t *sum, char *errbuf, size_t errlen)
{
    const ms_spec_t *spec = o->spec;
    runner_t r = {.client = client, .o = o};
    ms_prom_tick_t *tick = NULL;
    ms_engine_memory_t mem;
    char *pod_regex = NULL, *replicas = NULL;
    int32_t own = -1, prev_actual = -1;
    size_t steps = 0;
    ms_err_t err = check_options(o, &steps, errbuf, errlen);

    memset(sum, 0, sizeof *sum);
    sum->step = o->step;
    sum->first_scale_up = sum->first_actual_scale_up = NAN;
    if (err != MS_OK)
        return err;
    r.chunk_steps = o->chunk_steps ? o->chunk_steps : MS_REPLAY_DEFAULT_CHUNK_STEPS;
    r.max_bytes = o->max_bytes ? o->max_bytes : MS_REPLAY_DEFAULT_MAX_BYTES;
    r.workload_filter = workload_filter(o);
    pod_regex = o->pod_regex ? ms_xstrdup(o->pod_regex) : default_pod_regex(spec);
    if ((err = replicas_query(o, pod_regex, &replicas, errbuf, errlen)) != MS_OK)
        goto out;
    /* Into the cache before the first step, so its chunks are read with the
     * tick's queries. */
    if (replicas != NULL)
        lookup(&r, replicas, false);
    if ((tick = ms_prom_tick_new(&o->presets, errbuf, errlen)) == NULL) {
        err = MS_ERR_INVALID;
        goto out;
    }
    ms_engine_memory_init(&mem);
    for (size_t k = 0; k < steps && err == MS_OK; k++) {
        ms_prom_object_t obj = {
            spec, o->namespace_name, spec->target_name, spec->target_kind, pod_regex, NULL};
        ms_prom_object_obs_t seen;
        ms_observation_t obs;
        ms_decision_t d;
        ms_replay_tick_t tk;

        r.t = o->from + (double)k * o->step;
        if ((err = ms_prom_tick_run_with(tick, answer_step, &r, &obj, 1, &seen)) != MS_OK) {
            ms_errf(errbuf, errlen, err, "%s", r.failure[0] ? r.failure : ms_strerror(err));
            break;
        }
        tk = (ms_replay_tick_t){
            r.t, replicas ? read_replicas(&r, replicas) : -1, &seen.obs, &obs, &seen, &d, &mem};
        if (own < 0)
            own = tk.actual >= 0          ? tk.actual
                  : o->start_replicas > 0 ? o->start_replicas
                                          : spec->min_replicas;
        obs = seen.obs;
        obs.now = r.t;
        obs.current_replicas = own;
        obs.ready_replicas = own;
        spread(spec, &obs, tk.actual, own);
        if ((err = ms_engine_decide(spec, &mem, &obs, &d)) != MS_OK) {
            ms_errf(errbuf, errlen, err, "the engine refused step %zu", k);
            break;
        }
        account(spec, &tk, prev_actual, sum);
        if (fn != NULL && fn(ctx, &tk) != 0)
            err = ms_errf(errbuf, errlen, MS_ERR_IO, "stopped at step %zu", k);
        own = d.desired_replicas;
        prev_actual = tk.actual >= 0 ? tk.actual : prev_actual;
    }
out:
    runner_cleanup(&r);
    free(pod_regex);
    free(replicas);
    ms_prom_tick_free(tick);
    return err;
}

void ms_replay_point(const ms_spec_t *spec, const ms_replay_tick_t *tick, ms_replay_point_t *out)
{
    const ms_decision_t *d = tick->decision;

    out->time = tick->time;
    out->desired = d->desired_replicas;
    out->actual = tick->actual;
    for (size_t i = 0; i < MS_MAX_METRICS; i++) {
        out->load[i] = out->actual_load[i] = NAN;
        if (i >= spec->nmetrics)
            continue;
        if (tick->obs->metrics[i].present)
            out->load[i] = 100 * load_ratio(&spec->metrics[i], tick->obs->metrics[i].value,
                                            d->current_replicas);
        if (tick->read->metrics[i].present && tick->actual >= 0)
            out->actual_load[i] =
                100 * load_ratio(&spec->metrics[i], tick->read->metrics[i].value, tick->actual);
    }
}
