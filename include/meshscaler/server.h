/*
 * server.h - the controller's HTTP endpoints on libwebsockets, in a thread
 * of their own: /metrics on the metrics address, /healthz and /readyz on
 * the health-probe address (controller-runtime's layout).
 *
 * Secure metrics (controller-runtime's --metrics-secure): with metrics_tls
 * the metrics address speaks HTTPS only (TLS 1.2 or later, HTTP/1.1), with
 * the certificate and key from files or, when none are given, a self-signed
 * EC P-256 certificate made in memory at start. With an authorize callback,
 * /metrics answers only a request whose bearer token the callback allows:
 * no token 401, a token it does not accept 401, a refused caller 403, a
 * failed check 500, too many checks waiting (in all, or from the caller's
 * address) 503. A lookup callback, when given, is asked first: a decision it
 * already knows (a cache) is answered at once, never queued behind checks
 * of other tokens, so a flood of new tokens cannot delay a known caller.
 * The health address always
 * stays plain HTTP (kubelet probes). The server knows nothing of Kubernetes:
 * the caller supplies the decision.
 *
 * Threads: one service thread runs every libwebsockets callback; a second
 * one, started only with an authorize callback, runs the callback, so a slow
 * check never stalls the probes or other scrapes. The callback is only ever
 * called from that one thread, one call at a time.
 *
 * Ownership: the server borrows the registry, the flags, the file names and
 * the callback's ctx in its options; they must outlive ms_server_stop().
 * Start and stop from one thread; the flags may be changed from any thread.
 */
#ifndef MESHSCALER_SERVER_H
#define MESHSCALER_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"
#include "meshscaler/metrics.h"

/* What an authorize callback decides for a bearer token. */
typedef enum {
    MS_SERVER_AUTH_ALLOWED = 0,     /* 200 with the metrics */
    MS_SERVER_AUTH_DENIED,          /* 403: a known caller without the right */
    MS_SERVER_AUTH_UNAUTHENTICATED, /* 401: the token is not valid */
    MS_SERVER_AUTH_ERROR            /* 500: the check itself failed (API server down) */
} ms_server_auth_t;

/* Decide whether bearer_token may read /metrics; returns an ms_server_auth_t.
 * bearer_token is borrowed for the call (the server wipes it afterwards) and
 * must never be logged. Called on the server's authorization thread only. */
typedef int (*ms_server_authorize_fn)(void *ctx, const char *bearer_token);

/* A decision known without waiting (a cache), or MS_SERVER_AUTH_UNKNOWN:
 * then the token waits for the authorize callback. Called on the service
 * thread, for every /metrics request with a token: it must not block.
 * bearer_token is borrowed for the call and must never be logged. */
#define MS_SERVER_AUTH_UNKNOWN (-1)
typedef int (*ms_server_lookup_fn)(void *ctx, const char *bearer_token);

/* Most authorization checks waiting at once; more get 503. */
#define MS_SERVER_MAX_PENDING_AUTH 64
/* Most of them from one peer address (default); more from it get 503, so
 * one client cannot take the whole queue. */
#define MS_SERVER_MAX_PENDING_AUTH_PER_PEER 8

typedef struct {
    /* "HOST:PORT" or ":PORT" (all interfaces); port 0 picks a free one;
     * "0" or NULL turns the endpoint off, as in controller-runtime. */
    const char *metrics_addr;
    const char *health_addr;
    ms_metrics_t *metrics;    /* rendered on /metrics; may be NULL */
    const atomic_bool *ready; /* /readyz is 200 while true, else 503 */
    const atomic_bool *alive; /* /healthz is 200 while true; NULL: always */

    /* Secure metrics. */
    bool metrics_tls;                 /* HTTPS on the metrics address */
    const char *tls_cert_file;        /* PEM (a chain is fine), with ... */
    const char *tls_key_file;         /* ... its key; both NULL: self-signed in memory */
    ms_server_authorize_fn authorize; /* NULL: /metrics is open; needs metrics_tls */
    ms_server_lookup_fn lookup;       /* NULL: every token waits for authorize */
    void *authorize_ctx;              /* for both */
    size_t max_pending_auth;          /* 0: MS_SERVER_MAX_PENDING_AUTH */
    size_t max_pending_auth_per_peer; /* 0: MS_SERVER_MAX_PENDING_AUTH_PER_PEER */
} ms_server_options_t;

typedef struct ms_server ms_server_t;

/* Bind both addresses and start serving. NULL with the reason in errbuf when
 * an address is malformed or cannot be bound (MS_ERR_INVALID / MS_ERR_IO),
 * or the certificate or key cannot be read or do not match (MS_ERR_TLS). */
ms_server_t *ms_server_start(const ms_server_options_t *opts, char *errbuf, size_t errlen);

/* The bound ports (useful with port 0); -1 when that endpoint is off. */
int ms_server_metrics_port(const ms_server_t *s);
int ms_server_health_port(const ms_server_t *s);

/* Stop serving, join the threads, free. An authorization check in progress
 * is waited for (the callback should bound its own time). NULL does nothing. */
void ms_server_stop(ms_server_t *s);

/* A self-signed serving certificate as controller-runtime makes one for its
 * metrics: a new EC P-256 key, subject CN localhost, subject alternative
 * names DNS:localhost and IP:127.0.0.1, valid from an hour ago for one year,
 * for server authentication. Appends the PEM certificate to cert_pem and the
 * PEM key (SEC 1, "EC PRIVATE KEY") to key_pem (both initialised by the caller, which owns
 * them and should wipe key_pem). MS_ERR_TLS with errbuf set on failure. */
ms_err_t ms_server_self_signed_cert(ms_buf_t *cert_pem, ms_buf_t *key_pem, char *errbuf,
                                    size_t errlen);

#endif
