/*
 * test_workqueue.c - the controller's work queue: de-duplication, the
 * dirty/processing sets, deadlines on an injected clock, the per-key
 * backoff, shutdown and drain, and many threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshscaler/workqueue.h"

/* A clock the test moves by hand. */
typedef struct {
    _Atomic double t;
} fake_clock_t;

static double fake_now(void *ctx)
{
    return atomic_load(&((fake_clock_t *)ctx)->t);
}

static ms_workqueue_t *fake_queue(fake_clock_t *clk)
{
    ms_workqueue_options_t o = {0};

    atomic_store(&clk->t, 1000.0);
    o.clock = fake_now;
    o.clock_ctx = clk;
    return ms_workqueue_new(&o);
}

static void advance(ms_workqueue_t *q, fake_clock_t *clk, double dt)
{
    atomic_store(&clk->t, atomic_load(&clk->t) + dt);
    ms_workqueue_wake(q);
}

/* Take the next ready key, assert it is `want`, done() it. */
static void expect_key(ms_workqueue_t *q, const char *want)
{
    char *key = NULL;

    assert_true(ms_workqueue_try_get(q, &key));
    assert_string_equal(key, want);
    ms_workqueue_done(q, key);
    free(key);
}

static void expect_empty(ms_workqueue_t *q)
{
    char *key = (char *)"sentinel";

    assert_false(ms_workqueue_try_get(q, &key));
    assert_null(key);
}

static double real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_add_deduplicates(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);

    (void)state;
    ms_workqueue_add(q, "shop/api");
    ms_workqueue_add(q, "shop/api");
    ms_workqueue_add(q, "shop/api");
    ms_workqueue_add(q, "shop/web");
    assert_int_equal(ms_workqueue_len(q), 2);
    expect_key(q, "shop/api"); /* first in, first out */
    expect_key(q, "shop/web");
    expect_empty(q);
    assert_int_equal(ms_workqueue_len(q), 0);
    ms_workqueue_free(q);
}

/* A key that is queued but not being processed: done() leaves it queued once
 * (mutant: done() without the processing check queued it twice). */
static void test_done_on_a_queued_key_changes_nothing(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);

    (void)state;
    ms_workqueue_add(q, "a/x");
    ms_workqueue_done(q, "a/x");
    assert_int_equal(ms_workqueue_len(q), 1);
    assert_int_equal(ms_workqueue_processing(q), 0);
    expect_key(q, "a/x");
    expect_empty(q);
    ms_workqueue_free(q);
}

/* Thousands of keys: the key map grows and every key is still found. */
static void test_many_keys_survive_growth(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    char key[32];

    (void)state;
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "ns-%d/obj-%d", i % 97, i);
        ms_workqueue_add(q, key);
    }
    for (int i = 0; i < 5000; i++) { /* each known: a second add changes nothing */
        snprintf(key, sizeof key, "ns-%d/obj-%d", i % 97, i);
        ms_workqueue_add(q, key);
    }
    assert_int_equal(ms_workqueue_len(q), 5000);
    for (int i = 0; i < 5000; i++) {
        char *got = NULL;
        snprintf(key, sizeof key, "ns-%d/obj-%d", i % 97, i);
        assert_true(ms_workqueue_try_get(q, &got));
        assert_string_equal(got, key);
        ms_workqueue_done(q, got);
        free(got);
    }
    expect_empty(q);
    ms_workqueue_free(q);
}

/* The ready ring grows while it wraps around its end: the keys still come
 * out first in, first out (mutant: the unwrap after growth dropped). */
static void test_ring_grows_while_wrapped_in_order(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    char key[32];
    int next = 0;

    (void)state;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 7 + 9 * round; i++) {
            snprintf(key, sizeof key, "ns/k%d", next + (int)ms_workqueue_len(q));
            ms_workqueue_add(q, key);
        }
        for (int i = 0; i < 5 + 4 * round; i++) { /* advance the head */
            snprintf(key, sizeof key, "ns/k%d", next++);
            expect_key(q, key);
        }
    }
    while (ms_workqueue_len(q) > 0) {
        snprintf(key, sizeof key, "ns/k%d", next++);
        expect_key(q, key);
    }
    expect_empty(q);
    ms_workqueue_free(q);
}

