/*
 * lease.c - client-go's leaderelection.LeaderElector on a Lease object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/json.h"
#include "meshscaler/lease.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

struct ms_kube_elector {
    ms_kube_client_t *client;
    char *ns, *name, *identity;
    char path[600], collection[400];
    double duration, deadline, retry, margin;
    atomic_uint_fast64_t valid_until_us; /* monotonic microseconds; 0: not the leader */
    ms_kube_lease_options_t cb;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    atomic_bool leader;
    /* What this candidate last saw, and when (its own clock). */
    char observed_rv[64];
    char observed_holder[256];
    double observed_at;
    double last_look; /* when the previous GET of the lease started; 0: never */
    cJSON *lease;     /* last read or written Lease */
};

ms_kube_elector_t *ms_kube_elector_new(ms_kube_client_t *c, const ms_kube_lease_options_t *o,
                                       char *errbuf, size_t errlen)
{
    ms_kube_elector_t *e;
    double backdate;

    if (o->namespace_ == NULL || o->name == NULL || o->identity == NULL || o->identity[0] == '\0') {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "leader election: namespace, name and identity are required");
        return NULL;
    }
    e = ms_xcalloc(1, sizeof *e);
    e->duration = o->lease_duration > 0 ? o->lease_duration : 15;
    e->deadline = o->renew_deadline > 0 ? o->renew_deadline : 10;
    e->retry = o->retry_period > 0 ? o->retry_period : 2;
    backdate = (e->duration - e->deadline) / 2;
    e->margin = o->safety_margin > 0 ? o->safety_margin : backdate + MS_KUBE_LEASE_SLACK;
    if (!(e->deadline < e->duration) || !(e->retry < e->deadline) ||
        !(e->margin >= backdate + MS_KUBE_LEASE_SLACK) || !(e->margin < e->duration) ||
        ms_kube_path(e->path, sizeof e->path, "coordination.k8s.io/v1", o->namespace_, "leases",
                     o->name, NULL) != MS_OK ||
        ms_kube_path(e->collection, sizeof e->collection, "coordination.k8s.io/v1", o->namespace_,
                     "leases", NULL, NULL) != MS_OK) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "leader election: need retry period < renew deadline < lease duration, a safety "
                "margin of at least (duration - deadline)/2 + %.1f s (a successor's back-dating "
                "plus slack) and below the duration, and a valid name",
                MS_KUBE_LEASE_SLACK);
        free(e);
        return NULL;
    }
    e->client = c;
    e->ns = ms_xstrdup(o->namespace_ ? o->namespace_ : "");
    e->name = ms_xstrdup(o->name ? o->name : "");
    e->identity = ms_xstrdup(o->identity ? o->identity : "");
    e->cb = *o;
    atomic_init(&e->stop, false);
    atomic_init(&e->leader, false);
    atomic_init(&e->valid_until_us, 0);
    return e;
}

static bool try_acquire_or_renew(ms_kube_elector_t *e);

static void set_valid_until(ms_kube_elector_t *e, double t)
{
    atomic_store(&e->valid_until_us, t > 0 ? (uint_fast64_t)(t * 1e6) : 0);
}

double ms_kube_elector_term(const ms_kube_elector_t *e)
{
    return e->deadline < e->duration - e->margin ? e->deadline : e->duration - e->margin;
}

double ms_kube_elector_valid_until(ms_kube_elector_t *e)
{
    return (double)atomic_load(&e->valid_until_us) / 1e6;
}

/* One attempt, bounded: it ends by `deadline` (monotonic) whatever the API
 * server does. On success the lease is ours from `started` on. */
static bool bounded_attempt(ms_kube_elector_t *e, double deadline, double *started)
{
    bool ok;

    *started = ms_clock_monotonic();
    ms_kube_deadline_set(deadline);
    ok = try_acquire_or_renew(e);
    ms_kube_deadline_set(0);
    return ok;
}

static void set_str(cJSON *obj, const char *key, const char *val)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddStringToObject(obj, key, val);
}

static void set_num(cJSON *obj, const char *key, double val)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddNumberToObject(obj, key, val);
}

/* Note what the lease says now; a change restarts this candidate's clock.
 *
 * client-go dates a change to the moment it was seen, which lets a crashed
 * leader's lease outlive it by up to one retry period. The change happened
 * after the previous look began (that look still saw the old version), so it
 * is dated there instead - but never more than half the gap between lease
 * duration and renew deadline back, which keeps that much margin between
 * the old leader giving up (last renewal + renew deadline) and a takeover.
 * `now` is when the answer arrived, not when the GET began: a slow GET sent
 * before the leader's renewal may return it, and the back-dating must count
 * from after the renewal, or the GET's latency would add to it. */
