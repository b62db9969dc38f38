/*
 * client.c - one authenticated, rate-limited Kubernetes API request:
 * token bucket, bearer token, retry after 429 (Retry-After) and after a 401
 * with a credential that can be refreshed, and typed errors from the
 * server's Status object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

#define DEFAULT_TIMEOUT_MS 30000L
#define MAX_RETRY_AFTER 30.0

static bool is_loopback(const char *server)
{
    const char *host = strstr(server, "://");

    host = host ? host + 3 : server;
    return strncmp(host, "127.", 4) == 0 || strncmp(host, "localhost", 9) == 0 ||
           strncmp(host, "[::1]", 5) == 0;
}

ms_kube_client_t *ms_kube_client_new(const ms_kube_config_t *cfg, const ms_kube_client_options_t *o,
                                     char *errbuf, size_t errlen)
{
    ms_kube_client_options_t defaults;
    ms_http_options_t h;
    ms_kube_client_t *c;

    if (o == NULL) {
        memset(&defaults, 0, sizeof defaults);
        o = &defaults;
    }
    c = ms_xcalloc(1, sizeof *c);
    ms__kube_ratelimit_init(&c->limiter, o->qps == 0 ? 5 : o->qps, o->burst > 0 ? o->burst : 10);
    pthread_mutex_init(&c->disc_lock, NULL);
    memset(&h, 0, sizeof h);
    h.tls.ca_file = cfg->ca_file;
    h.tls.ca_pem = cfg->ca_pem;
    h.tls.ca_pem_len = cfg->ca_pem_len;
    h.tls.cert_file = cfg->cert_file;
    h.tls.cert_pem = cfg->cert_pem;
    h.tls.cert_pem_len = cfg->cert_pem_len;
    h.tls.key_file = cfg->key_file;
    h.tls.key_pem = cfg->key_pem;
    h.tls.key_pem_len = cfg->key_pem_len;
    h.tls.insecure_skip_verify = cfg->insecure_skip_tls_verify;
    h.tls.server_name = cfg->tls_server_name;
    /* Without proxy-url, the environment's proxy (client-go's
     * ProxyFromEnvironment), except for a loopback server, which Go never
     * proxies ("" turns libcurl's environment lookup off). */
    h.proxy_url = cfg->proxy_url ? cfg->proxy_url : is_loopback(cfg->server) ? "" : NULL;
    h.user_agent = o->user_agent;
    c->http = ms_http_client_new(&h, errbuf, errlen);
    c->cred = ms_kube_cred_new(cfg, o->token_reload_seconds);
    if (c->http == NULL || c->cred == NULL) {
        ms_kube_client_free(c);
        return NULL;
    }
    c->server = ms_xstrdup(cfg->server);
    c->source = ms_xstrdup(cfg->source ? cfg->source : "configuration");
    c->namespace_ = ms_xstrdup(cfg->namespace_ ? cfg->namespace_ : "default");
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->max_retries = o->max_retries > 0   ? o->max_retries
                     : o->max_retries < 0 ? 0
                                          : 10; /* client-go's maxRetries */
    c->cancel = o->cancel;
    return c;
}

void ms_kube_client_free(ms_kube_client_t *c)
{
    if (c == NULL)
        return;
    ms_http_client_free(c->http);
    ms_kube_cred_free(c->cred);
    free(c->server);
    free(c->source);
    free(c->namespace_);
    ms__kube_ratelimit_cleanup(&c->limiter);
    while (c->gvs != NULL) { /* the discovery cache */
        ms__kube_gv_t *next = c->gvs->next;
        free(c->gvs->res);
        free(c->gvs);
        c->gvs = next;
    }
    pthread_mutex_destroy(&c->disc_lock);
    free(c);
}

const char *ms_kube_client_namespace(const ms_kube_client_t *c)
{
    return c->namespace_;
}

ms_kube_cred_t *ms_kube_client_cred(ms_kube_client_t *c)
{
    return c->cred;
}

void ms_kube_client_stats(const ms_kube_client_t *c, ms_kube_stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->requests = atomic_load(&c->n_requests);
    s->get = atomic_load(&c->n_get);
    s->list = atomic_load(&c->n_list);
    s->watch = atomic_load(&c->n_watch);
    s->create = atomic_load(&c->n_create);
    s->update = atomic_load(&c->n_update);
    s->patch = atomic_load(&c->n_patch);
    s->del = atomic_load(&c->n_delete);
    s->retries = atomic_load(&c->n_retries);
    s->throttled = atomic_load(&c->n_throttled);
    s->throttle_seconds = (double)atomic_load(&c->throttle_us) / 1e6;
    s->http_version = atomic_load(&c->http_version);
    s->connections = atomic_load(&c->n_connections);
}

