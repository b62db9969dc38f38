/*
 * controller.h - `meshscaler controller`: watch MeshAutoscalers, and every
 * sync period read each target's scale, observe its metrics through one
 * batched Prometheus tick, decide with the engine, scale, and report
 * (status, events, /metrics) — or, in dry-run, print what it would do.
 *
 * Data flow (docs/ARCHITECTURE.md): watch -> informer cache -> work queue of
 * "namespace/name" keys -> workers (reconcile.c) -> Prometheus tick ->
 * engine -> scale subresource -> status and events.
 *
 * Threads: ms_controller_run() runs on the caller's thread and starts the
 * informers' threads, the elector's thread, the HTTP server's thread and
 * cfg->concurrent_syncs workers; it returns after all of them stopped.
 * ms_controller_stop() may be called from any thread (not from a signal
 * handler: set a flag there and let the caller's thread call it, or pass
 * that flag to ms_controller_run()).
 *
 * Ownership: ms_controller_new() copies every string of the config; the
 * controller owns every client it builds. `out` is borrowed until free.
 */
#ifndef MESHSCALER_CONTROLLER_H
#define MESHSCALER_CONTROLLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "meshscaler/dryrun.h"
#include "meshscaler/error.h"
#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"

typedef struct {
    /* Kubernetes */
    const char *kubeconfig; /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
    const char *context;    /* NULL: current-context */
    const char *namespace_; /* NULL or "": every namespace */
    double kube_qps;        /* 0: 300; one bucket for every request but the lease's */
    int kube_burst;         /* 0: 600 */
    /* Prometheus: url and auth (copied); presets (workload label, window) */
    ms_prom_options_t prom;
    ms_prom_preset_options_t presets;
    /* Who may run their own PromQL (metrics and guardrails): check each
     * template with ms_prom_user_query_check(user_queries, ...) before
     * expanding it. 0 (MS_USER_QUERIES_ALLOW): everything, as before. */
    ms_user_queries_t user_queries;
    /* A round's Prometheus tick: its deadline (0: the smaller of the sync
     * period and 10 s) and the bytes of all its answers (0: 64 MiB). */
    double round_timeout;
    size_t round_max_bytes;
    /* The loop */
    double sync_period;      /* seconds; 0: 15. spec.syncPeriodSeconds overrides */
    int concurrent_syncs;    /* workers; 0: 4 */
    double shutdown_timeout; /* seconds to finish in-flight syncs; 0: 10 */
    /* Leader election */
    bool leader_elect;
    const char *leader_election_id;        /* Lease name; NULL: "meshscaler" */
    const char *leader_election_namespace; /* NULL: the client's namespace */
    const char *identity;                  /* NULL: "<hostname>_<pid>" */
    /* Endpoints ("HOST:PORT", ":PORT", "0" off) */
    const char *metrics_addr; /* NULL: ":8080" */
    const char *health_addr;  /* NULL: ":8081" */
    /* Secure metrics: HTTPS and TokenReview + SubjectAccessReview on /metrics */
    bool metrics_secure;
    const char *metrics_cert_dir; /* tls.crt, tls.key; NULL or "": self-signed */
    /* Dry-run: no writes of any kind; one line per decision on out */
    bool dry_run;
    ms_dryrun_format_t output;
    FILE *out; /* NULL: stdout */
} ms_controller_config_t;

typedef struct ms_controller ms_controller_t;

/* Load the Kubernetes configuration and build the clients; nothing runs
 * yet. NULL with the reason in errbuf (a bad kubeconfig, Prometheus URL or
 * option). */
ms_controller_t *ms_controller_new(const ms_controller_config_t *cfg, char *errbuf, size_t errlen);

/* Run until *stop turns true (polled every 100 ms; may be NULL) or
 * ms_controller_stop(), then shut down cleanly: stop taking work, let
 * in-flight syncs finish within shutdown_timeout, release the lease, stop
 * the server. Returns MS_OK after a clean shutdown; MS_ERR_IO (errbuf set)
 * when something could not start (an address in use, ...). */
ms_err_t ms_controller_run(ms_controller_t *c, const atomic_bool *stop, char *errbuf,
                           size_t errlen);

/* Ask a running controller to stop. Thread-safe, idempotent. */
void ms_controller_stop(ms_controller_t *c);

/* The bound /metrics and health ports (-1 when off or not running). */
int ms_controller_metrics_port(const ms_controller_t *c);
int ms_controller_health_port(const ms_controller_t *c);

/* NULL does nothing. Must not be running. */
void ms_controller_free(ms_controller_t *c);

#endif
