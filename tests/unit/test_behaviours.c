/*
 * test_behaviours.c - documented behaviours of issue 15 item 4 that need no
 * controller, each pinned so that breaking it fails here:
 *
 *   h. a list `continue` token that expires mid-list (410 Expired, as the
 *      kube-apiserver answers once etcd compacted past the list's revision)
 *      restarts the list once, and the informer's cache is then exactly the
 *      restarted list: nothing from the expired pages survives (informer.h,
 *      ms_kube_list);
 *   i. the staleness boundary of ms_prom_result_number() (src/prom/decode.c)
 *      on recorded-style answers: age == limit is fresh, limit + epsilon is
 *      stale, limit - epsilon fresh, a sample from the future counts by its
 *      absolute age;
 *   j. engine memory compaction when only the scale-up window still covers
 *      the oldest entries (src/engine/engine_memory.c): the merge keeps the
 *      smaller value, so a compacted memory never lets a scale-up come
 *      sooner than an unbounded one, and never a scale-down either.
 *
 * The list server of (h) is scripted here: tests/tools/fakekube serves any
 * continue token it gets, and the real API server expires tokens only when
 * etcd compacts (every 5 minutes by default), which no test can place
 * between two page requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
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

#include "engine/engine_internal.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"
#include "meshscaler/kubeconfig.h"
#include "meshscaler/prom.h"

/* ======================================================================
 * h. a continue token expiring mid-list
 * ====================================================================== */

/* What the kube-apiserver (v1.37) answers to a list whose continue token
 * names a compacted revision: 410 with reason Expired, and a fresh token
 * for an inconsistent continuation, which a client that wants a consistent
 * list must not use. */
