/*
 * kube_it_auth.c - every way the client authenticates, against the real
 * kube-apiserver, each proven by asking the server who it thinks we are
 * (SelfSubjectReview): a client certificate (embedded and from files), a
 * bearer token, a token file that changes while the client runs, an exec
 * credential plugin, in-cluster ServiceAccount files, tls-server-name, and a
 * wrong CA that must fail with a clear TLS error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "itest.h"
#include "meshscaler/kube.h"

static char ns[64], dir[256], server[128];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* A token for ServiceAccount sa in ns (created if missing). */
static void token_for(const char *sa, char *buf, size_t cap)
{
    it_kubectl(NULL, 0, "-n %s create serviceaccount %s 2>/dev/null", ns, sa);
    if (it_kubectl(buf, cap, "-n %s create token %s --duration=1h", ns, sa) != 0) {
        printf("FAIL - cannot create a token for %s\n", sa);
        exit(1);
    }
}

/* A kubeconfig in dir/name with the cluster of the admin kubeconfig (files)
 * and the given user block. */
static const char *kubeconfig(const char *name, const char *cluster_extra, const char *user)
{
    static char path[512];
    char text[8192];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: %s\n%s"
             "users:\n- name: u\n  user:\n%s\n"
             "contexts:\n- name: c\n  context: {cluster: e2e, user: u, namespace: "
             "%s}\ncurrent-context: c\n",
             server, cluster_extra, user, ns);
    write_file(path, text);
    return path;
}

static void check_identity(const char *what, ms_kube_client_t *c, const char *want)
{
    char who[512];
    it_check(strcmp(it_whoami(c, who, sizeof who), want) == 0, what,
             "server sees \"%s\", want \"%s\"", who, want);
}

static void test_client_certificate(void)
{
    char ca[600], user[1600];
    ms_kube_client_t *c = it_client(it.admin, NULL);
    ms_kube_stats_t st;

    check_identity("client certificate (kubeconfig *-data)", c, "meshscaler-e2e-admin");
    ms_kube_client_stats(c, &st);
    it_check(st.http_version == 2, "HTTP/2 negotiated with kube-apiserver", "HTTP/%ld",
             st.http_version);
    ms_kube_client_free(c);

    snprintf(ca, sizeof ca, "    certificate-authority: %s/pki/ca.crt\n", it.state);
    snprintf(user, sizeof user,
             "    client-certificate: %s/pki/admin.crt\n    client-key: %s/pki/admin.key", it.state,
             it.state);
    c = it_client(kubeconfig("cert-files", ca, user), NULL);
    check_identity("client certificate (files)", c, "meshscaler-e2e-admin");
    ms_kube_client_free(c);
}

static void test_bearer_token(void)
{
    ms_kube_client_t *c = it_client(it.restricted, NULL);
    check_identity("bearer token (the restricted identity)", c,
                   "system:serviceaccount:meshscaler-system:meshscaler");
    ms_kube_client_free(c);
}

static void test_token_file_changes(void)
{
    char ca[600], user[600], tok[4096], tokfile[300], want[200];
    ms_kube_client_options_t o;
    ms_kube_client_t *c;

    snprintf(ca, sizeof ca, "    certificate-authority: %s/pki/ca.crt\n", it.state);
    snprintf(tokfile, sizeof tokfile, "%s/token", dir);
    token_for("reader-a", tok, sizeof tok);
    write_file(tokfile, tok);
    snprintf(user, sizeof user, "    tokenFile: token");
    memset(&o, 0, sizeof o);
    o.token_reload_seconds = 1; /* rotate fast for the test; 60 s by default */
    c = it_client(kubeconfig("token-file", ca, user), &o);
    snprintf(want, sizeof want, "system:serviceaccount:%s:reader-a", ns);
    check_identity("token file", c, want);

    token_for("reader-b", tok, sizeof tok);
    write_file(tokfile, tok);
    it_sleep(1.2);
    snprintf(want, sizeof want, "system:serviceaccount:%s:reader-b", ns);
    check_identity("token file rotated while running is picked up", c, want);
    ms_kube_client_free(c);

    /* A 401 re-reads the file at once, whatever the period: the client
     * starts with a token the server refuses, then the file is fixed. */
    o.token_reload_seconds = 3600;
    write_file(tokfile, "not-a-valid-token");
    c = it_client(kubeconfig("token-file", ca, user), &o);
    {
        char who[512];
        ms_kube_stats_t st;

        it_check(strstr(it_whoami(c, who, sizeof who), "401 Unauthorized") != NULL,
                 "a refused token file gives a 401 error", "%s", who);
        token_for("reader-c", tok, sizeof tok);
        write_file(tokfile, tok);
        snprintf(want, sizeof want, "system:serviceaccount:%s:reader-c", ns);
        check_identity("a 401 re-reads the token file at once and retries", c, want);
        ms_kube_client_stats(c, &st);
        it_check(st.retries == 2, "each 401 cost exactly one retry", "retries=%lu", st.retries);
    }
    ms_kube_client_free(c);
}

