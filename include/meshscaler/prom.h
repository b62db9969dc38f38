/*
 * prom.h - the Prometheus HTTP API client and its response decoder.
 *
 * The client sends instant (/api/v1/query) and range (/api/v1/query_range)
 * queries as form-encoded POSTs over the shared HTTP layer (http.h), many at
 * once through one bounded batch. The decoder turns every answer Prometheus
 * (or anything standing in its place) can give into a typed result, and
 * ms_prom_result_number() turns a result into one number or a *missing*
 * value with a reason. Nothing here ever makes a value up: NaN, +Inf, an
 * empty vector, two samples where one was expected, a stale sample, an error
 * body, garbage, a truncated body, a refused connection or a timeout all give
 * a reason other than MS_PROM_OK.
 *
 * Ownership: ms_prom_client_new() copies every option string. A query struct
 * borrows its query text for the duration of ms_prom_run(); its result owns
 * what the decoder built (ms_prom_result_cleanup()). Label names and values
 * returned by ms_prom_series_label() are borrowed from the result.
 *
 * Threads: a client may be shared by threads (the bearer token is re-read
 * under a lock); one ms_prom_run() call uses one batch on the calling thread.
 * The decoder is reentrant. Secrets (token, password) are never logged or
 * written into messages.
 */
#ifndef MESHSCALER_PROM_H
#define MESHSCALER_PROM_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/error.h"
#include "meshscaler/http.h"

/* Why a value is missing (or MS_PROM_OK). X(name, sentence) */
#define MS_PROM_REASON_MAP(X)                                                                  \
    X(OK, "the value was observed")                                                            \
    X(UNAVAILABLE, "Prometheus could not be reached")                                          \
    X(TIMEOUT, "the query timed out")                                                          \
    X(TLS, "the TLS handshake with Prometheus failed")                                         \
    X(TRANSPORT, "the connection to Prometheus failed during the transfer")                    \
    X(CANCELLED, "the query was cancelled")                                                    \
    X(CREDENTIALS, "the bearer token file cannot be read")                                     \
    X(UNAUTHORIZED, "Prometheus refused the credentials")                                      \
    X(HTTP_STATUS, "Prometheus answered with an unexpected HTTP status")                       \
    X(BAD_QUERY, "Prometheus rejected the query as invalid")                                   \
    X(EXECUTION, "Prometheus failed to execute the query")                                     \
    X(SERVER_ERROR, "Prometheus reported an internal error")                                   \
    X(MALFORMED, "the response is not a Prometheus API response")                              \
    X(TRUNCATED, "the response ended before the JSON was complete")                            \
    X(TOO_LARGE, "the response exceeds its size limit")                                        \
    X(NO_DATA, "the query returned no samples")                                                \
    X(AMBIGUOUS, "the query returned more than one sample where one number was expected")      \
    X(WRONG_TYPE, "the query returned a matrix or a string, not one number")                   \
    X(NOT_A_NUMBER, "the value is NaN")                                                        \
    X(INFINITE, "the value is infinite")                                                       \
    X(STALE, "the newest sample is older than the staleness limit")                            \
    X(NO_LIMIT, "no limit is known, so no utilization can be computed")                        \
    X(TEMPLATE, "the query template cannot be expanded")                                       \
    X(NOT_CONFIGURED, "no query is configured for this value")

typedef enum {
#define MS__PROM_REASON_ENUM(name, sentence) MS_PROM_##name,
    MS_PROM_REASON_MAP(MS__PROM_REASON_ENUM)
#undef MS__PROM_REASON_ENUM
        MS_PROM__COUNT
} ms_prom_reason_t;

/* "NO_DATA"; static, never NULL ("UNKNOWN" outside the enum). */
const char *ms_prom_reason_name(ms_prom_reason_t reason);
/* The explaining sentence; static, never NULL. */
const char *ms_prom_reason_sentence(ms_prom_reason_t reason);

typedef enum {
    MS_PROM_TYPE_NONE = 0,
    MS_PROM_TYPE_SCALAR,
    MS_PROM_TYPE_VECTOR,
    MS_PROM_TYPE_MATRIX,
    MS_PROM_TYPE_STRING
} ms_prom_type_t;

typedef struct {
    double t; /* unix seconds */
    double v; /* may be NaN or +-Inf: the decoder keeps what was sent */
} ms_prom_point_t;

typedef struct {
    const void *metric;     /* the labels; read them with ms_prom_series_label() */
    ms_prom_point_t *points; /* vector: exactly 1; matrix: 0 or more, oldest first */
    size_t npoints;
} ms_prom_series_t;

