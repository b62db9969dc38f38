/*
 * ctl_metrics.c - the controller's /metrics families. The per-sync series
 * (decisions, replicas, latencies) are updated by reconcile.c and report.c
 * as they happen, API calls through ms__kube_observe(); the gauges and
 * client counters the main loop refreshes once a second are ctl_gauges.c's
 * (which reads the writers and queues: those write here, so it is apart).
 */
#include <stddef.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"

/* ---- the families ---- */

static const char *const by_reason[] = {"reason"};
static const char *const by_object[] = {"namespace", "name"};
static const char *const by_scale[] = {"namespace", "name", "direction"};
static const char *const by_op[] = {"operation"};
static const char *const by_op_code[] = {"operation", "code"};
static const char *const by_namespace[] = {"namespace"};
static const char *const by_kind[] = {"kind"};
static const char *const by_verb[] = {"verb"};
static const char *const by_metric[] = {"namespace", "name", "metric"};
static const char *const by_downstream[] = {"namespace", "name", "downstream"};
static const char *const by_condition[] = {"namespace", "name", "type", "status"};
static const char *const by_object_reason[] = {"namespace", "name", "reason"};
static const double sync_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double lateness_buckets[] = {0.1, 0.5, 1, 2.5, 5, 10, 15, 30, 60};

typedef struct {
    size_t slot; /* where its id goes: offsetof(ms__families_t, ...) */
    ms_metric_kind_t kind;
    const char *name, *help;
    const char *const *labels;
    size_t nlabels;
    const double *buckets;
    size_t nbuckets;
} family_t;

#define N(a) (sizeof a / sizeof a[0])
#define SLOT(f) offsetof(ms__families_t, f)
#define LABELS(a) a, N(a)
#define NO_LABELS NULL, 0
#define BUCKETS(a) a, N(a)
#define NO_BUCKETS NULL, 0

