/*
 * reconcile.c - one sync of a batch of keys, in four passes:
 *
 *   1. load: re-read each object from the informer cache (never an event
 *      payload), parse its spec and pausing annotations, GET its target's
 *      scale, and list the target's pods when a query needs {{podRegex}} or
 *      a target counts ready replicas;
 *   2. observe: one batched Prometheus tick for every object that got this
 *      far (prom_sources.h: one query per preset kind, user PromQL
 *      deduplicated);
 *   3. decide and apply: the engine with the object's memory; pausing and
 *      conflicts; an optimistic scale update (409: re-read, decide again,
 *      never overwrite);
 *   4. report (report.c) and schedule the next sync.
 *
 * An object's failure never stops the others in its batch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/conflict.h"
#include "meshscaler/log.h"
#include "meshscaler/spec_json.h"

#define MAX_CONFLICT_RETRIES 3

void ms__kube_observe(ms_controller_t *c, const char *operation, double started, ms_err_t err)
{
    const char *code = err == MS_OK ? "ok" : ms_err_name(err) + 7; /* drop "MS_ERR_" */
    const char *labels[] = {operation, code};

    ms_metrics_observe(c->metrics, c->fam.kube_seconds, labels, ms_clock_monotonic() - started);
    ms_metrics_add(c->metrics, c->fam.kube_requests, labels, 1);
}

static const char *meta_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool uses_pod_regex(const char *q) { return q != NULL && strstr(q, "{{podRegex}}") != NULL; }

/* Pods are listed only when something needs them: a {{podRegex}} query, or
 * a target that counts ready replicas (Utilization, Value). */
bool ms__spec_needs_pods(const ms_spec_t *s)
{
    for (size_t i = 0; i < s->nmetrics; i++)
        if (uses_pod_regex(s->metrics[i].query) || s->metrics[i].target_type != MS_TARGET_AVERAGE_VALUE)
            return true;
    for (size_t i = 0; i < s->ndownstreams; i++)
        if (uses_pod_regex(s->downstreams[i].usage_query) ||
            uses_pod_regex(s->downstreams[i].limit_query))
            return true;
    for (size_t i = 0; i < s->nmetrics; i++)
        if (uses_pod_regex(s->saturation[i].admitted_query) ||
            uses_pod_regex(s->saturation[i].rejected_query))
            return true;
    return uses_pod_regex(s->retry_storm.retry_share_query);
}

/* ---- pass 1: load ---- */

typedef struct {
    char **names;
    size_t n, cap;
    int32_t ready;
} pods_t;

static bool pod_is_ready(const cJSON *pod)
{
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions");
    const cJSON *cond;

    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "deletionTimestamp") != NULL)
        return false;
    cJSON_ArrayForEach(cond, conds) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cond, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cond, "status");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "Ready") == 0)
            return cJSON_IsString(s) && strcmp(s->valuestring, "True") == 0;
    }
    return false;
}

static ms_err_t on_pod(void *ctx, cJSON *pod)
{
    pods_t *p = ctx;
    const char *name = meta_str(pod, "name");

    if (name == NULL)
        return MS_OK;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        char **grown = realloc(p->names, cap * sizeof *grown);
        if (grown == NULL)
            return MS_ERR_NOMEM;
        p->names = grown;
        p->cap = cap;
    }
    if ((p->names[p->n] = strdup(name)) == NULL)
        return MS_ERR_NOMEM;
    p->n++;
    if (pod_is_ready(pod))
        p->ready++;
    return MS_OK;
}

static void list_pods(ms_controller_t *c, ms__item_t *it)
{
    pods_t p = {0};
    char path[512], rv[64];
    ms_kube_error_t kerr = {0};
    double t0 = ms_clock_monotonic();
    ms_err_t err;

    if (it->scale.selector[0] == '\0' ||
        ms_kube_path(path, sizeof path, "v1", it->ns, "pods", NULL, NULL) != MS_OK)
        return;
    err = ms_kube_list(it->kube, path, it->scale.selector, 500, on_pod, &p, rv, sizeof rv, NULL,
                       &kerr);
    ms__kube_observe(c, "list_pods", t0, err);
    if (err == MS_OK) {
        it->pods_ok = true;
        it->ready_pods = p.ready;
        it->pod_regex = ms_prom_pod_regex((const char *const *)p.names, p.n);
    } else {
        MS_LOG_WARN("cannot list the target's pods", MS_S("object", it->key),
                    MS_S("error", kerr.message));
    }
    for (size_t i = 0; i < p.n; i++)
        free(p.names[i]);
    free(p.names);
}

