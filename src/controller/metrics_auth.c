/*
 * metrics_auth.c - the --metrics-secure authorizer (metrics_auth.h).
 */
#include <stdlib.h>
#include <string.h>

#include "meshscaler/clock.h"
#include "meshscaler/kube_review.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"
#include "metrics_auth.h"

#define METRICS_PATH "/metrics"

/* The authorizer's own client. A scrape with a new token costs two requests
 * and the cache absorbs repeats, so a modest limit suffices; short timeouts
 * and one retry keep a scrape (and a shutdown) from waiting on a slow API
 * server for long. */
#define AUTH_QPS 20.0
#define AUTH_BURST 40
#define AUTH_TIMEOUT_MS 5000
#define AUTH_MAX_RETRIES 1

struct ms__metrics_authorizer {
    ms_kube_client_t *client;
    ms_kube_review_cache_t *cache;
    char *cert_file; /* NULL: self-signed */
    char *key_file;
};

ms__metrics_authorizer_t *ms__metrics_authorizer_new(const ms_kube_config_t *kcfg,
                                                     const char *cert_dir, char *errbuf,
                                                     size_t errlen)
{
    ms__metrics_authorizer_t *a = ms_xcalloc(1, sizeof *a);
    ms_kube_client_options_t co = {0};

    co.qps = AUTH_QPS;
    co.burst = AUTH_BURST;
    co.timeout_ms = AUTH_TIMEOUT_MS;
    co.max_retries = AUTH_MAX_RETRIES;
    a->client = ms_kube_client_new(kcfg, &co, errbuf, errlen);
    if (a->client == NULL) {
        free(a);
        return NULL;
    }
    a->cache = ms_kube_review_cache_new(0);
    if (cert_dir != NULL && cert_dir[0] != '\0') {
        a->cert_file = ms_xasprintf("%s/tls.crt", cert_dir);
        a->key_file = ms_xasprintf("%s/tls.key", cert_dir);
    }
    return a;
}

void ms__metrics_authorizer_apply(ms__metrics_authorizer_t *a, ms_server_options_t *so)
{
    if (a == NULL)
        return;
    so->metrics_tls = true;
    so->tls_cert_file = a->cert_file;
    so->tls_key_file = a->key_file;
    so->authorize = ms__metrics_authorizer_authorize;
    so->lookup = ms__metrics_authorizer_lookup;
    so->authorize_ctx = a;
}

int ms__metrics_authorizer_lookup(void *ctx, const char *bearer_token)
{
    ms__metrics_authorizer_t *a = ctx;
    ms_kube_review_decision_t d;

    if (!ms_kube_review_cache_get(a->cache, bearer_token, METRICS_PATH, "get", ms_clock_monotonic(),
                                  &d))
        return MS_SERVER_AUTH_UNKNOWN;
    switch (d) {
    case MS_KUBE_REVIEW_ALLOWED:
        return MS_SERVER_AUTH_ALLOWED;
    case MS_KUBE_REVIEW_DENIED:
        return MS_SERVER_AUTH_DENIED;
    case MS_KUBE_REVIEW_UNAUTHENTICATED:
        return MS_SERVER_AUTH_UNAUTHENTICATED;
    default:
        return MS_SERVER_AUTH_UNKNOWN; /* errors are never cached */
    }
}

int ms__metrics_authorizer_authorize(void *ctx, const char *bearer_token)
{
    ms__metrics_authorizer_t *a = ctx;
    ms_kube_review_result_t r;

    ms_kube_review_authorize(a->client, a->cache, bearer_token, METRICS_PATH, "get",
                             ms_clock_monotonic(), &r);
    switch (r.decision) {
    case MS_KUBE_REVIEW_ALLOWED:
        if (!r.cached)
            MS_LOG_DEBUG("metrics scrape authorized", MS_S("user", r.user));
        return MS_SERVER_AUTH_ALLOWED;
    case MS_KUBE_REVIEW_DENIED:
        if (!r.cached)
            MS_LOG_INFO("metrics scrape refused: the user may not get /metrics",
                        MS_S("user", r.user), MS_S("reason", r.reason));
        return MS_SERVER_AUTH_DENIED;
    case MS_KUBE_REVIEW_UNAUTHENTICATED:
        if (!r.cached)
            MS_LOG_INFO("metrics scrape refused: the API server does not accept its token",
                        MS_S("reason", r.reason));
        return MS_SERVER_AUTH_UNAUTHENTICATED;
    case MS_KUBE_REVIEW_ERROR:
    default:
        MS_LOG_WARN("cannot authorize a metrics scrape", MS_S("reason", r.reason));
        return MS_SERVER_AUTH_ERROR;
    }
}

ms_kube_client_t *ms__metrics_authorizer_client(ms__metrics_authorizer_t *a)
{
    return a->client;
}

void ms__metrics_authorizer_free(ms__metrics_authorizer_t *a)
{
    if (a == NULL)
        return;
    ms_kube_client_free(a->client);
    ms_kube_review_cache_free(a->cache);
    free(a->cert_file);
    free(a->key_file);
    free(a);
}
