/*
 * objects.c - per-object controller state, keyed by "namespace/name" and
 * valid for one uid; the reference-counted parsed specs it shares with
 * rounds and workers, and what a spec needs (its pods, a pod regex); and the
 * reference-counted rounds themselves (round.c makes them, workers read
 * their observations), so that the state below the loop frees what it holds
 * without calling up into it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/log.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/xalloc.h"

/* ---- what a spec needs (pure) ---- */

static bool uses_pod_regex(const char *q)
{
    return q != NULL && strstr(q, "{{podRegex}}") != NULL;
}

bool ms__spec_uses_pod_regex(const ms_spec_t *s)
{
    for (size_t i = 0; i < s->nmetrics; i++)
        if (uses_pod_regex(s->metrics[i].query) ||
            uses_pod_regex(s->saturation[i].admitted_query) ||
            uses_pod_regex(s->saturation[i].rejected_query))
            return true;
    for (size_t i = 0; i < s->ndownstreams; i++)
        if (uses_pod_regex(s->downstreams[i].usage_query) ||
            uses_pod_regex(s->downstreams[i].limit_query))
            return true;
    return uses_pod_regex(s->retry_storm.retry_share_query);
}

/* Pods are counted only when something needs them: a {{podRegex}} query, a
 * target that counts ready replicas (Utilization, Value), a per-pod preset
 * or a saturation correction (when pods turned Ready: ms__leave_out_settling_pods,
 * hold_unsettled_saturation), or a downstream guardrail (the running pods:
 * step 7's reservation). */
double ms__object_period(const ms__spec_ref_t *spec, double sync_period)
{
    if (spec != NULL && spec->ok && spec->spec.sync_period_seconds > 0)
        return spec->spec.sync_period_seconds;
    return sync_period;
}

bool ms__spec_needs_pods(const ms_spec_t *s)
{
    if (s->ndownstreams > 0)
        return true;
    for (size_t i = 0; i < s->nmetrics; i++)
        if (s->metrics[i].target_type != MS_TARGET_AVERAGE_VALUE ||
            s->metrics[i].source != MS_SOURCE_PROMETHEUS || s->saturation[i].enabled)
            return true;
    return ms__spec_uses_pod_regex(s);
}

/* ---- parsed specs ---- */

/* One user PromQL template against the policy; false with why[] naming the
 * field when it is refused. */
static bool query_allowed(const char *query, ms_user_queries_t policy, const char *where, char *why,
                          size_t cap)
{
    char err[MS_ERRBUF_SIZE];

    if (query == NULL || ms_prom_user_query_check(policy, query, err, sizeof err) == MS_OK)
        return true;
    ms_errf(why, cap, MS_ERR_INVALID, "spec.%s: %s", where, err);
    return false;
}

/* Every user PromQL template of the spec against the policy. */
static bool queries_allowed(const ms_spec_t *s, ms_user_queries_t policy, char *why, size_t cap)
{
    char where[128];

    for (size_t i = 0; i < s->nmetrics; i++) {
        snprintf(where, sizeof where, "metrics[%zu].prometheus.query", i);
        if (!query_allowed(s->metrics[i].query, policy, where, why, cap))
            return false;
        snprintf(where, sizeof where, "guardrails.saturation (%s).admittedQuery",
                 s->metrics[i].name);
        if (!query_allowed(s->saturation[i].admitted_query, policy, where, why, cap))
            return false;
        snprintf(where, sizeof where, "guardrails.saturation (%s).rejectedQuery",
                 s->metrics[i].name);
        if (!query_allowed(s->saturation[i].rejected_query, policy, where, why, cap))
            return false;
    }
    for (size_t i = 0; i < s->ndownstreams; i++) {
        snprintf(where, sizeof where, "guardrails.downstream[%zu].usageQuery", i);
        if (!query_allowed(s->downstreams[i].usage_query, policy, where, why, cap))
            return false;
        snprintf(where, sizeof where, "guardrails.downstream[%zu].limitQuery", i);
        if (!query_allowed(s->downstreams[i].limit_query, policy, where, why, cap))
            return false;
    }
    return query_allowed(s->retry_storm.retry_share_query, policy,
                         "guardrails.retryStorm.retryShareQuery", why, cap);
}

