/*
 * bench/engine.c - decisions per second and engine memory per object.
 *
 * 100,000 objects, each with a full 5-minute history at a 15-second tick
 * (21 ticks of warm-up, so every scale-down window is full), then timed
 * rounds of one decision per object on one thread. Closed loop: each
 * object's next current count is its last desired count, as in a cluster.
 *
 *   bench_engine [objects] [rounds]
 *
 * Prints figures; asserts nothing (speed targets are read, not tested).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshscaler/engine.h"

#define TEMPLATES 8

typedef struct {
    ms_engine_memory_t mem;
    int32_t current;
    uint32_t seed;
    uint8_t spec; /* which template */
} object_t;

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Templates like real objects: a sidecar metric with saturation, a CPU
 * metric, sometimes a downstream guardrail and a retry-storm guard. */
static void make_spec(ms_spec_t *s, int variant)
{
    ms_spec_init(s);
    s->min_replicas = 2;
    s->max_replicas = 200;
    s->nmetrics = 2;
    snprintf(s->metrics[0].name, sizeof s->metrics[0].name, "sidecar");
    s->metrics[0].target_type = MS_TARGET_UTILIZATION;
    s->metrics[0].target = 70;
    snprintf(s->metrics[1].name, sizeof s->metrics[1].name, "proxy-cpu");
    s->metrics[1].target_type = MS_TARGET_UTILIZATION;
    s->metrics[1].target = 75;
    s->saturation[0].enabled = true;
    if (variant % 2) {
        s->ndownstreams = 1;
        snprintf(s->downstreams[0].name, sizeof s->downstreams[0].name, "edge");
        s->downstreams[0].per_replica = 40;
        s->downstreams[0].max_utilization = 0.7;
    }
    s->retry_storm.enabled = variant % 3 == 0;
    s->retry_storm.threshold = 0.3;
}

static void observe(object_t *o, double now, ms_observation_t *obs)
{
    double load = 40 + next(&o->seed) % 60; /* percent of the sidecar limit */

    ms_observation_init(obs);
    obs->now = now;
    obs->current_replicas = o->current;
    obs->ready_replicas = o->current;
    obs->metrics[0] = (ms_sample_t){true, load};
    obs->metrics[1] = (ms_sample_t){true, load * 0.8};
    obs->saturation[0].admitted = (ms_sample_t){true, 1000};
    obs->saturation[0].rejected = (ms_sample_t){true, (double)(next(&o->seed) % 100)};
    obs->downstreams[0].usage = (ms_sample_t){true, 10000};
    obs->downstreams[0].limit = (ms_sample_t){true, 20000};
    obs->retry_share = (ms_sample_t){true, 0.1};
}

int main(int argc, char **argv)
{
    size_t nobj = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 20;
    ms_spec_t *specs = calloc(TEMPLATES, sizeof *specs);
    object_t *objs = calloc(nobj, sizeof *objs);
    ms_observation_t obs;
    ms_decision_t d;
    double now = 0, t0, elapsed;
    size_t decisions = 0, recs = 0, events = 0;
    uint64_t checksum = 0;

    if (specs == NULL || objs == NULL || nobj == 0 || rounds < 1) {
        fprintf(stderr, "usage: bench_engine [objects>0] [rounds>0]\n");
        return 2;
    }
    for (int i = 0; i < TEMPLATES; i++)
        make_spec(&specs[i], i);
    for (size_t i = 0; i < nobj; i++) {
        ms_engine_memory_init(&objs[i].mem);
        objs[i].current = 10;
        objs[i].seed = (uint32_t)i * 2654435761u;
        objs[i].spec = (uint8_t)(i % TEMPLATES);
    }

    /* Warm-up: 21 ticks, t = 0 .. 300 s, fills each 5-minute window. */
    for (int tick = 0; tick <= 20; tick++, now += 15)
        for (size_t i = 0; i < nobj; i++) {
            observe(&objs[i], now, &obs);
            ms_engine_decide(&specs[objs[i].spec], &objs[i].mem, &obs, &d);
            objs[i].current = d.desired_replicas;
        }
    for (size_t i = 0; i < nobj; i++) {
        recs += objs[i].mem.nrecs;
        events += objs[i].mem.nevents;
    }

    /* Timed: the observation is built outside the clock would be fairer to
     * the engine; we keep it inside, so the figure includes that work. */
    t0 = seconds();
    for (int r = 0; r < rounds; r++, now += 15)
        for (size_t i = 0; i < nobj; i++) {
            observe(&objs[i], now, &obs);
            ms_engine_decide(&specs[objs[i].spec], &objs[i].mem, &obs, &d);
            objs[i].current = d.desired_replicas;
            checksum += (uint64_t)d.desired_replicas;
            decisions++;
        }
    elapsed = seconds() - t0;

    printf("bench/engine: %zu objects, 5-minute history at 15 s ticks, %d timed rounds\n", nobj,
           rounds);
    printf("  decisions:                 %zu in %.3f s\n", decisions, elapsed);
    printf("  decisions per second:      %.0f (one core)\n", (double)decisions / elapsed);
    printf("  ns per decision:           %.1f\n", elapsed * 1e9 / (double)decisions);
    printf("  engine memory per object:  %zu bytes (fixed; %.1f recommendations and %.1f scale "
           "events held on average)\n",
           sizeof(ms_engine_memory_t), (double)recs / (double)nobj, (double)events / (double)nobj);
    printf("  engine memory, all objects: %.1f MiB\n",
           (double)(sizeof(ms_engine_memory_t) * nobj) / (1024.0 * 1024.0));
    printf("  (spec per object, held by the controller, not the engine: %zu bytes)\n",
           sizeof(ms_spec_t));
    printf("  checksum %llu\n", (unsigned long long)checksum);
    for (int i = 0; i < TEMPLATES; i++)
        ms_spec_cleanup(&specs[i]);
    free(specs);
    free(objs);
    return 0;
}
