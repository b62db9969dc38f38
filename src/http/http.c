/*
 * http.c - libcurl underneath both API clients.
 *
 * Threads share a client as http.h says: DNS answers and TLS sessions
 * through a curl share, connections only by handing idle easy handles (each
 * with its open connection) from one request to the next. Each transfer gets
 * a small context that owns what libcurl needs to outlive the setup call
 * (header list, error buffer, the connect-to override) and feeds the body
 * into a capped buffer or a streaming sink.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "meshscaler/clock.h"
#include "meshscaler/http.h"
#include "meshscaler/xalloc.h"
#include "meshscaler/version.h"

/* Idle easy handles kept per client: each keeps its own live connections,
 * so a thread doing request after request reuses its connection. */
#define IDLE_HANDLES_MAX 32

struct ms_http_client {
    CURLSH *share; /* DNS and TLS sessions only: libcurl cannot share live
                    * connections between threads that run concurrently */
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t idle_lock;
    CURL *idle[IDLE_HANDLES_MAX];
    size_t nidle;
    char *ca_file, *cert_file, *key_file;
    char *ca_pem, *cert_pem, *key_pem; /* copied; CURL_BLOB_COPY copies again per handle */
    size_t ca_pem_len, cert_pem_len, key_pem_len;
    bool insecure;
    char *server_name;
    char *proxy_url;
    char *user_agent;
    long connect_timeout_ms;
};

/* What one transfer needs until it completes. */
typedef struct {
    const ms_http_request_t *req;
    ms_http_response_t *resp;
    CURL *easy;
    ms_http_client_t *pool; /* give easy back to this client when done; NULL: free it */
    struct curl_slist *headers;
    struct curl_slist *connect_to;
    char *url; /* rewritten for tls-server-name, else NULL */
    bool too_large;
    bool sink_stopped;
    bool finished;     /* batches: ended and its on_done called */
    bool started;      /* batches: taken from the queue */
    bool idle_expired; /* stopped by req->idle_timeout_ms */
    double last_byte;  /* monotonic time the last header or body byte arrived */
    char curl_error[CURL_ERROR_SIZE];
} transfer_t;

ms_err_t ms_http_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? MS_OK : MS_ERR_IO;
}

void ms_http_global_cleanup(void)
{
    curl_global_cleanup();
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ctx)
{
    ms_http_client_t *c = ctx;
    (void)h;
    (void)access;
    pthread_mutex_lock(&c->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
    ms_http_client_t *c = ctx;
    (void)h;
    pthread_mutex_unlock(&c->locks[data]);
}

static bool dup_opt(char **dst, const char *src)
{
    *dst = NULL;
    if (src == NULL)
        return true;
    *dst = strdup(src);
    return *dst != NULL;
}

static bool dup_blob(char **dst, size_t *dst_len, const char *src, size_t len)
{
    *dst = NULL;
    *dst_len = 0;
    if (src == NULL || len == 0)
        return true;
    *dst = malloc(len);
    if (*dst == NULL)
        return false;
    memcpy(*dst, src, len);
    *dst_len = len;
    return true;
}

ms_http_client_t *ms_http_client_new(const ms_http_options_t *o, char *errbuf, size_t errlen)
{
    ms_http_client_t *c = calloc(1, sizeof *c);
    char ua[64];
    bool ok;

    if (c == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory creating an HTTP client");
        return NULL;
    }
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    pthread_mutex_init(&c->idle_lock, NULL);
    snprintf(ua, sizeof ua, "meshscaler/%s", ms_version());
    ok = dup_opt(&c->ca_file, o->tls.ca_file) && dup_opt(&c->cert_file, o->tls.cert_file) &&
         dup_opt(&c->key_file, o->tls.key_file) &&
         dup_blob(&c->ca_pem, &c->ca_pem_len, o->tls.ca_pem, o->tls.ca_pem_len) &&
         dup_blob(&c->cert_pem, &c->cert_pem_len, o->tls.cert_pem, o->tls.cert_pem_len) &&
         dup_blob(&c->key_pem, &c->key_pem_len, o->tls.key_pem, o->tls.key_pem_len) &&
         dup_opt(&c->server_name, o->tls.server_name) && dup_opt(&c->proxy_url, o->proxy_url) &&
         dup_opt(&c->user_agent, o->user_agent ? o->user_agent : ua);
    c->insecure = o->tls.insecure_skip_verify;
    c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
    c->share = ok ? curl_share_init() : NULL;
    if (c->share == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory creating an HTTP client");
        ms_http_client_free(c);
        return NULL;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    return c;
}

void ms_http_client_free(ms_http_client_t *c)
{
    if (c == NULL)
        return;
    /* Handles first: they still point at the share. */
    for (size_t i = 0; i < c->nidle; i++)
        curl_easy_cleanup(c->idle[i]);
    if (c->share != NULL)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
    pthread_mutex_destroy(&c->idle_lock);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c->ca_pem);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->server_name);
    free(c->proxy_url);
    free(c->user_agent);
    free(c);
}

