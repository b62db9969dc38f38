/*
 * metrics_auth.h - secure /metrics for the controller (--metrics-secure,
 * --metrics-cert-dir): the TLS files and the authorization callback the
 * server calls (server.h), built on TokenReview + SubjectAccessReview with a
 * decision cache (kube_review.h). A caller may read /metrics when the API
 * server authenticates its bearer token and allows that user `get` on the
 * non-resource URL /metrics: controller-runtime's
 * filters.WithAuthenticationAndAuthorization.
 *
 * This is the only place the server and the Kubernetes client meet; the
 * server stays free of Kubernetes code.
 *
 * Threads: the server calls ms__metrics_authorizer_authorize() from its one
 * authorization thread, so the authorizer has a Kubernetes client of its own
 * (one client per thread, docs/ARCHITECTURE.md). ms__metrics_authorizer_lookup()
 * runs on the service thread and only reads the cache (it has its own lock),
 * so a cached caller is answered before, never behind, the queue of checks.
 *
 * Ownership: the authorizer owns its client, its cache and the file names it
 * hands to the server; it must outlive the server it was applied to.
 */
#ifndef MESHSCALER_CONTROLLER_METRICS_AUTH_H
#define MESHSCALER_CONTROLLER_METRICS_AUTH_H

#include <stddef.h>

#include "meshscaler/kube.h"
#include "meshscaler/kubeconfig.h"
#include "meshscaler/server.h"

typedef struct ms__metrics_authorizer ms__metrics_authorizer_t;

/* A new authorizer with its own client for kcfg (borrowed for the call) and
 * the serving certificate cert_dir/tls.crt with cert_dir/tls.key, or a
 * self-signed one when cert_dir is NULL or "". NULL with errbuf set when the
 * client cannot be built. */
ms__metrics_authorizer_t *ms__metrics_authorizer_new(const ms_kube_config_t *kcfg,
                                                     const char *cert_dir, char *errbuf,
                                                     size_t errlen);

/* Turn on TLS and authorization in so (metrics_tls, tls_cert_file,
 * tls_key_file, authorize, lookup, authorize_ctx). a NULL leaves so as it is (plain
 * /metrics). */
void ms__metrics_authorizer_apply(ms__metrics_authorizer_t *a, ms_server_options_t *so);

/* The ms_server_authorize_fn: ctx is an ms__metrics_authorizer_t. Returns an
 * ms_server_auth_t; logs fresh decisions with the user's name (never the
 * token). */
int ms__metrics_authorizer_authorize(void *ctx, const char *bearer_token);

/* The ms_server_lookup_fn: the cached decision for bearer_token, or
 * MS_SERVER_AUTH_UNKNOWN. Makes no request. */
int ms__metrics_authorizer_lookup(void *ctx, const char *bearer_token);

/* Its Kubernetes client (request counts, for tests and figures); borrowed. */
ms_kube_client_t *ms__metrics_authorizer_client(ms__metrics_authorizer_t *a);

/* NULL does nothing. The server it was applied to must be stopped. */
void ms__metrics_authorizer_free(ms__metrics_authorizer_t *a);

#endif
