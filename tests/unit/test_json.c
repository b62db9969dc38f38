/*
 * test_json.c - JSON paths and the typed cJSON readers.
 *
 * The messages are the user interface of every refusal (`kubectl describe`,
 * `meshscaler decide` on stderr), so several are checked word for word.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/json.h"

/* A parsed JSON value; the test deletes it. */
static cJSON *parse_value(const char *text)
{
    cJSON *v = cJSON_Parse(text);

    if (v == NULL)
        fail_msg("test input is not JSON: %s", text);
    return v;
}

/* ---- paths ---- */

static void test_path_of_the_document_is_dollar(void **state)
{
    ms_jpath_t p;

    (void)state;
    ms_jpath_init(&p, "");
    assert_string_equal(ms_jpath_str(&p), "$");
    ms_jpath_init(&p, NULL);
    assert_string_equal(ms_jpath_str(&p), "$");
}

static void test_path_push_and_pop(void **state)
{
    ms_jpath_t p;
    size_t at_tick, at_metrics;

    (void)state;
    ms_jpath_init(&p, "ticks");
    at_tick = ms_jpath_push_index(&p, 3);
    assert_string_equal(ms_jpath_str(&p), "ticks[3]");
    at_metrics = ms_jpath_push_key(&p, "metrics");
    ms_jpath_push_key(&p, "rps");
    assert_string_equal(ms_jpath_str(&p), "ticks[3].metrics.rps");
    ms_jpath_pop(&p, at_metrics);
    assert_string_equal(ms_jpath_str(&p), "ticks[3]");
    ms_jpath_pop(&p, at_tick);
    assert_string_equal(ms_jpath_str(&p), "ticks");
}

static void test_path_first_key_has_no_leading_dot(void **state)
{
    ms_jpath_t p;

    (void)state;
    ms_jpath_init(&p, "");
    ms_jpath_push_key(&p, "spec");
    assert_string_equal(ms_jpath_str(&p), "spec");
    ms_jpath_init(&p, "");
    ms_jpath_push_index(&p, 0);
    assert_string_equal(ms_jpath_str(&p), "[0]");
}

static void test_path_pop_beyond_the_end_does_nothing(void **state)
{
    ms_jpath_t p;

    (void)state;
    ms_jpath_init(&p, "spec");
    ms_jpath_pop(&p, 100);
    assert_string_equal(ms_jpath_str(&p), "spec");
    ms_jpath_pop(&p, 0);
    assert_string_equal(ms_jpath_str(&p), "$");
}

static void test_path_quotes_odd_keys(void **state)
{
    ms_jpath_t p;

    (void)state;
    /* A dot or a space inside a key would make the path ambiguous. */
    ms_jpath_init(&p, "metrics");
    ms_jpath_push_key(&p, "a.b");
    assert_string_equal(ms_jpath_str(&p), "metrics[\"a.b\"]");
    ms_jpath_init(&p, "metrics");
    ms_jpath_push_key(&p, "my metric");
    assert_string_equal(ms_jpath_str(&p), "metrics[\"my metric\"]");
    ms_jpath_init(&p, "metrics");
    ms_jpath_push_key(&p, "");
    assert_string_equal(ms_jpath_str(&p), "metrics[\"\"]");
    /* A round's namespace/name key stays plain (docs/decide.md: ticks[2].objects.shop/x). */
    ms_jpath_init(&p, "objects");
    ms_jpath_push_key(&p, "shop/x");
    assert_string_equal(ms_jpath_str(&p), "objects.shop/x");
    /* Names of the usual shape stay plain. */
    ms_jpath_init(&p, "metrics");
    ms_jpath_push_key(&p, "proxy-cpu_2");
    assert_string_equal(ms_jpath_str(&p), "metrics.proxy-cpu_2");
}

static void test_path_replaces_control_bytes_and_quotes(void **state)
{
    ms_jpath_t p;

    (void)state;
    /* The path ends up in a one-line message; a newline would split it. */
    ms_jpath_init(&p, "m");
    ms_jpath_push_key(&p, "a\nb\"c\x01");
    assert_string_equal(ms_jpath_str(&p), "m[\"a?b?c?\"]");
}

