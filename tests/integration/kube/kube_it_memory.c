/*
 * kube_it_memory.c - figures for the informer at scale: 10,000 ConfigMaps
 * listed (pages of 500) and cached, the heap the cache holds (mallinfo2,
 * with and without metadata.managedFields, and in compact mode: minified
 * text), the time to sync, and the requests it took. Asserts only generous
 * bounds; prints the figures.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "meshscaler/informer.h"

#define N 10000
#define THREADS 8

static char ns[64], path[256];
static ms_kube_client_t *admin;

typedef struct {
    int from, to, failed;
} part_t;

static void *create_range(void *arg)
{
    part_t *p = arg;
    char body[512];
    ms_kube_error_t kerr;

    for (int i = p->from; i < p->to; i++) {
        snprintf(
            body, sizeof body,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"obj-%05d\","
            "\"labels\":{\"app.kubernetes.io/name\":\"load\",\"shard\":\"s%d\"}},"
            "\"data\":{\"target\":\"deployment/web-%d\",\"replicas\":\"%d\"}}",
            i, i % 16, i, i % 40);
        if (ms_kube_request(admin, "POST", path, "application/json", body, strlen(body), NULL,
                            &kerr) != MS_OK)
            p->failed++;
    }
    return NULL;
}

static size_t heap(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* The cache's heap per object; 0 when the informer did not sync. */
static double measure(bool keep_managed, bool compact)
{
    ms_kube_informer_options_t io;
    ms_kube_informer_t *inf;
    ms_kube_informer_stats_t st;
    ms_kube_stats_t before, after;
    size_t h0, h1;
    long r0, r1;
    double t0, took, per_object;
    bool synced;
    const char *mode = compact ? "compact" : keep_managed ? "with managedFields" : "default";

    malloc_trim(0);
    h0 = heap();
    r0 = rss_kb();
    ms_kube_client_stats(admin, &before);
    memset(&io, 0, sizeof io);
    io.path = path;
    io.keep_managed_fields = keep_managed;
    io.compact = compact;
    t0 = it_now();
    inf = ms_kube_informer_new(admin, &io);
    ms_kube_informer_start(inf);
    synced = ms_kube_informer_wait_synced(inf, 120);
    took = it_now() - t0;
    it_sleep(0.5);
    malloc_trim(0);
    h1 = heap();
    r1 = rss_kb();
    ms_kube_informer_stats(inf, &st);
    ms_kube_client_stats(admin, &after);
    it_check(synced && st.objects >= N,
             compact ? "10,000 objects cached (compact: minified text, managedFields dropped)"
             : keep_managed ? "10,000 objects cached (managedFields kept)"
                            : "10,000 objects cached (managedFields dropped, the default)",
             "%zu objects", st.objects);
    per_object = st.objects > 0 ? (double)(h1 - h0) / (double)st.objects : 0;
    it_note("%s: synced in %.2f s, %lu list pages, %lu requests; cache heap %.1f MB (%.0f "
            "bytes/object), RSS +%.1f MB",
            mode, took, st.list_pages, after.requests - before.requests, (double)(h1 - h0) / 1e6,
            per_object, (double)(r1 - r0) / 1024.0);
    if (!keep_managed && !compact)
        it_check(per_object < 8192, "cache memory per object under 8 KiB", NULL);
    ms_kube_informer_free(inf);
    return synced ? per_object : 0;
}

int main(void)
{
    ms_kube_client_options_t o;
    pthread_t th[THREADS];
    part_t parts[THREADS];
    int failed = 0;
    double t0;

    it_init("kube_it_memory");
    memset(&o, 0, sizeof o);
    o.qps = -1;
    admin = it_client(it.admin, &o);
    it_namespace("mem", ns, sizeof ns);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    t0 = it_now();
    for (int i = 0; i < THREADS; i++) {
        parts[i] = (part_t){i * (N / THREADS), (i + 1) * (N / THREADS), 0};
        pthread_create(&th[i], NULL, create_range, &parts[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        failed += parts[i].failed;
    }
    it_check(failed == 0, "10,000 ConfigMaps created", "%d failed", failed);
    it_note("created 10,000 ConfigMaps in %.1f s with %d threads", it_now() - t0, THREADS);
    {
        double tree = measure(false, false), compact;
        measure(true, false);
        compact = measure(false, true);
        /* A sanitizer's allocator reports no heap (mallinfo2 is all 0). */
        if (tree > 0)
            it_check(compact > 0 && compact < tree / 2,
                     "compact mode holds less than half the tree's heap per object",
                     "%.0f vs %.0f bytes/object", compact, tree);
        else
            it_note("no heap figures under this allocator (a sanitizer build?)");
    }
    it_kubectl(NULL, 0, "delete namespace %s --wait=false >/dev/null", ns);
    ms_kube_client_free(admin);
    return it_done();
}
