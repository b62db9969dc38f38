/*
 * controller_internal.h - what controller.c (lifecycle, threads) shares with
 * reconcile.c (one sync of a batch of keys) and objects.c (per-object
 * state). Internal to src/controller.
 */
#ifndef MESHSCALER_CONTROLLER_INTERNAL_H
#define MESHSCALER_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "meshscaler/controller.h"
#include "meshscaler/engine.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"
#include "meshscaler/kube_events.h"
#include "meshscaler/lease.h"
#include "meshscaler/metrics.h"
#include "meshscaler/pause.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/spec.h"
#include "meshscaler/prom.h"
#include "meshscaler/server.h"
#include "meshscaler/workqueue.h"

#define MS__MAS_API_VERSION "autoscaling.meshscaler.io/v1alpha1"
#define MS__MAS_KIND "MeshAutoscaler"
#define MS__MAS_PLURAL "meshautoscalers"
#define MS__KEY_MAX 320 /* namespace (63) + "/" + name (253) */
#define MS__BATCH_MAX 64 /* keys one worker syncs with one Prometheus tick */

/* What the controller remembers about one MeshAutoscaler between syncs.
 * Keyed by "namespace/name", valid for one uid: a re-created object (new
 * uid) starts fresh, a deleted one is freed. Only the worker that holds the
 * key (the work queue guarantees one at a time) reads or writes an entry;
 * the table's lock guards only lookup, insertion and removal. */
typedef struct ms__object {
    char key[MS__KEY_MAX];
    char uid[64];
    bool memory_ready;        /* rebuilt from status, or started empty */
    ms_engine_memory_t memory;
    double last_now;          /* the engine's clock never goes back */
    double last_scale_time;   /* wall seconds; 0: never */
    char last_warning[64];    /* reason of the last Warning event, "" none */
    char target_kind[64];     /* for the per-object gauges' labels */
    bool reason_reported;     /* last_reason has a series in /metrics */
    ms_reason_t last_reason;
    long long series_generation; /* spec generation the per-metric series were made for */
    struct ms__object *next;
} ms__object_t;

typedef struct {
    pthread_mutex_t lock;
    ms__object_t *head;
    size_t count;
} ms__objects_t;

void ms__objects_init(ms__objects_t *t);
void ms__objects_cleanup(ms__objects_t *t);
/* The entry for key, made fresh when absent or when uid differs (re-created
 * object). Never NULL (allocation failure aborts). */
ms__object_t *ms__objects_get(ms__objects_t *t, const char *key, const char *uid);
/* Forget key (deleted object); true when there was an entry. */
bool ms__objects_remove(ms__objects_t *t, const char *key);
size_t ms__objects_count(ms__objects_t *t);

/* Metric family ids. */
typedef struct {
    int decisions;       /* counter {reason} */
    int scales;          /* counter {namespace, name, direction} */
    int desired;         /* gauge {namespace, name} */
    int current;         /* gauge {namespace, name} */
    int sync_seconds;    /* histogram: one object's sync */
    int sync_errors;     /* counter {reason} */
    int prom_queries;    /* counter: queries sent */
    int prom_failures;   /* counter: queries not OK */
    int prom_seconds;    /* histogram: one batched tick */
    int kube_requests;   /* counter {operation, code} */
    int kube_seconds;    /* histogram {operation} */
    int leader;          /* gauge */
    int queue_depth;     /* gauge */
    int queue_delayed;   /* gauge */
    int objects;         /* gauge */
    int client_requests; /* counter {verb}: every request of the client (informers, lease too) */
    int client_throttle; /* counter: seconds waited for the client-side rate limiter */
    /* Per object, removed with it (gone() in reconcile.c): */
    int metric_value;    /* gauge {namespace, name, metric}: effective value */
    int metric_target;   /* gauge {namespace, name, metric} */
    int metric_desired;  /* gauge {namespace, name, metric}: replicas it asks for */
    int ds_headroom;     /* gauge {namespace, name, downstream}: usage left below the cap */
    int ds_allowed;      /* gauge {namespace, name, downstream}: replicas it allows */
    int condition;       /* gauge {namespace, name, type, status}: 1 for the current status */
    int last_reason;     /* gauge {namespace, name, reason}: 1 for the last decision's */
} ms__families_t;

/* One worker thread and the API client only it uses. libcurl does not
 * support one shared connection cache used by concurrent threads
 * (CURL_LOCK_DATA_CONNECT), and http.h shares one per client, so every
 * thread that makes requests gets a client of its own. */
typedef struct {
    ms_controller_t *c;
    pthread_t thread;
    bool started;
    ms_kube_client_t *kube;
} ms__worker_t;

struct ms_controller {
    ms_controller_config_t cfg; /* strings point into owned copies below */
    char *s_kubeconfig, *s_context, *s_namespace, *s_lease_id, *s_lease_ns, *s_identity,
        *s_metrics, *s_health, *s_workload_label, *s_rate_window;

