/*
 * test_prom_decode.c - the response decoder on recorded real Prometheus 2.42
 * answers (tests/fixtures/prom/, see its README), and on the broken shapes a
 * misbehaving server or a cut connection produces (cut from those same
 * recordings). Every outcome is a number or a reason, never a made-up value.
 * Then the JSON itself: members in any order, escapes, the number grammar,
 * nesting, and a batched answer of 50,000 series with the heap it holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/buf.h"
#include "meshscaler/prom.h"

#define UNTOUCHED (-12345.25)

typedef struct {
    char *data;
    size_t len;
} blob_t;

static blob_t load(const char *name)
{
    blob_t b = {NULL, 0};

    b.data = read_fixture_file(MS_FIXTURES_DIR, name, &b.len);
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
        fail_msg("%s: %s (%s), want %s", name, ms_prom_reason_name(got), msg,
                 ms_prom_reason_name(want));
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

/* Points arrive oldest first from Prometheus, but nothing in the format
 * promises it; ms_prom_result_at bisects, so a disordered matrix read
 * missing or wrong points (issue 23). The decoder sorts them; two points
 * at one time are refused with the series named. */
static void test_disordered_matrix_is_sorted(void **state)
{
    static const char mixed[] =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
        "{\"metric\":{\"pod\":\"a\"},\"values\":[[130,\"3\"],[100,\"1\"],[145,\"4\"],"
        "[115,\"2\"]]}]}}";
    static const char twice[] =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
        "{\"metric\":{\"pod\":\"a\"},\"values\":[[100,\"1\"]]},"
        "{\"metric\":{\"pod\":\"b\"},\"values\":[[115,\"2\"],[100,\"1\"],[115,\"3\"]]}]}}";
    ms_prom_result_t m, v;
    (void)state;

    ms_prom_result_init(&v);
    /* The recorded answer, its points reordered (see the fixtures' README). */
    assert_int_equal(decode_fixture("200-matrix-range-disordered.json", &m), MS_PROM_OK);
    assert_int_equal(m.series[0].npoints, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_true(m.series[0].points[i].t == 1796002155 + 2.0 * (double)i);
        assert_int_equal(ms_prom_result_at(&m, 1796002155 + 2.0 * (double)i, &v), MS_PROM_OK);
        assert_int_equal(v.nseries, 1);
    }
    ms_prom_result_cleanup(&m);
    /* Every step reads its own value, not a neighbour's. */
    ms_prom_result_init(&m);
    assert_int_equal(ms_prom_decode(mixed, sizeof mixed - 1, 200, &m), MS_PROM_OK);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(ms_prom_result_at(&m, 100 + 15 * k, &v), MS_PROM_OK);
        assert_int_equal(v.nseries, 1);
        assert_true(v.series[0].points[0].v == k + 1);
    }
    assert_int_equal(ms_prom_decode(twice, sizeof twice - 1, 200, &m), MS_PROM_MALFORMED);
    assert_string_equal(m.message, "series 1 has two points at 115.000");
    ms_prom_result_cleanup(&m);
    ms_prom_result_cleanup(&v);
}

/* A range query's matrix read at one step is the vector an instant query
 * would have given then: each series with its point at t, labels borrowed;
 * a step no series has is an empty vector; a failed matrix passes its
 * reason on; a vector is no matrix. */
