/*
 * test_log.c - log lines as written: logfmt and JSON with quoting and
 * escapes, and a line longer than the line buffer cut to 4,095 bytes of
 * text and its newline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/log.h"

/* What one call of log_fn wrote, in a buffer the caller frees. */
static char *written(ms_log_format_t format, void (*log_fn)(void))
{
    FILE *f = tmpfile();
    char *out;
    long n;

    assert_non_null(f);
    ms_log_setup(MS_LOG_INFO, format, f);
    log_fn();
    ms_log_setup(MS_LOG_INFO, MS_LOG_TEXT, NULL);
    n = ftell(f);
    assert_true(n > 0);
    out = calloc(1, (size_t)n + 1);
    rewind(f);
    assert_int_equal(fread(out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return out;
}

static void scaled(void)
{
    MS_LOG_INFO("scaled", MS_S("object", "ns/a b"), MS_I("to", 8), MS_D("ratio", 0.5),
                MS_S("why", "say \"hi\"\n"));
}

static void test_text_and_json(void **state)
{
    char *text = written(MS_LOG_TEXT, scaled), *json = written(MS_LOG_JSON, scaled);

    (void)state;
    assert_non_null(strstr(text, " level=info msg=scaled object=\"ns/a b\" to=8 ratio=0.5 "
                                 "why=\"say \\\"hi\\\"\\n\"\n"));
    assert_true(strncmp(text, "ts=", 3) == 0);
    assert_non_null(strstr(json, "\",\"level\":\"info\",\"msg\":\"scaled\",\"object\":\"ns/a b\","
                                 "\"to\":8,\"ratio\":0.5,\"why\":\"say \\\"hi\\\"\\n\"}\n"));
    assert_true(strncmp(json, "{\"ts\":\"", 7) == 0);
    free(text);
    free(json);
}

static void long_line(void)
{
    static char big[6000];

    memset(big, 'x', sizeof big - 1);
    MS_LOG_INFO("long", MS_S("v", big));
}

static void test_long_line_is_cut(void **state)
{
    char *text = written(MS_LOG_TEXT, long_line);
    size_t n = strlen(text);

    (void)state;
    assert_int_equal(n, 4096); /* 4,095 bytes of text, then the newline */
    assert_int_equal(text[n - 1], '\n');
    assert_int_equal(text[n - 2], 'x');
    assert_ptr_equal(strchr(text, '\n'), text + n - 1); /* one line */
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_and_json),
        cmocka_unit_test(test_long_line_is_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
