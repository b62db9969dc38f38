/*
 * test_controller_conflict.c - who else scales this workload.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "meshscaler/conflict.h"

static const ms_conflict_target_t api = {"shop", "apps/v1", "Deployment", "api"};

static bool check(const char *json, bool is_hpa, char *who, size_t cap)
{
    cJSON *o = cJSON_Parse(json);
    bool r;

    assert_non_null(o);
    r = ms_conflict_check("shop/api-mas", &api, o, is_hpa, who, cap);
    cJSON_Delete(o);
    return r;
}

#define OBJ(ns, name, av, kind, target, extra)                                                     \
    "{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\"},\"spec\":{" extra              \
    "\"scaleTargetRef\":{\"apiVersion\":\"" av "\",\"kind\":\"" kind "\",\"name\":\"" target       \
    "\"}}}"

static void test_hpa_on_same_deployment(void **state)
{
    char who[128] = "";

    (void)state;
    assert_true(
        check(OBJ("shop", "api", "apps/v1", "Deployment", "api", ""), true, who, sizeof who));
    assert_string_equal(who, "HorizontalPodAutoscaler shop/api");
    /* another version of the same group names the same object */
    assert_true(
        check(OBJ("shop", "x", "apps/v1beta2", "Deployment", "api", ""), true, who, sizeof who));
}

static void test_no_conflict_elsewhere(void **state)
{
    char who[128] = "";

    (void)state;
    assert_false(
        check(OBJ("other", "api", "apps/v1", "Deployment", "api", ""), true, who, sizeof who));
    assert_false(
        check(OBJ("shop", "api", "apps/v1", "StatefulSet", "api", ""), true, who, sizeof who));
    assert_false(
        check(OBJ("shop", "api", "apps/v1", "Deployment", "web", ""), true, who, sizeof who));
    assert_false(check(OBJ("shop", "api", "argoproj.io/v1alpha1", "Deployment", "api", ""), true,
                       who, sizeof who));
    assert_false(check("{\"metadata\":{\"namespace\":\"shop\",\"name\":\"x\"},\"spec\":{}}", true,
                       who, sizeof who));
}

static void test_other_meshautoscalers(void **state)
{
    char who[128] = "";

    (void)state;
    assert_true(
        check(OBJ("shop", "second", "apps/v1", "Deployment", "api", ""), false, who, sizeof who));
    assert_string_equal(who, "MeshAutoscaler shop/second");
    /* never itself */
    assert_false(
        check(OBJ("shop", "api-mas", "apps/v1", "Deployment", "api", ""), false, who, sizeof who));
    /* a dry-run one runs beside it */
    assert_false(check(OBJ("shop", "shadow", "apps/v1", "Deployment", "api", "\"dryRun\":true,"),
                       false, who, sizeof who));
}

static void test_same_target(void **state)
{
    ms_conflict_target_t core = {"shop", "v1", "ReplicationController", "api"};
    ms_conflict_target_t core2 = {"shop", "v1", "ReplicationController", "api"};
    ms_conflict_target_t apps = {"shop", "apps/v1", "ReplicationController", "api"};

    (void)state;
    assert_true(ms_conflict_same_target(&core, &core2));
    assert_false(ms_conflict_same_target(&core, &apps));
    assert_true(ms_conflict_same_target(&api, &api));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hpa_on_same_deployment),
        cmocka_unit_test(test_no_conflict_elsewhere),
        cmocka_unit_test(test_other_meshautoscalers),
        cmocka_unit_test(test_same_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
