/*
 * presets.c - what to read on each proxy's own statistics endpoint, and
 * what one pod's answer says. The families are the series src/prom/presets.c
 * queries Prometheus for (docs/metrics.md), read here from the pod itself;
 * keep the two in step.
 */
#include <stdio.h>
#include <string.h>

#include "meshscaler/scrape.h"

/* Every preset asks for the 0.0.4 text format: all three proxies serve it,
 * and an exporter that prefers OpenMetrics falls back to it. */
#define ACCEPT_TEXT "text/plain;version=0.0.4;q=1,*/*;q=0.1"

/* Envoy's admin filter is a regular expression over the stat's own name,
 * before tag extraction ("cluster.inbound|8080||.upstream_rq_active"), so
 * the answer holds only the inbound clusters' four stats instead of a full
 * dump (megabytes in a large mesh). Not `usedonly`: a gauge never written,
 * such as an idle pod's upstream_rq_active, would then be left out, and an
 * idle pod would read as missing instead of 0. The regex, URL-encoded:
 *   ^cluster\.inbound\|.*\.(upstream_rq_active|upstream_rq_total|
 *    upstream_rq_pending_overflow|circuit_breakers\.default\.remaining_rq)$ */
#define ENVOY_PATH                                                                                 \
    "/stats/prometheus?filter=%5Ecluster%5C.inbound%5C%7C.*%5C.(upstream_rq_active%7C"             \
    "upstream_rq_total%7Cupstream_rq_pending_overflow%7Ccircuit_breakers%5C.default%5C."           \
    "remaining_rq)%24"

#define INBOUND                                                                                    \
    {                                                                                              \
        "cluster_name", "inbound|", MS_SCRAPE_MATCH_PREFIX                                         \
    }

static const ms_scrape_preset_t presets[MS_SCRAPE_PROXY__COUNT] = {
    [MS_SCRAPE_PROXY_HAPROXY] =
        {
            /* HAProxy has no standard exporter port: 8405 is the one its own
             * documentation's prometheus-exporter example binds; override it to
             * match the sidecar's `frontend` with `use-service prometheus-exporter`.
             * Saturation as the lab runs it (e2e/lab/lib/objects.sh): refused
             * connections against admitted sessions. */
            .proxy = "haproxy",
            .port = 8405,
            .path = "/metrics",
            .accept = ACCEPT_TEXT,
            .families = {{.name = "haproxy_server_current_sessions"},
                         {.name = "haproxy_server_limit_sessions", .positive_only = true},
                         {.name = "haproxy_server_sessions_total"},
                         {.name = "haproxy_backend_connection_errors_total"}},
            .roles = {MS_SCRAPE_ROLE_IN_FLIGHT, MS_SCRAPE_ROLE_LIMIT, MS_SCRAPE_ROLE_ADMITTED,
                      MS_SCRAPE_ROLE_REJECTED},
            .counter = {false, false, true, true},
            .nfamilies = 4,
        },
    [MS_SCRAPE_PROXY_ENVOY] =
        {
            /* Istio's sidecar serves Envoy's stats on 15090 (plaintext), path
             * /stats/prometheus. In flight: the inbound clusters' active requests;
             * limit: active + the default circuit breaker's remaining; saturation:
             * pending overflows against requests (docs/metrics.md). */
            .proxy = "envoy",
            .port = 15090,
            .path = ENVOY_PATH,
            .accept = ACCEPT_TEXT,
            .families = {{.name = "envoy_cluster_upstream_rq_active",
                          .matchers = {INBOUND},
                          .nmatchers = 1},
                         {.name = "envoy_cluster_circuit_breakers_default_remaining_rq",
                          .matchers = {INBOUND},
                          .nmatchers = 1},
                         {.name = "envoy_cluster_upstream_rq_total",
                          .matchers = {INBOUND},
                          .nmatchers = 1},
                         {.name = "envoy_cluster_upstream_rq_pending_overflow",
                          .matchers = {INBOUND},
                          .nmatchers = 1}},
            .roles = {MS_SCRAPE_ROLE_IN_FLIGHT, MS_SCRAPE_ROLE_REMAINING, MS_SCRAPE_ROLE_ADMITTED,
                      MS_SCRAPE_ROLE_REJECTED},
            .counter = {false, false, true, true},
            .nfamilies = 4,
        },
    [MS_SCRAPE_PROXY_LINKERD] =
        {
            /* The proxy's admin port 4191, /metrics. Linkerd has no in-flight
             * gauge: Little's law on the inbound latency sum, as presets.c does
             * (milliseconds accrued per second / 1000 = mean requests in flight,
             * here over the time between two reads). No limit, and no
             * saturation pair the project documents for Linkerd. */
            .proxy = "linkerd",
            .port = 4191,
            .path = "/metrics",
            .accept = ACCEPT_TEXT,
            .families = {{.name = "response_latency_ms_sum",
                          .matchers = {{"direction", "inbound", MS_SCRAPE_MATCH_EQ}},
                          .nmatchers = 1}},
            .roles = {MS_SCRAPE_ROLE_BUSY_MS},
            .counter = {true},
            .nfamilies = 1,
        },
};