static void test_result_at_a_step(void **state)
{
    static const char two[] =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
        "{\"metric\":{\"pod\":\"a\"},\"values\":[[100,\"1\"],[115,\"2\"],[130,\"3\"]]},"
        "{\"metric\":{\"pod\":\"b\"},\"values\":[[115,\"20\"]]}]}}";
    ms_prom_result_t m, v;
    double x = 0;
    (void)state;

    ms_prom_result_init(&m);
    ms_prom_result_init(&v);
    assert_int_equal(ms_prom_decode(two, sizeof two - 1, 200, &m), MS_PROM_OK);
    assert_int_equal(ms_prom_result_at(&m, 115, &v), MS_PROM_OK);
    assert_int_equal(v.type, MS_PROM_TYPE_VECTOR);
    assert_int_equal(v.nseries, 2);
    assert_string_equal(ms_prom_series_label(&v.series[0], "pod"), "a");
    assert_true(v.series[0].points[0].v == 2 && v.series[0].points[0].t == 115);
    assert_string_equal(ms_prom_series_label(&v.series[1], "pod"), "b");
    assert_true(v.series[1].points[0].v == 20);
    assert_int_equal(ms_prom_result_at(&m, 130.0004, &v), MS_PROM_OK); /* within 1 ms */
    assert_int_equal(v.nseries, 1);
    assert_true(v.series[0].points[0].v == 3);
    assert_int_equal(ms_prom_result_number(&v, 0, 0, &x, NULL, 0), MS_PROM_OK);
    assert_true(x == 3);
    assert_int_equal(ms_prom_result_at(&m, 101, &v), MS_PROM_OK);
    assert_int_equal(v.nseries, 0);
    assert_int_equal(ms_prom_result_number(&v, 0, 0, &x, NULL, 0), MS_PROM_NO_DATA);
    ms_prom_result_cleanup(&m);
    assert_int_equal(decode_fixture("503-timeout.json", &m), MS_PROM_TIMEOUT);
    assert_int_equal(ms_prom_result_at(&m, 115, &v), MS_PROM_TIMEOUT);
    assert_string_equal(v.message, m.message);
    ms_prom_result_cleanup(&m);
    assert_int_equal(decode_fixture("200-vector-one.json", &m), MS_PROM_OK);
    assert_int_equal(ms_prom_result_at(&m, 115, &v), MS_PROM_WRONG_TYPE);
    ms_prom_result_cleanup(&m);
    ms_prom_result_cleanup(&v);
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
    const char *names[] = {"200-vector-one.json", "200-matrix-range.json",
                           "200-preset-haproxy.json"};
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

/* A body that is no Prometheus answer is quoted in the message, its control
 * characters as spaces (the message is one printable line). */
static void test_garbage_is_quoted_printably(void **state)
{
    static const char body[] = "<html>\tBad\x01Gateway\x7f</html>";
    ms_prom_result_t r;
    (void)state;

    ms_prom_result_init(&r);
    assert_int_equal(ms_prom_decode(body, sizeof body - 1, 502, &r), MS_PROM_HTTP_STATUS);
    assert_non_null(strstr(r.message, "<html> Bad Gateway </html>"));
    ms_prom_result_cleanup(&r);
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
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", 200,
         MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,2]}]}}",
         200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,\"0x10\"]}]}}",
         200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,\" 1\"]}]}}",
         200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"value\":[1,\"inf\"]}]}}",
         200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
         "\"histogram\":[1,{}]}]}}",
         200, MS_PROM_WRONG_TYPE},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}} "
         "trailing",
         200, MS_PROM_MALFORMED},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}}", 500,
         MS_PROM_HTTP_STATUS},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"exotic\",\"result\":[]}}", 200,
         MS_PROM_MALFORMED},
        {"{\"status\":\"pending\"}", 200, MS_PROM_MALFORMED},
        {"{\"status\":\"error\",\"errorType\":\"internal\",\"error\":\"boom\"}", 500,
         MS_PROM_SERVER_ERROR},
        {"{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"x\"}", 503,
         MS_PROM_SERVER_ERROR},
        {"{\"status\":\"error\",\"errorType\":\"canceled\",\"error\":\"x\"}", 499,
         MS_PROM_CANCELLED},
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
        {MS_ERR_UNAVAILABLE, MS_PROM_UNAVAILABLE},
        {MS_ERR_TIMEOUT, MS_PROM_TIMEOUT},
        {MS_ERR_TLS, MS_PROM_TLS},
        {MS_ERR_TOOLARGE, MS_PROM_TOO_LARGE},
        {MS_ERR_IO, MS_PROM_TRANSPORT},
        {MS_ERR_CANCELLED, MS_PROM_CANCELLED},
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
        {"0", true, 0},
        {"1.5", true, 1.5},
        {"-2", true, -2},
        {"1e-3", true, 1e-3},
        {"1E+06", true, 1e6},
        {".5", true, 0.5},
        {"5.", true, 5},
        {"+3", true, 3},
        {"", false, 0},
        {"-", false, 0},
        {"1e", false, 0},
        {"0x10", false, 0},
        {"inf", false, 0},
        {"nan", false, 0},
        {"1 ", false, 0},
        {" 1", false, 0},
        {"1,5", false, 0},
        {"Infinity", false, 0},
        {".", false, 0},
        /* an exponent's sign is optional; its digits are not */
        {"1e5", true, 1e5},
        {"2.5E3", true, 2500},
        {"1e+", false, 0},
        {"1e-", false, 0},
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

