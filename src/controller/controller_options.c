/*
 * controller_options.c - `meshscaler controller` flags and config file.
 *
 * One table describes every setting: its flag, its config key, its kind and
 * range. Flags and the YAML file feed the same setter, so both accept and
 * refuse exactly the same values, and errors differ only in how they name
 * the place ("--sync-period" or "config.yaml: syncPeriod").
 *
 * Order: defaults, then the config file, then the flags (flags win).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "meshscaler/buf.h"
#include "meshscaler/controller_options.h"
#include "meshscaler/duration.h"
#include "meshscaler/xalloc.h"

/* Client-side rate limit of the Kubernetes client.
 *
 * A sync reads the target's scale (1 GET), and writes only what changed: the
 * status (1 PATCH when a metric value, a condition or the decision moved),
 * the scale (1 PUT/PATCH) and an event (1 POST) when it rescales. So an
 * object costs 1 request per sync at rest, about 2 while its metrics move,
 * and 4 at worst. At 1,000 objects and --sync-period=15s:
 *   reads alone        1,000 / 15 s =  67 QPS (client-go's 5 and even a
 *                                             50 QPS default would throttle)
 *   moving metrics     2,000 / 15 s = 133 QPS
 *   full rescale storm 4,000 / 15 s = 267 QPS, for one period at most: the
 *                                             stabilization windows and the
 *                                             rate policies stop a repeat.
 * 300 QPS covers the storm; the burst of 600 lets a storm (or the first sync
 * of every object after a start) go out without waiting while the bucket
 * refills. API Priority and Fairness still protects the server side. */
#define DEFAULT_KUBE_API_QPS 300.0
#define DEFAULT_KUBE_API_BURST 600

#define DEFAULT_SYNC_PERIOD 15.0
#define DEFAULT_PROM_TIMEOUT 10.0
#define DEFAULT_PROM_MAX_RESPONSE (1u << 20)
#define DEFAULT_PROM_MAX_ROUND (64u << 20)
#define DEFAULT_CONCURRENT_SYNCS 4
#define MAX_CONFIG_BYTES (1u << 20)
#define MAX_STRING 4096 /* longest accepted string value */

/* ---- value kinds ---- */

typedef enum {
    K_STRING,  /* non-empty */
    K_NS,      /* a namespace; "" means every namespace */
    K_ADDRESS, /* HOST:PORT, :PORT or 0 */
    K_URL,     /* http:// or https:// */
    K_BOOL,
    K_DURATION, /* seconds in [min, max] */
    K_INT,      /* [min, max] */
    K_QPS,      /* > 0 up to max, or -1 */
    K_LOG_FORMAT,
    K_LOG_LEVEL,
    K_OUTPUT,
    K_USER_QUERIES, /* allow, namespaced or deny */
    K_BYTES,        /* a byte count, "1048576", "512Ki", "16Mi", "1Gi": [min, max] */
    K_HEADER        /* "Name: value", repeatable */
} kind_t;

typedef struct {
    const char *flag; /* without the leading dashes */
    const char *key;  /* config-file key */
    kind_t kind;
    size_t offset;
    double min, max;
    const char *range;   /* how the range reads in messages */
    const char *section; /* --help: the heading this option starts, else NULL */
    const char *arg;     /* --help: what the value is; NULL for a boolean */
    const char *help;    /* --help: one sentence, wrapped to the terminal's 80 columns */
} option_t;

#define OFF(field) offsetof(ms_controller_options_t, field)

