/*
 * test_replay.c - `meshscaler replay` (replay.h) on recorded Prometheus
 * answers: a loopback HTTP server in the test answers every range query with
 * one fixture of tests/fixtures/prom, so the real client, decoder, tick and
 * engine run as they do against Prometheus (tests/integration/replay runs
 * the whole command against a real one). Issue 23: a disordered matrix gave
 * wrong points, and nothing bounded what a replay held.
 */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "meshscaler/json.h"
#include "meshscaler/replay.h"
#include "meshscaler/spec_json.h"

#ifndef MS_FIXTURES_DIR
#define MS_FIXTURES_DIR "tests/fixtures/prom"
#endif

/* ---- a server of one recorded answer ---- */

typedef struct {
    int fd;
    int port;
    char *body; /* the fixture; owned */
    size_t len;
    atomic_int requests;
    pthread_t thread;
} fixture_server_t;

/* Read the request (headers, then Content-Length bytes of body) so the
 * client sees its request taken, then answer with the fixture. */
static void answer(fixture_server_t *s, int c)
{
    char buf[65536], head[256];
    size_t have = 0, need = SIZE_MAX;
    ssize_t n;

    while (have < sizeof buf - 1 && (n = read(c, buf + have, sizeof buf - 1 - have)) > 0) {
        char *end, *cl;

        have += (size_t)n;
        buf[have] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) == NULL)
            continue;
        cl = strcasestr(buf, "\r\ncontent-length:");
        need = (size_t)(end + 4 - buf) + (cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
        if (have >= need)
            break;
    }
    atomic_fetch_add(&s->requests, 1);
    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             s->len);
    if (write(c, head, strlen(head)) < 0 || write(c, s->body, s->len) < 0)
        return; /* the client gave up: its test says so */
}

static void *serve(void *arg)
{
    fixture_server_t *s = arg;
    int c;

    while ((c = accept(s->fd, NULL, NULL)) >= 0) {
        answer(s, c);
        close(c);
    }
    return NULL;
}

static void server_start(fixture_server_t *s, const char *fixture)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;

    memset(s, 0, sizeof *s);
    s->body = read_fixture_file(MS_FIXTURES_DIR, fixture, &s->len);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 16), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &alen), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_stop(fixture_server_t *s)
{
    shutdown(s->fd, SHUT_RDWR); /* accept() returns */
    pthread_join(s->thread, NULL);
    close(s->fd);
    free(s->body);
}

/* ---- a replay of one object ---- */

/* A MeshAutoscaler spec with nmetrics user queries (each answered with the
 * fixture), read by the controller's own spec reader. */
