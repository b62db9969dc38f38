/*
 * bench/prometheus.c - time and queries per tick against a real Prometheus.
 *
 *   bench_prometheus --url URL --objects N [--ticks T] [--in-flight K]
 *                    [--per-object-query] [--naive]
 *   bench_prometheus --print-query [--window W] envoy|haproxy|linkerd|cpu [CONTAINER...]
 *
 * Each object is a Deployment "w<i>" in namespace "bench-<i/100>" with a
 * SidecarConcurrency (haproxy) metric, a SidecarCPU metric and a downstream
 * guardrail whose queries are the same for every object. With
 * --per-object-query each object also has a Prometheus metric whose template
 * uses {{namespace}} and {{name}}, so it expands to a distinct query per
 * object (the honest cost of per-object user PromQL). bench/prometheus.sh
 * starts a Prometheus holding series for that many workloads.
 *
 * The figures: queries per tick as planned, as counted by Prometheus itself
 * (prometheus_http_requests_total{handler="/api/v1/query"} before and after),
 * wall time per tick, objects whose values came back, and what a
 * one-query-per-object design would send for the same objects. --naive also
 * runs that design once (every value as its own query) and times it.
 *
 *   bench_prometheus --decode [--series N]
 *
 * needs no server: it builds the answer of one batched preset query (N
 * series, default 50,000, i.e. 10,000 objects of five fields, about 5.5 MB)
 * and prints how long ms_prom_decode() takes and the heap its result holds,
 * beside the same figures for a cJSON tree of that answer (what the decoder
 * kept until it scanned the body itself). It prints figures only.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "meshscaler/buf.h"
#include "meshscaler/http.h"
#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/spec.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prometheus's own count of /api/v1/query requests, from its /metrics. */
static double served_queries(ms_http_client_t *http, const char *url)
{
    char metrics_url[512];
    ms_http_request_t req = {.url = metrics_url, .timeout_ms = 10000};
    ms_http_response_t resp;
    double total = -1;

    snprintf(metrics_url, sizeof metrics_url, "%s/metrics", url);
    ms_http_response_init(&resp, 0);
    if (ms_http_do(http, &req, &resp) == MS_OK && resp.status == 200 && resp.body.data) {
        const char *key = "prometheus_http_requests_total{code=\"";
        total = 0;
        for (const char *p = resp.body.data; (p = strstr(p, key)) != NULL; p++) {
            const char *eol = strchr(p, '\n');
            const char *h = strstr(p, "handler=\"/api/v1/query\"}");
            if (h != NULL && (eol == NULL || h < eol)) {
                const char *sp = strchr(h, ' ');
                if (sp != NULL)
                    total += strtod(sp + 1, NULL);
            }
        }
    }
    ms_http_response_cleanup(&resp);
    return total;
}

static int print_query(int argc, char **argv)
{
    static const char *const names[] = {"envoy", "haproxy", "linkerd", "cpu"};
    ms_prom_preset_options_t o = {0};
    char err[MS_ERRBUF_SIZE], *q = NULL;

    if (argc >= 3 && strcmp(argv[0], "--window") == 0) {
        o.rate_window = argv[1];
        argc -= 2;
        argv += 2;
    }

    for (int k = 0; k < MS_PROM_KIND__COUNT; k++) {
        if (strcmp(argv[0], names[k]) != 0)
            continue;
        ms_prom_preset_scope_t scope = {.containers = (const char *const *)argv + 1,
                                        .ncontainers = (size_t)(argc - 1)};
        if (ms_prom_preset_query((ms_prom_kind_t)k, &o, &scope, &q, err, sizeof err) != MS_OK) {
            fprintf(stderr, "bench_prometheus: %s\n", err);
            return 2;
        }
        puts(q);
        free(q);
        return 0;
    }
    fprintf(stderr, "bench_prometheus: unknown preset %s\n", argv[0]);
    return 2;
}

