/*
 * test_kube_ratelimit.c - the client-side token bucket and the watch
 * backoff, driven by a clock the test passes in (no sleeping).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "kube/kube_internal.h"

static void test_burst_then_qps(void **state)
{
    ms__kube_ratelimit_t rl;

    (void)state;
    ms__kube_ratelimit_init(&rl, 5, 10);
    /* client-go's default: 10 at once... */
    for (int i = 0; i < 10; i++)
        assert_true(ms__kube_ratelimit_reserve(&rl, 100.0) == 0);
    /* ...then one every 0.2 s: the 11th waits 0.2 s, the 12th 0.4 s. */
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 100.0), 0.2, 1e-9);
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 100.0), 0.4, 1e-9);
    /* One second later 5 tokens were earned, 2 of them already promised. */
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 101.0), 0, 1e-9);
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 101.0), 0, 1e-9);
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 101.0), 0, 1e-9);
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 101.0), 0.2, 1e-9);
    ms__kube_ratelimit_cleanup(&rl);
}

static void test_steady_rate_over_a_minute(void **state)
{
    ms__kube_ratelimit_t rl;
    double t = 0;
    int sent = 0;

    (void)state;
    ms__kube_ratelimit_init(&rl, 5, 10);
    /* A caller that always waits as told sends burst + qps * 60 in 60 s. */
    while (t <= 60.0 + 1e-9) {
        double w = ms__kube_ratelimit_reserve(&rl, t);
        t += w;
        if (t > 60.0 + 1e-9)
            break;
        sent++;
    }
    assert_int_equal(sent, 10 + 5 * 60);
    ms__kube_ratelimit_cleanup(&rl);
}

static void test_bucket_never_exceeds_burst(void **state)
{
    ms__kube_ratelimit_t rl;
    int free_tokens = 0;

    (void)state;
    ms__kube_ratelimit_init(&rl, 100, 3);
    (void)ms__kube_ratelimit_reserve(&rl, 0);
    /* An hour idle still allows only `burst` immediate requests. */
    while (ms__kube_ratelimit_reserve(&rl, 3600) == 0)
        free_tokens++;
    assert_int_equal(free_tokens, 3);
    ms__kube_ratelimit_cleanup(&rl);
}

static void test_unlimited(void **state)
{
    ms__kube_ratelimit_t rl;

    (void)state;
    ms__kube_ratelimit_init(&rl, -1, 1);
    for (int i = 0; i < 1000; i++)
        assert_true(ms__kube_ratelimit_reserve(&rl, 0) == 0);
    ms__kube_ratelimit_cleanup(&rl);
}

static void test_backoff_grows_with_jitter_and_caps(void **state)
{
    ms__kube_backoff_t b;
    double base = 0.8, t = 0;

    (void)state;
    ms__kube_backoff_init(&b, 0.8, 30, 42);
    for (int i = 0; i < 12; i++) {
        double d = ms__kube_backoff_next(&b, t);
        double expect = fmin(base * pow(2, i), 30);
        /* delay in [expect, 1.5 * expect): jitter only adds */
        assert_true(d >= expect - 1e-9);
        assert_true(d < expect * 1.5 + 1e-9);
        t += d;
    }
}

static void test_backoff_jitter_spreads_clients(void **state)
{
    ms__kube_backoff_t a, b;

    (void)state;
    ms__kube_backoff_init(&a, 1, 30, 1);
    ms__kube_backoff_init(&b, 1, 30, 2);
    /* Two clients failing together do not retry in lockstep. */
    assert_true(fabs(ms__kube_backoff_next(&a, 0) - ms__kube_backoff_next(&b, 0)) > 1e-6);
}

static void test_backoff_resets(void **state)
{
    ms__kube_backoff_t b;

    (void)state;
    ms__kube_backoff_init(&b, 1, 8, 7);
    (void)ms__kube_backoff_next(&b, 0);
    (void)ms__kube_backoff_next(&b, 1);
    assert_true(ms__kube_backoff_next(&b, 2) >= 4);
    ms__kube_backoff_reset(&b);
    assert_true(ms__kube_backoff_next(&b, 3) < 1.5 + 1e-9);
    /* A quiet spell longer than 2 x max also starts over. */
    (void)ms__kube_backoff_next(&b, 4);
    assert_true(ms__kube_backoff_next(&b, 4 + 17) < 1.5 + 1e-9);
}