/* In /metrics order: the families appear as they are declared. */
static const family_t loop_families[] = {
    {SLOT(decisions), MS_METRIC_COUNTER, "meshscaler_decisions_total",
     "Decisions made, by the engine's reason.", LABELS(by_reason), NO_BUCKETS},
    {SLOT(hpa_desired), MS_METRIC_GAUGE, "meshscaler_hpa_desired_replicas",
     "Shadow mode: the desired replicas of the HPA that scales the same target.", LABELS(by_object),
     NO_BUCKETS},
    {SLOT(hpa_difference), MS_METRIC_GAUGE, "meshscaler_hpa_desired_difference",
     "Shadow mode: meshscaler's desired replicas minus the HPA's.", LABELS(by_object), NO_BUCKETS},
    {SLOT(scales), MS_METRIC_COUNTER, "meshscaler_scales_total",
     "Scale updates written, by direction.", LABELS(by_scale), NO_BUCKETS},
    {SLOT(desired), MS_METRIC_GAUGE, "meshscaler_desired_replicas",
     "Replicas the last decision asked for.", LABELS(by_object), NO_BUCKETS},
    {SLOT(current), MS_METRIC_GAUGE, "meshscaler_current_replicas",
     "Replicas of the target at the last sync.", LABELS(by_object), NO_BUCKETS},
    {SLOT(sync_seconds), MS_METRIC_HISTOGRAM, "meshscaler_sync_duration_seconds",
     "Time to sync one object (its share of a batch included).", NO_LABELS, BUCKETS(sync_buckets)},
    {SLOT(sync_errors), MS_METRIC_COUNTER, "meshscaler_sync_errors_total",
     "Syncs that could not complete, by reason.", LABELS(by_reason), NO_BUCKETS},
    {SLOT(prom_queries), MS_METRIC_COUNTER, "meshscaler_prometheus_queries_total",
     "Prometheus queries sent.", NO_LABELS, NO_BUCKETS},
    {SLOT(prom_failures), MS_METRIC_COUNTER, "meshscaler_prometheus_query_failures_total",
     "Prometheus queries without a usable answer.", NO_LABELS, NO_BUCKETS},
    {SLOT(prom_seconds), MS_METRIC_HISTOGRAM, "meshscaler_prometheus_tick_duration_seconds",
     "Time of one round's Prometheus tick (all its queries).", NO_LABELS, BUCKETS(sync_buckets)},
    {SLOT(ns_seconds), MS_METRIC_GAUGE, "meshscaler_prometheus_namespace_query_seconds",
     "Time of a namespace's user queries in the last round, summed over its queries; only "
     "the round's 10 costliest namespaces (the series are replaced every round).",
     LABELS(by_namespace), NO_BUCKETS},
    {SLOT(ns_bytes), MS_METRIC_GAUGE, "meshscaler_prometheus_namespace_answer_bytes",
     "Answer bytes of a namespace's user queries in the last round; the same 10 namespaces.",
     LABELS(by_namespace), NO_BUCKETS},
    {SLOT(ns_over_share), MS_METRIC_GAUGE, "meshscaler_prometheus_namespace_over_share",
     "User queries of a namespace stopped at their share of the last round, or not sent "
     "past the cap of 32 per object (their values read OVER_SHARE); the same 10 namespaces.",
     LABELS(by_namespace), NO_BUCKETS},
    {SLOT(round_objects), MS_METRIC_GAUGE, "meshscaler_round_objects",
     "Objects observed together in the last round.", NO_LABELS, NO_BUCKETS},
    {SLOT(round_seconds), MS_METRIC_HISTOGRAM, "meshscaler_round_duration_seconds",
     "Time to read a round's objects from the caches and "
     "observe them (its Prometheus tick included).",
     NO_LABELS, BUCKETS(sync_buckets)},
    {SLOT(sync_lateness), MS_METRIC_HISTOGRAM, "meshscaler_sync_lateness_seconds",
     "How long after its due time an object's round began "
     "(a sync later than its period missed it).",
     NO_LABELS, BUCKETS(lateness_buckets)},
    {SLOT(stale_observations), MS_METRIC_COUNTER, "meshscaler_stale_observations_total",
     "Syncs that reached a worker after their observation was a sync period old (at least "
     "5 s): not decided, observed again in the next round.",
     NO_LABELS, NO_BUCKETS},
    {SLOT(writes_dropped), MS_METRIC_COUNTER, "meshscaler_writes_dropped_total",
     "Writes not sent because the lease was not valid long "
     "enough, by kind (scale, status, event).",
     LABELS(by_kind), NO_BUCKETS},
    {SLOT(events_dropped), MS_METRIC_COUNTER, "meshscaler_events_dropped_total",
     "Events not written, by reason: the queue was full, the "
     "lease not valid, or the API refused them.",
     LABELS(by_reason), NO_BUCKETS},
    {SLOT(events_combined), MS_METRIC_COUNTER, "meshscaler_events_combined_total",
     "Events folded into one still waiting of the same object and reason (sent as one Event "
     "whose count rises by as many), by reason.",
     LABELS(by_reason), NO_BUCKETS},
    {SLOT(kube_requests), MS_METRIC_COUNTER, "meshscaler_kube_requests_total",
     "Kubernetes API calls made by reconcile, by result code.", LABELS(by_op_code), NO_BUCKETS},
    {SLOT(kube_seconds), MS_METRIC_HISTOGRAM, "meshscaler_kube_request_duration_seconds",
     "Latency of reconcile's Kubernetes API calls, client-side "
     "rate limiting included.",
     LABELS(by_op), BUCKETS(sync_buckets)},
    {SLOT(leader), MS_METRIC_GAUGE, "meshscaler_leader",
     "1 while this process may act (leader, or no election).", NO_LABELS, NO_BUCKETS},
    {SLOT(queue_depth), MS_METRIC_GAUGE, "meshscaler_workqueue_depth", "Keys ready to be synced.",
     NO_LABELS, NO_BUCKETS},
    {SLOT(queue_delayed), MS_METRIC_GAUGE, "meshscaler_workqueue_delayed",
     "Keys waiting for their next sync time.", NO_LABELS, NO_BUCKETS},
    {SLOT(client_requests), MS_METRIC_COUNTER, "meshscaler_kube_client_requests_total",
     "Every Kubernetes API request sent (informers and "
     "leader election included), by verb.",
     LABELS(by_verb), NO_BUCKETS},
    {SLOT(client_throttle), MS_METRIC_COUNTER, "meshscaler_kube_client_throttle_seconds_total",
     "Time requests waited for the client-side rate limit.", NO_LABELS, NO_BUCKETS},
    {SLOT(objects), MS_METRIC_GAUGE, "meshscaler_objects", "MeshAutoscalers in the informer cache.",
     NO_LABELS, NO_BUCKETS},
    {SLOT(status_queued), MS_METRIC_GAUGE, "meshscaler_status_writes_queued",
     "Status patches waiting for a writer.", NO_LABELS, NO_BUCKETS},
    {SLOT(breaker_open), MS_METRIC_GAUGE, "meshscaler_prometheus_breaker_open",
     "1 while the Prometheus circuit breaker is open: failed runs in a row stop queries for a "
     "backoff, every object's metrics are missing meanwhile.",
     NO_LABELS, NO_BUCKETS},
    {SLOT(prom_skipped), MS_METRIC_COUNTER, "meshscaler_prometheus_queries_skipped_total",
     "Queries not sent because the circuit breaker was open.", NO_LABELS, NO_BUCKETS},
};

