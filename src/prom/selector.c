/*
 * selector.c - the series selectors of a PromQL expression, and the
 * --user-queries policy that reads them.
 *
 * The scanner walks the query once, left to right, with Prometheus' lexical
 * rules (promql/parser/lex.go): blanks and # comments (to a CR or LF),
 * "..." and '...' strings with backslash escapes, `...` raw strings,
 * numbers and durations, words of [A-Za-z0-9_:], {label matchers},
 * [ranges and subqueries], parentheses and operators. Keywords are matched
 * without regard to case, as Prometheus does.
 *
 * What makes this more than a tokenizer is deciding which words are
 * selectors. Prometheus' grammar lets a metric be named after most keywords
 * (`sum`, `by`, `or`, `offset`, `start`, ...), so a word alone says little.
 * Two facts decide instead:
 *   - a word followed by "(" is never a selector (a function call, an
 *     aggregation, or a keyword; `metric(` is a syntax error), and
 *   - two operands never stand side by side, so right after a complete
 *     operand (a selector, number, string, ")" or "]") a word is an
 *     operator (and, or, unless, atan2) or a modifier (offset, anchored,
 *     smoothed); anywhere else it is an operand: a selector.
 * Anything the rules do not cover counts as a selector. The label lists of
 * by/without/on/ignoring/group_left/group_right and the arguments of
 * fill(...) hold only names or numbers; anything else in them is refused,
 * so nothing can hide there.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "meshscaler/prom.h"

/* How much of an offending selector a message quotes. */
#define EXCERPT_MAX 60

typedef bool (*call_fn)(const char *name, size_t len, size_t offset, void *ctx);
typedef bool (*range_fn)(const char *inside, size_t len, void *ctx);

typedef struct {
    const char *q;
    size_t i;             /* next byte to read */
    bool after_operand;   /* the last token completed an operand */
    size_t depth;         /* open parentheses */
    bool any;             /* a token was read */
    bool strict_comments; /* refuse a comment ended by a lone CR */
    ms_prom_selector_fn on_selector;
    call_fn on_call;   /* words followed by "(" */
    range_fn on_range; /* the inside of each [...] */
    void *ctx;
    bool stopped; /* a callback asked to stop */
    char *errbuf;
    size_t errlen;
} scan_t;

__attribute__((format(printf, 2, 3))) static ms_err_t fail(scan_t *s, const char *fmt, ...)
{
    va_list ap;

    if (s->errbuf == NULL || s->errlen == 0)
        return MS_ERR_PARSE;
    va_start(ap, fmt);
    vsnprintf(s->errbuf, s->errlen, fmt, ap);
    va_end(ap);
    for (char *p = s->errbuf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return MS_ERR_PARSE;
}

/* ---- characters and words ---- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
static bool is_alpha(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static bool is_alnum(char c)
{
    return is_alpha(c) || is_digit(c);
}
static bool is_quote(char c)
{
    return c == '"' || c == '\'' || c == '`';
}

/* "'x'" for a printable byte, "byte 0x07" otherwise, for messages. */
static const char *show(char c, char *buf, size_t cap)
{
    unsigned char u = (unsigned char)c;

    if (u >= 0x21 && u < 0x7f)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", u);
    return buf;
}

/* ASCII case-insensitive: is w[0..n) the keyword kw? */
static bool word_is(const char *w, size_t n, const char *kw)
{
    size_t k = strlen(kw);

    if (n != k)
        return false;
    for (size_t j = 0; j < n; j++) {
        char c = w[j];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != kw[j])
            return false;
    }
    return true;
}

/* Is w one of the NULL-terminated list? */
static bool word_in(const char *w, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (word_is(w, n, *list))
            return true;
    return false;
}

static const char *const aggregators[] = {
    "sum",  "avg",     "count",        "min",      "max",    "group",       "stddev", "stdvar",
    "topk", "bottomk", "count_values", "quantile", "limitk", "limit_ratio", NULL};
/* Lexed as numbers wherever they stand. */
static const char *const numbers[] = {"inf", "nan", NULL};
/* Never a metric name. */
static const char *const keywords[] = {"bool", "on", "ignoring", "group_left", "group_right", NULL};
/* Followed by "(": a label list. */
static const char *const grouping[] = {"by",         "without",     "on", "ignoring",
                                       "group_left", "group_right", NULL};