void ms_http_response_init(ms_http_response_t *resp, size_t max_body)
{
    memset(resp, 0, sizeof *resp);
    ms_buf_init(&resp->body, max_body ? max_body : MS_HTTP_DEFAULT_MAX_BODY);
    resp->retry_after_seconds = -1;
}

void ms_http_response_cleanup(ms_http_response_t *resp)
{
    if (resp != NULL)
        ms_buf_cleanup(&resp->body);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    transfer_t *t = ctx;
    size_t len = size * n;

    t->last_byte = ms_clock_monotonic();
    if (t->req->sink != NULL) {
        if (t->req->sink(t->req->sink_ctx, data, len) != 0) {
            t->sink_stopped = true;
            return 0;
        }
        return len;
    }
    if (ms_buf_append(&t->resp->body, data, len) != MS_OK) {
        t->too_large = true;
        return 0;
    }
    return len;
}

/* Header lines arrive one by one; a new status line starts a new response
 * (after 100-continue, say), so it resets what earlier ones set. */
static size_t on_header(char *line, size_t size, size_t n, void *ctx)
{
    transfer_t *t = ctx;
    size_t len = size * n;
    char value[128];

    t->last_byte = ms_clock_monotonic();
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        const char *sp = memchr(line, ' ', len);
        long code = 0;

        /* The status is known here, before the body: streaming sinks read
         * resp->status to tell a watch stream from an error Status. */
        if (sp != NULL)
            for (sp++; sp < line + len && *sp >= '0' && *sp <= '9' && code < 1000; sp++)
                code = code * 10 + (*sp - '0');
        t->resp->status = code;
        t->resp->retry_after_seconds = -1;
        t->resp->content_type[0] = '\0';
        return len;
    }
    if (len > 12 && strncasecmp(line, "Retry-After:", 12) == 0) {
        size_t vlen = len - 12 < sizeof value - 1 ? len - 12 : sizeof value - 1;
        char *end;
        double secs;

        memcpy(value, line + 12, vlen);
        value[vlen] = '\0';
        secs = strtod(value, &end);
        /* Only the delay-seconds form; an HTTP date is rare from these servers. */
        if (end != value && secs >= 0 && secs < 86400)
            t->resp->retry_after_seconds = secs;
    } else if (len > 13 && strncasecmp(line, "Content-Type:", 13) == 0) {
        const char *v = line + 13;
        size_t vlen = len - 13;

        while (vlen > 0 && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= sizeof t->resp->content_type)
            vlen = sizeof t->resp->content_type - 1;
        memcpy(t->resp->content_type, v, vlen);
        t->resp->content_type[vlen] = '\0';
    }
    return len;
}

/* Called about once a second even when nothing arrives (the low-speed
 * check set in setup() wakes the transfer every second). */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    transfer_t *t = ctx;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (t->req->cancel != NULL && atomic_load(t->req->cancel))
        return 1;
    if (t->req->idle_timeout_ms > 0 &&
        (ms_clock_monotonic() - t->last_byte) * 1000 >= (double)t->req->idle_timeout_ms) {
        t->idle_expired = true;
        return 1;
    }
    return 0;
}

/* tls-server-name: connect to the URL's host but verify (and send SNI for)
 * another name. libcurl verifies the URL's host, so the URL is rewritten to
 * the server name and CURLOPT_CONNECT_TO routes it to the real address. */
static ms_err_t apply_server_name(ms_http_client_t *c, transfer_t *t)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *route = NULL;
    ms_err_t err = MS_ERR_INVALID;
    size_t need;

    if (u == NULL)
        return MS_ERR_NOMEM;
    if (curl_url_set(u, CURLUPART_URL, t->req->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_HOST, c->server_name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &t->url, 0) != CURLUE_OK)
        goto out;
    need = strlen(c->server_name) + strlen(host) + 2 * strlen(port) + 4;
    route = malloc(need);
    if (route == NULL) {
        err = MS_ERR_NOMEM;
        goto out;
    }
    snprintf(route, need, "%s:%s:%s:%s", c->server_name, port, host, port);
    t->connect_to = curl_slist_append(NULL, route);
    err = t->connect_to ? MS_OK : MS_ERR_NOMEM;
