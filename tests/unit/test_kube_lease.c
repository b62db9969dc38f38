/*
 * test_kube_lease.c - the leader elector's options: defaults and the rules
 * between them (client-go's: retry period < renew deadline < lease duration,
 * and meshscaler's safety margin covering a successor's back-dating). The election
 * itself runs against the real API server in tests/integration/kube
 * (kube_it_lease) and the controller's t_leader and t_failover.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "meshscaler/lease.h"

/* The options, with lease, deadline, retry and margin; NULL client: nothing
 * is started, only checked. */
static bool accepted(double lease, double deadline, double retry, double margin, const char *name)
{
    ms_kube_lease_options_t o = {.namespace_ = "kube-system",
                                 .name = name,
                                 .identity = "me",
                                 .lease_duration = lease,
                                 .renew_deadline = deadline,
                                 .retry_period = retry,
                                 .safety_margin = margin};
    char errbuf[256];
    ms_kube_elector_t *e = ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf);

    ms_kube_elector_free(e);
    return e != NULL;
}

static void defaults_and_their_order(void **state)
{
    (void)state;
    assert_true(accepted(0, 0, 0, 0, "meshscaler"));      /* 15, 10, 2, margin 3 */
    assert_true(accepted(3, 2, 1, 1, "meshscaler"));      /* back-dating 0.5 + slack 0.5 */
    assert_true(accepted(3, 2, 1, 0, "meshscaler"));      /* the default margin: 1 s here */
    assert_false(accepted(3, 2, 1, 3, "meshscaler"));     /* margin = duration */
    assert_false(accepted(10, 10, 2, 0.1, "meshscaler")); /* deadline = duration */
    assert_false(accepted(10, 12, 2, 0, "meshscaler"));   /* deadline > duration */
    assert_false(accepted(15, 10, 10, 0, "meshscaler"));  /* retry = deadline */
    /* The default retry period (2 s) must be below the deadline too. */
    assert_false(accepted(10, 1.5, 0, 0, "meshscaler"));
    assert_true(accepted(10, 2.5, 0, 0, "meshscaler"));
    assert_false(accepted(0, 0, 0, 0, "bad/name"));
}

/* A successor may date the last renewal it saw (duration - deadline)/2 =
 * 2.5 s back, so it may take the lease 12.5 s after that renewal: the margin
 * must cover the 2.5 s plus slack (issue 23 found 2 s), and a leader's term
 * (what bounds its writes) ends by the last renewal plus the renew deadline. */
static void margin_covers_a_successors_back_dating(void **state)
{
    ms_kube_lease_options_t o = {.namespace_ = "kube-system", .name = "m", .identity = "me"};
    char errbuf[256];
    ms_kube_elector_t *e;

    (void)state;
    assert_false(accepted(0, 0, 0, 2, "meshscaler"));   /* the old default */
    assert_false(accepted(0, 0, 0, 2.5, "meshscaler")); /* no slack */
    assert_false(accepted(0, 0, 0, 2.9, "meshscaler"));
    assert_true(accepted(0, 0, 0, 3, "meshscaler"));
    assert_null(ms_kube_elector_new(
        NULL,
        &(ms_kube_lease_options_t){
            .namespace_ = "n", .name = "m", .identity = "me", .safety_margin = 2},
        errbuf, sizeof errbuf));
    assert_non_null(strstr(errbuf, "a safety margin of at least (duration - deadline)/2 + 0.5 s"));

    e = ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf);
    assert_non_null(e);
    assert_true(ms_kube_elector_term(e) == 10); /* the renew deadline, not 15 - 3 */
    ms_kube_elector_free(e);
    /* A margin past duration - deadline shortens the term below the deadline. */
    o.safety_margin = 7;
    e = ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf);
    assert_true(ms_kube_elector_term(e) == 8);
    ms_kube_elector_free(e);
    /* Every accepted option set ends the term before the earliest takeover. */
    for (double d = 3; d <= 60; d += 1.5)
        for (double dl = 1.25; dl < d; dl += 1.25)
            for (double m = 0; m < d; m += 0.75) {
                ms_kube_lease_options_t x = {.namespace_ = "n",
                                             .name = "m",
                                             .identity = "me",
                                             .lease_duration = d,
                                             .renew_deadline = dl,
                                             .retry_period = 1,
                                             .safety_margin = m};
                e = ms_kube_elector_new(NULL, &x, errbuf, sizeof errbuf);
                if (e == NULL)
                    continue;
                assert_true(ms_kube_elector_term(e) <= dl);
                assert_true(ms_kube_elector_term(e) + MS_KUBE_LEASE_SLACK <= d - (d - dl) / 2);
                ms_kube_elector_free(e);
            }
}

static void names_are_required(void **state)
{
    ms_kube_lease_options_t o = {.namespace_ = "ns", .name = "x", .identity = ""};
    char errbuf[256];

    (void)state;
    assert_null(ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf));
    o.identity = NULL;
    assert_null(ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf));
    o.identity = "me";
    o.namespace_ = NULL;
    assert_null(ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf));
    ms_kube_elector_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_and_their_order),
        cmocka_unit_test(margin_covers_a_successors_back_dating),
        cmocka_unit_test(names_are_required),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
