/*
 * kube_it_deadwatch.c - a watch whose connection dies silently is noticed
 * by the informer's idle timeout and resumed, with no change missed.
 *
 * The informer talks to the real kube-apiserver through tests/tools/
 * faultproxy.py (a kubeconfig copy whose server is the proxy; the proxy is
 * plain TCP, so TLS still verifies 127.0.0.1). A second client, connected
 * directly, patches a "heartbeat" ConfigMap every 2 s, so a healthy watch
 * is never idle. Then the proxy blackholes every connection (nothing
 * forwarded, nothing closed: a silently dropped connection) for 25 s while
 * ConfigMaps are created, changed and deleted directly, and passes again.
 *
 * Pass criteria: a live watch is not ended by the idle timeout; the dead
 * watch is noticed within the idle timeout (10 s here) plus 2 s and resumed
 * on a new connection; after the blackhole the cache equals a fresh list,
 * every change made during it arrived as a notification, and there was no
 * relist. Figures: time from the blackhole to the idle timeout, to the
 * watch's restart, and to a consistent cache after the proxy passes again.
 *
 * MS_KUBE_IT_SLOW=1 adds the default idle timeout (150 s): a watch that
 * saw one change and then none for 160 s lives on the server's bookmarks
 * (no idle timeout), and a blackholed one is noticed 150 s after its last
 * event, within 2 s (about 6 more minutes).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itest.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"

#define MAXKEYS 256
#define BLACKHOLE_S 25.0

static char ns[64], path[256];
static ms_kube_client_t *admin;

/* ---- the proxy ---- */

static pid_t proxy_pid;
static int proxy_port, control_port;

