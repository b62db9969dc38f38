/*
 * kube_it_scale.c - scale targets, status writes, events and permissions
 * against the real kube-apiserver.
 *
 * Proves: discovery maps apiVersion+kind to resources (Deployment,
 * StatefulSet, ReplicaSet, a CRD with a scale subresource) and refreshes on a
 * miss; GET/PUT /scale with optimistic concurrency, where a concurrent
 * writer causes 409s and the client never overwrites; status merge patches;
 * events folded into one object with a count; the restricted identity can do
 * what the controller needs and is denied the rest; client-side throttling;
 * and the request count of one watch-and-scale cycle.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "meshscaler/informer.h"
#include "meshscaler/kube.h"
#include "meshscaler/kube_events.h"

static char ns[64];
static ms_kube_client_t *admin, *restricted;

static const char *WIDGET_CRD =
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    "metadata: {name: widgets.test.meshscaler.io}\n"
    "spec:\n  group: test.meshscaler.io\n  scope: Namespaced\n"
    "  names: {plural: widgets, singular: widget, kind: Widget}\n"
    "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
    "    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
    "    subresources:\n      status: {}\n"
    "      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, "
    "labelSelectorPath: .status.selector}\n";

/* A kind of its own per run: it must not exist before the test installs it. */
static char gadget_kind[64], gadget_plural[64], gadget_crd[2048];

static void make_gadget_crd(void)
{
    snprintf(gadget_kind, sizeof gadget_kind, "Gadget%ld", (long)getpid());
    snprintf(gadget_plural, sizeof gadget_plural, "gadget%lds", (long)getpid());
    snprintf(gadget_crd, sizeof gadget_crd,
             "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
             "metadata: {name: %s.test.meshscaler.io}\n"
             "spec:\n  group: test.meshscaler.io\n  scope: Namespaced\n"
             "  names: {plural: %s, singular: gadget%ld, kind: %s}\n"
             "  versions:\n  - name: v1\n    served: true\n    storage: true\n"
             "    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: "
             "true}}\n"
             "    subresources: {scale: {specReplicasPath: .spec.replicas, statusReplicasPath: "
             ".status.replicas}}\n",
             gadget_plural, gadget_plural, (long)getpid(), gadget_kind);
}

static void apply(const char *yaml)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "apply -f - >/dev/null <<'EOF'\n%sEOF", yaml);
    if (it_kubectl(NULL, 0, "%s", cmd) != 0) {
        printf("FAIL - kube_it_scale: kubectl apply failed:\n%s\n", yaml);
        exit(1);
    }
}

/* The workloads' pods name a scheduler that does not exist, so they stay Pending on
 * the local cluster's real node: these tests are about the scale subresource, and
 * pods that fail to pull an image would only add noise. */
static void setup_targets(void)
{
    char y[4096];

    apply(WIDGET_CRD);
    it_kubectl(
        NULL, 0,
        "wait --for condition=established --timeout=60s crd/widgets.test.meshscaler.io >/dev/null");
    snprintf(y, sizeof y,
             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: %s}\n"
             "spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n"
             "  template:\n    metadata: {labels: {app: web}}\n    spec: {schedulerName: "
             "unscheduled, containers: [{name: c, image: example.invalid/none}]}\n"
             "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: %s}\n"
             "spec:\n  replicas: 1\n  selector: {matchLabels: {app: db}}\n"
             "  template:\n    metadata: {labels: {app: db}}\n    spec: {schedulerName: "
             "unscheduled, containers: [{name: c, image: example.invalid/none}]}\n"
             "---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: %s}\n"
             "spec:\n  replicas: 1\n  selector: {matchLabels: {app: rs}}\n"
             "  template:\n    metadata: {labels: {app: rs}}\n    spec: {schedulerName: "
             "unscheduled, containers: [{name: c, image: example.invalid/none}]}\n"
             "---\napiVersion: test.meshscaler.io/v1\nkind: Widget\nmetadata: {name: wid, "
             "namespace: %s}\n"
             "spec: {replicas: 3}\n",
             ns, ns, ns, ns);
    apply(y);
}