/* ms_prom_parse_value reads len bytes and no more: a slice followed by an
 * exponent or a digit is the slice's number ("1" out of "1e5", "1e5" out of
 * "1e55"), and a slice that ends its heap block is not read past (ASan).
 * Mutants: decode.c's `i < len` before the exponent's `e` and in its digit
 * loop made always true. */
static void test_value_slices_read_only_len_bytes(void **state)
{
    static const struct {
        const char *text;
        size_t len;
        double v;
    } cases[] = {
        {"1e5", 1, 1}, {"1e55", 3, 1e5}, {"2.5E3x", 5, 2500}, {"7", 1, 7}, {"1e-3", 4, 1e-3}};
    double v;
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *slice = malloc(cases[i].len);

        assert_non_null(slice);
        memcpy(slice, cases[i].text, cases[i].len);
        v = UNTOUCHED;
        if (!ms_prom_parse_value(cases[i].text, cases[i].len, &v) || v != cases[i].v)
            fail_msg("\"%s\" cut to %zu: value %g", cases[i].text, cases[i].len, v);
        v = UNTOUCHED;
        if (!ms_prom_parse_value(slice, cases[i].len, &v) || v != cases[i].v)
            fail_msg("heap copy of \"%.*s\": value %g", (int)cases[i].len, cases[i].text, v);
        free(slice);
    }
}

static void test_reason_names(void **state)
{
    (void)state;
    assert_string_equal(ms_prom_reason_name(MS_PROM_OK), "OK");
    assert_string_equal(ms_prom_reason_name(MS_PROM_NO_DATA), "NO_DATA");
    assert_string_equal(ms_prom_reason_name((ms_prom_reason_t)999), "UNKNOWN");
    assert_string_equal(ms_prom_reason_sentence(MS_PROM_OK), "the value was observed");
    assert_string_equal(ms_prom_reason_sentence(MS_PROM_NOT_CONFIGURED),
                        "no query is configured for this value");
    assert_string_equal(ms_prom_reason_sentence((ms_prom_reason_t)999), "unknown reason");
    for (int i = 0; i < MS_PROM__COUNT; i++)
        assert_true(strlen(ms_prom_reason_sentence((ms_prom_reason_t)i)) > 5);
}

/* ---- the scanner: any member order, escapes, numbers, nesting ---- */

/* Decode a body that arrived with status 200 and must succeed; r is filled.
 * The body is gone before r is read: a result borrows nothing from it. */
static void decode_ok(const char *body, ms_prom_result_t *r)
{
    size_t len = strlen(body);
    char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees overreads */

    assert_non_null(copy);
    memcpy(copy, body, len);
    ms_prom_result_init(r);
    if (ms_prom_decode(copy, len, 200, r) != MS_PROM_OK)
        fail_msg("%s: %s (%s)", body, ms_prom_reason_name(r->reason), r->message);
    free(copy);
}

/* Decode a body that must fail with want; the message must mention
 * mention (may be NULL). */
static void decode_fails(const char *body, long status, ms_prom_reason_t want, const char *mention)
{
    ms_prom_result_t r;
    size_t len = strlen(body);
    char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees overreads */

    assert_non_null(copy);
    memcpy(copy, body, len);
    ms_prom_result_init(&r);
    if (ms_prom_decode(copy, len, status, &r) != want)
        fail_msg("%s: %s (%s), want %s", body, ms_prom_reason_name(r.reason), r.message,
                 ms_prom_reason_name(want));
    if (mention != NULL && strstr(r.message, mention) == NULL)
        fail_msg("%s: message \"%s\" does not mention \"%s\"", body, r.message, mention);
    assert_null(strchr(r.message, '\n'));
    ms_prom_result_cleanup(&r);
    free(copy);
}

