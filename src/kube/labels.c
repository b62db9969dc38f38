/*
 * labels.c - label selectors: a list of requirements, all of which must hold.
 *
 * The text grammar (apimachinery labels.Parse):
 *   selector    = [requirement {"," requirement}]
 *   requirement = ["!"] key
 *               | key ("=" | "==" | "!=") value
 *               | key ("in" | "notin") "(" [value {"," value}] ")"
 *               | key (">" | "<") integer
 * with spaces allowed around tokens. Keys and values are label syntax:
 * letters, digits, '-', '_', '.', and '/' in keys; values may be empty.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/labels.h"
#include "meshscaler/xalloc.h"

typedef enum { OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOT_EXISTS, OP_GT, OP_LT } op_t;

typedef struct {
    char *key;
    op_t op;
    char **values;
    size_t nvalues;
    long long number; /* OP_GT, OP_LT */
} requirement_t;

struct ms_label_selector {
    bool nothing; /* a nil LabelSelector: selects no object */
    requirement_t *reqs;
    size_t n, cap;
};

static ms_label_selector_t *selector_new(void)
{
    return ms_xcalloc(1, sizeof(ms_label_selector_t));
}

static requirement_t *add_requirement(ms_label_selector_t *s, const char *key, size_t keylen,
                                      op_t op)
{
    requirement_t *r;

    s->reqs = ms_xgrow(s->reqs, &s->cap, s->n + 1, sizeof *s->reqs);
    r = &s->reqs[s->n++];
    memset(r, 0, sizeof *r);
    r->key = ms_xstrndup(key, keylen);
    r->op = op;
    return r;
}

static void add_value(requirement_t *r, const char *v, size_t len)
{
    r->values = ms_xrealloc(r->values, (r->nvalues + 1) * sizeof *r->values);
    r->values[r->nvalues++] = ms_xstrndup(v, len);
}

void ms_label_selector_free(ms_label_selector_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->reqs[i].key);
        for (size_t j = 0; j < s->reqs[i].nvalues; j++)
            free(s->reqs[i].values[j]);
        free(s->reqs[i].values);
    }
    free(s->reqs);
    free(s);
}

/* ---- text form ---- */

typedef struct {
    const char *text, *p;
    char *err;
    size_t errlen;
} lexer_t;

static void skip_space(lexer_t *lx)
{
    while (*lx->p == ' ' || *lx->p == '\t')
        lx->p++;
}

static bool label_char(char c, bool key)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || (key && c == '/');
}

/* A key or value token: its start and length (0 is allowed for values). */
static size_t token(lexer_t *lx, bool key, const char **start)
{
    skip_space(lx);
    *start = lx->p;
    while (label_char(*lx->p, key))
        lx->p++;
    return (size_t)(lx->p - *start);
}

static ms_err_t fail(lexer_t *lx, const char *what)
{
    return ms_errf(lx->err, lx->errlen, MS_ERR_INVALID,
                   "label selector \"%.200s\": %s at offset %zu", lx->text, what,
                   (size_t)(lx->p - lx->text));
}

static bool keyword(lexer_t *lx, const char *word)
{
    size_t n = strlen(word);

    skip_space(lx);
    if (strncmp(lx->p, word, n) != 0 || label_char(lx->p[n], true))
        return false;
    lx->p += n;
    return true;
}

static ms_err_t parse_set(lexer_t *lx, requirement_t *r)
{
    skip_space(lx);
    if (*lx->p != '(')
        return fail(lx, "expected '(' after in/notin");
    lx->p++;
    skip_space(lx);
    if (*lx->p == ')') {
        lx->p++;
        return MS_OK;
    }
    for (;;) {
        const char *v;
        size_t len = token(lx, false, &v);
        add_value(r, v, len);
        skip_space(lx);
        if (*lx->p == ')') {
            lx->p++;
            return MS_OK;
        }
        if (*lx->p != ',')
            return fail(lx, "expected ',' or ')' in a value set");
        lx->p++;
    }
}

static ms_err_t parse_number(lexer_t *lx, requirement_t *r)
{
    char *end;

    skip_space(lx);
    errno = 0;
    r->number = strtoll(lx->p, &end, 10);
    if (end == lx->p || errno != 0)
        return fail(lx, "expected an integer after > or <");
    lx->p = end;
    return MS_OK;
}

static ms_err_t parse_requirement(lexer_t *lx, ms_label_selector_t *s)
{
    const char *key, *v;
    size_t keylen, vlen;
    requirement_t *r;

    skip_space(lx);
    if (*lx->p == '!') {
        lx->p++;
        if ((keylen = token(lx, true, &key)) == 0)
            return fail(lx, "expected a key after '!'");
        add_requirement(s, key, keylen, OP_NOT_EXISTS);
        return MS_OK;
    }
    if ((keylen = token(lx, true, &key)) == 0)
        return fail(lx, "expected a key");
    skip_space(lx);
    if (*lx->p == ',' || *lx->p == '\0') {
        add_requirement(s, key, keylen, OP_EXISTS);
        return MS_OK;
    }
    if (lx->p[0] == '!' && lx->p[1] == '=') {
        lx->p += 2;
        r = add_requirement(s, key, keylen, OP_NE);
    } else if (lx->p[0] == '=') {
        lx->p += lx->p[1] == '=' ? 2 : 1;
        r = add_requirement(s, key, keylen, OP_EQ);
    } else if (lx->p[0] == '>' || lx->p[0] == '<') {
        r = add_requirement(s, key, keylen, lx->p[0] == '>' ? OP_GT : OP_LT);
        lx->p++;
        return parse_number(lx, r);
    } else if (keyword(lx, "notin")) {
        return parse_set(lx, add_requirement(s, key, keylen, OP_NOTIN));
    } else if (keyword(lx, "in")) {
        return parse_set(lx, add_requirement(s, key, keylen, OP_IN));
    } else {
        return fail(lx, "expected an operator (=, ==, !=, in, notin, >, <)");
    }
    vlen = token(lx, false, &v);
    add_value(r, v, vlen);
    return MS_OK;
}

