/*
 * writer_pool.c - a few threads that write what waits in a latest-per-key
 * queue (latest.c): the scale writer and the status writer are two of them,
 * told apart by their ops (what a write is, what becomes of a value not
 * written, whether their writes yield to others).
 *
 * Each write runs on its pool's own thread, under the client's per-thread
 * deadline: none while running, the drain deadline once stopping, so a write
 * taken late in a shutdown waits for a token no longer than the drain.
 */
#include <stdlib.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kube.h"
#include "meshscaler/xalloc.h"

/* A pool whose writes yield waits while ops->yield says others go first, at
 * most YIELD_MAX seconds per write (then it writes anyway), looking again
 * every YIELD_STEP. */
#define YIELD_MAX 2.0
#define YIELD_STEP 0.02

struct ms__writer_pool {
    ms__writer_pool_ops_t ops;
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* work queued, or stopping */
    pthread_cond_t done; /* a writer finished a write or left */
    ms__latest_t queue;  /* key -> value, owned until a writer takes it */
    size_t writing;      /* taken by a writer, not finished */
    bool stopping;
    double drain_deadline; /* monotonic, once stopping */
    pthread_t *threads;
    int nthreads;
    bool joined; /* stopped: no writer left, nothing queued */
};

/* Under p->lock: wait while the ops say other work goes first. */
static void yield(ms__writer_pool_t *p)
{
    double until;

    if (p->ops.yield == NULL)
        return;
    until = ms_clock_monotonic() + YIELD_MAX;
    while (!p->stopping && ms_clock_monotonic() < until && p->ops.yield(p->ctx)) {
        pthread_mutex_unlock(&p->lock);
        ms_clock_sleep(YIELD_STEP);
        pthread_mutex_lock(&p->lock);
    }
}

/* Under p->lock: the next value to write, or NULL when this writer leaves
 * (stopping with nothing queued, or past the drain deadline). */
static void *take(ms__writer_pool_t *p)
{
    for (;;) {
        while (p->queue.len == 0 && !p->stopping)
            pthread_cond_wait(&p->cond, &p->lock);
        yield(p);
        if (p->queue.len == 0 && !p->stopping)
            continue; /* another writer took it meanwhile */
        if (p->queue.len == 0 || (p->stopping && ms_clock_monotonic() > p->drain_deadline))
            return NULL;
        p->writing++;
        return ms__latest_pop(&p->queue);
    }
}

static void *run(void *arg)
{
    ms__writer_pool_t *p = arg;
    void *val;

    ms_kube_background_set(p->ops.background);
    pthread_mutex_lock(&p->lock);
    while ((val = take(p)) != NULL) {
        double drain = p->stopping ? p->drain_deadline : 0;

        pthread_mutex_unlock(&p->lock);
        ms_kube_deadline_set(0);
        ms_kube_deadline_cap(drain);
        p->ops.write(p->ctx, val);
        ms_kube_deadline_set(0);
        pthread_mutex_lock(&p->lock);
        p->writing--;
        pthread_cond_broadcast(&p->done);
    }
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

ms__writer_pool_t *ms__writer_pool_new(const ms__writer_pool_ops_t *ops, void *ctx, int threads,
                                       size_t capacity)
{
    ms__writer_pool_t *p = ms_xcalloc(1, sizeof *p);

    p->ops = *ops;
    p->ctx = ctx;
    ms__latest_init(&p->queue, capacity);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    ms_clock_cond_init(&p->done);
    p->threads = ms_xcalloc((size_t)(threads > 0 ? threads : 1), sizeof *p->threads);
    for (int i = 0; i < threads; i++) /* 0: a queue nobody takes from (tests) */
        if (pthread_create(&p->threads[p->nthreads], NULL, run, p) == 0)
            p->nthreads++;
    return p;
}

/* Under p->lock: stop taking values, write until `deadline` (the first one
 * set holds). */
static void stop_locked(ms__writer_pool_t *p, double deadline)
{
    if (!p->stopping) {
        p->stopping = true;
        p->drain_deadline = deadline;
    }
    pthread_cond_broadcast(&p->cond);
}

bool ms__writer_pool_drain(ms__writer_pool_t *p, double deadline)
{
    bool drained;

    pthread_mutex_lock(&p->lock);
    stop_locked(p, deadline);
    while (p->queue.len + p->writing > 0 && p->nthreads > 0)
        if (!ms_clock_cond_wait_until(&p->done, &p->lock, deadline))
            break;
    drained = p->queue.len + p->writing == 0;
    pthread_mutex_unlock(&p->lock);
    return drained;
}

void ms__writer_pool_stop(ms__writer_pool_t *p, double drain)
{
    void *val;

    if (p == NULL || p->joined)
        return;
    pthread_mutex_lock(&p->lock);
    stop_locked(p, ms_clock_monotonic() + drain);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    p->joined = true;
    /* Past the drain: what still waits is not written. Popped under the
     * lock (ms__writer_pool_pending may look meanwhile), handed over
     * outside it. */
    for (;;) {
        pthread_mutex_lock(&p->lock);
        val = ms__latest_pop(&p->queue);
        pthread_mutex_unlock(&p->lock);
        if (val == NULL)
            break;
        p->ops.unwritten(p->ctx, val);
    }
}

void ms__writer_pool_free(ms__writer_pool_t *p, double drain)
{
    if (p == NULL)
        return;
    ms__writer_pool_stop(p, drain);
    ms__latest_cleanup(&p->queue, NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    pthread_cond_destroy(&p->done);
    free(p);
}

bool ms__writer_pool_push(ms__writer_pool_t *p, const char *key, void *val)
{
    void *older = NULL;
    ms__latest_put_t put;

    pthread_mutex_lock(&p->lock);
    if (p->stopping || (p->nthreads == 0 && p->ops.refuse_without_threads)) {
        pthread_mutex_unlock(&p->lock);
        return false;
    }
    put = ms__latest_put(&p->queue, key, val, &older);
    if (put == MS__LATEST_ADDED)
        pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (older != NULL)
        p->ops.replaced(p->ctx, older);
    return put != MS__LATEST_FULL;
}

size_t ms__writer_pool_pending(ms__writer_pool_t *p, bool with_writing)
{
    size_t n;

    pthread_mutex_lock(&p->lock);
    n = p->queue.len + (with_writing ? p->writing : 0);
    pthread_mutex_unlock(&p->lock);
    return n;
}
