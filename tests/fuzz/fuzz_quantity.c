/*
 * fuzz_quantity.c - libFuzzer target for the Kubernetes quantity parser.
 *
 * Besides crashes, it checks the parser's own contract, which a fuzzer can
 * hold it to on every input: success yields a finite value, failure leaves
 * *out untouched and writes a one-line, NUL-terminated message.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define UNTOUCHED 12345.678

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char errbuf[MS_ERRBUF_SIZE];
    double out = UNTOUCHED;
    ms_err_t err;

    memset(errbuf, 'x', sizeof errbuf);
    err = ms_quantity_parse_n((const char *)data, size, &out, errbuf, sizeof errbuf);
    if (err == MS_OK) {
        if (!isfinite(out))
            abort(); /* the contract promises a finite value */
    } else {
        if (err != MS_ERR_PARSE && err != MS_ERR_RANGE)
            abort();
        if (out != UNTOUCHED)
            abort(); /* *out must be left alone on failure */
        if (memchr(errbuf, '\0', sizeof errbuf) == NULL || strchr(errbuf, '\n') != NULL)
            abort(); /* one terminated line */
    }
    return 0;
}
