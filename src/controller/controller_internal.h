/*
 * controller_internal.h - what the controller's files share. Internal to
 * src/controller.
 *
 * The loop, in one paragraph (docs/ARCHITECTURE.md draws it). Informers keep
 * caches of MeshAutoscalers, HPAs, the built-in workload kinds and pods; their
 * handlers only mark objects due and keep two indexes (targets.c: pods per
 * namespace, autoscalers per target). One round thread (round.c) wakes when
 * objects fall due: it reads every due object from the caches, runs ONE
 * Prometheus tick for all of them, and hands each object's observation to the
 * workers through the work queue. A worker (reconcile.c) decides with the
 * engine, writes the scale only while the lease is valid, and reports
 * (report.c: status, events through the async queue of events.c, metrics).
 * Workers never touch Prometheus and never wait on each other.
 *
 * Time: the engine, every deadline and every schedule use the monotonic clock
 * (read once per round); wall time only dates what users see (status,
 * events) and converts status times back when memory is restored.
 */
#ifndef MESHSCALER_CONTROLLER_INTERNAL_H
#define MESHSCALER_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "meshscaler/compare.h"
#include "meshscaler/controller.h"
#include "meshscaler/engine.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"
#include "meshscaler/kube_events.h"
#include "meshscaler/labels.h"
#include "meshscaler/lease.h"
#include "meshscaler/metrics.h"
#include "meshscaler/pause.h"
#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/server.h"
#include "meshscaler/spec.h"
#include "meshscaler/strmap.h"
#include "meshscaler/workqueue.h"

#define MS__MAS_API_VERSION "autoscaling.meshscaler.io/v1alpha1"
#define MS__MAS_KIND "MeshAutoscaler"
#define MS__MAS_PLURAL "meshautoscalers"
#define MS__KEY_MAX 320 /* namespace (63) + "/" + name (253) */

/* ---- parsed specs (objects.c) ---- */

/* A MeshAutoscaler's spec parsed once per generation and shared, read-only,
 * by the round that observes with it and the worker that decides with it.
 * Reference-counted: whoever holds a pointer holds a reference. */
typedef struct {
    atomic_int refs;
    long long generation;
    bool ok; /* spec is valid; else problem says why */
    ms_spec_t spec;
    char problem[MS_ERRBUF_SIZE];
    bool needs_pods; /* ms__spec_needs_pods(&spec) */
    /* Owned; NULL when no metric has a saturation entry, else one per
     * metric: the longest window its two rates read (ms_prom_query_window),
     * MS__SATURATION_WINDOW_UNKNOWN when their text does not say. reconcile.c
     * holds the correction while a pod that turned Ready inside it serves. */
    double *saturation_window;
} ms__spec_ref_t;

/* The window assumed for saturation rates whose query names none (a
 * recording rule): the common rate(...[1m]). */
#define MS__SATURATION_WINDOW_UNKNOWN 60.0

/* How long a pod that turned Ready is left out of a per-pod metric that asks
 * for more replicas (reconcile.c, ms__leave_out_settling_pods;
 * docs/controller.md, step 6). A pod that just turned Ready takes a burst at
 * once: the lab read six such pods' sidecars (Ready 2-3 s) with four others
 * at 93% in flight, for a demand of 65%, and at the demand 7 s after (1 s
 * scrapes). A sample of that burst stays the reading until the next scrape
 * replaces it, so: one scrape interval as commonly set (15 s) plus about 5 s
 * of the burst. (The HPA's like rule for CPU: a sample whose window began
 * before the pod's Ready transition, in its first 5 minutes.) */
#define MS__READY_SETTLE_SECONDS 20.0

/* Parse spec_json (the object's .spec) into a new reference (count 1), and
 * check every user PromQL template against the --user-queries policy.
 * Never NULL (allocation failure aborts); an invalid spec or a refused query
 * gives ok=false with the reason. */
ms__spec_ref_t *ms__spec_ref_new(const cJSON *spec_json, long long generation,
                                 ms_user_queries_t policy);
ms__spec_ref_t *ms__spec_ref_retain(ms__spec_ref_t *r);
/* NULL does nothing. */
void ms__spec_ref_release(ms__spec_ref_t *r);

/* The object's sync period: its spec's syncPeriodSeconds, else the
 * controller's --sync-period (no spec yet, an invalid one, or none set). */
double ms__object_period(const ms__spec_ref_t *spec, double sync_period);
/* Whether a sync needs the target's pods: a query uses {{podRegex}}, a
 * metric target counts ready replicas (Utilization, Value), a metric is a
 * sidecar preset or has a saturation correction (pods that just turned
 * Ready), or a downstream entry reserves room for pods not running yet (step 7). */
bool ms__spec_needs_pods(const ms_spec_t *s);
/* Whether a query of the spec uses {{podRegex}}. When the round could not
 * count the pods it passes no regex, and the tick reports those queries
 * missing (prom_sources.h), never zero. */
bool ms__spec_uses_pod_regex(const ms_spec_t *s);

/* ---- rounds (made by round.c; referenced, released and read in objects.c) ---- */

typedef enum {
    MS__ENTRY_GONE = 0, /* deleted: the worker frees nothing, the round thread did */
    MS__ENTRY_INVALID,  /* spec error: condition + event, no hot retry */
    MS__ENTRY_NO_SCALE, /* the target's scale is unknown (missing, GET failed) */
    MS__ENTRY_OBSERVED  /* observed: ready to decide */
} ms__entry_stage_t;

