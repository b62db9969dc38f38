/*
 * prom_sources.h - meshscaler's metric sources on top of the Prometheus
 * client: query templates, the built-in presets (SidecarConcurrency for
 * envoy, haproxy and linkerd; SidecarCPU) and the per-tick batch that turns
 * many MeshAutoscaler objects into few queries and back into one
 * ms_observation_t per object. docs/metrics.md documents every preset's
 * PromQL and the series it expects.
 *
 * Batching: each built-in source kind costs one query per tick for every
 * object, grouped by (namespace, workload), restricted to the objects'
 * namespaces, and split back per object; user
 * PromQL (metrics and guardrails) is expanded per object, deduplicated
 * (identical text runs once) and run concurrently, bounded by the client's
 * max_in_flight.
 *
 * Ownership: ms_prom_tick_t owns its queries, results and detail strings;
 * the `detail` pointers it hands out stay valid until the next
 * ms_prom_tick_run() or ms_prom_tick_free() on that tick. Objects and their
 * specs are borrowed for the duration of the call.
 *
 * Threads: a tick belongs to one thread at a time; template functions are
 * reentrant.
 *
 * Implemented in src/prom/ by template.c (templates), presets.c (the
 * built-in queries) and tick.c (one tick).
 */
#ifndef MESHSCALER_PROM_SOURCES_H
#define MESHSCALER_PROM_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/engine.h"
#include "meshscaler/error.h"
#include "meshscaler/prom.h"
#include "meshscaler/spec.h"

/* ---- templates ---- */

typedef struct {
    const char *namespace_name; /* {{namespace}} */
    const char *name;           /* {{name}}: scaleTargetRef.name */
    const char *kind;           /* {{kind}}: scaleTargetRef.kind */
    const char *pod_regex;      /* {{podRegex}}: a regex already (ms_prom_pod_regex) */
} ms_prom_template_vars_t;

/* Expand {{namespace}}, {{name}}, {{kind}} and {{podRegex}} in a PromQL
 * template. Placeholders must sit inside string literals; each value is
 * escaped for the literal's quoting ("...", '...'; a `...` raw string cannot
 * hold a backquote), and {{namespace}}, {{name}} and {{kind}} are also
 * regex-escaped when the literal follows =~ or !~. A NULL namespace, name
 * or kind expands to ""; a NULL podRegex means the pods are not known, and a
 * template that uses it is refused. On success *out is a new string the
 * caller frees; on failure MS_ERR_INVALID with a one-line reason and *out
 * untouched. */
ms_err_t ms_prom_template_expand(const char *tmpl, const ms_prom_template_vars_t *vars, char **out,
                                 char *errbuf, size_t errlen);

/* s with RE2 metacharacters escaped (Go's regexp.QuoteMeta). Caller frees;
 * aborts on allocation failure. */
char *ms_prom_regex_escape(const char *s);

/* The value of {{podRegex}}: the pod names, each regex-escaped, joined by
 * "|" (Prometheus anchors label regexes itself): "web-1|db\\.0" in C terms.
 * n == 0 gives "", which only matches series without a pod label.
 * Caller frees; aborts on allocation failure. */
char *ms_prom_pod_regex(const char *const *pods, size_t n);

/* ---- presets ---- */

typedef enum {
    MS_PROM_KIND_ENVOY = 0,
    MS_PROM_KIND_HAPROXY,
    MS_PROM_KIND_LINKERD,
    MS_PROM_KIND_CPU,
    MS_PROM_KIND__COUNT
} ms_prom_kind_t;

/* "envoy", "haproxy", "linkerd", "cpu"; static. */
const char *ms_prom_kind_name(ms_prom_kind_t kind);

typedef struct {
    /* The label naming a pod's workload. NULL or "": derived from the pod
     * name (Deployment "<name>-<hash>-<id>", StatefulSet "<name>-<n>") into
     * the label ms_workload. Otherwise a label every preset series carries
     * (e.g. "app" from a pod-label relabel rule). */
    const char *workload_label;
    const char *rate_window; /* for rate(): NULL: "2m" */
    double max_age;          /* seconds; a workload whose newest sample is older is STALE; 0: off */
    /* Workloads a preset answer may cover: its scope is namespaces, not
     * names, so a tick of a few objects still reads every workload of their
     * namespaces. Its answer cap (4 KiB per workload) counts the larger of
     * this and the tick's own objects of the kind; 0: the tick's. */
    size_t answer_workloads;
} ms_prom_preset_options_t;