static const char EXPIRED_BODY[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{"
                                   "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6"
                                   "MjEsInN0YXJ0IjoiYlx1MDAwMCJ9\"},\"status\":\"Failure\","
                                   "\"message\":\"The provided continue parameter is too "
                                   "old to display a consistent list result. You can start a new "
                                   "list without the continue parameter, or use "
                                   "the continue token in this response to retrieve the remainder "
                                   "of the results. Continuing with the "
                                   "provided token results in an inconsistent list - objects that "
                                   "were created, modified, or deleted between "
                                   "the time the first chunk was returned and now may show up in "
                                   "the list.\",\"reason\":\"Expired\",\"code\":410}";

#define OBJ(name, rv)                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name                 \
    "\",\"namespace\":\"ns\",\"uid\":\"uid-" name "\",\"resourceVersion\":\"" rv                   \
    "\"},\"data\":{\"v\":\"" rv "\"}}"

/* The first list: a and b, then a continue token. By the time the client
 * asks for the next page, a was deleted, b changed, c created, and etcd
 * compacted: the token has expired. */
static const char PAGE1[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
    "\"10\",\"continue\":\"tok-10\",\"remainingItemCount\":1},\"items\":[" OBJ("a", "5") "," OBJ(
        "b", "6") "]}";
/* The list started again: what the collection holds now. */
static const char FRESH[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
    "\"21\"},\"items\":[" OBJ("b", "12") "," OBJ("c", "15") "]}";

typedef struct {
    int fd, port;
    pthread_t thread;
    atomic_bool stop;
    pthread_mutex_t lock;
    /* how to answer */
    bool expire_always; /* every continue token has expired */
    /* what was asked */
    int first_pages, continues, watches;
    char watch_rv[64];
} lister_t;

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int code, const char *reason, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     code, reason, strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

/* The value of query parameter name in the request target (raw), or "". */
static void query_param(const char *target, const char *name, char *out, size_t cap)
{
    char buf[4096], *save = NULL;
    const char *q = strchr(target, '?');
    size_t n = strlen(name);

    out[0] = '\0';
    if (q == NULL)
        return;
    snprintf(buf, sizeof buf, "%.*s", (int)strcspn(q + 1, " \r\n"), q + 1);
    for (char *p = strtok_r(buf, "&", &save); p != NULL; p = strtok_r(NULL, "&", &save))
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            snprintf(out, cap, "%s", p + n + 1);
            return;
        }
}

/* One request per connection; a watch is held open (nothing to tell) until
 * the client leaves or the test ends. */
static void serve_one(lister_t *l, int fd)
{
    char req[8192], cont[256], watch[16], rv[64];
    size_t n = 0;

    while (n + 1 < sizeof req) {
        ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        n += (size_t)r;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n") != NULL)
            break;
    }
    if (strncmp(req, "GET ", 4) != 0)
        return;
    query_param(req + 4, "continue", cont, sizeof cont);
    query_param(req + 4, "watch", watch, sizeof watch);
    query_param(req + 4, "resourceVersion", rv, sizeof rv);
    if (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0) {
        static const char head[] =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
        pthread_mutex_lock(&l->lock);
        l->watches++;
        snprintf(l->watch_rv, sizeof l->watch_rv, "%s", rv);
        pthread_mutex_unlock(&l->lock);
        send_all(fd, head, sizeof head - 1);
        while (!atomic_load(&l->stop)) {
            struct pollfd p = {fd, POLLIN, 0};
            char c;
            if (poll(&p, 1, 50) > 0 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0)
                break; /* the client closed */
        }
        return;
    }
    pthread_mutex_lock(&l->lock);
    if (cont[0] != '\0') {
        l->continues++;
        pthread_mutex_unlock(&l->lock);
        respond(fd, 410, "Gone", EXPIRED_BODY);
        return;
    }
    l->first_pages++;
    bool first = l->first_pages == 1 || l->expire_always;
    pthread_mutex_unlock(&l->lock);
    respond(fd, 200, "OK", first ? PAGE1 : FRESH);
}

typedef struct {
    lister_t *l;
    int fd;
} conn_arg_t;

static void *conn_main(void *arg)
{
    conn_arg_t *a = arg;

    serve_one(a->l, a->fd);
    shutdown(a->fd, SHUT_RDWR);
    close(a->fd);
    free(a);
    return NULL;
}

static void *accept_main(void *arg)
{
    lister_t *l = arg;
    pthread_t threads[256];
    size_t nthreads = 0;

    while (!atomic_load(&l->stop)) {
        struct pollfd p = {l->fd, POLLIN, 0};
        conn_arg_t *a;
        int fd;

        if (poll(&p, 1, 50) <= 0)
            continue;
        if ((fd = accept(l->fd, NULL, NULL)) < 0)
            continue;
        a = malloc(sizeof *a);
        assert_non_null(a);
        a->l = l;
        a->fd = fd;
        if (nthreads == sizeof threads / sizeof threads[0] ||
            pthread_create(&threads[nthreads], NULL, conn_main, a) != 0) {
            close(fd);
            free(a);
            continue;
        }
        nthreads++;
    }
    for (size_t i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    return NULL;
}

static void lister_start(lister_t *l, bool expire_always)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(l, 0, sizeof *l);
    l->expire_always = expire_always;
    pthread_mutex_init(&l->lock, NULL);
    atomic_init(&l->stop, false);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l->fd >= 0);
    assert_int_equal(bind(l->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l->fd, 64), 0);
    assert_int_equal(getsockname(l->fd, (struct sockaddr *)&sa, &len), 0);
    l->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&l->thread, NULL, accept_main, l), 0);
}

static void lister_stop(lister_t *l)
{
    atomic_store(&l->stop, true);
    pthread_join(l->thread, NULL);
    close(l->fd);
    pthread_mutex_destroy(&l->lock);
}

static ms_kube_client_t *lister_client(const lister_t *l)
{
    char text[512], err[256];
    ms_kube_config_t *cfg = NULL;
    ms_kube_client_options_t o;
    ms_kube_client_t *c;
    int n = snprintf(text, sizeof text,
                     "apiVersion: v1\nkind: Config\n"
                     "clusters: [{name: s, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
                     "users: [{name: s, user: {token: t}}]\n"
                     "contexts: [{name: s, context: {cluster: s, user: s, namespace: ns}}]\n"
                     "current-context: s\n",
                     l->port);

    assert_int_equal(
        ms_kube_config_parse(text, (size_t)n, "lister", "", NULL, &cfg, err, sizeof err), MS_OK);
    memset(&o, 0, sizeof o);
    o.qps = -1;
    o.max_retries = -1;
    c = ms_kube_client_new(cfg, &o, err, sizeof err);
    ms_kube_config_free(cfg);
    assert_non_null(c);
    return c;
}

