/*
 * round.c - the round thread: every object that falls due at the same moment
 * is observed by ONE Prometheus tick (one query per preset kind, each user
 * query once), read from the caches (no per-object API request), and handed
 * to the workers with its observation.
 *
 * Objects fall due on a grid: the next sync of an object with period P is
 * the next multiple of P on the monotonic clock, so objects of one period
 * meet in one round. A spec or annotation change, a new object, an HPA
 * coming or going, or a new leadership makes objects due at once (a kick).
 * Only the leader observes; a follower keeps its caches and frees the state
 * of deleted objects.
 *
 * A sync out of the grid (a kick, an observation a worker found stale, a
 * retry after a transient failure) never buys a tick of its own: the object
 * joins the next round of the grid, or, when none comes first, one catch-up
 * round that every early object shares, at most one per catch-up interval.
 * When 10,000 objects move at once, their early syncs arrive one by one as
 * the workers and the writers drain; each used to run a tick over the whole
 * series set (issue 28: 8-13 ticks per 15 s instead of 1). The controller's
 * own backlog waits longer than a change: a sync that outlasts its grid time
 * is next due at the grid's next round after it ends (as controller-runtime
 * requeues a period after a reconcile ends), and stale observations alone
 * run a catch-up only an interval after a round of every object too (a
 * first install's scale writes, stale behind 5,000 others, would otherwise
 * be the third tick of its first period), while a change (a kick) may run
 * one at once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

/* A round never waits longer than this for a kick it might have missed, nor
 * lets a worker's earlier retry time wait longer. */
#define MAX_SLEEP 1.0
/* Kicks that come in a burst (a rollout touching many objects) share a round. */
#define KICK_COALESCE 0.05
/* How often the round thread returns the heap's free pages to the kernel. */
#define TRIM_EVERY 60.0
/* Early syncs share at most one catch-up round per --sync-period, and at
 * least one per this many seconds (a pausing annotation at a 60 s period
 * still acts within 15 s). */
#define CATCHUP_MAX_INTERVAL 15.0

double ms__next_sync_delay(double period, double now)
{
    double delay = period - fmod(now, period);

    if (delay < period * 0.2)
        delay += period;
    return delay;
}

static const char *const workload_kinds[3] = {"Deployment", "StatefulSet", "ReplicaSet"};

int ms__workload_kind(const char *api_version, const char *kind)
{
    if (api_version == NULL || kind == NULL || strcmp(api_version, "apps/v1") != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(kind, workload_kinds[i]) == 0)
            return i;
    return -1;
}

/* ---- waiting ---- */

/* Sleep until `until` (monotonic) or a kick; false when stopping. */
static bool wait_for_work(ms_controller_t *c, double until)
{
    double now = ms_clock_monotonic();
    double wait = until - now;

    if (wait > MAX_SLEEP)
        wait = MAX_SLEEP;
    pthread_mutex_lock(&c->round.lock);
    if (!c->round.kicked && wait > 0 && !atomic_load(&c->stopping))
        ms_clock_cond_wait_until(&c->round.cond, &c->round.lock, now + wait);
    if (c->round.kicked) {
        /* Let a burst of kicks arrive before planning. */
        pthread_mutex_unlock(&c->round.lock);
        ms_clock_sleep(KICK_COALESCE);
        pthread_mutex_lock(&c->round.lock);
    }
    c->round.kicked = false;
    pthread_mutex_unlock(&c->round.lock);
    return !atomic_load(&c->stopping);
}

void ms__kick(ms_controller_t *c, const char *key)
{
    ms__object_t *o;

    pthread_mutex_lock(&c->objects.lock);
    o = ms__objects_get_locked(&c->objects, key);
    if (o != NULL) {
        o->due = 0;
        o->rejoin = false; /* a change: it may run a catch-up round at once */
    }
    pthread_mutex_unlock(&c->objects.lock);
    pthread_mutex_lock(&c->round.lock);
    c->round.kicked = true;
    pthread_cond_signal(&c->round.cond);
    pthread_mutex_unlock(&c->round.lock);
}

