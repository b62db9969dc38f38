/*
 * test_engine.c - every step of docs/decision-rules.md, one test per rule or
 * edge, on plain structs and a time-travelling `now`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine_fixtures.h"

/* ---- step 3: formulas and tolerance ---- */

static void tolerance_band_is_inclusive_at_both_edges(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 40);

    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 110)).metrics[0].replicas, 10);
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 90)).metrics[0].replicas, 10);
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 111)).metrics[0].replicas, 12);
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 89)).metrics[0].replicas, 9);
    ms_spec_cleanup(&s);
}

static void tolerance_is_per_direction(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 40);
    s.scale_up.tolerance = 0;
    s.scale_down.tolerance = 0.5;

    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 101)).metrics[0].replicas, 11);
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 50)).metrics[0].replicas, 10);
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 49)).metrics[0].replicas, 5);
    ms_spec_cleanup(&s);
}

static void utilization_and_value_scale_ready_replicas(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    (void)state;

    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 140);
    o.ready_replicas = 3; /* r = 2, ceil(2 * 3) */
    assert_int_equal(decide(&s, &mem, o).metrics[0].replicas, 6);

    ms_spec_cleanup(&s);

    spec_one(&s, MS_TARGET_VALUE, 100, 1, 40);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 250);
    o.ready_replicas = 5; /* surge: ready may exceed current */
    assert_int_equal(decide(&s, &mem, o).metrics[0].replicas, 13);
    ms_spec_cleanup(&s);
}

static void average_value_divides_the_total(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);

    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 4, 2000));
    assert_int_equal(d.metrics[0].replicas, 20);
    assert_true(d.metrics[0].ratio == 5.0);
    /* 420 / (100 * 4) = 1.05: inside the band even though ceil(4.2) = 5 */
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 4, 420)).metrics[0].replicas, 4);
    ms_spec_cleanup(&s);
}

static void huge_values_saturate_instead_of_overflowing(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 1e-9, 1, 40);
    ms_engine_memory_init(&mem);

    d = decide(&s, &mem, obs_at(0, 4, 1e300));
    assert_int_equal(d.metrics[0].replicas, INT32_MAX);
    assert_int_equal(d.desired_replicas, 8); /* still rate limited */
    ms_spec_cleanup(&s);
}

static void largest_ask_wins(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    spec_add_n(&s);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 35);
    o.metrics[1] = (ms_sample_t){true, 105};
    d = decide(&s, &mem, o);
    assert_int_equal(d.recommendation, 6);
    ms_spec_cleanup(&s);
}

/* ---- step 3: partial observations (HPA's missing-pods rule) ---- */

/* The metric's ask for one fresh decision. */
static ms_metric_result_t ask_partial(const ms_spec_t *s, ms_observation_t o)
{
    return decide_fresh(s, o).metrics[0];
}

static void partial_utilization_low_counts_missing_pods_busy(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);

    /* 8 of 10 pods at 20%: r = 20/70 = 0.286 < 1, the 2 missing count as
     * max(100, 70) = 100: v' = (20*8 + 100*2)/10 = 36, r' = 36/70 = 0.514,
     * ask ceil(0.514 * 10) = ceil(5.14) = 6 (without the rule: ceil(2.86) = 3). */
    m = ask_partial(&s, obs_partial(10, 10, 20, 8));
    assert_true(m.partial);
    assert_true(fabs(m.partial_value - 36) < 1e-9);
    assert_true(fabs(m.partial_ratio - 36.0 / 70) < 1e-9);
    assert_int_equal(m.replicas, 6);
    assert_int_equal(m.pods.count, 8);
    assert_true(m.effective.value == 20); /* the effective value stays as observed */
    ms_spec_cleanup(&s);
}

static void partial_utilization_fill_is_the_target_above_100(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 150, 1, 40);

    /* 5 of 10 pods at 30%: r = 30/150 = 0.2 < 1, missing count as
     * max(100, 150) = 150: v' = (30*5 + 150*5)/10 = 90, r' = 0.6,
     * ask ceil(6) = 6 (a fill of 100 would give v' = 65, ask ceil(4.33) = 5). */
    m = ask_partial(&s, obs_partial(10, 10, 30, 5));
    assert_true(fabs(m.partial_value - 90) < 1e-9);
    assert_int_equal(m.replicas, 6);
    ms_spec_cleanup(&s);
}

static void partial_utilization_high_counts_missing_pods_idle(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);

    /* 8 of 10 pods at 100%: r = 2 > 1, the 2 missing count as 0:
     * v' = 100*8/10 = 80, r' = 1.6, ask ceil(16) = 16 (without: ceil(20) = 20). */
    m = ask_partial(&s, obs_partial(10, 10, 100, 8));
    assert_true(m.partial);
    assert_true(fabs(m.partial_value - 80) < 1e-9);
    assert_int_equal(m.replicas, 16);
    ms_spec_cleanup(&s);
}

