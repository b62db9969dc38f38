/*
 * kube_it_watch.c - the informer against the real kube-apiserver: list +
 * watch + cache, resuming after server-side watch timeouts without a relist,
 * surviving a kube-apiserver restart with changes made during the outage
 * (through a second kube-apiserver on the same etcd), and 410 Gone ("too old
 * resource version") leading to a relist.
 *
 * Pass criteria after the restart: the cache equals a fresh list (same keys,
 * same resourceVersions), and every change made during the outage arrived as
 * a notification (ADDED, UPDATED with the new data, DELETED).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"

#define MAXKEYS 256

static char ns[64], path[256];
static ms_kube_client_t *admin;

/* What the notifications said, per key. */
typedef struct {
    char key[128];
    int added, updated, deleted;
    char last_value[64]; /* data.v of the last ADDED/UPDATED */
} seen_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static seen_t seen[MAXKEYS];
static size_t nseen;

static seen_t *slot(const char *key)
{
    for (size_t i = 0; i < nseen; i++)
        if (strcmp(seen[i].key, key) == 0)
            return &seen[i];
    if (nseen == MAXKEYS)
        abort();
    snprintf(seen[nseen].key, sizeof seen[nseen].key, "%s", key);
    return &seen[nseen++];
}

static void on_change(void *ctx, ms_kube_change_t ch, const cJSON *obj, const cJSON *old)
{
    char key[128];
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "data"), "v");
    seen_t *s;

    (void)ctx;
    (void)old;
    if (!ms_kube_object_key(obj, key, sizeof key))
        return;
    pthread_mutex_lock(&lock);
    s = slot(key);
    if (ch == MS_KUBE_ADDED)
        s->added++;
    else if (ch == MS_KUBE_UPDATED)
        s->updated++;
    else
        s->deleted++;
    if (ch != MS_KUBE_DELETED)
        snprintf(s->last_value, sizeof s->last_value, "%s", cJSON_IsString(v) ? v->valuestring : "");
    pthread_mutex_unlock(&lock);
}

static seen_t get_seen(const char *name)
{
    char key[128];
    seen_t copy;

    snprintf(key, sizeof key, "%s/%s", ns, name);
    pthread_mutex_lock(&lock);
    copy = *slot(key);
    pthread_mutex_unlock(&lock);
    return copy;
}

/* ---- writes through a given client ---- */

static ms_err_t put_cm(ms_kube_client_t *c, const char *name, const char *value, bool create)
{
    char p[300], body[512];
    ms_kube_error_t kerr;
    cJSON *obj, *cur = NULL;
    ms_err_t err;

    if (create) {
        snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%s\"}}",
                 name, value);
        obj = cJSON_Parse(body);
        err = ms_kube_create(c, path, obj, NULL, &kerr);
        cJSON_Delete(obj);
        return err;
    }
    snprintf(p, sizeof p, "%s/%s", path, name);
    snprintf(body, sizeof body, "{\"data\":{\"v\":\"%s\"}}", value);
    obj = cJSON_Parse(body);
    err = ms_kube_merge_patch(c, p, obj, &cur, &kerr);
    cJSON_Delete(obj);
    cJSON_Delete(cur);
    return err;
}

static ms_err_t del_cm(ms_kube_client_t *c, const char *name)
{
    char p[300];
    ms_kube_error_t kerr;

    snprintf(p, sizeof p, "%s/%s", path, name);
    return ms_kube_delete(c, p, &kerr);
}

/* ---- cache vs. a fresh list ---- */

typedef struct {
    char keys[MAXKEYS][128];
    char rvs[MAXKEYS][32];
    size_t n;
} listing_t;

static ms_err_t add_item(void *ctx, cJSON *item)
{
    listing_t *l = ctx;
    const cJSON *rv = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "metadata"), "resourceVersion");

    if (l->n == MAXKEYS)
        return MS_ERR_RANGE;
    ms_kube_object_key(item, l->keys[l->n], sizeof l->keys[0]);
    snprintf(l->rvs[l->n], sizeof l->rvs[0], "%s", rv->valuestring);
    l->n++;
    return MS_OK;
}

