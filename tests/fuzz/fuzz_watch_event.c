/*
 * fuzz_watch_event.c - libFuzzer target for the watch stream: bytes are cut
 * into lines by the bounded framer (in chunks the input chooses) and each
 * line goes through the event decoder, as they do when a server sends them.
 *
 * Contract checked: a decoded event has a JSON-object payload and, except
 * for ERROR, a string resourceVersion; a refused line leaves no object and
 * a one-line message; no line longer than the framer's cap reaches the
 * decoder; the managedFields cut (cut.c) changes nothing else a parse sees.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"
#include "meshscaler/informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 4096

/* Printed alike (cJSON_Compare finds a member by name, so an object with a
 * key twice differs from itself). */
static bool same_text(const cJSON *a, const cJSON *b)
{
    char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
    bool same = ta != NULL && tb != NULL && strcmp(ta, tb) == 0;

    free(ta);
    free(tb);
    return same;
}

/* What the informer keeps of an event (it drops managedFields after the
 * parse): every object.metadata without its managedFields members. */
static void drop_managed(cJSON *doc)
{
    cJSON *o, *m;

    cJSON_ArrayForEach(o, doc)
    {
        if (o->string == NULL || strcmp(o->string, "object") != 0)
            continue;
        cJSON_ArrayForEach(m, o)
        {
            if (m->string != NULL && strcmp(m->string, "metadata") == 0)
                while (cJSON_GetObjectItemCaseSensitive(m, "managedFields") != NULL)
                    cJSON_DeleteItemFromObjectCaseSensitive(m, "managedFields");
        }
    }
}

/* The managedFields cut: never longer than the line; when the line is
 * JSON, the cut is too, and the informer keeps the same of both. */
static void check_cut(const char *line, size_t len)
{
    ms_buf_t out;
    cJSON *want, *got;

    ms_buf_init(&out, MAX_LINE);
    if (!ms__kube_cut_managed_fields(line, len, &out)) {
        ms_buf_cleanup(&out);
        return;
    }
    if (out.len >= len)
        abort();
    want = cJSON_ParseWithLength(line, len);
    if (want != NULL) {
        got = cJSON_ParseWithLength(out.data, out.len);
        if (got == NULL)
            abort();
        drop_managed(want);
        drop_managed(got);
        if (!same_text(got, want))
            abort();
        cJSON_Delete(got);
        cJSON_Delete(want);
    }
    ms_buf_cleanup(&out);
}

static ms_err_t on_line(void *ctx, const char *line, size_t len)
{
    ms_kube_event_type_t type;
    cJSON *obj = (cJSON *)1;
    char errbuf[MS_ERRBUF_SIZE];
    ms_err_t err;

    (void)ctx;
    if (len > MAX_LINE || memchr(line, '\n', len) != NULL)
        abort();
    check_cut(line, len);
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