ms_err_t ms_label_selector_parse(const char *text, ms_label_selector_t **out, char *errbuf,
                                 size_t errlen)
{
    lexer_t lx = {text, text, errbuf, errlen};
    ms_label_selector_t *s;
    ms_err_t err;

    if (text == NULL)
        text = lx.text = lx.p = "";
    if (strlen(text) > MS_LABEL_SELECTOR_MAX)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "label selector longer than %d bytes",
                       MS_LABEL_SELECTOR_MAX);
    s = selector_new();
    skip_space(&lx);
    while (*lx.p != '\0') {
        if ((err = parse_requirement(&lx, s)) != MS_OK)
            goto fail;
        skip_space(&lx);
        if (*lx.p == ',') {
            lx.p++;
            skip_space(&lx);
            if (*lx.p == '\0') {
                err = fail(&lx, "expected a requirement after ','");
                goto fail;
            }
        } else if (*lx.p != '\0') {
            err = fail(&lx, "expected ',' between requirements");
            goto fail;
        }
    }
    *out = s;
    return MS_OK;
fail:
    ms_label_selector_free(s);
    return err;
}

/* ---- LabelSelector objects ---- */

static ms_err_t from_expression(const cJSON *e, ms_label_selector_t *s, size_t i, char *errbuf,
                                size_t errlen)
{
    static const struct {
        const char *name;
        op_t op;
    } ops[] = {
        {"In", OP_IN}, {"NotIn", OP_NOTIN}, {"Exists", OP_EXISTS}, {"DoesNotExist", OP_NOT_EXISTS}};
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(e, "values"), *v;
    requirement_t *r = NULL;

    if (!cJSON_IsString(key) || !cJSON_IsString(op))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "matchExpressions[%zu]: key and operator must be strings", i);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(op->valuestring, ops[k].name) == 0)
            r = add_requirement(s, key->valuestring, strlen(key->valuestring), ops[k].op);
    if (r == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                       "matchExpressions[%zu]: unknown operator \"%.40s\"", i, op->valuestring);
    if (values != NULL && !cJSON_IsArray(values) && !cJSON_IsNull(values))
        return ms_errf(errbuf, errlen, MS_ERR_INVALID, "matchExpressions[%zu].values: not a list",
                       i);
    cJSON_ArrayForEach(v, values)
    {
        if (!cJSON_IsString(v))
            return ms_errf(errbuf, errlen, MS_ERR_INVALID,
                           "matchExpressions[%zu].values: not a string", i);
        add_value(r, v->valuestring, strlen(v->valuestring));
    }
    return MS_OK;
}

ms_err_t ms_label_selector_from_json(const cJSON *selector, ms_label_selector_t **out, char *errbuf,
                                     size_t errlen)
{
    const cJSON *ml, *me, *item;
    ms_label_selector_t *s = selector_new();
    size_t i = 0;
    ms_err_t err = MS_ERR_INVALID;

    if (selector == NULL || cJSON_IsNull(selector)) {
        s->nothing = true;
        *out = s;
        return MS_OK;
    }
    if (!cJSON_IsObject(selector)) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID, "selector: not an object");
        goto fail;
    }
    ml = cJSON_GetObjectItemCaseSensitive(selector, "matchLabels");
    me = cJSON_GetObjectItemCaseSensitive(selector, "matchExpressions");
    if ((ml != NULL && !cJSON_IsObject(ml) && !cJSON_IsNull(ml)) ||
        (me != NULL && !cJSON_IsArray(me) && !cJSON_IsNull(me))) {
        ms_errf(errbuf, errlen, MS_ERR_INVALID,
                "selector: matchLabels must be an object and matchExpressions a list");
        goto fail;
    }
    cJSON_ArrayForEach(item, ml)
    {
        if (!cJSON_IsString(item)) {
            ms_errf(errbuf, errlen, MS_ERR_INVALID, "selector.matchLabels.%.60s: not a string",
                    item->string);
            goto fail;
        }
        add_value(add_requirement(s, item->string, strlen(item->string), OP_EQ), item->valuestring,
                  strlen(item->valuestring));
    }
    cJSON_ArrayForEach(item, me) if ((err = from_expression(item, s, i++, errbuf, errlen)) !=
                                     MS_OK) goto fail;
    *out = s;
    return MS_OK;
fail:
    ms_label_selector_free(s);
    return MS_ERR_INVALID;
}

/* ---- matching ---- */

static bool in_set(const requirement_t *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

static bool holds(const requirement_t *r, const cJSON *labels)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(labels, r->key);
    const char *v = cJSON_IsString(l) ? l->valuestring : NULL;
    char *end;
    long long n;

    switch (r->op) {
    case OP_EQ:
    case OP_IN:
        return v != NULL && in_set(r, v);
    case OP_NE:
    case OP_NOTIN:
        return v == NULL || !in_set(r, v);
    case OP_EXISTS:
        return v != NULL;
    case OP_NOT_EXISTS:
        return v == NULL;
    case OP_GT:
    case OP_LT:
        if (v == NULL)
            return false;
        errno = 0;
        n = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || errno != 0)
            return false;
        return r->op == OP_GT ? n > r->number : n < r->number;
    }
    return false;
}

bool ms_label_selector_matches(const ms_label_selector_t *s, const cJSON *labels)
{
    if (s == NULL || s->nothing)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (!holds(&s->reqs[i], labels))
            return false;
    return true;
}