out:
    free(route);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return err;
}

static void set_blob(CURL *e, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob blob = {(void *)data, len, CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &blob);
}

/* An idle handle of this client, its options reset and its connections
 * kept, or a new one. */
static CURL *handle_take(ms_http_client_t *c)
{
    CURL *e = NULL;

    pthread_mutex_lock(&c->idle_lock);
    if (c->nidle > 0)
        e = c->idle[--c->nidle];
    pthread_mutex_unlock(&c->idle_lock);
    if (e == NULL)
        return curl_easy_init();
    curl_easy_reset(e);
    return e;
}

static void handle_give_back(ms_http_client_t *c, CURL *e)
{
    pthread_mutex_lock(&c->idle_lock);
    if (c->nidle < IDLE_HANDLES_MAX) {
        c->idle[c->nidle++] = e;
        e = NULL;
    }
    pthread_mutex_unlock(&c->idle_lock);
    if (e != NULL)
        curl_easy_cleanup(e);
}

/* How to connect: protocols, HTTP/2, timeouts, TCP keepalive, proxy. */
static void set_connection(ms_http_client_t *c, transfer_t *t, bool in_batch)
{
    CURL *e = t->easy;

    curl_easy_setopt(e, CURLOPT_URL, t->url ? t->url : t->req->url);
    curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    /* Within a batch (one multi handle) wait for a stream on an existing h2
     * connection rather than open another. Not for ms_http_do: its handle
     * sees only its own connection (http.h), so there is no other transfer's
     * connection to wait for. */
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, in_batch ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t->req->timeout_ms > 0 ? t->req->timeout_ms : 0L);
    /* TCP keepalive on every connection. A peer that vanished without FIN
     * or RST (a node powered off, a NAT or firewall that forgot the flow) is
     * otherwise noticed only when we next send: an idle pooled connection
     * looks usable until a request on it times out, and a watch waiting for
     * events waits forever (Linux's default first probe comes after 2 h).
     * After 30 s of silence the kernel probes every 10 s and, after its 9
     * unanswered probes (tcp_keepalive_probes), closes the connection: about
     * 2 min instead of never. The probes also keep NAT and conntrack entries
     * on the path alive. Keepalive does not help while sent data is still
     * unacknowledged, nor against a peer whose kernel still answers (a hung
     * server, a proxy): idle_timeout_ms covers those. */
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    if (t->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connect_to);
    if (c->proxy_url)
        curl_easy_setopt(e, CURLOPT_PROXY, c->proxy_url);
}

/* Where the response goes (body, headers), and the progress callback that
 * cancels and enforces the idle timeout. */
static void set_callbacks(transfer_t *t)
{
    const ms_http_request_t *r = t->req;
    CURL *e = t->easy;

    if (r->idle_timeout_ms > 0) {
        /* on_progress() ends the transfer when no byte arrived for
         * idle_timeout_ms. libcurl's low-speed check (under 1 byte/s for
         * that long, averaged over a few seconds, so it fires a few seconds
         * later) is the backstop, and it makes libcurl run the transfer,
         * hence on_progress, every second even when nothing arrives. */
        t->last_byte = ms_clock_monotonic();
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (r->idle_timeout_ms + 999) / 1000);
    }
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    if (r->cancel != NULL || r->idle_timeout_ms > 0) {
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    }
}

/* The server's CA, the client's certificate and key (PEM bytes win over
 * files), and verification. */
