/*
 * engine_fixtures.h - the builders the engine's unit tests share
 * (test_engine.c, test_engine_mutants.c): a one-metric spec, observations
 * of it, and decisions that must succeed. Include after <cmocka.h>.
 */
#ifndef MESHSCALER_TEST_ENGINE_FIXTURES_H
#define MESHSCALER_TEST_ENGINE_FIXTURES_H

#include <stdio.h>

#include "meshscaler/engine.h"

/* A spec with one metric "m" and the default behavior; ms_spec_cleanup
 * frees it. */
static inline void spec_one(ms_spec_t *s, ms_target_type_t type, double target, int32_t min,
                            int32_t max)
{
    ms_spec_init(s);
    s->min_replicas = min;
    s->max_replicas = max;
    s->nmetrics = 1;
    snprintf(s->metrics[0].name, sizeof s->metrics[0].name, "m");
    s->metrics[0].source = MS_SOURCE_PROMETHEUS;
    s->metrics[0].target_type = type;
    s->metrics[0].target = target;
}

/* A second metric "n", with the first one's source and target. */
static inline void spec_add_n(ms_spec_t *s)
{
    s->nmetrics = 2;
    s->metrics[1] = s->metrics[0];
    snprintf(s->metrics[1].name, sizeof s->metrics[1].name, "n");
}

/* Metric "m" reads value at now, with current replicas, all ready. */
static inline ms_observation_t obs_at(double now, int32_t current, double value)
{
    ms_observation_t o;

    ms_observation_init(&o);
    o.now = now;
    o.current_replicas = current;
    o.ready_replicas = current;
    o.metrics[0] = (ms_sample_t){true, value};
    return o;
}

/* At now 0, metric "m" reads value from `pods` of `ready` pods. */
static inline ms_observation_t obs_partial(int32_t current, int32_t ready, double value,
                                           int32_t pods)
{
    ms_observation_t o = obs_at(0, current, value);

    o.ready_replicas = ready;
    o.metric_pods[0] = (ms_pods_t){true, pods};
    return o;
}

/* One decision, which must succeed. */
static inline ms_decision_t decide(const ms_spec_t *s, ms_engine_memory_t *mem, ms_observation_t o)
{
    ms_decision_t d;

    assert_int_equal(ms_engine_decide(s, mem, &o, &d), MS_OK);
    return d;
}

/* One decision on an empty memory. */
static inline ms_decision_t decide_fresh(const ms_spec_t *s, ms_observation_t o)
{
    ms_engine_memory_t mem;

    ms_engine_memory_init(&mem);
    return decide(s, &mem, o);
}

#endif
