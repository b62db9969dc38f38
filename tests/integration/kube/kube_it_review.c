/*
 * kube_it_review.c - secure /metrics against the real kube-apiserver, as
 * controller-runtime's --metrics-secure serves it: an ms_server with TLS and
 * the controller's authorizer (TokenReview + SubjectAccessReview, cached).
 *
 * Identities, each a ServiceAccount token from `kubectl create token`:
 *   reviewer  the controller: create on tokenreviews and subjectaccessreviews,
 *             exactly the chart's rules for metrics.secure=true
 *   scraper   Prometheus: a ClusterRole with nonResourceURLs /metrics, get
 *   stranger  authenticated, no rights
 * Checks: scraper -> 200 with the metrics over TLS (HTTP/1.1), stranger -> 403,
 * no token -> 401, a garbage token -> 401, a second scrape costs no API call
 * (the client's request counter), plain HTTP to the TLS port gets nothing,
 * the probes stay plain HTTP, an authorizer without the review rights
 * answers 500, and a certificate from --metrics-cert-dir verifies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "controller/metrics_auth.h"
#include "itest.h"
#include "meshscaler/kube.h"
#include "meshscaler/server.h"

static char ns[64], dir[256], server_url[128];
static char tok_reviewer[4096], tok_scraper[4096], tok_stranger[4096];

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fwrite(text, 1, len, f) != len) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

static void token_for(const char *sa, char *buf, size_t cap)
{
    if (it_kubectl(buf, cap, "-n %s create token %s --duration=1h", ns, sa) != 0) {
        printf("FAIL - kube_it_review: cannot create a token for %s\n", sa);
        exit(1);
    }
}

/* A kubeconfig in dir whose user is the bearer token tok. */
static ms_kube_config_t *config_for(const char *name, const char *tok)
{
    char path[512], text[8192], err[MS_ERRBUF_SIZE];
    const char *paths[1] = {path};
    ms_kube_config_t *cfg = NULL;
    int n;

    snprintf(path, sizeof path, "%s/%s.kubeconfig", dir, name);
    n = snprintf(text, sizeof text,
                 "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n"
                 "    server: %s\n    certificate-authority: %s/pki/ca.crt\n"
                 "users:\n- name: u\n  user:\n    token: %s\n"
                 "contexts:\n- name: c\n  context: {cluster: e2e, user: u}\ncurrent-context: c\n",
                 server_url, it.state, tok);
    write_file(path, text, (size_t)n);
    if (ms_kube_config_load_files(paths, 1, true, NULL, &cfg, err, sizeof err) != MS_OK) {
        printf("FAIL - kube_it_review: load %s: %s\n", path, err);
        exit(1);
    }
    return cfg;
}

/* Wait until `kubectl auth can-i` agrees (RBAC reaches the authorizer's
 * cache within moments; a denial cached before that would last 10 s). */
static void wait_can_i(const char *verb_what, const char *sa)
{
    char out[64];

    for (int i = 0; i < 100; i++) {
        if (it_kubectl(out, sizeof out,
                       "auth can-i %s --as=system:serviceaccount:%s:%s 2>/dev/null", verb_what, ns,
                       sa) == 0 &&
            strcmp(out, "yes") == 0)
            return;
        it_sleep(0.1);
    }
    printf("FAIL - kube_it_review: RBAC for %s never allowed %s\n", sa, verb_what);
    exit(1);
}

typedef struct {
    long status;
    long http_version;
    ms_err_t err;
    char body[512]; /* the start of it */
    bool has_metric;
} reply_t;

/* GET url with an Authorization header (none when auth is NULL), trusting
 * ca_pem (NULL: no verification, as Prometheus' insecureSkipVerify). */
