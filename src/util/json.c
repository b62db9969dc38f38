/* json.c - typed cJSON readers with JSON-path error messages. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/json.h"

void ms_jpath_init(ms_jpath_t *p, const char *root)
{
    p->len = 0;
    p->cut = false;
    p->cut_len = 0;
    p->text[0] = '\0';
    if (root != NULL && root[0] != '\0')
        ms_jpath_push_key(p, root);
}

/* Append s, or mark the path cut: once cut, nothing more is appended until
 * a pop goes back before the cut, so a cut path never names a wrong place. */
static void jpath_append(ms_jpath_t *p, size_t old, const char *s)
{
    size_t n = strlen(s);

    if (p->cut)
        return;
    if (p->len + n > MS_JPATH_MAX - 3) {
        p->cut = true;
        p->cut_len = old;
        memcpy(p->text + p->len, "...", 4);
        p->len += 3;
        return;
    }
    memcpy(p->text + p->len, s, n + 1);
    p->len += n;
}

/* Keys that read unambiguously after a dot; '/' too, so a round's object
 * key reads ticks[2].objects.shop/x (docs/decide.md). */
static bool plain_name(const char *key)
{
    if (key[0] == '\0')
        return false;
    for (const char *c = key; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '/'))
            return false;
    return true;
}

size_t ms_jpath_push_key(ms_jpath_t *p, const char *key)
{
    size_t old = p->len;
    char quoted[72];

    if (plain_name(key) && strlen(key) < sizeof quoted - 1) {
        /* One piece (".key"), so a cut never leaves a dangling dot. */
        snprintf(quoted, sizeof quoted, "%s%s", p->len > 0 ? "." : "", key);
        jpath_append(p, old, quoted);
    } else {
        /* Quote odd keys, cut to a readable length, without control bytes. */
        size_t j = 0;
        quoted[j++] = '[';
        quoted[j++] = '"';
        for (const char *c = key; *c && j < 64; c++)
            quoted[j++] = ((unsigned char)*c < 0x20 || *c == '"') ? '?' : *c;
        quoted[j++] = '"';
        quoted[j++] = ']';
        quoted[j] = '\0';
        jpath_append(p, old, quoted);
    }
    return old;
}

size_t ms_jpath_push_index(ms_jpath_t *p, size_t index)
{
    size_t old = p->len;
    char tmp[32];

    snprintf(tmp, sizeof tmp, "[%zu]", index);
    jpath_append(p, old, tmp);
    return old;
}

void ms_jpath_pop(ms_jpath_t *p, size_t len)
{
    if (p->cut && len <= p->cut_len)
        p->cut = false;
    if (len <= p->len) {
        p->len = len;
        p->text[len] = '\0';
    }
}

const char *ms_jpath_str(const ms_jpath_t *p)
{
    return p->len ? p->text : "$";
}

ms_err_t ms_jpath_errf(const ms_jpath_t *p, char *errbuf, size_t errlen, const char *fmt, ...)
{
    char reason[MS_ERRBUF_SIZE];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return ms_errf(errbuf, errlen, MS_ERR_INVALID, "%s: %s", ms_jpath_str(p), reason);
}

bool ms_json_is_absent(const cJSON *item)
{
    return item == NULL || cJSON_IsNull(item);
}

const char *ms_json_kind(const cJSON *item)
{
    if (item == NULL)
        return "missing";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "invalid";
}

ms_err_t ms_json_number(const cJSON *item, const ms_jpath_t *p, double *out, char *errbuf,
                        size_t errlen)
{
    if (!cJSON_IsNumber(item))
        return ms_jpath_errf(p, errbuf, errlen, "not a number (found %s)", ms_json_kind(item));
    if (!isfinite(item->valuedouble))
        return ms_jpath_errf(p, errbuf, errlen, "not a finite number");
    *out = item->valuedouble;
    return MS_OK;
}

ms_err_t ms_json_int32(const cJSON *item, const ms_jpath_t *p, int32_t min, int32_t max,
                       int32_t *out, char *errbuf, size_t errlen)
{
    double v;

    if (!cJSON_IsNumber(item))
        return ms_jpath_errf(p, errbuf, errlen, "not an integer (found %s)", ms_json_kind(item));
    v = item->valuedouble;
    if (!isfinite(v) || v != floor(v))
        return ms_jpath_errf(p, errbuf, errlen, "not an integer");
    if (v < min)
        return ms_jpath_errf(p, errbuf, errlen, "must be at least %d", (int)min);
    if (v > max)
        return ms_jpath_errf(p, errbuf, errlen, "must be at most %d", (int)max);
    *out = (int32_t)v;
    return MS_OK;
}

ms_err_t ms_json_bool(const cJSON *item, const ms_jpath_t *p, bool *out, char *errbuf,
                      size_t errlen)
{
    if (!cJSON_IsBool(item))
        return ms_jpath_errf(p, errbuf, errlen, "not a boolean (found %s)", ms_json_kind(item));
    *out = cJSON_IsTrue(item);
    return MS_OK;
}