static void load(ms_controller_t *c, ms__item_t *it)
{
    const cJSON *spec_json, *md;
    ms_jpath_t path;
    double t0;
    ms_err_t err;

    it->stage = MS__SYNC_GONE;
    ms_spec_init(&it->spec);
    it->obj = ms_kube_informer_get(c->mas, it->key);
    if (it->obj == NULL)
        return;
    it->ns = meta_str(it->obj, "namespace");
    it->name = meta_str(it->obj, "name");
    it->uid = meta_str(it->obj, "uid");
    if (it->ns == NULL || it->name == NULL || it->uid == NULL) {
        cJSON_Delete(it->obj);
        it->obj = NULL;
        return;
    }
    md = cJSON_GetObjectItemCaseSensitive(it->obj, "metadata");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(md, "generation")))
        it->generation = (long long)cJSON_GetObjectItemCaseSensitive(md, "generation")->valuedouble;
    it->state = ms__objects_get(&c->objects, it->key, it->uid);
    it->period = c->cfg.sync_period;

    it->stage = MS__SYNC_INVALID;
    spec_json = cJSON_GetObjectItemCaseSensitive(it->obj, "spec");
    ms_jpath_init(&path, "spec");
    if (ms_spec_from_json(spec_json, &path, false, &it->spec, it->problem, sizeof it->problem) !=
        MS_OK)
        return;
    if (it->spec.sync_period_seconds > 0)
        it->period = it->spec.sync_period_seconds;
    {
        char perr[MS_ERRBUF_SIZE] = "";
        if (ms_pause_parse(cJSON_GetObjectItemCaseSensitive(md, "annotations"), &it->pause, perr,
                           sizeof perr) != MS_OK)
            MS_LOG_WARN("unreadable pausing annotation", MS_S("object", it->key), MS_S("error", perr));
    }

    it->stage = MS__SYNC_NO_SCALE;
    it->ref.api_version = it->spec.target_api_version;
    it->ref.kind = it->spec.target_kind;
    it->ref.namespace_ = it->ns;
    it->ref.name = it->spec.target_name;
    t0 = ms_clock_monotonic();
    err = ms_kube_scale_get(it->kube, &it->ref, &it->scale, &it->kerr);
    ms__kube_observe(c, "get_scale", t0, err);
    if (err != MS_OK) {
        /* A missing target or kind is the user's to fix: report and wait a
         * period. Anything else (API down, throttled) retries with backoff. */
        it->transient = err != MS_ERR_NOTFOUND && err != MS_ERR_FORBIDDEN && err != MS_ERR_INVALID;
        ms_errf(it->problem, sizeof it->problem, MS_OK, "%s", it->kerr.message);
        return;
    }
    it->need_pods = ms__spec_needs_pods(&it->spec);
    if (it->need_pods)
        list_pods(c, it);
    it->stage = MS__SYNC_OBSERVE;
}

/* ---- pass 2: observe ---- */

/* A query that needed {{podRegex}} when the pods could not be listed would
 * match nothing of the target: missing, never zero. */
static void drop_pod_queries(ms__item_t *it)
{
    ms_observation_t *o = &it->obs->obs;
    const ms_spec_t *s = &it->spec;

    if (it->pods_ok)
        return;
    for (size_t i = 0; i < s->nmetrics; i++) {
        if (uses_pod_regex(s->metrics[i].query)) {
            o->metrics[i].present = false;
            it->obs->metrics[i] = (ms_prom_why_t){MS_PROM_TEMPLATE,
                                                  "the target's pods could not be listed"};
        }
        if (uses_pod_regex(s->saturation[i].admitted_query) ||
            uses_pod_regex(s->saturation[i].rejected_query))
            o->saturation[i].admitted.present = o->saturation[i].rejected.present = false;
    }
    for (size_t i = 0; i < s->ndownstreams; i++)
        if (uses_pod_regex(s->downstreams[i].usage_query) ||
            uses_pod_regex(s->downstreams[i].limit_query))
            o->downstreams[i].usage.present = false;
    if (uses_pod_regex(s->retry_storm.retry_share_query))
        o->retry_share.present = false;
}

