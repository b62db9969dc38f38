/*
 * informer.c - the list/watch loop and the cache behind it.
 *
 * One thread per informer: list -> watch -> (resume | relist) forever. The
 * cache is a map (strmap.h) from "namespace/name" to the object; only the
 * informer's thread writes it (under the write lock), readers take the read
 * lock, and notifications run with no lock held.
 *
 * An entry holds its object either as the cJSON tree (the default) or, in
 * compact mode, as its minified JSON text, parsed again on every read: a
 * cJSON node costs 64 bytes plus a malloc per member name and string, so
 * the text takes about a fifth of the tree's heap (bench/informer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/informer.h"
#include "meshscaler/json.h"
#include "meshscaler/log.h"
#include "meshscaler/strmap.h"
#include "meshscaler/xalloc.h"

#define KEY_MAX 512

/* One cached object, one allocation. Tree mode: obj is the object (owned)
 * and rv points into it; text is NULL. Compact mode: obj is NULL and key[]
 * holds "key\0rv\0text\0", rv and text pointing into it (unless its text
 * would not read back the same: see entry_new). */
typedef struct entry {
    cJSON *obj;
    const char *rv;
    const char *text;
    char key[];
} entry_t;

struct ms_kube_informer {
    ms_kube_client_t *client;
    char *path;
    char *label_selector;
    long page_size;
    long watch_timeout;
    long watch_idle_timeout;
    bool keep_managed_fields;
    bool compact; /* entries hold text, not trees */
    char **keep;  /* NULL-terminated dotted paths, owned; NULL: everything */
    ms_kube_transform_fn transform;
    ms_kube_notify_fn notify;
    void *ctx;
    ms__kube_backoff_t backoff;

    pthread_t thread;
    bool started;
    atomic_bool stop;
    atomic_bool reparse_logged; /* a cached text failed to parse (logged once) */

    pthread_rwlock_t lock; /* guards cache */
    ms_strmap_t cache;     /* key -> entry_t*, keys in the entries */
    pthread_mutex_t sync_lock;
    pthread_cond_t sync_cond;
    bool synced;

    /* Stats, guarded by sync_lock. */
    ms_kube_informer_stats_t stats;
};

/* ---- entries ---- */

static const char *rv_of(const cJSON *obj)
{
    return ms_json_string_member(obj, "metadata", "resourceVersion", "");
}

/* A tree-mode entry for obj under key; the entry owns obj from now on. */
static entry_t *entry_of_tree(const char *key, cJSON *obj)
{
    size_t kn = strlen(key) + 1;
    entry_t *e = ms_xmalloc(sizeof *e + kn);

    e->obj = obj;
    e->rv = rv_of(obj);
    e->text = NULL;
    memcpy(e->key, key, kn);
    return e;
}

/* Whether cJSON prints number n so that it parses back bit for bit. An
 * integral value under 1e15 always does (cJSON prints it with "%d" or 15
 * significant digits); any other is printed, by cJSON itself, and read
 * back: cJSON prints 15 significant digits whenever they parse back within
 * its comparison's tolerance, so a few doubles of 16 or 17 digits come back
 * one bit off (0.30000000000000004 prints as 0.3), and NaN or infinity (a
 * huge literal) prints as null. */
static bool number_reads_back(const cJSON *n)
{
    double d = n->valuedouble, back;
    char *text, *end;
    bool same;

    if (isnan(d) || isinf(d))
        return false;
    if (d == floor(d) && fabs(d) < 1e15)
        return true;
    if ((text = cJSON_PrintUnformatted(n)) == NULL)
        return false; /* out of memory: keep the tree */
    back = strtod(text, &end);
    same = *end == '\0' && back == d;
    free(text);
    return same;
}

/* Whether the text cJSON prints of obj (siblings and all below) parses back
 * to obj. Only numbers can differ (number_reads_back): strings, names and
 * their order print as they parsed. Walking the numbers costs a fraction of
 * parsing the text back, which the mass change of issue 28 paid for every
 * watch event. */
