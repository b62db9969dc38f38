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
 * is never recorded as a scale. The rest of the sync is the loop's
 * (reconcile.c, above this file): the writer is handed it as callbacks.
 */
#include <stdlib.h>

#include "controller_internal.h"
#include "meshscaler/xalloc.h"

struct ms__scale_writer {
    ms__writer_pool_t *pool; /* "ns/name" -> ms__item_t* */
    ms__scale_writer_ops_t ops;
    ms_controller_t *c;
};

static void write_scale(void *ctx, void *it)
{
    ms__scale_writer_t *w = ctx;

    w->ops.write(w->c, it);
}

/* The newer sync holds the object now. */
static void replaced(void *ctx, void *it)
{
    ms__scale_writer_t *w = ctx;

    w->ops.free(it);
}

static void unwritten(void *ctx, void *it)
{
    ms__scale_writer_t *w = ctx;

    w->ops.abandon(w->c, it);
}

ms__scale_writer_t *ms__scale_writer_new(ms_controller_t *c, const ms__scale_writer_ops_t *ops,
                                         int threads, size_t capacity)
{
    static const ms__writer_pool_ops_t pool_ops = {
        .write = write_scale, .replaced = replaced, .unwritten = unwritten};
    ms__scale_writer_t *w = ms_xcalloc(1, sizeof *w);

    w->ops = *ops;
    w->c = c;
    w->pool = ms__writer_pool_new(&pool_ops, w, threads, capacity);
    return w;
}

bool ms__scale_writer_drain(ms__scale_writer_t *w, double deadline)
{
    return w == NULL || ms__writer_pool_drain(w->pool, deadline);
}

void ms__scale_writer_stop(ms__scale_writer_t *w)
{
    if (w != NULL)
        ms__writer_pool_stop(w->pool, 0); /* past the drain: what still waits is abandoned */
}

void ms__scale_writer_free(ms__scale_writer_t *w)
{
    if (w == NULL)
        return;
    ms__writer_pool_free(w->pool, 0);
    free(w);
}

bool ms__scale_writer_push(ms__scale_writer_t *w, ms__item_t *it)
{
    return ms__writer_pool_push(w->pool, it->key, it);
}

size_t ms__scale_writer_pending(ms__scale_writer_t *w)
{
    return w == NULL ? 0 : ms__writer_pool_pending(w->pool, true);
}
