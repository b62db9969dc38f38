/*
 * decode_series.c - the vectors and matrices of Prometheus answers, decoded
 * straight from the body into the few blocks a result owns.
 *
 * The answer of one batched preset query holds a series per workload and
 * field: 50,000 at 10,000 objects. Each goes into four blocks that grow as
 * the body is read: series, points, labels, and one arena of label names and
 * values (unescaped, NUL-terminated). Nothing is allocated per string, and
 * the names a series shares with the one before it are stored once, so the
 * result is about the size of the body, where a cJSON tree was nine times
 * that. At the end the blocks are shrunk to fit and their offsets turned
 * into the pointers ms_prom_series_t and ms_prom_series_label() use.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "meshscaler/buf.h"

/* A label as a result holds it: both strings in the result's arena. */
struct ms__prom_label {
    const char *name;
    const char *value; /* NULL: the member was not a string */
};

/* While the body is read every block may move as it grows, so series and
 * labels hold offsets until finish() turns them into pointers, in place:
 * each has the size of what it becomes. */
typedef struct {
    size_t point0, npoints; /* in the points block */
    size_t label0, nlabels; /* in the labels block */
} series_at_t;

typedef struct {
    size_t name, value; /* in the arena; value NO_VALUE: not a string */
} label_at_t;

#define NO_VALUE SIZE_MAX

_Static_assert(sizeof(series_at_t) == sizeof(ms_prom_series_t), "series convert in place");
_Static_assert(sizeof(label_at_t) == sizeof(struct ms__prom_label), "labels convert in place");

/* A vector or matrix being decoded. The blocks have no cap of their own:
 * what they hold is bounded by the body, which the HTTP layer capped. */
typedef struct {
    ms_buf_t series;  /* series_at_t */
    ms_buf_t points;  /* ms_prom_point_t */
    ms_buf_t labels;  /* label_at_t */
    ms_buf_t arena;   /* label names and values, NUL-terminated, unescaped */
    series_at_t prev; /* the series before: its label names are reused */
    size_t bad_pair;  /* the first series with a bad pair; SIZE_MAX: none */
} builder_t;

static void builder_init(builder_t *b)
{
    memset(b, 0, sizeof *b);
    ms_buf_init(&b->series, SIZE_MAX);
    ms_buf_init(&b->points, SIZE_MAX);
    ms_buf_init(&b->labels, SIZE_MAX);
    ms_buf_init(&b->arena, SIZE_MAX);
    b->bad_pair = SIZE_MAX;
}

static void builder_cleanup(builder_t *b)
{
    ms_buf_cleanup(&b->series);
    ms_buf_cleanup(&b->points);
    ms_buf_cleanup(&b->labels);
    ms_buf_cleanup(&b->arena);
}

static size_t nseries(const builder_t *b)
{
    return b->series.len / sizeof(series_at_t);
}

/* Give back what doubling left unused: a result lives for a whole round.
 * The buffer is only handed over after this, never appended to again. */
static void shrink(ms_buf_t *b)
{
    char *p;

    if (b->data == NULL || b->len == b->cap)
        return;
    if (b->len == 0) {
        ms_buf_cleanup(b);
        return;
    }
    if ((p = realloc(b->data, b->len)) != NULL) {
        b->data = p;
        b->cap = b->len;
    }
}