static void test_add_while_processing_requeues_after_done(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    char *key = NULL;

    (void)state;
    ms_workqueue_add(q, "a/x");
    assert_true(ms_workqueue_try_get(q, &key));
    assert_int_equal(ms_workqueue_processing(q), 1);
    /* Added twice while processing: not handed to anyone else... */
    ms_workqueue_add(q, "a/x");
    ms_workqueue_add(q, "a/x");
    assert_int_equal(ms_workqueue_len(q), 0);
    expect_empty(q);
    /* ...and queued exactly once when the first worker is done. */
    ms_workqueue_done(q, key);
    free(key);
    assert_int_equal(ms_workqueue_processing(q), 0);
    assert_int_equal(ms_workqueue_len(q), 1);
    expect_key(q, "a/x");
    expect_empty(q);
    ms_workqueue_free(q);
}

static void test_done_without_add_forgets_key(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);

    (void)state;
    ms_workqueue_add(q, "a/x");
    expect_key(q, "a/x");
    expect_empty(q);
    ms_workqueue_done(q, "a/x");        /* twice: ignored */
    ms_workqueue_done(q, "never/seen"); /* unknown: ignored */
    assert_int_equal(ms_workqueue_processing(q), 0);
    ms_workqueue_free(q);
}

static void test_add_after_waits_for_its_deadline(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);

    (void)state;
    ms_workqueue_add_after(q, "a/x", 15);
    assert_int_equal(ms_workqueue_len(q), 0);
    assert_int_equal(ms_workqueue_delayed_len(q), 1);
    expect_empty(q);
    advance(q, &clk, 14.999);
    expect_empty(q);
    advance(q, &clk, 0.001);
    assert_int_equal(ms_workqueue_delayed_len(q), 0);
    expect_key(q, "a/x");
    expect_empty(q);
    /* Zero and negative delays are plain adds. */
    ms_workqueue_add_after(q, "a/y", 0);
    ms_workqueue_add_after(q, "a/z", -3);
    assert_int_equal(ms_workqueue_len(q), 2);
    expect_key(q, "a/y");
    expect_key(q, "a/z");
    ms_workqueue_free(q);
}

static void test_add_after_keeps_the_earlier_deadline(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);

    (void)state;
    ms_workqueue_add_after(q, "a/x", 10);
    ms_workqueue_add_after(q, "a/x", 20); /* later: ignored */
    ms_workqueue_add_after(q, "a/y", 30);
    ms_workqueue_add_after(q, "a/y", 5); /* earlier: wins */
    assert_int_equal(ms_workqueue_delayed_len(q), 2);
    advance(q, &clk, 5);
    expect_key(q, "a/y");
    expect_empty(q);
    advance(q, &clk, 5);
    expect_key(q, "a/x");
    advance(q, &clk, 100); /* neither comes back */
    expect_empty(q);
    assert_int_equal(ms_workqueue_delayed_len(q), 0);
    ms_workqueue_free(q);
}

static void test_deadlines_come_out_in_order(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);
    char key[32];
    unsigned seed = 42;

    (void)state;
    /* 500 keys with shuffled deadlines 1..500: they become ready in order. */
    int order[500];
    for (int i = 0; i < 500; i++)
        order[i] = i;
    for (int i = 499; i > 0; i--) {
        int j = rand_r(&seed) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < 500; i++) {
        snprintf(key, sizeof key, "ns/k%d", order[i]);
        ms_workqueue_add_after(q, key, order[i] + 1);
    }
    for (int i = 0; i < 500; i++) {
        advance(q, &clk, 1);
        snprintf(key, sizeof key, "ns/k%d", i);
        expect_key(q, key);
        expect_empty(q);
    }
    ms_workqueue_free(q);
}

static void test_add_while_waiting_is_immediate(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);

    (void)state;
    /* An informer event while the sync timer runs: synced at once, and the
     * timer still fires (client-go's delaying queue does the same). */
    ms_workqueue_add_after(q, "a/x", 15);
    ms_workqueue_add(q, "a/x");
    expect_key(q, "a/x");
    expect_empty(q);
    advance(q, &clk, 15);
    expect_key(q, "a/x");
    ms_workqueue_free(q);
}

static void test_deadline_while_processing_requeues_after_done(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);
    char *key = NULL;

    (void)state;
    ms_workqueue_add(q, "a/x");
    assert_true(ms_workqueue_try_get(q, &key));
    ms_workqueue_add_after(q, "a/x", 1);
    advance(q, &clk, 2);
    expect_empty(q); /* not while a worker has it */
    ms_workqueue_done(q, key);
    free(key);
    expect_key(q, "a/x");
    ms_workqueue_free(q);
}

