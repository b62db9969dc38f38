/*
 * test_kube_client.c - what the client makes of kube-apiserver answers,
 * from recorded responses (tests/fixtures/kube): Status objects become typed
 * errors with reason and message; an APIResourceList becomes the discovery
 * table; request paths are classified for the request counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_client_internal.h"

#ifndef MS_FIXTURES
#define MS_FIXTURES "tests/fixtures"
#endif

static char *fixture(const char *name, size_t *len)
{
    return read_fixture_file(MS_FIXTURES "/kube", name, len);
}

static void expect_status(const char *file, const char *method, const char *path, long status,
                          ms_err_t err, const char *reason, const char *message)
{
    size_t len;
    char *body = fixture(file, &len);
    ms_kube_error_t kerr;

    memset(&kerr, 0, sizeof kerr);
    ms__kube_error_from_status(&kerr, method, path, status, body, len);
    assert_int_equal(kerr.err, err);
    assert_int_equal(kerr.status, status);
    assert_string_equal(kerr.reason, reason);
    assert_string_equal(kerr.message, message);
    free(body);
}

static void test_recorded_status_objects(void **state)
{
    (void)state;
    expect_status(
        "status-404.json", "GET", "/api/v1/namespaces/rec/configmaps/nope", 404, MS_ERR_NOTFOUND,
        "NotFound",
        "GET /api/v1/namespaces/rec/configmaps/nope: 404 NotFound: configmaps \"nope\" not found");
    expect_status("status-409.json", "PUT", "/api/v1/namespaces/rec/configmaps/seed", 409,
                  MS_ERR_CONFLICT, "Conflict",
                  "PUT /api/v1/namespaces/rec/configmaps/seed: 409 Conflict: Operation cannot be "
                  "fulfilled on "
                  "configmaps \"seed\": the object has been modified; please apply your changes to "
                  "the latest "
                  "version and try again");
    expect_status(
        "status-403.json", "GET", "/api/v1/namespaces/kube-system/secrets?limit=500", 403,
        MS_ERR_FORBIDDEN, "Forbidden",
        "GET /api/v1/namespaces/kube-system/secrets: 403 Forbidden: secrets is forbidden: User "
        "\"system:serviceaccount:meshscaler-system:meshscaler\" cannot list resource \"secrets\" "
        "in API "
        "group \"\" in the namespace \"kube-system\"");
    expect_status("status-401.json", "GET", "/api/v1/namespaces", 401, MS_ERR_UNAUTHORIZED,
                  "Unauthorized", "GET /api/v1/namespaces: 401 Unauthorized: Unauthorized");
}

static void test_error_without_status_body(void **state)
{
    ms_kube_error_t kerr;

    (void)state;
    ms__kube_error_from_status(&kerr, "GET", "/x", 503, "<html>busy</html>", 17);
    assert_int_equal(kerr.err, MS_ERR_UNAVAILABLE);
    assert_string_equal(kerr.reason, "ServiceUnavailable");
    assert_string_equal(kerr.message,
                        "GET /x: 503 ServiceUnavailable: (no Status in the response)");
    ms__kube_error_from_status(&kerr, "GET", "/x", 410, NULL, 0);
    assert_int_equal(kerr.err, MS_ERR_GONE);
    ms__kube_error_from_status(&kerr, "GET", "/x", 429, "", 0);
    assert_int_equal(kerr.err, MS_ERR_UNAVAILABLE);
    ms__kube_error_from_status(&kerr, "PATCH", "/x", 422, "{\"reason\":7}", 12);
    assert_int_equal(kerr.err, MS_ERR_INVALID);
    assert_string_equal(kerr.reason, "Invalid");
}

static void test_recorded_discovery(void **state)
{
    size_t len, n;
    char *text = fixture("discovery-apps-v1.json", &len);
    cJSON *doc = cJSON_Parse(text);
    ms_kube_resource_t *res;
    bool dep = false, sts = false, rs = false, ds = false;

    (void)state;
    assert_int_equal(ms__kube_discovery_parse(doc, "apps/v1", &res, &n), MS_OK);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(res[i].api_version, "apps/v1");
        if (strcmp(res[i].kind, "Deployment") == 0)
            dep = strcmp(res[i].resource, "deployments") == 0 && res[i].has_scale &&
                  res[i].has_status && res[i].namespaced;
        if (strcmp(res[i].kind, "StatefulSet") == 0)
            sts = strcmp(res[i].resource, "statefulsets") == 0 && res[i].has_scale;
        if (strcmp(res[i].kind, "ReplicaSet") == 0)
            rs = strcmp(res[i].resource, "replicasets") == 0 && res[i].has_scale;
        if (strcmp(res[i].kind, "DaemonSet") == 0)
            ds = !res[i].has_scale && res[i].has_status; /* no /scale: not a target */
        /* subresources are folded in, never listed as kinds of their own */
        assert_null(strchr(res[i].resource, '/'));
    }
    assert_true(dep && sts && rs && ds);
    free(res);
    cJSON_Delete(doc);
    free(text);

    doc = cJSON_Parse("{\"kind\":\"Status\"}");
    assert_int_equal(ms__kube_discovery_parse(doc, "apps/v1", &res, &n), MS_ERR_PARSE);
    cJSON_Delete(doc);
}

static void test_collection_paths(void **state)
{
    (void)state;
    assert_true(ms__kube_path_is_collection("/api/v1/namespaces/ns/configmaps"));
    assert_true(
        ms__kube_path_is_collection("/api/v1/namespaces/ns/configmaps?limit=500&continue=x"));
    assert_true(ms__kube_path_is_collection("/api/v1/nodes"));
    assert_true(ms__kube_path_is_collection("/api/v1/namespaces"));
    assert_true(ms__kube_path_is_collection("/apis/apps/v1/deployments"));
    assert_true(ms__kube_path_is_collection("/apis/apps/v1/namespaces/shop/deployments"));
    assert_false(ms__kube_path_is_collection("/api/v1/namespaces/ns"));
    assert_false(ms__kube_path_is_collection("/api/v1/namespaces/ns/configmaps/a"));
    assert_false(
        ms__kube_path_is_collection("/apis/apps/v1/namespaces/shop/deployments/api/scale"));
    assert_false(ms__kube_path_is_collection("/apis/apps/v1"));
    assert_false(ms__kube_path_is_collection("/version"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_status_objects),
        cmocka_unit_test(test_error_without_status_body),
        cmocka_unit_test(test_recorded_discovery),
        cmocka_unit_test(test_collection_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
