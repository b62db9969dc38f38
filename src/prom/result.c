/*
 * result.c - the bottom of the Prometheus response decoder: the result
 * type's lifecycle, the reason names, ms__prom_fail (one message line),
 * sample values ("1.5", "NaN", "+Inf") and one number from a result. decode.c (the document) and
 * decode_series.c (vectors and matrices) both call down into it; it calls
 * neither, so the two halves make no circle.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"

static const char *const reason_names[] = {
#define MS__PROM_REASON_NAME(name, sentence) #name,
    MS_PROM_REASON_MAP(MS__PROM_REASON_NAME)
#undef MS__PROM_REASON_NAME
};

static const char *const reason_sentences[] = {
#define MS__PROM_REASON_SENTENCE(name, sentence) sentence,
    MS_PROM_REASON_MAP(MS__PROM_REASON_SENTENCE)
#undef MS__PROM_REASON_SENTENCE
};

const char *ms_prom_reason_name(ms_prom_reason_t reason)
{
    return (unsigned)reason < MS_PROM__COUNT ? reason_names[reason] : "UNKNOWN";
}

const char *ms_prom_reason_sentence(ms_prom_reason_t reason)
{
    return (unsigned)reason < MS_PROM__COUNT ? reason_sentences[reason] : "unknown reason";
}

void ms_prom_result_init(ms_prom_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->reason = MS_PROM_NO_DATA;
}

void ms_prom_result_cleanup(ms_prom_result_t *r)
{
    if (r == NULL)
        return;
    free(r->series);
    free(r->store_);
    free(r->labels_);
    free(r->arena_);
    ms_prom_result_init(r);
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

ms_prom_reason_t ms__prom_fail(ms_prom_result_t *r, ms_prom_reason_t reason, const char *fmt, ...)
{
    va_list ap;

    r->reason = reason;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    one_line(r->message);
    return reason;
}

bool ms_prom_parse_value(const char *s, size_t len, double *out)
{
    char tmp[64];
    char *end;
    size_t i = 0;
    double v;

    if (len == 3 && memcmp(s, "NaN", 3) == 0) {
        *out = NAN;
        return true;
    }
    if (len == 4 && (memcmp(s, "+Inf", 4) == 0 || memcmp(s, "-Inf", 4) == 0)) {
        *out = s[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    /* [+-]digits[.digits][(e|E)[+-]digits], at least one digit before the exponent. */
    if (len == 0 || len >= sizeof tmp)
        return false;
    if (s[i] == '-' || s[i] == '+')
        i++;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp_digits = 0;
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            i++;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++, exp_digits++;
        if (exp_digits == 0)
            return false;
    }
    if (i != len)
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    v = strtod(tmp, &end);
    if (*end != '\0')
        return false;
    *out = v; /* overflow gives +-HUGE_VAL, i.e. infinite: reported as such later */
    return true;
}

/* ---- one number from a result ---- */

__attribute__((format(printf, 4, 5))) static ms_prom_reason_t
number_fail(ms_prom_reason_t reason, char *msg, size_t msglen, const char *fmt, ...)
{
    va_list ap;

    if (msg != NULL && msglen > 0) {
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
        one_line(msg);
    }
    return reason;
}

ms_prom_reason_t ms_prom_result_number(const ms_prom_result_t *r, double ref_time, double max_age,
                                       double *value, char *msg, size_t msglen)
{
    ms_prom_point_t p;

    if (r->reason != MS_PROM_OK) {
        if (msg != NULL && msglen > 0)
            ms_errf(msg, msglen, MS_OK, "%s",
                    r->message[0] ? r->message : ms_prom_reason_sentence(r->reason));
        return r->reason;
    }
    switch (r->type) {
    case MS_PROM_TYPE_SCALAR:
        p = r->scalar;
        break;
    case MS_PROM_TYPE_VECTOR:
        if (r->nseries == 0)
            return number_fail(MS_PROM_NO_DATA, msg, msglen, "the query returned an empty vector");
        if (r->nseries > 1)
            return number_fail(MS_PROM_AMBIGUOUS, msg, msglen,
                               "the query returned %zu series; aggregate it to one (sum, max)",
                               r->nseries);
        p = r->series[0].points[0];
        break;
    case MS_PROM_TYPE_MATRIX:
        return number_fail(MS_PROM_WRONG_TYPE, msg, msglen,
                           "the query returned a range vector (matrix); use an instant query");
    default:
        return number_fail(MS_PROM_WRONG_TYPE, msg, msglen, "the query returned a string");
    }
    if (isnan(p.v))
        return number_fail(MS_PROM_NOT_A_NUMBER, msg, msglen, "the query returned NaN");
    if (isinf(p.v))
        return number_fail(MS_PROM_INFINITE, msg, msglen, "the query returned %s",
                           p.v > 0 ? "+Inf" : "-Inf");
    /* Both ways: a sample from the future (clock skew between Prometheus,
     * its targets and us) is as untrustworthy as an old one. */
    if (ref_time > 0 && max_age > 0 && fabs(ref_time - p.t) > max_age)
        return number_fail(MS_PROM_STALE, msg, msglen, "the sample is %.0f s %s",
                           fabs(ref_time - p.t), p.t > ref_time ? "in the future" : "old");
    *value = p.v;
    if (msg != NULL && msglen > 0)
        msg[0] = '\0';
    return MS_PROM_OK;
}