/* Hand the blocks over to r, shrunk, with offsets turned into pointers. */
static void finish(builder_t *b, ms_prom_result_t *r)
{
    size_t n = nseries(b), nlabels = b->labels.len / sizeof(label_at_t);

    shrink(&b->series);
    shrink(&b->points);
    shrink(&b->labels);
    shrink(&b->arena);
    r->series = (ms_prom_series_t *)(void *)b->series.data;
    r->store_ = (ms_prom_point_t *)(void *)b->points.data;
    r->labels_ = (struct ms__prom_label *)(void *)b->labels.data;
    r->arena_ = b->arena.data;
    r->nseries = n;
    for (size_t k = 0; k < nlabels; k++) {
        label_at_t at;

        memcpy(&at, &r->labels_[k], sizeof at);
        r->labels_[k].name = r->arena_ + at.name;
        r->labels_[k].value = at.value == NO_VALUE ? NULL : r->arena_ + at.value;
    }
    for (size_t k = 0; k < n; k++) {
        series_at_t at;

        memcpy(&at, &r->series[k], sizeof at);
        r->series[k] = (ms_prom_series_t){.points = at.npoints ? r->store_ + at.point0 : NULL,
                                          .npoints = at.npoints,
                                          .labels_ = at.nlabels ? r->labels_ + at.label0 : NULL,
                                          .nlabels_ = at.nlabels};
    }
    /* r owns the blocks now. */
    ms_buf_init(&b->series, SIZE_MAX);
    ms_buf_init(&b->points, SIZE_MAX);
    ms_buf_init(&b->labels, SIZE_MAX);
    ms_buf_init(&b->arena, SIZE_MAX);
}

/* Append string v of body p to the arena, unescaped and NUL-terminated;
 * *off gets where it starts. False when out of memory. */
static bool arena_put(builder_t *b, const char *p, const ms__jval_t *v, size_t *off)
{
    size_t len = v->end - v->start, n;

    *off = b->arena.len;
    if (ms_buf_append(&b->arena, p + v->start, len) != MS_OK)
        return false;
    if (v->escaped) {
        /* In place: the decoded form is never longer than the escaped one. */
        ms__jscan_unescape(b->arena.data + *off, len, b->arena.data + *off, len, &n);
        b->arena.len = *off + n;
    }
    return ms_buf_append(&b->arena, "", 1) == MS_OK;
}

/* Where label name key (the k-th of its series) is in the arena. A batched
 * answer repeats one label set in every series, so when the series before
 * has the same name at the same place that copy serves again. */
static bool label_name(builder_t *b, const char *p, const ms__jval_t *key, size_t k, size_t *off)
{
    size_t len = key->end - key->start;

    if (!key->escaped && k < b->prev.nlabels) {
        label_at_t prev;
        const char *name;

        memcpy(&prev, b->labels.data + (b->prev.label0 + k) * sizeof prev, sizeof prev);
        name = b->arena.data + prev.name;
        /* strncmp stops at the copy's NUL: a shorter name is not read past. */
        if (strncmp(name, p + key->start, len) == 0 && name[len] == '\0') {
            *off = prev.name;
            return true;
        }
    }
    return arena_put(b, p, key, off);
}

/* The second pass reads only what the first one checked, so this is a
 * decoder bug, reported rather than trusted. */
static ms_prom_reason_t broken(ms_prom_result_t *r, const ms__jscan_t *s)
{
    return ms__prom_fail(r, MS_PROM_MALFORMED, "the JSON cannot be read at byte %zu (%s)",
                         s->err_at, s->err_what);
}

static ms_prom_reason_t no_memory(ms_prom_result_t *r, const builder_t *b)
{
    return ms__prom_fail(r, MS_PROM_TOO_LARGE, "out of memory holding %zu series", nseries(b) + 1);
}

/* ---- samples ---- */

bool ms__prom_read_array2(ms__jscan_t *s, ms__jval_t e[2], size_t *n)
{
    ms__jval_t v, item;

    *n = 0;
    memset(e, 0, 2 * sizeof *e);
    if (!ms__jscan_value(s, &v))
        return false;
    if (v.type != MS__JSON_ARRAY)
        return ms__jscan_skip(s, &v);
    while (ms__jscan_element(s)) {
        if (!ms__jscan_value(s, &item) || !ms__jscan_skip(s, &item))
            return false;
        if (*n < 2)
            e[*n] = item;
        (*n)++;
    }
    return s->err == MS__JSCAN_OK;
}

