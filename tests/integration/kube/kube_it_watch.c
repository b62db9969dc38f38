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
 *
 * Four informers watch the same ConfigMaps: each cache mode (cJSON trees,
 * and compact: minified text parsed per read), each with the whole object
 * and with keep + transform. Every check holds for all four; UPDATED must
 * carry the previous object as old and DELETED the last known one (from a
 * watch event or, after the relist, from the cache); a trimmed informer's
 * objects have only what keep asked for plus what the transform added; and
 * get/visit/foreach of the compact caches equal those of the tree caches.
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
    char old_value[64];  /* data.v of the old object of the last UPDATED */
    char gone_value[64]; /* data.v of the last DELETED's object */
} seen_t;

/* One informer under test and what its notifications said. */
typedef struct {
    const char *label;
    bool compact;
    bool trimmed; /* keep {data.v} + the transform add_length */
    ms_kube_informer_t *inf;
    seen_t seen[MAXKEYS];
    size_t nseen;
    char breach[256]; /* the first notification that broke the contract */
} watched_t;

#define NWATCHED 4
static watched_t watched[NWATCHED] = {
    {.label = "tree", .compact = false, .trimmed = false},
    {.label = "compact", .compact = true, .trimmed = false},
    {.label = "tree+keep", .compact = false, .trimmed = true},
    {.label = "compact+keep", .compact = true, .trimmed = true},
};
static const char *const keep_v[] = {"data.v", NULL};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static seen_t *slot(watched_t *w, const char *key)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i].key, key) == 0)
            return &w->seen[i];
    if (w->nseen == MAXKEYS)
        abort();
    snprintf(w->seen[w->nseen].key, sizeof w->seen[w->nseen].key, "%s", key);
    return &w->seen[w->nseen++];
}

/* The transform of the trimmed informers: data.vlen = strlen(data.v). */
static void add_length(void *ctx, cJSON *obj)
{
    cJSON *data = cJSON_GetObjectItem(obj, "data");
    const cJSON *v = cJSON_GetObjectItem(data, "v");

    (void)ctx;
    if (cJSON_IsString(v))
        cJSON_AddNumberToObject(data, "vlen", (double)strlen(v->valuestring));
}

static const char *value_of(const cJSON *obj)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "data"), "v");
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Why obj is not what a trimmed informer keeps, or NULL: metadata with
 * name, namespace, uid and resourceVersion only, data with v and vlen only
 * (or nothing, for the namespace's kube-root-ca.crt, which has no v). */
static const char *not_trimmed(const cJSON *obj)
{
    const cJSON *md = cJSON_GetObjectItem(obj, "metadata"),
                *data = cJSON_GetObjectItem(obj, "data");
    const cJSON *vlen = cJSON_GetObjectItem(data, "vlen");

    if (cJSON_GetArraySize(obj) != 2 || md == NULL || data == NULL)
        return "top level is not {metadata, data}";
    if (cJSON_GetArraySize(md) != 4 || !cJSON_HasObjectItem(md, "name") ||
        !cJSON_HasObjectItem(md, "namespace") || !cJSON_HasObjectItem(md, "uid") ||
        !cJSON_HasObjectItem(md, "resourceVersion"))
        return "metadata is not {name, namespace, uid, resourceVersion}";
    if (!cJSON_HasObjectItem(data, "v") && cJSON_GetArraySize(data) == 0)
        return NULL;
    if (cJSON_GetArraySize(data) != 2 || !cJSON_IsNumber(vlen) ||
        (size_t)vlen->valuedouble != strlen(value_of(obj)))
        return "data is not {v, vlen = strlen(v)}";
    return NULL;
}

static const char *rv_of(const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion");
    return cJSON_IsString(rv) ? rv->valuestring : "";
}

/* Why (ch, obj, old) breaks the notification contract, or NULL. */
static const char *breach_of(const watched_t *w, ms_kube_change_t ch, const cJSON *obj,
                             const cJSON *old)
{
    const char *why;

    if (ch == MS_KUBE_UPDATED && old == NULL)
        return "UPDATED without the old object";
    if (ch != MS_KUBE_UPDATED && old != NULL)
        return "an old object with ADDED or DELETED";
    if (old != NULL && strcmp(rv_of(old), rv_of(obj)) == 0)
        return "UPDATED with old and new of the same resourceVersion";
    if (w->trimmed &&
        ((why = not_trimmed(obj)) != NULL || (old != NULL && (why = not_trimmed(old)) != NULL)))
        return why;
    if (!w->trimmed &&
        cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "managedFields") != NULL)
        return "metadata.managedFields was not dropped";
    return NULL;
}