/* ---- choosing the due objects ---- */

typedef struct {
    char (*keys)[MS__KEY_MAX];
    double *late; /* per key: seconds past its grid time; < 0: not on the grid */
    size_t cap, late_cap;
    ms__due_count_t count;
    double next;       /* the earliest due time of the objects not due now */
    double last_round; /* monotonic: when the last round began */
} due_t;

bool ms__due_at_grid(double due, double grid)
{
    return grid > 0 && due >= grid - 0.001 && due < INFINITY;
}

/* (An object that missed its round waits like an early one: otherwise
 * every object a worker held through its round would bring a round of its
 * own as its worker let it go.) */
bool ms__grid_round_is_now(double due, double grid, double last_round)
{
    return ms__due_at_grid(due, grid) && due > last_round;
}

bool ms__round_runs(const ms__due_count_t *d, bool all_due, double now)
{
    if (d->n == 0)
        return false;
    if (d->on_grid > 0 || all_due)
        return true;
    if (d->n > d->rejoining && now >= d->catchup_after)
        return true;
    return now >= d->rejoin_after;
}

/* Early objects only, and the last catch-up round (for stale observations
 * alone, or round of every object) less than an interval ago: they wait
 * (for the next round of the grid, which they join, or for the interval). */
static void hold_early(const ms_controller_t *c, due_t *d, double now, bool all_due)
{
    ms__due_count_t *k = &d->count;
    double interval = fmin(c->cfg.sync_period, CATCHUP_MAX_INTERVAL);

    if (k->n == 0)
        return;
    if (!ms__round_runs(k, all_due, now)) {
        double after = k->n > k->rejoining ? k->catchup_after : k->rejoin_after;
        k->n = 0;
        if (after < d->next)
            d->next = after;
        return;
    }
    if (k->on_grid == 0) /* a catch-up round, or a new leader's of every object */
        k->rejoin_after = now + interval;
    if (k->on_grid == 0 && !all_due)
        k->catchup_after = now + interval;
}

static void add_due(due_t *d, const char *key, double late)
{
    size_t n = d->count.n;

    d->keys = ms_xgrow(d->keys, &d->cap, n + 1, sizeof *d->keys);
    d->late = ms_xgrow(d->late, &d->late_cap, n + 1, sizeof *d->late);
    d->late[n] = late;
    snprintf(d->keys[n], MS__KEY_MAX, "%s", key);
    d->count.n = n + 1;
}

/* How late the round that runs now takes the objects due at their grid
 * time (an early object's wait is not lateness; a held one is counted when
 * a round takes it). */
static void observe_lateness(ms_controller_t *c, const due_t *d)
{
    for (size_t i = 0; i < d->count.n; i++)
        if (d->late[i] >= 0)
            ms_metrics_observe(c->metrics.registry, c->metrics.fam.sync_lateness, NULL, d->late[i]);
}

typedef struct {
    ms__objects_t *t;
    double now;
} pull_t;

/* A member of a shared budget fell due: its fellow members come along
 * (unless a worker holds them), so that one worker splits the budget's
 * room between all of them in the same round. One due already keeps its
 * due time: at its grid time, its round of the grid (0 would make it an
 * early sync, and a round of members that all pull each other a
 * catch-up round). */
static void pull_peer(void *ctx, const char *key)
{
    pull_t *p = ctx;
    ms__object_t *o = ms__objects_get_locked(p->t, key);

    if (o != NULL && !o->deleted && !o->busy && o->pending == NULL && o->due > p->now + 0.001)
        o->due = 0;
}

/* Under the table's lock, before the due objects are collected. */
static void pull_budget_peers(ms_controller_t *c, double now)
{
    size_t pos = 0;
    const char *key;
    void *val;
    pull_t pull = {&c->objects, now};

    if (!ms__budgets_any(&c->objects.budgets))
        return;
    while (ms_strmap_next(&c->objects.map, &pos, &key, &val)) {
        ms__object_t *o = val;
        if (!o->deleted && !o->busy && o->pending == NULL && o->due <= now + 0.001)
            ms__budgets_each_peer(&c->objects.budgets, o->key, pull_peer, &pull);
    }
}

