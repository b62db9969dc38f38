/*
 * test_engine_mutants.c - tests written to kill the mutants of src/engine/
 * that survived tests/mutation/run.sh (docs/testing.md, "Mutation testing").
 * Each test names the rule of docs/decision-rules.md it pins and the
 * mutant it kills; every expected value is worked out from the rule in the
 * comment, not read from the engine. The builders shared with
 * test_engine.c are in engine_fixtures.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine_internal.h"
#include "engine_fixtures.h"
#include "meshscaler/quantity.h"

/* ---- reason names ---- */

/* ms_reason_name/_sentence: "< MS_REASON__COUNT" mutated to "<=" or "!=". */
static void reason_count_itself_is_unknown(void **state)
{
    (void)state;
    assert_string_equal(ms_reason_name(MS_REASON__COUNT), "Unknown");
    assert_string_equal(ms_reason_sentence(MS_REASON__COUNT), "unknown reason");
    assert_string_equal(ms_reason_sentence((ms_reason_t)999), "unknown reason");
    assert_string_equal(
        ms_reason_sentence(MS_REASON_DownstreamLimit),
        "scaling out further would push a downstream limit past its allowed utilization");
}

/* currentReplicas is a scale's spec.replicas, >= 0: -1 is refused even
 * with a valid readyReplicas, and the memory is left as it was (mutant:
 * "current < 0" to "current < -1"). */
static void a_negative_current_count_is_refused(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem, before;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_engine_memory_init(&mem);
    before = mem;
    o = obs_at(0, -1, 70);
    o.ready_replicas = 3;
    assert_int_equal(ms_engine_decide(&s, &mem, &o, &d), MS_ERR_INVALID);
    assert_memory_equal(&mem, &before, sizeof mem);
    ms_spec_cleanup(&s);
}

/* ---- step 2: saturation ---- */

/* "If a saturation entry names the metric": observed rates for a metric
 * without one change nothing (mutant: `if (1==1)` for the spec check). */
static void saturation_needs_a_spec_entry(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    o = obs_at(0, 10, 60);
    o.saturation[0].admitted = (ms_sample_t){true, 100};
    o.saturation[0].rejected = (ms_sample_t){true, 100};
    /* No correction: r = 60/50 = 1.2, asks ceil(1.2 * 10) = 12 (a factor
     * of 2 would read 120, asking 24). */
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].effective.value == 60);
    assert_int_equal(d.metrics[0].replicas, 12);
    assert_false(d.saturated);
    ms_spec_cleanup(&s);
}

/* Rates are per second: half a rejected request per second is a rejection
 * (mutants: "rejected >= 0" to ">= 1", "rejected > 0" to "> 1"). */
static void saturation_counts_fractional_rejection_rates(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    s.saturation[0].enabled = true;
    o = obs_at(0, 4, 60);
    o.saturation[0].admitted = (ms_sample_t){true, 1};
    o.saturation[0].rejected = (ms_sample_t){true, 0.5};
    /* 60 * (1 + 0.5)/1 = 90, r = 1.8, asks ceil(1.8 * 4) = ceil(7.2) = 8. */
    d = decide_fresh(&s, o);
    assert_true(fabs(d.metrics[0].effective.value - 90) < 1e-9);
    assert_int_equal(d.metrics[0].replicas, 8);
    assert_true(d.metrics[0].saturation_applied);
    assert_true(d.saturated);
    ms_spec_cleanup(&s);
}

/* A rejection rate below zero is no observation of rejections: saturation
 * only reveals hidden demand, it never lowers a reading (mutant:
 * "rejected >= 0" to ">= -1"). */
static void saturation_ignores_a_negative_rejection_rate(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    s.saturation[0].enabled = true;
    o = obs_at(0, 4, 60);
    o.saturation[0].admitted = (ms_sample_t){true, 1};
    o.saturation[0].rejected = (ms_sample_t){true, -0.5};
    /* Uncorrected: r = 1.2, asks ceil(4.8) = 5 (a factor 0.5 would read 30,
     * r = 0.6, ask 3). */
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].effective.value == 60);
    assert_int_equal(d.metrics[0].replicas, 5);
    assert_false(d.saturated);
    ms_spec_cleanup(&s);
}

/* The corrected value keeps the sign of the reading when it overflows:
 * -1e300 * (1 + 1e300)/1 is -inf, held at -DBL_MAX, and a count asked
 * for a negative reading is 0, not INT32_MAX (mutant: "-DBL_MAX" to
 * "DBL_MAX" in the overflow clamp). */
static void saturation_overflow_keeps_the_sign(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_VALUE, 100, 1, 40);
    s.saturation[0].enabled = true;
    o = obs_at(0, 4, -1e300);
    o.saturation[0].admitted = (ms_sample_t){true, 1};
    o.saturation[0].rejected = (ms_sample_t){true, 1e300};
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].effective.value == -DBL_MAX);
    assert_int_equal(d.metrics[0].replicas, 0);
    assert_int_equal(d.recommendation, 0);
    ms_spec_cleanup(&s);
}

/* ---- step 3: asks ---- */

/* A reading below zero (a PromQL delta can be) asks 0 replicas, never a
 * negative count: r = -50/100 = -0.5, ceil(-0.5 * 4) = -2, held at 0
 * (mutant: ask_count's 0 to -1). The recommendation recorded is that 0;
 * the scale-down window (300 s, holding the initial 4) keeps 4. */
static void a_negative_reading_asks_zero(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_VALUE, 100, 1, 40);
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 4, -50));
    assert_int_equal(d.metrics[0].replicas, 0);
    assert_int_equal(d.recommendation, 0);
    assert_int_equal(d.desired_replicas, 4);
    assert_int_equal(mem.rec_replicas[1], 0);
    ms_spec_cleanup(&s);
}

