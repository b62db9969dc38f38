/*
 * json.h - typed reads from cJSON trees that name the JSON path of every
 * fault ("ticks[3].metrics.rps: not a number"), for parsers of user input.
 *
 * A ms_jpath_t is caller-provided storage describing where the reader is;
 * push a key or index before reading a child and pop back afterwards.
 * Readers never modify the tree; strings they return are owned by the caller.
 * On failure a reader returns non-zero, writes "path: reason" into the error
 * buffer and leaves its output untouched.
 *
 * Reentrant; no globals.
 */
#ifndef MESHSCALER_JSON_H
#define MESHSCALER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "meshscaler/error.h"

#define MS_JPATH_MAX 200

typedef struct {
    char text[MS_JPATH_MAX + 1];
    size_t len;
    bool cut;       /* the path ran out of room and ends in "..." */
    size_t cut_len; /* popping to this length or less removes the cut */
} ms_jpath_t;

/* Start a path at the given root name ("spec", "" for the document). */
void ms_jpath_init(ms_jpath_t *p, const char *root);
/* Append ".key" (or ["key"] when key is not a plain name); returns the
 * length to restore with ms_jpath_pop. Over-long paths end in "...". */
size_t ms_jpath_push_key(ms_jpath_t *p, const char *key);
size_t ms_jpath_push_index(ms_jpath_t *p, size_t index);
void ms_jpath_pop(ms_jpath_t *p, size_t len);
/* The path as text; "$" for the document itself. */
const char *ms_jpath_str(const ms_jpath_t *p);

/* Error helper: "path: <formatted reason>", returns MS_ERR_INVALID. */
ms_err_t ms_jpath_errf(const ms_jpath_t *p, char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* True when item is absent (NULL) or JSON null. */
bool ms_json_is_absent(const cJSON *item);
/* What item is, for messages: "a boolean", "an object", "missing", ...; static. */
const char *ms_json_kind(const cJSON *item);

/* Each reader checks item, which lives at path p. */
ms_err_t ms_json_number(const cJSON *item, const ms_jpath_t *p, double *out, char *errbuf,
                        size_t errlen);
/* A whole number within [min, max] (1.0 is accepted, 1.5 is not). */
ms_err_t ms_json_int32(const cJSON *item, const ms_jpath_t *p, int32_t min, int32_t max,
                       int32_t *out, char *errbuf, size_t errlen);
ms_err_t ms_json_bool(const cJSON *item, const ms_jpath_t *p, bool *out, char *errbuf,
                      size_t errlen);
/* A string of at most max_len bytes, copied to *out (caller frees). */
ms_err_t ms_json_strdup(const cJSON *item, const ms_jpath_t *p, size_t max_len, char **out,
                        char *errbuf, size_t errlen);
/* A string of 1..cap-1 bytes copied into buf[cap]. */
ms_err_t ms_json_strcpy(const cJSON *item, const ms_jpath_t *p, char *buf, size_t cap, char *errbuf,
                        size_t errlen);
/* A string equal to one of names[0..n); *index set to its position. */
ms_err_t ms_json_enum(const cJSON *item, const ms_jpath_t *p, const char *const *names, size_t n,
                      int *index, char *errbuf, size_t errlen);
/* Checks the kind of item: object or array. */
ms_err_t ms_json_object(const cJSON *item, const ms_jpath_t *p, char *errbuf, size_t errlen);
ms_err_t ms_json_array(const cJSON *item, const ms_jpath_t *p, char *errbuf, size_t errlen);

/* Refuse any object in the tree at item (path p) that has the same key
 * twice, naming the path of the second occurrence. MS_ERR_INVALID or
 * MS_ERR_NOMEM; p is restored on return. */
ms_err_t ms_json_unique_keys(const cJSON *item, ms_jpath_t *p, char *errbuf, size_t errlen);

/* ---- plain lookups in trusted documents ----
 * For objects the API server or Prometheus sent, where a missing or odd
 * member is an answer, not a user's mistake: no path, no message. User
 * input goes through the readers above. Results are borrowed from obj. */

/* obj.key, case-sensitive; NULL when obj is NULL, not an object or lacks key. */
const cJSON *ms_json_child(const cJSON *obj, const char *key);
/* obj.a.b (obj.a when b is NULL); NULL when a step is missing. */
const cJSON *ms_json_member(const cJSON *obj, const char *a, const char *b);
/* The string at obj.a.b (obj.a when b is NULL); fallback when that is
 * missing or not a string. */
const char *ms_json_string_member(const cJSON *obj, const char *a, const char *b,
                                  const char *fallback);

/* Line and column (1-based) of position `at` in text, for syntax errors. */
void ms_json_position(const char *text, const char *at, size_t *line, size_t *column);

#endif
