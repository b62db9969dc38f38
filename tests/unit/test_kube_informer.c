/*
 * test_kube_informer.c - the informer's cache and notifications against
 * fakekube (tests/tools/fakekube.h), an in-process list/watch server, in
 * both cache modes (trees, and compact: minified text parsed per read):
 * list into the cache, ADDED/UPDATED/DELETED with the right old objects,
 * a relist after 410 diffed into DELETED/UPDATED/ADDED, keep + transform,
 * get/visit/foreach returning the same content in both modes (numbers bit
 * for bit), and a cached text that does not parse again reading as absent
 * (logged once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tools/fakekube.h"
#include "meshscaler/informer.h"
#include "meshscaler/log.h"
#include "meshscaler/strmap.h"

#define MAX_NOTES 512
/* A bound for what must happen, not a timing: 300 objects in pages of 4 took
 * over 10 s under valgrind on a loaded machine. */
#define WAIT_S 60.0

static const bool tree_mode = false, compact_mode = true;
static char log_path[] = "/tmp/test_kube_informer.log.XXXXXX";
static FILE *log_file;

/* ---- time ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(void)
{
    usleep(10 * 1000);
}

/* ---- what the notifications said ---- */

typedef struct {
    ms_kube_change_t ch;
    char key[64];
    cJSON *obj; /* copies */
    cJSON *old;
} note_t;

typedef struct {
    pthread_mutex_t lock;
    note_t notes[MAX_NOTES];
    size_t n;
} recorder_t;

static void record(void *ctx, ms_kube_change_t ch, const cJSON *obj, const cJSON *old)
{
    recorder_t *r = ctx;
    note_t *n;

    /* The informer's thread: cmocka's asserts belong to the test's, so a
     * broken expectation here aborts. */
    pthread_mutex_lock(&r->lock);
    if (r->n == MAX_NOTES)
        abort();
    n = &r->notes[r->n];
    n->ch = ch;
    if (!ms_kube_object_key(obj, n->key, sizeof n->key) ||
        (n->obj = cJSON_Duplicate(obj, true)) == NULL)
        abort();
    n->old = old != NULL ? cJSON_Duplicate(old, true) : NULL;
    if (old != NULL && n->old == NULL)
        abort();
    r->n++;
    pthread_mutex_unlock(&r->lock);
}

static size_t notes(recorder_t *r)
{
    size_t n;
    pthread_mutex_lock(&r->lock);
    n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}

static bool wait_notes(recorder_t *r, size_t want)
{
    double end = now() + WAIT_S;
    while (notes(r) < want && now() < end)
        nap();
    return notes(r) >= want;
}

/* The one note for key from index from on; fails the test if there is not
 * exactly one. */
static const note_t *note_for(recorder_t *r, size_t from, const char *key)
{
    const note_t *found = NULL;
    for (size_t i = from; i < notes(r); i++) {
        if (strcmp(r->notes[i].key, key) == 0) {
            assert_null(found);
            found = &r->notes[i];
        }
    }
    assert_non_null(found);
    return found;
}

static void recorder_cleanup(recorder_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        cJSON_Delete(r->notes[i].obj);
        cJSON_Delete(r->notes[i].old);
    }
    r->n = 0;
}

/* ---- objects ---- */

/* A small MeshAutoscaler-like object with managedFields (the informer drops
 * them by default) and odd content for the text round trip. */
static cJSON *object(const char *name, int replicas)
{
    char text[2048];
    cJSON *o;

    snprintf(
        text, sizeof text,
        "{\"apiVersion\":\"autoscaling.meshscaler.io/v1alpha1\",\"kind\":\"MeshAutoscaler\","
        "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"generation\":%d,"
        "\"labels\":{\"app\":\"web\",\"tier\":\"front\"},"
        "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"fieldsV1\":{\"f:"
        "spec\":{}}}]},"
        "\"spec\":{\"replicas\":%d,\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"%s\"},"
        "\"ratio\":0.1,\"big\":1e300,\"neg\":-0.5,\"int\":9007199254740993,\"none\":null,\"on\":"
        "true,"
        "\"empty\":{},\"list\":[],\"text\":\"caf\\u00e9 \\\"quoted\\\"\\n\\t\\\\ \\u2603\"},"
        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\",\"reason\":\"Scaled\"},"
        "{\"type\":\"AbleToScale\",\"status\":\"True\"}]}}",
        name, name, replicas, replicas, name, replicas % 2 ? "True" : "False");
    o = cJSON_Parse(text);
    assert_non_null(o);
    return o;
}

