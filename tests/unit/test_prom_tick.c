/*
 * test_prom_tick.c - planning, batching and splitting back, with the queries
 * answered from recorded real responses (tests/fixtures/prom/) through the
 * tick's runner seam instead of a network. The preset fixtures are real
 * Prometheus 2.42 answers to the presets' batched queries over real HAProxy
 * and recorded Envoy/Linkerd/cAdvisor/kube-state-metrics exposition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom_sources.h"

/* ---- the runner: answers from fixtures, and records what was asked ---- */

typedef struct {
    const char *contains; /* a query containing this ... */
    const char *fixture;  /* ... is answered with this recorded body */
} route_t;

typedef struct {
    const route_t *routes; /* fixture: a file name, or a body starting with '{' */
    size_t nroutes;
    size_t calls;
    size_t queries;
    char *asked[64];
    size_t nasked;
    ms_err_t fail_batch; /* MS_OK, or a whole-batch failure to simulate */
} runner_t;

static const route_t preset_routes[] = {
    {"envoy_cluster_upstream_rq_active", "200-preset-envoy.json"},
    {"haproxy_server_current_sessions", "200-preset-haproxy.json"},
    {"response_latency_ms_sum", "200-preset-linkerd.json"},
    {"container_cpu_usage_seconds_total", "200-preset-cpu.json"},
    {"one_series", "200-vector-one.json"},
    {"many_series", "200-vector-many.json"},
    {"nan_please", "200-vector-nan.json"},
    {"sum(", "400-bad-data.json"}, /* only matches user queries listed after the presets */
};

static void decode_file(const char *name, ms_prom_result_t *r)
{
    size_t n;
    char *buf = read_fixture_file(MS_FIXTURES_DIR, name, &n);

    ms_prom_decode(buf, n, strtol(name, NULL, 10), r);
    free(buf);
}

static ms_err_t run_fixtures(void *ctx, ms_prom_query_t *qs, size_t n)
{
    runner_t *rr = ctx;

    rr->calls++;
    rr->queries += n;
    for (size_t i = 0; i < n; i++) {
        const char *fixture = NULL;

        if (rr->nasked < 64)
            rr->asked[rr->nasked++] = strdup(qs[i].query);
        if (rr->fail_batch != MS_OK) {
            qs[i].result.reason = MS_PROM_TRANSPORT;
            snprintf(qs[i].result.message, sizeof qs[i].result.message, "the query batch failed");
            continue;
        }
        for (size_t k = 0; k < rr->nroutes && fixture == NULL; k++)
            if (strstr(qs[i].query, rr->routes[k].contains) != NULL)
                fixture = rr->routes[k].fixture;
        if (fixture == NULL)
            fail_msg("no fixture answers %s", qs[i].query);
        if (fixture[0] == '{') /* a hand-written body, for what no exporter records */
            ms_prom_decode(fixture, strlen(fixture), 200, &qs[i].result);
        else
            decode_file(fixture, &qs[i].result);
    }
    return rr->fail_batch;
}

static void runner_cleanup(runner_t *rr)
{
    for (size_t i = 0; i < rr->nasked; i++)
        free(rr->asked[i]);
}

/* ---- specs ---- */

static void add_metric(ms_spec_t *s, ms_source_type_t src, ms_proxy_t proxy, ms_target_type_t tt,
                       double target)
{
    ms_metric_spec_t *m = &s->metrics[s->nmetrics];
    snprintf(m->name, sizeof m->name, "m%zu", s->nmetrics);
    m->source = src;
    m->proxy = proxy;
    m->target_type = tt;
    m->target = target;
    s->nmetrics++;
}

/* A Prometheus metric (Value 1) whose query is `query`. */
static void add_query_metric(ms_spec_t *s, const char *query)
{
    add_metric(s, MS_SOURCE_PROMETHEUS, 0, MS_TARGET_VALUE, 1);
    s->metrics[s->nmetrics - 1].query = strdup(query);
}

static void spec_concurrency(ms_spec_t *s, ms_proxy_t proxy, double limit)
{
    ms_spec_init(s);
    add_metric(s, MS_SOURCE_SIDECAR_CONCURRENCY, proxy, MS_TARGET_UTILIZATION, 70);
    add_metric(s, MS_SOURCE_SIDECAR_CONCURRENCY, proxy, MS_TARGET_AVERAGE_VALUE, 10);
    add_metric(s, MS_SOURCE_SIDECAR_CONCURRENCY, proxy, MS_TARGET_VALUE, 10);
    if (limit > 0) {
        add_metric(s, MS_SOURCE_SIDECAR_CONCURRENCY, proxy, MS_TARGET_UTILIZATION, 70);
        s->metrics[3].has_limit = true;
        s->metrics[3].limit = limit;
    }
}

static ms_prom_object_t object(const ms_spec_t *s, const char *ns, const char *name)
{
    return (ms_prom_object_t){.spec = s, .namespace_name = ns, .name = name, .kind = "Deployment"};
}

typedef struct {
    ms_prom_tick_t *tick;
    runner_t runner;
    ms_prom_object_obs_t out[8];
} fixture_t;

static void run(fixture_t *f, const ms_prom_object_t *objs, size_t n, double max_age)
{
    ms_prom_preset_options_t o = {.max_age = max_age};
    char err[MS_ERRBUF_SIZE];

    f->tick = ms_prom_tick_new(&o, err, sizeof err);
    assert_non_null(f->tick);
    if (f->runner.routes == NULL) {
        f->runner.routes = preset_routes;
        f->runner.nroutes = sizeof preset_routes / sizeof preset_routes[0];
    }
    assert_true(n <= 8);
    assert_int_equal(ms_prom_tick_run_with(f->tick, run_fixtures, &f->runner, objs, n, f->out),
                     f->runner.fail_batch);
}