#define COLLECTION "/api/v1/namespaces/ns/configmaps"

typedef struct {
    char names[16][32];
    char rvs[16][32];
    int n;
} items_t;

static ms_err_t collect_item(void *ctx, cJSON *item)
{
    items_t *it = ctx;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(item, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");

    if (item == NULL) { /* the list starts over: forget what was given */
        it->n = 0;
        return MS_OK;
    }
    if (it->n < 16 && cJSON_IsString(name) && cJSON_IsString(rv)) {
        snprintf(it->names[it->n], sizeof it->names[0], "%s", name->valuestring);
        snprintf(it->rvs[it->n], sizeof it->rvs[0], "%s", rv->valuestring);
        it->n++;
    }
    return MS_OK;
}

/* ms_kube_list: the expired token is not used again, the list starts over
 * (no continue) and its resourceVersion is the restarted list's. */
static void test_list_restarts_when_continue_expires(void **state)
{
    lister_t l;
    ms_kube_client_t *c;
    ms_kube_error_t kerr;
    items_t items = {0};
    unsigned long pages = 0;
    char rv[64] = "";
    ms_err_t err;
    (void)state;

    lister_start(&l, false);
    c = lister_client(&l);
    memset(&kerr, 0, sizeof kerr);
    err = ms_kube_list(c, COLLECTION, NULL, 2, collect_item, &items, rv, sizeof rv, &pages, &kerr);
    ms_kube_client_free(c);
    lister_stop(&l);
    if (err != MS_OK)
        fail_msg("the list did not start over after its continue token expired: %s (%s)",
                 ms_err_name(err), kerr.message);
    assert_string_equal(rv, "21");      /* the restarted list's, not the expired one's */
    assert_int_equal(l.first_pages, 2); /* the first page, then the whole list again */
    assert_int_equal(l.continues, 1);   /* the expired token was sent once, never again */
    assert_int_equal(pages, 3);
    /* Only the restarted list remains: b at its new version, and c. */
    assert_int_equal(items.n, 2);
    assert_string_equal(items.names[0], "b");
    assert_string_equal(items.rvs[0], "12");
    assert_string_equal(items.names[1], "c");
}

/* Restarted once, not forever: when the restarted list's token expires too,
 * the list fails with GONE (the informer then retries after its backoff). */
static void test_list_restarts_only_once(void **state)
{
    lister_t l;
    ms_kube_client_t *c;
    ms_kube_error_t kerr;
    items_t items = {0};
    unsigned long pages = 0;
    char rv[64] = "";
    (void)state;

    lister_start(&l, true);
    c = lister_client(&l);
    memset(&kerr, 0, sizeof kerr);
    assert_int_equal(
        ms_kube_list(c, COLLECTION, NULL, 2, collect_item, &items, rv, sizeof rv, &pages, &kerr),
        MS_ERR_GONE);
    assert_int_equal(kerr.status, 410);
    assert_int_equal(l.first_pages, 2);
    assert_int_equal(l.continues, 2);
    ms_kube_client_free(c);
    lister_stop(&l);
}

typedef struct {
    pthread_mutex_t lock;
    char added[16][32];
    int nadded;
} seen_t;

static void record_change(void *ctx, ms_kube_change_t ch, const cJSON *obj, const cJSON *old)
{
    seen_t *s = ctx;
    const cJSON *name =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name");
    (void)old;

    pthread_mutex_lock(&s->lock);
    if (ch == MS_KUBE_ADDED && s->nadded < 16 && cJSON_IsString(name))
        snprintf(s->added[s->nadded++], sizeof s->added[0], "%s", name->valuestring);
    pthread_mutex_unlock(&s->lock);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The informer: after the restart its cache is the restarted list, exactly.
 * a was only on the expired page (deleted since): it must not be cached or
 * notified, since no watch event will ever remove it (the watch starts from
 * the restarted list's resourceVersion, after a's deletion). */
static void informer_cache_is_the_restarted_list(bool compact)
{
    lister_t l;
    ms_kube_client_t *c;
    ms_kube_informer_t *inf;
    ms_kube_informer_options_t o;
    ms_kube_informer_stats_t st;
    seen_t seen;
    cJSON *b, *ghost, *cobj;
    double end;
    char watch_rv[64] = "", b_rv[64];
    int watches = 0;
    size_t size;
    bool has_ghost, has_c, a_notified = false;

    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.lock, NULL);
    lister_start(&l, false);
    c = lister_client(&l);
    memset(&o, 0, sizeof o);
    o.path = COLLECTION;
    o.page_size = 2;
    o.backoff_initial = 0.05;
    o.backoff_max = 0.2;
    o.compact = compact;
    o.notify = record_change;
    o.ctx = &seen;
    assert_non_null(inf = ms_kube_informer_new(c, &o));
    assert_int_equal(ms_kube_informer_start(inf), MS_OK);
    assert_true(ms_kube_informer_wait_synced(inf, 10));
    /* the watch that follows the list */
    end = mono() + 5;
    do {
        pthread_mutex_lock(&l.lock);
        watches = l.watches;
        snprintf(watch_rv, sizeof watch_rv, "%s", l.watch_rv);
        pthread_mutex_unlock(&l.lock);
        if (watches > 0)
            break;
        usleep(10000);
    } while (mono() < end);

    /* Read everything, stop, then judge (a failed check must not leave the
     * informer's and the server's threads running). */
    ghost = ms_kube_informer_get(inf, "ns/a");
    has_ghost = ghost != NULL;
    cJSON_Delete(ghost);
    size = ms_kube_informer_size(inf);
    b = ms_kube_informer_get(inf, "ns/b");
    snprintf(b_rv, sizeof b_rv, "%s",
             b != NULL ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(b, "metadata"), "resourceVersion"))
                       : "(absent)");
    cJSON_Delete(b);
    cobj = ms_kube_informer_get(inf, "ns/c");
    has_c = cobj != NULL;
    cJSON_Delete(cobj);
    ms_kube_informer_stats(inf, &st);
    ms_kube_informer_free(inf);
    ms_kube_client_free(c);
    lister_stop(&l);
    for (int i = 0; i < seen.nadded; i++)
        a_notified = a_notified || strcmp(seen.added[i], "a") == 0;
    pthread_mutex_destroy(&seen.lock);

    if (has_ghost)
        fail_msg("ns/a, deleted before the restarted list (only on the expired page), is cached: "
                 "the informer keeps objects from the pages of the expired list");
    if (a_notified)
        fail_msg("ADDED was notified for a, which only the expired page had");
    assert_int_equal(size, 2);
    assert_string_equal(b_rv, "12");
    assert_true(has_c);
    assert_int_equal(seen.nadded, 2);
    assert_string_equal(st.resource_version, "21");
    assert_true(watches > 0);
    assert_string_equal(watch_rv, "21"); /* watches from the restarted list */
}

