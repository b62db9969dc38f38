/* itest.c - helpers of the Kubernetes client's integration tests. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "meshscaler/log.h"

it_env_t it;
static int passed, failed;
static const char *test_name;

void it_init(const char *name)
{
    test_name = name;
    it.state = getenv("MESHSCALER_E2E_STATE");
    it.admin = getenv("MS_IT_ADMIN_KUBECONFIG");
    it.restricted = getenv("MS_IT_RESTRICTED_KUBECONFIG");
    it.kubectl = getenv("MS_IT_KUBECTL");
    it.apiserver_sh = getenv("MS_IT_APISERVER_SH");
    it.bindir = getenv("MS_IT_BINDIR");
    it.srcdir = getenv("MS_IT_SRCDIR");
    if (!it.state || !it.admin || !it.restricted || !it.kubectl || !it.apiserver_sh || !it.srcdir) {
        fprintf(stderr, "%s: no control plane (run tests/integration/kube/run.sh); skipped\n",
                name);
        exit(77);
    }
    ms_log_setup(getenv("MS_IT_DEBUG") ? MS_LOG_DEBUG : MS_LOG_WARN, MS_LOG_TEXT, NULL);
    ms_http_global_init();
    setvbuf(stdout, NULL, _IOLBF, 0);
}

bool it_check(bool cond, const char *what, const char *fmt, ...)
{
    char detail[1024] = "";
    va_list ap;

    if (fmt != NULL) {
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    }
    if (cond) {
        passed++;
        printf("ok   - %s: %s\n", test_name, what);
    } else {
        failed++;
        printf("FAIL - %s: %s%s%s\n", test_name, what, detail[0] ? ": " : "", detail);
    }
    return cond;
}

void it_note(const char *fmt, ...)
{
    va_list ap;

    printf("#      %s: ", test_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

int it_done(void)
{
    printf("%s: %d passed, %d failed\n", test_name, passed, failed);
    return failed ? 1 : 0;
}

static int run(char *out, size_t cap, const char *cmd)
{
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    int st;

    if (p == NULL)
        return -1;
    if (out != NULL && cap > 0) {
        n = fread(out, 1, cap - 1, p);
        out[n] = '\0';
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
            out[--n] = '\0';
    }
    {
        char sink[4096];
        while (fread(sink, 1, sizeof sink, p) > 0)
            ;
    }
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int it_kubectl(char *out, size_t cap, const char *fmt, ...)
{
    char args[8192], cmd[9000];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' --kubeconfig '%s' %s", it.kubectl, it.admin, args);
    return run(out, cap, cmd);
}

int it_sh(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[9000];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return run(out, cap, cmd);
}

ms_kube_client_t *it_client(const char *kubeconfig, const ms_kube_client_options_t *o)
{
    ms_kube_config_options_t co;
    ms_kube_config_t *cfg = NULL;
    ms_kube_client_t *c;
    char err[MS_ERRBUF_SIZE];

    memset(&co, 0, sizeof co);
    co.kubeconfig = kubeconfig;
    if (ms_kube_config_load(&co, &cfg, err, sizeof err) != MS_OK) {
        printf("FAIL - %s: load %s: %s\n", test_name, kubeconfig, err);
        exit(1);
    }
    c = ms_kube_client_new(cfg, o, err, sizeof err);
    ms_kube_config_free(cfg);
    if (c == NULL) {
        printf("FAIL - %s: client for %s: %s\n", test_name, kubeconfig, err);
        exit(1);
    }
    return c;
}

const char *it_whoami(ms_kube_client_t *c, char *buf, size_t cap)
{
    static const char body[] =
        "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
    ms_kube_error_t kerr;
    cJSON *out = NULL;

    if (ms_kube_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                        "application/json", body, sizeof body - 1, &out, &kerr) != MS_OK) {
        snprintf(buf, cap, "error: %s", kerr.message);
        return buf;
    }
    const cJSON *u = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(out, "status"), "userInfo"), "username");
    snprintf(buf, cap, "%s", cJSON_IsString(u) ? u->valuestring : "(no username)");
    cJSON_Delete(out);
    return buf;
}

double it_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void it_sleep(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

void it_namespace(const char *prefix, char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, cap, "%s-%ld%03ld", prefix, (long)(ts.tv_sec % 100000), ts.tv_nsec / 1000000);
    if (it_kubectl(NULL, 0, "create namespace %s", buf) != 0) {
        printf("FAIL - %s: cannot create namespace %s\n", test_name, buf);
        exit(1);
    }
}
