/*
 * cmd_convert.c - `meshscaler convert`: HorizontalPodAutoscalers to
 * MeshAutoscalers (what becomes what: include/meshscaler/convert.h).
 *
 * Input: files (-f, repeatable; "-" or none is stdin) holding any number of
 * YAML or JSON documents, each an HPA or a List of them; or one live HPA
 * (`-n NS NAME`, through the kubeconfig), whose target's pod template then
 * tells the proxy (--proxy auto). Output: the MeshAutoscalers on stdout,
 * "---" between them. Metrics not converted and warnings: stderr, one line
 * each. Exit 0; 2 on invalid input or usage (stderr: the path and the fault,
 * stdout empty); 1 when the API server or a file cannot be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/buf.h"
#include "meshscaler/convert.h"
#include "meshscaler/kube.h"
#include "meshscaler/kubeconfig.h"

#define CONVERT_MAX_INPUT (16u * 1024u * 1024u)
#define CONVERT_MAX_FILES 64
#define CONVERT_MAX_CONTAINERS 64

static const char usage_text[] =
    "Usage: meshscaler convert [-f FILE]... [options]      HPAs from files or stdin\n"
    "       meshscaler convert [options] [-n NAMESPACE] NAME  a live HPA\n"
    "\n"
    "  -f, --filename FILE       YAML or JSON: HPAs (autoscaling/v1, v2beta1, v2beta2, v2)\n"
    "                            or Lists of them; repeatable; \"-\" is stdin\n"
    "  --proxy P                 auto|envoy|haproxy|linkerd (auto: from the live target's\n"
    "                            pod template; files need a proxy named)\n"
    "  --sidecar-container NAME  the proxy's container (default: istio-proxy, haproxy,\n"
    "                            linkerd-proxy, or the one auto found)\n"
    "  --concurrency-limit N     sidecarConcurrency.limit (Linkerd exports none)\n"
    "  --keep-app-cpu            keep the application's CPU as a Prometheus metric\n"
    "  --metric-map FILE         Pods/Object/External metric name -> PromQL template\n"
    "  --live                    dryRun: false (default: true, shadow mode)\n"
    "  --kubeconfig PATH, --context NAME, -n, --namespace NS   for a live HPA\n";

typedef struct {
    const char *files[CONVERT_MAX_FILES];
    size_t nfiles;
    const char *map_file, *kubeconfig, *context, *ns, *name;
    ms_convert_options_t opts;
} convert_args_t;

#define usage_error(...) ms_cmd_usage_error("convert", usage_text, __VA_ARGS__)

static int parse_proxy(const char *s, ms_convert_proxy_t *out)
{
    static const char *const names[] = {"auto", "envoy", "haproxy", "linkerd"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (ms_convert_proxy_t)i;
            return 0;
        }
    return -1;
}

/* 0 parsed, 1 help printed, 2 usage error (printed). */
static int parse_args(int argc, char **argv, convert_args_t *a)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;

        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (strcmp(f, "--keep-app-cpu") == 0) {
            a->opts.keep_app_cpu = true, takes = false;
        } else if (strcmp(f, "--live") == 0) {
            a->opts.live = true, takes = false;
        } else if (f[0] != '-') {
            if (a->name != NULL)
                return usage_error("one live HPA at a time (\"%s\" is a second name)", f);
            a->name = f, takes = false;
        } else if (v == NULL) {
            return usage_error("%s needs a value", f);
        }
        if (!takes)
            continue;
        i++;
        if (strcmp(f, "-f") == 0 || strcmp(f, "--filename") == 0) {
            if (a->nfiles == CONVERT_MAX_FILES)
                return usage_error("at most %d files", CONVERT_MAX_FILES);
            a->files[a->nfiles++] = v;
        } else if (strcmp(f, "--proxy") == 0) {
            if (parse_proxy(v, &a->opts.proxy) != 0)
                return usage_error("--proxy \"%s\": want auto, envoy, haproxy or linkerd", v);
        } else if (strcmp(f, "--sidecar-container") == 0) {
            if (!ms_convert_is_dns_label(v))
                return usage_error("--sidecar-container \"%s\": not a container name", v);
            a->opts.sidecar_container = v;
        } else if (strcmp(f, "--concurrency-limit") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > 1000000)
                return usage_error("--concurrency-limit \"%s\": want 1..1000000", v);
            a->opts.concurrency_limit = (int32_t)n;
        } else if (strcmp(f, "--metric-map") == 0) {
            a->map_file = v;
        } else if (strcmp(f, "--kubeconfig") == 0) {
            a->kubeconfig = v;
        } else if (strcmp(f, "--context") == 0) {
            a->context = v;
        } else if (strcmp(f, "-n") == 0 || strcmp(f, "--namespace") == 0) {
            a->ns = v;
        } else {
            return usage_error("unknown flag \"%s\"", f);
        }
    }
    if (a->name != NULL && a->nfiles > 0)
        return usage_error("either files or a live HPA, not both (%s)", a->name);
    return 0;
}