/* ---- step 3: partial observations just above the target ---- */

/* AverageValue, r slightly above 1: the missing pods count as idle (add
 * nothing), so v' = v and r' = r = 1050/(100 * 10) = 1.05 is inside the
 * band: asks 10. Filling them as busy would read 1050 + 100 * 4 = 1450,
 * r' = 1.45, ask 15 (mutant: "ratio < 1.0" to "< 1.1" in filled_value). */
static void partial_average_value_just_above_target_fills_idle(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);
    o = obs_partial(10, 10, 1050, 6);
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].partial);
    assert_true(d.metrics[0].partial_value == 1050);
    assert_int_equal(d.metrics[0].replicas, 10);
    ms_spec_cleanup(&s);
}

/* Utilization, r = 52.5/50 = 1.05 > 1 on 8 of 10 pods: the 2 missing count
 * as 0, v' = 52.5 * 8/10 = 42, r' = 0.84: r and r' on opposite sides of 1,
 * asks 10. A busy fill would read (420 + 200)/10 = 62, r' = 1.24, ask 13. */
static void partial_utilization_just_above_target_fills_idle(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    o = obs_partial(10, 10, 52.5, 8);
    d = decide_fresh(&s, o);
    assert_true(fabs(d.metrics[0].partial_value - 42) < 1e-9);
    assert_int_equal(d.metrics[0].replicas, 10);
    ms_spec_cleanup(&s);
}

/* With no scale-up tolerance, r = 1.05 and r' = 1.05 on the same side of 1
 * (AverageValue, idle fill adds nothing): the partial rule does not hold
 * the count, the ask is ceil(1050/100) = 11 (mutant: "r < 1.0 && r2 > 1.0"
 * to "r < 1.1 && ..." in the opposite-sides check). */
static void partial_same_side_above_target_scales_without_tolerance(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_AVERAGE_VALUE, 100, 1, 40);
    s.scale_up.tolerance = 0;
    o = obs_partial(10, 10, 1050, 6);
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].partial_ratio == 1.05);
    assert_int_equal(d.metrics[0].replicas, 11);
    assert_int_equal(d.desired_replicas, 11);

    /* Utilization: 19 of 20 pods at 54.5, target 50: r = 1.09, idle fill
     * v' = 54.5 * 19/20 = 51.775, r' = 1.0355 > 1: asks
     * ceil(1.0355 * 20) = ceil(20.71) = 21. */
    ms_spec_cleanup(&s);
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    s.scale_up.tolerance = 0;
    o = obs_partial(20, 20, 54.5, 19);
    d = decide_fresh(&s, o);
    assert_true(fabs(d.metrics[0].partial_value - 51.775) < 1e-9);
    assert_int_equal(d.metrics[0].replicas, 21);
    ms_spec_cleanup(&s);
}

/* ---- step 1 and 4's early exits ---- */

/* Steps 5 and 6 do not run: the counts they report are the decision
 * itself and the rate reason stays DesiredWithinRange (mutants: deleting
 * finish_early's assignments). */
static void early_exits_report_the_decision_at_every_step(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 3, 10);
    ms_engine_memory_init(&mem);

    d = decide(&s, &mem, obs_at(0, 14, 70)); /* above max: 10 */
    assert_int_equal(d.reason, MS_REASON_AboveMaxReplicas);
    assert_int_equal(d.desired_replicas, 10);
    assert_int_equal(d.stabilized_value, 10);
    assert_int_equal(d.rate_limited_value, 10);
    assert_int_equal(d.rate_reason, MS_REASON_DesiredWithinRange);

    o = obs_at(15, 6, 0); /* the only metric missing: hold 6 */
    o.metrics[0].present = false;
    d = decide(&s, &mem, o);
    assert_int_equal(d.reason, MS_REASON_MetricsUnavailable);
    assert_int_equal(d.desired_replicas, 6);
    assert_int_equal(d.stabilized_value, 6);
    assert_int_equal(d.rate_limited_value, 6);
    assert_int_equal(d.rate_reason, MS_REASON_DesiredWithinRange);
    ms_spec_cleanup(&s);
}

/* ---- observations ---- */

/* "pods: <int >= 0>": zero reporting pods is a valid partial observation
 * (mutant: "count < 0" to "count < 1" in the input check). 0 of 10 pods,
 * target 50: r = 0 < 1, all 10 count busy at max(100, 50) = 100:
 * v' = 100, r' = 2: r and r' on opposite sides of 1, asks current 10. */
static void zero_reporting_pods_is_a_valid_observation(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    ms_engine_memory_init(&mem);
    o = obs_partial(10, 10, 0, 0);
    assert_int_equal(ms_engine_decide(&s, &mem, &o, &d), MS_OK);
    assert_true(d.metrics[0].partial);
    assert_true(d.metrics[0].partial_value == 100);
    assert_int_equal(d.metrics[0].replicas, 10);
    assert_int_equal(d.desired_replicas, 10);
    ms_spec_cleanup(&s);
}

/* ---- step 2: retry storms ---- */

/* A retry share counts only when the spec has a retryStorm guardrail and
 * the share is an observation (present and finite) (mutants: dropping
 * either condition of `storm`). Without a storm 140% of 70 on 4 asks
 * ceil(2 * 4) = 8; a share of 0.9 discounted would read 14, asking 1. */
