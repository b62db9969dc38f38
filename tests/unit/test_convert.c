/*
 * test_convert.c - YAML streams into cJSON (util/yaml.c) and HPA to
 * MeshAutoscaler conversion (convert/convert.c).
 *
 * The golden files in tests/fixtures/convert/ were written by `meshscaler
 * convert` and read line by line against convert.h's rules; every one is also
 * checked here with the project's own spec reader, and applied to the real
 * API server with server-side dry-run in tests/integration/crd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture_file.h"

#include "meshscaler/buf.h"
#include "meshscaler/convert.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/yaml.h"

#define FIXTURES MS_FIXTURES "/convert"

/* ---- YAML ---- */

static cJSON *load(const char *text, char *errbuf, ms_err_t want)
{
    cJSON *docs = NULL;
    ms_err_t err = ms_yaml_load_all(text, strlen(text), &docs, errbuf, MS_ERRBUF_SIZE);

    assert_int_equal(err, want);
    return docs;
}

static void yaml_scalars_follow_the_core_schema(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    cJSON *docs = load("a: 1\nb: -2.5e3\nc: 0x1F\nd: 0o17\ne: true\nf: False\ng: ~\nh:\n"
                       "i: '1'\nj: \"true\"\nk: !!str 7\nl: .inf\nm: 1.2.3\nn: yes\no: 08\n",
                       errbuf, MS_OK);
    const cJSON *d = docs->child;
    (void)state;
    assert_int_equal(cJSON_GetArraySize(docs), 1);
    assert_true(cJSON_GetObjectItem(d, "a")->valuedouble == 1);
    assert_true(cJSON_GetObjectItem(d, "b")->valuedouble == -2500);
    assert_true(cJSON_GetObjectItem(d, "c")->valuedouble == 31);
    assert_true(cJSON_GetObjectItem(d, "d")->valuedouble == 15);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "e")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(d, "f")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "g")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "h")));
    assert_string_equal(cJSON_GetObjectItem(d, "i")->valuestring, "1");
    assert_string_equal(cJSON_GetObjectItem(d, "j")->valuestring, "true");
    assert_string_equal(cJSON_GetObjectItem(d, "k")->valuestring, "7");
    assert_true(cJSON_GetObjectItem(d, "l")->valuedouble > 1e308);
    assert_string_equal(cJSON_GetObjectItem(d, "m")->valuestring, "1.2.3");
    /* YAML 1.1's yes/no are strings in 1.2, as in Kubernetes' reader. */
    assert_string_equal(cJSON_GetObjectItem(d, "n")->valuestring, "yes");
    /* 0o is octal; a leading zero alone is decimal in 1.2. */
    assert_true(cJSON_GetObjectItem(d, "o")->valuedouble == 8);
    cJSON_Delete(docs);
}

static void yaml_streams_keep_documents_in_order_and_skip_empty_ones(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    cJSON *docs = load("---\na: [1, {b: c}]\n---\n---\n- x\n...\n", errbuf, MS_OK);
    (void)state;
    assert_int_equal(cJSON_GetArraySize(docs), 2);
    assert_true(cJSON_IsObject(cJSON_GetArrayItem(docs, 0)));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(docs->child, "a"), 1), "b")
            ->valuestring,
        "c");
    assert_string_equal(cJSON_GetArrayItem(docs, 1)->child->valuestring, "x");
    cJSON_Delete(docs);
    docs = load("", errbuf, MS_OK);
    assert_int_equal(cJSON_GetArraySize(docs), 0);
    cJSON_Delete(docs);
    /* JSON is YAML. */
    docs = load("{\"a\": [1, 2.5, null, \"s\"]}", errbuf, MS_OK);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(docs->child, "a")), 4);
    cJSON_Delete(docs);
}

