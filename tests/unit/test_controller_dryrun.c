/*
 * test_controller_dryrun.c - the decision lines of `controller --dry-run`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "meshscaler/clock.h"
#include "meshscaler/dryrun.h"
#include "meshscaler/spec_json.h"

typedef struct {
    ms_spec_t spec;
    ms_engine_memory_t mem;
    ms_decision_t d;
} fixture_t;

static void decide(fixture_t *f, int32_t current, double sidecar, bool rps_present, double rps)
{
    const char *json = "{\"minReplicas\":2,\"maxReplicas\":40,\"metrics\":["
                       "{\"name\":\"sidecar\",\"type\":\"SidecarConcurrency\","
                       "\"sidecarConcurrency\":{\"proxy\":\"envoy\",\"limit\":100},"
                       "\"target\":{\"type\":\"Utilization\",\"averageUtilization\":70}},"
                       "{\"name\":\"rps\",\"type\":\"Prometheus\",\"prometheus\":{\"query\":\"x\"},"
                       "\"target\":{\"type\":\"AverageValue\",\"averageValue\":\"120\"}}]}";
    cJSON *j = cJSON_Parse(json);
    ms_jpath_t p;
    ms_observation_t obs;
    char err[256];

    ms_spec_init(&f->spec);
    ms_jpath_init(&p, "spec");
    assert_int_equal(ms_spec_from_json(j, &p, true, &f->spec, err, sizeof err), MS_OK);
    cJSON_Delete(j);
    ms_engine_memory_init(&f->mem);
    ms_observation_init(&obs);
    obs.now = 1000;
    obs.current_replicas = obs.ready_replicas = current;
    obs.metrics[0] = (ms_sample_t){true, sidecar};
    obs.metrics[1] = (ms_sample_t){rps_present, rps};
    assert_int_equal(ms_engine_decide(&f->spec, &f->mem, &obs, &f->d), MS_OK);
}

static ms_dryrun_record_t record(fixture_t *f)
{
    ms_dryrun_record_t r = {0};

    r.wall_time = 1795996800; /* 2026-11-30T00:00:00Z */
    r.time = 1000;
    r.namespace_ = "shop";
    r.name = "api";
    r.target_kind = "Deployment";
    r.target_name = "api-server";
    r.spec = &f->spec;
    r.decision = &f->d;
    r.memory = &f->mem;
    r.desired = f->d.desired_replicas;
    return r;
}

static void test_table_row(void **state)
{
    fixture_t f;
    ms_dryrun_record_t r;
    ms_buf_t out;

    (void)state;
    decide(&f, 4, 140, false, 0);
    r = record(&f);
    ms_buf_init(&out, 4096);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_non_null(strstr(out.data, "2026-11-30T00:00:00Z shop/api"));
    assert_non_null(strstr(out.data, "Deployment/api-server"));
    assert_non_null(strstr(out.data, "      4 -> 8       DesiredWithinRange"));
    assert_non_null(strstr(out.data, "sidecar=140(asks 8),rps=missing"));
    assert_null(strchr(out.data, '\n'));
    /* the header names the same columns in the same order */
    const char *h = ms_dryrun_table_header();
    assert_true(strstr(h, "TIME") < strstr(h, "NAMESPACE/NAME"));
    assert_true(strstr(h, "TARGET") < strstr(h, "CURRENT -> DESIRED"));
    assert_true(strstr(h, "REASON") < strstr(h, "METRICS"));
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

/* A cap that binds with room reserved for pods not running yet says so
 * (step 7): 4 replicas, 1 running, 25 flows each: (140 - 51 - 75) / 25 = 0. */
static void test_table_reservation(void **state)
{
    const char *json = "{\"minReplicas\":2,\"maxReplicas\":40,\"metrics\":["
                       "{\"name\":\"sidecar\",\"type\":\"SidecarConcurrency\","
                       "\"sidecarConcurrency\":{\"proxy\":\"envoy\",\"limit\":100},"
                       "\"target\":{\"type\":\"Utilization\",\"averageUtilization\":70}}],"
                       "\"guardrails\":{\"downstream\":[{\"name\":\"edge\",\"usageQuery\":\"u\","
                       "\"limit\":200,\"perReplica\":25}]}}";
    cJSON *j = cJSON_Parse(json);
    fixture_t f;
    ms_jpath_t p;
    ms_observation_t obs;
    ms_dryrun_record_t r;
    ms_buf_t out;
    char err[256];

    (void)state;
    ms_spec_init(&f.spec);
    ms_jpath_init(&p, "spec");
    assert_int_equal(ms_spec_from_json(j, &p, true, &f.spec, err, sizeof err), MS_OK);
    cJSON_Delete(j);
    ms_engine_memory_init(&f.mem);
    ms_observation_init(&obs);
    obs.now = 1000;
    obs.current_replicas = 4;
    obs.ready_replicas = 1;
    obs.running_replicas = (ms_pods_t){true, 1};
    obs.metrics[0] = (ms_sample_t){true, 560}; /* asks 8 of the one Ready pod */
    obs.downstreams[0].usage = (ms_sample_t){true, 51};
    assert_int_equal(ms_engine_decide(&f.spec, &f.mem, &obs, &f.d), MS_OK);
    r = record(&f);
    ms_buf_init(&out, 4096);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_non_null(strstr(out.data, "      4 -> 4       DownstreamLimit"));
    assert_non_null(strstr(out.data, "sidecar=560(asks 8) (edge allows 4: 3 starting replicas "
                                     "reserve 75 flows)"));
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

static void test_table_note_and_applied(void **state)
{
    fixture_t f;
    ms_dryrun_record_t r;
    ms_buf_t out;

    (void)state;
    decide(&f, 4, 140, true, 480);
    r = record(&f);
    r.desired = 4;
    r.note = "scale-out is paused by annotation, so the replica count is held";
    ms_buf_init(&out, 4096);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_non_null(strstr(out.data, "      4 -> 4 "));
    assert_non_null(strstr(out.data, "(scale-out is paused"));
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

/* Beside an HPA: its name and desired count on the line, in both formats;
 * an HPA without a decision yet is named, its count null (JSON) or left out. */
static void test_beside_an_hpa(void **state)
{
    fixture_t f;
    ms_dryrun_record_t r;
    ms_buf_t out;
    cJSON *o, *hpa;

    (void)state;
    decide(&f, 4, 140, false, 0);
    r = record(&f);
    cJSON *cpu = cJSON_Parse("[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\","
                             "\"current\":{\"averageUtilization\":41}}}]");
    r.hpa = "shop/api-server";
    r.hpa_desired = 5;
    r.hpa_metrics = cpu;
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_non_null(strstr(out.data, " (HPA shop/api-server: 5)"));
    ms_buf_cleanup(&out);
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_JSON, &r, &out), MS_OK);
    o = cJSON_Parse(out.data);
    hpa = cJSON_GetObjectItem(o, "hpa");
    assert_string_equal(cJSON_GetObjectItem(hpa, "name")->valuestring, "shop/api-server");
    assert_int_equal(cJSON_GetObjectItem(hpa, "desiredReplicas")->valueint, 5);
    /* the HPA's own reading, as it wrote it */
    assert_int_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(
                cJSON_GetObjectItem(
                    cJSON_GetArrayItem(cJSON_GetObjectItem(hpa, "currentMetrics"), 0), "resource"),
                "current"),
            "averageUtilization")
            ->valueint,
        41);
    cJSON_Delete(o);
    ms_buf_cleanup(&out);
    r.hpa_desired = -1;
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_null(strstr(out.data, "(HPA"));
    ms_buf_cleanup(&out);
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_JSON, &r, &out), MS_OK);
    o = cJSON_Parse(out.data);
    assert_true(
        cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "hpa"), "desiredReplicas")));
    cJSON_Delete(o);
    cJSON_Delete(cpu);
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

