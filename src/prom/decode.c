/*
 * decode.c - Prometheus API responses to typed results.
 *
 * The response shape (Prometheus 2.x, /api/v1/query and query_range):
 *   {"status":"success","data":{"resultType":"vector","result":[...]},"warnings":[...]}
 *   {"status":"error","errorType":"bad_data","error":"..."}
 * Sample values are strings ("1.5", "NaN", "+Inf"). Members may come in any
 * order (a proxy may reorder them: resultType after result, status last);
 * unknown members are passed over; of two members with one name the first
 * counts.
 *
 * The body is read twice with the pull scanner of jscan.h, never parsed
 * into a tree: a batched preset answer of 50,000 series is about 5.5 MB,
 * and a cJSON tree of it held nine times that. The first pass checks the
 * whole document and notes where the members that matter are, so a broken
 * or cut body is reported as such whatever its members say; the second
 * decodes those spans. Series go straight into four blocks that grow as the
 * body is read (series, points, labels, and one arena of label strings) and
 * are shrunk to fit at the end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"

/* ---- scalars, strings, errors, warnings ---- */

/* String v of body, unescaped into out (cap bytes with the NUL), cut when
 * longer. */
static void text_of(const char *body, const ms__jval_t *v, char *out, size_t cap)
{
    size_t n = 0;

    ms__jscan_unescape(body + v->start, v->end - v->start, out, cap - 1, &n);
    out[n] = '\0';
}

static bool decode_scalar(const char *body, size_t len, const ms__jval_t *result,
                          ms_prom_point_t *pt)
{
    ms__jscan_t s;

    if (result->type == MS__JSON_NONE)
        return false;
    ms__jscan_init(&s, body, len, result->start);
    return ms__prom_read_pair(&s, pt) == MS__PAIR_OK;
}

/* [time, "text"]: the text goes into r->arena_. */
static ms_prom_reason_t decode_string(const char *body, size_t len, const ms__jval_t *result,
                                      ms_prom_result_t *r)
{
    ms__jscan_t s;
    ms__jval_t e[2];
    size_t n = 0, tlen;
    double t = 0;

    if (result->type != MS__JSON_NONE) {
        ms__jscan_init(&s, body, len, result->start);
        if (!ms__prom_read_array2(&s, e, &n))
            n = 0;
    }
    if (n != 2 || !ms__jscan_number(body, &e[0], &t) || e[1].type != MS__JSON_STRING)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "a string result is not [time, \"text\"]");
    tlen = e[1].end - e[1].start;
    if ((r->arena_ = malloc(tlen + 1)) == NULL)
        return ms__prom_fail(r, MS_PROM_TOO_LARGE, "out of memory holding a string of %zu bytes",
                             tlen);
    ms__jscan_unescape(body + e[1].start, tlen, r->arena_, tlen, &n);
    r->arena_[n] = '\0';
    r->scalar.t = t;
    r->scalar.v = NAN;
    r->string_value = r->arena_;
    return MS_PROM_OK;
}

/* Where the members that matter are, as the first pass found them (type
 * MS__JSON_NONE: absent). */
typedef struct {
    ms__jval_t status, error_type, error, warnings;
    ms__jval_t data, result_type, result; /* result_type and result: of data */
} doc_t;

static ms_prom_reason_t decode_error_body(const char *body, const doc_t *d, long status,
                                          ms_prom_result_t *r)
{
    /* The message is searched for a phrase Prometheus puts in its first
     * lines; what is longer than 4 KiB is cut (the message shows 256). */
    char type[64] = "", msg[4096] = "(no message)";
    ms_prom_reason_t reason = MS_PROM_SERVER_ERROR;

    if (d->error_type.type == MS__JSON_STRING)
        text_of(body, &d->error_type, type, sizeof type);
    if (d->error.type == MS__JSON_STRING)
        text_of(body, &d->error, msg, sizeof msg);
    if (strcmp(type, "bad_data") == 0)
        reason = MS_PROM_BAD_QUERY;
    else if (strcmp(type, "execution") == 0)
        /* A deadline that expires while series are expanded comes back as
         * an execution error; it is a timeout all the same. */
        reason =
            strstr(msg, "context deadline exceeded") != NULL ? MS_PROM_TIMEOUT : MS_PROM_EXECUTION;
    else if (strcmp(type, "timeout") == 0)
        reason = MS_PROM_TIMEOUT;
    else if (strcmp(type, "canceled") == 0)
        reason = MS_PROM_CANCELLED;
    return ms__prom_fail(r, reason, "HTTP %ld %s: %s", status, type[0] ? type : "error", msg);
}