/* In --help order. */
static const option_t options[] = {
    {"kubeconfig", "kubeconfig", K_STRING, OFF(kubeconfig), 0, 0, NULL, "Kubernetes:", "FILE",
     "kubeconfig (default: $KUBECONFIG, in-cluster, then ~/.kube/config)"},
    {"context", "context", K_STRING, OFF(context), 0, 0, NULL, NULL, "NAME",
     "kubeconfig context (default: its current one)"},
    {"namespace", "namespace", K_NS, OFF(namespace_), 0, 0, NULL, NULL, "NS",
     "watch only this namespace (default: all)"},
    {"kube-api-qps", "kubeApiQps", K_QPS, OFF(kube_api_qps), 0, 100000, NULL, NULL, "N",
     "client-side API request rate (default 300; -1: none)"},
    {"kube-api-burst", "kubeApiBurst", K_INT, OFF(kube_api_burst), 1, 100000, "1..100000", NULL,
     "N", "requests allowed at once (default 600)"},
    {"prometheus-url", "prometheusUrl", K_URL, OFF(prometheus_url), 0, 0, NULL,
     "Prometheus:", "URL", "base URL (required)"},
    {"prometheus-bearer-token-file", "prometheusBearerTokenFile", K_STRING,
     OFF(prometheus_bearer_token_file), 0, 0, NULL, NULL, "FILE",
     "bearer token, re-read when it changes"},
    {"prometheus-basic-auth-username", "prometheusBasicAuthUsername", K_STRING,
     OFF(prometheus_basic_auth_username), 0, 0, NULL, NULL, "NAME", "basic auth user, with:"},
    {"prometheus-basic-auth-password-file", "prometheusBasicAuthPasswordFile", K_STRING,
     OFF(prometheus_basic_auth_password_file), 0, 0, NULL, NULL, "FILE", ""},
    {"prometheus-header", "prometheusHeaders", K_HEADER, OFF(prometheus_headers), 0, 0, NULL, NULL,
     "\"NAME: VALUE\"", "extra request header (repeatable)"},
    {"prometheus-ca-file", "prometheusCaFile", K_STRING, OFF(prometheus_ca_file), 0, 0, NULL, NULL,
     "FILE", "CA bundle for Prometheus' certificate"},
    {"prometheus-insecure-skip-verify", "prometheusInsecureSkipVerify", K_BOOL,
     OFF(prometheus_insecure_skip_verify), 0, 0, NULL, NULL, NULL,
     "do not verify it (testing only)"},
    {"prometheus-timeout", "prometheusTimeout", K_DURATION, OFF(prometheus_timeout), 0.001, 600,
     "1ms..10m", NULL, "DURATION", "per query (default 10s)"},
    /* A round's Prometheus work is bounded in time and bytes (one hung or
     * flooding Prometheus must not stall every object): 1 MiB per answer
     * (a preset's may take 4 KiB per object it covers), 64 MiB for all
     * answers of a round, and by default the smaller of the sync period and
     * 10 s. */
    {"prometheus-max-response-bytes", "prometheusMaxResponseBytes", K_BYTES,
     OFF(prometheus_max_response_bytes), 65536, 1073741824.0, "64Ki..1Gi", NULL, "BYTES",
     "one answer (default 1Mi); a preset's may take 4Ki per object it covers"},
    {"prometheus-max-round-bytes", "prometheusMaxRoundBytes", K_BYTES,
     OFF(prometheus_max_round_bytes), 1048576, 4294967296.0, "1Mi..4Gi", NULL, "BYTES",
     "all answers of a round (default 64Mi)"},
    {"prometheus-round-timeout", "prometheusRoundTimeout", K_DURATION,
     OFF(prometheus_round_timeout), 0.1, 3600, "100ms..1h", NULL, "DURATION",
     "a round's queries together (default: the sync period, at most 10s)"},
    /* Default allow: earlier releases ran every query, and an upgrade must
     * not start refusing objects that work. Multi-tenant clusters want
     * namespaced (docs/controller.md, "Who may read what"). */
    {"user-queries", "userQueries", K_USER_QUERIES, 0, 0, 0, NULL, NULL, "allow|namespaced|deny",
     "who may run their own PromQL with these credentials (default allow; namespaced: only "
     "selectors with namespace=\"{{namespace}}\"; deny: presets only)"},
    {"sync-period", "syncPeriod", K_DURATION, OFF(sync_period), 1, 3600, "1s..1h",
     "The loop:", "DURATION",
     "sync every object this often (default 15s, 1s..1h; spec.syncPeriodSeconds overrides per "
     "object)"},
    {"concurrent-syncs", "concurrentSyncs", K_INT, OFF(concurrent_syncs), 1, 256, "1..256", NULL,
     "N", "objects synced at once (default 4)"},
    {"dry-run", "dryRun", K_BOOL, OFF(dry_run), 0, 0, NULL, NULL, NULL,
     "decide and print, never write anything"},
    {"output", "output", K_OUTPUT, 0, 0, 0, NULL, NULL, "table|json",
     "dry-run decision lines on stdout (default table)"},
    {"leader-elect", "leaderElect", K_BOOL, OFF(leader_elect), 0, 0, NULL, "Leader election:", NULL,
     "act only while holding the Lease (default false)"},
    {"leader-election-id", "leaderElectionId", K_STRING, OFF(leader_election_id), 0, 0, NULL, NULL,
     "NAME", "Lease name (default meshscaler)"},
    {"leader-election-namespace", "leaderElectionNamespace", K_STRING,
     OFF(leader_election_namespace), 0, 0, NULL, NULL, "NS",
     "Lease namespace (default: the pod's own, else meshscaler-system)"},
    {"metrics-bind-address", "metricsBindAddress", K_ADDRESS, OFF(metrics_bind_address), 0, 0, NULL,
     "Endpoints (HOST:PORT, :PORT, or 0 to turn off):", "ADDR", "/metrics (default :8080)"},
    {"health-probe-bind-address", "healthProbeBindAddress", K_ADDRESS,
     OFF(health_probe_bind_address), 0, 0, NULL, NULL, "ADDR",
     "/healthz and /readyz (default :8081)"},
    /* Off by default, as in controller-runtime before kubebuilder v4 turned
     * it on in its scaffold: the chart's ServiceMonitor and plain Prometheus
     * set-ups scrape /metrics over HTTP without a token, and would all fail
     * at once after an upgrade. Turn it on with --metrics-secure (chart:
     * metrics.secure=true, which also switches the ServiceMonitor to HTTPS
     * with a bearer token and grants the review rights). */
    {"metrics-secure", "metricsSecure", K_BOOL, OFF(metrics_secure), 0, 0, NULL, NULL, NULL,
     "serve /metrics over HTTPS, only to callers whose bearer token passes a TokenReview and a "
     "SubjectAccessReview (get /metrics); needs create on tokenreviews and "
     "subjectaccessreviews (default false: Prometheus set-ups scrape over HTTP)"},
    {"metrics-cert-dir", "metricsCertDir", K_STRING, OFF(metrics_cert_dir), 0, 0, NULL, NULL, "DIR",
     "tls.crt and tls.key for --metrics-secure (default: a self-signed certificate made at "
     "start)"},
    {"log-format", "logFormat", K_LOG_FORMAT, 0, 0, 0, NULL, "Logging (stderr):", "text|json",
     "(default text)"},
    {"log-level", "logLevel", K_LOG_LEVEL, 0, 0, 0, NULL, NULL, "error|warn|info|debug",
     "(default info)"},
};