/* What a round knows of one object's target: what a scale write needs. */
typedef struct {
    bool known;       /* the fields below are valid */
    bool cached;      /* from a workload informer (a built-in kind) */
    int32_t replicas; /* spec.replicas */
    int32_t status_replicas;
    char resource_version[64]; /* the write is conditional on it */
    char uid[64];
    bool pods_ok; /* pods were counted */
    int32_t ready_pods;
    int32_t running_pods;  /* in phase Running, not terminating (step 7's reservation) */
    double newest_ready;   /* wall seconds the last Ready pod turned Ready; 0: unknown */
    int32_t settling_pods; /* Ready pods inside MS__READY_SETTLE_SECONDS of turning Ready */
} ms__target_t;

/* One object of a round. The strings are owned by the entry; spec is a
 * reference. Its observation stays in the round's tick until the worker
 * reads it (ms__round_observation): a round of 10,000 objects holds their
 * answers once, not 10,000 copies of a full observation. */
typedef struct {
    char key[MS__KEY_MAX];
    char ns[64]; /* the namespace part of key */
    char uid[64];
    ms__entry_stage_t stage;
    ms__spec_ref_t *spec; /* NULL for GONE */
    ms__target_t target;
    char *pod_regex; /* owned; NULL when pods were not needed or not counted */
    char problem[MS_ERRBUF_SIZE];
    bool transient;   /* NO_SCALE: worth a retry before the next period */
    size_t obj_index; /* OBSERVED: its index in the round's objs */
} ms__round_entry_t;

/* Objects due together and what one Prometheus tick said of them. The
 * round thread makes it; each worker that syncs one of its entries holds a
 * reference until it is done. */
typedef struct {
    atomic_int refs;
    double now;      /* monotonic: the engine's clock for this round */
    double wall;     /* the wall clock at the same instant */
    double observed; /* monotonic: when Prometheus' answers were in */
    size_t n;
    ms__round_entry_t *entries;
    ms_prom_object_t *objs; /* owned array; its strings point into entries */
    size_t nobjs;
    ms_prom_tick_t *tick; /* owns what objects observed; NULL: no tick ran */
    bool tick_ok;         /* the tick ran (its queries may still have failed) */
    /* Owned; NULL when no entry shares a budget. Per entry, the next entry
     * of its budget group, circular (ms__budget_groups); itself when alone. */
    size_t *group_next;
} ms__round_t;

ms__round_t *ms__round_retain(ms__round_t *r);
void ms__round_release(ms__round_t *r);
/* What entry e (OBSERVED) of round r observed, into out; details borrowed
 * from the round. Any worker may call it while holding the round. */
void ms__round_observation(const ms__round_t *r, const ms__round_entry_t *e,
                           ms_prom_object_obs_t *out);

/* ---- per-object state (objects.c) ---- */

/* What the controller remembers about one MeshAutoscaler, keyed by
 * "namespace/name". Four owners, by field group:
 *   - the table's lock guards `due`, `pending*`, `busy`, `deleted`,
 *     `failures` and `scale_hint`: handlers, the round thread and workers
 *     meet there;
 *   - the MeshAutoscaler handler writes what the cache says of the object
 *     (identity, generation, resourceVersion, pausing, parsed spec) under the
 *     lock, so rounds and workers read it there without parsing the cached
 *     object each period;
 *   - the round thread alone reads and writes the planning cache;
 *   - the worker holding the key (the queue never gives one key to two)
 *     alone reads and writes the sync memory, which belongs to one uid (a
 *     re-created object starts fresh).
 * Only the round thread frees an object, and only when no worker holds it. */
typedef struct ms__object {
    char key[MS__KEY_MAX];

    /* guarded by the table's lock */
    double due;           /* monotonic time of the next sync; 0: now */
    double grid;          /* when its period's next round falls (round.c); a due
                             before it is an out-of-round sync; 0: none yet */
    bool deleted;         /* gone from the cache: free at the next round */
    bool busy;            /* a worker syncs it now */
    bool rejoin;          /* due 0 because its observation went stale (or its
                             sync was abandoned): the controller's own backlog,
                             not a change (round.c: when that runs a round) */
    ms__round_t *pending; /* a round entry waiting for a worker, or NULL */
    size_t pending_index;
    ms_kube_scale_t *scale_hint; /* owned; other kinds: the last /scale a worker read */
    unsigned failures;           /* consecutive transient failures (backoff) */

    /* the cache's object, kept by the handler (under the table's lock) */
    char cache_uid[64];
    long long generation;
    char rv[64]; /* its resourceVersion */
    ms_pause_t pause;
    char *pause_error;    /* owned; NULL: the pausing annotations read fine */
    ms__spec_ref_t *spec; /* for the current generation; NULL until seen */

    /* the round thread's planning cache (this group and the next are
     * cleared together, from selector_rv on, for a new incarnation: keep
     * them last) */
    char selector_rv[64]; /* workload resourceVersion the selector was compiled at */
    char *selector_text;  /* owned: other kinds' selector as /scale gave it */
    ms_label_selector_t *selector;
    unsigned long pods_generation; /* namespace pod generation the counts were made at */
    int32_t ready_pods;
    int32_t running_pods;
    double newest_ready;
    int32_t settling_pods;
    char *pod_regex; /* owned; NULL: not computed */

    /* the sync memory (the worker holding the key) */
    char uid[64];      /* the incarnation the memory belongs to */
    bool memory_ready; /* rebuilt from status, or started empty */
    ms_engine_memory_t memory;
    double last_scale_time; /* wall seconds; 0: never */
    char last_warning[64];  /* reason of the last Warning event, "" none */
    bool reason_reported;   /* last_reason has a series in /metrics */
    ms_reason_t last_reason;
    long long series_generation; /* spec generation the per-metric series were made for */
    unsigned char
        condition_reported[8]; /* per condition type: 1 + the status index with a series; 0: none */
    /* What the last full report covered: a sync whose decision has the same
     * fingerprint on an object still at that resourceVersion has nothing new
     * to write or show (most syncs at rest), so it builds no status. */
    uint64_t reported_fingerprint;
    char reported_rv[64];

    /* set by the status writer when a patch it held was not written (not
     * the leader, the API server failed it, the queue was full): the next
     * sync reports in full, whatever the fingerprint says */
    atomic_bool report_again;

    /* shadow mode beside an HPA on the same target (the worker holding the
     * key): the comparison, for the HPA named in hpa_compared */
    char hpa_compared[MS__KEY_MAX]; /* "" none */
    ms_compare_t hpa_compare;
    double hpa_since; /* wall time of the first sample */
} ms__object_t;