/* What one preset query covers. Strings are borrowed for the call. */
typedef struct {
    const char *const *containers; /* MS_PROM_KIND_CPU: the sidecar containers (>= 1) */
    size_t ncontainers;
    const char *const *namespaces; /* only these namespaces; 0 (or too many): every one */
    size_t nnamespaces;
} ms_prom_preset_scope_t;

/* The one batched query of a preset kind over scope (NULL: everything).
 * *out is a new string. MS_ERR_INVALID for a bad workload label or rate
 * window, or a CPU preset without containers. */
ms_err_t ms_prom_preset_query(ms_prom_kind_t kind, const ms_prom_preset_options_t *opts,
                              const ms_prom_preset_scope_t *scope, char **out, char *errbuf,
                              size_t errlen);

/* The label the preset queries group by (workload_label or "ms_workload"). */
const char *ms_prom_preset_workload_label(const ms_prom_preset_options_t *opts);

/* ---- one tick ---- */

typedef struct {
    const ms_spec_t *spec;      /* borrowed; validated */
    const char *namespace_name; /* the MeshAutoscaler's (and its target's) namespace */
    const char *name;           /* scaleTargetRef.name */
    const char *kind;           /* scaleTargetRef.kind */
    const char *pod_regex;      /* for {{podRegex}}; NULL: the pods are not known, and
                                   every query using it is missing (MS_PROM_TEMPLATE) */
    const char *workload;       /* value of the workload label; NULL: name */
} ms_prom_object_t;

typedef struct {
    ms_prom_reason_t reason; /* MS_PROM_OK when the sample is present */
    const char *detail;      /* one line, never NULL; borrowed from the tick */
} ms_prom_why_t;

/* What one object observed. obs carries the samples only: its now and
 * replica counts are left 0 for the caller. */
typedef struct {
    ms_observation_t obs;
    ms_prom_why_t metrics[MS_MAX_METRICS];
    ms_prom_why_t downstream_usage[MS_MAX_DOWNSTREAMS];
    ms_prom_why_t downstream_limit[MS_MAX_DOWNSTREAMS];
    ms_prom_why_t retry_share;
    ms_prom_why_t saturation_admitted[MS_MAX_METRICS];
    ms_prom_why_t saturation_rejected[MS_MAX_METRICS];
} ms_prom_object_obs_t;

typedef struct {
    size_t objects;
    size_t builtin_queries; /* one per preset kind in use */
    size_t user_refs;       /* user PromQL references before deduplication */
    size_t user_queries;    /* distinct expanded user queries sent */
    size_t queries_sent;    /* builtin_queries + user_queries */
    size_t failed_queries;  /* queries whose result was not OK */
    double seconds;         /* wall time of ms_prom_tick_run */
} ms_prom_tick_stats_t;

typedef struct ms_prom_tick ms_prom_tick_t;

/* Fair shares of a round (docs/controller.md, "Fair shares of the round").
 * The presets run first, outside every share, with a reserve of the bytes.
 * The user queries (metrics and guardrails) are owned by their object, at
 * most MS_PROM_USER_QUERIES_PER_OBJECT distinct ones per object, guardrails
 * first (the rest are not sent: OVER_SHARE); a text is one query per
 * namespace, never shared across namespaces (nobody can make another
 * tenant's query theirs); they are sent round-robin across namespaces,
 * and across the objects of a namespace, and each namespace holds at most
 * its share of the slots. Every namespace with user queries gets an equal
 * share of the round's query time (slots x seconds) and of the bytes left
 * after the presets' reserve, split equally among its objects and, within
 * an object, among its queries: a query past its share is stopped and read
 * as OVER_SHARE by its owner only, with a detail naming the share. */
#define MS_PROM_USER_QUERIES_PER_OBJECT 32
/* The floors of one user query's shares: with very many objects an equal
 * split would stop even cheap queries; the round's deadline and byte budget
 * then stop what runs late. */
#define MS_PROM_MIN_QUERY_SECONDS 1.0
#define MS_PROM_MIN_ANSWER_BYTES 4096u
/* The presets' reserve: their answer caps, at most this part of the bytes. */
#define MS_PROM_PRESET_RESERVE_DIVISOR 4u

