/*
 * conflict.h - does another autoscaler target the same workload?
 *
 * A live MeshAutoscaler refuses to write when a HorizontalPodAutoscaler, or
 * another live MeshAutoscaler, scales the same object: two controllers
 * writing one replica count fight. Objects are compared by namespace, API
 * group (the version is ignored: apps/v1 and apps/v1beta2 name the same
 * Deployment), kind and name. A MeshAutoscaler with spec.dryRun never
 * conflicts: running beside the incumbent is the migration path.
 *
 * Pure and reentrant; every string and tree is borrowed for the call.
 */
#ifndef MESHSCALER_CONFLICT_H
#define MESHSCALER_CONFLICT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct {
    const char *namespace_;
    const char *api_version; /* scaleTargetRef.apiVersion */
    const char *kind;
    const char *name;
} ms_conflict_target_t;

/* True when both refer to the same workload (group, kind, name, namespace). */
bool ms_conflict_same_target(const ms_conflict_target_t *a, const ms_conflict_target_t *b);

/* Read the scaleTargetRef of an HPA or MeshAutoscaler object into *out
 * (strings borrowed from obj). False when the object lacks one. */
bool ms_conflict_target_of(const cJSON *obj, ms_conflict_target_t *out);

/* True when `other` (an autoscaling/v2 HPA when is_hpa, else a
 * MeshAutoscaler) conflicts with `self`, the MeshAutoscaler self_key
 * ("ns/name") targeting *target. A MeshAutoscaler never conflicts with
 * itself or with one in spec.dryRun. On true, who[whocap] names the other
 * ("HorizontalPodAutoscaler shop/api"). */
bool ms_conflict_check(const char *self_key, const ms_conflict_target_t *target, const cJSON *other,
                       bool is_hpa, char *who, size_t whocap);

#endif