static void test_informer_after_expired_continue_tree(void **state)
{
    (void)state;
    informer_cache_is_the_restarted_list(false);
}

static void test_informer_after_expired_continue_compact(void **state)
{
    (void)state;
    informer_cache_is_the_restarted_list(true);
}

/* ======================================================================
 * i. the staleness boundary of the Prometheus decoder
 * ====================================================================== */

#define UNTOUCHED (-12345.25)

/* Answers shaped exactly as Prometheus 2.42 sends them (tests/fixtures/prom):
 * millisecond timestamps as JSON numbers, the value as a string. */
static void decode_answer(const char *type, const char *ts, ms_prom_result_t *r)
{
    char body[512];

    if (strcmp(type, "vector") == 0)
        snprintf(
            body, sizeof body,
            "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
            "{\"namespace\":\"shop\",\"workload\":\"api\"},\"value\":[%s,\"42\"]}]}}",
            ts);
    else
        snprintf(
            body, sizeof body,
            "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[%s,\"42\"]}}",
            ts);
    ms_prom_result_init(r);
    assert_int_equal(ms_prom_decode(body, strlen(body), 200, r), MS_PROM_OK);
}

static double sample_time(const ms_prom_result_t *r)
{
    return r->type == MS_PROM_TYPE_SCALAR ? r->scalar.t : r->series[0].points[0].t;
}