/* The longest window of each saturation entry's two rates; NULL when the
 * spec has no saturation entry. The queries parsed when they were allowed,
 * so an error here leaves the window unknown, not the spec invalid. */
static double *saturation_windows(const ms_spec_t *s)
{
    double *w = NULL;

    for (size_t i = 0; i < s->nmetrics; i++) {
        double admitted = 0, rejected = 0;

        if (!s->saturation[i].enabled)
            continue;
        if (w == NULL)
            w = ms_xcalloc(s->nmetrics, sizeof *w);
        (void)ms_prom_query_window(s->saturation[i].admitted_query, &admitted, NULL, 0);
        (void)ms_prom_query_window(s->saturation[i].rejected_query, &rejected, NULL, 0);
        w[i] = admitted > rejected ? admitted : rejected;
        if (w[i] <= 0)
            w[i] = MS__SATURATION_WINDOW_UNKNOWN;
    }
    return w;
}

ms__spec_ref_t *ms__spec_ref_new(const cJSON *spec_json, long long generation,
                                 ms_user_queries_t policy)
{
    ms__spec_ref_t *r = ms_xcalloc(1, sizeof *r);
    ms_jpath_t path;

    atomic_init(&r->refs, 1);
    r->generation = generation;
    ms_spec_init(&r->spec);
    ms_jpath_init(&path, "spec");
    r->ok = ms_spec_from_json(spec_json, &path, false, &r->spec, r->problem, sizeof r->problem) ==
                MS_OK &&
            queries_allowed(&r->spec, policy, r->problem, sizeof r->problem);
    r->needs_pods = r->ok && ms__spec_needs_pods(&r->spec);
    if (r->ok)
        r->saturation_window = saturation_windows(&r->spec);
    ms_spec_shrink(&r->spec); /* kept as long as the generation: one per object */
    return r;
}

ms__spec_ref_t *ms__spec_ref_retain(ms__spec_ref_t *r)
{
    if (r != NULL)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void ms__spec_ref_release(ms__spec_ref_t *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    ms_spec_cleanup(&r->spec);
    free(r->saturation_window);
    free(r);
}

/* ---- the table ---- */

void ms__objects_init(ms__objects_t *t)
{
    pthread_mutex_init(&t->lock, NULL);
    ms_strmap_init(&t->map);
    ms__budgets_init(&t->budgets);
}

/* The planning cache and the sync memory: what belongs to one incarnation. */
static void forget_incarnation(ms__object_t *o)
{
    ms_label_selector_free(o->selector);
    free(o->selector_text);
    free(o->pod_regex);
    free(o->scale_hint);
    o->scale_hint = NULL;
    o->failures = 0;
    memset(o->selector_rv, 0, sizeof *o - offsetof(ms__object_t, selector_rv));
    ms_engine_memory_init(&o->memory);
}

static void object_free(ms__object_t *o)
{
    if (o->pending != NULL)
        ms__round_release(o->pending);
    forget_incarnation(o);
    ms__spec_ref_release(o->spec);
    free(o->pause_error);
    free(o);
}

void ms__objects_cleanup(ms__objects_t *t)
{
    size_t pos = 0;
    const char *key;
    void *val;

    while (ms_strmap_next(&t->map, &pos, &key, &val))
        object_free(val);
    ms_strmap_cleanup(&t->map);
    ms__budgets_cleanup(&t->budgets);
    pthread_mutex_destroy(&t->lock);
}

ms__object_t *ms__objects_get_locked(ms__objects_t *t, const char *key)
{
    return ms_strmap_get(&t->map, key);
}

void ms__objects_settle_locked(ms__object_t *o)
{
    if (o->busy || o->pending != NULL || strcmp(o->uid, o->cache_uid) == 0)
        return;
    if (o->uid[0] != '\0')
        MS_LOG_INFO("object re-created, starting fresh", MS_S("object", o->key),
                    MS_S("uid", o->cache_uid));
    forget_incarnation(o);
    snprintf(o->uid, sizeof o->uid, "%s", o->cache_uid);
}

static const char *meta_str(const cJSON *md, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, name);

    return cJSON_IsString(v) ? v->valuestring : "";
}

