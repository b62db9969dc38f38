/*
 * config.c - where the configuration comes from (ms_kube_config_load's
 * order: --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config) and the
 * in-cluster ServiceAccount files. It calls down into kubeconfig.c (the
 * files, and freeing a configuration), which never calls back up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "meshscaler/kubeconfig.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

/* Split $KUBECONFIG at ':' into at most MS__KUBE_MAX_FILES paths inside storage. */
static size_t split_env(const char *env, char *storage, size_t cap, const char **paths)
{
    size_t n = 0;
    char *s, *colon;

    snprintf(storage, cap, "%s", env);
    s = storage;
    while (s != NULL && n < MS__KUBE_MAX_FILES) {
        colon = strchr(s, ':');
        if (colon != NULL)
            *colon = '\0';
        if (*s != '\0')
            paths[n++] = s;
        s = colon ? colon + 1 : NULL;
    }
    return n;
}

ms_err_t ms_kube_config_load(const ms_kube_config_options_t *o, ms_kube_config_t **out,
                             char *errbuf, size_t errlen)
{
    ms_kube_config_options_t none;
    const char *env, *home, *paths[MS__KUBE_MAX_FILES];
    char storage[4096], def[1024];
    size_t n;

    if (o == NULL) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    if (o->kubeconfig != NULL && o->kubeconfig[0] != '\0')
        return ms_kube_config_load_files(&o->kubeconfig, 1, true, o->context, out, errbuf, errlen);
    env = o->kubeconfig_env ? o->kubeconfig_env : getenv("KUBECONFIG");
    if (env != NULL && env[0] != '\0') {
        n = split_env(env, storage, sizeof storage, paths);
        return ms_kube_config_load_files(paths, n, false, o->context, out, errbuf, errlen);
    }
    if (!o->no_in_cluster && getenv("KUBERNETES_SERVICE_HOST") != NULL)
        return ms_kube_config_in_cluster(o->sa_dir, out, errbuf, errlen);
    home = o->home ? o->home : getenv("HOME");
    if (home == NULL || home[0] == '\0') {
        *out = NULL;
        return ms_errf(
            errbuf, errlen, MS_ERR_NOTFOUND,
            "no configuration: no --kubeconfig, $KUBECONFIG, in-cluster environment or $HOME");
    }
    snprintf(def, sizeof def, "%s/.kube/config", home);
    paths[0] = def;
    return ms_kube_config_load_files(paths, 1, true, o->context, out, errbuf, errlen);
}

ms_err_t ms_kube_config_in_cluster(const char *sa_dir, ms_kube_config_t **out, char *errbuf,
                                   size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    ms_kube_config_t *c;
    char path[1024], why[MS_ERRBUF_SIZE], server[300];
    ms_buf_t b;
    ms_err_t err;

    *out = NULL;
    if (sa_dir == NULL)
        sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
        return ms_errf(
            errbuf, errlen, MS_ERR_NOTFOUND,
            "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
    if (strlen(host) > 200 || strlen(port) > 10)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "in-cluster: KUBERNETES_SERVICE_HOST/PORT too long");
    c = ms_xcalloc(1, sizeof *c);
    /* An IPv6 address needs brackets in a URL. */
    snprintf(server, sizeof server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
             port);
    c->server = ms_xstrdup(server);
    c->in_cluster = true;
    c->context = ms_xstrdup("in-cluster");
    c->source = ms_xstrdup(sa_dir);
    snprintf(path, sizeof path, "%s/token", sa_dir);
    if ((err = ms__kube_read_file(path, &b, why, sizeof why)) != MS_OK)
        goto bad;
    ms_buf_cleanup(&b);
    c->token_file = ms_xstrdup(path);
    snprintf(path, sizeof path, "%s/ca.crt", sa_dir);
    if ((err = ms__kube_read_file(path, &b, why, sizeof why)) != MS_OK)
        goto bad;
    ms_buf_cleanup(&b);
    c->ca_file = ms_xstrdup(path);
    snprintf(path, sizeof path, "%s/namespace", sa_dir);
    if (ms__kube_read_file(path, &b, why, sizeof why) == MS_OK && b.len > 0) {
        size_t len = b.len;
        while (len > 0 && (b.data[len - 1] == '\n' || b.data[len - 1] == ' '))
            len--;
        b.data[len] = '\0';
        c->namespace_ = ms_xstrdup(b.data);
    } else {
        c->namespace_ = ms_xstrdup("default");
    }
    ms_buf_cleanup(&b);
    *out = c;
    return MS_OK;
bad:
    ms_kube_config_free(c);
    return ms_errf(errbuf, errlen, err, "in-cluster: %s", why);
}