/* One check: ref_time and limit give want; on OK the value is 42, on STALE
 * it is untouched and the message says which way. */
static void expect_at(const ms_prom_result_t *r, double ref, double limit, ms_prom_reason_t want,
                      const char *what)
{
    double v = UNTOUCHED;
    char msg[MS_ERRBUF_SIZE] = "";
    ms_prom_reason_t got = ms_prom_result_number(r, ref, limit, &v, msg, sizeof msg);

    if (got != want)
        fail_msg("%s: sample at %.6f, reference %.6f (age %.9f), limit %g: got %s, want %s (%s)",
                 what, sample_time(r), ref, ref - sample_time(r), limit, ms_prom_reason_name(got),
                 ms_prom_reason_name(want), msg);
    if (want == MS_PROM_OK) {
        assert_true(v == 42);
    } else {
        assert_true(v == UNTOUCHED);
        assert_non_null(strstr(msg, ref < sample_time(r) ? "in the future" : "old"));
    }
}

/* 2^-20 s (about a microsecond): the finest step a double can add to a unix
 * time of 2026 exactly (its unit in the last place is 2^-22). */
#define EPS (1.0 / 1048576.0)

static void staleness_boundary(const char *type)
{
    static const double limits[] = {300, 15, 1.5};
    ms_prom_result_t r;

    /* 1796002161.5 is exact in binary: age == limit is exactly representable. */
    decode_answer(type, "1796002161.5", &r);
    assert_true(sample_time(&r) == 1796002161.5);
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        double t = sample_time(&r), lim = limits[i];
        expect_at(&r, t + lim, lim, MS_PROM_OK, "age == limit (old side)");
        expect_at(&r, t + lim + EPS, lim, MS_PROM_STALE, "age == limit + epsilon");
        expect_at(&r, t + lim - EPS, lim, MS_PROM_OK, "age == limit - epsilon");
        expect_at(&r, t - lim, lim, MS_PROM_OK, "future by exactly the limit");
        expect_at(&r, t - lim - EPS, lim, MS_PROM_STALE, "future by limit + epsilon");
        expect_at(&r, t - lim + EPS, lim, MS_PROM_OK, "future by limit - epsilon");
        expect_at(&r, t, lim, MS_PROM_OK, "age 0");
    }
    ms_prom_result_cleanup(&r);

    /* A recorded millisecond timestamp (not exact in binary): one
     * millisecond, Prometheus' own resolution, decides either way. */
    decode_answer(type, "1796002161.724", &r);
    {
        double t = sample_time(&r);
        expect_at(&r, t + 300.001, 300, MS_PROM_STALE, "ms timestamp, 1 ms past the limit");
        expect_at(&r, t + 299.999, 300, MS_PROM_OK, "ms timestamp, 1 ms inside the limit");
        expect_at(&r, t - 300.001, 300, MS_PROM_STALE,
                  "ms timestamp, 1 ms past the limit in the future");
        expect_at(&r, t - 299.999, 300, MS_PROM_OK,
                  "ms timestamp, 1 ms inside the limit in the future");
        /* the reference as a caller writes it: whole seconds */
        expect_at(&r, 1796002462.0, 300, MS_PROM_STALE, "300.276 s old");
        expect_at(&r, 1796002461.0, 300, MS_PROM_OK, "299.276 s old");
        expect_at(&r, 1796001861.0, 300, MS_PROM_STALE, "300.724 s in the future");
        expect_at(&r, 1796001862.0, 300, MS_PROM_OK, "299.724 s in the future");
        /* no reference or no limit: no check at all */
        expect_at(&r, 0, 300, MS_PROM_OK, "no reference time");
        expect_at(&r, t + 1e6, 0, MS_PROM_OK, "no limit");
        expect_at(&r, t - 1e6, 0, MS_PROM_OK, "no limit, far future");
    }
    ms_prom_result_cleanup(&r);
}

