/*
 * kube_review.c - TokenReview and SubjectAccessReview, and the decision cache
 * in front of them (kube_review.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "meshscaler/json.h"
#include "meshscaler/kube_review.h"
#include "meshscaler/xalloc.h"

#define TOKEN_REVIEWS "/apis/authentication.k8s.io/v1/tokenreviews"
#define ACCESS_REVIEWS "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#define MAX_TOKEN 16384
#define MAX_GROUPS 256

/* ---- helpers ---- */

/* Copy text into buf[cap] on one line (control bytes become spaces). */
static void copy_line(char *buf, size_t cap, const char *text)
{
    size_t i = 0;

    if (buf == NULL || cap == 0)
        return;
    for (; text != NULL && text[i] != '\0' && i + 1 < cap; i++)
        buf[i] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
    buf[i] = '\0';
}

/* A bearer token is printable ASCII without spaces (RFC 6750 b64token is
 * narrower still); anything else is refused before it reaches the server. */
static bool plausible_token(const char *token)
{
    size_t n = 0;

    if (token == NULL)
        return false;
    for (; token[n] != '\0'; n++)
        if ((unsigned char)token[n] <= 0x20 || (unsigned char)token[n] >= 0x7f || n >= MAX_TOKEN)
            return false;
    return n > 0;
}

/* POST obj to path and parse the answer into *out; the printed body is
 * wiped afterwards (it may hold a token). */
static ms_err_t post(ms_kube_client_t *c, const char *path, const cJSON *obj, cJSON **out,
                     ms_kube_error_t *kerr)
{
    char *body = ms_xcheck(cJSON_PrintUnformatted(obj), "review body");
    ms_err_t err;

    err = ms_kube_request(c, "POST", path, "application/json", body, strlen(body), out, kerr);
    explicit_bzero(body, strlen(body));
    cJSON_free(body);
    return err;
}

void ms_kube_user_cleanup(ms_kube_user_t *u)
{
    if (u == NULL)
        return;
    free(u->username);
    free(u->uid);
    for (size_t i = 0; i < u->ngroups; i++)
        free(u->groups[i]);
    free(u->groups);
    cJSON_Delete(u->extra);
    memset(u, 0, sizeof *u);
}

/* ---- the reviews ---- */

static void read_user(const cJSON *user, ms_kube_user_t *u)
{
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(user, "groups");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(user, "extra");
    const cJSON *g;

    u->username = ms_xstrdup(ms_json_string_member(user, "username", NULL, ""));
    u->uid = ms_xstrdup(ms_json_string_member(user, "uid", NULL, ""));
    if (cJSON_IsArray(groups)) {
        u->groups = ms_xcalloc(MAX_GROUPS, sizeof *u->groups);
        cJSON_ArrayForEach(g, groups)
        {
            if (cJSON_IsString(g) && u->ngroups < MAX_GROUPS)
                u->groups[u->ngroups++] = ms_xstrdup(g->valuestring);
        }
    }
    if (cJSON_IsObject(extra))
        u->extra = ms_xcheck(cJSON_Duplicate(extra, true), "user extra");
}

ms_err_t ms_kube_review_token(ms_kube_client_t *c, const char *token, bool *authenticated,
                              ms_kube_user_t *user, char *why, size_t why_cap,
                              ms_kube_error_t *kerr)
{
    cJSON *req, *spec, *tok, *resp = NULL;
    const cJSON *status;
    ms_err_t err;

    memset(user, 0, sizeof *user);
    *authenticated = false;
    copy_line(why, why_cap, "");
    if (!plausible_token(token)) {
        copy_line(why, why_cap, "not a bearer token");
        return MS_OK;
    }
    req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "apiVersion", "authentication.k8s.io/v1");
    cJSON_AddStringToObject(req, "kind", "TokenReview");
    spec = cJSON_AddObjectToObject(req, "spec");
    tok = ms_xcheck(cJSON_AddStringToObject(spec, "token", token), "token review");
    err = post(c, TOKEN_REVIEWS, req, &resp, kerr);
    explicit_bzero(tok->valuestring, strlen(tok->valuestring));
    cJSON_Delete(req);
    if (err)
        return err;
    status = cJSON_GetObjectItemCaseSensitive(resp, "status");
    if (cJSON_IsTrue(ms_json_child(status, "authenticated"))) {
        *authenticated = true;
        read_user(cJSON_GetObjectItemCaseSensitive(status, "user"), user);
    } else {
        copy_line(why, why_cap, ms_json_string_member(status, "error", NULL, "token not accepted"));
    }
    cJSON_Delete(resp);
    return MS_OK;
}

