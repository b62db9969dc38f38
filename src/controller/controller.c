/*
 * controller.c - the controller's lifecycle: build the clients, start the
 * informers (MeshAutoscalers; HPAs for conflicts; Deployments, StatefulSets,
 * ReplicaSets and pods, trimmed to what a round reads), the round thread, the
 * workers, the event queue, leader election and the HTTP server; run until
 * asked to stop; shut down in order. controller_internal.h tells the loop.
 *
 * Watch handlers only mark objects due (a kick) and keep the indexes; they
 * never sync.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller_internal.h"
#include "metrics_auth.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/version.h"
#include "meshscaler/xalloc.h"

/* /healthz fails when keys have been due and nothing progressed for this many
 * sync periods, and at least LIVENESS_FLOOR seconds (a slow round under a
 * Prometheus outage is not a wedged controller). */
#define LIVENESS_PERIODS 3
#define LIVENESS_FLOOR 60.0
/* Objects whose Events may wait to be written (one per object, type and
 * reason: newer ones fold into it); more are dropped, counted and logged. */
#define EVENT_QUEUE 16384
/* Objects whose status patch may wait to be written, and the threads writing.
 * A patch holds its writer for one round trip: 8 writers against an API
 * server answering in ~0.4 s (10,000 objects in a mass change) wrote 21 a
 * second, and 9,000 patches queued took ~8 minutes. They stay in the
 * background of the token bucket, behind scale writes. */
#define STATUS_QUEUE 16384
#define STATUS_WRITERS 32
/* Objects whose scale write may wait for a writer, and the writers: a write
 * takes its writer for one round trip (0.1-1 s against a busy API server),
 * so this many are in flight at once; past the client's rate limit they
 * wait for tokens, ahead of status and Events. A full queue is written by
 * the worker itself, as before the writers. */
#define SCALE_QUEUE 16384
#define SCALE_WRITERS 32

static bool may_send_event(void *ctx)
{
    return ms__may_write(ctx, "event");
}

/* The event queue's sender: the recorder, one Event or several folded. */
static ms_err_t send_event(void *ctx, const ms_kube_object_ref_t *ref, const char *type,
                           const char *reason, const char *message, int count, double wall,
                           ms_kube_error_t *kerr)
{
    ms_kube_recorder_t *r = ctx;

    if (count > 1)
        return ms_kube_record_combined(r, ref, type, reason, message, count, wall, NULL, kerr);
    return ms_kube_record(r, ref, type, reason, message, wall, NULL, kerr);
}

/* ---- watch handlers: mark due, keep the indexes ---- */

static long long generation(const cJSON *obj)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "generation");

    return cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
}

/* The object's annotations; NULL when it has none (absent or an empty map). */
static const cJSON *annotations(const cJSON *obj)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "annotations");

    return cJSON_IsObject(a) && a->child != NULL ? a : NULL;
}

bool ms__update_syncs_nothing(const cJSON *obj, const cJSON *old)
{
    const cJSON *a = annotations(obj), *b = annotations(old);

    if (obj == NULL || old == NULL || generation(obj) != generation(old))
        return false;
    /* cJSON_Compare calls two absent maps different (false when either is
     * NULL): an object created without annotations (kubectl create, a
     * controller, issue 28's 10,000) was synced again on each status write. */
    return a == NULL ? b == NULL : b != NULL && cJSON_Compare(a, b, true);
}

static void kick_key(void *ctx, const char *key)
{
    ms__kick(ctx, key);
}

/* An object stopped naming a budget: its share's series goes, and the
 * budget's own when it was the last member. */
static void budget_gone(void *ctx, const char *key, const char *budget, bool last)
{
    ms_controller_t *c = ctx;
    const char *slash = strchr(key, '/');
    char ns[MS__KEY_MAX];

    if (slash == NULL)
        return;
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    ms__metrics_budget_forget(c, ns, slash + 1, budget, last);
}

/* The budgets the object's spec names now (none once deleted or invalid),
 * so its fellow members are synced with it (round.c). */
static void note_budgets(ms_controller_t *c, const char *key, bool deleted)
{
    ms__object_t *o;
    const ms_spec_t *spec = NULL;

    pthread_mutex_lock(&c->objects.lock);
    o = ms__objects_get_locked(&c->objects, key);
    if (!deleted && o != NULL && o->spec != NULL && o->spec->ok)
        spec = &o->spec->spec;
    ms__budgets_set(&c->objects.budgets, key, spec, budget_gone, c);
    pthread_mutex_unlock(&c->objects.lock);
}

