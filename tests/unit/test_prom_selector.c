/*
 * test_prom_selector.c - the selectors of user PromQL and --user-queries:
 * which words are selectors and which are not, the namespace matcher that
 * NAMESPACED demands of each selector, and every refusal's one-line message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom.h"
#include "meshscaler/prom_sources.h"

/* The one matcher NAMESPACED accepts. */
#define NS "namespace=\"{{namespace}}\""

/* ---- helpers ---- */

static void allowed(const char *q)
{
    char err[MS_ERRBUF_SIZE] = "";

    if (ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, q, err, sizeof err) != MS_OK)
        fail_msg("%s: refused: %s", q, err);
}

/* Refused with exactly `want`. */
static void refused(const char *q, const char *want)
{
    char err[MS_ERRBUF_SIZE] = "";

    if (ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, q, err, sizeof err) != MS_ERR_INVALID)
        fail_msg("%s: allowed", q ? q : "(null)");
    if (strcmp(err, want) != 0)
        fail_msg("%s:\n  said %s\n  want %s", q ? q : "(null)", err, want);
    assert_null(strchr(err, '\n'));
}

/* Refused because the selector `sel` (its first occurrence) lacks the matcher. */
static void refused_for(const char *q, const char *sel)
{
    char want[MS_ERRBUF_SIZE];
    const char *at = strstr(q, sel);

    assert_non_null(at);
    snprintf(want, sizeof want,
             "selector %s at offset %zu has no namespace=\"{{namespace}}\" matcher "
             "(--user-queries=namespaced)",
             sel, (size_t)(at - q));
    refused(q, want);
}

/* Refused as unreadable, the reason mentioning `mention`. */
static void unreadable(const char *q, const char *mention)
{
    char err[MS_ERRBUF_SIZE] = "";

    if (ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, q, err, sizeof err) != MS_ERR_INVALID)
        fail_msg("%s: allowed", q);
    if (strncmp(err, "--user-queries=namespaced cannot check the query: ", 50) != 0 ||
        strstr(err, mention) == NULL)
        fail_msg("%s: message \"%s\" does not mention %s", q, err, mention);
    assert_null(strchr(err, '\n'));
}

typedef struct {
    const char *query;
    char found[16][128]; /* "OFFSET:TEXT" of each selector */
    size_t n;
    size_t stop_after; /* 0: never */
} found_t;

static bool collect(const ms_prom_selector_t *sel, void *ctx)
{
    found_t *f = ctx;

    assert_true(f->n < 16);
    snprintf(f->found[f->n++], sizeof f->found[0], "%zu:%.*s", sel->offset, (int)sel->len,
             f->query + sel->offset);
    return f->stop_after == 0 || f->n < f->stop_after;
}

/* The selectors scan() reports, as "OFFSET:TEXT" strings, NULL-terminated. */
static void finds(const char *q, const char *const *want)
{
    found_t f = {.query = q};
    char err[MS_ERRBUF_SIZE] = "";
    size_t n = 0;

    if (ms_prom_selectors_scan(q, collect, &f, err, sizeof err) != MS_OK)
        fail_msg("%s: %s", q, err);
    for (; want[n]; n++) {
        if (n >= f.n)
            fail_msg("%s: found %zu selectors, want %s next", q, f.n, want[n]);
        if (strcmp(f.found[n], want[n]) != 0)
            fail_msg("%s: selector %zu is %s, want %s", q, n, f.found[n], want[n]);
    }
    if (n != f.n)
        fail_msg("%s: found %zu selectors (%s ...), want %zu", q, f.n, f.found[n], n);
}

#define FINDS(q, ...) finds((q), (const char *const[]){__VA_ARGS__, NULL})

/* ---- the three policies ---- */

static void test_allow_allows_anything(void **state)
{
    char err[MS_ERRBUF_SIZE] = "untouched";

    (void)state;
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_ALLOW, "up", err, sizeof err), MS_OK);
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_ALLOW, "x{", err, sizeof err), MS_OK);
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_ALLOW, "", err, sizeof err), MS_OK);
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_ALLOW, NULL, NULL, 0), MS_OK);
    assert_string_equal(err, "untouched");
}