static void make_spec(ms_spec_t *s, bool per_object)
{
    ms_spec_init(s);
    s->min_replicas = 1;
    s->max_replicas = 50;
    s->nmetrics = per_object ? 3 : 2;
    snprintf(s->metrics[0].name, sizeof s->metrics[0].name, "sidecar");
    s->metrics[0].source = MS_SOURCE_SIDECAR_CONCURRENCY;
    s->metrics[0].proxy = MS_PROXY_HAPROXY;
    s->metrics[0].target_type = MS_TARGET_UTILIZATION;
    s->metrics[0].target = 70;
    snprintf(s->metrics[1].name, sizeof s->metrics[1].name, "proxy-cpu");
    s->metrics[1].source = MS_SOURCE_SIDECAR_CPU;
    s->metrics[1].container = strdup("istio-proxy");
    s->metrics[1].target_type = MS_TARGET_UTILIZATION;
    s->metrics[1].target = 75;
    if (per_object) {
        snprintf(s->metrics[2].name, sizeof s->metrics[2].name, "inflight");
        s->metrics[2].source = MS_SOURCE_PROMETHEUS;
        s->metrics[2].query = strdup(
            "sum(bench_requests_in_flight{namespace=\"{{namespace}}\",workload=\"{{name}}\"})");
        s->metrics[2].target_type = MS_TARGET_AVERAGE_VALUE;
        s->metrics[2].target = 10;
    }
    s->ndownstreams = 1;
    snprintf(s->downstreams[0].name, sizeof s->downstreams[0].name, "edge");
    s->downstreams[0].usage_query = strdup("sum(bench_edge_current_sessions)");
    s->downstreams[0].limit_query = strdup("sum(bench_edge_limit_sessions)");
    s->downstreams[0].per_replica = 10;
    s->downstreams[0].max_utilization = 0.7;
}

/* Value k of object i as its own query. */
static void naive_query(char *buf, size_t len, size_t k, size_t i)
{
    size_t ns = i / 100;

    switch (k) {
    case 0:
        snprintf(buf, len,
                 "sum(haproxy_server_current_sessions{namespace=\"bench-%zu\",pod=~\"w%zu-.*\"}) / "
                 "sum(haproxy_server_limit_sessions{namespace=\"bench-%zu\",pod=~\"w%zu-.*\"})",
                 ns, i, ns, i);
        break;
    case 1:
        snprintf(
            buf, len,
            "sum(rate(container_cpu_usage_seconds_total{container=\"istio-proxy\","
            "namespace=\"bench-%zu\",pod=~\"w%zu-.*\"}[2m])) / "
            "sum(kube_pod_container_resource_limits{resource=\"cpu\",container=\"istio-proxy\","
            "namespace=\"bench-%zu\",pod=~\"w%zu-.*\"})",
            ns, i, ns, i);
        break;
    case 2:
        snprintf(buf, len, "sum(bench_edge_current_sessions)");
        break;
    case 3:
        snprintf(buf, len, "sum(bench_edge_limit_sessions)");
        break;
    default:
        snprintf(buf, len,
                 "sum(bench_requests_in_flight{namespace=\"bench-%zu\",workload=\"w%zu\"})", ns, i);
        break;
    }
}

/* One query per value per object, as a design without batching would send. */
static double run_naive(ms_prom_client_t *c, size_t n, bool per_object, size_t *sent)
{
    size_t per = per_object ? 5 : 4, total = n * per;
    ms_prom_query_t *qs = calloc(total, sizeof *qs);
    char **texts = calloc(total, sizeof *texts);
    double now = wall(), t0;

    if (qs == NULL || texts == NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < per; k++) {
            char buf[512];
            naive_query(buf, sizeof buf, k, i);
            texts[i * per + k] = strdup(buf);
            qs[i * per + k].query = texts[i * per + k];
            qs[i * per + k].time = now;
            ms_prom_result_init(&qs[i * per + k].result);
        }
    }
    t0 = mono();
    ms_prom_run(c, qs, total);
    t0 = mono() - t0;
    for (size_t i = 0; i < total; i++) {
        ms_prom_result_cleanup(&qs[i].result);
        free(texts[i]);
    }
    free(qs);
    free(texts);
    *sent = total;
    return t0;
}

/* ---- --decode: the decoder alone, on a generated answer ---- */

static const char *const preset_fields[] = {"usage", "limit", "usage_all", "pods", "age"};

/* The answer of one preset query for n series: five fields per workload, a
 * hundred workloads per namespace, as Prometheus 2.x formats it. */
