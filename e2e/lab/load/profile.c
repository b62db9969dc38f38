/*
 * profile.c - the rate a run asks for at each moment, and the arrival times
 * that follow from it. Open loop: arrivals depend on the profile and the
 * seed only, never on how earlier requests fared.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* Rates and times past these are typing mistakes, not lab runs. */
#define MAX_RATE 1e6
#define MAX_SECONDS 86400.0

void ms_load_rng_seed(ms_load_rng_t *rng, uint64_t seed)
{
    rng->state = seed;
}

double ms_load_rng_uniform(ms_load_rng_t *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53; /* 53 bits: every value is exact */
}

bool ms__load_numbers(const char *text, double *values, size_t max, size_t *n)
{
    const char *p = text;

    *n = 0;
    for (;;) {
        char *end;
        double v;

        if (*n == max)
            return false;
        errno = 0;
        v = strtod(p, &end);
        if (end == p || errno != 0 || !isfinite(v) || (*end != ':' && *end != '\0'))
            return false;
        values[(*n)++] = v;
        if (*end == '\0')
            return true;
        p = end + 1;
    }
}

static bool in_range(double v, double lo, double hi)
{
    return v >= lo && v <= hi;
}

/* The numbers after "name:" for a profile of that name, count checked. */
static bool profile_fields(const char *text, const char *name, double *v, size_t min, size_t max,
                           size_t *n)
{
    size_t len = strlen(name);

    if (strncmp(text, name, len) != 0 || text[len] != ':')
        return false;
    return ms__load_numbers(text + len + 1, v, max, n) && *n >= min;
}

bool ms_load_profile_parse(const char *text, ms_load_profile_t *out, char *errbuf, size_t errlen)
{
    double v[5] = {0};
    size_t n = 0;

    memset(out, 0, sizeof *out);
    if (profile_fields(text, "steady", v, 1, 1, &n)) {
        out->kind = MS_LOAD_PROFILE_STEADY;
    } else if (profile_fields(text, "step", v, 3, 3, &n)) {
        out->kind = MS_LOAD_PROFILE_STEP;
        out->high = v[1];
        out->at_s = v[2];
    } else if (profile_fields(text, "peak", v, 4, 5, &n)) {
        out->kind = MS_LOAD_PROFILE_PEAK;
        out->high = v[1];
        out->ramp_s = v[2];
        out->hold_s = v[3];
        out->at_s = n == 5 ? v[4] : 0;
    } else {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "--profile \"%s\": want steady:RATE, step:R1:R2:AT_SECONDS or "
                "peak:BASE:PEAK:RAMP_S:HOLD_S[:START_S]",
                text);
        return false;
    }
    out->base = v[0];
    if (!in_range(out->base, 0, MAX_RATE) || !in_range(out->high, 0, MAX_RATE) ||
        !in_range(out->at_s, 0, MAX_SECONDS) || !in_range(out->ramp_s, 0, MAX_SECONDS) ||
        !in_range(out->hold_s, 0, MAX_SECONDS)) {
        ms_errf(errbuf, errlen, MS_ERR_RANGE,
                "--profile \"%s\": rates are 0..1000000 per second, times 0..86400 s", text);
        return false;
    }
    return true;
}

/* The peak profile: base, a linear ramp up, the hold, a linear ramp down. */
static double peak_rate(const ms_load_profile_t *p, double t)
{
    double up = p->at_s, top = up + p->ramp_s, down = top + p->hold_s, back = down + p->ramp_s;

    if (t < up || t >= back)
        return p->base;
    if (t < top)
        return p->base + (p->high - p->base) * (t - up) / p->ramp_s;
    if (t < down)
        return p->high;
    return p->high - (p->high - p->base) * (t - down) / p->ramp_s;
}

double ms_load_profile_rate(const ms_load_profile_t *p, double t)
{
    switch (p->kind) {
    case MS_LOAD_PROFILE_STEP:
        return t < p->at_s ? p->base : p->high;
    case MS_LOAD_PROFILE_PEAK:
        return peak_rate(p, t);
    case MS_LOAD_PROFILE_STEADY:
    default:
        return p->base;
    }
}

double ms_load_profile_max(const ms_load_profile_t *p)
{
    if (p->kind == MS_LOAD_PROFILE_STEADY)
        return p->base;
    return p->base > p->high ? p->base : p->high;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The rate is linear between the profile's corners, so the midpoint rule on
 * each piece is exact (a step's jump sits on a corner). */
double ms_load_profile_expected(const ms_load_profile_t *p, double duration)
{
    double corner[6] = {0,
                        duration,
                        p->at_s,
                        p->at_s + p->ramp_s,
                        p->at_s + p->ramp_s + p->hold_s,
                        p->at_s + 2 * p->ramp_s + p->hold_s};
    double sum = 0;

    qsort(corner, 6, sizeof corner[0], compare_doubles);
    for (size_t i = 0; i + 1 < 6; i++) {
        double a = corner[i], b = corner[i + 1] < duration ? corner[i + 1] : duration;
        if (b > a)
            sum += ms_load_profile_rate(p, (a + b) / 2) * (b - a);
    }
    return sum;
}

/* Lewis and Shedler's thinning: candidates from a Poisson process at the
 * profile's highest rate, each kept with probability rate(t) / highest. The
 * result is a Poisson process whose rate follows the profile exactly. */
static double next_poisson(const ms_load_profile_t *p, double t, double end, ms_load_rng_t *rng)
{
    double top = ms_load_profile_max(p);

    if (!(top > 0))
        return end;
    while (t < end) {
        t += -log(1 - ms_load_rng_uniform(rng)) / top;
        if (ms_load_rng_uniform(rng) * top < ms_load_profile_rate(p, t))
            return t;
    }
    return t;
}

/* While the rate is 0 there is no gap to take: look again a millisecond on. */
static double next_uniform(const ms_load_profile_t *p, double t, double end)
{
    while (t < end) {
        double rate = ms_load_profile_rate(p, t);
        if (rate > 0)
            return t + 1 / rate;
        t += 0.001;
    }
    return t;
}

double ms_load_next_arrival(const ms_load_profile_t *p, ms_load_arrivals_t mode, double t,
                            double end, ms_load_rng_t *rng)
{
    if (mode == MS_LOAD_ARRIVALS_UNIFORM)
        return next_uniform(p, t, end);
    return next_poisson(p, t, end, rng);
}
