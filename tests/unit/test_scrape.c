/*
 * test_scrape.c - the sidecar-statistics core (scrape.h): the exposition
 * parser on hand-written edge cases and on real recorded answers
 * (tests/fixtures/scrape: HAProxy recorded here, Envoy and Linkerd from
 * public test data, see the README there), the presets, counter rates, the
 * sample size and order, the URL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_file.h"
#include "meshscaler/scrape.h"

#define BIG ((size_t)1 << 20)

static ms_scrape_family_t fam(const char *name)
{
    return (ms_scrape_family_t){.name = name};
}

static ms_scrape_family_t fam1(const char *name, const char *label, const char *value,
                               ms_scrape_match_op_t op)
{
    return (ms_scrape_family_t){.name = name, .matchers = {{label, value, op}}, .nmatchers = 1};
}

/* Parse text; fail the test on an error. */
static void parse_ok(const char *text, const ms_scrape_family_t *f, size_t n, ms_scrape_total_t *t)
{
    char err[MS_ERRBUF_SIZE] = "";
    ms_err_t rc = ms_scrape_parse(text, strlen(text), f, n, BIG, t, err, sizeof err);
    if (rc != MS_OK)
        fail_msg("parse: %s: %s", ms_err_name(rc), err);
}

static void test_format_edges(void **state)
{
    (void)state;
    const char *text = "# HELP http_in_flight Requests in flight.\r\n"
                       "# TYPE http_in_flight gauge\r\n"
                       "# a plain comment: anything { at all\n"
                       "\n"
                       "   \t\n"
                       "http_in_flight{code=\"200\",path=\"/a\",} 3 1700000000000\r\n"
                       "http_in_flight { code = \"500\" , path=\"/b\" } 4.5e0\n"
                       "http_in_flight{} 2\n"
                       "http_in_flight 1\n"
                       "http_in_flight{code=\"x\"} NaN\n"
                       "http_in_flight_total 100\n"
                       "other{a=\"1\"} +Inf\n"
                       "other{a=\"2\"} -1.5 -12\n"
                       "hist_bucket{le=\"+Inf\"} 7 # {trace_id=\"abc\"} 1.0\n"
                       "# EOF\n";
    ms_scrape_family_t f[] = {fam("http_in_flight"), fam("other"), fam("hist_bucket"),
                              fam("absent")};
    ms_scrape_total_t t[4];

    parse_ok(text, f, 4, t);
    assert_int_equal(t[0].samples, 4);
    assert_int_equal(t[0].nan, 1);
    assert_true(t[0].sum == 10.5);
    assert_int_equal(t[1].samples, 2);
    assert_true(isinf(t[1].sum) && t[1].sum > 0);
    assert_int_equal(t[2].samples, 1);
    assert_true(t[2].sum == 7);
    assert_int_equal(t[3].samples, 0);
    assert_true(t[3].sum == 0);
}

static void test_matchers(void **state)
{
    (void)state;
    const char *text = "m{v=\"a\\\"b\\\\c\\nd\",c=\"inbound|8080||\"} 1\n"
                       "m{v=\"a\\\"b\",c=\"inbound|9090||x\"} 10\n"
                       "m{c=\"outbound|8080||web\"} 100\n"
                       "m 1000\n";
    ms_scrape_family_t f[] = {
        fam1("m", "v", "a\"b\\c\nd", MS_SCRAPE_MATCH_EQ), /* the unescaped value */
        fam1("m", "v", "a\"b", MS_SCRAPE_MATCH_PREFIX),   /* both of the first two */
        fam1("m", "v", "a\"b", MS_SCRAPE_MATCH_EQ),       /* only the second */
        fam1("m", "c", "inbound|", MS_SCRAPE_MATCH_PREFIX),
        fam1("m", "v", "", MS_SCRAPE_MATCH_EQ), /* absent label == "" */
        {.name = "m",
         .matchers = {{"c", "inbound|", MS_SCRAPE_MATCH_PREFIX}, {"v", "a\"b", MS_SCRAPE_MATCH_EQ}},
         .nmatchers = 2},
    };
    ms_scrape_total_t t[6];

    parse_ok(text, f, 6, t);
    assert_true(t[0].sum == 1);
    assert_true(t[1].sum == 11);
    assert_true(t[2].sum == 10);
    assert_true(t[3].sum == 11);
    assert_true(t[4].sum == 1100);
    assert_true(t[5].sum == 10);
}