/* A proxy may reorder members: resultType after result, status last. */
static void test_member_order_shuffled(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED;
    (void)state;

    decode_ok("{\"warnings\":[\"partial\"],\"data\":{\"result\":[{\"value\":[1796077090.5,\"3\"],"
              "\"metric\":{\"job\":\"a\"}}],\"resultType\":\"vector\"},\"status\":\"success\"}",
              &r);
    assert_int_equal(r.type, MS_PROM_TYPE_VECTOR);
    assert_int_equal(r.nseries, 1);
    assert_string_equal(ms_prom_series_label(&r.series[0], "job"), "a");
    assert_int_equal(ms_prom_result_number(&r, 0, 0, &v, NULL, 0), MS_PROM_OK);
    assert_true(v == 3);
    assert_int_equal(r.nwarnings, 1);
    assert_string_equal(r.warning, "partial");
    ms_prom_result_cleanup(&r);

    decode_ok("{\"data\":{\"result\":[{\"values\":[[1,\"1\"],[3,\"2\"]],\"metric\":{}}],"
              "\"resultType\":\"matrix\"},\"status\":\"success\"}",
              &r);
    assert_int_equal(r.type, MS_PROM_TYPE_MATRIX);
    assert_int_equal(r.series[0].npoints, 2);
    assert_true(r.series[0].points[1].t == 3 && r.series[0].points[1].v == 2);
    ms_prom_result_cleanup(&r);

    decode_ok("{\"data\":{\"result\":[5,\"8\"],\"resultType\":\"scalar\"},"
              "\"status\":\"success\"}",
              &r);
    assert_int_equal(ms_prom_result_number(&r, 0, 0, &v, NULL, 0), MS_PROM_OK);
    assert_true(v == 8);
    ms_prom_result_cleanup(&r);

    decode_fails("{\"error\":\"parse error\",\"errorType\":\"bad_data\",\"status\":\"error\"}", 400,
                 MS_PROM_BAD_QUERY, "bad_data: parse error");
    decode_fails("{\"errorType\":\"execution\",\"error\":\"expanding series: context deadline "
                 "exceeded\",\"status\":\"error\"}",
                 422, MS_PROM_TIMEOUT, "context deadline");
    /* A native histogram found before the series' metric. */
    decode_fails("{\"data\":{\"result\":[{\"histogram\":[1,{}],\"metric\":{}}],\"resultType\":"
                 "\"vector\"},\"status\":\"success\"}",
                 200, MS_PROM_WRONG_TYPE, "native histogram");
}

/* Whitespace wherever JSON allows it, and a byte order mark before it. */
static void test_whitespace_and_bom(void **state)
{
    ms_prom_result_t r;
    (void)state;

    decode_ok(" \r\n\t{ \"status\" :\t\"success\" ,\n \"data\" : { \"resultType\" : \"vector\" ,"
              " \"result\" : [ { \"metric\" : { \"a\" : \"b\" } , \"value\" : [ 1 , \"2\" ] } ]"
              " } } \n\r\t ",
              &r);
    assert_string_equal(ms_prom_series_label(&r.series[0], "a"), "b");
    ms_prom_result_cleanup(&r);
    decode_ok("\xEF\xBB\xBF{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\","
              "\"result\":[1,\"1\"]}}",
              &r);
    ms_prom_result_cleanup(&r);
}

static void test_escapes(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED;
    (void)state;

    decode_ok("{\"st\\u0061tus\":\"succ\\u0065ss\",\"data\":{\"resultType\":\"v\\u0065ctor\","
              "\"result\":[{\"metric\":{\"acute\":\"caf\\u00e9\",\"emoji\":\"\\ud83d\\ude00!\","
              "\"plain\":\"a\\\"b\\\\c\\/d\\ne\\tf\\bg\\fh\\ri\",\"n\\u0061me\":\"x\","
              "\"three\":\"\\u20ac\",\"nul\":\"a\\u0000b\"},"
              "\"value\":[1,\"\\u0031.5\"]}]}}",
              &r);
    assert_string_equal(ms_prom_series_label(&r.series[0], "acute"), "caf\xC3\xA9");
    assert_string_equal(ms_prom_series_label(&r.series[0], "emoji"), "\xF0\x9F\x98\x80!");
    assert_string_equal(ms_prom_series_label(&r.series[0], "plain"), "a\"b\\c/d\ne\tf\bg\fh\ri");
    assert_string_equal(ms_prom_series_label(&r.series[0], "name"), "x");
    assert_string_equal(ms_prom_series_label(&r.series[0], "three"), "\xE2\x82\xAC");
    /* A C string ends at an escaped NUL, as it did with cJSON. */
    assert_string_equal(ms_prom_series_label(&r.series[0], "nul"), "a");
    assert_int_equal(ms_prom_result_number(&r, 0, 0, &v, NULL, 0), MS_PROM_OK);
    assert_true(v == 1.5);
    ms_prom_result_cleanup(&r);

    decode_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":[1,"
              "\"caf\\u00e9 \\\"q\\\"\"]}}",
              &r);
    assert_string_equal(r.string_value, "caf\xC3\xA9 \"q\"");
    ms_prom_result_cleanup(&r);

    decode_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]},"
              "\"warnings\":[7,\"line\\none \\u00e9\"]}",
              &r);
    assert_int_equal(r.nwarnings, 1);
    assert_string_equal(r.warning, "line one \xC3\xA9"); /* one line */
    ms_prom_result_cleanup(&r);
}