static void test_missing_reasons(void **state)
{
    fixture_t f;
    ms_dryrun_record_t r;
    ms_buf_t out;
    const char *codes[2] = {"OK", "NO_DATA"};
    const char *details[2] = {"", "the query returned no samples"};
    cJSON *o;

    (void)state;
    decide(&f, 4, 140, false, 0);
    r = record(&f);
    r.missing_code = codes;
    r.missing_detail = details;
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_TABLE, &r, &out), MS_OK);
    assert_non_null(strstr(out.data, "sidecar=140(asks 8),rps=missing(NO_DATA)"));
    ms_buf_cleanup(&out);
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_JSON, &r, &out), MS_OK);
    o = cJSON_Parse(out.data);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "missing"), "rps")->valuestring,
                        "the query returned no samples");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "missing"), "sidecar"));
    cJSON_Delete(o);
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

static void test_json_line_has_decide_fields(void **state)
{
    fixture_t f;
    ms_dryrun_record_t r;
    ms_buf_t out;
    cJSON *o;

    (void)state;
    decide(&f, 4, 140, false, 0);
    r = record(&f);
    ms_buf_init(&out, 1 << 16);
    assert_int_equal(ms_dryrun_format(MS_DRYRUN_JSON, &r, &out), MS_OK);
    assert_null(strchr(out.data, '\n'));
    o = cJSON_Parse(out.data);
    assert_non_null(o);
    const char *keys[] = {
        "time",   "currentReplicas", "desiredReplicas", "recommendation", "stabilized",
        "reason", "metrics",         "state",           "message",        "namespace",
        "name",   "target",          "timestamp"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_non_null(cJSON_GetObjectItemCaseSensitive(o, keys[i]));
    assert_string_equal(cJSON_GetObjectItem(o, "target")->valuestring, "Deployment/api-server");
    assert_int_equal(cJSON_GetObjectItem(o, "desiredReplicas")->valueint, 8);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metrics"), "rps"), "value")));
    assert_null(cJSON_GetObjectItem(o, "appliedReplicas"));
    cJSON_Delete(o);
    ms_buf_cleanup(&out);
    ms_spec_cleanup(&f.spec);
}

static void test_rfc3339(void **state)
{
    char buf[32];

    (void)state;
    ms_time_rfc3339(0, false, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_row),
        cmocka_unit_test(test_table_reservation),
        cmocka_unit_test(test_table_note_and_applied),
        cmocka_unit_test(test_json_line_has_decide_fields),
        cmocka_unit_test(test_beside_an_hpa),
        cmocka_unit_test(test_missing_reasons),
        cmocka_unit_test(test_rfc3339),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
