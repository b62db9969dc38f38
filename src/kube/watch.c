/*
 * watch.c - paginated lists, and watches read as one JSON event per line
 * through a bounded buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/informer.h"
#include "meshscaler/log.h"

/* ---- line framing ---- */

void ms__kube_lines_init(ms__kube_lines_t *l, size_t max_line, ms__kube_line_fn fn, void *ctx)
{
    ms_buf_init(&l->partial, max_line);
    l->on_line = fn;
    l->ctx = ctx;
    l->err = MS_OK;
}

void ms__kube_lines_cleanup(ms__kube_lines_t *l)
{
    ms_buf_cleanup(&l->partial);
}

static ms_err_t emit(ms__kube_lines_t *l, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return MS_OK;
    return l->on_line(l->ctx, line, len);
}

ms_err_t ms__kube_lines_feed(ms__kube_lines_t *l, const char *data, size_t len)
{
    while (l->err == MS_OK && len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;

        if (nl != NULL && l->partial.len == 0) {
            /* The whole line is in this chunk: no copy. */
            l->err = emit(l, data, take);
        } else {
            if (ms_buf_append(&l->partial, data, take) != MS_OK) {
                l->err = MS_ERR_TOOLARGE;
                break;
            }
            if (nl != NULL) {
                l->err = emit(l, l->partial.data, l->partial.len);
                l->partial.len = 0;
            }
        }
        if (nl == NULL)
            break;
        data += take + 1;
        len -= take + 1;
    }
    return l->err;
}

/* ---- decoding one event ---- */

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

ms_err_t ms_kube_watch_decode(const char *line, size_t len, ms_kube_event_type_t *type,
                              cJSON **object, char *errbuf, size_t errlen)
{
    cJSON *ev = cJSON_ParseWithLength(line, len);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "type");
    cJSON *obj;
    const cJSON *rv;
    int i;

    *object = NULL;
    if (ev == NULL || !cJSON_IsObject(ev)) {
        cJSON_Delete(ev);
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "watch event: not a JSON object");
    }
    for (i = 0; i < 5; i++)
        if (cJSON_IsString(t) && strcmp(t->valuestring, type_names[i]) == 0)
            break;
    if (i == 5) {
        cJSON_Delete(ev);
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "watch event: type: not a known event type");
    }
    obj = cJSON_DetachItemFromObjectCaseSensitive(ev, "object");
    cJSON_Delete(ev);
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return ms_errf(errbuf, errlen, MS_ERR_PARSE, "watch event: object: not a JSON object");
    }
    if (i != MS_KUBE_EV_ERROR) {
        rv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                              "resourceVersion");
        if (!cJSON_IsString(rv) || rv->valuestring[0] == '\0' || strlen(rv->valuestring) >= 64) {
            cJSON_Delete(obj);
            return ms_errf(errbuf, errlen, MS_ERR_PARSE,
                           "watch event: object.metadata.resourceVersion: missing or not a string");
        }
        if (i != MS_KUBE_EV_BOOKMARK &&
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name"))) {
            cJSON_Delete(obj);
            return ms_errf(errbuf, errlen, MS_ERR_PARSE,
                           "watch event: object.metadata.name: missing or not a string");
        }
    }
    *type = (ms_kube_event_type_t)i;
    *object = obj;
    return MS_OK;
}

/* ---- list ---- */

static ms_err_t query_path(ms_buf_t *b, const char *path, const char *const *kv, size_t n)
{
    ms_err_t err = ms_buf_append(b, path, strlen(path));
    char sep = strchr(path, '?') ? '&' : '?';

    for (size_t i = 0; i + 1 < n && err == MS_OK; i += 2) {
        if (kv[i + 1] == NULL || kv[i + 1][0] == '\0')
            continue;
        if ((err = ms_buf_append(b, &sep, 1)) != MS_OK ||
            (err = ms_buf_append(b, kv[i], strlen(kv[i]))) != MS_OK ||
            (err = ms_buf_append(b, "=", 1)) != MS_OK)
            break;
        err = ms__kube_urlencode(b, kv[i + 1]);
        sep = '&';
    }
    return err;
}

/* A page's limit after its body went past the cap: half, down to one. */
static long shrunk(long limit)
{
    return limit > 1 ? limit / 2 : 0;
}

/* One page of a list (doc, freed here): check its shape, copy its
 * resourceVersion into rv, hand each item to fn, and replace *cont with the
 * page's continue token (NULL after the last page). */