typedef struct {
    ms__objects_t *t;
    bool held;
} peer_held_t;

static void note_held_peer(void *ctx, const char *key)
{
    peer_held_t *h = ctx;
    ms__object_t *o = ms__objects_get_locked(h->t, key);

    if (o != NULL && !o->deleted && (o->busy || o->pending != NULL))
        h->held = true;
}

/* Under the table's lock: a fellow member of one of o's budgets is in a
 * worker's hands or queued for one. o then waits for the round that takes
 * them all: decided without it, o would split the room as if the other's
 * starting replicas and ask did not exist. */
static bool budget_peer_held(ms_controller_t *c, const ms__object_t *o)
{
    peer_held_t h = {&c->objects, false};

    ms__budgets_each_peer(&c->objects.budgets, o->key, note_held_peer, &h);
    return h.held;
}

/* Free deleted objects nobody holds; collect the due ones (only when acting). */
static void collect(ms_controller_t *c, double now, bool acting, bool all_due, due_t *d)
{
    size_t pos = 0;
    const char *key;
    void *val;
    ms__object_t *gone[64];
    size_t ngone = 0;
    bool waiting = false, budgets;

    d->next = now + MAX_SLEEP;
    pthread_mutex_lock(&c->objects.lock);
    budgets = ms__budgets_any(&c->objects.budgets);
    if (acting && !all_due)
        pull_budget_peers(c, now);
    while (ms_strmap_next(&c->objects.map, &pos, &key, &val)) {
        ms__object_t *o = val;
        if (o->deleted) {
            if (!o->busy && ngone < sizeof gone / sizeof gone[0])
                gone[ngone++] = o;
            continue;
        }
        if (all_due)
            o->due = 0;
        if (o->busy || o->pending != NULL) {
            waiting = true; /* in a worker's hands or queued for one */
            continue;
        }
        if (o->due <= now + 0.001 && budgets && budget_peer_held(c, o)) {
            waiting = true;
            continue;
        }
        if (o->due <= now + 0.001) {
            if (acting) {
                add_due(d, o->key, ms__due_at_grid(o->due, o->grid) ? now - o->due : -1);
                if (ms__grid_round_is_now(o->due, o->grid, d->last_round))
                    d->count.on_grid++;
                else if (o->rejoin)
                    d->count.rejoining++;
            }
        } else if (o->due < d->next) {
            d->next = o->due;
        }
    }
    for (size_t i = 0; i < ngone; i++) {
        char ns[MS__KEY_MAX];
        const char *slash = strchr(gone[i]->key, '/');
        if (slash != NULL) {
            snprintf(ns, sizeof ns, "%.*s", (int)(slash - gone[i]->key), gone[i]->key);
            ms__metrics_forget_object(c, ns, slash + 1);
        }
        MS_LOG_INFO("object deleted, state freed", MS_S("object", gone[i]->key));
        ms__objects_free_locked(&c->objects, gone[i]);
    }
    pthread_mutex_unlock(&c->objects.lock);
    hold_early(c, d, now, all_due);
    observe_lateness(c, d);
    if (ngone == sizeof gone / sizeof gone[0])
        d->next = now; /* more to free */
    /* Liveness: keys a worker holds or that wait for one, or are due while
     * this process acts, are work in progress; /healthz fails if no progress
     * comes (a worker stuck for good holds its key busy, not pending). */
    if (!(waiting || (acting && d->count.n > 0)))
        atomic_store(&c->due_since, 0);
    else if (atomic_load(&c->due_since) == 0)
        atomic_store(&c->due_since, (uint_fast64_t)(now * 1000));
}

/* ---- planning one object ---- */

static long long number_member(const cJSON *obj, const char *a, const char *b, long long def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : def;
}

