/*
 * server.c - /metrics, /healthz and /readyz on libwebsockets.
 *
 * One lws context, one vhost per address, one service thread. Everything
 * lws does happens on that thread; the only call made from elsewhere is
 * lws_cancel_service() to wake it (the one call lws allows). A response is
 * built whole when it can be answered (it is small) and written out in
 * chunks as the socket becomes writable.
 *
 * Secure metrics: a /metrics request with a bearer token is answered at
 * once when the lookup callback knows its decision (a cache hit); else it
 * becomes a check_t on a queue (bounded in all and per peer address) and
 * its connection waits. The authorization thread runs the
 * caller's callback for the oldest waiting check, marks it done and wakes
 * the service thread (lws_cancel_service -> LWS_CALLBACK_EVENT_WAIT_CANCELLED),
 * which asks for the connection to become writable and answers then. A
 * check belongs to both its connection and the queue: whichever lets go
 * last frees it, under the server's lock (a connection that closes while
 * its check runs leaves it to the authorization thread).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libwebsockets.h>
#include <openssl/ssl.h>

#include "meshscaler/log.h"
#include "meshscaler/server.h"
#include "meshscaler/xalloc.h"
#include "server_internal.h"

#define CHUNK 16384
#define MAX_HEADER_DATA 16384 /* request headers with secure metrics: room for long tokens */
#define AUTH_WAIT_SECONDS 30  /* a connection waits at most this long for its check */
#define PEM_MAX (64u * 1024u)
#define BUSY_TEXT "Too many authorization checks waiting\n"
#define PEER_BUSY_TEXT "Too many authorization checks waiting from this address\n"
#define PEER_MAX 64 /* an IPv6 address as text fits */

typedef enum { ROLE_METRICS = 0, ROLE_HEALTH } role_t;

typedef enum { CHECK_QUEUED, CHECK_RUNNING, CHECK_DONE } check_state_t;

/* One authorization check; see the top of the file for who frees it. */
typedef struct check {
    struct check *next;
    struct lws *wsi;     /* the waiting connection; NULL once it closed */
    char *token;         /* owned; wiped once the callback returned */
    char peer[PEER_MAX]; /* the client's address, "" when unknown */
    check_state_t state;
    bool woken; /* done and its connection asked to become writable */
    int result; /* an ms_server_auth_t, when done */
} check_t;

struct ms_server {
    struct lws_context *ctx;
    struct lws_vhost *vhosts[2];
    struct lws_protocols protocols[2][2]; /* per role: ours + terminator */
    role_t roles[2];
    ms_server_options_t opts;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    ms_buf_t cert_pem, key_pem; /* the self-signed certificate, when made */

    /* Authorization: everything below under lock. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    check_t *checks; /* every live check, oldest first */
    size_t nchecks;
    bool busy_logged; /* the 503 was logged since the queue was last empty */
    bool auth_stop;
    pthread_t auth_thread;
    bool auth_started;
};

/* Per connection: the response being written, or the check it waits for. */
typedef struct {
    ms_buf_t body;
    size_t sent;
    check_t *check;
} session_t;

static const char *const role_names[] = {"metrics", "health"};

/* ---- responses ---- */

/* Write the headers (status, type, length, one optional extra) and ask to
 * write the body. */
