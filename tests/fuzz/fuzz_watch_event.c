/*
 * fuzz_watch_event.c - libFuzzer target for the watch stream: bytes are cut
 * into lines by the bounded framer (in chunks the input chooses) and each
 * line goes through the event decoder, as they do when a server sends them.
 *
 * Contract checked: a decoded event has a JSON-object payload and, except
 * for ERROR, a string resourceVersion; a refused line leaves no object and
 * a one-line message; no line longer than the framer's cap reaches the
 * decoder.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"
#include "meshscaler/informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 4096

static ms_err_t on_line(void *ctx, const char *line, size_t len)
{
    ms_kube_event_type_t type;
    cJSON *obj = (cJSON *)1;
    char errbuf[MS_ERRBUF_SIZE];
    ms_err_t err;

    (void)ctx;
    if (len > MAX_LINE || memchr(line, '\n', len) != NULL)
        abort();
    memset(errbuf, 'x', sizeof errbuf);
    err = ms_kube_watch_decode(line, len, &type, &obj, errbuf, sizeof errbuf);
    if (err == MS_OK) {
        if (!cJSON_IsObject(obj) || type > MS_KUBE_EV_ERROR)
            abort();
        if (type != MS_KUBE_EV_ERROR &&
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion")))
            abort();
        cJSON_Delete(obj);
    } else {
        if (obj != NULL || memchr(errbuf, '\0', sizeof errbuf) == NULL ||
            strchr(errbuf, '\n') != NULL)
            abort();
    }
    return MS_OK; /* keep going: a bad line must not poison the next */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms__kube_lines_t l;
    size_t chunk, off = 0;

    if (size == 0)
        return 0;
    chunk = (size_t)data[0] % 64 + 1; /* the first byte picks the chunk size */
    data++;
    size--;
    ms__kube_lines_init(&l, MAX_LINE, on_line, NULL);
    while (off < size) {
        size_t n = size - off < chunk ? size - off : chunk;
        ms_err_t err = ms__kube_lines_feed(&l, (const char *)data + off, n);
        if (err != MS_OK && err != MS_ERR_TOOLARGE)
            abort();
        if (err == MS_ERR_TOOLARGE)
            break;
        off += n;
    }
    ms__kube_lines_cleanup(&l);
    return 0;
}