static void test_positive_only(void **state)
{
    (void)state;
    ms_scrape_family_t f[] = {{.name = "lim", .positive_only = true}};
    ms_scrape_total_t t[1];

    parse_ok("lim{s=\"a\"} 0\nlim{s=\"b\"} 0\n", f, 1, t);
    assert_int_equal(t[0].samples, 0); /* no limit at all: missing, not 0 */
    parse_ok("lim{s=\"a\"} 0\nlim{s=\"b\"} 25\n", f, 1, t);
    assert_int_equal(t[0].samples, 1);
    assert_true(t[0].sum == 25);
}

/* Each bad input fails with its code and a one-line message naming the line. */
static void test_garbage(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        ms_err_t code;
        const char *want;
    } cases[] = {
        {"ok 1\n9bad 1\n", MS_ERR_PARSE, "line 2: want a metric name"},
        {"m{a=\"1\" 2\n", MS_ERR_PARSE, "line 1: want ',' or '}'"},
        {"m{a=\"1} 2\n", MS_ERR_PARSE, "line 1: label a: want a quoted value"},
        {"m{a=1} 2\n", MS_ERR_PARSE, "line 1: label a: want a quoted value"},
        {"m{=\"1\"} 2\n", MS_ERR_PARSE, "line 1: want a label name"},
        {"m{a\"1\"} 2\n", MS_ERR_PARSE, "line 1: label a: want '='"},
        {"m{a=\"1\"\n", MS_ERR_PARSE, "line 1: want ',' or '}'"},
        {"m{a=\"x\\", MS_ERR_PARSE, "line 1: label a"},
        {"m\n", MS_ERR_PARSE, "line 1: m: no value"},
        {"m 12abc\n", MS_ERR_PARSE, "line 1: value \"12abc\" is not a number"},
        {"m 1 2 3\n", MS_ERR_PARSE, "line 1: unexpected '3' after the value"},
        {"m 1 x\n", MS_ERR_PARSE, "line 1: timestamp \"x\" is not a number"},
        {"m-x 1\n", MS_ERR_PARSE, "line 1: unexpected '-' after the metric name"},
        {"# TYPE m gauges\n", MS_ERR_PARSE, "line 1: # TYPE m: unknown type \"gauges\""},
        {"# TYPE\n", MS_ERR_PARSE, "line 1: # TYPE wants a metric name"},
        {"# HELP 1x y\n", MS_ERR_PARSE, "line 1: # HELP wants a metric name"},
        {"m 1\n# EOF\nm 2\n", MS_ERR_PARSE, "line 3: text after \"# EOF\""},
        {"<html><body>503 Service Unavailable</body></html>\n", MS_ERR_PARSE,
         "line 1: want a metric name, found '<'"},
        {"{\"status\":\"ok\"}", MS_ERR_PARSE, "line 1: want a metric name, found '{'"},
    };
    ms_scrape_family_t f[] = {fam("m")};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[MS_ERRBUF_SIZE] = "";
        ms_scrape_total_t t[1];
        ms_err_t rc =
            ms_scrape_parse(cases[i].text, strlen(cases[i].text), f, 1, BIG, t, err, sizeof err);
        if (rc != cases[i].code || strstr(err, cases[i].want) == NULL || strchr(err, '\n') != NULL)
            fail_msg("case %zu: got %s \"%s\", want %s \"%s\"", i, ms_err_name(rc), err,
                     ms_err_name(cases[i].code), cases[i].want);
    }
}

