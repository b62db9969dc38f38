/*
 * svg.c - the replay's chart: two panels over one time axis. Above, each
 * metric against its target (100%): solid as it was read at the replicas
 * the target had, dashed spread over meshscaler's count. Below, the replicas
 * meshscaler would have run (a step line) beside those the target had.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "meshscaler/replay.h"

#define W 960
#define LEFT 70
#define RIGHT 930
#define LOAD_TOP 50
#define LOAD_BOTTOM 270
#define REP_TOP 320
#define REP_BOTTOM 520
#define H 580

static const char *const palette[] = {"#d62728", "#ff7f0e", "#9467bd", "#8c564b",
                                      "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"};

typedef struct {
    double t0, t1;   /* time range */
    double load_max; /* top of the load panel, percent */
    double rep_max;  /* top of the replicas panel */
} frame_t;

static double x_of(const frame_t *f, double t)
{
    return f->t1 > f->t0 ? LEFT + (t - f->t0) / (f->t1 - f->t0) * (RIGHT - LEFT) : LEFT;
}

static double y_of(double v, double max, int top, int bottom)
{
    return bottom - (v > max ? max : v) / max * (bottom - top);
}

/* A nice ceiling for an axis: 1, 2 or 5 times a power of ten. */
static double nice_ceil(double v)
{
    double p = pow(10, floor(log10(v > 1 ? v : 1)));

    for (int i = 0; i < 3; i++) {
        static const double steps[] = {1, 2, 5};
        if (steps[i] * p >= v)
            return steps[i] * p;
    }
    return 10 * p;
}

/* A tick spacing of 1, 2 or 5 times a power of ten giving at most `most`
 * ticks up to max; at least 1 (replicas are whole). */
static double tick_step(double max, int most)
{
    double step = 1;

    while (max / step > most) {
        double p = pow(10, floor(log10(step)));
        step = step < 2 * p ? 2 * p : step < 5 * p ? 5 * p : 10 * p;
    }
    return step;
}

static void frame(const ms_replay_point_t *pts, size_t n, size_t nmetrics, frame_t *f)
{
    f->t0 = pts[0].time;
    f->t1 = pts[n - 1].time;
    f->load_max = 200;
    f->rep_max = 1;
    for (size_t i = 0; i < n; i++) {
        for (size_t m = 0; m < nmetrics; m++) {
            if (isfinite(pts[i].load[m]) && pts[i].load[m] > f->load_max)
                f->load_max = pts[i].load[m];
            if (isfinite(pts[i].actual_load[m]) && pts[i].actual_load[m] > f->load_max)
                f->load_max = pts[i].actual_load[m];
        }
        if (pts[i].desired > f->rep_max)
            f->rep_max = pts[i].desired;
        if (pts[i].actual > f->rep_max)
            f->rep_max = pts[i].actual;
    }
    f->load_max = nice_ceil(f->load_max > 1000 ? 1000 : f->load_max);
    f->rep_max =
        ceil(f->rep_max * 1.1 / tick_step(f->rep_max * 1.1, 5)) * tick_step(f->rep_max * 1.1, 5);
}

/* A line through the finite values, broken where a value is missing. */
static void line(ms_buf_t *out, const frame_t *f, const ms_replay_point_t *pts, size_t n,
                 size_t metric, bool actual, const char *color, const char *dash)
{
    bool open = false;

    for (size_t i = 0; i < n; i++) {
        double v = actual ? pts[i].actual_load[metric] : pts[i].load[metric];

        if (!isfinite(v)) {
            if (open)
                (void)ms_buf_appendf(out, "\"/>\n");
            open = false;
            continue;
        }
        if (!open)
            (void)ms_buf_appendf(out,
                                 "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s "
                                 "points=\"",
                                 color, dash);
        (void)ms_buf_appendf(out, "%.1f,%.1f ", x_of(f, pts[i].time),
                             y_of(v, f->load_max, LOAD_TOP, LOAD_BOTTOM));
        open = true;
    }
    if (open)
        (void)ms_buf_appendf(out, "\"/>\n");
}

/* Replicas as a step line: a count holds until the next step. */
static void steps(ms_buf_t *out, const frame_t *f, const ms_replay_point_t *pts, size_t n,
                  bool actual, const char *color, double width)
{
    bool open = false;
    double prev_y = 0;

    for (size_t i = 0; i < n; i++) {
        int32_t v = actual ? pts[i].actual : pts[i].desired;
        double x = x_of(f, pts[i].time), y;

        if (v < 0) {
            if (open)
                (void)ms_buf_appendf(out, "\"/>\n");
            open = false;
            continue;
        }
        y = y_of(v, f->rep_max, REP_TOP, REP_BOTTOM);
        if (!open)
            (void)ms_buf_appendf(out,
                                 "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
                                 "points=\"%.1f,%.1f ",
                                 color, width, x, y);
        else
            (void)ms_buf_appendf(out, "%.1f,%.1f %.1f,%.1f ", x, prev_y, x, y);
        prev_y = y;
        open = true;
    }
    if (open)
        (void)ms_buf_appendf(out, "%.1f,%.1f\"/>\n", (double)RIGHT, prev_y);
}