static const char *string_member(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

typedef struct {
    ms__object_t *o;
    ms__target_t *t;
    bool found;
    char problem[MS_ERRBUF_SIZE];
} workload_visit_t;

/* Under a workload cache's read lock: spec.replicas, the resourceVersion a
 * write is conditional on, and the selector (compiled again only when the
 * workload changed). */
static void visit_workload(void *ctx, const cJSON *obj)
{
    workload_visit_t *v = ctx;
    const char *rv = string_member(obj, "metadata", "resourceVersion");
    const char *uid = string_member(obj, "metadata", "uid");

    if (obj == NULL || rv == NULL)
        return;
    v->found = true;
    v->t->known = true;
    v->t->cached = true;
    /* spec.replicas defaults to 1 (the API server sets it; a cached object
     * without it is one the defaulting never saw). */
    v->t->replicas = (int32_t)number_member(obj, "spec", "replicas", 1);
    v->t->status_replicas = (int32_t)number_member(obj, "status", "replicas", 0);
    snprintf(v->t->resource_version, sizeof v->t->resource_version, "%s", rv);
    snprintf(v->t->uid, sizeof v->t->uid, "%s", uid ? uid : "");
    if (v->o->selector == NULL || strcmp(v->o->selector_rv, rv) != 0) {
        ms_label_selector_t *sel = NULL;
        const cJSON *js = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "spec"), "selector");
        if (ms_label_selector_from_json(js, &sel, v->problem, sizeof v->problem) == MS_OK) {
            ms_label_selector_free(v->o->selector);
            v->o->selector = sel;
            snprintf(v->o->selector_rv, sizeof v->o->selector_rv, "%s", rv);
            v->o->pods_generation = 0; /* recount */
        }
    }
}

/* The target's scale from the caches: a built-in kind from its informer,
 * any other kind from the /scale a worker read last (the worker reads it
 * again before deciding). */
static void plan_target(ms_controller_t *c, ms__object_t *o, ms__round_entry_t *e, const char *ns)
{
    const ms_spec_t *s = &e->spec->spec;
    int k = ms__workload_kind(s->target_api_version, s->target_kind);
    char key[MS__KEY_MAX];

    if (k >= 0) {
        workload_visit_t v = {o, &e->target, false, ""};
        if (snprintf(key, sizeof key, "%.63s/%s", ns, s->target_name) >= (int)sizeof key)
            key[0] = '\0';
        ms_kube_informer_visit(c->informers.workloads[k], key, visit_workload, &v);
        if (!v.found) {
            ms_errf(e->problem, sizeof e->problem, MS_OK, "%ss.apps \"%s\" not found",
                    workload_kinds[k], s->target_name);
            /* The kind's plural, lower-cased, as the API server says it. */
            for (char *p = e->problem; *p && *p != '.'; p++)
                *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            e->stage = MS__ENTRY_NO_SCALE;
            return;
        }
    } else {
        char selector[sizeof o->scale_hint->selector] = "";
        pthread_mutex_lock(&c->objects.lock);
        if (o->scale_hint != NULL) {
            const ms_kube_scale_t *h = o->scale_hint;
            e->target = (ms__target_t){
                .known = true, .replicas = h->replicas, .status_replicas = h->status_replicas};
            snprintf(e->target.resource_version, sizeof e->target.resource_version, "%s",
                     h->resource_version);
            snprintf(e->target.uid, sizeof e->target.uid, "%s", h->uid);
            snprintf(selector, sizeof selector, "%s", h->selector);
        }
        pthread_mutex_unlock(&c->objects.lock);
        if (e->target.known && (o->selector == NULL || o->selector_text == NULL ||
                                strcmp(o->selector_text, selector) != 0)) {
            ms_label_selector_t *sel = NULL;
            char err[MS_ERRBUF_SIZE];
            if (ms_label_selector_parse(selector, &sel, err, sizeof err) == MS_OK) {
                ms_label_selector_free(o->selector);
                o->selector = sel;
                free(o->selector_text);
                o->selector_text = ms_xstrdup(selector);
                o->pods_generation = 0;
            }
        }
    }
    e->stage = MS__ENTRY_OBSERVED;
}

