/*
 * metrics.c - the registry behind /metrics.
 *
 * Each family keeps its series in an array (rendered in that order) plus
 * an index (strmap.h) from the joined label values to the series, so
 * updating one of 10,000 per-object gauges costs a hash, not a scan.
 * Allocation failure aborts (xalloc.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/metrics.h"
#include "meshscaler/strmap.h"
#include "meshscaler/xalloc.h"

typedef struct {
    char *key;                           /* label values joined by '\x1f'; owned */
    char *values[MS_METRICS_MAX_LABELS]; /* each value, in key's allocation */
    double value;                        /* counter/gauge value, histogram sum */
    uint64_t count;                      /* histogram count */
    uint64_t *buckets;                   /* histogram per-bucket counts */
} series_t;

typedef struct {
    ms_metric_kind_t kind;
    const char *name;
    const char *help;
    const char *labels[MS_METRICS_MAX_LABELS];
    size_t nlabels;
    double *bounds;
    size_t nbounds;
    series_t *series;
    size_t nseries, cap;
    ms_strmap_t index; /* key -> series index + 1; keys in the series */
} family_t;

struct ms_metrics {
    pthread_mutex_t lock;
    family_t **families; /* each allocated once: its index points at it */
    size_t nfamilies;
};

ms_metrics_t *ms_metrics_new(void)
{
    ms_metrics_t *m = ms_xcalloc(1, sizeof *m);

    pthread_mutex_init(&m->lock, NULL);
    return m;
}

static void series_free(series_t *s)
{
    free(s->key);
    free(s->buckets);
    memset(s, 0, sizeof *s);
}

void ms_metrics_free(ms_metrics_t *m)
{
    if (m == NULL)
        return;
    for (size_t f = 0; f < m->nfamilies; f++) {
        family_t *fam = m->families[f];
        for (size_t i = 0; i < fam->nseries; i++)
            series_free(&fam->series[i]);
        free(fam->series);
        ms_strmap_cleanup(&fam->index);
        free(fam->bounds);
        free(fam);
    }
    free(m->families);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The index's values are series indexes + 1 (never NULL). */
static void *index_of(size_t i)
{
    return (void *)(uintptr_t)(i + 1);
}

static const char *series_key(const void *val, const void *fam)
{
    return ((const family_t *)fam)->series[(uintptr_t)val - 1].key;
}

int ms_metrics_family(ms_metrics_t *m, ms_metric_kind_t kind, const char *name, const char *help,
                      const char *const *labels, size_t nlabels, const double *buckets,
                      size_t nbuckets)
{
    family_t *fam;
    int id;

    if (nlabels > MS_METRICS_MAX_LABELS)
        return -1;
    pthread_mutex_lock(&m->lock);
    m->families = ms_xrealloc(m->families, (m->nfamilies + 1) * sizeof *m->families);
    fam = m->families[m->nfamilies] = ms_xcalloc(1, sizeof *fam);
    ms_strmap_init_intrusive(&fam->index, series_key, fam);
    fam->kind = kind;
    fam->name = name;
    fam->help = help;
    fam->nlabels = nlabels;
    for (size_t i = 0; i < nlabels; i++)
        fam->labels[i] = labels[i];
    if (kind == MS_METRIC_HISTOGRAM && nbuckets > 0) {
        fam->bounds = ms_xmalloc(nbuckets * sizeof *fam->bounds);
        memcpy(fam->bounds, buckets, nbuckets * sizeof *fam->bounds);
        fam->nbounds = nbuckets;
    }
    id = (int)m->nfamilies++;
    pthread_mutex_unlock(&m->lock);
    return id;
}

/* The label values joined by '\x1f': into buf when they fit (every update
 * of an existing series), else a new allocation the caller frees. */
static char *join(const char *const *values, size_t n, char *buf, size_t cap)
{
    size_t len = 1;
    char *key, *p;

    for (size_t i = 0; i < n; i++)
        len += strlen(values[i] ? values[i] : "") + 1;
    key = len <= cap ? buf : ms_xmalloc(len);
    p = key;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(values[i] ? values[i] : "");
        memcpy(p, values[i] ? values[i] : "", l);
        p += l;
        *p++ = '\x1f';
    }
    *p = '\0';
    return key;
}

/* A series' one allocation: the joined key, then each value NUL-terminated
 * (values[i] point there). One block instead of one per value: at 10,000
 * objects with about 15 series each, that is 12 MB less heap. */
static char *key_block(const char *key, char **values, size_t n)
{
    size_t len = strlen(key) + 1;
    char *block = ms_xmalloc(2 * len), *p;

    memcpy(block, key, len);
    p = block + len;
    memcpy(p, key, len);
    for (size_t i = 0; i < n; i++) {
        values[i] = p;
        p = strchr(p, '\x1f');
        *p++ = '\0';
    }
    return block;
}

