/*
 * server.c - /metrics, /healthz and /readyz on libwebsockets.
 *
 * One lws context, one vhost per address, one service thread. Everything
 * lws does happens on that thread; the only call made from elsewhere is
 * lws_cancel_service() to wake it for shutdown (the one call lws allows).
 * A response is built whole when the request arrives (it is small) and
 * written out in chunks as the socket becomes writable.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "meshscaler/log.h"
#include "meshscaler/server.h"

#define CHUNK 16384

typedef enum { ROLE_METRICS = 0, ROLE_HEALTH } role_t;

struct ms_server {
    struct lws_context *ctx;
    struct lws_vhost *vhosts[2];
    struct lws_protocols protocols[2][2]; /* per role: ours + terminator */
    role_t roles[2];
    ms_server_options_t opts;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
};

/* Per connection: the response being written. */
typedef struct {
    ms_buf_t body;
    size_t sent;
} session_t;

static const char *const role_names[] = {"metrics", "health"};

static int respond(struct lws *wsi, session_t *ss, unsigned status, const char *type)
{
    unsigned char buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;

    if (lws_add_http_common_headers(wsi, status, type, (lws_filepos_t)ss->body.len, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int on_request(struct lws *wsi, ms_server_t *s, role_t role, session_t *ss, const char *uri)
{
    ms_buf_init(&ss->body, 64u * 1024u * 1024u);
    ss->sent = 0;
    if (role == ROLE_METRICS && strcmp(uri, "/metrics") == 0) {
        if (s->opts.metrics != NULL && ms_metrics_render(s->opts.metrics, &ss->body) != MS_OK) {
            ms_buf_cleanup(&ss->body);
            ms_buf_append(&ss->body, "cannot render metrics\n", 22);
            return respond(wsi, ss, HTTP_STATUS_INTERNAL_SERVER_ERROR, "text/plain");
        }
        ms_buf_append(&ss->body, "", 0);
        return respond(wsi, ss, HTTP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8");
    }
    if (role == ROLE_HEALTH && strcmp(uri, "/healthz") == 0) {
        bool alive = s->opts.alive == NULL || atomic_load(s->opts.alive);
        ms_buf_append(&ss->body, alive ? "ok\n" : "unhealthy\n", alive ? 3 : 10);
        return respond(wsi, ss, alive ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain");
    }
    if (role == ROLE_HEALTH && strcmp(uri, "/readyz") == 0) {
        bool ready = s->opts.ready != NULL && atomic_load(s->opts.ready);
        ms_buf_append(&ss->body, ready ? "ok\n" : "not ready\n", ready ? 3 : 10);
        return respond(wsi, ss, ready ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE, "text/plain");
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

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    session_t *ss = user;
    const struct lws_protocols *proto = lws_get_protocol(wsi);
    ms_server_t *s = proto ? lws_context_user(lws_get_context(wsi)) : NULL;
    role_t role = proto && proto->user ? *(const role_t *)proto->user : ROLE_METRICS;

    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return on_request(wsi, s, role, ss, (const char *)in);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return ss != NULL ? on_writable(wsi, ss) : -1;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (ss != NULL)
            ms_buf_cleanup(&ss->body);
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

static bool addr_off(const char *addr) { return addr == NULL || strcmp(addr, "0") == 0; }

static void *serve(void *arg)
{
    ms_server_t *s = arg;

    while (!atomic_load(&s->stop))
        if (lws_service(s->ctx, 0) < 0)
            break;
    return NULL;
}

ms_server_t *ms_server_start(const ms_server_options_t *opts, char *errbuf, size_t errlen)
{
    struct lws_context_creation_info info;
    ms_server_t *s = calloc(1, sizeof *s);
    const char *addrs[2] = {opts->metrics_addr, opts->health_addr};

    if (s == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_NOMEM, "out of memory starting the HTTP server");
        return NULL;
    }
    s->opts = *opts;
    atomic_init(&s->stop, false);
    /* One address for both would leave one endpoint unreachable while the
     * other answers: a readiness probe that can never pass. */
    if (!addr_off(addrs[0]) && !addr_off(addrs[1]) && strcmp(addrs[0], addrs[1]) == 0 &&
        strcmp(strrchr(addrs[0], ':') ? strrchr(addrs[0], ':') : "", ":0") != 0) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "the metrics and health-probe addresses are both %s; give each its own port",
                addrs[0]);
        goto fail;
    }
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log);

    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6 |
                   LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    info.user = s;
    s->ctx = lws_create_context(&info);
    if (s->ctx == NULL) {
        ms_errf(errbuf, errlen, MS_ERR_IO, "cannot create the HTTP server context");
        goto fail;
    }
    for (int r = 0; r < 2; r++) {
        struct lws_context_creation_info vi;
        char host[256];
        int port;

        if (addr_off(addrs[r]))
            continue;
        if (!parse_addr(addrs[r], host, sizeof host, &port)) {
            ms_errf(errbuf, errlen, MS_ERR_INVALID,
                    "%s address \"%s\": want HOST:PORT, :PORT or 0", role_names[r], addrs[r]);
            goto fail;
        }
        s->roles[r] = (role_t)r;
        s->protocols[r][0] = (struct lws_protocols){
            .name = "http", .callback = callback, .per_session_data_size = sizeof(session_t),
            .rx_buffer_size = 0, .user = &s->roles[r]};
        memset(&vi, 0, sizeof vi);
        vi.vhost_name = role_names[r];
        vi.port = port; /* 0: the kernel picks; ms_server_*_port() tell which */
        vi.iface = host[0] ? host : NULL;
        vi.protocols = s->protocols[r];
        vi.options = LWS_SERVER_OPTION_DISABLE_IPV6 | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
        s->vhosts[r] = lws_create_vhost(s->ctx, &vi);
        if (s->vhosts[r] == NULL) {
            ms_errf(errbuf, errlen, MS_ERR_IO, "cannot listen on %s address %s", role_names[r],
                    addrs[r]);
            goto fail;
        }
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
    if (s->ctx != NULL)
        lws_context_destroy(s->ctx);
    free(s);
}
