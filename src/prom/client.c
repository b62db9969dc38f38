/*
 * client.c - the Prometheus HTTP API client: form-encoded POSTs of instant
 * and range queries over one bounded ms_http batch, with bearer-token (file,
 * re-read), basic auth and custom-header authentication.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "meshscaler/buf.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/prom.h"
#include "meshscaler/xalloc.h"

#define MAX_HEADERS 64
#define TOKEN_MAX (64u * 1024u)
#define REQUEST_MAX (4u * 1024u * 1024u) /* one form-encoded query */
#define DEFAULT_TIMEOUT_MS 10000L
#define DEFAULT_CONNECT_TIMEOUT_MS 5000L
#define DEFAULT_IN_FLIGHT 8u
/* One answer, unless its query allows more: a batched preset answer is about
 * 550 bytes per object (five fields of ~110) and the tick lets it take 4 KiB
 * per object it covers (src/prom/tick.c), so 1 MiB bounds user queries and
 * the presets of small installations. */
#define DEFAULT_MAX_BODY (1024u * 1024u)
#define DEFAULT_BREAKER_RUNS 3u
#define DEFAULT_BREAKER_BACKOFF 5.0
#define BREAKER_MAX_BACKOFF 60.0

struct ms_prom_client {
    ms_http_client_t *http;
    char *query_url;
    char *range_url;
    char **headers; /* custom, copied */
    size_t nheaders;
    char *basic_header; /* "Authorization: Basic ..." or NULL */
    long timeout_ms;
    size_t max_in_flight;
    size_t max_body;

    pthread_mutex_t lock; /* guards the token cache and the counters */
    char *token_file;
    double token_reread_seconds;
    char *token_header; /* "Authorization: Bearer ..." (fixed or last read) */
    struct timespec token_mtime;
    off_t token_size;
    ino_t token_ino;
    double token_read_at; /* monotonic seconds, 0: never */
    ms_prom_client_stats_t stats;
    /* The circuit breaker (guarded by lock). */
    unsigned breaker_runs;
    double breaker_backoff;
    double breaker_max_backoff;
    unsigned breaker_failed_runs;
    double breaker_wait;       /* the current backoff; 0: closed */
    double breaker_open_until; /* monotonic */
};

