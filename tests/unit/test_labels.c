/*
 * test_labels.c - label selectors, text and object forms, against the
 * semantics of apimachinery's labels.Parse and LabelSelectorAsSelector.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "meshscaler/labels.h"

/* matches(SELECTOR_TEXT, LABELS_JSON) */
static bool matches(const char *text, const char *labels_json)
{
    ms_label_selector_t *s = NULL;
    char err[256] = "";
    cJSON *labels = cJSON_Parse(labels_json);
    bool m;

    if (ms_label_selector_parse(text, &s, err, sizeof err) != MS_OK)
        fail_msg("parse \"%s\": %s", text, err);
    m = ms_label_selector_matches(s, labels);
    ms_label_selector_free(s);
    cJSON_Delete(labels);
    return m;
}

static bool refused(const char *text)
{
    ms_label_selector_t *s = NULL;
    char err[256] = "";
    ms_err_t e = ms_label_selector_parse(text, &s, err, sizeof err);

    ms_label_selector_free(s);
    return e == MS_ERR_INVALID && strstr(err, "label selector") != NULL;
}

static void test_equality(void **state)
{
    (void)state;
    assert_true(matches("app=web", "{\"app\":\"web\",\"x\":\"y\"}"));
    assert_true(matches("app==web", "{\"app\":\"web\"}"));
    assert_false(matches("app=web", "{\"app\":\"api\"}"));
    assert_false(matches("app=web", "{}"));
    assert_true(matches(" app = web , tier=front ", "{\"app\":\"web\",\"tier\":\"front\"}"));
    assert_false(matches("app=web,tier=front", "{\"app\":\"web\",\"tier\":\"back\"}"));
    /* != selects objects without the key too */
    assert_true(matches("app!=web", "{}"));
    assert_true(matches("app!=web", "{\"app\":\"api\"}"));
    assert_false(matches("app!=web", "{\"app\":\"web\"}"));
    /* an empty value is a value */
    assert_true(matches("app=", "{\"app\":\"\"}"));
    assert_false(matches("app=", "{\"app\":\"x\"}"));
}

static void test_sets_and_existence(void **state)
{
    (void)state;
    assert_true(matches("env in (prod, staging)", "{\"env\":\"staging\"}"));
    assert_false(matches("env in (prod,staging)", "{\"env\":\"dev\"}"));
    assert_false(matches("env in (prod)", "{}"));
    assert_true(matches("env notin (prod)", "{}"));
    assert_false(matches("env notin (prod,dev)", "{\"env\":\"dev\"}"));
    assert_false(matches("env in ()", "{\"env\":\"\"}"));
    assert_true(matches("canary", "{\"canary\":\"\"}"));
    assert_false(matches("canary", "{}"));
    assert_true(matches("!canary", "{}"));
    assert_false(matches("!canary", "{\"canary\":\"true\"}"));
    assert_true(matches("app.kubernetes.io/name=web,!canary,env in (a,b)",
                        "{\"app.kubernetes.io/name\":\"web\",\"env\":\"b\"}"));
    /* a key that contains "in" is a key */
    assert_true(matches("internal=yes", "{\"internal\":\"yes\"}"));
    assert_true(matches("index", "{\"index\":\"1\"}"));
}

static void test_numbers(void **state)
{
    (void)state;
    assert_true(matches("gen>3", "{\"gen\":\"4\"}"));
    assert_false(matches("gen>3", "{\"gen\":\"3\"}"));
    assert_true(matches("gen < 10", "{\"gen\":\"-1\"}"));
    assert_false(matches("gen<10", "{\"gen\":\"x\"}"));
    assert_false(matches("gen<10", "{}"));
}

static void test_empty_selects_everything(void **state)
{
    (void)state;
    assert_true(matches("", "{\"a\":\"b\"}"));
    assert_true(matches("   ", "{}"));
}

static void test_refusals(void **state)
{
    (void)state;
    assert_true(refused("app=web,"));
    assert_true(refused(",app=web"));
    assert_true(refused("app=web tier=x"));
    assert_true(refused("app in prod"));
    assert_true(refused("app in (a b)"));
    assert_true(refused("app in (a,"));
    assert_true(refused("app >"));
    assert_true(refused("app ~ x"));
    assert_true(refused("!"));
    assert_true(refused("=web"));
}

static bool json_matches(const char *selector_json, const char *labels_json)
{
    cJSON *sel = cJSON_Parse(selector_json), *labels = cJSON_Parse(labels_json);
    ms_label_selector_t *s = NULL;
    char err[256] = "";
    bool m;

    if (ms_label_selector_from_json(sel, &s, err, sizeof err) != MS_OK)
        fail_msg("from_json %s: %s", selector_json, err);
    m = ms_label_selector_matches(s, labels);
    ms_label_selector_free(s);
    cJSON_Delete(sel);
    cJSON_Delete(labels);
    return m;
}

static void test_label_selector_objects(void **state)
{
    ms_label_selector_t *s = NULL;
    char err[256];
    cJSON *bad;

    (void)state;
    assert_true(json_matches("{\"matchLabels\":{\"app\":\"web\"}}",
                             "{\"app\":\"web\",\"pod-template-hash\":\"x\"}"));
    assert_false(json_matches("{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"api\"}"));
    assert_true(json_matches(
        "{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
        "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}",
        "{\"env\":\"a\"}"));
    assert_false(json_matches(
        "{\"matchExpressions\":[{\"key\":\"canary\",\"operator\":\"Exists\"}]}", "{}"));
    assert_true(json_matches(
        "{\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}",
        "{}"));
    /* {} selects everything; null selects nothing */
    assert_true(json_matches("{}", "{\"x\":\"y\"}"));
    assert_false(json_matches("null", "{\"x\":\"y\"}"));
    bad = cJSON_Parse("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Sometimes\"}]}");
    assert_int_equal(ms_label_selector_from_json(bad, &s, err, sizeof err), MS_ERR_INVALID);
    assert_non_null(strstr(err, "Sometimes"));
    cJSON_Delete(bad);
    bad = cJSON_Parse("{\"matchLabels\":{\"a\":1}}");
    assert_int_equal(ms_label_selector_from_json(bad, &s, err, sizeof err), MS_ERR_INVALID);
    cJSON_Delete(bad);
    assert_false(ms_label_selector_matches(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equality), cmocka_unit_test(test_sets_and_existence),
        cmocka_unit_test(test_numbers),  cmocka_unit_test(test_empty_selects_everything),
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_label_selector_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
