/*
 * events.c - Events leave the sync path: a worker queues them and goes on;
 * one thread sends them (through the deduplicating recorder, kube_events.h),
 * asking right before each one whether the lease still allows it. The
 * thread's requests are background ones: they yield to scale writes in the
 * client's token bucket (kube.h).
 *
 * Aggregated, as client-go's EventAggregator does, rather than dropped: one
 * Event per object, type and reason waits at most. An identical one is
 * queued once; a newer one of the same key folds into the waiting one (its
 * message the newer, its count one more) and is sent as one Event
 * "(combined from similar events): ..." whose count rises by as many. When
 * 10,000 objects move at once the queue holds one entry per object, not
 * one per change.
 *
 * Bounded: `capacity` keys wait at most; a new key past that is dropped.
 * What is still shed (a full queue, an invalid lease, a refused request) is
 * counted per reason (ms__event_queue_take_counts: /metrics) and said in the
 * log once per period, never silently.
 */
#include <stdlib.h>
#include <string.h>

#include "controller_internal.h"
#include "meshscaler/buf.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

/* One waiting Event; every string owned. */
typedef struct {
    char *key; /* ns, name, type, reason: the aggregation key */
    char *api_version, *kind, *ns, *name, *uid, *type, *reason, *message;
    double wall;
    int count; /* the events folded into it, itself included */
} event_t;

/* Per reason: what was shed and folded, since the last take and the last log line. */
typedef struct {
    unsigned long dropped, combined; /* not yet taken */
    unsigned long dropped_unlogged;
} reason_counts_t;

struct ms__event_queue {
    ms__event_send_fn send;
    void *send_ctx;
    bool (*may_send)(void *ctx);
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    ms_strmap_t pending; /* key -> event_t* (owned) */
    event_t **order;     /* the same, in arrival order (ring) */
    size_t cap, head, len;
    ms_strmap_t by_reason; /* reason -> reason_counts_t* (owned) */
    bool sending;          /* the thread took an event and has not finished it */
    pthread_cond_t done;   /* the thread finished an event or left */
    bool stopping;
    double drain_deadline;
    double logged; /* monotonic: the last drop line, or the start */
    unsigned long dropped, sent;
    pthread_t thread;
    bool started;
};

static void event_free(event_t *e)
{
    if (e == NULL)
        return;
    free(e->key);
    free(e->api_version);
    free(e->kind);
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->type);
    free(e->reason);
    free(e->message);
    free(e);
}

/* Under q->lock: the counts of reason, made when first needed. */
static reason_counts_t *counts_of(ms__event_queue_t *q, const char *reason)
{
    reason_counts_t *rc = ms_strmap_get(&q->by_reason, reason);

    if (rc == NULL) {
        rc = ms_xcalloc(1, sizeof *rc);
        ms_strmap_put(&q->by_reason, reason, rc);
    }
    return rc;
}

/* Under q->lock: one Event of reason shed. */
static void count_drop(ms__event_queue_t *q, const char *reason)
{
    reason_counts_t *rc = counts_of(q, reason);

    rc->dropped++;
    rc->dropped_unlogged++;
    q->dropped++;
}

static void *run(void *arg)
{
    ms__event_queue_t *q = arg;

    ms_kube_background_set(true);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        event_t *e;
        ms_kube_object_ref_t ref;
        ms_kube_error_t kerr = {0};
        double drain;

        while (q->len == 0 && !q->stopping)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->len == 0 || (q->stopping && ms_clock_monotonic() > q->drain_deadline))
            break;
        e = q->order[q->head];
        q->order[q->head] = NULL;
        q->head = (q->head + 1) % q->cap;
        q->len--;
        ms_strmap_del(&q->pending, e->key);
        q->sending = true;
        drain = q->stopping ? q->drain_deadline : 0;
        pthread_mutex_unlock(&q->lock);
        ref = (ms_kube_object_ref_t){e->api_version, e->kind, e->ns, e->name, e->uid};
        ms_kube_deadline_set(0);
        if (q->may_send != NULL && !q->may_send(q->ctx)) {
            pthread_mutex_lock(&q->lock);
            count_drop(q, e->reason);
        } else {
            ms_err_t err;

            /* A background request waits for a token while anything else
             * takes them: at shutdown it waits no longer than the drain. */
            ms_kube_deadline_cap(drain);
            err = q->send(q->send_ctx, &ref, e->type, e->reason, e->message, e->count, e->wall,
                          &kerr);
            ms_kube_deadline_set(0);
            if (err != MS_OK)
                MS_LOG_WARN("cannot record an event", MS_S("object", e->name),
                            MS_S("reason", e->reason), MS_S("error", kerr.message));
            pthread_mutex_lock(&q->lock);
            if (err != MS_OK)
                count_drop(q, e->reason);
            else
                q->sent++;
        }
        event_free(e);
        q->sending = false;
        pthread_cond_broadcast(&q->done);
    }
    pthread_cond_broadcast(&q->done);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

ms__event_queue_t *ms__event_queue_new(ms__event_send_fn send, void *send_ctx, size_t capacity,
                                       bool (*may_send)(void *ctx), void *ctx)
{
    ms__event_queue_t *q = ms_xcalloc(1, sizeof *q);

    q->send = send;
    q->send_ctx = send_ctx;
    q->may_send = may_send;
    q->ctx = ctx;
    q->cap = capacity > 0 ? capacity : 1024;
    q->order = ms_xcalloc(q->cap, sizeof *q->order);
    q->logged = ms_clock_monotonic();
    ms_strmap_init(&q->pending);
    ms_strmap_init(&q->by_reason);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    ms_clock_cond_init(&q->done);
    if (send != NULL && pthread_create(&q->thread, NULL, run, q) == 0)
        q->started = true;
    return q;
}

