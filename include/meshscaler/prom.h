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
 * what the decoder built (ms_prom_result_cleanup()): a few blocks, not one
 * per string, so an answer of 50,000 series decodes to about its own size.
 * Label names and values returned by ms_prom_series_label() are borrowed
 * from the result.
 *
 * Threads: a client may be shared by threads (the bearer token is re-read
 * under a lock); one ms_prom_run() call uses one batch on the calling thread.
 * The decoder is reentrant. Secrets (token, password) are never logged or
 * written into messages.
 *
 * Implemented in src/prom/ by client.c (the client), decode.c,
 * decode_series.c and jscan.c (the decoder), and selector.c (the selector
 * scanner and the user-queries policy).
 */
#ifndef MESHSCALER_PROM_H
#define MESHSCALER_PROM_H

#include <stdbool.h>
#include <stddef.h>

#include "meshscaler/error.h"
#include "meshscaler/http.h"

/* Why a value is missing (or MS_PROM_OK). X(name, sentence) */
#define MS_PROM_REASON_MAP(X)                                                                      \
    X(OK, "the value was observed")                                                                \
    X(UNAVAILABLE, "Prometheus could not be reached")                                              \
    X(TIMEOUT, "the query timed out")                                                              \
    X(TLS, "the TLS handshake with Prometheus failed")                                             \
    X(TRANSPORT, "the connection to Prometheus failed during the transfer")                        \
    X(CANCELLED, "the query was cancelled")                                                        \
    X(CREDENTIALS, "the bearer token file cannot be read")                                         \
    X(UNAUTHORIZED, "Prometheus refused the credentials")                                          \
    X(HTTP_STATUS, "Prometheus answered with an unexpected HTTP status")                           \
    X(BAD_QUERY, "Prometheus rejected the query as invalid")                                       \
    X(EXECUTION, "Prometheus failed to execute the query")                                         \
    X(SERVER_ERROR, "Prometheus reported an internal error")                                       \
    X(MALFORMED, "the response is not a Prometheus API response")                                  \
    X(TRUNCATED, "the response ended before the JSON was complete")                                \
    X(TOO_LARGE, "the response exceeds its size limit")                                            \
    X(NO_DATA, "the query returned no samples")                                                    \
    X(AMBIGUOUS, "the query returned more than one sample where one number was expected")          \
    X(WRONG_TYPE, "the query returned a matrix or a string, not one number")                       \
    X(NOT_A_NUMBER, "the value is NaN")                                                            \
    X(INFINITE, "the value is infinite")                                                           \
    X(STALE, "the newest sample is older than the staleness limit")                                \
    X(NO_LIMIT, "no limit is known, so no utilization can be computed")                            \
    X(TEMPLATE, "the query template cannot be expanded")                                           \
    X(NOT_CONFIGURED, "no query is configured for this value")                                     \
    X(OVER_SHARE, "the object's share of the Prometheus round was used up")

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

struct ms__prom_label; /* private to the decoder */

typedef struct {
    ms_prom_point_t *points; /* vector: exactly 1; matrix: 0 or more, oldest first
                                (the decoder sorts them; two at one time: MALFORMED) */
    size_t npoints;
    /* private: the labels, in the result's label table; read them with
     * ms_prom_series_label() */
    const struct ms__prom_label *labels_;
    size_t nlabels_;
} ms_prom_series_t;

typedef struct {
    ms_prom_reason_t reason;      /* MS_PROM_OK: a well-formed success response */
    char message[MS_ERRBUF_SIZE]; /* one line; "" when OK */
    long http_status;             /* 0 when none arrived */
    ms_prom_type_t type;
    ms_prom_point_t scalar;   /* scalar results */
    const char *string_value; /* string results, borrowed from the result */
    ms_prom_series_t *series; /* vector and matrix results */
    size_t nseries;
    size_t nwarnings;             /* Prometheus "warnings"; the data is still valid */
    double seconds;               /* how long the answer took (a batch's run fills it) */
    size_t bytes;                 /* answer bytes read (a batch's run fills it) */
    char warning[MS_ERRBUF_SIZE]; /* the first one */
    /* private: besides series, a result owns three blocks, whatever the
     * number of series: every point, every label, and one arena holding
     * the label names and values (and string_value) */
    ms_prom_point_t *store_;
    struct ms__prom_label *labels_;
    char *arena_;
} ms_prom_result_t;

/* Empty result (reason MS_PROM_NO_DATA, nothing owned). */
void ms_prom_result_init(ms_prom_result_t *r);
/* Free what the result owns and re-initialise it. NULL does nothing. */
void ms_prom_result_cleanup(ms_prom_result_t *r);

