/*
 * test_prom_decode.c - the response decoder on recorded real Prometheus 2.42
 * answers (tests/fixtures/prom/, see its README), and on the broken shapes a
 * misbehaving server or a cut connection produces (cut from those same
 * recordings). Every outcome is a number or a reason, never a made-up value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom.h"

#define UNTOUCHED (-12345.25)

typedef struct {
    char *data;
    size_t len;
} blob_t;

static blob_t load(const char *name)
{
    char path[512];
    blob_t b = {NULL, 0};
    FILE *f;
    long n;

    snprintf(path, sizeof path, "%s/%s", MS_FIXTURES_DIR, name);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.data = malloc((size_t)n + 1);
    assert_non_null(b.data);
    b.len = fread(b.data, 1, (size_t)n, f);
    b.data[b.len] = '\0';
    fclose(f);
    return b;
}

/* Decode fixture NAME with the status its name starts with. */
static ms_prom_reason_t decode_fixture(const char *name, ms_prom_result_t *r)
{
    blob_t b = load(name);
    long status = strtol(name, NULL, 10);
    ms_prom_reason_t reason;

    ms_prom_result_init(r);
    reason = ms_prom_decode(b.data, b.len, status, r);
    free(b.data);
    if (strchr(r->message, '\n') != NULL)
        fail_msg("%s: message is not one line: %s", name, r->message);
    return reason;
}

/* The fixture's one number: reason want, and value when OK. */
static void check_number(const char *name, ms_prom_reason_t want, double want_value)
{
    ms_prom_result_t r;
    double v = UNTOUCHED;
    char msg[MS_ERRBUF_SIZE] = "";
    ms_prom_reason_t got;

    decode_fixture(name, &r);
    got = ms_prom_result_number(&r, 0, 0, &v, msg, sizeof msg);
    if (got != want)
        fail_msg("%s: %s (%s), want %s", name, ms_prom_reason_name(got), msg, ms_prom_reason_name(want));
    if (want == MS_PROM_OK && v != want_value)
        fail_msg("%s: value %.17g, want %.17g", name, v, want_value);
    if (want != MS_PROM_OK) {
        if (v != UNTOUCHED)
            fail_msg("%s: value written on %s", name, ms_prom_reason_name(got));
        if (msg[0] == '\0')
            fail_msg("%s: no message for %s", name, ms_prom_reason_name(got));
    }
    ms_prom_result_cleanup(&r);
}

static void test_success_shapes(void **state)
{
    (void)state;
    check_number("200-scalar.json", MS_PROM_OK, 42);
    check_number("200-vector-one.json", MS_PROM_OK, 1);
    check_number("200-vector-empty.json", MS_PROM_NO_DATA, 0);
    check_number("200-vector-many.json", MS_PROM_AMBIGUOUS, 0);
    check_number("200-matrix-instant.json", MS_PROM_WRONG_TYPE, 0);
    check_number("200-matrix-range.json", MS_PROM_WRONG_TYPE, 0);
    check_number("200-string.json", MS_PROM_WRONG_TYPE, 0);
}

static void test_special_values(void **state)
{
    (void)state;
    check_number("200-scalar-nan.json", MS_PROM_NOT_A_NUMBER, 0);
    check_number("200-vector-nan.json", MS_PROM_NOT_A_NUMBER, 0);
    check_number("200-vector-inf.json", MS_PROM_INFINITE, 0);
    check_number("200-scalar-neg-inf.json", MS_PROM_INFINITE, 0);
}

static void test_error_bodies(void **state)
{
    (void)state;
    check_number("400-bad-data.json", MS_PROM_BAD_QUERY, 0);
    check_number("422-execution.json", MS_PROM_EXECUTION, 0);
    check_number("503-timeout.json", MS_PROM_TIMEOUT, 0);
    check_number("503-timeout-execution.json", MS_PROM_TIMEOUT, 0);
    check_number("422-deadline-execution.json", MS_PROM_TIMEOUT, 0);
    check_number("404-not-found.txt", MS_PROM_HTTP_STATUS, 0);
}