const ms_scrape_preset_t *ms_scrape_preset(ms_scrape_proxy_t proxy)
{
    return (unsigned)proxy < MS_SCRAPE_PROXY__COUNT ? &presets[proxy] : NULL;
}

bool ms_scrape_proxy_parse(const char *name, ms_scrape_proxy_t *out)
{
    for (int i = 0; i < MS_SCRAPE_PROXY__COUNT; i++)
        if (name != NULL && strcmp(name, presets[i].proxy) == 0) {
            *out = (ms_scrape_proxy_t)i;
            return true;
        }
    return false;
}

/* An address as the pod index gives it (status.podIP): IPv4 or IPv6, no
 * zone, no name. */
static bool plain_ip(const char *ip, bool *v6)
{
    size_t n = strlen(ip);

    *v6 = strchr(ip, ':') != NULL;
    if (n == 0 || n > 45)
        return false;
    for (const char *s = ip; *s; s++) {
        bool hex = (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F');
        if (!((*s >= '0' && *s <= '9') || *s == '.' || (*v6 && (hex || *s == ':'))))
            return false;
    }
    return true;
}

ms_err_t ms_scrape_url(const ms_scrape_preset_t *preset, const char *pod_ip, char *out,
                       size_t outlen, char *errbuf, size_t errlen)
{
    bool v6;
    int n;

    if (pod_ip == NULL || !plain_ip(pod_ip, &v6))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "pod address \"%.60s\" is not an IP address",
                       pod_ip ? pod_ip : "");
    if (preset->port == 0 || preset->port > 65535)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: port %u is out of range", preset->proxy,
                       preset->port);
    if (preset->path == NULL || preset->path[0] != '/')
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: the path must start with '/'",
                       preset->proxy);
    n = snprintf(out, outlen, v6 ? "http://[%s]:%u%s" : "http://%s:%u%s", pod_ip, preset->port,
                 preset->path);
    if (n < 0 || (size_t)n >= outlen)
        return ms_errf(errbuf, errlen, MS_ERR_TOOLARGE, "%s: the URL is longer than %zu bytes",
                       preset->proxy, outlen);
    return MS_OK;
}

/* Set one role's value from family i (ci: i's index among the counters). */
static void take(ms_scrape_pod_t *out, ms_scrape_role_t role, const ms_scrape_total_t *t,
                 const ms_scrape_rate_t *rate, bool *has_rem, double *rem)
{
    switch (role) {
    case MS_SCRAPE_ROLE_IN_FLIGHT:
        out->has_in_flight = t->samples > 0;
        out->in_flight = t->sum;
        break;
    case MS_SCRAPE_ROLE_LIMIT:
        out->has_limit = t->samples > 0;
        out->limit = t->sum;
        break;
    case MS_SCRAPE_ROLE_REMAINING:
        *has_rem = t->samples > 0;
        *rem = t->sum;
        break;
    case MS_SCRAPE_ROLE_BUSY_MS:
        out->has_in_flight = rate != NULL && rate->observed;
        out->in_flight = out->has_in_flight ? rate->rate / 1000.0 : 0;
        break;
    case MS_SCRAPE_ROLE_ADMITTED:
        if (rate != NULL)
            out->admitted = *rate;
        break;
    case MS_SCRAPE_ROLE_REJECTED:
        if (rate != NULL)
            out->rejected = *rate;
        break;
    default:
        break;
    }
}

void ms_scrape_pod_values(const ms_scrape_preset_t *preset, const ms_scrape_total_t *totals,
                          ms_scrape_rates_t *rates, const char *uid, double now,
                          ms_scrape_pod_t *out)
{
    double values[MS_SCRAPE_MAX_FAMILIES], rem = 0;
    bool has[MS_SCRAPE_MAX_FAMILIES], has_rem = false;
    ms_scrape_rate_t rate[MS_SCRAPE_MAX_FAMILIES];
    size_t nc = 0, ci = 0;

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < preset->nfamilies; i++)
        if (preset->counter[i]) {
            values[nc] = totals[i].sum;
            has[nc++] = totals[i].samples > 0;
        }
    if (nc > 0)
        ms_scrape_rates_update(rates, uid, now, values, has, nc, rate);
    for (size_t i = 0; i < preset->nfamilies; i++)
        take(out, preset->roles[i], &totals[i], preset->counter[i] ? &rate[ci++] : NULL, &has_rem,
             &rem);
    if (has_rem && out->has_in_flight && !out->has_limit) {
        out->has_limit = true;
        out->limit = out->in_flight + rem;
    }
}
