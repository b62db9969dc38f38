/*
 * fakekube.c - see fakekube.h. One accepting thread; each connection gets a
 * thread that reads one request, answers it and closes. State (objects, the
 * event log) is guarded by one mutex; watches wait on its condition.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fakekube.h"
#include "meshscaler/kubeconfig.h"

#define REQ_MAX 8192

typedef struct {
    long rev;
    char *line; /* "{...}\n", owned */
} event_t;

typedef struct conn {
    struct conn *next;
    fakekube_t *fk;
    int fd;
    pthread_t thread;
    atomic_bool done;
} conn_t;

struct fakekube {
    int listen_fd;
    int port;
    pthread_t acceptor;
    atomic_bool stop;
    conn_t *conns; /* only the acceptor touches the list until it is joined */

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t changed;
    cJSON *items;   /* array of stored objects */
    long rev;       /* last resourceVersion given */
    long compacted; /* watches from before this get 410 */
    event_t *log;
    size_t nlog, caplog;
    bool down;
    unsigned long down_epoch; /* bumped by every "down": watches started before end */
    unsigned long lists, watches;
};

static void *xcheck(void *p)
{
    if (p == NULL) {
        fprintf(stderr, "fakekube: out of memory\n");
        abort();
    }
    return p;
}

/* ---- sockets ---- */

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Whether the client closed its end (nothing to read but the end). */
static bool peer_closed(int fd)
{
    char c;
    ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void respond(int fd, int code, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     code, reason, strlen(body));

    if (n > 0 && (size_t)n < sizeof head && send_all(fd, head, (size_t)n))
        send_all(fd, body, strlen(body));
}

/* Read the request head into buf; false on a closed or oversized request. */
static bool read_head(int fd, char *buf, size_t cap)
{
    size_t n = 0;

    while (n + 1 < cap) {
        ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        n += (size_t)r;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL)
            return true;
    }
    return false;
}

/* The value of query parameter name (digits here, so no decoding), or def. */
static long query_long(const char *query, const char *name, long def)
{
    size_t n = strlen(name);

    for (const char *p = query; p != NULL && *p; p = strchr(p, '&')) {
        if (*p == '&')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            char *end;
            long v = strtol(p + n + 1, &end, 10);
            return end == p + n + 1 ? def : v;
        }
    }
    return def;
}

/* ---- the store ---- */

static cJSON *find_locked(fakekube_t *fk, const char *name)
{
    cJSON *it;

    cJSON_ArrayForEach(it, fk->items)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(it, "metadata"), "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return it;
    }
    return NULL;
}

/* Give obj the next resourceVersion and log an event with it. */
static long log_event_locked(fakekube_t *fk, const char *type, cJSON *obj)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    char rv[32], *text;
    size_t n;

    fk->rev++;
    snprintf(rv, sizeof rv, "%ld", fk->rev);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
    xcheck(cJSON_AddStringToObject(md, "resourceVersion", rv));
    text = xcheck(cJSON_PrintUnformatted(obj));
    if (fk->nlog == fk->caplog) {
        fk->caplog = fk->caplog ? fk->caplog * 2 : 64;
        fk->log = xcheck(realloc(fk->log, fk->caplog * sizeof *fk->log));
    }
    n = strlen(text) + strlen(type) + 32;
    fk->log[fk->nlog].rev = fk->rev;
    fk->log[fk->nlog].line = xcheck(malloc(n));
    snprintf(fk->log[fk->nlog].line, n, "{\"type\":\"%s\",\"object\":%s}\n", type, text);
    fk->nlog++;
    free(text);
    pthread_cond_broadcast(&fk->changed);
    return fk->rev;
}

long fakekube_put(fakekube_t *fk, const cJSON *obj)
{
    const cJSON *name =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name");
    cJSON *copy, *was;
    long rev;

    if (!cJSON_IsString(name))
        return 0;
    copy = xcheck(cJSON_Duplicate(obj, true));
    pthread_mutex_lock(&fk->lock);
    was = find_locked(fk, name->valuestring);
    rev = log_event_locked(fk, was != NULL ? "MODIFIED" : "ADDED", copy);
    if (was != NULL)
        cJSON_ReplaceItemViaPointer(fk->items, was, copy);
    else
        cJSON_AddItemToArray(fk->items, copy);
    pthread_mutex_unlock(&fk->lock);
    return rev;
}

long fakekube_put_text(fakekube_t *fk, const char *json)
{
    cJSON *obj = cJSON_Parse(json);
    long rev = obj != NULL ? fakekube_put(fk, obj) : 0;

    cJSON_Delete(obj);
    return rev;
}

long fakekube_delete(fakekube_t *fk, const char *name)
{
    cJSON *was;
    long rev = 0;

    pthread_mutex_lock(&fk->lock);
    if ((was = find_locked(fk, name)) != NULL) {
        cJSON_DetachItemViaPointer(fk->items, was);
        rev = log_event_locked(fk, "DELETED", was);
        cJSON_Delete(was);
    }
    pthread_mutex_unlock(&fk->lock);
    return rev;
}

