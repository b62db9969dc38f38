/*
 * controller.c - the controller's lifecycle: build the clients, start the
 * informers (MeshAutoscalers, and HPAs for conflict detection), the work
 * queue and its workers, leader election and the HTTP server; run until
 * asked to stop; shut down in order.
 *
 * Watch handlers only enqueue keys. A worker takes a ready key and, without
 * waiting, every other ready key up to MS__BATCH_MAX, and syncs them
 * together (reconcile.c), so objects that fall due at the same moment — the
 * sync timer aligns each object's next sync to a multiple of its period on
 * the wall clock — share one batched Prometheus tick.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"

static char *dup_or_null(const char *s)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL) {
        MS_LOG_ERROR("out of memory", MS_S("what", "controller options"));
        abort();
    }
    return d;
}

bool ms__controller_may_act(ms_controller_t *c)
{
    return c->elector == NULL || ms_kube_elector_is_leader(c->elector);
}

/* ---- watch handlers: enqueue keys only ---- */

static long long generation(const cJSON *obj)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "generation");

    return cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
}

static const cJSON *annotations(const cJSON *obj)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                            "annotations");
}

static void enqueue_namespace_of(ms_controller_t *c, const cJSON *obj);

/* A MeshAutoscaler changed. Status-only updates (ours, mostly) are not
 * worth a sync: the timer brings the next one. Spec (generation) and
 * annotation (pausing) changes are acted on at once. */
static void on_mas(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old)
{
    ms_controller_t *c = ctx;
    char key[MS__KEY_MAX];

    if (!ms_kube_object_key(obj, key, sizeof key))
        return;
    if (change == MS_KUBE_UPDATED && old != NULL && generation(obj) == generation(old) &&
        cJSON_Compare(annotations(obj), annotations(old), true))
        return;
    ms_workqueue_add(c->queue, key);
    /* (Before the first sync every key is queued anyway.) */
    if (atomic_load(&c->ready) && (change != MS_KUBE_UPDATED || generation(obj) != generation(old)))
        enqueue_namespace_of(c, obj); /* its neighbours may (no longer) conflict with it */
}

typedef struct {
    ms_controller_t *c;
    const char *ns;
} ns_walk_t;

static void enqueue_in_namespace(void *ctx, const char *key, const cJSON *obj)
{
    ns_walk_t *w = ctx;
    size_t n = strlen(w->ns);

    (void)obj;
    if (strncmp(key, w->ns, n) == 0 && key[n] == '/')
        ms_workqueue_add(w->c->queue, key);
}

/* Resync every MeshAutoscaler in obj's namespace. Called on the informers'
 * threads: foreach takes the MeshAutoscaler cache's read lock, which the
 * MeshAutoscaler informer's own notifications do not hold. */
static void enqueue_namespace_of(ms_controller_t *c, const cJSON *obj)
{
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "namespace");
    ns_walk_t w = {c, NULL};

    if (!cJSON_IsString(ns))
        return;
    w.ns = ns->valuestring;
    ms_kube_informer_foreach(c->mas, enqueue_in_namespace, &w);
}

/* An HPA appeared, changed or went away: resync the MeshAutoscalers of its
 * namespace, so a conflict is reported, or cleared, without waiting. */
static void on_hpa(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old)
{
    (void)change;
    (void)old;
    enqueue_namespace_of(ctx, obj);
}

static void enqueue_all(void *ctx, const char *key, const cJSON *obj)
{
    ms_controller_t *c = ctx;

    (void)obj;
    ms_workqueue_add(c->queue, key);
}

static void on_started_leading(void *ctx)
{
    ms_controller_t *c = ctx;

    /* Everything is due: a new leader acts at once, with memory rebuilt
     * from status where this process has none. */
    ms_kube_informer_foreach(c->mas, enqueue_all, c);
}

static void on_stopped_leading(void *ctx)
{
    (void)ctx;
    MS_LOG_INFO("not the leader: syncs stop until leadership returns");
}

/* ---- workers ---- */

