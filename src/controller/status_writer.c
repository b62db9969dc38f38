/*
 * status_writer.c - status patches leave the sync path: a worker hands the
 * patch of an object's status to this queue and goes on; a few threads write
 * them, each checked against the lease right before it goes out.
 *
 * One patch per object is pending at most: a newer one replaces it (a status
 * patch is built against the cached status, so the newer one covers the older
 * one's changes). A patch that is not written (the queue is full, this
 * process no longer leads, the API server refuses it) marks its object to
 * report in full at its next sync, which builds the patch again. A burst of
 * first syncs (10,000 new objects) thus costs the decisions nothing; the
 * writes follow at the client's rate limit, each held as its JSON text (a
 * tenth of a cJSON tree's heap) meanwhile. The threads and the queue are a
 * writer pool (writer_pool.c), as the scale writer's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

typedef struct {
    char *ns, *name;
    char *status; /* owned: the status patch, minified JSON */
} pending_t;

struct ms__status_writer {
    ms__writer_pool_t *pool; /* "ns/name" -> pending_t*, one per object */
};

static void pending_free(void *val)
{
    pending_t *p = val;

    if (p == NULL)
        return;
    free(p->ns);
    free(p->name);
    free(p->status);
    free(p);
}

/* A patch not written: the object's next sync writes its status in full
 * (its fingerprint would otherwise say it is reported). */
static void report_again(ms_controller_t *c, const pending_t *p)
{
    char key[MS__KEY_MAX];

    snprintf(key, sizeof key, "%s/%s", p->ns, p->name);
    ms__objects_report_again(&c->objects, key);
}

static void write_one(ms_controller_t *c, pending_t *p)
{
    ms_kube_ref_t ref = {MS__MAS_API_VERSION, MS__MAS_KIND, p->ns, p->name};
    ms_kube_error_t kerr = {0};
    double t0;
    ms_err_t err;

    if (!ms__may_write(c, "status")) {
        report_again(c, p); /* if this process leads again; another leader builds its own */
        return;
    }
    t0 = ms_clock_monotonic();
    err = ms_kube_status_patch_text(c->clients.kube, &ref, p->status, &kerr);
    ms__kube_observe(c, "patch_status", t0, err);
    if (err != MS_OK && err != MS_ERR_NOTFOUND) { /* deleted meanwhile: nothing to report */
        MS_LOG_WARN("cannot write status", MS_S("object", p->name), MS_S("namespace", p->ns),
                    MS_S("error", kerr.message));
        report_again(c, p);
    }
}

static void write_pending(void *ctx, void *p)
{
    write_one(ctx, p);
    pending_free(p);
}

/* Already queued: the newer patch took the older one's turn (a status patch
 * is built against the cached status: the newer covers the older's changes). */
static void drop_pending(void *ctx, void *p)
{
    (void)ctx;
    pending_free(p);
}

/* Status yields to decisions: while a round's objects still wait for a
 * worker, or scale writes for a writer, a status writer waits too (at most
 * 2 s, then it writes anyway: writer_pool.c). A first round of 10,000
 * objects otherwise shared the machine and the API server with 10,000
 * status patches and took twice as long. */
static bool decisions_first(void *ctx)
{
    ms_controller_t *c = ctx;

    return ms_workqueue_len(c->queues.work) > 0 ||
           ms__scale_writer_pending(c->queues.scale_writer) > 0;
}

ms__status_writer_t *ms__status_writer_new(ms_controller_t *c, int threads, size_t capacity)
{
    /* Status yields to scale writes in the client's token bucket too
     * (background). A patch left at the free is only forgotten: the process
     * is going, the next leader builds its own. */
    static const ms__writer_pool_ops_t ops = {.write = write_pending,
                                              .replaced = drop_pending,
                                              .unwritten = drop_pending,
                                              .yield = decisions_first,
                                              .background = true,
                                              .refuse_without_threads = true};
    ms__status_writer_t *w = ms_xcalloc(1, sizeof *w);

    w->pool = ms__writer_pool_new(&ops, c, threads, capacity);
    return w;
}

bool ms__status_writer_drain(ms__status_writer_t *w, double deadline)
{
    return w == NULL || ms__writer_pool_drain(w->pool, deadline);
}

void ms__status_writer_free(ms__status_writer_t *w, double drain)
{
    if (w == NULL)
        return;
    ms__writer_pool_free(w->pool, drain);
    free(w);
}

bool ms__status_writer_push(ms__status_writer_t *w, const char *ns, const char *name, cJSON *status)
{
    char key[MS__KEY_MAX];
    pending_t *p;
    char *text = status != NULL ? cJSON_PrintUnformatted(status) : NULL;

    cJSON_Delete(status);
    if (text == NULL)
        return false;
    snprintf(key, sizeof key, "%s/%s", ns, name);
    p = ms_xcalloc(1, sizeof *p);
    p->ns = ms_xstrdup(ns);
    p->name = ms_xstrdup(name);
    p->status = text;
    if (!ms__writer_pool_push(w->pool, key, p)) { /* full, stopping, or no writers */
        pending_free(p);
        return false;
    }
    return true;
}

size_t ms__status_writer_pending(ms__status_writer_t *w)
{
    return ms__writer_pool_pending(w->pool, false);
}