cJSON *fakekube_get(fakekube_t *fk, const char *name)
{
    cJSON *copy = NULL, *was;

    pthread_mutex_lock(&fk->lock);
    if ((was = find_locked(fk, name)) != NULL)
        copy = xcheck(cJSON_Duplicate(was, true));
    pthread_mutex_unlock(&fk->lock);
    return copy;
}

void fakekube_compact(fakekube_t *fk)
{
    pthread_mutex_lock(&fk->lock);
    for (size_t i = 0; i < fk->nlog; i++)
        free(fk->log[i].line);
    fk->nlog = 0;
    fk->compacted = fk->rev;
    pthread_mutex_unlock(&fk->lock);
}

void fakekube_set_down(fakekube_t *fk, bool down)
{
    pthread_mutex_lock(&fk->lock);
    fk->down = down;
    if (down)
        fk->down_epoch++;
    pthread_cond_broadcast(&fk->changed);
    pthread_mutex_unlock(&fk->lock);
}

void fakekube_counts(fakekube_t *fk, unsigned long *lists, unsigned long *watches)
{
    pthread_mutex_lock(&fk->lock);
    *lists = fk->lists;
    *watches = fk->watches;
    pthread_mutex_unlock(&fk->lock);
}

/* ---- requests ---- */

/* One page: items [cont, cont + limit) (limit 0: all) and a continue token
 * (the next index) when more remain. */
static void serve_list(fakekube_t *fk, int fd, const char *query)
{
    long limit = query_long(query, "limit", 0), cont = query_long(query, "continue", 0);
    cJSON *doc = xcheck(cJSON_CreateObject()), *md, *items;
    char rv[32], next[32];
    char *body;
    long i = 0, n = 0;
    const cJSON *it;

    xcheck(cJSON_AddStringToObject(doc, "kind", "List"));
    xcheck(cJSON_AddStringToObject(doc, "apiVersion", "v1"));
    md = xcheck(cJSON_AddObjectToObject(doc, "metadata"));
    items = xcheck(cJSON_AddArrayToObject(doc, "items"));
    pthread_mutex_lock(&fk->lock);
    fk->lists++;
    snprintf(rv, sizeof rv, "%ld", fk->rev);
    cJSON_ArrayForEach(it, fk->items)
    {
        if (i++ < cont)
            continue;
        if (limit > 0 && n == limit) {
            snprintf(next, sizeof next, "%ld", i - 1);
            xcheck(cJSON_AddStringToObject(md, "continue", next));
            break;
        }
        cJSON_AddItemToArray(items, xcheck(cJSON_Duplicate(it, true)));
        n++;
    }
    pthread_mutex_unlock(&fk->lock);
    xcheck(cJSON_AddStringToObject(md, "resourceVersion", rv));
    body = xcheck(cJSON_PrintUnformatted(doc));
    respond(fd, 200, "OK", body);
    free(body);
    cJSON_Delete(doc);
}

/* The first logged event after rev (a copy of its line, the caller's), or NULL. */
static char *next_event_locked(fakekube_t *fk, long *rev)
{
    for (size_t i = 0; i < fk->nlog; i++) {
        if (fk->log[i].rev > *rev) {
            *rev = fk->log[i].rev;
            return xcheck(strdup(fk->log[i].line));
        }
    }
    return NULL;
}

/* Stream events after resourceVersion from until the client leaves, the
 * fake goes down or stops. epoch is the down_epoch read together with
 * "up" when the request came in (serve): a "down" after that ends the
 * watch, however late it starts streaming. A watch whose next events were
 * compacted away, at its start or while it streams, gets 410 as from etcd,
 * never a silent gap. Closing the connection ends the response. */
static void serve_watch(fakekube_t *fk, int fd, const char *query, unsigned long epoch)
{
    static const char head[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
    static const char gone[] =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version\","
        "\"reason\":\"Expired\",\"code\":410}}\n";
    long rev = query_long(query, "resourceVersion", 0);

    if (!send_all(fd, head, sizeof head - 1))
        return;
    pthread_mutex_lock(&fk->lock);
    fk->watches++;
    while (!atomic_load(&fk->stop) && fk->down_epoch == epoch) {
        char *line;
        struct timespec ts;

        if (rev < fk->compacted) {
            pthread_mutex_unlock(&fk->lock);
            send_all(fd, gone, sizeof gone - 1);
            return;
        }
        if ((line = next_event_locked(fk, &rev)) != NULL) {
            bool sent;
            pthread_mutex_unlock(&fk->lock);
            sent = send_all(fd, line, strlen(line));
            free(line);
            pthread_mutex_lock(&fk->lock);
            if (!sent)
                break;
            continue;
        }
        if (peer_closed(fd))
            break;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&fk->changed, &fk->lock, &ts);
    }
    pthread_mutex_unlock(&fk->lock);
}

