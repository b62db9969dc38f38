/*
 * test_decide.c - `meshscaler decide` as a library call: scenarios in,
 * one emitted line per tick out.
 *
 * Each test reads the lines back as JSON and checks the fields the rule is
 * about. Scenarios are written with single quotes, turned into double quotes
 * before the run (no scenario here needs a real ').
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/decide.h"

#include <cjson/cJSON.h>

#define MAX_LINES 16

typedef struct {
    size_t nlines;
    char *lines[MAX_LINES];
    size_t stop_after; /* emit returns non-zero on this line (1-based); 0: never */
} collector_t;

static int collect(void *ctx, const char *line, size_t len)
{
    collector_t *c = ctx;
    char *copy;

    assert_true(c->nlines < MAX_LINES);
    assert_null(memchr(line, '\n', len)); /* the caller adds the newline */
    copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, line, len);
    copy[len] = '\0';
    c->lines[c->nlines++] = copy;
    return c->stop_after != 0 && c->nlines >= c->stop_after;
}

static void collector_cleanup(collector_t *c)
{
    for (size_t i = 0; i < c->nlines; i++)
        free(c->lines[i]);
    c->nlines = 0;
}

static char *double_quoted(const char *squoted)
{
    char *text = strdup(squoted);

    assert_non_null(text);
    for (char *c = text; *c; c++)
        if (*c == '\'')
            *c = '"';
    return text;
}

static ms_err_t run(const char *squoted, ms_decide_format_t format, collector_t *c, char *errbuf,
                    size_t errlen)
{
    char *text = double_quoted(squoted);
    ms_err_t err = ms_decide_run(text, strlen(text), format, collect, c, errbuf, errlen);

    free(text);
    return err;
}

/* Run a scenario that must succeed, collecting its JSON lines. */
static void run_ok(const char *squoted, collector_t *c)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    ms_err_t err = run(squoted, MS_DECIDE_JSON, c, errbuf, sizeof errbuf);

    if (err != MS_OK)
        fail_msg("scenario refused (%s): %s", ms_err_name(err), errbuf);
}

/* A number field of output line i. */
static double field(const collector_t *c, size_t i, const char *name)
{
    cJSON *line, *item;
    double v;

    assert_true(i < c->nlines);
    line = cJSON_Parse(c->lines[i]);
    assert_non_null(line);
    item = cJSON_GetObjectItemCaseSensitive(line, name);
    if (!cJSON_IsNumber(item))
        fail_msg("line %zu has no number \"%s\": %s", i, name, c->lines[i]);
    v = item->valuedouble;
    cJSON_Delete(line);
    return v;
}

/* The "reason" of output line i, compared with want. */
static void assert_reason(const collector_t *c, size_t i, const char *want)
{
    cJSON *line = cJSON_Parse(c->lines[i]);
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(line, "reason");

    assert_non_null(line);
    assert_true(cJSON_IsString(reason));
    if (strcmp(reason->valuestring, want) != 0)
        fail_msg("line %zu: reason %s, want %s", i, reason->valuestring, want);
    cJSON_Delete(line);
}

/* One metric: in-flight requests against a 70% target. A value of 140 asks
 * twice the ready replicas, 20 asks 2/7 of them. */
#define SPEC                                                                                       \
    "'spec': {'minReplicas': 1, 'maxReplicas': 40, 'metrics': [{'name': 'sidecar',"                \
    " 'type': 'SidecarConcurrency', 'target': {'type': 'Utilization',"                             \
    " 'averageUtilization': 70}}]}"

/* ---- the closed loop and defaults of a tick ---- */

static void test_omitted_current_replicas_is_the_previous_desired(void **state)
{
    collector_t c = {0};

    (void)state;
    run_ok("{" SPEC ", 'ticks': ["
           " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 140}},"
           " {'time': 15, 'metrics': {'sidecar': 70}},"
           " {'time': 30, 'currentReplicas': 5, 'metrics': {'sidecar': 70}}]}",
           &c);
    assert_int_equal(c.nlines, 3);
    assert_true(field(&c, 0, "desiredReplicas") == 8);
    /* The runner played the controller: the scale it asked for took effect. */
    assert_true(field(&c, 1, "currentReplicas") == 8);
    /* A given count wins over the closed loop. */
    assert_true(field(&c, 2, "currentReplicas") == 5);
    collector_cleanup(&c);
}

