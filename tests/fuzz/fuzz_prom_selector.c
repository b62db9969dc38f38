/*
 * fuzz_prom_selector.c - libFuzzer target for the PromQL selector scanner
 * and the --user-queries check.
 *
 * Input: a query template (up to the first NUL, at most 8 KiB: the CRD's
 * limit). Besides crashes and overreads (the template sits in an exact-size
 * buffer), it holds the scanner and the check to their contracts:
 *   - every reported selector and matcher lies inside the query, in order,
 *     without overlap; values are whole quoted literals;
 *   - errors are MS_ERR_PARSE / MS_ERR_INVALID with a one-line message;
 *   - ms_prom_query_window reads exactly the queries the scanner reads and
 *     gives a finite number of seconds >= 0 (0 on an error);
 *     ALLOW always passes, DENY never does;
 *   - when NAMESPACED passes, every selector carries namespace="{{namespace}}",
 *     and - the property the whole check exists for - so does every selector
 *     of the template once expanded (ms_prom_template_expand), now with the
 *     real namespace: expansion, however hostile the other values, never
 *     adds, removes or unrestricts a selector.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_QUERY 8192
#define NAMESPACE "fuzz-ns"

typedef struct {
    const char *q;
    size_t len;
    size_t n;
    size_t next;       /* selectors start at or after this */
    const char *want;  /* NULL, or the exact namespace value every selector must match */
    size_t stop_after; /* 0: never */
} walk_t;

static void one_line(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL || strchr(s, '\n') != NULL || strchr(s, '\r') != NULL)
        abort();
}

static bool inside(const walk_t *w, const char *p, size_t n)
{
    return p >= w->q && p + n <= w->q + w->len;
}

static bool is_quote(char c)
{
    return c == '"' || c == '\'' || c == '`';
}

/* The matcher namespace="<want>" (want: the text between the quotes; for
 * the placeholder, spaces inside the braces are allowed as the expander
 * allows them). */
static bool restricts(const ms_prom_matcher_t *m, const char *want)
{
    const char *v = m->value + 1;
    size_t n = m->value_len - 2;
    bool bare = m->name_len == 9 && memcmp(m->name, "namespace", 9) == 0;
    bool quoted = m->name_len == 11 && memcmp(m->name + 1, "namespace", 9) == 0;

    if (!(bare || quoted) || m->op != MS_PROM_MATCH_EQ)
        return false;
    if (strcmp(want, "{{namespace}}") == 0) {
        if (n < 4 || memcmp(v, "{{", 2) != 0 || memcmp(v + n - 2, "}}", 2) != 0)
            return false;
        v += 2;
        n -= 4;
        while (n > 0 && *v == ' ')
            v++, n--;
        while (n > 0 && v[n - 1] == ' ')
            n--;
        want = "namespace";
    }
    return n == strlen(want) && memcmp(v, want, n) == 0;
}

static bool visit(const ms_prom_selector_t *sel, void *ctx)
{
    walk_t *w = ctx;
    bool ok = false;

    if (sel->len == 0 || sel->offset < w->next || sel->offset + sel->len > w->len)
        abort();
    w->next = sel->offset + sel->len;
    if (sel->metric != NULL &&
        (sel->metric != w->q + sel->offset || sel->metric_len == 0 || sel->metric_len > sel->len))
        abort();
    if (sel->metric == NULL && w->q[sel->offset] != '{')
        abort();
    if (sel->nmatchers > MS_PROM_MAX_MATCHERS)
        abort();
    for (size_t i = 0; i < sel->nmatchers; i++) {
        const ms_prom_matcher_t *m = &sel->matchers[i];
        if ((unsigned)m->op > MS_PROM_MATCH_NRE || m->value_len < 2 ||
            !inside(w, m->value, m->value_len) || !is_quote(m->value[0]) ||
            m->value[m->value_len - 1] != m->value[0])
            abort();
        if (!inside(w, m->name, m->name_len) &&
            !(m->name_len == 8 && memcmp(m->name, "__name__", 8) == 0))
            abort();
        if (w->want && restricts(m, w->want))
            ok = true;
    }
    if (w->want && !ok)
        abort(); /* a selector the check should have refused */
    w->n++;
    return w->stop_after == 0 || w->n < w->stop_after;
}

