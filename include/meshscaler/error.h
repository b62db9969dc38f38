/*
 * error.h - the one error vocabulary of meshscaler.
 *
 * Every fallible function returns an ms_err_t: 0 (MS_OK) is success, anything
 * else names what went wrong. The enum, its names and its messages are
 * generated from a single X-macro list, so they cannot drift apart.
 * Functions that can say more fill a caller-provided one-line detail buffer
 * (no newlines), in the manner of curl's CURLOPT_ERRORBUFFER.
 *
 * Thread safety: everything here is pure and reentrant.
 */
#ifndef MESHSCALER_ERROR_H
#define MESHSCALER_ERROR_H

#include <stddef.h>

/* X(name, message) */
#define MS_ERRNO_MAP(X)                                                                            \
    X(OK, "success")                                                                               \
    X(INVALID, "invalid input")                                                                    \
    X(PARSE, "malformed data")                                                                     \
    X(RANGE, "value out of range")                                                                 \
    X(NOMEM, "out of memory")                                                                      \
    X(IO, "input/output error")                                                                    \
    X(TOOLARGE, "data exceeds its size limit")                                                     \
    X(NOTFOUND, "not found")                                                                       \
    X(TIMEOUT, "timed out")                                                                        \
    X(UNAVAILABLE, "server unavailable")                                                           \
    X(TLS, "TLS failure")                                                                          \
    X(HTTP, "unexpected HTTP status")                                                              \
    X(CANCELLED, "cancelled")                                                                      \
    X(CONFLICT, "conflicting change")                                                              \
    X(GONE, "resource version expired")                                                            \
    X(FORBIDDEN, "permission denied")                                                              \
    X(UNAUTHORIZED, "not authenticated")

typedef enum {
#define MS__ERR_ENUM(name, msg) MS_ERR_##name,
    MS_ERRNO_MAP(MS__ERR_ENUM)
#undef MS__ERR_ENUM
        MS_ERR__COUNT
} ms_err_t;

#define MS_OK MS_ERR_OK

/* Symbolic name of err ("MS_ERR_RANGE"); never NULL, "MS_ERR_UNKNOWN" for
 * values outside the enum. The string is static. */
const char *ms_err_name(ms_err_t err);

/* Human message of err ("value out of range"); never NULL, static. */
const char *ms_strerror(ms_err_t err);

/* Size callers should give detail buffers; messages longer than this are cut. */
#define MS_ERRBUF_SIZE 256

/* printf-style write into a detail buffer of size len. NULL or zero-length
 * buffers are ignored. Newlines in the result are replaced by spaces so the
 * detail always stays one line. Returns err, so callers can write
 * `return ms_errf(buf, len, MS_ERR_RANGE, "...")`. */
ms_err_t ms_errf(char *buf, size_t len, ms_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
