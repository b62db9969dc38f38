/*
 * report.c - what one sync tells the world: the MeshAutoscaler's status
 * (only when it changed), Events, the per-object metrics, and in dry-run
 * one decision line on stdout instead of any write.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/status.h"

/* Events go to the queue (events.c), written off the sync path while the
 * lease allows. */
static void event(ms_controller_t *c, ms__item_t *it, const char *type, const char *reason,
                  const char *message)
{
    ms_kube_object_ref_t ref = {MS__MAS_API_VERSION, MS__MAS_KIND, it->ns, it->name, it->uid};

    if (c->queues.events == NULL || c->cfg.dry_run)
        return;
    ms__event_queue_push(c->queues.events, &ref, type, reason, message, it->wall);
}

void ms__warn_once(ms_controller_t *c, ms__item_t *it, const char *reason, const char *message)
{
    if (strcmp(it->state->last_warning, reason) == 0)
        return;
    ms_errf(it->state->last_warning, sizeof it->state->last_warning, MS_OK, "%s", reason);
    MS_LOG_WARN(reason, MS_S("object", it->key), MS_S("message", message));
    event(c, it, "Warning", reason, message);
}

static void fill_decided(ms_controller_t *c, ms__item_t *it, ms_status_input_t *in, char *why,
                         size_t whycap);

/* set_or_remove: the gauge when the value is known, no series when not
 * (a missing metric must not show its last value as if current). */
static void set_or_remove(ms_controller_t *c, int family, const char *const *labels, bool present,
                          double value)
{
    if (present)
        ms_metrics_set(c->metrics.registry, family, labels, value);
    else
        ms_metrics_remove(c->metrics.registry, family, labels);
}

static void metric_series(ms_controller_t *c, ms__item_t *it)
{
    const ms_spec_t *spec = it->spec;
    const ms_observation_t *obs = it->has_obs ? &it->obs.obs : NULL;

    /* A new spec may have renamed metrics or downstreams: start its series
     * afresh. An object's first series (series_generation 0) replace none:
     * the removal walks every series of each family, and the first syncs of
     * 10,000 new objects made that 10,000 x 5 walks of 10,000 (a fifth of
     * the controller's CPU in a mass change, perf). */
    if (it->state->series_generation != 0 && it->state->series_generation != it->generation) {
        const char *obj[] = {it->ns, it->name};
        const int families[] = {c->metrics.fam.metric_value, c->metrics.fam.metric_target,
                                c->metrics.fam.metric_desired, c->metrics.fam.ds_headroom,
                                c->metrics.fam.ds_allowed};
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
            ms_metrics_remove_matching(c->metrics.registry, families[f], obj, 2);
    }
    it->state->series_generation = it->generation;
    for (size_t i = 0; i < spec->nmetrics && i < it->d.nmetrics; i++) {
        const ms_metric_result_t *r = &it->d.metrics[i];
        const char *labels[] = {it->ns, it->name, spec->metrics[i].name};

        set_or_remove(c, c->metrics.fam.metric_value, labels, r->effective.present,
                      r->effective.value);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.metric_target, labels,
                       spec->metrics[i].target);
        set_or_remove(c, c->metrics.fam.metric_desired, labels, r->has_replicas, r->replicas);
    }
    for (size_t i = 0; i < spec->ndownstreams && i < it->d.ndownstreams; i++) {
        const ms_downstream_spec_t *ds = &spec->downstreams[i];
        const ms_downstream_result_t *r = &it->d.downstreams[i];
        const char *labels[] = {it->ns, it->name, ds->name};
        bool known = r->observed && obs != NULL;
        double limit = 0, usage = 0;

        if (known) {
            usage = obs->downstreams[i].usage.value;
            limit = obs->downstreams[i].limit.present ? obs->downstreams[i].limit.value : ds->limit;
        }
        set_or_remove(c, c->metrics.fam.ds_headroom, labels, known,
                      ds->max_utilization * limit - usage);
        set_or_remove(c, c->metrics.fam.ds_allowed, labels, r->observed, r->allowed);
    }
}

