/*
 * bench/scrape_fetch.c - direct reads (scrape_fetch.h) of N real HAProxy
 * exporters on this host: wall time, CPU, bytes and peak RSS per read.
 *
 *   bench_scrape_fetch [--pods N] [--reads R] [--procs P] [--path PATH] [--sample]
 *
 * Starts P HAProxy processes (default min(N, 16)) whose exporters listen on
 * N loopback addresses (127.0.2.1 ...), round-robin over the processes, so
 * every pod is its own endpoint and connection. Then R reads (default 20)
 * of all N pods (--sample: Knative's sample of them instead) with one
 * fetcher, a second apart in the rates' clock, and prints per read: wall
 * time (median and worst), this process's CPU (user + system, from
 * getrusage: the fetcher and parser, not HAProxy), answer bytes,
 * connections opened after the first read (keep-alive), and the process's
 * peak RSS before the fetcher and after the reads. --path overrides the
 * preset's /metrics (e.g. '/metrics?scope=server&scope=backend', the
 * exporter's own filter). Figures only, nothing asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "meshscaler/clock.h"
#include "meshscaler/http.h"
#include "meshscaler/scrape_fetch.h"
#include "../tests/tools/sidecars.h"

typedef struct {
    size_t pods, reads, procs, sample;
    const char *path;
} args_t;

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long peak_rss_kib(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool parse_args(int argc, char **argv, args_t *a)
{
    *a = (args_t){.pods = 16, .reads = 20};
    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "--pods") == 0 && more)
            a->pods = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reads") == 0 && more)
            a->reads = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--procs") == 0 && more)
            a->procs = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--path") == 0 && more)
            a->path = argv[++i];
        else if (strcmp(argv[i], "--sample") == 0)
            a->sample = 1;
        else
            return false;
    }
    if (a->procs == 0)
        a->procs = a->pods < 16 ? a->pods : 16;
    return a->pods > 0 && a->pods <= 250 && a->reads > 0 && a->procs <= a->pods;
}

/* P HAProxies over N addresses; the exporter port of pod i in ports[i]. */
static bool start_all(const args_t *a, const char *dir, sc_haproxy_t *hap, char (*ips)[16],
                      unsigned *ports)
{
    const char **addrs = calloc(a->pods, sizeof *addrs);
    unsigned backend = sc_refused_port(); /* no traffic: the backend is never reached */
    bool ok = true;

    for (size_t i = 0; i < a->pods; i++)
        snprintf(ips[i], 16, "127.0.2.%u", (unsigned)(i + 1) % 256u);
    for (size_t p = 0; p < a->procs && ok; p++) {
        size_t n = 0;
        char name[16];
        for (size_t i = p; i < a->pods; i += a->procs)
            addrs[n++] = ips[i];
        snprintf(name, sizeof name, "pod%u", (unsigned)p % 1000u);
        ok = sc_haproxy_start(&hap[p], dir, name, addrs, n, backend, 100);
        for (size_t i = p; ok && i < a->pods; i += a->procs)
            ports[i] = hap[p].exporter_port;
    }
    free(addrs);
    return ok;
}

/* R reads; prints the figures. */
static void run_reads(const args_t *a, char (*ips)[16], const unsigned *ports, long rss_before)
{
    ms_scrape_fetch_options_t o = {.sample = a->sample ? 0 : a->pods};
    ms_scrape_fetch_pod_t *pods = calloc(a->pods, sizeof *pods);
    ms_scrape_fetch_result_t *res = calloc(a->pods, sizeof *res);
    double *wall = calloc(a->reads, sizeof *wall), cpu = 0;
    char(*uids)[16] = calloc(a->pods, sizeof *uids), err[MS_ERRBUF_SIZE];
    size_t bytes = 0, ok = 0;
    long later_connections = 0;
    ms_scrape_fetch_summary_t sum;
    ms_scrape_rates_t rates;
    ms_scrape_fetcher_t *f = ms_scrape_fetcher_new(&o, err, sizeof err);

    for (size_t i = 0; i < a->pods; i++) {
        snprintf(uids[i], 16, "uid-%u", (unsigned)i % 100000u);
        pods[i] = (ms_scrape_fetch_pod_t){
            .uid = uids[i], .ip = ips[i], .port = ports[i], .path = a->path};
    }
    ms_scrape_rates_init(&rates);
    for (size_t r = 0; f != NULL && r < a->reads; r++) {
        double c0 = cpu_seconds();
        if (ms_scrape_fetch_read(f, ms_scrape_preset(MS_SCRAPE_PROXY_HAPROXY), pods, a->pods, r,
                                 100.0 + (double)r, 0, &rates, res, &sum, err, sizeof err) != MS_OK)
            fprintf(stderr, "read %zu: %s\n", r, err);
        cpu += cpu_seconds() - c0;
        wall[r] = sum.seconds;
        bytes += sum.bytes;
        ok += sum.ok;
        if (r > 0)
            later_connections += sum.new_connections;
    }
    qsort(wall, a->reads, sizeof *wall, cmp_double);
    printf("pods %zu  haproxy processes %zu  sample %zu  reads %zu  path %s\n", a->pods, a->procs,
           sum.sample, a->reads, a->path ? a->path : "/metrics (preset)");
    printf("per read: wall median %.2f ms, worst %.2f ms; CPU %.2f ms; bytes %zu; pods read %.1f\n",
           wall[a->reads / 2] * 1e3, wall[a->reads - 1] * 1e3, cpu / (double)a->reads * 1e3,
           bytes / a->reads, (double)ok / (double)a->reads);
    printf("connections opened after the first read: %ld\n", later_connections);
    printf("peak RSS: %ld KiB before the fetcher, %ld KiB after the reads\n", rss_before,
           peak_rss_kib());
    ms_scrape_rates_cleanup(&rates);
    ms_scrape_fetcher_free(f);
    free(pods);
    free(res);
    free(wall);
    free(uids);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/ms-bench-scrape-XXXXXX", cmd[64];
    sc_haproxy_t *hap;
    char(*ips)[16];
    unsigned *ports;
    args_t a;
    int rc = 0;

    if (!parse_args(argc, argv, &a)) {
        fprintf(stderr, "usage: bench_scrape_fetch [--pods N<=250] [--reads R] [--procs P<=N] "
                        "[--path PATH] [--sample]\n");
        return 2;
    }
    if (mkdtemp(dir) == NULL || ms_http_global_init() != MS_OK)
        return 1;
    hap = calloc(a.procs, sizeof *hap);
    ips = calloc(a.pods, sizeof *ips);
    ports = calloc(a.pods, sizeof *ports);
    if (start_all(&a, dir, hap, ips, ports))
        run_reads(&a, ips, ports, peak_rss_kib());
    else {
        fprintf(stderr, "haproxy did not start (logs in %s)\n", dir);
        rc = 1;
    }
    for (size_t p = 0; p < a.procs; p++)
        sc_haproxy_stop(&hap[p]);
    free(hap);
    free(ips);
    free(ports);
    ms_http_global_cleanup();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    return rc;
}