static bool prints_exactly(const cJSON *obj)
{
    for (; obj != NULL; obj = obj->next) {
        if (cJSON_IsNumber(obj) && !number_reads_back(obj))
            return false;
        if (!prints_exactly(obj->child))
            return false;
    }
    return true;
}

/* A compact entry for obj under key: its text and resourceVersion; obj is
 * borrowed and unchanged. NULL when the text would not read back as obj
 * (prints_exactly). */
static entry_t *entry_of_text(const char *key, const cJSON *obj)
{
    /* cJSON prints any tree it parsed; NULL is its allocation failure. */
    char *text;
    const char *rv = rv_of(obj);
    size_t kn = strlen(key) + 1, rn = strlen(rv) + 1, tn;
    entry_t *e;

    if (!prints_exactly(obj))
        return NULL;
    text = ms_xcheck(cJSON_PrintUnformatted(obj), "informer cache text");
    /* Three strings already in memory: their sum cannot overflow. */
    tn = strlen(text) + 1;
    e = ms_xmalloc(sizeof *e + kn + rn + tn);
    e->obj = NULL;
    memcpy(e->key, key, kn);
    memcpy(e->key + kn, rv, rn);
    memcpy(e->key + kn + rn, text, tn);
    e->rv = e->key + kn;
    e->text = e->key + kn + rn;
    free(text);
    return e;
}

/* The entry caching obj (after trim) under key, in the informer's mode.
 * Tree mode takes obj; compact mode borrows it (the caller still frees it)
 * and keeps a copy of the tree for the rare object whose text would not
 * read back the same, so both modes read the same content. */
static entry_t *entry_new(const ms_kube_informer_t *inf, const char *key, cJSON *obj)
{
    entry_t *e;

    if (!inf->compact)
        return entry_of_tree(key, obj);
    if ((e = entry_of_text(key, obj)) != NULL)
        return e;
    return entry_of_tree(key, ms_xcheck(cJSON_Duplicate(obj, true), "informer cache"));
}

static void entry_free(entry_t *e)
{
    if (e == NULL)
        return;
    cJSON_Delete(e->obj);
    free(e);
}

/* The object of e for reading. Tree mode: e->obj, borrowed like e, and
 * *owned is NULL. Compact mode: a new tree parsed from the text, also put
 * in *owned for the caller to delete. NULL when the text does not parse
 * (we printed it, so only cJSON's allocation failure could): the caller
 * treats the object as absent; logged once per informer. */
static const cJSON *entry_read(ms_kube_informer_t *inf, const entry_t *e, cJSON **owned)
{
    *owned = NULL;
    if (e->text == NULL)
        return e->obj;
    *owned = cJSON_Parse(e->text);
    if (*owned == NULL && !atomic_exchange(&inf->reparse_logged, true))
        MS_LOG_ERROR("a cached object's text does not parse; treating it as absent",
                     MS_S("path", inf->path), MS_S("key", e->key));
    return *owned;
}

/* A new tree of e's object, the caller's; NULL as for entry_read(). */
static cJSON *entry_copy(ms_kube_informer_t *inf, const entry_t *e)
{
    cJSON *copy;

    if (e->text != NULL) {
        entry_read(inf, e, &copy);
        return copy;
    }
    return ms_xcheck(cJSON_Duplicate(e->obj, true), "informer object copy");
}

/* ---- the map: "namespace/name" -> entry, keys in the entries ---- */

static const char *entry_key(const void *e, const void *ctx)
{
    (void)ctx;
    return ((const entry_t *)e)->key;
}

static void map_init(ms_strmap_t *m)
{
    ms_strmap_init_intrusive(m, entry_key, NULL);
}

/* Free every entry of m and empty it. */
static void map_clear(ms_strmap_t *m)
{
    size_t pos = 0;
    const char *key;
    void *e;

    while (ms_strmap_next(m, &pos, &key, &e))
        entry_free(e);
    ms_strmap_cleanup(m);
}

/* Insert e (the map's from now on), replacing the entry with its key;
 * returns the replaced entry (the caller's) or NULL. */