/* Followed by "(": a binary operator's fill value. */
static const char *const fills[] = {"fill", "fill_left", "fill_right", NULL};
/* After an operand: an operator or a modifier that wants an operand next. */
static const char *const infix[] = {"and", "or", "unless", "atan2", "offset", NULL};
/* After an operand: a modifier that completes it. */
static const char *const postfix[] = {"anchored", "smoothed", NULL};

/* Past blanks and comments from i. In strict mode a comment that a lone CR
 * ends is an error: Prometheus ends comments at CR or LF, the template
 * expander (template.c) only at LF, and text the two read differently must
 * not be checked. */
static ms_err_t skip_blank(scan_t *s, size_t i, size_t *out)
{
    const char *q = s->q;

    for (;;) {
        if (is_space(q[i])) {
            i++;
        } else if (q[i] == '#') {
            size_t at = i;
            while (q[i] != '\0' && q[i] != '\n' && q[i] != '\r')
                i++;
            if (s->strict_comments && q[i] == '\r' && q[i + 1] != '\n' && q[i + 1] != '\0')
                return fail(s,
                            "the comment at offset %zu ends at a carriage return; end it "
                            "with a line feed",
                            at);
        } else {
            *out = i;
            return MS_OK;
        }
    }
}

/* Past the string literal that opens at q[at]. */
static ms_err_t skip_string(scan_t *s, size_t at, size_t *out)
{
    const char *q = s->q;
    char quote = q[at];
    size_t i = at + 1;

    for (;;) {
        char c = q[i];
        if (c == '\0')
            return fail(s, "the string at offset %zu is never closed", at);
        if (c == quote) {
            *out = i + 1;
            return MS_OK;
        }
        if (quote != '`' && c == '\n')
            return fail(s, "the string at offset %zu holds a line break (write \\n)", at);
        if (quote != '`' && c == '\\') {
            if (q[i + 1] == '\0')
                return fail(s, "the string at offset %zu is never closed", at);
            i += 2; /* the escaped byte cannot close the string */
            continue;
        }
        i++;
    }
}

/* Past a number or duration at q[i] ("1", ".5", "1e-3", "0x1F", "1h30m",
 * "1_000"). Generous: whatever it swallows Prometheus reads as a number, a
 * duration or an error, never as a selector. */
static size_t skip_number(const char *q, size_t i)
{
    bool hex = q[i] == '0' && (q[i + 1] == 'x' || q[i + 1] == 'X');

    if (hex)
        i += 2;
    while (is_alnum(q[i]) || q[i] == '.') {
        char c = q[i++];
        if (!hex && (c == 'e' || c == 'E') && (q[i] == '+' || q[i] == '-') && is_digit(q[i + 1]))
            i++;
    }
    return i;
}

static size_t skip_word(const char *q, size_t i)
{
    while (is_alnum(q[i]) || q[i] == ':')
        i++;
    return i;
}

/* ---- the pieces ---- */

/* The operator and the quoted value of matcher m, from q[at] on (blanks
 * first); *end gets the offset after the value. */
static ms_err_t read_op_value(scan_t *s, const ms_prom_selector_t *sel, ms_prom_matcher_t *m,
                              size_t at, size_t *end)
{
    const char *q = s->q;
    size_t i = at, value_at;
    char b[16];
    ms_err_t err;

    if (q[i] == '=' && q[i + 1] == '~')
        m->op = MS_PROM_MATCH_RE, i += 2;
    else if (q[i] == '=')
        m->op = MS_PROM_MATCH_EQ, i += 1;
    else if (q[i] == '!' && q[i + 1] == '=')
        m->op = MS_PROM_MATCH_NE, i += 2;
    else if (q[i] == '!' && q[i + 1] == '~')
        m->op = MS_PROM_MATCH_NRE, i += 2;
    else
        return fail(s,
                    "want =, !=, =~ or !~ at offset %zu (in the selector at offset "
                    "%zu), not %s",
                    i, sel->offset, show(q[i], b, sizeof b));
    if ((err = skip_blank(s, i, &i)) != MS_OK)
        return err;
    if (!is_quote(q[i]))
        return fail(s,
                    "want a quoted label value at offset %zu (in the selector at "
                    "offset %zu), not %s",
                    i, sel->offset, show(q[i], b, sizeof b));
    value_at = i;
    if ((err = skip_string(s, i, &i)) != MS_OK)
        return err;
    m->value = q + value_at;
    m->value_len = i - value_at;
    *end = i;
    return MS_OK;
}

