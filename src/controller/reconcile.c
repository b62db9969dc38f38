/*
 * reconcile.c - one object's sync, on a worker, from what its round
 * observed:
 *
 *   1. re-read the object from the cache (never an event payload) and check
 *      it is the one the round observed (same uid);
 *   2. the target's scale: from the round (a built-in kind's cache), or a
 *      GET of /scale for other kinds;
 *   3. decide with the engine and the object's memory (the round's
 *      monotonic time is the engine's clock); pausing and conflicts;
 *   4. write the scale, only while the lease is valid, conditional on the
 *      resourceVersion it decided from; a 409 whose re-read shows the same
 *      replicas is only a status update of the workload: write again at once;
 *      a changed count is someone else scaling: decide again, never
 *      overwrite;
 *   5. report (report.c) and set the retry time of a transient failure.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/buf.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

#define MAX_WRITE_ATTEMPTS 3

/* ---- load: the object as its handler left it, its scale ---- */

/* Under the table's lock: the object's identity, resourceVersion,
 * generation and pausing as the cache holds them now. False when it was
 * deleted or re-created since the round (the next round sees it). */
static bool load_object(ms_controller_t *c, ms__item_t *it, char *pause_err, size_t cap)
{
    ms__object_t *o = it->state;
    const char *slash = strchr(it->key, '/');
    bool same;

    if (slash == NULL)
        return false;
    snprintf(it->ns_buf, sizeof it->ns_buf, "%.*s", (int)(slash - it->key), it->key);
    snprintf(it->name_buf, sizeof it->name_buf, "%s", slash + 1);
    pthread_mutex_lock(&c->objects.lock);
    same = !o->deleted && strcmp(o->cache_uid, it->entry->uid) == 0;
    snprintf(it->uid_buf, sizeof it->uid_buf, "%s", o->cache_uid);
    snprintf(it->rv, sizeof it->rv, "%s", o->rv);
    it->generation = o->generation;
    it->pause = o->pause;
    snprintf(pause_err, cap, "%s", o->pause_error ? o->pause_error : "");
    pthread_mutex_unlock(&c->objects.lock);
    return same;
}

static bool load(ms_controller_t *c, ms__item_t *it)
{
    ms__round_entry_t *e = it->entry;
    char pause_err[MS_ERRBUF_SIZE];

    if (!load_object(c, it, pause_err, sizeof pause_err))
        return false;
    it->ns = it->ns_buf;
    it->name = it->name_buf;
    it->uid = it->uid_buf;
    if (pause_err[0] != '\0' && e->stage == MS__ENTRY_OBSERVED)
        MS_LOG_WARN("unreadable annotation", MS_S("object", it->key), MS_S("error", pause_err));
    it->stage = (ms__entry_stage_t)e->stage;
    if (e->spec != NULL)
        it->spec = &e->spec->spec;
    if (e->stage == MS__ENTRY_INVALID || e->stage == MS__ENTRY_NO_SCALE) {
        snprintf(it->problem, sizeof it->problem, "%s", e->problem);
        it->transient = e->transient;
        return true;
    }
    it->ref.api_version = it->spec->target_api_version;
    it->ref.kind = it->spec->target_kind;
    it->ref.namespace_ = it->ns;
    it->ref.name = it->spec->target_name;
    ms__round_observation(it->round, e, &it->obs);
    it->has_obs = true;
    if (e->target.cached) {
        memset(&it->scale, 0, sizeof it->scale);
        it->scale.replicas = e->target.replicas;
        it->scale.status_replicas = e->target.status_replicas;
        snprintf(it->scale.resource_version, sizeof it->scale.resource_version, "%s",
                 e->target.resource_version);
        snprintf(it->scale.uid, sizeof it->scale.uid, "%s", e->target.uid);
        return true;
    }
    /* Other kinds: the scale subresource itself (the round only had the hint
     * of the previous sync, for the selector). */
    {
        ms_kube_error_t kerr = {0};
        double t0 = ms_clock_monotonic();
        ms_err_t err = ms_kube_scale_get(c->clients.kube, &it->ref, &it->scale, &kerr);

        ms__kube_observe(c, "get_scale", t0, err);
        if (err != MS_OK) {
            /* A missing target or kind is the user's to fix: report and wait
             * a period. Anything else (API down, throttled) retries sooner. */
            it->transient =
                err != MS_ERR_NOTFOUND && err != MS_ERR_FORBIDDEN && err != MS_ERR_INVALID;
            ms_errf(it->problem, sizeof it->problem, MS_OK, "%s", kerr.message);
            it->stage = MS__ENTRY_NO_SCALE;
            return true;
        }
        pthread_mutex_lock(&c->objects.lock);
        if (it->state->scale_hint == NULL)
            it->state->scale_hint = ms_xmalloc(sizeof *it->state->scale_hint);
        *it->state->scale_hint = it->scale;
        pthread_mutex_unlock(&c->objects.lock);
    }
    return true;
}

