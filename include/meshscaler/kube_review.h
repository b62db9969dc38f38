/*
 * kube_review.h - ask the API server who a bearer token belongs to
 * (authentication.k8s.io/v1 TokenReview) and whether that user may do
 * something (authorization.k8s.io/v1 SubjectAccessReview), with a small
 * cache of decisions: what controller-runtime's
 * filters.WithAuthenticationAndAuthorization does for --metrics-secure.
 *
 * The caller's identity needs `create` on tokenreviews and
 * subjectaccessreviews. Tokens are never logged, never kept: the cache
 * holds a SHA-256 of (path, verb, token) only, and request bodies that
 * carried one are wiped after use.
 *
 * Cache: allowed decisions live MS_KUBE_REVIEW_TTL_ALLOWED seconds, denied
 * and unauthenticated ones MS_KUBE_REVIEW_TTL_DENIED; errors are never
 * cached. It holds a bounded number of entries; when full it reuses an
 * expired entry, else the one that expires soonest. Time is passed in
 * (monotonic seconds), so tests travel in time.
 *
 * Threads: the review calls are as thread-safe as the client; a cache may be
 * used by any number of threads (it has its own lock).
 */
#ifndef MESHSCALER_KUBE_REVIEW_H
#define MESHSCALER_KUBE_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"
#include "meshscaler/kube.h"

#define MS_KUBE_REVIEW_TTL_ALLOWED 60.0
#define MS_KUBE_REVIEW_TTL_DENIED 10.0
#define MS_KUBE_REVIEW_CACHE_SIZE 1024 /* default entries */

/* Who a token belongs to (TokenReview status.user). Owned strings. */
typedef struct {
    char *username;
    char *uid; /* "" when the server named none */
    char **groups;
    size_t ngroups;
    cJSON *extra; /* status.user.extra, or NULL */
} ms_kube_user_t;

/* Free what *u owns and zero it. NULL does nothing. */
void ms_kube_user_cleanup(ms_kube_user_t *u);

/* POST a TokenReview for token. MS_OK means the server answered: then
 * *authenticated says whether it accepted the token, and when it did *user
 * (zeroed first; the caller cleans it up) says who it is. A token that
 * cannot be one (empty, longer than 16 KiB, bytes outside printable ASCII)
 * is refused without a request. why (may be NULL) receives the server's
 * status.error when the token is not accepted. On error kerr says why and
 * *user is empty. */
ms_err_t ms_kube_review_token(ms_kube_client_t *c, const char *token, bool *authenticated,
                              ms_kube_user_t *user, char *why, size_t why_cap,
                              ms_kube_error_t *kerr);

/* POST a SubjectAccessReview: may user (name, uid, groups, extra) do verb on
 * the non-resource URL path ("/metrics", "get")? MS_OK means the server
 * answered: *allowed, and reason (may be NULL) receives status.reason and
 * any status.evaluationError. */
ms_err_t ms_kube_review_access(ms_kube_client_t *c, const ms_kube_user_t *user,
                               const char *nonresource_path, const char *verb, bool *allowed,
                               char *reason, size_t reason_cap, ms_kube_error_t *kerr);

/* ---- decisions and their cache ---- */

typedef enum {
    MS_KUBE_REVIEW_ALLOWED = 0,
    MS_KUBE_REVIEW_DENIED,          /* authenticated, not authorized */
    MS_KUBE_REVIEW_UNAUTHENTICATED, /* the token is not valid */
    MS_KUBE_REVIEW_ERROR            /* a review could not be made */
} ms_kube_review_decision_t;

typedef struct ms_kube_review_cache ms_kube_review_cache_t;

typedef struct {
    unsigned long hits, misses, evictions;
    size_t entries; /* live or not, currently stored */
} ms_kube_review_cache_stats_t;

/* A cache of at most max_entries (0: MS_KUBE_REVIEW_CACHE_SIZE). Allocation
 * failure aborts. */
ms_kube_review_cache_t *ms_kube_review_cache_new(size_t max_entries);
/* NULL does nothing. */
void ms_kube_review_cache_free(ms_kube_review_cache_t *cache);
/* The decision stored for (token, path, verb) and still live at now: true
 * and *decision set; false (a miss) otherwise. */
bool ms_kube_review_cache_get(ms_kube_review_cache_t *cache, const char *token, const char *path,
                              const char *verb, double now, ms_kube_review_decision_t *decision);
/* Store decision at now (MS_KUBE_REVIEW_ERROR is not stored). */
void ms_kube_review_cache_put(ms_kube_review_cache_t *cache, const char *token, const char *path,
                              const char *verb, ms_kube_review_decision_t decision, double now);
void ms_kube_review_cache_stats(ms_kube_review_cache_t *cache, ms_kube_review_cache_stats_t *out);

typedef struct {
    ms_kube_review_decision_t decision;
    bool cached;      /* answered from the cache: no request was made */
    char user[256];   /* the username, when a TokenReview named one */
    char reason[256]; /* one line: why not, or the error (never the token) */
} ms_kube_review_result_t;

/* The whole check: the cache (may be NULL), else a TokenReview and, for an
 * authenticated user, a SubjectAccessReview of (path, verb); the answer is
 * stored. now: monotonic seconds. Never fails: errors are a decision. */
void ms_kube_review_authorize(ms_kube_client_t *c, ms_kube_review_cache_t *cache, const char *token,
                              const char *path, const char *verb, double now,
                              ms_kube_review_result_t *out);

#endif