bool ms__pods_settling_may_change(int32_t settling, double newest_ready, double settle_from)
{
    return settling > 0 || newest_ready > settle_from;
}

/* The target's Ready, Running and settling pods, and their names when a query uses
 * {{podRegex}}, counted again only when a pod of the namespace or the selector changed,
 * or a pod may still be settling at wall (the round's wall clock). */
static void plan_pods(ms_controller_t *c, ms__object_t *o, ms__round_entry_t *e, const char *ns,
                      double wall)
{
    bool want_regex;
    unsigned long gen;
    /* lastTransitionTime has whole seconds: one more. A time further ahead
     * than the span is a node's clock, not a pod that just turned Ready. */
    double settle_from = wall - MS__READY_SETTLE_SECONDS - 1.0;
    double settle_to = wall + MS__READY_SETTLE_SECONDS;

    if (!e->spec->needs_pods || o->selector == NULL || c->informers.pod_index == NULL ||
        (!e->target.cached && (o->selector_text == NULL || o->selector_text[0] == '\0')))
        return;
    want_regex = ms__spec_uses_pod_regex(&e->spec->spec);
    gen = ms__pod_index_generation(c->informers.pod_index, ns);
    if (gen == 0 || gen != o->pods_generation || (want_regex && o->pod_regex == NULL) ||
        ms__pods_settling_may_change(o->settling_pods, o->newest_ready, settle_from)) {
        free(o->pod_regex);
        o->pod_regex = NULL;
        ms__pod_count_t count;

        ms__pod_index_count(c->informers.pod_index, ns, o->selector, want_regex, settle_from,
                            settle_to, &count, want_regex ? &o->pod_regex : NULL);
        o->ready_pods = count.ready;
        o->running_pods = count.running;
        o->newest_ready = count.newest_ready;
        o->settling_pods = count.settling;
        o->pods_generation = gen;
    }
    e->target.pods_ok = true;
    e->target.ready_pods = o->ready_pods;
    e->target.running_pods = o->running_pods;
    e->target.newest_ready = o->newest_ready;
    e->target.settling_pods = o->settling_pods;
    if (o->pod_regex != NULL)
        e->pod_regex = ms_xstrdup(o->pod_regex);
}

static void plan(ms_controller_t *c, const char *key, ms__round_entry_t *e, double wall)
{
    char ns[MS__KEY_MAX];
    const char *slash = strchr(key, '/');
    ms__object_t *o;

    snprintf(e->key, sizeof e->key, "%s", key);
    e->stage = MS__ENTRY_GONE;
    if (slash == NULL)
        return;
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    snprintf(e->ns, sizeof e->ns, "%.63s", ns);
    /* o is safe to use after the lock: only this thread frees objects. */
    pthread_mutex_lock(&c->objects.lock);
    o = ms__objects_get_locked(&c->objects, key);
    if (o != NULL && !o->deleted && o->spec != NULL) {
        ms__objects_settle_locked(o);
        snprintf(e->uid, sizeof e->uid, "%s", o->cache_uid);
        e->spec = ms__spec_ref_retain(o->spec);
    }
    pthread_mutex_unlock(&c->objects.lock);
    if (e->spec == NULL)
        return;
    if (!e->spec->ok) {
        e->stage = MS__ENTRY_INVALID;
        ms_errf(e->problem, sizeof e->problem, MS_OK, "%s", e->spec->problem);
        return;
    }
    plan_target(c, o, e, ns);
    if (e->stage == MS__ENTRY_OBSERVED)
        plan_pods(c, o, e, ns, wall);
}

/* ---- observing ---- */

/* One Prometheus tick for every observed entry of the round; each worker
 * reads its object's observation from it (ms__round_observation). */