static long put(fakekube_t *fk, const char *name, int replicas)
{
    cJSON *o = object(name, replicas);
    long rv = fakekube_put(fk, o);
    cJSON_Delete(o);
    assert_true(rv > 0);
    return rv;
}

/* What the informer caches of the stored object without keep: all of it
 * but metadata.managedFields. NULL when absent. */
static cJSON *expected(fakekube_t *fk, const char *name)
{
    cJSON *o = fakekube_get(fk, name);
    if (o != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                                "managedFields");
    return o;
}

static int replicas_of(const cJSON *obj)
{
    const cJSON *r =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"), "replicas");
    return cJSON_IsNumber(r) ? r->valueint : -1;
}

static const char *rv_of(const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
    return cJSON_IsString(rv) ? rv->valuestring : "";
}

static void assert_json_equal(const cJSON *want, const cJSON *got)
{
    if (!cJSON_Compare(want, got, true)) {
        char *a = cJSON_PrintUnformatted(want), *b = cJSON_PrintUnformatted(got);
        print_error("want %s\n got %s\n", a ? a : "(null)", b ? b : "(null)");
        free(a);
        free(b);
        fail();
    }
}

/* ---- the informer under test ---- */

typedef struct {
    fakekube_t *fk;
    ms_kube_client_t *client;
    ms_kube_informer_t *inf;
    recorder_t rec;
} fixture_t;

static void start(fixture_t *f, bool compact, const char *const *keep,
                  ms_kube_transform_fn transform)
{
    ms_kube_informer_options_t o;

    memset(&o, 0, sizeof o);
    o.path = "/apis/autoscaling.meshscaler.io/v1alpha1/namespaces/ns/meshautoscalers";
    o.page_size = 4; /* several pages */
    o.backoff_initial = 0.05;
    o.backoff_max = 0.2;
    o.keep = keep;
    o.transform = transform;
    o.compact = compact;
    o.notify = record;
    o.ctx = &f->rec;
    assert_non_null(f->client = fakekube_client(f->fk));
    assert_non_null(f->inf = ms_kube_informer_new(f->client, &o));
    assert_int_equal(ms_kube_informer_start(f->inf), MS_OK);
    assert_true(ms_kube_informer_wait_synced(f->inf, WAIT_S));
}

/* The fixtures a test started and has not cleaned up. A failed assert
 * longjmps out of the test, past its fixture_cleanup, while the informer's
 * thread still writes into the fixture's recorder: so each test's fixtures
 * are static (they outlive the test) and teardown_fixtures stops those a
 * failed test left. */
static fixture_t *live_fixtures[2];

static void fixture_init(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < 2; i++) {
        if (live_fixtures[i] == NULL) {
            live_fixtures[i] = f;
            break;
        }
    }
    pthread_mutex_init(&f->rec.lock, NULL);
    assert_non_null(f->fk = fakekube_start());
}

static void fixture_cleanup(fixture_t *f)
{
    for (size_t i = 0; i < 2; i++)
        if (live_fixtures[i] == f)
            live_fixtures[i] = NULL;
    ms_kube_informer_free(f->inf);
    ms_kube_client_free(f->client);
    fakekube_stop(f->fk);
    recorder_cleanup(&f->rec);
    pthread_mutex_destroy(&f->rec.lock);
}

static int teardown_fixtures(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++)
        if (live_fixtures[i] != NULL)
            fixture_cleanup(live_fixtures[i]);
    return 0;
}

