/*
 * test_kube_watch.c - watch streams cut into events: line framing through a
 * bounded buffer (chunks split anywhere, CRLF, oversized lines), the event
 * decoder on recorded kube-apiserver lines and on garbage, the API path
 * builder the watch and list URLs start from, and managedFields cut from an
 * event's text before it is parsed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"
#include "meshscaler/informer.h"

#ifndef MS_FIXTURES
#define MS_FIXTURES "tests/fixtures"
#endif

typedef struct {
    char lines[16][256];
    size_t n;
} seen_t;

static ms_err_t collect(void *ctx, const char *line, size_t len)
{
    seen_t *s = ctx;

    assert_true(s->n < 16);
    assert_true(len < 256);
    memcpy(s->lines[s->n], line, len);
    s->lines[s->n][len] = '\0';
    s->n++;
    return MS_OK;
}

static void test_lines_split_across_chunks(void **state)
{
    const char *stream =
        "{\"a\":1}\n{\"b\":2}\r\n\r\n\n{\"c\":3}\n{\"partial"; /* blank lines, LF and CRLF, carry
                                                                  nothing */
    ms__kube_lines_t l;
    seen_t s = {0};

    (void)state;
    /* Every possible cut point gives the same lines. */
    for (size_t cut = 0; cut <= strlen(stream); cut++) {
        memset(&s, 0, sizeof s);
        ms__kube_lines_init(&l, 1024, collect, &s);
        assert_int_equal(ms__kube_lines_feed(&l, stream, cut), MS_OK);
        assert_int_equal(ms__kube_lines_feed(&l, stream + cut, strlen(stream) - cut), MS_OK);
        assert_int_equal(s.n, 3);
        assert_string_equal(s.lines[0], "{\"a\":1}");
        assert_string_equal(s.lines[1], "{\"b\":2}");
        assert_string_equal(s.lines[2], "{\"c\":3}");
        ms__kube_lines_cleanup(&l);
    }
    /* Byte by byte. */
    memset(&s, 0, sizeof s);
    ms__kube_lines_init(&l, 1024, collect, &s);
    for (size_t i = 0; i < strlen(stream); i++)
        assert_int_equal(ms__kube_lines_feed(&l, stream + i, 1), MS_OK);
    assert_int_equal(s.n, 3);
    ms__kube_lines_cleanup(&l);
}

static void test_oversized_line_is_refused_and_sticky(void **state)
{
    ms__kube_lines_t l;
    seen_t s = {0};
    char big[100];

    (void)state;
    memset(big, 'x', sizeof big);
    ms__kube_lines_init(&l, 64, collect, &s);
    assert_int_equal(ms__kube_lines_feed(&l, "ok\n", 3), MS_OK);
    assert_int_equal(ms__kube_lines_feed(&l, big, 50), MS_OK);
    assert_int_equal(ms__kube_lines_feed(&l, big, 50), MS_ERR_TOOLARGE);
    assert_int_equal(ms__kube_lines_feed(&l, "\nmore\n", 6), MS_ERR_TOOLARGE);
    assert_int_equal(s.n, 1);
    ms__kube_lines_cleanup(&l);
}

static ms_err_t refuse(void *ctx, const char *line, size_t len)
{
    (void)ctx, (void)line, (void)len;
    return MS_ERR_PARSE;
}

static void test_handler_error_stops_the_stream(void **state)
{
    ms__kube_lines_t l;

    (void)state;
    ms__kube_lines_init(&l, 64, refuse, NULL);
    assert_int_equal(ms__kube_lines_feed(&l, "a\nb\n", 4), MS_ERR_PARSE);
    ms__kube_lines_cleanup(&l);
}

/* ---- decoding: recorded lines from a real kube-apiserver ---- */

static char *read_fixture(const char *name, size_t *len)
{
    return read_fixture_file(MS_FIXTURES "/kube", name, len);
}

typedef struct {
    int types[8];
    size_t n;
} decoded_t;

static ms_err_t decode_line(void *ctx, const char *line, size_t len)
{
    decoded_t *d = ctx;
    ms_kube_event_type_t type;
    cJSON *obj;
    char err[MS_ERRBUF_SIZE];
    ms_err_t rc = ms_kube_watch_decode(line, len, &type, &obj, err, sizeof err);

    if (rc != MS_OK)
        fail_msg("recorded line refused: %s", err);
    assert_true(d->n < 8);
    d->types[d->n++] = (int)type;
    cJSON_Delete(obj);
    return MS_OK;
}