static void take_warnings(const char *body, size_t len, const doc_t *d, ms_prom_result_t *r)
{
    ms__jscan_t s;
    ms__jval_t v, item;
    char first[MS_ERRBUF_SIZE];

    if (d->warnings.type != MS__JSON_ARRAY)
        return;
    ms__jscan_init(&s, body, len, d->warnings.start);
    if (!ms__jscan_value(&s, &v))
        return;
    while (ms__jscan_element(&s)) {
        if (!ms__jscan_value(&s, &item) || !ms__jscan_skip(&s, &item))
            return;
        if (item.type != MS__JSON_STRING)
            continue;
        if (r->nwarnings++ == 0) {
            text_of(body, &item, first, sizeof first);
            ms_errf(r->warning, sizeof r->warning, MS_OK, "%s", first);
        }
    }
}

static ms_prom_reason_t decode_success(const char *body, size_t len, const doc_t *d,
                                       ms_prom_result_t *r)
{
    const ms__jval_t *type = &d->result_type;
    ms_prom_reason_t reason;
    bool matrix;
    char t[48];

    if (d->data.type != MS__JSON_OBJECT || type->type != MS__JSON_STRING)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "no \"data.resultType\" in a success response");
    text_of(body, type, t, sizeof t);
    matrix = ms__jscan_equals(body, type, "matrix");
    if (matrix || ms__jscan_equals(body, type, "vector")) {
        if (d->result.type != MS__JSON_ARRAY)
            return ms__prom_fail(r, MS_PROM_MALFORMED, "\"data.result\" of a %s is not an array",
                                 t);
        r->type = matrix ? MS_PROM_TYPE_MATRIX : MS_PROM_TYPE_VECTOR;
        reason = ms__prom_decode_series(body, len, d->result.start, matrix, r);
        if (reason != MS_PROM_OK)
            return reason;
    } else if (ms__jscan_equals(body, type, "scalar")) {
        r->type = MS_PROM_TYPE_SCALAR;
        if (!decode_scalar(body, len, &d->result, &r->scalar))
            return ms__prom_fail(r, MS_PROM_MALFORMED, "a scalar result is not [time, \"value\"]");
    } else if (ms__jscan_equals(body, type, "string")) {
        r->type = MS_PROM_TYPE_STRING;
        if ((reason = decode_string(body, len, &d->result, r)) != MS_PROM_OK)
            return reason;
    } else {
        return ms__prom_fail(r, MS_PROM_MALFORMED, "unknown resultType \"%.40s\"", t);
    }
    take_warnings(body, len, d, r);
    r->reason = MS_PROM_OK;
    r->message[0] = '\0';
    return MS_PROM_OK;
}

/* ---- the first pass ---- */

/* Read the value of the member just named, whole, and note it in *slot
 * (may be NULL) unless a member of that name came before. */
static bool note_value(ms__jscan_t *s, ms__jval_t *slot)
{
    ms__jval_t v;

    if (!ms__jscan_value(s, &v) || !ms__jscan_skip(s, &v))
        return false;
    if (slot != NULL && slot->type == MS__JSON_NONE)
        *slot = v;
    return true;
}

/* "data": its resultType and result noted, the rest passed over. */
static bool scan_data(ms__jscan_t *s, doc_t *d)
{
    ms__jval_t v, key;

    if (d->data.type != MS__JSON_NONE)
        return note_value(s, NULL);
    if (!ms__jscan_value(s, &v))
        return false;
    if (v.type != MS__JSON_OBJECT) {
        if (!ms__jscan_skip(s, &v))
            return false;
        d->data = v;
        return true;
    }
    while (ms__jscan_member(s, &key)) {
        ms__jval_t *slot = NULL;

        if (ms__jscan_equals(s->p, &key, "resultType"))
            slot = &d->result_type;
        else if (ms__jscan_equals(s->p, &key, "result"))
            slot = &d->result;
        if (!note_value(s, slot))
            return false;
    }
    v.end = s->pos;
    d->data = v;
    return s->err == MS__JSCAN_OK;
}

/* Where a top-level member other than "data" is noted; NULL: nowhere. */
static ms__jval_t *top_slot(doc_t *d, const char *p, const ms__jval_t *key)
{
    if (ms__jscan_equals(p, key, "status"))
        return &d->status;
    if (ms__jscan_equals(p, key, "errorType"))
        return &d->error_type;
    if (ms__jscan_equals(p, key, "error"))
        return &d->error;
    if (ms__jscan_equals(p, key, "warnings"))
        return &d->warnings;
    return NULL;
}

/* The whole top-level object (s is at its '{'), checked, with the members
 * that matter noted in *d. False with the fault in s. */