static void test_staleness_boundary_vector(void **state)
{
    (void)state;
    staleness_boundary("vector");
}

static void test_staleness_boundary_scalar(void **state)
{
    (void)state;
    staleness_boundary("scalar");
}

/* The message names the absolute age and the direction. */
static void test_staleness_message(void **state)
{
    ms_prom_result_t r;
    double v = UNTOUCHED;
    char msg[MS_ERRBUF_SIZE];
    (void)state;

    decode_answer("vector", "1796002161.5", &r);
    assert_int_equal(ms_prom_result_number(&r, 1796002161.5 - 400, 300, &v, msg, sizeof msg),
                     MS_PROM_STALE);
    assert_non_null(strstr(msg, "400 s in the future"));
    assert_int_equal(ms_prom_result_number(&r, 1796002161.5 + 400, 300, &v, msg, sizeof msg),
                     MS_PROM_STALE);
    assert_non_null(strstr(msg, "400 s old"));
    assert_true(v == UNTOUCHED);
    ms_prom_result_cleanup(&r);
}

/* ======================================================================
 * j. compaction when only the scale-up window covers the oldest entries
 * ====================================================================== */

#define REF_MAX 30000
typedef struct {
    double time[REF_MAX];
    int32_t value[REF_MAX];
    size_t n;
} ref_t;

/* The limits an unbounded memory (HPA's) gives. */
static void ref_limits(const ref_t *r, const ms_spec_t *s, double now, int32_t rec, int32_t *up,
                       int32_t *down)
{
    *up = rec;
    *down = rec;
    for (size_t i = 0; i < r->n; i++) {
        if (r->time[i] > now - s->scale_up.window_seconds && r->value[i] < *up)
            *up = r->value[i];
        if (r->time[i] > now - s->scale_down.window_seconds && r->value[i] > *down)
            *down = r->value[i];
    }
}

/* The same limits read from the bounded memory (what ms__stabilize uses). */
static void mem_limits(const ms_engine_memory_t *m, const ms_spec_t *s, double now, int32_t rec,
                       int32_t *up, int32_t *down)
{
    *up = rec;
    *down = rec;
    for (size_t i = 0; i < m->nrecs; i++) {
        if (m->rec_time[i] > now - s->scale_up.window_seconds && m->rec_replicas[i] < *up)
            *up = m->rec_replicas[i];
        if (m->rec_time[i] > now - s->scale_down.window_seconds && m->rec_replicas[i] > *down)
            *down = m->rec_replicas[i];
    }
}

