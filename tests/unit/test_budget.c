/*
 * test_budget.c - §2b of docs/decision-rules.md (ms_engine_share_budgets)
 * on plain decisions: the room, the order of the hand-out, reservations,
 * and what a budget never touches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "meshscaler/engine.h"

#define MAX_MEMBERS 8

/* A round of up to MAX_MEMBERS objects, each with its spec and decision. */
typedef struct {
    size_t n;
    char keys[MAX_MEMBERS][32];
    ms_spec_t specs[MAX_MEMBERS];
    ms_decision_t decisions[MAX_MEMBERS];
    ms_round_member_t members[MAX_MEMBERS];
} round_t;

/* Object key after steps 1-7: current -> desired, starting replicas. */
static size_t add(round_t *r, const char *key, int32_t current, int32_t desired, int32_t starting)
{
    size_t i = r->n++;

    snprintf(r->keys[i], sizeof r->keys[i], "%s", key);
    ms_spec_init(&r->specs[i]);
    memset(&r->decisions[i], 0, sizeof r->decisions[i]);
    r->decisions[i].current_replicas = current;
    r->decisions[i].desired_replicas = desired;
    r->decisions[i].starting_replicas = starting;
    r->decisions[i].reason = MS_REASON_DesiredWithinRange;
    r->decisions[i].scaled = desired != current;
    r->members[i] = (ms_round_member_t){r->keys[i], &r->specs[i], &r->decisions[i]};
    return i;
}

/* A downstream entry of object i naming budget (or "" for none), with
 * step 7's observed room in flows (observed false when room is NAN). */
static void entry(round_t *r, size_t i, const char *budget, double per_replica, double room,
                  bool observed)
{
    ms_spec_t *s = &r->specs[i];
    ms_decision_t *d = &r->decisions[i];
    size_t k = s->ndownstreams++;

    snprintf(s->downstreams[k].name, sizeof s->downstreams[k].name, "d%zu", k);
    snprintf(s->downstreams[k].budget, sizeof s->downstreams[k].budget, "%s", budget);
    s->downstreams[k].per_replica = per_replica;
    s->downstreams[k].max_utilization = 0.7;
    d->ndownstreams = s->ndownstreams;
    d->downstreams[k].observed = observed;
    d->downstreams[k].room = room;
}

static void cleanup(round_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        ms_spec_cleanup(&r->specs[i]);
}

static int32_t desired(const round_t *r, size_t i)
{
    return r->decisions[i].desired_replicas;
}

/* Asks of a billion replicas each in a room of two billion flows: the
 * hand-out stops at its million replicas (budget.c), split as the rule
 * splits them, instead of running for most of a minute. */
static void a_huge_hand_out_stops_at_its_bound(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "a/x", 1000000000, 2000000000, 0);
    add(&r, "b/y", 1000000000, 2000000000, 0);
    entry(&r, 0, "edge", 1, 1.9e9, true);
    entry(&r, 1, "edge", 1, 1.9e9, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(r.decisions[0].budgets[0].grant, 500000);
    assert_int_equal(r.decisions[1].budgets[0].grant, 500000);
    assert_int_equal(desired(&r, 0), 1000500000);
    assert_int_equal(r.decisions[0].reason, MS_REASON_DownstreamLimit);
    cleanup(&r);
}

static void room_for_every_ask_changes_nothing(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 4, 0);
    add(&r, "shop/web", 2, 3, 0);
    entry(&r, 0, "edge", 25, 100, true);
    entry(&r, 1, "edge", 25, 100, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK); /* 75 <= 100 */
    assert_int_equal(desired(&r, 0), 4);
    assert_int_equal(desired(&r, 1), 3);
    assert_int_equal(r.decisions[0].reason, MS_REASON_DesiredWithinRange);
    assert_int_equal(r.decisions[0].nbudgets, 1);
    assert_false(r.decisions[0].budgets[0].bound);
    assert_int_equal(r.decisions[0].budgets[0].ask, 2);
    assert_int_equal(r.decisions[0].budgets[0].grant, 2);
    assert_int_equal(r.decisions[0].budgets[0].members, 2);
    assert_true(r.decisions[0].budgets[0].room == 100);
    cleanup(&r);
}

/* Two namespaces, one with two objects: each namespace gets half the room,
 * whatever order the round lists them in. */
