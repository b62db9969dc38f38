/*
 * stats.c - the run's counters, its latency quantiles and the one-line JSON
 * summary printed at exit.
 */
#include <math.h>

#include "load.h"

/* Bucket i holds [SKETCH_LOW * SKETCH_GROWTH^i, SKETCH_LOW * SKETCH_GROWTH^(i+1)). */
#define SKETCH_LOW 1e-5
#define SKETCH_GROWTH 1.01

static size_t sketch_bucket(double seconds)
{
    double i;

    if (!(seconds > SKETCH_LOW))
        return 0;
    i = floor(log(seconds / SKETCH_LOW) / log(SKETCH_GROWTH));
    return i >= MS_LOAD_SKETCH_BUCKETS - 1 ? MS_LOAD_SKETCH_BUCKETS - 1 : (size_t)i;
}

void ms_load_sketch_add(ms_load_sketch_t *s, double seconds)
{
    s->count[sketch_bucket(seconds)]++;
    s->total++;
}

/* The bucket's geometric middle: within half a bucket (0.5%) of any value in it. */
double ms_load_sketch_quantile(const ms_load_sketch_t *s, double q)
{
    double want = ceil(q * (double)s->total);
    uint64_t seen = 0;

    if (s->total == 0)
        return 0;
    if (want < 1)
        want = 1;
    for (size_t i = 0; i < MS_LOAD_SKETCH_BUCKETS; i++) {
        seen += s->count[i];
        if ((double)seen >= want)
            return SKETCH_LOW * pow(SKETCH_GROWTH, (double)i + 0.5);
    }
    return SKETCH_LOW * pow(SKETCH_GROWTH, MS_LOAD_SKETCH_BUCKETS);
}

void ms_load_stats_finish(ms_load_stats_t *s, bool success, unsigned attempts, double latency_s)
{
    if (success)
        s->successes++;
    else
        s->failures++;
    s->attempts += attempts;
    ms_load_sketch_add(&s->latency, latency_s);
}

static double share(uint64_t part, uint64_t whole)
{
    return whole == 0 ? 0 : (double)part / (double)whole;
}

double ms_load_stats_attempts_per_logical(const ms_load_stats_t *s)
{
    return share(s->attempts, s->successes + s->failures);
}

ms_err_t ms_load_summary_json(const ms_load_stats_t *s, ms_buf_t *out)
{
    uint64_t logical = s->successes + s->failures;
    double d = s->duration_s > 0 ? s->duration_s : 1;
    ms_err_t err;

    err = ms_buf_appendf(
        out,
        "{\"logical\":%llu,\"successes\":%llu,\"failures\":%llu,\"attempts\":%llu,"
        "\"attempts_per_logical\":%.4f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"errors_share\":%.4f,"
        "\"drops\":%llu,\"abandoned\":%llu,\"requested_rate\":%.2f,\"achieved_rate\":%.2f,"
        "\"duration_s\":%.3f,\"max_start_lag_ms\":%.2f,\"attempts_by_result\":{",
        (unsigned long long)logical, (unsigned long long)s->successes,
        (unsigned long long)s->failures, (unsigned long long)s->attempts,
        ms_load_stats_attempts_per_logical(s), ms_load_sketch_quantile(&s->latency, 0.5) * 1000,
        ms_load_sketch_quantile(&s->latency, 0.99) * 1000, share(s->failures, logical),
        (unsigned long long)s->drops, (unsigned long long)s->abandoned, s->expected / d,
        (double)s->arrivals / d, s->duration_s, s->max_lag_s * 1000);
    for (int r = 0; r < MS_LOAD_RESULT_COUNT && err == MS_OK; r++)
        err = ms_buf_appendf(out, "%s\"%s\":%llu", r > 0 ? "," : "",
                             ms_load_result_name((ms_load_result_t)r),
                             (unsigned long long)s->by_result[r]);
    if (err == MS_OK)
        err = ms_buf_appendf(out, "}}\n");
    return err;
}
