/*
 * workqueue.c - client-go's workqueue (queue + dirty + processing sets), its
 * delaying queue (a min-heap of deadlines) and its per-item exponential rate
 * limiter, under one mutex.
 *
 * Every key the queue knows has one entry in a map (strmap.h) holding
 * its state: dirty (queued or to be queued after done), processing, waiting
 * (its heap index) and its failure count. An entry with no state left is
 * freed, so the table holds only live keys.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/clock.h"
#include "meshscaler/strmap.h"
#include "meshscaler/workqueue.h"
#include "meshscaler/xalloc.h"

#define DEFAULT_BASE_DELAY 0.005
#define DEFAULT_MAX_DELAY 1000.0

typedef struct entry {
    bool dirty;        /* in the FIFO, or to be put there by done() */
    bool processing;   /* handed out, done() not called yet */
    size_t heap_index; /* SIZE_MAX when not waiting */
    double deadline;
    unsigned failures;
    char key[];
} entry_t;

struct ms_workqueue {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    ms_workqueue_clock_fn clock;
    void *clock_ctx;
    double base_delay, max_delay;

    ms_strmap_t keys; /* key -> entry_t*, keys in the entries */

    entry_t **fifo; /* ring of ready keys */
    size_t fifo_head, fifo_len, fifo_cap;

    entry_t **heap; /* min-heap on deadline */
    size_t heap_len, heap_cap;

    size_t nprocessing;
    bool shutting_down;
};

static double real_monotonic(void *ctx)
{
    (void)ctx;
    return ms_clock_monotonic();
}

static double now(const ms_workqueue_t *q)
{
    return q->clock(q->clock_ctx);
}

/* ---- the key table ---- */

static const char *entry_key(const void *e, const void *ctx)
{
    (void)ctx;
    return ((const entry_t *)e)->key;
}

static entry_t *lookup(const ms_workqueue_t *q, const char *key)
{
    return ms_strmap_get(&q->keys, key);
}

static entry_t *lookup_or_create(ms_workqueue_t *q, const char *key)
{
    entry_t *e = lookup(q, key);
    size_t len;

    if (e)
        return e;
    len = strlen(key) + 1;
    e = ms_xcalloc(1, sizeof *e + len);
    memcpy(e->key, key, len);
    e->heap_index = SIZE_MAX;
    ms_strmap_put(&q->keys, e->key, e);
    return e;
}

/* Free e when nothing about it needs remembering. */
static void release_if_idle(ms_workqueue_t *q, entry_t *e)
{
    if (e->dirty || e->processing || e->heap_index != SIZE_MAX || e->failures > 0)
        return;
    ms_strmap_del(&q->keys, e->key);
    free(e);
}

/* ---- the FIFO of ready keys ---- */

static void fifo_push(ms_workqueue_t *q, entry_t *e)
{
    if (q->fifo_len == q->fifo_cap) {
        size_t old = q->fifo_cap;

        q->fifo = ms_xgrow(q->fifo, &q->fifo_cap, old + 1, sizeof *q->fifo);
        /* Unwrap the ring: the keys before the head move past the old end,
         * where they follow the rest (the capacity at least doubled). */
        memcpy(q->fifo + old, q->fifo, q->fifo_head * sizeof *q->fifo);
    }
    q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = e;
    q->fifo_len++;
}

static entry_t *fifo_pop(ms_workqueue_t *q)
{
    entry_t *e = q->fifo[q->fifo_head];

    q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
    q->fifo_len--;
    return e;
}

/* ---- the heap of waiting keys ---- */

static void heap_set(ms_workqueue_t *q, size_t i, entry_t *e)
{
    q->heap[i] = e;
    e->heap_index = i;
}

static void heap_up(ms_workqueue_t *q, size_t i)
{
    entry_t *e = q->heap[i];

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (q->heap[parent]->deadline <= e->deadline)
            break;
        heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, i, e);
}

static void heap_down(ms_workqueue_t *q, size_t i)
{
    entry_t *e = q->heap[i];

    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= q->heap_len)
            break;
        if (child + 1 < q->heap_len && q->heap[child + 1]->deadline < q->heap[child]->deadline)
            child++;
        if (e->deadline <= q->heap[child]->deadline)
            break;
        heap_set(q, i, q->heap[child]);
        i = child;
    }
    heap_set(q, i, e);
}

