/*
 * test_kube_review.c - the review decision cache: lifetimes (60 s allowed,
 * 10 s denied, errors never), keys per (token, path, verb), the size bound
 * and what it evicts; and the checks that need no API server (a hit from
 * the cache, a string that cannot be a token). The reviews themselves run
 * against the real API server in tests/integration/kube/kube_it_review.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "meshscaler/kube_review.h"

#define T_A "eyJhbGciOiJSUzI1NiJ9.token-a.sig"
#define T_B "eyJhbGciOiJSUzI1NiJ9.token-b.sig"

static ms_kube_review_decision_t get(ms_kube_review_cache_t *c, const char *token, double now,
                                     bool *hit)
{
    ms_kube_review_decision_t d = (ms_kube_review_decision_t)-1;

    *hit = ms_kube_review_cache_get(c, token, "/metrics", "get", now, &d);
    return d;
}

static void allowed_lives_60s_denied_10s(void **state)
{
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(0);
    ms_kube_review_cache_stats_t st;
    bool hit;
    (void)state;

    get(c, T_A, 100, &hit);
    assert_false(hit);
    ms_kube_review_cache_put(c, T_A, "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 100);
    ms_kube_review_cache_put(c, T_B, "/metrics", "get", MS_KUBE_REVIEW_DENIED, 100);
    assert_int_equal(get(c, T_A, 100, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_true(hit);
    assert_int_equal(get(c, T_A, 159.9, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_true(hit);
    get(c, T_A, 160, &hit);
    assert_false(hit);
    assert_int_equal(get(c, T_B, 109.9, &hit), MS_KUBE_REVIEW_DENIED);
    assert_true(hit);
    get(c, T_B, 110, &hit);
    assert_false(hit);

    /* A new decision replaces the old one in place. */
    ms_kube_review_cache_put(c, T_B, "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 120);
    assert_int_equal(get(c, T_B, 121, &hit), MS_KUBE_REVIEW_ALLOWED);
    ms_kube_review_cache_stats(c, &st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.hits, 4);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.evictions, 0);
    ms_kube_review_cache_free(c);
    ms_kube_review_cache_free(NULL);
}

static void unauthenticated_counts_as_denied_errors_are_not_kept(void **state)
{
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(0);
    ms_kube_review_cache_stats_t st;
    bool hit;
    (void)state;

    ms_kube_review_cache_put(c, T_A, "/metrics", "get", MS_KUBE_REVIEW_UNAUTHENTICATED, 0);
    assert_int_equal(get(c, T_A, 9, &hit), MS_KUBE_REVIEW_UNAUTHENTICATED);
    get(c, T_A, 10, &hit);
    assert_false(hit);
    ms_kube_review_cache_put(c, T_B, "/metrics", "get", MS_KUBE_REVIEW_ERROR, 0);
    get(c, T_B, 0, &hit);
    assert_false(hit); /* an API server outage must not outlive itself */
    ms_kube_review_cache_stats(c, &st);
    assert_int_equal(st.entries, 1);
    ms_kube_review_cache_free(c);
}

