/*
 * scale.c - the subresources a controller writes: GET and conditional PUT of
 * /scale, and the merge patch of /status. Targets are found through
 * discovery (discovery.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

static ms_err_t target_path(ms_kube_client_t *c, const ms_kube_ref_t *ref, const char *sub,
                            bool need_scale, char *path, size_t cap, ms_kube_error_t *kerr)
{
    ms_kube_resource_t r;
    ms_err_t err;

    if ((err = ms_kube_discover(c, ref->api_version, ref->kind, &r, kerr)) != MS_OK)
        return err;
    if ((need_scale && !r.has_scale) ||
        (!need_scale && strcmp(sub, "status") == 0 && !r.has_status)) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_INVALID,
                            "%s %s has no %s subresource", ref->api_version, ref->kind, sub);
        return kerr->err;
    }
    err = ms_kube_path(path, cap, r.api_version, r.namespaced ? ref->namespace_ : NULL, r.resource,
                       ref->name, sub);
    if (err != MS_OK)
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, err,
                            "%s %s: name or namespace cannot be used in a path", ref->kind,
                            ref->name ? ref->name : "(null)");
    return err;
}

static ms_err_t parse_scale(const cJSON *doc, ms_kube_scale_t *out, const char *path,
                            ms_kube_error_t *kerr)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(md, "uid");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    const cJSON *rep = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
    const cJSON *srep = cJSON_GetObjectItemCaseSensitive(status, "replicas");
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(status, "selector");

    memset(out, 0, sizeof *out);
    /* spec.replicas is omitted when 0 (omitempty). */
    if ((rep != NULL &&
         (!cJSON_IsNumber(rep) || rep->valuedouble < 0 || rep->valuedouble > INT32_MAX)) ||
        !cJSON_IsString(rv) || strlen(rv->valuestring) >= sizeof out->resource_version ||
        (sel != NULL &&
         (!cJSON_IsString(sel) || strlen(sel->valuestring) >= sizeof out->selector))) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_PARSE,
                            "GET %s: not a Scale object", path);
        return kerr->err;
    }
    out->replicas = rep ? (int32_t)rep->valuedouble : 0;
    out->status_replicas = cJSON_IsNumber(srep) ? (int32_t)srep->valuedouble : 0;
    snprintf(out->resource_version, sizeof out->resource_version, "%s", rv->valuestring);
    if (cJSON_IsString(uid))
        snprintf(out->uid, sizeof out->uid, "%s", uid->valuestring);
    if (sel != NULL)
        snprintf(out->selector, sizeof out->selector, "%s", sel->valuestring);
    return MS_OK;
}

ms_err_t ms_kube_scale_get(ms_kube_client_t *c, const ms_kube_ref_t *ref, ms_kube_scale_t *out,
                           ms_kube_error_t *kerr)
{
    char path[1024];
    cJSON *doc = NULL;
    ms_err_t err;

    if ((err = target_path(c, ref, "scale", true, path, sizeof path, kerr)) != MS_OK ||
        (err = ms_kube_get(c, path, &doc, kerr)) != MS_OK)
        return err;
    err = parse_scale(doc, out, path, kerr);
    cJSON_Delete(doc);
    return err;
}

ms_err_t ms_kube_scale_update(ms_kube_client_t *c, const ms_kube_ref_t *ref,
                              const ms_kube_scale_t *seen, int32_t replicas, ms_kube_scale_t *out,
                              ms_kube_error_t *kerr)
{
    char path[1024];
    cJSON *body = NULL, *md, *spec, *doc = NULL;
    ms_err_t err;

    if (replicas < 0) {
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, MS_ERR_RANGE, "replicas %d < 0", replicas);
        return kerr->err;
    }
    if ((err = target_path(c, ref, "scale", true, path, sizeof path, kerr)) != MS_OK)
        return err;
    body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "apiVersion", "autoscaling/v1");
    cJSON_AddStringToObject(body, "kind", "Scale");
    md = cJSON_AddObjectToObject(body, "metadata");
    cJSON_AddStringToObject(md, "name", ref->name);
    if (ref->namespace_ != NULL)
        cJSON_AddStringToObject(md, "namespace", ref->namespace_);
    /* The precondition: the update fails with 409 if anyone wrote since. */
    cJSON_AddStringToObject(md, "resourceVersion", seen->resource_version);
    spec = cJSON_AddObjectToObject(body, "spec");
    cJSON_AddNumberToObject(spec, "replicas", replicas);
    err = ms_kube_update(c, path, body, &doc, kerr);
    cJSON_Delete(body);
    if (err == MS_OK) {
        err = parse_scale(doc, out, path, kerr);
    } else if (err == MS_ERR_CONFLICT) {
        ms_kube_error_t again;
        /* Hand the caller what is there now; it decides again. */
        memset(out, 0, sizeof *out);
        if (ms_kube_scale_get(c, ref, out, &again) != MS_OK)
            MS_LOG_WARN("cannot re-read the scale after a conflict", MS_S("error", again.message));
        MS_LOG_INFO("scale changed by someone else; not overwriting", MS_S("kind", ref->kind),
                    MS_S("name", ref->name), MS_I("wanted", replicas), MS_I("now", out->replicas));
    }
    cJSON_Delete(doc);
    return err;
}

ms_err_t ms_kube_status_patch(ms_kube_client_t *c, const ms_kube_ref_t *ref, const cJSON *status,
                              cJSON **out, ms_kube_error_t *kerr)
{
    char path[1024];
    cJSON *patch;
    ms_err_t err;

    if (out != NULL)
        *out = NULL;
    if ((err = target_path(c, ref, "status", false, path, sizeof path, kerr)) != MS_OK)
        return err;
    patch = cJSON_CreateObject();
    cJSON_AddItemToObject(patch, "status", cJSON_Duplicate(status, true));
    err = ms_kube_merge_patch(c, path, patch, out, kerr);
    cJSON_Delete(patch);
    return err;
}

ms_err_t ms_kube_status_patch_text(ms_kube_client_t *c, const ms_kube_ref_t *ref,
                                   const char *status, ms_kube_error_t *kerr)
{
    static const char head[] = "{\"status\":";
    char path[1024];
    size_t n = strlen(status);
    char *body;
    ms_err_t err;

    if ((err = target_path(c, ref, "status", false, path, sizeof path, kerr)) != MS_OK)
        return err;
    body = ms_xmalloc(sizeof head - 1 + n + 2);
    memcpy(body, head, sizeof head - 1);
    memcpy(body + sizeof head - 1, status, n);
    memcpy(body + sizeof head - 1 + n, "}", 2);
    err = ms_kube_request(c, "PATCH", path, "application/merge-patch+json", body, sizeof head + n,
                          NULL, kerr);
    free(body);
    return err;
}