static ms_err_t check_string(const cJSON *item, const ms_jpath_t *p, size_t min_len, size_t max_len,
                             size_t *len, char *errbuf, size_t errlen)
{
    if (!cJSON_IsString(item) || item->valuestring == NULL)
        return ms_jpath_errf(p, errbuf, errlen, "not a string (found %s)", ms_json_kind(item));
    *len = strlen(item->valuestring);
    if (*len < min_len)
        return ms_jpath_errf(p, errbuf, errlen, "must not be empty");
    if (*len > max_len)
        return ms_jpath_errf(p, errbuf, errlen, "longer than %zu characters", max_len);
    return MS_OK;
}

ms_err_t ms_json_strdup(const cJSON *item, const ms_jpath_t *p, size_t max_len, char **out,
                        char *errbuf, size_t errlen)
{
    size_t len = 0;
    char *copy;
    ms_err_t err = check_string(item, p, 1, max_len, &len, errbuf, errlen);

    if (err != MS_OK)
        return err;
    copy = malloc(len + 1);
    if (copy == NULL)
        return ms_errf(errbuf, errlen, MS_ERR_NOMEM, "%s: out of memory", ms_jpath_str(p));
    memcpy(copy, item->valuestring, len + 1);
    free(*out); /* a key repeated in the input replaces the earlier value */
    *out = copy;
    return MS_OK;
}

ms_err_t ms_json_strcpy(const cJSON *item, const ms_jpath_t *p, char *buf, size_t cap, char *errbuf,
                        size_t errlen)
{
    size_t len = 0;
    ms_err_t err = check_string(item, p, 1, cap - 1, &len, errbuf, errlen);

    if (err != MS_OK)
        return err;
    memcpy(buf, item->valuestring, len + 1);
    return MS_OK;
}

ms_err_t ms_json_enum(const cJSON *item, const ms_jpath_t *p, const char *const *names, size_t n,
                      int *index, char *errbuf, size_t errlen)
{
    char want[160] = "";
    size_t used = 0;

    if (!cJSON_IsString(item) || item->valuestring == NULL)
        return ms_jpath_errf(p, errbuf, errlen, "not a string (found %s)", ms_json_kind(item));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(item->valuestring, names[i]) == 0) {
            *index = (int)i;
            return MS_OK;
        }
        if (used < sizeof want)
            used +=
                (size_t)snprintf(want + used, sizeof want - used, "%s%s", i ? ", " : "", names[i]);
    }
    return ms_jpath_errf(p, errbuf, errlen, "unknown value \"%.40s\" (want one of %s)",
                         item->valuestring, want);
}

ms_err_t ms_json_object(const cJSON *item, const ms_jpath_t *p, char *errbuf, size_t errlen)
{
    if (!cJSON_IsObject(item))
        return ms_jpath_errf(p, errbuf, errlen, "not an object (found %s)", ms_json_kind(item));
    return MS_OK;
}

ms_err_t ms_json_array(const cJSON *item, const ms_jpath_t *p, char *errbuf, size_t errlen)
{
    if (!cJSON_IsArray(item))
        return ms_jpath_errf(p, errbuf, errlen, "not an array (found %s)", ms_json_kind(item));
    return MS_OK;
}

void ms_json_position(const char *text, const char *at, size_t *line, size_t *column)
{
    *line = 1;
    *column = 1;
    for (const char *c = text; c < at && *c; c++) {
        if (*c == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

typedef struct {
    const cJSON *item;
    size_t index; /* position in the document, so the later duplicate is named */
} keyed_t;

static int compare_keys(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    int c = strcmp(x->item->string, y->item->string);

    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

ms_err_t ms_json_unique_keys(const cJSON *item, ms_jpath_t *p, char *errbuf, size_t errlen)
{
    const cJSON *c;
    keyed_t *keys = NULL;
    size_t n = 0, i = 0;
    ms_err_t err = MS_OK;

    if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
        return MS_OK;
    for (c = item->child; c != NULL; c = c->next)
        n++;
    if (cJSON_IsObject(item) && n > 1) {
        /* Sorting keeps huge objects at n log n instead of n squared. */
        keys = malloc(n * sizeof *keys);
        if (keys == NULL)
            return ms_errf(errbuf, errlen, MS_ERR_NOMEM, "%s: out of memory", ms_jpath_str(p));
        for (c = item->child; c != NULL; c = c->next, i++)
            keys[i] = (keyed_t){c, i};
        qsort(keys, n, sizeof *keys, compare_keys);
        for (i = 1; i < n; i++)
            if (strcmp(keys[i - 1].item->string, keys[i].item->string) == 0) {
                size_t saved = ms_jpath_push_key(p, keys[i].item->string);
                err = ms_jpath_errf(p, errbuf, errlen, "duplicate key");
                ms_jpath_pop(p, saved);
                goto out;
            }
    }
    i = 0;
    for (c = item->child; c != NULL; c = c->next, i++) {
        size_t saved =
            cJSON_IsObject(item) ? ms_jpath_push_key(p, c->string) : ms_jpath_push_index(p, i);
        err = ms_json_unique_keys(c, p, errbuf, errlen);
        ms_jpath_pop(p, saved);
        if (err != MS_OK)
            goto out;
    }
out:
    free(keys);
    return err;
}

/* ---- plain lookups ---- */

const cJSON *ms_json_child(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const cJSON *ms_json_member(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    return b != NULL ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

const char *ms_json_string_member(const cJSON *obj, const char *a, const char *b,
                                  const char *fallback)
{
    const cJSON *v = ms_json_member(obj, a, b);

    return cJSON_IsString(v) ? v->valuestring : fallback;
}