static void partial_average_value_low_adds_the_target_per_missing_pod(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);

    /* 6 of 10 pods report a total of 300: r = 300/(100*10) = 0.3 < 1;
     * v' = 300 + 100*4 = 700, r' = 700/(100*10) = 0.7 (outside the band),
     * ask ceil(700/100) = 7 (without the rule: ceil(3) = 3). */
    m = ask_partial(&s, obs_partial(10, 10, 300, 6));
    assert_true(m.partial);
    assert_true(fabs(m.partial_value - 700) < 1e-9);
    assert_true(fabs(m.partial_ratio - 0.7) < 1e-9);
    assert_int_equal(m.replicas, 7);
    ms_spec_cleanup(&s);
}

static void partial_average_value_high_keeps_the_total(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);

    /* 6 of 10 pods report 1500: r = 1.5 > 1, v' = v = 1500, r' = 1.5,
     * ask ceil(15) = 15: the missing pods add nothing to scale for. */
    m = ask_partial(&s, obs_partial(10, 10, 1500, 6));
    assert_true(m.partial);
    assert_true(m.partial_value == 1500);
    assert_int_equal(m.replicas, 15);
    ms_spec_cleanup(&s);
}

static void partial_ratio_exactly_one_asks_current(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);

    /* 5 of 10 pods at exactly the target: r = 50/50 = 1, nothing is filled
     * (a busy fill would read (250 + 500)/10 = 75, r' = 1.5, ask 15): asks 10. */
    m = ask_partial(&s, obs_partial(10, 10, 50, 5));
    assert_true(m.partial);
    assert_true(m.partial_value == 50);
    assert_int_equal(m.replicas, 10);
    ms_spec_cleanup(&s);
}

static void partial_ratio_inside_the_band_asks_current(void **state)
{
    ms_spec_t s;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);

    /* 7 of 10 pods at 75%: r = 1.5, v' = 75*7/10 = 52.5, r' = 1.05, inside
     * [0.9, 1.1]: asks 10 (without the rule: ceil(15) = 15). */
    assert_int_equal(ask_partial(&s, obs_partial(10, 10, 75, 7)).replicas, 10);

    /* The scenario partial-scrape's first tick: 3 of 8 pods at 20%, target
     * 70: v' = (20*3 + 100*5)/8 = 70, r' = 1: asks 8 (without: ceil(2.29) = 3). */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    assert_int_equal(ask_partial(&s, obs_partial(8, 8, 20, 3)).replicas, 8);
    ms_spec_cleanup(&s);
}

static void partial_ratios_on_opposite_sides_ask_current(void **state)
{
    ms_spec_t s;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);

    /* r < 1, r' > 1: 2 of 10 pods at 60%: r = 0.857 (outside the band),
     * v' = (60*2 + 100*8)/10 = 92, r' = 1.314: asks 10 (without: ceil(8.57) = 9). */
    assert_int_equal(ask_partial(&s, obs_partial(10, 10, 60, 2)).replicas, 10);

    /* r > 1, r' < 1: 5 of 10 pods at 80%, target 50: r = 1.6,
     * v' = 80*5/10 = 40, r' = 0.8: asks 10 (without: ceil(16) = 16). */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    assert_int_equal(ask_partial(&s, obs_partial(10, 10, 80, 5)).replicas, 10);

    /* AverageValue r < 1, r' > 1: 2 of 10 pods report 500, target 100:
     * r = 500/1000 = 0.5, v' = 500 + 100*8 = 1300, r' = 1.3: asks 10. */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);
    assert_int_equal(ask_partial(&s, obs_partial(10, 10, 500, 2)).replicas, 10);
    ms_spec_cleanup(&s);
}

static void partial_ask_against_the_ratio_asks_current(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 40);

    /* A surge: current 4, ready 10, 5 pods report 0%: r = 0, fill 100:
     * v' = (0 + 100*5)/10 = 50, r' = 0.5 < 1, but ceil(0.5 * 10) = 5 > 4:
     * the ask would scale up on a reading below target, so asks 4. */
    m = ask_partial(&s, obs_partial(4, 10, 0, 5));
    assert_true(fabs(m.partial_ratio - 0.5) < 1e-9);
    assert_int_equal(m.replicas, 4);

    /* Fewer ready than current: current 10, ready 4, 2 pods at 150%,
     * target 50: r = 3, v' = 150*2/4 = 75, r' = 1.5 > 1, but
     * ceil(1.5 * 4) = 6 < 10: asks 10 (without the rule: ceil(12) = 12). */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    m = ask_partial(&s, obs_partial(10, 4, 150, 2));
    assert_true(fabs(m.partial_ratio - 1.5) < 1e-9);
    assert_int_equal(m.replicas, 10);
    ms_spec_cleanup(&s);
}