/* The series for these values, created when create is set; NULL otherwise. */
static series_t *lookup(family_t *fam, const char *const *values, bool create)
{
    char buf[512];
    char *key = join(values, fam->nlabels, buf, sizeof buf);
    void *at = ms_strmap_get(&fam->index, key);
    series_t *s = NULL;

    if (at != NULL) {
        s = &fam->series[(uintptr_t)at - 1];
    } else if (create) {
        fam->series = ms_xgrow(fam->series, &fam->cap, fam->nseries + 1, sizeof *fam->series);
        s = &fam->series[fam->nseries];
        memset(s, 0, sizeof *s);
        s->key = key_block(key, s->values, fam->nlabels);
        if (fam->kind == MS_METRIC_HISTOGRAM)
            s->buckets = ms_xcalloc(fam->nbounds + 1, sizeof *s->buckets);
        ms_strmap_put(&fam->index, s->key, index_of(fam->nseries++));
    }
    if (key != buf)
        free(key);
    return s;
}

static family_t *family(ms_metrics_t *m, int id)
{
    return id >= 0 && (size_t)id < m->nfamilies ? m->families[id] : NULL;
}

void ms_metrics_add(ms_metrics_t *m, int id, const char *const *values, double delta)
{
    family_t *fam;
    series_t *s;

    pthread_mutex_lock(&m->lock);
    if ((fam = family(m, id)) != NULL && (s = lookup(fam, values, true)) != NULL)
        s->value += delta;
    pthread_mutex_unlock(&m->lock);
}

void ms_metrics_set(ms_metrics_t *m, int id, const char *const *values, double value)
{
    family_t *fam;
    series_t *s;

    pthread_mutex_lock(&m->lock);
    if ((fam = family(m, id)) != NULL && (s = lookup(fam, values, true)) != NULL)
        s->value = value;
    pthread_mutex_unlock(&m->lock);
}

void ms_metrics_observe(ms_metrics_t *m, int id, const char *const *values, double value)
{
    family_t *fam;
    series_t *s;

    pthread_mutex_lock(&m->lock);
    if ((fam = family(m, id)) != NULL && fam->kind == MS_METRIC_HISTOGRAM &&
        (s = lookup(fam, values, true)) != NULL) {
        size_t b = 0;
        while (b < fam->nbounds && value > fam->bounds[b])
            b++;
        s->buckets[b]++; /* per-bucket counts; cumulated when rendered */
        s->count++;
        s->value += value;
    }
    pthread_mutex_unlock(&m->lock);
}

void ms_metrics_remove_matching(ms_metrics_t *m, int id, const char *const *values, size_t n)
{
    family_t *fam;
    size_t kept = 0;

    pthread_mutex_lock(&m->lock);
    if ((fam = family(m, id)) == NULL || n > fam->nlabels)
        goto out;
    for (size_t i = 0; i < fam->nseries; i++) {
        series_t *s = &fam->series[i];
        size_t l = 0;
        while (l < n && strcmp(s->values[l], values[l] ? values[l] : "") == 0)
            l++;
        if (l == n) {
            ms_strmap_del(&fam->index, s->key);
            series_free(s);
            continue;
        }
        if (kept != i) {
            fam->series[kept] = *s;
            ms_strmap_put(&fam->index, s->key, index_of(kept));
        }
        kept++;
    }
    fam->nseries = kept;
out:
    pthread_mutex_unlock(&m->lock);
}

void ms_metrics_remove(ms_metrics_t *m, int id, const char *const *values)
{
    family_t *fam;
    series_t *s;

    pthread_mutex_lock(&m->lock);
    if ((fam = family(m, id)) != NULL && (s = lookup(fam, values, false)) != NULL) {
        size_t i = (size_t)(s - fam->series), last = fam->nseries - 1;
        /* O(1): a reason or condition series is replaced on every change of
         * an object's state, at 10,000 objects a rebuild each time would not
         * be. The last series moves into the hole; its index follows it. */
        ms_strmap_del(&fam->index, s->key);
        series_free(s);
        if (i != last) {
            fam->series[i] = fam->series[last];
            ms_strmap_put(&fam->index, fam->series[i].key, index_of(i));
        }
        fam->nseries--;
    }
    pthread_mutex_unlock(&m->lock);
}

