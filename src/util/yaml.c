/*
 * yaml.c - YAML streams into cJSON trees (see yaml.h for the scalar rules).
 *
 * libyaml's event parser drives a stack of open containers: a scalar, a
 * sequence or a mapping start adds a value to the container on top (for a
 * mapping, alternately a key and its value), a container start pushes and
 * its end pops. Each finished document is appended to the result array.
 */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "meshscaler/yaml.h"

typedef struct {
    cJSON *node; /* an array or object, owned by its parent (or by `doc`) */
    char *key;   /* a mapping's key waiting for its value; owned */
} level_t;

typedef struct {
    level_t stack[MS_YAML_MAX_DEPTH];
    size_t depth;
    cJSON *doc;  /* the document being built; owned until appended */
    cJSON *docs; /* the result array; owned by the caller of load_all */
} builder_t;

static bool match_word(const char *s, const char *lower, const char *title, const char *upper)
{
    return strcmp(s, lower) == 0 || strcmp(s, title) == 0 || strcmp(s, upper) == 0;
}

static bool is_digit_of(char c, int base)
{
    if (base == 16)
        return isxdigit((unsigned char)c) != 0;
    return c >= '0' && c < '0' + base;
}

/* Integers of the core schema: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+. */
static bool parse_int(const char *s, double *out)
{
    const char *digits = s;
    int base = 10;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
        base = s[1] == 'x' ? 16 : 8;
        digits = s + 2;
    } else if (*s == '-' || *s == '+') {
        digits = s + 1;
    }
    if (*digits == '\0')
        return false;
    for (const char *p = digits; *p; p++)
        if (!is_digit_of(*p, base))
            return false;
    /* strtod keeps the magnitude of a decimal too long for an integer type. */
    *out = base == 10 ? strtod(s, NULL) : (double)strtoull(digits, NULL, base);
    return true;
}

/* Floats of the core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 * and the infinities and NaN. */
static bool parse_float(const char *s, double *out)
{
    const char *p = s;
    size_t ndigits = 0;

    if (*p == '-' || *p == '+')
        p++;
    if (match_word(p, ".inf", ".Inf", ".INF")) {
        *out = *s == '-' ? -INFINITY : INFINITY;
        return true;
    }
    if (p == s && match_word(s, ".nan", ".NaN", ".NAN")) {
        *out = NAN;
        return true;
    }
    for (; *p >= '0' && *p <= '9'; p++)
        ndigits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ndigits++;
    if (ndigits == 0)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p != '\0')
        return false;
    *out = strtod(s, NULL);
    return true;
}

static cJSON *scalar_value(const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    double number;

    if (!ev->data.scalar.plain_implicit || (tag != NULL && strcmp(tag, YAML_STR_TAG) == 0))
        return cJSON_CreateString(s);
    if (*s == '\0' || match_word(s, "null", "Null", "NULL") || strcmp(s, "~") == 0)
        return cJSON_CreateNull();
    if (match_word(s, "true", "True", "TRUE"))
        return cJSON_CreateTrue();
    if (match_word(s, "false", "False", "FALSE"))
        return cJSON_CreateFalse();
    if (parse_int(s, &number) || parse_float(s, &number))
        return cJSON_CreateNumber(number);
    return cJSON_CreateString(s);
}

static ms_err_t fail_at(const yaml_mark_t *m, char *errbuf, size_t errlen, const char *what)
{
    return ms_errf(errbuf, errlen, MS_ERR_INVALID, "line %zu, column %zu: %s", m->line + 1,
                   m->column + 1, what);
}

/* The path of `key` in the open containers ("spec.metrics[0].type"), into
 * out (cut short if it does not fit). Each open container hangs off the one
 * below it as its last item, under cJSON's `string` in a mapping. */
static void key_path(const builder_t *b, const char *key, char *out, size_t cap)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 1; i < b->depth && len < cap; i++) {
        const cJSON *parent = b->stack[i - 1].node, *node = b->stack[i].node;

        if (cJSON_IsArray(parent))
            len += (size_t)snprintf(out + len, cap - len, "[%d]", cJSON_GetArraySize(parent) - 1);
        else
            len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "." : "", node->string);
    }
    if (len < cap)
        snprintf(out + len, cap - len, "%s%s", len ? "." : "", key);
}

/* Kubernetes' strict decoding refuses a key given twice in one mapping
 * (keeping either value silently hides what the cluster will keep). */
static ms_err_t refuse_duplicate(const builder_t *b, const char *key, const yaml_event_t *ev,
                                 char *errbuf, size_t errlen)
{
    char path[512], what[600];

    key_path(b, key, path, sizeof path);
    snprintf(what, sizeof what, "duplicate key \"%s\"", path);
    return fail_at(&ev->start_mark, errbuf, errlen, what);
}

