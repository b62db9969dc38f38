/*
 * test_kube_kubeconfig.c - kubeconfig parsing and merging, in-cluster
 * configuration, and the run-time credentials (token files, exec plugins).
 *
 * Each test writes its kubeconfig files (hand-written, the only hand-made
 * fixtures of the Kubernetes client) into a fresh temporary directory, so
 * relative paths and missing files are exercised for real. Error messages
 * are what an operator reads, so they are checked word for word.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kube_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kubeconfig.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ms-kubeconfig-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Write dir/name; returns the full path (static storage, 4 slots). */
static const char *put(const char *name, const char *text)
{
    static char paths[4][512];
    static int slot;
    char *p = paths[slot++ % 4];
    FILE *f;

    snprintf(p, 512, "%s/%s", dir, name);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static ms_kube_config_t *load_ok(const char *path, const char *context)
{
    ms_kube_config_t *c = NULL;
    char err[MS_ERRBUF_SIZE] = "";
    ms_err_t rc = ms_kube_config_load_files(&path, 1, true, context, &c, err, sizeof err);

    if (rc != MS_OK)
        fail_msg("load %s: %s (%s)", path, err, ms_err_name(rc));
    return c;
}

/* Load path, expect failure with exactly "<path>: <tail>" (or want verbatim
 * when tail starts with '='). */
static void load_fails(const char *path, ms_err_t want, const char *tail)
{
    ms_kube_config_t *c = (ms_kube_config_t *)1;
    char err[MS_ERRBUF_SIZE] = "", expect[MS_ERRBUF_SIZE];
    ms_err_t rc = ms_kube_config_load_files(&path, 1, true, NULL, &c, err, sizeof err);

    if (tail[0] == '=')
        snprintf(expect, sizeof expect, "%s", tail + 1);
    else
        snprintf(expect, sizeof expect, "%s: %s", path, tail);
    assert_null(c);
    assert_string_equal(err, expect);
    assert_int_equal(rc, want);
}

static const char *PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/* ---- every field ---- */

static void test_every_cluster_and_user_field(void **state)
{
    char text[2048], want[512];
    const char *path;
    ms_kube_config_t *c;

    (void)state;
    put("ca.crt", PEM);
    put("client.crt", PEM);
    put("client.key", "KEY");
    put("token", "  file-token\n");
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n"
             "- name: prod\n  cluster:\n    server: https://10.0.0.1:6443/\n"
             "    certificate-authority: ca.crt\n    tls-server-name: api.internal\n"
             "    proxy-url: http://proxy:3128\n"
             "users:\n"
             "- name: alice\n  user:\n    client-certificate: client.crt\n"
             "    client-key: %s/client.key\n    tokenFile: token\n"
             "contexts:\n- name: main\n  context: {cluster: prod, user: alice, namespace: shop}\n"
             "current-context: main\n",
             dir);
    path = put("config", text);
    c = load_ok(path, NULL);
    assert_string_equal(c->server, "https://10.0.0.1:6443");
    snprintf(want, sizeof want, "%s/ca.crt", dir);
    assert_string_equal(c->ca_file, want);
    assert_null(c->ca_pem);
    snprintf(want, sizeof want, "%s/client.crt", dir);
    assert_string_equal(c->cert_file, want);
    snprintf(want, sizeof want, "%s/client.key", dir);
    assert_string_equal(c->key_file, want);
    snprintf(want, sizeof want, "%s/token", dir);
    assert_string_equal(c->token_file, want);
    assert_string_equal(c->tls_server_name, "api.internal");
    assert_string_equal(c->proxy_url, "http://proxy:3128");
    assert_string_equal(c->namespace_, "shop");
    assert_string_equal(c->context, "main");
    assert_string_equal(c->source, path);
    assert_false(c->insecure_skip_tls_verify);
    assert_null(c->exec);
    ms_kube_config_free(c);
}

static void test_data_fields_are_base64_decoded(void **state)
{
    ms_kube_config_t *c;
    const char *path;

    (void)state;
    /* "CA-PEM", "CERT", "KEY" */
    path = put("config", "clusters:\n- name: c\n  cluster:\n    server: https://h\n"
                         "    certificate-authority-data: Q0EtUEVN\n"
                         "users:\n- name: u\n  user:\n    client-certificate-data: Q0VSVA==\n"
                         "    client-key-data: S0VZ\n    token: static-token\n"
                         "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
                         "current-context: x\n");
    c = load_ok(path, NULL);
    assert_int_equal(c->ca_pem_len, 6);
    assert_memory_equal(c->ca_pem, "CA-PEM", 6);
    assert_int_equal(c->cert_pem_len, 4);
    assert_memory_equal(c->cert_pem, "CERT", 4);
    assert_int_equal(c->key_pem_len, 3);
    assert_memory_equal(c->key_pem, "KEY", 3);
    assert_string_equal(c->token, "static-token");
    assert_string_equal(c->namespace_, "default");
    ms_kube_config_free(c);
}