static void test_caps(void **state)
{
    (void)state;
    ms_scrape_family_t f[] = {fam("m")};
    ms_scrape_total_t t[1];
    char err[MS_ERRBUF_SIZE] = "";
    char *line = malloc(MS_SCRAPE_MAX_LINE + 8);
    const char *text = "m 1\nm 2\n";
    ms_scrape_parser_t *p = malloc(sizeof *p);

    assert_non_null(line);
    assert_non_null(p);
    /* A line of exactly MS_SCRAPE_MAX_LINE bytes is read, one more is not. */
    memset(line, ' ', MS_SCRAPE_MAX_LINE + 1);
    memcpy(line, "m 5", 3);
    line[MS_SCRAPE_MAX_LINE] = '\n';
    assert_int_equal(ms_scrape_parse(line, MS_SCRAPE_MAX_LINE + 1, f, 1, BIG, t, err, sizeof err),
                     MS_OK);
    assert_true(t[0].sum == 5);
    line[MS_SCRAPE_MAX_LINE] = ' ';
    line[MS_SCRAPE_MAX_LINE + 1] = '\n';
    assert_int_equal(ms_scrape_parse(line, MS_SCRAPE_MAX_LINE + 2, f, 1, BIG, t, err, sizeof err),
                     MS_ERR_TOOLARGE);
    assert_non_null(strstr(err, "line 1: longer than"));
    /* The same long line fed byte by byte: the carried part has the same cap. */
    ms_scrape_parser_init(p, f, 1, BIG);
    for (size_t i = 0; i < MS_SCRAPE_MAX_LINE + 2 && p->err == MS_OK; i++)
        (void)ms_scrape_parser_feed(p, line + i, 1, err, sizeof err);
    assert_int_equal(p->err, MS_ERR_TOOLARGE);
    /* Bytes: exactly the cap is read, one byte over is not; the error sticks. */
    assert_int_equal(ms_scrape_parse(text, 8, f, 1, 8, t, err, sizeof err), MS_OK);
    assert_true(t[0].sum == 3);
    ms_scrape_parser_init(p, f, 1, 7);
    assert_int_equal(ms_scrape_parser_feed(p, text, 8, err, sizeof err), MS_ERR_TOOLARGE);
    assert_non_null(strstr(err, "larger than 7 bytes"));
    assert_int_equal(ms_scrape_parser_feed(p, text, 1, err, sizeof err), MS_ERR_TOOLARGE);
    assert_int_equal(ms_scrape_parser_finish(p, err, sizeof err), MS_ERR_TOOLARGE);
    /* Too many families is the caller's mistake, said at once. */
    ms_scrape_parser_init(p, f, MS_SCRAPE_MAX_FAMILIES + 1, BIG);
    assert_int_equal(ms_scrape_parser_feed(p, text, 8, err, sizeof err), MS_ERR_INVALID);
    free(line);
    free(p);
}

/* Feeding in chunks of every size gives the totals of one feed. */
static void test_chunks(void **state)
{
    (void)state;
    size_t len;
    char *text = read_fixture_file(MS_FIXTURES, "haproxy-1.prom", &len);
    const ms_scrape_preset_t *hp = ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY);
    ms_scrape_total_t whole[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_parser_t *p = malloc(sizeof *p);
    char err[MS_ERRBUF_SIZE] = "";

    assert_non_null(p);
    assert_int_equal(
        ms_scrape_parse(text, len, hp->families, hp->nfamilies, BIG, whole, err, sizeof err),
        MS_OK);
    for (size_t chunk = 1; chunk <= 4099; chunk += (chunk < 20 ? 1 : 613)) {
        ms_scrape_parser_init(p, hp->families, hp->nfamilies, BIG);
        for (size_t off = 0; off < len; off += chunk) {
            size_t n = len - off < chunk ? len - off : chunk;
            /* an exact-size copy: a read past the chunk trips ASan */
            char *piece = malloc(n);
            assert_non_null(piece);
            memcpy(piece, text + off, n);
            assert_int_equal(ms_scrape_parser_feed(p, piece, n, err, sizeof err), MS_OK);
            free(piece);
        }
        assert_int_equal(ms_scrape_parser_finish(p, err, sizeof err), MS_OK);
        for (size_t i = 0; i < hp->nfamilies; i++) {
            assert_int_equal(p->totals[i].samples, whole[i].samples);
            assert_true(p->totals[i].sum == whole[i].sum);
        }
        assert_int_equal(p->lineno, 630);
    }
    free(p);
    free(text);
}