/* The matchers of the selector whose "{" is at q[open], into sel; *close
 * gets the offset of the "}". */
static ms_err_t read_matchers(scan_t *s, size_t open, ms_prom_selector_t *sel, size_t *close)
{
    const char *q = s->q;
    size_t i = open + 1;
    char b[16];
    ms_err_t err;

    for (;;) {
        ms_prom_matcher_t *m;
        size_t name_at;
        bool quoted;

        if ((err = skip_blank(s, i, &i)) != MS_OK)
            return err;
        if (q[i] == '\0')
            return fail(s, "the { at offset %zu is never closed", open);
        if (q[i] == '}')
            break;
        if (sel->nmatchers == MS_PROM_MAX_MATCHERS)
            return fail(s, "the selector at offset %zu has more than %d label matchers",
                        sel->offset, MS_PROM_MAX_MATCHERS);
        m = &sel->matchers[sel->nmatchers];
        name_at = i;
        if (is_alpha(q[i])) {
            while (is_alnum(q[i]))
                i++;
            quoted = false;
        } else if (is_quote(q[i])) {
            if ((err = skip_string(s, i, &i)) != MS_OK)
                return err;
            quoted = true;
        } else {
            return fail(s,
                        "want a label name at offset %zu (in the selector at offset %zu), "
                        "not %s",
                        i, sel->offset, show(q[i], b, sizeof b));
        }
        m->name = q + name_at;
        m->name_len = i - name_at;
        if ((err = skip_blank(s, i, &i)) != MS_OK)
            return err;
        if (quoted && (q[i] == ',' || q[i] == '}')) {
            /* {"metric.name", ...}: the metric's name as a lone string */
            m->value = m->name;
            m->value_len = m->name_len;
            m->name = "__name__";
            m->name_len = 8;
            m->op = MS_PROM_MATCH_EQ;
        } else if ((err = read_op_value(s, sel, m, i, &i)) != MS_OK) {
            return err;
        }
        sel->nmatchers++;
        if ((err = skip_blank(s, i, &i)) != MS_OK)
            return err;
        if (q[i] == ',') {
            i++;
            continue;
        }
        if (q[i] == '}')
            break;
        if (q[i] == '\0')
            return fail(s, "the { at offset %zu is never closed", open);
        return fail(s, "want , or } at offset %zu (in the selector at offset %zu), not %s", i,
                    sel->offset, show(q[i], b, sizeof b));
    }
    *close = i;
    return MS_OK;
}

/* A selector starting at `start`: a metric name up to name_end (none when
 * name_end == start), then matchers when q[brace] is "{". */
static ms_err_t read_selector(scan_t *s, size_t start, size_t name_end, size_t brace)
{
    ms_prom_selector_t sel;
    ms_err_t err;

    memset(&sel, 0, sizeof sel);
    sel.offset = start;
    if (name_end > start) {
        sel.metric = s->q + start;
        sel.metric_len = name_end - start;
    }
    if (s->q[brace] == '{') {
        size_t close = brace;
        if ((err = read_matchers(s, brace, &sel, &close)) != MS_OK)
            return err;
        s->i = close + 1;
    } else {
        s->i = name_end;
    }
    sel.len = s->i - start;
    s->after_operand = true;
    if (s->on_selector && !s->on_selector(&sel, s->ctx))
        s->stopped = true;
    return MS_OK;
}

/* A range, subquery or duration expression "[...]" opening at q[open]:
 * numbers, durations, step(), min(), max(), arithmetic and ":" only. */
static ms_err_t skip_brackets(scan_t *s, size_t open)
{
    const char *q = s->q;
    char b[16];

    for (size_t i = open + 1;; i++) {
        char c = q[i];
        if (c == ']') {
            s->i = i + 1;
            if (s->on_range && !s->on_range(q + open + 1, i - open - 1, s->ctx))
                s->stopped = true;
            return MS_OK;
        }
        if (c == '\0')
            return fail(s, "the [ at offset %zu is never closed", open);
        if (!is_alnum(c) && !is_space(c) && strchr(".:+-*/%^(),", c) == NULL)
            return fail(s, "unexpected %s at offset %zu inside the [...] at offset %zu",
                        show(c, b, sizeof b), i, open);
    }
}

/* The label list of by/without/on/ignoring/group_left/group_right opening
 * at q[open]: names (words or quoted) and commas. */
