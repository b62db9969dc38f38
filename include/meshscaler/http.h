/*
 * http.h - the HTTP layer both clients stand on (Kubernetes API, Prometheus):
 * libcurl with reusable connections, TLS from files or in-memory PEM,
 * per-request timeouts, capped response bodies, streaming for watches, and
 * batches of concurrent requests through libcurl's multi interface.
 *
 * Ownership: ms_http_client_new() copies every option string; the client owns
 * its curl share and its idle handles and must outlive every request made
 * with it. A request only borrows its strings for the duration of the call;
 * a response owns its body.
 *
 * Threads, the one rule: a client may be used by any number of threads at
 * once, and one client is enough for a whole process. A connection belongs
 * to one transfer at a time and is never shared between threads (libcurl
 * cannot share live connections between concurrent threads). What the
 * threads share is the client's curl share (DNS answers and TLS sessions,
 * under its locks) and its pool of idle easy handles: ms_http_do() takes an
 * idle handle (or makes one), runs the transfer on the calling thread, and
 * gives the handle back with its connection still open, so the next request
 * of any thread reuses that connection. Hence N requests at once use N
 * connections, and after a burst up to 32 idle ones stay open. A batch
 * belongs to one thread: its transfers share their own multi handle's
 * connections (HTTP/2 streams multiplexed on one), not the pool. Call
 * ms_http_global_init() once, before threads start.
 */
#ifndef MESHSCALER_HTTP_H
#define MESHSCALER_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/buf.h"
#include "meshscaler/error.h"

/* Default cap on a buffered response body. */
#define MS_HTTP_DEFAULT_MAX_BODY (64u * 1024u * 1024u)

typedef struct {
    /* Server CA: a file, or PEM bytes (kubeconfig certificate-authority-data). */
    const char *ca_file;
    const char *ca_pem;
    size_t ca_pem_len;
    /* Client certificate and key, likewise. */
    const char *cert_file;
    const char *cert_pem;
    size_t cert_pem_len;
    const char *key_file;
    const char *key_pem;
    size_t key_pem_len;
    bool insecure_skip_verify; /* callers warn when they set it */
    const char *server_name;   /* TLS SNI and verification name override */
} ms_http_tls_t;

typedef struct {
    ms_http_tls_t tls;
    const char *proxy_url;   /* NULL: libcurl's environment defaults */
    const char *user_agent;  /* NULL: "meshscaler/<version>" */
    long connect_timeout_ms; /* 0: 10 s */
} ms_http_options_t;

typedef struct ms_http_client ms_http_client_t;
typedef struct ms_http_response ms_http_response_t;

/* Streaming sink: called with each chunk of the body as it arrives.
 * Return non-zero to abort the transfer (the call then fails with
 * MS_ERR_CANCELLED unless the sink set its own error). */
typedef int (*ms_http_sink_fn)(void *ctx, const char *data, size_t len);

typedef struct {
    const char *method; /* "GET" when NULL */
    const char *url;
    const char *const *headers; /* "Name: value" lines */
    size_t nheaders;
    const char *body; /* NULL: no body */
    size_t body_len;
    long timeout_ms;      /* whole transfer; 0: no limit (watches) */
    long idle_timeout_ms; /* abort (MS_ERR_TIMEOUT) when no header or body byte
                             arrives for this long, within about 1 s; 0: off */
    ms_http_sink_fn sink; /* when set, the body goes here, not to the response */
    void *sink_ctx;
    const atomic_bool *cancel; /* when it becomes true the transfer stops */
    /* Batches only: called on the batch's thread as soon as this transfer
     * ends (its response complete, err set), so the caller can use the body
     * and free it (ms_http_response_cleanup) while the others go on. */
    void (*on_done)(void *ctx, ms_http_response_t *resp);
    void *done_ctx;
    /* Batches only: requests of one group (a tenant) hold at most their
     * fair share of the batch's slots, max_in_flight divided among the
     * groups with requests waiting or running (at least one slot each);
     * within a group they start in the order added. 0: no group, no limit. */
    size_t group;
} ms_http_request_t;