typedef struct {
    double seconds;   /* from the start of the run to the round's deadline; 0: no time shares */
    size_t slots;     /* queries in flight at once; 0: 8 */
    size_t max_bytes; /* the round's byte budget; 0: no byte shares */
    size_t max_body;  /* the client's answer cap (a preset's reserve is at least it); 0: 1 MiB */
    size_t max_user_queries; /* per object; 0: MS_PROM_USER_QUERIES_PER_OBJECT */
} ms_prom_round_limits_t;

/* What one namespace's user queries cost in the last run. */
typedef struct {
    const char *namespace_name; /* borrowed from the tick */
    size_t objects;             /* objects that own user queries */
    size_t queries;             /* distinct user queries sent */
    size_t over_share;          /* values read as OVER_SHARE (cap, time or bytes) */
    double seconds;             /* the queries' time, summed */
    size_t bytes;               /* their answers' bytes */
} ms_prom_namespace_cost_t;

/* New tick with the preset options (copied). NULL only on a bad option,
 * with the reason in errbuf. */
ms_prom_tick_t *ms_prom_tick_new(const ms_prom_preset_options_t *opts, char *errbuf, size_t errlen);
/* NULL does nothing. */
void ms_prom_tick_free(ms_prom_tick_t *tick);

/* Observe n objects (every query is evaluated at Prometheus's own now: a
 * clock skew between the two never hides or ages a sample). Fills out[0..n), or nothing when out is
 * NULL (read each object later with ms_prom_tick_observe). Returns MS_OK unless the batch could not
 * run at all (MS_ERR_NOMEM, MS_ERR_IO); per-value failures are in out. The answers are digested and
 * freed before it returns: the tick keeps a few bytes per object until the next run or
 * ms_prom_tick_free. A preset query may read 4 KiB of answer per workload it may cover (the
 * options' answer_workloads, at least its objects of the kind), or the client's max_body when that
 * is larger. */
ms_err_t ms_prom_tick_run(ms_prom_tick_t *tick, ms_prom_client_t *client,
                          const ms_prom_object_t *objs, size_t n, ms_prom_object_obs_t *out);
/* The same within bounds (prom.h: a deadline, a cancel flag, a byte budget
 * for all answers): what is cut off is missing with its reason. NULL: none. */
ms_err_t ms_prom_tick_run_bounded(ms_prom_tick_t *tick, ms_prom_client_t *client,
                                  const ms_prom_object_t *objs, size_t n,
                                  const ms_prom_run_options_t *bounds, ms_prom_object_obs_t *out);

/* Answers the planned queries of a tick: fills queries[i].result for every
 * i < n; returns MS_OK unless the batch failed as a whole. The tick's own
 * runner is ms_prom_run_bounded on a client; unit tests answer from
 * recorded responses, and `meshscaler replay` from range queries. */
typedef ms_err_t (*ms_prom_runner_fn)(void *ctx, ms_prom_query_t *queries, size_t n);

/* The round the next runs share out (ms_prom_tick_run_bounded sets it from
 * its bounds and client). Copied. */
void ms_prom_tick_set_round(ms_prom_tick_t *tick, const ms_prom_round_limits_t *limits);

/* ms_prom_tick_run with another runner. */
ms_err_t ms_prom_tick_run_with(ms_prom_tick_t *tick, ms_prom_runner_fn run, void *ctx,
                               const ms_prom_object_t *objs, size_t n, ms_prom_object_obs_t *out);

/* What objs[i] observed in the last run; objs must be the array that run
 * planned (the same specs and names, still alive). Details are borrowed from
 * the tick. Reads the tick only: readers on several threads may call it
 * at once, never during a run. */
void ms_prom_tick_observe(const ms_prom_tick_t *tick, const ms_prom_object_t *objs, size_t i,
                          ms_prom_object_obs_t *out);

/* Figures of the last run. */
void ms_prom_tick_stats(const ms_prom_tick_t *tick, ms_prom_tick_stats_t *out);

/* The namespaces whose user queries cost most in the last run (by seconds,
 * then bytes), at most max of them into out; returns how many. */
size_t ms_prom_tick_costs(const ms_prom_tick_t *tick, ms_prom_namespace_cost_t *out, size_t max);

#endif