/* ---- decide and apply ---- */

/* A saturation ratio, refused over admitted, is a rate over a window: it
 * measured the pods that were Ready through that window. A pod that turned
 * Ready inside it takes at once the work the others refused, while the ratio
 * still says they refuse it: multiplied into what the now larger set of
 * pods reads, it counts that demand twice (the lab measured about twice the
 * demand, one sync long, each time new pods turned Ready). So, as the HPA
 * keeps a pod that just turned Ready out of its CPU samples, the correction
 * waits until a whole window has measured the current Ready pods: the rates
 * count as not observed (decision-rules.md, step 2). One second more for
 * lastTransitionTime's whole seconds. */
static void hold_unsettled_saturation(ms__item_t *it, ms_observation_t *obs)
{
    const ms__target_t *t = &it->entry->target;
    const double *window = it->entry->spec->saturation_window;
    double age = it->wall - t->newest_ready, longest = 0;
    ms_fixbuf_t why;

    it->saturation_held[0] = '\0';
    if (window == NULL || !t->pods_ok || t->newest_ready <= 0)
        return;
    ms_fixbuf_init(&why, it->saturation_held, sizeof it->saturation_held);
    for (size_t i = 0; i < it->spec->nmetrics; i++) {
        /* A time further ahead than the window is a node's clock, not a
         * pod that just turned Ready: it would hold the correction for as
         * long as the clocks disagree. */
        if (!it->spec->saturation[i].enabled || age >= window[i] + 1.0 || age < -window[i])
            continue;
        obs->saturation[i].admitted.present = false;
        obs->saturation[i].rejected.present = false;
        ms_fixbuf_appendf(&why, "%s%s", why.used ? ", " : "", it->spec->metrics[i].name);
        longest = window[i] > longest ? window[i] : longest;
    }
    if (why.used > 0)
        ms_fixbuf_appendf(&why, ": a pod turned Ready %.0f s ago, inside the %.0f s its rates read",
                          age < 0 ? 0 : age, longest);
}

/* A pod that just turned Ready takes a burst at once (the work queued while
 * the others were full, a cold start), and its sidecar reads it: the lab read
 * 93% in flight for a demand of 65%, one sync long, and scaled up again past
 * need. The HPA treats such a pod as not ready for a scale-up (its CPU
 * initialization rule); here a per-pod metric leaves the pods that turned
 * Ready in the last MS__READY_SETTLE_SECONDS out: they count as pods that did
 * not report, and step 3's missing-pods rule counts them idle for a scale-up
 * and busy for a scale-down, so they can only make a change smaller. A
 * preset's reading is a sum over pods, so the settled pods' part of a total
 * (AverageValue) is taken in proportion; an average (Utilization) stays.
 * A steady target has no settling pod: its first scale-up is not delayed. */
void ms__leave_out_settling_pods(const ms_spec_t *spec, int32_t settling, int32_t running,
                                 ms_observation_t *obs, char *why, size_t cap)
{
    /* Which pods reported is not known, only how many: a settling pod may
     * not be scraped yet. Count only those that must be among them, as if
     * every other running pod reported first. */
    int32_t others = running > settling ? running - settling : 0;
    ms_fixbuf_t w;

    ms_fixbuf_init(&w, why, cap);
    why[0] = '\0';
    if (settling <= 0)
        return;
    for (size_t i = 0; i < spec->nmetrics; i++) {
        ms_pods_t *pods = &obs->metric_pods[i];
        ms_target_type_t type = spec->metrics[i].target_type;
        int32_t left_out;

        if (!obs->metrics[i].present || !pods->known || pods->count <= others ||
            (type != MS_TARGET_UTILIZATION && type != MS_TARGET_AVERAGE_VALUE))
            continue;
        left_out = pods->count - others < settling ? pods->count - others : settling;
        if (type == MS_TARGET_AVERAGE_VALUE)
            obs->metrics[i].value *= (double)(pods->count - left_out) / (double)pods->count;
        pods->count -= left_out;
        ms_fixbuf_appendf(&w, "%s%s (%d)", w.used ? ", " : "", spec->metrics[i].name,
                          (int)left_out);
    }
    if (w.used > 0)
        ms_fixbuf_appendf(&w, ": %d %s turned Ready in the last %.0f s", (int)settling,
                          settling == 1 ? "pod" : "pods", MS__READY_SETTLE_SECONDS);
}