static void *worker(void *arg)
{
    ms__worker_t *w = arg;
    ms_controller_t *c = w->c;
    char *keys[MS__BATCH_MAX];

    for (;;) {
        size_t n = 0;

        if (!ms_workqueue_get(c->queue, &keys[n]))
            break;
        n = 1;
        /* Take whatever else is ready now, up to a batch: due together,
         * synced together, one Prometheus tick. With more due objects than
         * a batch holds, the other workers take the next batches. */
        while (n < MS__BATCH_MAX && ms_workqueue_try_get(c->queue, &keys[n]))
            n++;
        if (ms__controller_may_act(c)) {
            ms__reconcile_batch(c, w->kube, keys, n);
        } else {
            /* Not the leader: drop the keys. on_started_leading re-adds all. */
        }
        for (size_t i = 0; i < n; i++) {
            ms_workqueue_done(c->queue, keys[i]);
            free(keys[i]);
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

ms_controller_t *ms_controller_new(const ms_controller_config_t *cfg, char *errbuf, size_t errlen)
{
    ms_controller_t *c = calloc(1, sizeof *c);
    ms_kube_config_options_t ko = {0};
    ms_kube_client_options_t co = {0};
    char host[256] = "", ident[320];

    if (c == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->cfg = *cfg;
    c->s_kubeconfig = dup_or_null(cfg->kubeconfig);
    c->s_context = dup_or_null(cfg->context);
    c->s_namespace = dup_or_null(cfg->namespace_ && cfg->namespace_[0] ? cfg->namespace_ : NULL);
    c->s_lease_id = dup_or_null(cfg->leader_election_id ? cfg->leader_election_id : "meshscaler");
    c->s_metrics = dup_or_null(cfg->metrics_addr ? cfg->metrics_addr : ":8080");
    c->s_health = dup_or_null(cfg->health_addr ? cfg->health_addr : ":8081");
    if (cfg->identity != NULL) {
        c->s_identity = dup_or_null(cfg->identity);
    } else {
        gethostname(host, sizeof host - 1);
        snprintf(ident, sizeof ident, "%s_%ld", host[0] ? host : "meshscaler", (long)getpid());
        c->s_identity = dup_or_null(ident);
    }
    c->cfg.kubeconfig = c->s_kubeconfig;
    c->cfg.context = c->s_context;
    c->cfg.namespace_ = c->s_namespace;
    c->cfg.leader_election_id = c->s_lease_id;
    c->cfg.identity = c->s_identity;
    c->cfg.metrics_addr = c->s_metrics;
    c->cfg.health_addr = c->s_health;
    memset(&c->cfg.prom, 0, sizeof c->cfg.prom); /* the Prometheus client keeps its copy */
    if (c->cfg.sync_period <= 0)
        c->cfg.sync_period = 15;
    if (c->cfg.concurrent_syncs <= 0)
        c->cfg.concurrent_syncs = 4;
    if (c->cfg.shutdown_timeout <= 0)
        c->cfg.shutdown_timeout = 10;
    if (c->cfg.out == NULL)
        c->cfg.out = stdout;
    atomic_init(&c->stopping, false);
    atomic_init(&c->ready, false);
    atomic_init(&c->alive, true);
    atomic_init(&c->cancel, false);
    pthread_mutex_init(&c->out_lock, NULL);
    pthread_mutex_init(&c->prom_lock, NULL);
    ms__objects_init(&c->objects);

    ko.kubeconfig = c->s_kubeconfig;
    ko.context = c->s_context;
    if (ms_kube_config_load(&ko, &c->kcfg, errbuf, errlen) != MS_OK)
        goto fail;
    co.qps = cfg->kube_qps != 0 ? cfg->kube_qps : 300;
    co.burst = cfg->kube_burst > 0 ? cfg->kube_burst : 600;
    co.cancel = &c->cancel;
    if ((c->kube = ms_kube_client_new(c->kcfg, &co, errbuf, errlen)) == NULL ||
        (c->kube_hpa = ms_kube_client_new(c->kcfg, &co, errbuf, errlen)) == NULL ||
        (c->kube_lease = ms_kube_client_new(c->kcfg, &co, errbuf, errlen)) == NULL ||
        (c->kube_events = ms_kube_client_new(c->kcfg, &co, errbuf, errlen)) == NULL)
        goto fail;
    /* The workers share the request budget: each gets its part of it. */
    c->workers = calloc((size_t)c->cfg.concurrent_syncs, sizeof *c->workers);
    if (c->workers == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (co.qps > 0)
        co.qps /= c->cfg.concurrent_syncs;
    co.burst = co.burst / c->cfg.concurrent_syncs > 0 ? co.burst / c->cfg.concurrent_syncs : 1;
    for (int i = 0; i < c->cfg.concurrent_syncs; i++) {
        c->workers[i].c = c;
        if ((c->workers[i].kube = ms_kube_client_new(c->kcfg, &co, errbuf, errlen)) == NULL)
            goto fail;
    }
    c->s_lease_ns = dup_or_null(cfg->leader_election_namespace
                                    ? cfg->leader_election_namespace
                                    : ms_kube_client_namespace(c->kube));
    c->cfg.leader_election_namespace = c->s_lease_ns;
    if ((c->prom = ms_prom_client_new(&cfg->prom, errbuf, errlen)) == NULL)
        goto fail;
    c->s_workload_label = dup_or_null(cfg->presets.workload_label);
    c->s_rate_window = dup_or_null(cfg->presets.rate_window);
    c->cfg.presets.workload_label = c->s_workload_label;
    c->cfg.presets.rate_window = c->s_rate_window;
    {
        /* Refuse a bad workload label or rate window now, not at the first sync. */
        ms_prom_tick_t *probe = ms_prom_tick_new(&c->cfg.presets, errbuf, errlen);
        if (probe == NULL)
            goto fail;
        ms_prom_tick_free(probe);
    }
    c->queue = ms_workqueue_new(NULL);
    if ((c->metrics = ms_metrics_new()) == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    ms__metrics_declare(c);
    return c;
fail:
    ms_controller_free(c);
    return NULL;
}

static ms_kube_informer_t *start_informer(ms_controller_t *c, ms_kube_client_t *kube,
                                          const char *api_version,
                                          const char *plural, ms_kube_notify_fn fn, char *errbuf,
                                          size_t errlen)
{
    ms_kube_informer_options_t io = {0};
    ms_kube_informer_t *inf;
    char path[512];

    if (ms_kube_path(path, sizeof path, api_version, c->cfg.namespace_, plural, NULL, NULL) !=
        MS_OK) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "--namespace: \"%s\" cannot be a namespace",
                c->cfg.namespace_);
        return NULL;
    }
    io.path = path;
    io.notify = fn;
    io.ctx = c;
    if ((inf = ms_kube_informer_new(kube, &io)) == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (ms_kube_informer_start(inf) != MS_OK) {
        ms_kube_informer_free(inf);
        ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start the %s informer", plural);
        return NULL;
    }
    return inf;
}

static ms_err_t start_elector(ms_controller_t *c, char *errbuf, size_t errlen)
{
    ms_kube_lease_options_t lo = {0};

    lo.namespace_ = c->cfg.leader_election_namespace;
    lo.name = c->cfg.leader_election_id;
    lo.identity = c->cfg.identity;
    lo.on_started_leading = on_started_leading;
    lo.on_stopped_leading = on_stopped_leading;
    lo.ctx = c;
    if ((c->elector = ms_kube_elector_new(c->kube_lease, &lo, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    if (ms_kube_elector_start(c->elector) != MS_OK)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start leader election");
    MS_LOG_INFO("leader election started", MS_S("lease", c->cfg.leader_election_id),
                MS_S("namespace", c->cfg.leader_election_namespace),
                MS_S("identity", c->cfg.identity));
    return MS_OK;
}

static bool should_stop(ms_controller_t *c, const atomic_bool *stop)
{
    return atomic_load(&c->stopping) || (stop != NULL && atomic_load(stop));
}

ms_err_t ms_controller_run(ms_controller_t *c, const atomic_bool *stop, char *errbuf,
                           size_t errlen)
{
    ms_server_options_t so = {0};
    int nthreads = 0;
    ms_err_t err = MS_OK;
    bool synced = false;
    double last_gauges = 0, started = ms_clock_monotonic();

    so.metrics_addr = c->cfg.metrics_addr;
    so.health_addr = c->cfg.health_addr;
    so.metrics = c->metrics;
    so.ready = &c->ready;
    so.alive = &c->alive;
    if ((c->server = ms_server_start(&so, errbuf, errlen)) == NULL)
        return MS_ERR_IO;
    if (!c->cfg.dry_run) {
        c->recorder = ms_kube_recorder_new(c->kube_events, "meshscaler", c->cfg.identity);
        c->hpa = start_informer(c, c->kube_hpa, "autoscaling/v2", "horizontalpodautoscalers", on_hpa, errbuf,
                                errlen);
        if (c->hpa == NULL) {
            err = MS_ERR_IO;
            goto out;
        }
    }
    if ((c->mas = start_informer(c, c->kube, MS__MAS_API_VERSION, MS__MAS_PLURAL, on_mas, errbuf,
                                 errlen)) == NULL) {
        err = MS_ERR_IO;
        goto out;
    }
    if (c->cfg.leader_elect && c->cfg.dry_run)
        MS_LOG_INFO("dry-run takes no lease: --leader-elect ignored");
    if (c->cfg.leader_elect && !c->cfg.dry_run &&
        (err = start_elector(c, errbuf, errlen)) != MS_OK)
        goto out;
    MS_LOG_INFO("controller started", MS_S("namespace", c->cfg.namespace_ ? c->cfg.namespace_ : "*"),
                MS_D("sync_period", c->cfg.sync_period), MS_I("workers", c->cfg.concurrent_syncs),
                MS_S("dry_run", c->cfg.dry_run ? "true" : "false"),
                MS_I("metrics_port", ms_server_metrics_port(c->server)),
                MS_I("health_port", ms_server_health_port(c->server)));

    while (!should_stop(c, stop)) {
        double now = ms_clock_monotonic();

        if (!synced && ms_kube_informer_wait_synced(c->mas, 0.1) &&
            (c->hpa == NULL || ms_kube_informer_wait_synced(c->hpa, 0.1))) {
            /* Workers start once the caches are complete (client-go's
             * WaitForCacheSync), so the first sync of every object sees every
             * HPA; the informers' ADDED notifications queued every key. */
            synced = true;
            MS_LOG_INFO("caches synced", MS_I("objects", (long long)ms_kube_informer_size(c->mas)),
                        MS_D("seconds", now - started));
            for (int i = 0; i < c->cfg.concurrent_syncs; i++) {
                if (pthread_create(&c->workers[i].thread, NULL, worker, &c->workers[i]) != 0)
                    break;
                c->workers[i].started = true;
                nthreads++;
            }
            if (nthreads == 0) {
                err = ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start workers");
                goto out;
            }
            atomic_store(&c->ready, true);
        }
        if (now - last_gauges >= 1) {
            ms__metrics_refresh(c);
            last_gauges = now;
        }
        if (synced) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    MS_LOG_INFO("shutting down", MS_D("deadline_seconds", c->cfg.shutdown_timeout));
out:
    atomic_store(&c->ready, false);
    if (!ms_workqueue_shutdown_with_drain(c->queue, c->cfg.shutdown_timeout)) {
        MS_LOG_WARN("in-flight syncs did not finish in time: cancelling their requests");
        atomic_store(&c->cancel, true);
    }
    for (int i = 0; i < c->cfg.concurrent_syncs; i++) {
        if (c->workers[i].started)
            pthread_join(c->workers[i].thread, NULL);
        c->workers[i].started = false;
    }
    /* Workers are done: nothing writes any more, so the lease can go. */
    ms_kube_elector_free(c->elector);
    c->elector = NULL;
    atomic_store(&c->cancel, true);
    ms_kube_informer_free(c->mas);
    c->mas = NULL;
    ms_kube_informer_free(c->hpa);
    c->hpa = NULL;
    ms_server_stop(c->server);
    c->server = NULL;
    if (err == MS_OK)
        MS_LOG_INFO("stopped");
    return err;
}

void ms_controller_stop(ms_controller_t *c) { atomic_store(&c->stopping, true); }

int ms_controller_metrics_port(const ms_controller_t *c)
{
    return c->server ? ms_server_metrics_port(c->server) : -1;
}

int ms_controller_health_port(const ms_controller_t *c)
{
    return c->server ? ms_server_health_port(c->server) : -1;
}

void ms_controller_free(ms_controller_t *c)
{
    if (c == NULL)
        return;
    ms_kube_recorder_free(c->recorder);
    ms_workqueue_free(c->queue);
    ms_metrics_free(c->metrics);
    ms_prom_client_free(c->prom);
    for (int i = 0; c->workers != NULL && i < c->cfg.concurrent_syncs; i++)
        ms_kube_client_free(c->workers[i].kube);
    free(c->workers);
    ms_kube_client_free(c->kube_events);
    ms_kube_client_free(c->kube_lease);
    ms_kube_client_free(c->kube_hpa);
    ms_kube_client_free(c->kube);
    ms_kube_config_free(c->kcfg);
    ms__objects_cleanup(&c->objects);
    pthread_mutex_destroy(&c->out_lock);
    pthread_mutex_destroy(&c->prom_lock);
    free(c->s_kubeconfig);
    free(c->s_context);
    free(c->s_namespace);
    free(c->s_lease_id);
    free(c->s_lease_ns);
    free(c->s_identity);
    free(c->s_metrics);
    free(c->s_health);
    free(c->s_workload_label);
    free(c->s_rate_window);
    free(c);
}