/* The per-object series the dashboard and the alerts read: what each metric
 * sees and asks, the guardrails' headroom, the conditions and the last reason
 * (kube-state-metrics' style for conditions: one series per status, 1 for the
 * current one). */
static const family_t object_families[] = {
    {SLOT(metric_value), MS_METRIC_GAUGE, "meshscaler_metric_value",
     "A metric's effective value at the last decision "
     "(status.currentMetrics[].effective).",
     LABELS(by_metric), NO_BUCKETS},
    {SLOT(metric_target), MS_METRIC_GAUGE, "meshscaler_metric_target",
     "A metric's target: percent, value or average value.", LABELS(by_metric), NO_BUCKETS},
    {SLOT(metric_desired), MS_METRIC_GAUGE, "meshscaler_metric_desired_replicas",
     "Replicas a metric asked for at the last decision.", LABELS(by_metric), NO_BUCKETS},
    {SLOT(ds_headroom), MS_METRIC_GAUGE, "meshscaler_downstream_headroom",
     "maxUtilization x limit - usage of a downstream guardrail "
     "(negative when over).",
     LABELS(by_downstream), NO_BUCKETS},
    {SLOT(ds_allowed), MS_METRIC_GAUGE, "meshscaler_downstream_allowed_replicas",
     "Replicas a downstream guardrail allows.", LABELS(by_downstream), NO_BUCKETS},
    {SLOT(condition), MS_METRIC_GAUGE, "meshscaler_condition",
     "1 for each condition's current status.", LABELS(by_condition), NO_BUCKETS},
    {SLOT(last_reason), MS_METRIC_GAUGE, "meshscaler_last_decision_reason",
     "1 for the reason of the object's last decision.", LABELS(by_object_reason), NO_BUCKETS},
};

static void declare(ms_controller_t *c, const family_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        *(int *)((char *)&c->metrics.fam + t[i].slot) =
            ms_metrics_family(c->metrics.registry, t[i].kind, t[i].name, t[i].help, t[i].labels,
                              t[i].nlabels, t[i].buckets, t[i].nbuckets);
}

/* §2b's shared budgets (docs/metrics.md): the room each one's last round
 * split, and what each member was granted of it. */
static void budget_families(ms_controller_t *c)
{
    static const char *const budget[] = {"budget"};
    static const char *const member[] = {"namespace", "name", "budget"};

    c->metrics.fam.budget_room =
        ms_metrics_family(c->metrics.registry, MS_METRIC_GAUGE, "meshscaler_budget_room",
                          "Flows a shared downstream budget had to split at its "
                          "last round, after every member's reservation.",
                          budget, 1, NULL, 0);
    c->metrics.fam.budget_granted = ms_metrics_family(
        c->metrics.registry, MS_METRIC_GAUGE, "meshscaler_budget_granted_replicas",
        "Replicas an object was granted of a shared budget's room at its last decision "
        "(its ask when the room held every ask).",
        member, 3, NULL, 0);
}

/* Whether d took part in the budget called name. */
static bool decision_shared(const ms_spec_t *spec, const ms_decision_t *d, const char *name)
{
    for (size_t i = 0; i < d->nbudgets; i++)
        if (d->budgets[i].downstream < spec->ndownstreams &&
            strcmp(spec->downstreams[d->budgets[i].downstream].budget, name) == 0)
            return true;
    return false;
}