static bool preset_answer(size_t n, ms_buf_t *b)
{
    static const char head[] = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                               "\"result\":[";
    bool ok = ms_buf_append(b, head, sizeof head - 1) == MS_OK;

    for (size_t i = 0; ok && i < n; i++) {
        size_t w = i / 5;
        ok = ms_buf_appendf(b,
                            "%s{\"metric\":{\"ms_field\":\"%s\",\"ms_workload\":\"w%zu\","
                            "\"namespace\":\"bench-%zu\"},\"value\":[1796077090.947,\"%zu\"]}",
                            i ? "," : "", preset_fields[i % 5], w, w / 100, 50 + i % 7) == MS_OK;
    }
    return ok && ms_buf_append(b, "]}}", 3) == MS_OK;
}

/* Bytes the heap holds now (small chunks plus mmapped ones). */
static size_t heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

typedef struct {
    double ms;   /* fastest of the runs */
    size_t heap; /* what the decoded form holds */
} decode_figure_t;

static decode_figure_t time_decoder(const ms_buf_t *body, int runs)
{
    decode_figure_t f = {1e9, 0};

    for (int k = 0; k < runs; k++) {
        ms_prom_result_t r;
        size_t before = heap_bytes();
        double t0 = mono(), ms;

        ms_prom_result_init(&r);
        if (ms_prom_decode(body->data, body->len, 200, &r) != MS_PROM_OK) {
            fprintf(stderr, "bench_prometheus: the answer did not decode: %s\n", r.message);
            exit(1);
        }
        ms = (mono() - t0) * 1e3;
        f.heap = heap_bytes() - before;
        f.ms = ms < f.ms ? ms : f.ms;
        ms_prom_result_cleanup(&r);
    }
    return f;
}

static decode_figure_t time_cjson(const ms_buf_t *body, int runs)
{
    decode_figure_t f = {1e9, 0};

    for (int k = 0; k < runs; k++) {
        size_t before = heap_bytes();
        double t0 = mono(), ms;
        cJSON *root = cJSON_ParseWithLength(body->data, body->len);

        if (root == NULL)
            exit(1);
        ms = (mono() - t0) * 1e3;
        f.heap = heap_bytes() - before;
        f.ms = ms < f.ms ? ms : f.ms;
        cJSON_Delete(root);
    }
    return f;
}

