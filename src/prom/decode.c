/*
 * decode.c - Prometheus API responses to typed results.
 *
 * The response shape (Prometheus 2.x, /api/v1/query and query_range):
 *   {"status":"success","data":{"resultType":"vector","result":[...]},"warnings":[...]}
 *   {"status":"error","errorType":"bad_data","error":"..."}
 * Sample values are strings ("1.5", "NaN", "+Inf"). The cJSON tree is kept
 * in the result so label strings can be borrowed instead of copied.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "meshscaler/prom.h"

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
    cJSON_Delete(r->tree_);
    free(r->store_);
    free(r->series);
    ms_prom_result_init(r);
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

/* Set the reason and a one-line message; returns the reason. */
__attribute__((format(printf, 3, 4))) static ms_prom_reason_t
fail(ms_prom_result_t *r, ms_prom_reason_t reason, const char *fmt, ...)
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

/* A [time, "value"] pair. */
static bool parse_point(const cJSON *pair, ms_prom_point_t *p)
{
    const cJSON *t, *v;

    if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2)
        return false;
    t = pair->child;
    v = t->next;
    if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || !cJSON_IsString(v))
        return false;
    p->t = t->valuedouble;
    return ms_prom_parse_value(v->valuestring, strlen(v->valuestring), &p->v);
}

static ms_prom_reason_t decode_error_body(const cJSON *root, long status, ms_prom_result_t *r)
{
    const cJSON *etype = cJSON_GetObjectItemCaseSensitive(root, "errorType");
    const cJSON *emsg = cJSON_GetObjectItemCaseSensitive(root, "error");
    const char *type = cJSON_IsString(etype) ? etype->valuestring : "";
    const char *msg = cJSON_IsString(emsg) ? emsg->valuestring : "(no message)";
    ms_prom_reason_t reason = MS_PROM_SERVER_ERROR;

    if (strcmp(type, "bad_data") == 0)
        reason = MS_PROM_BAD_QUERY;
    else if (strcmp(type, "execution") == 0)
        /* A deadline that expires while series are expanded comes back as
         * an execution error; it is a timeout all the same. */
        reason = strstr(msg, "context deadline exceeded") != NULL ? MS_PROM_TIMEOUT
                                                                   : MS_PROM_EXECUTION;
    else if (strcmp(type, "timeout") == 0)
        reason = MS_PROM_TIMEOUT;
    else if (strcmp(type, "canceled") == 0)
        reason = MS_PROM_CANCELLED;
    return fail(r, reason, "HTTP %ld %s: %s", status, type[0] ? type : "error", msg);
}

static void take_warnings(const cJSON *root, ms_prom_result_t *r)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "warnings");
    const cJSON *item;

    if (!cJSON_IsArray(w))
        return;
    cJSON_ArrayForEach(item, w)
    {
        if (!cJSON_IsString(item))
            continue;
        if (r->nwarnings++ == 0)
            ms_errf(r->warning, sizeof r->warning, MS_OK, "%s", item->valuestring);
    }
}