#define NOPTIONS (sizeof options / sizeof options[0])

static const option_t *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strlen(options[i].flag) == len && strncmp(options[i].flag, name, len) == 0)
            return &options[i];
    return NULL;
}

static const option_t *find_key(const char *key)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].key, key) == 0)
            return &options[i];
    return NULL;
}

static void *field(ms_controller_options_t *o, const option_t *opt)
{
    return (char *)o + opt->offset;
}

/* ---- parsers of single values ---- */

/* strconv.ParseBool's spellings, as pflag accepts them. */
static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};

    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool parse_long(const char *s, long *out)
{
    char *end;
    long v;

    if (*s == '\0' || isspace((unsigned char)*s))
        return false;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    double v;

    if (*s == '\0' || isspace((unsigned char)*s))
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Seconds as a short Go-like duration for messages: "1h", "90s", "0.5s". */
static void format_duration(double s, char *buf, size_t cap)
{
    if (s >= 3600 && fmod(s, 3600) == 0)
        snprintf(buf, cap, "%gh", s / 3600);
    else if (s >= 60 && fmod(s, 60) == 0)
        snprintf(buf, cap, "%gm", s / 60);
    else if (s < 1)
        snprintf(buf, cap, "%gms", s * 1000);
    else
        snprintf(buf, cap, "%gs", s);
}

/* "HOST:PORT", ":PORT", "[V6]:PORT", or "0". */
static bool valid_address(const char *s)
{
    const char *colon = strrchr(s, ':');
    long port;

    if (strcmp(s, "0") == 0)
        return true;
    if (colon == NULL || !parse_long(colon + 1, &port) || port < 0 || port > 65535 ||
        colon[1] == '+' || colon[1] == '-')
        return false;
    for (const char *p = s; p < colon; p++)
        if (isspace((unsigned char)*p) || *p == '/')
            return false;
    if (s[0] == '[' && (colon == s || colon[-1] != ']'))
        return false;
    return true;
}

/* RFC 7230 header: token ":" OWS value, no control characters. */
static bool valid_header(const char *s)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    const char *p = s;

    for (; *p && *p != ':'; p++)
        if (!isalnum((unsigned char)*p) && strchr(tchar, *p) == NULL)
            return false;
    if (p == s || *p != ':')
        return false;
    for (p++; *p == ' ' || *p == '\t'; p++)
        ;
    if (*p == '\0')
        return false;
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return false;
    return true;
}

/* Whether the URL's authority has a user part ("user:password@host"). */
static bool url_has_userinfo(const char *s)
{
    const char *host = strstr(s, "://");

    if (host == NULL)
        return false;
    host += 3;
    return memchr(host, '@', strcspn(host, "/?#")) != NULL;
}

static bool valid_url(const char *s)
{
    const char *host;

    if (strncmp(s, "http://", 7) == 0)
        host = s + 7;
    else if (strncmp(s, "https://", 8) == 0)
        host = s + 8;
    else
        return false;
    if (*host == '\0' || *host == '/')
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= 0x20)
            return false;
    return true;
}

static void set_string(char **slot, const char *value)
{
    free(*slot);
    *slot = ms_xstrdup(value);
}