void ms__metrics_budgets(ms_controller_t *c, const ms__item_t *it)
{
    const ms_decision_t *d = &it->d;

    /* A budget it names but took no share of this time (paused, not
     * observed): no grant to show. */
    for (size_t k = 0; k < it->spec->ndownstreams; k++) {
        const char *name = it->spec->downstreams[k].budget;
        if (name[0] != '\0' && !decision_shared(it->spec, d, name))
            ms_metrics_remove(c->metrics.registry, c->metrics.fam.budget_granted,
                              (const char *[]){it->ns, it->name, name});
    }
    /* Under the table's lock, and only while the object still belongs to
     * the budget: the handler removes the series under it when the object
     * leaves (controller.c), so a sync that was in flight then does not
     * bring them back. (Most objects name no budget: no lock.) */
    if (d->nbudgets == 0)
        return;
    pthread_mutex_lock(&c->objects.lock);
    for (size_t i = 0; i < d->nbudgets; i++) {
        const ms_budget_result_t *b = &d->budgets[i];
        const char *name;

        if (b->downstream >= it->spec->ndownstreams)
            continue;
        name = it->spec->downstreams[b->downstream].budget;
        if (!ms__budgets_is_member(&c->objects.budgets, it->key, name))
            continue;
        ms_metrics_set(c->metrics.registry, c->metrics.fam.budget_room, (const char *[]){name},
                       b->room);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.budget_granted,
                       (const char *[]){it->ns, it->name, name}, b->grant);
    }
    pthread_mutex_unlock(&c->objects.lock);
}

void ms__metrics_budget_forget(ms_controller_t *c, const char *ns, const char *name,
                               const char *budget, bool last)
{
    ms_metrics_remove(c->metrics.registry, c->metrics.fam.budget_granted,
                      (const char *[]){ns, name, budget});
    if (last)
        ms_metrics_remove(c->metrics.registry, c->metrics.fam.budget_room,
                          (const char *[]){budget});
}

void ms__metrics_round_costs(ms_controller_t *c, const ms_prom_tick_t *tick)
{
    ms_prom_namespace_cost_t costs[MS__COST_NAMESPACES];
    size_t n = ms_prom_tick_costs(tick, costs, MS__COST_NAMESPACES);

    ms_metrics_remove_matching(c->metrics.registry, c->metrics.fam.ns_seconds, NULL, 0);
    ms_metrics_remove_matching(c->metrics.registry, c->metrics.fam.ns_bytes, NULL, 0);
    ms_metrics_remove_matching(c->metrics.registry, c->metrics.fam.ns_over_share, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        const char *ns[1] = {costs[i].namespace_name};
        ms_metrics_set(c->metrics.registry, c->metrics.fam.ns_seconds, ns, costs[i].seconds);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.ns_bytes, ns, (double)costs[i].bytes);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.ns_over_share, ns,
                       (double)costs[i].over_share);
    }
}

void ms__metrics_forget_object(ms_controller_t *c, const char *ns, const char *name)
{
    const char *obj[] = {ns, name};
    const int families[] = {
        c->metrics.fam.desired,       c->metrics.fam.current,       c->metrics.fam.scales,
        c->metrics.fam.metric_value,  c->metrics.fam.metric_target, c->metrics.fam.metric_desired,
        c->metrics.fam.ds_headroom,   c->metrics.fam.ds_allowed,    c->metrics.fam.condition,
        c->metrics.fam.last_reason,   c->metrics.fam.hpa_desired,   c->metrics.fam.hpa_difference,
        c->metrics.fam.budget_granted};

    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        ms_metrics_remove_matching(c->metrics.registry, families[i], obj, 2);
}

void ms__metrics_declare(ms_controller_t *c)
{
    declare(c, loop_families, N(loop_families));
    declare(c, object_families, N(object_families));
    budget_families(c);
}

void ms__kube_observe(ms_controller_t *c, const char *operation, double started, ms_err_t err)
{
    const char *code = err == MS_OK ? "ok" : ms_err_name(err) + 7; /* drop "MS_ERR_" */
    const char *labels[] = {operation, code};

    ms_metrics_observe(c->metrics.registry, c->metrics.fam.kube_seconds, labels,
                       ms_clock_monotonic() - started);
    ms_metrics_add(c->metrics.registry, c->metrics.fam.kube_requests, labels, 1);
}