/* Decode one response body (len bytes, need not be NUL-terminated) that
 * arrived with HTTP status http_status. *out must be initialised; it is
 * cleaned and refilled. Returns out->reason. Never reads past len. The
 * members of the answer may come in any order; unknown ones are skipped.
 * A body cut short is MS_PROM_TRUNCATED, one that is not JSON (or nests
 * deeper than 64 levels) MS_PROM_MALFORMED. */
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
ms_prom_reason_t ms_prom_result_number(const ms_prom_result_t *r, double ref_time, double max_age,
                                       double *value, char *msg, size_t msglen);

/* The vector an instant query at time t would have answered, taken from a
 * range query's matrix evaluated at t: every series with a point at t (within
 * a millisecond), with that one point. *out must be initialised; it is
 * cleaned and refilled. Its series borrow their labels from matrix, which
 * must outlive it (ms_prom_result_cleanup on out frees only what out owns).
 * A matrix that is not OK gives its reason and message; a result that is not
 * a matrix gives WRONG_TYPE. Returns out->reason. */
ms_prom_reason_t ms_prom_result_at(const ms_prom_result_t *matrix, double t, ms_prom_result_t *out);

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
    ms_http_tls_t tls;       /* CA file or PEM, client cert, insecure_skip_verify */
    long timeout_ms;         /* per query, whole transfer; 0: 10 000 */
    long connect_timeout_ms; /* 0: 5 000 */
    size_t max_in_flight;    /* concurrent queries per ms_prom_run(); 0: 8 */
    size_t max_body;         /* per response; 0: 1 MiB */
    /* The circuit breaker: after this many runs in a row in which every query
     * failed in transport (refused, timeout, TLS, dropped), runs send nothing
     * and report UNAVAILABLE for a backoff (0: 3 runs; 5 s, doubling up to
     * breaker_max_backoff, 0: 60 s, while probes keep failing), then one run
     * probes again. A caller that runs every P seconds caps it near P: a
     * longer wait only leaves its objects blind after Prometheus is back. */
    unsigned breaker_runs;
    double breaker_backoff;
    double breaker_max_backoff;
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
    size_t max_bytes; /* the largest answer this query may read when more than the
                         client's max_body (--prometheus-max-response-bytes); 0: that */
    bool preset;      /* a preset's query (prom_sources.h): series per namespace,
                         workload and field, not one number */
    /* A round's fair shares (tick.c): 0 for none. A query stopped at its own
     * share ends as MS_PROM_OVER_SHARE, and no other query is touched. */
    double share_seconds;    /* the longest it may run, when less than the client's timeout */
    size_t share_bytes;      /* the largest answer it may read, when less than its cap */
    size_t group;            /* its tenant: groups share the run's slots fairly (http.h) */
    ms_prom_result_t result; /* initialised and filled by ms_prom_run() */
} ms_prom_query_t;

/* Run n queries, at most max_in_flight at a time, and fill each result
 * (any previous result is cleaned first). Each answer is decoded as soon as
 * it arrives and its body freed, so a run holds at most max_in_flight bodies.
 * Returns MS_OK unless the batch itself could not run (MS_ERR_NOMEM,
 * MS_ERR_IO); per-query failures are in each result's reason. */
ms_err_t ms_prom_run(ms_prom_client_t *client, ms_prom_query_t *queries, size_t n);

typedef struct {
    double deadline;           /* monotonic seconds: what is still running then ends as
                                  TIMEOUT ("the round's deadline passed"); 0: none */
    const atomic_bool *cancel; /* shutdown: what is running ends as CANCELLED; may be NULL */
    size_t max_total_bytes;    /* all bodies of the run together; past it the rest ends
                                  as TOO_LARGE; 0: no cap */
    size_t max_user_bytes;     /* the bodies of queries that are not presets together:
                                  past it those end as TOO_LARGE while the presets go on
                                  (the presets' reserve is the difference); 0: no own cap */
} ms_prom_run_options_t;

/* ms_prom_run, bounded in time and bytes (a round's tick). */
ms_err_t ms_prom_run_bounded(ms_prom_client_t *client, ms_prom_query_t *queries, size_t n,
                             const ms_prom_run_options_t *opts);

/* Counters since the client was created (for status pages and benches). */
typedef struct {
    unsigned long long queries;  /* requests sent */
    unsigned long long failures; /* results with a reason other than OK/NO_DATA */
    unsigned long long token_reads;
    unsigned long long skipped; /* queries not sent: the circuit breaker was open */
    unsigned long long opened;  /* times the circuit breaker opened */
    bool open;                  /* the circuit breaker is open now */
} ms_prom_client_stats_t;
void ms_prom_client_stats(ms_prom_client_t *client, ms_prom_client_stats_t *out);
/* Queries one run keeps in flight, and the answer cap of a query. */
void ms_prom_client_limits(const ms_prom_client_t *client, size_t *max_in_flight, size_t *max_body);

