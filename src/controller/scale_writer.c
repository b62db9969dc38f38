/*
 * scale_writer.c - scale writes leave the workers: a worker that decided a
 * scale change hands the rest of its sync here and takes the next key. A
 * scale write used to hold its worker for as long as the API server took to
 * answer; with --concurrent-syncs 4 and an API server busy with a mass
 * change (10,000 objects, 9-12 s of its CPU per 15 s) 5,000 writes landed at
 * 13-42 per second, the last after minutes. Here SCALE_WRITERS threads
 * (controller.c) keep as many writes in flight, each on a connection of its
 * own, in the foreground of the client's token bucket: before status patches
 * and Events, which wait in its background.
 *
 * One pending write per object: a newer decision of the same object replaces
 * the one still waiting, which is abandoned (its decision forgotten), so
 * only the latest count is written. The object stays busy while its write
 * waits (rounds skip it), and its scale event, status and Event are made
 * only after the write, by the writer (ms__sync_write): what was not written
 * is never recorded as a scale.
 */
#include <stdlib.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/kube.h"
#include "meshscaler/xalloc.h"

struct ms__scale_writer {
    ms_controller_t *c;
    pthread_mutex_t lock;
    pthread_cond_t cond;     /* work queued, or stopping */
    pthread_cond_t done;     /* a writer finished a write or left */
    ms__latest_t queue;      /* "ns/name" -> ms__item_t* (owned until a writer takes it) */
    size_t writing;          /* taken by a writer, not finished */
    bool stopping;
    double drain_deadline;   /* monotonic, once stopping */
    pthread_t *threads;
    int nthreads;
};

static void *run(void *arg)
{
    ms__scale_writer_t *w = arg;
    ms_controller_t *c = w->c;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        ms__item_t *it;
        double drain;

        while (w->queue.len == 0 && !w->stopping)
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->queue.len == 0 || (w->stopping && ms_clock_monotonic() > w->drain_deadline))
            break;
        it = ms__latest_pop(&w->queue);
        w->writing++;
        drain = w->stopping ? w->drain_deadline : 0;
        pthread_mutex_unlock(&w->lock);
        ms_kube_deadline_set(0);
        ms_kube_deadline_cap(drain); /* at shutdown a write waits no longer than the drain */
        ms__sync_write(c, it);
        ms_kube_deadline_set(0);
        pthread_mutex_lock(&w->lock);
        w->writing--;
        pthread_cond_broadcast(&w->done);
    }
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

ms__scale_writer_t *ms__scale_writer_new(ms_controller_t *c, int threads, size_t capacity)
{
    ms__scale_writer_t *w = ms_xcalloc(1, sizeof *w);

    w->c = c;
    ms__latest_init(&w->queue, capacity);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    ms_clock_cond_init(&w->done);
    w->threads = ms_xcalloc((size_t)(threads > 0 ? threads : 1), sizeof *w->threads);
    for (int i = 0; i < threads; i++) /* 0: a queue nobody takes from (tests) */
        if (pthread_create(&w->threads[w->nthreads], NULL, run, w) == 0)
            w->nthreads++;
    return w;
}

bool ms__scale_writer_drain(ms__scale_writer_t *w, double deadline)
{
    bool drained;

    if (w == NULL)
        return true;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    w->drain_deadline = deadline;
    pthread_cond_broadcast(&w->cond);
    while (w->queue.len + w->writing > 0 && w->nthreads > 0)
        if (!ms_clock_cond_wait_until(&w->done, &w->lock, deadline))
            break;
    drained = w->queue.len + w->writing == 0;
    pthread_mutex_unlock(&w->lock);
    return drained;
}

void ms__scale_writer_free(ms__scale_writer_t *w)
{
    ms__item_t *it;

    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    if (!w->stopping) {
        w->stopping = true;
        w->drain_deadline = ms_clock_monotonic();
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    /* Past the drain: what still waits is not written. */
    while ((it = ms__latest_pop(&w->queue)) != NULL)
        ms__sync_abandon(w->c, it);
    ms__latest_cleanup(&w->queue, NULL);
    free(w->threads);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    pthread_cond_destroy(&w->done);
    free(w);
}

bool ms__scale_writer_push(ms__scale_writer_t *w, ms__item_t *it)
{
    void *older = NULL;
    ms__latest_put_t put;

    pthread_mutex_lock(&w->lock);
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    put = ms__latest_put(&w->queue, it->key, it, &older);
    if (put == MS__LATEST_ADDED)
        pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (older != NULL)
        ms__sync_free(older); /* the newer sync holds the object now */
    return put != MS__LATEST_FULL;
}

size_t ms__scale_writer_pending(ms__scale_writer_t *w)
{
    size_t n;

    if (w == NULL)
        return 0;
    pthread_mutex_lock(&w->lock);
    n = w->queue.len + w->writing;
    pthread_mutex_unlock(&w->lock);
    return n;
}