static void partial_rule_needs_fewer_pods_than_ready(void **state)
{
    ms_spec_t s;
    ms_metric_result_t m;
    ms_observation_t o;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);

    /* pods == ready: 20% on 8 of 8: plain r = 0.286, ask ceil(2.29) = 3. */
    m = ask_partial(&s, obs_partial(8, 8, 20, 8));
    assert_false(m.partial);
    assert_int_equal(m.replicas, 3);
    /* pods > ready (a rollout's terminating pods still report): the same. */
    m = ask_partial(&s, obs_partial(8, 8, 20, 11));
    assert_false(m.partial);
    assert_int_equal(m.replicas, 3);
    /* pods not known (a user query): the same. */
    o = obs_partial(8, 8, 20, 3);
    o.metric_pods[0].known = false;
    assert_int_equal(ask_partial(&s, o).replicas, 3);
    /* a Value target is a whole-metric comparison: 250 vs 100 on 2 of 5
     * pods: plain r = 2.5, ask ceil(2.5 * 5) = 13. */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_VALUE, 100, 1, 40);
    m = ask_partial(&s, obs_partial(5, 5, 250, 2));
    assert_false(m.partial);
    assert_int_equal(m.replicas, 13);
    ms_spec_cleanup(&s);
}

static void partial_rule_uses_the_effective_value(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    s.saturation[0].enabled = true;
    ms_engine_memory_init(&mem);

    /* 50% on 5 of 10 pods is r = 1, but half the requests were rejected:
     * effective 50 * (100 + 100)/100 = 100, r = 2 > 1, fill 0:
     * v' = 100*5/10 = 50, r' = 1: inside the band, asks 10. */
    o = obs_partial(10, 10, 50, 5);
    o.saturation[0].admitted = (ms_sample_t){true, 100};
    o.saturation[0].rejected = (ms_sample_t){true, 100};
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.value == 100);
    assert_true(d.metrics[0].partial_value == 50);
    assert_int_equal(d.metrics[0].replicas, 10);
    ms_spec_cleanup(&s);
}

static void partial_negative_pod_count_is_refused(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem, before;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem);
    before = mem;
    o = obs_partial(8, 8, 20, -1);
    assert_int_equal(ms_engine_decide(&s, &mem, &o, &d), MS_ERR_INVALID);
    assert_memory_equal(&mem, &before, sizeof mem);
    ms_spec_cleanup(&s);
}

static void partial_observation_is_explained(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    char buf[512];
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);

    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_partial(10, 10, 20, 8)); /* v' = 36, asks 6 */
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(
        strstr(buf, "m 20 (8 of 10 pods reported, 36 with the rest counted busy) asks 6"));
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_partial(10, 10, 140, 8)); /* r = 2: v' = 112, r' = 1.6, asks 16 */
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(
        strstr(buf, "m 140 (8 of 10 pods reported, 112 with the rest counted idle) asks 16"));
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_partial(10, 10, 70, 8)); /* r = 1: nothing filled */
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(strstr(buf, "m 70 (8 of 10 pods reported) asks 10"));
    ms_spec_cleanup(&s);
}

/* ---- step 1: out of range ---- */

static void out_of_range_skips_the_rest(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 3, 10);

    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 0, 500));
    assert_int_equal(d.desired_replicas, 0);
    assert_int_equal(d.reason, MS_REASON_ScalingDisabled);
    assert_false(d.has_recommendation);
    assert_int_equal(mem.nevents, 0);

    d = decide(&s, &mem, obs_at(15, 14, 70));
    assert_int_equal(d.desired_replicas, 10);
    assert_int_equal(d.reason, MS_REASON_AboveMaxReplicas);
    assert_int_equal(mem.nevents, 1);
    assert_int_equal(mem.event_change[0], -4);

    d = decide(&s, &mem, obs_at(30, 1, 70));
    assert_int_equal(d.desired_replicas, 3);
    assert_int_equal(d.reason, MS_REASON_BelowMinReplicas);
    assert_int_equal(mem.nevents, 2);
    assert_int_equal(mem.nrecs, 1); /* only the initial recommendation */
    ms_spec_cleanup(&s);
}

/* ---- step 0: initial memory ---- */

static void a_fresh_memory_never_scales_down_inside_the_window(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem); /* a restarted controller */

    d = decide(&s, &mem, obs_at(1000, 10, 7));
    assert_int_equal(d.recommendation, 1);
    assert_int_equal(d.desired_replicas, 10);
    assert_true(d.stabilized);
    d = decide(&s, &mem, obs_at(1300, 10, 7)); /* 300 s later the window let go */
    assert_int_equal(d.desired_replicas, 1);
    ms_spec_cleanup(&s);
}

/* ---- step 4: missing metrics, fallback, storm hold ---- */

static void missing_metric_never_scales_down(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    spec_add_n(&s);
    ms_engine_memory_init(&mem);

    o = obs_at(0, 6, 10); /* asks 1, the other is missing */
    d = decide(&s, &mem, o);
    assert_int_equal(d.reason, MS_REASON_MetricsUnavailable);
    assert_int_equal(d.desired_replicas, 6);
    assert_false(d.has_recommendation);
    assert_int_equal(mem.nrecs, 1);
    assert_int_equal(mem.failures, 0); /* one metric was valid */

    o = obs_at(15, 6, 140); /* asks 12: a valid larger ask still scales */
    d = decide(&s, &mem, o);
    assert_int_equal(d.desired_replicas, 12);
    assert_int_equal(d.reason, MS_REASON_DesiredWithinRange);
    ms_spec_cleanup(&s);
}

