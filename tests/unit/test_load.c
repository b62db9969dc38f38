/*
 * test_load.c - the pure parts of the lab's load client (e2e/lab/load/load.h):
 * profile rates and their integrals, the arrival processes, full-jitter
 * backoff, the retry budget's sliding window, the retry decision, the latency
 * quantiles, the JSON summary, the /metrics families and the command line.
 * Times are arguments, so nothing here sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "load.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static ms_load_profile_t profile(const char *text)
{
    ms_load_profile_t p;
    char err[MS_ERRBUF_SIZE] = "";

    assert_true(ms_load_profile_parse(text, &p, err, sizeof err));
    return p;
}

static void test_profile_parse(void **state)
{
    ms_load_profile_t p;
    char err[MS_ERRBUF_SIZE] = "";
    const char *bad[] = {"",           "steady",           "steady:",        "steady:x",
                         "steady:1:2", "steady:-1",        "step:1:2",       "step:1:2:3:4",
                         "peak:1:2:3", "peak:1:2:3:4:5:6", "burst:10",       "steady:nan",
                         "steady:inf", "step:1:2:-3",      "steady:2000000", "steady:10 "};

    (void)state;
    p = profile("steady:250");
    assert_int_equal(p.kind, MS_LOAD_PROFILE_STEADY);
    NEAR(p.base, 250, 0);
    p = profile("step:100:300:4.5");
    assert_int_equal(p.kind, MS_LOAD_PROFILE_STEP);
    NEAR(p.base, 100, 0);
    NEAR(p.high, 300, 0);
    NEAR(p.at_s, 4.5, 0);
    p = profile("peak:10:110:2:3");
    assert_int_equal(p.kind, MS_LOAD_PROFILE_PEAK);
    NEAR(p.ramp_s, 2, 0);
    NEAR(p.hold_s, 3, 0);
    NEAR(p.at_s, 0, 0);
    p = profile("peak:10:110:2:3:1");
    NEAR(p.at_s, 1, 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_false(ms_load_profile_parse(bad[i], &p, err, sizeof err));
        assert_non_null(strstr(err, "--profile"));
    }
}

static void test_profile_rate(void **state)
{
    ms_load_profile_t steady = profile("steady:50"), step = profile("step:100:300:5"),
                      peak = profile("peak:10:110:2:3:1"), jump = profile("peak:10:110:0:3:1");

    (void)state;
    NEAR(ms_load_profile_rate(&steady, 0), 50, 0);
    NEAR(ms_load_profile_rate(&steady, 1e5), 50, 0);
    NEAR(ms_load_profile_rate(&step, 4.999), 100, 0);
    NEAR(ms_load_profile_rate(&step, 5), 300, 0);
    NEAR(ms_load_profile_max(&step), 300, 0);
    /* base until 1, up to 3, hold to 6, down to 8, base after */
    NEAR(ms_load_profile_rate(&peak, 0.5), 10, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 2), 60, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 3), 110, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 5.9), 110, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 7.5), 35, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 8), 10, 1e-9);
    NEAR(ms_load_profile_rate(&peak, 100), 10, 1e-9);
    NEAR(ms_load_profile_max(&peak), 110, 0);
    /* a ramp of 0 s is a jump, with no division by zero */
    NEAR(ms_load_profile_rate(&jump, 0.99), 10, 0);
    NEAR(ms_load_profile_rate(&jump, 1), 110, 0);
    NEAR(ms_load_profile_rate(&jump, 3.99), 110, 0);
    NEAR(ms_load_profile_rate(&jump, 4), 10, 0);
}

static void test_profile_expected(void **state)
{
    ms_load_profile_t steady = profile("steady:100"), step = profile("step:10:20:5"),
                      peak = profile("peak:10:110:2:3:1");

    (void)state;
    NEAR(ms_load_profile_expected(&steady, 10), 1000, 1e-9);
    NEAR(ms_load_profile_expected(&step, 10), 150, 1e-9);
    NEAR(ms_load_profile_expected(&step, 3), 30, 1e-9);
    /* 10/s for 10 s, plus 100 extra over each 2 s ramp (half) and the 3 s hold */
    NEAR(ms_load_profile_expected(&peak, 10), 100 + 100 + 300 + 100, 1e-9);
    /* cut mid ramp up at 2 s: 20 + the first second of the ramp (extra 25) */
    NEAR(ms_load_profile_expected(&peak, 2), 45, 1e-9);
}

