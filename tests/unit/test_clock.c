/*
 * test_clock.c - the monotonic waits: a wait until a passed deadline times
 * out at once, a wait until a near one times out no earlier than it, and a
 * signal ends a wait long before its deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>

#include "meshscaler/clock.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
} waiter_t;

static void waiter_init(waiter_t *w)
{
    pthread_mutex_init(&w->lock, NULL);
    ms_clock_cond_init(&w->cond);
    w->done = false;
}

static void waiter_cleanup(waiter_t *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
}

static void test_wait_until_times_out(void **state)
{
    waiter_t w;
    double t0;

    (void)state;
    waiter_init(&w);
    pthread_mutex_lock(&w.lock);
    t0 = ms_clock_monotonic();
    assert_false(ms_clock_cond_wait_until(&w.cond, &w.lock, t0 - 1));
    assert_true(ms_clock_monotonic() - t0 < 0.5);
    t0 = ms_clock_monotonic();
    while (ms_clock_cond_wait_until(&w.cond, &w.lock, t0 + 0.1))
        ; /* spurious wakes go round */
    assert_true(ms_clock_monotonic() - t0 >= 0.1);
    pthread_mutex_unlock(&w.lock);
    waiter_cleanup(&w);
}

static void *signal_soon(void *arg)
{
    waiter_t *w = arg;

    ms_clock_sleep(0.05);
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void test_signal_ends_the_wait(void **state)
{
    waiter_t w;
    pthread_t t;
    double t0 = ms_clock_monotonic();

    (void)state;
    waiter_init(&w);
    assert_int_equal(pthread_create(&t, NULL, signal_soon, &w), 0);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        assert_true(ms_clock_cond_wait_until(&w.cond, &w.lock, t0 + 60));
    pthread_mutex_unlock(&w.lock);
    assert_true(ms_clock_monotonic() - t0 < 30);
    pthread_join(t, NULL);
    waiter_cleanup(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_until_times_out),
        cmocka_unit_test(test_signal_ends_the_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
