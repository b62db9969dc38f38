/*
 * cmd_replay.c - `meshscaler replay`: what a MeshAutoscaler would have done
 * over a past range, from Prometheus (include/meshscaler/replay.h says how).
 *
 * Output (-o): table (one line per step, then a summary), json (decide's
 * line per step plus actualReplicas; the summary as the last line) or
 * scenario (a decide scenario of exactly the values the engine was given:
 * `meshscaler decide` on it reproduces the replay's decisions). --svg FILE
 * writes the chart. Progress goes to stderr, one line per chunk read.
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
#include "meshscaler/decision_json.h"
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
    cJSON *docs; /* owned: the file's documents */
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

static void print_header(const ms_spec_t *spec)
{
    printf("%-20s %6s %8s %7s", "TIME", "ACTUAL", "REPLICAS", "DESIRED");
    for (size_t i = 0; i < spec->nmetrics; i++)
        printf("  %-18.18s", spec->metrics[i].name);
    printf("  REASON\n");
}

static void print_row(const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    const ms_decision_t *d = tk->decision;
    char when[40], actual[16];

    ms_time_rfc3339(tk->time, false, when, sizeof when);
    snprintf(actual, sizeof actual, "%d", (int)tk->actual);
    printf("%-20s %6s %8d %7d", when, tk->actual >= 0 ? actual : "-", (int)d->current_replicas,
           (int)d->desired_replicas);
    for (size_t i = 0; i < spec->nmetrics; i++) {
        char cell[32];
        if (tk->obs->metrics[i].present)
            snprintf(cell, sizeof cell, "%.4g/%.4g", tk->obs->metrics[i].value,
                     spec->metrics[i].target);
        else
            snprintf(cell, sizeof cell, "%s", ms_prom_reason_name(tk->why->metrics[i].reason));
        printf("  %-18.18s", cell);
    }
    printf("  %s\n", ms_reason_name(d->reason));
}

static void print_json(const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    cJSON *line = ms_decision_to_json(spec, tk->memory, tk->time, tk->decision);
    char *text;

    if (line == NULL)
        return;
    if (tk->actual >= 0)
        cJSON_AddNumberToObject(line, "actualReplicas", tk->actual);
    else
        cJSON_AddNullToObject(line, "actualReplicas");
    text = cJSON_PrintUnformatted(line);
    if (text != NULL)
        puts(text);
    free(text);
    cJSON_Delete(line);
}

static cJSON *sample(ms_sample_t s)
{
    return s.present ? cJSON_CreateNumber(s.value) : cJSON_CreateNull();
}

/* A decide tick of exactly what the engine was given. */
static cJSON *scenario_tick(const ms_spec_t *spec, const ms_replay_tick_t *tk)
{
    const ms_observation_t *o = tk->obs;
    cJSON *t = cJSON_CreateObject(), *metrics = cJSON_AddObjectToObject(t, "metrics");
    cJSON *signals = cJSON_AddObjectToObject(t, "signals");

    cJSON_AddNumberToObject(t, "time", tk->time);
    cJSON_AddNumberToObject(t, "currentReplicas", o->current_replicas);
    for (size_t i = 0; i < spec->nmetrics; i++) {
        cJSON *v = sample(o->metrics[i]);
        if (o->metrics[i].present && o->metric_pods[i].known) {
            cJSON *partial = cJSON_CreateObject();
            cJSON_AddItemToObject(partial, "value", v);
            cJSON_AddNumberToObject(partial, "pods", o->metric_pods[i].count);
            v = partial;
        }
        cJSON_AddItemToObject(metrics, spec->metrics[i].name, v);
    }
    if (spec->ndownstreams > 0) {
        cJSON *ds = cJSON_AddObjectToObject(signals, "downstream");
        for (size_t i = 0; i < spec->ndownstreams; i++) {
            cJSON *one = cJSON_AddObjectToObject(ds, spec->downstreams[i].name);
            cJSON_AddItemToObject(one, "usage", sample(o->downstreams[i].usage));
            cJSON_AddItemToObject(one, "limit", sample(o->downstreams[i].limit));
        }
    }
    if (spec->retry_storm.enabled)
        cJSON_AddItemToObject(signals, "retryShare", sample(o->retry_share));
    for (size_t i = 0; i < spec->nmetrics; i++) {
        cJSON *sat, *one;
        if (!spec->saturation[i].enabled)
            continue;
        sat = cJSON_GetObjectItemCaseSensitive(signals, "saturation");
        if (sat == NULL)
            sat = cJSON_AddObjectToObject(signals, "saturation");
        one = cJSON_AddObjectToObject(sat, spec->metrics[i].name);
        cJSON_AddItemToObject(one, "admitted", sample(o->saturation[i].admitted));
        cJSON_AddItemToObject(one, "rejected", sample(o->saturation[i].rejected));
    }
    return t;
}