static uint32_t rng = 2024;
static uint32_t rnd(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

static void push(ref_t *r, double t, int32_t v)
{
    assert_true(r->n < REF_MAX);
    r->time[r->n] = t;
    r->value[r->n++] = v;
}

/* Only a scale-up window (an hour at a 1 s sync, scale-down window 0): a
 * noisy rise, so nearly every recommendation is the minimum of what follows
 * and the up-limit must remember far more than 32 of them. The merge must
 * keep the smaller value: the up-limit never rises above the unbounded one
 * (a scale-up never comes sooner), and the result with the current count
 * below everything is that up-limit. */
static void test_up_window_only_never_scales_up_sooner(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ref_t *ref = calloc(1, sizeof *ref);
    size_t differed = 0;
    int32_t v = 10;
    (void)state;

    assert_non_null(ref);
    ms_spec_init(&s);
    s.scale_up.window_seconds = 3600;
    s.scale_down.window_seconds = 0;
    ms_engine_memory_init(&mem);
    for (int t = 0; t < 20000; t++) {
        int32_t stabilized, up, down, rup, rdown;

        v += (int32_t)(rnd() % 7) - 2; /* mostly up, with dips */
        if (v < 1)
            v = 1;
        ref_limits(ref, &s, t, v, &rup, &rdown);
        mem_limits(&mem, &s, t, v, &up, &down);
        stabilized = ms__stabilize(&mem, &s, t, 0, v);
        if (up > rup || stabilized != up) {
            free(ref);
            ms_spec_cleanup(&s);
            if (up > rup)
                fail_msg("t=%d: compacted up-limit %d above the unbounded %d: a scale-up would "
                         "come sooner",
                         t, up, rup);
            fail_msg("t=%d: ms__stabilize gives %d, the up-limit is %d", t, stabilized, up);
        }
        differed += up != rup;
        ms__memory_record(&mem, &s, t, v);
        push(ref, t, v);
        assert_true(mem.nrecs <= MS_ENGINE_MAX_RECOMMENDATIONS);
    }
    free(ref);
    ms_spec_cleanup(&s);
    /* The history really overflowed the slots, or this proves nothing. */
    assert_true(differed > 0);
}

/* The oldest entry is covered only by the scale-up window, the next one by
 * both, and that next one is the largest value of the scale-down window.
 * Merging the two must not lower it: the down-limit keeps 100, so a
 * controller at 100 replicas is not scaled down inside its window (the
 * documented guarantee: a compacted memory can only delay a scale-down). */
static void test_up_only_merge_keeps_the_down_window(void **state)
{
    ms_spec_t s;
    ms_engine_memory_t mem;
    ref_t *ref = calloc(1, sizeof *ref);
    int32_t up, down, rup, rdown, stabilized;
    (void)state;

    assert_non_null(ref);
    ms_spec_init(&s);
    s.scale_up.window_seconds = 3600;
    s.scale_down.window_seconds = 60;
    ms_engine_memory_init(&mem);
    /* t=0: 1 (up window only by t=100); t=50: 100 (both windows, the
     * down-window maximum); t=51..80: 2..31 rising (each the minimum of
     * what follows): 32 live entries, none reusable at t=100. */
    ms__memory_record(&mem, &s, 0, 1);
    push(ref, 0, 1);
    ms__memory_record(&mem, &s, 50, 100);
    push(ref, 50, 100);
    for (int i = 0; i < 30; i++) {
        ms__memory_record(&mem, &s, 51 + i, 2 + i);
        push(ref, 51 + i, 2 + i);
    }
    assert_int_equal(mem.nrecs, 32);
    ms__memory_record(&mem, &s, 100, 33); /* the 33rd: compaction */
    push(ref, 100, 33);
    assert_true(mem.nrecs <= MS_ENGINE_MAX_RECOMMENDATIONS);

    ref_limits(ref, &s, 100, 33, &rup, &rdown);
    mem_limits(&mem, &s, 100, 33, &up, &down);
    stabilized = ms__stabilize(&mem, &s, 100, 100, 33);
    free(ref);
    ms_spec_cleanup(&s);
    assert_int_equal(rdown, 100);
    if (down < rdown)
        fail_msg(
            "after compacting an up-window-only entry into one the scale-down window covers, the "
            "down-limit is %d instead of %d: a scale-down would come sooner than without "
            "compaction",
            down, rdown);
    assert_int_equal(stabilized, 100); /* 100 replicas hold, as HPA would */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_restarts_when_continue_expires),
        cmocka_unit_test(test_list_restarts_only_once),
        cmocka_unit_test(test_informer_after_expired_continue_tree),
        cmocka_unit_test(test_informer_after_expired_continue_compact),
        cmocka_unit_test(test_staleness_boundary_vector),
        cmocka_unit_test(test_staleness_boundary_scalar),
        cmocka_unit_test(test_staleness_message),
        cmocka_unit_test(test_up_window_only_never_scales_up_sooner),
        cmocka_unit_test(test_up_only_merge_keeps_the_down_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