static void test_discovery(void)
{
    ms_kube_resource_t r;
    ms_kube_error_t kerr;
    unsigned long before;
    ms_err_t err;

    err = ms_kube_discover(restricted, "apps/v1", "Deployment", &r, &kerr);
    it_check(err == MS_OK && strcmp(r.resource, "deployments") == 0 && r.namespaced && r.has_scale,
             "discovery: apps/v1 Deployment -> deployments (namespaced, /scale)", "%s",
             kerr.message);
    err = ms_kube_discover(restricted, "apps/v1", "StatefulSet", &r, &kerr);
    it_check(err == MS_OK && strcmp(r.resource, "statefulsets") == 0 && r.has_scale,
             "discovery: StatefulSet -> statefulsets", "%s", kerr.message);
    err = ms_kube_discover(restricted, "test.meshscaler.io/v1", "Widget", &r, &kerr);
    it_check(err == MS_OK && strcmp(r.resource, "widgets") == 0 && r.has_scale && r.has_status,
             "discovery: CRD Widget -> widgets (/scale, /status)", "%s", kerr.message);
    before = ms_kube_discovery_fetches(restricted);
    err = ms_kube_discover(restricted, "apps/v1", "ReplicaSet", &r, &kerr);
    it_check(err == MS_OK && ms_kube_discovery_fetches(restricted) == before,
             "discovery: a second kind of a cached group-version costs no request",
             "fetches %lu -> %lu", before, ms_kube_discovery_fetches(restricted));
    make_gadget_crd();
    err = ms_kube_discover(restricted, "test.meshscaler.io/v1", gadget_kind, &r, &kerr);
    it_check(err == MS_ERR_NOTFOUND, "discovery: a kind not served is NOTFOUND", "%s %s",
             ms_err_name(err), kerr.message);
    it_note("%s", kerr.message);
    /* A CRD installed after the cache was filled is found by the refresh on a miss. */
    apply(gadget_crd);
    it_kubectl(
        NULL, 0,
        "wait --for condition=established --timeout=60s crd/%s.test.meshscaler.io >/dev/null",
        gadget_plural);
    for (int i = 0; i < 50; i++) {
        if ((err = ms_kube_discover(restricted, "test.meshscaler.io/v1", gadget_kind, &r, &kerr)) ==
            MS_OK)
            break;
        it_sleep(0.2);
    }
    it_check(err == MS_OK && strcmp(r.resource, gadget_plural) == 0,
             "discovery: a CRD added later is found by refreshing on a miss", "%s", kerr.message);
    err = ms_kube_discover(restricted, "nope.example.com/v9", "Thing", &r, &kerr);
    it_check(err == MS_ERR_NOTFOUND, "discovery: an unknown group-version is NOTFOUND", "%s",
             kerr.message);
}

static void scale_round_trip(ms_kube_client_t *c, const char *api_version, const char *kind,
                             const char *name, int32_t to)
{
    ms_kube_ref_t ref = {api_version, kind, ns, name};
    ms_kube_scale_t s, after;
    ms_kube_error_t kerr;
    char what[200], out[64];
    ms_err_t err;

    snprintf(what, sizeof what, "%s %s: GET /scale", api_version, kind);
    err = ms_kube_scale_get(c, &ref, &s, &kerr);
    if (!it_check(err == MS_OK && s.resource_version[0], what, "%s", kerr.message))
        return;
    snprintf(what, sizeof what, "%s %s: PUT /scale %d -> %d", api_version, kind, s.replicas, to);
    err = ms_kube_scale_update(c, &ref, &s, to, &after, &kerr);
    it_check(err == MS_OK && after.replicas == to, what, "%s", kerr.message);
    it_kubectl(out, sizeof out, "-n %s get %s %s -o jsonpath='{.spec.replicas}'", ns,
               strcmp(kind, "Widget") == 0 ? "widgets.test.meshscaler.io" : kind, name);
    snprintf(what, sizeof what, "%s %s: kubectl sees spec.replicas %d", api_version, kind, to);
    it_check((int)strtol(out, NULL, 10) == to, what, "kubectl says %s", out);
}

