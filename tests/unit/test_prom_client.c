/*
 * test_prom_client.c - what the Prometheus client refuses before it sends
 * anything, and what it does without a reachable server. Requests against
 * real servers (auth, TLS, timeouts, concurrency) are in
 * tests/integration/prom/prom_it.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "meshscaler/prom.h"

static void refused(const ms_prom_options_t *o, const char *mention)
{
    char err[MS_ERRBUF_SIZE] = "";
    ms_prom_client_t *c = ms_prom_client_new(o, err, sizeof err);

    if (c != NULL) {
        ms_prom_client_free(c);
        fail_msg("accepted; want a refusal mentioning %s", mention);
    }
    if (strstr(err, mention) == NULL)
        fail_msg("message \"%s\" does not mention %s", err, mention);
}

static void test_refusals(void **state)
{
    const char *bad_header[] = {"X-Scope-OrgID team-a"};
    const char *injected[] = {"X-Scope-OrgID: a\r\nHost: evil"};
    ms_prom_options_t o;
    (void)state;

    o = (ms_prom_options_t){.url = NULL};
    refused(&o, "http://");
    o = (ms_prom_options_t){.url = "ftp://127.0.0.1:9090"};
    refused(&o, "http://");
    o = (ms_prom_options_t){.url = "http://127.0.0.1:9090", .headers = bad_header, .nheaders = 1};
    refused(&o, "Name: value");
    o = (ms_prom_options_t){.url = "http://127.0.0.1:9090", .headers = injected, .nheaders = 1};
    refused(&o, "Name: value");
    o = (ms_prom_options_t){.url = "http://127.0.0.1:9090", .bearer_token = "t", .basic_user = "u"};
    refused(&o, "together");
}

/* A token file that never existed: every query is missing with CREDENTIALS,
 * and nothing is sent. */
static void test_unreadable_token_file(void **state)
{
    ms_prom_options_t o = {.url = "http://127.0.0.1:1",
                           .bearer_token_file = "/nonexistent/meshscaler/token"};
    char err[MS_ERRBUF_SIZE];
    ms_prom_client_t *c = ms_prom_client_new(&o, err, sizeof err);
    ms_prom_query_t q[2] = {{.query = "up"}, {.query = "sum(up)"}};
    ms_prom_client_stats_t st;
    (void)state;

    assert_non_null(c);
    ms_prom_result_init(&q[0].result);
    ms_prom_result_init(&q[1].result);
    assert_int_equal(ms_prom_run(c, q, 2), MS_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(q[i].result.reason, MS_PROM_CREDENTIALS);
        assert_non_null(strstr(q[i].result.message, "/nonexistent/meshscaler/token"));
        ms_prom_result_cleanup(&q[i].result);
    }
    ms_prom_client_stats(c, &st);
    assert_int_equal(st.queries, 0);
    ms_prom_client_free(c);
}

/* Nothing listens on 127.0.0.1:1: refused, not a value. */
static void test_refused_connection(void **state)
{
    ms_prom_options_t o = {.url = "http://127.0.0.1:1/", .timeout_ms = 2000};
    char err[MS_ERRBUF_SIZE];
    ms_prom_client_t *c = ms_prom_client_new(&o, err, sizeof err);
    ms_prom_query_t q = {.query = "up", .time = 1796000000.5};
    double v = -1;
    (void)state;

    assert_non_null(c);
    ms_prom_result_init(&q.result);
    assert_int_equal(ms_prom_run(c, &q, 1), MS_OK);
    assert_int_equal(q.result.reason, MS_PROM_UNAVAILABLE);
    assert_non_null(strstr(q.result.message, "127.0.0.1:1/api/v1/query")); /* one slash */
    assert_int_equal(ms_prom_result_number(&q.result, 0, 0, &v, NULL, 0), MS_PROM_UNAVAILABLE);
    assert_true(v == -1);
    ms_prom_result_cleanup(&q.result);
    ms_prom_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_unreadable_token_file),
        cmocka_unit_test(test_refused_connection),
    };
    ms_http_global_init();
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ms_http_global_cleanup();
    return rc;
}