static entry_t *map_put(ms_strmap_t *m, entry_t *e)
{
    return ms_strmap_put(m, e->key, e);
}

/* ---- helpers ---- */

bool ms_kube_object_key(const cJSON *obj, char *buf, size_t cap)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    int w;

    if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
        return false;
    if (cJSON_IsString(ns) && ns->valuestring[0] != '\0')
        w = snprintf(buf, cap, "%s/%s", ns->valuestring, name->valuestring);
    else
        w = snprintf(buf, cap, "%s", name->valuestring);
    return w > 0 && (size_t)w < cap;
}

/* Whether keep asks for the member at `path` (dotted, from the object's
 * root): *whole when the member itself is kept, else only something below it. */
static bool wanted(char *const *keep, const char *path, bool *whole)
{
    size_t n = strlen(path);
    bool below = false;

    *whole = false;
    for (char *const *k = keep; *k != NULL; k++) {
        size_t kn = strlen(*k);
        if (strcmp(*k, path) == 0 || (n > kn && strncmp(path, *k, kn) == 0 && path[kn] == '.')) {
            *whole = true;
            return true;
        }
        if (kn > n && strncmp(*k, path, n) == 0 && (*k)[n] == '.')
            below = true;
    }
    return below;
}

/* Delete every member of obj (an object at `prefix`) that keep does not ask for. */
static void prune(char *const *keep, cJSON *obj, char *prefix, size_t cap)
{
    size_t len = strlen(prefix);
    cJSON *m = obj->child;

    while (m != NULL) {
        cJSON *next = m->next;
        bool whole;
        int w =
            snprintf(prefix + len, cap - len, "%s%s", len ? "." : "", m->string ? m->string : "");

        if (w < 0 || (size_t)w >= cap - len || !wanted(keep, prefix, &whole))
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, m));
        else if (!whole && cJSON_IsObject(m))
            prune(keep, m, prefix, cap);
        prefix[len] = '\0';
        m = next;
    }
}

static void trim(ms_kube_informer_t *inf, cJSON *obj)
{
    if (!inf->keep_managed_fields)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                "managedFields");
    if (inf->keep != NULL) {
        char prefix[KEY_MAX] = "";
        prune(inf->keep, obj, prefix, sizeof prefix);
    }
    if (inf->transform != NULL)
        inf->transform(inf->ctx, obj);
}

static void notify(ms_kube_informer_t *inf, ms_kube_change_t ch, const cJSON *obj, const cJSON *old)
{
    if (inf->notify == NULL)
        return;
    inf->notify(inf->ctx, ch, obj, old);
    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.notifications++;
    pthread_mutex_unlock(&inf->sync_lock);
}

static void set_rv(ms_kube_informer_t *inf, const char *rv)
{
    pthread_mutex_lock(&inf->sync_lock);
    snprintf(inf->stats.resource_version, sizeof inf->stats.resource_version, "%s", rv);
    pthread_mutex_unlock(&inf->sync_lock);
}

/* ---- list: build a new map, then diff it into the cache ---- */

typedef struct {
    ms_kube_informer_t *inf;
    ms_strmap_t fresh;
} listing_t;

static ms_err_t on_item(void *ctx, cJSON *item)
{
    listing_t *l = ctx;
    char key[KEY_MAX];
    cJSON *copy;

    if (item == NULL) { /* the list starts over */
        map_clear(&l->fresh);
        return MS_OK;
    }
    if (!ms_kube_object_key(item, key, sizeof key))
        return MS_ERR_PARSE;
    copy = ms_xcheck(cJSON_Duplicate(item, true), "listed object");
    trim(l->inf, copy);
    entry_free(map_put(&l->fresh, entry_new(l->inf, key, copy)));
    if (l->inf->compact)
        cJSON_Delete(copy); /* printed into the entry */
    return MS_OK;
}

/* Notify ch with the objects of the entries now (the new object, or the last
 * known one for DELETED) and was (the previous one for UPDATED; may be NULL).
 * Compact entries are parsed only when someone listens; one whose text does
 * not parse counts as absent. */