static void test_scale_targets(void)
{
    /* The restricted identity for the built-in kinds (its ClusterRole allows
     * their /scale); the admin for the test CRD (not in the ClusterRole). */
    scale_round_trip(restricted, "apps/v1", "Deployment", "web", 4);
    scale_round_trip(restricted, "apps/v1", "StatefulSet", "db", 3);
    scale_round_trip(restricted, "apps/v1", "ReplicaSet", "rs", 2);
    scale_round_trip(admin, "test.meshscaler.io/v1", "Widget", "wid", 6);
}

static void test_conflict_is_never_overwritten(void)
{
    ms_kube_ref_t ref = {"apps/v1", "Deployment", ns, "web"};
    ms_kube_scale_t seen, out;
    ms_kube_error_t kerr;
    char now[64];
    ms_err_t err;

    ms_kube_scale_get(restricted, &ref, &seen, &kerr);
    /* Someone else scales after our read... */
    it_kubectl(NULL, 0, "-n %s scale deployment web --replicas=7 >/dev/null", ns);
    /* ...so our write, conditional on what we read, is refused. */
    err = ms_kube_scale_update(restricted, &ref, &seen, 5, &out, &kerr);
    it_check(err == MS_ERR_CONFLICT && kerr.status == 409 && strcmp(kerr.reason, "Conflict") == 0,
             "a stale scale update gets 409 Conflict", "%s %s", ms_err_name(err), kerr.message);
    it_note("409 message: %s", kerr.message);
    it_check(out.replicas == 7 && strcmp(out.resource_version, seen.resource_version) != 0,
             "after the 409 the caller holds a fresh re-read (7 replicas) to decide again",
             "re-read has %d replicas, rv %s (seen %s)", out.replicas, out.resource_version,
             seen.resource_version);
    it_kubectl(now, sizeof now, "-n %s get deployment web -o jsonpath='{.spec.replicas}'", ns);
    it_check((int)strtol(now, NULL, 10) == 7, "the other writer's 7 replicas were not overwritten",
             "spec.replicas=%s", now);
}

/* ---- a concurrent writer ---- */

typedef struct {
    atomic_int stop;
    int writes, conflicts;
} writer_t;

static void *writer(void *arg)
{
    writer_t *w = arg;
    ms_kube_ref_t ref = {"apps/v1", "Deployment", ns, "web"};
    int n = 0;

    while (!atomic_load(&w->stop)) {
        ms_kube_scale_t s, out;
        ms_kube_error_t kerr;
        if (ms_kube_scale_get(admin, &ref, &s, &kerr) != MS_OK)
            continue;
        /* The writer only ever writes odd counts; our client only even ones. */
        ms_err_t err = ms_kube_scale_update(admin, &ref, &s, 2 * (n++ % 10) + 1, &out, &kerr);
        if (err == MS_OK)
            w->writes++;
        else if (err == MS_ERR_CONFLICT)
            w->conflicts++;
    }
    return NULL;
}

static void test_concurrent_writer(void)
{
    ms_kube_ref_t ref = {"apps/v1", "Deployment", ns, "web"};
    writer_t w = {0, 0, 0};
    pthread_t th;
    int ok = 0, conflicts = 0, lost = 0, stale_reread = 0;
    double end;

    pthread_create(&th, NULL, writer, &w);
    end = it_now() + 8;
    for (int i = 0; it_now() < end; i++) {
        ms_kube_scale_t seen, out;
        ms_kube_error_t kerr;
        int32_t want = 2 * (i % 10) + 2;
        ms_err_t err;

        if (ms_kube_scale_get(restricted, &ref, &seen, &kerr) != MS_OK)
            continue;
        err = ms_kube_scale_update(restricted, &ref, &seen, want, &out, &kerr);
        if (err == MS_OK) {
            ok++;
            if (out.replicas != want)
                lost++;
        } else if (err == MS_ERR_CONFLICT) {
            conflicts++;
            /* The re-read is newer than what we based the write on. */
            if (strtoull(out.resource_version, NULL, 10) <=
                strtoull(seen.resource_version, NULL, 10))
                stale_reread++;
        }
    }
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    it_note("8 s against a concurrent writer: ours %d written, %d conflicts; writer %d written, %d "
            "conflicts",
            ok, conflicts, w.writes, w.conflicts);
    it_check(conflicts > 0 && w.writes > 0, "a concurrent writer causes 409s", "ours: %d conflicts",
             conflicts);
    it_check(
        lost == 0 && stale_reread == 0,
        "every conflict hands back a newer re-read; no write lands on a version we had not seen",
        "lost=%d stale=%d", lost, stale_reread);
}