/* ---- shared budgets (budgets.c) ---- */

/* Which MeshAutoscalers name which budget in their downstream entries
 * (across namespaces): kept by the MeshAutoscaler handler, read by the
 * round thread, both under the objects table's lock. */
typedef struct {
    ms_strmap_t by_budget; /* budget name -> its members' keys */
    ms_strmap_t by_key;    /* key -> the budgets it names, its sync period */
} ms__budgets_t;

void ms__budgets_init(ms__budgets_t *b);
void ms__budgets_cleanup(ms__budgets_t *b);
/* Called for each budget an object stopped naming; last: it had no other
 * member, so the budget itself is gone. */
typedef void (*ms__budget_gone_fn)(void *ctx, const char *key, const char *budget, bool last);
/* key now names the budgets of spec (NULL: none; it was deleted or its spec
 * is invalid), at spec's sync period; gone (may be NULL) hears of each
 * budget it left. */
void ms__budgets_set(ms__budgets_t *b, const char *key, const ms_spec_t *spec,
                     ms__budget_gone_fn gone, void *ctx);
/* fn(ctx, peer) for every other member of each budget key names (a peer
 * sharing two budgets comes twice); returns the number of calls. */
size_t ms__budgets_each_peer(const ms__budgets_t *b, const char *key,
                             void (*fn)(void *ctx, const char *peer), void *ctx);
/* The shortest sync period among key (own: its period) and the members of
 * its budgets, a member without one counting def (the controller's). */
double ms__budgets_period(const ms__budgets_t *b, const char *key, double own, double def);
/* Whether a downstream entry of spec (NULL: none) names a budget. */
bool ms__spec_names_budget(const ms_spec_t *spec);
/* Whether key names budget (as the registry last heard). */
bool ms__budgets_is_member(const ms__budgets_t *b, const char *key, const char *budget);
/* Whether any object names a budget. */
bool ms__budgets_any(const ms__budgets_t *b);
/* Whether an object decided `desired` from `current` takes a share of its
 * budgets' room in its round (docs/controller.md, "Shared budgets"): not
 * with its own spec.dryRun, a conflicting autoscaler, or a pausing that
 * changes or stops its write. Pure. */
bool ms__budget_takes_share(bool spec_dry_run, bool conflict, const ms_pause_t *pause,
                            int32_t current, int32_t desired);
/* A round's budget groups: entries whose specs name a common budget, and
 * transitively, decide together. next[i] is the next entry of i's group in
 * ascending index, the last pointing back to the first; i itself when it
 * is alone (or specs[i] is NULL). Pure. */
void ms__budget_groups(const ms_spec_t *const *specs, size_t n, size_t *next);

typedef struct {
    pthread_mutex_t lock;
    ms_strmap_t map;       /* key -> ms__object_t* */
    ms__budgets_t budgets; /* guarded by lock too */
} ms__objects_t;

void ms__objects_init(ms__objects_t *t);
/* Frees every object (nothing may run). */
void ms__objects_cleanup(ms__objects_t *t);
/* Under t->lock: the object with key, or NULL. */
ms__object_t *ms__objects_get_locked(ms__objects_t *t, const char *key);
/* The MeshAutoscaler handler: what the cache now holds of obj (added or
 * updated; its key is `key`), under t->lock; creates the object (due now)
 * when new. The spec is parsed again only when the generation or the uid
 * moved, outside the lock. */
void ms__objects_note(ms__objects_t *t, const char *key, const cJSON *obj,
                      ms_user_queries_t policy);
/* Under t->lock, the round thread: when the cache holds a new incarnation
 * (another uid) and no worker holds the object, forget the old one's
 * memory and planning cache. */
void ms__objects_settle_locked(ms__object_t *o);
/* The status writer: the object's last status patch was not written. */
void ms__objects_report_again(ms__objects_t *t, const char *key);
/* Under t->lock: remove and free (the round thread, when no worker holds it). */
void ms__objects_free_locked(ms__objects_t *t, ms__object_t *o);

/* ---- indexes kept by the informer handlers (targets.c) ---- */

/* Pods per namespace: name, labels, readiness and phase Running, with a generation per
 * namespace that moves whenever one of its pods does, so a round recounts
 * an object's pods only when something changed. */
typedef struct ms__pod_index ms__pod_index_t;
ms__pod_index_t *ms__pod_index_new(void);
void ms__pod_index_free(ms__pod_index_t *x);
/* The pod informer's handler and transform (ctx: the index). */
void ms__pod_index_notify(void *ctx, ms_kube_change_t change, const cJSON *obj, const cJSON *old);
void ms__pod_transform(void *ctx, cJSON *pod);
/* The namespace's generation (0 when it has no pod yet). */
unsigned long ms__pod_index_generation(ms__pod_index_t *x, const char *ns);
typedef struct {
    int32_t ready;       /* Ready pods */
    int32_t running;     /* pods in phase Running and not terminating */
    int32_t settling;    /* pods that turned Ready for the first time inside the settling span */
    double newest_ready; /* wall seconds the last of them turned Ready; 0: unknown */
} ms__pod_count_t;
/* Count the Ready and the Running pods of ns the selector picks, the Ready ones whose
 * Ready condition turned True after settle_from and before settle_to (wall seconds) for
 * the first time the index saw (a pod with no time, or Ready again, is settled), and
 * their names as a {{podRegex}} value (sorted;
 * *regex NULL when want_regex is false). */