static void test_ready_replicas_default_to_current(void **state)
{
    collector_t c = {0};

    (void)state;
    run_ok("{" SPEC ", 'ticks': ["
           " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 140}},"
           " {'time': 100, 'currentReplicas': 4, 'readyReplicas': 2,"
           "  'metrics': {'sidecar': 140}}]}",
           &c);
    assert_true(field(&c, 0, "readyReplicas") == 4);
    assert_true(field(&c, 0, "desiredReplicas") == 8); /* ceil(2 x 4 ready) */
    /* Utilization asks ceil(ratio x ready): with 2 ready, 140% asks only 4. */
    assert_true(field(&c, 1, "readyReplicas") == 2);
    assert_true(field(&c, 1, "recommendation") == 4);
    collector_cleanup(&c);
}

static void test_ready_replicas_may_exceed_current(void **state)
{
    collector_t c = {0};

    (void)state;
    /* A rollout with surge has more ready pods than the scale asks for. */
    run_ok("{" SPEC ", 'ticks': ["
           " {'time': 0, 'currentReplicas': 4, 'readyReplicas': 6, 'metrics': {'sidecar': 140}}]}",
           &c);
    assert_true(field(&c, 0, "readyReplicas") == 6);
    assert_true(field(&c, 0, "recommendation") == 12);
    collector_cleanup(&c);
}

/* runningReplicas (step 7) defaults to the tick's currentReplicas, the
 * closed loop's included: nothing is reserved and the line does not carry
 * it. Given, its starting replicas (current - running) reserve perReplica
 * of the downstream: (0.7 x 1000 - 400 - 3 x 50) / 50 = 3 -> 7, against
 * 4 + 6 = 10 without the reservation. */
static void test_running_replicas_default_to_current(void **state)
{
    collector_t c = {0};
    cJSON *line;

    (void)state;
    run_ok("{'spec': {'minReplicas': 1, 'maxReplicas': 40, 'metrics': [{'name': 'sidecar',"
           " 'type': 'SidecarConcurrency', 'target': {'type': 'Utilization',"
           " 'averageUtilization': 70}}], 'guardrails': {'downstream': [{'name': 'edge',"
           " 'limit': 1000, 'perReplica': 50}]}}, 'ticks': ["
           " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 140},"
           "  'signals': {'downstream': {'edge': {'usage': 400}}}},"
           " {'time': 100, 'currentReplicas': 4, 'runningReplicas': 1, 'metrics': {'sidecar': 140},"
           "  'signals': {'downstream': {'edge': {'usage': 400}}}}]}",
           &c);
    assert_int_equal(c.nlines, 2);
    line = cJSON_Parse(c.lines[0]);
    assert_null(cJSON_GetObjectItemCaseSensitive(line, "runningReplicas"));
    cJSON_Delete(line);
    assert_true(field(&c, 0, "desiredReplicas") == 8); /* asks 8, edge allows 10 */
    assert_true(field(&c, 1, "runningReplicas") == 1);
    assert_true(field(&c, 1, "desiredReplicas") == 7);
    assert_reason(&c, 1, "DownstreamLimit");
    assert_non_null(strstr(c.lines[1], "\"reserved\":150"));
    collector_cleanup(&c);
}

/* ---- state ---- */

static void test_state_recommendation_holds_a_scale_down(void **state)
{
    collector_t c = {0};

    (void)state;
    run_ok("{" SPEC ", 'state': {'recommendations': [{'time': -100, 'replicas': 10}]},"
           " 'ticks': [{'time': 0, 'currentReplicas': 10, 'metrics': {'sidecar': 20}}]}",
           &c);
    assert_true(field(&c, 0, "recommendation") == 3);
    assert_true(field(&c, 0, "desiredReplicas") == 10);
    collector_cleanup(&c);
}

static void test_state_recommendation_replaces_the_initial_one(void **state)
{
    collector_t with = {0}, without = {0};
    const char *ticks = " 'ticks': [{'time': 0, 'currentReplicas': 10, 'metrics': {'sidecar': 20}},"
                        " {'time': 250, 'metrics': {'sidecar': 20}}]}";
    char text[1024];

    (void)state;
    /* Without state, 10 is recorded at t=0 and holds until t=300. The state's
     * 10 at t=-100 leaves the 300 s window at t=200: by t=250 only the 3
     * recorded at t=0 remains, so the scale-down goes through. */
    snprintf(text, sizeof text, "{%s,%s", SPEC, ticks);
    run_ok(text, &without);
    snprintf(text, sizeof text,
             "{%s, 'state': {'recommendations': [{'time': -100, 'replicas': 10}]},%s", SPEC, ticks);
    run_ok(text, &with);
    assert_true(field(&without, 1, "desiredReplicas") == 10);
    assert_true(field(&with, 1, "desiredReplicas") == 3);
    collector_cleanup(&with);
    collector_cleanup(&without);
}