/* Parse a fixture with a preset's families. */
static void fixture_totals(const char *name, const ms_scrape_preset_t *preset, ms_scrape_total_t *t)
{
    size_t len;
    char *text = read_fixture_file(MS_FIXTURES, name, &len);
    char err[MS_ERRBUF_SIZE] = "";
    ms_err_t rc =
        ms_scrape_parse(text, len, preset->families, preset->nfamilies, BIG, t, err, sizeof err);

    if (rc != MS_OK)
        fail_msg("%s: %s", name, err);
    free(text);
}

static void test_haproxy_recorded(void **state)
{
    (void)state;
    const ms_scrape_preset_t *hp = ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY);
    ms_scrape_total_t t1[MS_SCRAPE_MAX_FAMILIES], t2[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_rates_t rates;
    ms_scrape_pod_t pod;

    fixture_totals("haproxy-1.prom", hp, t1);
    fixture_totals("haproxy-2.prom", hp, t2);
    ms_scrape_rates_init(&rates);
    ms_scrape_pod_values(hp, t1, &rates, "uid-a", 100.0, &pod);
    assert_true(pod.has_in_flight && pod.in_flight == 4);
    assert_true(pod.has_limit && pod.limit == 4);
    assert_false(pod.admitted.observed); /* the first read of a pod */
    assert_false(pod.rejected.observed);
    ms_scrape_pod_values(hp, t2, &rates, "uid-a", 103.0, &pod);
    assert_true(pod.has_in_flight && pod.in_flight == 4);
    assert_true(pod.admitted.observed);
    assert_true(fabs(pod.admitted.rate - 4.0 / 3.0) < 1e-12); /* sessions_total 5 -> 9 in 3 s */
    assert_true(pod.rejected.observed && pod.rejected.rate == 0);
    ms_scrape_rates_cleanup(&rates);
}

