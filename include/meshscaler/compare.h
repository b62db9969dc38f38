/*
 * compare.h - a MeshAutoscaler in shadow mode beside the HPA that scales the
 * same target: how often and by how much their desired counts differ, and
 * which of the two moves up first.
 *
 * "First up": when one of them raises its desired count while the other has
 * not, a race opens; it closes when the other follows (the lead is the time
 * between) or after MS_COMPARE_RACE_SECONDS without it (the first wins, the
 * lead is that long). Both rising in the same sync is a tie: nobody wins.
 *
 * Pure: plain data, the clock passed in.
 */
#ifndef MESHSCALER_COMPARE_H
#define MESHSCALER_COMPARE_H

#include <stdint.h>

#define MS_COMPARE_RACE_SECONDS 600

typedef enum { MS_COMPARE_NOBODY = 0, MS_COMPARE_MESHSCALER, MS_COMPARE_HPA } ms_compare_side_t;

typedef struct {
    uint64_t samples;                     /* syncs compared */
    uint64_t differing;                   /* of them, with different desired counts */
    double abs_sum;                       /* sum of |meshscaler - HPA| */
    int32_t max_difference;               /* meshscaler - HPA of the largest absolute difference */
    uint32_t meshscaler_first, hpa_first; /* races won */
    double last_lead; /* seconds the last winner led by; < 0: no race closed yet */
    /* the race in progress */
    ms_compare_side_t leader;
    double race_start;
    int32_t prev_meshscaler, prev_hpa; /* < 0: no sample yet */
} ms_compare_t;

void ms_compare_init(ms_compare_t *c);

/* One sync at wall time now (seconds, not decreasing): meshscaler's desired
 * count and the HPA's status.desiredReplicas. */
void ms_compare_add(ms_compare_t *c, double now, int32_t meshscaler, int32_t hpa);

/* The mean absolute difference (0 before any sample). */
double ms_compare_mean_difference(const ms_compare_t *c);

#endif