static void test_state_scale_events_slow_a_scale_up(void **state)
{
    collector_t c = {0};

    (void)state;
    /* 4 pods were added 5 s ago: the 15 s policies count from 0 replicas,
     * so neither +100% nor +4 pods allows more than 4 now. Without the
     * event the same tick goes to 8. */
    run_ok("{" SPEC ", 'state': {'scaleEvents': [{'time': -5, 'change': 4}]},"
           " 'ticks': [{'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 280}},"
           " {'time': 11, 'currentReplicas': 4, 'metrics': {'sidecar': 280}}]}",
           &c);
    assert_true(field(&c, 0, "recommendation") == 16);
    assert_true(field(&c, 0, "desiredReplicas") == 4);
    assert_reason(&c, 0, "ScaleUpLimit");
    /* At t=11 the event is 16 s old, outside every period. */
    assert_true(field(&c, 1, "desiredReplicas") == 8);
    collector_cleanup(&c);
}

static void test_state_failures_bring_the_fallback_sooner(void **state)
{
    collector_t with = {0}, without = {0};
    const char *rest =
        " 'ticks': [{'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': null}}]}";
    const char *spec = "'spec': {'maxReplicas': 40, 'metrics': [{'name': 'sidecar',"
                       " 'type': 'SidecarConcurrency', 'target': {'type': 'Utilization',"
                       " 'averageUtilization': 70}}], 'fallback': {'replicas': 6}}";
    char text[1024];

    (void)state;
    /* Two failures remembered + this one reach the default threshold of 3. */
    snprintf(text, sizeof text, "{%s, 'state': {'failures': 2},%s", spec, rest);
    run_ok(text, &with);
    snprintf(text, sizeof text, "{%s,%s", spec, rest);
    run_ok(text, &without);
    assert_true(field(&with, 0, "desiredReplicas") == 6);
    assert_reason(&with, 0, "Fallback");
    assert_true(field(&without, 0, "desiredReplicas") == 4);
    assert_reason(&without, 0, "MetricsUnavailable");
    collector_cleanup(&with);
    collector_cleanup(&without);
}

static void test_output_state_carries_the_memory_forward(void **state)
{
    collector_t c = {0};
    cJSON *line;
    const cJSON *st;

    (void)state;
    run_ok("{" SPEC ", 'state': {'failures': 1},"
           " 'ticks': [{'time': 0, 'currentReplicas': 4, 'metrics': {}}]}",
           &c);
    line = cJSON_Parse(c.lines[0]);
    st = cJSON_GetObjectItemCaseSensitive(line, "state");
    assert_true(cJSON_IsObject(st));
    /* All metrics missing: one more failure. */
    assert_true(cJSON_GetObjectItemCaseSensitive(st, "failures")->valuedouble == 2);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(st, "recommendations")));
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(st, "scaleEvents")));
    cJSON_Delete(line);
    collector_cleanup(&c);
}

/* ---- output and errors ---- */

static void test_emit_stopping_gives_an_io_error(void **state)
{
    collector_t c = {.stop_after = 1};
    char errbuf[MS_ERRBUF_SIZE] = "";

    (void)state;
    assert_int_equal(run("{" SPEC ", 'ticks': ["
                         " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 70}},"
                         " {'time': 15, 'metrics': {'sidecar': 70}}]}",
                         MS_DECIDE_JSON, &c, errbuf, sizeof errbuf),
                     MS_ERR_IO);
    /* No tick after the refusal is emitted. */
    assert_int_equal(c.nlines, 1);
    assert_string_equal(errbuf, "output stopped at ticks[0]");
    collector_cleanup(&c);
}