static void condition_series(ms_controller_t *c, ms__item_t *it)
{
    static const char *const statuses[] = {"True", "False", "Unknown"};
    ms_condition_reason_t reasons[MS_COND__COUNT];
    ms_status_input_t in;
    char why[512];

    ms_status_input_init(&in);
    in.spec = it->spec;
    fill_decided(c, it, &in, why, sizeof why);
    ms_status_condition_reasons(&in, reasons);
    for (size_t t = 0; t < MS_COND__COUNT && t < sizeof it->state->condition_reported; t++) {
        const char *now = ms_condition_reason_status(reasons[t]);
        unsigned char *was = &it->state->condition_reported[t];
        const char *type = ms_condition_type_name((ms_condition_type_t)t);
        size_t s = 0;

        while (s < sizeof statuses / sizeof statuses[0] && strcmp(statuses[s], now) != 0)
            s++;
        if (s == sizeof statuses / sizeof statuses[0] || *was == s + 1)
            continue; /* unchanged: nothing to touch (most syncs) */
        if (*was != 0)
            ms_metrics_remove(c->metrics.registry, c->metrics.fam.condition,
                              (const char *[]){it->ns, it->name, type, statuses[*was - 1]});
        ms_metrics_set(c->metrics.registry, c->metrics.fam.condition,
                       (const char *[]){it->ns, it->name, type, now}, 1);
        *was = (unsigned char)(s + 1);
    }
}

static void object_metrics(ms_controller_t *c, ms__item_t *it)
{
    const char *obj[] = {it->ns, it->name};
    const char *reason[] = {ms_reason_name(it->d.reason)};
    const char *last[] = {it->ns, it->name, ms_reason_name(it->d.reason)};

    ms_metrics_add(c->metrics.registry, c->metrics.fam.decisions, reason, 1);
    ms_metrics_set(c->metrics.registry, c->metrics.fam.desired, obj, it->desired);
    ms_metrics_set(c->metrics.registry, c->metrics.fam.current, obj, it->d.current_replicas);
    if (it->applied) {
        const char *scale[] = {it->ns, it->name,
                               it->desired > it->d.current_replicas ? "up" : "down"};
        ms_metrics_add(c->metrics.registry, c->metrics.fam.scales, scale, 1);
    }
    if (it->state->reason_reported && it->state->last_reason != it->d.reason) {
        const char *was[] = {it->ns, it->name, ms_reason_name(it->state->last_reason)};
        ms_metrics_remove(c->metrics.registry, c->metrics.fam.last_reason, was);
    }
    ms_metrics_set(c->metrics.registry, c->metrics.fam.last_reason, last, 1);
    it->state->reason_reported = true;
    it->state->last_reason = it->d.reason;
    metric_series(c, it);
    condition_series(c, it);
    ms__metrics_budgets(c, it);
    if (it->beside_hpa && it->hpa_desired >= 0) {
        ms_metrics_set(c->metrics.registry, c->metrics.fam.hpa_desired, obj, it->hpa_desired);
        ms_metrics_set(c->metrics.registry, c->metrics.fam.hpa_difference, obj,
                       it->desired - it->hpa_desired);
    } else {
        ms_metrics_remove(c->metrics.registry, c->metrics.fam.hpa_desired, obj);
        ms_metrics_remove(c->metrics.registry, c->metrics.fam.hpa_difference, obj);
    }
}

/* The sentence about why nothing was written, or NULL. */
static const char *note(ms_controller_t *c, ms__item_t *it, char *buf, size_t cap)
{
    if (it->conflict) {
        ms_errf(buf, cap, MS_OK, "%s also scales %s/%s", it->conflict_with, it->spec->target_kind,
                it->spec->target_name);
        return buf;
    }
    if (it->pause_effect != MS_PAUSE_NONE)
        return ms_pause_effect_sentence(it->pause_effect);
    if (!c->cfg.dry_run && it->spec->dry_run && it->desired != it->d.current_replicas)
        return "spec.dryRun is set, so the target is not written";
    return NULL;
}