static void test_deny_refuses_everything(void **state)
{
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_DENY, "x{" NS "}", err, sizeof err),
                     MS_ERR_INVALID);
    assert_string_equal(err, "user PromQL is not allowed by --user-queries=deny; use a preset");
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_DENY, "vector(1)", NULL, 0),
                     MS_ERR_INVALID);
}

static void test_unknown_policy_refuses(void **state)
{
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(ms_prom_user_query_check((ms_user_queries_t)7, "vector(1)", err, sizeof err),
                     MS_ERR_INVALID);
    assert_string_equal(err, "unknown --user-queries policy 7");
}

static void test_policy_names(void **state)
{
    ms_user_queries_t p = MS_USER_QUERIES_DENY;

    (void)state;
    assert_int_equal(ms_user_queries_parse("allow", &p), MS_OK);
    assert_int_equal(p, MS_USER_QUERIES_ALLOW);
    assert_int_equal(ms_user_queries_parse("namespaced", &p), MS_OK);
    assert_int_equal(p, MS_USER_QUERIES_NAMESPACED);
    assert_int_equal(ms_user_queries_parse("deny", &p), MS_OK);
    assert_int_equal(p, MS_USER_QUERIES_DENY);
    assert_int_equal(ms_user_queries_parse("Deny", &p), MS_ERR_INVALID);
    assert_int_equal(ms_user_queries_parse("", &p), MS_ERR_INVALID);
    assert_int_equal(ms_user_queries_parse(NULL, &p), MS_ERR_INVALID);
    assert_int_equal(p, MS_USER_QUERIES_DENY); /* untouched */
    assert_string_equal(ms_user_queries_name(MS_USER_QUERIES_ALLOW), "allow");
    assert_string_equal(ms_user_queries_name(MS_USER_QUERIES_NAMESPACED), "namespaced");
    assert_string_equal(ms_user_queries_name(MS_USER_QUERIES_DENY), "deny");
    assert_string_equal(ms_user_queries_name((ms_user_queries_t)9), "unknown");
}

/* ---- NAMESPACED: the matcher ---- */

static void test_namespace_matcher_allows(void **state)
{
    (void)state;
    allowed("x{" NS "}");
    allowed("{" NS "}");
    allowed("sum(rate(http_requests_total{" NS "}[5m]))");
    allowed("x{" NS ",}"); /* a trailing comma */
}

static void test_the_brief_example_message(void **state)
{
    (void)state;
    refused("vector(1) + up{job=\"x\"}",
            "selector up{job=\"x\"} at offset 12 has no namespace=\"{{namespace}}\" matcher "
            "(--user-queries=namespaced)");
}

static void test_second_selector_without_matcher(void **state)
{
    (void)state;
    refused_for("sum(rate(x{" NS "}[5m])) / sum(rate(y[5m]))", "y");
    refused_for("x{" NS "} / y{job=\"a\"}", "y{job=\"a\"}");
}

static void test_other_matchers_beside_it(void **state)
{
    (void)state;
    allowed("x{" NS ",job=~\"a|b\"}");
    allowed("x{job=\"a\", " NS "}");
    allowed("x{pod=~\"{{podRegex}}\", " NS ", container!=\"\"}");
    /* A second namespace matcher only narrows further. */
    allowed("x{" NS ", namespace=~\".+\"}");
}

static void test_wrong_operators_do_not_count(void **state)
{
    (void)state;
    refused_for("x{namespace!=\"{{namespace}}\"}", "x{namespace!=\"{{namespace}}\"}");
    refused_for("x{namespace=~\"{{namespace}}\"}", "x{namespace=~\"{{namespace}}\"}");
    refused_for("x{namespace!~\"{{namespace}}\"}", "x{namespace!~\"{{namespace}}\"}");
}

static void test_other_values_do_not_count(void **state)
{
    (void)state;
    refused_for("x{namespace=\"shop\"}", "x{namespace=\"shop\"}");
    refused_for("x{namespace=\"{{name}}\"}", "x{namespace=\"{{name}}\"}");
    refused_for("x{namespace=\"{{namespace}}-x\"}", "x{namespace=\"{{namespace}}-x\"}");
    refused_for("x{namespace=\"a{{namespace}}\"}", "x{namespace=\"a{{namespace}}\"}");
    refused_for("x{namespace=\"\"}", "x{namespace=\"\"}");
    refused_for("x{exported_namespace=\"{{namespace}}\"}",
                "x{exported_namespace=\"{{namespace}}\"}");
}

