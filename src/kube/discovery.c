/*
 * discovery.c - paths, API discovery (apiVersion + kind -> resource) with a
 * per-group-version cache, and the scale and status subresources.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/log.h"

struct ms__kube_gv {
    char api_version[128];
    ms_kube_resource_t *res;
    size_t n;
    struct ms__kube_gv *next;
};

/* Names and namespaces go into paths as they are: refuse what a path cannot
 * hold rather than escape it (Kubernetes names never need escaping). */
static bool path_segment_ok(const char *s)
{
    if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > 253)
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == '/' || *p == '?' || *p == '#' || *p == '%' ||
            (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

ms_err_t ms_kube_path(char *buf, size_t cap, const char *api_version, const char *ns,
                      const char *plural, const char *name, const char *sub)
{
    const char *segs[] = {ns, plural, name, sub};
    size_t used;
    int w;

    if (api_version == NULL || plural == NULL || !path_segment_ok(plural) ||
        strstr(api_version, "..") != NULL || api_version[0] == '/' || strchr(api_version, '?'))
        return MS_ERR_INVALID;
    for (size_t i = 0; i < 4; i++)
        if (segs[i] != NULL && !path_segment_ok(segs[i]))
            return MS_ERR_INVALID;
    w = snprintf(buf, cap, "%s%s", strchr(api_version, '/') ? "/apis/" : "/api/", api_version);
    if (w < 0 || (size_t)w >= cap)
        return MS_ERR_TOOLARGE;
    used = (size_t)w;
    if (ns != NULL) {
        w = snprintf(buf + used, cap - used, "/namespaces/%s", ns);
        if (w < 0 || (size_t)w >= cap - used)
            return MS_ERR_TOOLARGE;
        used += (size_t)w;
    }
    for (size_t i = 1; i < 4; i++) {
        if (segs[i] == NULL)
            continue;
        w = snprintf(buf + used, cap - used, "/%s", segs[i]);
        if (w < 0 || (size_t)w >= cap - used)
            return MS_ERR_TOOLARGE;
        used += (size_t)w;
    }
    return MS_OK;
}

bool ms__kube_path_is_collection(const char *path)
{
    /* After /api/V or /apis/G/V: [namespaces/NS/]PLURAL[/NAME[/SUB]]. */
    const char *q = strchr(path, '?');
    size_t len = q ? (size_t)(q - path) : strlen(path);
    size_t skip = strncmp(path, "/apis/", 6) == 0 ? 3 : 2, segs = 0, i;
    const char *rest = path;

    /* rest points after the group-version */
    for (i = 0; i < len; i++) {
        if (path[i] == '/') {
            segs++;
            if (segs == skip + 1) {
                rest = path + i + 1;
                break;
            }
        }
    }
    if (segs < skip + 1)
        return false;
    len -= (size_t)(rest - path);
    segs = 1;
    for (i = 0; i < len; i++)
        if (rest[i] == '/')
            segs++;
    if (len > 11 && strncmp(rest, "namespaces/", 11) == 0 && segs >= 3)
        segs -= 2;
    return segs == 1;
}

void ms__kube_discovery_cleanup(ms_kube_client_t *c)
{
    ms__kube_gv_t *g = c->gvs;

    while (g != NULL) {
        ms__kube_gv_t *next = g->next;
        free(g->res);
        free(g);
        g = next;
    }
    c->gvs = NULL;
}

unsigned long ms_kube_discovery_fetches(const ms_kube_client_t *c)
{
    return atomic_load(&c->disc_fetches);
}

ms_err_t ms__kube_discovery_parse(const cJSON *doc, const char *api_version,
                                  ms_kube_resource_t **out, size_t *n)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "resources"), *r;
    ms_kube_resource_t *res;
    size_t count = 0;

    *out = NULL;
    *n = 0;
    if (!cJSON_IsArray(list))
        return MS_ERR_PARSE;
    res = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *res);
    if (res == NULL)
        abort();
    /* First the resources, then mark their subresources ("deployments/scale"). */
    cJSON_ArrayForEach(r, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        ms_kube_resource_t *x = &res[count];

        if (!cJSON_IsString(name) || !cJSON_IsString(kind) || strchr(name->valuestring, '/') ||
            strlen(name->valuestring) >= sizeof x->resource || strlen(kind->valuestring) >= sizeof x->kind)
            continue;
        snprintf(x->api_version, sizeof x->api_version, "%s", api_version);
        snprintf(x->kind, sizeof x->kind, "%s", kind->valuestring);
        snprintf(x->resource, sizeof x->resource, "%s", name->valuestring);
        x->namespaced = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "namespaced"));
        count++;
    }
    cJSON_ArrayForEach(r, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        const char *slash;

        if (!cJSON_IsString(name) || (slash = strchr(name->valuestring, '/')) == NULL)
            continue;
        for (size_t i = 0; i < count; i++) {
            size_t plen = (size_t)(slash - name->valuestring);
            if (strlen(res[i].resource) != plen || strncmp(res[i].resource, name->valuestring, plen) != 0)
                continue;
            if (strcmp(slash + 1, "scale") == 0)
                res[i].has_scale = true;
            else if (strcmp(slash + 1, "status") == 0)
                res[i].has_status = true;
        }
    }
    *out = res;
    *n = count;
    return MS_OK;
}