static void test_path_cuts_long_odd_keys(void **state)
{
    ms_jpath_t p;
    char key[300];

    (void)state;
    memset(key, '!', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    ms_jpath_init(&p, "m");
    ms_jpath_push_key(&p, key);
    assert_true(p.len < 80);
    assert_int_equal(strlen(ms_jpath_str(&p)), p.len);
    assert_string_equal(ms_jpath_str(&p) + p.len - 2, "\"]");
}

static void test_path_too_long_ends_in_dots(void **state)
{
    ms_jpath_t p;
    size_t saved = 0;

    (void)state;
    ms_jpath_init(&p, "spec");
    for (int i = 0; i < 40; i++) {
        size_t at = ms_jpath_push_key(&p, "abcdefghij");
        if (i == 10)
            saved = at;
    }
    assert_true(p.len <= MS_JPATH_MAX);
    assert_int_equal(strlen(ms_jpath_str(&p)), p.len);
    assert_string_equal(ms_jpath_str(&p) + p.len - 3, "...");
    /* Popping still restores the exact earlier path. */
    ms_jpath_pop(&p, saved);
    assert_int_equal(strlen(ms_jpath_str(&p)), saved);
    assert_null(strstr(ms_jpath_str(&p), "..."));
}

static void test_path_cut_is_marked_once(void **state)
{
    ms_jpath_t p;

    (void)state;
    ms_jpath_init(&p, "spec");
    for (int i = 0; i < 40; i++)
        ms_jpath_push_key(&p, "abcdefghij");
    ms_jpath_push_index(&p, 3);
    /* One "..." marks the cut and later keys and indexes add nothing; a run
     * of dots, or "spec.abc...[3]", would misdescribe the place. */
    assert_string_equal(ms_jpath_str(&p) + p.len - 3, "...");
    assert_null(strstr(ms_jpath_str(&p), "...."));
}

static void test_path_errf_prefixes_the_path(void **state)
{
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];

    (void)state;
    ms_jpath_init(&p, "spec");
    ms_jpath_push_key(&p, "maxReplicas");
    assert_int_equal(ms_jpath_errf(&p, errbuf, sizeof errbuf, "%d is too %s", 3, "small"),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf, "spec.maxReplicas: 3 is too small");
}

/* ---- readers ---- */

static void test_absent_means_missing_or_null(void **state)
{
    cJSON *null = parse_value("null"), *zero = parse_value("0"), *empty = parse_value("\"\"");

    (void)state;
    assert_true(ms_json_is_absent(NULL));
    assert_true(ms_json_is_absent(null));
    assert_false(ms_json_is_absent(zero));
    assert_false(ms_json_is_absent(empty));
    cJSON_Delete(null);
    cJSON_Delete(zero);
    cJSON_Delete(empty);
}