static void observe(ms_kube_elector_t *e, cJSON *lease, double now)
{
    const char *rv = ms_json_string_member(lease, "metadata", "resourceVersion", "");
    const char *holder = ms_json_string_member(lease, "spec", "holderIdentity", "");

    if (strcmp(rv, e->observed_rv) != 0) {
        double earliest = now - (e->duration - e->deadline) / 2;

        if (strcmp(holder, e->observed_holder) != 0 && e->cb.on_new_leader)
            e->cb.on_new_leader(e->cb.ctx, holder);
        snprintf(e->observed_rv, sizeof e->observed_rv, "%s", rv);
        snprintf(e->observed_holder, sizeof e->observed_holder, "%s", holder);
        e->observed_at =
            e->last_look > earliest ? e->last_look : (e->last_look > 0 ? earliest : now);
    }
    cJSON_Delete(e->lease);
    e->lease = lease;
}

/* One attempt to acquire or renew; true when this process holds the lease. */
static bool try_acquire_or_renew(ms_kube_elector_t *e)
{
    char micro[48];
    double now = ms_clock_monotonic();
    ms_kube_error_t kerr;
    cJSON *lease = NULL, *spec, *out = NULL;
    const cJSON *trans;
    bool held_by_me;
    ms_err_t err;

    ms_time_rfc3339(ms_clock_wall(), true, micro, sizeof micro);
    err = ms_kube_get(e->client, e->path, &lease, &kerr);
    if (err != MS_OK && err != MS_ERR_NOTFOUND)
        e->last_look = 0; /* a gap in looking: the next change is dated when seen */
    if (err == MS_ERR_NOTFOUND) {
        lease = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(lease, "metadata");
        cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1");
        cJSON_AddStringToObject(lease, "kind", "Lease");
        cJSON_AddStringToObject(md, "name", e->name);
        cJSON_AddStringToObject(md, "namespace", e->ns);
        spec = cJSON_AddObjectToObject(lease, "spec");
        cJSON_AddStringToObject(spec, "holderIdentity", e->identity);
        cJSON_AddNumberToObject(spec, "leaseDurationSeconds", (int)e->duration);
        cJSON_AddStringToObject(spec, "acquireTime", micro);
        cJSON_AddStringToObject(spec, "renewTime", micro);
        cJSON_AddNumberToObject(spec, "leaseTransitions", 0);
        err = ms_kube_create(e->client, e->collection, lease, &out, &kerr);
        cJSON_Delete(lease);
        if (err != MS_OK) {
            MS_LOG_DEBUG("lease create failed", MS_S("error", kerr.message));
            return false;
        }
        observe(e, out, now);
        return true;
    }
    if (err != MS_OK) {
        MS_LOG_WARN("cannot read the leader lease", MS_S("lease", e->name),
                    MS_S("error", kerr.message));
        return false;
    }
    observe(e, lease, ms_clock_monotonic());
    e->last_look = now;
    held_by_me = strcmp(e->observed_holder, e->identity) == 0;
    if (!held_by_me && e->observed_holder[0] != '\0' && e->observed_at + e->duration > now)
        return false; /* someone else holds an unexpired lease */

    lease = cJSON_Duplicate(e->lease, true);
    spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    if (spec == NULL)
        spec = cJSON_AddObjectToObject(lease, "spec");
    trans = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
    if (!held_by_me) {
        set_str(spec, "acquireTime", micro);
        set_num(spec, "leaseTransitions", (cJSON_IsNumber(trans) ? trans->valuedouble : 0) + 1);
    }
    set_str(spec, "holderIdentity", e->identity);
    set_num(spec, "leaseDurationSeconds", (int)e->duration);
    set_str(spec, "renewTime", micro);
    /* metadata.resourceVersion stays: the update is conditional on it. */
    err = ms_kube_update(e->client, e->path, lease, &out, &kerr);
    cJSON_Delete(lease);
    if (err != MS_OK) {
        MS_LOG_DEBUG("lease update failed", MS_S("error", kerr.message));
        return false;
    }
    observe(e, out, now);
    return true;
}

