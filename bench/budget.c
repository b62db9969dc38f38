/*
 * bench/budget.c - the cost of §2b (ms_engine_share_budgets) for one round
 * as large as a controller serves: N objects in N/10 namespaces, all in one
 * budget, each asking 4 replicas of 10 flows, the room holding half of the
 * asks (so the hand-out runs for every replica it grants).
 *
 *   bench_budget [objects...]      (default 100 1000 10000)
 *
 * Prints figures; asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshscaler/engine.h"

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void one_round(size_t n)
{
    ms_spec_t spec;
    ms_decision_t *d = calloc(n, sizeof *d);
    ms_round_member_t *m = calloc(n, sizeof *m);
    char(*keys)[48] = calloc(n, sizeof *keys);
    double start, elapsed;
    long granted = 0;

    if (d == NULL || m == NULL || keys == NULL)
        abort();
    memset(d, 0, n * sizeof *d); /* touch every page before the clock starts */
    ms_spec_init(&spec);
    spec.ndownstreams = 1;
    snprintf(spec.downstreams[0].name, sizeof spec.downstreams[0].name, "edge");
    snprintf(spec.downstreams[0].budget, sizeof spec.downstreams[0].budget, "edge");
    spec.downstreams[0].per_replica = 10;
    spec.downstreams[0].max_utilization = 0.7;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "ns%zu/obj%zu", i % (n / 10 + 1), i);
        d[i].current_replicas = 2;
        d[i].desired_replicas = 6;
        d[i].ndownstreams = 1;
        d[i].downstreams[0].observed = true;
        d[i].downstreams[0].room = 20.0 * (double)n; /* half of 4 x 10 per object */
        m[i] = (ms_round_member_t){keys[i], &spec, &d[i]};
    }
    start = seconds();
    if (ms_engine_share_budgets(m, n) != MS_OK)
        abort();
    elapsed = seconds() - start;
    for (size_t i = 0; i < n; i++)
        granted += d[i].desired_replicas - d[i].current_replicas;
    printf("  %6zu objects, %5zu namespaces: %8.3f ms, %ld replicas granted of %zu asked\n", n,
           n / 10 + 1, elapsed * 1e3, granted, 4 * n);
    ms_spec_cleanup(&spec);
    free(d);
    free(m);
    free(keys);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {100, 1000, 10000};

    printf("bench/budget: one round of ms_engine_share_budgets, one budget shared by all\n");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            long n = strtol(argv[i], NULL, 10);
            if (n <= 0) {
                fprintf(stderr, "usage: bench_budget [objects>0]...\n");
                return 2;
            }
            one_round((size_t)n);
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        one_round(sizes[i]);
    return 0;
}
