/*
 * expo.c - the Prometheus text exposition format (0.0.4), read line by line
 * from chunks, keeping only the samples of the families asked for.
 *
 * Grammar read (https://prometheus.io/docs/instrumenting/exposition_formats/):
 *   line     = blank* ( comment | sample )? blank* CR?
 *   comment  = "#" ( " HELP " name text | " TYPE " name type | " EOF" | text )
 *   sample   = name ( "{" ( label "=" '"' escaped '"' ","? )* "}" )? value timestamp? exemplar?
 * with OpenMetrics' "# EOF" (nothing may follow it) and exemplars
 * (" # {...} v") tolerated, so an exporter that answers OpenMetrics can be
 * read too. Values are Go ParseFloat's (strtod's) numbers: NaN, +Inf, -Inf,
 * exponents. Every scan is bounded by the line's end: the input is never
 * read past what was fed, and never needs a NUL.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/scrape.h"

typedef struct {
    const char *name;
    size_t name_len;
    const char *value; /* escaped, between the quotes */
    size_t value_len;
} label_t;

typedef struct {
    const char *name;
    size_t name_len;
    label_t labels[MS_SCRAPE_MAX_LABELS];
    size_t nlabels;
    double value;
} sample_t;

__attribute__((format(printf, 4, 5))) static ms_err_t bad(ms_scrape_parser_t *p, char *errbuf,
                                                          size_t errlen, const char *fmt, ...)
{
    char what[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    p->err = MS_ERR_PARSE;
    return ms_errf(errbuf, errlen, MS_ERR_PARSE, "line %zu: %s", p->lineno, what);
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}
static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static bool name_start(char c)
{
    return is_alpha(c) || c == ':';
}
static bool name_char(char c)
{
    return name_start(c) || is_digit(c);
}
static bool label_char(char c)
{
    return is_alpha(c) || is_digit(c);
}

static const char *skip_blanks(const char *s, const char *e)
{
    while (s < e && is_blank(*s))
        s++;
    return s;
}

/* A printable stand-in for c in messages. */
static int shown(char c)
{
    return (c >= 0x20 && c < 0x7f) ? c : '?';
}

/* The word at s (up to a blank or e) equals w. */
static bool word_is(const char *s, const char *e, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(e - s) >= n && memcmp(s, w, n) == 0 && (s + n == e || is_blank(s[n]));
}

static const char *scan_name(const char *s, const char *e)
{
    if (s >= e || !name_start(*s))
        return NULL;
    while (s < e && name_char(*s))
        s++;
    return s;
}

/* strtod over [s, e): the whole token must be a number. */
static bool number(const char *s, const char *e, double *out)
{
    char tmp[64];
    char *end;
    size_t n = (size_t)(e - s);

    if (n == 0 || n >= sizeof tmp)
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    *out = strtod(tmp, &end);
    return end == tmp + n;
}

static ms_err_t comment(ms_scrape_parser_t *p, const char *s, const char *e, char *errbuf,
                        size_t errlen)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "summary",       "untyped",
                                        "unknown", "info",  "stateset",  "gaugehistogram"};
    bool help, type;
    const char *n, *name;

    s = skip_blanks(s + 1, e);
    if (word_is(s, e, "EOF") && skip_blanks(s + 3, e) == e) {
        p->eof = true;
        return MS_OK;
    }
    help = word_is(s, e, "HELP");
    type = word_is(s, e, "TYPE");
    if (!help && !type)
        return MS_OK; /* a plain comment */
    s = skip_blanks(s + 4, e);
    n = scan_name(s, e);
    if (n == NULL || (n < e && !is_blank(*n)))
        return bad(p, errbuf, errlen, "# %s wants a metric name", help ? "HELP" : "TYPE");
    if (help)
        return MS_OK; /* the docstring is free text */
    name = s;
    s = skip_blanks(n, e);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (word_is(s, e, types[i]) && skip_blanks(s + strlen(types[i]), e) == e)
            return MS_OK;
    return bad(p, errbuf, errlen, "# TYPE %.*s: unknown type \"%.*s\"",
               (int)(n - name > 60 ? 60 : n - name), name, (int)(e - s > 40 ? 40 : e - s), s);
}

/* One label value: s at the opening quote; returns the char after the
 * closing quote, or NULL when the line ends first. */
static const char *scan_value(const char *s, const char *e, label_t *l)
{
    const char *v = ++s;

    while (s < e && *s != '"') {
        if (*s == '\\' && ++s == e)
            return NULL;
        s++;
    }
    if (s >= e)
        return NULL;
    l->value = v;
    l->value_len = (size_t)(s - v);
    return s + 1;
}