static bool scan_document(ms__jscan_t *s, doc_t *d)
{
    ms__jval_t root, key;

    memset(d, 0, sizeof *d);
    if (!ms__jscan_value(s, &root))
        return false;
    while (ms__jscan_member(s, &key)) {
        bool ok = ms__jscan_equals(s->p, &key, "data") ? scan_data(s, d)
                                                       : note_value(s, top_slot(d, s->p, &key));
        if (!ok)
            return false;
    }
    return s->err == MS__JSCAN_OK;
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

/* A body that is no JSON object: the error status when there is one, else
 * empty, cut short (TRUNCATED: the retry may get it whole) or garbage. what
 * names the fault, NULL when the body does not start an object at all. */
static ms_prom_reason_t not_an_object(ms_prom_result_t *r, long status, size_t len,
                                      const char *text, bool cut, const char *what, size_t at)
{
    if (status < 200 || status > 299)
        return ms__prom_fail(r, MS_PROM_HTTP_STATUS, "HTTP %ld: %s", status,
                             text[0] ? text : "(empty body)");
    if (len == 0)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "HTTP %ld with an empty body", status);
    if (cut)
        return ms__prom_fail(r, MS_PROM_TRUNCATED, "the JSON ends early after %zu bytes", len);
    if (what == NULL)
        return ms__prom_fail(r, MS_PROM_MALFORMED, "not a JSON object (at byte %zu): %s", at, text);
    return ms__prom_fail(r, MS_PROM_MALFORMED, "not a JSON object (%s at byte %zu): %s", what, at,
                         text);
}

/* A UTF-8 byte order mark may precede the document (RFC 8259 lets a
 * parser ignore it, and cJSON did). */
static size_t bom_length(const char *body, size_t len)
{
    return len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

ms_prom_reason_t ms_prom_decode(const char *body, size_t len, long http_status,
                                ms_prom_result_t *out)
{
    ms__jscan_t s;
    doc_t d;
    char text[64], c;

    ms_prom_result_cleanup(out);
    out->http_status = http_status;
    if (body == NULL)
        len = 0;
    snippet(body ? body : "", len, text, sizeof text);
    if (http_status == 401 || http_status == 403)
        return ms__prom_fail(out, MS_PROM_UNAUTHORIZED, "HTTP %ld: %s", http_status, text);

    ms__jscan_init(&s, body, len, bom_length(body, len));
    /* "404 page not found", an HTML page, an array: not an answer. */
    if (!ms__jscan_peek(&s, &c) || c != '{')
        return not_an_object(out, http_status, len, text, false, NULL, s.pos);
    if (!scan_document(&s, &d))
        return not_an_object(out, http_status, len, text, s.err == MS__JSCAN_TRUNCATED, s.err_what,
                             s.err_at);
    if (ms__jscan_peek(&s, &c))
        return ms__prom_fail(out, MS_PROM_MALFORMED, "bytes after the JSON document at %zu", s.pos);

    if (d.status.type != MS__JSON_STRING) {
        if (http_status < 200 || http_status > 299)
            return ms__prom_fail(out, MS_PROM_HTTP_STATUS, "HTTP %ld: %s", http_status, text);
        return ms__prom_fail(out, MS_PROM_MALFORMED, "JSON without a \"status\": %s", text);
    }
    if (ms__jscan_equals(body, &d.status, "error"))
        return decode_error_body(body, &d, http_status, out);
    if (!ms__jscan_equals(body, &d.status, "success")) {
        char status[48];
        text_of(body, &d.status, status, sizeof status);
        return ms__prom_fail(out, MS_PROM_MALFORMED, "unknown status \"%.40s\"", status);
    }
    if (http_status < 200 || http_status > 299)
        return ms__prom_fail(out, MS_PROM_HTTP_STATUS, "HTTP %ld with a success body", http_status);
    return decode_success(body, len, &d, out);
}

ms_prom_reason_t ms_prom_decode_response(const ms_http_response_t *resp, ms_prom_result_t *out)
{
    ms_prom_reason_t reason;

    if (resp->err == MS_OK)
        return ms_prom_decode(resp->body.data, resp->body.len, resp->status, out);
    ms_prom_result_cleanup(out);
    switch (resp->err) {
    case MS_ERR_UNAVAILABLE:
        reason = MS_PROM_UNAVAILABLE;
        break;
    case MS_ERR_TIMEOUT:
        reason = MS_PROM_TIMEOUT;
        break;
    case MS_ERR_TLS:
        reason = MS_PROM_TLS;
        break;
    case MS_ERR_TOOLARGE:
        reason = MS_PROM_TOO_LARGE;
        break;
    case MS_ERR_CANCELLED:
        reason = MS_PROM_CANCELLED;
        break;
    default:
        reason = MS_PROM_TRANSPORT;
        break;
    }
    out->http_status = resp->status;
    return ms__prom_fail(out, reason, "%s", resp->error[0] ? resp->error : ms_strerror(resp->err));
}