/* Start faultproxy.py in front of upstream ("127.0.0.1:6443"); false on failure. */
static bool proxy_start(const char *upstream, const char *log)
{
    char script[1024], line[128];
    int fds[2];
    FILE *out;

    snprintf(script, sizeof script, "%s/../../tools/faultproxy.py", it.srcdir);
    if (pipe(fds) != 0)
        return false;
    proxy_pid = fork();
    if (proxy_pid < 0)
        return false;
    if (proxy_pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("python3", "python3", script, "--listen", "127.0.0.1:0", "--upstream", upstream,
               "--control", "127.0.0.1:0", "--log", log, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    if (out == NULL || fgets(line, sizeof line, out) == NULL ||
        sscanf(line, "LISTEN=%d CONTROL=%d", &proxy_port, &control_port) != 2) {
        if (out != NULL)
            fclose(out);
        return false;
    }
    fclose(out); /* the proxy writes nothing more to stdout */
    return true;
}

static bool proxy_mode(const char *query)
{
    char out[256], what[96];
    int rc =
        it_sh(out, sizeof out, "curl -sf 'http://127.0.0.1:%d/mode?set=%s'", control_port, query);

    snprintf(what, sizeof what, "proxy mode %s", query);
    return it_check(rc == 0, what, "control API: %s", out);
}

/* A number from the proxy's /stats; -1 when it cannot be read. */
static double proxy_stat(const char *name)
{
    char out[1024];
    cJSON *doc;
    double v = -1;

    if (it_sh(out, sizeof out, "curl -sf 'http://127.0.0.1:%d/stats'", control_port) != 0)
        return -1;
    doc = cJSON_Parse(out);
    if (cJSON_IsNumber(cJSON_GetObjectItem(doc, name)))
        v = cJSON_GetObjectItem(doc, name)->valuedouble;
    cJSON_Delete(doc);
    return v;
}

static bool proxy_stop(void)
{
    int st = -1;

    if (proxy_pid <= 0)
        return false;
    kill(proxy_pid, SIGTERM);
    waitpid(proxy_pid, &st, 0);
    proxy_pid = 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- notifications, per key ---- */

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

    (void)ctx, (void)old;
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
        snprintf(s->last_value, sizeof s->last_value, "%s",
                 cJSON_IsString(v) ? v->valuestring : "");
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

static bool wait_seen(const char *name, double secs)
{
    double end = it_now() + secs;

    while (get_seen(name).added == 0 && it_now() < end)
        it_sleep(0.1);
    return get_seen(name).added > 0;
}

static void forget_seen(void)
{
    pthread_mutex_lock(&lock);
    nseen = 0;
    pthread_mutex_unlock(&lock);
}

/* ---- writes, always through a direct connection ---- */

static ms_err_t put_cm(ms_kube_client_t *c, const char *name, const char *value, bool create)
{
    char p[300], body[512];
    ms_kube_error_t kerr;
    cJSON *obj, *cur = NULL;
    ms_err_t err;

    if (create) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
                 "\"data\":{\"v\":\"%s\"}}",
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

/* Create, change and delete 5 ConfigMaps each; names carry the round. */
static bool churn(const char *round)
{
    char name[64], value[64];
    bool ok = true;

    snprintf(value, sizeof value, "changed-%s", round);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s-new-%d", round, i);
        ok = ok && put_cm(admin, name, "v1", true) == MS_OK;
        snprintf(name, sizeof name, "%s-old-%d", round, i);
        ok = ok && put_cm(admin, name, value, false) == MS_OK;
        snprintf(name, sizeof name, "%s-gone-%d", round, i);
        ok = ok && del_cm(admin, name) == MS_OK;
    }
    return ok;
}

/* The ConfigMaps churn() will change and delete. */
static void churn_prepare(const char *round)
{
    char name[64];

    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s-old-%d", round, i);
        put_cm(admin, name, "v1", true);
        snprintf(name, sizeof name, "%s-gone-%d", round, i);
        put_cm(admin, name, "v1", true);
    }
}

/* Every change churn(round) made arrived as a notification. */
static bool churn_seen(const char *round, char *why, size_t cap)
{
    char name[64], value[64];

    snprintf(value, sizeof value, "changed-%s", round);
    for (int i = 0; i < 5; i++) {
        seen_t s;

        snprintf(name, sizeof name, "%s-new-%d", round, i);
        if ((s = get_seen(name)).added != 1)
            return snprintf(why, cap, "%s: %d ADDED", name, s.added), false;
        snprintf(name, sizeof name, "%s-old-%d", round, i);
        if ((s = get_seen(name)).updated < 1 || strcmp(s.last_value, value) != 0)
            return snprintf(why, cap, "%s: %d UPDATED, last %s", name, s.updated, s.last_value),
                   false;
        snprintf(name, sizeof name, "%s-gone-%d", round, i);
        if ((s = get_seen(name)).deleted != 1)
            return snprintf(why, cap, "%s: %d DELETED", name, s.deleted), false;
    }
    return true;
}

/* ---- the heartbeat: one change every 2 s keeps a healthy watch busy ---- */

static atomic_bool beat_on, beat_stop;
static atomic_int beats;

static void *heartbeat(void *arg)
{
    ms_kube_client_t *c = arg;
    char value[32];

    while (!atomic_load(&beat_stop)) {
        if (atomic_load(&beat_on)) {
            snprintf(value, sizeof value, "%d", atomic_fetch_add(&beats, 1) + 1);
            put_cm(c, "heartbeat", value, false);
        }
        it_sleep(2);
    }
    return NULL;
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
    if (ms_kube_list(admin, path, NULL, 100, add_item, &l, rv, sizeof rv, NULL, &kerr) != MS_OK) {
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

/* Wait until the cache equals a fresh list with the heartbeat paused (a
 * moving target never compares equal); the heartbeat is resumed after. */
static bool wait_equal(ms_kube_informer_t *inf, double secs, char *why, size_t cap)
{
    bool was = atomic_exchange(&beat_on, false), ok = false;
    double end = it_now() + secs;

    it_sleep(0.5); /* a heartbeat PATCH in flight lands */
    do {
        if (cache_vs_list(inf, why, cap) == NULL) {
            ok = true;
            break;
        }
        it_sleep(0.25);
    } while (it_now() < end);
    atomic_store(&beat_on, was);
    return ok;
}

/* ---- one blackhole round ---- */

typedef struct {
    double detected;   /* s from the blackhole to the idle timeout; -1: never */
    double restarted;  /* s from the blackhole to the next watch request; -1: never */
    double consistent; /* s from "pass" to a cache equal to a fresh list; -1: never */
} round_t;

/* Blackhole for max(BLACKHOLE_S, detection + 1 s) (at most `limit` s),
 * churn meanwhile, pass, and wait for the cache. */
static round_t blackhole_round(ms_kube_informer_t *inf, const char *round, double limit)
{
    ms_kube_informer_stats_t st0, st;
    round_t r = {-1, -1, -1};
    double t0, accepted0 = proxy_stat("accepted");
    unsigned long watches_at_detect = 0;
    char why[512];
    bool churned = false;

    churn_prepare(round);
    it_sleep(3); /* the watch has them, and a heartbeat or two */
    ms_kube_informer_stats(inf, &st0);
    st = st0;
    proxy_mode("blackhole");
    t0 = it_now();
    while (it_now() - t0 < limit) {
        double now = it_now();

        if (!churned && now - t0 >= 2) {
            it_check(churn(round),
                     "5 creates, 5 updates, 5 deletes made directly during the blackhole", NULL);
            churned = true;
        }
        ms_kube_informer_stats(inf, &st);
        if (r.detected < 0 && st.idle_timeouts > st0.idle_timeouts) {
            r.detected = st.last_idle_timeout - t0;
            watches_at_detect = st.watches;
        }
        if (r.detected >= 0 && r.restarted < 0 && st.watches > watches_at_detect)
            r.restarted = now - t0;
        if (now - t0 >= BLACKHOLE_S && r.restarted >= 0 && now - t0 >= r.detected + 1)
            break;
        it_sleep(0.1);
    }
    it_check(r.detected >= 0, "the silent watch is noticed during the blackhole",
             "after %.0f s: %lu idle timeouts", it_now() - t0,
             st.idle_timeouts - st0.idle_timeouts);
    it_check(r.restarted >= 0, "the watch is restarted after the idle timeout", NULL);
    it_check(proxy_stat("accepted") > accepted0,
             "the restarted watch opened a new connection (the dead one is not reused)",
             "accepted %.0f -> %.0f", accepted0, proxy_stat("accepted"));
    proxy_mode("pass");
    t0 = it_now();
    if (it_check(wait_equal(inf, 60, why, sizeof why),
                 "after the blackhole the cache equals a fresh list", "%s", why))
        r.consistent = it_now() - t0;
    it_check(churn_seen(round, why, sizeof why),
             "no change made during the blackhole was missed (5 ADDED, 5 UPDATED, 5 DELETED)", "%s",
             why);
    ms_kube_informer_stats(inf, &st);
    it_check(st.lists == st0.lists && st.relists == st0.relists,
             "resumed from the last resourceVersion (no relist)",
             "lists %lu -> %lu, relists %lu -> %lu", st0.lists, st.lists, st0.relists, st.relists);
    it_note(
        "%s: idle timeout noticed %.1f s after the blackhole, watch restarted at %.1f s; "
        "%lu idle timeouts, %lu watches, %lu errors during it; cache consistent %.1f s after pass",
        round, r.detected, r.restarted, st.idle_timeouts - st0.idle_timeouts,
        st.watches - st0.watches, st.errors - st0.errors, r.consistent);
    return r;
}

static ms_kube_informer_t *start_informer(ms_kube_client_t *via, long idle_s)
{
    ms_kube_informer_options_t io;
    ms_kube_informer_t *inf;

    memset(&io, 0, sizeof io);
    io.path = path;
    io.watch_idle_timeout_seconds = idle_s;
    io.backoff_initial = 0.5;
    io.backoff_max = 4;
    io.notify = on_change;
    inf = ms_kube_informer_new(via, &io);
    ms_kube_informer_start(inf);
    it_check(ms_kube_informer_wait_synced(inf, 30), "informer synced through the proxy", NULL);
    return inf;
}

int main(void)
{
    ms_kube_client_options_t o;
    ms_kube_client_t *proxied, *beat;
    ms_kube_informer_t *inf;
    ms_kube_informer_stats_t st0, st;
    pthread_t beater;
    char server[256], upstream[256], dir[] = "/tmp/ms-deadwatch.XXXXXX", cfg[300], log[300],
                                     out[512];
    const char *hostport;
    bool slow = getenv("MS_KUBE_IT_SLOW") && strcmp(getenv("MS_KUBE_IT_SLOW"), "1") == 0;
    round_t r;

    it_init("kube_it_deadwatch");
    memset(&o, 0, sizeof o);
    o.qps = -1;
    admin = it_client(it.admin, &o);
    beat = it_client(it.admin, &o);

    /* The proxy, and a kubeconfig that goes through it. */
    if (mkdtemp(dir) == NULL ||
        it_kubectl(server, sizeof server,
                   "config view --minify -o jsonpath='{.clusters[0].cluster.server}'") != 0 ||
        strncmp(server, "https://", 8) != 0) {
        it_check(false, "the API server's address from the admin kubeconfig", "%s", server);
        return it_done();
    }
    hostport = server + 8;
    snprintf(upstream, sizeof upstream, "%.*s", (int)strcspn(hostport, "/"), hostport);
    snprintf(log, sizeof log, "%s/faultproxy.log", dir);
    snprintf(cfg, sizeof cfg, "%s/kubeconfig", dir);
    if (!it_check(proxy_start(upstream, log), "faultproxy started in front of the API server", "%s",
                  upstream))
        return it_done();
    it_note("proxy 127.0.0.1:%d -> %s (control %d, log %s)", proxy_port, upstream, control_port,
            log);
    if (it_sh(out, sizeof out, "sed 's#server: %s#server: https://127.0.0.1:%d#' '%s' > '%s'",
              server, proxy_port, it.admin, cfg) != 0) {
        it_check(false, "kubeconfig through the proxy", "%s", out);
        return it_done();
    }
    proxied = it_client(cfg, &o);

    it_namespace("deadwatch", ns, sizeof ns);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps", ns);
    put_cm(admin, "heartbeat", "0", true);
    atomic_store(&beat_on, true);
    pthread_create(&beater, NULL, heartbeat, beat);

    /* ---- idle timeout 10 s ---- */
    inf = start_informer(proxied, 10);
    put_cm(admin, "live", "v1", true);
    it_check(wait_seen("live", 10), "a change arrives through the proxy", NULL);
    ms_kube_informer_stats(inf, &st0);
    it_sleep(15);
    ms_kube_informer_stats(inf, &st);
    it_check(st.idle_timeouts == 0 && st.events > st0.events,
             "a live watch (a change every 2 s) is not ended by a 10 s idle timeout",
             "%lu idle timeouts, %lu events in 15 s", st.idle_timeouts, st.events - st0.events);
    r = blackhole_round(inf, "r10", 40);
    it_check(r.detected >= 10 - 2.5 && r.detected <= 10 + 2,
             "idle timeout 10 s: the dead watch is noticed 10 s after its last event, within 2 s",
             "%.1f s", r.detected);
    put_cm(admin, "after-r10", "v1", true);
    it_check(wait_seen("after-r10", 10), "the resumed watch is live", NULL);
    ms_kube_informer_free(inf);

    /* ---- the default idle timeout (150 s) ---- */
    if (slow) {
        forget_seen();
        inf = start_informer(proxied, 0);
        /* One change after the watch started, then none for 160 s: from
         * then on the server sends bookmarks (see informer.h). */
        atomic_store(&beat_on, false);
        it_sleep(2.5);
        put_cm(admin, "quiet-start", "v1", true);
        it_check(wait_seen("quiet-start", 10), "default idle timeout: a change arrives", NULL);
        ms_kube_informer_stats(inf, &st0);
        it_sleep(160);
        ms_kube_informer_stats(inf, &st);
        it_check(st.idle_timeouts == 0 && st.bookmarks >= st0.bookmarks + 2,
                 "default idle timeout: a quiet watch (no change for 160 s) lives on bookmarks",
                 "%lu idle timeouts, %lu bookmarks", st.idle_timeouts,
                 st.bookmarks - st0.bookmarks);
        it_note("quiet watch: %lu bookmarks in 160 s", st.bookmarks - st0.bookmarks);
        atomic_store(&beat_on, true);
        r = blackhole_round(inf, "r150", 200);
        it_check(r.detected >= MS_KUBE_WATCH_IDLE_TIMEOUT - 2.5 &&
                     r.detected <= MS_KUBE_WATCH_IDLE_TIMEOUT + 2,
                 "default idle timeout: the dead watch is noticed 150 s after its last event, "
                 "within 2 s",
                 "%.1f s", r.detected);
        ms_kube_informer_free(inf);
    } else {
        it_note("MS_KUBE_IT_SLOW=1 also checks the default idle timeout (150 s; about 6 minutes)");
    }

    atomic_store(&beat_stop, true);
    pthread_join(beater, NULL);
    it_check(proxy_stop(), "faultproxy exits 0 on SIGTERM", NULL);
    it_kubectl(NULL, 0, "delete namespace %s --wait=false >/dev/null", ns);
    it_sh(NULL, 0, "rm -rf '%s'", dir);
    ms_kube_client_free(proxied);
    ms_kube_client_free(beat);
    ms_kube_client_free(admin);
    return it_done();
}
