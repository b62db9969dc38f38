/*
 * test_engine_memory.c - the engine's memory stays bounded, mirrors HPA's
 * slot reuse while it fits, and when it must compact it stabilizes at least
 * as much as an unbounded memory would (never scales down earlier, never
 * lets a rate limit loosen in the events' own direction).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine_internal.h"

/* An unbounded reference memory, as HPA keeps it. */
#define REF_MAX 20000
typedef struct {
    double time[REF_MAX];
    int32_t value[REF_MAX];
    size_t n;
} ref_t;

static int32_t ref_stabilize(const ref_t *r, const ms_spec_t *s, double now, int32_t current,
                             int32_t rec)
{
    int32_t up = rec, down = rec, result = current;

    for (size_t i = 0; i < r->n; i++) {
        if (r->time[i] > now - s->scale_up.window_seconds && r->value[i] < up)
            up = r->value[i];
        if (r->time[i] > now - s->scale_down.window_seconds && r->value[i] > down)
            down = r->value[i];
    }
    if (result < up)
        result = up;
    if (result > down)
        result = down;
    return result;
}

static int64_t ref_added(const ref_t *events, double now, int32_t period)
{
    int64_t sum = 0;

    for (size_t i = 0; i < events->n; i++)
        if (events->time[i] > now - period && events->value[i] > 0)
            sum += events->value[i];
    return sum;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static void hpa_reuse_keeps_a_15s_history_small(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    ms_spec_init(&s);
    ms_engine_memory_init(&mem);
    for (int t = 0; t < 86400; t += 15) {
        ms__memory_record(&mem, &s, t, (int32_t)(rnd() % 50));
        assert_true(mem.nrecs <= 22); /* 300 s / 15 s + the slot being replaced */
    }
    ms_spec_cleanup(&s);
}

static void identical_entries_compact_exactly(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ref_t *ref = calloc(1, sizeof *ref);
    (void)state;
    assert_non_null(ref);
    ms_spec_init(&s);
    s.scale_down.window_seconds = 3600; /* an hour at 1 s: HPA would keep 3600 */
    ms_engine_memory_init(&mem);
    for (int t = 0; t < 7200; t++) {
        int32_t v = (t / 600) % 2 ? 7 : 12; /* long flat runs */
        int32_t want = ref_stabilize(ref, &s, t, 10, v);
        int32_t got = ms__stabilize(&mem, &s, t, 10, v);

        assert_int_equal(got, want);
        ms__memory_record(&mem, &s, t, v);
        ref->time[ref->n] = t;
        ref->value[ref->n++] = v;
        assert_true(mem.nrecs <= MS_ENGINE_MAX_RECOMMENDATIONS);
    }
    free(ref);
    ms_spec_cleanup(&s);
}

static void lossy_compaction_only_delays_scale_down(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ref_t *ref = calloc(1, sizeof *ref);
    size_t differed = 0;
    (void)state;
    assert_non_null(ref);
    ms_spec_init(&s);
    s.scale_down.window_seconds = 3600;
    ms_engine_memory_init(&mem);
    /* A slow decline with noise: every second a new distinct value that the
     * down-limit must remember, far more than the slots hold. The current
     * count sits above them all, so the result is the down-limit itself. */
    int32_t v = 100000;
    for (int t = 0; t < 20000; t++) {
        int32_t current = 200000, want, got;

        v -= (int32_t)(rnd() % 7) - 1;
        want = ref_stabilize(ref, &s, t, current, v);
        got = ms__stabilize(&mem, &s, t, current, v);
        assert_true(got >= want); /* holds at least as many replicas */
        differed += got != want;
        ms__memory_record(&mem, &s, t, v);
        ref->time[ref->n] = t;
        ref->value[ref->n++] = v;
        assert_true(mem.nrecs <= MS_ENGINE_MAX_RECOMMENDATIONS);
    }
    /* The walk really exceeded the slots, or this test proves nothing. */
    assert_true(differed > 0);
    free(ref);
    ms_spec_cleanup(&s);
}

static void event_compaction_keeps_scale_up_at_least_as_tight(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ref_t *events = calloc(1, sizeof *events);
    (void)state;
    assert_non_null(events);
    ms_spec_init(&s);
    s.scale_up.npolicies = 1;
    s.scale_up.policies[0] = (ms_policy_t){MS_POLICY_PODS, 4, 1800};
    ms_engine_memory_init(&mem);
    for (int t = 0; t < 5000; t++) {
        int32_t change = (int32_t)(rnd() % 3) + 1;
        int64_t want = ref_added(events, t, 1800);
        int64_t got = 0;

        for (size_t i = 0; i < mem.nevents; i++)
            if (mem.event_time[i] > t - 1800 && mem.event_change[i] > 0)
                got += mem.event_change[i];
        assert_true(got >= want); /* period start is never higher than truth */
        ms__memory_store_event(&mem, &s, t, change);
        events->time[events->n] = t;
        events->value[events->n++] = change;
        assert_true(mem.nevents <= MS_ENGINE_MAX_EVENTS);
    }
    free(events);
    ms_spec_cleanup(&s);
}

static void outdated_events_are_reused_as_hpa_does(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    ms_spec_init(&s); /* 15 s policies */
    ms_engine_memory_init(&mem);
    ms__memory_store_event(&mem, &s, 0, 4);
    ms__memory_store_event(&mem, &s, 10, 2); /* 0 is not yet outdated */
    assert_int_equal(mem.nevents, 2);
    ms__memory_store_event(&mem, &s, 20, 3); /* 0 < 20 - 15: reuse slot 0 */
    assert_int_equal(mem.nevents, 2);
    assert_true(mem.event_time[0] == 20);
    assert_int_equal(mem.event_change[0], 3);
    ms__memory_store_event(&mem, &s, 30, -5); /* a down event never reuses an up slot */
    assert_int_equal(mem.nevents, 3);
    ms_spec_cleanup(&s);
}

/* HPA's rate memory (horizontal.go: storeScaleEvent, getReplicasChangePerPeriod,
 * calculateScaleDownLimitWithBehaviors): each policy counts the events of both
 * directions newer than its period, and a new event replaces the last event of
 * its own direction older than that direction's longest period, even when the
 * other direction's longer policy could still count it. Up: Pods 4 per 15 s;
 * down: Pods 4 per 120 s (tests/scenarios/rate-memory-both-directions.json). */
static void scale_events_follow_hpa_per_direction(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ms_reason_t why;
    (void)state;
    ms_spec_init(&s);
    s.scale_up.policies[0] = (ms_policy_t){MS_POLICY_PODS, 4, 15};
    s.scale_up.npolicies = 1;
    s.scale_down.policies[0] = (ms_policy_t){MS_POLICY_PODS, 4, 120};
    s.scale_down.npolicies = 1;

    /* A lone scale-up stays while the 120 s policy can count it: at t=100,
     * from 9, periodStart = 9 - 4 = 5 and the limit 1 lets 9 go to 1. */
    ms_engine_memory_init(&mem);
    ms__memory_store_event(&mem, &s, 0, 4);
    assert_int_equal(ms__apply_rate(&mem, &s, 100, 9, 1, &why), 1);
    assert_int_equal(why, MS_REASON_DesiredWithinRange);
    /* at t=120 it is out of the period: start 9, limit 5 */
    assert_int_equal(ms__apply_rate(&mem, &s, 120, 9, 1, &why), 5);
    assert_int_equal(why, MS_REASON_ScaleDownLimit);

    /* A run of scale-ups 5 -> 9 -> 13 -> 17: the one at t=30 replaces the
     * event of t=0 (0 < 30 - 15), so at t=45 the 120 s policy counts +8, not
     * +12: periodStart 17 - 8 = 9, limit 5 (keeping the t=0 event would give
     * 1, counting no scale-up 13). */
    ms_engine_memory_init(&mem);
    ms__memory_store_event(&mem, &s, 0, 4);
    ms__memory_store_event(&mem, &s, 15, 4);
    ms__memory_store_event(&mem, &s, 30, 4);
    assert_int_equal(mem.nevents, 2);
    assert_int_equal(ms__apply_rate(&mem, &s, 45, 17, 1, &why), 5);
    assert_int_equal(why, MS_REASON_ScaleDownLimit);
    /* the -12 joins them; at t=60 the count at the period's start is
     * 5 - 8 + 12 = 9: limit 5, the current count, so 5 holds */
    ms__memory_store_event(&mem, &s, 45, -12);
    assert_int_equal(ms__apply_rate(&mem, &s, 60, 5, 1, &why), 5);
    assert_int_equal(why, MS_REASON_ScaleDownLimit);
    ms_spec_cleanup(&s);
}

static void restored_state_keeps_its_times(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    (void)state;
    ms_spec_init(&s);
    ms_engine_memory_init(&mem);
    for (int i = 0; i < 40; i++)
        ms_engine_memory_add_recommendation(&mem, &s, 100, 100 - i, 5);
    assert_true(mem.nrecs <= MS_ENGINE_MAX_RECOMMENDATIONS);
    /* identical values: one entry carries them all, at the newest time */
    assert_int_equal(ms__stabilize(&mem, &s, 399, 10, 1), 5);
    assert_int_equal(ms__stabilize(&mem, &s, 400, 10, 1), 1);
    ms_spec_cleanup(&s);
}

static void memory_is_small(void **state)
{
    (void)state;
    assert_true(sizeof(ms_engine_memory_t) <= 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hpa_reuse_keeps_a_15s_history_small),
        cmocka_unit_test(identical_entries_compact_exactly),
        cmocka_unit_test(lossy_compaction_only_delays_scale_down),
        cmocka_unit_test(event_compaction_keeps_scale_up_at_least_as_tight),
        cmocka_unit_test(outdated_events_are_reused_as_hpa_does),
        cmocka_unit_test(scale_events_follow_hpa_per_direction),
        cmocka_unit_test(restored_state_keeps_its_times),
        cmocka_unit_test(memory_is_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