static void test_linkerd_recorded(void **state)
{
    (void)state;
    const ms_scrape_preset_t *lp = ms_scrape_preset(MS_SCRAPE_PROXY_LINKERD);
    ms_scrape_total_t t[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_family_t req[] = {
        fam1("request_total", "direction", "inbound", MS_SCRAPE_MATCH_EQ),
        fam1("response_latency_ms_bucket", "le", "+Inf", MS_SCRAPE_MATCH_EQ)};
    ms_scrape_total_t r[2];
    ms_scrape_rates_t rates;
    ms_scrape_pod_t pod;
    size_t len;
    char *text = read_fixture_file(MS_FIXTURES, "linkerd-2.x.prom", &len);
    char err[MS_ERRBUF_SIZE];

    fixture_totals("linkerd-2.x.prom", lp, t);
    assert_int_equal(t[0].samples, 2);
    assert_true(t[0].sum == 2316); /* 2314 + 2 (grep, README) */
    assert_int_equal(ms_scrape_parse(text, len, req, 2, BIG, r, err, sizeof err), MS_OK);
    assert_true(r[0].sum == 852 + 1 + 1 + 4 + 582 + 2 + 5 + 1 + 1 + 3);
    assert_true(r[1].sum == 853 && r[1].samples == 2);
    free(text);

    /* Little's law over two reads: 2316 -> 4316 ms accrued in 2 s is one
     * request in flight on average. */
    ms_scrape_rates_init(&rates);
    ms_scrape_pod_values(lp, t, &rates, "uid-l", 10.0, &pod);
    assert_false(pod.has_in_flight);
    assert_false(pod.has_limit);
    t[0].sum += 2000;
    ms_scrape_pod_values(lp, t, &rates, "uid-l", 12.0, &pod);
    assert_true(pod.has_in_flight);
    assert_true(fabs(pod.in_flight - 1.0) < 1e-12);
    ms_scrape_rates_cleanup(&rates);
}

static void test_envoy_recorded(void **state)
{
    (void)state;
    const ms_scrape_preset_t *ep = ms_scrape_preset(MS_SCRAPE_PROXY_ENVOY);
    ms_scrape_total_t t[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_family_t f[] = {
        fam1("envoy_cluster_client_ssl_socket_factory_ssl_context_update_by_sds", "cluster_name",
             "outbound|9080||", MS_SCRAPE_MATCH_PREFIX),
        fam1("envoy_cluster_upstream_rq", "response_code_class", "5xx", MS_SCRAPE_MATCH_EQ),
        fam("envoy_server_watchdog_miss"),
    };
    ms_scrape_total_t o[3];
    size_t len;
    char *text = read_fixture_file(MS_FIXTURES, "envoy-istio-1.5.prom", &len);
    char err[MS_ERRBUF_SIZE];

    fixture_totals("envoy-istio-1.5.prom", ep, t);
    for (size_t i = 0; i < ep->nfamilies; i++)
        assert_int_equal(t[i].samples, 0); /* no inbound| cluster in this answer */
    assert_int_equal(ms_scrape_parse(text, len, f, 3, BIG, o, err, sizeof err), MS_OK);
    assert_true(o[0].sum == 12 && o[0].samples == 2); /* reviews 4 + ratings 8 */
    assert_true(o[1].sum == 1);
    free(text);
    text = read_fixture_file(MS_FIXTURES, "envoy-istio-1.5-server.prom", &len);
    assert_int_equal(ms_scrape_parse(text, len, f, 3, BIG, o, err, sizeof err), MS_OK);
    assert_true(o[2].sum == 11 && o[2].samples == 1); /* empty braces */
    free(text);
}

/* The Envoy preset on inbound clusters (names as Istio writes them). */
static void test_envoy_preset(void **state)
{
    (void)state;
    const ms_scrape_preset_t *ep = ms_scrape_preset(MS_SCRAPE_PROXY_ENVOY);
    const char *text =
        "envoy_cluster_upstream_rq_active{cluster_name=\"inbound|8080||\"} 3\n"
        "envoy_cluster_upstream_rq_active{cluster_name=\"inbound|9090||\"} 2\n"
        "envoy_cluster_upstream_rq_active{cluster_name=\"outbound|8080||db.svc\"} 50\n"
        "envoy_cluster_upstream_rq_active{cluster_name=\"xds-grpc\"} 1\n"
        "envoy_cluster_circuit_breakers_default_remaining_rq{cluster_name=\"inbound|8080||\"} 95\n"
        "envoy_cluster_circuit_breakers_default_remaining_rq{cluster_name=\"inbound|9090||\"} 100\n"
        "envoy_cluster_upstream_rq_total{cluster_name=\"inbound|8080||\"} 1000\n"
        "envoy_cluster_upstream_rq_pending_overflow{cluster_name=\"inbound|8080||\"} 10\n";
    ms_scrape_total_t t[MS_SCRAPE_MAX_FAMILIES];
    ms_scrape_rates_t rates;
    ms_scrape_pod_t pod;

    parse_ok(text, ep->families, ep->nfamilies, t);
    ms_scrape_rates_init(&rates);
    ms_scrape_pod_values(ep, t, &rates, "uid-e", 1.0, &pod);
    assert_true(pod.has_in_flight && pod.in_flight == 5);
    assert_true(pod.has_limit && pod.limit == 200); /* 5 active + 195 remaining */
    t[2].sum = 1100;
    t[3].sum = 12;
    ms_scrape_pod_values(ep, t, &rates, "uid-e", 3.0, &pod);
    assert_true(pod.admitted.observed && pod.admitted.rate == 50);
    assert_true(pod.rejected.observed && pod.rejected.rate == 1);
    ms_scrape_rates_cleanup(&rates);
}

static void test_rates(void **state)
{
    (void)state;
    ms_scrape_rates_t r;
    ms_scrape_rate_t out[2];
    double v[2];
    bool has[2] = {true, true};

    ms_scrape_rates_init(&r);
    v[0] = 100, v[1] = 7;
    ms_scrape_rates_update(&r, "p1", 10.0, v, has, 2, out);
    assert_false(out[0].observed || out[1].observed); /* first read */
    v[0] = 150;
    ms_scrape_rates_update(&r, "p1", 15.0, v, has, 2, out);
    assert_true(out[0].observed && out[0].rate == 10);
    assert_true(out[1].observed && out[1].rate == 0);
    /* A decrease is a reset: the new value is the increase (Prometheus' rate). */
    v[0] = 20;
    ms_scrape_rates_update(&r, "p1", 20.0, v, has, 2, out);
    assert_true(out[0].observed && out[0].rate == 4);
    /* No time passed: not observed, and the older read stays the baseline. */
    v[0] = 30;
    ms_scrape_rates_update(&r, "p1", 20.0, v, has, 2, out);
    assert_false(out[0].observed);
    v[0] = 40;
    ms_scrape_rates_update(&r, "p1", 25.0, v, has, 2, out);
    assert_true(out[0].observed && out[0].rate == 4); /* (40 - 20) / 5 */
    /* A counter missing in either read: not observed; the others are. */
    has[1] = false;
    ms_scrape_rates_update(&r, "p1", 30.0, v, has, 2, out);
    assert_true(out[0].observed && !out[1].observed);
    has[1] = true;
    ms_scrape_rates_update(&r, "p1", 35.0, v, has, 2, out);
    assert_false(out[1].observed);
    /* NaN or negative counters never give a rate. */
    v[0] = NAN;
    ms_scrape_rates_update(&r, "p1", 40.0, v, has, 2, out);
    assert_false(out[0].observed);
    /* Pods are independent; expiry forgets the ones not read lately. */
    v[0] = 1;
    ms_scrape_rates_update(&r, "p2", 41.0, v, has, 2, out);
    assert_false(out[0].observed);
    assert_int_equal(ms_scrape_rates_size(&r), 2);
    assert_int_equal(ms_scrape_rates_expire(&r, 41.0), 1);
    assert_int_equal(ms_scrape_rates_size(&r), 1);
    ms_scrape_rates_update(&r, "p1", 50.0, v, has, 2, out);
    assert_false(out[0].observed); /* p1 was forgotten: a first read again */
    ms_scrape_rates_cleanup(&r);
}

static void test_sample_size(void **state)
{
    (void)state;
    static const size_t n[][2] = {{0, 0},  {1, 1},  {2, 2},    {3, 3},     {4, 4},       {5, 4},
                                  {10, 7}, {16, 9}, {100, 14}, {1000, 16}, {1000000, 16}};

    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) {
        /* Knative's populationMeanSampleSize, recomputed here. */
        double x = 1.96 * 1.96 * 100.0 / 25.0, N = (double)n[i][0];
        size_t knative = n[i][0] <= 3 ? n[i][0] : (size_t)ceil(N * x / (N + x - 1));
        assert_int_equal(ms_scrape_sample_size(n[i][0]), n[i][1]);
        assert_int_equal(knative, n[i][1]);
    }
    for (size_t p = 0; p < 5000; p++)
        assert_true(ms_scrape_sample_size(p) <= MS_SCRAPE_SAMPLE_MAX &&
                    ms_scrape_sample_size(p) <= p);
}

static void test_sample_order(void **state)
{
    (void)state;
    size_t a[50], b[50], seen[50];
    size_t first_counts[5] = {0};
    bool differs = false;

    ms_scrape_sample_order(50, 42, a);
    ms_scrape_sample_order(50, 42, b);
    assert_memory_equal(a, b, sizeof a); /* the same seed, the same order */
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < 50; i++)
        seen[a[i]]++;
    for (size_t i = 0; i < 50; i++)
        assert_int_equal(seen[i], 1); /* a permutation */
    ms_scrape_sample_order(50, 43, b);
    for (size_t i = 0; i < 50; i++)
        differs |= a[i] != b[i];
    assert_true(differs);
    /* Over many seeds every pod comes first about equally often. */
    for (uint64_t seed = 0; seed < 5000; seed++) {
        size_t o[5];
        ms_scrape_sample_order(5, seed, o);
        first_counts[o[0]]++;
    }
    for (size_t i = 0; i < 5; i++)
        assert_true(first_counts[i] > 850 && first_counts[i] < 1150);
    ms_scrape_sample_order(0, 1, a); /* nothing to order: no access */
    ms_scrape_sample_order(1, 1, a);
    assert_int_equal(a[0], 0);
}