int32_t ms__decision_ready(const ms_spec_t *spec, const ms_pods_t *metric_pods, bool pods_ok,
                           int32_t ready_pods, int32_t current)
{
    int32_t ready = pods_ok && ready_pods > 0 ? ready_pods : current;

    for (size_t i = 0; i < spec->nmetrics; i++)
        if (spec->metrics[i].source != MS_SOURCE_SIDECAR_CONCURRENCY)
            return ready;
    for (size_t i = 0; i < spec->nmetrics; i++)
        if (metric_pods[i].known && metric_pods[i].count > ready)
            ready = metric_pods[i].count;
    return ready;
}

static ms_err_t decide(ms__item_t *it)
{
    ms_observation_t obs = it->obs.obs;
    const ms__target_t *t = &it->entry->target;
    int32_t current = it->scale.replicas;

    obs.now = it->now;
    obs.current_replicas = current;
    obs.ready_replicas =
        ms__decision_ready(it->spec, obs.metric_pods, t->pods_ok, t->ready_pods, current);
    /* Step 7 reserves each downstream's perReplica for the replicas whose
     * pods are not running yet; uncounted pods reserve nothing, and neither
     * does an object whose starting-pod-reservation annotation says "false". */
    if (t->pods_ok && it->spec->ndownstreams > 0 && !it->pause.no_reservation)
        obs.running_replicas = (ms_pods_t){true, t->running_pods};
    if (t->pods_ok)
        ms__leave_out_settling_pods(it->spec, t->settling_pods, t->running_pods, &obs,
                                    it->pods_settling, sizeof it->pods_settling);
    hold_unsettled_saturation(it, &obs);
    /* Only a scale that was written is a scale event (dry-run, pause,
     * conflicts and failed writes store none): recorded after the update. */
    obs.defer_scale_event = true;
    return ms_engine_decide(it->spec, &it->state->memory, &obs, &it->d);
}

/* Shadow mode: the HPA that scales the same target, if any, and the
 * comparison of its desired count with this decision's. */
static void compare_with_hpa(ms_controller_t *c, ms__item_t *it)
{
    ms__object_t *st = it->state;

    it->hpa_desired = -1;
    it->beside_hpa =
        c->informers.target_index != NULL &&
        ms__target_index_hpa(c->informers.target_index, it->ns, it->spec->target_api_version,
                             it->spec->target_kind, it->spec->target_name, it->hpa_key,
                             sizeof it->hpa_key, &it->hpa_desired,
                             c->cfg.dry_run ? &it->hpa_metrics : NULL);
    if (!it->beside_hpa || it->hpa_desired < 0)
        return;
    if (strcmp(st->hpa_compared, it->hpa_key) != 0) {
        snprintf(st->hpa_compared, sizeof st->hpa_compared, "%s", it->hpa_key);
        ms_compare_init(&st->hpa_compare);
        st->hpa_since = it->wall;
    }
    ms_compare_add(&st->hpa_compare, it->wall, it->desired, it->hpa_desired);
}

/* PUT the scale; on a 409 whose re-read still shows the replicas the
 * decision started from, write again at once with the new resourceVersion
 * (only the workload's status moved). Returns the last error; *fresh holds
 * the re-read of a real conflict. */
static ms_err_t write_scale(ms_controller_t *c, ms__item_t *it, ms_kube_scale_t *fresh)
{
    ms_kube_scale_t seen = it->scale;
    ms_err_t err = MS_ERR_CONFLICT;

    for (int attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
        double t0;

        if (!ms__may_write(c, "scale")) {
            it->write_dropped = true;
            return MS_ERR_CANCELLED;
        }
        t0 = ms_clock_monotonic();
        memset(&it->write_err, 0, sizeof it->write_err);
        err = ms_kube_scale_update(c->clients.kube, &it->ref, &seen, it->desired, fresh,
                                   &it->write_err);
        ms__kube_observe(c, "update_scale", t0, err);
        if (err != MS_ERR_CONFLICT || fresh->resource_version[0] == '\0' ||
            fresh->replicas != it->scale.replicas)
            return err;
        seen = *fresh; /* same count: not someone else scaling */
    }
    return err;
}