static void fallback_counts_and_resets(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.fallback = (ms_fallback_spec_t){true, 2, 5, MS_FALLBACK_STATIC};
    ms_engine_memory_init(&mem);

    o = obs_at(0, 3, 0);
    o.metrics[0].present = false;
    d = decide(&s, &mem, o);
    assert_int_equal(d.reason, MS_REASON_MetricsUnavailable);
    assert_int_equal(d.failures, 1);
    o.now = 15;
    d = decide(&s, &mem, o);
    assert_true(d.fallback_used);
    assert_int_equal(d.reason, MS_REASON_Fallback);
    assert_int_equal(d.desired_replicas, 5);
    assert_int_equal(d.failures, 2);

    o = obs_at(30, 5, 70); /* one valid tick resets the count */
    d = decide(&s, &mem, o);
    assert_int_equal(d.failures, 0);
    assert_int_equal(mem.failures, 0);
    o.metrics[0].present = false;
    o.now = 45;
    d = decide(&s, &mem, o);
    assert_int_equal(d.reason, MS_REASON_MetricsUnavailable);
    assert_int_equal(d.failures, 1);
    ms_spec_cleanup(&s);
}

static void fallback_current_if_higher_keeps_a_larger_count(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    char buf[512];
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.fallback = (ms_fallback_spec_t){true, 1, 5, MS_FALLBACK_CURRENT_IF_HIGHER};
    ms_engine_memory_init(&mem);
    o = obs_at(0, 9, 0);
    o.metrics[0].present = false;
    d = decide(&s, &mem, o);
    assert_int_equal(d.recommendation, 9);
    assert_int_equal(d.desired_replicas, 9);
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(strstr(buf, "fallback 5, CurrentIfHigher keeps 9; recommendation 9"));

    s.fallback.mode = MS_FALLBACK_STATIC; /* Static would shrink, after the window */
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, o);
    assert_int_equal(d.recommendation, 5);
    assert_int_equal(d.desired_replicas, 9);
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(strstr(buf, "fallback 5; recommendation 5"));
    ms_spec_cleanup(&s);
}

static void fallback_defaults_to_current_if_higher(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.fallback.enabled = true; /* threshold and mode as ms_spec_init() left them */
    s.fallback.replicas = 5;
    assert_int_equal(s.fallback.mode, MS_FALLBACK_CURRENT_IF_HIGHER);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 9, 0);
    o.metrics[0].present = false;
    for (int tick = 0; tick < 3; tick++) { /* the default threshold is 3 */
        o.now = 15 * tick;
        d = decide(&s, &mem, o);
    }
    assert_true(d.fallback_used);
    assert_int_equal(d.recommendation, 9); /* 9 > 5: never lowered */
    o.current_replicas = 3;
    o.ready_replicas = 3;
    o.now = 45;
    d = decide(&s, &mem, o);
    assert_int_equal(d.recommendation, 5); /* 3 < 5: raised */
    ms_spec_cleanup(&s);
}

static void without_fallback_all_missing_holds_forever(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 7, 0);
    o.metrics[0].present = false;
    for (int i = 0; i < 50; i++) {
        o.now = 15.0 * i;
        d = decide(&s, &mem, o);
        assert_int_equal(d.desired_replicas, 7);
        assert_int_equal(d.reason, MS_REASON_MetricsUnavailable);
    }
    assert_int_equal(d.failures, 50);
    ms_spec_cleanup(&s);
}

/* ---- step 2: saturation and retry storms ---- */

static void saturation_reveals_rejected_demand(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.saturation[0].enabled = true;
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 100);
    o.saturation[0].admitted = (ms_sample_t){true, 720};
    o.saturation[0].rejected = (ms_sample_t){true, 576};
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.value > 179.999 && d.metrics[0].effective.value < 180.001);
    assert_true(d.saturated);
    assert_int_equal(d.recommendation, 11);
    ms_spec_cleanup(&s);
}

static void saturation_overflow_reads_as_the_largest_demand(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.saturation[0].enabled = true;
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 100);
    o.saturation[0].admitted = (ms_sample_t){true, 1e-300};
    o.saturation[0].rejected = (ms_sample_t){true, 1e300};
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.present);
    assert_true(isfinite(d.metrics[0].effective.value));
    assert_int_equal(d.metrics[0].replicas, INT32_MAX);
    assert_int_equal(d.desired_replicas, 8);

    o.metrics[0].value = 0; /* 0 x huge is 0, not NaN */
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.value == 0);
    ms_spec_cleanup(&s);
}

static void saturation_needs_admitted_traffic(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.saturation[0].enabled = true;
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 100);
    o.saturation[0].admitted = (ms_sample_t){true, 0};
    o.saturation[0].rejected = (ms_sample_t){true, 50};
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.value == 100);
    assert_false(d.saturated);

    o.saturation[0].admitted = (ms_sample_t){true, 10};
    o.saturation[0].rejected = (ms_sample_t){false, 0}; /* not observed */
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, o);
    assert_true(d.metrics[0].effective.value == 100);
    ms_spec_cleanup(&s);
}