static void test_rng(void **state)
{
    ms_load_rng_t a, b;
    double sum = 0;

    (void)state;
    ms_load_rng_seed(&a, 7);
    ms_load_rng_seed(&b, 7);
    for (int i = 0; i < 100000; i++) {
        double u = ms_load_rng_uniform(&a);
        assert_true(u >= 0 && u < 1);
        NEAR(u, ms_load_rng_uniform(&b), 0);
        sum += u;
    }
    NEAR(sum / 100000, 0.5, 0.01);
    ms_load_rng_seed(&b, 8);
    assert_true(ms_load_rng_uniform(&a) != ms_load_rng_uniform(&b));
}

/* Arrivals in [from, to) over a run ending at end. */
static unsigned count_arrivals(const ms_load_profile_t *p, ms_load_arrivals_t mode, double from,
                               double to, double end, uint64_t seed)
{
    ms_load_rng_t rng;
    unsigned n = 0;
    double t = 0, last = 0;

    ms_load_rng_seed(&rng, seed);
    while ((t = ms_load_next_arrival(p, mode, t, end, &rng)) < end) {
        assert_true(t > last || (t == last && last == 0));
        last = t;
        if (t >= from && t < to)
            n++;
    }
    return n;
}

static void test_arrivals_poisson(void **state)
{
    ms_load_profile_t steady = profile("steady:100"), step = profile("step:50:200:50"),
                      off = profile("steady:0");
    ms_load_rng_t rng;

    (void)state;
    /* 10,000 expected, sd 100: a 4-sigma band */
    NEAR(count_arrivals(&steady, MS_LOAD_ARRIVALS_POISSON, 0, 100, 100, 1), 10000, 400);
    NEAR(count_arrivals(&step, MS_LOAD_ARRIVALS_POISSON, 0, 50, 100, 2), 2500, 200);
    NEAR(count_arrivals(&step, MS_LOAD_ARRIVALS_POISSON, 50, 100, 100, 2), 10000, 400);
    /* the same seed, the same schedule */
    assert_int_equal(count_arrivals(&steady, MS_LOAD_ARRIVALS_POISSON, 0, 10, 10, 9),
                     count_arrivals(&steady, MS_LOAD_ARRIVALS_POISSON, 0, 10, 10, 9));
    ms_load_rng_seed(&rng, 1);
    assert_true(ms_load_next_arrival(&off, MS_LOAD_ARRIVALS_POISSON, 0, 10, &rng) >= 10);
}

static void test_arrivals_poisson_gaps(void **state)
{
    ms_load_profile_t steady = profile("steady:100");
    ms_load_rng_t rng;
    double t = 0, sum = 0, sum2 = 0;
    int n = 0;

    (void)state;
    ms_load_rng_seed(&rng, 3);
    for (; n < 50000; n++) {
        double next = ms_load_next_arrival(&steady, MS_LOAD_ARRIVALS_POISSON, t, 1e9, &rng);
        sum += next - t;
        sum2 += (next - t) * (next - t);
        t = next;
    }
    /* exponential gaps: mean 1/rate, standard deviation equal to the mean */
    NEAR(sum / n, 0.01, 0.0003);
    NEAR(sqrt(sum2 / n - (sum / n) * (sum / n)), 0.01, 0.0005);
}

static void test_arrivals_uniform(void **state)
{
    ms_load_profile_t steady = profile("steady:100"), step = profile("step:0:10:2");
    ms_load_rng_t rng;

    (void)state;
    NEAR(count_arrivals(&steady, MS_LOAD_ARRIVALS_UNIFORM, 0, 10, 10, 1), 1000, 1);
    ms_load_rng_seed(&rng, 1);
    NEAR(ms_load_next_arrival(&steady, MS_LOAD_ARRIVALS_UNIFORM, 1, 10, &rng), 1.01, 1e-12);
    /* nothing while the rate is 0; then every 0.1 s */
    NEAR(count_arrivals(&step, MS_LOAD_ARRIVALS_UNIFORM, 0, 2, 10, 1), 0, 0);
    NEAR(count_arrivals(&step, MS_LOAD_ARRIVALS_UNIFORM, 2, 10, 10, 1), 80, 1);
}