#define SERIES_WITH_LABEL(value)                                                                   \
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"         \
    "{\"a\":\"" value "\"},\"value\":[1,\"1\"]}]}}"

static void test_bad_strings(void **state)
{
    (void)state;
    decode_fails(SERIES_WITH_LABEL("\\x41"), 200, MS_PROM_MALFORMED, "invalid escape");
    decode_fails(SERIES_WITH_LABEL("\\u12G4"), 200, MS_PROM_MALFORMED, "invalid \\u escape");
    decode_fails(SERIES_WITH_LABEL("\\U0041"), 200, MS_PROM_MALFORMED, "invalid escape");
    decode_fails(SERIES_WITH_LABEL("\\ud83d"), 200, MS_PROM_MALFORMED, "lone UTF-16 surrogate");
    decode_fails(SERIES_WITH_LABEL("\\ud83dx"), 200, MS_PROM_MALFORMED, "lone UTF-16 surrogate");
    decode_fails(SERIES_WITH_LABEL("\\ud83d\\u0041"), 200, MS_PROM_MALFORMED, "lone UTF-16");
    decode_fails(SERIES_WITH_LABEL("\\ud83d\\ud83d"), 200, MS_PROM_MALFORMED, "lone UTF-16");
    decode_fails(SERIES_WITH_LABEL("\\ude00"), 200, MS_PROM_MALFORMED, "lone UTF-16 surrogate");
    decode_fails(SERIES_WITH_LABEL("a\tb"), 200, MS_PROM_MALFORMED, "control character");
    decode_fails(SERIES_WITH_LABEL("a\x01"), 200, MS_PROM_MALFORMED, "control character");
    decode_fails(SERIES_WITH_LABEL("a\nb"), 200, MS_PROM_MALFORMED, "control character");
    /* The same faults in an error body with an error status are that status. */
    decode_fails("{\"status\":\"error\",\"error\":\"\\q\"}", 500, MS_PROM_HTTP_STATUS, "HTTP 500");
    /* Cut inside an escape: the body is short, not wrong. */
    decode_fails("{\"status\":\"succ\\u00", 200, MS_PROM_TRUNCATED, NULL);
    decode_fails("{\"status\":\"succ\\ud83d\\u", 200, MS_PROM_TRUNCATED, NULL);
    decode_fails("{\"status\":\"succ\\", 200, MS_PROM_TRUNCATED, NULL);
}

#define POINT_AT(t)                                                                                \
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"      \
    "\"value\":[" t ",\"1\"]}]}}"

/* Timestamps are JSON numbers: the grammar, not strtod, says what is one. */
static void test_number_grammar(void **state)
{
    static const struct {
        const char *t;
        double want;
    } good[] = {
        {"1e3", 1000},  {"-0.5", -0.5}, {"0", 0},         {"1E+2", 100},
        {"25e-1", 2.5}, {"-0", 0},      {"0.125", 0.125}, {"1796077090.947", 1796077090.947}};
    static const char *const bad[] = {"01",   "1.",       ".5",  "+1",    "-",   "1e", "1e+",
                                      "0x10", "Infinity", "NaN", "1.5.2", "--1", "- 1"};
    char body[256];
    (void)state;

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ms_prom_result_t r;

        snprintf(body, sizeof body, POINT_AT("%s"), good[i].t);
        decode_ok(body, &r);
        if (r.series[0].points[0].t != good[i].want)
            fail_msg("%s: time %.17g, want %.17g", good[i].t, r.series[0].points[0].t,
                     good[i].want);
        ms_prom_result_cleanup(&r);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, POINT_AT("%s"), bad[i]);
        decode_fails(body, 200, MS_PROM_MALFORMED, NULL);
    }
    /* JSON, but no finite time: a bad pair. */
    decode_fails(POINT_AT("1e999"), 200, MS_PROM_MALFORMED, "bad [time");
    decode_fails(POINT_AT("\"1\""), 200, MS_PROM_MALFORMED, "bad [time");
}