static void *serve(void *arg)
{
    conn_t *c = arg;
    fakekube_t *fk = c->fk;
    char req[REQ_MAX], *target, *query, *sp;
    unsigned long epoch;
    bool down;

    if (!read_head(c->fd, req, sizeof req) || strncmp(req, "GET ", 4) != 0)
        goto out;
    target = req + 4;
    if ((sp = strchr(target, ' ')) == NULL)
        goto out;
    *sp = '\0';
    query = strchr(target, '?');
    query = query != NULL ? query + 1 : "";
    pthread_mutex_lock(&fk->lock);
    down = fk->down;
    epoch = fk->down_epoch;
    pthread_mutex_unlock(&fk->lock);
    if (down)
        respond(c->fd, 503, "Service Unavailable",
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                "\"fakekube is down\","
                "\"reason\":\"ServiceUnavailable\",\"code\":503}");
    else if (strstr(query, "watch=true") != NULL)
        serve_watch(fk, c->fd, query, epoch);
    else
        serve_list(fk, c->fd, query);
out:
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
    atomic_store(&c->done, true);
    return NULL;
}

/* Join the connections that finished (all of them when all is set). */
static void reap(fakekube_t *fk, bool all)
{
    conn_t **pc = &fk->conns;

    while (*pc != NULL) {
        conn_t *c = *pc;
        if (all || atomic_load(&c->done)) {
            pthread_join(c->thread, NULL);
            *pc = c->next;
            free(c);
        } else {
            pc = &c->next;
        }
    }
}

static void *accept_loop(void *arg)
{
    fakekube_t *fk = arg;

    while (!atomic_load(&fk->stop)) {
        struct pollfd p = {fk->listen_fd, POLLIN, 0};
        conn_t *c;
        int fd;

        reap(fk, false);
        if (poll(&p, 1, 50) <= 0)
            continue;
        if ((fd = accept(fk->listen_fd, NULL, NULL)) < 0)
            continue;
        c = xcheck(calloc(1, sizeof *c));
        c->fk = fk;
        c->fd = fd;
        atomic_init(&c->done, false);
        if (pthread_create(&c->thread, NULL, serve, c) != 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = fk->conns;
        fk->conns = c;
    }
    reap(fk, true);
    return NULL;
}

fakekube_t *fakekube_start(void)
{
    fakekube_t *fk = xcheck(calloc(1, sizeof *fk));
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fk->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fk->listen_fd < 0 || bind(fk->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fk->listen_fd, 64) != 0 ||
        getsockname(fk->listen_fd, (struct sockaddr *)&sa, &len) != 0) {
        if (fk->listen_fd >= 0)
            close(fk->listen_fd);
        free(fk);
        return NULL;
    }
    fk->port = ntohs(sa.sin_port);
    fk->items = xcheck(cJSON_CreateArray());
    atomic_init(&fk->stop, false);
    pthread_mutex_init(&fk->lock, NULL);
    pthread_cond_init(&fk->changed, NULL);
    if (pthread_create(&fk->acceptor, NULL, accept_loop, fk) != 0) {
        close(fk->listen_fd);
        cJSON_Delete(fk->items);
        free(fk);
        return NULL;
    }
    return fk;
}

void fakekube_stop(fakekube_t *fk)
{
    if (fk == NULL)
        return;
    atomic_store(&fk->stop, true);
    pthread_mutex_lock(&fk->lock);
    pthread_cond_broadcast(&fk->changed);
    pthread_mutex_unlock(&fk->lock);
    pthread_join(fk->acceptor, NULL);
    close(fk->listen_fd);
    for (size_t i = 0; i < fk->nlog; i++)
        free(fk->log[i].line);
    free(fk->log);
    cJSON_Delete(fk->items);
    pthread_mutex_destroy(&fk->lock);
    pthread_cond_destroy(&fk->changed);
    free(fk);
}

ms_kube_client_t *fakekube_client(fakekube_t *fk)
{
    char cfgtext[512], err[256];
    ms_kube_config_t *cfg = NULL;
    ms_kube_client_options_t o;
    ms_kube_client_t *c;
    int n =
        snprintf(cfgtext, sizeof cfgtext,
                 "apiVersion: v1\nkind: Config\n"
                 "clusters: [{name: fake, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
                 "users: [{name: fake, user: {token: fake}}]\n"
                 "contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: ns}}]\n"
                 "current-context: fake\n",
                 fk->port);

    if (n < 0 || (size_t)n >= sizeof cfgtext ||
        ms_kube_config_parse(cfgtext, (size_t)n, "fakekube", "", NULL, &cfg, err, sizeof err) !=
            MS_OK) {
        fprintf(stderr, "fakekube: kubeconfig: %s\n", err);
        return NULL;
    }
    memset(&o, 0, sizeof o);
    o.qps = -1;
    o.max_retries = -1;
    c = ms_kube_client_new(cfg, &o, err, sizeof err);
    if (c == NULL)
        fprintf(stderr, "fakekube: client: %s\n", err);
    ms_kube_config_free(cfg);
    return c;
}