static void append_header(ms_controller_options_t *o, const char *value)
{
    /* At most MS_CONTROLLER_MAX_HEADERS: the size cannot overflow. */
    char **h = ms_xrealloc(o->prometheus_headers, (o->nprometheus_headers + 1) * sizeof *h);

    o->prometheus_headers = h;
    h[o->nprometheus_headers++] = ms_xstrdup(value);
}

static void clear_headers(ms_controller_options_t *o)
{
    for (size_t i = 0; i < o->nprometheus_headers; i++)
        free(o->prometheus_headers[i]);
    free(o->prometheus_headers);
    o->prometheus_headers = NULL;
    o->nprometheus_headers = 0;
}

/* "1048576", "512Ki", "16Mi", "1Gi" (or K, M, G for powers of 1000). */
static bool parse_bytes(const char *s, double *out)
{
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
                 {"K", 1e3},     {"M", 1e6},        {"G", 1e9},
                 {"", 1}};
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno != 0 || v < 0 || !isdigit((unsigned char)*s))
        return false;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            *out = floor(v * units[i].factor);
            return true;
        }
    }
    return false;
}

/* One setter per kind: set opt from text, or say why not (nothing modified).
 * `where` names the place for errors ("--sync-period" or "config.yaml:
 * syncPeriod"). */
#define SETTER(name)                                                                               \
    static ms_err_t name(ms_controller_options_t *o, const option_t *opt, const char *text,        \
                         const char *where, char *errbuf, size_t errlen)

SETTER(set_nonempty)
{
    if (*text == '\0')
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: needs a non-empty value", where);
    set_string(field(o, opt), text);
    return MS_OK;
}

SETTER(set_ns)
{
    (void)opt, (void)where, (void)errbuf, (void)errlen;
    free(o->namespace_);
    o->namespace_ = *text ? ms_xstrdup(text) : NULL;
    return MS_OK;
}

SETTER(set_address)
{
    if (!valid_address(text))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not HOST:PORT, :PORT or 0 (off)", where, text);
    set_string(field(o, opt), text);
    return MS_OK;
}

SETTER(set_url)
{
    /* Not echoed: a URL reaches logs, dry-run lines and status messages. */
    if (url_has_userinfo(text))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: the URL carries credentials (user@ or user:password@), which "
                       "would reach logs; give them with --prometheus-basic-auth-username "
                       "and --prometheus-basic-auth-password-file, or a bearer token file",
                       where);
    if (!valid_url(text))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not an http:// or https:// URL", where, text);
    set_string(field(o, opt), text);
    return MS_OK;
}

SETTER(set_bool)
{
    bool b;

    if (!parse_bool(text, &b))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not a boolean (want true or false)", where, text);
    *(bool *)field(o, opt) = b;
    return MS_OK;
}

SETTER(set_duration)
{
    double d;
    char lo[32], hi[32];

    if (!ms_duration_parse(text, &d))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not a duration (want e.g. 15s, 1m)", where, text);
    if (d < opt->min || d > opt->max) {
        format_duration(opt->min, lo, sizeof lo);
        format_duration(opt->max, hi, sizeof hi);
        return ms_errf(errbuf, errlen, MS_ERR_RANGE, "%s: %s is out of range (%s..%s)", where, text,
                       lo, hi);
    }
    *(double *)field(o, opt) = d;
    return MS_OK;
}

SETTER(set_int)
{
    long l;

    if (!parse_long(text, &l))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: \"%s\" is not an integer", where, text);
    if ((double)l < opt->min || (double)l > opt->max)
        return ms_errf(errbuf, errlen, MS_ERR_RANGE, "%s: %ld is out of range (%s)", where, l,
                       opt->range);
    *(int *)field(o, opt) = (int)l;
    return MS_OK;
}

SETTER(set_qps)
{
    double d;

    if (!parse_double(text, &d))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: \"%s\" is not a number", where, text);
    if (d != -1 && (d <= 0 || d > opt->max))
        return ms_errf(errbuf, errlen, MS_ERR_RANGE,
                       "%s: %s is out of range (above 0 up to %g, or -1 for no limit)", where, text,
                       opt->max);
    *(double *)field(o, opt) = d;
    return MS_OK;
}

SETTER(set_log_format)
{
    ms_log_format_t fmt;

    (void)opt;
    if (!ms_log_format_parse(text, &fmt))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: \"%s\" is not one of text, json", where,
                       text);
    o->log_format = fmt;
    return MS_OK;
}

SETTER(set_log_level)
{
    ms_log_level_t level;

    (void)opt;
    if (!ms_log_level_parse(text, &level))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not one of error, warn, info, debug", where, text);
    o->log_level = level;
    return MS_OK;
}

SETTER(set_output)
{
    (void)opt;
    if (strcmp(text, "table") == 0)
        o->output = MS_OUTPUT_TABLE;
    else if (strcmp(text, "json") == 0)
        o->output = MS_OUTPUT_JSON;
    else
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: \"%s\" is not one of table, json",
                       where, text);
    return MS_OK;
}