static reply_t get(const char *url, const char *auth, const char *ca_pem)
{
    char err[256], header[4200];
    const char *headers[1] = {header};
    ms_http_options_t o = {0};
    ms_http_client_t *c;
    ms_http_response_t resp;
    ms_http_request_t req = {.url = url, .timeout_ms = 15000};
    reply_t r = {0};

    if (ca_pem != NULL) {
        o.tls.ca_pem = ca_pem;
        o.tls.ca_pem_len = strlen(ca_pem);
    } else {
        o.tls.insecure_skip_verify = true;
    }
    c = ms_http_client_new(&o, err, sizeof err);
    if (auth != NULL) {
        snprintf(header, sizeof header, "Authorization: %s", auth);
        req.headers = headers;
        req.nheaders = 1;
    }
    ms_http_response_init(&resp, 0);
    r.err = ms_http_do(c, &req, &resp);
    r.status = resp.status;
    r.http_version = resp.http_version;
    if (resp.body.data != NULL) {
        snprintf(r.body, sizeof r.body, "%s", resp.body.data);
        r.has_metric = strstr(resp.body.data, "meshscaler_leader 1\n") != NULL;
    }
    ms_http_response_cleanup(&resp);
    ms_http_client_free(c);
    return r;
}

static unsigned long requests(ms__metrics_authorizer_t *a)
{
    ms_kube_stats_t st;

    ms_kube_client_stats(ms__metrics_authorizer_client(a), &st);
    return st.requests;
}

static void setup_identities(void)
{
    it_kubectl(NULL, 0, "-n %s create serviceaccount reviewer", ns);
    it_kubectl(NULL, 0, "-n %s create serviceaccount scraper", ns);
    it_kubectl(NULL, 0, "-n %s create serviceaccount stranger", ns);
    /* The chart's rules (templates/clusterrole.yaml, metrics.secure=true). */
    it_kubectl(NULL, 0,
               "create clusterrole %s-metrics-auth --verb=create "
               "--resource=tokenreviews.authentication.k8s.io,"
               "subjectaccessreviews.authorization.k8s.io",
               ns);
    it_kubectl(NULL, 0,
               "create clusterrolebinding %s-metrics-auth --clusterrole=%s-metrics-auth "
               "--serviceaccount=%s:reviewer",
               ns, ns, ns);
    /* templates/metrics-reader-clusterrole.yaml's rule. */
    it_kubectl(NULL, 0,
               "create clusterrole %s-metrics-reader --verb=get --non-resource-url=/metrics", ns);
    it_kubectl(NULL, 0,
               "create clusterrolebinding %s-metrics-reader --clusterrole=%s-metrics-reader "
               "--serviceaccount=%s:scraper",
               ns, ns, ns);
    wait_can_i("create tokenreviews.authentication.k8s.io", "reviewer");
    wait_can_i("create subjectaccessreviews.authorization.k8s.io", "reviewer");
    wait_can_i("get /metrics", "scraper");
    token_for("reviewer", tok_reviewer, sizeof tok_reviewer);
    token_for("scraper", tok_scraper, sizeof tok_scraper);
    token_for("stranger", tok_stranger, sizeof tok_stranger);
}

static ms_server_t *start(ms__metrics_authorizer_t *a, ms_metrics_t *m, atomic_bool *ready)
{
    ms_server_options_t so = {
        .metrics_addr = "127.0.0.1:0", .health_addr = "127.0.0.1:0", .metrics = m, .ready = ready};
    char err[MS_ERRBUF_SIZE];
    ms_server_t *s;

    ms__metrics_authorizer_apply(a, &so);
    s = ms_server_start(&so, err, sizeof err);
    if (s == NULL) {
        printf("FAIL - kube_it_review: server start: %s\n", err);
        exit(1);
    }
    return s;
}

