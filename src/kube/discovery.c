/*
 * discovery.c - API discovery: apiVersion + kind -> resource, with a
 * per-group-version cache refreshed on a miss.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/xalloc.h"

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
    res = ms_xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *res);
    /* First the resources, then mark their subresources ("deployments/scale"). */
    cJSON_ArrayForEach(r, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        ms_kube_resource_t *x = &res[count];

        if (!cJSON_IsString(name) || !cJSON_IsString(kind) || strchr(name->valuestring, '/') ||
            strlen(name->valuestring) >= sizeof x->resource ||
            strlen(kind->valuestring) >= sizeof x->kind)
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
            if (strlen(res[i].resource) != plen ||
                strncmp(res[i].resource, name->valuestring, plen) != 0)
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
    g = ms_xcalloc(1, sizeof *g);
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
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, MS_ERR_NOTFOUND,
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