/* Time ticks at round times: the first spacing giving at most 8. */
static double time_step(double span)
{
    static const double steps[] = {15,   30,   60,    120,   300,   600,   900,    1800,
                                   3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
    size_t i = 0;

    while (i + 1 < sizeof steps / sizeof steps[0] && span / steps[i] > 8)
        i++;
    return steps[i];
}

static void y_grid(ms_buf_t *out, double max, int most, int top, int bottom, const char *unit)
{
    double step = tick_step(max, most);

    for (double v = 0; v <= max + 1e-9; v += step) {
        double y = y_of(v, max, top, bottom);
        (void)ms_buf_appendf(out,
                             "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                             "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f%s</text>\n",
                             LEFT, y, RIGHT, y, LEFT - 6, y + 4, v, unit);
    }
}

static void axes(ms_buf_t *out, const frame_t *f)
{
    bool days = f->t1 - f->t0 > 2 * 86400;
    double step = time_step(f->t1 - f->t0),
           target_y = y_of(100, f->load_max, LOAD_TOP, LOAD_BOTTOM);

    y_grid(out, f->load_max, 5, LOAD_TOP, LOAD_BOTTOM, "%");
    y_grid(out, f->rep_max, 5, REP_TOP, REP_BOTTOM, "");
    for (double t = ceil(f->t0 / step) * step; t <= f->t1; t += step) {
        time_t tt = (time_t)t;
        struct tm tm;
        char label[32];

        gmtime_r(&tt, &tm);
        strftime(label, sizeof label, days ? "%m-%d %H:%M" : "%H:%M", &tm);
        (void)ms_buf_appendf(out,
                             "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>"
                             "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                             x_of(f, t), REP_BOTTOM, x_of(f, t), REP_BOTTOM + 4, x_of(f, t),
                             REP_BOTTOM + 18, label);
    }
    (void)ms_buf_appendf(
        out,
        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" "
        "stroke-dasharray=\"6,3\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">target</text>\n"
        "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">load over target</text>\n"
        "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">replicas</text>\n"
        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">UTC</text>\n",
        LEFT, target_y, RIGHT, target_y, RIGHT, target_y - 4, LEFT, LOAD_TOP - 8, LEFT, REP_TOP - 8,
        RIGHT, REP_BOTTOM + 34);
}

/* s with the five XML specials escaped. */
static void text_escaped(ms_buf_t *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            (void)ms_buf_appendf(out, "&lt;");
            break;
        case '>':
            (void)ms_buf_appendf(out, "&gt;");
            break;
        case '&':
            (void)ms_buf_appendf(out, "&amp;");
            break;
        case '"':
            (void)ms_buf_appendf(out, "&quot;");
            break;
        case '\'':
            (void)ms_buf_appendf(out, "&apos;");
            break;
        default:
            if ((unsigned char)*s >= 0x20)
                (void)ms_buf_append(out, s, 1);
        }
    }
}

static void legend(ms_buf_t *out, const ms_spec_t *spec)
{
    int x = LEFT + 170;

    for (size_t m = 0; m < spec->nmetrics; m++) {
        const char *c = palette[m % (sizeof palette / sizeof palette[0])];
        (void)ms_buf_appendf(out,
                             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                             "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">",
                             x, LOAD_TOP - 12, x + 18, LOAD_TOP - 12, c, x + 22, LOAD_TOP - 8);
        text_escaped(out, spec->metrics[m].name);
        (void)ms_buf_appendf(out, "</text>\n");
        x += 30 + 8 * (int)strlen(spec->metrics[m].name);
    }
    (void)ms_buf_appendf(
        out,
        "<text x=\"%d\" y=\"%d\" fill=\"#555\" text-anchor=\"end\">solid: as read; dashed: "
        "spread over meshscaler's replicas</text>\n"
        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1f77b4\" stroke-width=\"2.5\"/>"
        "<text x=\"%d\" y=\"%d\">meshscaler</text>\n"
        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#555\" stroke-width=\"1.5\"/>"
        "<text x=\"%d\" y=\"%d\">the target had</text>\n",
        RIGHT, LOAD_TOP - 8, LEFT + 170, REP_TOP - 12, LEFT + 188, REP_TOP - 12, LEFT + 192,
        REP_TOP - 8, LEFT + 290, REP_TOP - 12, LEFT + 308, REP_TOP - 12, LEFT + 312, REP_TOP - 8);
}

static void document(const ms_spec_t *spec, const char *title, const ms_replay_point_t *points,
                     size_t n, ms_buf_t *out)
{
    frame_t f;

    (void)ms_buf_appendf(out,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                         "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                         "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                         "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">",
                         W, H, W, H, LEFT);
    text_escaped(out, title);
    (void)ms_buf_appendf(out, "</text>\n");
    if (n > 0) {
        frame(points, n, spec->nmetrics, &f);
        axes(out, &f);
        for (size_t m = 0; m < spec->nmetrics; m++) {
            const char *c = palette[m % (sizeof palette / sizeof palette[0])];
            line(out, &f, points, n, m, true, c, "");
            line(out, &f, points, n, m, false, c, " stroke-dasharray=\"4,3\"");
        }
        steps(out, &f, points, n, true, "#555", 1.5);
        steps(out, &f, points, n, false, "#1f77b4", 2.5);
        legend(out, spec);
    } else {
        (void)ms_buf_appendf(out, "<text x=\"%d\" y=\"%d\">no steps</text>\n", LEFT, LOAD_TOP + 20);
    }
    (void)ms_buf_appendf(out, "</svg>\n");
}

ms_err_t ms_replay_svg(const ms_spec_t *spec, const char *title, const ms_replay_point_t *points,
                       size_t n, ms_buf_t *out)
{
    ms_buf_t doc;
    ms_err_t err;

    /* Built whole without a cap (it grows with n only: the caller thins the
     * points to what a chart can show), then appended once, so the document
     * is either all there or not at all. */
    ms_buf_init(&doc, SIZE_MAX);
    document(spec, title, points, n, &doc);
    err = doc.data != NULL ? ms_buf_append(out, doc.data, doc.len) : MS_ERR_NOMEM;
    ms_buf_cleanup(&doc);
    return err;
}