static void spec_with(ms_spec_t *spec, int nmetrics)
{
    static const char head[] =
        "{\"scaleTargetRef\": {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", "
        "\"name\": \"web\"}, \"minReplicas\": 1, \"maxReplicas\": 10, \"metrics\": [";
    char text[1024], errbuf[MS_ERRBUF_SIZE];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", head);
    ms_jpath_t p;
    cJSON *json;

    for (int i = 0; i < nmetrics; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%s{\"name\": \"up%d\", \"type\": \"Prometheus\", \"prometheus\": "
                                "{\"query\": \"sum(up) + %d\"}, \"target\": {\"type\": "
                                "\"AverageValue\", \"averageValue\": \"1\"}}",
                                i ? ", " : "", i, i);
    snprintf(text + len, sizeof text - len, "]}");
    json = cJSON_Parse(text);
    assert_non_null(json);
    ms_jpath_init(&p, "spec");
    ms_spec_init(spec);
    if (ms_spec_from_json(json, &p, false, spec, errbuf, sizeof errbuf) != MS_OK)
        fail_msg("spec: %s", errbuf);
    cJSON_Delete(json);
}

typedef struct {
    size_t steps, present;
    double values[8];
} seen_t;

static int on_tick(void *ctx, const ms_replay_tick_t *tk)
{
    seen_t *s = ctx;

    if (tk->read->metrics[0].present) {
        s->present++;
        if (s->steps < 8)
            s->values[s->steps] = tk->read->metrics[0].value;
    }
    s->steps++;
    return 0;
}

/* Replay 1796002155..1796002161 every 2 s (the fixtures' four points) of a
 * spec with nmetrics queries, each answered with fixture, within max_bytes
 * (0: the default). */
static ms_err_t replay(const char *fixture, int nmetrics, size_t max_bytes, seen_t *seen,
                       char *errbuf, int *requests)
{
    fixture_server_t srv;
    char url[64], err[MS_ERRBUF_SIZE];
    ms_prom_client_t *client;
    ms_replay_summary_t sum;
    ms_spec_t spec;
    ms_err_t rc;

    server_start(&srv, fixture);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
    client = ms_prom_client_new(&(ms_prom_options_t){.url = url}, err, sizeof err);
    assert_non_null(client);
    spec_with(&spec, nmetrics);
    memset(seen, 0, sizeof *seen);
    rc = ms_replay_run(client,
                       &(ms_replay_options_t){.spec = &spec,
                                              .namespace_name = "shop",
                                              .from = 1796002155,
                                              .to = 1796002161,
                                              .step = 2,
                                              .replicas_query = "",
                                              .max_bytes = max_bytes},
                       on_tick, seen, &sum, errbuf, MS_ERRBUF_SIZE);
    ms_spec_cleanup(&spec);
    ms_prom_client_free(client);
    server_stop(&srv);
    *requests = atomic_load(&srv.requests);
    return rc;
}

/* The recorded answer with its points reordered: every step still reads
 * its own point (up = 1 at each of the four). */
static void disordered_matrices_give_every_step_its_point(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    seen_t seen;
    int requests;
    (void)state;

    assert_int_equal(replay("200-matrix-range-disordered.json", 1, 0, &seen, errbuf, &requests),
                     MS_OK);
    assert_int_equal(requests, 1); /* one chunk, one query */
    assert_int_equal(seen.steps, 4);
    assert_int_equal(seen.present, 4);
    for (size_t i = 0; i < 4; i++)
        assert_true(seen.values[i] == 1);
    /* The same as in order. */
    assert_int_equal(replay("200-matrix-range.json", 1, 0, &seen, errbuf, &requests), MS_OK);
    assert_int_equal(seen.present, 4);
}

/* Two answers of 208 bytes each: within a budget of 1 KiB together; over
 * one of 300 bytes, though each alone fits. The replay stops with the
 * budget named and the ways to ask for less (issue 23: 366 MB held for two
 * 120 MiB answers). */
static void answers_stay_within_the_memory_budget(void **state)
{
    char errbuf[MS_ERRBUF_SIZE];
    size_t len;
    char *body = read_fixture_file(MS_FIXTURES_DIR, "200-matrix-range.json", &len);
    seen_t seen;
    int requests;
    (void)state;

    free(body);
    assert_true(len > 150 && len < 300); /* each alone fits 300 bytes; two do not */
    assert_int_equal(replay("200-matrix-range.json", 2, 1024, &seen, errbuf, &requests), MS_OK);
    assert_int_equal(seen.present, 4);
    assert_int_equal(replay("200-matrix-range.json", 2, 300, &seen, errbuf, &requests),
                     MS_ERR_TOOLARGE);
    assert_int_equal(seen.steps, 0);
    assert_string_equal(errbuf,
                        "2 answers for 1796002155..1796002161 exceed the memory budget of 300 "
                        "bytes (--max-memory): replay a shorter range (--from/--to), a longer "
                        "--step or fewer --chunk-steps (now 1000)");
    /* The default budget is in MiB. */
    assert_int_equal(replay("200-matrix-range.json", 2, 0, &seen, errbuf, &requests), MS_OK);
    assert_int_equal(MS_REPLAY_DEFAULT_MAX_BYTES, 64u * 1024u * 1024u);
}

/* ---- the output formats (output.c) ---- */

/* One step of 2 metrics: up0 read (1.5 over 2 pods of a known count), up1
 * missing; meshscaler wants 3 of the 2 it had, the target had 2. */
typedef struct {
    ms_spec_t spec;
    ms_observation_t obs;
    ms_prom_object_obs_t why;
    ms_decision_t d;
    ms_engine_memory_t mem;
    ms_replay_tick_t tick;
} one_step_t;

static void one_step(one_step_t *st)
{
    memset(st, 0, sizeof *st);
    spec_with(&st->spec, 2);
    st->obs.current_replicas = 2;
    st->obs.metrics[0] = (ms_sample_t){.present = true, .value = 1.5};
    st->obs.metric_pods[0] = (ms_pods_t){.known = true, .count = 2};
    st->why.metrics[1].reason = MS_PROM_NO_DATA;
    ms_engine_memory_init(&st->mem);
    st->d.current_replicas = 2;
    st->d.desired_replicas = 3;
    st->d.reason = MS_REASON_DesiredWithinRange;
    st->tick = (ms_replay_tick_t){.time = 1796002155,
                                  .actual = 2,
                                  .read = &st->obs,
                                  .obs = &st->obs,
                                  .why = &st->why,
                                  .decision = &st->d,
                                  .memory = &st->mem};
}

/* What `call` wrote to `to`, into text (the caller frees it). */
#define CAPTURE(text, call)                                                                        \
    do {                                                                                           \
        size_t capture_len;                                                                        \
        FILE *to = open_memstream(&(text), &capture_len);                                          \
        assert_non_null(to);                                                                       \
        call;                                                                                      \
        assert_int_equal(fclose(to), 0);                                                           \
    } while (0)

/* The table: a column per metric, the value over its target or why it is
 * missing, and the reason; the JSON line: decide's with actualReplicas. */
static void table_and_json_lines_show_one_step(void **state)
{
    one_step_t st;
    char *header = NULL, *row = NULL, *line = NULL;
    cJSON *json;
    (void)state;

    one_step(&st);
    CAPTURE(header, ms_replay_table_header(to, &st.spec));
    CAPTURE(row, ms_replay_table_row(to, &st.spec, &st.tick));
    CAPTURE(line, ms_replay_json_line(to, &st.spec, &st.tick));
    assert_string_equal(header, "TIME                 ACTUAL REPLICAS DESIRED  up0               "
                                "  up1                 REASON\n");
    assert_string_equal(row, "2026-11-30T01:29:15Z      2        2       3  1.5/1             "
                             "  NO_DATA             DesiredWithinRange\n");
    json = cJSON_Parse(line);
    assert_non_null(json);
    assert_int_equal(ms_json_child(json, "actualReplicas")->valueint, 2);
    assert_int_equal(ms_json_child(json, "desiredReplicas")->valueint, 3);
    cJSON_Delete(json);
    free(header);
    free(row);
    free(line);
    ms_spec_cleanup(&st.spec);
}

/* The scenario tick holds exactly what the engine was given: a partial
 * reading as {value, pods}, a missing one as null. The summary's JSON says
 * null for a scale-up that never came. */
static void scenario_tick_and_summary_hold_what_was_given(void **state)
{
    one_step_t st;
    ms_replay_summary_t sum = {.steps = 4,
                               .step = 15,
                               .scale_events = 1,
                               .first_scale_up = 1796002155,
                               .first_actual_scale_up = NAN};
    cJSON *tick, *summary;
    const cJSON *up0;
    (void)state;

    one_step(&st);
    tick = ms_replay_scenario_tick(&st.spec, &st.tick);
    up0 = ms_json_member(tick, "metrics", "up0");
    assert_true(cJSON_IsNumber(ms_json_child(up0, "value")));
    assert_true(ms_json_child(up0, "value")->valuedouble == 1.5);
    assert_true(cJSON_IsNumber(ms_json_child(up0, "pods")));
    assert_int_equal(ms_json_child(up0, "pods")->valueint, 2);
    assert_true(cJSON_IsNull(ms_json_member(tick, "metrics", "up1")));
    assert_int_equal(ms_json_child(tick, "currentReplicas")->valueint, 2);
    cJSON_Delete(tick);
    summary = ms_replay_summary_json(&sum);
    assert_int_equal(ms_json_member(summary, "summary", "steps")->valueint, 4);
    assert_true(ms_json_member(summary, "summary", "firstScaleUp")->valuedouble == 1796002155);
    assert_true(cJSON_IsNull(ms_json_member(summary, "summary", "firstActualScaleUp")));
    cJSON_Delete(summary);
    ms_spec_cleanup(&st.spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(disordered_matrices_give_every_step_its_point),
        cmocka_unit_test(answers_stay_within_the_memory_budget),
        cmocka_unit_test(table_and_json_lines_show_one_step),
        cmocka_unit_test(scenario_tick_and_summary_hold_what_was_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