static void set_tls(ms_http_client_t *c, CURL *e)
{
    if (c->ca_pem)
        set_blob(e, CURLOPT_CAINFO_BLOB, c->ca_pem, c->ca_pem_len);
    else if (c->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
    if (c->cert_pem)
        set_blob(e, CURLOPT_SSLCERT_BLOB, c->cert_pem, c->cert_pem_len);
    else if (c->cert_file)
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
    if (c->key_pem)
        set_blob(e, CURLOPT_SSLKEY_BLOB, c->key_pem, c->key_pem_len);
    else if (c->key_file)
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* The method, the request's headers and its body. MS_ERR_NOMEM. */
static ms_err_t set_request(transfer_t *t)
{
    const ms_http_request_t *r = t->req;
    const char *method = r->method ? r->method : "GET";
    CURL *e = t->easy;

    for (size_t i = 0; i < r->nheaders; i++) {
        struct curl_slist *h = curl_slist_append(t->headers, r->headers[i]);
        if (h == NULL)
            return MS_ERR_NOMEM;
        t->headers = h;
    }
    if (r->body != NULL) {
        /* No "Expect: 100-continue" round trip before small bodies. */
        struct curl_slist *h = curl_slist_append(t->headers, "Expect:");
        if (h == NULL)
            return MS_ERR_NOMEM;
        t->headers = h;
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    if (strcmp(method, "GET") == 0 && r->body == NULL)
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    else if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "POST") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    return MS_OK;
}

/* Prepare t->easy for t->req. On failure the caller frees the transfer. */
static ms_err_t setup(ms_http_client_t *c, transfer_t *t, bool in_batch)
{
    /* Batch transfers live in their multi handle's connection cache; single
     * transfers borrow a handle that carries its connection across calls. */
    CURL *e = in_batch ? curl_easy_init() : handle_take(c);
    ms_err_t err;

    if (e == NULL)
        return MS_ERR_NOMEM;
    t->easy = e;
    t->pool = in_batch ? NULL : c;
    if (c->server_name != NULL && (err = apply_server_name(c, t)) != MS_OK)
        return err;
    set_connection(c, t, in_batch);
    set_callbacks(t);
    set_tls(c, e);
    return set_request(t);
}

static void transfer_free(transfer_t *t)
{
    /* A handle keeps its connections. After a transport failure (a timeout,
     * above all) its connection may be dead yet look alive to libcurl, which
     * would send the next request on it (an HTTP/2 connection outlives a
     * failed stream); freeing the handle closes it. */
    if (t->easy != NULL && t->pool != NULL && t->resp->err == MS_OK)
        handle_give_back(t->pool, t->easy);
    else if (t->easy != NULL)
        curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    curl_slist_free_all(t->connect_to);
    curl_free(t->url);
    t->easy = NULL;
    t->headers = NULL;
    t->connect_to = NULL;
    t->url = NULL;
}

/* Turn libcurl's verdict into the response's err and one-line error. */
static void finish(transfer_t *t, CURLcode rc)
{
    ms_http_response_t *resp = t->resp;
    const char *method = t->req->method ? t->req->method : "GET";
    const char *why = t->curl_error[0] ? t->curl_error : curl_easy_strerror(rc);
    char idle[80];
    long version = 0;
    ms_err_t err;

    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_easy_getinfo(t->easy, CURLINFO_TOTAL_TIME, &resp->total_seconds);
    curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &resp->new_connections);
    curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
    resp->http_version = version == CURL_HTTP_VERSION_2_0 ? 2 : 1;

    /* Go's HTTP/2 server answers an error status before reading a request
     * body and then resets the stream; libcurl may call that a partial
     * transfer although the status (and the small error body) arrived. */
    if (resp->status >= 400 && (rc == CURLE_PARTIAL_FILE || rc == CURLE_HTTP2_STREAM ||
                                rc == CURLE_HTTP2 || rc == CURLE_RECV_ERROR))
        rc = CURLE_OK;
    switch (rc) {
    case CURLE_OK:
        resp->err = MS_OK;
        resp->error[0] = '\0';
        return;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        err = MS_ERR_UNAVAILABLE;
        break;
    case CURLE_OPERATION_TIMEDOUT:
        err = MS_ERR_TIMEOUT;
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
        err = MS_ERR_TLS;
        break;
    case CURLE_ABORTED_BY_CALLBACK:
        err = t->idle_expired ? MS_ERR_TIMEOUT : MS_ERR_CANCELLED;
        if (t->idle_expired) {
            snprintf(idle, sizeof idle, "no data for %.1f s (idle timeout)",
                     (double)t->req->idle_timeout_ms / 1000);
            why = idle;
        }
        break;
    case CURLE_WRITE_ERROR:
        err = t->too_large ? MS_ERR_TOOLARGE : t->sink_stopped ? MS_ERR_CANCELLED : MS_ERR_IO;
        if (t->too_large)
            why = "response body exceeds its size limit";
        else if (t->sink_stopped)
            why = "stopped by the receiver";
        break;
    default:
        err = MS_ERR_IO;
        break;
    }
    resp->err =
        ms_errf(resp->error, sizeof resp->error, err, "%s %s: %s", method, t->req->url, why);
}

ms_err_t ms_http_do(ms_http_client_t *c, const ms_http_request_t *req, ms_http_response_t *resp)
{
    transfer_t t;
    ms_err_t err;

    memset(&t, 0, sizeof t);
    t.req = req;
    t.resp = resp;
    err = setup(c, &t, false);
    if (err != MS_OK) {
        resp->err =
            ms_errf(resp->error, sizeof resp->error, err, "%s %s: cannot prepare the request",
                    req->method ? req->method : "GET", req->url);
        transfer_free(&t);
        return resp->err;
    }
    finish(&t, curl_easy_perform(t.easy));
    transfer_free(&t);
    return resp->err;
}

struct ms_http_batch {
    ms_http_client_t *client;
    CURLM *multi;
    size_t max_in_flight;
    /* One allocation per transfer: libcurl holds a pointer to each
     * (CURLOPT_PRIVATE), so growing the array while a run goes on (a request
     * added from on_done) must not move them. */
    transfer_t **items;
    size_t n, cap;
    bool running; /* inside ms_http_batch_run_until */
};

ms_http_batch_t *ms_http_batch_new(ms_http_client_t *client, size_t max_in_flight)
{
    ms_http_batch_t *b = calloc(1, sizeof *b);

    if (b == NULL)
        return NULL;
    b->client = client;
    b->max_in_flight = max_in_flight ? max_in_flight : 1;
    b->multi = curl_multi_init();
    if (b->multi == NULL) {
        free(b);
        return NULL;
    }
    return b;
}

void ms_http_batch_keep_connections(ms_http_batch_t *b, size_t n)
{
    curl_multi_setopt(b->multi, CURLMOPT_MAXCONNECTS, (long)n);
}

void ms_http_batch_free(ms_http_batch_t *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n; i++) {
        transfer_free(b->items[i]);
        free(b->items[i]);
    }
    curl_multi_cleanup(b->multi);
    free(b->items);
    free(b);
}

