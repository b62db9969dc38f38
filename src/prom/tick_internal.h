/*
 * tick_internal.h - the seam unit tests use to run a tick without a
 * network: the tick hands its planned queries to a runner, which fills each
 * query's result (the real runner is ms_prom_run on a client).
 */
#ifndef MESHSCALER_PROM_TICK_INTERNAL_H
#define MESHSCALER_PROM_TICK_INTERNAL_H

#include "meshscaler/prom_sources.h"

/* Fill queries[i].result for every i < n; return MS_OK unless the batch
 * failed as a whole. */
typedef ms_err_t (*ms__prom_runner_fn)(void *ctx, ms_prom_query_t *queries, size_t n);

ms_err_t ms__prom_tick_run_with(ms_prom_tick_t *tick, ms__prom_runner_fn run, void *ctx,
                                const ms_prom_object_t *objs, size_t n,
                                ms_prom_object_obs_t *out);

#endif