/* Fetch one group-version's APIResourceList into a new cache entry. */
static ms_err_t fetch_gv(ms_kube_client_t *c, const char *api_version, ms__kube_gv_t **out,
                         ms_kube_error_t *kerr)
{
    char path[300];
    cJSON *doc = NULL;
    ms__kube_gv_t *g;
    ms_err_t err;

    *out = NULL;
    if (snprintf(path, sizeof path, "%s%s", strchr(api_version, '/') ? "/apis/" : "/api/",
                 api_version) >= (int)sizeof path)
        return MS_ERR_TOOLARGE;
    atomic_fetch_add(&c->disc_fetches, 1);
    if ((err = ms_kube_get(c, path, &doc, kerr)) != MS_OK)
        return err;
    g = calloc(1, sizeof *g);
    if (g == NULL)
        abort();
    snprintf(g->api_version, sizeof g->api_version, "%s", api_version);
    err = ms__kube_discovery_parse(doc, api_version, &g->res, &g->n);
    cJSON_Delete(doc);
    if (err != MS_OK) {
        free(g);
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_PARSE,
                            "GET %s: not an APIResourceList", path);
        return kerr->err;
    }
    *out = g;
    return MS_OK;
}

/* Look kind up in the cached entry for api_version. Caller holds disc_lock. */
static int lookup(ms_kube_client_t *c, const char *api_version, const char *kind,
                  ms_kube_resource_t *out)
{
    for (ms__kube_gv_t *g = c->gvs; g != NULL; g = g->next) {
        if (strcmp(g->api_version, api_version) != 0)
            continue;
        for (size_t i = 0; i < g->n; i++) {
            if (strcmp(g->res[i].kind, kind) == 0) {
                *out = g->res[i];
                return 1;
            }
        }
        return 0; /* group-version cached, kind absent */
    }
    return -1; /* group-version not cached */
}

ms_err_t ms_kube_discover(ms_kube_client_t *c, const char *api_version, const char *kind,
                          ms_kube_resource_t *out, ms_kube_error_t *kerr)
{
    ms__kube_gv_t *fresh = NULL;
    ms_err_t err;
    int found;

    memset(kerr, 0, sizeof kerr[0]);
    if (api_version == NULL || kind == NULL || api_version[0] == '\0' || kind[0] == '\0' ||
        strlen(api_version) >= sizeof out->api_version || strchr(api_version, '?') ||
        strstr(api_version, "..") || api_version[0] == '/') {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_INVALID,
                            "scaleTargetRef: apiVersion and kind are required");
        return kerr->err;
    }
    pthread_mutex_lock(&c->disc_lock);
    found = lookup(c, api_version, kind, out);
    pthread_mutex_unlock(&c->disc_lock);
    if (found == 1)
        return MS_OK;
    /* A miss refreshes that group-version (a CRD may have been added). */
    err = fetch_gv(c, api_version, &fresh, kerr);
    if (err == MS_ERR_NOTFOUND) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_NOTFOUND,
                            "the server does not serve %s (no such API group-version)", api_version);
        return kerr->err;
    }
    if (err != MS_OK)
        return err;
    pthread_mutex_lock(&c->disc_lock);
    for (ms__kube_gv_t **pg = &c->gvs; *pg != NULL; pg = &(*pg)->next) {
        if (strcmp((*pg)->api_version, api_version) == 0) {
            ms__kube_gv_t *old = *pg;
            *pg = old->next;
            free(old->res);
            free(old);
            break;
        }
    }
    fresh->next = c->gvs;
    c->gvs = fresh;
    found = lookup(c, api_version, kind, out);
    pthread_mutex_unlock(&c->disc_lock);
    if (found == 1)
        return MS_OK;
    kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_NOTFOUND,
                        "the server serves no kind %s in %s", kind, api_version);
    return kerr->err;
}

/* ---- scale ---- */

static ms_err_t target_path(ms_kube_client_t *c, const ms_kube_ref_t *ref, const char *sub,
                            bool need_scale, char *path, size_t cap, ms_kube_error_t *kerr)
{
    ms_kube_resource_t r;
    ms_err_t err;

    if ((err = ms_kube_discover(c, ref->api_version, ref->kind, &r, kerr)) != MS_OK)
        return err;
    if ((need_scale && !r.has_scale) || (!need_scale && strcmp(sub, "status") == 0 && !r.has_status)) {
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
    if ((rep != NULL && (!cJSON_IsNumber(rep) || rep->valuedouble < 0 || rep->valuedouble > INT32_MAX)) ||
        !cJSON_IsString(rv) || strlen(rv->valuestring) >= sizeof out->resource_version ||
        (sel != NULL && (!cJSON_IsString(sel) || strlen(sel->valuestring) >= sizeof out->selector))) {
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
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_RANGE, "replicas %d < 0",
                            replicas);
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

ms_err_t ms_kube_status_patch(ms_kube_client_t *c, const ms_kube_ref_t *ref,
                              const cJSON *status, cJSON **out, ms_kube_error_t *kerr)
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