static void yaml_errors_name_line_and_column(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    char deep[2 * MS_YAML_MAX_DEPTH + 8];
    (void)state;
    assert_null(load("a: [b\n", errbuf, MS_ERR_INVALID));
    assert_non_null(strstr(errbuf, "line 2, column 1: "));
    assert_null(load("a: &x 1\nb: *x\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 2, column 4: aliases (*name) are not supported");
    assert_null(load("? [a]\n: b\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 1, column 3: a mapping key must be a scalar");
    memset(deep, '[', MS_YAML_MAX_DEPTH + 1);
    memset(deep + MS_YAML_MAX_DEPTH + 1, ']', MS_YAML_MAX_DEPTH + 1);
    deep[2 * MS_YAML_MAX_DEPTH + 2] = '\0';
    assert_null(load(deep, errbuf, MS_ERR_INVALID));
    assert_non_null(strstr(errbuf, "nested too deeply"));
    deep[MS_YAML_MAX_DEPTH] = '\0'; /* 64 levels: allowed */
    memset(deep + 1, '[', MS_YAML_MAX_DEPTH - 1);
    memset(deep + MS_YAML_MAX_DEPTH, ']', MS_YAML_MAX_DEPTH);
    deep[2 * MS_YAML_MAX_DEPTH] = '\0';
    cJSON_Delete(load(deep, errbuf, MS_OK));
}

/* Kubernetes' strict decoding refuses a key given twice; keeping either
 * value silently would convert one number while the cluster keeps another. */
static void yaml_duplicate_keys_are_refused_with_their_path(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    (void)state;
    assert_null(load("spec:\n  maxReplicas: 5\n  maxReplicas: 500\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 3, column 3: duplicate key \"spec.maxReplicas\"");
    assert_null(load("a: 1\nb: {c: [x, {d: 1, e: 2, d: 3}]}\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 2, column 25: duplicate key \"b.c[1].d\"");
    assert_null(load("---\nok: 1\n---\nk: 1\n\"k\": 2\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 5, column 1: duplicate key \"k\"");
    /* The same key in sibling mappings or in another document is fine. */
    cJSON_Delete(load("- {a: 1}\n- {a: 2}\n---\na: 3\n", errbuf, MS_OK));
}

/* "\0" would end the C string early: "ab\0cd" would read as "ab". */
static void yaml_nul_escapes_are_refused(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    (void)state;
    assert_null(load("name: \"ab\\0cd\"\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 1, column 7: a NUL character (\"\\0\") is not allowed in "
                                "a scalar");
    assert_null(load("\"k\\0ey\": 1\n", errbuf, MS_ERR_INVALID));
    assert_string_equal(errbuf, "line 1, column 1: a NUL character (\"\\0\") is not allowed in "
                                "a scalar");
}

/* ---- conversion ---- */

static char *read_fixture(const char *name, size_t *len)
{
    return read_fixture_file(FIXTURES, name, len);
}

/* Every MeshAutoscaler in text passes the spec reader the controller uses. */
static void assert_valid_meshautoscalers(const char *text, size_t len, int want_docs)
{
    char errbuf[MS_ERRBUF_SIZE];
    cJSON *docs = NULL;

    assert_int_equal(ms_yaml_load_all(text, len, &docs, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(cJSON_GetArraySize(docs), want_docs);
    for (const cJSON *d = docs->child; d != NULL; d = d->next) {
        ms_spec_t spec;
        ms_jpath_t p;
        ms_err_t err;

        assert_string_equal(cJSON_GetObjectItem(d, "kind")->valuestring, "MeshAutoscaler");
        ms_jpath_init(&p, "spec");
        ms_spec_init(&spec);
        err = ms_spec_from_json(cJSON_GetObjectItem(d, "spec"), &p, false, &spec, errbuf,
                                sizeof errbuf);
        if (err != MS_OK)
            fail_msg("%s", errbuf);
        assert_true(spec.dry_run);
        ms_spec_cleanup(&spec);
    }
    cJSON_Delete(docs);
}

static const ms_convert_mapping_t test_map[] = {
    {"http_requests_per_second",
     "sum(rate(http_requests_total{namespace=\"{{namespace}}\",pod=~\"{{podRegex}}\"}[1m]))"},
    {"requests_per_second", "sum(rate(nginx_ingress_controller_requests{namespace=\"{{namespace}}"
                            "\",ingress=\"search\"}[1m]))"},
};

typedef struct {
    const char *input, *golden;
    ms_convert_options_t opts;
    int docs;
    const char *report; /* the expected report, exactly */
} golden_case_t;

static const char *const linkerd_pod[] = {"app", "linkerd-proxy"};

static const golden_case_t golden_cases[] = {
    {"v1-defaults.yaml", "v1-defaults.golden.yaml", {.proxy = MS_CONVERT_PROXY_ENVOY}, 1, ""},
    {"v2-resources-behavior.yaml",
     "v2-resources-behavior.golden.yaml",
     {.proxy = MS_CONVERT_PROXY_ENVOY, .keep_app_cpu = true},
     1,
     ""},
    {"v2beta2-mixed.yaml",
     "v2beta2-mixed.golden.yaml",
     {.proxy = MS_CONVERT_PROXY_HAPROXY, .map = test_map, .nmap = 2},
     1,
     "shop/orders: External queue_messages_ready, averageValue 30 not converted: add "
     "\"queue_messages_ready\" to the --metric-map file (metric name: PromQL template)\n"},
    {"v2beta1-object.yaml",
     "v2beta1-object.golden.yaml",
     {.proxy = MS_CONVERT_PROXY_LINKERD,
      .concurrency_limit = 250,
      .keep_app_cpu = true,
      .map = test_map,
      .nmap = 2},
     1,
     ""},
    /* What --proxy linkerd writes, auto finds from a live pod template. */
    {"list-two.yaml",
     "list-two.golden.yaml",
     {.proxy = MS_CONVERT_PROXY_AUTO, .containers = linkerd_pod, .ncontainers = 2},
     2,
     "shop/cart: warning: Linkerd exports no in-flight limit; set sidecarConcurrency.limit "
     "(--concurrency-limit N)\n"
     "shop/web: warning: Linkerd exports no in-flight limit; set sidecarConcurrency.limit "
     "(--concurrency-limit N)\n"},
};

static void conversions_match_their_golden_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof golden_cases / sizeof golden_cases[0]; i++) {
        const golden_case_t *c = &golden_cases[i];
        char errbuf[MS_ERRBUF_SIZE] = "";
        size_t in_len, golden_len;
        char *in = read_fixture(c->input, &in_len);
        char *golden = read_fixture(c->golden, &golden_len);
        ms_buf_t out, report;
        ms_err_t err;

        ms_buf_init(&out, 1u << 20);
        ms_buf_init(&report, 1u << 20);
        err = ms_convert_text(c->input, in, in_len, &c->opts, &out, &report, errbuf, sizeof errbuf);
        if (err != MS_OK)
            fail_msg("%s: %s", c->input, errbuf);
        assert_non_null(out.data);
        assert_string_equal(out.data, golden);
        assert_string_equal(report.data ? report.data : "", c->report);
        assert_valid_meshautoscalers(out.data, out.len, c->docs);
        ms_buf_cleanup(&out);
        ms_buf_cleanup(&report);
        free(in);
        free(golden);
    }
}

/* Convert text with envoy; returns the error and leaves the message. */
static ms_err_t convert(const char *text, ms_convert_options_t *o, ms_buf_t *out, char *errbuf)
{
    ms_convert_options_t envoy = {.proxy = MS_CONVERT_PROXY_ENVOY};
    ms_buf_t report;
    ms_err_t err;

    ms_buf_init(&report, 1u << 20);
    err = ms_convert_text("in.yaml", text, strlen(text), o ? o : &envoy, out, &report, errbuf,
                          MS_ERRBUF_SIZE);
    ms_buf_cleanup(&report);
    return err;
}

#define HPA_HEAD "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a}\n"
#define REF "scaleTargetRef: {kind: Deployment, name: a}"

static void invalid_hpas_are_refused_with_their_path(void **state)
{
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"kind: Deployment\n", "in.yaml: kind: \"Deployment\" is not HorizontalPodAutoscaler"},
        {"apiVersion: autoscaling/v3\nkind: HorizontalPodAutoscaler\n",
         "in.yaml: apiVersion: unknown value \"autoscaling/v3\" (want one of autoscaling/v1, "
         "autoscaling/v2beta1, autoscaling/v2beta2, autoscaling/v2)"},
        {HPA_HEAD "spec: {" REF "}\n", "in.yaml: spec.maxReplicas: required"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 0}\n",
         "in.yaml: spec.maxReplicas: must be at least 1"},
        {HPA_HEAD "spec: {" REF ", minReplicas: 0, maxReplicas: 3}\n",
         "in.yaml: spec.minReplicas: must be at least 1"},
        {HPA_HEAD "spec: {" REF ", minReplicas: 5, maxReplicas: 3}\n",
         "in.yaml: spec: minReplicas 5 is above maxReplicas 3"},
        {HPA_HEAD "spec: {scaleTargetRef: {kind: Deployment}, maxReplicas: 3}\n",
         "in.yaml: spec.scaleTargetRef.name: required"},
        /* the target as a MeshAutoscaler takes it (found by fuzz_convert: an
         * apiVersion of 282 bytes with spaces was written out as given) */
        {HPA_HEAD "spec: {scaleTargetRef: {apiVersion: 'apps/v1 x', kind: Deployment, name: a}, "
                  "maxReplicas: 3}\n",
         "in.yaml: spec.scaleTargetRef.apiVersion: \"apps/v1 x\" is not an API version"},
        {HPA_HEAD "spec: {scaleTargetRef: {kind: 'Deploy ment', name: a}, maxReplicas: 3}\n",
         "in.yaml: spec.scaleTargetRef.kind: \"Deploy ment\" is not a kind"},
        {HPA_HEAD "spec: {scaleTargetRef: {kind: Deployment, name: A_b}, maxReplicas: 3}\n",
         "in.yaml: spec.scaleTargetRef.name: \"A_b\" is not a Kubernetes name"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: Resource, resource: {name: "
                  "cpu, target: {type: Utilization}}}]}\n",
         "in.yaml: spec.metrics[0].resource.target.averageUtilization: required by type "
         "Utilization"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: Resource, resource: {name: "
                  "cpu, target: {type: AverageValue, averageValue: 1Q}}}]}\n",
         "in.yaml: spec.metrics[0].resource.target.averageValue: quantity \"1Q\" has an unknown "
         "suffix"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: Pods}]}\n",
         "in.yaml: spec.metrics[0].pods: not an object"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: ContainerResource, "
                  "containerResource: {name: cpu, container: Bad_Name, target: {type: "
                  "Utilization, averageUtilization: 50}}}]}\n",
         "in.yaml: spec.metrics[0].containerResource.container: \"Bad_Name\" is not a container "
         "name"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, behavior: {scaleUp: {policies: [{type: Pods, "
                  "value: 0, periodSeconds: 15}]}}}\n",
         "in.yaml: spec.behavior.scaleUp.policies[0].value: must be at least 1"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: External, external: {metric: "
                  "{name: q}, target: {type: Value, value: 3}}}]}\n",
         "in.yaml: spec.metrics: no metric could be converted (the lines above say why); a "
         "MeshAutoscaler needs at least one"},
        {"a: [b\n", "in.yaml: line 2, column 1: did not find expected ',' or ']'"},
        /* the cluster would keep 500 where the converter read 5 */
        {HPA_HEAD "spec:\n  " REF "\n  maxReplicas: 5\n  maxReplicas: 500\n",
         "in.yaml: line 7, column 3: duplicate key \"spec.maxReplicas\""},
        {"# nothing\n", "in.yaml: no document"},
        {"kind: List\nitems: [{kind: HorizontalPodAutoscaler, apiVersion: autoscaling/v1}]\n",
         "in.yaml: items[0].metadata: not an object"},
        {"kind: List\nitems: 3\n", "in.yaml: items: not an array"},
        {HPA_HEAD "spec: {" REF ", maxReplicas: 3}\n---\nkind: x\n",
         "in.yaml: documents[1].kind: \"x\" is not HorizontalPodAutoscaler"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char errbuf[MS_ERRBUF_SIZE] = "";
        ms_buf_t out;

        ms_buf_init(&out, 1u << 20);
        if (convert(cases[i].text, NULL, &out, errbuf) != MS_ERR_INVALID)
            fail_msg("case %zu was accepted", i);
        if (strncmp(errbuf, cases[i].message, strlen(cases[i].message)) != 0)
            fail_msg("case %zu: got \"%s\"\n  want \"%s\"", i, errbuf, cases[i].message);
        ms_buf_cleanup(&out);
    }
}

/* auto reads the pod template: istio-proxy is Envoy, a container named like
 * haproxy is HAProxy (and SidecarCPU names that container); nothing known
 * is an error that asks for --proxy. */
static void auto_finds_the_proxy_in_the_pod_template(void **state)
{
    static const char *const istio[] = {"app", "istio-proxy"};
    static const char *const ha[] = {"haproxy-sidecar", "app"};
    static const char *const none[] = {"app"};
    const char *text = HPA_HEAD "spec: {" REF ", maxReplicas: 3}\n";
    ms_convert_options_t o = {.proxy = MS_CONVERT_PROXY_AUTO};
    char errbuf[MS_ERRBUF_SIZE];
    ms_buf_t out;
    (void)state;

    ms_buf_init(&out, 1u << 20);
    o.containers = istio, o.ncontainers = 2;
    assert_int_equal(convert(text, &o, &out, errbuf), MS_OK);
    assert_non_null(strstr(out.data, "proxy: envoy\n"));
    assert_non_null(strstr(out.data, "container: \"istio-proxy\"\n"));
    ms_buf_cleanup(&out);
    o.containers = ha;
    assert_int_equal(convert(text, &o, &out, errbuf), MS_OK);
    assert_non_null(strstr(out.data, "proxy: haproxy\n"));
    assert_non_null(strstr(out.data, "container: \"haproxy-sidecar\"\n"));
    ms_buf_cleanup(&out);
    o.containers = none, o.ncontainers = 1;
    assert_int_equal(convert(text, &o, &out, errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "in.yaml: spec.scaleTargetRef: cannot tell the proxy of "
                                "Deployment a: no container is a known sidecar; pass --proxy "
                                "envoy|haproxy|linkerd");
    ms_buf_cleanup(&out);
}

/* Mapped metric names become CRD names, unique among the metrics; the
 * proxy's names are reserved; past 16 metrics the rest are reported. */
static void mapped_metric_names_are_valid_and_unique(void **state)
{
    static const ms_convert_mapping_t map[] = {{"sidecar-cpu", "q1"}, {"_x/y", "q2"}, {"n", "q3"}};
    ms_convert_options_t o = {.proxy = MS_CONVERT_PROXY_ENVOY, .map = map, .nmap = 3};
    char errbuf[MS_ERRBUF_SIZE];
    ms_buf_t out;
    char text[8192];
    size_t n;
    (void)state;

    n = (size_t)snprintf(text, sizeof text, HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [");
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "{type: Pods, pods: {metric: {name: sidecar-cpu}, target: {type: "
                          "AverageValue, averageValue: 1}}}, "
                          "{type: Pods, pods: {metric: {name: _x/y}, target: {type: "
                          "AverageValue, averageValue: 1}}}, "
                          "{type: Resource, resource: {name: cpu, target: {type: Utilization, "
                          "averageUtilization: 50}}}");
    for (int i = 0; i < 15; i++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              ", {type: External, external: {metric: {name: n}, target: {type: "
                              "Value, value: %d}}}",
                              i + 1);
    snprintf(text + n, sizeof text - n, "]}\n");
    ms_buf_init(&out, 1u << 20);
    assert_int_equal(convert(text, &o, &out, errbuf), MS_OK);
    assert_non_null(strstr(out.data, "- name: sidecar-cpu-2\n"));
    assert_non_null(strstr(out.data, "- name: m_x-y\n"));
    assert_non_null(strstr(out.data, "- name: n-12\n"));
    assert_null(strstr(out.data, "- name: n-13\n"));
    assert_valid_meshautoscalers(out.data, out.len, 1);
    ms_buf_cleanup(&out);
}

static void metric_map_files_are_read_and_checked(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    ms_convert_mapping_t *map = NULL;
    cJSON *tree = NULL;
    size_t n = 0;
    const char *good = "a: 'sum(x)'\n\"b.c\": \"rate(y[1m])\"\n";
    (void)state;

    assert_int_equal(
        ms_convert_map_parse(good, strlen(good), &tree, &map, &n, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(map[1].metric, "b.c");
    assert_string_equal(map[1].query, "rate(y[1m])");
    free(map);
    cJSON_Delete(tree);
    assert_int_equal(ms_convert_map_parse("a: 3\n", 5, &tree, &map, &n, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf, "a: not a PromQL template (a non-empty string)");
    assert_int_equal(
        ms_convert_map_parse("a: x\na: y\n", 10, &tree, &map, &n, errbuf, sizeof errbuf),
        MS_ERR_INVALID);
    assert_non_null(strstr(errbuf, "a"));
    assert_int_equal(ms_convert_map_parse("- a\n", 4, &tree, &map, &n, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf, "$: want one mapping of metric name to PromQL template");
}

/* A metric name with a line separator (U+2028) and cut in the middle of a
 * UTF-8 sequence still gives YAML that reads back (found by fuzz_convert). */
static void comments_stay_ascii(void **state)
{
    char errbuf[MS_ERRBUF_SIZE], text[1024];
    cJSON *docs = NULL;
    ms_buf_t out;
    (void)state;

    snprintf(
        text, sizeof text,
        HPA_HEAD "spec: {" REF ", maxReplicas: 3, metrics: [{type: Resource, resource: {name: "
                 "cpu, target: {type: Utilization, averageUtilization: 50}}}, {type: External, "
                 "external: {metric: {name: \"%s\"}, target: {type: Value, value: 3}}}]}\n",
        "q\u2028x"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\u00e9\u00e9\u00e9");
    ms_buf_init(&out, 1u << 20);
    assert_int_equal(convert(text, NULL, &out, errbuf), MS_OK);
    assert_int_equal(ms_yaml_load_all(out.data, out.len, &docs, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(cJSON_GetArraySize(docs), 1);
    for (size_t i = 0; i < out.len; i++)
        assert_true((unsigned char)out.data[i] < 0x80);
    cJSON_Delete(docs);
    ms_buf_cleanup(&out);
}

/* --live writes dryRun: false; the behavior's tolerance carries over. */
static void live_and_tolerance(void **state)
{
    ms_convert_options_t o = {.proxy = MS_CONVERT_PROXY_ENVOY, .live = true};
    char errbuf[MS_ERRBUF_SIZE];
    ms_buf_t out;
    (void)state;

    ms_buf_init(&out, 1u << 20);
    assert_int_equal(convert(HPA_HEAD "spec: {" REF ", maxReplicas: 3, behavior: {scaleDown: "
                                      "{tolerance: 50m}}}\n",
                             &o, &out, errbuf),
                     MS_OK);
    assert_non_null(strstr(out.data, "  dryRun: false\n"));
    assert_non_null(strstr(out.data, "    scaleDown:\n      tolerance: \"0.05\"\n"));
    ms_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_scalars_follow_the_core_schema),
        cmocka_unit_test(yaml_streams_keep_documents_in_order_and_skip_empty_ones),
        cmocka_unit_test(yaml_errors_name_line_and_column),
        cmocka_unit_test(yaml_duplicate_keys_are_refused_with_their_path),
        cmocka_unit_test(yaml_nul_escapes_are_refused),
        cmocka_unit_test(conversions_match_their_golden_files),
        cmocka_unit_test(invalid_hpas_are_refused_with_their_path),
        cmocka_unit_test(auto_finds_the_proxy_in_the_pod_template),
        cmocka_unit_test(mapped_metric_names_are_valid_and_unique),
        cmocka_unit_test(metric_map_files_are_read_and_checked),
        cmocka_unit_test(live_and_tolerance),
        cmocka_unit_test(comments_stay_ascii),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