void ms__pod_index_count(ms__pod_index_t *x, const char *ns, const ms_label_selector_t *sel,
                         bool want_regex, double settle_from, double settle_to,
                         ms__pod_count_t *out, char **regex);

/* Autoscalers per target workload (namespace, API group, kind, name): the
 * HPAs and live MeshAutoscalers that name it, for O(1) conflict lookups. */
typedef struct ms__target_index ms__target_index_t;
ms__target_index_t *ms__target_index_new(void);
void ms__target_index_free(ms__target_index_t *x);
/* Record or forget an autoscaler (an HPA when is_hpa) from its object. */
void ms__target_index_update(ms__target_index_t *x, const cJSON *obj, bool is_hpa, bool deleted);
/* Another autoscaler than self_key that scales the same target: true, and
 * who[whocap] names it ("HorizontalPodAutoscaler shop/api"). */
bool ms__target_index_conflict(ms__target_index_t *x, const char *self_key, const char *ns,
                               const char *api_version, const char *kind, const char *name,
                               char *who, size_t whocap);
/* The first HPA that scales the target: true, its key in key[cap], its
 * status.desiredReplicas in *desired (-1: it has none yet) and, when metrics
 * is not NULL, a copy of its status.currentMetrics (the caller's; NULL when
 * it has none). */
bool ms__target_index_hpa(ms__target_index_t *x, const char *ns, const char *api_version,
                          const char *kind, const char *name, char *key, size_t cap,
                          int32_t *desired, cJSON **metrics);
/* Call fn for every MeshAutoscaler that names the same target as obj (an HPA
 * or MeshAutoscaler object), e.g. to resync them when an HPA comes or goes. */
void ms__target_index_each_mas(ms__target_index_t *x, const cJSON *obj,
                               void (*fn)(void *ctx, const char *key), void *ctx);

/* ---- events, sent off the sync path (events.c) ---- */

typedef struct ms__event_queue ms__event_queue_t;
/* Send one Event that stands for `count` (1: itself; more: folded into it,
 * message the latest). The controller's records it (ms_kube_record, or
 * ms_kube_record_combined past 1). */
typedef ms_err_t (*ms__event_send_fn)(void *ctx, const ms_kube_object_ref_t *ref, const char *type,
                                      const char *reason, const char *message, int count,
                                      double wall, ms_kube_error_t *kerr);
/* A bounded queue (capacity object/type/reason keys waiting; a newer Event
 * of a waiting key folds into it) and its sending thread. may_send(ctx) is
 * asked right before each Event is sent (the lease). NULL send: no thread,
 * everything is ignored (dry-run). */
ms__event_queue_t *ms__event_queue_new(ms__event_send_fn send, void *send_ctx, size_t capacity,
                                       bool (*may_send)(void *ctx), void *ctx);
/* Stop the thread after sending what is queued, for at most `drain` seconds. */
void ms__event_queue_free(ms__event_queue_t *q, double drain);
/* Stop taking Events after `deadline` (monotonic) and wait until what waits
 * is sent or the deadline passed; true when nothing is left in flight or
 * queued. An Event in flight that waits for a token has no deadline of its
 * own: false says to cancel the client's requests before the free. NULL: true. */
bool ms__event_queue_drain(ms__event_queue_t *q, double deadline);
void ms__event_queue_push(ms__event_queue_t *q, const ms_kube_object_ref_t *ref, const char *type,
                          const char *reason, const char *message, double wall);
/* Per reason, the Events dropped and the Events folded into a waiting one
 * since the last call, to fn (may be NULL); and, when `period` seconds
 * passed since the last such line (monotonic now), one log line with the
 * drops since. */
void ms__event_queue_take_counts(ms__event_queue_t *q, double now, double period,
                                 void (*fn)(void *ctx, const char *reason, unsigned long dropped,
                                            unsigned long combined),
                                 void *ctx);
/* Events dropped because the queue was full, the lease was not valid or the
 * API server refused them; Events sent. Totals. */
unsigned long ms__event_queue_dropped(ms__event_queue_t *q);
unsigned long ms__event_queue_sent(ms__event_queue_t *q);

/* ---- the latest value per key, in arrival order (latest.c) ---- */

/* What waits to be written, one value per key (an object's "ns/name"): a key
 * queued again keeps its turn and takes the newer value. The values belong
 * to the queue's user; not locked (its user's lock guards it). */
typedef struct {
    ms_strmap_t values; /* key -> value */
    char **order;       /* owned keys in arrival order (a ring of cap) */
    size_t cap, head, len;
} ms__latest_t;

typedef enum {
    MS__LATEST_ADDED = 0, /* queued at the back */
    MS__LATEST_REPLACED,  /* the key waited: *replaced is its older value, out of the queue */
    MS__LATEST_FULL       /* cap keys wait: nothing taken */
} ms__latest_put_t;

/* An empty queue of at most `capacity` keys (0: 1024). */
void ms__latest_init(ms__latest_t *q, size_t capacity);
ms__latest_put_t ms__latest_put(ms__latest_t *q, const char *key, void *val, void **replaced);
/* The value of the key that waited longest, out of the queue; NULL when empty. */
void *ms__latest_pop(ms__latest_t *q);
/* Empty it, each value to free_val (may be NULL), and free what it holds. */
void ms__latest_cleanup(ms__latest_t *q, void (*free_val)(void *val));

/* ---- a pool of writer threads over a latest-per-key queue (writer_pool.c) ---- */