static void dry_run_line(ms_controller_t *c, ms__item_t *it, const char *why)
{
    ms_dryrun_record_t r = {0};
    const char *codes[MS_MAX_METRICS] = {0}, *details[MS_MAX_METRICS] = {0};
    ms_buf_t line;

    for (size_t i = 0; it->has_obs && i < it->spec->nmetrics; i++) {
        codes[i] = ms_prom_reason_name(it->obs.metrics[i].reason);
        details[i] = it->obs.metrics[i].detail;
    }
    r.missing_code = codes;
    r.missing_detail = details;

    r.wall_time = it->wall;
    r.time = it->now;
    r.namespace_ = it->ns;
    r.name = it->name;
    r.target_kind = it->spec->target_kind;
    r.target_name = it->spec->target_name;
    r.spec = it->spec;
    r.decision = &it->d;
    r.memory = &it->state->memory;
    r.desired = it->desired;
    r.note = why;
    r.hpa = it->beside_hpa ? it->hpa_key : NULL;
    r.hpa_desired = it->hpa_desired;
    r.hpa_metrics = it->hpa_metrics;
    ms_buf_init(&line, 1u << 20);
    if (ms_dryrun_format(c->cfg.output, &r, &line) == MS_OK) {
        pthread_mutex_lock(&c->out_lock);
        if (c->cfg.output == MS_DRYRUN_TABLE && !c->header_done) {
            fprintf(c->cfg.out, "%s\n", ms_dryrun_table_header());
            c->header_done = true;
        }
        fwrite(line.data, 1, line.len, c->cfg.out);
        fputc('\n', c->cfg.out);
        fflush(c->cfg.out);
        pthread_mutex_unlock(&c->out_lock);
    }
    ms_buf_cleanup(&line);
}

static void report_decision(ms_controller_t *c, ms__item_t *it)
{
    char buf[512], message[1200];
    const char *why = note(c, it, buf, sizeof buf);

    object_metrics(c, it);
    if (c->cfg.dry_run) {
        dry_run_line(c, it, why);
        return;
    }
    if (it->conflict) {
        ms_errf(message, sizeof message, MS_OK, "%s; not writing until it is removed", why);
        ms__warn_once(c, it, "ConflictingAutoscaler", message);
    } else if (it->write_failed) {
        ms_errf(message, sizeof message, MS_OK, "New size: %d; reason: %s; error: %s",
                (int)it->desired, it->explanation, it->write_err.message);
        ms__warn_once(c, it, "FailedRescale", message);
    } else {
        it->state->last_warning[0] = '\0'; /* healthy again: a new problem warns again */
    }
    if (it->applied) {
        if (it->pause_effect != MS_PAUSE_NONE)
            ms_errf(message, sizeof message, MS_OK, "New size: %d; reason: %s; the engine said: %s",
                    (int)it->desired, ms_pause_effect_sentence(it->pause_effect), it->explanation);
        else
            ms_errf(message, sizeof message, MS_OK, "New size: %d; reason: %s", (int)it->desired,
                    it->explanation);
        /* after_decision: from the worker's decision to the write's answer (a
         * scale writer's queue and token wait, 409s decided again included):
         * what issue 28's "every scale write within 15 s of its decision"
         * reads (bench/controller.sh masschange). */
        MS_LOG_INFO("scaled", MS_S("object", it->key), MS_I("from", it->d.current_replicas),
                    MS_I("to", it->desired), MS_S("reason", ms_reason_name(it->d.reason)),
                    MS_D("after_decision", ms_clock_monotonic() - it->started),
                    MS_S("message", it->explanation));
        event(c, it, "Normal", "SuccessfulRescale", message);
    } else {
        MS_LOG_DEBUG("decided", MS_S("object", it->key), MS_I("current", it->d.current_replicas),
                     MS_I("desired", it->desired), MS_S("reason", ms_reason_name(it->d.reason)),
                     MS_S("message", it->explanation));
    }
}

/* The object as the cache holds it now (a deep copy, kept in it->obj and
 * freed with the item); NULL when it was deleted meanwhile. */
static const cJSON *item_object(ms_controller_t *c, ms__item_t *it)
{
    if (it->obj == NULL)
        it->obj = ms_kube_informer_get(c->informers.mas, it->key);
    return it->obj;
}

static const cJSON *previous_status(ms_controller_t *c, ms__item_t *it)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(item_object(c, it), "status");

    return cJSON_IsObject(st) ? st : NULL;
}

void ms__memory_restore(ms_controller_t *c, ms__item_t *it)
{
    bool restored;

    restored = ms_status_restore_memory(previous_status(c, it), it->spec, it->wall, it->now,
                                        it->scale.replicas, &it->state->memory);
    MS_LOG_DEBUG("engine memory rebuilt from status", MS_S("object", it->key),
                 MS_S("last_recommendation", restored ? "restored" : "none"));
}