/* A MeshAutoscaler changed. Its state learns what the cache now holds (a
 * status-only update moves only the resourceVersion). Status-only updates
 * (ours, mostly) are not worth a sync: the grid brings the next one. New
 * objects, spec (generation) and annotation (pausing) changes are acted on
 * at once, and so are the autoscalers whose conflict with this one may have
 * come or gone. */
static void on_mas(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old)
{
    ms_controller_t *c = ctx;
    char key[MS__KEY_MAX];
    ms__object_t *o;

    if (!ms_kube_object_key(obj, key, sizeof key))
        return;
    if (change != MS_KUBE_DELETED)
        ms__objects_note(&c->objects, key, obj, c->cfg.user_queries);
    note_budgets(c, key, change == MS_KUBE_DELETED);
    if (change == MS_KUBE_UPDATED && ms__update_syncs_nothing(obj, old))
        return;
    /* A new, changed or deleted spec: the autoscalers on its old and new
     * target may (no longer) conflict with it. */
    if (c->informers.target_index != NULL &&
        (change != MS_KUBE_UPDATED || generation(obj) != generation(old))) {
        if (old != NULL)
            ms__target_index_each_mas(c->informers.target_index, old, kick_key, c);
        ms__target_index_update(c->informers.target_index, obj, false, change == MS_KUBE_DELETED);
        ms__target_index_each_mas(c->informers.target_index, obj, kick_key, c);
    }
    if (change == MS_KUBE_DELETED) {
        pthread_mutex_lock(&c->objects.lock);
        if ((o = ms__objects_get_locked(&c->objects, key)) != NULL)
            o->deleted = true;
        pthread_mutex_unlock(&c->objects.lock);
    }
    ms__kick(c, key);
}

/* An HPA appeared, changed or went away: the MeshAutoscalers on its target
 * learn at once that they now conflict, or no longer do. */
static void on_hpa(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old)
{
    ms_controller_t *c = ctx;

    if (old != NULL)
        ms__target_index_each_mas(c->informers.target_index, old, kick_key, c);
    ms__target_index_update(c->informers.target_index, obj, true, change == MS_KUBE_DELETED);
    ms__target_index_each_mas(c->informers.target_index, obj, kick_key, c);
}

static void on_started_leading(void *ctx)
{
    ms_controller_t *c = ctx;

    /* Wake the round thread: it makes everything due for a new leader. */
    pthread_mutex_lock(&c->round.lock);
    c->round.kicked = true;
    pthread_cond_signal(&c->round.cond);
    pthread_mutex_unlock(&c->round.lock);
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
    char *key;

    while (ms_workqueue_get(c->queues.work, &key)) {
        ms_kube_deadline_set(0);
        ms__sync_key(c, key);
        ms_kube_deadline_set(0);
        ms_workqueue_done(c->queues.work, key);
        free(key);
    }
    return NULL;
}

/* ---- lifecycle ---- */

/* The configuration, its strings copied (cfg's are the caller's) and its
 * defaults filled in. The Prometheus options are not kept: the Prometheus
 * client keeps its own copy. */
