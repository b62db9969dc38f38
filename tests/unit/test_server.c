/*
 * test_server.c - the metrics registry's exposition text, and the
 * libwebsockets endpoints answering real HTTP requests over loopback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "meshscaler/http.h"
#include "meshscaler/metrics.h"
#include "meshscaler/server.h"

static void counters_gauges_and_histograms_render(void **state)
{
    ms_metrics_t *m = ms_metrics_new();
    const char *labels[] = {"reason"};
    const char *obj[] = {"namespace", "name"};
    const double buckets[] = {0.1, 1};
    int decisions, desired, sync;
    ms_buf_t out;
    (void)state;

    decisions = ms_metrics_family(m, MS_METRIC_COUNTER, "meshscaler_decisions_total",
                                  "Decisions by reason.", labels, 1, NULL, 0);
    desired = ms_metrics_family(m, MS_METRIC_GAUGE, "meshscaler_desired_replicas",
                                "Desired replicas per object.", obj, 2, NULL, 0);
    sync = ms_metrics_family(m, MS_METRIC_HISTOGRAM, "meshscaler_sync_duration_seconds",
                             "Sync duration.", NULL, 0, buckets, 2);
    ms_metrics_add(m, decisions, (const char *[]){"ScaleUpLimit"}, 1);
    ms_metrics_add(m, decisions, (const char *[]){"ScaleUpLimit"}, 2);
    ms_metrics_set(m, desired, (const char *[]){"shop", "a\"b\\c\nd"}, 8);
    ms_metrics_set(m, desired, (const char *[]){"shop", "gone"}, 3);
    ms_metrics_remove(m, desired, (const char *[]){"shop", "gone"});
    ms_metrics_observe(m, sync, NULL, 0.05);
    ms_metrics_observe(m, sync, NULL, 0.5);
    ms_metrics_observe(m, sync, NULL, 5);

    ms_buf_init(&out, 1 << 20);
    assert_int_equal(ms_metrics_render(m, &out), MS_OK);
    assert_string_equal(out.data,
        "# HELP meshscaler_decisions_total Decisions by reason.\n"
        "# TYPE meshscaler_decisions_total counter\n"
        "meshscaler_decisions_total{reason=\"ScaleUpLimit\"} 3\n"
        "# HELP meshscaler_desired_replicas Desired replicas per object.\n"
        "# TYPE meshscaler_desired_replicas gauge\n"
        "meshscaler_desired_replicas{namespace=\"shop\",name=\"a\\\"b\\\\c\\nd\"} 8\n"
        "# HELP meshscaler_sync_duration_seconds Sync duration.\n"
        "# TYPE meshscaler_sync_duration_seconds histogram\n"
        "meshscaler_sync_duration_seconds_bucket{le=\"0.1\"} 1\n"
        "meshscaler_sync_duration_seconds_bucket{le=\"1\"} 2\n"
        "meshscaler_sync_duration_seconds_bucket{le=\"+Inf\"} 3\n"
        "meshscaler_sync_duration_seconds_sum 5.55\n"
        "meshscaler_sync_duration_seconds_count 3\n");
    ms_buf_cleanup(&out);
    ms_metrics_free(m);
}

static void many_series_stay_addressable(void **state)
{
    ms_metrics_t *m = ms_metrics_new();
    const char *labels[] = {"name"};
    int g = ms_metrics_family(m, MS_METRIC_GAUGE, "g", "h", labels, 1, NULL, 0);
    char name[32];
    ms_buf_t out;
    (void)state;

    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "obj-%d", i);
        ms_metrics_set(m, g, (const char *[]){name}, i);
    }
    for (int i = 0; i < 5000; i += 2) {
        snprintf(name, sizeof name, "obj-%d", i);
        ms_metrics_remove(m, g, (const char *[]){name});
    }
    ms_metrics_add(m, g, (const char *[]){"obj-4999"}, 1);
    ms_buf_init(&out, 1 << 24);
    assert_int_equal(ms_metrics_render(m, &out), MS_OK);
    assert_non_null(strstr(out.data, "g{name=\"obj-4999\"} 5000\n"));
    assert_null(strstr(out.data, "g{name=\"obj-4998\"}"));
    ms_buf_cleanup(&out);
    ms_metrics_free(m);
}

static long get(int port, const char *path, ms_buf_t *body_out)
{
    char url[128];
    char err[256];
    ms_http_options_t o = {0};
    ms_http_client_t *c = ms_http_client_new(&o, err, sizeof err);
    ms_http_response_t resp;
    ms_http_request_t req = {.url = url, .timeout_ms = 5000};
    long status;

    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    ms_http_response_init(&resp, 0);
    assert_int_equal(ms_http_do(c, &req, &resp), MS_OK);
    status = resp.status;
    if (body_out != NULL) {
        *body_out = resp.body;
        ms_buf_init(&resp.body, 1);
    }
    ms_http_response_cleanup(&resp);
    ms_http_client_free(c);
    return status;
}

static void endpoints_answer_over_http(void **state)
{
    ms_metrics_t *m = ms_metrics_new();
    atomic_bool ready = false;
    ms_server_options_t o = {.metrics_addr = "127.0.0.1:0", .health_addr = "127.0.0.1:0",
                             .metrics = m, .ready = &ready};
    char err[256];
    ms_server_t *s;
    ms_buf_t body;
    int mp, hp;
    (void)state;

    ms_metrics_set(m, ms_metrics_family(m, MS_METRIC_GAUGE, "meshscaler_leader", "Leader.", NULL, 0, NULL, 0),
                   NULL, 1);
    s = ms_server_start(&o, err, sizeof err);
    assert_non_null(s);
    mp = ms_server_metrics_port(s);
    hp = ms_server_health_port(s);
    assert_true(mp > 0 && hp > 0 && mp != hp);

    assert_int_equal(get(hp, "/healthz", NULL), 200);
    assert_int_equal(get(hp, "/readyz", NULL), 503);
    atomic_store(&ready, true);
    assert_int_equal(get(hp, "/readyz", NULL), 200);
    assert_int_equal(get(hp, "/metrics", NULL), 404); /* each endpoint on its own address */
    assert_int_equal(get(mp, "/metrics", &body), 200);
    assert_non_null(strstr(body.data, "meshscaler_leader 1\n"));
    ms_buf_cleanup(&body);
    assert_int_equal(get(mp, "/nope", NULL), 404);

    ms_server_stop(s);
    ms_metrics_free(m);
}