/* Label values escaped as the exposition format wants: \\, \" and \n. */
/* A label value, escaped as the text format wants (\\, \", \n), in spans. */
static ms_err_t put_escaped(ms_buf_t *out, const char *v)
{
    ms_err_t err = MS_OK;

    while (*v && err == MS_OK) {
        size_t n = strcspn(v, "\\\"\n");
        err = ms_buf_append(out, v, n);
        v += n;
        if (*v && err == MS_OK) {
            err = ms_buf_append(out, *v == '\n' ? "\\n" : *v == '"' ? "\\\"" : "\\\\", 2);
            v++;
        }
    }
    return err;
}

static ms_err_t put_str(ms_buf_t *out, const char *s)
{
    return ms_buf_append(out, s, strlen(s));
}

static ms_err_t put_labels(ms_buf_t *out, const family_t *fam, const series_t *s, const char *le)
{
    ms_err_t err = MS_OK;
    bool any = fam->nlabels > 0 || le != NULL;

    if (!any)
        return MS_OK;
    err = ms_buf_append(out, "{", 1);
    for (size_t i = 0; i < fam->nlabels && err == MS_OK; i++) {
        if (i > 0)
            err = ms_buf_append(out, ",", 1);
        if (err == MS_OK)
            err = put_str(out, fam->labels[i]);
        if (err == MS_OK)
            err = ms_buf_append(out, "=\"", 2);
        if (err == MS_OK)
            err = put_escaped(out, s->values[i]);
        if (err == MS_OK)
            err = ms_buf_append(out, "\"", 1);
    }
    if (le != NULL && err == MS_OK) {
        err = put_str(out, fam->nlabels ? ",le=\"" : "le=\"");
        if (err == MS_OK)
            err = put_str(out, le);
        if (err == MS_OK)
            err = ms_buf_append(out, "\"", 1);
    }
    if (err == MS_OK)
        err = ms_buf_append(out, "}", 1);
    return err;
}

static const char *format_value(double v, char *buf, size_t len)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    /* Most values are counts: whole numbers print as such, without printf. */
    if (v == floor(v) && fabs(v) < 9007199254740992.0 && len >= 24) {
        long long n = (long long)v;
        unsigned long long u = n < 0 ? (unsigned long long)(-(n + 1)) + 1 : (unsigned long long)n;
        char tmp[24];
        size_t i = 0, j = 0;
        do {
            tmp[i++] = (char)('0' + u % 10);
            u /= 10;
        } while (u > 0);
        if (n < 0)
            buf[j++] = '-';
        while (i > 0)
            buf[j++] = tmp[--i];
        buf[j] = '\0';
        return buf;
    }
    /* The shortest text that reads back as the same double: "0.005", not
     * "0.0050000000000000001". */
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(buf, len, "%.*g", precision, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

ms_err_t ms_metrics_render(ms_metrics_t *m, ms_buf_t *out)
{
    static const char *const kinds[] = {"counter", "gauge", "histogram"};
    ms_err_t err = MS_OK;
    char num[40], le[40];

    pthread_mutex_lock(&m->lock);
    for (size_t f = 0; f < m->nfamilies && err == MS_OK; f++) {
        const family_t *fam = m->families[f];

        err = ms_buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
                             kinds[fam->kind]);
        for (size_t i = 0; i < fam->nseries && err == MS_OK; i++) {
            const series_t *s = &fam->series[i];

            if (fam->kind != MS_METRIC_HISTOGRAM) {
                err = put_str(out, fam->name);
                if (err == MS_OK)
                    err = put_labels(out, fam, s, NULL);
                if (err == MS_OK)
                    err = ms_buf_append(out, " ", 1);
                if (err == MS_OK)
                    err = put_str(out, format_value(s->value, num, sizeof num));
                if (err == MS_OK)
                    err = ms_buf_append(out, "\n", 1);
                continue;
            }
            uint64_t cumulative = 0;
            for (size_t b = 0; b <= fam->nbounds && err == MS_OK; b++) {
                cumulative += s->buckets[b];
                if (b < fam->nbounds)
                    format_value(fam->bounds[b], le, sizeof le);
                err = ms_buf_appendf(out, "%s_bucket", fam->name);
                if (err == MS_OK)
                    err = put_labels(out, fam, s, b < fam->nbounds ? le : "+Inf");
                if (err == MS_OK)
                    err = ms_buf_appendf(out, " %llu\n", (unsigned long long)cumulative);
            }
            if (err == MS_OK)
                err = ms_buf_appendf(out, "%s_sum", fam->name);
            if (err == MS_OK)
                err = put_labels(out, fam, s, NULL);
            if (err == MS_OK)
                err = ms_buf_appendf(out, " %s\n%s_count", format_value(s->value, num, sizeof num),
                                     fam->name);
            if (err == MS_OK)
                err = put_labels(out, fam, s, NULL);
            if (err == MS_OK)
                err = ms_buf_appendf(out, " %llu\n", (unsigned long long)s->count);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return err;
}