static void test_error_message_names_the_cause(void **state)
{
    ms_prom_result_t r;
    (void)state;

    decode_fixture("400-bad-data.json", &r);
    assert_non_null(strstr(r.message, "bad_data"));
    assert_non_null(strstr(r.message, "unclosed left parenthesis"));
    assert_int_equal(r.http_status, 400);
    ms_prom_result_cleanup(&r);
    decode_fixture("404-not-found.txt", &r);
    assert_non_null(strstr(r.message, "404 page not found"));
    ms_prom_result_cleanup(&r);
}

static void test_vector_labels_and_points(void **state)
{
    ms_prom_result_t r;
    (void)state;

    assert_int_equal(decode_fixture("200-vector-many.json", &r), MS_PROM_OK);
    assert_int_equal(r.type, MS_PROM_TYPE_VECTOR);
    assert_true(r.nseries >= 2);
    for (size_t i = 0; i < r.nseries; i++) {
        assert_string_equal(ms_prom_series_label(&r.series[i], "__name__"), "up");
        assert_non_null(ms_prom_series_label(&r.series[i], "job"));
        assert_null(ms_prom_series_label(&r.series[i], "no_such_label"));
        assert_int_equal(r.series[i].npoints, 1);
        assert_true(r.series[i].points[0].t > 1.7e9);
        assert_true(r.series[i].points[0].v == 1.0);
    }
    ms_prom_result_cleanup(&r);
}

static void test_matrix_points(void **state)
{
    ms_prom_result_t r;
    (void)state;

    assert_int_equal(decode_fixture("200-matrix-range.json", &r), MS_PROM_OK);
    assert_int_equal(r.type, MS_PROM_TYPE_MATRIX);
    assert_int_equal(r.nseries, 1);
    assert_true(r.series[0].npoints >= 3);
    for (size_t i = 1; i < r.series[0].npoints; i++)
        assert_true(r.series[0].points[i].t - r.series[0].points[i - 1].t == 2.0);
    ms_prom_result_cleanup(&r);
}

static void test_string_result(void **state)
{
    ms_prom_result_t r;
    (void)state;

    assert_int_equal(decode_fixture("200-string.json", &r), MS_PROM_OK);
    assert_int_equal(r.type, MS_PROM_TYPE_STRING);
    assert_string_equal(r.string_value, "hello");
    ms_prom_result_cleanup(&r);
}

static void test_warnings_keep_the_value(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED;
    (void)state;

    assert_int_equal(decode_fixture("200-warnings-value.json", &r), MS_PROM_OK);
    assert_int_equal(r.nwarnings, 1);
    assert_non_null(strstr(r.warning, "remote_read"));
    assert_int_equal(ms_prom_result_number(&r, 0, 0, &v, NULL, 0), MS_PROM_OK);
    assert_true(v == 7);
    ms_prom_result_cleanup(&r);
    check_number("200-warnings-empty.json", MS_PROM_NO_DATA, 0);
}

/* Instant results carry the evaluation time; a sample older than the
 * staleness limit relative to the caller's reference time is missing. */
static void test_staleness(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED, t;
    char msg[MS_ERRBUF_SIZE];
    (void)state;

    decode_fixture("200-vector-one.json", &r);
    t = r.series[0].points[0].t;
    assert_int_equal(ms_prom_result_number(&r, t + 60, 300, &v, msg, sizeof msg), MS_PROM_OK);
    v = UNTOUCHED;
    assert_int_equal(ms_prom_result_number(&r, t + 301, 300, &v, msg, sizeof msg), MS_PROM_STALE);
    assert_true(v == UNTOUCHED);
    assert_non_null(strstr(msg, "301 s old"));
    assert_int_equal(ms_prom_result_number(&r, t + 9999, 0, &v, msg, sizeof msg), MS_PROM_OK);
    ms_prom_result_cleanup(&r);
}

/* Clock skew: a sample from the future is as stale as an old one once it is
 * further away than the limit; exactly at the limit both ways it is fresh. */
