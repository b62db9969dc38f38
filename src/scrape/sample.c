/*
 * sample.c - which pods to read when an object has many.
 *
 * The sample size is Knative's (knative/serving, pkg/autoscaler/metrics:
 * populationMeanSampleSize), kept rather than replaced because it answers
 * the same question with the same kind of value: the mean per-pod
 * concurrency of a workload, estimated from a sample and scaled by the pod
 * count (the caller sums the sampled pods and multiplies by N / read).
 * Without a finite population it is X = z^2 * sigma^2 / MOE^2 = 1.96^2 *
 * 100 / 25 = 15.37 pods (95 % confidence that the mean is within 5 requests
 * for a per-pod variance of 100); the finite-population correction
 * N * X / (N + X - 1) reads every pod of a small workload (3 or fewer, and
 * nearly all up to ~10) and at most 16 of a large one, so a round's cost per
 * object is bounded whatever the replica count. A tighter margin would buy
 * little: the engine's tolerance (10 % by default) already absorbs a
 * sampling error of that size at the counts where sampling starts.
 *
 * The order is a Fisher-Yates shuffle driven by splitmix64 from the
 * caller's seed: deterministic for tests and replays, and a different seed
 * per round spreads the reads over all pods in time. A pod that fails is
 * replaced by the next one of the order, as Knative's scraper moves on to
 * the next pod.
 */
#include <math.h>

#include "meshscaler/scrape.h"

size_t ms_scrape_sample_size(size_t population)
{
    const double x = 1.96 * 1.96 * 100.0 / (5.0 * 5.0);
    double n;

    if (population <= 3)
        return population;
    n = ceil((double)population * x / ((double)population + x - 1.0));
    return n >= MS_SCRAPE_SAMPLE_MAX ? MS_SCRAPE_SAMPLE_MAX : (size_t)n;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A number in [0, bound) (Lemire's multiply-shift: the bias, at most
 * bound / 2^64, is nothing for pod counts). */
static size_t below(uint64_t *state, size_t bound)
{
    return (size_t)(((unsigned __int128)splitmix64(state) * bound) >> 64);
}

void ms_scrape_sample_order(size_t npods, uint64_t seed, size_t *order)
{
    uint64_t state = seed;

    for (size_t i = 0; i < npods; i++)
        order[i] = i;
    for (size_t i = npods; i > 1; i--) {
        size_t j = below(&state, i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}
