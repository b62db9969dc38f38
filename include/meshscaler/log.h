/*
 * log.h - levelled, structured logging: a fixed message plus typed key/value
 * fields, written as logfmt text or JSON, one line per call, to stderr by
 * default.
 *
 *   MS_LOG_INFO("scaled", MS_S("object", key), MS_I("from", 4), MS_I("to", 8));
 *
 * The level is checked before any field is evaluated or formatted. The
 * logger's settings are the process's one piece of global state (set once at
 * start, before threads); writing is thread-safe (one locked line per call).
 * Never pass tokens, keys or Authorization headers as fields.
 */
#ifndef MESHSCALER_LOG_H
#define MESHSCALER_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { MS_LOG_ERROR = 0, MS_LOG_WARN, MS_LOG_INFO, MS_LOG_DEBUG } ms_log_level_t;
typedef enum { MS_LOG_TEXT = 0, MS_LOG_JSON } ms_log_format_t;

typedef enum {
    MS_LOG_FIELD_NONE = 0,
    MS_LOG_FIELD_STR,
    MS_LOG_FIELD_INT,
    MS_LOG_FIELD_DOUBLE
} ms_log_field_type_t;

typedef struct {
    const char *key;
    ms_log_field_type_t type;
    union {
        const char *s;
        long long i;
        double d;
    } v;
} ms_log_field_t;

#define MS_S(k, val) ((ms_log_field_t){(k), MS_LOG_FIELD_STR, {.s = (val)}})
#define MS_I(k, val) ((ms_log_field_t){(k), MS_LOG_FIELD_INT, {.i = (long long)(val)}})
#define MS_D(k, val) ((ms_log_field_t){(k), MS_LOG_FIELD_DOUBLE, {.d = (double)(val)}})

/* Configure the logger; out NULL means stderr. Call before starting threads. */
void ms_log_setup(ms_log_level_t level, ms_log_format_t format, FILE *out);
bool ms_log_enabled(ms_log_level_t level);
/* Parse "error", "warn", "info", "debug" (and "text"/"json"); false if unknown. */
bool ms_log_level_parse(const char *name, ms_log_level_t *out);
bool ms_log_format_parse(const char *name, ms_log_format_t *out);

/* Write one line. Fields with a NULL key are skipped. */
void ms_log_write(ms_log_level_t level, const char *msg, const ms_log_field_t *fields, size_t n);

/* The leading empty field lets callers pass no fields at all. */
#define MS__LOG(level, msg, ...)                                                                   \
    do {                                                                                           \
        if (ms_log_enabled(level)) {                                                               \
            const ms_log_field_t ms_log_fields_[] = {{NULL, MS_LOG_FIELD_NONE, {.i = 0}},          \
                                                     ##__VA_ARGS__};                               \
            ms_log_write(level, msg, ms_log_fields_ + 1,                                           \
                         sizeof ms_log_fields_ / sizeof ms_log_fields_[0] - 1);                    \
        }                                                                                          \
    } while (0)

#define MS_LOG_ERROR(msg, ...) MS__LOG(MS_LOG_ERROR, msg, ##__VA_ARGS__)
#define MS_LOG_WARN(msg, ...) MS__LOG(MS_LOG_WARN, msg, ##__VA_ARGS__)
#define MS_LOG_INFO(msg, ...) MS__LOG(MS_LOG_INFO, msg, ##__VA_ARGS__)
#define MS_LOG_DEBUG(msg, ...) MS__LOG(MS_LOG_DEBUG, msg, ##__VA_ARGS__)

#endif