static void test_status_patch(void)
{
    ms_kube_ref_t ref = {"test.meshscaler.io/v1", "Widget", ns, "wid"};
    cJSON *status =
        cJSON_Parse("{\"replicas\":6,\"selector\":\"app=wid\",\"observedGeneration\":1}");
    cJSON *out = NULL;
    ms_kube_scale_t s;
    ms_kube_error_t kerr;
    ms_err_t err;
    char spec[64];

    err = ms_kube_status_patch(admin, &ref, status, &out, &kerr);
    it_check(err == MS_OK, "status subresource merge patch", "%s", kerr.message);
    cJSON_Delete(out);
    cJSON_Delete(status);
    err = ms_kube_scale_get(admin, &ref, &s, &kerr);
    it_check(err == MS_OK && s.status_replicas == 6 && strcmp(s.selector, "app=wid") == 0,
             "the scale subresource reads status.replicas and status.selector back",
             "status.replicas=%d selector=%s", s.status_replicas, s.selector);
    it_kubectl(spec, sizeof spec, "-n %s get widget wid -o jsonpath='{.spec.replicas}'", ns);
    it_check((int)strtol(spec, NULL, 10) == 6, "a status write leaves spec alone",
             "spec.replicas=%s", spec);
    /* The status writer's form: the status as text, sent as it is. */
    err =
        ms_kube_status_patch_text(admin, &ref, "{\"replicas\":4,\"selector\":\"app=wid\"}", &kerr);
    it_check(err == MS_OK, "status merge patch from text", "%s", kerr.message);
    err = ms_kube_scale_get(admin, &ref, &s, &kerr);
    it_check(err == MS_OK && s.status_replicas == 4,
             "the text patch reads back (status.replicas 4)", "status.replicas=%d",
             s.status_replicas);
}

static void test_events(void)
{
    ms_kube_recorder_t *rec = ms_kube_recorder_new(restricted, "meshscaler", "it-host");
    ms_kube_object_ref_t obj = {"apps/v1", "Deployment", ns, "web", "uid-1"};
    ms_kube_stats_t before, after;
    ms_kube_error_t kerr;
    int count = 0;
    char out[4096];
    bool ok = true;

    ms_kube_client_stats(restricted, &before);
    for (int i = 0; i < 5; i++)
        ok = ok && ms_kube_record(rec, &obj, "Normal", "SuccessfulRescale",
                                  "New size: 4; reason: sidecar above target", (double)time(NULL),
                                  &count, &kerr) == MS_OK;
    ms_kube_client_stats(restricted, &after);
    it_check(ok && count == 5, "the same event five times", "%s count=%d", kerr.message, count);
    it_check(after.create - before.create == 1 && after.patch - before.patch == 4,
             "one create, then count++ by patch (no flood)", "creates %lu, patches %lu",
             after.create - before.create, after.patch - before.patch);
    it_kubectl(
        out, sizeof out,
        "-n %s get events --field-selector involvedObject.name=web,reason=SuccessfulRescale "
        "-o jsonpath='{range .items[*]}{.count} {.source.component} {.message}{\"\\n\"}{end}'",
        ns);
    it_check(strcmp(out, "5 meshscaler New size: 4; reason: sidecar above target") == 0,
             "kubectl sees one Event with count 5", "events: %s", out);
    ok = ms_kube_record(rec, &obj, "Normal", "SuccessfulRescale",
                        "New size: 6; reason: sidecar above target", (double)time(NULL), &count,
                        &kerr) == MS_OK;
    it_kubectl(out, sizeof out,
               "-n %s get events --field-selector involvedObject.name=web,reason=SuccessfulRescale "
               "-o name | wc -l",
               ns);
    it_check(ok && (int)strtol(out, NULL, 10) == 2 && count == 1,
             "a different message is a new Event", "%s events: %s", kerr.message, out);

    /* Aggregates (issue 28): 3 similar events folded, then 2 more: one Event
     * per object and reason, its count 3 then 5, the latest message shown. */
    ok = ms_kube_record_combined(rec, &obj, "Normal", "SuccessfulRescale", "New size: 7; reason: a",
                                 3, (double)time(NULL), &count, &kerr) == MS_OK &&
         count == 3;
    ok = ok &&
         ms_kube_record_combined(rec, &obj, "Normal", "SuccessfulRescale", "New size: 9; reason: b",
                                 2, (double)time(NULL), &count, &kerr) == MS_OK &&
         count == 5;
    it_kubectl(out, sizeof out,
               "-n %s get events --field-selector involvedObject.name=web,reason=SuccessfulRescale "
               "-o jsonpath='{range .items[*]}{.count} {.message}{\"\\n\"}{end}' | grep combined",
               ns);
    it_check(ok && strcmp(out, "5 (combined from similar events): New size: 9; reason: b") == 0,
             "an aggregate: one Event, count 3 + 2, the latest message", "%s count=%d events: %s",
             kerr.message, count, out);
    ms_kube_recorder_free(rec);
}