static void retry_storm_discounts_and_holds(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 2, 40);
    s.retry_storm.enabled = true;
    s.retry_storm.threshold = 0.3;
    ms_engine_memory_init(&mem);

    o = obs_at(0, 4, 280);
    o.retry_share = (ms_sample_t){true, 0.5};
    d = decide(&s, &mem, o);
    assert_true(d.retry_storm);
    assert_true(d.metrics[0].effective.value == 140);
    assert_int_equal(d.recommendation, 8);

    o = obs_at(1000, 8, 40); /* load fell, but mid-storm: hold */
    o.retry_share = (ms_sample_t){true, 0.6};
    d = decide(&s, &mem, o);
    assert_true(d.held_by_storm);
    assert_int_equal(d.recommendation, 8);
    assert_int_equal(d.desired_replicas, 8);
    ms_spec_cleanup(&s);
}

static void retry_share_at_the_threshold_is_no_storm(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.retry_storm.enabled = true;
    s.retry_storm.threshold = 0.3;
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 280);
    o.retry_share = (ms_sample_t){true, 0.3};
    d = decide(&s, &mem, o);
    assert_false(d.retry_storm);
    assert_true(d.metrics[0].effective.value == 280);
    ms_spec_cleanup(&s);
}

/* ---- step 5: stabilization ---- */

static void scale_down_window_expires_exactly(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem);
    decide(&s, &mem, obs_at(0, 10, 70)); /* records 10 at t=0 */

    d = decide(&s, &mem, obs_at(299.5, 10, 7));
    assert_int_equal(d.desired_replicas, 10);
    /* At t=300 the entries at t=0 are no longer newer than now - 300. */
    d = decide(&s, &mem, obs_at(300, 10, 7));
    assert_int_equal(d.stabilized_value, 1);
    assert_false(d.stabilized);
    ms_spec_cleanup(&s);
}

static void scale_up_window_takes_the_minimum(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.scale_up.window_seconds = 60;
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 4, 70));
    assert_int_equal(d.desired_replicas, 4);
    d = decide(&s, &mem, obs_at(30, 4, 140)); /* asks 8; 4 within 60 s */
    assert_int_equal(d.desired_replicas, 4);
    assert_true(d.stabilized);
    d = decide(&s, &mem, obs_at(61, 4, 140)); /* only the 8s remain */
    assert_int_equal(d.desired_replicas, 8);
    ms_spec_cleanup(&s);
}

/* ---- step 6: rate policies and bounds ---- */

static void percent_rounds_up_for_scale_up(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 10, 1, 100);
    s.scale_up.npolicies = 1;
    s.scale_up.policies[0] = (ms_policy_t){MS_POLICY_PERCENT, 50, 60};
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 3, 100)); /* ceil(3 * 1.5) = 5 */
    assert_int_equal(d.desired_replicas, 5);
    assert_int_equal(d.reason, MS_REASON_ScaleUpLimit);
    ms_spec_cleanup(&s);
}

static void percent_truncates_for_scale_down(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 100);
    s.scale_down.window_seconds = 0;
    s.scale_down.policies[0] = (ms_policy_t){MS_POLICY_PERCENT, 50, 60};
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 5, 1)); /* trunc(5 * 0.5) = 2 */
    assert_int_equal(d.desired_replicas, 2);
    assert_int_equal(d.reason, MS_REASON_ScaleDownLimit);
    ms_spec_cleanup(&s);
}

static void events_at_the_period_edge_do_not_count(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 10, 1, 100);
    s.scale_up.npolicies = 1;
    s.scale_up.policies[0] = (ms_policy_t){MS_POLICY_PODS, 2, 15};
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 2, 100)).desired_replicas, 4);
    /* t=14.9: the +2 at t=0 still counts, start 2, so no growth */
    assert_int_equal(decide(&s, &mem, obs_at(14.9, 4, 100)).desired_replicas, 4);
    /* t=15: the event sits exactly on the cutoff and no longer counts */
    assert_int_equal(decide(&s, &mem, obs_at(15, 4, 100)).desired_replicas, 6);
    ms_spec_cleanup(&s);
}

static void select_min_takes_the_smaller_change(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 10, 1, 100);
    s.scale_up.select = MS_SELECT_MIN; /* default policies: +100% or +4 */
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 100)).desired_replicas, 14);
    s.scale_up.select = MS_SELECT_MAX;
    ms_engine_memory_init(&mem);
    assert_int_equal(decide(&s, &mem, obs_at(0, 10, 100)).desired_replicas, 20);
    ms_spec_cleanup(&s);
}

static void disabled_direction_never_moves(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.scale_up.select = MS_SELECT_DISABLED;
    s.scale_down.select = MS_SELECT_DISABLED;
    s.scale_down.window_seconds = 0;
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 4, 700));
    assert_int_equal(d.desired_replicas, 4);
    assert_int_equal(d.reason, MS_REASON_ScaleUpLimit);
    d = decide(&s, &mem, obs_at(15, 4, 7));
    assert_int_equal(d.desired_replicas, 4);
    assert_int_equal(d.reason, MS_REASON_ScaleDownLimit);
    ms_spec_cleanup(&s);
}