SETTER(set_user_queries)
{
    (void)opt;
    if (ms_user_queries_parse(text, &o->user_queries) != MS_OK)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not one of allow, namespaced, deny", where, text);
    return MS_OK;
}

SETTER(set_bytes)
{
    double d;

    if (!parse_bytes(text, &d))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: \"%s\" is not a byte count (want e.g. 1048576, 512Ki, 16Mi)", where,
                       text);
    if (d < opt->min || d > opt->max)
        return ms_errf(errbuf, errlen, MS_ERR_RANGE, "%s: %s is out of range (%s)", where, text,
                       opt->range);
    *(size_t *)field(o, opt) = (size_t)d;
    return MS_OK;
}

SETTER(set_header)
{
    (void)opt;
    if (!valid_header(text))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: \"%s\" is not a header \"Name: value\"",
                       where, text);
    if (o->nprometheus_headers >= MS_CONTROLLER_MAX_HEADERS)
        return ms_errf(errbuf, errlen, MS_ERR_RANGE, "%s: more than %d headers", where,
                       MS_CONTROLLER_MAX_HEADERS);
    append_header(o, text);
    return MS_OK;
}

static ms_err_t (*const setters[])(ms_controller_options_t *, const option_t *, const char *,
                                   const char *, char *, size_t) = {
    [K_STRING] = set_nonempty,
    [K_NS] = set_ns,
    [K_ADDRESS] = set_address,
    [K_URL] = set_url,
    [K_BOOL] = set_bool,
    [K_DURATION] = set_duration,
    [K_INT] = set_int,
    [K_QPS] = set_qps,
    [K_LOG_FORMAT] = set_log_format,
    [K_LOG_LEVEL] = set_log_level,
    [K_OUTPUT] = set_output,
    [K_USER_QUERIES] = set_user_queries,
    [K_BYTES] = set_bytes,
    [K_HEADER] = set_header,
};

/* Set opt from text, through its kind's setter. On error nothing is modified. */
static ms_err_t set_value(ms_controller_options_t *o, const option_t *opt, const char *text,
                          const char *where, char *errbuf, size_t errlen)
{
    if (strlen(text) > MAX_STRING)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: value longer than %d bytes", where,
                       MAX_STRING);
    if ((size_t)opt->kind >= sizeof setters / sizeof setters[0] || setters[opt->kind] == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: unsupported setting", where);
    return setters[opt->kind](o, opt, text, where, errbuf, errlen);
}

/* ---- defaults ---- */

void ms_controller_options_init(ms_controller_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->kube_api_qps = DEFAULT_KUBE_API_QPS;
    o->kube_api_burst = DEFAULT_KUBE_API_BURST;
    o->prometheus_timeout = DEFAULT_PROM_TIMEOUT;
    o->prometheus_max_response_bytes = DEFAULT_PROM_MAX_RESPONSE;
    o->prometheus_max_round_bytes = DEFAULT_PROM_MAX_ROUND;
    o->sync_period = DEFAULT_SYNC_PERIOD;
    o->concurrent_syncs = DEFAULT_CONCURRENT_SYNCS;
    o->output = MS_OUTPUT_TABLE;
    o->user_queries = MS_USER_QUERIES_ALLOW;
    o->leader_elect = false;
    o->leader_election_id = ms_xstrdup("meshscaler");
    o->leader_election_namespace = ms_xstrdup(MS_CONTROLLER_DEFAULT_LEASE_NAMESPACE);
    o->metrics_bind_address = ms_xstrdup(":8080");
    o->health_probe_bind_address = ms_xstrdup(":8081");
    o->log_format = MS_LOG_TEXT;
    o->log_level = MS_LOG_INFO;
}

void ms_controller_options_cleanup(ms_controller_options_t *o)
{
    if (o == NULL)
        return;
    free(o->config_file);
    free(o->kubeconfig);
    free(o->context);
    free(o->namespace_);
    free(o->prometheus_url);
    free(o->prometheus_bearer_token_file);
    free(o->prometheus_basic_auth_username);
    free(o->prometheus_basic_auth_password_file);
    clear_headers(o);
    free(o->prometheus_ca_file);
    free(o->leader_election_id);
    free(o->leader_election_namespace);
    free(o->metrics_bind_address);
    free(o->health_probe_bind_address);
    free(o->metrics_cert_dir);
    memset(o, 0, sizeof *o);
}

bool ms_controller_options_namespace_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t start = 0, end;
    bool ok = false;

    if (f == NULL)
        return false;
    if (fgets(line, sizeof line, f) == NULL)
        goto out;
    end = strlen(line);
    while (end > 0 && isspace((unsigned char)line[end - 1]))
        end--;
    while (start < end && isspace((unsigned char)line[start]))
        start++;
    if (end == start || end - start >= cap)
        goto out;
    memcpy(buf, line + start, end - start);
    buf[end - start] = '\0';
    ok = true;