static void test_quotes_and_spaces(void **state)
{
    (void)state;
    allowed("x{namespace='{{namespace}}'}");
    allowed("x{namespace=`{{namespace}}`}");
    allowed("x{namespace=\"{{ namespace }}\"}"); /* the expander trims the spaces too */
    allowed("x { namespace = \"{{namespace}}\" }");
    allowed("x\n  {\n    " NS "\n  }");
}

static void test_quoted_label_names(void **state)
{
    (void)state;
    allowed("x{\"namespace\"=\"{{namespace}}\"}");
    allowed("{\"http.requests\", " NS "}"); /* Prometheus 3: a UTF-8 metric name */
    refused_for("{\"http.requests\"}", "{\"http.requests\"}");
    /* Escapes would spell the same name: doubt never allows. */
    refused_for("x{\"name\\x73pace\"=\"{{namespace}}\"}", "x{\"name\\x73pace\"=\"{{namespace}}\"}");
}

static void test_name_matchers(void **state)
{
    (void)state;
    allowed("{__name__=~\"a.*\", " NS "}");
    refused_for("{__name__=~\"a.*\"}", "{__name__=~\"a.*\"}");
    refused_for("{__name__=~\".+\", namespace=~\".*\"}", "{__name__=~\".+\", namespace=~\".*\"}");
}

/* ---- NAMESPACED: what is and is not a selector ---- */

static void test_selectors_inside_function_arguments(void **state)
{
    (void)state;
    allowed("label_replace(x{" NS "}, \"namespace\", \"other\", \"\", \"\")");
    refused_for("label_replace(y, \"dst\", \"$1\", \"src\", \"(.*)\")", "y");
    allowed("label_join(x{" NS "}, \"d\", \",\", \"a\", \"b\")");
    allowed("histogram_quantile(0.99, sum by (le) (rate(x_bucket{" NS "}[5m])))");
    refused_for("histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))", "x_bucket");
}

static void test_grouping_labels_are_not_selectors(void **state)
{
    (void)state;
    allowed("sum by (namespace) (x{" NS "})");
    allowed("sum(x{" NS "}) by (namespace, pod)");
    allowed("sum without (pod,) (x{" NS "})");
    allowed("SUM BY (namespace) (x{" NS "})");
    allowed("sum by () (x{" NS "})");
    allowed("sum by (\"k8s.pod\") (x{" NS "})");
    /* Keywords are label names inside the list. */
    allowed("sum by (by, on, offset, bool) (x{" NS "})");
}

static void test_vector_matching_labels(void **state)
{
    (void)state;
    allowed("x{" NS "} / on(namespace) y{" NS "}");
    allowed("x{" NS "} / ignoring (pod) y{" NS "}");
    allowed("x{" NS "} * on(namespace, pod) group_left(node) y{" NS "}");
    allowed("x{" NS "} * on(pod) group_right y{" NS "}");
    allowed("x{" NS "} * on(pod) group_left y{" NS "}");
    refused_for("x{" NS "} / on(namespace) y", "y");
    refused_for("x{" NS "} * on(pod) group_left(node) kube_pod_info", "kube_pod_info");
}

static void test_label_lists_hold_names_only(void **state)
{
    (void)state;
    unreadable("sum by (y{a=\"b\"}) (x{" NS "})", "only label names belong there");
    unreadable("x{" NS "} * on(pod) group_left(rate(y[5m])) z{" NS "}",
               "only label names belong there");
}

static void test_strings_are_not_selectors(void **state)
{
    (void)state;
    allowed("\"{namespace=\\\"x\\\"}\"");
    allowed("label_replace(x{" NS "}, \"a\", \"{namespace=\\\"x\\\"} y\", \"b\", \"(.*)\")");
    allowed("x{" NS ", a=\"q\\\"}x{\"}"); /* an escaped quote does not end the value */
    allowed("x{" NS ", a='it\\'s'}");
    allowed("x{" NS ", a=`raw \\`}"); /* no escapes in a raw string */
}

static void test_raw_string_ends_at_backquote(void **state)
{
    (void)state;
    /* `a\` is a whole raw string; what follows it is code. */
    refused_for("x{" NS ", a=`a\\`} + y", "y");
}

