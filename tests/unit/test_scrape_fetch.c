/*
 * test_scrape_fetch.c - direct reads of sidecars (scrape_fetch.h) against
 * real HAProxy processes (their Prometheus exporter) and hostile local
 * endpoints (tests/tools/sidecars.c): values and rates from two reads,
 * kept connections, every failure reason made to happen for real, one slow
 * pod not delaying the others, the deadline, the sample and its
 * replacements. Exits 77 (skipped) when haproxy is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meshscaler/clock.h"
#include "meshscaler/http.h"
#include "meshscaler/scrape_fetch.h"
#include "../tools/sidecars.h"

#define NHAP 3

/* Shared by the tests: three HAProxy "pods" (server maxconn 10, 20, 30)
 * whose backend is a silent socket, so requests sent to a frontend stay in
 * flight; and the hostile endpoints. */
static char dir[] = "/tmp/ms-scrape-fetch-XXXXXX";
static sc_haproxy_t hap[NHAP];
static sc_hostile_t *silent, *endless, *garbage, *e500;
static unsigned refused;
/* One more HAProxy serving its exporter on 12 loopback addresses
 * (127.0.1.1-12): twelve pods for the sample test. Started here, not in the
 * test, so a failing check (cmocka jumps out of the test) still stops it. */
enum { MANY_PODS = 20, MANY_GOOD = 12 };
static sc_haproxy_t many;
static char many_ips[MANY_PODS][16];

static int teardown_all(void **state);

static int setup_all(void **state)
{
    static const unsigned smax[NHAP] = {10, 20, 30};
    const char *addrs[MANY_GOOD];
    char name[32];

    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    for (int i = 0; i < MANY_PODS; i++) {
        snprintf(many_ips[i], sizeof many_ips[i], "127.0.1.%u", (unsigned)(i + 1) % 256u);
        if (i < MANY_GOOD)
            addrs[i] = many_ips[i];
    }
    silent = sc_hostile_start(SC_SILENT);
    endless = sc_hostile_start(SC_ENDLESS);
    garbage = sc_hostile_start(SC_GARBAGE);
    e500 = sc_hostile_start(SC_E500);
    refused = sc_refused_port();
    for (int i = 0; i < NHAP; i++) {
        snprintf(name, sizeof name, "pod%d", i);
        if (!sc_haproxy_start(&hap[i], dir, name, NULL, 0, sc_hostile_port(silent), smax[i]))
            goto fail;
    }
    if (!sc_haproxy_start(&many, dir, "many", addrs, MANY_GOOD, sc_hostile_port(silent), 50))
        goto fail;
    return ms_http_global_init() == MS_OK ? 0 : -1;
fail: /* cmocka runs no teardown after a failed setup */
    fprintf(stderr, "haproxy did not start (see the logs in %s)\n", dir);
    teardown_all(state);
    return -1;
}

static int teardown_all(void **state)
{
    char cmd[128];

    (void)state;
    for (int i = 0; i < NHAP; i++)
        sc_haproxy_stop(&hap[i]);
    sc_haproxy_stop(&many);
    sc_hostile_stop(silent);
    sc_hostile_stop(endless);
    sc_hostile_stop(garbage);
    sc_hostile_stop(e500);
    ms_http_global_cleanup();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static ms_scrape_fetch_pod_t pod(const char *uid, unsigned port)
{
    return (ms_scrape_fetch_pod_t){.uid = uid, .ip = "127.0.0.1", .port = port};
}

static ms_scrape_fetcher_t *fetcher(long timeout_ms, size_t max_bytes)
{
    ms_scrape_fetch_options_t o = {.timeout_ms = timeout_ms, .max_bytes = max_bytes};
    char err[MS_ERRBUF_SIZE];
    ms_scrape_fetcher_t *f = ms_scrape_fetcher_new(&o, err, sizeof err);

    if (f == NULL)
        fail_msg("fetcher: %s", err);
    return f;
}

static void read_ok(ms_scrape_fetcher_t *f, const ms_scrape_fetch_pod_t *pods, size_t n,
                    uint64_t seed, double now, double deadline, ms_scrape_rates_t *rates,
                    ms_scrape_fetch_result_t *res, ms_scrape_fetch_summary_t *sum)
{
    char err[MS_ERRBUF_SIZE];
    const ms_scrape_preset_t *p = ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY);

    if (ms_scrape_fetch_read(f, p, pods, n, seed, now, deadline, rates, res, sum, err,
                             sizeof err) != MS_OK)
        fail_msg("read: %s", err);
}