static void done(fixture_t *f)
{
    ms_prom_tick_free(f->tick);
    runner_cleanup(&f->runner);
}

static void expect_near(const ms_prom_object_obs_t *o, size_t metric, ms_prom_reason_t reason,
                        double value, double tolerance)
{
    const ms_sample_t *s = &o->obs.metrics[metric];
    const ms_prom_why_t *w = &o->metrics[metric];

    if (w->reason != reason)
        fail_msg("metric %zu: %s (%s), want %s", metric, ms_prom_reason_name(w->reason), w->detail,
                 ms_prom_reason_name(reason));
    assert_non_null(w->detail);
    if (reason == MS_PROM_OK) {
        assert_true(s->present);
        if (fabs(s->value - value) > tolerance)
            fail_msg("metric %zu: %.9g, want %.9g +- %g", metric, s->value, value, tolerance);
    } else {
        assert_false(s->present);
        assert_true(w->detail[0] != '\0');
    }
}

/* Gauges give exact values. */
static void expect(const ms_prom_object_obs_t *o, size_t metric, ms_prom_reason_t reason,
                   double value)
{
    expect_near(o, metric, reason, value, 1e-9 * fmax(1, fabs(value)));
}

/* Rates of the exporters' counters (12 + 6 requests in flight, 0.25 + 0.15
 * and 0.05 cores) come back within a percent, however the fixture was
 * re-recorded. */

/* ---- tests ---- */

static void test_envoy_preset(void **state)
{
    ms_spec_t with_limit, without;
    fixture_t f = {0};
    ms_prom_object_t objs[3];
    ms_prom_tick_stats_t st;
    (void)state;

    spec_concurrency(&with_limit, MS_PROXY_ENVOY, 10);
    spec_concurrency(&without, MS_PROXY_ENVOY, 0);
    objs[0] = object(&without, "shop", "api");
    objs[1] = object(&with_limit, "mesh", "web");
    objs[2] = object(&without, "shop", "gone");
    run(&f, objs, 3, 0);
    /* shop/api: two pods, 42 + (10 + 8) in flight, limits 100 + 200. */
    expect(&f.out[0], 0, MS_PROM_OK, 20); /* percent of the exported limit */
    expect(&f.out[0], 1, MS_PROM_OK, 60); /* AverageValue: the total */
    expect(&f.out[0], 2, MS_PROM_OK, 30); /* Value: per pod */
    /* mesh/web-0 exports no remaining_rq: only the spec limit helps. */
    expect(&f.out[1], 0, MS_PROM_NO_LIMIT, 0);
    expect(&f.out[1], 3, MS_PROM_OK, 50); /* 5 in flight of limit 10 */
    expect(&f.out[2], 0, MS_PROM_NO_DATA, 0);
    ms_prom_tick_stats(f.tick, &st);
    assert_int_equal(st.builtin_queries, 1);
    assert_int_equal(st.queries_sent, 1);
    assert_int_equal(f.runner.queries, 1);
    /* Only the objects' namespaces, each once. */
    assert_non_null(strstr(f.runner.asked[0], "envoy_cluster_upstream_rq_active{cluster_name=~"
                                              "\"inbound\\\\|.*\",namespace=~\"shop|mesh\"}"));
    done(&f);
    ms_spec_cleanup(&with_limit);
    ms_spec_cleanup(&without);
}

static void test_haproxy_preset_and_staleness(void **state)
{
    ms_spec_t s;
    fixture_t f = {0}, g = {0};
    ms_prom_object_t objs[3];
    (void)state;

    spec_concurrency(&s, MS_PROXY_HAPROXY, 0);
    objs[0] = object(&s, "shop", "web");
    objs[1] = object(&s, "edge", "gw");
    objs[2] = object(&s, "old", "lag");
    objs[1].kind = "StatefulSet";
    run(&f, objs, 3, 0);
    expect(&f.out[0], 0, MS_PROM_OK, 40); /* 12 + 4 sessions of 20 + 20 */
    expect(&f.out[0], 1, MS_PROM_OK, 16);
    expect(&f.out[0], 2, MS_PROM_OK, 8);
    expect(&f.out[1], 0, MS_PROM_OK, 0);
    expect(&f.out[2], 0, MS_PROM_OK, 30);
    done(&f);
    /* The lagging pod's samples are two minutes old. */
    run(&g, objs, 3, 60);
    expect(&g.out[0], 0, MS_PROM_OK, 40);
    expect(&g.out[2], 0, MS_PROM_STALE, 0);
    expect(&g.out[2], 1, MS_PROM_STALE, 0);
    done(&g);
    ms_spec_cleanup(&s);
}

static void test_linkerd_preset_needs_a_limit(void **state)
{
    ms_spec_t with_limit, without;
    fixture_t f = {0};
    ms_prom_object_t objs[3];
    (void)state;

    spec_concurrency(&with_limit, MS_PROXY_LINKERD, 30);
    spec_concurrency(&without, MS_PROXY_LINKERD, 0);
    objs[0] = object(&with_limit, "books", "reviews");
    objs[1] = object(&without, "books", "reviews");
    /* A target whose pods are named after another workload. */
    objs[2] = object(&with_limit, "books", "reviews-canary");
    objs[2].workload = "reviews";
    run(&f, objs, 3, 0);
    /* 12 + 6 requests in flight by Little's law, limit 30 per pod. */
    expect_near(&f.out[0], 3, MS_PROM_OK, 30, 0.3);
    expect_near(&f.out[0], 1, MS_PROM_OK, 18, 0.18);
    expect(&f.out[1], 0, MS_PROM_NO_LIMIT, 0);
    assert_non_null(strstr(f.out[1].metrics[0].detail, "limit"));
    expect_near(&f.out[2], 3, MS_PROM_OK, 30, 0.3);
    done(&f);
    ms_spec_cleanup(&with_limit);
    ms_spec_cleanup(&without);
}