/* ---- reads ---- */

typedef struct {
    fakekube_t *fk;
    int calls, mismatches;
    const cJSON *seen; /* visit: what fn got (only compared inside fn) */
} reads_t;

static void check_visit(void *ctx, const cJSON *obj)
{
    reads_t *r = ctx;
    cJSON *want;
    char key[64];

    r->calls++;
    r->seen = obj;
    if (obj == NULL || !ms_kube_object_key(obj, key, sizeof key)) {
        r->mismatches++;
        return;
    }
    want = expected(r->fk, strchr(key, '/') + 1);
    if (!cJSON_Compare(want, obj, true))
        r->mismatches++;
    cJSON_Delete(want);
}

static void check_each(void *ctx, const char *key, const cJSON *obj)
{
    char objkey[64];

    check_visit(ctx, obj);
    if (!ms_kube_object_key(obj, objkey, sizeof objkey) || strcmp(objkey, key) != 0)
        ((reads_t *)ctx)->mismatches++;
}

/* get, visit and foreach all return what the fake stores (minus managedFields). */
static void assert_reads_match(fixture_t *f, const char *const *names, size_t n)
{
    reads_t r = {f->fk, 0, 0, NULL};

    assert_int_equal(ms_kube_informer_size(f->inf), n);
    for (size_t i = 0; i < n; i++) {
        char key[64];
        cJSON *want = expected(f->fk, names[i]), *got;

        snprintf(key, sizeof key, "ns/%s", names[i]);
        got = ms_kube_informer_get(f->inf, key);
        assert_non_null(got);
        assert_json_equal(want, got);
        cJSON_Delete(got);
        cJSON_Delete(want);
        assert_true(ms_kube_informer_visit(f->inf, key, check_visit, &r));
    }
    assert_int_equal(r.calls, n);
    assert_int_equal(r.mismatches, 0);
    r.calls = 0;
    ms_kube_informer_foreach(f->inf, check_each, &r);
    assert_int_equal(r.calls, n);
    assert_int_equal(r.mismatches, 0);
}

static void assert_absent(fixture_t *f, const char *key)
{
    reads_t r = {f->fk, 0, 0, NULL};

    assert_null(ms_kube_informer_get(f->inf, key));
    assert_false(ms_kube_informer_visit(f->inf, key, check_visit, &r));
    assert_int_equal(r.calls, 1);
    assert_null(r.seen);
}

/* ---- tests ---- */

static void test_list_fills_cache(void **state)
{
    bool compact = *(const bool *)*state;
    const char *names[10] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    static fixture_t f;
    ms_kube_informer_stats_t st;

    fixture_init(&f);
    for (size_t i = 0; i < 10; i++)
        put(f.fk, names[i], (int)i);
    start(&f, compact, NULL, NULL);
    ms_kube_informer_stats(f.inf, &st);
    assert_int_equal(st.objects, 10);
    assert_true(st.list_pages >= 3);
    assert_int_equal(st.lists, 1);
    assert_true(wait_notes(&f.rec, 10));
    for (size_t i = 0; i < 10; i++) {
        char key[64];
        const note_t *n;
        cJSON *want = expected(f.fk, names[i]);

        snprintf(key, sizeof key, "ns/%s", names[i]);
        n = note_for(&f.rec, 0, key);
        assert_int_equal(n->ch, MS_KUBE_ADDED);
        assert_null(n->old);
        assert_json_equal(want, n->obj);
        cJSON_Delete(want);
    }
    assert_reads_match(&f, names, 10);
    assert_absent(&f, "ns/nope");
    fixture_cleanup(&f);
}

/* A list that fails (the API server down at start) syncs nothing: the
 * informer is not synced with an empty cache, and syncs once the server is
 * back (mutant: the error branch after a failed list skipped). */
