/*
 * kube_events.c - deduplicated core/v1 Events: a small LRU of event keys to the
 * Event's name and count; repeats become a merge patch of count and
 * lastTimestamp. Aggregates (ms_kube_record_combined) are keyed by object,
 * type and reason alone, and their patch carries the latest message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kube_events.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

#define KEY_MAX 2048

typedef struct seen {
    char *key;
    char name[300];
    char namespace_[64];
    int count;
    char first[40];
    struct seen *prev, *next; /* most recent first */
} seen_t;

struct ms_kube_recorder {
    ms_kube_client_t *client;
    char *component;
    char *instance;
    pthread_mutex_t lock;
    seen_t *head, *tail;
    size_t n;
    unsigned long seq;
};

bool ms__kube_event_key(char *buf, size_t cap, const char *source, const char *api_version,
                        const char *kind, const char *ns, const char *name, const char *uid,
                        const char *type, const char *reason, const char *message)
{
    /* client-go's getEventKey: source, involved object, type, reason and
     * message. Fields are separated by a byte that cannot occur in them. */
    const char *f[] = {source, api_version, kind, ns, name, uid, type, reason, message};
    size_t used = 0;

    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const char *s = f[i] ? f[i] : "";
        size_t len = strlen(s);
        if (used + len + 2 > cap)
            return false;
        memcpy(buf + used, s, len);
        used += len;
        buf[used++] = '\x1f';
    }
    buf[used] = '\0';
    return true;
}