/* A sample value string, unescaped first when it has escapes (no value is
 * 64 bytes long, so a longer one is refused without a copy). */
static bool sample_value(const char *p, const ms__jval_t *v, double *out)
{
    char tmp[64];
    size_t n;

    if (v->type != MS__JSON_STRING)
        return false;
    if (!v->escaped)
        return ms_prom_parse_value(p + v->start, v->end - v->start, out);
    return ms__jscan_unescape(p + v->start, v->end - v->start, tmp, sizeof tmp, &n) &&
           ms_prom_parse_value(tmp, n, out);
}

ms__prom_pair_t ms__prom_read_pair(ms__jscan_t *s, ms_prom_point_t *pt)
{
    ms__jval_t e[2];
    size_t n;
    double t, v;

    if (!ms__prom_read_array2(s, e, &n))
        return MS__PAIR_BROKEN;
    if (n != 2 || !ms__jscan_number(s->p, &e[0], &t) || !isfinite(t) ||
        !sample_value(s->p, &e[1], &v))
        return MS__PAIR_BAD;
    pt->t = t;
    pt->v = v;
    return MS__PAIR_OK;
}

/* ---- vectors and matrices ---- */

/* The members of the metric object just opened become labels of *at. */
static ms_prom_reason_t read_labels(ms__jscan_t *s, builder_t *b, series_at_t *at,
                                    ms_prom_result_t *r)
{
    ms__jval_t key, v;

    while (ms__jscan_member(s, &key)) {
        label_at_t l = {0, NO_VALUE};

        if (!ms__jscan_value(s, &v) || !ms__jscan_skip(s, &v))
            return broken(r, s);
        if (!label_name(b, s->p, &key, at->nlabels, &l.name) ||
            (v.type == MS__JSON_STRING && !arena_put(b, s->p, &v, &l.value)) ||
            ms_buf_append(&b->labels, &l, sizeof l) != MS_OK)
            return no_memory(r, b);
        at->nlabels++;
    }
    return s->err == MS__JSCAN_OK ? MS_PROM_OK : broken(r, s);
}

/* A point read into the points block; *bad notes a bad pair. */
static ms_prom_reason_t read_point(ms__jscan_t *s, builder_t *b, series_at_t *at, bool *bad,
                                   ms_prom_result_t *r)
{
    ms_prom_point_t pt;

    switch (ms__prom_read_pair(s, &pt)) {
    case MS__PAIR_BROKEN:
        return broken(r, s);
    case MS__PAIR_BAD:
        *bad = true;
        return MS_PROM_OK;
    case MS__PAIR_OK:
        break;
    }
    if (ms_buf_append(&b->points, &pt, sizeof pt) != MS_OK)
        return no_memory(r, b);
    at->npoints++;
    return MS_PROM_OK;
}

/* A matrix series' "values": *is_array tells whether it was an array. */
static ms_prom_reason_t read_points(ms__jscan_t *s, builder_t *b, series_at_t *at, bool *is_array,
                                    bool *bad, ms_prom_result_t *r)
{
    ms__jval_t v;
    ms_prom_reason_t reason;

    if (!ms__jscan_value(s, &v))
        return broken(r, s);
    *is_array = v.type == MS__JSON_ARRAY;
    if (!*is_array)
        return ms__jscan_skip(s, &v) ? MS_PROM_OK : broken(r, s);
    while (ms__jscan_element(s))
        if ((reason = read_point(s, b, at, bad, r)) != MS_PROM_OK)
            return reason;
    return s->err == MS__JSCAN_OK ? MS_PROM_OK : broken(r, s);
}

static int by_time(const void *a, const void *b)
{
    double x = ((const ms_prom_point_t *)a)->t, y = ((const ms_prom_point_t *)b)->t;

    return x < y ? -1 : x > y;
}

/* Put a matrix series' points oldest first, as ms_prom_result_at's
 * bisection needs (Prometheus sends them so; a proxy in front may not).
 * Two points at one time cannot be ordered: refused. */