/* "prefix" + s, caller frees. */
static char *concat(const char *prefix, const char *s)
{
    size_t a = strlen(prefix), b = strlen(s);
    char *d = ms_xmalloc(a + b + 1);

    memcpy(d, prefix, a);
    memcpy(d + a, s, b + 1);
    return d;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of n bytes into a new string. */
static char *base64(const unsigned char *in, size_t n)
{
    size_t olen = 4 * ((n + 2) / 3), o = 0;
    char *out = ms_xmalloc(olen + 1);

    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static char *basic_header(const char *user, const char *password)
{
    size_t ul = strlen(user), pl = password ? strlen(password) : 0;
    unsigned char *raw = ms_xmalloc(ul + pl + 2);
    char *enc, *h;

    memcpy(raw, user, ul);
    raw[ul] = ':';
    if (pl)
        memcpy(raw + ul + 1, password, pl);
    enc = base64(raw, ul + 1 + pl);
    memset(raw, 0, ul + 1 + pl); /* the password does not linger */
    free(raw);
    h = concat("Authorization: Basic ", enc);
    memset(enc, 0, strlen(enc));
    free(enc);
    return h;
}

static bool valid_header(const char *h)
{
    const char *colon = strchr(h, ':');

    if (colon == NULL || colon == h)
        return false;
    for (const char *p = h; *p; p++)
        if (*p == '\r' || *p == '\n')
            return false;
    return true;
}

ms_prom_client_t *ms_prom_client_new(const ms_prom_options_t *o, char *errbuf, size_t errlen)
{
    ms_prom_client_t *c;
    ms_http_options_t hopts;
    size_t ulen;

    if (o->url == NULL ||
        (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0)) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "prometheus url must start with http:// or https://");
        return NULL;
    }
    if ((o->bearer_token != NULL || o->bearer_token_file != NULL) && o->basic_user != NULL) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "prometheus bearer token and basic auth cannot be used together");
        return NULL;
    }
    if (o->nheaders > MAX_HEADERS) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "at most %d prometheus headers", MAX_HEADERS);
        return NULL;
    }
    for (size_t i = 0; i < o->nheaders; i++)
        if (!valid_header(o->headers[i])) {
            ms_errf(errbuf, errlen, MS_ERR_INVALID, "prometheus header %zu is not \"Name: value\"",
                    i);
            return NULL;
        }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory creating the Prometheus client");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    memset(&hopts, 0, sizeof hopts);
    hopts.tls = o->tls;
    hopts.connect_timeout_ms =
        o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    c->http = ms_http_client_new(&hopts, errbuf, errlen);
    if (c->http == NULL) {
        ms_prom_client_free(c);
        return NULL;
    }
    if (o->tls.insecure_skip_verify)
        MS_LOG_WARN("TLS verification of Prometheus is off", MS_S("url", o->url));

    /* Base URL without trailing slashes, then the API paths. */
    ulen = strlen(o->url);
    while (ulen > 0 && o->url[ulen - 1] == '/')
        ulen--;
    {
        char *base = ms_xstrndup(o->url, ulen);
        c->query_url = concat(base, "/api/v1/query");
        c->range_url = concat(base, "/api/v1/query_range");
        free(base);
    }
    if (o->nheaders > 0) {
        c->headers = ms_xcalloc(o->nheaders, sizeof *c->headers);
        for (size_t i = 0; i < o->nheaders; i++)
            c->headers[i] = ms_xstrdup(o->headers[i]);
        c->nheaders = o->nheaders;
    }
    if (o->basic_user != NULL)
        c->basic_header = basic_header(o->basic_user, o->basic_password);
    if (o->bearer_token != NULL)
        c->token_header = concat("Authorization: Bearer ", o->bearer_token);
    if (o->bearer_token_file != NULL)
        c->token_file = ms_xstrdup(o->bearer_token_file);
    c->token_reread_seconds = o->token_reread_seconds > 0 ? o->token_reread_seconds : 60;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->max_in_flight = o->max_in_flight ? o->max_in_flight : DEFAULT_IN_FLIGHT;
    c->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
    c->breaker_runs = o->breaker_runs ? o->breaker_runs : DEFAULT_BREAKER_RUNS;
    c->breaker_backoff = o->breaker_backoff > 0 ? o->breaker_backoff : DEFAULT_BREAKER_BACKOFF;
    c->breaker_max_backoff =
        o->breaker_max_backoff > 0 ? o->breaker_max_backoff : BREAKER_MAX_BACKOFF;
    if (c->breaker_max_backoff < c->breaker_backoff)
        c->breaker_max_backoff = c->breaker_backoff;
    return c;
}