static void retry_share_needs_the_guardrail_and_an_observation(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    o = obs_at(0, 4, 140);
    o.retry_share = (ms_sample_t){true, 0.9}; /* no retryStorm in the spec */
    d = decide_fresh(&s, o);
    assert_false(d.retry_storm);
    assert_true(d.metrics[0].effective.value == 140);
    assert_int_equal(d.metrics[0].replicas, 8);

    s.retry_storm.enabled = true; /* threshold 0.3 */
    o.retry_share = (ms_sample_t){true, INFINITY};
    d = decide_fresh(&s, o);
    assert_false(d.retry_storm);
    assert_int_equal(d.metrics[0].replicas, 8);
    o.retry_share = (ms_sample_t){false, 0.9}; /* not observed */
    d = decide_fresh(&s, o);
    assert_false(d.retry_storm);
    assert_int_equal(d.metrics[0].replicas, 8);
    o.retry_share = (ms_sample_t){true, 0.9}; /* and now a storm: 140 * 0.1 = 14 */
    d = decide_fresh(&s, o);
    assert_true(d.retry_storm);
    assert_true(fabs(d.metrics[0].effective.value - 14) < 1e-9);
    assert_int_equal(d.metrics[0].replicas, 1);
    ms_spec_cleanup(&s);
}

/* `saturated` is true when any metric's correction raised it, not only the
 * last one (mutant: "d.saturated || m->saturation_applied" to
 * "(0==1) || m->saturation_applied"). */
static void saturated_when_any_metric_was_corrected(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    spec_add_n(&s);
    s.saturation[0].enabled = true;
    o = obs_at(0, 4, 70);
    o.metrics[1] = (ms_sample_t){true, 70};
    o.saturation[0].admitted = (ms_sample_t){true, 100};
    o.saturation[0].rejected = (ms_sample_t){true, 100};
    d = decide_fresh(&s, o);
    assert_true(d.metrics[0].saturation_applied);
    assert_false(d.metrics[1].saturation_applied);
    assert_true(d.saturated);
    /* m: 70 * 2 = 140, asks 8; n: 70, inside the band, asks 4. */
    assert_int_equal(d.recommendation, 8);
    ms_spec_cleanup(&s);
}

/* ---- the memory: compaction of a full set of recommendations ----
 *
 * engine_memory.c's rules: when all 32 slots are live and a 33rd entry
 * comes, (1) entries no window can see are dropped, (2) an entry with a
 * newer one at least as large (for the down-limit's max) and a newer one
 * at most as large (for the up-limit's min) is dropped - an equal time
 * counts as newer only for the later index - and only then (3) the two
 * oldest are merged into one at the newer time holding the larger value
 * (when both windows still cover the older). Steps 1 and 2 are exact: the
 * limits stay those of the whole history. Every entry below is restored
 * with ms_engine_memory_add_recommendation at now = 100. */

typedef struct {
    double time;
    int32_t replicas;
} entry_t;

/* A history where every entry is needed: by time, lows rising from `low`
 * and highs falling from `high`, alternating (low first when low_first);
 * each low is below every newer entry, each high above. */
static size_t zigzag(entry_t *e, double t0, size_t n, int32_t low, int32_t high, bool low_first)
{
    for (size_t k = 0; k < n; k++) {
        bool is_low = (k % 2 == 0) == low_first;
        e[k].time = t0 + (double)k;
        e[k].replicas = is_low ? low + (int32_t)(k / 2) : high - (int32_t)(k / 2);
    }
    return n;
}

static void restore(ms_engine_memory_t *mem, const ms_spec_t *s, const entry_t *e, size_t n)
{
    ms_engine_memory_init(mem);
    for (size_t k = 0; k < n; k++)
        ms_engine_memory_add_recommendation(mem, s, 100, e[k].time, e[k].replicas);
}

/* Windows of `window` seconds both ways, default everything else. */
static void spec_windows(ms_spec_t *s, int32_t window)
{
    spec_one(s, MS_TARGET_UTILIZATION, 50, 1, 1000);
    s->scale_up.window_seconds = window;
    s->scale_down.window_seconds = window;
}

/* up-limit: current 1 raised to the smallest entry (recommendation 1000). */
static int32_t up_limit(const ms_engine_memory_t *mem, const ms_spec_t *s)
{
    return ms__stabilize(mem, s, 100, 1, 1000);
}

/* down-limit: current 1000 lowered to the largest entry (recommendation 1). */
static int32_t down_limit(const ms_engine_memory_t *mem, const ms_spec_t *s)
{
    return ms__stabilize(mem, s, 100, 1000, 1);
}

/* The 33 entries e restored with windows of `window` s both ways: the
 * memory keeps n, and its limits are up and down. */
static void check_compaction(int32_t window, const entry_t *e, size_t n, int32_t up, int32_t down)
{
    ms_spec_t s;
    ms_engine_memory_t mem;

    spec_windows(&s, window);
    restore(&mem, &s, e, 33);
    assert_int_equal(mem.nrecs, n);
    assert_int_equal(up_limit(&mem, &s), up);
    assert_int_equal(down_limit(&mem, &s), down);
    ms_spec_cleanup(&s);
}

/* Restored newest first, the 33 entries are in the slots out of time
 * order: the two oldest by time, (1, 1) and (2, 100), are merged into
 * (2, 100), so the up-limit becomes the next low, 2, and the down-limit
 * stays 100 (mutants: the insertion sort's loop bounds, comparisons,
 * shifts and early breaks). */
static void compaction_merges_the_oldest_by_time(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    entry_t e[33], rev[33];
    (void)state;
    spec_windows(&s, 1000);
    zigzag(e, 1, 33, 1, 100, true); /* (1,1) (2,100) (3,2) (4,99) ... (33,17) */
    for (size_t k = 0; k < 33; k++)
        rev[k] = e[32 - k];
    restore(&mem, &s, rev, 33);
    /* Exactly (2, 100), (3, 2), (4, 99) ... (33, 17), in time order. */
    assert_int_equal(mem.nrecs, 32);
    for (size_t k = 0; k < 32; k++) {
        assert_true(mem.rec_time[k] == e[k + 1].time);
        assert_int_equal(mem.rec_replicas[k], k == 0 ? 100 : e[k + 1].replicas);
    }
    assert_int_equal(up_limit(&mem, &s), 2);
    assert_int_equal(down_limit(&mem, &s), 100);
    ms_spec_cleanup(&s);
}