static void test_backoff_full_jitter(void **state)
{
    ms_load_rng_t rng, again;
    const double base = 0.1, cap = 1.0;

    (void)state;
    ms_load_rng_seed(&rng, 11);
    ms_load_rng_seed(&again, 11);
    for (unsigned k = 0; k < 8; k++) {
        double ceiling = fmin(cap, base * pow(2, k)), sum = 0;
        for (int i = 0; i < 20000; i++) {
            double d = ms_load_backoff_delay(base, cap, k, &rng);
            assert_true(d >= 0 && d < ceiling);
            NEAR(d, ms_load_backoff_delay(base, cap, k, &again), 0);
            sum += d;
        }
        NEAR(sum / 20000, ceiling / 2, ceiling * 0.02);
    }
    /* no overflow however many retries came before */
    assert_true(ms_load_backoff_delay(base, cap, 4000000000u, &rng) < cap);
}

static void test_budget_window(void **state)
{
    ms_load_budget_t b;

    (void)state;
    ms_load_budget_init(&b, 0.1);
    assert_false(ms_load_budget_try_retry(&b, 0)); /* no logical request yet */
    for (int i = 0; i < 100; i++)
        ms_load_budget_note_logical(&b, 0.5);
    for (int i = 0; i < 10; i++)
        assert_true(ms_load_budget_try_retry(&b, 0.9));
    assert_false(ms_load_budget_try_retry(&b, 0.9)); /* 11 > 0.1 x 100 */
    /* 100 more logical at 5 s: ten more retries */
    for (int i = 0; i < 100; i++)
        ms_load_budget_note_logical(&b, 5.2);
    for (int i = 0; i < 10; i++)
        assert_true(ms_load_budget_try_retry(&b, 9.9));
    assert_false(ms_load_budget_try_retry(&b, 9.9));
    /* at 10 s the first second leaves the window: its 100 logical and 10
     * retries go, 100 logical and 10 retries stay -> still full */
    assert_false(ms_load_budget_try_retry(&b, 10.0));
    for (int i = 0; i < 10; i++)
        ms_load_budget_note_logical(&b, 10.0);
    assert_true(ms_load_budget_try_retry(&b, 10.1)); /* 11 <= 0.1 x 110 */
    assert_false(ms_load_budget_try_retry(&b, 10.1));
    /* 20 s on, everything has left the window */
    assert_false(ms_load_budget_try_retry(&b, 30.0));
}

static void test_budget_long_run_ratio(void **state)
{
    ms_load_budget_t b;
    unsigned logical = 0, retries = 0;

    (void)state;
    /* 200 logical/s for 60 s, each asking for 3 retries: a storm. */
    ms_load_budget_init(&b, 0.2);
    for (int i = 0; i < 12000; i++) {
        double t = i / 200.0;
        ms_load_budget_note_logical(&b, t);
        logical++;
        for (int r = 0; r < 3; r++)
            retries += ms_load_budget_try_retry(&b, t);
    }
    NEAR((double)retries / logical, 0.2, 0.01);
}

static ms_load_retry_t retry(const char *text)
{
    ms_load_retry_t r;
    char err[MS_ERRBUF_SIZE] = "";

    assert_true(ms_load_retry_parse(text, &r, err, sizeof err));
    return r;
}

static void test_retry_parse(void **state)
{
    ms_load_retry_t r;
    char err[MS_ERRBUF_SIZE];
    const char *bad[] = {"",
                         "immediate",
                         "immediate:1.5",
                         "immediate:-1",
                         "immediate:101",
                         "bounded:3",
                         "bounded:3:-5",
                         "backoff:3:0:10",
                         "backoff:3:100:10",
                         "backoff:3:10",
                         "budget:-0.1",
                         "budget:",
                         "budget:0.1:2",
                         "always",
                         "none:1"};

    (void)state;
    r = retry("none");
    assert_int_equal(r.kind, MS_LOAD_RETRY_NONE);
    r = retry("immediate:3");
    assert_int_equal(r.kind, MS_LOAD_RETRY_IMMEDIATE);
    assert_int_equal(r.max_retries, 3);
    r = retry("bounded:2:250");
    assert_int_equal(r.kind, MS_LOAD_RETRY_BOUNDED);
    assert_int_equal(r.max_retries, 2);
    NEAR(r.delay_s, 0.25, 1e-12);
    r = retry("backoff:5:50:2000");
    assert_int_equal(r.kind, MS_LOAD_RETRY_BACKOFF);
    NEAR(r.base_s, 0.05, 1e-12);
    NEAR(r.cap_s, 2, 1e-12);
    r = retry("budget:0.1");
    assert_int_equal(r.kind, MS_LOAD_RETRY_BUDGET);
    assert_int_equal(r.max_retries, 3);
    NEAR(r.ratio, 0.1, 1e-12);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_false(ms_load_retry_parse(bad[i], &r, err, sizeof err));
        assert_non_null(strstr(err, "--retry"));
    }
}