/* A timestamp may take more digits than a double holds; JSON allows it. */
static void test_long_numbers(void **state)
{
    ms_prom_result_t r;
    (void)state;

    decode_ok(
        POINT_AT("1796077090.9470000000000000000000000000000000000000000000000000000000000001"),
        &r);
    assert_true(r.series[0].points[0].t == 1796077090.947);
    ms_prom_result_cleanup(&r);
    decode_ok(POINT_AT("17960770909470000000000000000000000000000000000000000000000000000000e-58"),
              &r);
    assert_true(r.series[0].points[0].t == 1796077090.947);
    ms_prom_result_cleanup(&r);
}

/* Body of depth levels of [] in an unknown member of a scalar answer. */
static char *nested(size_t depth)
{
    ms_buf_t b;

    ms_buf_init(&b, 1 << 20);
    assert_int_equal(ms_buf_append(&b, "{\"deep\":", 8), MS_OK);
    for (size_t i = 0; i < depth; i++)
        assert_int_equal(ms_buf_append(&b, i % 2 ? "[" : "{\"k\":", i % 2 ? 1 : 5), MS_OK);
    assert_int_equal(ms_buf_append(&b, "null", 4), MS_OK);
    for (size_t i = depth; i-- > 0;)
        assert_int_equal(ms_buf_append(&b, i % 2 ? "]" : "}", 1), MS_OK);
    assert_int_equal(ms_buf_appendf(&b, ",\"status\":\"success\",\"data\":{\"resultType\":"
                                        "\"scalar\",\"result\":[1,\"4\"]}}"),
                     MS_OK);
    return b.data;
}

static void test_nesting(void **state)
{
    ms_prom_result_t r;
    char *body;
    (void)state;

    body = nested(62); /* 63 levels with the document: skipped */
    decode_ok(body, &r);
    ms_prom_result_cleanup(&r);
    free(body);
    body = nested(64); /* 65 levels: past the limit */
    decode_fails(body, 200, MS_PROM_MALFORMED, "nesting deeper than 64 levels");
    free(body);
    body = nested(100000); /* no recursion: no stack to run out of */
    decode_fails(body, 200, MS_PROM_MALFORMED, "nesting deeper");
    free(body);
}

/* Members nobody asked for, of every JSON type and at every level, are
 * passed over; so is anything after the first member of one name. */
static void test_unknown_members(void **state)
{
#define ANY                                                                                        \
    "\"u1\":null,\"u2\":true,\"u3\":false,\"u4\":-1.5e-3,\"u5\":\"s\\n\","                         \
    "\"u6\":{\"a\":[1,{\"b\":null},[]],\"c\":{}},\"u7\":[],\"u8\":0"
    ms_prom_result_t r;
    (void)state;

    decode_ok("{" ANY ",\"status\":\"success\"," ANY ",\"data\":{" ANY
              ",\"resultType\":\"vector\"," ANY ",\"result\":[{" ANY
              ",\"metric\":{\"job\":\"a\",\"num\":1,\"obj\":{},\"job\":\"b\"}," ANY
              ",\"value\":[1,\"2\"]," ANY ",\"value\":\"later\",\"metric\":7}]," ANY "},"
              "\"warnings\":[null,{},\"w\"],\"status\":\"error\"," ANY "}",
              &r);
    assert_int_equal(r.nseries, 1);
    assert_string_equal(ms_prom_series_label(&r.series[0], "job"), "a");
    assert_null(ms_prom_series_label(&r.series[0], "num")); /* not a string */
    assert_null(ms_prom_series_label(&r.series[0], "obj"));
    assert_null(ms_prom_series_label(&r.series[0], "u1"));
    assert_int_equal(r.nwarnings, 1);
    ms_prom_result_cleanup(&r);
#undef ANY
}