static ms_err_t skip_label_list(scan_t *s, const char *kw, size_t kwlen, size_t open)
{
    const char *q = s->q;
    size_t i = open + 1;
    char b[16];
    ms_err_t err;

    for (;;) {
        if ((err = skip_blank(s, i, &i)) != MS_OK)
            return err;
        if (q[i] == ')') {
            s->i = i + 1;
            return MS_OK;
        }
        if (is_alpha(q[i]) || q[i] == ':') {
            i = skip_word(q, i);
        } else if (is_quote(q[i])) {
            if ((err = skip_string(s, i, &i)) != MS_OK)
                return err;
        } else if (q[i] == ',') {
            i++;
        } else if (q[i] == '\0') {
            return fail(s, "the ( at offset %zu is never closed", open);
        } else {
            return fail(s,
                        "the label list of %.*s at offset %zu holds %s at offset %zu; "
                        "only label names belong there",
                        (int)kwlen, kw, open, show(q[i], b, sizeof b), i);
        }
    }
}

/* The value of fill(...) opening at q[open]: a signed number. */
static ms_err_t skip_fill(scan_t *s, const char *kw, size_t kwlen, size_t open)
{
    const char *q = s->q;
    size_t i = open + 1;
    ms_err_t err;

    for (;;) {
        if ((err = skip_blank(s, i, &i)) != MS_OK)
            return err;
        if (q[i] == ')') {
            s->i = i + 1;
            return MS_OK;
        }
        if (q[i] == '+' || q[i] == '-') {
            i++;
        } else if (is_digit(q[i]) || (q[i] == '.' && is_digit(q[i + 1]))) {
            i = skip_number(q, i);
        } else if (is_alpha(q[i]) && word_in(q + i, skip_word(q, i) - i, numbers)) {
            i = skip_word(q, i);
        } else if (q[i] == '\0') {
            return fail(s, "the ( at offset %zu is never closed", open);
        } else {
            return fail(s, "%.*s( at offset %zu: want a number at offset %zu", (int)kwlen, kw, open,
                        i);
        }
    }
}

/* The word at q[at]: a selector, or a keyword, function or number. */
static ms_err_t read_word(scan_t *s, size_t at)
{
    const char *q = s->q, *w = q + at;
    size_t end = skip_word(q, at), n = end - at, next;
    ms_err_t err;

    if ((err = skip_blank(s, end, &next)) != MS_OK)
        return err;
    if (q[next] == '(') {
        if (word_in(w, n, grouping)) {
            /* sum(x) by (a) completes an operand; on (a) wants one */
            bool completes = s->after_operand && (word_is(w, n, "by") || word_is(w, n, "without"));
            if ((err = skip_label_list(s, w, n, next)) != MS_OK)
                return err;
            s->after_operand = completes;
            return MS_OK;
        }
        if (word_in(w, n, fills)) {
            if ((err = skip_fill(s, w, n, next)) != MS_OK)
                return err;
            s->after_operand = false;
            return MS_OK;
        }
        /* A function call, an aggregation, or a keyword before "(". */
        if (s->on_call && !s->on_call(w, n, at, s->ctx))
            s->stopped = true;
        s->i = end;
        s->after_operand = false;
        return MS_OK;
    }
    if (word_in(w, n, numbers)) {
        s->i = end;
        s->after_operand = true;
        return MS_OK;
    }
    if (word_in(w, n, keywords)) {
        s->i = end;
        s->after_operand = false;
        return MS_OK;
    }
    if (s->after_operand) {
        if (word_in(w, n, infix)) {
            s->i = end;
            s->after_operand = false;
            return MS_OK;
        }
        if (word_in(w, n, postfix)) {
            s->i = end;
            return MS_OK;
        }
    } else if (word_in(w, n, aggregators) && is_alpha(q[next])) {
        size_t e2 = skip_word(q, next);
        if (word_is(q + next, e2 - next, "by") || word_is(q + next, e2 - next, "without")) {
            s->i = end; /* sum by (a) (...) */
            return MS_OK;
        }
    }
    return read_selector(s, at, end, next);
}

