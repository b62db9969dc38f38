/*
 * log.c - one line per event, logfmt or JSON, level checked first.
 *
 * Lines are built in a stack buffer and written with one fwrite under the
 * stream lock, so lines from different threads never interleave.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "meshscaler/buf.h"
#include "meshscaler/log.h"

static ms_log_level_t log_level = MS_LOG_INFO;
static ms_log_format_t log_format = MS_LOG_TEXT;
static FILE *log_out = NULL;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void ms_log_setup(ms_log_level_t level, ms_log_format_t format, FILE *out)
{
    log_level = level;
    log_format = format;
    log_out = out;
}

bool ms_log_enabled(ms_log_level_t level)
{
    return level <= log_level;
}

bool ms_log_level_parse(const char *name, ms_log_level_t *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0) {
            *out = (ms_log_level_t)i;
            return true;
        }
    return false;
}

bool ms_log_format_parse(const char *name, ms_log_format_t *out)
{
    if (strcmp(name, "text") == 0)
        *out = MS_LOG_TEXT;
    else if (strcmp(name, "json") == 0)
        *out = MS_LOG_JSON;
    else
        return false;
    return true;
}

/* A line holds at most LOG_LINE_MAX - 1 bytes of text (the rest is cut),
 * then '\n'. */
#define LOG_LINE_MAX 4096

/* A string value: JSON-escaped, or logfmt-quoted when it needs quotes. */
static void add_string(ms_fixbuf_t *l, const char *s)
{
    bool quote = log_format == MS_LOG_JSON || s[0] == '\0' || strpbrk(s, " =\"\\\t\n\r") != NULL;

    if (quote)
        ms_fixbuf_appendf(l, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            ms_fixbuf_appendf(l, "\\%c", *c);
        else if (*c == '\n')
            ms_fixbuf_appendf(l, "\\n");
        else if (*c < 0x20)
            ms_fixbuf_appendf(l, "\\u%04x", *c);
        else
            ms_fixbuf_appendf(l, "%c", *c);
    }
    if (quote)
        ms_fixbuf_appendf(l, "\"");
}

static void add_field(ms_fixbuf_t *l, const ms_log_field_t *f)
{
    if (log_format == MS_LOG_JSON) {
        ms_fixbuf_appendf(l, ",");
        add_string(l, f->key);
        ms_fixbuf_appendf(l, ":");
    } else {
        ms_fixbuf_appendf(l, " %s=", f->key);
    }
    switch (f->type) {
    case MS_LOG_FIELD_STR:
        add_string(l, f->v.s ? f->v.s : "");
        break;
    case MS_LOG_FIELD_INT:
        ms_fixbuf_appendf(l, "%lld", f->v.i);
        break;
    case MS_LOG_FIELD_DOUBLE:
        if (isfinite(f->v.d))
            ms_fixbuf_appendf(l, "%.6g", f->v.d);
        else
            ms_fixbuf_appendf(l, log_format == MS_LOG_JSON ? "null" : "NaN");
        break;
    case MS_LOG_FIELD_NONE:
        ms_fixbuf_appendf(l, log_format == MS_LOG_JSON ? "null" : "\"\"");
        break;
    }
}

void ms_log_write(ms_log_level_t level, const char *msg, const ms_log_field_t *fields, size_t n)
{
    char line[LOG_LINE_MAX];
    ms_fixbuf_t l;
    size_t len;
    struct timespec ts;
    struct tm tm;
    char when[40];
    FILE *out = log_out ? log_out : stderr;

    ms_fixbuf_init(&l, line, sizeof line);
    clock_gettime(CLOCK_REALTIME, &ts); /* wall time: a timestamp users read */
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (log_format == MS_LOG_JSON) {
        ms_fixbuf_appendf(&l, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":", when,
                          ts.tv_nsec / 1000000, level_names[level]);
        add_string(&l, msg);
    } else {
        ms_fixbuf_appendf(&l, "ts=%s.%03ldZ level=%s msg=", when, ts.tv_nsec / 1000000,
                          level_names[level]);
        add_string(&l, msg);
    }
    for (size_t i = 0; i < n; i++)
        if (fields[i].key != NULL)
            add_field(&l, &fields[i]);
    if (log_format == MS_LOG_JSON)
        ms_fixbuf_appendf(&l, "}");
    len = l.used < sizeof line - 1 ? l.used : sizeof line - 1;
    line[len++] = '\n';
    flockfile(out);
    fwrite(line, 1, len, out);
    fflush(out);
    funlockfile(out);
}