static ms_err_t take_page(cJSON *doc, const char *path, ms_kube_item_fn fn, void *ctx, char *rv,
                          size_t rvcap, char **cont, ms_kube_error_t *kerr)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items"), *item;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    const cJSON *lrv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(md, "continue");
    ms_err_t err = MS_OK;

    if ((items != NULL && !cJSON_IsNull(items) && !cJSON_IsArray(items)) || !cJSON_IsString(lrv) ||
        strlen(lrv->valuestring) >= rvcap) {
        cJSON_Delete(doc);
        return kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_PARSE,
                                   "list %s: not a list (items or metadata.resourceVersion)", path);
    }
    snprintf(rv, rvcap, "%s", lrv->valuestring);
    cJSON_ArrayForEach(item, items)
    {
        if ((err = fn(ctx, item)) != MS_OK)
            break;
    }
    free(*cont);
    *cont = cJSON_IsString(next) && next->valuestring[0] ? strdup(next->valuestring) : NULL;
    cJSON_Delete(doc);
    if (err != MS_OK)
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, err, "list %s: item refused", path);
    return err;
}

ms_err_t ms_kube_list(ms_kube_client_t *c, const char *path, const char *label_selector, long limit,
                      ms_kube_item_fn fn, void *ctx, char *rv, size_t rvcap, unsigned long *pages,
                      ms_kube_error_t *kerr)
{
    char *cont = NULL, limit_s[24];
    bool restarted = false;
    ms_err_t err = MS_OK;
    long page_limit = limit > 0 ? limit : 500;

    for (;;) {
        const char *kv[] = {"limit", limit_s, "continue", cont, "labelSelector", label_selector};
        ms_buf_t url;
        cJSON *doc = NULL;

        snprintf(limit_s, sizeof limit_s, "%ld", page_limit);
        ms_buf_init(&url, 16384);
        if ((err = query_path(&url, path, kv, 6)) != MS_OK) {
            ms_buf_cleanup(&url);
            kerr->err =
                ms_errf(kerr->message, sizeof kerr->message, err, "list %s: URL too long", path);
            break;
        }
        err = ms__kube_get_capped(c, url.data, MS_KUBE_LIST_PAGE_MAX, &doc, kerr);
        ms_buf_cleanup(&url);
        if (pages != NULL)
            (*pages)++;
        if (err == MS_ERR_TOOLARGE && shrunk(page_limit) > 0) {
            /* The page's objects are too large together: ask again from the
             * same point (a continue token holds a position, not a page
             * size) for half as many. The smaller limit stays for the rest
             * of this list. */
            page_limit = shrunk(page_limit);
            MS_LOG_INFO("list page over its size limit; asking for fewer objects",
                        MS_S("path", path), MS_I("limit", page_limit),
                        MS_I("max_bytes", (long long)MS_KUBE_LIST_PAGE_MAX));
            continue;
        }
        if (err == MS_ERR_TOOLARGE) {
            err = kerr->err =
                ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TOOLARGE,
                        "list %s: one object is larger than %u bytes", path, MS_KUBE_LIST_PAGE_MAX);
            break;
        }
        if (err == MS_ERR_GONE && cont != NULL && !restarted) {
            /* The continue token expired (compaction): start over once. */
            MS_LOG_INFO("list continue token expired; listing again", MS_S("path", path));
            free(cont);
            cont = NULL;
            restarted = true;
            if ((err = fn(ctx, NULL)) != MS_OK) {
                kerr->err = ms_errf(kerr->message, sizeof kerr->message, err,
                                    "list %s: restart refused", path);
                break;
            }
            continue;
        }
        if (err != MS_OK)
            break;
        err = take_page(doc, path, fn, ctx, rv, rvcap, &cont, kerr);
        if (err != MS_OK || cont == NULL)
            break;
    }
    free(cont);
    return err;
}

/* ---- watch ---- */

typedef struct {
    ms__kube_lines_t lines;
    const char *path;
    ms_kube_watch_fn fn;
    void *ctx;
    ms_err_t err;           /* why the stream was stopped */
    double last;            /* monotonic time of the start or the last chunk */
    ms_kube_error_t status; /* from an ERROR event */
    bool drop_managed_fields;
    ms_buf_t cut; /* the line without managedFields (owned, reused) */
    char detail[MS_ERRBUF_SIZE];
} watch_t;

static ms_err_t on_line(void *ctx, const char *line, size_t len)
{
    watch_t *w = ctx;
    ms_kube_event_type_t type;
    cJSON *obj;
    ms_err_t err;

    if (w->drop_managed_fields && ms__kube_cut_managed_fields(line, len, &w->cut)) {
        line = w->cut.data;
        len = w->cut.len;
    }
    err = ms_kube_watch_decode(line, len, &type, &obj, w->detail, sizeof w->detail);
    if (err != MS_OK)
        return err;
    if (type == MS_KUBE_EV_ERROR) {
        /* A Status: code 410 means the resourceVersion is too old. */
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        char *text = cJSON_PrintUnformatted(obj);
        long status = cJSON_IsNumber(code) ? (long)code->valuedouble : 500;

        ms__kube_error_from_status(&w->status, "WATCH", w->path, status, text,
                                   text ? strlen(text) : 0);
        free(text);
        cJSON_Delete(obj);
        return w->status.err;
    }
    return w->fn(w->ctx, type, obj);
}