static void test_failed_list_is_not_a_sync(void **state)
{
    bool compact = *(const bool *)*state;
    ms_kube_informer_options_t o;
    ms_kube_informer_stats_t st;
    static fixture_t f;

    fixture_init(&f);
    put(f.fk, "a", 1);
    put(f.fk, "b", 1);
    fakekube_set_down(f.fk, true);
    memset(&o, 0, sizeof o);
    o.path = "/apis/autoscaling.meshscaler.io/v1alpha1/namespaces/ns/meshautoscalers";
    o.backoff_initial = 0.05;
    o.backoff_max = 0.1;
    o.compact = compact;
    o.notify = record;
    o.ctx = &f.rec;
    assert_non_null(f.client = fakekube_client(f.fk));
    assert_non_null(f.inf = ms_kube_informer_new(f.client, &o));
    assert_int_equal(ms_kube_informer_start(f.inf), MS_OK);
    /* Wait for a failed list (however slow the machine), then: not synced. */
    for (double end = now() + WAIT_S; now() < end; nap()) {
        ms_kube_informer_stats(f.inf, &st);
        if (st.errors >= 1)
            break;
    }
    assert_true(st.errors >= 1);
    assert_false(ms_kube_informer_wait_synced(f.inf, 0.1));
    assert_int_equal(st.lists, 0);
    assert_int_equal(notes(&f.rec), 0);
    fakekube_set_down(f.fk, false);
    assert_true(ms_kube_informer_wait_synced(f.inf, WAIT_S));
    assert_true(wait_notes(&f.rec, 2));
    fixture_cleanup(&f);
}

/* Many objects in one list: each is announced once, whatever slot of the
 * cache's map (strmap.h) it falls in; one of them is listed first and hashes
 * to the first slot of any table up to 65,536 slots, so it sits there
 * (mutant: the walk of the new cache from its second slot). */
static void test_every_listed_object_is_announced(void **state)
{
    bool compact = *(const bool *)*state;
    static fixture_t f;
    char name[16], key[32], first[16] = "";

    fixture_init(&f);
    for (int i = 0; first[0] == '\0'; i++) {
        snprintf(key, sizeof key, "ns/b%d", i);
        if ((ms_strmap_hash(key, strlen(key)) & 0xffff) == 0)
            snprintf(first, sizeof first, "b%d", i);
    }
    put(f.fk, first, 0);
    for (int i = 0; i < 299; i++) {
        snprintf(name, sizeof name, "o%d", i);
        put(f.fk, name, i);
    }
    start(&f, compact, NULL, NULL);
    assert_true(wait_notes(&f.rec, 300));
    nap();
    assert_int_equal(notes(&f.rec), 300);
    for (int i = 0; i < 299; i++) {
        snprintf(key, sizeof key, "ns/o%d", i);
        assert_int_equal(note_for(&f.rec, 0, key)->ch, MS_KUBE_ADDED);
    }
    snprintf(key, sizeof key, "ns/%s", first);
    assert_int_equal(note_for(&f.rec, 0, key)->ch, MS_KUBE_ADDED);
    fixture_cleanup(&f);
}

/* The item is borrowed (informer.h). */
static ms_err_t count_item(void *ctx, cJSON *item)
{
    if (item != NULL)
        (*(int *)ctx)++;
    return MS_OK;
}

/* A list without a page size asks for 500 per page (client-go's default),
 * never for everything at once (mutant: limit 0 sent as is). */
static void test_list_pages_default_to_500(void **state)
{
    ms_kube_error_t kerr;
    unsigned long pages = 0;
    char rv[64], name[16];
    static fixture_t f;
    int items = 0;

    (void)state;
    fixture_init(&f);
    for (int i = 0; i < 600; i++) {
        snprintf(name, sizeof name, "o%d", i);
        put(f.fk, name, i);
    }
    assert_non_null(f.client = fakekube_client(f.fk));
    memset(&kerr, 0, sizeof kerr);
    assert_int_equal(
        ms_kube_list(f.client,
                     "/apis/autoscaling.meshscaler.io/v1alpha1/namespaces/ns/meshautoscalers", NULL,
                     0, count_item, &items, rv, sizeof rv, &pages, &kerr),
        MS_OK);
    assert_int_equal(items, 600);
    assert_int_equal(pages, 2);
    fixture_cleanup(&f);
}