static void free_secret(char *s)
{
    if (s != NULL) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

void ms_prom_client_free(ms_prom_client_t *c)
{
    if (c == NULL)
        return;
    ms_http_client_free(c->http);
    free(c->query_url);
    free(c->range_url);
    for (size_t i = 0; i < c->nheaders; i++)
        free(c->headers[i]);
    free(c->headers);
    free_secret(c->basic_header);
    free_secret(c->token_header);
    free(c->token_file);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Read the token file into c->token_header. Called with the lock held.
 * Returns false when no token is available at all. */
static bool refresh_token(ms_prom_client_t *c, char *why, size_t whylen)
{
    struct stat st;
    double now = ms_clock_monotonic();
    bool changed, due;
    FILE *f;
    ms_buf_t b;
    ms_err_t err;

    if (c->token_file == NULL)
        return true;
    if (stat(c->token_file, &st) != 0) {
        ms_errf(why, whylen, MS_ERR_IO, "bearer token file %s cannot be read", c->token_file);
        return c->token_header != NULL; /* keep the last good token meanwhile */
    }
    changed = st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
              st.st_mtim.tv_nsec != c->token_mtime.tv_nsec || st.st_size != c->token_size ||
              st.st_ino != c->token_ino;
    due = c->token_read_at == 0 || now - c->token_read_at >= c->token_reread_seconds;
    if (!changed && !due && c->token_header != NULL)
        return true;

    f = fopen(c->token_file, "r");
    if (f == NULL) {
        ms_errf(why, whylen, MS_ERR_IO, "bearer token file %s cannot be opened", c->token_file);
        return c->token_header != NULL;
    }
    ms_buf_init(&b, TOKEN_MAX);
    err = ms_buf_read_stream(&b, f);
    fclose(f);
    while (err == MS_OK && b.len > 0 &&
           (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' || b.data[b.len - 1] == ' '))
        b.data[--b.len] = '\0';
    if (err != MS_OK || b.len == 0 || strpbrk(b.data, "\r\n") != NULL) {
        ms_errf(why, whylen, MS_ERR_IO, "bearer token file %s is empty, too large or not one line",
                c->token_file);
        if (b.data)
            memset(b.data, 0, b.len);
        ms_buf_cleanup(&b);
        return c->token_header != NULL;
    }
    free_secret(c->token_header);
    c->token_header = concat("Authorization: Bearer ", b.data);
    memset(b.data, 0, b.len);
    ms_buf_cleanup(&b);
    c->token_mtime = st.st_mtim;
    c->token_size = st.st_size;
    c->token_ino = st.st_ino;
    c->token_read_at = now;
    c->stats.token_reads++;
    return true;
}

/* Percent-encode s (application/x-www-form-urlencoded) onto b. */
static ms_err_t form_append(ms_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    ms_err_t err = MS_OK;

    for (const unsigned char *p = (const unsigned char *)s; *p && err == MS_OK; p++) {
        unsigned char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            err = ms_buf_append(b, p, 1);
        } else {
            char esc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            err = ms_buf_append(b, esc, 3);
        }
    }
    return err;
}

static ms_err_t form_number(ms_buf_t *b, const char *key, double v)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "&%s=%.3f", key, v);
    return ms_buf_append(b, tmp, (size_t)n);
}

static bool share_time_binds(const ms_prom_client_t *c, const ms_prom_query_t *q)
{
    return q->share_seconds > 0 && q->share_seconds * 1000 < (double)c->timeout_ms;
}

/* The whole transfer: the client's timeout, or the query's share when less. */
static long query_timeout_ms(const ms_prom_client_t *c, const ms_prom_query_t *q)
{
    return share_time_binds(c, q) ? (long)(q->share_seconds * 1000) : c->timeout_ms;
}

static ms_err_t build_body(const ms_prom_client_t *c, const ms_prom_query_t *q, ms_buf_t *b)
{
    char tmp[64];
    ms_err_t err;
    /* The server gives up a little before we do, so its typed timeout error
     * arrives instead of a cut connection. */
    long server_ms = query_timeout_ms(c, q) - query_timeout_ms(c, q) / 10;
    int n;

    if ((err = ms_buf_append(b, "query=", 6)) != MS_OK || (err = form_append(b, q->query)) != MS_OK)
        return err;
    if (q->range) {
        if ((err = form_number(b, "start", q->start)) != MS_OK ||
            (err = form_number(b, "end", q->end)) != MS_OK ||
            (err = form_number(b, "step", q->step)) != MS_OK)
            return err;
    } else if (q->time > 0 && (err = form_number(b, "time", q->time)) != MS_OK) {
        return err;
    }
    n = snprintf(tmp, sizeof tmp, "&timeout=%ldms", server_ms > 0 ? server_ms : 1L);
    return ms_buf_append(b, tmp, (size_t)n);
}

/* The request headers every query of one run shares: custom headers, then
 * authentication. *token receives a copy of the bearer header (the file may
 * be re-read by another thread while this run is in flight); the caller
 * frees it. Returns false, with the reason in why, when a token file is
 * configured but no token was ever readable. */
static bool run_headers(ms_prom_client_t *c, const char **hdrs, size_t *nh, char **token, char *why,
                        size_t whylen)
{
    bool have_token;

    pthread_mutex_lock(&c->lock);
    have_token = refresh_token(c, why, whylen);
    *token = have_token && c->token_header != NULL ? strdup(c->token_header) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (why[0] != '\0')
        MS_LOG_WARN("bearer token not refreshed", MS_S("detail", why));
    if (!have_token)
        return false;
    *nh = 0;
    for (size_t i = 0; i < c->nheaders; i++)
        hdrs[(*nh)++] = c->headers[i];
    if (*token != NULL)
        hdrs[(*nh)++] = *token;
    if (c->basic_header != NULL)
        hdrs[(*nh)++] = c->basic_header;
    hdrs[(*nh)++] = "Content-Type: application/x-www-form-urlencoded";
    hdrs[(*nh)++] = "Accept: application/json";
    return true;
}

static void fail_all(ms_prom_query_t *qs, size_t n, ms_prom_reason_t reason, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        qs[i].result.reason = reason;
        ms_errf(qs[i].result.message, sizeof qs[i].result.message, MS_OK, "%s", why);
    }
}