/* NULL when the cache equals a fresh list, else what differs. */
static const char *cache_vs_list(ms_kube_informer_t *inf, char *why, size_t cap)
{
    static listing_t l;
    char rv[64];
    ms_kube_error_t kerr;

    l.n = 0;
    if (ms_kube_list(admin, path, NULL, 7, add_item, &l, rv, sizeof rv, NULL, &kerr) != MS_OK) {
        snprintf(why, cap, "list failed: %s", kerr.message);
        return why;
    }
    if (ms_kube_informer_size(inf) != l.n) {
        snprintf(why, cap, "cache has %zu objects, the server %zu", ms_kube_informer_size(inf), l.n);
        return why;
    }
    for (size_t i = 0; i < l.n; i++) {
        cJSON *o = ms_kube_informer_get(inf, l.keys[i]);
        const cJSON *crv = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "resourceVersion");
        bool same = o != NULL && strcmp(crv->valuestring, l.rvs[i]) == 0;
        if (!same)
            snprintf(why, cap, "%s: cache %s, server %s", l.keys[i], o ? crv->valuestring : "(missing)", l.rvs[i]);
        cJSON_Delete(o);
        if (!same)
            return why;
    }
    return NULL;
}

static bool wait_equal(ms_kube_informer_t *inf, double secs, char *why, size_t cap)
{
    double end = it_now() + secs;
    do {
        if (cache_vs_list(inf, why, cap) == NULL)
            return true;
        it_sleep(0.25);
    } while (it_now() < end);
    return false;
}

static bool wait_seen(const char *name, int added, int updated, int deleted, double secs)
{
    double end = it_now() + secs;
    do {
        seen_t s = get_seen(name);
        if (s.added >= added && s.updated >= updated && s.deleted >= deleted)
            return true;
        it_sleep(0.1);
    } while (it_now() < end);
    return false;
}

static ms_err_t drop(void *ctx, ms_kube_event_type_t type, cJSON *obj)
{
    (void)ctx, (void)type;
    cJSON_Delete(obj);
    return MS_OK;
}

