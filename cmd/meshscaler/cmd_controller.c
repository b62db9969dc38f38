/*
 * cmd_controller.c - `meshscaler controller [flags]`: parse the flags and
 * the config file (controller_options.h), set up logging and signals, and
 * run the controller (controller.h) until SIGTERM or SIGINT.
 *
 * Exit codes: 0 after a clean shutdown, 1 when the controller cannot start
 * or stops on an error, 2 for bad flags or configuration.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/buf.h"
#include "meshscaler/controller.h"
#include "meshscaler/controller_options.h"
#include "meshscaler/log.h"

static const char more_help[] =
    "\n"
    "Dry-run output (stdout; logs always go to stderr):\n"
    "  table: a header once, then one line per decision:\n"
    "    TIME NAMESPACE/NAME TARGET CURRENT -> DESIRED REASON METRICS [(note)]\n"
    "    TIME is RFC 3339 UTC; TARGET is Kind/name; METRICS is name=value(asks N),...\n"
    "    or name=missing(REASON); the note says why a write would not happen.\n"
    "  json: JSON Lines, the fields of `meshscaler decide` (time, currentReplicas,\n"
    "    desiredReplicas, recommendation, stabilized, reason, metrics, message, state,\n"
    "    ...) plus timestamp, namespace, name, target (\"Kind/name\"), and\n"
    "    appliedReplicas/note when pausing changes what would be written, and\n"
    "    missing: {metric: why} for missing metrics.\n"
    "  A scale that is not applied is not remembered as a scale event, so each line\n"
    "  is what meshscaler would do now from the target's real state.\n"
    "\n"
    "Annotations on a MeshAutoscaler:\n"
    "  autoscaling.meshscaler.io/paused: \"true\"            decide and report, never scale\n"
    "  autoscaling.meshscaler.io/paused-replicas: \"N\"      hold the target at N\n"
    "  autoscaling.meshscaler.io/paused-scale-in: \"true\"   never scale in\n"
    "  autoscaling.meshscaler.io/paused-scale-out: \"true\"  never scale out\n"
    "\n"
    "SIGTERM/SIGINT: stop taking work, finish in-flight syncs (10 s at most),\n"
    "release the lease, exit 0. See docs/controller.md.\n";

static atomic_bool stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_requested, true); /* nothing else: async-signal-safe */
}

static int install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    sa.sa_handler = SIG_IGN; /* a closed stdout is a write error, not a death */
    return sigaction(SIGPIPE, &sa, NULL);
}

/* The password file's first line, without its newline; caller frees. */
static char *read_password(const char *path, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    ms_buf_t b;
    char *pw = NULL;

    if (f == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_IO,
                "--prometheus-basic-auth-password-file: cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    ms_buf_init(&b, 4096);
    if (ms_buf_read_stream(&b, f) == MS_OK) {
        size_t n = b.len;
        while (n > 0 && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r'))
            n--;
        pw = strndup(b.data ? b.data : "", n);
    } else {
        ms_errf(errbuf, errlen, MS_ERR_IO, "--prometheus-basic-auth-password-file: cannot read %s",
                path);
    }
    ms_buf_cleanup(&b);
    fclose(f);
    return pw;
}

static void to_config(const ms_controller_options_t *o, ms_controller_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kubeconfig = o->kubeconfig;
    cfg->context = o->context;
    cfg->namespace_ = o->namespace_;
    cfg->kube_qps = o->kube_api_qps;
    cfg->kube_burst = o->kube_api_burst;
    cfg->prom.url = o->prometheus_url;
    cfg->prom.bearer_token_file = o->prometheus_bearer_token_file;
    cfg->prom.basic_user = o->prometheus_basic_auth_username;
    cfg->prom.headers = (const char *const *)o->prometheus_headers;
    cfg->prom.nheaders = o->nprometheus_headers;
    cfg->prom.tls.ca_file = o->prometheus_ca_file;
    cfg->prom.tls.insecure_skip_verify = o->prometheus_insecure_skip_verify;
    cfg->prom.timeout_ms = (long)(o->prometheus_timeout * 1000);
    cfg->prom.max_body = o->prometheus_max_response_bytes;
    /* Probe again at least once a sync period: a Prometheus that is back
     * must not leave every object blind for a minute. */
    cfg->prom.breaker_max_backoff = o->sync_period;
    cfg->round_max_bytes = o->prometheus_max_round_bytes;
    cfg->round_timeout = o->prometheus_round_timeout;
    cfg->sync_period = o->sync_period;
    cfg->concurrent_syncs = o->concurrent_syncs;
    cfg->leader_elect = o->leader_elect;
    cfg->leader_election_id = o->leader_election_id;
    cfg->leader_election_namespace = o->leader_election_namespace;
    cfg->metrics_addr = o->metrics_bind_address;
    cfg->health_addr = o->health_probe_bind_address;
    cfg->metrics_secure = o->metrics_secure;
    cfg->metrics_cert_dir = o->metrics_cert_dir;
    cfg->dry_run = o->dry_run;
    cfg->user_queries = o->user_queries;
    cfg->output = o->output == MS_OUTPUT_JSON ? MS_DRYRUN_JSON : MS_DRYRUN_TABLE;
    cfg->out = stdout;
}

/* glibc gives each thread that allocates an arena of its own (up to eight
 * per core) and returns freed tops to the kernel only past a threshold that
 * grows with the largest block seen. The controller's threads all allocate
 * (informers, rounds, workers, writers): at 10,000 objects that doubled the
 * heap's footprint in RSS. Two arenas and a 1 MiB trim threshold keep RSS
 * within a few MiB of what is in use (docs/performance.md). */
static void tune_malloc(void)
{
#ifdef __GLIBC__
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
#endif
}

int ms_cmd_controller(int argc, char **argv)
{
    ms_controller_options_t opts;
    ms_controller_config_t cfg;
    ms_controller_t *ctl = NULL;
    char errbuf[MS_ERRBUF_SIZE] = "";
    char *password = NULL;
    int rc = 2;

    if (ms_controller_options_parse(argc - 1, argv + 1, &opts, errbuf, sizeof errbuf) != MS_OK) {
        fprintf(stderr, "meshscaler controller: %s\n", errbuf);
        goto out;
    }
    if (opts.help) {
        fputs(ms_controller_options_help(), stdout);
        fputs(more_help, stdout);
        rc = 0;
        goto out;
    }
    ms_log_setup(opts.log_level, opts.log_format, stderr);
    tune_malloc();
    to_config(&opts, &cfg);
    if (opts.prometheus_basic_auth_password_file != NULL) {
        password = read_password(opts.prometheus_basic_auth_password_file, errbuf, sizeof errbuf);
        if (password == NULL) {
            fprintf(stderr, "meshscaler controller: %s\n", errbuf);
            goto out;
        }
        cfg.prom.basic_password = password;
    }
    if (install_signals() != 0) {
        fprintf(stderr, "meshscaler controller: cannot install signal handlers\n");
        rc = 1;
        goto out;
    }
    rc = 1;
    if ((ctl = ms_controller_new(&cfg, errbuf, sizeof errbuf)) == NULL) {
        MS_LOG_ERROR("cannot start", MS_S("error", errbuf));
        goto out;
    }
    if (ms_controller_run(ctl, &stop_requested, errbuf, sizeof errbuf) != MS_OK) {
        MS_LOG_ERROR("controller failed", MS_S("error", errbuf));
        goto out;
    }
    rc = 0;
out:
    ms_controller_free(ctl);
    if (password != NULL) {
        memset(password, 0, strlen(password));
        free(password);
    }
    ms_controller_options_cleanup(&opts);
    return rc;
}