static void notify_entries(ms_kube_informer_t *inf, ms_kube_change_t ch, const entry_t *now,
                           const entry_t *was)
{
    cJSON *parsed_now = NULL, *parsed_was = NULL;
    const cJSON *obj, *old = NULL;

    if (inf->notify == NULL)
        return;
    obj = entry_read(inf, now, &parsed_now);
    if (was != NULL)
        old = entry_read(inf, was, &parsed_was);
    if (obj != NULL)
        notify(inf, ch == MS_KUBE_UPDATED && old == NULL ? MS_KUBE_ADDED : ch, obj, old);
    cJSON_Delete(parsed_now);
    cJSON_Delete(parsed_was);
}

/* Replace the cache with fresh and notify the differences. */
static void replace(ms_kube_informer_t *inf, ms_strmap_t *fresh)
{
    ms_strmap_t old;
    size_t pos = 0;
    const char *key;
    void *val;

    pthread_rwlock_wrlock(&inf->lock);
    old = inf->cache;
    inf->cache = *fresh;
    pthread_rwlock_unlock(&inf->lock);
    /* Only this thread writes the cache, so its objects stay valid while
     * notifications run without the lock. */
    while (ms_strmap_next(&inf->cache, &pos, &key, &val)) {
        const entry_t *e = val, *was = ms_strmap_get(&old, key);
        if (was == NULL)
            notify_entries(inf, MS_KUBE_ADDED, e, NULL);
        else if (strcmp(was->rv, e->rv) != 0)
            notify_entries(inf, MS_KUBE_UPDATED, e, was);
    }
    for (pos = 0; ms_strmap_next(&old, &pos, &key, &val);)
        if (ms_strmap_get(&inf->cache, key) == NULL)
            notify_entries(inf, MS_KUBE_DELETED, val, NULL);
    map_clear(&old);
}

static ms_err_t list(ms_kube_informer_t *inf, char *rv, size_t rvcap, ms_kube_error_t *kerr)
{
    listing_t l;
    unsigned long pages = 0;
    ms_err_t err;

    l.inf = inf;
    map_init(&l.fresh);
    err = ms_kube_list(inf->client, inf->path, inf->label_selector, inf->page_size, on_item, &l, rv,
                       rvcap, &pages, kerr);
    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.list_pages += pages;
    if (err == MS_OK)
        inf->stats.lists++;
    pthread_mutex_unlock(&inf->sync_lock);
    if (err != MS_OK) {
        map_clear(&l.fresh);
        return err;
    }
    replace(inf, &l.fresh);
    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.objects = ms_strmap_size(&inf->cache);
    snprintf(inf->stats.resource_version, sizeof inf->stats.resource_version, "%s", rv);
    if (!inf->synced) {
        inf->synced = true;
        pthread_cond_broadcast(&inf->sync_cond);
    }
    pthread_mutex_unlock(&inf->sync_lock);
    return MS_OK;
}

/* ---- watch events ---- */

typedef struct {
    ms_kube_informer_t *inf;
    char *rv; /* the loop's resume point, updated per event */
    size_t rvcap;
    unsigned long events;
    unsigned long bookmarks;
} watching_t;

/* Notify the change of one watch event whose object obj (after trim) is
 * the new one, or for DELETED the last known one, in both modes: nothing is
 * parsed for it. was is the entry it replaced or removed (may be NULL). */
static void notify_event(ms_kube_informer_t *inf, ms_kube_event_type_t type, const cJSON *obj,
                         const entry_t *was)
{
    cJSON *parsed = NULL;
    const cJSON *prev = NULL;

    if (type == MS_KUBE_EV_DELETED) {
        notify(inf, MS_KUBE_DELETED, obj, NULL);
        return;
    }
    if (was != NULL && inf->notify != NULL)
        prev = entry_read(inf, was, &parsed);
    notify(inf, prev != NULL ? MS_KUBE_UPDATED : MS_KUBE_ADDED, obj, prev);
    cJSON_Delete(parsed);
}

