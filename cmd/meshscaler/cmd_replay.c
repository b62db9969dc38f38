/*
 * cmd_replay.c - `meshscaler replay`: what a MeshAutoscaler would have done
 * over a past range, from Prometheus (include/meshscaler/replay.h says how).
 *
 * Output (-o): table (one line per step, then a summary), json (decide's
 * line per step plus actualReplicas; the summary as the last line) or
 * scenario (a decide scenario of exactly the values the engine was given:
 * `meshscaler decide` on it reproduces the replay's decisions). --svg FILE
 * writes the chart. Progress goes to stderr, one line per chunk read.
 * The formats themselves are src/replay/output.c's; this file parses the
 * flags, reads the MeshAutoscaler and picks one.
 * Exit 0; 2 on usage or an invalid MeshAutoscaler; 1 when Prometheus or a
 * file cannot be read or written.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "meshscaler/buf.h"
#include "meshscaler/clock.h"
#include "meshscaler/duration.h"
#include "meshscaler/replay.h"
#include "meshscaler/spec_json.h"
#include "meshscaler/yaml.h"

#define REPLAY_MAX_INPUT (4u * 1024u * 1024u)
/* The chart is 860 px wide: more points than this only cost bytes. */
#define CHART_POINTS 2000

typedef enum { OUT_TABLE, OUT_JSON, OUT_SCENARIO } out_format_t;

static const char usage_text[] =
    "Usage: meshscaler replay -f MAS.yaml --prometheus-url URL --from T1 --to T2 [options]\n"
    "\n"
    "  -f, --filename FILE          the MeshAutoscaler (YAML or JSON)\n"
    "  --prometheus-url URL         the Prometheus that holds the history\n"
    "  --prometheus-bearer-token-file FILE\n"
    "  --from T, --to T             RFC 3339, unix seconds, \"now\" or \"now-2h\"\n"
    "  --step D                     between decisions (default: the spec's syncPeriodSeconds,\n"
    "                               else 15s)\n"
    "  -o, --output FORMAT          table | json | scenario (a decide scenario)\n"
    "  --svg FILE                   the chart: metrics vs target, replicas vs actual\n"
    "  -n, --namespace NS           when the file has none (default \"default\")\n"
    "  --replicas-query Q           PromQL for the replicas the target had (default:\n"
    "                               kube-state-metrics for Deployments and StatefulSets)\n"
    "  --start-replicas N           the first count when the replicas are not known\n"
    "  --pod-regex RE               {{podRegex}} (default: the target kind's pod names)\n"
    "  --workload-label L           as the controller's --workload-label\n"
    "  --chunk-steps N              steps per range query (default 1000; Prometheus\n"
    "                               answers at most 11000 points per series)\n"
    "  --max-memory MIB             the most one chunk's answers may take together\n"
    "                               (default 64); past it the replay stops and says so\n";

typedef struct {
    const char *file, *url, *token_file, *from, *to, *step, *svg, *ns, *replicas_query;
    const char *pod_regex, *workload_label;
    int32_t start_replicas;
    size_t chunk_steps;
    size_t max_bytes;
    out_format_t format;
} replay_args_t;

#define usage_error(...) ms_cmd_usage_error("replay", usage_text, __VA_ARGS__)