static void release(ms_kube_elector_t *e)
{
    char micro[48];
    ms_kube_error_t kerr;
    cJSON *lease, *spec, *out = NULL;

    if (e->lease == NULL || strcmp(e->observed_holder, e->identity) != 0)
        return;
    ms_time_rfc3339(ms_clock_wall(), true, micro, sizeof micro);
    lease = cJSON_Duplicate(e->lease, true);
    spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
    set_str(spec, "holderIdentity", "");
    set_num(spec, "leaseDurationSeconds", 1);
    set_str(spec, "renewTime", micro);
    set_str(spec, "acquireTime", micro);
    if (ms_kube_update(e->client, e->path, lease, &out, &kerr) == MS_OK)
        MS_LOG_INFO("released the leader lease", MS_S("lease", e->name),
                    MS_S("identity", e->identity));
    else
        MS_LOG_WARN("cannot release the leader lease", MS_S("lease", e->name),
                    MS_S("error", kerr.message));
    cJSON_Delete(lease);
    cJSON_Delete(out);
}

/* A candidate sleeps the retry period with up to 20% jitter (client-go's
 * JitterFactor 1.2), but wakes when the observed lease expires, so a crashed
 * leader is replaced at its lease's end rather than up to a period later. */
static bool wait_retry(ms_kube_elector_t *e, double jitter)
{
    double r = (double)(((unsigned long)(ms_clock_monotonic() * 1e6)) % 1000) / 1000.0;
    double d = e->retry * (1 + jitter * r);
    double expiry = e->observed_at + e->duration - ms_clock_monotonic();

    if (e->observed_holder[0] != '\0' && expiry > 0 && expiry + 0.01 < d)
        d = expiry + 0.01;
    return ms__kube_sleep(d, &e->stop);
}

static void *run(void *arg)
{
    ms_kube_elector_t *e = arg;

    while (!atomic_load(&e->stop)) {
        double last_renew, started;

        /* Candidate: try every retry period, each try bounded by the renew
         * deadline (a hung API server must not hold the candidate either). */
        if (!bounded_attempt(e, ms_clock_monotonic() + e->deadline, &started)) {
            wait_retry(e, 0.2);
            continue;
        }
        last_renew = started;
        set_valid_until(e, started + ms_kube_elector_term(e));
        atomic_store(&e->leader, true);
        MS_LOG_INFO("became leader", MS_S("lease", e->name), MS_S("identity", e->identity));
        if (e->cb.on_started_leading)
            e->cb.on_started_leading(e->cb.ctx);
        /* Leader: renew every retry period. Every renewal ends by the last
         * good one plus the renew deadline; past it, leadership is gone. */
        while (!atomic_load(&e->stop)) {
            if (!ms__kube_sleep(e->retry, &e->stop))
                break;
            if (bounded_attempt(e, last_renew + e->deadline, &started)) {
                last_renew = started;
                set_valid_until(e, started + ms_kube_elector_term(e));
                continue;
            }
            if (ms_clock_monotonic() - last_renew >= e->deadline ||
                (e->observed_holder[0] != '\0' && strcmp(e->observed_holder, e->identity) != 0)) {
                MS_LOG_WARN("lost leadership", MS_S("lease", e->name),
                            MS_S("holder", e->observed_holder),
                            MS_D("seconds_since_renewal", ms_clock_monotonic() - last_renew));
                break;
            }
        }
        set_valid_until(e, 0);
        atomic_store(&e->leader, false);
        if (atomic_load(&e->stop)) {
            /* A released lease lets a successor start at once; bounded, so a
             * hung API server does not hold up the shutdown. */
            ms_kube_deadline_set(ms_clock_monotonic() + e->retry);
            release(e);
            ms_kube_deadline_set(0);
        }
        if (e->cb.on_stopped_leading)
            e->cb.on_stopped_leading(e->cb.ctx);
    }
    return NULL;
}

ms_err_t ms_kube_elector_start(ms_kube_elector_t *e)
{
    if (pthread_create(&e->thread, NULL, run, e) != 0)
        return MS_ERR_IO;
    e->started = true;
    return MS_OK;
}

bool ms_kube_elector_is_leader(ms_kube_elector_t *e)
{
    return atomic_load(&e->leader);
}

void ms_kube_elector_free(ms_kube_elector_t *e)
{
    if (e == NULL)
        return;
    atomic_store(&e->stop, true);
    if (e->started)
        pthread_join(e->thread, NULL);
    cJSON_Delete(e->lease);
    free(e->ns);
    free(e->name);
    free(e->identity);
    free(e);
}
