/*
 * jscan.h - a pull scanner over one JSON text held in memory (RFC 8259),
 * private to the Prometheus response decoder (decode.c).
 *
 * The caller asks for the next value, member or element and gets byte spans
 * of the input back: nothing is allocated or copied, so the decoder keeps
 * only what it needs, in its own compact form. The scanner never reads past
 * len, nests at most MS__JSCAN_MAX_DEPTH containers deep, allows whitespace
 * wherever JSON does, and checks strings (escapes, \uXXXX surrogate pairs,
 * no raw control characters) and numbers against the JSON grammar as it
 * passes them, so a span it returned can be decoded without further checks.
 * The first error sticks: every later call returns false.
 *
 * Ownership: a scanner borrows its input for as long as it is used.
 * Threads: a scanner belongs to one thread.
 */
#ifndef MESHSCALER_PROM_JSCAN_H
#define MESHSCALER_PROM_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* Prometheus answers nest six deep at most; anything far deeper is not one. */
#define MS__JSCAN_MAX_DEPTH 64

typedef enum {
    MS__JSON_NONE = 0, /* absent (a member that was not there) */
    MS__JSON_OBJECT,
    MS__JSON_ARRAY,
    MS__JSON_STRING,
    MS__JSON_NUMBER,
    MS__JSON_TRUE,
    MS__JSON_FALSE,
    MS__JSON_NULL
} ms__json_type_t;

typedef enum {
    MS__JSCAN_OK = 0,
    MS__JSCAN_TRUNCATED, /* the input ended inside the document */
    MS__JSCAN_MALFORMED  /* not JSON, or nested too deep */
} ms__jscan_err_t;

/* One value, as offsets into the scanner's input. A string spans the bytes
 * between its quotes (escapes not decoded); a number or literal its bytes;
 * an object or array starts at its opening bracket and ends after its
 * closing one once ms__jscan_skip() passed it (end is 0 until then). */
typedef struct {
    ms__json_type_t type;
    size_t start, end;
    bool escaped; /* a string with at least one backslash */
} ms__jval_t;

typedef struct {
    const char *p; /* borrowed input */
    size_t len;
    size_t pos; /* the next byte to read */
    unsigned depth;
    unsigned char open[MS__JSCAN_MAX_DEPTH]; /* per open container: object? items seen? */
    ms__jscan_err_t err;
    size_t err_at;        /* byte offset of the first error */
    const char *err_what; /* static, e.g. "an invalid escape"; "" when OK */
} ms__jscan_t;

/* A scanner over p[0, len) that starts reading at byte pos. */
void ms__jscan_init(ms__jscan_t *s, const char *p, size_t len, size_t pos);

/* Skip whitespace; true with the next byte in *c, false at the end of the
 * input (no error is set: the caller decides what an end means there). */
bool ms__jscan_peek(ms__jscan_t *s, char *c);

/* Read the next value into *v. A string, number or literal is consumed
 * whole; of an object or array only the opening bracket: its contents
 * come from ms__jscan_member() or ms__jscan_element(), or ms__jscan_skip()
 * passes them. False on error (s->err says which). */
bool ms__jscan_value(ms__jscan_t *s, ms__jval_t *v);

/* In the object opened last: true with the next member's name in *key and
 * its ':' consumed (read the member's value next); false when the object
 * closed (s->err stays OK) or on error. */
bool ms__jscan_member(ms__jscan_t *s, ms__jval_t *key);

/* In the array opened last: true when an element follows (read it with
 * ms__jscan_value() next); false when the array closed or on error. */
bool ms__jscan_element(ms__jscan_t *s);

/* Pass what is left of v, the value ms__jscan_value() just read: for an
 * object or array (nothing of it read yet) everything up to its closing
 * bracket, and v->end is set. A scalar was consumed already. False on
 * error. */
bool ms__jscan_skip(ms__jscan_t *s, ms__jval_t *v);

/* Decode the string body in[0, len) (the bytes between the quotes, as the
 * scanner checked them) into out, at most cap bytes, without a NUL. out may
 * be in itself: the decoded form is never longer. *outlen gets the bytes
 * written; returns true when all of the string fit. */
bool ms__jscan_unescape(const char *in, size_t len, char *out, size_t cap, size_t *outlen);

/* Whether string v of input p decodes to exactly lit. */
bool ms__jscan_equals(const char *p, const ms__jval_t *v, const char *lit);

/* Number v of input p as a double (+-HUGE_VAL when out of range). False
 * when v is no number, or when a copy of a long one cannot be allocated. */
bool ms__jscan_number(const char *p, const ms__jval_t *v, double *out);

#endif