static int on_tick(void *ctx, const ms_replay_tick_t *tk)
{
    out_t *out = ctx;
    const ms_spec_t *spec = &out->mas->spec;

    if (out->a->format == OUT_TABLE && out->seen == 0)
        print_header(spec);
    if (out->a->format == OUT_TABLE)
        print_row(spec, tk);
    else if (out->a->format == OUT_JSON)
        print_json(spec, tk);
    else
        cJSON_AddItemToArray(out->ticks, scenario_tick(spec, tk));
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

static void print_summary(FILE *to, const ms_replay_summary_t *s)
{
    char first[40] = "never", actual_first[40] = "never";

    if (!isnan(s->first_scale_up))
        ms_time_rfc3339(s->first_scale_up, false, first, sizeof first);
    if (!isnan(s->first_actual_scale_up))
        ms_time_rfc3339(s->first_actual_scale_up, false, actual_first, sizeof actual_first);
    fprintf(to, "\n%zu steps of %.0f s\n", s->steps, s->step);
    fprintf(to, "replica-seconds: meshscaler %.0f", s->replica_seconds);
    if (s->known_steps > 0)
        fprintf(to, "; over the %zu steps the target's count is known: meshscaler %.0f, "
                    "actual %.0f (%+.1f%%)",
                s->known_steps, s->meshscaler_same_span, s->actual_replica_seconds,
                s->actual_replica_seconds > 0
                    ? 100 * (s->meshscaler_same_span - s->actual_replica_seconds) /
                          s->actual_replica_seconds
                    : 0.0);
    fprintf(to, "\ntime above target: meshscaler %.0f s, actual %.0f s\n",
            s->above_target_seconds, s->actual_above_target_seconds);
    fprintf(to, "scale events: meshscaler %u, actual %u\n", s->scale_events, s->actual_changes);
    fprintf(to, "first scale-up: meshscaler %s, actual %s\n", first, actual_first);
    if (s->blind_steps > 0)
        fprintf(to, "steps with every metric missing: %zu\n", s->blind_steps);
}

static cJSON *summary_json(const ms_replay_summary_t *s)
{
    cJSON *o = cJSON_CreateObject(), *sum = cJSON_AddObjectToObject(o, "summary");

    cJSON_AddNumberToObject(sum, "steps", (double)s->steps);
    cJSON_AddNumberToObject(sum, "stepSeconds", s->step);
    cJSON_AddNumberToObject(sum, "replicaSeconds", s->replica_seconds);
    cJSON_AddNumberToObject(sum, "knownSteps", (double)s->known_steps);
    cJSON_AddNumberToObject(sum, "actualReplicaSeconds", s->actual_replica_seconds);
    cJSON_AddNumberToObject(sum, "replicaSecondsWhenKnown", s->meshscaler_same_span);
    cJSON_AddNumberToObject(sum, "aboveTargetSeconds", s->above_target_seconds);
    cJSON_AddNumberToObject(sum, "actualAboveTargetSeconds", s->actual_above_target_seconds);
    cJSON_AddNumberToObject(sum, "scaleEvents", s->scale_events);
    cJSON_AddNumberToObject(sum, "actualChanges", s->actual_changes);
    if (isnan(s->first_scale_up))
        cJSON_AddNullToObject(sum, "firstScaleUp");
    else
        cJSON_AddNumberToObject(sum, "firstScaleUp", s->first_scale_up);
    if (isnan(s->first_actual_scale_up))
        cJSON_AddNullToObject(sum, "firstActualScaleUp");
    else
        cJSON_AddNumberToObject(sum, "firstActualScaleUp", s->first_actual_scale_up);
    cJSON_AddNumberToObject(sum, "blindSteps", (double)s->blind_steps);
    return o;
}

static ms_err_t write_svg(const replay_args_t *a, const mas_t *m, const out_t *out,
                          char *errbuf, size_t errlen)
{
    ms_buf_t svg;
    char title[512], from[40], to[40];
    FILE *f;
    ms_err_t err;

    ms_time_rfc3339(out->points[0].time, false, from, sizeof from);
    ms_time_rfc3339(out->points[out->npoints - 1].time, false, to, sizeof to);
    snprintf(title, sizeof title, "meshscaler replay: %s/%s, %s to %s",
             cJSON_IsString(m->ns_json) ? m->ns_json->valuestring : a->ns ? a->ns : "default",
             m->spec.target_name, from, to);
    ms_buf_init(&svg, 64u * 1024u * 1024u);
    err = ms_replay_svg(&m->spec, title, out->points, out->npoints, &svg);
    if (err == MS_OK) {
        f = fopen(a->svg, "wb");
        if (f == NULL || fwrite(svg.data, 1, svg.len, f) != svg.len || fclose(f) != 0)
            err = ms_errf(errbuf, errlen, MS_ERR_IO, "cannot write %s: %s", a->svg,
                          strerror(errno));
    } else {
        ms_errf(errbuf, errlen, err, "the chart: %s", ms_strerror(err));
    }
    ms_buf_cleanup(&svg);
    return err;
}

static ms_err_t run(const replay_args_t *a, mas_t *m, char *errbuf, size_t errlen)
{
    ms_prom_options_t po = {.url = a->url, .bearer_token_file = a->token_file,
                            .timeout_ms = 120000};
    ms_replay_options_t ro = {.spec = &m->spec, .replicas_query = a->replicas_query,
                              .pod_regex = a->pod_regex, .start_replicas = a->start_replicas,
                              .chunk_steps = a->chunk_steps, .max_bytes = a->max_bytes,
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
        cJSON *s = summary_json(&sum);
        char *text = cJSON_PrintUnformatted(s);
        if (text != NULL)
            puts(text);
        free(text);
        cJSON_Delete(s);
    }
    if (err == MS_OK)
        print_summary(a->format == OUT_TABLE ? stdout : stderr, &sum);
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
