/*
 * test_controller_budgets.c - the controller's registry of shared budgets
 * (budgets.c): who shares a budget with whom, at which period, what goes
 * when an object leaves; and how one round's entries are grouped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "controller/controller_internal.h"

/* s (ms_spec_init'ed) with downstream entries naming these budgets ("" for
 * none, NULL for no entry). */
static void spec_with(ms_spec_t *s, int32_t period, const char *a, const char *b)
{
    const char *names[2] = {a, b};

    s->ndownstreams = 0;
    s->sync_period_seconds = period;
    for (size_t i = 0; i < 2; i++) {
        if (names[i] == NULL)
            continue;
        snprintf(s->downstreams[s->ndownstreams].name, sizeof s->downstreams[0].name, "d%zu", i);
        snprintf(s->downstreams[s->ndownstreams++].budget, sizeof s->downstreams[0].budget, "%s",
                 names[i]);
    }
}

typedef struct {
    char seen[8][64];
    size_t n;
} calls_t;

static void record_peer(void *ctx, const char *peer)
{
    calls_t *c = ctx;
    snprintf(c->seen[c->n++ % 8], sizeof c->seen[0], "%s", peer);
}

static void record_gone(void *ctx, const char *key, const char *budget, bool last)
{
    calls_t *c = ctx;
    snprintf(c->seen[c->n++ % 8], sizeof c->seen[0], "%s %s%s", key, budget, last ? " last" : "");
}

static bool seen(const calls_t *c, const char *what)
{
    for (size_t i = 0; i < c->n && i < 8; i++)
        if (strcmp(c->seen[i], what) == 0)
            return true;
    return false;
}

static void test_peers_across_namespaces(void **state)
{
    ms__budgets_t b;
    ms_spec_t s;
    calls_t c = {0};

    (void)state;
    ms_spec_init(&s);
    ms__budgets_init(&b);
    assert_false(ms__budgets_any(&b));
    spec_with(&s, 0, "edge", NULL);
    ms__budgets_set(&b, "a/one", &s, NULL, NULL);
    ms__budgets_set(&b, "b/two", &s, NULL, NULL);
    spec_with(&s, 0, "", NULL); /* a downstream entry without a budget */
    ms__budgets_set(&b, "a/lone", &s, NULL, NULL);
    assert_true(ms__budgets_any(&b));
    assert_int_equal(ms__budgets_each_peer(&b, "a/one", record_peer, &c), 1);
    assert_true(seen(&c, "b/two"));
    assert_int_equal(ms__budgets_each_peer(&b, "b/two", NULL, NULL), 1);
    assert_int_equal(ms__budgets_each_peer(&b, "a/lone", NULL, NULL), 0);
    assert_int_equal(ms__budgets_each_peer(&b, "x/unknown", NULL, NULL), 0);
    assert_true(ms__budgets_is_member(&b, "b/two", "edge"));
    assert_false(ms__budgets_is_member(&b, "b/two", "db"));
    assert_false(ms__budgets_is_member(&b, "a/lone", "edge"));
    /* one entry naming a budget twice counts once */
    spec_with(&s, 0, "edge", "edge");
    ms__budgets_set(&b, "a/one", &s, NULL, NULL);
    assert_int_equal(ms__budgets_each_peer(&b, "b/two", NULL, NULL), 1);
    ms__budgets_cleanup(&b);
    ms_spec_cleanup(&s);
}

static void test_shortest_period_among_members(void **state)
{
    ms__budgets_t b;
    ms_spec_t s;

    (void)state;
    ms_spec_init(&s);
    ms__budgets_init(&b);
    spec_with(&s, 30, "edge", NULL);
    ms__budgets_set(&b, "a/slow", &s, NULL, NULL);
    spec_with(&s, 0, "edge", "db"); /* the controller's period (15) */
    ms__budgets_set(&b, "b/default", &s, NULL, NULL);
    spec_with(&s, 5, "db", NULL);
    ms__budgets_set(&b, "c/fast", &s, NULL, NULL);
    /* a/slow shares edge with b/default (15), not db with c/fast (5) */
    assert_true(ms__budgets_period(&b, "a/slow", 30, 15) == 15);
    assert_true(ms__budgets_period(&b, "b/default", 15, 15) == 5);
    assert_true(ms__budgets_period(&b, "c/fast", 5, 15) == 5);
    assert_true(ms__budgets_period(&b, "x/none", 60, 15) == 60);
    /* c/fast leaves db: b/default is back at its own period */
    spec_with(&s, 5, NULL, NULL);
    ms__budgets_set(&b, "c/fast", &s, NULL, NULL);
    assert_true(ms__budgets_period(&b, "b/default", 15, 15) == 15);
    ms__budgets_cleanup(&b);
    ms_spec_cleanup(&s);
}