static void test_recorded_watch_stream(void **state)
{
    size_t len;
    char *text = read_fixture("watch-configmaps.jsonl", &len);
    ms__kube_lines_t l;
    decoded_t d = {{0}, 0};

    (void)state;
    ms__kube_lines_init(&l, MS_KUBE_MAX_EVENT, decode_line, &d);
    assert_int_equal(ms__kube_lines_feed(&l, text, len), MS_OK);
    /* ADDED, MODIFIED, DELETED, BOOKMARK as the server sent them. */
    assert_int_equal(d.n, 4);
    assert_int_equal(d.types[0], MS_KUBE_EV_ADDED);
    assert_int_equal(d.types[1], MS_KUBE_EV_MODIFIED);
    assert_int_equal(d.types[2], MS_KUBE_EV_DELETED);
    assert_int_equal(d.types[3], MS_KUBE_EV_BOOKMARK);
    ms__kube_lines_cleanup(&l);
    free(text);
}

static void test_recorded_too_old_error_event(void **state)
{
    size_t len;
    char *text = read_fixture("watch-too-old.jsonl", &len);
    ms_kube_event_type_t type;
    cJSON *obj;
    char err[MS_ERRBUF_SIZE];

    (void)state;
    while (len > 0 && text[len - 1] == '\n')
        len--;
    assert_int_equal(ms_kube_watch_decode(text, len, &type, &obj, err, sizeof err), MS_OK);
    assert_int_equal(type, MS_KUBE_EV_ERROR);
    assert_int_equal(cJSON_GetObjectItem(obj, "code")->valueint, 410);
    cJSON_Delete(obj);
    free(text);
}

static void decode_fails(const char *line, const char *want)
{
    ms_kube_event_type_t type;
    cJSON *obj = (cJSON *)1;
    char err[MS_ERRBUF_SIZE];

    assert_int_equal(ms_kube_watch_decode(line, strlen(line), &type, &obj, err, sizeof err),
                     MS_ERR_PARSE);
    assert_null(obj);
    assert_string_equal(err, want);
}

static void test_garbage_events(void **state)
{
    (void)state;
    decode_fails(
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}",
        "watch event: not a JSON object"); /* truncated */
    decode_fails("[1,2]", "watch event: not a JSON object");
    decode_fails("{\"type\":\"EXPLODED\",\"object\":{}}",
                 "watch event: type: not a known event type");
    decode_fails("{\"type\":7,\"object\":{}}", "watch event: type: not a known event type");
    decode_fails("{\"type\":\"ADDED\",\"object\":\"x\"}", "watch event: object: not a JSON object");
    decode_fails("{\"type\":\"ADDED\"}", "watch event: object: not a JSON object");
    decode_fails(
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":5}}}",
        "watch event: object.metadata.resourceVersion: missing or not a string");
    decode_fails("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}",
                 "watch event: object.metadata.name: missing or not a string");
}

/* ---- paths ---- */

static void test_paths(void **state)
{
    char p[256];

    (void)state;
    assert_int_equal(ms_kube_path(p, sizeof p, "v1", "ns", "configmaps", NULL, NULL), MS_OK);
    assert_string_equal(p, "/api/v1/namespaces/ns/configmaps");
    assert_int_equal(ms_kube_path(p, sizeof p, "apps/v1", "shop", "deployments", "api", "scale"),
                     MS_OK);
    assert_string_equal(p, "/apis/apps/v1/namespaces/shop/deployments/api/scale");
    assert_int_equal(ms_kube_path(p, sizeof p, "v1", NULL, "namespaces", "x", NULL), MS_OK);
    assert_string_equal(p, "/api/v1/namespaces/x");
    assert_int_equal(ms_kube_path(p, sizeof p, "v1", "a/b", "pods", NULL, NULL), MS_ERR_INVALID);
    assert_int_equal(ms_kube_path(p, sizeof p, "v1", "ns", "pods", "..", NULL), MS_ERR_INVALID);
    assert_int_equal(ms_kube_path(p, sizeof p, "v1", "ns", "pods", "a?b", NULL), MS_ERR_INVALID);
    assert_int_equal(ms_kube_path(p, 10, "v1", "ns", "pods", NULL, NULL), MS_ERR_TOOLARGE);
}

static void test_object_key(void **state)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"}}");
    cJSON *c = cJSON_Parse("{\"metadata\":{\"name\":\"node1\"}}");
    cJSON *bad = cJSON_Parse("{\"metadata\":{}}");
    char k[64];

    (void)state;
    assert_true(ms_kube_object_key(o, k, sizeof k));
    assert_string_equal(k, "n/a");
    assert_true(ms_kube_object_key(c, k, sizeof k));
    assert_string_equal(k, "node1");
    assert_false(ms_kube_object_key(bad, k, sizeof k));
    assert_false(ms_kube_object_key(o, k, 3));
    cJSON_Delete(o);
    cJSON_Delete(c);
    cJSON_Delete(bad);
}

/* ---- managedFields cut before parsing (cut.c) ---- */

/* s without its object.metadata.managedFields, as parsed: what the cut's
 * text must parse to. */