static void test_offset_and_at(void **state)
{
    (void)state;
    refused_for("x offset 5m", "x");
    allowed("x{" NS "} offset 5m");
    allowed("x{" NS "} offset -1h30m");
    allowed("rate(x{" NS "}[5m] offset 1d)");
    refused_for("x @ 123", "x");
    allowed("x{" NS "} @ 1609746000.5");
    allowed("x{" NS "} @ start()");
    allowed("x{" NS "} @ end() offset 5m");
    allowed("x{" NS "} OFFSET 5m");
}

static void test_subqueries(void **state)
{
    (void)state;
    allowed("rate(x{" NS "}[5m])[30m:1m]");
    allowed("max_over_time(rate(x{" NS "}[5m])[1h:])");
    allowed("max_over_time(rate(x{" NS "}[5m])[1h:] offset 1m)");
    allowed("rate(x{" NS "}[5m + 1m])"); /* a duration expression */
    refused_for("max_over_time(deriv(rate(y[1m])[5m:1m])[10m:])", "y");
    unreadable("rate(x{" NS "}[y{a=\"b\"}])", "inside the [...]");
}

static void test_set_operators(void **state)
{
    (void)state;
    allowed("x{" NS "} and y{" NS "}");
    allowed("x{" NS "} or vector(0)");
    allowed("x{" NS "} unless on(pod) y{" NS "}");
    allowed("x{" NS "} AND y{" NS "}");
    allowed("x{" NS "} atan2 y{" NS "}");
    refused_for("x{" NS "} and y", "y");
    refused_for("x{" NS "} or y{job=\"a\"}", "y{job=\"a\"}");
}

static void test_bool_modifier(void **state)
{
    (void)state;
    allowed("x{" NS "} > bool 1");
    allowed("x{" NS "} == bool on(pod) y{" NS "}");
    refused_for("x{" NS "} > bool y", "y");
}

static void test_aggregations_with_parameters(void **state)
{
    (void)state;
    allowed("topk(3, x{" NS "})");
    refused_for("topk(3, x)", "x");
    allowed("quantile(0.9, x{" NS "})");
    allowed("count_values(\"version\", x{" NS "})");
    allowed("bottomk by (pod) (1, x{" NS "})");
    allowed("limitk(2, x{" NS "})");
}

static void test_nested_parentheses(void **state)
{
    (void)state;
    allowed("((((x{" NS "}))))");
    refused_for("(((x)))", "x");
    allowed("sum(rate(x{" NS "}[5m])) / (sum(rate(y{" NS "}[5m])) + (1 - (2 * 3)))");
    allowed("-(x{" NS "})");
}

static void test_unicode_in_strings(void **state)
{
    (void)state;
    allowed("x{" NS ", label=\"\xc3\xbcn\xc3\xaf"
            "c\xc3\xb8"
            "d\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5"
            "\"}");
    allowed("label_replace(x{" NS "}, \"a\", \"\xe2\x82\xac"
            "$1\", \"b\", \"(.*)\")");
    unreadable("x{" NS "} + \xc3\xbc", "byte 0xc3 at offset");
}

static void test_comments(void **state)
{
    (void)state;
    allowed("# y{job=\"other\"} is not read\nx{" NS "}");
    allowed("x{" NS "} # + y\n");
    allowed("x{ # a comment inside the braces\n " NS "}");
    allowed("x # between the name and its braces\n{" NS "}");
    refused_for("x{" NS "} + # a note\n y", "y");
    allowed("x{" NS "} # comment\r\n + z{" NS "}"); /* CRLF is one line end */
}

static void test_comment_ended_by_lone_cr(void **state)
{
    (void)state;
    /* Prometheus ends the comment at CR; the template expander reads on
     * to LF. The two would check and run different text. */
    unreadable("# a\rx{" NS "}", "the comment at offset 0 ends at a carriage return");
}

static void test_no_selector_at_all(void **state)
{
    (void)state;
    allowed("vector(1)");
    allowed("scalar(2)");
    allowed("time()");
    allowed("1 + 2 * 3 ^ 4 % 5");
    allowed("Inf");
    allowed("-NaN");
    allowed("0x1F + 1e-3 + .5 + 1_000");
    allowed("\"just a string\"");
}

static void test_function_names_alone_are_selectors(void **state)
{
    (void)state;
    /* Without "(", a function's name is a metric name to Prometheus. */
    refused_for("time", "time");
    refused_for("vector", "vector");
    refused_for("rate", "rate");
}