/* 0 parsed, 1 help printed, 2 usage error (printed). */
static int parse_args(int argc, char **argv, replay_args_t *a)
{
    static const struct {
        const char *flag, *alias;
        size_t offset;
    } strs[] = {
        {"--filename", "-f", offsetof(replay_args_t, file)},
        {"--prometheus-url", NULL, offsetof(replay_args_t, url)},
        {"--prometheus-bearer-token-file", NULL, offsetof(replay_args_t, token_file)},
        {"--from", NULL, offsetof(replay_args_t, from)},
        {"--to", NULL, offsetof(replay_args_t, to)},
        {"--step", NULL, offsetof(replay_args_t, step)},
        {"--svg", NULL, offsetof(replay_args_t, svg)},
        {"--namespace", "-n", offsetof(replay_args_t, ns)},
        {"--replicas-query", NULL, offsetof(replay_args_t, replicas_query)},
        {"--pod-regex", NULL, offsetof(replay_args_t, pod_regex)},
        {"--workload-label", NULL, offsetof(replay_args_t, workload_label)},
    };

    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool known = false;

        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (v == NULL)
            return usage_error("%s needs a value", f);
        for (size_t s = 0; s < sizeof strs / sizeof strs[0] && !known; s++)
            if (strcmp(f, strs[s].flag) == 0 || (strs[s].alias && strcmp(f, strs[s].alias) == 0)) {
                *(const char **)((char *)a + strs[s].offset) = v;
                known = true;
            }
        if (!known && (strcmp(f, "-o") == 0 || strcmp(f, "--output") == 0)) {
            if (strcmp(v, "table") == 0)
                a->format = OUT_TABLE;
            else if (strcmp(v, "json") == 0)
                a->format = OUT_JSON;
            else if (strcmp(v, "scenario") == 0)
                a->format = OUT_SCENARIO;
            else
                return usage_error("-o \"%s\": want table, json or scenario", v);
            known = true;
        } else if (!known && strcmp(f, "--chunk-steps") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > 11000)
                return usage_error("--chunk-steps \"%s\": want 1..11000", v);
            a->chunk_steps = (size_t)n;
            known = true;
        } else if (!known && strcmp(f, "--max-memory") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > 65536)
                return usage_error("--max-memory \"%s\": want MiB, 1..65536", v);
            a->max_bytes = (size_t)n * 1024u * 1024u;
            known = true;
        } else if (!known && strcmp(f, "--start-replicas") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > INT32_MAX)
                return usage_error("--start-replicas \"%s\": want a count of at least 1", v);
            a->start_replicas = (int32_t)n;
            known = true;
        }
        if (!known)
            return usage_error("unknown flag \"%s\"", f);
        i++;
    }
    if (a->file == NULL || a->url == NULL || a->from == NULL || a->to == NULL)
        return usage_error("-f, --prometheus-url, --from and --to are required");
    return 0;
}

/* RFC 3339, unix seconds, "now", or "now-DURATION". */
static bool parse_time(const char *s, double now, double *out)
{
    double d;
    char *end;

    if (strcmp(s, "now") == 0) {
        *out = now;
        return true;
    }
    if (strncmp(s, "now-", 4) == 0 && ms_duration_parse(s + 4, &d)) {
        *out = now - d;
        return true;
    }
    if (ms_time_parse_rfc3339(s, out))
        return true;
    errno = 0;
    d = strtod(s, &end);
    if (end != s && *end == '\0' && errno == 0 && isfinite(d) && d >= 0) {
        *out = d;
        return true;
    }
    return false;
}

/* The MeshAutoscaler of file: its spec (read as the controller reads it),
 * the spec's JSON (for a scenario) and its namespace. */
typedef struct {
    cJSON *docs;                                  /* owned: the file's documents */
    const cJSON *spec_json, *name_json, *ns_json; /* borrowed from docs */
    ms_spec_t spec;                               /* owned */
} mas_t;