static void fill_decided(ms_controller_t *c, ms__item_t *it, ms_status_input_t *in, char *why,
                         size_t whycap)
{
    const char *n = note(c, it, why, whycap);

    in->decision = &it->d;
    in->desired = it->desired;
    in->message = it->explanation;
    in->saturation_held = it->saturation_held[0] != '\0' ? it->saturation_held : NULL;
    it->missing[0] = '\0';
    for (size_t i = 0; it->has_obs && i < it->d.nmetrics && i < it->spec->nmetrics; i++)
        if (!it->d.metrics[i].value.present) {
            snprintf(it->missing, sizeof it->missing, "%s: %s %s", it->spec->metrics[i].name,
                     ms_prom_reason_name(it->obs.metrics[i].reason),
                     it->obs.metrics[i].detail ? it->obs.metrics[i].detail : "");
            in->missing = it->missing;
            break;
        }
    in->scaled = it->applied;
    in->write_failed = it->write_failed;
    in->conflict = it->conflict;
    in->paused = it->pause_effect == MS_PAUSE_NO_WRITE;
    in->pause_note =
        it->pause_effect != MS_PAUSE_NONE ? ms_pause_effect_sentence(it->pause_effect) : NULL;
    in->dry_run = c->cfg.dry_run || it->spec->dry_run;
    if (it->beside_hpa && it->hpa_desired >= 0) {
        const char *slash = strchr(it->hpa_key, '/');
        in->hpa_name = slash ? slash + 1 : it->hpa_key;
        in->hpa_desired = it->hpa_desired;
        in->hpa_compare = &it->state->hpa_compare;
        in->hpa_since = it->state->hpa_since;
    }
    if (it->write_failed)
        in->problem = it->write_err.message;
    else if (it->conflict)
        in->problem = n;
}

/* Build the status; patch it only when it changed. */
static void write_status(ms_controller_t *c, ms__item_t *it)
{
    ms_status_input_t in;
    cJSON *status = NULL, *patch = NULL;
    char now[32], why[512];
    bool changed = false;

    ms_time_rfc3339(it->wall > 0 ? it->wall : ms_clock_wall(), false, now, sizeof now);
    ms_status_input_init(&in);
    in.previous = previous_status(c, it);
    in.spec = it->spec;
    in.generation = it->generation;
    in.now = now;
    switch (it->stage) {
    case MS__ENTRY_INVALID:
        in.outcome = MS_STATUS_INVALID_SPEC;
        in.problem = it->problem;
        break;
    case MS__ENTRY_NO_SCALE:
        in.outcome = MS_STATUS_FAILED_GET_SCALE;
        in.problem = it->problem;
        break;
    default:
        in.outcome = MS_STATUS_DECIDED;
        fill_decided(c, it, &in, why, sizeof why);
        break;
    }
    if (ms_status_build(&in, &status, &changed) != MS_OK || !changed ||
        c->queues.status_writer == NULL)
        goto out;
    /* Written off the sync path, lease-checked right before it goes out. */
    patch = ms_status_merge_patch(in.previous, status);
    if (!ms__status_writer_push(c->queues.status_writer, it->ns, it->name,
                                cJSON_DetachItemFromObjectCaseSensitive(patch, "status"))) {
        ms_metrics_add(c->metrics.registry, c->metrics.fam.writes_dropped,
                       (const char *[]){"status"}, 1);
        atomic_store(&it->state->report_again, true); /* the next sync tries again */
    }
out:
    cJSON_Delete(status);
    cJSON_Delete(patch);
}

static void report_full(ms_controller_t *c, ms__item_t *it);

/* ---- the fast path at rest ---- */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    return ms_fnv1a(h, p, n);
}

static uint64_t mix_double(uint64_t h, bool present, double v)
{
    long long milli = present ? llround(v * 1000.0) : LLONG_MIN; /* as the status rounds */

    return mix(h, &milli, sizeof milli);
}

/* Everything of a decided sync that the status, the per-object series and
 * the events show: equal fingerprints on an unchanged object mean nothing
 * to write or update. */