static void bounds_give_too_many_and_too_few(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 3, 6);
    s.scale_down.window_seconds = 0;
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 4, 140)); /* asks 8, rate allows 8, max 6 */
    assert_int_equal(d.desired_replicas, 6);
    assert_int_equal(d.reason, MS_REASON_TooManyReplicas);
    d = decide(&s, &mem, obs_at(100, 6, 7)); /* asks 1, min 3 */
    assert_int_equal(d.desired_replicas, 3);
    assert_int_equal(d.reason, MS_REASON_TooFewReplicas);
    ms_spec_cleanup(&s);
}

/* ---- step 7: downstream guardrail ---- */

static void downstream_caps_scale_out(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.ndownstreams = 2;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 400, .max_utilization = 0.7};
    s.downstreams[1] = (ms_downstream_spec_t){
        .name = "db", .per_replica = 10, .max_utilization = 0.5, .has_limit = true, .limit = 200};
    ms_engine_memory_init(&mem);
    o = obs_at(0, 8, 200); /* asks 23, rate allows 16 */
    o.downstreams[0].usage = (ms_sample_t){true, 12000};
    o.downstreams[0].limit = (ms_sample_t){true, 20000}; /* allows 8 + 5 = 13 */
    o.downstreams[1].usage = (ms_sample_t){true, 60};    /* static limit: 8 + 4 = 12 */
    d = decide(&s, &mem, o);
    assert_int_equal(d.downstreams[0].allowed, 13);
    assert_int_equal(d.downstreams[1].allowed, 12);
    assert_true(d.downstreams[1].bound);
    assert_false(d.downstreams[0].bound);
    assert_int_equal(d.desired_replicas, 12);
    assert_int_equal(d.reason, MS_REASON_DownstreamLimit);
    ms_spec_cleanup(&s);
}

static void downstream_never_scales_down(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.ndownstreams = 1;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 10, .max_utilization = 0.7};
    ms_engine_memory_init(&mem);
    o = obs_at(0, 8, 140);
    o.downstreams[0].usage = (ms_sample_t){true, 19000}; /* already past 70% */
    o.downstreams[0].limit = (ms_sample_t){true, 20000};
    d = decide(&s, &mem, o);
    assert_int_equal(d.downstreams[0].allowed, 8);
    assert_int_equal(d.desired_replicas, 8);
    assert_int_equal(d.reason, MS_REASON_DownstreamLimit);

    o = obs_at(400, 8, 35); /* a scale-down is not the guardrail's business */
    o.downstreams[0].usage = (ms_sample_t){true, 19000};
    o.downstreams[0].limit = (ms_sample_t){true, 20000};
    d = decide(&s, &mem, o);
    assert_int_equal(d.desired_replicas, 4);
    assert_int_equal(d.reason, MS_REASON_DesiredWithinRange);
    ms_spec_cleanup(&s);
}

static void unobserved_downstream_does_not_cap(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.ndownstreams = 1;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 10, .max_utilization = 0.7};
    ms_engine_memory_init(&mem);
    o = obs_at(0, 8, 140);
    o.downstreams[0].usage = (ms_sample_t){true, 19000}; /* no limit anywhere */
    d = decide(&s, &mem, o);
    assert_false(d.downstreams[0].observed);
    assert_int_equal(d.desired_replicas, 16);
    ms_spec_cleanup(&s);
}

/* Step 7's reservation: replicas whose pods are not running yet
 * (starting = current - running) each hold perReplica of every downstream,
 * since its usage cannot show them yet. 8 replicas, 6 running: 2 starting.
 * lb: (0.7 x 20000 - 12000 - 400 x 2) / 400 = 3 -> 11 (13 without);
 * db: (0.5 x 200 - 60 - 10 x 2) / 10 = 2 -> 10 (12 without): db binds. */
static ms_spec_t reserve_spec(void)
{
    ms_spec_t s;

    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.ndownstreams = 2;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 400, .max_utilization = 0.7};
    s.downstreams[1] = (ms_downstream_spec_t){
        .name = "db", .per_replica = 10, .max_utilization = 0.5, .has_limit = true, .limit = 200};
    return s;
}

/* 8 replicas asking 23 (rate: 16), lb at 12000 of 20000, db at 60 of 200;
 * `running` of the pods Running (negative: not known). */
static ms_observation_t reserve_obs(int32_t running)
{
    ms_observation_t o = obs_at(0, 8, 200);

    o.downstreams[0].usage = (ms_sample_t){true, 12000};
    o.downstreams[0].limit = (ms_sample_t){true, 20000};
    o.downstreams[1].usage = (ms_sample_t){true, 60};
    if (running >= 0)
        o.running_replicas = (ms_pods_t){true, running};
    return o;
}

static void downstream_reserves_per_replica_for_starting_pods(void **state)
{
    ms_spec_t s = reserve_spec();
    ms_decision_t d;
    char line[1024];
    (void)state;
    d = decide_fresh(&s, reserve_obs(6));
    assert_int_equal(d.starting_replicas, 2);
    assert_true(d.downstreams[0].reserved == 800);
    assert_true(d.downstreams[1].reserved == 20);
    assert_int_equal(d.downstreams[0].allowed, 11);
    assert_int_equal(d.downstreams[1].allowed, 10);
    assert_true(d.downstreams[1].bound);
    assert_false(d.downstreams[0].bound);
    assert_int_equal(d.desired_replicas, 10);
    assert_int_equal(d.reason, MS_REASON_DownstreamLimit);
    ms_decision_explain(&s, &d, line, sizeof line);
    assert_non_null(
        strstr(line, "downstream db allows only 10 (2 starting replicas reserve 20 flows)"));
    ms_spec_cleanup(&s);
}