/* Count a request by verb, as the API server's audit log would name it. */
static void count(ms_kube_client_t *c, const char *method, const char *path)
{
    const char *q = strchr(path, '?');

    atomic_fetch_add(&c->n_requests, 1);
    if (strcmp(method, "GET") == 0) {
        if (q != NULL && strstr(q, "watch=true") != NULL)
            atomic_fetch_add(&c->n_watch, 1);
        else if (ms__kube_path_is_collection(path))
            atomic_fetch_add(&c->n_list, 1);
        else
            atomic_fetch_add(&c->n_get, 1);
    } else if (strcmp(method, "POST") == 0) {
        atomic_fetch_add(&c->n_create, 1);
    } else if (strcmp(method, "PUT") == 0) {
        atomic_fetch_add(&c->n_update, 1);
    } else if (strcmp(method, "PATCH") == 0) {
        atomic_fetch_add(&c->n_patch, 1);
    } else if (strcmp(method, "DELETE") == 0) {
        atomic_fetch_add(&c->n_delete, 1);
    }
}

static ms_err_t err_of_status(long status)
{
    switch (status) {
    case 400:
    case 422:
        return MS_ERR_INVALID;
    case 401:
        return MS_ERR_UNAUTHORIZED;
    case 403:
        return MS_ERR_FORBIDDEN;
    case 404:
        return MS_ERR_NOTFOUND;
    case 409:
        return MS_ERR_CONFLICT;
    case 410:
        return MS_ERR_GONE;
    case 408:
    case 504:
        return MS_ERR_TIMEOUT;
    default:
        return status == 429 || status >= 500 ? MS_ERR_UNAVAILABLE : MS_ERR_HTTP;
    }
}

/* Kubernetes' StatusReason for a status, for responses without a Status. */
static const char *default_reason(long status)
{
    switch (status) {
    case 400:
        return "BadRequest";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 405:
        return "MethodNotAllowed";
    case 409:
        return "Conflict";
    case 410:
        return "Expired";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 500:
        return "InternalError";
    case 503:
        return "ServiceUnavailable";
    case 504:
        return "Timeout";
    default:
        return "";
    }
}

void ms__kube_error_from_status(ms_kube_error_t *kerr, const char *method, const char *path,
                                long status, const char *body, size_t len)
{
    cJSON *st = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(st, "reason");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(st, "message");
    const char *q = strchr(path, '?');
    int plen = q ? (int)(q - path) : (int)strlen(path);

    kerr->status = status;
    kerr->reason[0] = '\0';
    snprintf(kerr->reason, sizeof kerr->reason, "%s",
             cJSON_IsString(reason) && reason->valuestring[0] ? reason->valuestring
                                                              : default_reason(status));
    kerr->err =
        ms_errf(kerr->message, sizeof kerr->message, err_of_status(status), "%s %.*s: %ld %s: %s",
                method, plen, path, status, kerr->reason[0] ? kerr->reason : "error",
                cJSON_IsString(message) ? message->valuestring : "(no Status in the response)");
    cJSON_Delete(st);
}

static void error_from_transport(ms_kube_client_t *c, ms_kube_error_t *kerr,
                                 const ms_http_response_t *resp)
{
    kerr->status = 0;
    kerr->reason[0] = '\0';
    /* Only a certificate the client could not verify is the CA's business; a
     * handshake cut off by the network (a reset, a proxy) is not. */
    if (resp->err == MS_ERR_TLS &&
        (strstr(resp->error, "certificate") != NULL || strstr(resp->error, "verif") != NULL))
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TLS,
                            "TLS with %s failed (check the certificate-authority of %s): %s",
                            c->server, c->source, resp->error);
    else if (resp->err == MS_ERR_TLS)
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TLS,
                            "TLS with %s failed: %s", c->server, resp->error);
    else
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, resp->err, "%s", resp->error);
}

/* See ms_kube_deadline_set(). */
static _Thread_local double thread_deadline;