static void test_rate_limited_backoff(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);
    double want = 0.005;

    (void)state;
    /* 5 ms, 10 ms, 20 ms, ... doubling per failure. */
    for (unsigned i = 0; i < 10; i++) {
        assert_int_equal(ms_workqueue_num_requeues(q, "a/x"), i);
        ms_workqueue_add_rate_limited(q, "a/x");
        advance(q, &clk, want * 0.999);
        expect_empty(q);
        advance(q, &clk, want * 0.002);
        expect_key(q, "a/x");
        want *= 2;
    }
    assert_int_equal(ms_workqueue_num_requeues(q, "a/x"), 10);
    ms_workqueue_forget(q, "a/x");
    assert_int_equal(ms_workqueue_num_requeues(q, "a/x"), 0);
    ms_workqueue_add_rate_limited(q, "a/x");
    advance(q, &clk, 0.005);
    expect_key(q, "a/x");
    ms_workqueue_forget(q, "a/x");
    ms_workqueue_forget(q, "never/seen");
    ms_workqueue_free(q);
}

static void test_rate_limited_caps_at_max(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);

    (void)state;
    /* 5 ms * 2^18 is 1310 s, past the 1000 s cap; thousands of failures
     * must neither overflow nor exceed it. */
    for (int i = 0; i < 3000; i++) {
        ms_workqueue_add_rate_limited(q, "a/x");
        advance(q, &clk, 1000);
        expect_key(q, "a/x");
    }
    ms_workqueue_add_rate_limited(q, "a/x");
    advance(q, &clk, 999.9);
    expect_empty(q);
    advance(q, &clk, 0.1);
    expect_key(q, "a/x");
    ms_workqueue_free(q);
}

static void test_rate_limit_options(void **state)
{
    fake_clock_t clk;
    ms_workqueue_options_t o = {
        .base_delay = 1, .max_delay = 4, .clock = fake_now, .clock_ctx = &clk};
    ms_workqueue_t *q;
    const double want[] = {1, 2, 4, 4, 4};

    (void)state;
    atomic_store(&clk.t, 0.0);
    q = ms_workqueue_new(&o);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ms_workqueue_add_rate_limited(q, "a/x");
        advance(q, &clk, want[i] - 0.01);
        expect_empty(q);
        advance(q, &clk, 0.01);
        expect_key(q, "a/x");
    }
    /* Keys back off independently. */
    ms_workqueue_add_rate_limited(q, "a/y");
    advance(q, &clk, 1);
    expect_key(q, "a/y");
    ms_workqueue_free(q);
}

/* ---- blocking, shutdown and drain ---- */

typedef struct {
    ms_workqueue_t *q;
    bool got;
    char *key;
    double returned_at;
} getter_t;

static void *getter_main(void *arg)
{
    getter_t *g = arg;

    g->got = ms_workqueue_get(g->q, &g->key);
    g->returned_at = real_now();
    return NULL;
}

static void test_get_blocks_until_add(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    getter_t g = {.q = q};
    pthread_t t;

    (void)state;
    pthread_create(&t, NULL, getter_main, &g);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    ms_workqueue_add(q, "a/x");
    pthread_join(t, NULL);
    assert_true(g.got);
    assert_string_equal(g.key, "a/x");
    ms_workqueue_done(q, g.key);
    free(g.key);
    ms_workqueue_free(q);
}

static void test_get_sleeps_until_deadline_on_real_clock(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    getter_t g = {.q = q};
    pthread_t t;
    double start = real_now();

    (void)state;
    pthread_create(&t, NULL, getter_main, &g);
    ms_workqueue_add_after(q, "a/x", 0.05);
    pthread_join(t, NULL);
    assert_true(g.got);
    assert_true(g.returned_at - start >= 0.05);
    assert_true(g.returned_at - start < 5);
    ms_workqueue_done(q, g.key);
    free(g.key);
    ms_workqueue_free(q);
}

static void test_get_wakes_when_injected_clock_advances(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);
    getter_t g = {.q = q};
    pthread_t t;

    (void)state;
    ms_workqueue_add_after(q, "a/x", 3600); /* an hour of fake time */
    pthread_create(&t, NULL, getter_main, &g);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    advance(q, &clk, 3600);
    pthread_join(t, NULL);
    assert_true(g.got);
    assert_string_equal(g.key, "a/x");
    ms_workqueue_done(q, g.key);
    free(g.key);
    ms_workqueue_free(q);
}

