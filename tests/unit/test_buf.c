/*
 * test_buf.c - the fixed-array formatter (ms_fixbuf_t): pieces join, text
 * past the end is cut with the array still terminated, and `used` counts
 * what the whole text needs, as snprintf does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "meshscaler/buf.h"

static void test_fixbuf_joins_pieces(void **state)
{
    char out[32] = "stale";
    ms_fixbuf_t f;

    (void)state;
    ms_fixbuf_init(&f, out, sizeof out);
    assert_string_equal(out, "");
    ms_fixbuf_appendf(&f, "%s %d", "desired", 4);
    ms_fixbuf_appendf(&f, "%s", "");
    ms_fixbuf_appendf(&f, ", was %d", 3);
    assert_string_equal(out, "desired 4, was 3");
    assert_int_equal(f.used, strlen("desired 4, was 3"));
}

static void test_fixbuf_cuts_and_counts(void **state)
{
    char out[8];
    ms_fixbuf_t f;

    (void)state;
    ms_fixbuf_init(&f, out, sizeof out);
    ms_fixbuf_appendf(&f, "%s", "abcde");
    ms_fixbuf_appendf(&f, "%s", "fghij"); /* cut inside this piece */
    assert_string_equal(out, "abcdefg");
    ms_fixbuf_appendf(&f, "%d", 12345); /* no room at all: only counted */
    assert_string_equal(out, "abcdefg");
    assert_int_equal(f.used, 15);
}

static void test_fixbuf_without_room(void **state)
{
    ms_fixbuf_t f;

    (void)state;
    ms_fixbuf_init(&f, NULL, 0); /* a length query, as snprintf(NULL, 0) */
    ms_fixbuf_appendf(&f, "%s", "seven c");
    assert_int_equal(f.used, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixbuf_joins_pieces),
        cmocka_unit_test(test_fixbuf_cuts_and_counts),
        cmocka_unit_test(test_fixbuf_without_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