/* Broken JSON around otherwise good members. */
static void test_broken_syntax(void **state)
{
    (void)state;
    decode_fails("{\"status\":\"success\",}", 200, MS_PROM_MALFORMED, "at byte 20");
    decode_fails("{\"status\" \"success\"}", 200, MS_PROM_MALFORMED, "missing ':'");
    decode_fails("{\"status\":\"success\" \"data\":{}}", 200, MS_PROM_MALFORMED, "missing ','");
    decode_fails("{status:\"success\"}", 200, MS_PROM_MALFORMED, "member name");
    decode_fails("{\"status\":\"success\",\"data\":[1 2]}", 200, MS_PROM_MALFORMED, "missing ','");
    decode_fails("{\"status\":\"success\",\"data\":[1,]}", 200, MS_PROM_MALFORMED, NULL);
    decode_fails("{\"status\":\"success\",\"data\":tru}", 200, MS_PROM_MALFORMED, NULL);
    decode_fails("{\"status\":\"success\",\"data\":tr", 200, MS_PROM_TRUNCATED, NULL);
    decode_fails("{\"status\":\"success\"}}", 200, MS_PROM_MALFORMED, "bytes after");
    decode_fails("{\"status\":\"success\"}{}", 200, MS_PROM_MALFORMED, "bytes after");
    decode_fails("   ", 200, MS_PROM_MALFORMED, "not a JSON object");
    decode_fails("\"success\"", 200, MS_PROM_MALFORMED, "not a JSON object");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                 "{\"metric\":{},\"value\":[1,2]}],\"x\":[",
                 200, MS_PROM_TRUNCATED, NULL);
    /* A fault of shape in a later series wins over a bad pair in an earlier
     * one, as when every series was checked before any pair was read. */
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                 "{\"metric\":{},\"value\":[1,2]},{\"metric\":{},\"histogram\":{}}]}}",
                 200, MS_PROM_WRONG_TYPE, "series 1");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                 "{\"metric\":{},\"values\":[[1,\"x\"]]},{\"values\":[]}]}}",
                 200, MS_PROM_MALFORMED, "series 1 has no \"metric\" object");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                 "{\"metric\":{},\"values\":[[1,\"1\"],[2,\"x\"]]}]}}",
                 200, MS_PROM_MALFORMED, "series 0 has a bad");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                 "{\"metric\":{},\"values\":{}}]}}",
                 200, MS_PROM_MALFORMED, "no \"values\" array");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":[1,2]}}",
                 200, MS_PROM_MALFORMED, "string result");
    decode_fails("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\"}}", 200,
                 MS_PROM_MALFORMED, "scalar result");
    decode_fails("{\"status\":\"success\",\"data\":[]}", 200, MS_PROM_MALFORMED, "resultType");
}

/* Series with different label sets side by side (names of the series
 * before are reused only when they are the same). */
static void test_label_sets(void **state)
{
    ms_prom_result_t r;
    (void)state;

    decode_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
              "{\"metric\":{\"a\":\"1\",\"b\":\"2\"},\"value\":[1,\"1\"]},"
              "{\"metric\":{\"a\":\"3\",\"c\":\"4\",\"d\":\"\"},\"value\":[1,\"2\"]},"
              "{\"metric\":{\"ab\":\"5\",\"c\":\"6\"},\"value\":[1,\"3\"]},"
              "{\"metric\":{},\"value\":[1,\"4\"]},"
              "{\"metric\":{\"a\\u0062\":\"7\"},\"value\":[1,\"5\"]}]}}",
              &r);
    assert_int_equal(r.nseries, 5);
    assert_string_equal(ms_prom_series_label(&r.series[0], "a"), "1");
    assert_string_equal(ms_prom_series_label(&r.series[0], "b"), "2");
    assert_null(ms_prom_series_label(&r.series[0], "c"));
    assert_string_equal(ms_prom_series_label(&r.series[1], "a"), "3");
    assert_string_equal(ms_prom_series_label(&r.series[1], "c"), "4");
    assert_string_equal(ms_prom_series_label(&r.series[1], "d"), "");
    assert_null(ms_prom_series_label(&r.series[1], "b"));
    assert_string_equal(ms_prom_series_label(&r.series[2], "ab"), "5");
    assert_null(ms_prom_series_label(&r.series[2], "a"));
    assert_string_equal(ms_prom_series_label(&r.series[2], "c"), "6");
    assert_null(ms_prom_series_label(&r.series[3], "a"));
    assert_string_equal(ms_prom_series_label(&r.series[4], "ab"), "7");
    for (size_t i = 0; i < r.nseries; i++)
        assert_true(r.series[i].points[0].v == (double)(i + 1));
    ms_prom_result_cleanup(&r);
}