int main(void)
{
    ms_kube_client_options_t o;
    ms_kube_informer_options_t io;
    ms_kube_informer_t *inf;
    ms_kube_informer_stats_t st, st2;
    ms_kube_client_t *second;
    char why[512], name[64], old_rv[64], second_cfg[512];
    double t0, outage;
    bool ok;

    it_init("kube_it_watch");
    memset(&o, 0, sizeof o);
    o.qps = -1;
    admin = it_client(it.admin, &o);
    it_namespace("watch", ns, sizeof ns);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "c-%d", i);
        put_cm(admin, name, "v1", true);
    }

    /* The informer watches with the restricted identity? It may not read
     * ConfigMaps; the admin's client it is (what is proven is the watch). */
    memset(&io, 0, sizeof io);
    io.path = path;
    io.page_size = 7; /* several pages */
    io.watch_timeout_seconds = 4;
    io.backoff_initial = 0.5;
    io.backoff_max = 4;
    io.notify = on_change;
    inf = ms_kube_informer_new(admin, &io);
    ms_kube_informer_start(inf);
    it_check(ms_kube_informer_wait_synced(inf, 20), "informer synced (paginated list, pages of 7)", NULL);
    ms_kube_informer_stats(inf, &st);
    snprintf(old_rv, sizeof old_rv, "%s", st.resource_version);
    it_check(st.objects >= 20 && st.list_pages >= 3, "first list filled the cache",
             "%zu objects in %lu pages", st.objects, st.list_pages);

    /* Live changes arrive as notifications. */
    put_cm(admin, "live-new", "v1", true);
    put_cm(admin, "c-1", "v2", false);
    del_cm(admin, "c-2");
    it_check(wait_seen("live-new", 1, 0, 0, 10) && wait_seen("c-1", 1, 1, 0, 10) && wait_seen("c-2", 1, 0, 1, 10),
             "create, update and delete arrive as ADDED, UPDATED, DELETED", NULL);
    it_check(strcmp(get_seen("c-1").last_value, "v2") == 0, "UPDATED carries the new object", "%s", get_seen("c-1").last_value);

    /* Server-side timeouts (4 s): the watch resumes from the last
     * resourceVersion without listing again. */
    it_sleep(10);
    put_cm(admin, "after-timeouts", "v1", true);
    it_check(wait_seen("after-timeouts", 1, 0, 0, 10), "a change after several watch timeouts arrives", NULL);
    ms_kube_informer_stats(inf, &st);
    it_note("after 10 s: %lu watches, %lu lists, %lu bookmarks, %lu events", st.watches, st.lists, st.bookmarks, st.events);
    it_check(st.watches >= 3 && st.lists == 1, "watch timeouts resume from the last resourceVersion (no relist)",
             "%lu watches, %lu lists", st.watches, st.lists);
    it_check(cache_vs_list(inf, why, sizeof why) == NULL, "cache equals a fresh list", "%s", why);

    /* ---- kube-apiserver restart, with changes during the outage ---- */
    if (it_sh(second_cfg, sizeof second_cfg, "'%s' second-start", it.apiserver_sh) != 0) {
        it_check(false, "second kube-apiserver started", "%s", second_cfg);
        return it_done();
    }
    second = it_client(second_cfg, &o);
    t0 = it_now();
    it_check(it_sh(why, sizeof why, "'%s' stop", it.apiserver_sh) == 0, "kube-apiserver stopped", "%s", why);
    ok = true;
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "outage-new-%d", i);
        ok = ok && put_cm(second, name, "v1", true) == MS_OK;
        snprintf(name, sizeof name, "c-%d", 3 + i);
        ok = ok && put_cm(second, name, "during-outage", false) == MS_OK;
        snprintf(name, sizeof name, "c-%d", 8 + i);
        ok = ok && del_cm(second, name) == MS_OK;
    }
    it_check(ok, "15 changes made through the second kube-apiserver while the first is down", NULL);
    it_check(it_sh(why, sizeof why, "'%s' start", it.apiserver_sh) == 0, "kube-apiserver started again", "%s", why);
    outage = it_now() - t0;
    t0 = it_now();
    ok = wait_equal(inf, 60, why, sizeof why);
    it_check(ok, "after the restart the cache equals a fresh list", "%s", why);
    it_note("outage %.1f s; cache consistent %.1f s after the API server was ready", outage, it_now() - t0);
    ok = true;
    for (int i = 0; i < 5; i++) {
        seen_t s;
        snprintf(name, sizeof name, "outage-new-%d", i);
        s = get_seen(name);
        ok = ok && s.added == 1;
        snprintf(name, sizeof name, "c-%d", 3 + i);
        s = get_seen(name);
        ok = ok && s.updated >= 1 && strcmp(s.last_value, "during-outage") == 0;
        snprintf(name, sizeof name, "c-%d", 8 + i);
        s = get_seen(name);
        ok = ok && s.deleted == 1;
    }
    it_check(ok, "no change made during the outage was missed (5 ADDED, 5 UPDATED, 5 DELETED)", NULL);
    ms_kube_informer_stats(inf, &st2);
    it_note("across the restart: %lu relists (410), %lu failed attempts, %lu watches",
            st2.relists - st.relists, st2.errors - st.errors, st2.watches - st.watches);
    it_check(st2.relists > st.relists, "the stale resourceVersion got 410 and the informer relisted",
             "relists %lu -> %lu", st.relists, st2.relists);
    put_cm(admin, "after-restart", "v1", true);
    it_check(wait_seen("after-restart", 1, 0, 0, 10), "the watch is live again after the restart", NULL);
    ms_kube_client_free(second);
    it_sh(NULL, 0, "'%s' second-stop", it.apiserver_sh);

    /* ---- 410 from the server, by hand ---- */
    {
        ms_kube_error_t kerr;
        ms_err_t err = ms_kube_watch(admin, path, old_rv, NULL, 5, drop, NULL, NULL, &kerr);
        it_check(err == MS_ERR_GONE && kerr.status == 410 && strcmp(kerr.reason, "Expired") == 0 &&
                     strstr(kerr.message, "too old resource version") != NULL,
                 "a watch from a resourceVersion older than the server keeps is 410 Gone (ERROR event)",
                 "%s %ld %s: %s", ms_err_name(err), kerr.status, kerr.reason, kerr.message);
        it_note("%s", kerr.message);
    }
    it_check(cache_vs_list(inf, why, sizeof why) == NULL, "cache still equals a fresh list at the end", "%s", why);
    ms_kube_informer_free(inf);
    it_kubectl(NULL, 0, "delete namespace %s --wait=false >/dev/null", ns);
    ms_kube_client_free(admin);
    return it_done();
}
