/*
 * test_quantity.c - Kubernetes quantity strings to doubles.
 *
 * Accepted values are compared exactly (==, not within an epsilon): the
 * parser promises the double nearest the written decimal, and a config that
 * says "1500m" must not turn into 1.4999999999999998.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/quantity.h"

/* A value no parse of these inputs produces: proves *out was not written. */
#define UNTOUCHED (-12345.25)

static void check_value(const char *text, double want, const char *file, int line)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;
    ms_err_t err = ms_quantity_parse(text, &out, errbuf, sizeof errbuf);

    if (err != MS_OK)
        fail_msg("%s:%d: \"%s\" refused (%s): %s", file, line, text, ms_err_name(err), errbuf);
    if (out != want)
        fail_msg("%s:%d: \"%s\" gave %.17g, want %.17g", file, line, text, out, want);
}

/* Refused with err, *out untouched, and the message contains `mention`. */
static void check_refused_n(const char *text, size_t len, ms_err_t want_err, const char *mention,
                            const char *file, int line)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;
    ms_err_t err = ms_quantity_parse_n(text, len, &out, errbuf, sizeof errbuf);

    if (err != want_err)
        fail_msg("%s:%d: \"%.*s\" gave %s (%s), want %s", file, line, (int)len, text,
                 ms_err_name(err), errbuf, ms_err_name(want_err));
    if (out != UNTOUCHED)
        fail_msg("%s:%d: \"%.*s\" wrote *out = %g on failure", file, line, (int)len, text, out);
    if (strstr(errbuf, mention) == NULL)
        fail_msg("%s:%d: message \"%s\" does not mention %s", file, line, errbuf, mention);
    if (strchr(errbuf, '\n') != NULL)
        fail_msg("%s:%d: message \"%s\" is not one line", file, line, errbuf);
}

#define VALUE(text, want) check_value((text), (want), __FILE__, __LINE__)
#define REFUSED_N(text, len, err, mention)                                                         \
    check_refused_n((text), (len), (err), (mention), __FILE__, __LINE__)
/* The usual refusal: bad syntax, and the message quotes the text. */
#define REFUSED(text) REFUSED_N((text), strlen(text), MS_ERR_PARSE, "\"" text "\"")

static void test_plain_numbers(void **state)
{
    (void)state;
    VALUE("120", 120.0);
    VALUE("0", 0.0);
    VALUE("1.5", 1.5);
    /* 3 / 10, not 0.1 * 3: the nearest double to 0.3, not 0.30000000000000004. */
    VALUE("0.3", 0.3);
    VALUE("0.1", 0.1);
}

static void test_signs_and_bare_dots(void **state)
{
    (void)state;
    VALUE("+5", 5.0);
    VALUE("-2", -2.0);
    VALUE("-1.5Gi", -1610612736.0);
    /* Kubernetes accepts a missing digit on either side of the dot. */
    VALUE(".5", 0.5);
    VALUE("5.", 5.0);
}

static void test_decimal_suffixes(void **state)
{
    (void)state;
    VALUE("100n", 1e-7);
    VALUE("5u", 5e-6);
    VALUE("2.5u", 2.5e-6);
    VALUE("1500m", 1.5);
    VALUE("1m", 0.001);
    VALUE("2k", 2000.0);
    VALUE("1.5k", 1500.0);
    VALUE("3M", 3e6);
    VALUE("4G", 4e9);
    VALUE("5T", 5e12);
    VALUE("6P", 6e15);
}

static void test_capital_E_alone_is_exa(void **state)
{
    (void)state;
    /* "E" with nothing after it is the exa suffix, not an exponent. */
    VALUE("1E", 1e18);
    VALUE("2.5E", 2.5e18);
}

static void test_exponents(void **state)
{
    (void)state;
    VALUE("1e3", 1000.0);
    VALUE("1E3", 1000.0);
    VALUE("1e+3", 1000.0);
    VALUE("1E-2", 0.01);
    VALUE("1e-3", 0.001);
    VALUE("1.25e2", 125.0);
    VALUE("1.7e308", 1.7e308);
}