static void on_change(void *ctx, ms_kube_change_t ch, const cJSON *obj, const cJSON *old)
{
    watched_t *w = ctx;
    char key[128];
    const char *why = breach_of(w, ch, obj, old);
    seen_t *s;

    if (!ms_kube_object_key(obj, key, sizeof key))
        return;
    pthread_mutex_lock(&lock);
    if (why != NULL && w->breach[0] == '\0')
        snprintf(w->breach, sizeof w->breach, "%s: %s", key, why);
    s = slot(w, key);
    if (ch == MS_KUBE_ADDED)
        s->added++;
    else if (ch == MS_KUBE_UPDATED)
        s->updated++;
    else
        s->deleted++;
    if (ch != MS_KUBE_DELETED)
        snprintf(s->last_value, sizeof s->last_value, "%s", value_of(obj));
    if (ch == MS_KUBE_UPDATED)
        snprintf(s->old_value, sizeof s->old_value, "%s", value_of(old));
    if (ch == MS_KUBE_DELETED)
        snprintf(s->gone_value, sizeof s->gone_value, "%s", value_of(obj));
    pthread_mutex_unlock(&lock);
}

static seen_t get_seen(watched_t *w, const char *name)
{
    char key[128];
    seen_t copy;

    snprintf(key, sizeof key, "%s/%s", ns, name);
    pthread_mutex_lock(&lock);
    copy = *slot(w, key);
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
        /* The label and data.other are for keep to drop. */
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                 "\"labels\":{\"app\":\"watch\"}},\"data\":{\"v\":\"%s\",\"other\":\"dropped by "
                 "keep\"}}",
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

    if (item == NULL) { /* the list starts over */
        l->n = 0;
        return MS_OK;
    }
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
        snprintf(why, cap, "cache has %zu objects, the server %zu", ms_kube_informer_size(inf),
                 l.n);
        return why;
    }
    for (size_t i = 0; i < l.n; i++) {
        cJSON *o = ms_kube_informer_get(inf, l.keys[i]);
        const cJSON *crv =
            cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "resourceVersion");
        bool same = o != NULL && strcmp(crv->valuestring, l.rvs[i]) == 0;
        if (!same)
            snprintf(why, cap, "%s: cache %s, server %s", l.keys[i],
                     o ? crv->valuestring : "(missing)", l.rvs[i]);
        cJSON_Delete(o);
        if (!same)
            return why;
    }
    return NULL;
}

/* Every informer's cache equals a fresh list; why names the first that does not. */
static bool all_equal(char *why, size_t cap)
{
    char one[512];

    for (int i = 0; i < NWATCHED; i++) {
        if (cache_vs_list(watched[i].inf, one, sizeof one) != NULL) {
            snprintf(why, cap, "%s: %s", watched[i].label, one);
            return false;
        }
    }
    return true;
}

static bool wait_all_equal(double secs, char *why, size_t cap)
{
    double end = it_now() + secs;
    do {
        if (all_equal(why, cap))
            return true;
        it_sleep(0.25);
    } while (it_now() < end);
    return false;
}

/* Every informer saw at least these notifications for name. */
static bool wait_seen(const char *name, int added, int updated, int deleted, double secs)
{
    double end = it_now() + secs;
    do {
        bool all = true;
        for (int i = 0; i < NWATCHED; i++) {
            seen_t s = get_seen(&watched[i], name);
            all = all && s.added >= added && s.updated >= updated && s.deleted >= deleted;
        }
        if (all)
            return true;
        it_sleep(0.1);
    } while (it_now() < end);
    return false;
}

/* The first informer whose notifications for name fail test (with why set), or NULL. */
static const char *seen_fails(const char *name, bool (*test)(const seen_t *s), char *why,
                              size_t cap)
{
    for (int i = 0; i < NWATCHED; i++) {
        seen_t s = get_seen(&watched[i], name);
        if (!test(&s)) {
            snprintf(why, cap,
                     "%s: %s added %d updated %d deleted %d, value '%s', old '%s', gone '%s'",
                     watched[i].label, name, s.added, s.updated, s.deleted, s.last_value,
                     s.old_value, s.gone_value);
            return why;
        }
    }
    return NULL;
}

/* The first informer whose handler saw a contract breach, or NULL. */
static const char *any_breach(char *why, size_t cap)
{
    bool found = false;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < NWATCHED && !found; i++) {
        if ((found = watched[i].breach[0] != '\0'))
            snprintf(why, cap, "%s: %s", watched[i].label, watched[i].breach);
    }
    pthread_mutex_unlock(&lock);
    return found ? why : NULL;
}

