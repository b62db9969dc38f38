/*
 * kube.h - the Kubernetes API client: authenticated, rate-limited requests
 * over the shared HTTP layer, typed errors from Status objects, API
 * discovery, and the scale and status subresources.
 *
 * A client is built from a loaded configuration (kubeconfig.h). Every
 * request takes a token from a client-side bucket (QPS/burst, client-go's
 * 5/10 by default), carries the current bearer token (re-read or re-run on a
 * 401), and is retried after the server's Retry-After on 429.
 *
 * Ownership: ms_kube_client_new() copies what it needs from the config.
 * Paths and bodies are borrowed for the call; a returned cJSON tree is the
 * caller's (cJSON_Delete). On failure *out stays NULL and kerr says why.
 *
 * Threads: a client may be used by any number of threads at once; it must
 * outlive everything built on it (informers, electors, recorders).
 *
 * Implemented in src/kube/ by client.c (requests, retries, typed errors),
 * path.c, discovery.c, scale.c (the scale and status subresources) and
 * ratelimit.c (the token bucket).
 */
#ifndef MESHSCALER_KUBE_H
#define MESHSCALER_KUBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"
#include "meshscaler/http.h"
#include "meshscaler/kubeconfig.h"

/* A failed request: the transport error or the HTTP status, with the
 * reason and message of the server's Status object when it sent one. */
typedef struct {
    ms_err_t err;    /* MS_ERR_NOTFOUND (404), MS_ERR_CONFLICT (409), MS_ERR_GONE (410),
                        MS_ERR_FORBIDDEN (403), MS_ERR_UNAUTHORIZED (401),
                        MS_ERR_INVALID (400, 422), MS_ERR_UNAVAILABLE (5xx, 429 after
                        retries, refused), MS_ERR_TLS, MS_ERR_TIMEOUT, ... */
    long status;     /* HTTP status; 0 when none arrived */
    char reason[64]; /* Status.reason: "NotFound", "Conflict", "AlreadyExists", "Expired" */
    char message[MS_ERRBUF_SIZE]; /* one line: "GET /api/v1/...: 404 NotFound: ..." */
} ms_kube_error_t;

typedef struct {
    double qps;                  /* 0: 5; negative: unlimited */
    int burst;                   /* 0: 10 */
    long timeout_ms;             /* per request (not watches); 0: 30 s */
    int max_retries;             /* retries after 429/Retry-After; 0: 10 (client-go); < 0: none */
    double token_reload_seconds; /* token files; 0: 60 */
    const char *user_agent;      /* NULL: meshscaler/<version> */
    const atomic_bool *cancel;   /* shutdown: ends waits and transfers */
} ms_kube_client_options_t;

/* Request counts since the client was created (monotonic counters). */
typedef struct {
    unsigned long requests; /* every HTTP request sent, retries included */
    unsigned long get, list, watch, create, update, patch, del;
    unsigned long retries;     /* after 429 or 401 */
    unsigned long throttled;   /* requests that waited for the token bucket */
    double throttle_seconds;   /* total time spent waiting for it */
    long http_version;         /* of the last response: 1 or 2 */
    unsigned long connections; /* TCP+TLS connections opened (the rest reused one) */
} ms_kube_stats_t;

typedef struct ms_kube_client ms_kube_client_t;

/* New client, or NULL with errbuf set. opts may be NULL (defaults). */
ms_kube_client_t *ms_kube_client_new(const ms_kube_config_t *cfg,
                                     const ms_kube_client_options_t *opts, char *errbuf,
                                     size_t errlen);
/* NULL does nothing. */
void ms_kube_client_free(ms_kube_client_t *c);

/* The configuration's namespace ("default" if none); borrowed. */
const char *ms_kube_client_namespace(const ms_kube_client_t *c);
void ms_kube_client_stats(const ms_kube_client_t *c, ms_kube_stats_t *out);
/* The credential source (for tests and figures); borrowed. */
ms_kube_cred_t *ms_kube_client_cred(ms_kube_client_t *c);

/* Requests (not watches) made on the calling thread from now on end by this
 * monotonic time: each gets only the time left as its timeout, a throttle or
 * Retry-After wait that would pass it is not waited, and none is sent past
 * it (MS_ERR_TIMEOUT, "deadline passed"). 0 clears it. The leader elector
 * bounds each renewal so, and a worker each write by the lease's validity. */
void ms_kube_deadline_set(double monotonic);
double ms_kube_deadline(void);
/* Bring the calling thread's deadline forward to monotonic if it has none or
 * a later one (0: no change). A queue draining at shutdown caps each request
 * by its drain deadline, whatever the lease allows. */
void ms_kube_deadline_cap(double monotonic);

/* Requests made on the calling thread from now on are background ones
 * (true) or foreground ones (false, the default). A background request
 * yields to the foreground in the client's token bucket: it never reserves
 * a token ahead, so a scale write decided now is not queued behind
 * thousands of status patches; it still gets a tenth of the rate however
 * busy the foreground is. The status writers and the event sender run in
 * the background (ratelimit.c). */
