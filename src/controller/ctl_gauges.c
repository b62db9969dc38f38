/*
 * ctl_gauges.c - the gauges and the clients' counters the main loop
 * refreshes once a second (ms__metrics_refresh): leadership, the work queue,
 * the cache, the status writer's queue, the event queue's drops, the
 * clients' requests and the Prometheus breaker. It reads the threads that
 * serve the loop, which themselves write their series through ctl_metrics.c;
 * kept apart from it so that neither calls the other.
 */
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"

static void add_stats(ms_kube_stats_t *sum, ms_kube_client_t *k)
{
    ms_kube_stats_t st;

    if (k == NULL)
        return;
    ms_kube_client_stats(k, &st);
    sum->get += st.get;
    sum->list += st.list;
    sum->watch += st.watch;
    sum->create += st.create;
    sum->update += st.update;
    sum->patch += st.patch;
    sum->del += st.del;
    sum->throttle_seconds += st.throttle_seconds;
}

static void sum_stats(ms_controller_t *c, ms_kube_stats_t *sum)
{
    memset(sum, 0, sizeof *sum);
    add_stats(sum, c->clients.kube);
    add_stats(sum, c->clients.kube_lease);
}

/* The clients' own counters, as deltas since the last call. */
static void client_counters(ms_controller_t *c)
{
    ms_kube_stats_t now, *was = &c->metrics.last_stats;
    struct {
        const char *verb;
        unsigned long now, was;
    } verbs[7];
    size_t i = 0;

    sum_stats(c, &now);
    verbs[i++] = (typeof(verbs[0])){"get", now.get, was->get};
    verbs[i++] = (typeof(verbs[0])){"list", now.list, was->list};
    verbs[i++] = (typeof(verbs[0])){"watch", now.watch, was->watch};
    verbs[i++] = (typeof(verbs[0])){"create", now.create, was->create};
    verbs[i++] = (typeof(verbs[0])){"update", now.update, was->update};
    verbs[i++] = (typeof(verbs[0])){"patch", now.patch, was->patch};
    verbs[i++] = (typeof(verbs[0])){"delete", now.del, was->del};
    for (i = 0; i < 7; i++)
        ms_metrics_add(c->metrics.registry, c->metrics.fam.client_requests, &verbs[i].verb,
                       (double)(verbs[i].now - verbs[i].was));
    ms_metrics_add(c->metrics.registry, c->metrics.fam.client_throttle, NULL,
                   now.throttle_seconds - was->throttle_seconds);
    *was = now;
}

static void event_counts(void *ctx, const char *reason, unsigned long dropped,
                         unsigned long combined)
{
    ms_controller_t *c = ctx;

    if (dropped > 0)
        ms_metrics_add(c->metrics.registry, c->metrics.fam.events_dropped, &reason,
                       (double)dropped);
    if (combined > 0)
        ms_metrics_add(c->metrics.registry, c->metrics.fam.events_combined, &reason,
                       (double)combined);
}

void ms__metrics_refresh(ms_controller_t *c)
{
    ms_metrics_set(c->metrics.registry, c->metrics.fam.leader, NULL,
                   ms__controller_may_act(c) ? 1 : 0);
    ms_metrics_set(c->metrics.registry, c->metrics.fam.queue_depth, NULL,
                   (double)ms_workqueue_len(c->queues.work));
    ms_metrics_set(c->metrics.registry, c->metrics.fam.queue_delayed, NULL,
                   (double)ms_workqueue_delayed_len(c->queues.work));
    ms_metrics_set(c->metrics.registry, c->metrics.fam.objects, NULL,
                   c->informers.mas != NULL ? (double)ms_kube_informer_size(c->informers.mas) : 0);
    if (c->queues.status_writer != NULL)
        ms_metrics_set(c->metrics.registry, c->metrics.fam.status_queued, NULL,
                       (double)ms__status_writer_pending(c->queues.status_writer));
    if (c->queues.events != NULL)
        ms__event_queue_take_counts(c->queues.events, ms_clock_monotonic(), c->cfg.sync_period,
                                    event_counts, c);
    client_counters(c);
    if (c->clients.prom != NULL) {
        ms_prom_client_stats_t ps;
        ms_prom_client_stats(c->clients.prom, &ps);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.breaker_open, NULL, ps.open ? 1 : 0);
        ms_metrics_add(c->metrics.registry, c->metrics.fam.prom_skipped, NULL,
                       (double)(ps.skipped - c->metrics.last_prom_skipped));
        c->metrics.last_prom_skipped = ps.skipped;
    }
}