static void test_watch_notifications(void **state)
{
    bool compact = *(const bool *)*state;
    const char *names[3] = {"a", "c", "d"};
    static fixture_t f;
    cJSON *a_before, *b_before, *want;
    const note_t *n;
    size_t base;

    fixture_init(&f);
    put(f.fk, "a", 1);
    put(f.fk, "b", 1);
    put(f.fk, "c", 1);
    start(&f, compact, NULL, NULL);
    assert_true(wait_notes(&f.rec, 3));
    base = notes(&f.rec);
    a_before = expected(f.fk, "a");
    b_before = expected(f.fk, "b");

    put(f.fk, "d", 1);
    put(f.fk, "a", 2);
    fakekube_delete(f.fk, "b");
    assert_true(wait_notes(&f.rec, base + 3));
    assert_int_equal(notes(&f.rec), base + 3);

    n = note_for(&f.rec, base, "ns/d");
    assert_int_equal(n->ch, MS_KUBE_ADDED);
    assert_null(n->old);
    want = expected(f.fk, "d");
    assert_json_equal(want, n->obj);
    cJSON_Delete(want);

    /* UPDATED: the new object, and the old one as it was cached. */
    n = note_for(&f.rec, base, "ns/a");
    assert_int_equal(n->ch, MS_KUBE_UPDATED);
    want = expected(f.fk, "a");
    assert_json_equal(want, n->obj);
    assert_int_equal(replicas_of(n->obj), 2);
    cJSON_Delete(want);
    assert_non_null(n->old);
    assert_json_equal(a_before, n->old);
    assert_int_equal(replicas_of(n->old), 1);
    assert_string_not_equal(rv_of(n->old), rv_of(n->obj));

    /* DELETED: the event's object, the last known state. */
    n = note_for(&f.rec, base, "ns/b");
    assert_int_equal(n->ch, MS_KUBE_DELETED);
    assert_null(n->old);
    assert_non_null(n->obj);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(b_before, "metadata"),
                                            "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(n->obj, "metadata"),
                                            "resourceVersion");
    assert_json_equal(b_before, n->obj);

    assert_reads_match(&f, names, 3);
    assert_absent(&f, "ns/b");
    cJSON_Delete(a_before);
    cJSON_Delete(b_before);
    fixture_cleanup(&f);
}

/* Changes made while the informer cannot watch, then a compaction: its
 * watch gets 410, it relists, and the diff notifies what changed, with
 * the cached objects as old and last known ones. */
