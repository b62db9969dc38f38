/*
 * conflict.c - two autoscalers on one workload.
 */
#include <stdio.h>
#include <string.h>

#include "meshscaler/conflict.h"

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Length of the group part of an apiVersion ("apps/v1" -> 4, "v1" -> 0). */
static size_t group_len(const char *api_version)
{
    const char *slash = strchr(api_version, '/');

    return slash ? (size_t)(slash - api_version) : 0;
}

static bool eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

bool ms_conflict_same_target(const ms_conflict_target_t *a, const ms_conflict_target_t *b)
{
    size_t ga, gb;

    if (!eq(a->namespace_, b->namespace_) || !eq(a->kind, b->kind) || !eq(a->name, b->name))
        return false;
    if (a->api_version == NULL || b->api_version == NULL)
        return false;
    ga = group_len(a->api_version);
    gb = group_len(b->api_version);
    return ga == gb && strncmp(a->api_version, b->api_version, ga) == 0;
}

bool ms_conflict_target_of(const cJSON *obj, ms_conflict_target_t *out)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(spec, "scaleTargetRef");

    memset(out, 0, sizeof *out);
    out->namespace_ = str(meta, "namespace");
    out->api_version = str(ref, "apiVersion");
    out->kind = str(ref, "kind");
    out->name = str(ref, "name");
    return out->namespace_ && out->api_version && out->kind && out->name;
}

bool ms_conflict_check(const char *self_key, const ms_conflict_target_t *target, const cJSON *other,
                       bool is_hpa, char *who, size_t whocap)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(other, "metadata");
    const char *ns = str(meta, "namespace"), *name = str(meta, "name");
    ms_conflict_target_t t;
    char key[512];

    if (ns == NULL || name == NULL || !ms_conflict_target_of(other, &t))
        return false;
    snprintf(key, sizeof key, "%s/%s", ns, name);
    if (!is_hpa) {
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(other, "spec");

        if (eq(key, self_key) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "dryRun")))
            return false;
    }
    if (!ms_conflict_same_target(target, &t))
        return false;
    if (whocap > 0)
        snprintf(who, whocap, "%s %s", is_hpa ? "HorizontalPodAutoscaler" : "MeshAutoscaler", key);
    return true;
}