/* Returns the tick (its detail strings live until it is freed), or NULL. */
static ms_prom_tick_t *observe(ms_controller_t *c, ms__item_t *items, size_t n, double wall)
{
    ms_prom_object_t *objs = calloc(n, sizeof *objs);
    ms_prom_object_obs_t *outs = calloc(n, sizeof *outs);
    size_t *map = calloc(n, sizeof *map), m = 0;
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_prom_tick_t *tick = NULL;
    ms_prom_tick_stats_t st;
    ms_err_t err = MS_ERR_IO;

    if (objs == NULL || outs == NULL || map == NULL) {
        MS_LOG_ERROR("out of memory", MS_S("what", "prometheus tick"));
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        ms__item_t *it = &items[i];
        if (it->stage != MS__SYNC_OBSERVE)
            continue;
        objs[m].spec = &it->spec;
        objs[m].namespace_name = it->ns;
        objs[m].name = it->spec.target_name;
        objs[m].kind = it->spec.target_kind;
        objs[m].pod_regex = it->pod_regex;
        map[m++] = i;
    }
    if (m > 0 && (tick = ms_prom_tick_new(&c->cfg.presets, errbuf, sizeof errbuf)) != NULL) {
        err = ms_prom_tick_run(tick, c->prom, objs, m, wall, outs);
        ms_prom_tick_stats(tick, &st);
        ms_metrics_add(c->metrics, c->fam.prom_queries, NULL, (double)st.queries_sent);
        ms_metrics_add(c->metrics, c->fam.prom_failures, NULL, (double)st.failed_queries);
        ms_metrics_observe(c->metrics, c->fam.prom_seconds, NULL, st.seconds);
        MS_LOG_DEBUG("prometheus tick", MS_I("objects", (long long)m),
                     MS_I("queries", (long long)st.queries_sent),
                     MS_I("failed", (long long)st.failed_queries), MS_D("seconds", st.seconds));
        if (err != MS_OK) {
            /* The batch could not run: every value is missing (holds). */
            MS_LOG_WARN("prometheus tick failed", MS_S("error", ms_strerror(err)));
            for (size_t j = 0; j < m; j++)
                ms_observation_init(&outs[j].obs);
        }
    } else if (m > 0) {
        MS_LOG_ERROR("cannot plan the prometheus tick", MS_S("error", errbuf));
        for (size_t j = 0; j < m; j++)
            ms_observation_init(&outs[j].obs);
    }
    for (size_t j = 0; j < m; j++) {
        ms__item_t *it = &items[map[j]];
        it->obs = malloc(sizeof *it->obs);
        if (it->obs == NULL) {
            MS_LOG_ERROR("out of memory", MS_S("what", "observation"));
            abort();
        }
        *it->obs = outs[j];
        if (tick == NULL || err != MS_OK) /* no detail strings to borrow */
            for (size_t k = 0; k < MS_MAX_METRICS; k++)
                it->obs->metrics[k] = (ms_prom_why_t){MS_PROM_UNAVAILABLE, "the tick did not run"};
        drop_pod_queries(it);
    }
    free(objs);
    free(outs);
    free(map);
    return tick;
}

/* ---- pass 3: decide and apply ---- */

typedef struct {
    const char *self_key;
    ms_conflict_target_t target;
    bool is_hpa;
    bool found;
    char *who;
    size_t whocap;
} conflict_walk_t;

static void conflict_visit(void *ctx, const char *key, const cJSON *obj)
{
    conflict_walk_t *w = ctx;

    (void)key;
    if (!w->found && ms_conflict_check(w->self_key, &w->target, obj, w->is_hpa, w->who, w->whocap))
        w->found = true;
}

static bool find_conflict(ms_controller_t *c, ms__item_t *it)
{
    conflict_walk_t w = {it->key, {it->ns, it->spec.target_api_version, it->spec.target_kind,
                                   it->spec.target_name},
                         true, false, it->conflict_with, sizeof it->conflict_with};

    if (c->hpa != NULL)
        ms_kube_informer_foreach(c->hpa, conflict_visit, &w);
    w.is_hpa = false;
    if (!w.found)
        ms_kube_informer_foreach(c->mas, conflict_visit, &w);
    return w.found;
}

/* One engine decision from the item's scale and observation. */
static ms_err_t decide(ms__item_t *it)
{
    ms_observation_t obs = it->obs->obs;
    int32_t current = it->scale.replicas;

    obs.now = it->now;
    obs.current_replicas = current;
    /* Ready pods when they were counted and some are ready; otherwise
     * SPEC's default, the current count (no kubelet, no readiness yet). */
    obs.ready_replicas = it->pods_ok && it->ready_pods > 0 ? it->ready_pods : current;
    /* Only a scale that was written is a scale event (dry-run, pause,
     * conflicts and failed writes store none): recorded after the update. */
    obs.defer_scale_event = true;
    return ms_engine_decide(&it->spec, &it->state->memory, &obs, &it->d);
}