out:
    fclose(f);
    return ok;
}

/* ---- the command line ---- */

typedef struct {
    const option_t *opt; /* NULL for --config and --help */
    bool is_config, is_help;
    const char *value; /* NULL for a bare boolean */
    char name[64];     /* "--flag" for messages */
} flag_t;

/* Read the flag at argv[*i] (and its value), advancing *i past both. */
static ms_err_t next_flag(int argc, char *const *argv, int *i, flag_t *f, char *errbuf,
                          size_t errlen)
{
    const char *arg = argv[*i];
    const char *name, *eq;
    size_t len;
    bool takes_value;

    memset(f, 0, sizeof *f);
    (*i)++;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
        f->is_help = true;
        return MS_OK;
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0' || arg[2] == '-' || arg[2] == '=')
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "unexpected argument \"%s\" (flags start with --; see --help)", arg);
    name = arg + 2;
    eq = strchr(name, '=');
    len = eq ? (size_t)(eq - name) : strlen(name);
    snprintf(f->name, sizeof f->name, "--%.*s", (int)(len < 60 ? len : 60), name);
    if (len == 6 && strncmp(name, "config", 6) == 0)
        f->is_config = true;
    else if ((f->opt = find_flag(name, len)) == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "unknown flag %s (see --help)", f->name);
    takes_value = f->is_config || f->opt->kind != K_BOOL;
    if (eq) {
        f->value = eq + 1;
    } else if (takes_value) {
        if (*i >= argc || strncmp(argv[*i], "--", 2) == 0)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: needs a value", f->name);
        f->value = argv[(*i)++];
    }
    return MS_OK;
}

/* ---- the config file ---- */

static bool is_null_scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;

    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (*v == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
            strcmp(v, "NULL") == 0);
}

static ms_err_t apply_entry(ms_controller_options_t *o, yaml_document_t *doc, const char *file,
                            const option_t *opt, yaml_node_t *value, char *errbuf, size_t errlen)
{
    char where[320];
    ms_err_t err;

    snprintf(where, sizeof where, "%s: %s", file, opt->key);
    if (opt->kind == K_HEADER) {
        if (value->type != YAML_SEQUENCE_NODE)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "%s: want a list, e.g. [\"X-Scope-OrgID: team-a\"]", where);
        clear_headers(o);
        for (yaml_node_item_t *it = value->data.sequence.items.start;
             it < value->data.sequence.items.top; it++) {
            yaml_node_t *item = yaml_document_get_node(doc, *it);
            if (item == NULL || item->type != YAML_SCALAR_NODE)
                return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: items must be strings", where);
            err = set_value(o, opt, (const char *)item->data.scalar.value, where, errbuf, errlen);
            if (err)
                return err;
        }
        return MS_OK;
    }
    if (value->type != YAML_SCALAR_NODE)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: want a single value, not a %s", where,
                       value->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
    if (is_null_scalar(value))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: needs a value", where);
    return set_value(o, opt, (const char *)value->data.scalar.value, where, errbuf, errlen);
}

static ms_err_t apply_document(ms_controller_options_t *o, yaml_document_t *doc, const char *file,
                               char *errbuf, size_t errlen)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    bool seen[NOPTIONS] = {false};
    ms_err_t err;

    if (root == NULL)
        return MS_OK; /* an empty file sets nothing */
    if (root->type == YAML_SCALAR_NODE && is_null_scalar(root))
        return MS_OK;
    if (root->type != YAML_MAPPING_NODE)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s: want a mapping of settings (e.g. syncPeriod: 15s)", file);
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = yaml_document_get_node(doc, pair->key);
        yaml_node_t *v = yaml_document_get_node(doc, pair->value);
        const option_t *opt;
        const char *key;

        if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: keys must be plain names", file);
        key = (const char *)k->data.scalar.value;
        opt = find_key(key);
        if (opt == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "%s: %.64s: unknown key (see meshscaler controller --help)", file, key);
        if (seen[opt - options])
            return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: %s: given twice", file, key);
        seen[opt - options] = true;
        err = apply_entry(o, doc, file, opt, v, errbuf, errlen);
        if (err)
            return err;
    }
    return MS_OK;
}