static void test_cpu_preset_one_query_for_all_containers(void **state)
{
    ms_spec_t istio, linkerd;
    fixture_t f = {0};
    ms_prom_object_t objs[2];
    ms_prom_tick_stats_t st;
    (void)state;

    ms_spec_init(&istio);
    add_metric(&istio, MS_SOURCE_SIDECAR_CPU, 0, MS_TARGET_UTILIZATION, 75);
    istio.metrics[0].container = strdup("istio-proxy");
    add_metric(&istio, MS_SOURCE_SIDECAR_CPU, 0, MS_TARGET_AVERAGE_VALUE, 0.5);
    istio.metrics[1].container = strdup("istio-proxy");
    ms_spec_init(&linkerd);
    add_metric(&linkerd, MS_SOURCE_SIDECAR_CPU, 0, MS_TARGET_UTILIZATION, 75);
    linkerd.metrics[0].container = strdup("linkerd-proxy");
    add_metric(&linkerd, MS_SOURCE_SIDECAR_CPU, 0, MS_TARGET_AVERAGE_VALUE, 0.5);
    linkerd.metrics[1].container = strdup("linkerd-proxy");
    objs[0] = object(&istio, "shop", "api");
    objs[1] = object(&linkerd, "pay", "ledger");
    objs[1].kind = "StatefulSet";
    run(&f, objs, 2, 0);
    expect_near(&f.out[0], 0, MS_PROM_OK, 40, 0.4); /* 0.40 cores of 1.0 */
    expect_near(&f.out[0], 1, MS_PROM_OK, 0.4, 0.004);
    expect(&f.out[1], 0, MS_PROM_NO_LIMIT, 0); /* no kube-state-metrics limit */
    expect_near(&f.out[1], 1, MS_PROM_OK, 0.05, 0.0005);
    ms_prom_tick_stats(f.tick, &st);
    assert_int_equal(st.queries_sent, 1);
    assert_non_null(strstr(f.runner.asked[0], "container=~\"istio-proxy|linkerd-proxy\""));
    assert_non_null(
        strstr(f.runner.asked[0],
               "kube_pod_container_resource_limits{resource=\"cpu\",container=~\"istio-proxy|"
               "linkerd-proxy\",namespace=~\"shop|pay\"}"));
    done(&f);
    ms_spec_cleanup(&istio);
    ms_spec_cleanup(&linkerd);
}

/* The pods each preset value covers reach the observation (the engine's
 * missing-pods rule); user PromQL cannot say, and a missing value has none. */
static void test_preset_pod_counts(void **state)
{
    ms_spec_t envoy, cpu, user;
    fixture_t f = {0};
    ms_prom_object_t objs[4];
    const ms_pods_t *pods;
    (void)state;

    spec_concurrency(&envoy, MS_PROXY_ENVOY, 10);
    ms_spec_init(&cpu);
    add_metric(&cpu, MS_SOURCE_SIDECAR_CPU, 0, MS_TARGET_AVERAGE_VALUE, 0.5);
    cpu.metrics[0].container = strdup("istio-proxy");
    ms_spec_init(&user);
    add_metric(&user, MS_SOURCE_PROMETHEUS, 0, MS_TARGET_AVERAGE_VALUE, 10);
    user.metrics[0].query = strdup("sum(one_series)");
    objs[0] = object(&envoy, "shop", "api"); /* 2 pods report */
    objs[1] = object(&envoy, "mesh", "web"); /* 1 pod, no exported limit */
    objs[2] = object(&cpu, "shop", "api");   /* 2 istio-proxy containers */
    objs[3] = object(&user, "shop", "api");
    run(&f, objs, 4, 0);

    pods = f.out[0].obs.metric_pods;
    for (size_t m = 0; m < 4; m++) {
        assert_true(pods[m].known);
        assert_int_equal(pods[m].count, 2);
    }
    pods = f.out[1].obs.metric_pods;
    expect(&f.out[1], 0, MS_PROM_NO_LIMIT, 0);
    assert_false(pods[0].known); /* missing: no count either */
    expect(&f.out[1], 3, MS_PROM_OK, 50);
    assert_true(pods[3].known);
    assert_int_equal(pods[3].count, 1);
    expect_near(&f.out[2], 0, MS_PROM_OK, 0.4, 0.004);
    assert_true(f.out[2].obs.metric_pods[0].known);
    assert_int_equal(f.out[2].obs.metric_pods[0].count, 2);
    expect(&f.out[3], 0, MS_PROM_OK, 1);
    assert_false(f.out[3].obs.metric_pods[0].known);
    done(&f);
    ms_spec_cleanup(&envoy);
    ms_spec_cleanup(&cpu);
    ms_spec_cleanup(&user);
}

/* ---- every slot of an object at once ---- */