static ms_err_t on_event(void *ctx, ms_kube_event_type_t type, cJSON *obj)
{
    watching_t *w = ctx;
    ms_kube_informer_t *inf = w->inf;
    char key[KEY_MAX];
    entry_t *e = NULL, *was;

    snprintf(w->rv, w->rvcap, "%s", rv_of(obj));
    if (type == MS_KUBE_EV_BOOKMARK) {
        w->bookmarks++;
        cJSON_Delete(obj);
        pthread_mutex_lock(&inf->sync_lock);
        inf->stats.bookmarks++;
        pthread_mutex_unlock(&inf->sync_lock);
        set_rv(inf, w->rv);
        return MS_OK;
    }
    if (!ms_kube_object_key(obj, key, sizeof key)) {
        cJSON_Delete(obj);
        return MS_ERR_PARSE;
    }
    w->events++;
    trim(inf, obj);
    if (type != MS_KUBE_EV_DELETED)
        e = entry_new(inf, key, obj); /* before the lock: compact mode prints */
    pthread_rwlock_wrlock(&inf->lock);
    was = e != NULL ? map_put(&inf->cache, e) : ms_strmap_del(&inf->cache, key);
    pthread_rwlock_unlock(&inf->lock);
    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.events++;
    inf->stats.objects = ms_strmap_size(&inf->cache);
    snprintf(inf->stats.resource_version, sizeof inf->stats.resource_version, "%s", w->rv);
    pthread_mutex_unlock(&inf->sync_lock);
    notify_event(inf, type, obj, was);
    /* The cache keeps obj itself only in tree mode, and not for DELETED. */
    if (e == NULL || inf->compact)
        cJSON_Delete(obj);
    entry_free(was);
    return MS_OK;
}

static long watch_timeout(ms_kube_informer_t *inf)
{
    if (inf->watch_timeout > 0)
        return inf->watch_timeout;
    /* client-go spreads watch ends over [5, 10) minutes. */
    return 300 + (long)(ms_clock_monotonic() * 1000) % 300;
}

static void count_error(ms_kube_informer_t *inf)
{
    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.errors++;
    pthread_mutex_unlock(&inf->sync_lock);
}

/* One watch from rv until it ends (counted in the stats, and its idle end). */
static ms_err_t watch_once(ms_kube_informer_t *inf, watching_t *w, bool *idle,
                           ms_kube_error_t *kerr)
{
    ms_kube_watch_options_t wo;
    ms_err_t err;

    pthread_mutex_lock(&inf->sync_lock);
    inf->stats.watches++;
    pthread_mutex_unlock(&inf->sync_lock);
    memset(&wo, 0, sizeof wo);
    wo.label_selector = inf->label_selector;
    wo.timeout_seconds = watch_timeout(inf);
    wo.idle_timeout_seconds = inf->watch_idle_timeout;
    wo.cancel = &inf->stop;
    wo.drop_managed_fields = !inf->keep_managed_fields;
    err = ms_kube_watch_with(inf->client, inf->path, w->rv, &wo, on_event, w, idle, kerr);
    if (*idle && !atomic_load(&inf->stop)) {
        /* Nothing arrived for the idle timeout: resume like after any
         * disconnect (the HTTP layer does not reuse the connection). */
        pthread_mutex_lock(&inf->sync_lock);
        inf->stats.idle_timeouts++;
        inf->stats.last_idle_timeout = ms_clock_monotonic();
        pthread_mutex_unlock(&inf->sync_lock);
    }
    return err;
}

/* After a watch that failed (not GONE): say why, and back off before the
 * next one (from the start when this one received events). */