static void test_shutdown_wakes_every_getter(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    getter_t g[4];
    pthread_t t[4];

    (void)state;
    ms_workqueue_add_after(q, "a/late", 3600);
    for (int i = 0; i < 4; i++) {
        g[i] = (getter_t){.q = q};
        pthread_create(&t[i], NULL, getter_main, &g[i]);
    }
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    assert_false(ms_workqueue_shutting_down(q));
    ms_workqueue_shutdown(q);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_false(g[i].got);
        assert_null(g[i].key);
    }
    assert_true(ms_workqueue_shutting_down(q));
    /* Adds are ignored from now on; get keeps answering false. */
    ms_workqueue_add(q, "a/x");
    ms_workqueue_add_after(q, "a/y", 1);
    ms_workqueue_add_rate_limited(q, "a/z");
    assert_int_equal(ms_workqueue_len(q), 0);
    assert_int_equal(ms_workqueue_delayed_len(q), 0);
    expect_empty(q);
    ms_workqueue_shutdown(q); /* idempotent */
    ms_workqueue_free(q);
}

static void test_shutdown_drops_queued_keys(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    char *key = NULL;

    (void)state;
    ms_workqueue_add(q, "a/x");
    ms_workqueue_add(q, "a/y");
    assert_true(ms_workqueue_try_get(q, &key));
    ms_workqueue_add(q, key); /* dirty while processing */
    ms_workqueue_shutdown(q);
    assert_int_equal(ms_workqueue_len(q), 0);
    expect_empty(q);
    ms_workqueue_done(q, key); /* in-flight work may still finish */
    free(key);
    assert_int_equal(ms_workqueue_processing(q), 0);
    expect_empty(q);
    ms_workqueue_free(q);
}

typedef struct {
    ms_workqueue_t *q;
    char *key;
    double hold;
} holder_t;

static void *holder_main(void *arg)
{
    holder_t *h = arg;
    double secs = h->hold;

    nanosleep(&(struct timespec){(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)}, NULL);
    ms_workqueue_done(h->q, h->key);
    return NULL;
}

static void test_shutdown_with_drain(void **state)
{
    ms_workqueue_t *q = ms_workqueue_new(NULL);
    holder_t h = {.q = q, .hold = 0.1};
    pthread_t t;

    (void)state;
    /* Nothing in flight: drained at once. */
    ms_workqueue_t *idle = ms_workqueue_new(NULL);
    assert_true(ms_workqueue_shutdown_with_drain(idle, 0));
    ms_workqueue_free(idle);

    ms_workqueue_add(q, "a/x");
    assert_true(ms_workqueue_try_get(q, &h.key));
    /* Too short a deadline: not drained, and get already refuses work. */
    assert_false(ms_workqueue_shutdown_with_drain(q, 0.01));
    expect_empty(q);
    /* A worker finishing within the deadline: drained. */
    pthread_create(&t, NULL, holder_main, &h);
    assert_true(ms_workqueue_shutdown_with_drain(q, 10));
    pthread_join(t, NULL);
    free(h.key);
    ms_workqueue_free(q);
}

static void test_free_with_keys_in_every_state(void **state)
{
    fake_clock_t clk;
    ms_workqueue_t *q = fake_queue(&clk);
    char *key = NULL;
    char name[32];

    (void)state;
    /* Enough keys to grow the table several times; valgrind and ASan check
     * that freeing a busy queue leaks nothing. */
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "ns/k%d", i);
        if (i % 3 == 0)
            ms_workqueue_add(q, name);
        else if (i % 3 == 1)
            ms_workqueue_add_after(q, name, i);
        else
            ms_workqueue_add_rate_limited(q, name);
    }
    assert_int_equal(ms_workqueue_len(q), 667);
    assert_true(ms_workqueue_try_get(q, &key));
    free(key);
    ms_workqueue_free(q);
    ms_workqueue_free(NULL);
}

/* ---- many threads ---- */

#define NKEYS 40
#define NPRODUCERS 4
#define NWORKERS 6
#define ADDS_PER_PRODUCER 20000

typedef struct {
    ms_workqueue_t *q;
    atomic_int in_flight[NKEYS];
    atomic_long version[NKEYS];   /* bumped before every add */
    atomic_long processed[NKEYS]; /* the version the latest processing saw */
    atomic_int violations;
    atomic_long gets;
    unsigned seed;
} stress_t;

static int key_index(const char *key)
{
    return (int)strtol(key + 3, NULL, 10); /* "ns/<n>" written by this test */
}