static ms_prom_reason_t order_points(builder_t *b, const series_at_t *at, size_t i,
                                     ms_prom_result_t *r)
{
    ms_prom_point_t *pts = (ms_prom_point_t *)(void *)b->points.data + at->point0;
    bool sorted = true;

    for (size_t k = 1; k < at->npoints && sorted; k++)
        sorted = pts[k - 1].t < pts[k].t;
    if (sorted)
        return MS_PROM_OK;
    qsort(pts, at->npoints, sizeof *pts, by_time);
    for (size_t k = 1; k < at->npoints; k++)
        if (!(pts[k - 1].t < pts[k].t))
            return ms__prom_fail(r, MS_PROM_MALFORMED, "series %zu has two points at %.3f", i,
                                 pts[k].t);
    return MS_PROM_OK;
}

/* What one series object held, for the checks after its last member. */
typedef struct {
    bool metric_seen, metric; /* "metric" came; it was an object */
    bool values_seen, values; /* "value(s)" came; a matrix's was an array */
    bool histogram;           /* a vector series had "histogram" */
    bool bad;                 /* a bad [time, "value"] pair */
} seen_t;

/* One member of a series object, its name in key. */
static ms_prom_reason_t series_member(ms__jscan_t *s, const ms__jval_t *key, builder_t *b,
                                      bool matrix, series_at_t *at, seen_t *seen,
                                      ms_prom_result_t *r)
{
    ms__jval_t v;

    if (!seen->metric_seen && ms__jscan_equals(s->p, key, "metric")) {
        seen->metric_seen = true;
        if (!ms__jscan_value(s, &v))
            return broken(r, s);
        if (v.type != MS__JSON_OBJECT)
            return ms__jscan_skip(s, &v) ? MS_PROM_OK : broken(r, s);
        seen->metric = true;
        return read_labels(s, b, at, r);
    }
    if (!seen->values_seen && ms__jscan_equals(s->p, key, matrix ? "values" : "value")) {
        seen->values_seen = true;
        if (!matrix)
            return read_point(s, b, at, &seen->bad, r);
        return read_points(s, b, at, &seen->values, &seen->bad, r);
    }
    /* Native histograms ("histogram") carry no plain value. */
    seen->histogram = seen->histogram || (!matrix && ms__jscan_equals(s->p, key, "histogram"));
    if (!ms__jscan_value(s, &v) || !ms__jscan_skip(s, &v))
        return broken(r, s);
    return MS_PROM_OK;
}

/* Element i of data.result into the builder. A fault of shape (no metric
 * object, no values array, a native histogram) ends the decode at once; a
 * bad pair is only noted in b->bad_pair, so that a fault of shape further
 * on still wins, as when every series was checked before any pair was
 * read. */
static ms_prom_reason_t decode_one_series(ms__jscan_t *s, builder_t *b, bool matrix, size_t i,
                                          ms_prom_result_t *r)
{
    series_at_t at = {b->points.len / sizeof(ms_prom_point_t), 0,
                      b->labels.len / sizeof(label_at_t), 0};
    seen_t seen = {0};
    ms__jval_t item, key;
    ms_prom_reason_t reason;

    if (!ms__jscan_value(s, &item))
        return broken(r, s);
    if (item.type == MS__JSON_OBJECT) {
        while (ms__jscan_member(s, &key))
            if ((reason = series_member(s, &key, b, matrix, &at, &seen, r)) != MS_PROM_OK)
                return reason;
    } else if (!ms__jscan_skip(s, &item)) {
        return broken(r, s);
    }
    if (s->err != MS__JSCAN_OK)
        return broken(r, s);
    if (!seen.metric)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "series %zu has no \"metric\" object", i);
    if (matrix && !seen.values)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "series %zu has no \"values\" array", i);
    if (!matrix && !seen.values_seen && seen.histogram)
        return ms__prom_fail(r, MS_PROM_WRONG_TYPE, "series %zu is a native histogram", i);
    if ((seen.bad || (!matrix && !seen.values_seen)) && b->bad_pair == SIZE_MAX)
        b->bad_pair = i;
    if (matrix && (reason = order_points(b, &at, i, r)) != MS_PROM_OK)
        return reason;
    if (ms_buf_append(&b->series, &at, sizeof at) != MS_OK)
        return no_memory(r, b);
    b->prev = at;
    return MS_PROM_OK;
}

