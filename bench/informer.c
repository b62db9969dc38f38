/*
 * bench/informer.c - the informer cache's memory per object and its read
 * cost, in both cache modes (cJSON trees, and compact: minified text
 * parsed again per read).
 *
 * N MeshAutoscaler-shaped objects of about 2.3 KB of JSON each (metadata
 * with labels and an annotation, a spec with one metric, a status with its
 * decision, one current metric and 5 conditions) are served by fakekube
 * (tests/tools/fakekube.h, an in-process list/watch server) and listed by
 * an informer in pages of 500. The figures: heap held by the cache per
 * object (mallinfo2 in-use bytes, malloc'd plus mmap'd, after minus before
 * the informer; the fixed cost of an informer and its watch is included,
 * a few bytes per object at N = 10,000), the time to sync, and the time per
 * object of get (copy, delete), visit (read spec.minReplicas) and a foreach
 * pass.
 *
 *   bench_informer [N (10000)] [ROUNDS (3)]
 *
 * Prints figures; asserts nothing.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tests/tools/fakekube.h"
#include "meshscaler/informer.h"
#include "meshscaler/log.h"

#define PATH "/apis/autoscaling.meshscaler.io/v1alpha1/namespaces/bench/meshautoscalers"

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Object i: what the controller's MeshAutoscaler informer caches of a
 * MeshAutoscaler with a status (metadata.managedFields dropped). */
static cJSON *object(int i)
{
    static const char *const cond[5][3] = {
        {"Ready", "Reconciled",
         "The autoscaler reconciles its target normally and writes its status."},
        {"AbleToScale", "SucceededGetScale",
         "The scale subresource of the target was read and can be updated."},
        {"ScalingActive", "ValidMetricValue",
         "The replica count was computed from the sidecar concurrency metric."},
        {"ScalingLimited", "DesiredWithinRange",
         "The desired count is within the minimum and maximum replica counts."},
        {"MetricsAvailable", "AllSeriesPresent",
         "Every series of every metric was present in the last Prometheus answer."},
    };
    char text[4096], conds[2048];
    size_t used = 0;
    cJSON *o;

    for (int c = 0; c < 5; c++) {
        int w =
            snprintf(conds + used, sizeof conds - used,
                     "%s{\"type\":\"%s\",\"status\":\"%s\",\"reason\":\"%s\",\"message\":\"%s\","
                     "\"lastTransitionTime\":\"2025-06-0%dT10:%02d:00Z\",\"observedGeneration\":3}",
                     c ? "," : "", cond[c][0], c == 3 ? "False" : "True", cond[c][1], cond[c][2],
                     c + 1, i % 60);
        if (w < 0 || (size_t)w >= sizeof conds - used)
            abort();
        used += (size_t)w;
    }
    snprintf(
        text, sizeof text,
        "{\"apiVersion\":\"autoscaling.meshscaler.io/v1alpha1\",\"kind\":\"MeshAutoscaler\","
        "\"metadata\":{\"name\":\"web-%05d\",\"namespace\":\"bench\","
        "\"uid\":\"6f1c2d3e-4b5a-4c6d-8e7f-%012d\",\"generation\":3,"
        "\"creationTimestamp\":\"2025-06-01T09:00:00Z\","
        "\"labels\":{\"app.kubernetes.io/name\":\"web-%05d\",\"app.kubernetes.io/"
        "part-of\":\"shop\","
        "\"team\":\"payments\"},\"annotations\":{\"meshscaler.io/owner\":\"platform-team\"}},"
        "\"spec\":{\"scaleTargetRef\":{\"apiVersion\":\"apps/"
        "v1\",\"kind\":\"Deployment\",\"name\":\"web-%05d\"},"
        "\"minReplicas\":2,\"maxReplicas\":40,\"metrics\":[{\"name\":\"sidecar\",\"type\":"
        "\"SidecarConcurrency\","
        "\"sidecarConcurrency\":{\"proxy\":\"envoy\",\"limit\":100},"
        "\"target\":{\"type\":\"Utilization\",\"averageUtilization\":70}}],"
        "\"behavior\":{\"scaleDown\":{\"stabilizationWindowSeconds\":300,"
        "\"policies\":[{\"type\":\"Percent\",\"value\":10,\"periodSeconds\":60}]}}},"
        "\"status\":{\"observedGeneration\":3,\"currentReplicas\":%d,\"desiredReplicas\":%d,"
        "\"lastScaleTime\":\"2025-06-01T10:%02d:15Z\","
        "\"currentMetrics\":[{\"name\":\"sidecar\",\"value\":\"%d\",\"target\":\"70\",\"replicas\":"
        "%d}],"
        "\"lastDecision\":{\"time\":\"2025-06-01T10:%02d:45Z\",\"desired\":%d,\"reason\":"
        "\"WithinTolerance\","
        "\"message\":\"Sidecar concurrency is within the tolerance of its target; no change.\"},"
        "\"conditions\":[%s]}}",
        i, i, i, i, 2 + i % 30, 2 + i % 30, i % 60, 40 + i % 40, 2 + i % 30, i % 60, 2 + i % 30,
        conds);
    if ((o = cJSON_Parse(text)) == NULL)
        abort();
    return o;
}