/* Answers "vector(X)" with X (what Prometheus would). */
static ms_err_t run_numbers(void *ctx, ms_prom_query_t *qs, size_t n)
{
    size_t *calls = ctx;

    (*calls)++;
    for (size_t i = 0; i < n; i++) {
        char body[256];
        double x;

        if (sscanf(qs[i].query, "vector(%lf)", &x) != 1)
            fail_msg("not a vector(X): %s", qs[i].query);
        snprintf(body, sizeof body,
                 "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                 "[{\"metric\":{},\"value\":[1796001800,\"%.17g\"]}]}}",
                 x);
        ms_prom_decode(body, strlen(body), 200, &qs[i].result);
    }
    return MS_OK;
}

static char *vector_of(double x)
{
    char buf[64];
    snprintf(buf, sizeof buf, "vector(%g)", x);
    return strdup(buf);
}

/* 16 metrics, each saturated, 8 downstreams and the retry share: every value
 * of an object has a slot of its own (mutants: the slot layout). */
static void spec_every_slot(ms_spec_t *s)
{
    ms_spec_init(s);
    for (size_t i = 0; i < MS_MAX_METRICS; i++) {
        add_metric(s, MS_SOURCE_PROMETHEUS, 0, MS_TARGET_VALUE, 10);
        s->metrics[i].query = vector_of(100 + (double)i);
        s->saturation[i] =
            (ms_saturation_spec_t){true, vector_of(200 + (double)i), vector_of(300 + (double)i)};
    }
    for (size_t d = 0; d < MS_MAX_DOWNSTREAMS; d++) {
        snprintf(s->downstreams[d].name, sizeof s->downstreams[d].name, "d%zu", d);
        s->downstreams[d].usage_query = vector_of(400 + (double)d);
        s->downstreams[d].limit_query = vector_of(500 + (double)d);
        s->downstreams[d].per_replica = 1;
        s->downstreams[d].max_utilization = 0.7;
    }
    s->ndownstreams = MS_MAX_DOWNSTREAMS;
    s->retry_storm = (ms_retry_storm_spec_t){true, vector_of(0.25), 0.3};
}

static void expect_every_slot(const ms_prom_object_obs_t *o)
{
    for (size_t i = 0; i < MS_MAX_METRICS; i++) {
        expect(o, i, MS_PROM_OK, 100 + (double)i);
        assert_true(o->obs.saturation[i].rejected.present &&
                    o->obs.saturation[i].rejected.value == 200 + (double)i);
        assert_true(o->obs.saturation[i].admitted.present &&
                    o->obs.saturation[i].admitted.value == 300 + (double)i);
    }
    for (size_t d = 0; d < MS_MAX_DOWNSTREAMS; d++) {
        assert_true(o->obs.downstreams[d].usage.value == 400 + (double)d);
        assert_true(o->obs.downstreams[d].limit.value == 500 + (double)d);
    }
    assert_true(o->obs.retry_share.present && o->obs.retry_share.value == 0.25);
}

static void test_every_slot_at_once(void **state)
{
    ms_prom_preset_options_t opts = {0};
    char err[MS_ERRBUF_SIZE];
    ms_prom_tick_t *tick = ms_prom_tick_new(&opts, err, sizeof err);
    ms_prom_tick_stats_t st;
    ms_prom_object_obs_t out, later;
    ms_prom_object_t obj;
    ms_spec_t s;
    size_t calls = 0;
    (void)state;

    spec_every_slot(&s);
    obj = object(&s, "shop", "web");
    /* Every slot: above the default cap of user queries per object. */
    ms_prom_tick_set_round(tick, &(ms_prom_round_limits_t){.max_user_queries = 65});
    assert_int_equal(ms_prom_tick_run_with(tick, run_numbers, &calls, &obj, 1, &out), MS_OK);
    expect_every_slot(&out);
    ms_prom_tick_stats(tick, &st);
    assert_int_equal(st.queries_sent, 16 * 3 + 8 * 2 + 1);
    /* A second run counts its own figures, not the sum of both; read back
     * later (out NULL), each object's values are still there. */
    assert_int_equal(ms_prom_tick_run_with(tick, run_numbers, &calls, &obj, 1, NULL), MS_OK);
    ms_prom_tick_stats(tick, &st);
    assert_int_equal(st.queries_sent, 16 * 3 + 8 * 2 + 1);
    assert_int_equal(st.user_refs, 16 * 3 + 8 * 2 + 1);
    assert_int_equal(st.objects, 1);
    ms_prom_tick_observe(tick, &obj, 0, &later);
    expect_every_slot(&later);
    assert_int_equal(calls, 2);
    ms_prom_tick_free(tick);
    ms_spec_cleanup(&s);
}

/* ---- fair shares of the round ---- */

/* What the fair runner saw of one query, in send order. */
typedef struct {
    double x; /* vector(x); 0: a preset */
    size_t group, share_bytes;
    double share_seconds;
} sent_t;

typedef struct {
    sent_t sent[64];
    size_t n;
} fair_runner_t;

/* Answers presets from the recorded haproxy preset, vector(X) with X, and
 * stops "# slow" and "# big" queries at their shares as the client does. */
static ms_err_t run_fair(void *ctx, ms_prom_query_t *qs, size_t n)
{
    fair_runner_t *fr = ctx;

    for (size_t i = 0; i < n; i++) {
        sent_t *s = &fr->sent[fr->n < 64 ? fr->n++ : 63];
        ms_prom_result_t *r = &qs[i].result;

        *s = (sent_t){0, qs[i].group, qs[i].share_bytes, qs[i].share_seconds};
        if (qs[i].preset) {
            decode_file("200-preset-haproxy.json", r);
            continue;
        }
        assert_int_equal(sscanf(qs[i].query, "vector(%lf)", &s->x), 1);
        if (strstr(qs[i].query, "# slow") != NULL) {
            r->reason = MS_PROM_OVER_SHARE;
            r->seconds = qs[i].share_seconds;
            snprintf(r->message, sizeof r->message, "the query ran past its share of the round");
        } else if (strstr(qs[i].query, "# big") != NULL) {
            r->reason = MS_PROM_OVER_SHARE;
            r->bytes = qs[i].share_bytes;
            snprintf(r->message, sizeof r->message, "the answer passed this query's share");
        } else {
            char body[256];
            snprintf(body, sizeof body,
                     "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                     "[{\"metric\":{},\"value\":[1796001800,\"%g\"]}]}}",
                     s->x);
            ms_prom_decode(body, strlen(body), 200, r);
            r->seconds = 0.01;
            r->bytes = strlen(body);
        }
    }
    return MS_OK;
}

/* Namespace tenant-a: a1 with three slow queries, a2 with one oversized
 * answer; namespace shop: web with the haproxy preset and a user query. */
static void test_fair_order_shares_and_owners(void **state)
{
    ms_prom_preset_options_t opts = {0};
    char err[MS_ERRBUF_SIZE];
    ms_prom_tick_t *tick = ms_prom_tick_new(&opts, err, sizeof err);
    ms_prom_round_limits_t limits = {.seconds = 10, .slots = 8, .max_bytes = 64 << 10};
    ms_prom_namespace_cost_t costs[4];
    fair_runner_t fr = {0};
    ms_spec_t a1, a2, web;
    ms_prom_object_t objs[3];
    ms_prom_object_obs_t out[3];
    static const double order[] = {0, 11, 31, 21, 12, 13};
    static const size_t groups[] = {0, 1, 2, 1, 1, 1};
    (void)state;

    ms_spec_init(&a1);
    add_query_metric(&a1, "vector(11) # slow");
    add_query_metric(&a1, "vector(12) # slow");
    add_query_metric(&a1, "vector(13) # slow");
    ms_spec_init(&a2);
    add_query_metric(&a2, "vector(21) # big");
    spec_concurrency(&web, MS_PROXY_HAPROXY, 0);
    add_query_metric(&web, "vector(31)");
    objs[0] = object(&a1, "tenant-a", "a1");
    objs[1] = object(&a2, "tenant-a", "a2");
    objs[2] = object(&web, "shop", "web");
    ms_prom_tick_set_round(tick, &limits);
    assert_int_equal(ms_prom_tick_run_with(tick, run_fair, &fr, objs, 3, out), MS_OK);

    /* The preset first; then one query per namespace per turn, the objects
     * of a namespace taking turns; each namespace its own group. */
    assert_int_equal(fr.n, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_true(fr.sent[i].x == order[i]);
        assert_int_equal(fr.sent[i].group, groups[i]);
    }
    /* The preset has no share. a1: 8 slots x 10 s / 2 namespaces / 2
     * objects = 20 s for 3 queries; a2 and web: 20 and 40 s, more than the
     * round: no limit of their own (the round's deadline ends them).
     * Bytes: 64 KiB less the presets' reserve (a quarter) = 48 KiB, 12 KiB
     * per tenant-a object (4 KiB for each of a1's 3), 24 KiB for web. */
    assert_true(fr.sent[0].share_seconds == 0 && fr.sent[0].share_bytes == 0);
    assert_true(fabs(fr.sent[1].share_seconds - 20.0 / 3) < 1e-9);
    assert_int_equal(fr.sent[1].share_bytes, 4096);
    assert_true(fr.sent[2].share_seconds == 0);
    assert_int_equal(fr.sent[2].share_bytes, 24576);
    assert_true(fr.sent[3].share_seconds == 0);
    assert_int_equal(fr.sent[3].share_bytes, 12288);

    /* Only the owners read the overrun, with the share named. */
    for (size_t m = 0; m < 3; m++) {
        expect(&out[0], m, MS_PROM_OVER_SHARE, 0);
        assert_non_null(strstr(out[0].metrics[m].detail,
                               "this object's queries share 20.0 s of the round's query time"));
        assert_non_null(strstr(out[0].metrics[m].detail, "/ 2 objects of tenant-a"));
    }
    expect(&out[1], 0, MS_PROM_OVER_SHARE, 0);
    assert_non_null(strstr(out[1].metrics[0].detail, "this object's queries share 12288 bytes"));
    expect(&out[2], 0, MS_PROM_OK, 40); /* the preset: 12 + 4 sessions of 20 + 20 */
    expect(&out[2], 3, MS_PROM_OK, 31);

    /* Who cost what: tenant-a first (20 s of stopped queries). */
    assert_int_equal(ms_prom_tick_costs(tick, costs, 4), 2);
    assert_string_equal(costs[0].namespace_name, "tenant-a");
    assert_int_equal(costs[0].objects, 2);
    assert_int_equal(costs[0].queries, 4);
    assert_int_equal(costs[0].over_share, 4);
    assert_true(fabs(costs[0].seconds - 20) < 1e-9);
    assert_string_equal(costs[1].namespace_name, "shop");
    assert_int_equal(costs[1].over_share, 0);
    assert_int_equal(ms_prom_tick_costs(tick, costs, 1), 1);
    assert_string_equal(costs[0].namespace_name, "tenant-a");
    ms_prom_tick_free(tick);
    ms_spec_cleanup(&a1);
    ms_spec_cleanup(&a2);
    ms_spec_cleanup(&web);
}

/* Past the cap of user queries per object, the rest is not sent; the
 * guardrails go first. */
static void test_user_query_cap_keeps_guardrails(void **state)
{
    ms_prom_preset_options_t opts = {0};
    char err[MS_ERRBUF_SIZE];
    ms_prom_tick_t *tick = ms_prom_tick_new(&opts, err, sizeof err);
    ms_prom_tick_stats_t st;
    ms_prom_object_obs_t out;
    ms_prom_object_t obj;
    ms_spec_t s;
    size_t calls = 0, sent = 0, capped = 0;
    (void)state;

    spec_every_slot(&s); /* 65 distinct user queries */
    obj = object(&s, "shop", "web");
    assert_int_equal(ms_prom_tick_run_with(tick, run_numbers, &calls, &obj, 1, &out), MS_OK);
    ms_prom_tick_stats(tick, &st);
    assert_int_equal(st.queries_sent, MS_PROM_USER_QUERIES_PER_OBJECT);
    assert_int_equal(MS_PROM_USER_QUERIES_PER_OBJECT, 32);
    /* 8 downstreams x 2 + the retry share + the first 15 saturation
     * queries are the 32; no metric query is. */
    for (size_t d = 0; d < MS_MAX_DOWNSTREAMS; d++)
        assert_true(out.obs.downstreams[d].usage.present && out.obs.downstreams[d].limit.present);
    assert_true(out.obs.retry_share.present);
    for (size_t i = 0; i < MS_MAX_METRICS; i++) {
        sent += out.obs.saturation[i].admitted.present + out.obs.saturation[i].rejected.present;
        assert_int_equal(out.metrics[i].reason, MS_PROM_OVER_SHARE);
        capped += strstr(out.metrics[i].detail, "not sent") != NULL;
    }
    assert_int_equal(sent, 15);
    assert_int_equal(capped, MS_MAX_METRICS);
    ms_prom_tick_free(tick);
    ms_spec_cleanup(&s);
}

/* A preset field per (workload, field): "wl", "usage", "-3" in a vector. */
#define PRESET_ROW(wl, field, v)                                                                   \
    "{\"metric\":{\"namespace\":\"shop\",\"ms_workload\":\"" wl "\",\"ms_field\":\"" field         \
    "\"},\"value\":[1796001800,\"" v "\"]}"

/* A usage or limit below 0 is a broken exporter, never a demand: the value
 * is missing (never a scale-down to minReplicas) and says why. */
static void test_negative_preset_values_are_missing(void **state)
{
    static const route_t routes[] = {
        {"haproxy_server_current_sessions",
         "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
         "[" PRESET_ROW("neg", "usage", "-3") "," PRESET_ROW("neg", "limit", "20") "," PRESET_ROW("neg", "usage_all", "-3") "," PRESET_ROW("neg", "pods", "1") "," PRESET_ROW(
             "neglimit", "usage",
             "4") "," PRESET_ROW("neglimit", "limit",
                                 "-0.5") "," PRESET_ROW("neglimit", "usage_all",
                                                        "4") "," PRESET_ROW("neglimit", "pods",
                                                                            "1") "," PRESET_ROW("o"
                                                                                                "k",
                                                                                                "us"
                                                                                                "ag"
                                                                                                "e",
                                                                                                "6") "," PRESET_ROW("ok",
                                                                                                                    "limit",
                                                                                                                    "20") "," PRESET_ROW("ok",
                                                                                                                                         "usage_all",
                                                                                                                                         "6") "," PRESET_ROW("ok",
                                                                                                                                                             "pods",
                                                                                                                                                             "2") "]}}"},
    };
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[3];
    (void)state;

    spec_concurrency(&s, MS_PROXY_HAPROXY, 10);
    objs[0] = object(&s, "shop", "neg");
    objs[1] = object(&s, "shop", "neglimit");
    objs[2] = object(&s, "shop", "ok");
    f.runner.routes = routes;
    f.runner.nroutes = 1;
    run(&f, objs, 3, 0);
    for (size_t i = 0; i < 2; i++)
        for (size_t m = 0; m < 4; m++) {
            expect(&f.out[i], m, MS_PROM_MALFORMED, 0);
            assert_non_null(strstr(f.out[i].metrics[m].detail, "negative"));
            assert_false(f.out[i].obs.metric_pods[m].known);
        }
    expect(&f.out[2], 0, MS_PROM_OK, 30); /* 6 of 20 */
    expect(&f.out[2], 1, MS_PROM_OK, 6);
    expect(&f.out[2], 2, MS_PROM_OK, 3);
    expect(&f.out[2], 3, MS_PROM_OK, 30); /* 6 of 2 x 10 */
    assert_int_equal(f.out[2].obs.metric_pods[0].count, 2);
    done(&f);
    ms_spec_cleanup(&s);
}

static void test_user_queries_deduplicated(void **state)
{
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[5];
    ms_prom_tick_stats_t st;
    (void)state;

    ms_spec_init(&s);
    add_metric(&s, MS_SOURCE_PROMETHEUS, 0, MS_TARGET_AVERAGE_VALUE, 10);
    s.metrics[0].query = strdup("sum(one_series{namespace=\"{{namespace}}\"})");
    s.ndownstreams = 1;
    snprintf(s.downstreams[0].name, sizeof s.downstreams[0].name, "edge");
    s.downstreams[0].usage_query = strdup("sum(one_series{proxy=\"edge\"})");
    s.downstreams[0].has_limit = true; /* static limit: nothing to query */
    s.downstreams[0].limit = 100;
    s.retry_storm.enabled = true;
    s.retry_storm.retry_share_query = strdup("sum(one_series{kind=\"{{kind}}\"})");
    objs[0] = object(&s, "a", "w0");
    objs[1] = object(&s, "a", "w1");
    objs[2] = object(&s, "b", "w2");
    objs[3] = object(&s, "b", "w3");
    objs[4] = object(&s, "a", "w4");
    run(&f, objs, 5, 0);
    ms_prom_tick_stats(f.tick, &st);
    /* 5 metric refs -> 2 namespaces; 5 usage refs -> 1 per namespace; 5
     * retry refs -> 1 per namespace: a text is never shared across
     * namespaces (each pays for its own). */
    assert_int_equal(st.user_refs, 15);
    assert_int_equal(st.user_queries, 6);
    assert_int_equal(st.builtin_queries, 0);
    assert_int_equal(f.runner.queries, 6);
    assert_int_equal(f.runner.calls, 1); /* one batch */
    for (size_t i = 0; i < 5; i++) {
        expect(&f.out[i], 0, MS_PROM_OK, 1);
        assert_true(f.out[i].obs.downstreams[0].usage.present);
        assert_false(f.out[i].obs.downstreams[0].limit.present);
        assert_int_equal(f.out[i].downstream_limit[0].reason, MS_PROM_NOT_CONFIGURED);
        assert_true(f.out[i].obs.retry_share.present);
        assert_int_equal(f.out[i].metrics[1].reason, MS_PROM_NOT_CONFIGURED);
    }
    done(&f);
    ms_spec_cleanup(&s);
}

static void test_user_query_outcomes(void **state)
{
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[1];
    (void)state;

    ms_spec_init(&s);
    add_query_metric(&s, "many_series");
    add_query_metric(&s, "nan_please");
    add_query_metric(&s, "sum(bad");
    add_query_metric(&s, "one_series{x=\"{{nope}}\"}");
    add_metric(&s, MS_SOURCE_SIDECAR_CONCURRENCY, MS_PROXY_HAPROXY, MS_TARGET_UTILIZATION, 70);
    s.saturation[4].enabled = true;
    s.saturation[4].admitted_query = strdup("one_series{a=\"{{podRegex}}\"}");
    s.saturation[4].rejected_query = strdup("nan_please{r=\"1\"}");
    objs[0] = object(&s, "shop", "web");
    objs[0].pod_regex = "web-a|web-b";
    run(&f, objs, 1, 0);
    expect(&f.out[0], 0, MS_PROM_AMBIGUOUS, 0);
    expect(&f.out[0], 1, MS_PROM_NOT_A_NUMBER, 0);
    expect(&f.out[0], 2, MS_PROM_BAD_QUERY, 0);
    assert_non_null(strstr(f.out[0].metrics[2].detail, "unclosed left parenthesis"));
    expect(&f.out[0], 3, MS_PROM_TEMPLATE, 0);
    assert_non_null(strstr(f.out[0].metrics[3].detail, "{{nope}}"));
    expect(&f.out[0], 4, MS_PROM_OK, 40);
    assert_true(f.out[0].obs.saturation[4].admitted.present);
    assert_false(f.out[0].obs.saturation[4].rejected.present);
    assert_int_equal(f.out[0].saturation_rejected[4].reason, MS_PROM_NOT_A_NUMBER);
    for (size_t i = 0; i < f.runner.nasked; i++)
        if (strstr(f.runner.asked[i], "one_series{a=") != NULL)
            assert_string_equal(f.runner.asked[i], "one_series{a=\"web-a|web-b\"}");
    done(&f);
    ms_spec_cleanup(&s);
}

/* A retry share query is the user's: a value outside [0, 1] (a ratio
 * written upside down, retries per logical request) is missing with a
 * reason, never a share the engine would discount demand by. */
static void test_retry_share_outside_0_1_is_missing(void **state)
{
    static const double shares[] = {1.5, -0.2, 1, 0};
    (void)state;

    for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++) {
        char body[256];
        route_t routes[1] = {{"retries", body}};
        ms_spec_t s;
        fixture_t f = {0};
        ms_prom_object_t objs[1];
        bool in_range = shares[i] >= 0 && shares[i] <= 1;

        snprintf(body, sizeof body,
                 "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                 "[{\"metric\":{},\"value\":[1796001800,\"%g\"]}]}}",
                 shares[i]);
        ms_spec_init(&s);
        s.retry_storm = (ms_retry_storm_spec_t){true, strdup("sum(retries) / sum(attempts)"), 0.3};
        objs[0] = object(&s, "shop", "web");
        f.runner.routes = routes;
        f.runner.nroutes = 1;
        run(&f, objs, 1, 0);
        assert_int_equal(f.out[0].obs.retry_share.present, in_range);
        if (in_range) {
            assert_true(f.out[0].obs.retry_share.value == shares[i]);
        } else {
            assert_int_equal(f.out[0].retry_share.reason, MS_PROM_MALFORMED);
            assert_non_null(strstr(f.out[0].retry_share.detail, "outside [0, 1]"));
        }
        done(&f);
        ms_spec_cleanup(&s);
    }
}

/* Pods the controller could not count: no regex, and every query that uses
 * {{podRegex}} is missing with the tick's own reason (never run as "",
 * which would match no pod: a zero where the truth is missing); the others
 * run as usual. */
static void test_unknown_pods_leave_pod_queries_missing(void **state)
{
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[1];
    (void)state;

    ms_spec_init(&s);
    add_query_metric(&s, "sum(one_series{pod=~\"{{podRegex}}\"})");
    add_query_metric(&s, "sum(one_series{namespace=\"{{namespace}}\"})");
    s.saturation[1].enabled = true;
    s.saturation[1].admitted_query = strdup("one_series{pod=~\"{{podRegex}}\"}");
    s.saturation[1].rejected_query = strdup("one_series{r=\"1\"}");
    s.ndownstreams = 1;
    snprintf(s.downstreams[0].name, sizeof s.downstreams[0].name, "edge");
    s.downstreams[0].usage_query = strdup("sum(one_series{pod=~\"{{podRegex}}\"})");
    s.downstreams[0].limit_query = strdup("sum(one_series{proxy=\"edge\"})");
    s.retry_storm.enabled = true;
    s.retry_storm.retry_share_query = strdup("sum(one_series{pod=~\"{{podRegex}}\"})");
    objs[0] = object(&s, "shop", "web"); /* pod_regex NULL: not known */
    run(&f, objs, 1, 0);
    expect(&f.out[0], 0, MS_PROM_TEMPLATE, 0);
    assert_non_null(strstr(f.out[0].metrics[0].detail, "pods are not known"));
    assert_int_equal(f.out[0].metrics[1].reason, MS_PROM_OK);
    assert_true(f.out[0].obs.metrics[1].present);
    assert_false(f.out[0].obs.saturation[1].admitted.present);
    assert_int_equal(f.out[0].saturation_admitted[1].reason, MS_PROM_TEMPLATE);
    assert_true(f.out[0].obs.saturation[1].rejected.present);
    assert_false(f.out[0].obs.downstreams[0].usage.present);
    assert_int_equal(f.out[0].downstream_usage[0].reason, MS_PROM_TEMPLATE);
    assert_true(f.out[0].obs.downstreams[0].limit.present);
    assert_false(f.out[0].obs.retry_share.present);
    assert_int_equal(f.out[0].retry_share.reason, MS_PROM_TEMPLATE);
    for (size_t i = 0; i < f.runner.nasked; i++)
        assert_null(strstr(f.runner.asked[i], "pod=~"));
    done(&f);
    ms_spec_cleanup(&s);
}

static void test_failed_batch_leaves_everything_missing(void **state)
{
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[2];
    (void)state;

    spec_concurrency(&s, MS_PROXY_HAPROXY, 0);
    add_metric(&s, MS_SOURCE_PROMETHEUS, 0, MS_TARGET_VALUE, 1);
    s.metrics[3].query = strdup("one_series");
    objs[0] = object(&s, "shop", "web");
    objs[1] = object(&s, "edge", "gw");
    f.runner.fail_batch = MS_ERR_NOMEM;
    run(&f, objs, 2, 0);
    for (size_t i = 0; i < 2; i++)
        for (size_t m = 0; m < 4; m++)
            expect(&f.out[i], m, MS_PROM_TRANSPORT, 0);
    done(&f);
    ms_spec_cleanup(&s);
}

static void test_failed_preset_query_names_its_cause(void **state)
{
    static const route_t timeout_routes[] = {
        {"haproxy_server_current_sessions", "503-timeout.json"},
    };
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[1];
    (void)state;

    spec_concurrency(&s, MS_PROXY_HAPROXY, 0);
    objs[0] = object(&s, "shop", "web");
    f.runner.routes = timeout_routes;
    f.runner.nroutes = 1;
    run(&f, objs, 1, 0);
    for (size_t m = 0; m < 3; m++) {
        expect(&f.out[0], m, MS_PROM_TIMEOUT, 0);
        assert_non_null(strstr(f.out[0].metrics[m].detail, "timed out"));
    }
    done(&f);
    ms_spec_cleanup(&s);
}

/* A namespace list too long for one query: the presets cover every namespace
 * and still split back per object. */
static void test_many_namespaces_drop_the_filter(void **state)
{
    enum { N = 8 };
    ms_spec_t s;
    fixture_t f = {0};
    ms_prom_object_t objs[N];
    char ns[N][2600];
    (void)state;

    spec_concurrency(&s, MS_PROXY_HAPROXY, 0);
    for (size_t i = 0; i < N; i++) {
        memset(ns[i], 'a' + (int)i, sizeof ns[i] - 1);
        ns[i][sizeof ns[i] - 1] = '\0';
        objs[i] = object(&s, ns[i], "web");
    }
    objs[0] = object(&s, "shop", "web");
    run(&f, objs, N, 0);
    assert_null(strstr(f.runner.asked[0], "namespace=~"));
    expect(&f.out[0], 0, MS_PROM_OK, 40);
    expect(&f.out[1], 0, MS_PROM_NO_DATA, 0);
    done(&f);
    ms_spec_cleanup(&s);
}

static void test_bad_options(void **state)
{
    ms_prom_preset_options_t bad_label = {.workload_label = "app-name"};
    ms_prom_preset_options_t bad_window = {.rate_window = "2m)"};
    ms_prom_preset_options_t label = {.workload_label = "app"};
    char err[MS_ERRBUF_SIZE];
    char *q = NULL;
    (void)state;

    assert_null(ms_prom_tick_new(&bad_label, err, sizeof err));
    assert_non_null(strstr(err, "app-name"));
    assert_null(ms_prom_tick_new(&bad_window, err, sizeof err));
    assert_non_null(strstr(err, "2m)"));
    assert_int_equal(ms_prom_preset_query(MS_PROM_KIND_HAPROXY, &label, NULL, &q, err, sizeof err),
                     MS_OK);
    assert_non_null(strstr(q, "sum by (namespace, app)"));
    assert_null(strstr(q, "ms_workload"));
    free(q);
    assert_int_equal(ms_prom_preset_query(MS_PROM_KIND_CPU, &label, NULL, &q, err, sizeof err),
                     MS_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envoy_preset),
        cmocka_unit_test(test_haproxy_preset_and_staleness),
        cmocka_unit_test(test_linkerd_preset_needs_a_limit),
        cmocka_unit_test(test_cpu_preset_one_query_for_all_containers),
        cmocka_unit_test(test_preset_pod_counts),
        cmocka_unit_test(test_negative_preset_values_are_missing),
        cmocka_unit_test(test_every_slot_at_once),
        cmocka_unit_test(test_user_queries_deduplicated),
        cmocka_unit_test(test_fair_order_shares_and_owners),
        cmocka_unit_test(test_user_query_cap_keeps_guardrails),
        cmocka_unit_test(test_user_query_outcomes),
        cmocka_unit_test(test_unknown_pods_leave_pod_queries_missing),
        cmocka_unit_test(test_retry_share_outside_0_1_is_missing),
        cmocka_unit_test(test_failed_batch_leaves_everything_missing),
        cmocka_unit_test(test_failed_preset_query_names_its_cause),
        cmocka_unit_test(test_many_namespaces_drop_the_filter),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