static void test_terminal_parse(void **state)
{
    ms_load_terminal_t t;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_true(ms_load_terminal_parse("403,429,503", &t, err, sizeof err));
    assert_int_equal(t.n, 3);
    assert_int_equal(t.status[2], 503);
    assert_true(ms_load_terminal_parse("none", &t, err, sizeof err));
    assert_int_equal(t.n, 0);
    assert_true(ms_load_terminal_parse("", &t, err, sizeof err));
    assert_int_equal(t.n, 0);
    assert_false(ms_load_terminal_parse("403,", &t, err, sizeof err));
    assert_false(ms_load_terminal_parse("99", &t, err, sizeof err));
    assert_false(ms_load_terminal_parse("403;429", &t, err, sizeof err));
    assert_false(ms_load_terminal_parse("1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7", &t, err, sizeof err));
    assert_false(ms_load_terminal_parse(
        "500,501,502,503,504,505,506,507,508,509,510,511,512,513,514,515,516", &t, err,
        sizeof err));
    assert_non_null(strstr(err, "--terminal"));
}

static void test_result_classes(void **state)
{
    (void)state;
    assert_int_equal(ms_load_result_of_status(200), MS_LOAD_RESULT_2XX);
    assert_int_equal(ms_load_result_of_status(302), MS_LOAD_RESULT_2XX);
    assert_int_equal(ms_load_result_of_status(403), MS_LOAD_RESULT_4XX);
    assert_int_equal(ms_load_result_of_status(503), MS_LOAD_RESULT_5XX);
    assert_string_equal(ms_load_result_name(MS_LOAD_RESULT_TIMEOUT), "timeout");
    assert_string_equal(ms_load_result_name(MS_LOAD_RESULT_ERROR), "error");
}

/* Whether policy retries an attempt with this result and status, after retries_done. */
static bool retries(const char *policy_text, ms_load_result_t result, long status,
                    unsigned retries_done, double *delay)
{
    ms_load_retry_t policy = retry(policy_text);
    ms_load_terminal_t terminal;
    ms_load_budget_t budget;
    ms_load_rng_t rng;
    ms_load_attempt_t a = {result, status, retries_done, 3.0};
    char err[MS_ERRBUF_SIZE];

    assert_true(ms_load_terminal_parse("403,429,502", &terminal, err, sizeof err));
    ms_load_budget_init(&budget, policy.ratio);
    for (int i = 0; i < 100; i++)
        ms_load_budget_note_logical(&budget, 2.5);
    ms_load_rng_seed(&rng, 5);
    return ms_load_retry_next(&policy, &terminal, &a, &budget, &rng, delay);
}

static void test_retry_decision(void **state)
{
    double d = -1;

    (void)state;
    assert_false(retries("none", MS_LOAD_RESULT_5XX, 503, 0, &d));
    for (unsigned k = 0; k < 3; k++) {
        assert_true(retries("immediate:3", MS_LOAD_RESULT_5XX, 503, k, &d));
        NEAR(d, 0, 0);
    }
    assert_false(retries("immediate:3", MS_LOAD_RESULT_5XX, 503, 3, &d));
    assert_true(retries("immediate:3", MS_LOAD_RESULT_ERROR, 0, 0, &d));
    assert_true(retries("immediate:3", MS_LOAD_RESULT_TIMEOUT, 0, 0, &d));
    /* success, plain 4xx, terminal statuses (even a 5xx one) */
    assert_false(retries("immediate:3", MS_LOAD_RESULT_2XX, 200, 0, &d));
    assert_false(retries("immediate:3", MS_LOAD_RESULT_4XX, 404, 0, &d));
    assert_false(retries("immediate:3", MS_LOAD_RESULT_4XX, 429, 0, &d));
    assert_false(retries("immediate:3", MS_LOAD_RESULT_4XX, 403, 0, &d));
    assert_false(retries("immediate:3", MS_LOAD_RESULT_5XX, 502, 0, &d));
    assert_true(retries("bounded:2:300", MS_LOAD_RESULT_5XX, 500, 1, &d));
    NEAR(d, 0.3, 1e-12);
    assert_false(retries("bounded:2:300", MS_LOAD_RESULT_5XX, 500, 2, &d));
    assert_true(retries("backoff:4:100:1000", MS_LOAD_RESULT_5XX, 503, 2, &d));
    assert_true(d >= 0 && d < 0.4);
    assert_false(retries("immediate:0", MS_LOAD_RESULT_5XX, 503, 0, &d));
    /* the budget: 100 logical in the window, 0.02 allows 2 retries */
    assert_true(retries("budget:0.02", MS_LOAD_RESULT_5XX, 503, 0, &d));
    assert_false(retries("budget:0", MS_LOAD_RESULT_5XX, 503, 0, &d));
    assert_false(retries("budget:10", MS_LOAD_RESULT_5XX, 503, 3, &d)); /* at most 3 */
}