/* A restored entry older than both windows (t = -5000 with 1000 s windows
 * at now = 100) is seen by no query: a full memory drops it instead of
 * merging it into the oldest visible entry (which made the down-limit 500,
 * the invisible entry's value, instead of the history's 100). */
static void compaction_drops_a_restored_entry_no_window_sees(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    entry_t e[33];
    (void)state;
    spec_windows(&s, 1000);
    zigzag(e, 1, 32, 1, 100, true); /* (1,1) (2,100) (3,2) (4,99) ... */
    e[32] = (entry_t){-5000, 500};
    restore(&mem, &s, e, 33);
    assert_int_equal(mem.nrecs, 32);
    for (size_t k = 0; k < mem.nrecs; k++)
        assert_int_not_equal(mem.rec_replicas[k], 500);
    assert_int_equal(down_limit(&mem, &s), 100);
    assert_int_equal(up_limit(&mem, &s), 1);
    ms_spec_cleanup(&s);
}

/* (1, 50) has a newer entry above it (3, 100) and one below (2, 1): it is
 * dropped, nothing is merged, and the limits are exactly those of the
 * whole history: 1 and 100 (mutants: "newer" counting only equal times,
 * the domination loop's bounds and conditions). */
static void compaction_drops_an_entry_dominated_both_ways(void **state)
{
    entry_t e[33];
    (void)state;
    e[0] = (entry_t){1, 50};
    zigzag(e + 1, 2, 32, 1, 100, true); /* (2,1) (3,100) (4,2) (5,99) ... */
    check_compaction(1000, e, 32, 1, 100);

    /* The same with the high first: (2, 100) then (3, 1). */
    zigzag(e + 1, 2, 32, 1, 100, false);
    check_compaction(1000, e, 32, 1, 100);
}

/* The only entry at least as large as (1, 50) sits in slot 0, (33, 100);
 * (2, 1) is below it. It is still dropped: every slot may dominate. So are
 * the 15 highs (3, 49) ... (31, 35), each below (33, 100) and above a newer
 * low: 33 - 16 = 17 entries stay, with the exact limits 1 and 100. */
static void compaction_looks_at_every_slot(void **state)
{
    entry_t e[33];
    (void)state;
    e[0] = (entry_t){33, 100};
    e[1] = (entry_t){1, 50};
    zigzag(e + 2, 2, 31, 1, 49, true); /* (2,1) (3,49) (4,2) ... (32,16) */
    check_compaction(1000, e, 17, 1, 100);
}

/* Two equal entries at one time: the earlier index is dominated by the
 * later and dropped, but not both (mutants: the tie rule "equal time and
 * j > i" changed to "j != i", to "time > time", or to "time == 1").
 * Oldest pair: (1, 1) twice, then 31 needed entries; newest pair: 31
 * needed entries, then (32, 50) twice. Both fit exactly after the drop:
 * limits 1 and 199 (oldest pair), 1 and 100 (newest pair). */
static void compaction_drops_one_of_two_equal_entries(void **state)
{
    entry_t e[33];
    (void)state;
    e[0] = (entry_t){1, 1};
    e[1] = (entry_t){1, 1};
    zigzag(e + 2, 2, 31, 3, 199, false); /* (2,199) (3,3) (4,198) ... */
    check_compaction(1000, e, 32, 1, 199);

    zigzag(e, 1, 31, 1, 100, true); /* (1,1) (2,100) ... (31,16) */
    e[31] = (entry_t){32, 50};
    e[32] = (entry_t){32, 50};
    check_compaction(1000, e, 32, 1, 100);
}

/* Windows of 99 s at now = 100: an entry at time 1 sits exactly on both
 * cutoffs, which no window sees (time > now - window). (1, 500) is dropped
 * for that, leaving 32 entries and the exact limits 1 and 100; kept, it
 * would merge into (2, 500) and the down-limit would read 500 (mutants:
 * "time > cutoff" to ">=" and the cutoffs' signs). */
static void compaction_drops_an_entry_on_the_cutoff(void **state)
{
    entry_t e[33];
    (void)state;
    e[0] = (entry_t){1, 500};
    zigzag(e + 1, 2, 32, 1, 100, true);
    check_compaction(99, e, 32, 1, 100);
}

/* The entries (1, 1) ... (33, 33) are each below every newer one, so all
 * are needed for the up-limit (window 1000 s) and none is dominated. The
 * two oldest merge into one at time 2 holding the smaller, 1, only when no
 * scale-down window sees either (lowering an entry the down window covers
 * would bring a scale-down sooner), else the larger, 2. now = 100:
 *  - down window 98 s (cutoff 2): neither (1, 1) nor (2, 2) is seen, so
 *    (2, 1); up-limit 1, down-limit the largest seen, 33;
 *  - down window 99 s (cutoff 1, on which (1, 1) sits unseen): (2, 2) is
 *    seen, so (2, 2); up-limit 2, down-limit 33
 * (mutants: the merge's window tests, its min and max). */
static void compaction_merge_keeps_the_smaller_for_the_up_window_only(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    entry_t e[33];
    (void)state;
    for (size_t k = 0; k < 33; k++)
        e[k] = (entry_t){(double)(k + 1), (int32_t)(k + 1)};
    for (int32_t merged = 1; merged <= 2; merged++) {
        spec_windows(&s, 1000);
        s.scale_down.window_seconds = merged == 1 ? 98 : 99;
        restore(&mem, &s, e, 33);
        /* Exactly (2, merged), (3, 3), (4, 4) ... (33, 33). */
        assert_int_equal(mem.nrecs, 32);
        for (size_t k = 0; k < 32; k++) {
            assert_true(mem.rec_time[k] == (double)(k + 2));
            assert_int_equal(mem.rec_replicas[k], k == 0 ? merged : (int32_t)(k + 2));
        }
        assert_int_equal(up_limit(&mem, &s), merged);
        assert_int_equal(down_limit(&mem, &s), 33);
        ms_spec_cleanup(&s);
    }
}