static void test_invalid_input_emits_nothing(void **state)
{
    collector_t c = {0};
    char errbuf[MS_ERRBUF_SIZE] = "";
    /* Ticks 0 and 1 are fine; validation of tick 2 must happen before any
     * tick is decided. */
    const char *text = "{" SPEC ", 'ticks': ["
                       " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 70}},"
                       " {'time': 15, 'metrics': {'sidecar': 70}},"
                       " {'time': 30, 'metrics': {'sidecar': '70'}}]}";

    (void)state;
    assert_int_equal(run(text, MS_DECIDE_JSON, &c, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_int_equal(c.nlines, 0);
    assert_string_equal(errbuf, "ticks[2].metrics.sidecar: not a number (found a string)");
}

static void test_validate_agrees_with_run(void **state)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    char *good = double_quoted("{" SPEC ", 'ticks': [{'time': 0, 'currentReplicas': 1}]}");
    char *bad = double_quoted("{" SPEC ", 'ticks': [{'time': 0}]}");

    (void)state;
    assert_int_equal(ms_decide_validate(good, strlen(good), errbuf, sizeof errbuf), MS_OK);
    assert_int_equal(ms_decide_validate(bad, strlen(bad), errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_string_equal(errbuf, "ticks[0].currentReplicas: required on the first tick");
    free(good);
    free(bad);
}

static void test_input_need_not_be_nul_terminated(void **state)
{
    char errbuf[MS_ERRBUF_SIZE] = "";
    char *text = double_quoted("{" SPEC ", 'ticks': [{'time': 0, 'currentReplicas': 1}]}");
    size_t len = strlen(text);
    char *exact = malloc(len); /* no room for a NUL: ASan sees any overread */

    (void)state;
    assert_non_null(exact);
    memcpy(exact, text, len);
    assert_int_equal(ms_decide_validate(exact, len, errbuf, sizeof errbuf), MS_OK);
    /* Cut short, it is a syntax error, not a read past the end. */
    assert_int_equal(ms_decide_validate(exact, len - 1, errbuf, sizeof errbuf), MS_ERR_INVALID);
    assert_non_null(strstr(errbuf, "not valid JSON"));
    free(exact);
    free(text);
}

static void test_text_format_is_one_readable_line_per_tick(void **state)
{
    collector_t c = {0};
    char errbuf[MS_ERRBUF_SIZE] = "";

    (void)state;
    assert_int_equal(run("{" SPEC ", 'ticks': ["
                         " {'time': 0, 'currentReplicas': 4, 'metrics': {'sidecar': 140}},"
                         " {'time': 15, 'metrics': {'sidecar': 70}}]}",
                         MS_DECIDE_TEXT, &c, errbuf, sizeof errbuf),
                     MS_OK);
    assert_int_equal(c.nlines, 2);
    assert_non_null(strstr(c.lines[0], "4 -> 8"));
    assert_non_null(strstr(c.lines[1], "8 -> 8"));
    collector_cleanup(&c);
}

/* ---- rounds (docs/decide.md "Rounds") ---- */

/* An object of budget edge: sidecar at 70%, perReplica 25 of a 200-flow
 * table at 0.7 (140 flows). */
#define ROUND_SPEC                                                                                 \
    "{'minReplicas': 1, 'maxReplicas': 20, 'metrics': [{'name': 'sidecar',"                        \
    " 'type': 'SidecarConcurrency', 'target': {'type': 'Utilization',"                             \
    " 'averageUtilization': 70}}], 'guardrails': {'downstream': [{'name': 'edge',"                 \
    " 'limit': 200, 'perReplica': 25, 'budget': 'edge'}]}}"
#define ROUND_TICK                                                                                 \
    "{'currentReplicas': 2, 'metrics': {'sidecar': 300},"                                          \
    " 'signals': {'downstream': {'edge': {'usage': 50}}}}"

/* A string field of output line i, compared with want. */
static void assert_key(const collector_t *c, size_t i, const char *want)
{
    cJSON *line = cJSON_Parse(c->lines[i]);
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(line, "key");

    assert_non_null(line);
    assert_true(cJSON_IsString(key));
    assert_string_equal(key->valuestring, want);
    cJSON_Delete(line);
}

/* The result does not depend on the order a round or the objects list
 * takes: lines come in key order and the shares are the same. */
static void test_round_lines_in_key_order_whatever_the_input_order(void **state)
{
    static const char *const scenarios[] = {
        "{'objects': [{'key': 'shop/api', 'spec': " ROUND_SPEC "},"
        " {'key': 'shop/web', 'spec': " ROUND_SPEC "}],"
        " 'ticks': [{'time': 0, 'objects': {'shop/api': " ROUND_TICK ", 'shop/web': " ROUND_TICK
        "}}]}",
        "{'objects': [{'key': 'shop/web', 'spec': " ROUND_SPEC "},"
        " {'key': 'shop/api', 'spec': " ROUND_SPEC "}],"
        " 'ticks': [{'time': 0, 'objects': {'shop/web': " ROUND_TICK ", 'shop/api': " ROUND_TICK
        "}}]}",
    };
    (void)state;

    for (size_t i = 0; i < 2; i++) {
        collector_t c = {0};

        run_ok(scenarios[i], &c);
        assert_int_equal(c.nlines, 2);
        assert_key(&c, 0, "shop/api");
        assert_key(&c, 1, "shop/web");
        assert_true(field(&c, 0, "desiredReplicas") == 4); /* 90 flows: 2 and 1 of 3 each */
        assert_true(field(&c, 1, "desiredReplicas") == 3);
        assert_reason(&c, 1, "DownstreamLimit");
        collector_cleanup(&c);
    }
}

/* An object a round does not list is not due: no line, and its closed
 * loop waits for its next round. */
static void test_round_decides_only_the_objects_it_lists(void **state)
{
    collector_t c = {0};
    (void)state;

    run_ok("{'objects': [{'key': 'shop/api', 'spec': " ROUND_SPEC "},"
           " {'key': 'shop/web', 'spec': " ROUND_SPEC "}],"
           " 'ticks': [{'time': 0, 'objects': {'shop/api': " ROUND_TICK "}},"
           "  {'time': 15, 'objects': {'shop/web': " ROUND_TICK "}},"
           "  {'time': 30, 'objects': {'shop/api': {'metrics': {'sidecar': 70}}}}]}",
           &c);
    assert_int_equal(c.nlines, 3);
    assert_key(&c, 0, "shop/api");
    assert_true(field(&c, 0, "desiredReplicas") == 5); /* alone: its own step 7 */
    assert_key(&c, 1, "shop/web");
    assert_key(&c, 2, "shop/api");
    assert_true(field(&c, 2, "currentReplicas") == 5); /* its own previous desired */
    collector_cleanup(&c);
}

static void test_round_text_lines_start_with_the_key(void **state)
{
    collector_t c = {0};
    char errbuf[MS_ERRBUF_SIZE] = "";
    (void)state;

    assert_int_equal(run("{'objects': [{'key': 'shop/api', 'spec': " ROUND_SPEC "}],"
                         " 'ticks': [{'time': 0, 'objects': {'shop/api': " ROUND_TICK "}}]}",
                         MS_DECIDE_TEXT, &c, errbuf, sizeof errbuf),
                     MS_OK);
    assert_int_equal(c.nlines, 1);
    assert_true(strncmp(c.lines[0], "shop/api t=0", 12) == 0);
    collector_cleanup(&c);
}

static void test_round_unknown_key_emits_nothing(void **state)
{
    collector_t c = {0};
    char errbuf[MS_ERRBUF_SIZE] = "";
    (void)state;

    assert_int_equal(run("{'objects': [{'key': 'shop/api', 'spec': " ROUND_SPEC "}],"
                         " 'ticks': [{'time': 0, 'objects': {'shop/api': " ROUND_TICK "}},"
                         "  {'time': 15, 'objects': {'shop/x': {}}}]}",
                         MS_DECIDE_JSON, &c, errbuf, sizeof errbuf),
                     MS_ERR_INVALID);
    assert_int_equal(c.nlines, 0);
    assert_string_equal(errbuf, "ticks[1].objects.shop/x: no such object");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_omitted_current_replicas_is_the_previous_desired),
        cmocka_unit_test(test_ready_replicas_default_to_current),
        cmocka_unit_test(test_ready_replicas_may_exceed_current),
        cmocka_unit_test(test_running_replicas_default_to_current),
        cmocka_unit_test(test_state_recommendation_holds_a_scale_down),
        cmocka_unit_test(test_state_recommendation_replaces_the_initial_one),
        cmocka_unit_test(test_state_scale_events_slow_a_scale_up),
        cmocka_unit_test(test_state_failures_bring_the_fallback_sooner),
        cmocka_unit_test(test_output_state_carries_the_memory_forward),
        cmocka_unit_test(test_emit_stopping_gives_an_io_error),
        cmocka_unit_test(test_invalid_input_emits_nothing),
        cmocka_unit_test(test_validate_agrees_with_run),
        cmocka_unit_test(test_input_need_not_be_nul_terminated),
        cmocka_unit_test(test_text_format_is_one_readable_line_per_tick),
        cmocka_unit_test(test_round_lines_in_key_order_whatever_the_input_order),
        cmocka_unit_test(test_round_decides_only_the_objects_it_lists),
        cmocka_unit_test(test_round_text_lines_start_with_the_key),
        cmocka_unit_test(test_round_unknown_key_emits_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