/* Steps 1-7 from it->scale (step 8 waits for the write). False when the
 * engine refused the observation. it->before keeps the memory from before
 * the decision. */
static bool decide_engine(ms__item_t *it)
{
    ms_err_t err;

    it->before = it->state->memory;
    if ((err = decide(it)) != MS_OK) {
        ms_errf(it->problem, sizeof it->problem, MS_OK, "the engine refused the observation: %s",
                ms_strerror(err));
        it->stage = MS__ENTRY_NO_SCALE;
        it->transient = true;
        it->engine_refused = true;
        return false;
    }
    return true;
}

/* After the engine (and a shared budget's split): pausing. True when a
 * scale write is wanted. */
static bool decide_finish(ms_controller_t *c, ms__item_t *it)
{
    bool dry = c->cfg.dry_run || it->spec->dry_run;

    it->desired = it->d.desired_replicas;
    it->pause_effect = ms_pause_apply(&it->pause, it->scale.replicas, &it->desired);
    it->may_write = !dry && !it->conflict && it->pause_effect != MS_PAUSE_NO_WRITE;
    it->stage = MS__ENTRY_OBSERVED;
    return it->may_write && it->desired != it->scale.replicas;
}

/* Decide once from it->scale: the engine, then pausing. True when a scale
 * write is wanted. */
static bool decide_once(ms_controller_t *c, ms__item_t *it)
{
    return decide_engine(it) && decide_finish(c, it);
}

/* What the first decision of a sync needs: the memory, the conflict. */
static void prepare_first(ms_controller_t *c, ms__item_t *it)
{
    bool dry = c->cfg.dry_run || it->spec->dry_run;

    it->decided = true;
    if (!it->state->memory_ready) {
        ms__memory_restore(c, it);
        it->state->memory_ready = true;
    }
    it->conflict = !dry && c->informers.target_index != NULL &&
                   ms__target_index_conflict(c->informers.target_index, it->key, it->ns,
                                             it->spec->target_api_version, it->spec->target_kind,
                                             it->spec->target_name, it->conflict_with,
                                             sizeof it->conflict_with);
}

/* The first decision of a sync; true when a scale write is wanted. */
static bool decide_first(ms_controller_t *c, ms__item_t *it)
{
    prepare_first(c, it);
    return decide_once(c, it);
}

/* Write the decided scale; a real conflict decides again from what is
 * there now (never overwrite). Only a write that landed is a change. */
static void apply(ms_controller_t *c, ms__item_t *it)
{
    for (int attempt = 0;; attempt++) {
        ms_kube_scale_t fresh = {0};
        ms_err_t err = write_scale(c, it, &fresh);

        if (err == MS_OK) {
            it->change = it->desired - it->scale.replicas;
            it->applied = true;
            it->state->last_scale_time = it->wall;
            return;
        }
        if (it->write_dropped) {
            /* Not (or no longer surely) the leader: nothing was written. */
            it->state->memory = it->before;
            it->transient = true;
            return;
        }
        if (err == MS_ERR_CONFLICT && fresh.resource_version[0] != '\0' &&
            attempt + 1 < MAX_WRITE_ATTEMPTS) {
            /* Someone else changed the replica count: forget this decision,
             * decide again from what is there now. Never overwrite. */
            it->state->memory = it->before;
            if (it->d.nbudgets > 0) {
                /* Its grant was split with the others from the count it
                 * decided from: alone it would take the whole room. Its
                 * budget group decides again at the retry (round.c pulls
                 * the others in). */
                it->transient = true;
                return;
            }
            it->scale = fresh;
            if (!decide_once(c, it))
                return;
            continue;
        }
        it->write_failed = true;
        it->transient = true;
        return;
    }
}

/* ---- one key ---- */

/* A transient failure retries before the next period: after 1, 2, 4 ...
 * seconds, never later than the period, on a grid of that step on the
 * monotonic clock: objects that failed together (a Prometheus outage fails
 * a whole round) retry together, in one round, not scattered over many. */
static double retry_time(unsigned failures, double period, double now)
{
    double d = ldexp(1.0, failures > 10 ? 10 : (int)failures);

    if (d > period)
        d = period;
    return (floor(now / d) + 1) * d;
}