static void test_restricted_identity_denied(void)
{
    ms_kube_error_t kerr;
    ms_err_t err;
    char path[256];
    cJSON *dep = NULL;

    err = ms_kube_get(restricted, "/api/v1/namespaces/kube-system/secrets", NULL, &kerr);
    it_check(err == MS_ERR_FORBIDDEN && kerr.status == 403 && strcmp(kerr.reason, "Forbidden") == 0,
             "restricted identity: listing secrets is denied (403 Forbidden)", "%s", kerr.message);
    it_note("denied: %s", kerr.message);
    snprintf(path, sizeof path, "/apis/apps/v1/namespaces/%s/deployments/web", ns);
    ms_kube_get(admin, path, &dep, &kerr);
    err = ms_kube_update(restricted, path, dep, NULL, &kerr);
    it_check(err == MS_ERR_FORBIDDEN,
             "restricted identity: updating a whole Deployment is denied (only /scale)", "%s",
             kerr.message);
    cJSON_Delete(dep);
    snprintf(path, sizeof path, "/apis/test.meshscaler.io/v1/namespaces/%s/widgets/wid/scale", ns);
    err = ms_kube_get(restricted, path, NULL, &kerr);
    it_check(err == MS_ERR_FORBIDDEN,
             "restricted identity: a kind outside its ClusterRole is denied", "%s", kerr.message);
    err = ms_kube_delete(
        restricted, "/apis/coordination.k8s.io/v1/namespaces/meshscaler-system/leases/anything",
        &kerr);
    it_check(err == MS_ERR_FORBIDDEN, "restricted identity: deleting a lease is denied", "%s",
             kerr.message);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods?limit=1", ns);
    err = ms_kube_get(restricted, path, NULL, &kerr);
    it_check(err == MS_OK, "restricted identity: listing pods (for podRegex) is allowed", "%s",
             kerr.message);
    {
        /* It may list and watch HPAs cluster-wide (conflict detection). */
        ms_kube_informer_options_t io;
        ms_kube_informer_t *inf;
        ms_kube_informer_stats_t st;

        memset(&io, 0, sizeof io);
        io.path = "/apis/autoscaling/v2/horizontalpodautoscalers";
        inf = ms_kube_informer_new(restricted, &io);
        ms_kube_informer_start(inf);
        bool synced = ms_kube_informer_wait_synced(inf, 10);
        it_sleep(0.5);
        ms_kube_informer_stats(inf, &st);
        it_check(synced && st.watches >= 1 && st.errors == 0,
                 "restricted identity: list + watch of HorizontalPodAutoscalers in all namespaces",
                 "errors=%lu", st.errors);
        ms_kube_informer_free(inf);
    }
}