static void copy_config(ms_controller_t *c, const ms_controller_config_t *cfg)
{
    char host[256] = "", ident[320];

    c->cfg = *cfg;
    c->s_kubeconfig = ms_xstrdup_opt(cfg->kubeconfig);
    c->s_context = ms_xstrdup_opt(cfg->context);
    c->s_namespace = ms_xstrdup_opt(cfg->namespace_ && cfg->namespace_[0] ? cfg->namespace_ : NULL);
    c->s_lease_id =
        ms_xstrdup_opt(cfg->leader_election_id ? cfg->leader_election_id : "meshscaler");
    c->s_metrics = ms_xstrdup_opt(cfg->metrics_addr ? cfg->metrics_addr : ":8080");
    c->s_health = ms_xstrdup_opt(cfg->health_addr ? cfg->health_addr : ":8081");
    if (cfg->identity != NULL) {
        c->s_identity = ms_xstrdup_opt(cfg->identity);
    } else {
        gethostname(host, sizeof host - 1);
        snprintf(ident, sizeof ident, "%s_%ld", host[0] ? host : "meshscaler", (long)getpid());
        c->s_identity = ms_xstrdup_opt(ident);
    }
    c->s_workload_label = ms_xstrdup_opt(cfg->presets.workload_label);
    c->s_rate_window = ms_xstrdup_opt(cfg->presets.rate_window);
    c->cfg.kubeconfig = c->s_kubeconfig;
    c->cfg.context = c->s_context;
    c->cfg.namespace_ = c->s_namespace;
    c->cfg.leader_election_id = c->s_lease_id;
    c->cfg.identity = c->s_identity;
    c->cfg.metrics_addr = c->s_metrics;
    c->cfg.health_addr = c->s_health;
    c->cfg.presets.workload_label = c->s_workload_label;
    c->cfg.presets.rate_window = c->s_rate_window;
    memset(&c->cfg.prom, 0, sizeof c->cfg.prom);
    if (c->cfg.sync_period <= 0)
        c->cfg.sync_period = 15;
    if (c->cfg.concurrent_syncs <= 0)
        c->cfg.concurrent_syncs = 4;
    if (c->cfg.shutdown_timeout <= 0)
        c->cfg.shutdown_timeout = 10;
    if (c->cfg.out == NULL)
        c->cfg.out = stdout;
}

/* The flags, locks and condition variable the threads meet on. */
static void init_shared_state(ms_controller_t *c)
{
    atomic_init(&c->stopping, false);
    atomic_init(&c->ready, false);
    atomic_init(&c->alive, true);
    atomic_init(&c->cancel, false);
    atomic_init(&c->prom_cancel, false);
    atomic_init(&c->progress, 0);
    atomic_init(&c->due_since, 0);
    pthread_mutex_init(&c->out_lock, NULL);
    pthread_mutex_init(&c->round.lock, NULL);
    ms_clock_cond_init(&c->round.cond);
    ms__objects_init(&c->objects);
}

/* The Kubernetes clients (http.h says why one is enough for every thread):
 * one for every request but the lease's, whose token bucket is what
 * --kube-api-qps and --kube-api-burst say; and, when this process takes
 * part in leader election, the elector's own, so a renewal never waits
 * behind a burst of writes (kube-controller-manager's leader-election
 * client likewise). */