static void test_staleness_both_ways(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED, t;
    char msg[MS_ERRBUF_SIZE];
    (void)state;

    decode_fixture("200-vector-one.json", &r);
    t = r.series[0].points[0].t;
    assert_int_equal(ms_prom_result_number(&r, t - 301, 300, &v, msg, sizeof msg), MS_PROM_STALE);
    assert_true(v == UNTOUCHED);
    assert_non_null(strstr(msg, "301 s in the future"));
    assert_int_equal(ms_prom_result_number(&r, t - 300, 300, &v, msg, sizeof msg), MS_PROM_OK);
    assert_true(v == 1);
    v = UNTOUCHED;
    assert_int_equal(ms_prom_result_number(&r, t + 300, 300, &v, msg, sizeof msg), MS_PROM_OK);
    assert_true(v == 1);
    v = UNTOUCHED;
    assert_int_equal(ms_prom_result_number(&r, t - 60, 300, &v, msg, sizeof msg), MS_PROM_OK);
    /* no limit: any skew passes */
    assert_int_equal(ms_prom_result_number(&r, t - 9999, 0, &v, msg, sizeof msg), MS_PROM_OK);
    ms_prom_result_cleanup(&r);
}

/* Every prefix of a real response: never a crash, never a value unless it
 * is the whole body; JSON cut short is TRUNCATED. */
static void test_every_truncation(void **state)
{
    const char *names[] = {"200-vector-one.json", "200-matrix-range.json", "200-preset-haproxy.json"};
    (void)state;

    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        blob_t b = load(names[k]);
        while (b.len > 0 && (b.data[b.len - 1] == '\n'))
            b.len--;
        for (size_t n = 0; n < b.len; n++) {
            ms_prom_result_t r;
            char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees overreads */
            ms_prom_reason_t got;

            assert_non_null(copy);
            memcpy(copy, b.data, n);
            ms_prom_result_init(&r);
            got = ms_prom_decode(copy, n, 200, &r);
            if (n == 0 && got != MS_PROM_MALFORMED)
                fail_msg("%s: empty body gave %s", names[k], ms_prom_reason_name(got));
            if (n > 0 && got != MS_PROM_TRUNCATED)
                fail_msg("%s cut at %zu: %s (%s), want TRUNCATED", names[k], n,
                         ms_prom_reason_name(got), r.message);
            ms_prom_result_cleanup(&r);
            free(copy);
        }
        free(b.data);
    }
}

static void test_garbage_and_odd_bodies(void **state)
{
    static const struct {
        const char *body;
        long status;
        ms_prom_reason_t want;
    } cases[] = {
        {"\xff\xfe not json", 200, MS_PROM_MALFORMED},
        {"<html><body>Bad Gateway</body></html>", 502, MS_PROM_HTTP_STATUS},
        {"<html>ok?</html>", 200, MS_PROM_MALFORMED},
        {"", 200, MS_PROM_MALFORMED},
        {"", 502, MS_PROM_HTTP_STATUS},
        {"Unauthorized\n", 401, MS_PROM_UNAUTHORIZED},
        {"forbidden", 403, MS_PROM_UNAUTHORIZED},
        {"[1,2,3]", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\"}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,2]}]}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"0x10\"]}]}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\" 1\"]}]}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[1,\"inf\"]}]}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"histogram\":[1,{}]}]}}", 200, MS_PROM_WRONG_TYPE},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}} trailing", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}}", 500, MS_PROM_HTTP_STATUS},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"exotic\",\"result\":[]}}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"pending\"}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"error\",\"errorType\":\"internal\",\"error\":\"boom\"}", 500, MS_PROM_SERVER_ERROR},
        {"{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"x\"}", 503, MS_PROM_SERVER_ERROR},
        {"{\"status\":\"error\",\"errorType\":\"canceled\",\"error\":\"x\"}", 499, MS_PROM_CANCELLED},
        {"{\"status\":\"error\"}", 400, MS_PROM_SERVER_ERROR},
        {"{\"message\":\"not prometheus\"}", 404, MS_PROM_HTTP_STATUS},
    };
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_prom_result_t r;
        double v = UNTOUCHED;
        ms_prom_reason_t got;

        ms_prom_result_init(&r);
        got = ms_prom_decode(cases[i].body, strlen(cases[i].body), cases[i].status, &r);
        if (got != cases[i].want)
            fail_msg("case %zu (%ld %s): %s (%s), want %s", i, cases[i].status, cases[i].body,
                     ms_prom_reason_name(got), r.message, ms_prom_reason_name(cases[i].want));
        assert_int_equal(ms_prom_result_number(&r, 0, 0, &v, NULL, 0), got);
        assert_true(v == UNTOUCHED);
        assert_null(strchr(r.message, '\n'));
        ms_prom_result_cleanup(&r);
    }
}

