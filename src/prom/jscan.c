/*
 * jscan.c - a pull scanner over one JSON text in memory (see jscan.h).
 *
 * Every read is bounded by s->len; running out of input anywhere is
 * TRUNCATED, any other departure from RFC 8259 is MALFORMED, and the
 * offset of the offending byte is kept for the decoder's message.
 */
#include <stdlib.h>
#include <string.h>

#include "jscan.h"

/* s->open[] flags of one open container. */
#define OPEN_OBJECT 1u /* an object, not an array */
#define OPEN_ITEMS 2u  /* a member or element was read: the next needs a comma */

void ms__jscan_init(ms__jscan_t *s, const char *p, size_t len, size_t pos)
{
    memset(s, 0, sizeof *s);
    s->p = p;
    s->len = len;
    s->pos = pos < len ? pos : len;
    s->err_what = "";
}

/* Record the first error; returns false for the caller to pass on. */
static bool fail(ms__jscan_t *s, ms__jscan_err_t err, size_t at, const char *what)
{
    if (s->err == MS__JSCAN_OK) {
        s->err = err;
        s->err_at = at;
        s->err_what = what;
    }
    return false;
}

static bool truncated(ms__jscan_t *s)
{
    return fail(s, MS__JSCAN_TRUNCATED, s->len, "the end of the input");
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool ms__jscan_peek(ms__jscan_t *s, char *c)
{
    while (s->pos < s->len && is_space(s->p[s->pos]))
        s->pos++;
    if (s->pos >= s->len)
        return false;
    *c = s->p[s->pos];
    return true;
}

/* Like ms__jscan_peek, but the input must go on: its end is TRUNCATED. */
static bool next_byte(ms__jscan_t *s, char *c)
{
    if (s->err != MS__JSCAN_OK)
        return false;
    return ms__jscan_peek(s, c) || truncated(s);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p; the caller made sure they are there. */
static unsigned hex4(const char *p)
{
    unsigned v = 0;

    for (int k = 0; k < 4; k++)
        v = v << 4 | (unsigned)hex_digit(p[k]);
    return v;
}

/* Check the four hex digits of a \u escape starting at byte at. */
static bool check_hex4(ms__jscan_t *s, size_t at, unsigned *cp)
{
    for (size_t k = 0; k < 4; k++) {
        if (at + k >= s->len)
            return truncated(s);
        if (hex_digit(s->p[at + k]) < 0)
            return fail(s, MS__JSCAN_MALFORMED, at + k, "an invalid \\u escape");
    }
    *cp = hex4(s->p + at);
    return true;
}

static bool is_high_surrogate(unsigned cp)
{
    return cp >= 0xD800 && cp <= 0xDBFF;
}

static bool is_low_surrogate(unsigned cp)
{
    return cp >= 0xDC00 && cp <= 0xDFFF;
}

/* Check the escape whose backslash is at *at and move *at past it. UTF-16
 * surrogates must come as a high-low pair: a lone one is no character. */
static bool check_escape(ms__jscan_t *s, size_t *at)
{
    size_t i = *at;
    unsigned cp, low;

    if (i + 1 >= s->len)
        return truncated(s);
    switch (s->p[i + 1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        *at = i + 2;
        return true;
    case 'u':
        break;
    default:
        return fail(s, MS__JSCAN_MALFORMED, i, "an invalid escape");
    }
    if (!check_hex4(s, i + 2, &cp))
        return false;
    if (is_low_surrogate(cp))
        return fail(s, MS__JSCAN_MALFORMED, i, "a lone UTF-16 surrogate");
    if (!is_high_surrogate(cp)) {
        *at = i + 6;
        return true;
    }
    /* A high surrogate: "\uDC00".."\uDFFF" must follow at once. */
    if (i + 6 >= s->len)
        return truncated(s);
    if (s->p[i + 6] != '\\')
        return fail(s, MS__JSCAN_MALFORMED, i, "a lone UTF-16 surrogate");
    if (i + 7 >= s->len)
        return truncated(s);
    if (s->p[i + 7] != 'u')
        return fail(s, MS__JSCAN_MALFORMED, i, "a lone UTF-16 surrogate");
    if (!check_hex4(s, i + 8, &low))
        return false;
    if (!is_low_surrogate(low))
        return fail(s, MS__JSCAN_MALFORMED, i, "a lone UTF-16 surrogate");
    *at = i + 12;
    return true;
}

/* The bytes that end a run of plain string bytes: the closing quote, a
 * backslash, and the control characters JSON does not allow raw. Nearly
 * all of a Prometheus answer is strings, so this loop is the hot one. */
static const unsigned char string_stop[256] = {[0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1};

/* A string; s->pos is at its opening quote. */
static bool scan_string(ms__jscan_t *s, ms__jval_t *v)
{
    size_t i = s->pos + 1;

    v->type = MS__JSON_STRING;
    v->start = i;
    v->escaped = false;
    for (;;) {
        unsigned char c;

        while (i < s->len && !string_stop[(unsigned char)s->p[i]])
            i++;
        if (i >= s->len)
            return truncated(s);
        c = (unsigned char)s->p[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(s, MS__JSCAN_MALFORMED, i, "a control character in a string");
        v->escaped = true;
        if (!check_escape(s, &i))
            return false;
    }
    v->end = i;
    s->pos = i + 1;
    return true;
}

/* One or more digits at *i; the input must not end before the first. */
static bool scan_digits(ms__jscan_t *s, size_t *i)
{
    if (*i >= s->len)
        return truncated(s);
    if (!is_digit(s->p[*i]))
        return fail(s, MS__JSCAN_MALFORMED, *i, "a malformed number");
    while (*i < s->len && is_digit(s->p[*i]))
        (*i)++;
    return true;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool scan_number(ms__jscan_t *s, ms__jval_t *v)
{
    size_t i = s->pos;

    if (s->p[i] == '-')
        i++;
    if (i < s->len && s->p[i] == '0')
        i++; /* no leading zeros: "01" ends after the 0 and fails where it is read */
    else if (!scan_digits(s, &i))
        return false;
    if (i < s->len && s->p[i] == '.') {
        i++;
        if (!scan_digits(s, &i))
            return false;
    }
    if (i < s->len && (s->p[i] == 'e' || s->p[i] == 'E')) {
        i++;
        if (i < s->len && (s->p[i] == '+' || s->p[i] == '-'))
            i++;
        if (!scan_digits(s, &i))
            return false;
    }
    v->type = MS__JSON_NUMBER;
    v->start = s->pos;
    v->end = i;
    s->pos = i;
    return true;
}

static bool scan_literal(ms__jscan_t *s, ms__jval_t *v, const char *word, ms__json_type_t type)
{
    size_t n = strlen(word);

    for (size_t k = 0; k < n; k++) {
        if (s->pos + k >= s->len)
            return truncated(s);
        if (s->p[s->pos + k] != word[k])
            return fail(s, MS__JSCAN_MALFORMED, s->pos + k, "an unexpected character");
    }
    v->type = type;
    v->start = s->pos;
    v->end = s->pos + n;
    s->pos += n;
    return true;
}

static bool open_container(ms__jscan_t *s, ms__jval_t *v, bool object)
{
    if (s->depth >= MS__JSCAN_MAX_DEPTH)
        return fail(s, MS__JSCAN_MALFORMED, s->pos, "nesting deeper than 64 levels");
    s->open[s->depth++] = object ? OPEN_OBJECT : 0;
    v->type = object ? MS__JSON_OBJECT : MS__JSON_ARRAY;
    v->start = s->pos++;
    v->end = 0;
    return true;
}

bool ms__jscan_value(ms__jscan_t *s, ms__jval_t *v)
{
    char c;

    memset(v, 0, sizeof *v);
    if (!next_byte(s, &c))
        return false;
    switch (c) {
    case '{':
        return open_container(s, v, true);
    case '[':
        return open_container(s, v, false);
    case '"':
        return scan_string(s, v);
    case 't':
        return scan_literal(s, v, "true", MS__JSON_TRUE);
    case 'f':
        return scan_literal(s, v, "false", MS__JSON_FALSE);
    case 'n':
        return scan_literal(s, v, "null", MS__JSON_NULL);
    default:
        if (c == '-' || is_digit(c))
            return scan_number(s, v);
        return fail(s, MS__JSCAN_MALFORMED, s->pos, "an unexpected character");
    }
}

/* Common to members and elements: the closing bracket ends the container
 * (false, no error); after the first item a comma must come. True when an
 * item follows, with s->pos at it. */
static bool next_item(ms__jscan_t *s, bool object)
{
    unsigned char *top;
    char close = object ? '}' : ']', c;

    if (s->err != MS__JSCAN_OK)
        return false;
    if (s->depth == 0 || ((s->open[s->depth - 1] & OPEN_OBJECT) != 0) != object)
        return fail(s, MS__JSCAN_MALFORMED, s->pos, "a misplaced read"); /* a decoder bug */
    top = &s->open[s->depth - 1];
    if (!next_byte(s, &c))
        return false;
    if (c == close) {
        s->pos++;
        s->depth--;
        return false;
    }
    if (*top & OPEN_ITEMS) {
        if (c != ',')
            return fail(s, MS__JSCAN_MALFORMED, s->pos,
                        object ? "a missing ',' or '}'" : "a missing ',' or ']'");
        s->pos++;
        if (!next_byte(s, &c))
            return false;
    }
    *top |= OPEN_ITEMS;
    return true;
}

bool ms__jscan_member(ms__jscan_t *s, ms__jval_t *key)
{
    char c;

    if (!next_item(s, true))
        return false;
    if (s->p[s->pos] != '"')
        return fail(s, MS__JSCAN_MALFORMED, s->pos, "a member name that is not a string");
    if (!scan_string(s, key) || !next_byte(s, &c))
        return false;
    if (c != ':')
        return fail(s, MS__JSCAN_MALFORMED, s->pos, "a missing ':'");
    s->pos++;
    return true;
}

bool ms__jscan_element(ms__jscan_t *s)
{
    return next_item(s, false);
}

bool ms__jscan_skip(ms__jscan_t *s, ms__jval_t *v)
{
    unsigned base;

    if (s->err != MS__JSCAN_OK)
        return false;
    if (v->type != MS__JSON_OBJECT && v->type != MS__JSON_ARRAY)
        return true;
    /* Iterative, bounded by the depth limit: v is the innermost container. */
    base = s->depth - 1;
    while (s->depth > base) {
        ms__jval_t item;
        bool more = (s->open[s->depth - 1] & OPEN_OBJECT) ? ms__jscan_member(s, &item)
                                                          : ms__jscan_element(s);
        if (s->err != MS__JSCAN_OK)
            return false;
        if (more && !ms__jscan_value(s, &item))
            return false;
    }
    v->end = s->pos;
    return true;
}

/* UTF-8 of code point cp into out (room for 4); returns its length. */
static size_t utf8(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The escape at in[0] (a backslash, len bytes left) into unit; returns the
 * input bytes it took, 0 when it is cut short (the scanner rejected such a
 * string already, so that only guards the bounds). */
static size_t decode_escape(const char *in, size_t len, char *unit, size_t *n)
{
    static const char plain[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
    unsigned cp;

    *n = 1;
    if (len < 2)
        return 0;
    for (size_t k = 0; k + 1 < sizeof plain; k += 2)
        if (in[1] == plain[k]) {
            unit[0] = plain[k + 1];
            return 2;
        }
    if (len < 6)
        return 0;
    cp = hex4(in + 2);
    if (is_high_surrogate(cp)) {
        if (len < 12)
            return 0;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(in + 8) - 0xDC00);
        *n = utf8(cp, unit);
        return 12;
    }
    *n = utf8(cp, unit);
    return 6;
}

bool ms__jscan_unescape(const char *in, size_t len, char *out, size_t cap, size_t *outlen)
{
    size_t i = 0, o = 0;

    while (i < len) {
        char unit[4];
        size_t n = 1, used = 1;

        if (in[i] != '\\')
            unit[0] = in[i];
        else if ((used = decode_escape(in + i, len - i, unit, &n)) == 0)
            break;
        if (n > cap - o)
            break;
        /* The whole escape was read before its bytes are written, and the
         * writes never pass the reads: decoding in place is safe. */
        memcpy(out + o, unit, n);
        o += n;
        i += used;
    }
    *outlen = o;
    return i == len;
}

bool ms__jscan_equals(const char *p, const ms__jval_t *v, const char *lit)
{
    size_t n = strlen(lit), len = v->end - v->start, got;
    char tmp[64];

    if (v->type != MS__JSON_STRING)
        return false;
    if (!v->escaped)
        return len == n && memcmp(p + v->start, lit, n) == 0;
    /* One byte more than lit holds tells a longer string from an equal one. */
    if (n >= sizeof tmp)
        return false;
    return ms__jscan_unescape(p + v->start, len, tmp, n + 1, &got) && got == n &&
           memcmp(tmp, lit, n) == 0;
}

bool ms__jscan_number(const char *p, const ms__jval_t *v, double *out)
{
    char small[64], *text = small;
    size_t len = v->end - v->start;

    if (v->type != MS__JSON_NUMBER)
        return false;
    /* strtod needs a terminated copy. Numbers are short; a long one (a
     * hundred digits of a timestamp are still JSON) gets a copy of its own. */
    if (len >= sizeof small && (text = malloc(len + 1)) == NULL)
        return false;
    memcpy(text, p + v->start, len);
    text[len] = '\0';
    *out = strtod(text, NULL); /* the scanner checked the grammar */
    if (text != small)
        free(text);
    return true;
}