void ms_kube_background_set(bool background);

/* One request. path starts with "/" and may carry a query. body may be NULL.
 * On a 2xx with out non-NULL, *out is the parsed body (MS_ERR_PARSE if it is
 * not JSON). */
ms_err_t ms_kube_request(ms_kube_client_t *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len, cJSON **out,
                         ms_kube_error_t *kerr);

ms_err_t ms_kube_get(ms_kube_client_t *c, const char *path, cJSON **out, ms_kube_error_t *kerr);
ms_err_t ms_kube_create(ms_kube_client_t *c, const char *path, const cJSON *obj, cJSON **out,
                        ms_kube_error_t *kerr);
/* PUT: obj carries metadata.resourceVersion; MS_ERR_CONFLICT when stale. */
ms_err_t ms_kube_update(ms_kube_client_t *c, const char *path, const cJSON *obj, cJSON **out,
                        ms_kube_error_t *kerr);
/* application/merge-patch+json */
ms_err_t ms_kube_merge_patch(ms_kube_client_t *c, const char *path, const cJSON *patch, cJSON **out,
                             ms_kube_error_t *kerr);
ms_err_t ms_kube_delete(ms_kube_client_t *c, const char *path, ms_kube_error_t *kerr);

/* A streaming GET (watch): while the status is 2xx, body bytes go to sink as
 * they arrive; an error status's body is parsed into kerr instead. Returns
 * MS_OK when the server ended the stream normally. */
ms_err_t ms_kube_stream(ms_kube_client_t *c, const char *path, long timeout_ms,
                        long idle_timeout_ms, ms_http_sink_fn sink, void *ctx,
                        const atomic_bool *cancel, ms_kube_error_t *kerr);

/* "/api/v1/namespaces/NS/PLURAL/NAME/SUB" or "/apis/GROUP/VERSION/...";
 * ns, name and sub may be NULL. MS_ERR_TOOLARGE if cap is too small,
 * MS_ERR_INVALID for names with '/' or other characters a path cannot hold. */
ms_err_t ms_kube_path(char *buf, size_t cap, const char *api_version, const char *ns,
                      const char *plural, const char *name, const char *sub);

/* ---- discovery ---- */

typedef struct {
    char api_version[128]; /* "apps/v1" */
    char kind[64];
    char resource[64]; /* plural: "deployments" */
    bool namespaced;
    bool has_scale;  /* RESOURCE/scale exists */
    bool has_status; /* RESOURCE/status exists */
} ms_kube_resource_t;

/* Map apiVersion + kind to its resource through API discovery. Answers are
 * cached per group-version; a kind missing from the cache refreshes that
 * group-version once (a CRD installed later is found). MS_ERR_NOTFOUND when
 * the server does not serve the kind. */
ms_err_t ms_kube_discover(ms_kube_client_t *c, const char *api_version, const char *kind,
                          ms_kube_resource_t *out, ms_kube_error_t *kerr);
/* Discovery requests made so far (the cache's misses). */
unsigned long ms_kube_discovery_fetches(const ms_kube_client_t *c);

/* ---- the scale subresource ---- */

typedef struct {
    const char *api_version; /* scaleTargetRef.apiVersion: "apps/v1" */
    const char *kind;        /* "Deployment" */
    const char *namespace_;
    const char *name;
} ms_kube_ref_t;

typedef struct {
    int32_t replicas;        /* spec.replicas */
    int32_t status_replicas; /* status.replicas */
    char selector[2048];     /* status.selector ("" when absent) */
    char resource_version[64];
    char uid[64];
} ms_kube_scale_t;

/* GET the target's /scale. */
ms_err_t ms_kube_scale_get(ms_kube_client_t *c, const ms_kube_ref_t *ref, ms_kube_scale_t *out,
                           ms_kube_error_t *kerr);
/* PUT /scale with spec.replicas = replicas, conditional on seen's
 * resourceVersion. On success out holds the new scale. On MS_ERR_CONFLICT
 * someone else changed the target: nothing was written, and out holds a
 * fresh re-read (resource_version "" if even that failed); the caller
 * decides again from it and never retries blindly. */
ms_err_t ms_kube_scale_update(ms_kube_client_t *c, const ms_kube_ref_t *ref,
                              const ms_kube_scale_t *seen, int32_t replicas, ms_kube_scale_t *out,
                              ms_kube_error_t *kerr);

/* ---- the status subresource ---- */

/* Merge-patch {"status": status} into the object's /status (the caller
 * includes observedGeneration). ref.kind must have a status subresource. */
ms_err_t ms_kube_status_patch(ms_kube_client_t *c, const ms_kube_ref_t *ref, const cJSON *status,
                              cJSON **out, ms_kube_error_t *kerr);
/* The same with the status as JSON text (an object, as cJSON printed it):
 * the status writer holds its patches as text and sends them without
 * parsing them back. */
ms_err_t ms_kube_status_patch_text(ms_kube_client_t *c, const ms_kube_ref_t *ref,
                                   const char *status, ms_kube_error_t *kerr);

#endif