static ms_err_t load_config(ms_controller_options_t *o, const char *file, char *errbuf,
                            size_t errlen)
{
    ms_buf_t b;
    FILE *f = NULL;
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    bool parser_ready = false, doc_ready = false;
    ms_err_t err;

    ms_buf_init(&b, MAX_CONFIG_BYTES);
    f = fopen(file, "r");
    if (f == NULL) {
        err = ms_errf(errbuf, errlen, MS_ERR_IO, "%s: cannot read: %s", file, strerror(errno));
        goto out;
    }
    err = ms_buf_read_stream(&b, f);
    if (err == MS_ERR_TOOLARGE) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: larger than %u bytes", file,
                      MAX_CONFIG_BYTES);
        goto out;
    }
    if (err) {
        err = ms_errf(errbuf, errlen, err, "%s: cannot read: %s", file, ms_strerror(err));
        goto out;
    }
    if (!yaml_parser_initialize(&parser)) {
        err = ms_errf(errbuf, errlen, MS_ERR_NOMEM, "%s: cannot start the YAML parser", file);
        goto out;
    }
    parser_ready = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)(b.data ? b.data : ""), b.len);
    if (!yaml_parser_load(&parser, &doc)) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s:%zu:%zu: not valid YAML: %s", file,
                      parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                      parser.problem ? parser.problem : "syntax error");
        goto out;
    }
    doc_ready = true;
    err = apply_document(o, &doc, file, errbuf, errlen);
    if (err)
        goto out;
    /* A second document would be ignored silently: refuse it. */
    if (!yaml_parser_load(&parser, &extra)) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s:%zu:%zu: not valid YAML: %s", file,
                      parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                      parser.problem ? parser.problem : "syntax error");
        goto out;
    }
    if (yaml_document_get_root_node(&extra) != NULL)
        err =
            ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: holds more than one YAML document", file);
    yaml_document_delete(&extra);
out:
    if (doc_ready)
        yaml_document_delete(&doc);
    if (parser_ready)
        yaml_parser_delete(&parser);
    if (f)
        fclose(f);
    ms_buf_cleanup(&b);
    return err;
}

/* ---- checks across settings ---- */

/* How a setting is named in messages: its flag unless only the file set it. */
static const char *name_of(const option_t *opt, const bool *from_flag, const char *file, char *buf,
                           size_t cap)
{
    if (file && !from_flag[opt - options])
        snprintf(buf, cap, "%s: %s", file, opt->key);
    else
        snprintf(buf, cap, "--%s", opt->flag);
    return buf;
}

static ms_err_t validate(const ms_controller_options_t *o, const bool *from_flag, const char *file,
                         char *errbuf, size_t errlen)
{
    char a[320], b[320];
    const option_t *token = find_key("prometheusBearerTokenFile");
    const option_t *user = find_key("prometheusBasicAuthUsername");
    const option_t *pass = find_key("prometheusBasicAuthPasswordFile");

    if (o->prometheus_url == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "--prometheus-url is required (or prometheusUrl in a --config file)");
    if (o->prometheus_basic_auth_username && !o->prometheus_basic_auth_password_file)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s needs --%s as well",
                       name_of(user, from_flag, file, a, sizeof a), pass->flag);
    if (o->prometheus_basic_auth_password_file && !o->prometheus_basic_auth_username)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s needs --%s as well",
                       name_of(pass, from_flag, file, a, sizeof a), user->flag);
    if (o->prometheus_bearer_token_file && o->prometheus_basic_auth_username)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s and %s cannot be used together (bearer token or basic auth)",
                       name_of(token, from_flag, file, a, sizeof a),
                       name_of(user, from_flag, file, b, sizeof b));
    /* A certificate that would silently go unused is a mistake to report. */
    if (o->metrics_cert_dir && !o->metrics_secure)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s needs --metrics-secure as well",
                       name_of(find_key("metricsCertDir"), from_flag, file, a, sizeof a));
    return MS_OK;
}

/* ---- parse ---- */

ms_err_t ms_controller_options_parse(int argc, char *const *argv, ms_controller_options_t *o,
                                     char *errbuf, size_t errlen)
{
    bool from_flag[NOPTIONS] = {false};
    bool headers_from_flags = false;
    char ns[256];
    flag_t f;
    ms_err_t err;
    int i;

    ms_controller_options_init(o);
    /* Pass 1: syntax, --help and --config. */
    for (i = 0; i < argc;) {
        err = next_flag(argc, argv, &i, &f, errbuf, errlen);
        if (err)
            return err;
        if (f.is_help) {
            o->help = true;
            return MS_OK;
        }
        if (f.is_config) {
            if (*f.value == '\0')
                return ms_errf(errbuf, errlen, MS_ERR_INVALID, "--config: needs a file name");
            set_string(&o->config_file, f.value);
        }
    }
    if (ms_controller_options_namespace_file(MS_CONTROLLER_NAMESPACE_FILE, ns, sizeof ns))
        set_string(&o->leader_election_namespace, ns);
    if (o->config_file) {
        err = load_config(o, o->config_file, errbuf, errlen);
        if (err)
            return err;
    }
    /* Pass 2: the flags, over the file. */
    for (i = 0; i < argc;) {
        next_flag(argc, argv, &i, &f, NULL, 0); /* pass 1 checked the syntax */
        if (f.is_config)
            continue;
        if (f.opt->kind == K_HEADER && !headers_from_flags) {
            clear_headers(o); /* the command line's list replaces the file's */
            headers_from_flags = true;
        }
        err = set_value(o, f.opt, f.value ? f.value : "true", f.name, errbuf, errlen);
        if (err)
            return err;
        from_flag[f.opt - options] = true;
    }
    return validate(o, from_flag, o->config_file, errbuf, errlen);
}