/* Under q->lock: stop taking Events after `deadline` (once). */
static void stop_locked(ms__event_queue_t *q, double deadline)
{
    if (!q->stopping) {
        q->stopping = true;
        q->drain_deadline = deadline;
    }
    pthread_cond_broadcast(&q->cond);
}

bool ms__event_queue_drain(ms__event_queue_t *q, double deadline)
{
    bool drained;

    if (q == NULL)
        return true;
    pthread_mutex_lock(&q->lock);
    stop_locked(q, deadline);
    while ((q->len > 0 || q->sending) && q->started)
        if (!ms_clock_cond_wait_until(&q->done, &q->lock, deadline))
            break;
    drained = q->len == 0 && !q->sending;
    pthread_mutex_unlock(&q->lock);
    return drained;
}

void ms__event_queue_free(ms__event_queue_t *q, double drain)
{
    size_t pos = 0;
    const char *key;
    void *val;

    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    stop_locked(q, ms_clock_monotonic() + drain);
    pthread_mutex_unlock(&q->lock);
    if (q->started)
        pthread_join(q->thread, NULL);
    while (q->len > 0) {
        event_free(q->order[q->head]);
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    while (ms_strmap_next(&q->by_reason, &pos, &key, &val))
        free(val);
    ms_strmap_cleanup(&q->by_reason);
    ms_strmap_cleanup(&q->pending);
    free(q->order);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    pthread_cond_destroy(&q->done);
    free(q);
}

/* Under q->lock: a newer Event of a waiting one's key. An identical one
 * changes nothing (the recorder counts repeats it sends); another message
 * takes the waiting one's place and counts one more. */
static void fold(ms__event_queue_t *q, event_t *e, const char *message, double wall)
{
    if (strcmp(e->message, message) == 0)
        return;
    free(e->message);
    e->message = ms_xstrdup(message);
    e->wall = wall;
    e->count++;
    counts_of(q, e->reason)->combined++;
}

void ms__event_queue_push(ms__event_queue_t *q, const ms_kube_object_ref_t *ref, const char *type,
                          const char *reason, const char *message, double wall)
{
    char key[MS__KEY_MAX + 256];
    event_t *e;

    snprintf(key, sizeof key, "%s\x1f%s\x1f%s\x1f%s", ref->namespace_, ref->name, type, reason);
    pthread_mutex_lock(&q->lock);
    if (!q->started || q->stopping)
        goto out;
    if ((e = ms_strmap_get(&q->pending, key)) != NULL) {
        fold(q, e, message, wall);
        goto out;
    }
    if (q->len == q->cap) {
        count_drop(q, reason);
        goto out;
    }
    e = ms_xcalloc(1, sizeof *e);
    e->key = ms_xstrdup(key);
    e->api_version = ms_xstrdup(ref->api_version);
    e->kind = ms_xstrdup(ref->kind);
    e->ns = ms_xstrdup(ref->namespace_);
    e->name = ms_xstrdup(ref->name);
    e->uid = ms_xstrdup(ref->uid ? ref->uid : "");
    e->type = ms_xstrdup(type);
    e->reason = ms_xstrdup(reason);
    e->message = ms_xstrdup(message);
    e->wall = wall;
    e->count = 1;
    ms_strmap_put(&q->pending, e->key, e);
    q->order[(q->head + q->len) % q->cap] = e;
    q->len++;
    pthread_cond_signal(&q->cond);
out:
    pthread_mutex_unlock(&q->lock);
}

/* Under q->lock: one line for the drops since the last one, when there
 * were any and `period` has passed. */
static void log_drops(ms__event_queue_t *q, double now, double period)
{
    char by_reason[512];
    ms_fixbuf_t b;
    size_t pos = 0;
    const char *reason;
    void *val;
    unsigned long total = 0;

    if (now - q->logged < period)
        return;
    ms_fixbuf_init(&b, by_reason, sizeof by_reason);
    while (ms_strmap_next(&q->by_reason, &pos, &reason, &val)) {
        reason_counts_t *rc = val;
        if (rc->dropped_unlogged == 0)
            continue;
        ms_fixbuf_appendf(&b, "%s%s=%lu", total ? " " : "", reason, rc->dropped_unlogged);
        total += rc->dropped_unlogged;
        rc->dropped_unlogged = 0;
    }
    if (total > 0)
        MS_LOG_WARN("events dropped (the queue full, the lease not valid, or refused)",
                    MS_I("dropped", (long long)total), MS_S("by_reason", by_reason),
                    MS_D("seconds", now - q->logged));
    q->logged = now;
}

void ms__event_queue_take_counts(ms__event_queue_t *q, double now, double period,
                                 void (*fn)(void *ctx, const char *reason, unsigned long dropped,
                                            unsigned long combined),
                                 void *ctx)
{
    size_t pos = 0;
    const char *reason;
    void *val;

    pthread_mutex_lock(&q->lock);
    while (ms_strmap_next(&q->by_reason, &pos, &reason, &val)) {
        reason_counts_t *rc = val;
        if (rc->dropped == 0 && rc->combined == 0)
            continue;
        if (fn != NULL)
            fn(ctx, reason, rc->dropped, rc->combined);
        rc->dropped = rc->combined = 0;
    }
    log_drops(q, now, period);
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