static void test_relist_after_gone(void **state)
{
    bool compact = *(const bool *)*state;
    const char *names[5] = {"a", "c", "d", "e", "x"};
    static fixture_t f;
    ms_kube_informer_stats_t st;
    unsigned long lists0, watches0, lists, watches;
    cJSON *a_before, *b_before, *want;
    const note_t *n;
    size_t base;
    double end;

    fixture_init(&f);
    put(f.fk, "a", 1);
    put(f.fk, "b", 1);
    put(f.fk, "c", 1);
    put(f.fk, "d", 1);
    put(f.fk, "e", 1);
    start(&f, compact, NULL, NULL);
    assert_true(wait_notes(&f.rec, 5));
    base = notes(&f.rec);
    a_before = expected(f.fk, "a");
    b_before = expected(f.fk, "b");
    fakekube_counts(f.fk, &lists0, &watches0);

    fakekube_set_down(f.fk, true);
    put(f.fk, "x", 1);
    put(f.fk, "a", 2);
    fakekube_delete(f.fk, "b");
    fakekube_compact(f.fk);
    {
        /* Down for 0.3 s: the watch is retried with backoff (0.05 s doubling
         * to 0.2 s), a few times, not in a tight loop (mutant: no sleep). */
        ms_kube_informer_stats_t during;
        unsigned long errors0;
        ms_kube_informer_stats(f.inf, &during);
        errors0 = during.errors;
        end = now() + 0.3;
        while (now() < end)
            nap();
        ms_kube_informer_stats(f.inf, &during);
        assert_true(during.errors - errors0 < 20);
    }
    fakekube_set_down(f.fk, false);

    assert_true(wait_notes(&f.rec, base + 3));
    end = now() + 0.3; /* nothing else may follow (c, d, e did not change) */
    while (now() < end)
        nap();
    assert_int_equal(notes(&f.rec), base + 3);
    ms_kube_informer_stats(f.inf, &st);
    assert_true(st.relists >= 1);
    fakekube_counts(f.fk, &lists, &watches);
    assert_true(lists > lists0);

    n = note_for(&f.rec, base, "ns/x");
    assert_int_equal(n->ch, MS_KUBE_ADDED);
    assert_null(n->old);
    want = expected(f.fk, "x");
    assert_json_equal(want, n->obj);
    cJSON_Delete(want);

    n = note_for(&f.rec, base, "ns/a");
    assert_int_equal(n->ch, MS_KUBE_UPDATED);
    want = expected(f.fk, "a");
    assert_json_equal(want, n->obj);
    cJSON_Delete(want);
    assert_json_equal(a_before, n->old);

    /* Deleted while down: DELETED with the object as it was cached. */
    n = note_for(&f.rec, base, "ns/b");
    assert_int_equal(n->ch, MS_KUBE_DELETED);
    assert_null(n->old);
    assert_json_equal(b_before, n->obj);

    assert_reads_match(&f, names, 5);
    assert_absent(&f, "ns/b");
    cJSON_Delete(a_before);
    cJSON_Delete(b_before);
    fixture_cleanup(&f);
}

/* Folds status.conditions into status.ready, as the pod informer's
 * transform does; keeps name, namespace and resourceVersion. */
static void fold_ready(void *ctx, cJSON *obj)
{
    cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    const cJSON *c;
    bool ready = false;

    (void)ctx;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type"),
                    *s = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "Ready") == 0 && cJSON_IsString(s))
            ready = strcmp(s->valuestring, "True") == 0;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
    cJSON_AddBoolToObject(status, "ready", ready);
}

/* What keep {spec.replicas, status.conditions} + fold_ready leave of the
 * stored object. */
static cJSON *expected_kept(fakekube_t *fk, const char *name)
{
    cJSON *o = fakekube_get(fk, name), *want;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    char text[512];

    assert_non_null(o);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
             "\"resourceVersion\":\"%s\"},"
             "\"spec\":{\"replicas\":%d},\"status\":{\"ready\":%s}}",
             name, cJSON_GetObjectItemCaseSensitive(md, "uid")->valuestring, rv_of(o),
             replicas_of(o), replicas_of(o) % 2 ? "true" : "false");
    cJSON_Delete(o);
    want = cJSON_Parse(text);
    assert_non_null(want);
    return want;
}

static void test_keep_and_transform(void **state)
{
    static const char *const keep[] = {"spec.replicas", "status.conditions", NULL};
    bool compact = *(const bool *)*state;
    static fixture_t f;
    cJSON *a_before, *b_before, *want, *got;
    const note_t *n;
    size_t base;

    fixture_init(&f);
    put(f.fk, "a", 1);
    put(f.fk, "b", 1);
    start(&f, compact, keep, fold_ready);
    assert_true(wait_notes(&f.rec, 2));
    want = expected_kept(f.fk, "a");
    assert_json_equal(want, note_for(&f.rec, 0, "ns/a")->obj);
    got = ms_kube_informer_get(f.inf, "ns/a");
    assert_json_equal(want, got);
    cJSON_Delete(got);
    cJSON_Delete(want);
    a_before = expected_kept(f.fk, "a");
    b_before = expected_kept(f.fk, "b");
    base = notes(&f.rec);

    put(f.fk, "a", 2);
    fakekube_delete(f.fk, "b");
    assert_true(wait_notes(&f.rec, base + 2));
    n = note_for(&f.rec, base, "ns/a");
    assert_int_equal(n->ch, MS_KUBE_UPDATED);
    want = expected_kept(f.fk, "a");
    assert_json_equal(want, n->obj);
    assert_json_equal(a_before, n->old);
    got = ms_kube_informer_get(f.inf, "ns/a");
    assert_json_equal(want, got);
    cJSON_Delete(got);
    cJSON_Delete(want);
    n = note_for(&f.rec, base, "ns/b");
    assert_int_equal(n->ch, MS_KUBE_DELETED);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(b_before, "metadata"),
                                            "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(n->obj, "metadata"),
                                            "resourceVersion");
    assert_json_equal(b_before, n->obj);
    cJSON_Delete(a_before);
    cJSON_Delete(b_before);
    fixture_cleanup(&f);
}