static ms_err_t load_mas(const char *file, mas_t *m, char *errbuf, size_t errlen)
{
    ms_buf_t text;
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    char inner[MS_ERRBUF_SIZE];
    const cJSON *doc, *meta;
    ms_jpath_t p;
    ms_err_t err;

    ms_spec_init(&m->spec);
    if (in == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_IO, "cannot open %s: %s", file, strerror(errno));
    ms_buf_init(&text, REPLAY_MAX_INPUT);
    err = ms_buf_read_stream(&text, in);
    if (in != stdin)
        fclose(in);
    if (err != MS_OK) {
        ms_buf_cleanup(&text);
        return ms_errf(errbuf, errlen, err == MS_ERR_TOOLARGE ? MS_ERR_INVALID : err,
                       "cannot read %s: %s", file, ms_strerror(err));
    }
    err = ms_yaml_load_all(text.data ? text.data : "", text.len, &m->docs, inner, sizeof inner);
    ms_buf_cleanup(&text);
    if (err != MS_OK)
        return ms_errf(errbuf, errlen, err, "%s: %s", file, inner);
    doc = m->docs->child;
    meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    if (doc == NULL || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "kind")) ||
        strcmp(cJSON_GetObjectItemCaseSensitive(doc, "kind")->valuestring, "MeshAutoscaler") != 0)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: kind: want MeshAutoscaler", file);
    m->spec_json = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    m->name_json = cJSON_GetObjectItemCaseSensitive(meta, "name");
    m->ns_json = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
    ms_jpath_init(&p, "spec");
    err = ms_spec_from_json(m->spec_json, &p, false, &m->spec, inner, sizeof inner);
    if (err != MS_OK)
        return ms_errf(errbuf, errlen, err, "%s: %s", file, inner);
    return MS_OK;
}

/* ---- output ---- */

typedef struct {
    const replay_args_t *a;
    const mas_t *mas;
    ms_replay_point_t *points; /* every stride-th step, for the chart; owned */
    size_t npoints, cap, stride, seen;
    cJSON *ticks; /* the scenario's ticks; owned by the scenario */
} out_t;

static int on_tick(void *ctx, const ms_replay_tick_t *tk)
{
    out_t *out = ctx;
    const ms_spec_t *spec = &out->mas->spec;

    if (out->a->format == OUT_TABLE && out->seen == 0)
        ms_replay_table_header(stdout, spec);
    if (out->a->format == OUT_TABLE)
        ms_replay_table_row(stdout, spec, tk);
    else if (out->a->format == OUT_JSON)
        ms_replay_json_line(stdout, spec, tk);
    else
        cJSON_AddItemToArray(out->ticks, ms_replay_scenario_tick(spec, tk));
    if (out->seen++ % out->stride == 0 && out->npoints < out->cap)
        ms_replay_point(spec, tk, &out->points[out->npoints++]);
    return ferror(stdout) ? 1 : 0;
}

static void progress(void *ctx, double upto, double from, double to)
{
    char when[40];

    (void)ctx;
    ms_time_rfc3339(upto, false, when, sizeof when);
    fprintf(stderr, "replay: read up to %s (%.0f%%)\n", when,
            to > from ? 100 * (upto - from) / (to - from) : 100.0);
}

static ms_err_t write_svg(const replay_args_t *a, const mas_t *m, const out_t *out, char *errbuf,
                          size_t errlen)
{
    ms_buf_t svg;
    char title[512], from[40], to[40];
    FILE *f;
    ms_err_t err;

    ms_time_rfc3339(out->points[0].time, false, from, sizeof from);
    ms_time_rfc3339(out->points[out->npoints - 1].time, false, to, sizeof to);
    snprintf(title, sizeof title, "meshscaler replay: %s/%s, %s to %s",
             cJSON_IsString(m->ns_json) ? m->ns_json->valuestring
             : a->ns                    ? a->ns
                                        : "default",
             m->spec.target_name, from, to);
    ms_buf_init(&svg, 64u * 1024u * 1024u);
    err = ms_replay_svg(&m->spec, title, out->points, out->npoints, &svg);
    if (err == MS_OK) {
        f = fopen(a->svg, "wb");
        if (f == NULL || fwrite(svg.data, 1, svg.len, f) != svg.len || fclose(f) != 0)
            err =
                ms_errf(errbuf, errlen, MS_ERR_IO, "cannot write %s: %s", a->svg, strerror(errno));
    } else {
        ms_errf(errbuf, errlen, err, "the chart: %s", ms_strerror(err));
    }
    ms_buf_cleanup(&svg);
    return err;
}

