/*
 * load_metrics.c - the load client's /metrics families, in the project's
 * registry (include/meshscaler/metrics.h), served by its server.
 */
#include <string.h>

#include "load.h"

static const char *const outcome_label[] = {"outcome"};
static const char *const result_label[] = {"result"};
/* Seconds; the lab's backends answer in 50 ms, retries and queues add more. */
static const double latency_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,    2.5,   5,    10,  30};

/* Every known series at 0 from the start, so a rate() over the run has a
 * first sample. (The histogram has no such call: it appears with the first
 * finished request.) */
static void init_series(ms_load_metrics_t *m)
{
    const char *const outcomes[] = {"success", "failure"};

    for (size_t i = 0; i < 2; i++)
        ms_metrics_add(m->registry, m->requests, &outcomes[i], 0);
    for (int r = 0; r < MS_LOAD_RESULT_COUNT; r++) {
        const char *value[] = {ms_load_result_name((ms_load_result_t)r)};
        ms_metrics_add(m->registry, m->attempts, value, 0);
    }
    ms_metrics_add(m->registry, m->drops, NULL, 0);
    ms_metrics_add(m->registry, m->arrivals, NULL, 0);
    ms_metrics_set(m->registry, m->max_lag, NULL, 0);
    ms_metrics_set(m->registry, m->offered, NULL, 0);
    ms_metrics_set(m->registry, m->in_flight, NULL, 0);
    ms_metrics_set(m->registry, m->retry_share, NULL, 0);
}

ms_err_t ms_load_metrics_init(ms_load_metrics_t *m)
{
    ms_metrics_t *r = ms_metrics_new();

    memset(m, 0, sizeof *m);
    if (r == NULL)
        return MS_ERR_NOMEM;
    m->registry = r;
    m->requests = ms_metrics_family(r, MS_METRIC_COUNTER, "meshscaler_load_requests_total",
                                    "Logical requests finished, by outcome (success: the last "
                                    "attempt answered below 400).",
                                    outcome_label, 1, NULL, 0);
    m->attempts = ms_metrics_family(r, MS_METRIC_COUNTER, "meshscaler_load_attempts_total",
                                    "Attempts finished (first tries and retries), by result.",
                                    result_label, 1, NULL, 0);
    m->latency = ms_metrics_family(
        r, MS_METRIC_HISTOGRAM, "meshscaler_load_request_duration_seconds",
        "Logical request latency from its scheduled arrival to its last answer, retries included.",
        NULL, 0, latency_buckets, sizeof latency_buckets / sizeof latency_buckets[0]);
    m->offered = ms_metrics_family(r, MS_METRIC_GAUGE, "meshscaler_load_offered_rate",
                                   "Logical requests per second the profile asks for now.", NULL, 0,
                                   NULL, 0);
    m->in_flight = ms_metrics_family(r, MS_METRIC_GAUGE, "meshscaler_load_in_flight",
                                     "Logical requests started and not finished (attempt running "
                                     "or waiting to retry).",
                                     NULL, 0, NULL, 0);
    m->retry_share =
        ms_metrics_family(r, MS_METRIC_GAUGE, "meshscaler_load_retry_share",
                          "Attempts per finished logical request, minus one.", NULL, 0, NULL, 0);
    m->drops = ms_metrics_family(r, MS_METRIC_COUNTER, "meshscaler_load_client_drops_total",
                                 "Arrivals not sent because --max-in-flight requests were "
                                 "already in flight.",
                                 NULL, 0, NULL, 0);
    m->arrivals = ms_metrics_family(r, MS_METRIC_COUNTER, "meshscaler_load_arrivals_total",
                                    "Arrivals that came due: logical requests started plus drops "
                                    "(what the client offered, as opposed to the profile).",
                                    NULL, 0, NULL, 0);
    m->max_lag = ms_metrics_family(r, MS_METRIC_GAUGE, "meshscaler_load_max_start_lag_seconds",
                                   "The latest any arrival so far started after its due time.",
                                   NULL, 0, NULL, 0);
    if (m->requests < 0 || m->attempts < 0 || m->latency < 0 || m->offered < 0 ||
        m->in_flight < 0 || m->retry_share < 0 || m->drops < 0 || m->arrivals < 0 ||
        m->max_lag < 0) {
        ms_load_metrics_cleanup(m);
        return MS_ERR_NOMEM;
    }
    init_series(m);
    return MS_OK;
}

void ms_load_metrics_cleanup(ms_load_metrics_t *m)
{
    ms_metrics_free(m->registry);
    m->registry = NULL;
}

void ms_load_metrics_attempt(ms_load_metrics_t *m, ms_load_result_t r)
{
    const char *value[] = {ms_load_result_name(r)};

    ms_metrics_add(m->registry, m->attempts, value, 1);
}

void ms_load_metrics_finish(ms_load_metrics_t *m, bool success, double latency_s)
{
    const char *value[] = {success ? "success" : "failure"};

    ms_metrics_add(m->registry, m->requests, value, 1);
    ms_metrics_observe(m->registry, m->latency, NULL, latency_s);
}

void ms_load_metrics_drop(ms_load_metrics_t *m)
{
    ms_metrics_add(m->registry, m->drops, NULL, 1);
}

void ms_load_metrics_arrival(ms_load_metrics_t *m)
{
    ms_metrics_add(m->registry, m->arrivals, NULL, 1);
}

void ms_load_metrics_gauges(ms_load_metrics_t *m, double offered, unsigned in_flight,
                            const ms_load_stats_t *s)
{
    double per_logical = ms_load_stats_attempts_per_logical(s);

    ms_metrics_set(m->registry, m->offered, NULL, offered);
    ms_metrics_set(m->registry, m->in_flight, NULL, in_flight);
    ms_metrics_set(m->registry, m->retry_share, NULL, per_logical > 0 ? per_logical - 1 : 0);
    ms_metrics_set(m->registry, m->max_lag, NULL, s->max_lag_s);
}
