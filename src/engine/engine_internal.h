/*
 * engine_internal.h - pieces of the engine shared between its files, not
 * part of the public API (the ms__ prefix, as libuv's uv__).
 */
#ifndef MESHSCALER_ENGINE_INTERNAL_H
#define MESHSCALER_ENGINE_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "meshscaler/engine.h"

/* Saturating conversions: replica arithmetic never overflows int32. */
static inline int32_t ms__clamp_i64(int64_t v)
{
    if (v > INT32_MAX)
        return INT32_MAX;
    if (v < INT32_MIN)
        return INT32_MIN;
    return (int32_t)v;
}

static inline int32_t ms__clamp_double(double v)
{
    if (isnan(v))
        return 0;
    if (v >= (double)INT32_MAX)
        return INT32_MAX;
    if (v <= (double)INT32_MIN)
        return INT32_MIN;
    return (int32_t)v;
}

/* Record this tick's recommendation as HPA does (reuse a slot older than
 * both windows, else append), compacting when every slot is live. */
void ms__memory_record(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                       int32_t replicas);

/* Store a scale event of `change` replicas at now (HPA storeScaleEvent). */
void ms__memory_store_event(ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                            int32_t change);

/* HPA stabilizeRecommendationWithBehaviors, without the recording. */
int32_t ms__stabilize(const ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                      int32_t current, int32_t recommendation);

/* HPA convertDesiredReplicasWithBehaviorRate; sets *reason. */
int32_t ms__apply_rate(const ms_engine_memory_t *mem, const ms_spec_t *spec, double now,
                       int32_t current, int32_t desired, ms_reason_t *reason);

#endif