static void *producer_main(void *arg)
{
    stress_t *s = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self() ^ s->seed;
    char key[16];

    for (int i = 0; i < ADDS_PER_PRODUCER; i++) {
        int k = rand_r(&seed) % NKEYS;
        snprintf(key, sizeof key, "ns/%d", k);
        atomic_fetch_add(&s->version[k], 1);
        if (i % 7 == 0)
            ms_workqueue_add_rate_limited(s->q, key);
        else
            ms_workqueue_add(s->q, key);
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    stress_t *s = arg;
    char *key;

    while (ms_workqueue_get(s->q, &key)) {
        int k = key_index(key);
        long seen;

        if (atomic_fetch_add(&s->in_flight[k], 1) != 0)
            atomic_fetch_add(&s->violations, 1);
        seen = atomic_load(&s->version[k]);
        if ((atomic_fetch_add(&s->gets, 1) & 15) == 0)
            sched_yield(); /* let others try to grab the same key */
        if (seen > atomic_load(&s->processed[k]))
            atomic_store(&s->processed[k], seen);
        atomic_fetch_sub(&s->in_flight[k], 1);
        if ((seen & 31) == 0)
            ms_workqueue_forget(s->q, key);
        ms_workqueue_done(s->q, key);
        free(key);
    }
    return NULL;
}

static void test_threads_never_share_a_key_and_lose_no_add(void **state)
{
    static stress_t s; /* large; zeroed */
    pthread_t prod[NPRODUCERS], work[NWORKERS];
    ms_workqueue_options_t o = {.base_delay = 0.0001, .max_delay = 0.002};

    (void)state;
    memset(&s, 0, sizeof s);
    s.seed = 7;
    s.q = ms_workqueue_new(&o);
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&work[i], NULL, worker_main, &s);
    for (int i = 0; i < NPRODUCERS; i++)
        pthread_create(&prod[i], NULL, producer_main, &s);
    for (int i = 0; i < NPRODUCERS; i++)
        pthread_join(prod[i], NULL);
    /* Wait until everything added was processed (delayed keys included). */
    for (int spins = 0; spins < 20000; spins++) {
        if (ms_workqueue_len(s.q) == 0 && ms_workqueue_delayed_len(s.q) == 0 &&
            ms_workqueue_processing(s.q) == 0)
            break;
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    assert_true(ms_workqueue_shutdown_with_drain(s.q, 10));
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(work[i], NULL);

    assert_int_equal(atomic_load(&s.violations), 0);
    /* Every add was followed by a processing that saw it. */
    for (int k = 0; k < NKEYS; k++)
        assert_int_equal(atomic_load(&s.processed[k]), atomic_load(&s.version[k]));
    /* De-duplication did happen (far fewer syncs than adds). */
    assert_true(atomic_load(&s.gets) <= (long)NPRODUCERS * ADDS_PER_PRODUCER);
    ms_workqueue_free(s.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_deduplicates),
        cmocka_unit_test(test_done_on_a_queued_key_changes_nothing),
        cmocka_unit_test(test_many_keys_survive_growth),
        cmocka_unit_test(test_add_while_processing_requeues_after_done),
        cmocka_unit_test(test_done_without_add_forgets_key),
        cmocka_unit_test(test_add_after_waits_for_its_deadline),
        cmocka_unit_test(test_add_after_keeps_the_earlier_deadline),
        cmocka_unit_test(test_deadlines_come_out_in_order),
        cmocka_unit_test(test_ring_grows_while_wrapped_in_order),
        cmocka_unit_test(test_add_while_waiting_is_immediate),
        cmocka_unit_test(test_deadline_while_processing_requeues_after_done),
        cmocka_unit_test(test_rate_limited_backoff),
        cmocka_unit_test(test_rate_limited_caps_at_max),
        cmocka_unit_test(test_rate_limit_options),
        cmocka_unit_test(test_get_blocks_until_add),
        cmocka_unit_test(test_get_sleeps_until_deadline_on_real_clock),
        cmocka_unit_test(test_get_wakes_when_injected_clock_advances),
        cmocka_unit_test(test_shutdown_wakes_every_getter),
        cmocka_unit_test(test_shutdown_drops_queued_keys),
        cmocka_unit_test(test_shutdown_with_drain),
        cmocka_unit_test(test_free_with_keys_in_every_state),
        cmocka_unit_test(test_threads_never_share_a_key_and_lose_no_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
