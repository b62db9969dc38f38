/*
 * test_kube_events.c - the keys that fold repeated events into one, and the
 * timestamp and base64 helpers events and kubeconfig rely on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"
#include "meshscaler/clock.h"

static void key(char *buf, size_t cap, const char *name, const char *uid, const char *reason,
                const char *message)
{
    assert_true(ms__kube_event_key(buf, cap, "meshscaler", "apps/v1", "Deployment", "shop", name,
                                   uid, "Normal", reason, message));
}

static void test_same_event_same_key(void **state)
{
    char a[512], b[512];

    (void)state;
    key(a, sizeof a, "api", "u1", "SuccessfulRescale", "New size: 8; reason: sidecar above target");
    key(b, sizeof b, "api", "u1", "SuccessfulRescale", "New size: 8; reason: sidecar above target");
    assert_string_equal(a, b);
}

static void test_any_field_changes_the_key(void **state)
{
    char base[512], other[512];

    (void)state;
    key(base, sizeof base, "api", "u1", "SuccessfulRescale", "New size: 8");
    key(other, sizeof other, "api", "u1", "SuccessfulRescale", "New size: 9");
    assert_string_not_equal(base, other);
    key(other, sizeof other, "api", "u2", "SuccessfulRescale",
        "New size: 8"); /* re-created object */
    assert_string_not_equal(base, other);
    key(other, sizeof other, "web", "u1", "SuccessfulRescale", "New size: 8");
    assert_string_not_equal(base, other);
    key(other, sizeof other, "api", "u1", "FailedRescale", "New size: 8");
    assert_string_not_equal(base, other);
    assert_true(ms__kube_event_key(other, sizeof other, "meshscaler", "apps/v1", "Deployment",
                                   "shop", "api", "u1", "Warning", "SuccessfulRescale",
                                   "New size: 8"));
    assert_string_not_equal(base, other);
}

static void test_fields_cannot_run_together(void **state)
{
    char a[512], b[512];

    (void)state;
    /* name "ab" + uid "c" must differ from name "a" + uid "bc" */
    key(a, sizeof a, "ab", "c", "R", "m");
    key(b, sizeof b, "a", "bc", "R", "m");
    assert_string_not_equal(a, b);
}

static void test_key_that_does_not_fit(void **state)
{
    char small[16];

    (void)state;
    assert_false(ms__kube_event_key(small, sizeof small, "meshscaler", "apps/v1", "Deployment",
                                    "shop", "api", "u", "Normal", "R", "a long message"));
}

static void test_rfc3339(void **state)
{
    char buf[48];
    double t;

    (void)state;
    ms_time_rfc3339(1795999323.25, false, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-30T00:42:03Z");
    ms_time_rfc3339(1795999323.25, true, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-30T00:42:03.250000Z");
    assert_true(ms_time_parse_rfc3339("2026-11-30T00:42:03Z", &t));
    assert_float_equal(t, 1795999323, 1e-6);
    assert_true(ms_time_parse_rfc3339("2026-11-30T01:42:03.5+01:00", &t));
    assert_float_equal(t, 1795999323.5, 1e-6);
    assert_false(ms_time_parse_rfc3339("2026-11-30 02:42:03Z", &t));
    assert_false(ms_time_parse_rfc3339("2026-13-30T02:42:03Z", &t));
    assert_false(ms_time_parse_rfc3339("2026-11-30T02:42:03", &t));
}

static void test_base64(void **state)
{
    char *out;
    size_t n;

    (void)state;
    assert_int_equal(ms__kube_base64_decode("aGVsbG8=", 8, &out, &n), MS_OK);
    assert_int_equal(n, 5);
    assert_string_equal(out, "hello");
    free(out);
    assert_int_equal(ms__kube_base64_decode("aGVs\nbG8h", 9, &out, &n), MS_OK);
    assert_string_equal(out, "hello!");
    free(out);
    assert_int_equal(ms__kube_base64_decode("aGVsbG8", 7, &out, &n), MS_OK); /* unpadded */
    free(out);
    assert_int_equal(ms__kube_base64_decode("a", 1, &out, &n), MS_ERR_PARSE);
    assert_int_equal(ms__kube_base64_decode("aGV*", 4, &out, &n), MS_ERR_PARSE);
    assert_int_equal(ms__kube_base64_decode("aG==bG8=", 8, &out, &n), MS_ERR_PARSE);
    assert_int_equal(ms__kube_base64_decode("aGVsb===", 8, &out, &n), MS_ERR_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_event_same_key),
        cmocka_unit_test(test_any_field_changes_the_key),
        cmocka_unit_test(test_fields_cannot_run_together),
        cmocka_unit_test(test_key_that_does_not_fit),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