/* A worker that reaches an object this long after its round observed it
 * (a burst of writes queued behind one round: a new leader, the end of an
 * outage, a slow API server) may act against what the metrics say by now;
 * the object is observed again instead. */
#define OBSERVATION_MAX_AGE_FLOOR 5.0

static bool observation_stale(const ms_controller_t *c, const ms__item_t *it, double now)
{
    double limit = ms__object_period(it->entry->spec, c->cfg.sync_period);

    if (limit < OBSERVATION_MAX_AGE_FLOOR)
        limit = OBSERVATION_MAX_AGE_FLOOR;
    return it->entry->stage == MS__ENTRY_OBSERVED && now - it->round->observed > limit;
}

void ms__sync_free(ms__item_t *it)
{
    if (it == NULL)
        return;
    cJSON_Delete(it->obj);
    cJSON_Delete(it->hpa_metrics);
    ms__round_release((ms__round_t *)it->round);
    free(it);
}

/* The object is free again: its next sync's time (a retry after a transient
 * failure; after a stale observation, the next round that runs; a sync that
 * outlasted its grid time, the grid's next round: round.c says why),
 * liveness progress. */
static void release_object(ms_controller_t *c, ms__item_t *it, bool again_now)
{
    ms__object_t *o = it->state;
    double now = ms_clock_monotonic();

    pthread_mutex_lock(&c->objects.lock);
    o->busy = false;
    if (!again_now && ms__due_at_grid(o->due, o->grid) && o->due < now) {
        o->due = ms__next_grid_locked(c, it->key, it->entry->spec, now);
        o->grid = o->due;
    }
    if (again_now) {
        o->due = 0; /* the next round observes it again */
        o->rejoin = true;
    } else if (it->transient) {
        double period = ms__object_period(it->entry->spec, c->cfg.sync_period);
        double retry = retry_time(o->failures++, period, now);
        if (retry < o->due)
            o->due = retry;
    } else {
        o->failures = 0;
    }
    pthread_mutex_unlock(&c->objects.lock);
    atomic_store(&c->progress, (uint_fast64_t)(now * 1000));
}

/* A sync's end: a decision's scale event (only a written change; none
 * when the engine refused) and shadow comparison, then the report. */
static void settle(ms_controller_t *c, ms__item_t *it)
{
    if (it->decided && !it->engine_refused) {
        ms_engine_record_scale(&it->state->memory, it->spec, it->now, it->change);
        if (c->cfg.dry_run || it->spec->dry_run)
            compare_with_hpa(c, it);
    }
    ms__report(c, it);
    ms_metrics_observe(c->metrics.registry, c->metrics.fam.sync_seconds, NULL,
                       ms_clock_monotonic() - it->started);
}

void ms__sync_write(ms_controller_t *c, ms__item_t *it)
{
    /* Waited past what its observation is good for: observed again, as a
     * worker does with a sync that waited so long for it. */
    if (observation_stale(c, it, ms_clock_monotonic())) {
        ms_metrics_add(c->metrics.registry, c->metrics.fam.stale_observations, NULL, 1);
        it->state->memory = it->before;
        release_object(c, it, true);
        ms__sync_free(it);
        return;
    }
    apply(c, it);
    settle(c, it);
    release_object(c, it, false);
    ms__sync_free(it);
}

void ms__sync_abandon(ms_controller_t *c, ms__item_t *it)
{
    it->state->memory = it->before;
    release_object(c, it, true);
    ms__sync_free(it);
}

/* Under the table's lock: entry j of round r for this worker, when it still
 * waits for one (the item takes over the object's round reference). */
static ms__item_t *take_locked(ms_controller_t *c, ms__round_t *r, size_t j)
{
    ms__object_t *o = ms__objects_get_locked(&c->objects, r->entries[j].key);
    ms__item_t *it;

    if (o == NULL || o->pending != r || o->pending_index != j)
        return NULL;
    /* Owned by this sync, then by the scale writer if it takes it over. */
    it = ms_xcalloc(1, sizeof *it);
    it->entry = &r->entries[j];
    o->pending = NULL;
    o->busy = true;
    it->key = o->key; /* lives as long as the object, which busy keeps */
    it->round = r;
    it->state = o;
    return it;
}

/* Load the item and, when its observation is good, reach a first decision.
 * True when the item is to be reported (settle). */