static void test_keywords_can_name_metrics(void **state)
{
    (void)state;
    /* Prometheus reads these words as metric names where an operand goes. */
    refused_for("sum", "sum");
    refused_for("sum{job=\"x\"}", "sum{job=\"x\"}");
    refused_for("by", "by");
    refused_for("sum(or)", "or");
    refused("x{" NS "} or or", "selector or at offset 32 has no namespace=\"{{namespace}}\" "
                               "matcher (--user-queries=namespaced)");
    refused_for("x{" NS "} + offset", "offset");
    refused_for("x{" NS "} and start", "start");
    refused_for("x{" NS "} and fill", "fill");
    allowed("offset{" NS "}");
    allowed("sum(x{" NS "}) by (a) or y{" NS "}");
}

static void test_aggregation_modifier_positions(void **state)
{
    (void)state;
    allowed("sum by (a) (x{" NS "})");
    allowed("sum(x{" NS "}) by (a)");
    allowed("count without (a) (x{" NS "})");
    allowed("max # comment\n by (a) (x{" NS "})");
    allowed("avg(x{" NS "}) without (a) > 1");
}

static void test_info_function_refused(void **state)
{
    (void)state;
    refused("info(x{" NS "})", "info() at offset 0 adds series no namespace matcher restricts "
                               "(--user-queries=namespaced)");
    refused("1 + info(x{" NS "}, {__name__=\"target_info\", " NS "})",
            "info() at offset 4 adds series no namespace matcher restricts "
            "(--user-queries=namespaced)");
}

static void test_fill_modifiers(void **state)
{
    (void)state;
    allowed("x{" NS "} + fill(0) y{" NS "}");
    allowed("x{" NS "} + on(pod) fill_left(-1) fill_right(NaN) y{" NS "}");
    refused_for("x{" NS "} + fill(0) y", "y");
    refused_for("x{" NS "} + fill(0) or", "or");
    unreadable("x{" NS "} + fill(y) z{" NS "}", "want a number");
}

static void test_metric_names_with_colons(void **state)
{
    (void)state;
    allowed("namespace:http_requests:rate5m{" NS "}");
    refused_for("a:b", "a:b");
    refused_for(":a", ":a");
}

static void test_empty_query(void **state)
{
    (void)state;
    unreadable("", "the query is empty");
    unreadable("   \n\t", "the query is empty");
    unreadable("# only a comment", "the query is empty");
    refused(NULL, "--user-queries=namespaced cannot check the query: no query");
}

static void test_unbalanced(void **state)
{
    (void)state;
    unreadable("x{" NS, "the { at offset 1 is never closed");
    unreadable("x{" NS "}}", "unexpected '}' at offset 28");
    unreadable("(x{" NS "}", "the query ends with 1 ( not closed");
    unreadable("x{" NS "})", "unexpected ) at offset 28");
    unreadable("rate(x{" NS "}[5m})", "unexpected '}' at offset 36 inside the [...] at offset 33");
    unreadable("rate(x{" NS "}[5m", "the [ at offset 33 is never closed");
    unreadable("x{" NS "}]", "unexpected ']' at offset 28");
}

static void test_unterminated_strings(void **state)
{
    (void)state;
    unreadable("x{namespace=\"{{namespace}}}", "the string at offset 12 is never closed");
    unreadable("x{" NS ", a='b}", "the string at offset 31 is never closed");
    unreadable("x{" NS ", a=`b}", "the string at offset 31 is never closed");
    unreadable("x{" NS ", a=\"b\\", "the string at offset 31 is never closed");
    unreadable("x{" NS ", a=\"b\nc\"}", "holds a line break");
}

static void test_malformed_matchers(void **state)
{
    (void)state;
    unreadable("x{a b}", "want =, !=, =~ or !~ at offset 4");
    unreadable("x{a=b}", "want a quoted label value at offset 4");
    unreadable("x{,}", "want a label name at offset 2");
    unreadable("x{" NS " or job=\"a\"}", "want , or } at offset 28");
    unreadable("x{a:b=\"c\"}", "want =, !=, =~ or !~ at offset 3");
    unreadable("x{{{namespace}}}", "want a label name at offset 2");
}