/* ---- the compact caches read like the tree caches ---- */

typedef struct {
    ms_kube_informer_t *other; /* the tree-mode twin */
    size_t n;
    char why[512];
} agree_t;

static void same_as_twin(agree_t *a, const char *key, const cJSON *obj, const char *how)
{
    cJSON *twin = ms_kube_informer_get(a->other, key);

    if (a->why[0] == '\0' && (obj == NULL || !cJSON_Compare(obj, twin, true)))
        snprintf(a->why, sizeof a->why, "%s %s differs from the tree cache's", how, key);
    cJSON_Delete(twin);
}

static void agree_each(void *ctx, const char *key, const cJSON *obj)
{
    agree_t *a = ctx;

    a->n++;
    same_as_twin(a, key, obj, "foreach");
}

typedef struct {
    agree_t *a;
    const char *key;
} visit_ctx_t;

static void agree_visit(void *ctx, const cJSON *obj)
{
    visit_ctx_t *v = ctx;
    same_as_twin(v->a, v->key, obj, "visit");
}

/* get, visit and foreach of compact equal get of tree, object by object;
 * why says where not. The caches must have settled (no event in flight). */
static const char *modes_agree(ms_kube_informer_t *compact, ms_kube_informer_t *tree, char *why,
                               size_t cap)
{
    static listing_t l;
    agree_t a = {tree, 0, ""};
    char rv[64];
    ms_kube_error_t kerr;

    l.n = 0;
    if (ms_kube_list(admin, path, NULL, 0, add_item, &l, rv, sizeof rv, NULL, &kerr) != MS_OK) {
        snprintf(why, cap, "list failed: %s", kerr.message);
        return why;
    }
    ms_kube_informer_foreach(compact, agree_each, &a);
    for (size_t i = 0; i < l.n && a.why[0] == '\0'; i++) {
        visit_ctx_t v = {&a, l.keys[i]};
        cJSON *got = ms_kube_informer_get(compact, l.keys[i]);
        same_as_twin(&a, l.keys[i], got, "get");
        cJSON_Delete(got);
        if (!ms_kube_informer_visit(compact, l.keys[i], agree_visit, &v) && a.why[0] == '\0')
            snprintf(a.why, sizeof a.why, "visit %s: absent", l.keys[i]);
    }
    if (a.why[0] == '\0' && (a.n != l.n || ms_kube_informer_size(tree) != l.n))
        snprintf(a.why, sizeof a.why,
                 "foreach saw %zu objects, the tree cache has %zu, the server %zu", a.n,
                 ms_kube_informer_size(tree), l.n);
    if (a.why[0] == '\0')
        return NULL;
    snprintf(why, cap, "%s", a.why);
    return why;
}

static bool changed_to_v2(const seen_t *s)
{
    return s->updated >= 1 && strcmp(s->last_value, "v2") == 0 && strcmp(s->old_value, "v1") == 0;
}

static bool deleted_at_v1(const seen_t *s)
{
    return s->deleted == 1 && strcmp(s->gone_value, "v1") == 0;
}

static bool added_once(const seen_t *s)
{
    return s->added == 1;
}

static bool changed_during_outage(const seen_t *s)
{
    return s->updated >= 1 && strcmp(s->last_value, "during-outage") == 0 &&
           strcmp(s->old_value, "v1") == 0;
}

static ms_err_t drop(void *ctx, ms_kube_event_type_t type, cJSON *obj)
{
    (void)ctx, (void)type;
    cJSON_Delete(obj);
    return MS_OK;
}

/* Start the informer of w: pages of 7, server-side timeouts of 4 s. */
static void start_watched(watched_t *w)
{
    ms_kube_informer_options_t io;

    memset(&io, 0, sizeof io);
    io.path = path;
    io.page_size = 7; /* several pages */
    io.watch_timeout_seconds = 4;
    io.backoff_initial = 0.5;
    io.backoff_max = 4;
    io.compact = w->compact;
    if (w->trimmed) {
        io.keep = keep_v;
        io.transform = add_length;
    }
    io.notify = on_change;
    io.ctx = w;
    w->inf = ms_kube_informer_new(admin, &io);
    ms_kube_informer_start(w->inf);
}

