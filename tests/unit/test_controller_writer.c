/*
 * test_controller_writer.c - status patches wait behind the decisions and
 * are coalesced per object (issue 28, item 2): while the work queue holds a
 * key, the writers write nothing; one patch per object waits, the newest;
 * once the queue is empty they drain. The controller here is a dry-run
 * shell (no client): a dry run writes nothing, so what the writers take
 * only leaves the queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "controller/controller_internal.h"
#include "meshscaler/clock.h"

static cJSON *patch(int v)
{
    cJSON *s = cJSON_CreateObject();

    cJSON_AddNumberToObject(s, "desiredReplicas", v);
    return s;
}

static void test_waits_behind_decisions_coalesced(void **state)
{
    ms_controller_t *c = calloc(1, sizeof *c);
    ms__status_writer_t *w;
    char *key;
    double until;

    (void)state;
    assert_non_null(c);
    c->cfg.dry_run = true;
    c->queue = ms_workqueue_new(NULL);
    ms__objects_init(&c->objects);
    ms_workqueue_add(c->queue, "shop/deciding"); /* a decision still waits for a worker */
    w = ms__status_writer_new(c, 2, 4);

    assert_true(ms__status_writer_push(w, "shop", "api", patch(3)));
    assert_true(ms__status_writer_push(w, "shop", "api", patch(4)));
    assert_true(ms__status_writer_push(w, "shop", "api", patch(5))); /* replaces 4, which replaced 3 */
    assert_true(ms__status_writer_push(w, "shop", "web", patch(2)));
    assert_int_equal(ms__status_writer_pending(w), 2);
    /* Behind the decision: nothing written for a while (the writers yield up to 2 s). */
    ms_clock_sleep(0.5);
    assert_int_equal(ms__status_writer_pending(w), 2);
    /* Four objects at most: a fifth and sixth distinct one, the last refused. */
    assert_true(ms__status_writer_push(w, "shop", "db", patch(1)));
    assert_true(ms__status_writer_push(w, "shop", "cache", patch(1)));
    assert_false(ms__status_writer_push(w, "shop", "queue", patch(1)));

    /* The decision is taken: the patches drain. */
    assert_true(ms_workqueue_try_get(c->queue, &key));
    ms_workqueue_done(c->queue, key);
    free(key);
    until = ms_clock_monotonic() + 3;
    while (ms__status_writer_pending(w) > 0 && ms_clock_monotonic() < until)
        ms_clock_sleep(0.01);
    assert_int_equal(ms__status_writer_pending(w), 0);

    ms__status_writer_free(w, 1);
    ms_workqueue_free(c->queue);
    ms__objects_cleanup(&c->objects);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waits_behind_decisions_coalesced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