/* Nothing is reserved when the running count is not known (the default:
 * current), equals current, or exceeds it (old pods of a rollout). */
static void downstream_reserves_nothing_without_starting_pods(void **state)
{
    ms_spec_t s = reserve_spec();
    const int32_t running[] = {-1, 8, 11};
    (void)state;
    for (size_t i = 0; i < sizeof running / sizeof running[0]; i++) {
        ms_decision_t d = decide_fresh(&s, reserve_obs(running[i]));
        char line[1024];

        assert_int_equal(d.starting_replicas, 0);
        assert_true(d.downstreams[0].reserved == 0);
        assert_int_equal(d.downstreams[0].allowed, 13);
        assert_int_equal(d.downstreams[1].allowed, 12);
        assert_int_equal(d.desired_replicas, 12);
        ms_decision_explain(&s, &d, line, sizeof line);
        assert_null(strstr(line, "starting"));
    }
    ms_spec_cleanup(&s);
}

/* A reservation larger than the room allows no growth but never asks for
 * fewer than current; one starting replica is told in the singular. */
static void downstream_reservation_never_goes_below_current(void **state)
{
    ms_spec_t s = reserve_spec();
    ms_decision_t d;
    char line[1024];
    (void)state;
    d = decide_fresh(&s, reserve_obs(0)); /* lb: 2000 - 3200 < 0 */
    assert_int_equal(d.starting_replicas, 8);
    assert_int_equal(d.downstreams[0].allowed, 8);
    assert_int_equal(d.downstreams[1].allowed, 8);
    assert_int_equal(d.desired_replicas, 8);
    assert_int_equal(d.reason, MS_REASON_DownstreamLimit);

    d = decide_fresh(&s, reserve_obs(7)); /* lb: (2000 - 400) / 400 -> 12, db: 30 / 10 -> 11 */
    assert_int_equal(d.downstreams[0].allowed, 12);
    assert_int_equal(d.desired_replicas, 11);
    ms_decision_explain(&s, &d, line, sizeof line);
    assert_non_null(strstr(line, "allows only 11 (1 starting replica reserves 10 flows)"));
    ms_spec_cleanup(&s);
}

static void negative_running_count_is_refused(void **state)
{
    ms_spec_t s = reserve_spec();
    ms_engine_memory_t mem, before;
    ms_observation_t o = reserve_obs(-1);
    ms_decision_t d;
    (void)state;
    ms_engine_memory_init(&mem);
    before = mem;
    o.running_replicas = (ms_pods_t){true, -1};
    assert_int_equal(ms_engine_decide(&s, &mem, &o, &d), MS_ERR_INVALID);
    assert_memory_equal(&mem, &before, sizeof mem);
    ms_spec_cleanup(&s);
}

/* ---- step 8 and the reason order ---- */

static void every_change_is_a_signed_event(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.scale_down.window_seconds = 0;
    ms_engine_memory_init(&mem);
    decide(&s, &mem, obs_at(0, 4, 140));
    decide(&s, &mem, obs_at(100, 8, 35));
    decide(&s, &mem, obs_at(200, 4, 70));
    assert_int_equal(mem.nevents, 2);
    assert_int_equal(mem.event_change[0], 4);
    assert_int_equal(mem.event_change[1], -4);
    ms_spec_cleanup(&s);
}

static void a_deferred_scale_is_stored_only_when_recorded(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 140);
    o.defer_scale_event = true; /* e.g. dry-run: the target stays at 4 */
    d = decide(&s, &mem, o);
    assert_int_equal(d.desired_replicas, 8);
    assert_true(d.scaled);
    assert_int_equal(mem.nevents, 0);
    /* Not applied: the next tick from the real state decides the same. */
    o.now = 5;
    assert_int_equal(decide(&s, &mem, o).desired_replicas, 8);
    ms_engine_record_scale(&mem, &s, 5, 4); /* applied this time */
    assert_int_equal(mem.nevents, 1);
    o = obs_at(10, 8, 280); /* +4 within 15 s: Pods 4 from 4 -> 8 */
    assert_int_equal(decide(&s, &mem, o).desired_replicas, 8);
    ms_spec_cleanup(&s);
}

static void fallback_reason_yields_to_rate_limits(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.fallback = (ms_fallback_spec_t){true, 1, 30, MS_FALLBACK_STATIC};
    ms_engine_memory_init(&mem);
    o = obs_at(0, 3, 0);
    o.metrics[0].present = false;
    d = decide(&s, &mem, o);
    assert_int_equal(d.reason, MS_REASON_ScaleUpLimit);
    assert_true(d.fallback_used);
    ms_spec_cleanup(&s);
}