static void test_retry_budget_spent_only_when_retrying(void **state)
{
    ms_load_retry_t policy = retry("budget:0.05");
    ms_load_terminal_t terminal = {{403}, 1};
    ms_load_budget_t budget;
    ms_load_rng_t rng;
    ms_load_attempt_t ok = {MS_LOAD_RESULT_2XX, 200, 0, 1.0};
    ms_load_attempt_t fail = {MS_LOAD_RESULT_5XX, 503, 0, 1.0};
    double d;
    int granted = 0;

    (void)state;
    ms_load_budget_init(&budget, policy.ratio);
    ms_load_rng_seed(&rng, 1);
    for (int i = 0; i < 100; i++)
        ms_load_budget_note_logical(&budget, 0.5);
    for (int i = 0; i < 50; i++)
        assert_false(ms_load_retry_next(&policy, &terminal, &ok, &budget, &rng, &d));
    for (int i = 0; i < 50; i++)
        granted += ms_load_retry_next(&policy, &terminal, &fail, &budget, &rng, &d);
    assert_int_equal(granted, 5);
}

static void test_sketch(void **state)
{
    static ms_load_sketch_t s;

    (void)state;
    memset(&s, 0, sizeof s);
    NEAR(ms_load_sketch_quantile(&s, 0.5), 0, 0);
    for (int ms = 1; ms <= 1000; ms++)
        ms_load_sketch_add(&s, ms / 1000.0);
    NEAR(ms_load_sketch_quantile(&s, 0.5), 0.5, 0.5 * 0.006);
    NEAR(ms_load_sketch_quantile(&s, 0.99), 0.99, 0.99 * 0.006);
    NEAR(ms_load_sketch_quantile(&s, 1), 1.0, 0.006);
    /* out of range values land in the end buckets */
    ms_load_sketch_add(&s, 0);
    ms_load_sketch_add(&s, 1e12);
    assert_int_equal(s.total, 1002);
    assert_true(ms_load_sketch_quantile(&s, 0.0001) < 2e-5);
}

static void test_summary_json(void **state)
{
    static ms_load_stats_t s;
    ms_buf_t out;
    cJSON *j;

    (void)state;
    memset(&s, 0, sizeof s);
    s.duration_s = 10;
    s.expected = 2000;
    s.arrivals = 1990;
    s.drops = 10;
    s.max_lag_s = 0.0031;
    for (int i = 0; i < 900; i++)
        ms_load_stats_finish(&s, true, 1, 0.05);
    for (int i = 0; i < 80; i++)
        ms_load_stats_finish(&s, false, 4, 0.2);
    s.abandoned = 0;
    s.by_result[MS_LOAD_RESULT_2XX] = 900;
    s.by_result[MS_LOAD_RESULT_5XX] = 320;
    ms_buf_init(&out, 4096);
    assert_int_equal(ms_load_summary_json(&s, &out), MS_OK);
    assert_int_equal(out.data[out.len - 1], '\n');
    assert_null(memchr(out.data, '\n', out.len - 1));
    j = cJSON_Parse(out.data);
    assert_non_null(j);
    NEAR(cJSON_GetObjectItem(j, "logical")->valuedouble, 980, 0);
    NEAR(cJSON_GetObjectItem(j, "successes")->valuedouble, 900, 0);
    NEAR(cJSON_GetObjectItem(j, "failures")->valuedouble, 80, 0);
    NEAR(cJSON_GetObjectItem(j, "attempts")->valuedouble, 1220, 0);
    NEAR(cJSON_GetObjectItem(j, "attempts_per_logical")->valuedouble, 1220.0 / 980, 1e-4);
    NEAR(cJSON_GetObjectItem(j, "p50_ms")->valuedouble, 50, 0.5);
    NEAR(cJSON_GetObjectItem(j, "p99_ms")->valuedouble, 200, 2);
    NEAR(cJSON_GetObjectItem(j, "errors_share")->valuedouble, 80.0 / 980, 1e-4);
    NEAR(cJSON_GetObjectItem(j, "drops")->valuedouble, 10, 0);
    NEAR(cJSON_GetObjectItem(j, "requested_rate")->valuedouble, 200, 0);
    NEAR(cJSON_GetObjectItem(j, "achieved_rate")->valuedouble, 199, 0);
    NEAR(cJSON_GetObjectItem(j, "max_start_lag_ms")->valuedouble, 3.1, 1e-9);
    NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "attempts_by_result"), "5xx")->valuedouble, 320,
         0);
    cJSON_Delete(j);
    ms_buf_cleanup(&out);
}

