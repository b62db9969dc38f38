/*
 * pause.h - the pausing annotations of a MeshAutoscaler (KEDA's model):
 *
 *   autoscaling.meshscaler.io/paused: "true"          decide and report, never write the target
 *   autoscaling.meshscaler.io/paused-replicas: "N"    hold the target at N
 *   autoscaling.meshscaler.io/paused-scale-in: "true"  no scale-in
 *   autoscaling.meshscaler.io/paused-scale-out: "true" no scale-out
 *
 * and one opt-out of a rule, read with them because it is the same kind of
 * per-object switch an operator sets by hand:
 *
 *   autoscaling.meshscaler.io/starting-pod-reservation: "false"
 *       SPEC §2 step 7 reserves nothing for this object's starting pods
 *
 * Pure and reentrant; the annotations tree is borrowed for the call.
 */
#ifndef MESHSCALER_PAUSE_H
#define MESHSCALER_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"

#define MS_PAUSE_ANNOTATION "autoscaling.meshscaler.io/paused"
#define MS_PAUSE_REPLICAS_ANNOTATION "autoscaling.meshscaler.io/paused-replicas"
#define MS_PAUSE_SCALE_IN_ANNOTATION "autoscaling.meshscaler.io/paused-scale-in"
#define MS_PAUSE_SCALE_OUT_ANNOTATION "autoscaling.meshscaler.io/paused-scale-out"
#define MS_RESERVATION_ANNOTATION "autoscaling.meshscaler.io/starting-pod-reservation"

typedef struct {
    bool paused;       /* never write the target */
    bool has_replicas; /* hold the target at `replicas` */
    int32_t replicas;
    bool no_scale_in;
    bool no_scale_out;
    bool no_reservation; /* starting-pod-reservation: "false" */
} ms_pause_t;

/* What the pause does to one decision. */
typedef enum {
    MS_PAUSE_NONE = 0, /* desired unchanged, write allowed */
    MS_PAUSE_NO_WRITE, /* paused: report only */
    MS_PAUSE_HELD,     /* paused-replicas: desired forced to N */
    MS_PAUSE_SCALE_IN, /* a scale-in was cancelled */
    MS_PAUSE_SCALE_OUT /* a scale-out was cancelled */
} ms_pause_effect_t;

/* Read metadata.annotations (may be NULL) into *out. Values "true"/"false"
 * (any case) for the flags; paused-replicas a whole number 0..1e9. On an
 * unreadable value returns MS_ERR_INVALID with "annotation: reason" in
 * errbuf; *out then holds the annotations that were readable (an unreadable
 * one counts as absent, except that a bad "paused" value counts as paused:
 * doubt never writes, and a bad starting-pod-reservation value keeps the
 * reservation: doubt reserves). */
ms_err_t ms_pause_parse(const cJSON *annotations, ms_pause_t *out, char *errbuf, size_t errlen);

/* Apply *p to a decision of current -> *desired; *desired may be lowered or
 * raised. Returns the effect; MS_PAUSE_NO_WRITE leaves *desired as decided. */
ms_pause_effect_t ms_pause_apply(const ms_pause_t *p, int32_t current, int32_t *desired);

/* One sentence about the effect ("" for MS_PAUSE_NONE); static. */
const char *ms_pause_effect_sentence(ms_pause_effect_t e);

#endif