/* "{...}" at s; returns the char after "}", or NULL (the error written). */
static const char *scan_labels(ms_scrape_parser_t *p, const char *s, const char *e, sample_t *out,
                               char *errbuf, size_t errlen)
{
    for (s++;;) {
        label_t l;
        s = skip_blanks(s, e);
        if (s < e && *s == '}')
            return s + 1;
        if (s >= e || !is_alpha(*s))
            goto bad_name;
        l.name = s;
        while (s < e && label_char(*s))
            s++;
        l.name_len = (size_t)(s - l.name);
        s = skip_blanks(s, e);
        if (s >= e || *s != '=') {
            bad(p, errbuf, errlen, "label %.*s: want '=' then a quoted value", (int)l.name_len,
                l.name);
            return NULL;
        }
        s = skip_blanks(s + 1, e);
        if (s >= e || *s != '"' || (s = scan_value(s, e, &l)) == NULL) {
            bad(p, errbuf, errlen, "label %.*s: want a quoted value, closed", (int)l.name_len,
                l.name);
            return NULL;
        }
        if (out->nlabels == MS_SCRAPE_MAX_LABELS) {
            bad(p, errbuf, errlen, "more than %d labels", MS_SCRAPE_MAX_LABELS);
            return NULL;
        }
        out->labels[out->nlabels++] = l;
        s = skip_blanks(s, e);
        if (s < e && *s == ',')
            s++;
        else if (s >= e || *s != '}') {
            bad(p, errbuf, errlen, "want ',' or '}' after label %.*s", (int)l.name_len, l.name);
            return NULL;
        }
    }
bad_name:
    if (s >= e)
        bad(p, errbuf, errlen, "labels not closed with '}'");
    else
        bad(p, errbuf, errlen, "want a label name, found '%c'", shown(*s));
    return NULL;
}

/* The escaped label value raw[0..n) against want. */
static bool value_matches(const char *raw, size_t n, const char *want, ms_scrape_match_op_t op)
{
    size_t i = 0;

    while (i < n) {
        char c = raw[i++];
        if (c == '\\' && i < n) {
            c = raw[i++];
            if (c == 'n')
                c = '\n';
        }
        if (*want == '\0')
            return op == MS_SCRAPE_MATCH_PREFIX;
        if (c != *want++)
            return false;
    }
    return *want == '\0';
}

static bool matcher_passes(const sample_t *smp, const ms_scrape_matcher_t *m)
{
    size_t len = strlen(m->label);

    for (size_t i = 0; i < smp->nlabels; i++) {
        const label_t *l = &smp->labels[i];
        if (l->name_len == len && memcmp(l->name, m->label, len) == 0)
            return value_matches(l->value, l->value_len, m->value, m->op);
    }
    return m->value[0] == '\0'; /* absent is "": Prometheus' matcher semantics */
}

static void count(ms_scrape_parser_t *p, const sample_t *smp)
{
    for (size_t i = 0; i < p->nfamilies; i++) {
        const ms_scrape_family_t *f = &p->families[i];
        ms_scrape_total_t *t = &p->totals[i];
        bool ok =
            strlen(f->name) == smp->name_len && memcmp(f->name, smp->name, smp->name_len) == 0;

        for (size_t m = 0; ok && m < f->nmatchers; m++)
            ok = matcher_passes(smp, &f->matchers[m]);
        if (!ok)
            continue;
        if (isnan(smp->value))
            t->nan++;
        else if (!f->positive_only || smp->value > 0) {
            t->sum += smp->value;
            t->samples++;
        }
    }
}

/* value [timestamp] [# exemplar] at s. */
static ms_err_t value_part(ms_scrape_parser_t *p, const char *s, const char *e, sample_t *smp,
                           char *errbuf, size_t errlen)
{
    const char *v = s;
    double ts;

    while (s < e && !is_blank(*s))
        s++;
    if (v == s)
        return bad(p, errbuf, errlen, "%.*s: no value", (int)smp->name_len, smp->name);
    if (!number(v, s, &smp->value))
        return bad(p, errbuf, errlen, "value \"%.*s\" is not a number",
                   (int)(s - v > 40 ? 40 : s - v), v);
    s = skip_blanks(s, e);
    if (s < e && *s != '#') {
        const char *t = s;
        while (s < e && !is_blank(*s))
            s++;
        if (!number(t, s, &ts) || !isfinite(ts))
            return bad(p, errbuf, errlen, "timestamp \"%.*s\" is not a number",
                       (int)(s - t > 40 ? 40 : s - t), t);
        s = skip_blanks(s, e);
    }
    if (s < e && *s != '#')
        return bad(p, errbuf, errlen, "unexpected '%c' after the value", shown(*s));
    return MS_OK; /* an exemplar ("# {...} v") is not read */
}