/* What a pool's values are: the scale writer's and the status writer's. */
typedef struct {
    /* Write val (taken). Runs on a pool thread, with the client's deadline
     * capped at the drain deadline once the pool is stopping. */
    void (*write)(void *ctx, void *val);
    /* A value a newer one of its key replaced while it waited (taken). */
    void (*replaced)(void *ctx, void *val);
    /* A value still waiting when the pool is freed, never written (taken). */
    void (*unwritten)(void *ctx, void *val);
    /* Optional: true while other work goes first; the pool's writers then
     * wait before each write, up to 2 s, looking again every 20 ms. */
    bool (*yield)(void *ctx);
    bool background;             /* its requests wait behind others' for tokens */
    bool refuse_without_threads; /* a pool of 0 threads takes nothing */
} ms__writer_pool_ops_t;

typedef struct ms__writer_pool ms__writer_pool_t;

/* `threads` writers (0: nobody writes, what is queued waits for the free;
 * tests) of a queue of at most `capacity` keys. ops is copied. */
ms__writer_pool_t *ms__writer_pool_new(const ms__writer_pool_ops_t *ops, void *ctx, int threads,
                                       size_t capacity);
/* Queue val under key (taken on true): a value of the same key that still
 * waits is replaced (ops->replaced) and its turn kept. False, nothing taken,
 * when the queue is full or the pool stopping. */
bool ms__writer_pool_push(ms__writer_pool_t *p, const char *key, void *val);
/* Stop taking values and write what is queued until `deadline` (monotonic;
 * the first deadline set, here or by the free, holds). True when all was
 * written by then. */
bool ms__writer_pool_drain(ms__writer_pool_t *p, double deadline);
/* Stop (writing for at most `drain` seconds more unless a drain began),
 * join the writers and hand what still waits to ops->unwritten; the pool
 * stays valid for ms__writer_pool_pending (0 from now on). Once; NULL does
 * nothing. */
void ms__writer_pool_stop(ms__writer_pool_t *p, double drain);
/* Stop as above if not stopped yet, then free. NULL does nothing. */
void ms__writer_pool_free(ms__writer_pool_t *p, double drain);
/* Values queued, and with_writing: those being written too. */
size_t ms__writer_pool_pending(ms__writer_pool_t *p, bool with_writing);

/* ---- status patches, written off the sync path (status_writer.c) ---- */

typedef struct ms__status_writer ms__status_writer_t;
typedef struct ms__scale_writer ms__scale_writer_t; /* scale_writer.c, below */
/* `threads` writers of a queue of at most `capacity` objects, one pending
 * patch each (a newer one replaces it). */
ms__status_writer_t *ms__status_writer_new(ms_controller_t *c, int threads, size_t capacity);
/* Stop after writing what is queued, for at most `drain` seconds. NULL does nothing. */
void ms__status_writer_free(ms__status_writer_t *w, double drain);
/* As ms__event_queue_drain, for the status patches. NULL: true. */
bool ms__status_writer_drain(ms__status_writer_t *w, double deadline);
/* Queue the merge patch `status` (the value of {"status": ...}; taken and
 * freed: the queue keeps its text) of ns/name. False when it was dropped
 * (queue full, stopping, out of memory). */
bool ms__status_writer_push(ms__status_writer_t *w, const char *ns, const char *name,
                            cJSON *status);
size_t ms__status_writer_pending(ms__status_writer_t *w);

/* ---- metrics ---- */

typedef struct {
    int decisions;          /* counter {reason} */
    int scales;             /* counter {namespace, name, direction} */
    int desired;            /* gauge {namespace, name} */
    int current;            /* gauge {namespace, name} */
    int sync_seconds;       /* histogram: one object's sync */
    int sync_errors;        /* counter {reason} */
    int prom_queries;       /* counter: queries sent */
    int prom_failures;      /* counter: queries not OK */
    int prom_seconds;       /* histogram: one round's Prometheus tick */
    int ns_seconds;         /* gauge {namespace}: user queries' time, last round's top namespaces */
    int ns_bytes;           /* gauge {namespace}: their answers' bytes */
    int ns_over_share;      /* gauge {namespace}: their values read OVER_SHARE */
    int round_objects;      /* gauge: objects in the last round */
    int round_seconds;      /* histogram: a round's planning and observing (its tick included) */
    int sync_lateness;      /* histogram: how long after its due time an object's round began */
    int kube_requests;      /* counter {operation, code} */
    int kube_seconds;       /* histogram {operation} */
    int leader;             /* gauge */
    int queue_depth;        /* gauge */
    int queue_delayed;      /* gauge */
    int objects;            /* gauge */
    int status_queued;      /* gauge: status patches waiting for a writer */
    int breaker_open;       /* gauge: the Prometheus circuit breaker is open */
    int prom_skipped;       /* counter: queries not sent while it was open */
    int client_requests;    /* counter {verb}: every request of the client (informers, lease too) */
    int client_throttle;    /* counter: seconds waited for the client-side rate limiter */
    int writes_dropped;     /* counter {kind}: writes not made because the lease was not valid */
    int stale_observations; /* counter: syncs observed again, their round's answers too old */
    int events_dropped;  /* counter {reason}: events a full queue, the lease or the API dropped */
    int events_combined; /* counter {reason}: events folded into a waiting one of the same object */
    /* Per object, removed with it: */
    int metric_value;   /* gauge {namespace, name, metric}: effective value */
    int metric_target;  /* gauge {namespace, name, metric} */
    int metric_desired; /* gauge {namespace, name, metric}: replicas it asks for */
    int ds_headroom;    /* gauge {namespace, name, downstream}: usage left below the cap */
    int ds_allowed;     /* gauge {namespace, name, downstream}: replicas it allows */
    int condition;      /* gauge {namespace, name, type, status}: 1 for the current status */
    int last_reason;    /* gauge {namespace, name, reason}: 1 for the last decision's */
    int hpa_desired;    /* gauge {namespace, name}: the HPA beside a dry-run object */
    int hpa_difference; /* gauge {namespace, name}: meshscaler's desired minus the HPA's */
    /* §2b's shared budgets, removed when the budget or its member goes: */
    int budget_room;    /* gauge {budget}: the room the last round split */
    int budget_granted; /* gauge {namespace, name, budget}: replicas granted to the object */
} ms__families_t;

