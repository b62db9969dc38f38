/*
 * fuzz_scenario.c - libFuzzer target for `meshscaler decide`: the JSON
 * reader, the spec and scenario validators and the engine, end to end.
 *
 * The bytes go to ms_decide_run exactly as the command passes a file: not
 * NUL-terminated, so any read past the given length is caught by ASan.
 * Both output formats are exercised (the first byte picks one) so the text
 * writer is fuzzed too; the lines themselves are discarded.
 */
#include <stddef.h>
#include <stdint.h>

#include "meshscaler/decide.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    (void)line;
    (void)len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char errbuf[MS_ERRBUF_SIZE];
    /* Parity of the size rather than a prefix byte, so the seed corpus stays
     * plain JSON files. */
    ms_decide_format_t format = (size & 1) ? MS_DECIDE_TEXT : MS_DECIDE_JSON;

    (void)ms_decide_run((const char *)data, size, format, discard, NULL, errbuf, sizeof errbuf);
    return 0;
}