static void observe(ms_controller_t *c, ms__round_t *r)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_prom_preset_options_t presets;
    ms_prom_tick_stats_t st;
    ms_err_t err = MS_ERR_IO;
    size_t m = 0;

    r->objs = ms_xcalloc(r->n ? r->n : 1, sizeof *r->objs);
    for (size_t i = 0; i < r->n; i++) {
        ms__round_entry_t *e = &r->entries[i];
        if (e->stage != MS__ENTRY_OBSERVED)
            continue;
        r->objs[m].spec = &e->spec->spec;
        r->objs[m].namespace_name = e->ns;
        r->objs[m].name = e->spec->spec.target_name;
        r->objs[m].kind = e->spec->spec.target_kind;
        r->objs[m].pod_regex = e->pod_regex;
        e->obj_index = m++;
    }
    r->nobjs = m;
    if (m == 0)
        return;
    /* A preset answer covers every workload of the round's namespaces: cap it
     * by all the objects this process watches, not by this round's few. */
    presets = c->cfg.presets;
    pthread_mutex_lock(&c->objects.lock);
    presets.answer_workloads = ms_strmap_size(&c->objects.map);
    pthread_mutex_unlock(&c->objects.lock);
    if ((r->tick = ms_prom_tick_new(&presets, errbuf, sizeof errbuf)) == NULL) {
        MS_LOG_ERROR("cannot plan the prometheus tick", MS_S("error", errbuf));
        return;
    }
    /* Bounded: a hung or flooding Prometheus costs one round at most its
     * deadline and its byte budget; shutdown cancels what is in flight. */
    double timeout =
        c->cfg.round_timeout > 0 ? c->cfg.round_timeout : fmin(c->cfg.sync_period, 10.0);
    ms_prom_run_options_t bounds = {
        .deadline = r->now + timeout,
        .cancel = &c->prom_cancel,
        .max_total_bytes = c->cfg.round_max_bytes ? c->cfg.round_max_bytes : 64u << 20};

    err = ms_prom_tick_run_bounded(r->tick, c->clients.prom, r->objs, m, &bounds, NULL);
    ms_prom_tick_stats(r->tick, &st);
    ms_metrics_add(c->metrics.registry, c->metrics.fam.prom_queries, NULL, (double)st.queries_sent);
    ms_metrics_add(c->metrics.registry, c->metrics.fam.prom_failures, NULL,
                   (double)st.failed_queries);
    ms_metrics_observe(c->metrics.registry, c->metrics.fam.prom_seconds, NULL, st.seconds);
    ms__metrics_round_costs(c, r->tick);
    MS_LOG_DEBUG("round observed", MS_I("objects", (long long)m),
                 MS_I("queries", (long long)st.queries_sent),
                 MS_I("failed", (long long)st.failed_queries), MS_D("seconds", st.seconds));
    if (err != MS_OK)
        MS_LOG_WARN("prometheus tick failed", MS_S("error", ms_strerror(err)));
    r->tick_ok = err == MS_OK;
    r->observed = ms_clock_monotonic();
}

/* ---- one round ---- */

/* Under the table's lock: which of the round's observed entries share a
 * budget (r->group_next; NULL when none does). Entries a worker holds
 * (skipped below) are left out. */
static void group_budgets(ms_controller_t *c, ms__round_t *r)
{
    const ms_spec_t **specs;
    bool any = false;

    if (!ms__budgets_any(&c->objects.budgets))
        return;
    specs = ms_xcalloc(r->n ? r->n : 1, sizeof *specs);
    for (size_t i = 0; i < r->n; i++) {
        const ms__round_entry_t *e = &r->entries[i];
        const ms__object_t *o = ms__objects_get_locked(&c->objects, e->key);

        if (e->stage == MS__ENTRY_OBSERVED && o != NULL && !o->busy && o->pending == NULL) {
            specs[i] = &e->spec->spec;
            any = any || ms__spec_names_budget(specs[i]);
        }
    }
    if (any) {
        r->group_next = ms_xcalloc(r->n, sizeof *r->group_next);
        ms__budget_groups(specs, r->n, r->group_next);
    }
    free(specs);
}