static void test_number_reads_numbers(void **state)
{
    cJSON *v = parse_value("-2.5");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    double out = 0;

    (void)state;
    ms_jpath_init(&p, "x");
    assert_int_equal(ms_json_number(v, &p, &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == -2.5);
    cJSON_Delete(v);
}

static void test_number_names_what_it_found(void **state)
{
    static const struct {
        const char *json;
        const char *message;
    } cases[] = {
        {"\"91\"", "ticks[3].metrics.rps: not a number (found a string)"},
        {"null", "ticks[3].metrics.rps: not a number (found null)"},
        {"true", "ticks[3].metrics.rps: not a number (found a boolean)"},
        {"[1]", "ticks[3].metrics.rps: not a number (found an array)"},
        {"{}", "ticks[3].metrics.rps: not a number (found an object)"},
    };
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];

    (void)state;
    ms_jpath_init(&p, "ticks");
    ms_jpath_push_index(&p, 3);
    ms_jpath_push_key(&p, "metrics");
    ms_jpath_push_key(&p, "rps");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = parse_value(cases[i].json);
        double out = 7;
        assert_int_equal(ms_json_number(v, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
        assert_string_equal(errbuf, cases[i].message);
        assert_true(out == 7); /* untouched */
        cJSON_Delete(v);
    }
    assert_int_equal(ms_json_number(NULL, &p, &(double){0}, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "ticks[3].metrics.rps: not a number (found missing)");
}

static void test_number_refuses_infinity(void **state)
{
    /* cJSON turns an overflowing literal into HUGE_VAL. */
    cJSON *v = parse_value("1e999");
    cJSON *nan = cJSON_CreateNumber(NAN);
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    double out = 7;

    (void)state;
    ms_jpath_init(&p, "x");
    assert_int_equal(ms_json_number(v, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "x: not a finite number");
    assert_int_equal(ms_json_number(nan, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_true(out == 7);
    cJSON_Delete(v);
    cJSON_Delete(nan);
}

static void test_int32_accepts_whole_numbers(void **state)
{
    cJSON *one = parse_value("1.0"), *max = parse_value("2147483647"),
          *min = parse_value("-2147483648");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    int32_t out = 0;

    (void)state;
    ms_jpath_init(&p, "x");
    assert_int_equal(ms_json_int32(one, &p, 0, 10, &out, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(out, 1);
    assert_int_equal(ms_json_int32(max, &p, INT32_MIN, INT32_MAX, &out, errbuf, sizeof errbuf),
                     MS_OK);
    assert_int_equal(out, INT32_MAX);
    assert_int_equal(ms_json_int32(min, &p, INT32_MIN, INT32_MAX, &out, errbuf, sizeof errbuf),
                     MS_OK);
    assert_int_equal(out, INT32_MIN);
    cJSON_Delete(one);
    cJSON_Delete(max);
    cJSON_Delete(min);
}

static void test_int32_failures(void **state)
{
    static const struct {
        const char *json;
        const char *message;
    } cases[] = {
        {"2.5", "spec.minReplicas: not an integer"},
        {"1e999", "spec.minReplicas: not an integer"},
        {"\"3\"", "spec.minReplicas: not an integer (found a string)"},
        {"0", "spec.minReplicas: must be at least 1"},
        {"11", "spec.minReplicas: must be at most 10"},
        /* Far outside int32: refused by range, never converted. */
        {"1e300", "spec.minReplicas: must be at most 10"},
        {"-1e300", "spec.minReplicas: must be at least 1"},
    };
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];

    (void)state;
    ms_jpath_init(&p, "spec");
    ms_jpath_push_key(&p, "minReplicas");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = parse_value(cases[i].json);
        int32_t out = 77;
        assert_int_equal(ms_json_int32(v, &p, 1, 10, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
        assert_string_equal(errbuf, cases[i].message);
        assert_int_equal(out, 77);
        cJSON_Delete(v);
    }
}

static void test_bool(void **state)
{
    cJSON *t = parse_value("true"), *f = parse_value("false"), *n = parse_value("1");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    bool out = false;

    (void)state;
    ms_jpath_init(&p, "spec");
    ms_jpath_push_key(&p, "dryRun");
    assert_int_equal(ms_json_bool(t, &p, &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out);
    assert_int_equal(ms_json_bool(f, &p, &out, errbuf, sizeof errbuf), MS_OK);
    assert_false(out);
    /* 1 is not true: the spec says boolean. */
    out = true;
    assert_int_equal(ms_json_bool(n, &p, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "spec.dryRun: not a boolean (found a number)");
    assert_true(out);
    cJSON_Delete(t);
    cJSON_Delete(f);
    cJSON_Delete(n);
}

static void test_strdup_copies_and_replaces(void **state)
{
    cJSON *a = parse_value("\"abc\""), *b = parse_value("\"xy\"");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    char *out = NULL;

    (void)state;
    ms_jpath_init(&p, "q");
    assert_int_equal(ms_json_strdup(a, &p, 3, &out, errbuf, sizeof errbuf), MS_OK);
    assert_string_equal(out, "abc");
    assert_ptr_not_equal(out, a->valuestring);
    /* A repeated key replaces the earlier copy without leaking it (ASan). */
    assert_int_equal(ms_json_strdup(b, &p, 3, &out, errbuf, sizeof errbuf), MS_OK);
    assert_string_equal(out, "xy");
    free(out);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_strdup_failures(void **state)
{
    cJSON *empty = parse_value("\"\""), *long_ = parse_value("\"abcd\""), *num = parse_value("5");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    char *out = NULL;

    (void)state;
    ms_jpath_init(&p, "q");
    assert_int_equal(ms_json_strdup(empty, &p, 3, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "q: must not be empty");
    assert_int_equal(ms_json_strdup(long_, &p, 3, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "q: longer than 3 characters");
    assert_int_equal(ms_json_strdup(num, &p, 3, &out, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "q: not a string (found a number)");
    assert_null(out);
    cJSON_Delete(empty);
    cJSON_Delete(long_);
    cJSON_Delete(num);
}

static void test_strcpy_fills_the_buffer_exactly(void **state)
{
    cJSON *fits = parse_value("\"abc\""), *over = parse_value("\"abcd\"");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    char buf[4] = "zzz";

    (void)state;
    ms_jpath_init(&p, "name");
    /* cap 4 holds 3 characters and the NUL. */
    assert_int_equal(ms_json_strcpy(fits, &p, buf, sizeof buf, errbuf, sizeof errbuf), MS_OK);
    assert_string_equal(buf, "abc");
    memcpy(buf, "zzz", 4);
    assert_int_equal(ms_json_strcpy(over, &p, buf, sizeof buf, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf, "name: longer than 3 characters");
    assert_string_equal(buf, "zzz");
    cJSON_Delete(fits);
    cJSON_Delete(over);
}

static void test_enum(void **state)
{
    static const char *const selects[] = {"Max", "Min", "Disabled"};
    cJSON *min = parse_value("\"Min\""), *lower = parse_value("\"max\""), *num = parse_value("0");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    int index = -1;

    (void)state;
    ms_jpath_init(&p, "selectPolicy");
    assert_int_equal(ms_json_enum(min, &p, selects, 3, &index, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(index, 1);
    /* Case matters, as in Kubernetes enums. */
    assert_int_equal(ms_json_enum(lower, &p, selects, 3, &index, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf,
                        "selectPolicy: unknown value \"max\" (want one of Max, Min, Disabled)");
    assert_int_equal(ms_json_enum(num, &p, selects, 3, &index, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_string_equal(errbuf, "selectPolicy: not a string (found a number)");
    assert_int_equal(index, 1);
    cJSON_Delete(min);
    cJSON_Delete(lower);
    cJSON_Delete(num);
}

static void test_enum_with_many_long_names_stays_in_bounds(void **state)
{
    /* More names than the message has room for: it is cut, never overrun. */
    static const char *const names[] = {
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
        "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
        "DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD",
        "EEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEEE",
    };
    cJSON *v = parse_value("\"nope-nope-nope-nope-nope-nope-nope-nope-nope-nope-nope\"");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];
    int index = -1;

    (void)state;
    ms_jpath_init(&p, "x");
    assert_int_equal(ms_json_enum(v, &p, names, 5, &index, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_true(strlen(errbuf) < MS_ERRBUF_SIZE);
    /* The value is quoted to its first 40 characters. */
    assert_non_null(
        strstr(errbuf, "x: unknown value \"nope-nope-nope-nope-nope-nope-nope-nope-\""));
    assert_int_equal(index, -1);
    cJSON_Delete(v);
}

static void test_object_and_array_checks(void **state)
{
    cJSON *obj = parse_value("{}"), *arr = parse_value("[]");
    ms_jpath_t p;
    char errbuf[MS_ERRBUF_SIZE];

    (void)state;
    ms_jpath_init(&p, "");
    assert_int_equal(ms_json_object(obj, &p, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(ms_json_array(arr, &p, errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(ms_json_object(arr, &p, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "$: not an object (found an array)");
    ms_jpath_init(&p, "ticks");
    assert_int_equal(ms_json_array(obj, &p, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "ticks: not an array (found an object)");
    assert_int_equal(ms_json_array(NULL, &p, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "ticks: not an array (found missing)");
    cJSON_Delete(obj);
    cJSON_Delete(arr);
}

static void test_position_counts_lines_and_columns_from_one(void **state)
{
    const char *text = "{\n  \"a\": x\n}";
    size_t line = 0, column = 0;

    (void)state;
    ms_json_position(text, text, &line, &column);
    assert_int_equal(line, 1);
    assert_int_equal(column, 1);
    ms_json_position(text, strchr(text, 'x'), &line, &column);
    assert_int_equal(line, 2);
    assert_int_equal(column, 8);
    ms_json_position(text, strrchr(text, '}'), &line, &column);
    assert_int_equal(line, 3);
    assert_int_equal(column, 1);
}

static void test_position_stops_at_the_end_of_the_text(void **state)
{
    const char text[] = "ab\0cd";
    size_t line = 0, column = 0;

    (void)state;
    /* A position past the terminating NUL is clamped to the end. */
    ms_json_position(text, text + 5, &line, &column);
    assert_int_equal(line, 1);
    assert_int_equal(column, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_of_the_document_is_dollar),
        cmocka_unit_test(test_path_push_and_pop),
        cmocka_unit_test(test_path_first_key_has_no_leading_dot),
        cmocka_unit_test(test_path_pop_beyond_the_end_does_nothing),
        cmocka_unit_test(test_path_quotes_odd_keys),
        cmocka_unit_test(test_path_replaces_control_bytes_and_quotes),
        cmocka_unit_test(test_path_cuts_long_odd_keys),
        cmocka_unit_test(test_path_too_long_ends_in_dots),
        cmocka_unit_test(test_path_cut_is_marked_once),
        cmocka_unit_test(test_path_errf_prefixes_the_path),
        cmocka_unit_test(test_absent_means_missing_or_null),
        cmocka_unit_test(test_number_reads_numbers),
        cmocka_unit_test(test_number_names_what_it_found),
        cmocka_unit_test(test_number_refuses_infinity),
        cmocka_unit_test(test_int32_accepts_whole_numbers),
        cmocka_unit_test(test_int32_failures),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_strdup_copies_and_replaces),
        cmocka_unit_test(test_strdup_failures),
        cmocka_unit_test(test_strcpy_fills_the_buffer_exactly),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_enum_with_many_long_names_stays_in_bounds),
        cmocka_unit_test(test_object_and_array_checks),
        cmocka_unit_test(test_position_counts_lines_and_columns_from_one),
        cmocka_unit_test(test_position_stops_at_the_end_of_the_text),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
