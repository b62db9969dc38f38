/*
 * decide.h - `meshscaler decide`: run the engine over a JSON scenario
 * (docs/decide.md) and write one line per tick.
 *
 * The whole scenario is validated before the first tick is decided, so
 * invalid input produces an error and no output at all.
 *
 * Reentrant; the caller owns the input text. Output goes through a callback
 * so the command, tests and the fuzz target can each put it where they need.
 */
#ifndef MESHSCALER_DECIDE_H
#define MESHSCALER_DECIDE_H

#include <stddef.h>

#include "meshscaler/engine.h"
#include "meshscaler/error.h"

/* Largest scenario accepted, in bytes. */
#define MS_DECIDE_MAX_INPUT_BYTES (64u * 1024u * 1024u)

typedef enum {
    MS_DECIDE_JSON = 0, /* JSON Lines, the contract of docs/decide.md */
    MS_DECIDE_TEXT      /* one readable line per tick, for people */
} ms_decide_format_t;

/* Receives one output line (without the newline). Return non-zero to stop. */
typedef int (*ms_decide_emit_fn)(void *ctx, const char *line, size_t len);

/* Parse, validate and run the scenario in text[0..len).
 * Returns MS_OK when every tick was emitted; MS_ERR_INVALID with
 * "json.path: reason" in errbuf when the input is invalid (nothing was
 * emitted); MS_ERR_IO when emit asked to stop; MS_ERR_NOMEM. */
ms_err_t ms_decide_run(const char *text, size_t len, ms_decide_format_t format,
                       ms_decide_emit_fn emit, void *ctx, char *errbuf, size_t errlen);

/* Validate only (no output); same errors as ms_decide_run. */
ms_err_t ms_decide_validate(const char *text, size_t len, char *errbuf, size_t errlen);

#endif