/* ---- --help, from the table ---- */

#define HELP_WIDTH 80      /* columns of a terminal */
#define HELP_MIN_COLUMN 31 /* where descriptions start, at least */
#define HELP_MAX_COLUMN 45 /* ... and at most: a longer flag has a line of its own */

/* "  --flag ARG" or the text given, padded to `column`, then `text` wrapped
 * at word boundaries into HELP_WIDTH with continuation lines at `column`. */
static void help_entry(ms_fixbuf_t *f, const char *flag, const char *arg, int column,
                       const char *text)
{
    int at = (int)f->used;
    int col;

    ms_fixbuf_appendf(f, "  %s%s%s", flag, arg ? " " : "", arg ? arg : "");
    col = (int)f->used - at;
    if (*text == '\0') {
        ms_fixbuf_appendf(f, "\n");
        return;
    }
    if (col > column - 2) {
        ms_fixbuf_appendf(f, "\n");
        col = 0;
    }
    while (*text) {
        size_t word = strcspn(text, " ");

        if (col > column && col + 1 + (int)word > HELP_WIDTH) {
            ms_fixbuf_appendf(f, "\n");
            col = 0;
        }
        if (col < column) {
            ms_fixbuf_appendf(f, "%*s", column - col, "");
            col = column;
        } else {
            ms_fixbuf_appendf(f, " ");
            col++;
        }
        ms_fixbuf_appendf(f, "%.*s", (int)word, text);
        col += (int)word;
        text += word;
        text += strspn(text, " ");
    }
    ms_fixbuf_appendf(f, "\n");
}

static int flag_width(const option_t *opt)
{
    return 4 + (int)strlen(opt->flag) + (opt->arg ? 1 + (int)strlen(opt->arg) : 0);
}

/* Where the descriptions of the section starting at options[first] start:
 * past its widest flag, within [HELP_MIN_COLUMN, HELP_MAX_COLUMN]. */
static int section_column(size_t first)
{
    int widest = 0;

    for (size_t i = first; i < NOPTIONS && (i == first || options[i].section == NULL); i++)
        if (flag_width(&options[i]) > widest)
            widest = flag_width(&options[i]);
    if (widest + 2 < HELP_MIN_COLUMN)
        return HELP_MIN_COLUMN;
    return widest + 2 > HELP_MAX_COLUMN ? HELP_MAX_COLUMN : widest + 2;
}

static char help_text[8192];

static void build_help(void)
{
    ms_fixbuf_t f;
    char keys[1024], flag[64];
    ms_fixbuf_t k;
    int column = HELP_MIN_COLUMN;

    ms_fixbuf_init(&f, help_text, sizeof help_text);
    ms_fixbuf_init(&k, keys, sizeof keys);
    ms_fixbuf_appendf(&f, "Usage: meshscaler controller --prometheus-url URL [flags]\n\n"
                          "Watch MeshAutoscalers and scale their targets every sync period.\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        const option_t *opt = &options[i];

        if (opt->section) {
            ms_fixbuf_appendf(&f, "\n%s\n", opt->section);
            column = section_column(i);
        }
        snprintf(flag, sizeof flag, "--%s", opt->flag);
        help_entry(&f, flag, opt->arg, column, opt->help);
        ms_fixbuf_appendf(&k, "%s%s%s", opt->key, opt->kind == K_HEADER ? " (a list)" : "",
                          i + 1 < NOPTIONS ? ", " : ".");
    }
    ms_fixbuf_appendf(&f, "\n");
    ms_fixbuf_appendf(&k, " Flags win over the file.");
    help_entry(&f, "--config", "FILE", HELP_MIN_COLUMN,
               "YAML with the same settings, keys in "
               "camelCase:");
    /* The key list continues under the description column. */
    help_entry(&f, "", NULL, HELP_MIN_COLUMN, keys);
    help_entry(&f, "-h, --help", NULL, HELP_MIN_COLUMN, "this help");
    ms_fixbuf_appendf(&f, "\nDurations are written like Go's: 500ms, 15s, 1m30s, 1h. Booleans take "
                          "--flag,\n--flag=true or --flag=false.\n");
}

const char *ms_controller_options_help(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, build_help);
    return help_text;
}