static void keys_are_token_path_and_verb(void **state)
{
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(0);
    ms_kube_review_decision_t d;
    bool hit;
    (void)state;

    ms_kube_review_cache_put(c, T_A, "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 0);
    get(c, T_B, 1, &hit);
    assert_false(hit);
    assert_false(ms_kube_review_cache_get(c, T_A, "/metrics", "post", 1, &d));
    assert_false(ms_kube_review_cache_get(c, T_A, "/healthz", "get", 1, &d));
    /* The separator keeps ("/metricsg", "et") apart from ("/metrics", "get"). */
    assert_false(ms_kube_review_cache_get(c, T_A, "/metricsg", "et", 1, &d));
    /* A token that is a prefix of another is another token. */
    assert_false(
        ms_kube_review_cache_get(c, "eyJhbGciOiJSUzI1NiJ9.token-a.si", "/metrics", "get", 1, &d));
    assert_true(ms_kube_review_cache_get(c, T_A, "/metrics", "get", 1, &d));
    ms_kube_review_cache_free(c);
}

static void bounded_expired_first_then_soonest_to_expire(void **state)
{
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(3);
    ms_kube_review_cache_stats_t st;
    char tok[32];
    bool hit;
    (void)state;

    /* Full of live entries: a new one evicts the one expiring soonest,
     * which is a denial rather than an allowed scraper. */
    ms_kube_review_cache_put(c, "allowed-1", "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 0);
    ms_kube_review_cache_put(c, "denied-1", "/metrics", "get", MS_KUBE_REVIEW_DENIED, 0);
    ms_kube_review_cache_put(c, "allowed-2", "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 1);
    ms_kube_review_cache_put(c, "denied-2", "/metrics", "get", MS_KUBE_REVIEW_DENIED, 2);
    get(c, "denied-1", 3, &hit);
    assert_false(hit);
    assert_int_equal(get(c, "allowed-1", 3, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_int_equal(get(c, "allowed-2", 3, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_int_equal(get(c, "denied-2", 3, &hit), MS_KUBE_REVIEW_DENIED);
    ms_kube_review_cache_stats(c, &st);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evictions, 1);

    /* After denied-2 expired (t=12) its slot is reused: no eviction. */
    ms_kube_review_cache_put(c, "allowed-3", "/metrics", "get", MS_KUBE_REVIEW_ALLOWED, 13);
    ms_kube_review_cache_stats(c, &st);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(get(c, "allowed-1", 13, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_int_equal(get(c, "allowed-3", 13, &hit), MS_KUBE_REVIEW_ALLOWED);

    /* A flood of distinct garbage never grows it, and churns one slot only:
     * each new denial evicts the previous one, which expires soonest. */
    for (int i = 0; i < 1000; i++) {
        snprintf(tok, sizeof tok, "garbage-%d", i);
        ms_kube_review_cache_put(c, tok, "/metrics", "get", MS_KUBE_REVIEW_UNAUTHENTICATED, 14);
    }
    ms_kube_review_cache_stats(c, &st);
    assert_int_equal(st.entries, 3);
    assert_int_equal(get(c, "allowed-2", 15, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_int_equal(get(c, "allowed-3", 15, &hit), MS_KUBE_REVIEW_ALLOWED);
    assert_int_equal(get(c, "garbage-999", 15, &hit), MS_KUBE_REVIEW_UNAUTHENTICATED);
    ms_kube_review_cache_free(c);
}

static void a_cached_decision_needs_no_client(void **state)
{
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(0);
    ms_kube_review_result_t r;
    (void)state;

    ms_kube_review_cache_put(c, T_A, "/metrics", "get", MS_KUBE_REVIEW_DENIED, 50);
    /* No client at all: a hit must not make a request. */
    ms_kube_review_authorize(NULL, c, T_A, "/metrics", "get", 55, &r);
    assert_true(r.cached);
    assert_int_equal(r.decision, MS_KUBE_REVIEW_DENIED);
    ms_kube_review_cache_free(c);
}

static void strings_that_cannot_be_tokens_are_refused_without_a_request(void **state)
{
    static const char *const bad[] = {"",          "two words",   "tab\there",
                                      "new\nline", "caf\xc3\xa9", "\x7f"};
    ms_kube_review_cache_t *c = ms_kube_review_cache_new(0);
    ms_kube_review_result_t r;
    ms_kube_user_t user;
    ms_kube_error_t kerr;
    char why[64];
    bool authenticated = true;
    (void)state;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* NULL client: any request would crash the test. */
        assert_int_equal(
            ms_kube_review_token(NULL, bad[i], &authenticated, &user, why, sizeof why, &kerr),
            MS_OK);
        assert_false(authenticated);
        assert_string_equal(why, "not a bearer token");
        assert_null(user.username);
        ms_kube_review_authorize(NULL, c, bad[i], "/metrics", "get", 0, &r);
        assert_int_equal(r.decision, MS_KUBE_REVIEW_UNAUTHENTICATED);
        assert_false(r.cached);
    }
    ms_kube_user_cleanup(&user);
    ms_kube_user_cleanup(NULL);
    ms_kube_review_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allowed_lives_60s_denied_10s),
        cmocka_unit_test(unauthenticated_counts_as_denied_errors_are_not_kept),
        cmocka_unit_test(keys_are_token_path_and_verb),
        cmocka_unit_test(bounded_expired_first_then_soonest_to_expire),
        cmocka_unit_test(a_cached_decision_needs_no_client),
        cmocka_unit_test(strings_that_cannot_be_tokens_are_refused_without_a_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
