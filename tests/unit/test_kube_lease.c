/*
 * test_kube_lease.c - the leader elector's options: defaults and the rules
 * between them (client-go's: retry period < renew deadline < lease duration,
 * and meshscaler's safety margin below duration - deadline). The election
 * itself runs against the real API server in tests/integration/kube
 * (kube_it_lease) and the controller's t_leader and t_failover.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "meshscaler/lease.h"

/* The options, with lease, deadline, retry and margin; NULL client: nothing
 * is started, only checked. */
static bool accepted(double lease, double deadline, double retry, double margin,
                     const char *name)
{
    ms_kube_lease_options_t o = {.namespace_ = "kube-system", .name = name, .identity = "me",
                                 .lease_duration = lease, .renew_deadline = deadline,
                                 .retry_period = retry, .safety_margin = margin};
    char errbuf[256];
    ms_kube_elector_t *e = ms_kube_elector_new(NULL, &o, errbuf, sizeof errbuf);

    ms_kube_elector_free(e);
    return e != NULL;
}

static void defaults_and_their_order(void **state)
{
    (void)state;
    assert_true(accepted(0, 0, 0, 0, "meshscaler")); /* 15, 10, 2, margin 2 < 5 */
    assert_true(accepted(3, 2, 1, 0.5, "meshscaler"));
    /* The default margin (2 s) must fit too: 3 - 2 leaves 1 s. */
    assert_false(accepted(3, 2, 1, 0, "meshscaler"));
    assert_false(accepted(3, 2, 1, 1, "meshscaler"));  /* margin = duration - deadline */
    assert_false(accepted(10, 10, 2, 0.1, "meshscaler")); /* deadline = duration */
    assert_false(accepted(15, 10, 10, 0, "meshscaler")); /* retry = deadline */
    /* The default retry period (2 s) must be below the deadline too. */
    assert_false(accepted(10, 1.5, 0, 0, "meshscaler"));
    assert_true(accepted(10, 2.5, 0, 0, "meshscaler"));
    assert_false(accepted(0, 0, 0, 0, "bad/name"));
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
        cmocka_unit_test(names_are_required),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