void ms_kube_deadline_set(double monotonic)
{
    thread_deadline = monotonic;
}
double ms_kube_deadline(void)
{
    return thread_deadline;
}

void ms_kube_deadline_cap(double monotonic)
{
    if (monotonic > 0 && (thread_deadline <= 0 || thread_deadline > monotonic))
        thread_deadline = monotonic;
}

/* Seconds left before the thread's deadline; HUGE when there is none. */
static double time_left(void)
{
    return thread_deadline > 0 ? thread_deadline - ms_clock_monotonic() : 1e18;
}

/* See ms_kube_background_set(). */
static _Thread_local bool thread_background;

void ms_kube_background_set(bool background)
{
    thread_background = background;
}

static void count_throttle(ms_kube_client_t *c, double wait)
{
    atomic_fetch_add(&c->n_throttled, 1);
    atomic_fetch_add(&c->throttle_us, (unsigned long)(wait * 1e6));
    if (wait > 1)
        MS_LOG_DEBUG("client-side throttling", MS_D("wait_s", wait));
}

/* A background request asks for a token until one is there (it never
 * reserves one ahead of the foreground's). */
static bool throttle_background(ms_kube_client_t *c)
{
    double waited = 0, wait;

    while ((wait = ms__kube_ratelimit_try_background(&c->limiter, ms_clock_monotonic())) > 0) {
        if (wait >= time_left())
            return false;
        if (!ms__kube_sleep(wait, c->cancel))
            return false;
        waited += wait;
    }
    if (waited > 0)
        count_throttle(c, waited);
    return true;
}

/* Wait for the token bucket. False when cancelled, or when the wait would
 * pass the thread's deadline. */
static bool throttle(ms_kube_client_t *c)
{
    double wait;

    if (thread_background)
        return throttle_background(c);
    wait = ms__kube_ratelimit_reserve(&c->limiter, ms_clock_monotonic());

    if (wait <= 0)
        return true;
    if (wait >= time_left())
        return false;
    count_throttle(c, wait);
    return ms__kube_sleep(wait, c->cancel);
}

/* Before each attempt: the thread's deadline, then the token bucket.
 * MS_OK to send; else kerr says why and holds the code returned. */
static ms_err_t may_send(ms_kube_client_t *c, const ms__kube_call_t *call, ms_kube_error_t *kerr)
{
    if (!call->stream && time_left() < 0.05) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TIMEOUT,
                            "%s %s: deadline passed", call->method, call->path);
        return kerr->err;
    }
    if (!throttle(c)) {
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message,
                    time_left() <= 0 || thread_deadline > 0 ? MS_ERR_TIMEOUT : MS_ERR_CANCELLED,
                    "%s %s: %s", call->method, call->path,
                    thread_deadline > 0 ? "deadline passed while throttled" : "cancelled");
        return kerr->err;
    }
    return MS_OK;
}

/* One attempt: the credential's header, the request (its timeout cut to the
 * thread's deadline), the exchange. True when an HTTP answer came, whatever
 * its status (resp holds it); false with kerr set when the credential or the
 * transport failed. */
static bool send_once(ms_kube_client_t *c, ms__kube_call_t *call, const char *url,
                      ms_http_response_t *resp, ms_kube_error_t *kerr)
{
    char auth[MS_KUBE_AUTH_MAX], why[MS_ERRBUF_SIZE], ctype[128];
    const char *headers[3];
    ms_http_request_t req;
    size_t nh = 0;
    ms_err_t err;

    err = ms_kube_cred_header(c->cred, ms_clock_monotonic(), auth, sizeof auth, why, sizeof why);
    if (err != MS_OK) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, err, "credentials: %s", why);
        return false;
    }
    if (auth[0] != '\0')
        headers[nh++] = auth;
    headers[nh++] = "Accept: application/json";
    if (call->content_type != NULL) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", call->content_type);
        headers[nh++] = ctype;
    }
    memset(&req, 0, sizeof req);
    req.method = call->method;
    req.url = url;
    req.headers = headers;
    req.nheaders = nh;
    req.body = call->body;
    req.body_len = call->body_len;
    req.timeout_ms =
        call->stream ? call->timeout_ms : (call->timeout_ms ? call->timeout_ms : c->timeout_ms);
    if (!call->stream && time_left() * 1000 < (double)req.timeout_ms)
        req.timeout_ms = (long)(time_left() * 1000) > 1 ? (long)(time_left() * 1000) : 1;
    req.idle_timeout_ms = call->idle_timeout_ms;
    req.sink = call->sink;
    req.sink_ctx = call->sink_ctx;
    req.cancel = call->cancel ? call->cancel : c->cancel;
    ms_buf_cleanup(&resp->body);
    count(c, call->method, call->path);
    err = ms_http_do(c->http, &req, resp);
    explicit_bzero(auth, sizeof auth);
    if (resp->new_connections > 0)
        atomic_fetch_add(&c->n_connections, (unsigned long)resp->new_connections);
    if (err != MS_OK) {
        error_from_transport(c, kerr, resp);
        return false;
    }
    atomic_store(&c->http_version, resp->http_version);
    return true;
}

