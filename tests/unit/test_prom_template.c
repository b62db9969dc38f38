/*
 * test_prom_template.c - {{placeholder}} expansion: values escaped for the
 * string literal they sit in, regex-escaped after =~ / !~, and never pasted
 * into PromQL code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom_sources.h"

static const ms_prom_template_vars_t plain = {"shop", "api", "Deployment", "api-1|api-2"};

static void expands_to(const ms_prom_template_vars_t *v, const char *tmpl, const char *want)
{
    char err[MS_ERRBUF_SIZE] = "";
    char *out = NULL;

    if (ms_prom_template_expand(tmpl, v, &out, err, sizeof err) != MS_OK)
        fail_msg("%s: refused: %s", tmpl, err);
    if (strcmp(out, want) != 0)
        fail_msg("%s\n  gave %s\n  want %s", tmpl, out, want);
    free(out);
}

static void refused(const ms_prom_template_vars_t *v, const char *tmpl, const char *mention)
{
    char err[MS_ERRBUF_SIZE] = "";
    char *out = (char *)"untouched";

    if (ms_prom_template_expand(tmpl, v, &out, err, sizeof err) != MS_ERR_INVALID)
        fail_msg("%s: accepted as %s", tmpl, out);
    assert_string_equal(out, "untouched");
    if (strstr(err, mention) == NULL)
        fail_msg("%s: message \"%s\" does not mention %s", tmpl, err, mention);
}

static void test_plain_values(void **state)
{
    (void)state;
    expands_to(
        &plain,
        "sum(rate(http_requests_total{namespace=\"{{namespace}}\",pod=~\"{{podRegex}}\"}[1m]))",
        "sum(rate(http_requests_total{namespace=\"shop\",pod=~\"api-1|api-2\"}[1m]))");
    expands_to(&plain, "x{a=\"{{ name }}\",k='{{kind}}'}", "x{a=\"api\",k='Deployment'}");
    expands_to(&plain, "no placeholders at all", "no placeholders at all");
    expands_to(&plain, "x{a=`{{namespace}}`}", "x{a=`shop`}");
}

static void test_string_escaping(void **state)
{
    const ms_prom_template_vars_t evil = {"a\"b\\c", "it's", "K\nind", NULL};
    (void)state;

    /* A quote cannot end the literal; a backslash cannot start an escape. */
    expands_to(&evil, "x{n=\"{{namespace}}\"}", "x{n=\"a\\\"b\\\\c\"}");
    expands_to(&evil, "x{n='{{name}}'}", "x{n='it\\'s'}");
    expands_to(&evil, "x{n=\"{{name}}\"}", "x{n=\"it's\"}");
    expands_to(&evil, "x{k=\"{{kind}}\"}", "x{k=\"K\\nind\"}");
    /* A NULL namespace, name or kind is empty; a NULL podRegex means the
     * pods are not known: refused, not "", which would match no pod. */
    {
        const ms_prom_template_vars_t none = {NULL, NULL, NULL, NULL};
        expands_to(&none, "x{n=\"{{namespace}}\",a=\"{{name}}\",k=\"{{kind}}\"}",
                   "x{n=\"\",a=\"\",k=\"\"}");
        refused(&none, "x{p=~\"{{podRegex}}\"}", "the target's pods are not known");
        expands_to(&none, "x{p=\"no placeholder\"}", "x{p=\"no placeholder\"}");
    }
}

static void test_regex_context(void **state)
{
    const ms_prom_template_vars_t dotted = {"team.a", "api+v2", "Deployment", "api\\.1|api\\.2"};
    (void)state;

    /* After =~ and !~ plain values are regex-escaped, then string-escaped. */
    expands_to(&dotted, "x{namespace=~\"{{namespace}}\"}", "x{namespace=~\"team\\\\.a\"}");
    expands_to(&dotted, "x{name!~ \"{{name}}-.*\"}", "x{name!~ \"api\\\\+v2-.*\"}");
    expands_to(&dotted, "x{namespace=\"{{namespace}}\"}", "x{namespace=\"team.a\"}");
    /* podRegex is a regex already: only string-escaped. */
    expands_to(&dotted, "x{pod=~\"{{podRegex}}\"}", "x{pod=~\"api\\\\.1|api\\\\.2\"}");
    /* Raw strings need no string escaping. */
    expands_to(&dotted, "x{namespace=~`{{namespace}}`}", "x{namespace=~`team\\.a`}");
}

static void test_lexing(void **state)
{
    (void)state;
    /* An escaped quote does not close the literal. */
    expands_to(&plain, "x{a=\"q\\\"{{name}}\"}", "x{a=\"q\\\"api\"}");
    /* Comments are copied, placeholders in them too. */
    expands_to(&plain, "up # {{name}}\n", "up # {{name}}\n");
}

static void test_refusals(void **state)
{
    const ms_prom_template_vars_t tick = {"a`b", "api", "K", ""};
    (void)state;

    refused(&plain, "sum(x) by ({{namespace}})", "inside a string literal");
    refused(&plain, "x{a=\"{{nope}}\"}", "unknown placeholder {{nope}}");
    refused(&plain, "x{a=\"{{name\"}", "unclosed {{");
    refused(&tick, "x{a=`{{namespace}}`}", "backquote");
}

static void test_regex_escape_and_pod_regex(void **state)
{
    const char *pods[] = {"web-7d4b9c8f6d-x2k4p", "db.0", "a+b"};
    char *s;
    (void)state;

    s = ms_prom_regex_escape("a.b*c?d(e)f[g]h{i}j|k^l$m\\n+");
    assert_string_equal(s, "a\\.b\\*c\\?d\\(e\\)f\\[g\\]h\\{i\\}j\\|k\\^l\\$m\\\\n\\+");
    free(s);
    s = ms_prom_pod_regex(pods, 3);
    assert_string_equal(s, "web-7d4b9c8f6d-x2k4p|db\\.0|a\\+b");
    free(s);
    s = ms_prom_pod_regex(pods, 0);
    assert_string_equal(s, "");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_values),  cmocka_unit_test(test_string_escaping),
        cmocka_unit_test(test_regex_context), cmocka_unit_test(test_lexing),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_regex_escape_and_pod_regex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