static int respond_with(struct lws *wsi, session_t *ss, unsigned status, const char *type,
                        const char *extra_name, const char *extra_value)
{
    unsigned char buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start,
                                       *end = buf + sizeof buf - 1;

    if (lws_add_http_common_headers(wsi, status, type, (lws_filepos_t)ss->body.len, &p, end))
        return 1;
    if (extra_name != NULL && lws_add_http_header_by_name(wsi, (const unsigned char *)extra_name,
                                                          (const unsigned char *)extra_value,
                                                          (int)strlen(extra_value), &p, end))
        return 1;
    if (lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int respond(struct lws *wsi, session_t *ss, unsigned status, const char *type)
{
    return respond_with(wsi, ss, status, type, NULL, NULL);
}

static int respond_text(struct lws *wsi, session_t *ss, unsigned status, const char *text)
{
    ms_buf_append(&ss->body, text, strlen(text));
    return respond(wsi, ss, status, "text/plain; charset=utf-8");
}

static int respond_metrics(struct lws *wsi, ms_server_t *s, session_t *ss)
{
    if (s->opts.metrics != NULL && ms_metrics_render(s->opts.metrics, &ss->body) != MS_OK) {
        ms_buf_cleanup(&ss->body);
        return respond_text(wsi, ss, HTTP_STATUS_INTERNAL_SERVER_ERROR, "cannot render metrics\n");
    }
    ms_buf_append(&ss->body, "", 0);
    return respond(wsi, ss, HTTP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8");
}

static int respond_unauthorized(struct lws *wsi, session_t *ss)
{
    ms_buf_append(&ss->body, "Unauthorized\n", 13);
    return respond_with(wsi, ss, HTTP_STATUS_UNAUTHORIZED, "text/plain; charset=utf-8",
                        "www-authenticate:", "Bearer");
}

/* The answer to a /metrics request once its check is decided. */
static int respond_decision(struct lws *wsi, ms_server_t *s, session_t *ss, int result)
{
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    switch (result) {
    case MS_SERVER_AUTH_ALLOWED:
        return respond_metrics(wsi, s, ss);
    case MS_SERVER_AUTH_DENIED:
        return respond_text(wsi, ss, HTTP_STATUS_FORBIDDEN,
                            "Forbidden: the caller may not get /metrics\n");
    case MS_SERVER_AUTH_UNAUTHENTICATED:
        return respond_unauthorized(wsi, ss);
    default:
        return respond_text(wsi, ss, HTTP_STATUS_INTERNAL_SERVER_ERROR, "Authorization failed\n");
    }
}

/* ---- authorization checks ---- */

/* Wipe and free a token. */
static void free_token(char *token)
{
    explicit_bzero(token, strlen(token));
    free(token);
}

/* Unlink and free c; the caller holds the lock. */
static void check_free(ms_server_t *s, check_t *c)
{
    for (check_t **at = &s->checks; *at != NULL; at = &(*at)->next) {
        if (*at == c) {
            *at = c->next;
            if (--s->nchecks == 0)
                s->busy_logged = false;
            break;
        }
    }
    if (c->token != NULL)
        free_token(c->token);
    free(c);
}

/* The token of an "Authorization: Bearer TOKEN" header into a new string
 * (the caller wipes and frees it), or NULL when there is none. */
static char *bearer_token(struct lws *wsi)
{
    int n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
    char *hdr, *tok, *token = NULL;
    size_t len;

    if (n <= 0 || n > MAX_HEADER_DATA)
        return NULL;
    hdr = ms_xmalloc((size_t)n + 1);
    if (lws_hdr_copy(wsi, hdr, n + 1, WSI_TOKEN_HTTP_AUTHORIZATION) < 0)
        goto out;
    if (strncasecmp(hdr, "Bearer ", 7) != 0)
        goto out;
    for (tok = hdr + 7; *tok == ' '; tok++)
        ;
    len = strlen(tok);
    while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
        len--;
    if (len > 0 && memchr(tok, ' ', len) == NULL)
        token = ms_xstrndup(tok, len);
out:
    explicit_bzero(hdr, (size_t)n + 1);
    free(hdr);
    return token;
}

/* Checks waiting (or running, or answered but not yet written) for peer;
 * the caller holds the lock. "" (unknown) counts as one peer. */
static size_t checks_from(const ms_server_t *s, const char *peer)
{
    size_t n = 0;

    for (const check_t *c = s->checks; c != NULL; c = c->next)
        n += strcmp(c->peer, peer) == 0;
    return n;
}

/* Answer a /metrics request at once if its decision is known, else queue a
 * check for it (its connection waits), else 503 when the queue, or this
 * peer's share of it, is full. */
static int ask_authorization(struct lws *wsi, ms_server_t *s, session_t *ss)
{
    char *token = bearer_token(wsi), peer[PEER_MAX] = "";
    size_t most = s->opts.max_pending_auth ? s->opts.max_pending_auth : MS_SERVER_MAX_PENDING_AUTH;
    size_t per_peer = s->opts.max_pending_auth_per_peer ? s->opts.max_pending_auth_per_peer
                                                        : MS_SERVER_MAX_PENDING_AUTH_PER_PEER;
    const char *busy = NULL;
    check_t *c;

    if (token == NULL)
        return respond_unauthorized(wsi, ss);
    if (s->opts.lookup != NULL) {
        int known = s->opts.lookup(s->opts.authorize_ctx, token);

        if (known != MS_SERVER_AUTH_UNKNOWN) {
            free_token(token);
            return respond_decision(wsi, s, ss, known);
        }
    }
    if (lws_get_peer_simple(wsi, peer, sizeof peer) == NULL)
        peer[0] = '\0';
    pthread_mutex_lock(&s->lock);
    if (s->nchecks >= most)
        busy = BUSY_TEXT;
    else if (checks_from(s, peer) >= per_peer)
        busy = PEER_BUSY_TEXT;
    if (busy != NULL) {
        bool log = !s->busy_logged;

        s->busy_logged = true;
        pthread_mutex_unlock(&s->lock);
        free_token(token);
        if (log) /* once until the queue empties: a flood must not flood the log */
            MS_LOG_WARN("too many /metrics authorization checks waiting; answering 503",
                        MS_I("waiting", most), MS_I("per_peer", per_peer), MS_S("peer", peer));
        ms_buf_append(&ss->body, busy, strlen(busy));
        return respond_with(wsi, ss, HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                            "retry-after:", "1");
    }
    c = ms_xcalloc(1, sizeof *c);
    c->wsi = wsi;
    c->token = token;
    memcpy(c->peer, peer, sizeof peer);
    c->state = CHECK_QUEUED;
    check_t **tail = &s->checks;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = c;
    s->nchecks++;
    ss->check = c;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, AUTH_WAIT_SECONDS);
    return 0;
}

/* The authorization thread: one check at a time, oldest first. */
static void *authorize_loop(void *arg)
{
    ms_server_t *s = arg;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        check_t *c = s->checks;
        int result;

        while (c != NULL && c->state != CHECK_QUEUED)
            c = c->next;
        if (s->auth_stop)
            break;
        if (c == NULL) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        c->state = CHECK_RUNNING;
        pthread_mutex_unlock(&s->lock);
        result = s->opts.authorize(s->opts.authorize_ctx, c->token);
        pthread_mutex_lock(&s->lock);
        explicit_bzero(c->token, strlen(c->token));
        c->state = CHECK_DONE;
        c->result = result;
        if (c->wsi == NULL)
            check_free(s, c); /* nobody waits for it any more */
        pthread_mutex_unlock(&s->lock);
        lws_cancel_service(s->ctx);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* On the service thread after lws_cancel_service(): wake every connection
 * whose check is done. */
static void wake_decided(ms_server_t *s)
{
    pthread_mutex_lock(&s->lock);
    for (check_t *c = s->checks; c != NULL; c = c->next) {
        if (c->state == CHECK_DONE && !c->woken && c->wsi != NULL) {
            c->woken = true;
            lws_callback_on_writable(c->wsi);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* The connection goes away: let go of its check. */
static void drop_check(ms_server_t *s, session_t *ss)
{
    if (ss->check == NULL)
        return;
    pthread_mutex_lock(&s->lock);
    ss->check->wsi = NULL;
    if (ss->check->state != CHECK_RUNNING)
        check_free(s, ss->check);
    pthread_mutex_unlock(&s->lock);
    ss->check = NULL;
}

/* Writable while waiting: answer if the check is done (else a stray wake). */
static int on_check_writable(struct lws *wsi, ms_server_t *s, session_t *ss)
{
    bool done;
    int result = MS_SERVER_AUTH_ERROR;

    pthread_mutex_lock(&s->lock);
    done = ss->check->state == CHECK_DONE;
    if (done) {
        result = ss->check->result;
        check_free(s, ss->check);
    }
    pthread_mutex_unlock(&s->lock);
    if (!done)
        return 0;
    ss->check = NULL;
    return respond_decision(wsi, s, ss, result);
}

/* ---- requests ---- */

static int on_request(struct lws *wsi, ms_server_t *s, role_t role, session_t *ss, const char *uri)
{
    ms_buf_init(&ss->body, 64u * 1024u * 1024u);
    ss->sent = 0;
    if (role == ROLE_METRICS && strcmp(uri, "/metrics") == 0) {
        if (s->opts.authorize != NULL)
            return ask_authorization(wsi, s, ss);
        return respond_metrics(wsi, s, ss);
    }
    if (role == ROLE_HEALTH && strcmp(uri, "/healthz") == 0) {
        bool alive = s->opts.alive == NULL || atomic_load(s->opts.alive);
        ms_buf_append(&ss->body, alive ? "ok\n" : "unhealthy\n", alive ? 3 : 10);
        return respond(wsi, ss, alive ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE,
                       "text/plain");
    }
    if (role == ROLE_HEALTH && strcmp(uri, "/readyz") == 0) {
        bool ready = s->opts.ready != NULL && atomic_load(s->opts.ready);
        ms_buf_append(&ss->body, ready ? "ok\n" : "not ready\n", ready ? 3 : 10);
        return respond(wsi, ss, ready ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE,
                       "text/plain");
    }
    ms_buf_append(&ss->body, "404 page not found\n", 19);
    return respond(wsi, ss, HTTP_STATUS_NOT_FOUND, "text/plain");
}

static int on_writable(struct lws *wsi, session_t *ss)
{
    unsigned char buf[LWS_PRE + CHUNK];
    size_t left = ss->body.len - ss->sent, n = left < CHUNK ? left : CHUNK;
    bool last = n == left;

    if (n > 0)
        memcpy(buf + LWS_PRE, ss->body.data + ss->sent, n);
    if (lws_write(wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    ss->sent += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    ms_buf_cleanup(&ss->body);
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    session_t *ss = user;
    const struct lws_protocols *proto = lws_get_protocol(wsi);
    ms_server_t *s = wsi ? lws_context_user(lws_get_context(wsi)) : NULL;
    role_t role = proto && proto->user ? *(const role_t *)proto->user : ROLE_METRICS;

    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return on_request(wsi, s, role, ss, (const char *)in);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (ss == NULL)
            return -1;
        return ss->check != NULL ? on_check_writable(wsi, s, ss) : on_writable(wsi, ss);
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (s != NULL && s->opts.authorize != NULL)
            wake_decided(s);
        break;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (ss != NULL) {
            drop_check(s, ss);
            ms_buf_cleanup(&ss->body);
        }
        break;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* "HOST:PORT" or ":PORT" into iface (NULL: all) and port. */
static bool parse_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    char *end;
    long p;

    if (colon == NULL || (size_t)(colon - addr) >= hostlen)
        return false;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    p = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || p < 0 || p > 65535)
        return false;
    *port = (int)p;
    return true;
}

/* lws's own messages join ours: same format, same stream, level kept. */
static void lws_log(int level, const char *line)
{
    char msg[512];
    size_t n = strlen(line);

    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
        n--;
    if (n >= sizeof msg)
        n = sizeof msg - 1;
    memcpy(msg, line, n);
    msg[n] = '\0';
    if (level & LLL_ERR)
        MS_LOG_ERROR("http server", MS_S("component", "libwebsockets"), MS_S("detail", msg));
    else
        MS_LOG_WARN("http server", MS_S("component", "libwebsockets"), MS_S("detail", msg));
}

static bool addr_off(const char *addr)
{
    return addr == NULL || strcmp(addr, "0") == 0;
}

static void *serve(void *arg)
{
    ms_server_t *s = arg;

    while (!atomic_load(&s->stop))
        if (lws_service(s->ctx, 0) < 0)
            break;
    return NULL;
}

/* TLS for the metrics vhost: the files (checked first), or a self-signed
 * certificate made now and kept in s until stop. HTTP/1.1 only (as
 * kubebuilder's scaffold turns HTTP/2 off for metrics), TLS 1.2 or later. */
static ms_err_t metrics_tls(ms_server_t *s, struct lws_context_creation_info *vi, char *errbuf,
                            size_t errlen)
{
    const ms_server_options_t *o = &s->opts;
    ms_err_t err;

    if (o->tls_cert_file != NULL) {
        err = ms__server_tls_check_files(o->tls_cert_file, o->tls_key_file, errbuf, errlen);
        if (err)
            return err;
        vi->ssl_cert_filepath = o->tls_cert_file;
        vi->ssl_private_key_filepath = o->tls_key_file;
        MS_LOG_INFO("serving /metrics over HTTPS", MS_S("certificate", o->tls_cert_file),
                    MS_S("key", o->tls_key_file));
    } else {
        err = ms_server_self_signed_cert(&s->cert_pem, &s->key_pem, errbuf, errlen);
        if (err)
            return err;
        vi->server_ssl_cert_mem = s->cert_pem.data;
        vi->server_ssl_cert_mem_len = (unsigned int)s->cert_pem.len;
        vi->server_ssl_private_key_mem = s->key_pem.data;
        vi->server_ssl_private_key_mem_len = (unsigned int)s->key_pem.len;
        MS_LOG_INFO("serving /metrics over HTTPS with a self-signed certificate (EC P-256, "
                    "localhost, one year); give --metrics-cert-dir for one clients can verify");
    }
    vi->options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT; /* lws reads it per vhost too */
    vi->alpn = "http/1.1";
    vi->ssl_options_set = SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
    return MS_OK;
}

/* Options that cannot work together. */
static ms_err_t check_options(const ms_server_options_t *o, const char *const *addrs, char *errbuf,
                              size_t errlen)
{
    /* One address for both would leave one endpoint unreachable while the
     * other answers: a readiness probe that can never pass. */
    if (!addr_off(addrs[0]) && !addr_off(addrs[1]) && strcmp(addrs[0], addrs[1]) == 0 &&
        strcmp(strrchr(addrs[0], ':') ? strrchr(addrs[0], ':') : "", ":0") != 0)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "the metrics and health-probe addresses are both %s; give each its own port",
                       addrs[0]);
    if (o->authorize != NULL && !o->metrics_tls)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "authorizing /metrics needs TLS: bearer tokens must not travel in clear");
    if ((o->tls_cert_file == NULL) != (o->tls_key_file == NULL))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "a TLS certificate needs its key, and a key its certificate");
    return MS_OK;
}

/* Listen for role r on addr (not "0"): its protocol table and its vhost,
 * with TLS for /metrics when tls. */
static ms_err_t listen_role(ms_server_t *s, int r, const char *addr, bool tls, char *errbuf,
                            size_t errlen)
{
    struct lws_context_creation_info vi;
    char host[256];
    int port;
    ms_err_t err;

    if (!parse_addr(addr, host, sizeof host, &port))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "%s address \"%s\": want HOST:PORT, :PORT or 0", role_names[r], addr);
    s->roles[r] = (role_t)r;
    s->protocols[r][0] = (struct lws_protocols){.name = "http",
                                                .callback = callback,
                                                .per_session_data_size = sizeof(session_t),
                                                .rx_buffer_size = 0,
                                                .user = &s->roles[r]};
    memset(&vi, 0, sizeof vi);
    vi.vhost_name = role_names[r];
    vi.port = port; /* 0: the kernel picks; ms_server_*_port() tell which */
    vi.iface = host[0] ? host : NULL;
    vi.protocols = s->protocols[r];
    vi.options = LWS_SERVER_OPTION_DISABLE_IPV6 | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    if (r == ROLE_METRICS && tls && (err = metrics_tls(s, &vi, errbuf, errlen)) != MS_OK)
        return err;
    s->vhosts[r] = lws_create_vhost(s->ctx, &vi);
    if (s->vhosts[r] == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "cannot listen on %s address %s%s", role_names[r],
                       addr, r == ROLE_METRICS && tls ? " (or set up its TLS)" : "");
    return MS_OK;
}

ms_server_t *ms_server_start(const ms_server_options_t *opts, char *errbuf, size_t errlen)
{
    struct lws_context_creation_info info;
    ms_server_t *s = calloc(1, sizeof *s);
    const char *addrs[2] = {opts->metrics_addr, opts->health_addr};
    bool tls = opts->metrics_tls && !addr_off(opts->metrics_addr);

    if (s == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory starting the HTTP server");
        return NULL;
    }
    s->opts = *opts;
    atomic_init(&s->stop, false);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    ms_buf_init(&s->cert_pem, PEM_MAX);
    ms_buf_init(&s->key_pem, PEM_MAX);
    if (check_options(opts, addrs, errbuf, errlen) != MS_OK)
        goto fail;
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log);

    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6 |
                   LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    if (tls)
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    if (opts->authorize != NULL)
        info.max_http_header_data =
            MAX_HEADER_DATA; /* service account tokens are ~1 KB, OIDC more */
    info.user = s;
    s->ctx = lws_create_context(&info);
    if (s->ctx == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_IO, "cannot create the HTTP server context");
        goto fail;
    }
    for (int r = 0; r < 2; r++)
        if (!addr_off(addrs[r]) && listen_role(s, r, addrs[r], tls, errbuf, errlen) != MS_OK)
            goto fail;
    if (opts->authorize != NULL && s->vhosts[ROLE_METRICS] != NULL) {
        if (pthread_create(&s->auth_thread, NULL, authorize_loop, s) != 0) {
            ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start the authorization thread");
            goto fail;
        }
        s->auth_started = true;
    }
    if (pthread_create(&s->thread, NULL, serve, s) != 0) {
        ms_errf(errbuf, errlen, MS_ERR_IO, "cannot start the HTTP server thread");
        goto fail;
    }
    s->thread_started = true;
    return s;
fail:
    ms_server_stop(s);
    return NULL;
}

int ms_server_metrics_port(const ms_server_t *s)
{
    return s->vhosts[ROLE_METRICS] ? lws_get_vhost_listen_port(s->vhosts[ROLE_METRICS]) : -1;
}

int ms_server_health_port(const ms_server_t *s)
{
    return s->vhosts[ROLE_HEALTH] ? lws_get_vhost_listen_port(s->vhosts[ROLE_HEALTH]) : -1;
}

void ms_server_stop(ms_server_t *s)
{
    if (s == NULL)
        return;
    if (s->thread_started) {
        atomic_store(&s->stop, true);
        lws_cancel_service(s->ctx);
        pthread_join(s->thread, NULL);
    }
    if (s->auth_started) {
        pthread_mutex_lock(&s->lock);
        s->auth_stop = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->auth_thread, NULL);
    }
    /* Closing the connections lets go of their checks (drop_check). */
    if (s->ctx != NULL)
        lws_context_destroy(s->ctx);
    while (s->checks != NULL)
        check_free(s, s->checks);
    if (s->key_pem.data != NULL)
        explicit_bzero(s->key_pem.data, s->key_pem.len);
    ms_buf_cleanup(&s->key_pem);
    ms_buf_cleanup(&s->cert_pem);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