/* One query's answer, decoded the moment it arrives; the body is freed at
 * once, and the run's byte budget charged. */
typedef struct {
    ms_prom_client_t *client;
    ms_prom_query_t *query;
    ms_http_response_t *resp; /* its body is filled by on_chunk */
    size_t *total;            /* bytes of the run so far, charged as they arrive */
    size_t max_total;
    atomic_bool *over_budget; /* set when total passes max_total: the rest stops */
    size_t *user_total;       /* bytes of the run's queries that are not presets */
    size_t max_user;
    atomic_bool *users_over; /* set when user_total passes max_user: those stop */
    double deadline;         /* the run's (monotonic; 0: none) */
    bool sent;
    bool too_large; /* on_chunk stopped it at the answer's cap */
    size_t bytes;   /* of this answer */
} pending_query_t;

/* The cap one answer is read under: the client's, or its query's own when
 * that is larger (a preset's grows with the objects it covers). */
static size_t answer_cap(const ms_prom_client_t *c, const ms_prom_query_t *q)
{
    size_t cap = q->max_bytes > c->max_body ? q->max_bytes : c->max_body;

    return q->share_bytes > 0 && q->share_bytes < cap ? q->share_bytes : cap;
}

/* Whether the query's own share, not the client's limits, is what stops it. */
static bool share_bytes_bind(const ms_prom_client_t *c, const ms_prom_query_t *q)
{
    return q->share_bytes > 0 &&
           q->share_bytes < (q->max_bytes > c->max_body ? q->max_bytes : c->max_body);
}

/* An answer past its cap: the HTTP layer's line ("POST <url>: response body
 * exceeds its size limit") with the cap in bytes and what raises it. */
static void name_the_cap(const pending_query_t *p, const ms_http_response_t *resp)
{
    ms_prom_result_t *r = &p->query->result;

    if (share_bytes_bind(p->client, p->query)) {
        r->reason = MS_PROM_OVER_SHARE;
        ms_errf(r->message, sizeof r->message, MS_OK,
                "the answer passed this query's share of the round, %zu bytes", resp->body.max);
    } else if (p->query->max_bytes > p->client->max_body)
        ms_errf(r->message, sizeof r->message, MS_OK, "%s of %zu bytes (this query's cap)",
                resp->error, resp->body.max);
    else
        ms_errf(r->message, sizeof r->message, MS_OK,
                "%s of %zu bytes (raise --prometheus-max-response-bytes)", resp->error,
                resp->body.max);
}

/* The body as it arrives (the batch's one thread calls every sink): into
 * the response under the answer's cap, and charged to the run's budget at
 * once, so the answers in flight together never hold more than the budget
 * plus one chunk each. Non-zero stops the transfer. */