ms_err_t ms_http_batch_add(ms_http_batch_t *b, const ms_http_request_t *req,
                           ms_http_response_t *resp)
{
    transfer_t *t;

    /* The fair shares are counted when the run starts: a request added
     * during it (from on_done) has no group to count it in. */
    if (b->running && req->group != 0)
        return MS_ERR_INVALID;
    t = ms_xcalloc(1, sizeof *t);
    t->req = req;
    t->resp = resp;
    b->items = ms_xgrow(b->items, &b->cap, b->n + 1, sizeof *b->items);
    b->items[b->n++] = t;
    return MS_OK;
}

static void batch_done(transfer_t *t)
{
    if (t->req->on_done != NULL)
        t->req->on_done(t->req->done_ctx, t->resp);
}

/* End every transfer of the batch that has not ended: err, with why. */
static size_t batch_abort(ms_http_batch_t *b, ms_err_t err, const char *why)
{
    size_t n = 0;

    for (size_t i = 0; i < b->n; i++) {
        transfer_t *t = b->items[i];
        if (t->easy != NULL)
            curl_multi_remove_handle(b->multi, t->easy);
        else if (t->finished)
            continue;
        t->resp->err = ms_errf(t->resp->error, sizeof t->resp->error, err, "%s %s: %s",
                               t->req->method ? t->req->method : "GET", t->req->url, why);
        transfer_free(t);
        t->finished = true;
        batch_done(t);
        n++;
    }
    return n;
}

ms_err_t ms_http_batch_run(ms_http_batch_t *b)
{
    return ms_http_batch_run_until(b, 0, NULL);
}

/* The slots of a batch shared fairly among the groups of its requests:
 * left[g] requests of group g have not ended, running[g] of them run. */
typedef struct {
    size_t *left, *running;
    size_t ngroups; /* largest group + 1 */
    size_t active;  /* groups (> 0) with requests left */
    size_t first;   /* no request before this one waits */
} fair_t;

static void fair_init(fair_t *f, const ms_http_batch_t *b)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i]->req->group >= f->ngroups)
            f->ngroups = b->items[i]->req->group + 1;
    if (f->ngroups == 0)
        f->ngroups = 1; /* group 0 is counted in running[0], even when added later */
    f->left = ms_xcalloc(f->ngroups, sizeof *f->left);
    f->running = ms_xcalloc(f->ngroups, sizeof *f->running);
    for (size_t i = 0; i < b->n; i++) {
        size_t g = b->items[i]->req->group;
        if (g > 0 && f->left[g]++ == 0)
            f->active++;
    }
}