/* ---- the memory: compaction of a full set of scale events ----
 *
 * When all 16 event slots are taken and another comes: events at or
 * before now - the longest period are dropped (exact), then two adjacent
 * same-direction events (by time) become one at the newer time with the
 * summed change (exact while both are inside the periods), and only if
 * the events strictly alternate is the oldest dropped. Default policies:
 * up Percent 100 and Pods 4 per 15 s (Max), down Percent 100 per 15 s. */

static void restore_events(ms_engine_memory_t *mem, const ms_spec_t *s, const entry_t *e, size_t n)
{
    ms_engine_memory_init(mem);
    for (size_t k = 0; k < n; k++)
        ms_engine_memory_add_event(mem, s, 100, e[k].time, e[k].replicas);
}

/* The events, in time order, are exactly want[0..n). */
static void assert_events(const ms_engine_memory_t *mem, const entry_t *want, size_t n)
{
    entry_t got[MS_ENGINE_MAX_EVENTS];

    assert_int_equal(mem->nevents, n);
    for (size_t k = 0; k < n; k++)
        got[k] = (entry_t){mem->event_time[k], mem->event_change[k]};
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && got[j - 1].time > got[j].time; j--) {
            entry_t x = got[j];
            got[j] = got[j - 1];
            got[j - 1] = x;
        }
    for (size_t k = 0; k < n; k++) {
        assert_true(got[k].time == want[k].time);
        assert_int_equal(got[k].replicas, want[k].replicas);
    }
}

/* The 17 events e restored at now = 100 under the default policies (the
 * last one finds all 16 slots taken): the memory keeps exactly want[0..16),
 * and the scale-up limit from 20 replicas (max 1000) is `limit`. */
static void check_event_compaction(const entry_t *e, const entry_t *want, int32_t limit)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_reason_t why;

    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 1000);
    restore_events(&mem, &s, e, 17);
    assert_events(&mem, want, 16);
    assert_int_equal(ms__apply_rate(&mem, &s, 100, 20, 1000, &why), limit);
    ms_spec_cleanup(&s);
}

/* (50, +1) is before every period's cutoff (100 - 15 = 85) and is dropped
 * first; the 16 events inside the period strictly alternate, so nothing
 * else changes: 9 added and 7 removed, period start 20 - 9 + 7 = 18, limit
 * max(ceil(18 * 2), 18 + 4) = 36 (mutants: the cutoff test; keeping (50,
 * +1) merges it into (86, +2) and the limit reads 34). */
static void event_compaction_drops_what_no_period_sees(void **state)
{
    entry_t e[17];
    (void)state;
    e[0] = (entry_t){50, 1};
    for (size_t k = 0; k < 15; k++) /* 86 +1, 87 -1, ... 100 +1 */
        e[k + 1] = (entry_t){86 + (double)k, k % 2 ? -1 : 1};
    e[16] = (entry_t){100.5, 1};
    check_event_compaction(e, e + 1, 36);
}

/* 16 events at 86, 86.5, ... 93.5 alternating +1/-1, but the last two both
 * +1: the only same-direction neighbours, merged into (93.5, +2). Then
 * (94, -1) is stored. Sums are unchanged: 9 added, 8 removed, start 19,
 * limit max(38, 23) = 38 (mutants: the merge loop's bounds and direction
 * test; dropping the oldest instead would give start 20, limit 40). */
static void event_compaction_merges_the_same_direction_at_the_end(void **state)
{
    entry_t e[17], want[16];
    (void)state;
    for (size_t k = 0; k < 16; k++)
        e[k] = (entry_t){86 + 0.5 * (double)k, (k % 2 && k != 15) ? -1 : 1};
    e[16] = (entry_t){94, -1};
    for (size_t k = 0; k < 14; k++)
        want[k] = e[k];
    want[14] = (entry_t){93.5, 2};
    want[15] = e[16];
    check_event_compaction(e, want, 38);
}

/* The same-direction pair in the middle: 86 +1, 86.5 -1, ... 89.5 -1
 * (k = 7), then 90 -1 (k = 8) and alternating again from there. (89.5, -1)
 * and (90, -1) become (90, -2); the 7 after shift down by one; (94, +1) is
 * stored. 9 added (4 + 4 + 1), 8 removed: start 19, limit 38. */
static void event_compaction_merges_the_same_direction_in_the_middle(void **state)
{
    entry_t e[17], want[16];
    (void)state;
    for (size_t k = 0; k < 16; k++)
        e[k] = (entry_t){86 + 0.5 * (double)k, ((k % 2) == (k < 8)) ? -1 : 1};
    e[16] = (entry_t){94, 1};
    for (size_t k = 0; k < 7; k++)
        want[k] = e[k];
    want[7] = (entry_t){90, -2};
    for (size_t k = 9; k < 16; k++)
        want[k - 1] = e[k];
    want[15] = e[16];
    check_event_compaction(e, want, 38);
}

/* Strictly alternating, all inside the period: the oldest, (86, +1), is
 * dropped to make room for (94, -1). Left: 7 added, 9 removed, start
 * 20 - 7 + 9 = 22, limit max(44, 26) = 44 (mutants: the drop's memmove,
 * the full-memory test of ms_engine_memory_add_event). */