static int on_chunk(void *ctx, const char *data, size_t len)
{
    pending_query_t *p = ctx;

    if (atomic_load(p->over_budget) || (!p->query->preset && atomic_load(p->users_over)))
        return 1;
    /* Past its own cap first: an answer stopped there is its own failure and
     * charges the run's budgets nothing more (the caps of a round's fair
     * shares add up to its budget exactly). */
    if (ms_buf_append(&p->resp->body, data, len) != MS_OK) {
        p->too_large = true;
        return 1;
    }
    *p->total += len;
    p->bytes += len;
    if (p->max_total > 0 && *p->total > p->max_total) {
        atomic_store(p->over_budget, true);
        atomic_store(p->users_over, true);
        return 1;
    }
    if (!p->query->preset && p->max_user > 0 && (*p->user_total += len) > p->max_user) {
        atomic_store(p->users_over, true);
        return 1;
    }
    return 0;
}

static void on_answer(void *ctx, ms_http_response_t *resp)
{
    pending_query_t *p = ctx;

    if (p->too_large) {
        ms_prom_result_cleanup(&p->query->result);
        p->query->result.reason = MS_PROM_TOO_LARGE;
        p->query->result.http_status = resp->status;
        snprintf(resp->error, sizeof resp->error, "POST %s: response body exceeds its size limit",
                 p->query->range ? p->client->range_url : p->client->query_url);
        name_the_cap(p, resp);
    } else if (atomic_load(p->over_budget) && resp->err == MS_ERR_CANCELLED) {
        ms_prom_result_cleanup(&p->query->result);
        p->query->result.reason = MS_PROM_TOO_LARGE;
        ms_errf(
            p->query->result.message, sizeof p->query->result.message, MS_OK,
            "not read: the round's answers passed %zu bytes (raise --prometheus-max-round-bytes)",
            p->max_total);
    } else if (atomic_load(p->users_over) && resp->err == MS_ERR_CANCELLED) {
        ms_prom_result_cleanup(&p->query->result);
        p->query->result.reason = MS_PROM_TOO_LARGE;
        ms_errf(p->query->result.message, sizeof p->query->result.message, MS_OK,
                "not read: the round's user queries passed their %zu bytes (the rest is the "
                "presets' reserve; raise --prometheus-max-round-bytes)",
                p->max_user);
    } else {
        ms_prom_decode_response(resp, &p->query->result);
        if (resp->err == MS_ERR_TOOLARGE)
            name_the_cap(p, resp);
        /* Stopped at its own time share, before the round's deadline. */
        if (p->query->result.reason == MS_PROM_TIMEOUT && share_time_binds(p->client, p->query) &&
            (p->deadline <= 0 || ms_clock_monotonic() < p->deadline)) {
            p->query->result.reason = MS_PROM_OVER_SHARE;
            ms_errf(p->query->result.message, sizeof p->query->result.message, MS_OK,
                    "the query ran past its share of the round, %.1f s", p->query->share_seconds);
        }
    }
    p->query->result.seconds = resp->total_seconds;
    p->query->result.bytes = p->bytes;
    ms_http_response_cleanup(resp);
}

/* A run in which every query failed in transport counts against the
 * breaker; anything else closes it. */
static bool transport_failure(ms_prom_reason_t r)
{
    return r == MS_PROM_UNAVAILABLE || r == MS_PROM_TIMEOUT || r == MS_PROM_TLS ||
           r == MS_PROM_TRANSPORT;
}

/* Whether the breaker lets this run send; fills why when it does not. */
static bool breaker_allows(ms_prom_client_t *c, double now, char *why, size_t cap)
{
    bool allowed;

    pthread_mutex_lock(&c->lock);
    allowed = now >= c->breaker_open_until;
    if (!allowed)
        ms_errf(why, cap, MS_OK,
                "Prometheus failed %u runs in a row: not asked again for %.0f s (circuit breaker)",
                c->breaker_failed_runs, c->breaker_open_until - now);
    pthread_mutex_unlock(&c->lock);
    return allowed;
}