/* Doubles cJSON does not print back exactly: 0.1 + 0.2 prints as 0.3 and
 * 2^53 with 15 digits. */
static const double inexact[2] = {0.1 + 0.2, 9007199254740992.0};

static void add_inexact(void *ctx, cJSON *obj)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");

    (void)ctx;
    cJSON_AddNumberToObject(spec, "sum", inexact[0]);
    cJSON_AddNumberToObject(spec, "two53", inexact[1]);
}

static void assert_inexact_kept(const cJSON *obj)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    double sum = cJSON_GetObjectItemCaseSensitive(spec, "sum")->valuedouble;
    double big = cJSON_GetObjectItemCaseSensitive(spec, "two53")->valuedouble;

    /* Bit for bit: cJSON_Compare would call 0.3 equal. */
    assert_memory_equal(&sum, &inexact[0], sizeof sum);
    assert_memory_equal(&big, &inexact[1], sizeof big);
}

/* Under the informer's lock: copy, assert after (a failed assert jumps). */
static void copy_visited(void *ctx, const cJSON *obj)
{
    *(cJSON **)ctx = cJSON_Duplicate(obj, true);
}

static void test_numbers_read_back_exactly(void **state)
{
    bool compact = *(const bool *)*state;
    static fixture_t f;
    cJSON *got;

    fixture_init(&f);
    put(f.fk, "a", 1);
    start(&f, compact, NULL, add_inexact);
    assert_true(wait_notes(&f.rec, 1));
    assert_inexact_kept(f.rec.notes[0].obj);
    got = ms_kube_informer_get(f.inf, "ns/a");
    assert_inexact_kept(got);
    cJSON_Delete(got);
    assert_true(ms_kube_informer_visit(f.inf, "ns/a", copy_visited, &got));
    assert_inexact_kept(got);
    cJSON_Delete(got);
    put(f.fk, "a", 2);
    assert_true(wait_notes(&f.rec, 2));
    assert_int_equal(f.rec.notes[1].ch, MS_KUBE_UPDATED);
    assert_inexact_kept(f.rec.notes[1].old);
    fixture_cleanup(&f);
}

/* Two informers, one per mode, on the same server return equal trees. */
static void count_each(void *ctx, const char *key, const cJSON *obj)
{
    (void)key;
    (void)obj;
    (*(int *)ctx)++;
}

static void test_modes_agree(void **state)
{
    static fixture_t tree, compact;
    char name[32], key[64];

    (void)state;
    fixture_init(&tree);
    memset(&compact, 0, sizeof compact);
    pthread_mutex_init(&compact.rec.lock, NULL);
    compact.fk = tree.fk; /* shared; stopped once, by tree's cleanup */
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "o-%02d", i);
        put(tree.fk, name, i);
    }
    start(&tree, tree_mode, NULL, NULL);
    start(&compact, compact_mode, NULL, NULL);
    for (int i = 0; i < 30; i++) {
        cJSON *a, *b;
        snprintf(key, sizeof key, "ns/o-%02d", i);
        a = ms_kube_informer_get(tree.inf, key);
        b = ms_kube_informer_get(compact.inf, key);
        assert_non_null(a);
        assert_json_equal(a, b);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    {
        int na = 0, nb = 0;
        ms_kube_informer_foreach(tree.inf, count_each, &na);
        ms_kube_informer_foreach(compact.inf, count_each, &nb);
        assert_int_equal(na, 30);
        assert_int_equal(nb, 30);
    }
    ms_kube_informer_free(compact.inf);
    ms_kube_client_free(compact.client);
    recorder_cleanup(&compact.rec);
    pthread_mutex_destroy(&compact.rec.lock);
    fixture_cleanup(&tree);
}