typedef struct {
    long sum;
    size_t n;
} reads_t;

static void read_min(void *ctx, const cJSON *obj)
{
    reads_t *r = ctx;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                                      "minReplicas");
    r->sum += cJSON_IsNumber(m) ? m->valueint : 0;
    r->n++;
}

static void read_each(void *ctx, const char *key, const cJSON *obj)
{
    (void)key;
    read_min(ctx, obj);
}

static void measure(ms_kube_client_t *client, int n, int rounds, bool compact)
{
    ms_kube_informer_options_t o;
    ms_kube_informer_t *inf;
    size_t h0, h1;
    double t0, sync_s, get_s = 0, visit_s = 0, each_s = 0;
    reads_t r = {0, 0};
    char key[64];

    memset(&o, 0, sizeof o);
    o.path = PATH;
    o.compact = compact;
    malloc_trim(0);
    h0 = heap();
    t0 = seconds();
    inf = ms_kube_informer_new(client, &o);
    if (inf == NULL || ms_kube_informer_start(inf) != MS_OK ||
        !ms_kube_informer_wait_synced(inf, 300)) {
        fprintf(stderr, "bench_informer: the informer did not sync\n");
        exit(1);
    }
    sync_s = seconds() - t0;
    usleep(200 * 1000); /* the list's buffers are freed, the watch is open */
    malloc_trim(0);
    h1 = heap();
    for (int round = 0; round < rounds; round++) {
        t0 = seconds();
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof key, "bench/web-%05d", i);
            cJSON *obj = ms_kube_informer_get(inf, key);
            read_min(&r, obj);
            cJSON_Delete(obj);
        }
        get_s += seconds() - t0;
        t0 = seconds();
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof key, "bench/web-%05d", i);
            ms_kube_informer_visit(inf, key, read_min, &r);
        }
        visit_s += seconds() - t0;
        t0 = seconds();
        ms_kube_informer_foreach(inf, read_each, &r);
        each_s += seconds() - t0;
    }
    if (r.n != (size_t)n * 3 * (size_t)rounds || r.sum != 2L * (long)r.n)
        fprintf(stderr, "bench_informer: reads found %zu objects, expected %zu\n", r.n,
                (size_t)n * 3 * (size_t)rounds);
    printf("%-8s cache %7.1f MB for %d objects = %6.0f bytes/object; synced in %.2f s; "
           "per object: get %5.2f us, visit %5.2f us, foreach %5.2f us\n",
           compact ? "compact" : "tree", (double)(h1 - h0) / 1e6, n, (double)(h1 - h0) / n, sync_s,
           get_s / rounds / n * 1e6, visit_s / rounds / n * 1e6, each_s / rounds / n * 1e6);
    ms_kube_informer_free(inf);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 10000;
    int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3;
    fakekube_t *fk;
    ms_kube_client_t *client;
    size_t text = 0;

    if (n <= 0 || n > 99999 || rounds <= 0) {
        fprintf(stderr, "usage: bench_informer [N (1..99999)] [ROUNDS]\n");
        return 2;
    }
    ms_log_setup(MS_LOG_WARN, MS_LOG_TEXT, stderr);
    if ((fk = fakekube_start()) == NULL || (client = fakekube_client(fk)) == NULL) {
        fprintf(stderr, "bench_informer: cannot start fakekube\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        cJSON *o = object(i);
        char *t;
        fakekube_put(fk, o);
        t = cJSON_PrintUnformatted(o);
        text += strlen(t);
        free(t);
        cJSON_Delete(o);
    }
    fakekube_compact(fk); /* drop the fake's event log before measuring */
    printf("%d MeshAutoscaler-shaped objects, %.0f bytes of minified JSON each on average\n", n,
           (double)text / n);
    measure(client, n, rounds, false);
    measure(client, n, rounds, true);
    ms_kube_client_free(client);
    fakekube_stop(fk);
    return 0;
}