static void test_throttling(void)
{
    ms_kube_client_options_t o;
    ms_kube_client_t *c;
    ms_kube_stats_t st;
    ms_kube_error_t kerr;
    double t0, took;

    memset(&o, 0, sizeof o); /* the defaults: 5 QPS, burst 10 */
    c = it_client(it.admin, &o);
    t0 = it_now();
    for (int i = 0; i < 30; i++)
        ms_kube_get(c, "/version", NULL, &kerr);
    took = it_now() - t0;
    ms_kube_client_stats(c, &st);
    it_note("30 GETs at 5 QPS / burst 10 took %.2f s; %lu waited, %.2f s in the bucket", took,
            st.throttled, st.throttle_seconds);
    it_check(took >= 3.8 && took < 6 && st.throttled == 20,
             "client-side rate limit: 30 requests at 5/10 take ~4 s", "%.2f s, %lu throttled", took,
             st.throttled);
    it_check(st.connections == 1 && st.http_version == 2,
             "keep-alive: 30 requests over one HTTP/2 connection", "%lu connections, HTTP/%ld",
             st.connections, st.http_version);
    ms_kube_client_free(c);
}

/* ---- 429 from a real kube-apiserver ---- */

typedef struct {
    ms_kube_client_t *c;
    int errors;
    char last[MS_ERRBUF_SIZE];
} hammer_t;

static void *hammer(void *arg)
{
    hammer_t *h = arg;
    char p[200];

    snprintf(p, sizeof p, "/api/v1/namespaces/%s/pods", ns);
    for (int i = 0; i < 15; i++) {
        ms_kube_error_t kerr;
        if (ms_kube_get(h->c, p, NULL, &kerr) != MS_OK) {
            h->errors++;
            snprintf(h->last, sizeof h->last, "%s", kerr.message);
        }
    }
    return NULL;
}

static void test_retry_after_429(void)
{
    char cfg[600], restricted_cfg[700];
    ms_kube_client_options_t o;
    ms_kube_client_t *c;
    ms_kube_stats_t st;
    hammer_t h[8];
    pthread_t th[8];
    int errors = 0;

    /* A second kube-apiserver (same etcd) that admits one read at a time and
     * answers the rest 429 with Retry-After: the classic max-in-flight filter. */
    if (it_sh(cfg, sizeof cfg,
              "'%s' second-start --max-requests-inflight=1 --max-mutating-requests-inflight=1 "
              "--enable-priority-and-fairness=false",
              it.apiserver_sh) != 0) {
        it_check(false, "a kube-apiserver limited to one request in flight", "%s", cfg);
        return;
    }
    snprintf(restricted_cfg, sizeof restricted_cfg, "%s/apiserver2.restricted.kubeconfig",
             it.state);
    memset(&o, 0, sizeof o);
    o.qps = -1;
    c = it_client(restricted_cfg, &o);
    for (int i = 0; i < 8; i++) {
        h[i] = (hammer_t){c, 0, ""};
        pthread_create(&th[i], NULL, hammer, &h[i]);
    }
    const char *last = "";
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        errors += h[i].errors;
        if (h[i].errors)
            last = h[i].last;
    }
    ms_kube_client_stats(c, &st);
    it_note("8 threads x 15 GETs against max-requests-inflight=1: %lu requests sent, %lu retried "
            "after 429 + Retry-After",
            st.requests, st.retries);
    it_check(st.retries > 0, "the server answered 429 and the client retried after Retry-After",
             "retries=%lu", st.retries);
    it_check(errors == 0, "every request succeeded in the end", "%d failed, last: %s", errors,
             last);
    ms_kube_client_free(c);
    it_sh(NULL, 0, "'%s' second-stop", it.apiserver_sh);
}

/* One controller cycle on a fresh client, as the controller runs it: watch
 * the targets' owner objects (here: the Widgets), read the scale, write it,
 * patch the status, record the event. */