double ms__next_grid_locked(ms_controller_t *c, const char *key, const ms__spec_ref_t *spec,
                            double now)
{
    double period = ms__budgets_period(
        &c->objects.budgets, key, ms__object_period(spec, c->cfg.sync_period), c->cfg.sync_period);

    return now + ms__next_sync_delay(period, now);
}

/* Every entry goes to the queue, those of a budget group too: the first
 * worker to take one of them syncs the whole group (reconcile.c), the
 * others find nothing pending. Members of a budget run at the shortest
 * period among them, so they stay on one grid. */
static void hand_out(ms_controller_t *c, ms__round_t *r)
{
    pthread_mutex_lock(&c->objects.lock);
    group_budgets(c, r);
    for (size_t i = 0; i < r->n; i++) {
        ms__round_entry_t *e = &r->entries[i];
        ms__object_t *o = ms__objects_get_locked(&c->objects, e->key);

        if (o == NULL || o->busy || o->pending != NULL)
            continue;
        /* An invalid spec waits for its next change (which kicks it). */
        o->due = e->stage == MS__ENTRY_INVALID ? INFINITY
                                               : ms__next_grid_locked(c, e->key, e->spec, r->now);
        o->grid = o->due;
        o->rejoin = false;
        if (e->stage == MS__ENTRY_GONE) {
            o->deleted = true;
            continue;
        }
        o->pending = ms__round_retain(r);
        o->pending_index = i;
        ms_workqueue_add(c->queues.work, e->key);
    }
    pthread_mutex_unlock(&c->objects.lock);
}

static void run_round(ms_controller_t *c, due_t *due, double now, double wall)
{
    ms__round_t *r = ms_xcalloc(1, sizeof *r);
    double t0 = ms_clock_monotonic();

    atomic_init(&r->refs, 1);
    r->now = now;
    r->wall = wall;
    r->observed = now;
    r->n = due->count.n;
    r->entries = ms_xcalloc(r->n, sizeof *r->entries);
    for (size_t i = 0; i < r->n; i++)
        plan(c, due->keys[i], &r->entries[i], wall);
    observe(c, r);
    ms_metrics_set(c->metrics.registry, c->metrics.fam.round_objects, NULL, (double)r->n);
    ms_metrics_observe(c->metrics.registry, c->metrics.fam.round_seconds, NULL,
                       ms_clock_monotonic() - t0);
    /* A round that shutdown cut short decides nothing: its cancelled queries
     * would read as missing metrics (MetricsUnavailable in the status and the
     * dry-run output, a failed sync towards the fallback). shut_down() sets
     * `stopping` before it cancels the queries. */
    if (!atomic_load(&c->stopping))
        hand_out(c, r);
    ms__round_release(r);
    atomic_store(&c->progress, (uint_fast64_t)(ms_clock_monotonic() * 1000));
}

void *ms__round_main(void *arg)
{
    ms_controller_t *c = arg;
    due_t due = {0};
    double next = 0, trimmed = ms_clock_monotonic();

    while (wait_for_work(c, next)) {
        double now = ms_clock_monotonic(), wall = ms_clock_wall();
        bool acting = ms__controller_may_act(c);
        /* A new leader acts on everything at once, with memory rebuilt
         * from status where this process has none. */
        bool all_due = acting && !c->round.was_leader;

        c->round.was_leader = acting;
        due.count.n = 0;
        due.count.on_grid = 0;
        due.count.rejoining = 0;
        collect(c, now, acting, all_due, &due);
        if (due.count.n > 0) {
            due.last_round = now;
            run_round(c, &due, now, wall);
        }
        if (now - trimmed > TRIM_EVERY) {
            ms_heap_trim();
            trimmed = now;
        }
        /* (after a round, at once: what fell due meanwhile) */
        next = due.count.n > 0 ? now : due.next;
    }
    free(due.keys);
    free(due.late);
    return NULL;
}