static void test_metrics_families(void **state)
{
    ms_load_metrics_t m;
    static ms_load_stats_t s;
    ms_buf_t out;
    const char *want[] = {
        "meshscaler_load_requests_total{outcome=\"success\"} 1\n",
        "meshscaler_load_requests_total{outcome=\"failure\"} 0\n",
        "meshscaler_load_attempts_total{result=\"5xx\"} 1\n",
        "meshscaler_load_attempts_total{result=\"timeout\"} 0\n",
        "meshscaler_load_request_duration_seconds_bucket{le=\"0.05\"} 0\n",
        "meshscaler_load_request_duration_seconds_bucket{le=\"0.1\"} 1\n",
        "meshscaler_load_offered_rate 150\n",
        "meshscaler_load_in_flight 7\n",
        "meshscaler_load_retry_share 1\n",
        "meshscaler_load_client_drops_total 1\n",
        "meshscaler_load_arrivals_total 2\n",
        "meshscaler_load_max_start_lag_seconds 0.25\n",
    };

    (void)state;
    memset(&s, 0, sizeof s);
    assert_int_equal(ms_load_metrics_init(&m), MS_OK);
    ms_load_metrics_attempt(&m, MS_LOAD_RESULT_5XX);
    ms_load_metrics_attempt(&m, MS_LOAD_RESULT_2XX);
    ms_load_metrics_finish(&m, true, 0.07);
    ms_load_metrics_arrival(&m);
    ms_load_metrics_arrival(&m);
    ms_load_metrics_drop(&m);
    ms_load_stats_finish(&s, true, 2, 0.07);
    s.max_lag_s = 0.25;
    ms_load_metrics_gauges(&m, 150, 7, &s);
    ms_buf_init(&out, 1 << 20);
    assert_int_equal(ms_metrics_render(m.registry, &out), MS_OK);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (strstr(out.data, want[i]) == NULL)
            fail_msg("missing %s in:\n%s", want[i], out.data);
    }
    ms_buf_cleanup(&out);
    ms_load_metrics_cleanup(&m);
    ms_load_metrics_cleanup(&m); /* twice is harmless */
}

static ms_load_args_t parse(ms_load_options_t *o, char *err, size_t errlen, int argc, ...)
{
    char *argv[32] = {"meshscaler-load"};
    va_list ap;

    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return ms_load_options_parse(argc, argv, o, err, errlen);
}