static int decode_bench(int argc, char **argv)
{
    size_t n = 50000;
    ms_buf_t body;
    decode_figure_t tree, dec;

    if (argc == 2 && strcmp(argv[0], "--series") == 0)
        n = strtoul(argv[1], NULL, 10);
    ms_buf_init(&body, (size_t)1 << 31);
    if (n == 0 || !preset_answer(n, &body)) {
        fprintf(stderr, "bench_prometheus: cannot build an answer of %zu series\n", n);
        return 2;
    }
    /* The decoder first: the many small blocks a tree leaves behind on the
     * free lists would slow whatever allocates after it. */
    dec = time_decoder(&body, 9);
    tree = time_cjson(&body, 9);
    printf("decode an answer of %zu series, %zu bytes (fastest of 9):\n", n, body.len);
    printf("  %-42s %8.1f ms  heap %10zu bytes  %.2fx the body\n",
           "cJSON tree (what the decoder kept before)", tree.ms, tree.heap,
           (double)tree.heap / (double)body.len);
    printf("  %-42s %8.1f ms  heap %10zu bytes  %.2fx the body\n", "ms_prom_decode", dec.ms,
           dec.heap, (double)dec.heap / (double)body.len);
    ms_buf_cleanup(&body);
    return 0;
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    size_t n = 1000, ticks = 3, in_flight = 8;
    bool per_object = false, naive = false;
    char err[MS_ERRBUF_SIZE];
    int rc = 1;

    if (argc >= 3 && strcmp(argv[1], "--print-query") == 0)
        return print_query(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "--decode") == 0)
        return decode_bench(argc - 2, argv + 2);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--objects") == 0 && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
            ticks = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--in-flight") == 0 && i + 1 < argc)
            in_flight = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--per-object-query") == 0)
            per_object = true;
        else if (strcmp(argv[i], "--naive") == 0)
            naive = true;
        else {
            fprintf(stderr,
                    "usage: bench_prometheus --url URL --objects N [--ticks T] "
                    "[--in-flight K] [--per-object-query] [--naive]\n"
                    "       bench_prometheus --decode [--series N]\n"
                    "       bench_prometheus --print-query [--window W] KIND [CONTAINER...]\n");
            return 2;
        }
    }
    if (url == NULL || n == 0 || ticks == 0) {
        fprintf(stderr, "bench_prometheus: --url and a positive --objects are required\n");
        return 2;
    }

    ms_http_global_init();
    ms_prom_options_t po = {.url = url, .timeout_ms = 60000, .max_in_flight = in_flight};
    ms_http_options_t ho = {0};
    ms_prom_client_t *client = ms_prom_client_new(&po, err, sizeof err);
    ms_http_client_t *http = ms_http_client_new(&ho, err, sizeof err);
    ms_prom_preset_options_t presets = {.max_age = 300};
    ms_prom_tick_t *tick = ms_prom_tick_new(&presets, err, sizeof err);
    ms_spec_t spec;
    ms_prom_object_t *objs = calloc(n, sizeof *objs);
    ms_prom_object_obs_t *out = calloc(n, sizeof *out);
    char(*names)[2][32] = calloc(n, sizeof *names);

    ms_spec_init(&spec);
    if (client == NULL || http == NULL || tick == NULL || objs == NULL || out == NULL ||
        names == NULL) {
        fprintf(stderr, "bench_prometheus: %s\n", err);
        goto out;
    }
    ms_spec_cleanup(&spec);
    make_spec(&spec, per_object);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i][0], sizeof names[i][0], "bench-%zu", i / 100);
        snprintf(names[i][1], sizeof names[i][1], "w%zu", i);
        objs[i] = (ms_prom_object_t){.spec = &spec,
                                     .namespace_name = names[i][0],
                                     .name = names[i][1],
                                     .kind = "Deployment"};
    }

    printf("bench_prometheus: %zu objects, %zu ticks, %zu in flight%s\n", n, ticks, in_flight,
           per_object ? ", a per-object user query each" : "");
    for (size_t t = 0; t < ticks; t++) {
        ms_prom_tick_stats_t st;
        double before = served_queries(http, url), after;
        size_t complete = 0;

        if (ms_prom_tick_run(tick, client, objs, n, out) != MS_OK) {
            fprintf(stderr, "bench_prometheus: the tick failed as a whole\n");
            goto out;
        }
        after = served_queries(http, url);
        ms_prom_tick_stats(tick, &st);
        for (size_t i = 0; i < n; i++) {
            bool all = true;
            for (size_t m = 0; m < spec.nmetrics; m++)
                all = all && out[i].obs.metrics[m].present;
            all = all && out[i].obs.downstreams[0].usage.present &&
                  out[i].obs.downstreams[0].limit.present;
            complete += all;
        }
        printf(
            "tick %zu: %zu objects  queries/tick %zu (builtin %zu, user %zu distinct of %zu refs; "
            "prometheus counted %.0f)  time/tick %.3f s  objects with every value %zu/%zu  "
            "| one-query-per-object design: %zu queries/tick\n",
            t + 1, n, st.queries_sent, st.builtin_queries, st.user_queries, st.user_refs,
            after - before, st.seconds, complete, n, n * (spec.nmetrics + 2));
        if (complete < n && t == 0) {
            for (size_t i = 0; i < n; i++) {
                if (!out[i].obs.metrics[0].present || !out[i].obs.metrics[1].present) {
                    printf("  e.g. %s/%s: sidecar %s (%s), cpu %s (%s)\n", objs[i].namespace_name,
                           objs[i].name, ms_prom_reason_name(out[i].metrics[0].reason),
                           out[i].metrics[0].detail, ms_prom_reason_name(out[i].metrics[1].reason),
                           out[i].metrics[1].detail);
                    break;
                }
            }
        }
    }
    if (naive) {
        size_t sent = 0;
        double before = served_queries(http, url);
        double secs = run_naive(client, n, per_object, &sent);
        double after = served_queries(http, url);
        printf("one-query-per-object design, measured once: %zu queries (prometheus counted %.0f) "
               "in %.3f s\n",
               sent, after - before, secs);
    }
    rc = 0;
out:
    ms_spec_cleanup(&spec);
    free(names);
    free(objs);
    free(out);
    ms_prom_tick_free(tick);
    ms_http_client_free(http);
    ms_prom_client_free(client);
    ms_http_global_cleanup();
    return rc;
}