static void heap_push(ms_workqueue_t *q, entry_t *e)
{
    q->heap = ms_xgrow(q->heap, &q->heap_cap, q->heap_len + 1, sizeof *q->heap);
    heap_set(q, q->heap_len++, e);
    heap_up(q, q->heap_len - 1);
}

static entry_t *heap_pop(ms_workqueue_t *q)
{
    entry_t *top = q->heap[0];

    q->heap_len--;
    if (q->heap_len > 0) {
        heap_set(q, 0, q->heap[q->heap_len]);
        heap_down(q, 0);
    }
    top->heap_index = SIZE_MAX;
    return top;
}

/* ---- the state machine (lock held) ---- */

static void add_locked(ms_workqueue_t *q, entry_t *e)
{
    if (e->dirty)
        return;
    e->dirty = true;
    if (e->processing)
        return; /* done() queues it */
    fifo_push(q, e);
    pthread_cond_signal(&q->cond);
}

/* Move every key whose deadline passed into the FIFO. */
static void promote_ready(ms_workqueue_t *q)
{
    double t;

    if (q->heap_len == 0)
        return;
    t = now(q);
    while (q->heap_len > 0 && q->heap[0]->deadline <= t)
        add_locked(q, heap_pop(q));
}

static void add_after_locked(ms_workqueue_t *q, const char *key, double delay)
{
    entry_t *e;
    double deadline;

    if (q->shutting_down)
        return;
    e = lookup_or_create(q, key);
    if (!(delay > 0)) { /* also NaN */
        add_locked(q, e);
        return;
    }
    deadline = now(q) + delay;
    if (e->heap_index != SIZE_MAX) {
        if (deadline < e->deadline) {
            e->deadline = deadline;
            heap_up(q, e->heap_index);
        }
        return;
    }
    e->deadline = deadline;
    heap_push(q, e);
    /* A getter may be sleeping until a later deadline. */
    pthread_cond_broadcast(&q->cond);
}

/* ---- public ---- */

ms_workqueue_t *ms_workqueue_new(const ms_workqueue_options_t *opts)
{
    ms_workqueue_t *q = ms_xcalloc(1, sizeof *q);

    q->clock = opts && opts->clock ? opts->clock : real_monotonic;
    q->clock_ctx = opts ? opts->clock_ctx : NULL;
    q->base_delay = opts && opts->base_delay > 0 ? opts->base_delay : DEFAULT_BASE_DELAY;
    q->max_delay = opts && opts->max_delay > 0 ? opts->max_delay : DEFAULT_MAX_DELAY;
    ms_strmap_init_intrusive(&q->keys, entry_key, NULL);
    pthread_mutex_init(&q->lock, NULL);
    ms_clock_cond_init(&q->cond);
    return q;
}