ms_prom_reason_t ms__prom_decode_series(const char *body, size_t len, size_t at, bool matrix,
                                        ms_prom_result_t *r)
{
    builder_t b;
    ms__jscan_t s;
    ms__jval_t array;
    ms_prom_reason_t reason = MS_PROM_OK;

    builder_init(&b);
    ms__jscan_init(&s, body, len, at);
    if (!ms__jscan_value(&s, &array)) {
        reason = broken(r, &s);
        goto out;
    }
    for (size_t i = 0; ms__jscan_element(&s); i++)
        if ((reason = decode_one_series(&s, &b, matrix, i, r)) != MS_PROM_OK)
            goto out;
    if (s.err != MS__JSCAN_OK) {
        reason = broken(r, &s);
        goto out;
    }
    if (b.bad_pair != SIZE_MAX) {
        reason = ms__prom_fail(r, MS_PROM_MALFORMED, "series %zu has a bad [time, \"value\"] pair",
                               b.bad_pair);
        goto out;
    }
    finish(&b, r);
out:
    builder_cleanup(&b);
    return reason;
}

const char *ms_prom_series_label(const ms_prom_series_t *s, const char *name)
{
    /* The first of two labels of one name counts, as in a JSON lookup. */
    for (size_t i = 0; i < s->nlabels_; i++)
        if (strcmp(s->labels_[i].name, name) == 0)
            return s->labels_[i].value;
    return NULL;
}

/* The point of s at t, by bisection (points are oldest first), or NULL. */
static const ms_prom_point_t *point_at(const ms_prom_series_t *s, double t)
{
    size_t lo = 0, hi = s->npoints;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->points[mid].t < t - 0.0005)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->npoints && fabs(s->points[lo].t - t) <= 0.0005 ? &s->points[lo] : NULL;
}

ms_prom_reason_t ms_prom_result_at(const ms_prom_result_t *matrix, double t, ms_prom_result_t *out)
{
    size_t k = 0;

    ms_prom_result_cleanup(out);
    out->http_status = matrix->http_status;
    if (matrix->reason != MS_PROM_OK)
        return ms__prom_fail(out, matrix->reason, "%s", matrix->message);
    if (matrix->type != MS_PROM_TYPE_MATRIX)
        return ms__prom_fail(out, MS_PROM_WRONG_TYPE, "a range query answered no matrix");
    out->type = MS_PROM_TYPE_VECTOR;
    out->reason = MS_PROM_OK;
    if (matrix->nseries == 0)
        return MS_PROM_OK;
    out->series = calloc(matrix->nseries, sizeof *out->series);
    out->store_ = calloc(matrix->nseries, sizeof *out->store_);
    if (out->series == NULL || out->store_ == NULL) {
        ms_prom_result_cleanup(out);
        return ms__prom_fail(out, MS_PROM_TOO_LARGE, "out of memory for a vector at %.3f", t);
    }
    for (size_t i = 0; i < matrix->nseries; i++) {
        const ms_prom_point_t *pt = point_at(&matrix->series[i], t);

        if (pt == NULL)
            continue;
        out->store_[k] = *pt;
        out->series[k] = (ms_prom_series_t){&out->store_[k], 1, matrix->series[i].labels_,
                                            matrix->series[i].nlabels_};
        k++;
    }
    out->nseries = k;
    return MS_PROM_OK;
}
