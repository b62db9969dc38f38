/*
 * events.c - Events leave the sync path: a worker queues them and goes on;
 * one thread writes them through the deduplicating recorder (kube_events.h),
 * asking right before each write whether the lease still allows it.
 *
 * Bounded: a queue of `capacity` events; an event already waiting (same
 * object, type, reason and message) is not queued twice; when the queue is
 * full the new event is dropped and counted, never the worker delayed.
 */
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

typedef struct {
    char *api_version, *kind, *ns, *name, *uid, *type, *reason, *message;
    double wall;
} event_t;

struct ms__event_queue {
    ms_kube_recorder_t *recorder;
    bool (*may_send)(void *ctx);
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    event_t *ring;
    size_t cap, head, len;
    bool stopping;
    double drain_deadline;
    unsigned long dropped, sent;
    pthread_t thread;
    bool started;
};

static void event_free(event_t *e)
{
    free(e->api_version);
    free(e->kind);
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->type);
    free(e->reason);
    free(e->message);
    memset(e, 0, sizeof *e);
}

static bool same_event(const event_t *e, const ms_kube_object_ref_t *ref, const char *type,
                       const char *reason, const char *message)
{
    return strcmp(e->ns, ref->namespace_) == 0 && strcmp(e->name, ref->name) == 0 &&
           strcmp(e->type, type) == 0 && strcmp(e->reason, reason) == 0 &&
           strcmp(e->message, message) == 0;
}

static void *run(void *arg)
{
    ms__event_queue_t *q = arg;

    pthread_mutex_lock(&q->lock);
    for (;;) {
        event_t e;
        ms_kube_object_ref_t ref;
        ms_kube_error_t kerr = {0};

        while (q->len == 0 && !q->stopping)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->len == 0 || (q->stopping && ms_clock_monotonic() > q->drain_deadline))
            break;
        e = q->ring[q->head];
        memset(&q->ring[q->head], 0, sizeof q->ring[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->len--;
        pthread_mutex_unlock(&q->lock);
        ref = (ms_kube_object_ref_t){e.api_version, e.kind, e.ns, e.name, e.uid};
        if (q->may_send != NULL && !q->may_send(q->ctx)) {
            pthread_mutex_lock(&q->lock);
            q->dropped++;
        } else if (ms_kube_record(q->recorder, &ref, e.type, e.reason, e.message, e.wall, NULL,
                                  &kerr) != MS_OK) {
            MS_LOG_WARN("cannot record an event", MS_S("object", e.name), MS_S("reason", e.reason),
                        MS_S("error", kerr.message));
            pthread_mutex_lock(&q->lock);
            q->dropped++;
        } else {
            pthread_mutex_lock(&q->lock);
            q->sent++;
        }
        event_free(&e);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

ms__event_queue_t *ms__event_queue_new(ms_kube_recorder_t *recorder, size_t capacity,
                                       bool (*may_send)(void *ctx), void *ctx)
{
    ms__event_queue_t *q = ms_xcalloc(1, sizeof *q);

    q->recorder = recorder;
    q->may_send = may_send;
    q->ctx = ctx;
    q->cap = capacity > 0 ? capacity : 1024;
    q->ring = ms_xcalloc(q->cap, sizeof *q->ring);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    if (recorder != NULL && pthread_create(&q->thread, NULL, run, q) == 0)
        q->started = true;
    return q;
}

void ms__event_queue_free(ms__event_queue_t *q, double drain)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    q->drain_deadline = ms_clock_monotonic() + drain;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    if (q->started)
        pthread_join(q->thread, NULL);
    while (q->len > 0) {
        event_free(&q->ring[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    free(q->ring);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    free(q);
}

void ms__event_queue_push(ms__event_queue_t *q, const ms_kube_object_ref_t *ref, const char *type,
                          const char *reason, const char *message, double wall)
{
    event_t *e;

    pthread_mutex_lock(&q->lock);
    if (!q->started || q->stopping) {
        pthread_mutex_unlock(&q->lock);
        return;
    }
    for (size_t i = 0; i < q->len; i++) {
        if (same_event(&q->ring[(q->head + i) % q->cap], ref, type, reason, message)) {
            pthread_mutex_unlock(&q->lock);
            return;
        }
    }
    if (q->len == q->cap) {
        q->dropped++;
        pthread_mutex_unlock(&q->lock);
        return;
    }
    e = &q->ring[(q->head + q->len) % q->cap];
    e->api_version = ms_xstrdup(ref->api_version);
    e->kind = ms_xstrdup(ref->kind);
    e->ns = ms_xstrdup(ref->namespace_);
    e->name = ms_xstrdup(ref->name);
    e->uid = ms_xstrdup(ref->uid ? ref->uid : "");
    e->type = ms_xstrdup(type);
    e->reason = ms_xstrdup(reason);
    e->message = ms_xstrdup(message);
    e->wall = wall;
    q->len++;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

unsigned long ms__event_queue_dropped(ms__event_queue_t *q)
{
    unsigned long n;

    pthread_mutex_lock(&q->lock);
    n = q->dropped;
    pthread_mutex_unlock(&q->lock);
    return n;
}

unsigned long ms__event_queue_sent(ms__event_queue_t *q)
{
    unsigned long n;

    pthread_mutex_lock(&q->lock);
    n = q->sent;
    pthread_mutex_unlock(&q->lock);
    return n;
}