/* Vector or matrix: fill r->series and r->store_. */
static ms_prom_reason_t decode_series(const cJSON *result, bool matrix, ms_prom_result_t *r)
{
    size_t n = (size_t)cJSON_GetArraySize(result), npoints = 0, i = 0, used = 0;
    const cJSON *item;

    cJSON_ArrayForEach(item, result)
    {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(item, matrix ? "values" : "value");
        if (!cJSON_IsObject(item) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(item, "metric")))
            return fail(r, MS_PROM_MALFORMED, "series %zu has no \"metric\" object", i);
        if (matrix) {
            if (!cJSON_IsArray(values))
                return fail(r, MS_PROM_MALFORMED, "series %zu has no \"values\" array", i);
            npoints += (size_t)cJSON_GetArraySize(values);
        } else {
            /* Native histograms ("histogram") carry no plain value. */
            if (values == NULL && cJSON_GetObjectItemCaseSensitive(item, "histogram") != NULL)
                return fail(r, MS_PROM_WRONG_TYPE, "series %zu is a native histogram", i);
            npoints++;
        }
        i++;
    }
    if (n == 0)
        return MS_PROM_OK;
    r->series = calloc(n, sizeof *r->series);
    r->store_ = npoints ? calloc(npoints, sizeof *r->store_) : NULL;
    if (r->series == NULL || (npoints && r->store_ == NULL))
        return fail(r, MS_PROM_TOO_LARGE, "out of memory holding %zu series", n);
    i = 0;
    cJSON_ArrayForEach(item, result)
    {
        ms_prom_series_t *s = &r->series[i];
        const cJSON *pt;

        s->metric = cJSON_GetObjectItemCaseSensitive(item, "metric");
        s->points = r->store_ + used;
        if (matrix) {
            cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(item, "values"))
            {
                if (!parse_point(pt, &r->store_[used]))
                    return fail(r, MS_PROM_MALFORMED, "series %zu has a bad [time, \"value\"] pair", i);
                used++;
                s->npoints++;
            }
        } else {
            if (!parse_point(cJSON_GetObjectItemCaseSensitive(item, "value"), &r->store_[used]))
                return fail(r, MS_PROM_MALFORMED, "series %zu has a bad [time, \"value\"] pair", i);
            used++;
            s->npoints = 1;
        }
        i++;
    }
    r->nseries = n;
    return MS_PROM_OK;
}

static ms_prom_reason_t decode_success(const cJSON *root, ms_prom_result_t *r)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(data, "result");
    const char *t;
    ms_prom_reason_t reason;

    if (!cJSON_IsObject(data) || !cJSON_IsString(type))
        return fail(r, MS_PROM_MALFORMED, "no \"data.resultType\" in a success response");
    t = type->valuestring;
    if (strcmp(t, "vector") == 0 || strcmp(t, "matrix") == 0) {
        bool matrix = t[0] == 'm';
        if (!cJSON_IsArray(result))
            return fail(r, MS_PROM_MALFORMED, "\"data.result\" of a %s is not an array", t);
        r->type = matrix ? MS_PROM_TYPE_MATRIX : MS_PROM_TYPE_VECTOR;
        if ((reason = decode_series(result, matrix, r)) != MS_PROM_OK)
            return reason;
    } else if (strcmp(t, "scalar") == 0) {
        r->type = MS_PROM_TYPE_SCALAR;
        if (!parse_point(result, &r->scalar))
            return fail(r, MS_PROM_MALFORMED, "a scalar result is not [time, \"value\"]");
    } else if (strcmp(t, "string") == 0) {
        r->type = MS_PROM_TYPE_STRING;
        if (!cJSON_IsArray(result) || cJSON_GetArraySize(result) != 2 ||
            !cJSON_IsNumber(result->child) || !cJSON_IsString(result->child->next))
            return fail(r, MS_PROM_MALFORMED, "a string result is not [time, \"text\"]");
        r->scalar.t = result->child->valuedouble;
        r->scalar.v = NAN;
        r->string_value = result->child->next->valuestring;
    } else {
        return fail(r, MS_PROM_MALFORMED, "unknown resultType \"%.40s\"", t);
    }
    take_warnings(root, r);
    r->reason = MS_PROM_OK;
    r->message[0] = '\0';
    return MS_PROM_OK;
}

/* The first bytes of a non-JSON body, made printable, for messages. */
static void snippet(const char *body, size_t len, char *out, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < len && n + 1 < cap && n < 60; i++) {
        unsigned char c = (unsigned char)body[i];
        out[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : ' ';
    }
    out[n] = '\0';
    while (n > 0 && out[n - 1] == ' ')
        out[--n] = '\0';
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* True when a body that failed to parse looks cut short: it opens an object
 * and ends inside a string or with brackets still open. (cJSON reports where
 * the failing token began, not where the input ran out.) */
static bool looks_truncated(const char *body, size_t len)
{
    size_t depth = 0;
    bool in_string = false, escaped = false;

    if (len == 0 || body[0] != '{')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return false;
            depth--;
        }
    }
    return in_string || depth > 0;
}