static ms_err_t read_file(const char *path, ms_buf_t *into, char *errbuf, size_t errlen)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *in = is_stdin ? stdin : fopen(path, "rb");
    ms_err_t err;

    if (in == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    err = ms_buf_read_stream(into, in);
    if (!is_stdin)
        fclose(in);
    if (err == MS_ERR_TOOLARGE)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: larger than %u bytes", path,
                       CONVERT_MAX_INPUT);
    if (err != MS_OK)
        return ms_errf(errbuf, errlen, err, "cannot read %s: %s", path, ms_strerror(err));
    return MS_OK;
}

typedef struct {
    ms_buf_t out, report;
} results_t;

/* The live HPA (as autoscaling/v2) and the container names of its target's
 * pod template, for --proxy auto. */
static ms_err_t fetch_live(const convert_args_t *a, cJSON **hpa, cJSON **target, char *errbuf,
                           size_t errlen)
{
    ms_kube_config_options_t ko = {.kubeconfig = a->kubeconfig, .context = a->context};
    ms_kube_config_t *cfg = NULL;
    ms_kube_client_t *c = NULL;
    ms_kube_error_t kerr = {0};
    ms_kube_resource_t res;
    const cJSON *ref, *av, *kind, *name;
    char path[1024];
    const char *ns;
    ms_err_t err = ms_kube_config_load(&ko, &cfg, errbuf, errlen);

    if (err != MS_OK)
        return err;
    if ((c = ms_kube_client_new(cfg, NULL, errbuf, errlen)) == NULL) {
        err = MS_ERR_INVALID;
        goto out;
    }
    ns = a->ns != NULL ? a->ns : ms_kube_client_namespace(c);
    err = ms_kube_path(path, sizeof path, "autoscaling/v2", ns, "horizontalpodautoscalers", a->name,
                       NULL);
    if (err == MS_OK)
        err = ms_kube_get(c, path, hpa, &kerr);
    if (err != MS_OK) {
        ms_errf(errbuf, errlen, err, "%s", kerr.message[0] ? kerr.message : ms_strerror(err));
        goto out;
    }
    /* The target is read only to find the proxy: its absence is no error. */
    ref = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*hpa, "spec"),
                                           "scaleTargetRef");
    av = cJSON_GetObjectItemCaseSensitive(ref, "apiVersion");
    kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
    name = cJSON_GetObjectItemCaseSensitive(ref, "name");
    if (cJSON_IsString(av) && cJSON_IsString(kind) && cJSON_IsString(name) &&
        ms_kube_discover(c, av->valuestring, kind->valuestring, &res, &kerr) == MS_OK &&
        ms_kube_path(path, sizeof path, res.api_version, res.namespaced ? ns : NULL, res.resource,
                     name->valuestring, NULL) == MS_OK &&
        ms_kube_get(c, path, target, &kerr) != MS_OK)
        fprintf(stderr, "meshscaler convert: warning: cannot read the target: %s\n", kerr.message);
out:
    ms_kube_client_free(c);
    ms_kube_config_free(cfg);
    return err;
}

/* The container names of target.spec.template.spec.containers (borrowed). */
static size_t template_containers(const cJSON *target, const char **names, size_t cap)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(target, "spec");
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
    const cJSON *pod = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pod, "containers");
    size_t n = 0;

    for (const cJSON *c = cJSON_IsArray(list) ? list->child : NULL; c && n < cap; c = c->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (cJSON_IsString(name))
            names[n++] = name->valuestring;
    }
    return n;
}