static int watch_sink(void *ctx, const char *data, size_t len)
{
    watch_t *w = ctx;

    w->last = ms_clock_monotonic();
    w->err = ms__kube_lines_feed(&w->lines, data, len);
    return w->err != MS_OK;
}

ms_err_t ms_kube_watch_with(ms_kube_client_t *c, const char *path, const char *rv,
                            const ms_kube_watch_options_t *o, ms_kube_watch_fn fn, void *ctx,
                            bool *idle, ms_kube_error_t *kerr)
{
    static const ms_kube_watch_options_t defaults;
    const ms_kube_watch_options_t *opt = o != NULL ? o : &defaults;
    long idle_s =
        opt->idle_timeout_seconds > 0 ? opt->idle_timeout_seconds : MS_KUBE_WATCH_IDLE_TIMEOUT;
    char tos[24];
    const char *kv[] = {"watch",
                        "true",
                        "allowWatchBookmarks",
                        "true",
                        "resourceVersion",
                        rv,
                        "timeoutSeconds",
                        tos,
                        "labelSelector",
                        opt->label_selector};
    ms_buf_t url;
    watch_t w;
    ms_err_t err;

    if (idle != NULL)
        *idle = false;
    snprintf(tos, sizeof tos, "%ld", opt->timeout_seconds > 0 ? opt->timeout_seconds : 300);
    memset(&w, 0, sizeof w);
    ms_buf_init(&url, 16384);
    if ((err = query_path(&url, path, kv, 10)) != MS_OK) {
        ms_buf_cleanup(&url);
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, err, "watch %s: URL too long", path);
        return kerr->err;
    }
    ms__kube_lines_init(&w.lines, MS_KUBE_MAX_EVENT, on_line, &w);
    w.path = path;
    w.drop_managed_fields = opt->drop_managed_fields;
    ms_buf_init(&w.cut, MS_KUBE_MAX_EVENT);
    w.fn = fn;
    w.ctx = ctx;
    w.last = ms_clock_monotonic();
    /* The server ends the watch after timeoutSeconds. The idle timeout
     * catches a connection that died silently or a server that hung: with
     * allowWatchBookmarks the API server sends a BOOKMARK about every minute
     * (once the resource's resourceVersion moved past the watch's start, see
     * informer.h), so a longer silence means the watch is dead. (It used to
     * be timeoutSeconds + 90 s: a dead watch went unnoticed for 390-690 s.) */
    err = ms_kube_stream(c, url.data, 0, idle_s * 1000, watch_sink, &w, opt->cancel, kerr);
    if (w.err != MS_OK) {
        /* The stream was stopped by us: say why, not "cancelled". */
        if (w.status.err != MS_OK)
            *kerr = w.status;
        else if (w.err == MS_ERR_TOOLARGE)
            kerr->err =
                ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TOOLARGE,
                        "watch %s: an event is longer than %u bytes", path, MS_KUBE_MAX_EVENT);
        else
            kerr->err = ms_errf(kerr->message, sizeof kerr->message, w.err, "watch %s: %s", path,
                                w.detail[0] ? w.detail : ms_strerror(w.err));
        err = kerr->err;
    } else if (err == MS_ERR_TIMEOUT && kerr->status == 0 &&
               ms_clock_monotonic() - w.last >= (double)idle_s - 0.5) {
        /* No transfer timeout is set, so a transport timeout this long
         * after the last byte is the idle timeout (or a connect timeout
         * at least as long, which means the same). */
        if (idle != NULL)
            *idle = true;
        kerr->err = ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TIMEOUT,
                            "watch %s: nothing (no event, no bookmark) for %ld s", path, idle_s);
        err = kerr->err;
    }
    ms__kube_lines_cleanup(&w.lines);
    ms_buf_cleanup(&w.cut);
    ms_buf_cleanup(&url);
    return err;
}

ms_err_t ms_kube_watch(ms_kube_client_t *c, const char *path, const char *rv,
                       const char *label_selector, long timeout_seconds, ms_kube_watch_fn fn,
                       void *ctx, const atomic_bool *cancel, ms_kube_error_t *kerr)
{
    ms_kube_watch_options_t o;

    memset(&o, 0, sizeof o);
    o.label_selector = label_selector;
    o.timeout_seconds = timeout_seconds;
    o.cancel = cancel;
    return ms_kube_watch_with(c, path, rv, &o, fn, ctx, NULL, kerr);
}