static void event_compaction_drops_the_oldest_when_alternating(void **state)
{
    entry_t e[17];
    (void)state;
    for (size_t k = 0; k < 16; k++)
        e[k] = (entry_t){86 + 0.5 * (double)k, k % 2 ? -1 : 1};
    e[16] = (entry_t){94, -1};
    check_event_compaction(e, e + 1, 44);
}

/* ---- step 6: scale-down policies ---- */

/* A Pods policy takes away that many pods from the period start: 10 - 2 =
 * 8; as Percent 2 it would be trunc(10 * 0.98) = 9 (mutant: the Pods test
 * in scale_down_limit). */
static void scale_down_pods_policy_subtracts_pods(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 40);
    s.scale_down.window_seconds = 0;
    s.scale_down.policies[0] = (ms_policy_t){MS_POLICY_PODS, 2, 60};
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 10, 10)); /* asks 1 */
    assert_int_equal(d.desired_replicas, 8);
    assert_int_equal(d.reason, MS_REASON_ScaleDownLimit);
    ms_spec_cleanup(&s);
}

/* selectPolicy Min for scale-down is the smallest change, the largest
 * count: Pods 1 gives 9, Percent 50 gives trunc(5) = 5, Min takes 9, Max
 * takes 5 (mutants: the select test in scale_down_limit). */
static void scale_down_select_min_takes_the_smaller_change(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 100, 1, 40);
    s.scale_down.window_seconds = 0;
    s.scale_down.npolicies = 2;
    s.scale_down.policies[0] = (ms_policy_t){MS_POLICY_PODS, 1, 60};
    s.scale_down.policies[1] = (ms_policy_t){MS_POLICY_PERCENT, 50, 60};
    s.scale_down.select = MS_SELECT_MIN;
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 10, 10));
    assert_int_equal(d.desired_replicas, 9);
    s.scale_down.select = MS_SELECT_MAX;
    ms_engine_memory_init(&mem);
    d = decide(&s, &mem, obs_at(0, 10, 10));
    assert_int_equal(d.desired_replicas, 5);
    ms_spec_cleanup(&s);
}

/* ---- the explanation's buffer ---- */

/* snprintf's contract: the length the whole text needs, whatever the
 * buffer; NULL with 0 writes nothing; a short buffer is cut and
 * terminated, and no byte outside it is touched (mutants: the room left
 * once the text outgrows the buffer, the initial terminator). */
static void explanation_respects_the_buffer(void **state)
{
    ms_spec_t s;
    ms_decision_t d;
    char full[512], area[600];
    size_t need;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    d = decide_fresh(&s, obs_at(0, 4, 140)); /* asks 8 */
    need = ms_decision_explain(&s, &d, full, sizeof full);
    assert_int_equal(strlen(full), need);
    assert_true(need > 20 && need < 500);
    assert_int_equal(ms_decision_explain(&s, &d, NULL, 0), need);

    for (size_t len = 1; len <= 20; len += 9) { /* 1, 10, 19 */
        memset(area, 'X', sizeof area);
        assert_int_equal(ms_decision_explain(&s, &d, area + 8, len), need);
        assert_int_equal(strlen(area + 8), len - 1);
        assert_memory_equal(area + 8, full, len - 1);
        for (size_t k = 0; k < sizeof area; k++)
            if (k < 8 || k >= 8 + len)
                assert_int_equal(area[k], 'X');
    }
    ms_spec_cleanup(&s);
}

/* r = 52.5/50 = 1.05 > 1: the pods that did not report were counted idle,
 * and the message says so (mutant: "ratio < 1.0" to "< 1.1" there). */
static void explanation_says_idle_just_above_target(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    char buf[512];
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 50, 1, 40);
    o = obs_partial(10, 10, 52.5, 8);
    d = decide_fresh(&s, o);
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(
        strstr(buf, "m 52.5 (8 of 10 pods reported, 42 with the rest counted idle) asks 10"));
    ms_spec_cleanup(&s);
}

/* Every downstream is reported, also after the one that bound: "lb"
 * allows 8 + floor((0.7 * 20000 - 13000)/400) = 10 and binds; "db" has no
 * usage observed (mutant: a break after the bound one's phrase). */
static void explanation_reports_every_downstream(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    char buf[512];
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 100);
    s.ndownstreams = 2;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 400, .max_utilization = 0.7};
    s.downstreams[1] = (ms_downstream_spec_t){
        .name = "db", .per_replica = 10, .max_utilization = 0.5, .has_limit = true, .limit = 200};
    o = obs_at(0, 8, 140); /* asks 16 */
    o.downstreams[0].usage = (ms_sample_t){true, 13000};
    o.downstreams[0].limit = (ms_sample_t){true, 20000};
    d = decide_fresh(&s, o);
    assert_int_equal(d.desired_replicas, 10);
    ms_decision_explain(&s, &d, buf, sizeof buf);
    assert_non_null(strstr(buf, ", downstream lb allows only 10, downstream db not observed;"));
    ms_spec_cleanup(&s);
}

/* ---- quantities: the text quoted in an error ---- */

/* At most 32 bytes of the text are quoted, "..." only when some were left
 * out: 32 characters are quoted whole, 33 are cut (mutants: the 32s). */
