/*
 * rates.c - counter rates from two reads of the same pod.
 *
 * Prometheus' rate() over two samples: the increase is the difference,
 * except that a value below the previous one means the counter restarted
 * (the proxy restarted, its container was replaced under the same pod UID),
 * and then the new value itself is the increase since the restart. The
 * first read of a pod has nothing to compare with: not observed, which the
 * engine treats as missing (docs/decision-rules.md), never as 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/scrape.h"
#include "meshscaler/xalloc.h"

typedef struct {
    double at; /* monotonic seconds of the read */
    size_t n;
    double values[MS_SCRAPE_MAX_FAMILIES];
    bool has[MS_SCRAPE_MAX_FAMILIES];
} entry_t;

void ms_scrape_rates_init(ms_scrape_rates_t *r)
{
    ms_strmap_init(&r->pods);
}

void ms_scrape_rates_cleanup(ms_scrape_rates_t *r)
{
    size_t pos = 0;
    const char *key;
    void *val;

    while (ms_strmap_next(&r->pods, &pos, &key, &val))
        free(val);
    ms_strmap_cleanup(&r->pods);
}

size_t ms_scrape_rates_size(const ms_scrape_rates_t *r)
{
    return ms_strmap_size(&r->pods);
}

/* A counter value a rate may use: a finite number, not negative. */
static bool usable(double v)
{
    return isfinite(v) && v >= 0;
}

void ms_scrape_rates_update(ms_scrape_rates_t *r, const char *uid, double now, const double *values,
                            const bool *has, size_t n, ms_scrape_rate_t *out)
{
    entry_t *e = ms_strmap_get(&r->pods, uid);
    bool first;

    if (n > MS_SCRAPE_MAX_FAMILIES)
        n = MS_SCRAPE_MAX_FAMILIES;
    first = e == NULL || e->n != n; /* another preset: start again */
    for (size_t i = 0; i < n; i++)
        out[i] = (ms_scrape_rate_t){.observed = false, .rate = 0};
    if (!first && !(now > e->at))
        return; /* no time passed (or the clock was misused): keep the older read */
    if (!first) {
        double dt = now - e->at;
        for (size_t i = 0; i < n; i++) {
            double d;
            if (!has[i] || !e->has[i] || !usable(values[i]) || !usable(e->values[i]))
                continue;
            d = values[i] - e->values[i];
            if (d < 0)
                d = values[i]; /* a reset: the new value is the increase */
            out[i] = (ms_scrape_rate_t){.observed = true, .rate = d / dt};
        }
    }
    if (e == NULL) {
        e = ms_xcalloc(1, sizeof *e);
        ms_strmap_put(&r->pods, uid, e);
    }
    e->at = now;
    e->n = n;
    for (size_t i = 0; i < n; i++) {
        e->values[i] = values[i];
        e->has[i] = has[i];
    }
}

size_t ms_scrape_rates_expire(ms_scrape_rates_t *r, double older_than)
{
    char **gone = NULL;
    size_t ngone = 0, cap = 0, pos = 0;
    const char *key;
    void *val;

    /* The map must not change while it is walked: collect, then delete. */
    while (ms_strmap_next(&r->pods, &pos, &key, &val))
        if (((entry_t *)val)->at < older_than) {
            gone = ms_xgrow(gone, &cap, ngone + 1, sizeof *gone);
            gone[ngone++] = ms_xstrdup(key);
        }
    for (size_t i = 0; i < ngone; i++) {
        free(ms_strmap_del(&r->pods, gone[i]));
        free(gone[i]);
    }
    free(gone);
    return ngone;
}