/* Scale writes (foreground, reserving) and status patches (background,
 * asking) share one bucket, as the controller's client does when 10,000
 * objects move at once: the foreground is never queued behind the
 * background, the background keeps its floor, and the two together stay
 * within qps. Simulated on a 1 ms clock. */
static void test_background_yields_to_foreground(void **state)
{
    const double qps = 100, step = 1e-3;
    const int burst = 20, foreground = 400;
    ms__kube_ratelimit_t rl;
    double fg_next = 0, bg_next = 0, fg_done = -1;
    int fg_sent = 0, bg_sent = 0, bg_during_fg = 0;

    (void)state;
    ms__kube_ratelimit_init(&rl, qps, burst);
    for (int i = 0; i <= 10000; i++) {
        double t = i * step;

        /* The background has been draining alone for a second first. */
        if (t >= 1.0 && fg_sent < foreground && t >= fg_next - 1e-9) {
            fg_next = t + ms__kube_ratelimit_reserve(&rl, t);
            if (++fg_sent == foreground)
                fg_done = fg_next;
        }
        if (t >= bg_next - 1e-9) {
            double w = ms__kube_ratelimit_try_background(&rl, t);
            if (w == 0) {
                bg_sent++;
                if (t >= 1.0 && fg_done < 0)
                    bg_during_fg++;
            }
            bg_next = w == 0 ? t : t + w;
        }
    }
    /* Alone, 400 foreground requests at 100/s take 4 s; the background's
     * floor takes a tenth: 4.4 s. Queued behind a background that reserved
     * (half the rate each) they took 8 s. */
    assert_true(fg_done > 0);
    assert_true(fg_done - 1.0 < 5.0);
    /* The floor: about 10 per second while the foreground is busy. */
    assert_true(bg_during_fg >= (int)(0.8 * MS__KUBE_BACKGROUND_FLOOR * qps * (fg_done - 1.0)));
    /* Together within the bucket: burst + qps * 10 s. */
    assert_true(fg_sent + bg_sent <= burst + (int)(qps * 10.0) + 1);
    /* After the foreground, the background has the whole rate again. */
    assert_true(bg_sent - bg_during_fg >= (int)(0.9 * qps * (10.0 - fg_done)) + (int)(0.9 * qps));
    ms__kube_ratelimit_cleanup(&rl);
}

/* A background request never takes a token the bucket does not hold: it
 * waits, and says how long. */
static void test_background_never_reserves(void **state)
{
    ms__kube_ratelimit_t rl;

    (void)state;
    ms__kube_ratelimit_init(&rl, 10, 2);
    assert_true(ms__kube_ratelimit_try_background(&rl, 5.0) == 0);
    assert_true(ms__kube_ratelimit_try_background(&rl, 5.0) == 0);
    /* Empty: the floor's one token goes (and the shared count owes it). */
    assert_true(ms__kube_ratelimit_try_background(&rl, 5.0) == 0);
    /* Now both are empty: wait, and no token taken. */
    assert_float_equal(ms__kube_ratelimit_try_background(&rl, 5.0), 0.2, 1e-9);
    assert_float_equal(ms__kube_ratelimit_try_background(&rl, 5.0), 0.2, 1e-9);
    /* A foreground request waits only for what was taken, not for the asks. */
    assert_float_equal(ms__kube_ratelimit_reserve(&rl, 5.0), 0.2, 1e-9);
    ms__kube_ratelimit_cleanup(&rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_qps),
        cmocka_unit_test(test_steady_rate_over_a_minute),
        cmocka_unit_test(test_bucket_never_exceeds_burst),
        cmocka_unit_test(test_unlimited),
        cmocka_unit_test(test_background_yields_to_foreground),
        cmocka_unit_test(test_background_never_reserves),
        cmocka_unit_test(test_backoff_grows_with_jitter_and_caps),
        cmocka_unit_test(test_backoff_jitter_spreads_clients),
        cmocka_unit_test(test_backoff_resets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
