/*
 * controller_options.h - the settings of `meshscaler controller`: the flags
 * operators know from controller-runtime projects, and the same settings
 * from a YAML file (--config), flags winning over the file.
 *
 * Flags take `--flag value` or `--flag=value`; booleans take `--flag`,
 * `--flag=true` or `--flag=false`. Durations are written like Go's
 * time.ParseDuration ("500ms", "15s", "1m30s", "1h"). Every refusal is one
 * line naming the flag (`--sync-period: "15x" is not a duration (want e.g.
 * 15s, 1m)`) or the file and key (`config.yaml: syncPeriod: ...`).
 *
 * The config file is a YAML mapping whose keys are the flag names in
 * camelCase without dashes (the list: ms_controller_options_help(), or the
 * table in controller_options.c):
 *
 *   kubeconfig: /etc/kube/config       prometheusUrl: http://prom:9090
 *   context: prod                      prometheusBearerTokenFile: /var/run/token
 *   namespace: shop                    prometheusBasicAuthUsername: meshscaler
 *   syncPeriod: 15s                    prometheusBasicAuthPasswordFile: /etc/pw
 *   leaderElect: true                  prometheusHeaders: ["X-Scope-OrgID: a"]
 *   leaderElectionId: meshscaler       prometheusCaFile: /etc/ca.pem
 *   leaderElectionNamespace: ops       prometheusInsecureSkipVerify: false
 *   metricsBindAddress: ":8080"        prometheusTimeout: 10s
 *   healthProbeBindAddress: ":8081"    kubeApiQps: 300
 *   logFormat: json                    kubeApiBurst: 600
 *   logLevel: info                     dryRun: false
 *   output: table                      concurrentSyncs: 4
 *   userQueries: namespaced
 *   metricsSecure: true                metricsCertDir: /etc/meshscaler/metrics-tls
 *
 * Unknown or repeated keys are errors (a typo must not silently fall back to
 * a default). A list flag given on the command line replaces the file's
 * list rather than extending it.
 *
 * Ownership: the options own every string they point to; release them with
 * ms_controller_options_cleanup(). Not thread-safe; parse once at start.
 */
#ifndef MESHSCALER_CONTROLLER_OPTIONS_H
#define MESHSCALER_CONTROLLER_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/error.h"
#include "meshscaler/log.h"
#include "meshscaler/prom.h"

typedef enum { MS_OUTPUT_TABLE = 0, MS_OUTPUT_JSON } ms_output_format_t;

/* The namespace a pod's service account runs in; the default of
 * --leader-election-namespace when the file exists. */
#define MS_CONTROLLER_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
#define MS_CONTROLLER_DEFAULT_LEASE_NAMESPACE "meshscaler-system"

/* Most --prometheus-header values. */
#define MS_CONTROLLER_MAX_HEADERS 32

typedef struct {
    char *config_file; /* --config; NULL when none */

    /* Kubernetes */
    char *kubeconfig;    /* NULL: $KUBECONFIG, in-cluster, then ~/.kube/config */
    char *context;       /* NULL: the kubeconfig's current context */
    char *namespace_;    /* NULL: every namespace */
    double kube_api_qps; /* > 0, or -1 for no client-side limit */
    int kube_api_burst;  /* >= 1 */

    /* Prometheus (maps onto ms_prom_options_t) */
    char *prometheus_url; /* required */
    char *prometheus_bearer_token_file;
    char *prometheus_basic_auth_username;      /* set together with ... */
    char *prometheus_basic_auth_password_file; /* ... this; the file is read by the caller */
    char **prometheus_headers;                 /* "Name: value", nprometheus_headers of them */
    size_t nprometheus_headers;
    char *prometheus_ca_file;
    bool prometheus_insecure_skip_verify;
    double prometheus_timeout;            /* seconds, per query */
    size_t prometheus_max_response_bytes; /* one answer; default 1 MiB */
    size_t prometheus_max_round_bytes;    /* all answers of a round; default 64 MiB */
    double prometheus_round_timeout;      /* a round's tick; 0: min(sync period, 10 s) */
    /* --user-queries: who may run their own PromQL with these credentials
     * (ms_prom_user_query_check()). Default MS_USER_QUERIES_ALLOW, for
     * compatibility with earlier releases. */
    ms_user_queries_t user_queries;

    /* The loop */
    double sync_period;   /* seconds, 1..3600 */
    int concurrent_syncs; /* workers, 1..256 */
    bool dry_run;
    ms_output_format_t output; /* dry-run decision lines on stdout */

    /* Leader election */
    bool leader_elect;
    char *leader_election_id;
    char *leader_election_namespace;

    /* Endpoints: "HOST:PORT", ":PORT", or "0" (off), as server.h takes them */
    char *metrics_bind_address;
    char *health_probe_bind_address;
    /* --metrics-secure: /metrics over HTTPS, only for callers whose bearer
     * token passes a TokenReview and a SubjectAccessReview (get /metrics).
     * Off by default: the chart's ServiceMonitor and plain Prometheus
     * set-ups scrape over HTTP. */
    bool metrics_secure;
    char *metrics_cert_dir; /* tls.crt + tls.key; NULL: a self-signed certificate */

    /* Logging */
    ms_log_format_t log_format;
    ms_log_level_t log_level;

    bool help; /* --help or -h: print ms_controller_options_help(), exit 0 */
} ms_controller_options_t;

/* Set every default (no file is read: leader_election_namespace is
 * MS_CONTROLLER_DEFAULT_LEASE_NAMESPACE here; parse resolves the in-cluster
 * file). Never fails; allocation failure aborts. */
void ms_controller_options_init(ms_controller_options_t *opts);

/* Parse argv[0..argc) (argv[0] is the first flag, not the program or the
 * subcommand name) into *opts, which this initialises first: defaults, then
 * the --config file, then the flags. With --help, returns MS_OK at once with
 * opts->help set and nothing validated.
 * On failure returns MS_ERR_INVALID (MS_ERR_IO when the config file cannot
 * be read) with one line in errbuf; *opts then holds whatever was parsed and
 * must still be cleaned up. */
ms_err_t ms_controller_options_parse(int argc, char *const *argv, ms_controller_options_t *opts,
                                     char *errbuf, size_t errlen);

/* Free every string *opts owns and reset it to zeros. NULL does nothing. */
void ms_controller_options_cleanup(ms_controller_options_t *opts);

/* The --help text (several lines ending in a newline); static. */
const char *ms_controller_options_help(void);

/* The namespace named in the file at path (whitespace trimmed) into
 * buf[cap]; false when the file is absent, unreadable, empty or too long.
 * parse uses it with MS_CONTROLLER_NAMESPACE_FILE. */
bool ms_controller_options_namespace_file(const char *path, char *buf, size_t cap);

#endif