static ms_err_t run(const replay_args_t *a, mas_t *m, char *errbuf, size_t errlen)
{
    ms_prom_options_t po = {
        .url = a->url, .bearer_token_file = a->token_file, .timeout_ms = 120000};
    ms_replay_options_t ro = {.spec = &m->spec,
                              .replicas_query = a->replicas_query,
                              .pod_regex = a->pod_regex,
                              .start_replicas = a->start_replicas,
                              .chunk_steps = a->chunk_steps,
                              .max_bytes = a->max_bytes,
                              .progress = progress};
    ms_prom_client_t *client = NULL;
    ms_replay_summary_t sum;
    cJSON *scenario = NULL;
    out_t out = {.a = a, .mas = m};
    double now = ms_clock_wall();
    ms_err_t err;

    ro.namespace_name = cJSON_IsString(m->ns_json) ? m->ns_json->valuestring
                        : a->ns                    ? a->ns
                                                   : "default";
    ro.presets.workload_label = a->workload_label;
    ro.step = m->spec.sync_period_seconds > 0 ? m->spec.sync_period_seconds : 15;
    if (!parse_time(a->from, now, &ro.from) || !parse_time(a->to, now, &ro.to))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "--from/--to: want RFC 3339, unix seconds, now or now-DURATION");
    if (a->step != NULL && !ms_duration_parse(a->step, &ro.step))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "--step \"%s\" is not a duration", a->step);
    if ((client = ms_prom_client_new(&po, errbuf, errlen)) == NULL)
        return MS_ERR_INVALID;
    out.stride = ro.step > 0 && ro.to > ro.from
                     ? (size_t)((ro.to - ro.from) / ro.step / CHART_POINTS) + 1
                     : 1;
    out.cap = CHART_POINTS + 1;
    out.points = calloc(out.cap, sizeof *out.points);
    if (a->format == OUT_SCENARIO) {
        scenario = cJSON_CreateObject();
        cJSON_AddItemToObject(scenario, "spec", cJSON_Duplicate(m->spec_json, true));
        out.ticks = cJSON_AddArrayToObject(scenario, "ticks");
    }
    err = out.points != NULL ? ms_replay_run(client, &ro, on_tick, &out, &sum, errbuf, errlen)
                             : MS_ERR_NOMEM;
    if (err == MS_OK && a->format == OUT_SCENARIO) {
        char *text = cJSON_Print(scenario);
        if (text != NULL)
            puts(text);
        free(text);
    }
    if (err == MS_OK && a->format == OUT_JSON) {
        cJSON *s = ms_replay_summary_json(&sum);
        char *text = cJSON_PrintUnformatted(s);
        if (text != NULL)
            puts(text);
        free(text);
        cJSON_Delete(s);
    }
    if (err == MS_OK)
        ms_replay_summary_print(a->format == OUT_TABLE ? stdout : stderr, &sum);
    if (err == MS_OK && a->svg != NULL && out.npoints > 0)
        err = write_svg(a, m, &out, errbuf, errlen);
    cJSON_Delete(scenario);
    free(out.points);
    ms_prom_client_free(client);
    return err;
}

int ms_cmd_replay(int argc, char **argv)
{
    replay_args_t a = {.format = OUT_TABLE};
    mas_t m = {0};
    char errbuf[MS_ERRBUF_SIZE] = "";
    int rc = parse_args(argc, argv, &a);
    ms_err_t err;

    if (rc != 0)
        return rc == 1 ? 0 : rc;
    err = load_mas(a.file, &m, errbuf, sizeof errbuf);
    if (err == MS_OK)
        err = run(&a, &m, errbuf, sizeof errbuf);
    if (err == MS_OK && fflush(stdout) != 0)
        err = ms_errf(errbuf, sizeof errbuf, MS_ERR_IO, "cannot write the output");
    rc = err == MS_OK ? 0 : err == MS_ERR_INVALID ? 2 : 1;
    if (err != MS_OK)
        fprintf(stderr, "meshscaler replay: %s\n", errbuf[0] ? errbuf : ms_strerror(err));
    ms_spec_cleanup(&m.spec);
    cJSON_Delete(m.docs);
    return rc;
}