static void breaker_record(ms_prom_client_t *c, bool failed, double now)
{
    pthread_mutex_lock(&c->lock);
    if (!failed) {
        c->breaker_failed_runs = 0;
        c->breaker_wait = 0;
    } else if (++c->breaker_failed_runs >= c->breaker_runs) {
        c->breaker_wait = c->breaker_wait > 0 ? c->breaker_wait * 2 : c->breaker_backoff;
        if (c->breaker_wait > c->breaker_max_backoff)
            c->breaker_wait = c->breaker_max_backoff;
        c->breaker_open_until = now + c->breaker_wait;
        c->stats.opened++;
        MS_LOG_WARN("prometheus circuit breaker open", MS_I("failed_runs", c->breaker_failed_runs),
                    MS_D("seconds", c->breaker_wait));
    }
    pthread_mutex_unlock(&c->lock);
}

ms_err_t ms_prom_run(ms_prom_client_t *c, ms_prom_query_t *qs, size_t n)
{
    ms_prom_run_options_t o = {0};

    return ms_prom_run_bounded(c, qs, n, &o);
}

/* One query of a run: its request, response and body, and what the batch's
 * callbacks read while it is under way (pend points at resp). */
typedef struct {
    ms_http_request_t req;
    ms_http_response_t resp;
    ms_buf_t body;
    pending_query_t pend;
} run_slot_t;

/* The byte budgets the run's queries share (pending_query_t points here). */
typedef struct {
    size_t total, user_total;
    atomic_bool over_budget, users_over;
} run_budget_t;

/* Queue query i in the batch (a query too long to send fails alone and the
 * others still run). Fails only when the batch cannot take it. */
static ms_err_t add_query(ms_prom_client_t *c, ms_prom_query_t *q, run_slot_t *slot,
                          const char **hdrs, size_t nh, const ms_prom_run_options_t *o,
                          run_budget_t *budget, ms_http_batch_t *batch)
{
    ms_buf_init(&slot->body, REQUEST_MAX);
    ms_http_response_init(&slot->resp, answer_cap(c, q));
    if (build_body(c, q, &slot->body) != MS_OK) {
        fail_all(q, 1, MS_PROM_BAD_QUERY, "the query is too long to send");
        return MS_OK;
    }
    slot->pend = (pending_query_t){.client = c,
                                   .query = q,
                                   .resp = &slot->resp,
                                   .total = &budget->total,
                                   .max_total = o->max_total_bytes,
                                   .over_budget = &budget->over_budget,
                                   .user_total = &budget->user_total,
                                   .max_user = o->max_user_bytes,
                                   .users_over = &budget->users_over,
                                   .deadline = o->deadline,
                                   .sent = true};
    slot->req =
        (ms_http_request_t){.method = "POST",
                            .url = q->range ? c->range_url : c->query_url,
                            .headers = hdrs,
                            .nheaders = nh,
                            .body = slot->body.data,
                            .body_len = slot->body.len,
                            .timeout_ms = query_timeout_ms(c, q),
                            .cancel = q->preset ? &budget->over_budget : &budget->users_over,
                            .group = q->group,
                            .sink = on_chunk,
                            .sink_ctx = &slot->pend,
                            .on_done = on_answer,
                            .done_ctx = &slot->pend};
    return ms_http_batch_add(batch, &slot->req, &slot->resp);
}

/* After the batch: name a passed deadline, count what was sent and what
 * failed into the client's stats, and tell the circuit breaker. */