/* The server asked to be asked again later: 429, or a 5xx with Retry-After. */
static bool asked_to_retry(const ms_http_response_t *resp)
{
    return resp->status == 429 || (resp->status >= 500 && resp->retry_after_seconds >= 0);
}

/* Wait as the server asked (1 s when it did not say, at most
 * MAX_RETRY_AFTER). False with kerr set when the wait would pass the
 * thread's deadline (the answer's own error then) or was cancelled. */
static bool wait_to_retry(ms_kube_client_t *c, const ms__kube_call_t *call,
                          const ms_http_response_t *resp, ms_kube_error_t *kerr)
{
    double wait = resp->retry_after_seconds >= 0 ? resp->retry_after_seconds : 1;

    if (wait > MAX_RETRY_AFTER)
        wait = MAX_RETRY_AFTER;
    if (wait >= time_left()) {
        ms__kube_error_from_status(kerr, call->method, call->path, resp->status, resp->body.data,
                                   resp->body.len);
        return false;
    }
    MS_LOG_INFO("server asked to retry later", MS_S("method", call->method),
                MS_I("status", resp->status), MS_D("retry_after_s", wait));
    atomic_fetch_add(&c->n_retries, 1);
    if (!ms__kube_sleep(wait, call->cancel ? call->cancel : c->cancel)) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_CANCELLED,
                            "%s %s: cancelled", call->method, call->path);
        return false;
    }
    return true;
}

ms_err_t ms__kube_do(ms_kube_client_t *c, ms__kube_call_t *call, ms_http_response_t *resp,
                     ms_kube_error_t *kerr)
{
    char url[8192];
    bool refreshed = false;
    ms_err_t err;

    memset(kerr, 0, sizeof *kerr);
    if ((size_t)snprintf(url, sizeof url, "%s%s", c->server, call->path) >= sizeof url) {
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TOOLARGE, "URL too long");
        return kerr->err;
    }
    for (int attempt = 0;; attempt++) {
        call->err_body_len = 0;
        if ((err = may_send(c, call, kerr)) != MS_OK)
            return err;
        if (!send_once(c, call, url, resp, kerr))
            return kerr->err;
        if (resp->status >= 200 && resp->status < 300)
            return MS_OK;
        /* A refreshable credential gets one more try after a 401. */
        if (resp->status == 401 && !refreshed && ms_kube_cred_refreshable(c->cred)) {
            refreshed = true;
            ms_kube_cred_invalidate(c->cred);
            atomic_fetch_add(&c->n_retries, 1);
            continue;
        }
        if (asked_to_retry(resp) && attempt < c->max_retries && !call->stream_started) {
            if (!wait_to_retry(c, call, resp, kerr))
                return kerr->err;
            continue;
        }
        ms__kube_error_from_status(kerr, call->method, call->path, resp->status,
                                   call->sink ? call->err_body : resp->body.data,
                                   call->sink ? call->err_body_len : resp->body.len);
        return kerr->err;
    }
}

/* ms_kube_request with the response body read under max_body bytes (0:
 * MS_HTTP_DEFAULT_MAX_BODY). */
static ms_err_t request_capped(ms_kube_client_t *c, const char *method, const char *path,
                               const char *content_type, const char *body, size_t body_len,
                               size_t max_body, cJSON **out, ms_kube_error_t *kerr)
{
    ms__kube_call_t call;
    ms_http_response_t resp;
    ms_err_t err;

    if (out != NULL)
        *out = NULL;
    memset(&call, 0, sizeof call);
    call.method = method;
    call.path = path;
    call.content_type = content_type;
    call.body = body;
    call.body_len = body_len;
    ms_http_response_init(&resp, max_body);
    err = ms__kube_do(c, &call, &resp, kerr);
    if (err == MS_OK && out != NULL) {
        *out = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
        if (*out == NULL)
            err = kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_PARSE,
                                      "%s %s: the response is not JSON", method, path);
    }
    ms_http_response_cleanup(&resp);
    return err;
}

