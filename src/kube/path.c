/*
 * path.c - API paths: "/api/v1/namespaces/NS/PLURAL/NAME/SUB" built from
 * their parts (names a path cannot hold are refused, never escaped), and
 * telling a collection from an object. Pure: no request, no state.
 */
#include <stdio.h>
#include <string.h>

#include "kube_client_internal.h"

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