static ms_err_t scan(scan_t *s)
{
    const char *q = s->q;
    char b[16];
    ms_err_t err = MS_OK;

    if (q == NULL)
        return fail(s, "no query");
    for (;;) {
        size_t at;
        char c;

        if ((err = skip_blank(s, s->i, &at)) != MS_OK)
            return err;
        s->i = at;
        c = q[at];
        if (c == '\0')
            break;
        s->any = true;
        if (is_quote(c)) {
            err = skip_string(s, at, &s->i);
            s->after_operand = true;
        } else if (is_digit(c) || (c == '.' && is_digit(q[at + 1]))) {
            s->i = skip_number(q, at);
            s->after_operand = true;
        } else if (is_alpha(c) || c == ':') {
            err = read_word(s, at);
        } else if (c == '{') {
            err = read_selector(s, at, at, at);
        } else if (c == '(') {
            s->depth++;
            s->i++;
            s->after_operand = false;
        } else if (c == ')') {
            if (s->depth == 0)
                return fail(s, "unexpected ) at offset %zu", at);
            s->depth--;
            s->i++;
            s->after_operand = true;
        } else if (c == '[') {
            err = skip_brackets(s, at);
            s->after_operand = true;
        } else if (strchr("+-*/%^=!<>,@", c) != NULL) {
            s->i++;
            s->after_operand = false;
        } else {
            return fail(s, "unexpected %s at offset %zu", show(c, b, sizeof b), at);
        }
        if (err != MS_OK || s->stopped)
            return err;
    }
    if (s->depth > 0)
        return fail(s, "the query ends with %zu ( not closed", s->depth);
    if (!s->any)
        return fail(s, "the query is empty");
    return MS_OK;
}

ms_err_t ms_prom_selectors_scan(const char *query, ms_prom_selector_fn fn, void *ctx, char *errbuf,
                                size_t errlen)
{
    scan_t s = {.q = query, .on_selector = fn, .ctx = ctx, .errbuf = errbuf, .errlen = errlen};

    return scan(&s);
}

/* ---- the windows of ranges ---- */

/* A PromQL duration ("90s", "1h30m", "500ms") or a plain number of seconds
 * ("300", "2.5"), in seconds; false for anything else (step(), arithmetic,
 * an empty range). */
static bool duration_seconds(const char *d, size_t n, double *out)
{
    static const struct {
        const char *unit;
        double seconds;
    } units[] = {{"ms", 0.001}, {"s", 1},      {"m", 60},      {"h", 3600},
                 {"d", 86400},  {"w", 604800}, {"y", 31536000}};
    double total = 0;
    size_t i = 0;
    char *end;

    while (n > 0 && is_space(d[n - 1]))
        n--;
    while (i < n && is_space(d[i]))
        i++;
    if (i == n || !is_digit(d[i]))
        return false;
    /* A plain number: every byte a digit or one dot. */
    if (strspn(d + i, "0123456789.") >= n - i) {
        char num[32];
        if (n - i >= sizeof num)
            return false;
        memcpy(num, d + i, n - i);
        num[n - i] = '\0';
        total = strtod(num, &end);
        if (*end != '\0')
            return false;
        *out = total;
        return true;
    }
    while (i < n) {
        double v = 0;
        size_t u, len = 0;

        if (!is_digit(d[i]))
            return false;
        for (; i < n && is_digit(d[i]); i++)
            v = v * 10 + (d[i] - '0');
        for (u = 0; u < sizeof units / sizeof units[0]; u++) {
            len = strlen(units[u].unit);
            if (len <= n - i && memcmp(d + i, units[u].unit, len) == 0 &&
                (len == 2 || i + 1 == n || is_digit(d[i + 1])))
                break;
        }
        if (u == sizeof units / sizeof units[0])
            return false;
        total += v * units[u].seconds;
        i += len;
    }
    *out = total;
    return true;
}

/* The range of one [...]: a range "[5m]" or a subquery "[30m:1m]" reads its
 * first duration; a duration expression reads nothing we can name. */
static bool longest_range(const char *inside, size_t len, void *ctx)
{
    double *longest = ctx, seconds;
    const char *colon = memchr(inside, ':', len);

    if (duration_seconds(inside, colon ? (size_t)(colon - inside) : len, &seconds) &&
        isfinite(seconds) && seconds > *longest)
        *longest = seconds;
    return true;
}

ms_err_t ms_prom_query_window(const char *query, double *seconds, char *errbuf, size_t errlen)
{
    double longest = 0;
    scan_t s = {
        .q = query, .on_range = longest_range, .ctx = &longest, .errbuf = errbuf, .errlen = errlen};
    ms_err_t err = scan(&s);

    *seconds = err == MS_OK ? longest : 0;
    return err;
}

/* ---- the policy ---- */

static const char *const policy_names[] = {"allow", "namespaced", "deny"};