/* All informers' stats; why names the first for which ok() is false. */
static bool stats_all(bool (*ok)(const ms_kube_informer_stats_t *before,
                                 const ms_kube_informer_stats_t *now),
                      const ms_kube_informer_stats_t *before, ms_kube_informer_stats_t *now,
                      char *why, size_t cap)
{
    for (int i = 0; i < NWATCHED; i++) {
        ms_kube_informer_stats(watched[i].inf, &now[i]);
        if (!ok(before ? &before[i] : NULL, &now[i])) {
            snprintf(why, cap, "%s: %zu objects, %lu pages, %lu lists, %lu relists, %lu watches",
                     watched[i].label, now[i].objects, now[i].list_pages, now[i].lists,
                     now[i].relists, now[i].watches);
            return false;
        }
    }
    return true;
}

static bool filled(const ms_kube_informer_stats_t *before, const ms_kube_informer_stats_t *now)
{
    (void)before;
    return now->objects >= 20 && now->list_pages >= 3;
}

static bool resumed_without_relist(const ms_kube_informer_stats_t *before,
                                   const ms_kube_informer_stats_t *now)
{
    (void)before;
    return now->watches >= 3 && now->lists == 1;
}

static bool relisted(const ms_kube_informer_stats_t *before, const ms_kube_informer_stats_t *now)
{
    return now->relists > before->relists;
}

/* Whether the cached c-0 of every trimmed informer is exactly what keep and
 * the transform leave. */
static bool trimmed_cached(char *why, size_t cap)
{
    char key[128];

    snprintf(key, sizeof key, "%s/c-0", ns);
    for (int i = 0; i < NWATCHED; i++) {
        cJSON *o = ms_kube_informer_get(watched[i].inf, key);
        const char *bad = o == NULL ? "absent" : watched[i].trimmed ? not_trimmed(o) : NULL;
        if (bad == NULL && !watched[i].trimmed &&
            (cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "other") == NULL ||
             cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "vlen") != NULL))
            bad = "the whole object's informer lost data.other or has data.vlen";
        cJSON_Delete(o);
        if (bad != NULL) {
            snprintf(why, cap, "%s: %s", watched[i].label, bad);
            return false;
        }
    }
    return true;
}

/* The compact caches read like their tree twins; why says where not. */
static bool both_modes_agree(char *why, size_t cap)
{
    char one[512];

    if (modes_agree(watched[1].inf, watched[0].inf, one, sizeof one) != NULL) {
        snprintf(why, cap, "whole objects: %s", one);
        return false;
    }
    if (modes_agree(watched[3].inf, watched[2].inf, one, sizeof one) != NULL) {
        snprintf(why, cap, "keep+transform: %s", one);
        return false;
    }
    return true;
}