static ms_err_t sample(ms_scrape_parser_t *p, const char *s, const char *e, char *errbuf,
                       size_t errlen)
{
    sample_t smp = {0};
    const char *n = scan_name(s, e);

    if (n == NULL)
        return bad(p, errbuf, errlen, "want a metric name, found '%c'", shown(*s));
    smp.name = s;
    smp.name_len = (size_t)(n - s);
    smp.nlabels = 0;
    s = n;
    if (s < e && is_blank(*s))
        s = skip_blanks(s, e); /* "name {": client_golang's parser allows it too */
    if (s < e && *s == '{') {
        s = scan_labels(p, s, e, &smp, errbuf, errlen);
        if (s == NULL)
            return MS_ERR_PARSE;
    } else if (s == n && s < e) {
        return bad(p, errbuf, errlen, "unexpected '%c' after the metric name", shown(*s));
    }
    s = skip_blanks(s, e);
    if (value_part(p, s, e, &smp, errbuf, errlen) != MS_OK)
        return MS_ERR_PARSE;
    p->lines++;
    count(p, &smp);
    return MS_OK;
}

static ms_err_t parse_line(ms_scrape_parser_t *p, const char *s, size_t n, char *errbuf,
                           size_t errlen)
{
    const char *e = s + n;

    if (e > s && e[-1] == '\r')
        e--;
    s = skip_blanks(s, e);
    if (s == e)
        return MS_OK;
    if (p->eof)
        return bad(p, errbuf, errlen, "text after \"# EOF\"");
    if (*s == '#')
        return comment(p, s, e, errbuf, errlen);
    return sample(p, s, e, errbuf, errlen);
}

void ms_scrape_parser_init(ms_scrape_parser_t *p, const ms_scrape_family_t *families, size_t n,
                           size_t max_bytes)
{
    memset(p, 0, offsetof(ms_scrape_parser_t, carry));
    p->families = families;
    p->nfamilies = n;
    p->max_bytes = max_bytes;
}

static ms_err_t stopped(const ms_scrape_parser_t *p, char *errbuf, size_t errlen)
{
    return ms_errf(errbuf, errlen, p->err, "the parser stopped at an earlier error (line %zu)",
                   p->lineno);
}

static ms_err_t too_long(ms_scrape_parser_t *p, char *errbuf, size_t errlen)
{
    p->err = MS_ERR_TOOLARGE;
    return ms_errf(errbuf, errlen, p->err, "line %zu: longer than %d bytes", p->lineno + 1,
                   MS_SCRAPE_MAX_LINE);
}

ms_err_t ms_scrape_parser_feed(ms_scrape_parser_t *p, const char *data, size_t len, char *errbuf,
                               size_t errlen)
{
    if (p->err != MS_OK)
        return stopped(p, errbuf, errlen);
    if (p->nfamilies > MS_SCRAPE_MAX_FAMILIES) {
        p->err = MS_ERR_INVALID;
        return ms_errf(errbuf, errlen, p->err, "%zu families asked for, at most %d", p->nfamilies,
                       MS_SCRAPE_MAX_FAMILIES);
    }
    if (len > p->max_bytes - p->bytes) {
        p->err = MS_ERR_TOOLARGE;
        return ms_errf(errbuf, errlen, p->err, "the answer is larger than %zu bytes", p->max_bytes);
    }
    p->bytes += len;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl != NULL ? (size_t)(nl - data) : len;
        const char *line = data;
        size_t n = take;

        if (take > MS_SCRAPE_MAX_LINE - p->carry_len)
            return too_long(p, errbuf, errlen);
        if (p->carry_len > 0 || nl == NULL) {
            memcpy(p->carry + p->carry_len, data, take);
            p->carry_len += take;
            if (nl == NULL)
                return MS_OK; /* the rest of the line comes with the next chunk */
            line = p->carry;
            n = p->carry_len;
            p->carry_len = 0;
        }
        p->lineno++;
        if (parse_line(p, line, n, errbuf, errlen) != MS_OK)
            return p->err;
        data += take + 1;
        len -= take + 1;
    }
    return MS_OK;
}

ms_err_t ms_scrape_parser_finish(ms_scrape_parser_t *p, char *errbuf, size_t errlen)
{
    if (p->err != MS_OK)
        return stopped(p, errbuf, errlen);
    if (p->carry_len > 0) {
        size_t n = p->carry_len;
        p->carry_len = 0;
        p->lineno++;
        if (parse_line(p, p->carry, n, errbuf, errlen) != MS_OK)
            return p->err;
    }
    return MS_OK;
}

ms_err_t ms_scrape_parse(const char *buf, size_t len, const ms_scrape_family_t *families, size_t n,
                         size_t max_bytes, ms_scrape_total_t *totals, char *errbuf, size_t errlen)
{
    ms_scrape_parser_t *p = calloc(1, sizeof *p);
    ms_err_t err;

    if (p == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_NOMEM, "no memory for a parser");
    ms_scrape_parser_init(p, families, n, max_bytes);
    err = ms_scrape_parser_feed(p, buf, len, errbuf, errlen);
    if (err == MS_OK)
        err = ms_scrape_parser_finish(p, errbuf, errlen);
    if (err == MS_OK)
        memcpy(totals, p->totals, n * sizeof *totals);
    free(p);
    return err;
}