static void test_options(void **state)
{
    ms_load_options_t o;
    char err[MS_ERRBUF_SIZE] = "";

    (void)state;
    assert_int_equal(parse(&o, err, sizeof err, 3, "--url", "http://127.0.0.1:8000/"),
                     MS_LOAD_ARGS_RUN);
    assert_string_equal(o.url, "http://127.0.0.1:8000/");
    assert_int_equal(o.profile.kind, MS_LOAD_PROFILE_STEADY);
    NEAR(o.profile.base, 10, 0);
    NEAR(o.duration_s, 10, 0);
    assert_int_equal(o.arrivals, MS_LOAD_ARRIVALS_POISSON);
    assert_int_equal(o.max_in_flight, 1000);
    assert_int_equal(o.retry.kind, MS_LOAD_RETRY_NONE);
    assert_int_equal(o.terminal.n, 2);
    assert_int_equal(o.terminal.status[0], 403);
    assert_int_equal(o.terminal.status[1], 429);
    assert_int_equal(o.timeout_ms, 2000);
    assert_true(o.seed == 1);
    assert_null(o.metrics_addr);
    assert_null(o.summary_path);

    assert_int_equal(parse(&o, err, sizeof err, 21, "--url=http://x/", "--profile",
                           "peak:10:100:2:3", "--duration", "8.5", "--arrivals=uniform", "--retry",
                           "backoff:3:50:800", "--terminal", "429", "--timeout-ms", "500",
                           "--max-in-flight", "64", "--seed", "18446744073709551615",
                           "--metrics-addr", "127.0.0.1:9102", "--summary", "/tmp/s.json"),
                     MS_LOAD_ARGS_RUN);
    assert_int_equal(o.profile.kind, MS_LOAD_PROFILE_PEAK);
    NEAR(o.duration_s, 8.5, 0);
    assert_int_equal(o.arrivals, MS_LOAD_ARRIVALS_UNIFORM);
    assert_int_equal(o.retry.kind, MS_LOAD_RETRY_BACKOFF);
    assert_int_equal(o.terminal.n, 1);
    assert_int_equal(o.timeout_ms, 500);
    assert_int_equal(o.max_in_flight, 64);
    assert_true(o.seed == UINT64_MAX);
    assert_string_equal(o.metrics_addr, "127.0.0.1:9102");
    assert_string_equal(o.summary_path, "/tmp/s.json");

    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--metrics-addr", "0"),
                     MS_LOAD_ARGS_RUN);
    assert_null(o.metrics_addr);
    assert_int_equal(parse(&o, err, sizeof err, 2, "--help"), MS_LOAD_ARGS_HELP);
}

static void test_options_invalid(void **state)
{
    ms_load_options_t o;
    char err[MS_ERRBUF_SIZE] = "";

    (void)state;
    assert_int_equal(parse(&o, err, sizeof err, 1), MS_LOAD_ARGS_INVALID);
    assert_non_null(strstr(err, "--url is required"));
    assert_int_equal(parse(&o, err, sizeof err, 3, "--url", "ftp://x/"), MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 2, "--url"), MS_LOAD_ARGS_INVALID);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(parse(&o, err, sizeof err, 3, "--bogus", "1"), MS_LOAD_ARGS_INVALID);
    assert_non_null(strstr(err, "unknown flag --bogus"));
    assert_int_equal(parse(&o, err, sizeof err, 2, "http://x/"), MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--duration", "0"),
                     MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--max-in-flight", "-1"),
                     MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--timeout-ms", "1e3"),
                     MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--arrivals", "bursty"),
                     MS_LOAD_ARGS_INVALID);
    assert_non_null(strstr(err, "--arrivals \"bursty\""));
    assert_int_equal(
        parse(&o, err, sizeof err, 5, "--url", "http://x/", "--seed", "18446744073709551616"),
        MS_LOAD_ARGS_INVALID);
    assert_int_equal(parse(&o, err, sizeof err, 5, "--url", "http://x/", "--retry", "always"),
                     MS_LOAD_ARGS_INVALID);
    assert_non_null(strstr(err, "--retry \"always\""));
    assert_int_equal(
        parse(&o, err, sizeof err, 2, "--a-flag-name-much-longer-than-thirty-two-bytes=1"),
        MS_LOAD_ARGS_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_parse),
        cmocka_unit_test(test_profile_rate),
        cmocka_unit_test(test_profile_expected),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_arrivals_poisson),
        cmocka_unit_test(test_arrivals_poisson_gaps),
        cmocka_unit_test(test_arrivals_uniform),
        cmocka_unit_test(test_backoff_full_jitter),
        cmocka_unit_test(test_budget_window),
        cmocka_unit_test(test_budget_long_run_ratio),
        cmocka_unit_test(test_retry_parse),
        cmocka_unit_test(test_terminal_parse),
        cmocka_unit_test(test_result_classes),
        cmocka_unit_test(test_retry_decision),
        cmocka_unit_test(test_retry_budget_spent_only_when_retrying),
        cmocka_unit_test(test_sketch),
        cmocka_unit_test(test_summary_json),
        cmocka_unit_test(test_metrics_families),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_options_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