static void test_zero_with_huge_exponent_is_zero(void **state)
{
    (void)state;
    /* 0 x 10^999999 is 0, not 0 x inf = nan, and not a range error. */
    VALUE("0e999999", 0.0);
    VALUE("0.000e999999", 0.0);
}

static void test_binary_suffixes(void **state)
{
    (void)state;
    VALUE("1Ki", 1024.0);
    VALUE("1Mi", 1048576.0);
    VALUE("1.5Mi", 1572864.0);
    VALUE("1Gi", 1073741824.0);
    VALUE("1Ti", 1099511627776.0);
    VALUE("1Pi", 1125899906842624.0);
}

static void test_exbibyte_suffix(void **state)
{
    (void)state;
    /* "Ei" starts with 'E' like an exponent; it must still be the 2^60 suffix. */
    VALUE("1Ei", 1152921504606846976.0);
    VALUE("2Ei", 2305843009213693952.0);
}

static void test_small_value_with_long_mantissa_is_not_flushed_to_zero(void **state)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;
    /* 10^40 x 10^-320 = 10^-280, well inside the range of a double; computing
     * it as 10^40 / 10^320 divides by infinity and silently yields 0. */
    const char *text = "10000000000000000000000000000000000000000e-320";

    (void)state;
    assert_int_equal(ms_quantity_parse(text, &out, errbuf, sizeof errbuf), MS_OK);
    if (!(fabs(out - 1e-280) <= 1e-292))
        fail_msg("\"%s\" gave %.17g, want 1e-280", text, out);
}

