/*
 * fuzz_scenario.c - libFuzzer target for `meshscaler decide`: the JSON
 * reader, the spec and scenario validators and the engine, end to end.
 *
 * The bytes go to ms_decide_run exactly as the command passes a file: not
 * NUL-terminated, so any read past the given length is caught by ASan.
 * Both output formats are exercised so the text writer is fuzzed too.
 * Besides crashes, it holds decide to its contract on every input: invalid
 * input emits nothing, each JSON line is a JSON object, and the error is one
 * non-empty line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "meshscaler/decide.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    ms_decide_format_t format;
    size_t lines;
} sink_t;

static int check_line(void *ctx, const char *line, size_t len)
{
    sink_t *sink = ctx;

    sink->lines++;
    if (memchr(line, '\n', len) != NULL)
        abort(); /* one line per tick, whatever the input held */
    if (sink->format == MS_DECIDE_JSON) {
        cJSON *o = cJSON_ParseWithLength(line, len);
        if (!cJSON_IsObject(o))
            abort();
        cJSON_Delete(o);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char errbuf[MS_ERRBUF_SIZE];
    /* Parity of the size picks the format, so the seed corpus stays plain
     * JSON files. */
    sink_t sink = {(size & 1) ? MS_DECIDE_TEXT : MS_DECIDE_JSON, 0};
    ms_err_t err;

    errbuf[0] = '\0';
    err = ms_decide_run((const char *)data, size, sink.format, check_line, &sink, errbuf,
                        sizeof errbuf);
    if (err != MS_OK) {
        if (err == MS_ERR_INVALID && sink.lines != 0)
            abort(); /* validation must finish before the first tick */
        if (errbuf[0] == '\0' || strchr(errbuf, '\n') != NULL)
            abort();
    }
    return 0;
}
