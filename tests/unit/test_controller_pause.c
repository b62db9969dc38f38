/*
 * test_controller_pause.c - the pausing annotations and what they do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "meshscaler/pause.h"

static ms_err_t parse(const char *json, ms_pause_t *p, char *err, size_t errlen)
{
    cJSON *a = cJSON_Parse(json);
    ms_err_t rc;

    assert_non_null(a);
    rc = ms_pause_parse(a, p, err, errlen);
    cJSON_Delete(a);
    return rc;
}

static void test_absent_annotations(void **state)
{
    ms_pause_t p;
    int32_t desired = 7;

    (void)state;
    assert_int_equal(ms_pause_parse(NULL, &p, NULL, 0), MS_OK);
    assert_false(p.paused || p.has_replicas || p.no_scale_in || p.no_scale_out);
    assert_int_equal(ms_pause_apply(&p, 4, &desired), MS_PAUSE_NONE);
    assert_int_equal(desired, 7);
    assert_string_equal(ms_pause_effect_sentence(MS_PAUSE_NONE), "");
}

static void test_paused_never_writes(void **state)
{
    ms_pause_t p;
    int32_t desired = 9;
    char err[256] = "";

    (void)state;
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/paused\":\"true\","
                           "\"autoscaling.meshscaler.io/paused-replicas\":\"3\"}",
                           &p, err, sizeof err),
                     MS_OK);
    assert_true(p.paused);
    assert_int_equal(ms_pause_apply(&p, 4, &desired), MS_PAUSE_NO_WRITE);
    assert_int_equal(desired, 9); /* decided, reported, not written */
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/paused\":\"TRUE\"}", &p, err, sizeof err),
                     MS_OK);
    assert_true(p.paused);
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/paused\":\"false\"}", &p, err, sizeof err),
                     MS_OK);
    assert_false(p.paused);
}

static void test_unreadable_pause_counts_as_paused(void **state)
{
    ms_pause_t p;
    char err[256] = "";

    (void)state;
    assert_int_equal(
        parse("{\"autoscaling.meshscaler.io/paused\":\"yes please\"}", &p, err, sizeof err),
        MS_ERR_INVALID);
    assert_true(p.paused);
    assert_non_null(strstr(err, "autoscaling.meshscaler.io/paused"));
}

static void test_paused_replicas_holds(void **state)
{
    ms_pause_t p;
    int32_t desired = 9;
    char err[256] = "";

    (void)state;
    assert_int_equal(
        parse("{\"autoscaling.meshscaler.io/paused-replicas\":\"3\"}", &p, err, sizeof err), MS_OK);
    assert_true(p.has_replicas);
    assert_int_equal(ms_pause_apply(&p, 4, &desired), MS_PAUSE_HELD);
    assert_int_equal(desired, 3);
    assert_int_equal(
        parse("{\"autoscaling.meshscaler.io/paused-replicas\":\"0\"}", &p, err, sizeof err), MS_OK);
    assert_int_equal(p.replicas, 0);
    const char *bad[] = {"-1", "3x", "", " 3", "99999999999", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[128];
        snprintf(json, sizeof json, "{\"autoscaling.meshscaler.io/paused-replicas\":\"%s\"}",
                 bad[i]);
        assert_int_equal(parse(json, &p, err, sizeof err), MS_ERR_INVALID);
        assert_false(p.has_replicas);
    }
}

/* The reservation opt-out: only "false" turns it off; doubt reserves. */
static void test_reservation_opt_out(void **state)
{
    ms_pause_t p;
    char err[256] = "";

    (void)state;
    assert_int_equal(parse("{}", &p, err, sizeof err), MS_OK);
    assert_false(p.no_reservation);
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/starting-pod-reservation\":\"False\"}", &p,
                           err, sizeof err),
                     MS_OK);
    assert_true(p.no_reservation);
    assert_false(p.paused || p.has_replicas || p.no_scale_in || p.no_scale_out);
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/starting-pod-reservation\":\"true\"}", &p,
                           err, sizeof err),
                     MS_OK);
    assert_false(p.no_reservation);
    assert_int_equal(parse("{\"autoscaling.meshscaler.io/starting-pod-reservation\":\"off\"}", &p,
                           err, sizeof err),
                     MS_ERR_INVALID);
    assert_false(p.no_reservation);
    assert_non_null(strstr(err, "starting-pod-reservation: want"));
}

static void test_one_direction(void **state)
{
    ms_pause_t p;
    int32_t desired;
    char err[256] = "";

    (void)state;
    assert_int_equal(
        parse("{\"autoscaling.meshscaler.io/paused-scale-in\":\"true\"}", &p, err, sizeof err),
        MS_OK);
    desired = 2;
    assert_int_equal(ms_pause_apply(&p, 5, &desired), MS_PAUSE_SCALE_IN);
    assert_int_equal(desired, 5);
    desired = 8;
    assert_int_equal(ms_pause_apply(&p, 5, &desired), MS_PAUSE_NONE);
    assert_int_equal(desired, 8);

    assert_int_equal(
        parse("{\"autoscaling.meshscaler.io/paused-scale-out\":\"true\"}", &p, err, sizeof err),
        MS_OK);
    desired = 8;
    assert_int_equal(ms_pause_apply(&p, 5, &desired), MS_PAUSE_SCALE_OUT);
    assert_int_equal(desired, 5);
    desired = 2;
    assert_int_equal(ms_pause_apply(&p, 5, &desired), MS_PAUSE_NONE);
    assert_int_equal(desired, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_annotations),
        cmocka_unit_test(test_paused_never_writes),
        cmocka_unit_test(test_unreadable_pause_counts_as_paused),
        cmocka_unit_test(test_paused_replicas_holds),
        cmocka_unit_test(test_one_direction),
        cmocka_unit_test(test_reservation_opt_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