/* cJSON's allocator, failing on demand: a parse that runs out of memory is
 * the only way a text we printed fails to parse again. */
static atomic_bool fail_alloc;

static void *failing_malloc(size_t n)
{
    return atomic_load(&fail_alloc) ? NULL : malloc(n);
}

static size_t log_lines_with(const char *needle)
{
    char line[1024];
    size_t n = 0;
    FILE *f;

    fflush(log_file);
    f = fopen(log_path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, needle) != NULL)
            n++;
    fclose(f);
    return n;
}

static void test_unparsable_text_reads_as_absent(void **state)
{
    const char *names[2] = {"a", "b"};
    cJSON_Hooks hooks = {failing_malloc, free};
    static fixture_t f;
    reads_t r = {NULL, 0, 0, NULL};
    int each = 0;
    size_t logged = log_lines_with("does not parse");

    (void)state;
    fixture_init(&f);
    r.fk = f.fk;
    put(f.fk, "a", 1);
    put(f.fk, "b", 1);
    start(&f, compact_mode, NULL, NULL);
    assert_true(wait_notes(&f.rec, 2));
    /* Only this thread uses cJSON now: the informer and the fake wait. */
    cJSON_InitHooks(&hooks);
    atomic_store(&fail_alloc, true);
    assert_null(ms_kube_informer_get(f.inf, "ns/a"));
    assert_false(ms_kube_informer_visit(f.inf, "ns/a", check_visit, &r));
    ms_kube_informer_foreach(f.inf, count_each, &each);
    atomic_store(&fail_alloc, false);
    cJSON_InitHooks(NULL);
    assert_int_equal(r.calls, 1);
    assert_null(r.seen);
    assert_int_equal(each, 0);
    assert_int_equal(log_lines_with("does not parse"), logged + 1);
    /* Nothing was lost: with memory again, the objects read as before. */
    assert_reads_match(&f, names, 2);
    fixture_cleanup(&f);
}

/* A test run once per cache mode, named for it. */
#define BOTH_MODES(f)                                                                              \
    {#f "(tree)", f, NULL, teardown_fixtures, (void *)&tree_mode},                                 \
    {                                                                                              \
#f "(compact)", f, NULL, teardown_fixtures, (void *)&compact_mode                          \
    }

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH_MODES(test_list_fills_cache),
        BOTH_MODES(test_failed_list_is_not_a_sync),
        BOTH_MODES(test_every_listed_object_is_announced),
        BOTH_MODES(test_watch_notifications),
        BOTH_MODES(test_relist_after_gone),
        BOTH_MODES(test_keep_and_transform),
        BOTH_MODES(test_numbers_read_back_exactly),
        cmocka_unit_test_teardown(test_modes_agree, teardown_fixtures),
        cmocka_unit_test_teardown(test_list_pages_default_to_500, teardown_fixtures),
        cmocka_unit_test_teardown(test_unparsable_text_reads_as_absent, teardown_fixtures),
    };
    int fd = mkstemp(log_path), rc;

    /* The log goes to a file the last test reads; set before any thread. */
    if (fd < 0 || (log_file = fdopen(fd, "w")) == NULL)
        return 1;
    ms_log_setup(MS_LOG_WARN, MS_LOG_TEXT, log_file);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    fclose(log_file);
    unlink(log_path);
    return rc;
}