ms_err_t ms_kube_review_access(ms_kube_client_t *c, const ms_kube_user_t *user,
                               const char *nonresource_path, const char *verb, bool *allowed,
                               char *reason, size_t reason_cap, ms_kube_error_t *kerr)
{
    cJSON *req, *spec, *attrs, *groups, *resp = NULL;
    const cJSON *status;
    const char *r, *eval;
    ms_err_t err;

    *allowed = false;
    copy_line(reason, reason_cap, "");
    req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "apiVersion", "authorization.k8s.io/v1");
    cJSON_AddStringToObject(req, "kind", "SubjectAccessReview");
    spec = cJSON_AddObjectToObject(req, "spec");
    cJSON_AddStringToObject(spec, "user", user->username ? user->username : "");
    if (user->uid != NULL && user->uid[0] != '\0')
        cJSON_AddStringToObject(spec, "uid", user->uid);
    groups = cJSON_AddArrayToObject(spec, "groups");
    for (size_t i = 0; i < user->ngroups; i++)
        cJSON_AddItemToArray(groups, cJSON_CreateString(user->groups[i]));
    if (user->extra != NULL)
        cJSON_AddItemToObject(spec, "extra", cJSON_Duplicate(user->extra, true));
    attrs = cJSON_AddObjectToObject(spec, "nonResourceAttributes");
    cJSON_AddStringToObject(attrs, "path", nonresource_path);
    cJSON_AddStringToObject(attrs, "verb", verb);
    err = post(c, ACCESS_REVIEWS, req, &resp, kerr);
    cJSON_Delete(req);
    if (err)
        return err;
    status = cJSON_GetObjectItemCaseSensitive(resp, "status");
    *allowed = cJSON_IsTrue(ms_json_child(status, "allowed")) &&
               !cJSON_IsTrue(ms_json_child(status, "denied"));
    r = ms_json_string_member(status, "reason", NULL, NULL);
    eval = ms_json_string_member(status, "evaluationError", NULL, NULL);
    if (reason != NULL && reason_cap > 0) {
        char line[1024];
        snprintf(line, sizeof line, "%s%s%s", r ? r : "", r && eval ? "; " : "", eval ? eval : "");
        copy_line(reason, reason_cap, line);
    }
    cJSON_Delete(resp);
    return MS_OK;
}

/* ---- the cache ---- */

typedef struct {
    unsigned char key[32]; /* SHA-256(path NUL verb NUL token) */
    ms_kube_review_decision_t decision;
    double expires; /* 0: a free slot */
} entry_t;

struct ms_kube_review_cache {
    pthread_mutex_t lock;
    entry_t *entries;
    size_t cap;
    ms_kube_review_cache_stats_t stats;
};

static void cache_key(const char *token, const char *path, const char *verb, unsigned char *key)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int n = 0;

    if (md == NULL || !EVP_DigestInit_ex(md, EVP_sha256(), NULL) ||
        !EVP_DigestUpdate(md, path, strlen(path) + 1) ||
        !EVP_DigestUpdate(md, verb, strlen(verb) + 1) ||
        !EVP_DigestUpdate(md, token, strlen(token)) || !EVP_DigestFinal_ex(md, key, &n) || n != 32)
        ms_oom("token hash"); /* SHA-256 is always there; failing here is memory */
    EVP_MD_CTX_free(md);
}

ms_kube_review_cache_t *ms_kube_review_cache_new(size_t max_entries)
{
    ms_kube_review_cache_t *cache = ms_xcalloc(1, sizeof *cache);

    cache->cap = max_entries ? max_entries : MS_KUBE_REVIEW_CACHE_SIZE;
    cache->entries = ms_xcalloc(cache->cap, sizeof *cache->entries);
    pthread_mutex_init(&cache->lock, NULL);
    return cache;
}

void ms_kube_review_cache_free(ms_kube_review_cache_t *cache)
{
    if (cache == NULL)
        return;
    pthread_mutex_destroy(&cache->lock);
    free(cache->entries);
    free(cache);
}