static void fair_cleanup(fair_t *f)
{
    free(f->left);
    free(f->running);
}

/* The next request that may start: the first waiting one whose group holds
 * fewer than its share of the slots; NULL when none. */
static transfer_t *fair_next(const ms_http_batch_t *b, fair_t *f)
{
    size_t share = f->active > 0 ? b->max_in_flight / f->active : b->max_in_flight;

    if (share == 0)
        share = 1;
    while (f->first < b->n && b->items[f->first]->started)
        f->first++;
    for (size_t i = f->first; i < b->n; i++) {
        transfer_t *t = b->items[i];
        size_t g = t->req->group;
        if (!t->started && (g == 0 || f->running[g] < share))
            return t;
    }
    return NULL;
}

static void fair_started(fair_t *f, transfer_t *t)
{
    t->started = true;
    f->running[t->req->group]++;
}

static void fair_ended(fair_t *f, const transfer_t *t, bool was_running)
{
    size_t g = t->req->group;

    if (was_running)
        f->running[g]--;
    if (g > 0 && --f->left[g] == 0)
        f->active--;
}

/* Keep at most max_in_flight transfers going, each group within its
 * share; one that cannot start ends (and counts as done) at once. */
static void batch_start(ms_http_batch_t *b, fair_t *fair, size_t *running, size_t *done)
{
    transfer_t *t;

    while (*running < b->max_in_flight && (t = fair_next(b, fair)) != NULL) {
        ms_err_t serr = setup(b->client, t, true);

        fair_started(fair, t);
        if (serr == MS_OK && curl_multi_add_handle(b->multi, t->easy) == CURLM_OK) {
            (*running)++;
            continue;
        }
        fair_ended(fair, t, true);
        t->resp->err = ms_errf(t->resp->error, sizeof t->resp->error,
                               serr != MS_OK ? serr : MS_ERR_IO, "%s %s: cannot start the request",
                               t->req->method ? t->req->method : "GET", t->req->url);
        transfer_free(t);
        t->finished = true;
        batch_done(t);
        (*done)++;
    }
}

ms_err_t ms_http_batch_run_until(ms_http_batch_t *b, double deadline, const atomic_bool *stop)
{
    size_t running = 0, done = 0;
    ms_err_t err = MS_OK;
    fair_t fair;

    fair_init(&fair, b);
    b->running = true;
    while (done < b->n) {
        transfer_t *t;
        /* With a stop flag, look at it ten times a second: shutdown must
         * not wait for a hung server's next byte (or a second's poll). */
        int still, queued, wait_ms = stop != NULL ? 100 : 1000;
        CURLMsg *msg;

        if (stop != NULL && atomic_load(stop)) {
            done += batch_abort(b, MS_ERR_CANCELLED, "cancelled");
            break;
        }
        if (deadline > 0) {
            double left = deadline - ms_clock_monotonic();
            if (left <= 0) {
                done += batch_abort(b, MS_ERR_TIMEOUT, "the batch's deadline passed");
                break;
            }
            if (left * 1000 < wait_ms)
                wait_ms = (int)(left * 1000) + 1;
        }

        batch_start(b, &fair, &running, &done);
        if (curl_multi_perform(b->multi, &still) != CURLM_OK) {
            err = MS_ERR_IO;
            break;
        }
        while ((msg = curl_multi_info_read(b->multi, &queued)) != NULL) {
            t = NULL;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            finish(t, msg->data.result);
            curl_multi_remove_handle(b->multi, t->easy);
            transfer_free(t);
            t->finished = true;
            fair_ended(&fair, t, true);
            batch_done(t);
            running--;
            done++;
        }
        /* Wait only when no finished slot can take a waiting request. */
        if (done < b->n && running > 0 && !(running < b->max_in_flight && fair_next(b, &fair)) &&
            curl_multi_poll(b->multi, NULL, 0, wait_ms, NULL) != CURLM_OK) {
            err = MS_ERR_IO;
            break;
        }
    }
    /* On a batch failure, whatever has not ended is torn down. */
    batch_abort(b, MS_ERR_IO, "batch aborted");
    fair_cleanup(&fair);
    for (size_t i = 0; i < b->n; i++)
        free(b->items[i]);
    b->n = 0;
    b->running = false;
    return err;
}