/* ---- the controller ---- */

/* One worker thread. Workers share the controller's one API client, as the
 * informers, the status writers and the event queue do: a client is safe
 * across threads, each request on a connection of its own (http.h), so one
 * client and one token bucket serve them all. */
typedef struct {
    ms_controller_t *c;
    pthread_t thread;
    bool started;
} ms__worker_t;

/* The controller is assembled from one part per tier it serves, each filled
 * by the lifecycle (controller.c) and read by the tiers below it. */

/* The clients (controller.c builds them; http.h says why one API client
 * serves every thread). */
typedef struct {
    char user_agent[400];
    ms_kube_config_t *kcfg;
    ms_kube_client_t *kube;       /* every request but the lease's: informers, workers, status
                                     writers, events; its bucket is --kube-api-qps/-burst */
    ms_kube_client_t *kube_lease; /* the elector's: bounded, no retries, its own bucket (lease.h) */
    ms_prom_client_t *prom;       /* the round thread's only */
    ms_kube_recorder_t *recorder; /* NULL in dry-run */
    /* NULL without --leader-elect, and until the caches synced (set by the
     * main loop while other threads read it: atomic; leader.c asks it). */
    ms_kube_elector_t *_Atomic elector;
} ms__clients_t;

/* The informers' caches and the indexes their handlers keep (targets.c). */
typedef struct {
    ms_kube_informer_t *mas;
    ms_kube_informer_t *hpa;          /* NULL in dry-run (conflicts do not stop a dry run) */
    ms_kube_informer_t *workloads[3]; /* apps/v1 deployments, statefulsets, replicasets */
    ms_kube_informer_t *pods;
    ms__pod_index_t *pod_index;
    ms__target_index_t *target_index;
} ms__informers_t;

/* Where work waits for a thread: keys for the workers, decided scale
 * writes, status patches, Events. */
typedef struct {
    ms_workqueue_t *work;
    ms__worker_t *workers;              /* cfg.concurrent_syncs of them */
    ms__scale_writer_t *scale_writer;   /* NULL in dry-run */
    ms__status_writer_t *status_writer; /* NULL in dry-run */
    ms__event_queue_t *events;
} ms__queues_t;

/* /metrics: the registry and its families (ctl_metrics.c), what the gauges
 * already counted (ctl_gauges.c), and the server that serves them. */
typedef struct {
    ms_metrics_t *registry;
    ms__families_t fam;
    ms_kube_stats_t last_stats; /* what ms__metrics_refresh() already counted */
    unsigned long long last_prom_skipped;
    ms_server_t *server;                 /* /metrics, /healthz, /readyz */
    struct ms__metrics_authorizer *auth; /* --metrics-secure; NULL when off */
} ms__ctl_metrics_t;

/* The round thread (round.c) and what wakes it. */
typedef struct {
    pthread_t thread;
    bool started;
    pthread_mutex_t lock; /* with cond: wakes the round thread */
    pthread_cond_t cond;
    bool kicked; /* objects became due now */
    bool was_leader;
} ms__round_thread_t;

struct ms_controller {
    ms_controller_config_t cfg; /* strings point into owned copies below */
    char *s_kubeconfig, *s_context, *s_namespace, *s_lease_id, *s_lease_ns, *s_identity, *s_metrics,
        *s_health, *s_workload_label, *s_rate_window;

    ms__clients_t clients;
    ms__informers_t informers;
    ms__objects_t objects; /* the per-object state (objects.c) */
    ms__queues_t queues;
    ms__ctl_metrics_t metrics;
    ms__round_thread_t round;

    /* liveness (/healthz) */
    atomic_uint_fast64_t progress;  /* monotonic ms of the last finished round or sync */
    atomic_uint_fast64_t due_since; /* monotonic ms since keys have been waiting; 0: none */

    atomic_bool stopping;
    atomic_bool ready;
    atomic_bool alive;
    atomic_bool cancel;      /* ends the API client's waits and requests at shutdown */
    atomic_bool prom_cancel; /* ends a round's Prometheus queries at shutdown */

    pthread_mutex_t out_lock; /* one dry-run line at a time */
    bool header_done;
};

/* ---- the lease (leader.c) ---- */

/* Whether this process may act now (no election, or the leader). */
bool ms__controller_may_act(ms_controller_t *c);
/* Whether a write may go out now: no election, or a lease held and valid
 * (on the monotonic clock) for the write's time. Counts a dropped write by
 * kind ("scale", "status", "event") when not. */
bool ms__may_write(ms_controller_t *c, const char *kind);

/* ---- one object's sync (reconcile.c, report.c) ---- */

