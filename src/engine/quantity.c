/*
 * quantity.c - Kubernetes quantity text to double.
 *
 * Parsed by hand rather than with strtod: strtod accepts things Kubernetes
 * refuses (" 1", "0x10", "inf", "nan", "1e") and depends on the locale.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "meshscaler/quantity.h"

#define QUANTITY_MAX_LEN 64 /* Kubernetes' own limit is smaller in practice */

typedef struct {
    const char *suffix;
    double base;
    int exponent;
} suffix_t;

/* Longest first where they share a prefix ("Mi" before "M"). */
static const suffix_t suffixes[] = {
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50},
    {"Ei", 2, 60}, {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},
    {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Print at most 32 bytes of the text into errors, so a huge input does not
 * make a huge message. */
#define QFMT "\"%.*s%s\""
#define QARG(t, n) (int)((n) > 32 ? 32 : (n)), (t), ((n) > 32 ? "..." : "")

/* What follows the digits, text[i..len) (not empty): a decimal suffix or
 * an exponent sets *exp10, a binary suffix scales *mantissa. */
static ms_err_t read_suffix(const char *text, size_t len, size_t i, double *mantissa, long *exp10,
                            char *errbuf, size_t errlen)
{
    const char *rest = text + i;
    size_t rest_len = len - i;
    size_t j = 1, edigits = 0;
    bool eneg = false;
    long e = 0;

    /* Suffixes first: "Ei" and "E" are binary and decimal exa; only what is
     * not a suffix may be an exponent ("e3", "E-2"). */
    for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++) {
        size_t sl = strlen(suffixes[s].suffix);
        if (sl == rest_len && memcmp(rest, suffixes[s].suffix, sl) == 0) {
            if (suffixes[s].base == 10)
                *exp10 = suffixes[s].exponent;
            else
                *mantissa = ldexp(*mantissa, suffixes[s].exponent);
            return MS_OK;
        }
    }
    if ((rest[0] != 'e' && rest[0] != 'E') || rest_len == 1)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE,
                       "quantity " QFMT " has an unknown suffix \"%.*s\" (want one of "
                       "n u m k M G T P E Ki Mi Gi Ti Pi Ei or an exponent like e3)",
                       QARG(text, len), (int)(rest_len > 8 ? 8 : rest_len), rest);
    if (rest[j] == '+' || rest[j] == '-')
        eneg = rest[j++] == '-';
    while (j < rest_len && is_digit(rest[j])) {
        if (e < 100000)
            e = e * 10 + (rest[j] - '0');
        j++;
        edigits++;
    }
    if (edigits == 0 || j != rest_len)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "quantity " QFMT " has a malformed exponent",
                       QARG(text, len));
    *exp10 = eneg ? -e : e;
    return MS_OK;
}

/* mantissa x 10^exp10 (infinite when too large). pow(10, e) for negative e
 * loses less precision as a division: "1.5" becomes 15 / 10, exactly the
 * double nearest 1.5. */
static double times_power_of_ten(double mantissa, long exp10)
{
    if (mantissa == 0.0)
        return 0.0; /* "0e999" is zero, not 0 * inf */
    if (exp10 >= 0)
        return mantissa * pow(10.0, (double)exp10);
    if (exp10 >= -300)
        return mantissa / pow(10.0, (double)-exp10);
    /* 10^320 overflows: divide in two steps so 1e40e-320 stays 1e-280 */
    return mantissa / 1e300 / pow(10.0, (double)(-exp10 - 300));
}

ms_err_t ms_quantity_parse_n(const char *text, size_t len, double *out, char *errbuf, size_t errlen)
{
    size_t i = 0;
    bool negative = false;
    double mantissa = 0.0;
    int frac_digits = 0;
    size_t int_digits = 0, total_digits = 0;
    long exp10 = 0;
    double value;
    ms_err_t err;

    if (text == NULL || len == 0)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "empty quantity");
    if (len > QUANTITY_MAX_LEN)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE,
                       "quantity " QFMT " is longer than %d characters", QARG(text, len),
                       QUANTITY_MAX_LEN);
    if (memchr(text, '\0', len) != NULL)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "quantity contains a NUL byte");

    if (text[i] == '+' || text[i] == '-')
        negative = text[i++] == '-';
    /* Digits are accumulated as an integer-valued double; at most 64 bytes of
     * input keeps every step exact enough and free of overflow. */
    while (i < len && is_digit(text[i])) {
        mantissa = mantissa * 10.0 + (text[i++] - '0');
        int_digits++;
    }
    total_digits = int_digits;
    if (i < len && text[i] == '.') {
        i++;
        while (i < len && is_digit(text[i])) {
            mantissa = mantissa * 10.0 + (text[i++] - '0');
            frac_digits++;
            total_digits++;
        }
    }
    if (total_digits == 0)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE,
                       "quantity " QFMT " does not start with a number", QARG(text, len));
    if (i < len && (err = read_suffix(text, len, i, &mantissa, &exp10, errbuf, errlen)) != MS_OK)
        return err;

    value = times_power_of_ten(mantissa, exp10 - frac_digits);
    if (!isfinite(value))
        return ms_errf(errbuf, errlen, MS_ERR_RANGE, "quantity " QFMT " is too large",
                       QARG(text, len));
    *out = negative ? -value : value;
    return MS_OK;
}

ms_err_t ms_quantity_parse(const char *text, double *out, char *errbuf, size_t errlen)
{
    if (text == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "empty quantity");
    return ms_quantity_parse_n(text, strlen(text), out, errbuf, errlen);
}