static bool sync_start(ms_controller_t *c, ms__item_t *it, bool engine_only)
{
    it->started = ms_clock_monotonic();
    it->now = it->round->now;
    it->wall = it->round->wall;
    it->stale = observation_stale(c, it, it->started);
    if (it->stale) {
        ms_metrics_add(c->metrics.registry, c->metrics.fam.stale_observations, NULL, 1);
        return false;
    }
    if (!ms__controller_may_act(c) || !load(c, it))
        return false;
    if (it->stage == MS__ENTRY_OBSERVED && engine_only) {
        prepare_first(c, it);
        (void)decide_engine(it);
    } else if (it->stage == MS__ENTRY_OBSERVED) {
        it->wants_write = decide_first(c, it);
    }
    return true;
}

/* A started item's end: the write (on a scale writer when one takes it),
 * the report, the object free again. */
static void sync_end(ms_controller_t *c, ms__item_t *it, bool report)
{
    if (report) {
        if (it->wants_write) {
            /* The write and what follows it are the scale writer's now. */
            if (c->queues.scale_writer != NULL && ms__scale_writer_push(c->queues.scale_writer, it))
                return;
            apply(c, it);
        }
        settle(c, it);
    }
    release_object(c, it, it->stale);
    ms__sync_free(it);
}

/* Who takes a share: ms__budget_takes_share (budgets.c says why). */
static bool takes_share(const ms__item_t *it)
{
    return it->stage == MS__ENTRY_OBSERVED && !it->engine_refused &&
           ms__budget_takes_share(it->spec->dry_run, it->conflict, &it->pause, it->scale.replicas,
                                  it->d.desired_replicas);
}

/* The members of one budget group of a round, on one worker: steps 1-7 for
 * each, §2b's split of every shared room (ms_engine_share_budgets), then
 * each one's pausing, write and report as a lone object's (step 8 is
 * settle's ms_engine_record_scale of what was written). */
static void sync_group(ms_controller_t *c, ms__item_t **items, size_t n)
{
    ms_round_member_t *members = ms_xcalloc(n, sizeof *members);
    bool *report = ms_xcalloc(n, sizeof *report);
    size_t m = 0;
    ms_err_t err;

    for (size_t i = 0; i < n; i++) {
        report[i] = sync_start(c, items[i], true);
        if (report[i] && takes_share(items[i]))
            members[m++] = (ms_round_member_t){items[i]->key, items[i]->spec, &items[i]->d};
    }
    if ((err = ms_engine_share_budgets(members, m)) != MS_OK) /* keys are unique: never */
        MS_LOG_ERROR("the budgets refused the round", MS_S("error", ms_strerror(err)));
    for (size_t i = 0; i < n; i++) {
        ms__item_t *it = items[i];
        if (report[i] && it->stage == MS__ENTRY_OBSERVED && !it->engine_refused)
            it->wants_write = decide_finish(c, it);
        sync_end(c, it, report[i]);
    }
    free(members);
    free(report);
}

void ms__sync_key(ms_controller_t *c, const char *key)
{
    ms__item_t *it, **group = NULL;
    ms__round_t *round;
    ms__object_t *o;
    size_t idx, n = 1;

    pthread_mutex_lock(&c->objects.lock);
    o = ms__objects_get_locked(&c->objects, key);
    round = o != NULL ? o->pending : NULL;
    if (round == NULL) {
        pthread_mutex_unlock(&c->objects.lock);
        return;
    }
    idx = o->pending_index;
    it = take_locked(c, round, idx);
    /* The first worker to reach a member of a budget group takes the
     * others that still wait; their own keys then find nothing pending. */
    if (round->group_next != NULL && it->entry->stage == MS__ENTRY_OBSERVED &&
        ms__spec_names_budget(&it->entry->spec->spec)) {
        for (size_t j = round->group_next[idx]; j != idx; j = round->group_next[j])
            n++;
        group = ms_xcalloc(n, sizeof *group);
        group[0] = it;
        n = 1;
        for (size_t j = round->group_next[idx]; j != idx; j = round->group_next[j])
            if ((group[n] = take_locked(c, round, j)) != NULL)
                n++;
    }
    pthread_mutex_unlock(&c->objects.lock);
    if (group != NULL) {
        sync_group(c, group, n);
        free(group);
        return;
    }
    sync_end(c, it, sync_start(c, it, false));
}