typedef struct {
    const char *key;
    ms__round_entry_t *entry; /* borrowed from the round */
    const ms__round_t *round;
    double started;              /* monotonic */
    cJSON *obj;                  /* owned: a deep copy from the cache, made only when the
                                    sync needs the previous status (report.c) */
    const char *ns, *name, *uid; /* point into the buffers below */
    char ns_buf[64], name_buf[256], uid_buf[64];
    char rv[64]; /* the object's resourceVersion the sync saw */
    long long generation;
    ms__object_t *state;
    ms__entry_stage_t stage;

    const ms_spec_t *spec;        /* borrowed from entry->spec */
    char problem[MS_ERRBUF_SIZE]; /* spec, scale or conflict detail */
    ms_pause_t pause;
    ms_kube_ref_t ref; /* target; strings borrowed from spec */
    ms_kube_scale_t scale;
    bool transient; /* the failure is worth a retry before the next period */

    ms_prom_object_obs_t obs; /* OBSERVED: what the round observed */
    bool has_obs;

    /* decision */
    double now;  /* the engine's clock: the round's monotonic time */
    double wall; /* the round's wall time (status, events) */
    ms_decision_t d;
    int32_t desired; /* after pausing */
    ms_pause_effect_t pause_effect;
    bool conflict;
    char conflict_with[192];
    bool beside_hpa;           /* dry-run, and an HPA scales the same target */
    char hpa_key[MS__KEY_MAX]; /* its namespace/name */
    int32_t hpa_desired;       /* its status.desiredReplicas; -1: none yet */
    cJSON *hpa_metrics;        /* owned copy of its status.currentMetrics, or NULL */
    bool may_write;            /* no dry-run, pause or conflict stops it */
    ms_engine_memory_t before; /* the memory before this decision: restored when it is
                                  not written (no lease, someone else scaled) */
    int32_t change;            /* the replicas a written scale changed (the scale event) */
    bool decided;              /* the engine was asked (decide_first) */
    bool stale;                /* the round's observation was too old: observed again */
    bool wants_write;          /* the decision asks for a scale write */
    bool engine_refused;       /* the engine refused the observation: nothing to record */
    bool applied;              /* a scale update was written */
    bool write_failed;
    bool write_dropped; /* the lease was not valid: nothing written, retried soon */
    ms_kube_error_t write_err;
    char explanation[1024];
    char missing[MS_ERRBUF_SIZE]; /* why the first missing metric is missing, for status */
    char saturation_held[256];    /* why a saturation correction waits, for status; "": none */
    char pods_settling[256];      /* which per-pod metrics left settling pods out; "": none */
} ms__item_t;

/* Restore it->state's memory from the object's status the first time this
 * process syncs the object (report.c). */
void ms__memory_restore(ms_controller_t *c, ms__item_t *it);

/* Status, events, metrics and the dry-run line for one synced item. */
void ms__report(ms_controller_t *c, ms__item_t *it);

/* A Warning event once per distinct problem (repeats are not re-sent). */
void ms__warn_once(ms_controller_t *c, ms__item_t *it, const char *reason, const char *message);

/* Declare every family into c->metrics (ctl_metrics.c). */
void ms__metrics_declare(ms_controller_t *c);
/* A decided item's shared budgets: each one's room and the item's grant. */
void ms__metrics_budgets(ms_controller_t *c, const ms__item_t *it);
/* ns/name no longer names budget: its grant's series goes; last: the
 * budget had no other member, so its room's series goes too. */
void ms__metrics_budget_forget(ms_controller_t *c, const char *ns, const char *name,
                               const char *budget, bool last);
/* Remove every per-object series of ns/name (the object was deleted). */
void ms__metrics_forget_object(ms_controller_t *c, const char *ns, const char *name);
/* The per-namespace costs of a round's tick: its MS__COST_NAMESPACES
 * costliest namespaces replace the last round's series. */
#define MS__COST_NAMESPACES 10
void ms__metrics_round_costs(ms_controller_t *c, const ms_prom_tick_t *tick);
/* Leader, queue, cache gauges and the clients' request counters (ctl_gauges.c). */
void ms__metrics_refresh(ms_controller_t *c);
/* Observe (time it, count it) one API call of a sync or the status writer:
 * operation ("get_scale", "update_scale", "patch_status"), started on the
 * monotonic clock, and its result. */
void ms__kube_observe(ms_controller_t *c, const char *operation, double started, ms_err_t err);

/* The round thread (round.c). */
void *ms__round_main(void *arg);
/* Mark an object due now and wake the round thread. */
void ms__kick(ms_controller_t *c, const char *key);

/* Sync the key the queue handed this worker (reconcile.c). A sync that
 * decided a scale write hands itself to the scale writer and returns; the
 * object stays busy until the writer finished it. */
void ms__sync_key(ms_controller_t *c, const char *key);
/* The rest of a sync handed to the scale writer (reconcile.c, on a writer
 * thread): the write (its conflicts decided again as on a worker), the scale
 * event only when written, the report; then the object is free again and
 * the item (heap, from ms__sync_key) freed. */
void ms__sync_write(ms_controller_t *c, ms__item_t *it);
/* A handed-over sync whose write is not made (shutdown): the decision is
 * forgotten, nothing reported, the object due again; the item freed. */
void ms__sync_abandon(ms_controller_t *c, ms__item_t *it);
/* Free a handed-over item (its round reference, copies) and nothing else:
 * a newer sync of the object replaced it. */
void ms__sync_free(ms__item_t *it);

/* ---- scale writes, off the workers (scale_writer.c) ---- */

/* A worker that decided a scale change hands its sync here and takes the
 * next key: a few threads write the queued scales, several requests in
 * flight, in the foreground of the client's token bucket (before status and
 * Events), one pending write per object.
 *
 * What the writer does with a sync handed to it is the loop's (reconcile.c:
 * ms__sync_write, ms__sync_abandon, ms__sync_free, given by controller.c),
 * so the writer, a tier below the loop, never calls up into it. */
typedef struct {
    void (*write)(ms_controller_t *c, ms__item_t *it);   /* the write and the rest of the sync */
    void (*abandon)(ms_controller_t *c, ms__item_t *it); /* never written (shutdown) */
    void (*free)(ms__item_t *it);                        /* a newer sync replaced it */
} ms__scale_writer_ops_t;
/* `threads` writers of a queue of at most `capacity` objects (0 threads:
 * nobody writes, what is queued waits for the free; tests). ops is copied. */