static void test_refuses_empty(void **state)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;

    (void)state;
    REFUSED_N("", 0, MS_ERR_PARSE, "empty");
    assert_int_equal(ms_quantity_parse(NULL, &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_true(out == UNTOUCHED);
}

static void test_refuses_surrounding_spaces(void **state)
{
    (void)state;
    /* Kubernetes refuses both; strtod would have skipped the leading one. */
    REFUSED(" 1");
    REFUSED("1 ");
}

static void test_refuses_unknown_suffix(void **state)
{
    (void)state;
    REFUSED("1.5Q");
    REFUSED("1K"); /* kilo is lower-case k; K is only the start of Ki */
    REFUSED("1ki");
    REFUSED("1.2.3");
    REFUSED_N("1.5Q", 4, MS_ERR_PARSE, "unknown suffix \"Q\"");
}

static void test_refuses_what_strtod_accepts(void **state)
{
    (void)state;
    REFUSED("0x10");
    REFUSED("inf");
    REFUSED("nan");
    REFUSED("Infinity");
}

static void test_refuses_malformed_exponent(void **state)
{
    (void)state;
    /* Lower-case "e" is no suffix; it needs digits after it. */
    REFUSED("1e");
    REFUSED("1e+");
    REFUSED("1E-");
    REFUSED("1e3.5");
    REFUSED("1e3k");
}

static void test_refuses_bad_signs_and_lone_punctuation(void **state)
{
    (void)state;
    REFUSED("--1");
    REFUSED("+-1");
    REFUSED("+");
    REFUSED(".");
    REFUSED("-.");
    REFUSED("k");
}

static void test_refuses_long_text_and_cuts_the_message(void **state)
{
    char text[101];
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;

    (void)state;
    memset(text, '1', 100);
    text[100] = '\0';
    assert_int_equal(ms_quantity_parse(text, &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_true(out == UNTOUCHED);
    /* The message names the text, cut to its first 32 characters. */
    assert_non_null(strstr(errbuf, "\"11111111111111111111111111111111...\""));
    assert_null(strstr(errbuf, "111111111111111111111111111111111"));
    assert_non_null(strstr(errbuf, "longer than 64"));
}

static void test_too_large_is_a_range_error(void **state)
{
    (void)state;
    REFUSED_N("1e400", 5, MS_ERR_RANGE, "\"1e400\" is too large");
    REFUSED_N("-1e400", 6, MS_ERR_RANGE, "\"-1e400\"");
    REFUSED_N("1.8e308", 7, MS_ERR_RANGE, "\"1.8e308\"");
}

static void test_refuses_embedded_nul(void **state)
{
    (void)state;
    /* Only parse_n can see past a NUL; "1" followed by NUL and "k" must not
     * parse as 1 (what a C-string reader would silently do). */
    REFUSED_N("1\0k", 3, MS_ERR_PARSE, "NUL");
    REFUSED_N("1\0", 2, MS_ERR_PARSE, "NUL");
}

static void test_parse_n_reads_only_len_bytes(void **state)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    double out = UNTOUCHED;

    (void)state;
    /* The JSON readers pass slices of a larger text. */
    assert_int_equal(ms_quantity_parse_n("2kXYZ", 2, &out, errbuf, sizeof errbuf), MS_OK);
    assert_true(out == 2000.0);
}

/* A slice that ends where its buffer ends: no byte at text[len] to read.
 * Each text is copied into a heap block of exactly its length, so a read
 * one past it is a heap-buffer-overflow under ASan (scripts/test.sh's
 * sanitizer suite). Texts that end after the integer digits, after the
 * fraction and after a suffix or exponent (mutant: quantity.c's
 * `i < len && text[i] == '.'` with the bound test made always true). */
static void test_parse_n_reads_nothing_past_an_unterminated_slice(void **state)
{
    static const struct {
        const char *text;
        double want;
    } cases[] = {{"15", 15.0},   {"-7", -7.0},    {"1.5", 1.5},    {"2.", 2.0},
                 {"3k", 3000.0}, {"1Ki", 1024.0}, {"2e3", 2000.0}, {"250m", 0.25}};
    char errbuf[MS_ERRBUF_SIZE] = "";

    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = strlen(cases[k].text);
        char *slice = malloc(len);
        double out = UNTOUCHED;

        assert_non_null(slice);
        memcpy(slice, cases[k].text, len);
        assert_int_equal(ms_quantity_parse_n(slice, len, &out, errbuf, sizeof errbuf), MS_OK);
        assert_true(out == cases[k].want);
        free(slice);
    }
}

static void test_tiny_error_buffer_is_safe(void **state)
{
    char errbuf[4] = "zzz";
    double out = UNTOUCHED;

    (void)state;
    assert_int_equal(ms_quantity_parse("1.5Q", &out, errbuf, sizeof errbuf), MS_ERR_PARSE);
    assert_int_equal(strlen(errbuf), 3); /* cut and terminated */
    assert_int_equal(ms_quantity_parse("1.5Q", &out, NULL, 0), MS_ERR_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_numbers),
        cmocka_unit_test(test_signs_and_bare_dots),
        cmocka_unit_test(test_decimal_suffixes),
        cmocka_unit_test(test_capital_E_alone_is_exa),
        cmocka_unit_test(test_exponents),
        cmocka_unit_test(test_zero_with_huge_exponent_is_zero),
        cmocka_unit_test(test_binary_suffixes),
        cmocka_unit_test(test_exbibyte_suffix),
        cmocka_unit_test(test_small_value_with_long_mantissa_is_not_flushed_to_zero),
        cmocka_unit_test(test_refuses_empty),
        cmocka_unit_test(test_refuses_surrounding_spaces),
        cmocka_unit_test(test_refuses_unknown_suffix),
        cmocka_unit_test(test_refuses_what_strtod_accepts),
        cmocka_unit_test(test_refuses_malformed_exponent),
        cmocka_unit_test(test_refuses_bad_signs_and_lone_punctuation),
        cmocka_unit_test(test_refuses_long_text_and_cuts_the_message),
        cmocka_unit_test(test_too_large_is_a_range_error),
        cmocka_unit_test(test_refuses_embedded_nul),
        cmocka_unit_test(test_parse_n_reads_only_len_bytes),
        cmocka_unit_test(test_parse_n_reads_nothing_past_an_unterminated_slice),
        cmocka_unit_test(test_tiny_error_buffer_is_safe),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