typedef struct {
    ms_prom_reason_t reason;     /* MS_PROM_OK: a well-formed success response */
    char message[MS_ERRBUF_SIZE]; /* one line; "" when OK */
    long http_status;            /* 0 when none arrived */
    ms_prom_type_t type;
    ms_prom_point_t scalar;    /* scalar results */
    const char *string_value;  /* string results, borrowed from the result */
    ms_prom_series_t *series;  /* vector and matrix results */
    size_t nseries;
    size_t nwarnings;          /* Prometheus "warnings"; the data is still valid */
    char warning[MS_ERRBUF_SIZE]; /* the first one */
    /* private */
    void *tree_;
    ms_prom_point_t *store_;
} ms_prom_result_t;

/* Empty result (reason MS_PROM_NO_DATA, nothing owned). */
void ms_prom_result_init(ms_prom_result_t *r);
/* Free what the result owns and re-initialise it. NULL does nothing. */
void ms_prom_result_cleanup(ms_prom_result_t *r);

/* Decode one response body (len bytes, need not be NUL-terminated) that
 * arrived with HTTP status http_status. *out must be initialised; it is
 * cleaned and refilled. Returns out->reason. Never reads past len. */
ms_prom_reason_t ms_prom_decode(const char *body, size_t len, long http_status,
                                ms_prom_result_t *out);

/* Decode an HTTP response from http.h: transport failures (refused, timeout,
 * TLS, cap exceeded, dropped) map to their reasons, anything with a status
 * goes through ms_prom_decode(). Returns out->reason. */
ms_prom_reason_t ms_prom_decode_response(const ms_http_response_t *resp, ms_prom_result_t *out);

/* Label `name` of a series, or NULL when the series lacks it. Borrowed from
 * the result that holds the series. */
const char *ms_prom_series_label(const ms_prom_series_t *s, const char *name);

/* The one number a result stands for: a scalar, or a vector of exactly one
 * sample. ref_time (unix seconds, 0: no check) and max_age (seconds, 0: no
 * check) reject samples older than ref_time - max_age as MS_PROM_STALE.
 * On MS_PROM_OK *value is finite; on any other reason *value is untouched
 * and msg (may be NULL) gets one line. */
ms_prom_reason_t ms_prom_result_number(const ms_prom_result_t *r, double ref_time,
                                       double max_age, double *value, char *msg, size_t msglen);

/* Parse a Prometheus sample value string ("1.5", "NaN", "+Inf", "-Inf",
 * "1e-3"). Strict: no spaces, hex or trailing bytes. Returns false (and
 * leaves *out untouched) on anything else. */
bool ms_prom_parse_value(const char *s, size_t len, double *out);

/* ---- the client ---- */

typedef struct {
    const char *url; /* base URL, e.g. "http://127.0.0.1:9090" or ".../prometheus" */
    /* Authentication, one of: a bearer token file (re-read when its inode,
     * size or mtime changes and at least every token_reread_seconds; the
     * last good token is kept while a re-read fails), a fixed bearer token
     * (the file wins when both are set), or basic auth. */
    const char *bearer_token_file;
    double token_reread_seconds; /* 0: 60 */
    const char *bearer_token;
    const char *basic_user;
    const char *basic_password;
    /* Extra request headers, "Name: value" (e.g. "X-Scope-OrgID: team-a"). */
    const char *const *headers;
    size_t nheaders;
    ms_http_tls_t tls;        /* CA file or PEM, client cert, insecure_skip_verify */
    long timeout_ms;          /* per query, whole transfer; 0: 10 000 */
    long connect_timeout_ms;  /* 0: 5 000 */
    size_t max_in_flight;     /* concurrent queries per ms_prom_run(); 0: 8 */
    size_t max_body;          /* per response; 0: 32 MiB */
} ms_prom_options_t;

typedef struct ms_prom_client ms_prom_client_t;

/* New client, or NULL with the reason in errbuf. The options are copied. */
ms_prom_client_t *ms_prom_client_new(const ms_prom_options_t *opts, char *errbuf, size_t errlen);
/* NULL does nothing. */
void ms_prom_client_free(ms_prom_client_t *client);

typedef struct {
    const char *query; /* borrowed PromQL */
    double time;       /* instant: evaluation time, unix seconds; 0: the server's now */
    bool range;        /* true: /api/v1/query_range over [start, end] by step */
    double start, end, step;
    ms_prom_result_t result; /* initialised and filled by ms_prom_run() */
} ms_prom_query_t;

/* Run n queries, at most max_in_flight at a time, and fill each result
 * (any previous result is cleaned first). Returns MS_OK unless the batch
 * itself could not run (MS_ERR_NOMEM, MS_ERR_IO); per-query failures are in
 * each result's reason. */
ms_err_t ms_prom_run(ms_prom_client_t *client, ms_prom_query_t *queries, size_t n);

/* Counters since the client was created (for status pages and benches). */
typedef struct {
    unsigned long long queries;  /* requests sent */
    unsigned long long failures; /* results with a reason other than OK/NO_DATA */
    unsigned long long token_reads;
} ms_prom_client_stats_t;
void ms_prom_client_stats(ms_prom_client_t *client, ms_prom_client_stats_t *out);

#endif
