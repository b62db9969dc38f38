/* test_compare.c - meshscaler beside an HPA: differences and races. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "meshscaler/compare.h"

/* Counts, the mean and the signed largest difference. */
static void differences_are_counted(void **state)
{
    ms_compare_t c;
    (void)state;

    ms_compare_init(&c);
    assert_true(ms_compare_mean_difference(&c) == 0);
    ms_compare_add(&c, 0, 4, 4);
    ms_compare_add(&c, 15, 6, 4);
    ms_compare_add(&c, 30, 6, 9);
    ms_compare_add(&c, 45, 5, 5);
    assert_int_equal(c.samples, 4);
    assert_int_equal(c.differing, 2);
    assert_true(ms_compare_mean_difference(&c) == (0 + 2 + 3 + 0) / 4.0);
    assert_int_equal(c.max_difference, -3); /* 6 - 9: the HPA asked more */
}

/* meshscaler up at 15 s, the HPA follows at 75 s: meshscaler first by 60 s.
 * Then the HPA up first, meshscaler follows 30 s later. */
static void the_first_to_scale_up_wins_a_race(void **state)
{
    ms_compare_t c;
    (void)state;

    ms_compare_init(&c);
    ms_compare_add(&c, 0, 2, 2);
    ms_compare_add(&c, 15, 4, 2);
    ms_compare_add(&c, 30, 6, 2); /* still the same race */
    assert_int_equal(c.meshscaler_first, 0);
    ms_compare_add(&c, 75, 6, 3);
    assert_int_equal(c.meshscaler_first, 1);
    assert_true(c.last_lead == 60);
    ms_compare_add(&c, 90, 6, 8);
    ms_compare_add(&c, 120, 9, 8);
    assert_int_equal(c.hpa_first, 1);
    assert_true(c.last_lead == 30);
    assert_int_equal(c.leader, MS_COMPARE_NOBODY);
}

/* Down moves start no race; both up in one sync is a tie; a race the other
 * never follows closes after MS_COMPARE_RACE_SECONDS. */
static void ties_downs_and_timeouts(void **state)
{
    ms_compare_t c;
    (void)state;

    ms_compare_init(&c);
    ms_compare_add(&c, 0, 5, 5);
    ms_compare_add(&c, 15, 3, 4);
    assert_int_equal(c.leader, MS_COMPARE_NOBODY);
    ms_compare_add(&c, 30, 6, 6);
    assert_int_equal(c.meshscaler_first + c.hpa_first, 0);
    assert_true(c.last_lead == 0);
    ms_compare_add(&c, 45, 8, 6);
    ms_compare_add(&c, 45 + MS_COMPARE_RACE_SECONDS - 1, 8, 6);
    assert_int_equal(c.meshscaler_first, 0);
    ms_compare_add(&c, 45 + MS_COMPARE_RACE_SECONDS + 15, 8, 6);
    assert_int_equal(c.meshscaler_first, 1);
    assert_true(c.last_lead == MS_COMPARE_RACE_SECONDS);
    /* The first sample of a pair opens nothing (no previous counts). */
    ms_compare_init(&c);
    ms_compare_add(&c, 0, 9, 2);
    assert_int_equal(c.leader, MS_COMPARE_NOBODY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(differences_are_counted),
        cmocka_unit_test(the_first_to_scale_up_wins_a_race),
        cmocka_unit_test(ties_downs_and_timeouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
