/*
 * objects.c - per-object controller state, keyed by "namespace/name" and
 * valid for one uid; and the reference-counted parsed specs it shares with
 * rounds and workers.
 */
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/log.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/xalloc.h"

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
        snprintf(where, sizeof where, "guardrails.saturation (%s).admittedQuery", s->metrics[i].name);
        if (!query_allowed(s->saturation[i].admitted_query, policy, where, why, cap))
            return false;
        snprintf(where, sizeof where, "guardrails.saturation (%s).rejectedQuery", s->metrics[i].name);
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
    free(r);
}

/* ---- the table ---- */

void ms__objects_init(ms__objects_t *t)
{
    pthread_mutex_init(&t->lock, NULL);
    ms_strmap_init(&t->map);
}

static void object_free(ms__object_t *o)
{
    if (o->pending != NULL)
        ms__round_release(o->pending);
    ms__spec_ref_release(o->spec);
    ms_label_selector_free(o->selector);
    free(o->pod_regex);
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
    pthread_mutex_destroy(&t->lock);
}

/* Forget everything of the previous incarnation but the table's own fields. */
static void reset(ms__object_t *o, const char *key, const char *uid)
{
    ms__round_t *pending = o->pending;

    if (pending != NULL)
        ms__round_release(pending);
    ms__spec_ref_release(o->spec);
    ms_label_selector_free(o->selector);
    free(o->pod_regex);
    memset(o, 0, sizeof *o);
    snprintf(o->key, sizeof o->key, "%s", key);
    snprintf(o->uid, sizeof o->uid, "%s", uid);
    ms_engine_memory_init(&o->memory);
}

ms__object_t *ms__objects_get_locked(ms__objects_t *t, const char *key, const char *uid)
{
    ms__object_t *o = ms_strmap_get(&t->map, key);

    if (uid == NULL)
        return o;
    if (o == NULL) {
        o = ms_xcalloc(1, sizeof *o);
        reset(o, key, uid);
        ms_strmap_put(&t->map, key, o);
    } else if (strcmp(o->uid, uid) != 0 && !o->busy) {
        MS_LOG_INFO("object re-created, starting fresh", MS_S("object", key), MS_S("uid", uid));
        reset(o, key, uid);
    }
    return o;
}

void ms__objects_free_locked(ms__objects_t *t, ms__object_t *o)
{
    ms_strmap_del(&t->map, o->key);
    object_free(o);
}