static void decide_and_apply(ms_controller_t *c, ms__item_t *it)
{
    ms_engine_memory_t before;
    bool dry = c->cfg.dry_run || it->spec.dry_run;
    int32_t change = 0;

    it->wall = ms_clock_wall();
    it->now = it->wall > it->state->last_now ? it->wall : it->state->last_now;
    it->state->last_now = it->now;
    if (!it->state->memory_ready) {
        ms__memory_restore(c, it);
        it->state->memory_ready = true;
    }
    it->conflict = !dry && find_conflict(c, it);
    for (int attempt = 0;; attempt++) {
        ms_kube_scale_t fresh;
        double t0;
        ms_err_t err;

        before = it->state->memory;
        if ((err = decide(it)) != MS_OK) {
            ms_errf(it->problem, sizeof it->problem, MS_OK, "the engine refused the observation: %s",
                     ms_strerror(err));
            it->stage = MS__SYNC_NO_SCALE;
            it->transient = true;
            return;
        }
        it->desired = it->d.desired_replicas;
        it->pause_effect = ms_pause_apply(&it->pause, it->scale.replicas, &it->desired);
        it->may_write = !dry && !it->conflict && it->pause_effect != MS_PAUSE_NO_WRITE;
        it->stage = MS__SYNC_DECIDED;
        if (!it->may_write || it->desired == it->scale.replicas)
            break;
        t0 = ms_clock_monotonic();
        memset(&it->write_err, 0, sizeof it->write_err);
        err = ms_kube_scale_update(it->kube, &it->ref, &it->scale, it->desired, &fresh,
                                   &it->write_err);
        ms__kube_observe(c, "update_scale", t0, err);
        if (err == MS_OK) {
            change = it->desired - it->scale.replicas;
            it->applied = true;
            it->state->last_scale_time = it->wall;
            break;
        }
        if (err == MS_ERR_CONFLICT && fresh.resource_version[0] != '\0' &&
            attempt + 1 < MAX_CONFLICT_RETRIES) {
            /* Someone else changed the target: forget this decision, decide
             * again from what is there now. Never overwrite. */
            it->state->memory = before;
            it->scale = fresh;
            continue;
        }
        it->write_failed = true;
        it->transient = true;
        break;
    }
    ms_engine_record_scale(&it->state->memory, &it->spec, it->now, change);
    ms_decision_explain(&it->spec, &it->d, it->explanation, sizeof it->explanation);
}

/* ---- the batch ---- */

/* Next sync: aligned to a multiple of the period on the wall clock, so
 * objects with the same period fall due together and share a tick. */
double ms__next_sync_delay(double period, double wall)
{
    double delay = period - fmod(wall, period);

    if (delay < period * 0.2)
        delay += period;
    return delay;
}

static void schedule(ms_controller_t *c, ms__item_t *it)
{
    switch (it->stage) {
    case MS__SYNC_GONE:
        return; /* deleted: nothing more to do */
    case MS__SYNC_INVALID:
        return; /* the user must fix the spec; its update enqueues the key */
    default:
        break;
    }
    if (it->transient) {
        ms_workqueue_add_rate_limited(c->queue, it->key);
        /* ... but never later than the next regular sync */
        ms_workqueue_add_after(c->queue, it->key, ms__next_sync_delay(it->period, ms_clock_wall()));
        return;
    }
    ms_workqueue_forget(c->queue, it->key);
    ms_workqueue_add_after(c->queue, it->key, ms__next_sync_delay(it->period, ms_clock_wall()));
}

static void gone(ms_controller_t *c, ms__item_t *it)
{
    const char *slash = strchr(it->key, '/');
    char ns[MS__KEY_MAX];

    ms_workqueue_forget(c->queue, it->key);
    if (!ms__objects_remove(&c->objects, it->key) || slash == NULL)
        return;
    ms_errf(ns, sizeof ns, MS_OK, "%.*s", (int)(slash - it->key), it->key);
    /* Every per-object series goes with the object, or /metrics grows with
     * each object ever created. */
    ms__metrics_forget_object(c, ns, slash + 1);
    MS_LOG_INFO("object deleted, state freed", MS_S("object", it->key));
}

void ms__reconcile_batch(ms_controller_t *c, ms_kube_client_t *kube, char *const *keys, size_t n)
{
    ms__item_t *items = calloc(n, sizeof *items);
    ms_prom_tick_t *tick;
    double wall;

    if (items == NULL) {
        MS_LOG_ERROR("out of memory", MS_S("what", "sync batch"));
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        items[i].key = keys[i];
        items[i].kube = kube;
        items[i].started = ms_clock_monotonic();
        load(c, &items[i]);
    }
    pthread_mutex_lock(&c->prom_lock);
    wall = ms_clock_wall();
    tick = observe(c, items, n, wall);
    pthread_mutex_unlock(&c->prom_lock);
    for (size_t i = 0; i < n; i++) {
        ms__item_t *it = &items[i];

        if (it->stage == MS__SYNC_OBSERVE)
            decide_and_apply(c, it);
        if (it->stage == MS__SYNC_GONE)
            gone(c, it);
        else
            ms__report(c, it);
        schedule(c, it);
        ms_metrics_observe(c->metrics, c->fam.sync_seconds, NULL, ms_clock_monotonic() - it->started);
    }
    ms_prom_tick_free(tick);
    for (size_t i = 0; i < n; i++) {
        ms_spec_cleanup(&items[i].spec);
        cJSON_Delete(items[i].obj);
        free(items[i].pod_regex);
        free(items[i].obs);
    }
    free(items);
}