void ms_workqueue_free(ms_workqueue_t *q)
{
    size_t pos = 0;
    const char *key;
    void *e;

    if (q == NULL)
        return;
    while (ms_strmap_next(&q->keys, &pos, &key, &e))
        free(e);
    ms_strmap_cleanup(&q->keys);
    free(q->fifo);
    free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

void ms_workqueue_add(ms_workqueue_t *q, const char *key)
{
    ms_workqueue_add_after(q, key, 0);
}

void ms_workqueue_add_after(ms_workqueue_t *q, const char *key, double delay_seconds)
{
    pthread_mutex_lock(&q->lock);
    add_after_locked(q, key, delay_seconds);
    pthread_mutex_unlock(&q->lock);
}

void ms_workqueue_add_rate_limited(ms_workqueue_t *q, const char *key)
{
    entry_t *e;
    double delay;

    pthread_mutex_lock(&q->lock);
    if (q->shutting_down)
        goto out;
    e = lookup_or_create(q, key);
    /* ldexp never overflows to a wrong value: it saturates at +Inf, which the
     * cap then replaces. */
    delay = ldexp(q->base_delay, e->failures > 1100 ? 1100 : (int)e->failures);
    if (!(delay <= q->max_delay))
        delay = q->max_delay;
    if (e->failures < UINT_MAX)
        e->failures++;
    add_after_locked(q, key, delay);
out:
    pthread_mutex_unlock(&q->lock);
}

void ms_workqueue_forget(ms_workqueue_t *q, const char *key)
{
    entry_t *e;

    pthread_mutex_lock(&q->lock);
    e = lookup(q, key);
    if (e) {
        e->failures = 0;
        release_if_idle(q, e);
    }
    pthread_mutex_unlock(&q->lock);
}

unsigned ms_workqueue_num_requeues(ms_workqueue_t *q, const char *key)
{
    entry_t *e;
    unsigned n;

    pthread_mutex_lock(&q->lock);
    e = lookup(q, key);
    n = e ? e->failures : 0;
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* Wait on the condition variable until the earliest deadline (or a signal).
 * The deadline is on the queue's clock; the wait is in real time for the
 * same number of seconds. */
static void wait_locked(ms_workqueue_t *q)
{
    double wait;

    if (q->heap_len == 0) {
        pthread_cond_wait(&q->cond, &q->lock);
        return;
    }
    wait = q->heap[0]->deadline - now(q);
    if (wait <= 0)
        return;
    /* re-checks at least daily */
    ms_clock_cond_wait_until(&q->cond, &q->lock, ms_clock_monotonic() + wait);
}

static bool get_locked(ms_workqueue_t *q, bool block, char **key)
{
    entry_t *e;

    *key = NULL;
    for (;;) {
        if (q->shutting_down)
            return false;
        promote_ready(q);
        if (q->fifo_len > 0)
            break;
        if (!block)
            return false;
        wait_locked(q);
    }
    e = fifo_pop(q);
    e->dirty = false;
    e->processing = true;
    q->nprocessing++;
    *key = ms_xstrdup(e->key);
    return true;
}

bool ms_workqueue_get(ms_workqueue_t *q, char **key)
{
    bool ok;

    pthread_mutex_lock(&q->lock);
    ok = get_locked(q, true, key);
    pthread_mutex_unlock(&q->lock);
    return ok;
}

bool ms_workqueue_try_get(ms_workqueue_t *q, char **key)
{
    bool ok;

    pthread_mutex_lock(&q->lock);
    ok = get_locked(q, false, key);
    pthread_mutex_unlock(&q->lock);
    return ok;
}

void ms_workqueue_done(ms_workqueue_t *q, const char *key)
{
    entry_t *e;

    pthread_mutex_lock(&q->lock);
    e = lookup(q, key);
    if (e == NULL || !e->processing)
        goto out;
    e->processing = false;
    q->nprocessing--;
    if (q->shutting_down) {
        e->dirty = false;                 /* nothing is handed out any more */
        pthread_cond_broadcast(&q->cond); /* a drain may be waiting */
    } else if (e->dirty) {
        fifo_push(q, e);
        pthread_cond_signal(&q->cond);
    }
    release_if_idle(q, e);
out:
    pthread_mutex_unlock(&q->lock);
}

size_t ms_workqueue_len(ms_workqueue_t *q)
{
    size_t n;

    pthread_mutex_lock(&q->lock);
    promote_ready(q);
    n = q->fifo_len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t ms_workqueue_delayed_len(ms_workqueue_t *q)
{
    size_t n;

    pthread_mutex_lock(&q->lock);
    promote_ready(q);
    n = q->heap_len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t ms_workqueue_processing(ms_workqueue_t *q)
{
    size_t n;

    pthread_mutex_lock(&q->lock);
    n = q->nprocessing;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void ms_workqueue_wake(ms_workqueue_t *q)
{
    pthread_mutex_lock(&q->lock);
    promote_ready(q);
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

void ms_workqueue_shutdown(ms_workqueue_t *q)
{
    pthread_mutex_lock(&q->lock);
    if (!q->shutting_down) {
        q->shutting_down = true;
        /* Drop queued and waiting keys; their entries go when idle. */
        while (q->fifo_len > 0) {
            entry_t *e = fifo_pop(q);
            e->dirty = false;
            release_if_idle(q, e);
        }
        while (q->heap_len > 0)
            release_if_idle(q, heap_pop(q));
    }
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

bool ms_workqueue_shutdown_with_drain(ms_workqueue_t *q, double timeout_seconds)
{
    double deadline;
    bool drained;

    ms_workqueue_shutdown(q);
    deadline = ms_clock_monotonic() + (timeout_seconds > 86400 ? 86400 : timeout_seconds);
    pthread_mutex_lock(&q->lock);
    while (q->nprocessing > 0)
        if (!ms_clock_cond_wait_until(&q->cond, &q->lock, deadline))
            break;
    drained = q->nprocessing == 0;
    pthread_mutex_unlock(&q->lock);
    return drained;
}

bool ms_workqueue_shutting_down(ms_workqueue_t *q)
{
    bool s;

    pthread_mutex_lock(&q->lock);
    s = q->shutting_down;
    pthread_mutex_unlock(&q->lock);
    return s;
}
