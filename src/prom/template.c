/*
 * template.c - {{placeholder}} expansion in PromQL with escaping that fits
 * where the placeholder sits.
 *
 * The scanner follows PromQL's lexical states just far enough to know
 * whether it is in code, a comment, or a "...", '...' or `...` string, and
 * whether that string is the right-hand side of =~ / !~ (a regex). Values are
 * never pasted into code: a placeholder outside a string literal is an error,
 * so no value can change the query's structure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/buf.h"
#include "meshscaler/prom_sources.h"
#include "meshscaler/xalloc.h"

#define EXPANDED_MAX (1024u * 1024u)

/* A capped output: `too_long` remembers an append that did not fit. */
typedef struct {
    ms_buf_t b;
    bool too_long;
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
    ms_err_t err = ms_buf_append(&o->b, s, n);
    if (err == MS_ERR_NOMEM)
        ms_oom("prom template");
    if (err != MS_OK)
        o->too_long = true;
}

static bool is_meta(char c)
{
    return c != '\0' && strchr("\\.+*?()|[]{}^$", c) != NULL;
}

char *ms_prom_regex_escape(const char *s)
{
    size_t n = 0;
    char *out, *o;

    for (const char *p = s; *p; p++)
        n += is_meta(*p) ? 2 : 1;
    out = ms_xmalloc(n + 1);
    o = out;
    for (const char *p = s; *p; p++) {
        if (is_meta(*p))
            *o++ = '\\';
        *o++ = *p;
    }
    *o = '\0';
    return out;
}

char *ms_prom_pod_regex(const char *const *pods, size_t n)
{
    out_t b = {.too_long = false};

    ms_buf_init(&b.b, (size_t)-1);
    put(&b, "", 0);
    for (size_t i = 0; i < n; i++) {
        char *e = ms_prom_regex_escape(pods[i]);
        if (i > 0)
            put(&b, "|", 1);
        put(&b, e, strlen(e));
        free(e);
    }
    return b.b.data;
}

/* Append value escaped for a string literal opened by `quote`. */
static bool put_string_escaped(out_t *b, const char *v, char quote)
{
    static const char hex[] = "0123456789abcdef";

    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        unsigned char c = *p;
        if (quote == '`') {
            if (c == '`')
                return false; /* a raw string cannot hold its own quote */
            put(b, (const char *)p, 1);
        } else if (c == '\\' || c == (unsigned char)quote) {
            char esc[2] = {'\\', (char)c};
            put(b, esc, 2);
        } else if (c == '\n') {
            put(b, "\\n", 2);
        } else if (c == '\r') {
            put(b, "\\r", 2);
        } else if (c == '\t') {
            put(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            put(b, esc, 4);
        } else {
            put(b, (const char *)p, 1);
        }
    }
    return true;
}

/* True when the string literal starting at tmpl[at] follows =~ or !~. */
static bool after_regex_op(const char *tmpl, size_t at)
{
    while (at > 0 && (tmpl[at - 1] == ' ' || tmpl[at - 1] == '\t' || tmpl[at - 1] == '\n'))
        at--;
    return at >= 2 && tmpl[at - 1] == '~' && (tmpl[at - 2] == '=' || tmpl[at - 2] == '!');
}

/* Which variable a placeholder names; NULL (and *known false) when none. */
static const char *lookup(const ms_prom_template_vars_t *v, const char *name, size_t len,
                          bool *known, bool *is_regex)
{
    *known = true;
    *is_regex = false;
    if (len == 9 && memcmp(name, "namespace", 9) == 0)
        return v->namespace_name;
    if (len == 4 && memcmp(name, "name", 4) == 0)
        return v->name;
    if (len == 4 && memcmp(name, "kind", 4) == 0)
        return v->kind;
    if (len == 8 && memcmp(name, "podRegex", 8) == 0) {
        *is_regex = true;
        return v->pod_regex;
    }
    *known = false;
    return NULL;
}

/* The placeholder at tmpl[at] ("{{ name }}"), inside a string literal
 * opened by quote (0: in code, refused), appended to b as that literal
 * needs it: escaped for the quote, and also as a regex in a literal after
 * =~ or !~ (except {{podRegex}}, a regex already). *next: the byte after
 * "}}". MS_ERR_INVALID with errbuf naming what was wrong. */
static ms_err_t expand_placeholder(const char *tmpl, size_t at, const ms_prom_template_vars_t *vars,
                                   char quote, bool regex_literal, out_t *b, size_t *next,
                                   char *errbuf, size_t errlen)
{
    const char *name = tmpl + at + 2, *end = strstr(name, "}}");
    const char *value;
    size_t len;
    bool known, is_regex, ok;

    if (end == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "unclosed {{ at byte %zu", at);
    len = (size_t)(end - name);
    while (len > 0 && *name == ' ')
        name++, len--;
    while (len > 0 && name[len - 1] == ' ')
        len--;
    value = lookup(vars, name, len, &known, &is_regex);
    if (!known)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "unknown placeholder {{%.*s}} (use namespace, name, kind, podRegex)",
                       (int)(len > 40 ? 40 : len), name);
    if (quote == 0)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "{{%.*s}} must be inside a string literal, e.g. \"{{%.*s}}\"", (int)len,
                       name, (int)len, name);
    if (value == NULL && is_regex) /* the pods are not known: "" would match none of the
                                      target's series, a zero where the truth is missing */
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "{{podRegex}} has no value: the target's pods are not known");
    if (value == NULL)
        value = "";
    if (regex_literal && !is_regex) {
        char *escaped = ms_prom_regex_escape(value);
        ok = put_string_escaped(b, escaped, quote);
        free(escaped);
    } else {
        ok = put_string_escaped(b, value, quote);
    }
    if (!ok)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "the value of {{%.*s}} contains a backquote and cannot go in a `raw` string",
                       (int)len, name);
    *next = (size_t)(end - tmpl) + 2;
    return MS_OK;
}

ms_err_t ms_prom_template_expand(const char *tmpl, const ms_prom_template_vars_t *vars, char **out,
                                 char *errbuf, size_t errlen)
{
    out_t b = {.too_long = false};
    char quote = 0; /* 0: code; '"', '\'' or '`': inside that string */
    bool regex_literal = false;
    ms_err_t err = MS_OK;
    size_t i = 0;

    ms_buf_init(&b.b, EXPANDED_MAX);
    put(&b, "", 0);
    while (tmpl[i] != '\0') {
        char c = tmpl[i];

        if (c == '{' && tmpl[i + 1] == '{') {
            err = expand_placeholder(tmpl, i, vars, quote, regex_literal, &b, &i, errbuf, errlen);
            if (err != MS_OK)
                goto out;
            continue;
        }
        if (quote == 0) {
            if (c == '#') { /* comment to the end of the line */
                size_t n = strcspn(tmpl + i, "\r\n");
                put(&b, tmpl + i, n);
                i += n;
                continue;
            }
            if (c == '"' || c == '\'' || c == '`') {
                quote = c;
                regex_literal = after_regex_op(tmpl, i);
            }
        } else if (c == '\\' && quote != '`' && tmpl[i + 1] != '\0') {
            put(&b, tmpl + i, 2); /* an escape: the next byte cannot close the string */
            i += 2;
            continue;
        } else if (c == quote) {
            quote = 0;
        }
        put(&b, &c, 1);
        i++;
    }
    if (b.too_long) {
        err = ms_errf(errbuf, errlen, MS_ERR_INVALID, "the expanded query is too long");
        goto out;
    }
    *out = b.b.data;
    b.b.data = NULL;
out:
    ms_buf_cleanup(&b.b);
    return err;
}