static ms_err_t new_kube_clients(ms_controller_t *c, char *errbuf, size_t errlen)
{
    ms_kube_config_options_t ko = {0};
    ms_kube_client_options_t co = {0};

    ko.kubeconfig = c->s_kubeconfig;
    ko.context = c->s_context;
    if (ms_kube_config_load(&ko, &c->clients.kcfg, errbuf, errlen) != MS_OK)
        return MS_ERR_INVALID;
    /* The identity in the user agent tells replicas apart in the API
     * server's audit log even when they share a ServiceAccount. */
    snprintf(c->clients.user_agent, sizeof c->clients.user_agent, "meshscaler/%s (%s)",
             ms_version(), c->s_identity);
    co.user_agent = c->clients.user_agent;
    co.qps = c->cfg.kube_qps != 0 ? c->cfg.kube_qps : 300;
    co.burst = c->cfg.kube_burst > 0 ? c->cfg.kube_burst : 600;
    co.cancel = &c->cancel;
    if ((c->clients.kube = ms_kube_client_new(c->clients.kcfg, &co, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    if (!c->cfg.leader_elect || c->cfg.dry_run)
        return MS_OK;
    /* The elector's: never retried past the renew deadline, which bounds
     * every request it makes; not cancelled at shutdown, so the release of
     * the lease still goes out (within its own bound). Its bucket has the
     * same size and is never near empty: one renewal every 2 s. */
    co.max_retries = -1;
    co.cancel = NULL;
    if ((c->clients.kube_lease = ms_kube_client_new(c->clients.kcfg, &co, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    return MS_OK;
}

/* The Prometheus client, and the presets' options checked now (a bad
 * workload label or rate window is refused here, not at the first round). */
static ms_err_t new_prom(ms_controller_t *c, const ms_prom_options_t *prom, char *errbuf,
                         size_t errlen)
{
    ms_prom_tick_t *probe;

    if ((c->clients.prom = ms_prom_client_new(prom, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    if ((probe = ms_prom_tick_new(&c->cfg.presets, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    ms_prom_tick_free(probe);
    return MS_OK;
}

ms_controller_t *ms_controller_new(const ms_controller_config_t *cfg, char *errbuf, size_t errlen)
{
    ms_controller_t *c = calloc(1, sizeof *c);

    if (c == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    copy_config(c, cfg);
    init_shared_state(c);
    if (new_kube_clients(c, errbuf, errlen) != MS_OK)
        goto fail;
    if (cfg->metrics_secure &&
        (c->metrics.auth = ms__metrics_authorizer_new(c->clients.kcfg, cfg->metrics_cert_dir,
                                                      errbuf, errlen)) == NULL)
        goto fail;
    c->queues.workers = calloc((size_t)c->cfg.concurrent_syncs, sizeof *c->queues.workers);
    if (c->queues.workers == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < c->cfg.concurrent_syncs; i++)
        c->queues.workers[i].c = c;
    c->s_lease_ns =
        ms_xstrdup_opt(cfg->leader_election_namespace ? cfg->leader_election_namespace
                                                      : ms_kube_client_namespace(c->clients.kube));
    c->cfg.leader_election_namespace = c->s_lease_ns;
    if (new_prom(c, &cfg->prom, errbuf, errlen) != MS_OK)
        goto fail;
    c->queues.work = ms_workqueue_new(NULL);
    c->informers.pod_index = ms__pod_index_new();
    c->informers.target_index = ms__target_index_new();
    if ((c->metrics.registry = ms_metrics_new()) == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    ms__metrics_declare(c);
    return c;
fail:
    ms_controller_free(c);
    return NULL;
}

static ms_kube_informer_t *start_informer(ms_controller_t *c, const char *api_version,
                                          const char *plural,
                                          const ms_kube_informer_options_t *base, char *errbuf,
                                          size_t errlen)
{
    ms_kube_informer_options_t io = *base;
    ms_kube_informer_t *inf;
    char path[512];

    if (ms_kube_path(path, sizeof path, api_version, c->cfg.namespace_, plural, NULL, NULL) !=
        MS_OK) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "--namespace: \"%s\" cannot be a namespace",
                c->cfg.namespace_);
        return NULL;
    }
    io.path = path;
    if ((inf = ms_kube_informer_new(c->clients.kube, &io)) == NULL) {
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

/* Every informer the loop reads. Workloads and pods are trimmed to the few
 * fields a round uses: 10,000 Deployments cost megabytes, not hundreds. All
 * caches are compact (text, parsed on read): the loop reads a workload once
 * per round and a MeshAutoscaler only for a full status report, while the
 * handlers get each event's own tree, so parses are few and the heap is a
 * fifth of what trees take. */
static ms_err_t start_informers(ms_controller_t *c, char *errbuf, size_t errlen)
{
    static const char *const workload_plurals[3] = {"deployments", "statefulsets", "replicasets"};
    static const char *const workload_keep[] = {"spec.replicas", "spec.selector", "status.replicas",
                                                NULL};
    static const char *const pod_keep[] = {"metadata.labels", "metadata.deletionTimestamp",
                                           "status.conditions", "status.phase", NULL};
    /* Its desired count is what a dry-run MeshAutoscaler is compared with. */
    static const char *const hpa_keep[] = {"spec.scaleTargetRef", "status.desiredReplicas",
                                           "status.currentMetrics", NULL};
    ms_kube_informer_options_t o = {0};

    /* HPAs: conflicts for live objects, the comparison for dry-run ones. */
    o.compact = true;
    o.notify = on_hpa;
    o.ctx = c;
    o.keep = hpa_keep;
    if ((c->informers.hpa = start_informer(c, "autoscaling/v2", "horizontalpodautoscalers", &o,
                                           errbuf, errlen)) == NULL)
        return MS_ERR_IO;
    memset(&o, 0, sizeof o);
    o.compact = true;
    o.keep = workload_keep;
    for (int i = 0; i < 3; i++)
        if ((c->informers.workloads[i] =
                 start_informer(c, "apps/v1", workload_plurals[i], &o, errbuf, errlen)) == NULL)
            return MS_ERR_IO;
    memset(&o, 0, sizeof o);
    o.compact = true;
    o.keep = pod_keep;
    o.transform = ms__pod_transform;
    o.notify = ms__pod_index_notify;
    o.ctx = c->informers.pod_index;
    if ((c->informers.pods = start_informer(c, "v1", "pods", &o, errbuf, errlen)) == NULL)
        return MS_ERR_IO;
    memset(&o, 0, sizeof o);
    o.compact = true;
    o.notify = on_mas;
    o.ctx = c;
    if ((c->informers.mas =
             start_informer(c, MS__MAS_API_VERSION, MS__MAS_PLURAL, &o, errbuf, errlen)) == NULL)
        return MS_ERR_IO;
    return MS_OK;
}

static bool caches_synced(ms_controller_t *c)
{
    ms_kube_informer_t *all[] = {c->informers.mas,          c->informers.hpa,
                                 c->informers.workloads[0], c->informers.workloads[1],
                                 c->informers.workloads[2], c->informers.pods};

    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] != NULL && !ms_kube_informer_wait_synced(all[i], 0.05))
            return false;
    return true;
}

static ms_err_t start_elector(ms_controller_t *c, char *errbuf, size_t errlen)
{
    ms_kube_lease_options_t lo = {0};
    ms_kube_elector_t *elector;

    lo.namespace_ = c->cfg.leader_election_namespace;
    lo.name = c->cfg.leader_election_id;
    lo.identity = c->cfg.identity;
    lo.on_started_leading = on_started_leading;
    lo.on_stopped_leading = on_stopped_leading;
    lo.ctx = c;
    if ((elector = ms_kube_elector_new(c->clients.kube_lease, &lo, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    c->clients.elector = elector; /* published before it runs: its callbacks read it */
    if (ms_kube_elector_start(elector) != MS_OK)
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

bool ms__liveness_ok(double due_since, double progress, double now, double sync_period)
{
    double limit = LIVENESS_PERIODS * sync_period;
    double last = progress > due_since ? progress : due_since;

    if (due_since == 0)
        return true;
    if (limit < LIVENESS_FLOOR)
        limit = LIVENESS_FLOOR;
    return now - last < limit;
}

/* /healthz: false when keys have waited and nothing moved for too long. */
static void check_liveness(ms_controller_t *c, double now)
{
    double since = (double)atomic_load(&c->due_since) / 1000.0;
    double progress = (double)atomic_load(&c->progress) / 1000.0;
    bool alive = ms__liveness_ok(since, progress, now, c->cfg.sync_period);
    bool was_alive = atomic_exchange(&c->alive, alive);

    /* Stored before the log line: when what wedged the workers is a stalled
     * stderr, this line blocks too, and /healthz must fail all the same. */
    if (was_alive && !alive)
        MS_LOG_ERROR("no progress while objects are due: /healthz fails",
                     MS_D("seconds", now - (progress > since ? progress : since)));
}

static ms_err_t start_workers(ms_controller_t *c, char *errbuf, size_t errlen)
{
    int started = 0;

    for (int i = 0; i < c->cfg.concurrent_syncs; i++) {
        if (pthread_create(&c->queues.workers[i].thread, NULL, worker, &c->queues.workers[i]) != 0)
            break;
        c->queues.workers[i].started = true;
        started++;
    }
    if (started == 0 || pthread_create(&c->round.thread, NULL, ms__round_main, c) != 0)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start workers");
    c->round.started = true;
    return MS_OK;
}

static void stop_round_thread(ms_controller_t *c)
{
    pthread_mutex_lock(&c->round.lock);
    pthread_cond_broadcast(&c->round.cond);
    pthread_mutex_unlock(&c->round.lock);
    if (c->round.started)
        pthread_join(c->round.thread, NULL);
    c->round.started = false;
}

/* The HTTP server (/metrics, /healthz, /readyz) and, live, the writers the
 * syncs hand their events and status patches to. */
static ms_err_t start_server_and_writers(ms_controller_t *c, char *errbuf, size_t errlen)
{
    static const ms__scale_writer_ops_t scale_ops = {
        .write = ms__sync_write, .abandon = ms__sync_abandon, .free = ms__sync_free};
    ms_server_options_t so = {0};

    so.metrics_addr = c->cfg.metrics_addr;
    so.health_addr = c->cfg.health_addr;
    so.metrics = c->metrics.registry;
    so.ready = &c->ready;
    so.alive = &c->alive;
    ms__metrics_authorizer_apply(c->metrics.auth, &so); /* NULL: plain /metrics */
    if ((c->metrics.server = ms_server_start(&so, errbuf, errlen)) == NULL)
        return MS_ERR_IO;
    if (!c->cfg.dry_run)
        c->clients.recorder = ms_kube_recorder_new(c->clients.kube, "meshscaler", c->cfg.identity);
    c->queues.events = ms__event_queue_new(c->clients.recorder != NULL ? send_event : NULL,
                                           c->clients.recorder, EVENT_QUEUE, may_send_event, c);
    if (!c->cfg.dry_run) {
        c->queues.status_writer = ms__status_writer_new(c, STATUS_WRITERS, STATUS_QUEUE);
        c->queues.scale_writer = ms__scale_writer_new(c, &scale_ops, SCALE_WRITERS, SCALE_QUEUE);
    }
    return MS_OK;
}

/* Until asked to stop: start the workers once every cache has synced, and
 * refresh the gauges and the liveness verdict once a second. */
static ms_err_t main_loop(ms_controller_t *c, const atomic_bool *stop, char *errbuf, size_t errlen)
{
    ms_err_t err;
    bool synced = false;
    double last_gauges = 0, started = ms_clock_monotonic();

    while (!should_stop(c, stop)) {
        double now = ms_clock_monotonic();

        if (!synced && caches_synced(c)) {
            /* The round thread starts once every cache is complete
             * (client-go's WaitForCacheSync), so the first round of every
             * object sees every HPA, workload and pod; the informers' ADDED
             * notifications made every object due. */
            synced = true;
            MS_LOG_INFO("caches synced",
                        MS_I("objects", (long long)ms_kube_informer_size(c->informers.mas)),
                        MS_I("pods", (long long)ms_kube_informer_size(c->informers.pods)),
                        MS_D("seconds", now - started));
            /* Only now: a replica whose caches never sync (a list that
             * fails on every try) must not hold the Lease and keep a
             * replica that can decide from taking it. Before the workers:
             * with no elector they would act as if alone. */
            if (c->cfg.leader_elect && !c->cfg.dry_run &&
                (err = start_elector(c, errbuf, errlen)) != MS_OK)
                return err;
            if ((err = start_workers(c, errbuf, errlen)) != MS_OK)
                return err;
            atomic_store(&c->progress, (uint_fast64_t)(now * 1000));
            atomic_store(&c->ready, true);
        }
        if (now - last_gauges >= 1) {
            ms__metrics_refresh(c);
            if (synced)
                check_liveness(c, now);
            last_gauges = now;
        }
        ms_clock_sleep(0.1);
    }
    MS_LOG_INFO("shutting down", MS_D("deadline_seconds", c->cfg.shutdown_timeout));
    return MS_OK;
}

/* Stop every informer's watch at once (each notices within about a second),
 * then free them. */
static void stop_informers(ms_controller_t *c)
{
    ms_kube_informer_t **all[] = {&c->informers.mas,          &c->informers.hpa,
                                  &c->informers.workloads[0], &c->informers.workloads[1],
                                  &c->informers.workloads[2], &c->informers.pods};

    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ms_kube_informer_stop(*all[i]);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ms_kube_informer_free(*all[i]);
        *all[i] = NULL;
    }
}

/* Shut down in order: no new round, in-flight syncs drained (cancelled past
 * the deadline), queued statuses and events given a moment, then the lease,
 * the watches and the server. */
static void shut_down(ms_controller_t *c)
{
    double drain_until = ms_clock_monotonic() + c->cfg.shutdown_timeout;

    atomic_store(&c->ready, false);
    atomic_store(&c->stopping, true);
    /* No new round; a round in flight ends its queries now (prom_cancel). */
    atomic_store(&c->prom_cancel, true);
    stop_round_thread(c);
    if (!ms_workqueue_shutdown_with_drain(c->queues.work, c->cfg.shutdown_timeout)) {
        MS_LOG_WARN("in-flight syncs did not finish in time: cancelling their requests");
        atomic_store(&c->cancel, true);
    }
    for (int i = 0; i < c->cfg.concurrent_syncs; i++) {
        if (c->queues.workers[i].started)
            pthread_join(c->queues.workers[i].thread, NULL);
        c->queues.workers[i].started = false;
    }
    /* Workers are done; the scale writes they handed over are in-flight
     * syncs too, drained by the same deadline (their reports queue status
     * and events); statuses and events still queued get a moment, then the
     * lease goes. */
    if (!ms__scale_writer_drain(c->queues.scale_writer, drain_until)) {
        MS_LOG_WARN("scale writes did not finish in time: cancelling their requests");
        atomic_store(&c->cancel, true);
    }
    /* No scale writer thread is left to queue a status or an Event. */
    ms__scale_writer_stop(c->queues.scale_writer);
    /* A patch or Event taken before the drain began waits for a background
     * token with no deadline: 32 such patches at --kube-api-qps 2 held the
     * exit past 12 s. What is still in flight at the end is cancelled. */
    {
        double until = ms_clock_monotonic() + 2;
        bool quiet = ms__status_writer_drain(c->queues.status_writer, until);

        quiet = ms__event_queue_drain(c->queues.events, until + 2) && quiet;
        if (!quiet) {
            MS_LOG_WARN(
                "status writes and Events did not finish in time: cancelling their requests");
            atomic_store(&c->cancel, true);
        }
    }
    ms__status_writer_free(c->queues.status_writer, 0);
    c->queues.status_writer = NULL;
    /* Freed only now: a status writer waiting behind scale writes asks the
     * (stopped) scale writer for its pending count until its own threads
     * are gone. */
    ms__scale_writer_free(c->queues.scale_writer);
    c->queues.scale_writer = NULL;
    ms__event_queue_free(c->queues.events, 0);
    c->queues.events = NULL;
    ms_kube_elector_free(c->clients.elector);
    c->clients.elector = NULL;
    atomic_store(&c->cancel, true); /* the informers' watches end now */
    stop_informers(c);
    ms_server_stop(c->metrics.server);
    c->metrics.server = NULL;
}

ms_err_t ms_controller_run(ms_controller_t *c, const atomic_bool *stop, char *errbuf, size_t errlen)
{
    ms_err_t err;

    if ((err = start_server_and_writers(c, errbuf, errlen)) != MS_OK)
        return err;
    if ((err = start_informers(c, errbuf, errlen)) != MS_OK)
        goto out;
    if (c->cfg.leader_elect && c->cfg.dry_run)
        MS_LOG_INFO("dry-run takes no lease: --leader-elect ignored");
    MS_LOG_INFO("controller started",
                MS_S("namespace", c->cfg.namespace_ ? c->cfg.namespace_ : "*"),
                MS_D("sync_period", c->cfg.sync_period), MS_I("workers", c->cfg.concurrent_syncs),
                MS_S("dry_run", c->cfg.dry_run ? "true" : "false"),
                MS_I("metrics_port", ms_server_metrics_port(c->metrics.server)),
                MS_I("health_port", ms_server_health_port(c->metrics.server)));
    err = main_loop(c, stop, errbuf, errlen);
out:
    shut_down(c);
    if (err == MS_OK)
        MS_LOG_INFO("stopped");
    return err;
}

void ms_controller_stop(ms_controller_t *c)
{
    atomic_store(&c->stopping, true);
}

int ms_controller_metrics_port(const ms_controller_t *c)
{
    return c->metrics.server ? ms_server_metrics_port(c->metrics.server) : -1;
}

int ms_controller_health_port(const ms_controller_t *c)
{
    return c->metrics.server ? ms_server_health_port(c->metrics.server) : -1;
}

void ms_controller_free(ms_controller_t *c)
{
    if (c == NULL)
        return;
    ms_kube_recorder_free(c->clients.recorder);
    ms__metrics_authorizer_free(c->metrics.auth);
    ms_workqueue_free(c->queues.work);
    ms_metrics_free(c->metrics.registry);
    ms_prom_client_free(c->clients.prom);
    free(c->queues.workers);
    ms_kube_client_free(c->clients.kube_lease);
    ms_kube_client_free(c->clients.kube);
    ms_kube_config_free(c->clients.kcfg);
    ms__objects_cleanup(&c->objects);
    ms__pod_index_free(c->informers.pod_index);
    ms__target_index_free(c->informers.target_index);
    pthread_mutex_destroy(&c->out_lock);
    pthread_mutex_destroy(&c->round.lock);
    pthread_cond_destroy(&c->round.cond);
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