static void test_insecure_skip_tls_verify(void **state)
{
    ms_kube_config_t *c;
    const char *path;

    (void)state;
    path = put(
        "config",
        "clusters:\n- name: c\n  cluster: {server: 'https://h:1', insecure-skip-tls-verify: true}\n"
        "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
    c = load_ok(path, NULL);
    assert_true(c->insecure_skip_tls_verify);
    assert_null(c->token);
    ms_kube_config_free(c);
}

static void test_exec_plugin_fields(void **state)
{
    ms_kube_config_t *c;
    const char *path;

    (void)state;
    path = put("config",
               "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
               "users:\n- name: u\n  user:\n    exec:\n"
               "      apiVersion: client.authentication.k8s.io/v1\n"
               "      command: get-token\n      args: [--cluster, prod]\n"
               "      env:\n      - {name: REGION, value: eu-1}\n      - {name: EMPTY}\n"
               "      interactiveMode: Never\n"
               "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
    c = load_ok(path, NULL);
    assert_non_null(c->exec);
    assert_string_equal(c->exec->command, "get-token");
    assert_int_equal(c->exec->nargs, 2);
    assert_string_equal(c->exec->args[0], "--cluster");
    assert_string_equal(c->exec->args[1], "prod");
    assert_int_equal(c->exec->nenv, 2);
    assert_string_equal(c->exec->env[0], "REGION=eu-1");
    assert_string_equal(c->exec->env[1], "EMPTY=");
    assert_string_equal(c->exec->api_version, "client.authentication.k8s.io/v1");
    ms_kube_config_free(c);
}

static void test_named_context_overrides_current(void **state)
{
    ms_kube_config_t *c;
    const char *path;

    (void)state;
    path = put("config", "clusters:\n- {name: a, cluster: {server: 'https://a'}}\n"
                         "- {name: b, cluster: {server: 'https://b'}}\n"
                         "contexts:\n- {name: ca, context: {cluster: a}}\n- {name: cb, context: "
                         "{cluster: b, namespace: n2}}\n"
                         "current-context: ca\n");
    c = load_ok(path, "cb");
    assert_string_equal(c->server, "https://b");
    assert_string_equal(c->namespace_, "n2");
    ms_kube_config_free(c);
}

/* ---- merging like kubectl ---- */

static void test_kubeconfig_env_merge_first_file_wins(void **state)
{
    ms_kube_config_options_t o;
    ms_kube_config_t *c = NULL;
    char env[2048], err[MS_ERRBUF_SIZE] = "", first[512], second[512], src[1100];

    (void)state;
    snprintf(first, sizeof first, "%s",
             put("one", "current-context: from-one\n"
                        "clusters:\n- {name: shared, cluster: {server: 'https://first'}}\n"
                        "users:\n- {name: u, user: {token: one}}\n"));
    snprintf(second, sizeof second, "%s",
             put("two", "current-context: from-two\n"
                        "clusters:\n- {name: shared, cluster: {server: 'https://second'}}\n"
                        "users:\n- {name: u, user: {token: two}}\n"
                        "contexts:\n- {name: from-one, context: {cluster: shared, user: u}}\n"));
    /* A missing file in the list is skipped, as kubectl does. */
    snprintf(env, sizeof env, "%s/missing:%s:%s", dir, first, second);
    memset(&o, 0, sizeof o);
    o.kubeconfig_env = env;
    o.no_in_cluster = true;
    assert_int_equal(ms_kube_config_load(&o, &c, err, sizeof err), MS_OK);
    assert_string_equal(c->context, "from-one");     /* first file's current-context */
    assert_string_equal(c->server, "https://first"); /* first definition of "shared" */
    assert_string_equal(c->token, "one");
    snprintf(src, sizeof src, "%s:%s", first, second);
    assert_string_equal(c->source, src);
    ms_kube_config_free(c);
}

static void test_explicit_kubeconfig_beats_env(void **state)
{
    ms_kube_config_options_t o;
    ms_kube_config_t *c = NULL;
    char err[MS_ERRBUF_SIZE] = "", path[512];

    (void)state;
    snprintf(path, sizeof path, "%s",
             put("explicit",
                 "clusters:\n- {name: c, cluster: {server: 'https://explicit'}}\n"
                 "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"));
    memset(&o, 0, sizeof o);
    o.kubeconfig = path;
    o.kubeconfig_env = "/nonexistent/a:/nonexistent/b";
    assert_int_equal(ms_kube_config_load(&o, &c, err, sizeof err), MS_OK);
    assert_string_equal(c->server, "https://explicit");
    ms_kube_config_free(c);
}

static void test_home_default_file(void **state)
{
    ms_kube_config_options_t o;
    ms_kube_config_t *c = NULL;
    char err[MS_ERRBUF_SIZE] = "", kdir[300];

    (void)state;
    snprintf(kdir, sizeof kdir, "%s/.kube", dir);
    mkdir(kdir, 0700);
    put(".kube/config", "clusters:\n- {name: c, cluster: {server: 'https://home'}}\n"
                        "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n");
    memset(&o, 0, sizeof o);
    o.kubeconfig_env = "";
    o.home = dir;
    o.no_in_cluster = true;
    assert_int_equal(ms_kube_config_load(&o, &c, err, sizeof err), MS_OK);
    assert_string_equal(c->server, "https://home");
    ms_kube_config_free(c);
}

static void test_no_configuration_anywhere(void **state)
{
    ms_kube_config_options_t o;
    ms_kube_config_t *c = NULL;
    char err[MS_ERRBUF_SIZE] = "", env[600], want[700];

    (void)state;
    snprintf(env, sizeof env, "%s/a:%s/b", dir, dir);
    memset(&o, 0, sizeof o);
    o.kubeconfig_env = env;
    o.no_in_cluster = true;
    assert_int_equal(ms_kube_config_load(&o, &c, err, sizeof err), MS_ERR_NOTFOUND);
    snprintf(want, sizeof want, "no kubeconfig file found (looked for %s/a and others)", dir);
    assert_string_equal(err, want);
    assert_null(c);
}

/* ---- broken files: the file and the field, exactly ---- */

static void test_missing_explicit_file(void **state)
{
    char path[400], want[600];

    (void)state;
    snprintf(path, sizeof path, "%s/nope", dir);
    snprintf(want, sizeof want, "=kubeconfig: cannot read \"%s\": No such file or directory", path);
    load_fails(path, MS_ERR_NOTFOUND, want);
}

static void test_yaml_syntax_error(void **state)
{
    (void)state;
    load_fails(put("config", "clusters:\n- name: a\n  cluster: server: x\n"), MS_ERR_PARSE,
               "line 3 column 18: mapping values are not allowed in this context");
}

static void test_document_not_a_mapping(void **state)
{
    (void)state;
    load_fails(put("config", "- just\n- a list\n"), MS_ERR_INVALID,
               "not a kubeconfig (the document is not a mapping)");
}

static void test_missing_ca_file_names_file_and_field(void **state)
{
    char want[600];

    (void)state;
    snprintf(want, sizeof want,
             "clusters[0].cluster.certificate-authority: cannot read \"%s/missing-ca.crt\": No "
             "such file or directory",
             dir);
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h', "
                             "certificate-authority: missing-ca.crt}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, want);
}

static void test_missing_client_key_file(void **state)
{
    char want[600];

    (void)state;
    put("c.crt", PEM);
    snprintf(want, sizeof want,
             "users[1].user.client-key: cannot read \"%s/k.pem\": No such file or directory", dir);
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: other, user: {}}\n- {name: u, user: {client-certificate: "
                   "c.crt, client-key: k.pem}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, want);
}

static void test_missing_token_file(void **state)
{
    char want[600];

    (void)state;
    snprintf(want, sizeof want,
             "users[0].user.tokenFile: cannot read \"%s/tok\": No such file or directory", dir);
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {tokenFile: tok}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, want);
}

static void test_field_errors(void **state)
{
    (void)state;
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h', "
                             "certificate-authority-data: '!!!'}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.certificate-authority-data: not valid base64");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: [a, b]}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.server: not a string");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.server: missing");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'ftp://h'}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.server: not an http:// or https:// URL");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https:///'}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.server: the URL names no host");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h', "
                             "insecure-skip-tls-verify: maybe}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters[0].cluster.insecure-skip-tls-verify: not true or false");
    load_fails(
        put("config", "clusters:\n- {name: c, cluster: {server: 'https://h', "
                      "certificate-authority: a, certificate-authority-data: QQ==}}\n"
                      "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
        MS_ERR_INVALID,
        "clusters[0].cluster: certificate-authority and certificate-authority-data are both set");
    load_fails(put("config", "clusters: {a: b}\ncontexts:\n- {name: x, context: {cluster: "
                             "c}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "clusters: not a list");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "contexts:\n- {name: x, context: {cluster: nope}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "contexts[0].context.cluster: cluster \"nope\" not found");
    load_fails(
        put("config",
            "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
            "contexts:\n- {name: x, context: {cluster: c, user: ghost}}\ncurrent-context: x\n"),
        MS_ERR_INVALID, "contexts[0].context.user: user \"ghost\" not found");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                             "contexts:\n- {name: x, context: {user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "contexts[0].context.cluster: missing");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                             "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: y\n"),
               MS_ERR_INVALID, "context \"y\" not found");
    load_fails(put("config", "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"),
               MS_ERR_INVALID, "no current-context is set and no context was given");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {client-certificate-data: QQ==}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID,
               "users[0].user: a client certificate needs a client key, and a key a certificate");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {exec: {command: x}}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "users[0].user.exec.apiVersion: missing");
    load_fails(
        put("config",
            "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
            "users:\n- {name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1}}}\n"
            "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
        MS_ERR_INVALID, "users[0].user.exec.command: missing");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
                   "command: x, env: [{value: 1}]}}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "users[0].user.exec.env[0].name: missing or not a variable name");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {auth-provider: {name: gcp}}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID,
               "users[0].user: auth-provider is not supported (use an exec credential plugin)");
    load_fails(put("config",
                   "clusters:\n- {name: c, cluster: {server: 'https://h'}}\n"
                   "users:\n- {name: u, user: {token: t, exec: {apiVersion: "
                   "client.authentication.k8s.io/v1, command: x}}}\n"
                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
               MS_ERR_INVALID, "users[0].user: token and exec are both set");
}