int main(void)
{
    ms_kube_client_options_t o;
    ms_kube_informer_stats_t st[NWATCHED], st2[NWATCHED];
    ms_kube_client_t *second;
    char why[512] = "", name[64], old_rv[64], second_cfg[512];
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

    /* The informers watch with the restricted identity? It may not read
     * ConfigMaps; the admin's client it is (what is proven is the watch). */
    ok = true;
    for (int i = 0; i < NWATCHED; i++)
        start_watched(&watched[i]);
    for (int i = 0; i < NWATCHED; i++)
        ok = ms_kube_informer_wait_synced(watched[i].inf, 20) && ok;
    it_check(
        ok, "informers synced (paginated list, pages of 7; tree, compact, tree+keep, compact+keep)",
        NULL);
    it_check(stats_all(filled, NULL, st, why, sizeof why), "first list filled the caches", "%s",
             why);
    snprintf(old_rv, sizeof old_rv, "%s", st[0].resource_version);
    it_check(trimmed_cached(why, sizeof why),
             "keep + transform shape the cached objects in both modes; "
             "without keep the whole object is cached",
             "%s", why);

    /* Live changes arrive as notifications. */
    put_cm(admin, "live-new", "v1", true);
    put_cm(admin, "c-1", "v2", false);
    del_cm(admin, "c-2");
    it_check(wait_seen("live-new", 1, 0, 0, 10) && wait_seen("c-1", 1, 1, 0, 10) &&
                 wait_seen("c-2", 1, 0, 1, 10),
             "create, update and delete arrive as ADDED, UPDATED, DELETED", NULL);
    it_check(seen_fails("c-1", changed_to_v2, why, sizeof why) == NULL,
             "UPDATED carries the new object and the previous one as old", "%s", why);
    it_check(seen_fails("c-2", deleted_at_v1, why, sizeof why) == NULL,
             "DELETED carries the last known object", "%s", why);

    /* Server-side timeouts (4 s): the watch resumes from the last
     * resourceVersion without listing again. */
    it_sleep(10);
    put_cm(admin, "after-timeouts", "v1", true);
    it_check(wait_seen("after-timeouts", 1, 0, 0, 10),
             "a change after several watch timeouts arrives", NULL);
    ok = stats_all(resumed_without_relist, NULL, st, why, sizeof why);
    it_note("after 10 s (tree): %lu watches, %lu lists, %lu bookmarks, %lu events", st[0].watches,
            st[0].lists, st[0].bookmarks, st[0].events);
    it_check(ok, "watch timeouts resume from the last resourceVersion (no relist)", "%s", why);
    it_check(all_equal(why, sizeof why), "caches equal a fresh list", "%s", why);
    it_check(both_modes_agree(why, sizeof why),
             "get, visit and foreach of the compact caches equal the tree caches", "%s", why);

    /* ---- kube-apiserver restart, with changes during the outage ---- */
    if (it_sh(second_cfg, sizeof second_cfg, "'%s' second-start", it.apiserver_sh) != 0) {
        it_check(false, "second kube-apiserver started", "%s", second_cfg);
        return it_done();
    }
    second = it_client(second_cfg, &o);
    t0 = it_now();
    it_check(it_sh(why, sizeof why, "'%s' stop", it.apiserver_sh) == 0, "kube-apiserver stopped",
             "%s", why);
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
    it_check(it_sh(why, sizeof why, "'%s' start", it.apiserver_sh) == 0,
             "kube-apiserver started again", "%s", why);
    outage = it_now() - t0;
    t0 = it_now();
    ok = wait_all_equal(60, why, sizeof why);
    it_check(ok, "after the restart the caches equal a fresh list", "%s", why);
    it_note("outage %.1f s; caches consistent %.1f s after the API server was ready", outage,
            it_now() - t0);
    why[0] = '\0';
    for (int i = 0; i < 5 && why[0] == '\0'; i++) {
        snprintf(name, sizeof name, "outage-new-%d", i);
        if (seen_fails(name, added_once, why, sizeof why) != NULL)
            break;
        snprintf(name, sizeof name, "c-%d", 3 + i);
        if (seen_fails(name, changed_during_outage, why, sizeof why) != NULL)
            break;
        snprintf(name, sizeof name, "c-%d", 8 + i);
        seen_fails(name, deleted_at_v1, why, sizeof why);
    }
    it_check(why[0] == '\0',
             "no change made during the outage was missed (5 ADDED, 5 UPDATED with the cached "
             "object as old, 5 DELETED with the cached object)",
             "%s", why);
    ok = stats_all(relisted, st, st2, why, sizeof why);
    it_note("across the restart (tree): %lu relists (410), %lu failed attempts, %lu watches",
            st2[0].relists - st[0].relists, st2[0].errors - st[0].errors,
            st2[0].watches - st[0].watches);
    it_check(ok, "the stale resourceVersion got 410 and the informers relisted", "%s", why);
    put_cm(admin, "after-restart", "v1", true);
    it_check(wait_seen("after-restart", 1, 0, 0, 10),
             "the watches are live again after the restart", NULL);
    it_check(both_modes_agree(why, sizeof why),
             "after the relist, get, visit and foreach of the compact caches equal the tree caches",
             "%s", why);
    it_check(
        any_breach(why, sizeof why) == NULL,
        "every notification kept the contract (old objects, keep + transform, no managedFields)",
        "%s", why);
    ms_kube_client_free(second);
    it_sh(NULL, 0, "'%s' second-stop", it.apiserver_sh);

    /* ---- 410 from the server, by hand ---- */
    {
        ms_kube_error_t kerr;
        ms_err_t err = ms_kube_watch(admin, path, old_rv, NULL, 5, drop, NULL, NULL, &kerr);
        it_check(
            err == MS_ERR_GONE && kerr.status == 410 && strcmp(kerr.reason, "Expired") == 0 &&
                strstr(kerr.message, "too old resource version") != NULL,
            "a watch from a resourceVersion older than the server keeps is 410 Gone (ERROR event)",
            "%s %ld %s: %s", ms_err_name(err), kerr.status, kerr.reason, kerr.message);
        it_note("%s", kerr.message);
    }
    it_check(all_equal(why, sizeof why), "caches still equal a fresh list at the end", "%s", why);
    for (int i = 0; i < NWATCHED; i++)
        ms_kube_informer_free(watched[i].inf);
    it_kubectl(NULL, 0, "delete namespace %s --wait=false >/dev/null", ns);
    ms_kube_client_free(admin);
    return it_done();
}