static void back_off_after_watch(ms_kube_informer_t *inf, const watching_t *w, bool idle,
                                 const ms_kube_error_t *kerr)
{
    double d;

    if (w->events > 0)
        ms__kube_backoff_reset(&inf->backoff);
    d = ms__kube_backoff_next(&inf->backoff, ms_clock_monotonic());
    /* Once a watch has received anything, the API server sends it a
     * bookmark every minute, so its silence means a dead connection
     * or server. A watch that never received anything may only be
     * quiet: bookmarks start once the resource changed somewhere in
     * the cluster (or etcd reported progress) after it started. */
    if (idle && w->events + w->bookmarks > 0)
        MS_LOG_WARN("watch went silent: the connection or the server is dead; "
                    "resuming on a new connection",
                    MS_S("path", inf->path), MS_S("resource_version", w->rv),
                    MS_S("error", kerr->message), MS_D("retry_in_s", d));
    else if (idle)
        MS_LOG_INFO("watch received nothing, not even a bookmark (a dead connection, or a "
                    "quiet resource); resuming on a new connection",
                    MS_S("path", inf->path), MS_S("resource_version", w->rv),
                    MS_S("error", kerr->message), MS_D("retry_in_s", d));
    else
        MS_LOG_INFO("watch ended; resuming", MS_S("path", inf->path),
                    MS_S("resource_version", w->rv), MS_S("error", kerr->message),
                    MS_D("retry_in_s", d));
    ms__kube_sleep(d, &inf->stop);
}

static void *run(void *arg)
{
    ms_kube_informer_t *inf = arg;
    char rv[64] = "";
    bool need_list = true;

    while (!atomic_load(&inf->stop)) {
        ms_kube_error_t kerr;
        watching_t w = {inf, rv, sizeof rv, 0, 0};
        bool idle = false;
        ms_err_t err;

        if (need_list) {
            if ((err = list(inf, rv, sizeof rv, &kerr)) != MS_OK) {
                double d = ms__kube_backoff_next(&inf->backoff, ms_clock_monotonic());
                count_error(inf);
                MS_LOG_WARN("list failed; retrying", MS_S("path", inf->path),
                            MS_S("error", kerr.message), MS_D("retry_in_s", d));
                ms__kube_sleep(d, &inf->stop);
                continue;
            }
            need_list = false;
        }
        err = watch_once(inf, &w, &idle, &kerr);
        if (atomic_load(&inf->stop))
            break;
        if (err == MS_OK) {
            /* The server ended the watch on time: resume at once. */
            ms__kube_backoff_reset(&inf->backoff);
            continue;
        }
        count_error(inf);
        if (err == MS_ERR_GONE) {
            MS_LOG_INFO("resourceVersion too old; relisting", MS_S("path", inf->path),
                        MS_S("resource_version", rv), MS_S("error", kerr.message));
            pthread_mutex_lock(&inf->sync_lock);
            inf->stats.relists++;
            pthread_mutex_unlock(&inf->sync_lock);
            need_list = true;
            continue;
        }
        back_off_after_watch(inf, &w, idle, &kerr);
    }
    return NULL;
}

/* ---- public ---- */

ms_kube_informer_t *ms_kube_informer_new(ms_kube_client_t *c, const ms_kube_informer_options_t *o)
{
    ms_kube_informer_t *inf = ms_xcalloc(1, sizeof *inf);

    inf->path = ms_xstrdup(o->path);
    inf->label_selector = ms_xstrdup_opt(o->label_selector);
    inf->client = c;
    inf->page_size = o->page_size;
    inf->watch_timeout = o->watch_timeout_seconds;
    inf->watch_idle_timeout = o->watch_idle_timeout_seconds > 0 ? o->watch_idle_timeout_seconds
                                                                : MS_KUBE_WATCH_IDLE_TIMEOUT;
    inf->keep_managed_fields = o->keep_managed_fields;
    inf->compact = o->compact;
    if (o->keep != NULL) {
        static const char *const always[] = {"metadata.name", "metadata.namespace", "metadata.uid",
                                             "metadata.resourceVersion"};
        size_t n = 0, a = sizeof always / sizeof always[0];
        while (o->keep[n] != NULL)
            n++;
        inf->keep = ms_xcalloc(n + a + 1, sizeof *inf->keep);
        for (size_t i = 0; i < a; i++)
            inf->keep[i] = ms_xstrdup(always[i]);
        for (size_t i = 0; i < n; i++)
            inf->keep[a + i] = ms_xstrdup(o->keep[i]);
    }
    inf->transform = o->transform;
    inf->notify = o->notify;
    inf->ctx = o->ctx;
    ms__kube_backoff_init(&inf->backoff, o->backoff_initial > 0 ? o->backoff_initial : 0.8,
                          o->backoff_max > 0 ? o->backoff_max : 30, (uint64_t)(uintptr_t)inf);
    atomic_init(&inf->stop, false);
    atomic_init(&inf->reparse_logged, false);
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->sync_lock, NULL);
    ms_clock_cond_init(&inf->sync_cond);
    map_init(&inf->cache);
    return inf;
}