ms_err_t ms_user_queries_parse(const char *text, ms_user_queries_t *out)
{
    for (size_t i = 0; text && i < sizeof policy_names / sizeof policy_names[0]; i++) {
        if (strcmp(text, policy_names[i]) == 0) {
            *out = (ms_user_queries_t)i;
            return MS_OK;
        }
    }
    return MS_ERR_INVALID;
}

const char *ms_user_queries_name(ms_user_queries_t policy)
{
    if ((unsigned)policy >= sizeof policy_names / sizeof policy_names[0])
        return "unknown";
    return policy_names[policy];
}

/* The label name is `namespace`, bare or quoted without escapes. */
static bool names_namespace(const ms_prom_matcher_t *m)
{
    if (m->name_len == 9)
        return memcmp(m->name, "namespace", 9) == 0;
    return m->name_len == 11 && is_quote(m->name[0]) && memcmp(m->name + 1, "namespace", 9) == 0;
}

/* namespace="{{namespace}}" (any quotes; spaces inside the braces, as the
 * template expander allows them). */
static bool is_namespace_matcher(const ms_prom_matcher_t *m)
{
    const char *v = m->value + 1;
    size_t n = m->value_len - 2;

    if (!names_namespace(m) || m->op != MS_PROM_MATCH_EQ)
        return false;
    if (n < 4 || memcmp(v, "{{", 2) != 0 || memcmp(v + n - 2, "}}", 2) != 0)
        return false;
    v += 2;
    n -= 4;
    while (n > 0 && *v == ' ')
        v++, n--;
    while (n > 0 && v[n - 1] == ' ')
        n--;
    return n == 9 && memcmp(v, "namespace", 9) == 0;
}

typedef struct {
    bool bad;  /* a selector without the matcher at bad_offset, bad_len bytes */
    bool info; /* info() at bad_offset */
    size_t bad_offset, bad_len;
} check_t;

static bool require_namespace(const ms_prom_selector_t *sel, void *ctx)
{
    check_t *c = ctx;

    for (size_t i = 0; i < sel->nmatchers; i++)
        if (is_namespace_matcher(&sel->matchers[i]))
            return true;
    c->bad = true;
    c->bad_offset = sel->offset;
    c->bad_len = sel->len;
    return false;
}

/* info() joins in series (target_info by default) that its arguments never
 * select: no namespace matcher can hold it. */
static bool refuse_info(const char *name, size_t len, size_t offset, void *ctx)
{
    check_t *c = ctx;

    if (len != 4 || memcmp(name, "info", 4) != 0)
        return true;
    c->info = true;
    c->bad_offset = offset;
    return false;
}

/* The selector's text for a message: one line, at most EXCERPT_MAX bytes
 * (cut at a UTF-8 boundary, "..." added). */
static void excerpt(const char *s, size_t len, char *out, size_t cap)
{
    size_t n = len, o = 0;

    if (n > EXCERPT_MAX) {
        n = EXCERPT_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    if (n < len)
        for (const char *d = "..."; *d && o + 1 < cap; d++)
            out[o++] = *d;
    out[o] = '\0';
}

ms_err_t ms_prom_user_query_check(ms_user_queries_t policy, const char *tmpl, char *errbuf,
                                  size_t errlen)
{
    check_t c = {.bad = false};
    char why[MS_ERRBUF_SIZE], text[EXCERPT_MAX + 8];
    scan_t s = {.q = tmpl,
                .strict_comments = true,
                .on_selector = require_namespace,
                .on_call = refuse_info,
                .ctx = &c,
                .errbuf = why,
                .errlen = sizeof why};

    switch (policy) {
    case MS_USER_QUERIES_ALLOW:
        return MS_OK;
    case MS_USER_QUERIES_DENY:
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "user PromQL is not allowed by --user-queries=deny; use a preset");
    case MS_USER_QUERIES_NAMESPACED:
        break;
    default:
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "unknown --user-queries policy %d",
                       (int)policy);
    }
    if (scan(&s) != MS_OK)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "--user-queries=namespaced cannot check the query: %s", why);
    if (c.info)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "info() at offset %zu adds series no namespace matcher restricts "
                       "(--user-queries=namespaced)",
                       c.bad_offset);
    if (c.bad) {
        excerpt(tmpl + c.bad_offset, c.bad_len, text, sizeof text);
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "selector %s at offset %zu has no namespace=\"{{namespace}}\" matcher "
                       "(--user-queries=namespaced)",
                       text, c.bad_offset);
    }
    return MS_OK;
}