/* Scan q; returns the selector count, or (size_t)-1 when unreadable. */
static size_t walk(const char *q, const char *want, size_t stop_after)
{
    walk_t w = {.q = q, .len = strlen(q), .want = want, .stop_after = stop_after};
    char err[MS_ERRBUF_SIZE];
    ms_err_t rc;

    err[0] = '\0';
    rc = ms_prom_selectors_scan(q, visit, &w, err, sizeof err);
    if (rc == MS_OK)
        return w.n;
    if (rc != MS_ERR_PARSE || w.want != NULL)
        abort();
    one_line(err, sizeof err);
    return (size_t)-1;
}

/* Expand with vars; when that works, the expansion must keep every selector
 * and restrict each to the real namespace. */
static void expand_and_recheck(const char *tmpl, size_t nsel, const ms_prom_template_vars_t *vars)
{
    char err[MS_ERRBUF_SIZE];
    char *out = NULL;

    if (ms_prom_template_expand(tmpl, vars, &out, err, sizeof err) != MS_OK)
        return; /* refused (a backquote for a `raw` string, a bad placeholder): nothing runs */
    if (walk(out, NAMESPACE, 0) != nsel)
        abort();
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ms_prom_template_vars_t hostile = {NAMESPACE, "a`b\"c'd\\e\nf}{g{{h}}",
                                                    "K`) or up #\r", "p-1|p\\.2\"`'\\"};
    static const ms_prom_template_vars_t plain = {NAMESPACE, "web\n}", "Deployment", "web-1|web-2"};
    char err[MS_ERRBUF_SIZE];
    char *q;
    size_t n = size, nsel;
    ms_err_t rc;

    if (memchr(data, '\0', size) != NULL)
        n = (size_t)((const uint8_t *)memchr(data, '\0', size) - data);
    if (n > MAX_QUERY)
        return 0;
    /* An exact-size copy: reading past the terminator trips ASan. */
    q = malloc(n + 1);
    if (q == NULL)
        return 0;
    memcpy(q, data, n);
    q[n] = '\0';

    nsel = walk(q, NULL, 0);
    if (nsel != (size_t)-1 && nsel > 0 && walk(q, NULL, 1) != 1)
        abort(); /* stopping after the first selector reports exactly one */

    {
        /* The window of the ranges: read exactly when the query is, and a
         * number of seconds, never negative, NaN or infinite. */
        double window = -1;
        rc = ms_prom_query_window(q, &window, err, sizeof err);
        if ((rc == MS_OK) != (nsel != (size_t)-1) || !(window >= 0) || !isfinite(window) ||
            (rc != MS_OK && window != 0))
            abort();
        if (rc != MS_OK)
            one_line(err, sizeof err);
    }

    if (ms_prom_user_query_check(MS_USER_QUERIES_ALLOW, q, err, sizeof err) != MS_OK)
        abort();
    if (ms_prom_user_query_check(MS_USER_QUERIES_DENY, q, err, sizeof err) != MS_ERR_INVALID)
        abort();
    one_line(err, sizeof err);

    err[0] = '\0';
    rc = ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, q, err, sizeof err);
    if (rc == MS_OK) {
        if (nsel == (size_t)-1 || walk(q, "{{namespace}}", 0) != nsel)
            abort(); /* passed, yet unreadable or a selector without the matcher */
        expand_and_recheck(q, nsel, &hostile);
        expand_and_recheck(q, nsel, &plain);
    } else {
        if (rc != MS_ERR_INVALID)
            abort();
        one_line(err, sizeof err);
    }
    free(q);
    return 0;
}
