/*
 * replay.h - `meshscaler replay`: what meshscaler would have decided over a
 * past time range, from Prometheus' history.
 *
 * The queries are the controller's own: a tick (prom_sources.h) plans them
 * for the one object, and its runner answers each step from range queries
 * (one per query per chunk of steps, a range query being the same query
 * evaluated at every step). So each step sees exactly what the controller's
 * instant queries would have seen then, through the same preset decoding and
 * the same engine.
 *
 * The replay runs meshscaler's own replica count, a closed loop as `decide`
 * runs a scenario: each step starts from the previous step's desired count
 * (the first from the replicas the target had, or start_replicas). When the
 * target's replicas are in Prometheus (replicas_query; kube-state-metrics by
 * default), a per-pod reading (Utilization and Value targets) is spread over
 * meshscaler's count instead of the actual one: value x actual / meshscaler's,
 * the load conserved; a total (AverageValue) stays as read. Without them the
 * readings are taken as they were.
 *
 * Ownership: everything the options point at is borrowed for the call; what
 * a tick points at lives until the callback returns.
 */
#ifndef MESHSCALER_REPLAY_H
#define MESHSCALER_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "meshscaler/buf.h"
#include "meshscaler/engine.h"
#include "meshscaler/error.h"
#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/spec.h"

/* Prometheus answers at most 11,000 points per series and range query. */
#define MS_REPLAY_DEFAULT_CHUNK_STEPS 1000
#define MS_REPLAY_MAX_STEPS 1000000
/* The memory budget: the answers to one chunk's range queries together, as
 * read (their decoded points take about as much again: 16 bytes a point,
 * whose text with a 10-digit time takes at least 16). */
#define MS_REPLAY_DEFAULT_MAX_BYTES (64u * 1024u * 1024u)

typedef struct {
    const ms_spec_t *spec;      /* validated, with scaleTargetRef */
    const char *namespace_name; /* the MeshAutoscaler's */
    const char *pod_regex;      /* {{podRegex}}; NULL: the target kind's pod names */
    double from, to, step;      /* unix seconds; from <= to, step > 0 */
    /* PromQL (a template) for the replicas the target had; NULL: the
     * kube-state-metrics series of the kind (Deployment, StatefulSet), else
     * none. "" : none. */
    const char *replicas_query;
    int32_t start_replicas; /* the first step's count when not read; 0: minReplicas */
    ms_prom_preset_options_t presets;
    size_t chunk_steps; /* steps per range query; 0: MS_REPLAY_DEFAULT_CHUNK_STEPS */
    size_t max_bytes;   /* the memory budget; 0: MS_REPLAY_DEFAULT_MAX_BYTES */
    /* Called after each chunk is read (may be NULL): progress to `upto`. */
    void (*progress)(void *ctx, double upto, double from, double to);
    void *progress_ctx;
} ms_replay_options_t;

typedef struct {
    double time;
    int32_t actual;                  /* the replicas the target had; -1: not known */
    const ms_observation_t *read;    /* the values as Prometheus had them */
    const ms_observation_t *obs;     /* what the engine decided on (spread over
                                        meshscaler's count; now and replicas set) */
    const ms_prom_object_obs_t *why; /* why a value is missing */
    const ms_decision_t *decision;
    const ms_engine_memory_t *memory; /* after the decision */
} ms_replay_tick_t;

/* One call per step, in time order; non-zero stops the replay (MS_ERR_IO). */
typedef int (*ms_replay_tick_fn)(void *ctx, const ms_replay_tick_t *tick);

typedef struct {
    size_t steps;
    double step;
    double replica_seconds;             /* meshscaler's desired count over time */
    double actual_replica_seconds;      /* the target's, over the steps it was known */
    double meshscaler_same_span;        /* meshscaler's, over those same steps */
    size_t known_steps;                 /* steps with the actual count known */
    double above_target_seconds;        /* some metric above its target (past tolerance),
                                           at meshscaler's count */
    double actual_above_target_seconds; /* the same as read, at the actual count */
    unsigned scale_events;              /* steps where meshscaler changed its count */
    unsigned actual_changes;            /* changes of the actual count */
    double first_scale_up;              /* NAN: none */
    double first_actual_scale_up;       /* NAN: none */
    size_t blind_steps;                 /* every metric missing */
} ms_replay_summary_t;

/* Run the replay. MS_ERR_INVALID (errbuf) for bad options or a template
 * that does not expand; MS_ERR_IO when fn stopped it; MS_ERR_TOOLARGE when
 * a chunk's answers exceed the memory budget (errbuf names the budget and
 * how to narrow the range); MS_ERR_NOMEM. Values Prometheus cannot give are
 * missing in the steps, with their reasons, as in the controller: a failed
 * chunk is no error of the replay. */
ms_err_t ms_replay_run(ms_prom_client_t *client, const ms_replay_options_t *o, ms_replay_tick_fn fn,
                       void *ctx, ms_replay_summary_t *summary, char *errbuf, size_t errlen);

/* ---- output (output.c): `meshscaler replay -o table|json|scenario` ----
 * Each writes to `to` or returns a new cJSON tree the caller owns (NULL
 * when out of memory); all borrow their arguments for the call. */

/* The table's header line: time, replicas, one column per metric, reason. */
void ms_replay_table_header(FILE *to, const ms_spec_t *spec);
/* One table line for tick: each metric as value/target, or why it is missing. */
void ms_replay_table_row(FILE *to, const ms_spec_t *spec, const ms_replay_tick_t *tick);
/* decide's JSON line for tick (decision_json.h) with actualReplicas. */
void ms_replay_json_line(FILE *to, const ms_spec_t *spec, const ms_replay_tick_t *tick);
/* A decide scenario tick of exactly what the engine was given, so that
 * `meshscaler decide` on the scenario reproduces the replay's decisions. */
cJSON *ms_replay_scenario_tick(const ms_spec_t *spec, const ms_replay_tick_t *tick);
/* The summary in words (a blank line first). */
void ms_replay_summary_print(FILE *to, const ms_replay_summary_t *s);
/* The summary as {"summary": {...}}, the json output's last line. */
cJSON *ms_replay_summary_json(const ms_replay_summary_t *s);

/* ---- the chart ---- */

typedef struct {
    double time;
    int32_t desired; /* meshscaler's */
    int32_t actual;  /* -1: not known */
    /* Per metric: the reading over its target in percent at meshscaler's
     * count (NAN: missing), and the same as read at the actual count. */
    double load[MS_MAX_METRICS];
    double actual_load[MS_MAX_METRICS];
} ms_replay_point_t;

/* What one tick contributes to the chart. */
void ms_replay_point(const ms_spec_t *spec, const ms_replay_tick_t *tick, ms_replay_point_t *out);

/* An SVG of the points: each metric against its target (100%), and the
 * replicas meshscaler would have run beside those the target had. Appends
 * to out; MS_ERR_TOOLARGE, MS_ERR_NOMEM from the buffer. Pure. */
ms_err_t ms_replay_svg(const ms_spec_t *spec, const char *title, const ms_replay_point_t *points,
                       size_t n, ms_buf_t *out);

#endif
