/*
 * writer.c - status patches leave the sync path: a worker hands the patch of
 * an object's status to this queue and goes on; a few threads write them,
 * each checked against the lease right before it goes out.
 *
 * One patch per object is pending at most: a newer one replaces it (a status
 * patch is built against the cached status, so the newer one covers the older
 * one's changes). A patch that is not written (the queue is full, this
 * process no longer leads, the API server refuses it) marks its object to
 * report in full at its next sync, which builds the patch again. A burst of
 * first syncs (10,000 new objects) thus costs the decisions nothing; the
 * writes follow at the client's rate limit, each held as its JSON text (a
 * tenth of a cJSON tree's heap) meanwhile.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller_internal.h"
#include "meshscaler/clock.h"
#include "meshscaler/log.h"
#include "meshscaler/xalloc.h"

typedef struct {
    char *ns, *name;
    char *status; /* owned: the status patch, minified JSON */
} pending_t;

struct ms__status_writer {
    ms_controller_t *c;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    ms__latest_t pending;    /* "ns/name" -> pending_t*, one per object */
    size_t writing;          /* taken by a writer, not finished */
    pthread_cond_t done;     /* a writer finished a patch or left */
    bool stopping;
    double drain_deadline;
    pthread_t *threads;
    int nthreads;
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

/* drain: the writer's drain deadline once it is stopping, else 0. */
static void write_one(ms_controller_t *c, pending_t *p, double drain)
{
    ms_kube_ref_t ref = {MS__MAS_API_VERSION, MS__MAS_KIND, p->ns, p->name};
    ms_kube_error_t kerr = {0};
    cJSON *status;
    double t0;
    ms_err_t err;

    if (!ms__may_write(c, "status")) {
        report_again(c, p); /* if this process leads again; another leader builds its own */
        return;
    }
    /* A background request waits for a token while anything else takes
     * them: at shutdown it waits no longer than the drain. */
    ms_kube_deadline_cap(drain);
    if ((status = cJSON_Parse(p->status)) == NULL) { /* out of memory: it printed fine */
        report_again(c, p);
        return;
    }
    t0 = ms_clock_monotonic();
    err = ms_kube_status_patch(c->kube, &ref, status, NULL, &kerr);
    cJSON_Delete(status);
    ms_kube_deadline_set(0);
    ms__kube_observe(c, "patch_status", t0, err);
    if (err != MS_OK && err != MS_ERR_NOTFOUND) { /* deleted meanwhile: nothing to report */
        MS_LOG_WARN("cannot write status", MS_S("object", p->name), MS_S("namespace", p->ns),
                    MS_S("error", kerr.message));
        report_again(c, p);
    }
}

/* Status yields to decisions: while a round's objects still wait for a
 * worker, a writer waits too (at most YIELD_MAX seconds, then it writes
 * anyway). A first round of 10,000 objects otherwise shared the machine and
 * the API server with 10,000 status patches and took twice as long. */
#define YIELD_MAX 2.0
#define YIELD_STEP 0.02

static void yield_to_decisions(ms__status_writer_t *w)
{
    double until = ms_clock_monotonic() + YIELD_MAX;

    while (!w->stopping && ms_clock_monotonic() < until &&
           (ms_workqueue_len(w->c->queue) > 0 || ms__scale_writer_pending(w->c->scale_writer) > 0)) {
        pthread_mutex_unlock(&w->lock);
        ms_clock_sleep(YIELD_STEP);
        pthread_mutex_lock(&w->lock);
    }
}

static void *run(void *arg)
{
    ms__status_writer_t *w = arg;

    /* Status yields to scale writes in the client's token bucket too. */
    ms_kube_background_set(true);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        pending_t *p;
        double drain;

        while (w->pending.len == 0 && !w->stopping)
            pthread_cond_wait(&w->cond, &w->lock);
        yield_to_decisions(w);
        if (w->pending.len == 0 && !w->stopping)
            continue; /* another writer took it meanwhile */
        if (w->pending.len == 0 || (w->stopping && ms_clock_monotonic() > w->drain_deadline))
            break;
        p = ms__latest_pop(&w->pending);
        w->writing++;
        drain = w->stopping ? w->drain_deadline : 0;
        pthread_mutex_unlock(&w->lock);
        if (p != NULL)
            write_one(w->c, p, drain);
        pending_free(p);
        pthread_mutex_lock(&w->lock);
        w->writing--;
        pthread_cond_broadcast(&w->done);
    }
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

ms__status_writer_t *ms__status_writer_new(ms_controller_t *c, int threads, size_t capacity)
{
    ms__status_writer_t *w = ms_xcalloc(1, sizeof *w);

    w->c = c;
    ms__latest_init(&w->pending, capacity);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    ms_clock_cond_init(&w->done);
    w->threads = ms_xcalloc((size_t)(threads > 0 ? threads : 1), sizeof *w->threads);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&w->threads[w->nthreads], NULL, run, w) == 0)
            w->nthreads++;
    return w;
}

/* Under w->lock: stop taking patches after `deadline` (once). */
static void stop_locked(ms__status_writer_t *w, double deadline)
{
    if (!w->stopping) {
        w->stopping = true;
        w->drain_deadline = deadline;
    }
    pthread_cond_broadcast(&w->cond);
}

bool ms__status_writer_drain(ms__status_writer_t *w, double deadline)
{
    bool drained;

    if (w == NULL)
        return true;
    pthread_mutex_lock(&w->lock);
    stop_locked(w, deadline);
    while (w->pending.len + w->writing > 0 && w->nthreads > 0)
        if (!ms_clock_cond_wait_until(&w->done, &w->lock, deadline))
            break;
    drained = w->pending.len + w->writing == 0;
    pthread_mutex_unlock(&w->lock);
    return drained;
}

void ms__status_writer_free(ms__status_writer_t *w, double drain)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    stop_locked(w, ms_clock_monotonic() + drain);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    ms__latest_cleanup(&w->pending, pending_free);
    free(w->threads);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    pthread_cond_destroy(&w->done);
    free(w);
}

bool ms__status_writer_push(ms__status_writer_t *w, const char *ns, const char *name, cJSON *status)
{
    char key[MS__KEY_MAX];
    pending_t *p;
    void *old;
    ms__latest_put_t put;
    char *text = status != NULL ? cJSON_PrintUnformatted(status) : NULL;

    cJSON_Delete(status);
    if (text == NULL)
        return false;
    snprintf(key, sizeof key, "%s/%s", ns, name);
    pthread_mutex_lock(&w->lock);
    if (w->stopping || w->nthreads == 0) {
        pthread_mutex_unlock(&w->lock);
        free(text);
        return false;
    }
    p = ms_xcalloc(1, sizeof *p);
    p->ns = ms_xstrdup(ns);
    p->name = ms_xstrdup(name);
    p->status = text;
    /* Already queued: the newer patch takes the older one's turn. */
    put = ms__latest_put(&w->pending, key, p, &old);
    if (put == MS__LATEST_ADDED)
        pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pending_free(old);
    if (put == MS__LATEST_FULL) {
        pending_free(p);
        return false;
    }
    return true;
}

size_t ms__status_writer_pending(ms__status_writer_t *w)
{
    size_t n;

    pthread_mutex_lock(&w->lock);
    n = w->pending.len;
    pthread_mutex_unlock(&w->lock);
    return n;
}