static void quantity_errors_quote_32_bytes(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    double out;
    const char *t33 = "1234567890123456789012345678901xy"; /* 31 digits + "xy" */
    (void)state;
    assert_int_equal(strlen(t33), 33);
    assert_int_equal(ms_quantity_parse_n(t33, 32, &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_non_null(strstr(errbuf, "\"1234567890123456789012345678901x\" has"));
    assert_int_equal(ms_quantity_parse_n(t33, 33, &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_non_null(strstr(errbuf, "\"1234567890123456789012345678901x...\" has"));
}

/* An exponent's sign is '+' or '-' only: "1e*3" is no quantity (mutant:
 * "rest[j] == '+'" to "<= '+'", which would read it as 1e3). */
static void quantity_exponent_sign_is_plus_or_minus(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    double out = 0;
    (void)state;
    assert_int_equal(ms_quantity_parse("1e*3", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_int_equal(ms_quantity_parse("1e 3", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_int_equal(ms_quantity_parse("1e+3", &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == 1000);
}

/* The unknown suffix is quoted with at most 8 bytes (mutants: the 8s). */
static void quantity_errors_quote_8_bytes_of_suffix(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    double out;
    (void)state;
    assert_int_equal(ms_quantity_parse("1abcdefghijk", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_non_null(strstr(errbuf, "unknown suffix \"abcdefgh\" (want"));
    assert_int_equal(ms_quantity_parse("1abcdefg", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_non_null(strstr(errbuf, "unknown suffix \"abcdefg\" (want"));
}

/* A lone "e" after the number is an unknown suffix, not an exponent missing
 * its digits: "E" alone is exa, "e" alone is nothing (mutants: "rest_len > 1"
 * to ">= 1", "!= 1", "> 0", which report a malformed exponent instead). */
static void quantity_lone_e_is_an_unknown_suffix(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    double out = 0;
    (void)state;
    assert_int_equal(ms_quantity_parse("2e", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_non_null(strstr(errbuf, "unknown suffix \"e\""));
    assert_int_equal(ms_quantity_parse("2E", &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == 2e18);
}

/* ---- spec cleanup ---- */

/* Like free(NULL), cleaning up NULL does nothing; a spec cleaned up is all
 * zero (mutants: the NULL test of ms_spec_cleanup). */
static void spec_cleanup_takes_null_and_zeroes(void **state)
{
    ms_spec_t s, zero;
    (void)state;
    ms_spec_cleanup(NULL);
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    ms_spec_cleanup(&s);
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&s, &zero, sizeof s);
}

/* ms_spec_init's documented defaults: min 1, max 1, room for the most
 * metrics and downstreams (mutants: those assignments). */
static void spec_init_defaults(void **state)
{
    ms_spec_t s;
    (void)state;
    ms_spec_init(&s);
    assert_int_equal(s.min_replicas, 1);
    assert_int_equal(s.max_replicas, 1);
    assert_int_equal(s.metrics_cap, MS_MAX_METRICS);
    assert_int_equal(s.downstreams_cap, MS_MAX_DOWNSTREAMS);
    assert_int_equal(s.nmetrics, 0);
    ms_spec_cleanup(&s);
}

/* ms_spec_shrink cuts the lists to the entries in use (an empty list keeps
 * at most one), and the spec still decides and cleans up (mutants: the
 * sizes and tests of ms_spec_shrink). */
static void spec_shrink_cuts_to_what_is_used(void **state)
{
    ms_spec_t s;
    ms_observation_t o;
    ms_decision_t d;
    (void)state;
    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    spec_add_n(&s);
    ms_spec_shrink(&s);
    assert_int_equal(s.metrics_cap, 2);
    assert_true(s.downstreams_cap <= 1);
    o = obs_at(0, 4, 140);
    o.metrics[1] = (ms_sample_t){true, 35};
    d = decide_fresh(&s, o);
    assert_int_equal(d.recommendation, 8);
    ms_spec_cleanup(&s);

    spec_one(&s, MS_TARGET_UTILIZATION, 70, 1, 40);
    s.ndownstreams = 2;
    snprintf(s.downstreams[0].name, sizeof s.downstreams[0].name, "lb");
    snprintf(s.downstreams[1].name, sizeof s.downstreams[1].name, "db");
    ms_spec_shrink(&s);
    assert_int_equal(s.metrics_cap, 1);
    assert_int_equal(s.downstreams_cap, 2);
    assert_string_equal(s.downstreams[1].name, "db");
    ms_spec_cleanup(&s);
}

/* ms_spec_validate, each cross-field rule on a spec built by hand (the
 * JSON reader refuses most of these before validation, so only here are
 * they reached): the error and the path the message starts with. */
static void expect_invalid(ms_spec_t *s, bool offline, const char *starts)
{
    char errbuf[MS_ERRBUF_SIZE] = "";

    assert_int_equal(ms_spec_validate(s, offline, errbuf, sizeof errbuf), MS_ERR_INVALID);
    if (strncmp(errbuf, starts, strlen(starts)) != 0)
        fail_msg("\"%s\" does not start with \"%s\"", errbuf, starts);
    ms_spec_cleanup(s);
}

static void expect_valid(ms_spec_t *s, bool offline)
{
    char errbuf[MS_ERRBUF_SIZE] = "";

    assert_int_equal(ms_spec_validate(s, offline, errbuf, sizeof errbuf), MS_OK);
    ms_spec_cleanup(s);
}

static void online_spec(ms_spec_t *s)
{
    spec_one(s, MS_TARGET_UTILIZATION, 70, 2, 10);
    s->target_api_version = strdup("apps/v1");
    s->target_kind = strdup("Deployment");
    s->target_name = strdup("api");
    s->metrics[0].query = strdup("up");
}

static void spec_validate_checks_every_rule(void **state)
{
    ms_spec_t s;
    (void)state;

    online_spec(&s);
    expect_valid(&s, false);

    online_spec(&s);
    s.min_replicas = 0;
    expect_invalid(&s, true, "spec.minReplicas: must be at least 1");
    online_spec(&s);
    s.max_replicas = 1; /* below min 2; equal is fine: */
    expect_invalid(&s, true, "spec.maxReplicas: 1 is less than minReplicas 2");
    online_spec(&s);
    s.max_replicas = 2;
    expect_valid(&s, false);
    online_spec(&s);
    s.nmetrics = 0;
    expect_invalid(&s, true, "spec.metrics: at least one metric is required");

    online_spec(&s);
    free(s.target_kind);
    s.target_kind = NULL;
    expect_invalid(&s, false, "spec.scaleTargetRef:");
    online_spec(&s);
    free(s.target_kind);
    s.target_kind = NULL; /* offline: no target needed */
    expect_valid(&s, true);

    online_spec(&s);
    s.nmetrics = 2;
    s.metrics[1] = s.metrics[0];
    s.metrics[1].query = strdup("up");
    expect_invalid(&s, true, "spec.metrics[1].name: duplicate metric name \"m\"");
    online_spec(&s);
    free(s.metrics[0].query);
    s.metrics[0].query = NULL;
    expect_invalid(&s, false, "spec.metrics[0].prometheus.query: required");
    online_spec(&s);
    s.metrics[0].source = MS_SOURCE_SIDECAR_CPU;
    expect_invalid(&s, false, "spec.metrics[0].sidecarCPU.container: required");
    online_spec(&s);
    s.metrics[0].source = MS_SOURCE_SIDECAR_CONCURRENCY;
    expect_invalid(&s, false, "spec.metrics[0].sidecarConcurrency.proxy: required");

    online_spec(&s);
    s.ndownstreams = 2;
    s.downstreams[0] = (ms_downstream_spec_t){
        .name = "lb", .has_limit = true, .limit = 10, .per_replica = 1, .max_utilization = 0.7};
    s.downstreams[0].usage_query = strdup("u");
    s.downstreams[1] = (ms_downstream_spec_t){
        .name = "lb", .has_limit = true, .limit = 10, .per_replica = 1, .max_utilization = 0.7};
    expect_invalid(&s, true, "spec.guardrails.downstream[1].name: duplicate name \"lb\"");
    online_spec(&s);
    s.ndownstreams = 1;
    s.downstreams[0] =
        (ms_downstream_spec_t){.name = "lb", .per_replica = 1, .max_utilization = 0.7};
    s.downstreams[0].usage_query = strdup("u");
    expect_invalid(&s, false,
                   "spec.guardrails.downstream[0]: one of limit or limitQuery is required");
    online_spec(&s);
    s.ndownstreams = 1;
    s.downstreams[0] = (ms_downstream_spec_t){
        .name = "lb", .has_limit = true, .limit = 10, .per_replica = 1, .max_utilization = 0.7};
    expect_invalid(&s, false, "spec.guardrails.downstream[0].usageQuery: required");
    online_spec(&s);
    s.retry_storm.enabled = true;
    expect_invalid(&s, false, "spec.guardrails.retryStorm.retryShareQuery: required");
    online_spec(&s);
    s.saturation[0].enabled = true;
    s.saturation[0].rejected_query = strdup("r");
    expect_invalid(&s, false, "spec.guardrails.saturation: metric \"m\" needs rejectedQuery");
    online_spec(&s);
    s.saturation[0].enabled = true; /* offline, queries may be omitted */
    expect_valid(&s, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reason_count_itself_is_unknown),
        cmocka_unit_test(a_negative_current_count_is_refused),
        cmocka_unit_test(saturation_needs_a_spec_entry),
        cmocka_unit_test(saturation_counts_fractional_rejection_rates),
        cmocka_unit_test(saturation_ignores_a_negative_rejection_rate),
        cmocka_unit_test(saturation_overflow_keeps_the_sign),
        cmocka_unit_test(a_negative_reading_asks_zero),
        cmocka_unit_test(partial_average_value_just_above_target_fills_idle),
        cmocka_unit_test(partial_utilization_just_above_target_fills_idle),
        cmocka_unit_test(partial_same_side_above_target_scales_without_tolerance),
        cmocka_unit_test(early_exits_report_the_decision_at_every_step),
        cmocka_unit_test(zero_reporting_pods_is_a_valid_observation),
        cmocka_unit_test(retry_share_needs_the_guardrail_and_an_observation),
        cmocka_unit_test(saturated_when_any_metric_was_corrected),
        cmocka_unit_test(compaction_merges_the_oldest_by_time),
        cmocka_unit_test(compaction_drops_a_restored_entry_no_window_sees),
        cmocka_unit_test(compaction_drops_an_entry_dominated_both_ways),
        cmocka_unit_test(compaction_looks_at_every_slot),
        cmocka_unit_test(compaction_drops_one_of_two_equal_entries),
        cmocka_unit_test(compaction_drops_an_entry_on_the_cutoff),
        cmocka_unit_test(compaction_merge_keeps_the_smaller_for_the_up_window_only),
        cmocka_unit_test(event_compaction_drops_what_no_period_sees),
        cmocka_unit_test(event_compaction_merges_the_same_direction_at_the_end),
        cmocka_unit_test(event_compaction_merges_the_same_direction_in_the_middle),
        cmocka_unit_test(event_compaction_drops_the_oldest_when_alternating),
        cmocka_unit_test(scale_down_pods_policy_subtracts_pods),
        cmocka_unit_test(scale_down_select_min_takes_the_smaller_change),
        cmocka_unit_test(explanation_respects_the_buffer),
        cmocka_unit_test(explanation_says_idle_just_above_target),
        cmocka_unit_test(explanation_reports_every_downstream),
        cmocka_unit_test(quantity_errors_quote_32_bytes),
        cmocka_unit_test(quantity_exponent_sign_is_plus_or_minus),
        cmocka_unit_test(quantity_errors_quote_8_bytes_of_suffix),
        cmocka_unit_test(quantity_lone_e_is_an_unknown_suffix),
        cmocka_unit_test(spec_cleanup_takes_null_and_zeroes),
        cmocka_unit_test(spec_init_defaults),
        cmocka_unit_test(spec_shrink_cuts_to_what_is_used),
        cmocka_unit_test(spec_validate_checks_every_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