/* ---- in-cluster ---- */

static void test_in_cluster(void **state)
{
    ms_kube_config_t *c = NULL;
    char err[MS_ERRBUF_SIZE] = "", want[600];

    (void)state;
    put("token", "sa-token\n");
    put("ca.crt", PEM);
    put("namespace", "meshscaler-system\n");
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(ms_kube_config_in_cluster(dir, &c, err, sizeof err), MS_OK);
    assert_string_equal(c->server, "https://[fd00::1]:443");
    assert_string_equal(c->namespace_, "meshscaler-system");
    snprintf(want, sizeof want, "%s/token", dir);
    assert_string_equal(c->token_file, want);
    assert_true(c->in_cluster);
    ms_kube_config_free(c);

    unlink(want);
    assert_int_equal(ms_kube_config_in_cluster(dir, &c, err, sizeof err), MS_ERR_NOTFOUND);
    snprintf(want, sizeof want, "in-cluster: cannot read \"%s/token\": No such file or directory",
             dir);
    assert_string_equal(err, want);
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(ms_kube_config_in_cluster(dir, &c, err, sizeof err), MS_ERR_NOTFOUND);
    assert_string_equal(
        err, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ---- credentials at run time ---- */

static ms_kube_config_t *token_file_config(const char *file)
{
    ms_kube_config_t *c = calloc(1, sizeof *c);
    c->server = strdup("https://h");
    c->token_file = strdup(file);
    return c;
}

static void test_token_file_is_reread_after_the_period(void **state)
{
    char hdr[512], err[MS_ERRBUF_SIZE];
    const char *file;
    ms_kube_config_t *cfg;
    ms_kube_cred_t *cred;

    (void)state;
    file = put("tok", "first\n");
    cfg = token_file_config(file);
    cred = ms_kube_cred_new(cfg, 60);
    assert_int_equal(ms_kube_cred_header(cred, 1000, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer first");
    put("tok", "second\n");
    assert_int_equal(ms_kube_cred_header(cred, 1059, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer first"); /* cached for 60 s */
    assert_int_equal(ms_kube_cred_header(cred, 1060, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer second");
    /* A 401 makes the next request read the file at once. */
    put("tok", "third\n");
    ms_kube_cred_invalidate(cred);
    assert_int_equal(ms_kube_cred_header(cred, 1061, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer third");
    /* A file that vanished keeps the last good token. */
    unlink(file);
    assert_int_equal(ms_kube_cred_header(cred, 2000, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer third");
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);
}

static ms_kube_config_t *exec_config(const char *script)
{
    ms_kube_config_t *c = calloc(1, sizeof *c);
    c->server = strdup("https://h");
    c->exec = calloc(1, sizeof *c->exec);
    c->exec->command = strdup("/bin/sh");
    c->exec->api_version = strdup("client.authentication.k8s.io/v1");
    c->exec->args = calloc(2, sizeof(char *));
    c->exec->args[0] = strdup(script);
    c->exec->nargs = 1;
    c->exec->env = calloc(2, sizeof(char *));
    c->exec->env[0] = strdup("TOKEN_PREFIX=tok");
    c->exec->nenv = 1;
    return c;
}

static void test_exec_plugin_token_cached_until_expiry(void **state)
{
    char hdr[512], err[MS_ERRBUF_SIZE], script[2048], counter[400], ts[40];
    ms_kube_config_t *cfg;
    ms_kube_cred_t *cred;

    (void)state;
    /* The plugin counts its runs and echoes KUBERNETES_EXEC_INFO's apiVersion. */
    snprintf(counter, sizeof counter, "%s/runs", dir);
    ms_time_rfc3339(ms_clock_wall() + 3600, false, ts, sizeof ts);
    snprintf(
        script, sizeof script,
        "echo x >> %s\n"
        "n=$(wc -l < %s)\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 3;; esac\n"
        "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
        "\"status\":{\"token\":\"%%s-%%s\",\"expirationTimestamp\":\"%s\"}}' \"$TOKEN_PREFIX\" "
        "\"$n\"\n",
        counter, counter, ts);
    cfg = exec_config(put("plugin.sh", script));
    cred = ms_kube_cred_new(cfg, 0);
    assert_int_equal(ms_kube_cred_header(cred, 1, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer tok-1");
    assert_int_equal(ms_kube_cred_header(cred, 2, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer tok-1");
    assert_int_equal(ms_kube_cred_exec_runs(cred), 1);
    ms_kube_cred_invalidate(cred); /* a 401 */
    assert_int_equal(ms_kube_cred_header(cred, 3, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_string_equal(hdr, "Authorization: Bearer tok-2");
    assert_int_equal(ms_kube_cred_exec_runs(cred), 2);
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);
}

static void test_exec_plugin_expired_token_reruns(void **state)
{
    char hdr[512], err[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg;
    ms_kube_cred_t *cred;

    (void)state;
    cfg = exec_config(put(
        "plugin.sh",
        "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
        "\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2001-01-01T00:00:00Z\"}}'\n"));
    cred = ms_kube_cred_new(cfg, 0);
    assert_int_equal(ms_kube_cred_header(cred, 1, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_int_equal(ms_kube_cred_header(cred, 2, hdr, sizeof hdr, err, sizeof err), MS_OK);
    assert_int_equal(ms_kube_cred_exec_runs(cred), 2);
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);
}

static void test_exec_plugin_failures(void **state)
{
    char hdr[512], err[MS_ERRBUF_SIZE];
    ms_kube_config_t *cfg;
    ms_kube_cred_t *cred;

    (void)state;
    cfg = exec_config(put("plugin.sh", "echo nope; exit 0\n"));
    cred = ms_kube_cred_new(cfg, 0);
    assert_int_equal(ms_kube_cred_header(cred, 1, hdr, sizeof hdr, err, sizeof err), MS_ERR_PARSE);
    assert_string_equal(err, "exec plugin /bin/sh: output is not a JSON object");
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);

    cfg = exec_config(put("plugin.sh", "exit 7\n"));
    cred = ms_kube_cred_new(cfg, 0);
    assert_int_equal(ms_kube_cred_header(cred, 1, hdr, sizeof hdr, err, sizeof err), MS_ERR_IO);
    assert_string_equal(err, "exec plugin /bin/sh: exited with status 7");
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);

    cfg = exec_config(put("plugin.sh", "echo "
                                       "'{\"apiVersion\":\"client.authentication.k8s.io/"
                                       "v1beta1\",\"kind\":\"ExecCredential\"}'\n"));
    cred = ms_kube_cred_new(cfg, 0);
    assert_int_equal(ms_kube_cred_header(cred, 1, hdr, sizeof hdr, err, sizeof err),
                     MS_ERR_INVALID);
    assert_string_equal(
        err,
        "exec plugin /bin/sh: output is not an ExecCredential of client.authentication.k8s.io/v1");
    ms_kube_cred_free(cred);
    ms_kube_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_cluster_and_user_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_fields_are_base64_decoded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insecure_skip_tls_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_plugin_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_named_context_overrides_current, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubeconfig_env_merge_first_file_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_kubeconfig_beats_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_home_default_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_configuration_anywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_explicit_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_syntax_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_document_not_a_mapping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_ca_file_names_file_and_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_client_key_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_token_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_field_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file_is_reread_after_the_period, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_exec_plugin_token_cached_until_expiry, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_exec_plugin_expired_token_reruns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_plugin_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