static void test_unexpected_characters(void **state)
{
    (void)state;
    unreadable("x{" NS "} ~ 1", "unexpected '~' at offset 29");
    unreadable("x{" NS "} $ 1", "unexpected '$' at offset 29");
    unreadable("x{" NS "};", "unexpected ';' at offset 28");
    unreadable("x{" NS "} \\ 1", "unexpected '\\' at offset 29");
    unreadable("x{" NS "} +\v1", "unexpected byte 0x0b at offset 30");
}

static void test_too_many_matchers(void **state)
{
    char q[1024];
    size_t n = 0;

    (void)state;
    n += (size_t)snprintf(q + n, sizeof q - n, "x{" NS);
    for (int i = 0; i < MS_PROM_MAX_MATCHERS; i++)
        n += (size_t)snprintf(q + n, sizeof q - n, ",l%d=\"v\"", i);
    snprintf(q + n, sizeof q - n, "}");
    unreadable(q, "the selector at offset 0 has more than 32 label matchers");
}

static void test_long_selector_is_cut_in_the_message(void **state)
{
    const char *q =
        "x{job=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}";
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, q, err, sizeof err),
                     MS_ERR_INVALID);
    assert_string_equal(err,
                        "selector x{job=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... "
                        "at offset 0 has no namespace=\"{{namespace}}\" matcher "
                        "(--user-queries=namespaced)");
    /* A line break inside the selector becomes a space. */
    refused("x{\njob=\"a\"}",
            "selector x{ job=\"a\"} at offset 0 has no namespace=\"{{namespace}}\" "
            "matcher (--user-queries=namespaced)");
}

static void test_small_error_buffers(void **state)
{
    char err[8];

    (void)state;
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, "up", err, sizeof err),
                     MS_ERR_INVALID);
    assert_string_equal(err, "selecto");
    assert_int_equal(ms_prom_user_query_check(MS_USER_QUERIES_NAMESPACED, "up{", NULL, 0),
                     MS_ERR_INVALID);
}

static void test_modifiers_then_operators(void **state)
{
    (void)state;
    refused_for("x{" NS "} offset 5m and y", "y");
    refused_for("x{" NS "}[5m] @ end() or y", "y");
    allowed("rate(x{" NS "}[5m] anchored) and rate(y{" NS "}[5m] smoothed)");
    refused_for("count by (a) (x)", "x");
}

/* What passes the check keeps every restriction once expanded, however
 * hostile the other values: expansion only fills string literals. */
static bool all_in_shop(const ms_prom_selector_t *sel, void *ctx)
{
    size_t *n = ctx;

    for (size_t i = 0; i < sel->nmatchers; i++) {
        const ms_prom_matcher_t *m = &sel->matchers[i];
        if (m->name_len == 9 && memcmp(m->name, "namespace", 9) == 0 && m->op == MS_PROM_MATCH_EQ &&
            m->value_len == 6 && memcmp(m->value + 1, "shop", 4) == 0) {
            (*n)++;
            return true;
        }
    }
    fail_msg("selector at offset %zu lost its namespace matcher", sel->offset);
    return false;
}

static void test_expansion_keeps_every_restriction(void **state)
{
    const ms_prom_template_vars_t vars = {"shop", "a\"} or up{b=\"", "K'), up #\r", "p|x\"}"};
    const char *tmpl = "sum(x{" NS ", n=\"{{name}}\", k='{{kind}}'}) / on(pod) "
                       "y{namespace='{{namespace}}', pod=~\"{{podRegex}}\"}";
    char err[MS_ERRBUF_SIZE];
    char *out = NULL;
    size_t n = 0;

    (void)state;
    allowed(tmpl);
    assert_int_equal(ms_prom_template_expand(tmpl, &vars, &out, err, sizeof err), MS_OK);
    assert_int_equal(ms_prom_selectors_scan(out, all_in_shop, &n, err, sizeof err), MS_OK);
    assert_int_equal(n, 2);
    free(out);
}

/* ---- the scanner itself ---- */

static void test_scan_finds_every_selector(void **state)
{
    (void)state;
    FINDS("sum(rate(a{x=\"1\"}[5m])) / on(pod) group_left(node) b * c offset 1m + {__name__=\"d\"}",
          "9:a{x=\"1\"}", "51:b", "55:c", "69:{__name__=\"d\"}");
    FINDS("x {a=\"b\"} [5m]", "0:x {a=\"b\"}");
    FINDS("vector(1) + sum by (a) (count_values(\"v\", e))", "42:e");
    FINDS("a and b or c unless d", "0:a", "6:b", "11:c", "20:d");
    FINDS("f(\"x{y}\", 'z') + g", "17:g");
}