ms_err_t ms_kube_request(ms_kube_client_t *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len, cJSON **out,
                         ms_kube_error_t *kerr)
{
    return request_capped(c, method, path, content_type, body, body_len, 0, out, kerr);
}

ms_err_t ms_kube_get(ms_kube_client_t *c, const char *path, cJSON **out, ms_kube_error_t *kerr)
{
    return request_capped(c, "GET", path, NULL, NULL, 0, 0, out, kerr);
}

ms_err_t ms__kube_get_capped(ms_kube_client_t *c, const char *path, size_t max_body, cJSON **out,
                             ms_kube_error_t *kerr)
{
    return request_capped(c, "GET", path, NULL, NULL, 0, max_body, out, kerr);
}

static ms_err_t send_json(ms_kube_client_t *c, const char *method, const char *path,
                          const char *ctype, const cJSON *obj, cJSON **out, ms_kube_error_t *kerr)
{
    char *body = ms_xcheck(cJSON_PrintUnformatted(obj), "request body");
    ms_err_t err;

    err = ms_kube_request(c, method, path, ctype, body, strlen(body), out, kerr);
    free(body);
    return err;
}

ms_err_t ms_kube_create(ms_kube_client_t *c, const char *path, const cJSON *obj, cJSON **out,
                        ms_kube_error_t *kerr)
{
    return send_json(c, "POST", path, "application/json", obj, out, kerr);
}

ms_err_t ms_kube_update(ms_kube_client_t *c, const char *path, const cJSON *obj, cJSON **out,
                        ms_kube_error_t *kerr)
{
    return send_json(c, "PUT", path, "application/json", obj, out, kerr);
}

ms_err_t ms_kube_merge_patch(ms_kube_client_t *c, const char *path, const cJSON *patch, cJSON **out,
                             ms_kube_error_t *kerr)
{
    return send_json(c, "PATCH", path, "application/merge-patch+json", patch, out, kerr);
}

ms_err_t ms_kube_delete(ms_kube_client_t *c, const char *path, ms_kube_error_t *kerr)
{
    return ms_kube_request(c, "DELETE", path, NULL, NULL, 0, NULL, kerr);
}

/* ---- streaming ---- */

typedef struct {
    ms__kube_call_t *call;
    ms_http_response_t *resp;
    ms_http_sink_fn user;
    void *user_ctx;
    char err_body[4096];
} stream_t;

static int stream_sink(void *ctx, const char *data, size_t len)
{
    stream_t *s = ctx;

    if (s->resp->status >= 200 && s->resp->status < 300) {
        s->call->stream_started = true;
        return s->user(s->user_ctx, data, len);
    }
    /* An error status: keep the (small) Status body for the message. */
    if (s->call->err_body_len + len < sizeof s->err_body) {
        memcpy(s->err_body + s->call->err_body_len, data, len);
        s->call->err_body_len += len;
    }
    return 0;
}

ms_err_t ms_kube_stream(ms_kube_client_t *c, const char *path, long timeout_ms,
                        long idle_timeout_ms, ms_http_sink_fn sink, void *ctx,
                        const atomic_bool *cancel, ms_kube_error_t *kerr)
{
    ms__kube_call_t call;
    ms_http_response_t resp;
    stream_t s;
    ms_err_t err;

    memset(&call, 0, sizeof call);
    memset(&s, 0, sizeof s);
    call.method = "GET";
    call.path = path;
    call.stream = true;
    call.timeout_ms = timeout_ms;
    call.idle_timeout_ms = idle_timeout_ms;
    call.sink = stream_sink;
    call.sink_ctx = &s;
    call.cancel = cancel;
    call.err_body = s.err_body;
    s.call = &call;
    s.resp = &resp;
    s.user = sink;
    s.user_ctx = ctx;
    ms_http_response_init(&resp, 0);
    err = ms__kube_do(c, &call, &resp, kerr);
    ms_http_response_cleanup(&resp);
    return err;
}