static void test_self_signed(ms_metrics_t *m)
{
    char url[128], plain[128], health[128], bearer[4200], err[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg = config_for("reviewer", tok_reviewer);
    ms__metrics_authorizer_t *a = ms__metrics_authorizer_new(cfg, NULL, err, sizeof err);
    atomic_bool ready = true;
    ms_server_t *s;
    unsigned long before;
    reply_t r;
    double t0;

    ms_kube_config_free(cfg);
    if (a == NULL) {
        printf("FAIL - kube_it_review: authorizer: %s\n", err);
        exit(1);
    }
    s = start(a, m, &ready);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", ms_server_metrics_port(s));
    snprintf(plain, sizeof plain, "http://127.0.0.1:%d/metrics", ms_server_metrics_port(s));
    snprintf(health, sizeof health, "http://127.0.0.1:%d/readyz", ms_server_health_port(s));

    /* The allowed scraper. */
    snprintf(bearer, sizeof bearer, "Bearer %s", tok_scraper);
    before = requests(a);
    t0 = it_now();
    r = get(url, bearer, NULL);
    it_check(r.status == 200 && r.has_metric, "allowed token -> 200 with the metrics over TLS",
             "status %ld (%s), body \"%.80s\"", r.status, ms_strerror(r.err), r.body);
    it_note("first scrape with a new token: %.0f ms, %lu API requests", (it_now() - t0) * 1000,
            requests(a) - before);
    it_check(requests(a) - before == 2,
             "a new token costs one TokenReview and one SubjectAccessReview", "%lu requests",
             requests(a) - before);
    it_check(r.http_version == 1, "HTTP/1.1 only on the metrics port (no HTTP/2 over ALPN)",
             "HTTP/%ld", r.http_version);
    before = requests(a);
    t0 = it_now();
    r = get(url, bearer, NULL);
    it_check(r.status == 200 && r.has_metric && requests(a) == before,
             "a second scrape is answered from the cache: no API call", "status %ld, %lu requests",
             r.status, requests(a) - before);
    it_note("cached scrape: %.1f ms", (it_now() - t0) * 1000);

    /* Authenticated but not allowed. */
    snprintf(bearer, sizeof bearer, "Bearer %s", tok_stranger);
    before = requests(a);
    r = get(url, bearer, NULL);
    it_check(r.status == 403 && !r.has_metric, "a ServiceAccount without get /metrics -> 403",
             "status %ld, body \"%.80s\"", r.status, r.body);
    it_check(requests(a) - before == 2, "its refusal took both reviews", "%lu requests",
             requests(a) - before);
    before = requests(a);
    r = get(url, bearer, NULL);
    it_check(r.status == 403 && requests(a) == before, "a refusal is cached too",
             "status %ld, %lu requests", r.status, requests(a) - before);

    /* No token, another scheme, garbage. */
    before = requests(a);
    r = get(url, NULL, NULL);
    it_check(r.status == 401 && !r.has_metric && requests(a) == before,
             "no token -> 401 without asking the API server", "status %ld, %lu requests", r.status,
             requests(a) - before);
    r = get(url, "Basic YWRtaW46YWRtaW4=", NULL);
    it_check(r.status == 401 && requests(a) == before, "basic auth -> 401", "status %ld", r.status);
    r = get(url, "Bearer not-a-real-token", NULL);
    it_check(r.status == 401 && !r.has_metric, "a garbage token -> 401",
             "status %ld, body \"%.80s\"", r.status, r.body);
    it_check(requests(a) - before == 1, "a garbage token costs one TokenReview (no access review)",
             "%lu requests", requests(a) - before);
    before = requests(a);
    r = get(url, "Bearer not-a-real-token", NULL);
    it_check(r.status == 401 && requests(a) == before, "... and is cached",
             "status %ld, %lu requests", r.status, requests(a) - before);

    /* Plain HTTP to the TLS port, and the probes. */
    r = get(plain, NULL, NULL);
    it_check(r.status == 0, "plain HTTP to the metrics port gets no answer", "status %ld",
             r.status);
    r = get(health, NULL, NULL);
    it_check(r.status == 200, "the health port stays plain HTTP", "status %ld (%s)", r.status,
             ms_strerror(r.err));
    ms_server_stop(s);
    ms__metrics_authorizer_free(a);
}

/* An authorizer whose identity may not create reviews: 500, never 200. */
static void test_without_review_rights(ms_metrics_t *m)
{
    char url[128], bearer[4200], err[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg = config_for("stranger", tok_stranger);
    ms__metrics_authorizer_t *a = ms__metrics_authorizer_new(cfg, NULL, err, sizeof err);
    atomic_bool ready = true;
    ms_server_t *s;
    reply_t r;

    ms_kube_config_free(cfg);
    s = start(a, m, &ready);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", ms_server_metrics_port(s));
    snprintf(bearer, sizeof bearer, "Bearer %s", tok_scraper);
    r = get(url, bearer, NULL);
    it_check(r.status == 500 && !r.has_metric,
             "without create on tokenreviews the authorizer answers 500",
             "status %ld, body \"%.80s\"", r.status, r.body);
    ms_server_stop(s);
    ms__metrics_authorizer_free(a);
}

/* --metrics-cert-dir: the files are served, and a client that trusts the
 * certificate verifies it (name 127.0.0.1). */
static void test_cert_dir(ms_metrics_t *m)
{
    char certdir[300], path[400], url[128], bearer[4200], err[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg = config_for("reviewer", tok_reviewer);
    ms__metrics_authorizer_t *a;
    ms_buf_t cert, key;
    atomic_bool ready = true;
    ms_server_t *s;
    reply_t r;

    snprintf(certdir, sizeof certdir, "%s/metrics-tls", dir);
    mkdir(certdir, 0700);
    ms_buf_init(&cert, 65536);
    ms_buf_init(&key, 65536);
    if (ms_server_self_signed_cert(&cert, &key, err, sizeof err) != MS_OK) {
        printf("FAIL - kube_it_review: certificate: %s\n", err);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/tls.crt", certdir);
    write_file(path, cert.data, strlen(cert.data));
    snprintf(path, sizeof path, "%s/tls.key", certdir);
    write_file(path, key.data, strlen(key.data));
    a = ms__metrics_authorizer_new(cfg, certdir, err, sizeof err);
    ms_kube_config_free(cfg);
    s = start(a, m, &ready);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", ms_server_metrics_port(s));
    snprintf(bearer, sizeof bearer, "Bearer %s", tok_scraper);
    r = get(url, bearer, cert.data);
    it_check(r.status == 200 && r.has_metric,
             "--metrics-cert-dir: tls.crt is served and verifies (SAN 127.0.0.1)",
             "status %ld (%s)", r.status, ms_strerror(r.err));
    ms_server_stop(s);
    ms__metrics_authorizer_free(a);
    ms_buf_cleanup(&cert);
    explicit_bzero(key.data, key.len);
    ms_buf_cleanup(&key);
}

int main(void)
{
    char out[512];
    ms_metrics_t *m;

    it_init("kube_it_review");
    it_namespace("review", ns, sizeof ns);
    snprintf(dir, sizeof dir, "%s/it-review-%s", it.state, ns);
    mkdir(dir, 0700);
    it_kubectl(out, sizeof out, "config view --minify -o jsonpath='{.clusters[0].cluster.server}'");
    snprintf(server_url, sizeof server_url, "%s", out);
    setup_identities();

    m = ms_metrics_new();
    ms_metrics_set(
        m, ms_metrics_family(m, MS_METRIC_GAUGE, "meshscaler_leader", "Leader.", NULL, 0, NULL, 0),
        NULL, 1);
    test_self_signed(m);
    test_without_review_rights(m);
    test_cert_dir(m);
    ms_metrics_free(m);

    it_kubectl(NULL, 0, "delete clusterrolebinding %s-metrics-auth %s-metrics-reader --wait=false",
               ns, ns);
    it_kubectl(NULL, 0, "delete clusterrole %s-metrics-auth %s-metrics-reader --wait=false", ns,
               ns);
    it_kubectl(NULL, 0, "delete namespace %s --wait=false", ns);
    return it_done();
}