static ms_err_t load_map(const char *file, cJSON **tree, ms_convert_options_t *o, char *errbuf,
                         size_t errlen)
{
    ms_buf_t text;
    ms_convert_mapping_t *map = NULL;
    char inner[MS_ERRBUF_SIZE];
    ms_err_t err;

    ms_buf_init(&text, CONVERT_MAX_INPUT);
    err = read_file(file, &text, errbuf, errlen);
    if (err == MS_OK) {
        err = ms_convert_map_parse(text.data ? text.data : "", text.len, tree, &map, &o->nmap,
                                   inner, sizeof inner);
        if (err != MS_OK)
            ms_errf(errbuf, errlen, err, "--metric-map %s: %s", file, inner);
    }
    o->map = map;
    ms_buf_cleanup(&text);
    return err;
}

static ms_err_t run(convert_args_t *a, results_t *r, cJSON **held, char *errbuf, size_t errlen)
{
    const char *containers[CONVERT_MAX_CONTAINERS];
    ms_err_t err = MS_OK;

    if (a->map_file != NULL &&
        (err = load_map(a->map_file, &held[0], &a->opts, errbuf, errlen)) != MS_OK)
        return err;
    if (a->name != NULL) {
        ms_jpath_t p;

        err = fetch_live(a, &held[1], &held[2], errbuf, errlen);
        if (err != MS_OK)
            return err;
        a->opts.containers = containers;
        a->opts.ncontainers = template_containers(held[2], containers, CONVERT_MAX_CONTAINERS);
        ms_jpath_init(&p, "");
        return ms_convert_hpa(held[1], &p, &a->opts, &r->out, &r->report, errbuf, errlen);
    }
    if (a->nfiles == 0)
        a->files[a->nfiles++] = "-";
    for (size_t i = 0; i < a->nfiles && err == MS_OK; i++) {
        const char *name = strcmp(a->files[i], "-") == 0 ? "stdin" : a->files[i];
        ms_buf_t text;

        ms_buf_init(&text, CONVERT_MAX_INPUT);
        err = read_file(a->files[i], &text, errbuf, errlen);
        /* Files after the first are separate documents of the same stream. */
        if (err == MS_OK && i > 0 && r->out.len > 0)
            err = ms_buf_append(&r->out, "---\n", 4);
        if (err == MS_OK)
            err = ms_convert_text(name, text.data ? text.data : "", text.len, &a->opts, &r->out,
                                  &r->report, errbuf, errlen);
        ms_buf_cleanup(&text);
    }
    return err;
}

int ms_cmd_convert(int argc, char **argv)
{
    convert_args_t a = {.opts = {.proxy = MS_CONVERT_PROXY_AUTO}};
    results_t r;
    cJSON *held[3] = {NULL, NULL, NULL}; /* the map's tree, the live HPA, its target */
    char errbuf[MS_ERRBUF_SIZE] = "";
    int rc = parse_args(argc, argv, &a);
    ms_err_t err;

    if (rc != 0)
        return rc == 1 ? 0 : rc;
    ms_buf_init(&r.out, 4 * CONVERT_MAX_INPUT);
    ms_buf_init(&r.report, CONVERT_MAX_INPUT);
    err = run(&a, &r, held, errbuf, sizeof errbuf);
    if (r.report.len > 0)
        fwrite(r.report.data, 1, r.report.len, stderr);
    if (err == MS_OK && r.out.len > 0 &&
        (fwrite(r.out.data, 1, r.out.len, stdout) != r.out.len || fflush(stdout) != 0))
        err = ms_errf(errbuf, sizeof errbuf, MS_ERR_IO, "cannot write the output");
    rc = 0;
    if (err == MS_ERR_INVALID) {
        fprintf(stderr, "%s\n", errbuf);
        rc = 2;
    } else if (err != MS_OK) {
        fprintf(stderr, "meshscaler convert: %s\n", errbuf[0] ? errbuf : ms_strerror(err));
        rc = 1;
    }
    free((void *)a.opts.map);
    for (size_t i = 0; i < 3; i++)
        cJSON_Delete(held[i]);
    ms_buf_cleanup(&r.out);
    ms_buf_cleanup(&r.report);
    return rc;
}