static void namespaces_first_in_any_order(void **state)
{
    static const char *const orders[2][3] = {{"a/one", "a/two", "b/only"},
                                             {"b/only", "a/two", "a/one"}};
    (void)state;

    for (size_t o = 0; o < 2; o++) {
        round_t r = {0};

        for (size_t i = 0; i < 3; i++) {
            add(&r, orders[o][i], 2, 6, 0);
            entry(&r, i, "edge", 10, 60, true);
        }
        assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
        for (size_t i = 0; i < 3; i++) {
            int32_t want = strcmp(r.keys[i], "b/only") == 0  ? 5
                           : strcmp(r.keys[i], "a/one") == 0 ? 4
                                                             : 3;
            assert_int_equal(desired(&r, i), want);
            assert_int_equal(r.decisions[i].reason, MS_REASON_DownstreamLimit);
            assert_true(r.decisions[i].budgets[0].bound);
        }
        cleanup(&r);
    }
}

/* Max-min by flows: a cheap small ask is served whole before the
 * expensive one takes the rest, and a replica that no longer fits stops
 * only its own object. */
static void small_ask_served_whole(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 4, 0);  /* 2 x 40 */
    add(&r, "shop/cart", 4, 6, 0); /* 2 x 10 */
    entry(&r, 0, "edge", 40, 80, true);
    entry(&r, 1, "edge", 10, 80, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(desired(&r, 0), 3);
    assert_int_equal(desired(&r, 1), 6);
    assert_int_equal(r.decisions[1].reason, MS_REASON_DesiredWithinRange);
    cleanup(&r);
}

/* Every member's starting replicas are reserved, holding ones' too. */
static void starting_replicas_are_reserved(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 4, 4, 2); /* holds, 2 starting: 50 flows */
    add(&r, "shop/web", 2, 5, 0);
    entry(&r, 0, "edge", 25, 90, true);
    entry(&r, 1, "edge", 25, 90, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_true(r.decisions[1].budgets[0].room == 40);
    assert_int_equal(desired(&r, 1), 3); /* 40 flows: one replica of 25 */
    assert_int_equal(desired(&r, 0), 4);
    assert_int_equal(r.decisions[0].reason, MS_REASON_DesiredWithinRange);
    cleanup(&r);
}

/* Two entries of one object in one budget count once: the larger
 * perReplica, the smaller room. */
static void two_entries_count_once(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 6, 1);
    entry(&r, 0, "edge", 10, 200, true);
    entry(&r, 0, "edge", 30, 100, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(r.decisions[0].nbudgets, 1);
    assert_int_equal(r.decisions[0].budgets[0].downstream, 1);
    assert_true(r.decisions[0].budgets[0].room == 70); /* 100 - 30 x 1 */
    assert_int_equal(desired(&r, 0), 4);               /* floor(70 / 30) */
    cleanup(&r);
}

/* A scale-down, a hold, an unobserved entry and an entry without a
 * budget are never changed and never take part. */
static void budgets_touch_only_growth(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "a/down", 5, 3, 0);
    add(&r, "a/hidden", 2, 6, 0);
    add(&r, "a/alone", 2, 6, 0);
    entry(&r, 0, "edge", 10, 0, true);
    entry(&r, 1, "edge", 10, 0, false);
    entry(&r, 2, "", 10, 0, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(desired(&r, 0), 3);
    assert_int_equal(r.decisions[0].nbudgets, 1);
    assert_int_equal(r.decisions[0].budgets[0].ask, 0);
    assert_int_equal(desired(&r, 1), 6);
    assert_int_equal(r.decisions[1].nbudgets, 0);
    assert_int_equal(desired(&r, 2), 6);
    assert_int_equal(r.decisions[2].nbudgets, 0);
    cleanup(&r);
}

/* Budgets run in ascending name; the second sees the first's grant. */
static void later_budget_sees_lowered_count(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 8, 0);
    add(&r, "shop/web", 2, 8, 0);
    entry(&r, 0, "zdb", 10, 1000, true);
    entry(&r, 0, "edge", 10, 40, true);
    entry(&r, 1, "edge", 10, 40, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(desired(&r, 0), 4);
    assert_int_equal(r.decisions[0].nbudgets, 2);
    assert_int_equal(r.decisions[0].budgets[1].ask, 2); /* zdb saw 2 -> 4 */
    assert_false(r.decisions[0].budgets[1].bound);
    cleanup(&r);
}

static void duplicate_keys_change_nothing(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 8, 0);
    add(&r, "shop/api", 2, 8, 0);
    entry(&r, 0, "edge", 10, 10, true);
    entry(&r, 1, "edge", 10, 10, true);
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_ERR_INVALID);
    assert_int_equal(desired(&r, 0), 8);
    assert_int_equal(r.decisions[0].nbudgets, 0);
    cleanup(&r);
}

/* No room at all (or less than any replica): every ask is refused. */
static void no_room_grants_nothing(void **state)
{
    round_t r = {0};
    (void)state;

    add(&r, "shop/api", 2, 8, 3);
    entry(&r, 0, "edge", 10, 20, true); /* 20 - 30 < 0 */
    assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
    assert_int_equal(desired(&r, 0), 2);
    assert_false(r.decisions[0].scaled);
    assert_int_equal(r.decisions[0].reason, MS_REASON_DownstreamLimit);
    cleanup(&r);
}