static bool keep_first(const ms_prom_selector_t *sel, void *ctx)
{
    *(ms_prom_selector_t *)ctx = *sel;
    return false;
}

static void test_scan_matcher_details(void **state)
{
    const char *q = "rate(http_total{code=~'5..', \"k.8\"!=\"x\", job = `a`, b!~\"c\"}[1m])";
    ms_prom_selector_t s;

    (void)state;
    memset(&s, 0, sizeof s);
    assert_int_equal(ms_prom_selectors_scan(q, keep_first, &s, NULL, 0), MS_OK);
    assert_int_equal(s.offset, 5);
    assert_int_equal(s.metric_len, 10);
    assert_memory_equal(s.metric, "http_total", 10);
    assert_int_equal(s.nmatchers, 4);
    assert_int_equal(s.matchers[0].op, MS_PROM_MATCH_RE);
    assert_memory_equal(s.matchers[0].name, "code", 4);
    assert_int_equal(s.matchers[0].value_len, 5);
    assert_memory_equal(s.matchers[0].value, "'5..'", 5);
    assert_int_equal(s.matchers[1].op, MS_PROM_MATCH_NE);
    assert_int_equal(s.matchers[1].name_len, 5);
    assert_memory_equal(s.matchers[1].name, "\"k.8\"", 5);
    assert_int_equal(s.matchers[2].op, MS_PROM_MATCH_EQ);
    assert_memory_equal(s.matchers[2].value, "`a`", 3);
    assert_int_equal(s.matchers[3].op, MS_PROM_MATCH_NRE);

    /* A lone quoted string is the metric's name. */
    q = "{\"a.b\", c=\"d\"}";
    assert_int_equal(ms_prom_selectors_scan(q, keep_first, &s, NULL, 0), MS_OK);
    assert_null(s.metric);
    assert_int_equal(s.nmatchers, 2);
    assert_int_equal(s.matchers[0].name_len, 8);
    assert_memory_equal(s.matchers[0].name, "__name__", 8);
    assert_memory_equal(s.matchers[0].value, "\"a.b\"", 5);
    assert_int_equal(s.len, strlen(q));
}

static void test_scan_stops_when_asked(void **state)
{
    found_t f = {.query = "a + b + c", .stop_after = 2};

    (void)state;
    assert_int_equal(ms_prom_selectors_scan(f.query, collect, &f, NULL, 0), MS_OK);
    assert_int_equal(f.n, 2);
    /* Stopping early also stops reading: later garbage is not seen. */
    f = (found_t){.query = "a + b + c{", .stop_after = 1};
    assert_int_equal(ms_prom_selectors_scan(f.query, collect, &f, NULL, 0), MS_OK);
    assert_int_equal(f.n, 1);
}

static void test_scan_errors(void **state)
{
    char err[MS_ERRBUF_SIZE];

    (void)state;
    assert_int_equal(ms_prom_selectors_scan("a{b=\"c\"", NULL, NULL, err, sizeof err),
                     MS_ERR_PARSE);
    assert_string_equal(err, "the { at offset 1 is never closed");
    assert_int_equal(ms_prom_selectors_scan("", NULL, NULL, err, sizeof err), MS_ERR_PARSE);
    assert_string_equal(err, "the query is empty");
    assert_int_equal(ms_prom_selectors_scan(NULL, NULL, NULL, err, sizeof err), MS_ERR_PARSE);
    assert_string_equal(err, "no query");
    /* The plain scanner follows Prometheus: a lone CR ends a comment. */
    assert_int_equal(ms_prom_selectors_scan("# a\rb", NULL, NULL, err, sizeof err), MS_OK);
}

static double window_of(const char *q)
{
    double w = -1;
    char err[256];

    if (ms_prom_query_window(q, &w, err, sizeof err) != MS_OK)
        fail_msg("%s: %s", q, err);
    return w;
}

/* The window the saturation hold waits for (reconcile.c): the longest range
 * or subquery range, in seconds, whatever strings and comments hold. */
