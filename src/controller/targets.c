/*
 * targets.c - the two indexes the informer handlers keep, so a round reads
 * targets from memory instead of asking the API server per object:
 *
 *   pods per namespace  name -> labels, readiness and phase Running, and a generation per
 *                       namespace that moves with any of its pods, so an
 *                       object's ready count and {{podRegex}} are recounted
 *                       only when something in its namespace changed;
 *   autoscalers per target  "namespace/group/kind/name" -> the HPAs and live
 *                       MeshAutoscalers that name it: a conflict is one
 *                       lookup, not a scan of every autoscaler.
 *
 * Both are written by informer threads (one at a time per informer) and read
 * by the round thread and workers, under one rwlock each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/conflict.h"
#include "meshscaler/xalloc.h"

/* ---- pods ---- */

typedef struct {
    cJSON *labels; /* owned copy, or NULL */
    bool ready;
    bool running;       /* phase Running and not terminating */
    double ready_since; /* wall seconds its Ready condition turned True; 0: unknown */
    /* ready_since of the first Ready spell the index saw; 0: never seen Ready.
     * A pod Ready again after a spell NotReady (a readiness probe failing under
     * load) has served before: it is not settling. */
    double first_ready_since;
} pod_t;

typedef struct {
    unsigned long generation;
    ms_strmap_t pods; /* name -> pod_t* */
} ns_pods_t;

struct ms__pod_index {
    pthread_rwlock_t lock;
    ms_strmap_t namespaces; /* namespace -> ns_pods_t* */
    unsigned long next_generation;
};

ms__pod_index_t *ms__pod_index_new(void)
{
    ms__pod_index_t *x = ms_xcalloc(1, sizeof *x);

    pthread_rwlock_init(&x->lock, NULL);
    ms_strmap_init(&x->namespaces);
    return x;
}

static void pod_free(pod_t *p)
{
    if (p != NULL) {
        cJSON_Delete(p->labels);
        free(p);
    }
}

void ms__pod_index_free(ms__pod_index_t *x)
{
    size_t pos = 0, ppos;
    const char *key;
    void *val, *pval;

    if (x == NULL)
        return;
    while (ms_strmap_next(&x->namespaces, &pos, &key, &val)) {
        ns_pods_t *ns = val;
        for (ppos = 0; ms_strmap_next(&ns->pods, &ppos, &key, &pval);)
            pod_free(pval);
        ms_strmap_cleanup(&ns->pods);
        free(ns);
    }
    ms_strmap_cleanup(&x->namespaces);
    pthread_rwlock_destroy(&x->lock);
    free(x);
}

static const cJSON *member(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);
    return b != NULL ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