static void expect_reason(const ms_scrape_fetch_result_t *r, ms_scrape_fetch_reason_t want)
{
    if (r->reason != want)
        fail_msg("reason %s (%s), want %s", ms_scrape_fetch_reason_name(r->reason), r->message,
                 ms_scrape_fetch_reason_name(want));
}

/* Two reads of the three HAProxy pods: limits and in-flight values as the
 * exporter says, no rate on the first read, the admitted rate on the second
 * (k sessions in 2 s of the caller's clock), and the second read on the
 * connections the first opened. */
static void test_haproxy_values_rates_keepalive(void **state)
{
    ms_scrape_fetch_pod_t pods[NHAP] = {pod("uid-0", hap[0].exporter_port),
                                        pod("uid-1", hap[1].exporter_port),
                                        pod("uid-2", hap[2].exporter_port)};
    ms_scrape_fetch_result_t res[NHAP];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(0, 0);
    ms_scrape_rates_t rates;
    int held[4];

    (void)state;
    ms_scrape_rates_init(&rates);
    read_ok(f, pods, NHAP, 1, 100.0, 0, &rates, res, &sum);
    assert_int_equal(sum.sample, NHAP);
    assert_int_equal(sum.ok, NHAP);
    assert_int_equal(sum.new_connections, NHAP);
    for (int i = 0; i < NHAP; i++) {
        expect_reason(&res[i], MS_SCRAPE_FETCH_OK);
        assert_int_equal(res[i].http_status, 200);
        assert_true(res[i].values.has_limit);
        assert_true(res[i].values.limit == 10.0 * (i + 1));
        assert_true(res[i].values.has_in_flight);
        assert_true(res[i].values.in_flight == 0);
        assert_false(res[i].values.admitted.observed);
        assert_true(res[i].bytes > 1000);
    }
    sc_hold_requests(hap[1].frontend_port, held, 4);
    ms_clock_sleep(0.5); /* HAProxy connects to the silent backend */
    read_ok(f, pods, NHAP, 2, 102.0, 0, &rates, res, &sum);
    assert_int_equal(sum.ok, NHAP);
    assert_int_equal(sum.new_connections, 0);
    assert_true(res[1].values.in_flight == 4);
    assert_true(res[1].values.admitted.observed);
    assert_true(res[1].values.admitted.rate == 2.0);
    assert_true(res[0].values.admitted.observed);
    assert_true(res[0].values.admitted.rate == 0);
    sc_close_all(held, 4);
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

/* Each failure for real, each with its reason and a message naming the
 * pod; with 7 pods the sample is 6, and the failures are replaced until
 * the order runs out, so every pod is read (the seed puts the bad address
 * last, so only replacements reach it). */
static void test_failure_reasons(void **state)
{
    enum { OK_, REFUSED_, SILENT_, ENDLESS_, GARBAGE_, E500_, BADIP_, N };
    ms_scrape_fetch_pod_t pods[N] = {[OK_] = pod("good", hap[0].exporter_port),
                                     [REFUSED_] = pod("closed", refused),
                                     [SILENT_] = pod("hung", sc_hostile_port(silent)),
                                     [ENDLESS_] = pod("huge", sc_hostile_port(endless)),
                                     [GARBAGE_] = pod("garbage", sc_hostile_port(garbage)),
                                     [E500_] = pod("broken", sc_hostile_port(e500)),
                                     [BADIP_] = {.uid = "noip", .ip = "not-an-ip"}};
    static const ms_scrape_fetch_reason_t want[N] = {
        MS_SCRAPE_FETCH_OK,         MS_SCRAPE_FETCH_REFUSED, MS_SCRAPE_FETCH_TIMEOUT,
        MS_SCRAPE_FETCH_TOO_BIG,    MS_SCRAPE_FETCH_PARSE,   MS_SCRAPE_FETCH_HTTP_STATUS,
        MS_SCRAPE_FETCH_BAD_ADDRESS};
    ms_scrape_fetch_result_t res[N];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(500, 64 * 1024);
    ms_scrape_rates_t rates;
    size_t order[N];
    uint64_t seed = 0;

    (void)state;
    do
        ms_scrape_sample_order(N, ++seed, order);
    while (order[N - 1] != BADIP_);
    ms_scrape_rates_init(&rates);
    read_ok(f, pods, N, seed, 100.0, 0, &rates, res, &sum);
    for (int i = 0; i < N; i++) {
        if (getenv("MS_TEST_VERBOSE") != NULL)
            fprintf(stderr, "%-11s %4zu B %.3f s %s\n", ms_scrape_fetch_reason_name(res[i].reason),
                    res[i].bytes, res[i].seconds, res[i].message);
        expect_reason(&res[i], want[i]);
        if (i != OK_ && strstr(res[i].message, pods[i].uid) == NULL)
            fail_msg("message \"%s\" does not name pod %s", res[i].message, pods[i].uid);
    }
    assert_int_equal(sum.sample, 6);
    assert_int_equal(sum.attempted, N);
    assert_int_equal(sum.ok, 1);
    assert_int_equal(sum.failed, N - 1);
    assert_int_equal(res[E500_].http_status, 500);
    assert_non_null(strstr(res[ENDLESS_].message, "larger than 65536 bytes"));
    assert_true(res[ENDLESS_].bytes <= 64 * 1024);
    assert_non_null(strstr(res[GARBAGE_].message, "line 1"));
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

/* A pod that never answers costs its own read the per-read timeout, not
 * the others: theirs end in a fraction of it, the whole read in about it.
 * The seed puts the hung pod first in the order, so reads made one after
 * the other would end the others after it. */
static void test_slow_pod_does_not_delay_others(void **state)
{
    ms_scrape_fetch_pod_t pods[NHAP + 1] = {
        pod("a", hap[0].exporter_port), pod("hung", sc_hostile_port(silent)),
        pod("b", hap[1].exporter_port), pod("c", hap[2].exporter_port)};
    ms_scrape_fetch_result_t res[NHAP + 1];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(1000, 0);
    ms_scrape_rates_t rates;
    size_t order[NHAP + 1];
    uint64_t seed = 0;

    (void)state;
    do
        ms_scrape_sample_order(NHAP + 1, ++seed, order);
    while (order[0] != 1);
    ms_scrape_rates_init(&rates);
    read_ok(f, pods, NHAP + 1, seed, 100.0, 0, &rates, res, &sum);
    assert_int_equal(sum.sample, NHAP + 1);
    expect_reason(&res[1], MS_SCRAPE_FETCH_TIMEOUT);
    for (int i = 0; i < NHAP + 1; i++) {
        if (i == 1)
            continue;
        expect_reason(&res[i], MS_SCRAPE_FETCH_OK);
        if (res[i].ended > 0.5)
            fail_msg("pod %s ended %.3f s into the read, beside a hung pod", pods[i].uid,
                     res[i].ended);
    }
    if (sum.seconds < 0.9 || sum.seconds > 1.5)
        fail_msg("the read took %.3f s, want about the 1 s timeout", sum.seconds);
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

/* The deadline ends the read whatever the per-read timeout: hung pods are
 * DEADLINE at 0.4 s though their timeout is 5 s, the others were read, and
 * no replacement starts after it: of 5 pods the sample is 4 (a seed that
 * puts both hung pods in it), and the fifth stays NOT_READ. */
static void test_deadline(void **state)
{
    ms_scrape_fetch_pod_t pods[5] = {
        pod("a", hap[0].exporter_port), pod("hung-1", sc_hostile_port(silent)),
        pod("hung-2", sc_hostile_port(silent)), pod("b", hap[1].exporter_port),
        pod("c", hap[2].exporter_port)};
    ms_scrape_fetch_result_t res[5];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(5000, 0);
    ms_scrape_rates_t rates;
    size_t order[5];
    uint64_t seed = 0;
    double t0;

    (void)state;
    do /* both hung pods among the first 4 of the order */
        ms_scrape_sample_order(5, ++seed, order);
    while (order[4] == 1 || order[4] == 2);
    ms_scrape_rates_init(&rates);
    t0 = ms_clock_monotonic();
    read_ok(f, pods, 5, seed, 100.0, t0 + 0.4, &rates, res, &sum);
    if (sum.seconds < 0.35 || sum.seconds > 0.7)
        fail_msg("the read took %.3f s, want the 0.4 s deadline", sum.seconds);
    assert_int_equal(sum.sample, 4);
    for (size_t i = 0; i < 4; i++)
        expect_reason(&res[order[i]], order[i] == 1 || order[i] == 2 ? MS_SCRAPE_FETCH_DEADLINE
                                                                     : MS_SCRAPE_FETCH_OK);
    expect_reason(&res[order[4]], MS_SCRAPE_FETCH_NOT_READ);
    assert_int_equal(sum.attempted, 4);
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

/* Every one of n pods read twice, one at a time: the second read opens no
 * connection. libcurl's own cache keeps 4 per transfer in the batch, here
 * 4 in all, so without the fetcher's setting it would close all but 4
 * (with many at once it closes a few as the read winds down). */
static void keepalive_all(const ms_scrape_fetch_pod_t *pods, size_t n)
{
    ms_scrape_fetch_options_t o = {.sample = n, .max_in_flight = 1};
    ms_scrape_fetch_result_t res[16];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_rates_t rates;
    char err[MS_ERRBUF_SIZE];
    ms_scrape_fetcher_t *f = ms_scrape_fetcher_new(&o, err, sizeof err);

    assert_non_null(f);
    assert_true(n <= 16);
    ms_scrape_rates_init(&rates);
    for (int r = 0; r < 2; r++) {
        read_ok(f, pods, n, 5, 100.0 + r, 0, &rates, res, &sum);
        assert_int_equal(sum.ok, n);
        assert_int_equal(sum.new_connections, r == 0 ? (long)n : 0);
    }
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

/* 20 pods: the sample is 9, read in the seed's order; each refused pod of
 * the order is replaced by the next, so 9 answer, the first `attempted` of
 * the order were tried and the rest are NOT_READ. The pods are 20 loopback
 * addresses: 12 served by `many`, 8 with nothing listening.
 * Then the 12 served ones, all read twice, on kept connections. */
static void test_sample_and_replacement(void **state)
{
    enum { N = MANY_PODS, GOOD = MANY_GOOD };
    char uids[N][16], err[MS_ERRBUF_SIZE];
    ms_scrape_fetch_pod_t pods[N];
    ms_scrape_fetch_result_t res[N];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(0, 0);
    ms_scrape_rates_t rates;
    size_t order[N], refused_in_prefix = 0, want_attempted = 0, ok = 0;

    (void)state;
    for (int i = 0; i < N; i++) {
        snprintf(uids[i], sizeof uids[i], "uid-%u", (unsigned)i % 1000u);
        pods[i] =
            (ms_scrape_fetch_pod_t){.uid = uids[i], .ip = many_ips[i], .port = many.exporter_port};
    }
    ms_scrape_rates_init(&rates);
    assert_int_equal(ms_scrape_fetch_read(f, ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY), pods, N, 42,
                                          100.0, 0, &rates, res, &sum, err, sizeof err),
                     MS_OK);
    ms_scrape_sample_order(N, 42, order);
    for (size_t i = 0; ok < 9 && i < N; i++, want_attempted++) {
        ok += order[i] < GOOD;
        refused_in_prefix += order[i] >= GOOD;
    }
    assert_int_equal(sum.sample, 9);
    assert_int_equal(sum.ok, 9);
    assert_int_equal(sum.attempted, want_attempted);
    assert_int_equal(sum.failed, refused_in_prefix);
    assert_true(refused_in_prefix > 0); /* the seed makes the test replace */
    for (size_t i = 0; i < N; i++)
        expect_reason(&res[order[i]], i >= want_attempted ? MS_SCRAPE_FETCH_NOT_READ
                                      : order[i] < GOOD   ? MS_SCRAPE_FETCH_OK
                                                          : MS_SCRAPE_FETCH_REFUSED);
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
    keepalive_all(pods, GOOD);
}

/* No pods: nothing read, nothing wanted, no error. */
static void test_no_pods(void **state)
{
    ms_scrape_fetch_result_t res[1];
    ms_scrape_fetch_summary_t sum;
    ms_scrape_fetcher_t *f = fetcher(0, 0);
    ms_scrape_rates_t rates;

    (void)state;
    ms_scrape_rates_init(&rates);
    read_ok(f, NULL, 0, 1, 100.0, 0, &rates, res, &sum);
    assert_int_equal(sum.sample, 0);
    assert_int_equal(sum.attempted, 0);
    assert_int_equal(sum.ok, 0);
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_haproxy_values_rates_keepalive),
        cmocka_unit_test(test_failure_reasons),
        cmocka_unit_test(test_slow_pod_does_not_delay_others),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_sample_and_replacement),
        cmocka_unit_test(test_no_pods),
    };

    if (system("command -v haproxy >/dev/null 2>&1") != 0) {
        fprintf(stderr, "haproxy is not installed: skipped\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