static void test_leaving_says_what_went(void **state)
{
    ms__budgets_t b;
    ms_spec_t s;
    calls_t c = {0};

    (void)state;
    ms_spec_init(&s);
    ms__budgets_init(&b);
    spec_with(&s, 0, "edge", "db");
    ms__budgets_set(&b, "a/one", &s, record_gone, &c);
    spec_with(&s, 0, "edge", NULL);
    ms__budgets_set(&b, "b/two", &s, record_gone, &c);
    assert_int_equal(c.n, 0);
    /* a/one drops db (its only member) and keeps edge */
    ms__budgets_set(&b, "a/one", &s, record_gone, &c);
    assert_int_equal(c.n, 1);
    assert_true(seen(&c, "a/one db last"));
    /* b/two is deleted: edge keeps a/one */
    ms__budgets_set(&b, "b/two", NULL, record_gone, &c);
    assert_int_equal(c.n, 2);
    assert_true(seen(&c, "b/two edge"));
    assert_int_equal(ms__budgets_each_peer(&b, "a/one", NULL, NULL), 0);
    /* a/one is deleted: edge is gone */
    ms__budgets_set(&b, "a/one", NULL, record_gone, &c);
    assert_true(seen(&c, "a/one edge last"));
    assert_false(ms__budgets_any(&b));
    /* forgetting an unknown key says nothing */
    ms__budgets_set(&b, "a/one", NULL, record_gone, &c);
    assert_int_equal(c.n, 3);
    ms__budgets_cleanup(&b);
    ms_spec_cleanup(&s);
}

static void test_round_groups(void **state)
{
    ms_spec_t s[6];
    const ms_spec_t *specs[7];
    size_t next[7];

    (void)state;
    for (size_t i = 0; i < 6; i++)
        ms_spec_init(&s[i]);
    spec_with(&s[0], 0, "edge", NULL);
    spec_with(&s[1], 0, NULL, NULL); /* no downstream */
    spec_with(&s[2], 0, "db", NULL);
    spec_with(&s[3], 0, "edge", NULL);
    spec_with(&s[4], 0, "other", "db"); /* ties other to db */
    spec_with(&s[5], 0, "other", NULL);
    for (size_t i = 0; i < 6; i++)
        specs[i] = &s[i];
    specs[6] = NULL; /* not observed */
    ms__budget_groups(specs, 7, next);
    /* edge: 0 -> 3 -> 0 */
    assert_int_equal(next[0], 3);
    assert_int_equal(next[3], 0);
    /* alone */
    assert_int_equal(next[1], 1);
    assert_int_equal(next[6], 6);
    /* db and other: 2 -> 4 -> 5 -> 2 */
    assert_int_equal(next[2], 4);
    assert_int_equal(next[4], 5);
    assert_int_equal(next[5], 2);
    assert_true(ms__spec_names_budget(&s[0]));
    assert_false(ms__spec_names_budget(&s[1]));
    assert_false(ms__spec_names_budget(NULL));
    ms__budget_groups(specs, 0, next); /* nothing to group */
    for (size_t i = 0; i < 6; i++)
        ms_spec_cleanup(&s[i]);
}

static void test_who_takes_a_share(void **state)
{
    ms_pause_t none = {0}, paused = {0}, held = {0}, no_out = {0}, no_in = {0};

    (void)state;
    paused.paused = true;
    held.has_replicas = true;
    held.replicas = 3;
    no_out.no_scale_out = true;
    no_in.no_scale_in = true;
    assert_true(ms__budget_takes_share(false, false, &none, 2, 6));
    assert_true(ms__budget_takes_share(false, false, &none, 2, 2)); /* a hold: its reservation */
    assert_false(ms__budget_takes_share(true, false, &none, 2, 6)); /* spec.dryRun */
    assert_false(ms__budget_takes_share(false, true, &none, 2, 6)); /* a conflict */
    assert_false(ms__budget_takes_share(false, false, &paused, 2, 6));
    assert_false(ms__budget_takes_share(false, false, &held, 2, 6));
    assert_false(ms__budget_takes_share(false, false, &no_out, 2, 6)); /* scale-out cancelled */
    assert_true(ms__budget_takes_share(false, false, &no_out, 6, 2));  /* a scale-in goes on */
    assert_true(ms__budget_takes_share(false, false, &no_in, 6, 2));   /* cancelled: asks nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peers_across_namespaces),
        cmocka_unit_test(test_shortest_period_among_members),
        cmocka_unit_test(test_leaving_says_what_went),
        cmocka_unit_test(test_round_groups),
        cmocka_unit_test(test_who_takes_a_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