/* The rule of docs/decision-rules.md §2b written as plainly as it reads,
 * for one budget: a scan of every object per granted replica. */
static void reference_share(const round_t *r, int32_t *want)
{
    double room = INFINITY, reserved = 0, asked = 0, ns_flows[MAX_MEMBERS];
    int32_t ask[MAX_MEMBERS], grant[MAX_MEMBERS] = {0};
    size_t n = r->n;

    for (size_t i = 0; i < n; i++) {
        const ms_decision_t *d = &r->decisions[i];
        double p = r->specs[i].downstreams[0].per_replica;

        room = fmin(room, d->downstreams[0].room);
        reserved += p * d->starting_replicas;
        ask[i] = d->desired_replicas > d->current_replicas
                     ? d->desired_replicas - d->current_replicas
                     : 0;
        asked += ask[i] * p;
        want[i] = d->desired_replicas;
    }
    room -= reserved;
    if (asked <= room)
        return;
    for (;;) {
        int best = -1;

        for (size_t i = 0; i < n; i++) { /* namespace flows granted so far */
            ns_flows[i] = 0;
            for (size_t j = 0; j < n; j++)
                if (strncmp(r->keys[i], r->keys[j], 2) == 0) /* keys are "X/..." */
                    ns_flows[i] += grant[j] * r->specs[j].downstreams[0].per_replica;
        }
        for (size_t i = 0; i < n; i++) {
            double p = r->specs[i].downstreams[0].per_replica;
            double pb;

            if (grant[i] >= ask[i] || p > room)
                continue;
            if (best < 0) {
                best = (int)i;
                continue;
            }
            pb = r->specs[best].downstreams[0].per_replica;
            if (ns_flows[i] < ns_flows[best] ||
                (ns_flows[i] == ns_flows[best] &&
                 (grant[i] * p < grant[best] * pb ||
                  (grant[i] * p == grant[best] * pb && strcmp(r->keys[i], r->keys[best]) < 0))))
                best = (int)i;
        }
        if (best < 0)
            break;
        grant[best]++;
        room -= r->specs[best].downstreams[0].per_replica;
    }
    for (size_t i = 0; i < n; i++)
        if (grant[i] < ask[i])
            want[i] = r->decisions[i].current_replicas + grant[i];
}

/* The heaps of budget.c against the plain rule on random rounds: up to 8
 * objects in 3 namespaces, perReplica 5, 10, 25 or 40, asks of 0-6, some
 * starting replicas, rooms around the asks. */
static void handout_matches_the_plain_rule(void **state)
{
    static const double costs[] = {5, 10, 25, 40};
    uint32_t seed = 12345;
    (void)state;

    for (int round = 0; round < 5000; round++) {
        round_t r = {0};
        int32_t want[MAX_MEMBERS];
        size_t n;

        seed = seed * 1664525u + 1013904223u;
        n = 1 + (seed >> 8) % MAX_MEMBERS;
        double room = (double)((seed >> 16) % 300);
        for (size_t i = 0; i < n; i++) {
            char key[32];

            seed = seed * 1664525u + 1013904223u;
            snprintf(key, sizeof key, "%c/o%zu", 'a' + (int)((seed >> 8) % 3), i);
            add(&r, key, 2, 2 + (int32_t)((seed >> 12) % 7) - 1, (int32_t)((seed >> 20) % 3) == 0);
            entry(&r, i, "edge", costs[(seed >> 24) % 4], room + (double)((seed >> 4) % 50), true);
        }
        reference_share(&r, want);
        assert_int_equal(ms_engine_share_budgets(r.members, r.n), MS_OK);
        for (size_t i = 0; i < n; i++)
            if (desired(&r, i) != want[i])
                fail_msg("round %d, %s: got %d, the rule gives %d", round, r.keys[i],
                         (int)desired(&r, i), (int)want[i]);
        cleanup(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(room_for_every_ask_changes_nothing),
        cmocka_unit_test(a_huge_hand_out_stops_at_its_bound),
        cmocka_unit_test(namespaces_first_in_any_order),
        cmocka_unit_test(small_ask_served_whole),
        cmocka_unit_test(starting_replicas_are_reserved),
        cmocka_unit_test(two_entries_count_once),
        cmocka_unit_test(budgets_touch_only_growth),
        cmocka_unit_test(later_budget_sees_lowered_count),
        cmocka_unit_test(duplicate_keys_change_nothing),
        cmocka_unit_test(no_room_grants_nothing),
        cmocka_unit_test(handout_matches_the_plain_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