ms__scale_writer_t *ms__scale_writer_new(ms_controller_t *c, const ms__scale_writer_ops_t *ops,
                                         int threads, size_t capacity);
/* Stop taking syncs; write what is queued until `deadline` (monotonic).
 * True when every write was done by then; false when some still wait for
 * their answer or a token: cancel the client's requests, then free. NULL: true. */
bool ms__scale_writer_drain(ms__scale_writer_t *w, double deadline);
/* Join the writers (a write in flight ends first: drained or cancelled) and
 * abandon what still waits (ops->abandon); ms__scale_writer_pending
 * stays callable (0). NULL does nothing. */
void ms__scale_writer_stop(ms__scale_writer_t *w);
/* Stop as above if not stopped yet, then free. NULL does nothing. */
void ms__scale_writer_free(ms__scale_writer_t *w);
/* Queue the sync it (taken on true). A sync of the same object that still
 * waits is replaced: only the latest decision is written, the older one
 * abandoned. False (nothing taken: the worker writes it itself) when the
 * queue is full or stopping. */
bool ms__scale_writer_push(ms__scale_writer_t *w, ms__item_t *it);
/* Syncs waiting for a writer and being written; 0 for NULL. */
size_t ms__scale_writer_pending(ms__scale_writer_t *w);

/* ---- pure helpers (unit-tested) ---- */

/* Seconds from now until the object's next sync: the next multiple of
 * period on the monotonic clock (so objects with one period fall due
 * together and share a round), pushed one period on when that is closer
 * than a fifth of a period. */
double ms__next_sync_delay(double period, double now);

/* Whether an object due at `due` (monotonic; 0: now) is due at its grid
 * time `grid` (when its period's next round falls; 0: none yet), and
 * whether that round is now: no round began since its grid time (one that
 * did and skipped it, a worker holding it then, has gone). Otherwise it is
 * early: a kick, a stale observation, a retry, a missed round (round.c). */
bool ms__due_at_grid(double due, double grid);
bool ms__grid_round_is_now(double due, double grid, double last_round);
/* The objects due now, as the round thread counts them (round.c). */
typedef struct {
    size_t n;             /* due now */
    size_t on_grid;       /* of the n, those whose round of the grid is now */
    size_t rejoining;     /* of the n, observed again after a stale observation */
    double catchup_after; /* monotonic: when a catch-up round may run for a
                             change (a kick, a retry): an interval after the
                             last catch-up round */
    double rejoin_after;  /* ...for stale observations alone: an interval
                             after the last catch-up or round of every object */
} ms__due_count_t;

/* Whether the due objects run a round now (all_due: a new leader's round of
 * every object); a round of early objects only is a catch-up round. */
bool ms__round_runs(const ms__due_count_t *d, bool all_due, double now);

/* Under the table's lock: when the next round of key's grid falls after
 * `now` (its period's, or the shortest of its budgets' members). */
double ms__next_grid_locked(ms_controller_t *c, const char *key, const ms__spec_ref_t *spec,
                            double now);

/* Whether an update of a MeshAutoscaler (obj, its predecessor old) leaves
 * what a sync reads as it was: the same generation (spec) and annotations
 * (pausing), none on both sides counting as the same. Such an update, the
 * controller's own status write mostly, makes nothing due (the grid brings
 * the next sync). False when either is NULL. */
bool ms__update_syncs_nothing(const cJSON *obj, const cJSON *old);

/* Whether /healthz passes; the rule is told with its constants (LIVENESS_*)
 * in controller.c. Monotonic seconds: due_since, since when keys have been
 * due (0: none); progress, the last finished round or sync; now. */
bool ms__liveness_ok(double due_since, double progress, double now, double sync_period);

/* Settling pods leave the span as time passes, not only when a pod changes:
 * true while the last count found some (they may have settled since) or the
 * newest Ready pod turned Ready after settle_from (it may still be settling),
 * so the round counts the pods again though none changed. */
bool ms__pods_settling_may_change(int32_t settling, double newest_ready, double settle_from);
/* Present each per-pod metric of obs (a known pod count; Utilization or AverageValue)
 * as an observation that leaves out the `settling` pods that just turned Ready, as far
 * as its count must hold them: those beyond the other `running` pods (reconcile.c says
 * why). Writes the metrics it changed, how many it left out and the reason into why
 * (cap bytes; "" when none). Call after ms__decision_ready, which counts them. */
void ms__leave_out_settling_pods(const ms_spec_t *spec, int32_t settling, int32_t running,
                                 ms_observation_t *obs, char *why, size_t cap);
/* The readyReplicas a decision passes the engine (docs/decision-rules.md,
 * inputs): the Ready pods when they were counted and some are Ready, else
 * current. When every metric is SidecarConcurrency, the pods its series
 * cover if more: as HPA's readyPodCount for a Pods metric counts every
 * running pod with a sample, not only Ready ones. A pod still starting has
 * its proxy up and reports 0 in flight (no Service routes to it yet); its
 * zero is in the average, so the average times the Ready count alone asks
 * too little exactly while a scale-up's pods start. Sidecar CPU and user
 * queries keep the Ready count: a starting pod's CPU is start-up work,
 * which HPA keeps out too. */
int32_t ms__decision_ready(const ms_spec_t *spec, const ms_pods_t *metric_pods, bool pods_ok,
                           int32_t ready_pods, int32_t current);

/* Whether an apps/v1 kind is cached by a workload informer: its index in
 * c->informers.workloads, or -1. */
int ms__workload_kind(const char *api_version, const char *kind);

#endif