    ms_kube_config_t *kcfg;
    ms_kube_client_t *kube;        /* the MeshAutoscaler informer's */
    ms_kube_client_t *kube_hpa;    /* the HPA informer's */
    ms_kube_client_t *kube_lease;  /* the elector's */
    ms_kube_client_t *kube_events; /* the recorder's (it serialises its requests) */
    ms__worker_t *workers;         /* cfg.concurrent_syncs of them */
    ms_prom_client_t *prom;
    pthread_mutex_t prom_lock;     /* one Prometheus tick at a time (see ms__worker_t) */
    ms_workqueue_t *queue;
    ms_kube_informer_t *mas;
    ms_kube_informer_t *hpa; /* NULL in dry-run (conflicts do not stop a dry run) */
    ms_kube_recorder_t *recorder; /* NULL in dry-run */
    ms_kube_elector_t *elector;   /* NULL without --leader-elect */
    ms_metrics_t *metrics;
    ms__families_t fam;
    ms_kube_stats_t last_stats; /* what refresh_gauges() already counted */
    ms_server_t *server;
    ms__objects_t objects;

    atomic_bool stopping;
    atomic_bool ready;
    atomic_bool alive;
    atomic_bool cancel; /* ends the clients' waits at the very end */

    pthread_mutex_t out_lock; /* one dry-run line at a time */
    bool header_done;
};


/* ---- one object's sync (reconcile.c, report.c) ---- */

typedef enum {
    MS__SYNC_GONE = 0,   /* not in the cache: state freed */
    MS__SYNC_INVALID,    /* spec error: condition + event, no hot retry */
    MS__SYNC_NO_SCALE,   /* the target's scale could not be read */
    MS__SYNC_OBSERVE,    /* ready for the Prometheus tick */
    MS__SYNC_DECIDED     /* decided (and applied or not) */
} ms__sync_stage_t;

typedef struct {
    const char *key;
    ms_kube_client_t *kube; /* the worker's client */
    ms__sync_stage_t stage;
    double started;              /* monotonic */
    cJSON *obj;                  /* owned: a deep copy from the cache */
    const char *ns, *name, *uid; /* borrowed from obj */
    long long generation;
    ms__object_t *state;
    double period;               /* seconds until the next sync */

    ms_spec_t spec;
    char problem[MS_ERRBUF_SIZE]; /* spec, scale or conflict detail */
    ms_pause_t pause;
    ms_kube_ref_t ref;           /* target; strings borrowed from spec */
    ms_kube_scale_t scale;
    ms_kube_error_t kerr;        /* scale GET failure */
    bool transient;              /* the failure is worth a backoff retry */

    bool need_pods;
    bool pods_ok;
    int32_t ready_pods;
    char *pod_regex;             /* owned */
    ms_prom_object_obs_t *obs;   /* owned; NULL until observed */

    /* decision */
    double now;                  /* the engine's clock: wall seconds, never backwards */
    double wall;
    ms_decision_t d;
    int32_t desired;             /* after pausing */
    ms_pause_effect_t pause_effect;
    bool conflict;
    char conflict_with[192];
    bool may_write;              /* no dry-run, pause or conflict stops it */
    bool applied;                /* a scale update was written */
    bool write_failed;
    ms_kube_error_t write_err;
    char explanation[1024];
} ms__item_t;

/* Observe (time it, count it) one reconcile API call. */
void ms__kube_observe(ms_controller_t *c, const char *operation, double started, ms_err_t err);

/* Restore it->state's memory from the object's status the first time this
 * process syncs the object (report.c). */
void ms__memory_restore(ms_controller_t *c, ms__item_t *it);

/* Status, events, metrics and the dry-run line for one synced item. */
void ms__report(ms_controller_t *c, ms__item_t *it);

/* A Warning event once per distinct problem (repeats are not re-sent). */
void ms__warn_once(ms_controller_t *c, ms__item_t *it, const char *reason, const char *message);

/* Declare every family into c->metrics and c->fam (ctl_metrics.c). */
void ms__metrics_declare(ms_controller_t *c);
/* Remove every per-object series of ns/name (the object was deleted). */
void ms__metrics_forget_object(ms_controller_t *c, const char *ns, const char *name);
/* Leader, queue, cache gauges and the clients' request counters. */
void ms__metrics_refresh(ms_controller_t *c);

/* Whether this process may act now (no election, or the leader). */
bool ms__controller_may_act(ms_controller_t *c);

/* Sync keys[0..n) (each handed out by the queue to this worker): read the
 * cache, scale, one Prometheus tick for all of them, decide, apply, report,
 * and schedule each key's next sync. */
void ms__reconcile_batch(ms_controller_t *c, ms_kube_client_t *kube, char *const *keys, size_t n);

/* ---- pure helpers of reconcile.c (unit-tested) ---- */

/* Seconds from wall until the object's next sync: the next multiple of
 * period on the wall clock (so objects with one period fall due together
 * and share a Prometheus tick), pushed one period on when that is closer
 * than a fifth of a period. */
double ms__next_sync_delay(double period, double wall);

/* Whether a sync must list the target's pods: a query uses {{podRegex}}, or
 * a metric target counts ready replicas (Utilization, Value). */
bool ms__spec_needs_pods(const ms_spec_t *s);

/* Wall-clock seconds (unix) and monotonic seconds. */

#endif
