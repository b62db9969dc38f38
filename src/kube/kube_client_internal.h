/*
 * kube_client_internal.h - the client's insides, shared by the files of
 * src/kube/ that issue requests. Their calls go one way: scale.c uses
 * discovery.c, which uses client.c (requests), which uses path.c (pure);
 * watch.c, lease.c, kube_events.c and kube_review.c use client.c.
 */
#ifndef MESHSCALER_KUBE_CLIENT_INTERNAL_H
#define MESHSCALER_KUBE_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "kube_internal.h"
#include "meshscaler/http.h"
#include "meshscaler/kube.h"

#define MS_KUBE_AUTH_MAX 16500

/* One group-version's resources in the discovery cache: discovery.c fills
 * the list, the client frees it with itself. */
typedef struct ms__kube_gv {
    char api_version[128];
    ms_kube_resource_t *res;
    size_t n;
    struct ms__kube_gv *next;
} ms__kube_gv_t;

struct ms_kube_client {
    ms_http_client_t *http;
    ms_kube_cred_t *cred;
    char *server;
    char *source;
    char *namespace_;
    long timeout_ms;
    int max_retries;
    const atomic_bool *cancel;
    ms__kube_ratelimit_t limiter;
    /* discovery cache */
    pthread_mutex_t disc_lock;
    ms__kube_gv_t *gvs;
    atomic_ulong disc_fetches;
    /* counters */
    atomic_ulong n_requests, n_get, n_list, n_watch, n_create, n_update, n_patch, n_delete;
    atomic_ulong n_retries, n_throttled, throttle_us, n_connections;
    atomic_long http_version;
};

/* One request as ms__kube_do() runs it. */
typedef struct {
    const char *method;
    const char *path;
    const char *content_type;
    const char *body;
    size_t body_len;
    long timeout_ms; /* 0: the client's default, or none when stream */
    long idle_timeout_ms;
    bool stream;
    ms_http_sink_fn sink;
    void *sink_ctx;
    const atomic_bool *cancel;
    /* streaming: set by the sink wrapper */
    bool stream_started;
    const char *err_body;
    size_t err_body_len;
} ms__kube_call_t;

/* Run call with throttling, credentials and retries; resp is the caller's
 * (initialised). Returns kerr->err. */
ms_err_t ms__kube_do(ms_kube_client_t *c, ms__kube_call_t *call, ms_http_response_t *resp,
                     ms_kube_error_t *kerr);

/* ms_kube_get with the response body read under max_body bytes (0: the
 * default cap): MS_ERR_TOOLARGE past it. *out is the caller's. */
ms_err_t ms__kube_get_capped(ms_kube_client_t *c, const char *path, size_t max_body, cJSON **out,
                             ms_kube_error_t *kerr);

/* Fill kerr from an error status and its (Status) body. */
void ms__kube_error_from_status(ms_kube_error_t *kerr, const char *method, const char *path,
                                long status, const char *body, size_t len);

/* True for ".../PLURAL" paths (a list), false for ".../PLURAL/NAME[/SUB]" (path.c). */
bool ms__kube_path_is_collection(const char *path);

/* The resources of an APIResourceList (doc) as ms_kube_resource_t[*n],
 * subresources folded into has_scale/has_status; *out is the caller's
 * (free). MS_ERR_PARSE when doc has no resources list. */
ms_err_t ms__kube_discovery_parse(const cJSON *doc, const char *api_version,
                                  ms_kube_resource_t **out, size_t *n);

#endif