static void test_cycle_request_count(void)
{
    ms_kube_client_options_t o;
    ms_kube_client_t *c;
    ms_kube_informer_options_t io;
    ms_kube_informer_t *inf;
    ms_kube_stats_t st;
    ms_kube_ref_t ref = {"test.meshscaler.io/v1", "Widget", ns, "wid"};
    ms_kube_scale_t s, out;
    ms_kube_error_t kerr;
    ms_kube_recorder_t *rec;
    ms_kube_object_ref_t obj = {"test.meshscaler.io/v1", "Widget", ns, "wid", ""};
    cJSON *status = cJSON_Parse("{\"observedGeneration\":2}");
    char path[256];

    memset(&o, 0, sizeof o);
    c = it_client(it.admin, &o);
    snprintf(path, sizeof path, "/apis/test.meshscaler.io/v1/namespaces/%s/widgets", ns);
    memset(&io, 0, sizeof io);
    io.path = path;
    inf = ms_kube_informer_new(c, &io);
    ms_kube_informer_start(inf);
    ms_kube_informer_wait_synced(inf, 10);
    rec = ms_kube_recorder_new(c, "meshscaler", "it");
    ms_kube_scale_get(c, &ref, &s, &kerr);
    ms_kube_scale_update(c, &ref, &s, s.replicas + 1, &out, &kerr);
    ms_kube_status_patch(c, &ref, status, NULL, &kerr);
    ms_kube_record(rec, &obj, "Normal", "SuccessfulRescale", "cycle", (double)time(NULL), NULL,
                   &kerr);
    it_sleep(0.3);
    ms_kube_client_stats(c, &st);
    it_note("connections opened for the cycle: %lu (the watch holds one; requests share another)",
            st.connections);
    it_note("first watch-and-scale cycle: %lu requests = %lu list + %lu watch + %lu get (%lu "
            "discovery) + %lu update + %lu patch + %lu create",
            st.requests, st.list, st.watch, st.get, ms_kube_discovery_fetches(c), st.update,
            st.patch, st.create);
    {
        ms_kube_stats_t st2;
        ms_kube_scale_get(c, &ref, &s, &kerr);
        ms_kube_scale_update(c, &ref, &s, s.replicas + 1, &out, &kerr);
        ms_kube_status_patch(c, &ref, status, NULL, &kerr);
        ms_kube_record(rec, &obj, "Normal", "SuccessfulRescale", "cycle", (double)time(NULL), NULL,
                       &kerr);
        ms_kube_client_stats(c, &st2);
        it_note("each later cycle: %lu requests (GET scale, PUT scale, PATCH status, PATCH event "
                "count)",
                st2.requests - st.requests);
        it_check(st2.requests - st.requests == 4, "a steady-state cycle costs 4 requests", "%lu",
                 st2.requests - st.requests);
    }
    it_check(st.list == 1 && st.watch == 1 && ms_kube_discovery_fetches(c) == 1,
             "first cycle: one list, one watch, one discovery", "list=%lu watch=%lu discovery=%lu",
             st.list, st.watch, ms_kube_discovery_fetches(c));
    cJSON_Delete(status);
    ms_kube_recorder_free(rec);
    ms_kube_informer_free(inf);
    ms_kube_client_free(c);
}

int main(void)
{
    ms_kube_client_options_t o;

    it_init("kube_it_scale");
    memset(&o, 0, sizeof o);
    o.qps = -1; /* the tests' own pace; throttling is tested on its own client */
    admin = it_client(it.admin, &o);
    restricted = it_client(it.restricted, &o);
    it_namespace("scale", ns, sizeof ns);
    setup_targets();
    test_discovery();
    test_scale_targets();
    test_conflict_is_never_overwritten();
    test_concurrent_writer();
    test_status_patch();
    test_events();
    test_restricted_identity_denied();
    test_throttling();
    test_retry_after_429();
    test_cycle_request_count();
    it_kubectl(NULL, 0, "delete namespace %s --wait=false >/dev/null", ns);
    it_kubectl(NULL, 0, "delete crd %s.test.meshscaler.io --wait=false >/dev/null", gadget_plural);
    ms_kube_client_free(admin);
    ms_kube_client_free(restricted);
    return it_done();
}