static void tally_run(ms_prom_client_t *c, ms_prom_query_t *qs, size_t n, const run_slot_t *slots,
                      const ms_prom_run_options_t *o)
{
    unsigned long long failures = 0, transport = 0;
    size_t sent = 0;

    for (size_t i = 0; i < n; i++) {
        ms_prom_reason_t r = qs[i].result.reason;
        if (!slots[i].pend.sent)
            continue; /* never sent */
        if (r == MS_PROM_TIMEOUT && o->deadline > 0 && ms_clock_monotonic() >= o->deadline)
            ms_errf(qs[i].result.message, sizeof qs[i].result.message, MS_OK,
                    "the round's deadline passed before Prometheus answered");
        if (r != MS_PROM_OK && r != MS_PROM_NO_DATA)
            failures++;
        if (transport_failure(r))
            transport++;
        sent++;
    }
    pthread_mutex_lock(&c->lock);
    c->stats.queries += sent;
    c->stats.failures += failures;
    pthread_mutex_unlock(&c->lock);
    /* A shutdown says nothing about Prometheus. */
    if (sent > 0 && !(o->cancel != NULL && atomic_load(o->cancel)))
        breaker_record(c, transport == sent, ms_clock_monotonic());
}

/* Whether the run may ask Prometheus at all: the circuit breaker is closed
 * and the credentials read. Otherwise every query fails with the reason. */
static bool run_allowed(ms_prom_client_t *c, ms_prom_query_t *qs, size_t n, const char **hdrs,
                        size_t *nh, char **token)
{
    char why[MS_ERRBUF_SIZE] = "";

    if (!breaker_allows(c, ms_clock_monotonic(), why, sizeof why)) {
        fail_all(qs, n, MS_PROM_UNAVAILABLE, why);
        pthread_mutex_lock(&c->lock);
        c->stats.skipped += n;
        pthread_mutex_unlock(&c->lock);
        return false;
    }
    if (!run_headers(c, hdrs, nh, token, why, sizeof why)) {
        fail_all(qs, n, MS_PROM_CREDENTIALS, why);
        return false;
    }
    return true;
}

ms_err_t ms_prom_run_bounded(ms_prom_client_t *c, ms_prom_query_t *qs, size_t n,
                             const ms_prom_run_options_t *o)
{
    const char *hdrs[MAX_HEADERS + 4];
    size_t nh = 0, added = 0;
    run_slot_t *slots = NULL;
    run_budget_t budget = {0};
    ms_http_batch_t *batch = NULL;
    char why[MS_ERRBUF_SIZE], *token = NULL;
    ms_err_t err = MS_OK;

    atomic_init(&budget.over_budget, false);
    atomic_init(&budget.users_over, false);
    for (size_t i = 0; i < n; i++)
        ms_prom_result_cleanup(&qs[i].result);
    if (n == 0 || !run_allowed(c, qs, n, hdrs, &nh, &token))
        return MS_OK;
    slots = calloc(n, sizeof *slots);
    batch = ms_http_batch_new(c->http, c->max_in_flight);
    if (slots == NULL || batch == NULL) {
        err = MS_ERR_NOMEM;
        goto out;
    }
    for (; added < n && err == MS_OK; added++)
        err = add_query(c, &qs[added], &slots[added], hdrs, nh, o, &budget, batch);
    /* The batch stops for a shutdown (o->cancel) and at the deadline; the
     * byte budget stops it through every request's cancel flag. */
    if (err == MS_OK && (err = ms_http_batch_run_until(batch, o->deadline, o->cancel)) == MS_OK)
        tally_run(c, qs, n, slots, o);
out:
    if (err != MS_OK) {
        snprintf(why, sizeof why, "the query batch failed: %s", ms_strerror(err));
        fail_all(qs, n, MS_PROM_TRANSPORT, why);
    }
    ms_http_batch_free(batch);
    for (size_t i = 0; i < added; i++) {
        ms_http_response_cleanup(&slots[i].resp);
        ms_buf_cleanup(&slots[i].body);
    }
    free(slots);
    free_secret(token);
    return err;
}

void ms_prom_client_limits(const ms_prom_client_t *c, size_t *max_in_flight, size_t *max_body)
{
    *max_in_flight = c->max_in_flight;
    *max_body = c->max_body;
}

void ms_prom_client_stats(ms_prom_client_t *c, ms_prom_client_stats_t *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    out->open = ms_clock_monotonic() < c->breaker_open_until;
    pthread_mutex_unlock(&c->lock);
}