/* ---- a whole batched answer: 10,000 objects, five fields each ---- */

#if defined(__SANITIZE_ADDRESS__)
#define MS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MS_ASAN 1
#endif
#endif

#ifdef MS_ASAN
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* Bytes the heap holds now. ASan keeps its own heap, which mallinfo2()
 * does not see. */
static size_t heap_bytes(void)
{
#ifdef MS_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#endif
}

static const char *const fields[] = {"usage", "limit", "usage_all", "pods", "age"};

static void test_fifty_thousand_series(void **state)
{
    const size_t n = 50000;
    ms_buf_t b;
    ms_prom_result_t r;
    size_t before, held;
    (void)state;

    ms_buf_init(&b, 64u << 20);
    assert_int_equal(ms_buf_appendf(&b, "{\"status\":\"success\",\"data\":{"
                                        "\"resultType\":\"vector\",\"result\":["),
                     MS_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ms_buf_appendf(&b,
                                        "%s{\"metric\":{\"ms_field\":\"%s\","
                                        "\"ms_workload\":\"w%zu\",\"namespace\":\"bench-%zu\"},"
                                        "\"value\":[1796077090.947,\"%zu\"]}",
                                        i ? "," : "", fields[i % 5], i / 5, i / 500, i),
                         MS_OK);
    assert_int_equal(ms_buf_appendf(&b, "]}}"), MS_OK);

    ms_prom_result_init(&r);
    before = heap_bytes();
    assert_int_equal(ms_prom_decode(b.data, b.len, 200, &r), MS_PROM_OK);
    held = heap_bytes() - before;
    print_message("      %zu series, %zu bytes: the result holds %zu bytes (%.2fx)\n", n, b.len,
                  held, (double)held / (double)b.len);
    assert_true(held < 3 * b.len);

    assert_int_equal(r.nseries, n);
    for (size_t i = 0; i < n; i++) {
        char w[32], ns[32];

        snprintf(w, sizeof w, "w%zu", i / 5);
        snprintf(ns, sizeof ns, "bench-%zu", i / 500);
        assert_string_equal(ms_prom_series_label(&r.series[i], "ms_field"), fields[i % 5]);
        assert_string_equal(ms_prom_series_label(&r.series[i], "ms_workload"), w);
        assert_string_equal(ms_prom_series_label(&r.series[i], "namespace"), ns);
        assert_int_equal(r.series[i].npoints, 1);
        assert_true(r.series[i].points[0].t == 1796077090.947);
        assert_true(r.series[i].points[0].v == (double)i);
    }
    ms_prom_result_cleanup(&r);
    ms_buf_cleanup(&b);
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
        cmocka_unit_test(test_disordered_matrix_is_sorted),
        cmocka_unit_test(test_result_at_a_step),
        cmocka_unit_test(test_string_result),
        cmocka_unit_test(test_warnings_keep_the_value),
        cmocka_unit_test(test_staleness),
        cmocka_unit_test(test_staleness_both_ways),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_garbage_and_odd_bodies),
        cmocka_unit_test(test_garbage_is_quoted_printably),
        cmocka_unit_test(test_transport_failures),
        cmocka_unit_test(test_value_strings),
        cmocka_unit_test(test_value_slices_read_only_len_bytes),
        cmocka_unit_test(test_reason_names),
        cmocka_unit_test(test_member_order_shuffled),
        cmocka_unit_test(test_whitespace_and_bom),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_number_grammar),
        cmocka_unit_test(test_long_numbers),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_unknown_members),
        cmocka_unit_test(test_broken_syntax),
        cmocka_unit_test(test_label_sets),
        cmocka_unit_test(test_fifty_thousand_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