/* The entry for key, live or not; NULL when absent. Under the lock. */
static entry_t *find(ms_kube_review_cache_t *cache, const unsigned char *key)
{
    for (size_t i = 0; i < cache->cap; i++)
        if (cache->entries[i].expires != 0 && memcmp(cache->entries[i].key, key, 32) == 0)
            return &cache->entries[i];
    return NULL;
}

bool ms_kube_review_cache_get(ms_kube_review_cache_t *cache, const char *token, const char *path,
                              const char *verb, double now, ms_kube_review_decision_t *decision)
{
    unsigned char key[32];
    entry_t *e;
    bool hit;

    cache_key(token, path, verb, key);
    pthread_mutex_lock(&cache->lock);
    e = find(cache, key);
    hit = e != NULL && now < e->expires;
    if (hit) {
        *decision = e->decision;
        cache->stats.hits++;
    } else {
        cache->stats.misses++;
    }
    pthread_mutex_unlock(&cache->lock);
    return hit;
}

void ms_kube_review_cache_put(ms_kube_review_cache_t *cache, const char *token, const char *path,
                              const char *verb, ms_kube_review_decision_t decision, double now)
{
    unsigned char key[32];
    entry_t *e, *soonest = NULL;

    if (decision == MS_KUBE_REVIEW_ERROR)
        return;
    cache_key(token, path, verb, key);
    pthread_mutex_lock(&cache->lock);
    e = find(cache, key);
    /* Else a free or expired slot, else the entry that expires soonest. */
    for (size_t i = 0; e == NULL && i < cache->cap; i++) {
        entry_t *x = &cache->entries[i];
        if (x->expires == 0 || x->expires <= now)
            e = x;
        else if (soonest == NULL || x->expires < soonest->expires)
            soonest = x;
    }
    if (e == NULL) {
        e = soonest;
        cache->stats.evictions++;
    }
    if (e->expires == 0)
        cache->stats.entries++;
    memcpy(e->key, key, sizeof e->key);
    e->decision = decision;
    e->expires = now + (decision == MS_KUBE_REVIEW_ALLOWED ? MS_KUBE_REVIEW_TTL_ALLOWED
                                                           : MS_KUBE_REVIEW_TTL_DENIED);
    pthread_mutex_unlock(&cache->lock);
}

void ms_kube_review_cache_stats(ms_kube_review_cache_t *cache, ms_kube_review_cache_stats_t *out)
{
    pthread_mutex_lock(&cache->lock);
    *out = cache->stats;
    pthread_mutex_unlock(&cache->lock);
}

/* ---- the whole check ---- */

static void failed(ms_kube_review_result_t *out, const char *what, const ms_kube_error_t *kerr)
{
    char line[sizeof kerr->message + 64];

    out->decision = MS_KUBE_REVIEW_ERROR;
    snprintf(line, sizeof line, "%s failed: %s", what, kerr->message);
    copy_line(out->reason, sizeof out->reason, line);
}

/* Both reviews, no cache. */
static void review(ms_kube_client_t *c, const char *token, const char *path, const char *verb,
                   ms_kube_review_result_t *out)
{
    ms_kube_user_t user;
    ms_kube_error_t kerr;
    bool authenticated = false, allowed = false;

    if (ms_kube_review_token(c, token, &authenticated, &user, out->reason, sizeof out->reason,
                             &kerr) != MS_OK) {
        failed(out, "TokenReview", &kerr);
        return;
    }
    if (!authenticated) {
        out->decision = MS_KUBE_REVIEW_UNAUTHENTICATED;
        return;
    }
    copy_line(out->user, sizeof out->user, user.username);
    if (ms_kube_review_access(c, &user, path, verb, &allowed, out->reason, sizeof out->reason,
                              &kerr) != MS_OK) {
        failed(out, "SubjectAccessReview", &kerr);
    } else {
        out->decision = allowed ? MS_KUBE_REVIEW_ALLOWED : MS_KUBE_REVIEW_DENIED;
    }
    ms_kube_user_cleanup(&user);
}

void ms_kube_review_authorize(ms_kube_client_t *c, ms_kube_review_cache_t *cache, const char *token,
                              const char *path, const char *verb, double now,
                              ms_kube_review_result_t *out)
{
    memset(out, 0, sizeof *out);
    if (cache != NULL && ms_kube_review_cache_get(cache, token, path, verb, now, &out->decision)) {
        out->cached = true;
        return;
    }
    review(c, token, path, verb, out);
    if (cache != NULL)
        ms_kube_review_cache_put(cache, token, path, verb, out->decision, now);
}