/* ---- who may read what: selectors of user PromQL ----
 *
 * A lexical scanner, not a parser: it follows Prometheus' lexer far enough
 * to find every vector and matrix selector of an expression (or of a query
 * template, before {{placeholder}} expansion) and report its label matchers,
 * stepping over strings, comments, numbers, durations, [range] and subquery
 * brackets, offset and @ modifiers, function names, keywords and the label
 * lists of by, without, on, ignoring, group_left and group_right. A word
 * that PromQL reads either way (a metric may be called `sum`, `by` or `or`)
 * counts as a selector unless what precedes it makes it an operator or a
 * modifier: when unsure the scanner reports a selector, never fewer.
 * Reentrant; nothing is allocated. Pointers in what it reports point into
 * the query and are valid while the query is. */

typedef enum {
    MS_PROM_MATCH_EQ = 0, /* =  */
    MS_PROM_MATCH_NE,     /* != */
    MS_PROM_MATCH_RE,     /* =~ */
    MS_PROM_MATCH_NRE     /* !~ */
} ms_prom_match_op_t;

/* One label matcher as written (not NUL-terminated, escapes not decoded). */
typedef struct {
    const char *name; /* an identifier, or a quoted label name with its quotes;
                         "__name__" for a lone quoted metric name ({"a.b"}) */
    size_t name_len;
    ms_prom_match_op_t op;
    const char *value; /* the string literal with its quotes */
    size_t value_len;
} ms_prom_matcher_t;

/* Most label matchers one selector may have; more is a scan error. */
#define MS_PROM_MAX_MATCHERS 32

typedef struct {
    size_t offset;      /* byte offset of the selector in the query */
    size_t len;         /* its bytes: the metric name and/or {...}, no modifiers */
    const char *metric; /* the metric name before the braces; NULL when none */
    size_t metric_len;
    ms_prom_matcher_t matchers[MS_PROM_MAX_MATCHERS];
    size_t nmatchers;
} ms_prom_selector_t;

/* Called once per selector, in order; return false to stop the scan. The
 * selector is borrowed for the call. */
typedef bool (*ms_prom_selector_fn)(const ms_prom_selector_t *sel, void *ctx);

/* Scan query and call fn (may be NULL) for each selector. MS_OK when the
 * whole query was read or fn stopped the scan; MS_ERR_PARSE with a one-line
 * reason naming a byte offset when the query cannot be read (an unclosed
 * string, brace, bracket or parenthesis, a character PromQL does not allow,
 * malformed label matchers) or holds nothing but blanks and comments. */
ms_err_t ms_prom_selectors_scan(const char *query, ms_prom_selector_fn fn, void *ctx, char *errbuf,
                                size_t errlen);

/* The longest window any range or subquery of query reads, in seconds:
 * rate(x[5m]) 300, max_over_time(y[1h:1m]) 3600; 0 when the query has none
 * (a recording rule hides its window) or only ranges that are expressions
 * ([step()*2]). Templates may be given as they are: {{...}} sits in
 * strings. MS_OK, or MS_ERR_PARSE as ms_prom_selectors_scan (then *seconds
 * is 0). */
ms_err_t ms_prom_query_window(const char *query, double *seconds, char *errbuf, size_t errlen);

/* --user-queries: who may run their own PromQL (spec.metrics[].prometheus.
 * query and the guardrail queries) with the controller's Prometheus
 * credentials. Presets are not user PromQL and always run. */
typedef enum {
    MS_USER_QUERIES_ALLOW = 0,  /* anything (the default, for compatibility) */
    MS_USER_QUERIES_NAMESPACED, /* only selectors restricted to the object's namespace */
    MS_USER_QUERIES_DENY        /* none: presets only */
} ms_user_queries_t;

/* "allow", "namespaced" or "deny" into *out; MS_ERR_INVALID (and *out
 * untouched) for anything else, NULL included. */
ms_err_t ms_user_queries_parse(const char *text, ms_user_queries_t *out);
/* "allow", "namespaced", "deny"; "unknown" outside the enum. Static. */
const char *ms_user_queries_name(ms_user_queries_t policy);

/* May a MeshAutoscaler run this query template under policy? ALLOW: always
 * MS_OK. DENY: always MS_ERR_INVALID. NAMESPACED: MS_OK only when every
 * selector has the equality matcher namespace="{{namespace}}" (any quotes;
 * =~, != or a literal namespace do not count) and no function reads series
 * its arguments did not select (info()); a query without selectors
 * (vector(1)) passes. An unreadable or empty query is refused, as is a
 * comment that ends at a lone carriage return (the template expander and
 * Prometheus disagree on where it ends). Check the template, before
 * expansion. A refusal is MS_ERR_INVALID (a spec error) with one line in
 * errbuf naming the first offending selector and its byte offset. */
ms_err_t ms_prom_user_query_check(ms_user_queries_t policy, const char *tmpl, char *errbuf,
                                  size_t errlen);

#endif