/* Add value (owned, consumed) to the container on top, or make it the
 * document. Keys of a mapping are scalars, taken as text; a key the mapping
 * already has is refused. */
static ms_err_t add_value(builder_t *b, cJSON *value, const yaml_event_t *ev, char *errbuf,
                          size_t errlen)
{
    level_t *top;

    if (value == NULL)
        return MS_ERR_NOMEM;
    if (b->depth == 0) {
        b->doc = value;
        return MS_OK;
    }
    top = &b->stack[b->depth - 1];
    if (cJSON_IsArray(top->node)) {
        cJSON_AddItemToArray(top->node, value);
        return MS_OK;
    }
    if (top->key == NULL) {
        /* open_container refuses a container here: this is a scalar. */
        const char *key = (const char *)ev->data.scalar.value;

        cJSON_Delete(value);
        if (cJSON_GetObjectItemCaseSensitive(top->node, key) != NULL)
            return refuse_duplicate(b, key, ev, errbuf, errlen);
        top->key = strdup(key);
        return top->key != NULL ? MS_OK : MS_ERR_NOMEM;
    }
    cJSON_AddItemToObject(top->node, top->key, value);
    free(top->key);
    top->key = NULL;
    return MS_OK;
}

static ms_err_t open_container(builder_t *b, cJSON *node, const yaml_event_t *ev, char *errbuf,
                               size_t errlen)
{
    ms_err_t err;

    if (node == NULL)
        return MS_ERR_NOMEM;
    if (b->depth == MS_YAML_MAX_DEPTH) {
        cJSON_Delete(node);
        return fail_at(&ev->start_mark, errbuf, errlen, "nested too deeply");
    }
    if (b->depth > 0 && cJSON_IsObject(b->stack[b->depth - 1].node) &&
        b->stack[b->depth - 1].key == NULL) {
        cJSON_Delete(node);
        return fail_at(&ev->start_mark, errbuf, errlen, "a mapping key must be a scalar");
    }
    err = add_value(b, node, ev, errbuf, errlen);
    if (err != MS_OK)
        return err;
    b->stack[b->depth++] = (level_t){node, NULL};
    return MS_OK;
}

static ms_err_t on_event(builder_t *b, const yaml_event_t *ev, char *errbuf, size_t errlen)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        /* A "\0" escape would end the C string early: "ab\0cd" read as "ab". */
        if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) != NULL)
            return fail_at(&ev->start_mark, errbuf, errlen,
                           "a NUL character (\"\\0\") is not allowed in a scalar");
        return add_value(b, scalar_value(ev), ev, errbuf, errlen);
    case YAML_SEQUENCE_START_EVENT:
        return open_container(b, cJSON_CreateArray(), ev, errbuf, errlen);
    case YAML_MAPPING_START_EVENT:
        return open_container(b, cJSON_CreateObject(), ev, errbuf, errlen);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        b->depth--;
        return MS_OK;
    case YAML_ALIAS_EVENT:
        return fail_at(&ev->start_mark, errbuf, errlen, "aliases (*name) are not supported");
    case YAML_DOCUMENT_END_EVENT:
        if (b->doc != NULL && !cJSON_IsNull(b->doc)) {
            cJSON_AddItemToArray(b->docs, b->doc);
        } else {
            cJSON_Delete(b->doc);
        }
        b->doc = NULL;
        return MS_OK;
    default:
        return MS_OK;
    }
}

ms_err_t ms_yaml_load_all(const char *text, size_t len, cJSON **docs, char *errbuf, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    builder_t b = {.depth = 0};
    ms_err_t err = MS_OK;
    bool done = false;

    if (!yaml_parser_initialize(&parser))
        return MS_ERR_NOMEM;
    b.docs = cJSON_CreateArray();
    if (b.docs == NULL) {
        err = MS_ERR_NOMEM;
        goto out;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done && err == MS_OK) {
        if (!yaml_parser_parse(&parser, &ev)) {
            err = fail_at(&parser.problem_mark, errbuf, errlen,
                          parser.problem != NULL ? parser.problem : "not YAML");
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        err = on_event(&b, &ev, errbuf, errlen);
        yaml_event_delete(&ev);
    }
out:
    /* On error the open containers all hang off b.doc: one delete frees them. */
    for (size_t i = 0; i < b.depth; i++)
        free(b.stack[i].key);
    if (err != MS_OK) {
        cJSON_Delete(b.doc);
        cJSON_Delete(b.docs);
    } else {
        *docs = b.docs;
    }
    yaml_parser_delete(&parser);
    return err;
}
