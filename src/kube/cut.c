/*
 * cut.c - metadata.managedFields cut out of a watch event as text, before
 * it is parsed.
 *
 * The informer drops managedFields from every object it keeps (memory), but
 * only after cJSON has built a node for every field of them: a pod's or a
 * status-written MeshAutoscaler's managedFields are about as large as the
 * rest of the object, and during a mass change (issue 28: 5,000 new pods,
 * 10,000 status writes echoed back) parsing watch events was a quarter of
 * the controller's CPU. One pass over the bytes finds the member and copies
 * the text around it; the parse then builds half the nodes. (Lists are not
 * cut: they run at start and after a 410, not on every change.)
 *
 * The scan knows strings (escapes included) and brackets, nothing more. It
 * cuts only where the API server puts the field, the event's
 * object.metadata. On text it cannot follow
 * (an unterminated string, unbalanced brackets) it cuts nothing and the
 * parser reports what is wrong with the original.
 */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "kube_internal.h"

#define KEY "\"managedFields\""
#define KEY_LEN (sizeof KEY - 1)
/* The keys of the containers on the path are remembered this deep: the
 * event, its object, the object's metadata. */
#define TRACKED 3

typedef struct {
    const char *key; /* the member's key (with its quotes) that holds this container */
    size_t key_len;
    bool object;
    bool expect_key;  /* an object's next string is a key */
    size_t last_sep;  /* index of the '{' or ',' before the current member */
    const char *pkey; /* an object's key just read, for the container it opens */
    size_t pkey_len;
} frame_t;

static bool key_is(const frame_t *f, const char *quoted)
{
    size_t n = strlen(quoted);

    return f->key_len == n && memcmp(f->key, quoted, n) == 0;
}

/* The object at this depth is the event's object.metadata. */
static bool at_metadata(const frame_t *st, int depth)
{
    return depth == 3 && key_is(&st[1], "\"object\"") && key_is(&st[2], "\"metadata\"");
}

/* The index just past the string that opens at s[i] ('"'); 0 when it does
 * not end. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* Space as cJSON reads it (any byte up to ' '), so the cut never parses
 * differently from the original. */
static bool is_space(char ch)
{
    return (unsigned char)ch <= ' ';
}

static size_t skip_space(const char *s, size_t len, size_t i)
{
    while (i < len && is_space(s[i]))
        i++;
    return i;
}

/* The index just past the JSON value that starts at s[i]; 0 when it does
 * not end within len. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
    int depth = 0;

    if (i >= len)
        return 0;
    if (s[i] != '{' && s[i] != '[' && s[i] != '"') { /* a number, true, false, null */
        while (i < len && !is_space(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']')
            i++;
        return i < len ? i : 0;
    }
    while (i < len) {
        if (s[i] == '"') {
            if ((i = skip_string(s, len, i)) == 0)
                return 0;
            if (depth == 0)
                return i;
            continue;
        }
        if (s[i] == '{' || s[i] == '[')
            depth++;
        else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
            return i + 1;
        i++;
    }
    return 0;
}

/* The member whose key opens at s[key] runs to *end; what to remove is
 * [*from, *end): with the ',' before it, or when it is the first member,
 * with the ',' after it. False when the value does not end. */
static bool member_span(const char *s, size_t len, size_t key, size_t sep, size_t *from,
                        size_t *end)
{
    size_t i = skip_space(s, len, key + KEY_LEN);

    if (i >= len || s[i] != ':')
        return false;
    if ((i = skip_value(s, len, skip_space(s, len, i + 1))) == 0)
        return false;
    if (s[sep] == ',') {
        *from = sep;
    } else {
        *from = key;
        i = skip_space(s, len, i);
        if (i < len && s[i] == ',')
            i++;
    }
    *end = i;
    return true;
}

static bool copy_out(ms_buf_t *out, const char *s, size_t from, size_t to)
{
    return to <= from || ms_buf_append(out, s + from, to - from) == MS_OK;
}

/* A key was read at s[i..j) in the object st[depth-1]: the member to cut? */
static bool cut_here(const frame_t *st, int depth, const char *s, size_t i, size_t j)
{
    return depth <= TRACKED && j - i == KEY_LEN && memcmp(s + i, KEY, KEY_LEN) == 0 &&
           at_metadata(st, depth);
}

bool ms__kube_cut_managed_fields(const char *s, size_t len, ms_buf_t *out)
{
    frame_t st[TRACKED + 1];
    int depth = 0, cuts = 0;
    size_t i = 0, copied = 0;

    if (len < KEY_LEN || memmem(s, len, KEY, KEY_LEN) == NULL)
        return false;
    out->len = 0;
    while (i < len) {
        char ch = s[i];
        frame_t *f = depth > 0 && depth <= TRACKED ? &st[depth - 1] : NULL;

        if (ch == '"') {
            size_t j = skip_string(s, len, i), from, end;
            if (j == 0)
                return false;
            if (f != NULL && f->object && f->expect_key) {
                f->expect_key = false;
                f->pkey = s + i;
                f->pkey_len = j - i;
                if (cut_here(st, depth, s, i, j)) {
                    if (!member_span(s, len, i, f->last_sep, &from, &end) ||
                        !copy_out(out, s, copied, from))
                        return false;
                    copied = end;
                    cuts++;
                    j = end;
                    /* cut with the ',' after it: the next string is a key */
                    f->expect_key = s[f->last_sep] == '{';
                }
            }
            i = j;
            continue;
        }
        if (ch == '{' || ch == '[') {
            if (depth < TRACKED) {
                frame_t *n = &st[depth];
                n->key = f != NULL && f->object ? f->pkey : "[]";
                n->key_len = f != NULL && f->object ? f->pkey_len : 2;
                n->object = ch == '{';
                n->expect_key = n->object;
                n->last_sep = i;
            }
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (--depth < 0)
                return false;
        } else if (ch == ',' && f != NULL && f->object) {
            f->expect_key = true;
            f->last_sep = i;
        }
        i++;
    }
    if (depth != 0 || cuts == 0 || !copy_out(out, s, copied, len))
        return false;
    return true;
}
