/*
 * test_strmap.c - the string map against a plain array under random puts and
 * deletes (backward-shift deletion must never lose a key), and its walk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshscaler/strmap.h"

#define KEYS 500

static void test_against_reference(void **state)
{
    static char names[KEYS][24];
    static int values[KEYS];
    bool present[KEYS] = {0};
    ms_strmap_t m;
    uint64_t rng = 42;

    (void)state;
    ms_strmap_init(&m);
    for (int i = 0; i < KEYS; i++)
        snprintf(names[i], sizeof names[i], "ns/obj-%d", i);
    for (int step = 0; step < 200000; step++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((rng >> 33) % KEYS);
        if ((rng >> 20) & 1) {
            void *old = ms_strmap_put(&m, names[k], &values[k]);
            assert_true(old == (present[k] ? &values[k] : NULL));
            present[k] = true;
        } else {
            void *old = ms_strmap_del(&m, names[k]);
            assert_true(old == (present[k] ? &values[k] : NULL));
            present[k] = false;
        }
        if (step % 997 == 0) {
            size_t n = 0;
            for (int i = 0; i < KEYS; i++) {
                assert_true(ms_strmap_get(&m, names[i]) == (present[i] ? &values[i] : NULL));
                n += present[i];
            }
            assert_int_equal(ms_strmap_size(&m), n);
        }
    }
    ms_strmap_cleanup(&m);
}

static void test_walk_and_lengths(void **state)
{
    ms_strmap_t m;
    int a = 1, b = 2, seen = 0;
    size_t pos = 0;
    const char *key;
    void *val;

    (void)state;
    ms_strmap_init(&m);
    assert_null(ms_strmap_get(&m, "x"));
    assert_null(ms_strmap_del(&m, "x"));
    ms_strmap_put(&m, "alpha", &a);
    ms_strmap_put(&m, "beta", &b);
    assert_ptr_equal(ms_strmap_getn(&m, "alphabet", 5), &a);
    assert_null(ms_strmap_getn(&m, "alp", 3));
    while (ms_strmap_next(&m, &pos, &key, &val))
        seen += *(int *)val;
    assert_int_equal(seen, 3);
    ms_strmap_cleanup(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_walk_and_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
