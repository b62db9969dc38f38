/*
 * leader.c - whether this process may act and write now: no election, or
 * the lease held (and, for a write, valid long enough). The elector is
 * started by the lifecycle (controller.c) once the caches synced; the loop
 * and the threads that serve it (round.c, reconcile.c, the status writer,
 * the event queue, the gauges) ask here before acting.
 */
#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"

/* The lease's validity must reach past the moment a write is sent by this
 * much, or the write waits for the next renewal. */
#define WRITE_MIN_VALIDITY 0.5

/* With --leader-elect the elector starts once the caches synced; until then
 * this replica is no leader. */
static bool elects(const ms_controller_t *c)
{
    return c->cfg.leader_elect && !c->cfg.dry_run;
}

bool ms__controller_may_act(ms_controller_t *c)
{
    ms_kube_elector_t *elector = c->clients.elector;

    if (elector == NULL)
        return !elects(c);
    return ms_kube_elector_is_leader(elector);
}

bool ms__may_write(ms_controller_t *c, const char *kind)
{
    ms_kube_elector_t *elector = c->clients.elector;
    double until, now;

    if (c->cfg.dry_run)
        return false;
    if (elector == NULL) {
        if (!elects(c))
            return true;
        ms_metrics_add(c->metrics.registry, c->metrics.fam.writes_dropped, &kind, 1);
        return false;
    }
    until = ms_kube_elector_valid_until(elector);
    now = ms_clock_monotonic();
    if (until - now < WRITE_MIN_VALIDITY) {
        ms_metrics_add(c->metrics.registry, c->metrics.fam.writes_dropped, &kind, 1);
        MS_LOG_DEBUG("write dropped: the lease is not valid long enough", MS_S("kind", kind),
                     MS_D("valid_for", until - now));
        return false;
    }
    /* The request itself ends by the lease's end: it cannot land in a
     * successor's term from this side (lease.h). */
    ms_kube_deadline_set(until);
    return true;
}