ms_prom_reason_t ms_prom_decode(const char *body, size_t len, long http_status,
                                ms_prom_result_t *out)
{
    const char *end = NULL;
    const cJSON *status;
    cJSON *root;
    char text[64];

    ms_prom_result_cleanup(out);
    out->http_status = http_status;
    if (body == NULL)
        len = 0;
    snippet(body ? body : "", len, text, sizeof text);
    if (http_status == 401 || http_status == 403)
        return fail(out, MS_PROM_UNAUTHORIZED, "HTTP %ld: %s", http_status, text);

    root = len ? cJSON_ParseWithLengthOpts(body, len, &end, false) : NULL;
    if (root != NULL && !cJSON_IsObject(root)) { /* "404 page not found" parses as 404 */
        cJSON_Delete(root);
        root = NULL;
        end = body;
    }
    if (root == NULL) {
        size_t at = end != NULL && end >= body ? (size_t)(end - body) : 0;

        if (http_status < 200 || http_status > 299)
            return fail(out, MS_PROM_HTTP_STATUS, "HTTP %ld: %s", http_status,
                        text[0] ? text : "(empty body)");
        if (len == 0)
            return fail(out, MS_PROM_MALFORMED, "HTTP %ld with an empty body", http_status);
        if (looks_truncated(body, len))
            return fail(out, MS_PROM_TRUNCATED, "the JSON ends early after %zu bytes", len);
        return fail(out, MS_PROM_MALFORMED, "not a JSON object (at byte %zu): %s", at, text);
    }
    out->tree_ = root;
    while (end != NULL && (size_t)(end - body) < len && is_space(*end))
        end++;
    if (end != NULL && (size_t)(end - body) < len)
        return fail(out, MS_PROM_MALFORMED, "bytes after the JSON document at %zu",
                    (size_t)(end - body));

    status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsString(status)) {
        if (http_status < 200 || http_status > 299)
            return fail(out, MS_PROM_HTTP_STATUS, "HTTP %ld: %s", http_status, text);
        return fail(out, MS_PROM_MALFORMED, "JSON without a \"status\": %s", text);
    }
    if (strcmp(status->valuestring, "error") == 0)
        return decode_error_body(root, http_status, out);
    if (strcmp(status->valuestring, "success") != 0)
        return fail(out, MS_PROM_MALFORMED, "unknown status \"%.40s\"", status->valuestring);
    if (http_status < 200 || http_status > 299)
        return fail(out, MS_PROM_HTTP_STATUS, "HTTP %ld with a success body", http_status);
    return decode_success(root, out);
}

ms_prom_reason_t ms_prom_decode_response(const ms_http_response_t *resp, ms_prom_result_t *out)
{
    ms_prom_reason_t reason;

    if (resp->err == MS_OK)
        return ms_prom_decode(resp->body.data, resp->body.len, resp->status, out);
    ms_prom_result_cleanup(out);
    switch (resp->err) {
    case MS_ERR_UNAVAILABLE: reason = MS_PROM_UNAVAILABLE; break;
    case MS_ERR_TIMEOUT: reason = MS_PROM_TIMEOUT; break;
    case MS_ERR_TLS: reason = MS_PROM_TLS; break;
    case MS_ERR_TOOLARGE: reason = MS_PROM_TOO_LARGE; break;
    case MS_ERR_CANCELLED: reason = MS_PROM_CANCELLED; break;
    default: reason = MS_PROM_TRANSPORT; break;
    }
    out->http_status = resp->status;
    return fail(out, reason, "%s", resp->error[0] ? resp->error : ms_strerror(resp->err));
}

const char *ms_prom_series_label(const ms_prom_series_t *s, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive((const cJSON *)s->metric, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

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

ms_prom_reason_t ms_prom_result_number(const ms_prom_result_t *r, double ref_time,
                                       double max_age, double *value, char *msg, size_t msglen)
{
    ms_prom_point_t p;

    if (r->reason != MS_PROM_OK) {
        if (msg != NULL && msglen > 0)
            ms_errf(msg, msglen, MS_OK, "%s", r->message[0] ? r->message
                                                            : ms_prom_reason_sentence(r->reason));
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
        return number_fail(MS_PROM_INFINITE, msg, msglen, "the query returned %s", p.v > 0 ? "+Inf" : "-Inf");
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