struct ms_http_response {
    ms_err_t err;               /* transport result: MS_OK when a status arrived */
    char error[MS_ERRBUF_SIZE]; /* one line naming the URL and the cause */
    long status;                /* HTTP status, 0 if none; set as soon as the
                                   status line arrives (sinks may read it) */
    ms_buf_t body;              /* owned, capped; empty when streamed */
    double retry_after_seconds; /* from Retry-After (seconds form); -1 if absent */
    char content_type[96];
    long http_version; /* 1, 2 */
    double total_seconds;
    long new_connections; /* connections this transfer opened; 0: it reused one */
};

/* Once per process, before threads. Returns MS_ERR_IO if libcurl refuses. */
ms_err_t ms_http_global_init(void);
void ms_http_global_cleanup(void);

/* New client, or NULL with the reason in errbuf (MS_ERR_NOMEM/MS_ERR_INVALID). */
ms_http_client_t *ms_http_client_new(const ms_http_options_t *opts, char *errbuf, size_t errlen);
/* NULL does nothing. */
void ms_http_client_free(ms_http_client_t *client);

/* max_body 0 means MS_HTTP_DEFAULT_MAX_BODY. */
void ms_http_response_init(ms_http_response_t *resp, size_t max_body);
/* Frees the body; the response may be reused after ms_http_response_init. */
void ms_http_response_cleanup(ms_http_response_t *resp);

/* One blocking transfer. Returns resp->err: MS_OK when an HTTP status arrived
 * (any status: callers judge it), else MS_ERR_UNAVAILABLE (refused, DNS),
 * MS_ERR_TIMEOUT, MS_ERR_TLS, MS_ERR_TOOLARGE (body past its cap),
 * MS_ERR_CANCELLED, MS_ERR_IO (connection dropped mid-body and the rest).
 * After any of these errors the connection is closed, never reused. Every
 * connection has TCP keepalive (first probe after 30 s idle, then every 10 s). */
ms_err_t ms_http_do(ms_http_client_t *client, const ms_http_request_t *req,
                    ms_http_response_t *resp);

/* A batch runs many requests concurrently, at most max_in_flight at a time,
 * on the calling thread. Requests and responses are borrowed until
 * ms_http_batch_run() returns. */
typedef struct ms_http_batch ms_http_batch_t;

ms_http_batch_t *ms_http_batch_new(ms_http_client_t *client, size_t max_in_flight);
/* Keep up to n idle connections open between runs (CURLMOPT_MAXCONNECTS).
 * Without it libcurl keeps 4 per transfer still in the batch, so as a run
 * winds down it closes most of what it opened: a batch reused to read the
 * same many servers again (scrape_fetch.h) sets it to their number. */
void ms_http_batch_keep_connections(ms_http_batch_t *batch, size_t n);
void ms_http_batch_free(ms_http_batch_t *batch);
/* Queue a request; MS_OK (out of memory aborts, as xalloc.h says). May be
 * called from an on_done callback while the batch runs (a failed read
 * replaced by another, scrape_fetch.h): the request then joins this run,
 * group 0 only (MS_ERR_INVALID otherwise: the fair shares were counted when
 * the run started). */
ms_err_t ms_http_batch_add(ms_http_batch_t *batch, const ms_http_request_t *req,
                           ms_http_response_t *resp);
/* Run every queued request to completion; each response gets its own err.
 * Returns MS_OK unless the batch itself failed (MS_ERR_NOMEM, MS_ERR_IO).
 * The batch is empty afterwards and can be reused. */
ms_err_t ms_http_batch_run(ms_http_batch_t *batch);
/* The same, but bounded: at `deadline` (monotonic seconds; 0: none) every
 * transfer still running or not started ends with MS_ERR_TIMEOUT, and when
 * *stop turns true (may be NULL) with MS_ERR_CANCELLED; each still gets its
 * on_done. */
ms_err_t ms_http_batch_run_until(ms_http_batch_t *batch, double deadline, const atomic_bool *stop);

#endif