ms_kube_recorder_t *ms_kube_recorder_new(ms_kube_client_t *c, const char *component,
                                         const char *instance)
{
    ms_kube_recorder_t *r = ms_xcalloc(1, sizeof *r);

    r->component = ms_xstrdup(component ? component : "meshscaler");
    r->instance = ms_xstrdup(instance ? instance : "");
    r->client = c;
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void ms_kube_recorder_free(ms_kube_recorder_t *r)
{
    if (r == NULL)
        return;
    while (r->head != NULL) {
        seen_t *s = r->head;
        r->head = s->next;
        free(s->key);
        free(s);
    }
    pthread_mutex_destroy(&r->lock);
    free(r->component);
    free(r->instance);
    free(r);
}

static void unlink_seen(ms_kube_recorder_t *r, seen_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        r->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        r->tail = s->prev;
    s->prev = s->next = NULL;
}

static void push_front(ms_kube_recorder_t *r, seen_t *s)
{
    s->next = r->head;
    s->prev = NULL;
    if (r->head)
        r->head->prev = s;
    r->head = s;
    if (r->tail == NULL)
        r->tail = s;
}

static seen_t *find(ms_kube_recorder_t *r, const char *key)
{
    for (seen_t *s = r->head; s != NULL; s = s->next)
        if (strcmp(s->key, key) == 0)
            return s;
    return NULL;
}

static cJSON *new_event(ms_kube_recorder_t *r, const ms_kube_object_ref_t *o, const char *type,
                        const char *reason, const char *message, int count, const char *name,
                        const char *ts, const char *micro)
{
    cJSON *ev = cJSON_CreateObject(), *md, *io, *src;

    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    md = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", o->namespace_ ? o->namespace_ : "default");
    io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", o->api_version);
    cJSON_AddStringToObject(io, "kind", o->kind);
    if (o->namespace_)
        cJSON_AddStringToObject(io, "namespace", o->namespace_);
    cJSON_AddStringToObject(io, "name", o->name);
    if (o->uid && o->uid[0])
        cJSON_AddStringToObject(io, "uid", o->uid);
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", r->component);
    if (r->instance[0])
        cJSON_AddStringToObject(src, "host", r->instance);
    cJSON_AddStringToObject(ev, "firstTimestamp", ts);
    cJSON_AddStringToObject(ev, "lastTimestamp", ts);
    cJSON_AddStringToObject(ev, "eventTime", micro);
    cJSON_AddNumberToObject(ev, "count", count);
    cJSON_AddStringToObject(ev, "action", reason);
    cJSON_AddStringToObject(ev, "reportingComponent", r->component);
    cJSON_AddStringToObject(ev, "reportingInstance", r->instance[0] ? r->instance : r->component);
    return ev;
}

/* What one record call writes: `n` occurrences of an event shown with
 * `message`, found again by `key_message`; a repeat's patch carries the
 * message too when `patch_message` (an aggregate shows its latest). */
typedef struct {
    const char *key_message;
    const char *message;
    int n;
    bool patch_message;
} record_t;

static ms_err_t record(ms_kube_recorder_t *r, const ms_kube_object_ref_t *o, const char *type,
                       const char *reason, const record_t *what, double now, int *count_out,
                       ms_kube_error_t *kerr);

ms_err_t ms_kube_record(ms_kube_recorder_t *r, const ms_kube_object_ref_t *o, const char *type,
                        const char *reason, const char *message, double now, int *count_out,
                        ms_kube_error_t *kerr)
{
    record_t what = {message, message, 1, false};

    return record(r, o, type, reason, &what, now, count_out, kerr);
}

ms_err_t ms_kube_record_combined(ms_kube_recorder_t *r, const ms_kube_object_ref_t *o,
                                 const char *type, const char *reason, const char *message, int n,
                                 double now, int *count_out, ms_kube_error_t *kerr)
{
    char shown[1100];
    record_t what = {MS_KUBE_EVENT_COMBINED, shown, n > 0 ? n : 1, true};

    snprintf(shown, sizeof shown, "%s: %.1024s", MS_KUBE_EVENT_COMBINED, message);
    return record(r, o, type, reason, &what, now, count_out, kerr);
}

/* A repeat of the cached event s: its count and time (and message) patched
 * on the server; then s moves to the front of the cache. MS_ERR_NOTFOUND
 * when the server no longer has it. Called under r->lock. */
static ms_err_t patch_repeat(ms_kube_recorder_t *r, seen_t *s, const record_t *what, const char *ts,
                             int *count_out, ms_kube_error_t *kerr)
{
    char path[600];
    cJSON *patch = cJSON_CreateObject();
    ms_err_t err;

    cJSON_AddNumberToObject(patch, "count", s->count + what->n);
    cJSON_AddStringToObject(patch, "lastTimestamp", ts);
    if (what->patch_message)
        cJSON_AddStringToObject(patch, "message", what->message);
    err = ms_kube_path(path, sizeof path, "v1", s->namespace_, "events", s->name, NULL);
    if (err == MS_OK)
        err = ms_kube_merge_patch(r->client, path, patch, NULL, kerr);
    cJSON_Delete(patch);
    if (err != MS_OK)
        return err;
    s->count += what->n;
    unlink_seen(r, s);
    push_front(r, s);
    if (count_out)
        *count_out = s->count;
    return MS_OK;
}

static ms_err_t record(ms_kube_recorder_t *r, const ms_kube_object_ref_t *o, const char *type,
                       const char *reason, const record_t *what, double now, int *count_out,
                       ms_kube_error_t *kerr)
{
    char key[KEY_MAX], ts[40], micro[48], path[600];
    seen_t *s;
    ms_err_t err;
    cJSON *body;

    memset(kerr, 0, sizeof *kerr);
    if (!ms__kube_event_key(key, sizeof key, r->component, o->api_version, o->kind, o->namespace_,
                            o->name, o->uid, type, reason, what->key_message)) {
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, MS_ERR_TOOLARGE, "event message too long");
        return kerr->err;
    }
    ms_time_rfc3339(now, false, ts, sizeof ts);
    ms_time_rfc3339(now, true, micro, sizeof micro);
    /* The lock is held across the request so two threads recording the same
     * event cannot both create it. Events are rare (scaling actions). */
    pthread_mutex_lock(&r->lock);
    s = find(r, key);
    if (s != NULL) {
        err = patch_repeat(r, s, what, ts, count_out, kerr);
        if (err != MS_ERR_NOTFOUND)
            goto out;
        /* The Event expired on the server (its TTL is an hour): start again. */
        unlink_seen(r, s);
        free(s->key);
        free(s);
        r->n--;
    }
    s = ms_xcalloc(1, sizeof *s);
    s->key = ms_xstrdup(key);
    snprintf(s->namespace_, sizeof s->namespace_, "%s", o->namespace_ ? o->namespace_ : "default");
    /* client-go names events NAME.<unix nanoseconds in hex>. */
    snprintf(s->name, sizeof s->name, "%.200s.%llx%02lx", o->name, (unsigned long long)(now * 1e9),
             r->seq++ % 256);
    body = new_event(r, o, type, reason, what->message, what->n, s->name, ts, micro);
    err = ms_kube_path(path, sizeof path, "v1", s->namespace_, "events", NULL, NULL);
    if (err == MS_OK)
        err = ms_kube_create(r->client, path, body, NULL, kerr);
    cJSON_Delete(body);
    if (err != MS_OK) {
        free(s->key);
        free(s);
        goto out;
    }
    s->count = what->n;
    push_front(r, s);
    if (++r->n > MS_KUBE_EVENT_CACHE) {
        seen_t *old = r->tail;
        unlink_seen(r, old);
        free(old->key);
        free(old);
        r->n--;
    }
    if (count_out)
        *count_out = what->n;
out:
    pthread_mutex_unlock(&r->lock);
    if (err != MS_OK && kerr->err == MS_OK)
        kerr->err =
            ms_errf(kerr->message, sizeof kerr->message, err, "event for %s: bad name", o->name);
    return err;
}