ms_err_t ms_kube_informer_start(ms_kube_informer_t *inf)
{
    if (pthread_create(&inf->thread, NULL, run, inf) != 0)
        return MS_ERR_IO;
    inf->started = true;
    return MS_OK;
}

bool ms_kube_informer_wait_synced(ms_kube_informer_t *inf, double timeout_seconds)
{
    double deadline = ms_clock_monotonic() + timeout_seconds;
    bool synced;

    pthread_mutex_lock(&inf->sync_lock);
    while (!inf->synced)
        if (!ms_clock_cond_wait_until(&inf->sync_cond, &inf->sync_lock, deadline))
            break;
    synced = inf->synced;
    pthread_mutex_unlock(&inf->sync_lock);
    return synced;
}

void ms_kube_informer_stop(ms_kube_informer_t *inf)
{
    if (inf != NULL)
        atomic_store(&inf->stop, true);
}

void ms_kube_informer_free(ms_kube_informer_t *inf)
{
    if (inf == NULL)
        return;
    atomic_store(&inf->stop, true);
    if (inf->started)
        pthread_join(inf->thread, NULL);
    map_clear(&inf->cache);
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->sync_lock);
    pthread_cond_destroy(&inf->sync_cond);
    for (char **k = inf->keep; k != NULL && *k != NULL; k++)
        free(*k);
    free(inf->keep);
    free(inf->path);
    free(inf->label_selector);
    free(inf);
}

cJSON *ms_kube_informer_get(ms_kube_informer_t *inf, const char *key)
{
    entry_t *e;
    cJSON *copy = NULL;

    pthread_rwlock_rdlock(&inf->lock);
    e = ms_strmap_get(&inf->cache, key);
    if (e != NULL)
        copy = entry_copy(inf, e);
    pthread_rwlock_unlock(&inf->lock);
    return copy;
}

bool ms_kube_informer_visit(ms_kube_informer_t *inf, const char *key,
                            void (*fn)(void *ctx, const cJSON *obj), void *ctx)
{
    entry_t *e;
    cJSON *parsed = NULL;
    const cJSON *obj = NULL;

    pthread_rwlock_rdlock(&inf->lock);
    e = ms_strmap_get(&inf->cache, key);
    if (e != NULL)
        obj = entry_read(inf, e, &parsed);
    fn(ctx, obj);
    pthread_rwlock_unlock(&inf->lock);
    cJSON_Delete(parsed);
    return obj != NULL;
}

size_t ms_kube_informer_size(ms_kube_informer_t *inf)
{
    size_t n;

    pthread_rwlock_rdlock(&inf->lock);
    n = ms_strmap_size(&inf->cache);
    pthread_rwlock_unlock(&inf->lock);
    return n;
}

void ms_kube_informer_foreach(ms_kube_informer_t *inf,
                              void (*fn)(void *ctx, const char *key, const cJSON *obj), void *ctx)
{
    size_t pos = 0;
    const char *key;
    void *e;

    pthread_rwlock_rdlock(&inf->lock);
    while (ms_strmap_next(&inf->cache, &pos, &key, &e)) {
        cJSON *parsed;
        const cJSON *obj = entry_read(inf, e, &parsed);
        if (obj != NULL)
            fn(ctx, key, obj);
        cJSON_Delete(parsed);
    }
    pthread_rwlock_unlock(&inf->lock);
}

void ms_kube_informer_stats(ms_kube_informer_t *inf, ms_kube_informer_stats_t *out)
{
    pthread_mutex_lock(&inf->sync_lock);
    *out = inf->stats;
    pthread_mutex_unlock(&inf->sync_lock);
}