static void invalid_observation_changes_nothing(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem, before;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    ms_engine_memory_init(&mem);
    before = mem;
    o = obs_at(0, -1, 70);
    assert_int_equal(ms_engine_decide(&s, &mem, &o, &d), MS_ERR_INVALID);
    assert_memory_equal(&mem, &before, sizeof mem);
    ms_spec_cleanup(&s);
}

static void explanation_names_the_chain(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    char buf[512];
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.saturation[0].enabled = true;
    ms_engine_memory_init(&mem);
    o = obs_at(0, 4, 100);
    o.saturation[0].admitted = (ms_sample_t){true, 720};
    o.saturation[0].rejected = (ms_sample_t){true, 576};
    d = decide(&s, &mem, o);
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(strstr(buf, "m 100 (effective 180, rejections reveal hidden demand) asks 11"));
    assert_non_null(strstr(buf, "ScaleUpLimit to 8"));
    assert_non_null(strstr(buf, "desired 8 (ScaleUpLimit"));
    /* a short buffer is cut but terminated, and the needed length is told */
    assert_true(ms_decision_explain(&s, &d, buf, 10) > 10);
    assert_int_equal(strlen(buf), 9);
    ms_spec_cleanup(&s);
}

static void reason_names_round_trip(void **state)
{
    (void)state;
    for (int r = 0; r < MS_REASON__COUNT; r++)
        assert_int_equal(ms_reason_from_name(ms_reason_name((ms_reason_t)r)), r);
    assert_int_equal(ms_reason_from_name("Nope"), -1);
    assert_string_equal(ms_reason_name((ms_reason_t)999), "Unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tolerance_band_is_inclusive_at_both_edges),
        cmocka_unit_test(tolerance_is_per_direction),
        cmocka_unit_test(utilization_and_value_scale_ready_replicas),
        cmocka_unit_test(average_value_divides_the_total),
        cmocka_unit_test(huge_values_saturate_instead_of_overflowing),
        cmocka_unit_test(largest_ask_wins),
        cmocka_unit_test(partial_utilization_low_counts_missing_pods_busy),
        cmocka_unit_test(partial_utilization_fill_is_the_target_above_100),
        cmocka_unit_test(partial_utilization_high_counts_missing_pods_idle),
        cmocka_unit_test(partial_average_value_low_adds_the_target_per_missing_pod),
        cmocka_unit_test(partial_average_value_high_keeps_the_total),
        cmocka_unit_test(partial_ratio_exactly_one_asks_current),
        cmocka_unit_test(partial_ratio_inside_the_band_asks_current),
        cmocka_unit_test(partial_ratios_on_opposite_sides_ask_current),
        cmocka_unit_test(partial_ask_against_the_ratio_asks_current),
        cmocka_unit_test(partial_rule_needs_fewer_pods_than_ready),
        cmocka_unit_test(partial_rule_uses_the_effective_value),
        cmocka_unit_test(partial_negative_pod_count_is_refused),
        cmocka_unit_test(partial_observation_is_explained),
        cmocka_unit_test(out_of_range_skips_the_rest),
        cmocka_unit_test(a_fresh_memory_never_scales_down_inside_the_window),
        cmocka_unit_test(missing_metric_never_scales_down),
        cmocka_unit_test(fallback_counts_and_resets),
        cmocka_unit_test(fallback_current_if_higher_keeps_a_larger_count),
        cmocka_unit_test(fallback_defaults_to_current_if_higher),
        cmocka_unit_test(without_fallback_all_missing_holds_forever),
        cmocka_unit_test(saturation_reveals_rejected_demand),
        cmocka_unit_test(saturation_overflow_reads_as_the_largest_demand),
        cmocka_unit_test(saturation_needs_admitted_traffic),
        cmocka_unit_test(retry_storm_discounts_and_holds),
        cmocka_unit_test(retry_share_at_the_threshold_is_no_storm),
        cmocka_unit_test(scale_down_window_expires_exactly),
        cmocka_unit_test(scale_up_window_takes_the_minimum),
        cmocka_unit_test(percent_rounds_up_for_scale_up),
        cmocka_unit_test(percent_truncates_for_scale_down),
        cmocka_unit_test(events_at_the_period_edge_do_not_count),
        cmocka_unit_test(select_min_takes_the_smaller_change),
        cmocka_unit_test(disabled_direction_never_moves),
        cmocka_unit_test(bounds_give_too_many_and_too_few),
        cmocka_unit_test(downstream_caps_scale_out),
        cmocka_unit_test(downstream_never_scales_down),
        cmocka_unit_test(unobserved_downstream_does_not_cap),
        cmocka_unit_test(downstream_reserves_per_replica_for_starting_pods),
        cmocka_unit_test(downstream_reserves_nothing_without_starting_pods),
        cmocka_unit_test(downstream_reservation_never_goes_below_current),
        cmocka_unit_test(negative_running_count_is_refused),
        cmocka_unit_test(every_change_is_a_signed_event),
        cmocka_unit_test(a_deferred_scale_is_stored_only_when_recorded),
        cmocka_unit_test(fallback_reason_yields_to_rate_limits),
        cmocka_unit_test(invalid_observation_changes_nothing),
        cmocka_unit_test(explanation_names_the_chain),
        cmocka_unit_test(reason_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