static void test_presets_and_url(void **state)
{
    (void)state;
    ms_scrape_proxy_t p;
    ms_scrape_preset_t custom = *ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY);
    char url[256], small[20], err[MS_ERRBUF_SIZE];

    assert_true(ms_scrape_proxy_parse("linkerd", &p) && p == MS_SCRAPE_PROXY_LINKERD);
    assert_false(ms_scrape_proxy_parse("nginx", &p));
    assert_null(ms_scrape_preset(MS_SCRAPE_PROXY__COUNT));
    assert_int_equal(ms_scrape_preset(MS_SCRAPE_PROXY_ENVOY)->port, 15090);
    assert_int_equal(ms_scrape_preset(MS_SCRAPE_PROXY_LINKERD)->port, 4191);
    assert_int_equal(ms_scrape_url(ms_scrape_preset(MS_SCRAPE_PROXY_LINKERD), "10.1.2.3", url,
                                   sizeof url, err, sizeof err),
                     MS_OK);
    assert_string_equal(url, "http://10.1.2.3:4191/metrics");
    assert_int_equal(ms_scrape_url(ms_scrape_preset(MS_SCRAPE_PROXY_ENVOY), "fd00::1", url,
                                   sizeof url, err, sizeof err),
                     MS_OK);
    assert_true(strncmp(url, "http://[fd00::1]:15090/stats/prometheus?filter=", 47) == 0);
    custom.port = 9101; /* overridden, as a spec may */
    custom.path = "/stats;csv";
    assert_int_equal(ms_scrape_url(&custom, "10.0.0.9", url, sizeof url, err, sizeof err), MS_OK);
    assert_string_equal(url, "http://10.0.0.9:9101/stats;csv");
    assert_int_equal(ms_scrape_url(&custom, "10.0.0.9", small, sizeof small, err, sizeof err),
                     MS_ERR_TOOLARGE);
    assert_int_equal(ms_scrape_url(&custom, "", url, sizeof url, err, sizeof err), MS_ERR_INVALID);
    assert_int_equal(ms_scrape_url(&custom, "evil.example/x", url, sizeof url, err, sizeof err),
                     MS_ERR_INVALID);
    assert_int_equal(ms_scrape_url(&custom, "fe80::1%eth0", url, sizeof url, err, sizeof err),
                     MS_ERR_INVALID);
    custom.path = "metrics";
    assert_int_equal(ms_scrape_url(&custom, "10.0.0.9", url, sizeof url, err, sizeof err),
                     MS_ERR_INVALID);
    custom.path = "/metrics";
    custom.port = 70000;
    assert_int_equal(ms_scrape_url(&custom, "10.0.0.9", url, sizeof url, err, sizeof err),
                     MS_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_edges),
        cmocka_unit_test(test_matchers),
        cmocka_unit_test(test_positive_only),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_haproxy_recorded),
        cmocka_unit_test(test_linkerd_recorded),
        cmocka_unit_test(test_envoy_recorded),
        cmocka_unit_test(test_envoy_preset),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_sample_size),
        cmocka_unit_test(test_sample_order),
        cmocka_unit_test(test_presets_and_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
