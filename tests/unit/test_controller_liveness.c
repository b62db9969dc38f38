/*
 * test_controller_liveness.c - /healthz's rule (ms__liveness_ok): alive
 * unless keys have been due and nothing progressed for 3 sync periods, and
 * at least 60 s. Times are monotonic seconds, passed in: no clock, no sleep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/controller_internal.h"

/* A sync period whose 3 periods (90 s) are above the 60 s floor. */
#define LONG_PERIOD 30.0
#define LONG_LIMIT 90.0
/* A sync period whose 3 periods (3 s) are below it: the floor rules. */
#define SHORT_PERIOD 1.0
#define FLOOR 60.0

static void test_nothing_due_is_alive(void **state)
{
    (void)state;
    /* due_since 0: nothing waits, however old the last progress */
    assert_true(ms__liveness_ok(0, 0, 1e6, LONG_PERIOD));
    assert_true(ms__liveness_ok(0, 100, 1e6, SHORT_PERIOD));
}

static void test_due_and_progressing_is_alive(void **state)
{
    (void)state;
    /* due for ages, but a round or a sync finished a moment ago */
    assert_true(ms__liveness_ok(1000, 9999, 10000, LONG_PERIOD));
    assert_true(ms__liveness_ok(1000, 9999, 10000, SHORT_PERIOD));
    /* progress right now */
    assert_true(ms__liveness_ok(1000, 10000, 10000, SHORT_PERIOD));
}

static void test_no_progress_below_the_limit_is_alive(void **state)
{
    (void)state;
    /* due since 1000, the last progress before that */
    assert_true(ms__liveness_ok(1000, 900, 1000, LONG_PERIOD));
    assert_true(ms__liveness_ok(1000, 900, 1000 + LONG_LIMIT - 0.001, LONG_PERIOD));
}

static void test_no_progress_past_the_limit_is_not_alive(void **state)
{
    (void)state;
    assert_false(ms__liveness_ok(1000, 900, 1000 + LONG_LIMIT, LONG_PERIOD));
    assert_false(ms__liveness_ok(1000, 900, 1000 + LONG_LIMIT + 0.5, LONG_PERIOD));
    assert_false(ms__liveness_ok(1000, 0, 1e6, LONG_PERIOD)); /* never progressed */
    /* the limit counts from the later of due and progress: progress at
     * 1010 after due at 1000, nothing since */
    assert_true(ms__liveness_ok(1000, 1010, 1010 + LONG_LIMIT - 0.001, LONG_PERIOD));
    assert_false(ms__liveness_ok(1000, 1010, 1010 + LONG_LIMIT, LONG_PERIOD));
}

static void test_floor_for_short_periods(void **state)
{
    (void)state;
    /* 3 periods of 1 s would be 3 s: 59 s without progress is still alive */
    assert_true(ms__liveness_ok(1000, 900, 1000 + 3.5, SHORT_PERIOD));
    assert_true(ms__liveness_ok(1000, 900, 1000 + FLOOR - 0.001, SHORT_PERIOD));
    assert_false(ms__liveness_ok(1000, 900, 1000 + FLOOR, SHORT_PERIOD));
    /* 3 periods of 20 s are exactly the floor */
    assert_true(ms__liveness_ok(1000, 900, 1059.999, 20));
    assert_false(ms__liveness_ok(1000, 900, 1060, 20));
    /* past the floor, periods rule: 3 periods of 25 s are 75 s */
    assert_true(ms__liveness_ok(1000, 900, 1074.999, 25));
    assert_false(ms__liveness_ok(1000, 900, 1075, 25));
}

static void test_progress_after_due_resets(void **state)
{
    (void)state;
    /* dead at 1090 with nothing since 1000 ... */
    assert_false(ms__liveness_ok(1000, 900, 1000 + LONG_LIMIT, LONG_PERIOD));
    /* ... alive again once a sync finishes, keys still due */
    assert_true(ms__liveness_ok(1000, 1000 + LONG_LIMIT, 1000 + LONG_LIMIT + 1, LONG_PERIOD));
    /* and the limit runs again from that progress */
    assert_true(ms__liveness_ok(1000, 1090, 1090 + LONG_LIMIT - 0.001, LONG_PERIOD));
    assert_false(ms__liveness_ok(1000, 1090, 1090 + LONG_LIMIT, LONG_PERIOD));
    /* nothing due any more: alive whatever the last progress */
    assert_true(ms__liveness_ok(0, 1090, 1e6, LONG_PERIOD));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_due_is_alive),
        cmocka_unit_test(test_due_and_progressing_is_alive),
        cmocka_unit_test(test_no_progress_below_the_limit_is_alive),
        cmocka_unit_test(test_no_progress_past_the_limit_is_not_alive),
        cmocka_unit_test(test_floor_for_short_periods),
        cmocka_unit_test(test_progress_after_due_resets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