static uint64_t fingerprint(const ms_controller_t *c, const ms__item_t *it)
{
    const ms_decision_t *d = &it->d;
    uint64_t h = MS_FNV1A_BASIS;
    const ms_compare_t *hc = &it->state->hpa_compare;
    /* Of the comparison, what changes when something happens: the counts of
     * syncs ride along with the next write (else every sync would write). */
    int32_t ints[] = {(int32_t)it->generation,
                      d->current_replicas,
                      it->desired,
                      d->reason,
                      d->rate_reason,
                      d->recommendation,
                      d->stabilized_value,
                      d->rate_limited_value,
                      d->downstream_cap,
                      (int32_t)d->metrics_missing,
                      (int32_t)d->failures,
                      (int32_t)it->pause_effect,
                      it->beside_hpa ? it->hpa_desired : -2,
                      hc->max_difference,
                      (int32_t)hc->meshscaler_first,
                      (int32_t)hc->hpa_first,
                      (int32_t)hc->leader};
    bool flags[] = {d->has_recommendation,
                    d->stabilized,
                    d->downstream_bound,
                    d->fallback_used,
                    d->retry_storm,
                    d->held_by_storm,
                    d->saturated,
                    it->conflict,
                    it->applied,
                    it->write_failed,
                    c->cfg.dry_run || it->spec->dry_run};

    h = mix(h, ints, sizeof ints);
    h = mix(h, flags, sizeof flags);
    for (size_t i = 0; i < d->nmetrics; i++) {
        const ms_metric_result_t *m = &d->metrics[i];
        h = mix_double(h, m->value.present, m->value.value);
        h = mix_double(h, m->effective.present, m->effective.value);
        h = mix(h, &m->replicas, sizeof m->replicas);
        h = mix(h, &m->has_replicas, sizeof m->has_replicas);
    }
    for (size_t i = 0; i < d->ndownstreams; i++)
        h = mix(h, &d->downstreams[i], sizeof d->downstreams[i]);
    for (size_t i = 0; i < d->nbudgets; i++) {
        const ms_budget_result_t *b = &d->budgets[i];
        int32_t bi[] = {b->downstream, b->bound, (int32_t)b->members, b->ask, b->grant};
        h = mix(h, bi, sizeof bi);
        h = mix_double(h, true, b->room);
    }
    h = mix(h, it->conflict_with, strlen(it->conflict_with));
    h = mix(h, it->saturation_held, strlen(it->saturation_held));
    h = mix(h, it->pods_settling, strlen(it->pods_settling));
    return h;
}

void ms__report(ms_controller_t *c, ms__item_t *it)
{
    if (it->stage == MS__ENTRY_OBSERVED && !c->cfg.dry_run) {
        uint64_t fp = fingerprint(c, it);
        /* Nothing new since the last full report, and nobody changed the
         * object since (its resourceVersion): count the decision, done. */
        bool again = atomic_exchange(&it->state->report_again, false);
        if (!again && fp == it->state->reported_fingerprint &&
            strcmp(it->rv, it->state->reported_rv) == 0 && !it->write_failed) {
            ms_metrics_add(c->metrics.registry, c->metrics.fam.decisions,
                           (const char *[]){ms_reason_name(it->d.reason)}, 1);
            return;
        }
        it->state->reported_fingerprint = fp;
        snprintf(it->state->reported_rv, sizeof it->state->reported_rv, "%s", it->rv);
    }
    report_full(c, it);
}

static void report_full(ms_controller_t *c, ms__item_t *it)
{
    if (it->stage == MS__ENTRY_OBSERVED) {
        ms_fixbuf_t e;

        ms_fixbuf_init(&e, it->explanation, sizeof it->explanation);
        e.used = ms_decision_explain(it->spec, &it->d, it->explanation, sizeof it->explanation);
        if (it->pods_settling[0] != '\0')
            ms_fixbuf_appendf(&e, "; settling pods left out of %s", it->pods_settling);
        if (it->saturation_held[0] != '\0')
            ms_fixbuf_appendf(&e, "; saturation correction waits for %s", it->saturation_held);
    }
    char message[MS_ERRBUF_SIZE + 64];

    switch (it->stage) {
    case MS__ENTRY_INVALID:
        ms__warn_once(c, it, "InvalidSpec", it->problem);
        ms_metrics_add(c->metrics.registry, c->metrics.fam.sync_errors,
                       (const char *[]){"InvalidSpec"}, 1);
        break;
    case MS__ENTRY_NO_SCALE:
        ms_errf(message, sizeof message, MS_OK, "unable to get the target's current scale: %s",
                it->problem);
        ms__warn_once(c, it, "FailedGetScale", message);
        ms_metrics_add(c->metrics.registry, c->metrics.fam.sync_errors,
                       (const char *[]){"FailedGetScale"}, 1);
        break;
    case MS__ENTRY_OBSERVED:
        report_decision(c, it);
        if (it->write_failed)
            ms_metrics_add(c->metrics.registry, c->metrics.fam.sync_errors,
                           (const char *[]){"FailedRescale"}, 1);
        break;
    default:
        return;
    }
    if (!c->cfg.dry_run)
        write_status(c, it);
}