static void large_metrics_pages_arrive_whole(void **state)
{
    ms_metrics_t *m = ms_metrics_new();
    const char *labels[] = {"name"};
    int g = ms_metrics_family(m, MS_METRIC_GAUGE, "meshscaler_desired_replicas", "h", labels, 1, NULL, 0);
    ms_server_options_t o = {.metrics_addr = "127.0.0.1:0", .health_addr = "0", .metrics = m};
    char err[256], name[32];
    ms_server_t *s;
    ms_buf_t body;
    (void)state;

    for (int i = 0; i < 10000; i++) { /* about 500 KB: many writable rounds */
        snprintf(name, sizeof name, "object-%05d", i);
        ms_metrics_set(m, g, (const char *[]){name}, i);
    }
    s = ms_server_start(&o, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(ms_server_health_port(s), -1);
    assert_int_equal(get(ms_server_metrics_port(s), "/metrics", &body), 200);
    assert_non_null(strstr(body.data, "meshscaler_desired_replicas{name=\"object-09999\"} 9999\n"));
    assert_true(body.len > 400000);
    ms_buf_cleanup(&body);
    ms_server_stop(s);
    ms_metrics_free(m);
}

static void bad_or_taken_addresses_fail_clearly(void **state)
{
    ms_server_options_t o = {.metrics_addr = "localhost", .health_addr = "0"};
    char err[256] = "";
    ms_server_t *s, *first;
    char addr[64];
    (void)state;

    assert_null(ms_server_start(&o, err, sizeof err));
    assert_non_null(strstr(err, "metrics address \"localhost\": want HOST:PORT"));

    o.metrics_addr = "127.0.0.1:47121";
    o.health_addr = "127.0.0.1:47121";
    assert_null(ms_server_start(&o, err, sizeof err));
    assert_non_null(strstr(err, "are both 127.0.0.1:47121"));
    o.health_addr = "0";

    o.metrics_addr = "127.0.0.1:0";
    first = ms_server_start(&o, err, sizeof err);
    assert_non_null(first);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ms_server_metrics_port(first));
    o.metrics_addr = addr;
    s = ms_server_start(&o, err, sizeof err);
    assert_null(s);
    assert_non_null(strstr(err, "cannot listen on metrics address"));
    ms_server_stop(first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counters_gauges_and_histograms_render),
        cmocka_unit_test(many_series_stay_addressable),
        cmocka_unit_test(endpoints_answer_over_http),
        cmocka_unit_test(large_metrics_pages_arrive_whole),
        cmocka_unit_test(bad_or_taken_addresses_fail_clearly),
    };
    ms_http_global_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