void ms__objects_note(ms__objects_t *t, const char *key, const cJSON *obj, ms_user_queries_t policy)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(md, "generation");
    const char *uid = meta_str(md, "uid");
    long long gen = cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
    ms__spec_ref_t *spec = NULL, *old = NULL;
    char perr[MS_ERRBUF_SIZE] = "";
    ms_pause_t pause;
    ms__object_t *o;
    bool reparse;

    if (ms_pause_parse(cJSON_GetObjectItemCaseSensitive(md, "annotations"), &pause, perr,
                       sizeof perr) != MS_OK &&
        perr[0] == '\0')
        snprintf(perr, sizeof perr, "unreadable");
    pthread_mutex_lock(&t->lock);
    o = ms_strmap_get(&t->map, key);
    if (o == NULL) {
        o = ms_xcalloc(1, sizeof *o);
        snprintf(o->key, sizeof o->key, "%s", key);
        ms_engine_memory_init(&o->memory);
        ms_strmap_put(&t->map, key, o);
    }
    reparse = o->spec == NULL || o->spec->generation != gen || strcmp(o->cache_uid, uid) != 0;
    pthread_mutex_unlock(&t->lock);
    /* Only this (the handler's) thread writes the spec: parse without the lock. */
    if (reparse)
        spec = ms__spec_ref_new(cJSON_GetObjectItemCaseSensitive(obj, "spec"), gen, policy);
    pthread_mutex_lock(&t->lock);
    snprintf(o->cache_uid, sizeof o->cache_uid, "%s", uid);
    snprintf(o->rv, sizeof o->rv, "%s", meta_str(md, "resourceVersion"));
    o->generation = gen;
    o->pause = pause;
    free(o->pause_error);
    o->pause_error = perr[0] != '\0' ? ms_xstrdup(perr) : NULL;
    o->deleted = false;
    if (spec != NULL) {
        old = o->spec;
        o->spec = spec;
    }
    pthread_mutex_unlock(&t->lock);
    ms__spec_ref_release(old);
}

void ms__objects_report_again(ms__objects_t *t, const char *key)
{
    ms__object_t *o;

    pthread_mutex_lock(&t->lock);
    if ((o = ms__objects_get_locked(t, key)) != NULL)
        atomic_store(&o->report_again, true);
    pthread_mutex_unlock(&t->lock);
}

void ms__objects_free_locked(ms__objects_t *t, ms__object_t *o)
{
    ms_strmap_del(&t->map, o->key);
    object_free(o);
}

/* ---- rounds: shared by the round thread and the workers ---- */

ms__round_t *ms__round_retain(ms__round_t *r)
{
    atomic_fetch_add(&r->refs, 1);
    return r;
}

void ms__round_release(ms__round_t *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (size_t i = 0; i < r->n; i++) {
        ms__spec_ref_release(r->entries[i].spec);
        free(r->entries[i].pod_regex);
    }
    free(r->entries);
    free(r->group_next);
    free(r->objs);
    ms_prom_tick_free(r->tick);
    free(r);
}

static void missing_everywhere(ms_prom_object_obs_t *out, const char *why)
{
    memset(out, 0, sizeof *out);
    ms_observation_init(&out->obs);
    for (size_t k = 0; k < MS_MAX_METRICS; k++)
        out->metrics[k] = (ms_prom_why_t){MS_PROM_UNAVAILABLE, why};
}

void ms__round_observation(const ms__round_t *r, const ms__round_entry_t *e,
                           ms_prom_object_obs_t *out)
{
    if (!r->tick_ok || e->obj_index >= r->nobjs)
        missing_everywhere(out, "the Prometheus tick did not run");
    else
        ms_prom_tick_observe(r->tick, r->objs, e->obj_index, out);
}