static void test_query_window(void **state)
{
    double w = -1;
    char err[256];

    (void)state;
    assert_true(window_of("sum(rate(x_total[5s]))") == 5);
    assert_true(window_of("rate(a[1m]) / rate(b[2m])") == 120);
    assert_true(window_of("rate(a[1h30m])") == 5400);
    assert_true(window_of("rate(a[500ms])") == 0.5);
    assert_true(window_of("rate(a[1d])") == 86400);
    assert_true(window_of("rate(a[300])") == 300); /* Prometheus 3: seconds */
    assert_true(window_of("max_over_time(rate(a[1m])[30m:1m])") == 1800);
    assert_true(window_of("rate(a[ 2m ])") == 120);
    assert_true(window_of("rate(a[5m] offset 1h)") == 300); /* offset is not a window */
    assert_true(window_of("job:rejected:rate1m") == 0);     /* a recording rule hides it */
    assert_true(window_of("rate(a[step()*2])") == 0);       /* an expression: unknown */
    assert_true(window_of("rate(a[5mx])") == 0);
    /* Ranges in strings and comments are not read. */
    assert_true(window_of("sum(rate(a{pod=~\"web-[0-9]+\",x=\"[1h]\"}[10s])) # [1w]") == 10);
    assert_true(window_of("sum(rate(a{pod=~\"{{podRegex}}\"}[15s]))") == 15);
    /* An unreadable query: an error, and no window. */
    assert_int_equal(ms_prom_query_window("rate(a[5m", &w, err, sizeof err), MS_ERR_PARSE);
    assert_true(w == 0);
    assert_non_null(strstr(err, "never closed"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_allows_anything),
        cmocka_unit_test(test_deny_refuses_everything),
        cmocka_unit_test(test_unknown_policy_refuses),
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_namespace_matcher_allows),
        cmocka_unit_test(test_the_brief_example_message),
        cmocka_unit_test(test_second_selector_without_matcher),
        cmocka_unit_test(test_other_matchers_beside_it),
        cmocka_unit_test(test_wrong_operators_do_not_count),
        cmocka_unit_test(test_other_values_do_not_count),
        cmocka_unit_test(test_quotes_and_spaces),
        cmocka_unit_test(test_quoted_label_names),
        cmocka_unit_test(test_name_matchers),
        cmocka_unit_test(test_selectors_inside_function_arguments),
        cmocka_unit_test(test_grouping_labels_are_not_selectors),
        cmocka_unit_test(test_vector_matching_labels),
        cmocka_unit_test(test_label_lists_hold_names_only),
        cmocka_unit_test(test_strings_are_not_selectors),
        cmocka_unit_test(test_raw_string_ends_at_backquote),
        cmocka_unit_test(test_offset_and_at),
        cmocka_unit_test(test_subqueries),
        cmocka_unit_test(test_set_operators),
        cmocka_unit_test(test_bool_modifier),
        cmocka_unit_test(test_aggregations_with_parameters),
        cmocka_unit_test(test_nested_parentheses),
        cmocka_unit_test(test_unicode_in_strings),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_comment_ended_by_lone_cr),
        cmocka_unit_test(test_no_selector_at_all),
        cmocka_unit_test(test_function_names_alone_are_selectors),
        cmocka_unit_test(test_keywords_can_name_metrics),
        cmocka_unit_test(test_aggregation_modifier_positions),
        cmocka_unit_test(test_info_function_refused),
        cmocka_unit_test(test_fill_modifiers),
        cmocka_unit_test(test_metric_names_with_colons),
        cmocka_unit_test(test_empty_query),
        cmocka_unit_test(test_unbalanced),
        cmocka_unit_test(test_unterminated_strings),
        cmocka_unit_test(test_malformed_matchers),
        cmocka_unit_test(test_unexpected_characters),
        cmocka_unit_test(test_too_many_matchers),
        cmocka_unit_test(test_long_selector_is_cut_in_the_message),
        cmocka_unit_test(test_small_error_buffers),
        cmocka_unit_test(test_modifiers_then_operators),
        cmocka_unit_test(test_expansion_keeps_every_restriction),
        cmocka_unit_test(test_scan_finds_every_selector),
        cmocka_unit_test(test_scan_matcher_details),
        cmocka_unit_test(test_scan_stops_when_asked),
        cmocka_unit_test(test_scan_errors),
        cmocka_unit_test(test_query_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