static void test_transport_failures(void **state)
{
    static const struct {
        ms_err_t err;
        ms_prom_reason_t want;
    } cases[] = {
        {MS_ERR_UNAVAILABLE, MS_PROM_UNAVAILABLE}, {MS_ERR_TIMEOUT, MS_PROM_TIMEOUT},
        {MS_ERR_TLS, MS_PROM_TLS},                 {MS_ERR_TOOLARGE, MS_PROM_TOO_LARGE},
        {MS_ERR_IO, MS_PROM_TRANSPORT},            {MS_ERR_CANCELLED, MS_PROM_CANCELLED},
    };
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_http_response_t resp;
        ms_prom_result_t r;

        ms_http_response_init(&resp, 0);
        resp.err = cases[i].err;
        snprintf(resp.error, sizeof resp.error, "POST http://127.0.0.1:1/api/v1/query: because");
        ms_prom_result_init(&r);
        assert_int_equal(ms_prom_decode_response(&resp, &r), cases[i].want);
        assert_non_null(strstr(r.message, "because"));
        ms_prom_result_cleanup(&r);
        ms_http_response_cleanup(&resp);
    }
}

static void test_value_strings(void **state)
{
    static const struct {
        const char *s;
        bool ok;
        double v;
    } cases[] = {
        {"0", true, 0},        {"1.5", true, 1.5},   {"-2", true, -2},     {"1e-3", true, 1e-3},
        {"1E+06", true, 1e6},  {".5", true, 0.5},    {"5.", true, 5},      {"+3", true, 3},
        {"", false, 0},        {"-", false, 0},      {"1e", false, 0},     {"0x10", false, 0},
        {"inf", false, 0},     {"nan", false, 0},    {"1 ", false, 0},     {" 1", false, 0},
        {"1,5", false, 0},     {"Infinity", false, 0}, {".", false, 0},
    };
    double v;
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        v = UNTOUCHED;
        bool ok = ms_prom_parse_value(cases[i].s, strlen(cases[i].s), &v);
        if (ok != cases[i].ok || (ok && v != cases[i].v) || (!ok && v != UNTOUCHED))
            fail_msg("\"%s\": ok %d value %g", cases[i].s, ok, v);
    }
    assert_true(ms_prom_parse_value("NaN", 3, &v) && isnan(v));
    assert_true(ms_prom_parse_value("+Inf", 4, &v) && isinf(v) && v > 0);
    assert_true(ms_prom_parse_value("-Inf", 4, &v) && isinf(v) && v < 0);
}

static void test_reason_names(void **state)
{
    (void)state;
    assert_string_equal(ms_prom_reason_name(MS_PROM_OK), "OK");
    assert_string_equal(ms_prom_reason_name(MS_PROM_NO_DATA), "NO_DATA");
    assert_string_equal(ms_prom_reason_name((ms_prom_reason_t)999), "UNKNOWN");
    for (int i = 0; i < MS_PROM__COUNT; i++)
        assert_true(strlen(ms_prom_reason_sentence((ms_prom_reason_t)i)) > 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_shapes),
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_error_bodies),
        cmocka_unit_test(test_error_message_names_the_cause),
        cmocka_unit_test(test_vector_labels_and_points),
        cmocka_unit_test(test_matrix_points),
        cmocka_unit_test(test_string_result),
        cmocka_unit_test(test_warnings_keep_the_value),
        cmocka_unit_test(test_staleness),
        cmocka_unit_test(test_staleness_both_ways),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_garbage_and_odd_bodies),
        cmocka_unit_test(test_transport_failures),
        cmocka_unit_test(test_value_strings),
        cmocka_unit_test(test_reason_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
