/*
 * fuzz_prom_response.c - libFuzzer target for the Prometheus response decoder.
 *
 * Input: one byte choosing the HTTP status the body arrived with, then the
 * body. Besides crashes and overreads (the body is handed over with its exact
 * length, not NUL-terminated), it holds the decoder to its contract on every
 * input: a reason inside the enum, a one-line terminated message, well-formed
 * series, and a number only when it is finite and the result says OK.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const long statuses[] = {200, 400, 422, 503, 404, 500, 401, 204};

static void one_line(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL || strchr(s, '\n') != NULL || strchr(s, '\r') != NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_prom_result_t r;
    ms_prom_reason_t reason;
    long status;
    double v = 12345.678;
    char msg[MS_ERRBUF_SIZE];
    char *body;

    if (size == 0)
        return 0;
    status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
    /* An exact-size copy: reading one byte past the body trips ASan. */
    body = malloc(size - 1 ? size - 1 : 1);
    if (body == NULL)
        return 0;
    memcpy(body, data + 1, size - 1);

    ms_prom_result_init(&r);
    reason = ms_prom_decode(body, size - 1, status, &r);
    if ((unsigned)reason >= MS_PROM__COUNT || reason != r.reason)
        abort();
    one_line(r.message, sizeof r.message);
    one_line(r.warning, sizeof r.warning);
    if (reason == MS_PROM_OK) {
        if (status < 200 || status > 299)
            abort(); /* an error status never yields data */
        for (size_t i = 0; i < r.nseries; i++) {
            if (r.type == MS_PROM_TYPE_VECTOR && r.series[i].npoints != 1)
                abort();
            (void)ms_prom_series_label(&r.series[i], "__name__");
            for (size_t k = 0; k < r.series[i].npoints; k++)
                if (!isfinite(r.series[i].points[k].t))
                    abort();
        }
    }
    reason = ms_prom_result_number(&r, 1.7e9, 300, &v, msg, sizeof msg);
    if (reason == MS_PROM_OK) {
        if (!isfinite(v) || r.reason != MS_PROM_OK)
            abort();
    } else {
        if (v != 12345.678)
            abort(); /* untouched on failure */
        one_line(msg, sizeof msg);
    }
    ms_prom_result_cleanup(&r);
    free(body);
    return 0;
}