static cJSON *parsed_without_managed(const char *s)
{
    cJSON *doc = cJSON_Parse(s);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "object"),
                                                 "metadata");

    assert_non_null(doc);
    while (cJSON_GetObjectItemCaseSensitive(md, "managedFields") != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
    return doc;
}

/* The cut of s is shorter, names no managedFields where it was, and parses
 * to what s parses to without it. */
static void expect_cut(const char *s)
{
    ms_buf_t out;
    cJSON *want = parsed_without_managed(s), *got;

    ms_buf_init(&out, MS_KUBE_MAX_EVENT);
    assert_true(ms__kube_cut_managed_fields(s, strlen(s), &out));
    assert_true(out.len < strlen(s));
    got = cJSON_ParseWithLength(out.data, out.len);
    if (got == NULL || !cJSON_Compare(got, want, true))
        fail_msg("cut of %s gave %.*s", s, (int)out.len, out.data);
    cJSON_Delete(got);
    cJSON_Delete(want);
    ms_buf_cleanup(&out);
}

static void expect_no_cut(const char *s)
{
    ms_buf_t out;

    ms_buf_init(&out, MS_KUBE_MAX_EVENT);
    if (ms__kube_cut_managed_fields(s, strlen(s), &out))
        fail_msg("%s was cut to %.*s", s, (int)out.len, out.data);
    ms_buf_cleanup(&out);
}

static void test_cut_managed_fields_recorded(void **state)
{
    size_t len;
    char *text = read_fixture("watch-configmaps.jsonl", &len);
    char *line, *save = NULL;
    int cut = 0;

    (void)state;
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "\"managedFields\"") == NULL)
            continue;
        expect_cut(line);
        cut++;
    }
    assert_int_equal(cut, 3); /* ADDED, MODIFIED, DELETED; the BOOKMARK has none */
    free(text);
}

static void test_cut_managed_fields_anywhere_in_metadata(void **state)
{
    (void)state;
    /* first, middle, last, only member; spaces; strings holding brackets, quotes and the key */
    expect_cut("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[{\"a\":\"}]\"}],"
               "\"name\":\"n\",\"resourceVersion\":\"1\"}}}");
    expect_cut("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n\", \"managedFields\" : "
               "[{\"f\":{\"x\\\"]}\":{}}}] , \"resourceVersion\":\"1\"}}}");
    expect_cut("{\"type\":\"ADDED\",\"object\":{\"kind\":\"\\\"managedFields\\\":\",\"metadata\":"
               "{\"name\":\"n\",\"resourceVersion\":\"1\",\"managedFields\":[]}},\"x\":1}");
    expect_cut("{\"object\":{\"metadata\":{ \"managedFields\":null }},\"type\":\"MODIFIED\"}");
    expect_cut("{\"object\":{\"metadata\":{\"managedFields\":[1],\"managedFields\":[2],\"n\":1}}}");
}

static void test_cut_managed_fields_nowhere_else(void **state)
{
    (void)state;
    expect_no_cut("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n\"}}}");
    /* a pod template's metadata, the event's top level, a value, a string */
    expect_no_cut("{\"object\":{\"metadata\":{},\"spec\":{\"template\":{\"metadata\":"
                  "{\"managedFields\":[]}}}}}");
    expect_no_cut("{\"managedFields\":[],\"object\":{\"metadata\":{\"managedFields2\":1}}}");
    expect_no_cut("{\"object\":{\"metadata\":{\"name\":\"managedFields\"}}}");
    expect_no_cut("{\"object\":{\"metadata\":{\"labels\":{\"managedFields\":\"x\"}}}}");
    expect_no_cut("{\"items\":[{\"metadata\":{\"managedFields\":[]}}]}");
    expect_no_cut("{\"object\":{\"metadata\":{},\"status\":{\"managedFields\":[]}}}");
    expect_no_cut("{\"event\":{\"metadata\":{\"managedFields\":[]}}}");
    /* text the scan cannot follow is left to the parser */
    expect_no_cut("{\"object\":{\"metadata\":{\"managedFields\":[{\"a\":\"}]}}}");
    expect_no_cut("{\"object\":{\"metadata\":{\"managedFields\":[[[]]}}");
    expect_no_cut("{\"object\":{\"metadata\":{\"managedFields\"}}}]]]");
    expect_no_cut("\"managedFields\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_split_across_chunks),
        cmocka_unit_test(test_oversized_line_is_refused_and_sticky),
        cmocka_unit_test(test_handler_error_stops_the_stream),
        cmocka_unit_test(test_recorded_watch_stream),
        cmocka_unit_test(test_recorded_too_old_error_event),
        cmocka_unit_test(test_garbage_events),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_object_key),
        cmocka_unit_test(test_cut_managed_fields_recorded),
        cmocka_unit_test(test_cut_managed_fields_anywhere_in_metadata),
        cmocka_unit_test(test_cut_managed_fields_nowhere_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
