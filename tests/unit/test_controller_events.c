/*
 * test_controller_events.c - the event queue aggregates rather than drops
 * (issue 28, item 3): a newer Event of an object and reason folds into the
 * one still waiting and is sent as one whose count says how many; what is
 * still shed is counted per reason. The sender here records what it is
 * given and holds the first call until the test lets it go, so Events pile
 * up behind it as they do behind a busy API client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "meshscaler/clock.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool in_send, released;
    int n;
    char sent[8][160]; /* "name reason count message" */
} sink_t;

static ms_err_t sink_send(void *ctx, const ms_kube_object_ref_t *ref, const char *type,
                          const char *reason, const char *message, int count, double wall,
                          ms_kube_error_t *kerr)
{
    sink_t *s = ctx;

    (void)type;
    (void)wall;
    (void)kerr;
    pthread_mutex_lock(&s->lock);
    s->in_send = true;
    pthread_cond_broadcast(&s->cond);
    while (!s->released)
        pthread_cond_wait(&s->cond, &s->lock);
    if (s->n < 8)
        snprintf(s->sent[s->n++], sizeof s->sent[0], "%s %s %d %s", ref->name, reason, count,
                 message);
    pthread_mutex_unlock(&s->lock);
    return MS_OK;
}

static void push(ms__event_queue_t *q, const char *name, const char *reason, const char *message)
{
    ms_kube_object_ref_t ref = {"autoscaling.meshscaler.io/v1alpha1", "MeshAutoscaler", "shop",
                                name, "u"};

    ms__event_queue_push(q, &ref, "Normal", reason, message, 1.0);
}

typedef struct {
    unsigned long rescale_dropped, rescale_combined, failed_dropped, calls;
} counts_t;

static void take(void *ctx, const char *reason, unsigned long dropped, unsigned long combined)
{
    counts_t *c = ctx;

    c->calls++;
    if (strcmp(reason, "SuccessfulRescale") == 0) {
        c->rescale_dropped += dropped;
        c->rescale_combined += combined;
    } else if (strcmp(reason, "FailedRescale") == 0) {
        c->failed_dropped += dropped;
    }
}

static void test_fold_then_drop_counted(void **state)
{
    sink_t s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    ms__event_queue_t *q = ms__event_queue_new(sink_send, &s, 2, NULL, NULL);
    counts_t c = {0};

    (void)state;
    push(q, "api", "SuccessfulRescale", "New size: 3");
    /* The sender holds "New size: 3": what follows waits in the queue. */
    pthread_mutex_lock(&s.lock);
    while (!s.in_send)
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    push(q, "api", "SuccessfulRescale", "New size: 4");
    push(q, "api", "SuccessfulRescale", "New size: 5"); /* folds into "4": one key waiting */
    push(q, "api", "SuccessfulRescale", "New size: 5"); /* identical: nothing more */
    push(q, "web", "SuccessfulRescale", "New size: 2"); /* a second key: the queue (2) is full */
    push(q, "db", "SuccessfulRescale", "New size: 7");  /* a third key: dropped */
    push(q, "db", "FailedRescale", "conflict");         /* dropped, another reason */
    assert_int_equal(ms__event_queue_dropped(q), 2);

    ms__event_queue_take_counts(q, ms_clock_monotonic(), 15, take, &c);
    assert_int_equal(c.rescale_dropped, 1);
    assert_int_equal(c.rescale_combined, 1);
    assert_int_equal(c.failed_dropped, 1);
    /* Taken: the next call has nothing to say. */
    c = (counts_t){0};
    ms__event_queue_take_counts(q, ms_clock_monotonic(), 15, take, &c);
    assert_int_equal(c.calls, 0);

    pthread_mutex_lock(&s.lock);
    s.released = true;
    pthread_cond_broadcast(&s.cond);
    pthread_mutex_unlock(&s.lock);
    ms__event_queue_free(q, 5); /* sends what waits */
    assert_int_equal(s.n, 3);
    assert_string_equal(s.sent[0], "api SuccessfulRescale 1 New size: 3");
    /* One Event for the two that waited, the latest message, count 2. */
    assert_string_equal(s.sent[1], "api SuccessfulRescale 2 New size: 5");
    assert_string_equal(s.sent[2], "web SuccessfulRescale 1 New size: 2");
}

/* Dry-run: no sender, no thread; pushes are ignored, nothing counted. */
static void test_no_sender(void **state)
{
    ms__event_queue_t *q = ms__event_queue_new(NULL, NULL, 4, NULL, NULL);

    (void)state;
    push(q, "api", "SuccessfulRescale", "New size: 3");
    assert_int_equal(ms__event_queue_dropped(q), 0);
    ms__event_queue_free(q, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_then_drop_counted),
        cmocka_unit_test(test_no_sender),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
