/*
 * metrics.c - the registry behind /metrics.
 *
 * Each family keeps its series in an array plus an open-addressing index
 * keyed by the joined label values, so updating one of 10,000 per-object
 * gauges costs a hash, not a scan.
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

typedef struct {
    char *key;                               /* label values joined by '\x1f'; owned */
    char *values[MS_METRICS_MAX_LABELS];     /* each value, in key's allocation */
    double value;                            /* counter/gauge value, histogram sum */
    uint64_t count;                          /* histogram count */
    uint64_t *buckets;                       /* histogram per-bucket counts */
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
    size_t *index; /* slot -> series index + 1; 0 is empty */
    size_t index_cap;
} family_t;

struct ms_metrics {
    pthread_mutex_t lock;
    family_t *families;
    size_t nfamilies;
};

ms_metrics_t *ms_metrics_new(void)
{
    ms_metrics_t *m = calloc(1, sizeof *m);

    if (m != NULL)
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
        family_t *fam = &m->families[f];
        for (size_t i = 0; i < fam->nseries; i++)
            series_free(&fam->series[i]);
        free(fam->series);
        free(fam->index);
        free(fam->bounds);
    }
    free(m->families);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int ms_metrics_family(ms_metrics_t *m, ms_metric_kind_t kind, const char *name, const char *help,
                      const char *const *labels, size_t nlabels, const double *buckets,
                      size_t nbuckets)
{
    family_t *fams, *fam;
    int id = -1;

    if (nlabels > MS_METRICS_MAX_LABELS)
        return -1;
    pthread_mutex_lock(&m->lock);
    fams = realloc(m->families, (m->nfamilies + 1) * sizeof *fams);
    if (fams == NULL)
        goto out;
    m->families = fams;
    fam = &fams[m->nfamilies];
    memset(fam, 0, sizeof *fam);
    fam->kind = kind;
    fam->name = name;
    fam->help = help;
    fam->nlabels = nlabels;
    for (size_t i = 0; i < nlabels; i++)
        fam->labels[i] = labels[i];
    if (kind == MS_METRIC_HISTOGRAM && nbuckets > 0) {
        fam->bounds = malloc(nbuckets * sizeof *fam->bounds);
        if (fam->bounds == NULL)
            goto out;
        memcpy(fam->bounds, buckets, nbuckets * sizeof *fam->bounds);
        fam->nbounds = nbuckets;
    }
    id = (int)m->nfamilies++;
out:
    pthread_mutex_unlock(&m->lock);
    return id;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The label values joined by '\x1f': into buf when they fit (every update
 * of an existing series), else a new allocation the caller frees. NULL when
 * that allocation fails. */
static char *join(const char *const *values, size_t n, char *buf, size_t cap)
{
    size_t len = 1;
    char *key, *p;

    for (size_t i = 0; i < n; i++)
        len += strlen(values[i] ? values[i] : "") + 1;
    key = len <= cap ? buf : malloc(len);
    if (key == NULL)
        return NULL;
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
    char *block = malloc(2 * len), *p;

    if (block == NULL)
        return NULL;
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

static void index_insert(size_t *index, size_t cap, const char *key, size_t i)
{
    size_t slot = hash(key) & (cap - 1);

    while (index[slot] != 0)
        slot = (slot + 1) & (cap - 1);
    index[slot] = i + 1;
}

/* The slot holding series i (whose key is key). */
static size_t index_slot(const family_t *fam, const char *key, size_t i)
{
    size_t slot = hash(key) & (fam->index_cap - 1);

    while (fam->index[slot] != i + 1)
        slot = (slot + 1) & (fam->index_cap - 1);
    return slot;
}

/* Empty a slot and shift later entries of its probe run back into it
 * (backward-shift deletion: no tombstones, lookups stay short). */
static void index_delete(family_t *fam, size_t hole)
{
    size_t mask = fam->index_cap - 1, j = hole;

    fam->index[hole] = 0;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (fam->index[j] == 0)
            return;
        home = hash(fam->series[fam->index[j] - 1].key) & mask;
        /* The entry at j stays when its home lies cyclically in (hole, j]. */
        if (hole <= j ? (home > hole && home <= j) : (home > hole || home <= j))
            continue;
        fam->index[hole] = fam->index[j];
        fam->index[j] = 0;
        hole = j;
    }
}

/* Rebuild the index with room for twice the series (linear probing stays
 * short below half full). */
static bool reindex(family_t *fam)
{
    size_t cap = 16;
    size_t *index;

    while (cap < fam->nseries * 2 + 2)
        cap *= 2;
    index = calloc(cap, sizeof *index);
    if (index == NULL)
        return false;
    for (size_t i = 0; i < fam->nseries; i++)
        index_insert(index, cap, fam->series[i].key, i);
    free(fam->index);
    fam->index = index;
    fam->index_cap = cap;
    return true;
}

/* The series for these values, created when create is set; NULL otherwise
 * (or on allocation failure, when the update is dropped rather than abort
 * the controller over a metric). */
static series_t *lookup(family_t *fam, const char *const *values, bool create)
{
    char buf[512];
    char *key = join(values, fam->nlabels, buf, sizeof buf), *block = NULL;
    char *s_values[MS_METRICS_MAX_LABELS] = {0};
    series_t *s = NULL;
    size_t slot;

    if (key == NULL)
        return NULL;
    if (fam->index_cap > 0) {
        slot = hash(key) & (fam->index_cap - 1);
        while (fam->index[slot] != 0) {
            size_t i = fam->index[slot];
            if (strcmp(fam->series[i - 1].key, key) == 0) {
                if (key != buf)
                    free(key);
                return &fam->series[i - 1];
            }
            slot = (slot + 1) & (fam->index_cap - 1);
        }
    }
    if (!create)
        goto out;
    if ((block = key_block(key, s_values, fam->nlabels)) == NULL)
        goto out;
    if (fam->nseries == fam->cap) {
        size_t cap = fam->cap ? fam->cap * 2 : 8;
        series_t *arr = realloc(fam->series, cap * sizeof *arr);
        if (arr == NULL)
            goto out;
        fam->series = arr;
        fam->cap = cap;
    }
    s = &fam->series[fam->nseries];
    memset(s, 0, sizeof *s);
    s->key = block;
    block = NULL;
    memcpy(s->values, s_values, sizeof s->values);
    if (fam->kind == MS_METRIC_HISTOGRAM &&
        (s->buckets = calloc(fam->nbounds + 1, sizeof *s->buckets)) == NULL)
        goto fail;
    fam->nseries++;
    if (fam->nseries * 2 + 2 > fam->index_cap) {
        if (!reindex(fam)) {
            fam->nseries--;
            series_free(s);
            return NULL;
        }
    } else {
        index_insert(fam->index, fam->index_cap, s->key, fam->nseries - 1);
    }
    return s;
fail:
    series_free(s);
    s = NULL;
out:
    free(block);
    if (key != buf)
        free(key);
    return s;
}

static family_t *family(ms_metrics_t *m, int id)
{
    return id >= 0 && (size_t)id < m->nfamilies ? &m->families[id] : NULL;
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
        if (l == n)
            series_free(s);
        else
            fam->series[kept++] = *s;
    }
    if (kept != fam->nseries) {
        fam->nseries = kept;
        reindex(fam);
    }
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
         * be. The last series moves into the hole; its slot follows it. */
        index_delete(fam, index_slot(fam, s->key, i));
        series_free(s);
        if (i != last) {
            fam->series[i] = fam->series[last];
            fam->index[index_slot(fam, fam->series[i].key, last)] = i + 1;
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

static ms_err_t put_str(ms_buf_t *out, const char *s) { return ms_buf_append(out, s, strlen(s)); }

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
        const family_t *fam = &m->families[f];

        err = ms_buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, kinds[fam->kind]);
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
                err = ms_buf_appendf(out, " %s\n%s_count", format_value(s->value, num, sizeof num), fam->name);
            if (err == MS_OK)
                err = put_labels(out, fam, s, NULL);
            if (err == MS_OK)
                err = ms_buf_appendf(out, " %llu\n", (unsigned long long)s->count);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return err;
}