static const char *string_member(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = member(obj, a, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A pod is counted ready as the old per-sync pod list counted it: a Ready
 * condition with status True, and not being deleted. *since: when that
 * condition last changed (its lastTransitionTime), 0 when it does not say. */
static bool pod_ready(const cJSON *pod, double *since)
{
    const cJSON *cond;

    *since = 0;
    if (member(pod, "metadata", "deletionTimestamp") != NULL)
        return false;
    cJSON_ArrayForEach(cond, member(pod, "status", "conditions"))
    {
        const char *t = string_member(cond, "type", NULL), *s = string_member(cond, "status", NULL);
        const char *when = string_member(cond, "lastTransitionTime", NULL);
        if (t == NULL || strcmp(t, "Ready") != 0)
            continue;
        if (s == NULL || strcmp(s, "True") != 0)
            return false;
        if (when == NULL || !ms_time_parse_rfc3339(when, since))
            *since = 0;
        return true;
    }
    return false;
}

/* The informer keeps of a pod only what the index needs: readiness folded
 * into status.ready and, when known, status.readySince (wall seconds), and
 * phase Running into status.running; the conditions are most of a pod's
 * status. */
void ms__pod_transform(void *ctx, cJSON *pod)
{
    double since;
    bool ready = pod_ready(pod, &since);
    const char *phase = string_member(pod, "status", "phase");
    bool running = phase != NULL && strcmp(phase, "Running") == 0;
    cJSON *status = cJSON_CreateObject();

    (void)ctx;
    cJSON_DeleteItemFromObjectCaseSensitive(pod, "status");
    cJSON_AddItemToObject(pod, "status", status);
    cJSON_AddBoolToObject(status, "ready", ready);
    if (running)
        cJSON_AddBoolToObject(status, "running", true);
    if (ready && since > 0)
        cJSON_AddNumberToObject(status, "readySince", since);
}

/* status.<flag> of a transformed pod, and the pod not being deleted. */
static bool transformed_flag(const cJSON *pod, const char *flag)
{
    return cJSON_IsTrue(member(pod, "status", flag)) &&
           member(pod, "metadata", "deletionTimestamp") == NULL;
}

static double transformed_ready_since(const cJSON *pod)
{
    const cJSON *since = member(pod, "status", "readySince");

    return cJSON_IsNumber(since) && since->valuedouble > 0 ? since->valuedouble : 0;
}

void ms__pod_index_notify(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old)
{
    ms__pod_index_t *x = ctx;
    const char *ns = string_member(obj, "metadata", "namespace");
    const char *name = string_member(obj, "metadata", "name");
    const cJSON *labels = member(obj, "metadata", "labels");
    ns_pods_t *n;
    pod_t *p;

    (void)old;
    if (ns == NULL || name == NULL)
        return;
    pthread_rwlock_wrlock(&x->lock);
    n = ms_strmap_get(&x->namespaces, ns);
    if (n == NULL) {
        n = ms_xcalloc(1, sizeof *n);
        ms_strmap_init(&n->pods);
        ms_strmap_put(&x->namespaces, ns, n);
    }
    if (change == MS_KUBE_DELETED) {
        pod_free(ms_strmap_del(&n->pods, name));
    } else {
        const pod_t *before = ms_strmap_get(&n->pods, name);

        p = ms_xcalloc(1, sizeof *p);
        p->ready = transformed_flag(obj, "ready");
        p->running = transformed_flag(obj, "running");
        p->ready_since = p->ready ? transformed_ready_since(obj) : 0;
        p->first_ready_since = before != NULL && before->first_ready_since > 0
                                   ? before->first_ready_since
                                   : p->ready_since;
        p->labels = cJSON_IsObject(labels) ? cJSON_Duplicate(labels, true) : NULL;
        pod_free(ms_strmap_put(&n->pods, name, p));
    }
    n->generation = ++x->next_generation;
    pthread_rwlock_unlock(&x->lock);
}

unsigned long ms__pod_index_generation(ms__pod_index_t *x, const char *ns)
{
    ns_pods_t *n;
    unsigned long g;

    pthread_rwlock_rdlock(&x->lock);
    n = ms_strmap_get(&x->namespaces, ns);
    g = n != NULL ? n->generation : 0;
    pthread_rwlock_unlock(&x->lock);
    return g;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void ms__pod_index_count(ms__pod_index_t *x, const char *ns, const ms_label_selector_t *sel,
                         bool want_regex, double settle_from, double settle_to,
                         ms__pod_count_t *out, char **regex)
{
    const char **names = NULL;
    size_t n = 0, cap = 0, pos = 0;
    const char *name;
    void *val;
    ns_pods_t *nsp;

    memset(out, 0, sizeof *out);
    if (regex != NULL)
        *regex = NULL;
    pthread_rwlock_rdlock(&x->lock);
    nsp = ms_strmap_get(&x->namespaces, ns);
    while (nsp != NULL && ms_strmap_next(&nsp->pods, &pos, &name, &val)) {
        pod_t *p = val;
        if (!ms_label_selector_matches(sel, p->labels))
            continue;
        if (p->running)
            out->running++;
        if (p->ready) {
            out->ready++;
            if (p->ready_since > out->newest_ready)
                out->newest_ready = p->ready_since;
            if (p->ready_since == p->first_ready_since && p->ready_since > settle_from &&
                p->ready_since < settle_to)
                out->settling++;
        }
        if (want_regex) {
            names = ms_xgrow(names, &cap, n + 1, sizeof *names);
            names[n++] = name;
        }
    }
    if (want_regex && regex != NULL) {
        /* Sorted, so an unchanged set gives the same text (and the same
         * deduplicated query) whatever order the map holds it in. */
        qsort(names, n, sizeof *names, by_name);
        *regex = ms_prom_pod_regex(names, n);
    }
    pthread_rwlock_unlock(&x->lock);
    free(names);
}

/* ---- autoscalers per target ---- */

typedef struct autoscaler {
    char key[MS__KEY_MAX];
    bool is_hpa;
    int32_t desired; /* an HPA's status.desiredReplicas; -1: none */
    cJSON *metrics;  /* an HPA's status.currentMetrics: owned copy, or NULL */
    struct autoscaler *next;
} autoscaler_t;

struct ms__target_index {
    pthread_rwlock_t lock;
    ms_strmap_t by_target; /* target key -> autoscaler_t* list */
    ms_strmap_t by_owner;  /* "hpa:" or "mas:" + ns/name -> its target key (owned char*) */
};

ms__target_index_t *ms__target_index_new(void)
{
    ms__target_index_t *x = ms_xcalloc(1, sizeof *x);

    pthread_rwlock_init(&x->lock, NULL);
    ms_strmap_init(&x->by_target);
    ms_strmap_init(&x->by_owner);
    return x;
}

void ms__target_index_free(ms__target_index_t *x)
{
    size_t pos = 0;
    const char *key;
    void *val;

    if (x == NULL)
        return;
    while (ms_strmap_next(&x->by_target, &pos, &key, &val))
        for (autoscaler_t *a = val, *next; a != NULL; a = next) {
            next = a->next;
            cJSON_Delete(a->metrics);
            free(a);
        }
    for (pos = 0; ms_strmap_next(&x->by_owner, &pos, &key, &val);)
        free(val);
    ms_strmap_cleanup(&x->by_target);
    ms_strmap_cleanup(&x->by_owner);
    pthread_rwlock_destroy(&x->lock);
    free(x);
}

/* "namespace/group/kind/name": the version is left out (apps/v1 and
 * apps/v1beta2 name the same Deployment), as conflict.h compares. */
static bool target_key(const char *ns, const char *api_version, const char *kind, const char *name,
                       char *buf, size_t cap)
{
    const char *slash = strchr(api_version, '/');
    int group = slash ? (int)(slash - api_version) : 0;
    int w = snprintf(buf, cap, "%s/%.*s/%s/%s", ns, group, api_version, kind, name);

    return w > 0 && (size_t)w < cap;
}

static void unlink_owner(ms__target_index_t *x, const char *owner, const char *key)
{
    char *tkey = ms_strmap_del(&x->by_owner, owner);
    autoscaler_t *head, **pp;

    if (tkey == NULL)
        return;
    head = ms_strmap_get(&x->by_target, tkey);
    for (pp = &head; *pp != NULL; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0 && (*pp)->is_hpa == (owner[0] == 'h')) {
            autoscaler_t *gone = *pp;
            *pp = gone->next;
            cJSON_Delete(gone->metrics);
            free(gone);
            break;
        }
    }
    if (head == NULL)
        ms_strmap_del(&x->by_target, tkey);
    else
        ms_strmap_put(&x->by_target, tkey, head);
    free(tkey);
}

void ms__target_index_update(ms__target_index_t *x, const cJSON *obj, bool is_hpa, bool deleted)
{
    const char *ns = string_member(obj, "metadata", "namespace");
    const char *name = string_member(obj, "metadata", "name");
    char key[MS__KEY_MAX], owner[MS__KEY_MAX + 8], tkey[1024];
    ms_conflict_target_t t;
    autoscaler_t *a;
    bool counts;

    if (ns == NULL || name == NULL ||
        snprintf(key, sizeof key, "%s/%s", ns, name) >= (int)sizeof key)
        return;
    snprintf(owner, sizeof owner, "%s:%s", is_hpa ? "hpa" : "mas", key);
    /* A MeshAutoscaler in spec.dryRun never conflicts (it runs beside the
     * incumbent: the migration path), so it is not indexed as a writer. */
    counts = !deleted && ms_conflict_target_of(obj, &t) &&
             (is_hpa || !cJSON_IsTrue(member(obj, "spec", "dryRun"))) &&
             target_key(t.namespace_, t.api_version, t.kind, t.name, tkey, sizeof tkey);
    pthread_rwlock_wrlock(&x->lock);
    unlink_owner(x, owner, key);
    if (counts) {
        a = ms_xcalloc(1, sizeof *a);
        snprintf(a->key, sizeof a->key, "%s", key);
        a->is_hpa = is_hpa;
        a->desired = -1;
        /* 0 is what an HPA that never computed a count shows (its metrics
         * failed from the start): no decision yet, nothing to compare. */
        if (is_hpa && cJSON_IsNumber(member(obj, "status", "desiredReplicas")) &&
            member(obj, "status", "desiredReplicas")->valuedouble >= 1)
            a->desired = (int32_t)member(obj, "status", "desiredReplicas")->valuedouble;
        if (is_hpa && cJSON_IsArray(member(obj, "status", "currentMetrics")))
            a->metrics = cJSON_Duplicate(member(obj, "status", "currentMetrics"), true);
        a->next = ms_strmap_get(&x->by_target, tkey);
        ms_strmap_put(&x->by_target, tkey, a);
        ms_strmap_put(&x->by_owner, owner, ms_xstrdup(tkey));
    }
    pthread_rwlock_unlock(&x->lock);
}

/* The first autoscaler on the target tkey that is an HPA (hpa_only), or any
 * other than the MeshAutoscaler self_key. Under the read lock. */
static const autoscaler_t *first_on(ms__target_index_t *x, const char *tkey, bool hpa_only,
                                    const char *self_key)
{
    for (const autoscaler_t *a = ms_strmap_get(&x->by_target, tkey); a != NULL; a = a->next)
        if (hpa_only ? a->is_hpa : (a->is_hpa || strcmp(a->key, self_key) != 0))
            return a;
    return NULL;
}

bool ms__target_index_conflict(ms__target_index_t *x, const char *self_key, const char *ns,
                               const char *api_version, const char *kind, const char *name,
                               char *who, size_t whocap)
{
    const autoscaler_t *a;
    char tkey[1024];

    if (!target_key(ns, api_version, kind, name, tkey, sizeof tkey))
        return false;
    pthread_rwlock_rdlock(&x->lock);
    a = first_on(x, tkey, false, self_key);
    if (a != NULL && whocap > 0)
        snprintf(who, whocap, "%s %s", a->is_hpa ? "HorizontalPodAutoscaler" : "MeshAutoscaler",
                 a->key);
    pthread_rwlock_unlock(&x->lock);
    return a != NULL;
}

bool ms__target_index_hpa(ms__target_index_t *x, const char *ns, const char *api_version,
                          const char *kind, const char *name, char *key, size_t cap,
                          int32_t *desired, cJSON **metrics)
{
    const autoscaler_t *a;
    char tkey[1024];

    if (!target_key(ns, api_version, kind, name, tkey, sizeof tkey))
        return false;
    pthread_rwlock_rdlock(&x->lock);
    a = first_on(x, tkey, true, NULL);
    if (a != NULL) {
        snprintf(key, cap, "%s", a->key);
        *desired = a->desired;
        if (metrics != NULL)
            *metrics = a->metrics ? cJSON_Duplicate(a->metrics, true) : NULL;
    }
    pthread_rwlock_unlock(&x->lock);
    return a != NULL;
}

void ms__target_index_each_mas(ms__target_index_t *x, const cJSON *obj,
                               void (*fn)(void *ctx, const char *key), void *ctx)
{
    ms_conflict_target_t t;
    char tkey[1024], keys[16][MS__KEY_MAX];
    size_t n = 0;

    if (!ms_conflict_target_of(obj, &t) ||
        !target_key(t.namespace_, t.api_version, t.kind, t.name, tkey, sizeof tkey))
        return;
    /* Copied out first: fn may take other locks. A target named by more
     * than 16 MeshAutoscalers is a misconfiguration; the rest sync on time. */
    pthread_rwlock_rdlock(&x->lock);
    for (autoscaler_t *a = ms_strmap_get(&x->by_target, tkey); a != NULL && n < 16; a = a->next)
        if (!a->is_hpa)
            snprintf(keys[n++], MS__KEY_MAX, "%s", a->key);
    pthread_rwlock_unlock(&x->lock);
    for (size_t i = 0; i < n; i++)
        fn(ctx, keys[i]);
}