static void test_exec_plugin(void)
{
    char ca[600], user[2048], tok[4096], tokfile[300], runs[300], want[200], out[64];
    ms_kube_client_t *c;

    snprintf(ca, sizeof ca, "    certificate-authority: %s/pki/ca.crt\n", it.state);
    snprintf(tokfile, sizeof tokfile, "%s/exec-token", dir);
    snprintf(runs, sizeof runs, "%s/exec-runs", dir);
    token_for("exec-a", tok, sizeof tok);
    write_file(tokfile, tok);
    snprintf(user, sizeof user,
             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s/exec-plugin.sh\n      args: [\"%s\"]\n"
             "      env:\n      - {name: PLUGIN_RUNS, value: \"%s\"}\n      - {name: PLUGIN_TTL, "
             "value: \"3600\"}\n"
             "      interactiveMode: Never",
             it.srcdir, tokfile, runs);
    c = it_client(kubeconfig("exec", ca, user), NULL);
    snprintf(want, sizeof want, "system:serviceaccount:%s:exec-a", ns);
    check_identity("exec credential plugin", c, want);
    check_identity("exec credential plugin (second request)", c, want);
    it_sh(out, sizeof out, "wc -l < '%s'", runs);
    it_check((int)strtol(out, NULL, 10) == 1, "plugin token cached until its expirationTimestamp",
             "plugin ran %s times", out);

    ms_kube_client_free(c);

    /* 401 -> run the plugin again: it first hands out a refused token. */
    unlink(runs);
    write_file(tokfile, "not-a-valid-token");
    c = it_client(kubeconfig("exec", ca, user), NULL);
    {
        char who[512];
        it_check(strstr(it_whoami(c, who, sizeof who), "401 Unauthorized") != NULL,
                 "a refused plugin token gives a 401 error", "%s", who);
    }
    token_for("exec-b", tok, sizeof tok);
    write_file(tokfile, tok);
    snprintf(want, sizeof want, "system:serviceaccount:%s:exec-b", ns);
    check_identity("a 401 re-runs the exec plugin", c, want);
    check_identity("the new plugin token is cached", c, want);
    it_sh(out, sizeof out, "wc -l < '%s'", runs);
    /* run 1 refused -> re-run 2 refused (error); run 3 after the next 401 */
    it_check((int)strtol(out, NULL, 10) == 3, "plugin re-ran once per 401, not per request",
             "plugin ran %s times", out);
    ms_kube_client_free(c);

    /* A token that expires in 12 s is renewed 10 s before its expiry. */
    unlink(runs);
    snprintf(user, sizeof user,
             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s/exec-plugin.sh\n      args: [\"%s\"]\n"
             "      env:\n      - {name: PLUGIN_RUNS, value: \"%s\"}\n      - {name: PLUGIN_TTL, "
             "value: \"12\"}\n",
             it.srcdir, tokfile, runs);
    c = it_client(kubeconfig("exec-short", ca, user), NULL);
    check_identity("exec plugin, short-lived token", c, want);
    check_identity("exec plugin, short-lived token, cached", c, want);
    it_sleep(2.5);
    check_identity("exec plugin, token near expiry", c, want);
    it_sh(out, sizeof out, "wc -l < '%s'", runs);
    it_check((int)strtol(out, NULL, 10) == 2,
             "plugin re-run when its token neared expirationTimestamp", "plugin ran %s times", out);
    ms_kube_client_free(c);
}

static void test_in_cluster(void)
{
    char sa[300], path[400], tok[4096], err[MS_ERRBUF_SIZE], port[16], want[200];
    ms_kube_config_t *cfg = NULL;
    ms_kube_client_options_t o;
    ms_kube_client_t *c;

    snprintf(sa, sizeof sa, "%s/serviceaccount", dir);
    mkdir(sa, 0700);
    token_for("incluster-a", tok, sizeof tok);
    snprintf(path, sizeof path, "%s/token", sa);
    write_file(path, tok);
    snprintf(path, sizeof path, "%s/namespace", sa);
    write_file(path, ns);
    it_sh(NULL, 0, "cp '%s/pki/ca.crt' '%s/ca.crt'", it.state, sa);
    snprintf(port, sizeof port, "%s", strrchr(server, ':') + 1);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    it_check(ms_kube_config_in_cluster(sa, &cfg, err, sizeof err) == MS_OK,
             "in-cluster configuration loads", "%s", err);
    if (cfg == NULL)
        return;
    it_check(strcmp(cfg->namespace_, ns) == 0, "in-cluster namespace from the namespace file", "%s",
             cfg->namespace_);
    memset(&o, 0, sizeof o);
    o.token_reload_seconds = 1;
    c = ms_kube_client_new(cfg, &o, err, sizeof err);
    snprintf(want, sizeof want, "system:serviceaccount:%s:incluster-a", ns);
    check_identity("in-cluster ServiceAccount token", c, want);
    /* The kubelet rotates the projected token: the client follows. */
    token_for("incluster-b", tok, sizeof tok);
    snprintf(path, sizeof path, "%s/token.new", sa);
    write_file(path, tok);
    it_sh(NULL, 0, "mv '%s/token.new' '%s/token'", sa, sa);
    it_sleep(1.2);
    snprintf(want, sizeof want, "system:serviceaccount:%s:incluster-b", ns);
    check_identity("in-cluster token re-read after rotation", c, want);
    ms_kube_client_free(c);
    ms_kube_config_free(cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_tls(void)
{
    char extra[600], user[1600], who[512], want_prefix[300];
    ms_kube_client_t *c;

    snprintf(user, sizeof user,
             "    client-certificate: %s/pki/admin.crt\n    client-key: %s/pki/admin.key", it.state,
             it.state);
    /* The system's public CAs did not sign this API server's certificate. */
    snprintf(extra, sizeof extra,
             "    certificate-authority: /etc/ssl/certs/ca-certificates.crt\n");
    c = it_client(kubeconfig("wrong-ca", extra, user), NULL);
    {
        ms_kube_error_t kerr;
        ms_err_t err = ms_kube_get(c, "/version", NULL, &kerr);
        snprintf(want_prefix, sizeof want_prefix,
                 "TLS with %s failed (check the certificate-authority of %s/wrong-ca)", server,
                 dir);
        it_check(err == MS_ERR_TLS, "wrong CA fails with MS_ERR_TLS", "%s: %s", ms_err_name(err),
                 kerr.message);
        it_check(strncmp(kerr.message, want_prefix, strlen(want_prefix)) == 0 &&
                     strstr(kerr.message, "certificate") != NULL,
                 "wrong CA error says what to fix", "message: %s", kerr.message);
        it_note("wrong-CA message: %s", kerr.message);
    }
    ms_kube_client_free(c);

    /* tls-server-name: verify the certificate as kubernetes.default.svc. */
    snprintf(
        extra, sizeof extra,
        "    certificate-authority: %s/pki/ca.crt\n    tls-server-name: kubernetes.default.svc\n",
        it.state);
    c = it_client(kubeconfig("sni", extra, user), NULL);
    check_identity("tls-server-name in the certificate's names", c, "meshscaler-e2e-admin");
    ms_kube_client_free(c);
    snprintf(extra, sizeof extra,
             "    certificate-authority: %s/pki/ca.crt\n    tls-server-name: "
             "not-the-apiserver.example\n",
             it.state);
    c = it_client(kubeconfig("sni-wrong", extra, user), NULL);
    it_check(strncmp(it_whoami(c, who, sizeof who), "error: TLS with", 15) == 0,
             "tls-server-name not in the certificate fails verification", "%s", who);
    ms_kube_client_free(c);

    snprintf(extra, sizeof extra, "    insecure-skip-tls-verify: true\n");
    c = it_client(kubeconfig("insecure", extra, user), NULL);
    check_identity("insecure-skip-tls-verify connects (and warns)", c, "meshscaler-e2e-admin");
    ms_kube_client_free(c);
}

int main(void)
{
    char out[512];

    it_init("kube_it_auth");
    it_namespace("auth", ns, sizeof ns);
    snprintf(dir, sizeof dir, "%s/it-auth-%s", it.state, ns);
    mkdir(dir, 0700);
    it_kubectl(out, sizeof out, "config view --minify -o jsonpath='{.clusters[0].cluster.server}'");
    snprintf(server, sizeof server, "%s", out);

    test_client_certificate();
    test_bearer_token();
    test_token_file_changes();
    test_exec_plugin();
    test_in_cluster();
    test_tls();
    it_kubectl(NULL, 0, "delete namespace %s --wait=false", ns);
    return it_done();
}
